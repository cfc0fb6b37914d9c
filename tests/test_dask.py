"""The ``dask`` executor against a LocalCluster of process workers, with real hooks."""

from __future__ import annotations

import collections
import contextlib
import copy
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip(
    "distributed", reason="the dask extra is not installed: pip install 'rook-harness[dask]'"
)

from test_scale_acceptance import ECHO  # noqa: E402

from rook_core.hookspecs import hookimpl  # noqa: E402
from rook_core.testing import Workspace  # noqa: E402

SECRET = "s3cr3t-do-not-store"

AGENT = r"""
#!/bin/bash
case "$1" in
  prepare) echo prepared > "$ROOK_RUN_STATE_DIR/token" ;;
  open) echo opened > "$ROOK_STATE_DIR/opened"; printf '{"conversation": "c-%s"}\n' "$ROOK_SCENARIO_ID" ;;
  execute)
    goal=$(cat)
    case "$goal" in
      die-*) mark="$MARKS/$ROOK_SCENARIO_ID"; n=$(cat "$mark" 2>/dev/null || echo 0)
             echo $((n + 1)) > "$mark"   # die-N: the first N attempts kill their worker
             if [ "$n" -lt "${goal#die-}" ]; then kill -9 "$PPID"; sleep 2; exit 0; fi ;;
      sleep) echo $$ >> "$MARKS/pids"; sleep 60 ;;
      nap) echo $$ >> "$MARKS/naps"; sleep 5 ;;
    esac
    printf '{"output": "%s|%s|%s|%s", "ppid": %s, "ws": "%s"}\n' "$goal" \
      "$(cat "$ROOK_STATE_DIR/opened")" "$(cat "$ROOK_RUN_STATE_DIR/token")" "$API_TOKEN" \
      "$PPID" "$ROOK_WORKSPACE" ;;
  collect) printf '{"usage": {"input": 1, "output": 2}, "ppid": %s}\n' "$PPID" ;;
esac
exit 0
"""


@pytest.fixture(scope="module")
def scheduler() -> Any:
    """Two process workers, two threads each; a scenario is retried once, as Rook's own
    LocalCluster does (``distributed.scheduler.allowed-failures: 1``)."""
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def agent(ws: Workspace, marks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marks.mkdir(exist_ok=True)
    monkeypatch.setenv("API_TOKEN", SECRET)  # set after the workers started: shipped to them
    ws.script("agent.sh", AGENT)
    ws.profile(
        {
            "id": "p",
            "hooks": {
                p: "scripts/agent.sh" for p in ("prepare", "open", "execute", "close", "collect")
            },
            "env": [{"variable": "API_TOKEN", "purpose": "the agent's API token"}],
            "hook_env": {"MARKS": str(marks)},
            "capabilities": {"multi_turn": True, "calls": False, "usage": True},
        }
    )


def scenarios(ws: Workspace) -> None:
    ws.scenario({"id": "hello", "goal": "hi", "criteria": [{"contains": "hi|opened|prepared"}]})
    ws.scenario({"id": "wrong", "goal": "no", "criteria": [{"contains": "yes"}]})
    ws.scenario(
        {
            "id": "twice",
            "goal": "again",
            "repeat": 2,
            "criteria": [{"max_tokens": {"total": 3}}, {"contains": "[redacted:API_TOKEN]"}],
        }
    )
    ws.scenario({"id": "chat", "turns": ["one", "two"], "criteria": [{"contains": "two"}]})
    ws.scenario({"id": "tools", "goal": "x", "criteria": [{"not_called": "delete_all"}]})


def normalize(report: dict[str, Any]) -> dict[str, Any]:
    r = copy.deepcopy(report)
    for k in ("id", "dir", "started"):
        r["run"].pop(k, None)
    for s in r["scenarios"]:
        s.pop("seconds", None)
        for t in s["turns"]:
            t.pop("seconds", None)
            t["evidence"].pop("ppid", None)
            t["evidence"].pop("ws", None)
        if s.get("collected"):
            s["collected"]["evidence"].pop("ppid", None)
        for h in s["hooks"]:
            h.pop("seconds", None)
    return r


class Observer:
    """An evidence observer, registered in-test: only the driver's plugin manager has it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []

    @hookimpl
    def rook_evidence_recorded(self, run: Any, record: Any, result: Any) -> None:
        if record is not None:
            self.seen.append((record["key"], result.phase, result.turn))


def hooks_of(ws: Workspace, run_id: str) -> collections.Counter[tuple[str, str, Any]]:
    out: collections.Counter[tuple[str, str, Any]] = collections.Counter()
    for f in (ws.run_dir(run_id) / "scenarios").glob("*.json"):
        rec = json.loads(f.read_text())
        out.update((rec["key"], h["phase"], h["turn"]) for h in rec["hooks"])
    return out


def test_dask_runs_the_same_lifecycle_on_workers(
    scheduler, rook_workspace, rook_cli, rook_plugin, monkeypatch, tmp_path
):
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    scenarios(rook_workspace)
    observer = rook_plugin(Observer())
    local = rook_cli("run", "--json", "-j", "4")
    assert local.exit_code == 1, local.stderr  # "wrong" fails on purpose
    observer.seen.clear()

    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json", "-j", "4")
    assert r.exit_code == 1, r.stderr
    assert normalize(r.report) == normalize(local.report)
    assert r.statuses() == {
        "hello": "passed",
        "wrong": "failed",
        "twice.1": "passed",
        "twice.2": "passed",
        "chat": "passed",
        "tools": "not_runnable",
    }
    me = os.getpid()
    ran = [t["evidence"]["ppid"] for s in r.report["scenarios"] for t in s["turns"]]
    assert ran and me not in ran  # every hook ran in a worker process
    for s in r.report["scenarios"]:  # a scenario run's phases all ran in one worker
        ppids = [t["evidence"]["ppid"] for t in s["turns"]]
        ppids += [s["collected"]["evidence"]["ppid"]] if s.get("collected") else []
        assert len(set(ppids)) <= 1, (s["id"], ppids)
    chat = next(s for s in r.report["scenarios"] if s["id"] == "chat")
    assert len(chat["turns"]) == 2 and chat["collected"]["evidence"]["ppid"] != me
    assert {t["evidence"]["ppid"] for s in local.report["scenarios"] for t in s["turns"]} == {me}
    run_id = r.report["run"]["id"]
    # the driver alone wrote the records; observers ran there, once per hook
    assert collections.Counter(observer.seen) == hooks_of(rook_workspace, run_id)
    assert SECRET not in rook_workspace.all_run_text(run_id)
    assert "[redacted:API_TOKEN]" in rook_workspace.record(run_id, "hello.1")["turns"][0]["output"]
    assert not list(rook_workspace.root.rglob(".dask-probe-*"))


def test_a_workspace_the_workers_do_not_share_is_shipped(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    scenarios(rook_workspace)
    local = rook_cli("run", "--json", "--only", "hello,chat")
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    r = rook_cli(
        "run",
        "--executor",
        "dask",
        "--scheduler",
        scheduler,
        "--json",
        "--only",
        "hello,chat",
        "-j",
        "2",
    )
    assert r.exit_code == 0, r.stderr
    assert normalize(r.report) == normalize(local.report)
    seen = {t["evidence"]["ws"] for s in r.report["scenarios"] for t in s["turns"]}
    assert str(rook_workspace.root) not in seen  # the hooks ran in an unpacked copy
    run_dir = rook_workspace.run_dir(r.report["run"]["id"])
    assert (run_dir / "state" / "hello.1" / "opened").read_text() == "opened\n"  # state came back

    def copies(dask_worker: Any) -> list[str]:
        root = Path(dask_worker.local_directory) / "rook-workspaces"
        return sorted(p.name for p in root.iterdir()) if root.is_dir() else []

    with distributed.Client(scheduler, timeout=10) as client:  # long-lived workers: no copy
        assert client.run(copies) == {w: [] for w in client.scheduler_info()["workers"]}


def test_a_pipe_or_a_link_out_a_hook_left_in_its_state_never_stops_a_shipped_run(
    scheduler, rook_workspace, rook_cli, monkeypatch
):
    # a named pipe (or a link to /dev/zero, or out of the directory) in ROOK_STATE_DIR
    # stopped the whole run when its state came back from the worker: "executor 'dask'
    # (executor_dask (rook-harness)) raised SpecialFileError: 'pipe' is a special file"
    ws = rook_workspace
    ws.script("h.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        mkfifo "$ROOK_STATE_DIR/pipe"
        ln -s /dev/zero "$ROOK_STATE_DIR/zero"
        ln -s ../../../../../../../etc "$ROOK_STATE_DIR/up"
        echo kept > "$ROOK_STATE_DIR/notes" && ln -s notes "$ROOK_STATE_DIR/inside"
        echo '{"output": "ok"}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    for sid in ("s1", "s2"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"s1": "passed", "s2": "passed"}
    for sid in ("s1", "s2"):
        state = ws.run_dir(r.report["run"]["id"]) / "state" / f"{sid}.1"
        assert (state / "notes").read_text() == "kept\n"
        assert (state / "inside").read_text() == "kept\n"  # a link inside comes back
        assert sorted(p.name for p in state.iterdir()) == ["inside", "notes"]


def test_a_workspace_over_the_ship_limit_stops_the_run_naming_the_limit(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """scale-out.md: ROOK_DASK_SHIP_LIMIT_MB is the largest workspace shipped; over
    it the run stops with a message saying to use a shared file system, and no
    scenario's hook runs. A limit that is no number is refused before anything runs."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    scenarios(rook_workspace)
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    dask = ("run", "--executor", "dask", "--scheduler", scheduler, "--only", "hello", "-j", "2")
    for bad, said in (("lots", "must be a number of MiB"), ("-1", "must be >= 0"),
                      ("nan", "must be a number of MiB"), ("inf", "must be a number of MiB")):
        monkeypatch.setenv("ROOK_DASK_SHIP_LIMIT_MB", bad)
        r = rook_cli(*dask)
        assert r.exit_code == 2 and f"ROOK_DASK_SHIP_LIMIT_MB={bad}: {said}" in r.stderr, r.stderr
        assert not rook_workspace.runs_dir.exists() or not list(rook_workspace.runs_dir.iterdir())
    monkeypatch.setenv("ROOK_DASK_SHIP_LIMIT_MB", "0")
    r = rook_cli(*dask)
    assert r.exit_code == 2, r.stderr
    assert "a file system every worker mounts at the same path" in r.stderr, r.stderr
    assert "raise ROOK_DASK_SHIP_LIMIT_MB" in r.stderr and "Traceback" not in r.stderr
    assert not list(rook_workspace.runs_dir.glob("*/scenarios/*.json"))  # no scenario ran
    assert not (marks / "hello").exists() and not list(rook_workspace.runs_dir.glob("*/state/hello.1/*"))
    # prepare ran into a new run: the message names it and the command that finishes it,
    # which works, and rook runs lists it as incomplete until then
    [run_dir] = rook_workspace.runs_dir.iterdir()
    assert f"rook run --run {run_dir.name}" in r.stderr and str(run_dir) in r.stderr, r.stderr
    [listed] = rook_cli("runs", "--json").report["runs"]
    assert listed["id"] == run_dir.name and not listed["complete"] and listed["recorded"] == 0
    # resumed, the run may hold what other invocations recorded: never advised to delete
    again = rook_cli(*dask, "--run", run_dir.name)
    assert again.exit_code == 2 and f"rook run --run {run_dir.name}" in again.stderr
    assert "delete" not in again.stderr, again.stderr
    monkeypatch.delenv("ROOK_DASK_WORKSPACE")
    done = rook_cli("run", "--run", run_dir.name, "--json")
    assert done.exit_code == 0 and done.statuses() == {"hello": "passed"}, done.stderr


def test_a_bundle_over_the_ship_limit_leaves_nothing_for_the_garbage_collector(tmp_path, monkeypatch):
    """A workspace (or a scenario's state) over ROOK_DASK_SHIP_LIMIT_MB raises TooBig
    and nothing else: the gzip stream it stopped was collected later and wrote its end
    into the stopped buffer, printing 'Exception ignored in: <gzip ...>' with a
    traceback on Python 3.13 (3.10 prints it only in development mode)."""
    import gc

    from rook_plugins.dask_worker import TooBig, build_bundle, pack_dir

    (tmp_path / "ws" / "runs" / "r1").mkdir(parents=True)
    (tmp_path / "ws" / "big").write_bytes(os.urandom(4096))
    ignored: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: ignored.append(f"{u.object!r}: {u.exc_value!r}"))
    for limit in (0, 100):
        with pytest.raises(TooBig):
            pack_dir(tmp_path / "ws", limit=limit)
        with pytest.raises(TooBig):
            build_bundle(tmp_path / "ws", tmp_path / "ws" / "runs" / "r1", limit=limit)
        gc.collect()
    assert ignored == [], ignored


def test_a_lost_worker_is_retried_once_then_an_infrastructure_error(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    rook_workspace.scenario({"id": "steady", "goal": "fine", "criteria": [{"contains": "fine"}]})
    rook_workspace.scenario({"id": "flaky", "goal": "die-1", "criteria": [{"contains": "die"}]})
    rook_workspace.scenario({"id": "doomed", "goal": "die-2", "criteria": [{"contains": "die"}]})
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json", "-j", "1")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"steady": "passed", "flaky": "passed", "doomed": "infra_error"}
    assert r.report["summary"]["decided"] == 2  # not counted against the agent
    run_id = r.report["run"]["id"]
    flaky = rook_workspace.record(run_id, "flaky.1")
    assert [a["lost"] for a in flaky["attempts"]] == [True]
    assert "was lost while running this scenario" in flaky["warnings"][0]
    doomed = rook_workspace.record(run_id, "doomed.1")
    assert doomed["reason"].startswith("infrastructure error: the Dask worker running this")
    assert doomed["infra"] and not doomed.get("final")
    assert (tmp_path / "marks" / "doomed").read_text().strip() == "2"  # tried twice, not more

    # an infrastructure error is not final: resuming the run tries it again
    again = rook_cli(
        "run", "--executor", "dask", "--scheduler", scheduler, "--run", run_id, "--json"
    )
    assert again.exit_code == 0, again.stderr
    assert again.statuses() == {"steady": "passed", "flaky": "passed", "doomed": "passed"}
    assert (tmp_path / "marks" / "flaky").read_text().strip() == "2"  # not run again


def test_each_lost_worker_is_named_also_one_that_died_before_it_said_so(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A worker killed before the scenario run's task could tell Rook it started there
    (here as Dask starts executing it, before Rook's code runs) was left out of the
    infrastructure error: 'lost 2 times (WORKER)' named the one that did. Rook now
    asks the scheduler which workers it lost while they ran the task, and names each
    (in the order they were lost), the record keeping an attempt for each."""
    import dask
    from distributed.diagnostics.plugin import WorkerPlugin

    marks = tmp_path / "marks"
    once = tmp_path / "killed-early"

    class KillsEarly(WorkerPlugin):  # defined here: pickled by value to the workers
        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and "-doomed.1-" in str(key) and not once.exists():
                once.write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    try:
        with distributed.Client(cluster.scheduler_address, timeout=10) as client:
            client.register_plugin(KillsEarly())
            before = set(client.scheduler_info()["workers"])
        agent(rook_workspace, marks, monkeypatch)
        # killed early on one worker, then by its hook on the other (die-1)
        rook_workspace.scenario({"id": "doomed", "goal": "die-1", "criteria": [{"contains": "x"}]})
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "--json")
    finally:
        cluster.close()
    assert once.exists() and (marks / "doomed").read_text().strip() == "1", r.stderr
    record = rook_workspace.record(r.report["run"]["id"], "doomed.1")
    assert record["status"] == "infra_error", record
    lost = [a["worker"] for a in record["attempts"]]
    assert len(lost) == 2 and set(lost) == before, (lost, before)
    assert record["reason"].startswith(
        "infrastructure error: the Dask worker running this scenario was lost 2 times "
        f"({lost[0]}, {lost[1]}); it was retried once on another worker, then given up"
    ), record["reason"]


def test_a_clock_set_back_never_gives_a_lost_workers_scenario_negative_seconds(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A lost worker's scenario run is timed by the driver, since it was sent to
    Dask: that was the wall clock's difference, so a clock set back meanwhile (NTP
    stepping a CI machine's clock) gave the infra_error minus an hour, as scenario
    and hook seconds were before they were counted on the monotonic clock."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    import types

    from rook_plugins import executor_dask

    # the driver's wall clock is set back an hour once the first attempt killed its
    # worker (the executor's alone: Dask's client in this process keeps its own)
    stepped = types.SimpleNamespace(**vars(time))
    stepped.time = lambda: time.time() - (3600 if (marks / "doomed").exists() else 0)
    monkeypatch.setattr(executor_dask, "time", stepped)
    rook_workspace.scenario({"id": "doomed", "goal": "die-2", "criteria": [{"contains": "die"}]})
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.statuses() == {"doomed": "infra_error"}, r.stderr
    entry = r.report["scenarios"][0]
    assert 0 <= entry["seconds"] < 600, entry


def test_a_scheduler_that_retries_more_is_stopped_after_one_retry(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 3}):  # Dask's default
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        )
    try:
        agent(rook_workspace, tmp_path / "marks", monkeypatch)
        rook_workspace.scenario({"id": "doomed", "goal": "die-3", "criteria": [{"contains": "x"}]})
        r = rook_cli(
            "run", "--executor", "dask", "--scheduler", cluster.scheduler_address, "--json"
        )
    finally:
        cluster.close()
    assert r.exit_code == 1, r.stderr
    record = rook_workspace.record(r.report["run"]["id"], "doomed.1")
    assert record["status"] == "infra_error"
    assert record["reason"].startswith("infrastructure error")
    assert int((tmp_path / "marks" / "doomed").read_text()) <= 3


JUDGE = """
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] == "execute":
        sys.stdin.read()
        verdict = {"pass": True, "reason": f"judged under pid {os.getppid()}"}
        print(json.dumps({"output": json.dumps(verdict)}))
"""


def test_with_a_judge_profile_the_driver_judges(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    rook_workspace.script("judge.py", JUDGE)
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}}, active=False)
    rook_workspace.scenario({"id": "graded", "goal": "hi", "criteria": [{"rubric": "is kind"}]})
    r = rook_cli(
        "run", "--executor", "dask", "--scheduler", scheduler, "--judge-profile", "grader", "--json"
    )
    assert r.exit_code == 0, r.stderr
    [scenario] = r.report["scenarios"]
    assert scenario["turns"][0]["evidence"]["ppid"] != os.getpid()  # the agent ran on a worker
    assert f"judged under pid {os.getpid()}" in scenario["criteria"][0]["reason"]  # judged here


def test_without_a_scheduler_rook_starts_a_local_cluster(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    scenarios(rook_workspace)
    r = rook_cli("run", "--executor", "dask", "--json", "-j", "2", "--only", "hello,wrong")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"hello": "passed", "wrong": "failed"}


@pytest.mark.parametrize("j", ["100000000", "1" + "0" * 30])
def test_an_absurd_concurrency_starts_a_local_cluster_sized_for_the_runs(
    rook_workspace, rook_cli, monkeypatch, tmp_path, j
):
    # -j 10**30 sized the local cluster's threads past what Dask's messages carry:
    # "OverflowError: Python int too large to convert to C unsigned long" tracebacks,
    # and every scenario left pending; no more than the runs are ever in flight
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    scenarios(rook_workspace)
    r = rook_cli("run", "--executor", "dask", "--json", "-j", j, "--only", "hello,wrong")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"hello": "passed", "wrong": "failed"}
    assert "Traceback" not in r.stderr and "OverflowError" not in r.stderr, r.stderr


def test_a_local_clusters_threads_are_bounded_whatever_the_concurrency(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """-j 100000 on many scenarios sized each worker of Rook's own LocalCluster for
    tens of thousands of threads (one a scenario run in flight). A worker has at most
    LOCAL_THREADS (here 1, on a machine of 1 CPU: one worker), and Rook says so."""
    from rook_plugins import dask_cluster

    monkeypatch.setattr(dask_cluster, "LOCAL_THREADS", 1)
    monkeypatch.setattr(dask_cluster.os, "cpu_count", lambda: 1)
    marks = tmp_path / "marks"
    marks.mkdir()
    rook_workspace.script(
        "busy.sh",
        '#!/bin/bash\nmkdir "$MARKS/busy" 2>/dev/null || echo x >> "$MARKS/overlaps"\n'
        'sleep 0.5; rmdir "$MARKS/busy"; echo \'{"output": "done"}\'\n',
    )
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": "scripts/busy.sh"}, "hook_env": {"MARKS": str(marks)}}
    )
    rook_workspace.scenario(
        {"id": "s", "goal": "x", "repeat": 3, "criteria": [{"contains": "done"}]}
    )
    r = rook_cli("run", "--executor", "dask", "--json", "-j", "100000")
    assert r.exit_code == 0, r.stderr
    assert not (marks / "overlaps").exists()  # one at a time
    assert (
        "rook: warning: --executor dask: Rook's own LocalCluster has 1 worker of 1 thread, "
        "one a scenario run: it runs 1 at once, not 3; for more, start a Dask cluster and "
        "give its --scheduler" in r.stderr
    ), r.stderr


def test_a_cache_variable_rook_cannot_use_is_warned_of_once_not_by_each_worker(tmp_path):
    """running.md: ROOK_NO_CACHE=maybe is one warning; the workers of Rook's own
    LocalCluster, which inherit the variable, said it again, one each."""
    ws = Workspace(tmp_path / "ws")
    ws.script("echo.sh", "#!/bin/bash\ncat >/dev/null\necho '{\"output\": \"hi\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    for i in range(4):
        ws.scenario({"id": f"s{i}", "goal": "hi", "criteria": [{"contains": "hi"}]})
    env = {**os.environ, "ROOK_NO_CACHE": "maybe"}
    proc = subprocess.run(
        [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--executor", "dask",
         "-j", "2", "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["scenarios"]) == 4  # standard output: the JSON alone
    assert proc.stderr.count("ROOK_NO_CACHE='maybe'") == 1, proc.stderr


def test_ctrl_c_at_a_terminal_stops_a_local_cluster_run_without_the_workers_tracebacks(
    rook_workspace, monkeypatch, tmp_path
):
    """Ctrl-C at a terminal reaches the whole foreground process group: Rook's own
    LocalCluster's workers too (they are in Rook's group). They died of it, each
    printing a KeyboardInterrupt traceback on Rook's standard error. They are left
    to Rook, which stops the run as scale-out.md says; a hook on a worker still
    gets SIGINT as a hook of a local run does (neither ignored nor blocked)."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    rook_workspace.script("agent.sh", AGENT.replace(
        'sleep) echo $$ >> "$MARKS/pids"',
        'sleep) grep -E "^Sig(Ign|Blk)" /proc/$$/status > "$MARKS/sig.$ROOK_SCENARIO_ID"; '
        'echo $$ >> "$MARKS/pids"'))
    for i in range(2):
        rook_workspace.scenario(
            {"id": f"slow{i}", "goal": "sleep", "criteria": [{"contains": "x"}]}
        )
    # a worker preload of the user's: the worker's task threads made while SIGINT and SIGTERM
    # are blocked, as a thread made while multiprocessing starts a helper is; the rest unblocked
    blocker = tmp_path / "block_signals.py"
    blocker.write_text(BLOCKED_TASK_THREADS)
    monkeypatch.setenv("DASK_DISTRIBUTED__WORKER__PRELOAD", repr([str(blocker)]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
         "--executor", "dask", "-j", "2", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # a foreground group of its own, as a shell's job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    pids: list[int] = []
    deadline = time.time() + 90
    while time.time() < deadline and len(pids) < 2:
        time.sleep(0.2)
        if (marks / "pids").is_file():
            pids = [int(p) for p in (marks / "pids").read_text().split()]
    assert len(pids) == 2, proc.stderr.read() if proc.poll() is not None else "hooks never started"
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert {s["status"] for s in json.loads(out)["scenarios"]} == {"pending"}
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]
    sigint, sigterm = 1 << (signal.SIGINT - 1), 1 << (signal.SIGTERM - 1)
    for i in range(2):
        masks = dict(line.split(":") for line in (marks / f"sig.slow{i}").read_text().split("\n") if line)
        assert not int(masks["SigIgn"], 16) & sigint, masks
        # a worker's threads may hold SIGINT and SIGTERM blocked (as multiprocessing blocks
        # them while it starts a helper; here a preload of the worker's), and a hook inherits
        # the mask of the thread starting it: neither is blocked in a hook (bash blocks
        # SIGCHLD itself as it forks)
        assert not int(masks["SigBlk"], 16) & (sigint | sigterm), masks


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"])  # scale-out.md
def test_an_interrupt_kills_the_hooks_on_the_workers(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path, sig
):
    """SIGKILL: rook run cannot cancel anything, and its hooks ran on the workers of a
    cluster it had not started until their timeouts (execute: 300 s), each holding a
    worker's thread. Now a worker stops the hooks of a task the scheduler released (its
    client gone), as it does those of a cancelled run."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    for i in range(2):
        rook_workspace.scenario(
            {"id": f"slow{i}", "goal": "sleep", "criteria": [{"contains": "x"}]}
        )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rook_core",
            "run",
            "-w",
            str(rook_workspace.root),
            "--executor",
            "dask",
            "--scheduler",
            scheduler,
            "-j",
            "2",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids: list[int] = []
    deadline = time.time() + 30
    while time.time() < deadline and len(pids) < 2:
        time.sleep(0.2)
        if (marks / "pids").is_file():
            pids = [int(p) for p in (marks / "pids").read_text().split()]
    assert len(pids) == 2, proc.stderr.read() if proc.poll() is not None else "hooks never started"
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=40)
    assert proc.returncode == (-signal.SIGKILL if sig == "SIGKILL" else 130), err
    # cancelled on the workers as rook ends: a hook may take a moment more to die there
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]
    if sig == "SIGKILL":
        return
    report = json.loads(out)
    assert {s["status"] for s in report["scenarios"]} == {"pending"}
    for s in report["scenarios"]:  # it said "rook run --run ID", ID as it is, and no -w
        run = f"rook run --run {report['run']['id']} -w {rook_workspace.root} --concurrency 2"
        run += f" --executor dask --scheduler {scheduler}"  # finished on the cluster, not here
        assert s["reason"] == f"interrupted; {run} finishes it", s
    # rook runs show's command that finishes it, read back from run.json, says so too
    shown = rook_cli("runs", "show", report["run"]["id"], "-w", str(rook_workspace.root))
    said = shown.stdout + shown.stderr
    assert f"--executor dask --scheduler {scheduler}" in said, said


def test_what_a_runs_hooks_left_behind_on_a_worker_is_killed_at_its_end(
    scheduler, rook_workspace, rook_cli, tmp_path
):
    """scale-out.md: at the end of a run, each (long-lived) worker kills what the
    run's hooks left behind, as the driver does at the end of a local run."""
    left = tmp_path / "left"
    rook_workspace.script("agent.sh", r"""#!/bin/bash
[ "$1" = execute ] || exit 0
cat >/dev/null
setsid sleep 300 >/dev/null 2>&1 </dev/null &   # its own session: no process group of the hook's
echo "$!" >> "$LEFT"
echo '{"output": "ok"}'
""")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "hook_env": {"LEFT": str(left)}})
    for i in range(2):
        rook_workspace.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "-j", "2", "--json")
    assert r.statuses() == {"s0": "passed", "s1": "passed"}, r.stderr
    pids = [int(p) for p in left.read_text().split()]
    assert len(pids) == 2
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]


@pytest.mark.parametrize("mode", ["shared", "ship"])
def test_a_wrappers_result_file_written_after_it_exited_on_a_worker_keeps_no_secret(
    scheduler, rook_workspace, rook_cli, monkeypatch, mode
):
    """ruhroh.md: a Ruhroh wrapper that exits early, leaving a job that writes its result
    file after Rook read it: the file is redacted again once the run's leftovers are
    killed; on a Dask worker too (its end-of-run clean-up), the workspace shared or
    shipped."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    if mode == "ship":
        monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    wrapper = rook_workspace.script("late.sh", r"""#!/bin/bash
( sleep 0.3; while :; do printf '{"status":"goal_satisfied","summary":"%s"}' "$API_TOKEN" \
    > "$RUHROH_RESULT_PATH"; sleep 0.05; done ) > /dev/null 2>&1 &
echo '{"status":"goal_satisfied","output":"early"}'
""")
    slow = rook_workspace.script("slow.sh", "#!/bin/bash\nsleep 1\n")
    rook_workspace.profile({
        "id": "p",
        "hooks": {"execute": {"ruhroh": str(wrapper)}, "close": str(slow)},
        "env": [{"variable": "API_TOKEN", "purpose": "the agent's API token"}],
    })
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    run_dir = rook_workspace.run_dir(r.report["run"]["id"])
    assert list(run_dir.rglob("results/*.json")), sorted(map(str, run_dir.rglob("*")))
    assert SECRET not in rook_workspace.all_run_text(r.report["run"]["id"])
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert SECRET not in f.read_text(errors="replace"), f


def test_a_judge_wrappers_result_file_written_after_it_exited_keeps_no_secret_with_dask(
    scheduler, rook_workspace, rook_cli, monkeypatch
):
    """The same for a judge profile that is a Ruhroh wrapper: with a judge profile the
    judge runs where rook run runs, and its result files are redacted at the run's end."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    wrapper = rook_workspace.script("late-judge.sh", r"""#!/bin/bash
( sleep 0.3; while :; do printf '{"status":"goal_satisfied","summary":"%s"}' "$API_TOKEN" \
    > "$RUHROH_RESULT_PATH"; sleep 0.05; done ) > /dev/null 2>&1 &
echo '{"status":"goal_satisfied","output":"{\"pass\": true, \"reason\": \"ok\"}"}'
""")
    agent = rook_workspace.script("agent.sh", r"""#!/bin/bash
[ "$1" = execute ] && echo '{"output": "hi"}'
sleep 1
exit 0
""")
    rook_workspace.profile({"id": "agent", "hooks": {"execute": str(agent), "close": str(agent)}})
    rook_workspace.profile(
        {"id": "grader", "hooks": {"execute": {"ruhroh": str(wrapper)}},
         "env": [{"variable": "API_TOKEN", "purpose": "the judge's token"}]},
        active=False,
    )
    for n in (1, 2):  # the second one's hooks run while the first one's judge job writes
        rook_workspace.scenario({"id": f"s{n}", "goal": "g", "criteria": [{"rubric": "hi"}]})
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "-j", "1", "--json",
                 "--judge-profile", "grader")
    assert r.statuses() == {"s1": "passed", "s2": "passed"}, r.stderr
    run_dir = rook_workspace.run_dir(r.report["run"]["id"])
    assert list(run_dir.rglob("results/*.json")), sorted(map(str, run_dir.rglob("*")))
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert SECRET not in f.read_text(errors="replace"), f


def test_a_runs_leftovers_on_a_worker_busy_with_another_run_are_killed_and_redacted_at_its_end(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A worker's end-of-run clean-up did nothing while it ran another run's task (a
    cluster shared by two rook runs, or two shards): what the ended run's hooks left
    running kept running (here a Ruhroh wrapper's job, writing the run's secret into its
    result file after Rook read it), unredacted, until a later clean-up found the
    worker idle, and that one, for another run, never killed it. Now the clean-up kills
    the ended run's leftovers on the worker whatever else runs there, those of that
    run's scenario runs only, and then redacts its late files."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    marks = tmp_path / "marks"
    marks.mkdir()
    busy = Workspace(tmp_path / "busy")  # the other run: it holds a thread of the worker
    busy.script("agent.sh", '#!/bin/bash\ncat >/dev/null; touch "$MARKS/busy"; sleep 30\n'
                'echo \'{"output": "done"}\'\n')
    busy.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                  "hook_env": {"MARKS": str(marks)}})
    busy.scenario({"id": "long", "goal": "g", "criteria": [{"contains": "done"}]})
    wrapper = rook_workspace.script("late.sh", r"""#!/bin/bash
( sleep 0.3; while :; do printf '{"status":"goal_satisfied","summary":"%s"}' "$API_TOKEN" \
    > "$RUHROH_RESULT_PATH"; sleep 0.05; done ) > /dev/null 2>&1 &
echo "$!" > "$MARKS/writer"
echo '{"status":"goal_satisfied","output":"early"}'
""")
    slow = rook_workspace.script("slow.sh", "#!/bin/bash\nsleep 1\n")
    rook_workspace.profile({
        "id": "p",
        "hooks": {"execute": {"ruhroh": str(wrapper)}, "close": str(slow)},
        "env": [{"variable": "API_TOKEN", "purpose": "the agent's API token"}],
        "hook_env": {"MARKS": str(marks)},
    })
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    other = None
    try:
        other = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(busy.root), "--executor",
             "dask", "--scheduler", cluster.scheduler_address, "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline and not (marks / "busy").exists():
            time.sleep(0.1)
        assert (marks / "busy").exists(), "the other run's hook never started"
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "--json")
        assert r.statuses() == {"s": "passed"}, r.stderr
        assert other.poll() is None, "the other run ended first: the worker was not busy"
        writer = int((marks / "writer").read_text())
        deadline = time.time() + 10
        while time.time() < deadline and _alive(writer):
            time.sleep(0.1)
        assert not _alive(writer), "the ended run's leftover still runs on the worker"
        run_dir = rook_workspace.run_dir(r.report["run"]["id"])
        assert list(run_dir.rglob("results/*.json")), sorted(map(str, run_dir.rglob("*")))
        for f in run_dir.rglob("*"):
            if f.is_file():
                assert SECRET not in f.read_text(errors="replace"), f
    finally:
        if other is not None:
            other.kill()
            other.communicate()
        cluster.close()


BLOCKED_TASK_THREADS = """
import signal, threading


def dask_setup(worker):
    pool = worker.executors["default"]
    n = pool._max_workers
    started = threading.Barrier(n + 1)
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        for _ in range(n):
            pool.submit(started.wait)
        started.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
"""


def _naps(marks: Path, count: int, seconds: float) -> list[str]:
    """The hooks' marks in ``marks / "naps"`` once ``count`` of them are there, or
    what is there after ``seconds``."""
    naps: list[str] = []
    deadline = time.time() + seconds
    while time.time() < deadline and len(naps) < count:
        time.sleep(0.1)
        if (marks / "naps").is_file():
            naps = (marks / "naps").read_text().split()
    return naps


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie not reaped yet is gone too
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_interrupting_one_shard_leaves_another_shard_of_the_run_alone(
    scheduler, rook_workspace, monkeypatch, tmp_path
):
    """Two shards of one run (one run id) on one cluster: a Ctrl-C of shard 1 stops
    shard 1's scenarios on the workers, never shard 2's."""
    from rook_core.sharding import partition

    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    ids = [f"nap{i}" for i in range(4)]
    for sid in ids:
        rook_workspace.scenario({"id": sid, "goal": "nap", "criteria": [{"contains": "nap"}]})
    first, second = partition([f"{sid}.1" for sid in ids], 2)
    assert len(first) == len(second) == 2

    def shard(i: int) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--shard", f"{i}/2", "--run-name", "shared-cluster", "--executor", "dask",
             "--scheduler", scheduler, "-j", "2", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    one, two = shard(1), shard(2)
    naps = _naps(marks, 4, 30)  # every hook of both shards runs
    assert len(naps) == 4, "the hooks of both shards never ran at once"
    one.send_signal(signal.SIGINT)
    out1, err1 = one.communicate(timeout=40)
    out2, err2 = two.communicate(timeout=40)
    assert one.returncode == 130, err1
    assert {s["status"] for s in json.loads(out1)["scenarios"]} == {"pending"}
    assert two.returncode == 0, err2  # shard 2 was not interrupted: its scenarios ran out
    report = json.loads(out2)
    assert {f"{s['id']}.{s['repeat_index']}": s["status"] for s in report["scenarios"]} == {
        key: "passed" for key in second
    }


def test_a_shipped_run_names_the_drivers_workspace_in_what_rook_writes(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """Shipped: the hooks run in the worker's copy of the workspace, but a reason, a
    diagnosis, a warning or a criterion's evidence names the user's own workspace; the
    agent's output is kept as it came (what the criteria judge)."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    closing = (
        'if [ "$1" = close ]; then echo "cannot tidy $ROOK_WORKSPACE/out.txt '
        '(or $(cd "$ROOK_WORKSPACE" && pwd -P)) $API_TOKEN" >&2; exit 3; fi\n'
    )
    text = AGENT.replace("case \"$1\" in", closing + "case \"$1\" in", 1)
    rook_workspace.script("agent.sh", text)
    rook_workspace.scenario(
        {
            "id": "paths",
            "goal": "hi",
            "criteria": [
                {"file": "missing.txt"},
                {"command": {"run": "pwd; pwd -P; echo $API_TOKEN; exit 3"}},
                {"contains": "hi"},
            ],
        }
    )
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.exit_code == 1, r.stderr
    run_id = r.report["run"]["id"]
    record = rook_workspace.record(run_id, "paths.1")
    ws = str(rook_workspace.root)
    worker_ws = record["turns"][0]["evidence"]["ws"]
    assert worker_ws != ws  # the agent's own output: as it came, from the worker's copy
    missing, command, contains = record["criteria"]
    assert missing["reason"] == f"{ws}/missing.txt does not exist"
    assert command["reason"].startswith("'pwd; pwd -P; echo $API_TOKEN; exit 3' exited 3")
    assert f"{ws}\n{ws}\n[redacted:API_TOKEN]" in command["reason"]
    assert command["evidence"]["command"]["cwd"] == ws
    assert command["evidence"]["command"]["stdout"] == f"{ws}\n{ws}\n[redacted:API_TOKEN]"
    assert contains["status"] == "passed"
    [close] = [h for h in record["hooks"] if h["phase"] == "close"]
    assert f"cannot tidy {ws}/out.txt (or {ws}) [redacted:API_TOKEN]" in close["diagnosis"]
    assert f"cannot tidy {ws}/out.txt" in record["warnings"][0]
    everything = rook_workspace.all_run_text(run_id) + r.stdout + r.stderr
    assert SECRET not in everything
    assert worker_ws not in r.stderr  # the terminal: progress, table
    rooks_own = copy.deepcopy(record)  # what Rook wrote: all but the agent's own output
    del rooks_own["turns"], rooks_own["collected"]
    for hook in rooks_own["hooks"]:
        del hook["stdout"], hook["stderr"], hook["data"]
    assert worker_ws not in json.dumps(rooks_own)


def test_a_workers_copy_and_its_real_path_are_named_as_the_drivers_workspace(tmp_path):
    from rook_plugins.executor_dask import localize, worker_paths

    real = tmp_path / "real" / "workspace"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    copy_ = str(tmp_path / "link" / "workspace")
    fix = worker_paths([copy_, os.path.realpath(copy_)], "/home/me/ws")
    assert fix(f"{copy_}/a.txt and {real}/b.txt in {real}.") == (
        "/home/me/ws/a.txt and /home/me/ws/b.txt in /home/me/ws."
    )
    assert fix(f"{real}s/x {real}-old") == f"{real}s/x {real}-old"  # other directories
    assert worker_paths(["/home/me/ws"], "/home/me/ws")("/home/me/ws/x") == "/home/me/ws/x"
    record = {
        "reason": f"{real}/x failed",
        "criteria": [{"reason": f"{real}/x", "evidence": {"command": {"cwd": str(real)}}}],
        "turns": [{"output": f"I wrote {real}/x"}],
        "hooks": [{"diagnosis": f"{real} SECRET", "stderr": f"{real} SECRET"}],
        "attempts": [{"hooks": [{"diagnosis": f"in {real}"}]}],
    }
    localize(record, fix, lambda t: t.replace("SECRET", "[redacted:S]"))
    assert record == {
        "reason": "/home/me/ws/x failed",
        "criteria": [{"reason": "/home/me/ws/x", "evidence": {"command": {"cwd": "/home/me/ws"}}}],
        "turns": [{"output": f"I wrote {real}/x"}],  # the agent's own: as it came
        "hooks": [{"diagnosis": "/home/me/ws [redacted:S]", "stderr": f"{real} SECRET"}],
        "attempts": [{"hooks": [{"diagnosis": "in /home/me/ws"}]}],
    }


STATEFUL = r"""
#!/bin/bash
case "$1" in
  open) echo opened >> "$ROOK_STATE_DIR/opened"; echo '{}' ;;
  execute)
    cat > /dev/null
    n=$(cat "$MARKS/$ROOK_SCENARIO_ID" 2>/dev/null || echo 0); echo $((n + 1)) > "$MARKS/$ROOK_SCENARIO_ID"
    echo "$ROOK_STATE_DIR" > "$MARKS/$ROOK_SCENARIO_ID.dir"
    echo mine > "$ROOK_STATE_DIR/attempt-$((n + 1))"
    if [ "$n" -lt 1 ]; then kill -9 "$PPID"; sleep 2; exit 0; fi   # the first attempt: lost
    printf '{"output": "%s"}\n' "$(cd "$ROOK_STATE_DIR" && ls | tr '\n' ' ')" ;;
esac
exit 0
"""


def test_a_scenario_run_again_after_its_worker_was_lost_starts_from_an_empty_state_directory(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """Shared file system: the attempt Dask runs again finds ROOK_STATE_DIR empty, as the
    first did, and the lost attempt's files are kept aside (the run's record names where),
    as the default executor does when it tries an infrastructure error again."""
    marks = tmp_path / "marks"
    marks.mkdir()
    rook_workspace.script("stateful.sh", STATEFUL)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"open": "scripts/stateful.sh", "execute": "scripts/stateful.sh"},
            "hook_env": {"MARKS": str(marks)},
        }
    )
    rook_workspace.scenario({"id": "lost", "goal": "x", "criteria": [{"contains": "attempt"}]})
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "shared")
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.exit_code == 0, r.stderr
    assert (marks / "lost").read_text().strip() == "2"  # the worker was lost once
    run_id = r.report["run"]["id"]
    state = rook_workspace.run_dir(run_id) / "state"
    assert (marks / "lost.dir").read_text().strip() == str(state / "lost.1")  # in place
    [turn] = r.report["scenarios"][0]["turns"]
    assert turn["output"] == "attempt-2 opened "  # only its own files
    assert (state / "lost.1" / "opened").read_text() == "opened\n"
    aside = state / "lost.1.attempt-1"
    assert sorted(p.name for p in aside.iterdir()) == ["attempt-1", "opened"]
    [lost] = rook_workspace.record(run_id, "lost.1")["attempts"]
    assert lost["lost"] and lost["state"] == "state/lost.1.attempt-1"


def _lost_before_it_said(rook_workspace, rook_cli, monkeypatch, tmp_path, mode):
    """A run of one scenario on a LocalCluster of two workers (``ROOK_DASK_WORKSPACE``
    ``mode``), the first worker to start it killed by its hook before its word that it
    started reached Rook (never sent): the report, the record and the workers before."""
    import dask
    from distributed.diagnostics.plugin import WorkerPlugin

    marks = tmp_path / "marks"
    marks.mkdir()

    class Mute(WorkerPlugin):  # defined here: pickled by value to the workers
        def setup(self, worker):
            said = worker.log_event

            def log_event(topic, msg):
                first = not (marks / "lost").exists()
                if not (first and isinstance(msg, dict) and msg.get("type") == "start"):
                    said(topic, msg)

            worker.log_event = log_event

    rook_workspace.script("stateful.sh", STATEFUL)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"open": "scripts/stateful.sh", "execute": "scripts/stateful.sh"},
            "hook_env": {"MARKS": str(marks)},
        }
    )
    rook_workspace.scenario({"id": "lost", "goal": "x", "criteria": [{"contains": "attempt"}]})
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", mode)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    try:
        with distributed.Client(cluster.scheduler_address, timeout=10) as client:
            client.register_plugin(Mute())
            before = set(client.scheduler_info()["workers"])
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "--json")
    finally:
        cluster.close()
    assert r.exit_code == 0, r.stderr
    assert (marks / "lost").read_text().strip() == "2"  # the worker was lost once
    return r, rook_workspace.record(r.report["run"]["id"], "lost.1"), before


def test_a_worker_lost_before_it_said_it_ran_a_scenario_run_again_is_named(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """Shared file system: a worker killed before its word that it started the scenario
    run reached Rook (here never sent), the attempt run again found its files: the
    warning said 'a Dask worker was lost ... (before it could say which)' and the
    record's attempt 'unknown'. Rook asks the scheduler then, and names it."""
    r, record, before = _lost_before_it_said(
        rook_workspace, rook_cli, monkeypatch, tmp_path, "shared"
    )
    [lost] = record["attempts"]
    assert lost["worker"] in before and lost["state"] == "state/lost.1.attempt-1", lost
    [warning] = record["warnings"]
    assert warning.startswith(
        f"Dask worker {lost['worker']} was lost while running this scenario; it ran again on "
    ), warning
    assert warning.endswith(
        "and the lost attempt's files in its state directory were moved to "
        "state/lost.1.attempt-1"
    ), warning


def test_a_shipped_run_names_a_worker_lost_before_it_said_it_ran_the_scenario(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """Shipped: a worker killed before its word that it started the scenario run
    reached Rook, the attempt run again passed, and the record kept no lost attempt
    and no warning (on a shared file system its files had told). The scheduler's word
    that it lost the worker while it ran the task is heard, and it is named."""
    r, record, before = _lost_before_it_said(
        rook_workspace, rook_cli, monkeypatch, tmp_path, "ship"
    )
    [lost] = record.get("attempts", [])
    assert lost == {"worker": lost["worker"], "lost": True, "hooks": []}, lost
    assert lost["worker"] in before, lost
    [warning] = record["warnings"]
    assert warning.startswith(
        f"Dask worker {lost['worker']} was lost while running this scenario; it ran again on "
    ), warning


WAITING_ON_WORKERS = """
import os
import time

from rook_core.hookspecs import hookimpl

while os.environ.get("GO_FILE") and not os.path.exists(os.environ["GO_FILE"]):
    time.sleep(0.05)  # on the workers alone: the driver's environment has no GO_FILE


@hookimpl
def rook_register_reporters(register):
    register("waited", lambda report, path: path.write_text("waited"))
"""


def test_a_plugin_whose_import_hangs_on_a_worker_is_named_by_rook_run(
    rook_workspace, rook_distribution, monkeypatch, tmp_path
):
    """A plugin whose module waits as it is imported on the Dask workers (a server only
    the driver reaches) held every scenario run with no word: the worker tells the
    driver after a few seconds, which names the worker, the plugin, and how to skip it."""
    import dask

    root = rook_distribution("rook-waiting", {"waiting": "rook_waiting_h6"},
                             {"rook_waiting_h6.py": WAITING_ON_WORKERS})
    go = tmp_path / "go"
    rook_workspace.script("echo.sh", '#!/bin/bash\necho \'{"output": "hi"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    monkeypatch.setenv("GO_FILE", str(go))  # the workers' environment
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    monkeypatch.delenv("GO_FILE")
    letting_go = threading.Timer(60, go.touch)  # a run that never says: it ends, silent
    try:
        env = {**os.environ, "PYTHONPATH": str(root), "ROOK_NO_CACHE": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", cluster.scheduler_address, "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        letting_go.start()
        said = ""
        for line in proc.stderr:
            said += line
            if "still importing" in line:
                break
        go.touch()
        out, rest = proc.communicate(timeout=120)
        with distributed.Client(cluster.scheduler_address, timeout=10) as client:
            [worker] = client.scheduler_info()["workers"]
    finally:
        letting_go.cancel()
        go.touch()
        cluster.close()
    assert proc.returncode == 0, said + rest
    assert json.loads(out)["summary"]["passed"] == 1
    assert (
        f"rook: warning: --executor dask: on Dask worker {worker}, plugin waiting (rook-waiting) "
        "is still importing rook_waiting_h6 after 5 seconds, and Rook waits for it (a plugin "
        "should not call a server or wait when it loads); skip it with "
        "ROOK_DISABLE_PLUGINS=waiting in the Dask worker's environment, or press Ctrl-C\n"
    ) in said, said
    assert "still importing" not in rest, rest  # said once


def test_a_worker_job_never_holds_the_profiles_secrets():
    # a worker logs the task it failed on ("Compute Failed ... args: (WorkerJob(...),)"), or
    # could not read (10 KB of its pickle): the job holds no secret; the run's secrets,
    # given apart to the workers that load Rook, show none in their repr either
    import pickle

    from rook_plugins.dask_worker import RunSecrets, WorkerJob, keep_secrets, seal, secrets_of

    from rook_core.redact import Redactor

    job = WorkerJob(
        run_id="r", workspace="/w", run_rel="runs/r", project="p", agent="a",
        profile_raw={}, profile_source="p.yaml", profile_rel=None, phases=["execute"],
    )
    assert not {"redactor", "env", "saved"} & set(vars(job)), vars(job)
    secrets = RunSecrets(Redactor({"API_TOKEN": "Zq9-s3cr3t-abcd"}),
                         {"API_TOKEN": "Zq9-s3cr3t-abcd"}, {"token": "sv-T0ken-9876"})
    assert repr(secrets) == "RunSecrets(API_TOKEN)"
    key = os.urandom(32)
    sealed = seal(pickle.dumps(secrets), key)  # as they travel: Dask logs them at DEBUG level
    assert b"s3cr3t" not in sealed and b"T0ken" not in sealed
    assert keep_secrets("topic-x", sealed) is None
    assert keep_secrets("topic-y", b"not sealed secrets") is None
    kept = secrets_of("topic-x", key, wait=0)
    assert kept is not None and kept.saved == {"token": "sv-T0ken-9876"}
    with pytest.raises(ValueError, match="while loading them$"):  # (never the bytes)
        secrets_of("topic-y", key, wait=0)
    with pytest.raises(ValueError, match="while loading them$"):
        secrets_of("topic-x", os.urandom(32), wait=0)
    assert secrets_of("topic-z", key, wait=0) is None


def test_a_scheduler_lost_mid_run_is_rooks_diagnosis_with_the_time_it_ran(
    rook_workspace, monkeypatch, tmp_path
):
    """The scheduler killed while the hooks ran: Dask's own log line
    (``distributed.client - ERROR - Failed to reconnect to scheduler``) reached
    the terminal, and each scenario was recorded as infra_error with
    ``seconds: 0.0`` though its hooks had run for seconds."""
    dask_cli = str(Path(sys.executable).parent / "dask")
    sfile = tmp_path / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    sched = subprocess.Popen(
        [dask_cli, "scheduler", "--scheduler-file", str(sfile), "--host", "127.0.0.1",
         "--dashboard-address", "127.0.0.1:0"], **quiet)
    worker = None
    try:
        deadline = time.time() + 30
        while time.time() < deadline and not sfile.is_file():
            time.sleep(0.1)
        worker = subprocess.Popen(
            [dask_cli, "worker", "--scheduler-file", str(sfile), "--nthreads", "2",
             "--no-dashboard"], **quiet)
        marks = tmp_path / "marks"
        agent(rook_workspace, marks, monkeypatch)
        for i in range(2):
            rook_workspace.scenario({"id": f"nap{i}", "goal": "nap", "criteria": [{"contains": "x"}]})
        proc = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", str(sfile), "-j", "2", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        naps = _naps(marks, 2, 60)
        assert len(naps) == 2, proc.stderr.read() if proc.poll() is not None else "no naps"
        time.sleep(2)  # the hooks have run for a while
        sched.kill()
        out, err = proc.communicate(timeout=120)
    finally:
        for p in (worker, sched):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
    assert "distributed." not in err and " - ERROR - " not in err, err
    report = json.loads(out)
    for s in report["scenarios"]:
        assert s["status"] == "infra_error", s
        assert s["reason"].startswith(
            "infrastructure error: the connection to the Dask scheduler was lost"), s["reason"]
        assert s["seconds"] >= 2, s  # since it was sent: its hooks ran for 2 s and more


def test_a_workers_address_given_as_the_scheduler_is_refused_before_prepare_runs(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A worker answers Dask's handshake too, but is no scheduler: refused (exit 2),
    naming what listens there, nothing run."""
    with distributed.Client(scheduler, timeout=10) as client:
        worker = next(iter(client.scheduler_info()["workers"]))
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    scenarios(rook_workspace)
    r = rook_cli("run", "--executor", "dask", "--scheduler", worker)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"--scheduler {worker}: a Dask worker listens there, not the scheduler" in r.stderr
    assert not any(rook_workspace.runs_dir.iterdir())


def test_the_scheduler_check_uses_the_security_dasks_client_would(
    scheduler, rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """Dask's client takes its TLS settings from ``distributed.client.security-loader``
    when one is configured: the check before anything runs asks the scheduler with
    the same settings, so what the client would refuse (here: encryption required,
    the address plain tcp://) is refused before prepare runs (exit 2), not after it,
    and a scheduler the client reaches is never refused for want of them."""
    import dask

    (tmp_path / "h6_loader.py").write_text(
        "from distributed.security import Security\n"
        "def load(info):\n"
        "    return Security(require_encryption=True)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    log = tmp_path / "prepared"
    rook_workspace.script("agent.sh", '#!/bin/bash\n[ "$1" = prepare ] && touch "$LOG"\n'
                          '[ "$1" = execute ] && echo \'{"output": "ok"}\'\nexit 0\n')
    rook_workspace.profile({"id": "p", "hooks": {"prepare": "scripts/agent.sh", "execute": "scripts/agent.sh"},
                            "hook_env": {"LOG": str(log)}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    with dask.config.set({"distributed.client.security-loader": "h6_loader.load"}):
        r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"--scheduler {scheduler}:" in r.stderr and "encryption" in r.stderr, r.stderr
    assert not log.exists() and not any(rook_workspace.runs_dir.iterdir())


ECHO_PLUGIN = ECHO  # the echo transport, as test_scale_acceptance installs it


def test_a_worker_without_a_plugin_the_driver_has_says_it_is_the_workers_environment(
    scheduler, rook_workspace, rook_cli, rook_distribution
):
    """A transport plugin installed where ``rook run`` runs but not on the workers: the
    scenario is an infrastructure error whose reason names the worker (by its address),
    says that its environment lacks the plugin (not the driver's: there it validated),
    which plugin provides the key where ``rook run`` runs, and what to do; the worker's
    own ``unknown transport key ... installed transports: ...`` alone sent the user to
    the wrong machine."""
    rook_distribution("rook-echo", {"echo": "rook_echo_h5"}, {"rook_echo_h5.py": ECHO_PLUGIN})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"echo": "E: "}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "E: g"}]})
    assert rook_cli("run").exit_code == 0  # where rook run runs, the plugin is installed
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert r.statuses() == {"s": "infra_error"}
    reason = r.report["scenarios"][0]["reason"]
    with distributed.Client(scheduler, timeout=10) as client:
        workers = set(client.scheduler_info()["workers"])
    named = [w for w in workers if f"Dask worker {w} " in reason]
    assert len(named) == 1, reason
    assert (
        f"infrastructure error: Dask worker {named[0]} has no transport 'echo' (hooks.execute "
        "uses it), which plugin echo (rook-echo) provides where rook run runs; installed on "
        "that worker: connector, http, ruhroh, script. Install the same Rook plugins on every "
        "Dask worker as where rook run runs (pip install rook-echo there)"
    ) in reason, reason
    assert "Traceback" not in r.stderr and "ProfileError" not in reason


SHOUT_PLUGIN = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import FAILED, PASSED, Verdict


class Shouts(CriterionType):
    name = "shouts"
    description = "the answer is in capitals"

    def evaluate(self, config, view):
        return Verdict(PASSED if (view.output or "").isupper() else FAILED, "checked")


@hookimpl
def rook_register_criteria(register):
    register(Shouts())
"""


def test_a_worker_without_a_criterion_plugin_the_driver_has_runs_nothing_and_says_so(
    scheduler, rook_workspace, rook_cli, rook_distribution, tmp_path
):
    """A criterion type installed where ``rook run`` runs but not on the workers, which
    judge (no judge profile): the hooks ran on the worker, then judging there failed as
    ``criterion shouts (?) raised AttributeError: 'NoneType' object has no attribute
    'per_turn'``, an error counted against the agent. Now the worker runs no hook and the
    scenario is an infrastructure error naming the worker, the criterion type, the plugin
    and what to do."""
    rook_distribution("rook-shout", {"shout": "rook_shout_h5"}, {"rook_shout_h5.py": SHOUT_PLUGIN})
    ran = tmp_path / "ran"
    rook_workspace.script("a.sh", f"#!/bin/sh\ntouch {ran}\necho '{{\"output\": \"HI\"}}'\n")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"shouts": True}]})
    assert rook_cli("run").exit_code == 0  # where rook run runs, the plugin is installed
    ran.unlink()
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert r.statuses() == {"s": "infra_error"}
    reason = r.report["scenarios"][0]["reason"]
    assert reason.startswith("infrastructure error: Dask worker tcp://127.0.0.1:"), reason
    assert (
        " has no criterion type 'shouts' (the scenarios use it), which plugin shout "
        "(rook-shout) provides where rook run runs. Install the same Rook plugins on every "
        "Dask worker as where rook run runs (pip install rook-shout there)"
    ) in reason, reason
    assert not ran.exists()  # nothing ran on a worker that could not judge it


def test_a_worker_refusing_a_profile_the_driver_accepted_is_named(
    rook_workspace, rook_cli, rook_distribution
):
    """The worker has the plugin, but its resolve step refuses the entry there (here: an
    environment variable only the workers have): the reason names the worker and says
    that rook run, on the driver, accepted it, so the user looks at the worker."""
    import dask

    rook_distribution(
        "rook-picky",
        {"picky": "rook_picky_h5"},
        {
            "rook_picky_h5.py": ECHO_PLUGIN.replace('key="echo"', 'key="echo", resolve=resolve')
            .replace(
                "@hookimpl\ndef rook_register_transports",
                "def resolve(config, agent):\n"
                "    import os\n"
                "    from rook_core.errors import ConfigError\n"
                "    if os.environ.get('H5_ON_WORKER'):\n"
                "        raise ConfigError('echo: no echo chamber on this machine')\n"
                "    return config\n\n\n"
                "@hookimpl\ndef rook_register_transports",
            )
        },
    )
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
            env={"H5_ON_WORKER": "1"},
        )
    try:
        rook_workspace.profile({"id": "p", "hooks": {"execute": {"echo": "E: "}}})
        rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "E: g"}]})
        assert rook_cli("run").exit_code == 0
        with distributed.Client(cluster.scheduler_address, timeout=10) as client:
            [worker] = client.scheduler_info()["workers"]
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address, "--json")
    finally:
        cluster.close()
    assert r.exit_code == 1, r.stdout + r.stderr
    assert r.statuses() == {"s": "infra_error"}
    assert r.report["scenarios"][0]["reason"].startswith(
        f"infrastructure error: Dask worker {worker} could not set up the run, "
        "where rook run could: "
    ), r.report["scenarios"][0]["reason"]
    assert "echo: no echo chamber on this machine" in r.report["scenarios"][0]["reason"]


@pytest.mark.timeout(90)
def test_every_worker_gone_for_good_stops_the_run_instead_of_waiting_forever(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """The one worker SIGKILLed mid-scenario and none joining again: Dask keeps the task
    waiting for a worker forever (``no-workers-timeout`` is off by default), and so did
    ``rook run``, until interrupted. Now, after ROOK_DASK_WORKER_WAIT with no worker, the scenario
    in flight is an infrastructure error (not final), the ones never sent stay pending,
    and the run stops (exit 1) saying why and how to finish it."""
    import dask

    monkeypatch.setenv("ROOK_DASK_WORKER_WAIT", "3")
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(
            n_workers=0, host="127.0.0.1", dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR)
    dask_cli = str(Path(sys.executable).parent / "dask")
    worker = subprocess.Popen(  # no nanny: a worker killed is not started again
        [dask_cli, "worker", cluster.scheduler_address, "--no-nanny", "--nthreads", "1",
         "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        agent(rook_workspace, tmp_path / "marks", monkeypatch)
        rook_workspace.scenario({"id": "a-doomed", "goal": "die-9", "criteria": [{"contains": "x"}]})
        rook_workspace.scenario({"id": "b-later", "goal": "fine", "criteria": [{"contains": "x"}]})
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "--json", "-j", "1")
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait(10)
        cluster.close()
    assert worker.returncode == -signal.SIGKILL  # the hook killed it, as planned
    assert r.exit_code == 1, r.stderr
    assert "every Dask worker left the scheduler and none joined again" in r.stderr, r.stderr
    assert "is kept as it stands" in r.stderr, r.stderr
    assert "delete its folder" not in r.stderr, r.stderr  # a scenario run is recorded in it
    assert r.stderr.count("rook run --run ") == 1, r.stderr  # the command that finishes it, once
    assert "Traceback" not in r.stderr
    # --json prints the one report all the same: what was recorded, the rest pending
    assert r.statuses() == {"a-doomed": "infra_error", "b-later": "pending"}, r.stdout
    run_id = next(rook_workspace.runs_dir.iterdir()).name
    doomed = rook_workspace.record(run_id, "a-doomed.1")
    assert doomed["status"] == "infra_error", doomed
    assert doomed["reason"].startswith("infrastructure error: every Dask worker left"), doomed
    assert doomed["infra"] and not doomed.get("final")
    assert not (rook_workspace.run_dir(run_id) / "scenarios" / "b-later.1.json").exists()


def test_a_shipped_workspace_keeps_its_links_hard_links_and_modes(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A workspace holding a link to an absolute path (``data/abs -> /…/outside.txt``)
    or one leading out of it (``../../outside.txt``) could not be shipped at all: each
    worker refused the bundle (``the Dask task failed: AbsoluteLinkError:
    'workspace/data/abs' is a link to an absolute path``), every scenario an
    infrastructure error, a retry no better. And the second name of a file hard-linked
    within the workspace was left out of the bundle. The hooks on a worker now find
    what they find on the driver: links to the same files, both names, the modes."""
    ws = rook_workspace
    root = ws.root
    (tmp_path / "outside.txt").write_text("outside\n")
    data = root / "data"
    data.mkdir()
    (data / "real.txt").write_text("real\n")
    (data / "real.txt").chmod(0o640)
    os.symlink("real.txt", data / "link")
    os.symlink(tmp_path / "outside.txt", data / "abs")
    os.symlink(os.path.relpath(tmp_path / "outside.txt", data), data / "up")
    os.link(data / "real.txt", data / "hard")
    os.mkfifo(data / "pipe")
    (data / "tool").write_text("#!/bin/sh\necho tool-ran\n")
    (data / "tool").chmod(0o750)
    ws.script("h", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        cd "$ROOK_WORKSPACE/data"
        r="$(cat link) $(cat abs) $(cat up) $(cat hard) $(stat -c %a real.txt) $(./tool)"
        [ -L link ] && r="$r link-is-a-link"
        [ -p pipe ] || r="$r no-pipe"
        printf '{"output": "%s", "ws": "%s"}\\n' "$r" "$ROOK_WORKSPACE"
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "tool-ran"}]})
    local = rook_cli("run", "--json")
    assert local.exit_code == 0, local.stderr
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    assert r.exit_code == 0, r.stderr + json.dumps(r.report["scenarios"])
    [turn] = r.report["scenarios"][0]["turns"]
    assert turn["evidence"]["ws"] != str(root)  # it ran in a shipped copy
    expected = "real outside outside real 640 tool-ran link-is-a-link"
    assert local.report["scenarios"][0]["turns"][0]["output"] == expected
    assert turn["output"] == expected + " no-pipe"  # a named pipe holds no data: not shipped


def test_a_shipped_run_whose_only_worker_is_lost_runs_the_scenario_again_and_goes_on(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """Shipped, the workspace went to the workers as scattered data, which Dask keeps on
    one worker only (its active memory manager drops the broadcast copies within
    seconds). That worker SIGKILLed mid-scenario (its nanny starts it again), the
    cluster lost the workspace: the scenario was an infrastructure error
    (``FutureCancelledError: ... cancelled for reason: already forgotten``) instead of
    running again, and so was every scenario sent after it. Now every worker, one that
    joins or is started again included, has the workspace for the length of the run."""
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    try:
        agent(rook_workspace, tmp_path / "marks", monkeypatch)
        rook_workspace.scenario({"id": "a-flaky", "goal": "die-1", "criteria": [{"contains": "die"}]})
        rook_workspace.scenario({"id": "b-after", "goal": "fine", "criteria": [{"contains": "fine"}]})
        monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "--json", "-j", "1")

        def copies(dask_worker: Any) -> list[str]:
            root = Path(dask_worker.local_directory) / "rook-workspaces"
            return sorted(p.name for p in root.iterdir()) if root.is_dir() else []

        with distributed.Client(cluster.scheduler_address, timeout=10) as client:
            left = client.run(copies)
    finally:
        cluster.close()
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"a-flaky": "passed", "b-after": "passed"}
    flaky = rook_workspace.record(r.report["run"]["id"], "a-flaky.1")
    assert [a["lost"] for a in flaky["attempts"]] == [True]
    assert (tmp_path / "marks" / "a-flaky").read_text().strip() == "2"  # ran again, once
    assert left and all(v == [] for v in left.values()), left  # no copy kept after the run


def test_a_shipped_workspace_a_killed_rook_run_left_on_the_cluster_is_removed_by_the_next(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A shipped workspace stays registered on the scheduler for the length of its run;
    a ``rook run`` SIGKILLed cannot remove it, so the next shipped run removes what the
    scheduler holds for a client it no longer knows (and nothing of a live one's)."""
    from rook_plugins.dask_ship import ShippedWorkspace, plugin_name

    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    rook_workspace.scenario({"id": "s", "goal": "fine", "criteria": [{"contains": "fine"}]})

    def names(dask_scheduler: Any) -> list[str]:
        return sorted(dask_scheduler.worker_plugins)

    with distributed.Client(scheduler, timeout=10) as live:
        dead = plugin_name("rook-dead-0000", "Client-gone")
        alive = plugin_name("rook-live-0000", live.id)
        for name in (dead, alive):
            live.register_plugin(ShippedWorkspace(b"x", "0" * 64, name), name)
        monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
        r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
        assert r.exit_code == 0, r.stderr
        left = [n for n in live.run_on_scheduler(names) if n.startswith("rook-")]
        live.unregister_worker_plugin(alive)
    assert left == [alive]


@pytest.mark.timeout(60)
def test_a_cluster_with_no_worker_stops_the_run_with_its_report(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A scheduler with no worker: after WORKER_WAIT the run stops (exit 1), kept with
    the command that finishes it. With --json, stdout held nothing, though the SPEC has
    --json print exactly one report: it now holds the run's, every scenario run pending.
    The wait was a fixed 60 s, too short for an autoscaled cluster: ROOK_DASK_WORKER_WAIT
    sets it (a value that is no number of seconds is refused before anything runs)."""
    cluster = distributed.LocalCluster(
        n_workers=0, host="127.0.0.1", dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR)
    try:
        agent(rook_workspace, tmp_path / "marks", monkeypatch)
        rook_workspace.scenario({"id": "s", "goal": "fine", "criteria": [{"contains": "x"}]})
        for bad in ("soon", "0", "-5", "inf"):
            monkeypatch.setenv("ROOK_DASK_WORKER_WAIT", bad)
            r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address)
            assert r.exit_code == 2, r.stderr
            assert f"ROOK_DASK_WORKER_WAIT={bad}: must be a number of seconds" in r.stderr
            assert not rook_workspace.runs_dir.exists() or not list(rook_workspace.runs_dir.iterdir())
        monkeypatch.setenv("ROOK_DASK_WORKER_WAIT", "1.5")
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "--json")
        # a run named (--run-name) or resumed (--run) that stopped so said besides that
        # "every selected scenario run was finished already", with every one pending
        again = [rook_cli("run", how, "named", "--executor", "dask", "--scheduler",
                          cluster.scheduler_address) for how in ("--run-name", "--run")]
    finally:
        cluster.close()
    for stopped in again:
        assert stopped.exit_code == 1, stopped.stderr
        assert "finish it with: rook run --run named" in stopped.stderr, stopped.stderr
        assert "nothing left to run" not in stopped.stderr, stopped.stderr
        assert "finished already" not in stopped.stderr, stopped.stderr
    assert r.exit_code == 1, r.stderr
    assert ("rook: error: --executor dask: no Dask worker joined the scheduler within 1.5 s "
            "(ROOK_DASK_WORKER_WAIT)") in r.stderr, r.stderr
    run_id = r.report["run"]["id"]
    assert (rook_workspace.runs_dir / run_id).is_dir()
    assert f"rook: run {run_id} is kept as it stands; once that is fixed, finish it with: " \
        f"rook run --run {run_id}" in r.stderr, r.stderr
    assert "or delete its folder" in r.stderr, r.stderr  # nothing else is in it
    # the command that finishes it, once: the CLI's own "resume with: rook run --run ID
    # --phases open,execute,close,collect,judge" followed it, a second, different one
    assert r.stderr.count(f"rook run --run {run_id}") == 1, r.stderr
    assert r.statuses() == {"s": "pending"}, r.stdout
    assert r.report["run"]["id"] == run_id


def test_a_probe_file_a_killed_rook_run_left_is_removed_by_the_next_run(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """The probe that proves a shared file system stays for the length of a run (a worker
    joining later checks it): a ``rook run`` SIGKILLed left it in the run's folder for
    good. The next Dask run on the agent removes it (its holder is gone), never the probe
    of a run still going."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    rook_workspace.scenario({"id": "slow", "goal": "sleep", "criteria": [{"contains": "x"}]})
    rook_workspace.scenario({"id": "s", "goal": "fine", "criteria": [{"contains": "fine"}]})

    def probes() -> list[Path]:
        return sorted(rook_workspace.root.rglob(".dask-probe-*"))

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", scheduler, "--only", "slow"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def hooks_started(n: int, proc: subprocess.Popen[str]) -> list[int]:
        pids: list[int] = []
        deadline = time.time() + 30
        while time.time() < deadline and len(pids) < n:
            time.sleep(0.1)
            if (marks / "pids").is_file():
                pids = [int(p) for p in (marks / "pids").read_text().split()]
        assert len(pids) == n, proc.stderr.read() if proc.poll() is not None else "no hook"
        return pids

    killed, live = start(), None
    pids = []
    try:
        pids = hooks_started(1, killed)
        [stale] = probes()
        killed.kill()
        killed.communicate(timeout=10)
        live = start()  # a run still going: its probe is kept
        pids = hooks_started(2, live)
        r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--only", "s")
        assert r.exit_code == 0, r.stderr
        left = probes()
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=40)
    finally:
        for p in (killed, live):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert stale not in left and len(left) == 1, left  # the live run's
    assert probes() == [], probes()  # and that one is gone with its run


def test_what_would_unpack_past_the_ship_limit_is_never_shipped_either_way(
    scheduler, rook_workspace, rook_cli, monkeypatch
):
    """ROOK_DASK_SHIP_LIMIT_MB bounded the compressed size alone: 20 MiB of zeros (a few
    KiB compressed) went out as the workspace, unpacked on every worker, and came back as
    a scenario's state directory, unpacked on the driver, under a 1 MiB limit. Now what
    is shipped holds at most 16 times the limit unpacked too: a state directory over it
    stays on its worker (a warning says so; the verdict stands), a workspace over it
    stops the run before any hook, naming its largest file."""
    ws = rook_workspace
    ws.script("h.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo kept > "$ROOK_STATE_DIR/notes"
        [ -n "$BIG" ] && head -c 20971520 /dev/zero > "$ROOK_STATE_DIR/big"
        echo '{"output": "ok"}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}, "hook_env": {"BIG": "1"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    monkeypatch.setenv("ROOK_DASK_SHIP_LIMIT_MB", "1")
    dask = ("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    r = rook_cli(*dask)
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"s": "passed"}
    run_id = r.report["run"]["id"]
    assert not (ws.run_dir(run_id) / "state" / "s.1" / "big").exists()
    [warning] = ws.record(run_id, "s.1")["warnings"]
    assert "state directory was not brought back from Dask worker tcp://" in warning, warning
    assert ("holds over the 16 MiB of files (unpacked) that Rook brings back "
            "(16 x ROOK_DASK_SHIP_LIMIT_MB; largest: big, 20 MiB)") in warning, warning

    (ws.root / "data").mkdir()
    (ws.root / "data" / "zeros.bin").write_bytes(bytes(20 * 2**20))
    r = rook_cli(*dask)
    assert r.exit_code == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert ("holds over the 16 MiB of files (unpacked) that Rook ships with the job "
            "(16 x ROOK_DASK_SHIP_LIMIT_MB; largest: data/zeros.bin, 20 MiB)") in r.stderr, r.stderr
    assert "a file system every worker mounts at the same path" in r.stderr


@pytest.mark.timeout(120)
def test_a_scheduler_closed_under_a_run_leaves_the_scenarios_not_sent_pending(
    rook_workspace, monkeypatch, tmp_path
):
    """A LocalCluster closed while two scenarios ran and two waited: the two in flight are
    infrastructure errors (Rook's diagnosis), the one finished before is kept. The lanes
    went on handing the two waiting to Dask's client while it tried to reconnect, and
    when it gave up, 10 s later, each was an infrastructure error as if it had run for
    10 s: 'the Dask task failed: FutureCancelledError: rook-...-d.1-... cancelled for
    reason: unknown.' Once the client has given up, nothing more is sent: they stay
    pending, the run stops (exit 1) saying why, and rook run --run ID runs them."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    rook_workspace.scenario({"id": "a", "goal": "fine", "criteria": [{"contains": "fine"}]})
    for sid in ("b", "c"):
        rook_workspace.scenario({"id": sid, "goal": "nap", "criteria": [{"contains": "x"}]})
    for sid in ("d", "e"):
        rook_workspace.scenario({"id": sid, "goal": "later", "criteria": [{"contains": "x"}]})
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    proc = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", cluster.scheduler_address, "-j", "2",
             "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        naps = _naps(marks, 2, 60)
        assert len(naps) == 2, proc.stderr.read() if proc.poll() is not None else "no naps"
        cluster.close()
        out, err = proc.communicate(timeout=90)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        cluster.close()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "FutureCancelledError" not in err, err
    assert ("--executor dask: the connection to the Dask scheduler was lost" in err
            and "the others were not sent" in err), err
    report = json.loads(out)
    got = {s["id"]: s for s in report["scenarios"]}
    assert {k: s["status"] for k, s in got.items()} == {
        "a": "passed", "b": "infra_error", "c": "infra_error", "d": "pending", "e": "pending"}
    for sid in ("b", "c"):
        assert got[sid]["reason"].startswith(
            "infrastructure error: the connection to the Dask scheduler was lost"), got[sid]
    run_id = report["run"]["id"]
    assert f"rook run --run {run_id}" in err, err
    assert rook_workspace.record(run_id, "a.1")["status"] == "passed"  # kept as recorded


@pytest.mark.timeout(120)
def test_a_hook_s_exit_status_is_its_own_on_a_worker_started_with_sigchld_ignored(
    rook_workspace, rook_cli, tmp_path
):
    """A dask worker started by a parent that ignores SIGCHLD (a Perl or PHP supervisor's
    $SIG{CHLD} = 'IGNORE', kept across exec, and by the nanny's worker process): Rook
    took SIGCHLD back only on the main thread, and the worker builds Rook's engine on
    a task's thread, so the kernel reaped every hook: one that answered and exited 3
    passed. Now the worker's event loop (its main thread) takes it back."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask_cli = str(Path(sys.executable).parent / "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    ignoring = [sys.executable, "-c", "import os, signal, sys; "
                "signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"]
    rook_workspace.script("down.sh", """
        #!/bin/bash
        cat >/dev/null
        echo '{"output": "ok"}'
        echo "agent down" >&2
        exit 3
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/down.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    procs = [subprocess.Popen([dask_cli, "scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--no-dashboard"], **quiet)]
    try:
        with distributed.Client(address, timeout=30) as client:  # waits for the scheduler
            procs.append(subprocess.Popen([*ignoring, dask_cli, "worker", address, "--nthreads",
                                           "1", "--no-dashboard"], **quiet))
            client.wait_for_workers(1, timeout=60)
        r = rook_cli("run", "--executor", "dask", "--scheduler", address, "--json")
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    assert "exited with code 3: agent down" in r.report["scenarios"][0]["reason"], r.report


def test_a_scheduler_restarted_mid_run_gets_the_runs_shipped_workspace_again(
    rook_workspace, monkeypatch, tmp_path
):
    """A dask-scheduler restarted (same address) while two scenarios ran: Dask's client
    connected again and Rook sent the scenarios that waited, but what the run had set up
    on the scheduler was gone with it: the shipped workspace (a worker plugin the
    scheduler holds) never reached the new workers, and every later scenario was an
    infrastructure error ('has no copy of the shipped workspace ... its worker plugin
    did not set up there'). Now Rook sets the run up again on the new scheduler: the
    two in flight are infrastructure errors, as documented, and the others pass."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask_cli = str(Path(sys.executable).parent / "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}

    def start() -> list[subprocess.Popen[bytes]]:
        sched = subprocess.Popen([dask_cli, "scheduler", "--host", "127.0.0.1", "--port",
                                  str(port), "--no-dashboard"], **quiet)
        with distributed.Client(address, timeout=30) as client:  # waits for the scheduler
            worker = subprocess.Popen([dask_cli, "worker", address, "--nthreads", "2",
                                       "--no-dashboard"], **quiet)
            client.wait_for_workers(1, timeout=60)
        return [sched, worker]

    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    for sid in ("b", "c"):
        rook_workspace.scenario({"id": sid, "goal": "nap", "criteria": [{"contains": "x"}]})
    for sid in ("d", "e", "f"):
        rook_workspace.scenario({"id": sid, "goal": "later", "criteria": [{"contains": "later"}]})
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    procs = start()
    proc = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", address, "-j", "2", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        naps = _naps(marks, 2, 60)
        assert len(naps) == 2, proc.stderr.read() if proc.poll() is not None else "no naps"
        procs[0].kill()
        procs[0].wait(10)
        procs += start()  # within the 10 s Dask's client tries to connect again
        out, err = proc.communicate(timeout=90)
    finally:
        for p in [proc, *procs]:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
    assert "Traceback" not in err, err
    got = {s["id"]: s for s in json.loads(out)["scenarios"]}
    assert {k: s["status"] for k, s in got.items()} == {
        "b": "infra_error", "c": "infra_error", "d": "passed", "e": "passed", "f": "passed"
    }, {k: s["reason"] for k, s in got.items()}
    assert proc.returncode == 1, err


def _spawned_children(pid: int) -> list[int]:
    """The multiprocessing-spawned children of ``pid`` (Rook's LocalCluster's workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmd:
            found.append(int(entry))
    return found


def test_ctrl_c_while_rooks_local_cluster_starts_prints_no_workers_traceback(
    rook_workspace, monkeypatch, tmp_path
):
    """Ctrl-C in the first seconds of a run with Rook's own LocalCluster, while its
    workers were still importing Dask (before the dask_sigint preload ran there): each
    died of it with a KeyboardInterrupt traceback on Rook's standard error
    (``File ".../multiprocessing/spawn.py" ... KeyboardInterrupt``), and the cluster
    whose start Rook gave up was left to the garbage collector (``distributed.scheduler -
    ERROR``, ``coroutine 'Client._close' was never awaited``). The workers now start with
    SIGINT blocked and take it, harmless, once the preload has set it aside; Rook itself
    still stops the run (exit 130), closing what it started."""
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    rook_workspace.scenario({"id": "s", "goal": "sleep", "criteria": [{"contains": "x"}]})
    for attempt in range(2):
        proc = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "-j", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.time() + 60
            while time.time() < deadline and not _spawned_children(proc.pid):
                time.sleep(0.01)
            assert _spawned_children(proc.pid), "no worker started"
            time.sleep(0.2 * attempt)  # just spawned, then importing
            os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        # nor the cluster Rook was starting, interrupted: closed while Dask's logs are quiet
        assert " - ERROR - " not in err and "never awaited" not in err, err


@pytest.mark.timeout(120)
def test_ctrl_c_as_a_crashed_worker_of_rooks_local_cluster_starts_again_prints_no_traceback(
    rook_workspace, monkeypatch, tmp_path
):
    """A hook killed its worker; the LocalCluster's nanny started it again, and a Ctrl-C
    in the new worker's first seconds (importing Dask) killed it with a KeyboardInterrupt
    traceback on Rook's standard error: only the workers of the cluster's start had
    SIGINT blocked (the nanny started this one from a thread where it was not). The
    cluster now runs on an event loop of its own, in a thread made with SIGINT blocked,
    so every worker it starts, again or not, waits for its preload to set SIGINT aside."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    rook_workspace.scenario({"id": "d", "goal": "die-9", "criteria": [{"contains": "x"}]})
    rook_workspace.scenario({"id": "s", "goal": "sleep", "criteria": [{"contains": "x"}]})
    for attempt in range(2):
        (marks / "d").unlink(missing_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "-j", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.time() + 60
            first: set[int] = set()
            while time.time() < deadline and not (marks / "d").is_file():
                first |= set(_spawned_children(proc.pid))
                time.sleep(0.01)
            again: set[int] = set()
            while time.time() < deadline and not again:  # the nanny starts it again
                again = set(_spawned_children(proc.pid)) - first
                time.sleep(0.005)
            assert again, "no worker started again"
            time.sleep(0.2 * attempt)  # just spawned, then importing
            os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def _poison(dask_worker: Any) -> str:
    """Where a shipped workspace is unpacked, a file: the worker cannot set it up."""
    d = Path(dask_worker.local_directory) / "rook-workspaces"
    if d.is_dir():
        import shutil

        shutil.rmtree(d)
    d.write_text("not a folder\n")
    return str(d)


def _heal(dask_worker: Any) -> None:
    (Path(dask_worker.local_directory) / "rook-workspaces").unlink(missing_ok=True)


@pytest.mark.parametrize("poisoned", [1, 2])
def test_a_worker_that_cannot_unpack_the_shipped_workspace_is_named_and_left_out(
    scheduler, rook_workspace, rook_cli, monkeypatch, tmp_path, poisoned
):
    """A worker that cannot set the shipped workspace up (its disk full, its local
    directory unusable) failed each scenario it took with 'the Dask task failed:
    NotADirectoryError: [Errno 20] Not a directory: '/tmp/dask-scratch-space/worker-.../
    rook-workspaces/.a03...'', naming neither the worker nor what it was doing; then
    each scenario run it took was an infrastructure error, and quick to fail, it took
    more than its share. Now the first failure there sends the scenario run to another
    worker and that worker no more of the run's (a warning names it and why); only when
    no worker is left is it an infrastructure error, whose reason says which worker
    could not unpack the workspace, and where, and the command that tries it again."""
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    for i in range(8):
        rook_workspace.scenario({"id": f"s{i}", "goal": "fine", "criteria": [{"contains": "fine"}]})
    monkeypatch.setenv("ROOK_DASK_WORKSPACE", "ship")
    with distributed.Client(scheduler, timeout=10) as client:
        workers = sorted(client.scheduler_info()["workers"])
        bad = workers[:poisoned]
        where = client.run(_poison, workers=bad)
        try:
            r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json", "-j", "4",
                         "--shard", "1/1", "--run-name", "unpack")
        finally:
            client.run(_heal, workers=bad)
    statuses = r.statuses()
    assert set(statuses) == {f"s{i}" for i in range(8)}, r.stderr
    assert "Traceback" not in r.stderr
    said = f"Dask worker {bad[0]} could not unpack the shipped workspace {rook_workspace.root} into "
    if poisoned == 1:  # the other worker runs everything
        assert set(statuses.values()) == {"passed"}, (statuses, r.stderr)
        assert r.exit_code == 0, r.stderr
        assert r.stderr.count(f"rook: warning: --executor dask: {said}") == 1, r.stderr
        assert "this run sends that worker no more scenario runs" in r.stderr, r.stderr
        warned = [s for s in r.report["scenarios"] if s.get("warnings")]
        assert all(s["warnings"][0].startswith(said) for s in warned), warned
        assert all(s["warnings"][0].endswith(f"; it ran on {workers[1]}") for s in warned), warned
        return
    assert set(statuses.values()) == {"infra_error"}, statuses
    assert r.exit_code == 1, r.stderr
    for s in r.report["scenarios"]:
        w = next(w for w in bad if w in s["reason"])
        assert s["reason"].startswith(
            f"infrastructure error: Dask worker {w} could not unpack the shipped workspace "
            f"{rook_workspace.root} into {where[w]}: NotADirectoryError"), s["reason"]
        # a shard's: the command that finishes it names the shard, as a local run's does
        assert "(rook run --run unpack --shard 1/1 " in s["reason"], s["reason"]


@pytest.mark.timeout(90)
@pytest.mark.parametrize(("mode", "good"), [("auto", 1), ("ship", 1), ("auto", 0)])
def test_a_worker_that_cannot_load_rook_is_named_and_left_out(
    rook_workspace, rook_cli, monkeypatch, tmp_path, mode, good
):
    """A worker whose Python has no Rook it can load (not installed there, or a broken
    one) can take neither the probe, nor the shipped workspace, nor a scenario. It
    stopped the whole run at set-up, though the other workers could run everything.
    Now the scenario runs go to the workers that loaded Rook (Dask's worker
    restrictions), a warning names each worker left out and what to install there,
    and only a cluster where no worker can load Rook stops the run, naming them."""
    shadow = tmp_path / "shadow" / "rook_plugins"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("this Rook is broken")\n')
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    for i in range(6):
        rook_workspace.scenario({"id": f"s{i}", "goal": "fine", "criteria": [{"contains": "fine"}]})
    cluster = distributed.LocalCluster(
        n_workers=good, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    bad = subprocess.Popen(
        [str(Path(sys.executable).parent / "dask"), "worker", cluster.scheduler_address,
         "--nthreads", "2", "--no-dashboard", "--no-nanny"],
        env={**os.environ, "PYTHONPATH": str(shadow.parent)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with distributed.Client(cluster) as client:
            client.wait_for_workers(good + 1, timeout=60)
            ok = {w.worker_address for w in cluster.workers.values()}
            [broken] = set(client.scheduler_info()["workers"]) - ok
        monkeypatch.setenv("ROOK_DASK_WORKSPACE", mode)
        r = rook_cli("run", "--executor", "dask", "--scheduler", cluster.scheduler_address,
                     "-j", "3")
        # never sent a task (work stealing included): one it cannot read drops its connection
        assert bad.poll() is None, r.stderr
    finally:
        bad.kill()
        bad.wait(10)
        cluster.close()
    assert "Traceback" not in r.stderr
    said = f"Dask worker {broken} cannot run Rook's work there: ImportError: this Rook is broken"
    assert "Install rook-harness[dask] on every Dask worker" in r.stderr, r.stderr
    assert not any(g in r.stderr for g in ok), r.stderr
    if not good:  # no worker can: the run stops at set-up, nothing sent
        assert r.exit_code == 1, r.stderr
        assert f"rook: error: --executor dask: {said}" in r.stderr, r.stderr
        assert not list(rook_workspace.runs_dir.glob("*/scenarios/*.json"))
        return
    assert r.exit_code == 0, r.stderr
    assert f"rook: warning: --executor dask: {said}; the scenario runs go to the 1 other" in r.stderr, r.stderr
    records = list(rook_workspace.runs_dir.glob("*/scenarios/*.json"))
    recs = [json.loads(f.read_text()) for f in records]
    assert len(recs) == 6 and all(r["status"] == "passed" and not r.get("attempts") for r in recs)


def test_rook_killed_on_its_own_local_cluster_leaves_no_warning_of_leaked_semaphores(
    rook_workspace, monkeypatch, tmp_path
):
    """``rook run --executor dask`` SIGKILLed: multiprocessing's resource tracker freed the
    LocalCluster's semaphores, as it should, but said so on Rook's standard error
    (``UserWarning: resource_tracker: There appear to be 12 leaked semaphore objects to
    clean up at shutdown``), as if Rook had leaked them."""
    marks = tmp_path / "marks"
    agent(rook_workspace, marks, monkeypatch)
    rook_workspace.scenario({"id": "slow", "goal": "sleep", "criteria": [{"contains": "x"}]})
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
         "--executor", "dask", "-j", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not pids:
            time.sleep(0.1)
            if (marks / "pids").is_file():
                pids = [int(p) for p in (marks / "pids").read_text().split()]
        assert pids, proc.stderr.read() if proc.poll() is not None else "no hook"
        proc.kill()
        _, err = proc.communicate(timeout=60)  # its workers and tracker gone too
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert "leaked semaphore" not in err and "Warning" not in err, err


WAITS_FOR_GO = r"""
#!/bin/bash
[ "$1" = execute ] || exit 0
cat > /dev/null
echo "$PPID" >> "$MARKS/started"
for _ in $(seq 300); do [ -e "$MARKS/go" ] && break; sleep 0.1; done
printf '{"output": "fine", "ppid": %s}\n' "$PPID"
"""


@pytest.mark.timeout(120)
def test_a_worker_that_joins_after_one_was_left_out_takes_scenario_runs(
    rook_workspace, tmp_path
):
    """Once a worker was left out (it could not load Rook), the run pinned its scenario
    runs to the workers that were good as it set up: a good worker that joined later sat
    idle while the one slow worker took them all in turn. Now a worker that joins is asked
    whether it loads Rook, and then takes scenario runs, those waiting included."""
    shadow = tmp_path / "shadow" / "rook_plugins"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("this Rook is broken")\n')
    marks = tmp_path / "marks"
    marks.mkdir()
    rook_workspace.script("agent.sh", WAITS_FOR_GO)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "hook_env": {"MARKS": str(marks)}})
    for i in range(4):
        rook_workspace.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "fine"}]})
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    address = cluster.scheduler_address
    dask_cli = str(Path(sys.executable).parent / "dask")
    worker = [dask_cli, "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"]
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    bad = subprocess.Popen(worker, env={**os.environ, "PYTHONPATH": str(shadow.parent)}, **quiet)
    late = rook = None
    try:
        with distributed.Client(cluster) as client:
            client.wait_for_workers(2, timeout=60)
            rook = subprocess.Popen(
                [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
                 "--executor", "dask", "--scheduler", address, "-j", "4", "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 60
            while not (marks / "started").is_file() and time.time() < deadline:
                time.sleep(0.05)  # set up (the broken worker left out), one scenario running
            assert (marks / "started").is_file(), rook.communicate(timeout=30)
            late = subprocess.Popen(worker, **quiet)
            client.wait_for_workers(3, timeout=60)
            deadline = time.time() + 15  # the late worker takes a waiting scenario run
            while str(late.pid) not in (marks / "started").read_text().split():
                if time.time() > deadline:
                    break
                time.sleep(0.05)
            (marks / "go").touch()
            out, err = rook.communicate(timeout=60)
    finally:
        for p in (bad, late, rook):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
        cluster.close()
    assert rook.returncode == 0, err
    assert "Traceback" not in err, err
    report = json.loads(out)
    ran_on = [s["turns"][0]["evidence"]["ppid"] for s in report["scenarios"]]
    assert late.pid in ran_on, (late.pid, ran_on, err)
    assert bad.pid not in ran_on


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["auto", "ship"])
def test_a_scheduler_that_cannot_load_rook_stops_the_run_saying_so(
    rook_workspace, rook_cli, monkeypatch, tmp_path, mode
):
    """A scheduler without Rook (or a broken one) cannot read a scenario run's task. Each
    scenario run was an infrastructure error, one after the other, whose reason was Dask's
    'RuntimeError: Error during deserialization of the task graph. This frequently\\noccurs
    if the Scheduler and Client have different environments...', split over lines, naming
    neither the scheduler nor Rook; with a shipped workspace the run stopped as it set up
    with 'setting up the run on the cluster failed: ImportError: ...', naming neither.
    Now Rook asks the scheduler as the run sets up, and stops before any scenario run is
    sent, saying what to install where."""
    shadow = tmp_path / "shadow" / "rook_plugins"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("this Rook is broken")\n')
    agent(rook_workspace, tmp_path / "marks", monkeypatch)
    for i in range(6):
        rook_workspace.scenario({"id": f"s{i}", "goal": "fine", "criteria": [{"contains": "fine"}]})
    file = tmp_path / "scheduler.json"
    dask_cli = str(Path(sys.executable).parent / "dask")
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [dask_cli, "scheduler", "--scheduler-file", str(file), "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard"],
        env={**os.environ, "PYTHONPATH": str(shadow.parent)}, **quiet)
    worker = None
    try:
        deadline = time.time() + 60
        while not file.is_file() and time.time() < deadline:
            time.sleep(0.05)
        worker = subprocess.Popen(
            [dask_cli, "worker", "--scheduler-file", str(file), "--nthreads", "2",
             "--no-dashboard", "--no-nanny"], **quiet)
        monkeypatch.setenv("ROOK_DASK_WORKSPACE", mode)
        r = rook_cli("run", "--executor", "dask", "--scheduler", str(file), "--json", "-j", "2")
    finally:
        for p in (worker, scheduler):
            if p is not None:
                p.kill()
                p.wait(10)
    assert r.exit_code == 1, r.stderr
    assert "Traceback" not in r.stderr
    address = json.loads(file.read_text())["address"]
    said = (f"the Dask scheduler at {address} cannot load Rook (ImportError: this Rook is "
            "broken), so it cannot read Rook's tasks: install rook-harness[dask] there, the "
            "same version as where rook run runs")
    assert r.stderr.count(f"rook: error: --executor dask: {said}") == 1, r.stderr
    assert not list(rook_workspace.runs_dir.glob("*/scenarios/*.json"))  # none sent


@pytest.mark.timeout(120)
def test_a_worker_that_cannot_load_rook_never_logs_the_runs_secrets(rook_workspace, tmp_path):
    """A worker without Rook (or a broken one) that joins a run as it goes is given a
    scenario run's task by Dask, cannot read it, and Dask logs up to 10 KB of the task's
    pickle on its standard error: the values of the profile's env variables and the
    token prepare saved were there, in plain text. Now no task carries a secret: the
    workers that load Rook are given them apart, and keep them in memory for the run."""
    from servers.agent_server import AgentServer
    from servers.helpers import token_prepare

    shadow = tmp_path / "shadow" / "rook_plugins"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("this Rook is broken")\n')
    marks = tmp_path / "marks"
    marks.mkdir()
    server = AgentServer().start()
    rook_workspace.script("agent.sh", WAITS_FOR_GO)
    rook_workspace.profile({"id": "p", "hooks": {"prepare": token_prepare(server),
                                                 "execute": "scripts/agent.sh"},
                            "env": [{"variable": "CLIENT_SECRET", "purpose": "the agent's"}],
                            "hook_env": {"MARKS": str(marks)}})
    for i in range(4):
        rook_workspace.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "fine"}]})
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    dask_cli = str(Path(sys.executable).parent / "dask")
    log = tmp_path / "broken.log"
    bad = rook = None
    try:
        rook = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", cluster.scheduler_address, "-j", "4", "--json"],
            env={**os.environ, "CLIENT_SECRET": server.client_secret},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not (marks / "started").is_file() and time.time() < deadline:
            time.sleep(0.05)  # set up on the one good worker, a scenario running, three waiting
        assert (marks / "started").is_file(), rook.communicate(timeout=30)
        with log.open("w") as err:  # a normal run: Dask gives it a waiting scenario run
            bad = subprocess.Popen(
                [dask_cli, "worker", cluster.scheduler_address, "--nthreads", "2",
                 "--no-dashboard", "--no-nanny"],
                env={**os.environ, "PYTHONPATH": str(shadow.parent)},
                stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.time() + 20
        while "Failed to deserialize" not in log.read_text() and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        (marks / "go").touch()
        out, err = rook.communicate(timeout=60)
    finally:
        for p in (bad, rook):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
        cluster.close()
        server.stop()
    logged = log.read_text()
    assert "Failed to deserialize" in logged, logged  # it was sent what it cannot read
    [token] = server.tokens
    for secret in (server.client_secret, token):
        assert secret not in logged, f"a secret in the broken worker's log:\n{logged}"
        assert secret not in out + err
    assert rook.returncode == 0, err
    assert {s["status"] for s in json.loads(out)["scenarios"]} == {"passed"}, err


def _forget_secrets() -> int:
    from rook_plugins import dask_worker

    with dask_worker._secrets_given:
        n = len(dask_worker._secrets)
        dask_worker._secrets.clear()
    return n


@pytest.mark.timeout(120)
def test_a_worker_without_the_runs_secrets_asks_for_them(rook_workspace, tmp_path):
    """A worker the driver has not given the run's secrets (one started again by its nanny
    at an address the run knew, one Dask gave a task before the driver's watch asked it)
    asks for them with an event as its task starts, and runs the scenario with them."""
    marks = tmp_path / "marks"
    marks.mkdir()
    rook_workspace.script("agent.sh", WAITS_FOR_GO.replace('"fine", "ppid": %s}\\n\' "$PPID"',
                                                        '"fine-%s"}\\n\' "$API_TOKEN"'))
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "env": [{"variable": "API_TOKEN", "purpose": "the agent's"}],
                            "hook_env": {"MARKS": str(marks)}})
    for i in range(3):
        rook_workspace.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "fine-"}]})
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    rook = None
    try:
        rook = subprocess.Popen(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", cluster.scheduler_address, "-j", "3", "--json"],
            env={**os.environ, "API_TOKEN": SECRET},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not (marks / "started").is_file() and time.time() < deadline:
            time.sleep(0.05)
        assert (marks / "started").is_file(), rook.communicate(timeout=30)
        with distributed.Client(cluster) as client:
            assert list(client.run(_forget_secrets).values()) == [1]
        (marks / "go").touch()
        out, err = rook.communicate(timeout=60)
    finally:
        if rook is not None and rook.poll() is None:
            rook.kill()
            rook.wait(10)
        cluster.close()
    assert rook.returncode == 0, err
    report = json.loads(out)
    assert {s["status"] for s in report["scenarios"]} == {"passed"}, err
    outputs = {s["turns"][0]["output"] for s in report["scenarios"]}
    assert outputs == {"fine-[redacted:API_TOKEN]"}, outputs
    assert SECRET not in out + err


@pytest.mark.timeout(120)
def test_a_cluster_logging_at_debug_level_never_logs_the_runs_secrets(rook_workspace, tmp_path):
    """Dask logs every message of its RPC at DEBUG level (``distributed.core``: "Message
    from ..."), and the run's secrets, given apart to the workers (``client.run``), were
    in the scheduler's and the workers' logs, in plain text: the values of the profile's
    env variables and the token prepare saved. The task never is (it travels on Dask's
    batched streams, not logged); what travels apart is sealed with a key the task holds."""
    from servers.agent_server import AgentServer
    from servers.helpers import token_prepare

    server = AgentServer().start()
    rook_workspace.script("agent.sh", '#!/bin/bash\ncat >/dev/null\necho "{\\"output\\": \\"fine-$API_TOKEN\\"}"\n')
    rook_workspace.profile({"id": "p", "hooks": {"prepare": token_prepare(server),
                                                 "execute": "scripts/agent.sh"},
                            "env": [{"variable": "CLIENT_SECRET", "purpose": "the agent's"},
                                    {"variable": "API_TOKEN", "purpose": "the agent's"}]})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fine-"}]})
    dask_cli = str(Path(sys.executable).parent / "dask")
    debug = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "debug"}
    sched_file = tmp_path / "scheduler.json"
    logs = [tmp_path / "scheduler.log", tmp_path / "worker.log"]
    procs: list[subprocess.Popen[Any]] = []
    try:
        with logs[0].open("w") as err:
            procs.append(subprocess.Popen(
                [dask_cli, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                 "--scheduler-file", str(sched_file)],
                env=debug, stdout=subprocess.DEVNULL, stderr=err))
        deadline = time.time() + 30
        while not (sched_file.is_file() and sched_file.stat().st_size) and time.time() < deadline:
            time.sleep(0.05)
        address = json.loads(sched_file.read_text())["address"]
        with logs[1].open("w") as err:
            procs.append(subprocess.Popen(
                [dask_cli, "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"],
                env=debug, stdout=subprocess.DEVNULL, stderr=err))
        rook = subprocess.run(
            [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
             "--executor", "dask", "--scheduler", address, "--json"],
            env={**os.environ, "CLIENT_SECRET": server.client_secret, "API_TOKEN": SECRET},
            capture_output=True, text=True, timeout=90)
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
        server.stop()
    assert rook.returncode == 0, rook.stderr
    [scenario] = json.loads(rook.stdout)["scenarios"]
    assert scenario["turns"][0]["output"] == "fine-[redacted:API_TOKEN]"
    [token] = server.tokens
    for log in logs:
        logged = log.read_text()
        assert "DEBUG" in logged and "keep_secrets" in logged, logged[-3000:]
        for secret in (server.client_secret, SECRET, token):
            assert secret not in logged, f"a secret in {log.name}"


def test_a_sign_in_cookie_prepare_got_is_sent_by_the_scenario_runs_on_workers(
    scheduler, rook_workspace, rook_cli
):
    """The cookies prepare's responses set (a sign-in's session cookie) begin every
    scenario run's, as docs/http.md says; a scenario run on a Dask worker started
    without them (its worker's HTTP transport starts afresh), so the agent saw a
    request not signed in that a local run sends signed in."""
    from test_http_acceptance import Scripted, echo_cookies, set_cookies

    server = Scripted()
    server.routes.update({"/login": set_cookies("login=ok; Path=/"), "/talk": echo_cookies})
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {
                "prepare": {"http": {"url": server.url + "/login", "body": {}}},
                "execute": {"http": {"url": server.url + "/talk", "body": {"q": "{{goal}}"}}},
            },
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "x"}]})
    try:
        local = rook_cli("run", "--json")
        r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
    finally:
        server.stop()
    for result in (local, r):
        [scenario] = result.report["scenarios"]
        assert scenario["turns"][0]["output"] == "login=ok", result.stderr


def test_a_finished_run_leaves_none_of_its_hook_results_on_the_scheduler(
    scheduler, rook_workspace, rook_cli
):
    """Every hook result streams back as a Dask event, which the scheduler keeps under
    the run's topic (up to 1000 a topic): a long-lived scheduler kept every finished
    run's agent output in memory for ever (5 MB outputs x 10: 50 MB after the run
    ended). The run drops its own at its end, and those of a rook run that was killed."""
    rook_workspace.script("big.sh", '#!/bin/bash\nprintf \'{"output": "%s"}\\n\' "$(head -c 20000 /dev/zero | tr "\\0" y)"\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/big.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "go", "repeat": 3, "criteria": [{"contains": "y"}]})
    with distributed.Client(scheduler, timeout=10) as client:
        client.log_event("rook-20000101-000000-killed-0badc0de", {"type": "hook"})  # a killed run's
        r = rook_cli("run", "--executor", "dask", "--scheduler", scheduler, "--json")
        assert r.exit_code == 0, r.stderr
        run_id = r.report["run"]["id"]
        left = {k: len(v) for k, v in client.get_events().items() if k.startswith("rook-") and v}
    assert not [k for k in left if k.startswith(f"rook-{run_id}-")], left
    assert "rook-20000101-000000-killed-0badc0de" not in left, left
