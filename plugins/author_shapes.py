"""Reading an agent's response the way a person would: where is the answer, the
conversation id, the token counts, the tool calls?

Used by the built-in authors when they probe a real target. Paths are lists
of keys and list indices (``["choices", 0, "message", "content"]``);
:func:`jmes` writes one as a JMESPath expression for an ``http:`` entry's
``extract``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

Path = tuple[Any, ...]

ANSWER_KEYS = {
    "output": 6,
    "answer": 6,
    "reply": 6,
    "agent_reply": 6,
    "generated_text": 6,
    "completion": 5,
    "response": 5,
    "result": 5,
    "content": 5,
    "text": 4,
    "message": 4,
    "outputtext": 6,
    "body": 2,
    "data": 1,
}
REQUEST_KEYS = {"prompt", "input", "query", "question", "goal", "instructions", "system"}
META_KEYS = {
    "id",
    "role",
    "model",
    "object",
    "type",
    "status",
    "finish_reason",
    "stop_reason",
    "created",
    "name",
    "url",
    "version",
    "error",
    "code",
    "lang",
    "language",
}
CONVERSATION_KEYS = (
    "conversation_id",
    "conversationid",
    "thread_id",
    "threadid",
    "session_id",
    "sessionid",
    "chat_id",
    "chatid",
    "context_id",
    "contextid",
    "conversation",
    "thread",
    "session",
)
USAGE_IN = (
    "prompt_tokens",
    "input_tokens",
    "inputtokens",
    "prompttokencount",
    "prompt_eval_count",
    "in",
    "input",
)
USAGE_OUT = (
    "completion_tokens",
    "output_tokens",
    "outputtokens",
    "candidatestokencount",
    "eval_count",
    "out",
    "output",
)
CALL_LISTS = ("tool_calls", "toolcalls", "calls", "function_calls", "tools_used", "actions")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ID_LIKE = re.compile(r"^[A-Za-z0-9_.:-]{8,}$")
URL_OR_DATE = re.compile(r"^(https?://|\d{4}-\d\d-\d\d)")
MAX_DEPTH = 8


def norm(key: Any) -> str:
    return str(key).lower().replace("-", "_")


def jmes(path: Path) -> str:
    """``("choices", 0, "message", "content")`` -> ``choices[0].message.content``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if IDENT.match(part) else '"' + part.replace('"', '\\"') + '"'
            out += f".{name}" if out else name
    return out or "@"


def dig(doc: Any, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def walk(doc: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every value inside ``doc`` with its path (lists: their first ten items)."""
    yield path, doc
    if len(path) >= MAX_DEPTH:
        return
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from walk(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:10]):
            yield from walk(v, (*path, i))


def _last_key(path: Path) -> str:
    return next((norm(p) for p in reversed(path) if not isinstance(p, int)), "")


def answer_score(path: Path, value: str, goal: str = "") -> float:
    """How much a string field looks like the agent's answer (> 0: plausible)."""
    key = _last_key(path)
    text = value.strip()
    if not text:
        return -1.0
    score = float(ANSWER_KEYS.get(key.replace("_", ""), ANSWER_KEYS.get(key, 0)))
    keys = [norm(p) for p in path if not isinstance(p, int)]
    if keys[-2:] == ["message", "content"] or "choices" in keys or "candidates" in keys:
        score += 3
    if " " in text:
        score += 2
    score += min(len(text) / 40.0, 3.0)
    if key in META_KEYS:
        score -= 8
    if key in REQUEST_KEYS or text == goal.strip():
        score -= 6  # the request echoed back, not the answer
    if " " not in text and (ID_LIKE.match(text) or URL_OR_DATE.match(text)):
        score -= 6
    if any(k in ("usage", "metadata", "meta", "headers", "request") for k in keys):
        score -= 4
    score -= 0.2 * len(path)
    return score


def find_answer(doc: Any, goal: str = "") -> Path | None:
    """The path of the string that best looks like the answer; ``()`` when the whole
    document is text; ``None`` when nothing does."""
    if isinstance(doc, str):
        return () if doc.strip() else None
    best: tuple[float, Path] | None = None
    for path, value in walk(doc):
        if isinstance(value, str) and path:
            score = answer_score(path, value, goal)
            if score > 0 and (best is None or score > best[0]):
                best = (score, path)
    return best[1] if best else None


def find_conversation(doc: Any) -> Path | None:
    """The path of a conversation, thread or session id, shallowest first."""
    found: list[tuple[int, int, Path]] = []
    for path, value in walk(doc):
        if not path or isinstance(path[-1], int):
            continue
        key = norm(path[-1]).replace("_", "")
        for rank, name in enumerate(CONVERSATION_KEYS):
            if key != name.replace("_", ""):
                continue
            if isinstance(value, dict) and isinstance(value.get("id"), (str, int)):
                found.append((len(path), rank, (*path, "id")))
            elif isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
                found.append((len(path), rank, path))
    return min(found)[2] if found else None


def _count_key(value: dict[str, Any], names: tuple[str, ...]) -> Any:
    keys = {norm(k).replace("_", ""): k for k in value}
    for name in names:
        k = keys.get(name.replace("_", ""))
        if k is not None and isinstance(value[k], int) and not isinstance(value[k], bool):
            return k
    return None


def find_usage(doc: Any) -> dict[str, Path] | None:
    """Paths of the input and output token counts, when a response has both."""
    bare = {"in", "out", "input", "output"}
    for path, value in walk(doc):
        if not isinstance(value, dict):
            continue
        i, o = _count_key(value, USAGE_IN), _count_key(value, USAGE_OUT)
        if i is not None and o is not None and not ({norm(i), norm(o)} <= bare and not path):
            return {"input": (*path, i), "output": (*path, o)}
    return None


STREAM_KEYS = {"events", "text", "by_event"}


def streamed(doc: Any) -> bool:
    """Whether ``doc`` is an event stream as the HTTP transport assembles one of the
    endpoint's own shape: ``{"events": [...], "text": ...}``, with ``by_event`` when
    its events are named (``event: content_block_delta``, as Anthropic's are)."""
    return isinstance(doc, dict) and {"events", "text"} <= set(doc) <= STREAM_KEYS


def find_streamed_usage(doc: Any) -> dict[str, str] | None:
    """For an event stream (what the HTTP transport makes ``{"events": [...], "text":
    ...}`` of): JMESPaths of the input and output token counts, each from the **last**
    event that carries it. Anthropic's ``message_start`` holds a placeholder output
    count (1) and ``message_delta``, last, the answer's; :func:`find_usage` would read
    the first (and looks at ten events only). Every event is looked at."""
    if not streamed(doc):
        return None
    events = doc["events"] if isinstance(doc["events"], list) else []
    found: dict[str, Path] = {}
    bare = {"in", "out", "input", "output"}
    for event in events:
        for path, value in walk(event) if isinstance(event, dict) else ():
            if not isinstance(value, dict) or any(isinstance(p, int) for p in path):
                continue
            for kind, names in (("input", USAGE_IN), ("output", USAGE_OUT)):
                key = _count_key(value, names)
                if key is not None and (path or norm(key) not in bare):
                    found[kind] = (*path, key)
    if set(found) != {"input", "output"}:
        return None
    return {kind: f"events[].{jmes(path)} | [-1]" for kind, path in found.items()}


def find_calls(doc: Any) -> str | None:
    """A JMESPath turning the response's tool calls into ``[{name, arguments}]``."""
    for path, value in walk(doc):
        if not path or isinstance(path[-1], int):
            continue
        key = norm(path[-1]).replace("_", "")
        if key == "content" and isinstance(value, list):
            if any(isinstance(b, dict) and b.get("type") == "tool_use" for b in value):
                return f"{jmes(path)}[?type=='tool_use'].{{name: name, arguments: input}}"
        if key not in {k.replace("_", "") for k in CALL_LISTS} or not isinstance(value, list):
            continue
        first = next((c for c in value if isinstance(c, dict)), None)
        if first is None:
            continue
        fn = first.get("function")
        if isinstance(fn, dict) and "name" in fn:
            proj = "{name: function.name, arguments: function.arguments}"
        elif isinstance(fn, str):
            proj = "{name: function, arguments: " + _args_key(first, "args") + "}"
        elif isinstance(first.get("name"), str):
            proj = "{name: name, arguments: " + _args_key(first, "arguments") + "}"
        elif isinstance(first.get("tool"), str):
            proj = "{name: tool, arguments: " + _args_key(first, "input") + "}"
        else:
            continue
        return f"{jmes(path)}[].{proj}"
    return None


def _args_key(call: dict[str, Any], default: str) -> str:
    for key in ("arguments", "args", "input", "parameters", "params"):
        if key in call:
            return key
    return default


def openai_tool_calls(doc: Any) -> str | None:
    """For an OpenAI chat completion: the calls path that says "no calls" when there
    are none (used only when the request offered the model tools)."""
    if isinstance(doc, dict) and isinstance(doc.get("choices"), list):
        return (
            "choices[0].message.tool_calls[].{name: function.name, "
            "arguments: function.arguments} || `[]`"
        )
    return None


def find_streamed_answer(doc: Any, goal: str = "") -> str | None:
    """The JMESPath that assembles the answer of an event stream of the endpoint's own
    shape (what the HTTP transport makes ``{"events": [...], "text": ...}`` of), when
    the answer comes in pieces, one field of each event (``{"delta": "Hel"}``,
    Anthropic's ``{"delta": {"text": "Hel"}}``, Gemini's ``candidates[0].content.parts[0].text``):
    the pieces joined
    (``join('', events[].delta)``), or the last one when each piece repeats the one
    before and adds to it. One event is pieces too: the test's short answer came in
    one, a longer one comes in several (never ``events[0]``'s alone). ``None`` when
    no event's field holds an answer."""
    if not streamed(doc):
        return None
    events = (
        [e for e in doc["events"] if isinstance(e, dict)] if isinstance(doc["events"], list) else []
    )
    pieces: dict[Path, list[str]] = {}
    for event in events:  # a piece may be in a list: Gemini's candidates[0].content.parts[0].text
        for path, value in walk(event):
            if path and isinstance(value, str):
                pieces.setdefault(path, []).append(value)
    best: tuple[float, str] | None = None
    for path, values in pieces.items():
        if any(not isinstance(_get(e, path), (str, type(None))) for e in events):
            continue  # a projection joins strings only
        if len(values) == 1 and str(doc["text"]).strip():
            continue  # one field beside text pieces (the answer in `text`): find_answer's
        growing = len(values) > 1 and all(
            b.startswith(a) and len(b) > len(a) for a, b in zip(values, values[1:], strict=False)
        )
        text = values[-1] if growing else "".join(values)
        score = answer_score(path, text, goal)
        if score > 0 and (best is None or score > best[0]):
            projection = f"events[].{jmes(path)}"
            best = (score, f"{projection} | [-1]" if growing else f"join('', {projection})")
    return best[1] if best else None


def _get(doc: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(doc, list) or part >= len(doc):
                return None
            doc = doc[part]
        elif not isinstance(doc, dict):
            return None
        else:
            doc = doc.get(part)
    return doc
