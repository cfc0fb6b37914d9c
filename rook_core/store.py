"""The run record: plain files under ``agents/<agent>/runs/<run-id>/``.

Every file is written whole and atomically (write a temporary file, then
rename it over the target), so a run killed at any moment leaves only
complete files; everything passes the redactor first, so no value of a
profile's ``env`` variable reaches the disk.

Layout::

    runs/<run-id>/
      run.json                 manifest: profile pinned by id, phases, times, capabilities
      profile.yaml             the profile as used
      prepare.json             the prepare hook's record (when it ran)
      scenarios/<id>.<k>.json  one file per scenario run: request, hooks, turns, evidence, verdict
      state/run/               ROOK_RUN_STATE_DIR
      state/<id>.<k>/          ROOK_STATE_DIR of each scenario run
      state/<id>.<k>.attempt-N/  what an attempt tried again had left there (Engine.set_aside_state)
      report.json              the run's JSON report, as of its last invocation
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable, Container, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from . import shapes
from .errors import ConfigError, DamagedRecord, RookError, RunStoreError
from .redact import Redactor

RUN_FILE = "run.json"


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def atomic_write(
    path: str | os.PathLike[str], text: str, mode: int | None = None, encoding: str = "utf-8"
) -> None:
    """Write ``text`` to ``path`` whole or not at all. A lone surrogate (half
    a character, which UTF-8 cannot hold) is written as its escape, ``\\udc80``:
    in a JSON string that is the same value. ``mode`` (permission bits) is
    given to the file before it takes ``path``'s place; ``encoding``, one other
    than UTF-8 (a wrapper's UTF-16 file, redacted in place).

    Plain descriptor calls, not a text file object: a record is written once
    per scenario run, and ``open`` adds a ``fstat``, an ``ioctl``, two
    ``lseek`` calls and three Python objects to each."""
    path = os.fspath(path)
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.{os.getpid()}.tmp")
    data = text.encode(encoding, "backslashreplace")
    try:
        fd = os.open(tmp, _WRITE_FLAGS, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise RunStoreError(f"cannot write {path}: {exc.strerror or exc}") from None


_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def dumps_compact(data: Any) -> str:
    """One line of JSON: the C encoder (several times faster than ``indent``),
    for the per-scenario records written thousands of times per run."""
    return json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":")) + "\n"


def left_temporaries(folder: Path, names: Container[str] | None = None) -> list[Path]:
    """The hidden temporary files (``.NAME.PID.tmp``, as :func:`atomic_write`
    makes them) a process killed while it wrote ``NAME`` left in ``folder``:
    those whose PID names no process now (a living one may be writing its own),
    of the names ``names`` only, when given. Readers never take them for records;
    a resume removes its run's, and ``rook doctor`` names them."""
    import re

    found: list[Path] = []
    try:
        entries = os.scandir(folder)
    except OSError:
        return found
    with entries:
        for entry in entries:
            if entry.name[:1] != "." or entry.name[-4:] != ".tmp":
                continue
            named = re.fullmatch(r"(?s)\.(.+)\.(\d+)(?:\.[0-9a-f]{8})?\.tmp", entry.name)
            if named is None or (names is not None and named[1] not in names):
                continue
            try:
                os.kill(int(named[2]), 0)
                continue  # a process has that PID: perhaps the writer, still writing
            except ProcessLookupError:
                pass
            except (OSError, OverflowError, ValueError):
                continue  # another user's process (EPERM), or no PID at all
            if entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
    return found


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DamagedRecord(f"{path}: unreadable record: {exc}") from None


def read_record(path: Path) -> dict[str, Any] | None:
    """A scenario run's record, ``None`` when there is none (no file, or not
    an object); one of another shape than Rook writes (edited by hand, or
    damaged: :data:`rook_core.shapes.RECORD`) is a :class:`RunStoreError`
    naming the file and the field."""
    try:
        record = read_json(path)
    except DamagedRecord as exc:
        raise DamagedRecord(f"{exc}; delete the file for the scenario run to run again") from None
    if not isinstance(record, dict):
        return None
    problem = shapes.problem(record, shapes.RECORD) or _record_problem(record, path)
    if problem is not None:
        raise DamagedRecord(
            f"{path}: {problem}, not what Rook writes there; delete the file "
            "for the scenario run to run again"
        )
    return record


def _record_problem(record: dict[str, Any], path: Path) -> str | None:
    """What no record Rook wrote at ``path`` holds, its types right: a status
    Rook never gives (counted as neither passed nor failed, it would pass a
    run's gate), or the record of another scenario run than its file's name
    (shown, counted and merged twice, and the one it names never run)."""
    from .models import SCENARIO_STATUSES

    status = record.get("status")
    if status is not None and status not in SCENARIO_STATUSES:
        return f"'status' is {status!r}"
    if record["key"] != path.name.removesuffix(".json"):
        return f"its 'key' is {record['key']!r}, the record of another scenario run than its name"
    return None


def planned_records(
    run_path: Path,
    plan: Iterable[str],
    recorded: Container[str] | None = None,
    definitions: Any = None,
    unrecorded: str | None = None,
) -> Iterator[dict[str, Any]]:
    """One record per planned scenario run key, in plan order, read from
    ``run_path/scenarios`` one at a time; where none was recorded (or
    ``recorded`` says so) a stand-in naming the run, ``pending`` in a report,
    with its scenario's content hash when ``definitions`` (the run manifest's
    scenario id -> content hash, as planned) has it: ``rook diff`` compares it.
    ``unrecorded``, if given, is a stand-in's reason (else a report's ``not run
    yet``: a run in progress may be running it now)."""
    hashes = definitions if isinstance(definitions, dict) else {}
    for key in plan:
        record = None
        if recorded is None or key in recorded:
            record = read_record(run_path / "scenarios" / f"{key}.json")
        if record is None:
            sid, _, k = key.rpartition(".")
            record = {
                "key": key,
                "scenario": {"id": sid, "name": sid},
                "repeat_index": int(k) if k.isdigit() else 1,
            }
            if isinstance(hashes.get(sid), str):
                record["scenario"]["content_hash"] = hashes[sid]
            if unrecorded is not None:
                record["reason"] = unrecorded
        yield record


class RunDir:
    """One run's directory."""

    made = False  # this invocation made it: a new run's, unsharded
    driven = False  # its hooks may have started: the run handles signals itself

    def __init__(self, path: Path, redactor: Redactor) -> None:
        self.path = path
        self.id = path.name
        self.redactor = redactor
        redactor.keep(self.id)  # a PIN of 2026 is in every run id made that year
        self.scenarios = path / "scenarios"
        self.state = path / "state"
        self._scenarios = str(self.scenarios)  # the per-run paths, built as strings

    def write_json(self, name: str, data: Any, compact: bool = False) -> Path:
        target = self.path / name
        text = (dumps_compact if compact else dumps)(self.redactor.data(data))
        self._write(target, text)
        return target

    def write_text(self, name: str, text: str) -> Path:
        target = self.path / name
        self._write(target, self.redactor.text(text))
        return target

    failed: str | None = None
    """Why a file of the run could not be written (``No space left on device``),
    once one could not: what stops the run, said by the scenario runs it cuts off."""

    on_failure: Callable[[RunStoreError], object] | None = None
    """Called when a file of the run cannot be written (while the hooks run: the
    runner's :meth:`~rook_core.interrupts.Interrupts.stop`, which stops the run at
    once, as a signal would, however the failure was met: a record written in an
    idle turn, whose failure would otherwise wait for the next scenario run)."""

    def _write(self, target: str | os.PathLike[str], text: str) -> None:
        try:
            atomic_write(target, text)
        except RunStoreError as exc:
            self._failed(exc)
            raise

    def _failed(self, exc: RunStoreError) -> None:
        self.failed = str(exc).rpartition(": ")[2] or str(exc)
        if self.on_failure is not None:
            self.on_failure(exc)

    def read_json(self, name: str) -> Any:
        return read_json(self.path / name)

    def scenario_file(self, key: str) -> Path:
        return self.scenarios / f"{key}.json"

    def save_scenario(self, key: str, record: dict[str, Any]) -> dict[str, Any]:
        """Write the record of scenario run ``key``; returns it redacted, as written."""
        data = self.redactor.data(record)
        try:  # as _write does, with no call more a scenario run (the run path)
            atomic_write(f"{self._scenarios}/{key}.json", dumps_compact(data))
        except RunStoreError as exc:
            self._failed(exc)
            raise
        return data

    def load_scenario(self, key: str) -> dict[str, Any] | None:
        return read_record(self.scenario_file(key))

    def lock(self, name: str = ".lock") -> None:
        """Take this run's lock for the life of this process.

        A second ``rook`` process resuming the same run is refused with a clear
        message. The lock is an ``flock``: the kernel releases it when its holder
        dies, so a crashed run never leaves it stuck. Shards of one run sharing a
        file system each take their own lock name.
        """
        path = self.path / name
        try:
            fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until exit
        except OSError as exc:
            raise RunStoreError(f"cannot lock {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            self.made = False  # the other process's
            raise ConfigError(
                f"run {self.id} is in use by another rook process ({holder}); "
                "wait for it to finish, then resume with --run"
            ) from None
        try:  # who holds it, for the message a second process gets
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()}\n")
            fh.flush()
        except OSError as exc:  # a full disk: not even these few bytes
            with contextlib.suppress(OSError):
                fh.close()
            raise RunStoreError(f"cannot lock {path}: {exc.strerror or exc}") from None
        self._lock: IO[str] | None = fh

    def unlock(self) -> None:
        fh = getattr(self, "_lock", None)
        if fh is not None:
            fh.close()
            self._lock = None

    def discard_unstarted(self, nothing_ran: bool = False) -> None:
        """Remove the folder of a run this invocation made, when it holds no
        ``run.json`` yet: its start failed (a full disk) before anything ran,
        and no command lists or resumes a folder without one. With ``nothing_ran``
        (Ctrl-C before any hook started), whatever it holds."""
        if self.made:
            self.unlock()
            if nothing_ran:
                import shutil  # an interrupted start's only

                shutil.rmtree(self.path, ignore_errors=True)
            else:
                discard_unstarted(self.path)

    def holder(self, name: str) -> str | None:
        """Who holds the lock ``name`` of this run (``pid N``), or ``None`` when no
        process does. The lock file is only read, never taken for long."""
        try:
            fh = open(self.path / name, encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError:
            return None  # never taken here
        with fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)  # released on close
            except OSError:
                return fh.read().strip() or "another process"
        return None

    def state_dir(self, key: str, make: bool = True) -> Path:
        """The state directory of scenario run ``key``, made unless ``make`` is false."""
        d = self.state / key
        if not make:
            return d
        try:
            os.mkdir(d)
        except FileExistsError:
            pass
        except FileNotFoundError:
            d.mkdir(parents=True, exist_ok=True)
        return d


def discard_unstarted(path: Path) -> None:
    """Remove the run folder ``path`` that this invocation made, unless it holds a
    ``run.json``: its start failed (a full disk) or was interrupted before anything
    ran, and no command lists or resumes a folder without one."""
    if not os.path.exists(path / RUN_FILE):
        import shutil  # a failed start's only

        shutil.rmtree(path, ignore_errors=True)


def create_run(runs_dir: Path, redactor: Redactor, run_id: str | None = None) -> RunDir:
    run_id = run_id or new_run_id()
    path = runs_dir / run_id
    try:
        (path / "scenarios").mkdir(parents=True, exist_ok=False)
    except FileExistsError as exc:
        if not_a_folder(runs_dir):  # a broken symbolic link in its place
            raise cannot_create(path, exc) from None
        raise ConfigError(f"run {run_id} already exists in {runs_dir}") from None
    except OSError as exc:
        raise cannot_create(path, exc) from None
    except BaseException:  # Ctrl-C as the folder was made: none is left half made
        discard_unstarted(path)
        raise
    try:
        (path / "state" / "run").mkdir(parents=True, exist_ok=True)
    except BaseException as exc:  # a full disk, or Ctrl-C, between the two
        discard_unstarted(path)
        if isinstance(exc, OSError):
            raise cannot_create(path, exc) from None
        raise
    return RunDir(path, redactor)


def cannot_create(path: Path, exc: OSError) -> RookError:
    """Why the run directory ``path`` could not be made, naming what is in the
    place of its ``runs`` folder. When that is no folder, or one Rook may not
    write in (a chmod, a read-only mount), the workspace is wrong and nothing
    ran: a :class:`ConfigError` (exit 2), as for every command that reads runs;
    a full disk, say, is not the user's setting: exit 1."""
    runs_dir = path.parent
    kind = not_a_folder(runs_dir)
    said = f"cannot create the run directory {path}: {exc.strerror or exc}"
    if kind:
        return ConfigError(f"{said} ({runs_dir} is {kind}, not the runs folder; move it away)")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ConfigError(said)
    return RunStoreError(said)


def not_a_folder(path: Path) -> str:
    """What is at ``path`` that is not a folder, for a message ('a file', 'a named
    pipe', 'a broken symbolic link to X'); '' for a folder (or a link to one) or
    nothing at all."""
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISLNK(mode):
            return "" if stat.S_ISDIR(mode) else kind_of(mode)
        target = os.readlink(path)
    except OSError:  # nothing there (or nothing Rook may look at): not in the way
        return ""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"a broken symbolic link to {target}"
    except OSError as exc:  # a loop of links, a folder not searchable
        return f"a symbolic link to {target} that cannot be followed ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return ""
    return f"a symbolic link to {kind_of(mode)} ({target})"


def kind_of(mode: int) -> str:
    """What a file of the ``st_mode`` ``mode`` is, for a message ('a named pipe')."""
    return _KINDS.get(stat.S_IFMT(mode), "a device")


_KINDS = {
    stat.S_IFREG: "a file",
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
}
