"""The lifecycle engine: phase failures, stopped scenarios, concurrency, split and resumed runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import probes
import pytest

# A configurable agent: FAIL_<PHASE>=1 makes that phase fail; NO_HANDLE=1 returns no conversation.
AGENT = r"""
#!/bin/bash
phase="$1"
echo "$phase ${ROOK_SCENARIO_ID:-} ${ROOK_TURN:-}" >> "$LOG"
var="FAIL_${phase^^}"
if [ -n "${!var}" ]; then echo "$phase is broken today" >&2; exit 1; fi
case "$phase" in
  execute)
    goal=$(cat)
    if [ -n "$NO_HANDLE" ]; then printf '{"output": "ok %s"}\n' "$goal"
    else printf '{"output": "ok %s", "conversation": "c1"}\n' "$goal"; fi ;;
  collect) echo '{"calls": [{"name": "lookup", "arguments": {"id": 1}}], "usage": {"input": 5, "output": 6}}' ;;
esac
exit 0
"""


@pytest.fixture
def ws(rook_workspace, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("LOG", str(log))
    rook_workspace.log = log
    rook_workspace.script("agent.sh", AGENT)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {
                p: "scripts/agent.sh" for p in ("prepare", "open", "execute", "close", "collect")
            },
            "capabilities": {"multi_turn": True, "calls": True, "usage": True},
        }
    )
    return rook_workspace


def log_lines(ws):
    return ws.log.read_text().splitlines() if ws.log.exists() else []


def test_execute_failure_fails_the_scenario_and_close_still_runs(ws, rook_cli, monkeypatch):
    monkeypatch.setenv("FAIL_EXECUTE", "1")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and "execute is broken today" in s["reason"]
    assert [ln.split()[0] for ln in log_lines(ws)] == ["prepare", "open", "execute", "close"]
    assert r.exit_code == 1


def test_collect_failure_fails_the_scenario(ws, rook_cli, monkeypatch):
    monkeypatch.setenv("FAIL_COLLECT", "1")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and "collect failed" in s["reason"]
    assert s["turns"][0]["output"] == "ok g"  # completed work kept


def test_close_failure_is_reported_and_the_verdict_kept(ws, rook_cli, monkeypatch):
    monkeypatch.setenv("FAIL_CLOSE", "1")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "passed"
    assert any("close failed" in w for w in s["warnings"])
    assert {"phase": "close", "status": "failed"}.items() <= next(
        h for h in s["hooks"] if h["phase"] == "close"
    ).items()


def test_open_failure_is_an_error_without_execute(ws, rook_cli, monkeypatch):
    monkeypatch.setenv("FAIL_OPEN", "1")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["status"] == "error"
    assert "open failed" in r.report["scenarios"][0]["reason"]
    assert [ln.split()[0] for ln in log_lines(ws)] == ["prepare", "open", "close"]


def test_prepare_failure_is_reported_and_no_scenario_runs(ws, rook_cli, monkeypatch):
    monkeypatch.setenv("FAIL_PREPARE", "1")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.report["run"]["prepare"]["status"] == "failed"
    assert r.report["scenarios"][0]["status"] == "error"
    assert (
        "prepare failed: exited with code 1: prepare is broken today"
        in r.report["scenarios"][0]["reason"]
    )
    assert [ln.split()[0] for ln in log_lines(ws)] == ["prepare"]
    assert r.exit_code == 1


def test_a_resume_after_prepare_failed_prepares_again_and_runs_the_scenarios(
    ws, rook_cli, monkeypatch
):
    monkeypatch.setenv("FAIL_PREPARE", "1")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json")
    run_id = first.report["run"]["id"]
    assert first.exit_code == 1 and first.report["scenarios"][0]["status"] == "error"
    assert f"rook run --run {run_id} -w {ws.root} prepares again" in (
        first.report["scenarios"][0]["reason"])
    # a suffix that does not prepare cannot run them: prepare must succeed first
    hole = rook_cli("run", "--run", run_id, "--phases", "collect,judge")
    assert hole.exit_code == 2 and "--phases prepare,open,execute" in hole.stderr, hole.stderr

    monkeypatch.delenv("FAIL_PREPARE")  # the user fixed prepare
    again = rook_cli("run", "--run", run_id, "--json")
    assert again.exit_code == 0, again.stderr
    assert again.report["run"]["prepare"]["status"] == "ok"
    assert [(s["id"], s["status"]) for s in again.report["scenarios"]] == [("s", "passed")]
    assert [ln.split()[0] for ln in log_lines(ws)] == [
        "prepare", "prepare", "open", "execute", "close", "collect"
    ]
    shown = json.loads(rook_cli("runs", "--json").stdout)["runs"][0]
    assert shown["id"] == run_id and shown["complete"] and shown["exit_code"] == 0


def test_a_failed_prepare_run_alone_fails_and_says_why(ws, rook_cli, monkeypatch):
    # rook run --phases prepare whose prepare hook failed exited 0 and showed only a
    # table of pending scenarios: the failure was reported nowhere, and a CI step
    # running prepare alone passed
    monkeypatch.setenv("FAIL_PREPARE", "1")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--phases", "prepare", "--run-name", "p1")
    assert first.exit_code == 1, first.stderr
    assert "rook: error: prepare failed: " in first.stderr, first.stderr
    assert "prepare is broken today" in first.stderr, first.stderr
    assert f"resume with: rook run --run p1 -w {ws.root}" in first.stderr, first.stderr
    monkeypatch.delenv("FAIL_PREPARE")  # the user fixed prepare
    again = rook_cli("run", "--run", "p1", "--json")
    assert again.exit_code == 0 and again.statuses() == {"s": "passed"}, again.stderr


def test_multi_turn_without_a_handle_is_stopped(ws, rook_cli, monkeypatch):
    monkeypatch.setenv("NO_HANDLE", "1")
    ws.profile(
        {
            "id": "p",
            "hooks": {p: "scripts/agent.sh" for p in ("execute", "close", "collect")},
            "capabilities": {"multi_turn": True},
        }
    )
    ws.scenario({"id": "s", "turns": ["one", "two"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "stopped"
    assert "no conversation handle" in s["reason"]
    # turn 2 never sent; close releases what the run made; collect does not run (decided)
    assert [ln.split()[0] for ln in log_lines(ws)] == ["execute", "close"]
    assert r.exit_code == 1


@pytest.mark.parametrize(
    "printed, said",
    [
        ("echo thread_abc123", "open printed 'thread_abc123', which is not a JSON object"),
        ("echo '{\"thread\": \"t-1\"}'", "open printed a JSON object with no conversation (keys: thread)"),
        # console.error / print(..., file=sys.stderr): the handle went to the wrong stream
        ("echo '{\"conversation\": \"c-1\"}' >&2",
         "open printed nothing on standard output, and its handle on standard error"),
    ],
)
def test_a_stopped_scenario_names_what_open_printed_that_is_no_handle(
    rook_workspace, rook_cli, printed, said
):
    # open "returned" its handle as plain text (or under another key): ignored,
    # so turn 1 had none; the reason must not leave the user wondering why
    ws = rook_workspace
    ws.script(
        "agent.sh",
        f"""
        #!/bin/bash
        case "$1" in
          open) {printed} ;;
          execute) cat >/dev/null; echo '{{"output": "ok"}}' ;;
        esac
        exit 0
    """,
    )
    hooks = {"open": "scripts/agent.sh", "execute": "scripts/agent.sh"}
    ws.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["one", "two"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "stopped" and "no conversation handle" in s["reason"], s["reason"]
    assert said in s["reason"], s["reason"]
    assert '{"conversation": "..."}' in s["reason"], s["reason"]


def test_a_stopped_scenario_names_the_keys_execute_printed_with_no_conversation(
    rook_workspace, rook_cli
):
    """An execute script that returned its handle under another key (a typo,
    "conversaton", or its API's thread_id) had the scenario stopped with the
    generic 'no conversation handle' only: the reason now shows the keys it
    printed, as it does for open's."""
    ws = rook_workspace
    ws.script(
        "agent.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] && { cat >/dev/null; echo '{"output": "ok", "conversaton": "t-1"}'; }
        exit 0
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["one", "two"], "criteria": [{"contains": "ok"}]})
    s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == "stopped" and "no conversation handle" in s["reason"], s["reason"]
    assert "execute printed a JSON object with no conversation (keys: conversaton, output)" in s["reason"]
    assert '{"conversation": "..."}' in s["reason"], s["reason"]


@pytest.mark.parametrize("handle", ["false", "true", '""', '"   "', "{}", "[]"])
def test_a_value_that_is_no_handle_stops_a_multi_turn_scenario(rook_workspace, rook_cli, handle):
    """``"conversation": false`` (or blank, or empty) is no conversation handle:
    the scenario is stopped, and nothing shows ``multi_turn``."""
    rook_workspace.script(
        "agent.py",
        f"""
        import json, os, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print('{{"output": "ok", "conversation": {handle}}}')
        """,
        executable=False,
    )
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": "scripts/agent.py"}, "capabilities": {"multi_turn": True}}
    )
    rook_workspace.scenario({"id": "s", "turns": ["one", "two"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "stopped", s
    assert [t["conversation"] for t in s["turns"]] == [None]
    assert r.report["run"]["capabilities"]["observed"] == {}
    assert r.exit_code == 1


def test_a_structured_handle_is_passed_back_as_its_json_text(rook_workspace, rook_cli, tmp_path):
    """A handle that is a number or an object is passed back as JSON text, the
    agent can parse, never as Python's repr of it."""
    seen = tmp_path / "seen"
    rook_workspace.script(
        "agent.mjs",
        f"""
        import fs from 'node:fs';
        const phase = process.argv[2];
        const conv = process.env.ROOK_CONVERSATION;
        fs.appendFileSync({json.dumps(str(seen))}, `${{phase}} ${{conv === undefined ? '-' : conv}}\n`);
        if (phase === 'open') console.log(JSON.stringify({{conversation: 42}}));
        if (phase === 'execute') {{
          fs.readFileSync(0);
          console.log(JSON.stringify({{output: 'ok', conversation: {{thread: 'T-1', n: 2}}}}));
        }}
        """,
        executable=False,
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {p: "scripts/agent.mjs" for p in ("open", "execute", "close")},
            "capabilities": {"multi_turn": True},
        }
    )
    rook_workspace.scenario({"id": "s", "turns": ["one", "two"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}
    handle = '{"thread": "T-1", "n": 2}'
    assert seen.read_text().splitlines() == [
        "open -",
        "execute 42",
        f"execute {handle}",
        f"close {handle}",
    ]
    assert [t["conversation"] for t in r.report["scenarios"][0]["turns"]] == [handle, handle]


def test_a_later_turn_that_returns_no_handle_keeps_the_one_before(rook_workspace, rook_cli, tmp_path):
    """ROOK_CONVERSATION is the latest handle returned (hooks.md): a later turn that
    returns none (or null) keeps the conversation going with the earlier one, up to
    close and collect."""
    seen = tmp_path / "seen"
    rook_workspace.script("agent.py", f"""
        import json, os, sys
        phase, turn = sys.argv[1], os.environ.get("ROOK_TURN", "-")
        with open({str(seen)!r}, "a") as f:
            f.write(f"{{phase}} {{turn}} {{os.environ.get('ROOK_CONVERSATION', 'none')}}\\n")
        if phase == "execute":
            sys.stdin.read()
            answer = {{"output": "ok"}}
            if turn == "1":
                answer["conversation"] = "c-1"
            if turn == "3":
                answer["conversation"] = None
            print(json.dumps(answer))
        if phase == "collect":
            print("{{}}")
    """, executable=False)
    rook_workspace.profile({
        "id": "p",
        "hooks": {p: "scripts/agent.py" for p in ("execute", "close", "collect")},
        "capabilities": {"multi_turn": True},
    })
    rook_workspace.scenario({"id": "s", "turns": ["a", "b", "c", "d"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert seen.read_text().splitlines() == [
        "execute 1 none", "execute 2 c-1", "execute 3 c-1", "execute 4 c-1",
        "close - c-1", "collect - c-1",
    ]


@pytest.mark.parametrize("phase", ["open", "execute"])
def test_a_handle_no_environment_variable_can_hold_fails_the_hook_that_returned_it(
    rook_workspace, rook_cli, phase
):
    rook_workspace.script(
        "agent.sh",
        r"""#!/bin/bash
[ "$1" = execute ] && cat >/dev/null
[ "$1" = "$NUL_IN" ] && echo '{"output": "ok", "conversation": "a\u0000b"}' && exit 0
[ "$1" = execute ] && echo '{"output": "ok", "conversation": "c1"}'
exit 0
""",
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"open": "scripts/agent.sh", "execute": "scripts/agent.sh"},
            "hook_env": {"NUL_IN": phase},
            "capabilities": {"multi_turn": True},
        }
    )
    rook_workspace.scenario({"id": "s", "turns": ["one", "two"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    failed = "open failed" if phase == "open" else "execute turn 1 failed"
    assert s["status"] == "error" and s["reason"].startswith(failed), s["reason"]
    assert "NUL character" in s["reason"] and "raised" not in s["reason"], s["reason"]


def test_capability_never_declared_nor_observed_is_not_runnable(ws, rook_cli):
    ws.profile(  # prepare does not run at all when no selected scenario can
        {"id": "p", "hooks": {"prepare": "scripts/agent.sh", "execute": "scripts/agent.sh"},
         "capabilities": {"calls": False}}
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"not_called": "cancel_order"}]})
    ws.scenario({"id": "t", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    ws.scenario({"id": "u", "goal": "g", "criteria": [{"max_tokens": 10}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "not_runnable", "t": "not_runnable", "u": "not_runnable"}
    table = rook_cli("run").stdout.splitlines()  # no hook ran: 0.00 s (tabulate made it "0")
    seconds = [w[w.index("0/0") + 1] for w in map(str.split, table) if w[:1] in (["s"], ["t"])]
    assert seconds == ["0.00", "0.00"], table
    reasons = {s["id"]: s["reason"] for s in r.report["scenarios"]}
    assert "'calls'" in reasons["s"] and "declares it false" in reasons["s"]
    assert "'multi_turn'" in reasons["t"] and "'usage'" in reasons["u"]
    assert log_lines(ws) == []  # skipped before any hook ran
    assert r.exit_code == 0  # not a failure, but never a pass
    assert r.report["summary"]["passed"] == 0 and r.report["summary"]["coverage"] == 0


def test_a_run_that_decided_nothing_warns_on_stderr_and_exits_0(ws, rook_cli):
    """Every scenario not_runnable or unverifiable: exit 0 (SPEC §10: no decided
    scenario failed), but it looked green in CI with not a word that nothing
    was verified."""
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "capabilities": {"calls": False}}
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"not_called": "cancel_order"}]})
    ws.scenario({"id": "bare", "goal": "g"})  # no criteria: unverifiable
    warning = "rook: warning: no scenario run was decided (1 unverifiable, 1 not_runnable)"
    for args in ([], ["--json"]):
        r = rook_cli("run", *args)
        assert r.exit_code == 0, r.stderr
        assert warning in r.stderr, r.stderr
        assert "nothing was verified" in r.stderr and "exit code 0" in r.stderr, r.stderr
    assert r.report["summary"]["decided"] == 0  # --json: still the one document on stdout
    ws.scenario({"id": "ok", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run")
    assert r.exit_code == 0 and "warning" not in r.stderr, r.stderr
    r = rook_cli("run", "--only", "bare", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0 and "warning" not in r.stderr, r.stderr  # pending: judged later


def test_an_observed_capability_makes_the_scenario_runnable_next_time(ws, rook_cli, monkeypatch):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"called": "lookup"}]})
    ws.scenario({"id": "plain", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--only", "s")
    assert r.statuses() == {"s": "not_runnable"}
    r = rook_cli("run", "--json", "--only", "plain")  # collect shows calls and usage here
    assert r.report["run"]["capabilities"]["observed"] == {
        "multi_turn": True,
        "calls": True,
        "usage": True,
    }
    r = rook_cli("run", "--json", "--only", "s")
    assert r.statuses() == {"s": "passed"}


@pytest.mark.parametrize("phase", ["execute", "collect"])
def test_usage_is_observed_only_from_a_token_count(rook_workspace, rook_cli, monkeypatch, phase):
    """capabilities.md: ``usage`` becomes observed from a number in usage.input,
    usage.output or usage.total (execute or collect); ``usage: {}`` or a cost alone
    is not, yet ``max_cost`` needs no capability and judges that cost."""
    rook_workspace.script(
        "agent.sh",
        r"""#!/bin/bash
case "$1" in
  execute) cat >/dev/null; [ "$PHASE" = execute ] && echo "{\"output\": \"ok\", \"usage\": $USAGE}" || echo '{"output": "ok"}' ;;
  collect) [ "$PHASE" = collect ] && echo "{\"usage\": $USAGE}" ;;
esac
exit 0
""",
    )
    rook_workspace.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in ("execute", "collect")}})
    rook_workspace.scenario({"id": "tokens", "goal": "g", "criteria": [{"max_tokens": 10}]})
    rook_workspace.scenario({"id": "cost", "goal": "g", "criteria": [{"max_cost": 1}]})
    monkeypatch.setenv("PHASE", phase)
    observed = rook_workspace.agent_dir / "profiles" / "p.observed.json"
    for usage in ("{}", '{"cost_usd": 0.5}', '{"input": null}'):
        monkeypatch.setenv("USAGE", usage)
        r = rook_cli("run", "--json")
        assert r.report["run"]["capabilities"]["observed"] == {}, (usage, r.report["run"])
        assert not json.loads(observed.read_text()).get("usage"), usage
        assert r.statuses()["tokens"] == "not_runnable", usage
    assert r.statuses()["cost"] == "unverifiable"  # no cost reported: never a pass
    monkeypatch.setenv("USAGE", '{"cost_usd": 0.5}')
    assert rook_cli("run", "--json", "--only", "cost").statuses() == {"cost": "passed"}
    for count in ("input", "output", "total"):
        observed.unlink()
        monkeypatch.setenv("USAGE", f'{{"{count}": 3}}')
        r = rook_cli("run", "--json", "--only", "cost")
        assert r.report["run"]["capabilities"]["observed"] == {"usage": True}, count
        assert json.loads(observed.read_text()) == {"usage": True}, count
        runnable = rook_cli("run", "--json", "--only", "tokens").statuses()["tokens"]
        assert runnable == ("passed" if count == "total" else "unverifiable"), count


def test_turn_scoping(ws, rook_cli):
    ws.scenario(
        {
            "id": "s",
            "turns": ["alpha", "beta"],
            "criteria": [
                {"contains": "alpha", "turn": 1},
                {"contains": "beta"},  # default: the last turn
                {"contains": "ok", "turn": "all"},
                {"not_contains": "alpha"},
                {"called": "lookup"},  # from collect, across all turns
            ],
        }
    )
    r = rook_cli("run", "--json")
    crit = r.report["scenarios"][0]["criteria"]
    assert [c["status"] for c in crit] == ["passed"] * 5, crit
    ws.scenario(
        {"id": "s", "turns": ["alpha", "beta"], "criteria": [{"contains": "alpha", "turn": "all"}]}
    )
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["criteria"][0]["status"] == "failed"
    assert "turn 2" in r.report["scenarios"][0]["criteria"][0]["reason"]


def _max_overlap(intervals):
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_scenarios_in_flight(
    rook_workspace, rook_cli, tmp_path, monkeypatch, concurrency
):
    ws = rook_workspace
    spans = tmp_path / "spans"
    monkeypatch.setenv("SPANS", str(spans))
    ws.script(
        "slow.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        a=$(date +%s.%N); sleep 0.4; b=$(date +%s.%N)
        echo "$a $b" >> "$SPANS"
        echo '{"output": "ok"}'
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/slow.sh"}, "concurrency": 1})
    for i in range(6):
        ws.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--concurrency", str(concurrency))
    assert r.exit_code == 0
    intervals = [tuple(map(float, ln.split())) for ln in spans.read_text().splitlines()]
    assert len(intervals) == 6
    assert _max_overlap(intervals) == concurrency


@pytest.mark.parametrize("concurrency", [1, 4])
def test_every_scenario_run_finds_its_own_state_dir_and_is_recorded(
    rook_workspace, rook_cli, concurrency
):
    # State directories are made ahead while hooks run, and records are written
    # after the next hook starts: neither may be missing when it matters.
    ws = rook_workspace
    ws.script(
        "state.sh",
        """
        #!/bin/bash
        set -e
        [ -d "$ROOK_STATE_DIR" ] || { echo "no state dir $ROOK_STATE_DIR" >&2; exit 1; }
        echo "$1" >> "$ROOK_STATE_DIR/phases"
        [ "$1" = execute ] && echo '{"output": "ok"}'
        exit 0
    """,
    )
    hooks = {p: "scripts/state.sh" for p in ("open", "execute", "close")}
    ws.profile({"id": "p", "hooks": hooks, "concurrency": concurrency})
    for i in range(24):
        ws.scenario({"id": f"s{i:02d}", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--repeat", "2")
    assert r.exit_code == 0, r.stderr
    run = ws.run_dir(r.report["run"]["id"])
    keys = [f"s{i:02d}.{k}" for i in range(24) for k in (1, 2)]
    for key in keys:
        assert (run / "state" / key / "phases").read_text().split() == ["open", "execute", "close"]
        record = json.loads((run / "scenarios" / f"{key}.json").read_text())
        assert record["status"] == "passed"


def test_split_run_keeps_state_and_resumes_with_collect_and_judge(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    ws = rook_workspace
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(probe_dir))
    hook = probes.install(ws, "bash")
    ws.profile(
        {
            "id": "p",
            "hooks": {p: hook for p in ("prepare", "open", "execute", "close", "collect")},
            "capabilities": {"multi_turn": True},
        }
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0
    run_id = r.report["run"]["id"]
    assert r.report["scenarios"][0]["status"] == "pending"
    assert f"rook run --run {run_id} --phases collect,judge" in r.stderr
    first = probes.read(probe_dir)
    assert [c.phase for c in first] == ["prepare", "open", "execute", "close"]
    # a suffix that skips collect leaves a hole across invocations: refused, nothing run
    record = (ws.run_dir(run_id) / "scenarios" / "s.1.json").read_bytes()
    hole = rook_cli("run", "--json", "--run", run_id, "--phases", "judge")
    assert hole.exit_code == 2 and hole.stdout == "", hole.stdout
    assert "no scenario run of run" in hole.stderr and "collect for s)" in hole.stderr
    assert f"rook run --run {run_id} --phases collect,judge" in hole.stderr, hole.stderr
    assert len(probes.read(probe_dir)) == 4
    assert (ws.run_dir(run_id) / "scenarios" / "s.1.json").read_bytes() == record
    r = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert r.statuses() == {"s": "passed"}
    spooled = r.report["scenarios"]  # entries made as this invocation recorded them
    calls = probes.read(probe_dir)
    assert [c.phase for c in calls] == ["prepare", "open", "execute", "close", "collect"]
    collect = calls[-1]
    assert collect.env["ROOK_STATE_DIR"] == first[1].env["ROOK_STATE_DIR"]
    assert collect.env["ROOK_SESSION"] == first[1].env["ROOK_SESSION"]
    assert collect.env["ROOK_CONVERSATION"] == "conv-1"
    assert collect.env["ROOK_RUN_ID"] == run_id
    # exactly collect's variables of the contract, though its run started in another process
    assert {k for k in collect.env if k.startswith("ROOK_")} == {
        "ROOK_HOOK", "ROOK_WORKSPACE", "ROOK_PROJECT", "ROOK_AGENT", "ROOK_STATE_DIR",
        "ROOK_RUN_STATE_DIR", "ROOK_RUN_ID", "ROOK_SCENARIO_ID", "ROOK_SESSION",
        "ROOK_CONVERSATION",
    }  # fmt: skip
    assert collect.env["ROOK_RUN_STATE_DIR"] == first[0].env["ROOK_RUN_STATE_DIR"]
    assert collect.env["ROOK_SCENARIO_ID"] == "s" and collect.env["ROOK_HOOK"] == "collect"
    # running it again repeats nothing
    r = rook_cli("run", "--json", "--run", run_id)
    assert len(probes.read(probe_dir)) == 5 and r.statuses() == {"s": "passed"}
    # ... and reports the records of earlier invocations as the spooled entries were
    rebuilt = rook_cli("report", run_id, "--rebuild", "--json")
    assert r.report["scenarios"] == spooled == rebuilt.report["scenarios"]


def test_resume_with_an_unknown_run_id(ws, rook_cli):
    ws.scenario({"id": "s", "goal": "g"})
    r = rook_cli("run", "--run", "nope")
    assert r.exit_code == 2 and "--run nope: no such run" in r.stderr


def test_a_killed_run_resumes_without_repeating_finished_scenarios(rook_workspace, tmp_path):
    ws = rook_workspace
    log = tmp_path / "log"
    ws.script(
        "agent.sh",
        f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        g=$(cat)
        echo "$g" >> {log}
        [ "$g" = slow ] && [ ! -e {tmp_path}/fast-now ] && echo $$ > {tmp_path}/slow.pid && sleep 300
        echo '{{"output": "ok"}}'
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid, goal in (("a1", "fast"), ("a2", "fast"), ("a3", "slow"), ("a4", "fast")):
        ws.scenario({"id": sid, "goal": goal, "criteria": [{"contains": "ok"}]})
    rook = [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json"]
    proc = subprocess.Popen(
        rook, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and "slow" in log.read_text():
            break
        time.sleep(0.05)
    runs = list(ws.runs_dir.iterdir())
    assert len(runs) == 1
    os.kill(proc.pid, signal.SIGKILL)  # rook dies at once; its hooks are in their own groups
    proc.communicate()
    run_id = runs[0].name
    done = sorted(p.name for p in (runs[0] / "scenarios").glob("*.json"))
    assert done == ["a1.1.json", "a2.1.json"]
    assert not list(runs[0].rglob(".*.tmp"))
    (tmp_path / "fast-now").touch()
    out = subprocess.run(
        [*rook[:-1], "--json", "--run", run_id], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert {s["id"]: s["status"] for s in report["scenarios"]} == dict.fromkeys(
        ["a1", "a2", "a3", "a4"], "passed"
    )
    assert log.read_text().split() == ["fast", "fast", "slow", "slow", "fast"]
    assert Path(report["run"]["dir"]).name == run_id
    os.killpg(
        int((tmp_path / "slow.pid").read_text()), signal.SIGKILL
    )  # the orphan of the killed rook


def kill_during_close(ws, tmp_path):
    """Start ``rook run``, SIGKILL it while its close hook (which writes
    close.pid and sleeps) runs, kill that hook too; returns the run directory."""
    rook = [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json"]
    proc = subprocess.Popen(rook, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (tmp_path / "close.pid").exists():
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    os.killpg(int((tmp_path / "close.pid").read_text()), signal.SIGKILL)
    (run_dir,) = ws.runs_dir.iterdir()
    return run_dir


def test_a_run_killed_during_close_resumes_after_execute(rook_workspace, tmp_path):
    # The goal is sent once: a record is written after each phase that another hook follows.
    ws = rook_workspace
    log = tmp_path / "log"
    ws.script(
        "agent.sh",
        f"""
        #!/bin/bash
        echo "$1" >> {log}
        case "$1" in
          execute) cat >/dev/null; echo '{{"output": "ok", "conversation": "c1"}}' ;;
          close) [ -e {tmp_path}/fast-now ] || {{ echo $$ > {tmp_path}/close.pid; sleep 300; }} ;;
          collect) echo '{{"calls": []}}' ;;
        esac
    """,
    )
    hooks = {p: "scripts/agent.sh" for p in ("prepare", "open", "execute", "close", "collect")}
    ws.profile({"id": "p", "hooks": hooks})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    run_dir = kill_during_close(ws, tmp_path)
    record = json.loads((run_dir / "scenarios" / "s.1.json").read_text())
    assert record["phases_done"] == ["open", "execute"] and not record.get("final")
    assert json.loads((run_dir / "run.json").read_text())["prepare"]["status"] == "ok"
    (tmp_path / "fast-now").touch()
    rook = [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json"]
    out = subprocess.run([*rook, "--run", run_dir.name], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scenarios"][0]["status"] == "passed"
    # prepare, open and execute ran once; close again (it never finished), then collect
    assert log.read_text().split() == ["prepare", "open", "execute", "close", "close", "collect"]


def test_prepare_does_not_run_when_no_scenario_can(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in ("prepare", "execute")}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"not_called": "refund"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "not_runnable"}
    assert log_lines(ws) == []


@pytest.mark.parametrize(
    "phases, hint",
    [
        ("prepare", "--phases open,execute,close,collect,judge"),
        ("prepare,open,execute", "--phases close,collect,judge"),
        ("prepare,open,execute,close,collect", "--phases judge"),
    ],
)
def test_the_resume_hint_names_the_phases_still_to_run(ws, rook_cli, phases, hint):
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--phases", phases)
    run_id = r.report["run"]["id"]
    assert f"resume with: rook run --run {run_id} {hint} -w {ws.root}\n" in r.stderr
    r = rook_cli("run", "--json", "--run", run_id, *hint.split())
    assert r.statuses() == {"s": "passed"}
    assert [line.split()[0] for line in log_lines(ws)] == [
        "prepare", "open", "execute", "close", "collect"
    ]


MIDDLE = "neither starts a run (a prefix, from prepare) nor finishes one (a suffix, to judge)"
HOLE = "a selection never has a hole (a phase it skips would never run for its scenarios)"


@pytest.mark.parametrize(
    "phases, why, instead",
    [
        # a piece from the middle has no hole: "never one with a hole" said what it is not
        ("execute", MIDDLE, "--phases prepare,open,execute (then --run ID --phases "
         "close,collect,judge), or --run ID --phases execute,close,collect,judge"),
        ("open,execute,close", MIDDLE, "--phases prepare,open,execute,close (then --run ID "
         "--phases collect,judge), or --run ID --phases open,execute,close,collect,judge"),
        ("prepare,execute", "leaves out open, between prepare and execute: " + HOLE,
         "write --phases prepare,open,execute\n"),
        ("execute,judge", "leaves out close,collect, between execute and judge: " + HOLE,
         "write --run ID --phases execute,close,collect,judge (to finish the run ID)\n"),
    ],
)
def test_a_refused_phase_selection_says_what_is_wrong_with_it_and_what_to_write(
    ws, rook_cli, phases, why, instead
):
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--phases", phases)
    assert r.exit_code == 2 and log_lines(ws) == [], r.stderr
    assert f"rook: error: --phases {phases}: {why}" in r.stderr, r.stderr
    assert instead in r.stderr, r.stderr
    if phases == "execute":  # the commands it names work as written
        run_id = rook_cli("run", "--json", "--phases", "prepare,open").report["run"]["id"]
        r = rook_cli("run", "--json", "--run", run_id, "--phases", "execute,close,collect,judge")
        assert r.statuses() == {"s": "passed"}, r.stderr


def test_the_resume_hint_finishes_scenario_runs_an_only_left_behind(ws, rook_cli):
    """A later invocation narrowed with --only goes further for some scenario runs:
    the hint names the phases the one furthest behind still needs, so it finishes the run."""
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    run_id = rook_cli("run", "--json", "--phases", "prepare,open,execute").report["run"]["id"]
    r = rook_cli("run", "--json", "--run", run_id, "--only", "b", "--phases",
                 "prepare,open,execute,close")
    hint = "--phases close,collect,judge"
    assert f"resume with: rook run --run {run_id} {hint} -w {ws.root}\n" in r.stderr, r.stderr
    r = rook_cli("run", "--json", "--run", run_id, *hint.split())
    assert r.statuses() == {"a": "passed", "b": "passed"}, r.stderr


def test_a_pending_runs_progress_line_says_what_is_still_to_run(ws, rook_cli):
    # the table said "not finished: ..." while the progress line had no reason at all
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0
    assert "PENDING      s  not finished: collect, judge still to run\n" in r.stderr


def test_a_run_continued_with_nothing_left_to_run_says_so(ws, rook_cli):
    # rook run --run-name nightly, run again the next night, silently showed last
    # night's results as if the agent had been tested again
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "--run-name", "nightly").exit_code == 0
    for flags in (["--run-name", "nightly"], ["--run", "nightly", "--json"]):
        r = rook_cli("run", *flags)
        assert r.exit_code == 0
        assert (
            "rook: note: run nightly had nothing left to run: every selected scenario run "
            "was finished already, and its results are shown as recorded; rook run without "
            "--run or --run-name starts a new run\n"
        ) in r.stderr
    assert [line.split()[0] for line in log_lines(ws)].count("execute") == 1
    r = rook_cli("run", "--run-name", "other", "--phases", "prepare,open,execute,close")
    assert "nothing left to run" not in r.stderr
    assert "nothing left to run" not in rook_cli("run", "--run", "other").stderr


def test_a_new_run_must_start_with_prepare(ws, rook_cli):
    ws.scenario({"id": "s", "goal": "g"})
    r = rook_cli("run", "--phases", "collect,judge")
    assert r.exit_code == 2
    assert "--phases collect,judge: a new run starts with prepare" in r.stderr
    assert not ws.runs_dir.exists() or not list(ws.runs_dir.iterdir())


def test_run_takes_latest_and_a_prefix_like_every_command(ws, rook_cli, monkeypatch):
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute").report["run"]["id"]
    rook_cli("run", "--json", "--run-name", "other", "--phases", "prepare")
    r = rook_cli("run", "--json", "--run", "latest~1", "--phases", "close,collect,judge")
    assert r.report["run"]["id"] == first and r.statuses() == {"s": "passed"}
    r = rook_cli("run", "--json", "--run", first[:-3])
    assert r.report["run"]["id"] == first
    r = rook_cli("run", "--run", "latest~5")
    assert r.exit_code == 2 and "--run latest~5: there are only 2 runs" in r.stderr


@pytest.mark.parametrize("broken", ["open", "execute"])
def test_a_failure_before_a_cut_off_close_still_decides_the_resumed_run(
    rook_workspace, rook_cli, tmp_path, broken
):
    ws = rook_workspace
    log = tmp_path / "log"
    ws.script(
        "agent.sh",
        f"""
        #!/bin/bash
        echo "$1" >> {log}
        [ "$1" = {broken} ] && {{ echo "{broken} is down" >&2; exit 1; }}
        case "$1" in
          open) echo '{{"conversation": "c1"}}' ;;
          execute) cat >/dev/null; echo '{{"output": "ok"}}' ;;
          close) [ -e {tmp_path}/fast-now ] || {{ echo $$ > {tmp_path}/close.pid; sleep 300; }} ;;
        esac
    """,
    )
    ws.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in ("open", "execute", "close")}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    run_dir = kill_during_close(ws, tmp_path)
    cut = rook_cli("report", run_dir.name, "--json").report["scenarios"][0]
    # no end yet: the time up to its last checkpoint (open, execute), never negative
    assert cut["status"] == "pending" and 0 < cut["seconds"] < 5
    (tmp_path / "fast-now").touch()
    r = rook_cli("run", "--json", "--run", run_dir.name)
    assert r.statuses() == {"s": "error"} and r.exit_code == 1
    assert f"{broken} is down" in r.report["scenarios"][0]["reason"]
    ran = log.read_text().split()
    assert ran.count("open") == 1 and ran.count("execute") == (broken == "execute")
    assert ran[-2:] == ["close", "close"]


def test_an_interpreter_found_on_the_hooks_own_path(rook_workspace, rook_cli, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    interp = bin_dir / "myinterp"
    interp.write_text('#!/bin/sh\nexec /bin/sh "$@"\n')
    interp.chmod(0o755)
    ws = rook_workspace
    ws.script("agent", "#!/usr/bin/env myinterp\ncat >/dev/null\necho '{\"output\": \"ok\"}'\n")
    path = f"{bin_dir}:{os.environ['PATH']}"
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent"}, "hook_env": {"PATH": path}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "--json").statuses() == {"s": "passed"}
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent"}})  # not on Rook's PATH
    r = rook_cli("run")
    assert r.exit_code == 2 and "'myinterp'" in r.stderr and "not on PATH" in r.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node")
def test_an_interpreter_off_the_hooks_path_is_not_called_uninstalled(rook_workspace, rook_cli, tmp_path):
    """A hook_env PATH without node: 'needs node, which is not installed' when Rook's
    own PATH has it sent the user to install what they had; it names both PATHs."""
    ws = rook_workspace
    ws.script("a.mjs", "console.log('{}')", executable=False)
    ws.script("b", "#!/usr/bin/env node\nconsole.log('{}')\n")
    node_dir = os.path.dirname(shutil.which("node"))
    for hook, needle in (("a.mjs", "needs 'node', which"), ("b", "its interpreter 'node' (from")):
        ws.profile({"id": "p", "hooks": {"execute": f"scripts/{hook}"},
                    "hook_env": {"PATH": str(tmp_path)}})
        r = rook_cli("run")
        assert r.exit_code == 2 and needle in r.stderr, r.stderr
        assert "not installed" not in r.stderr, r.stderr
        assert f"is not on the PATH the hooks get ({tmp_path})" in r.stderr, r.stderr
        assert f"Rook's own PATH has it ({node_dir}/node)" in r.stderr, r.stderr
    # with Rook's PATH without it either, it is not installed, as before
    r = rook_cli("run", env={"PATH": str(tmp_path)})
    assert r.exit_code == 2 and "is not installed (not on PATH)" in r.stderr, r.stderr


def collect_profile(ws):
    """One script for execute and collect, every capability declared."""
    ws.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"},
            "capabilities": {"multi_turn": True, "calls": True, "usage": True},
        }
    )


def test_collects_calls_and_usage_are_the_whole_scenarios_not_added_to_the_turns(
    rook_workspace, rook_cli
):
    """The contract: collect's reply "is the complete evidence surface". Calls
    a trace lists again are not counted twice; its usage replaces the turns'."""
    rook_workspace.script(
        "agent.sh",
        r"""#!/bin/bash
case "$1" in
  execute) cat >/dev/null
    printf '{"output": "ok", "conversation": "c1", "calls": [{"name": "t%s"}], "usage": {"input": 10, "output": 1}}\n' "$ROOK_TURN" ;;
  collect) echo '{"calls": [{"name": "t1"}, {"name": "t2"}, {"name": "late"}], "usage": {"input": 7, "output": 2}}' ;;
esac
""",
    )
    collect_profile(rook_workspace)
    rook_workspace.scenario(
        {
            "id": "s",
            "turns": ["one", "two"],
            "criteria": [
                {"max_calls": 3},
                {"called": "late"},
                {"max_tokens": {"input": 7}},
                {"max_calls": 1, "turn": 2},  # one turn: its own calls alone
            ],
        }
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert [c["status"] for c in s["criteria"]] == ["passed"] * 4, s["criteria"]


def test_collect_never_drops_a_call_or_a_count_the_turns_reported(
    rook_workspace, rook_cli, monkeypatch
):
    """Collect's calls are the whole scenario's, but a call a turn reported that
    collect's list lacks (a trace that came back empty or late) was still made:
    it is never dropped, so a forbidden call cannot pass ``not_called``. Collect's
    usage replaces the counts it has; a count (or a cost) it lacks keeps the turns'."""
    rook_workspace.script(
        "agent.sh",
        r"""#!/bin/bash
case "$1" in
  execute) cat >/dev/null
    printf '{"output": "ok", "conversation": "c1", "calls": [{"name": "t%s", "arguments": {"n": %s}}], "usage": {"input": 10, "output": 4, "cost_usd": 0.5}}\n' "$ROOK_TURN" "$ROOK_TURN" ;;
  collect) echo "$COLLECT" ;;
esac
""",
    )
    collect_profile(rook_workspace)
    rook_workspace.scenario(
        {
            "id": "s",
            "turns": ["one", "two"],
            "criteria": [
                {"not_called": "t1"},  # turn 1 reported it: fails whatever collect says
                {"max_calls": 2},  # t1, t2 and late: 3 calls
                {"call_order": ["t1", "t2", "late"]},
                {"max_tokens": {"output": 7}},  # the turns' 8: collect has no output count
                {"max_tokens": {"input": 7}},  # collect's 7 replaces the turns' 20
            ],
        }
    )
    collect = '{"calls": [{"name": "t2", "arguments": {"n": 2}}, {"name": "late"}], "usage": {"input": 7}}'
    monkeypatch.setenv("COLLECT", collect)
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert [c["status"] for c in s["criteria"]] == [
        "failed",
        "failed",
        "passed",
        "failed",
        "passed",
    ], s["criteria"]
    assert "3 calls" in s["criteria"][1]["reason"]
    assert "output 8/7" in s["criteria"][3]["reason"]
    # an empty trace is no evidence against what the turns reported
    monkeypatch.setenv("COLLECT", '{"calls": [], "usage": {"cost_usd": 0.01}}')
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert [c["status"] for c in s["criteria"]][:2] == ["failed", "passed"], s["criteria"]
    assert "output 8/7" in s["criteria"][3]["reason"], s["criteria"]


def test_a_trace_of_tens_of_thousands_of_calls_of_one_tool_is_judged(rook_workspace, rook_cli):
    """A coding agent's trace: 5,000 calls of one tool, each reported by the turn
    and listed again by collect. Each reported call was compared with every
    collect call of its name (25 million comparisons a criterion, half an hour at 100,000
    calls: the run seemed hung, and a second Ctrl-C could not end it). The calls
    are matched by what they are now; the verdicts are the same: a call both
    report is counted once, one collect lacks is still counted."""
    rook_workspace.script(
        "agent.py",
        """
        import json, sys
        calls = [{"name": "read_file", "arguments": {"path": f"f{i}.py"}} for i in range(5000)]
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "ok", "calls": calls + [{"name": "rm", "arguments": {}}]}))
        elif sys.argv[1] == "collect":  # the same calls, but for rm, and the arguments' keys reordered
            print(json.dumps({"calls": [{"arguments": c["arguments"], "name": c["name"]} for c in calls]}))
        """,
        executable=False,
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/agent.py", "collect": "scripts/agent.py"},
            "capabilities": {"calls": True},
        }
    )
    rook_workspace.scenario(
        {
            "id": "s",
            "goal": "tidy up",
            "criteria": [
                {"max_calls": 5001},
                {"called": {"name": "read_file", "arguments": {"path": "f4999.py"}}},
                {"call_order": ["read_file", "rm"]},
                {"not_called": "rm"},
            ],
        }
    )
    r = rook_cli("run", "--json")
    criteria = r.report["scenarios"][0]["criteria"]
    assert [c["status"] for c in criteria] == ["passed", "passed", "passed", "failed"], criteria


def test_collect_counts_are_never_checked_against_the_turns_stale_total(
    rook_workspace, rook_cli, monkeypatch
):
    """A total is the sum of the input and output counts: when collect gives its
    own input and output (the whole scenario's, with what the turns missed), the
    turns' total is not that sum any more and must not stand in for it, or
    ``max_tokens`` passes on 40 tokens where collect counted 1,100."""
    rook_workspace.script(
        "agent.sh",
        r"""#!/bin/bash
case "$1" in
  execute) cat >/dev/null
    echo '{"output": "ok", "conversation": "c1", "usage": {"input": 10, "output": 10, "total": 20}}' ;;
  collect) echo "$COLLECT" ;;
esac
""",
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"},
            "capabilities": {"multi_turn": True, "usage": True},
        }
    )
    rook_workspace.scenario(
        {"id": "s", "turns": ["one", "two"], "criteria": [{"max_tokens": 100}]}
    )
    monkeypatch.setenv("COLLECT", '{"usage": {"input": 500, "output": 600}}')
    r = rook_cli("run", "--json")
    c = r.report["scenarios"][0]["criteria"][0]
    assert c["status"] == "failed", c
    assert "total 1100/100" in c["reason"], c
    # a collect that gives no count of its own keeps the turns' (cost only)
    monkeypatch.setenv("COLLECT", '{"usage": {"cost_usd": 0.01}}')
    r = rook_cli("run", "--json")
    c = r.report["scenarios"][0]["criteria"][0]
    assert (c["status"], c["reason"]) == ("passed", "tokens total 40/100"), c


def test_collect_calls_are_merged_in_time_proportional_to_the_trace(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """Merging collect's calls with the turns' (5c88b34) compared every reported
    call with every collected one: a trace of 5,000 calls the turns also reported
    took seconds to judge (20,000: over half a minute). They are matched by name."""
    import time

    n = 20_000
    calls = json.dumps([{"name": f"t{i}", "arguments": {"n": i}} for i in range(n)])
    rook_workspace.script(
        "agent.sh",
        r"""#!/bin/bash
case "$1" in
  execute) cat >/dev/null; echo "{\"output\": \"ok\", \"calls\": $(cat "$CALLS")}" ;;
  collect) echo "{\"calls\": $(cat "$CALLS")}" ;;
esac
""",
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"},
            "capabilities": {"calls": True},
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"max_calls": n}]})
    (tmp_path / "calls.json").write_text(calls)
    monkeypatch.setenv("CALLS", str(tmp_path / "calls.json"))
    start = time.monotonic()
    r = rook_cli("run", "--json")
    took = time.monotonic() - start
    c = r.report["scenarios"][0]["criteria"][0]
    assert (c["status"], c["reason"]) == ("passed", f"{n} calls (max {n})"), c
    assert took < 15, took
