"""The ``rook`` console script (``[project.scripts] rook = "rook_core.console:main"``).

Only the console script imports this module, so what it does on import is
its own process's: before anything else is imported it pauses the cyclic
garbage collector (:func:`rook_core.startup.console`): importing click and
Rook allocates thousands of objects the command keeps, and the collector
would walk them again and again. The command turns it back on
(:func:`rook_core.startup.resume`) once its command line is parsed.

It also makes SIGTERM and SIGHUP (a CI job cancelled, a terminal closed) end
the command as Ctrl-C does, ``rook: interrupted`` and exit 130, rather than
kill it silently; a run's own handlers take over while its hooks run
(:mod:`rook_core.interrupts`).
"""

from __future__ import annotations

import signal

from . import startup


def _as_ctrl_c(sig: int, frame: object) -> None:
    raise KeyboardInterrupt


for _sig in (getattr(signal, name, None) for name in ("SIGTERM", "SIGHUP")):
    if _sig is not None and signal.getsignal(_sig) == signal.SIG_DFL:  # nohup's SIG_IGN stays
        signal.signal(_sig, _as_ctrl_c)

startup.console()

try:
    from .cli import main  # noqa: E402 - after the pause, on purpose
except KeyboardInterrupt:  # interrupted while Rook loads: nothing has run
    import os
    import sys

    for _sig in (getattr(signal, name, None) for name in ("SIGINT", "SIGTERM", "SIGHUP")):
        if _sig is not None:  # a second signal: already leaving, never a traceback
            signal.signal(_sig, signal.SIG_IGN)
    try:
        sys.stderr.write("rook: interrupted\n")
        sys.stderr.flush()
    except (AttributeError, OSError):  # closed (rook run 2>&-), or a hung-up terminal
        pass
    os._exit(130)

__all__ = ["main"]
