"""Ctrl-C, SIGTERM and SIGHUP (the terminal closed) during a run.

The first signal stops starting scenarios and cancels the work in flight: each
hook's process group gets SIGTERM and, as at a timeout, the grace to act on it
(its cleanup: the hook runs in a session of its own, which the terminal's Ctrl-C
never reaches), then SIGKILL; its scenario run is recorded as interrupted
(not finished, so ``rook run --run ID`` does it again), and the run ends
normally — reports for what finished, the run id, the command that resumes
it, exit 130. A second signal kills every hook process at once and exits 130
immediately. Once the hooks are done (:func:`after_hooks`), a signal stops
nothing that is left: the record and the reports are still written, and the
run exits 130; a second one exits 130 at once. A signal that comes while a
reporter's own code writes a report (:func:`reporter_cut`) ends it there: the
reports not yet written are skipped, each named with the command that writes
it again; so is a reporter that raises ``KeyboardInterrupt`` itself
(:func:`note_cut`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

# SIGHUP too: a closed terminal or a dropped ssh session would otherwise end
# rook at once, leaving its hooks running with no timeout and their attempts
# unrecorded
SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Interrupts:
    def __init__(
        self, task: asyncio.Task[object], kill_all: Callable[[], object], finish: str = ""
    ) -> None:
        self.task = task
        self.kill_all = kill_all
        self.finish = finish
        """The command that finishes the run, said as a second signal exits."""
        self.count = 0
        self.signal_name: str | None = None
        self.failure: BaseException | None = None
        """What stopped the run when no signal did (:meth:`stop`): a file it could not write."""
        self._loop = asyncio.get_running_loop()
        self._installed: list[int] = []
        self._before = {sig: signal.getsignal(sig) for sig in SIGNALS}
        for sig in SIGNALS:
            if self._before[sig] == signal.SIG_IGN:  # nohup rook run, rook run & in a script
                continue
            try:
                self._loop.add_signal_handler(sig, self._on_signal, sig)
                self._installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (embedded use): no signal handling

    def _on_signal(self, sig: int) -> None:
        self.count += 1
        if self.count == 1:
            from .process import KILL_GRACE_SECONDS  # loaded: a run's hooks use it

            self.signal_name = signal.Signals(sig).name
            self.task.cancel()
            _say(
                f"\nrook: {self.signal_name}: stopping the hooks in flight (SIGTERM, then "
                f"SIGKILL after {KILL_GRACE_SECONDS:g} s) and writing what finished (again "
                "to exit at once)\n"
            )
        else:
            self.kill_all()
            _say("rook: interrupted twice: exiting now" + _finishing(self.finish) + "\n")
            _exit_now()

    def stop(self, failure: BaseException) -> None:
        """Stop the run as a first signal does, no signal come: ``failure`` (a record the
        disk could not hold) is raised once the hooks in flight were stopped (SIGTERM,
        the grace, SIGKILL) and their attempts recorded. A no-op once the run is stopping."""
        if self.count or self.failure is not None or self.task.done():
            return
        from .process import KILL_GRACE_SECONDS  # loaded: a run's hooks use it

        self.failure = failure
        self.task.cancel()
        why = str(failure).rpartition(": ")[2] or str(failure)
        _say(
            f"\nrook: a record of the run could not be written ({why}): stopping the hooks "
            f"in flight (SIGTERM, then SIGKILL after {KILL_GRACE_SECONDS:g} s)\n"
        )

    @property
    def interrupted(self) -> bool:
        return self.count > 0

    def remove(self) -> None:
        for sig in self._installed:
            try:
                self._loop.remove_signal_handler(sig)
                if self._before[sig] is not None:  # the console script's (SIGTERM as Ctrl-C)
                    signal.signal(sig, self._before[sig])
            except (RuntimeError, ValueError):
                pass
        self._installed.clear()


_before: dict[int, Any] = {}  # by after_hooks(): each signal's handler before it
_late: list[str] = []  # the signal that came once the hooks were done
_writing: list[str] = []  # the report whose reporter runs (reporter_cut)
_cut: list[str] = []  # the signal that raised ReportCut, however the reporter took it


class ReportCut(KeyboardInterrupt):
    """Raised where a reporter's code runs when a signal comes (:func:`reporter_cut`):
    a ``KeyboardInterrupt``, so it is never taken for the plugin's own failure."""


@contextlib.contextmanager
def reporter_cut(report: str) -> Iterator[None]:
    """While the block runs a reporter's code writing ``report``, the first signal
    after :func:`after_hooks` raises :class:`ReportCut` there: a reporter that hangs
    (a ``time.sleep``, a server that never answers) no longer holds Rook past a CI
    job's cancel, whose one SIGTERM would otherwise only be noted."""
    _writing.append(report)
    try:
        yield
    finally:
        _writing.pop()


def _finishing(finish: str) -> str:
    return f"; finish it with: {finish}" if finish else ""


def after_hooks(
    interrupted: bool, kill_all: Callable[[], object] = lambda: None, finish: str = ""
) -> None:
    """Once the hooks are done (``interrupted``: a signal stopped them): a signal
    no longer ends Rook half-way through writing the run's record and reports (a
    CI cancel while a report is written), it only makes the run exit 130
    (:func:`late_signal`); one after another signal exits 130 at once.
    ``kill_all`` kills what hooks left before such an exit, which says ``finish``,
    the command that finishes the run, when the hooks were cut off. :func:`restore`
    puts the handlers back."""

    def on_signal(sig: int, frame: object) -> None:
        if interrupted or _late:
            kill_all()
            said = _finishing(finish) if interrupted else ""
            _say("rook: interrupted twice: exiting now" + said + "\n")
            _exit_now()
        _late.append(signal.Signals(sig).name)
        if _writing:
            _say(
                f"\nrook: {_late[0]}: ending the report being written "
                f"({_writing[-1]}), writing no other report (again to exit at once)\n"
            )
            _cut.append(_late[0])
            raise ReportCut(_late[0])
        _say(
            f"\nrook: {_late[0]}: the hooks are done; writing the record and the reports "
            "of what finished (again to exit at once)\n"
        )

    for sig in SIGNALS:
        if signal.getsignal(sig) == signal.SIG_IGN:  # ignored when Rook started: stays so
            continue
        try:
            _before.setdefault(sig, signal.signal(sig, on_signal))
        except (ValueError, OSError):
            pass  # not the main thread (embedded use): no signal handling


def late_signal() -> str | None:
    """The signal that came after :func:`after_hooks`, if one did."""
    return _late[0] if _late else None


def report_cut() -> str | None:
    """The signal that ended a reporter (:func:`reporter_cut`), if one did: also when
    the reporter caught :class:`ReportCut` and raised another exception, or returned."""
    return _cut[0] if _cut else None


def note_cut(name: str) -> None:
    """A reporter ended by a ``KeyboardInterrupt`` it raised itself, no signal come:
    taken as a signal would be (:func:`report_cut` says ``name``, Rook exits 130)."""
    if not _cut:
        _cut.append(name)


def restore() -> None:
    """Undo :func:`after_hooks` (a no-op without it)."""
    for sig, handler in _before.items():
        signal.signal(sig, handler)
    _before.clear()
    _late.clear()
    _cut.clear()


def _exit_now() -> None:
    """Exit 130 at once, a standard stream made blocking left as it was found."""
    from .cli.streams import as_found

    as_found()
    os._exit(130)


def _say(text: str) -> None:
    """Tell standard error, if it is still there (after SIGHUP a terminal's
    writes fail): the signal is handled either way."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
