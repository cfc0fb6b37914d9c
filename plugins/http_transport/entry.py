"""The normal form of an ``http:`` hook entry: what :mod:`.config` validates a
profile's entry into, and what the phases read (``HookEntry.config``).

Kept apart from the marshmallow schema so that using an entry validated
earlier (Rook's cache of validated definitions keeps these objects) imports
neither marshmallow nor the schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rook_core.plain import plain

DEFAULT_RETRIES = 2
DEFAULT_BACKOFF = 0.5


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")


def header_problem(name: str, value: str | None = None) -> str | None:
    """Why a request cannot carry the header ``name: value``, or ``None``.

    The value itself is never quoted (it may be a credential)."""
    if not HEADER_NAME.match(name):
        return "not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)"
    if value is None:
        return None
    if any(c in value for c in "\r\n\0"):
        return (
            "its value holds a line break or NUL, which a header cannot carry; send it in the body"
        )
    bad = next((c for c in value if ord(c) > 127), None)
    if bad is not None:
        return (
            f"its value holds {bad!r}, which a header cannot carry (ASCII only); "
            "send it in the body"
        )
    return None


@dataclass(frozen=True)
class Path:
    """A compiled JMESPath expression and its text (for messages)."""

    text: str
    compiled: Any

    def search(self, document: Any, options: Any = None) -> Any:
        return self.compiled.search(document, options=options)

    @property
    def reads_headers(self) -> bool:
        """Whether the expression calls ``header(NAME)`` (a response header)."""
        nodes = [self.compiled.parsed]
        while nodes:
            node = nodes.pop()
            if node.get("type") == "function_expression" and node.get("value") == "header":
                return True
            nodes.extend(node.get("children") or ())
        return False


@plain
class HttpConfig:
    """The normal form of one ``http:`` entry (``HookEntry.config``)."""

    url: str
    method: str
    headers: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False
    form: dict[str, Any] | None = None
    auth: dict[str, Any] | None = None
    """``{"digest": {"username": ..., "password": ...}}``: HTTP Digest credentials."""
    timeout_seconds: float | None = None
    verify_tls: bool | str = True
    retries: int = DEFAULT_RETRIES
    backoff_seconds: float = DEFAULT_BACKOFF
    stream: str | None = None
    extract: dict[str, Any] | None = None
    save: dict[str, Path] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    """Saved-value placeholders the request uses (``{{token}}``), in order."""
