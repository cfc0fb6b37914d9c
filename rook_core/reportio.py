"""Reports that stream: lazy lists of entries, JSON written piece by piece, the report file.

A report holds one entry per scenario run, and a run may have tens of
thousands. So a report's ``scenarios`` (and its ``summary.by_scenario``) are
:class:`LazyList` views: they produce each item when it is asked for and keep
none. They are read-only ``list`` subclasses, so code written for a plain list
keeps working: ``len``, indexing, slicing, iteration (as often as wanted),
``in``, ``==``, ``json.dumps`` (which builds the whole list for the duration of
the call) and :meth:`LazyList.tolist`. Mutating one raises ``TypeError``.

:func:`iterencode` writes such a document as JSON one piece at a time,
byte-for-byte what ``json.dumps`` of the materialised document would give.

:mod:`rook_core.reportfile` writes a run's ``report.json`` entry by entry and
serves its entries back from the file through such a view.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, SupportsIndex

from .errors import RunStoreError


class LazyList(list):  # type: ignore[type-arg]
    """A read-only list whose items are made on demand (see the module docstring).

    Subclasses define ``__len__`` and ``_item(i)`` (``0 <= i < len``), and may
    define a faster ``__iter__``. Each access returns a fresh object.
    """

    __slots__ = ()

    def __len__(self) -> int:
        raise NotImplementedError

    def _item(self, i: int) -> Any:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self._item(i)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getitem__(self, index: Any) -> Any:
        n = len(self)
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(n))]
        i = index.__index__()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._item(i)

    def __reversed__(self) -> Iterator[Any]:
        for i in range(len(self) - 1, -1, -1):
            yield self._item(i)

    def __contains__(self, value: object) -> bool:
        return any(item == value for item in self)

    def index(self, value: Any, start: SupportsIndex = 0, stop: SupportsIndex = sys.maxsize) -> int:
        for i in range(*slice(start, stop).indices(len(self))):
            if self._item(i) == value:
                return i
        raise ValueError(f"{value!r} is not in the list")

    def count(self, value: Any) -> int:
        return sum(1 for item in self if item == value)

    def tolist(self) -> list[Any]:
        """Every item, in a plain list (all in memory at once)."""
        return list(iter(self))

    def copy(self) -> list[Any]:
        return self.tolist()

    def __copy__(self) -> list[Any]:
        return self.tolist()

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        import copy

        return copy.deepcopy(self.tolist(), memo)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (self.tolist(),))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, list):
            return NotImplemented
        if len(self) != len(other):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def _plain(self, other: Any) -> Any:
        return other.tolist() if isinstance(other, LazyList) else other

    def __lt__(self, other: Any) -> bool:
        return self.tolist() < self._plain(other)

    def __le__(self, other: Any) -> bool:
        return self.tolist() <= self._plain(other)

    def __gt__(self, other: Any) -> bool:
        return self.tolist() > self._plain(other)

    def __ge__(self, other: Any) -> bool:
        return self.tolist() >= self._plain(other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> list[Any]:
        if not isinstance(other, list):
            return NotImplemented
        return self.tolist() + list(other)

    def __radd__(self, other: Any) -> list[Any]:
        if not isinstance(other, list):
            return NotImplemented
        return list(other) + self.tolist()

    def __mul__(self, n: Any) -> list[Any]:
        return self.tolist() * n

    __rmul__ = __mul__

    def __repr__(self) -> str:
        n = len(self)
        if n <= 20:
            return repr(self.tolist())
        return f"<{type(self).__name__}: {n} items, read on demand>"

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{type(self).__name__} is a read-only view (items are made on demand); "
            "copy it first with list(...)"
        )

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only


class MappedList(LazyList):
    """``func`` applied to each item of ``items`` (a list, or another lazy list)."""

    __slots__ = ("_items", "_func")

    def __init__(self, items: Sequence[Any], func: Callable[[Any], Any]) -> None:
        self._items = items
        self._func = func

    @property
    def items(self) -> Sequence[Any]:
        """What ``func`` is applied to."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def _item(self, i: int) -> Any:
        return self._func(self._items[i])

    def __iter__(self) -> Iterator[Any]:
        func = self._func
        for item in self._items:
            yield func(item)


# -- JSON, one piece at a time ---------------------------------------------------------


def _streams(value: Any) -> bool:
    """Whether ``value`` holds a lazy list (in itself, or in a dict's values)."""
    if isinstance(value, LazyList):
        return True
    if isinstance(value, dict):
        return any(_streams(v) for v in value.values())
    return False


def iterencode(
    obj: Any,
    *,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = True,
    default: Callable[[Any], Any] | None = None,
) -> Iterator[str]:
    """``json.dumps(obj, ...)`` in pieces, without materialising lazy lists.

    The pieces joined are exactly ``json.dumps`` of the same document with the
    same options. Dicts that hold a :class:`LazyList` are walked here; a lazy
    list gives one piece per item; everything else is one ``json.dumps`` call.
    """
    unit = (" " * indent if isinstance(indent, int) else indent) if indent is not None else None
    item_sep, key_sep = separators or ((", " if unit is None else ","), ": ")

    def leaf(value: Any, level: int) -> str:
        text = json.dumps(
            value, indent=indent, separators=separators, ensure_ascii=ensure_ascii, default=default
        )
        if unit and level and "\n" in text:
            text = text.replace("\n", "\n" + unit * level)
        return text

    def encode(value: Any, level: int) -> Iterator[str]:
        inner = "" if unit is None else "\n" + unit * (level + 1)
        outer = "" if unit is None else "\n" + unit * level
        if isinstance(value, LazyList):
            first = True
            for item in value:
                yield ("[" if first else item_sep) + inner
                first = False
                yield leaf(item, level + 1)
            yield "[]" if first else outer + "]"
        elif isinstance(value, dict) and value and _streams(value):
            for n, (k, v) in enumerate(value.items()):
                yield ("{" if n == 0 else item_sep) + inner
                yield leaf(_key(k), 0) + key_sep
                yield from encode(v, level + 1)
            yield outer + "}"
        else:
            yield leaf(value, level)

    return encode(obj, 0)


def _key(k: Any) -> str:
    """A dict key as ``json`` writes it."""
    if isinstance(k, str):
        return k
    if k is True or k is False or k is None:
        return json.dumps(k)
    if isinstance(k, (int, float)):
        return json.dumps(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def dump(obj: Any, fh: IO[str], **options: Any) -> None:
    """Write ``json.dumps(obj, **options)`` to ``fh`` piece by piece (see :func:`iterencode`)."""
    write = fh.write
    for piece in iterencode(obj, **options):
        write(piece)


def dumps(obj: Any, **options: Any) -> str:
    """``json.dumps`` for a report holding lazy lists (the whole text at once: prefer
    :func:`dump` for a large report)."""
    return "".join(iterencode(obj, **options))


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[IO[str]]:
    """A text file written whole or not at all: a temporary file beside ``path``,
    renamed over it when the block ends without an error. A symbolic link is
    followed (the file it names is replaced, the link stays), and what is not a
    regular file (``/dev/stdout``, a FIFO, a device) is written into as it is,
    never replaced; so is Rook's own standard output or error (``/dev/stdout``
    redirected to a file), through the stream, after what was printed there."""
    stream = own_stream(path)
    if stream is not None:
        try:
            yield stream
            stream.flush()
        except OSError as exc:
            from .cli.streams import reader_gone  # on the error path only

            if reader_gone(exc, stream):
                return  # its reader left (rook run | head): dropped, as the table's lines are
            raise RunStoreError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    if is_special(path):  # opened by its own name: /dev/stdout on a pipe has no real path
        try:
            with open(path, "w", encoding="utf-8") as fh:
                yield fh
        except OSError as exc:
            raise RunStoreError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    path = Path(os.path.realpath(path))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # a link may name a folder to make
        with open(tmp, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise RunStoreError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


@contextlib.contextmanager
def staged(path: Path, said: str = "") -> Iterator[Path]:
    """The path a reporter writes ``path`` through: a file of ``path``'s name in
    a temporary folder beside it, renamed over ``path`` when the block ends
    without an error and removed when it raises, so a reporter that fails
    midway leaves no half-written report and what was there stays. Files the
    reporter wrote beside it (named from it: ``index_files/``) are moved
    beside ``path`` first, all or none (a place that blocks one moves none).
    Links are followed, as :func:`atomic_file` follows
    them. For Rook's own standard output or error (``/dev/stdout``, or the file
    it is redirected to) a file in a temporary folder is copied into that
    stream, after what was printed there, since opening it anew would truncate
    it, and the folder is removed with what else was written in it; what else
    is not a regular file (a FIFO, a device) is given as it is: a named pipe
    no program reads yet is waited on, saying so (``said`` names the report)."""
    stream = own_stream(path)
    if stream is not None:
        import shutil
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix=".rook-report-"))  # with what it writes beside
        name = folder / path.name
        try:
            yield name
            if os.path.lexists(name):
                with open(name, "rb") as fh, atomic_file(path) as out:
                    out.flush()
                    shutil.copyfileobj(fh, getattr(out, "buffer", None) or out)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    if is_special(path):
        with _held_open(path, said):
            yield path
        return
    import shutil
    import tempfile

    real = Path(os.path.realpath(path))
    real.parent.mkdir(parents=True, exist_ok=True)  # a link may name a folder to make
    # the file has the target's very name, in a folder of its own beside it: what
    # a reporter writes next to it (named from it) is moved beside the target too
    folder = Path(tempfile.mkdtemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent))
    try:
        yield folder / real.name
        _check_move(folder, real.parent)  # all or nothing: a blocked place moves none
        _move_into(folder, real.parent, last=real.name)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _held_open(path: Path, said: str) -> Iterator[None]:
    """While the block runs, ``path``, when it is a named pipe, held open for
    writing: a pipe no program reads yet is waited on, saying so on standard
    error (a silent wait looked like a hang); held, the reader sees no end of
    the pipe between the opening and the report. Anything else: nothing."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK) if _is_fifo(path) else -1
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # not the pipe's reader missing: the reporter says why
            fd = -1
        else:
            sys.stderr.write(
                f"rook: waiting for a program to read the named pipe {path} ({said}); "
                "start one (cat PATH), or stop Rook: the run is recorded\n"
            )
            sys.stderr.flush()
            fd = os.open(path, os.O_WRONLY)  # until a reader comes (a signal ends Rook)
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)


def _is_fifo(path: Path) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def _move_into(folder: Path, into: Path, last: str = "") -> None:
    """Move what ``folder`` holds into ``into``, the file named ``last`` after
    the rest: a folder that exists there gets what it holds, file by file (what
    else it held stays); a file replaces the one of its name."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name == last):
        there = into / entry.name
        if entry.is_dir(follow_symlinks=False) and there.is_dir() and not there.is_symlink():
            _move_into(Path(entry.path), there)
        else:
            os.replace(entry.path, there)


def _check_move(folder: Path, into: Path) -> None:
    """Raise the :class:`OSError` that :func:`_move_into` would meet partway
    (naming the place in ``into`` that blocks it: a file where a folder goes, a
    folder where a file goes) before anything is moved."""
    with os.scandir(folder) as entries:
        for entry in entries:
            there = into / entry.name
            moved_into = there.is_dir() and not there.is_symlink()  # else replaced
            if entry.is_dir(follow_symlinks=False):
                if moved_into:
                    _check_move(Path(entry.path), there)
                elif os.path.lexists(there):
                    why = errno.ENOTDIR
                    raise OSError(why, os.strerror(why), entry.path, None, there)
            elif moved_into:
                raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), entry.path, None, there)


def target_problem(path: Path) -> str | None:
    """Why a report cannot be written to ``path``, or ``None`` when it can.

    Checked before a run starts, so that a report that could never be written
    is a configuration error instead of a failure after every scenario ran:
    ``path`` must not be a directory, and its parent must be a directory that
    exists, or can be created, and in which a file can be made (reports are
    written to a temporary file beside ``path``, then renamed). Nothing is
    left behind: a probe file or directory is removed at once.
    """
    try:
        return _target_problem(path)
    except OSError as exc:  # asking about it failed: a name too long, a folder not searchable
        return f"cannot use {path}: {exc.strerror or exc}"


def _target_problem(path: Path) -> str | None:
    if path.is_dir():
        return f"{path} is a directory"
    if is_special(path):  # written into as it is (see atomic_file)
        return None if os.access(path, os.W_OK) else f"{path} is not writable"
    path = Path(os.path.realpath(path))
    parent, missing = path.parent, None
    while not os.path.lexists(parent) and parent != parent.parent:
        parent, missing = parent.parent, parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    try:
        if missing is not None:  # mkdir -p would create this first: can it?
            with contextlib.suppress(FileExistsError):  # made meanwhile: it exists then
                os.mkdir(missing)
                os.rmdir(missing)
        else:
            import tempfile  # only a run with --report needs it (with shutil and random: 2 ms)

            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".check", dir=parent)
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        where = f"create directory {missing}" if missing is not None else f"write in {parent}"
        return f"cannot {where}: {exc.strerror or exc}"
    return None


def own_stream(path: Path) -> IO[str] | None:
    """Rook's standard output or error when ``path`` is where it goes
    (``/dev/stdout``, or the file it is redirected to), else ``None``: the
    process's own streams, which plugin code (a reporter) finds redirected
    (:func:`rook_core.plugins.plugin_output`) and Rook prints to."""
    try:
        target = os.stat(path)
    except OSError:
        return None
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is None:  # closed before Rook started (rook run >&-)
            continue
        try:
            if os.path.samestat(target, os.fstat(stream.fileno())):
                return stream
        except (OSError, ValueError):  # no file behind it (a test's buffer)
            continue
    return None


def is_special(path: Path) -> bool:
    """An existing file that is not a regular file (a device, a FIFO, a socket),
    through any links: ``/dev/stdout`` on a pipe is one, though its real path
    (``/proc/PID/fd/pipe:[N]``) names no file."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
