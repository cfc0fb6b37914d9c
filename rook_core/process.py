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
"""

from __future__ import annotations

import asyncio
import errno
import os
import random
import signal
import sys
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from . import procscan

KILL_GRACE_SECONDS = 2.0
PIPE_GRACE_SECONDS = 0.5
# Spawn failures that are the machine's, not the hook's: retried with backoff.
TRANSIENT_SPAWN_ERRORS = {errno.EAGAIN, errno.EMFILE, errno.ENFILE, errno.ENOMEM}
SPAWN_RETRIES = 3
SPAWN_BACKOFF = 0.1

_live_groups: set[int] = set()


@dataclass
class ProcessResult:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    started: float
    ended: float
    timed_out: bool = False
    overflow: str | None = None  # "stdout" or "stderr"
    spawn_error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.ended - self.started


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, loop: asyncio.AbstractEventLoop, caps: dict[int, int]) -> None:
        self.caps = caps
        self.buffers = {1: bytearray(), 2: bytearray()}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed = {1: loop.create_future(), 2: loop.create_future()}
        self.overflow: asyncio.Future[str] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buf = self.buffers[fd]
        room = self.caps[fd] - len(buf)
        if len(data) > room:
            buf.extend(data[: max(room, 0)])
            if not self.overflow.done():
                self.overflow.set_result("stdout" if fd == 1 else "stderr")
        else:
            buf.extend(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        fut = self.pipes_closed.get(fd)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


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


async def _wait(fut: asyncio.Future[object] | asyncio.Future[None], timeout: float) -> bool:
    if fut.done():
        return True
    try:
        await asyncio.wait_for(asyncio.shield(fut), timeout)
        return True
    except asyncio.TimeoutError:
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


async def _terminate_group(
    pid: int, proto: _Protocol, grace: float, marker: Mapping[str, str] | None
) -> list[str]:
    """SIGTERM the group and every escaped descendant, give them ``grace``
    seconds, then SIGKILL whatever is left (including adopted orphans that carry
    the hook's marker)."""
    notes = []
    pgid = pid
    escaped = [p for p in procscan.descendants(pid) if _pgid(p) != pgid]
    if _killpg(pgid, signal.SIGTERM):
        notes.append(f"sent SIGTERM to process group {pgid}")
    for p in _kill_pids(escaped, signal.SIGTERM):
        notes.append(f"sent SIGTERM to pid {p}, which had left the process group")
    await _wait(proto.exited, grace)
    if group_alive(pgid) and _killpg(pgid, signal.SIGKILL):
        notes.append(f"sent SIGKILL to process group {pgid}")
    orphans = procscan.marked_orphans(marker or {}, exclude=_live_groups - {pgid})
    stray = sorted(set(escaped + orphans))
    for p in _kill_pids(stray, signal.SIGKILL):
        notes.append(f"sent SIGKILL to pid {p} (a descendant outside the process group)")
    if stray:
        await asyncio.sleep(0.05)
        procscan.reap(stray)
    return notes


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
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
) -> ProcessResult:
    """Run ``argv`` to completion or timeout; never raises for the child's behaviour.

    ``marker``: environment variables (a subset of ``env``) that identify this
    hook's descendants if they escape its process group (see :mod:`procscan`).
    """
    loop = asyncio.get_running_loop()
    started = time.time()
    t0 = time.perf_counter()
    proto = _Protocol(loop, {1: stdout_cap, 2: stderr_cap})
    spawn_notes: list[str] = []
    for attempt in range(SPAWN_RETRIES + 1):
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: proto,
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
            break
        except OSError as exc:
            reason = f"{exc.strerror or exc} ({argv[0]})"
            if exc.errno not in TRANSIENT_SPAWN_ERRORS or attempt == SPAWN_RETRIES:
                return ProcessResult(
                    None, b"", b"", started, time.time(), spawn_error=reason, notes=spawn_notes
                )
            delay = SPAWN_BACKOFF * (3**attempt) * (1 + random.random() / 2)
            spawn_notes.append(f"spawn failed: {reason}; retrying in {delay:.2f} s")
            await asyncio.sleep(delay)
    pid = transport.get_pid()
    pgid = pid
    _live_groups.add(pgid)
    result = ProcessResult(None, b"", b"", started, started, notes=spawn_notes)
    try:
        if stdin is not None:
            pipe = cast("asyncio.WriteTransport | None", transport.get_pipe_transport(0))
            if pipe is not None:
                try:
                    pipe.write(stdin)  # buffered by the loop, drained as the child reads
                    pipe.write_eof() if pipe.can_write_eof() else pipe.close()
                except (BrokenPipeError, ConnectionResetError, RuntimeError):
                    pass
        remaining = max(timeout - (time.perf_counter() - t0), 0.0)
        done: set[asyncio.Future[Any]] = {proto.exited, proto.overflow}
        waiter = asyncio.ensure_future(asyncio.wait(done, return_when=asyncio.FIRST_COMPLETED))
        try:
            await asyncio.wait_for(asyncio.shield(waiter), remaining)
        except asyncio.TimeoutError:
            result.timed_out = True
        finally:
            waiter.cancel()
        if result.timed_out or proto.overflow.done():
            if proto.overflow.done() and not result.timed_out:
                result.overflow = proto.overflow.result()
            result.notes += await _terminate_group(pid, proto, kill_grace, marker)
            await _wait(proto.exited, kill_grace + 5)
        # The child has exited; collect what is still in the pipes, briefly.
        for fd in (1, 2):
            if not await _wait(proto.pipes_closed[fd], PIPE_GRACE_SECONDS):
                result.notes.append(
                    f"a process started by the hook kept its {'stdout' if fd == 1 else 'stderr'}"
                    " open after it exited; stopped reading"
                )
        if proto.overflow.done() and result.overflow is None and not result.timed_out:
            result.overflow = proto.overflow.result()
            result.notes += await _terminate_group(pid, proto, kill_grace, marker)
    except asyncio.CancelledError:
        escaped = procscan.descendants(pid)
        _killpg(pgid, signal.SIGKILL)
        _kill_pids(escaped, signal.SIGKILL)
        raise
    finally:
        result.ended = time.time()
        result.returncode = transport.get_returncode()
        transport.close()
        if not group_alive(pgid):
            _live_groups.discard(pgid)
    result.stdout = bytes(proto.buffers[1])
    result.stderr = bytes(proto.buffers[2])
    return result


def use_fast_child_watcher() -> None:
    """Wait for hooks through pidfds (Linux, Python < 3.12).

    Python 3.11's default child watcher starts one thread per child process;
    with hundreds of hooks in flight that costs more than the hooks. Python
    3.12+ already uses pidfds by default.
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


def kill_leftovers(marker: Mapping[str, str] | None = None) -> list[str]:
    """Kill every process group a hook started that is still alive, and every
    adopted orphan carrying ``marker`` (end of run). Returns what was killed."""
    notes = []
    for pgid in sorted(_live_groups):
        if group_alive(pgid):
            _killpg(pgid, signal.SIGKILL)
            notes.append(f"killed leftover process group {pgid}")
    _live_groups.clear()
    orphans = procscan.marked_orphans(marker or {})
    for p in _kill_pids(orphans, signal.SIGKILL):
        notes.append(f"killed pid {p}, a hook's descendant that outlived its hook")
    if orphans:
        time.sleep(0.05)
        procscan.reap(orphans)
    return notes
