"""Start-up work done without the cyclic garbage collector.

Importing modules and building the plugin manager allocate tens of
thousands of objects that live as long as the command. The collector, which
runs after every 700 new objects, walks them again and again and finds
nothing to free. Inside :func:`collector_paused` it does not run; reference
counting still frees everything that is not in a cycle, and the collector
runs again as the block ends. (Loading definitions stays outside: validating
them, on a cold cache, leaves cycles that a freeze would keep, 2 MB at
10,000 scenarios, measured.)

The ``rook`` console script owns its process (:func:`console`), so there
the collector is also paused from the first import to the parsed command
line, and the objects each pause leaves are frozen (:func:`gc.freeze`):
later collections never walk them, and whatever cycle start-up left is kept
for the command's short life. Together ≈ 4–5 ms of every ``rook run``'s
start (measured: pausing alone saves nothing, the collections only move).
A caller that runs Rook in its own process (tests, an embedding program)
gets the pauses without the freeze.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze = False
_paused = False  # by console(), until resume()


def console() -> None:
    """Called by the ``rook`` console script (:mod:`rook_core.console`), whose
    process ends with the command: pause the collector until :func:`resume`,
    and freeze what each paused block leaves."""
    global _freeze, _paused
    _freeze = True
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """End the pause :func:`console` began, freezing what it left (a no-op
    anywhere else). Called once the command line is parsed."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Turn the cyclic garbage collector off for the block, if it is on."""
    if not gc.isenabled():  # off already (by the caller): leave it so
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if _freeze:
            gc.freeze()
        gc.enable()
