"""Target 5: history.

* `rook runs` over 1,000 runs <= 1 s. One real run of 5 scenarios is made,
  then its directory is cloned 999 times under new ids (see clone_run).
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
import shutil
from pathlib import Path

from common import (
    FLIP_HOOK, Ctx, Row, Workspace, interleaved, judged, last_line, make_workspace, not_available,
    read_report, rook_run, skipped, timed, ws_opts,
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


def clone_run(src: Path, new_id: str) -> Path:
    """Copy a run directory under a new id, rewriting the old id wherever it
    appears in text files (top-level "id", "run.id", paths, ...). Run ids
    are long unique strings, so a plain replacement is safe."""
    old = src.name
    assert len(old) >= 8, f"run id {old!r} too short to rewrite safely"
    dst = src.parent / new_id
    shutil.copytree(src, dst)
    for f in dst.rglob("*"):
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
        t.problem = f"{what} exited {t.rc}: {last_line(t.stderr)}"
    return t


def run(ctx: Ctx) -> list[Row]:
    targets = {"runs": f"≤ {RUNS_S:.0f} s", "diff": f"≤ {DIFF_S:.0f} s",
               "report": f"≤ {REPORT_S:.0f} s"}
    measures = {"runs": f"rook runs, {RUNS:,} runs",
                "diff": "rook diff A B, 10,000 scenarios each",
                "report": "rook report json+junit, 10,000 scenarios"}
    if not ctx.rook:
        return [skipped(NAME, measures[k], ctx.rook_note, targets[k]) for k in measures]
    reps = ctx.reps(3)
    rows = []

    # rook runs over 1,000 runs
    ws = make_workspace(ctx.dir(NAME) / "ws-runs", 5)
    probe = rook(ctx, ws, "runs")
    if not_available(probe):
        rows.append(skipped(NAME, measures["runs"], "not available yet", targets["runs"]))
    else:
        seed = rook_run(ctx, ws)
        if seed.problem:
            rows.append(Row(NAME, measures["runs"], None, "", targets["runs"], "ERROR",
                            seed.problem))
        else:
            src = run_dir_of(ws)
            have = sum(1 for d in ws.runs_dir.iterdir() if d.is_dir())
            for i in range(RUNS - have):
                clone_run(src, f"{src.name}-c{i:04d}")
            m = interleaved({"runs": lambda: checked(rook(ctx, ws, "runs"), "rook runs")}, reps)
            rows.append(judged(NAME, measures["runs"], m["runs"].seconds, "s", RUNS_S,
                               problem=m["runs"].problem))

    # diff and report over two 10,000-scenario runs
    n = 2000 if ctx.quick else 10000
    measures["diff"] = f"rook diff A B, {n:,} scenarios each"
    measures["report"] = f"rook report json+junit, {n:,} scenarios"
    big = make_workspace(ctx.dir(NAME) / "ws-big", n, hook=FLIP_HOOK, bundle=ctx.bundle)
    available = {k: not not_available(rook(ctx, big, k, "--help")) for k in ("diff", "report")}
    for k in ("diff", "report"):
        if not available[k]:
            rows.append(skipped(NAME, measures[k], "not available yet", targets[k]))
    if not any(available.values()):
        return rows
    a = rook_run(ctx, big, 8)
    a_dir = run_dir_of(big)
    b = rook_run(ctx, big, 8, env=dict(os.environ, BENCH_FLIP="1"),
                 expect_all_pass=False)
    b_dir = run_dir_of(big)
    problem = a.problem or b.problem or (a_dir == b_dir and "could not tell the two runs apart")
    rows.append(Row(NAME, f"rook run, {n:,} scenarios, c=8 (run A)", a.seconds, "s"))
    if problem:
        return rows + [Row(NAME, measures[k], None, "", targets[k], "ERROR", problem)
                       for k in available if available[k]]
    out = ctx.dir(NAME) / "reports"
    commands = {}
    if available["diff"]:
        # exit 1 may well mean "regressions found"; only usage errors count as failures
        commands["diff"] = lambda: checked(
            rook(ctx, big, "diff", a_dir.name, b_dir.name), "rook diff", (0, 1))
    if available["report"]:
        commands["report"] = lambda: checked(rook(
            ctx, big, "report", a_dir.name, "--report", f"json:{out / 'r.json'}",
            "--report", f"junit:{out / 'r.xml'}"), "rook report", (0, 1))
    m = interleaved(commands, reps)
    for k, limit in (("diff", DIFF_S), ("report", REPORT_S)):
        if k in m:
            problem = m[k].problem
            if k == "report" and not problem and not all(
                    (out / f).is_file() and (out / f).stat().st_size for f in ("r.json", "r.xml")):
                problem = "rook report did not write both files"
            rows.append(judged(NAME, measures[k], m[k].seconds, "s", limit, problem=problem))
    return rows
