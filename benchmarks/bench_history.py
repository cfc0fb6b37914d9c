"""Target 5: history.

* `rook runs` over 1,000 runs <= 1 s. One real run of 5 scenarios is made,
  then its directory is cloned 999 times under new ids (see new_ids and clone_run).
* `rook diff A B` of two 10,000-scenario runs <= 2 s. Both runs are real;
  in B the hook fails every scenario whose id ends in 7, so there is a
  genuine diff to compute.
* `rook report A --report json:P --report junit:P2` re-rendering the
  10,000-scenario run <= 3 s.

Commands that have not landed yet (click's "No such command") are skipped
with a "not available yet" line.

TO FINISH WHEN THE RUN STORE LANDS: check clone_run against what rook really
writes under runs/<run-id>/ (a derived index, if any, must be rebuilt after
cloning), and the argument order of `rook runs`, `rook diff` and `rook report`.
"""

import os
import re
import shutil
from pathlib import Path

from common import (
    FLIP_HOOK,
    Ctx,
    Row,
    Workspace,
    error,
    info,
    interleaved,
    judged,
    last_line,
    make_workspace,
    not_available,
    read_report,
    rook_run,
    skipped,
    timed,
    ws_opts,
)

NAME = "history"
RUNS, RUNS_S, DIFF_S, REPORT_S = 1000, 1.0, 2.0, 3.0
TEXT_SUFFIXES = {".json", ".jsonl", ".yaml", ".yml", ".txt", ".md", ".xml", ".html", ".log", ""}


def run_dir_of(ws: Workspace) -> Path:
    """The directory of the run just made: from out.json, else the newest run dir."""
    run = (read_report(ws.root / "out.json") or {}).get("run", {})
    if run.get("dir"):
        return Path(run["dir"])
    if run.get("id"):
        return ws.runs_dir / run["id"]
    return max((d for d in ws.runs_dir.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)


def new_ids(old: str, count: int, runs_dir: Path) -> list[str]:
    """`count` unused ids shaped like `old`: its trailing digits counted on
    (20261130-125006-337992 -> ...-337993, ...), else `old-c0001`, ..."""
    digits = re.search(r"\d+$", old)
    if digits:
        head, width = old[: digits.start()], len(digits.group())
        candidates = (
            f"{head}{(int(digits.group()) + i) % 10**width:0{width}d}" for i in range(1, 10**width)
        )
    else:
        candidates = (f"{old}-c{i:04d}" for i in range(1, 10**6))
    ids = []
    for candidate in candidates:
        if len(ids) == count:
            break
        if not (runs_dir / candidate).exists():
            ids.append(candidate)
    return ids


def clone_run(src: Path, new_id: str) -> Path:
    """Copy a run directory under a new id, rewriting the old id wherever it
    appears in text files (top-level "id", "run.id", paths, ...). Run ids
    are long unique strings, so a plain replacement is safe."""
    old = src.name
    assert len(old) >= 8, f"run id {old!r} too short to rewrite safely"
    dst = src.parent / new_id
    shutil.copytree(src, dst)
    for f in list(dst.rglob("*")):
        if f.is_file() and f.suffix in TEXT_SUFFIXES:
            try:
                text = f.read_text()
            except UnicodeDecodeError:
                continue
            if old in text:
                f.write_text(text.replace(old, new_id))
        if old in f.name:
            f.rename(f.with_name(f.name.replace(old, new_id)))
    return dst


def rook(ctx: Ctx, ws: Workspace, *args, stdout=None):
    sub, *rest = args
    return timed(ctx.rook + [sub, *ws_opts(ws), *rest], stdout=stdout)


def checked(t, what, ok_codes=(0,)):
    if t.rc not in ok_codes:
        t.problem = f"rook {what} exited {t.rc}: {last_line(t.stderr)}"
    return t


def run(ctx: Ctx) -> list[Row]:
    n = 2000 if ctx.quick else 10000
    targets = {"runs": f"≤ {RUNS_S:g} s", "diff": f"≤ {DIFF_S:g} s", "report": f"≤ {REPORT_S:g} s"}
    measures = {
        "runs": f"rook runs, {RUNS:,} runs",
        "diff": f"rook diff A B, {n:,} scenarios each",
        "report": f"rook report json+junit, {n:,} scenarios",
    }
    if not ctx.rook:
        return [skipped(NAME, measures[k], ctx.rook_note, targets[k]) for k in measures]
    return list_runs(ctx, measures["runs"], targets["runs"]) + diff_and_report(
        ctx, n, measures, targets
    )


def list_runs(ctx: Ctx, measure: str, target: str) -> list[Row]:
    """`rook runs` over one real run cloned to RUNS runs."""
    ws = make_workspace(ctx.dir(NAME) / "ws-runs", 5)
    if not_available(rook(ctx, ws, "runs")):
        return [skipped(NAME, measure, "not available yet", target)]
    seed = rook_run(ctx, ws)
    if seed.problem:
        return [error(NAME, measure, target, seed.problem)]
    src = run_dir_of(ws)
    have = sum(1 for d in ws.runs_dir.iterdir() if d.is_dir())
    for new_id in new_ids(src.name, RUNS - have, ws.runs_dir):
        clone_run(src, new_id)
    m = interleaved({"runs": lambda: checked(rook(ctx, ws, "runs"), "runs")}, ctx.reps(3))
    return [judged(NAME, measure, m["runs"].seconds, "s", RUNS_S, problem=m["runs"].problem)]


def diff_and_report(ctx: Ctx, n: int, measures: dict, targets: dict) -> list[Row]:
    """`rook diff A B` and `rook report A` over two real n-scenario runs."""
    ws = make_workspace(ctx.dir(NAME) / "ws-big", n, hook=FLIP_HOOK, bundle=ctx.bundle)
    wanted = [k for k in ("diff", "report") if not not_available(rook(ctx, ws, k, "--help"))]
    rows = [
        skipped(NAME, measures[k], "not available yet", targets[k])
        for k in ("diff", "report")
        if k not in wanted
    ]
    if not wanted:
        return rows
    a = rook_run(ctx, ws, 8)
    a_id = run_dir_of(ws).name
    b = rook_run(ctx, ws, 8, env=dict(os.environ, BENCH_FLIP="1"), expect_all_pass=False)
    b_id = run_dir_of(ws).name
    rows.append(info(NAME, f"rook run, {n:,} scenarios, c=8 (run A)", a.seconds, "s"))
    problem = a.problem or b.problem or (a_id == b_id and "could not tell the two runs apart")
    if problem:
        return rows + [error(NAME, measures[k], targets[k], problem) for k in wanted]
    out = ctx.dir(f"{NAME}/reports")
    files = [out / "r.json", out / "r.xml"]
    argv = {
        # exit 1 may well mean "regressions found"; only usage errors count as failures
        "diff": ["diff", a_id, b_id],
        "report": ["report", a_id, "--report", f"json:{files[0]}", "--report", f"junit:{files[1]}"],
    }
    commands = {k: lambda k=k: checked(rook(ctx, ws, *argv[k]), k, (0, 1)) for k in wanted}
    m = interleaved(commands, ctx.reps(3))
    if "report" in m and not m["report"].problem:
        if not all(f.is_file() and f.stat().st_size for f in files):
            m["report"].runs[0].problem = "rook report did not write both files"
    limits = {"diff": DIFF_S, "report": REPORT_S}
    for k in wanted:
        rows.append(judged(NAME, measures[k], m[k].seconds, "s", limits[k], problem=m[k].problem))
    return rows
