"""Reading a definition file's text (a profile, a scenario, config.yaml) in the
encodings YAML allows, without importing PyYAML: a run whose definitions are
cached reads some of them as text alone."""

from __future__ import annotations

import codecs
from pathlib import Path

_MARKS = (  # UTF-32's little-endian mark begins with UTF-16's: it comes first
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

YAML_MAX = 16 * 1024 * 1024
"""The most bytes a profile, scenario or config.yaml file may hold: some 50,000
scenarios; a file of 50 MB (a log or a dump saved under a .yaml name) took Rook
half a minute to parse, twice, before it could say what was wrong."""


def yaml_text(path: Path) -> str:
    """The text of the YAML file ``path``: UTF-8, or UTF-16 or UTF-32 after a byte
    order mark, as YAML allows (Windows PowerShell 5's ``>`` and ``Out-File``
    write UTF-16 so). A file in no such encoding raises a :class:`ValueError`
    saying where (``not UTF-8 text (byte 0xe9 at line 2, column 10); save it as
    UTF-8``); an unreadable one, the ``OSError``."""
    return _decoded(path.read_bytes())


def _decoded(data: bytes) -> str:
    """:func:`yaml_text`'s reading of ``data``."""
    for mark, codec in _MARKS:
        if data.startswith(mark):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"not {codec.upper()} text (byte {exc.start}: {exc.reason})"
                ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[line_start : exc.start].decode("utf-8", "replace")) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, column {column}); "
            "save it as UTF-8"
        ) from None


def readable_text(path: Path) -> str:
    """The text of ``path`` (its first :data:`YAML_MAX` bytes) as :func:`yaml_text`
    reads it, or, for a file in no encoding it reads, as UTF-8 with each byte it
    cannot decode replaced: for a look for a key or a name in a file that may not
    parse. ``OSError`` passes."""
    with path.open("rb") as f:  # no further than a definition file reaches
        data = f.read(YAML_MAX)
    try:
        return _decoded(data)
    except ValueError:
        return data.decode("utf-8", errors="replace")
