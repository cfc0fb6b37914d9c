"""Shared pieces of the Rook benchmarks: workspaces, timing from the outside,
peak RSS, and the result rows that run.py prints.

Every command is timed from the outside (time.perf_counter around the
whole child process, interpreter start-up included). Its peak RSS is GNU
time's %M when /usr/bin/time exists, else os.wait4's ru_maxrss: the largest
resident set of the child or of any descendant it waited for.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLOOR = HERE / "floor.py"
BOUND = HERE / "bound.py"
PROJECT, AGENT, PROFILE = "bench", "a", "p"

# The goal arrives on stdin under Rook; promptfoo's exec provider passes it as
# argv[1] and closes stdin, so `read` just sees end of file there.
TRIVIAL_HOOK = """#!/bin/sh
read -r goal
printf '{"output":"ok %s"}\\n' "$ROOK_TURN"
"""
SLEEP_HOOK = """#!/bin/sh
read -r goal
sleep 1
printf '{"output":"ok %s"}\\n' "$ROOK_TURN"
"""
# With BENCH_FLIP=1 in the environment, scenarios whose id ends in 7 fail:
# used to give `rook diff` two runs that really differ.
FLIP_HOOK = """#!/bin/sh
read -r goal
out=ok
if [ -n "$BENCH_FLIP" ]; then case "$ROOK_SCENARIO_ID" in *7) out=nope ;; esac; fi
printf '{"output":"%s %s"}\\n' "$out" "$ROOK_TURN"
"""


# --------------------------------------------------------------------------
# Workspaces


@dataclass
class Workspace:
    root: Path
    count: int

    @property
    def agent_dir(self) -> Path:
        return self.root / ".testmuai/rook/projects" / PROJECT / "agents" / AGENT

    @property
    def script(self) -> Path:
        return self.agent_dir / "scripts/hook.sh"

    @property
    def runs_dir(self) -> Path:
        return self.agent_dir / "runs"

    def sid(self, i: int) -> str:
        return f"s{i:0{max(4, len(str(self.count)))}d}"


def make_workspace(
    root: Path, count: int, hook: str = TRIVIAL_HOOK, concurrency: int = 1, bundle: int = 1
) -> Workspace:
    """Write a fresh workspace with `count` single-turn scenarios.

    bundle=1 writes one file per scenario (the safe form); bundle=N writes
    YAML lists of N scenario mappings per file, for a Rook that accepts them.
    """
    if root.exists():
        shutil.rmtree(root)
    ws = Workspace(root.resolve(), count)
    profiles = ws.agent_dir / "profiles"
    scenarios = ws.agent_dir / "scenarios"
    for d in (profiles, scenarios, ws.script.parent):
        d.mkdir(parents=True)
    (profiles / "active").write_text(PROFILE + "\n")
    (profiles / f"{PROFILE}.yaml").write_text(
        f"name: bench\nid: {PROFILE}\nhooks:\n  execute: scripts/hook.sh\n"
        f"concurrency: {concurrency}\n"
    )
    ws.script.write_text(hook)
    ws.script.chmod(0o755)

    def doc(i: int, item: bool) -> str:
        lines = [f"id: {ws.sid(i)}", f'goal: "hello {i}"', "criteria:", '  - contains: "ok"']
        if item:  # one mapping of a YAML list
            lines = ["- " + lines[0]] + ["  " + line for line in lines[1:]]
        return "\n".join(lines) + "\n"

    if bundle <= 1:
        for i in range(1, count + 1):
            (scenarios / f"{ws.sid(i)}.yaml").write_text(doc(i, False))
    else:
        for start in range(1, count + 1, bundle):
            ids = range(start, min(start + bundle, count + 1))
            (scenarios / f"{ws.sid(start)}-list.yaml").write_text(
                "".join(doc(i, True) for i in ids)
            )
    return ws


# --------------------------------------------------------------------------
# Timing


@dataclass
class Timed:
    seconds: float
    rc: int
    rss_mb: float
    stdout: Path | None
    stderr: str  # the last few KB
    problem: str | None = None  # set by the caller's check
    cpu: float = 0.0  # user + system seconds of the command and every process it waited for


def timed(
    argv: list,
    *,
    env: dict | None = None,
    cwd: Path | None = None,
    stdout: Path | None = None,
    timeout: float = 900,
) -> Timed:
    """Run argv once, timed from the outside; stdout goes to a file (or nowhere)."""
    argv = [str(a) for a in argv]
    with (
        open(stdout or os.devnull, "wb") as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as rss,
    ):
        if GNU_TIME:
            argv = [GNU_TIME, "-f", "%M", "-o", rss.name, *argv]
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        timer = threading.Timer(timeout, _kill_group, (proc.pid,))
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(max(0, err.seek(0, 2) - 4096))
        tail = err.read().decode(errors="replace")
        lines = rss.read().split()
    rss_kb = int(lines[-1]) if GNU_TIME and lines and lines[-1].isdigit() else usage.ru_maxrss
    if proc.returncode < 0 and -proc.returncode == signal.SIGKILL:
        tail += f"\n[benchmark] killed after {timeout:.0f} s"
    cpu = usage.ru_utime + usage.ru_stime
    return Timed(seconds, proc.returncode, rss_kb / 1024, stdout, tail, cpu=cpu)


def _gnu_time() -> str | None:
    try:
        ok = subprocess.run(["/usr/bin/time", "-f", "%M", "true"], capture_output=True).returncode
    except OSError:
        return None
    return "/usr/bin/time" if ok == 0 else None


# A child's peak RSS from wait4 starts at its parent's RSS when it forks (the
# kernel keeps the high-water mark across exec), so a big harness would leak
# into the figures; GNU time is a tiny parent that reports the child's own.
GNU_TIME = _gnu_time()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass
class Measure:
    seconds: float  # median
    rss_mb: float  # largest
    runs: list[Timed] = field(default_factory=list)

    @property
    def cpu(self) -> float:
        """Median CPU seconds (the command and its hooks)."""
        return statistics.median(t.cpu for t in self.runs)

    @property
    def problem(self) -> str | None:
        return next((t.problem for t in self.runs if t.problem), None)


def interleaved(commands: dict, reps: int, warmup: bool = False) -> dict[str, Measure]:
    """Run each labelled zero-argument callable (returning Timed) `reps` times,
    side by side, alternating the order every repetition; medians per label."""
    labels = list(commands)
    if warmup:
        for label in labels:
            commands[label]()
    done: dict[str, list[Timed]] = {label: [] for label in labels}
    for rep in range(reps):
        for label in labels if rep % 2 == 0 else reversed(labels):
            done[label].append(commands[label]())
    return {
        label: Measure(
            statistics.median(t.seconds for t in runs), max(t.rss_mb for t in runs), runs
        )
        for label, runs in done.items()
    }


# --------------------------------------------------------------------------
# Floor and rook commands


@dataclass
class Ctx:
    rook: list[str] | None  # None when no working `rook` was found
    rook_note: str
    quick: bool
    scratch: Path
    bundle: int = 1
    python: str = sys.executable

    def reps(self, full: int) -> int:
        return 1 if self.quick else full

    def dir(self, name: str) -> Path:
        path = self.scratch / name
        path.mkdir(parents=True, exist_ok=True)
        return path


def floor(
    ctx: Ctx, ws: Workspace, concurrency: int, count: int | None = None, records: bool = False
) -> Timed:
    """floor.py; ``records``: plus the state directory and record file of each run.
    Started in the workspace, as rook_run is: its hooks run where Rook runs them."""
    argv = [ctx.python, FLOOR, ws.script, ws.root, count or ws.count, concurrency]
    t = timed(argv + (["records"] if records else []), cwd=ws.root)
    if t.rc != 0:
        t.problem = f"floor exited {t.rc}: {last_line(t.stderr)}"
    return t


def have_pidfds() -> bool:
    """Whether bound.py can run here: the kernel has pidfds (Linux 5.3+) and
    no policy forbids them, as Rook's own check (rook_core.process_pidfd)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def bound(ctx: Ctx, ws: Workspace, concurrency: int) -> Timed:
    """bound.py: the same hooks from one asyncio loop, with the SPEC's files,
    and nothing else. Started in the workspace, as floor and rook_run are."""
    t = timed([ctx.python, BOUND, ws.script, ws.root, ws.count, concurrency], cwd=ws.root)
    if t.rc != 0:
        t.problem = f"bound exited {t.rc}: {last_line(t.stderr)}"
    return t


def ws_opts(ws: Workspace) -> list[str]:
    return ["--workspace", str(ws.root), "--project", PROJECT, "--agent", AGENT]


def rook_run(
    ctx: Ctx,
    ws: Workspace,
    concurrency: int | None = None,
    *,
    env: dict | None = None,
    expect_all_pass: bool = True,
    table: bool = False,
    elsewhere: bool = False,
) -> Timed:
    """`rook run ... --json > out.json` started in the workspace (as a user runs
    it from their project), checked: exit 0 and every scenario passed.
    ``table``: without ``--json``, as a user types it: the progress and the
    results table (tabulate) to ``out.txt``; checked by the exit code.
    ``elsewhere``: started in the workspace's parent folder (``rook run -w
    DIR``, as the README's first command), its hooks still run in the workspace."""
    assert ctx.rook is not None
    argv = ctx.rook + ["run", *ws_opts(ws)]
    if concurrency is not None:
        argv += ["--concurrency", str(concurrency)]
    out = ws.root / ("out.txt" if table else "out.json")
    cwd = ws.root.parent if elsewhere else ws.root
    t = timed(argv if table else argv + ["--json"], stdout=out, env=env, cwd=cwd)
    if expect_all_pass:
        if t.rc != 0:
            t.problem = f"rook run exited {t.rc}: {last_line(t.stderr)}"
        elif not table:
            passed = (read_report(out) or {}).get("summary", {}).get("passed")
            if passed is not None and passed != ws.count:
                t.problem = f"rook run passed {passed} of {ws.count}"
    elif t.rc not in (0, 1):
        t.problem = f"rook run exited {t.rc}: {last_line(t.stderr)}"
    return t


def read_report(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(no output)"


def not_available(t: Timed) -> bool:
    """The subcommand has not landed yet (click's usage error)."""
    return t.rc != 0 and "No such command" in t.stderr


# --------------------------------------------------------------------------
# Results


@dataclass
class Row:
    bench: str
    measure: str
    value: float | None
    unit: str  # s, ms, µs, MB, x (ratio), % or ""
    target: str = ""
    status: str = "INFO"  # PASS, MISS, INFO, SKIP, ERROR
    note: str = ""

    @property
    def figure(self) -> str:
        if self.value is None:
            return "—"
        fmt = {
            "s": "{:.3f} s",
            "ms": "{:.0f} ms",
            "µs": "{:.0f} µs",
            "MB": "{:.1f} MB",
            "x": "{:.2f}",
            "%": "{:.0f} %",
            "KB": "{:.2f} KB",
        }.get(self.unit, "{:g}")
        return fmt.format(self.value)


def info(bench, measure, value, unit, *, problem=None, note="") -> Row:
    """A row without a target (ERROR when the command behind it failed)."""
    return Row(bench, measure, value, unit, "", "ERROR" if problem else "INFO", problem or note)


def error(bench: str, measure: str, target: str, problem: str) -> Row:
    return Row(bench, measure, None, "", target, "ERROR", problem)


def judged(
    bench: str,
    measure: str,
    value: float,
    unit: str,
    limit: float,
    *,
    at_least: bool = False,
    problem: str | None = None,
) -> Row:
    """A row with a target: value <= limit (or >= limit with at_least)."""
    target = f"{'≥' if at_least else '≤'} {limit:g}{'' if unit == 'x' else ' ' + unit}"
    if problem:
        return Row(bench, measure, value, unit, target, "ERROR", problem)
    ok = value >= limit if at_least else value <= limit
    return Row(bench, measure, value, unit, target, "PASS" if ok else "MISS")


def skipped(bench: str, measure: str, why: str, target: str = "") -> Row:
    return Row(bench, measure, None, "", target, "SKIP", why)
