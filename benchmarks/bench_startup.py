"""Target 3: start-up.

`rook --version` <= 150 ms, and a one-scenario `rook run` <= 300 ms plus the
hook's own time (one spawn of the hook with its goal on stdin, timed here).
`python -c pass` with the same interpreter is shown for scale.
"""

import os
import statistics
import subprocess
import time

from common import Ctx, Row, interleaved, judged, make_workspace, rook_run, skipped, timed

NAME = "startup"
VERSION_MS, RUN_MS = 150, 300


def hook_ms(script, reps: int = 20) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run([script, "execute"], input=b"hello 1", capture_output=True, check=True,
                       env=dict(os.environ, ROOK_TURN="1"))
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def run(ctx: Ctx) -> list[Row]:
    ws = make_workspace(ctx.dir(NAME) / "ws", 1)
    python = interleaved({"py": lambda: timed([ctx.python, "-c", "pass"])}, 10)["py"]
    hook = hook_ms(ws.script)
    rows = [
        Row(NAME, "python -c pass (same interpreter)", 1000 * python.seconds, "ms"),
        Row(NAME, "the hook alone (spawn, stdin, stdout)", hook, "ms"),
    ]
    if not ctx.rook:
        return rows + [
            skipped(NAME, "rook --version", ctx.rook_note, f"≤ {VERSION_MS} ms"),
            skipped(NAME, "rook run, 1 scenario, minus the hook", ctx.rook_note,
                    f"≤ {RUN_MS} ms"),
        ]

    def version():
        t = timed(ctx.rook + ["--version"])
        t.problem = None if t.rc == 0 else f"exited {t.rc}"
        return t

    m = interleaved({"version": version, "run": lambda: rook_run(ctx, ws)},
                    ctx.reps(10), warmup=True)
    return rows + [
        judged(NAME, "rook --version", 1000 * m["version"].seconds, "ms", VERSION_MS,
               problem=m["version"].problem),
        Row(NAME, "rook run, 1 scenario", 1000 * m["run"].seconds, "ms"),
        judged(NAME, "rook run, 1 scenario, minus the hook", 1000 * m["run"].seconds - hook,
               "ms", RUN_MS, problem=m["run"].problem),
    ]
