"""The hook contract of the reference, held against real bash, Python and Node hooks."""

from __future__ import annotations

import probes
import pytest

LANGS = ["bash", "python", "node"]
ALL_PHASES = ["prepare", "open", "execute", "close", "collect"]
EVERY = {
    "ROOK_HOOK",
    "ROOK_WORKSPACE",
    "ROOK_PROJECT",
    "ROOK_AGENT",
    "ROOK_STATE_DIR",
    "ROOK_RUN_STATE_DIR",
    "ROOK_RUN_ID",
}
# The reference's table: which ROOK_* variable is present in which phase.
EXPECTED = {
    "prepare": EVERY,
    "open": EVERY | {"ROOK_SCENARIO_ID", "ROOK_SESSION"},
    "execute": EVERY | {"ROOK_SCENARIO_ID", "ROOK_SESSION", "ROOK_TURN", "ROOK_CONVERSATION"},
    "close": EVERY | {"ROOK_SCENARIO_ID", "ROOK_SESSION", "ROOK_CONVERSATION"},
    "collect": EVERY | {"ROOK_SCENARIO_ID", "ROOK_SESSION", "ROOK_CONVERSATION"},
}


def full_profile(ws, hook: str, **extra):
    return ws.profile(
        {
            "id": "p",
            "hooks": {p: hook for p in ALL_PHASES},
            "capabilities": {"multi_turn": True, "calls": True, "usage": True},
            **extra,
        }
    )


@pytest.fixture
def probe_dir(tmp_path, monkeypatch):
    d = tmp_path / "probe"
    d.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(d))
    return d


@pytest.mark.parametrize("lang", LANGS)
def test_hook_order_variables_and_stdin(lang, rook_workspace, rook_cli, probe_dir, monkeypatch):
    ws = rook_workspace
    hook = probes.install(ws, lang)
    full_profile(ws, hook, hook_env={"REGION": "eu-west-1", "ROOK_TURN": "hijack"})
    goal2 = 'it\'s "quoted" $HOME `date` \\ back\nnew line — café ✓ 日本'
    ws.scenario(
        {"id": "two", "turns": ["first turn", goal2], "criteria": [{"contains": "ok turn 2"}]}
    )
    monkeypatch.setenv("ROOK_TURN", "leaked-from-parent")
    monkeypatch.setenv("ROOK_WORKSPACE_DIR", str(ws.root))  # Rook's own: never a hook's
    r = rook_cli("run", "--json", input="ROOK'S OWN STDIN MUST NOT REACH A HOOK")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert r.statuses() == {"two": "passed"}

    calls = probes.read(probe_dir)
    assert [c.phase for c in calls] == ["prepare", "open", "execute", "execute", "close", "collect"]
    run_id = r.report["run"]["id"]
    for c in calls:
        rook_vars = {k for k in c.env if k.startswith("ROOK_")}
        assert rook_vars == EXPECTED[c.phase], (c.phase, rook_vars ^ EXPECTED[c.phase])
        assert c.argc == 1  # the phase name is the only argument
        assert c.env["ROOK_HOOK"] == c.phase
        assert c.env["ROOK_RUN_ID"] == run_id
        assert c.env["ROOK_PROJECT"] == ws.project and c.env["ROOK_AGENT"] == ws.agent
        assert c.env["ROOK_WORKSPACE"] == str(ws.root.resolve())
        assert c.cwd == c.env["ROOK_WORKSPACE"]  # also the hook's working directory
        assert c.env["REGION"] == "eu-west-1"  # hook_env is added ...
        assert not c.blocked
        if c.phase != "execute":
            assert c.stdin == b""  # no stdin outside execute, and never Rook's own
    executes = [c for c in calls if c.phase == "execute"]
    assert [c.env["ROOK_TURN"] for c in executes] == ["1", "2"]  # ... never overriding ROOK_*
    assert executes[0].stdin == b"first turn"
    assert executes[1].stdin == goal2.encode("utf-8")  # byte-exact
    # conversation handle: from open, then from the previous execute
    assert executes[0].env["ROOK_CONVERSATION"] == "conv-open"
    assert executes[1].env["ROOK_CONVERSATION"] == "conv-1"
    close = next(c for c in calls if c.phase == "close")
    assert close.env["ROOK_CONVERSATION"] == "conv-2"
    # one state dir per scenario, the same in all its phases; a run-wide one everywhere
    scenario_calls = [c for c in calls if c.phase != "prepare"]
    assert len({c.env["ROOK_STATE_DIR"] for c in scenario_calls}) == 1
    assert len({c.env["ROOK_RUN_STATE_DIR"] for c in calls}) == 1
    assert calls[0].env["ROOK_STATE_DIR"] == calls[0].env["ROOK_RUN_STATE_DIR"]  # prepare's
    assert scenario_calls[0].env["ROOK_STATE_DIR"] != calls[0].env["ROOK_RUN_STATE_DIR"]
    assert len({c.env["ROOK_SESSION"] for c in scenario_calls}) == 1
    assert scenario_calls[0].env["ROOK_SCENARIO_ID"] == "two"

    turns = r.report["scenarios"][0]["turns"]
    assert turns[1]["input"] == goal2
    assert turns[1]["evidence"] == {"trace_id": "t-2"}  # unknown fields kept as evidence
    assert turns[1]["calls"] == [] and turns[1]["usage"] == {"input": 1, "output": 2}
    assert r.report["scenarios"][0]["collected"]["evidence"] == {"trace_url": "file:///trace"}


def test_only_execute_is_required(rook_workspace, rook_cli, probe_dir):
    ws = rook_workspace
    hook = probes.install(ws, "bash")
    ws.profile({"id": "p", "hooks": {"execute": hook}})
    ws.scenario({"id": "one", "goal": "hello", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert [c.phase for c in probes.read(probe_dir)] == ["execute"]


def test_prepare_runs_once_per_run_before_any_scenario(rook_workspace, rook_cli, probe_dir):
    ws = rook_workspace
    hook = probes.install(ws, "bash")
    ws.profile({"id": "p", "hooks": {"prepare": hook, "execute": hook}, "concurrency": 3})
    for i in range(5):
        ws.scenario({"id": f"s{i}", "goal": f"g{i}", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    phases = [c.phase for c in probes.read(probe_dir)]
    assert phases == ["prepare"] + ["execute"] * 5


def test_agent_reply_is_an_alias_for_output(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script(
        "a.sh",
        """
        #!/bin/sh
        [ "$1" = execute ] && echo '{"agent_reply": "Your order ships Tuesday."}'
        exit 0
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"matches": "ships (Monday|Tuesday)"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}
    assert r.report["scenarios"][0]["turns"][0]["output"] == "Your order ships Tuesday."


def test_calls_empty_versus_missing_are_never_confused(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script(
        "a.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        if [ "$(cat)" = observed ]; then echo '{"output": "x", "calls": []}'; else echo '{"output": "x"}'; fi
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}, "capabilities": {"calls": True}})
    ws.scenario(
        {"id": "observed", "goal": "observed", "criteria": [{"not_called": "cancel_order"}]}
    )
    ws.scenario({"id": "blind", "goal": "blind", "criteria": [{"not_called": "cancel_order"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"blind": "unverifiable", "observed": "passed"}
    assert r.exit_code == 0
    by_id = {s["id"]: s for s in r.report["scenarios"]}
    assert by_id["observed"]["turns"][0]["calls"] == []
    assert by_id["blind"]["turns"][0]["calls"] is None


ENV_DUMP = """#!/bin/bash
env -0 > "$PROBE_DIR/$1.env"
case "$1" in execute) echo '{"output": "ok"}' ;; collect) echo '{}' ;; esac
exit 0
"""


def test_hook_env_passes_custom_rook_names_but_never_rook_owned_ones(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    ws = rook_workspace
    ws.script("dump.sh", ENV_DUMP)
    owned = ("ROOK_TURN", "ROOK_SCENARIO_ID", "ROOK_SESSION", "ROOK_CONVERSATION", "ROOK_HOOK")
    full_profile(
        ws,
        "scripts/dump.sh",
        hook_env={"ROOK_CUSTOM": "mine", "REGION": "eu", **dict.fromkeys(owned, "hijack")},
    )
    ws.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "ok"}]})
    monkeypatch.setenv("ROOK_INHERITED", "from-rook's-own-environment")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    for phase in ALL_PHASES:
        raw = (probe_dir / f"{phase}.env").read_bytes().split(b"\0")
        env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
        assert env["ROOK_CUSTOM"] == "mine" and env["REGION"] == "eu", phase
        assert "ROOK_INHERITED" not in env, phase  # inherited ROOK_* names are still removed
        rook_vars = {k for k in env if k.startswith("ROOK_")} - {"ROOK_CUSTOM"}
        # no handle was returned: ROOK_CONVERSATION is set in no phase, hook_env or not
        assert rook_vars == EXPECTED[phase] - {"ROOK_CONVERSATION"}, phase
        assert "hijack" not in env.values(), phase
        assert env["ROOK_HOOK"] == phase
    # ignored, as documented, but no longer in silence: rook run and rook doctor
    # name each entry (never its value); ROOK_CUSTOM is the user's own
    for name in owned:
        said = f"hook_env.{name} is ignored: {name} is Rook's own variable"
        assert said in r.stderr, r.stderr
    assert "ROOK_CUSTOM" not in r.stderr and "hijack" not in r.stderr, r.stderr
    d = rook_cli("doctor", "-w", str(ws.root))
    assert "hook_env.ROOK_TURN is ignored" in d.stdout and "hijack" not in d.stdout, d.stdout


def test_a_shell_variable_in_hook_env_is_named_as_passed_as_written(
    rook_workspace, rook_cli, probe_dir
):
    """hook_env is plain text: PATH: "$PATH:/opt/bin" gave every hook the PATH
    "$PATH:/opt/bin" (its commands then not found), with no word from rook run
    or rook doctor. The value still reaches the hook as written, and both now
    name the field and the reference (never the rest of the value)."""
    ws = rook_workspace
    ws.script("dump.sh", ENV_DUMP)
    hook_env = {"EXTRA": "${HOME}/data:$PATH-x", "PRICE": "costs $5", "KEY": "Xy$zq9Word"}
    ws.profile({"id": "p", "hooks": {"execute": "scripts/dump.sh"}, "hook_env": hook_env})
    ws.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "passed"}, r.stderr
    raw = (probe_dir / "execute.env").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    assert env["EXTRA"] == "${HOME}/data:$PATH-x", "passed as written, as documented"
    assert "hook_env.EXTRA holds ${HOME}, $PATH, which every hook gets as written" in r.stderr
    # no variable: "$5", and a literal value's "$zq9Word" (never shown: it may be a secret)
    assert "PRICE" not in r.stderr and "zq9" not in r.stderr, r.stderr
    r = rook_cli("doctor", "-w", str(ws.root))
    assert "hook_env.EXTRA holds ${HOME}, $PATH" in r.stdout and "zq9" not in r.stdout, r.stdout
