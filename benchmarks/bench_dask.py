"""The dask executor against the default one, on scenarios that wait.

    python benchmarks/bench_dask.py [--scenarios 200] [--threads 8,50] [--reps 1]

200 scenarios whose execute hook sleeps 1 s. For each N in --threads, a
LocalCluster of 2 process workers x N threads (started here, outside the
timing) runs them with ``rook run --executor dask --scheduler ADDRESS -j 2N``;
the default executor runs the same workspace with ``-j 2N``. Each command is
timed from the outside (interpreter start-up included), interleaved, the
median of --reps kept. Reported: wall seconds, share of the ideal (200 / 2N
waves of 1 s), and the ratio dask / local (1.0: as fast; above: slower).
Also timed once: ``--executor dask`` with no scheduler, so Rook starts (and
stops) its own LocalCluster inside the run.

Needs the dask extra (pip install 'rook-harness[dask]') and ``rook`` on PATH.
Scale-out pays off when one machine cannot hold the waiting hooks (CPU-bound
hooks, or thousands in flight); this figure is its overhead on one machine.
"""

from __future__ import annotations

import argparse
import logging
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOK = """#!/bin/sh
read -r goal
sleep 1
printf '{"output":"ok %s"}\\n' "$goal"
"""


def make_workspace(root: Path, count: int) -> Path:
    agent = root / ".testmuai/rook/projects/bench/agents/a"
    for sub in ("profiles", "scripts", "scenarios", "runs"):
        (agent / sub).mkdir(parents=True, exist_ok=True)
    hook = agent / "scripts/hook.sh"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    (agent / "profiles/p.yaml").write_text("id: p\nname: p\nhooks:\n  execute: scripts/hook.sh\n")
    (agent / "profiles/active").write_text("p")
    for i in range(count):
        (agent / f"scenarios/s{i:04d}.yaml").write_text(
            f"id: s{i:04d}\ngoal: g{i}\ncriteria:\n  - contains: ok\n"
        )
    return root


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", type=int, default=200)
    ap.add_argument("--threads", default="8,50", help="threads per worker, comma-separated")
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()
    try:
        import dask
        import distributed
    except ImportError:
        raise SystemExit("needs the dask extra: pip install 'rook-harness[dask]'") from None
    rook = shutil.which("rook")
    if rook is None:
        raise SystemExit("rook is not on PATH (pip install -e .)")
    n = args.scenarios
    rows = []
    with tempfile.TemporaryDirectory(prefix="rook-bench-dask-") as tmp:
        ws = str(make_workspace(Path(tmp) / "ws", n))
        base = [rook, "run", "-w", ws, "-q"]
        for threads in [int(t) for t in args.threads.split(",")]:
            c = 2 * threads
            ideal = math.ceil(n / c) * 1.0
            with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
                cluster = distributed.LocalCluster(
                    n_workers=2,
                    threads_per_worker=threads,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address="127.0.0.1:0",
                    silence_logs=logging.ERROR,
                )
            try:
                local, remote = [], []
                for _ in range(args.reps):
                    local.append(timed([*base, "-j", str(c)]))
                    remote.append(
                        timed(
                            [
                                *base,
                                "-j",
                                str(c),
                                "--executor",
                                "dask",
                                "--scheduler",
                                cluster.scheduler_address,
                            ]
                        )
                    )
            finally:
                cluster.close()
            lo, da = statistics.median(local), statistics.median(remote)
            rows.append((f"2 x {threads}", c, ideal, lo, da))
        own = timed([*base, "-j", str(2 * int(args.threads.split(",")[-1])), "--executor", "dask"])
    print(
        f"{n} scenarios, execute hook sleeps 1 s; Python {sys.version.split()[0]}, "
        f"dask {dask.__version__}, {args.reps} rep(s), median"
    )
    print()
    print(
        "| LocalCluster | -j | ideal s | local s | dask s | local % of ideal "
        "| dask % of ideal | dask / local |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, c, ideal, lo, da in rows:
        print(
            f"| {name} | {c} | {ideal:.0f} | {lo:.2f} | {da:.2f} | {100 * ideal / lo:.0f} % "
            f"| {100 * ideal / da:.0f} % | {da / lo:.2f} |"
        )
    print()
    print(
        f"--executor dask with no --scheduler (Rook starts a LocalCluster), "
        f"-j {rows[-1][1]}: {own:.2f} s"
    )


if __name__ == "__main__":
    main()
