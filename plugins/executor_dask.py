"""Built-in executor ``dask``: scenario runs spread over a Dask distributed cluster.

    rook run --executor dask --scheduler tcp://scheduler:8786 -j 64
    rook run --executor dask -j 8        # no --scheduler: a LocalCluster here

An optional extra: ``pip install 'rook-harness[dask]'`` (on the driver and on
every worker). Prepare runs once, on the driver. Each scenario run's whole
lifecycle is one Dask task: the worker runs the same engine code as the
default executor (:mod:`rook_plugins.dask_worker`), streams every hook result
back as it happens (observers run here), and returns the record; this driver
alone stores it, so crash safety and redaction hold as in a local run.

* ``--concurrency`` scenario runs are in flight at once, cluster-wide.
* A worker lost mid-scenario: Dask runs the scenario again on another worker,
  once; lost again, it is recorded as an infrastructure error (not final: a
  later ``rook run --run ID`` tries it again).
* The workspace: when every worker sees the run directory at the same path
  (a probe file proves it) it is used in place; otherwise it is shipped with
  the job, once per worker, up to ``ROOK_DASK_SHIP_LIMIT_MB`` (default 64 MiB
  compressed). ``ROOK_DASK_WORKSPACE=shared|ship`` forces one way. Shipped, what
  Rook wrote in a record (reasons, warnings, verdicts, diagnoses) names the
  driver's workspace, not the worker's copy (:func:`localize`).
* With a judge profile (``rubric`` criteria), the judge phase runs here, on
  the driver, after the worker returns the evidence.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import math
import os
import pickle
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from rook_core.errors import ConfigError, RookError, RunStopped, counted, exception_text
from rook_core.hookspecs import hookimpl
from rook_core.models import INFRA_ERROR, HookResult
from rook_core.report import printable, run_seconds

from .dask_cluster import (
    CONNECT_TIMEOUT,
    MAX_ATTEMPTS,
    address_problem,
    connected,
    local_size,
    quiet_dask_logs,
    scheduler_file,
    scheduler_file_problem,
    unreachable,
)

if TYPE_CHECKING:
    from .dask_worker import WorkerJob

CANCEL_GRACE = 10.0
WORKER_WAIT = 60.0
WATCH_EVERY = 1.0  # how often the driver asks the scheduler whether any worker is left
MODES = ("auto", "shared", "ship")
EXTRA = "pip install 'rook-harness[dask]'"


def _mode() -> str:
    return os.environ.get("ROOK_DASK_WORKSPACE", "auto").strip().lower() or "auto"


def _ship_limit() -> int:
    raw = os.environ.get("ROOK_DASK_SHIP_LIMIT_MB", "64")
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"ROOK_DASK_SHIP_LIMIT_MB={raw}: must be a number of MiB") from None
    if not math.isfinite(value):
        raise ConfigError(f"ROOK_DASK_SHIP_LIMIT_MB={raw}: must be a number of MiB") from None
    if value < 0:
        raise ConfigError(f"ROOK_DASK_SHIP_LIMIT_MB={raw}: must be >= 0")
    return int(value * 1024 * 1024)


def _worker_wait() -> float:
    """How long a run waits for a first worker, or for one to join again when every
    worker has left (``ROOK_DASK_WORKER_WAIT``, seconds; an autoscaled cluster may
    need longer than the default)."""
    raw = os.environ.get("ROOK_DASK_WORKER_WAIT", "").strip()
    if not raw:
        return WORKER_WAIT
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"ROOK_DASK_WORKER_WAIT={raw}: must be a number of seconds") from None
    if not 0 < value < math.inf:
        raise ConfigError(f"ROOK_DASK_WORKER_WAIT={raw}: must be a number of seconds above 0")
    return value


def worker_paths(roots: Iterable[str], workspace: str) -> Callable[[str], str]:
    """A function that names the driver's ``workspace`` wherever a text names a worker's
    copy of it (``roots``: the copy's path and its real path), as a path or a path's
    start; other texts come back as they are."""
    names = {r.rstrip("/") for r in roots if r and r.rstrip("/") and r.rstrip("/") != workspace}
    if not names:
        return lambda text: text
    longest_first = sorted(names, key=len, reverse=True)  # /tmp/x inside /private/tmp/x
    pattern = re.compile("(?:" + "|".join(re.escape(n) for n in longest_first) + r")(?![\w-])")
    return lambda text: pattern.sub(lambda _: workspace, text)


REWRITTEN = ("reason", "warnings", "criteria")
"""What a shipped run's record says in Rook's own words (see :func:`localize`)."""


def localize(
    record: dict[str, Any], fix: Callable[[str], str], redact: Callable[[str], str]
) -> None:
    """Name the driver's workspace, not the worker's copy, in what Rook wrote in the
    ``record`` of a shipped run: its ``reason`` and ``warnings``, its criteria's
    verdicts (reasons and evidence: judged already, on the worker) and its hooks'
    ``diagnosis`` (lost and interrupted attempts' too). What the agent produced
    (turns, collected evidence, a hook's output and data) is kept as it came: criteria
    judge it, now or in a later ``--phases judge``. A text changed is redacted again."""

    def text(value: Any) -> Any:
        if isinstance(value, str):
            fixed = fix(value)
            return value if fixed == value else redact(fixed)
        if isinstance(value, list):
            return [text(v) for v in value]
        if isinstance(value, dict):
            return {k: text(v) for k, v in value.items()}
        return value

    for key in REWRITTEN:
        if key in record:
            record[key] = text(record[key])
    hooks = [*record.get("hooks", ())]
    for attempt in (*record.get("attempts", ()), *record.get("interrupted_attempts", ())):
        hooks.extend(attempt.get("hooks", ()) if isinstance(attempt, dict) else ())
    for hook in hooks:
        localize_hook(hook, fix, redact)


def localize_hook(
    hook: dict[str, Any], fix: Callable[[str], str], redact: Callable[[str], str]
) -> dict[str, Any]:
    """A hook record's ``diagnosis`` naming the driver's workspace (see :func:`localize`)."""
    diagnosis = hook.get("diagnosis")
    if isinstance(diagnosis, str):
        fixed = fix(diagnosis)
        if fixed != diagnosis:
            hook["diagnosis"] = redact(fixed)
    return hook


def _starts_clean(engine: Any, key: str, record: dict[str, Any]) -> bool:
    """Whether scenario run ``key`` starts from its beginning with an empty state
    directory (see :func:`rook_plugins.dask_worker.run_on_worker`'s ``clean``)."""
    if record.get("phases_done") or record.get("hooks"):
        return False  # a later phase: the earlier phases' files are its state
    try:
        with os.scandir(engine.run_dir.state / key) as entries:
            return next(entries, None) is None
    except (FileNotFoundError, NotADirectoryError):
        return True


async def _outcome(future: Any) -> tuple[bool, Any]:
    try:
        return True, await future
    except (Exception, asyncio.CancelledError) as exc:
        return False, exc


PROBE = ".dask-probe-"


def _hold_probe(probe: Path, token: str) -> IO[str]:
    """Write the probe that proves a shared file system, holding an ``flock`` on it for
    the length of the run (its open file): the kernel drops the lock when this process
    dies, however it dies, so a later run tells a killed run's probe from a live one's
    (:func:`_remove_stale_probes`). Locked before the token is written: a probe with
    no token is one being written, never taken for stale (a run sweeping it holds its
    lock for a moment, so this waits for that)."""
    fh = open(probe, "x", encoding="utf-8")  # noqa: SIM115 - held until the run's end
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    except OSError:  # a file system without locks: the probe works, never swept
        pass
    fh.write(token)
    fh.flush()
    return fh


def _remove_stale_probes(runs: Path) -> None:
    """Remove the probes of Dask runs that are gone without removing theirs
    (SIGKILLed, their machine lost): those whose lock no process holds any more.
    Once per run, in the agent's ``runs/`` only; what cannot be read is left alone."""
    try:
        found = [e.path for e in os.scandir(runs) if e.name.startswith(PROBE)]
    except OSError:
        return
    for path in found:
        try:
            with open(path, "r+", encoding="utf-8") as fh:  # writable: an flock on NFS needs it
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on close
                if fh.read():  # empty: a run writing it now
                    os.unlink(path)
        except OSError:  # held by a live run, or gone already
            continue


def _remote_error(exc: BaseException) -> str:
    """A worker's error as Dask hands it over: ``Exception("ImportError('x')")`` when the
    worker could not even load what it was sent, said as ``ImportError: x``."""
    text = exception_text(exc)
    match = re.fullmatch(r"Exception: (\w+(?:Error|Exception))\((['\"])(.*)\2\)", text, re.S)
    return f"{match.group(1)}: {match.group(3)}" if match else text


UNREADABLE = "Error during deserialization of the task graph"


def _unreadable(exc: BaseException) -> bool:
    """Whether a task failed on the scheduler, which could not read it (Dask reads each
    task there: a scheduler without Rook, or a broken one, cannot)."""
    return isinstance(exc, RuntimeError) and str(exc).startswith(UNREADABLE)


def _plugin_of(registry: Any, name: str) -> dict[str, Any]:
    return {"owner": registry.owner(name), "distribution": registry.distribution(name)}


class _Session:
    """One ``rook run`` invocation's use of a Dask cluster."""

    def __init__(self, engine: Any, client: Any) -> None:
        from . import dask_worker  # with the session: `rook run` without Dask never loads it

        self.w = dask_worker
        self.engine = engine
        self.client = client
        self.run_id = engine.ctx.id
        self.topic = f"rook-{self.run_id}-{uuid.uuid4().hex[:8]}"
        self.judge_here = engine.judging.client is not None
        self.sent: dict[str, dict[str, Any]] = {}
        # when each scenario run was handed to Dask: its wall-clock time (its start,
        # if a lost worker's run never said) and the monotonic clock's (its seconds)
        self.sent_at: dict[str, tuple[float, float]] = {}
        self.futures: dict[str, Any] = {}
        self.starts: dict[str, list[tuple[str, str]]] = {}
        self.streamed: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
        self.notified: set[tuple[str, str, int]] = set()
        self.given_up: set[str] = set()
        self.fixes: dict[tuple[str, ...], Callable[[str], str]] = {}
        self.job: WorkerJob | None = None
        self.secrets = b""
        """The run's :class:`~rook_plugins.dask_worker.RunSecrets`, pickled (:meth:`setup`)."""
        self.giving: set[str] = set()  # workers being given the secrets they asked for
        self.shipped: str | None = None  # the name of the shipped workspace's worker plugin
        self.probe: Path | None = None
        self._probe_held: IO[str] | None = None  # the probe, open and locked while the run lasts
        self._cancel: asyncio.Future[Any] | None = None
        self.no_workers: str | None = None
        """Set when every worker left and none joined in time: why the run stops."""
        self.unreadable: str | None = None
        """Set when the scheduler could not read a scenario run's task: why the run stops."""
        self._shipped_plugin: Any = None
        self.scheduler_id: Any = None
        """The scheduler's id as the run set up (a scheduler started anew has another)."""
        self._rejoining = asyncio.Lock()
        self.workers: list[str] | None = None
        """The workers that take the scenario runs, when some may not: those that loaded
        Rook (:meth:`_workers_load_rook`), less those in :attr:`left_out`."""
        self.left_out: set[str] = set()
        """Workers that failed a scenario run for their own sake (:meth:`_elsewhere`)."""
        self.asked: set[str] = set()
        """Workers asked whether they load Rook (:meth:`_workers_load_rook`, :meth:`_admit`)."""
        self.refused: dict[str, list[str]] = {}  # scenario run -> why workers could not run it
        self.failed_tokens: set[str] = set()  # those attempts (never lost attempts)
        self.slow_said: set[tuple[Any, str]] = set()  # (worker, message) of a slow plugin
        self.lost_tasks: dict[str, list[str]] = {}
        """This run's tasks the scheduler said (topic ``all``) it lost a worker while it
        ran, by task key: the workers, oldest first (:meth:`_on_cluster_event`)."""
        self.disconnected = False
        """Set when the connection to the scheduler was lost for good (Dask's client gave
        up reconnecting) with scenario runs left to send: the run stops."""

    # -- setting up --------------------------------------------------------

    async def setup(self, work: list[Any]) -> None:
        self.client.subscribe_topic(self.topic, self._on_event)
        self.client.subscribe_topic("all", self._on_cluster_event)
        try:
            await self.client.wait_for_workers(1, timeout=_worker_wait())
        except (asyncio.TimeoutError, TimeoutError):
            raise RunStopped(
                f"--executor dask: no Dask worker joined the scheduler within "
                f"{_worker_wait():g} s (ROOK_DASK_WORKER_WAIT)"
            ) from None
        self.scheduler_id = self.client.scheduler_info().get("id")
        e = self.engine
        ws = e.agent.workspace
        profile = e.profile
        # the run's secrets, never in a task: Dask logs a task that a worker or the scheduler
        # cannot read (no Rook there); only workers that load Rook are given them, sealed
        # (Dask logs client.run's arguments at DEBUG level), the key in the task
        key = os.urandom(32)
        self.secrets = self.w.seal(
            pickle.dumps(
                self.w.RunSecrets(
                    e.redactor,
                    {
                        v.variable: os.environ[v.variable]
                        for v in profile.env
                        if v.variable in os.environ
                    },
                    dict(e.ctx.saved),
                )
            ),
            key,
        )
        await self._scheduler_loads_rook()
        await self._workers_load_rook()
        try:
            rel = str(Path(profile.path).relative_to(ws)) if profile.path else None
        except ValueError:
            rel = None
        self.job = self.w.WorkerJob(
            run_id=self.run_id,
            workspace=str(ws),
            run_rel=str(e.run_dir.path.relative_to(ws)),
            project=e.agent.project,
            agent=e.agent.name,
            profile_raw=profile.raw,
            profile_source=str(profile.path),
            profile_rel=rel,
            phases=list(e.phases),
            topic=self.topic,
            secrets_key=key,
            resume=e.resume,
            transports=self._transports(),
            criteria=self._criteria(work),
        )
        await self._place_workspace()

    async def _scheduler_loads_rook(self) -> None:
        """Once per run (and on a scheduler started anew): whether the scheduler loads
        Rook's code. Dask reads each task there: one that cannot would fail every scenario
        run sent (:func:`_unreadable`), so the run stops here, before any is sent."""
        try:
            await self.client.run_on_scheduler(self.w.loaded)
        except (ImportError, AttributeError) as exc:  # as unpickling the function failed
            raise RunStopped(
                f"--executor dask: the Dask scheduler at {self.client.scheduler.address} "
                f"cannot load Rook ({_remote_error(exc)}), so it cannot read Rook's tasks: "
                "install rook-harness[dask] there, the same version as where rook run runs"
            ) from None

    async def _loads_rook(self, workers: list[str] | None = None) -> dict[str, str]:
        """Ask ``workers`` (all: ``None``) whether they load Rook's worker code; give those
        that do the run's secrets (:meth:`_give_secrets`). Returns why each other cannot
        run Rook's work."""
        answers = await self.client.run(self.w.loaded, workers=workers, on_error="return")
        self.asked |= set(answers)
        broken = {
            w: f"cannot run Rook's work there: {_remote_error(a)}"
            for w, a in answers.items()
            if isinstance(a, BaseException)
        }
        good = sorted(w for w in answers if w not in broken)
        return {**broken, **(await self._give_secrets(good) if good else {})}

    async def _give_secrets(self, workers: list[str]) -> dict[str, str]:
        """Give ``workers`` (each loaded Rook) the run's secrets, which they keep in memory
        for the run (:func:`~rook_plugins.dask_worker.keep_secrets`); a scenario run's task
        carries none. Returns why each that did not take them could not."""
        kept = await self.client.run(
            self.w.keep_secrets, self.topic, self.secrets, workers=workers, on_error="return"
        )
        why = {w: _remote_error(k) if isinstance(k, BaseException) else k for w, k in kept.items()}
        return {w: f"could not take this run's secrets: {k}" for w, k in why.items() if k}

    async def _workers_load_rook(self) -> None:
        """Once per run (a worker that joins later: :meth:`_admit`): which workers can load
        Rook's worker code, each given the run's secrets. One that cannot (no
        Rook there, or a broken one) would fail the probe, the shipped workspace and every
        scenario run Dask gave it: it is left out (:attr:`workers`), named in a warning;
        when no worker can, the run stops here, naming each, never a worker it is not."""
        self.asked = set()
        broken = await self._loads_rook()
        answers = self.asked
        if not broken:
            return
        said = "; ".join(f"Dask worker {w} {why}" for w, why in sorted(broken.items()))
        fix = (
            "Install rook-harness[dask] on every Dask worker, the same version as where "
            "rook run runs, or stop those workers"
        )
        if len(broken) == len(answers):
            raise RunStopped(f"--executor dask: {said}. {fix}")
        self.workers = sorted(w for w in answers if w not in broken)
        n = len(self.workers)
        self._warn(
            f"--executor dask: {said}; the scenario runs go to the {n} other Dask "
            f"worker{'s' if n > 1 else ''}. {fix}"
        )

    def _warn(self, message: str) -> None:
        text = self.engine.redactor.text(f"rook: warning: {message}")
        sys.stderr.write(printable(text) + "\n")

    def _where(self) -> dict[str, Any]:
        """``client.submit``'s worker restrictions: none, or the workers that loaded Rook
        (:meth:`_workers_load_rook`), strict: loose ones let Dask's work stealing move a
        task to a worker left out, which cannot even read it and drops its connection.
        Once every one of them has left, :meth:`watch_workers` stops the run in time."""
        if self.workers is None:
            return {}
        return {"workers": self.workers, "allow_other_workers": False}

    async def _register_shipped(self, plugin: Any, name: str) -> None:
        """Register the shipped workspace's worker plugin. A worker left out
        (:attr:`workers`) cannot unpickle it, and Dask's client raises that worker's
        error (the scheduler keeps the plugin, and still hands it to the others): then
        what counts is that every other worker has it."""
        try:
            await self.client.register_plugin(plugin, name)
            return
        except Exception:
            if self.workers is None:
                raise
            failed = sys.exc_info()[1]
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while True:  # the scheduler's broadcast goes on to the others after the error
            kept = await self.client.run(
                self.w.has_bundle, self.topic, workers=self.workers, on_error="return"
            )
            if all(k is True or isinstance(k, BaseException) for k in kept.values()):
                return  # (a worker that left meanwhile has no say)
            if time.monotonic() > deadline:
                raise failed  # type: ignore[misc]
            await asyncio.sleep(0.1)

    def _transports(self) -> dict[str, dict[str, Any]]:
        """The profile's transports as the driver has them (for a worker that has not)."""
        registry = self.engine.rook.transports
        used: dict[str, dict[str, Any]] = {}
        for phase, entry in self.engine.profile.hooks.items():
            key = entry.transport
            t = used.setdefault(key, _plugin_of(registry, key))
            t.setdefault("phases", []).append(phase)
        return used

    def _criteria(self, work: list[Any]) -> dict[str, dict[str, Any]]:
        """The criterion types the workers judge, as the driver has them (none when
        the driver judges, or no judge phase runs)."""
        if self.judge_here or "judge" not in self.engine.phases:
            return {}
        registry = self.engine.rook.criteria
        types = {c.type for sr, _, _ in work for c in sr.scenario.criteria}
        return {t: _plugin_of(registry, t) for t in sorted(types)}

    async def _place_workspace(self) -> None:
        assert self.job is not None
        wanted = _mode()
        ws = self.engine.agent.workspace
        if wanted in ("auto", "shared"):
            import secrets  # not at the top: every run imports this module to register it

            token = secrets.token_hex(8)
            runs = self.engine.run_dir.path.parent  # the agent's runs/, where a run is kept
            _remove_stale_probes(runs)
            probe = runs / f"{PROBE}{token}"
            self.probe, self._probe_held = probe, _hold_probe(probe, token)  # dropped at teardown
            seen = await self.client.run(self.w.sees, str(probe), token, workers=self.workers)
            if seen and all(seen.values()):
                self.job.mode, self.job.probe, self.job.probe_token = "shared", str(probe), token
                return
            self._drop_probe(probe)
            self.probe = None
            if wanted == "shared":
                blind = ", ".join(sorted(w for w, ok in seen.items() if not ok))
                raise ConfigError(
                    f"ROOK_DASK_WORKSPACE=shared, but these Dask workers do not see the workspace "
                    f"{ws} at the same path: {blind}; mount it there, or let Rook ship it "
                    "(ROOK_DASK_WORKSPACE=auto)"
                )
        limit = _ship_limit()
        try:
            bundle = await asyncio.to_thread(
                self.w.build_bundle, ws, self.engine.run_dir.path, limit
            )
        except self.w.TooBig as exc:
            raise ConfigError(
                f"--executor dask: the workers do not share this file system and the workspace "
                f"{ws} {exc.why('ships with the job')}; put it on a file system every worker mounts "
                "at the same path, or raise ROOK_DASK_SHIP_LIMIT_MB"
            ) from None
        from .dask_ship import ShippedWorkspace, orphaned, plugin_name

        digest = hashlib.sha256(bundle).hexdigest()
        for name in await self.client.run_on_scheduler(orphaned):  # a killed run's copies
            with contextlib.suppress(Exception):
                await self.client.unregister_worker_plugin(name)
        # a worker plugin, not scattered data: every worker gets it, one that joins
        # or is started again after a crash included (scattered data lives on one)
        self.shipped = plugin_name(self.topic, self.client.id)
        self._shipped_plugin = ShippedWorkspace(bundle, digest, self.topic)
        await self._register_shipped(self._shipped_plugin, self.shipped)
        self.job.mode, self.job.digest, self.job.ship_limit = "ship", digest, limit

    async def watch_workers(self) -> None:
        """Once per run, beside the scenario runs: when every worker has left the
        scheduler (killed, their machines gone) and none joins within
        ``ROOK_DASK_WORKER_WAIT`` (:func:`_worker_wait`), stop.
        Dask would keep the tasks waiting for a worker for ever (its
        ``no-workers-timeout`` is off by default): the scenario runs in flight become
        infrastructure errors (:meth:`_infra`), the others are not sent."""
        gone_since: float | None = None
        wait = _worker_wait()
        while True:
            await asyncio.sleep(WATCH_EVERY)
            try:
                workers = await self.client.scheduler.ncores()
            except Exception:  # the scheduler lost: its futures say so (``_infra``)
                continue
            if not set(workers) <= self.asked:  # one joined: may it take scenario runs?
                await self._admit(sorted(set(workers) - self.asked))
            if self.workers is not None:  # some left out: only the others take scenarios
                workers = [w for w in workers if w in self.workers]
            if workers or not self.futures:  # (judging here, with a judge profile, needs none)
                gone_since = None
                continue
            now = time.monotonic()
            gone_since = gone_since or now
            if now - gone_since < wait:
                continue
            self.no_workers = (
                f"every Dask worker {'that loaded Rook ' if self.workers else ''}left the "
                f"scheduler and none {'came back' if self.workers else 'joined again'} within "
                f"{wait:g} s (ROOK_DASK_WORKER_WAIT)"
            )
            futures = list(self.futures.values())  # lanes send nothing more (``no_workers``)
            if futures:
                with contextlib.suppress(Exception):  # the scheduler lost too: they end anyway
                    await self.client.cancel(futures)
            return

    async def _admit(self, joined: list[str]) -> None:
        """Workers that joined the scheduler as the run went: each is asked, as at set-up,
        whether it loads Rook, and given the run's secrets (a scenario run's task carries
        none: one Dask gave it already waits for them). One that cannot is named in a
        warning and left out, as at set-up. On a run with workers left out
        (:attr:`workers` restricts the scenario runs to the others), one that can takes
        this run's scenario runs from now on, those already sent and waiting for a thread
        included (their restrictions widened on the scheduler: Dask's work stealing then
        moves them to it). From :meth:`watch_workers`, once per worker."""
        before = set(self.asked)
        try:
            broken = await asyncio.wait_for(self._loads_rook(joined), CONNECT_TIMEOUT)
        except Exception:  # it left already, or the scheduler is lost: asked again next time
            self.asked = before
            return
        answers = self.asked - before
        for w, why in sorted(broken.items()):
            self._warn(
                f"--executor dask: Dask worker {w}, which joined the scheduler, {why}; this "
                "run sends it no scenario runs. Install rook-harness[dask] on every Dask "
                "worker, the same version as where rook run runs"
            )
        good = {w for w in answers if w not in broken and w not in self.left_out}
        if self.workers is None:
            if not broken:
                return
            try:  # restricted from now on to those that load Rook, as at set-up
                now = set(await self.client.scheduler.ncores())
            except Exception:
                return
            workers = sorted((now & self.asked) - set(broken) - self.left_out)
        else:  # (one that joined before a worker was left out is among them, unasked)
            workers = sorted(({*self.workers} | good) - set(broken))
        if not workers or workers == self.workers:  # (none: Dask would read no restriction)
            return
        self.workers = workers
        keys = [f.key for f in self.futures.values()]
        if keys:
            from .dask_ship import restrict

            with contextlib.suppress(Exception):  # those sent from now on go there anyway
                await self.client.run_on_scheduler(restrict, keys, self.workers)

    # -- events from workers -------------------------------------------------

    def _on_event(self, event: Any) -> None:
        _, msg = event
        key, token = msg.get("key"), msg.get("token")
        if msg.get("type") == "start":
            starts = self.starts.setdefault(key, [])
            starts.append((token, msg.get("worker", "?")))
            future = self.futures.get(key)
            tried = [t for t, _ in starts if t not in self.failed_tokens]  # (sent elsewhere)
            if len(tried) > MAX_ATTEMPTS and future is not None and key not in self.given_up:
                self.given_up.add(key)  # a scheduler that retries more than once: stop it here
                asyncio.ensure_future(self.client.cancel([future]))
        elif msg.get("type") == "slow-plugin":  # a worker's plugin slow to load: once each
            said = (msg.get("worker"), msg.get("message"))
            if isinstance(said[1], str) and said not in self.slow_said:
                self.slow_said.add(said)
                self._warn(f"--executor dask: on Dask worker {said[0]}, {said[1]}")
        elif msg.get("type") == "secrets":  # a worker not given them (joined, restarted)
            worker = msg.get("worker")
            if isinstance(worker, str) and worker not in self.giving:
                self.giving.add(worker)
                asyncio.ensure_future(self._give_asked(worker))
        elif msg.get("type") == "hook":
            hook = localize_hook(dict(msg["hook"]), self._fix(msg.get("roots")), self._redact)
            self.streamed.setdefault((key, token), {})[msg["seq"]] = hook
            self._notify(key, token, msg["seq"], hook)

    def _on_cluster_event(self, event: Any) -> None:
        """The scheduler's own events: a worker it lost (killed, its machine gone; not
        one closed as planned) names the tasks it was running, this run's kept in
        :attr:`lost_tasks`. A worker killed before its word that it started a scenario
        run reached Rook is known from this alone, once the attempt run again is back
        (:meth:`run_one`): its word and the scenario run's result come on one stream
        from the scheduler, in this order."""
        _, msg = event
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker":
            return
        worker = msg.get("worker")
        if msg.get("expected") or not isinstance(worker, str):
            return
        mine = f"rook-{self.run_id}-"
        for key in msg.get("processing-tasks") or ():
            if isinstance(key, str) and key.startswith(mine):
                self.lost_tasks.setdefault(key, []).append(worker)

    async def _give_asked(self, worker: str) -> None:
        """Give the run's secrets to ``worker``, which ran Rook's code and asked for them:
        one the watch has not asked yet, or one started again at an address it knew."""
        try:
            await asyncio.wait_for(self._give_secrets([worker]), CONNECT_TIMEOUT)
        except Exception:  # it left, or the scheduler is lost: its task says so in time
            pass
        finally:
            self.giving.discard(worker)

    def _fix(self, roots: Any) -> Callable[[str], str]:
        """Names the driver's workspace for a shipped copy's ``roots`` (see :func:`localize`)."""
        key = tuple(roots or ())
        if key not in self.fixes:  # one per worker's copy, not one per hook
            self.fixes[key] = worker_paths(key, str(self.engine.agent.workspace))
        return self.fixes[key]

    def _redact(self, text: str) -> str:
        return str(self.engine.redactor.text(text))

    def _notify(self, key: str, token: str, seq: int, hook: dict[str, Any]) -> None:
        """Call the ``rook_evidence_recorded`` observers, here on the driver, once per hook."""
        if (key, token, seq) in self.notified or key not in self.sent:
            return
        self.notified.add((key, token, seq))
        base = self.sent[key]
        hooks = [
            *base["hooks"],
            *(
                h
                for s, h in sorted(self.streamed.get((key, token), {}).items())
                if s >= len(base["hooks"]) and s <= seq
            ),
        ]
        try:
            result = HookResult(**hook)
        except TypeError:
            return
        self.engine.notify_observers({**base, "hooks": hooks}, result)

    def _lost(self, key: str, but: str | None = None) -> list[dict[str, Any]]:
        return [
            {
                "worker": w,
                "lost": True,
                "hooks": [h for _, h in sorted(self.streamed.get((key, t), {}).items())],
            }
            for t, w in self.starts.get(key, [])
            if t != but and t not in self.failed_tokens
        ]

    async def connected(self) -> bool:
        """Whether there is a scheduler to send a scenario run to. The connection lost,
        Dask's client tries to connect again for a while (``connecting``): wait for it.
        Given up (``closed``), a run sent now would only wait for that and come back
        cancelled, never run: it is not sent (:attr:`disconnected`)."""
        while self.client.status == "connecting":
            await asyncio.sleep(0.1)
        if self.client.status == "running":
            if self.client.scheduler_info().get("id") != self.scheduler_id:
                await self._rejoin()
            return True
        self.disconnected = True
        return False

    async def _rejoin(self) -> None:
        """Connected again, to a scheduler started anew at the same address (its id
        differs): what this run set up on the one lost is gone with it, and Dask's client
        restores none of it. Set up again, once, before anything more is sent there: the
        subscription to the workers' events, the workers that load Rook (new addresses)
        and the shipped workspace (a worker plugin the scheduler holds)."""
        async with self._rejoining:
            scheduler = self.client.scheduler_info().get("id")
            if scheduler == self.scheduler_id:
                return  # another lane did it
            self.scheduler_id = scheduler
            self.client.subscribe_topic(self.topic, self._on_event)
            self.client.subscribe_topic("all", self._on_cluster_event)
            self.workers, self.left_out = None, set()
            try:
                await self._scheduler_loads_rook()
                await self._workers_load_rook()
                if self.shipped is not None and self._shipped_plugin is not None:
                    await self._register_shipped(self._shipped_plugin, self.shipped)
            except RookError:
                raise
            except Exception as exc:  # as at set-up (_run): the cluster failed us
                raise RunStopped(
                    "--executor dask: setting up the run again on the Dask scheduler started "
                    f"anew failed: {exception_text(exc)}"
                ) from None

    # -- one scenario run ----------------------------------------------------

    async def run_one(self, sr: Any, record: dict[str, Any], todo: list[str]) -> None:
        engine = self.engine
        remote = [p for p in todo if p != "judge"] if self.judge_here else list(todo)
        if not remote:  # only the judge is left, and it judges here
            await engine.run_scenario(sr)
            return
        assert self.job is not None
        job = dataclasses.replace(self.job, observed={**engine.observed_before, **engine.observed})
        self.sent[sr.key] = record
        self.sent_at[sr.key] = (time.time(), time.monotonic())
        stored = record
        try:
            while True:  # again on another worker while one fails it for its own sake
                future = self.client.submit(
                    self.w.run_on_worker,
                    job,
                    sr,
                    record,
                    remote,
                    _starts_clean(engine, sr.key, record),
                    key=f"rook-{self.run_id}-{sr.key}-{uuid.uuid4().hex[:8]}",
                    pure=False,
                    **self._where(),
                )
                self.futures[sr.key] = future
                waiter = asyncio.ensure_future(_outcome(future))
                try:
                    ok, value = await asyncio.shield(waiter)
                except asyncio.CancelledError:  # interrupted: stop the hooks, keep what came back
                    await self.cancel_remote()
                    done, _ = await asyncio.wait({waiter}, timeout=CANCEL_GRACE)
                    if done and waiter.result()[0]:
                        stored = self._accept(sr, waiter.result()[1])
                    else:
                        record["reason"] = f"interrupted; {engine.resume} finishes it"
                    raise
                if ok or sr.key in self.given_up or not await self._elsewhere(sr.key, value):
                    break
            if not ok and _unreadable(value):  # so would it every other: nothing more is sent
                self.unreadable = (
                    f"the Dask scheduler at {self.client.scheduler.address} cannot read Rook's "
                    f"tasks (Dask: {UNREADABLE}): install rook-harness[dask] there, the same "
                    "version as where rook run runs"
                )
            if not ok or sr.key in self.given_up:  # a third attempt is not accepted either
                given_up = sr.key in self.given_up or type(value).__name__ == "KilledWorker"
                lost_on = await self._lost_on(future.key) if given_up else []
                stored = self._infra(sr, record, value, lost_on)
                return
            # an attempt lost before it said where it ran: the scheduler named its worker as
            # it lost it, or, if its files were left (set aside), is asked which it was
            lost_on = self.lost_tasks.pop(future.key, [])
            unsaid = value.get("state_set_aside") and not self._lost(sr.key, value["token"])
            if unsaid and not lost_on:
                lost_on = await self._lost_on(future.key)
            stored = self._accept(sr, value, lost_on)
            if "judge" in todo and "judge" not in remote and not stored.get("final"):
                if not value.get("interrupted"):
                    await engine.compute_scenario(sr, stored, ["judge"])
        finally:
            self.futures.pop(sr.key, None)
            engine.store_scenario(sr, stored)

    async def _elsewhere(self, key: str, exc: BaseException) -> bool:
        """Whether to send scenario run ``key`` again, to another worker: its task failed
        for its worker's sake before any hook ran (a plugin missing there, a shipped
        workspace it could not unpack, a workspace it does not see), and another worker is
        there. That worker takes none of this run's scenario runs any more (restricted to
        the others, as :meth:`_workers_load_rook` does), named in a warning once, so that
        a worker quick to fail does not take more than its share; with none left, the
        scenario run is an infrastructure error naming it (:meth:`_infra`)."""
        worker = getattr(exc, "worker", "")
        if not isinstance(exc, self.w.IN_ROOKS_WORDS) or not worker:
            return False
        self.refused.setdefault(key, []).append(str(exc))
        self.failed_tokens.add(getattr(exc, "token", ""))
        try:
            now = set(await self.client.scheduler.ncores())
        except Exception:  # the scheduler lost: its futures say so
            return False
        if worker not in self.left_out:
            self.left_out.add(worker)
            self._warn(f"--executor dask: {exc}; this run sends that worker no more scenario runs")
        if self.workers is not None:
            now &= set(self.workers)
        others = sorted(now - self.left_out)
        if not others:
            self.refused.pop(key, None)  # the infrastructure error says it
            return False
        self.workers = others
        return True

    def _accept(
        self, sr: Any, result: dict[str, Any], lost_on: Iterable[str] = ()
    ) -> dict[str, Any]:
        """The record a worker returned, with the attempts lost before it; ``lost_on``:
        the workers the scheduler lost while they ran its task (:meth:`_lost_on`),
        asked only when an attempt that never said where it ran left files behind."""
        record: dict[str, Any] = result["record"]
        if result.get("roots"):  # shipped: Rook's words name the user's workspace
            localize(record, self._fix(result["roots"]), self._redact)
        lost = _with_unsaid(self._lost(sr.key, but=result["token"]), lost_on)
        for why in self.refused.pop(sr.key, ()):
            record.setdefault("warnings", []).append(
                self._redact(f"{why}; it ran on {result['worker']}")
            )
        aside = result.get("state_set_aside")
        if lost:
            if aside:  # the lost attempt's files, set aside by the attempt that ran again
                lost[-1]["state"] = aside
            record.setdefault("attempts", []).extend(lost)
            for a in lost:
                moved = (
                    f", and the lost attempt's files in its state directory were moved to {aside}"
                    if a is lost[-1] and aside
                    else ""
                )
                record.setdefault("warnings", []).append(
                    f"Dask worker {a['worker']} was lost while running this scenario; "
                    f"it ran again on {result['worker']}{moved}"
                )
        elif aside:  # set aside only when Rook saw the directory empty (``clean``): an
            # attempt of this very task ran on a worker lost before its start event
            # reached Rook (SIGKILLed within the event stream's flush interval)
            record.setdefault("attempts", []).append(
                {"worker": "unknown", "lost": True, "hooks": [], "state": aside}
            )
            record.setdefault("warnings", []).append(
                "a Dask worker was lost while running this scenario (before it could say "
                f"which); it ran again on {result['worker']}, and the lost attempt's files "
                f"in its state directory were moved to {aside}"
            )
        for seq, hook in enumerate(record.get("hooks", [])):
            if seq >= len(self.sent[sr.key]["hooks"]):
                self._notify(sr.key, result["token"], seq, hook)
        if result.get("state"):
            state = self.engine.run_dir.state / sr.key
            self.w.unpack_dir(result["state"], state)
            # packed as they were: a Ruhroh result file a job the wrapper left wrote late
            from .ruhroh_session import redact_state

            redact_state(state, self.engine.redactor, self.engine.profile.limits.stdout_bytes)
        return record

    async def _lost_on(self, key: str) -> list[str]:
        """The workers the scheduler lost while they ran task ``key``, oldest first (see
        :func:`~rook_plugins.dask_ship.lost_workers`): one killed before its task could
        say it started there is named too. Only when the task was given up, or ran again
        after such a worker (its files set aside): never after every scenario run."""
        from .dask_ship import lost_workers

        try:
            found = await asyncio.wait_for(self.client.run_on_scheduler(lost_workers, key), 10)
        except Exception:  # the scheduler lost too: the starts the workers said name them
            return []
        return [w for w in found if isinstance(w, str)] if isinstance(found, list) else []

    def _infra(
        self, sr: Any, record: dict[str, Any], exc: BaseException, lost_on: Iterable[str] = ()
    ) -> dict[str, Any]:
        lost = _with_unsaid(self._lost(sr.key), lost_on)
        workers = ", ".join(a["worker"] for a in lost) or "unknown"
        if self.no_workers is not None:
            why = f"{self.no_workers}; nothing came back from its worker"
        elif type(exc).__name__ == "KilledWorker" or sr.key in self.given_up:
            why = (
                f"the Dask worker running this scenario was lost {max(len(lost), MAX_ATTEMPTS)} "
                f"times ({workers}); it was retried once on another worker, then given up"
            )
        elif getattr(exc, "reason", None) == "scheduler-connection-lost":
            why = (
                "the connection to the Dask scheduler was lost while this scenario ran; "
                "nothing came back from its worker"
            )
        elif self.unreadable is not None and _unreadable(exc):  # Dask's words span lines
            why = self.unreadable
        elif isinstance(exc, self.w.IN_ROOKS_WORDS):  # the worker's message names it
            why = str(exc)
        else:
            why = f"the Dask task failed: {exception_text(exc)}"
        now, worked = time.time(), 0.0
        sent = now
        if sr.key in self.sent_at:
            sent, sent_mono = self.sent_at[sr.key]
            worked = time.monotonic() - sent_mono  # a wall clock set back never makes it negative
        if lost:
            record.setdefault("attempts", []).extend(lost)
        record["status"] = INFRA_ERROR
        record["reason"] = self.engine.redactor.text(
            f"infrastructure error: {why} ({self.engine.resume} tries it again)"
        )
        record["infra"] = True
        # what Rook knows of the lost work: the time since the run was sent to Dask
        record["seconds"] = round(run_seconds(record) + worked, 6)
        record["started"] = record.get("started") or sent
        record["ended"] = now
        return record

    # -- stopping ------------------------------------------------------------

    async def cancel_remote(self) -> None:
        if self._cancel is None:
            self._cancel = asyncio.ensure_future(self.client.run(self.w.cancel_run, self.topic))
        try:
            await asyncio.wait_for(asyncio.shield(self._cancel), 5)
        except Exception:
            pass

    async def teardown(self) -> None:
        try:
            await asyncio.wait_for(self.client.run(self.w.cleanup_run, self.run_id, self.topic), 30)
        except Exception:
            pass
        if self.shipped is not None:  # shipped: every worker drops its copy
            try:
                await asyncio.wait_for(self.client.unregister_worker_plugin(self.shipped), 30)
            except Exception:
                pass
        for topic in (self.topic, "all"):
            try:
                self.client.unsubscribe_topic(topic)
            except Exception:
                pass
        from .dask_ship import drop_events

        if not self.disconnected:  # the scheduler's events of the run: never kept past it
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.run_on_scheduler(drop_events, self.topic), 10)
        if self.probe is not None:
            self._drop_probe(self.probe)

    def _drop_probe(self, probe: Path) -> None:
        probe.unlink(missing_ok=True)
        if self._probe_held is not None:
            self._probe_held.close()  # its lock with it
            self._probe_held = None


def _with_unsaid(lost: list[dict[str, Any]], lost_on: Iterable[str]) -> list[dict[str, Any]]:
    """The lost attempts the workers said they started (``lost``), in the order the
    scheduler lost their workers (``lost_on``, oldest first), with an attempt (no hook)
    for each worker it lost that never said so (killed before Rook's code there ran,
    or before its word reached Rook)."""
    said = list(lost)
    ordered: list[dict[str, Any]] = []
    for worker in lost_on:
        mine = next((a for a in said if a["worker"] == worker), None)
        if mine is not None:
            said.remove(mine)
        ordered.append(mine or {"worker": worker, "lost": True, "hooks": []})
    return ordered + said


class DaskExecutor:
    """The ``dask`` executor (``--executor dask [--scheduler ADDRESS]``)."""

    name = "dask"

    def check(self, options: dict[str, Any]) -> None:
        """Before anything runs: Dask installed, options and variables make sense."""
        try:
            import dask  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise ConfigError(f"--executor dask needs Dask, an optional extra: {EXTRA}") from None
        if _mode() not in MODES:
            raise ConfigError(f"ROOK_DASK_WORKSPACE={_mode()}: use auto, shared or ship")
        _ship_limit()
        _worker_wait()
        address = options.get("scheduler")
        if address is not None and not str(address).strip():
            raise ConfigError("--scheduler: give a scheduler address (tcp://host:8786) or file")
        if address and scheduler_file(address):
            if Path(address).is_dir():  # the folder the scheduler writes its file into
                found = sorted(Path(address).glob("*.json"))
                named = f" (--scheduler {found[0]}?)" if len(found) == 1 else ""
                raise ConfigError(f"--scheduler {address}: a folder, not a scheduler file{named}")
            if not Path(address).is_file():
                raise ConfigError(f"--scheduler {address}: no such scheduler file")
            problem = scheduler_file_problem(Path(address))
            hint = "dask scheduler --scheduler-file PATH writes one"
        else:
            problem = address_problem(address) if address else None
            hint = "e.g. tcp://host:8786"
        if problem:
            raise ConfigError(f"--scheduler {address}: {problem} ({hint})")
        if address:
            target = (
                json.loads(Path(address).read_text(encoding="utf-8"))["address"]
                if scheduler_file(address)
                else address
            )
            problem = unreachable(target, from_file=scheduler_file(address))
            if problem:  # a scheduler file's address is named: the file may be stale
                given = (
                    address if target == address else f"{address} (the address it holds, {target})"
                )
                raise ConfigError(f"--scheduler {given}: {problem}")

    async def __call__(
        self, engine: Any, scenario_runs: list[Any], concurrency: int, options: dict[str, Any]
    ) -> None:
        work = []
        for sr in scenario_runs:
            record, todo = engine.load_record(sr)
            if todo:
                work.append((sr, record, todo))
        if not work:
            return
        if engine.prepare_failed:  # nothing would reach a hook: record each as failed, here
            for sr, _, _ in work:
                await engine.run_scenario(sr)
            return
        with quiet_dask_logs():
            await self._run(engine, work, concurrency, options)

    async def _run(
        self, engine: Any, work: list[Any], concurrency: int, options: dict[str, Any]
    ) -> None:
        if not options.get("scheduler"):
            n, threads = local_size(concurrency)
            if concurrency > n * threads:
                engine.warn(
                    f"--executor dask: Rook's own LocalCluster has {counted(n, 'worker')} of "
                    f"{counted(threads, 'thread')}, one a scenario run: it runs "
                    f"{n * threads} at once, not {concurrency}; for more, start a Dask "
                    "cluster and give its --scheduler"
                )
                concurrency = n * threads
        async with connected(options, concurrency) as client:
            session = _Session(engine, client)
            try:
                try:
                    await session.setup(work)
                except (RookError, asyncio.CancelledError):
                    raise
                except Exception as exc:  # the cluster failed us before any scenario ran
                    raise RunStopped(
                        f"--executor dask: setting up the run on the cluster failed: "
                        f"{exception_text(exc)}"
                    ) from None
                queue = iter(work)

                async def lane() -> None:
                    for sr, record, todo in queue:  # shared iterator: each run taken once
                        if (
                            session.no_workers
                            or session.unreadable
                            or not await session.connected()
                        ):
                            return  # no worker or scheduler to run it: left pending, never sent
                        await session.run_one(sr, record, todo)

                tasks = [asyncio.ensure_future(lane()) for _ in range(min(concurrency, len(work)))]
                watcher = asyncio.ensure_future(session.watch_workers())
                try:
                    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                finally:
                    watcher.cancel()
                    if not all(t.done() for t in tasks):  # interrupted, or a lane failed
                        for t in tasks:
                            t.cancel()  # once: each lane then stops its remote work, with grace
                        await asyncio.wait(tasks, timeout=CANCEL_GRACE + 5)
                for t in done:
                    if not t.cancelled() and t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
                if session.no_workers is not None:
                    raise RunStopped(
                        f"--executor dask: {session.no_workers}: the scenario runs in flight "
                        "are infrastructure errors, the others were not sent"
                    )
                if session.unreadable is not None:
                    raise RunStopped(
                        f"--executor dask: {session.unreadable}: the scenario runs sent are "
                        "infrastructure errors, the others were not sent"
                    )
                if session.disconnected:
                    raise RunStopped(
                        "--executor dask: the connection to the Dask scheduler was lost, and "
                        "Dask's client could not connect again: the scenario runs in flight "
                        "are infrastructure errors, the others were not sent"
                    )
            finally:
                await session.teardown()


@hookimpl
def rook_register_executors(register: Any) -> None:
    register("dask", DaskExecutor())
