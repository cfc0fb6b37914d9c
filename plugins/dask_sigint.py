"""A Dask worker preload for the LocalCluster Rook starts itself (``executor_dask``).

Its workers are Rook's children, in Rook's process group: Ctrl-C at a terminal
(SIGINT to the foreground group) reached them too, and each died of it, printing
a ``KeyboardInterrupt`` traceback on Rook's standard error while Rook was
stopping the run. Here, in each worker as it starts, SIGINT is caught by a
handler that does nothing, so the worker is left to Rook, which got the same
Ctrl-C and cancels the worker's scenarios. A caught signal is reset to its
default in the programs the worker starts: a hook gets SIGINT as in a local run.
A worker still importing Dask, in the first seconds of the cluster's start, has
not run this yet: Rook starts it with SIGINT blocked (``executor_dask``), so a
Ctrl-C then waits, and is unblocked here, once it can do no harm. A variable
of Rook's it cannot use (``ROOK_NO_CACHE=maybe``), which the workers inherit,
is warned of by Rook alone, not again by each worker. And a worker that Rook's
closing of the cluster reaches in the middle of a heartbeat to its scheduler
(a Ctrl-C's end of the run, on a busy machine) does not print that heartbeat's
failure, a traceback of Dask's, on Rook's standard error: the worker is closing.
"""

from __future__ import annotations

import logging
import signal
from typing import Any

HEARTBEAT_FAILED = "Failed to communicate with scheduler during heartbeat"


def _ignore(signum: int, frame: Any) -> None:
    """Rook, which got the same Ctrl-C, stops the run and this worker's work."""


class _ClosingHeartbeat(logging.Filter):
    """Leaves out the heartbeat's failure a worker logs (with Dask's traceback)
    once it is closing: its scheduler and its connections go as it closes."""

    def __init__(self, worker: Any) -> None:
        super().__init__()
        self.worker = worker

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(HEARTBEAT_FAILED):
            return True
        status = getattr(getattr(self.worker, "status", None), "name", "running")
        return status in ("running", "paused")  # a worker at work: its failure is said


def dask_setup(worker: Any) -> None:
    """Called by Dask in the worker process as it starts (its main thread)."""
    from rook_core.errors import said_by_rook

    logging.getLogger("distributed.worker").addFilter(_ClosingHeartbeat(worker))
    said_by_rook()  # it has Rook's environment: its variables' warnings were said there
    try:
        signal.signal(signal.SIGINT, _ignore)
    except ValueError:  # not the main thread: nothing can be changed here
        return
    if hasattr(signal, "pthread_sigmask"):  # blocked as Rook started it: a Ctrl-C came, or not
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
