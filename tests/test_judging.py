"""Judged criteria: rubric through a real judge profile, plugin judges, configuration errors."""

from __future__ import annotations

import json
import re
import sys

import pytest

from rook_core.hookspecs import hookimpl
from rook_core.models import PASSED, Verdict

AGENT = """
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    goal = sys.stdin.read()
    print(json.dumps({
        "output": f"Your refund for {goal} was issued; it arrives Monday.",
        "calls": [{"name": "issue_refund", "arguments": {"id": goal}}],
        "usage": {"input": 100, "output": 20},
    }))
"""

# A judge profile's hook. The rubric "must mention WORD" passes when WORD is in
# an answer. JUDGE_MODE makes it misbehave; JUDGE_LOG records what it was sent.
JUDGE = r"""
    #!/usr/bin/env python3
    import json, os, re, sys
    phase, log = sys.argv[1], os.environ.get("JUDGE_LOG")
    if log:
        with open(os.path.join(log, "phases"), "a") as fh:
            fh.write(phase + "\n")
    if phase != "execute":
        sys.exit(0)
    prompt = sys.stdin.read()
    if log:
        n = len([f for f in os.listdir(log) if f.endswith(".prompt")])
        with open(os.path.join(log, f"{n}.prompt"), "w") as fh:
            fh.write(prompt)
        with open(os.path.join(log, f"{n}.env"), "w") as fh:
            json.dump({k: v for k, v in os.environ.items() if k.startswith("ROOK_")}, fh)
    rubric = prompt.split("RUBRIC:\n", 1)[1].split("\n\nEVIDENCE", 1)[0]
    doc = json.loads(re.search(r"^EVIDENCE[^\n]*\n(.*?)\n\nAnswer with", prompt, re.S | re.M).group(1))
    word = rubric.rsplit(" ", 1)[-1].strip().casefold()
    ok = any(word in (t["output"] or "").casefold() for t in doc["turns"])
    verdict = {"pass": ok, "reason": f"{'mentions' if ok else 'does not mention'} {word}",
               "score": 1.0 if ok else 0.2}
    mode = os.environ.get("JUDGE_MODE", "normal")
    if mode.startswith("score:"):
        verdict["score"] = float(mode[6:])
    if mode == "noscore":
        del verdict["score"]
    if mode == "blank-reason":
        verdict["reason"] = " "
    if mode == "leak":
        verdict["reason"] += " token=" + os.environ["JUDGE_TOKEN"]
    if mode == "long":  # a judge that explains at length: 120 KB
        verdict["reason"] += ". " + "because " * 15000 + "THE-END"
    answers = {
        "garbage": "yes, looks fine to me",
        "string-pass": json.dumps({"pass": "true", "reason": "ok"}),
        "no-reason": json.dumps({"pass": True}),
        "array": json.dumps([verdict]),
        "bad-score": json.dumps({**verdict, "score": "high"}),
        "true-score": json.dumps({**verdict, "score": True}),
        "null-reason": json.dumps({**verdict, "reason": None}),
        "text": json.dumps(json.dumps(verdict)),
        "fenced": "```json\n" + json.dumps(verdict) + "\n```",
        "huge-score": '{"pass": true, "reason": "ok", "score": 1e999}',
        "nan-score": '{"pass": true, "reason": "ok", "score": NaN}',
        "fence-and-more": "```json\n" + json.dumps(verdict) + "\n```\nHope this helps!",
        "two-objects": json.dumps(verdict) + "\n" + json.dumps(verdict),
        "said-first": "Here is my verdict: " + json.dumps(verdict),
    }
    if mode == "exit3":
        sys.stderr.write("judge model unavailable\n")
        sys.exit(3)
    if mode == "no-output":
        print(json.dumps({"verdict": verdict}))
    elif mode == "object-output":
        print(json.dumps({"output": verdict}))
    else:
        print(json.dumps({"output": answers.get(mode, json.dumps(verdict))}))
"""


def setup_agent(ws, judge: bool = True, scenarios: list | None = None):
    ws.script("agent.py", AGENT)
    ws.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                "capabilities": {"calls": True, "usage": True}})
    if judge:
        ws.script("judge.py", JUDGE)
        ws.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}}, active=False)
    for s in scenarios or []:
        ws.scenario(s)


@pytest.fixture
def judge_log(tmp_path, monkeypatch):
    d = tmp_path / "judge-log"
    d.mkdir()
    monkeypatch.setenv("JUDGE_LOG", str(d))
    return d


def criteria_of(report, sid):
    return next(s for s in report["scenarios"] if s["id"] == sid)["criteria"]


def test_rubric_is_judged_by_the_judge_profile_and_recorded(rook_workspace, rook_cli, judge_log):
    setup_agent(rook_workspace, scenarios=[
        {"id": "good", "goal": "ORD-1", "criteria": [{"rubric": "must mention monday"}]},
        {"id": "bad", "goal": "ORD-2", "criteria": [{"rubric": "must mention tuesday"}]},
    ])
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"good": "passed", "bad": "failed"}
    assert r.report["run"]["judge_profile"]["id"] == "grader"

    good = criteria_of(r.report, "good")[0]
    assert good["type"] == "rubric" and good["status"] == "passed"
    assert "mentions monday" in good["reason"]
    assert good["evidence"]["score"] == 1.0
    judge = good["evidence"]["judge"]
    assert judge["profile"] == "grader"
    assert judge["answer"] == {"pass": True, "reason": "mentions monday", "score": 1.0}
    assert [h["phase"] for h in judge["hooks"]] == ["execute"]
    assert judge["hooks"][0]["exit_code"] == 0
    # the prompt carried the rubric and the evidence: goal, output, calls, usage
    prompt = judge["prompt"]
    assert "must mention monday" in prompt and "ORD-1" in prompt
    assert "arrives Monday" in prompt and "issue_refund" in prompt and '"input": 100' in prompt
    assert criteria_of(r.report, "bad")[0]["status"] == "failed"

    # the judge hook ran under the hook contract, recorded in the run
    envs = [json.loads(p.read_text()) for p in sorted(judge_log.glob("*.env"))]
    assert len(envs) == 2
    for env in envs:
        assert env["ROOK_HOOK"] == "execute" and env["ROOK_TURN"] == "1"
        assert env["ROOK_RUN_ID"] == r.report["run"]["id"]
        assert env["ROOK_SCENARIO_ID"] in ("good", "bad")
    stored = rook_workspace.record(r.report["run"]["id"], "good.1")
    assert stored["criteria"][0]["evidence"]["judge"]["answer"]["pass"] is True


def test_judge_profile_from_config_yaml_and_its_lifecycle(rook_workspace, rook_cli, judge_log):
    setup_agent(rook_workspace, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
        {"id": "b", "goal": "B", "criteria": [{"rubric": "must mention monday"}]},
    ])
    rook_workspace.profile({"id": "grader", "hooks": {p: "scripts/judge.py" for p in
                                                      ("prepare", "open", "execute", "close")}},
                           active=False)
    (rook_workspace.root / ".testmuai" / "rook" / "config.yaml").write_text(
        "judge_profile: grader\n")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"a": "passed", "b": "passed"}
    phases = (judge_log / "phases").read_text().split()
    assert phases.count("prepare") == 1  # once per run, on first use
    assert phases.count("open") == phases.count("execute") == phases.count("close") == 2
    run_dir = rook_workspace.run_dir(r.report["run"]["id"])
    assert (run_dir / "judge" / "prepare.json").is_file()


def test_a_judge_profile_whose_prepare_fails_stops_no_run(rook_workspace, rook_cli, tmp_path):
    """judges.md: a failed prepare of the judge profile stops no run: the agent's
    scenarios run and are kept, each judgement is an error naming the judge
    profile and what failed, and judge/prepare.json records it."""
    log = tmp_path / "judge-phases"
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "plain", "goal": "A", "criteria": [{"contains": "refund"}]},
        {"id": "tone", "goal": "B", "criteria": [{"contains": "refund"},
                                                 {"rubric": "must mention monday"}]}])
    rook_workspace.script("grader.sh", f"""
        #!/bin/bash
        echo "$1" >> {log}
        [ "$1" = prepare ] && {{ echo "no judge model today" >&2; exit 3; }}
        [ "$1" = execute ] && echo '{{"output": {{"pass": true, "reason": "fine"}}}}'
        exit 0
    """)
    rook_workspace.profile({"id": "grader", "hooks": {
        "prepare": "scripts/grader.sh", "execute": "scripts/grader.sh"}}, active=False)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"plain": "passed", "tone": "error"}, r.stderr
    passed, judged = criteria_of(r.report, "tone")
    assert passed["status"] == "passed" and judged["status"] == "error"
    assert judged["reason"].startswith(
        "judge profile 'grader': its prepare hook failed: exited with code 3: "
        "no judge model today"), judged["reason"]
    assert log.read_text().split() == ["prepare"]  # nothing judged without it
    prepared = json.loads((rook_workspace.run_dir(r.report["run"]["id"]) / "judge"
                           / "prepare.json").read_text())
    assert (prepared["status"], prepared["exit_code"]) == ("failed", 3), prepared


def test_the_judge_profiles_close_gets_the_handle_its_execute_returned(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """The judge profile's hooks follow the agent's contract: close gets the
    handle returned by open or by the execute before it."""
    log = tmp_path / "judge-phases"
    monkeypatch.setenv("JUDGE_PHASES", str(log))
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
    ])
    rook_workspace.script("grader.sh", """
        #!/bin/bash
        echo "$1 ${ROOK_CONVERSATION-unset}" >> "$JUDGE_PHASES"
        case "$1" in
          open) echo '{"conversation": "from-open"}' ;;
          execute) cat >/dev/null
            echo '{"output": {"pass": true, "reason": "fine"}, "conversation": "from-execute"}' ;;
        esac
        exit 0
    """)
    rook_workspace.profile({"id": "grader", "hooks": {p: "scripts/grader.sh" for p in
                                                      ("open", "execute", "close")}},
                           active=False)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"a": "passed"}, r.stderr
    assert log.read_text().splitlines() == [
        "open unset", "execute from-open", "close from-execute"]


def test_the_judge_profiles_collect_runs_after_close_and_is_recorded(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """A judge profile is a profile: its collect hook (the judge model's usage, a trace)
    runs after close, under the hook contract, and what it returns is kept with the
    judgement; a collect that fails makes the judgement an error, as it fails an
    agent's scenario. (It was never run.)"""
    log = tmp_path / "judge-phases"
    monkeypatch.setenv("JUDGE_PHASES", str(log))
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
    ])
    rook_workspace.script("grader.sh", """
        #!/bin/bash
        echo "$1 ${ROOK_CONVERSATION-unset} ${ROOK_TURN-none}" >> "$JUDGE_PHASES"
        case "$1" in
          execute) cat >/dev/null
            echo '{"output": {"pass": true, "reason": "fine"}, "conversation": "j-1"}' ;;
          collect) [ -n "$COLLECT_FAILS" ] && { echo "trace store down" >&2; exit 4; }
            echo '{"usage": {"input": 700, "output": 30}, "trace_url": "https://t/j-1"}' ;;
        esac
        exit 0
    """)
    rook_workspace.profile({"id": "grader", "hooks": {p: "scripts/grader.sh" for p in
                                                      ("execute", "close", "collect")}},
                           active=False)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"a": "passed"}, r.stderr
    assert log.read_text().splitlines() == ["execute unset 1", "close j-1 none", "collect j-1 none"]
    judge = criteria_of(r.report, "a")[0]["evidence"]["judge"]
    assert [h["phase"] for h in judge["hooks"]] == ["execute", "close", "collect"]
    assert judge["collected"] == {"usage": {"input": 700, "output": 30},
                                  "evidence": {"trace_url": "https://t/j-1"}}

    monkeypatch.setenv("COLLECT_FAILS", "1")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1 and r.statuses() == {"a": "error"}, r.stderr
    reason = criteria_of(r.report, "a")[0]["reason"]
    assert reason.startswith("judge profile 'grader': collect failed: exited with code 4"), reason
    assert "trace store down" in reason


def test_the_judge_profiles_close_runs_after_a_failed_open_and_a_failed_close_is_reported(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """The judge profile's hooks follow the agent's contract (hooks.md): close still
    runs after a failed open, to release what open made, and a close that fails is
    reported as a warning on the scenario run, its verdict kept. A judge's open that
    failed ran no close, and a judge's failed close was seen in its hook record only."""
    log = tmp_path / "judge-phases"
    monkeypatch.setenv("JUDGE_PHASES", str(log))
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
    ])
    rook_workspace.script("grader.sh", """
        #!/bin/bash
        echo "$1" >> "$JUDGE_PHASES"
        case "$1:$JUDGE_FAILS" in
          open:open) echo "no session today" >&2; exit 3 ;;
          close:close) echo "session already gone" >&2; exit 5 ;;
          execute:*) cat >/dev/null; echo '{"output": {"pass": true, "reason": "fine"}}' ;;
        esac
        exit 0
    """)
    rook_workspace.profile({"id": "grader", "hooks": {p: "scripts/grader.sh" for p in
                                                      ("open", "execute", "close")}},
                           active=False)
    monkeypatch.setenv("JUDGE_FAILS", "open")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1 and r.statuses() == {"a": "error"}, r.stderr
    assert log.read_text().split() == ["open", "close"]
    judged = criteria_of(r.report, "a")[0]
    assert judged["reason"].startswith("judge profile 'grader': open failed: exited with code 3")
    assert [h["phase"] for h in judged["evidence"]["judge"]["hooks"]] == ["open", "close"]

    log.unlink()
    monkeypatch.setenv("JUDGE_FAILS", "close")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0 and r.statuses() == {"a": "passed"}, r.stderr
    assert log.read_text().split() == ["open", "execute", "close"]
    scenario = r.report["scenarios"][0]
    assert scenario["warnings"] == [
        "judge profile 'grader': close failed: exited with code 5: session already gone"]
    assert "warning: judge profile 'grader': close failed" in r.stderr
    stored = rook_workspace.record(r.report["run"]["id"], "a.1")
    assert stored["warnings"] == scenario["warnings"]


def test_a_judge_prompt_too_long_for_a_ruhroh_judge_says_what_to_do(
    rook_workspace, rook_cli, tmp_path
):
    """A Ruhroh wrapper gets its text in RUHROH_MESSAGE alone, which carries at most
    128 KiB on Linux: a judge prompt holding a long answer can never reach a Ruhroh
    judge. The judgement is an error that says so and what to use instead (it named the
    variable and its size only); the agent's run is kept."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the limit of one environment variable is Linux's")
    rook_workspace.script("long.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            print(json.dumps({"output": "word " * 40000}))
    """)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/long.py"}})
    wrapper = rook_workspace.script("judge.sh", """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"{\\"pass\\": true, \\"reason\\": \\"ok\\"}"}'
    """)
    rook_workspace.profile({"id": "grader", "hooks": {"execute": {"ruhroh": str(wrapper)}}},
                           active=False)
    rook_workspace.scenario({"id": "a", "goal": "A", "criteria": [
        {"contains": "word"}, {"rubric": "is long"}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1 and r.statuses() == {"a": "error"}, r.stderr
    kept, judged = criteria_of(r.report, "a")
    assert kept["status"] == "passed" and judged["status"] == "error"
    assert "RUHROH_MESSAGE holds" in judged["reason"], judged["reason"]
    assert "a script hook" in judged["reason"] and "standard input" in judged["reason"]
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("status", ["policy_blocked", "cannot_satisfy", "out_of_scope",
                                    "cancelled", "continue"])
def test_a_judge_that_reports_it_did_not_judge_is_an_error_never_a_pass(
    rook_workspace, rook_cli, tmp_path, status
):
    """A Ruhroh wrapper as the judge profile that answers policy_blocked (the judge
    model refused) or cannot_satisfy, out_of_scope, cancelled, with a `{"pass": true}`
    in its output: its verdict was taken and the criterion passed, though the judge
    said it did not do the judging. It is the criterion's error, naming the status;
    goal_satisfied still judges. A script judge printing such a status is read alike.
    So is continue, still answered when the wrapper's iterations ran out: the judge
    never said it had finished (Rook sent it the text 'continue' meanwhile)."""
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
    ])
    wrapper = rook_workspace.script("wrapper.py", """
        #!/usr/bin/env python3
        import json, os
        print(json.dumps({"status": os.environ["JUDGE_STATUS"],
                          "output": json.dumps({"pass": True, "reason": "ok"})}))
    """)
    rook_workspace.script("judge.py", """
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            print(json.dumps({"output": {"pass": True, "reason": "ok"},
                              "status": os.environ["JUDGE_STATUS"]}))
    """)
    rook_workspace.profile({"id": "wrapped", "hooks": {"execute": {"ruhroh": str(wrapper)}}},
                           active=False)
    rook_workspace.profile({"id": "scripted", "hooks": {"execute": "scripts/judge.py"}},
                           active=False)
    for judge in ("wrapped", "scripted"):
        r = rook_cli("run", "--json", "--judge-profile", judge, env={"JUDGE_STATUS": status})
        assert r.exit_code == 1 and r.statuses() == {"a": "error"}, (judge, r.stderr)
        reason = criteria_of(r.report, "a")[0]["reason"]
        assert reason.startswith(f"judge profile '{judge}' reported {status}"), reason
        r = rook_cli("run", "--json", "--judge-profile", judge,
                     env={"JUDGE_STATUS": "goal_satisfied"})
        assert r.statuses() == {"a": "passed"}, (judge, r.stderr)


def test_a_ruhroh_judge_gets_the_judged_scenario_runs_sample_id(rook_workspace, rook_cli):
    """ruhroh.md: RUHROH_SAMPLE_ID is <scenario>.<index>, the same in every run. A
    Ruhroh wrapper as the judge profile got the judgement's key (a.2-j3), numbered
    in the order the judgements of the whole run began, so another in every run."""
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "repeat": 2,
         "criteria": [{"rubric": "must mention refund"}, {"rubric": "must be polite"}]},
    ])
    wrapper = rook_workspace.script("wrapper.py", """
        #!/usr/bin/env python3
        import json, os
        print(json.dumps({"status": "goal_satisfied", "output": json.dumps(
            {"pass": True, "reason": "sample " + os.environ["RUHROH_SAMPLE_ID"]})}))
    """)
    rook_workspace.profile({"id": "wrapped", "hooks": {"execute": {"ruhroh": str(wrapper)}}},
                           active=False)
    r = rook_cli("run", "--json", "--judge-profile", "wrapped")
    assert r.exit_code == 0, r.stdout + r.stderr
    for s in r.report["scenarios"]:
        reasons = [c["reason"] for c in s["criteria"]]
        assert reasons == [f"judge: sample a.{s['repeat_index']}"] * 2, reasons


@pytest.mark.parametrize("status", ["runtime_failure", "infra_failure"])
def test_a_script_judge_reporting_a_failure_status_gave_no_verdict(
    rook_workspace, rook_cli, status
):
    """judges.md: goal_satisfied, or no status, judges. A script judge whose model call
    failed and that printed {"status": "runtime_failure"} (or infra_failure) beside a
    {"pass": false} it wrote meanwhile had that taken as its verdict: the judge's own
    failure failed the agent's scenario. It is the criterion's error, naming the status
    (a Ruhroh judge's runtime_failure fails its hook, an error already)."""
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
    ])
    rook_workspace.script("judge.py", """
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            print(json.dumps({"output": {"pass": False, "reason": "model call failed"},
                              "status": os.environ["JUDGE_STATUS"]}))
    """)
    rook_workspace.profile({"id": "scripted", "hooks": {"execute": "scripts/judge.py"}},
                           active=False)
    r = rook_cli("run", "--json", "--judge-profile", "scripted", env={"JUDGE_STATUS": status})
    assert r.exit_code == 1 and r.statuses() == {"a": "error"}, r.stdout + r.stderr
    reason = criteria_of(r.report, "a")[0]["reason"]
    assert reason.startswith(f"judge profile 'scripted' reported {status}: it did not judge"), reason


def test_a_ruhroh_judges_made_up_handle_is_never_rook_conversation(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """A Ruhroh wrapper as the judge profile's execute that reports no sessionHandle:
    its close and collect hooks get no ROOK_CONVERSATION (none was returned), never the
    handle Rook made up for the wrapper, as for an agent's hooks."""
    log = tmp_path / "judge-phases"
    monkeypatch.setenv("JUDGE_PHASES", str(log))
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
    ])
    wrapper = rook_workspace.script("judge.sh", """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"{\\"pass\\": true, \\"reason\\": \\"ok\\"}"}'
    """)
    rook_workspace.script("after.sh", """
        #!/bin/bash
        echo "$1 ${ROOK_CONVERSATION-unset}" >> "$JUDGE_PHASES"
        [ "$1" = collect ] && echo '{}'
        exit 0
    """)
    rook_workspace.profile({"id": "grader", "hooks": {
        "execute": {"ruhroh": str(wrapper)},
        "close": "scripts/after.sh",
        "collect": "scripts/after.sh",
    }}, active=False)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"a": "passed"}, r.stderr
    assert log.read_text().splitlines() == ["close unset", "collect unset"]


def test_the_judge_profiles_delay_seconds_is_a_minimum_since_its_preceding_phase(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """A judge profile's entries take delay_seconds as an agent's do (it was
    accepted and never waited)."""
    log = tmp_path / "judge-times"
    monkeypatch.setenv("JUDGE_TIMES", str(log))
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "a", "goal": "A", "criteria": [{"rubric": "must mention refund"}]},
    ])
    rook_workspace.script("grader.sh", """
        #!/bin/bash
        echo "$1 $(date +%s.%N)" >> "$JUDGE_TIMES"
        [ "$1" = execute ] && { cat >/dev/null; echo '{"output": {"pass": true, "reason": "ok"}}'; }
        exit 0
    """)
    rook_workspace.profile({"id": "grader", "hooks": {
        "open": "scripts/grader.sh",
        "execute": {"script": "scripts/grader.sh", "delay_seconds": 1},  # 1 s after open ended
        "close": {"script": "scripts/grader.sh", "delay_seconds": 1},  # 1 s after execute
    }}, active=False)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"a": "passed"}, r.stderr
    times = {k: float(v) for k, v in (line.split() for line in log.read_text().splitlines())}
    assert times["execute"] - times["open"] >= 1.0
    assert times["close"] - times["execute"] >= 1.0


@pytest.mark.parametrize("mode, needle", [
    ("garbage", "it is not JSON"),
    # what the judge gave, as JSON says it (it was Python's: True, None, 'true', str)
    ("string-pass", '"pass" must be true or false (got "true")'),
    ("no-reason", '"reason" must be a string (got missing)'),
    ("null-reason", '"reason" must be a string (got null)'),
    ("array", "it is a JSON list, not an object"),
    ("text", "it is a JSON string, not an object"),
    ("bad-score", '"score" must be a number (got "high")'),
    ("true-score", '"score" must be a number (got true)'),
    # JSON's syntax, but no JSON reader gets the number back: it said only "not JSON"
    ("huge-score", "it is not JSON: 1e999 is too large for a JSON number"),
    ("nan-score", "it is not JSON: NaN is not a JSON value"),
    # what is wrong with the JSON it holds, said: it was "it is not JSON" alone
    ("fence-and-more", "it is a JSON object with text before and after it: answer with the "
                       "object alone"),
    ("two-objects", "it is one JSON object followed by a second one (line 2, column 1): "
                    "answer with the object alone"),
    ("said-first", "it is text followed by a JSON object: answer with the object alone"),
    ("exit3", "judge model unavailable"),
    ("no-output", "no output field"),
])
def test_a_judge_that_does_not_answer_the_contract_is_an_error_never_a_pass(
    rook_workspace, rook_cli, monkeypatch, mode, needle
):
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    monkeypatch.setenv("JUDGE_MODE", mode)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"s": "error"}
    c = criteria_of(r.report, "s")[0]
    assert c["status"] == "error"
    assert "judge profile 'grader'" in c["reason"] and needle in c["reason"], c["reason"]
    assert c["evidence"]["judge"]["hooks"], "the failed judge call is still recorded"
    assert r.report["summary"]["passed"] == 0 and r.report["summary"]["pass_rate"] == 0


@pytest.mark.parametrize("mode", ["fenced", "object-output"])
def test_tolerated_shapes_of_a_correct_answer(rook_workspace, rook_cli, monkeypatch, mode):
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    monkeypatch.setenv("JUDGE_MODE", mode)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.statuses() == {"s": "passed"}


def test_a_judge_that_gives_a_blank_reason_is_said_to_have_given_none(
    rook_workspace, rook_cli, monkeypatch
):
    """A judge's blank reason left 'judge:  (score 0.2)' as the criterion's reason
    (and 'its reason: ' under min_score), as if text were missing."""
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention tuesday"}]},
        {"id": "m", "goal": "G", "criteria": [
            {"rubric": {"text": "must mention monday", "min_score": 0.5}}]}])
    monkeypatch.setenv("JUDGE_MODE", "blank-reason")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "failed", "m": "passed"}, r.stderr
    assert criteria_of(r.report, "s")[0]["reason"] == "the judge gave no reason (score 0.2)"
    assert criteria_of(r.report, "m")[0]["reason"] == "the judge gave no reason (score 1)"


def test_min_score(rook_workspace, rook_cli, monkeypatch):
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [
            {"rubric": {"text": "must mention monday", "min_score": 0.8}}]}])
    monkeypatch.setenv("JUDGE_MODE", "score:0.5")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "failed"}
    assert "below min_score 0.8" in criteria_of(r.report, "s")[0]["reason"]
    monkeypatch.setenv("JUDGE_MODE", "noscore")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "error"}
    assert "gave no score" in criteria_of(r.report, "s")[0]["reason"]
    monkeypatch.setenv("JUDGE_MODE", "score:2")  # outside 0-1: not a verdict
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "error"}
    assert '"score" must be a number from 0 to 1 (got 2.0)' in criteria_of(r.report, "s")[0][
        "reason"
    ]


def test_a_score_of_minus_zero_is_shown_as_0(rook_workspace, rook_cli, monkeypatch, tmp_path):
    # a judge answering "score": -0.0 (in range: -0.0 >= 0) was shown as "(score -0)"
    # in the table, the reports and the evidence; a min_score of -0.0 as "min_score -0"
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [
            {"rubric": {"text": "must mention monday", "min_score": 0.8}}]},
        {"id": "t", "goal": "G", "criteria": [
            {"rubric": {"text": "must mention monday", "min_score": -0.0}}]}])
    monkeypatch.setenv("JUDGE_MODE", "score:-0.0")
    md = tmp_path / "r.md"
    r = rook_cli("run", "--judge-profile", "grader", "--report", f"markdown:{md}")
    assert "(score 0) below min_score 0.8" in r.stdout and "score -0" not in r.stdout, r.stdout
    assert "(score 0) below min_score 0.8" in md.read_text()
    assert "score -0" not in md.read_text()
    report = rook_cli("report", "latest", "--json").report
    assert [c["evidence"]["score"] for c in criteria_of(report, "s")] == [0.0]
    assert criteria_of(report, "t")[0]["reason"] == "judge: mentions monday (score 0)"
    monkeypatch.setenv("JUDGE_MODE", "noscore")
    r = rook_cli("run", "--json", "--judge-profile", "grader", "--only", "t")
    assert "the rubric sets min_score 0 but" in criteria_of(r.report, "t")[0]["reason"]


def test_a_long_judge_reason_is_kept_in_the_record_and_cut_in_the_reason(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    # The judge's whole answer is evidence, kept in the record; its reason is
    # also the criterion's and the scenario's reason, shown in every report
    # and the terminal table, so it is bounded there, saying how much was cut.
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention tuesday"}]},
        {"id": "m", "goal": "G", "criteria": [
            {"rubric": {"text": "must mention monday", "min_score": 0.5}}]}])
    monkeypatch.setenv("JUDGE_MODE", "long")
    md = tmp_path / "r.md"
    r = rook_cli("run", "--json", "--judge-profile", "grader", "--report", f"markdown:{md}")
    assert r.statuses() == {"s": "failed", "m": "passed"}
    for sid in ("s", "m"):
        c = criteria_of(r.report, sid)[0]
        assert c["reason"].startswith("judge: ") and len(c["reason"]) < 1000, c["reason"][:2000]
        assert "characters more" in c["reason"] and "THE-END" not in c["reason"]
        scenario = next(x for x in r.report["scenarios"] if x["id"] == sid)
        assert len(scenario["reason"]) < 1000
        stored = rook_workspace.record(r.report["run"]["id"], f"{sid}.1")
        assert stored["criteria"][0]["evidence"]["judge"]["answer"]["reason"].endswith("THE-END")
    assert len(md.read_text()) < 20000
    table = rook_cli("run", "--judge-profile", "grader")
    assert "THE-END" not in table.stdout and len(table.stdout) < 20000


def test_a_judge_that_says_fail_fails_a_min_score_rubric_without_a_score(
    rook_workspace, rook_cli, monkeypatch
):
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [
            {"rubric": {"text": "must mention tuesday", "min_score": 0.8}}]}])
    monkeypatch.setenv("JUDGE_MODE", "noscore")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "failed"}, criteria_of(r.report, "s")
    assert "does not mention tuesday" in criteria_of(r.report, "s")[0]["reason"]


def test_rubric_without_a_judge_profile_is_refused_before_anything_runs(
    rook_workspace, rook_cli
):
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"contains": "refund"},
                                              {"rubric": "must mention monday"}]}])
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert r.exception is None
    for needle in ("judge profile", "--judge-profile", "judge_profile:", "scenario s",
                   'criterion 2 (rubric: "must mention monday")'):
        assert needle in r.stderr, (needle, r.stderr)
    assert not any(rook_workspace.runs_dir.iterdir()), "nothing may run or be recorded"



def test_a_rubric_written_as_a_mapping_is_named_by_its_text_when_refused(rook_workspace, rook_cli):
    # `rubric: {text: ..., min_score: ...}` (the form docs/judges.md shows) was named
    # `criterion 2 (rubric)` alone, while `rubric: TEXT` got the start of its text
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [
            {"rubric": "must mention monday"},
            {"rubric": {"text": "Stays calm\n and professional", "min_score": 0.7}}]}])
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert 'criterion 2 (rubric: "Stays calm and professional")' in r.stderr, r.stderr
    r = rook_cli("doctor")
    assert 'criterion 2 (rubric: "Stays calm and professional")' in r.stdout, r.stdout

def test_unknown_judge_profile_is_refused(rook_workspace, rook_cli):
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    r = rook_cli("run", "--judge-profile", "nobody")
    assert r.exit_code == 2
    assert "judge profile 'nobody'" in r.stderr and "grader" in r.stderr
    assert not any(rook_workspace.runs_dir.iterdir())


def test_an_unknown_judge_profile_from_config_yaml_names_config_yaml(rook_workspace, rook_cli):
    """judge_profile: nobody in config.yaml was refused as "judge profile 'nobody':
    ... not found", naming neither config.yaml nor its key: no flag was given, so
    where the name came from was left to guess."""
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    config = rook_workspace.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text("judge_profile: nobody\n")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{config}: judge_profile: judge profile 'nobody'" in r.stderr, r.stderr
    assert "grader" in r.stderr and not any(rook_workspace.runs_dir.iterdir())
    r = rook_cli("run", "--judge-profile", "nobody")  # the flag's own name: no config.yaml
    assert r.exit_code == 2 and "config.yaml" not in r.stderr, r.stderr



@pytest.mark.parametrize("args", [[], ["--phases", "prepare,open,execute"]])
@pytest.mark.parametrize("value", ["nobody", "ghosts/grader", "other/nobody", "a/b/c"])
def test_a_config_judge_profile_naming_no_profile_is_refused_with_no_rubric(
    rook_workspace, rook_cli, value, args
):
    """judge_profile: nobody in config.yaml was refused only when a rubric needed
    it: a run with none ran on, keeping the wrong value for the next rubric, while
    --judge-profile nobody is refused always. A config field naming no profile is
    refused before anything runs, naming the file, the field and the profiles."""
    from rook_core.testing import Workspace

    setup_agent(rook_workspace, scenarios=[{"id": "s", "goal": "G", "criteria": [{"contains": "G"}]}])
    other = Workspace(rook_workspace.root, agent="other")
    other.script("judge.py", JUDGE)
    other.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}})
    config = rook_workspace.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text(f"agent: agent\njudge_profile: {value}\n")
    r = rook_cli("run", *args)
    assert r.exit_code == 2 and r.exception is None, r.stdout + r.stderr
    assert f"{config}: judge_profile: judge profile {value!r}" in r.stderr, r.stderr
    if value == "nobody":
        assert "(profiles: agent, grader)" in r.stderr, r.stderr
    assert not any(rook_workspace.runs_dir.iterdir())


@pytest.mark.parametrize("value", ["grader", "other/grader", "lone"])
def test_a_config_judge_profile_of_this_or_another_agent_is_no_refusal_with_no_rubric(
    rook_workspace, rook_cli, value
):
    # config.yaml is the workspace's: judge_profile: lone names the profile of the
    # agent whose scenarios have rubrics; another agent's run, with none, runs on
    from rook_core.testing import Workspace

    setup_agent(rook_workspace, scenarios=[{"id": "s", "goal": "G", "criteria": [{"contains": "G"}]}])
    other = Workspace(rook_workspace.root, agent="other")
    other.script("judge.py", JUDGE)
    other.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}})
    third = Workspace(rook_workspace.root, project="elsewhere", agent="judged")
    third.script("judge.py", JUDGE)
    third.profile({"id": "lone", "hooks": {"execute": "scripts/judge.py"}})
    config = rook_workspace.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text(f"project: proj\nagent: agent\njudge_profile: {value}\n")
    r = rook_cli("run")
    assert r.exit_code == 0, r.stdout + r.stderr


def test_judge_profile_env_is_checked_and_its_secrets_redacted(
    rook_workspace, rook_cli, monkeypatch
):
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"},
                            "env": [{"variable": "JUDGE_TOKEN", "purpose": "judge API key"}]},
                           active=False)
    monkeypatch.delenv("JUDGE_TOKEN", raising=False)
    r = rook_cli("run", "--judge-profile", "grader")
    assert r.exit_code == 2 and "JUDGE_TOKEN" in r.stderr and "judge API key" in r.stderr

    secret = "jt-9a8b7c6d5e4f"
    monkeypatch.setenv("JUDGE_TOKEN", secret)
    monkeypatch.setenv("JUDGE_MODE", "leak")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stderr
    assert secret not in r.stdout
    assert "[redacted:JUDGE_TOKEN]" in criteria_of(r.report, "s")[0]["reason"]
    assert secret not in rook_workspace.all_run_text(r.report["run"]["id"])


def test_judge_profile_of_another_agent(rook_workspace, rook_cli, judge_log):
    from rook_core.testing import Workspace

    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    judges = Workspace(rook_workspace.root, project=rook_workspace.project, agent="judges")
    judges.script("judge.py", JUDGE)
    judges.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}})
    r = rook_cli("run", "--json", "--agent", "agent", "--judge-profile", "judges/grader")
    assert r.exit_code == 0, r.stderr
    assert r.report["run"]["judge_profile"]["agent"] == "judges"
    env = json.loads((judge_log / "0.env").read_text())
    assert (env["ROOK_AGENT"], env["ROOK_SCENARIO_ID"]) == ("judges", "s"), env
    r = rook_cli("run", "--agent", "agent", "--judge-profile", "ghosts/grader")
    assert r.exit_code == 2 and "no agent 'ghosts'" in r.stderr



@pytest.mark.parametrize(
    "ref", ["../grader", "./grader", "/grader", "judges/", "judges/grader/x", "a/b/c"])
def test_a_judge_profile_reference_naming_no_agent_or_no_profile_is_refused_as_such(
        rook_workspace, rook_cli, ref):
    """AGENT/NAME with an AGENT of '..' or '' read the project's folder as an
    agent's, a/b/c said "no agent 'a'" ("agents/../profiles: no profiles directory (create a profile
    first)"), and an empty NAME was looked up ("profile '' not found")."""
    from rook_core.testing import Workspace

    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    judges = Workspace(rook_workspace.root, project=rook_workspace.project, agent="judges")
    judges.script("judge.py", JUDGE)
    judges.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}})
    r = rook_cli("run", "--agent", "agent", "--judge-profile", ref)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"judge profile {ref!r}: give NAME, or AGENT/NAME (agents: agent, judges)" in r.stderr
    assert r.stderr.startswith("rook: error: --judge-profile: ")  # the flag, named
    assert "no agent" not in r.stderr  # a/b/c: the form is wrong, not the agent 'a'
    assert "profiles directory" not in r.stderr and not list(rook_workspace.runs_dir.glob("*/"))

class AcmeTone:
    """An organisation's own judge, registered by a plugin."""

    def __init__(self):
        self.seen = []

    @hookimpl
    def rook_register_judges(self, register):
        register("acme-tone", self.judge)
        register("acme-broken", lambda config, view: "looks fine")

    async def judge(self, config, view):
        self.seen.append((config, view.output, view.calls))
        score = 0.9 if "refund" in (view.output or "") else 0.1
        ok = score >= config.get("min_score", 0.5)
        return Verdict(PASSED if ok else "failed", f"tone score {score}", {"score": score})


def test_plugin_judges(rook_workspace, rook_cli, rook_plugin):
    plugin = rook_plugin(AcmeTone())
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "tone", "goal": "G", "criteria": [{"judge": {"name": "acme-tone", "min_score": 0.8}}]},
        {"id": "strict", "goal": "G", "criteria": [
            {"judge": {"name": "acme-tone", "min_score": 0.95}}]},
        {"id": "broken", "goal": "G", "criteria": [{"judge": {"name": "acme-broken"}}]},
        {"id": "words", "goal": "G", "criteria": [
            {"judge": {"name": "keywords", "words": ["refund", "Monday"]}},
            {"judge": {"name": "keywords", "words": ["refund", "sorry"], "min_score": 0.5}},
            {"id": "apology", "judge": {"name": "keywords", "words": ["sorry"]}}]},
    ])
    r = rook_cli("run", "--json")
    assert r.statuses() == {"tone": "passed", "strict": "failed", "broken": "error",
                            "words": "failed"}
    configs = sorted(seen[0]["min_score"] for seen in plugin.seen)
    assert configs == [0.8, 0.95]  # the criterion's mapping without name
    assert plugin.seen[0][2] == [{"name": "issue_refund", "arguments": {"id": "G"}}]
    assert criteria_of(r.report, "tone")[0]["evidence"] == {"score": 0.9}
    assert "not a Verdict" in criteria_of(r.report, "broken")[0]["reason"]
    words = criteria_of(r.report, "words")
    assert [c["status"] for c in words] == ["passed", "passed", "failed"]
    assert words[2]["id"] == "apology" and "missing: 'sorry'" in words[2]["reason"]


def test_the_keywords_reason_says_the_min_score_it_was_held_to(rook_workspace, rook_cli):
    """2 of 3 words passed at min_score 0.5 and failed at 0.8 (and at the default 1)
    with the same reason, '2/3 keywords found (score 0.6667)': which limit decided
    was not said, as rubric and acme-tone say it."""
    words = ["refund", "Monday", "Friday"]
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "ORD-1", "criteria": [
            {"judge": {"name": "keywords", "words": words, "min_score": 0.5}},
            {"judge": {"name": "keywords", "words": words, "min_score": 0.8}},
            {"judge": {"name": "keywords", "words": words}}]}])
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in criteria_of(r.report, "s")]
    assert got == [
        ("passed", "2/3 keywords found (score 0.6667, min_score 0.5); missing: 'Friday'"),
        ("failed", "2/3 keywords found (score 0.6667, min_score 0.8); missing: 'Friday'"),
        ("failed", "2/3 keywords found (score 0.6667, min_score 1); missing: 'Friday'"),
    ], got


ECHO = """
    #!/usr/bin/env python3
    import json, sys
    if sys.argv[1] == "execute":
        print(json.dumps({"output": sys.stdin.read(), "conversation": "c-1"}))
"""


def test_keywords_with_turn_all_holds_every_turn_to_the_words(rook_workspace, rook_cli):
    """turn: all on the keywords judge judged the last answer alone, as with no
    turn: a conversation whose first answer lacked the words passed."""
    rook_workspace.script("echo.py", ECHO)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/echo.py"},
                            "capabilities": {"multi_turn": True}})
    words = {"name": "keywords", "words": ["refund", "Monday"], "min_score": 0.5}
    rook_workspace.scenario({"id": "s", "turns": ["no idea", "refund on Monday"], "criteria": [
        {"judge": words, "turn": "all"},
        {"judge": {**words, "min_score": 1}, "turn": "all"},
        {"judge": words}]})
    rook_workspace.scenario({"id": "t", "turns": ["a refund", "Monday it is"], "criteria": [
        {"judge": words, "turn": "all"}]})
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in criteria_of(r.report, "s")]
    assert got == [
        ("failed", "turn 1: 0/2 keywords found (score 0, min_score 0.5); "
                   "missing: 'refund', 'Monday'"),
        ("failed", "turn 1: 0/2 keywords found (score 0, min_score 1); "
                   "missing: 'refund', 'Monday'"),
        ("passed", "2/2 keywords found (score 1, min_score 0.5)"),
    ], got
    [t] = criteria_of(r.report, "t")
    assert (t["status"], t["reason"]) == (
        "passed", "all 2 turns: 1/2 keywords found (score 0.5, min_score 0.5); missing: 'refund'"
    ), t
    assert t["evidence"] == {"score": 0.5}  # the lowest turn's


def test_a_keyword_written_as_a_number_is_looked_for_as_written(rook_workspace, rook_cli):
    """A number is taken as written where a criterion compares text (scenarios.md),
    as contains: 19.90 is: words: [refund, 19.90] was refused as 'keywords needs
    words: a non-empty list of texts'."""
    setup_agent(rook_workspace, judge=False)
    rook_workspace.scenario("""
        id: s
        goal: "19.90"
        criteria:
          - judge: {name: keywords, words: [refund, 19.90]}
          - judge: {name: keywords, words: [19.9, 007]}
    """)
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in criteria_of(r.report, "s")]
    assert got == [
        ("passed", "2/2 keywords found (score 1, min_score 1)"),
        ("failed", "1/2 keywords found (score 0.5, min_score 1); missing: '007'"),
    ], got

def test_unknown_judge_name_is_a_configuration_error(rook_workspace, rook_cli, rook_plugin):
    rook_plugin(AcmeTone())
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"judge": {"name": "acme-tome"}}]}])
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "unknown judge 'acme-tome'" in r.stderr
    assert "acme-tone" in r.stderr and "keywords" in r.stderr and "s.yaml" in r.stderr
    assert "did you mean acme-tone?" in r.stderr, r.stderr
    assert not any(rook_workspace.runs_dir.iterdir())


PICKY = """
from rook_core.hookspecs import hookimpl
from rook_core.models import PASSED, Verdict


class Picky:
    def check(self, config):
        return None if config["limit"] > 0 else "picky needs a positive limit"  # KeyError

    def __call__(self, config, view):
        return Verdict(PASSED, "fine")


@hookimpl
def rook_register_judges(register):
    register("picky", Picky())
"""


def test_a_judge_whose_check_raises_names_its_own_plugin(rook_workspace, rook_cli,
                                                         rook_distribution):
    rook_distribution("rook-picky", {"picky": "rook_picky"}, {"rook_picky.py": PICKY})
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"judge": {"name": "picky", "limti": 3}}]}])
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None, r.stdout + r.stderr
    assert "s.yaml" in r.stderr and "criteria.0.judge: " in r.stderr
    assert ("the judge 'picky' (picky (rook-picky)) could not check it: KeyError: 'limit'"
            in r.stderr), r.stderr
    assert "rook-harness" not in r.stderr  # not Rook's bug: the judge's
    assert not any(rook_workspace.runs_dir.iterdir())



LISTED = """
from rook_core.hookspecs import hookimpl
from rook_core.models import FAILED, PASSED, Verdict


class Listed:
    def check(self, config, judging):
        if not (judging.workspace / config["list"]).is_file():
            return f"list: {config['list']} is not a file of the workspace"
        return None

    def __call__(self, config, view):
        words = (view.judging.workspace / config["list"]).read_text().split()
        found = [w for w in words if w in (view.output or "")]
        return Verdict(PASSED if found else FAILED, f"found {found}")


@hookimpl
def rook_register_judges(register):
    register("listed", Listed())
"""


def test_a_judge_check_may_ask_for_the_judging_context(rook_workspace, rook_cli,
                                                       rook_distribution):
    """A judge's check got its config alone, while a criterion type's check gets the
    judging context too: a judge reading a file of the workspace (a list of known ids)
    could not refuse a missing one before anything ran; the run went on and each
    scenario run errored. Written check(config, judging), it gets the context."""
    rook_distribution("rook-listed", {"listed": "rook_listed"}, {"rook_listed.py": LISTED})
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "ORD-1", "criteria": [{"judge": {"name": "listed",
                                                              "list": "known.txt"}}]}])
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None, r.stdout + r.stderr
    assert "s.yaml" in r.stderr and (
        "criteria.0.judge: list: known.txt is not a file of the workspace") in r.stderr, r.stderr
    assert not any(rook_workspace.runs_dir.iterdir())
    (rook_workspace.root / "known.txt").write_text("ORD-1 ORD-2\n")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert criteria_of(r.report, "s")[0]["reason"] == "found ['ORD-1']"


ASKING = r"""
import json

from rook_core.hookspecs import hookimpl
from rook_core.models import ERROR, FAILED, PASSED, Verdict


class Asking:
    async def __call__(self, config, view):
        if view.judging.client is None:
            return Verdict(ERROR, "no judge profile reached")
        evidence = json.dumps({"turns": [{"output": view.output}]})
        prompt = f"Asking.\nRUBRIC:\nmust mention monday\n\nEVIDENCE\n{evidence}\n\nAnswer with"
        answer = await view.judging.client.ask(prompt, view.scenario)
        if not answer.ok:
            return Verdict(ERROR, answer.diagnosis)
        return Verdict(PASSED if answer.passed else FAILED, "asked: " + answer.reason)


@hookimpl
def rook_register_judges(register):
    register("asking", Asking())
"""


def test_a_plugin_judge_reaches_the_judge_profile_config_yaml_names(
    rook_workspace, rook_cli, rook_distribution, judge_log
):
    """judges.md: view.judging.client reaches the judge profile when one is
    configured, in config.yaml as with --judge-profile, though no rubric
    criterion is selected."""
    rook_distribution("rook-asking", {"asking": "rook_asking"}, {"rook_asking.py": ASKING})
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"judge": {"name": "asking"}}]}])
    (rook_workspace.root / ".testmuai" / "rook" / "config.yaml").write_text(
        "judge_profile: grader\n")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert criteria_of(r.report, "s")[0]["reason"] == "asked: mentions monday"
    assert r.report["run"]["judge_profile"]["id"] == "grader"
    assert (judge_log / "0.prompt").read_text().startswith("Asking.")
    # one that cannot be used (its key not set) is named in a warning, never a
    # refusal: a plugin's judge may not ask it at all
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"},
                            "env": [{"variable": "JUDGE_TOKEN", "purpose": "the judge key"}]},
                           active=False)
    r = rook_cli("run", "--json", env={"JUDGE_TOKEN": ""})
    assert r.exit_code == 1, r.stdout + r.stderr
    assert criteria_of(r.report, "s")[0]["reason"] == "no judge profile reached"
    assert "rook: warning: judge profile 'grader'" in r.stderr and "JUDGE_TOKEN" in r.stderr
    # Rook's own keywords judge never asks it: no warning
    rook_workspace.scenario({"id": "s", "goal": "G", "criteria": [
        {"judge": {"name": "keywords", "words": ["refund"]}}]})
    r = rook_cli("run", env={"JUDGE_TOKEN": ""})
    assert r.exit_code == 0 and "warning" not in r.stderr, r.stdout + r.stderr


TRUSTING = """
import json

from rook_core.hookspecs import hookimpl
from rook_core.models import FAILED, PASSED, Verdict


class Trusting:
    async def __call__(self, config, view):  # reads the verdict without asking answer.ok
        evidence = json.dumps({"turns": [{"output": view.output}]})
        prompt = f"Trusting.\\nRUBRIC:\\nmust mention x\\n\\nEVIDENCE\\n{evidence}\\n\\nAnswer with"
        answer = await view.judging.client.ask(prompt, view.scenario)
        return Verdict(PASSED if answer.passed else FAILED, "asked")


@hookimpl
def rook_register_judges(register):
    register("trusting", Trusting())
"""


def test_a_plugin_judge_reading_the_verdict_of_a_failed_judgement_is_an_error_not_a_fail(
    rook_workspace, rook_cli, rook_distribution, monkeypatch
):
    """A judge that fails makes the criterion error, never a decided verdict (judges.md).
    client.ask answered a failed judgement with passed False, so a plugin judge that
    read answer.passed without answer.ok failed the scenario on a judge that never
    judged. Reading passed there now raises, naming the judge profile's failure: the
    criterion is that judge's error."""
    rook_distribution("rook-trusting", {"trusting": "rook_trusting"},
                      {"rook_trusting.py": TRUSTING})
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"judge": {"name": "trusting"}}]}])
    monkeypatch.setenv("JUDGE_MODE", "exit3")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1 and r.statuses() == {"s": "error"}, r.stdout + r.stderr
    reason = criteria_of(r.report, "s")[0]["reason"]
    assert reason.startswith("judge 'trusting' (trusting (rook-trusting)) raised JudgeError: "
                             "judge profile 'grader': execute failed: exited with code 3: "
                             "judge model unavailable"), reason
    assert "check answer.ok" in reason, reason
    monkeypatch.setenv("JUDGE_MODE", "normal")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "failed"}, r.stdout + r.stderr  # judged: no mention of x


def test_a_plugin_judges_judgement_belongs_to_the_repeat_it_judged(
    rook_workspace, rook_cli, rook_distribution, tmp_path, monkeypatch
):
    """client.ask(prompt, view.scenario), as judges.md writes it, took every judgement
    for the scenario's first repeat: the judge profile's hooks got RUHROH_RUN_INDEX and
    their state folder of repeat 1, and what went wrong in the judgement of repeat 2 (a
    close that failed) was reported on repeat 1's record, or on none. The repeat being
    judged is now the one asked about."""
    log = tmp_path / "judge-phases"
    monkeypatch.setenv("JUDGE_PHASES", str(log))
    rook_distribution("rook-asking", {"asking": "rook_asking"}, {"rook_asking.py": ASKING})
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "repeat": 2, "criteria": [{"judge": {"name": "asking"}}]}])
    rook_workspace.script("grader.sh", """
        #!/bin/bash
        echo "$1 $(basename "$ROOK_STATE_DIR")" >> "$JUDGE_PHASES"
        case "$1" in
          close) echo "session already gone" >&2; exit 5 ;;
          execute) cat >/dev/null
            echo '{"output": {"pass": true, "reason": "mentions monday"}}' ;;
        esac
        exit 0
    """)
    rook_workspace.profile({"id": "grader", "hooks": {p: "scripts/grader.sh" for p in
                                                      ("execute", "close")}}, active=False)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert [s["status"] for s in r.report["scenarios"]] == ["passed"] * 2, r.stdout + r.stderr
    warned = "judge profile 'grader': close failed: exited with code 5: session already gone"
    assert [s["warnings"] for s in r.report["scenarios"]] == [[warned], [warned]], r.report
    folders = sorted({line.split()[1].split("-j")[0] for line in log.read_text().splitlines()})
    assert folders == ["s.1", "s.2"], log.read_text()


def test_a_judge_refuses_its_own_bad_configuration(rook_workspace, rook_cli):
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"judge": {"name": "keywords", "words": []}}]}])
    r = rook_cli("run")
    assert r.exit_code == 2 and "non-empty list" in r.stderr
    # an unknown option is named as one, never "option(s)"
    rook_workspace.scenario({"id": "s", "goal": "G", "criteria": [
        {"judge": {"name": "keywords", "words": ["a"], "minscore": 0.5}}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and "keywords: unknown option minscore" in r.stderr, r.stderr
    # a misspelt words: was refused as "keywords needs words", naming no typo
    rook_workspace.scenario({"id": "s", "goal": "G", "criteria": [
        {"judge": {"name": "keywords", "word": ["refund"]}}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stderr
    assert "keywords: unknown option word; did you mean words?" in r.stderr, r.stderr
    # a key YAML reads as a number (1: x) ended rook run with a Python traceback
    rook_workspace.scenario({"id": "s", "goal": "G", "criteria": [
        {"judge": {"name": "keywords", "words": ["refund"], 1: "x"}}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None, r.stderr
    assert "keywords: unknown option 1" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("criterion, expected", [
    ({"not_matches": "cannot|unable"}, "passed"),
    ({"not_matches": "arrives (Monday|Friday)"}, "failed"),
    ({"not_equals": "no"}, "passed"),
    ({"not_equals": "Your refund for G was issued; it arrives Monday."}, "failed"),
])
def test_negated_criteria(rook_workspace, rook_cli, criterion, expected):
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [criterion]}])
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": expected}


def test_a_split_run_is_judged_when_the_judge_phase_runs(rook_workspace, rook_cli):
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    # without the judge phase no judge profile is needed yet
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr
    run_id = first.report["run"]["id"]
    refused = rook_cli("run", "--run", run_id, "--phases", "collect,judge")
    assert refused.exit_code == 2 and "--judge-profile" in refused.stderr
    done = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge",
                    "--judge-profile", "grader")
    assert done.exit_code == 0, done.stderr
    assert done.statuses() == {"s": "passed"}


def test_a_resumed_run_keeps_its_judge_profile(rook_workspace, rook_cli):
    """judges.md: rook run --run ID keeps the judge profile the run started with,
    though config.yaml now names another, unless --judge-profile names another."""
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    rook_workspace.script("strict.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": {"pass": false, "reason": "strict says no"}}'
        exit 0
    """)
    rook_workspace.profile({"id": "strict", "hooks": {"execute": "scripts/strict.sh"}},
                           active=False)
    phases = "prepare,open,execute,close,collect"
    runs = []
    for _ in range(2):
        r = rook_cli("run", "--json", "--judge-profile", "grader", "--phases", phases)
        assert r.exit_code == 0, r.stdout + r.stderr
        runs.append(r.report["run"]["id"])
    (rook_workspace.root / ".testmuai" / "rook" / "config.yaml").write_text(
        "judge_profile: strict\n")
    kept = rook_cli("run", "--json", "--run", runs[0])
    assert kept.report["run"]["judge_profile"]["id"] == "grader", kept.stderr
    assert criteria_of(kept.report, "s")[0]["reason"] == "judge: mentions monday (score 1)"
    named = rook_cli("run", "--json", "--run", runs[1], "--judge-profile", "strict")
    assert named.report["run"]["judge_profile"]["id"] == "strict", named.stderr
    assert criteria_of(named.report, "s")[0]["reason"] == "judge: strict says no"


TIMED_AGENT = """
    #!/usr/bin/env python3
    import json, os, sys, time
    if sys.argv[1] != "execute":
        sys.exit(0)
    goal = sys.stdin.read()
    with open(os.environ["TIMELINE"], "a") as fh:
        fh.write(f"{time.time()} agent-start {goal}\\n")
    time.sleep(0.2)
    with open(os.environ["TIMELINE"], "a") as fh:
        fh.write(f"{time.time()} agent-end {goal}\\n")
    print(json.dumps({"output": f"{goal} arrives monday"}))
"""

SLOW_JUDGE = """
    #!/usr/bin/env python3
    import json, os, re, sys, time
    if sys.argv[1] != "execute":
        sys.exit(0)
    goal = re.search(r"arrives monday", sys.stdin.read()) and "ok"
    with open(os.environ["TIMELINE"], "a") as fh:
        fh.write(f"{time.time()} judge-start\\n")
    time.sleep(0.6)
    with open(os.environ["TIMELINE"], "a") as fh:
        fh.write(f"{time.time()} judge-end\\n")
    print(json.dumps({"output": json.dumps({"pass": goal == "ok", "reason": "seen"})}))
"""


def test_the_next_scenario_runs_while_the_previous_one_is_judged(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    # Concurrency 1 bounds the agent's hooks, not judging: scenario b's hook
    # starts as soon as a's has finished, while a judge profile grades a.
    timeline = tmp_path / "timeline"
    monkeypatch.setenv("TIMELINE", str(timeline))
    ws = rook_workspace
    ws.script("agent.py", TIMED_AGENT)
    ws.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"}, "concurrency": 1})
    ws.script("judge.py", SLOW_JUDGE)
    ws.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}}, active=False)
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": sid, "criteria": [{"rubric": "says when"}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"a": "passed", "b": "passed"}
    lines = sorted(timeline.read_text().splitlines(), key=lambda line: float(line.split()[0]))
    events = [line.split(" ", 1)[1] for line in lines]
    agent = [e for e in events if e.startswith("agent")]
    assert agent == ["agent-start a", "agent-end a", "agent-start b", "agent-end b"]
    # b's hook started before a's judgement ended
    assert events.index("agent-start b") < events.index("judge-end")


def test_the_judge_never_receives_a_secret_the_agent_echoed(
    rook_workspace, rook_cli, judge_log, monkeypatch, rook_distribution
):
    secret = "ag-5f4e3d2c1b0a"
    monkeypatch.setenv("AGENT_TOKEN", secret)
    # nor through the prompt a plugin judge builds and passes to client.ask
    rook_distribution("rook-asking", {"asking": "rook_asking"}, {"rook_asking.py": ASKING})
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "token", "criteria": [{"rubric": "must mention monday"}]},
        {"id": "p", "goal": "token", "criteria": [{"judge": {"name": "asking"}}]}])
    rook_workspace.script("agent.py", AGENT.replace(
        "was issued;", 'was issued with " + os.environ["AGENT_TOKEN"] + ";').replace(
        'f"Your refund', '"Your refund').replace("{goal} was", '" + goal + " was'))
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "env": [{"variable": "AGENT_TOKEN", "purpose": "agent API key"}],
                            "capabilities": {"calls": True, "usage": True}})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stderr
    sent = [f.read_text() for f in judge_log.glob("*.prompt")]  # written by the judge hook
    assert len(sent) == 2 and any(p.startswith("Asking.") for p in sent), sent
    for prompt in sent:
        assert secret not in prompt
        assert "issued with [redacted:AGENT_TOKEN]; it arrives Monday" in prompt
    assert r.statuses() == {"s": "passed", "p": "passed"}


def test_a_rubric_judges_the_last_turn_with_the_earlier_ones_as_context(
    rook_workspace, rook_cli, judge_log
):
    rook_workspace.script(
        "turns.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '{"output": "turn %s: %s", "conversation": "c"}\\n' "$ROOK_TURN" "$(cat)"
        """,
    )
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/turns.sh"},
                            "capabilities": {"multi_turn": True}})
    rook_workspace.script("judge.py", JUDGE)
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}},
                           active=False)
    turns = ["monday please", "tuesday then"]
    rook_workspace.scenario({"id": "last", "turns": turns, "criteria": [
        {"rubric": "must mention monday"},                 # only turn 1 does: failed
        {"rubric": "must mention tuesday"},                # the last turn does
        {"rubric": "must mention monday", "turn": "all"},  # judged on all turns
        {"rubric": "must mention monday", "turn": 1},
        {"rubric": "must mention monday", "turn": 2},      # turn 1 is context: failed
    ]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    got = [c["status"] for c in criteria_of(r.report, "last")]
    assert got == ["failed", "passed", "passed", "passed", "failed"]
    prompts = [p.read_text() for p in sorted(judge_log.glob("*.prompt"))]

    def evidence(prompt):
        return json.loads(re.search(r"^EVIDENCE[^\n]*\n(.*?)\n\nAnswer with", prompt, re.S | re.M)[1])

    default = next(p for p in prompts if "must mention tuesday" in p)
    doc = evidence(default)
    assert [t["turn"] for t in doc["turns"]] == [2]
    assert [t["turn"] for t in doc["earlier_turns"]] == [1]
    assert doc["earlier_turns"][0]["output"] == "turn 1: monday please"
    assert "given only as context: do not judge it" in default
    judged = sorted(
        [t["turn"] for t in evidence(p)["turns"]]
        for p in prompts
        if "must mention monday" in p and "earlier_turns" not in evidence(p)
    )
    assert judged == [[1], [1, 2]]  # turn: 1 and turn: all send no context-only turns
    # turn: 2 of 2 judges turn 2 alone, with turn 1 as context, as the default does:
    # an answer such as "yes, as I said" needs it (it was sent without it)
    with_context = sorted(
        ([t["turn"] for t in evidence(p)["turns"]], [t["turn"] for t in evidence(p)["earlier_turns"]])
        for p in prompts
        if "must mention monday" in p and "earlier_turns" in evidence(p)
    )
    assert with_context == [([2], [1]), ([2], [1])]  # the default and turn: 2


def test_the_judge_is_shown_the_calls_of_the_turns_that_reported_them(
    rook_workspace, rook_cli
):
    """Turn 1 reported its calls, turn 2 did not: "calls" is null (not observed
    for the scenario), and "calls_by_turn" gives what turn 1 showed. The same for
    usage: "usage" was null with nothing else, telling the judge that no token
    count was observed though turn 1 reported its own; "usage_by_turn" gives it."""
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "turns": ["ORD-1", "and then?"],
         "criteria": [{"rubric": "must mention monday", "turn": "all"}]}])
    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            answer = {"output": "it arrives Monday", "conversation": "c1"}
            if os.environ["ROOK_TURN"] == "1":
                answer["calls"] = [{"name": "issue_refund", "arguments": {"id": "ORD-1"}}]
            else:
                answer["usage"] = {"input": 12, "output": 3}
            print(json.dumps(answer))
    """)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True, "multi_turn": True}})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    prompt = criteria_of(r.report, "s")[0]["evidence"]["judge"]["prompt"]
    doc = json.loads(prompt.split("observed):\n", 1)[1].split("\n\nAnswer with", 1)[0])
    assert doc["calls"] is None
    assert doc["calls_by_turn"] == {
        "1": [{"name": "issue_refund", "arguments": {"id": "ORD-1"}}], "2": None,
    }
    assert doc["usage"] is None
    assert doc["usage_by_turn"] == {"1": None, "2": {"input": 12, "output": 3}}
    assert '"usage_by_turn", when present, gives each turn\'s usage' in prompt


def test_the_judge_is_told_a_count_some_turn_left_out_and_shown_each_turns_usage(
    rook_workspace, rook_cli
):
    """Turn 1 reported input and output, turn 2 input only: "usage" is their input
    alone (a count one turn left out is not summed), and nothing said it was
    partial, so the judge took the scenario to have no output count at all.
    "usage_by_turn" gives each turn's counts whenever one is left out."""
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "turns": ["ORD-1", "and then?"],
         "criteria": [{"rubric": "must mention monday", "turn": "all"}]},
        {"id": "whole", "turns": ["ORD-1", "and then?"],
         "criteria": [{"rubric": "must mention monday", "turn": "all"}]}])
    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            answer = {"output": "it arrives Monday", "conversation": "c1"}
            answer["usage"] = {"input": 12, "output": 3}
            if os.environ["ROOK_TURN"] == "2" and os.environ["ROOK_SCENARIO_ID"] == "s":
                del answer["usage"]["output"]
            print(json.dumps(answer))
    """)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"usage": True, "multi_turn": True}})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.statuses() == {"s": "passed", "whole": "passed"}, r.stdout + r.stderr

    def evidence(key):
        prompt = criteria_of(r.report, key)[0]["evidence"]["judge"]["prompt"]
        return prompt, json.loads(prompt.split("observed):\n", 1)[1].split("\n\nAnswer with", 1)[0])

    prompt, doc = evidence("s")
    assert doc["usage"] == {"input": 24}
    assert doc["usage_by_turn"] == {"1": {"input": 12, "output": 3}, "2": {"input": 12}}
    assert "a count only some turns reported is left out of it" in prompt
    prompt, doc = evidence("whole")  # every turn reported every count: the sum alone
    assert doc["usage"] == {"input": 24, "output": 6} and "usage_by_turn" not in doc


def test_an_empty_judge_profile_option_is_refused_not_replaced(rook_workspace, rook_cli):
    """`--judge-profile "$J"` with J empty named no profile; it was taken as
    absent and the run silently judged with config.yaml's judge profile."""
    setup_agent(rook_workspace, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "must mention monday"}]}])
    (rook_workspace.root / ".testmuai" / "rook" / "config.yaml").write_text(
        "judge_profile: grader\n")
    for empty in ("", "  "):
        r = rook_cli("run", "--judge-profile", empty)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert r.exception is None
        assert "--judge-profile" in r.stderr and "names no profile" in r.stderr, r.stderr
        assert not any(rook_workspace.runs_dir.iterdir()), "nothing may run or be recorded"


@pytest.mark.parametrize("stdout", [
    # the answer as a string: one decoder reads pass false, another (Python's) true
    json.dumps({"output": '{"pass": false, "reason": "no date given", "pass": true}'}),
    json.dumps({"output": '```json\n{"pass": true, "reason": "ok", "reason": "fine"}\n```'}),
    # the answer as the output object itself, its keys repeated in the hook's stdout
    '{"output": {"pass": false, "reason": "no date given", "pass": true}}',
])
def test_a_verdict_that_repeats_a_key_is_an_error_never_a_pass(
    rook_workspace, rook_cli, tmp_path, stdout
):
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"rubric": "gives a date"}]}])
    (tmp_path / "answer").write_text(stdout)
    rook_workspace.script("dup.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        cat '{tmp_path / "answer"}'
    """)
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/dup.sh"}},
                           active=False)
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1, r.stdout + r.stderr
    c = criteria_of(r.report, "s")[0]
    assert c["status"] == "error", c
    assert "more than once" in c["reason"] and "ambiguous" in c["reason"], c["reason"]
    assert r.report["summary"]["passed"] == 0


def test_keywords_compares_the_exact_share_with_min_score(rook_workspace, rook_cli):
    """2 of 3 words is 0.6666...; the score shown is rounded to 0.6667, which
    passed a min_score of 0.66668 that the share itself does not reach."""
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [
            {"judge": {"name": "keywords", "words": ["refund", "monday", "sorry"],
                       "min_score": 0.66668}},
            {"judge": {"name": "keywords", "words": ["refund", "monday", "sorry"],
                       "min_score": 0.66666}}]}])
    r = rook_cli("run", "--json")
    got = criteria_of(r.report, "s")
    assert [c["status"] for c in got] == ["failed", "passed"], got
    assert got[0]["evidence"] == {"score": 0.6667}


def test_keywords_ignores_case_and_unicode_form_as_contains_does(rook_workspace, rook_cli):
    """The answer says 'Café' with the accent as a combining mark: contains found
    'CAFÉ' in it, the keywords judge did not (casefold alone keeps the forms apart)."""
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "Cafe\u0301-7", "criteria": [
            {"contains": "CAF\u00c9-7"},
            {"judge": {"name": "keywords", "words": ["CAF\u00c9-7", "monday"]}}]}])
    r = rook_cli("run", "--json")
    got = criteria_of(r.report, "s")
    assert [c["status"] for c in got] == ["passed", "passed"], got


@pytest.mark.parametrize("words", [[""], ["refund", "  "]])
def test_keywords_refuses_an_empty_word(rook_workspace, rook_cli, words):
    # an empty word is found in every answer: words: [""] passed whatever the agent said
    setup_agent(rook_workspace, judge=False, scenarios=[
        {"id": "s", "goal": "G", "criteria": [{"judge": {"name": "keywords", "words": words}}]}])
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout
    assert "criteria.0.judge: keywords needs words" in r.stderr and "empty" in r.stderr, r.stderr
    assert "s.yaml" in r.stderr, r.stderr
