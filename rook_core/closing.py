"""What a command opened for its own use, closed as it ends, however it ends.

A report read on demand (:class:`rook_core.reportfile.FileEntries`) and a run's
spooled report entries (:class:`rook_core.report.EntrySpool`) each hold a file
descriptor, closed when the object is collected. Held by a frame an error or
``sys.exit`` unwound (a traceback, a reference cycle), that waits for the
cyclic garbage collector, so a process that runs Rook's commands one after
another (an embedding program, a test suite) would gather descriptors. Inside
:func:`command` each one is closed as the block ends: nothing the command made
is used after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# the closers registered by the command running in this context (a thread's own)
_closers: ContextVar[list[Callable[[], Any]] | None] = ContextVar("rook_closers", default=None)


def at_end(close: Callable[[], Any]) -> None:
    """Call ``close`` (idempotent: a ``weakref.finalize``) as the running command
    ends; outside one (a program calling Rook's functions), nothing."""
    closers = _closers.get()
    if closers is not None:
        closers.append(close)


@contextmanager
def command() -> Iterator[None]:
    """The life of one command: what it registered with :func:`at_end` is closed
    as the block ends."""
    closers: list[Callable[[], Any]] = []
    token = _closers.set(closers)
    try:
        yield
    finally:
        _closers.reset(token)
        for close in closers:
            close()
