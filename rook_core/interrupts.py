"""Ctrl-C, SIGTERM and SIGHUP (the terminal closed) during a run.

The first signal stops starting scenarios and cancels the work in flight: each
hook's process group is killed, its scenario run is recorded as interrupted
(not finished, so ``rook run --run ID`` does it again), and the run ends
normally — reports for what finished, the run id, the command that resumes
it, exit 130. A second signal kills every hook process at once and exits 130
immediately.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable

# SIGHUP too: a closed terminal or a dropped ssh session would otherwise end
# rook at once, leaving its hooks running with no timeout and their attempts
# unrecorded
SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Interrupts:
    def __init__(self, task: asyncio.Task[object], kill_all: Callable[[], object]) -> None:
        self.task = task
        self.kill_all = kill_all
        self.count = 0
        self.signal_name: str | None = None
        self._loop = asyncio.get_running_loop()
        self._installed: list[int] = []
        for sig in SIGNALS:
            try:
                self._loop.add_signal_handler(sig, self._on_signal, sig)
                self._installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (embedded use): no signal handling

    def _on_signal(self, sig: int) -> None:
        self.count += 1
        if self.count == 1:
            self.signal_name = signal.Signals(sig).name
            self.task.cancel()
            _say(
                f"\nrook: {self.signal_name}: stopping the hooks in flight and writing what "
                "finished (again to exit at once)\n"
            )
        else:
            self.kill_all()
            _say("rook: interrupted twice: exiting now\n")
            os._exit(130)

    @property
    def interrupted(self) -> bool:
        return self.count > 0

    def remove(self) -> None:
        for sig in self._installed:
            try:
                self._loop.remove_signal_handler(sig)
            except (RuntimeError, ValueError):
                pass
        self._installed.clear()


def _say(text: str) -> None:
    """Tell standard error, if it is still there (after SIGHUP a terminal's
    writes fail): the signal is handled either way."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
