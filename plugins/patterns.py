"""The regular expressions of the built-in criteria (``matches``, ``not_matches``,
``claim.says``, ``file: {matches: ...}``).

They are compiled with the `regex <https://pypi.org/project/regex/>`_ package
(``re``'s syntax, and more) and searched with a time limit: a pattern that
backtracks catastrophically on an agent's answer (``(a|aa)+$`` on a long run of
``a``) makes its criterion an ``error`` after :data:`SEARCH_SECONDS`, instead
of holding the event loop, every hook's timeout and the rest of the run.
"""

from __future__ import annotations

from typing import Any

SEARCH_SECONDS = 2.0
"""The longest one search may take."""

IGNORECASE = 2  # regex.IGNORECASE (and re.IGNORECASE): no import for the flag
FULLCASE = 16384  # regex.FULLCASE: with IGNORECASE, Unicode's full case folding (ß is SS)


def compile_pattern(pattern: str, flags: int = 0) -> Any:
    """``pattern`` compiled; a :class:`ValueError` saying why it is not one.

    A pattern that ignores case throughout (``(?i)``, or :data:`IGNORECASE` in
    ``flags``) gets :data:`FULLCASE`: Unicode's full case folding, as
    ``contains`` compares (``(?i)straße`` matches ``STRASSE``). A part alone
    (``(?i:...)``) keeps the simple folding: regex's full folding there,
    without a global ``(?i)``, breaks a part that begins with a letter folding
    to two (``(?i:ß)`` no longer matched ``ß``)."""
    import regex

    try:
        compiled = regex.compile(pattern, flags)
        if compiled.flags & IGNORECASE:  # regex's cache: the second compile costs little
            compiled = regex.compile(pattern, flags | FULLCASE)
        return compiled
    except regex.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None


class TooSlow(Exception):
    """A search ran past :data:`SEARCH_SECONDS`."""

    def __init__(self, pattern: Any, text: str) -> None:
        super().__init__(
            f"/{pattern.pattern}/ took over {SEARCH_SECONDS:g} s on {len(text):,} characters "
            "and was stopped (a pattern that backtracks catastrophically?): not judged"
        )


def search(pattern: Any, text: str) -> Any:
    """``pattern.search(text)`` within :data:`SEARCH_SECONDS`; :class:`TooSlow` past it."""
    try:
        return pattern.search(text, timeout=SEARCH_SECONDS)
    except TimeoutError:
        raise TooSlow(pattern, text) from None
