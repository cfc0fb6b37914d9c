"""The run record, the JSON report, the terminal output, exit codes and redaction."""

from __future__ import annotations

import json

import pytest

SECRET = "sk-live-9f8e7d6c5b4a"

LEAKY = r"""
#!/bin/bash
phase="$1"
echo "debug: using token $API_TOKEN" >&2
case "$phase" in
  execute)
    goal=$(cat)
    [ "$goal" = crash ] && { echo "401 for Bearer $API_TOKEN" >&2; exit 1; }
    printf '{"output": "token is %s", "calls": [{"name": "auth", "arguments": {"token": "%s", "nested": {"url": "https://u:%s@x"}}}], "echo": {"deep": ["%s"]}, "usage": {"input": 1, "output": 1}}\n' \
      "$API_TOKEN" "$API_TOKEN" "$API_TOKEN" "$API_TOKEN" ;;
  collect) printf '{"log": "Authorization: Bearer %s"}\n' "$API_TOKEN" ;;
esac
exit 0
"""


@pytest.fixture
def ws(rook_workspace, monkeypatch):
    monkeypatch.setenv("API_TOKEN", SECRET)
    rook_workspace.script("agent.sh", LEAKY)
    rook_workspace.profile(
        {
            "id": "staging",
            "name": "Staging",
            "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"},
            "env": [{"variable": "API_TOKEN", "purpose": "bearer token for the agent API"}],
            "capabilities": {"calls": True, "usage": True},
        }
    )
    rook_workspace.scenario(
        {
            "id": "leak",
            "tags": ["smoke"],
            "goal": "what is the token?",
            "criteria": [{"contains": "nothing"}, {"called": "auth"}],
        }
    )
    rook_workspace.scenario(
        {"id": "crash", "tags": ["nightly"], "goal": "crash", "criteria": [{"contains": "x"}]}
    )
    return rook_workspace


def test_secrets_never_reach_the_record_the_reports_or_the_terminal(ws, rook_cli, tmp_path):
    report_path = tmp_path / "out" / "report.json"
    r = rook_cli("run", "--json", "--report", f"json:{report_path}")
    assert r.exit_code == 1
    for sink, text in {
        "stdout": r.stdout,
        "stderr": r.stderr,
        "run files": ws.all_run_text(r.report["run"]["id"]),
        "report file": report_path.read_text(),
    }.items():
        assert SECRET not in text, f"the secret leaked into {sink}"
    assert "[redacted:API_TOKEN]" in r.stdout
    record = ws.record(r.report["run"]["id"], "leak.1")
    assert record["turns"][0]["calls"][0]["arguments"]["token"] == "[redacted:API_TOKEN]"
    assert "[redacted:API_TOKEN]" in record["hooks"][0]["stderr"]
    crash = next(s for s in r.report["scenarios"] if s["id"] == "crash")
    assert "401 for Bearer [redacted:API_TOKEN]" in crash["hooks"][0]["diagnosis"]
    r = rook_cli("run")  # the table, too
    assert SECRET not in r.stdout + r.stderr and "[redacted:API_TOKEN]" in r.stdout


def test_run_directory_layout_and_pinned_profile(ws, rook_cli):
    r = rook_cli("run", "--json")
    run_id = r.report["run"]["id"]
    run_dir = ws.run_dir(run_id)
    assert r.report["run"]["dir"] == str(run_dir.resolve())
    names = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    assert {
        "run.json",
        "profile.yaml",
        "report.json",
        "scenarios/leak.1.json",
        "scenarios/crash.1.json",
    } <= set(names)
    assert not [n for n in names if n.endswith(".tmp")]
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["profile"] == {
        "id": "staging",
        "name": "Staging",
        "file": manifest["profile"]["file"],
    }
    assert manifest["phases"] == ["prepare", "open", "execute", "close", "collect", "judge"]
    record = ws.record(run_id, "leak.1")
    assert {"scenario", "hooks", "turns", "collected", "status", "criteria"} <= set(record)
    assert record["scenario"]["goal" if "goal" in record["scenario"] else "turns"]
    # renaming the profile keeps history: runs pin the id
    ws.profile(
        {
            "id": "staging",
            "name": "Renamed",
            "hooks": {"execute": "scripts/agent.sh"},
            "env": [{"variable": "API_TOKEN", "purpose": "x"}],
        }
    )
    r2 = rook_cli("run", "--json", "--run", run_id)
    assert r2.exit_code == 1 and r2.report["run"]["profile"]["id"] == "staging"


def test_json_report_shape(ws, rook_cli):
    r = rook_cli("run", "--json")
    rep = r.report
    assert {"id", "dir", "project", "agent", "profile", "phases", "capabilities"} <= set(rep["run"])
    assert set(rep["run"]["capabilities"]) == {"declared", "observed"}
    assert rep["run"]["capabilities"]["declared"] == {"calls": True, "usage": True}
    for s in rep["scenarios"]:
        assert {"id", "repeat_index", "status", "reason", "turns", "criteria", "hooks"} <= set(s)
        for t in s["turns"]:
            assert {
                "turn",
                "output",
                "conversation",
                "usage",
                "calls",
                "evidence",
                "seconds",
            } <= set(t)
        for c in s["criteria"]:
            assert {"type", "status", "reason"} <= set(c)
        for h in s["hooks"]:
            assert {"phase", "status", "exit_code", "seconds", "diagnosis"} <= set(h)
    assert {
        "passed",
        "failed",
        "unverifiable",
        "error",
        "stopped",
        "not_runnable",
        "pass_rate",
        "coverage",
    } <= set(rep["summary"])
    assert rep["summary"]["failed"] == 1 and rep["summary"]["error"] == 1
    leak = next(s for s in rep["scenarios"] if s["id"] == "leak")
    assert leak["turns"][0]["evidence"] == {"echo": {"deep": ["[redacted:API_TOKEN]"]}}


def test_json_flag_prints_exactly_one_document_on_stdout(ws, rook_cli):
    r = rook_cli("run", "--json")
    json.loads(r.stdout)  # the whole of stdout is one JSON document
    assert " leak  " in r.stderr  # progress goes to stderr


def test_table_and_progress(ws, rook_cli):
    r = rook_cli("run")
    assert "scenario" in r.stdout and "status" in r.stdout
    assert "FAIL" in r.stdout and "ERROR" in r.stdout
    assert "pass rate" in r.stdout


def test_the_summary_line_counts_errors_in_the_plural(ws, rook_cli, tmp_path):
    """'2 errors', as pytest says it, not '2 error'; one is '1 error'."""
    ws.scenario({"id": "crash2", "goal": "crash", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--report", f"markdown:{tmp_path / 'r.md'}")
    assert "1 failed, 2 errors — pass rate" in r.stdout, r.stdout
    assert "1 failed, 2 errors" in (tmp_path / "r.md").read_text(encoding="utf-8")
    one = rook_cli("run", "--only", "crash")
    assert "1 error — pass rate" in one.stdout, one.stdout
    assert " crash  " in r.stderr


def test_exit_codes(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "yes"}\'\nexit 0\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    ws.scenario({"id": "ok", "goal": "g", "criteria": [{"contains": "yes"}]})
    ws.scenario({"id": "bad", "tags": ["b"], "goal": "g", "criteria": [{"contains": "no"}]})
    assert rook_cli("run", "--only", "ok").exit_code == 0
    assert rook_cli("run").exit_code == 1
    assert rook_cli("run", "--tag", "b").exit_code == 1
    assert rook_cli("run", "--only", "nope").exit_code == 2


def test_selectors_narrow_one_another(ws, rook_cli):
    r = rook_cli("run", "--json", "--tag", "smoke,nightly", "--only", "crash")
    assert [s["id"] for s in r.report["scenarios"]] == ["crash"]
    r = rook_cli("run", "--json", "--tag", "smoke")
    assert [s["id"] for s in r.report["scenarios"]] == ["leak"]


def test_repeat_records_each_run(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "yes"}\'\nexit 0\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    ws.scenario({"id": "s", "goal": "g", "repeat": 3, "criteria": [{"contains": "yes"}]})
    r = rook_cli("run", "--json")
    assert [(s["id"], s["repeat_index"]) for s in r.report["scenarios"]] == [
        ("s", 1),
        ("s", 2),
        ("s", 3),
    ]
    r = rook_cli("run", "--json", "--repeat", "2")
    assert len(r.report["scenarios"]) == 2


def test_atomic_write_writes_whole_files_and_leaves_no_temporary_file(tmp_path):
    """The record writer (plain descriptor calls): the text whole, a lone
    surrogate as its escape, a replaced file never half-written, and on
    failure a clear error and no temporary file left behind."""
    from rook_core.errors import RunStoreError
    from rook_core.store import atomic_write

    target = tmp_path / "r.json"
    atomic_write(target, '{"a": "é"}\n')
    assert target.read_text(encoding="utf-8") == '{"a": "é"}\n'
    big = "x" * (1 << 20) + "\udc80"  # larger than one pipe or page, with half a character
    atomic_write(str(target), big)
    assert target.read_bytes() == b"x" * (1 << 20) + b"\\udc80"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    with pytest.raises(RunStoreError, match="cannot write .*missing"):
        atomic_write(tmp_path / "missing" / "r.json", "{}")
    (tmp_path / "dir.json").mkdir()  # the rename fails: the temporary file is removed
    with pytest.raises(RunStoreError, match="dir.json"):
        atomic_write(tmp_path / "dir.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.json", "r.json"]


BIG = r"""
#!/usr/bin/env python3
import json, sys
if sys.argv[1] == "execute":
    sys.stdin.read()
    print(json.dumps({"output": "order " + "o" * 1_000_000 + " END-OF-ANSWER",
                      "calls": [{"name": "lookup", "arguments": {"q": "c" * 300_000}}],
                      "trace": "t" * 300_000 + " END-OF-TRACE"}))
elif sys.argv[1] == "collect":
    print(json.dumps({"log": "l" * 300_000 + " END-OF-LOG"}))
"""


def test_a_hooks_answer_is_stored_once_and_every_reader_still_has_it(
    rook_workspace, rook_cli, tmp_path
):
    """An execute hook's answer was stored twice in its record: as the hook's
    parsed data and as the turn (collect's as the hook's data and as collected),
    so a 10 MiB answer made a 20 MB record. It is stored once, as the turn (as
    collected), which is what the report, the judges and rook diff read."""
    rook_workspace.script("big.py", BIG)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/big.py",
                                                 "collect": "scripts/big.py"},
                            "capabilities": {"calls": True}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"contains": "order"}, {"called": "lookup"}]})
    split = rook_cli("run", "--json", "--run-name", "big", "--phases", "prepare,open,execute")
    assert split.statuses() == {"s": "pending"}, split.stderr
    done = rook_cli("run", "--json", "--run", "big")  # judged from the stored record
    assert done.statuses() == {"s": "passed"}, done.stderr
    text = (rook_workspace.run_dir("big") / "scenarios" / "s.1.json").read_text()
    for big in ("o" * 1_000_000, "c" * 300_000, "t" * 300_000, "l" * 300_000):
        assert text.count(big) == 1, big[0]
    assert len(text) < 2_200_000
    record = json.loads(text)
    (turn,) = record["turns"]
    assert turn["output"].endswith(" END-OF-ANSWER") and turn["calls"][0]["name"] == "lookup"
    assert turn["evidence"]["trace"].endswith(" END-OF-TRACE")
    assert record["collected"]["evidence"]["log"].endswith(" END-OF-LOG")
    execute = next(h for h in record["hooks"] if h["phase"] == "execute")
    assert execute["status"] == "ok" and execute["turn"] == 1
    out = tmp_path / "out"
    rebuilt = rook_cli("report", "big", "--rebuild", "--report", f"json:{out}/r.json",
                       "--report", f"junit:{out}/r.xml", "--report", f"markdown:{out}/r.md",
                       "--report", f"html:{out}/r.html")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    entry = json.loads((out / "r.json").read_text())["scenarios"][0]
    assert entry["status"] == "passed" and entry["turns"][0]["output"] == turn["output"]
    assert "order ooo" in (out / "r.html").read_text()
    assert rook_cli("runs", "show", "big").exit_code == 0
    assert rook_cli("diff", "big", "big").exit_code == 0
