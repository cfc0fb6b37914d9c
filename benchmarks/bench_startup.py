"""Target 3: start-up.

`rook --version` <= 150 ms, and a one-scenario `rook run` <= 300 ms plus the
hook's own time (one spawn of the hook with its goal on stdin, timed here).
The judged run is the command as a user types it, which ends with the results
table (tabulate); the same run with `--json`, as the other benchmarks run it,
is shown beside it. `python -c pass` with the same interpreter is shown for
scale.
"""

import os
import statistics
import subprocess
import time

from common import Ctx, Row, info, interleaved, judged, make_workspace, rook_run, skipped, timed

NAME = "startup"
VERSION_MS, RUN_MS = 150, 300


def hook_ms(script, reps: int = 20) -> float:
    env = dict(os.environ, ROOK_TURN="1")
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run([script, "execute"], input=b"hello 1", capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def version(ctx: Ctx):
    t = timed(ctx.rook + ["--version"])
    t.problem = None if t.rc == 0 else f"exited {t.rc}"
    return t


def run(ctx: Ctx) -> list[Row]:
    ws = make_workspace(ctx.dir(NAME) / "ws", 1)
    python = interleaved({"py": lambda: timed([ctx.python, "-c", "pass"])}, 10)["py"]
    hook = hook_ms(ws.script)
    rows = [
        info(NAME, "python -c pass (same interpreter)", 1000 * python.seconds, "ms"),
        info(NAME, "the hook alone (spawn, stdin, stdout)", hook, "ms"),
    ]
    measure = "rook run, 1 scenario, minus the hook"
    if not ctx.rook:
        return rows + [
            skipped(NAME, "rook --version", ctx.rook_note, f"≤ {VERSION_MS} ms"),
            skipped(NAME, measure, ctx.rook_note, f"≤ {RUN_MS} ms"),
        ]
    commands = {
        "version": lambda: version(ctx),
        "run": lambda: rook_run(ctx, ws, table=True),
        "json": lambda: rook_run(ctx, ws),
    }
    m = interleaved(commands, ctx.reps(10), warmup=True)
    v_ms, run_ms = 1000 * m["version"].seconds, 1000 * m["run"].seconds
    json_ms = 1000 * m["json"].seconds
    return rows + [
        judged(NAME, "rook --version", v_ms, "ms", VERSION_MS, problem=m["version"].problem),
        info(NAME, "rook run, 1 scenario", run_ms, "ms", note="with its results table"),
        info(NAME, "rook run --json, 1 scenario", json_ms, "ms", problem=m["json"].problem),
        judged(NAME, measure, run_ms - hook, "ms", RUN_MS, problem=m["run"].problem),
    ]
