"""Undoing ``gzip`` and ``deflate`` a step at a time, so a body that expands
(a few KB gzipped twice that decode to gigabytes) stops at its cap with memory
bounded. httpx undoes a whole network read at once: 64 KiB can hold 64 MiB of
one layer, and 64 GiB of two."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

STEP = 64 * 1024
"""The most one layer gives at once."""

ENCODINGS = ("gzip", "deflate")


def layers(names: list[str]) -> list[str] | None:
    """The ``Content-Encoding`` values (as httpx's ``get_list`` splits them) when
    every one is ``gzip``, ``deflate`` or ``identity`` and one is not ``identity``;
    otherwise ``None`` (nothing to undo, or an encoding left to httpx)."""
    names = [n.strip().lower() for n in names]
    names = [n for n in names if n and n != "identity"]
    if not names or any(n not in ENCODINGS for n in names):
        return None
    return names


class Inflater:
    """Undoes the ``gzip`` and ``deflate`` layers of a body (``Content-Encoding:
    gzip, gzip``: the last one named first), at most :data:`STEP` bytes at a
    time. Corrupt data raises ``zlib.error``."""

    def __init__(self, names: list[str]) -> None:
        self.layers = [[name, _inflater(name), True] for name in reversed(names)]

    def feed(self, data: bytes, level: int = 0) -> Iterator[bytes]:
        if level == len(self.layers):
            if data:
                yield data
            return
        layer = self.layers[level]
        while True:
            out = self._step(layer, data)
            data = layer[1].unconsumed_tail
            yield from self.feed(out, level + 1)
            if not data and len(out) < STEP:
                return

    @staticmethod
    def _step(layer: list[Any], data: bytes) -> bytes:
        name, inflater, first = layer
        layer[2] = False
        try:
            return bytes(inflater.decompress(data, STEP))
        except zlib.error:
            if name == "deflate" and first:  # deflate without its zlib header, as httpx reads it
                layer[1] = zlib.decompressobj(-zlib.MAX_WBITS)
                return Inflater._step(layer, data)
            raise


def _inflater(name: str) -> Any:
    return zlib.decompressobj(zlib.MAX_WBITS | 16 if name == "gzip" else zlib.MAX_WBITS)
