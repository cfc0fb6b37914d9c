"""History: rook runs, rook runs show, rook report (re-render), rook diff, the derived index."""

from __future__ import annotations

import json
import os
import shutil
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# Fails the scenarios named in FAIL_IDS; FLAKY_DIR makes scenario g alternate;
# CALLS shows an (empty) call log.
AGENT = """
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    cat > /dev/null
    case ",$FAIL_IDS," in *",$ROOK_SCENARIO_ID,"*) echo '{"output": "bad"}'; exit 0;; esac
    if [ "$ROOK_SCENARIO_ID" = g ] && [ -n "$FLAKY_DIR" ]; then
        n=$(cat "$FLAKY_DIR/n" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$FLAKY_DIR/n"
        [ $((n % 2)) = 0 ] && { echo '{"output": "bad"}'; exit 0; }
    fi
    if [ -n "$CALLS" ]; then echo '{"output": "good", "calls": []}'; exit 0; fi
    echo '{"output": "good"}'
"""


def scenario(sid, **extra):
    return {"id": sid, "goal": sid, "criteria": [{"contains": "good"}], **extra}


@pytest.fixture
def ws(rook_workspace):
    rook_workspace.script("agent.sh", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    return rook_workspace


def run(rook_cli, *args, env=None):
    r = rook_cli("run", "--json", *args, env=env)
    assert r.exit_code in (0, 1), r.stdout + r.stderr
    return r.report["run"]["id"]


def test_runs_lists_history_newest_first(ws, rook_cli):
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    first = run(rook_cli)
    second = run(rook_cli, env={"FAIL_IDS": "b"})

    r = rook_cli("runs", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["total"] == 2
    newest, oldest = doc["runs"]
    assert (newest["id"], oldest["id"]) == (second, first)
    assert newest["counts"]["passed"] == 1 and newest["counts"]["failed"] == 1
    assert newest["pass_rate"] == 0.5 and oldest["pass_rate"] == 1.0
    assert newest["profile"] == "p" and newest["complete"] and newest["exit_code"] == 1

    text = rook_cli("runs").stdout
    assert second in text and first in text and "50.0%" in text and "failing" in text
    assert text.index(second) < text.index(first)
    assert first not in rook_cli("runs", "--limit", "1").stdout
    assert rook_cli("runs", "--json", "--profile", "other").exit_code == 2  # no such profile

    shown = rook_cli("runs", "show", "latest")
    assert shown.exit_code == 0 and second in shown.stdout and "FAIL" in shown.stdout
    assert first in rook_cli("runs", "show", "latest~1").stdout
    assert first in rook_cli("runs", "show", first[:-2]).stdout  # a unique prefix
    as_json = json.loads(rook_cli("runs", "show", first, "--json").stdout)
    assert as_json["run"]["id"] == first

    missing = rook_cli("runs", "show", "nope")
    assert missing.exit_code == 2 and "run nope: no such run" in missing.stderr
    assert rook_cli("runs", "show", "latest~5").exit_code == 2


def test_runs_sums_statuses_into_errored_and_unverified(ws, rook_cli):
    # history.md: "errored is error + stopped + infra_error; unverified is
    # unverifiable + not runnable + pending"; only passed and failed were tested
    ws.script("mixed.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        case "$ROOK_SCENARIO_ID" in
            crash) exit 3;;
            blind) echo '{"output": "good"}';;
            *) echo '{"output": "good", "calls": []}';;
        esac
    """)
    ws.profile({"id": "m", "hooks": {"execute": "scripts/mixed.sh"},
                "capabilities": {"calls": True}})
    ws.scenario(scenario("ok"))
    ws.scenario(scenario("crash"))
    ws.scenario({"id": "blind", "goal": "b", "criteria": [{"not_called": "delete"}]})
    ws.scenario({"id": "notrun", "goal": "n", "criteria": [{"max_tokens": 100}]})
    done = run(rook_cli, "--profile", "m")
    assert rook_cli("runs", "show", done, "--json").report["summary"]["unverifiable"] == 1
    cells = listed_first(rook_cli)
    assert cells["runs"] == "4" and cells["passed"] == "1" and cells["failed"] == "0", cells
    assert cells["errored"] == "1" and cells["unverified"] == "2", cells  # error; the other two
    split = run(rook_cli, "--profile", "m", "--phases", "prepare,open,execute")
    cells = listed_first(rook_cli)
    assert cells["run"] == split and cells["unverified"] == "3", cells  # 3 pending


def listed_first(rook_cli) -> dict[str, str]:
    """The cells of the newest run's row of the ``rook runs`` table, by column."""
    header, _, row = rook_cli("runs").stdout.splitlines()[:3]
    run_id, day, hour, *rest = row.split()
    return dict(zip(header.replace("pass rate", "pass_rate").split(),
                    [run_id, f"{day} {hour}", *rest], strict=True))


def test_the_latest_named_in_an_error_is_the_latest_run(ws, rook_cli):
    """Named runs sort anywhere by name: run-two is last by name, run-three is newest."""
    ws.scenario(scenario("a"))
    for name in ("run-one", "run-two", "run-three"):
        assert run(rook_cli, "--run-name", name) == name
    assert rook_cli("runs", "show", "latest", "--json").report["run"]["id"] == "run-three"
    for args in (("runs", "show", "nope"), ("report", "nope"), ("diff", "nope", "latest"),
                 ("run", "--run", "nope")):
        r = rook_cli(*args)
        assert r.exit_code == 2 and "no such run" in r.stderr, args
        assert "latest is run-three)" in r.stderr, (args, r.stderr)
    for args in (("runs", "show", ""), ("report", " "), ("diff", "", "latest"),
                 ("run", "--run", "")):  # `"$ID"` with ID unset: never the only or latest run
        r = rook_cli(*args)
        assert r.exit_code == 2 and "names no run; give its id" in r.stderr, (args, r.stderr)
        assert r.stdout == "" and "Traceback" not in r.stderr, args
    empty = ws.runs_dir.parent / "runs-empty"
    empty.mkdir()
    from rook_core.history import latest_hint

    assert latest_hint(empty) == " (no runs yet)"


def test_a_run_name_given_where_its_id_goes_is_told_the_id(ws, rook_cli):
    # 'rook run --run-name "nightly ci"' makes run nightly-ci-<hash>; 'rook runs show
    # "nightly ci"' (and report, diff, run --run) said "no such run" and named the
    # latest run, another one perhaps. The error names the run that name made.
    ws.scenario(scenario("a"))
    named = run(rook_cli, "--run-name", "nightly ci")
    assert named.startswith("nightly-ci-")
    run(rook_cli)  # the latest is another run
    for args in (("runs", "show", "nightly ci"), ("report", "nightly ci"),
                 ("diff", "nightly ci", "latest"), ("run", "--run", "nightly ci")):
        r = rook_cli(*args)
        assert r.exit_code == 2, (args, r.stderr)
        assert (f"; 'nightly ci' is the --run-name of run {named}: give its id, "
                f"{named}") in r.stderr, (args, r.stderr)


def test_an_ambiguous_prefix_says_how_many_runs_it_matches(ws, rook_cli):
    # "ambiguous, matches r-1, ..., r-5" named five of seven, as if they were all
    ws.scenario(scenario("a"))
    for k in range(1, 8):
        run(rook_cli, "--run-name", f"r-{k}", "-q")
    r = rook_cli("runs", "show", "r-")
    assert r.exit_code == 2
    assert "run r-: ambiguous, matches 7 runs (r-1, r-2, r-3, r-4, r-5, ...); give more of its id" in r.stderr, r.stderr
    two = rook_cli("diff", "r-", "latest")
    assert two.exit_code == 2 and "matches 7 runs (" in two.stderr, two.stderr


def test_runs_show_of_an_unfinished_run_names_the_command_that_finishes_it(ws, rook_cli):
    # rook run said "resume with: ..."; rook runs show of the same run said nothing
    ws.scenario(scenario("a"))
    split = run(rook_cli, "--phases", "prepare,open,execute,close")
    shown = rook_cli("runs", "show", split)
    assert shown.exit_code == 0 and "PENDING" in shown.stdout
    assert f"finish it with: rook run --run {split} --phases collect,judge -w {ws.root}\n" in shown.stderr
    assert rook_cli("runs", "show", split, "--json").stderr == ""  # one document, no more
    done = run(rook_cli)
    assert "finish it with" not in rook_cli("runs", "show", done).stderr


def test_report_of_an_unfinished_run_names_the_command_that_finishes_it(ws, rook_cli, tmp_path):
    # rook runs show said "finish it with: ..."; rook report of the same run said nothing
    ws.scenario(scenario("a"))
    split = run(rook_cli, "--phases", "prepare,open,execute,close")
    hint = f"finish it with: rook run --run {split} --phases collect,judge -w {ws.root}\n"
    shown = rook_cli("report", split)
    assert shown.exit_code == 0 and "PENDING" in shown.stdout and hint not in shown.stdout
    assert hint in shown.stderr, shown.stderr
    out = tmp_path / "r.xml"
    written = rook_cli("report", split, f"--report=junit:{out}")
    assert written.exit_code == 0 and hint in written.stderr, written.stderr
    assert out.read_text().startswith("<?xml")
    as_json = rook_cli("report", split, "--json")
    assert as_json.report["summary"]["pending"] == 1 and "finish it with" not in as_json.stderr
    done = run(rook_cli)
    assert "finish it with" not in rook_cli("report", done).stderr


def test_latest_before_any_run_says_there_is_none_yet(ws, rook_cli):
    # it said "run latest: there are only 0 run(s) in ..."
    ws.scenario(scenario("a"))
    for args in (("runs", "show", "latest"), ("diff", "latest~1", "latest"), ("report", "latest")):
        r = rook_cli(*args)
        assert r.exit_code == 2, r.stderr
        assert f"no runs yet in {ws.runs_dir.resolve()} (rook run makes one)" in r.stderr, r.stderr


def test_a_runs_folder_that_is_a_file_is_named_not_taken_for_no_runs(ws, rook_cli):
    # with the runs folder replaced by a file, rook runs listed "no runs yet" (exit 0)
    # and rook runs show, report, diff and run --run said "no such run ... (no runs
    # yet)": the file in the way was named by none of them
    ws.scenario(scenario("a"))
    done = run(rook_cli)
    shutil.rmtree(ws.runs_dir)
    ws.runs_dir.write_text("")
    said = f"{ws.runs_dir.resolve()} is a file, not the runs folder"
    for args in (("runs",), ("runs", "--json"), ("runs", "show", done), ("report", done),
                 ("diff", done, "latest"), ("runs", "show", "latest"), ("run", "--run", done)):
        r = rook_cli(*args)
        assert r.exception is None and r.exit_code == 2, (args, r.stdout, r.stderr)
        assert said in r.stderr and "no runs yet" not in r.stderr + r.stdout, (args, r.stderr)
        assert "Traceback" not in r.stderr
    # a new run cannot make its folder there: the workspace is wrong and nothing ran,
    # so exit 2 as for the commands above (it was 1, "a scenario failed", to a CI job)
    for args in (("run",), ("run", "--run-name", "named"), ("run", "--shard", "1/2", "--run-name", "ci")):
        r = rook_cli(*args)
        assert r.exit_code == 2 and "cannot create the run directory" in r.stderr, r.stderr
        assert f"Not a directory ({said}; move it away)" in r.stderr, r.stderr
    assert ws.runs_dir.is_file() and ws.runs_dir.read_text() == ""


@pytest.mark.parametrize("kind", ["broken link", "link to a file", "named pipe", "socket"])
def test_a_runs_folder_that_is_no_file_either_says_what_is_there(ws, rook_cli, kind):
    # a broken symbolic link, a link to a file, a named pipe or a socket in the runs
    # folder's place was called "a file"; rook run with a broken link said its new
    # run "already exists" (exit 2)
    ws.scenario(scenario("a"))
    done = run(rook_cli)
    shutil.rmtree(ws.runs_dir)
    other = ws.root / "elsewhere"
    if kind == "broken link":
        ws.runs_dir.symlink_to(other)
        said = f"is a broken symbolic link to {other}, not the runs folder"
    elif kind == "link to a file":
        other.write_text("")
        ws.runs_dir.symlink_to(other)
        said = f"is a symbolic link to a file ({other}), not the runs folder"
    elif kind == "named pipe":
        os.mkfifo(ws.runs_dir)
        said = "is a named pipe, not the runs folder"
    else:
        os.mknod(ws.runs_dir, 0o600 | stat.S_IFSOCK)
        said = "is a socket, not the runs folder"
    said = f"{ws.runs_dir.parent.resolve() / 'runs'} {said}"
    for args in (("runs",), ("runs", "show", done), ("report", done), ("diff", done, "latest"),
                 ("run", "--run", done)):
        r = rook_cli(*args)
        assert r.exception is None and r.exit_code == 2, (args, r.stdout, r.stderr)
        assert f"{said}; move it away" in r.stderr and "is a file" not in r.stderr, r.stderr
    for args in (("run",), ("run", "--run-name", "named")):
        r = rook_cli(*args)
        assert r.exit_code == 2 and "cannot create the run directory" in r.stderr, r.stderr
        assert f"({said}; move it away)" in r.stderr and "already exists" not in r.stderr
    assert os.path.lexists(ws.runs_dir) and not os.path.isdir(ws.runs_dir)


def test_latest_beyond_a_lone_run_says_there_is_only_one(ws, rook_cli):
    # it said "run latest~1: there are only 1 run in ..."
    ws.scenario(scenario("a"))
    rook_cli("run", "--json")
    r = rook_cli("runs", "show", "latest~1")
    assert r.exit_code == 2 and "run latest~1: there is only 1 run in " in r.stderr, r.stderr


def test_latest_takes_ascii_digits_only(ws, rook_cli):
    # int() reads any Unicode digit: latest~١ (Arabic-Indic one) showed latest~1
    ws.scenario(scenario("a"))
    rook_cli("run", "--json")
    rook_cli("run", "--json")
    r = rook_cli("runs", "show", "latest~\u0661")
    assert r.exit_code == 2 and "Traceback" not in r.stderr, r.stderr
    assert "latest~\u0661" in r.stderr and "no such run" in r.stderr, r.stderr


def test_the_index_is_derived_and_rebuilt(ws, rook_cli):
    ws.scenario(scenario("a"))
    run_id = run(rook_cli)
    summary = ws.run_dir(run_id) / "summary.json"
    assert summary.is_file()
    original = json.loads(summary.read_text())
    assert original["id"] == run_id and original["pass_rate"] == 1.0

    summary.unlink()
    listed = json.loads(rook_cli("runs", "--json").stdout)["runs"][0]
    assert listed.pop("state") == "complete"  # the listing's, worked out as it lists
    assert listed == original and json.loads(summary.read_text()) == original

    summary.write_text("{ not json")
    assert json.loads(rook_cli("runs", "--json").stdout)["runs"][0] == {**original, "state": "complete"}

    # a report newer than its summary wins: the summary is rebuilt from it
    report_path = ws.run_dir(run_id) / "report.json"
    report = json.loads(report_path.read_text())
    report["summary"]["pass_rate"] = 0.25
    report_path.write_text(json.dumps(report))
    stamp = summary.stat().st_mtime_ns
    os.utime(report_path, ns=(stamp + 10**9, stamp + 10**9))
    assert json.loads(rook_cli("runs", "--json").stdout)["runs"][0]["pass_rate"] == 0.25

    assert rook_cli("runs", "--reindex").exit_code == 0


def test_incomplete_and_foreign_directories(ws, rook_cli):
    ws.scenario(scenario("a"))
    r = rook_cli("run", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0, r.stderr
    (ws.runs_dir / "not-a-run").mkdir()
    (ws.runs_dir / "stray.txt").write_text("x")
    runs = json.loads(rook_cli("runs", "--json").stdout)["runs"]
    assert len(runs) == 1 and runs[0]["complete"] is False
    assert "incomplete" in rook_cli("runs").stdout


def test_a_run_that_finishes_as_it_is_listed_is_listed_as_it_finished(ws, rook_cli):
    """rook runs read a run's summary, then looked for the rook run holding it: a run
    that finished in between (its report written, its lock let go) was listed
    'incomplete (6/6 recorded)'. One that no rook run holds is read again. The
    listing's first read is taken here before the run finishes, the second after."""
    from rook_core.cli.runs import _in_progress
    from rook_core.history import list_runs

    ws.scenario(scenario("a"))
    r = rook_cli("run", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0, r.stderr
    [stale] = list_runs(ws.runs_dir)
    assert stale["complete"] is False, stale
    r = rook_cli("run", "--run", stale["id"], "--phases", "collect,judge")
    assert r.exit_code == 0, r.stderr
    fresh = _in_progress(ws.runs_dir, stale)
    assert fresh["complete"] is True and fresh["id"] == stale["id"], fresh
    assert "in_progress" not in fresh, fresh


def test_many_runs_and_copies_without_an_index(ws, rook_cli):
    ws.scenario(scenario("a"))
    run_id = run(rook_cli)
    src = ws.run_dir(run_id)
    for i in range(60):
        dst = ws.runs_dir / f"{run_id}-c{i:03d}"
        shutil.copytree(src, dst)
        if i % 2:
            (dst / "summary.json").unlink()
    doc = json.loads(rook_cli("runs", "--json", "--all").stdout)
    assert doc["total"] == 61 and len(doc["runs"]) == 61
    assert all(r["pass_rate"] == 1.0 for r in doc["runs"])
    assert all((ws.runs_dir / r["id"] / "summary.json").is_file() for r in doc["runs"])


def test_runs_lists_the_newest_20_and_counts_the_rest_in_words(ws, rook_cli):
    # the default listing and its note were held by no test; one left out read
    # "(1 older runs not shown; ...)"
    ws.scenario(scenario("a"))
    src = ws.run_dir(run(rook_cli))
    for i in range(20):
        shutil.copytree(src, ws.runs_dir / f"copy-{i:02d}")
    text = rook_cli("runs").stdout
    assert len(text.splitlines()[2:-1]) == 20, text  # below the header, above the note
    assert text.rstrip().endswith("(1 older run not shown; --all shows every run)"), text
    assert "(2 older runs not shown; --all shows every run)" in rook_cli("runs", "-n", "19").stdout
    assert "not shown" not in rook_cli("runs", "--all").stdout


def test_runs_with_both_n_and_all_is_refused(ws, rook_cli):
    # `rook runs -n 5 --all` listed every run, -n silently ignored
    ws.scenario(scenario("a"))
    run(rook_cli)
    for flags in (["-n", "5", "--all"], ["--all", "--limit", "5"], ["--all", "-n", "20"]):
        refused = rook_cli("runs", *flags)
        assert refused.exit_code == 2, (flags, refused.stdout)
        n = flags[flags.index("-n" if "-n" in flags else "--limit") + 1]
        assert f"-n {n} and --all: give one of them" in refused.stderr, refused.stderr
        assert refused.stdout == ""


def test_a_run_copied_under_a_new_name_is_named_by_its_folder(ws, rook_cli, tmp_path):
    ws.scenario(scenario("a"))
    run_id = run(rook_cli)
    copy = ws.runs_dir / "baseline"
    shutil.copytree(ws.run_dir(run_id), copy)

    diff = rook_cli("diff", run_id, "baseline")
    assert diff.exit_code == 0 and f"A {run_id} (" in diff.stdout, diff.stdout
    assert "B baseline (" in diff.stdout
    shown = rook_cli("runs", "show", "baseline")
    assert f"run baseline: {copy}" in shown.stdout + shown.stderr
    for args in (("runs", "show", "baseline", "--json"), ("report", "baseline", "--json"),
                 ("report", "baseline", "--rebuild", "--json")):
        doc = json.loads(rook_cli(*args).stdout)
        assert (doc["run"]["id"], doc["run"]["dir"]) == ("baseline", str(copy)), args
    rook_cli("report", "baseline", "--report", f"junit:{tmp_path}/j.xml")
    assert 'name="run_id" value="baseline"' in (tmp_path / "j.xml").read_text()
    original = json.loads(rook_cli("report", run_id, "--json").stdout)
    assert original["run"]["id"] == run_id

    resumed = rook_cli("run", "--run", "baseline", "--json")  # nothing left: it reports again
    assert resumed.exit_code == 0 and resumed.report["run"]["id"] == "baseline"
    assert json.loads((copy / "run.json").read_text())["id"] == "baseline"
    assert json.loads((ws.run_dir(run_id) / "run.json").read_text())["id"] == run_id


def test_an_unfinished_run_copied_under_a_new_name_is_finished_as_that_run(ws, rook_cli,
                                                                          tmp_path):
    # the test above finishes a copy with nothing left to run: no hook saw its id
    seen = tmp_path / "seen"
    ws.script("seen.sh", """
        #!/bin/bash
        echo "$1 $ROOK_RUN_ID" >> "$SEEN"
        [ "$1" = execute ] && echo '{"output": "good"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/seen.sh", "collect": "scripts/seen.sh"}})
    ws.scenario(scenario("a"))
    env = {"SEEN": str(seen)}
    run(rook_cli, "--phases", "prepare,open,execute,close", "--run-name", "orig", env=env)
    shutil.copytree(ws.run_dir("orig"), ws.runs_dir / "baseline")
    finished = rook_cli("run", "--run", "baseline", "--json", env=env)
    assert finished.exit_code == 0, finished.stderr
    assert seen.read_text().splitlines() == ["execute orig", "collect baseline"]
    assert finished.report["run"]["id"] == "baseline"
    assert finished.report["run"]["dir"] == str(ws.runs_dir / "baseline")
    assert json.loads((ws.runs_dir / "baseline" / "run.json").read_text())["id"] == "baseline"
    assert json.loads((ws.run_dir("orig") / "run.json").read_text())["id"] == "orig"
    listed = {r["id"]: r for r in json.loads(rook_cli("runs", "--json").stdout)["runs"]}
    assert listed["baseline"]["complete"] and not listed["orig"]["complete"], listed


def test_report_renders_a_past_run_again(ws, rook_cli, tmp_path):
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    run_id = run(rook_cli, env={"FAIL_IDS": "b"})
    run_dir = ws.run_dir(run_id)
    before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()}

    out = tmp_path / "again"
    r = rook_cli("report", run_id, "--report", f"junit:{out}/r.xml", "--report",
                 f"html:{out}/r.html", "--report", f"markdown:{out}/r.md", "--report",
                 f"json:{out}/r.json")
    assert r.exit_code == 0, r.stderr
    root = ET.parse(out / "r.xml").getroot()
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert run_id in (out / "r.html").read_text()
    assert "1 failed" in (out / "r.md").read_text()
    stored = json.loads((run_dir / "report.json").read_text())
    assert json.loads((out / "r.json").read_text()) == stored
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()} == before

    table = rook_cli("report", "latest")
    assert table.exit_code == 0 and "FAIL" in table.stdout and run_id in table.stdout
    rebuilt = json.loads(rook_cli("report", run_id, "--rebuild", "--json").stdout)
    assert [(s["id"], s["status"]) for s in rebuilt["scenarios"]] == [("a", "passed"),
                                                                     ("b", "failed")]
    assert rook_cli("report", run_id, "--report", "pdf:x.pdf").exit_code == 2
    assert rook_cli("report", "nope").exit_code == 2
    refused = rook_cli("report", run_id, "--report", f"json:{out}")  # a directory
    assert refused.exit_code == 2 and f"--report json:{out}: {out} is a directory" in refused.stderr


def test_a_report_never_replaces_a_file_of_a_runs_record(ws, rook_cli):
    ws.scenario(scenario("a"))
    run_id = run(rook_cli)
    run_dir = ws.run_dir(run_id)
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}

    for name in ("report.json", "run.json", "summary.json", "profile.yaml",
                 "scenarios/a.1.json", "state/a.1/x.md"):
        target = f"markdown:{run_dir}/{name}"
        for args in (("report", run_id), ("run", "--run", run_id), ("run",)):
            r = rook_cli(*args, "--report", target)
            assert r.exit_code == 2, (args, name, r.stderr)
            assert f"--report {target}: that is {name} of run {run_id}" in r.stderr
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before
    assert [d.name for d in run_dir.parent.iterdir()] == [run_id]  # nothing ran
    shown = rook_cli("runs", "show", "latest")
    assert shown.exit_code == 0 and "PASS" in shown.stdout, shown.stderr

    beside = rook_cli("report", run_id, "--report", f"html:{run_dir}/report.html")
    assert beside.exit_code == 0 and (run_dir / "report.html").is_file()
    among = rook_cli("report", run_id, "--report", f"json:{run_dir.parent}/export.json")
    assert among.exit_code == 0 and (run_dir.parent / "export.json").is_file(), among.stderr


def test_a_report_never_takes_the_place_of_a_runs_record_folder(ws, rook_cli):
    # --report html:runs/ID/judge wrote a file where the run's judge/ folder
    # belongs (a run judged by no judge profile has none yet), and for a run not
    # made yet (--run-name) runs/NEW/scenarios ran every scenario, then failed
    ws.scenario(scenario("a"))
    run_id = run(rook_cli)
    run_dir = ws.run_dir(run_id)
    assert not (run_dir / "judge").exists()
    before = sorted(p.name for p in run_dir.iterdir())
    for name in ("judge", "scenarios", "state"):
        target = f"html:{run_dir}/{name}"
        for args in (("report", run_id), ("run", "--run", run_id)):
            r = rook_cli(*args, "--report", target)
            assert r.exit_code == 2, (args, name, r.stderr)
            said = (f"that is {name} of run {run_id}" if name == "judge"
                    else f"{run_dir}/{name} is a directory")  # made already: a folder
            assert f"--report {target}: {said}" in r.stderr, r.stderr
        fresh = f"html:{ws.runs_dir}/fresh/{name}"
        r = rook_cli("run", "--run-name", "fresh", "--report", fresh)
        assert r.exit_code == 2 and f"that is {name} of run fresh" in r.stderr, r.stderr
    # the new run's folder itself: it ran every scenario, then could not write there
    r = rook_cli("run", "--run-name", "fresh", "--report", f"html:{ws.runs_dir}/fresh")
    assert r.exit_code == 2, r.stderr
    assert f"that is the folder of run fresh ({ws.runs_dir}/fresh)" in r.stderr, r.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == before
    assert [d.name for d in ws.runs_dir.iterdir()] == [run_id]  # nothing ran


def test_merge_never_writes_a_report_over_the_runs_record(ws, rook_cli):
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    for i in (1, 2):
        assert rook_cli("run", "--run-name", "m", "--shard", f"{i}/2").exit_code == 0
    run_dir = ws.run_dir("m")
    for name in ("report.json", "run.shard-1-of-2.json"):
        r = rook_cli("merge", "-w", str(ws.root), "--run", "m", "--report", f"json:{run_dir}/{name}")
        assert r.exit_code == 2 and f"that is {name} of run m" in r.stderr, r.stderr
    assert not (run_dir / "report.json").exists()
    assert rook_cli("merge", "-w", str(ws.root), "--run", "m").exit_code == 0


def test_a_rebuilt_report_keeps_the_runs_pass_rate_gate(ws, rook_cli, tmp_path):
    """rook report --rebuild dropped the --min-pass-rate gate: a run that met its
    gate (exit 0) was re-rendered as failed (JUnit, Markdown, HTML and JSON)."""
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    r = rook_cli("run", "--json", "--min-pass-rate", "0", env={"FAIL_IDS": "b"})
    assert r.exit_code == 0, r.stderr
    run_id = r.report["run"]["id"]
    again = rook_cli("report", run_id, "--rebuild", "--json", "--report",
                     f"markdown:{tmp_path}/r.md")
    assert again.exit_code == 0, again.stderr
    assert again.report["summary"]["gate"] == r.report["summary"]["gate"]
    assert (tmp_path / "r.md").read_text().startswith(
        "## ✅ Rook: every scenario reached the pass-rate gate (0)")
    (ws.run_dir(run_id) / "report.json").unlink()  # from run.json alone
    again = rook_cli("report", run_id, "--rebuild", "--json")
    assert again.report["summary"]["gate"] == r.report["summary"]["gate"]
    shown = rook_cli("runs", "show", run_id)  # no report.json: rebuilt from the records
    assert shown.exit_code == 0 and "gate --min-pass-rate 0: every scenario reached it" in (
        shown.stdout)


def test_diff_names_what_regressed_and_gates_on_it(ws, rook_cli, tmp_path):
    for sid in "abcdf":
        ws.scenario(scenario(sid))
    ws.scenario(scenario("g", repeat=2))
    before = run(rook_cli, env={"FAIL_IDS": "f"})

    (ws.agent_dir / "scenarios" / "d.yaml").unlink()
    ws.scenario(scenario("e"))
    ws.scenario({"id": "c", "goal": "c", "criteria": [{"contains": "goo"}]})
    after = run(rook_cli, env={"FAIL_IDS": "b,f", "FLAKY_DIR": str(tmp_path)})

    r = rook_cli("diff", before, after, "--json")
    assert r.exit_code == 1, r.stderr
    result = json.loads(r.stdout)
    changes = {row["id"]: row["changes"] for row in result["scenarios"]}
    assert changes == {
        "b": ["newly failing"],
        "c": ["changed definition"],
        "f": ["still failing"],
        "g": ["newly flaky"],
        "e": ["added"],
        "d": ["removed"],
    }
    assert sorted(result["regressed"]) == ["b", "g"]
    assert result["unchanged"] == 1  # a
    g = next(row for row in result["scenarios"] if row["id"] == "g")
    assert g["a"]["passed"] == 2 and g["b"]["passed"] == 1 and g["b"]["outcome"] == "flaky"

    text = rook_cli("diff", before, after)
    assert text.exit_code == 1
    assert "newly failing" in text.stdout and "regressed: b, g" in text.stderr

    back = rook_cli("diff", after, before, "--json")
    assert back.exit_code == 0, back.stdout  # nothing regressed going back
    changes = {row["id"]: row["changes"] for row in json.loads(back.stdout)["scenarios"]}
    assert changes["b"] == ["fixed"] and changes["g"] == ["fixed"]
    assert changes["d"] == ["added"] and changes["e"] == ["removed"]

    assert rook_cli("diff", "latest~1", "latest", "--json").stdout == r.stdout
    assert rook_cli("diff", before, "nope").exit_code == 2


def test_diff_calls_failed_to_flaky_improved_and_shows_the_first_200_changes(
    ws, rook_cli, tmp_path
):
    # failed -> flaky ("improved", no regression) and the table's limit of 200
    # rows (--all lifts it; --json always holds every row) were held by no test
    ws.scenario(scenario("g", repeat=2))
    failed = run(rook_cli, env={"FAIL_IDS": "g"})
    flaky = run(rook_cli, env={"FLAKY_DIR": str(tmp_path)})
    r = rook_cli("diff", failed, flaky)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "g failed 0/2 flaky 1/2 improved".split() in [
        line.split() for line in r.stdout.splitlines()], r.stdout
    assert "1 improved; 0 unchanged" in r.stdout and "regressed" not in r.stderr

    ids = [f"s{i:03d}" for i in range(201)]
    for sid in ids:
        ws.scenario(scenario(sid))
    before = run(rook_cli, "--concurrency", "8")
    after = run(rook_cli, "--concurrency", "8", env={"FAIL_IDS": ",".join(ids)})
    table = rook_cli("diff", before, after)
    assert table.exit_code == 1, table.stderr
    rows = [line.split()[0] for line in table.stdout.splitlines() if "newly failing" in line]
    assert rows[:-1] == ids[:200], rows  # the last such line is the counts line
    assert "(1 more; --all lists them)" in table.stdout, table.stdout
    assert "201 newly failing; 1 unchanged" in table.stdout
    every = rook_cli("diff", before, after, "--all")
    assert [line.split()[0] for line in every.stdout.splitlines()
            if "newly failing" in line][:-1] == ids
    assert "more; --all" not in every.stdout
    assert len(json.loads(rook_cli("diff", before, after, "--json").stdout)["scenarios"]) == 201


def test_a_scenario_run_never_recorded_has_the_hash_its_run_planned(ws, rook_cli):
    """scenarios.md: run.json holds the hash of each scenario the run planned, so a
    scenario run not recorded yet still has it, and rook diff says its definition
    changed since."""
    ws.scenario({"id": "a", "goal": "a", "criteria": [{"contains": "good"}]})
    before = run(rook_cli, "--phases", "prepare")  # planned, nothing recorded
    ws.scenario({"id": "a", "goal": "a again", "criteria": [{"contains": "good"}]})
    after = run(rook_cli)
    r = rook_cli("diff", before, after, "--json")
    (row,) = json.loads(r.stdout)["scenarios"]
    assert row["changes"] == ["changed definition", "now verified"], row


def test_a_scenario_that_can_no_longer_be_verified_is_a_regression(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "capabilities": {"calls": True}})
    ws.scenario({"id": "a", "goal": "a", "criteria": [{"contains": "good"}]})
    before = run(rook_cli)
    ws.scenario({"id": "a", "goal": "a", "criteria": [{"not_called": "drop_table"}]})
    after = run(rook_cli)  # calls declared but never shown: unverifiable
    r = rook_cli("diff", before, after, "--json")
    assert r.exit_code == 1
    (row,) = json.loads(r.stdout)["scenarios"]
    assert row["changes"] == ["changed definition", "no longer verified"]


def test_a_failure_that_can_no_longer_be_shown_is_a_regression_not_unchanged(ws, rook_cli):
    """failed -> unverified was counted "unchanged": an agent that stopped giving
    the evidence made its failure vanish from the diff."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "capabilities": {"calls": True}})
    ws.scenario({"id": "a", "goal": "a",
                 "criteria": [{"contains": "good"}, {"not_called": "drop_table"}]})
    failed = run(rook_cli, env={"FAIL_IDS": "a"})
    unverified = run(rook_cli)  # calls declared, never shown
    passed = run(rook_cli, env={"CALLS": "1"})

    def diff(a, b):
        r = rook_cli("diff", a, b, "--json")
        out = json.loads(r.stdout)
        return r.exit_code, [row["changes"] for row in out["scenarios"]], out["unchanged"]

    assert diff(failed, unverified) == (1, [["no longer verified"]], 0)
    assert diff(unverified, passed) == (0, [["now verified"]], 0)
    assert diff(unverified, failed) == (1, [["newly failing"]], 0)
    assert diff(failed, passed) == (0, [["fixed"]], 0)


def test_the_installed_command_gates_ci_end_to_end(ws, tmp_path):
    import subprocess
    import sys

    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    # the command installed beside this Python (not a `rook` found on PATH: that can
    # be another environment's, running another checkout's Rook)
    rook = Path(sys.executable).parent / "rook"
    argv = [str(rook)] if rook.is_file() else [sys.executable, "-m", "rook_core.cli"]
    common = ["--workspace", str(ws.root)]

    def rook_cmd(*args, env=None):
        return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, **(env or {})})

    ok = rook_cmd("run", *common, "-q", "--report", f"junit:{tmp_path}/a.xml")
    assert ok.returncode == 0, ok.stderr
    bad = rook_cmd("run", *common, "-q", "--report", f"junit:{tmp_path}/b.xml",
                   env={"FAIL_IDS": "b"})
    assert bad.returncode == 1, bad.stderr
    assert ET.parse(tmp_path / "b.xml").getroot().find("testsuite").get("failures") == "1"
    diff = rook_cmd("diff", "latest~1", "latest", *common)
    assert diff.returncode == 1 and "newly failing" in diff.stdout
    listing = rook_cmd("runs", *common)
    assert listing.returncode == 0 and "failing" in listing.stdout
    assert rook_cmd("diff", "latest", "nope", *common).returncode == 2


# Alternates per scenario by a counter: "mix" gives passed then unverifiable
# (calls reported, then not), "bad" gives failed then error (exit 1).
ALTERNATING = """
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    cat > /dev/null
    f="$COUNT_DIR/$ROOK_SCENARIO_ID"; n=$(cat "$f" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$f"
    case "$ROOK_SCENARIO_ID.$((n % 2))" in
        mix.1) echo '{"output": "good", "calls": []}' ;;
        mix.0) echo '{"output": "good"}' ;;
        bad.1) echo '{"output": "bad", "calls": []}' ;;
        bad.0) echo 'the agent fell over' >&2; exit 1 ;;
        *) echo '{"output": "good", "calls": []}' ;;
    esac
"""


def test_flaky_means_the_repeats_results_differ_in_the_report_and_in_diff(
    rook_workspace, rook_cli, tmp_path
):
    from rook_core import stats

    ws = rook_workspace
    ws.script("alt.sh", ALTERNATING)
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/alt.sh"}, "capabilities": {"calls": True}}
    )
    criteria = [{"contains": "good"}, {"not_called": "delete"}]
    for sid in ("mix", "bad", "steady"):
        ws.scenario({"id": sid, "goal": sid, "repeat": 4, "criteria": criteria})
    r = rook_cli("run", "--json", env={"COUNT_DIR": str(tmp_path)})
    per = {p["id"]: p for p in r.report["summary"]["by_scenario"]}
    assert per["mix"]["statuses"] == ["passed", "unverifiable"] * 2
    assert per["bad"]["statuses"] == ["failed", "error"] * 2
    assert per["mix"]["flaky"] is True and per["bad"]["flaky"] is True
    assert per["steady"]["flaky"] is False
    assert r.report["summary"]["repeats"]["flaky"] == 2
    after = r.report["run"]["id"]

    for sid in ("mix", "bad", "steady"):  # one steady run each: the baseline
        ws.scenario({"id": sid, "goal": "steady", "criteria": criteria})
    ws.script("alt.sh", ALTERNATING.replace("$ROOK_SCENARIO_ID.", "steady."))
    before = run(rook_cli, env={"COUNT_DIR": str(tmp_path)})
    diff = json.loads(rook_cli("diff", before, after, "--json").stdout)
    rows = {row["id"]: row for row in diff["scenarios"]}
    assert rows["mix"]["b"]["outcome"] == "flaky" and "newly flaky" in rows["mix"]["changes"]
    # never passed: failed for diff (passed → failed: newly failing), flaky in the report
    assert rows["bad"]["b"]["outcome"] == "failed" and "newly failing" in rows["bad"]["changes"]
    assert rows["steady"]["b"]["outcome"] == "passed"
    assert sorted(diff["regressed"]) == ["bad", "mix"]

    # runs that produced no result (not runnable, not finished) never make it flaky
    assert not stats.is_flaky(["passed", "not_runnable", "pending", "passed"])
    assert stats.outcome(["passed", "pending"]) == "passed"
    assert stats.outcome(["unverifiable", "unverifiable"]) == "unverified"
    assert stats.outcome(["error", "stopped"]) == "failed"
    assert stats.outcome(["error", "error"]) == "failed"


def test_diff_sees_a_changed_definition_in_any_repeat_not_the_first_alone(ws, rook_cli):
    # rook diff compared the content hash of a scenario's first repeat only: a merged
    # run whose shards ran two definitions of a (rook merge warned of it) was "no
    # changes" against a baseline when the changed one ran a later repeat
    for sid in "ab":
        ws.scenario(scenario(sid))
    before = run(rook_cli, "--repeat", "4")
    keys = {}
    for shard in ("1/2", "2/2"):
        r = rook_cli("run", "--repeat", "4", "--shard", shard, "--run-name", "s", "--json")
        assert r.exit_code == 0, r.stderr
        keys[shard] = {f"{e['id']}.{e['repeat_index']}" for e in r.report["scenarios"]}
        ws.scenario(scenario("a", tags=["edited"]))  # shard 2/2 runs another definition
    assert "a.1" in keys["1/2"] and keys["2/2"] & {"a.2", "a.3", "a.4"}, keys
    merged = rook_cli("merge", "-w", str(ws.root), "--run", "s")
    assert merged.exit_code == 0 and "scenario a was defined differently" in merged.stderr
    r = rook_cli("diff", before, "s", "--json")
    assert r.exit_code == 0, r.stdout  # a changed definition alone is no regression
    changes = {row["id"]: row["changes"] for row in json.loads(r.stdout)["scenarios"]}
    assert changes == {"a": ["changed definition"]}, changes
    back = {row["id"]: row["changes"] for row in json.loads(
        rook_cli("diff", "s", before, "--json").stdout)["scenarios"]}
    assert back == {"a": ["changed definition"]}, back
    assert json.loads(rook_cli("diff", "s", "s", "--json").stdout)["scenarios"] == []
    text = rook_cli("diff", before, "s")
    assert "changed definition" in text.stdout, text.stdout


def test_a_run_cut_off_before_judging_is_not_finished_in_diff(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("ok.sh", "#!/bin/bash\ncat >/dev/null\necho '{\"output\": \"fine\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fine"}]})
    a = rook_cli("run", "--json").report["run"]["id"]
    b = rook_cli("run", "--json", "--phases", "prepare,open,execute").report["run"]["id"]
    r = rook_cli("diff", a, b, "--json")
    (row,) = json.loads(r.stdout)["scenarios"]
    assert row["b"]["outcome"] == "pending" and row["changes"] == ["not finished"]
    assert r.exit_code == 1  # B has no result for it: a gate must not pass


def test_runs_options_before_show_apply_to_it_or_are_refused(ws, rook_cli):
    # `rook runs --json show latest` printed the table: a tool reading JSON broke
    ws.scenario(scenario("a"))
    rid = run(rook_cli)
    shown = rook_cli("runs", "--json", "show", "latest")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["run"]["id"] == rid
    for flags in (["--all"], ["-n", "5"], ["--profile", "p"], ["--reindex"]):
        refused = rook_cli("runs", *flags, "show", "latest")
        assert refused.exit_code == 2, (flags, refused.stdout)
        assert f"{flags[0]}: lists runs; rook runs show" in refused.stderr, refused.stderr
        assert refused.stdout == ""


def test_runs_profile_that_matches_no_run_says_so(ws, rook_cli):
    # it said "no runs yet", with runs there; --profile "" listed every run
    ws.scenario(scenario("a"))
    run(rook_cli)
    ws.profile({"id": "nope", "name": "Nope", "hooks": {"execute": "scripts/agent.sh"}},
               active=False)
    none = rook_cli("runs", "--profile", "Nope")
    assert none.exit_code == 0
    assert "no runs made with profile nope (Nope)" in none.stdout, none.stdout
    assert "runs were made with: p" in none.stdout
    assert "no runs yet" not in none.stdout
    empty = rook_cli("runs", "--profile", "")
    assert empty.exit_code == 2 and "--profile '': names no profile" in empty.stderr


def test_runs_profile_is_looked_up_as_run_looks_it_up(ws, rook_cli):
    """rook runs --profile took only an id: the file name or the display name
    that rook run --profile takes listed nothing."""
    ws.scenario(scenario("a"))
    hooks = {"execute": "scripts/agent.sh"}
    ws.profile({"id": "stg", "name": "Staging Env", "hooks": hooks}, name="staging",
               active=False)
    first = run(rook_cli, "--profile", "p")
    second = run(rook_cli, "--profile", "Staging Env")

    def listed(name):
        r = rook_cli("runs", "--json", "--profile", name)
        assert r.exit_code == 0, (name, r.stdout, r.stderr)
        return [x["id"] for x in json.loads(r.stdout)["runs"]]

    for name in ("stg", "staging", "Staging Env"):  # id, file name, name
        assert listed(name) == [second], name
    assert listed("p") == [first]
    assert second in rook_cli("runs", "--profile", "staging").stdout

    # renamed since the run: its new name and the id the runs pin both select it
    renamed = rook_cli("profile", "rename", "-w", str(ws.root), "p", "Production")
    assert renamed.exit_code == 0, renamed.stderr
    assert listed("Production") == [first] and listed("p") == [first]

    # removed since the run: the id the runs pin still selects them, even when
    # another profile now has that id as its name (an id first, as rook run does)
    (ws.agent_dir / "profiles" / "staging.yaml").unlink()
    ws.profile({"id": "other", "name": "stg", "hooks": hooks}, active=False)
    assert listed("stg") == [second]

    # a name that is no profile and no run's: exit 2, naming it and the known ones
    for name in ("staging", "Staging Env"):
        r = rook_cli("runs", "--profile", name)
        assert r.exit_code == 2, (name, r.stdout)
        assert f"profile {name!r} not found" in r.stderr, r.stderr
        assert "(profiles: other, p)" in r.stderr and "runs were made with: p, stg" in r.stderr
        assert r.stdout == "" and "Traceback" not in r.stderr
        assert rook_cli("run", "--profile", name).exit_code == 2

    # an ambiguous name is refused, as rook run refuses it
    ws.profile({"id": "twin-a", "name": "Twin", "hooks": hooks}, active=False)
    ws.profile({"id": "twin-b", "name": "Twin", "hooks": hooks}, active=False)
    ambiguous = rook_cli("runs", "--profile", "Twin")
    assert ambiguous.exit_code == 2
    assert "several profiles are named 'Twin'" in ambiguous.stderr, ambiguous.stderr
    by_run = rook_cli("run", "--profile", "Twin")
    assert by_run.exit_code == 2 and "several profiles are named 'Twin'" in by_run.stderr


def test_a_scenario_not_run_yet_in_a_is_compared_as_unverified_never_unchanged_or_flaky(
    ws, rook_cli, tmp_path
):
    """pending -> passed was "no change" and pending -> flaky was "flaky": a run
    split before judging has no result for the scenario, so B's result is
    compared with no result (as with unverified), and a failure still gates."""
    for sid in "ab":
        ws.scenario(scenario(sid))
    ws.scenario(scenario("g", repeat=2))
    split = rook_cli("run", "--json", "--phases", "prepare,open,execute")
    assert split.exit_code in (0, 1), split.stderr
    assert set(split.statuses().values()) == {"pending"}
    pending = split.report["run"]["id"]
    again = rook_cli("run", "--json", "--phases", "prepare,open,execute").report["run"]["id"]
    decided = run(rook_cli, env={"FAIL_IDS": "b", "FLAKY_DIR": str(tmp_path)})

    def diff(a, b):
        r = rook_cli("diff", a, b, "--json")
        assert r.exit_code in (0, 1), r.stderr
        out = json.loads(r.stdout)
        return r.exit_code, {row["id"]: row for row in out["scenarios"]}, out

    code, rows, out = diff(pending, decided)
    assert {sid: row["changes"] for sid, row in rows.items()} == {
        "a": ["now verified"], "b": ["newly failing"], "g": ["newly flaky"]}
    assert {sid: row["b"]["outcome"] for sid, row in rows.items()} == {
        "a": "passed", "b": "failed", "g": "flaky"}
    assert all(row["a"]["outcome"] == "pending" for row in rows.values())
    assert (code, out["unchanged"], sorted(out["regressed"])) == (1, 0, ["b", "g"])
    text = rook_cli("diff", pending, decided)
    assert text.exit_code == 1 and "now verified" in text.stdout, text.stdout

    # decided -> pending, and pending -> pending: B has no result, never "unchanged"
    for a in (decided, pending):
        code, rows, out = diff(a, again)
        assert {sid: row["changes"] for sid, row in rows.items()} == {
            "a": ["not finished"], "b": ["not finished"], "g": ["not finished"]}, a
        assert (code, out["unchanged"], sorted(out["regressed"])) == (1, 0, ["a", "b", "g"])


def test_a_run_finished_with_a_selector_keeps_every_scenario_run_in_its_report(ws, rook_cli):
    # `rook run --run ID --only c` wrote a report.json of c alone: the failure of b
    # vanished from rook runs, rook runs show and rook diff (b "removed", exit 0)
    for sid in "abc":
        ws.scenario(scenario(sid))
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close",
                 env={"FAIL_IDS": "b"})
    assert r.exit_code == 0, r.stderr
    rid = r.report["run"]["id"]
    both = rook_cli("run", "--json", "--run", rid, "--phases", "collect,judge", "--only", "a,b")
    assert both.exit_code == 1, both.stderr  # b failed
    assert [s["status"] for s in both.report["scenarios"]] == ["passed", "failed", "pending"]
    assert "executor" not in both.stderr  # c was not asked for: it is not lost by the executor
    assert f"resume with: rook run --run {rid}" in both.stderr

    last = rook_cli("run", "--json", "--run", rid, "--phases", "collect,judge", "--only", "c")
    assert last.exit_code == 1, last.stderr  # the run's verdict: b failed in it
    statuses = {s["id"]: s["status"] for s in last.report["scenarios"]}
    assert statuses == {"a": "passed", "b": "failed", "c": "passed"}
    assert last.report["summary"]["total"] == 3 and last.report["summary"]["failed"] == 1
    shown = rook_cli("runs", "show", rid, "--json")
    assert shown.stdout == last.stdout  # report.json is the run's, as --json printed it
    listed = json.loads(rook_cli("runs", "--json").stdout)["runs"][0]
    assert listed["counts"]["failed"] == 1 and listed["total"] == 3 and listed["complete"]

    before = run(rook_cli)
    regressed = rook_cli("diff", before, rid, "--json")
    assert regressed.exit_code == 1
    assert json.loads(regressed.stdout)["regressed"] == ["b"]


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("summary.json", "coverage", "95%"),
        ("summary.json", "counts", [1]),
        ("summary.json", "started", "yesterday"),
        # a number no clock can show: rook runs was an OverflowError or ValueError traceback
        ("summary.json", "started", 1e308), ("summary.json", "started", float("nan")),
        ("report.json", "run", {"id": "x", "profile": "p", "phases": None, "started": "x"}),
        ("report.json", "summary", None),
        ("report.json", "summary", {"pass_rate": "all", "repeats": 3}),
        ("run.json", "plan", None),
        ("run.json", "profile", "p"),
        # rook report --rebuild, rook runs show, rook diff: an AttributeError traceback
        ("run.json", "capabilities", True), ("run.json", "capabilities", {"observed": 5}),
    ],
)
def test_a_run_with_a_malformed_file_never_breaks_the_listing(ws, rook_cli, name, field, value):
    # a summary.json, report.json or run.json with a field of the wrong type (edited by
    # hand, written by another tool) made `rook runs` a traceback, hiding every run
    ws.scenario(scenario("a"))
    good, bad = run(rook_cli), run(rook_cli)
    path = ws.run_dir(bad) / name
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    if name == "run.json":
        (ws.run_dir(bad) / "report.json").unlink()
    if name != "summary.json":
        (ws.run_dir(bad) / "summary.json").unlink()
    listed = rook_cli("runs", "--all")
    assert listed.exit_code == 0, listed.stderr
    assert good in listed.stdout
    doc = rook_cli("runs", "--json", "--all")
    assert doc.exit_code == 0 and good in doc.stdout, doc.stderr
    if name == "summary.json":  # derived: rebuilt from the report
        assert json.loads(doc.stdout)["runs"][0]["pass_rate"] == 1.0
    if name == "report.json":
        for args in (("runs", "show", bad), ("report", bad), ("diff", good, bad)):
            shown = rook_cli(*args)
            assert shown.exit_code == 2 and "Traceback" not in shown.stderr, (args, shown.stderr)
            assert f"{path}: not a Rook report" in shown.stderr and "--rebuild" in shown.stderr
        rebuilt = rook_cli("report", bad, "--rebuild")
        assert rebuilt.exit_code == 0 and "1 passed" in rebuilt.stdout, rebuilt.stderr
    if name == "run.json":  # no report: rebuilt from a manifest that cannot be read
        for args in (("runs", "show", bad), ("diff", good, bad)):
            shown = rook_cli(*args)
            assert shown.exit_code == 2 and "Traceback" not in shown.stderr, (args, shown.stderr)
            assert f"{path}: not a Rook run manifest" in shown.stderr


@pytest.mark.parametrize("text", ["{}", '{"plan": [], "phases": []}', "[1]", '"run"'])
def test_a_run_json_without_what_a_report_needs_is_named_never_a_traceback(ws, rook_cli, text):
    # A run.json that is an object without a run's id, project, agent, profile
    # or phases (emptied by hand, written by another tool) made 'rook runs show'
    # and 'rook diff' of a run with no report a KeyError traceback; one that is
    # not an object at all was "not a run (no run.json)", exit 2, though it is there.
    ws.scenario(scenario("a"))
    good, bad = run(rook_cli), run(rook_cli)
    path = ws.run_dir(bad) / "run.json"
    path.write_text(text)
    for name in ("report.json", "summary.json"):
        (ws.run_dir(bad) / name).unlink()
    assert rook_cli("runs", "--all").exit_code == 0
    for args in (("runs", "show", bad), ("diff", good, bad), ("report", bad)):
        shown = rook_cli(*args)
        assert shown.exit_code == 2 and "Traceback" not in shown.stderr, (args, shown.stderr)
        assert shown.exception is None, (args, shown.exception)
        assert f"{path}: not a Rook run manifest" in shown.stderr, (args, shown.stderr)


@pytest.mark.parametrize(
    ("where", "value", "named"),
    [
        ((), [1], "scenario entry 2: it is an array, not an object"),
        (("criteria",), {"contains": "good"}, "(b): 'criteria' is an object"),
        (("criteria", 0), "good", "(b): 'criteria' item 1 is a string, not an object"),
        (("criteria", 0, "status"), 7, "(b): 'criteria' item 1: 'status' is a whole number"),
        (("criteria", 0, "reason"), None, "(b): 'criteria' item 1: 'reason' is null"),
        (("hooks", 0, "seconds"), "1s", "(b): 'hooks' item 1: 'seconds' is a string"),
        (("turns", 0, "output"), ["good"], "(b): 'turns' item 1: 'output' is an array"),
        (("reason",), [7], "(b): 'reason' is an array"),
        (("warnings",), 3, "(b): 'warnings' is a whole number"),
        (("repeat_count",), True, "(b): 'repeat_count' is true or false"),
        (("seconds",), None, "(b): 'seconds' is null"),
        (("status",), None, "(b): 'status' is null"),
    ],
)
@pytest.mark.parametrize("layout", ["lines", "whole"])
def test_a_report_entry_of_the_wrong_shape_is_named_never_a_traceback(
    ws, rook_cli, tmp_path, where, value, named, layout
):
    # an entry of report.json edited by hand (or damaged) with a value of another
    # type made `rook runs show` and `rook report` a traceback, or a reporter's
    # failure; each now names the file, the entry and the field
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    good, bad = run(rook_cli), run(rook_cli)
    path = ws.run_dir(bad) / "report.json"
    head, *entries, tail = path.read_text().split("\n")
    doc = json.loads(entries[1].rstrip(","))
    if where:
        *parents, last = where
        target = doc
        for step in parents:
            target = target[step]
        target[last] = value
    else:
        doc = value
    entries[1] = json.dumps(doc) + ("," if entries[1].endswith(",") else "")
    text = "\n".join([head, *entries, tail])
    path.write_text(text if layout == "lines" else json.dumps(json.loads(text), indent=2))
    junit = tmp_path / "junit.xml"
    for args in (
        ("runs", "show", bad),
        ("report", bad, "--report", f"junit:{junit}"),
        # --json printed the file as it is and exited 0, where the table refused it
        ("runs", "show", bad, "--json"),
        ("report", bad, "--json"),
    ):
        shown = rook_cli(*args)
        assert shown.exit_code == 2, (args, shown.stdout, shown.stderr)
        assert "--json" not in args or shown.stdout == "", (args, shown.stdout)
        assert "Traceback" not in shown.stderr and "failed:" not in shown.stderr, shown.stderr
        assert f"{path}: scenario entry 2" in shown.stderr and named in shown.stderr, shown.stderr
        assert f"rook report {bad} --rebuild" in shown.stderr
    compared = rook_cli("diff", good, bad)
    if layout == "lines":  # read on demand: diff reads the summary's aggregates alone
        assert compared.exit_code == 0 and "2 unchanged" in compared.stdout, compared.stderr
    else:  # read whole, every entry checked
        assert compared.exit_code == 2 and named in compared.stderr, compared.stderr
    rebuilt = rook_cli("report", bad, "--rebuild")
    assert rebuilt.exit_code == 0 and "2 passed" in rebuilt.stdout, rebuilt.stderr
    listed = rook_cli("runs", "--all")
    assert listed.exit_code == 0 and bad in listed.stdout, listed.stderr


@pytest.mark.parametrize(
    ("where", "value", "named"),
    [
        (("scenario",), "b", "'scenario' is a string"),
        (("scenario", "id"), ["b"], "'scenario': 'id' is an array"),
        (("criteria",), 7, "'criteria' is a whole number"),
        (("criteria", 0), None, "'criteria' item 1 is null, not an object"),
        (("criteria", 0, "status"), 7, "'criteria' item 1: 'status' is a whole number"),
        (("hooks", 0, "phase"), None, "'hooks' item 1: 'phase' is null"),
        (("turns", 0), [], "'turns' item 1 is an array, not an object"),
        (("status",), ["passed"], "'status' is an array"),
        (("status",), "pased", "'status' is 'pased'"),  # a value Rook never writes
        (("key",), "a.1", "its 'key' is 'a.1', the record of another scenario run than its name"),
    ],
)
def test_a_scenario_record_of_the_wrong_shape_is_named_never_a_traceback(
    ws, rook_cli, where, value, named
):
    # a scenario record (scenarios/KEY.json) edited by hand or damaged made a
    # resume (`rook run --run ID`) and `rook report ID --rebuild` a traceback
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    rid = run(rook_cli)
    path = ws.run_dir(rid) / "scenarios" / "b.1.json"
    record = json.loads(path.read_text())
    *parents, last = where
    target = record
    for step in parents:
        target = target[step]
    target[last] = value
    path.write_text(json.dumps(record))
    unrun = ws.run_dir(rid) / "scenarios" / "a.1.json"
    unrun.unlink()  # a's run is to be done again: refused before it runs
    for args in (("run", "--run", rid), ("report", rid, "--rebuild")):
        shown = rook_cli(*args)
        # nothing was run: bad input, exit 2 (a resume exited 1, "a scenario failed")
        assert shown.exit_code == 2, (args, shown.stdout, shown.stderr)
        assert "Traceback" not in shown.stderr, shown.stderr
        assert f"{path}: {named}, not what Rook writes there" in shown.stderr, shown.stderr
        assert "delete the file" in shown.stderr
    assert not unrun.exists()
    path.unlink()  # as the message says: the scenario run runs again
    again = rook_cli("run", "--run", rid, "--json")
    assert again.exit_code == 0, again.stderr
    assert [e["status"] for e in again.report["scenarios"]] == ["passed", "passed"]


@pytest.mark.parametrize(("drop", "named"), [
    (None, "it has no 'scenario'"),  # {}: an object, but no record
    ("scenario", "it has no 'scenario'"),
    ("phases_done", "it has no 'phases_done'"),
    ("hooks", "it has no 'hooks'"),
    ("key", "it has no 'key'"),
])
def test_a_scenario_record_without_what_rook_writes_is_named_never_a_traceback(
    ws, rook_cli, drop, named
):
    # A record of {} (or one without its scenario, phases or hooks) passed the
    # shape check: 'rook report ID --rebuild' then failed on its own report
    # ("report: scenario entry 1: 'id' is null ... rook report  --rebuild"), a
    # resume raised KeyError inside the executor and wrote a report.json with
    # an entry of no id, and 'rook merge' wrote that report too.
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    rid = run(rook_cli)
    path = ws.run_dir(rid) / "scenarios" / "b.1.json"
    record = json.loads(path.read_text())
    if drop is None:
        record = {}
    else:
        del record[drop]
    path.write_text(json.dumps(record))
    for args in (("run", "--run", rid), ("report", rid, "--rebuild")):
        shown = rook_cli(*args)
        assert shown.exit_code == 2, (args, shown.stderr)  # nothing run: bad input
        assert shown.exception is None, (args, shown.exception)
        assert f"{path}: {named}, not what Rook writes there" in shown.stderr, shown.stderr
    path.unlink()  # as the message says: the scenario run runs again
    again = rook_cli("run", "--run", rid, "--json")
    assert again.exit_code == 0, again.stderr
    assert [e["status"] for e in again.report["scenarios"]] == ["passed", "passed"]


@pytest.mark.parametrize("only", [None, "b"])
@pytest.mark.parametrize("content", ["[1", "{}", '{"scenario": 5}'])
def test_resuming_with_a_damaged_scenario_record_is_bad_input_naming_file_and_fix(
    ws, rook_cli, content, only
):
    # 'rook run --run ID' refused a damaged scenarios/KEY.json before anything
    # ran but exited 1 ("a scenario failed"), and an unreadable one (not JSON)
    # was named without the fix
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    rid = run(rook_cli)
    path = ws.run_dir(rid) / "scenarios" / "a.1.json"
    path.write_text(content)
    (ws.run_dir(rid) / "scenarios" / "b.1.json").unlink()  # b is to run again: it never does
    # with --only b, b ran and the run's report then failed on a's record (exit 1)
    shown = rook_cli("run", "--run", rid, *(["--only", only] if only else []))
    assert shown.exception is None, shown.exception
    assert shown.exit_code == 2, shown.stderr
    assert f"rook: error: {path}: " in shown.stderr, shown.stderr
    assert "delete the file for the scenario run to run again" in shown.stderr, shown.stderr
    assert not (ws.run_dir(rid) / "scenarios" / "b.1.json").exists()
    path.unlink()  # as the message says
    again = rook_cli("run", "--run", rid, "--json")
    assert again.exit_code == 0, again.stderr
    assert [e["status"] for e in again.report["scenarios"]] == ["passed", "passed"]


@pytest.mark.parametrize("content", ["[]", "null"])
def test_a_scenario_record_that_is_json_but_no_object_counts_as_not_recorded(
    ws, rook_cli, content
):
    # running.md and history.md: a record that is JSON but no object at all is
    # taken as missing (not refused as one of another shape is): the resume runs it
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    rid = run(rook_cli)
    path = ws.run_dir(rid) / "scenarios" / "a.1.json"
    path.write_text(content)
    again = rook_cli("run", "--run", rid, "--json")
    assert again.exception is None, again.exception
    assert again.exit_code == 0, again.stderr
    assert [e["status"] for e in again.report["scenarios"]] == ["passed", "passed"]
    assert json.loads(path.read_text())["status"] == "passed"  # recorded again


@pytest.mark.parametrize("env", [5, "TOKEN", [{"variable": 5}], [{"variable": ["A"]}], [7]])
def test_a_damaged_profile_copy_never_breaks_showing_the_run(ws, rook_cli, env):
    # The run's copy of its profile (profile.yaml, read for the names of the
    # variables whose values are redacted) with an env that is not a list of
    # {variable: NAME} made 'rook report' (and 'rook runs show', 'rook diff')
    # a TypeError traceback.
    ws.scenario(scenario("a"))
    good, bad = run(rook_cli), run(rook_cli)
    path = ws.run_dir(bad) / "profile.yaml"
    path.write_text(json.dumps({"id": "p", "env": env}))
    for args in (("runs", "show", bad), ("report", bad), ("report", bad, "--rebuild"),
                 ("diff", good, bad)):
        shown = rook_cli(*args)
        assert shown.exception is None, (args, shown.exception)
        assert shown.exit_code == 0, (args, shown.stderr)


DELETED = object()


@pytest.mark.parametrize(("key", "value"), [
    ("by_scenario", "x"), ("by_scenario", 5), ("repeats", 5),
    (("by_scenario", 0, "id"), [1]), (("by_scenario", 0, "runs"), None),
    (("by_scenario", 0, "statuses"), None), (("by_scenario", 0, "statuses"), [5]),
    # no coverage: rook report and rook runs show were a KeyError traceback, exit 1
    ("coverage", DELETED),
    # a scenario's statistics without decided, passed or pass_rate: rook diff was one
    *((("by_scenario", 0, k), DELETED) for k in ("decided", "passed", "pass_rate")),
])
def test_a_report_summary_of_another_shape_is_named_never_a_traceback(ws, rook_cli, key, value):
    # report.json's per-scenario statistics (summary.by_scenario, summary.repeats)
    # with a value of another type made 'rook runs show' and 'rook diff' a
    # TypeError traceback; the report is now named like any malformed report.
    ws.scenario(scenario("a"))
    good, bad = run(rook_cli), run(rook_cli)
    path = ws.run_dir(bad) / "report.json"
    report = json.loads(path.read_text())
    if value is DELETED and isinstance(key, str):
        del report["summary"][key]
    elif value is DELETED:
        del report["summary"][key[0]][key[1]][key[2]]
    elif isinstance(key, str):
        report["summary"][key] = value
    else:
        report["summary"][key[0]][key[1]][key[2]] = value
    path.write_text(json.dumps(report))
    (ws.run_dir(bad) / "summary.json").unlink()
    assert rook_cli("runs", "--all").exit_code == 0
    for args in (("runs", "show", bad), ("diff", good, bad), ("report", bad)):
        shown = rook_cli(*args)
        assert shown.exception is None, (args, shown.exception)
        assert shown.exit_code == 2 and f"{path}: not a Rook report" in shown.stderr, (
            args, shown.stderr)
    rebuilt = rook_cli("report", bad, "--rebuild")
    assert rebuilt.exit_code == 0 and "1 passed" in rebuilt.stdout, rebuilt.stderr


@pytest.mark.parametrize("damage", ["not json", "cut short", "entry"])
def test_a_damaged_report_read_by_a_command_is_bad_input_naming_file_and_fix(
    ws, rook_cli, damage
):
    # rook report, rook runs show and rook diff of a run whose report.json is
    # damaged ended with exit 1, which says "a scenario failed, errored or
    # stopped"; a report.json that is not JSON named no way out
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    good, bad = run(rook_cli), run(rook_cli)
    path = ws.run_dir(bad) / "report.json"
    text = path.read_text()
    if damage == "not json":
        path.write_text('{"run": ')
    elif damage == "cut short":
        path.write_text(text[: len(text) // 2])
    else:  # one entry's line, in the layout read on demand
        lines = text.split("\n")
        lines[2] = "{oops" + ("," if lines[2].endswith(",") else "")
        path.write_text("\n".join(lines))
    commands = [("runs", "show", bad), ("report", bad), ("runs", "show", bad, "--json"),
                ("report", bad, "--json")]
    if damage != "entry":  # diff reads the summary's aggregates, not the entries
        commands.append(("diff", good, bad))
    for args in commands:
        shown = rook_cli(*args)
        assert shown.exit_code == 2 and shown.exception is None, (args, shown.stderr)
        assert f"rook: error: {path}" in shown.stderr, (args, shown.stderr)
        # with the flags that find the run, read from its folder: they work from anywhere
        where = f"-w {ws.root} --project {ws.project} --agent {ws.agent}"
        assert f"rook report {bad} --rebuild {where} renders" in shown.stderr, shown.stderr
        # --rebuild only renders (the run's files are only read): the repair is named too
        assert f"rook run --run {bad} {where} writes it again from the run's" in shown.stderr
    rebuilt = rook_cli("report", bad, "--rebuild")
    assert rebuilt.exit_code == 0 and "2 passed" in rebuilt.stdout, rebuilt.stderr
    repaired = rook_cli("run", "--run", bad)  # runs nothing: every scenario run finished
    assert repaired.exit_code == 0 and "nothing left to run" in repaired.stderr, repaired.stderr
    assert rook_cli("runs", "show", bad).exit_code == 0
    listed = rook_cli("runs", "--json", "--all")
    assert {r["id"]: r["state"] for r in json.loads(listed.stdout)["runs"]}[bad] == "complete"


def test_a_sharded_run_not_merged_yet_is_listed_as_such(ws, rook_cli):
    # it was "incomplete (2/2 recorded)", which says to finish it with rook run --run
    # ID, a command refused on a run not merged yet
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    for shard in ("1/2", "2/2"):
        r = rook_cli("run", "--shard", shard, "--run-name", "split-1", "-q")
        assert r.exit_code == 0, r.stderr
    assert "not merged (2/2 recorded)" in rook_cli("runs").stdout
    (listed,) = json.loads(rook_cli("runs", "--json").stdout)["runs"]
    assert listed["unmerged_shards"] == 2 and listed["complete"] is False
    assert rook_cli("run", "--run", "split-1").exit_code == 2  # what the listing must not advise
    assert rook_cli("merge", "-w", str(ws.root), "--run", "split-1").exit_code == 0
    assert "complete" in rook_cli("runs").stdout.splitlines()[2]


def test_a_run_says_which_rook_made_it(ws, rook_cli):
    # run.json kept no version of Rook: a run could not say which Rook made it
    from rook_core import __version__

    ws.scenario(scenario("a"))
    rid = run(rook_cli)
    manifest = json.loads((ws.run_dir(rid) / "run.json").read_text())
    assert [i["rook_version"] for i in manifest["invocations"]] == [__version__]
    shown = rook_cli("runs", "show", rid)
    assert shown.exit_code == 0 and f"made with Rook {__version__}\n" in shown.stdout, shown.stdout
    assert rook_cli("runs", "show", rid, "--json").report["run"]["rook_versions"] == [__version__]


def test_a_rebuilt_report_of_a_run_without_rook_versions_has_the_key_all_the_same(ws, rook_cli):
    # rook report --rebuild of a run whose run.json recorded no Rook version (made by
    # an older Rook) left run.rook_versions out, a key a fresh run's report always has
    ws.scenario(scenario("a"))
    rid = run(rook_cli)
    fresh = rook_cli("report", rid, "--rebuild", "--json").report
    path = ws.run_dir(rid) / "run.json"
    manifest = json.loads(path.read_text())
    for invocation in manifest["invocations"]:
        del invocation["rook_version"]
    path.write_text(json.dumps(manifest))
    rebuilt = rook_cli("report", rid, "--rebuild", "--json")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    assert sorted(rebuilt.report["run"]) == sorted(fresh["run"])
    assert rebuilt.report["run"]["rook_versions"] == []  # none recorded: none claimed


def test_a_workspace_from_rook_workspace_dir_is_named_in_hints_and_stored_reasons(ws, tmp_path):
    # The workspace found through ROOK_WORKSPACE_DIR was left out of the commands Rook
    # prints and stores, which then named no run from another directory without it
    import subprocess
    import sys

    ws.script("prep.sh", "#!/bin/bash\nexit 3\n")
    ws.profile({"id": "p", "hooks": {"prepare": "scripts/prep.sh", "execute": "scripts/agent.sh"}})
    ws.scenario(scenario("a"))
    env = dict(os.environ, ROOK_WORKSPACE_DIR=str(ws.root))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def rook(*args):
        return subprocess.run([sys.executable, "-m", "rook_core", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=120)

    assert rook("run", "-q", "--run-name", "r1").returncode == 1
    record = json.loads((ws.run_dir("r1") / "scenarios" / "a.1.json").read_text())
    assert f"rook run --run r1 -w {ws.root} prepares again" in record["reason"], record["reason"]
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    split = rook("run", "-q", "--run-name", "r2", "--phases", "prepare,open,execute,close")
    assert f"rook run --run r2 --phases collect,judge -w {ws.root}\n" in split.stderr, split.stderr
    shown = rook("runs", "show", "r2")
    assert f"finish it with: rook run --run r2 --phases collect,judge -w {ws.root}\n" in shown.stderr
    env.pop("ROOK_WORKSPACE_DIR")  # as printed, it works where the variable is not set
    done = rook("run", "--run", "r2", "--phases", "collect,judge", "-w", str(ws.root))
    assert done.returncode == 0, done.stderr


def test_listing_a_run_whose_records_changed_since_its_report_writes_nothing(ws, rook_cli):
    # rook runs looked for a late shard's records copied into a run whose scenarios
    # folder changed after its report, and wrote its summary back even when there were
    # none: on a run being resumed, an old summary over the one the run writes at its end
    ws.scenario(scenario("a"))
    rid = run(rook_cli, "--phases", "prepare,open,execute,close")
    assert rook_cli("runs").exit_code == 0
    summary = ws.run_dir(rid) / "summary.json"
    before = summary.read_bytes(), summary.stat().st_mtime_ns
    later = os.stat(ws.run_dir(rid) / "report.json").st_mtime + 5  # a resume recording now
    os.utime(ws.run_dir(rid) / "scenarios", (later, later))
    assert rid in rook_cli("runs").stdout
    assert (summary.read_bytes(), summary.stat().st_mtime_ns) == before


def test_a_run_killed_in_prepare_is_finished_by_a_command_that_prepares(ws, rook_cli, tmp_path):
    # rook runs show and rook report said "finish it with: rook run --run ID --phases
    # open,execute,close,collect,judge" for a run killed while its prepare hook ran:
    # done as printed, the scenarios ran without a prepare and failed for want of it
    import signal
    import subprocess
    import sys
    import time

    ws.script("prep.sh", f"""
        #!/bin/bash
        if [ ! -f {tmp_path}/again ]; then echo $$ > {tmp_path}/hook.pid; exec sleep 300; fi
        echo ready > "$ROOK_RUN_STATE_DIR/token"
    """)
    ws.script("exec.sh", """
        #!/bin/bash
        cat > /dev/null
        printf '{"output": "%s"}\\n' "$(cat "$ROOK_RUN_STATE_DIR/token" 2>/dev/null || echo none)"
    """)
    ws.profile({"id": "p", "hooks": {"prepare": "scripts/prep.sh", "execute": "scripts/exec.sh"}})
    ws.scenario({"id": "a", "goal": "a", "criteria": [{"contains": "ready"}]})
    proc = subprocess.Popen([sys.executable, "-m", "rook_core", "run", "-w", str(ws.root),
                             "--run-name", "cut"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (tmp_path / "hook.pid").exists():
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    out = proc.communicate(timeout=60)
    assert (tmp_path / "hook.pid").exists(), out
    os.killpg(int((tmp_path / "hook.pid").read_text()), signal.SIGKILL)
    (tmp_path / "again").touch()
    for command in (("runs", "show", "cut"), ("report", "cut")):
        shown = rook_cli(*command)
        assert shown.exit_code == 0, shown.stderr
        assert f"finish it with: rook run --run cut -w {ws.root}\n" in shown.stderr, shown.stderr
    # typed by hand, that --phases is refused: nothing runs unprepared
    unprepared = rook_cli("run", "--run", "cut", "--phases", "open,execute,close,collect,judge")
    assert unprepared.exit_code == 2, unprepared.stderr
    assert "no prepare of run cut has succeeded" in unprepared.stderr, unprepared.stderr
    assert f"rook run --run cut -w {ws.root}" in unprepared.stderr, unprepared.stderr
    assert not list((ws.run_dir("cut") / "scenarios").glob("*.json"))
    done = rook_cli("run", "--run", "cut", "--json")
    assert done.exit_code == 0 and done.statuses() == {"a": "passed"}, done.stderr


def test_a_run_killed_midway_lists_the_counts_of_what_it_recorded(ws, rook_cli, tmp_path):
    """rook runs left the passed/failed columns of a run killed midway blank
    ('incomplete (3/4 recorded)') while rook runs show counted what it recorded:
    the listing counts them too, the rest pending."""
    import signal
    import subprocess
    import sys
    import time

    ws.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        if [ "$ROOK_SCENARIO_ID" = d ]; then echo $$ > {tmp_path}/hook.pid; exec sleep 300; fi
        [ "$ROOK_SCENARIO_ID" = b ] && {{ echo '{{"output": "bad"}}'; exit 0; }}
        echo '{{"output": "good"}}'
    """)
    for sid in "abcd":
        ws.scenario(scenario(sid))
    proc = subprocess.Popen([sys.executable, "-m", "rook_core", "run", "-w", str(ws.root),
                             "--concurrency", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    # d's hook runs, and c's record is written (Rook records a scenario run beside the
    # next one's hook: under load, after that hook started)
    while time.monotonic() < deadline and not (
        (tmp_path / "hook.pid").exists() and list(ws.runs_dir.glob("*/scenarios/c.1.json"))
    ):
        time.sleep(0.05)
    proc.kill()
    proc.communicate(timeout=60)
    os.killpg(int((tmp_path / "hook.pid").read_text()), signal.SIGKILL)
    (listed,) = json.loads(rook_cli("runs", "--json").stdout)["runs"]
    shown = json.loads(rook_cli("runs", "show", "latest", "--json").stdout)["summary"]
    assert listed["recorded"] == 3 and listed["complete"] is False
    assert listed["counts"]["passed"] == shown["passed"] == 2
    assert listed["counts"]["failed"] == shown["failed"] == 1
    assert listed["counts"]["pending"] == shown["pending"] == 1
    assert listed["pass_rate"] == shown["pass_rate"] and listed["coverage"] == shown["coverage"]
    row = next(line for line in rook_cli("runs").stdout.splitlines() if "recorded" in line)
    assert row.split()[5:7] == ["2", "1"] and "incomplete (3/4 recorded)" in row, row

    # what it counted stands while its records do (as for a run killed long ago) ...
    run_dir = ws.run_dir(listed["id"])
    old = time.time() - 60
    for path in (run_dir / "scenarios", run_dir / "run.json"):
        os.utime(path, (old, old))
    assert json.loads(rook_cli("runs", "--json").stdout)["runs"] == [listed]
    assert json.loads(rook_cli("runs", "--json").stdout)["runs"] == [listed]
    # ... and no longer once one changes: b's record deleted, to run it again
    (run_dir / "scenarios" / "b.1.json").unlink()
    (again,) = json.loads(rook_cli("runs", "--json").stdout)["runs"]
    assert again["recorded"] == 2 and again["counts"]["failed"] == 0, again
    assert again["counts"]["pending"] == 2


@pytest.mark.parametrize("where", ["head", "summary"])
def test_a_report_holding_a_lone_surrogate_escape_is_printed_as_json(ws, rook_cli, where):
    # a report.json edited by hand (or written by another tool) with a "\ud800" escape, valid
    # JSON, in a run copied under another name (its head printed anew) made rook report
    # --json and rook runs show --json a UnicodeEncodeError traceback, exit 1; it is
    # printed with the escape kept
    ws.scenario(scenario("a"))
    shutil.copytree(ws.run_dir(run(rook_cli)), ws.runs_dir / "copied")
    rid = "copied"
    path = ws.run_dir(rid) / "report.json"
    text = path.read_text()
    if where == "head":
        text = text.replace('{"version":1,', '{"version":1,"note":"\\ud800",', 1)
    else:  # the summary, after the entries
        text = text.replace('"summary":{', '"summary":{"note":"\\ud800",', 1)
    path.write_text(text)
    for args in (("report", rid, "--json"), ("runs", "show", rid, "--json")):
        shown = rook_cli(*args)
        assert shown.exception is None, (args, shown.exception)
        doc = json.loads(shown.stdout)
        assert (doc if where == "head" else doc["summary"])["note"] == "\ud800", shown.stdout


def test_resuming_a_scenario_record_without_its_key_is_bad_input(ws, rook_cli):
    # a record without its key (a hand edit) of a run stopped after execute made
    # 'rook run --run ID' a KeyError traceback, exit 1, when it printed the scenario
    # run's progress line; it is refused before anything runs, naming the file
    ws.scenario(scenario("a"))
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute")
    rid = first.report["run"]["id"]
    path = ws.run_dir(rid) / "scenarios" / "a.1.json"
    record = json.loads(path.read_text())
    del record["key"]
    path.write_text(json.dumps(record))
    shown = rook_cli("run", "--run", rid)
    assert shown.exception is None, shown.exception
    assert shown.exit_code == 2 and f"{path}: it has no 'key'" in shown.stderr, shown.stderr
    assert "delete the file for the scenario run to run again" in shown.stderr


def test_a_run_whose_manifest_was_deleted_is_shown_as_it_is_listed(ws, rook_cli):
    # A run whose run.json was deleted by hand (its report.json intact) was
    # listed by 'rook runs' from its report, yet 'rook runs show ID' and
    # 'rook diff ID ...' said "no such run" (with 'latest is' another run), and
    # 'latest' could name it while its id could not.
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    before = run(rook_cli)
    after = run(rook_cli, env={"FAIL_IDS": "b"})
    (ws.run_dir(before) / "run.json").unlink()
    assert before in rook_cli("runs", "--all").stdout
    for ref in (before, before[:-1]):
        shown = rook_cli("runs", "show", ref)
        assert shown.exit_code == 0 and "2 passed" in shown.stdout, shown.stderr
    compared = rook_cli("diff", before, after)
    assert compared.exit_code == 1 and "newly failing" in compared.stdout, compared.stderr
    assert rook_cli("report", before).exit_code == 0
    # its records cannot be finished nor rendered again without it: named, exit 2, nothing run
    records = sorted(p.name for p in (ws.run_dir(before) / "scenarios").iterdir())
    report = (ws.run_dir(before) / "report.json").read_bytes()
    for args in (("run", "--run", before), ("run", "--run-name", before),
                 ("run", "--run", before, "--shard", "1/2"), ("report", before, "--rebuild")):
        refused = rook_cli(*args)
        assert refused.exit_code == 2 and "Traceback" not in refused.stderr, (args, refused.stderr)
        assert "run.json" in refused.stderr, (args, refused.stderr)
    assert not (ws.run_dir(before) / "run.json").exists()
    assert sorted(p.name for p in (ws.run_dir(before) / "scenarios").iterdir()) == records
    assert (ws.run_dir(before) / "report.json").read_bytes() == report


def test_a_folder_holding_only_a_summary_is_no_run(ws, rook_cli):
    # summary.json is derived data: a folder left with nothing else (a run's
    # report and manifest deleted, a copy gone wrong) was listed as a run, and
    # as 'latest' when its time was the newest, which 'rook runs show' then
    # refused ("no such run ... latest is" that very folder).
    ws.scenario(scenario("a"))
    real = run(rook_cli)
    ghost = ws.runs_dir / "ghost"
    ghost.mkdir()
    summary = json.loads((ws.run_dir(real) / "summary.json").read_text())
    summary["started"] += 1000
    (ghost / "summary.json").write_text(json.dumps(summary))
    listed = rook_cli("runs", "--json", "--all")
    assert [r["id"] for r in json.loads(listed.stdout)["runs"]] == [real], listed.stdout
    shown = rook_cli("runs", "show", "latest")
    assert shown.exit_code == 0 and real in shown.stdout, shown.stderr
    missing = rook_cli("runs", "show", "ghost")
    assert missing.exit_code == 2 and f"latest is {real}" in missing.stderr, missing.stderr


def test_only_the_runs_planned_records_count_as_recorded(ws, rook_cli):
    # A run with no report yet was listed as 'incomplete (N/M recorded)' with N
    # counting every *.json in its scenarios folder: a copy kept beside a
    # record, or any stray JSON file, was counted as a scenario run recorded,
    # even past the plan ('incomplete (4/2 recorded)').
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    cut = run(rook_cli)
    for name in ("report.json", "summary.json"):  # as a run killed before its report
        (ws.run_dir(cut) / name).unlink()
    records = ws.run_dir(cut) / "scenarios"
    shutil.copy(records / "a.1.json", records / "a.1.backup.json")
    (records / "notes.json").write_text("{}")
    (listed,) = json.loads(rook_cli("runs", "--json").stdout)["runs"]
    assert listed["recorded"] == 2 and listed["total"] == 2, listed
    assert "incomplete (2/2 recorded)" in rook_cli("runs").stdout
    (records / "b.1.json").unlink()
    (listed,) = json.loads(rook_cli("runs", "--json").stdout)["runs"]
    assert listed["recorded"] == 1 and listed["counts"]["pending"] == 1, listed


def test_a_run_of_another_agent_is_named_with_its_agent(ws, rook_cli):
    # 'rook diff A B' with A a run of another agent of the project (copied from
    # its 'rook runs') said only "no such run in .../agents/<this>/runs": no
    # word that the run exists, whose it is, nor that diff compares one agent's runs.
    ws.scenario(scenario("a"))
    ours = run(rook_cli)
    other = ws.agent_dir.parent / "helper"
    shutil.copytree(ws.agent_dir, other, ignore=shutil.ignore_patterns("runs"))
    theirs = run(rook_cli, "--agent", "helper")
    for args in (("diff", theirs, ours), ("runs", "show", theirs)):
        r = rook_cli(*args, "--agent", ws.agent_dir.name)
        assert r.exit_code == 2, (args, r.stderr)
        assert f"run {theirs}: no such run" in r.stderr, r.stderr
        assert "it is a run of agent helper (--agent helper)" in r.stderr, r.stderr
    assert "rook diff compares two runs of one agent" in rook_cli(
        "diff", ours, theirs, "--agent", ws.agent_dir.name).stderr
    unknown = rook_cli("runs", "show", "nope", "--agent", ws.agent_dir.name)
    assert unknown.exit_code == 2 and "run of agent" not in unknown.stderr, unknown.stderr


def test_runs_json_gives_each_run_the_state_the_table_shows(ws, rook_cli):
    # The table's 'state' column (complete, failing, incomplete (N/M recorded),
    # in progress, not merged, merge again) was missing from 'rook runs --json':
    # a tool had to work it out again from complete, exit_code, recorded,
    # in_progress, unmerged_shards and unjoined_shards.
    ws.scenario(scenario("a"))
    ws.scenario(scenario("b"))
    run(rook_cli)
    run(rook_cli, env={"FAIL_IDS": "b"})
    run(rook_cli, "--phases", "prepare,open,execute")
    cut = run(rook_cli)
    for name in ("report.json", "summary.json"):  # as a run killed before its report
        (ws.run_dir(cut) / name).unlink()
    listed = json.loads(rook_cli("runs", "--json").stdout)["runs"]
    states = [r["state"] for r in listed]
    assert states == ["incomplete (2/2 recorded)", "incomplete", "failing", "complete"], states
    table = rook_cli("runs").stdout.splitlines()[2:]
    assert all(line.rstrip().endswith(state) for line, state in zip(table, states, strict=True))
