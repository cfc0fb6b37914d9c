"""Ruhroh command wrappers run as is: variables, the task loop, statuses, results.

The wrappers in tests/agents/ruhroh/ are real programs (bash and Python)
written for Ruhroh; Rook runs them through its real subprocess machinery.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from rook_plugins.ruhroh_session import PROTOCOL_VARIABLES

from rook_core.testing import Workspace

AGENTS = Path(__file__).parent / "agents" / "ruhroh"
BASH = str(AGENTS / "wrapper.sh")
PY = str(AGENTS / "wrapper.py")
WRAPPERS = {"bash": BASH, "python": PY}
NODE = str(AGENTS / "probe.mjs")  # records its environment like the others; not executable
RUHROH_VARS = {
    "RUHROH_MESSAGE",
    "RUHROH_ITERATION",
    "RUHROH_WORKSPACE",
    "RUHROH_GOAL_PATH",
    "RUHROH_WORKSPACE_PATH",
    "RUHROH_RESULT_PATH",
    "RUHROH_SESSION_HANDLE",
    "RUHROH_SCENARIO_ID",
    "RUHROH_RUN_ROOT",
    "RUHROH_ADAPTER_ID",
    "RUHROH_SAMPLE_ID",
    "RUHROH_SAMPLE_SEED",
    "RUHROH_RUN_INDEX",
    "RUHROH_RUN_COUNT",
}


def ruhroh_profile(ws, command, *, hook_env=None, capabilities=None, env=None, **entry):
    """Write the active profile ``rr`` whose execute hook is a Ruhroh wrapper."""
    data = {
        "id": "rr",
        "hooks": {"execute": {"ruhroh": {"command": command, **entry}}},
        "capabilities": capabilities or {"multi_turn": True, "usage": True},
        "hook_env": hook_env or {},
    }
    if env:
        data["env"] = env
    return ws.profile(data)


@pytest.fixture
def probe_dir(tmp_path, monkeypatch):
    d = tmp_path / "probe"
    d.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(d))
    return d


def calls(probe_dir: Path) -> list[dict[str, str]]:
    """The environment of every wrapper call, in order."""
    out = []
    for f in sorted(probe_dir.glob("*.env")):
        pairs = [p.split("=", 1) for p in f.read_bytes().decode().split("\0") if "=" in p]
        env = dict(pairs)
        env["_result_existed"] = str(f.with_suffix(".result-existed").exists())
        env["_cwd"] = f.with_suffix(".cwd").read_text().strip()
        out.append(env)
    return out


def scenario_of(r, sid=None, index=1):
    return next(
        s
        for s in r.report["scenarios"]
        if (sid is None or s["id"] == sid) and s["repeat_index"] == index
    )


# -- the variables -----------------------------------------------------------


@pytest.mark.parametrize("lang", [*sorted(WRAPPERS), "node"])
def test_every_ruhroh_variable_on_each_call(lang, rook_workspace, rook_cli, probe_dir):
    ws = rook_workspace
    wrapper = NODE if lang == "node" else WRAPPERS[lang]
    ruhroh_profile(ws, wrapper, hook_env={"WRAPPER_PLAN": "continue,goal_satisfied"})
    goal = 'fix "it" — $HOME `date` \\ back\nsecond line ✓'
    ws.scenario(
        {
            "id": "conv",
            "turns": [goal, "and now?"],
            "repeat": 2,
            "criteria": [{"status": "goal_satisfied"}],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert r.statuses() == {"conv.1": "passed", "conv.2": "passed"}
    seen = calls(probe_dir)
    assert len(seen) == 4
    run_dir = Path(r.report["run"]["dir"])
    for c in seen:
        assert RUHROH_VARS <= set(c), RUHROH_VARS - set(c)
        assert c["RUHROH_SCENARIO_ID"] == "conv"
        assert c["RUHROH_ADAPTER_ID"] == "rr"
        assert c["RUHROH_RUN_ROOT"] == str(run_dir)
        assert c["RUHROH_RUN_COUNT"] == "2"
        assert c["RUHROH_WORKSPACE"] == c["RUHROH_WORKSPACE_PATH"]
        assert Path(c["RUHROH_WORKSPACE"]).is_dir()
        assert Path(c["RUHROH_WORKSPACE"]).is_relative_to(run_dir)
        assert Path(c["RUHROH_GOAL_PATH"]).read_bytes() == goal.encode("utf-8")
        assert c["_result_existed"] == "False"  # fresh per call
        assert c["ROOK_HOOK"] == "execute"
    first, second = seen[0], seen[1]  # repeat 1: turns 1 and 2
    assert [first["RUHROH_MESSAGE"], second["RUHROH_MESSAGE"]] == [goal, "and now?"]
    assert [first["RUHROH_ITERATION"], second["RUHROH_ITERATION"]] == ["1", "2"]
    assert first["RUHROH_SESSION_HANDLE"] == second["RUHROH_SESSION_HANDLE"] != ""
    assert first["RUHROH_WORKSPACE"] == second["RUHROH_WORKSPACE"]
    assert len({c["RUHROH_RESULT_PATH"] for c in seen}) == 4
    assert [c["RUHROH_RUN_INDEX"] for c in seen] == ["1", "1", "2", "2"]
    assert [c["RUHROH_SAMPLE_ID"] for c in seen] == ["conv.1", "conv.1", "conv.2", "conv.2"]
    assert seen[0]["RUHROH_SAMPLE_SEED"] != seen[2]["RUHROH_SAMPLE_SEED"]
    assert seen[0]["RUHROH_WORKSPACE"] != seen[2]["RUHROH_WORKSPACE"]
    assert seen[0]["RUHROH_SESSION_HANDLE"] != seen[2]["RUHROH_SESSION_HANDLE"]
    # the hook contract's ROOK_* variables of execute, as a script hook gets them
    execute_vars = {
        "ROOK_HOOK", "ROOK_WORKSPACE", "ROOK_PROJECT", "ROOK_AGENT", "ROOK_STATE_DIR",
        "ROOK_RUN_STATE_DIR", "ROOK_RUN_ID", "ROOK_SCENARIO_ID", "ROOK_SESSION", "ROOK_TURN",
    }  # fmt: skip
    for c in seen:
        assert {k for k in c if k.startswith("ROOK_")} - {"ROOK_CONVERSATION"} == execute_vars
        assert c["ROOK_RUN_ID"] == r.report["run"]["id"] and c["ROOK_SCENARIO_ID"] == "conv"
        assert c["ROOK_WORKSPACE"] == str(ws.root.resolve())
    assert [c["ROOK_TURN"] for c in seen] == ["1", "2", "1", "2"]
    assert first["ROOK_SESSION"] == second["ROOK_SESSION"] != seen[2]["ROOK_SESSION"]
    assert first["ROOK_STATE_DIR"] == second["ROOK_STATE_DIR"] != seen[2]["ROOK_STATE_DIR"]
    # The wrapper's memory lives in the per-scenario workspace: turn 2 saw turn 1.
    if lang in ("bash", "node"):
        assert "(2 messages)" in scenario_of(r)["turns"][1]["output"]

    # Deterministic per scenario and repeat: a second run gets the same seeds and ids.
    for f in probe_dir.iterdir():
        f.unlink()
    assert rook_cli("run", "--json").exit_code == 0
    again = calls(probe_dir)
    assert [c["RUHROH_SAMPLE_SEED"] for c in again] == [c["RUHROH_SAMPLE_SEED"] for c in seen]
    assert [c["RUHROH_SAMPLE_ID"] for c in again] == [c["RUHROH_SAMPLE_ID"] for c in seen]



def test_the_run_index_and_count_follow_the_repeat_flag(rook_workspace, rook_cli, probe_dir):
    """``rook run --repeat N`` overrides a file's ``repeat:`` (up or down) and a
    scenario's default of 1: RUHROH_RUN_INDEX is 1..N and RUHROH_RUN_COUNT is N."""
    ruhroh_profile(rook_workspace, BASH)
    rook_workspace.scenario({"id": "a", "goal": "g", "repeat": 2, "criteria": [{"contains": "g"}]})
    rook_workspace.scenario({"id": "b", "goal": "g", "criteria": [{"contains": "g"}]})
    for n in (3, 1):
        for f in probe_dir.iterdir():
            f.unlink()
        r = rook_cli("run", "--json", "--repeat", str(n))
        assert r.exit_code == 0, r.stderr + r.stdout
        seen = sorted(
            (c["RUHROH_SAMPLE_ID"], c["RUHROH_RUN_INDEX"], c["RUHROH_RUN_COUNT"])
            for c in calls(probe_dir)
        )
        runs = [(f"{sid}.{i}", str(i), str(n)) for sid in "ab" for i in range(1, n + 1)]
        assert seen == runs

def test_handle_reported_by_the_wrapper_is_carried(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(
        rook_workspace,
        PY,
        hook_env={"WRAPPER_MODE": "handle", "WRAPPER_PLAN": "continue,goal_satisfied"},
        capabilities={"usage": True},
    )
    rook_workspace.scenario({"id": "h", "goal": "one", "criteria": [{"contains": "continue"}]})
    rook_workspace.scenario({"id": "i", "turns": ["one", "two"], "criteria": [{"contains": "two"}]})
    r = rook_cli("run", "--json", "--only", "h")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = calls(probe_dir)
    assert seen[1]["RUHROH_SESSION_HANDLE"] == "native-h"
    assert [t["conversation"] for t in scenario_of(r, "h")["turns"]] == ["native-h"]
    # the handle the wrapper reported is multi_turn observed: the two-turn scenario runs
    assert r.report["run"]["capabilities"]["observed"]["multi_turn"] is True
    r = rook_cli("run", "--json", "--only", "i")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert [t["conversation"] for t in scenario_of(r, "i")["turns"]] == ["native-i", "native-i"]


def test_a_handle_rook_made_up_is_not_multi_turn_observed(rook_workspace, rook_cli, probe_dir):
    """No sessionHandle from the wrapper: RUHROH_SESSION_HANDLE still carries one (Rook's),
    but that shows nothing about the agent, so multi_turn is not observed."""
    ruhroh_profile(rook_workspace, BASH, capabilities={"usage": True})
    rook_workspace.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "reply"}]})
    rook_workspace.scenario({"id": "two", "turns": ["a", "b"], "criteria": [{"contains": "b"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "passed", "two": "not_runnable"}, r.stdout
    assert "multi_turn" not in r.report["run"]["capabilities"]["observed"]
    assert calls(probe_dir)[0]["RUHROH_SESSION_HANDLE"] != ""
    record = rook_workspace.record(r.report["run"]["id"], "one.1")
    assert record["observed"].get("multi_turn") is None
    assert record["hooks"][0]["conversation_assigned"] is True
    assert "needs capability 'multi_turn'" in scenario_of(r, "two")["reason"]


NO_HANDLE = r"""
#!/usr/bin/env python3
import json, os
print(json.dumps({"status": "goal_satisfied", "output": "ok",
                  "sessionHandle": json.loads(os.environ["HANDLE_JSON"])}))
"""


@pytest.mark.parametrize("value", [True, False, "   ", {}, []])
def test_a_session_handle_that_is_no_handle_is_not_multi_turn_observed(
    value, rook_workspace, rook_cli
):
    # read as the hook contract reads a conversation handle: true, false, a blank
    # string, {} or [] is none, so the scenario run keeps Rook's handle
    wrapper = rook_workspace.script("nohandle.py", NO_HANDLE)
    ruhroh_profile(rook_workspace, str(wrapper), capabilities={"usage": True},
                   hook_env={"HANDLE_JSON": json.dumps(value)})
    rook_workspace.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "passed"}, r.stderr + r.stdout
    assert "multi_turn" not in r.report["run"]["capabilities"]["observed"]
    record = rook_workspace.record(r.report["run"]["id"], "one.1")
    assert record["hooks"][0]["conversation_assigned"] is True


@pytest.mark.parametrize("value,handle", [(42, "42"), (1.5, "1.5"), ({"id": 7}, '{"id": 7}')])
def test_a_session_handle_that_is_a_number_or_object_is_its_json_text(
    value, handle, rook_workspace, rook_cli
):
    wrapper = rook_workspace.script("numhandle.py", NO_HANDLE)
    ruhroh_profile(rook_workspace, str(wrapper), capabilities={"usage": True},
                   hook_env={"HANDLE_JSON": json.dumps(value)})
    rook_workspace.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "passed"}, r.stderr + r.stdout
    assert scenario_of(r)["turns"][0]["conversation"] == handle
    assert r.report["run"]["capabilities"]["observed"]["multi_turn"] is True


ROTATING = r"""
#!/usr/bin/env python3
import json, os
it = int(os.environ["RUHROH_ITERATION"])
with open(os.path.join(os.environ["PROBE_DIR"], f"{it}.seen"), "w") as fh:
    json.dump([os.environ.get("RUHROH_SESSION_HANDLE"), os.environ.get("ROOK_CONVERSATION")], fh)
print(json.dumps({"status": "continue" if it < 3 else "goal_satisfied", "output": "ok",
                  "sessionHandle": f"h-{it}"}))
"""


def test_a_handle_changed_by_a_continue_call_reaches_the_next_call_and_later_hooks(
    rook_workspace, rook_cli, probe_dir
):
    """A wrapper that reports a new sessionHandle on each call: the next call gets it
    as RUHROH_SESSION_HANDLE and as ROOK_CONVERSATION (the hook contract's handle),
    also within the last turn's continue calls, and the close hook gets the latest."""
    wrapper = rook_workspace.script("rotating.py", ROTATING)
    rook_workspace.script(
        "close.sh",
        """
        #!/bin/bash
        printf '%s' "$ROOK_CONVERSATION" > "$PROBE_DIR/close.seen"
        echo '{}'
        """,
    )
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {"execute": {"ruhroh": str(wrapper)}, "close": "scripts/close.sh"},
            "capabilities": {"multi_turn": True},
        }
    )
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = [json.loads((probe_dir / f"{i}.seen").read_text()) for i in (1, 2, 3)]
    assert seen[0][1] is None  # no handle returned yet: none (Rook's own is no conversation)
    assert seen[1:] == [["h-1", "h-1"], ["h-2", "h-2"]]
    assert (probe_dir / "close.seen").read_text() == "h-3"
    assert [t["conversation"] for t in scenario_of(r)["turns"]] == ["h-1", "h-3"]


REPORTS_NO_HANDLE = r"""
#!/bin/bash
printf '%s %s\n' "$RUHROH_ITERATION" "${ROOK_CONVERSATION-unset}" >> "$PROBE_DIR/seen"
echo '{"status":"continue","output":"ok"}'
"""


def test_a_handle_rook_made_up_is_never_rook_conversation(rook_workspace, rook_cli, probe_dir):
    """A wrapper that reports no sessionHandle: the conversation goes on by the handle
    Rook makes up (RUHROH_SESSION_HANDLE), but ROOK_CONVERSATION is the hook contract's
    "handle returned by open or the previous execute", and none was: not on turn 2, not
    on the continue call after it, not for the close and collect hooks."""
    wrapper = rook_workspace.script("nohandle.sh", REPORTS_NO_HANDLE)
    rook_workspace.script(
        "after.sh",
        """
        #!/bin/bash
        printf '%s %s\\n' "$1" "${ROOK_CONVERSATION-unset}" >> "$PROBE_DIR/seen"
        [ "$1" = collect ] && echo '{}'
        exit 0
        """,
    )
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {
                "execute": {"ruhroh": {"command": str(wrapper), "max_iterations": 3}},
                "close": "scripts/after.sh",
                "collect": "scripts/after.sh",
            },
            "capabilities": {"multi_turn": True},
        }
    )
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr + r.stdout
    seen = (probe_dir / "seen").read_text().splitlines()
    assert seen == ["1 unset", "2 unset", "3 unset", "close unset", "collect unset"], seen
    assert "multi_turn" not in r.report["run"]["capabilities"]["observed"]
    # nor does the report show Rook's handle as one the agent returned
    (entry,) = r.report["scenarios"]
    assert [t["conversation"] for t in entry["turns"]] == [None, None], entry["turns"]
    probe = rook_cli("profile", "test", "-w", str(rook_workspace.root), "--json")
    assert json.loads(probe.stdout)["test"]["conversation"] is None, probe.stdout


def test_a_ruhroh_variable_rook_sets_given_in_hook_env_is_a_warning(
    rook_workspace, rook_cli, probe_dir
):
    """Rook sets the protocol's RUHROH_* variables for each call: a hook_env value for
    one never reaches the wrapper, and the user is told so (the run goes on). A
    fallback Rook does not set (RUHROH_AGENT_MODEL) is the user's to give."""
    ruhroh_profile(
        rook_workspace,
        BASH,
        hook_env={"RUHROH_SCENARIO_ID": "mine", "RUHROH_MESSAGE": "hi", "RUHROH_AGENT_MODEL": "m"},
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = calls(probe_dir)[0]
    assert (seen["RUHROH_SCENARIO_ID"], seen["RUHROH_MESSAGE"]) == ("s", "g")
    assert seen["RUHROH_AGENT_MODEL"] == "m"
    warnings = [ln for ln in r.stderr.splitlines() if "hook_env" in ln]
    assert len(warnings) == 1, r.stderr
    assert warnings[0].startswith("rook: warning: ") and "rr.yaml" in warnings[0]
    assert "RUHROH_MESSAGE, RUHROH_SCENARIO_ID" in warnings[0]
    assert "RUHROH_AGENT_MODEL" not in warnings[0] and "mine" not in warnings[0]
    assert set(PROTOCOL_VARIABLES) == RUHROH_VARS  # the names warned about: every one Rook sets
    tested = rook_cli("profile", "test", "rr", "-w", str(rook_workspace.root))  # says so too
    # every hook worked; the default profile's claims are not this test's concern
    assert "test: ok" in tested.stdout or "test: FAILED (optimistic claim:" in tested.stdout, (
        tested.stderr + tested.stdout
    )
    assert "diagnosis:" not in tested.stdout, tested.stdout
    (warning,) = [ln for ln in tested.stderr.splitlines() if "hook_env" in ln]
    assert warning == warnings[0]


def test_a_ruhroh_variable_rook_sets_declared_in_env_is_a_warning(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    """env declaring RUHROH_MESSAGE was taken without a word: the run required it set,
    the wrapper never got its value (Rook's turn text replaced it), and the value was
    redacted from every record, the goal's text included."""
    monkeypatch.setenv("RUHROH_MESSAGE", "from-the-user")
    ruhroh_profile(
        rook_workspace, BASH, env=[{"variable": "RUHROH_MESSAGE", "purpose": "the message"}]
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert calls(probe_dir)[0]["RUHROH_MESSAGE"] == "g"
    (warning,) = [ln for ln in r.stderr.splitlines() if "env declares" in ln]
    assert warning.startswith("rook: warning: ") and "rr.yaml" in warning, r.stderr
    assert "RUHROH_MESSAGE" in warning and "from-the-user" not in warning


def test_a_session_handle_holding_a_nul_fails_the_call_that_reported_it(
    rook_workspace, rook_cli
):
    """No environment variable can carry a NUL: a sessionHandle holding one could not
    reach the next call (it failed as 'run_turn raised ValueError: embedded null
    byte'). The call that reported it fails, saying so."""
    wrapper = rook_workspace.script(
        "nulhandle.sh",
        r"""
        #!/bin/bash
        printf '{"status":"continue","sessionHandle":"a\\u0000b","output":"ok"}\n'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper), capabilities={"usage": True})
    rook_workspace.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "error"}, r.stderr + r.stdout
    hook = scenario_of(r)["hooks"][0]
    assert "sessionHandle holds a NUL character" in hook["diagnosis"], hook
    assert "ValueError" not in hook["diagnosis"]


def test_run_seed_changes_sample_seeds(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, BASH, hook_env={"RUHROH_RUN_SEED": "7"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    assert rook_cli("run", "--json").exit_code == 0
    ruhroh_profile(rook_workspace, BASH, hook_env={"RUHROH_RUN_SEED": "8"})
    assert rook_cli("run", "--json").exit_code == 0
    seeds = [c["RUHROH_SAMPLE_SEED"] for c in calls(probe_dir)]
    assert len(seeds) == 2 and seeds[0] != seeds[1]


# -- the task loop ---------------------------------------------------------------


def test_continue_loops_with_the_text_continue(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(
        rook_workspace,
        BASH,
        max_iterations=5,
        hook_env={"WRAPPER_PLAN": "continue,continue,goal_satisfied"},
    )
    rook_workspace.scenario(
        {
            "id": "loop",
            "goal": "build it",
            "criteria": [{"status": "goal_satisfied"}, {"contains": "reply 3"}],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = calls(probe_dir)
    assert [c["RUHROH_MESSAGE"] for c in seen] == ["build it", "continue", "continue"]
    assert [c["RUHROH_ITERATION"] for c in seen] == ["1", "2", "3"]
    assert len({c["RUHROH_SESSION_HANDLE"] for c in seen}) == 1
    turn = scenario_of(r)["turns"][0]
    ev = turn["evidence"]
    assert [i["status"] for i in ev["iterations"]] == ["continue", "continue", "goal_satisfied"]
    assert ev["status"] == "goal_satisfied" and "max_iterations_reached" not in ev
    assert turn["usage"] == {
        "input": 30,
        "output": 15,
        "total": 45,
        "cost_usd": pytest.approx(0.03),
    }
    assert "--- iteration 2 ---" in ev["transcript"]
    assert [h["phase"] for h in scenario_of(r)["hooks"]] == ["execute"]


def test_continue_until_max_iterations(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, BASH, max_iterations=3, hook_env={"WRAPPER_PLAN": "continue"})
    rook_workspace.scenario(
        {"id": "loop", "goal": "never done", "criteria": [{"status": "goal_satisfied"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    assert len(calls(probe_dir)) == 3
    s = scenario_of(r)
    assert s["status"] == "failed"
    assert s["turns"][0]["evidence"]["max_iterations_reached"] is True
    assert "max_iterations reached" in s["criteria"][0]["reason"]


def test_a_public_cli_scenarios_max_turns_lowers_the_iteration_budget(
    rook_workspace, rook_cli, probe_dir
):
    ruhroh_profile(rook_workspace, BASH, max_iterations=5, hook_env={"WRAPPER_PLAN": "continue"})
    rook_workspace.scenario(
        {"title": "Loop", "id": "loop", "goal": "never done", "max_turns": 2,
         "criteria": [{"status": "goal_satisfied"}]}
    )
    r = rook_cli("run", "--json")
    assert len(calls(probe_dir)) == 2
    assert scenario_of(r)["turns"][0]["evidence"]["max_iterations_reached"] is True
    # the limit reached is named as the files write it: the profile says max_iterations 5,
    # so "max_iterations (2) reached" sent the user to a setting that was not the cause
    reason = scenario_of(r)["criteria"][0]["reason"]
    assert reason == "status is 'continue' (the scenario's max_turns reached); expected goal_satisfied"
    # and the run's warning about the last turn names it too
    assert scenario_of(r)["warnings"] == [
        "turn 1: the scenario's max_turns (2) reached with the agent still answering continue: "
        "it never said the goal was done (a status criterion judges this; the others judged "
        "its last answer)"
    ]
    rook_workspace.scenario(
        {"title": "Loop", "id": "loop", "turns": ["a", "b", "c"], "max_turns": 2,
         "criteria": [{"contains": "reply"}]}
    )
    r = rook_cli("run", "--json")
    assert scenario_of(r)["warnings"] == [
        "turn 3 not sent: the conversation ended after turn 2 (the scenario's max_turns (2) "
        "reached with the agent still answering continue; no further call is made)"
    ]


def test_a_public_cli_scenarios_setup_messages_come_first_and_the_goal_file_holds_its_goal(
    rook_workspace, rook_cli, probe_dir
):
    # RUHROH_GOAL_PATH is the goal (after the setup messages), never the first turn sent
    ruhroh_profile(rook_workspace, BASH, hook_env={"WRAPPER_PLAN": "continue"})
    rook_workspace.scenario(
        {"title": "Refund", "id": "refund", "goal": "Where is my refund?", "multi_turn": True,
         "setup_messages": ["I cancelled ORD-1", "it was 20 EUR"], "max_turns": 4,
         "criteria": [{"status": "continue"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = calls(probe_dir)
    assert [c["RUHROH_MESSAGE"] for c in seen] == [
        "I cancelled ORD-1", "it was 20 EUR", "Where is my refund?", "continue"
    ]
    assert {Path(c["RUHROH_GOAL_PATH"]).read_text() for c in seen} == {"Where is my refund?"}


def test_turns_are_iterations_and_continue_follows_the_last(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, BASH, max_iterations=4, hook_env={"WRAPPER_PLAN": "continue"})
    rook_workspace.scenario(
        {"id": "multi", "turns": ["first", "second"], "criteria": [{"status": "continue"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = calls(probe_dir)
    assert [c["RUHROH_MESSAGE"] for c in seen] == ["first", "second", "continue", "continue"]
    assert [c["RUHROH_ITERATION"] for c in seen] == ["1", "2", "3", "4"]
    turns = scenario_of(r)["turns"]
    assert len(turns[0]["evidence"]["iterations"]) == 1
    assert len(turns[1]["evidence"]["iterations"]) == 3


def test_a_rubric_over_all_turns_of_a_conversation_that_ended_early_is_unverifiable(
    rook_workspace, rook_cli, probe_dir
):
    """A ``rubric`` with ``turn: all`` judges all turns together: it passed on the
    turns that ran though turn 3 was never sent (per-turn criteria already said
    unverifiable)."""
    ruhroh_profile(rook_workspace, BASH, hook_env={"WRAPPER_PLAN": "continue,goal_satisfied"})
    rook_workspace.script("judge.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{"output": "{\\"pass\\": true, \\"reason\\": \\"fine\\"}"}'
    """)
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.sh"}},
                           active=False)
    rook_workspace.scenario({"id": "m", "turns": ["a", "b", "c"], "criteria": [
        {"rubric": "stays polite", "turn": "all"}, {"rubric": "stays polite"}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    every, last = scenario_of(r, "m")["criteria"]
    assert every["status"] == "unverifiable", every
    assert "turn 3 was not sent" in every["reason"]
    assert last["status"] == "passed", last  # the last turn sent is the last turn


def test_a_plugin_judge_over_all_turns_of_a_conversation_that_ended_early_is_unverifiable(
    rook_workspace, rook_cli, probe_dir
):
    """A ``judge:`` with ``turn: all`` (view.scope "all") could not see turn 3,
    never sent: like a rubric over all turns, unverifiable, never passed."""
    ruhroh_profile(rook_workspace, BASH, hook_env={"WRAPPER_PLAN": "continue,goal_satisfied"})
    rook_workspace.scenario({"id": "m", "turns": ["a", "b", "c"], "criteria": [
        {"judge": {"name": "keywords", "words": ["reply"]}, "turn": "all"},
        {"judge": {"name": "keywords", "words": ["reply"]}}]})
    r = rook_cli("run", "--json")
    every, last = scenario_of(r, "m")["criteria"]
    assert every["status"] == "unverifiable", every
    assert "turn 3 was not sent" in every["reason"]
    assert last["status"] == "passed", last


def test_continue_sends_every_turn(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, BASH, hook_env={"WRAPPER_PLAN": "continue,continue,goal_satisfied"})
    rook_workspace.scenario(
        {
            "id": "m",
            "turns": ["a", "b", "c"],
            "criteria": [{"contains": "reply 3 to c (3 messages)"}],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert [c["RUHROH_MESSAGE"] for c in calls(probe_dir)] == ["a", "b", "c"]
    assert "conversation_ended" not in rook_workspace.record(r.report["run"]["id"], "m.1")


@pytest.mark.parametrize(
    "status", ["goal_satisfied", "cannot_satisfy", "policy_blocked", "out_of_scope", "cancelled"]
)
def test_a_terminal_status_mid_scenario_ends_the_conversation(
    status, rook_workspace, rook_cli, probe_dir
):
    ruhroh_profile(rook_workspace, BASH, hook_env={"WRAPPER_PLAN": f"continue,{status}"})
    rook_workspace.scenario(
        {
            "id": "m",
            "turns": ["a", "b", "c", "d"],
            # judged on the turns that ran: the last one is turn 2
            "criteria": [{"status": status}, {"contains": "reply 2 to b (2 messages)"}],
        }
    )
    rook_workspace.scenario(
        {"id": "late", "turns": ["a", "b", "c"], "criteria": [{"contains": "c", "turn": 3}]}
    )
    rook_workspace.scenario(  # every turn must have it: the turn never sent is not seen
        {"id": "every", "turns": ["a", "b", "c"], "criteria": [{"contains": "reply", "turn": "all"}]}
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"m": "passed", "late": "unverifiable", "every": "unverifiable"}
    assert [c["RUHROH_MESSAGE"] for c in calls(probe_dir)] == ["a", "b"] * 3
    every = scenario_of(r, "every")["criteria"][0]["reason"]
    assert every.startswith("all 2 turns: ") and "turn 3 was not sent" in every
    m = scenario_of(r, "m")
    assert [t["turn"] for t in m["turns"]] == [1, 2]
    assert m["turns"][1]["evidence"]["conversation_ended"] == f"the agent answered {status}"
    assert m["warnings"] == [
        f"turns 3-4 not sent: the conversation ended after turn 2 (the agent answered {status})"
    ]
    record = rook_workspace.record(r.report["run"]["id"], "m.1")
    assert record["conversation_ended"] == {
        "after_turn": 2,
        "reason": f"the agent answered {status}",
        "not_sent": [3, 4],
    }
    late = scenario_of(r, "late")["criteria"][0]
    assert late["status"] == "unverifiable"
    assert late["reason"] == (
        f"turn 3 was not sent: the conversation ended after turn 2 (the agent answered {status})"
    )


def test_no_call_once_max_iterations_have_run(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, BASH, max_iterations=2, hook_env={"WRAPPER_PLAN": "continue"})
    rook_workspace.scenario(
        {"id": "m", "turns": ["a", "b", "c", "d"], "criteria": [{"status": "goal_satisfied"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    assert [c["RUHROH_MESSAGE"] for c in calls(probe_dir)] == ["a", "b"]
    s = scenario_of(r)
    assert s["status"] == "failed" and "max_iterations reached" in s["criteria"][0]["reason"]
    ev = s["turns"][-1]["evidence"]
    assert ev["max_iterations_reached"] is True
    assert ev["conversation_ended"].startswith("max_iterations (2) reached")
    assert s["warnings"][0].startswith("turns 3-4 not sent: the conversation ended after turn 2")


# -- statuses ------------------------------------------------------------------


@pytest.mark.parametrize(
    "status", ["goal_satisfied", "cannot_satisfy", "policy_blocked", "out_of_scope", "cancelled"]
)
def test_completing_statuses_are_recorded(status, rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": f"status:{status}"})
    rook_workspace.scenario({"id": "s", "goal": "delete prod", "criteria": [{"status": status}]})
    rook_workspace.scenario(
        {"id": "ok", "goal": "delete prod", "criteria": [{"status": "goal_satisfied"}]}
    )
    r = rook_cli("run", "--json")
    assert scenario_of(r, "s")["status"] == "passed", scenario_of(r, "s")
    assert scenario_of(r, "s")["turns"][0]["evidence"]["status"] == status
    expected = "passed" if status == "goal_satisfied" else "failed"
    assert scenario_of(r, "ok")["status"] == expected
    assert [h["status"] for h in scenario_of(r, "s")["hooks"]] == ["ok"]


def test_refusal_can_be_expected_with_a_list(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "status:policy_blocked"})
    rook_workspace.scenario(
        {
            "id": "s",
            "goal": "exfiltrate secrets",
            "criteria": [{"status": ["cannot_satisfy", "policy_blocked"]}],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}
    rook_workspace.scenario(
        {"id": "t", "goal": "g", "criteria": [{"status": ["goal_satisfied", "cannot_satisfy"]}]}
    )
    r = rook_cli("run", "--json", "--only", "t")
    (verdict,) = scenario_of(r, "t")["criteria"]
    # the list as words, never Python's ['goal_satisfied', 'cannot_satisfy']
    assert verdict["reason"] == (
        "status is 'policy_blocked'; expected one of goal_satisfied, cannot_satisfy"
    ), verdict


def test_runtime_failure_fails_the_hook(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "status:runtime_failure"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    s = scenario_of(r)
    assert s["status"] == "error"
    assert (
        "runtime_failure" in s["reason"] and "answered with status:runtime_failure" in s["reason"]
    )
    assert not s["reason"].split(": ", 1)[1].startswith("infrastructure error")
    assert len(calls(probe_dir)) == 1  # not retried


def test_infra_failure_is_retried_once(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "infra_once"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = calls(probe_dir)
    assert len(seen) == 2
    assert seen[0]["RUHROH_ITERATION"] == seen[1]["RUHROH_ITERATION"] == "1"
    assert seen[0]["RUHROH_RESULT_PATH"] != seen[1]["RUHROH_RESULT_PATH"]
    its = scenario_of(r)["turns"][0]["evidence"]["iterations"]
    assert [(i["attempt"], i["status"]) for i in its] == [
        (1, "infra_failure"),
        (2, "goal_satisfied"),
    ]


def test_infra_failure_twice_is_an_infrastructure_error(
    rook_workspace, rook_cli, probe_dir, tmp_path
):
    """Not counted against the agent: not decided, not a failure; but shown, and exit 1."""
    ruhroh_profile(
        rook_workspace, PY, hook_env={"WRAPPER_MODE": "full", "WRAPPER_MODE_S": "infra_always"}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    rook_workspace.scenario({"id": "fine", "goal": "g", "criteria": [{"contains": "reply"}]})
    junit = tmp_path / "rook.xml"
    r = rook_cli("run", "--json", "--report", f"junit:{junit}")
    assert r.exit_code == 1
    assert len(calls(probe_dir)) == 3
    assert r.statuses() == {"s": "infra_error", "fine": "passed"}
    s = scenario_of(r, "s")
    hook = s["hooks"][0]
    assert hook["diagnosis"].startswith("infrastructure error:")
    assert "sandbox unavailable (attempt 2)" in hook["diagnosis"]
    assert "infrastructure error" in s["reason"]
    summary = r.report["summary"]
    assert summary["infra_error"] == 1 and summary["error"] == 0 and summary["failed"] == 0
    assert summary["decided"] == 1 and summary["pass_rate"] == 1.0  # the agent's rate
    assert summary["coverage"] == 0.5  # one of two runs untested
    by = {a["id"]: a for a in summary["by_scenario"]}
    assert by["s"]["decided"] == 0 and by["s"]["pass_rate"] is None and not by["s"]["flaky"]
    record = rook_workspace.record(r.report["run"]["id"], "s.1")
    assert record["hooks"][0]["infra"] is True and record["infra"] is True
    assert 'type="infra_error"' in junit.read_text()
    assert "INFRA ERROR" in rook_cli("runs", "show", r.report["run"]["id"]).stdout
    # a --min-pass-rate gate the agent reaches still exits 1: a run went untested
    gated = rook_cli("run", "--json", "--min-pass-rate", "0.5")
    assert gated.exit_code == 1 and gated.report["summary"]["gate"]["missed"] == []
    # the run's verdict is the exit code's, in every report
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    rook_cli("report", r.report["run"]["id"], "--report", f"markdown:{md}", "--report", f"html:{html}")
    assert md.read_text().startswith("## ❌ Rook: 1 infra_error")
    assert "— failed</title>" in html.read_text()
    # untested, so a resume tries it again, from the start; the failed attempt is kept
    run_id = r.report["run"]["id"]
    assert (
        f"rook run --run {run_id} -w {rook_workspace.root} --report junit:{junit} tries it again"
        in s["reason"]
    )
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "full"})
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "failed", "fine": "passed"}  # tested now: judged
    record = rook_workspace.record(run_id, "s.1")
    assert record["infra_attempts"][0]["hooks"][0]["infra"] is True
    assert "infra" not in record and record["final"]


@pytest.mark.parametrize(
    "mode,message",
    [
        ("status:finished", "unknown completion status 'finished'"),
        ("no_status", "reported no completion status"),
        ("exit_code", "exited with code 3"),
        ("bad_result_file", "is not JSON"),
        ("wrong_version", "ruhroh_run_agent_result_v9"),
    ],
)
def test_broken_answers_fail_with_a_clear_diagnosis(
    mode, message, rook_workspace, rook_cli, probe_dir
):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": mode})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    s = scenario_of(r)
    assert s["status"] == "error" and message in s["reason"], s["reason"]
    assert "Traceback" not in r.stdout + r.stderr


HALF_WRITTEN = r"""
#!/usr/bin/env python3
import os, signal, sys
with open(os.environ["RUHROH_RESULT_PATH"], "w") as fh:
    fh.write('{"version": "ruhroh_run_agent_result_v1", "status": "goal_sat')
    fh.flush()
    sys.stderr.write("writing the result\\n")
    sys.stderr.flush()
    if os.environ["HOW"] == "killed":
        os.kill(os.getpid(), signal.SIGKILL)  # killed mid-answer (the OOM killer, say)
    sys.exit(3)
"""


@pytest.mark.parametrize(
    "how,said",
    [("killed", "the wrapper was killed by signal 9"), ("exit", "the wrapper exited with code 3")],
)
def test_a_result_file_cut_off_by_the_wrapper_s_end_says_how_it_ended(
    how, said, rook_workspace, rook_cli
):
    """A wrapper killed while writing its result file (or failing there) was told only
    that the file is not JSON, as if the wrapper had written bad JSON: the diagnosis now
    says how the wrapper ended, with its standard error, as one without a file does."""
    wrapper = rook_workspace.script("half.py", HALF_WRITTEN)
    ruhroh_profile(rook_workspace, str(wrapper), hook_env={"HOW": how})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr + r.stdout
    diagnosis = scenario_of(r)["hooks"][0]["diagnosis"]
    assert "(RUHROH_RESULT_PATH) is not JSON" in diagnosis, diagnosis
    assert said in diagnosis and "stderr: writing the result" in diagnosis, diagnosis


def test_a_reported_status_wins_over_a_nonzero_exit(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "status_then_exit"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout
    it = scenario_of(r)["turns"][0]["evidence"]["iterations"][0]
    assert it["exit_code"] == 4 and "exited with code 4" in it["notes"][0]


# -- the final line and the result file ---------------------------------------------


def test_result_file_wins_and_everything_becomes_evidence(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(
        rook_workspace,
        PY,
        artifact_max_bytes=40,
        hook_env={"WRAPPER_MODE": "full", "WRAPPER_TRANSCRIPT_EXTRA": "x" * 100},
    )
    rook_workspace.scenario(
        {
            "id": "s",
            "goal": "summarise",
            "criteria": [
                {"status": "goal_satisfied"},  # the final line said continue: the file wins
                {"contains": "python reply to summarise"},
                {"max_tokens": {"input": 1200, "output": 800, "total": 2000}},
                {"max_cost": 0.5},
            ],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    turn = scenario_of(r)["turns"][0]
    assert turn["usage"] == {"input": 1200, "output": 800, "total": 2000, "cost_usd": 0.42}
    ev = turn["evidence"]
    assert ev["model"] == {
        "provider": "example",
        "model": "agent-model",
        "version": "2026-07-07",
        "promptVersion": "adapter-prompt-v3",
    }
    assert ev["adapterVersion"] == "1.4.0" and ev["runId"] == "agent-run-1"
    art = ev["artifacts"]["transcript"]
    assert art["content"] == "[1] user: summarise\n" + "x" * 20  # capped at 40 bytes
    assert art["truncated"] is True and art["size"] == 120
    assert ev["transcript"] == "thinking...\ntool: read_file README.md"
    assert ev["iterations"][0]["source"] == "result_file+final_line"
    assert len(calls(probe_dir)) == 1  # goal_satisfied from the file: no second iteration


@pytest.mark.timeout(30)
def test_an_artifact_that_is_a_named_pipe_is_not_read(rook_workspace, rook_cli, probe_dir):
    # reading it would wait for a writer forever (and the run ignore SIGTERM meanwhile)
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "fifo_artifact"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    artifacts = scenario_of(r)["turns"][0]["evidence"]["artifacts"]
    assert artifacts["live"]["kind"] == "special" and "content" not in artifacts["live"]
    assert "user: g" in artifacts["transcript"]["content"]


def test_budgets_fail_on_ruhroh_usage(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "full"})
    rook_workspace.scenario({"id": "tokens", "goal": "g", "criteria": [{"max_tokens": 1999}]})
    rook_workspace.scenario({"id": "cost", "goal": "g", "criteria": [{"max_cost": 0.41}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"tokens": "failed", "cost": "failed"}
    assert "$0.4200" in scenario_of(r, "cost")["criteria"][0]["reason"]


def test_final_line_only(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "line_only"})
    rook_workspace.scenario(
        {
            "id": "s",
            "goal": "g",
            "criteria": [
                {"equals": "done from the final line"},
                {"max_tokens": {"input": 3, "output": 4}},
            ],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    turn = scenario_of(r)["turns"][0]
    assert turn["usage"] == {"input": 3, "output": 4}
    assert turn["evidence"]["iterations"][0]["source"] == "final_line"
    assert "model" not in turn["evidence"]


def test_a_final_line_is_ended_by_a_newline_only(rook_workspace, rook_cli, probe_dir):
    # JSON.stringify leaves U+2028, U+2029 and U+0085 in a string unescaped: they do
    # not end the final line (nor does a progress bar's carriage return end a line)
    ruhroh_profile(rook_workspace, str(AGENTS / "wrapper.mjs"))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fourth"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    turn = scenario_of(r)["turns"][0]
    assert turn["output"] == "done: g\u2028second\u2029third\u0085fourth"
    assert turn["evidence"]["status"] == "goal_satisfied"
    assert turn["evidence"]["transcript"] == "working 10%\r100%"


def test_transcript_is_the_answer_when_no_field_holds_one(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(
        rook_workspace,
        PY,
        hook_env={"WRAPPER_MODE": "transcript_answer"},
        capabilities={"multi_turn": True},
    )
    rook_workspace.scenario(
        {"id": "s", "goal": "g", "criteria": [{"equals": "thinking...\ntool: read_file README.md"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert "usage" not in scenario_of(r)["turns"][0] or scenario_of(r)["turns"][0]["usage"] is None


def test_workspace_template_and_working_directory(rook_workspace, rook_cli, probe_dir):
    ws = rook_workspace
    template = ws.agent_dir / "fixtures" / "repo"
    template.mkdir(parents=True)
    (template / "README.md").write_text("fixture repo\n")
    ruhroh_profile(ws, BASH, workspace_template="fixtures/repo")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    assert rook_cli("run", "--json").exit_code == 0
    call = calls(probe_dir)[0]
    workspace = Path(call["RUHROH_WORKSPACE"])
    assert call["_cwd"] == str(workspace)  # by default the wrapper works in the workspace
    assert (workspace / "README.md").read_text() == "fixture repo\n"
    assert (workspace / "memory.txt").is_file()
    assert (template / "memory.txt").exists() is False  # the template is copied, not used

    ruhroh_profile(ws, BASH, cwd=".")
    assert rook_cli("run", "--json").exit_code == 0
    assert calls(probe_dir)[1]["_cwd"] == str(ws.root)


def test_a_relative_artifact_path_is_read_from_where_the_wrapper_runs(rook_workspace, rook_cli):
    # the wrapper names the file it wrote in its working directory: the entry's cwd
    # (found in the workspace, then the agent's folder), else RUHROH_WORKSPACE
    ws = rook_workspace
    (ws.agent_dir / "tools").mkdir()
    wrapper = ws.script(
        "rel.sh",
        """
        #!/bin/bash
        echo "cwd" > out.log
        echo "sandbox" > "$RUHROH_WORKSPACE/out.log"
        echo '{"status":"goal_satisfied","output":"ok","artifacts":{"log":"out.log"}}'
        """,
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    for cwd, content in (("tools", "cwd\n"), (None, "sandbox\n")):
        ruhroh_profile(ws, str(wrapper), **({"cwd": cwd} if cwd else {}))
        r = rook_cli("run", "--json")
        assert r.exit_code == 0, r.stderr + r.stdout
        log = scenario_of(r)["turns"][0]["evidence"]["artifacts"]["log"]
        assert log["content"] == content, log
    assert log["path"] == str(Path(scenario_of(r)["turns"][0]["evidence"]["workspace"]) / "out.log")


# -- timeouts, redaction, configuration -------------------------------------------


SLOW_CONTINUE = r"""#!/bin/bash
sleep 1.2
[ "$RUHROH_ITERATION" -lt 3 ] && s=continue || s=goal_satisfied
printf '{"status":"%s","output":"reply %s"}\n' "$s" "$RUHROH_ITERATION"
"""


def test_a_scenarios_timeout_caps_the_whole_turn_not_each_call(rook_workspace, rook_cli):
    """A scenario's ``timeout_seconds`` caps each execute turn (scenarios.md), but a
    Ruhroh wrapper answering continue got it afresh for every call: three calls of
    1.2 s under ``timeout_seconds: 2`` passed. The turn's iterations now share it."""
    ws = rook_workspace
    wrapper = ws.script("slow.sh", SLOW_CONTINUE)
    ruhroh_profile(ws, str(wrapper), max_iterations=5)
    ws.scenario(
        {"id": "s", "goal": "g", "timeout_seconds": 2, "criteria": [{"contains": "reply 3"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr + r.stdout
    hook = scenario_of(r)["hooks"][0]
    assert hook["status"] == "timeout", hook
    assert "the scenario's timeout_seconds (2 s) caps the whole turn" in hook["diagnosis"]
    assert "iteration 2 had what was left of it" in hook["diagnosis"]  # the third call was never made
    assert "on the hook entry" not in hook["diagnosis"]  # the entry's timeout did not run out
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply 3"}]})
    assert rook_cli("run", "--json").statuses() == {"s": "passed"}  # each call has 300 s


def test_a_scenarios_timeout_caps_the_turn_also_after_an_iteration_reported_artifacts(
    rook_workspace, rook_cli
):
    # reading an iteration's artifacts right after its call reused the name of the turn's
    # time cap for artifact_max_bytes: once an iteration reported an artifact, the turn's
    # later calls had 65536 s left of timeout_seconds: 2, and three calls of 1.2 s passed
    ws = rook_workspace
    wrapper = ws.script("slow-art.sh", SLOW_CONTINUE.replace(
        '"output":"reply %s"}', '"output":"reply %s","artifacts":{"log":"out.log"}}'
    ).replace("sleep 1.2", "sleep 1.2; echo x > out.log"))
    ruhroh_profile(ws, str(wrapper), max_iterations=5)
    ws.scenario(
        {"id": "s", "goal": "g", "timeout_seconds": 2, "criteria": [{"contains": "reply 3"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr + r.stdout
    hook = scenario_of(r)["hooks"][0]
    assert hook["status"] == "timeout", hook
    assert "the scenario's timeout_seconds (2 s) caps the whole turn" in hook["diagnosis"]
    assert "iteration 2 had what was left of it" in hook["diagnosis"]


@pytest.mark.parametrize("who", ["wrapper", "child"])
def test_a_stopped_wrapper_is_said_stopped_not_told_to_raise_its_timeout(
    rook_workspace, rook_cli, who
):
    """A wrapper that was stopped (SIGSTOP, SIGTSTP), or waited for a process it
    started that was, was "timed out ... raise timeout_seconds on the hook entry
    (beside ruhroh:) if the agent is this slow": no timeout would have been enough."""
    body = {
        "wrapper": "kill -STOP $$\necho '{\"status\": \"goal_satisfied\"}'\n",
        "child": "sleep 30 &\nkill -STOP $!\nwait\n",
    }[who]
    script = rook_workspace.script("w.sh", "#!/bin/bash\n" + body)
    rook_workspace.profile(
        {"id": "rr", "hooks": {"execute": {"ruhroh": {"command": str(script)}, "timeout_seconds": 1}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    hook = scenario_of(r)["hooks"][0]
    assert hook["status"] == "timeout", hook
    d = hook["diagnosis"]
    stopped = "it was stopped" if who == "wrapper" else "a process it started (pid "
    assert d.startswith(f"timed out after 1 s; {stopped}"), d
    assert "(SIGSTOP or SIGTSTP) and never continued" in d, d
    assert "raising timeout_seconds will not help" in d, d
    assert "if the agent is this slow" not in d, d


def test_timeout_kills_the_wrappers_process_group(rook_workspace, rook_cli, probe_dir):
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {"execute": {"ruhroh": {"command": PY}, "timeout_seconds": 1}},
            "hook_env": {"WRAPPER_MODE": "sleep"},
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    hook = scenario_of(r)["hooks"][0]
    assert hook["status"] == "timeout" and "process group was killed" in hook["diagnosis"]
    # which setting to raise (the entry's: inside ruhroh: it is refused as unknown)
    assert (
        "raise timeout_seconds on the hook entry (beside ruhroh:) if the agent is this slow"
        in hook["diagnosis"]
    ), hook["diagnosis"]
    pid = int((probe_dir / "grandchild.pid").read_text())
    # SIGKILL is delivered at once but a process is torn down asynchronously:
    # on a loaded machine it may take a moment to be gone.
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid)


@pytest.mark.parametrize("where", ["final_line", "result_file"])
def test_a_wrapper_that_answered_but_never_exited_is_not_told_to_raise_its_timeout(
    where, rook_workspace, rook_cli
):
    # its status was reported, then it hung (an agent CLI it waits for, left serving):
    # the diagnosis said to raise timeout_seconds, which no value helps
    answer = """echo '{"status":"goal_satisfied"}'""" + (
        ' > "$RUHROH_RESULT_PATH"' if where == "result_file" else ""
    )
    wrapper = rook_workspace.script("hangs.sh", f"#!/bin/bash\n{answer}\nsleep 30\n")
    rook_workspace.profile(
        {"id": "rr", "hooks": {"execute": {"ruhroh": {"command": str(wrapper)},
                                           "timeout_seconds": 1}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    hook = scenario_of(r)["hooks"][0]
    assert hook["status"] == "timeout", hook
    assert "raise timeout_seconds" not in hook["diagnosis"], hook["diagnosis"]
    assert (
        "it had reported its status (goal_satisfied) but never exited: a wrapper exits once "
        "it has answered, and no timeout is long enough for one that does not"
    ) in hook["diagnosis"], hook["diagnosis"]


def test_a_daemon_a_wrapper_started_dies_at_its_timeout_as_a_hooks_does(
    rook_workspace, rook_cli, tmp_path
):
    """A wrapper that double-forks a daemon (a new session, its own descriptors:
    orphaned at once, out of the process tree and the group) and then hangs: a
    script hook's such daemon is found by its ROOK_* variables and killed at the
    hook's timeout; a wrapper's kept running through the rest of the run, killed only
    at its end. It dies at the timeout, the kill in the iteration's notes."""
    ws = rook_workspace
    pids, seen = tmp_path / "pids", tmp_path / "seen"
    ws.script("w.sh", f"""
        #!/bin/bash
        if [ "$RUHROH_MESSAGE" = daemon ]; then
          ( setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {pids} )
          sleep 300
        fi
        state=$(awk '/^State:/ {{print $2}}' /proc/"$(cat {pids})"/status 2>/dev/null)
        [ -n "$state" ] && [ "$state" != Z ] && echo alive > {seen}  # a zombie is dead
        echo '{{"status": "goal_satisfied", "output": "ok"}}'
    """)
    command = str(ws.agent_dir / "scripts" / "w.sh")
    ws.profile({"id": "p", "hooks": {"execute": {"ruhroh": {"command": command},
                                                 "timeout_seconds": 1}}})
    ws.scenario({"id": "a1", "goal": "daemon", "criteria": [{"contains": "ok"}]})
    ws.scenario({"id": "a2", "goal": "later", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "-j", "1")
    assert r.statuses() == {"a1": "error", "a2": "passed"}
    assert not seen.exists(), "the daemon outlived its wrapper's timeout"
    daemon = int(pids.read_text())
    (iteration,) = rook_workspace.record(r.report["run"]["id"], "a1.1")["hooks"][0]["data"]["iterations"]
    assert any(f"pid {daemon}" in n for n in iteration["notes"]), iteration


LEAVES_A_DIRECTORY = r"""
#!/bin/bash
# the first call leaves a directory at its RUHROH_RESULT_PATH and is cut off there
if [ ! -e "$PROBE_DIR/first" ]; then
  touch "$PROBE_DIR/first"
  mkdir -p "$RUHROH_RESULT_PATH/sub"
  touch "$PROBE_DIR/blocking"
  sleep 600
fi
echo '{"status":"goal_satisfied","output":"done"}'
"""


def _run_cut_while_blocking(ws: Workspace, probe_dir: Path) -> str:
    """``rook run --json`` interrupted (SIGINT) once a hook made ``PROBE_DIR/blocking``:
    the run's id."""
    argv = [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (probe_dir / "blocking").exists():
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    return json.loads(out)["run"]["id"]


@pytest.mark.timeout(120)
def test_a_resume_after_a_cut_gets_a_result_path_that_does_not_exist(
    rook_workspace, rook_cli, probe_dir
):
    # the resumed scenario run's first call reuses the interrupted call's path
    wrapper = rook_workspace.script("dir.sh", LEAVES_A_DIRECTORY)
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "done"}]})
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.exit_code == 0, again.stderr + again.stdout
    assert again.statuses() == {"s": "passed"}


LINKS_ITS_FOLDERS = r"""
#!/bin/bash
# the first call puts links where its result folder and its workspace were, and is cut off
if [ ! -e "$PROBE_DIR/first" ]; then
  touch "$PROBE_DIR/first"
  mkdir -p "$PROBE_DIR/elsewhere"; touch "$PROBE_DIR/elsewhere/keep"
  rm -rf "$(dirname "$RUHROH_RESULT_PATH")" "$RUHROH_WORKSPACE"
  ln -s "$PROBE_DIR/elsewhere" "$(dirname "$RUHROH_RESULT_PATH")"
  ln -s "$PROBE_DIR/elsewhere" "$RUHROH_WORKSPACE"
  touch "$PROBE_DIR/blocking"
  sleep 600
fi
echo '{"status":"goal_satisfied","output":"done"}'
"""


@pytest.mark.timeout(120)
def test_a_resume_after_a_wrapper_put_links_in_place_of_its_folders_starts_afresh(
    rook_workspace, rook_cli, probe_dir
):
    # the resume failed the scenario run with "transport 'ruhroh' ... raised OSError:
    # Cannot call rmtree on a symbolic link"; the links are removed, never followed
    wrapper = rook_workspace.script("links.sh", LINKS_ITS_FOLDERS)
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "done"}]})
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    assert (probe_dir / "elsewhere" / "keep").exists()


CUT_IN_ITERATION_TWO = r"""
#!/bin/bash
# iteration 1 answers continue; iteration 2 prints a line, the start of its final
# line and a secret on stderr, then blocks (until PROBE_DIR/fast-now)
if [ "$RUHROH_ITERATION" = 1 ]; then
  echo "thinking"
  echo "step one done" >&2
  echo '{"status":"continue","output":"half way"}'
  exit 0
fi
if [ ! -e "$PROBE_DIR/fast-now" ]; then
  printf 'partial line\n{"status":"goal_sat'
  echo "warming up with $MY_TOKEN" >&2
  touch "$PROBE_DIR/blocking"
  sleep 600
fi
echo '{"status":"goal_satisfied","output":"done"}'
"""


@pytest.mark.timeout(120)
def test_a_wrapper_cut_off_keeps_what_its_iterations_had_printed(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    """SIGINT while the second iteration of a turn blocks: the interrupted hook's
    record had empty stdout and stderr; it holds each iteration's output as a
    finished turn's does (labelled), the cut one's as far as it was read,
    redacted, and the resume takes no part of it for an answer."""
    monkeypatch.setenv("MY_TOKEN", "s3cr3t-t0ken-value")
    wrapper = rook_workspace.script("cut.sh", CUT_IN_ITERATION_TWO)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=3,
                   env=[{"variable": "MY_TOKEN", "purpose": "the agent's token"}])
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "done"}]})
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
    (hook,) = attempt["hooks"]
    assert hook["status"] == "interrupted", hook
    assert hook["stdout"] == (
        '--- iteration 1 ---\nthinking\n{"status":"continue","output":"half way"}\n\n'
        '--- iteration 2 ---\npartial line\n{"status":"goal_sat'
    ), hook
    assert hook["stderr"] == (
        "--- iteration 1 ---\nstep one done\n\n"
        "--- iteration 2 ---\nwarming up with [redacted:MY_TOKEN]\n"
    ), hook
    assert "s3cr3t-t0ken-value" not in rook_workspace.all_run_text(run_id)
    (probe_dir / "fast-now").touch()
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    assert scenario_of(again)["turns"][0]["output"] == "done"

CUT_AFTER_AN_ARTIFACT = r"""
#!/bin/bash
# iteration 1 writes and reports an artifact and answers continue; iteration 2 blocks
if [ "$RUHROH_ITERATION" = 1 ]; then
  echo "the plan, with $MY_TOKEN" > plan.md
  echo '{"status":"continue","artifacts":{"plan":"plan.md"}}'
  exit 0
fi
if [ ! -e "$PROBE_DIR/fast-now" ]; then
  touch "$PROBE_DIR/blocking"
  sleep 600
fi
echo '{"status":"goal_satisfied","output":"done"}'
"""


@pytest.mark.timeout(120)
def test_a_turn_cut_off_keeps_the_artifacts_its_finished_iterations_reported(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    """SIGINT in iteration 2: the interrupted hook's record kept what the iterations
    printed but not the artifact iteration 1 reported, and the resume, which starts
    the scenario run afresh (cut in its first turn), empties the workspace that held
    it: the file was lost. The record keeps it now, read and redacted."""
    monkeypatch.setenv("MY_TOKEN", "s3cr3t-t0ken-value")
    wrapper = rook_workspace.script("cut-art.sh", CUT_AFTER_AN_ARTIFACT)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=3,
                   env=[{"variable": "MY_TOKEN", "purpose": "the agent's token"}])
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "done"}]})
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    (probe_dir / "fast-now").touch()
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
    (hook,) = attempt["hooks"]
    assert hook["status"] == "interrupted", hook
    plan = (hook.get("data") or {}).get("artifacts", {}).get("plan")
    assert plan and plan["content"] == "the plan, with [redacted:MY_TOKEN]\n", hook
    assert "s3cr3t-t0ken-value" not in rook_workspace.all_run_text(run_id)


CUT_IN_TURN_TWO = r"""
#!/bin/bash
# the first call of turn 2 is cut off; each call adds its message to a file in the workspace
if [ "$RUHROH_MESSAGE" = b ] && [ ! -e "$PROBE_DIR/first" ]; then
  touch "$PROBE_DIR/first" "$PROBE_DIR/blocking"
  sleep 600
fi
echo "$RUHROH_ITERATION $RUHROH_MESSAGE $RUHROH_SESSION_HANDLE" >> "$PROBE_DIR/log"
echo "$RUHROH_MESSAGE" >> notes
echo "{\"status\":\"continue\",\"output\":\"notes: $(tr '\n' , < notes)\"}"
"""


@pytest.mark.timeout(120)
def test_a_resume_cut_in_a_later_turn_continues_the_scenario_runs_conversation(
    rook_workspace, rook_cli, probe_dir
):
    # the engine sends turn 1 once: the resumed turn 2 finds the agent workspace as turn 1
    # left it, goes on counting iterations (and the budget), and Rook's made-up handle
    # still shows nothing about multi_turn
    wrapper = rook_workspace.script("cut2.sh", CUT_IN_TURN_TWO)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=3)
    rook_workspace.scenario(
        {"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "notes: a,b,"}]}
    )
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    log = (probe_dir / "log").read_text().split("\n")[:-1]
    handle = log[0].split()[2]
    assert log == [f"1 a {handle}", f"2 b {handle}", f"3 continue {handle}"]
    assert scenario_of(again)["turns"][1]["output"] == "notes: a,b,continue,"
    assert "multi_turn" not in again.report["run"]["capabilities"]["observed"]


CUT_IN_TURN_TWO_WITH_A_RESULT_FILE = r"""
#!/bin/bash
# answers in its result file; the first call of turn 2 leaves a directory at its
# result path and is cut off there
if [ "$RUHROH_MESSAGE" = b ] && [ ! -e "$PROBE_DIR/first" ]; then
  touch "$PROBE_DIR/first"
  mkdir -p "$RUHROH_RESULT_PATH/sub"
  touch "$PROBE_DIR/blocking"
  sleep 600
fi
echo "{\"status\":\"continue\",\"output\":\"answer to $RUHROH_MESSAGE\"}" > "$RUHROH_RESULT_PATH"
"""


@pytest.mark.timeout(120)
def test_a_resume_cut_in_a_later_turn_keeps_the_result_files_of_the_turns_before(
    rook_workspace, rook_cli, probe_dir
):
    # a resume going on at turn 2 emptied the results folder, so turn 1's result file,
    # kept as every call's is (ruhroh.md), was gone; only what the cut call left goes
    wrapper = rook_workspace.script("cut-file.sh", CUT_IN_TURN_TWO_WITH_A_RESULT_FILE)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2)
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "b"}]})
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    results = Path(again.report["run"]["dir"]) / "state" / "s.1" / "ruhroh" / "results"
    kept = {p.name: json.loads(p.read_text())["output"] for p in results.iterdir()}
    assert kept == {
        "turn-1-iteration-1-attempt-1.json": "answer to a",
        "turn-2-iteration-2-attempt-1.json": "answer to b",
    }, kept


CUT_IN_TURN_TWO_WITH_HANDLES = r"""
#!/bin/bash
# reports a handle of its own on every call; the first call of turn 2 is cut off
if [ "$RUHROH_MESSAGE" = b ] && [ ! -e "$PROBE_DIR/first" ]; then
  touch "$PROBE_DIR/first" "$PROBE_DIR/blocking"
  sleep 600
fi
echo "$RUHROH_MESSAGE $RUHROH_SESSION_HANDLE ${ROOK_CONVERSATION:-none}" >> "$PROBE_DIR/log"
echo "{\"status\":\"continue\",\"sessionHandle\":\"agent-$RUHROH_ITERATION\"}"
"""


@pytest.mark.timeout(120)
def test_a_resume_cut_in_a_later_turn_sends_the_handle_the_wrapper_last_reported(
    rook_workspace, rook_cli, probe_dir
):
    # the resumed turn 2 gets the handle turn 1 reported, never one Rook makes up
    wrapper = rook_workspace.script("cut2h.sh", CUT_IN_TURN_TWO_WITH_HANDLES)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2)
    rook_workspace.scenario(
        {"id": "s", "turns": ["a", "b"], "criteria": [{"status": "continue"}]}
    )
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    log = (probe_dir / "log").read_text().split("\n")[:-1]
    assert log[1:] == ["b agent-1 agent-1"], log
    assert [t["conversation"] for t in scenario_of(again)["turns"]] == ["agent-1", "agent-2"]


CUT_IN_TURN_TWO_WITH_SEEDS = r"""
#!/bin/bash
# logs the sample seed of every call; the first call of turn 2 is cut off
if [ "$RUHROH_MESSAGE" = b ] && [ ! -e "$PROBE_DIR/first" ]; then
  touch "$PROBE_DIR/first" "$PROBE_DIR/blocking"
  sleep 600
fi
echo "$RUHROH_MESSAGE $RUHROH_SAMPLE_SEED" >> "$PROBE_DIR/log"
echo '{"status":"continue"}'
"""


@pytest.mark.timeout(120)
def test_a_resume_with_another_run_seed_keeps_the_conversations_sample_seed(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    # the resumed turn 2 goes on with the conversation of turn 1: its sample seed is
    # the one turn 1 was given, whatever RUHROH_RUN_SEED the resume has
    wrapper = rook_workspace.script("cut2s.sh", CUT_IN_TURN_TWO_WITH_SEEDS)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2)
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"status": "continue"}]})
    monkeypatch.setenv("RUHROH_RUN_SEED", "1")
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    monkeypatch.setenv("RUHROH_RUN_SEED", "2")
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    log = [line.split() for line in (probe_dir / "log").read_text().splitlines()]
    assert [m for m, _ in log] == ["a", "b"]
    assert log[1][1] == log[0][1], log



@pytest.mark.timeout(120)
def test_a_resume_with_another_run_seed_says_so_before_it_runs(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    # the run's samples were seeded from RUHROH_RUN_SEED=1; resumed with 2, the
    # manifest's runSeed became "2" (the fallbacks of the invocation that recorded
    # the latest result, as documented), and so did the seeds of the scenario runs
    # the resume started afresh, without a word: the run could no longer be
    # reproduced from its manifest. The resume now warns, naming both seeds.
    wrapper = rook_workspace.script("cut2s.sh", CUT_IN_TURN_TWO_WITH_SEEDS)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2)
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"status": "continue"}]})
    monkeypatch.setenv("RUHROH_RUN_SEED", "1")
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    monkeypatch.setenv("RUHROH_RUN_SEED", "2")
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    warning = [ln for ln in again.stderr.splitlines() if "RUHROH_RUN_SEED" in ln]
    assert len(warning) == 1, again.stderr
    assert warning[0].startswith(f"rook: warning: run {run_id} began with RUHROH_RUN_SEED=1 "), warning
    assert "this resume has RUHROH_RUN_SEED=2" in warning[0] and "RUHROH_RUN_SEED=1 to" in warning[0]
    manifest = json.loads((Path(again.report["run"]["dir"]) / "ruhroh-run-manifest.json").read_text())
    assert manifest["runSeed"] == "2"  # the latest result's invocation's, as documented
    third = rook_cli("run", "--json", "--run", run_id)  # the same seed as the latest: no word
    assert third.exit_code == 0 and "RUHROH_RUN_SEED" not in third.stderr, third.stderr


@pytest.mark.timeout(120)
def test_a_resume_with_the_run_seed_is_not_warned_of_when_a_secret_shows_in_it(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    # the manifest records RUHROH_RUN_SEED redacted (a PIN of 2026 in a seed of
    # 20261207 is "[redacted:PIN]1207"); the resume compared that with its own seed
    # as it is, so a resume with the very seed the run began with was warned of
    # ("began with RUHROH_RUN_SEED=[redacted:PIN]1207 and this resume has
    # RUHROH_RUN_SEED=[redacted:PIN]1207: ...").
    wrapper = rook_workspace.script("cut2s.sh", CUT_IN_TURN_TWO_WITH_SEEDS)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2,
                   env=[{"variable": "PIN", "purpose": "a pin"}])
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"status": "continue"}]})
    monkeypatch.setenv("PIN", "2026")
    monkeypatch.setenv("RUHROH_RUN_SEED", "20261207")
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    assert "RUHROH_RUN_SEED" not in again.stderr, again.stderr
    manifest = json.loads((Path(again.report["run"]["dir"]) / "ruhroh-run-manifest.json").read_text())
    assert manifest["runSeed"] == "[redacted:PIN]1207", manifest


@pytest.mark.timeout(120)
def test_a_resume_whose_profile_sets_another_run_seed_is_told_to_set_it_there(
    rook_workspace, rook_cli, probe_dir, monkeypatch
):
    # the seed came from the profile's hook_env (5, then edited to 6): the warning
    # said "resume with RUHROH_RUN_SEED=5 to keep the run's seed", but hook_env wins
    # over Rook's environment, so a resume with RUHROH_RUN_SEED=5 set still ran with 6
    # (and was warned again). It names the profile's hook_env now.
    monkeypatch.delenv("RUHROH_RUN_SEED", raising=False)
    wrapper = rook_workspace.script("cut2s.sh", CUT_IN_TURN_TWO_WITH_SEEDS)
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2,
                   hook_env={"RUHROH_RUN_SEED": "5"})
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"status": "continue"}]})
    run_id = _run_cut_while_blocking(rook_workspace, probe_dir)
    profile = ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2,
                             hook_env={"RUHROH_RUN_SEED": "6"})
    monkeypatch.setenv("RUHROH_RUN_SEED", "5")  # as the warning said: no help
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses() == {"s": "passed"}, again.stderr + again.stdout
    [warning] = [ln for ln in again.stderr.splitlines() if "RUHROH_RUN_SEED" in ln]
    assert "began with RUHROH_RUN_SEED=5 and this resume has RUHROH_RUN_SEED=6" in warning
    assert warning.endswith(f"set RUHROH_RUN_SEED back to 5 under hook_env in {profile} "
                            "to keep the run's seed"), warning


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (PID 1 may never reap here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_secrets_never_reach_the_record(rook_workspace, rook_cli, probe_dir, monkeypatch):
    monkeypatch.setenv("AGENT_TOKEN", "tok-7f3a9c")
    ruhroh_profile(
        rook_workspace,
        PY,
        hook_env={"WRAPPER_MODE": "secret"},
        env=[{"variable": "AGENT_TOKEN", "purpose": "the agent's API token"}],
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "token"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert "tok-7f3a9c" not in r.stdout + r.stderr
    run_id = r.report["run"]["id"]
    assert "tok-7f3a9c" not in rook_workspace.all_run_text(run_id)
    assert "[redacted:AGENT_TOKEN]" in scenario_of(r)["turns"][0]["output"]


@pytest.mark.parametrize("lang", sorted(WRAPPERS))
def test_result_files_are_redacted_in_the_run_directory(
    lang, rook_workspace, rook_cli, probe_dir, monkeypatch
):
    secret = 'tok-"7f3a9c"/x'  # with characters JSON escapes
    monkeypatch.setenv("AGENT_TOKEN", secret)
    ruhroh_profile(
        rook_workspace,
        WRAPPERS[lang],
        hook_env={"WRAPPER_MODE": "secret", "WRAPPER_ECHO_SECRET": "AGENT_TOKEN"},
        env=[{"variable": "AGENT_TOKEN", "purpose": "the agent's API token"}],
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    state = rook_workspace.run_dir(r.report["run"]["id"]) / "state" / "s.1" / "ruhroh"
    [result_file] = (state / "results").glob("*.json")
    text = result_file.read_text()
    assert "7f3a9c" not in text
    assert "[redacted:AGENT_TOKEN]" in json.loads(text)["summary" if lang == "bash" else "output"]
    for f in state.parent.rglob("*"):
        if f.is_file() and "workspace" not in f.relative_to(state).parts[:1]:
            assert "7f3a9c" not in f.read_text(errors="replace"), f


@pytest.mark.parametrize("lang", ["bash", "python", "node"])
def test_a_result_file_written_after_the_wrapper_exited_keeps_no_secret(
    lang, rook_workspace, rook_cli, monkeypatch
):
    # a wrapper that exits early and leaves a job behind writing its result file
    # (read before, so never redacted): the secret stayed in the run directory
    monkeypatch.setenv("AGENT_TOKEN", "tok-7f3a9c-late")
    late = {
        "bash": """
            #!/bin/bash
            ( while :; do printf '{"status":"goal_satisfied","summary":"%s"}' "$AGENT_TOKEN" \\
                > "$RUHROH_RESULT_PATH"; sleep 0.05; done ) > /dev/null 2>&1 &
            echo '{"status":"goal_satisfied","output":"early"}'
            """,
        "python": """
            #!/usr/bin/env python3
            import json, os, subprocess
            loop = 'while :; do printf %s "$BODY" > "$RUHROH_RESULT_PATH"; sleep 0.05; done'
            body = json.dumps({"status": "goal_satisfied", "summary": os.environ["AGENT_TOKEN"]})
            subprocess.Popen(["bash", "-c", loop], env={**os.environ, "BODY": body},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
            print(json.dumps({"status": "goal_satisfied", "output": "early"}))
            """,
        "node": """
            #!/usr/bin/env node
            const { spawn } = require("child_process");
            const loop = 'while :; do printf %s "$BODY" > "$RUHROH_RESULT_PATH"; sleep 0.05; done';
            const body = JSON.stringify({status: "goal_satisfied", summary: process.env.AGENT_TOKEN});
            spawn("bash", ["-c", loop], {env: {...process.env, BODY: body}, stdio: "ignore",
                                         detached: true}).unref();
            console.log(JSON.stringify({status: "goal_satisfied", output: "early"}));
            """,
    }
    wrapper = rook_workspace.script(f"late.{ {'python': 'py', 'node': 'cjs'}.get(lang, 'sh')}",
                                    late[lang])
    slow = rook_workspace.script("slow.sh", "#!/bin/bash\nsleep 1\n")
    ruhroh_profile(rook_workspace, str(wrapper),
                   env=[{"variable": "AGENT_TOKEN", "purpose": "the agent's API token"}])
    profile = rook_workspace.agent_dir / "profiles" / "rr.yaml"
    data = yaml.safe_load(profile.read_text())
    data["hooks"]["close"] = str(slow)  # the job writes on for a while: until the run ends
    profile.write_text(yaml.safe_dump(data))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    state = rook_workspace.run_dir(r.report["run"]["id"]) / "state"
    for f in state.rglob("*"):
        if f.is_file():
            assert "7f3a9c" not in f.read_text(errors="replace"), f


LATE_JUDGE = r"""
    #!/bin/bash
    ( sleep 0.3; while :; do printf '{"status":"goal_satisfied","summary":"%s"}' "$JUDGE_TOKEN" \
        > "$RUHROH_RESULT_PATH"; sleep 0.05; done ) > /dev/null 2>&1 &
    echo '{"status":"goal_satisfied","output":"{\"pass\": true, \"reason\": \"early\"}"}'
    """
"""A Ruhroh judge wrapper that answers at once (a pass) and leaves a job writing its
profile's secret into its result file after Rook read it."""


def test_a_judge_wrappers_result_file_written_after_it_exited_keeps_no_secret(
    rook_workspace, rook_cli, monkeypatch
):
    # the judge profile is a Ruhroh wrapper whose job writes on after it exited: its
    # result files are redacted again once the run's leftovers are killed, as an agent's are
    monkeypatch.setenv("JUDGE_TOKEN", "tok-7f3a9c-judge")
    wrapper = rook_workspace.script("late-judge.sh", LATE_JUDGE)
    agent = rook_workspace.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "hi"}'
        sleep 1   # the job writes on for a while: until the run ends
        exit 0
        """)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": str(agent), "close": str(agent)}})
    rook_workspace.profile(
        {"id": "grader", "hooks": {"execute": {"ruhroh": str(wrapper)}},
         "env": [{"variable": "JUDGE_TOKEN", "purpose": "the judge's token"}]},
        active=False,
    )
    for n in (1, 2):  # the second one's hooks run while the first one's judge job writes
        rook_workspace.scenario({"id": f"s{n}", "goal": "g", "criteria": [{"rubric": "hi"}]})
    r = rook_cli("run", "--json", "-j", "1", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stderr + r.stdout
    run_dir = rook_workspace.run_dir(r.report["run"]["id"])
    assert list(run_dir.rglob("results/*.json")), sorted(map(str, run_dir.rglob("*")))
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert "7f3a9c" not in f.read_text(errors="replace"), f


CUT_ARTIFACT = r"""
#!/usr/bin/env python3
import json, os
# the artifact's cap (40 bytes) falls inside the secret
open("notes.txt", "w").write("n" * 30 + os.environ["AGENT_TOKEN"] + " and more")
json.dump({"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied", "output": "done",
           "artifacts": {"notes": "notes.txt"}}, open(os.environ["RUHROH_RESULT_PATH"], "w"))
print(json.dumps({"status": "goal_satisfied"}))
"""


def test_an_artifact_cut_at_its_cap_shows_no_piece_of_a_secret(rook_workspace, rook_cli, monkeypatch):
    # the cap keeps the artifact's first 40 bytes, which end with the secret's first 10
    monkeypatch.setenv("AGENT_TOKEN", "tok-7f3a9c-5e1d")
    wrapper = rook_workspace.script("cut.py", CUT_ARTIFACT)
    ruhroh_profile(rook_workspace, str(wrapper), artifact_max_bytes=40,
                   env=[{"variable": "AGENT_TOKEN", "purpose": "the agent's API token"}])
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    art = scenario_of(r)["turns"][0]["evidence"]["artifacts"]["notes"]
    assert art["truncated"] is True and art["size"] == 30 + 15 + 9
    assert art["content"] == "n" * 30 + "[redacted:AGENT_TOKEN]"
    text = rook_workspace.all_run_text(r.report["run"]["id"]) + r.stdout + r.stderr
    assert "7f3a" not in text


HUGE_CAPS = r"""
#!/usr/bin/env python3
import json, os
open("notes.txt", "w").write("the notes")
json.dump({"status": "goal_satisfied", "output": "done", "artifacts": {"notes": "notes.txt"}},
          open(os.environ["RUHROH_RESULT_PATH"], "w"))
"""


@pytest.mark.parametrize(
    "settings",
    [
        {"artifact_max_bytes": 2**40},  # a terabyte: "keep them whole"
        {"artifact_max_bytes": 10**20},
        {"limits": {"stdout_bytes": 2**40}},  # also the result file's cap
    ],
)
def test_a_cap_far_above_the_files_reads_them_whole(settings, rook_workspace, rook_cli):
    # a cap is the most Rook reads, never a buffer of that size made up front
    wrapper = rook_workspace.script("caps.py", HUGE_CAPS)
    entry = {k: v for k, v in settings.items() if k != "limits"}
    profile = ruhroh_profile(rook_workspace, str(wrapper), **entry)
    if "limits" in settings:
        data = yaml.safe_load(profile.read_text())
        profile.write_text(yaml.safe_dump({**data, "limits": settings["limits"]}))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "done"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    art = scenario_of(r)["turns"][0]["evidence"]["artifacts"]["notes"]
    assert art["content"] == "the notes" and "truncated" not in art


@pytest.mark.parametrize(
    "mode,message",
    [
        ("broken_secret_file:20", "is not JSON"),
        ("broken_secret_file:176", "is not JSON"),  # the secret across the 200-character cut
        ("secret_status", "unknown completion status"),
        ("secret_version", "Rook reads"),
    ],
)
def test_a_diagnosis_quoting_the_wrapper_shows_no_secret(
    mode, message, rook_workspace, rook_cli, probe_dir, monkeypatch
):
    # a diagnosis quotes what the wrapper wrote: neither the quoting (of a secret
    # holding " and \\) nor a cut may let any piece of a secret through
    monkeypatch.setenv("AGENT_TOKEN", 'tok-"7f3a9c"\\x')
    ruhroh_profile(
        rook_workspace,
        PY,
        hook_env={"WRAPPER_MODE": mode},
        env=[{"variable": "AGENT_TOKEN", "purpose": "the agent's API token"}],
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    s = scenario_of(r)
    assert s["status"] == "error" and message in s["reason"], s["reason"]
    assert "7f3a9c" not in r.stdout + r.stderr
    assert "7f3a9c" not in rook_workspace.all_run_text(r.report["run"]["id"])


def test_workspace_only_cannot_run_multi_turn(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, BASH, continuity="workspace_only")
    rook_workspace.scenario({"id": "one", "goal": "g", "criteria": [{"contains": "reply"}]})
    rook_workspace.scenario({"id": "two", "turns": ["a", "b"], "criteria": [{"contains": "b"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "passed", "two": "not_runnable"}
    assert "workspace_only" in scenario_of(r, "two")["reason"]
    assert scenario_of(r, "one")["turns"][0]["evidence"]["continuity"] == "workspace_only"
    assert [c["RUHROH_MESSAGE"] for c in calls(probe_dir)] == ["g"]


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"ruhroh": {"command": "./missing.sh"}}, "not found"),
        # a folder was "not found; tried ..." though it exists
        ({"ruhroh": {"command": "./scripts"}}, "ruhroh command './scripts' is a directory ("),
        # a device (or a FIFO) was "not found; tried ..." too
        ({"ruhroh": {"command": "/dev/null"}}, "ruhroh command '/dev/null' is not a regular file"),
        ({"ruhroh": {"command": "no-such-program-xyz"}}, "not on PATH"),
        ({"ruhroh": {"command": BASH, "max_iterations": 0}}, "hooks.execute.ruhroh.max_iterations"),
        ({"ruhroh": {"command": BASH, "bogus": 1}}, "hooks.execute.ruhroh.bogus"),
        # a variable in the program's path: no shell expands it ("not found; tried .../$HOME/w.sh")
        ({"ruhroh": "$HOME/w.sh"}, "not run through a shell, so $HOME is not expanded"),
        ({"ruhroh": "${AGENT_BIN} --fast"}, "not run through a shell, so $AGENT_BIN is not expanded"),
        # the entry's keys, written inside ruhroh: said only "Unknown field; expected one of ..."
        (
            {"ruhroh": {"command": BASH, "timeout_seconds": 900}},
            "hooks.execute.ruhroh.timeout_seconds: belongs on the hook entry, beside ruhroh:",
        ),
        (
            {"connector": {"name": "ruhroh-command", "command": BASH, "delay_seconds": 5}},
            "delay_seconds: belongs on the hook entry, beside connector:",
        ),
        ({"ruhroh": {"command": BASH, "continuity": "telepathy"}}, "continuity"),
        ({"ruhroh": {"max_iterations": 2}}, "hooks.execute.ruhroh.command"),
        # a home of a user who does not exist: nothing to expand, so named as written
        ({"ruhroh": "~no-such-user-rk/w.sh"}, "ruhroh command '~no-such-user-rk/w.sh' not found"),
        ({"ruhroh": {"command": BASH, "cwd": "~no-such-user-rk"}}, "ruhroh cwd '~no-such-user-rk'"),
        (
            {"ruhroh": {"command": BASH, "workspace_template": "~no-such-user-rk/t"}},
            "workspace_template '~no-such-user-rk/t' is not a directory",
        ),
    ],
)
def test_configuration_errors_stop_before_anything_runs(
    entry, message, rook_workspace, rook_cli, probe_dir
):
    rook_workspace.profile({"id": "rr", "hooks": {"execute": entry}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert calls(probe_dir) == []


@pytest.mark.parametrize(
    "scenario,field",
    [
        ({"goal": "x" * 140_000}, "turn 1 (goal)"),
        ({"turns": ["a", "y" * 140_000]}, "turn 2 (turns[1])"),
        ({"goal": "g", "multi_turn": True, "setup_messages": ["z" * 140_000]},
         "turn 1 (setup_messages[0])"),
    ],
)
def test_a_turn_too_long_for_ruhroh_message_is_refused_before_anything_runs(
    scenario, field, rook_workspace, rook_cli, probe_dir
):
    """A wrapper gets each turn's text in RUHROH_MESSAGE: a turn longer than one
    environment variable can carry (128 KiB on Linux) could never be sent, so the
    run is refused (exit 2) naming the scenario file and the turn, and nothing runs."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the limit of one environment variable is Linux's")
    ruhroh_profile(rook_workspace, BASH)
    path = rook_workspace.scenario({"id": "long", **scenario, "criteria": [{"contains": "x"}]})
    rook_workspace.scenario({"id": "short", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{path}: {field} holds " in r.stderr and "RUHROH_MESSAGE" in r.stderr
    assert "Traceback" not in r.stderr
    assert calls(probe_dir) == []
    assert not rook_workspace.runs_dir.exists() or not any(rook_workspace.runs_dir.iterdir())
    # the other scenario runs on its own
    assert rook_cli("run", "--json", "--only", "short").exit_code == 0


def test_a_resume_that_sends_no_turn_is_not_refused_for_a_turn_too_long(
    rook_workspace, rook_cli, probe_dir
):
    """A turn too long for RUHROH_MESSAGE refuses a run that would send it; a resume
    whose phases send none (--phases collect,judge, after the turns were sent) has
    nothing to refuse: it collects and judges what was recorded."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the limit of one environment variable is Linux's")
    ruhroh_profile(rook_workspace, BASH)
    path = rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr + first.stdout
    assert len(calls(probe_dir)) == 1
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "goal": "x" * 140_000}))  # now one too long
    again = rook_cli("run", "--json", "--run", first.report["run"]["id"], "--phases", "collect,judge")
    assert again.exit_code == 0, again.stderr[-2000:]
    assert again.statuses() == {"s": "passed"}
    assert len(calls(probe_dir)) == 1  # no turn sent again
    # a new run would send it: refused
    assert rook_cli("run", "--json").exit_code == 2


def test_a_plain_resume_is_refused_only_for_a_turn_too_long_it_would_still_send(
    rook_workspace, rook_cli, probe_dir
):
    """A plain rook run --run ID (every phase) was refused for a turn too long for
    RUHROH_MESSAGE of a scenario whose turns were sent already (its file edited
    since): the scenario only has collect and judge left, nothing to refuse. A
    scenario whose turn is still to be sent is refused as before, by name alone."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the limit of one environment variable is Linux's")
    ruhroh_profile(rook_workspace, BASH)
    paths = {
        sid: rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "reply"}]})
        for sid in ("s", "t")
    }
    first = rook_cli("run", "--json", "--phases", "prepare")  # plans s and t
    assert first.exit_code == 0, first.stderr + first.stdout
    run_id = first.report["run"]["id"]
    sent = rook_cli("run", "--json", "--run", run_id, "--only", "s",
                    "--phases", "prepare,open,execute,close")
    assert sent.exit_code == 0, sent.stderr + sent.stdout
    assert len(calls(probe_dir)) == 1
    for path in paths.values():  # both now too long; t's turn is still to be sent
        data = yaml.safe_load(path.read_text())
        path.write_text(yaml.safe_dump({**data, "goal": "x" * 140_000}))
    refused = rook_cli("run", "--json", "--run", run_id)
    assert refused.exit_code == 2, refused.stderr[-2000:]
    assert str(paths["t"]) in refused.stderr and str(paths["s"]) not in refused.stderr, refused.stderr
    assert len(calls(probe_dir)) == 1  # nothing run
    data = yaml.safe_load(paths["t"].read_text())
    paths["t"].write_text(yaml.safe_dump({**data, "goal": "g"}))
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.exit_code == 0, again.stderr[-2000:]
    assert again.statuses() == {"s": "passed", "t": "passed"}
    assert len(calls(probe_dir)) == 2  # t's turn only: s's was sent before


def test_a_turn_holding_a_nul_is_refused_before_anything_runs(rook_workspace, rook_cli, probe_dir):
    """No environment variable can carry a NUL character, so RUHROH_MESSAGE could never
    carry such a turn: refused with exit 2 naming the file and turn, nothing run."""
    ruhroh_profile(rook_workspace, BASH)
    path = rook_workspace.scenario(
        {"id": "nul", "turns": ["a", "b\0c"], "criteria": [{"contains": "x"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{path}: turn 2 (turns[1]) holds a NUL character" in r.stderr, r.stderr
    assert "RUHROH_MESSAGE" in r.stderr and "Traceback" not in r.stderr
    assert calls(probe_dir) == []


def test_a_wrapper_named_bare_is_found_on_the_path_the_hooks_get(
    rook_workspace, rook_cli, tmp_path
):
    """A bare command name is looked up on the PATH the wrapper will run with (the
    profile's hook_env PATH), as the script transport looks up its interpreters,
    not only on Rook's own."""
    bin_dir = tmp_path / "agent-bin"
    bin_dir.mkdir()
    shutil.copy(BASH, bin_dir / "acme-ruhroh-wrapper")
    (bin_dir / "acme-ruhroh-wrapper").chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"
    ruhroh_profile(rook_workspace, "acme-ruhroh-wrapper", hook_env={"PATH": path})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply 1"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.statuses() == {"s": "passed"}
    # on neither the hooks' PATH nor Rook's: not installed
    ruhroh_profile(rook_workspace, "acme-ruhroh-wrapper", hook_env={"PATH": "/nonexistent"})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "ruhroh command 'acme-ruhroh-wrapper' is not installed" in r.stderr


def test_a_wrapper_on_rooks_own_path_runs_when_inherit_env_leaves_path_out(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """A bare name not on the hooks' PATH (inherit_env leaves PATH out) but on Rook's
    is found there and run by that path, as before hook_env's PATH was honoured."""
    bin_dir = tmp_path / "agent-bin"
    bin_dir.mkdir()
    shutil.copy(BASH, bin_dir / "acme-ruhroh-wrapper")
    (bin_dir / "acme-ruhroh-wrapper").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    rook_workspace.profile(
        {"id": "rr", "hooks": {"execute": {"ruhroh": "acme-ruhroh-wrapper"}}, "inherit_env": ["HOME"]}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply 1"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.statuses() == {"s": "passed"}


def test_status_criterion_is_validated(rook_workspace, rook_cli):
    ruhroh_profile(rook_workspace, BASH)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfed"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2 and "goal_satisfed" in r.stderr


@pytest.mark.parametrize("wanted", ["runtime_failure", ["goal_satisfied", "infra_failure"]])
def test_a_status_criterion_that_can_never_be_judged_is_refused(wanted, rook_workspace, rook_cli,
                                                                probe_dir):
    """runtime_failure fails the hook (the scenario is error) and infra_failure is an
    infrastructure error: neither is ever a status a criterion judges, so
    `status: runtime_failure` was accepted and the wrapper answering it gave ERROR,
    the criterion never judged."""
    ruhroh_profile(rook_workspace, BASH)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": wanted}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    bad = "runtime_failure" if wanted == "runtime_failure" else "infra_failure"
    assert "s.yaml" in r.stderr and "criteria.0.status" in r.stderr, r.stderr
    assert f"{bad} is never judged" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not list(rook_workspace.runs_dir.iterdir())


def test_status_is_unverifiable_without_ruhroh(rook_workspace, rook_cli):
    rook_workspace.script(
        "plain.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "hi"}'
        exit 0
    """,
    )
    rook_workspace.profile({"id": "plain", "hooks": {"execute": "scripts/plain.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "unverifiable"}


@pytest.mark.parametrize("printed, expected", [
    ("ok", "unverifiable"),  # an API's own status field: no completion status at all
    ("goal_satisfied", "passed"),  # a hook script may report a Ruhroh completion status
    ("cannot_satisfy", "failed"),
])
def test_a_hook_status_that_is_no_completion_status_is_unverifiable(
    printed, expected, rook_workspace, rook_cli
):
    """A script hook whose answer held its API's own "status": "ok" made
    `status: goal_satisfied` fail ("status is 'ok'"), as if the agent had given another
    completion status; no completion status was observed, so it is unverifiable, and the
    reason names what the field held. A completion status a hook prints is judged."""
    rook_workspace.script(
        "plain.sh",
        f"""
        #!/bin/bash
        [ "$1" = execute ] && echo '{{"output": "hi", "status": "{printed}"}}'
        exit 0
    """,
    )
    rook_workspace.profile({"id": "plain", "hooks": {"execute": "scripts/plain.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": expected}, r.stdout + r.stderr
    if expected == "unverifiable":
        reason = r.report["scenarios"][0]["criteria"][0]["reason"]
        assert "'ok'" in reason and "no completion status" in reason, reason


@pytest.mark.parametrize("printed, shown", [("200", "200"), ("true", "true"),
                                           ('{"code": "done"}', '{"code": "done"}')])
def test_a_hook_status_that_is_no_text_is_named_as_no_completion_status(
    printed, shown, rook_workspace, rook_cli
):
    """A script hook whose answer held "status": 200 (an HTTP code) made
    `status: goal_satisfied` unverifiable saying "no completion status was
    recorded (the agent is not reached through a Ruhroh wrapper or connector)",
    as if the field were not there: the reason names what it held, as for "ok"."""
    rook_workspace.script(
        "plain.sh",
        f"""
        #!/bin/bash
        [ "$1" = execute ] && echo '{{"output": "hi", "status": {printed}}}'
        exit 0
    """,
    )
    rook_workspace.profile({"id": "plain", "hooks": {"execute": "scripts/plain.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "unverifiable"}, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["criteria"][0]["reason"]
    assert f"status field holds {shown}," in reason and "no completion status" in reason, reason


def test_concurrent_scenarios_get_their_own_sessions(rook_workspace, rook_cli, probe_dir):
    ruhroh_profile(rook_workspace, BASH, hook_env={"WRAPPER_PLAN": "continue,goal_satisfied"})
    for i in range(4):
        rook_workspace.scenario(
            {"id": f"s{i}", "turns": [f"s{i} one", f"s{i} two"], "criteria": [{"contains": "(2 m"}]}
        )
    r = rook_cli("run", "--json", "--concurrency", "4")
    assert r.exit_code == 0, r.stderr + r.stdout
    seen = calls(probe_dir)
    by_scenario: dict[str, set] = {}
    for c in seen:
        assert c["RUHROH_MESSAGE"].startswith(c["RUHROH_SCENARIO_ID"])
        by_scenario.setdefault(c["RUHROH_SCENARIO_ID"], set()).add(
            (c["RUHROH_WORKSPACE"], c["RUHROH_SESSION_HANDLE"])
        )
    assert all(len(v) == 1 for v in by_scenario.values())
    assert len({next(iter(v)) for v in by_scenario.values()}) == 4


def test_the_handle_from_an_open_hook_reaches_the_wrapper(rook_workspace, rook_cli, probe_dir):
    rook_workspace.script(
        "open.sh",
        """
        #!/bin/bash
        [ "$1" = open ] && echo '{"conversation": "thread-from-open"}'
        exit 0
        """,
    )
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {"open": "scripts/open.sh", "execute": {"ruhroh": BASH}},
            "hook_env": {"WRAPPER_PLAN": "continue,goal_satisfied"},
            "capabilities": {"multi_turn": True},
        }
    )
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "b"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert [c["RUHROH_SESSION_HANDLE"] for c in calls(probe_dir)] == ["thread-from-open"] * 2
    assert r.report["run"]["capabilities"]["observed"]["multi_turn"] is True  # open returned it


# -- a result path that is no regular file -----------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_result_file_that_is_no_regular_file_is_not_read(kind, rook_workspace, rook_cli):
    # a named pipe at RUHROH_RESULT_PATH waits for a writer forever, and a link to
    # /dev/zero never ends: either hung the whole run, past every timeout
    make = {
        "fifo": 'mkfifo "$RUHROH_RESULT_PATH"',
        "device": 'ln -s /dev/zero "$RUHROH_RESULT_PATH"',
    }[kind]
    wrapper = rook_workspace.script(
        "odd-result.sh",
        f"""
        #!/bin/bash
        {make}
        echo '{{"status":"goal_satisfied","output":"done"}}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr + r.stdout
    s = scenario_of(r)
    assert s["status"] == "error"
    assert "is not a regular file" in s["reason"] and "RUHROH_RESULT_PATH" in s["reason"]


@pytest.mark.parametrize("content", ["", " \\n"])
def test_an_empty_result_file_counts_as_not_written(content, rook_workspace, rook_cli):
    # a wrapper that truncates the file first and answers on its final line
    wrapper = rook_workspace.script(
        "empty-result.sh",
        f"""
        #!/bin/bash
        printf '{content}' > "$RUHROH_RESULT_PATH"
        echo '{{"status":"goal_satisfied","output":"from the final line"}}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "final line"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert scenario_of(r)["turns"][0]["evidence"]["iterations"][0]["source"] == "final_line"


def test_an_artifact_path_that_cannot_be_opened_loses_nothing(rook_workspace, rook_cli):
    # "~nobody-here/x" (no such user) raised RuntimeError and a path holding NUL a
    # ValueError: the whole turn was lost (no status, no transcript), as a plugin crash
    wrapper = rook_workspace.script(
        "odd-artifacts.sh",
        r"""
        #!/bin/bash
        echo kept > notes.txt
        echo "working"
        echo '{"status":"goal_satisfied","output":"done","artifacts":{"home":"~no-such-user-rook/x","nul":"a\u0000b","notes":"notes.txt"}}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario(
        {"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}, {"equals": "done"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    ev = scenario_of(r)["turns"][0]["evidence"]
    assert ev["transcript"] == "working"
    arts = ev["artifacts"]
    assert arts["notes"]["content"] == "kept\n"
    # ~user of no such user stays as written, as a shell leaves it: a relative path
    assert arts["home"]["missing"] is True
    assert arts["home"]["path"].endswith("/~no-such-user-rook/x")
    assert arts["nul"]["missing"] is True and "content" not in arts["nul"]


def test_usage_strings_that_are_no_json_number_are_not_counts(rook_workspace, rook_cli):
    # "nan" passed max_tokens ("tokens input nan/50": nan <= 50 is never checked as
    # false), "-inf" or "1_0" became numbers by Python's float(), and NaN made the
    # run record JSON no reader accepts; "12" and "0.1" are still read as numbers
    wrapper = rook_workspace.script(
        "odd-usage.sh",
        """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"done","usage":{"inputTokens":"nan","outputTokens":"12","totalTokens":"1_0","costUsd":"Infinity"}}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario(
        {
            "id": "s",
            "goal": "g",
            "criteria": [
                {"max_tokens": {"input": 50}},
                {"max_tokens": {"total": 50}},
                {"max_cost": 0.5},
                {"max_tokens": {"output": 20}},
            ],
        }
    )
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    # no count, and the call fails naming the field, as a hook's malformed usage does
    assert s["status"] == "error", s
    assert 'usage.inputTokens must be a number, got "nan"' in s["hooks"][0]["diagnosis"]
    run_dir = Path(r.report["run"]["dir"])
    json.loads(
        (run_dir / "scenarios" / "s.1.json").read_text(),
        parse_constant=lambda c: pytest.fail(f"{c} in the record"),
    )


def test_a_negative_cost_never_passes_max_cost(rook_workspace, rook_cli):
    # costUsd -5 passed max_cost 0.50 ("cost $-5.0000"), and over two turns a negative
    # cost hid the other's: -5 + 5.4 = 0.4 passed though one turn alone cost $5.40
    wrapper = rook_workspace.script(
        "negative-cost.sh",
        """
        #!/bin/bash
        cost=5.4; [ "$RUHROH_ITERATION" = 1 ] && cost=-5
        status=goal_satisfied; [ "$RUHROH_MESSAGE" = first ] && status=continue
        echo "{\\"status\\":\\"$status\\",\\"output\\":\\"ok\\",\\"usage\\":{\\"costUsd\\":$cost}}"
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "one", "goal": "g", "criteria": [{"max_cost": 0.5}]})
    rook_workspace.scenario(
        {"id": "two", "turns": ["first", "second"], "criteria": [{"max_cost": 0.5}]}
    )
    r = rook_cli("run", "--json")
    for sid in ("one", "two"):  # a negative cost fails the turn, as for any hook
        s = scenario_of(r, sid)
        assert s["status"] == "error", s
        assert "usage.cost_usd must be a cost >= 0, got -5" in s["reason"], s["reason"]


def test_listed_artifacts_with_one_file_name_are_all_kept(rook_workspace, rook_cli):
    # a list of paths is keyed by file name: a/log.txt was overwritten by b/log.txt
    wrapper = rook_workspace.script(
        "two-logs.sh",
        """
        #!/bin/bash
        mkdir -p a b; echo first > a/log.txt; echo second > b/log.txt; echo t > trace.json
        echo '{"status":"goal_satisfied","output":"ok","artifacts":["a/log.txt","b/log.txt","trace.json"]}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    arts = scenario_of(r)["turns"][0]["evidence"]["artifacts"]
    assert {k: v["content"] for k, v in arts.items()} == {
        "a/log.txt": "first\n",
        "b/log.txt": "second\n",
        "trace.json": "t\n",
    }


@pytest.mark.parametrize("given, shown", [("7", "7"), ("null", "null")])
def test_a_status_that_is_no_string_is_named_in_the_diagnosis(
        rook_workspace, rook_cli, given, shown):
    # the result file's {"status": 7} or {"status": null} (a Python wrapper's None)
    # wins over the final line's goal_satisfied; the diagnosis said "reported no
    # completion status" and quoted that final line, which plainly gives one
    wrapper = rook_workspace.script(
        "status-odd.sh",
        f"""
        #!/bin/bash
        echo '{{"version":"ruhroh_run_agent_result_v1","status":{given}}}' > "$RUHROH_RESULT_PATH"
        echo '{{"status":"goal_satisfied"}}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert f"the wrapper's result file gives status {shown}" in s["reason"], s["reason"]
    assert 'wins over the final line\'s "goal_satisfied"' in s["reason"], s["reason"]


def test_an_infrastructure_error_tried_again_starts_from_an_empty_state_directory(
    rook_workspace, rook_cli, probe_dir
):
    """ROOK_STATE_DIR of the retried attempt is empty, as the first attempt's was; what
    the failed attempt left there is kept aside, named in its infra_attempts entry."""
    ruhroh_profile(
        rook_workspace, PY, hook_env={"WRAPPER_MODE": "full", "WRAPPER_MODE_S": "infra_always"}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "infra_error"}, r.stderr
    run_id = r.report["run"]["id"]
    state = rook_workspace.run_dir(run_id) / "state"
    lost = sorted(p.name for p in (state / "s.1").rglob("*"))
    assert len([n for n in lost if "-attempt-" in n]) == 2  # the wrapper's, tried twice
    first = {p.name: p.read_bytes() for p in (state / "s.1").rglob("*") if p.is_file()}
    for attempt in (1, 2):
        ruhroh_profile(
            rook_workspace, PY, hook_env={"WRAPPER_MODE": "full", "WRAPPER_MODE_S": "infra_always"}
        )
        again = rook_cli("run", "--json", "--run", run_id)
        assert again.statuses() == {"s": "infra_error"}, again.stderr
        # the new attempt saw an empty directory: it left what the first attempt left
        assert sorted(p.name for p in (state / "s.1").rglob("*")) == lost
        record = rook_workspace.record(run_id, "s.1")
        assert record["infra_attempts"][-1]["state"] == f"state/s.1.attempt-{attempt}"
        assert sorted(p.name for p in (state / f"s.1.attempt-{attempt}").rglob("*")) == lost
    aside = state / "s.1.attempt-1"
    assert {p.name: p.read_bytes() for p in aside.rglob("*") if p.is_file()} == first
    assert [a.get("state") for a in record["infra_attempts"]] == [
        "state/s.1.attempt-1",
        "state/s.1.attempt-2",
    ]


def test_a_retry_that_does_not_run_leaves_the_state_directory_as_it_is(
    rook_workspace, rook_cli, probe_dir
):
    """`rook run --run ID --phases collect,judge` runs nothing of an infrastructure error
    (its earlier phases are missing) while it finishes the others: its state directory
    stays where it is, so that the retry that does run (`rook run --run ID`) sets it
    aside and its record names it. When every scenario run is such an error, the
    selection can go on with none: refused, exit 2."""
    ruhroh_profile(
        rook_workspace, PY, hook_env={"WRAPPER_MODE": "full", "WRAPPER_MODE_S": "infra_always"}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    rook_workspace.scenario({"id": "t", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close", "--only", "s")
    assert r.statuses() == {"s": "infra_error"}, r.stderr
    alone = r.report["run"]["id"]
    refused = rook_cli("run", "--json", "--run", alone, "--phases", "collect,judge")
    assert refused.exit_code == 2 and "open, execute, close for s)" in refused.stderr
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.statuses() == {"s": "infra_error", "t": "pending"}, r.stderr
    run_id = r.report["run"]["id"]
    state = rook_workspace.run_dir(run_id) / "state"
    lost = sorted(p.name for p in (state / "s.1").rglob("*"))
    assert lost, "the wrapper leaves files in ROOK_STATE_DIR"
    later = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert later.statuses()["s"] == "infra_error", later.stderr
    assert later.statuses()["t"] != "pending", later.stderr
    assert sorted(p.name for p in (state / "s.1").rglob("*")) == lost
    assert not (state / "s.1.attempt-1").exists()
    again = rook_cli("run", "--json", "--run", run_id)
    assert again.statuses()["s"] == "infra_error", again.stderr
    record = rook_workspace.record(run_id, "s.1")
    assert [a.get("state") for a in record["infra_attempts"]] == ["state/s.1.attempt-1"]
    assert sorted(p.name for p in (state / "s.1.attempt-1").rglob("*")) == lost


def _read_only(path: Path) -> bool:
    """Make directory ``path`` one whose entries cannot be renamed (chmod for a user,
    ``chattr +i`` for root); False when this system cannot."""
    import os
    import subprocess

    if os.geteuid() != 0:
        path.chmod(0o555)
        return True
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    return done.returncode == 0


def _writable(path: Path) -> None:
    import os
    import subprocess

    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
    path.chmod(0o755)


def test_a_state_directory_that_cannot_be_set_aside_is_a_warning_and_no_retry(
    rook_workspace, rook_cli, probe_dir
):
    """The files an infrastructure error left cannot be moved aside (a read-only
    directory): the resume names the directory and the reason, runs the others, and
    leaves this one as it was (an infra_error a later resume tries again); never a
    traceback, nor an 'executor raised' blaming the executor."""
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "infra_always"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    rook_workspace.scenario({"id": "t", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "infra_error", "t": "infra_error"}, r.stderr
    run_id = r.report["run"]["id"]
    state = rook_workspace.run_dir(run_id) / "state"
    shutil.rmtree(state / "t.1")  # t left nothing to set aside: it runs again
    (state / "t.1").mkdir()
    lost = sorted(p.name for p in (state / "s.1").rglob("*"))
    before = rook_workspace.record(run_id, "s.1")
    ruhroh_profile(
        rook_workspace, PY, hook_env={"WRAPPER_MODE": "full", "WRAPPER_MODE_S": "infra_always"}
    )
    if not _read_only(state):
        pytest.skip("cannot make a directory read-only here")
    try:
        again = rook_cli("run", "--json", "--run", run_id)
    finally:
        _writable(state)
    assert again.exit_code == 1, again.stderr
    assert "Traceback" not in again.stderr and "raised" not in again.stderr, again.stderr
    assert f"{state / 's.1'}" in again.stderr and "s.1.attempt-1" in again.stderr, again.stderr
    assert f"rook run --run {run_id} -w {rook_workspace.root} tries it again" in again.stderr, (
        again.stderr)
    assert again.statuses() == {"s": "infra_error", "t": "passed"}, again.stderr
    assert rook_workspace.record(run_id, "s.1") == before
    assert sorted(p.name for p in (state / "s.1").rglob("*")) == lost
    assert not (state / "s.1.attempt-1").exists()
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "full"})
    last = rook_cli("run", "--json", "--run", run_id)
    assert last.statuses() == {"s": "passed", "t": "passed"}, last.stderr
    record = rook_workspace.record(run_id, "s.1")
    assert [a.get("state") for a in record["infra_attempts"]] == ["state/s.1.attempt-1"]


def test_an_artifact_name_each_iteration_reports_keeps_every_file(rook_workspace, rook_cli):
    # a wrapper names its log "transcript" on every call, a new file each time (as the
    # Claude Code and Codex wrappers do): the evidence kept only the last iteration's
    wrapper = rook_workspace.script(
        "logs.sh",
        """
        #!/bin/bash
        mkdir -p .ruhroh; echo "log $RUHROH_ITERATION" > ".ruhroh/t-$RUHROH_ITERATION.log"
        st=continue; [ "$RUHROH_ITERATION" = 3 ] && st=goal_satisfied
        echo '{"status":"'$st'","artifacts":{"transcript":".ruhroh/t-'$RUHROH_ITERATION'.log","plan":"plan.md"}}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    arts = scenario_of(r)["turns"][0]["evidence"]["artifacts"]
    assert {k: v.get("content") for k, v in arts.items()} == {
        "transcript": "log 3\n",
        "transcript (iteration 2)": "log 2\n",
        "transcript (iteration 1)": "log 1\n",
        "plan": None,  # the same file each time (missing here): kept once
    }
    assert arts["plan"]["missing"] is True


def test_an_artifact_is_read_as_the_iteration_that_reported_it_left_it(rook_workspace, rook_cli):
    # the artifacts of a turn's iterations were read when the turn ended: a file an
    # earlier iteration reported and a later one moved was "missing", and one the next
    # call rewrote showed that call's content under the earlier iteration's report
    wrapper = rook_workspace.script(
        "moves.sh",
        """
        #!/bin/bash
        if [ "$RUHROH_ITERATION" = 1 ]; then
          echo "the plan" > plan.md; echo "step 1" > step.log
          echo '{"status":"continue","artifacts":{"plan":"plan.md","step":"step.log"}}'
        else
          mkdir -p docs; mv plan.md docs/plan.md; echo "step 2" > step.log
          echo '{"status":"goal_satisfied","artifacts":{"log":"step.log"}}'
        fi
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    arts = scenario_of(r)["turns"][0]["evidence"]["artifacts"]
    assert {k: v.get("content") for k, v in arts.items()} == {
        "plan": "the plan\n",
        "step": "step 1\n",
        "log": "step 2\n",
    }, arts


def test_what_each_earlier_iteration_answered_is_in_the_record(rook_workspace, rook_cli):
    """The record kept a turn's last answer only: what a wrapper answered with
    ``continue`` (or an ``infra_failure`` retried) in its result file was in no record
    or report, only in that file in state/. Each iteration's entry now holds its
    answer (cut at 2,000 characters), the last one's being the turn's output."""
    wrapper = rook_workspace.script(
        "answers.sh",
        """
        #!/bin/bash
        case "$RUHROH_ITERATION" in
          1) st=continue; out="wrote the plan" ;;
          2) st=continue; out=$(printf 'x%.0s' $(seq 3000)) ;;
          *) st=goal_satisfied; out="all done" ;;
        esac
        printf '{"status":"%s","output":"%s"}' "$st" "$out" > "$RUHROH_RESULT_PATH"
        echo "working on iteration $RUHROH_ITERATION"
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    turn = scenario_of(r)["turns"][0]
    first, second, last = turn["evidence"]["iterations"]
    assert first["output"] == "wrote the plan"
    assert second["output"].startswith("x" * 2000) and "[1000 more chars" in second["output"]
    assert "output" not in last and turn["output"] == "all done"
    # a wrapper that gave no answer field: its transcript is the answer, already kept
    wrapper.write_text("#!/bin/bash\necho 'thinking'\necho '{\"status\":\"continue\"}'\n")
    ruhroh_profile(rook_workspace, str(wrapper), max_iterations=2)
    r = rook_cli("run", "--json")
    iterations = scenario_of(r)["turns"][0]["evidence"]["iterations"]
    assert len(iterations) == 2 and not [i for i in iterations if "output" in i], iterations


@pytest.mark.parametrize(
    "final_line,why",
    [
        ('{"status": "goal_satisfied"', "its final line is not valid JSON: Expecting ','"),
        ('{"status":"goal_satisfied","usage":{"inputTokens":1e400}}', "1e400 is too large"),
        ('[{"status": "goal_satisfied"}]', "its final line is JSON, but an array"),
        ('{"state": "done", "output": "x"}', 'has no "status" field (keys: output, state)'),
    ],
)
def test_a_final_line_that_gives_no_status_says_why(final_line, why, rook_workspace, rook_cli):
    # the diagnosis said only "reported no completion status" and quoted the line,
    # also when the line was JSON Rook could not read (1e400, a missing brace)
    wrapper = rook_workspace.script(
        "broken-final.sh",
        f"""
        #!/bin/bash
        echo 'calling the agent CLI failed: see above' >&2
        echo '{final_line}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert "reported no completion status: its final" in s["reason"], s["reason"]
    assert why in s["reason"], s["reason"]
    assert "stderr: calling the agent CLI failed" in s["reason"], s["reason"]


@pytest.mark.parametrize("code", [0, 3])
def test_a_final_status_line_printed_to_stderr_is_said_to_be_there(code, rook_workspace, rook_cli):
    # echo '{"status":"goal_satisfied"}' >&2 got the generic "reported no completion
    # status: expected a final JSON line such as ..." with the very line in its stderr
    wrapper = rook_workspace.script(
        "to-stderr.sh",
        f"""
        #!/bin/bash
        echo 'working on it'
        echo '{{"status":"goal_satisfied"}}' >&2
        exit {code}
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error", s
    assert ("its final status line went to standard error (stderr), where Rook does not read "
            'it: print it on standard output (stdout)') in s["reason"], s["reason"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le"])
def test_a_final_line_printed_in_utf_16_is_named_so(codec, rook_workspace, rook_cli):
    # a PowerShell wrapper's Out-File: "reported no completion status: expected a final JSON
    # line such as ..." beside '\ufffd\ufffd{\x00"\x00s\x00...', with no word of why
    wrapper = rook_workspace.script("w.py", f"""
        #!/usr/bin/env python3
        import sys
        text = 'working\\n{{"status": "goal_satisfied", "output": "ok"}}\\n'
        sys.stdout.buffer.write(text.encode("{codec}"))
    """)
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert ("reported no completion status: its final line is UTF-16 text, and Rook reads a "
            "wrapper's output as UTF-8; print UTF-8") in s["reason"], s["reason"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le"])
def test_a_result_file_written_in_utf_16_is_named_so(codec, rook_workspace, rook_cli):
    # Windows PowerShell's Out-File (and >) writes the result file in UTF-16: the call
    # failed as "is not JSON (Expecting value ...)" quoting '\ufffd\ufffd{\x00"\x00v\x00...'
    wrapper = rook_workspace.script("w.py", f"""
        #!/usr/bin/env python3
        import json, os
        result = {{"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied"}}
        with open(os.environ["RUHROH_RESULT_PATH"], "wb") as f:
            f.write(json.dumps(result).encode("{codec}"))
    """)
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert "(RUHROH_RESULT_PATH) is UTF-16 text, and Rook reads it as UTF-8; write UTF-8" in (
        s["reason"]
    ), s["reason"]
    assert "\\x00" not in s["reason"] and "\x00" not in s["reason"], s["reason"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_result_file_written_in_utf_16_keeps_no_secret(
    codec, rook_workspace, rook_cli, monkeypatch
):
    # A result file is redacted in place once read, but one in UTF-16 (PowerShell's
    # Out-File) was read as UTF-8: the secret, a NUL beside each of its letters, was
    # never found, and stayed whole in the run directory. It is redacted in UTF-16.
    monkeypatch.setenv("AGENT_TOKEN", "tok-5e2b8d-wide")
    wrapper = rook_workspace.script("w.py", f"""
        #!/usr/bin/env python3
        import json, os
        result = {{"status": "goal_satisfied", "summary": os.environ["AGENT_TOKEN"]}}
        with open(os.environ["RUHROH_RESULT_PATH"], "wb") as f:
            f.write(json.dumps(result).encode("{codec}"))
    """)
    ruhroh_profile(rook_workspace, str(wrapper),
                   env=[{"variable": "AGENT_TOKEN", "purpose": "the agent's API token"}])
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert "is UTF-16 text" in scenario_of(r)["reason"], scenario_of(r)["reason"]
    results = rook_workspace.run_dir(r.report["run"]["id"]) / "state" / "s.1" / "ruhroh" / "results"
    [f] = results.glob("*.json")
    wide = f.read_bytes().decode(codec)
    assert "5e2b8d" not in wide and "[redacted:AGENT_TOKEN]" in wide, wide
    assert json.loads(wide.removeprefix("\ufeff"))["status"] == "goal_satisfied"  # still its JSON


@pytest.mark.parametrize("lang", ["bash", "python"])
def test_a_wrapper_that_exits_before_its_background_job_answered_is_told_to_wait(
    lang, rook_workspace, rook_cli
):
    # the agent started with & and the wrapper exited at once: the diagnosis said only
    # that no status was reported, never that the job meant to write it still ran
    body = {
        "bash": """
            #!/bin/bash
            ( sleep 5; echo '{"status":"goal_satisfied"}' > "$RUHROH_RESULT_PATH" ) \\
                > /dev/null 2>&1 &
            echo "started the agent"
            """,
        "python": """
            #!/usr/bin/env python3
            import subprocess
            subprocess.Popen(["sleep", "5"], stdout=subprocess.DEVNULL)
            print("started the agent")
            """,
    }[lang]
    wrapper = rook_workspace.script(f"bg.{'sh' if lang == 'bash' else 'py'}", body)
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert "the wrapper reported no completion status" in s["reason"], s["reason"]
    assert (
        "it exited while a process it started still ran (a job left in the background): "
        "a result file that job writes later is never read; wait for it before exiting"
    ) in s["reason"], s["reason"]


def test_a_node_wrapper_whose_long_output_lost_its_final_line_is_told_why(
    rook_workspace, rook_cli
):
    # Node's process.exit() drops what is still queued for a pipe: a wrapper that printed
    # a long transcript, then its status line, then exited so, lost the status line (as
    # under any reader: `node w.mjs | tail`), and the diagnosis quoted a transcript that
    # plainly went on, with no word of why. Here the loss is made certain: no status line.
    wrapper = rook_workspace.script(
        "long.mjs",
        """
        #!/usr/bin/env node
        for (let i = 0; i < 64; i++) console.log("x".repeat(1000));
        process.exit(0);
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert (
        "the wrapper reported no completion status: a Node program that ends with "
        "process.exit() can lose the end of what it printed to a pipe"
    ) in s["reason"], s["reason"]


def test_a_final_json_object_over_several_lines_is_named_as_the_cause(rook_workspace, rook_cli):
    # jq and json.dumps(indent=2) print an object over several lines: the last line is
    # "}", and the diagnosis said only that no status was reported, quoting the lines
    wrapper = rook_workspace.script(
        "pretty.sh",
        """
        #!/bin/bash
        echo 'working on it'
        printf '{\\n  "status": "goal_satisfied",\\n  "output": "done"\\n}\\n'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error", s
    assert "its final JSON object spans 4 lines" in s["reason"], s["reason"]
    assert "jq -c" in s["reason"], s["reason"]


def test_a_removed_agent_workspace_is_named_as_the_cause(rook_workspace, rook_cli):
    # a coding agent that cleans up by removing its workspace: the next call could not
    # start, and the diagnosis said the wrapper itself was not found
    wrapper = rook_workspace.script(
        "cleaner.sh",
        """
        #!/bin/bash
        cd .. && rm -rf "$RUHROH_WORKSPACE"
        echo '{"status":"continue","output":"cleaned"}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert "its working directory" in s["reason"], s["reason"]
    assert "the agent workspace (RUHROH_WORKSPACE), removed" in s["reason"], s["reason"]
    assert s["turns"][0]["output"] == "cleaned"  # the first turn is kept


@pytest.mark.parametrize("harm", ["remove", "rewrite", "folder", "link"])
def test_the_goal_file_and_result_folder_are_whole_again_for_every_call(
    harm, rook_workspace, rook_cli, tmp_path
):
    # Rook's files, not the agent's: a wrapper that removed (or rewrote) its goal file
    # and the folder of its result file left every later call a RUHROH_GOAL_PATH naming
    # nothing and a RUHROH_RESULT_PATH it could not write, so its result was lost
    outside = tmp_path / "outside.txt"
    outside.write_text("not Rook's")
    harms = {
        "remove": 'rm -rf "$RUHROH_GOAL_PATH" "$(dirname "$RUHROH_RESULT_PATH")"',
        "rewrite": 'echo "my notes" > "$RUHROH_GOAL_PATH"',
        "folder": 'rm -f "$RUHROH_GOAL_PATH"; mkdir "$RUHROH_GOAL_PATH"',
        "link": f'rm -f "$RUHROH_GOAL_PATH"; ln -s {outside} "$RUHROH_GOAL_PATH"',
    }
    wrapper = rook_workspace.script(
        "harmful.sh",
        f"""
        #!/bin/bash
        {{ cat "$RUHROH_GOAL_PATH"; echo; }} >> "$RUHROH_WORKSPACE/goals.txt"
        st=continue; [ "$RUHROH_ITERATION" -ge 3 ] && st=goal_satisfied
        printf '{{"status":"%s","summary":"call %s"}}' "$st" "$RUHROH_ITERATION" > "$RUHROH_RESULT_PATH"
        [ "$RUHROH_ITERATION" = 1 ] && {{ {harms[harm]}; }}
        echo "{{\\"status\\":\\"$st\\"}}"
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario(
        {"id": "s", "turns": ["the goal", "b", "c"], "criteria": [{"status": "goal_satisfied"}]}
    )
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "passed", s.get("reason")
    # (the first call removed its own result file: its final line stands)
    assert [t["output"] for t in s["turns"]][1:] == ["call 2", "call 3"]
    goals = Path(s["turns"][-1]["evidence"]["workspace"], "goals.txt").read_text()
    assert goals == "the goal\n" * 3
    assert outside.read_text() == "not Rook's"


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_output_over_the_cap_says_how_to_raise_it(stream, rook_workspace, rook_cli):
    # a coding agent's CLI is verbose: the diagnosis named the cap, not the setting
    wrapper = rook_workspace.script(
        "verbose.sh",
        f"""
        #!/bin/bash
        head -c 5000 /dev/zero | tr '\\0' x {">&2" if stream == "stderr" else ""}; echo
        echo '{{"status":"goal_satisfied"}}'
        """,
    )
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {"execute": {"ruhroh": {"command": str(wrapper)}}},
            "limits": {f"{stream}_bytes": 1024},
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert f"{stream} exceeded the 1024-byte cap" in s["reason"], s["reason"]
    assert f"raise limits.{stream}_bytes in the profile" in s["reason"], s["reason"]


def test_a_result_file_over_the_cap_says_how_to_raise_it(rook_workspace, rook_cli, monkeypatch):
    # the result file is capped at limits.stdout_bytes too: the diagnosis named the
    # cap ("over the 1024-byte cap") but not the setting that sets it
    monkeypatch.setenv("AGENT_TOKEN", "tok-over-the-cap-41")
    wrapper = rook_workspace.script(
        "big-result.sh",
        """
        #!/bin/bash
        printf '{"status":"goal_satisfied","summary":"%s %s"}' "$AGENT_TOKEN" \\
          "$(head -c 3000 /dev/zero | tr '\\0' x)" > "$RUHROH_RESULT_PATH"
        """,
    )
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {"execute": {"ruhroh": {"command": str(wrapper)}}},
            "limits": {"stdout_bytes": 1024},
            "env": [{"variable": "AGENT_TOKEN", "purpose": "API token"}],
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert "over the 1024-byte cap" in s["reason"], s["reason"]
    assert "raise limits.stdout_bytes in the profile" in s["reason"], s["reason"]
    # never read, so never redacted: removed, with the secret it held
    run_dir = Path(r.report["run"]["dir"])
    assert list((run_dir / "state" / "s.1" / "ruhroh" / "results").iterdir()) == []
    assert "tok-over-the-cap-41" not in rook_workspace.all_run_text(r.report["run"]["id"])


def test_a_template_that_cannot_be_copied_is_named(rook_workspace, rook_cli, probe_dir):
    # a fixture holding a named pipe (or a socket, an unreadable file) failed each
    # scenario with "transport 'ruhroh' raised Error: [(src, dst, why)]"
    template = rook_workspace.agent_dir / "fixtures" / "repo"
    template.mkdir(parents=True)
    (template / "README.md").write_text("fixture repo\n")
    os.mkfifo(template / "pipe")
    ruhroh_profile(rook_workspace, BASH, workspace_template="fixtures/repo")
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    s = scenario_of(r)
    assert s["status"] == "error"
    assert f"workspace_template {template}: cannot copy it into the agent workspace" in s["reason"]
    assert "is a named pipe" in s["reason"] and "raised" not in s["reason"], s["reason"]
    assert calls(probe_dir) == []  # the wrapper never ran in a half-copied workspace


@pytest.mark.parametrize("form", ["ruhroh", "connector"])
@pytest.mark.parametrize("phase", ["prepare", "open", "close", "collect"])
def test_a_command_wrapper_on_another_phase_than_execute_is_refused(
        rook_workspace, rook_cli, phase, form):
    # `close: {ruhroh: {command: ./cleanup.sh}}` ran nothing at all, silently:
    # a command wrapper has only iterations, which only execute runs. So did the
    # same wrapper as the built-in connector (`connector: {name: ruhroh-command}`)
    ws = rook_workspace
    ws.script("wrapper.sh", "#!/bin/bash\ntouch \"$RUHROH_RUN_ROOT/../../ran-$1\"\n"
              "echo '{\"status\": \"goal_satisfied\"}'\n")
    entry = {"command": "scripts/wrapper.sh"}
    if form == "connector":
        entry = {"name": "ruhroh-command", **entry}
    profile = ws.profile({"id": "w", "hooks": {
        phase: {form: entry},
        "execute": {"ruhroh": {"command": "scripts/wrapper.sh"}}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stderr
    assert (f"{profile}: hooks.{phase}: a ruhroh command wrapper runs on execute only (each "
            f"turn an iteration); on {phase} it would run nothing") in r.stderr, r.stderr
    assert not list(ws.root.rglob("runs/*"))


@pytest.mark.parametrize(
    "command,said",
    [
        # a list of arguments was told it must be "a command line or a list of arguments"
        (["scripts/wrapper.sh", 1], "command.1: must be text: YAML reads 1 unquoted as a number"),
        (["scripts/wrapper.sh", "--fast", True], "command.2: must be text: YAML reads an unquoted"),
        (["scripts/wrapper.sh", ""], "command.1: must be text, not empty"),
        (["scripts/wrapper.sh", ["a"]], "command.1: must be text, not a list"),
        (7, "command: must be a command line or a list of arguments"),
        ("", "command: must be a command line or a list of arguments"),
    ],
)
def test_a_command_that_is_no_command_line_says_which_argument_is_wrong(
    command, said, rook_workspace, rook_cli
):
    ws = rook_workspace
    ws.script("wrapper.sh", "#!/bin/bash\necho '{\"status\": \"goal_satisfied\"}'\n")
    profile = ruhroh_profile(ws, command)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stderr
    assert str(profile) in r.stderr and f"hooks.execute.ruhroh.{said}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not list(ws.root.rglob("runs/*"))


def test_an_empty_output_is_an_empty_answer_never_the_transcript(rook_workspace, rook_cli):
    # "output": "" fell back to the transcript, so a transcript echoing the prompt
    # made `contains` pass on an agent that answered nothing (a script hook's
    # "output": "" is an empty answer too); with no answer field at all, the
    # transcript is still the answer
    wrapper = rook_workspace.script(
        "empty-answer.sh",
        """
        #!/bin/bash
        echo "user: $RUHROH_MESSAGE"
        if [ "$RUHROH_SCENARIO_ID" = none ]; then echo '{"status":"goal_satisfied"}'
        else echo '{"status":"goal_satisfied","output":""}'; fi
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "empty", "goal": "say hello", "criteria": [{"contains": "hello"}]})
    rook_workspace.scenario({"id": "none", "goal": "say hello", "criteria": [{"contains": "hello"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"empty": "failed", "none": "passed"}
    empty = scenario_of(r, "empty")["turns"][0]
    assert empty["output"] == "" and empty["evidence"]["transcript"] == "user: say hello"


def test_agent_reply_is_the_answer_as_output_is(rook_workspace, rook_cli):
    # the hook contract's other name for output (SPEC: the public Rook CLI documents
    # it): a wrapper answering with it had its transcript judged instead
    wrapper = rook_workspace.script(
        "reply.sh",
        """
        #!/bin/bash
        echo "working on: $RUHROH_MESSAGE"
        echo '{"status":"goal_satisfied","agent_reply":"Your order ships Tuesday."}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "when?", "criteria": [{"contains": "Tuesday"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout
    assert scenario_of(r)["turns"][0]["output"] == "Your order ships Tuesday."


ANSWER_FIELDS = ["output", "agent_reply", "message", "summary", "result", "response", "answer", "text"]


def test_the_answer_is_the_first_answer_field_in_the_pages_order(rook_workspace, rook_cli):
    # ruhroh.md: output, agent_reply, message, summary, result, response, answer, text;
    # scenario N's wrapper answers with the fields from the Nth on (each names itself)
    wrapper = rook_workspace.script(
        "fields.py",
        f"""
        #!/usr/bin/env python3
        import json, os
        fields = {ANSWER_FIELDS!r}
        first = fields.index(os.environ["RUHROH_SCENARIO_ID"])
        print(json.dumps({{"status": "goal_satisfied", **{{f: "from " + f for f in fields[first:]}}}}))
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    for field in ANSWER_FIELDS:
        rook_workspace.scenario({"id": field, "goal": "g", "criteria": [{"contains": "from"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    answers = {s["id"]: s["turns"][0]["output"] for s in r.report["scenarios"]}
    assert answers == {field: f"from {field}" for field in ANSWER_FIELDS}


def test_a_cost_some_iteration_of_a_turn_left_out_still_fails_a_budget_it_exceeds(
    rook_workspace, rook_cli
):
    # iteration 1 reported costUsd 5, iteration 2 none: the turn's usage has no cost
    # (never an under-count), and what iteration 1 did report was lost with it, so
    # max_cost 1 was unverifiable though $5 had been spent
    wrapper = rook_workspace.script(
        "part-cost.sh",
        """
        #!/bin/bash
        if [ "$RUHROH_ITERATION" = 1 ]; then
          echo '{"status":"continue","output":"working","usage":{"costUsd":5,"inputTokens":900}}'
        else echo '{"status":"goal_satisfied","output":"done"}'; fi
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "over", "goal": "g", "criteria": [{"max_cost": 1}]})
    rook_workspace.scenario({"id": "under", "goal": "g", "criteria": [{"max_cost": 10}]})
    rook_workspace.scenario({"id": "tokens", "goal": "g", "criteria": [{"max_tokens": {"input": 100}}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"over": "failed", "under": "unverifiable", "tokens": "failed"}
    over = scenario_of(r, "over")
    assert "at least $5.0000" in over["criteria"][0]["reason"], over["criteria"]
    turn = over["turns"][0]
    assert not (turn.get("usage") or {}).get("cost_usd")
    assert turn["evidence"]["usage_at_least"] == {"cost_usd": 5, "input": 900}


def test_the_continuity_level_is_shown_in_the_terminal_and_markdown_reports(
    rook_workspace, rook_cli, tmp_path
):
    # SPEC 7: the level is "recorded and shown in the report"; only the JSON and
    # HTML reports had it (in each turn's evidence)
    wrapper = rook_workspace.script(
        "cont.sh", """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"ok"}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper), continuity="workspace_plus_transcript")
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    md = tmp_path / "out.md"
    r = rook_cli("run", "--report", f"markdown:{md}")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert "Ruhroh continuity: workspace_plus_transcript" in r.stdout
    assert "**Ruhroh continuity** <code>workspace_plus_transcript</code>" in md.read_text()
    run_id = r.stdout.split("\nrun ", 1)[1].split(":", 1)[0]  # and in the run's manifest
    manifest = json.loads((rook_workspace.run_dir(run_id) / "ruhroh-run-manifest.json").read_text())
    assert manifest["continuity"] == "workspace_plus_transcript"
    # a run without Ruhroh shows none
    rook_workspace.profile({"id": "plain", "hooks": {"execute": {"script": str(wrapper)}}})
    r = rook_cli("run", "--profile", "plain", "--report", f"markdown:{md}")
    assert "\nrun " in r.stdout and "**Profile** <code>plain</code>" in md.read_text(), r.stderr
    assert "Ruhroh continuity" not in r.stdout and "continuity" not in md.read_text()


def test_the_continuity_level_is_shown_when_no_turn_was_recorded(
    rook_workspace, rook_cli, tmp_path
):
    # the reports read the level from the turns' evidence alone: a wrapper whose every
    # turn failed (no turn recorded) showed it nowhere, though its record and the
    # manifest had it
    wrapper = rook_workspace.script(
        "down.sh", """
        #!/bin/bash
        echo "service down" >&2
        exit 3
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper), continuity="native_session")
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    md, js, page = tmp_path / "out.md", tmp_path / "out.json", tmp_path / "out.html"
    r = rook_cli("run", "--report", f"markdown:{md}", "--report", f"json:{js}",
                 "--report", f"html:{page}")
    assert r.exit_code == 1, r.stderr + r.stdout
    assert "Ruhroh continuity: native_session" in r.stdout, r.stdout
    assert "**Ruhroh continuity** <code>native_session</code>" in md.read_text()
    entry = json.loads(js.read_text())["scenarios"][0]
    assert entry["status"] == "error" and entry["turns"] == [], entry
    assert entry["hooks"][0]["phase"] == "execute", entry["hooks"]
    assert entry["hooks"][0]["continuity"] == "native_session", entry["hooks"]
    assert "(Ruhroh continuity: native_session)" in page.read_text()


def test_the_continuity_level_is_shown_when_every_scenario_is_not_runnable(
    rook_workspace, rook_cli, tmp_path
):
    # the reports read the level from the turns and hooks: a workspace_only wrapper whose
    # every scenario has two turns (not_runnable, no hook ran) showed it nowhere but in
    # ruhroh-run-manifest.json; the run's manifest records it once, and rook merge joins it
    wrapper = rook_workspace.script(
        "wo.sh", """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"ok"}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper), continuity="workspace_only")
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    md, page = tmp_path / "out.md", tmp_path / "out.html"
    r = rook_cli("run", "--json", "--report", f"markdown:{md}", "--report", f"html:{page}")
    assert r.statuses() == {"s": "not_runnable"}, r.stderr + r.stdout
    assert r.report["run"]["continuity"] == ["workspace_only"], r.report["run"]
    assert "**Ruhroh continuity** <code>workspace_only</code>" in md.read_text()
    assert "Ruhroh continuity <code>workspace_only</code>" in page.read_text()
    run_id = r.report["run"]["id"]
    manifest = json.loads((rook_workspace.run_dir(run_id) / "run.json").read_text())
    assert manifest["continuity"] == ["workspace_only"]
    shown = rook_cli("runs", "show", run_id)
    assert "Ruhroh continuity: workspace_only" in shown.stdout, shown.stdout + shown.stderr
    # sharded, then merged
    for i in (1, 2):
        r = rook_cli("run", "--shard", f"{i}/2", "--run-name", "sh")
        assert "Ruhroh continuity: workspace_only" in r.stdout, r.stdout + r.stderr
    merged = rook_cli("merge", "--run", "sh", "--json")
    assert merged.exit_code == 0, merged.stderr + merged.stdout
    assert merged.report["run"]["continuity"] == ["workspace_only"], merged.report["run"]
    assert "Ruhroh continuity: workspace_only" in rook_cli("runs", "show", "sh").stdout
    # a run without Ruhroh records none
    rook_workspace.profile({"id": "plain", "hooks": {"execute": {"script": str(wrapper)}}})
    r = rook_cli("run", "--json", "--profile", "plain")
    assert "continuity" not in r.report["run"], r.report["run"]


def test_the_html_facts_show_the_continuity_of_a_run_that_recorded_none(
    rook_workspace, rook_cli, tmp_path
):
    # a run made before run.continuity was recorded (or by a plugin declaring none):
    # the table and the Markdown facts read the level from its turns, the HTML page's
    # facts read run.continuity alone and showed nothing
    wrapper = rook_workspace.script(
        "old.sh", """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"ok"}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper), continuity="workspace_plus_transcript")
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    run_dir = rook_workspace.run_dir(r.report["run"]["id"])
    for name, part in (("run.json", None), ("report.json", "run")):
        data = json.loads((run_dir / name).read_text())
        (data[part] if part else data).pop("continuity")
        (run_dir / name).write_text(json.dumps(data))
    md, page = tmp_path / "out.md", tmp_path / "out.html"
    shown = rook_cli("report", "latest", "--report", f"markdown:{md}", "--report", f"html:{page}")
    assert shown.exit_code == 0, shown.stderr + shown.stdout
    assert "Ruhroh continuity: workspace_plus_transcript" in rook_cli("report", "latest").stdout
    assert "**Ruhroh continuity** <code>workspace_plus_transcript</code>" in md.read_text()
    assert "Ruhroh continuity <code>workspace_plus_transcript</code>" in page.read_text()


def test_merging_copies_keeps_the_continuity_one_of_them_recorded(
    rook_workspace, rook_cli, tmp_path
):
    # rook merge took run.json's continuity from the first copy it read: a shard's
    # copy made by a Rook that recorded none (before run.continuity) left the merged
    # run of not_runnable scenarios without the level the other copy recorded
    wrapper = rook_workspace.script(
        "wo.sh", """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"ok"}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper), continuity="workspace_only")
    for sid in ("s", "t", "u"):
        rook_workspace.scenario({"id": sid, "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    machines = []
    for i in (1, 2):
        shutil.copytree(rook_workspace.root, tmp_path / f"m{i}")
        machines.append(Workspace(tmp_path / f"m{i}"))
        r = rook_cli("run", "-w", str(tmp_path / f"m{i}"), "--shard", f"{i}/2",
                     "--run-name", "sh", "--json")
        assert r.exit_code == 0, r.stderr + r.stdout
    run_id = r.report["run"]["id"]
    older = machines[0].run_dir(run_id) / "run.json"
    older.write_text(json.dumps(
        {k: v for k, v in json.loads(older.read_text()).items() if k != "continuity"}
    ))
    dirs = [str(ws.run_dir(run_id)) for ws in machines]
    merged = rook_cli("merge", "-w", str(rook_workspace.root), *dirs, "--json")
    assert merged.exit_code == 0, merged.stderr + merged.stdout
    assert merged.report["run"]["continuity"] == ["workspace_only"], merged.report["run"]
    # and whatever the order of the copies, also when they declared different levels
    newer = machines[1].run_dir(run_id) / "run.json"
    newer.write_text(json.dumps({**json.loads(newer.read_text()), "continuity": ["x", "w"]}))
    older.write_text(json.dumps({**json.loads(older.read_text()), "continuity": ["w"]}))
    for i, order in enumerate((dirs, dirs[::-1])):
        again = rook_cli("merge", "-w", str(rook_workspace.root), *order,
                         "--into", str(tmp_path / f"into{i}"), "--json")
        assert again.exit_code == 0, again.stderr + again.stdout
        assert again.report["run"]["continuity"] in (["w", "x"], ["x", "w"])
        assert sorted(again.report["run"]["continuity"]) == ["w", "x"]


def test_every_artifacts_shape_is_kept_and_named(rook_workspace, rook_cli):
    # a plain string ("artifacts": "out.log") was dropped silently, and a list entry
    # that is an object was named by its Python repr ("{'name': 'log', ...}")
    wrapper = rook_workspace.script(
        "shapes.sh",
        """
        #!/bin/bash
        echo one > out.log; mkdir -p b; echo two > b/c.txt
        case "$RUHROH_SCENARIO_ID" in
          string) arts='"out.log"' ;;
          objects) arts='[{"name":"log","path":"out.log"},{"path":"b/c.txt"},{"kind":"x"}]' ;;
          number) arts='7' ;;
        esac
        echo "{\\"status\\":\\"goal_satisfied\\",\\"output\\":\\"ok\\",\\"artifacts\\":$arts}"
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    for sid in ("string", "objects", "number"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    arts = {sid: scenario_of(r, sid)["turns"][0]["evidence"]["artifacts"] for sid in r.statuses()}
    assert {k: v["content"] for k, v in arts["string"].items()} == {"out.log": "one\n"}
    objects = arts["objects"]
    assert sorted(objects) == ["artifact 3", "c.txt", "log"], objects
    assert objects["log"]["content"] == "one\n" and objects["log"]["name"] == "log"
    assert objects["c.txt"]["content"] == "two\n"
    assert objects["artifact 3"] == {"kind": "x"}
    assert arts["number"]["artifacts"]["value"] == 7 and "kept as given" in arts["number"]["artifacts"]["note"]


def test_a_total_some_iterations_report_and_others_give_as_input_plus_output_is_judged(
    rook_workspace, rook_cli
):
    # iteration 1 reported totalTokens only, iteration 2 inputTokens and outputTokens
    # only: each iteration's total is known (the reference's total is input plus
    # output, as max_tokens takes it when a turn reports no total), yet the turn's
    # usage had none, and max_tokens {total: ...} was unverifiable, even over budget
    wrapper = rook_workspace.script(
        "part-total.sh",
        """
        #!/bin/bash
        if [ "$RUHROH_ITERATION" = 1 ]; then
          echo '{"status":"continue","output":"working","usage":{"totalTokens":15}}'
        else
          echo '{"status":"goal_satisfied","output":"done","usage":{"inputTokens":10,"outputTokens":5}}'
        fi
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "over", "goal": "g", "criteria": [{"max_tokens": 20}]})
    rook_workspace.scenario({"id": "under", "goal": "g", "criteria": [{"max_tokens": 100}]})
    rook_workspace.scenario(
        {"id": "input", "goal": "g", "criteria": [{"max_tokens": {"input": 100}}]}
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"over": "failed", "under": "passed", "input": "unverifiable"}
    assert scenario_of(r, "over")["criteria"][0]["reason"] == "tokens total 30/20"
    assert scenario_of(r, "under")["turns"][0]["usage"] == {"total": 30}


def test_a_total_one_turn_reports_and_another_gives_as_input_plus_output_is_judged(
    rook_workspace, rook_cli
):
    # the same across turns: turn 1 reported totalTokens, turn 2 input and output
    wrapper = rook_workspace.script(
        "turn-total.sh",
        """
        #!/bin/bash
        if [ "$RUHROH_ITERATION" = 1 ]; then
          echo '{"status":"continue","sessionHandle":"h","output":"a","usage":{"totalTokens":15}}'
        else
          echo '{"status":"goal_satisfied","sessionHandle":"h","output":"b","usage":{"inputTokens":10,"outputTokens":5}}'
        fi
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "over", "turns": ["a", "b"], "criteria": [{"max_tokens": 20}]})
    rook_workspace.scenario(
        {"id": "under", "turns": ["a", "b"], "criteria": [{"max_tokens": 100}]}
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"over": "failed", "under": "passed"}
    assert scenario_of(r, "over")["criteria"][0]["reason"] == "tokens total 30/20"


def test_a_total_reported_by_the_iterations_that_did_still_fails_a_budget_it_exceeds(
    rook_workspace, rook_cli
):
    # iteration 1 reported totalTokens 500, iteration 2 no usage: the lower bound
    # kept in usage_at_least was ignored for total (only input + output counted)
    wrapper = rook_workspace.script(
        "some-total.sh",
        """
        #!/bin/bash
        if [ "$RUHROH_ITERATION" = 1 ]; then
          echo '{"status":"continue","output":"working","usage":{"totalTokens":500}}'
        else echo '{"status":"goal_satisfied","output":"done"}'; fi
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "over", "goal": "g", "criteria": [{"max_tokens": 100}]})
    rook_workspace.scenario({"id": "under", "goal": "g", "criteria": [{"max_tokens": 1000}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"over": "failed", "under": "unverifiable"}
    assert "total at least 500/100" in scenario_of(r, "over")["criteria"][0]["reason"]


def test_the_lower_bound_of_a_total_counts_an_iterations_input_plus_output(
    rook_workspace, rook_cli
):
    # ruhroh.md: when some iterations report totalTokens, one that reported
    # inputTokens and outputTokens but no total counts their sum as its total. The
    # turn's usage did, but its lower bound (usage_at_least) left that sum out:
    # 500 + (30 + 20) spent, a third iteration with no usage, and max_tokens 520
    # was unverifiable ("total at least 500") instead of failing at 550.
    wrapper = rook_workspace.script(
        "sum-total.sh",
        """
        #!/bin/bash
        case "$RUHROH_ITERATION" in
          1) echo '{"status":"continue","output":"a","usage":{"totalTokens":500}}' ;;
          2) echo '{"status":"continue","output":"b","usage":{"inputTokens":30,"outputTokens":20}}' ;;
          *) echo '{"status":"goal_satisfied","output":"done"}' ;;
        esac
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "over", "goal": "g", "criteria": [{"max_tokens": 520}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"over": "failed"}, scenario_of(r, "over")["criteria"]
    assert "total at least 550/520" in scenario_of(r, "over")["criteria"][0]["reason"]
    assert scenario_of(r, "over")["turns"][0]["evidence"]["usage_at_least"]["total"] == 550


BOM_WRAPPER = r"""
#!/bin/bash
# a Windows tool (PowerShell's Out-File, .NET) writes a UTF-8 byte order mark first
if [ "$BOM_IN" = file ]; then
  printf '\xef\xbb\xbf{"version":"ruhroh_run_agent_result_v1","status":"goal_satisfied","output":"from the file"}\n' > "$RUHROH_RESULT_PATH"
else
  printf '\xef\xbb\xbf{"status":"goal_satisfied","output":"from the line"}\n'
fi
"""


@pytest.mark.parametrize("where,output", [("line", "from the line"), ("file", "from the file")])
def test_a_byte_order_mark_before_the_final_line_or_result_file_is_no_part_of_the_json(
    where, output, rook_workspace, rook_cli
):
    """A byte order mark is no part of JSON text: a hook's stdout that starts with one
    is read, and so are a wrapper's final line and result file (both failed as not JSON)."""
    wrapper = rook_workspace.script("bom.sh", BOM_WRAPPER)
    ruhroh_profile(rook_workspace, str(wrapper), capabilities={}, hook_env={"BOM_IN": where})
    rook_workspace.scenario(
        {"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}, {"equals": output}]}
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr + r.stdout
    assert scenario_of(r)["turns"][0]["evidence"]["iterations"][0]["source"] == (
        "final_line" if where == "line" else "result_file"
    )


USAGE_WRAPPER = r"""
#!/usr/bin/env python3
import json, os
usage = json.loads(os.environ["USAGE_JSON"].replace("TOKEN", os.environ.get("AGENT_TOKEN", "")))
print(json.dumps({"status": "goal_satisfied", "output": "ok", "usage": usage}))
"""


@pytest.mark.parametrize(
    "usage,message",
    [
        ({"inputTokens": "lots"}, 'usage.inputTokens must be a number, got "lots"'),
        ({"output_tokens": [3], "totalTokens": 5}, "usage.output_tokens must be a number, got [3]"),
        ({"costUsd": True}, "usage.costUsd must be a number, got true"),
        ("lots", 'usage must be an object like {"inputTokens": 12, "outputTokens": 3}, got "lots"'),
        ({"inputTokens": "TOKEN"}, 'usage.inputTokens must be a number, got "[redacted:AGENT_TOKEN]"'),
        # more digits than a float holds: the call raised OverflowError, named as Rook's own
        ({"inputTokens": 10**400}, "the reported usage.inputTokens is absurdly large (1000"),
        ({"costUsd": str(10**400)}, 'the reported usage.costUsd is absurdly large ("1000'),
        ({"outputTokens": 10**16}, "the reported usage.outputTokens is absurdly large (1000"),
    ],
)
def test_a_usage_count_that_is_no_number_fails_the_call_as_a_hooks_does(
    usage, message, rook_workspace, rook_cli, monkeypatch
):
    """A usage count Rook cannot read was dropped without a word (the run passed with
    no usage); a hook's malformed usage fails the hook, naming the field: so does a
    wrapper's. A count written as a JSON string ("12") is still read as the number."""
    monkeypatch.setenv("AGENT_TOKEN", "tok-7f3a9c")
    wrapper = rook_workspace.script("usage.py", USAGE_WRAPPER)
    ruhroh_profile(
        rook_workspace,
        str(wrapper),
        hook_env={"USAGE_JSON": json.dumps(usage)},
        env=[{"variable": "AGENT_TOKEN", "purpose": "the agent's API token"}],
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr + r.stdout
    assert message in scenario_of(r)["hooks"][0]["diagnosis"], scenario_of(r)["hooks"][0]
    assert "tok-7f3a9c" not in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    ruhroh_profile(rook_workspace, str(wrapper), hook_env={"USAGE_JSON": '{"inputTokens": "12"}'})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr + r.stdout
    assert scenario_of(r)["turns"][0]["usage"] == {"input": 12}


LONG_HANDLE = r"""
#!/usr/bin/env python3
import json
print(json.dumps({"status": "continue", "output": "ok", "sessionHandle": "h" * 200_000}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's per-variable limit")
def test_a_session_handle_too_long_for_the_environment_says_to_return_a_short_one(
    rook_workspace, rook_cli
):
    """A sessionHandle over what one environment variable can carry (Linux: 128 KiB)
    fails the next call, which cannot start; the diagnosis named RUHROH_SESSION_HANDLE
    but, unlike an over-long ROOK_CONVERSATION's, not what to do about it."""
    wrapper = rook_workspace.script("longhandle.py", LONG_HANDLE)
    ruhroh_profile(rook_workspace, str(wrapper), capabilities={"multi_turn": True})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr + r.stdout
    diagnosis = scenario_of(r)["hooks"][0]["diagnosis"]
    assert "RUHROH_SESSION_HANDLE holds 200023 bytes" in diagnosis, diagnosis
    assert "return a short sessionHandle" in diagnosis, diagnosis
    assert "RUHROH_WORKSPACE" in diagnosis
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's per-variable limit")
def test_a_session_handle_too_long_for_a_later_hook_names_who_returned_it(
    rook_workspace, rook_cli
):
    """A wrapper's last sessionHandle is ROOK_CONVERSATION for the collect hook after it:
    one over 128 KiB fails collect, which cannot start, and the diagnosis told the collect
    script to return a short handle, though the wrapper's sessionHandle was the one."""
    wrapper = rook_workspace.script(
        "longdone.py",
        LONG_HANDLE.replace('"continue"', '"goal_satisfied"'),
    )
    rook_workspace.script("collect.sh", "#!/bin/bash\necho '{}'\n")
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {"execute": {"ruhroh": str(wrapper)}, "collect": "scripts/collect.sh"},
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr + r.stdout
    diagnosis = scenario_of(r)["hooks"][-1]["diagnosis"]
    assert "ROOK_CONVERSATION holds 200019 bytes" in diagnosis, diagnosis
    assert "sessionHandle" in diagnosis, diagnosis
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's per-variable limit")
def test_a_handle_too_long_from_the_open_hook_is_not_blamed_on_the_wrapper(
    rook_workspace, rook_cli
):
    """An open hook's conversation is the wrapper's RUHROH_SESSION_HANDLE: one over
    128 KiB stops the wrapper's first call, and the diagnosis told the wrapper, which
    reported no handle, to return a short sessionHandle; it names the open hook too."""
    rook_workspace.script(
        "open.py",
        """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "open":
            print(json.dumps({"conversation": "c" * 200_000}))
        """,
    )
    wrapper = rook_workspace.script(
        "short.sh", """#!/bin/bash\necho '{"status":"goal_satisfied","output":"ok"}'\n"""
    )
    rook_workspace.profile(
        {"id": "rr", "hooks": {"open": "scripts/open.py", "execute": {"ruhroh": str(wrapper)}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr + r.stdout
    reason = scenario_of(r)["reason"]
    assert "RUHROH_SESSION_HANDLE holds 200023 bytes" in reason, reason
    assert "the open hook" in reason, reason


def test_a_failure_status_with_unreadable_usage_keeps_the_agents_error(
    rook_workspace, rook_cli, probe_dir
):
    """A wrapper whose model call failed often has no count ("n/a"): its runtime_failure
    is the diagnosis (with its error), and an infra_failure is still retried once."""
    wrapper = rook_workspace.script(
        "failing.sh",
        r"""
        #!/bin/bash
        touch "$PROBE_DIR/call-$RANDOM$RANDOM"
        echo "{\"status\":\"$STATUS\",\"error\":\"the model API returned 500\",\"usage\":{\"inputTokens\":\"n/a\"}}"
        """,
    )
    for status, diagnosis in (
        ("runtime_failure", "the agent reported runtime_failure: the model API returned 500"),
        ("infra_failure", "infrastructure error: the agent reported infra_failure on both attempts"),
    ):
        ruhroh_profile(rook_workspace, str(wrapper), hook_env={"STATUS": status})
        rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
        r = rook_cli("run", "--json")
        hook = scenario_of(r)["hooks"][0]
        assert diagnosis in hook["diagnosis"], hook
    assert len(list(probe_dir.glob("call-*"))) == 3  # runtime_failure once, infra_failure twice


def test_a_pretty_printed_object_after_a_byte_order_mark_is_diagnosed_as_such(
    rook_workspace, rook_cli
):
    # PowerShell's ConvertTo-Json prints over several lines unless -Compress, and
    # its output may start with a byte order mark: the diagnosis said only that
    # no status came, not that the object spans lines and how to print it compact
    wrapper = rook_workspace.script(
        "bompretty.sh",
        r"""
        #!/bin/bash
        printf '\xef\xbb\xbf{\n  "status": "goal_satisfied"\n}\n'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper), capabilities={})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr + r.stdout
    diagnosis = scenario_of(r)["hooks"][0]["diagnosis"]
    assert "its final JSON object spans 3 lines (pretty-printed)" in diagnosis, diagnosis


def test_a_clock_set_back_during_a_wrapper_call_never_gives_its_hook_negative_seconds(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    # A script hook's and a scenario run's seconds count on the monotonic clock, but a
    # Ruhroh hook's were still the wall clock's difference: a clock set back an hour
    # while the wrapper ran (NTP stepping a CI machine's clock) gave its hook record
    # and its turn minus an hour in the JSON report, and the scenario's
    # timeout_seconds an hour more to run in.
    flag = tmp_path / "stepped"
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - (3600 if flag.exists() else 0))
    wrapper = rook_workspace.script("stepping.sh", f"""
        #!/bin/bash
        touch {flag}                        # the clock is set back an hour meanwhile
        echo '{{"status": "goal_satisfied", "output": "hello"}}'
    """)
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hello"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr + r.stdout
    entry = scenario_of(r)
    assert 0 <= entry["turns"][0]["seconds"] < 600, entry["turns"]
    assert all(0 <= h["seconds"] < 600 for h in entry["hooks"]), entry["hooks"]
