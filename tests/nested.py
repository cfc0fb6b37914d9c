"""A pytest session started by a test, as a real ``pytest`` process (a plugin
author's suite; one test of this suite run as CI runs it)."""

from __future__ import annotations

import sys
from pathlib import Path


def pytest_argv(tmp_path: Path, *args: str) -> list[str]:
    """``python -m pytest ARGS``, its temporary folders in the test's ``tmp_path``.

    Without ``--basetemp`` a session numbers its folder in the user's shared
    ``/tmp/pytest-of-USER`` and, as it ends, deletes the oldest unlocked ones
    there: those of every session that has ended, a whole earlier run of this
    suite among them (a hundred thousand files, minutes on a loaded machine),
    inside the test's time (pytest-timeout's 120 s)."""
    return [sys.executable, "-m", "pytest", "--basetemp", str(tmp_path / "basetemp"), *args]
