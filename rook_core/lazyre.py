"""Regular expressions compiled the first time they are used.

A ``re.compile`` at a module's top runs at its import: ≈ 0.02–0.25 ms a
pattern, and a ``rook run`` imports modules that hold dozens most runs never
use (the forms of secrets in a run that has none, a hook's error paths, the
Markdown reporter's escapes in a run that writes JSON). :func:`later` is
``re.compile`` for a module's top: what it gives compiles its pattern the
first time one of its attributes is read and keeps what was read (a bound
method of the compiled pattern) as its own attribute, so each later use costs
what a compiled pattern's does. Patterns Rook builds from values at run time
are compiled where they are built.
"""

from __future__ import annotations

import re
from typing import Any, cast

__all__ = ["later"]


class _Later:
    """A pattern and its flags, compiled when an attribute is first asked for."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.__dict__["_source"] = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # only for what is not yet kept
        if name.startswith("__") or "_source" not in self.__dict__:
            raise AttributeError(name)  # copy/pickle probing a bare instance
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(*self.__dict__["_source"])
        value = getattr(compiled, name)
        self.__dict__[name] = value  # the next read finds it here, no call
        return value

    def __repr__(self) -> str:
        pattern, flags = self.__dict__["_source"]
        return f"later({pattern!r}, {flags})" if flags else f"later({pattern!r})"


def later(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, done the first time it is used.

    Use it for a module's constant patterns, read through their methods and
    attributes (``search``, ``sub``, ``pattern``); not where a real
    :class:`re.Pattern` is required (``isinstance``, another pattern's
    ``re.sub(P, ...)``)."""
    return cast("re.Pattern[str]", _Later(pattern, int(flags)))
