"""Built-in executor: every scenario run in this process, on one asyncio event loop.

A fixed pool of workers pulls scenario runs in order, so memory stays flat
however many scenarios there are, and one process keeps hundreds of waiting
hooks in flight. ``concurrency`` runs have their hooks in flight at once (a
semaphore of that many slots, handed to :meth:`Engine.run_scenario`); as many
workers again prepare the next runs and wait, and one takes a slot as soon
as a run's last hook has finished: its hooks start while the finished run is
recorded and judged (by a judge profile, say).
"""

from __future__ import annotations

import asyncio
from typing import Any

from rook_core.hookspecs import hookimpl


async def run_local(
    engine: Any, scenario_runs: list[Any], concurrency: int, options: dict[str, Any]
) -> None:
    queue = iter(scenario_runs)
    slots = asyncio.Semaphore(max(1, concurrency))

    async def worker() -> None:
        for sr in queue:  # the iterator is shared: each run is taken exactly once
            await engine.run_scenario(sr, slots)

    n = max(1, min(2 * max(1, concurrency), len(scenario_runs)))
    tasks = [asyncio.create_task(worker()) for _ in range(n)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@hookimpl
def rook_register_executors(register: Any) -> None:
    register("local", run_local)
