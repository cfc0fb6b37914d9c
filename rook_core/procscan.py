"""Find a hook's descendants, including those that escaped its process group.

A hook's process group is killed on timeout, but a descendant that called
``setsid`` (a daemon) is in another group. On Linux Rook makes itself a
*child subreaper*, so such orphans are re-parented to Rook instead of init,
and it finds them here by walking ``/proc``: the hook's live process tree, and
the orphans re-parented to Rook whose environment still carries the hook's
marker variables (``ROOK_RUN_ID``, ``ROOK_STATE_DIR``, ``ROOK_HOOK``,
``ROOK_TURN``). Elsewhere these functions find nothing and the process-group
kill is the guarantee.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

PR_SET_CHILD_SUBREAPER = 36
K = TypeVar("K")
PROC = "/proc"


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux), and keep every child's exit status
    Rook's to read (:func:`own_exit_statuses`). Returns whether adopting works."""
    own_exit_statuses()
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def own_exit_statuses() -> None:
    """Take SIGCHLD back to its default when it is ignored. A parent that ignores
    it (a Perl or PHP supervisor's ``$SIG{CHLD} = 'IGNORE'``) hands that to Rook
    across exec, and the kernel then reaps each child at its exit: a hook's exit
    status is lost (read as 0, or its pidfd refused: "No such process"). Unlike
    SIGINT or SIGHUP ignored (kept: ``nohup``), this disposition is no one's
    wish for Rook. Once a run (and before an author agent starts), on the thread
    that can (the main one)."""
    import signal

    try:
        if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except (AttributeError, ValueError, OSError):  # no SIGCHLD here, or not the main thread
        pass


def _fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid,
    pgrp, session, ...), or None for a process that is gone (or unreadable)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # the command name may hold spaces and parentheses: split after the last ')'
    return stat[stat.rfind(b")") + 2 :].split()


def _each_stat() -> Iterator[tuple[int, list[bytes]]]:
    """Every process's pid and :func:`_fields` (none where /proc is missing)."""
    try:
        entries = os.listdir(PROC)
    except OSError:
        return
    for name in entries:
        if name.isdigit():
            fields = _fields(name)
            if fields is not None and len(fields) > 2:
                yield int(name), fields


def _parents() -> dict[int, int]:
    """pid -> ppid for every process but zombies (empty where /proc is missing)."""
    return {pid: int(fields[1]) for pid, fields in _each_stat() if fields[0] != b"Z"}


def group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is running (a zombie is not: it has
    exited); one walk of ``/proc``, False where it is missing."""
    want = str(pgid).encode()
    return any(f[2] == want and f[0] not in (b"Z", b"X") for _, f in _each_stat())


def descendants(pid: int, parents: Mapping[int, int] | None = None) -> list[int]:
    """Every live descendant of ``pid``, whatever session or group it is in."""
    parents = _parents() if parents is None else parents
    children: dict[int, list[int]] = {}
    for p, pp in parents.items():
        children.setdefault(pp, []).append(p)
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def _environ(pid: int) -> dict[bytes, bytes]:
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            env[k] = v
    return env


def _has_children() -> bool:
    """Whether this process has a child at all (running, or exited and not yet
    reaped), asked without reaping it: when it has none, no orphan was adopted
    and ``/proc`` need not be read (the usual end of a run)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    except (OSError, AttributeError):  # no waitid here: look in /proc
        return True
    return True


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def marked_orphans(
    marker: Mapping[str, str], exclude: Iterable[int] = (), scrubbed: bool = False
) -> list[int]:
    """Children of Rook (adopted orphans) whose environment carries ``marker``,
    with their own descendants.

    With ``scrubbed`` (the end of a run, in a process that runs one run's
    hooks), also those that left Rook's session and carry no ``ROOK_RUN_ID``
    at all (``setsid env -i ...``): every hook starts a session of its own, so
    no descendant of a hook is ever in Rook's, while what Rook's own process
    starts otherwise (a Dask LocalCluster, a plugin's helper; under pytest,
    the test's servers) is, and keeps running; one that carries another
    run's id is that run's."""
    if not marker or not _has_children():
        return []
    me = os.getpid()
    mine = _session(0) if scrubbed else None
    skip = set(exclude)
    parents = _parents()
    want = {k.encode(): v.encode() for k, v in marker.items()}
    found: list[int] = []
    for pid, ppid in parents.items():
        if ppid != me or pid in skip:
            continue
        env = _environ(pid)
        if (env and all(env.get(k) == v for k, v in want.items())) or (
            mine is not None and b"ROOK_RUN_ID" not in env and _session(pid) not in (None, mine)
        ):
            found.append(pid)
            found.extend(descendants(pid, parents))
    return found


def leftovers(run_id: str, state_dirs: Iterable[str], prefixes: Iterable[str] = ()) -> list[int]:
    """Processes left running by an earlier invocation of run ``run_id`` that
    was killed (SIGKILL: nothing enforced its hooks' timeouts): those whose
    environment carries the run's id and one of ``state_dirs`` (the scenario
    runs this invocation owns, under the run's lock), or a state directory
    starting with one of ``prefixes`` (the judge profile's, one per judgement
    of such a run), and the programs its criteria ran (``command:``), which carry
    no ``ROOK_*`` variable but one of ``state_dirs`` in ``RUN_BY_ROOK``
    (:data:`rook_core.judging.CHECK_MARKER`); and what those started in their
    hooks' sessions with a cleared environment (:func:`_session_mates`). Only what
    ``/proc`` lets this user read; nothing elsewhere."""
    try:
        names = os.listdir(PROC)
    except OSError:
        return []
    me = os.getpid()
    run = run_id.encode()
    dirs = {d.encode("utf-8", "surrogateescape") for d in state_dirs}
    starts = tuple(p.encode("utf-8", "surrogateescape") for p in prefixes)
    found = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        env = _environ(int(name))
        if env.get(b"RUN_BY_ROOK") in dirs:  # a criterion's program (judging.CHECK_MARKER)
            found.append(int(name))
            continue
        if env.get(b"ROOK_RUN_ID") != run:
            continue
        state = env.get(b"ROOK_STATE_DIR", b"")
        if state in dirs or (starts and state.startswith(starts)):
            found.append(int(name))
    return found + [p for mates in _session_mates({0: found}, names).values() for p in mates]


def _session_mates(found: Mapping[K, list[int]], names: Iterable[str]) -> dict[K, list[int]]:
    """For each key of ``found`` (processes a run left), the other processes of
    ``names`` (``/proc``'s entries) in the sessions its hooks started: those that
    cleared their environment (``env -i``) without leaving the session. Every
    hook leads a session of its own, so a session led by a found process, or by
    none any more (its id stays the session's while a process is in it, and no
    other process is given it), holds that hook's descendants only; one led by
    another process (a shell a user set the variables in), or this process's
    own, is not taken. One ``getsid`` a process."""
    me = os.getpid()
    everyone = {p for pids in found.values() for p in pids}
    mine = _session(0)
    taken: dict[int, K] = {}
    for key, pids in found.items():
        for pid in pids:
            sid = _session(pid)
            if sid is None or sid == mine or sid in taken:
                continue
            if sid in everyone or not _running(sid):
                taken[sid] = key
    mates: dict[K, list[int]] = {}
    if not taken:
        return mates
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me or pid in everyone:
            continue
        sid = _session(pid)
        if sid is not None and sid in taken and _running(pid):  # (a zombie has exited)
            mates.setdefault(taken[sid], []).append(pid)
    return mates


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    state = (_fields(pid) or [b""])[0]
    return state not in (b"Z", b"X", b"")


def left_by_runs(runs_dirs: Iterable[str]) -> dict[str, list[int]]:
    """Processes whose environment names a run under one of ``runs_dirs`` (an
    agent's ``runs`` folders): a hook's ``ROOK_RUN_STATE_DIR`` or ``ROOK_STATE_DIR``
    (the judge profile's too: both lie in the run's folder), or a ``command``
    criterion's ``RUN_BY_ROOK``, by the folder of that run. Whether the run is
    still going (its lock held) is the caller's to ask: those of a run killed
    with SIGKILL are leftovers (``rook doctor``). With them, what they started
    in their hooks' sessions with a cleared environment (:func:`_session_mates`). Only what ``/proc`` lets this
    user read; nothing elsewhere. Never on a run's path: one walk of ``/proc``."""
    roots = tuple(os.path.join(d, "").encode("utf-8", "surrogateescape") for d in runs_dirs)
    try:
        names = os.listdir(PROC) if roots else []
    except OSError:
        return {}
    me = os.getpid()
    found: dict[str, list[int]] = {}
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        env = _environ(int(name))
        for key in (b"ROOK_RUN_STATE_DIR", b"ROOK_STATE_DIR", b"RUN_BY_ROOK"):
            value = env.get(key, b"")
            root = next((r for r in roots if value.startswith(r)), None)
            if root is not None:
                run = value[len(root) :].split(b"/", 1)[0]
                if run:
                    path = (root + run).decode("utf-8", "surrogateescape")
                    found.setdefault(path, []).append(int(name))
                    break
    for path, mates in _session_mates(found, names).items():  # cleared their environment
        found[path] += mates
    return found


def command_name(pid: int) -> str:
    """Process ``pid``'s command name (``/proc/PID/comm``), ``?`` when unknown."""
    try:
        with open(f"{PROC}/{pid}/comm", "rb") as fh:
            return fh.read().strip().decode("utf-8", "replace") or "?"
    except OSError:
        return "?"


def reap(pids: Iterable[int]) -> None:
    """Collect the exit status of adopted orphans we killed (no zombies left)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass
