"""What runs on a Dask worker for the ``dask`` executor (see ``executor_dask``).

A task is one scenario run's phases. The worker builds the same
:class:`rook_core.engine.Engine` the driver has (profile re-validated and its
hook entries resolved against the worker's copy of the workspace) and calls
:meth:`~rook_core.engine.Engine.compute_scenario`: the same lifecycle code,
the same :func:`rook_core.process.run_process`, the same timeouts and kills.
It writes no record: every hook result is sent to the driver as it happens
(a Dask event on the run's topic) and the finished record is the task's
result; the driver alone stores it.

The workspace reaches the worker on a shared file system (the same path; a
probe file proves it) or shipped with the job (a ``tar.gz`` that a worker plugin,
``dask_ship.ShippedWorkspace``, gives every worker, unpacked once per worker into
its local directory).

Nothing here imports Dask at module level, so the plugin loads without it.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import io
import os
import shutil
import signal
import tarfile
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import field
from pathlib import Path
from typing import Any

from rook_core import process, procscan, redact
from rook_core.engine import Engine
from rook_core.errors import RookError, exception_text
from rook_core.plain import plain
from rook_core.plugins import build_plugin_manager, count_cancellations, slow_plugin
from rook_core.preflight import resolve_entries
from rook_core.profile import profile_from_dict
from rook_core.redact import Redactor
from rook_core.registry import OWN, switches_note
from rook_core.store import RunDir
from rook_core.workspace import ROOT, Agent

ARCHIVE_ROOT = "workspace"
SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
}


UNPACKED_TIMES = 16
"""What is shipped (the workspace, a scenario's state coming back) holds at most this
many times ``ROOK_DASK_SHIP_LIMIT_MB`` unpacked: a few KiB of compressed zeros never
unpack into gigabytes on every worker, or on the driver."""


class TooBig(Exception):
    """What would be shipped is over the ship limit: ``compressed`` (its bytes), or
    unpacked (the files it holds, ``largest`` among them: its name and size)."""

    def __init__(self, limit: int, compressed: bool, largest: tuple[str, int] = ("", 0)):
        self.limit, self.compressed, self.largest = limit, compressed, largest
        super().__init__(self.why("ships"))

    def why(self, verb: str) -> str:
        """``holds over the N MiB of files (unpacked) that Rook VERB (...)``: no subject."""
        if self.compressed:
            return (
                f"is over the {_mib(self.limit)} MiB (compressed) that Rook {verb} "
                "(ROOK_DASK_SHIP_LIMIT_MB)"
            )
        name, size = self.largest
        return (
            f"holds over the {_mib(self.limit * UNPACKED_TIMES)} MiB of files (unpacked) that "
            f"Rook {verb} ({UNPACKED_TIMES} x ROOK_DASK_SHIP_LIMIT_MB; largest: {name}, "
            f"{_mib(size)} MiB)"
        )


def _mib(n: int) -> str:
    mib = n / 2**20
    return f"{mib:.1f}".removesuffix(".0") if mib >= 1 or not mib else f"{mib:.2g}"


class _Capped(io.BytesIO):
    """The compressed bytes, raising :class:`TooBig` past ``limit`` (never held whole).
    Once over, what the stopped gzip stream still writes (its end, as tarfile closes it,
    or as the garbage collector does, the buffer maybe closed by then) is dropped: its
    error would be printed as 'Exception ignored in: <gzip ...>' (Python 3.13 prints
    what an IOBase finalizer's close raises, 3.10 only in development mode)."""

    def __init__(self, limit: int | None) -> None:
        super().__init__()
        self.limit, self.over = limit, False

    def write(self, data: Any) -> int:
        if self.over:
            return len(data)
        if self.limit is not None and self.tell() + len(data) > self.limit:
            self.over = True
            raise TooBig(self.limit, compressed=True)
        return super().write(data)


class _Sizes:
    """Counts the files a tar takes in, raising :class:`TooBig` past ``limit`` x
    :data:`UNPACKED_TIMES` (checked as each file is added, before it is read)."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.total, self.largest = limit, 0, ("", 0)

    def add(self, name: str, size: int) -> None:
        if self.limit is None:
            return
        self.total += size
        if size > self.largest[1]:
            self.largest = (name, size)
        if self.total > self.limit * UNPACKED_TIMES:
            raise TooBig(self.limit, compressed=False, largest=self.largest)


class _ThisWorker(RuntimeError):
    """A task failed for its worker's sake, before any hook ran: ``args`` are the message
    (naming the worker), the worker's address and the attempt's token (its start event),
    so that the driver can send the scenario run to another worker."""

    def __init__(self, message: str, worker: str = "", token: str = "") -> None:
        super().__init__(message, worker, token)
        self.worker, self.token = worker, token

    def __str__(self) -> str:
        return str(self.args[0])


class WorkspaceNotShared(_ThisWorker):
    """The worker does not see the driver's workspace at the same path."""


class WorkerSetupFailed(_ThisWorker):
    """The worker could not rebuild the run's engine: its environment (its plugins, its
    files) refused what the driver accepted. The message names the worker."""


IN_ROOKS_WORDS = (WorkspaceNotShared, WorkerSetupFailed)
"""A task's failures whose message the driver records as it is (no exception type)."""


@plain
class WorkerJob:
    """Everything a worker needs to rebuild the run's engine but its secrets
    (:class:`RunSecrets`): plain, picklable data. It travels in each scenario run's
    task, which Dask logs (up to 10 KB of its pickle) on a worker or a scheduler
    that cannot read it (no Rook there): nothing secret goes in it."""

    run_id: str
    workspace: str
    run_rel: str
    project: str
    agent: str
    profile_raw: dict[str, Any]
    profile_source: str
    profile_rel: str | None
    phases: list[str]
    observed: dict[str, bool] = field(default_factory=dict)
    mode: str = "shared"
    probe: str | None = None
    """Shared mode: the probe file every worker must see, holding ``probe_token``."""
    probe_token: str = ""
    digest: str | None = None
    """Ship mode: the SHA-256 of the shipped workspace."""
    ship_limit: int | None = None
    """Ship mode: ``ROOK_DASK_SHIP_LIMIT_MB`` in bytes, which bounds a state directory
    coming back as it bounds the workspace (:func:`pack_dir`)."""
    topic: str = ""
    """This ``rook run`` invocation's own name on the cluster (events, cancelling): unique,
    where the run id is shared by the shards of a sharded run."""
    secrets_key: bytes = field(default=b"", repr=False)
    """The key the run's secrets were sealed with (:func:`seal`): they travel apart, in a
    message Dask logs at DEBUG level; the task, which it does not, holds the key."""
    resume: str = ""
    """The command that finishes the run's unfinished scenario runs (the driver's
    ``Engine.resume``: a shard's names the shard)."""
    transports: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The transports the profile uses, as the driver has them: key -> ``phases`` (the
    hook entries using it), ``owner`` (the plugin) and ``distribution``; named when a
    worker has not got one (:func:`lacking`)."""
    criteria: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The criterion types the run's scenarios use, when the worker judges them: type ->
    ``owner`` and ``distribution``, as for :attr:`transports`."""


class RunSecrets:
    """A run's secret values: its redactor (the values of the profile's ``env``
    variables, those prepare saved), those ``env`` values and prepare's saved values.
    Never in a scenario run's task: the driver gives them, pickled, to each worker that
    loads Rook (:func:`keep_secrets`), which keeps them in memory for the run."""

    def __init__(self, redactor: Redactor, env: dict[str, str], saved: dict[str, Any]) -> None:
        self.redactor, self.env, self.saved = redactor, env, saved

    def __repr__(self) -> str:  # never a value in a log line
        return f"RunSecrets({', '.join(sorted(self.env))})"


SECRETS_WAIT = 30.0
"""How long a scenario run's task waits on a worker for its run's secrets (a worker
that joined as the run went: the driver gives them within a second or two)."""
SECRETS_KEPT = 64  # a long-lived worker keeps those of at most this many runs (killed ones)
_secrets: dict[str, bytes] = {}
"""Per ``rook run`` session (:attr:`WorkerJob.topic`): its :class:`RunSecrets`, pickled."""
_secrets_given = threading.Condition()


def seal(data: bytes, key: bytes) -> bytes:
    """``data`` XOR a keystream drawn from ``key`` (SHAKE-256); sealing again unseals.
    The run's secrets travel sealed (``client.run``, whose arguments Dask's
    ``distributed.core`` logs at DEBUG level), their key in the scenario runs' tasks,
    which Dask sends on streams it does not log (:attr:`WorkerJob.secrets_key`)."""
    import hashlib

    pad = hashlib.shake_256(key).digest(len(data))
    return (int.from_bytes(data, "big") ^ int.from_bytes(pad, "big")).to_bytes(len(data), "big")


def keep_secrets(session: str, data: bytes) -> str | None:
    """Run on the workers that load Rook: keep the session's secrets (a pickled
    :class:`RunSecrets`, sealed: :func:`seal`; loaded by Rook as a task needs them, never
    by Dask, which would log the bytes it could not load). Returns why they could not be
    taken, or ``None``; never raises (Dask would log the arguments of a function that did)."""
    if not isinstance(data, bytes) or not data:
        return "not a run's secrets"
    with _secrets_given:
        _secrets.pop(session, None)
        _secrets[session] = data
        while len(_secrets) > SECRETS_KEPT:  # those of runs killed before they dropped them
            del _secrets[next(iter(_secrets))]
        _secrets_given.notify_all()
    return None


def drop_secrets(session: str) -> None:
    with _secrets_given:
        _secrets.pop(session, None)


def secrets_of(session: str, key: bytes, wait: float = SECRETS_WAIT) -> RunSecrets | None:
    """The session's secrets, unsealed with ``key``: fresh objects for one scenario run
    (its open phase may add saved values), waiting up to ``wait`` seconds for the driver
    to give them (a task that finds none asks the driver for them first:
    :func:`run_on_worker`). Raises :class:`ValueError` (naming no byte of them) when they
    do not load."""
    import pickle

    with _secrets_given:
        _secrets_given.wait_for(lambda: session in _secrets, wait)
        data = _secrets.get(session)
    if data is None:
        return None
    try:
        secrets = pickle.loads(seal(data, key))
    except Exception as exc:  # noqa: BLE001 - what it was is said, never the bytes
        raise ValueError(f"{type(exc).__name__} while loading them") from None
    if not isinstance(secrets, RunSecrets):
        raise ValueError("not a run's secrets")
    return secrets


# -- the workspace: shared, or shipped as a tar.gz -------------------------------------


def _keep(rel: Path, agent_runs: Path, run_id: str) -> bool:
    """Whether a workspace path goes into the bundle: not VCS/cache dirs, and of the
    run history only this run's state directories."""
    parts = rel.parts
    if any(p in SKIP_DIRS for p in parts):
        return False
    if (
        len(parts) >= 8
        and parts[:2] == ROOT.parts
        and parts[2] == "projects"
        and parts[6] == "runs"
    ):
        if Path(*parts[:7]) != agent_runs or parts[7] != run_id:
            return False
        return len(parts) == 8 or parts[8] == "state"
    return True


def build_bundle(workspace: Path, run_dir: Path, limit: int | None = None) -> bytes:
    """The workspace as a gzipped tar (modes and symlinks kept), for workers that do
    not share the driver's file system. A link leading out of the workspace (to an
    absolute path, or up past its root) names its target's absolute path, as on the
    driver; each name of a file with several (hard links) is a file of its own; what
    holds no data (a named pipe, a socket, a device) is left out. Over ``limit`` bytes
    compressed, or :data:`UNPACKED_TIMES` that unpacked, raises :class:`TooBig` as
    soon as it is (never the whole workspace in memory first)."""
    agent_runs = run_dir.parent.relative_to(workspace)
    run_id = run_dir.name
    top = os.path.normpath(workspace)
    buf = _Capped(limit)
    sizes = _Sizes(limit)

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        rel = Path(info.name).relative_to(ARCHIVE_ROOT) if info.name != ARCHIVE_ROOT else Path()
        if rel.parts and not _keep(rel, agent_runs, run_id):
            return None
        if info.islnk():  # its other name may be left out (a skipped folder): a file
            info.type, info.linkname = tarfile.REGTYPE, ""
            info.size = (workspace / rel).stat().st_size
        elif info.issym() and not os.path.isabs(info.linkname):
            target = os.path.normpath(os.path.join(top, *rel.parts[:-1], info.linkname))
            if os.path.commonpath([top, target]) != top:
                info.linkname = target  # up past the root: the same file as on the driver
        if not (info.isfile() or info.isdir() or info.issym()):
            return None
        if info.isfile():
            sizes.add(rel.as_posix(), info.size)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        tar.add(str(workspace), arcname=ARCHIVE_ROOT, filter=keep)
    return buf.getvalue()


def _shipped(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """Tar's ``data`` filter, but a link leading out of the workspace is kept (Rook's
    own driver made it so: :func:`build_bundle`), as the hooks find it on the driver."""
    try:
        return tarfile.data_filter(member, path)
    except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
        if not member.issym():
            raise
        return tarfile.tar_filter(member, path)


def _extract(data: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter=_shipped)
        else:  # Python < 3.10.12: check the members ourselves
            for m in tar.getmembers():
                target = (dest / m.name).resolve()
                if not str(target).startswith(str(dest.resolve())) or m.islnk():
                    raise RuntimeError(f"refusing to unpack {m.name!r} outside {dest}")
            tar.extractall(dest)  # noqa: S202 - members checked above


_unpack_lock = threading.Lock()
_users: dict[str, set[str]] = {}
"""Shipped workspaces unpacked here: digest -> the ``rook run`` sessions using it."""


def unpacked(data: bytes, digest: str, base: Path, session: str = "") -> Path:
    """Unpack a shipped workspace once per worker; returns its root. ``session``
    (:attr:`WorkerJob.topic`) uses it until :func:`release_workspace`."""
    root = base / "rook-workspaces" / digest
    with _unpack_lock:
        _users.setdefault(digest, set()).add(session)
        if not (root / ".complete").is_file():
            if hashlib.sha256(data).hexdigest() != digest:
                raise RuntimeError("the shipped workspace arrived damaged (checksum mismatch)")
            tmp = base / "rook-workspaces" / f".{digest}.{uuid.uuid4().hex[:8]}"
            tmp.mkdir(parents=True)
            _extract(data, tmp)
            if root.exists():
                shutil.rmtree(root)
            os.replace(tmp, root)
            (root / ".complete").write_text("ok\n", encoding="utf-8")
    return root / ARCHIVE_ROOT


_bundles: dict[str, bytes] = {}
"""Shipped workspaces this worker was given (``dask_ship.ShippedWorkspace``), by session."""


def keep_bundle(session: str, data: bytes) -> None:
    with _unpack_lock:
        _bundles[session] = data


def has_bundle(session: str) -> bool:
    """Run on workers as a shipped run sets up: the session's workspace is here."""
    with _unpack_lock:
        return session in _bundles


def drop_bundle(session: str) -> None:
    with _unpack_lock:
        _bundles.pop(session, None)


def release_workspace(digest: str, session: str, dask_worker: Any = None) -> bool:
    """Run on every worker at the end of a shipped run: remove the workspace copy
    unpacked for it, unless another ``rook run`` (a shard shipping the same bundle) or
    a task of this one still uses it, so long-lived workers do not keep a copy of
    every run's workspace. Returns whether a copy was removed."""
    with _active_lock:
        if _active.get(session):  # a task that did not stop: leave its files alone
            return False
    with _unpack_lock:
        users = _users.get(digest, set())
        users.discard(session)
        if users:
            return False
        _users.pop(digest, None)
        if dask_worker is None:
            return False
        root = Path(dask_worker.local_directory) / "rook-workspaces" / digest
        if not root.exists():
            return False
        shutil.rmtree(root, ignore_errors=True)
        return True


def pack_dir(path: Path, limit: int | None = None) -> bytes | None:
    """A directory as a gzipped tar (``None`` when empty): a scenario's state going back.
    Over ``limit`` bytes compressed, or :data:`UNPACKED_TIMES` that unpacked, raises
    :class:`TooBig` as soon as it is."""
    if not path.is_dir() or not any(path.iterdir()):
        return None
    buf = _Capped(limit)
    sizes = _Sizes(limit)

    def count(info: tarfile.TarInfo) -> tarfile.TarInfo:
        if info.isfile():
            sizes.add(info.name, info.size)
        return info

    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for child in sorted(path.iterdir()):
            tar.add(str(child), arcname=child.name, filter=count)
    return buf.getvalue()


def unpack_dir(data: bytes, dest: Path) -> None:
    """A scenario's state from :func:`pack_dir` into ``dest``. What a hook left there
    that is no data (a named pipe, a device) or leads out of ``dest`` (a link to
    ``/dev/zero``, to ``../..``) is left out, never the reason the run stops."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if _inside(m, dest)]
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, members, filter=_data_or_nothing)
        else:  # Python < 3.10.12: the members were checked above
            tar.extractall(dest, members)  # noqa: S202


def _data_or_nothing(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    try:
        return tarfile.data_filter(member, path)
    except tarfile.FilterError:
        return None  # left out, as _inside leaves it out


def _inside(member: tarfile.TarInfo, dest: Path) -> bool:
    """Whether ``member`` is a file, a folder or a link that stays inside ``dest``."""
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return False  # a named pipe, a device
    top = dest.resolve()
    target = Path(os.path.normpath(top / member.name))
    if member.issym():
        target = Path(os.path.normpath(target.parent / member.linkname))
    elif member.islnk():  # a hard link names another member
        target = Path(os.path.normpath(top / member.linkname))
    return target == top or top in target.parents


def loaded() -> bool:
    """Run on every worker as a run sets up: it has Rook's worker code (this module)."""
    return True


def sees(path: str, token: str) -> bool:
    """Run on every worker: does it see the driver's probe file (a shared file system)?"""
    try:
        return Path(path).read_text(encoding="utf-8").strip() == token
    except OSError:
        return False


# -- the engine on the worker ------------------------------------------------------------

_rook: Any = None
_rook_lock = threading.Lock()
_active: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]]] = {}
_active_lock = threading.Lock()
_keys: dict[asyncio.Task[Any], tuple[str, int]] = {}
"""The Dask task each scenario run in :data:`_active` runs as: its key, and its worker's
``id`` (a process may hold several workers: an in-process cluster)."""
_stopping: set[asyncio.Task[Any]] = set()
"""Scenario runs cancelled already (:func:`cancel_run`, :func:`_stop_released`): once."""
_watched: weakref.WeakSet[Any] = weakref.WeakSet()
"""The workers on which :func:`_stop_released` runs, once a second (weakly: in a
process holding several workers, a closed one's ``id`` may come back as a new one's)."""
RELEASED_EVERY = 1.0


def _plugins(say_slow: Callable[[str, str], None] | None = None) -> Any:
    """The worker process's plugin manager, built by its first scenario run, which is
    given ``say_slow``: how to tell its driver of a plugin slow to load."""
    global _rook
    if _rook is None:  # once a worker process (again, harmlessly, by a thread that raced it)
        _own_exit_statuses()
    with _rook_lock:
        if _rook is None:
            procscan.become_subreaper()  # as the driver does: escaped daemons stay findable
            _rook = build_plugin_manager(say_slow=say_slow)
        return _rook


def _own_exit_statuses() -> None:
    """Take SIGCHLD back to its default when the worker was started ignoring it (a
    Perl or PHP supervisor's ``$SIG{CHLD} = 'IGNORE'``, kept across exec and by the
    nanny's worker process), or the kernel reaps every hook and its exit status is
    lost: one that answered and exited 3 would pass. Only the main thread can set a
    signal's disposition (:func:`procscan.own_exit_statuses` does nothing elsewhere),
    and Rook's engine is built on a task's thread: the worker's event loop, on its
    main thread in a ``dask worker`` and its nanny's process, does it. Asked from
    :func:`_plugins` before the engine is first built (and before
    :func:`procscan.become_subreaper`, which does it where it can), so that no hook
    ever starts with SIGCHLD ignored."""
    if threading.current_thread() is threading.main_thread():
        return  # become_subreaper does it here
    try:
        if signal.getsignal(signal.SIGCHLD) != signal.SIG_IGN:
            return
        from distributed import get_worker

        loop = get_worker().loop
    except (AttributeError, ImportError, ValueError):  # no SIGCHLD, or not in a worker
        return
    done = threading.Event()

    def reset() -> None:
        try:
            procscan.own_exit_statuses()  # does nothing where the loop is no main thread
        finally:
            done.set()

    loop.add_callback(reset)
    done.wait(10)  # a worker whose event loop does not answer has worse troubles


def worker_engine(job: WorkerJob, root: Path, secrets: RunSecrets) -> Engine:
    """The run's engine, rebuilt on this worker against its copy of the workspace."""
    rook = _plugins()
    agent = Agent(root, job.project, job.agent)
    profile = profile_from_dict(copy.deepcopy(job.profile_raw), rook.transports, job.profile_source)
    profile.path = root / job.profile_rel if job.profile_rel else Path(job.profile_source)
    resolve_entries(rook, profile, agent)
    run = RunDir(root / job.run_rel, secrets.redactor)
    engine = Engine(
        rook,
        agent,
        profile,
        run,
        list(job.phases),
        secrets.redactor,
        observed_before=dict(job.observed),
    )
    engine.base_env.update(secrets.env)  # the judging context shares this dict
    engine.ctx.saved.update(secrets.saved)  # (loaded for this scenario run alone)
    engine.resume = job.resume or engine.resume  # the worker's RunDir knows no shard
    return engine


_lacking: dict[str, str | None] = {}
"""Per ``rook run`` session (:attr:`WorkerJob.topic`): what this worker lacks, or ``None``."""


def lacking(job: WorkerJob, address: str) -> str | None:
    """What of the driver's plugins this worker has not got (the run's transports, and
    its criterion types when the judge runs here), as a message naming the worker and
    saying what to do, or ``None``. Worked out once per worker and ``rook run``."""
    with _rook_lock:
        if job.topic in _lacking:
            return _lacking[job.topic]
    problem = _lacking_now(job, address)
    with _rook_lock:
        if len(_lacking) > 256:  # a long-lived worker: forget old runs
            _lacking.clear()
        _lacking[job.topic] = problem
    return problem


def _lacking_now(job: WorkerJob, address: str) -> str | None:
    rook = _plugins()
    parts, dists, listing = [], set(), ""
    for key, t in job.transports.items():
        if key not in rook.transports:
            phases = t.get("phases", ())
            used = ", ".join(f"hooks.{p}" for p in phases)
            verb = "uses" if len(phases) == 1 else "use"
            parts.append(
                f"transport {key!r} ({used} {verb} it), which plugin {t.get('owner', '?')} "
                "provides where rook run runs"
            )
            dists.add(t.get("distribution", ""))
            listing = f"; installed on that worker: {rook.transports.listing()}"
    for name, t in job.criteria.items():
        if name not in rook.criteria:
            parts.append(
                f"criterion type {name!r} (the scenarios use it), which plugin "
                f"{t.get('owner', '?')} provides where rook run runs"
            )
            dists.add(t.get("distribution", ""))
            listing = listing or switches_note()
    if not parts:
        return None
    names = sorted(dists - {"", OWN})
    install = f" (pip install {' '.join(names)} there)" if names else ""
    return (
        f"Dask worker {address} has no " + "; no ".join(parts) + f"{listing}. Install the "
        f"same Rook plugins on every Dask worker as where rook run runs{install}"
    )


async def _compute(
    engine: Engine,
    sr: Any,
    record: dict[str, Any],
    todo: list[str],
    session: str,
    key: tuple[str, int] | None = None,
) -> None:
    redact.use(engine.redactor)  # what this task cuts for a message is redacted first
    count_cancellations()  # Python 3.10: a plugin's own CancelledError is told
    task = asyncio.current_task()
    entry = (asyncio.get_running_loop(), task)
    with _active_lock:
        _active.setdefault(session, set()).add(entry)  # type: ignore[arg-type]
        if key is not None and task is not None:
            _keys[task] = key
    try:
        await engine.start_transports()
        try:
            await engine.compute_scenario(sr, record, todo)
        finally:
            await engine.stop_transports()
    finally:
        with _active_lock:
            _active.get(session, set()).discard(entry)  # type: ignore[arg-type]
            if not _active.get(session, True):
                del _active[session]
            if task is not None:
                _keys.pop(task, None)
                _stopping.discard(task)


def _watch_released(worker: Any) -> None:
    """Once per worker process: every second, :func:`_stop_released` (a periodic callback
    on the worker's event loop, where its task states live; stopped as the worker closes)."""
    with _active_lock:
        if worker in _watched:
            return
        _watched.add(worker)

    def start() -> None:
        from tornado.ioloop import PeriodicCallback

        def tick() -> None:
            _stop_released(worker)

        pc = PeriodicCallback(tick, RELEASED_EVERY * 1000)
        worker.periodic_callbacks["rook-released"] = pc
        pc.start()

    worker.loop.add_callback(start)


def _stop_released(worker: Any) -> int:
    """Cancel the scenario runs whose Dask task the scheduler released while it ran (its
    ``rook run`` is gone, killed with SIGKILL, so its client is; or it cancelled the task):
    their hooks are killed as those of a cancelled run (:func:`cancel_run`), never left
    to run to their timeouts, holding this worker's threads. Returns how many."""
    with _active_lock:
        running = [
            (loop, task, _keys[task][0])
            for entries in _active.values()
            for loop, task in entries
            if task in _keys and _keys[task][1] == id(worker) and task not in _stopping
        ]
    released = []
    for loop, task, key in running:
        ts = worker.state.tasks.get(key)
        if ts is None or ts.state in ("cancelled", "released", "forgotten"):
            released.append((loop, task))
    with _active_lock:
        for loop, task in released:
            if task in _keys and task not in _stopping:
                _stopping.add(task)
                with suppress(RuntimeError):  # it ended meanwhile: its loop closed
                    loop.call_soon_threadsafe(task.cancel)
    return len(released)


def _event(worker: Any, topic: str, msg: dict[str, Any]) -> None:
    try:
        worker.log_event(topic, msg)
    except Exception:  # evidence also comes back whole with the result
        pass


@contextmanager
def _no_signal_blocked() -> Iterator[None]:
    """No signal blocked in this thread while it runs a scenario: the hooks it
    starts inherit its signal mask, and a Dask worker's threads may hold signals
    blocked (SIGINT while Rook's LocalCluster started, SIGTERM while
    multiprocessing started a helper), so that a hook there could not be
    stopped by them. A hook gets SIGINT and SIGTERM as in a local run."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_SETMASK, ())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def run_on_worker(
    job: WorkerJob,
    sr: Any,
    record: dict[str, Any],
    todo: list[str],
    clean: bool = False,
) -> dict[str, Any]:
    """The Dask task: run ``todo`` of one scenario run; return the record (never store it).

    ``clean``: the run starts from its beginning and the driver saw its state directory
    empty. Files found there now were left by an earlier attempt of this very task (Dask
    runs it again when its worker was lost): they are set aside, so that this attempt
    starts as the first did (:meth:`~rook_core.engine.Engine.set_aside_state`)."""
    from distributed import get_worker
    from distributed.worker import thread_state

    worker = get_worker()
    _watch_released(worker)
    token = uuid.uuid4().hex
    _event(worker, job.topic, {"type": "start", "key": sr.key, "token": token})
    if _rook is None:  # this worker's first: a plugin slow to load is named to the driver

        def say_slow(who: str, doing: str) -> None:
            message = slow_plugin(who, doing, " in the Dask worker's environment")
            _event(worker, job.topic, {"type": "slow-plugin", "message": message})

        _plugins(say_slow)
    problem = lacking(job, worker.address)
    if problem:
        raise WorkerSetupFailed(problem, worker.address, token)
    if job.mode == "ship":
        assert job.digest is not None
        with _unpack_lock:
            bundle = _bundles.get(job.topic)
        if bundle is None:  # the plugin failed to set up here (its log says why)
            raise WorkerSetupFailed(
                f"Dask worker {worker.address} has no copy of the shipped workspace "
                f"{job.workspace} (its worker plugin did not set up there: see its log)",
                worker.address,
                token,
            )
        base = Path(worker.local_directory)
        try:
            root = unpacked(bundle, job.digest, base, job.topic)
        except Exception as exc:  # this worker's disk, not the scenario: say which worker
            raise WorkerSetupFailed(
                f"Dask worker {worker.address} could not unpack the shipped workspace "
                f"{job.workspace} into {base / 'rook-workspaces'}: {exception_text(exc)}",
                worker.address,
                token,
            ) from None
    else:
        if job.probe is None or not sees(job.probe, job.probe_token):
            raise WorkspaceNotShared(
                f"worker {worker.address} does not see the workspace {job.workspace} "
                "(no shared file system at the same path); let Rook ship it "
                "(ROOK_DASK_WORKSPACE=ship or auto) or mount it on every worker",
                worker.address,
                token,
            )
        root = Path(job.workspace)
    try:
        secrets = secrets_of(job.topic, job.secrets_key, wait=0)
        if secrets is None:  # a worker the driver has not given them yet (joined, restarted)
            _event(worker, job.topic, {"type": "secrets", "worker": worker.address})
            secrets = secrets_of(job.topic, job.secrets_key)
    except ValueError as exc:
        raise WorkerSetupFailed(
            f"Dask worker {worker.address} could not load this run's secrets: {exc}",
            worker.address,
            token,
        ) from None
    if secrets is None:  # (the driver gives them to a worker that joins within a second)
        raise WorkerSetupFailed(
            f"Dask worker {worker.address} was not given this run's secrets by rook run "
            f"within {SECRETS_WAIT:g} s",
            worker.address,
            token,
        )
    try:
        engine = worker_engine(job, root, secrets)
    except RookError as exc:  # the driver accepted it: say that it is this worker's doing
        raise WorkerSetupFailed(
            f"Dask worker {worker.address} could not set up the run, where rook run could: {exc}",
            worker.address,
            token,
        ) from None
    aside = engine.set_aside_state(sr.key) if clean else None
    # shipped: where this copy of the workspace is (and its real path), for the driver to
    # name its own workspace instead in what Rook wrote (see executor_dask.worker_paths)
    roots = [str(root), os.path.realpath(root)] if job.mode == "ship" else []

    def observe(rec: dict[str, Any] | None, result: Any) -> None:
        if rec is not None and rec.get("hooks"):
            _event(
                worker,
                job.topic,
                {
                    "type": "hook",
                    "key": sr.key,
                    "token": token,
                    "seq": len(rec["hooks"]) - 1,
                    "hook": rec["hooks"][-1],
                    "roots": roots,
                },
            )

    engine.observe = observe
    with _ran_lock:  # what its end-of-run clean-up kills here, and then redacts
        dirs, judged, late = _ran.setdefault(job.topic, ([], [], []))
        dirs.append(str(engine.run_dir.state / sr.key))
        judged.append(str(engine.run_dir.path / "judge" / "state" / f"{sr.key}-j"))
        while len(_ran) > SECRETS_KEPT:  # a run killed before its clean-up: as before,
            for callback in _ran.pop(next(iter(_ran)))[2]:  # the next idle one runs them
                process.when_leftovers_killed(callback)
    interrupted = False
    try:
        with _no_signal_blocked(), process.leftovers_apart(late):
            key = getattr(thread_state, "key", None)
            dask_task = (key, id(worker)) if key is not None else None
            asyncio.run(_compute(engine, sr, record, todo, job.topic, dask_task))
    except asyncio.CancelledError:
        interrupted = True
    state = None
    if job.mode == "ship":
        try:
            state = pack_dir(engine.run_dir.state / sr.key, job.ship_limit)
        except TooBig as exc:  # the verdict stands: only the files stay behind
            record.setdefault("warnings", []).append(
                f"its state directory was not brought back from Dask worker {worker.address}: "
                f"it {exc.why('brings back')}; the run's folder does not hold it (a later "
                f"rook run --run {job.run_id} --phases collect,judge would not find it): use a "
                "shared file system, or raise ROOK_DASK_SHIP_LIMIT_MB"
            )
    return {
        "record": record,
        "token": token,
        "worker": worker.address,
        "state": state,
        "interrupted": interrupted,
        "roots": roots,
        # shared: where the lost attempt's files went (shipped: they stayed on its worker)
        "state_set_aside": aside if job.mode == "shared" else None,
    }


def cancel_run(session: str) -> int:
    """Run on every worker: cancel the scenarios in flight of one ``rook run`` invocation
    (``session``: its :attr:`WorkerJob.topic`; never the run id, which the shards of a
    sharded run share), their hooks killed as on the driver: process group, then
    escaped descendants. Returns how many."""
    with _active_lock:
        entries = [(loop, t) for loop, t in _active.get(session, ()) if t not in _stopping]
        _stopping.update(t for _, t in entries)
    for loop, task in entries:
        with suppress(RuntimeError):  # it ended meanwhile: its loop closed
            loop.call_soon_threadsafe(task.cancel)
    return len(entries)


_ran: dict[str, tuple[list[str], list[str], list[Any]]] = {}
"""Per ``rook run`` session (:attr:`WorkerJob.topic`): the state directories of the
scenario runs its tasks ran here, the judge's state directories' prefixes for them, and
what they asked to run once their leftovers are killed (a Ruhroh transport's late
redaction: :func:`rook_core.process.when_leftovers_killed`)."""
_ran_lock = threading.Lock()


def cleanup_run(run_id: str, session: str = "", dask_worker: Any = None) -> list[str]:
    """Run on every worker at the end of a run: drop the ``session``'s secrets, kill what
    its hooks left behind, as the driver does at the end of a local run, then run what
    its transports asked to run after that (a late result file redacted). With nothing
    running here, every leftover of the run (and its hooks' process groups); while
    another run's task runs (a shared cluster, another shard of the run), only the
    processes of the scenario runs the session ran here (by their ``ROOK_STATE_DIR``)."""
    drop_secrets(session)
    with _ran_lock:
        dirs, judged, late = _ran.pop(session, ([], [], []))
    running = getattr(getattr(dask_worker, "state", None), "all_running_tasks", ())
    if not running:
        notes = process.kill_leftovers({"ROOK_RUN_ID": run_id})
    else:
        notes = []
        for pid in procscan.leftovers(run_id, dirs, judged) if dirs else ():
            for kill in (os.killpg, os.kill):  # a hook leads its own process group
                with suppress(ProcessLookupError, PermissionError):
                    kill(pid, signal.SIGKILL)
            notes.append(f"killed pid {pid}, a hook's descendant that outlived its hook")
    for callback in late:
        with suppress(Exception):  # one's failure never keeps the others from running
            callback()
    return notes


__all__ = [
    "IN_ROOKS_WORDS",
    "RunSecrets",
    "WorkerJob",
    "WorkerSetupFailed",
    "TooBig",
    "WorkspaceNotShared",
    "build_bundle",
    "cancel_run",
    "cleanup_run",
    "drop_bundle",
    "drop_secrets",
    "has_bundle",
    "keep_bundle",
    "keep_secrets",
    "lacking",
    "loaded",
    "pack_dir",
    "release_workspace",
    "run_on_worker",
    "seal",
    "secrets_of",
    "sees",
    "unpack_dir",
    "unpacked",
    "worker_engine",
]
