"""Turning a response into the hook contract's JSON object, with JMESPath.

Without ``extract:``, a JSON object response *is* the hook's answer (the
same contract a hook script prints: ``output``, ``conversation``, ``usage``,
``calls``, and every other field kept as evidence); a text response is the
``output``. With ``extract:``, each named field is found by its path, and a
path that finds nothing is a failure that shows the response. A path reads a
response header with ``header('Location')`` (case does not matter).
"""

from __future__ import annotations

import json
from typing import Any

import jmespath
from jmespath import functions
from jmespath.exceptions import JMESPathError, JMESPathTypeError

from rook_core import hookio

from .client import Reply
from .diagnose import preview
from .entry import HttpConfig, Path
from .sse import assemble
from .template import as_text

DEFAULT_OUTPUT = Path("output", jmespath.compile("output"))
PROJECTION_HINT = "e.g. data.tool_calls[].{name: function, arguments: args}"


class ExtractError(Exception):
    """A field could not be found or has the wrong type; the message says which."""


class ResponseFunctions(functions.Functions):
    """JMESPath's functions, and ``header(NAME)``: the response's header NAME
    (any case; ``null`` when it has none), e.g. ``header('Location')``."""

    def __init__(self, headers: Any) -> None:
        super().__init__()
        self.headers = headers if headers is not None else {}

    @functions.signature({"types": ["string"]})
    def _func_header(self, name: str) -> Any:
        return self.headers.get(name)


JSON_LINES = (
    "application/x-ndjson",
    "application/ndjson",
    "application/jsonl",
    "application/x-jsonlines",
    "application/jsonlines",
    "application/json-lines",
)
"""Content types of a stream of JSON values, one a line (Ollama's default answer)."""


def document(reply: Reply) -> Any:
    """The response as JSON when it is JSON, else its text (``None`` when empty); a
    stream of JSON lines (``application/x-ndjson``) is assembled like an event stream,
    each line an event. Raises :class:`StreamError` as :func:`assemble` does."""
    if reply.events is not None:
        return assemble(reply.events)
    text = _text(reply)
    if not text.strip():
        return None
    if reply.content_type in JSON_LINES:
        # a line ends at \n (\r\n): never at a U+2028 a string holds (str.splitlines's)
        return assemble([("", line) for line in text.split("\n") if line.strip()], lines=True)
    if "json" in reply.content_type or text.lstrip()[:1] in ("{", "["):
        try:
            return hookio.loads(text)
        except (ValueError, RecursionError):
            return text
    return text


def _text(reply: Reply) -> str:
    """The body's text without the byte order mark some servers write first (.NET),
    as a script's stdout is read."""
    text = reply.text()
    return text[1:] if text.startswith("\ufeff") else text


def json_problem(reply: Reply, doc: Any) -> str | None:
    """Why a body labelled JSON that :func:`document` kept as text is no answer:
    it does not parse (``NaN``, single quotes, cut short ...). Judged as text, its
    raw braces would be the answer, where a script's stdout that is not JSON fails.
    So with a stream of JSON lines holding a line that is not JSON (cut short when
    it is the last one, with no line end): the lines before it are no whole answer."""
    if reply.events is None and reply.content_type in JSON_LINES and isinstance(doc, dict):
        return _json_lines_problem(reply, doc.get("events") or [])
    if reply.events is not None or "json" not in reply.content_type or not isinstance(doc, str):
        return None
    try:
        hookio.loads(_text(reply))
    except (ValueError, RecursionError) as exc:
        return f"the response is labelled {reply.content_type} but is not JSON ({exc})"
    return None


def _json_lines_problem(reply: Reply, events: list[Any]) -> str | None:
    """The first line of a JSON-lines body that is not JSON, said, or ``None``. Such a
    line is a text event of :func:`document`'s: only those are parsed again."""
    if not any(isinstance(event, str) for event in events):
        return None
    text = _text(reply)
    lines = [line for line in text.split("\n") if line.strip()]
    for n, (line, event) in enumerate(zip(lines, events, strict=False), 1):
        if not isinstance(event, str):
            continue
        try:
            hookio.loads(line)
        except (ValueError, RecursionError) as exc:
            said = (
                f"line {n} of the response ({reply.content_type}: one JSON value a line) "
                f"is not JSON ({exc})"
            )
            if n == len(lines) and not text.rstrip(" \t").endswith("\n"):
                said += "; the response ended in the middle of it: the answer was cut short"
            return said
    return None


def _search(
    doc: Any, field: str, path: Path, headers: Any = None, values_hidden: bool = False
) -> Any:
    """What ``path`` finds in ``doc`` (``None``: nothing), with ``header(NAME)``
    reading ``headers``; a function given a value of the wrong type (``abs`` of
    text) is an :class:`ExtractError` naming the field (and, ``values_hidden``,
    the value's type rather than the value: a prepare response's are credentials)."""
    reads_headers = path.reads_headers
    if doc is None and not reads_headers:
        return None
    try:
        if reads_headers:
            return path.search(doc, jmespath.Options(custom_functions=ResponseFunctions(headers)))
        return path.search(doc)
    except JMESPathError as exc:
        reason = str(exc)
        if values_hidden and isinstance(exc, JMESPathTypeError):
            reason = (
                f"In function {exc.function_name}(), invalid type for a value: expected "
                f"one of: {exc.expected_types}, received: {exc.actual_type!r}"
            )
        raise ExtractError(
            f"{field}: the JMESPath {path.text!r} cannot be applied to the response: {reason}"
        ) from None


def _find(
    doc: Any, field: str, path: Path, headers: Any = None, values_hidden: bool = False
) -> Any:
    value = _search(doc, field, path, headers, values_hidden)
    if value is None:
        held = f" (its headers: {', '.join(sorted(headers or {})) or 'none'})"
        raise ExtractError(
            f"{field}: the JMESPath {path.text!r} found nothing in the response"
            + (held if path.reads_headers else "")
        )
    return value


def _number(value: Any, field: str, path: Path) -> Any:
    if isinstance(value, str):  # a count written as text: say so, and how to read it
        raise ExtractError(
            f"{field}: the JMESPath {path.text!r} found the text {preview(json.dumps(value, ensure_ascii=False), 100)}"
            f", not a number (to read a number written as text: to_number({path.text}))"
        )
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExtractError(
            f"{field}: the JMESPath {path.text!r} found {preview(value, 100)}, not a number"
        )
    if value < 0:  # the hook contract refuses it too, but without the field's path
        raise ExtractError(
            f"{field}: the JMESPath {path.text!r} found {value}, not a token count (0 or more)"
        )
    if isinstance(value, float) and not value.is_integer():  # as for a hook, with the path
        raise ExtractError(
            f"{field}: the JMESPath {path.text!r} found {value}, not a whole token count"
        )
    return value


def _calls(value: Any, path: Path) -> list[Any]:
    ok = isinstance(value, list) and all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in value
    )
    if not ok:
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else value
        raise ExtractError(
            f"extract.calls: the JMESPath {path.text!r} found {preview(shown, 200)}; expected a "
            f"list of {{name, arguments}} objects (map another shape with a projection, "
            f"{PROJECTION_HINT})"
        )
    return list(value)


def _default(doc: Any, phase: str) -> dict[str, Any]:
    if isinstance(doc, dict):
        if phase == "execute" and doc.get("output") is None and doc.get("agent_reply") is None:
            raise ExtractError(
                "the response has no output field; say where the answer is with "
                "extract: {output: PATH} (a JMESPath such as choices[0].message.content)"
            )
        return dict(doc)
    if phase == "execute":
        if isinstance(doc, str) and doc.strip():
            return {"output": doc}
        raise ExtractError(
            "the response holds no answer; expected text or a JSON object (use extract: "
            "{output: PATH} to say where the answer is)"
        )
    if doc is None:
        return {}
    return {"response": doc}


def extract(
    doc: Any, config: HttpConfig, phase: str, handle: Any = None, headers: Any = None
) -> dict[str, Any]:
    """The hook's JSON object for ``phase`` from the response ``doc`` (and its
    ``headers``, which a path reads with ``header(NAME)``).

    ``handle`` is the conversation handle the request was sent with: a later
    turn whose response does not repeat it (an API that names the thread only
    when it creates it) keeps it. In open and execute ``extract.conversation``
    may find nothing (or ``null``): the handle is optional, as for a script, so
    the hook returns none and only a later turn needs one (the engine stops the
    scenario then, saying why: :func:`no_handle`). Elsewhere a path that finds
    nothing is a failure."""
    ex = config.extract
    if ex is None:
        return _default(doc, phase)
    data: dict[str, Any] = {}
    if "output" in ex:
        data["output"] = _find(doc, "extract.output", ex["output"], headers)
    elif phase == "execute":
        if isinstance(doc, str) and doc.strip():
            data["output"] = doc
        else:
            data["output"] = _find(doc, "extract.output (default)", DEFAULT_OUTPUT)
    if "conversation" in ex:
        path = ex["conversation"]
        found = _search(doc, "extract.conversation", path, headers)
        if phase in ("open", "execute") and is_no_handle(found):
            pass  # no handle, as from a script: the engine stops a later turn, saying why
        elif found is not None:
            data["conversation"] = as_text(found)
        else:
            _find(doc, "extract.conversation", path, headers)  # raises: found nothing
    if "usage" in ex:
        data["usage"] = {
            k: _number(_find(doc, f"extract.usage.{k}", p, headers), f"extract.usage.{k}", p)
            for k, p in ex["usage"].items()
        }
    if "calls" in ex:
        data["calls"] = _calls(_find(doc, "extract.calls", ex["calls"], headers), ex["calls"])
    for name, path in (ex.get("evidence") or {}).items():
        data[name] = _find(doc, f"extract.evidence.{name}", path, headers)
    return data


def is_no_handle(value: Any) -> bool:
    """Whether an extracted conversation is no handle, as :func:`hookio.conversation_handle`
    has it for a script: ``null``, ``true``/``false``, a blank string, ``{}`` or ``[]``."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, (dict, list)) and not value


def _not_a_handle(value: Any) -> str:
    return f"{json.dumps(value)}, which is no conversation handle (null, true, false, a blank string, {{}} and [] are none)"


def no_handle(doc: Any, config: HttpConfig, headers: Any = None) -> str | None:
    """Why a response that gave no conversation handle gave none, for the
    reason of a scenario stopped for want of one: ``extract.conversation``
    found nothing (naming the path, and the response's keys or headers), or,
    with no ``extract``, a JSON object has no ``conversation`` field; ``None``
    when no handle was asked for. The caller puts its phase first
    (``execute's response is ...``, ``open's extract.conversation: ...``)."""
    ex = config.extract
    if ex is None:
        if not isinstance(doc, dict):
            return None
        if "conversation" in doc:
            value = doc["conversation"]
            return (
                f"response's conversation is {_not_a_handle(value)}"
                if is_no_handle(value)
                else None
            )
        return (
            f"response is a JSON object with no conversation (its keys: {_names(doc)}); "
            "say where the handle is with extract: {conversation: PATH}"
        )
    path = ex.get("conversation")
    if path is None:
        return None
    found = _search(doc, "extract.conversation", path, headers)
    if found is not None:
        return f"extract.conversation: the JMESPath {path.text!r} found {_not_a_handle(found)}"
    if path.reads_headers:
        held = f"its headers: {_names(headers or {})}"
    elif isinstance(doc, dict):
        held = f"its keys: {_names(doc)}"
    elif doc is None:
        held = "it is empty"
    else:
        held = "it is a JSON list" if isinstance(doc, list) else "it is text, not JSON"
    return (
        f"extract.conversation: the JMESPath {path.text!r} found nothing in the response ({held})"
    )


def _names(keys: Any, most: int = 20) -> str:
    names = sorted(str(k) for k in keys)
    more = f", ... ({len(names) - most} more)" if len(names) > most else ""
    return ", ".join(names[:most]) + more if names else "none"


def saved_values(
    doc: Any, config: HttpConfig, headers: Any = None, values_hidden: bool = False
) -> dict[str, Any]:
    """The values ``save: {NAME: PATH}`` names, found in the response (and its ``headers``);
    ``values_hidden`` (prepare): a failure never quotes a value of the response."""
    return {
        name: _find(doc, f"save.{name}", path, headers, values_hidden)
        for name, path in config.save.items()
    }
