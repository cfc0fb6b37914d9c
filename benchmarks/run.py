"""Run Rook's performance benchmarks and compare them with their targets.

    python benchmarks/run.py [--quick] [--only NAME,...] [--rook CMD] [--keep] [--scratch DIR]

Prints a table (figure, target, PASS/MISS) and writes it as markdown to
benchmarks/results.md. Exits 1 when a target is missed or a benchmark
errored. See benchmarks/README.md for what each benchmark measures.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HERE, Ctx, Row, last_line, timed  # noqa: E402

BENCHMARKS = ["startup", "overhead", "waiting", "memory", "history", "promptfoo"]


def find_rook(given: str | None) -> tuple[list[str] | None, str]:
    """The rook command and a note on it; None when there is no working rook."""
    if given:
        cmd = shlex.split(given)
    else:
        found = shutil.which("rook")
        if not found:
            return None, "rook not on PATH (or pass --rook CMD)"
        cmd = [found]
        # A pyenv shim adds ~60 ms to every call; time the real console script.
        if Path(found).parent.name == "shims" and shutil.which("pyenv"):
            real = subprocess.run(["pyenv", "which", "rook"], capture_output=True, text=True)
            if real.returncode == 0 and real.stdout.strip():
                cmd = [real.stdout.strip()]
    t = timed(cmd + ["--version"], timeout=60)
    if t.rc != 0:
        return None, f"`{shlex.join(cmd)} --version` failed: {last_line(t.stderr)}"
    return cmd, shlex.join(cmd)


def table(rows: list[Row]) -> str:
    head = ["benchmark", "measure", "figure", "target", "result", "note"]
    body = [[r.bench, r.measure, r.figure, r.target, r.status, r.note] for r in rows]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return "\n".join(lines)


def version_of(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return (p.stdout.strip() or p.stderr.strip()).splitlines()[0] if p.returncode == 0 else "?"
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def update_docs(page: Path, env_line: str, table_text: str) -> None:
    """Rewrite the figures section of docs/performance.md (only a full run does)."""
    if not page.exists():
        return
    text = page.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    body = f"\n_Measured {env_line}._\n\n{table_text}\n"
    page.write_text(head + START + body + END + tail, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts, one repetition")
    ap.add_argument("--only", help="comma-separated: " + ",".join(BENCHMARKS))
    ap.add_argument("--rook", help="rook command (default: `rook` on PATH)")
    ap.add_argument(
        "--bundle",
        type=int,
        default=1,
        metavar="N",
        help="write N scenarios per YAML file as a list (default 1: one per file)",
    )
    ap.add_argument(
        "--scratch", type=Path, help="parent of the scratch directory (default: system temp)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--out", type=Path, default=HERE / "results.md")
    ap.add_argument(
        "--docs",
        type=Path,
        default=HERE.parent / "docs" / "performance.md",
        help="page whose figures section a full run rewrites (between the figures markers)",
    )
    args = ap.parse_args()

    names = args.only.split(",") if args.only else BENCHMARKS
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    rook, note = find_rook(args.rook)
    print(f"rook: {note}", file=sys.stderr)
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="rook-bench-", dir=args.scratch))
    # Rook's cache in the scratch directory: yours stays as it was (the runs'
    # fresh workspaces would add tens of MB of entries to it), and two builds
    # compared one after the other never invalidate each other's entries.
    os.environ.setdefault("ROOK_CACHE_DIR", str(scratch / "rook-cache"))
    ctx = Ctx(rook=rook, rook_note=note, quick=args.quick, scratch=scratch, bundle=args.bundle)

    rows: list[Row] = []
    started = time.strftime("%Y-%m-%d %H:%M")
    try:
        for name in names:
            print(f"== {name}", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            module = importlib.import_module(f"bench_{name}")
            try:
                new = module.run(ctx)
            except Exception as exc:  # one broken benchmark must not lose the others
                new = [
                    Row(
                        name,
                        "(benchmark crashed)",
                        None,
                        "",
                        "",
                        "ERROR",
                        f"{type(exc).__name__}: {exc}",
                    )
                ]
            rows += new
            print(table(new).split("\n", 2)[2], file=sys.stderr)
            print(f"   ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    finally:
        if args.keep:
            print(f"scratch kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    pf = HERE / ".promptfoo/node_modules/promptfoo/package.json"
    rook_version = version_of(rook + ["--version"]) if rook else "(none)"
    pf_version = version_of(["node", "-p", f"require({str(pf)!r}).version"])
    env_line = (
        f"{started}; {os.cpu_count()} cores; Python {platform.python_version()}; "
        f"node {version_of(['node', '--version'])}; rook: {rook_version}; "
        f"promptfoo {pf_version}{'; --quick' if args.quick else ''}"
    )
    text = table(rows)
    print("\n" + text)
    args.out.write_text(
        "# Benchmark results\n\n"
        "Written by `python benchmarks/run.py`; see benchmarks/README.md.\n\n"
        f"{env_line}\n\n{text}\n"
    )
    print(f"\nwritten to {args.out}")
    if args.docs and not args.only and not args.quick:
        update_docs(args.docs, env_line, text)
        print(f"figures written into {args.docs}")
    return 1 if any(r.status in ("MISS", "ERROR") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
