"""``{{placeholder}}`` substitution inside structured request values.

Substitution happens on the *parsed* structure (strings inside mappings and
lists), never on serialised JSON text, so a goal holding quotes, braces,
backslashes or newlines can never break a request: the JSON encoder sees it
as one string value.

* A string that is exactly one placeholder (``"{{turn}}"``) becomes the
  value itself, keeping its type (an int, a saved object, ``null``).
* A placeholder inside a longer string is replaced by the value as text.
* Substitution is a single pass: text arriving in a value (a goal that
  contains ``{{conversation}}``) is never substituted again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import field
from typing import Any

from rook_core.plain import plain

PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
BUILTINS = ("goal", "conversation", "turn", "session", "scenario", "run")
"""Names Rook fills in; every other plain name is a value saved by an earlier phase."""
SAVED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENV_NAME = re.compile(r"^env\.([A-Za-z_][A-Za-z0-9_]*)$")


def unavailable_in(phase: str) -> dict[str, str]:
    """The built-in names (:data:`BUILTINS`) that ``phase`` cannot fill, each with why."""
    if phase == "prepare":
        why = "is not available in prepare (it runs once, before any scenario)"
        return {name: why for name in ("scenario", "session", "conversation", "goal", "turn")}
    if phase != "execute":
        return {"turn": f"is only available in execute, not in {phase}"}
    return {}


class TemplateError(Exception):
    """A placeholder cannot be filled; the message names it and where it is."""


def check_name(name: str) -> str | None:
    """Why ``name`` is not a valid placeholder, or ``None`` when it is."""
    if ENV_NAME.match(name) or SAVED_NAME.match(name):
        if name == "env":
            return "{{env}} needs a variable name: {{env.NAME}}"
        return None
    return (
        f"{{{{{name}}}}} is not a placeholder Rook knows; use one of "
        + ", ".join(f"{{{{{b}}}}}" for b in BUILTINS)
        + ", {{env.NAME}} or {{NAME}} for a value saved by an earlier phase"
    )


def walk_strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` with its dotted field path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from walk_strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk_strings(v, f"{path}.{i}" if path else str(i))


def placeholders(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every ``(field path, placeholder name)`` inside ``value``."""
    for where, text in walk_strings(value, path):
        for m in PLACEHOLDER.finditer(text):
            yield where, m.group(1)


AGENTS_TEXT = ("conversation", "goal", "env.ROOK_CONVERSATION")
"""Values the agent (or a scenario) wrote: inserted before a url's path, as a handle
named by a Location header is ('{{env.BASE_URL}}{{conversation}}/messages'), each
must begin the path, never name another host ('@other.example/...'). The handle
written as the variable Rook passes it in is the same value."""


_NOT_IN_A_HOST = re.compile(r"[/\\?#@%\s\x00-\x1f\x7f]")
"""A character no host name or port holds: one would end the host, or make what is
before it a user name ('@'), so the request went elsewhere."""


def _after_host(base: str) -> str | None:
    """Where the url's base (the value of its first placeholder) ends: ``"path"``
    when it holds a path already (``http://h/api/``), ``"query"`` when it holds a
    query, ``None`` when it ends at the host (or its port)."""
    rest = base.split("://", 1)[1] if "://" in base else base
    if "?" in rest:
        return "query"
    return "path" if "/" in rest else None


def _utf8(text: str) -> bool:
    """Whether ``text`` is UTF-8 text: an environment value holding bytes that are
    not is kept by Python as lone surrogates, which no encoder writes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _no_dot_segments(path: str) -> str:
    """``path`` (a value's part of a url's path) with each ``.`` or ``..`` segment
    encoded (``%2E%2E``): such a segment would be removed with the one before it
    (RFC 3986 5.2.4), so '../../admin' would move the request out of its place."""
    if "." not in path:
        return path
    return "/".join("%2E" * len(s) if s in (".", "..") else s for s in path.split("/"))


def as_text(value: Any) -> str:
    """A value sent as text (a header, a query or form field): a number as the profile
    writes it (``1.10``, ``0755``: YAML reads them as 1.1 and 493; ``written`` of
    :mod:`rook_core.yamlio`), ``true``, and an object or a list as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return getattr(value, "written", None) or str(value)


@plain
class Scope:
    """What placeholders resolve to for one hook call.

    :param values: built-in values available in this phase, and saved values.
    :param unavailable: built-in names not available in this phase, with why.
    :param env: the hook's environment (``{{env.NAME}}``).
    :param used: filled while rendering: ``(field path, placeholder, value)``.
    :param no_handle: why ``{{conversation}}`` has no value yet (open's
        ``extract.conversation`` found nothing), for a failure that needs it.
    """

    values: dict[str, Any]
    unavailable: dict[str, str]
    env: Mapping[str, str]
    saved_names: list[str] = field(default_factory=list)
    used: list[tuple[str, str, Any]] = field(default_factory=list)
    no_handle: str | None = None

    def _why(self, name: str) -> str:
        return f"; {self.no_handle}" if self.no_handle and name == "conversation" else ""

    def lookup(self, name: str, where: str) -> Any:
        m = ENV_NAME.match(name)
        if m:
            var = m.group(1)
            if var == "ROOK_CONVERSATION" and var not in self.env:
                raise TemplateError(
                    f"{where}: {{{{env.{var}}}}} has no value: no conversation handle has been "
                    "returned yet (open or an earlier turn returns one); use {{conversation}}, "
                    "which is null until there is one" + self._why("conversation")
                )
            if var not in self.env:
                raise TemplateError(
                    f"{where}: {{{{env.{var}}}}} needs the environment variable {var}, "
                    "which is not set (list it under the profile's env: so Rook checks it "
                    "before the run)"
                )
            value: Any = self.env[var]
            if not value.isascii() and not _utf8(value):  # bytes Python could not decode
                raise TemplateError(
                    f"{where}: {{{{env.{var}}}}}: the value of {var} is not UTF-8 text (it "
                    "holds bytes no request can carry as text); set it as UTF-8"
                )
        elif name in self.values:
            value = self.values[name]
        elif name in self.unavailable:
            raise TemplateError(f"{where}: {{{{{name}}}}} {self.unavailable[name]}")
        else:
            saved = ", ".join(sorted(self.saved_names)) or "none"
            raise TemplateError(
                f"{where}: {{{{{name}}}}} is not a value saved by an earlier phase "
                f"(saved so far: {saved}); save it with save: {{{name}: PATH}} in prepare or open"
            )
        self.used.append((where, name, value))
        return value

    def _in_text(self, m: re.Match[str], where: str) -> str:
        """The value of placeholder ``m`` inside a longer string, as text."""
        got = self.lookup(m.group(1), where)
        if got is None:
            raise TemplateError(
                f"{where}: {{{{{m.group(1)}}}}} has no value yet, and it is part of a "
                "longer string (on its own it would be sent as null)" + self._why(m.group(1))
            )
        return as_text(got)

    def _host_part(self, m: re.Match[str], text: str, where: str, begins_path: bool) -> str:
        """The value of placeholder ``m`` (a saved value, a Rook value: not an
        ``{{env.NAME}}``, which the user sets) standing before the url's path, after
        its start: it fills the host (a name, a port) or, right before the path,
        begins it with '/'; any other '/', or an '@', '?', '#', '\\', '%' or blank,
        would change the host the request (and its headers) go to."""
        if begins_path and text[:1] == "/":
            return _no_dot_segments(text)  # it begins the path: a path as it is
        bad = _NOT_IN_A_HOST.search(text)
        if bad is None:
            return text
        name = "{{" + m.group(1).strip() + "}}"
        raise TemplateError(
            f"{where}: {name} stands before the url's path, and its value holds {bad.group()!r}: "
            "it would change the host the request (and its headers) go to; a value there "
            "must be a host name or port, or, standing right before the path, begin it with '/'"
        )

    def render_url(self, template: str, where: str = "url") -> Any:
        """The ``url`` with its placeholders filled as a URL needs them: one in
        the scheme and host part (``{{env.BASE_URL}}/v1``, ``https://{{env.HOST}}``)
        as is; one in the path percent-encoded but for ``/`` (and a ``.`` or ``..``
        segment encoded too, so it never climbs up the path); one in the query
        (after a ``?`` written in the template) percent-encoded whole, so a
        value holding ``&``, ``+``, ``#`` or a space is sent as written."""
        from urllib.parse import quote

        if PLACEHOLDER.fullmatch(template):
            return self.render(template, where)
        start = 0
        first = None
        if template.startswith(("http://", "https://")):
            start = template.index("//") + 2
        else:  # a placeholder first: it is the base, scheme and host included
            first = PLACEHOLDER.match(template)
            start = first.end() if first else 0
        slash = template.find("/", start)
        path_at = len(template) if slash < 0 else slash
        query_at = template.find("?", start)
        if 0 <= query_at < path_at:
            path_at = query_at

        def repl(m: re.Match[str]) -> str:
            text = self._in_text(m, where)
            if m.start() < path_at:
                if m.start() > 0 and m.group(1).strip() in AGENTS_TEXT:
                    if text[:1] != "/":
                        name = "{{" + m.group(1).strip() + "}}"
                        whole = (  # an absolute Location header, say: it goes first
                            f'; a handle that is a whole URL goes at the start of url: "{name}'
                            f'{template[m.end() :]}"'
                            if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text)
                            else ""
                        )
                        raise TemplateError(
                            f"{where}: {name} stands before the url's path, and its value does "
                            "not begin with '/': it would change the host the request (and its "
                            "headers) go to" + whole
                        )
                    return _no_dot_segments(text)  # it begins the path: a path as it is
                if m.start() > 0 and not ENV_NAME.match(m.group(1).strip()):
                    inside = _after_host(self._in_text(first, where)) if first else None
                    if inside == "query":  # the base holds a query already: part of it
                        return quote(text, safe="")
                    if inside == "path":  # '{{env.BASE_URL}}{{id}}/x', BASE_URL '.../users/'
                        return _no_dot_segments(quote(text, safe="/"))
                    return self._host_part(m, text, where, begins_path=m.end() == path_at)
                return text
            if 0 <= query_at < m.start():
                return quote(text, safe="")
            return _no_dot_segments(quote(text, safe="/"))

        return PLACEHOLDER.sub(repl, template)

    def render(self, value: Any, where: str) -> Any:
        """A copy of ``value`` with every placeholder filled."""
        if isinstance(value, str):
            whole = PLACEHOLDER.fullmatch(value)
            if whole:
                return self.lookup(whole.group(1), where)

            return PLACEHOLDER.sub(lambda m: self._in_text(m, where), value)
        if isinstance(value, Mapping):
            return {k: self.render(v, f"{where}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [self.render(v, f"{where}.{i}") for i, v in enumerate(value)]
        return value
