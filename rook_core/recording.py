"""A run's file work, done in the event loop's idle turns instead of on the spawn path.

Writing a finished scenario run's record (a temporary file, then a rename)
and making a run's state directory are file-system calls that take from
0.05 to well over 0.5 ms on an ordinary disk: longer than a trivial hook.
Done just before the next spawn, they would delay every agent call. So a
finished run's record is written on the loop's next turn, which comes when
the executor next waits (typically right after it has spawned the next
hook), and in the same turn the state directories of the next runs are made
ahead of their start. The hooks in flight run meanwhile on the other cores.

What is pending is written by :meth:`Recorder.flush` (the runner calls it
when the executor returns or is interrupted); a write that failed in an idle
turn is raised there or before the next scenario run starts, never lost. A
thread was measured and was slower: the loop kept waiting for it to hand
back the GIL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .models import ScenarioRun
from .store import RunDir

Store = Callable[[ScenarioRun, dict[str, Any]], None]


class Recorder:
    """Records finished scenario runs and makes state directories when the loop is idle."""

    def __init__(self, run_dir: RunDir, store: Store) -> None:
        self.run_dir = run_dir
        self.store = store  # writes one record now (and reports progress)
        self._pending: list[tuple[ScenarioRun, dict[str, Any]]] = []
        self._soon: asyncio.Handle | None = None
        self._error: BaseException | None = None
        self._ahead: Iterator[ScenarioRun] = iter(())
        self._lead = 0
        self._made_ahead = 0
        self._dirs_made: set[str] = set()
        self._started = 0

    def started(self) -> None:
        """A scenario run starts: raise a record write that failed meanwhile."""
        self.raise_failure()
        self._started += 1

    def record_soon(self, sr: ScenarioRun, record: dict[str, Any]) -> None:
        """Write this finished run's record on the loop's next turn."""
        self._pending.append((sr, record))
        if self._soon is None:
            self._soon = asyncio.get_running_loop().call_soon(self._idle_turn)

    def plan_ahead(self, runs: list[ScenarioRun], lead: int) -> None:
        """Make the state directories of ``runs`` (in this order) in idle turns,
        up to ``lead`` ahead of the runs started so far."""
        self._ahead = iter(runs)
        self._lead = max(1, lead)

    def state_dir(self, key: str) -> Path:
        """The state directory of scenario run ``key``, made now unless made ahead."""
        made = key in self._dirs_made
        self._dirs_made.discard(key)
        return self.run_dir.state_dir(key, make=not made)

    def flush(self) -> None:
        """Write every pending record now; raises a write failure."""
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        self.raise_failure()
        while self._pending:
            sr, record = self._pending.pop(0)
            self.store(sr, record)

    def raise_failure(self) -> None:
        if self._error is not None:
            exc, self._error = self._error, None
            raise exc

    def _idle_turn(self) -> None:
        self._soon = None
        try:
            self.flush()
            self._make_dirs_ahead()
        except Exception as exc:  # raised again by started() or flush()
            self._error = self._error or exc

    def _make_dirs_ahead(self) -> None:
        while self._made_ahead < self._started + self._lead:
            sr = next(self._ahead, None)
            if sr is None:
                return
            self.run_dir.state_dir(sr.key)
            self._dirs_made.add(sr.key)
            self._made_ahead += 1
