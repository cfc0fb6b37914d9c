"""Reliability: interrupts, no surviving hook processes, run locks, resource faults."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from nested import pytest_argv

ROOK = [sys.executable, "-m", "rook_core"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def slow_ws(rook_workspace, tmp_path):
    """Scenarios a1..a4; a3 runs until killed and records the pids of its tree."""
    ws = rook_workspace
    ws.pids = tmp_path / "pids"
    ws.log = tmp_path / "log"
    ws.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        g=$(cat)
        echo "$g" >> {ws.log}
        if [ "$g" = slow ] && [ ! -e {tmp_path}/fast-now ]; then
          sleep 300 & echo $! >> {ws.pids}
          setsid sleep 300 & echo $! >> {ws.pids}          # escapes the process group
          echo $$ >> {ws.pids}
          wait
        fi
        echo '{{"output": "ok"}}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid, goal in (("a1", "fast"), ("a2", "fast"), ("a3", "slow"), ("a4", "fast")):
        ws.scenario({"id": sid, "goal": goal, "criteria": [{"contains": "ok"}]})
    ws.fast_now = tmp_path / "fast-now"
    return ws


def start(ws, *args):
    return subprocess.Popen(
        [*ROOK, "run", "-w", str(ws.root), "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def pids_of(ws):
    return [int(p) for p in ws.pids.read_text().split()] if ws.pids.exists() else []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_first_signal_stops_kills_records_reports_and_exits_130(slow_ws, tmp_path, sig):
    ws = slow_ws
    report_path = tmp_path / "out.json"
    proc = start(ws, "--report", f"json:{report_path}")
    assert wait_for(lambda: len(pids_of(ws)) == 3), proc.communicate(timeout=5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    report = json.loads(out)
    statuses = {s["id"]: s["status"] for s in report["scenarios"]}
    assert statuses == {"a1": "passed", "a2": "passed", "a3": "pending", "a4": "pending"}
    assert json.loads(report_path.read_text())["run"]["id"] == report["run"]["id"]
    run_id = report["run"]["id"]
    assert f"rook run --run {run_id}" in err
    # every process of the interrupted hook is gone, the escaped one included
    assert wait_for(lambda: not any(alive(p) for p in pids_of(ws)), 10), pids_of(ws)
    record = ws.record(run_id, "a3.1")
    cut = record["interrupted_attempts"][0]["hooks"][0]
    assert cut["status"] == "interrupted"
    # timed from its start to the interrupt (it was recorded as 0 s, started == ended)
    assert cut["seconds"] > 0 and cut["ended"] - cut["started"] == pytest.approx(cut["seconds"], abs=1e-5)
    assert not record.get("final")
    # a4 was ready, waiting for a3's slot: it had not started, so it has no record
    assert not (ws.run_dir(run_id) / "scenarios" / "a4.1.json").exists()
    # resuming finishes it, repeating nothing that had finished
    ws.fast_now.touch()
    out = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--json", "--run", run_id],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert {s["id"]: s["status"] for s in json.loads(out.stdout)["scenarios"]} == dict.fromkeys(
        ["a1", "a2", "a3", "a4"], "passed")
    assert ws.log.read_text().split() == ["fast", "fast", "slow", "slow", "fast"]


def blocked_on_a_report_pipe(ws, tmp_path, agent):
    """A one-scenario run of the hook ``agent`` whose JSON report is written and
    whose JUnit report goes into a named pipe no one reads yet: Rook, started,
    is blocked opening it. The process, the JSON report's path and the pipe's."""
    ws.script("agent.sh", agent)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "a1", "goal": "hi", "criteria": [{"contains": "ok"}]})
    first, fifo = tmp_path / "first.json", tmp_path / "junit.xml"
    os.mkfifo(fifo)
    proc = start(ws, "--report", f"json:{first}", "--report", f"junit:{fifo}")
    assert wait_for(first.exists), proc.communicate(timeout=5)
    time.sleep(0.2)  # Rook is blocked opening the pipe
    return proc, first, fifo


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_once_the_hooks_are_done_still_writes_the_reports_and_exits_130(
        rook_workspace, tmp_path, sig):
    """A CI cancel that comes while Rook writes the reports (every hook done; here
    a JUnit report into a named pipe no one reads yet): the reports and the one
    JSON document are still written, and the exit code is 130, never a silent
    death by the signal."""
    ws = rook_workspace
    proc, first, fifo = blocked_on_a_report_pipe(ws, tmp_path, """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "ok"}'
        exit 0
    """)
    proc.send_signal(sig)
    time.sleep(0.5)
    assert proc.poll() is None, (proc.returncode, proc.communicate())  # it did not die of it
    with open(fifo) as reader:
        junit = reader.read()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (proc.returncode, err)
    assert json.loads(out)["summary"]["passed"] == 1
    assert 'testcase name="a1"' in junit and junit.rstrip().endswith("</testsuites>")
    assert f"rook: {sig.name}:" in err and "Traceback" not in err


def test_a_second_signal_while_the_reports_are_written_exits_130_at_once(rook_workspace, tmp_path):
    """A CI cancel, then its follow-up, while Rook is blocked writing a report (a
    named pipe no one reads): the second signal exits 130 at once, and the record
    already written needs nothing more from ``rook run --run ID``."""
    ws, log = rook_workspace, tmp_path / "log"
    proc, first, _ = blocked_on_a_report_pipe(ws, tmp_path, f"""
        #!/bin/bash
        [ "$1" = execute ] && echo sent >> {log} && echo '{{"output": "ok"}}'
        exit 0
    """)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert proc.poll() is None, (proc.returncode, proc.communicate())
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=10)  # never read: the pipe's reader never came
    assert proc.returncode == 130, err
    assert "rook: interrupted twice: exiting now" in err and "Traceback" not in err
    run_id = json.loads(first.read_text())["run"]["id"]
    again = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--json", "--run", run_id],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["summary"]["passed"] == 1
    assert log.read_text().split() == ["sent"]  # the agent was asked once


def test_a_second_signal_after_the_hooks_were_cut_says_the_command_that_finishes_the_run(
        rook_workspace, tmp_path):
    """Ctrl-C, then Ctrl-C again while Rook writes the reports (here a JUnit report
    into a named pipe no one reads): it exited 130 saying only `interrupted twice:
    exiting now`, neither the run's id nor how to finish it (the table and the
    `finish it with:` line come after the reports). It says the command now."""
    ws, log = rook_workspace, tmp_path / "log"
    ws.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        g=$(cat); echo "$g" >> {log}
        [ "$g" = slow ] && [ ! -e {tmp_path}/fast-now ] && sleep 300
        echo '{{"output": "ok"}}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "a1", "goal": "slow", "criteria": [{"contains": "ok"}]})
    fifo = tmp_path / "junit.xml"
    os.mkfifo(fifo)
    proc = start(ws, "--report", f"junit:{fifo}")
    assert wait_for(lambda: log.exists() and log.read_text().split() == ["slow"])
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)  # cuts the hook; Rook then blocks opening the pipe
    time.sleep(1)
    assert proc.poll() is None, (proc.returncode, proc.communicate())
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    (run_dir,) = ws.runs_dir.iterdir()
    command = f"rook run --run {run_dir.name} -w {ws.root} --report junit:{fifo}"
    assert f"rook: interrupted twice: exiting now; finish it with: {command}\n" in err, err
    (tmp_path / "fast-now").touch()
    fifo.unlink()  # the report goes to a file this time
    argv = shlex.split(command)
    again = subprocess.run([*ROOK, *argv[1:], "--json"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["summary"]["passed"] == 1
    assert 'failures="0"' in fifo.read_text()


HANGING_REPORTER = """
import os
import time
from rook_core.hookspecs import hookimpl


def write(report, path):
    path.write_text("half a report")
    while os.path.exists(os.environ["HANG_FLAG"]):  # a server that never answers
        time.sleep(1000)
    path.write_text(f"{len(report['scenarios'])} scenario runs")


@hookimpl
def rook_register_reporters(register):
    register("hang", write)
"""


def with_plugin(ws, tmp_path, dist, entry_points, files, **variables):
    """A real plugin package (``make_distribution``) on the PYTHONPATH of the
    environment returned (with ``variables``), for ``rook`` run in ``ws``, whose
    one scenario an agent saying ok passes."""
    from rook_core.testing import make_distribution

    site = make_distribution(tmp_path / "site", dist, entry_points, files)
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "ok"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "a1", "goal": "hi", "criteria": [{"contains": "ok"}]})
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {**os.environ, **variables, "PYTHONPATH": path}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_reporter_hangs_ends_it_and_exits_130(rook_workspace, tmp_path, sig):
    """A reporter plugin whose write never returned held `rook run` for ever once
    the run was recorded: the one SIGTERM of `timeout` or a CI cancel only said
    it would write the reports, so a job hung until its own limit. The signal now
    ends that reporter (what it wrote half is removed, what was there stays),
    skips the reports after it, says the command that writes them again (which
    works as printed) and exits 130; the run's record is whole."""
    flag = tmp_path / "hang"
    flag.touch()
    ws = rook_workspace
    env = with_plugin(ws, tmp_path, "rook-hang-report", {"hang": "rook_hangrep"},
                      {"rook_hangrep.py": HANGING_REPORTER}, HANG_FLAG=str(flag))
    out = tmp_path / "out"
    out.mkdir()
    (out / "x.txt").write_text("the last report")
    proc = subprocess.Popen(
        [*ROOK, "run", "-w", str(ws.root), "--report", f"hang:{out / 'x.txt'}",
         "--report", f"json:{out / 'y.json'}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert wait_for(lambda: any(out.glob(".x.txt.*/x.txt"))), proc.communicate(timeout=5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"rook: {sig.name}: ending the report being written" in err, err
    assert err.count("the run is recorded") == 1, err  # said once, with the command
    assert (f"--report hang:{out / 'x.txt'}: interrupted ({sig.name}) while the 'hang' "
            "reporter (hang (rook-hang-report)) wrote it") in err, err
    assert f"--report json:{out / 'y.json'}: not written: interrupted ({sig.name})" in err
    assert sorted(p.name for p in out.iterdir()) == ["x.txt"]  # no half report, no temp
    assert (out / "x.txt").read_text() == "the last report"
    (run_dir,) = ws.runs_dir.iterdir()
    assert json.loads((run_dir / "report.json").read_text())["summary"]["passed"] == 1
    again = err.split("rook: the run is recorded; write again with: ")[1].splitlines()[0]
    argv = shlex.split(again)
    assert argv[:3] == ["rook", "report", run_dir.name], again
    flag.unlink()  # the reporter's server answers this time
    r = subprocess.run([*ROOK, *argv[1:]], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert (out / "x.txt").read_text() == "1 scenario runs"
    assert json.loads((out / "y.json").read_text())["summary"]["passed"] == 1


WRAPPING_REPORTER = """
import time
from rook_core.hookspecs import hookimpl


def write(report, path):
    try:
        time.sleep(1000)
    except BaseException as exc:  # a reporter that wraps whatever stops it
        raise RuntimeError("upload aborted") from exc


@hookimpl
def rook_register_reporters(register):
    register("wrap", write)
"""


def test_a_reporter_that_wraps_the_interrupt_still_skips_the_reports_after_it(
        rook_workspace, tmp_path):
    """A hanging reporter that caught what the signal raised and raised its own
    error: it is named with that error, and the reports after it are still skipped
    (the signal was for the whole of Rook), exit 130."""
    ws = rook_workspace
    env = with_plugin(ws, tmp_path, "rook-wrap-report", {"wrap": "rook_wraprep"},
                      {"rook_wraprep.py": WRAPPING_REPORTER})
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*ROOK, "run", "-w", str(ws.root), "--report", f"wrap:{out / 'x.txt'}",
         "--report", f"json:{out / 'y.json'}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert wait_for(lambda: any(out.glob(".x.txt.*"))), proc.communicate(timeout=5)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "failed: RuntimeError: upload aborted" in err and "Traceback" not in err, err
    assert f"--report json:{out / 'y.json'}: not written: interrupted (SIGTERM)" in err, err
    assert not (out / "y.json").exists()


INTERRUPTING_REPORTER = """
import os
from rook_core.hookspecs import hookimpl


def write(report, path):
    path.write_text("half a report")
    if os.path.exists(os.environ["KI_FLAG"]):  # a library that raises it (a retry loop's ^C)
        raise KeyboardInterrupt
    path.write_text(f"{len(report['scenarios'])} scenario runs")


@hookimpl
def rook_register_reporters(register):
    register("ki", write)
"""


def test_a_reporter_that_raises_keyboardinterrupt_itself_is_taken_as_a_signal(
        rook_workspace, tmp_path):
    """A reporter plugin (a real installed package) that raised KeyboardInterrupt
    itself, with `rook run --json`: 'rook: interrupted', exit 130, no JSON document
    and no command to write the reports again, though the run was recorded. It is
    taken as a signal while a reporter writes is: that report ends (what it wrote
    half removed), the ones after it are skipped, each named, the JSON document is
    printed, the command that writes them again works as printed, exit 130."""
    flag = tmp_path / "ki"
    flag.touch()
    ws = rook_workspace
    env = with_plugin(ws, tmp_path, "rook-ki-report", {"ki": "rook_kirep"},
                      {"rook_kirep.py": INTERRUPTING_REPORTER}, KI_FLAG=str(flag))
    out = tmp_path / "out"
    r = subprocess.run(
        [*ROOK, "run", "-w", str(ws.root), "--json", "--report", f"ki:{out / 'x.txt'}",
         "--report", f"json:{out / 'y.json'}"],
        capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr and "rook: interrupted" not in r.stderr, r.stderr
    assert json.loads(r.stdout)["summary"]["passed"] == 1  # the one document
    assert (f"--report ki:{out / 'x.txt'}: the 'ki' reporter (ki (rook-ki-report)) was "
            "interrupted (KeyboardInterrupt) while it wrote it") in r.stderr, r.stderr
    assert f"--report json:{out / 'y.json'}: not written: interrupted (KeyboardInterrupt)" in (
        r.stderr)
    assert not out.exists() or not any(out.iterdir())  # no half report, no temp
    again = r.stderr.split("rook: the run is recorded; write again with: ")[1].splitlines()[0]
    argv = shlex.split(again)
    (run_dir,) = ws.runs_dir.iterdir()
    assert argv[:3] == ["rook", "report", run_dir.name], again
    # rook report (and rook merge) take it so too: named, the others skipped, exit 130
    r = subprocess.run([*ROOK, *argv[1:], "--json"], capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 130 and json.loads(r.stdout)["summary"]["passed"] == 1, r.stderr
    assert "not written: interrupted (KeyboardInterrupt)" in r.stderr, r.stderr
    flag.unlink()
    r = subprocess.run([*ROOK, *argv[1:]], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert (out / "x.txt").read_text() == "1 scenario runs"
    assert json.loads((out / "y.json").read_text())["summary"]["passed"] == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_before_any_hook_runs_exits_130_with_nothing_run(rook_workspace, tmp_path, sig):
    """A CI cancel while Rook starts (here: loading a plugin that takes its time)
    ends it like Ctrl-C: 'rook: interrupted', exit 130 as documented, nothing run
    and no run directory, never a silent death by the signal."""
    ws = rook_workspace
    ready = tmp_path / "ready"
    env = with_plugin(ws, tmp_path, "rook-slow", {"slow": "rook_slow"}, {
        "rook_slow.py": f"""
            import pathlib, time
            pathlib.Path({str(ready)!r}).touch()
            time.sleep(30)
        """})
    proc = subprocess.Popen([*ROOK, "run", "-w", str(ws.root), "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for(ready.exists), proc.communicate(timeout=5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.strip() == "rook: interrupted" and out == ""
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


SIGNALLED_AS_MAIN_STARTS = """
import os, signal, sys
import click
import rook_core.console as console  # its SIGTERM handler installed, the CLI imported
real = os.get_blocking
def get_blocking(fd):  # what main does first with its streams: a CI cancel comes now
    os.get_blocking = real
    os.kill(os.getpid(), signal.SIGTERM)
    return real(fd)
os.get_blocking = get_blocking
if "twice" in sys.argv:  # and again while Rook says it was interrupted
    echo = click.echo
    def again(message=None, *args, **kwargs):
        if message == "rook: interrupted":
            click.echo = echo
            os.kill(os.getpid(), signal.SIGTERM)
        return echo(message, *args, **kwargs)
    click.echo = again
sys.argv = ["rook", "--version"]
console.main()
"""


@pytest.mark.parametrize("times", ["once", "twice"])
def test_a_signal_as_the_console_script_starts_its_command_is_an_interrupt(times):
    """A SIGTERM that came after Rook installed its handler but before the command
    began (main setting up its streams: a stress run's SIGTERM at 0.7 s) ended
    Rook with a Python traceback, and so did a second one while Rook said
    `rook: interrupted`. Both now end it as documented: `rook: interrupted`,
    exit 130, no traceback."""
    r = subprocess.run([sys.executable, "-c", SIGNALLED_AS_MAIN_STARTS, times],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr, r.stdout) == (130, "rook: interrupted\n", "")


SIGNALLED_AS_ROOK_LOADS = """
import importlib.abc, os, signal, sys
when, sig = sys.argv[1], int(sys.argv[2])
class Signal(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == when:  # the signal comes as Rook imports this module
            sys.meta_path.remove(self)
            os.kill(os.getpid(), sig)
        return None
sys.meta_path.insert(0, Signal())
import click
if when == "click-context":  # while Click reads the command line, before the command
    init = click.Context.__init__
    def signalled(self, *args, **kwargs):
        click.Context.__init__ = init
        os.kill(os.getpid(), sig)
        init(self, *args, **kwargs)
    click.Context.__init__ = signalled
sys.argv = ["rook", "--version"]
import rook_core.console
rook_core.console.main()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("when", ["rook_core.startup", "rook_core.cli", "click-context"])
def test_a_signal_while_rook_loads_or_reads_its_command_line_is_an_interrupt(when, sig):
    """Ctrl-C as the console script imported its first modules (rook_core.startup)
    ended Rook with a Python traceback, and one while Click read the command line
    with Click's own '\\nAborted!', exit 1. Both now end it as documented from
    Rook's first line on: `rook: interrupted`, exit 130, nothing else."""
    r = subprocess.run([sys.executable, "-c", SIGNALLED_AS_ROOK_LOADS, when, str(int(sig))],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr, r.stdout) == (130, "rook: interrupted\n", ""), r


SIGNALLED_AS_THE_RUN_FOLDER_IS_MADE = """
import os, pathlib, signal, sys
mkdir = pathlib.Path.mkdir
def signalled(self, *args, **kwargs):
    mkdir(self, *args, **kwargs)
    if self.name == "scenarios" and self.parent.parent.name == "runs":  # the run's first folder
        pathlib.Path.mkdir = mkdir
        os.kill(os.getpid(), signal.SIGINT)
pathlib.Path.mkdir = signalled
sys.argv = ["rook", *sys.argv[1:]]
import rook_core.console
rook_core.console.main()
"""


def _signalled(ws, driver: str, *args: str, phases=("execute",)):
    """``rook run -w WS ARGS`` through ``driver`` (a script that sends Rook a SIGINT
    at one point of the run, then starts the console script), on one scenario whose
    agent answers ok in execute; ``phases``: the hooks the profile gives it."""
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "ok"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in phases}})
    ws.scenario({"id": "a1", "goal": "hi", "criteria": [{"contains": "ok"}]})
    return subprocess.run([sys.executable, "-c", driver, "run", "-w", str(ws.root), *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("named", [False, True])
def test_a_signal_as_the_run_folder_is_made_leaves_no_folder_that_is_no_run(rook_workspace,
                                                                            named):
    """Ctrl-C just as `rook run` made its run folder (`scenarios/` made, `state/` not
    yet) left `runs/ID/scenarios` behind with no run.json: `rook: interrupted` named
    no run, and `rook runs show ID` said there was no such run. The folder is
    removed as for a start that failed: nothing had run."""
    ws = rook_workspace
    named_run = ["--run-name", "nightly"] if named else []
    r = _signalled(ws, SIGNALLED_AS_THE_RUN_FOLDER_IS_MADE, *named_run)
    assert (r.returncode, r.stderr, r.stdout) == (130, "rook: interrupted\n", ""), r
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


SIGNALLED_AS_THE_RUN_STARTS = """
import asyncio, os, signal, sys
real = asyncio.run
def signalled(main, *args, **kwargs):  # run.json written, the run's loop not started
    asyncio.run = real
    os.kill(os.getpid(), signal.SIGINT)
    return real(main, *args, **kwargs)
asyncio.run = signalled
sys.argv = ["rook", *sys.argv[1:]]
import rook_core.console
rook_core.console.main()
"""


def test_a_signal_before_the_run_takes_the_signals_over_leaves_no_run(rook_workspace):
    """Ctrl-C after `rook run` wrote its run.json but before its loop took the
    signals over (no hook had started) said `rook: interrupted` and Python's
    `RuntimeWarning: coroutine '_drive' was never awaited`, and left the run's
    folder (every scenario run pending) with nothing naming it. Nothing ran, so
    nothing is left, as for a signal before: `rook: interrupted`, exit 130."""
    ws = rook_workspace
    r = _signalled(ws, SIGNALLED_AS_THE_RUN_STARTS, phases=("prepare", "execute"))
    assert (r.returncode, r.stderr, r.stdout) == (130, "rook: interrupted\n", ""), r
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


SIGNALLED_AS_THE_TABLE_IS_PRINTED = """
import os, signal, sys
import click
echo = click.echo
def signalled(message=None, *args, **kwargs):
    if str(message).startswith("scenario "):  # the results table: the run is recorded
        click.echo = echo
        os.kill(os.getpid(), signal.SIGINT)
    return echo(message, *args, **kwargs)
click.echo = signalled
sys.argv = ["rook", *sys.argv[1:]]
import rook_core.console
rook_core.console.main()
"""


def test_a_signal_as_the_results_are_printed_names_the_recorded_run(rook_workspace):
    """Ctrl-C as `rook run` printed its table, the run recorded whole, said only
    `rook: interrupted`: no run id, nothing to find the results by. It names the
    command that shows them; exit 130 as for any interrupt."""
    ws = rook_workspace
    r = _signalled(ws, SIGNALLED_AS_THE_TABLE_IS_PRINTED)
    (run,) = ws.runs_dir.iterdir()
    assert r.returncode == 130, r
    said = r.stderr.splitlines()[-1]
    assert said.startswith(f"rook: interrupted; the run is recorded, see: rook runs show {run.name} -w "), r
    shown = subprocess.run([*ROOK, *shlex.split(said.split("see: rook ")[1])], capture_output=True,
                           text=True, timeout=60, cwd="/")
    assert shown.returncode == 0 and "1 passed" in shown.stdout, shown


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT])
def test_a_signal_ignored_when_rook_starts_stays_ignored(rook_workspace, tmp_path, sig):
    """``nohup rook run`` (SIGHUP ignored) goes on when the terminal closes, and
    ``rook run &`` in a script (SIGINT ignored) when Ctrl-C reaches its shell:
    the run ends as it would have, every scenario run finished."""
    ws = rook_workspace
    started, release = tmp_path / "started", tmp_path / "release"
    ws.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        touch {started}
        while [ ! -e {release} ]; do sleep 0.05; done
        echo '{{"output": "ok"}}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "a1", "goal": "hi", "criteria": [{"contains": "ok"}]})
    proc = subprocess.Popen(
        [*ROOK, "run", "-w", str(ws.root), "--json"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(sig, signal.SIG_IGN))
    assert wait_for(started.exists), proc.communicate(timeout=5)
    proc.send_signal(sig)
    time.sleep(0.5)
    release.touch()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (proc.returncode, err)
    assert json.loads(out)["summary"]["passed"] == 1 and "interrupted" not in err


@pytest.mark.parametrize("command", ["run", "profile test"])
def test_a_hook_s_exit_status_is_its_own_when_rook_starts_with_sigchld_ignored(rook_workspace,
                                                                             command):
    """A parent that ignores SIGCHLD (a Perl or PHP supervisor's $SIG{CHLD} =
    'IGNORE', some init shims) hands that to rook across exec: the kernel then
    reaps each hook itself at its exit, and Rook read a hook that exited 3
    ("agent down") as one that exited 0, passing its scenario. Rook takes
    SIGCHLD back to its default before it starts a hook: the hook fails, saying
    why, as it does otherwise."""
    ws = rook_workspace
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo '{"output": "ok"}'
        echo "agent down" >&2
        exit 3
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "a1", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = subprocess.run(
        [*ROOK, *command.split(), "-w", str(ws.root)], capture_output=True, text=True,
        timeout=120, preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "agent down" in r.stdout + r.stderr, (r.stdout, r.stderr)
    if command == "run":
        assert "1 error" in r.stdout + r.stderr


def test_an_author_agent_s_exit_status_is_its_own_when_rook_starts_with_sigchld_ignored(
        rook_workspace, tmp_path):
    """rook profile add --author CMD started by a parent that ignores SIGCHLD: the
    author agent runs before any probe (which took SIGCHLD back), so the kernel
    reaped it, and one that failed (exit 3, 'author broke') was read as exit 0
    with nothing said ('the author agent answered no script ... it said'). Its
    failure is told as it is otherwise."""
    author = tmp_path / "author.sh"
    author.write_text("#!/bin/bash\ncat > /dev/null\necho 'author broke' >&2\nexit 3\n")
    author.chmod(0o755)
    r = subprocess.run(
        [*ROOK, "profile", "add", "helper", "--notes", "say hi", "--author", str(author),
         "-w", str(rook_workspace.root)], capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "the author agent exited with code 3: author broke" in r.stderr, r.stderr


def test_the_signal_tests_pass_when_the_suite_itself_starts_with_the_signals_ignored(tmp_path):
    """CI run under nohup (as Jenkins' sh step does) or as ``.ci/run &`` from a
    script starts the suite with SIGHUP or SIGINT ignored; every rook it starts
    would inherit that and rightly keep it, and the tests that send those
    signals would wait for an exit that never comes."""
    def ignore():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    root = Path(__file__).resolve().parents[1]
    test = "tests/test_reliability.py::test_a_signal_before_any_hook_runs_exits_130_with_nothing_run"
    # one xdist worker, started as CI's are (by a controller that began with the
    # signals ignored); a second one for three short tests only costs CPU
    r = subprocess.run(
        pytest_argv(tmp_path, "-q", "-p", "no:cacheprovider", "-n", "1", test),
        cwd=root, capture_output=True, text=True, timeout=110, preexec_fn=ignore,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:]
    assert "3 passed" in r.stdout  # SIGINT, SIGTERM, SIGHUP


def test_a_terminal_that_hangs_up_stops_the_run_like_ctrl_c(slow_ws):
    """rook run in a terminal that closes (SIGHUP; every write to it then fails
    with EIO): the hooks in flight are killed, what finished and the interrupted
    attempt are recorded, exit 130, and the run resumes."""
    import fcntl
    import pty
    import termios

    ws = slow_ws
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [*ROOK, "run", "-w", str(ws.root)], stdin=secondary, stdout=secondary, stderr=secondary,
        start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(secondary)
    try:
        assert wait_for(lambda: len(pids_of(ws)) == 3)
        while True:  # keep the terminal's buffer empty until it hangs up
            import select
            if not select.select([primary], [], [], 0)[0]:
                break
            os.read(primary, 65536)
    finally:
        os.close(primary)  # the terminal hangs up: SIGHUP to rook
    assert proc.wait(timeout=30) == 130
    assert wait_for(lambda: not any(alive(p) for p in pids_of(ws)), 10), pids_of(ws)
    (run_dir,) = ws.runs_dir.iterdir()
    assert json.loads((run_dir / "run.json").read_text())["interrupted"] == "SIGHUP"
    record = ws.record(run_dir.name, "a3.1")
    assert record["interrupted_attempts"][0]["hooks"][0]["status"] == "interrupted"
    ws.fast_now.touch()
    out = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--json", "--run", run_dir.name],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert ws.log.read_text().split() == ["fast", "fast", "slow", "slow", "fast"]

def test_second_signal_exits_at_once_without_orphans(rook_workspace, tmp_path):
    ws = rook_workspace
    pids = tmp_path / "pids"
    ws.script("stubborn.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        trap '' TERM INT
        setsid sleep 300 & echo $! >> {pids}
        echo $$ >> {pids}
        while :; do sleep 0.1; done
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/stubborn.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    proc = start(ws)
    assert wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 130
    tree = [int(p) for p in pids.read_text().split()]
    assert wait_for(lambda: not any(alive(p) for p in tree), 10)


def test_a_descendant_that_escapes_with_setsid_dies_at_the_timeout(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    pids = tmp_path / "pids"
    ws.script("daemon.sh", f"""
        #!/bin/bash
        setsid bash -c 'echo $$ >> {pids}; exec sleep 300' &
        sleep 300
    """)
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/daemon.sh", "timeout_seconds": 1}}})
    ws.scenario({"id": "s", "goal": "g"})
    r = rook_cli("run", "--json")
    hook = ws.record(r.report["run"]["id"], "s.1")["hooks"][0]
    assert hook["status"] == "timeout"
    escaped = int(pids.read_text())
    assert wait_for(lambda: not alive(escaped), 5)
    assert any(f"pid {escaped}" in n for n in hook["details"]["process"])  # the kill is recorded


# execute starts a child in a session of its own (out of reach of killpg), writes its
# pid to $PIDS, then stays (STAY=1: until killed) or answers and exits
ESCAPERS = {
    "bash": ("esc.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        setsid sleep 300 & echo $! >> "$PIDS"
        [ "$STAY" = 1 ] && sleep 300
        echo '{"output": "ok"}'
    """),
    "python": ("esc.py", """
        import json, os, sys, time
        if sys.argv[1] == "execute":
            pid = os.fork()
            if pid == 0:
                os.setsid()
                os.execvp("sleep", ["sleep", "300"])
            with open(os.environ["PIDS"], "a") as fh:
                fh.write(f"{pid}\\n")
            if os.environ.get("STAY") == "1":
                time.sleep(300)
            print(json.dumps({"output": "ok"}))
    """),
    "node": ("esc.mjs", """
        import { spawn } from "node:child_process";
        import { appendFileSync } from "node:fs";
        if (process.argv[2] === "execute") {
          const c = spawn("sleep", ["300"], {detached: true, stdio: "inherit"});
          appendFileSync(process.env.PIDS, `${c.pid}\\n`);
          c.unref();
          if (process.env.STAY === "1") setTimeout(() => {}, 300000);
          else process.stdout.write(JSON.stringify({output: "ok"}) + "\\n", () => process.exit(0));
        }
    """),
}


def escaper(ws, tmp_path, lang, stay, timeout=None):
    """A one-scenario agent whose execute hook (in ``lang``) leaves a child in a
    session of its own; the file its pid goes to."""
    name, body = ESCAPERS["bash" if lang == "ruhroh" else lang]
    path = ws.script(name, body, executable=lang in ("bash", "ruhroh"))
    pids = tmp_path / "pids"
    entry = f"scripts/{name}" if timeout is None else {"script": f"scripts/{name}",
                                                        "timeout_seconds": timeout}
    if lang == "ruhroh":  # the bash hook as a Ruhroh wrapper
        entry = {"ruhroh": {"command": f"{path} execute", "max_iterations": 1}}
    ws.profile({"id": "p", "hooks": {"execute": entry},
                "hook_env": {"PIDS": str(pids), "STAY": "1" if stay else "0"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    return pids


@pytest.mark.parametrize("lang", list(ESCAPERS))
def test_a_child_in_a_session_of_its_own_dies_at_the_timeout_in_every_language(
        rook_workspace, rook_cli, tmp_path, lang):
    """bash setsid, Python os.setsid, Node detached: true: killed at the hook's
    timeout, and the kill recorded in the hook's record."""
    pids = escaper(rook_workspace, tmp_path, lang, stay=True, timeout=1)
    r = rook_cli("run", "--json")
    hook = rook_workspace.record(r.report["run"]["id"], "s.1")["hooks"][0]
    assert hook["status"] == "timeout"
    (escaped,) = pids_of_file(pids)
    assert wait_for(lambda: not alive(escaped), 5)
    assert any(f"pid {escaped}" in n for n in hook["details"]["process"]), hook["details"]


@pytest.mark.parametrize("lang", list(ESCAPERS))
def test_a_judge_hooks_child_in_a_session_of_its_own_dies_at_its_timeout(
        rook_workspace, rook_cli, tmp_path, lang):
    """The same of a judge profile's hook: the kill is in the judgement's record."""
    ws = rook_workspace
    pids = escaper(ws, tmp_path, lang, stay=True, timeout=1)
    grader = yaml.safe_load((ws.agent_dir / "profiles" / "p.yaml").read_text())
    ws.profile({**grader, "id": "grader"}, active=False)
    ws.script("ok.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "ok"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"rubric": "fine"}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    (criterion,) = r.report["scenarios"][0]["criteria"]
    assert criterion["status"] == "error" and "timed out" in criterion["reason"], criterion
    (escaped,) = pids_of_file(pids)
    assert wait_for(lambda: not alive(escaped), 5)
    record = ws.record(r.report["run"]["id"], "s.1")
    (hook,) = record["criteria"][0]["evidence"]["judge"]["hooks"]
    assert any(f"pid {escaped}" in n for n in hook["details"]["process"]), hook["details"]


@pytest.mark.parametrize("lang", list(ESCAPERS))
def test_a_child_in_a_session_of_its_own_dies_when_the_run_ends_in_every_language(
        rook_workspace, tmp_path, lang):
    """The hook answered and exited, leaving it (holding its stdout): the run ends
    without waiting for it, kills it, and run.json's kills names it."""
    pids = escaper(rook_workspace, tmp_path, lang, stay=False)
    r = subprocess.run([*ROOK, "run", "-w", str(rook_workspace.root), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    (escaped,) = pids_of_file(pids)
    assert wait_for(lambda: not alive(escaped), 5)
    manifest = json.loads((Path(json.loads(r.stdout)["run"]["dir"]) / "run.json").read_text())
    assert any(f"pid {escaped}" in k for k in manifest["kills"]), manifest.get("kills")


@pytest.mark.parametrize("lang", [*ESCAPERS, "ruhroh"])
def test_a_child_in_a_session_of_its_own_dies_at_an_interrupt_and_the_kill_is_recorded(
        rook_workspace, tmp_path, lang):
    """Ctrl-C while the hook runs: its child outside the group was killed, but the
    cut hook's record said only 'its process group was killed' (details empty), and
    run.json had no kills: the kill was nowhere. The record lists it, as at a timeout."""
    pids = escaper(rook_workspace, tmp_path, lang, stay=True)
    proc = start(rook_workspace)
    assert wait_for(lambda: pids.exists() and pids.read_text().strip()), proc.communicate(timeout=5)
    time.sleep(0.3)  # the hook goes on to wait
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    (escaped,) = pids_of_file(pids)
    assert wait_for(lambda: not alive(escaped), 5)
    record = rook_workspace.record(json.loads(out)["run"]["id"], "s.1")
    cut = record["interrupted_attempts"][0]["hooks"][0]
    assert any(f"pid {escaped}" in n for n in cut["details"].get("process", [])), cut


# execute writes 64 KiB to stdout and to stderr every 50 ms until it is killed
WRITERS = {
    "bash": ("w.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo $$ >> "$PIDS"
        while :; do head -c 65536 /dev/zero | tr '\\0' x; head -c 65536 /dev/zero >&2; sleep 0.05; done
    """),
    "python": ("w.py", """
        import os, sys, time
        if sys.argv[1] == "execute":
            with open(os.environ["PIDS"], "a") as fh:
                fh.write(f"{os.getpid()}\\n")
            while True:
                os.write(1, b"x" * 65536)
                os.write(2, b"e" * 65536)
                time.sleep(0.05)
    """),
    "node": ("w.cjs", """
        if (process.argv[2] === "execute") {
          require("fs").appendFileSync(process.env.PIDS, `${process.pid}\\n`);
          const b = Buffer.alloc(65536, 120);
          setInterval(() => { process.stdout.write(b); process.stderr.write(b); }, 50);
        }
    """),
}


@pytest.mark.parametrize("how", ["timeout", "interrupt"])
@pytest.mark.parametrize("lang", list(WRITERS))
def test_a_hook_killed_while_it_writes_to_both_streams_ends_and_keeps_what_it_wrote(
        rook_workspace, tmp_path, lang, how):
    """asyncio's Process.wait() after SIGKILL does not return while pipe data is
    unread: a hook writing to both streams when its timeout or an interrupt kills
    it ends at once, recorded with what it had written."""
    ws = rook_workspace
    name, body = WRITERS[lang]
    ws.script(name, body, executable=lang == "bash")
    pids = tmp_path / "pids"
    entry = {"script": f"scripts/{name}", "timeout_seconds": 1 if how == "timeout" else 60}
    ws.profile({"id": "p", "hooks": {"execute": entry}, "hook_env": {"PIDS": str(pids)}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    proc = start(ws)
    if how == "interrupt":
        assert wait_for(lambda: pids.exists() and pids.read_text().strip())
        time.sleep(0.5)  # writing
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == (1 if how == "timeout" else 130), err
    record = ws.record(json.loads(out)["run"]["id"], "s.1")
    hook = record["hooks"][0] if how == "timeout" else record["interrupted_attempts"][0]["hooks"][0]
    assert hook["status"] == ("timeout" if how == "timeout" else "interrupted"), hook["status"]
    assert hook["stdout"].startswith("x" * 1000) and hook["stderr"], hook["stdout"][:100]
    assert wait_for(lambda: not any(alive(p) for p in pids_of_file(pids)), 5)


def test_a_daemon_a_hook_leaves_behind_dies_when_the_run_ends(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    pids = tmp_path / "pids"
    # double fork + setsid + closed descriptors: a proper daemon, orphaned at once
    ws.script("daemon.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        ( setsid bash -c 'echo $$ >> {pids}; exec sleep 300' </dev/null >/dev/null 2>&1 & )
        until [ -s {pids} ]; do sleep 0.01; done
        echo '{{"output": "ok"}}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/daemon.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    daemon = int(pids.read_text())
    assert wait_for(lambda: not alive(daemon), 5)
    manifest = json.loads((Path(json.loads(r.stdout)["run"]["dir"]) / "run.json").read_text())
    assert any(f"pid {daemon}" in k for k in manifest["kills"])


SCRUBBED_DAEMONS = {
    # each escapes the process group (setsid) and clears its environment (env -i),
    # so neither the group nor ROOK_RUN_ID leads to it; each writes its pid
    "bash, holding stdout": """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        setsid env -i sleep 300 &
        echo $! >> {pids}
        echo '{{"output": "ok"}}'
    """,
    "bash, double fork, closed descriptors, with a child": """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        ( setsid env -i /bin/bash -c 'echo $$ >> {pids}; /bin/sleep 300 & echo $! >> {pids}; wait' \
            </dev/null >/dev/null 2>&1 & )
        until [ "$(wc -l < {pids})" -ge 2 ] 2>/dev/null; do sleep 0.01; done
        echo '{{"output": "ok"}}'
    """,
    "python, fork, setsid, execve with an empty environment": """
        #!{python}
        import json, os, sys
        if sys.argv[1] == "execute":
            pid = os.fork()
            if pid == 0:
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execve("/bin/sleep", ["sleep", "300"], {{}})
            with open("{pids}", "a") as fh:
                fh.write(f"{{pid}}\\n")
            print(json.dumps({{"output": "ok"}}))
    """,
}


@pytest.mark.parametrize("how", list(SCRUBBED_DAEMONS))
def test_a_daemon_that_escapes_the_group_and_clears_its_environment_dies_when_the_run_ends(
        rook_workspace, tmp_path, how):
    """Neither its process group nor its environment leads back to the hook: it
    is recognised as an orphan Rook adopted (a child of Rook, in a session of
    its own) that no longer carries any run's id."""
    ws = rook_workspace
    pids = tmp_path / "pids"
    pids.touch()
    ws.script("daemon", SCRUBBED_DAEMONS[how].format(pids=pids, python=sys.executable))
    ws.profile({"id": "p", "hooks": {"execute": "scripts/daemon"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    left = pids_of_file(pids)
    try:
        assert left
        assert wait_for(lambda: not any(alive(p) for p in left), 5), left
        manifest = json.loads((Path(json.loads(r.stdout)["run"]["dir"]) / "run.json").read_text())
        assert any(f"pid {left[0]}" in k for k in manifest["kills"]), manifest.get("kills")
    finally:
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


def pids_of_file(path):
    return [int(p) for p in path.read_text().split()]


def test_a_process_rook_started_that_is_no_hooks_descendant_survives_the_run(
        rook_plugin, rook_workspace, rook_cli):
    """The other side of the rule above: a child of Rook's own process (here a
    plugin's, in Rook's session) is never taken for a hook's orphan, even with
    an empty environment."""
    from rook_core.hookspecs import hookimpl

    class Starts:
        started: list[subprocess.Popen] = []

        @hookimpl
        def rook_evidence_recorded(self, run, record, result):
            if not self.started:
                self.started.append(subprocess.Popen(["/bin/sleep", "300"], env={}))

    plugin = rook_plugin(Starts())
    ws = rook_workspace
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "ok"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    try:
        assert rook_cli("run").exit_code == 0
        (child,) = plugin.started
        assert child.poll() is None  # still running
    finally:
        for child in plugin.started:
            child.kill()
            child.wait()


def test_short_background_processes_hooks_leave_do_not_pile_up_as_zombies(rook_workspace, tmp_path):
    """Each hook leaves a short background job (a fire-and-forget log call) that
    ends just after the hook: Rook adopts it and reaps it, so its exited
    processes do not pile up for the whole run (each holds a pid, and counts
    against the user's process limit), and the run does not record killing
    groups in which nothing was running any more."""
    ws = rook_workspace
    ws.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        g=$(cat)
        if [ "$g" = last ]; then
          sleep 0.5
          ps -o stat= --ppid $PPID | grep -c Z > {tmp_path}/zombies
        else
          sleep 0.05 &
        fi
        echo '{{"output": "ok"}}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for i in range(30):
        ws.scenario({"id": f"s{i:02}", "goal": "x", "criteria": [{"contains": "ok"}]})
    ws.scenario({"id": "zz", "goal": "last", "criteria": [{"contains": "ok"}]})
    r = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--json", "-j", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int((tmp_path / "zombies").read_text()) <= 2
    manifest = json.loads((Path(json.loads(r.stdout)["run"]["dir"]) / "run.json").read_text())
    assert not manifest.get("kills"), manifest["kills"]


def test_256_hooks_at_once_cost_rook_no_thread_each(rook_workspace, tmp_path):
    """Python 3.11's default child watcher starts a thread per child: 256 hooks
    running at once (-j 256, each waiting until all have started) must not cost
    Rook 256 threads. Each reads Rook's thread count from /proc while all run."""
    ws = rook_workspace
    live, go, threads, fifo = (tmp_path / n for n in ("live", "go", "threads", "fifo"))
    os.mkfifo(fifo)  # read with a timeout, nobody writing: a sleep that starts no process
    ws.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        exec 3<>{fifo}
        echo $$ >> {live}
        for ((i = 0; i < 600; i++)); do [ -e {go} ] && break; read -t 0.1 -u 3; done
        grep '^Threads:' /proc/$PPID/status >> {threads}  # read whole: it changes as read
        echo '{{"output": "ok"}}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for i in range(256):
        ws.scenario({"id": f"s{i:03}", "goal": "g", "criteria": [{"contains": "ok"}]})
    proc = subprocess.Popen([*ROOK, "run", "-w", str(ws.root), "--json", "-j", "256", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    all_started = wait_for(lambda: live.exists() and len(live.read_text().split()) == 256, 120)
    go.touch()
    out, err = proc.communicate(timeout=120)
    assert all_started and proc.returncode == 0, err
    assert json.loads(out)["summary"]["passed"] == 256
    counts = [int(n) for n in threads.read_text().split()[1::2]]
    assert len(counts) == 256 and max(counts) < 32, max(counts)


def test_a_second_process_resuming_the_same_run_is_refused(slow_ws):
    ws = slow_ws
    proc = start(ws)
    assert wait_for(lambda: len(pids_of(ws)) == 3)
    run_id = next(ws.runs_dir.iterdir()).name
    other = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--run", run_id],
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 2
    assert f"run {run_id} is in use by another rook process (pid {proc.pid})" in other.stderr
    os.kill(proc.pid, signal.SIGKILL)  # a crashed holder leaves no stuck lock
    proc.communicate()
    for p in pids_of(ws):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    ws.fast_now.touch()
    again = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--run", run_id, "--json"],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr


def test_two_runs_on_the_same_agent_do_not_interfere(rook_workspace, tmp_path):
    ws = rook_workspace
    ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\nsleep 0.2\necho '{\"output\": \"ok\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}, "concurrency": 4})
    for i in range(8):
        ws.scenario({"id": f"s{i}", "goal": "g", "criteria": [{"contains": "ok"}]})
    procs = [start(ws) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    ids = {json.loads(o)["run"]["id"] for o, _ in outs}
    assert len(ids) == 2 and all(p.returncode == 0 for p in procs)


def test_unwritable_run_directory_is_a_clear_error(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("a.sh", "#!/bin/bash\necho '{\"output\": \"ok\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    ws.scenario({"id": "s", "goal": "g"})
    ws.runs_dir.rmdir()
    ws.runs_dir.write_text("not a directory")
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None  # the workspace is wrong; nothing ran
    assert "cannot create the run directory" in r.stderr and "is a file, not the runs folder" in r.stderr


def test_too_many_open_files_is_named_after_bounded_retries(rook_workspace, tmp_path):
    ws = rook_workspace
    ws.script("a.sh", "#!/bin/bash\necho '{\"output\": \"ok\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    code = (
        "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (12, 12)); "
        "sys.argv = ['rook', 'run', '-w', sys.argv[1], '--json']; runpy.run_module('rook_core', run_name='__main__')"
    )
    r = subprocess.run([sys.executable, "-c", code, str(ws.root)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in r.stderr
    if r.returncode == 0:
        pytest.skip("12 descriptors were enough on this machine")
    hook = json.loads(r.stdout)["scenarios"][0]["hooks"][0]
    assert "could not start the hook: Too many open files" in hook["diagnosis"]
    record = ws.record(json.loads(r.stdout)["run"]["id"], "s.1")
    assert sum("retrying" in n for n in record["hooks"][0]["details"]["process"]) == 3


def test_environment_pass_through_and_allow_list(rook_workspace, rook_cli, tmp_path, monkeypatch):
    ws = rook_workspace
    dump = tmp_path / "env"
    ws.script("a.sh", f"#!/bin/bash\n[ \"$1\" = execute ] || exit 0\nenv > {dump}\necho '{{\"output\": \"ok\"}}'\n")
    monkeypatch.setenv("UNRELATED_SECRET", "x")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("API_TOKEN", "t0k")
    base = {"id": "p", "hooks": {"execute": "scripts/a.sh"},
            "env": [{"variable": "API_TOKEN", "purpose": "token"}], "hook_env": {"EXTRA": "1"}}
    ws.profile(base)
    ws.scenario({"id": "s", "goal": "g"})
    rook_cli("run")
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert seen["UNRELATED_SECRET"] == "x"  # default: Rook's environment passes through
    ws.profile({**base, "inherit_env": ["PATH", "AWS_*"]})
    rook_cli("run")
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert "UNRELATED_SECRET" not in seen
    assert seen["AWS_REGION"] == "eu-west-1" and seen["API_TOKEN"] == "t0k" and seen["EXTRA"] == "1"
    assert seen["ROOK_HOOK"] == "execute" and "PATH" in seen


def test_an_env_variable_named_rook_something_reaches_the_hook(rook_workspace, rook_cli, tmp_path,
                                                                monkeypatch):
    """Rook's own ROOK_* settings stay out of hooks, but a variable the profile
    declares in env: was required before the run and then never passed on."""
    ws = rook_workspace
    dump = tmp_path / "env"
    ws.script("a.sh", f"#!/bin/bash\n[ \"$1\" = execute ] || exit 0\nenv > {dump}\necho '{{\"output\": \"ok\"}}'\n")
    monkeypatch.setenv("ROOK_API_KEY", "k3y-value-0123")
    monkeypatch.setenv("ROOK_UNRELATED", "x")
    base = {"id": "p", "hooks": {"execute": "scripts/a.sh"}, "inherit_env": ["PATH"],
            "env": [{"variable": "ROOK_API_KEY", "purpose": "the agent's key"}]}
    ws.profile(base)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    assert rook_cli("run").exit_code == 0
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert seen.get("ROOK_API_KEY") == "k3y-value-0123" and "ROOK_UNRELATED" not in seen
    # a name Rook sets per phase can never carry the user's value: refused when the profile loads
    ws.profile({**base, "env": [{"variable": "ROOK_SESSION", "purpose": "mine"}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and "env.0.variable" in r.stderr and "set by Rook" in r.stderr



@contextlib.contextmanager
def tiny_disk(tmp_path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted in ``tmp_path`` (the test skipped where none can
    be mounted), unmounted at the end."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def filled(filler: Path) -> Path:
    """``filler`` written until its disk is full."""
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_is_a_clear_error(tmp_path):
    """The workspace on a tiny tmpfs that fills up while the run records."""
    from rook_core.testing import Workspace

    with tiny_disk(tmp_path, "400k") as mnt:
        ws = Workspace(mnt / "ws")
        # each answer is 60 KB, so the records fill the 400 KB disk after a few scenarios
        ws.script("big.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\nprintf '{\"output\": \"%s\"}\\n' \"$(head -c 60000 /dev/zero | tr '\\0' x)\"\n")
        ws.profile({"id": "p", "hooks": {"execute": "scripts/big.sh"}})
        for i in range(12):
            ws.scenario({"id": f"s{i:02d}", "goal": "g", "criteria": [{"contains": "x"}]})
        r = subprocess.run([*ROOK, "run", "-w", str(ws.root)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
        assert "Traceback" not in r.stderr
        assert "No space left on device" in r.stderr
        assert "rook: error: cannot write" in r.stderr


def test_scenario_runs_a_full_disk_cuts_off_say_the_disk_was_full(tmp_path):
    """A full disk stops the run while other scenario runs are in flight: their
    records (written once the record that could not be written gave its room back)
    said `interrupted; ... finishes it`, as after a Ctrl-C nobody typed. They say
    why: the run stopped, unable to write its records (No space left on device),
    in the record's reason and the cut hook's diagnosis, still pending."""
    from rook_core.testing import Workspace

    with tiny_disk(tmp_path, "1m") as mnt:
        ws = Workspace(mnt / "ws")
        ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\ncat >/dev/null\n"
                  "case $ROOK_SCENARIO_ID in big) sleep 1; n=200000;; fast) sleep 3; n=1;;"
                  " *) sleep 60; n=1;; esac\n"
                  "printf '{\"output\": \"%s\"}\\n' \"$(head -c $n /dev/zero | tr '\\0' x)\"\n")
        ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
        # two at once: big's record cannot be written, which stops the run at once:
        # slow1, which took big's place, and fast are cut off
        for sid in ("big", "fast", "slow1", "slow2", "slow3", "slow4"):
            ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "x"}]})
        filler = filled(mnt / "filler")
        os.truncate(filler, filler.stat().st_size - 100_000)  # room for small records only
        r = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--concurrency", "2"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
        assert "big.1.json: No space left on device" in r.stderr and "Traceback" not in r.stderr
        said = "the run stopped, unable to write its records: No space left on device"
        (run_dir,) = ws.runs_dir.iterdir()
        record = json.loads((run_dir / "scenarios" / "slow1.1.json").read_text())
        assert record["reason"].startswith(f"interrupted ({said}); rook run --run "), record
        assert record.get("status") is None, record  # still pending: the resume runs it
        (hook,) = record["interrupted_attempts"][0]["hooks"]
        assert hook["status"] == "interrupted"
        assert hook["diagnosis"] == f"interrupted; its process group was killed ({said})"
        assert f"interrupted ({said})" in r.stderr  # its progress line


def test_a_record_the_disk_cannot_hold_stops_the_hooks_in_flight_at_once(tmp_path):
    """A finished run's record is written in the event loop's next idle turn; when the
    disk could not hold it, the failure waited for the next scenario run to start, and
    the runs already started went on (with --concurrency 1 the two slow hooks ran one
    after the other, two minutes past the failure). The run now stops at once, as at
    a signal: the hook in flight is stopped (SIGTERM, the grace, SIGKILL) and its attempt
    recorded as cut off by the full disk; the run waiting for a slot never starts."""
    from rook_core.testing import Workspace

    marks = tmp_path / "marks"
    marks.mkdir()
    with tiny_disk(tmp_path, "1m") as mnt:
        ws = Workspace(mnt / "ws")
        ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\ncat >/dev/null\n"
                  f"touch {marks}/$ROOK_SCENARIO_ID.started\n"
                  "case $ROOK_SCENARIO_ID in big) n=200000;; *) sleep 300; n=1;; esac\n"
                  "printf '{\"output\": \"%s\"}\\n' \"$(head -c $n /dev/zero | tr '\\0' x)\"\n")
        ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
        for sid in ("big", "slow1", "slow2"):
            ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "x"}]})
        filler = filled(mnt / "filler")
        os.truncate(filler, filler.stat().st_size - 100_000)  # room for small records only
        r = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--concurrency", "1"],
                           capture_output=True, text=True, timeout=100)
        assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
        assert "big.1.json: No space left on device" in r.stderr and "Traceback" not in r.stderr
        assert ("rook: a record of the run could not be written (No space left on device): "
                "stopping the hooks in flight (SIGTERM") in r.stderr
        assert not (marks / "slow2.started").exists()  # waiting for the slot: never started
        (run_dir,) = ws.runs_dir.iterdir()
        record = json.loads((run_dir / "scenarios" / "slow1.1.json").read_text())
        said = "the run stopped, unable to write its records: No space left on device"
        assert record["reason"].startswith(f"interrupted ({said}); rook run --run "), record
        (hook,) = record["interrupted_attempts"][0]["hooks"]
        assert hook["status"] == "interrupted", hook
        assert not (run_dir / "scenarios" / "slow2.1.json").exists()
        assert f"rook run --run {run_dir.name}" in r.stderr


def test_an_interrupt_that_finds_the_disk_full_still_names_the_command_that_finishes_the_run(
        tmp_path):
    """Ctrl-C while the disk is full: the interrupted attempts cannot be recorded.
    Rook says so and exits 1, as for any full disk, and, as there, names the run
    and the command that finishes it once space is freed (it said only `cannot
    write .../run.json`); that command finishes it."""
    from rook_core.testing import Workspace

    with tiny_disk(tmp_path, "1m") as mnt:
        ws = Workspace(mnt / "ws")
        ready = tmp_path / "ready"
        ws.script("slow.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\ncat >/dev/null\n"
                  f"[ -e {tmp_path}/fast ] || {{ touch {ready}; sleep 300; }}\n"
                  "echo '{\"output\": \"ok\"}'\n")
        ws.profile({"id": "p", "hooks": {"execute": "scripts/slow.sh"}})
        ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
        proc = subprocess.Popen([*ROOK, "run", "-w", str(ws.root)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        filler = filled(mnt / "filler")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, (proc.returncode, err)
        assert "No space left on device" in err and "Traceback" not in err
        (run_dir,) = ws.runs_dir.iterdir()
        assert f"rook run --run {run_dir.name}" in err, err
        filler.unlink()
        (tmp_path / "fast").touch()
        again = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--run", run_dir.name],
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr


def test_a_disk_full_before_the_run_starts_names_the_file_it_could_not_write(tmp_path):
    """A disk already full when rook run starts: the run's folder is made (a tmpfs
    folder takes no blocks) but not the few bytes of its lock file. Rook said
    only `rook: error: No space left on device` and exited 2, as for a usage
    error; now it names the file, exits 1 (no setting of the user's), and runs
    once there is room."""
    from rook_core.testing import Workspace

    with tiny_disk(tmp_path, "1m") as mnt:
        ws = Workspace(mnt / "ws")
        ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] && echo '{\"output\": \"ok\"}'\nexit 0\n")
        ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
        ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
        filler = filled(mnt / "filler")
        r = subprocess.run([*ROOK, "run", "-w", str(ws.root)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "Traceback" not in r.stderr
        assert "rook: error: cannot lock " in r.stderr and "/.lock: No space left on device" in r.stderr
        assert list(ws.runs_dir.iterdir()) == []  # the empty run folder it made is gone
        filler.unlink()
        again = subprocess.run([*ROOK, "run", "-w", str(ws.root)], capture_output=True, text=True,
                               timeout=120)
        assert again.returncode == 0, again.stderr


def test_a_run_json_the_disk_cannot_hold_leaves_no_run_folder(tmp_path):
    """A new run whose first run.json the disk cannot hold (a file size limit, here: the
    lock and profile.yaml fit, the manifest of 300 planned scenario runs does not) left
    a run folder with no run.json in it, which no command lists or resumes. Rook
    removes what the failed start made: nothing ran, nothing is lost."""
    import resource

    from rook_core.testing import Workspace

    ws = Workspace(tmp_path / "ws")
    ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] && echo '{\"output\": \"ok\"}'\nexit 0\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    for i in range(300):
        ws.scenario({"id": f"scenario-{i:03d}", "goal": "g", "criteria": [{"contains": "ok"}]})

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (8_000, 8_000))

    r = subprocess.run([*ROOK, "run", "-w", str(ws.root)], capture_output=True, text=True,
                       timeout=120, preexec_fn=small_files)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    assert "/run.json: File too large" in r.stderr, r.stderr
    assert list(ws.runs_dir.iterdir()) == []
    named = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--run-name", "nightly"],
                           capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    assert named.returncode == 1 and "/run.json: File too large" in named.stderr, named.stderr
    assert list(ws.runs_dir.iterdir()) == []
    again = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--run-name", "nightly", "-q"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert [p.name for p in ws.runs_dir.iterdir()] == ["nightly"]


def test_a_report_json_the_disk_cannot_hold_leaves_no_part_and_names_the_command(tmp_path):
    """A disk that holds every scenario record but not report.json, the run's largest
    file (a file size limit, `ulimit -f`, here: no mount needed): Rook said
    `rook: error: File too large` and exited 2, as for a usage error, and left
    `.report.json.PID.tmp` in the run folder, since closing the half-written file
    raised again. Now it names report.json, exits 1, leaves no part of it and names
    the command that finishes the run, which, given room, writes report.json whole."""
    import resource

    from rook_core.testing import Workspace

    ws = Workspace(tmp_path / "ws")
    ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\ng=$(cat)\n"
              "printf '{\"output\": \"ok %s %s\"}\\n' \"$g\" \"$(head -c 3000 /dev/zero | tr '\\0' x)\"\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    for i in range(30):  # each record about 7 KB, report.json about 100 KB
        ws.scenario({"id": f"s{i:02d}", "goal": f"g{i}", "criteria": [{"contains": "ok"}]})

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    r = subprocess.run([*ROOK, "run", "-w", str(ws.root)], capture_output=True, text=True,
                       timeout=120, preexec_fn=small_files)
    (run_dir,) = ws.runs_dir.iterdir()
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    assert f"rook: error: cannot write {run_dir / 'report.json'}: File too large" in r.stderr, r.stderr
    assert f"finish it with: rook run --run {run_dir.name} -w {ws.root}" in r.stderr, r.stderr
    assert sorted(p.name for p in run_dir.iterdir() if p.name != ".lock") == [
        "profile.yaml", "run.json", "scenarios", "state"]
    assert len(list((run_dir / "scenarios").iterdir())) == 30  # every record whole
    again = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--run", run_dir.name, "--json"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads((run_dir / "report.json").read_text())["summary"]["passed"] == 30


def printed_by_a_failed_run(ws, *extra):
    """What ``rook run`` (with ``extra``, failing: exit 1), ``rook runs show`` of
    that run and ``rook profile test p`` print, as bytes (stdout, stderr, the
    listing, the probe's output), with the run's id."""
    r = subprocess.run([*ROOK, "run", "-w", str(ws.root), *extra], capture_output=True, timeout=60)
    assert r.returncode == 1, r.stderr
    run_id = r.stdout.decode().rsplit("run ", 1)[1].split(":")[0]
    shown = subprocess.run([*ROOK, "runs", "show", "-w", str(ws.root), run_id],
                           capture_output=True, timeout=60)  # fmt: skip
    probe = subprocess.run([*ROOK, "profile", "test", "p", "-w", str(ws.root)],
                           capture_output=True, timeout=60)  # fmt: skip
    return run_id, [r.stdout, r.stderr, shown.stdout, probe.stdout + probe.stderr]


def test_terminal_control_bytes_a_hook_prints_never_reach_the_screen(rook_workspace):
    # a hook's stderr (its diagnosis) with ESC [2J (clear the screen), an OSC
    # title, BEL and NUL went raw into the progress line, the results table
    # and rook profile test's diagnosis: the hook could clear or retitle the
    # user's terminal
    ws = rook_workspace
    ws.script("agent.sh", r"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        [ "$ROOK_SCENARIO_ID" = ok ] && { echo '{"output": "ok"}'; exit 0; }
        printf 'boom\033[2J\033]0;pwned\007 nul\000 c1\302\233 end' >&2
        exit 3
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("bad", "ok"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    run_id, printed = printed_by_a_failed_run(ws)
    for out in printed:
        text = out.decode()
        assert "Traceback" not in text
        controls = [c for c in text if c != "\n" and (ord(c) < 32 or 0x7F <= ord(c) < 0xA0)]
        assert not controls, text
        assert "exited with code 3: boom\\x1b[2J\\x1b]0;pwned\\x07 nul\\x00 c1\\x9b end" in text, text
    report = json.loads(next(Path(ws.root).rglob(f"runs/{run_id}/report.json")).read_text())
    assert "\x1b[2J" in report["scenarios"][0]["reason"]  # the records keep what the hook printed


BIDI = "\u202e\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def test_bidi_controls_a_hook_prints_are_shown_as_escapes(rook_workspace, tmp_path):
    # A hook's U+202E (right-to-left override) and the other bidi controls went
    # raw to the progress line, the results table, rook runs show, rook profile
    # test and the Markdown report: "\u202eSSAP" showed as "PASS" on a failed
    # run's line, and the rest of the line read backwards. They are shown as
    # escapes, as the C0 and C1 controls are; the records keep what was printed.
    ws = rook_workspace
    ws.script("agent.py", r"""
        #!/usr/bin/env python3
        import sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            sys.stderr.write("boom \u202eSSAP\u202c \u2067x\u2069 \u200f.")
            sys.exit(3)
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    ws.scenario({"id": "bad", "goal": "g", "criteria": [{"contains": "ok"}]})
    md = tmp_path / "r.md"
    run_id, printed = printed_by_a_failed_run(ws, f"--report=markdown:{md}")
    seen = [*printed, md.read_bytes()]
    for out in seen:
        text = out.decode()
        assert not [c for c in text if c in BIDI], text
        assert "boom \\u202eSSAP\\u202c \\u2067x\\u2069 \\u200f." in text.replace("\\\\", "\\"), text
    report = json.loads(next(Path(ws.root).rglob(f"runs/{run_id}/report.json")).read_text())
    assert "\u202eSSAP" in report["scenarios"][0]["reason"]  # the records keep what the hook printed


def test_a_closed_standard_output_or_error_is_no_traceback(rook_workspace):
    # `rook run >&-` (or a supervisor that closes a stream): Python starts with
    # sys.stdout None, and the run that passed ended in an AttributeError
    # traceback and exit 1 once it flushed or printed its table.
    ws = rook_workspace
    ws.script("agent.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\ncat >/dev/null\n"
              "echo '{\"output\": \"ok\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    ws.scenario({"id": "f", "goal": "g", "criteria": [{"contains": "nope"}]})
    argv = " ".join(shlex.quote(a) for a in [*ROOK, "run", "-w", str(ws.root)])
    for closing in (">&-", "--json >&-", "2>&-"):
        r = subprocess.run(["bash", "-c", f"{argv} {closing}"], capture_output=True, timeout=60)
        assert r.returncode == 1, (closing, r.stderr.decode())  # f failed: the gate holds
        assert b"Traceback" not in r.stderr + r.stdout, r.stderr.decode()


def test_a_crashed_hook_is_summed_up_by_what_it_said_last(rook_workspace):
    # The table and progress line show a reason's first words: a Python or Node
    # hook that crashed showed "exited with code 1: Traceback (most recent call
    # last): File "/tmp/..." or "/tmp/...js:2", never the error itself.
    ws = rook_workspace
    ws.script("py.py", "#!/usr/bin/env python3\nimport sys\nsys.stdin.read()\n"
              "def answer():\n    raise ValueError('the desk is closed')\nanswer()\n")
    ws.script("js.js", "#!/usr/bin/env node\nfunction answer() { throw new Error('no desk'); }\n"
              "answer();\n")
    for sid, script in (("py", "scripts/py.py"), ("js", "scripts/js.js")):
        ws.profile({"id": sid, "hooks": {"execute": script}}, active=False)
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    said = {"py": "ValueError: the desk is closed", "js": "Error: no desk"}
    for sid, last in said.items():
        r = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--profile", sid, "--only", sid],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r.stderr
        head = f"execute turn 1 failed: exited with code 1: {last} (stderr: "
        assert head in r.stderr and head in r.stdout, (r.stdout, r.stderr)  # progress, table
        report = json.loads(next(ws.root.rglob("report.json")).read_text())  # one run: sid
        reason = report["scenarios"][0]["reason"]
        assert reason.startswith(head) and reason.count(last) == 2, reason  # the whole stderr too
        for f in ws.root.rglob("report.json"):
            f.unlink()


@pytest.mark.parametrize(
    "code, said, also",
    [
        ("require('fs').readFileSync('orders.json');",
         "Error: ENOENT: no such file or directory, open 'orders.json'", "code: 'ENOENT'"),
        ("require('./desk-client');", "Error: Cannot find module './desk-client'",
         "Require stack:"),
    ],
)
def test_a_node_error_with_properties_is_summed_up_by_its_message(rook_workspace, code, said,
                                                                   also):
    # Node prints an error's own properties (code, errno, path ...) after its
    # frames and closes them with a "}" line: the reason began "exited with
    # code 1: } (stderr: ...", for every failed fs call or refused connection
    # (or "- /path/js.js", the require stack of a module not found).
    ws = rook_workspace
    ws.script("js.js", f"#!/usr/bin/env node\n{code}\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/js.js"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = subprocess.run([*ROOK, "run", "-w", str(ws.root), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    reason = json.loads(r.stdout)["scenarios"][0]["reason"]
    assert reason.startswith(f"execute turn 1 failed: exited with code 1: {said} (stderr: "), reason
    assert also in reason  # the whole stderr follows


@pytest.mark.parametrize("lang", ["bash", "python", "node"])
def test_an_interrupt_gives_the_hook_sigterm_and_a_grace_so_its_cleanup_runs(rook_workspace, tmp_path, lang):
    """Ctrl-C SIGKILLed the hooks in flight at once (they are in sessions of their own:
    the terminal's SIGINT never reaches them), so a hook's cleanup on SIGTERM (ending a
    remote session, deleting a sandbox) never ran, where a timeout gives SIGTERM and a
    grace first. An interrupt does as a timeout does; a second signal still kills at once."""
    cleaned, ready = tmp_path / "cleaned", tmp_path / "ready"
    scripts = {
        "bash": ("t.sh", f"""#!/bin/bash
[ "$1" = execute ] || exit 0
trap 'sleep 0.3; echo done > {cleaned}; exit 143' TERM
touch {ready}
while :; do sleep 0.05; done
"""),
        "python": ("t.py", f"""#!/usr/bin/env python3
import signal, sys, time
if sys.argv[1] != "execute":
    sys.exit(0)
def bye(*_):
    time.sleep(0.3)
    open({str(cleaned)!r}, "w").write("done")
    sys.exit(143)
signal.signal(signal.SIGTERM, bye)
open({str(ready)!r}, "w").close()
while True:
    time.sleep(0.05)
"""),
        "node": ("t.cjs", f"""#!/usr/bin/env node
if (process.argv[2] !== "execute") process.exit(0);
const fs = require("fs");
process.on("SIGTERM", () => setTimeout(() => {{
  fs.writeFileSync({json.dumps(str(cleaned))}, "done"); process.exit(143);
}}, 300));
fs.writeFileSync({json.dumps(str(ready))}, "");
setInterval(() => {{}}, 50);
"""),
    }
    name, body = scripts[lang]
    rook_workspace.script(name, body)
    rook_workspace.profile({"id": "p", "hooks": {"execute": f"scripts/{name}"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    proc = start(rook_workspace)
    assert wait_for(ready.exists), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert cleaned.read_text().strip() == "done", err  # its trap ran, to its end
    record = rook_workspace.record(json.loads(out)["run"]["id"], "s.1")
    (cut,) = record["interrupted_attempts"][0]["hooks"]
    notes = cut["details"].get("process", [])
    assert any(n.startswith("sent SIGTERM to process group") for n in notes), cut
    assert not any("SIGKILL" in n for n in notes), cut  # it left in its grace


def test_the_command_that_finishes_an_interrupted_run_keeps_its_reports(slow_ws, tmp_path):
    """An interrupted run printed `finish it with: rook run --run ID -w WS`, without
    the run's --report flags: the run finished by copying it wrote no report, and
    CI read an old one (--json stays out: its document goes where standard output
    was redirected, which a command cannot say). The command printed (as typed,
    from where Rook ran), the reason stored in the records and the one `rook runs
    show` says (absolute paths, usable from anywhere) keep them."""
    ws = slow_ws
    cwd = tmp_path / "ci"
    (cwd / "out").mkdir(parents=True)
    proc = subprocess.Popen(
        [*ROOK, "run", "-w", str(ws.root), "--json", "--report", "json:out/report.json",
         "--report", "junit:it's.xml"],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: len(pids_of(ws)) == 3), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    run_id = json.loads(out)["run"]["id"]
    typed = (f"rook run --run {run_id} -w {ws.root} --report json:out/report.json "
             f"--report 'junit:it'\"'\"'s.xml'")
    assert f"finish it with: {typed}\n" in err, err
    stored = (f"rook run --run {run_id} -w {ws.root} --report json:{cwd}/out/report.json "
              f"--report 'junit:{cwd}/it'\"'\"'s.xml'")
    assert ws.record(run_id, "a3.1")["reason"] == f"interrupted; {stored} finishes it"
    shown = subprocess.run([*ROOK, "runs", "show", run_id, "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=60)
    assert f"finish it with: {stored}\n" in shown.stderr, shown.stderr
    # the command as printed finishes the run and writes its reports whole
    ws.fast_now.touch()
    (cwd / "out" / "report.json").unlink()
    again = subprocess.run([*ROOK, *shlex.split(typed)[1:], "--json"], cwd=cwd, capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["summary"]["passed"] == 4
    assert json.loads((cwd / "out" / "report.json").read_text())["summary"]["passed"] == 4
    assert 'failures="0"' in (cwd / "it's.xml").read_text()


def test_a_hook_that_signals_its_process_group_stops_only_itself(rook_workspace, rook_cli):
    """A hook runs in a session of its own: `kill -TERM 0` in it reaches its own
    processes, never Rook, which records that hook as killed by the signal and
    runs the other scenarios (reliability.md#interrupts)."""
    ws = rook_workspace
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        [ "$(cat)" = rude ] && kill -TERM 0
        echo '{"output": "ok"}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("a1", "a2"):
        ws.scenario({"id": sid, "goal": "rude" if sid == "a1" else "fine",
                     "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"a1": "error", "a2": "passed"}
    assert "signal 15" in r.report["scenarios"][0]["reason"], r.report["scenarios"][0]
    assert "interrupted" not in r.stderr


def test_commands_run_again_and_again_in_one_process_leave_no_descriptor_open(
        rook_workspace, rook_cli, tmp_path):
    # A program that runs Rook's commands in its own process (an embedder, an IDE
    # plugin, a test suite) gathered a descriptor per call: rook profile test's
    # spooled entry (a deleted file under /tmp/rook-profile-test-*), and the
    # report.json a failing or interrupted rook run, rook diff (and any command
    # that exits with a code) read, held by the frame sys.exit unwound until the
    # cyclic garbage collector ran, if ever. Each is closed as its command ends.
    import gc

    rook_workspace.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{"output": "hello"}'
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hello"}]})
    rook_workspace.scenario({"id": "f", "goal": "g", "criteria": [{"contains": "bye"}]})
    commands = {
        "profile test": ["profile", "test"],
        "run (failing)": ["run", "-q"],
        "shard": ["run", "-q", "--run-name", "sh", "--shard", "1/1"],
        "merge": ["merge", "--run", "sh"],
        "report": ["report", "latest", f"--report=junit:{tmp_path}/r.xml"],
        "runs show": ["runs", "show", "latest"],
        "diff": ["diff", "latest~1", "latest"],
    }
    for argv in commands.values():  # once first: what loads once and stays is not a leak
        rook_cli(*argv)

    def descriptors():
        return {n: os.readlink(f"/proc/self/fd/{n}") for n in os.listdir("/proc/self/fd")
                if os.path.exists(f"/proc/self/fd/{n}")}

    was = gc.isenabled()
    gc.disable()  # what is in a cycle stays until the collector runs, if it runs
    try:
        for name, argv in commands.items():
            before = descriptors()
            for _ in range(3):
                rook_cli(*argv)
            left = sorted(v for n, v in descriptors().items() if n not in before)
            assert left == [], (name, left)
    finally:
        if was:
            gc.enable()
