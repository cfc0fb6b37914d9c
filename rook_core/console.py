"""The ``rook`` console script (``[project.scripts] rook = "rook_core.console:main"``).

Only the console script imports this module, so what it does on import is
its own process's: before anything else is imported it pauses the cyclic
garbage collector (:func:`rook_core.startup.console`): importing click and
Rook allocates thousands of objects the command keeps, and the collector
would walk them again and again. The command turns it back on
(:func:`rook_core.startup.resume`) once its command line is parsed.

Its first lines make Ctrl-C, SIGTERM and SIGHUP (a CI job cancelled, a terminal
closed) that come while Rook still loads end it at once with ``rook:
interrupted`` and exit 130: nothing has run, and a traceback of whichever
import it cut would say nothing. Once the command starts (:func:`command_starts`,
called by :func:`rook_core.cli.main`), Ctrl-C raises ``KeyboardInterrupt`` as
usual and SIGTERM and SIGHUP do the same, so that every command ends on them as
on Ctrl-C rather than die silently; a run's own handlers take over while its
hooks run (:mod:`rook_core.interrupts`). A signal ignored when Rook started
(``nohup``, ``rook run &`` in a script) stays ignored.
"""

from __future__ import annotations

# _signal, not signal: built in and loaded before any Python code runs, where
# importing signal takes a millisecond (its enums), one a signal could cut too
import _signal
import os


def _interrupted_early(sig: int, frame: object) -> None:
    for each in _HANDLED:  # a second signal: already leaving, never a traceback
        _signal.signal(each, _signal.SIG_IGN)
    try:
        os.write(2, b"rook: interrupted\n")
    except OSError:  # closed (rook run 2>&-), or a hung-up terminal
        pass
    os._exit(130)


_HANDLED = [
    sig
    for sig in (getattr(_signal, name, None) for name in ("SIGINT", "SIGTERM", "SIGHUP"))
    if sig is not None and _signal.getsignal(sig) != _signal.SIG_IGN
]
for _sig in _HANDLED:
    _signal.signal(_sig, _interrupted_early)


def _as_ctrl_c(sig: int, frame: object) -> None:
    raise KeyboardInterrupt


def command_starts() -> None:
    """From here on a signal is the command's to handle: Ctrl-C raises
    ``KeyboardInterrupt`` (Python's own handler), and so do SIGTERM and SIGHUP."""
    for sig in _HANDLED:
        if _signal.getsignal(sig) is _interrupted_early:
            handler = _signal.default_int_handler if sig == _signal.SIGINT else _as_ctrl_c
            _signal.signal(sig, handler)


from . import startup  # noqa: E402 - after the handlers, on purpose

startup.console()

from .cli import main  # noqa: E402 - after the pause, on purpose

__all__ = ["command_starts", "main"]
