"""``{{NAME}}`` placeholders of ``http:`` entries are checked against the whole profile
before anything runs: a name no earlier phase saves is refused (exit 2) naming the
profile file, the phase and field, the name, a did-you-mean and what is available.

Real fake agent on 127.0.0.1 (:class:`servers.agent_server.AgentServer`), the real
``rook`` command (in process, and once as its own process); the server must see no
request at all when a profile is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from servers.helpers import token_prepare, write_profile

from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec

pytest_plugins = ["servers.fixtures"]


def echo(server, **over):
    entry = {"url": f"{server.url}/echo", "body": {"goal": "{{goal}}"}, **over}
    entry.setdefault("extract", {"output": "received.goal", "evidence": {"got": "received"}})
    return {"http": entry}


def refused(r):
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "p.yaml" in r.stderr
    return r.stderr


def test_a_misspelt_saved_placeholder_is_refused_before_anything_runs(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    write_profile(
        rook_workspace,
        {
            "prepare": token_prepare(agent_server),
            "execute": echo(agent_server, headers={"Authorization": "Bearer {{tokne}}"}),
        },
        env=("CLIENT_SECRET",),
        hook_env={"REGION": "eu-west-1"},
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run")
    err = refused(r)
    assert "hooks.execute: http.headers.Authorization: {{tokne}}" in err, err
    assert "not a value saved by an earlier phase" in err
    assert "did you mean {{token}}?" in err
    assert "{{token}} (saved by prepare)" in err  # what is available, and from where
    for builtin in ("{{goal}}", "{{turn}}", "{{conversation}}", "{{session}}", "{{run}}"):
        assert builtin in err, builtin
    assert "{{env.CLIENT_SECRET}}" in err and "{{env.REGION}}" in err
    assert agent_server.client_secret not in err
    assert not agent_server.seen(), "prepare ran: a token was minted"


def test_a_template_of_the_agents_own_is_told_how_to_send_its_braces(
    rook_cli, rook_workspace, agent_server
):
    """A body holding a template the agent fills itself ({{persona}}, as prompt
    stores and Mustache write one) was refused naming what Rook can fill, with no
    word of how to send the braces as written. The message says how (hook_env and
    {{env.NAME}}: a value is never filled in again), and that way works."""
    body = {"goal": "{{goal}}", "system": "You are {{persona}}. Answer in {{language}}."}
    write_profile(rook_workspace, {"execute": echo(agent_server, body=body)}, env=())
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    err = refused(rook_cli("run"))
    assert "http.body.system: {{persona}} is not a value saved by an earlier phase" in err
    assert (
        "to send {{persona}} as written (a template the agent fills in), put the text "
        "under hook_env and write {{env.NAME}} here: a value is never filled in again"
    ) in err, err
    assert not agent_server.seen()
    body["system"] = "{{env.SYSTEM}}"
    write_profile(
        rook_workspace,
        {"execute": echo(agent_server, body=body)},
        env=(),
        hook_env={"SYSTEM": "You are {{persona}}. Answer in {{language}}."},
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    [seen] = agent_server.seen("POST", "/echo")
    assert seen["json"]["system"] == "You are {{persona}}. Answer in {{language}}."


def test_the_installed_rook_command_refuses_a_misspelt_placeholder(rook_workspace, agent_server):
    """The reproduction of the report, end to end in a separate ``rook`` process."""
    prepare = echo(agent_server, body={}, save={"token": "received"})
    prepare["http"].pop("extract")
    write_profile(
        rook_workspace,
        {
            "prepare": prepare,
            "execute": echo(agent_server, headers={"Authorization": "Bearer {{tokne}}"}),
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    proc = subprocess.run(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "p.yaml: hooks.execute: http.headers.Authorization: {{tokne}}" in proc.stderr
    assert "did you mean {{token}}?" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not agent_server.seen()


def test_a_name_saved_only_by_a_later_phase_is_refused(rook_cli, rook_workspace, agent_server):
    write_profile(
        rook_workspace,
        {
            "open": echo(agent_server, body={"trace": "{{trace_id}}"}, extract={}),
            "execute": echo(agent_server),
            "close": echo(agent_server, body={}, extract={}, save={"trace_id": "text"}),
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    err = refused(rook_cli("run"))
    assert "hooks.open: http.body.trace: {{trace_id}} is saved by close, which runs after open" in err
    assert not agent_server.seen()


def test_a_name_saved_by_the_same_phase_is_refused(rook_cli, rook_workspace, agent_server):
    # execute saves cursor after its request: the first turn could never send it
    write_profile(
        rook_workspace,
        {
            "execute": echo(
                agent_server,
                body={"goal": "{{goal}}", "c": "{{cursor}}"},
                save={"cursor": "received.goal"},
            ),
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "b"}]})
    err = refused(rook_cli("run"))
    assert "hooks.execute: http.body.c: {{cursor}} is saved by execute itself" in err, err
    assert not agent_server.seen()


def test_a_value_the_phase_that_saves_it_failed_to_save_names_that_phase(
    rook_cli, rook_workspace, agent_server
):
    """When execute, which saves {{said}}, failed before saving it, close's warning said
    '{{said}} is not a value saved by an earlier phase ...; save it with save: {said:
    PATH} in prepare or open': advice to add what the profile already has."""
    write_profile(
        rook_workspace,
        {
            "execute": echo(agent_server, save={"said": "received.nothing"}),
            "close": echo(agent_server, body={"said": "{{said}}"}, extract={}),
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    [close] = [h for h in r.report["scenarios"][0]["hooks"] if h["phase"] == "close"]
    why = close["diagnosis"]
    assert why.startswith("body.said: {{said}} has no value: execute, which saves it,"), why
    assert "in prepare or open" not in why, why
    assert len(agent_server.seen("POST", "/echo")) == 1  # close was not sent


def test_a_saved_placeholder_after_a_script_prepare_is_refused(
    rook_cli, rook_workspace, agent_server, tmp_path, monkeypatch
):
    mark = tmp_path / "prepared"
    monkeypatch.setenv("MARK", str(mark))
    rook_workspace.script("prep.sh", '#!/bin/bash\ntouch "$MARK"\n')
    write_profile(
        rook_workspace,
        {
            "prepare": "scripts/prep.sh",
            "execute": echo(agent_server, headers={"Authorization": "Bearer {{token}}"}),
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    err = refused(rook_cli("run"))
    assert "hooks.execute: http.headers.Authorization: {{token}} is not a value saved" in err
    assert "no earlier phase saves a value" in err, err
    assert not mark.exists(), "the prepare script ran"
    assert not agent_server.seen()


def test_a_builtin_placeholder_outside_its_phases_is_refused(
    rook_cli, rook_workspace, agent_server
):
    for phase, body, why in (
        ("prepare", {"for": "{{scenario}}"}, "{{scenario}} is not available in prepare"),
        ("open", {"t": "{{turn}}"}, "{{turn}} is only available in execute, not in open"),
    ):
        hooks = {phase: echo(agent_server, body=body, extract={}), "execute": echo(agent_server)}
        write_profile(rook_workspace, hooks, env=())
        rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
        err = refused(rook_cli("run"))
        field = next(iter(body))
        assert f"hooks.{phase}: http.body.{field}: {why}" in err, err
    assert not agent_server.seen()


def test_a_judge_profile_with_a_misspelt_placeholder_is_refused(
    rook_cli, rook_workspace, agent_server, tmp_path, monkeypatch
):
    mark = tmp_path / "ran"
    monkeypatch.setenv("MARK", str(mark))
    rook_workspace.script("agent.sh", '#!/bin/bash\ntouch "$MARK"\necho \'{"output": "hi"}\'\n')
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.profile(
        {
            "id": "grader",
            "hooks": {
                "open": echo(agent_server, body={}, extract={}, save={"session_id": "text"}),
                "execute": echo(agent_server, body={"prompt": "{{goal}}", "s": "{{sesion_id}}"}),
            },
        },
        active=False,
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"rubric": "says hi"}]})
    r = rook_cli("run", "--judge-profile", "grader")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "grader.yaml: hooks.execute: http.body.s: {{sesion_id}}" in r.stderr, r.stderr
    assert "did you mean {{session_id}}?" in r.stderr and "{{session_id}} (saved by open)" in r.stderr
    assert not mark.exists(), "the agent ran"
    assert not agent_server.seen()


def test_every_legal_placeholder_is_accepted(rook_cli, rook_workspace, agent_server, monkeypatch):
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    everything = {
        "goal": "{{goal}}",
        "turn": "{{turn}}",
        "conversation": "{{conversation}}",
        "session": "{{session}}",
        "scenario": "{{scenario}}",
        "run": "{{run}}",
        "region": "{{env.REGION}}",
        "rook_turn": "{{env.ROOK_TURN}}",
        "from_open": "{{opened}}",
        "spaced": "{{ opened }}",
    }
    write_profile(
        rook_workspace,
        {
            "prepare": token_prepare(agent_server),
            "open": echo(
                agent_server,
                headers={"Authorization": "Bearer {{token}}"},
                body={"user": "{{scenario}}", "run": "{{run}}"},
                extract={},
                save={"opened": "received.user"},
            ),
            "execute": echo(
                agent_server,
                url=f"{agent_server.url}/echo?who={{{{opened}}}}",
                headers={"Authorization": "Bearer {{token}}"},
                body=everything,
                save={"said": "received.goal"},
            ),
            "close": echo(
                agent_server,
                body={"said": "{{said}}", "opened": "{{opened}}", "t": "{{token}}"},
                extract={},
                save={"closed": "received.said"},
            ),
            "collect": echo(
                agent_server,
                body={"closed": "{{closed}}", "said": "{{said}}", "goal": "{{goal}}"},
                extract={"evidence": {"collected": "received"}},
            ),
        },
        env=("CLIENT_SECRET",),
        hook_env={"REGION": "eu-west-1"},
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    scenario = r.report["scenarios"][0]
    got = scenario["turns"][0]["evidence"]["got"]
    assert got["from_open"] == got["spaced"] == "s" and got["turn"] == 1
    assert got["region"] == "eu-west-1" and got["rook_turn"] == "1"
    # each built-in is the value it names, in the type it has (null before a handle)
    run_id = r.report["run"]["id"]
    session = rook_workspace.record(run_id, "s.1")["session"]
    assert got["session"] == session and session.startswith(run_id), got
    assert got["conversation"] is None and got["scenario"] == "s" and got["run"] == run_id
    assert got["goal"] == "hi"
    collected = json.loads(json.dumps(scenario["collected"]["evidence"]["collected"]))
    assert collected == {"closed": "hi", "said": "hi", "goal": "hi"}


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="minter", load_config=lambda value: value))


@hookimpl
def rook_auth_prepare(call):
    if call.entry.transport != "minter":
        return None

    async def mint():
        call.run.saved["token"] = "t0k"  # the hookspec's place for values later phases use
        return HookResult("prepare", "ok", 0.0, 0.0, 0.0, data={}, transport="minter")

    return mint()


def test_a_name_another_transport_may_save_is_not_refused(
    rook_cli, rook_workspace, agent_server, rook_plugin
):
    """A transport that does not say what it saves may fill any name (``run.saved``)."""
    rook_plugin(sys.modules[__name__])
    write_profile(
        rook_workspace,
        {
            "prepare": {"minter": {}},
            "execute": echo(agent_server, body={"goal": "{{goal}}", "t": "{{token}}"}),
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.report["scenarios"][0]["turns"][0]["evidence"]["got"]["t"] == "t0k"


def test_rook_doctor_finds_the_misspelt_placeholder_rook_run_refuses(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """doctor called each transport's resolve but not its check, so it said "no
    problems" for a profile every rook run refused."""
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    write_profile(
        rook_workspace,
        {
            "prepare": token_prepare(agent_server),
            "execute": echo(agent_server, headers={"Authorization": "Bearer {{tokne}}"}),
        },
        env=("CLIENT_SECRET",),
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("doctor", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    problems = [f for f in json.loads(r.stdout)["findings"] if f["status"] == "problem"]
    assert len(problems) == 1, problems
    assert problems[0]["subject"].endswith("hooks.execute"), problems
    assert "{{tokne}} is not a value saved by an earlier phase" in problems[0]["message"]
    assert not agent_server.seen()
