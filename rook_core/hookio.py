"""The hook contract's output side: one JSON object, normalised to evidence."""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Collection
from typing import Any

from .lazyre import later
from .models import TurnEvidence
from .redact import Redactor, current

SHOW_CHARS = 400
KNOWN_FIELDS = ("output", "agent_reply", "conversation", "usage", "calls")


class OutputError(ValueError):
    """The hook's output breaks the contract; the message is the diagnosis."""


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e999: a number JSON can write but no JSON reader gets back
        raise ValueError(f"{text} is too large for a JSON number")
    return value


_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)
MAX_DEPTH = 100
"""How deeply arrays and objects an agent sent may nest: every part of Rook
that walks evidence (redaction, criteria, reports) recurses, and Python's
stack holds some hundreds of levels."""


def loads(text: str) -> Any:
    """JSON an agent sent, as :func:`json.loads` reads it, but only JSON:
    ``NaN``, ``Infinity`` and numbers too large for a float (``1e999``) are
    refused (ValueError, as for any text that is not JSON), and so are arrays
    and objects nested more than :data:`MAX_DEPTH` levels deep; a lone surrogate escape (``"\\ud83d"``, half of a
    character) becomes U+FFFD, so every string can be written as UTF-8.
    Raises ValueError as :func:`json.loads` does; nesting so deep that the
    parser itself gives up (Python's recursion limit, far past
    :data:`MAX_DEPTH`) is the same nesting error, never a RecursionError."""
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise ValueError(_too_deep()) from None
    except ValueError as exc:
        if (digits := _TOO_MANY_DIGITS.search(str(exc))) is None:
            raise
        # Python's own advice (sys.set_int_max_str_digits) is for Rook's code, not the hook's
        raise ValueError(
            f"a number of {digits[2]} digits, more than the {digits[1]} a JSON number may have here"
        ) from None
    if text.count("[") + text.count("{") > MAX_DEPTH:  # only then can it nest that deep
        _check_depth(value)
    if "\\ud" in text or "\\uD" in text:  # where a lone surrogate can come from
        value = whole_characters(value)
    return value


# Python 3.11+ says "Exceeds the limit (4300 digits) ...", 3.10 "(4300)"
_TOO_MANY_DIGITS = later(r"^Exceeds the limit \((\d+)(?: digits)?\).*value has (\d+) digits")


def _too_deep() -> str:
    return f"arrays and objects nested more than {MAX_DEPTH} levels deep"


def _check_depth(value: Any) -> None:
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        inner = node.values() if isinstance(node, dict) else node
        if depth > MAX_DEPTH:
            raise ValueError(_too_deep())
        stack.extend((v, depth + 1) for v in inner if isinstance(v, (dict, list)))


def whole_characters(value: Any) -> Any:
    """``value`` (parsed JSON) with every half of a UTF-16 pair left alone
    (``"\\ud83d"``, which JSON reads as a lone surrogate that no UTF-8 text, YAML
    file or request can hold) made U+FFFD; the rest as it was."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {whole_characters(k): whole_characters(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_characters(v) for v in value]
    return value


def preview(text: str, limit: int = SHOW_CHARS, redactor: Redactor | None = None) -> str:
    """``text`` quoted for a message, redacted (the run's redactor unless one
    is given), then cut at ``limit`` characters, so no piece of a secret shows."""
    return repr((redactor or current()).head(text, limit, "... [{n} more chars]"))


def decode(data: bytes, cap: int | None = None, redactor: Redactor | None = None) -> str:
    """Hook output as text; bytes that are not UTF-8 become U+FFFD, never a crash.

    Output that reached its ``cap`` was stopped there and may end in the middle
    of a secret: it is redacted, that secret's beginning included (the run's
    redactor unless one is given; see :meth:`Redactor.cut_short`). A character
    the cap cut in two is left out, so that beginning ends as the secret's does."""
    if cap is not None and len(data) >= cap:
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)
        return (redactor or current()).cut_short(text)
    return data.decode("utf-8", errors="replace")


def _beside_other_lines(text: str) -> bool:
    """Whether the first or the last line of ``text`` is a JSON object of its
    own among other lines: a hook that printed its logs on stdout."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return False
    for line in (lines[0], lines[-1]):
        try:
            if isinstance(loads(line), dict):
                return True
        except (ValueError, RecursionError):
            pass
    return False


_BLANKS = later(r"[ \t\r\n]*")
_MANY = 1000


def _json_objects(text: str) -> int:
    """How many JSON objects ``text`` (not one JSON value) holds one after
    another, only whitespace between them (JSON Lines, a CLI's stream of events,
    or objects back to back): 0 when it is anything else. Counted up to
    ``_MANY + 1``."""
    decoder = json.JSONDecoder()
    count, at = 0, 0
    try:
        while at < len(text) and count <= _MANY:
            value, at = decoder.raw_decode(text, at)
            if not isinstance(value, dict):
                return 0
            count += 1
            at = _BLANKS.match(text, at).end()  # type: ignore[union-attr]
    except (ValueError, RecursionError):
        return 0
    return count


def _handle_beside_other_lines(text: str) -> bool:
    """Whether ``text`` (not one JSON object) has a line that is a JSON object
    holding a ``conversation``: an open hook that printed its logs on stdout
    beside the handle it returns."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for line in lines if len(lines) > 1 else ():
        try:
            value = loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "conversation" in value:
            return True
    return False


# the start of a Python dict's repr ({'a') or a JavaScript object's (console.log: { a:)
_OBJECT_LITERAL = later(r"\{\s*(?:'|[A-Za-z_$][\w$]*\s*:)")
_CONVERSATION_KEY = later(r"""[{,]\s*['"]?conversation['"]?\s*:""")


def _handle_in_no_json(text: str) -> bool:
    """Whether ``text`` (not JSON) is meant as an object holding a ``conversation``:
    an open hook that printed its handle with ``print(dict)``, ``console.log(obj)``,
    a ``NaN``, a trailing comma or in UTF-16, whose handle ignoring it would lose."""
    text = text.strip().lstrip("\ufeff").lstrip()
    if looks_utf16(text):  # PowerShell's Out-File: {"conversation": ...} with a NUL each
        text = text.removeprefix("\ufffd\ufffd").replace("\x00", "")
    return text.startswith("{") and bool(_CONVERSATION_KEY.search(text))


def looks_utf16(text: str) -> bool:
    """Whether ``text`` (read as UTF-8) was written in UTF-16, as PowerShell's ``>``
    and ``Out-File`` write: a NUL beside every ASCII character, after the two bytes
    of its byte order mark (each U+FFFD in UTF-8)."""
    head = text.removeprefix("\ufffd\ufffd")[:16]
    return len(head) >= 4 and (set(head[1::2]) == {"\x00"} or set(head[0::2]) == {"\x00"})


def parse_object(
    stdout: str, required: bool, redactor: Redactor | None = None
) -> dict[str, Any] | None:
    """Parse stdout as exactly one JSON object.

    ``required`` (execute, collect): anything else is an :class:`OutputError`.
    Otherwise (prepare, open, close) empty or non-JSON output is ignored.
    """
    text = stdout.strip()
    if text.startswith("\ufeff"):  # a byte order mark some tools write first (PowerShell, .NET)
        text = text[1:].lstrip()
    if not text:
        if required:
            said = "only white space" if stdout else "nothing"  # a blank line, a BOM alone
            raise OutputError(f"the hook printed {said} on stdout; expected one JSON object")
        return None
    try:
        value = loads(text)
    except (ValueError, RecursionError) as exc:
        if not required:
            return None
        many = _json_objects(text)
        if many > 1:
            raise OutputError(
                "stdout is not one JSON object: it holds "
                f"{f'more than {_MANY}' if many > _MANY else many} JSON objects one after "
                "another (a stream of events, or the answer printed twice); print one object "
                f"holding all Rook should read; received {preview(text, redactor=redactor)}"
            ) from None
        if _beside_other_lines(text):
            raise OutputError(
                "stdout is not one JSON object (print logs to stderr): it has other lines "
                f"beside the JSON object; received {preview(text, redactor=redactor)}"
            ) from None
        if looks_utf16(text):
            raise OutputError(
                "stdout is not one JSON object: it is UTF-16 text, and Rook reads a hook's "
                "output as UTF-8; print UTF-8 (PowerShell: [Console]::OutputEncoding = "
                f"[Text.Encoding]::UTF8); received {preview(text, redactor=redactor)}"
            ) from None
        if _OBJECT_LITERAL.match(text):  # {'a': 1} or { a: 1 }: print(dict), console.log(obj)
            raise OutputError(
                "stdout is not one JSON object: it looks like a Python dict or a JavaScript "
                "object printed as it is; print json.dumps(...) (Python) or "
                f"JSON.stringify(...) (Node); received {preview(text, redactor=redactor)}"
            ) from None
        raise OutputError(
            f"stdout is not one JSON object ({exc}); received {preview(text, redactor=redactor)}"
        ) from None
    if not isinstance(value, dict):
        if not required:
            return None
        raise OutputError(
            f"stdout must be one JSON object, got {json_kind(value)}; "
            f"received {preview(text, redactor=redactor)}"
        )
    return value


TOKEN_COUNTS = ("input", "output", "total")
USAGE_MAX = 10**15
"""The largest number ``usage`` may hold: far above any real count or cost, and
small enough that every sum and comparison of them stays a finite float."""


class Pairs(list):  # type: ignore[type-arg]
    """A JSON object's members in order, duplicates kept (see :func:`members`)."""


def members(text: str) -> Any:
    """``text`` parsed as JSON with every object a :class:`Pairs` of its members,
    a key given twice kept twice (a plain parse keeps the last); ``None`` when
    ``text`` is no JSON."""
    try:
        return json.loads(text, object_pairs_hook=Pairs)
    except (ValueError, RecursionError):
        return None


def repeated_members(pairs: Any, keys: tuple[str, ...]) -> list[str]:
    """Those of ``keys`` that the object ``pairs`` (a :class:`Pairs`) gives more than once."""
    if not isinstance(pairs, Pairs):
        return []
    given = [k for k, _ in pairs]
    return [k for k in keys if given.count(k) > 1]


def last_member(pairs: Any, key: str) -> Any:
    """The value a plain parse keeps for ``key`` of the object ``pairs``: its last."""
    if not isinstance(pairs, Pairs):
        return None
    return next((v for k, v in reversed(pairs) if k == key), None)


CONTRACT_KEYS = (*KNOWN_FIELDS, "status", "workspace")
"""The keys of a hook's JSON object that Rook reads (``status``: a Ruhroh
status criterion's; ``workspace``: file and command criteria's); the rest is
kept as evidence as it is."""


def repeated_contract_keys(stdout: str) -> list[str]:
    """The keys the contract reads that a hook's JSON object on ``stdout`` gives
    more than once (``output``, ``usage.input``, ``calls[0].name``): Rook reads
    the last, another JSON reader the first. For ``rook profile test``, once per
    command; a run never calls it."""
    text = stdout.strip()
    if text.startswith("\ufeff"):
        text = text[1:].lstrip()
    value = members(text)
    found = repeated_members(value, CONTRACT_KEYS)
    found += [f"usage.{k}" for k in repeated_members(last_member(value, "usage"), TOKEN_COUNTS)]
    calls = last_member(value, "calls")
    if isinstance(calls, list) and not isinstance(calls, Pairs):
        for i, call in enumerate(calls):
            found += [f"calls[{i}].{k}" for k in repeated_members(call, ("name", "arguments"))]
    return found


def json_kind(value: Any) -> str:
    """What a parsed JSON ``value`` is, in JSON's words (``an array``, ``null``),
    for a message to a hook's author, who may never have written Python."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def as_json(value: Any) -> str:
    """A parsed JSON ``value`` as the JSON text a hook printed (``true``,
    ``"7"``, ``{"name": 5}``), not Python's rendering of it."""
    return json.dumps(value, ensure_ascii=False)


def _cut(message: str, limit: int = 300) -> str:
    """``message`` redacted, then cut to ``limit`` characters (a hook's own key or
    value it quotes may hold a secret: cut first, a piece of it would be left)."""
    return current().head(message, limit)


def _check_usage(usage: Any) -> dict[str, Any] | None:
    """``usage`` checked: an object of numbers, token counts and costs never negative,
    token counts whole (``7.0`` is one, ``1.5`` is not) and given back as whole
    numbers (``7.0`` as 7), as every record and report shows them.

    ``None`` (as if absent) when it holds no number at all (``{}``)."""
    if not isinstance(usage, dict):
        raise OutputError(
            _cut(f'usage must be an object like {{"input": 12, "output": 3}}, got {as_json(usage)}')
        )
    numbers = False
    for k, v in usage.items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise OutputError(_cut(f"usage.{k} must be a number, got {as_json(v)}"))
        if v < 0 and k in TOKEN_COUNTS:
            raise OutputError(_cut(f"usage.{k} must be a token count >= 0, got {v!r}"))
        if k in TOKEN_COUNTS and isinstance(v, float) and not v.is_integer():
            raise OutputError(_cut(f"usage.{k} must be a whole token count (0 or more), got {v!r}"))
        if v < 0 and "cost" in k.lower():  # a negative cost would hide a real one in a sum
            raise OutputError(_cut(f"usage.{k} must be a cost >= 0, got {v!r}"))
        if abs(v) > USAGE_MAX:
            shown = current().head(f"{v!r}", 40, "...")
            raise OutputError(_cut(f"usage.{k} is absurdly large ({shown}); at most 10**15"))
        numbers = True
    if not numbers:
        return None
    return {
        k: int(v) if k in TOKEN_COUNTS and isinstance(v, float) else v for k, v in usage.items()
    }


def has_token_counts(usage: dict[str, Any] | None) -> bool:
    """Whether checked ``usage`` shows the ``usage`` capability: at least one
    token count (``input``, ``output`` or ``total``). Other numbers (a cost)
    are kept as usage evidence but are not token counts."""
    return usage is not None and any(usage.get(k) is not None for k in TOKEN_COUNTS)


def usage_names_warning(usage: dict[str, Any] | None) -> str | None:
    """For checked ``usage`` with no token count under Rook's names but numbers
    under names that say tokens (``input_tokens``, as an API names them): a
    warning saying why no count was observed, or ``None``."""
    if usage is None or has_token_counts(usage):
        return None
    named = [k for k, v in usage.items() if v is not None and "token" in k.lower()]
    if not named:
        return None
    return (
        f"usage has {', '.join(named)} but no input, output or total: Rook reads token "
        'counts as usage.input, usage.output and usage.total ({"input": 12, "output": 3}), '
        "so this usage shows no token count"
    )


_CALLS_NAME = later(r"(tool|function)_?(call|use)s?$", re.IGNORECASE)
"""An API's own name for tool calls: ``tool_calls``, ``toolCalls``, ``function_call``, ``tool_use``."""


def calls_names_warning(evidence: dict[str, Any] | None) -> str | None:
    """For output with no ``calls`` but fields whose names say calls
    (``tool_calls``, as an API names them): a warning saying why no call was
    observed, or ``None``. ``evidence`` holds the output's other fields."""
    named = [k for k, v in (evidence or {}).items() if v is not None and _CALLS_NAME.search(k)]
    if not named:
        return None
    return (
        f"the hook's output has {', '.join(named)} but no calls: Rook reads tool calls as "
        'calls: [{"name": ..., "arguments": {...}}], so this output shows no call log'
    )


def calls_arguments_warning(
    data: dict[str, Any],
    phase: str,
    said: Collection[tuple[str, str]] = (),
) -> str | None:
    """For a hook's output (``data``, as the hook gave it) whose calls give their
    ``arguments`` as a string that is not JSON (an agent's tool call cut short): a
    warning naming them, or ``None``. Such arguments are kept as the text they are
    and count as not observed: a ``called`` criterion with ``arguments`` is
    unverifiable for that call, never passed or failed on them. A call in ``said``
    (:func:`bad_arguments`: collect's list repeating a turn's call, which is one
    call) is warned of where it was first given."""
    calls = data.get("calls")
    if not isinstance(calls, list):
        return None
    bad = []
    for i, call in enumerate(calls):
        args = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(args, str) and _bad_key(call, args) not in said:
            try:
                loads(args)
            except (ValueError, RecursionError):
                bad.append((i, call.get("name"), args))
    if not bad:
        return None
    one = len(bad) == 1
    who = " and ".join(
        [
            ", ".join(
                f"calls[{i}] ({name if isinstance(name, str) else '?'})" for i, name, _ in bad[:3]
            ),
            *([f"{len(bad) - 3} more"] if len(bad) > 3 else []),
        ]
    )
    texts = ", ".join(preview(args, 60) for _, _, args in bad[:3])
    return _cut(
        f"{phase}: {who} gave {'its' if one else 'their'} arguments as "
        f"{'a string' if one else 'strings'} that {'is' if one else 'are'} not valid JSON "
        f"({texts}): Rook reads arguments as a JSON object, or a string holding one (as an "
        "API's function.arguments), so they count as not observed",
        500,
    )


def _bad_key(call: dict[str, Any], args: str) -> tuple[str, str]:
    name = call.get("name")
    return (name if isinstance(name, str) else repr(name), args)


def bad_arguments(calls: Any) -> set[tuple[str, str]]:
    """The ``(name, arguments)`` of the calls in ``calls`` whose arguments are text
    (a turn's, as recorded), for :func:`calls_arguments_warning`'s ``said``."""
    return {
        _bad_key(c, c["arguments"])
        for c in calls or ()
        if isinstance(c, dict) and isinstance(c.get("arguments"), str)
    }


def _check_calls(calls: Any) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise OutputError(
            f"calls must be a list of {{name, arguments}} objects, got {json_kind(calls)}"
        )
    out = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise OutputError(
                _cut(f"calls[{i}] must be an object with a string name, got {as_json(call)}")
            )
        args = call.get("arguments")  # none given (or null): not observed, never "empty"
        if isinstance(args, str):  # OpenAI-style arguments arrive as a JSON string
            try:
                args = loads(args)
            except (ValueError, RecursionError):
                pass
        out.append({**call, "arguments": args})
    return out


def to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def conversation_handle(value: Any) -> str | None:
    """A returned ``conversation`` as ``ROOK_CONVERSATION`` passes it back, or
    ``None`` when it is no handle: ``null``, ``true``/``false``, a blank string,
    ``{}`` or ``[]``. A number or a non-empty object or array is its JSON text
    (what the agent can parse again), a string is itself. A handle holding a
    NUL character, which no environment variable can hold, is an
    :class:`OutputError`."""
    handle = None
    if isinstance(value, str):
        handle = value if value.strip() else None
    elif isinstance(value, (int, float, dict, list)) and not isinstance(value, bool):
        handle = json.dumps(value, ensure_ascii=False) if value not in ({}, []) else None
    if handle is not None and "\0" in handle:  # no environment variable can hold it
        raise OutputError(
            "the conversation handle holds a NUL character (\\u0000), which "
            "ROOK_CONVERSATION cannot carry to the next hook"
        )
    return handle


def open_said(hooks: list[dict[str, Any]]) -> str:
    """When a scenario run has no handle: what its open script printed that is
    none (a handle as plain text, or an object under another key), or ``""``.
    ``hooks`` are the run's recorded hooks (redacted)."""
    opened = next((h for h in hooks if h.get("phase") == "open"), None)
    if opened is None or opened.get("status") != "ok":
        return ""
    why = (opened.get("details") or {}).get("no_handle")  # a transport's own (http's path)
    if isinstance(why, str) and why:
        return f"open's {why}"
    if opened.get("transport") != "script":
        return ""
    data, printed = opened.get("data"), (opened.get("stdout") or "").strip()
    if isinstance(data, dict) and "conversation" not in data:
        what = f"a JSON object with no conversation (keys: {', '.join(sorted(data)) or 'none'})"
    elif data is None and printed:
        what = f"{preview(printed)}, which is not a JSON object"
    elif data is None and _CONVERSATION_KEY.search(opened.get("stderr") or ""):
        what = "nothing on standard output, and its handle on standard error"
    else:
        return ""
    return f'open printed {what}: open passes a handle as {{"conversation": "..."}} on stdout'


def execute_said(hook: dict[str, Any]) -> str:
    """When the first turn returned no handle: why, from its hook record
    ``hook`` (redacted): a transport's own word (``details.no_handle``, such as
    an http entry's path that found nothing), or the keys of the JSON object a
    script printed with no ``conversation`` key; or ``""``."""
    data = hook.get("data")
    why = (hook.get("details") or {}).get("no_handle")
    if isinstance(why, str) and why:
        return f"execute's {why}"
    if hook.get("transport") != "script" or not isinstance(data, dict) or "conversation" in data:
        return ""
    keys = ", ".join(sorted(data)) or "none"
    return (
        f"execute printed a JSON object with no conversation (keys: {keys}): execute "
        'returns a handle as {"conversation": "..."} on stdout'
    )


def handle_said(hooks: list[dict[str, Any]], turn: dict[str, Any]) -> str:
    """Why the first turn left no conversation handle: what :func:`open_said`
    finds in the run's recorded ``hooks`` and :func:`execute_said` in the turn's
    hook record ``turn``, joined (``""`` when neither says anything)."""
    return "; ".join(filter(None, (open_said(hooks), execute_said(turn))))


def turn_evidence(turn: int, text: str, data: dict[str, Any], seconds: float) -> TurnEvidence:
    """Normalise an execute result: ``output`` (or ``agent_reply``) is required."""
    if "output" in data and data["output"] is not None:
        output = to_text(data["output"])
    elif "agent_reply" in data and data["agent_reply"] is not None:
        output = to_text(data["agent_reply"])
    elif "output" in data or "agent_reply" in data:
        raise OutputError(
            f"the JSON object's {'output' if 'output' in data else 'agent_reply'} is null, "
            'which holds no answer: execute answers with text (an empty answer is "")'
        )
    else:
        raise OutputError(
            f"the JSON object has no output field (keys: {', '.join(sorted(data)) or 'none'})"
        )
    conversation = conversation_handle(data.get("conversation"))
    usage = _check_usage(data["usage"]) if data.get("usage") is not None else None
    calls = _check_calls(data["calls"]) if "calls" in data and data["calls"] is not None else None
    extra = {k: v for k, v in data.items() if k not in KNOWN_FIELDS}
    if data.get("output") is not None and "agent_reply" in data:  # not the answer: evidence
        extra["agent_reply"] = data["agent_reply"]
    return TurnEvidence(
        turn=turn,
        input=text,
        output=output,
        conversation=conversation,
        usage=usage,
        calls=calls,
        evidence=extra,
        seconds=round(seconds, 6),
    )


def collected_evidence(data: dict[str, Any]) -> dict[str, Any]:
    """Normalise a collect result: usage and calls read, everything else evidence."""
    out: dict[str, Any] = {
        "evidence": {k: v for k, v in data.items() if k not in ("usage", "calls")}
    }
    usage = _check_usage(data["usage"]) if data.get("usage") is not None else None
    if usage is not None:
        out["usage"] = usage
    if data.get("calls") is not None:
        out["calls"] = _check_calls(data["calls"])
    return out


RECORD_CHARS = 64 * 1024


def tail(text: str, limit: int = 2000, redactor: Redactor | None = None) -> str:
    """The end of ``text`` for a diagnosis: redacted, then its last ``limit``
    characters after ``[N earlier chars] ...`` (see :func:`preview`)."""
    red = redactor or current()
    text = red.text(text.strip())
    if len(text) <= limit:
        return text
    kept = red.tail(text, limit)
    return f"[{len(text) - len(kept)} earlier chars] ...{kept}"


def last_word(stderr: str) -> str | None:
    """What a crashed program said last, for the head of its diagnosis (a table
    shows the first words of a reason): the last line of ``stderr`` that is
    not part of a stack (indented frames, ``^`` markers, the ``}`` that closes
    the properties Node prints after an error's frames, Node's closing
    ``Node.js vN``), such as Python's ``ValueError: boom`` after its traceback or
    Node's ``Error: boom`` before its frames; ``None`` when there is none. Node's
    ``Require stack:`` and the ``- PATH`` lines under it are part of a stack too."""
    lines = stderr.splitlines()
    required = "Require stack:" in lines
    for line in reversed(lines):
        if required and (line == "Require stack:" or line.startswith("- ")):
            continue
        if (
            line.strip()
            and not line[0].isspace()
            and line.strip(" ^~}")
            and not (line.startswith("Node.js v"))
        ):
            return line.strip()
    return None


def clip(text: str, redactor: Redactor | None = None) -> str:
    """``text`` as a record keeps it: its first :data:`RECORD_CHARS`
    characters. Text that long is redacted before the cut (see
    :func:`preview`); shorter text is returned as is, for the record's own
    redaction."""
    if len(text) <= RECORD_CHARS:
        return text
    return (redactor or current()).head(text, RECORD_CHARS, "\n... [{n} more chars not recorded]")


_KEPT = "rook_cut_off_output"  # where a transport keeps its own (see keep_cut_off_output)


def keep_cut_off_output(exc: BaseException, **fields: Any) -> None:
    """Keep, on the cancellation ``exc`` it re-raises, what a hook cut off by an
    interrupt had produced, as the transport's record would hold it: ``stdout``,
    ``stderr`` (a hook of more than one process: the Ruhroh loop's iterations),
    ``details`` (an HTTP hook's attempts and the response begun), redacted, and
    ``diagnosis`` when what was stopped is no process group (an HTTP request)."""
    setattr(exc, _KEPT, fields)


def cut_off_output(exc: BaseException, call: Any, result: Any) -> None:
    """Fill ``result``, the record of a hook cut off by an interrupt (the
    cancellation ``exc``), with what it had printed before its process group was
    killed: its stdout and stderr as a record keeps a stopped hook's (see
    :func:`hook_result`), or what its transport kept (:func:`keep_cut_off_output`).
    Its diagnosis says what was stopped: the process group a script hook or a
    Ruhroh wrapper ran in, or what the transport kept as ``diagnosis`` (an HTTP
    hook's request); plain ``interrupted`` when nothing was killed."""
    kept = getattr(exc, _KEPT, None)
    if isinstance(kept, dict):
        for name, value in kept.items():
            setattr(result, name, value)
        if "diagnosis" in kept:  # the transport said what it stopped (an HTTP request)
            return
    else:
        from .process import read_before  # only an interrupted hook needs it

        proc = read_before(exc)
        if proc is not None:
            red = getattr(call.run, "redactor", None) or current()
            result.stdout = clip(decode(proc.stdout, 0, red), red)
            result.stderr = clip(decode(proc.stderr, 0, red), red)
            if proc.notes:  # what was killed, as at a timeout
                result.details["process"] = list(proc.notes)
    details = result.details if isinstance(result.details, dict) else {}
    if details.get("process"):
        result.diagnosis = "interrupted; its process group was killed"
    else:
        result.diagnosis = "interrupted"


def overflowed(proc: Any, cap: int, who: str) -> str:
    """The diagnosis of a hook (``who``: "the hook", "the wrapper") whose output
    passed its cap: while it ran (it was killed), or after it exited, from a
    process it left writing to its pipe (that process's group was killed)."""
    stream = proc.overflow
    fix = f"raise limits.{stream}_bytes in the profile if this much output is expected"
    if proc.overflow_late:
        return (
            f"{stream} exceeded the {cap}-byte cap after {who} exited: a process it started "
            f"kept writing to its {stream}, and its process group was killed ({fix})"
        )
    return f"{stream} exceeded the {cap}-byte cap; {who} was killed ({fix})"


def _answered(stdout: str) -> str:
    """For a hook that failed in silence: that it had printed its JSON object (its
    last command failed after the answer), which is why nothing else said why."""
    try:
        value = loads(stdout.strip().lstrip("\ufeff"))
    except (ValueError, RecursionError):
        return ""
    if not isinstance(value, dict):
        return ""
    return " after printing one JSON object on stdout: a hook that answered exits 0"


def hook_result(call: Any, proc: Any, required_json: bool) -> Any:
    """Turn a finished process into the phase's :class:`HookResult` with a diagnosis."""
    from .models import HookResult

    red = getattr(call.run, "redactor", None)
    if red is None:
        red = current()
    # a hook stopped from outside (its timeout, a signal) was cut off wherever
    # it was, perhaps in the middle of a secret: its streams end as a cap's do
    stopped = proc.timed_out or (proc.returncode is not None and proc.returncode < 0)
    stdout = decode(proc.stdout, 0 if stopped else call.limits.stdout_bytes, red)
    stderr = decode(proc.stderr, 0 if stopped else call.limits.stderr_bytes, red)
    result = HookResult(
        phase=call.phase,
        status="ok",
        seconds=round(proc.seconds, 6),
        started=proc.started,
        ended=proc.ended,
        exit_code=proc.returncode,
        stdout=clip(stdout, red),
        stderr=clip(stderr, red),
        turn=call.turn,
        transport=call.entry.transport,
    )
    if proc.notes:
        result.details["process"] = list(proc.notes)
    if proc.spawn_error:
        result.status = "failed"
        result.diagnosis = f"could not start the hook: {proc.spawn_error}"
    elif proc.timed_out:
        result.status = "timeout"
        stopped = f"; {proc.stopped_words}" if proc.was_stopped else ""
        result.diagnosis = (
            f"timed out after {call.timeout:g} s{stopped}; its process group was killed"
            + (f"; stderr: {tail(stderr, redactor=red)}" if stderr.strip() else "")
        )
    elif proc.overflow:
        cap = call.limits.stdout_bytes if proc.overflow == "stdout" else call.limits.stderr_bytes
        result.status = "failed"
        result.diagnosis = overflowed(proc, cap, "the hook")
    elif proc.returncode != 0:
        result.status = "failed"
        how = (
            f"killed by signal {-proc.returncode}"
            if proc.returncode is not None and proc.returncode < 0
            else f"exited with code {proc.returncode}"
        )
        said = tail(stderr, redactor=red)
        last = last_word(said) if "\n" in said else None
        result.diagnosis = (
            f"{how}: {last} (stderr: {said})"
            if last
            else f"{how}: {said}"
            if stderr.strip()
            else f"{how} (stderr was empty)" + _answered(stdout)
        )
    else:
        try:
            # collect may print nothing (a byte order mark alone is nothing): a script
            # exits 0 for a phase it does not implement, so it collected nothing (the
            # engine warns); anything else
            # it prints must still be one JSON object
            required = required_json and (
                call.phase != "collect" or bool(stdout.strip().lstrip("\ufeff").strip())
            )
            result.data = parse_object(stdout, required, red)
            if result.data is None and call.phase == "open" and _handle_beside_other_lines(stdout):
                raise OutputError(  # ignored, the handle would be lost in silence
                    "stdout is not one JSON object (print logs to stderr): it has other "
                    "lines beside the JSON object with the conversation handle; received "
                    f"{preview(stdout.strip(), redactor=red)}"
                )
            if result.data is None and call.phase == "open" and _handle_in_no_json(stdout):
                parse_object(stdout, True, red)  # the same: raises, saying what is wrong
        except OutputError as exc:
            result.status = "failed"
            result.diagnosis = str(exc)
            if not stdout.strip() and stderr.strip():  # console.error: the wrong stream
                result.diagnosis += f" (its stderr: {tail(stderr, redactor=red)})"
    return result
