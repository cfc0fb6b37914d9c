"""Secrets never reach disk or screen: replace every env value with ``[redacted:NAME]``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any


class Redactor:
    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        pairs = [(v, n) for n, v in (secrets or {}).items() if v]
        self._pairs = sorted(pairs, key=lambda p: len(p[0]), reverse=True)

    @classmethod
    def for_variables(
        cls, names: Iterable[str], environ: Mapping[str, str] | None = None
    ) -> Redactor:
        env = os.environ if environ is None else environ
        return cls({n: env[n] for n in names if env.get(n)})

    def add(self, name: str, value: str) -> None:
        if value:
            self._pairs.append((value, name))
            self._pairs.sort(key=lambda p: len(p[0]), reverse=True)

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def text(self, s: str) -> str:
        for value, name in self._pairs:
            if value in s:
                s = s.replace(value, f"[redacted:{name}]")
        return s

    def data(self, obj: Any) -> Any:
        """A deep copy of ``obj`` with every string (keys too) redacted."""
        if not self._pairs:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.data(k): self.data(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.data(v) for v in obj]
        return obj


_active: list[Redactor] = []


def activate(redactor: Redactor) -> None:
    """Make ``redactor`` apply to every message the CLI prints (its error boundary)."""
    _active[:] = [redactor]


def scrub(text: str) -> str:
    """Redact ``text`` with every activated redactor (for error messages)."""
    for r in _active:
        text = r.text(text)
    return text
