"""The ``rook`` console script (``[project.scripts] rook = "rook_core.console:main"``).

Only the console script imports this module, so what it does on import is
its own process's: before anything else is imported it pauses the cyclic
garbage collector (:func:`rook_core.startup.console`): importing click and
Rook allocates thousands of objects the command keeps, and the collector
would walk them again and again. The command turns it back on
(:func:`rook_core.startup.resume`) once its command line is parsed.
"""

from __future__ import annotations

from . import startup

startup.console()

from .cli import main  # noqa: E402 - after the pause, on purpose

__all__ = ["main"]
