"""In-process cost of Rook's hook process layer next to a bare subprocess.run loop.

    python benchmarks/bench_spawn.py [-n 300] [--reps 5] [--busy N]

Spawns a trivial `sh` hook (reads the goal on stdin, prints one JSON line)
``n`` times, writing a goal and reading stdout and stderr each time:

* floor: ``subprocess.run`` one after the other, and in a pool of 8 threads;
* rook: :func:`rook_core.process.run_process` on one event loop, one at a
  time (c=1) and 8 at a time (c=8): the pidfd path as shipped (children
  started by ``os.posix_spawn``), the pidfd path with children started by
  ``subprocess.Popen`` (as for a hook run in another directory), and the
  asyncio subprocess-transport fallback used where pidfds are missing.

Prints milliseconds per hook (median of ``--reps`` interleaved repetitions)
and each rook figure's ratio to the floor at the same concurrency.
``--busy N`` keeps N CPU-bound processes running meanwhile, as on a shared
machine. Stdlib only; not part of run.py (it measures a layer, not a
`rook run`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rook_core import process, process_pidfd  # noqa: E402

HOOK = """#!/bin/sh
read -r goal
printf '{"output":"ok %s"}\\n' "$goal"
"""


def floor(argv: list[str], n: int, c: int) -> float:
    def one(i: int) -> None:
        p = subprocess.run(argv, input=f"hello {i}".encode(), capture_output=True)
        assert p.returncode == 0 and p.stdout.startswith(b'{"output":"ok'), p

    t0 = time.perf_counter()
    if c == 1:
        for i in range(n):
            one(i)
    else:
        with ThreadPoolExecutor(c) as pool:
            list(pool.map(one, range(n)))
    return time.perf_counter() - t0


def rook(argv: list[str], n: int, c: int, pidfd: bool, posix_spawn: bool = True) -> float:
    env = dict(os.environ)

    async def main() -> None:
        todo = iter(range(n))

        async def worker() -> None:
            for i in todo:
                r = await process.run_process(
                    argv, env=env, stdin=f"hello {i}".encode(), timeout=30
                )
                assert r.returncode == 0 and r.stdout.startswith(b'{"output":"ok'), r

        await asyncio.gather(*(worker() for _ in range(c)))

    saved = process._PIDFD, process_pidfd.POSIX_SPAWN
    process._PIDFD, process_pidfd.POSIX_SPAWN = pidfd, posix_spawn
    try:
        t0 = time.perf_counter()
        asyncio.run(main())
        return time.perf_counter() - t0
    finally:
        process._PIDFD, process_pidfd.POSIX_SPAWN = saved


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=300, help="hooks per measurement (default 300)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes alongside")
    args = ap.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        return measure(args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def measure(args: argparse.Namespace) -> int:
    process.use_fast_child_watcher()  # as `rook run` does
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp) / "hook.sh"
        hook.write_text(HOOK)
        hook.chmod(0o755)
        argv = [str(hook), "execute"]
        commands = {}
        for c in (1, 8):
            commands[f"floor, subprocess.run, c={c}"] = lambda c=c: floor(argv, args.n, c)
            if process._PIDFD:
                commands[f"rook run_process, pidfd, c={c}"] = lambda c=c: rook(
                    argv, args.n, c, True
                )
                commands[f"  same, started by Popen, c={c}"] = lambda c=c: rook(
                    argv, args.n, c, True, False
                )
            commands[f"rook run_process, fallback, c={c}"] = lambda c=c: rook(
                argv, args.n, c, False
            )
        times: dict[str, list[float]] = {k: [] for k in commands}
        for fn in commands.values():  # warm-up
            fn()
        for rep in range(args.reps):
            order = list(commands.items())
            for name, fn in order if rep % 2 == 0 else reversed(order):
                times[name].append(fn())
    busy = f"; {args.busy} CPU-bound processes alongside" if args.busy else ""
    print(f"{args.n} hooks, median of {args.reps}; Python {sys.version.split()[0]}{busy}")
    floors = {}
    for name, ts in times.items():
        ms = 1000 * statistics.median(ts) / args.n
        c = name.rsplit("=", 1)[1]
        if name.startswith("floor"):
            floors[c] = ms
            print(f"  {name:<36} {ms:6.3f} ms/hook")
        else:
            print(f"  {name:<36} {ms:6.3f} ms/hook  {ms / floors[c]:5.2f}x floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
