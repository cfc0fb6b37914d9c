"""Python connectors with the advanced lifecycle, registered through the hookspec."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rook_plugins.ruhroh_connector import Connector
from test_ruhroh import PY, calls, scenario_of

from rook_core.hookspecs import hookimpl
from rook_core.process import run_process
from rook_core.testing import make_distribution

LOG: list[tuple] = []


class Memory(Connector):
    """Keeps the conversation in the session; answers through a real subprocess."""

    name = "memory"
    continuity = "native_session"

    async def prepare(self, run):
        LOG.append(("prepare", run.adapter_id))

    async def start_session(self, session):
        LOG.append(("start_session", session.sample_id))
        return f"mem-{session.sample_id}"

    async def run_turn(self, session, turn):
        LOG.append(("run_turn", session.sample_id, turn.message, turn.iteration))
        history = session.data.setdefault("history", [])
        history.append(turn.message)
        proc = await run_process(
            [
                "bash",
                "-c",
                'printf "%s|%s|%s" "$RUHROH_MESSAGE" "$RUHROH_SESSION_HANDLE" "$RUHROH_ITERATION"',
            ],
            env=turn.env,
            stdin=None,
            timeout=turn.timeout,
        )
        until = int(self.options.get("done_after", 1))
        return {
            "status": "goal_satisfied" if len(history) >= until else "continue",
            "output": f"{len(history)} messages; echo {proc.stdout.decode()}",
            "usage": {"inputTokens": 2, "outputTokens": 1, "costUsd": 0.001},
            "model": "memory-1",
        }

    def detect_completion(self, session, result):  # a plain method: runs in a thread
        LOG.append(("detect_completion", result.status))
        return result.status

    def collect_artifacts(self, session):
        LOG.append(("collect_artifacts", session.sample_id))
        notes = session.workspace / "notes.md"
        notes.write_text("\n".join(session.data.get("history", [])), encoding="utf-8")
        return {"notes": str(notes)}

    async def cleanup(self, session):
        LOG.append(("cleanup", session.sample_id))


class Amnesiac(Memory):
    name = "amnesiac"
    continuity = "workspace_only"


class Flaky(Memory):
    name = "flaky"

    async def run_turn(self, session, turn):
        LOG.append(("run_turn", turn.attempt))
        mode = self.options["mode"]
        if mode == "raise":
            raise RuntimeError("the SDK client is gone")
        if mode == "hang":
            await asyncio.sleep(30)
        if mode == "deaf":  # swallows its cancellation: wait_for waited for it (30 s)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                await asyncio.sleep(30)
        if mode == "runtime_failure":
            return {"status": "runtime_failure", "error": "the model refused"}
        if mode == "unknown_status":  # the SDK's own word
            return {"status": "done", "output": "ok"}
        if mode == "infra_once" and turn.attempt == 1:
            return {"status": "infra_failure", "error": "rate limited upstream"}
        if mode == "infra_late" and turn.attempt == 1:  # its own timeout let it overrun
            await asyncio.sleep(float(self.options["late"]))
            return {"status": "infra_failure", "error": "rate limited upstream"}
        if mode == "nan_artifact":
            return {"status": "goal_satisfied", "output": "ok"}
        if mode == "nan_field":  # a score a client computed from no data
            return {"status": "goal_satisfied", "output": "ok", "scores": [1.0, float("nan")]}
        if mode == "nan_usage":  # a Python float no JSON can hold, as a client may compute it
            return {"status": "goal_satisfied", "output": "ok", "usage": {"inputTokens": float("nan")}}
        return {"status": "goal_satisfied", "output": "ok"}


    def collect_artifacts(self, session):
        if self.options["mode"] == "nan_artifact":
            return {"score": {"value": float("nan")}}
        return super().collect_artifacts(session)


class OwnTimeout(Flaky):
    name = "own-timeout"
    handles_timeout = True


class NoLevel(Memory):
    name = "no-level"
    continuity = None


class Picky(Memory):
    name = "picky"

    def __init__(self, options):
        super().__init__(options)
        if "region" not in options:
            raise ValueError("needs a region option")


class BrokenPrepare(Memory):
    name = "broken-prepare"

    async def prepare(self, run):
        raise ConnectionError("cannot sign in")


class Threaded(Memory):
    """start_session returns what the SDK gave: an object, or a number, or True."""

    name = "threaded"

    async def start_session(self, session):
        return self.options["handle"]


class ConnectorPlugin:
    @hookimpl
    def rook_register_connectors(self, register):
        for cls in (Memory, Amnesiac, Flaky, OwnTimeout, NoLevel, Picky, BrokenPrepare, Threaded):
            register(cls)


@pytest.fixture
def probe_dir(tmp_path, monkeypatch):
    d = tmp_path / "probe"
    d.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(d))
    return d


@pytest.fixture
def connectors(rook_plugin):
    LOG.clear()
    rook_plugin(ConnectorPlugin())
    yield LOG
    LOG.clear()


def connector_profile(ws, phases=("execute",), timeout=None, **entry):
    hooks = {}
    for p in phases:
        hooks[p] = {"connector": {"name": "memory", **entry}}
        if timeout and p == "execute":
            hooks[p]["timeout_seconds"] = timeout
    ws.profile({"id": "conn", "hooks": hooks, "capabilities": {"multi_turn": True, "usage": True}})


def test_lifecycle_is_mapped_onto_rooks_phases(connectors, rook_workspace, rook_cli):
    connector_profile(rook_workspace, done_after=2)  # continue after the first message
    rook_workspace.scenario(
        {
            "id": "a",
            "turns": ["hi", "again"],
            "criteria": [
                {"contains": "2 messages; echo again|mem-a.1|2"},
                {"max_cost": 0.01},
                {"status": "goal_satisfied"},
            ],
        }
    )
    rook_workspace.scenario(
        {"id": "b", "goal": "solo", "criteria": [{"contains": "2 messages; echo continue"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert r.statuses() == {"a": "passed", "b": "passed"}
    assert connectors == [
        ("prepare", "conn"),
        ("start_session", "a.1"),
        ("run_turn", "a.1", "hi", 1),
        ("detect_completion", "continue"),
        ("run_turn", "a.1", "again", 2),
        ("detect_completion", "goal_satisfied"),
        ("collect_artifacts", "a.1"),
        ("cleanup", "a.1"),
        ("start_session", "b.1"),
        ("run_turn", "b.1", "solo", 1),
        ("detect_completion", "continue"),
        ("run_turn", "b.1", "continue", 2),
        ("detect_completion", "goal_satisfied"),
        ("collect_artifacts", "b.1"),
        ("cleanup", "b.1"),
    ]
    turns = scenario_of(r, "a")["turns"]
    assert [t["conversation"] for t in turns] == ["mem-a.1", "mem-a.1"]
    last = turns[-1]["evidence"]
    assert last["continuity"] == "native_session"
    assert last["model"] == {"model": "memory-1"}
    assert last["artifacts"]["notes"]["content"] == "hi\nagain"
    assert "artifacts" not in turns[0]["evidence"]  # collected once, at the end
    assert turns[0]["usage"] == {"input": 2, "output": 1, "cost_usd": 0.001}
    # the run has the manifest too, with the connector's continuity and latest result
    manifest = json.loads((Path(r.report["run"]["dir"]) / "ruhroh-run-manifest.json").read_text())
    assert manifest["adapterId"] == "conn" and manifest["continuity"] == "native_session"
    assert manifest["model"] == {"model": "memory-1"}
    assert r.report["run"]["continuity"] == ["native_session"]  # the run's, declared once
    assert manifest["usage"] == {"inputTokens": 2, "outputTokens": 1, "costUsd": 0.001}


@pytest.mark.parametrize(
    "handle,text", [({"thread": 7}, '{"thread": 7}'), (42, "42"), (True, None), ({}, None)]
)
def test_a_start_session_handle_is_read_as_a_hook_reads_a_conversation(
    handle, text, connectors, rook_workspace, rook_cli
):
    """An object or a number is its JSON text (never Python's repr); true or {} is
    no handle: the scenario run keeps Rook's, which shows no multi_turn and is no
    conversation of the turn's."""
    rook_workspace.profile(
        {"id": "conn", "hooks": {"execute": {"connector": {"name": "threaded", "handle": handle}}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "1 messages"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    turn = scenario_of(r)["turns"][0]
    echoed = turn["output"].split("|")[1]  # RUHROH_SESSION_HANDLE, as the subprocess got it
    observed = r.report["run"]["capabilities"]["observed"]
    if text is None:
        assert "multi_turn" not in observed
        assert turn["conversation"] is None and echoed not in ("", "True", "{}")
    else:
        assert turn["conversation"] == echoed == text
        assert observed["multi_turn"] is True


def test_a_start_session_handle_holding_a_nul_fails_the_scenario_saying_so(
    connectors, rook_workspace, rook_cli
):
    rook_workspace.profile(
        {"id": "conn", "hooks": {"execute": {"connector": {"name": "threaded", "handle": "a\0b"}}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "1 messages"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr + r.stdout
    reason = scenario_of(r)["reason"]
    assert "start_session's handle holds a NUL character" in reason and "ValueError" not in reason
    assert not [e for e in connectors if e[0] == "run_turn"]


def test_connector_continue_loop(connectors, rook_workspace, rook_cli):
    connector_profile(rook_workspace, done_after=3, max_iterations=5)
    rook_workspace.scenario({"id": "s", "goal": "work", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    turns = [e for e in connectors if e[0] == "run_turn"]
    assert [(e[2], e[3]) for e in turns] == [("work", 1), ("continue", 2), ("continue", 3)]


def test_explicit_phases(connectors, rook_workspace, rook_cli):
    connector_profile(
        rook_workspace, phases=("prepare", "open", "execute", "close", "collect"), done_after=2
    )
    rook_workspace.scenario({"id": "s", "turns": ["x", "y"], "criteria": [{"contains": "2 mess"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert [e[0] for e in connectors] == [
        "prepare",
        "start_session",
        "run_turn",
        "detect_completion",
        "run_turn",
        "detect_completion",
        "collect_artifacts",
        "cleanup",
    ]
    s = scenario_of(r)
    assert [h["phase"] for h in s["hooks"]] == ["open", "execute", "execute", "close", "collect"]
    assert s["collected"]["evidence"]["artifacts"]["notes"]["content"] == "x\ny"
    assert r.report["run"]["prepare"]["status"] == "ok"


def test_workspace_only_is_not_runnable_for_conversations(connectors, rook_workspace, rook_cli):
    rook_workspace.profile(
        {
            "id": "conn",
            "hooks": {"execute": {"connector": {"name": "amnesiac"}}},
            "capabilities": {"multi_turn": True},
        }
    )
    rook_workspace.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "1 messages"}]})
    rook_workspace.scenario({"id": "two", "turns": ["a", "b"], "criteria": [{"contains": "b"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "passed", "two": "not_runnable"}
    assert "workspace_only" in scenario_of(r, "two")["reason"]
    assert scenario_of(r, "one")["turns"][0]["evidence"]["continuity"] == "workspace_only"
    assert not [e for e in connectors if e[0] == "run_turn" and e[1] == "two.1"]


@pytest.mark.parametrize(
    "mode,status,text",
    [
        ("raise", "failed", "run_turn raised RuntimeError: the SDK client is gone"),
        ("hang", "timeout", "did not finish within 1 s"),
        (
            "deaf",
            "timeout",
            "did not finish within 1 s; it ignored its cancellation, so Rook closed its coroutine",
        ),
        # it said "a Ruhroh wrapper answers one of": the connector's author looked for a wrapper
        (
            "unknown_status",
            "failed",
            "unknown completion status 'done'; connector 'flaky' (its run_turn or "
            "detect_completion) answers one of goal_satisfied, continue",
        ),
    ],
)
def test_connector_failures(mode, status, text, connectors, rook_workspace, rook_cli):
    rook_workspace.profile(
        {
            "id": "conn",
            "hooks": {
                "execute": {"connector": {"name": "flaky", "mode": mode}, "timeout_seconds": 1}
            },
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    hook = scenario_of(r)["hooks"][0]
    assert hook["status"] == status and text in hook["diagnosis"]
    assert connectors[-1][0] == "cleanup"  # released even after a failure


def test_a_connector_that_handles_its_timeout_but_never_answers_cannot_hang_the_run(
    connectors, rook_workspace, rook_cli, monkeypatch
):
    """A connector with ``handles_timeout = True`` whose ``run_turn`` never ended (it did
    not keep that promise) hung ``rook run`` for ever: Rook awaited it with no bound.
    It now stops waiting ``HANDLED_TIMEOUT_GRACE_SECONDS`` after the timeout (made
    short here), and the hook is a ``timeout`` saying so."""
    from rook_core import transports

    monkeypatch.setattr(transports, "HANDLED_TIMEOUT_GRACE_SECONDS", 1.0)
    rook_workspace.profile(
        {
            "id": "conn",
            "hooks": {
                "execute": {"connector": {"name": "own-timeout", "mode": "hang"},
                            "timeout_seconds": 1}
            },
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout
    s = scenario_of(r)
    assert s["hooks"][0]["status"] == "timeout", s
    assert (
        "connector 'own-timeout' run_turn did not finish within 1 s; Rook stopped waiting "
        "1 s later (the connector sets handles_timeout but did not end run_turn within "
        "its timeout)"
    ) in s["hooks"][0]["diagnosis"], s["hooks"][0]


def test_connector_infra_failure_is_retried(connectors, rook_workspace, rook_cli):
    rook_workspace.profile(
        {"id": "conn", "hooks": {"execute": {"connector": {"name": "flaky", "mode": "infra_once"}}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout
    assert [e for e in connectors if e[0] == "run_turn"] == [("run_turn", 1), ("run_turn", 2)]


def test_an_infra_failure_with_no_time_left_for_its_retry_is_an_infra_error(
    connectors, rook_workspace, rook_cli
):
    # the first attempt used the whole of the scenario's timeout_seconds: no retry is
    # made (it would have no time), and the infra failure stands, not an error
    rook_workspace.profile(
        {
            "id": "conn",
            "hooks": {
                "execute": {"connector": {"name": "own-timeout", "mode": "infra_late", "late": 1.5}}
            },
        }
    )
    rook_workspace.scenario(
        {"id": "s", "goal": "g", "timeout_seconds": 1, "criteria": [{"contains": "ok"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout
    assert [e for e in connectors if e[0] == "run_turn"] == [("run_turn", 1)]
    s = scenario_of(r)
    assert s["status"] == "infra_error", s
    diagnosis = s["hooks"][0]["diagnosis"]
    assert diagnosis.startswith("infrastructure error:"), diagnosis
    assert "rate limited upstream" in diagnosis and "no time was left" in diagnosis, diagnosis


HANGS = """
import asyncio, os
from pathlib import Path
from rook_core.hookspecs import hookimpl
from rook_plugins.ruhroh_connector import Connector

LOG = Path(os.environ["HANG_LOG"])

class Hangs(Connector):
    name = "hangs"
    continuity = "native_session"

    async def start_session(self, session):
        return f"thread-{session.sample_id}"

    async def run_turn(self, session, turn):
        with LOG.open("a") as fh:
            fh.write(f"run_turn {session.sample_id}\\n")
        await asyncio.sleep(600)

    async def cleanup(self, session):
        with LOG.open("a") as fh:
            fh.write(f"cleanup {session.handle}\\n")

@hookimpl
def rook_register_connectors(register):
    register(Hangs)
"""


@pytest.mark.timeout(120)
def test_a_session_open_when_the_run_is_interrupted_is_cleaned_up(rook_workspace, tmp_path):
    """"Sessions still open when a run is interrupted are cleaned up when it ends":
    an installed connector's run_turn hangs, the real rook run gets SIGINT."""
    site = make_distribution(tmp_path / "site", "rook-hangs", {"hangs": "rook_hangs"},
                             {"rook_hangs.py": HANGS})  # fmt: skip
    log = tmp_path / "hang.log"
    rook_workspace.profile({"id": "h", "hooks": {"execute": {"connector": {"name": "hangs"}}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    env = {**os.environ, "HANG_LOG": str(log), "PYTHONPATH": str(site)}
    argv = [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root), "--json"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not log.exists():
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert json.loads(out)["scenarios"][0]["status"] == "pending"
    assert log.read_text().splitlines() == ["run_turn s.1", "cleanup thread-s.1"]


def test_a_connectors_usage_that_is_nan_fails_the_call(connectors, rook_workspace, rook_cli):
    """A connector's usage of float("nan") passed max_tokens (nan <= 5 is never found
    false) and wrote NaN, which no JSON reader accepts, into the report; it is no
    number to count, so the call fails naming the field, as for a wrapper's "lots"."""
    rook_workspace.profile(
        {
            "id": "conn",
            "hooks": {"execute": {"connector": {"name": "flaky", "mode": "nan_usage"}}},
            "capabilities": {"usage": True},
        }
    )
    rook_workspace.scenario(
        {"id": "s", "goal": "g", "criteria": [{"max_tokens": {"input": 5}}]}
    )
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error", s
    assert "run_turn returned usage.inputTokens: NaN" in s["hooks"][0]["diagnosis"]
    json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the report"))


def test_a_connectors_result_holding_nan_fails_the_call(connectors, rook_workspace, rook_cli):
    """A NaN (or infinity) anywhere in what run_turn returned reached report.json as
    NaN, which no JSON reader but Python's accepts (jq, JSON.parse): the call fails,
    naming the field."""
    rook_workspace.profile(
        {"id": "conn", "hooks": {"execute": {"connector": {"name": "flaky", "mode": "nan_field"}}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error", s
    assert "run_turn returned scores[1]: NaN" in s["hooks"][0]["diagnosis"], s["hooks"][0]
    report = Path(r.report["run"]["dir"]) / "report.json"
    json.loads(report.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in report.json"))


def test_connector_artifacts_holding_nan_are_left_out_with_a_note(
    connectors, rook_workspace, rook_cli
):
    """collect_artifacts returning a NaN put it into report.json, which then no JSON
    reader but Python's accepts: the artifacts are left out, and a note says where."""
    entry = {"connector": {"name": "flaky", "mode": "nan_artifact"}}
    rook_workspace.profile({"id": "conn", "hooks": {"execute": entry, "collect": entry}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    report = (Path(r.report["run"]["dir"]) / "report.json").read_text()
    json.loads(report, parse_constant=lambda c: pytest.fail(f"{c} in report.json"))
    record = json.dumps(rook_workspace.record(r.report["run"]["id"], "s.1"))
    assert "collect_artifacts returned score.value: NaN, which no JSON can hold" in record


def test_prepare_failure_fails_each_scenario_clearly(connectors, rook_workspace, rook_cli):
    rook_workspace.profile(
        {"id": "conn", "hooks": {"execute": {"connector": {"name": "broken-prepare"}}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    rook_workspace.scenario({"id": "t", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error", "t": "error"}
    assert "prepare raised ConnectionError: cannot sign in" in scenario_of(r, "t")["reason"]


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"name": "nope"}, "connector 'nope' is not installed; installed: "),
        ({"name": "no-level"}, "declares continuity None"),
        ({"name": "picky"}, "bad options: needs a region option"),
        ({"name": "memory", "max_iterations": "many"}, "max_iterations"),
        ({"mode": "x"}, "name"),
    ],
)
def test_connector_configuration_errors(entry, message, connectors, rook_workspace, rook_cli):
    rook_workspace.profile({"id": "conn", "hooks": {"execute": {"connector": entry}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not [e for e in connectors if e[0] == "run_turn"]


def test_the_command_wrapper_is_a_registered_connector(rook_workspace, rook_cli, probe_dir):
    rook_workspace.profile(
        {
            "id": "c",
            "hooks": {
                "execute": {
                    "connector": {
                        "name": "ruhroh-command",
                        "command": PY,
                        "continuity": "workspace_plus_transcript",
                    }
                }
            },
            "capabilities": {"usage": True},
            "hook_env": {"WRAPPER_MODE": "full"},
        }
    )
    rook_workspace.scenario(
        {"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}, {"max_cost": 1}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    ev = scenario_of(r)["turns"][0]["evidence"]
    assert ev["continuity"] == "workspace_plus_transcript" and ev["adapterVersion"] == "1.4.0"
    assert Path(calls(probe_dir)[0]["RUHROH_WORKSPACE"]).is_dir()


@pytest.mark.parametrize(
    "options,message",
    [
        ({"command": PY, "max_iteration": 3}, "hooks.execute.connector.max_iteration: unknown field"),
        ({"command": PY, "bogus": 1}, "hooks.execute.connector.bogus: unknown field"),
        ({"command": 5}, "hooks.execute.connector.command: must be a command line"),
        ({"command": PY, "cwd": 5}, "hooks.execute.connector.cwd: not a valid string"),
        ({}, "hooks.execute.connector.command: missing: the wrapper's command line"),
    ],
)
def test_the_wrapper_as_a_connector_takes_the_ruhroh_entrys_keys_only(
    options, message, rook_workspace, rook_cli, probe_dir
):
    # the same as a ruhroh: entry, so checked the same: a typo is no silent default
    entry = {"name": "ruhroh-command", **options}
    rook_workspace.profile({"id": "c", "hooks": {"execute": {"connector": entry}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert calls(probe_dir) == []


def test_plugins_list_shows_connectors(connectors):
    from rook_core import plugins

    rook = plugins.build_plugin_manager()
    assert {"memory", "ruhroh-command"} <= set(rook.connectors.names())
    assert rook.connectors.owner("ruhroh-command") == "ruhroh (rook-harness)"


def test_a_connectors_continuity_is_shown_when_its_every_turn_failed(
    connectors, rook_workspace, rook_cli
):
    # the level was read from the turns' evidence alone: a connector whose run_turn
    # answered runtime_failure in every scenario recorded no turn, and no report showed it
    rook_workspace.profile(
        {"id": "conn", "hooks": {"execute": {"connector": {"name": "flaky", "mode": "runtime_failure"}}}}
    )
    rook_workspace.scenario({"id": "a", "goal": "A", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run")
    assert r.exit_code == 1, r.stderr + r.stdout
    assert "the model refused" in r.stdout, r.stdout
    assert "Ruhroh continuity: native_session" in r.stdout, r.stdout
