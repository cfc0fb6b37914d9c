"""The lean way :mod:`rook_core.process` runs a hook where the kernel has pidfds.

The child is started in a new session with its standard streams on three new
pipes. Its pipes are made non-blocking and watched with
``loop.add_reader``/``add_writer``: standard input is written as the child
reads it, output is read as it comes and cut at the caps. Its exit is seen
when its pidfd becomes readable, and it is reaped at once, so no zombie is
left and a grandchild holding a pipe open cannot hide the exit. A hook costs
a few loop callbacks and one future at a time — none of asyncio's transports,
protocols, tasks or child-watcher hops.

The spawn itself is :func:`os.posix_spawn` (glibc's ``clone(CLONE_VFORK)``),
where that starts the child exactly as ``Popen(close_fds=True,
start_new_session=True)`` would: a hook given by its path. That is Popen's
work with its Python part left out (≈ 450 Python calls, 0.05–0.1 ms a hook);
elsewhere (a bare program name looked up in ``PATH``) it is Popen.
``posix_spawn`` cannot give the child another working directory (Python has
no ``addchdir`` file action), so for a hook run elsewhere than this process's
directory (``rook run -w DIR`` from another folder: hooks run in the
workspace) this process changes its own directory around the spawn and back,
while it is the only thread, as the kernel counts them (see
:func:`_spawnable`); with other threads alive, which could see the change,
it is Popen.

Either blocks the loop's thread until the child has called ``exec`` (vfork),
as asyncio's own subprocesses do: a tenth of a millisecond, a millisecond or
more under load. Neither releases the GIL meanwhile (measured: a thread that
spawns holds every other thread off for the whole spawn), so spawning on a
pool of threads cannot overlap with the loop's work; it was measured no
faster at concurrency 8, and slower for a wave of 128 hooks, whose spawns
then waited for the loop to hand back the GIL.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, Union

READ_CHUNK = 65536
DRAIN_READS = 16  # reads per pipe at exit before leaving the rest to the loop
REAP_WAIT = 0.2  # see PidfdChild.reap_soon

# Start hooks with os.posix_spawn where it does what Popen would (see
# _spawnable); tests and benchmarks turn it off to exercise Popen.
POSIX_SPAWN = hasattr(os, "posix_spawn")
_SIGDEF = tuple(getattr(signal, n) for n in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, n))
_seen_inheritable: set[int] | None = None  # see _inheritable
_HERE = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY
_tasks: int | None = None  # a descriptor of /proc/self/task (see _alone)

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


class Spawned:
    """A child started by :func:`os.posix_spawn`: the part of
    :class:`subprocess.Popen` that this module uses (``pid``, ``returncode``,
    ``poll``, ``wait``), with the same meaning."""

    __slots__ = ("pid", "returncode")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: as Popen answers
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.returncode


Child = Union["subprocess.Popen[bytes]", Spawned]


def _pipe(opened: list[int]) -> tuple[int, int]:
    r, w = os.pipe()  # non-inheritable, as every descriptor Python opens
    opened += (r, w)
    return r, w


def _launch(
    argv: list[str], env: dict[str, str], cwd: str | None, stdin: bool
) -> tuple[Child, int | None, int, int]:
    """Start ``argv`` with its standard streams on new pipes, in a new session;
    returns the child and the parent's ends: stdin (None without one), stdout,
    stderr. Raises OSError as Popen does, with nothing left open."""
    opened: list[int] = []
    in_r: int | None = None
    in_w: int | None = None
    out_w = -1
    try:
        if stdin:
            in_r, in_w = _pipe(opened)
        out_r, out_w = _pipe(opened)
        err_r, err_w = _pipe(opened)
        there = _spawnable(argv, cwd, opened)
        if there is False:
            child = _popen(argv, env, cwd, in_r, out_w, err_w)
        else:
            child = _posix_spawn(argv, env, in_r, out_w, err_w, there)
    except BaseException as exc:
        if not isinstance(exc, OSError) and out_w >= 0:  # not the spawn's own failure
            _kill_lost(out_w)  # a signal's handler raised as the spawn returned
        for fd in opened:
            os.close(fd)
        raise
    ends = (in_r, out_w, err_w)  # the child's
    done = 0
    try:
        while done < 3:
            end = ends[done]
            done += 1  # counted first: never closed twice (at worst one is left open)
            if end is not None:
                os.close(end)
    except BaseException:  # a signal's handler raised: the child is undone
        for rest in ends[done:]:
            if rest is not None:
                os.close(rest)
        _discard(child, (in_w, out_r, err_r))
        raise
    return child, in_w, out_r, err_r


def _kill_lost(out_w: int) -> None:
    """Kill and reap the child a spawn started if an exception raised as the
    spawn returned (a signal's handler: pytest-timeout's, an embedding program's
    ``sys.exit``) lost it before it was known: the child of this process whose
    standard output is the pipe ``out_w`` is the write end of. Its own session:
    its group is its pid. Only on that path: a walk of ``/proc``."""
    from .procscan import _parents

    try:
        pipe = f"pipe:[{os.fstat(out_w).st_ino}]"
    except OSError:
        return
    me = os.getpid()
    for pid, ppid in _parents().items():
        try:
            if ppid != me or os.readlink(f"/proc/{pid}/fd/1") != pipe:
                continue
        except OSError:
            continue
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _popen(
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    stdin: int | None,
    stdout: int,
    stderr: int,
) -> Child:
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=stdout,
        stderr=stderr,
        env=env,
        cwd=cwd,
        close_fds=True,
        start_new_session=True,
    )


def _spawnable(argv: list[str], cwd: str | None, fds: list[int]) -> str | None | Literal[False]:
    """Whether :func:`os.posix_spawn` starts ``argv`` exactly as Popen would,
    and where: False when it does not (a program named without a path, which
    Popen looks up in the child's ``PATH``; a pipe end on a standard stream's
    number, after a closed stdin or stdout), None to spawn in this process's
    own directory (``cwd`` is it, or not given), else the directory to spawn
    in. That needs this process's directory changed around the spawn, which
    every thread would see: only while the loop's thread is the only one (the
    usual run; a worker pool, a plugin's thread or a Dask worker's threads
    make it Popen), as the kernel counts them (:func:`_alone`). Changing back
    is in a ``finally``, so nothing else in the process runs in the other
    directory."""
    if not POSIX_SPAWN or "/" not in argv[0] or min(fds) < 3:
        return False
    if cwd is None:
        return None
    try:
        if cwd == os.getcwd():
            return None
    except OSError:  # the current directory was removed: nowhere to come back to
        return False
    return cwd if _alone() else False


def _alone() -> bool:
    """Whether this process runs a single thread. :mod:`threading` does not know
    of a thread started by ``_thread.start_new_thread`` or by an extension's C
    code, which would see the directory change (``chdir`` releases the GIL), so
    the kernel is asked too: ``/proc/self/task`` links two more than the
    process has threads (an ``fstat`` of a descriptor kept open: 1.5 to 2.5 µs
    measured on a loaded machine, against twice that for a ``stat`` of the path
    and more for listing it; only for a hook run elsewhere). Where that cannot
    be read, there may be others: Popen."""
    global _tasks
    if threading.active_count() != 1:
        return False
    try:
        if _tasks is None:
            _tasks = os.open("/proc/self/task", os.O_RDONLY | os.O_DIRECTORY)
        return os.fstat(_tasks).st_nlink == 3
    except OSError:
        return False


def _forget_tasks() -> None:
    """In a forked child: the descriptor :func:`_alone` keeps is its parent's."""
    global _tasks
    if _tasks is not None:
        try:
            os.close(_tasks)
        except OSError:
            pass
        _tasks = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_tasks)


def _posix_spawn(
    argv: list[str],
    env: dict[str, str],
    stdin: int | None,
    stdout: int,
    stderr: int,
    cwd: str | None = None,
) -> Child:
    """``posix_spawn`` what Popen(close_fds=True, start_new_session=True) would
    start, with no Python between the spawn's steps: the child's streams on the
    pipes (or /dev/null), a new session, SIGPIPE and SIGXFSZ back to their
    defaults (Python ignores them; Popen's ``restore_signals``). Every other
    descriptor Python opened is close-on-exec already; the few inherited
    without that flag are closed by an explicit action (:func:`_inheritable`).
    With ``cwd``, the child starts there (see :func:`_spawnable`); a directory
    that cannot be entered is left to Popen, whose error names it as before."""
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_DUP2, stdin, 0)
        if stdin is not None
        else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),  # as Popen's DEVNULL
        (os.POSIX_SPAWN_DUP2, stdout, 1),
        (os.POSIX_SPAWN_DUP2, stderr, 2),
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable()]
    if cwd is None:
        pid = os.posix_spawn(
            argv[0], argv, env, file_actions=actions, setsid=True, setsigdef=_SIGDEF
        )
        return Spawned(pid)
    try:  # come back here even if it is renamed meanwhile; O_PATH needs no read permission
        home = os.open(".", _HERE)
    except OSError:
        return _popen(argv, env, cwd, stdin, stdout, stderr)
    try:
        try:
            os.chdir(cwd)
        except OSError:
            return _popen(argv, env, cwd, stdin, stdout, stderr)
        pid = os.posix_spawn(
            argv[0], argv, env, file_actions=actions, setsid=True, setsigdef=_SIGDEF
        )
    finally:  # also after an exception raised as chdir returned (a signal's handler)
        try:
            _return(home, cwd)
        finally:
            os.close(home)
    return Spawned(pid)


def _return(home: int, there: str) -> None:
    """Back to this process's directory (``home``, a descriptor of it) from
    ``there``. If the directory lost its search permission meanwhile (or cannot
    be entered for another reason), by its path (the way it may have, renamed);
    if neither way works, this process stays ``there`` and says so on standard
    error: the hook it started is kept (never lost as "could not start" while it
    runs), every later hook there is started in place, and ``rook run`` tries
    to go back before it writes its reports (:func:`rook_core.reporting.back_to`),
    which are written where they were typed either way
    (:func:`rook_core.reporting.write_reports`)."""
    try:
        os.fchdir(home)
        return
    except OSError as exc:
        first = exc
    path = "its folder"
    try:
        path = os.readlink(f"/proc/self/fd/{home}")
        os.chdir(path)
        return
    except OSError:
        pass
    import sys  # only here: the error path

    from .errors import shown
    from .redact import scrub
    from .report import printable

    said = (
        f"rook: warning: cannot return to {path} ({first.strerror or first}) after starting "
        f"a hook in {there}: Rook stays in {there}, where a relative path would now point, "
        "until it goes back (a report given by a relative path is still written where it "
        "was typed)"
    )  # a folder's name may hold control characters (ESC [2J), bytes that are not UTF-8
    sys.stderr.write(printable(shown(scrub(said))) + "\n")


def _inheritable() -> list[int]:
    """Descriptors above 2 that a spawned program would inherit: those this
    process had without close-on-exec when it first spawned (handed down by
    its parent, say), for as long as they stay so. Python opens every
    descriptor close-on-exec (PEP 446), so this list is almost always empty;
    one made inheritable later, on purpose, is inherited."""
    global _seen_inheritable
    if _seen_inheritable is None:
        _seen_inheritable = set()
        try:
            names = os.listdir("/proc/self/fd")
        except OSError:
            names = [str(fd) for fd in range(3, 256)]
        for name in names:
            fd = int(name)
            try:
                if fd > 2 and os.get_inheritable(fd):
                    _seen_inheritable.add(fd)
            except OSError:  # the listing's own descriptor, or closed meanwhile
                pass
    found = []
    for fd in list(_seen_inheritable):
        try:
            if os.get_inheritable(fd):
                found.append(fd)
        except OSError:
            _seen_inheritable.discard(fd)  # closed: its number may come back non-inheritable
    return found


def _discard(child: Child, fds: tuple[int | None, ...]) -> None:
    """Kill and reap a child that cannot be watched; close its pipes."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        child.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass
    for fd in fds:
        if fd is not None:
            os.close(fd)


async def start(
    loop: asyncio.AbstractEventLoop,
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    stdin: bytes | None,
    caps: tuple[int, int],
) -> PidfdChild:
    """Start ``argv`` and watch it; raises OSError as Popen does."""
    child, in_fd, out_fd, err_fd = _launch(argv, env, cwd, stdin is not None)
    try:
        pidfd = os.pidfd_open(child.pid)
    except BaseException as exc:  # out of descriptors: undo the spawn, it is retried like one
        if not isinstance(exc, OSError):  # a signal's handler raised as it returned
            _close_pidfd_of(child.pid)
        _discard(child, (in_fd, out_fd, err_fd))
        raise
    watched = None
    try:
        watched = PidfdChild(loop, child, pidfd, (in_fd, out_fd, err_fd), stdin, caps)
        watched.send()
    except BaseException:  # a signal's handler raised before it was watched: undone
        if watched is None:  # its pipes as _launch made them (in_fd never written)
            for fd in (out_fd, err_fd, pidfd):
                loop.remove_reader(fd)
            os.close(pidfd)
            _discard(child, (in_fd, out_fd, err_fd))
        else:  # stdin may be written and closed already: closed by what it knows
            _discard(child, ())
            watched.has_exited()  # reaped, its pidfd closed
            watched.close()
        raise
    return watched


def _close_pidfd_of(pid: int) -> None:
    """Close the pidfd of ``pid`` that an exception raised as ``pidfd_open``
    returned left open with its number unknown (``/proc/self/fdinfo`` names
    the process a pidfd refers to)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return
    for name in fds:
        try:
            if os.readlink(f"/proc/self/fd/{name}") != "anon_inode:[pidfd]":
                continue
            with open(f"/proc/self/fdinfo/{name}", encoding="ascii") as fh:
                if f"Pid:\t{pid}\n" in fh.read():
                    os.close(int(name))
        except OSError:
            continue


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


class PidfdChild:
    """A running hook: its pipes and pidfd watched by the event loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        proc: Child,
        pidfd: int,
        fds: tuple[int | None, int, int],
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
        self.pipes: dict[int, tuple[str, int]] = {}  # fd -> (stream, cap)
        self._waiter: asyncio.Future[bool] | None = None
        self._cond: Callable[[], bool] = bool
        self._on_exit: Callable[[], None] | None = None
        in_fd, out_fd, err_fd = fds
        for name, fd, cap in (("stdout", out_fd, caps[0]), ("stderr", err_fd, caps[1])):
            os.set_blocking(fd, False)
            self.pipes[fd] = (name, cap)
            loop.add_reader(fd, self._read, fd)
        loop.add_reader(pidfd, self._exited)
        self.stdin = in_fd
        self._data = memoryview(stdin or b"")
        self._sent = 0
        self._writing = False  # stdin watched by the loop (a goal larger than the pipe's buffer)

    def send(self) -> None:
        """Begin writing standard input: a goal that fits the pipe buffer goes at
        once (and the pipe is closed), a larger one as the child reads it. Apart
        from ``__init__``, which leaves the pipe alone, so that :func:`start` knows
        which of them an exception came in."""
        if self.stdin is not None:
            os.set_blocking(self.stdin, False)
            self._write()
            if self.stdin is not None:
                self.loop.add_writer(self.stdin, self._write)
                self._writing = True

    # -- loop callbacks ------------------------------------------------------

    def _write(self) -> None:
        assert self.stdin is not None
        try:
            self._sent += os.write(self.stdin, self._data[self._sent :])
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
        name, cap = self.pipes[fd]
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

    def _exited(self, reap: bool = True) -> None:
        """The pidfd is readable: the child has exited. Reap it at once (unless
        held: :meth:`hold`)."""
        self.loop.remove_reader(self.pidfd)
        os.close(self.pidfd)
        self.pidfd = -1
        if reap:
            self.proc.poll()  # waitpid: the child is a zombie, this does not block
        self.exited = True
        _unreaped.discard(self)
        for fd in list(self.pipes):  # what it wrote is in the pipes already
            for _ in range(DRAIN_READS):
                if fd not in self.pipes or not self._read(fd):
                    break
        if self._on_exit is not None:  # first: what it wakes runs before this hook's caller
            self._on_exit()
        self._wake()

    def has_exited(self) -> bool:
        """Whether the child has exited, its exit seen now if the loop has not
        got to it yet (a cancellation can come in the same turn)."""
        if not self.exited:
            poller = select.poll()
            poller.register(self.pidfd, select.POLLIN)
            if poller.poll(0):
                self._exited(not self._held)
        return self.exited

    _held = False

    def hold(self) -> None:
        """Until :meth:`release`, see the child's exit but leave it unreaped: a
        zombie keeps its pid, its group's id, which the kernel then gives no other
        process, so that the group can be signalled after the child exited with
        no risk of reaching another's (a new hook leads a group of its own pid).
        On the way to killing its group only (:func:`rook_core.process._terminate_group`)."""
        if self.exited or self._held:
            return
        self._held = True
        self.loop.remove_reader(self.pidfd)
        self.loop.add_reader(self.pidfd, self._exited, False)

    def holds_id(self) -> bool:
        """Whether the child's pid is still its own (running, or held unreaped)."""
        return self._held or not self.exited

    def release(self) -> None:
        """End :meth:`hold`: reap the child if it has exited, else at its exit."""
        if not self._held:
            return
        self._held = False
        if self.exited:
            self.proc.poll()
        else:
            self.loop.remove_reader(self.pidfd)
            self.loop.add_reader(self.pidfd, self._exited)

    def when_exited(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the child's exit is seen (at once if it was)."""
        if self.exited:
            callback()
        else:
            self._on_exit = callback

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
        """Give stdout and stderr ``timeout`` seconds together to reach end of
        file; the streams still open (held by a descendant) are no longer read."""
        held = []
        deadline = self.loop.time() + timeout  # one wait for both: a daemon holds both
        for name in ("stdout", "stderr"):
            if not await self._until(partial(self._closed_stream, name), deadline):
                held.append(name)
        for fd in list(self.pipes):
            self._close_pipe(fd)
        return held

    def _closed_stream(self, name: str) -> bool:
        return all(n != name for n, _ in self.pipes.values())

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
            if self._writing:
                self.loop.remove_writer(self.stdin)
                self._writing = False
            os.close(self.stdin)
            self.stdin = None
            self._data = memoryview(b"")

    def _close_pipe(self, fd: int) -> None:
        del self.pipes[fd]
        self.loop.remove_reader(fd)
        os.close(fd)
