"""Acceptance checks of SPEC §6 (statuses, pass rate, coverage, repeats) and
§10 (the JSON report, --json, the four report formats, exit codes, history),
through the installed ``rook`` command as a CI job runs it: real standard
output and standard error, one run holding every scenario status at once."""

from __future__ import annotations

import html
import json
import math
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOK = str(Path(sys.executable).with_name("rook"))
SECRET = "sk-acceptance-7f3a9c"

# One agent; the goal says what it does. It prints the secret in an answer and
# in a diagnosis, so that every output can be checked for it.
AGENT = r"""
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    goal = sys.stdin.read()
    key = os.environ["API_KEY"]
    if goal == "crash":
        sys.stderr.write("boom: key " + key + " refused\n")
        sys.exit(1)
    answer = {"output": "answer with key " + key, "conversation": "conv-1",
              "usage": {"input": 10, "output": 5}}
    if goal == "no handle":
        del answer["conversation"]
    if goal != "blind":
        answer["calls"] = [{"name": "lookup_order", "arguments": {"id": "ORD-1"}}]
    if goal == "every other":  # passes, errors, passes, fails ...
        counter = os.path.join(os.environ["ROOK_RUN_STATE_DIR"], "n")
        n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
        open(counter, "w").write(str(n))
        if n == 2:
            sys.stderr.write("second run fell over\n")
            sys.exit(3)
        if n == 4:
            answer["output"] = "nothing"
    print(json.dumps(answer))
"""

SCENARIOS = [
    {"id": "ok", "goal": "hello", "criteria": [
        {"contains": "answer"}, {"called": {"name": "lookup_order", "arguments": {"id": "ORD-1"}}}]},
    {"id": "bad", "goal": "hello", "criteria": [{"contains": "refund"}]},
    {"id": "blind", "goal": "blind", "criteria": [{"not_called": "cancel_order"}]},
    {"id": "crash", "goal": "crash", "criteria": [{"contains": "answer"}]},
    {"id": "cut", "turns": ["no handle", "and then?"], "criteria": [{"contains": "answer"}]},
    {"id": "costly", "goal": "hello", "criteria": [{"max_tokens": {"total": 100}}]},
    {"id": "wobbly", "goal": "every other", "repeat": 4, "criteria": [{"contains": "answer"}]},
]
EXPECTED = {"ok": "passed", "bad": "failed", "blind": "unverifiable", "crash": "error",
            "cut": "stopped", "costly": "not_runnable", "wobbly.1": "passed",
            "wobbly.2": "error", "wobbly.3": "passed", "wobbly.4": "failed"}


def rook(ws, *args, **kw):
    """The installed command, in the workspace, with the profile's secret set."""
    env = {**os.environ, "API_KEY": SECRET, "COLUMNS": "200"}
    return subprocess.run([ROOK, *args], cwd=ws.root, env=env, capture_output=True,
                          text=True, timeout=120, **kw)


def wilson(k, n, z=1.959963984540054):
    """SPEC §6's 95 % Wilson score interval, written out from its formula."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(centre - half, 4), round(centre + half, 4)]


def _statuses(report):
    return {(s["id"] if s["repeat_count"] == 1 else f"{s['id']}.{s['repeat_index']}"):
            s["status"] for s in report["scenarios"]}


def _agent(ws):
    """The fake agent's script and profile, its key declared in env."""
    ws.script("agent.py", AGENT)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                "env": [{"variable": "API_KEY", "purpose": "the agent's key"}],
                "capabilities": {"calls": True, "multi_turn": True}})


@pytest.fixture
def every_status(rook_workspace, tmp_path):
    ws = rook_workspace
    _agent(ws)
    for s in SCENARIOS:
        ws.scenario(s)
    out = tmp_path / "out"
    r = rook(ws, "run", "--json", "--concurrency", "1",  # the repeats in order
             "--report", f"json:{out}/r.json", "--report", f"junit:{out}/r.xml",
             "--report", f"markdown:{out}/r.md", "--report", f"html:{out}/r.html")
    return ws, r, out


def test_a_run_holding_every_status_gives_the_same_numbers_in_every_report(every_status):
    ws, r, out = every_status
    # 1: a scenario failed, errored or stopped
    assert r.returncode == 1, r.stderr
    # --json: exactly one JSON document on standard output, nothing else
    report = json.loads(r.stdout)  # (json.loads refuses anything after the document)
    assert r.stdout.startswith("{") and r.stdout.endswith("}\n")
    assert _statuses(report) == EXPECTED
    assert json.loads((out / "r.json").read_text(encoding="utf-8")) == report
    # everything else on standard error: progress, the failing hook's diagnosis
    assert "ERROR" in r.stderr and "boom: key [redacted:API_KEY] refused" in r.stderr
    assert "second run fell over" in r.stderr and "STOPPED" in r.stderr
    assert "NOT RUNNABLE" in r.stderr and "scenario " not in r.stderr  # no table with --json

    # the summary: decided = passed + failed + error + stopped; planned = every run
    summary = report["summary"]
    counts = {k: summary[k] for k in ("passed", "failed", "unverifiable", "error", "stopped",
                                      "not_runnable")}
    assert counts == {"passed": 3, "failed": 2, "unverifiable": 1, "error": 2, "stopped": 1,
                      "not_runnable": 1}
    assert summary["total"] == 10 and summary["decided"] == 8
    assert summary["pass_rate"] == 0.375 and summary["coverage"] == 0.8
    # repeats: passes/N, pass^N, a Wilson interval of the rate, flaky
    wobbly = next(b for b in summary["by_scenario"] if b["id"] == "wobbly")
    assert (wobbly["runs"], wobbly["decided"], wobbly["passed"]) == (4, 4, 2)
    assert wobbly["pass_all"] is False and wobbly["pass_any"] is True
    assert wobbly["flaky"] is True and wobbly["pass_rate"] == 0.5
    assert wobbly["wilson"] == wilson(2, 4)
    assert wobbly["statuses"] == ["passed", "error", "passed", "failed"]
    for one in summary["by_scenario"]:
        if one["id"] != "wobbly":
            assert one["flaky"] is False and one["runs"] == 1
            if one["decided"]:
                assert one["wilson"] == wilson(one["passed"], 1)
            else:  # unverifiable, not_runnable: no rate, never a pass
                assert one["wilson"] is None and one["pass_all"] is False

    # JUnit: a CI counts the same; unverifiable and not_runnable are skipped
    suite = ET.fromstring((out / "r.xml").read_bytes()).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("10", "2", "3", "2")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["pass_rate"] == "0.375" and props["coverage"] == "0.8"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["blind"].find("skipped").get("message").startswith("unverifiable:")
    assert cases["costly"].find("skipped").get("message").startswith("not_runnable:")
    assert cases["cut"].find("error") is not None
    assert cases["wobbly [2/4]"].find("error") is not None
    assert cases["wobbly [4/4]"].find("failure") is not None

    # Markdown: the heading counts what failed, the pass rate and the coverage beside it;
    # "2 errors" as the line under it and the terminal say it (the heading said "2 error")
    md = (out / "r.md").read_text(encoding="utf-8")
    assert md.splitlines()[0] == "## ❌ Rook: 2 failed, 2 errors, 1 stopped"
    assert "**Pass rate** 37.5% of decided runs (3/8)" in md
    assert "**Coverage** 80.0% (8 of 10 planned runs decided)" in md
    assert ("3 passed, 2 failed, 1 unverifiable, 2 errors, 1 stopped, 1 not_runnable" in md)
    row = next(ln for ln in md.splitlines() if ln.startswith("| <code>wobbly</code>"))
    lo, hi = wilson(2, 4)
    assert f"2/4 | 50.0% ({math.floor(lo * 100)}–{math.ceil(hi * 100)}%)" in row and "flaky" in row

    # HTML: the same figures, as text
    page = (out / "r.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(
        r"<style.*?</style>", "", page, flags=re.S))))
    assert "37.5% 3 of 8 decided" in text and "80.0% 8 of 10 planned runs decided" in text
    assert ("passed 3 failed 2 unverifiable 1 error 2 stopped 1 not_runnable 1" in text), text

    # the table (rook runs show) and the history line count the same
    shown = rook(ws, "runs", "show", report["run"]["id"])
    assert shown.returncode == 0, shown.stderr
    assert ("3 passed, 2 failed, 1 unverifiable, 2 errors, 1 stopped, 1 not_runnable — "
            "pass rate 37.5% of decided, coverage 80.0% of planned") in shown.stdout
    listed = rook(ws, "runs", "--json")
    (entry,) = json.loads(listed.stdout)["runs"]
    assert entry["counts"] == {**counts, "infra_error": 0, "pending": 0}
    assert (entry["total"], entry["decided"], entry["pass_rate"]) == (10, 8, 0.375)

    # the profile's secret reached none of it, and each output says where it was
    for name, text in (("stdout", r.stdout), ("stderr", r.stderr), ("show", shown.stdout),
                       ("runs", listed.stdout)):
        assert SECRET not in text, name
    for path in out.iterdir():
        body = path.read_text(encoding="utf-8")
        assert SECRET not in body and "[redacted:API_KEY]" in body, path.name
    assert SECRET not in ws.all_run_text(report["run"]["id"])


def test_every_decided_run_passed_exits_0_beside_unverifiable_and_not_runnable(
        rook_workspace, tmp_path):
    ws = rook_workspace
    _agent(ws)
    for s in SCENARIOS:
        if s["id"] in ("ok", "blind", "costly"):
            ws.scenario(s)
    # nothing decided at all (first: no run has shown usage yet): 0 too, and a
    # warning on standard error, never on standard output
    lone = rook(ws, "run", "--json", "--only", "costly")
    assert lone.returncode == 0, lone.stderr
    assert json.loads(lone.stdout)["summary"]["decided"] == 0
    assert "warning: no scenario run was decided (1 not_runnable)" in lone.stderr
    assert "rook:" not in lone.stdout
    r = rook(ws, "run", "--json", "--report", f"junit:{tmp_path}/r.xml")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert _statuses(report) == {"ok": "passed", "blind": "unverifiable",
                                 "costly": "not_runnable"}
    summary = report["summary"]
    assert (summary["pass_rate"], summary["coverage"]) == (1.0, round(1 / 3, 4))
    suite = ET.fromstring((tmp_path / "r.xml").read_bytes()).find("testsuite")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "2")


# Answers at once, except the goal "hang", which blocks (its pid written) until
# RELEASE exists; every call is logged.
HANGING = r"""
    #!/usr/bin/env python3
    import json, os, sys, time
    if sys.argv[1] != "execute":
        sys.exit(0)
    goal = sys.stdin.read()
    d = os.environ["PROBE"]
    with open(os.path.join(d, "calls.log"), "a") as fh:
        fh.write(os.environ["ROOK_SCENARIO_ID"] + "\n")
    if goal == "hang":
        open(os.path.join(d, "hook.pid"), "w").write(str(os.getpid()))
        while not os.path.exists(os.path.join(d, "release")):
            time.sleep(0.05)
    print(json.dumps({"output": "done, key " + os.environ["API_KEY"]}))
"""


def _final(ws, key):
    """The scenario run's record, in the one run, is written and final."""
    for path in ws.runs_dir.glob(f"*/scenarios/{key}.json"):
        try:
            return json.loads(path.read_text(encoding="utf-8")).get("final") is True
        except ValueError:  # (written atomically: never half a file; to be sure)
            return False
    return False


def test_a_run_killed_midway_is_finished_listed_shown_and_compared_without_a_secret(
        rook_workspace, tmp_path):
    """§10: a run killed midway loses nothing recorded; rook run --run ID finishes
    only what is missing; rook runs, runs show and diff (with a changed
    definition) read those files; the profile's secret reaches none of them."""
    ws = rook_workspace
    probe = tmp_path / "probe"
    probe.mkdir()
    ws.script("agent.py", HANGING)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                "env": [{"variable": "API_KEY", "purpose": "the agent's key"}],
                "hook_env": {"PROBE": str(probe)}})
    ws.scenario({"id": "a", "goal": "hello", "criteria": [{"contains": "done"}]})
    ws.scenario({"id": "b", "goal": "hello", "criteria": [{"contains": "done"}]})
    ws.scenario({"id": "c", "goal": "hang", "criteria": [{"contains": "done"}]})
    env = {**os.environ, "API_KEY": SECRET, "COLUMNS": "200"}
    proc = subprocess.Popen([ROOK, "run", "--concurrency", "1"], cwd=ws.root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not ((probe / "hook.pid").exists() and _final(ws, "a.1") and _final(ws, "b.1")):
            # c hangs, and a and b are recorded (b may still be judged as c starts)
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    (run_dir,) = ws.runs_dir.iterdir()
    run_id = run_dir.name
    outputs = []

    listed = rook(ws, "runs")
    outputs.append(listed.stdout + listed.stderr)
    assert "incomplete (2/3 recorded)" in listed.stdout, listed.stdout
    shown = rook(ws, "runs", "show", run_id)
    outputs.append(shown.stdout + shown.stderr)
    assert f"rook run --run {run_id}" in shown.stdout + shown.stderr
    assert "2 passed, 1 pending" in shown.stdout, shown.stdout

    (probe / "release").touch()
    done = rook(ws, "run", "--run", run_id, "--json")
    outputs.append(done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert _statuses(report) == {"a": "passed", "b": "passed", "c": "passed"}
    # a and b were not asked again; c (cut off) was, once
    assert (probe / "calls.log").read_text().split() == ["a", "b", "c", "c"]
    assert report["scenarios"][0]["turns"][0]["output"] == "done, key [redacted:API_KEY]"

    # b's criteria change, and now fail: diff names the change and the regression
    ws.scenario({"id": "b", "goal": "hello", "criteria": [{"contains": "refund"}]})
    again = rook(ws, "run", "--json")
    outputs.append(again.stdout + again.stderr)
    assert again.returncode == 1
    diff = rook(ws, "diff", run_id, "latest")
    outputs.append(diff.stdout + diff.stderr)
    assert diff.returncode == 1, diff.stderr
    row = next(ln for ln in diff.stdout.splitlines() if ln.startswith("b "))
    assert "changed definition, newly failing" in row, diff.stdout
    assert "regressed: b" in diff.stderr and "regressed" not in diff.stdout
    shown = rook(ws, "runs", "show", "latest")
    outputs.append(shown.stdout + shown.stderr)
    assert "[redacted:API_KEY]" in shown.stdout  # b's reason quotes the answer
    listed = rook(ws, "runs")
    outputs.append(listed.stdout + listed.stderr)
    for text in outputs:
        assert SECRET not in text
    for d in ws.runs_dir.iterdir():
        assert SECRET not in ws.all_run_text(d.name)
