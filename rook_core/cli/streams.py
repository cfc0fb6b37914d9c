"""Standard output and error once their reader has left.

``rook doctor | head -1``, ``rook run 2>&1 | head -3``, a step under
``pipefail``: the reader of a pipe leaves before Rook has written everything.
The console script (:func:`rook_core.cli.main`) puts each standard stream
behind :class:`UntilTheReaderLeaves`, the one place that handles it: once a
write finds the reader gone, the rest of what would go there is dropped,
quietly, and the command carries on, so it ends as it would have with a reader
that read everything: a run still runs, records and reports every scenario,
and every command exits with its own code. Quietly, as ``git`` and ``ripgrep``
end; with the command's own code, as ``ripgrep`` does (0), not a status of
the closed pipe's own (``git``, killed by SIGPIPE, gives 141; Click alone
exits 1), so a step under ``pipefail`` fails only when the command did. A stream
that cannot be written for another reason (a full disk; EIO on a regular file,
a failing disk or NFS, where no reader can have left) still raises: the
command's error boundary names standard output (``rook: error: cannot write
standard output: ...``). Standard error is where that would be said: one
that cannot be written for any reason (``rook run 2>>ci.log`` on a full disk)
is treated as one whose reader left, since nothing can be said anywhere.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

_MADE_BLOCKING: list[int] = []


def blocking(stream: Any) -> None:
    """Make ``stream``'s file blocking while the command runs, if its parent left
    it non-blocking (``O_NONBLOCK`` on a pipe or a terminal it shares, as Node
    does): Python's writes to such a file stop short when the reader is slower
    (a ``--json`` document cut at 65,536 bytes, exit 0, nothing said). Once per
    command; :func:`as_found` leaves it as it was found."""
    try:
        fd = stream.fileno()
        if not os.get_blocking(fd):
            os.set_blocking(fd, True)
            _MADE_BLOCKING.append(fd)
    except (OSError, ValueError, AttributeError):  # no file behind it, or closed
        pass


def as_found() -> None:
    """Leave each standard stream :func:`blocking` changed non-blocking again."""
    while _MADE_BLOCKING:
        try:
            os.set_blocking(_MADE_BLOCKING.pop(), False)
        except OSError:  # closed meanwhile: nothing to leave
            pass


def reader_gone(exc: BaseException, stream: Any = None) -> bool:
    """Whether a write to ``stream`` failed because no one reads any more: a
    closed pipe (``rook runs | head -1``), or a terminal that hung up (EIO after
    SIGHUP). EIO counts only where it can mean that, on a terminal, a pipe or
    a socket (:func:`_can_hang_up`); on a regular file (a failing disk, an NFS
    server gone) it is a failure to write, said as one."""
    if isinstance(exc, BrokenPipeError):
        return True
    if not isinstance(exc, OSError):
        return False
    return exc.errno == errno.EPIPE or (exc.errno == errno.EIO and _can_hang_up(stream))


def _can_hang_up(stream: Any) -> bool:
    """Whether ``stream``'s file is a terminal (a character device: a hung-up
    terminal answers ``isatty`` with EIO, ``fstat`` still works), a pipe or a
    socket. Asked on the error path only, once a write has failed."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # no file behind it: cannot be a terminal
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def escaping(stream: Any) -> None:
    """Make ``stream`` show a character its encoding lacks as its escape
    (``\\u2014``), rather than raise UnicodeEncodeError partway through a table
    (``PYTHONIOENCODING=latin-1``, a Latin-1 locale): JSON's escape, so that a
    ``--json`` document holding one still parses to the same value (Python's
    ``backslashreplace`` writes ``\\U0001f680``, which no JSON parser reads). A
    UTF encoding holds every character and is left as it is."""
    import codecs

    try:
        if stream.errors == "strict" and not stream.encoding.lower().startswith("utf"):
            try:
                codecs.lookup_error(_ESCAPE)
            except LookupError:
                codecs.register_error(_ESCAPE, _json_escape)
            stream.reconfigure(errors=_ESCAPE)
    except (AttributeError, ValueError, OSError):  # no text stream, or closed
        pass


_ESCAPE = "rook.json-escape"


def _json_escape(exc: UnicodeError) -> tuple[str, int]:
    """The characters an encoding lacks as JSON writes them: ``\\u2014``, and a
    character beyond U+FFFF as its two surrogates (``\\ud83d\\ude80``)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    said = []
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            said.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            said.append(f"\\u{code:04x}")
    return "".join(said), exc.end


TERMINAL_COLUMNS = 80
"""The width of a terminal that says none (0 columns, or no answer to the
question): a serial console, a container's terminal not yet sized."""


def terminal_width(stream: Any) -> int | None:
    """The width of the terminal ``stream`` writes to, in columns (``COLUMNS``
    when it holds a positive number, as every terminal program reads it;
    :data:`TERMINAL_COLUMNS` when the terminal reports none), or ``None`` when
    ``stream`` is no terminal: a pipe or a file gets the fixed widths, the same
    on every machine and in every CI log."""
    try:
        if not stream.isatty():
            return None
        columns = os.environ.get("COLUMNS", "").strip()
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # closed, or no file behind it
        return None
    try:
        return os.get_terminal_size(fd).columns or TERMINAL_COLUMNS
    except OSError:  # a terminal that does not say its size is one all the same
        return TERMINAL_COLUMNS


class UntilTheReaderLeaves:
    """A standard stream (text, or its binary ``buffer``) that drops what is
    written once its reader has left, never raising for it; with ``last_word``
    (standard error, where an error would be said), once it cannot be written
    for any reason. Everything else (``fileno``, ``isatty``, ``encoding``...)
    is the stream's own."""

    def __init__(
        self, stream: Any, gone: list[bool] | None = None, *, last_word: bool = False
    ) -> None:
        self.stream = stream
        self._gone = gone if gone is not None else [False]  # shared with the buffer's
        self._buffer: UntilTheReaderLeaves | None = None
        self._last_word = last_word

    @property
    def gone(self) -> bool:
        """Whether the reader has left (everything written since was dropped)."""
        return self._gone[0]

    def write(self, data: Any) -> int:
        if not self._gone[0]:
            try:
                return int(self.stream.write(data))
            except OSError as exc:
                if not (self._last_word or reader_gone(exc, self.stream)):
                    raise
                self._gone[0] = True
        return len(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self._gone[0]:
            try:
                self.stream.flush()
            except OSError as exc:
                if not (self._last_word or reader_gone(exc, self.stream)):
                    raise
                self._gone[0] = True

    @property
    def buffer(self) -> Any:
        """The binary stream beneath (``--json`` writes its document there),
        dropping what is written once the reader has left, as this one does."""
        if self._buffer is None:
            self._buffer = UntilTheReaderLeaves(
                self.stream.buffer, self._gone, last_word=self._last_word
            )
        return self._buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
