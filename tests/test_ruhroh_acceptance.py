"""Acceptance checks of Ruhroh command wrappers (SPEC §7, the Ruhroh reference):
combinations the single-feature tests in test_ruhroh*.py leave out.

Every wrapper here is a real program (bash, Python, Node) run through Rook's
real subprocess machinery."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rook_core.testing import Workspace

NODE = shutil.which("node")


def profile(ws: Workspace, command: str, **entry) -> None:
    ws.profile(
        {
            "id": "rr",
            "hooks": {"execute": {"ruhroh": {"command": command, **entry}}},
            "capabilities": {"multi_turn": True, "usage": True, "calls": True},
        }
    )


def only(r):
    (s,) = r.report["scenarios"]
    return s


# -- every RUHROH_* variable, on every iteration ---------------------------------

PROBE = r"""
import json, os, sys
e = os.environ
with open(os.path.join(os.environ["PROBE_LOG"]), "a") as fh:
    rec = {k: v for k, v in e.items() if k.startswith("RUHROH_")}
    rec["goal"] = open(e["RUHROH_GOAL_PATH"], "rb").read().decode("utf-8")
    rec["result_existed"] = os.path.exists(e["RUHROH_RESULT_PATH"])
    fh.write(json.dumps(rec) + "\n")
it = int(e["RUHROH_ITERATION"])
if it == 1:  # a result file on the first call only: never read for a later one
    with open(e["RUHROH_RESULT_PATH"], "w") as fh:
        json.dump({"version": "ruhroh_run_agent_result_v1", "status": "continue",
                   "output": "from the first result file", "sessionHandle": "h-1"}, fh)
    print('{"status": "continue"}')
elif it == 2:
    print(json.dumps({"status": "continue", "sessionHandle": "h-2"}))
else:
    print("still working")
    print('{"status": "continue"}')
"""


def test_every_variable_over_turns_continue_iterations_and_repeats(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PROBE_LOG", str(log))
    ws = rook_workspace
    wrapper = ws.script("probe.py", PROBE, executable=False)
    profile(ws, str(wrapper), max_iterations=4)
    goal = 'first "turn" $HOME `x`\n✓'
    ws.scenario({"id": "s", "turns": [goal, "second"], "criteria": [{"contains": "x"}]})
    first = rook_cli("run", "--json", "--repeat", "3")
    assert first.exit_code == 1, first.stderr  # never completes: the answer is the transcript
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 12  # 3 repeats x 4 iterations
    run_dir = first.report["run"]["dir"]
    for index in (1, 2, 3):
        mine = [c for c in calls if c["RUHROH_RUN_INDEX"] == str(index)]
        assert [c["RUHROH_ITERATION"] for c in mine] == ["1", "2", "3", "4"]
        assert [c["RUHROH_MESSAGE"] for c in mine] == [goal, "second", "continue", "continue"]
        handles = [c["RUHROH_SESSION_HANDLE"] for c in mine]
        assert handles[0] not in ("", "h-1", "h-2")  # Rook's own, before any was reported
        assert handles[1:] == ["h-1", "h-2", "h-2"]  # the one the previous call reported
        assert {c["RUHROH_RUN_COUNT"] for c in mine} == {"3"}
        assert {c["RUHROH_SAMPLE_ID"] for c in mine} == {f"s.{index}"}
        assert len({c["RUHROH_SAMPLE_SEED"] for c in mine}) == 1
        assert {c["goal"] for c in mine} == {goal}  # byte for byte, on every call
        assert {c["RUHROH_SCENARIO_ID"] for c in mine} == {"s"}
        assert {c["RUHROH_ADAPTER_ID"] for c in mine} == {"rr"}
        assert {c["RUHROH_RUN_ROOT"] for c in mine} == {run_dir}
        assert len({c["RUHROH_WORKSPACE"] for c in mine}) == 1
        assert all(c["RUHROH_WORKSPACE"] == c["RUHROH_WORKSPACE_PATH"] for c in mine)
    assert not any(c["result_existed"] for c in calls)
    assert len({c["RUHROH_RESULT_PATH"] for c in calls}) == 12
    seeds = {c["RUHROH_SAMPLE_ID"]: c["RUHROH_SAMPLE_SEED"] for c in calls}
    assert len(set(seeds.values())) == 3  # distinct per repeat
    # the stale result file of iteration 1 is not iteration 2's answer
    s = first.report["scenarios"][0]
    turn2 = s["turns"][1]
    assert [i["source"] for i in turn2["evidence"]["iterations"]] == ["final_line"] * 3
    assert "from the first result file" not in turn2["output"]
    assert s["turns"][0]["output"] == "from the first result file"
    # a second run: the same sample ids and seeds (stable)
    log.unlink()
    rook_cli("run", "--json", "--repeat", "3")
    again = [json.loads(line) for line in log.read_text().splitlines()]
    assert {c["RUHROH_SAMPLE_ID"]: c["RUHROH_SAMPLE_SEED"] for c in again} == seeds


# -- max_iterations with the wrapper still answering continue --------------------


def test_max_iterations_reached_on_the_last_turn_is_said_in_every_report(
    rook_workspace, rook_cli, tmp_path
):
    # the wrapper never says it is done; a scenario that judges only the answer
    # passed with nothing in any report saying the agent never completed
    ws = rook_workspace
    wrapper = ws.script(
        "busy.sh",
        """
        #!/bin/bash
        echo '{"status":"continue","output":"working on it"}'
        """,
    )
    profile(ws, str(wrapper), max_iterations=3)
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "working"}]})
    md, junit, html = tmp_path / "r.md", tmp_path / "r.xml", tmp_path / "r.html"
    r = rook_cli(
        "run", "--json",
        "--report", f"markdown:{md}", "--report", f"junit:{junit}", "--report", f"html:{html}",
    )  # fmt: skip
    s = only(r)
    assert s["status"] == "passed"  # judged on what it answered, as the criteria ask
    assert s["turns"][-1]["evidence"]["max_iterations_reached"] is True
    (warning,) = s["warnings"]
    assert "max_iterations (3) reached" in warning and "continue" in warning, warning
    said = "(3) reached with the agent still answering continue"
    assert said in md.read_text() and said in junit.read_text() and said in html.read_text()
    terminal = rook_cli("run")
    assert "max_iterations" in terminal.stdout + terminal.stderr


# -- the final JSON line and the result file --------------------------------------

V1 = '"version":"ruhroh_run_agent_result_v1"'


@pytest.mark.parametrize(
    "result_file,stdout,answer,status",
    [
        # other lines before, blank and white-space lines after
        (None, 'line one\n{"status":"runtime_failure"}\n{"status":"goal_satisfied","output":"ok"}\n\n   \n', "ok", "goal_satisfied"),
        # the result file wins, even against the final line's status
        ('{' + V1 + ',"status":"cannot_satisfy","output":"no"}', '{"status":"goal_satisfied","output":"yes"}', "no", "cannot_satisfy"),
        # the result file wins over a final line that is no JSON at all
        ('{' + V1 + ',"status":"policy_blocked","output":"blocked"}', "all done.", "blocked", "policy_blocked"),
        # field by field: the status from the file, nothing else there
        ('{' + V1 + ',"status":"goal_satisfied"}', '{"status":"continue","output":"line"}', "line", "goal_satisfied"),
    ],
)  # fmt: skip
def test_the_final_line_and_the_result_file_together(
    result_file, stdout, answer, status, rook_workspace, rook_cli, tmp_path
):
    ws = rook_workspace
    _replaying(ws, tmp_path, stdout, result_file)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"status": status}, {"equals": answer}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert only(r)["turns"][0]["evidence"]["status"] == status


def test_the_result_file_wins_over_the_final_line_under_another_name_of_a_field(
    rook_workspace, rook_cli, tmp_path
):
    # the file gives the answer, the handle, the adapter version and the run id
    # under other names than the final line does: the file's still win
    ws = rook_workspace
    log = tmp_path / "handles.txt"
    wrapper = ws.script(
        "w.sh",
        f"""
        #!/bin/bash
        echo "$RUHROH_SESSION_HANDLE" >> {log}
        if [ "$RUHROH_ITERATION" = 1 ]; then
          f='"summary":"file answer","session_handle":"file-h","adapter_version":"2.0"'
          printf '{{{V1},"status":"continue",%s,"run_id":"file-run"}}' "$f" > "$RUHROH_RESULT_PATH"
          echo '{{"status":"continue","output":"line answer","sessionHandle":"line-h","adapterVersion":"1.0","runId":"line-run"}}'
        else
          echo '{{"status":"goal_satisfied","output":"second"}}'
        fi
        """,
    )
    profile(ws, str(wrapper))
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "second"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    first = only(r)["turns"][0]
    assert first["evidence"]["adapterVersion"] == "2.0"
    assert first["evidence"]["runId"] == "file-run"
    assert first["output"] == "file answer", first
    assert log.read_text().split("\n")[1] == "file-h"
    # what the final line gave is still kept, as every reported field is
    assert first["evidence"]["result"]["output"] == "line answer"
    manifest = json.loads((Path(r.report["run"]["dir"]) / "ruhroh-run-manifest.json").read_text())
    assert manifest["adapterVersion"] == "2.0"


def test_an_infra_failure_whose_retry_the_scenarios_timeout_cuts_off_stays_an_infra_error(
    rook_workspace, rook_cli, tmp_path
):
    # the first attempt reports infra_failure; the retry gets what is left of the
    # scenario's timeout_seconds and is cut off: the agent never had a fair second
    # attempt, so it is the infrastructure error, not an error counted against it
    ws = rook_workspace
    wrapper = ws.script(
        "w.sh",
        f"""
        #!/bin/bash
        if [ ! -e {tmp_path}/first ]; then
          touch {tmp_path}/first
          echo '{{"status":"infra_failure","error":"sandbox down"}}'
          exit 0
        fi
        exec sleep 600
        """,
    )
    profile(ws, str(wrapper))
    ws.scenario(
        {"id": "s", "goal": "g", "timeout_seconds": 2, "criteria": [{"contains": "x"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    s = only(r)
    assert s["status"] == "infra_error", s
    assert r.report["summary"]["infra_error"] == 1 and r.report["summary"]["error"] == 0
    diagnosis = s["hooks"][0]["diagnosis"]
    assert diagnosis.startswith("infrastructure error:"), diagnosis
    assert "sandbox down" in diagnosis and "timeout_seconds (2 s)" in diagnosis, diagnosis


@pytest.mark.parametrize("status", ["runtime_failure", "infra_failure"])
@pytest.mark.parametrize(
    "result_file,stdout,why",
    [
        # the file says why under a later name of the reason than the final line does
        ('"message":"the file says: disk full"', '"error":"the line says: boom"', "the file says: disk full"),
        ('"error":"the file says: disk full"', '"message":"the line says: boom"', "the file says: disk full"),
        # the file gives no reason: the final line's
        ('"runId":"r-1"', '"message":"the line says: boom"', "the line says: boom"),
    ],
)  # fmt: skip
def test_a_failures_reason_is_the_result_files_over_the_final_lines(
    status, result_file, stdout, why, rook_workspace, rook_cli, tmp_path
):
    # the result file wins field by field; a reason the final line gave under
    # another name (error over message) still won over the file's
    ws = rook_workspace
    _replaying(
        ws,
        tmp_path,
        f'{{"status":"{status}",{stdout}}}\n',
        f'{{{V1},"status":"{status}",{result_file}}}',
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    diagnosis = only(r)["hooks"][0]["diagnosis"]
    assert f"reported {status}" in diagnosis and why in diagnosis, diagnosis


@pytest.mark.parametrize(
    "result_file,stdout,message",
    [
        ('{"version":"ruhroh_run_agent_result_v2","status":"goal_satisfied"}', '{"status":"goal_satisfied","output":"x"}', "has version 'ruhroh_run_agent_result_v2'"),
        ("not json {", '{"status":"goal_satisfied","output":"x"}', "is not JSON"),
        ('["goal_satisfied"]', '{"status":"goal_satisfied","output":"x"}', "must hold one JSON object"),
        (None, '{"status":"done"}', "unknown completion status 'done'"),
        (None, '["goal_satisfied"]', "its final line is JSON, but an array"),
        (None, '"goal_satisfied"', "its final line is JSON, but a string"),
        (None, '"Done," it said', "reported no completion status: expected a final JSON line"),
        (None, '{"status":"goal_satisfied","output":"x"}\ncleanup done', "a JSON line with a status came 1 line before the end"),
        # a progress bar's \r ends no line: the status was on the progress line, unsaid
        (None, 'progress 50%\r{"status":"goal_satisfied","output":"x"}', "its final line holds a carriage return (\\r, as a progress bar prints) before its JSON object"),
    ],
)  # fmt: skip
def test_a_result_the_wrapper_gave_wrongly_fails_the_call_saying_why(
    result_file, stdout, message, rook_workspace, rook_cli, tmp_path
):
    ws = rook_workspace
    _replaying(ws, tmp_path, stdout + "\n", result_file)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    s = only(r)
    assert s["status"] == "error"
    assert message in s["reason"], s["reason"]


# -- infra_failure: retried once, and both attempts kept and told -----------------

INFRA = """
#!/bin/bash
m="$RUHROH_WORKSPACE/n"; n=$(( $(cat "$m" 2>/dev/null || echo 0) + 1 )); echo $n > "$m"
echo "attempt $n"
if [ "$n" = 1 ] || [ "$RUHROH_SCENARIO_ID" = down ]; then
  echo '{"status":"infra_failure","error":"sandbox down"}'
else
  echo '{"status":"goal_satisfied","output":"done"}'
fi
"""


def test_an_infra_failure_retried_is_kept_and_said_whatever_the_retry_gave(
    rook_workspace, rook_cli, tmp_path
):
    ws = rook_workspace
    profile(ws, str(ws.script("infra.sh", INFRA)))
    ws.scenario({"id": "blip", "goal": "g", "criteria": [{"contains": "done"}]})
    ws.scenario({"id": "down", "goal": "g", "criteria": [{"contains": "done"}]})
    md = tmp_path / "r.md"
    r = rook_cli("run", "--json", "--report", f"markdown:{md}")
    assert r.statuses() == {"blip": "passed", "down": "infra_error"}
    run_id = r.report["run"]["id"]
    by = {s["id"]: s for s in r.report["scenarios"]}
    # once, then an answer: both attempts are in the record, and the report says so
    its = by["blip"]["turns"][0]["evidence"]["iterations"]
    assert [(i["attempt"], i["status"]) for i in its] == [(1, "infra_failure"), (2, "goal_satisfied")]
    (warning,) = by["blip"]["warnings"]
    assert "infra_failure" in warning and "sandbox down" in warning and "retried" in warning
    assert "sandbox down" in md.read_text()
    record = ws.record(run_id, "blip.1")
    assert "attempt 1" in record["hooks"][0]["stdout"] and "attempt 2" in record["hooks"][0]["stdout"]
    # twice: an infrastructure error; both attempts in the record and named
    assert "infra_failure on both attempts" in by["down"]["reason"]
    record = ws.record(run_id, "down.1")
    (hook,) = record["hooks"]
    assert [i["attempt"] for i in hook["data"]["iterations"]] == [1, 2]
    assert "attempt 1" in hook["stdout"] and "attempt 2" in hook["stdout"]
    assert r.report["summary"]["infra_error"] == 1 and r.report["summary"]["decided"] == 1


# -- calls a wrapper reports ------------------------------------------------------

CALLS = """
import json, os
e = os.environ
it = int(e["RUHROH_ITERATION"])
plan = json.loads(e["CALLS_PLAN"])[e["RUHROH_SCENARIO_ID"]]
doc = {"version": "ruhroh_run_agent_result_v1", "output": "refund issued",
       "status": "continue" if it < len(plan) else "goal_satisfied"}
if plan[it - 1] is not None:
    doc["calls"] = plan[it - 1]
json.dump(doc, open(e["RUHROH_RESULT_PATH"], "w"))
print('{"status": "%s"}' % doc["status"])
"""


def test_calls_a_wrapper_reports_are_its_call_log(rook_workspace, rook_cli, monkeypatch):
    # a wrapper's "calls" (the hook contract's shape) were dropped: `called` was
    # unverifiable, "calls were not observed", whatever the wrapper said
    ws = rook_workspace
    lookup = {"name": "lookup_order", "arguments": {"id": "ORD-1"}}
    refund = {"name": "issue_refund", "arguments": '{"id": "ORD-1"}'}  # OpenAI's JSON text
    plans = {
        "both": [[lookup], [refund]],  # two iterations of one turn: their calls in order
        "none": [[]],  # observed: no calls
        "partly": [[lookup], None],  # one iteration did not say: not observed
        "count": [3],  # a number is no call log: kept in the result, not read
    }
    monkeypatch.setenv("CALLS_PLAN", json.dumps(plans))
    profile(ws, str(ws.script("calls.py", CALLS, executable=False)))
    crit = [
        {"called": {"name": "issue_refund", "arguments": {"id": "ORD-1"}}},
        {"call_order": ["lookup_order", "issue_refund"]},
        {"max_calls": 2},
    ]
    ws.scenario({"id": "both", "goal": "g", "criteria": crit})
    ws.scenario({"id": "none", "goal": "g", "criteria": [{"not_called": "issue_refund"}]})
    ws.scenario({"id": "partly", "goal": "g", "criteria": [{"not_called": "issue_refund"}]})
    ws.scenario({"id": "count", "goal": "g", "criteria": [{"not_called": "issue_refund"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {
        "both": "passed",
        "none": "passed",
        "partly": "unverifiable",
        "count": "unverifiable",
    }, r.stdout + r.stderr
    by = {s["id"]: s for s in r.report["scenarios"]}
    assert [c["name"] for c in by["both"]["turns"][0]["calls"]] == ["lookup_order", "issue_refund"]
    assert by["none"]["turns"][0]["calls"] == []
    assert by["count"]["turns"][0]["evidence"]["result"]["calls"] == 3
    (warning,) = by["partly"]["warnings"]  # says why the log is not observed
    assert "iteration 2 reported no calls list while another did" in warning, warning
    assert by["both"]["warnings"] == by["none"]["warnings"] == by["count"]["warnings"] == []
    assert r.report["run"]["capabilities"]["observed"]["calls"] is True


def test_a_call_log_entry_without_a_name_fails_the_call_naming_it(
    rook_workspace, rook_cli, monkeypatch
):
    ws = rook_workspace
    monkeypatch.setenv("CALLS_PLAN", json.dumps({"s": [[{"tool": "lookup"}]]}))
    profile(ws, str(ws.script("calls.py", CALLS, executable=False)))
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"not_called": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    assert "calls[0] must be an object with a string name" in only(r)["reason"]


# -- one wrapper in each language, through the installed command ------------------


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_a_node_wrapper_reports_usage_model_and_artifacts_as_evidence(rook_workspace, rook_cli):
    ws = rook_workspace
    wrapper = ws.script(
        "w.mjs",
        """
        import { writeFileSync } from "node:fs";
        const e = process.env;
        writeFileSync(`${e.RUHROH_WORKSPACE}/t.log`, `heard ${e.RUHROH_MESSAGE}\\n`);
        writeFileSync(e.RUHROH_RESULT_PATH, JSON.stringify({
          version: "ruhroh_run_agent_result_v1", status: "goal_satisfied", output: "done",
          adapterVersion: "1.4.0", model: {provider: "example", model: "agent-model"},
          usage: {costUsd: 0.42, inputTokens: 1200, outputTokens: 800, totalTokens: 2000},
          artifacts: {transcript: "t.log"}}));
        console.log(JSON.stringify({status: "goal_satisfied"}));
        """,
        executable=False,
    )
    profile(ws, str(wrapper))
    ws.scenario(
        {
            "id": "s",
            "goal": "g",
            "criteria": [
                {"max_tokens": {"input": 1200, "output": 800, "total": 2000}},
                {"max_cost": 0.5},
                {"status": "goal_satisfied"},
            ],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    turn = only(r)["turns"][0]
    assert turn["usage"] == {"input": 1200, "output": 800, "total": 2000, "cost_usd": 0.42}
    ev = turn["evidence"]
    assert ev["adapterVersion"] == "1.4.0" and ev["model"]["model"] == "agent-model"
    assert ev["artifacts"]["transcript"]["content"] == "heard g\n"
    manifest = json.loads(
        (Path(r.report["run"]["dir"]) / "ruhroh-run-manifest.json").read_text()
    )
    assert manifest["usage"]["totalTokens"] == 2000 and manifest["adapterVersion"] == "1.4.0"


# -- the continuity level, in every report format ---------------------------------


@pytest.mark.parametrize("level", ["native_session", "workspace_plus_transcript", "workspace_only"])
def test_the_continuity_level_is_recorded_and_shown_in_every_format(
    level, rook_workspace, rook_cli, tmp_path
):
    ws = rook_workspace
    wrapper = ws.script("w.sh", """
        #!/bin/bash
        echo '{"status":"goal_satisfied","output":"ok"}'
        """)  # fmt: skip
    profile(ws, str(wrapper), continuity=level)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    out = {f: tmp_path / f"r.{f}" for f in ("md", "html", "xml")}
    r = rook_cli(
        "run", "--json",
        "--report", f"markdown:{out['md']}",
        "--report", f"html:{out['html']}",
        "--report", f"junit:{out['xml']}",
    )  # fmt: skip
    assert r.exit_code == 0, r.stdout + r.stderr
    assert only(r)["turns"][0]["evidence"]["continuity"] == level
    for path in out.values():
        assert level in path.read_text(), path
    run_dir = Path(r.report["run"]["dir"])
    manifest = json.loads((run_dir / "ruhroh-run-manifest.json").read_text())
    assert manifest["continuity"] == level
    assert f"Ruhroh continuity: {level}" in rook_cli("run").stdout
    assert f"Ruhroh continuity: {level}" in rook_cli("runs", "show", run_dir.name).stdout


def _replaying(ws, tmp_path, stdout, result_file):
    """A wrapper (the profile's) that prints ``stdout`` and, given one, writes
    ``result_file`` as its result file."""
    (tmp_path / "out.txt").write_text(stdout)
    if result_file:
        (tmp_path / "result.json").write_text(result_file)
    wrapper = ws.script(
        "w.sh",
        f"""
        #!/bin/bash
        [ -f {tmp_path}/result.json ] && cp {tmp_path}/result.json "$RUHROH_RESULT_PATH"
        cat {tmp_path}/out.txt
        """,
    )
    profile(ws, str(wrapper))


BIG_ANSWER = r"""
#!/usr/bin/env python3
import json, os
body = ("lorem ipsum " * 40 + os.environ["DESK_KEY"] + "\n") * 10000  # about 5 MiB
with open(os.environ["RUHROH_RESULT_PATH"], "w") as fh:
    json.dump({"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied",
               "output": body, "model": "m"}, fh)
print(json.dumps({"status": "goal_satisfied"}))
"""


def test_a_big_answer_is_stored_once_in_the_record_and_the_report(rook_workspace, rook_cli, monkeypatch):
    """A wrapper answering 5 MiB had it stored twice in the scenario's record and
    in report.json: as the turn's output and again in the evidence's ``result``
    (every field the wrapper reported). The answer is whole in the output; the
    result keeps the field cut as a record cuts a long text, saying where the
    whole answer is. The secret in it is redacted in both."""
    secret = "dk-s3cr3t-4471"
    monkeypatch.setenv("DESK_KEY", secret)
    ws = rook_workspace
    wrapper = ws.script("big.py", BIG_ANSWER)
    ws.profile({"id": "rr", "hooks": {"execute": {"ruhroh": {"command": str(wrapper)}}},
                "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}]})
    ws.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "lorem"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    turn = only(r)["turns"][0]
    assert len(turn["output"]) > 4_900_000 and turn["output"].endswith("[redacted:DESK_KEY]\n")
    kept = turn["evidence"]["result"]
    assert kept["model"] == "m" and kept["status"] == "goal_satisfied"
    assert turn["output"].startswith(kept["output"].split("\n... [")[0])
    assert kept["output"].endswith("more chars; the whole answer is the turn's output]"), kept["output"][-90:]
    run = Path(r.report["run"]["dir"])
    for name in ("scenarios/s.1.json", "report.json"):
        assert (run / name).stat().st_size < 5_500_000, name
    assert not any(secret in p.read_text(errors="replace") for p in run.rglob("*") if p.is_file())
