"""Running one phase of an ``http:`` hook entry: render, send, check, extract, save.

Saved values (``save: {NAME: PATH}``):

* saved by **prepare** they are run-wide (``call.run.saved``), treated as
  secrets (added to the run's redactor) and kept in memory only. When a run
  is resumed in a new process (``rook run --run ID``) and a later phase needs
  one, the prepare request is sent again, once, before that phase.
* saved by a scenario phase (open, execute, close, collect) they belong to
  that scenario run; they are written to its state directory
  (``http-saved.json``) so a later ``--phases collect,judge`` finds them,
  unless they contain a secret, in which case they stay in memory: only their
  names (and the phase that saved them) are written, ``http-saved-in-memory.json``,
  so a later invocation needing one says why it is gone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import httpx

from rook_core.credentials import mask_query, mask_url
from rook_core.errors import counted
from rook_core.hookio import keep_cut_off_output, looks_utf16, open_said
from rook_core.models import HOOK_PHASES, ROOK_VARIABLES, HookCall, HookResult
from rook_core.redact import MARK as REDACTED_MARK
from rook_core.redact import Redactor
from rook_core.secret_forms import MIN_LENGTH, is_number
from rook_core.store import atomic_write
from rook_core.urlcheck import shown, url_problem

from .client import HttpResources, Reply, Request, SendError, new_cookies, send, still_coming
from .diagnose import auth_failure, preview, received, status_failure
from .entry import HttpConfig, header_problem
from .extract import (
    ExtractError,
    document,
    extract,
    is_no_handle,
    json_problem,
    no_handle,
    saved_values,
)
from .sse import StreamError, cut_short
from .template import Scope, TemplateError, as_text, placeholders, unavailable_in

KEY = "http"
SAVED_FILE = "http-saved.json"
MEMORY_FILE = "http-saved-in-memory.json"  # {name: phase} of values kept in memory only
RECORD_CHARS = 16 * 1024
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "cookie")


class HookError(Exception):
    """This hook failed; the message is its diagnosis."""


def resources(call: HookCall) -> HttpResources:
    """The run's :class:`HttpResources` (made here if the run did not start the transport)."""
    res = call.run.resources.get(KEY)
    if res is None:
        res = HttpResources(call.run.profile.concurrency)
        call.run.resources[KEY] = res
    return res  # type: ignore[no-any-return]


def redactor(call: HookCall, res: HttpResources) -> Redactor:
    """The run's redactor (``RunContext.redactor``), or one of the transport's own."""
    found = getattr(call.run, "redactor", None)
    if found is None:
        found = getattr(res, "own_redactor", None)
        if found is None:
            found = Redactor()
            res.own_redactor = found  # type: ignore[attr-defined]
    return found  # type: ignore[no-any-return]


def protect(call: HookCall, res: HttpResources, name: str, value: Any) -> None:
    """Make ``value`` a secret: ``[redacted:NAME]`` wherever it would be recorded.
    A number is the text it is sent as (``{{pin}}`` in a string), from
    :data:`~rook_core.secret_forms.MIN_LENGTH` characters (``48213957``; a count of
    ``3`` is no secret), and found as a JSON number as an ``env`` value that is
    a number is."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        protect(call, res, name, int(value))  # 12345.0 echoed as a whole number: 12345
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = as_text(value)
        if len(value) < MIN_LENGTH:
            return
    if isinstance(value, str) and value and (name, value) not in res.redacted:
        res.redacted.add((name, value))
        redactor(call, res).add(name, value)


def is_secret_variable(call: HookCall, name: str) -> bool:
    """Every ``{{env.NAME}}`` is a secret except Rook's own and plain ``hook_env`` values."""
    profile = call.run.profile
    if name in ROOK_VARIABLES:
        return False
    declared = {e.variable for e in profile.env}
    return name in declared or name not in profile.hook_env


# -- saved values --------------------------------------------------------------


_PLAIN_WORDS = frozenset(
    """in at on ttl expires expiry exp iat nbf seconds secs ms millis age timeout
    count total size limit offset page remaining reset status version""".split()
)
"""The last word of a key that plainly names a lifetime, a time, a count or a
status (``expires_in``, ``ext_expires_in``, ``expiresAt``, ``max_age``,
``created_at``, ``page_size``, ``status``): a number under it in an object
prepare saved is no secret (:func:`_secret_scalars`)."""
_PLAIN_KEYS = frozenset({"status_code", "http_status", "retry_after", "per_page"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


_TEXT_WORDS = frozenset(
    """type types kind status scope scopes unit units currency version method
    algorithm mode format tier plan role roles region locale language""".split()
)
"""The last word of a key that plainly names a type, a kind, a status, a scope
or a unit (``token_type``, ``grant_type``, ``status``, ``scope``, ``plan``): a
string with no digit under it in an object prepare saved is no secret
(:func:`_secret_scalars`). Not ``state`` (OAuth's ``state`` is a one-time
value), nor ``name`` (a display name is :func:`plain_name`'s; a login name,
``username``, is half a credential)."""
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"[a-z]+|[A-Z]+|[A-Z]?[a-z]+(?:[A-Z][a-z]{2,})*")
"""A piece of a plain text value (letters between other characters): lower
case, upper case, or words run together (``Bearer``, ``MFA``, ``VerifyPassword``);
one of 6 letters or fewer is one whatever its case (``DPoP``, ``OAuth``). Random
letters (``kQxZbWmRtYp``, a token that happens to hold no digit) are not."""
_NOT_LETTERS = re.compile(r"[^A-Za-z]+")


def _reads_as_words(value: str) -> bool:
    """Whether ``value`` holds no digit and every run of letters in it is a word
    (:data:`_WORD`), as a type, a status or a scope is."""
    return not _DIGIT.search(value) and all(
        len(piece) <= 6 or _WORD.fullmatch(piece) for piece in _NOT_LETTERS.split(value)
    )


_TIME_WORDS = frozenset(
    """expiration until after before date time timestamp datetime created updated
    modified issued since""".split()
)
"""With :data:`_PLAIN_WORDS`, the last word of a key that plainly names a time
(``expires_at``, ``Expiration``, ``not_after``, ``created``): a date under it
in an object prepare saved is no secret (:func:`_secret_scalars`)."""
_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2}[ -](?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r"[ -]\d{4} \d{2}:\d{2}:\d{2} GMT"
)
"""An ISO-8601 date or date-time (RFC 3339: ``2026-12-07T10:00:00Z``,
``2026-12-07T10:00:00.000+00:00``, ``2026-12-06``) or an HTTP date (a cookie's
``Expires``, ``Mon, 07 Dec 2026 10:00:00 GMT``)."""
_NAME_KEYS = frozenset(
    """name display_name full_name given_name family_name first_name last_name
    middle_name nickname nick_name""".split()
)
"""Keys that name a person's display name (OpenID Connect's ``name``,
``given_name``, ``family_name``, ``nickname``; ``displayName``): not a login
name (``username``, ``preferred_username``, ``login``, ``email``), which is half
a credential."""
_PERSON_NAME = re.compile(r"[^\W\d_]+(?:(?:[ .'’-]|\. )[^\W\d_]+)*\.?")
"""A name as people write one: letters of any script, words joined by a space,
a hyphen, an apostrophe or a period (``Jane Q. Doe``, ``José Müller-O'Brien``)."""


def plain_date(key: str, value: str) -> bool:
    """Whether ``value`` is a date (:data:`_DATE`) under a key that plainly names
    a time (:func:`plain_key`'s words, or :data:`_TIME_WORDS`), not a birth date
    (a verification answer: ``birth_date``, ``dob``, ``born_on``)."""
    words = _key_words(key)
    if not _DATE.fullmatch(value) or any("birth" in w or w in ("dob", "born") for w in words):
        return False
    return words[-1] in _PLAIN_WORDS or words[-1] in _TIME_WORDS


def plain_name(key: str, value: str) -> bool:
    """Whether ``value`` is a display name (:data:`_PERSON_NAME`, its runs of
    letters reading as words: :func:`_reads_as_words`) under a key naming one
    (:data:`_NAME_KEYS`)."""
    return (
        "_".join(_key_words(key)) in _NAME_KEYS
        and _PERSON_NAME.fullmatch(value) is not None
        and _reads_as_words(value)
    )


def _key_words(key: str) -> list[str]:
    return _CAMEL.sub("_", key).lower().replace("-", "_").split("_")


def plain_key(key: str) -> bool:
    """Whether ``key`` plainly names a lifetime, a time, a count or a status
    (:data:`_PLAIN_WORDS`; ``expiresIn`` and ``expires-in`` as ``expires_in``)."""
    words = _key_words(key)
    return words[-1] in _PLAIN_WORDS or "_".join(words) in _PLAIN_KEYS


def plain_text_key(key: str) -> bool:
    """Whether ``key`` plainly names a type, a kind, a status, a scope or a unit
    (:data:`_TEXT_WORDS`; ``tokenType`` as ``token_type``)."""
    return _key_words(key)[-1] in _TEXT_WORDS


def _secret_scalars(value: Any, key: str | None = None) -> Iterator[Any]:
    """Every string and number inside ``value`` (a saved object or list) that is
    a secret: all of them, but a number (or a string of one: ``"3599"``) whose
    key plainly names a lifetime, a time, a count or a status (:func:`plain_key`:
    a token response's ``expires_in: 3600`` would otherwise make every 3600 of
    every record ``[redacted:NAME]``), and a string of words, no digit in it
    (:func:`_reads_as_words`), whose key plainly names a type, a kind, a
    status, a scope or a unit
    (:func:`plain_text_key`: ``token_type: "Bearer"``, ``scope: "read write"``,
    ``status: "active"``); nor is a date under a key that plainly names a time
    (:func:`plain_date`: ``expires_at: "2026-12-07T10:00:00Z"``) or a display
    name under a key naming one (:func:`plain_name`: ``name: "Jane Doe"``):
    neither is a credential, and every date and name of every record would
    read ``[redacted:NAME]``. A value saved itself is always one."""
    if isinstance(value, dict):
        for k, item in value.items():
            yield from _secret_scalars(item, str(k))
    elif isinstance(value, list):
        for item in value:
            yield from _secret_scalars(item, key)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        if key is None:
            yield value
        elif not isinstance(value, str) or is_number(value.strip()):
            if not plain_key(key):
                yield value
        elif not (
            (plain_text_key(key) and _reads_as_words(value))
            or plain_date(key, value)
            or plain_name(key, value)
        ):
            yield value


def scenario_saved(call: HookCall, res: HttpResources) -> dict[str, Any]:
    if call.scenario_run is None:
        return {}
    key = call.scenario_run.key
    if key not in res.scenario_saved:
        loaded = _read_state(call, SAVED_FILE)
        res.scenario_saved[key] = loaded
        lost = _read_state(call, MEMORY_FILE)
        res.scenario_lost[key] = {k: v for k, v in lost.items() if k not in loaded}
    return res.scenario_saved[key]


def _read_state(call: HookCall, name: str) -> dict[str, Any]:
    if call.state_dir is None:
        return {}
    try:
        loaded = json.loads((call.state_dir / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def keep(call: HookCall, res: HttpResources, values: dict[str, Any]) -> dict[str, Any]:
    """Store values saved by this phase; returns what the record may show about them."""
    if not values:
        return {}
    if call.phase == "prepare":
        for name, value in values.items():  # an object or a list: each string or number in it
            for text in _secret_scalars(value):
                protect(call, res, name, text)
        call.run.saved.update(values)
        return {"saved": sorted(values), "kept": "in memory only (secrets)"}
    store = scenario_saved(call, res)
    store.update(values)
    red = redactor(call, res)
    persist = {k: v for k, v in store.items() if red.data(v) == v}
    memory_only = sorted(set(store) - set(persist))
    lost = res.scenario_lost.setdefault(call.scenario_run.key, {})  # type: ignore[union-attr]
    lost.update({name: call.phase for name in values if name in memory_only})
    for name in persist:
        lost.pop(name, None)
    if call.state_dir is not None:
        atomic_write(call.state_dir / SAVED_FILE, json.dumps(persist, ensure_ascii=False))
        if lost:
            atomic_write(call.state_dir / MEMORY_FILE, json.dumps(lost, ensure_ascii=False))
    return {"saved": sorted(values), **({"memory_only": memory_only} if memory_only else {})}


# -- the scope of placeholders ---------------------------------------------------


def asks_handle(call: HookCall) -> bool:
    """Whether a missing conversation handle can matter to ``call``'s scenario
    (more than one turn, or an entry that names where the handle is): only then
    does its record say why there is none. A one-turn scenario against a
    stateless API keeps its records free of the note."""
    config = call.entry.config
    extract = getattr(config, "extract", None) or {}
    return call.turns_total > 1 or "conversation" in extract


def scope_for(call: HookCall, res: HttpResources) -> Scope:
    values: dict[str, Any] = {"run": call.run.id}
    scenario = call.scenario
    unavailable = unavailable_in("prepare" if scenario is None else call.phase)
    if scenario is not None:
        values.update(scenario=scenario.id, session=call.session, conversation=call.conversation)
        if call.phase == "execute":
            values.update(goal=call.stdin if call.stdin is not None else "", turn=call.turn)
        else:
            values["goal"] = scenario.goal
    saved = {**call.run.saved, **scenario_saved(call, res)}
    saved.pop(PREPARE_COOKIES, None)
    values.update(saved)
    for phase in HOOK_PHASES[: HOOK_PHASES.index(call.phase)]:  # its saver saved nothing
        entry = call.profile.hooks.get(phase)
        if entry is not None and isinstance(entry.config, HttpConfig):
            for name in set(entry.config.save) - set(saved):
                unavailable.setdefault(
                    name,
                    f"has no value: {phase}, which saves it, did not save it in this "
                    "scenario run (it failed, or did not run: see its record)",
                )
    if call.scenario_run is not None:  # saved in an earlier invocation, held a secret
        for name, phase in res.scenario_lost.get(call.scenario_run.key, {}).items():
            if name not in saved:
                unavailable[name] = (
                    f"was saved by {phase} in an earlier invocation, but it holds a secret, "
                    "so Rook kept it in memory only and it is gone now: run the phases "
                    f"from {phase} to {call.phase} in one rook run (not split by --phases), "
                    "or save a value that holds no secret"
                )
    why = None
    if call.conversation is None and call.scenario_run is not None:
        why = res.scenario_no_handle.get(call.scenario_run.key)
        if why is None and call.recorded:  # open ran in an earlier invocation: its record
            why = open_said(call.recorded) or None
    return Scope(
        values=values,
        unavailable=unavailable,
        env=call.env,
        saved_names=sorted(saved),
        no_handle=why,
    )


async def ensure_prepared(
    call: HookCall, res: HttpResources, deadline: float, result: HookResult
) -> None:
    """Re-send prepare when this phase needs a value it saved in an earlier process."""
    config: HttpConfig = call.entry.config
    have = set(call.run.saved) | set(scenario_saved(call, res))
    missing = [n for n in config.names if n not in have]
    prep = call.run.profile.hooks.get("prepare")
    if not missing or call.phase == "prepare" or prep is None or prep.transport != KEY:
        return
    if not set(missing) & set(prep.config.save):
        return
    async with res.prepare_lock:
        if res.prepare_done:
            return
        sub = HookResult("prepare", "ok", transport=KEY)
        sub.details["attempts"] = []
        result.details["prepare_rerun"] = {
            "why": (
                f"{', '.join(missing)} saved by prepare in an earlier invocation and kept "
                "in memory only"
            ),
            "attempts": sub.details["attempts"],
        }
        pcall = dataclasses.replace(
            call,
            phase="prepare",
            entry=prep,
            scenario_run=None,
            turn=None,
            stdin=None,
            conversation=None,
            session=None,
            state_dir=call.run.state_dir,
            on_exit=None,
        )
        try:
            await exchange(pcall, res, sub, deadline)
        except HookError as exc:
            raise HookError(
                f"prepare was sent again (this invocation needs {', '.join(missing)}, which it "
                f"saved in an earlier invocation and Rook keeps only in memory) and failed: {exc}"
            ) from None


# -- one request -----------------------------------------------------------------


def _param(value: Any, top: bool = True) -> Any:
    """A query value as text: a list's items each so, its nulls left out (as a null
    value is), a number as written (``v: 1.10`` is ``1.10``, never ``1.1``), an object
    or a list in it as JSON, never as Python's text of it."""
    if isinstance(value, list) and top:
        return [_param(v, top=False) for v in value if v is not None]
    return as_text(value)


PREPARE_COOKIES = "http: the cookies prepare's responses set"
"""Where in ``run.saved`` prepare leaves its cookies, as a list: a key no placeholder
names, shipped with prepare's saved values to a scenario run on another process (a
Dask worker), whose transport starts afresh without :attr:`HttpResources.run_cookies`."""


def protect_cookies(call: HookCall, res: HttpResources) -> None:
    """Make the cookies prepare's responses set secrets, as the values it saves are:
    a sign-in's session cookie is a credential Rook sends with every request, and an
    agent that echoes it shows ``[redacted:cookie_NAME]``. A value that reads as words
    (:func:`_reads_as_words`: ``theme=dark``, ``logged_in=true``) is no credential,
    and would make every ``dark`` and ``true`` of every record a marker; nor is a
    number of up to 10 digits (a year, a count, a Unix time: ``year=2024``) under a
    name that is not a credential's or a session's (``sessionid=4821395713`` is one)."""
    for cookie in res.run_cookies.jar:
        value = (cookie.value or "").strip('"')
        if _reads_as_words(value) or _plain_number_cookie(cookie.name, value):
            continue
        protect(call, res, "cookie_" + _NOT_WORD.sub("_", cookie.name), cookie.value or "")


_NOT_WORD = re.compile(r"[^A-Za-z0-9_]")
_SESSION_NAME = re.compile(r"sess|sid|csrf|xsrf|otp", re.I)


def _plain_number_cookie(name: str, value: str) -> bool:
    """Whether a cookie is a plain number of up to 10 digits under a name that names
    no credential nor session (``year=2024``, ``visits=1234``, ``seen=1765101234``)."""
    from rook_core.credentials import secret_name

    return (
        re.fullmatch(r"\d{1,10}", value) is not None
        and not secret_name(name)
        and not _SESSION_NAME.search(name)
    )


def _cookies(call: HookCall, res: HttpResources) -> httpx.Cookies:
    """The cookies this call sends and keeps: its scenario run's own, which begin as
    those prepare's responses set (a sign-in's session cookie); prepare's for prepare."""
    if call.phase == "prepare" or call.scenario_run is None:
        return res.run_cookies
    key = call.scenario_run.key
    if key not in res.scenario_cookies:
        jar = res.scenario_cookies[key] = new_cookies(res.run_cookies)
        for cookie in call.run.saved.get(PREPARE_COOKIES, ()):
            jar.jar.set_cookie(cookie)
    return res.scenario_cookies[key]


def _build(call: HookCall, config: HttpConfig, scope: Scope) -> Request:
    try:
        url = scope.render_url(config.url)
        headers = scope.render(config.headers, "headers")
        query = scope.render(config.query, "query")
        body = scope.render(config.body, "body") if config.has_body else None
        form = scope.render(config.form, "form") if config.form is not None else None
        auth = scope.render(config.auth, "auth") if config.auth is not None else None
    except TemplateError as exc:
        raise HookError(str(exc)) from None
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise HookError(f"url: must become an http:// or https:// URL, got {preview(url, 200)}")
    problem = url_problem(url)
    if problem:
        raise HookError(f"url: {problem}: {shown(url)!r}")
    headers = {k: as_text(v) for k, v in headers.items() if v is not None}
    for k, v in headers.items():
        problem = header_problem(k, v)
        if problem:
            raise HookError(f"headers.{k}: {problem}")
    if config.stream == "sse" and not any(k.lower() == "accept" for k in headers):
        headers["Accept"] = "text/event-stream"
    params = {k: _param(v) for k, v in query.items() if v is not None}
    req = Request(config.method, url, headers, params, sse=config.stream == "sse")
    if auth is not None:
        req.digest = (as_text(auth["digest"]["username"]), as_text(auth["digest"]["password"]))
    if config.has_body:
        if isinstance(body, str):
            req.content = body
        else:
            req.json, req.has_json = body, True
    elif form is not None:
        # a list is one field per item, as a query list is one parameter per item
        req.form = {
            k: [as_text(i) for i in v if i is not None] if isinstance(v, list) else as_text(v)
            for k, v in form.items()
            if v is not None
        }
    return req


async def exchange(
    call: HookCall,
    res: HttpResources,
    result: HookResult,
    deadline: float,
    begun: list[Reply] | None = None,
) -> None:
    """Send this phase's request and fill ``result.data``; raises :class:`HookError`.
    ``begun``: the reply as soon as its headers came (see :func:`client.send`)."""
    config: HttpConfig = call.entry.config
    await ensure_prepared(call, res, deadline, result)
    scope = scope_for(call, res)
    req = _build(call, config, scope)
    req.cookies = _cookies(call, res)
    for _, name, value in scope.used:
        if name.startswith("env.") and is_secret_variable(call, name[4:]):
            protect(call, res, name[4:], value)
    red = redactor(call, res)
    remaining = max(0.001, deadline - time.monotonic())
    try:
        client = res.client(config.verify_tls)
        reply = await send(
            client,
            req,
            retries=config.retries,
            backoff_seconds=config.backoff_seconds,
            attempt_timeout=min(config.timeout_seconds or remaining, remaining),
            deadline=deadline,
            cap=call.limits.stdout_bytes,
            attempts=result.details["attempts"],
            redact=red.text,
            begun=begun,
        )
    except SendError as exc:
        raise HookError(str(exc)) from None
    shown = f"{req.method} {req.shown_url(red.text)}"
    http = _response_details(reply)
    result.details["http"] = http
    try:
        doc = _document(reply, red)
    except StreamError as exc:  # prepare's stream carries credentials: its shape only
        raise HookError(f"{shown}: {exc.shaped if call.phase == 'prepare' else exc}") from None
    if isinstance(doc, str) and reply.binary():
        doc = f"<{len(reply.body)} bytes of {reply.content_type or 'binary data'}>"
        if call.phase == "execute" and 200 <= reply.status < 300:
            what = f"{reply.content_type or 'no content type'}, {len(reply.body)} bytes"
            if looks_utf16(reply.body[:64].decode("utf-8", "replace")):
                raise HookError(
                    f"{shown}: the response is UTF-16 text ({what}), which Rook reads only "
                    "as text labelled so (Content-Type: text/plain; charset=utf-16; JSON is "
                    "always UTF-8): have the server answer in UTF-8"
                )
            raise HookError(
                f"{shown}: the response is binary ({what}), not text or JSON: no answer to judge"
            )
    if call.phase != "prepare" and doc is not None:
        http["response"] = preview(doc, RECORD_CHARS, red)
    if reply.events is not None and not reply.stream_done:
        problem = cut_short(doc, len(reply.events), reply.cut_mid_event)
        if problem:
            raise HookError(f"{shown}: {problem}")
    elif reply.events == [] and call.phase == "execute":  # as an empty body is no answer
        raise HookError(
            f"{shown}: the event stream held no event, only data: [DONE]: no answer to judge"
        )
    method, url = shown.split(" ", 1)
    if reply.status in (401, 403):
        literal = [
            h
            for h, v in config.headers.items()
            if h.lower() in CREDENTIAL_HEADERS and "{{" not in str(v)
        ]
        cut = config.url.find("?")  # placeholders in the query the url itself writes
        in_query = {n for _, n in placeholders(config.url[cut:])} if cut >= 0 else set()
        raise HookError(
            auth_failure(
                method,
                url,
                reply,
                doc,
                call.phase,
                scope.used,
                literal,
                in_query,
                digest=config.auth is not None,
            )
        )
    if not 200 <= reply.status < 300:
        location = reply.headers.get("location") if 300 <= reply.status < 400 else None
        if location:  # where it points, resolved, for rook profile add and fix to correct
            http["location"] = (
                mask_query(red.text(urljoin(req.url, location)))  # a sign-in's: ?code=...
                if call.phase == "prepare"
                else mask_url(red.text(urljoin(req.url, location)), keep=REDACTED_MARK)
            )
        raise HookError(status_failure(method, url, reply, doc, call.phase, _timeout_setting(call)))
    used = call.phase in ("execute", "collect") or config.extract is not None or config.save
    problem = json_problem(reply, doc) if used and not reply.binary() else None
    if problem:
        raise HookError(f"{shown}: {problem}; response {received(reply, doc, call.phase)}")
    try:
        values = saved_values(doc, config, reply.headers, call.phase == "prepare")
        data = (
            {}
            if call.phase == "prepare"
            else extract(doc, config, call.phase, call.conversation, reply.headers)
        )
    except ExtractError as exc:
        raise HookError(f"{exc}; response {received(reply, doc, call.phase)}") from None
    if call.phase == "prepare":
        res.prepare_done = True
        call.run.saved[PREPARE_COOKIES] = list(res.run_cookies.jar)
        protect_cookies(call, res)
    if call.phase == "execute" and is_no_handle(data.get("conversation")) and call.conversation:
        data["conversation"] = call.conversation  # the turn continued the open conversation
    elif (
        call.phase in ("open", "execute")
        and is_no_handle(data.get("conversation"))
        and asks_handle(call)
    ):
        why = no_handle(doc, config, reply.headers)  # a stopped scenario's reason says it
        if why:
            result.details["no_handle"] = why
            if call.phase == "open" and call.scenario_run is not None:  # and execute's url
                res.scenario_no_handle[call.scenario_run.key] = f"open's {why}"
    kept = keep(call, res, values)
    if kept:
        result.details["saved"] = kept
    result.data = {"saved": sorted(values)} if call.phase == "prepare" else data


def _response_details(reply: Reply) -> dict[str, Any]:
    http: dict[str, Any] = {"status": reply.status, "content_type": reply.content_type}
    if reply.events is not None:
        http["stream"] = {"events": len(reply.events), "done": reply.stream_done}
    if reply.notes:
        http["notes"] = reply.notes
    return http


def _document(reply: Reply, red: Redactor, stopped: bool = False) -> Any:
    """The response as :func:`document` reads it; raises :class:`StreamError`.
    ``stopped``: the stream was cut off (the hook's timeout, the cap), so a
    secret's beginning at the end of its text is masked too."""
    doc = document(reply)
    if not red or reply.events is None:
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("events"), list):
        by_event = doc.get("by_event")  # each name's events again, on their own
        named = list(by_event.values()) if isinstance(by_event, dict) else []
        for stream in [doc, *named]:
            if isinstance(stream, dict) and isinstance(stream.get("events"), list):
                _mask_across(stream["events"], red, stopped)
                if stopped and isinstance(stream.get("text"), str):
                    stream["text"] = red.cut_short(stream["text"])
    elif stopped:  # an assembled chat answer: each of its texts stopped there
        stack = [doc]
        while stack:
            item = stack.pop()
            places = item.items() if isinstance(item, dict) else enumerate(item)
            for key, value in list(places):
                if isinstance(value, str):
                    item[key] = red.cut_short(value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
    return doc


def _mask_across(events: list[Any], red: Redactor, stopped: bool = False) -> None:
    """Mask, in place, each share of a secret split between events. The strings
    at one place of the events (the text events themselves; each JSON event's
    ``delta.text``, ``choices[0].delta.content`` ...) are pieces of one text: a
    secret split between two is found only in their join, so each keeps no
    share of it (:meth:`Redactor.pieces`). ``stopped``: the text stops where the
    stream was cut off, so a secret's beginning at its end is masked too."""
    streams: dict[tuple[Any, ...], list[tuple[Any, Any]]] = {}
    stack: list[tuple[tuple[Any, ...], Any, Any]] = [((), events, i) for i in range(len(events))]
    stack.reverse()
    while stack:  # each string with its place in its event, the events in order
        path, holder, key = stack.pop()
        value = holder[key]
        if isinstance(value, str):
            streams.setdefault(path, []).append((holder, key))
        elif isinstance(value, (dict, list)):
            keys = list(value) if isinstance(value, dict) else range(len(value))
            stack += [((*path, k), value, k) for k in reversed(keys)]
    for places in streams.values():
        came = [holder[key] for holder, key in places]
        texts = _masked_end(came, red) if stopped else came
        if len(places) > 1 or stopped:
            for (holder, key), was, text, masked in zip(
                places, came, texts, red.pieces(texts), strict=True
            ):
                # a secret whole in one string is left to the record's redaction, as in
                # a plain JSON answer: what is read from it (a conversation handle, a
                # saved value) is sent on as it came within the run
                if masked != was and (text != was or masked != red.text(was)):
                    holder[key] = masked


def _masked_end(texts: list[str], red: Redactor) -> list[str]:
    """``texts``, pieces of one text cut off where it ends, with what
    :meth:`Redactor.cut_short` masks at its end (a secret's beginning) replaced
    by the marker in the first piece that holds a share of it, and taken out
    of the pieces after it."""
    cut, names = red.tail_cut("".join(texts))
    if not names:
        return texts
    out, start = [], 0
    for text in texts:
        end = start + len(text)
        if end <= cut:
            out.append(text)
        elif start <= cut:
            out.append(text[: cut - start] + "".join(f"{REDACTED_MARK}{n}]" for n in names))
        else:
            out.append("")
        start = end
    return out


def _keep_begun(call: HookCall, result: HookResult, reply: Reply, red: Redactor) -> None:
    """A response cut off by the hook's timeout, an attempt's or the cap keeps what
    had come, as one read whole does: its status and, for an event stream, the
    events read, for a plain body its bytes read (prepare's, which carry
    credentials: their count only)."""
    http = _response_details(reply)
    if reply.events and call.phase != "prepare":
        try:
            http["response"] = preview(_document(reply, red, stopped=True), RECORD_CHARS, red)
        except StreamError:  # an error event: the diagnosis says what it said
            pass
    elif reply.read and not reply.body and call.phase != "prepare":
        reply.body = b"".join(reply.read)
        text = (  # it stops where the server went on: a secret's beginning is masked too
            f"<{len(reply.body)} bytes of {reply.content_type or 'binary data'}>"
            if reply.binary()
            else red.cut_short(reply.text())
        )
        http["response"] = preview(text, RECORD_CHARS, red)
    result.details["http"] = http


def _scenario_capped(call: HookCall) -> bool:
    """Whether a scenario's ``timeout_seconds`` gave this call less time than its entry
    (it caps each execute turn), as the script transport tells it."""
    return call.timeout < call.entry.timeout


def _timeout_setting(call: HookCall) -> str:
    """The setting to raise for more time: the scenario's, when it capped the call."""
    if _scenario_capped(call):
        return f"the scenario's timeout_seconds ({call.timeout:g} s)"
    return "the hook entry's timeout_seconds"


async def run_http(call: HookCall) -> HookResult:
    """Run one phase of an ``http:`` entry and return its :class:`HookResult`."""
    res = resources(call)
    result = HookResult(call.phase, "ok", started=time.time(), turn=call.turn, transport=KEY)
    result.details["attempts"] = []
    t0 = time.monotonic()
    deadline = t0 + call.timeout
    begun: list[Reply] = []
    try:
        await asyncio.wait_for(exchange(call, res, result, deadline, begun), timeout=call.timeout)
    except asyncio.CancelledError as exc:  # the run interrupted: keep what had come
        red = redactor(call, res)
        if begun and "http" not in result.details:
            _keep_begun(call, result, begun[-1], red)
        keep_cut_off_output(  # no process runs for it: the request is what stopped
            exc,
            details=red.data(result.details),
            diagnosis="interrupted; its request was cancelled",
        )
        raise
    except asyncio.TimeoutError:
        result.status = "timeout"
        # its headers came: an error's body still coming?
        coming = still_coming(begun[-1] if begun else None)
        result.diagnosis = (
            f"timed out after {call.timeout:g} s "
            f"({counted(len(result.details['attempts']), 'attempt')}){coming}; "
            + (
                f"the scenario's timeout_seconds ({call.timeout:g} s) ran out first: "
                "raise it if the endpoint is this slow"
                if _scenario_capped(call)
                else "raise timeout_seconds on the hook entry if the endpoint is this slow"
                + call.entry.floor_note()
            )
        )
    except HookError as exc:
        late = time.monotonic() >= deadline - 0.05
        result.status = "timeout" if late else "failed"
        result.diagnosis = (f"timed out after {call.timeout:g} s: " if late else "") + str(exc)
        if late:
            result.diagnosis += call.entry.floor_note()
    result.ended = time.time()
    result.seconds = round(time.monotonic() - t0, 6)
    red = redactor(call, res)
    if begun and "http" not in result.details:  # cut off while its response came
        _keep_begun(call, result, begun[-1], red)
    if result.diagnosis:
        result.diagnosis = red.text(result.diagnosis)
    result.details = red.data(result.details)
    return result
