"""Reaching a Dask scheduler for :mod:`rook_plugins.executor_dask`: the address
or scheduler file checked before anything runs (its form, its port, whether a
Dask scheduler answers there, and TLS where it asks for it), Rook's own
LocalCluster sized and started with Ctrl-C kept from its workers, the client
made and closed, and Dask's own log lines kept off Rook's standard error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from rook_core.errors import RunStopped, exception_text

MAX_ATTEMPTS = 2  # the first run and one retry on another worker
CONNECT_TIMEOUT = 10.0
# threads of a worker of Rook's own LocalCluster: each scenario run in flight holds one
# (its hooks waiting); past a few hundred a worker runs no more at once, GIL-bound, yet
# each costs memory and a process slot (-j 100000 asked for 50,000 threads a worker)
LOCAL_THREADS = 256


def scheduler_file(address: str) -> bool:
    return "://" not in address and (address.endswith(".json") or "/" in address)


def address_problem(address: str) -> str | None:
    """Why ``address`` is no Dask scheduler address, as Dask would parse it (it
    takes almost anything and fails only when it cannot connect), or ``None``."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends

    try:
        scheme, location = parse_address(address)
        if scheme not in backends:
            return f"unknown scheme {scheme!r} (one of {', '.join(sorted(backends))})"
        if scheme == "inproc":  # Dask's in-memory transport: never another process's
            return (
                "an inproc:// address names a scheduler inside one Python process, "
                "which rook run cannot reach; give the scheduler's tcp:// address"
            )
        host, port = parse_host_port(location, 8786)
    except ValueError as exc:
        return _port_problem(location) or f"not a scheduler address ({exc})"
    port_problem = _port_problem(location)  # Dask takes ' 80' and '٨٠' for 80 too
    if port_problem:
        return port_problem
    if not host:
        return "not a scheduler address: it names no host"
    if any(c.isspace() for c in host):
        return "not a scheduler address: a host name holds no spaces"
    if not 0 < int(port) < 65536:
        return f"port {port} is out of range"
    return None


def _port_problem(location: str) -> str | None:
    """Why the port ``location`` gives (``host:port``) is no port, if it gives one:
    in Dask's words, Python's (``invalid literal for int() with base 10``)."""
    if ":" not in location or location.endswith("]"):  # no port: Dask's 8786
        return None
    port = location.rpartition(":")[2]
    if port.isascii() and port.isdigit():
        return None
    return f"port {port!r} is not a number"


def unreachable(address: str, timeout: float = 5.0, from_file: bool = False) -> str | None:
    """Why no scheduler answers at ``address`` (a TCP, TLS or WebSocket address
    nothing listens on), or ``None``: checked before anything runs, so that an address
    nobody serves does not run prepare and leave a pending run behind. ``from_file``:
    read from a scheduler file (Dask's client then uses no security loader)."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme not in ("tcp", "tls", "ws", "wss"):  # ucx: only Dask can try it
        return _not_a_scheduler(address, CONNECT_TIMEOUT, reached=False, from_file=from_file)
    host, port = parse_host_port(location, 8786)
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        return (
            f"no Dask scheduler answers there ({exc.strerror or exc}); start it first "
            "(dask scheduler), or leave --scheduler out for a local cluster"
        )
    # as long as Dask's client would wait
    return _not_a_scheduler(address, CONNECT_TIMEOUT, from_file=from_file)


def _client_security(address: str, from_file: bool) -> Any:
    """The TLS settings Dask's client uses for ``address``: those the configured
    ``distributed.client.security-loader`` gives for it (not for a scheduler file's
    address), else Dask's configuration (``distributed.comm.tls``)."""
    import dask
    from distributed.security import Security
    from distributed.utils import import_term

    term = None if from_file else dask.config.get("distributed.client.security-loader", None)
    security = import_term(term)({"address": address}) if term else None
    if isinstance(security, dict):
        security = Security(**security)
    return security if isinstance(security, Security) else Security()


def _not_a_scheduler(
    address: str, timeout: float, reached: bool = True, from_file: bool = False
) -> str | None:
    """Why what listens at ``address`` is not a Dask scheduler, or ``None``: asked
    for its identity, as Dask's client would be (with its TLS settings), within
    ``timeout``. Something else there (the dashboard's port, an HTTP server) never
    answers Dask's handshake, and the client would hang, or read a length from the
    stranger's bytes (``MemoryError``), after prepare had run."""
    import concurrent.futures

    from distributed.core import rpc

    try:
        security = _client_security(address, from_file)
    except Exception as exc:  # noqa: BLE001 - the loader is the user's code
        return f"Dask's client security loader failed: {exception_text(exc)}"

    async def identity() -> Any:
        peer = rpc(address, timeout=timeout, connection_args=security.get_connection_args("client"))
        try:
            return await asyncio.wait_for(peer.identity(), timeout)
        finally:
            await peer.close_rpc()

    try:  # in a thread of its own: the caller may be inside an event loop
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(asyncio.run, identity()).result()
    except Exception as exc:  # noqa: BLE001 - whatever a stranger's bytes make Dask raise
        if isinstance(exc, asyncio.TimeoutError):
            why = f"no answer within {timeout:g} s"
        else:
            why = exception_text(exc)
        if not reached:  # no TCP check first: Dask's own transport failed, or found nothing
            return (
                f"Dask cannot reach a scheduler there ({why}); check the address, and that "
                f"the Dask package for {address.split('://')[0]}:// is installed"
            )
        who = "something that is not a Dask scheduler listens there"
        if security.require_encryption or address.startswith(("tls://", "wss://")):
            who += (
                ", or Dask's TLS settings (distributed.comm.tls, the client's security "
                "loader) are not the scheduler's"
            )
        return f"{who} (Dask's handshake got {why}); {CHECK_ADDRESS}"
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind != "Scheduler":
        return f"a Dask {str(kind or 'server').lower()} listens there, not the scheduler; {CHECK_ADDRESS}"
    return None


CHECK_ADDRESS = (
    "check the address: the scheduler's own port (8786 unless it was started with "
    "another), not its dashboard's (8787) or a worker's"
)


def scheduler_file_problem(path: Path) -> str | None:
    """Why the file ``path`` is no Dask scheduler file (``dask scheduler --scheduler-file``
    writes a JSON object whose ``address`` is the scheduler's), or ``None``. Dask reads
    any file and fails with an AssertionError, or after its connect timeout."""

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"not a Dask scheduler file ({exception_text(exc)})"
    if not isinstance(data, dict):
        return "not a Dask scheduler file (a JSON object with the scheduler's address)"
    address = data.get("address")
    if not isinstance(address, str) or not address.strip():
        return 'names no scheduler address (a Dask scheduler file holds {"address": ...})'
    problem = address_problem(address)
    return f"its address {address!r}: {problem}" if problem else None


class _NoDaskLines(logging.Filter):
    """Keeps Dask's own log lines (``distributed.client - ERROR - Failed to
    reconnect to scheduler...``) off the terminal while Rook drives the run:
    what they tell (a worker or the scheduler lost) is in Rook's diagnosis."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


@contextmanager
def quiet_dask_logs() -> Iterator[None]:
    handlers = {
        h
        for name, lg in list(logging.root.manager.loggerDict.items())
        if name.split(".")[0] == "distributed" and isinstance(lg, logging.Logger)
        for h in lg.handlers
    }
    quiet = _NoDaskLines()
    for h in handlers:
        h.addFilter(quiet)
    try:
        yield
    finally:
        for h in handlers:
            h.removeFilter(quiet)


async def _close(cluster: Any) -> None:
    """Close Rook's own LocalCluster (synchronous, on its own event loop: see
    :func:`_start_local_cluster`), from a thread so that Rook's loop goes on meanwhile."""
    await asyncio.to_thread(cluster.close)


_SIGINT = "rook_plugins.dask_sigint"


_QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"


def _tracker_started() -> None:
    """Start multiprocessing's resource tracker, once, before Rook's LocalCluster: the
    standard library starts it with SIGINT blocked and unblocks SIGINT after, whatever it
    was before, so started later from the cluster's thread it would unblock it there.
    Killed (SIGKILL), Rook leaves the cluster's semaphores to the tracker, which frees
    them, saying so on Rook's standard error ("There appear to be 12 leaked semaphore
    objects"): it runs with this process's -W options, which no hook gets."""
    from multiprocessing import resource_tracker

    if _QUIET_TRACKER not in sys.warnoptions:
        sys.warnoptions.append(_QUIET_TRACKER)
    resource_tracker.ensure_running()


def _start_local_cluster(n: int, threads: int, preload: list[str]) -> Any:
    """Rook's own LocalCluster, made in a thread with SIGINT blocked (``asyncio.to_thread``).
    The cluster runs on an event loop of its own, in a thread it makes here ("IO loop"),
    which inherits that mask, as does every thread made from there: those from which the
    nannies start the workers, at the cluster's start and again after a crash. So a worker
    still importing Dask holds a terminal's Ctrl-C pending, never dying of it with a
    traceback on Rook's standard error, until the ``dask_sigint`` preload has set SIGINT
    aside there and unblocks it. Rook's own thread never blocks it: Rook gets that Ctrl-C."""
    import dask
    from distributed import LocalCluster

    blocking = hasattr(signal, "pthread_sigmask")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocking else None
    try:
        with dask.config.set({"distributed.scheduler.allowed-failures": MAX_ATTEMPTS - 1}):
            return LocalCluster(
                n_workers=n,
                threads_per_worker=threads,
                processes=True,
                asynchronous=False,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                silence_logs=logging.ERROR,
                preload=preload,
            )
    finally:
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


def local_size(concurrency: int) -> tuple[int, int]:
    """Rook's own LocalCluster for ``concurrency`` scenario runs at once: its workers (one
    a CPU, no more than the runs) and the threads of each (enough for the runs, at most
    :data:`LOCAL_THREADS`)."""
    n = max(1, min(os.cpu_count() or 1, concurrency))
    return n, min(math.ceil(concurrency / n), LOCAL_THREADS)


@asynccontextmanager
async def connected(options: dict[str, Any], concurrency: int) -> AsyncIterator[Any]:
    """A Dask client: to ``--scheduler``, or to a LocalCluster sized for ``concurrency``."""
    import dask
    from distributed import Client

    address = options.get("scheduler")
    cluster = client = None
    try:
        if address:
            where = {"scheduler_file": address} if scheduler_file(address) else {"address": address}
            client = await Client(asynchronous=True, timeout=CONNECT_TIMEOUT, **where)
        else:
            n, threads = local_size(concurrency)
            # its workers are in Rook's process group, which a terminal's Ctrl-C reaches:
            # each catches SIGINT and leaves the run to Rook (dask_sigint)
            preload = dask.config.get("distributed.worker.preload") or []
            preload = [*([preload] if isinstance(preload, str) else preload), _SIGINT]
            _tracker_started()
            starting = asyncio.ensure_future(
                asyncio.to_thread(_start_local_cluster, n, threads, preload)
            )
            try:
                cluster = await asyncio.shield(starting)
            except asyncio.CancelledError:  # Ctrl-C as it started: closed below, once up
                with contextlib.suppress(Exception):
                    cluster = await starting
                raise
            client = Client(cluster.scheduler_address, asynchronous=True)
            await client
    except (OSError, asyncio.TimeoutError, ValueError) as exc:
        if cluster is not None:
            await _close(cluster)
        raise RunStopped(
            f"--executor dask: cannot reach the Dask scheduler at {address}: {exc}"
        ) from None
    except BaseException:  # Ctrl-C as the cluster started: closed now, its logs still quiet
        with contextlib.suppress(Exception):
            if client is not None:
                await client.close()
            if cluster is not None:
                await _close(cluster)
        raise
    try:
        yield client
    finally:
        await client.close()
        if cluster is not None:
            await _close(cluster)
