"""Messages for failed HTTP hooks: what was sent, what came back, what to fix.

Every message passes the run's redactor; responses are shown truncated, and
the responses of prepare (token endpoints) only as their shape, never their
values, because they carry credentials Rook has not been told about.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rook_core.credentials import mask_query, mask_url
from rook_core.errors import counted
from rook_core.redact import MARK, Redactor, current

from .client import _SECONDS, Reply, retry_after
from .template import BUILTINS

SHOW_CHARS = 600
CREDENTIAL_FIELD = re.compile(r"(key|token|secret|passw|auth|credential|cookie|session)", re.I)
# WWW-Authenticate schemes that answer a challenge on each request: no fixed header sends them
CHALLENGE_SCHEMES = {"digest", "ntlm", "negotiate", "kerberos", "mutual", "hoba"}
_SCHEME = re.compile(r"(?:^|,)\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?=\s|,|$)")


def challenge_only(header: str) -> str | None:
    """The scheme a ``WWW-Authenticate`` header asks for when every scheme it offers
    answers a challenge (``Digest``, ``NTLM``...), else ``None``."""
    schemes = _SCHEME.findall(header)
    if schemes and all(s.lower() in CHALLENGE_SCHEMES for s in schemes):
        return schemes[0]
    return None


def preview(value: Any, limit: int = SHOW_CHARS, redactor: Redactor | None = None) -> str:
    """A value as compact text, redacted (the run's redactor unless one is
    given), then cut at ``limit`` characters, so no piece of a secret shows."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return (redactor or current()).head(text, limit, "... [{n} more chars]")


def shape(value: Any, depth: int = 0) -> Any:
    """The structure of ``value`` with every string replaced by its length and every
    number by ``<number>`` (a PIN, a one-time code: a sign-in's numbers are values too)."""
    if depth > 4:
        return "..."
    if isinstance(value, dict):
        return {k: shape(v, depth + 1) for k, v in list(value.items())[:30]}
    if isinstance(value, list):
        return [shape(v, depth + 1) for v in value[:3]] + (["..."] if len(value) > 3 else [])
    if isinstance(value, str):
        return f"<string, {len(value)} chars>"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "<number>"
    return value


def received(reply: Reply, document: Any, phase: str) -> str:
    """``(HTTP 200, application/json): <body>`` for a failure message."""
    head = f"HTTP {reply.status} {reply.reason}".strip()
    kind = reply.content_type or "no content type"
    if phase == "prepare":
        return (
            f"({head}, {kind}); its shape (values hidden: prepare responses carry "
            f"credentials): {preview(shape(document))}"
        )
    body = document if document not in (None, "") else "(empty body)"
    if document in (None, "") and reply.body and not reply.body.strip():  # not empty: blank
        body = f"(blank body: {counted(len(reply.body), 'byte')} of whitespace only)"
    if document is None and reply.body.strip().lstrip(b"\xef\xbb\xbf") == b"null":
        body = "null"  # JSON's null, sent as such: no empty body
    return f"({head}, {kind}): {preview(body)}"


def credential_sources(
    used: list[tuple[str, str, Any]], url_query: set[str] | frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """Where the request carried credentials (``header Authorization from {{env.KEY}}``),
    and the placeholder names involved; ``url_query`` names the placeholders in the
    query the ``url`` itself writes (``?key={{env.KEY}}``)."""
    lines: list[str] = []
    names: list[str] = []
    for where, name, _ in used:
        section, _, rest = where.partition(".")
        if name in BUILTINS:
            continue
        if section == "headers":
            place = f"header {rest}"
        elif section == "query":
            place = f"query parameter {rest}"
        elif section in ("body", "form") and CREDENTIAL_FIELD.search(rest):
            place = f"{section} field {rest}"
        elif section == "url" and name in url_query:
            place = "the URL's query"
        elif section == "auth":  # auth.digest.password
            place = f"digest {rest.rpartition('.')[2]}"
        else:
            continue
        if name.startswith("env."):
            origin = f"{{{{{name}}}}} (environment variable {name[4:]})"
        else:
            origin = f"{{{{{name}}}}} (a value saved by an earlier phase, e.g. prepare's token)"
        line = f"{place} from {origin}"
        if line not in lines:
            lines.append(line)
        if name not in names:
            names.append(name)
    return lines, names


def auth_failure(
    method: str,
    url: str,
    reply: Reply,
    document: Any,
    phase: str,
    used: list[tuple[str, str, Any]],
    literal_headers: list[str],
    url_query: set[str] | frozenset[str] = frozenset(),
    digest: bool = False,
) -> str:
    """The diagnosis for a 401 or 403, naming the header and the variable involved
    (``digest``: the entry answers a Digest challenge, ``auth.digest``)."""
    what = "rejected the credentials" if reply.status == 401 else "refused access"
    msg = [f"authentication problem: {method} {url} {what} (HTTP {reply.status} {reply.reason})."]
    sources, names = credential_sources(used, url_query)
    challenge = reply.headers.get("www-authenticate")
    scheme = challenge_only(challenge) if challenge else None
    if scheme and not (digest and scheme.lower() == "digest"):
        if sources:
            msg.append("Credentials sent: " + "; ".join(sources) + ".")
        how = (
            "an http: entry answers it with auth: give the entry auth: {digest: {username: "
            "..., password: ...}}, each from {{env.NAME}}."
            if scheme.lower() == "digest"
            else "an http: entry sends fixed headers and cannot answer it: reach the agent "
            "from a script hook."
        )
        msg.append(
            f"The server asks for {scheme} authentication (WWW-Authenticate: {challenge}), "
            f"which answers a challenge from the server on each request; {how}"
        )
        msg.append("Response " + received(reply, document, phase))
        return " ".join(msg)
    if sources:
        msg.append("Credentials sent: " + "; ".join(sources) + ".")
        env_names = [n[4:] for n in names if n.startswith("env.")]
        saved = [n for n in names if not n.startswith("env.")]
        hints = []
        if env_names:
            hold = "holds a valid credential" if len(env_names) == 1 else "hold valid credentials"
            hints.append(f"that {', '.join(env_names)} {hold} for this endpoint")
        if saved:
            hints.append(
                f"that prepare saved the right value as {', '.join(saved)} and it has not expired"
            )
        if not digest:
            hints.append(
                "that the header's format is what the server expects (e.g. 'Bearer <token>')"
            )
        if hints:
            msg.append(
                "Check "
                + ", ".join(hints[:-1])
                + (" and " if len(hints) > 1 else "")
                + hints[-1]
                + "."
            )
    elif digest:
        msg.append(
            "The request answered the Digest challenge with the username and password "
            "auth.digest writes literally in the profile; check them, and take them from "
            "the environment instead: {{env.NAME}} with NAME listed under env:."
        )
    elif literal_headers:
        msg.append(
            f"The request sent {', '.join(literal_headers)} written literally in the profile; "
            "take the credential from the environment instead: 'Bearer {{env.TOKEN}}' with TOKEN "
            "listed under env:."
        )
    else:
        msg.append(
            "No header or query parameter carried a credential; add one, e.g. "
            "headers: {Authorization: 'Bearer {{env.TOKEN}}'} with TOKEN listed under env:."
        )
    if challenge:
        msg.append(f"The server asked for: WWW-Authenticate: {challenge}.")
    msg.append("Response " + received(reply, document, phase))
    return " ".join(msg)


def status_failure(
    method: str,
    url: str,
    reply: Reply,
    document: Any,
    phase: str,
    timeout_setting: str = "the hook entry's timeout_seconds",
) -> str:
    """The diagnosis for any other unsuccessful status; ``timeout_setting`` names the
    setting whose time ran out (a scenario's ``timeout_seconds`` caps execute)."""
    if reply.status == 304 or (300 <= reply.status < 400 and "location" not in reply.headers):
        why = (
            "Not Modified, which is no redirect: the answer to a conditional request "
            "(If-None-Match, If-Modified-Since); send none"
            if reply.status == 304
            else "with no Location: it points nowhere; put the URL that answers in the profile"
        )
        return f"{method} {url} answered HTTP {reply.status} {why}. Response " + received(
            reply, document, phase
        )
    if 300 <= reply.status < 400:
        where = reply.headers["location"]
        # as the URL sent; a sign-in's (prepare) carries credentials under any name
        where = mask_query(where) if phase == "prepare" else mask_url(where, keep=MARK)
        return (
            f"{method} {url} was redirected (HTTP {reply.status}) to {where}; "
            f"Rook does not follow redirects: put the final URL in the profile. "
            + "Response "
            + received(reply, document, phase)
        )
    tries = f" after {reply.attempts} attempts" if reply.attempts > 1 else ""
    wait = reply.headers.get("retry-after")
    hint = ""
    if wait and retry_after(wait) is None:  # neither seconds nor a date (inf): ignored
        wait = None
    if wait and _SECONDS.match(wait.strip()):  # a number of seconds, said with its unit
        wait = wait.strip()
        wait += " second" if wait == "1" else " seconds"
    if wait and (reply.status == 429 or reply.status >= 500):
        if reply.out_of_time:
            hint = (
                f" (the server asked to retry after {wait}, which would pass the hook's timeout; "
                f"raise {timeout_setting} to wait that long)"
            )
        else:  # every retry was spent, each after the wait the server asked for
            hint = (
                f" (the server {'still ' if reply.attempts > 1 else ''}asked to retry after "
                f"{wait}; raise the hook entry's retries to keep trying)"
            )
    return f"{method} {url} failed{tries}{hint}: response " + received(reply, document, phase)
