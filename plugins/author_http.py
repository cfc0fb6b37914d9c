"""What the HTTP-writing authors (cURL, OpenAPI, URL) share: moving secrets to
``env`` references, placing ``{{goal}}`` where the sample message was, and
correcting an ``http:`` entry from what the real target answered.

:class:`HttpAuthor` implements ``revise`` (after each probe while writing) and
``repair`` (``rook profile fix``, for any profile whose execute hook is an
``http:`` entry, hand-written ones included).
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from rook_core.credentials import (
    mask_url,
    sample_placeholder,
    secret_kind,
    secret_name,
    secret_value,
    url_secrets,
)
from rook_core.models import ROOK_VARIABLES

from .author_shapes import (
    find_answer,
    find_calls,
    find_conversation,
    find_streamed_answer,
    find_streamed_usage,
    find_usage,
    jmes,
    openai_tool_calls,
)

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Secrets
    from rook_core.profile_probe import Observation

GOAL = "{{goal}}"
MESSAGE_KEYS = ("message", "prompt", "input", "content", "query", "question", "text", "q")
DROP_HEADERS = {
    "content-length",
    "host",
    "accept-encoding",
    "connection",
    "transfer-encoding",
    "keep-alive",
    "upgrade",
    "te",
    "expect",
}
PLACEHOLDER_ENV = re.compile(r"\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


# -- secrets -----------------------------------------------------------------------


def move_header_secrets(headers: dict[str, str], secrets: Secrets, where: str) -> dict[str, str]:
    """Credential headers (Authorization, X-API-Key, Cookie ...), and any header whose
    value is shaped like a key, -> ``{{env.NAME}}`` (see :mod:`rook_core.credentials`)."""
    out = {}
    for key, value in headers.items():
        if not value or "{{" in value or not (secret_name(key) or secret_value(value)):
            out[key] = value
            continue
        if key.lower() in ("authorization", "proxy-authorization"):
            scheme, _, cred = value.partition(" ")
            if cred.strip():
                kind = "BASIC_AUTH" if scheme.lower() == "basic" else "API_TOKEN"
                purpose = f"{scheme} credential for {where} (the {key} header" + (
                    ", base64 of user:password)" if kind == "BASIC_AUTH" else ")"
                )
                if sample_placeholder(cred):  # Bearer {api_key}: no value to test with
                    var = secrets.add(kind, purpose)
                    out[key] = f"{scheme} {{{{env.{var}}}}}"
                    continue
                var = secrets.add(kind, purpose, cred.strip())
                if kind == "BASIC_AUTH":
                    _hide_basic(cred.strip(), secrets, var)
                out[key] = f"{scheme} {{{{env.{var}}}}}"
                continue
        what = f"value of the {key} header for {where}"
        var = secrets.add(secret_kind(key), what, None if sample_placeholder(value) else value)
        out[key] = f"{{{{env.{var}}}}}"
    return out


def declare_references(entry: Any, secrets: Secrets, where: str) -> None:
    """A ``{{env.NAME}}`` the source already holds (a credential kept out of the
    command, a short one included) -> declared in ``env``, so Rook checks it is
    set before every run and redacts it."""
    known = {ref["variable"] for ref in secrets.refs}  # the secrets moved out of it
    for var in sorted(set(PLACEHOLDER_ENV.findall(str(entry))) - set(ROOK_VARIABLES) - known):
        secrets.add("", f"{{{{env.{var}}}}} in your source, for {where}", variable=var)


def _hide_basic(cred: str, secrets: Secrets, var: str) -> None:
    try:
        plain = base64.b64decode(cred, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return
    secrets.hide(plain, var)
    password = plain.partition(":")[2]
    if len(password) >= 4:
        secrets.hide(password, var)


def basic_header(user: str, password: str, secrets: Secrets, where: str) -> str:
    """``-u user:password`` or a password in the URL -> a Basic Authorization header value."""
    cred = base64.b64encode(f"{user}:{password}".encode()).decode()
    var = secrets.add(
        "BASIC_AUTH",
        f"Basic credential for {where}: base64 of user:password "
        "(printf %s 'user:password' | base64)",
        cred,
    )
    secrets.hide(f"{user}:{password}", var)
    if len(password) >= 4:
        secrets.hide(password, var)
    return f"Basic {{{{env.{var}}}}}"


def move_value_secrets(values: dict[str, Any], secrets: Secrets, where: str, part: str) -> dict:
    """Credential-named query parameters or body fields, and values shaped like a key,
    -> ``{{env.NAME}}``; in a JSON body (``part`` ``field``) also inside nested
    objects and lists (``{"auth": [{"token": ...}]}``)."""
    return {key: _move_value(key, value, secrets, where, part) for key, value in values.items()}


def _move_value(key: str, value: Any, secrets: Secrets, where: str, part: str) -> Any:
    if isinstance(value, str):
        if value and "{{" not in value and (secret_name(key) or secret_value(value)):
            var = secrets.add(secret_kind(key), f"the {key} {part} of {where}", value)
            return f"{{{{env.{var}}}}}"
        return value
    if isinstance(value, list):  # an item is named by its list's field (or parameter)
        return [_move_value(key, item, secrets, where, part) for item in value]
    if part != "field":
        return value
    if isinstance(value, dict):
        return move_value_secrets(value, secrets, where, part)
    return value


def move_path_secrets(url: str, secrets: Secrets) -> str:
    """A path segment of ``url`` shaped like a key (``/keyed/sk-.../ask``) ->
    ``{{env.NAME}}``, as one in the query is moved."""
    found = [f for f in url_secrets(url) if f.purpose == "URL path"]
    if found:
        where = where_of(mask_url(url))
        for f in sorted(found, key=lambda f: f.start, reverse=True):
            var = secrets.add(secret_kind(f.name), f"the key in the URL path of {where}", f.value)
            url = f"{url[: f.start]}{{{{env.{var}}}}}{url[f.end :]}"
    return url


def split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """``https://u:p@host/x`` -> (``https://host/x``, ``u``, ``p``)."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url, None, None
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, unquote(parts.username or ""), unquote(parts.password or "")


def where_of(url: str) -> str:
    parts = urlsplit(url)
    if not parts.scheme:  # {{env.BASE_URL}}/v1: the variable holds scheme and host
        return parts.path
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


# -- the goal ----------------------------------------------------------------------


GOAL_WRITTEN = re.compile(r"\{\{\s*goal\s*\}\}")
GOAL_GIVEN = "where your command has {{goal}}"


def place_goal(value: Any, given: bool = False) -> tuple[Any, str | None]:
    """Put ``{{goal}}`` where the sample message is: the last user message of a chat
    ``messages`` list, else a field named message/prompt/input/..., else the longest
    string. Returns the new value and where the goal went (``None``: nowhere). When
    the source already says where it goes (``given``: a ``{{goal}}`` in the command),
    nothing is replaced."""
    if given:
        return value, None
    if isinstance(value, str):
        return GOAL, "the whole body"
    if not isinstance(value, (dict, list)):
        return value, None
    import copy

    doc = copy.deepcopy(value)
    spot = _chat_message(doc) or _named(doc, ()) or _longest(doc)
    if spot is None:
        return value, None
    parent, key, shown = spot
    parent[key] = GOAL
    return doc, shown


def _chat_message(doc: Any) -> tuple[Any, Any, str] | None:
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        return None
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            if isinstance(m.get("content"), str):
                return m, "content", f"messages[{i}].content"
            if isinstance(m.get("content"), list):
                for j, part in enumerate(m["content"]):
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        return part, "text", f"messages[{i}].content[{j}].text"
    return None


def _named(doc: Any, path: tuple[Any, ...]) -> tuple[Any, Any, str] | None:
    if not isinstance(doc, dict):
        return None
    for name in MESSAGE_KEYS:
        for key, value in doc.items():
            if str(key).lower() == name and isinstance(value, str) and "{{" not in value:
                return doc, key, jmes((*path, key))
    for key, value in doc.items():
        found = _named(value, (*path, key))
        if found:
            return found
    return None


def _longest(doc: Any) -> tuple[Any, Any, str] | None:
    best: tuple[int, Any, Any, str] | None = None

    def visit(node: Any, path: tuple[Any, ...]) -> None:
        nonlocal best
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, str) and "{{" in value:
                continue  # a reference ({{env.X}}, a credential moved out), not a message
            if isinstance(value, str) and (best is None or len(value) > best[0]):
                best = (len(value), node, key, jmes((*path, key)))
            elif isinstance(value, (dict, list)):
                visit(value, (*path, key))

    visit(doc, ())
    return best[1:] if best else None


# -- correcting an http: entry -------------------------------------------------------


def http_entry(draft: Draft, phase: str = "execute") -> dict[str, Any] | None:
    entry = draft.hooks.get(phase)
    if isinstance(entry, dict) and isinstance(entry.get("http"), dict):
        return entry["http"]
    return None


def _add_extras(http: dict[str, Any], doc: Any, new: Draft) -> None:
    """Extract the conversation id, usage and calls the response shows."""
    extract = http.setdefault("extract", {})
    if "conversation" not in extract and not new.state.get("no_conversation"):
        path = find_conversation(doc)
        if path:
            extract["conversation"] = jmes(path)
            shown = f"extract.conversation = {jmes(path)}"
            body = http.get("body")
            field = str(path[-2] if path[-1] == "id" and len(path) > 1 else path[-1])
            if isinstance(body, dict) and body.get(field) in ("", None):
                if field in body:  # Dify's conversation_id: "" stands for a new one
                    new.state["conversation_placeholder"] = body[field]
                body[field] = "{{conversation}}"
                shown += f", sent back as body.{field} on later turns"
                if "conversation_placeholder" in new.state:
                    shown += (
                        f" (null on the first, where your command sent "
                        f"{json.dumps(new.state['conversation_placeholder'])})"
                    )
            new.turns = 2
            new.state["conversation_added"] = field
            new.changes.append(f"the response carries a conversation id: {shown}")
    if "usage" not in extract:
        streamed = find_streamed_usage(doc)  # an event stream: each count's last event
        usage = find_usage(doc) if streamed is None else None
        if streamed or usage:
            extract["usage"] = streamed or {k: jmes(p) for k, p in (usage or {}).items()}
            new.changes.append(
                f"the response reports token usage: extract.usage = {extract['usage']}"
            )
    if "calls" not in extract:
        calls = find_calls(doc)
        if calls is None and isinstance(http.get("body"), dict) and http["body"].get("tools"):
            calls = openai_tool_calls(doc)
        if calls:
            extract["calls"] = calls
            new.changes.append(f"the response reports tool calls: extract.calls = {calls}")
    if not extract:
        del http["extract"]


def _echo_is_no_answer(http: dict[str, Any], doc: Any, obs: Observation, new: Draft) -> None:
    """The field extracted as the answer holds the goal Rook sent (a history list's
    first message, the request echoed back): when another field looks like the
    answer, take that one."""
    current = (http.get("extract") or {}).get("output")
    answer = obs.answer
    if not current or not isinstance(answer, str) or answer.strip() != obs.goal.strip():
        return
    path = find_answer(doc, obs.goal)
    if path and jmes(path) != current:
        http["extract"]["output"] = jmes(path)
        new.changes.append(
            f"{current} holds the goal Rook sent, not an answer: the answer is under "
            f"{jmes(path)}, extract.output set"
        )


SIMPLE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[\d+\]|\.[A-Za-z_][A-Za-z0-9_]*)*")


def _answer_inside(http: dict[str, Any], doc: dict[str, Any], obs: Observation, new: Draft) -> None:
    """The field taken as the answer (``extract.output``, else ``output``) holds a list
    of typed blocks, not text (OpenAI's Responses API: ``output: [{"type": "message",
    "content": [{"type": "output_text", "text": ...}]}]``), or a typed message
    (LangServe's ``output: {"content": ..., "type": "ai"}``): the answer was that JSON
    as text. When a string inside it looks like the answer, extract that one."""
    import jmespath

    current = (http.get("extract") or {}).get("output") or "output"
    if not SIMPLE_PATH.fullmatch(current):
        return
    value = jmespath.search(current, doc)
    if isinstance(value, dict):  # a typed message (LangServe's {"content", "type": "ai"})
        typed = isinstance(value.get("type"), str) and isinstance(value.get("content"), str)
        path = ("content",) if typed and value["content"].strip() else None
    elif isinstance(value, list):  # typed blocks (the Responses API's output)
        path = find_answer(value, obs.goal)
        path = path if path and _typed_blocks(value, path) else None
    else:
        return
    if not path:  # any other object may be an answer for json: criteria
        return
    inside = jmes(path)
    found = current + ("" if inside.startswith("[") else ".") + inside
    http.setdefault("extract", {})["output"] = found
    kind = "a list" if isinstance(value, list) else "an object"
    new.changes.append(
        f"{current} holds {kind}, not the answer's text: the answer is under {found}, "
        "extract.output set"
    )


def _typed_blocks(value: Any, path: tuple[Any, ...]) -> bool:
    """Whether ``path`` in ``value`` runs through list items that say their ``type``
    (``{"type": "message"}``, ``{"type": "output_text"}``): a model API's content
    blocks, never an answer of the agent's own that is a list of records."""
    for part in path:
        if isinstance(part, int) and isinstance(value, list):
            value = value[part]
            if not (isinstance(value, dict) and isinstance(value.get("type"), str)):
                return False
        elif isinstance(value, dict):
            value = value.get(part)
    return True


def improve(draft: Draft, obs: Observation, request: AuthorRequest, fixing: bool) -> Draft | None:
    """The corrected draft for what ``obs`` shows, or ``None`` when there is nothing
    this author can correct."""
    if http_entry(draft) is None:
        return None
    new = draft.copy()
    http = http_entry(new)
    assert http is not None
    doc = obs.response
    failed = next((h for h in obs.hooks if h.get("status") != "ok"), {})
    diagnosis = failed.get("diagnosis") or ""
    if obs.ok:
        if isinstance(doc, dict):
            _echo_is_no_answer(http, doc, obs, new)
            _answer_inside(http, doc, obs, new)
            _add_extras(http, doc, new)
    elif (
        "extract.conversation" in diagnosis
        or obs.problem == "no_conversation"
        or (failed.get("turn") == 2 and new.state.get("conversation_added"))
        or (failed.get("phase") == "execute" and "conversation_placeholder" in new.state)
    ):
        known = "conversation" in (http.get("extract") or {})
        if not known and obs.problem == "no_conversation" and find_conversation(doc):
            _add_extras(http, doc, new)  # the id was there, just not extracted
        else:
            _drop_conversation(http, new, diagnosis)
    elif (
        diagnosis.startswith("extract.usage.")
        and failed.get("phase") == "execute"
        and "usage" in (http.get("extract") or {})
    ):  # counts a document declares that the response does not hold: read those it does
        extract = http["extract"]
        before = extract.pop("usage")
        new.changes.append(f"the response holds no token counts at {before}: extract.usage removed")
        if isinstance(doc, dict):
            _add_extras(http, doc, new)
    elif obs.problem == "no_answer" and failed.get("phase") == "execute":
        streamed = find_streamed_answer(doc, obs.goal)
        path = find_answer(doc, obs.goal) if streamed is None else None
        if path is None and streamed is None:
            return None
        extract = http.setdefault("extract", {})
        if streamed is not None:
            before = extract.get("output")
            extract["output"] = streamed
            why = f"not under {before}" if before else "no output field"
            new.changes.append(
                f"the answer is under {streamed} ({why}; the event stream sends it in "
                "pieces): extract.output set"
            )
        elif path == ():
            extract.pop("output", None)
            new.changes.append("the answer is the whole (text) response: extract.output removed")
        elif path is not None:
            before = extract.get("output")
            extract["output"] = jmes(path)
            why = f"not under {before}" if before else "no output field"
            new.changes.append(f"the answer is under {jmes(path)} ({why}): extract.output set")
        if isinstance(doc, dict):
            _add_extras(http, doc, new)
        if not extract:
            http.pop("extract", None)
    elif obs.http_status in (301, 302, 307, 308) and failed.get("phase") == "execute":
        if not _follow_redirect(http, failed, obs, new):
            return None
    elif obs.problem == "header_rejected":
        if not _fix_header(http, failed, obs, new):
            return None
    elif obs.problem == "missing_variable" and fixing:
        if not _declare_env(new, draft):
            return None
    else:
        return None
    return new if new.changes else None


def _drop_conversation(http: dict[str, Any], new: Draft, diagnosis: str) -> None:
    extract = http.get("extract") or {}
    extract.pop("conversation", None)
    field = new.state.pop("conversation_added", None)
    body = http.get("body")
    if field and isinstance(body, dict) and body.get(field) == "{{conversation}}":
        if "conversation_placeholder" in new.state:  # as the command sent it
            body[field] = new.state["conversation_placeholder"]
        else:
            del body[field]
    elif isinstance(body, dict) and "open" not in new.hooks:  # a profile's (fix): as it is sent
        for key in [k for k, v in body.items() if v == "{{conversation}}"]:
            body[key] = None
            new.changes.append(
                f"body.{key}: null, as it was sent: no conversation handle fills "
                "{{conversation}} any more"
            )
    if not extract:
        http.pop("extract", None)
    new.turns = 1
    new.state["no_conversation"] = True
    if new.capabilities.get("multi_turn"):
        new.capabilities["multi_turn"] = False  # stop claiming what does not work
        new.changes.append("capabilities.multi_turn: false (no conversation continues)")
    what = (
        "the first turn failed with null in place of your command's conversation value"
        if "conversation_placeholder" in new.state
        else "a second turn did not continue the conversation"
    )
    new.state.pop("conversation_placeholder", None)
    new.changes.append(
        f"{what} ("
        + (diagnosis[:160] or "no handle")
        + "): conversation extraction removed; scenarios with several turns will not run"
    )


def _follow_redirect(
    http: dict[str, Any], failed: dict[str, Any], obs: Observation, new: Draft
) -> bool:
    """The URL a redirect points at (curl -L follows it; Rook does not), keeping the
    query as written: only on the same host (the credentials go with the request),
    never from https to http, and never a URL holding a hidden or redacted value."""
    location = ((failed.get("details") or {}).get("http") or {}).get("location")
    url = http.get("url")
    if not isinstance(location, str) or not isinstance(url, str) or "{{" in url:
        return False
    try:  # a hidden password ("bob:[hidden]@") is no host urlsplit can read
        old, to = urlsplit(url), urlsplit(location)
        same_host = to.hostname == old.hostname
    except ValueError:
        return False
    final = urlunsplit((to.scheme, to.netloc, to.path, old.query, ""))
    if "[redacted:" in final or "[hidden" in final:  # its query (a key sent back) is not used
        return False
    if to.scheme not in ("http", "https") or not same_host:
        return False
    if old.scheme == "https" and to.scheme != "https":
        return False
    if final == url:
        return False
    http["url"] = final
    base = new.state.get("base")
    if isinstance(base, dict) and base.get("url") == url:  # the URL author probes from it
        base["url"] = final
    new.changes.append(  # a credential written in the URL is never shown
        f"{mask_url(url)} redirects (HTTP {obs.http_status}) to {mask_url(final)}: url set "
        "to it (Rook does not follow redirects)"
    )
    return True


def _fix_header(http: dict[str, Any], failed: dict[str, Any], obs: Observation, new: Draft) -> bool:
    from rook_core.profile_probe import mentions_header

    headers = http.get("headers") or {}
    name = mentions_header(failed, list(headers))
    if name is None and obs.http_status == 406:
        name = next((h for h in headers if h.lower() == "accept"), None)
    if obs.http_status == 415 and name is None:
        return _send_json(http, headers, new)
    if name is None or secret_name(name) or "{{" in str(headers.get(name, "")):
        return False  # never drop a credential to make a test pass
    del headers[name]
    if not headers:
        http.pop("headers", None)
    new.changes.append(f"the server rejected the {name} header (HTTP {obs.http_status}): removed")
    return True


FORM_NOTE = "the body is JSON but the command gives no Content-Type"
"""How the cURL author's note on a JSON body sent as a form begins (dropped once a
415 has it sent as JSON)."""


def _send_json(http: dict[str, Any], headers: dict[str, Any], new: Draft) -> bool:
    """The server refused the content type (415): a form goes as a JSON body, a JSON
    body labelled otherwise (or written as text, sent as text) as JSON; one sent as
    JSON already, or plain text, has nothing to change."""
    types = [h for h in headers if h.lower() == "content-type"]
    labelled = any(not str(headers[h]).lower().startswith("application/json") for h in types)
    body = http.get("body")
    if isinstance(http.get("form"), dict):
        http["body"] = http.pop("form")
        change = "the fields are sent as a JSON body"
    elif isinstance(body, (dict, list)) and labelled:
        change = "Content-Type set to JSON"
    elif isinstance(body, str) and _json_text(body) is not None and (labelled or not types):
        http["body"] = _json_text(body)  # JSON written as text (`'{"q": "hi"}'`): sent as text
        change = "Content-Type set to JSON, the body written as JSON"
    else:
        return False
    for h in types:
        del headers[h]
    headers["Content-Type"] = "application/json"
    http["headers"] = headers
    new.notes = [n for n in new.notes if not n.startswith(FORM_NOTE)]
    new.changes.append(f"the server refused the content type (415): {change}")
    return True


def _json_text(body: str) -> Any:
    """``body`` parsed, when it is a JSON object or array written as text; else ``None``
    (plain text, or a JSON string or number: no structure to send it as)."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _declare_env(new: Draft, draft: Draft) -> bool:
    declared = {e["variable"] for e in draft.env}
    used = set(PLACEHOLDER_ENV.findall(str(draft.hooks))) - set(draft.hook_env)
    added = sorted(v for v in used - declared if v not in ROOK_VARIABLES)
    for var in added:
        new.env.append({"variable": var, "purpose": "used by the profile's http entries"})
    if added:
        new.changes.append(
            f"env: {', '.join(added)} declared, so Rook checks them before every run "
            "(set them; the values stay out of the profile)"
        )
    return bool(added)


class HttpAuthor:
    """Base of the authors that write ``http:`` entries: their corrections."""

    fallback = False
    options: tuple[str, ...] = ()  # the rook profile add options it reads (none)

    def revise(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        return improve(draft, observation, request, fixing=False)

    def repair(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        return improve(draft, observation, request, fixing=True)
