"""Sharding (`rook run --shard I/N`) and `rook merge`: shards joined equal an unsharded run."""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rook_core import comparing, history, sharding
from rook_core.reportfile import FileEntries, read_report
from rook_core.sharding import partition, run_id_from_name
from rook_core.testing import Workspace

AGENT = r"""
#!/bin/bash
case "$1" in
  prepare) echo "prepare $ROOK_RUN_ID" >> "$PREP_LOG"; exit 0 ;;
  execute) goal=$(cat); sleep "${AGENT_SLEEP:-0}"
           echo "execute $ROOK_SCENARIO_ID" >> "$PREP_LOG"
           printf '{"output": "answer to %s", "calls": [{"name": "lookup", "arguments": {"q": "%s"}}], "usage": {"input": 3, "output": 4}}\n' "$goal" "$goal" ;;
  *) exit 0 ;;
esac
"""


def make_workspace(root: Path, log: Path, sleep: float = 0) -> Workspace:
    ws = Workspace(root)
    ws.script("agent.sh", AGENT)
    ws.profile(
        {
            "id": "p",
            "hooks": {"prepare": "scripts/agent.sh", "execute": "scripts/agent.sh"},
            "hook_env": {"PREP_LOG": str(log), "AGENT_SLEEP": str(sleep)},
            "capabilities": {"calls": True, "usage": True, "multi_turn": False},
            "concurrency": 4,
        }
    )
    for i in range(7):
        ws.scenario(
            {
                "id": f"s{i}",
                "goal": f"question {i}",
                "criteria": [{"contains": f"question {i}" if i % 3 else "nope"}],
            }
        )
    ws.scenario(
        {
            "id": "calls",
            "goal": "look it up",
            "repeat": 3,
            "criteria": [{"called": "lookup"}, {"max_tokens": {"total": 10}}],
        }
    )
    ws.scenario({"id": "two-turns", "turns": ["a", "b"], "criteria": [{"contains": "b"}]})
    return ws


def normalize(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what differs between any two runs (ids, paths, times)."""
    r = copy.deepcopy(report)
    for k in ("id", "dir", "started"):
        r["run"].pop(k, None)
    r["run"]["profile"].pop("file", None)  # a path, like dir: each machine's checkout
    for s in r["scenarios"]:
        s.pop("seconds", None)
        for t in s["turns"]:
            t.pop("seconds", None)
        for h in s["hooks"]:
            h.pop("seconds", None)
    return r


def keys(report: dict[str, Any]) -> list[str]:
    return [f"{s['id']}.{s['repeat_index']}" for s in report["scenarios"]]


def layout(report: dict[str, Any]) -> list[str]:
    """The run's ``report.json``, checked to hold ``report`` in the line layout (the
    compact document, one scenario entry per line); its lines, each normalized."""
    text = (Path(report["run"]["dir"]) / "report.json").read_text(encoding="utf-8")
    assert json.loads(text) == report
    compact = json.dumps(report, ensure_ascii=False, default=str, separators=(",", ":"))
    assert text.endswith("\n") and text[:-1].replace("\n", "") == compact
    lines = text[:-1].split("\n")  # (splitlines would also split at U+2028)
    assert len(lines) == len(report["scenarios"]) + 2
    assert [json.loads(ln.rstrip(",")) for ln in lines[1:-1]] == report["scenarios"]
    read = read_report(Path(report["run"]["dir"]) / "report.json")
    assert isinstance(read["scenarios"], FileEntries) and read == report  # read on demand
    head = json.loads(lines[0] + "]}")
    tail = json.loads('{"scenarios":[' + lines[-1])
    entries = [json.loads(ln.rstrip(",")) for ln in lines[1:-1]]
    return [
        json.dumps(normalize({**head, "scenarios": []}), sort_keys=True),
        *(json.dumps(normalize({"run": {"profile": {}}, "scenarios": [e]})) for e in entries),
        json.dumps(tail["summary"], sort_keys=True),
    ]


def log_lines(log: Path, word: str) -> list[str]:
    return [ln for ln in log.read_text().splitlines() if ln.startswith(word)]


# -- the partition ----------------------------------------------------------------


def test_partition_is_balanced_exhaustive_and_order_free():
    plan = [f"s{i}.{k}" for i in range(40) for k in (1, 2, 3)]
    for n in range(1, 8):
        parts = partition(plan, n)
        assert sorted(k for p in parts for k in p) == sorted(plan)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        assert all(p == [k for k in plan if k in set(p)] for p in parts)  # plan order kept
        assert [set(p) for p in partition(list(reversed(plan)), n)] == [set(p) for p in parts]
    assert partition(["b.1", "a.1"], 5)[2:] == [[], [], []]


def test_partition_is_the_same_in_every_python_process():
    plan = [f"scenario-{i}.1" for i in range(30)]
    here = partition(plan, 4)
    code = f"from rook_core.sharding import partition; print(partition({plan!r}, 4))"
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            check=True,
        )
        assert eval(out.stdout) == here  # noqa: S307 - our own repr of a list of lists
    # pinned: a change here would split runs differently across versions of Rook
    assert partition(["a.1", "b.1", "c.1", "d.1", "e.1"], 2) == [
        ["a.1", "c.1", "e.1"],
        ["b.1", "d.1"],
    ]


def test_run_name_gives_one_id_everywhere():
    assert run_id_from_name("ci-42") == "ci-42"
    assert run_id_from_name("ci 42/attempt 1") == run_id_from_name("ci 42/attempt 1")
    assert run_id_from_name("ci 42/attempt 1").startswith("ci-42-attempt-1-")
    assert run_id_from_name("ci 42") != run_id_from_name("ci/42")


def test_bad_shard_flags_are_refused_before_anything_runs(rook_workspace, rook_cli, tmp_path):
    make_workspace(rook_workspace.root, tmp_path / "log")
    cases = [
        (["--shard", "0/3", "--run-name", "x"], "between 1 and N"),
        (["--shard", "4/3", "--run-name", "x"], "between 1 and N"),
        (["--shard", "one/3", "--run-name", "x"], "use I/N"),
        # int() reads any Unicode digit: Arabic-Indic and fullwidth ones were taken for 1/2
        (["--shard", "\u0661/\u0662", "--run-name", "x"], "use I/N in digits 0-9"),
        (["--shard", "\uff11/\uff12", "--run-name", "x"], "use I/N in digits 0-9"),
        (["--shard", "1/3"], "--run ID or --run-name NAME"),
        (["--run", "a", "--run-name", "b"], "not both"),
        (["--run", "nope"], "no such run"),
        (["--scheduler", "tcp://x:1"], "--executor dask"),
    ]
    for args, message in cases:
        r = rook_cli("run", *args)
        assert r.exit_code == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
    assert not (tmp_path / "log").exists()  # nothing ran
    assert not any(rook_workspace.runs_dir.iterdir())


def test_a_shard_without_a_run_is_given_a_name_that_survives_a_ci_retry(rook_workspace, rook_cli):
    """The message suggested --run-name ci-$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT, the very
    name docs/scale-out.md warns against: GitHub's 'Re-run failed jobs' gives the re-run
    shards a new attempt, which would split the run in two that no merge joins."""
    rook_workspace.script("a.sh", '#!/bin/bash\necho \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--shard", "1/2")
    assert r.exit_code == 2, r.stderr
    assert "(e.g. --run-name ci-$GITHUB_RUN_ID, which a re-run of failed jobs keeps)" in r.stderr, r.stderr
    assert "ATTEMPT" not in r.stderr, r.stderr



@pytest.mark.parametrize("args", [["--shard", "1/2", "--run", "latest"],
                                  ["--shard", "1/2", "--run", "latest~1"],
                                  ["--run-name", "latest"]])
def test_a_run_is_never_named_latest(rook_workspace, rook_cli, tmp_path, args):
    """`--shard 1/2 --run latest` (or `--run-name latest`) made a run whose id is
    "latest": from then on `latest`, wherever a command takes a run, named that
    run instead of the newest one."""
    make_workspace(rook_workspace.root, tmp_path / "log")
    first = rook_cli("run", "--json", "-q")
    assert first.exit_code in (0, 1), first.stderr
    (tmp_path / "log").unlink()
    r = rook_cli("run", *args)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "latest" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "log").exists()  # nothing ran
    assert [p.name for p in rook_workspace.runs_dir.iterdir()] == [first.report["run"]["id"]]

@pytest.mark.parametrize(
    "address, message",
    [  # Dask itself takes these and fails only after its connect timeout
        ("not an address", "holds no spaces"),
        ("tcp://h:99999", "port 99999 is out of range"),
        ("foo://h:1", "unknown scheme 'foo'"),
        ("tcp://:8786", "names no host"),
        # ran prepare, then failed with "not enough values to unpack" (exit 1)
        ("inproc://x", "an inproc:// address names a scheduler inside one Python process"),
        # "not a scheduler address (invalid literal for int() with base 10: '8786/')"
        ("tcp://h:8786/", "port '8786/' is not a number"),
        ("tcp://h:", "port '' is not a number"),
        ("tcp://h:\u0668\u0667\u0668\u0666", "port '\u0668\u0667\u0668\u0666' is not a number"),
    ],
)
def test_a_scheduler_that_cannot_be_an_address_is_refused_before_anything_runs(
    rook_workspace, rook_cli, tmp_path, address, message
):
    pytest.importorskip("distributed")  # the dask extra
    make_workspace(rook_workspace.root, tmp_path / "log")
    r = rook_cli("run", "--executor", "dask", "--scheduler", address)
    assert r.exit_code == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "log").exists() and not any(rook_workspace.runs_dir.iterdir())


@pytest.mark.parametrize(
    "content, message",
    [  # Dask failed on these with an AssertionError after prepare had run
        ("not json at all", "not a Dask scheduler file"),
        ('{"type": "Scheduler"}', "names no scheduler address"),
        ('["tcp://127.0.0.1:8786"]', "not a Dask scheduler file"),
        ('{"address": "tcp://h:99999"}', "port 99999 is out of range"),
    ],
)
def test_a_scheduler_file_that_names_no_scheduler_is_refused_before_anything_runs(
    rook_workspace, rook_cli, tmp_path, content, message
):
    pytest.importorskip("distributed")  # the dask extra
    make_workspace(rook_workspace.root, tmp_path / "log")
    sched = tmp_path / "scheduler.json"
    sched.write_text(content)
    r = rook_cli("run", "--executor", "dask", "--scheduler", str(sched))
    assert r.exit_code == 2, r.stderr
    assert f"--scheduler {sched}" in r.stderr and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "AssertionError" not in r.stderr
    assert not (tmp_path / "log").exists() and not any(rook_workspace.runs_dir.iterdir())


def test_a_folder_given_as_the_scheduler_file_is_named_a_folder(rook_workspace, rook_cli, tmp_path):
    """``--scheduler DIR`` (the folder the scheduler writes its file into) was refused
    as 'no such scheduler file', though the path exists: say it is a folder, and
    name the file the scheduler writes when the folder holds one."""
    pytest.importorskip("distributed")  # the dask extra
    make_workspace(rook_workspace.root, tmp_path / "log")
    folder = tmp_path / "shared"
    folder.mkdir()
    for given in (str(folder), f"{folder}/"):
        r = rook_cli("run", "--executor", "dask", "--scheduler", given)
        assert r.exit_code == 2, r.stderr
        assert f"--scheduler {given}: a folder, not a scheduler file" in r.stderr, r.stderr
        assert "no such" not in r.stderr
    (folder / "scheduler.json").write_text("{}")
    r = rook_cli("run", "--executor", "dask", "--scheduler", str(folder))
    assert r.exit_code == 2 and f"(--scheduler {folder / 'scheduler.json'}?)" in r.stderr, r.stderr
    assert not (tmp_path / "log").exists() and not any(rook_workspace.runs_dir.iterdir())


def test_a_scheduler_nobody_serves_is_refused_before_prepare_runs(
    rook_workspace, rook_cli, tmp_path
):
    """It ran prepare and made a run, then failed after Dask's 10 s connect
    timeout (exit 1, a pending run left behind)."""
    import socket

    pytest.importorskip("distributed")  # the dask extra
    make_workspace(rook_workspace.root, tmp_path / "log")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sched = tmp_path / "scheduler.json"
    sched.write_text(json.dumps({"address": f"tcp://127.0.0.1:{port}"}))
    for given in (f"tcp://127.0.0.1:{port}", str(sched), f"ws://127.0.0.1:{port}"):
        r = rook_cli("run", "--executor", "dask", "--scheduler", given)
        assert r.exit_code == 2, r.stderr
        # a scheduler file's address is named: a stale file (a scheduler started again
        # on another port) was refused as 'no Dask scheduler answers there', saying not where
        at = f" (the address it holds, tcp://127.0.0.1:{port})" if given == str(sched) else ""
        assert f"--scheduler {given}{at}: no Dask scheduler answers there" in r.stderr, r.stderr
        assert not (tmp_path / "log").exists() and not any(rook_workspace.runs_dir.iterdir())


def test_a_scheduler_address_where_something_else_answers_is_refused_before_prepare_runs(
    rook_workspace, rook_cli, tmp_path
):
    """``--scheduler tcp://host:8787`` (the dashboard's port) or any port where
    something that is not a Dask scheduler listens: the TCP check passed, prepare
    ran, a run was made, then Rook hung on Dask's handshake (an HTTP server never
    answers it) or failed with ``executor 'dask' raised MemoryError`` (a length
    read from a stranger's bytes), leaving a pending run; now exit 2, nothing run."""
    import socketserver
    import threading

    pytest.importorskip("distributed")  # the dask extra

    class Refuses(socketserver.BaseRequestHandler):  # an HTTP server's answer to a stranger
        def handle(self) -> None:
            self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    make_workspace(rook_workspace.root, tmp_path / "log")
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Refuses)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"tcp://127.0.0.1:{server.server_address[1]}"
        r = rook_cli("run", "--executor", "dask", "--scheduler", address)
    finally:
        server.shutdown()
        server.server_close()
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"--scheduler {address}: something that is not a Dask scheduler listens there" in (
        r.stderr
    ), r.stderr
    assert "not its dashboard's (8787)" in r.stderr
    assert "Traceback" not in r.stderr and "RuntimeWarning" not in r.stderr, r.stderr
    assert not (tmp_path / "log").exists() and not any(rook_workspace.runs_dir.iterdir())


# -- shards on different machines, merged -------------------------------------------


def test_shards_on_separate_machines_merge_into_the_unsharded_run(tmp_path, rook_cli):
    log = tmp_path / "log"
    main = make_workspace(tmp_path / "main", log)
    machines = []
    for i in (1, 2, 3):
        shutil.copytree(main.root, tmp_path / f"m{i}")
        machines.append(Workspace(tmp_path / f"m{i}"))
    unsharded = rook_cli("run", "-w", str(main.root), "--json")
    assert unsharded.exit_code == 1, unsharded.stderr  # s0, s3, s6 fail on purpose
    whole = unsharded.report

    shard_reports = []
    for i, ws in enumerate(machines, start=1):
        r = rook_cli(
            "run", "-w", str(ws.root), "--shard", f"{i}/3", "--run-name", "ci 42", "--json"
        )
        assert r.exit_code in (0, 1), r.stderr
        shard_reports.append(r.report)
    run_id = run_id_from_name("ci 42")
    assert all(r["run"]["id"] == run_id for r in shard_reports)
    got = [k for r in shard_reports for k in keys(r)]
    assert sorted(got) == sorted(keys(whole)) and len(got) == len(set(got))
    assert len(log_lines(log, "prepare")) == 1 + 3  # once per shard

    dirs = [str(ws.run_dir(run_id)) for ws in machines]
    merged = rook_cli(
        "merge", "-w", str(main.root), *dirs, "--json", "--report", f"junit:{tmp_path}/rook.xml"
    )
    assert merged.exit_code == unsharded.exit_code, merged.stderr
    assert "defined differently" not in merged.stderr, merged.stderr
    assert normalize(merged.report) == normalize(whole)
    assert merged.report["run"]["id"] == run_id
    # report.json as an unsharded run writes it: one scenario entry per line
    assert layout(merged.report) == layout(whole)
    assert (tmp_path / "rook.xml").read_text().count("<testcase") == len(keys(whole))

    # one run record in the main workspace: history and diff see an ordinary run
    run_dir = main.run_dir(run_id)
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["shards"] == 3 and manifest["merged"]["missing"] == []
    assert len(manifest["invocations"]) == 3
    assert sorted(p.name for p in run_dir.glob("run.shard-*.json")) == [
        f"run.shard-{i}-of-3.json" for i in (1, 2, 3)
    ]
    listed = {s["id"]: s for s in history.list_runs(main.runs_dir)}
    assert (
        listed[run_id]["complete"]
        and listed[run_id]["counts"] == listed[whole["run"]["id"]]["counts"]
    )
    assert comparing.diff(whole, merged.report)["counts"] == comparing.diff(whole, whole)["counts"]
    d = rook_cli("diff", "-w", str(main.root), whole["run"]["id"], run_id, "--json")
    assert d.exit_code == 0 and json.loads(d.stdout)["regressed"] == []

    # the merged run resumes like any run: nothing is done twice
    before = log.read_text()
    again = rook_cli("run", "-w", str(main.root), "--run", run_id, "--json")
    assert again.exit_code == unsharded.exit_code, again.stderr
    assert normalize(again.report) == normalize(whole)
    assert layout(again.report) == layout(whole)
    assert log.read_text() == before


def test_shards_sharing_a_file_system_write_one_run_at_once(tmp_path, rook_cli):
    log = tmp_path / "log"
    ws = make_workspace(tmp_path / "ws", log, sleep=0.3)
    whole = rook_cli("run", "-w", str(ws.root), "--json").report
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rook_core",
                "run",
                "-w",
                str(ws.root),
                "--shard",
                f"{i}/3",
                "--run-name",
                "nightly-7",
                "-q",
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2, 3)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] != [2, 2, 2], outs
    assert all(p.returncode in (0, 1) for p in procs), outs
    run_dir = ws.run_dir("nightly-7")
    base = json.loads((run_dir / "run.json").read_text())
    assert base["shards"] == 3 and base["plan"] == keys(whole)
    assert not (run_dir / "report.json").exists() and not (run_dir / "summary.json").exists()
    assert len(list(run_dir.glob("report.shard-*-of-3.json"))) == 3
    assert len(list((run_dir / "scenarios").glob("*.json"))) == len(keys(whole))

    refused = rook_cli("run", "-w", str(ws.root), "--run", "nightly-7")
    assert refused.exit_code == 2 and "rook merge --run nightly-7" in refused.stderr
    wrong = rook_cli("run", "-w", str(ws.root), "--run", "nightly-7", "--shard", "1/2")
    assert wrong.exit_code == 2 and "split into 3 shards" in wrong.stderr

    merged = rook_cli("merge", "-w", str(ws.root), "--run", "nightly-7", "--json")
    assert merged.exit_code == 1, merged.stderr
    assert normalize(merged.report) == normalize(whole)
    assert layout(merged.report) == layout(whole)
    assert history.load_report(run_dir) == merged.report


def test_a_missing_shard_is_refused_then_merged_partially_then_finished(tmp_path, rook_cli):
    log = tmp_path / "log"
    main = make_workspace(tmp_path / "main", log)
    whole = rook_cli("run", "-w", str(main.root), "--json").report
    for i in (1, 2):
        shutil.copytree(main.root, tmp_path / f"m{i}", ignore=shutil.ignore_patterns("runs"))
        r = rook_cli("run", "-w", str(tmp_path / f"m{i}"), "--shard", f"{i}/3", "--run", "r-1")
        assert r.exit_code in (0, 1), r.stderr
    dirs = [str(Workspace(tmp_path / f"m{i}").run_dir("r-1")) for i in (1, 2)]

    refused = rook_cli("merge", "-w", str(main.root), *dirs)
    assert refused.exit_code == 2 and "shard 3/3" in refused.stderr

    partial = rook_cli("merge", "-w", str(main.root), *dirs, "--partial", "--json")
    # it said "rook: merged without shard 3/3", without the word every other note has
    assert "rook: note: merged without shard 3/3 (--partial)" in partial.stderr, partial.stderr
    summary = partial.report["summary"]
    third = len(partition(json.loads((main.run_dir("r-1") / "run.json").read_text())["plan"], 3)[2])
    assert summary["pending"] == third > 0 and summary["coverage"] < 1
    lines = layout(partial.report)  # pending entries too, one per line
    assert len(lines) == len(keys(whole)) + 2

    # the third shard runs later, into the merged run, and a second merge completes it
    late = rook_cli("run", "-w", str(main.root), "--run", "r-1", "--shard", "3/3")
    assert late.exit_code in (0, 1), late.stderr
    done = rook_cli("merge", "-w", str(main.root), "--run", "r-1", "--json")
    assert normalize(done.report) == normalize(whole)
    assert layout(done.report) == layout(whole)
    assert len(log_lines(log, "prepare")) == 1 + 3

    # resuming a shard that finished runs nothing, not even prepare
    before = log.read_text()
    assert rook_cli("run", "-w", str(main.root), "--run", "r-1", "--shard", "3/3").exit_code in (
        0,
        1,
    )
    assert log.read_text() == before


def test_merge_refuses_runs_that_do_not_belong_together(tmp_path, rook_cli):
    ws = make_workspace(tmp_path / "ws", tmp_path / "log")
    assert rook_cli("run", "-w", str(ws.root), "--shard", "1/2", "--run", "a").exit_code in (0, 1)
    assert rook_cli("run", "-w", str(ws.root), "--shard", "1/2", "--run", "b").exit_code in (0, 1)
    r = rook_cli("merge", "-w", str(ws.root), str(ws.run_dir("a")), str(ws.run_dir("b")))
    assert r.exit_code == 2 and "different runs" in r.stderr
    plain = rook_cli("run", "-w", str(ws.root), "--json").report["run"]["id"]
    r = rook_cli("merge", "-w", str(ws.root), "--run", plain)
    assert r.exit_code == 2 and "was not sharded" in r.stderr
    r = rook_cli("run", "-w", str(ws.root), "--run", plain, "--shard", "1/2")
    assert r.exit_code == 2 and "not started sharded" in r.stderr
    r = rook_cli("merge", "-w", str(ws.root))
    assert r.exit_code == 2 and "--run ID" in r.stderr
    # --run with --into and no directories merged whatever --into held, --run unread
    r = rook_cli("merge", "-w", str(ws.root), "--run", "a", "--into", str(tmp_path / "out"))
    assert r.exit_code == 2 and "--into: where the RUN_DIRS given are merged" in r.stderr
    assert not (tmp_path / "out").exists()
    # the shards' copies merged where a run of the same id, not sharded, already is:
    # refused as 'split into None shards, not 2'
    shutil.copytree(ws.run_dir("a"), tmp_path / "copy-a")
    shutil.rmtree(ws.run_dir("a"))
    assert rook_cli("run", "-w", str(ws.root), "--run-name", "a").exit_code in (0, 1)
    before = sorted(p.name for p in ws.run_dir("a").iterdir())
    r = rook_cli("merge", "-w", str(ws.root), str(tmp_path / "copy-a"), "--partial")
    assert r.exit_code == 2, r.stderr
    assert f"{ws.run_dir('a')}: holds run a, which was not sharded" in r.stderr, r.stderr
    assert "None" not in r.stderr and "--into DIR" in r.stderr
    assert sorted(p.name for p in ws.run_dir("a").iterdir()) == before


def test_a_merge_path_holding_a_nul_or_a_newline_is_named_not_a_traceback(tmp_path, rook_cli):
    """A run directory or --into holding a NUL character (given through Python, as
    no command line can) raised ValueError: embedded null byte, a traceback; a
    newline is an ordinary character of a folder's name and is said as typed."""
    ws = make_workspace(tmp_path / "ws", tmp_path / "log")
    assert rook_cli("run", "-w", str(ws.root), "--shard", "1/2", "--run-name", "a").exit_code in (0, 1)
    shard = str(ws.run_dir("a"))
    for args in ([shard + "\0"], ["a\0b"], ["--into", "o\0ut", shard]):
        r = rook_cli("merge", "-w", str(ws.root), *args)
        assert r.exception is None and r.exit_code == 2, (args, r.exception, r.stderr)
        assert r.stderr.startswith("rook: error: ") and "no path holds a NUL character" in r.stderr, r.stderr
        assert "\\x00" in r.stderr and "\0" not in r.stderr, r.stderr  # shown, never printed raw
    r = rook_cli("merge", "-w", str(ws.root), shard + "\nx")
    assert r.exception is None and r.exit_code == 2, r.stderr
    assert "\\n" in r.stderr and "does not exist" in r.stderr, r.stderr


def test_a_merge_of_shards_run_with_different_profiles_says_so(tmp_path, rook_cli):
    """Shards whose profile (same id) differed, as on two commits, merged without a
    word: the merged run kept one shard's profile.yaml, as if every shard had used it
    (a scenario defined differently is warned of)."""
    main = _ok_workspace(Workspace(tmp_path / "main"))
    for i in (1, 2):
        shutil.copytree(main.root, tmp_path / f"m{i}")
    changed = Workspace(tmp_path / "m2")
    changed.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}, "concurrency": 1})
    for i in (1, 2):
        r = rook_cli("run", "-w", str(tmp_path / f"m{i}"), "--shard", f"{i}/2", "--run", "ci")
        assert r.exit_code == 0, r.stderr
    dirs = [str(Workspace(tmp_path / f"m{i}").run_dir("ci")) for i in (1, 2)]
    merged = rook_cli("merge", "-w", str(main.root), *dirs)
    assert merged.exit_code == 0, merged.stderr
    assert "rook: warning: profile p was defined differently on different shards" in merged.stderr
    assert dirs[1] in merged.stderr, merged.stderr


def test_a_shard_joining_a_shared_run_with_another_profile_or_scenario_says_so(
    rook_workspace, rook_cli
):
    """Shards writing into one folder (a shared file system), the second one on another
    commit: its profile (same id) or a scenario of its share differed from what the
    first shard started the run with, and nothing said so, neither the shard nor
    rook merge --run (one profile.yaml, run.json's definitions the first shard's),
    where a merge of copies warns of both."""
    ws = _ok_workspace(rook_workspace, 6)
    plan = [f"s{i}.1" for i in range(6)]
    second = sharding.shard_keys(plan, sharding.Shard(2, 2))
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    ws.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}, "concurrency": 1})
    mine = second[0].rsplit(".", 1)[0]  # a scenario of the second shard's share, changed
    ws.scenario({"id": mine, "goal": "other", "criteria": [{"contains": "fine"}]})
    joined = rook_cli("run", "--shard", "2/2", "--run-name", "ci")
    assert joined.exit_code == 0, joined.stderr
    assert (f"rook: warning: profile p ({ws.agent_dir / 'profiles' / 'p.yaml'}) differs from "
            "the one run ci was started with") in joined.stderr, joined.stderr
    assert (f"rook: warning: scenario {mine} ({ws.agent_dir / 'scenarios' / mine}.yaml) differs "
            "from when run ci was started") in joined.stderr, joined.stderr
    assert joined.stderr.count("differs from") == 2, joined.stderr  # the others are the same
    assert "check every shard runs the same commit" in joined.stderr
    again = rook_cli("run", "--shard", "2/2", "--run-name", "ci")  # a resume: said once
    assert "differs from" not in again.stderr, again.stderr


@pytest.mark.parametrize("shard", [1, 2])
def test_a_merge_of_copies_that_planned_a_scenario_differently_says_so(tmp_path, rook_cli, shard):
    """Machine 2 on another commit, one scenario changed there: merged without a word
    when only one shard's record is of it (the merged run.json kept the first shard's
    definition beside machine 2's record), though a scenario run by both is warned of."""
    main = _ok_workspace(Workspace(tmp_path / "main"))
    for i in (1, 2):
        shutil.copytree(main.root, tmp_path / f"m{i}")
    # a scenario of shard 2's share (its record is machine 2's), or of shard 1's (planned only)
    key = partition([f"s{i}.1" for i in range(4)], 2)[shard - 1][0]
    sid = key.rsplit(".", 1)[0]
    Workspace(tmp_path / "m2").scenario({"id": sid, "goal": "v2", "criteria": [{"contains": "fine"}]})
    for i in (1, 2):
        r = rook_cli("run", "-w", str(tmp_path / f"m{i}"), "--shard", f"{i}/2", "--run", "ci")
        assert r.exit_code == 0, r.stderr
    dirs = [str(Workspace(tmp_path / f"m{i}").run_dir("ci")) for i in (1, 2)]
    for order in (dirs, dirs[::-1]):
        merged = rook_cli("merge", "--into", str(tmp_path / "out"), *order)
        assert merged.exit_code == 0, merged.stderr
        assert (f"rook: warning: scenario {sid} was defined differently on different shards "
                "(2 versions)") in merged.stderr, merged.stderr
        assert merged.stderr.count("defined differently") == 1, merged.stderr


def test_the_order_of_the_copies_given_to_merge_never_changes_the_merged_run(tmp_path, rook_cli):
    """rook merge DIR_1 DIR_2 and rook merge DIR_2 DIR_1 wrote different runs when the
    machines' workspaces lay at different paths: the merged run.json and report took
    the workspace, the profile's file, profile.yaml and the run's state from whichever
    copy was named first. Now the shard whose run.json was made first is the base,
    whatever the order (then the path, for copies made at the same moment)."""
    for i in (2, 1):  # machine-2 first: its run.json is made first, its path sorts last
        ws = _ok_workspace(Workspace(tmp_path / f"machine-{i}"))
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run", "ci")
        assert r.exit_code == 0, r.stderr
        time.sleep(0.05)
    dirs = [str(Workspace(tmp_path / f"machine-{i}").run_dir("ci")) for i in (1, 2)]
    got = []
    for name, order in (("a", dirs), ("b", dirs[::-1])):
        r = rook_cli("merge", "--into", str(tmp_path / name), "--json", *order)
        assert r.exit_code == 0, r.stderr
        run = json.loads((tmp_path / name / "run.json").read_text())
        for key in ("dir", "merged"):
            run.pop(key)
        report = r.report
        report["run"].pop("dir")
        got.append((report, run, (tmp_path / name / "profile.yaml").read_text()))
    assert got[0] == got[1]
    assert got[0][0]["run"]["profile"]["file"].startswith(str(tmp_path / "machine-2")), got[0][0]


def test_a_merge_of_copies_that_planned_other_runs_names_them_as_a_merge(tmp_path, rook_cli):
    """rook merge of two machines' copies that planned other scenario runs said
    'this run: ... planned other scenario runs than this shard', though no shard ran."""
    for i, count in ((1, 4), (2, 5)):
        ws = _ok_workspace(Workspace(tmp_path / f"m{i}"), count)
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run", "ci")
        assert r.exit_code == 0, r.stderr
    dirs = [str(Workspace(tmp_path / f"m{i}").run_dir("ci")) for i in (1, 2)]
    r = rook_cli("merge", "--into", str(tmp_path / "out"), *dirs)
    assert r.exit_code == 2, r.stderr
    assert f"rook merge: {dirs[1]}/run.json planned other scenario runs than {dirs[0]}" in r.stderr
    assert "this shard" not in r.stderr and "this run" not in r.stderr, r.stderr


def test_a_shard_joining_a_run_that_planned_other_scenario_runs_is_refused(
    rook_workspace, rook_cli, tmp_path
):
    """The second shard to start finds run.json written by the first; it must plan
    exactly that run (same scenarios, same flags), or be refused naming what differs,
    never run the first shard's plan and silently drop its own scenarios."""
    log = tmp_path / "log"
    ws = make_workspace(rook_workspace.root, log)
    first = rook_cli("run", "--shard", "1/2", "--run-name", "ci-7")
    assert first.exit_code in (0, 1), first.stderr
    before = log.read_text()
    ws.scenario({"id": "added-later", "goal": "new", "criteria": [{"contains": "new"}]})
    r = rook_cli("run", "--shard", "2/2", "--run-name", "ci-7")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "planned other scenario runs" in r.stderr, r.stderr
    # named as the results table names a scenario run, not by its record key
    assert "(differing: added-later)" in r.stderr and "added-later.1" not in r.stderr, r.stderr
    (ws.agent_dir / "scenarios" / "added-later.yaml").unlink()
    r = rook_cli("run", "--shard", "2/2", "--run-name", "ci-7", "--only", "s1")
    assert r.exit_code == 2 and "planned other scenario runs" in r.stderr, r.stderr
    r = rook_cli("run", "--shard", "2/2", "--run-name", "ci-7", "--repeat", "2")
    assert r.exit_code == 2 and "planned other scenario runs" in r.stderr, r.stderr
    assert "(differing: calls #3, s0 #2, s1 #2, s2 #2, s3 #2 and 4 more)" in r.stderr, r.stderr
    assert log.read_text() == before, "nothing ran"
    assert not (ws.run_dir("ci-7") / "run.shard-2-of-2.json").exists()

    # the same plan joins; once joined, a narrower --only resumes it as before
    r = rook_cli("run", "--shard", "2/2", "--run-name", "ci-7", "--json")
    assert r.exit_code in (0, 1), r.stderr
    assert r.report["scenarios"]
    r = rook_cli("run", "--shard", "2/2", "--run-name", "ci-7", "--only", "s1")
    assert r.exit_code in (0, 1), r.stderr
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci-7").exit_code in (0, 1)


def test_many_shards_are_cheap_and_too_many_are_refused(rook_workspace, rook_cli, tmp_path):
    """N far beyond the plan leaves most shards empty: a shard finds its own part without
    building every other one (``--shard 5/100000000`` built 10^8 lists and never ended;
    N is now at most 100000), and merging names the missing shards briefly."""
    make_workspace(rook_workspace.root, tmp_path / "log")
    r = rook_cli("run", "--shard", "1/100001", "--run-name", "wide")
    assert r.exit_code == 2 and "--shard 1/100001: N must be at most 100000" in r.stderr
    assert not any(rook_workspace.runs_dir.iterdir()), "nothing ran"
    for i in (1, 2, 99_999):
        r = rook_cli("run", "--shard", f"{i}/100000", "--run-name", "wide", "--json")
        assert r.exit_code in (0, 1), r.stderr
        assert len(r.report["scenarios"]) == (1 if i <= 11 else 0)
    r = rook_cli("merge", "-w", str(rook_workspace.root), "--run", "wide")
    assert r.exit_code == 2 and "no record of shards 3/100000, 4/100000," in r.stderr
    # only the shards with scenario runs to run are missing: 3..11, never an empty one
    # (it had named all 99997 shards not run, each to be run for nothing)
    assert "11/100000 in " in r.stderr and "12/100000" not in r.stderr, r.stderr
    assert "in all" not in r.stderr and len(r.stderr) < 1000
    r = rook_cli("merge", "-w", str(rook_workspace.root), "--run", "wide", "--partial")
    assert r.exit_code == 1 and "12/100000" not in r.stderr and len(r.stderr) < 2000


def test_a_merge_never_asks_to_run_a_shard_with_nothing_to_run(rook_workspace, rook_cli, tmp_path):
    """One scenario run in 3 shards, only an empty shard run: the merge named the empty
    one never run as missing too ('no record of shards 1/3, 3/3 ... run each: ...
    (and likewise shard 3/3)'), a job that runs nothing, where a merge with that one
    shard run needs none of the empty ones."""
    make_workspace(rook_workspace.root, tmp_path / "log")
    busy = partition(["s1.1"], 3)
    (full,) = [i for i, keys in enumerate(busy, start=1) if keys]
    empty = [i for i in (1, 2, 3) if i != full]
    r = rook_cli("run", "--only", "s1", "--shard", f"{empty[0]}/3", "--run-name", "one")
    assert r.exit_code == 0, r.stderr
    r = rook_cli("merge", "-w", str(rook_workspace.root), "--run", "one")
    assert r.exit_code == 2, r.stderr
    assert f"no record of shard {full}/3 in " in r.stderr, r.stderr
    assert f"{empty[1]}/3" not in r.stderr, r.stderr
    r = rook_cli("merge", "-w", str(rook_workspace.root), "--run", "one", "--partial")
    assert r.exit_code == 1, r.stderr
    assert f"{empty[1]}/3" not in r.stderr, r.stderr


def test_a_shard_written_with_blanks_or_leading_zeros_is_that_shard(
        rook_workspace, rook_cli, tmp_path):
    # " 1/2" and "01/02" (a CI matrix's printf %02d) were taken, while the docs spoke
    # of digits alone: they are shard 1 of 2, as documented, and the same shard as 1/2
    make_workspace(rook_workspace.root, tmp_path / "log")
    for value in (" 01 / 02 ", "1/2"):
        r = rook_cli("run", "--only", "s1,s2,s3", "--shard", value, "--run-name", "padded",
                     "--json")
        assert r.exit_code in (0, 1), (value, r.stderr)
    shards = sorted(p.name for p in (rook_workspace.runs_dir / "padded").glob("run.shard-*"))
    assert shards == ["run.shard-1-of-2.json"], shards
    r = rook_cli("run", "--shard", "1/02x", "--run-name", "padded")
    assert r.exit_code == 2 and "use I/N in digits 0-9" in r.stderr, r.stderr


def test_an_empty_shard_runs_nothing_and_passes(rook_workspace, rook_cli, tmp_path):
    make_workspace(rook_workspace.root, tmp_path / "log")
    r = rook_cli("run", "--only", "s1", "--shard", "2/2", "--run-name", "tiny", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"] == []
    assert not (tmp_path / "log").exists()  # no hook at all: not even prepare
    # no empty table (tabulate 0.9 raised IndexError on it; then its headers alone, and
    # "no scenarios — pass rate n/a"): the shard says it has nothing to run, and why
    r = rook_cli("run", "--only", "s1", "--shard", "2/2", "--run-name", "tiny-table")
    assert r.exit_code == 0 and "Traceback" not in r.stderr, r.stderr
    assert not r.stdout.startswith("scenario ") and "pass rate" not in r.stdout, r.stdout
    assert (
        "shard 2/2 has no scenarios to run: run tiny-table plans 1 scenario run, for shard 1/2"
        in r.stdout
    ), r.stdout
    assert "rook merge --run tiny-table" in r.stdout, r.stdout
    # still recorded: a merge finds it, and a merge of the whole run misses shard 1 alone
    assert (rook_workspace.runs_dir / "tiny-table" / "run.shard-2-of-2.json").is_file()
    r = rook_cli("merge", "-w", str(rook_workspace.root), "--run", "tiny-table")
    assert r.exit_code == 2 and "no record of shard 1/2 in " in r.stderr, r.stderr


def test_a_shard_resumes_when_a_scenario_of_another_shard_was_removed(
    rook_workspace, rook_cli, tmp_path
):
    """A scenario file removed after shard 1 joined kept shard 1 from resuming (exit 2,
    "no longer exist", naming the removed scenario) though no run of it is shard 1's."""
    log = tmp_path / "log"
    make_workspace(rook_workspace.root, log)
    r = rook_cli("run", "--shard", "1/2", "--run-name", "gone", "--phases", "prepare,open,execute")
    assert r.exit_code == 0, r.stderr
    part = json.loads((rook_workspace.run_dir("gone") / "run.shard-1-of-2.json").read_text())
    mine = {k.rsplit(".", 1)[0] for k in part["shard"]["plan"]}
    other = sorted({k.rsplit(".", 1)[0] for k in part["plan"]} - mine)[0]
    (rook_workspace.agent_dir / "scenarios" / f"{other}.yaml").unlink()
    # the part's "shard" is rewritten by each invocation, never read: one edited is no error
    damaged = {**part, "shard": 5}
    (rook_workspace.run_dir("gone") / "run.shard-1-of-2.json").write_text(json.dumps(damaged))
    r = rook_cli("run", "--run", "gone", "--shard", "1/2", "--json")
    assert r.exit_code in (0, 1), r.stderr
    assert sorted(keys(r.report)) == sorted(part["shard"]["plan"])
    assert "pending" not in {e["status"] for e in r.report["scenarios"]}
    assert len(log_lines(log, "prepare")) == 1


def test_a_shard_split_by_phase_is_told_how_to_finish_as_a_shard(
    rook_workspace, rook_cli, tmp_path
):
    """The hole rule's hint left out --shard (rook run --run ID --phases ..., which a
    run not merged yet refuses); a shard's first invocation with a suffix of the phases
    ran nothing and exited 0, leaving a part that made the shard look present."""
    log = tmp_path / "log"
    make_workspace(rook_workspace.root, log)
    r = rook_cli("run", "--shard", "1/2", "--run-name", "hole", "--phases", "prepare,open,execute")
    assert r.exit_code == 0, r.stderr
    r = rook_cli("run", "--run", "hole", "--shard", "1/2", "--phases", "judge")
    assert r.exit_code == 2 and "rook run --run hole --shard 1/2 --phases " in r.stderr, r.stderr
    before = log.read_text()
    r = rook_cli("run", "--run", "hole", "--shard", "2/2", "--phases", "collect,judge")
    assert r.exit_code == 2 and "shard 2/2 of run hole has not run yet" in r.stderr, r.stderr
    assert log.read_text() == before
    assert not (rook_workspace.run_dir("hole") / "run.shard-2-of-2.json").exists()


def test_merge_waits_for_a_shard_still_running(tmp_path, rook_cli):
    ws = make_workspace(tmp_path / "ws", tmp_path / "log", sleep=1)
    run_dir = ws.run_dir("busy")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rook_core",
            "run",
            "-w",
            str(ws.root),
            "--shard",
            "1/2",
            "--run",
            "busy",
            "-q",
            "-j",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(100):
            if (tmp_path / "log").is_file() and "execute" in (tmp_path / "log").read_text():
                break
            time.sleep(0.1)
        r = rook_cli("merge", "-w", str(ws.root), "--run", "busy")
        assert r.exit_code == 2 and "shard 1/2 is still running" in r.stderr
        # its directory given, merged elsewhere: it merged a half-written shard (exit 1,
        # its runs "pending", "did not finish") while the shard went on
        out = tmp_path / "out" / "busy"
        r = rook_cli("merge", str(run_dir), "--into", str(out), "--partial")
        assert r.exit_code == 2 and "shard 1/2 is still running" in r.stderr, r.stderr
        assert not out.exists()
    finally:
        proc.communicate(timeout=60)
    assert rook_cli("run", "-w", str(ws.root), "--shard", "2/2", "--run", "busy").exit_code in (
        0,
        1,
    )
    assert rook_cli("merge", "-w", str(ws.root), "--run", "busy").exit_code == 1
    assert json.loads((run_dir / "run.json").read_text())["merged"]["missing"] == []


def test_runs_show_of_a_sharded_run_whose_shard_is_running_says_it_is_in_progress(
    tmp_path, rook_cli
):
    """rook runs show of a sharded run a shard was still running said 'not merged yet
    ... join them with: rook merge --run ID', a merge refused while the shard runs, and
    rook runs listed it as 'not merged (N/M recorded)', where an unsharded run held by
    its rook run is 'in progress': it says so, naming the shard."""
    log = tmp_path / "log"
    ws = make_workspace(tmp_path / "ws", log, sleep=1)
    shard = _background_run(ws, log, "--shard", "1/2", "--run", "busy")
    try:
        show = rook_cli("runs", "show", "busy", "-w", str(ws.root))
        assert show.exit_code == 0, show.stderr
        busy = f"rook: run busy is in progress (pid {shard.pid}, shard 1/2)"
        assert busy in show.stderr and "warning" not in show.stderr, show.stderr
        listed = rook_cli("runs", "-w", str(ws.root))
        (row,) = [ln for ln in listed.stdout.splitlines() if ln.startswith("busy")]
        assert "in progress (" in row and "not merged" not in row, listed.stdout
        as_json = rook_cli("runs", "-w", str(ws.root), "--json")
        assert json.loads(as_json.stdout)["runs"][0]["in_progress"] == f"pid {shard.pid}, shard 1/2"
    finally:
        shard.communicate(timeout=60)
    show = rook_cli("runs", "show", "busy", "-w", str(ws.root))
    assert "in progress" not in show.stderr and "is not merged yet" in show.stderr, show.stderr
    listed = rook_cli("runs", "-w", str(ws.root))
    assert "not merged (" in listed.stdout and "in progress" not in listed.stdout, listed.stdout
    # merged without shard 2/2, which then runs: not 'merge again', nor its command
    assert rook_cli("merge", "-w", str(ws.root), "--run", "busy", "--partial").exit_code == 1
    shard = _background_run(ws, log, "--shard", "2/2", "--run", "busy")
    try:
        show = rook_cli("runs", "show", "busy", "-w", str(ws.root))
        assert f"rook: run busy is in progress (pid {shard.pid}, shard 2/2)" in show.stderr
        assert "finish each with" not in show.stderr, show.stderr
        listed = rook_cli("runs", "-w", str(ws.root))
        (row,) = [ln for ln in listed.stdout.splitlines() if ln.startswith("busy")]
        assert row.endswith("in progress"), listed.stdout
        # once it recorded a scenario run since the merge: still no merge advised, which
        # would be refused while the shard runs
        run_dir = ws.runs_dir / "busy"
        merged_at = (run_dir / "report.json").stat().st_mtime
        for _ in range(100):
            if any(f.stat().st_mtime > merged_at for f in (run_dir / "scenarios").glob("*.json")):
                break
            time.sleep(0.1)
        show = rook_cli("runs", "show", "busy", "-w", str(ws.root))
        assert shard.poll() is None, "the shard ended too soon for this test"
        busy = f"rook: run busy is in progress (pid {shard.pid}, shard 2/2); shard 2/2 recorded"
        assert busy in show.stderr and "until: rook merge" not in show.stderr, show.stderr
        assert "once it ends, merge again with: rook merge --run busy" in show.stderr
        assert show.stderr.count("in progress") == 1, show.stderr
        other = rook_cli("diff", "busy", "busy", "-w", str(ws.root))  # so does rook diff
        assert busy in other.stderr and "until: rook merge" not in other.stderr, other.stderr
        listed = rook_cli("runs", "-w", str(ws.root))
        (row,) = [ln for ln in listed.stdout.splitlines() if ln.startswith("busy")]
        assert row.endswith("in progress"), listed.stdout
        (entry,) = json.loads(rook_cli("runs", "-w", str(ws.root), "--json").stdout)["runs"]
        assert entry["in_progress"] == f"pid {shard.pid}, shard 2/2", entry
    finally:
        shard.communicate(timeout=60)
    show = rook_cli("runs", "show", "busy", "-w", str(ws.root))  # ended: merge it now
    assert "in progress" not in show.stderr, show.stderr
    assert "shard 2/2 recorded scenario runs after run busy was merged" in show.stderr
    assert "rook merge --run busy" in show.stderr, show.stderr
    listed = rook_cli("runs", "-w", str(ws.root))
    assert "merge again" in listed.stdout, listed.stdout


def test_a_late_shard_that_ends_before_another_says_to_merge_once_that_one_ends(
    tmp_path, rook_cli
):
    """Shards 2/3 and 3/3 run after merge --partial: 2/3, ending first, said 'its report
    leaves this shard out until: rook merge --run ID', a merge refused while 3/3 runs.
    It says 3/3 still runs, and to merge once it ends."""
    ws, log = Workspace(tmp_path / "ws"), tmp_path / "log"
    ws.script("agent.sh", '#!/bin/bash\ngoal=$(cat)\ncase "$goal" in *slow*) '
              'echo slow >> "$SLOW_LOG"; sleep 4;; esac\nprintf \'{"output": "%s"}\\n\' "$goal"\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "hook_env": {"SLOW_LOG": str(log)}, "concurrency": 4})
    ids = [f"s{i}" for i in range(6)]
    third = {k.split(".")[0] for k in partition([f"{i}.1" for i in ids], 3)[2]}
    for i in ids:
        ws.scenario({"id": i, "goal": f"{i} slow" if i in third else i, "criteria": [{"contains": i}]})
    rook_cli("run", "-w", str(ws.root), "--run-name", "m", "--shard", "1/3")
    assert rook_cli("merge", "-w", str(ws.root), "--run", "m", "--partial").exit_code == 1
    late = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "-q", "--run", "m",
         "--shard", "3/3"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if log.is_file():
                break
            time.sleep(0.1)
        second = rook_cli("run", "-w", str(ws.root), "-q", "--run", "m", "--shard", "2/3")
        assert late.poll() is None, "shard 3/3 ended too soon for this test"
        assert "was merged before this shard ran" in second.stderr, second.stderr
        assert f"run m is in progress (pid {late.pid}, shard 3/3)" in second.stderr, second.stderr
        assert "until: rook merge" not in second.stderr, second.stderr
        assert f"when it ends: rook merge --run m -w {ws.root}" in second.stderr, second.stderr
    finally:
        late.communicate(timeout=60)
    show = rook_cli("runs", "show", "m", "-w", str(ws.root))
    assert "shards 2/3, 3/3 recorded scenario runs after run m was merged" in show.stderr, show.stderr


def _background_run(ws: Workspace, log: Path, *args: str) -> subprocess.Popen[str]:
    """``rook run ARGS`` in ``ws`` as a process of its own, once its first execute ran."""
    start = len(log_lines(log, "execute")) if log.is_file() else 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "-q", "-j", "1", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120  # a loaded machine may take its time to start it
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and len(log_lines(log, "execute")) > start:
            break
        time.sleep(0.1)
    return proc


def test_a_merged_run_is_never_resumed_whole_and_by_a_shard_at_once(tmp_path, rook_cli):
    """After a merge, rook run --run ID (the run's lock) and a shard's resume (the
    shard's lock) both ran the unfinished scenario runs, each executing them, and the
    whole run killed the shard's hooks as leftovers of a killed run."""
    log = tmp_path / "log"
    ws = make_workspace(tmp_path / "ws", log, sleep=1)
    assert rook_cli("run", "-w", str(ws.root), "--shard", "1/3", "--run", "both").exit_code in (
        0,
        1,
    )
    assert rook_cli("merge", "-w", str(ws.root), "--run", "both", "--partial").exit_code == 1
    shard = _background_run(ws, log, "--run", "both", "--shard", "2/3")
    try:
        r = rook_cli("run", "-w", str(ws.root), "--run", "both")
        assert r.exit_code == 2 and "in use by another rook process" in r.stderr, r.stderr
        assert "shard 2/3" in r.stderr and "killed" not in r.stderr
    finally:
        _, err = shard.communicate(timeout=60)
    assert shard.returncode in (0, 1), err
    whole = _background_run(ws, log, "--run", "both")
    try:
        r = rook_cli("run", "-w", str(ws.root), "--run", "both", "--shard", "3/3")
        assert r.exit_code == 2 and "in use by another rook process" in r.stderr, r.stderr
    finally:
        _, err = whole.communicate(timeout=60)
    assert whole.returncode in (0, 1), err
    executed = log_lines(log, "execute")
    assert len(executed) == len(set(executed)) + 2  # calls: three runs, one line each


# -- a large merge keeps one record in memory at a time ----------------------------------


def _grown_copy(src: Path, dst: Path, template: dict[str, Any], n: int) -> None:
    """A copy of the sharded run ``src`` with ``n`` more recorded scenario runs (copies
    of a real record, each with a 3 KB answer), dealt to its shards as the plan does."""
    shutil.copytree(src, dst)
    base = json.loads((dst / "run.json").read_text())
    for i in range(n):
        sid = f"x{i:05d}"
        record = copy.deepcopy(template)
        record["key"] = f"{sid}.1"
        record["scenario"].update(id=sid, name=sid, content_hash=f"{i:016x}")
        record["turns"][0]["output"] = f"{i} " + "o" * 3000
        (dst / "scenarios" / f"{sid}.1.json").write_text(json.dumps(record))
        base["plan"].append(f"{sid}.1")
    (dst / "run.json").write_text(json.dumps(base))


def _merge_peak(run_dir: Path) -> int:
    """Peak traced memory of merging ``run_dir`` in place, writing its report.json and
    printing the report as ``--json`` does."""
    import os
    import tracemalloc

    from rook_core.merging import merge_runs, write_merged_report
    from rook_core.reportio import dump

    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    merged = merge_runs([run_dir], run_dir)
    report = write_merged_report(merged, 0.5)
    with open(os.devnull, "w", encoding="utf-8") as fh:
        dump(report, fh, ensure_ascii=False)
    history.write_summary(run_dir, report)
    peak = tracemalloc.get_traced_memory()[1] - before
    assert report["summary"]["total"] == len(merged.manifest["plan"])
    report["scenarios"].close()
    return peak


def test_merging_many_scenario_runs_keeps_no_entry_per_run(tmp_path, rook_cli):
    """Four times the records add far less memory than holding their entries would."""
    ws = make_workspace(tmp_path / "ws", tmp_path / "log")
    for i in (1, 2):
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run", "big")
        assert r.exit_code in (0, 1), r.stderr
    src = ws.run_dir("big")
    template = json.loads((src / "scenarios" / "calls.1.json").read_text())
    small, large = 300, 1200
    _grown_copy(src, tmp_path / "warm", template, 20)
    _grown_copy(src, tmp_path / "small", template, small)
    _grown_copy(src, tmp_path / "large", template, large)
    # measured in an interpreter of its own, as a merge runs: in the whole suite's
    # one long process the same merges once peaked ~4.5 MB apart (not found why;
    # alone, and after either half of the suite, they stay far below the limit)
    measure = f"""
import json, sys, tracemalloc
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_shard import _merge_peak
from rook_core.report import scenario_entry
tmp = Path({str(tmp_path)!r})
tracemalloc.start()
_merge_peak(tmp / "warm")  # imports, first-use caches
# each the lesser of two merges: a peak can hold a one-off ~1 MB (the interpreter's
# table of interned strings, which pathlib fills with file names, resized: both
# tables at once) in whichever merge fills it; records held would be in both
streamed = min(_merge_peak(tmp / "large") for _ in "12") - min(
    _merge_peak(tmp / "small") for _ in "12"
)
tracemalloc.reset_peak()
before = tracemalloc.get_traced_memory()[0]
held = [
    scenario_entry(json.loads(p.read_text()))
    for p in sorted((tmp / "large" / "scenarios").glob("x*.json"))[: {large - small}]
]
whole = tracemalloc.get_traced_memory()[0] - before
print(json.dumps([streamed, whole]))
"""
    proc = subprocess.run(
        [sys.executable, "-c", measure], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    streamed, whole = json.loads(proc.stdout.strip().splitlines()[-1])
    assert streamed < whole / 4, (streamed, whole)
    # and the large merge's report.json is in the line layout, every entry on its line
    text = (tmp_path / "large" / "report.json").read_text(encoding="utf-8")
    assert text.count("\n") == len(keys(json.loads(text))) + 2


def test_a_merge_with_runs_still_pending_does_not_pass(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    ws.script("ok.sh", "#!/bin/bash\ncat >/dev/null\necho '{\"output\": \"fine\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}})
    for i in range(4):
        ws.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "fine"}]})
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    cut = rook_cli("run", "--shard", "2/2", "--run-name", "ci", "--phases", "prepare,open,execute")
    assert cut.exit_code == 0  # a split run: the rest comes later
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--json")
    assert r.report["summary"]["pending"] > 0 and r.report["summary"]["failed"] == 0
    assert r.exit_code == 1 and "still pending: shard 2/2 did not finish" in r.stderr
    # the command that finishes it, with the run and the shard (it said "--run ID --shard I/N")
    assert "finish each with: rook run --run ci --shard 2/2" in r.stderr, r.stderr
    # as printed, from anywhere: it names the workspace merge was given
    printed = r.stderr.split("finish each with: ", 1)[1].split(", then merge again")[0]
    argv = shlex.split(printed)
    assert argv[:2] == ["rook", "run"], printed
    finish = subprocess.run([sys.executable, "-m", "rook_core", *argv[1:]], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert finish.returncode == 0, (printed, finish.stderr)
    done = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert done.exit_code == 0 and "pending" not in done.stderr, done.stderr


def test_merge_keeps_a_finished_record_over_an_unfinished_one_else_the_latest(
    tmp_path, rook_cli
):
    """scale-out.md: merge takes one record per planned scenario run, a finished one
    over an unfinished one (a copy of a shard cut off after execute, however late),
    else the latest (a shard run twice: the second run's answers)."""
    ws = Workspace(tmp_path / "ws")
    ws.script("n.sh", r"""#!/bin/bash
cat >/dev/null
echo "{\"output\": \"answer $(cat "$ROUND")\"}"
""")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/n.sh"},
                "hook_env": {"ROUND": str(tmp_path / "round")}})
    for i in range(4):
        ws.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "answer"}]})
    copies = {}

    def shard(name: str, i: int, round_: int, *phases: str) -> None:
        (tmp_path / "round").write_text(str(round_))
        shutil.rmtree(ws.run_dir("ci"), ignore_errors=True)
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run-name", "ci", *phases)
        assert r.exit_code == 0, r.stderr
        copies[name] = shutil.copytree(ws.run_dir("ci"), tmp_path / name)

    shard("done", 1, 1)
    shard("cut", 1, 2, "--phases", "prepare,open,execute")  # later, but not finished
    shard("other", 2, 1)
    shard("again", 2, 3)  # shard 2 run again later: its records are the latest
    shutil.rmtree(ws.run_dir("ci"))
    r = rook_cli("merge", "-w", str(ws.root), *(str(copies[n]) for n in ("cut", "done", "again", "other")),
                 "--json")
    assert r.exit_code == 0, r.stderr
    part = json.loads((copies["done"] / "run.shard-1-of-2.json").read_text())["shard"]["plan"]
    outputs = {f"{e['id']}.{e['repeat_index']}": e["turns"][0]["output"] for e in r.report["scenarios"]}
    assert r.report["summary"]["pending"] == 0 and len(outputs) == 4, r.report["summary"]
    assert outputs == {k: "answer 1" if k in part else "answer 3" for k in outputs}, outputs
    # which copy of a shard run twice was kept was said nowhere: a warning names every
    # copy and the one kept (the one that ran last), each shard once
    for i, held, kept in ((1, ("cut", "done"), "cut"), (2, ("again", "other"), "again")):
        name = f"run.shard-{i}-of-2.json"
        assert (
            f"rook: warning: shard {i}/2 has 2 different copies "
            f"({copies[held[0]] / name}, {copies[held[1]] / name}): the merge keeps the one "
            f"that ran last, {copies[kept] / name}, and of each of its scenario runs the "
            "finished record, else the latest" in r.stderr
        ), r.stderr
        assert r.stderr.count(f"shard {i}/2 has") == 1, r.stderr
    # two identical copies of a shard (one given twice, copied): nothing to say
    twin = shutil.copytree(copies["done"], tmp_path / "twin")
    shutil.rmtree(ws.run_dir("ci"))  # the first merge's copies: then a third, and a fourth
    r = rook_cli("merge", "-w", str(ws.root), str(copies["done"]), str(twin),
                 str(copies["other"]), "--json")
    assert r.exit_code == 0 and "different copies" not in r.stderr, r.stderr


def test_merging_again_after_a_shard_was_run_again_does_not_warn_of_the_earlier_merge(
    tmp_path, rook_cli
):
    """scale-out.md: merging into the folder of an earlier merge, after a shard ran
    again (a CI job re-run, its new artifact given), replaces the copy that merge
    left there without a word: only copies given in place of a later one are named."""
    ws = Workspace(tmp_path / "ws")
    ws.script("n.sh", "#!/bin/bash\ncat >/dev/null\necho '{\"output\": \"answer\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/n.sh"}})
    for i in range(4):
        ws.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "answer"}]})

    def shard(name: str, i: int) -> Path:
        aside = tmp_path / "aside"
        if ws.run_dir("ci").exists():  # the merged run stays where it is
            shutil.move(ws.run_dir("ci"), aside)
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run-name", "ci")
        assert r.exit_code == 0, r.stderr
        copy_ = Path(shutil.move(ws.run_dir("ci"), tmp_path / name))
        if aside.exists():
            shutil.move(aside, ws.run_dir("ci"))
        return copy_

    one, two = shard("one", 1), shard("two", 2)
    edited = two / "run.shard-2-of-2.json"  # a key Rook never writes: said while merged
    edited.write_text(json.dumps({**json.loads(edited.read_text()), "bogus": 1}))
    r = rook_cli("merge", "-w", str(ws.root), str(one), str(two))
    assert r.exit_code == 0 and r.stderr.count("warning") == 1, r.stderr
    assert "'bogus', which Rook never writes" in r.stderr, r.stderr
    again = shard("again", 2)  # shard 2's job run again: its new artifact merged
    r = rook_cli("merge", "-w", str(ws.root), str(one), str(again), "--json")
    assert r.exit_code == 0 and "warning" not in r.stderr, r.stderr  # the copy replaced
    part = json.loads((ws.run_dir("ci") / "run.shard-2-of-2.json").read_text())
    assert part == json.loads((again / "run.shard-2-of-2.json").read_text())
    # the earlier copy given now, in place of the later one merged: that is named
    r = rook_cli("merge", "-w", str(ws.root), str(one), str(two), "--json")
    assert r.exit_code == 0, r.stderr
    name = "run.shard-2-of-2.json"
    assert (
        f"rook: warning: shard 2/2 has 2 different copies ({two / name}, "
        f"{ws.run_dir('ci') / name}): the merge keeps the one that ran last, "
        f"{ws.run_dir('ci') / name}" in r.stderr
    ), r.stderr


def test_merge_gates_the_whole_runs_pass_rate_as_rook_run_does(rook_workspace, rook_cli):
    """scale-out.md: --min-pass-rate works for rook merge as for rook run: the gate is
    the merged run's, each scenario's repeats counted together whatever shard ran
    them (here 3 of 4 pass, one of them in a shard of its own)."""
    ws = rook_workspace
    ws.script("ok.sh", r"""#!/bin/bash
cat >/dev/null
case "$(basename "$ROOK_STATE_DIR")" in *.1) echo '{"output": "bad"}' ;; *) echo '{"output": "fine"}' ;; esac
""")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}})
    ws.scenario({"id": "r", "goal": "g", "repeat": 4, "criteria": [{"contains": "fine"}]})
    whole = rook_cli("run", "--json", "--min-pass-rate", "0.75")
    assert whole.exit_code == 0, whole.stderr
    for i in (1, 2, 3):
        rook_cli("run", "--shard", f"{i}/3", "--run-name", "ci")
    for rate, code in (("0.75", 0), ("0.8", 1)):
        r = rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--json", "--min-pass-rate", rate)
        assert r.exit_code == code, (rate, r.stderr)
        assert r.report["summary"]["gate"]["min_pass_rate"] == float(rate)
        missed = [m["id"] for m in r.report["summary"]["gate"]["missed"]]
        assert missed == ([] if code == 0 else ["r"]), r.report["summary"]["gate"]
        shown = rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--min-pass-rate", rate)
        assert shown.exit_code == code
        said = "every scenario reached it" if code == 0 else "missed by r (75.0%)"
        assert f"gate --min-pass-rate {rate}: {said}" in shown.stdout + shown.stderr


def _two_shards_run(ws: Workspace, rook_cli: Any) -> Workspace:
    """Two scenarios run as the two shards of the run ``ci``, not merged yet."""
    ws.script("ok.sh", "#!/bin/bash\ncat >/dev/null\necho '{\"output\": \"fine\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}})
    for i in range(2):
        ws.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "fine"}]})
    for i in (1, 2):
        assert rook_cli("run", "--shard", f"{i}/2", "--run-name", "ci").exit_code == 0
    return ws


@pytest.mark.parametrize(("drop", "value"), [
    ("project", None), ("agent", None), ("id", None), ("shards", "two"), ("shards", 0.5),
    ("plan", [3]), ("profile", "p"),
])
def test_a_merge_names_a_run_json_of_another_shape_never_a_traceback(
        rook_workspace, rook_cli, drop, value):
    # A run.json without the project (or another key a report names), or with
    # shards that is not a whole number, made 'rook merge' a KeyError or
    # ValueError traceback, after it had copied the shards' records.
    ws = _two_shards_run(rook_workspace, rook_cli)
    path = ws.run_dir("ci") / "run.json"
    data = json.loads(path.read_text())
    if value is None:
        del data[drop]
    else:
        data[drop] = value
    path.write_text(json.dumps(data))
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert r.exception is None, r.exception
    # nothing merged, nothing written: bad input, exit 2 (it exited 1, "a scenario failed")
    assert r.exit_code == 2 and f"{path}: not a Rook run manifest" in r.stderr, r.stderr
    assert json.loads(path.read_text()) == data  # left as it was
    assert not (ws.run_dir("ci") / "report.json").exists()


def _damage_shard_part(ws, key, value):
    """Give shard 2's run.shard-2-of-2.json ``value`` at ``key``; its path and data."""
    path = ws.run_dir("ci") / "run.shard-2-of-2.json"
    data = json.loads(path.read_text())
    data[key] = value
    path.write_text(json.dumps(data))
    return path, data


@pytest.mark.parametrize(("key", "value", "named"), [
    ("created", "x", "'created' is a string"),
    ("invocations", 5, "'invocations' is a whole number"),
    ("invocations", [5], "'invocations' item 1 is a whole number, not an object"),
    ("capabilities", {"observed": 5}, "'capabilities': 'observed' is a whole number"),
    ("prepare", {"status": 5}, "'prepare': 'status' is a whole number"),
])
def test_a_merge_names_a_shard_part_of_another_shape_never_a_traceback(
        rook_workspace, rook_cli, key, value, named):
    # A shard's run.shard-I-of-N.json with a value of another type (edited by
    # hand, damaged) made 'rook merge' a TypeError traceback.
    ws = _two_shards_run(rook_workspace, rook_cli)
    path, data = _damage_shard_part(ws, key, value)
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert r.exception is None, r.exception
    assert r.exit_code == 2 and f"{path}: {named}, not what Rook writes there" in r.stderr, (
        r.stderr)
    assert not (ws.run_dir("ci") / "report.json").exists()


def test_a_shard_part_that_is_no_object_is_named_by_a_merge_and_a_resume(
        rook_workspace, rook_cli):
    # a shard's run.shard-I-of-N.json that is JSON but no object ([], damaged or edited)
    # was skipped: 'rook merge' left the shard's invocations, phases and prepare out of
    # the merged run without a word, and the shard's resume wrote a new part over it
    ws = _two_shards_run(rook_workspace, rook_cli)
    path = ws.run_dir("ci") / "run.shard-2-of-2.json"
    path.write_text("[]")
    for args in (("merge", "--run", "ci"), ("run", "--run", "ci", "--shard", "2/2")):
        r = rook_cli(*args, "-w", str(ws.root))
        assert r.exception is None, r.exception
        assert r.exit_code == 2, (args, r.stderr)
        assert f"{path}: it is an array, not an object, not what Rook writes there" in (
            r.stderr), r.stderr
    assert path.read_text() == "[]"
    assert not (ws.run_dir("ci") / "report.json").exists()


def test_a_merge_names_keys_rook_never_writes_in_a_shard_part(rook_workspace, rook_cli):
    # A shard's run.shard-I-of-N.json with keys Rook never writes there (edited by
    # hand: 'invocatons' for 'invocations', which leaves the shard's invocations out of
    # the merged run) was merged without a word. It is merged (the part's shape is
    # right, and a newer Rook may write a key this one does not know), with a warning
    # naming the file and each key, and the key it looks like.
    ws = _two_shards_run(rook_workspace, rook_cli)
    path = ws.run_dir("ci") / "run.shard-2-of-2.json"
    data = json.loads(path.read_text())
    data["invocatons"] = data.pop("invocations")
    data["bogus"] = 1
    path.write_text(json.dumps(data))
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert r.exit_code in (0, 1) and r.exception is None, r.stderr
    assert (
        f"rook: warning: {path}: keys 'bogus', 'invocatons' (did you mean 'invocations'?), "
        "which Rook never writes in a shard's part" in r.stderr
    ), r.stderr
    assert "the merge ignores them" in r.stderr and r.stderr.count(str(path)) == 1, r.stderr
    merged = json.loads((ws.run_dir("ci") / "run.json").read_text())
    assert "bogus" not in merged and "invocatons" not in merged
    # the part as Rook wrote it: no warning
    data["invocations"] = data.pop("invocatons")
    del data["bogus"]
    path.write_text(json.dumps(data))
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert r.exit_code in (0, 1) and "warning" not in r.stderr, r.stderr


@pytest.mark.parametrize(("key", "value", "named"), [
    ("created", "x", "'created' is a string"),
    ("invocations", [5], "'invocations' item 1 is a whole number, not an object"),
])
def test_a_shard_resume_refuses_its_part_of_another_shape(
        rook_workspace, rook_cli, key, value, named):
    # 'rook run --run ci --shard 2/2' took a run.shard-2-of-2.json of another
    # shape (edited by hand, damaged), ran and exited 0, keeping it: 'rook merge'
    # then refused it
    ws = _two_shards_run(rook_workspace, rook_cli)
    path, data = _damage_shard_part(ws, key, value)
    r = rook_cli("run", "--run", "ci", "--shard", "2/2")
    assert r.exception is None, r.exception
    assert r.exit_code == 2 and f"{path}: {named}, not what Rook writes there" in r.stderr, (
        r.stderr)
    assert json.loads(path.read_text()) == data


@pytest.mark.parametrize(("name", "content", "named"), [
    ("run.shard-2-of-2.json", "{", "unreadable record"),
    ("run.json", "{", "unreadable record"),
    ("scenarios/s1.1.json", "{", "unreadable record"),
    ("scenarios/s1.1.json", "{}", "it has no 'scenario', not what Rook writes there"),
])
def test_a_merge_of_a_damaged_file_is_bad_input_naming_it(
        rook_workspace, rook_cli, name, content, named):
    # a damaged shard part, run.json or scenario record made 'rook merge' exit
    # 1 ("a scenario failed") though nothing was merged
    ws = _two_shards_run(rook_workspace, rook_cli)
    path = ws.run_dir("ci") / name
    path.write_text(content)
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert r.exception is None, r.exception
    assert r.exit_code == 2 and f"rook: error: {path}: {named}" in r.stderr, r.stderr
    assert path.read_text() == content
    assert not (ws.run_dir("ci") / "report.json").exists()


@pytest.mark.parametrize(("edit", "named"), [
    ({"status": "bogus"}, "'status' is 'bogus'"),
    ({"key": "s0.1"}, "its 'key' is 's0.1', the record of another scenario run than its name"),
])
def test_a_merge_of_a_record_another_run_of_it_never_wrote_is_bad_input_naming_it(
        rook_workspace, rook_cli, edit, named):
    # a record of the right types but a status Rook never writes (edited by hand) was
    # merged as neither passed nor failed, and the merge passed (exit 0); one holding
    # another scenario run's record (s0.1's copied to s1.1.json) was merged as that one,
    # s0 twice and s1 not at all, exit 0
    ws = _two_shards_run(rook_workspace, rook_cli)
    path = ws.run_dir("ci") / "scenarios" / "s1.1.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **edit}))
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert r.exception is None, r.exception
    assert r.exit_code == 2, r.stderr
    assert f"rook: error: {path}: {named}, not what Rook writes there" in r.stderr, r.stderr
    assert not (ws.run_dir("ci") / "report.json").exists()
    path.unlink()  # as the message says: the scenario run runs again
    assert rook_cli("run", "--run", "ci", "--shard", "2/2").exit_code == 0
    assert rook_cli("run", "--run", "ci", "--shard", "1/2").exit_code == 0
    merged = rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--json")
    assert merged.exit_code == 0, merged.stderr
    assert merged.statuses() == {"s0": "passed", "s1": "passed"}


def test_a_merge_refused_for_a_damaged_record_writes_nothing_into_its_target(
        rook_workspace, rook_cli, tmp_path):
    # a scenario record damaged in one shard's copy, met partway through, made
    # 'rook merge --into OUT' exit 2 with the records before it already in OUT
    ws = _two_shards_run(rook_workspace, rook_cli)
    copies = []
    for i in (1, 2):
        shutil.copytree(ws.run_dir("ci"), tmp_path / f"m{i}")
        copies.append(tmp_path / f"m{i}")
    (copies[1] / "scenarios" / "s1.1.json").write_text("{")
    out = tmp_path / "out"
    r = rook_cli("merge", *map(str, copies), "--into", str(out))
    assert r.exit_code == 2 and f"{copies[1] / 'scenarios' / 's1.1.json'}: unreadable" in (
        r.stderr), r.stderr
    assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))


def test_a_run_of_one_shard_is_named_in_the_singular(rook_workspace, rook_cli):
    # "run one is split into 1 shards" (resumed without --shard, or with 1/2)
    ws = rook_workspace
    ws.script("agent.sh", "#!/bin/sh\ncat >/dev/null; echo '{\"output\": \"fine\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fine"}]})
    assert rook_cli("run", "--shard", "1/1", "--run-name", "one").exit_code == 0
    for args in (("--run", "one"), ("--run", "one", "--shard", "1/2"),
                 ("--run-name", "one", "--shard", "1/2")):
        r = rook_cli("run", *args)
        assert r.exit_code == 2 and "is split into 1 shard" in r.stderr, (args, r.stderr)
        assert "1 shards" not in r.stderr, r.stderr


def test_a_sharded_run_resumed_by_run_name_is_refused_naming_run_name(rook_workspace, rook_cli):
    # `rook run --run-name x` on a run split into shards said "--run x: this run is
    # split into 2 shards ..." though --run was never typed (sharding.resume_manifest
    # was not given the request); the other resume refusals name the flag typed
    ws = rook_workspace
    ws.script("agent.sh", "#!/bin/sh\ncat >/dev/null; echo '{\"output\": \"fine\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fine"}]})
    assert rook_cli("run", "--shard", "1/2", "--run-name", "x").exit_code in (0, 1)
    r = rook_cli("run", "--run-name", "x")
    assert r.exit_code == 2, r.stderr
    assert "rook: error: --run-name x: this run is split into 2 shards" in r.stderr, r.stderr
    assert "--run x:" not in r.stderr, r.stderr
    assert "rook merge --run x" in r.stderr, r.stderr  # the commands it gives still work
    r = rook_cli("run", "--run", "x")
    assert r.exit_code == 2 and "rook: error: --run x: this run is split into" in r.stderr


def test_merge_run_takes_latest_and_a_unique_prefix_as_every_command_does(
    rook_workspace, rook_cli, tmp_path
):
    # docs/history.md: "Wherever a command takes a run: its id, a unique prefix,
    # latest, or latest~N"; rook merge --run said "no such run" to all but the id
    ws = make_workspace(rook_workspace.root, tmp_path / "log")
    for i in (1, 2):
        r = rook_cli("run", "--shard", f"{i}/2", "--run-name", "nightly-42", "-q")
        assert r.exit_code in (0, 1), r.stderr
    for ref in ("latest", "nightly-4"):
        merged = rook_cli("merge", "-w", str(ws.root), "--run", ref, "--json")
        assert merged.exit_code == 1, (ref, merged.stderr)  # s0, s3, s6 fail
        assert merged.report["run"]["id"] == "nightly-42"
    assert (ws.run_dir("nightly-42") / "report.json").is_file()
    for ref, says in (("nope", "--run nope: no such run"), ("", "--run '': names no run"),
                      ("latest~5", "--run latest~5: there is only 1 run")):
        refused = rook_cli("merge", "-w", str(ws.root), "--run", ref)
        assert refused.exit_code == 2 and says in refused.stderr, (ref, refused.stderr)


def test_a_shard_given_a_prefix_of_a_run_says_it_starts_a_new_run_and_names_that_one(
    rook_workspace, rook_cli, tmp_path
):
    # with --shard, --run names its run exactly (the first shard makes it): a prefix of
    # an existing run started a new run without a word, beside the one meant
    ws = make_workspace(rook_workspace.root, tmp_path / "log")
    first = rook_cli("run", "--shard", "1/2", "--run-name", "nightly-42", "-q")
    assert first.exit_code in (0, 1), first.stderr
    r = rook_cli("run", "--shard", "2/2", "--run", "nightly-4", "-q")
    assert r.exit_code in (0, 1), r.stderr
    assert ("rook: warning: --run nightly-4 --shard 2/2: no run is named nightly-4, so this "
            "shard starts it (with --shard, --run names its run exactly); run nightly-42 "
            "begins so: to run this shard in it, give its whole id: rook run --run "
            "nightly-42 --shard 2/2") in r.stderr, r.stderr
    assert ws.run_dir("nightly-4").is_dir()  # made, as docs/scale-out.md says
    joined = rook_cli("run", "--shard", "1/2", "--run", "nightly-4", "-q")  # it is there now
    assert "rook: warning" not in joined.stderr, joined.stderr
    alone = rook_cli("run", "--shard", "1/1", "--run", "fresh-1", "-q")  # nothing begins so
    assert alone.exit_code in (0, 1) and "rook: warning: --run" not in alone.stderr, alone.stderr


MERGE_RAISER = """
from rook_core.hookspecs import hookimpl


@hookimpl
def rook_evidence_merged(merged):
    raise RuntimeError("cannot join my files")
"""


def test_a_merge_plugin_that_raises_is_a_warning_and_the_merge_goes_on(
    tmp_path, rook_cli, rook_distribution
):
    """rook_evidence_merged went through plain pluggy: one that raised stopped the
    other implementations (the Ruhroh manifest's join) and escaped rook merge."""
    rook_distribution("rook-mraiser", {"mraiser": "rook_mraiser"},
                      {"rook_mraiser.py": MERGE_RAISER})
    ws = make_workspace(tmp_path / "ws", tmp_path / "log")
    for i in (1, 2):
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run", "m-1")
        assert r.exit_code in (0, 1), r.stderr
    merged = rook_cli("merge", "-w", str(ws.root), "--run", "m-1", "--json")
    assert merged.exception is None and merged.exit_code in (0, 1), merged.stderr
    assert merged.report["run"]["id"] == "m-1"
    assert ("rook: warning: plugin mraiser (rook-mraiser) raised RuntimeError in "
            "rook_evidence_merged: cannot join my files (its run-level files are not joined; "
            "disable the plugin with ROOK_DISABLE_PLUGINS=mraiser)") in merged.stderr, merged.stderr


def test_merge_keeps_the_state_an_earlier_attempt_left_aside(tmp_path, rook_cli):
    """A scenario run tried again after an infrastructure error leaves the failed
    attempt's files in state/<key>.attempt-N (its record names them); merge copied
    only state/<key>, so the merged run's record named a directory it lacked."""
    log = tmp_path / "log"
    main = make_workspace(tmp_path / "main", log)
    machines = []
    for i in (1, 2):
        shutil.copytree(main.root, tmp_path / f"m{i}")
        machines.append(Workspace(tmp_path / f"m{i}"))
    for i, ws in enumerate(machines, start=1):
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run-name", "ci 9", "--json")
        assert r.exit_code in (0, 1), r.stderr
    run_id = run_id_from_name("ci 9")
    # what Engine.set_aside_state leaves on the machine that tried s1.1 again
    shard_dir = next(ws.run_dir(run_id) for ws in machines
                     if (ws.run_dir(run_id) / "scenarios" / "s1.1.json").is_file())
    aside = shard_dir / "state" / "s1.1.attempt-1"
    aside.mkdir()
    (aside / "session.txt").write_text("the lost attempt's", encoding="utf-8")
    merged = rook_cli("merge", "-w", str(main.root), *[str(ws.run_dir(run_id)) for ws in machines])
    assert merged.exit_code in (0, 1), merged.stderr
    kept = main.run_dir(run_id) / "state" / "s1.1.attempt-1" / "session.txt"
    assert kept.read_text(encoding="utf-8") == "the lost attempt's"
    assert not (main.run_dir(run_id) / "state" / "s2.1.attempt-1").exists()


def _ok_workspace(ws: Workspace, scenarios: int = 4, prepare: str = "") -> Workspace:
    ws.script("ok.sh", "#!/bin/bash\ncat >/dev/null\necho '{\"output\": \"fine\"}'\n")
    hooks = {"execute": "scripts/ok.sh"}
    if prepare:
        ws.script("prep.sh", prepare)
        hooks["prepare"] = "scripts/prep.sh"
    ws.profile({"id": "p", "hooks": hooks})
    for i in range(scenarios):
        ws.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "fine"}]})
    return ws


def test_a_merged_run_finished_whole_merges_again_without_its_missing_shards(
    rook_workspace, rook_cli
):
    """After merge --partial, rook run --run ID finishes the missing shards' scenario
    runs in one process; merging again was refused ('no record of shard(s) 3/3')
    though every planned scenario run had its final record."""
    ws = _ok_workspace(rook_workspace, 6)
    assert rook_cli("run", "--shard", "1/3", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert rook_cli("run", "--run", "ci").exit_code == 0
    again = rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--json")
    assert again.exit_code == 0, again.stderr
    assert again.report["summary"]["passed"] == 6 and not again.report["summary"].get("pending")
    assert "without shard" not in again.stderr
    manifest = json.loads((ws.run_dir("ci") / "run.json").read_text())
    assert manifest["merged"]["missing"] == []
    # the invocation that finished it is kept, beside shard 1/3's
    assert [i.get("shard") for i in manifest["invocations"]] == ["1/3", None]
    # a shard started now finds its scenario runs finished: it runs none again
    records = sorted((ws.run_dir("ci") / "scenarios").glob("*.json"))
    before = {p.name: p.read_bytes() for p in records}
    late = rook_cli("run", "--run", "ci", "--shard", "3/3", "--json")
    assert late.exit_code == 0, late.stderr
    assert {p.name: p.read_bytes() for p in records} == before


def test_a_shard_joining_a_run_finished_whole_runs_no_prepare(rook_workspace, rook_cli, tmp_path):
    """A shard started after rook run --run ID had finished the merged run ran the
    profile's prepare hook, though it had no scenario run left to run."""
    log = tmp_path / "prepared"
    ws = _ok_workspace(rook_workspace, 6, prepare=f"#!/bin/bash\necho prepared >> {log}\n")
    assert rook_cli("run", "--shard", "1/3", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert rook_cli("run", "--run", "ci").exit_code == 0
    before = log.read_text()
    late = rook_cli("run", "--run", "ci", "--shard", "3/3", "--json")
    assert late.exit_code == 0, late.stderr
    assert late.report["summary"]["passed"] == late.report["summary"]["total"] > 0
    assert log.read_text() == before
    again = rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--json")
    assert again.exit_code == 0, again.stderr
    assert again.report["summary"]["passed"] == 6


def test_a_merged_run_resumed_whole_prepares_for_itself_once(rook_workspace, rook_cli, tmp_path):
    """rook run --run ID on a merged run reused the first shard's prepare (made by
    another process, often on another machine, maybe long before): the scenario runs
    it finished got that shard's token, where shard 2/2 run late would have signed in
    for itself. It now prepares once, as a shard does; later resumes reuse it."""
    log = tmp_path / "prepared"
    ws = _ok_workspace(
        rook_workspace,
        6,
        prepare=f'#!/bin/bash\necho "$$" >> {log}\necho "tok-$$" > "$ROOK_RUN_STATE_DIR/token"\n',
    )
    ws.script(
        "ok.sh",
        '#!/bin/bash\ncat >/dev/null\necho "{\\"output\\": \\"fine $(cat "$ROOK_RUN_STATE_DIR/token")\\"}"\n',
    )
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    mine = partition([f"s{i}.1" for i in range(6)], 2)[1]  # the shard never run
    first = rook_cli("run", "--run", "ci", "--only", mine[0].split(".")[0], "--json")
    assert first.exit_code == 0, first.stderr
    pids = log.read_text().split()
    assert len(pids) == 2, pids  # shard 1/2's, then this process's own
    (entry,) = [s for s in first.report["scenarios"] if f"{s['id']}.1" == mine[0]]
    assert entry["turns"][0]["output"] == f"fine tok-{pids[1]}", entry["turns"][0]
    assert first.report["run"]["prepare"]["status"] == "ok"
    rest = rook_cli("run", "--run", "ci", "--json")  # the same run's prepare: not again
    assert rest.exit_code == 0, rest.stderr
    assert log.read_text().split() == pids
    outputs = {f"{s['id']}.1": s["turns"][0]["output"] for s in rest.report["scenarios"]}
    assert all(outputs[k] == f"fine tok-{pids[1]}" for k in mine), outputs
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    assert rook_cli("run", "--run", "ci").exit_code == 0
    assert log.read_text().split() == pids


def test_a_merged_run_split_by_phase_is_told_the_phases_that_finish_it(rook_workspace, rook_cli):
    """The hint after merging said rook run --run ID --shard 1/2 without --phases."""
    ws = _ok_workspace(rook_workspace)
    for i in (1, 2):
        r = rook_cli(
            "run", "--shard", f"{i}/2", "--run-name", "ci", "--phases", "prepare,open,execute,close"
        )
        assert r.exit_code == 0, r.stderr
    merged = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert merged.exit_code == 1
    assert f"rook run --run ci --shard 1/2 --phases collect,judge -w {ws.root}, then merge again" in (
        merged.stderr
    ), merged.stderr


def test_a_shard_whose_prepare_failed_names_the_command_that_finishes_it(
    rook_workspace, rook_cli
):
    """The stored reason said rook run --run ID, which a run not merged yet refuses."""
    _ok_workspace(rook_workspace, prepare="#!/bin/bash\necho broken >&2\nexit 3\n")
    r = rook_cli("run", "--shard", "1/2", "--run-name", "ci", "--json")
    reasons = [s["reason"] for s in r.report["scenarios"]]
    again = f"rook run --run ci --shard 1/2 -w {rook_workspace.root} prepares again"
    assert reasons and all(again in x for x in reasons), reasons


def test_a_shard_run_after_its_run_was_merged_says_to_merge_again(rook_workspace, rook_cli):
    """A shard run after merge --partial said nothing: rook runs, rook report and
    rook runs show went on showing the old merge (its scenario runs pending)."""
    ws = _ok_workspace(rook_workspace)
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    late = rook_cli("run", "--run", "ci", "--shard", "2/2")
    assert late.exit_code == 0, late.stderr
    assert "rook merge --run ci" in late.stderr, late.stderr
    first = rook_cli("run", "--shard", "1/2", "--run-name", "fresh")
    assert first.exit_code == 0 and "rook merge" not in first.stderr, first.stderr
    again = rook_cli("run", "--run", "ci", "--shard", "2/2")  # nothing new: the hint stands
    assert again.exit_code == 0 and "rook merge --run ci" in again.stderr, again.stderr
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    done = rook_cli("run", "--run", "ci", "--shard", "2/2")  # merged since: nothing to join
    assert done.exit_code == 0 and "rook merge" not in done.stderr, done.stderr


def test_a_merged_run_a_shard_recorded_into_since_says_so_where_it_is_shown(
    rook_workspace, rook_cli
):
    """rook report and rook runs show went on showing the earlier merge (scenario runs
    pending) with no word that a shard had recorded them since."""
    ws = _ok_workspace(rook_workspace)
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert rook_cli("run", "--run", "ci", "--shard", "2/2").exit_code == 0
    hint = "shard 2/2 recorded scenario runs after run ci was merged"
    listed = rook_cli("runs")
    assert "merge again" in listed.stdout, listed.stdout
    (row,) = [s for s in json.loads(rook_cli("runs", "--json").stdout)["runs"] if s["id"] == "ci"]
    assert row["unjoined_shards"] == ["2/2"]
    for args in (("report", "ci"), ("runs", "show", "ci")):
        r = rook_cli(*args)
        assert "PENDING" in r.stdout and hint in r.stderr, (args, r.stderr)
        assert "rook merge --run ci" in r.stderr
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    for args in (("report", "ci"), ("runs", "show", "ci")):
        r = rook_cli(*args)
        assert r.exit_code == 0 and "PENDING" not in r.stdout and hint not in r.stderr
    assert "merge again" not in rook_cli("runs").stdout
    # a run copied (an artifact unpacked) has new file times: its records' own times decide
    later = time.time() + 5
    for record in (ws.run_dir("ci") / "scenarios").glob("*.json"):
        os.utime(record, (later, later))
    assert "recorded scenario runs after" not in rook_cli("report", "ci").stderr
    # rook run --run ID on the merged run writes its report anew: nothing left out
    assert rook_cli("run", "--run", "ci").exit_code == 0
    assert "recorded scenario runs after" not in rook_cli("report", "ci").stderr


def test_a_shard_killed_after_recording_into_a_merged_run_is_listed_to_merge_again(
    rook_workspace, rook_cli, tmp_path
):
    """A shard run after merge --partial and killed midway, after it had recorded a
    scenario run, left rook runs listing the old merge (incomplete), never
    'merge again': only a shard that ended noted it."""
    slow = tmp_path / "slow"
    ws = _ok_workspace(rook_workspace, 6)
    ws.script(  # once slow exists: the first scenario run answers, the others hang
        "ok.sh",
        f"#!/bin/bash\ncat >/dev/null\nif [ -e {slow} ]; then\n"
        f"  if [ -e {slow}.one ]; then sleep 60; fi; touch {slow}.one\nfi\n"
        "echo '{\"output\": \"fine\"}'\n",
    )
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert "merge again" not in rook_cli("runs").stdout
    slow.touch()
    records = ws.run_dir("ci") / "scenarios"
    before = len(list(records.glob("*.json")))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "-q", "-j", "1",
         "--run", "ci", "--shard", "2/2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        for _ in range(300):
            if len(list(records.glob("*.json"))) > before:
                break
            time.sleep(0.1)
        assert len(list(records.glob("*.json"))) == before + 1
        for _ in range(100):  # noted just after the record is written: not killed between
            if (history.read_summary(ws.run_dir("ci")) or {}).get("unjoined_shards"):
                break
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    listed = rook_cli("runs")
    assert "merge again" in listed.stdout, listed.stdout
    (row,) = [s for s in json.loads(rook_cli("runs", "--json").stdout)["runs"] if s["id"] == "ci"]
    assert row["unjoined_shards"] == ["2/2"]
    slow.unlink()
    assert rook_cli("run", "--run", "ci", "--shard", "2/2").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    assert "merge again" not in rook_cli("runs").stdout


def test_a_merge_keeps_what_a_shard_killed_midway_observed(rook_workspace, rook_cli, tmp_path):
    """A shard's observed capabilities reached its part only when it ended: a
    shard killed (SIGKILL, a CI job's time limit) after a scenario run that made
    a tool call was recorded, merged with --partial, gave a merged run that had
    never observed calls, though the record it merged shows them."""
    hang = tmp_path / "hang"
    rook_workspace.script("agent.sh", f"""
        #!/bin/bash
        goal=$(cat)
        if [ "$goal" = tool ]; then
          echo '{{"output": "ok", "calls": [{{"name": "lookup", "arguments": {{}}}}]}}'
        else touch {hang}; sleep 60; fi
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "capabilities": {"calls": True}, "concurrency": 1})
    rook_workspace.scenario({"id": "a", "goal": "tool", "criteria": [{"called": "lookup"}]})
    rook_workspace.scenario({"id": "b", "goal": "slow", "criteria": [{"contains": "ok"}]})
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root), "-q",
         "--run-name", "ci", "--shard", "1/1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        for _ in range(300):
            if hang.exists():
                break
            time.sleep(0.1)
        assert hang.exists()
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert rook_workspace.record("ci", "a.1")["observed"] == {"calls": True}
    merged = rook_cli("merge", "-w", str(rook_workspace.root), "--run", "ci", "--partial", "--json")
    assert merged.exit_code == 1, merged.stderr  # b is still pending
    assert merged.report["run"]["capabilities"]["observed"] == {"calls": True}


def test_what_a_merged_run_observed_is_the_profiles_too(tmp_path, rook_cli):
    """capabilities.md: what Rook observed is recorded per run and per profile
    (profiles/<id>.observed.json, merged over runs). Shards run on other machines
    merged here showed calls in the merged run, yet this workspace's profile never
    had them: a scenario needing calls stayed not_runnable, 'never showed it'."""
    main = Workspace(tmp_path / "main")
    main.script("h.sh", "#!/bin/bash\ncat >/dev/null\n"
                "echo '{\"output\": \"fine\", \"calls\": [{\"name\": \"lookup\"}]}'\n")
    main.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    for i in range(3):
        main.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "fine"}]})
    dirs = []
    for i in (1, 2):
        machine = Workspace(Path(shutil.copytree(main.root, tmp_path / f"m{i}")))
        r = rook_cli("run", "-w", str(machine.root), "--shard", f"{i}/2", "--run-name", "ci")
        assert r.exit_code == 0, r.stderr
        dirs.append(str(machine.run_dir("ci")))
    merged = rook_cli("merge", "-w", str(main.root), *dirs, "--json")
    assert merged.report["run"]["capabilities"]["observed"] == {"calls": True}
    observed = main.agent_dir / "profiles" / "p.observed.json"
    assert json.loads(observed.read_text()) == {"calls": True}
    main.scenario({"id": "t", "goal": "g", "criteria": [{"called": "lookup"}]})
    assert rook_cli("run", "-w", str(main.root), "--only", "t", "--json").statuses() == {"t": "passed"}


STALLING_MERGE = """
    import os, time
    from rook_core.hookspecs import hookimpl


    @hookimpl
    def rook_evidence_merged(merged):
        open(os.environ["STALLED"], "w").close()
        time.sleep(60)
"""


def test_a_merge_killed_before_its_report_leaves_the_late_shard_warned_of(
    rook_workspace, rook_cli, rook_distribution, tmp_path
):
    """A merge killed after writing the merged run.json, before its report.json (a CI
    timeout): rook report showed the earlier merge's report (scenario runs pending)
    with no word that a shard had recorded them since, as the new run.json's merge
    time was taken for the report's."""
    ws = _ok_workspace(rook_workspace)
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert rook_cli("run", "--run", "ci", "--shard", "2/2").exit_code == 0
    site = rook_distribution("rook-stall", {"stall": "rook_stall"}, {"rook_stall.py": STALLING_MERGE})
    stalled = tmp_path / "stalled"
    env = {**os.environ, "PYTHONPATH": str(site), "STALLED": str(stalled)}
    # merged again later than a file system's clock may lag (merging.SKEW)
    time.sleep(max(0.0, (ws.run_dir("ci") / "report.json").stat().st_mtime + 6 - time.time()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "merge", "-w", str(ws.root), "--run", "ci"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        for _ in range(300):
            if stalled.exists():
                break
            time.sleep(0.1)
        assert stalled.exists()
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert json.loads((ws.run_dir("ci") / "run.json").read_text())["merged"]["missing"] == []
    hint = "shard 2/2 recorded scenario runs after run ci was merged"
    r = rook_cli("report", "ci")
    assert "PENDING" in r.stdout and hint in r.stderr, r.stderr
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    r = rook_cli("report", "ci")
    assert "PENDING" not in r.stdout and hint not in r.stderr, r.stderr


def test_a_merged_run_that_decided_nothing_warns(rook_workspace, rook_cli):
    """The merge is what a sharded CI job gates on: every scenario not_runnable
    exited 0 there with no word that nothing was verified (rook run warns)."""
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "ok"}\'\nexit 0\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}, "capabilities": {"calls": False}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"not_called": "cancel_order"}]})
    ws.scenario({"id": "t", "goal": "g", "criteria": [{"not_called": "refund"}]})
    for i in (1, 2):
        r = rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run-name", "m", "-q")
        assert r.exit_code == 0, r.stderr
    merged = rook_cli("merge", "-w", str(ws.root), "--run", "m")
    assert merged.exit_code == 0, merged.stderr
    assert "rook: warning: no scenario run was decided (2 not_runnable)" in merged.stderr


def test_late_shards_recording_at_once_each_note_they_must_be_merged_again(
    rook_workspace, rook_cli, tmp_path
):
    """Shards started together after merge --partial, whose first records land at the
    same moment, each read the summary's 'merge again' list and wrote it back with only
    their own label added: some shards' notes were lost (rook runs --json listed 4 of 11)
    until each shard's end, never for a shard killed before it."""
    n, gate = 12, tmp_path / "gate"
    gate.mkdir()
    ws = _ok_workspace(rook_workspace, 3 * n)
    ws.script(  # once open: each shard's first scenario run waits for every shard's, then
        "ok.sh",  # all answer at once; the shard's next ones hang
        f"#!/bin/bash\ncat >/dev/null\nif [ -e {gate}/open ]; then\n"
        f"  if [ -e {gate}/$PPID ]; then sleep 60; fi; touch {gate}/$PPID\n"
        f"  for _ in $(seq 3000); do [ $(ls {gate} | wc -l) -ge {n} ] && break; sleep 0.01; done\n"
        "fi\n"
        "echo '{\"output\": \"fine\"}'\n",
    )
    assert rook_cli("run", "--shard", f"1/{n}", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    (gate / "open").touch()
    records = ws.run_dir("ci") / "scenarios"
    before = len(list(records.glob("*.json")))
    late = [f"{i}/{n}" for i in range(2, n + 1)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "-q", "-j", "1",
             "--run", "ci", "--shard", shard],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        for shard in late
    ]
    try:
        noted: Any = None
        for _ in range(600):
            if len(list(records.glob("*.json"))) == before + len(late):
                summary = history.read_summary(ws.run_dir("ci")) or {}
                noted = summary.get("unjoined_shards")
                if noted == late:
                    break
            time.sleep(0.05)
        assert noted == late
    finally:  # SIGTERM: each shard ends its hooks too (a SIGKILL would leave them running)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
    (row,) = [s for s in json.loads(rook_cli("runs", "--json").stdout)["runs"] if s["id"] == "ci"]
    assert row["unjoined_shards"] == late


def test_a_merge_of_shards_run_by_different_rook_versions_says_so(rook_workspace, rook_cli):
    """Shards run by different versions of Rook were merged without a word: no
    record said which Rook ran a shard."""
    from rook_core import __version__

    ws = _two_shards_run(rook_workspace, rook_cli)
    part = ws.run_dir("ci") / "run.shard-2-of-2.json"
    data = json.loads(part.read_text())
    assert [i["rook_version"] for i in data["invocations"]] == [__version__]
    data["invocations"][0]["rook_version"] = "0.0.1"  # shard 2 ran on an older install
    part.write_text(json.dumps(data))
    merged = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert merged.exit_code == 0, merged.stderr
    assert (
        f"rook: warning: the shards were run by different versions of Rook "
        f"({__version__}: shard 1/2; 0.0.1: shard 2/2)" in merged.stderr
    ), merged.stderr
    shown = rook_cli("runs", "show", "ci")
    assert f"made with Rook {__version__}, 0.0.1\n" in shown.stdout, shown.stdout
    again = rook_cli("merge", "-w", str(ws.root), "--run", "ci")  # the same shards: said again
    assert "different versions of Rook" in again.stderr, again.stderr


def test_a_sharded_run_not_merged_yet_says_so_where_it_is_shown(rook_workspace, rook_cli):
    """rook runs show and rook report of a run split with --shard and never merged
    showed what its shards had recorded as if it were the whole run, with no word
    that it needs rook merge (rook runs listed it as 'not merged')."""
    ws = _ok_workspace(rook_workspace)
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    hint = (
        "rook: warning: run ci was split with --shard and is not merged yet "
        "(shard 2/2 recorded nothing yet): this shows what its shards recorded so far; "
        f"join them with: rook merge --run ci -w {ws.root}\n"
    )
    for args in (("report", "ci"), ("runs", "show", "ci"), ("report", "ci", "--json")):
        r = rook_cli(*args)
        assert r.exit_code == 0 and hint in r.stderr, (args, r.stderr)
    assert rook_cli("run", "--shard", "2/2", "--run-name", "ci").exit_code == 0
    r = rook_cli("runs", "show", "ci")  # every shard ran: it still needs merging
    assert "PENDING" not in r.stdout
    assert "rook: warning: run ci was split with --shard and is not merged yet: " in r.stderr, r.stderr
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    for args in (("report", "ci"), ("runs", "show", "ci")):
        assert "not merged" not in rook_cli(*args).stderr


def test_a_late_shard_whose_records_were_copied_in_is_listed_to_merge_again(
    rook_workspace, rook_cli, tmp_path
):
    """A shard run on another machine after merge --partial, its records then copied
    into the merged run (an artifact unpacked): rook runs listed the old merge as
    'incomplete', never 'merge again', though rook runs show warned of it."""
    ws = _ok_workspace(rook_workspace)
    shutil.copytree(ws.root, tmp_path / "other")
    other = Workspace(tmp_path / "other")
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert "merge again" not in rook_cli("runs").stdout
    assert rook_cli("run", "-w", str(other.root), "--shard", "2/2", "--run-name", "ci").exit_code == 0
    theirs = other.run_dir("ci")
    for record in (theirs / "scenarios").glob("*.json"):
        shutil.copy(record, ws.run_dir("ci") / "scenarios" / record.name)
    for part in theirs.glob("*.shard-2-of-2.json"):
        shutil.copy(part, ws.run_dir("ci") / part.name)
    listed = rook_cli("runs")
    assert "merge again" in listed.stdout, listed.stdout
    (row,) = [s for s in json.loads(rook_cli("runs", "--json").stdout)["runs"] if s["id"] == "ci"]
    assert row["unjoined_shards"] == ["2/2"]
    assert "scenarios_seen" not in row, row  # the listing's bookkeeping, not the run's
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    assert "merge again" not in rook_cli("runs").stdout


def test_diff_of_a_run_not_merged_or_merged_before_a_shard_says_so(rook_workspace, rook_cli):
    """rook diff compared a run split with --shard and not merged, or merged before a
    shard recorded more, as if it were the whole run: its scenario runs 'not
    finished' (a regression, exit 1) with no word that rook merge would join them."""
    ws = _ok_workspace(rook_workspace)
    assert rook_cli("run", "--run-name", "base").exit_code == 0
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    d = rook_cli("diff", "base", "ci")
    assert d.exit_code == 1 and "not finished" in d.stdout
    assert "rook: warning: run ci was split with --shard and is not merged yet" in d.stderr, d.stderr
    assert f"rook merge --run ci -w {ws.root}" in d.stderr
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert rook_cli("run", "--run", "ci", "--shard", "2/2").exit_code == 0
    d = rook_cli("diff", "ci", "base", "--json")
    assert "shard 2/2 recorded scenario runs after run ci was merged" in d.stderr, d.stderr
    assert json.loads(d.stdout)["a"]["id"] == "ci"
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    d = rook_cli("diff", "base", "ci")
    assert d.exit_code == 0 and "warning" not in d.stderr, d.stderr


def test_a_merged_run_with_shards_still_to_run_names_the_command_where_it_is_shown(
    rook_workspace, rook_cli
):
    """rook merge --partial said which shards left scenario runs pending and how to
    finish them; rook runs show and rook report of the merged run showed them
    PENDING with no word of it (an unsharded run's say 'finish it with: ...')."""
    ws = _ok_workspace(rook_workspace, 6)
    assert rook_cli("run", "--shard", "1/3", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    hint = (
        "shards 2/3, 3/3 did not finish; finish each with: "
        f"rook run --run ci --shard 2/3 -w {ws.root}, then merge again\n"
    )
    for args in (("report", "ci"), ("runs", "show", "ci")):
        r = rook_cli(*args)
        assert r.exit_code == 0 and "PENDING" in r.stdout, r.stdout
        assert hint in r.stderr, (args, r.stderr)
    assert rook_cli("run", "--run", "ci", "--shard", "2/3").exit_code == 0
    r = rook_cli("runs", "show", "ci")  # shard 2/3 ran since: merge again says it
    assert "recorded scenario runs after run ci was merged" in r.stderr, r.stderr
    assert "did not finish" not in r.stderr, r.stderr
    assert rook_cli("run", "--run", "ci", "--shard", "3/3").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    assert "did not finish" not in rook_cli("runs", "show", "ci").stderr


def test_the_merge_again_warning_names_the_flags_that_found_the_run(rook_workspace, rook_cli):
    """rook runs show, rook report and rook diff warned of a shard recorded since the
    merge with 'rook merge --run ci' alone, without the -w they were given, so the
    command, run where it was printed, found no workspace."""
    ws = _ok_workspace(rook_workspace)
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    assert rook_cli("run", "--run", "ci", "--shard", "2/2").exit_code == 0
    hint = f"this report leaves them out until: rook merge --run ci -w {ws.root}\n"
    for args in (("report", "ci"), ("runs", "show", "ci"), ("diff", "ci", "ci")):
        r = rook_cli(*args)
        assert hint in r.stderr, (args, r.stderr)


def _merged_without_shard_2_run_elsewhere(rook_workspace, rook_cli, tmp_path):
    """Run ci: shard 1/2 run here, shard 2/2 in a copy of the workspace (another
    machine), then merged here with --partial: the workspace and the copy."""
    ws = _ok_workspace(rook_workspace)
    shutil.copytree(ws.root, tmp_path / "other")
    other = Workspace(tmp_path / "other")
    assert rook_cli("run", "--shard", "1/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("run", "-w", str(other.root), "--shard", "2/2", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    return ws, other


def test_a_shard_run_before_a_partial_merge_but_copied_in_after_is_seen(
    rook_workspace, rook_cli, tmp_path
):
    """A shard that ran before merge --partial, its records copied in only after (an
    artifact that came late): its records' own times are before the merge, so
    nothing said they were left out; rook runs show even said to run the shard."""
    ws, other = _merged_without_shard_2_run_elsewhere(rook_workspace, rook_cli, tmp_path)
    theirs = other.run_dir("ci")
    for record in (theirs / "scenarios").glob("*.json"):
        shutil.copy(record, ws.run_dir("ci") / "scenarios" / record.name)
    shown = rook_cli("runs", "show", "ci")
    assert "shard 2/2 recorded scenario runs after run ci was merged" in shown.stderr, shown.stderr
    assert "did not finish" not in shown.stderr, shown.stderr
    assert "merge again" in rook_cli("runs").stdout
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    shown = rook_cli("runs", "show", "ci")
    assert "warning" not in shown.stderr and "PENDING" not in shown.stdout, shown.stderr


def test_the_not_merged_warning_names_only_shards_with_something_to_run(rook_workspace, rook_cli):
    """Split more ways than it has scenario runs, a run not merged yet was said to
    miss the records of shards that had nothing to run (and that rook merge does
    not wait for)."""
    _ok_workspace(rook_workspace)  # 4 scenario runs over 8 shards: 5/8 to 8/8 have none
    assert rook_cli("run", "--shard", "1/8", "--run-name", "ci").exit_code == 0
    r = rook_cli("runs", "show", "ci")
    assert "(shards 2/8, 3/8, 4/8 recorded nothing yet)" in r.stderr, r.stderr
    for i in (2, 3, 4):
        assert rook_cli("run", "--shard", f"{i}/8", "--run-name", "ci").exit_code == 0
    r = rook_cli("runs", "show", "ci")
    assert "rook: warning: run ci was split with --shard and is not merged yet: " in r.stderr, r.stderr


def test_a_merge_into_a_relative_folder_records_where_it_is(rook_workspace, rook_cli, tmp_path):
    """rook merge DIR ... --into out/merged wrote the relative path as the run's dir in
    run.json, report.json (run.dir) and JUnit's run_dir, which tools reading them from
    anywhere else took for another folder; every other run records its absolute folder."""
    ws = _two_shards_run(rook_workspace, rook_cli)
    proc = subprocess.run(
        [sys.executable, "-m", "rook_core", "merge", str(ws.run_dir("ci")), "--into", "out/merged",
         "--report", "junit:out/rook.xml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    where = str(tmp_path / "out" / "merged")
    assert json.loads((tmp_path / "out/merged/run.json").read_text())["dir"] == where
    assert read_report(tmp_path / "out/merged/report.json")["run"]["dir"] == where
    assert f'"run_dir" value="{where}"' in (tmp_path / "out/rook.xml").read_text()
    assert f"run ci: {where}\n" in proc.stdout + proc.stderr


def test_a_merge_into_a_quoted_tilde_folder_goes_home(rook_workspace, rook_cli, tmp_path):
    """rook merge --into '~/merged' (quoted, as a CI file passes it) made a folder
    named '~' in the current directory, where rook run -w '~/ws' uses the home one."""
    ws = _two_shards_run(rook_workspace, rook_cli)
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "rook_core", "merge", str(ws.run_dir("ci")), "--into", "~/merged"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr
    assert (home / "merged" / "run.json").is_file() and not (tmp_path / "~").exists()


def test_resuming_a_run_not_merged_names_the_merge_with_the_flags_given(rook_workspace, rook_cli):
    """rook run --run ID -w WS on a run not merged yet was refused naming 'rook merge
    --run ID' alone, which, run where it was printed, found no workspace."""
    ws = _two_shards_run(rook_workspace, rook_cli)
    r = rook_cli("run", "--run", "ci")
    assert r.exit_code == 2, r.stderr
    assert f"rook merge --run ci -w {ws.root} (then rook run --run ci -w {ws.root} finishes" in (
        r.stdout + r.stderr
    ), r.stdout + r.stderr


def test_a_late_copy_that_keeps_its_file_times_is_seen_too(rook_workspace, rook_cli, tmp_path):
    """The records of a shard missing from merge --partial, copied in after it with
    their file times kept (cp -p, tar, unzip: older than the merge's report), went
    unseen: only records whose file changed after the report were looked at."""
    ws, other = _merged_without_shard_2_run_elsewhere(rook_workspace, rook_cli, tmp_path)
    for record in (other.run_dir("ci") / "scenarios").glob("*.json"):
        shutil.copy2(record, ws.run_dir("ci") / "scenarios" / record.name)  # times kept
    shown = rook_cli("runs", "show", "ci")
    assert "shard 2/2 recorded scenario runs after run ci was merged" in shown.stderr, shown.stderr
    assert "merge again" in rook_cli("runs").stdout
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
    assert "warning" not in rook_cli("runs", "show", "ci").stderr


def test_a_shard_run_where_the_clock_is_ahead_is_not_taken_for_a_late_one(
    rook_workspace, rook_cli, tmp_path
):
    """A shard run on a machine whose clock was ahead of the merging one's (its records'
    times, and their files' as a tar copy keeps them, later than the merge): after
    'rook merge' had merged every record of it, 'rook runs show' and 'rook report' warned
    that it 'recorded scenario runs after run ci was merged', and merging again never
    ended that. A shard's records are compared with the newest the merge took of that
    shard, on its own clock; one it records later is still seen."""
    ws = _two_shards_run(rook_workspace, rook_cli)
    ahead = 7200.0
    for path in (ws.run_dir("ci") / "scenarios").glob("*.json"):
        record = json.loads(path.read_text())
        if record["key"] in sharding.shard_keys(["s0.1", "s1.1"], sharding.Shard(1, 2)):
            for k in ("started", "ended"):
                record[k] += ahead
            path.write_text(json.dumps(record))
            os.utime(path, (time.time() + ahead, time.time() + ahead))
    for _ in "12":  # merging again changed nothing
        assert rook_cli("merge", "-w", str(ws.root), "--run", "ci").exit_code == 0
        for args in (("runs", "show", "ci"), ("report", "ci")):
            shown = rook_cli(*args)
            assert shown.exit_code == 0 and "warning" not in shown.stderr, (args, shown.stderr)
    # shard 1/2 run again there (its clock still ahead) after the merge: seen
    (key,) = sharding.shard_keys(["s0.1", "s1.1"], sharding.Shard(1, 2))
    path = ws.run_dir("ci") / "scenarios" / f"{key}.json"
    record = json.loads(path.read_text())
    record["started"] += 60
    record["ended"] += 60
    path.write_text(json.dumps(record))
    os.utime(path, (time.time() + ahead + 60, time.time() + ahead + 60))
    shown = rook_cli("runs", "show", "ci")
    assert "shard 1/2 recorded scenario runs after run ci was merged" in shown.stderr, (
        shown.stderr)


def test_a_merged_run_json_with_a_plan_of_another_shape_never_breaks_showing_it(
    rook_workspace, rook_cli
):
    """A merged run's run.json whose plan holds a number (edited by hand) made rook
    runs show, rook report and rook diff fail with a traceback (AttributeError) while
    looking for shards recorded since the merge, though its report.json was sound."""
    ws = _ok_workspace(rook_workspace, 6)
    assert rook_cli("run", "--shard", "1/3", "--run-name", "ci").exit_code == 0
    assert rook_cli("merge", "-w", str(ws.root), "--run", "ci", "--partial").exit_code == 1
    path = ws.run_dir("ci") / "run.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "plan": [3, *manifest["plan"]]}))
    for args in (("runs", "show", "ci"), ("report", "ci"), ("diff", "ci", "ci"), ("runs",)):
        r = rook_cli(*args)
        assert r.exception is None, (args, r.exception, r.stderr)
        assert r.exit_code == (1 if args[0] == "diff" else 0), (args, r.stderr)  # not finished
        assert "PENDING" in r.stdout or args[0] in ("diff", "runs"), r.stdout


def test_merge_names_a_directory_that_is_not_a_run_and_refuses_run_with_dirs(tmp_path, rook_cli):
    ws = make_workspace(tmp_path / "ws", tmp_path / "log")
    for i in (1, 2):
        assert rook_cli("run", "-w", str(ws.root), "--shard", f"{i}/2", "--run", "c").exit_code in (
            0,
            1,
        )
    junk = tmp_path / "junk"
    junk.mkdir()
    # --run ID with directories: which one merge used was never said; refused
    r = rook_cli("merge", "-w", str(ws.root), "--run", "c", str(junk))
    assert r.exit_code == 2, r.stderr
    assert "--run c" in r.stderr and str(junk) in r.stderr and "not both" in r.stderr
    assert "merged" not in json.loads((ws.run_dir("c") / "run.json").read_text())
    # a directory with no run.json among the shards' copies was skipped silently
    shutil.copytree(ws.run_dir("c"), tmp_path / "copy")
    out = tmp_path / "out"
    r = rook_cli("merge", "-w", str(ws.root), str(tmp_path / "copy"), str(junk), "--into", str(out))
    assert r.exit_code == 2, r.stderr
    assert f"{junk}: not a Rook run directory (no run.json)" in r.stderr
    assert not out.exists()


def test_a_missing_shard_is_named_with_the_command_that_runs_it(tmp_path, rook_cli):
    """The refusal said 'run them (rook run --run ci --shard I/N)': a placeholder, and
    without the -w the merge was given."""
    ws = make_workspace(tmp_path / "ws", tmp_path / "log")
    r = rook_cli("run", "-w", str(ws.root), "--shard", "1/3", "--run", "ci")
    assert r.exit_code in (0, 1), r.stderr
    r = rook_cli("merge", "-w", str(ws.root), "--run", "ci")
    assert r.exit_code == 2, r.stderr
    assert "I/N" not in r.stderr, r.stderr
    assert "no record of shards 2/3, 3/3" in r.stderr, r.stderr
    assert f"rook run --run ci --shard 2/3 -w {ws.root}" in r.stderr, r.stderr
    assert "(and likewise shard 3/3)" in r.stderr, r.stderr


def test_a_scheduler_address_dask_cannot_reach_is_refused_before_prepare_runs(
    rook_workspace, rook_cli, tmp_path
):
    """A ``ucx://`` address (no UCX transport installed, or nothing there) was left to
    Dask unchecked: prepare ran, a run was made, then ``executor 'dask' raised
    TypeError: Can't instantiate abstract class UCXConnector`` with RuntimeWarnings
    on the terminal, and a pending run was left behind."""
    pytest.importorskip("distributed")  # the dask extra
    make_workspace(rook_workspace.root, tmp_path / "log")
    r = rook_cli("run", "--executor", "dask", "--scheduler", "ucx://127.0.0.1:1")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "--scheduler ucx://127.0.0.1:1: Dask cannot reach a scheduler there (" in r.stderr
    assert "Traceback" not in r.stderr and "RuntimeWarning" not in r.stderr, r.stderr
    assert not (tmp_path / "log").exists() and not any(rook_workspace.runs_dir.iterdir())


def test_merge_run_id_without_a_workspace_is_not_told_to_use_into(tmp_path, rook_cli):
    """``rook merge --run ID`` where no workspace is: the message added '(or name the
    merged run's directory with --into DIR)', which --run refuses ('--into: where the
    RUN_DIRS given are merged'); the hint is for the shards' directories only."""
    empty = tmp_path / "empty"
    empty.mkdir()
    r = rook_cli("merge", "-w", str(empty), "--run", "ci-1")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"rook: error: {empty}: no Rook workspace here"), r.stderr
    assert "--into" not in r.stderr, r.stderr


def test_a_pipe_or_device_a_hook_left_in_its_state_directory_never_stops_a_merge(
    tmp_path, rook_cli
):
    # a named pipe in ROOK_STATE_DIR made rook merge DIR ... fail, exit 1: "cannot copy
    # .../state/s2.1 to ...: [... is a named pipe]", so no shard's results could be joined
    main = Workspace(tmp_path / "main")
    main.script("h.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        mkfifo "$ROOK_STATE_DIR/pipe" && ln -s /dev/zero "$ROOK_STATE_DIR/zero"
        echo keep > "$ROOK_STATE_DIR/notes"
        echo '{"output": "ok"}'
    """)
    main.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    for s in ("s1", "s2", "s3", "s4"):
        main.scenario({"id": s, "goal": "g", "criteria": [{"contains": "ok"}]})
    machines = []
    for i in (1, 2):
        shutil.copytree(main.root, tmp_path / f"m{i}")
        machines.append(Workspace(tmp_path / f"m{i}"))
        r = rook_cli("run", "-w", str(machines[-1].root), "--shard", f"{i}/2", "--run-name", "p1")
        assert r.exit_code == 0, r.stderr
    run_id = run_id_from_name("p1")
    merged = rook_cli("merge", "-w", str(main.root), *[str(ws.run_dir(run_id)) for ws in machines],
                      "--json")  # fmt: skip
    assert merged.exit_code == 0, merged.stderr
    assert merged.report["summary"]["passed"] == 4
    state = main.run_dir(run_id) / "state"
    for s in ("s1", "s2", "s3", "s4"):
        assert (state / f"{s}.1" / "notes").read_text() == "keep\n"
        assert (state / f"{s}.1" / "zero").is_symlink()  # a link is copied as a link
        assert not (state / f"{s}.1" / "pipe").exists()  # a pipe holds nothing to copy
