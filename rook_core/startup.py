"""Start-up work done without the cyclic garbage collector.

Importing modules, building the plugin manager and loading definitions
allocate tens of thousands of objects that live as long as the command. The
collector, which runs after every 700 new objects, walks them again and
again and finds nothing to free. Inside :func:`collector_paused` it does not
run; reference counting still frees everything that is not in a cycle, and
the collector runs again as the block ends.

The ``rook`` console script owns its process (:func:`console`), so there
the objects the block leaves are also frozen (:func:`gc.freeze`): later
collections never walk them, and whatever cycle start-up left is kept for
the command's short life. Together ≈ 3 ms of every ``rook run``'s start
(measured: pausing alone saves nothing, the collections only move). A
caller that runs Rook in its own process (tests, an embedding program)
gets the pause without the freeze.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze = False


def console() -> None:
    """Called by the ``rook`` console script, whose process ends with the command."""
    global _freeze
    _freeze = True


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
