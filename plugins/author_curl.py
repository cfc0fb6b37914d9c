"""Built-in author: a cURL command -> an ``http:`` hook entry (no script needed).

The command is read as curl reads it (:mod:`rook_plugins.curl_command`): the
flags that shape a request, ``-X``, ``-H``, ``-d``/``--data``/``--data-raw``/
``--data-binary``/``--data-urlencode``, ``--json``, ``-u``, ``--url``, ``-G``,
``-b``, ``-A``, ``-e``, ``-k``, ``-m`` (the hook's ``timeout_seconds``: the
whole call, as curl's ``--max-time``) and the URL's query string, a body or
headers in a file (``-d @body.json``, ``-H @headers.txt``) as curl reads them;
every other flag is read past (with its value, when it takes one). This module
writes the entry: ``{{goal}}`` goes where the sample message was; credentials
move to ``env`` references.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote_plus, urlsplit, urlunsplit

from rook_core.credentials import secret_name, secret_value
from rook_core.errors import ConfigError
from rook_core.hookio import whole_characters
from rook_core.models import DEFAULT_TIMEOUTS, ROOK_VARIABLES

from .author_http import (
    DROP_HEADERS,
    FORM_NOTE,
    GOAL_GIVEN,
    GOAL_WRITTEN,
    PLACEHOLDER_ENV,
    HttpAuthor,
    _chat_message,
    _named,
    basic_header,
    declare_references,
    move_header_secrets,
    move_path_secrets,
    move_value_secrets,
    place_goal,
    split_userinfo,
    where_of,
)
from .curl_command import (
    CMD_PROMPT,
    ENV_REF,
    Curl,
    parse_curl,
    urlencode_piece,
    words,
)

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Secrets, Source

GOAL = "{{goal}}"


FORM_PAIRS = re.compile(r"[^=&\s]+=[^&]*(&[^=&\s]+=[^&]*)*")


def _body(c: Curl) -> tuple[str, Any]:
    """``("json", value)``, ``("form", mapping)``, ``("text", str)``, ``("encoded",
    [(name, content), ...])`` (``--data-urlencode`` pieces, one with no name) or
    ``("none", None)``."""
    if c.urlencode:  # curl joins every data piece with &: -d pairs are fields too
        pieces: list[tuple[str, str]] = []
        for raw in c.data:
            if not FORM_PAIRS.fullmatch(raw):
                raise ConfigError(  # the piece is not shown: it may hold a secret
                    "the cURL command mixes --data-urlencode with a -d/--data piece that "
                    "is not name=value pairs; send the body one way"
                )
            pieces += parse_qsl(raw, keep_blank_values=True)
        pieces += [urlencode_piece(piece) for piece in c.urlencode]
        if all(name for name, _ in pieces):
            return "form", fields_of(pieces)
        return "encoded", pieces  # a piece with no name: its content alone, encoded
    if not c.data:
        return "none", None
    raw = "&".join(c.data)
    try:
        return "json", json.loads(raw)
    except ValueError:
        pass
    ctype = next((v for k, v in c.headers if k.lower() == "content-type"), "")
    joined = (  # -d '{"a": 1}' -d '{"b": 2}': curl sends {"a": 1}&{"b": 2}
        f" (curl joins its {len(c.data)} -d/--data/--json pieces with &: give the body once)"
        if len(c.data) > 1
        else ""
    )
    if "json" in ctype.lower() or c.json:
        raise ConfigError(  # the body is not shown: it may hold a secret not yet recognised
            "the cURL body is declared as JSON (Content-Type or --json) but is not valid JSON"
            + joined
        )
    if joined and any(_json_piece(piece) for piece in c.data):  # no type said: still no body
        raise ConfigError(  # to replace whole with the goal, nor a form
            "the cURL body has a JSON object or list among its pieces, but is no JSON" + joined
        )
    if FORM_PAIRS.fullmatch(raw):
        return "form", fields_of(parse_qsl(raw, keep_blank_values=True))
    return "text", raw


def _json_piece(piece: str) -> bool:
    """Whether a -d piece is a JSON object or list on its own."""
    if not piece.lstrip().startswith(("{", "[")):
        return False
    try:
        return isinstance(json.loads(piece), (dict, list))
    except ValueError:
        return False


def fields_of(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``name=value`` pairs as a mapping; a name given more than once holds the list
    of its values, which an ``http:`` entry sends once per item, as curl does."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name not in out:
            out[name] = value
        elif isinstance(out[name], list):
            out[name].append(value)
        else:
            out[name] = [out[name], value]
    return out


def _encoded(pieces: list[tuple[str, str]], secrets: Any, where: str) -> tuple[str, str | None]:
    """``--data-urlencode`` pieces, one with no name, -> the body text curl sends
    (``name=encoded&encoded``), secrets moved to ``env`` and ``{{goal}}`` in the
    sample message's place (a named field first, else the longest content alone)."""
    named = move_value_secrets({n: v for n, v in pieces if n}, secrets, where, "form field")
    alone = []  # the contents with no name: a key-shaped one moves to env too
    for name, value in pieces:
        if not name:
            if "{{" not in value and secret_value(value):
                var = secrets.add("API_KEY", f"a --data-urlencode piece for {where}", value)
                value = f"{{{{env.{var}}}}}"
            alone.append(value)
    named, spot = place_goal(named)
    placed = f"form field {spot}" if spot else None
    if placed is None and alone:
        i = max(range(len(alone)), key=lambda k: len(alone[k]) if "{{" not in alone[k] else -1)
        if "{{" not in alone[i]:
            alone[i], placed = GOAL, "the --data-urlencode piece with no name"

    def enc(text: str) -> str:  # a reference is filled in when the request is sent
        return text if "{{" in text else quote_plus(text)

    rest = iter(alone)
    parts = [f"{quote_plus(n)}={enc(named[n])}" if n else enc(next(rest)) for n, _ in pieces]
    return "&".join(parts), placed


def no_variable_names(entry: dict[str, Any]) -> None:
    """Refuse a ``$NAME`` in a form field's or query parameter's name: an ``http:``
    entry fills in placeholders in values only, so the agent would get the literal
    ``{{env.NAME}}`` as the name (a JSON body's keys are kept as written)."""
    places = [(f"the {k} form field", k) for k in entry.get("form") or {}]
    places += [(f"the {k} query parameter", k) for k in entry.get("query") or {}]
    for where, name in places:
        found = PLACEHOLDER_ENV.search(name) or ENV_REF.search(name)
        if found is None:
            continue
        var = next(g for g in found.groups() if g)
        shown = PLACEHOLDER_ENV.sub(r"$\1", where)
        raise ConfigError(
            f"the cURL command has ${var} in the name of {shown}: an http: entry fills in "
            "values, not names; write the name itself there. Nothing written"
        )


def written_once(entry: dict[str, Any], secrets: Any) -> None:
    """Refuse an entry that still holds a secret's value written out: the value of
    a ``$NAME`` the command refers to (read from the environment) in a field that
    is not key-shaped, or a moved secret also in the URL's path. The profile would
    hold it; the message names the variable and where, never the value."""
    parts: list[tuple[str, Any]] = [("the URL", entry["url"])]
    for part, what in (("headers", "header"), ("query", "query parameter"), ("form", "form field")):
        parts += [(f"the {k} {what}", f"{k}: {v}") for k, v in (entry.get(part) or {}).items()]
    if "body" in entry:
        parts.append(("the body", entry["body"]))
    for where, value in parts:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        var = secrets.holder(text) or secrets.holder(str(value))
        if var is None:
            continue
        if var in secrets.values:
            raise ConfigError(
                f"the cURL command: the secret moved to {var} is also written out in {where}; "
                f"nothing written. Put it in an environment variable (export {var}=...) and "
                f"write ${var} in every place"
            )
        raise ConfigError(
            f"the cURL command: the value of ${var} (set in your environment) is also "
            f"written out in {where}; write ${var} there too. Nothing written"
        )


class _Ref(str):
    """A ``{{env.NAME}}`` of the command standing alone as a body value, marked for
    :func:`goal_for_variable` as the text ``NAME`` (which the message finders take as
    a sample), told apart from any text of the body by its type alone."""


def goal_for_variable(body: Any, c: Curl) -> tuple[Any, str, str] | None:
    """Where the message goes (the last user message of a chat, a field named
    ``prompt``, ``message`` ...), a value that is a ``$NAME`` of the command and no
    more (``"prompt": "'"$PROMPT"'"``, ``-d message=$MESSAGE``), ``NAME`` not named
    like a credential: docs' scripts put the message in a variable. Returns the body
    with ``{{goal}}`` there, the variable and where; ``None`` when there is none."""
    if not isinstance(body, (dict, list)):
        return None

    def mark(item: Any) -> Any:  # each such reference as a sample text finders take
        if isinstance(item, dict):
            return {k: mark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [mark(v) for v in item]
        m = (
            re.fullmatch(r"\{\{env\.([A-Za-z_][A-Za-z0-9_]*)\}\}", item)
            if isinstance(item, str)
            else None
        )
        if m and m.group(1) in c.variables and not secret_name(m.group(1)):
            return _Ref(m.group(1))
        return item

    doc = mark(body)
    spot = (_chat_message(doc) if isinstance(doc, dict) else None) or _named(doc, ())
    if spot is None or not isinstance(spot[0][spot[1]], _Ref):
        return None
    parent, key, shown = spot
    name = str(parent[key])
    parent[key] = GOAL

    def unmark(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: unmark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [unmark(v) for v in item]
        if isinstance(item, _Ref):
            return f"{{{{env.{item}}}}}"
        return item

    return unmark(doc), name, shown


def cookie_header(c: Curl, secrets: Secrets, where: str, notes: list[str]) -> str:
    """The ``Cookie`` header of ``-b``: the files' cookies for the URL, then the
    ``name=value`` ones (as curl sends them), each moved to ``env``; the files'
    variable's purpose says what its value is, since the file is not read when Rook runs."""
    parts = []
    files = " and ".join(c.cookie_files)
    if c.jar:
        names = ", ".join(dict.fromkeys(name for name, _ in c.jar))
        purpose = (
            f"the cookies {files} holds for {where} ({names}), as curl sends them in the "
            "Cookie header: name=value pairs joined by '; '"
        )
        value = "; ".join(f"{name}={value}" for name, value in c.jar)
        parts.append(f"{{{{env.{secrets.add('COOKIE', purpose, value)}}}}}")
    elif c.cookie_files:
        notes.append(
            f"-b {files}: no cookie in it is for {where} (another host or path, expired, "
            "Secure over plain http, or a Set-Cookie: line without Domain=, which curl sends "
            "to an IP address only): none sent, as curl sends none"
        )
    if c.cookies:
        parts.append(
            move_header_secrets({"Cookie": "; ".join(c.cookies)}, secrets, where)["Cookie"]
        )
    return "; ".join(parts)


def curl_entry(c: Curl, request: AuthorRequest) -> tuple[dict[str, Any], list[str]]:
    """The ``http:`` entry for a parsed cURL command, and notes for the user."""
    notes: list[str] = []
    if c.form:
        raise ConfigError(
            "-F/--form (multipart upload) is not supported by http: entries; "
            "send the message as JSON or form data (-d) instead"
        )
    ctype = next((v for k, v in c.headers if k.lower() == "content-type"), "")
    if c.data and ctype.strip().lower().startswith("multipart/"):  # a browser's copy of -F
        raise ConfigError(
            "the cURL body is multipart (Content-Type: multipart/...), as a browser copies "
            "a form upload: not supported by http: entries; send the message as JSON or "
            "form data (-d) instead"
        )
    url, user, password = split_userinfo(c.url)
    if "{{env." in f"{user}:{password}":
        raise ConfigError(
            "the cURL URL's user:password holds a shell variable: an http: entry cannot "
            "base64 it when it runs; set NAME to the base64 of user:password (printf %s "
            "'user:password' | base64) and write -H 'Authorization: Basic $NAME' instead"
        )
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = fields_of(pairs)
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    if not url.startswith(("http://", "https://", "{{env.")):
        raise ConfigError(f"the cURL URL must start with http:// or https://, got {url[:60]!r}")
    secrets = request.secrets
    url = move_path_secrets(url, secrets)
    where = where_of(url)
    kind, body = _body(c)
    if kind == "json":
        fixed = whole_characters(body)
        if fixed != body:
            body = fixed
            notes.append(
                "the JSON body holds half of a character written as \\uXXXX alone (an emoji's "
                "\\ud83d without its other half), which no UTF-8 text can hold: written as "
                "U+FFFD (\ufffd); write both halves (\\ud83d\\ude00) or the character itself"
            )
    said = goal_for_variable(body, c) if kind in ("json", "form") else None
    in_query = said is None and kind in ("none", "form") and bool(query)
    if in_query:  # ?q=$QUERY
        said = goal_for_variable(query, c)
        query = said[0] if said is not None else query
    if said is not None:  # the message's variable: the goal goes there, no env needed
        written = [c.url, *(v for _, v in c.headers), *c.cookies, *c.data, *c.urlencode]
        if sum(w.count(f"{{{{env.{said[1]}}}}}") for w in written) == 1:
            del c.variables[said[1]]
    for var, place in c.variables.items():  # declared first: a moved secret never takes the name
        if var not in ROOK_VARIABLES:
            secrets.add("", f"${var} in your cURL command, {place} of {where}", variable=var)
        notes.append(f"${var} taken as the environment variable {var} ({place})")
    headers = {k: v for k, v in c.headers if k.lower() not in DROP_HEADERS}
    if not any(k.lower() == "cookie" for k in headers):  # -H 'Cookie: ...' replaces -b's
        cookie = cookie_header(c, secrets, where, notes)
        if cookie:
            headers["Cookie"] = cookie
    digest: dict[str, str] | None = None
    if c.challenge == "--digest" and (c.user is not None or user is not None):
        # answered by the entry's auth.digest: the user as written, the password to env
        name, pw = c.user.partition(":")[::2] if c.user is not None else (user, password)
        if not GOAL_WRITTEN.search(pw or "") and "{{" not in (pw or ""):
            purpose = f"Digest password of {name} for {where}"
            pw = f"{{{{env.{secrets.add('DIGEST_PASSWORD', purpose, pw or None)}}}}}"
        digest = {"username": str(name), "password": str(pw)}
    elif c.challenge and (c.user is not None or user is not None):
        notes.append(  # as Basic the password would go in clear to a server asking otherwise
            f"the cURL command's {c.challenge}: the user and password (-u, or in the URL) "
            f"are not sent: {c.challenge[2:]} authentication answers a challenge from the "
            "server on each request, which an http: entry cannot (as Basic the password "
            "would travel in clear); send them from a script hook"
        )
    elif c.user is not None:
        name, _, pw = c.user.partition(":")
        headers["Authorization"] = basic_header(name, pw, secrets, where)
    elif user is not None:
        headers["Authorization"] = basic_header(user, password or "", secrets, where)
    if c.anyauth and not c.challenge and (c.user is not None or user is not None):
        notes.append(  # curl asks the server first; an http: entry sends one header up front
            "the cURL command's --anyauth: Basic authentication is assumed (curl uses the "
            "scheme the server asks for; an http: entry sends the Authorization header on "
            "every request); if the server asks for digest, NTLM or Negotiate, send the "
            "user and password from a script hook"
        )
    if c.bearer:
        headers["Authorization"] = f"Bearer {c.bearer}"
    headers = move_header_secrets(headers, secrets, where)
    if said is not None and not in_query:
        body = said[0]
    if kind == "json" and isinstance(body, str):  # --json '"hello"': curl sends the quotes
        raise ConfigError(  # the body is not shown: it may hold a secret
            "the cURL body is a JSON string, not an object or a list: an http: entry sends "
            "a string body as text, so the agent would get the goal without the quotes "
            "curl sends, as text/plain; if the agent takes an object, send one (-d "
            '\'{"message": "..."}\'), else reach it with a hook script (--command, or '
            "--notes with an author agent). Nothing written"
        )
    entry: dict[str, Any] = {"url": url}
    method = c.method or ("GET" if c.get or kind == "none" else "POST")
    if c.get and kind == "encoded":
        raise ConfigError(
            "-G with a --data-urlencode piece that has no name: a query parameter needs "
            "one; name the piece (q@file, q=...)"
        )
    if c.get and kind == "form":  # -G: the data is the query (and its secrets too)
        items = [(k, i) for k, v in body.items() for i in (v if isinstance(v, list) else [v])]
        query = fields_of([*pairs, *items])
        kind, body = "none", None
    query = move_value_secrets(query, secrets, where, "query parameter")
    placed: str | None = None
    given = bool(GOAL_WRITTEN.search(str([body, query, headers, url])))  # {{goal}} written
    if kind in ("json", "text"):
        if isinstance(body, (dict, list)):  # a JSON array too: its objects' fields
            body = move_value_secrets({"body": body}, secrets, where, "field")["body"]
        body, placed = place_goal(body, given)
        placed = f"body ({placed})" if placed else None
    elif kind == "form":
        body = move_value_secrets(body, secrets, where, "form field")
        body, spot = place_goal(body, given)
        placed = f"form field {spot}" if spot else None
    elif kind == "encoded":
        body, placed = _encoded(body, secrets, where)
        kind = "text"
        if not any(k.lower() == "content-type" for k in headers):  # as curl sends it
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if placed:
            notes.append(
                "a --data-urlencode piece has no name, so the body is sent as text, as curl "
                "encodes it, and the goal goes in it as it is (not URL-encoded); name the "
                "piece (message@file, message=...) to make the body a form"
            )
    typed = any(k.lower() == "content-type" for k in headers)
    if kind in ("json", "text") and not c.json and not typed:  # -d with no type: as curl sends it
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        if kind == "json":
            notes.append(
                f"{FORM_NOTE}, so it is sent as "
                "curl sends it, application/x-www-form-urlencoded; if the agent expects "
                "JSON, add -H 'Content-Type: application/json' to the command"
            )
    if placed is None and query:
        query, spot = place_goal(query, given)
        placed = f"query parameter {spot}" if spot else None
    if given:
        placed = GOAL_GIVEN
    if placed is None:
        from rook_core.authoring import CannotAuthor

        raise CannotAuthor("the cURL command sends no message Rook could replace with the goal")
    if said is not None:
        part = (
            f"query parameter {said[2]}"
            if in_query or c.get
            else f"body ({said[2]})"
            if kind != "form"
            else f"form field {said[2]}"
        )
        notes.append(f"the goal goes where your command has ${said[1]}: {part}")
    else:
        notes.append(
            f"the goal goes {placed}"
            if given
            else f"the goal goes where your sample message was: {placed}"
        )

    def plain_type(k: str, v: str) -> bool:  # what httpx sets by itself
        own = {"json": "application/json", "form": "application/x-www-form-urlencoded"}
        return k.lower() == "content-type" and v.split(";")[0].strip().lower() == own.get(kind)

    headers = {k: v for k, v in headers.items() if not plain_type(k, v)}
    if method != ("POST" if kind != "none" else "GET"):
        entry["method"] = method
    if headers:
        entry["headers"] = headers
    if query:
        entry["query"] = query
    if kind in ("json", "text"):
        entry["body"] = body
    elif kind == "form":
        entry["form"] = body
    if digest is not None:
        entry["auth"] = {"digest": digest}
    no_variable_names(entry)
    declare_references(entry, secrets, where)
    written_once(entry, secrets)
    if c.insecure:
        entry["verify_tls"] = False
        notes.append(
            "the cURL command had -k: TLS certificates are NOT verified; remove "
            "verify_tls: false once the server has a certificate Rook can verify"
        )
    elif c.cacert:
        entry["verify_tls"] = c.cacert
    if c.left_out:
        notes.append(
            f"the cURL command's {', '.join(c.left_out)}: an http: entry cannot send them; "
            "left out (Rook reads a proxy from HTTPS_PROXY/HTTP_PROXY)"
        )
    return entry, notes


CURL_FIRST = re.compile(r'(?:[^\s"]*[/\\])?curl(?:\.exe)?\s|"[^"\n]*[/\\]curl(?:\.exe)?"\s', re.I)
"""The command's first word is curl: by name, by its path (``/usr/bin/curl``,
``C:\\tools\\curl.exe``) or by a quoted Windows path holding a blank."""


class CurlAuthor(HttpAuthor):
    """cURL command (a file, standard input, or a URL's body) -> ``http:`` entry."""

    def detect(self, source: Source) -> float:
        if source.kind not in ("file", "stdin"):
            return 0.0
        first = re.sub(r"^\s*(#[^\n]*\n\s*)*(\$\s+|PS [^>\n]*>\s*)?", "", source.text)
        first = CMD_PROMPT.sub("", first, count=1)  # C:\Users\me>curl.exe ...
        if not CURL_FIRST.match(first):
            return 0.0
        try:
            words(source.text)
        except ConfigError as exc:  # a cURL command, cut short or mis-quoted: say so
            if source.text.lstrip().startswith("#!"):  # a script: another author's
                return 0.0
            raise ConfigError(f"{source.label}: {exc}") from None
        return 1.0

    def suggest_name(self, source: Source) -> str | None:
        try:
            host = urlsplit(parse_curl(source.text).url).hostname or ""
        except ConfigError:
            return None
        labels = [x for x in host.split(".") if x not in ("api", "www")]
        if not labels or host.replace(".", "").isdigit() or host == "localhost":
            return None
        return labels[0]

    def write(self, request: AuthorRequest) -> Draft:
        from rook_core.authoring import Draft

        label = request.source.label
        try:
            c = parse_curl(request.source.text)
            entry, notes = curl_entry(c, request)
        except ConfigError as exc:  # named by its source, as every refusal of one is
            if type(exc) is not ConfigError or str(exc).startswith(f"{label}: "):
                raise
            raise ConfigError(f"{label}: {exc}") from None
        hook: dict[str, Any] = {"http": entry}
        if c.max_time:  # curl's -m bounds the whole call: the hook's timeout, retries and all
            whole = c.max_time.is_integer()  # -m 30 is written 30, not 30.0
            hook["timeout_seconds"] = int(c.max_time) if whole else c.max_time
        elif c.max_time == 0:
            notes.append(
                "-m 0 (no limit to curl): the hook keeps Rook's timeout "
                f"({DEFAULT_TIMEOUTS['execute']:g} s for execute; timeout_seconds to change it)"
            )
        return Draft(hooks={"execute": hook}, notes=notes, state={"kind": "curl"})
