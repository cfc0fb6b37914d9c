"""run_process itself, driven with real programs: pipes that fill, floods, a
grandchild holding a pipe, timeouts, cancellation, hundreds of hooks at once,
and nothing left behind (no zombie, no descriptor). Most tests run on every
path: pidfds (Linux) with the child started by posix_spawn, and by Popen (a
bare program name, another thread alive while the hook runs elsewhere), and
the asyncio fallback used where pidfds are missing."""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rook_core import process, process_pidfd, procscan

PATHS = ["pidfd", "pidfd-popen", "fallback"] if process_pidfd.available() else ["fallback"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    monkeypatch.setattr(process, "_PIDFD", request.param != "fallback")
    monkeypatch.setattr(process_pidfd, "POSIX_SPAWN", request.param == "pidfd")
    return request.param


def run(argv, *, stdin=None, timeout=30.0, env=None, **kw):
    env = dict(os.environ, **(env or {}))
    return asyncio.run(process.run_process(argv, env=env, stdin=stdin, timeout=timeout, **kw))


def sh(body: str) -> list[str]:
    return ["/bin/sh", "-c", body]


def stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1])


def alive(pid: int) -> bool:
    s = stat(pid)
    return s is not None and s[0] != "Z"


def our_zombie(pid: int) -> bool:
    s = stat(pid)
    return s is not None and s[0] == "Z" and s[1] == os.getpid()


def wait_until(predicate, timeout=10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def pids_in(file: Path) -> list[int]:
    return [int(p) for p in file.read_text().split()] if file.exists() else []


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_big_goal_to_a_hook_that_writes_first_does_not_deadlock(path):
    # 1 MB out before reading anything: the hook blocks until Rook reads, while
    # Rook still has most of the 3 MB goal to write.
    r = run(sh("head -c 1000000 /dev/zero; wc -c"), stdin=b"g" * 3_000_000)
    assert r.returncode == 0 and not r.timed_out and r.overflow is None
    assert r.stdout[:1_000_000] == b"\0" * 1_000_000
    assert r.stdout[1_000_000:].strip() == b"3000000"


def test_a_hook_that_never_reads_its_goal_is_not_an_error(path):
    r = run(sh("echo done"), stdin=b"x" * 3_000_000)
    assert (r.returncode, r.stdout) == (0, b"done\n")


def test_stdin_empty_and_none(path):
    assert run(sh("wc -c"), stdin=b"").stdout.strip() == b"0"
    assert run(sh("wc -c"), stdin=None).stdout.strip() == b"0"  # /dev/null


def test_exit_codes_and_signals(path):
    assert run(sh("echo oops >&2; exit 3")).returncode == 3
    assert run(sh("echo oops >&2; exit 3")).stderr == b"oops\n"
    assert run(sh("kill -9 $$")).returncode == -9


def test_on_exit_is_called_once_at_the_exit_before_the_output_is_read(path, tmp_path):
    # The hook exits at once, but a grandchild holds its stdout a while: on_exit
    # comes at the exit, well before run_process has finished reading.
    pidfile = tmp_path / "bg"
    calls: list[float] = []
    t0 = time.monotonic()
    r = run(
        sh(f"(sleep 1.5; echo late) & echo $! > {pidfile}; echo answer"),
        on_exit=lambda: calls.append(time.monotonic()),
    )
    done = time.monotonic()
    assert r.returncode == 0 and r.stdout.startswith(b"answer\n")
    assert len(calls) == 1
    assert calls[0] - t0 < 1.0  # the exit ...
    assert done - calls[0] >= process.PIPE_GRACE_SECONDS  # ... then the wait for the pipe
    process.kill_leftovers()
    # a child that has exited before on_exit is handed over still gets one call
    calls.clear()
    r = run(sh("exit 4"), on_exit=lambda: calls.append(1))
    assert r.returncode == 4 and calls == [1]


def test_a_grandchild_holding_stdout_does_not_hang(path, tmp_path):
    pidfile = tmp_path / "bg"
    t0 = time.monotonic()
    r = run(sh(f"sleep 300 & echo $! > {pidfile}; echo answer"))
    assert time.monotonic() - t0 < 10
    assert r.returncode == 0 and r.stdout == b"answer\n" and not r.timed_out
    assert any("kept its stdout open" in n for n in r.notes), r.notes
    bg = pids_in(pidfile)[0]
    assert alive(bg)  # it may live on (a service), until the run ends:
    assert any(f"group {os.getpgid(bg)}" in k for k in process.kill_leftovers())
    assert wait_until(lambda: not alive(bg))


def test_a_daemon_holding_both_pipes_is_waited_for_once_and_not_counted(path, tmp_path):
    # A hook that starts a daemon in a session of its own (setsid env -i), which
    # keeps its stdout and stderr: the hook's answer is read, each stream is said
    # held, and its time ends at its exit, not after Rook's wait for the pipes
    # (which a max_seconds criterion would count against the agent).
    pidfile = tmp_path / "daemon"
    exits: list[float] = []
    r = run(
        sh(f"setsid env -i sh -c 'echo $$ > {pidfile}; exec sleep 300' & echo answer; echo err >&2"),
        on_exit=lambda: exits.append(time.time()),
    )
    try:
        assert r.returncode == 0 and (r.stdout, r.stderr) == (b"answer\n", b"err\n")
        assert [n for n in r.notes if "kept its" in n] == [
            "a process started by the hook kept its stdout open after it exited; stopped reading",
            "a process started by the hook kept its stderr open after it exited; stopped reading",
        ]
        assert len(exits) == 1
        assert r.ended - exits[0] < process.PIPE_GRACE_SECONDS / 2, (r.ended, exits)
    finally:
        assert wait_until(pidfile.exists)
        os.kill(int(pidfile.read_text()), 9)
        process.kill_leftovers()


def test_a_group_id_another_process_took_since_is_never_killed_at_the_end(path, tmp_path):
    # A hook exits leaving a process in its group: Rook keeps the group's id to
    # kill what is left when the run ends. If that group ends unseen (its last
    # process reaped by another parent, or where Rook is no subreaper) and the
    # kernel gives its id, a pid, to a new process that leads a group of its own
    # (a shell's job, another hook), the end of the run must leave that alone.
    r = run(sh("sleep 1 >/dev/null 2>&1 & echo $$"))  # (holding no pipe: the hook ends at once)
    left = int(r.stdout)
    assert left in process._live_groups  # its sleep was still in the group
    assert wait_until(lambda: not alive(left) and procscan.descendants(left) == [])
    # the id, free once the group ended, now leads another group: as the kernel
    # hands pids out again, given here at once (to a process that is no child of
    # Rook's: its parent, the shell, waits for it)
    shell = subprocess.Popen(["sh", "-c", "setsid sleep 30 & echo $!; wait"],
                             stdout=subprocess.PIPE)
    other = int(shell.stdout.readline())
    try:
        assert wait_until(lambda: os.getpgid(other) == other)
        process._live_groups.discard(left)
        process._left_groups.discard(left)
        process._live_groups.add(other)
        process._left_groups.add(other)
        process.kill_leftovers()
        time.sleep(0.1)  # a SIGKILL would have landed by now
        assert alive(other), "an unrelated process group was killed"
    finally:
        try:
            os.kill(other, 9)
        except ProcessLookupError:
            pass
        shell.communicate()


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_flood_is_cut_at_the_cap_and_the_group_killed(path, tmp_path, stream):
    pidfile = tmp_path / "pids"
    redirect = ">&2" if stream == "stderr" else ""
    body = f"sleep 300 & echo $! > {pidfile}; head -c 5000000 /dev/zero {redirect}; sleep 300"
    t0 = time.monotonic()
    r = run(sh(body), stdout_cap=100_000, stderr_cap=50_000, timeout=60, kill_grace=1)
    assert time.monotonic() - t0 < 30
    assert r.overflow == stream and not r.timed_out
    assert len(getattr(r, stream)) == (100_000 if stream == "stdout" else 50_000)
    assert any("SIGTERM to process group" in n for n in r.notes)
    assert wait_until(lambda: not alive(pids_in(pidfile)[0]))


def test_a_timeout_kills_the_group_and_a_setsid_descendant(path, tmp_path):
    pidfile = tmp_path / "pids"
    body = (
        f"setsid sleep 300 & echo $! >> {pidfile}; sleep 300 & echo $! >> {pidfile}; "
        f"trap '' TERM; echo $$ >> {pidfile}; while :; do sleep 0.1; done"
    )
    t0 = time.monotonic()
    r = run(sh(body), timeout=1, kill_grace=0.5)
    assert time.monotonic() - t0 < 15
    assert r.timed_out and r.returncode == -9  # SIGTERM ignored: SIGKILL after the grace
    pids = pids_in(pidfile)
    assert len(pids) == 3 and wait_until(lambda: not any(alive(p) for p in pids))
    assert any("SIGKILL to process group" in n for n in r.notes)
    assert any(f"pid {pids[0]}" in n for n in r.notes), r.notes  # the one that left the group
    assert not our_zombie(pids[2])


def test_cancellation_kills_the_group_and_reaps(path, tmp_path):
    pidfile = tmp_path / "pids"
    body = f"sleep 300 & echo $! >> {pidfile}; echo $$ >> {pidfile}; wait"

    async def main():
        env = dict(os.environ)
        task = asyncio.ensure_future(process.run_process(sh(body), env=env, stdin=b"", timeout=60))
        while len(pids_in(pidfile)) < 2:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.3)  # the loop goes on, as after a first Ctrl-C

    asyncio.run(main())
    pids = pids_in(pidfile)
    assert wait_until(lambda: not any(alive(p) for p in pids))
    assert wait_until(lambda: not our_zombie(pids[1]))


def test_a_cancellation_while_the_hook_is_being_started_kills_its_group(path, tmp_path):
    """The run interrupted while asyncio still connects a new hook's pipes (the
    fallback's start), the hook already running and forking: its whole group is
    killed, as later. Only the hook was (asyncio's own clean-up), what it had
    started ran on (Python 3.10 under load lost this race in the test above)."""
    pidfile = tmp_path / "pids"
    body = f"sleep 300 & echo $! >> {pidfile}; echo $$ >> {pidfile}; wait"

    async def main():
        env = dict(os.environ)
        before = set(procscan.descendants(os.getpid()))
        task = asyncio.ensure_future(process.run_process(sh(body), env=env, stdin=b"", timeout=60))
        while not set(procscan.descendants(os.getpid())) - before:
            await asyncio.sleep(0)  # until the hook is started; the loop runs no further
        assert wait_until(lambda: len(pids_in(pidfile)) == 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.3)

    asyncio.run(main())
    pids = pids_in(pidfile)
    assert wait_until(lambda: not any(alive(p) for p in pids))
    assert wait_until(lambda: not our_zombie(pids[1]))


def test_a_cancelled_hook_keeps_what_it_had_printed_on_the_cancellation(path, tmp_path):
    """The run interrupted while a hook blocks: what it had printed (a line and the
    start of another on stdout, a line on stderr) is kept on the cancellation
    that reaches its caller (read_before), on every path; it was thrown away."""
    pidfile = tmp_path / "pid"
    body = f"printf 'partial line\\n{{\"out'; echo 'warming up' >&2; echo $$ > {pidfile}; sleep 300"

    async def hook():
        try:
            await process.run_process(sh(body), env=dict(os.environ), stdin=None, timeout=60)
        except asyncio.CancelledError as exc:
            return process.read_before(exc)

    async def main():
        task = asyncio.ensure_future(hook())
        while not pids_in(pidfile):
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        task.cancel()
        kept = await task
        await asyncio.sleep(0.3)  # the loop goes on, as after a first Ctrl-C
        return kept

    kept = asyncio.run(main())
    assert kept is not None and (kept.stdout, kept.stderr) == (b'partial line\n{"out', b"warming up\n")
    assert not kept.timed_out and kept.overflow is None
    assert wait_until(lambda: not alive(pids_in(pidfile)[0]))

def test_cancelling_a_burst_of_hooks_mid_spawn_leaves_nothing(path, tmp_path):
    marker = {"ROOK_LEAN_TEST": str(tmp_path)}
    pidfile = tmp_path / "pids"

    async def main():
        env = dict(os.environ, **marker)
        argv = sh(f"echo $$ >> {pidfile}; exec sleep 300")
        tasks = [
            asyncio.ensure_future(process.run_process(argv, env=env, stdin=None, timeout=60))
            for _ in range(40)
        ]
        await asyncio.sleep(0)  # one spawned on the loop, the others queued beside it
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0.5)

    asyncio.run(main())
    process.kill_leftovers()
    # every process that got to start is gone, and none is a zombie of ours
    assert wait_until(lambda: not any(alive(p) for p in pids_in(pidfile)))
    assert wait_until(lambda: not any(our_zombie(p) for p in pids_in(pidfile)))


@pytest.fixture
def descriptors():
    """Room for a few hundred hooks' pipes (the soft limit is often 1024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_hundreds_of_hooks_at_once(path, descriptors):
    n = 256

    async def main():
        env = dict(os.environ)
        argv = sh('read g; echo "$g $$"')
        return await asyncio.gather(
            *(
                process.run_process(argv, env=env, stdin=f"{i}\n".encode(), timeout=60)
                for i in range(n)
            )
        )

    results = asyncio.run(main())
    assert all(r.returncode == 0 and not r.notes for r in results)
    answers = [r.stdout.split() for r in results]
    assert [int(a[0]) for a in answers] == list(range(n))  # each got its own goal
    pids = [int(a[1]) for a in answers]
    assert not [p for p in pids if our_zombie(p)]
    assert not set(pids) & process._live_groups  # every group ended with its hook


def test_no_descriptor_is_left_open(path):
    async def main():
        env = dict(os.environ)
        sem = asyncio.Semaphore(25)

        async def one(i):
            async with sem:
                body = "read g; echo $g; echo e >&2" if i % 5 else "exec 1>&-; read g"
                return await process.run_process(sh(body), env=env, stdin=b"x\n", timeout=30)

        return await asyncio.gather(*(one(i) for i in range(500)))

    asyncio.run(main())  # warms up whatever the loop and the spawner keep
    before = open_fds()
    results = asyncio.run(main())
    assert open_fds() == before
    assert sum(r.stdout == b"x\n" for r in results) == 400


def test_a_program_that_does_not_exist_is_a_spawn_error(path, tmp_path):
    r = run([str(tmp_path / "missing")])
    assert r.spawn_error and "No such file" in r.spawn_error and r.returncode is None
    assert not any("retrying" in n for n in r.notes)  # not the machine's fault: no retry


# -- what every path starts the child with (posix_spawn must match Popen) ------


def test_the_child_leads_a_new_session_with_sigpipe_at_its_default(path):
    # Python ignores SIGPIPE; a hook must not inherit that (`yes` would complain
    # of a broken pipe instead of dying quietly of the signal).
    r = run(sh("read _ _ _ _ _ sid _ < /proc/$$/stat; echo $$ $sid; yes | head -c 2 >/dev/null"))
    pid, sid = r.stdout.split()
    assert pid == sid and r.stderr == b"" and r.returncode == 0


def test_only_the_three_streams_are_inherited(path, monkeypatch):
    # An inheritable descriptor Rook was handed (a CI runner's, a jobserver's)
    # must not reach the hook, where a background grandchild would hold it.
    monkeypatch.setattr(process_pidfd, "_seen_inheritable", None)  # Rook starting anew
    r_end, w_end = os.pipe()
    os.set_inheritable(w_end, True)
    try:
        r = run(sh("ls /proc/$$/fd"))  # the shell's descriptors (not ls's own)
    finally:
        os.close(r_end)
        os.close(w_end)
    assert sorted(map(int, r.stdout.split())) == [0, 1, 2]


def test_a_working_directory_and_a_program_found_on_path(path, tmp_path):
    here = run(sh("pwd"), cwd=str(tmp_path))
    assert here.stdout.decode().strip() == str(tmp_path)
    # a bare name is looked up in the child's PATH, as Popen does
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "rook-test-tool"
    tool.write_text("#!/bin/sh\necho found $1\n")
    tool.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    assert run(["rook-test-tool", "it"], env=env).stdout == b"found it\n"


def in_one_thread(body: str, *args: str, prefix: tuple[str, ...] = ()) -> str:
    """Run ``body`` (Python; ``os``, ``sys``, ``threading`` and ``process_pidfd``
    imported, posix_spawn on, ``args`` in ``sys.argv[1:]``) in a new interpreter,
    whose only thread is its main one. Where a hook runs in another directory,
    Rook starts it by posix_spawn only while it runs a single thread, as the
    kernel counts them: an xdist worker runs another (execnet's, which threading
    does not count), and there it is Popen. ``prefix`` runs it through another
    program (setpriv); returns its standard error."""
    code = (
        "import os, sys, threading\n"
        "from rook_core import process_pidfd\n"
        "process_pidfd.POSIX_SPAWN = True\n"
        "assert os.stat('/proc/self/task').st_nlink == 3, 'not the only thread'\n"
    ) + textwrap.dedent(body)
    r = subprocess.run(
        [*prefix, sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    return r.stderr


def unprivileged(tmp_path: Path) -> tuple[str, ...] | None:
    """The prefix that runs a program bound by file permissions: none for a user,
    setpriv dropping CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH for root; None when
    neither works here."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        for prefix in ((), ("setpriv", "--bounding-set=-dac_override,-dac_read_search")):
            try:
                if subprocess.run([*prefix, "cat", str(probe)], capture_output=True).returncode:
                    return prefix
            except OSError:  # no setpriv
                pass
    finally:
        probe.unlink()
    return None


@pytest.mark.skipif(not process_pidfd.available(), reason="needs pidfds")
def test_posix_spawn_is_used_exactly_where_it_starts_what_popen_would(tmp_path, monkeypatch):
    monkeypatch.setattr(process_pidfd, "POSIX_SPAWN", True)
    fds = [10, 11, 12]
    spawnable = process_pidfd._spawnable
    assert spawnable(["/bin/sh"], None, fds) is None  # here
    assert spawnable(["/bin/sh"], os.getcwd(), fds) is None
    assert spawnable(["sh"], None, fds) is False  # PATH lookup: Popen's
    assert spawnable(["/bin/sh"], None, [0, 11, 12]) is False  # a pipe on a standard stream
    # another directory: posix_spawn there while this is the only thread
    in_one_thread(
        """
        tmp, fds, spawnable = sys.argv[1], [10, 11, 12], process_pidfd._spawnable
        assert spawnable(["/bin/sh"], tmp, fds) == tmp
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        try:  # another thread would see this process change its directory: Popen
            assert spawnable(["/bin/sh"], tmp, fds) is False
        finally:
            stop.set()
            other.join()
        import time  # (its OS thread ends a moment after join returns)
        deadline = time.monotonic() + 10
        while spawnable(["/bin/sh"], tmp, fds) is False and time.monotonic() < deadline:
            time.sleep(0.01)
        assert spawnable(["/bin/sh"], tmp, fds) == tmp
        """,
        str(tmp_path),
    )
    child, *ends = process_pidfd._launch(["/bin/sh", "-c", "exit 7"], dict(os.environ), None, True)
    assert isinstance(child, process_pidfd.Spawned)
    assert child.wait(timeout=10) == 7
    for fd in ends:
        os.close(fd)


@pytest.mark.skipif(not process_pidfd.available(), reason="needs pidfds")
def test_a_hook_in_another_directory_is_posix_spawned_there_and_this_process_stays(tmp_path):
    # `rook run -w DIR` from another folder: hooks run in the workspace. They
    # are spawned there with posix_spawn (this process's directory changed
    # around the spawn), not with Popen, and Rook's own directory is unchanged.
    (tmp_path / "hooks").mkdir()
    hook = tmp_path / "hooks" / "where.sh"
    hook.write_text("#!/bin/sh\npwd\n")
    hook.chmod(0o755)
    in_one_thread(
        """
        tmp, here = sys.argv[1], os.getcwd()
        # a program path relative to the hook's directory, as Popen(cwd=) reads it
        child, stdin, out, err = process_pidfd._launch(
            ["hooks/where.sh"], dict(os.environ), tmp, False
        )
        assert isinstance(child, process_pidfd.Spawned), child
        assert os.getcwd() == here
        assert child.wait(timeout=10) == 0
        assert os.read(out, 4096).decode().strip() == tmp
        assert stdin is None
        # a directory that cannot be entered fails as Popen does, naming it
        gone = os.path.join(tmp, "gone")
        try:
            process_pidfd._launch(["/bin/sh", "-c", "true"], dict(os.environ), gone, False)
        except FileNotFoundError as exc:
            assert exc.filename == gone, exc
        else:
            raise AssertionError("no FileNotFoundError")
        assert os.getcwd() == here
        """,
        str(tmp_path),
    )


@pytest.mark.skipif(not process_pidfd.available(), reason="needs pidfds")
def test_an_interruption_right_after_rook_entered_the_hook_s_directory_takes_it_back(tmp_path):
    # A KeyboardInterrupt (SIGTERM outside a run's own handlers: rook profile
    # test, or Rook used from Python) raised as os.chdir returns, before the
    # spawn's try: Rook stayed in the hook's directory, where a relative path
    # given later (a report) would land. Raised here as a signal handler would.
    in_one_thread(
        """
        here = os.getcwd()

        def interrupt(frame, event, arg):
            if event == "c_return" and arg is os.chdir:
                sys.setprofile(None)
                raise KeyboardInterrupt

        sys.setprofile(interrupt)
        try:
            process_pidfd._launch(["/bin/sh", "-c", "exit 0"], dict(os.environ), sys.argv[1], False)
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("no KeyboardInterrupt")
        finally:
            sys.setprofile(None)
        assert os.getcwd() == here, os.getcwd()
        """,
        str(tmp_path),
    )


@pytest.mark.skipif(not process_pidfd.available(), reason="needs pidfds")
def test_a_thread_threading_does_not_know_never_sees_rook_enter_a_hook_s_directory(tmp_path):
    # Rook changed its own directory around a hook's spawn elsewhere when
    # threading.active_count() said it was the only thread; a thread started
    # with _thread.start_new_thread (or by an extension in C) is not counted, and
    # saw the hook's directory as its own (measured: thousands of times in a
    # 30-scenario `rook run -w WS` from another folder). With any other thread
    # alive, the hook is started by Popen, and Rook's directory never changes.
    in_one_thread(
        """
        import _thread

        tmp, here = sys.argv[1], os.getcwd()
        seen, stop = [], []
        done = _thread.allocate_lock()
        done.acquire()

        def watch():
            try:
                while not stop:
                    where = os.getcwd()
                    if where != here:
                        seen.append(where)
            finally:
                done.release()

        _thread.start_new_thread(watch, ())
        try:
            assert threading.active_count() == 1  # threading does not know of it
            assert process_pidfd._spawnable(["/bin/sh"], tmp, [10, 11, 12]) is False
            for _ in range(20):
                child, stdin, out, err = process_pidfd._launch(
                    ["/bin/sh", "-c", "pwd"], dict(os.environ), tmp, False
                )
                assert child.wait(timeout=10) == 0
                assert os.read(out, 4096).decode().strip() == tmp
                os.close(out)
                os.close(err)
        finally:
            stop.append(True)
            done.acquire()
        assert seen == [], set(seen)
        """,
        str(tmp_path),
    )


@pytest.mark.skipif(not process_pidfd.available(), reason="needs pidfds")
def test_a_folder_rook_cannot_return_to_after_a_spawn_keeps_the_hook_and_says_so(tmp_path):
    # Rook's folder lost its search permission while Rook was in the hook's
    # directory for the spawn: the way back (fchdir) raised, the running hook was
    # reported as "could not start the hook: Permission denied" (its pipes closed,
    # its process left untracked), and Rook stayed in the workspace silently,
    # where a relative --report path then landed. Seen with `rook run -w WS` from
    # a folder whose permission flipped (chmod 000 / 755) meanwhile.
    prefix = unprivileged(tmp_path)
    if prefix is None:
        pytest.skip("no way to run a process bound by file permissions here")
    here, ws = tmp_path / "here", tmp_path / "ws"
    here.mkdir()
    ws.mkdir()
    try:
        said = in_one_thread(
            """
            here, ws = sys.argv[1], sys.argv[2]
            os.chdir(here)

            def lock(frame, event, arg):  # the folder loses its permission mid-spawn
                if event == "c_return" and arg is os.posix_spawn:
                    sys.setprofile(None)
                    os.chmod(here, 0)

            sys.setprofile(lock)
            try:
                child, stdin, out, err = process_pidfd._launch(
                    ["/bin/sh", "-c", "pwd"], dict(os.environ), ws, False
                )
            finally:
                sys.setprofile(None)
            assert isinstance(child, process_pidfd.Spawned), child
            assert child.wait(timeout=10) == 0
            assert os.read(out, 4096).decode().strip() == ws
            assert os.getcwd() == ws  # nowhere else to be: it says so
            os.chmod(here, 0o755)
            # the next hook there starts in place
            child, stdin, out, err = process_pidfd._launch(
                ["/bin/sh", "-c", "pwd"], dict(os.environ), ws, False
            )
            assert child.wait(timeout=10) == 0
            assert os.read(out, 4096).decode().strip() == ws
            """,
            str(here),
            str(ws),
            prefix=prefix,
        )
    finally:
        here.chmod(0o755)
    assert f"rook: warning: cannot return to {here} (Permission denied)" in said, said
    assert f"Rook stays in {ws}" in said and "Traceback" not in said, said


def test_a_report_rook_could_not_go_back_for_is_not_written_in_the_workspace(tmp_path):
    # rook run -w WS --report junit:out.xml from a folder that lost its search
    # permission while Rook was in the workspace for a hook's spawn: Rook stayed
    # there (it said so), its way back before the reports failed as well, and
    # out.xml was written into the workspace, reported as done. A relative target
    # is the folder's it was typed in: written there, or said it could not be.
    from rook_core.testing import Workspace

    prefix = unprivileged(tmp_path)
    if prefix is None:
        pytest.skip("no way to run a process bound by file permissions here")
    here, root = tmp_path / "here\x1b[2J", tmp_path / "ws"
    here.mkdir()
    ws = Workspace(root)
    ws.script("agent.sh", "#!/bin/sh\necho '{\"output\": \"ok\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    code = textwrap.dedent(
        """
        import os, sys, threading
        from rook_core import process_pidfd
        from rook_core.cli import main
        here = sys.argv[1]
        os.chdir(here)
        assert os.stat('/proc/self/task').st_nlink == 3, 'not the only thread'

        def lock(frame, event, arg):  # the folder loses its permission mid-spawn, for good
            if event == "c_return" and arg is os.posix_spawn:
                sys.setprofile(None)
                os.chmod(here, 0)

        sys.setprofile(lock)
        main(["run", "-w", sys.argv[2], "--report", "junit:out.xml"])
        """
    )
    try:
        r = subprocess.run([*prefix, sys.executable, "-c", code, str(here), str(root)],
                           capture_output=True, text=True, timeout=120)
    finally:
        here.chmod(0o755)
    assert "rook: warning: cannot return to " in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "here\\x1b[2J" in r.stderr, r.stderr  # printable
    assert not (root / "out.xml").exists(), r.stderr
    # said, naming where it was to be written (the folder it was typed in)
    assert "--report junit:out.xml: cannot use " in r.stderr, r.stderr
    assert "here\\x1b[2J/out.xml: Permission denied" in r.stderr, r.stderr
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr


def _next_pid_is(pid: int) -> bool:
    """Have the kernel give ``pid`` to the next process it starts (root in its pid
    namespace: ``ns_last_pid``); False where that cannot be asked for."""
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
            fh.write(str(pid - 1))
        return True
    except OSError:
        return False


TIMES_OUT = """
import os, signal, subprocess, sys, time
escaped = subprocess.Popen(  # outside the hook's group, deaf to SIGTERM
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
     "print(flush=True); time.sleep(60)"], start_new_session=True, stdout=subprocess.PIPE)
escaped.stdout.readline()
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
with open(sys.argv[1], "w") as fh:
    fh.write(f"{escaped.pid} {os.getpid()}")
time.sleep(60)
"""


def test_the_sigkill_after_the_grace_never_reaches_a_group_that_took_the_hook_s_id(
    path, tmp_path
):
    # A hook that times out exits on its SIGTERM, but a process it started outside
    # its group ignores it: Rook waits the whole grace, then SIGKILLs the hook's
    # group. The hook was reaped at its exit, its group had ended, so its id was
    # free: a hook started meanwhile (another scenario's) that the kernel gave that
    # pid leads a group of that id, and was killed with the first hook's SIGKILL.
    if not _next_pid_is(os.getpid() + 1):
        pytest.skip("cannot choose the next pid here (ns_last_pid needs root)")
    pidfile = tmp_path / "pids"
    hook_py = tmp_path / "hook.py"
    hook_py.write_text(TIMES_OUT)

    async def main():
        env = dict(os.environ)
        first = asyncio.ensure_future(process.run_process(
            [sys.executable, str(hook_py), str(pidfile)], env=env, stdin=None, timeout=2,
            kill_grace=4))
        while len(pids_in(pidfile)) < 2:
            await asyncio.sleep(0.02)
        escaped, hook = pids_in(pidfile)
        while os.path.exists(f"/proc/{hook}"):  # its SIGTERM came, it exited, was reaped
            await asyncio.sleep(0.01)
        given_up = time.monotonic() + 2  # well within the grace

        async def another_hook():
            assert _next_pid_is(hook)  # then at once the spawn (no wait in between)
            return await process.run_process(
                sh("sleep 6; echo alive"), env=env, stdin=None, timeout=30)

        while True:  # (another process on the machine may take the pid first)
            if first.done() or time.monotonic() > given_up:
                first.cancel()
                return None
            second = asyncio.ensure_future(another_hook())
            await asyncio.sleep(0.01)  # started
            try:
                with open(f"/proc/{hook}/cmdline", "rb") as fh:
                    if b"sleep 6" in fh.read():
                        break
            except OSError:
                pass
            second.cancel()
            try:
                await second
            except asyncio.CancelledError:
                pass
        r1 = await first
        r2 = await second
        return escaped, hook, r1, r2

    got = asyncio.run(main())
    if got is None:
        pytest.skip("the kernel gave the hook's pid to another process first")
    escaped, hook, r1, r2 = got
    assert r1.timed_out and any(f"pid {escaped}" in n for n in r1.notes), r1.notes
    assert r2.returncode == 0 and r2.stdout == b"alive\n", (r2, r1.notes)
    assert not any("SIGKILL to process group" in n for n in r1.notes), r1.notes


@pytest.mark.skipif(not process_pidfd.available(), reason="needs pidfds")
@pytest.mark.parametrize(
    "where", ["posix_spawn", "Popen", "pidfd_open", "PidfdChild", "send", "when_exited"])
@pytest.mark.parametrize("goal", ["none", "a goal"])  # with a goal, its pipe is written and closed
def test_an_exception_raised_as_a_hook_is_spawned_leaves_it_neither_running_nor_open(where, goal):
    # A signal's handler that raises (pytest-timeout's SIGALRM, an embedding
    # program's SIGTERM handler calling sys.exit; Rook's own handlers never do)
    # as the spawn returned, before the child was wrapped and watched: the hook
    # went on running with no timeout and nothing to kill it until the run's end,
    # and its pipes stayed open. It is killed, reaped and its pipes closed there.
    in_one_thread(
        """
        import asyncio, signal, subprocess

        where, goal = sys.argv[1], (None if sys.argv[2] == "none" else sys.argv[2].encode())
        if where == "Popen":
            process_pidfd.POSIX_SPAWN = False

        def raising(frame, event, arg):
            if (event == "c_return" and getattr(arg, "__name__", "") == where) or (
                event == "return" and frame.f_code.co_name == "__init__"
                and type(frame.f_locals.get("self")).__name__ == where
            ) or (event == "return" and frame.f_code.co_name == where):
                sys.setprofile(None)
                raise KeyboardInterrupt

        def children():
            me, found = str(os.getpid()), []
            for pid in os.listdir("/proc"):
                try:
                    with open(f"/proc/{pid}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if fields[1] == me:
                    found.append((pid, fields[0]))
            return found

        async def main():
            fds = set(os.listdir("/proc/self/fd"))
            sys.setprofile(raising)
            try:
                if where == "when_exited":  # wrapped, not yet watched: run_process's
                    from rook_core import process

                    await process.run_process(["/bin/sleep", "60"], env=dict(os.environ),
                                              stdin=goal, timeout=60, on_exit=lambda: None)
                else:
                    await process_pidfd.start(asyncio.get_running_loop(),
                                              ["/bin/sleep", "60"], dict(os.environ), None,
                                              goal, (1 << 20, 1 << 20))
            except KeyboardInterrupt:
                pass
            else:
                raise AssertionError("no KeyboardInterrupt")
            finally:
                sys.setprofile(None)
            assert children() == [], children()  # neither running nor a zombie
            assert set(os.listdir("/proc/self/fd")) <= fds, set(os.listdir("/proc/self/fd")) - fds

        asyncio.run(main())
        """,
        where,
        goal,
    )
