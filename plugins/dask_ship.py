"""The shipped workspace as a Dask worker plugin (see ``executor_dask``).

Registered with the scheduler for the length of one ``rook run`` when the workers
do not share the driver's file system: the scheduler hands it to every worker,
those that join later or that a nanny starts again after a crash included, so a
scenario run again after its worker was lost finds the workspace where it runs.
(Scattered data would not do: Dask's active memory manager keeps one copy of it,
and the worker holding that copy lost, the cluster has lost the workspace.)

Imported by the executor's session and by the workers that unpickle the plugin,
both of which have Dask: ``rook run`` without Dask never imports it.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from . import dask_worker


class ShippedWorkspace(WorkerPlugin):
    """Keeps the bundle (``data``, its SHA-256 ``digest``) on each worker for the
    ``rook run`` session ``session``; the first task there unpacks it
    (:func:`~rook_plugins.dask_worker.unpacked`), the plugin's removal at the end
    of the run drops the copy (:func:`~rook_plugins.dask_worker.release_workspace`)."""

    idempotent = False

    def __init__(self, data: bytes, digest: str, session: str) -> None:
        self.data, self.digest, self.session = data, digest, session

    def setup(self, worker: Any) -> None:
        dask_worker.keep_bundle(self.session, self.data)

    def teardown(self, worker: Any) -> None:
        dask_worker.drop_bundle(self.session)
        dask_worker.release_workspace(self.digest, self.session, worker)

    def __repr__(self) -> str:  # never the bytes in a log line
        return f"ShippedWorkspace({self.digest[:12]}, {self.session})"


PREFIX = "rook-workspace-"


def plugin_name(session: str, client_id: str) -> str:
    """The plugin's name: the session, and the Dask client that registered it."""
    return f"{PREFIX}{session}@{client_id}"


def orphaned(dask_scheduler: Any) -> list[str]:
    """Run on the scheduler: the shipped workspaces whose ``rook run`` is gone without
    removing its plugin (killed: SIGKILL, its machine lost), whose client the scheduler
    no longer knows, so that they do not stay on a long-lived cluster for ever."""
    return [
        name
        for name in dask_scheduler.worker_plugins
        if name.startswith(PREFIX) and name.rpartition("@")[2] not in dask_scheduler.clients
    ]


TOPIC = "rook-"


def drop_events(topic: str, dask_scheduler: Any = None) -> int:
    """Run on the scheduler as a run ends: forget the events of its ``topic`` (every hook
    result streamed back, the agent's output in it), which the scheduler would keep for
    ever (Dask keeps up to 1000 a topic, and never drops a topic), and those of every
    ``rook run`` gone without doing so (killed: no client the scheduler knows is
    subscribed to its topic). Returns how many topics were dropped."""
    topics = getattr(getattr(dask_scheduler, "_broker", None), "_topics", None)
    if topics is None:  # a Dask that keeps events otherwise: nothing Rook can drop
        return 0
    gone = [
        name
        for name, kept in list(topics.items())
        if name == topic
        or (name.startswith(TOPIC) and not set(kept.subscribers) & set(dask_scheduler.clients))
    ]
    for name in gone:
        topics.pop(name, None)
    return len(gone)


def restrict(keys: list[str], workers: list[str], dask_scheduler: Any = None) -> int:
    """Run on the scheduler: the tasks ``keys`` (those still there) may run on ``workers``
    from now on (a worker that joined a run whose scenario runs are restricted to the
    workers that load Rook). Returns how many tasks were changed."""
    tasks = {k: workers for k in keys if k in dask_scheduler.tasks}
    dask_scheduler.set_restrictions(tasks)
    return len(tasks)


def lost_workers(key: str, dask_scheduler: Any = None) -> list[str]:
    """Run on the scheduler: the workers it lost (removed, not closed as planned) while
    they ran task ``key``, oldest first, from the event it logs on each worker's topic.
    A worker killed before Rook's code there could say it started the task is among
    them. Empty for a Dask that logs no such event."""
    lost: list[tuple[float, str]] = []
    events = dask_scheduler.get_events() if hasattr(dask_scheduler, "get_events") else {}
    for topic, kept in events.items():
        if not isinstance(topic, str) or "://" not in topic:  # "all", a run's own: no worker
            continue
        for stamp, msg in kept:
            if (
                isinstance(msg, dict)
                and msg.get("action") == "remove-worker"
                and not msg.get("expected")
                and key in (msg.get("processing-tasks") or ())
            ):
                lost.append((stamp, topic))
    return [worker for _, worker in sorted(lost)]
