"""The lean way :mod:`rook_core.process` runs a hook where the kernel has pidfds.

The child is started with :class:`subprocess.Popen` (new session, closed
descriptors, three pipes). Its pipes are made non-blocking and watched with
``loop.add_reader``/``add_writer``: standard input is written as the child
reads it, output is read as it comes and cut at the caps. Its exit is seen
when its pidfd becomes readable, and it is reaped at once, so no zombie is
left and a grandchild holding a pipe open cannot hide the exit. A hook costs
a few loop callbacks and one future at a time — none of asyncio's transports,
protocols, tasks or child-watcher hops.

Popen blocks the loop's thread until the child has called ``exec`` (vfork),
as asyncio's own subprocesses do: a tenth of a millisecond, a millisecond or
more under load. Spawning on a pool of threads instead (``fork_exec``
releases the GIL) was measured: no faster at concurrency 8, and slower for a
wave of 128 hooks, whose spawns then waited for the loop to hand back the GIL.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from functools import partial
from typing import Any

READ_CHUNK = 65536
DRAIN_READS = 16  # reads per pipe at exit before leaving the rest to the loop
REAP_WAIT = 0.2  # see PidfdChild.reap_soon

_reap_until = 0.0
# Children whose exit was not seen before their run ended (cancelled, or
# unkillable): their pidfd reader still reaps them; this keeps them referenced.
_unreaped: set[PidfdChild] = set()


def available() -> bool:
    """Whether this system has pidfds (Linux 5.3+, not forbidden by a policy)."""
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def _popen(
    argv: list[str], env: dict[str, str], cwd: str | None, stdin: bytes | None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        bufsize=0,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        close_fds=True,
        start_new_session=True,
    )


def _discard(proc: subprocess.Popen[bytes]) -> None:
    """Kill and reap a child that cannot be watched."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            f.close()


async def start(
    loop: asyncio.AbstractEventLoop,
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    stdin: bytes | None,
    caps: tuple[int, int],
) -> PidfdChild:
    """Start ``argv`` and watch it; raises OSError as Popen does."""
    proc = _popen(argv, env, cwd, stdin)
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:  # out of descriptors: undo the spawn, it is retried like one
        _discard(proc)
        raise
    return PidfdChild(loop, proc, pidfd, stdin, caps)


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


class PidfdChild:
    """A running hook: its pipes and pidfd watched by the event loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        proc: subprocess.Popen[bytes],
        pidfd: int,
        stdin: bytes | None,
        caps: tuple[int, int],
    ) -> None:
        self.loop = loop
        self.proc = proc
        self.pid = proc.pid
        self.pidfd = pidfd
        self.exited = False
        self.overflow: str | None = None  # the first stream that went over its cap
        self.out = {"stdout": bytearray(), "stderr": bytearray()}
        self.pipes: dict[int, tuple[Any, str, int]] = {}  # fd -> (file, stream, cap)
        self._waiter: asyncio.Future[bool] | None = None
        self._cond: Callable[[], bool] = bool
        for name, f, cap in (("stdout", proc.stdout, caps[0]), ("stderr", proc.stderr, caps[1])):
            assert f is not None
            fd = f.fileno()
            os.set_blocking(fd, False)
            self.pipes[fd] = (f, name, cap)
            loop.add_reader(fd, self._read, fd)
        loop.add_reader(pidfd, self._exited)
        self.stdin = proc.stdin
        self._data = memoryview(stdin or b"")
        self._sent = 0
        if self.stdin is not None:
            os.set_blocking(self.stdin.fileno(), False)
            self._write()  # a goal that fits the pipe buffer goes at once
            if self.stdin is not None:
                loop.add_writer(self.stdin.fileno(), self._write)

    # -- loop callbacks ------------------------------------------------------

    def _write(self) -> None:
        assert self.stdin is not None
        try:
            self._sent += os.write(self.stdin.fileno(), self._data[self._sent :])
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # EPIPE: the child closed its standard input
            self._sent = len(self._data)
        if self._sent >= len(self._data):
            self._close_stdin()

    def _read(self, fd: int) -> bool:
        """One read from an output pipe; False at end of file or when it would block."""
        try:
            data = os.read(fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            data = b""
        if not data:
            self._close_pipe(fd)
            self._wake()
            return False
        _, name, cap = self.pipes[fd]
        buf = self.out[name]
        room = cap - len(buf)
        if len(data) > room:  # cut at the cap; what follows is read and dropped
            buf += data[: max(room, 0)]
            if self.overflow is None:
                self.overflow = name
                self._wake()
        else:
            buf += data
        return True

    def _exited(self) -> None:
        """The pidfd is readable: the child has exited. Reap it at once."""
        self.loop.remove_reader(self.pidfd)
        os.close(self.pidfd)
        self.pidfd = -1
        self.proc.poll()  # waitpid: the child is a zombie, this does not block
        self.exited = True
        _unreaped.discard(self)
        for fd in list(self.pipes):  # what it wrote is in the pipes already
            for _ in range(DRAIN_READS):
                if fd not in self.pipes or not self._read(fd):
                    break
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done() and self._cond():
            w.set_result(True)

    # -- what run_process awaits --------------------------------------------

    async def _until(self, cond: Callable[[], bool], deadline: float) -> bool:
        """Wait until ``cond()`` holds (True) or until loop time ``deadline`` (False)."""
        if cond():
            return True
        fut = self._waiter = self.loop.create_future()
        self._cond = cond
        timer = self.loop.call_at(deadline, _expire, fut)
        try:
            return await fut or cond()
        finally:
            self._waiter = None
            timer.cancel()

    async def wait_running(self, deadline: float) -> bool:
        """Until the child exits or overflows a cap (True), or ``deadline`` (False)."""
        return await self._until(lambda: self.exited or self.overflow is not None, deadline)

    async def wait_exited(self, timeout: float) -> bool:
        return await self._until(lambda: self.exited, self.loop.time() + timeout)

    async def wait_pipes(self, timeout: float) -> list[str]:
        """Give stdout, then stderr, ``timeout`` seconds each to reach end of
        file; the streams still open (held by a descendant) are no longer read."""
        held = []
        for name in ("stdout", "stderr"):
            if not await self._until(
                partial(self._closed_stream, name), self.loop.time() + timeout
            ):
                held.append(name)
        for fd in list(self.pipes):
            self._close_pipe(fd)
        return held

    def _closed_stream(self, name: str) -> bool:
        return all(n != name for _, n, _ in self.pipes.values())

    def reap_soon(self) -> None:
        """After SIGKILL (the run is cancelled): wait briefly for the exit and
        reap, blocking the loop at most REAP_WAIT seconds per burst of
        cancellations (a child stuck in the kernel is left to its pidfd reader)."""
        global _reap_until
        if self.exited:
            return
        now = time.monotonic()
        if now > _reap_until + 1.0:  # a new burst
            _reap_until = now + REAP_WAIT
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        if poller.poll(max(0, int((_reap_until - now) * 1000))):
            self._exited()

    def close(self) -> int | None:
        """Stop reading and writing; returns the exit code (None if it has not
        exited: its pidfd reader reaps it later)."""
        for fd in list(self.pipes):
            self._close_pipe(fd)
        self._close_stdin()
        if not self.exited:
            _unreaped.add(self)
        return self.proc.returncode

    def output(self) -> tuple[bytes, bytes]:
        return bytes(self.out["stdout"]), bytes(self.out["stderr"])

    # -- helpers --------------------------------------------------------------

    def _close_stdin(self) -> None:
        if self.stdin is not None:
            self.loop.remove_writer(self.stdin.fileno())
            self.stdin.close()
            self.stdin = None
            self._data = memoryview(b"")

    def _close_pipe(self, fd: int) -> None:
        f = self.pipes.pop(fd)[0]
        self.loop.remove_reader(fd)
        f.close()
