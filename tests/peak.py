"""A ``rook`` command's peak memory, measured from outside it."""

from __future__ import annotations

import subprocess
import sys

MEASURE = (
    "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
    "sys.stderr.write(f'\\npeak {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}'); "
    "sys.exit(p.returncode)"
)
"""A fresh Python whose only child is the command: its children's peak is the command's."""


def run_rook(*args: str, timeout: float) -> tuple[subprocess.CompletedProcess[str], str, float]:
    """``python -m rook_core ARGS``: the finished process, its standard error (the
    measurement taken off) and its peak RSS in MiB."""
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "rook_core", *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    err, _, peak = proc.stderr.rpartition("\npeak ")
    return proc, err, int(peak) / 1024
