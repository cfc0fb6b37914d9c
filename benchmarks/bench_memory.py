"""Target 4: memory.

Peak RSS of `rook run --json` over 1,000 and 10,000 trivial scenarios at
concurrency 8. Targets: <= 150 MB at 10,000, and no growth proportional to
the scenario count, read here as: 10x the scenarios adds at most 20 MB
(about 2 KB per extra scenario; keeping every full result in memory would
not fit in that). The floor's peak is shown for scale.
"""

from common import Ctx, Row, floor, info, judged, make_workspace, rook_run, skipped

NAME = "memory"
PEAK_MB, GROWTH_MB, C = 150.0, 20.0, 8


def run(ctx: Ctx) -> list[Row]:
    small, big = (500, 5000) if ctx.quick else (1000, 10000)
    rows, rook = [], {}
    for n in (small, big):
        ws = make_workspace(ctx.dir(NAME) / f"ws{n}", n, bundle=ctx.bundle)
        fl = floor(ctx, ws, C)
        rows.append(
            info(NAME, f"floor peak RSS, {n:,} scenarios", fl.rss_mb, "MB", problem=fl.problem)
        )
        if ctx.rook:
            rook[n] = rk = rook_run(ctx, ws, C)
            rows.append(info(NAME, f"rook run, {n:,} scenarios, c={C}", rk.seconds, "s"))
    peak = f"rook peak RSS, {big:,} scenarios"
    if not ctx.rook:
        return rows + [skipped(NAME, peak, ctx.rook_note, f"≤ {PEAK_MB:g} MB")]
    problem = rook[small].problem or rook[big].problem
    growth = rook[big].rss_mb - rook[small].rss_mb
    return rows + [
        info(NAME, f"rook peak RSS, {small:,} scenarios", rook[small].rss_mb, "MB"),
        judged(NAME, peak, rook[big].rss_mb, "MB", PEAK_MB, problem=problem),
        judged(
            NAME, f"rook RSS growth {small:,} → {big:,}", growth, "MB", GROWTH_MB, problem=problem
        ),
        info(NAME, "  per extra scenario", 1024 * growth / (big - small), "KB"),
    ]
