"""Built-in author: a URL that is an endpoint (``--from https://host/ask``).

(A URL whose body is an OpenAPI document is the OpenAPI author's.) The
endpoint is probed: first ``POST {"message": goal}``; when the server refuses
(400, 405, 415, 422 ...) the next usual shape is tried, jumping straight to a
field the error names (``"loc": ["body", "prompt"]``), or to ``GET ?q=`` when
the method is not allowed (405), a bounded number of times. A key in the query string or a password in the URL becomes an ``env``
reference. Once it answers, the shared HTTP corrections find the answer.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .author_http import (
    GOAL_WRITTEN,
    HttpAuthor,
    basic_header,
    declare_references,
    http_entry,
    move_path_secrets,
    move_value_secrets,
    split_userinfo,
    where_of,
)

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Source
    from rook_core.profile_probe import Observation

GOAL = "{{goal}}"
SHAPES: list[tuple[str, str, Any]] = [
    ("message", "POST", {"message": GOAL}),
    ("prompt", "POST", {"prompt": GOAL}),
    ("input", "POST", {"input": GOAL}),
    ("query", "POST", {"query": GOAL}),
    ("question", "POST", {"question": GOAL}),
    ("text", "POST", {"text": GOAL}),
    ("messages", "POST", {"messages": [{"role": "user", "content": GOAL}]}),
    ("q", "GET", None),
]
REFUSED = {400, 405, 415, 422}


def shape_entry(base: dict[str, Any], index: int) -> dict[str, Any]:
    name, method, body = SHAPES[index]
    entry = {k: v for k, v in base.items() if k not in ("body", "method")}
    query = dict(entry.pop("query", {}) or {})
    if method == "GET":
        entry["method"] = "GET"
        query[name] = GOAL
    else:
        entry["body"] = body
    if query:
        entry["query"] = query
    return entry


def named_in(text: str, tried: list[int]) -> int | None:
    """The first untried shape whose field the error message names."""
    low = text.lower()
    for i, (name, _, _) in enumerate(SHAPES):
        if i not in tried and re.search(rf"[\"'\s\[]{re.escape(name)}[\"'\s\]]", low):
            return i
    return None


class UrlAuthor(HttpAuthor):
    """An endpoint URL: probe it until a request shape is accepted."""

    def detect(self, source: Source) -> float:
        if source.kind != "url" or not (source.url or "").lower().startswith(("http:", "https:")):
            return 0.0  # acme://desk, a scheme Rook does not fetch: a plugin's author's
        return 0.5

    def suggest_name(self, source: Source) -> str | None:
        host = urlsplit(source.url or "").hostname or ""
        labels = [x for x in host.split(".") if x not in ("api", "www")]
        if not labels or host.replace(".", "").isdigit() or host == "localhost":
            return None
        return labels[0]

    def write(self, request: AuthorRequest) -> Draft:
        from rook_core.authoring import Draft

        assert request.source.url is not None
        url, user, password = split_userinfo(request.source.url)
        parts = urlsplit(move_path_secrets(url, request.secrets))
        where = where_of(urlunsplit(parts))
        query = move_value_secrets(
            dict(parse_qsl(parts.query, keep_blank_values=True)),
            request.secrets,
            where,
            "query parameter",
        )
        base: dict[str, Any] = {"url": urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))}
        if user is not None:
            base["headers"] = {
                "Authorization": basic_header(user, password or "", request.secrets, where)
            }
        if query:
            base["query"] = query
        declare_references(base, request.secrets, where)
        if GOAL_WRITTEN.search(str(query)):  # the URL says where the goal goes: no probing
            return Draft(
                hooks={"execute": {"http": {**base, "method": "GET"}}},
                notes=["the goal goes where your URL has {{goal}}"],
                state={"kind": "url given"},
            )
        return Draft(
            hooks={"execute": {"http": shape_entry(base, 0)}},
            state={"kind": "url", "base": base, "tried": [0]},
        )

    def conclude(
        self, draft: Draft, observation: Observation | None, request: AuthorRequest
    ) -> list[str] | None:
        """What probing showed of the request shape: found, refused, or never tried."""
        st = draft.state
        if st.get("kind") != "url" or http_entry(draft) is None:
            return None
        name, method, body = SHAPES[st["tried"][-1]]
        sent = json.dumps(body).replace(json.dumps(GOAL), "GOAL")  # messages: a list
        shape = f"GET ?{name}=GOAL" if method == "GET" else f"POST {sent}"
        status = observation.http_status if observation is not None else None
        if observation is None or observation.problem == "missing_variable":
            said = "not sent to the endpoint (no test ran)"
        elif observation.ok:
            return [f"the request shape ({shape}) was found by probing the endpoint"]
        elif status is None:
            said = "never confirmed: the endpoint gave no answer"
        elif status in REFUSED:
            said = f"refused (HTTP {status}) like each of the {len(st['tried'])} tried"
        else:
            said = f"not confirmed: the endpoint answered HTTP {status}"
        return [f"the request shape is the last one tried ({shape}), {said}"]

    def revise(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        st = draft.state
        if st.get("kind") == "url" and not observation.ok and observation.http_status in REFUSED:
            tried = list(st["tried"])
            body = observation.response
            text = body if isinstance(body, str) else json.dumps(body)
            nxt = named_in(text or "", tried)
            get = len(SHAPES) - 1  # a POST not allowed (405): no other body will be
            if nxt is None and observation.http_status == 405 and get not in tried:
                nxt = get
            if nxt is None:
                nxt = next((i for i in range(len(SHAPES)) if i not in tried), None)
            if nxt is None:
                return None
            new = draft.copy(state={**st, "tried": [*tried, nxt]})
            new.hooks["execute"] = {"http": shape_entry(st["base"], nxt)}
            name, method, _ = SHAPES[nxt]
            where = f"query parameter {name}" if method == "GET" else f"body field {name}"
            new.changes.append(
                f"the endpoint refused the request (HTTP {observation.http_status}): "
                f"the goal now goes in the {where} ({method})"
            )
            return new
        if http_entry(draft) is None:
            return None
        return super().revise(draft, observation, request)
