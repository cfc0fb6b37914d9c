"""Target 4: memory.

Peak RSS of `rook run --json` (largest resident set of rook or any process it
waited for, from os.wait4) over 1,000 and 10,000 trivial scenarios at
concurrency 8. Targets: <= 150 MB at 10,000, and no growth proportional to
the scenario count, read here as: 10x the scenarios adds at most 20 MB
(about 2 KB per extra scenario; keeping every full result in memory would
not fit in that). The floor's peak is shown for scale.
"""

from common import Ctx, Row, floor, judged, make_workspace, rook_run, skipped

NAME = "memory"
PEAK_MB, GROWTH_MB, C = 150.0, 20.0, 8


def run(ctx: Ctx) -> list[Row]:
    small, big = (500, 5000) if ctx.quick else (1000, 10000)
    rows, peaks = [], {}
    for n in (small, big):
        ws = make_workspace(ctx.dir(NAME) / f"ws{n}", n, bundle=ctx.bundle)
        fl = floor(ctx, ws, C)
        rows.append(Row(NAME, f"floor peak RSS, {n:,} scenarios", fl.rss_mb, "MB",
                        status="ERROR" if fl.problem else "INFO", note=fl.problem or ""))
        if ctx.rook:
            rk = rook_run(ctx, ws, C)
            peaks[n] = rk
            rows.append(Row(NAME, f"rook run, {n:,} scenarios, c={C}", rk.seconds, "s"))
            if n == small:
                rows.append(Row(NAME, f"rook peak RSS, {n:,} scenarios", rk.rss_mb, "MB"))
    if not ctx.rook:
        return rows + [skipped(NAME, f"rook peak RSS, {big:,} scenarios", ctx.rook_note,
                               f"≤ {PEAK_MB:.0f} MB")]
    problem = peaks[small].problem or peaks[big].problem
    growth = peaks[big].rss_mb - peaks[small].rss_mb
    return rows + [
        judged(NAME, f"rook peak RSS, {big:,} scenarios", peaks[big].rss_mb, "MB", PEAK_MB,
               problem=problem),
        judged(NAME, f"rook RSS growth {small:,} → {big:,}", growth, "MB", GROWTH_MB,
               problem=problem),
        Row(NAME, "  per extra scenario", 1024 * growth / (big - small), "KB"),
    ]
