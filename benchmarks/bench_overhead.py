"""Target 1: overhead vs the floor.

300 single-turn scenarios whose execute hook is a trivial `sh` script, at
concurrency 1 and 8: `rook run` wall time divided by the floor's (floor.py
spawning the same hooks with the same argv, environment and stdin, parsing
their JSON; started as its own Python process and timed from the outside,
just like rook). Target: ratio <= 1.3 at both concurrencies.

Also shown, for information: where the difference lies, split into a fixed
cost and a cost per scenario. A one-scenario workspace, run the same way,
gives each command's fixed cost (interpreter start, imports, set-up and
teardown, plus one hook); the 300-scenario time less that, over the 299 more
scenarios, gives its cost per scenario. Then the floor doing the disk work the
SPEC asks of every scenario run (a state directory made, a record written to a temporary
file and renamed), and rook's ratio to that; and the CPU time each spends
(itself and its hooks: user + system, from wait4), which bounds the wall time
once the hooks in flight keep every core busy.

And the in-process bound (bound.py, Linux): the same hooks driven the way the
SPEC has Rook drive them (one process, one asyncio loop, the hooks spawned and
watched as Rook does), with the SPEC's files and nothing else. Its ratio to the
floor is what that design and those files cost; rook's ratio to it is Rook's
own work (plugins, lifecycle, judging, redaction, reports, start-up).
"""

import os

from common import (
    Ctx,
    Measure,
    Row,
    bound,
    floor,
    have_pidfds,
    info,
    interleaved,
    judged,
    make_workspace,
    rook_run,
    skipped,
)

NAME = "overhead"
LIMIT = 1.3


def run(ctx: Ctx) -> list[Row]:
    n = 100 if ctx.quick else 300
    ws = make_workspace(ctx.dir(NAME) / "ws", n, bundle=ctx.bundle)
    one = make_workspace(ctx.dir(NAME) / "ws1", 1, bundle=ctx.bundle)
    rows = []
    pidfds = have_pidfds()
    for c in (1, 8):
        commands = {
            "floor": lambda c=c: floor(ctx, ws, c),
            "floor+records": lambda c=c: floor(ctx, ws, c, records=True),
            "floor, 1": lambda c=c: floor(ctx, one, c),
        }
        if pidfds:
            commands["bound"] = lambda c=c: bound(ctx, ws, c)
            commands["bound, 1"] = lambda c=c: bound(ctx, one, c)
        if ctx.rook:
            commands["rook"] = lambda c=c: rook_run(ctx, ws, c)
            commands["rook, 1"] = lambda c=c: rook_run(ctx, one, c)
            commands["rook, elsewhere"] = lambda c=c: rook_run(ctx, ws, c, elsewhere=True)
        m = interleaved(commands, ctx.reps(7), warmup=True)
        fl = m["floor"]
        fr = m["floor+records"]
        rows.append(info(NAME, f"floor, {n} sh hooks, c={c}", fl.seconds, "s", problem=fl.problem))
        rows.append(info(NAME, f"floor + record files, c={c}", fr.seconds, "s", problem=fr.problem))
        bd = m.get("bound")
        if bd is not None:
            rows.append(info(NAME, f"in-process bound, c={c}", bd.seconds, "s", problem=bd.problem))
            rows.append(
                info(NAME, f"in-process bound / floor, c={c}", bd.seconds / fl.seconds, "x")
            )
        measure = f"rook run / floor, c={c}"
        if not ctx.rook:
            rows.append(skipped(NAME, measure, ctx.rook_note, f"≤ {LIMIT:g}"))
            continue
        rk = m["rook"]
        ratio = rk.seconds / fl.seconds
        rows.append(info(NAME, f"rook run, {n} sh hooks, c={c}", rk.seconds, "s"))
        rows.append(judged(NAME, measure, ratio, "x", LIMIT, problem=rk.problem or fl.problem))
        rows += split_rows(c, n, fl, m["floor, 1"], rk, m["rook, 1"])
        away = m["rook, elsewhere"]
        rows.append(
            info(
                NAME,
                f"rook run / floor, started in another folder, c={c}",
                away.seconds / fl.seconds,
                "x",
                problem=away.problem,
                note="rook run -w DIR, as the README",
            )
        )
        with_records = rk.seconds / fr.seconds
        rows.append(info(NAME, f"rook run / (floor + record files), c={c}", with_records, "x"))
        if bd is not None:
            rows += bound_rows(c, n, bd, m["bound, 1"], rk, m["rook, 1"])
        cores = os.cpu_count() or 1
        rows.append(info(NAME, f"floor, CPU time with its hooks, c={c}", fl.cpu, "s"))
        rows.append(info(NAME, f"rook run, CPU time with its hooks, c={c}", rk.cpu, "s"))
        rows.append(
            info(
                NAME,
                f"rook run / floor, CPU time, c={c}",
                rk.cpu / fl.cpu,
                "x",
                note=f"wall time cannot be below CPU time / {cores} cores",
            )
        )
    return rows


def split_rows(c: int, n: int, fl: Measure, fl1: Measure, rk: Measure, rk1: Measure) -> list[Row]:
    """The fixed cost (a one-scenario run) and the cost of each further scenario,
    for the floor and for rook; how much of rook's extra time each explains."""
    per_floor = (fl.seconds - fl1.seconds) / (n - 1) * 1e6
    per_rook = (rk.seconds - rk1.seconds) / (n - 1) * 1e6
    fixed_extra = rk1.seconds - fl1.seconds
    total_extra = rk.seconds - fl.seconds
    share = f"{fixed_extra / total_extra:.0%} of rook's extra time" if total_extra > 0 else ""
    problem = fl1.problem or rk1.problem
    return [
        info(
            NAME,
            f"fixed cost: floor, one scenario, c={c}",
            fl1.seconds * 1000,
            "ms",
            problem=problem,
        ),
        info(
            NAME,
            f"fixed cost: rook run, one scenario, c={c}",
            rk1.seconds * 1000,
            "ms",
            problem=problem,
            note=share,
        ),
        info(NAME, f"per further scenario: floor, c={c}", per_floor, "µs"),
        info(NAME, f"per further scenario: rook run, c={c}", per_rook, "µs"),
        info(NAME, f"per further scenario: rook run / floor, c={c}", per_rook / per_floor, "x"),
    ]


def bound_rows(c: int, n: int, bd: Measure, bd1: Measure, rk: Measure, rk1: Measure) -> list[Row]:
    """Rook against the in-process bound: the whole run, the fixed cost and the
    cost per further scenario."""
    per_bound = (bd.seconds - bd1.seconds) / (n - 1) * 1e6
    per_rook = (rk.seconds - rk1.seconds) / (n - 1) * 1e6
    problem = bd1.problem or rk1.problem
    return [
        info(NAME, f"rook run / in-process bound, c={c}", rk.seconds / bd.seconds, "x"),
        info(
            NAME,
            f"fixed cost: in-process bound, one scenario, c={c}",
            bd1.seconds * 1000,
            "ms",
            problem=problem,
        ),
        info(NAME, f"per further scenario: in-process bound, c={c}", per_bound, "µs"),
        info(
            NAME,
            f"per further scenario: rook run / in-process bound, c={c}",
            per_rook / per_bound,
            "x",
        ),
    ]
