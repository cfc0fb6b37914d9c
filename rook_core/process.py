"""Run one hook process safely: its own process group, concurrent pipes, caps, kill.

Every transport that spawns a program (hook scripts, Ruhroh wrappers) goes
through :func:`run_process`, so the guarantees hold everywhere:

* the child starts in a new process group (session); on timeout the whole
  group gets SIGTERM, then SIGKILL after a short grace, so nothing it started
  survives;
* standard input is written and closed concurrently with reading standard
  output and error, so neither side can block the other (pipe buffers are
  only 64 KiB);
* each output stream is capped; a flood is cut, the group killed, and the
  result says which stream overflowed;
* exit is detected from the process itself, not from its pipes: a
  grandchild that keeps stdout open cannot hang Rook (asyncio's
  ``Process.wait()`` would), and leftover groups are killed at the end of
  the run by :func:`kill_leftovers`.

Where the kernel has pidfds (Linux 5.3+) the child is watched directly by the
event loop (:mod:`rook_core.process_pidfd`: non-blocking pipes, exit seen on
its pidfd and reaped at once); elsewhere through asyncio's subprocess
transports and child watcher (:class:`_Transports`). Both give the same
guarantees; :func:`run_process` drives either the same way.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field
from typing import Any, Protocol, TypeVar, cast

from . import process_pidfd, procscan
from .plain import plain

KILL_GRACE_SECONDS = 2.0
PIPE_GRACE_SECONDS = 0.5
# Spawn failures that are the machine's, not the hook's: retried with backoff.
TRANSIENT_SPAWN_ERRORS = {errno.EAGAIN, errno.EMFILE, errno.ENFILE, errno.ENOMEM}
SPAWN_RETRIES = 3
SPAWN_BACKOFF = 0.1

_live_groups: set[int] = set()
# The groups of those live ones whose hook (their leader) exited and was reaped:
# any child of Rook in one is an orphan Rook adopted (see _reap_left).
_left_groups: set[int] = set()
# Run once by the next kill_leftovers, once nothing a hook left can write any more
# (see when_leftovers_killed).
_after_kill: list[Callable[[], object]] = []
# Tasks cancelled after their hook had exited: run_process kept the hook's
# result and asked for the cancellation again (see _cancel_later).
_cancel_pending: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
# Whether run_process watches children through pidfds (tests and benchmarks
# turn it off to exercise the asyncio fallback).
_PIDFD = process_pidfd.available()
T = TypeVar("T")
_READ_BEFORE = "rook_read_before"  # where run_process keeps a cut-off hook's output
STOPPED_NOTE = (
    "the hook was stopped (SIGSTOP or SIGTSTP) when its time ran out, and never continued"
)
STOPPED_HELP = (
    "raising timeout_seconds will not help: a stopped process waits until something "
    "continues it (kill -CONT), however long it is given"
)
"""What a timed-out hook's diagnosis says instead of "raise timeout_seconds" when
:attr:`ProcessResult.stopped` names what was stopped."""
NEVER_EXITED_HELP = (
    "it had printed one JSON object on stdout but never exited: a hook exits once "
    "it has answered, and no timeout is long enough for one that does not (what kept "
    "it running: in Node an open timer, socket or keep-alive connection, which "
    "process.exit() ends; a background job the script waits for)"
)
"""What a timed-out script hook's diagnosis says instead of "raise timeout_seconds"
when it had printed its answer (``rook profile test`` reads it to say what to do)."""


@plain
class ProcessResult:
    """What a finished child left: its exit status and its output."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    started: float
    ended: float
    timed_out: bool = False
    overflow: str | None = None  # "stdout" or "stderr"
    overflow_late: bool = False
    """The cap was passed after the hook had exited, by a process it left writing
    to its pipe (the group was killed then; the hook was not)."""
    spawn_error: str | None = None
    notes: list[str] = field(default_factory=list)
    exited: float | None = None
    """When it exited, where Rook read on after that (a process it started held its
    pipes: :data:`PIPE_GRACE_SECONDS`): its :attr:`ended`, so that its time is its
    own, never Rook's wait; ``None`` otherwise (``ended`` is when Rook was done)."""
    left_running: bool = False
    """It exited while a process in its group still ran (a job it left in the
    background); that process is killed at the end of the run."""
    stopped: str | None = None
    """Timed out while stopped (SIGSTOP, SIGTSTP), not while working: ``"it"`` (the
    hook), or ``"a process it started (pid N, NAME)"`` when the hook was not stopped
    but a descendant was (a hook that waits for it waits for ever)."""

    clock: float = field(default_factory=time.monotonic)
    """When it started on the monotonic clock, from which :attr:`seconds` is
    counted (``started`` and ``ended`` are the wall clock's, which NTP may set
    back while a hook runs)."""
    exited_clock: float | None = None
    """:attr:`exited` on the monotonic clock."""
    lasted: float | None = None
    """Its seconds on the monotonic clock, once it ended."""

    @property
    def seconds(self) -> float:
        return self.lasted if self.lasted is not None else self.ended - self.started

    @property
    def was_stopped(self) -> bool:
        """Timed out while it, or a process it started, was stopped (see :attr:`stopped`)."""
        return self.stopped is not None

    @property
    def stopped_words(self) -> str:
        """``it was stopped (SIGSTOP or SIGTSTP) and never continued`` (or the
        descendant's), for a timed-out hook's diagnosis; ``""`` when not stopped."""
        if self.stopped is None:
            return ""
        return f"{self.stopped} was stopped (SIGSTOP or SIGTSTP) and never continued"


class _Child(Protocol):
    """What run_process needs of a started child (pidfd or asyncio fallback)."""

    pid: int

    @property
    def overflow(self) -> str | None: ...
    async def wait_running(self, deadline: float) -> bool: ...
    async def wait_exited(self, timeout: float) -> bool: ...
    async def wait_pipes(self, timeout: float) -> list[str]: ...
    def has_exited(self) -> bool: ...
    def hold(self) -> None: ...
    def holds_id(self) -> bool: ...
    def release(self) -> None: ...
    def when_exited(self, callback: Callable[[], None]) -> None: ...
    def reap_soon(self) -> None: ...
    def close(self) -> int | None: ...
    def output(self) -> tuple[bytes, bytes]: ...


def _killpg(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _ours(child: _Child, pgid: int) -> bool:
    """Whether the hook's process group (``pgid``, the hook's pid) has a process
    left, and is still the hook's. While the hook runs, or is held unreaped
    (:meth:`~rook_core.process_pidfd.PidfdChild.hold`), its pid is its own and so
    is the group of that id (a zombie leader is not one to kill: one walk of
    ``/proc`` for the others). Once it was reaped, the id stays the group's only
    while a process of the group is left: when none is, the kernel may give it
    to a new process, which may lead a group of its own (a new hook does), and
    then a process has it as its pid, which no member of the hook's group could.
    On the way to killing a group only."""
    if not child.has_exited():
        return True
    if child.holds_id():
        return procscan.group_running(pgid)
    try:
        os.kill(pgid, 0)
    except ProcessLookupError:
        return group_alive(pgid)
    except OSError:
        pass
    return False


def _kill_pids(pids: list[int], sig: int) -> list[int]:
    hit = []
    for pid in pids:
        try:
            os.kill(pid, sig)
            hit.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return hit


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


async def _terminate_group(
    pid: int, child: _Child, grace: float, marker: Mapping[str, str] | None
) -> list[str]:
    """SIGTERM the group and every escaped descendant (then SIGCONT, so that a
    stopped process gets it), give them ``grace`` seconds (the hook, then what it
    started), then SIGKILL whatever is left (including adopted orphans that carry
    the hook's marker)."""
    notes = []
    pgid = pid
    began = time.monotonic()
    child.hold()  # the group's id stays the hook's until its SIGKILL (see _ours)
    try:
        family = procscan.descendants(pid)
        escaped = [p for p in family if _pgid(p) != pgid]
        if _ours(child, pgid) and _killpg(pgid, signal.SIGTERM):
            notes.append(f"sent SIGTERM to process group {pgid}")
            _killpg(pgid, signal.SIGCONT)  # as systemd does: a stopped process can act on it
        for p in _kill_pids(escaped, signal.SIGTERM):
            notes.append(f"sent SIGTERM to pid {p}, which had left the process group")
        _kill_pids(escaped, signal.SIGCONT)  # those too: a stopped one can act on it
        await child.wait_exited(grace)
        # the hook gone, what it started has the rest of the grace to act on its SIGTERM
        while any(_state(p) not in _GONE for p in family) and time.monotonic() - began < grace:
            await asyncio.sleep(0.02)
        if _ours(child, pgid) and _killpg(pgid, signal.SIGKILL):
            notes.append(f"sent SIGKILL to process group {pgid}")
    finally:
        child.release()
    orphans = procscan.marked_orphans(marker or {}, exclude=_live_groups - {pgid})
    stray = sorted(set(escaped + orphans))
    for p in _kill_pids(stray, signal.SIGKILL):
        notes.append(f"sent SIGKILL to pid {p} (a descendant outside the process group)")
    if stray:
        await asyncio.sleep(0.05)
        procscan.reap(stray)
    return notes


async def _terminate_into(notes: list[str], *args: Any) -> None:
    """:func:`_terminate_group`, its notes added to ``notes`` (for :func:`_uncancelled`)."""
    notes += await _terminate_group(*args)


def _too_big(env: Mapping[str, str]) -> str | None:
    """Why the system refused to start a program with ``env`` (``E2BIG``): a
    variable longer than one can be (Linux: 32 pages, 128 KiB), named; else the
    environment's size and its largest variables (names only, never a value)."""
    try:
        limit = 32 * os.sysconf("SC_PAGE_SIZE") if sys.platform.startswith("linux") else 0
    except (ValueError, OSError):
        limit = 0
    sizes = {k: len(f"{k}={v}".encode("utf-8", "surrogateescape")) + 1 for k, v in env.items()}
    name = max(sizes, key=sizes.__getitem__, default=None)
    if name is None:
        return None
    if not limit or sizes[name] <= limit:
        # each fits: together (with the arguments) they are over ARG_MAX
        largest = sorted(sizes, key=sizes.__getitem__, reverse=True)[:3]
        return (
            f"the environment holds {sum(sizes.values())} bytes in {len(sizes)} variables, "
            "more than it can carry with the arguments (ARG_MAX); the largest: "
            + ", ".join(f"{k} ({sizes[k]} bytes)" for k in largest)
        )
    why = (
        f"{name} holds {sizes[name]} bytes, more than one environment variable can carry ({limit})"
    )
    if name == "ROOK_CONVERSATION":
        why += (  # named by who returned it: this hook may only be handed it
            "; have the hook that returned it (open, or execute: its conversation, a Ruhroh "
            "wrapper's sessionHandle) return a short conversation handle and keep the "
            "conversation's state in ROOK_STATE_DIR"
        )
    return why


async def _spawn(
    start: Callable[[], Awaitable[T]],
    argv: list[str],
    result: ProcessResult,
    env: Mapping[str, str] | None = None,
) -> T | None:
    """Start the child, retrying the machine's failures with backoff; None, with
    ``result.spawn_error`` set, when it cannot be started."""
    for attempt in range(SPAWN_RETRIES + 1):
        try:
            return await start()
        except OSError as exc:
            reason = f"{exc.strerror or exc} ({argv[0]})"
            too_big = _too_big(env) if exc.errno == errno.E2BIG and env is not None else None
            if too_big:
                reason += f": {too_big}"
            if exc.errno not in TRANSIENT_SPAWN_ERRORS or attempt == SPAWN_RETRIES:
                result.spawn_error = reason
                break
            import random  # only here: a failed spawn is rare, and the import costs every run

            delay = SPAWN_BACKOFF * (3**attempt) * (1 + random.random() / 2)
            result.notes.append(f"spawn failed: {reason}; retrying in {delay:.2f} s")
            await asyncio.sleep(delay)
    result.ended = time.time()
    result.lasted = time.monotonic() - result.clock
    return None


async def run_process(
    argv: list[str],
    *,
    env: dict[str, str],
    stdin: bytes | None,
    timeout: float,
    cwd: str | None = None,
    stdout_cap: int = 10 * 1024 * 1024,
    stderr_cap: int = 10 * 1024 * 1024,
    kill_grace: float = KILL_GRACE_SECONDS,
    marker: Mapping[str, str] | None = None,
    on_exit: Callable[[], None] | None = None,
) -> ProcessResult:
    """Run ``argv`` to completion or timeout; never raises for the child's behaviour.

    ``marker``: environment variables (a subset of ``env``) that identify this
    hook's descendants if they escape its process group (see :mod:`procscan`).
    ``on_exit``: called once, as soon as the child's exit is seen, before its
    remaining output is read and this returns (the engine lets the next
    scenario run start its hook then: :attr:`rook_core.models.HookCall.on_exit`).
    """
    loop = asyncio.get_running_loop()
    if asyncio.current_task() in _cancel_pending:  # interrupted: start nothing more
        raise asyncio.CancelledError
    started = time.time()
    deadline = loop.time() + timeout
    result = ProcessResult(None, b"", b"", started, started)
    launch = process_pidfd.start if _PIDFD else _Transports.start
    caps = (stdout_cap, stderr_cap)
    child: _Child | None = await _spawn(
        lambda: launch(loop, argv, env, cwd, stdin, caps), argv, result, env
    )
    if child is None:
        return result
    pid = pgid = child.pid
    _live_groups.add(pgid)  # first: whatever raises from here on, it is killed
    try:
        try:
            if on_exit is not None:
                child.when_exited(on_exit)
            await _watch(child, result, deadline, kill_grace, marker)
        except asyncio.CancelledError:
            if not child.has_exited():
                raise
            # The hook had exited: its answer is whole (an agent's answer is
            # never thrown away to be asked for again). Kill what it left
            # behind, read what is left in its pipes, and return the result;
            # the cancellation comes at the caller's next wait.
            result.notes += _kill_tree(pid, child)
            await _uncancelled(child.wait_pipes(PIPE_GRACE_SECONDS))
            if child.overflow and result.overflow is None and not result.timed_out:
                result.overflow, result.overflow_late = child.overflow, True
            result.notes.append(
                "rook was interrupted after the hook exited: its output was kept"
                " and what it started was killed"
            )
            _cancel_later()
    except asyncio.CancelledError as exc:  # the run interrupted: as at a timeout
        # SIGTERM, the grace, then SIGKILL, so that the hook's cleanup runs (its own
        # session: the terminal's Ctrl-C never reached it); a second signal kills
        # every group at once (kill_leftovers) and exits
        notes: list[str] = []
        await _uncancelled(_terminate_into(notes, pid, child, kill_grace, marker))
        result.notes += notes
        child.reap_soon()
        result.stdout, result.stderr = child.output()
        setattr(exc, _READ_BEFORE, result)  # noqa: B010 - for read_before; only when cut off
        raise
    except BaseException:  # a signal's handler raised (never Rook's): nothing would watch it
        _kill_tree(pid, child)
        child.reap_soon()
        raise
    finally:
        result.ended = result.exited or time.time()
        result.lasted = (result.exited_clock or time.monotonic()) - result.clock
        result.returncode = child.close()
        if not group_alive(pgid):
            _live_groups.discard(pgid)
        elif result.returncode is not None:  # it left a process in its group
            result.left_running = True
            _left_groups.add(pgid)
            _reap_left()
    result.stdout, result.stderr = child.output()
    return result


def read_before(exc: BaseException) -> ProcessResult | None:
    """What a hook cut off by the cancellation ``exc`` (an interrupted run) had
    printed before its group was killed: :func:`run_process` keeps its
    :class:`ProcessResult` (``stdout``, ``stderr``, ``notes``; no exit code) on
    the exception it re-raises. ``None`` for a cancellation that cut no hook."""
    kept = getattr(exc, _READ_BEFORE, None)
    return kept if isinstance(kept, ProcessResult) else None


async def _watch(
    child: _Child,
    result: ProcessResult,
    deadline: float,
    kill_grace: float,
    marker: Mapping[str, str] | None,
) -> None:
    """Wait for the child's exit (or its timeout or overflow, killing its
    group), then for what is still in its pipes."""
    pid = child.pid
    if not await child.wait_running(deadline):
        result.timed_out = True
        if _stopped(pid):
            result.stopped = "it"
            result.notes.append(STOPPED_NOTE)
        else:  # the timeout's path only: one walk of /proc
            stopped = next((p for p in procscan.descendants(pid) if _stopped(p)), None)
            if stopped is not None:
                result.stopped = (
                    f"a process it started (pid {stopped}, {procscan.command_name(stopped)})"
                )
                result.notes.append(
                    f"{result.stopped} was stopped (SIGSTOP or SIGTSTP) when the hook's time "
                    "ran out, and never continued"
                )
    if result.timed_out or child.overflow:
        if not result.timed_out:
            result.overflow = child.overflow
        result.notes += await _terminate_group(pid, child, kill_grace, marker)
        await child.wait_exited(kill_grace + 5)
    # The child has exited; collect what is still in the pipes, briefly.
    held = await child.wait_pipes(PIPE_GRACE_SECONDS)
    if held:  # waited the whole grace from the exit on: the hook's time ends there
        result.exited = time.time() - PIPE_GRACE_SECONDS
        result.exited_clock = time.monotonic() - PIPE_GRACE_SECONDS
    for name in held:
        result.notes.append(
            f"a process started by the hook kept its {name} open after it exited; stopped reading"
        )
    if child.overflow and result.overflow is None and not result.timed_out:
        result.overflow, result.overflow_late = child.overflow, True
        result.notes += await _terminate_group(pid, child, kill_grace, marker)


def _state(pid: int) -> bytes:
    """Process ``pid``'s state in ``/proc/PID/stat`` (the field after the
    parenthesised command name: ``R``, ``S``, ``T`` stopped, ``Z`` a zombie ...);
    ``X`` when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return b"X"
    end = stat.rfind(b")")
    return stat[end + 2 : end + 3]


_GONE = (b"Z", b"X")  # exited (a zombie until reaped) or no such process


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped by a signal (or a tracer)."""
    return _state(pid) in (b"T", b"t")


def _reap_left() -> None:
    """Reap the processes hooks left in their groups that have exited since
    (Rook adopted them: unreaped, they would pile up as zombies for the whole
    run, each holding a pid, and keep their group alive); forget the groups
    left with nothing running. Only when a hook left something behind."""
    for pgid in list(_left_groups):
        try:
            os.kill(pgid, 0)
            taken = True
        except ProcessLookupError:  # the hook (reaped) is gone: what is in its group, it left
            taken = False
        except OSError:
            taken = True
        if taken:  # a pid is never a process's while a group has it as id: the group
            # ended, and the id is another's now (a new hook's, say): never reaped
            # here; nor killed at the end of the run (kill_leftovers) unless it leads
            # a group of Rook's own child (a new hook's, which run_process keeps)
            _left_groups.discard(pgid)
            if not _our_child(pgid):
                _live_groups.discard(pgid)
            continue
        try:
            while os.waitid(os.P_PGID, pgid, os.WEXITED | os.WNOHANG) is not None:
                pass
        except OSError:  # ChildProcessError: no child of Rook left in it
            pass
        if not group_alive(pgid):
            _left_groups.discard(pgid)
            _live_groups.discard(pgid)


def _our_child(pid: int) -> bool:
    """Whether ``pid`` is a child of this process (running, or exited and not yet
    reaped), asked without reaping it; True where the system cannot say."""
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    except (OSError, AttributeError):  # no waitid here
        return True
    return True


def _kill_tree(pgid: int, child: _Child | None = None) -> list[str]:
    """SIGKILL a hook's process group and its descendants outside it; returns
    what was killed (as :func:`_terminate_group` says it). With ``child`` (the
    hook, which may have exited), only while the group is still its (:func:`_ours`)."""
    escaped = [p for p in procscan.descendants(pgid) if _pgid(p) != pgid]
    ours = child is None or _ours(child, pgid)
    notes = (
        [f"sent SIGKILL to process group {pgid}"] if ours and _killpg(pgid, signal.SIGKILL) else []
    )
    for p in _kill_pids(escaped, signal.SIGKILL):
        notes.append(f"sent SIGKILL to pid {p} (a descendant outside the process group)")
    return notes


async def _uncancelled(waiting: Awaitable[Any]) -> None:
    """Await ``waiting`` to its end even if the task is cancelled meanwhile
    (again: the executor cancels each of its tasks once more); the caller
    asks for the cancellation again afterwards (:func:`_cancel_later`)."""
    task = asyncio.ensure_future(waiting)
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            pass


def _cancel_later() -> None:
    """Have the current task cancelled at its next wait, and let no hook start
    in it meanwhile (:func:`run_process` refuses)."""
    task = asyncio.current_task()
    if task is not None:
        _cancel_pending.add(task)
        task.cancel()


class _Transports(asyncio.SubprocessProtocol):
    """The fallback without pidfds: asyncio's subprocess transports, and its
    child watcher for the exit."""

    def __init__(self, loop: asyncio.AbstractEventLoop, caps: tuple[int, int]) -> None:
        self.caps = {1: caps[0], 2: caps[1]}
        self.buffers = {1: bytearray(), 2: bytearray()}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed = {1: loop.create_future(), 2: loop.create_future()}
        self._overflow: asyncio.Future[str] = loop.create_future()
        self.transport: asyncio.SubprocessTransport | None = None
        self.pid = 0
        self._on_exit: Callable[[], None] | None = None

    @classmethod
    async def start(
        cls,
        loop: asyncio.AbstractEventLoop,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        stdin: bytes | None,
        caps: tuple[int, int],
    ) -> _Transports:
        self = cls(loop, caps)
        spawning = asyncio.ensure_future(
            loop.subprocess_exec(
                lambda: self,
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        )
        try:
            transport, _ = await asyncio.shield(spawning)
        except asyncio.CancelledError:
            # Interrupted while asyncio connects the pipes, the child already
            # running: asyncio's own clean-up would kill the child alone (3.10,
            # what it started runs on) or wait for every pipe to close (3.11+,
            # as long as what it started holds one). Kill its whole group.
            await _uncancelled(asyncio.wait({spawning}))
            if not spawning.cancelled() and spawning.exception() is None:
                transport = spawning.result()[0]
                _kill_tree(transport.get_pid())
                transport.close()
            raise
        self.transport, self.pid = transport, transport.get_pid()
        pipe = cast("asyncio.WriteTransport | None", transport.get_pipe_transport(0))
        if stdin is not None and pipe is not None:
            try:
                pipe.write(stdin)  # buffered by the loop, drained as the child reads
                pipe.write_eof() if pipe.can_write_eof() else pipe.close()
            except (BrokenPipeError, ConnectionResetError, RuntimeError):
                pass
        return self

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buf = self.buffers[fd]
        room = self.caps[fd] - len(buf)
        if len(data) > room:
            buf.extend(data[: max(room, 0)])
            if not self._overflow.done():
                self._overflow.set_result("stdout" if fd == 1 else "stderr")
        else:
            buf.extend(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        fut = self.pipes_closed.get(fd)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
            if self._on_exit is not None:
                self._on_exit()

    def has_exited(self) -> bool:
        return self.exited.done()

    def when_exited(self, callback: Callable[[], None]) -> None:
        if self.exited.done():
            callback()
        else:
            self._on_exit = callback

    def hold(self) -> None:
        pass  # the child watcher reaps it at its exit: see _ours

    def holds_id(self) -> bool:
        return not self.exited.done()

    def release(self) -> None:
        pass

    @property
    def overflow(self) -> str | None:
        return self._overflow.result() if self._overflow.done() else None

    async def wait_running(self, deadline: float) -> bool:
        timeout = max(deadline - asyncio.get_running_loop().time(), 0.0)
        futs: set[asyncio.Future[Any]] = {self.exited, self._overflow}
        done, _ = await asyncio.wait(futs, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        return bool(done)

    async def wait_exited(self, timeout: float) -> bool:
        return bool((await asyncio.wait({self.exited}, timeout=timeout))[0])

    async def wait_pipes(self, timeout: float) -> list[str]:
        """Give stdout and stderr ``timeout`` seconds together to reach end of file;
        the streams still open (held by a descendant) by then."""
        await asyncio.wait(set(self.pipes_closed.values()), timeout=timeout)
        return [n for fd, n in ((1, "stdout"), (2, "stderr")) if not self.pipes_closed[fd].done()]

    def reap_soon(self) -> None:
        pass  # the child watcher reaps it

    def close(self) -> int | None:
        assert self.transport is not None
        code = self.transport.get_returncode()
        self.transport.close()
        return code

    def output(self) -> tuple[bytes, bytes]:
        return bytes(self.buffers[1]), bytes(self.buffers[2])


def use_fast_child_watcher() -> None:
    """Have asyncio's child watcher use pidfds (Linux, Python < 3.12).

    Python 3.11's default child watcher starts one thread per child process;
    with hundreds of hooks in flight that costs more than the hooks. Python
    3.12+ already uses pidfds by default. :func:`run_process` watches its
    children's pidfds itself where they exist; this serves any other asyncio
    subprocess (and the fallback when it is forced, as tests do).
    """
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # kernel without pidfd: keep the default watcher
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_child_watcher(asyncio.PidfdChildWatcher())


def when_leftovers_killed(callback: Callable[[], object]) -> None:
    """Run ``callback`` once, right after the next :func:`kill_leftovers` (a run's
    end, after its transports stopped): for a file a hook's leftover could write
    until then (a Ruhroh result file a wrapper's job wrote after the wrapper exited).
    Inside :func:`leftovers_apart`, it goes to that block's list instead."""
    apart = _apart.get()
    (_after_kill if apart is None else apart).append(callback)


_apart: ContextVar[list[Callable[[], object]] | None] = ContextVar("rook_apart", default=None)


@contextmanager
def leftovers_apart(callbacks: list[Callable[[], object]]) -> Iterator[None]:
    """While the block runs (its thread, and the tasks it starts), what asks for
    :func:`when_leftovers_killed` goes to ``callbacks``, not to the next
    :func:`kill_leftovers` of the process: for a process that runs several runs at
    once (a Dask worker), whose caller runs them when that block's run ends."""
    token = _apart.set(callbacks)
    try:
        yield
    finally:
        _apart.reset(token)


def kill_leftovers(marker: Mapping[str, str] | None = None, scrubbed: bool = False) -> list[str]:
    """Kill every process group a hook started that is still alive, and every
    adopted orphan carrying ``marker`` (end of run); with ``scrubbed``, also
    those that cleared their environment (see :func:`procscan.marked_orphans`).
    Returns what was killed."""
    notes = []
    _reap_left()  # a group whose processes have all exited since is no leftover
    for pgid in sorted(_live_groups):
        if group_alive(pgid):
            _killpg(pgid, signal.SIGKILL)
            notes.append(f"killed leftover process group {pgid}")
    _live_groups.clear()
    _left_groups.clear()
    orphans = procscan.marked_orphans(marker or {}, scrubbed=scrubbed)
    for p in _kill_pids(orphans, signal.SIGKILL):
        notes.append(f"killed pid {p}, a hook's descendant that outlived its hook")
    if orphans:
        time.sleep(0.05)
        procscan.reap(orphans)
    while _after_kill:
        _after_kill.pop(0)()
    return notes
