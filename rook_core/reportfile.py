"""``report.json``: the compact report with one scenario entry per line, read on demand.

A run's ``report.json`` holds the same document as ``rook run --json``, in the
compact form, with a newline after the opening of ``scenarios``, between its
entries and before its closing::

    {"version":1,"run":{...},"scenarios":[
    {...first entry...},
    {...last entry...}
    ],"summary":{...}}

It is one JSON document like any other. :func:`write_report_file` writes it
one entry at a time; :func:`read_report` reads its head and tail and serves the
entries from the file on demand (:class:`FileEntries`), keeping only the byte
offset of each. A report in any other layout (written by an older Rook) is
read whole.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from . import closing, shapes
from .errors import DamagedRecord, RunStoreError
from .reportio import LazyList, MappedList, iterencode

CHUNK = 1 << 18  # bytes read at once: a few entries, never the whole file
HEAD_END = b'"scenarios":['


class FileEntries(LazyList):
    """The scenario entries of a ``report.json`` in the line layout, read on demand.

    Holds an open file descriptor (closed when the view is collected or
    :meth:`close` is called), so a file replaced later (a resumed run writes
    a new report) does not change what this view reads. Only the byte offset
    of each entry stays in memory: 8 bytes per entry.
    """

    __slots__ = (
        "_fd",
        "_name",
        "_start",
        "_stop",
        "_offsets",
        "_document",
        "_finalizer",
        "__weakref__",
    )

    def __init__(self, fd: int, name: str, start: int, stop: int, offsets: array | None) -> None:
        self._fd = fd
        self._name = name
        self._start, self._stop = start, stop  # the bytes between the head and the tail
        self._offsets = offsets  # start of each entry, then ``stop``; found when first needed
        self._document: tuple[tuple[str, ...], tuple[Any, ...]] | None = None  # is_file_of
        self._finalizer = weakref.finalize(self, os.close, fd)
        closing.at_end(self._finalizer)  # a command's view: closed as the command ends

    def close(self) -> None:
        """Close the file now (the view is unusable afterwards)."""
        self._finalizer()

    def _check_open(self) -> None:
        if not self._finalizer.alive:  # its descriptor number may belong to another file now
            raise ValueError(f"{self._name}: the report's file was closed")

    def _index(self) -> array:
        self._check_open()
        if self._offsets is None:
            offsets = array("Q", [self._start] if self._stop > self._start else [])
            pos = self._start
            while pos < self._stop:
                data = pread_all(self._fd, min(CHUNK, self._stop - pos), pos)
                at = data.find(b"\n")
                while at != -1:
                    if pos + at + 1 < self._stop:
                        offsets.append(pos + at + 1)
                    at = data.find(b"\n", at + 1)
                pos += len(data)
            offsets.append(self._stop)
            self._offsets = offsets
        return self._offsets

    def __len__(self) -> int:
        return max(0, len(self._index()) - 1)

    def holds(self, report: dict[str, Any]) -> None:
        """Note that ``report`` is the document of this view's file (its keys
        and its other values, by identity: see :meth:`is_file_of`)."""
        self._document = (tuple(report), self._others(report))

    def is_file_of(self, report: dict[str, Any]) -> bool:
        """Whether ``report`` is still the document in this view's file: the
        same keys, in order, each holding the very value read or written (a
        report is changed by giving a key a new value, as ``rook report`` does
        for an older summary, never by editing a value in place)."""
        if not self._document or tuple(report) != self._document[0]:
            return False
        held, now = self._document[1], self._others(report)
        return len(held) == len(now) and all(a is b for a, b in zip(held, now, strict=True))

    def _others(self, report: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(v for v in report.values() if v is not self)  # no cycle through the view

    def copy_to(self, out: IO[bytes], whole: bool = False) -> None:
        """Write the entries' lines to ``out`` as they are in the file (with
        ``whole``, the whole file)."""
        self._check_open()
        pos, stop = (0, os.fstat(self._fd).st_size) if whole else (self._start, self._stop)
        while pos < stop:
            data = pread_all(self._fd, min(CHUNK, stop - pos), pos)
            out.write(data)
            pos += len(data)

    def _decode(self, raw: bytes, i: int) -> Any:
        try:
            entry = json.loads(raw.rstrip(b",\n"))
        except ValueError as exc:
            raise DamagedRecord(
                f"{self._name}: scenario entry {i + 1}: not JSON ({exc}){_rebuild(Path(self._name))}"
            ) from None
        return checked_entry(entry, self._name, i)

    def _item(self, i: int) -> Any:
        offsets = self._index()
        return self._decode(pread_all(self._fd, offsets[i + 1] - offsets[i], offsets[i]), i)

    def __iter__(self) -> Iterator[Any]:
        offsets = self._index()
        n, i = len(offsets) - 1, 0
        while i < n:
            j = i + 1  # read whole entries, about CHUNK bytes at a time
            while j < n and offsets[j + 1] - offsets[i] <= CHUNK:
                j += 1
            base = offsets[i]
            self._index()  # still open
            data = pread_all(self._fd, offsets[j] - base, base)
            for k in range(i, j):
                yield self._decode(data[offsets[k] - base : offsets[k + 1] - base], k)
            i = j


def pread_all(fd: int, size: int, offset: int) -> bytes:
    parts, got = [], 0
    while got < size:
        data = os.pread(fd, size - got, offset + got)
        if not data:
            raise DamagedRecord("a report file was cut short while it was being read")
        parts.append(data)
        got += len(data)
    return b"".join(parts) if len(parts) != 1 else parts[0]


# -- report.json: one entry per line -------------------------------------------------------


COMPACT: dict[str, Any] = {"ensure_ascii": False, "default": str, "separators": (",", ":")}


def _compact(value: Any) -> bytes:
    # a lone surrogate (a "\ud800" escape read back from a file) as its escape again, as
    # store.atomic_write writes it: in a JSON string that is the same value
    return json.dumps(value, **COMPACT).encode("utf-8", "backslashreplace")


def checked_entry(entry: Any, name: str, i: int) -> Any:
    """``entry``, the ``i``-th of the report file ``name``, when it has the
    shape Rook writes (:data:`rook_core.shapes.ENTRY`); else a
    :class:`RunStoreError` naming the entry and the field."""
    problem = shapes.problem(entry, shapes.ENTRY)
    if problem is None:
        return entry
    which = f"scenario entry {i + 1}"
    if isinstance(entry, dict) and isinstance(entry.get("id"), str):
        which += f" ({entry['id']})"
    raise DamagedRecord(
        f"{name}: {which}: {problem}, not what Rook writes there{_rebuild(Path(name))}"
    )


def encode_entry(entry: Any) -> bytes:
    """A scenario entry as a line of ``report.json`` holds it (without the separator)."""
    return _compact(entry)


def write_report_file(
    path: Path | None,
    head: dict[str, Any],
    entries: Iterable[Any],
    tail: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """Write a report in the line layout, one entry at a time, and return it with
    its ``scenarios`` read back from the file on demand.

    ``head`` holds the keys before ``scenarios`` (``version``, ``run``);
    ``tail()`` is called once every entry is written and returns the keys after
    it (``summary``). ``path`` is replaced atomically; ``None`` writes an
    anonymous temporary file instead (it vanishes with the returned view).
    """
    if path is None:
        import tempfile

        tmp, target = None, None
        fh = tempfile.TemporaryFile("w+b")  # noqa: SIM115 - closed below
    else:
        tmp, target = path.with_name(f".{path.name}.{os.getpid()}.tmp"), path
        try:
            fh = open(tmp, "w+b")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise RunStoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    fd = -1
    try:
        first = _head(head)
        fh.write(first)
        pos = start = len(first)
        offsets = array("Q")
        for line in _entry_lines(entries):
            offsets.append(pos)
            fh.write(line)
            pos += len(line)
        offsets.append(pos)
        rest = tail()
        for piece in _tail(rest):
            fh.write(piece)
        fh.flush()
        fd = os.dup(fh.fileno())
        fh.close()
        if tmp is not None and target is not None:
            os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):  # what it still holds cannot be written either
            fh.close()
        if fd >= 0:
            os.close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(exc, OSError):
            raise RunStoreError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    view = FileEntries(fd, str(path or "report"), start, pos, offsets)
    report = {**head, "scenarios": view, **rest}
    view.holds(report)
    return report


def write_json(report: dict[str, Any], out: IO[bytes], redactor: Any = None) -> None:
    """Write ``report`` to ``out`` in the line layout: what ``--json`` prints.

    The keys before ``scenarios`` and the opening of its list go on the first
    line, each entry on a line of its own, the rest on the last: the same bytes
    as the run's ``report.json``. A report read from its file (or just written
    to it) is copied from that file, not decoded and encoded again; when only
    its entries are still the file's, only they are copied. With a
    ``redactor`` that holds secrets (a past run shown again, whose record may
    predate a variable's declaration), every part is redacted first
    (:meth:`~rook_core.redact.Redactor.data`: it stays JSON), as its table is.
    """
    entries = report.get("scenarios", [])
    if redactor:
        keys = list(report)
        cut = keys.index("scenarios") if "scenarios" in keys else len(keys)
        out.write(_head(redactor.data({k: report[k] for k in keys[:cut]})))
        for line in _entry_lines(redactor.data(entry) for entry in entries):
            out.write(line)
        for piece in _tail(redactor.data({k: report[k] for k in keys[cut + 1 :]})):
            out.write(piece)
        return
    if isinstance(entries, FileEntries) and entries.is_file_of(report):
        entries.copy_to(out, whole=True)
        return
    keys = list(report)
    cut = keys.index("scenarios") if "scenarios" in keys else len(keys)
    out.write(_head({k: report[k] for k in keys[:cut]}))
    if isinstance(entries, FileEntries):
        entries.copy_to(out)
    else:
        for line in _entry_lines(entries):
            out.write(line)
    for piece in _tail({k: report[k] for k in keys[cut + 1 :]}):
        out.write(piece)


def redacted_report(report: dict[str, Any], redactor: Any) -> dict[str, Any]:
    """``report`` with every part redacted by ``redactor``
    (:meth:`~rook_core.redact.Redactor.data`), each entry as it is read (a
    read-only list, as the report's own: a run of 10,000 scenario runs is never
    held whole): for a past run shown again, whose record may predate a
    variable's declaration."""
    return {
        k: MappedList(v, redactor.data) if k == "scenarios" else redactor.data(v)
        for k, v in report.items()
    }


def check_entries(report: dict[str, Any]) -> None:
    """Check each scenario entry of a report read from its file (a
    :class:`FileEntries`) as reading it does: a damaged one raises
    :class:`DamagedRecord` naming it. ``--json`` of a past run (``rook report``,
    ``rook runs show``) copies the file's bytes, so without this it printed an
    entry that the table and every report format refuse. Only decoded, one
    chunk at a time; never encoded again."""
    entries = report.get("scenarios")
    while isinstance(entries, MappedList):  # redacted as read (redacted_report)
        entries = entries.items
    if isinstance(entries, FileEntries):
        for _ in entries:
            pass


def print_json(report: dict[str, Any], redactor: Any = None) -> None:
    """``--json``: :func:`write_json` to standard output (redacted by ``redactor``)."""
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    if out is None:  # a text stream put in its place (by an embedding caller)
        buf = io.BytesIO()
        write_json(report, buf, redactor)
        sys.stdout.write(buf.getvalue().decode("utf-8"))
        return
    write_json(report, out, redactor)
    out.flush()


def _head(head: dict[str, Any]) -> bytes:
    first = b"{" + b",".join(_compact(k) + b":" + _compact(v) for k, v in head.items())
    return first + (b"," if head else b"") + b'"scenarios":[\n'


def _entry_lines(entries: Iterable[Any]) -> Iterator[bytes]:
    """Each entry's line: compact JSON, then a comma (but after the last) and a newline."""
    previous: bytes | None = None
    for entry in entries:  # bytes: an entry encoded already (encode_entry)
        if previous is not None:
            yield previous + b",\n"
        previous = entry if isinstance(entry, bytes) else _compact(entry)
    if previous is not None:
        yield previous + b"\n"


def _tail(rest: dict[str, Any]) -> Iterator[bytes]:
    yield b"]"
    for k, v in rest.items():  # the summary's per-scenario list is lazy too
        yield b"," + _compact(k) + b":"
        for piece in iterencode(v, **COMPACT):
            yield piece.encode("utf-8", "backslashreplace")  # as _compact
    yield b"}\n"


def _rebuild(path: Path) -> str:
    """The way out of a damaged ``report.json``: the run rendered from its records."""
    return f"; {rebuild_hint(path.parent)}"


def rebuild_hint(run_path: Path) -> str:
    """How a run with a damaged ``report.json`` is rendered from its records
    (``rook report ID --rebuild``, which only reads) and, with its manifest there,
    repaired (``rook run --run ID`` writes the report again, running nothing that
    finished, with the gate and concurrency its last invocation was given: its
    report, and exit code, stay the run's)."""
    from .reporting import run_flags
    from .workspace import run_found_by

    run, where = run_path.name, run_found_by(run_path)  # the commands work from anywhere
    hint = f"rook report {run} --rebuild{where} renders the run again from its records"
    if (run_path / "run.json").is_file():
        hint = (
            f"rook run --run {run}{where}{run_flags(run_path, reports=False)} writes it again from the "
            f"run's records (running only what is unfinished), and {hint}"
        )
    return hint


def read_report(path: Path) -> Any:
    """A report file, its entries read on demand when it is in the line layout
    (anything else is parsed whole); ``None`` when the file does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DamagedRecord(f"{path}: unreadable report: {exc.strerror or exc}") from None
    try:
        found = _layout(fd)
    except BaseException:
        os.close(fd)
        raise
    if found is None:
        os.close(fd)
        try:
            report = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise DamagedRecord(f"{path}: unreadable report: {exc}{_rebuild(path)}") from None
        if isinstance(report, dict) and isinstance(report.get("scenarios"), list):
            for i, entry in enumerate(report["scenarios"]):
                checked_entry(entry, str(path), i)
        return report
    head_line, start, stop, tail_line = found
    try:
        head = json.loads(head_line + b"]}")
        rest = json.loads(b'{"scenarios":[' + tail_line)
    except ValueError as exc:
        os.close(fd)
        raise DamagedRecord(f"{path}: unreadable report: {exc}{_rebuild(path)}") from None
    if not (isinstance(head, dict) and isinstance(rest, dict)):
        os.close(fd)
        raise DamagedRecord(f"{path}: not a report{_rebuild(path)}")
    view = head["scenarios"] = FileEntries(fd, str(path), start, stop, None)
    rest.pop("scenarios", None)
    report = {**head, **rest}
    view.holds(report)
    return report


def _layout(fd: int) -> tuple[bytes, int, int, bytes] | None:
    """Head line, where the entries start and stop, and the tail line; ``None``
    when the file is not in the line layout."""
    size = os.fstat(fd).st_size
    head, pos = b"", 0
    while pos < size:
        data = os.pread(fd, min(CHUNK, size - pos), pos)
        if not data:
            break
        at = data.find(b"\n")
        if at != -1:
            head += data[:at]
            break
        head += data
        pos += len(data)
    else:
        return None
    if not head.endswith(HEAD_END):
        return None
    start = len(head) + 1
    end = size - 1 if size and os.pread(fd, 1, size - 1) == b"\n" else size
    tail, pos = b"", end  # the tail line: after the last newline before ``end``
    while pos > start - 1:
        lo = max(start - 1, pos - CHUNK)
        data = os.pread(fd, pos - lo, lo)
        at = data.rfind(b"\n")
        if at != -1:
            tail = data[at + 1 :] + tail
            stop = lo + at + 1
            break
        tail = data + tail
        pos = lo
    else:
        return None
    if stop < start or not tail.startswith(b"]"):
        return None
    return head, start, stop, tail
