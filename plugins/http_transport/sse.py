"""Assembling a server-sent-event stream into one answer.

The stream itself is read with ``httpx-sse``; this module merges the events.

* OpenAI-style chat streams (``data:`` chunks whose ``choices[].delta`` carry
  pieces of the message, then ``data: [DONE]``) become the object the same
  endpoint returns without streaming: ``{"id", "object": "chat.completion",
  "model", "choices": [{"index", "message": {"role", "content",
  "tool_calls", ...}, "finish_reason"}], "usage"}`` (the message's other
  fields, ``refusal``, ``reasoning_content`` ..., joined alike; a choice's
  ``logprobs`` too; of the chunk's other fields, ``citations`` say, the latest),
  so the same extraction paths work whether ``stream`` is on or off.
* Any other stream becomes ``{"events": [each data payload, parsed as JSON
  when it is JSON], "text": the non-JSON payloads joined}``, and when its events
  are named (``event: answer``), ``"by_event": {name: {"events": ..., "text": ...}}``
  too, the events of each name alone (those with none under ``message``).

A stream that ends (the connection closes) before its ``[DONE]`` was maybe
cut short: :func:`cut_short` says when the answer is surely incomplete.
"""

from __future__ import annotations

import json
from typing import Any

from rook_core import hookio
from rook_core.errors import counted
from rook_core.redact import current

from .diagnose import shape


class StreamError(Exception):
    """The stream reported an error; the message says what it sent, ``shaped`` says
    it with its values hidden (for prepare, whose responses carry credentials)."""

    def __init__(self, message: str, shaped: str) -> None:
        super().__init__(message)
        self.shaped = shaped


def _parse(data: str, lines: bool) -> Any:
    """An event's payload: the JSON object, list or string it holds, else its text
    (a token stream's ``42``, ``true`` or ``null`` is a piece of the text, as the
    others are); a line of a JSON-lines stream (``lines``) is whatever JSON value it
    holds."""
    try:
        value = hookio.loads(data)
    except (ValueError, RecursionError):
        return data
    return value if lines or isinstance(value, (dict, list, str)) else data


def _is_chat_chunk(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("choices"), list)


def _malformed(n: int, where: str, value: Any, expected: str) -> StreamError:
    said = f"chat chunk {n} of the event stream is malformed: {where} is "
    return StreamError(
        f"{said}{current().head(json.dumps(value), 200)}, expected {expected}",
        f"{said}{current().head(json.dumps(shape(value)), 200)}, expected {expected}",
    )


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _merge_tool_call(calls: dict[int, dict[str, Any]], delta: Any, n: int, where: str) -> None:
    if not isinstance(delta, dict):
        raise _malformed(n, where, delta, "an object")
    index = delta.get("index", len(calls))
    if not _index(index):
        raise _malformed(n, f"{where}.index", index, "a number")
    fn = delta.get("function") or {}
    if not isinstance(fn, dict):
        raise _malformed(n, f"{where}.function", fn, "an object")
    for key in ("name", "arguments"):
        if fn.get(key) is not None and not isinstance(fn[key], str):
            raise _malformed(n, f"{where}.function.{key}", fn[key], "a string")
    call = calls.setdefault(
        index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
    )
    if delta.get("id"):
        call["id"] = delta["id"]
    if delta.get("type"):
        call["type"] = delta["type"]
    for key in ("name", "arguments"):
        if fn.get(key):
            _add_text(call["function"], key, fn[key])


class _Pieces:
    """A text streamed in pieces, joined once when the answer is whole
    (:func:`_joined`): joining each piece as it came took time growing with the
    square of the text's length (a long answer one character a chunk)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[str]) -> None:
        self.parts = parts


def _add_text(into: dict[str, Any], key: str, text: str) -> None:
    """Add ``text`` to the text ``into[key]`` (a string, or :class:`_Pieces`)."""
    had = into.get(key)
    if isinstance(had, _Pieces):
        had.parts.append(text)
    else:
        into[key] = _Pieces([had, text]) if had else text


def _joined(value: Any) -> Any:
    """``value`` with each :class:`_Pieces` in it (in objects and lists) joined."""
    if isinstance(value, _Pieces):
        return "".join(value.parts)
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (_Pieces, dict, list)):
                value[key] = _joined(item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (_Pieces, dict, list)):
                value[i] = _joined(item)
    return value


def _merge_piece(into: dict[str, Any], key: str, piece: Any) -> None:
    """Add a delta's field other than content and tool_calls to the message, as the
    endpoint streams one: a text in pieces joined (``refusal``, a reasoning model's
    ``reasoning_content``), an object's fields merged alike (the legacy
    ``function_call``: its ``name``, then its ``arguments`` in pieces), but ``id``
    and ``type``, which each piece repeats whole; a list's items added (a
    choice's ``logprobs.content``, a token a chunk); any other value the latest."""
    had = into.get(key)
    if piece is None:
        into.setdefault(key, None)
    elif isinstance(piece, str) and isinstance(had, (str, _Pieces)) and key not in ("id", "type"):
        _add_text(into, key, piece)
    elif isinstance(piece, list) and isinstance(had, list):
        had.extend(piece)
    elif isinstance(piece, dict) and isinstance(had, dict):
        for k, v in piece.items():
            _merge_piece(had, k, v)
    elif isinstance(piece, dict):
        into[key] = {}
        for k, v in piece.items():
            _merge_piece(into[key], k, v)
    else:
        into[key] = piece


def _chat(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """One chat completion from its chunks; a chunk of another shape is a
    :class:`StreamError` naming it (``n`` counts the chat chunks from 1)."""
    choices: dict[int, dict[str, Any]] = {}
    tool_calls: dict[int, dict[int, dict[str, Any]]] = {}
    out: dict[str, Any] = {"object": "chat.completion"}
    for n, chunk in enumerate(chunks, 1):
        for key, value in chunk.items():  # id, model, usage, a provider's citations ...
            if key not in ("choices", "object") and value not in (None, {}, []):
                out[key] = value  # the latest: each chunk repeats them whole
        for i, choice in enumerate(chunk.get("choices") or []):
            where = f"choices[{i}]"
            if not isinstance(choice, dict):
                raise _malformed(n, where, choice, "an object")
            index = choice.get("index", 0)
            if not _index(index):
                raise _malformed(n, f"{where}.index", index, "a number")
            merged = choices.setdefault(
                index,
                {
                    "index": index,
                    # null until a text piece comes, as an answer of tool calls alone is
                    "message": {"role": "assistant", "content": None},
                    "finish_reason": None,
                },
            )
            delta = choice.get("delta") or choice.get("message") or {}
            if not isinstance(delta, dict):
                key = "delta" if choice.get("delta") else "message"
                raise _malformed(n, f"{where}.{key}", delta, "an object")
            if delta.get("role"):
                merged["message"]["role"] = delta["role"]
            text = delta.get("content")
            if isinstance(text, str):
                _add_text(merged["message"], "content", text)
            for key, piece in delta.items():
                if key not in ("role", "content", "tool_calls"):
                    _merge_piece(merged["message"], key, piece)
            pieces = delta.get("tool_calls") or []
            if not isinstance(pieces, list):
                raise _malformed(n, f"{where}.delta.tool_calls", pieces, "a list")
            for j, tc in enumerate(pieces):
                where_tc = f"{where}.delta.tool_calls[{j}]"
                _merge_tool_call(tool_calls.setdefault(index, {}), tc, n, where_tc)
            if choice.get("finish_reason"):
                merged["finish_reason"] = choice["finish_reason"]
            for key, piece in choice.items():  # logprobs, a token a chunk
                if key not in ("index", "delta", "message", "finish_reason"):
                    _merge_piece(merged, key, piece)
    for index, calls in tool_calls.items():
        choices[index]["message"]["tool_calls"] = [calls[k] for k in sorted(calls)]
    out["choices"] = [_joined(choices[k]) for k in sorted(choices)]
    return out


def assemble(events: list[tuple[str, str]], lines: bool = False) -> dict[str, Any]:
    """Merge ``(event name, data)`` pairs (``[DONE]`` already removed) into one answer;
    ``lines``: the events are the lines of a JSON-lines stream (see :func:`_parse`).

    Raises :class:`StreamError` when the stream carried an error event or an
    ``{"error": ...}`` payload.
    """
    parsed = [(name, _parse(data, lines)) for name, data in events]
    for name, value in parsed:
        reported = value.get("error") if isinstance(value, dict) else None
        if name == "error" or reported:
            detail = reported or value  # an ``event: error`` says it in its whole payload
            shown = current().head(json.dumps(detail), 500)  # redacted first, then cut
            raise StreamError(
                f"the event stream reported an error: {shown}",
                "the event stream reported an error: "
                + current().head(json.dumps(shape(detail)), 500),
            )
    values = [v for _, v in parsed]
    chat = [v for v in values if _is_chat_chunk(v)]
    if chat and len(chat) == len([v for v in values if isinstance(v, dict)]):
        return _chat(chat)
    answer: dict[str, Any] = {
        "events": values,
        "text": "".join(v for v in values if isinstance(v, str)),
    }
    if any(name not in ("", "message") for name, _ in parsed):  # event: answer, event: thinking
        named: dict[str, list[Any]] = {}
        for name, value in parsed:  # an event with no name is a "message" (the SSE standard)
            named.setdefault(name or "message", []).append(value)
        answer["by_event"] = {
            name: {"events": got, "text": "".join(v for v in got if isinstance(v, str))}
            for name, got in named.items()
        }
    return answer


def cut_short(answer: Any, events: int, mid_event: bool = False) -> str | None:
    """Why a stream that ended without ``data: [DONE]`` gave no whole answer, or ``None``.

    With no event at all there is no answer; a chat stream none of whose
    choices got a ``finish_reason`` stopped in the middle of the message (a
    server that sends no ``[DONE]`` still ends each choice with one); any stream
    that ended in the middle of an event (``mid_event``: a ``data:`` line with no
    blank line after it, which the SSE standard drops) was cut."""
    if events == 0:
        return (
            "the event stream ended before any event (the server closed it, or sent only "
            "comments): no answer"
        )
    if isinstance(answer, dict) and answer.get("object") == "chat.completion":
        choices = answer.get("choices") or []
        if not any(isinstance(c, dict) and c.get("finish_reason") for c in choices):
            return (
                f"the event stream ended before data: [DONE] and no choice had a finish_reason "
                f"(after {counted(events, 'event')}): the answer was cut short"
            )
    if mid_event:
        return (
            "the event stream ended in the middle of an event (the connection closed "
            f"before the blank line that ends it, after {counted(events, 'whole event')}): "
            "the answer was cut short"
        )
    return None
