"""Target 2: waiting hooks.

256 scenarios whose hook sleeps 1 s, at concurrency 128: the ideal wall time
is 2 s (two waves). Throughput as a share of the ideal is 2 s / wall time,
with rook's start-up included (timed from the outside). Target: >= 85 %.
The floor (a 128-thread pool) is shown for comparison.
"""

import math

from common import (
    SLEEP_HOOK,
    Ctx,
    Row,
    floor,
    info,
    interleaved,
    judged,
    make_workspace,
    rook_run,
    skipped,
)

NAME = "waiting"
N, C, LIMIT = 256, 128, 85.0


def run(ctx: Ctx) -> list[Row]:
    ws = make_workspace(ctx.dir(NAME) / "ws", N, hook=SLEEP_HOOK, bundle=ctx.bundle)
    ideal = math.ceil(N / C) * 1.0
    commands = {"floor": lambda: floor(ctx, ws, C)}
    if ctx.rook:
        commands["rook"] = lambda: rook_run(ctx, ws, C)
    m = interleaved(commands, ctx.reps(5))
    fl = m["floor"]
    rows = [
        info(NAME, f"floor, {N} hooks sleeping 1 s, c={C}", fl.seconds, "s", problem=fl.problem),
        info(NAME, "floor, share of ideal throughput", 100 * ideal / fl.seconds, "%"),
    ]
    measure = f"rook run, share of ideal throughput (ideal {ideal:.0f} s)"
    if not ctx.rook:
        return rows + [skipped(NAME, measure, ctx.rook_note, f"≥ {LIMIT:g} %")]
    rk = m["rook"]
    share = 100 * ideal / rk.seconds
    return rows + [
        info(NAME, f"rook run, {N} hooks sleeping 1 s, c={C}", rk.seconds, "s"),
        judged(NAME, measure, share, "%", LIMIT, at_least=True, problem=rk.problem),
    ]
