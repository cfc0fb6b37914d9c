"""Sending requests: one ``httpx.AsyncClient`` per run, retries, size caps.

One client per distinct ``verify_tls`` setting is created on first use and
kept for the whole run (``run.resources["http"]``), so connections are
reused across scenarios; an ``httpx.AsyncClient`` is safe to share between
the tasks of one event loop.

Retries: 429, 5xx and connection errors (refused, reset, timed out) are
retried up to ``retries`` times with exponential backoff and jitter; a
``Retry-After`` header sets the minimum wait. Other statuses are returned at
once. Every attempt is appended to ``attempts`` as it happens.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import os
import random
import re
import ssl
import time
import unicodedata
import urllib.parse
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx
from httpx_sse import EventSource

from rook_core import __version__, inflate
from rook_core.errors import counted, exception_text
from rook_core.plain import plain
from rook_core.redact import MARK as REDACTED_MARK
from rook_core.redact import marker_cut

MAX_BACKOFF = 30.0
RAISE_CAP = " (raise limits.stdout_bytes in the profile if this much output is expected)"
MAX_RETRY_AFTER = 7 * 24 * 3600.0
_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?\Z")
USER_AGENT = f"rook/{__version__} httpx/{httpx.__version__}"
RETRYABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
LOOPBACK_DIRECT = {"all://localhost": None, "all://127.0.0.1": None, "all://[::1]": None}
"""Mounts that reach this machine's own loopback directly, whatever proxy the
environment sets (``None``: the client's own transport, no proxy): a proxy
elsewhere cannot reach it, so an ``HTTP_PROXY`` set for a CI job would
otherwise stand between Rook and an agent running beside it."""


SHOWN_URL_CHARS = 1000
"""How much of a URL a message or an attempt's record shows: a long goal sent in
the query would otherwise be written whole into every attempt and diagnosis."""


def cut_url(url: str, limit: int = SHOWN_URL_CHARS) -> str:
    """``url`` (already redacted: no piece of a secret is left to cut) up to
    ``limit`` characters, a redaction marker at the cut left out whole (never
    ``[redac...``), then ``... (N characters)`` saying how long it was."""
    if len(url) <= limit:
        return url
    return f"{url[: marker_cut(url, limit)]}... ({len(url)} characters)"


_STRUCTURE = frozenset(b"%/?#&=+.")
"""Bytes whose percent-escape :func:`readable` keeps: decoded, they would change what
the URL says (a value's ``&`` or ``#`` read as a parameter or a fragment, its
encoded dot segments as ``..`` climbing the path, ``%2B`` as a space)."""
_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _shown_as_itself(char: str) -> bool:
    """Whether ``char`` prints as a character of its own: not a control or format
    character (C0, DEL, C1, U+202E, a zero-width space), a line or paragraph separator,
    nor blank space other than a space (a tab)."""
    return char == " " or not (char.isspace() or unicodedata.category(char)[0] in "CZ")


def readable(url: str) -> str:
    """``url`` with its percent-escapes decoded (a goal in another language, a
    quote, a space read as they are), but for the escapes of :data:`_STRUCTURE`,
    so that the URL shown still names the path and the parameters that were sent.
    A run of escapes that is not UTF-8 text stays as it is, and so does a character
    that would not show as itself (a line break, an escape sequence, a bidi control:
    :func:`_shown_as_itself`), which would split or reorder the line showing it.
    In the query a space is ``+``, as a form writes it (``?q=a+%26+b%3Dc``; a ``+``
    sent stays ``%2B``), so the URL shown holds no bare space."""

    def decode(m: re.Match[str]) -> str:
        out, pending = [], bytearray()

        def flush() -> None:
            if pending:
                try:
                    text = pending.decode("utf-8")
                except UnicodeDecodeError:
                    out.append("".join(f"%{b:02X}" for b in pending))
                else:
                    out.extend(
                        c if _shown_as_itself(c) else "".join(f"%{b:02X}" for b in c.encode())
                        for c in text
                    )
                pending.clear()

        for i in range(0, len(m.group()), 3):
            escape = m.group()[i : i + 3]
            byte = int(escape[1:], 16)
            if byte in _STRUCTURE:
                flush()
                out.append(escape)
            else:
                pending.append(byte)
        flush()
        return "".join(out)

    path, mark, query = url.partition("?")
    return _ESCAPES.sub(decode, path) + mark + _ESCAPES.sub(decode, query).replace(" ", "+")


class SendError(Exception):
    """The request could not be completed; the message is the diagnosis."""


@plain
class Request:
    method: str
    url: str
    headers: dict[str, str]
    params: dict[str, Any]
    json: Any = None
    has_json: bool = False
    content: str | None = None
    form: dict[str, Any] | None = None
    sse: bool = False
    digest: tuple[str, str] | None = None  # username, password: answers a Digest challenge
    cookies: httpx.Cookies | None = None  # the scenario run's (or prepare's): sent, then kept

    def shown_url(self, redact: Callable[[str], str], limit: int = SHOWN_URL_CHARS) -> str:
        """The full URL with its query as a message or record shows it:
        percent-decoded but for what gives it its shape (:func:`readable`), so it
        reads as the request that was sent; ``redact`` finds the env values in it
        (``[redacted:NAME]``) in any mix of encoded and plain characters; and then a password or credential parameter written into the URL itself
        (``bob:PW@``, ``?api_key=KEY``) shown as ``[hidden]``, as ``rook profile
        show`` does. Up to its query, the URL as written, not as httpx sends it
        (the host in lower case, no default port, ``./`` resolved): a secret base
        URL (``https://API.Example.com:443``) is found only as written. A URL over
        :data:`SHOWN_URL_CHARS` (a goal sent in the query) is cut to ``limit``: see
        :func:`cut_url`."""
        from rook_core.credentials import mask_url

        try:
            url = httpx.URL(self.url)  # its params merged only when it has some, as sent
            sent = url.copy_merge_params(self.params) if self.params else url
            query = sent.query.decode("ascii")
        except (httpx.InvalidURL, TypeError, ValueError, UnicodeDecodeError):
            return cut_url(mask_url(redact(readable(self.url)), keep=REDACTED_MARK), limit)
        written = self.url.split("#", 1)[0].split("?", 1)[0]
        full = f"{written}?{query}" if query else written
        return cut_url(mask_url(redact(readable(full)), keep=REDACTED_MARK), limit)


@plain
class Reply:
    status: int
    reason: str
    headers: httpx.Headers
    body: bytes = b""
    events: list[tuple[str, str]] | None = None  # (event, data) for an event stream
    stream_done: bool = False
    cut_mid_event: bool = False  # the stream ended with an event not finished
    attempts: int = 1
    out_of_time: bool = False  # retrying stopped: the next wait would pass the hook's timeout
    notes: list[str] = field(default_factory=list)
    read: list[bytes] = field(default_factory=list)  # a plain body's bytes as they came

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").partition(";")[0].strip().lower()

    def binary(self) -> bool:
        """The body is no text: an image, audio, video or font, or bytes holding NUL
        (which no text in its declared charset has)."""
        if self.content_type.partition("/")[0] in ("image", "audio", "video", "font"):
            return True
        return b"\0" in self.body and "\0" in self.text()  # UTF-16 text has NUL bytes

    def text(self) -> str:
        """The body as text, in the charset the ``Content-Type`` declares (else UTF-8).

        JSON is UTF-8 whatever its label says (RFC 8259: a ``charset`` has no
        effect on it; httpx's ``.json()`` reads it so), and a charset Python does
        not know as a text encoding (``base64``) is ignored. The body is decoded
        whole, so UTF-16 without a byte order mark is read as Python reads it."""
        charset = None if "json" in self.content_type else _charset(self.headers)
        if charset and self.body:
            try:
                return self.body.decode(charset, errors="replace")
            except LookupError:  # unknown, or not a text encoding
                pass
        return self.body.decode("utf-8", errors="replace")


_CHARSET = re.compile(r""";\s*charset\s*=\s*["']?([^"';\s]+)""", re.IGNORECASE)


def _charset(headers: Any) -> str | None:
    """The ``charset`` parameter of the ``Content-Type`` header, if any."""
    m = _CHARSET.search(headers.get("content-type", ""))
    return m.group(1) if m else None


def _loopback(netloc: str) -> bool:
    """Whether ``netloc`` (``host:port``) is this machine's loopback."""
    try:
        host = urllib.parse.urlsplit(f"//{netloc}").hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Policy(DefaultCookiePolicy):
    """The standard library's, but a ``Secure`` cookie also goes back over plain
    http to this machine's loopback (``localhost``, ``127.0.0.1``, ``[::1]``), a
    secure context where browsers send it too: an agent beside Rook sets its
    session cookie ``Secure`` (as ``SameSite=None`` requires) and serves http.
    And a loopback host's own ``Domain=localhost`` is kept and sent back, as
    browsers do: the standard library refuses a domain with no dot in it."""

    def return_ok_secure(self, cookie: Any, request: Any) -> bool:
        return super().return_ok_secure(cookie, request) or _loopback(request.host)

    def set_ok_domain(self, cookie: Any, request: Any) -> bool:
        return super().set_ok_domain(cookie, request) or _loopback_domain(cookie, request)

    def return_ok_domain(self, cookie: Any, request: Any) -> bool:
        return super().return_ok_domain(cookie, request) or _loopback_domain(cookie, request)


def _loopback_domain(cookie: Any, request: Any) -> bool:
    """Whether ``cookie``'s ``Domain`` has no dot (``localhost``) and names the
    loopback host of ``request`` (``localhost``) or a parent of it (``a.localhost``)."""
    domain = cookie.domain.lstrip(".").lower()
    try:
        host = (urllib.parse.urlsplit(f"//{request.host}").hostname or "").lower()
    except ValueError:
        return False
    return (
        bool(domain)
        and "." not in domain
        and _loopback(request.host)
        and (host == domain or host.endswith("." + domain))
    )


def new_cookies(start: httpx.Cookies | None = None) -> httpx.Cookies:
    """A scenario run's (or prepare's) cookies, beginning with ``start``'s."""
    jar = httpx.Cookies(CookieJar(_Policy()))
    for cookie in start.jar if start is not None else ():
        jar.jar.set_cookie(cookie)
    return jar


class HttpResources:
    """Per-run state of the HTTP transport, kept in ``run.resources["http"]``."""

    def __init__(self, concurrency: int = 1) -> None:
        self.concurrency = max(1, concurrency)
        self.clients: dict[Any, httpx.AsyncClient] = {}
        self.scenario_saved: dict[str, dict[str, Any]] = {}
        self.scenario_lost: dict[str, dict[str, str]] = {}  # kept in memory, gone since
        self.scenario_no_handle: dict[str, str] = {}  # why open gave none, by scenario run
        self.run_cookies = new_cookies()  # set by prepare's responses: every scenario's start
        self.scenario_cookies: dict[str, httpx.Cookies] = {}  # by scenario run
        self.redacted: set[tuple[str, str]] = set()
        self.prepare_done = False
        self._prepare_lock: asyncio.Lock | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (an executor may ship the run elsewhere): clients are made afresh there."""
        return {
            "concurrency": self.concurrency,
            "prepare_done": self.prepare_done,
            "scenario_saved": self.scenario_saved,
            "scenario_lost": self.scenario_lost,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["concurrency"])  # type: ignore[misc]
        self.prepare_done = state["prepare_done"]
        self.scenario_saved = state["scenario_saved"]
        self.scenario_lost = state.get("scenario_lost", {})

    def forget(self, key: str) -> None:
        """Let go of what scenario run ``key`` kept: its phases of this invocation are
        over (a later one reads its saved values from its state directory again)."""
        for kept in (
            self.scenario_saved,
            self.scenario_lost,
            self.scenario_no_handle,
            self.scenario_cookies,
        ):
            kept.pop(key, None)

    @property
    def prepare_lock(self) -> asyncio.Lock:
        if self._prepare_lock is None:
            self._prepare_lock = asyncio.Lock()
        return self._prepare_lock

    def client(self, verify: bool | str) -> httpx.AsyncClient:
        """The run's client for this TLS setting (created on first use)."""
        key = verify
        if key not in self.clients:
            tls: bool | ssl.SSLContext = False
            if verify is not False:  # a CA bundle, else certifi's (or SSL_CERT_FILE/_DIR)
                ctx = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else None
                tls = ctx = ctx or httpx.create_ssl_context()
                # Python 3.13 turned X.509 strict mode on by default: a private CA
                # that curl and Python 3.10-3.12 accept (basicConstraints not marked
                # critical) failed there only. Verified alike on every Python.
                ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
            size = max(10, self.concurrency * 2)
            try:
                self.clients[key] = httpx.AsyncClient(
                    verify=tls,
                    # a jar that keeps none: the client's cookies would go to every
                    # scenario run's requests; each keeps its own (Request.cookies)
                    cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
                    follow_redirects=False,
                    headers={"User-Agent": USER_AGENT},
                    limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
                    mounts=LOOPBACK_DIRECT,
                )
            except (ValueError, ImportError) as exc:  # a proxy URL httpx cannot use
                names = [n for v in PROXY_VARIABLES for n in (v, v.lower()) if os.environ.get(n)]
                raise SendError(
                    f"the proxy in {' or '.join(names) or 'the environment'} cannot be used: "
                    f"{str(exc).rstrip('.')}; correct that variable or unset it"
                ) from None
        return self.clients[key]

    async def aclose(self) -> None:
        clients, self.clients = list(self.clients.values()), {}
        for c in clients:
            await c.aclose()


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or HTTP date).

    Seconds are digits (RFC 9110; a decimal point is tolerated), so ``inf``,
    ``nan`` or ``1e400`` are no wait at all (ignored, like any other invalid
    value); a wait longer than :data:`MAX_RETRY_AFTER` counts as that long,
    so the record never holds a number JSON cannot write."""
    if not value:
        return None
    value = value.strip()
    if _SECONDS.match(value):
        return min(MAX_RETRY_AFTER, float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return min(MAX_RETRY_AFTER, max(0.0, when.timestamp() - time.time()))


def backoff(attempt: int, base: float) -> float:
    """Exponential backoff with jitter: between half and all of ``base * 2**(n-1)``."""
    ceiling = min(MAX_BACKOFF, base * (2 ** (attempt - 1)))
    return random.uniform(ceiling / 2, ceiling)


def _tls_failure(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        if "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


NO_TLS_REASONS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"}
"""OpenSSL's reasons when what came back to a TLS hello was no TLS (plain HTTP)."""


def _no_tls_answer(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError) and getattr(seen, "reason", None) in NO_TLS_REASONS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _tls_advice(exc: BaseException, req: Request, redact: Callable[[str], str]) -> str:
    """What to do about a certificate Rook does not accept: trust the CA that signed
    it, unless it was trusted and names another host (a CA bundle cannot help then)."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError) and seen.verify_code in (62, 64):
            # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
            host = redact(httpx.URL(req.url).host)
            return (
                f"the certificate does not name {host}: put a host name or address it names "
                "(its subjectAltName) in the url, or give the server a certificate for "
                f"{host} (or, for a test server only, verify_tls: false)"
            )
        seen = seen.__cause__ or seen.__context__
    return (
        "give verify_tls the path of the CA bundle that signed it (or, for a test "
        "server only, verify_tls: false)"
    )


def _network_text(exc: BaseException) -> str:
    """``exc`` as ``Type: message``, with the system's reason when httpx's own text
    leaves it out (a bare ``ReadError`` for a reset, "All connection attempts
    failed" for a refusal): ``ReadError (Connection reset by peer)``. A resolver's
    or TLS error says it in its own words already."""
    text = exception_text(exc)
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, ConnectionError) and seen.errno:  # refused, reset, aborted
            reason = os.strerror(seen.errno)
            return text if reason.lower() in text.lower() else f"{text} ({reason})"
        seen = seen.__cause__ or seen.__context__
    return text


def _unknown_encoding(resp: httpx.Response) -> str | None:
    """Why the body cannot be read: a ``Content-Encoding`` httpx has no decoder for.

    httpx hands such a body over still encoded (``br`` without the brotli
    package, ``compress``, ...), and those bytes would be judged as the answer."""
    known = getattr(httpx._decoders, "SUPPORTED_DECODERS", {"identity", "gzip", "deflate"})
    names = [v.strip().lower() for v in resp.headers.get_list("content-encoding", True)]
    unknown = [n for n in names if n and n not in known]
    if not unknown:
        return None
    return (
        f"the response is Content-Encoding: {', '.join(unknown)}, which Rook cannot decode "
        f"(it reads {', '.join(sorted(k for k in known if k != 'identity'))}); have the server "
        "answer in one of those, or uncompressed"
    )


async def _decoded_bytes(resp: httpx.Response) -> AsyncIterator[bytes]:
    """The body of ``resp`` decoded, as :meth:`httpx.Response.aiter_bytes` gives it,
    but undoing ``gzip`` and ``deflate`` a step at a time (:class:`inflate.Inflater`):
    the cap is counted as the body is undone, never after a whole network read was."""
    names = inflate.layers(resp.headers.get_list("content-encoding", True))
    if names is None:  # plain, or an encoding Rook says it cannot decode
        async for chunk in resp.aiter_bytes():
            yield chunk
        return
    inflater = inflate.Inflater(names)
    async for raw in resp.aiter_raw():
        try:
            for chunk in inflater.feed(raw):
                yield chunk
        except zlib.error as exc:  # as httpx's own decoders say it
            raise httpx.DecodingError(str(exc)) from None


BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8


TAIL = 65536  # the last bytes of an event stream kept, to tell how it ended


class _CappedBytes(httpx.AsyncByteStream):
    """The decoded bytes of a response, failing once there are more than ``cap``;
    the last :data:`TAIL` of them are kept for :meth:`pending_data`."""

    def __init__(self, source: httpx.Response, cap: int) -> None:
        self.source, self.cap = source, cap
        self.tail = bytearray()
        self.size = 0

    def pending_data(self) -> str | None:
        """The ``data`` of an event the stream left unfinished (no blank line after
        it: the connection closed in the middle of it), or ``None``. httpx-sse drops
        such an event, as the SSE standard says; it tells that the answer was cut."""
        text = self.tail.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        end = text.rfind("\n\n")
        lines = text[end + 2 :].split("\n") if end >= 0 else text.split("\n")
        if end < 0 and self.size > len(self.tail):  # no event ended in the bytes kept
            whole = lines[1:]  # the first line's beginning is gone
            if "\n" not in text or any(line and not line.startswith(":") for line in whole):
                return text  # an event longer than the bytes kept, not finished
            return None  # keep-alive comments only
        data = [
            value.removeprefix(" ")
            for field, _, value in (line.partition(":") for line in lines)
            if field == "data"
        ]
        return "\n".join(data) if data else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        head: bytes | None = b""  # the first bytes, until a byte order mark is ruled out
        async for chunk in _decoded_bytes(self.source):
            size += len(chunk)
            self.size = size
            self.tail += chunk
            if len(self.tail) > 2 * TAIL:
                del self.tail[:-TAIL]
            if size > self.cap:
                raise SendError(f"the event stream exceeded the {self.cap}-byte cap{RAISE_CAP}")
            if head is not None:  # the SSE standard ignores one leading U+FEFF; httpx-sse
                head += chunk  # would read it into the first field's name, losing that event
                if len(head) < len(BOM) and BOM.startswith(head):
                    continue
                chunk, head = head.removeprefix(BOM), None
            yield chunk
        if head:
            yield head


def _capped(resp: httpx.Response, stream: _CappedBytes) -> httpx.Response:
    """``resp`` as a response whose body is ``stream``, counted against its cap as it arrives.

    httpx-sse holds a line, and an event, until it ends: counting only whole
    events let a ``data:`` line that never ends grow without bound. The copy
    carries the decoded bytes, so it has no ``Content-Encoding``, and its
    ``Content-Type`` in lower case (httpx-sse compares it case-sensitively)."""
    headers = [
        (k, v.lower() if k.lower() == "content-type" else v)
        for k, v in resp.headers.multi_items()
        if k.lower() != "content-encoding"
    ]
    return httpx.Response(resp.status_code, headers=headers, stream=stream, request=resp.request)


async def _once(
    client: httpx.AsyncClient, req: Request, timeout: float, cap: int, begun: list[Reply]
) -> Reply:
    """One attempt; its reply, once its headers came, is in ``begun`` too, so what a
    stream had sent is known when the attempt is cut off (a timeout, the cap)."""
    kwargs: dict[str, Any] = {"headers": req.headers, "timeout": timeout}
    if req.digest is not None:  # httpx answers the 401's challenge and sends again
        kwargs["auth"] = httpx.DigestAuth(*req.digest)
    # merged, not passed as ``params=``: httpx would drop the query the URL itself holds
    url = httpx.URL(req.url).copy_merge_params(req.params) if req.params else req.url
    if req.has_json:
        kwargs["json"] = req.json
    elif req.content is not None:
        kwargs["content"] = req.content.encode("utf-8")
        if not any(k.lower() == "content-type" for k in req.headers):  # say what it is
            kwargs["headers"] = {**req.headers, "Content-Type": "text/plain; charset=utf-8"}
    elif req.form is not None:
        kwargs["data"] = req.form
    if req.cookies is not None and not any(k.lower() == "cookie" for k in kwargs["headers"]):
        probe = httpx.Request(req.method, url)
        req.cookies.set_cookie_header(probe)
        if "cookie" in probe.headers:
            kwargs["headers"] = {**kwargs["headers"], "Cookie": probe.headers["cookie"]}
    async with client.stream(req.method, url, **kwargs) as resp:
        if req.cookies is not None:
            req.cookies.extract_cookies(resp)
        reply = Reply(resp.status_code, resp.reason_phrase, resp.headers)
        begun.append(reply)
        is_sse = reply.content_type == "text/event-stream"  # any case (RFC 9110)
        unknown = _unknown_encoding(resp) if resp.is_success else None
        if resp.is_success and is_sse:  # assembled whether or not stream: sse asked for it
            if unknown:
                raise SendError(unknown)
            reply.events = []
            stream = _CappedBytes(resp, cap)
            async for event in EventSource(_capped(resp, stream)).aiter_sse():
                if event.data.strip() == "[DONE]":
                    reply.stream_done = True
                    break
                if not event.data and event.event != "error":
                    # the SSE standard dispatches no event with empty data (httpx-sse
                    # yields one after an id: or retry: line alone); an error still counts
                    continue
                reply.events.append((event.event, event.data))
            else:  # the server closed the stream: in the middle of an event?
                pending = stream.pending_data()
                if pending is not None and pending.strip() == "[DONE]":
                    reply.stream_done = True  # its blank line left out: still the end
                elif pending is not None:
                    reply.cut_mid_event = True
            return reply
        if req.sse and resp.is_success:
            reply.notes.append(
                f"stream: sse was asked for but the response is {reply.content_type or 'untyped'}; "
                "read as a plain body"
            )
        chunks = reply.read  # what had come is kept when the attempt is cut off
        size = 0
        async for chunk in _decoded_bytes(resp):
            size += len(chunk)
            if size > cap:
                raise SendError(f"the response body exceeded the {cap}-byte cap{RAISE_CAP}")
            chunks.append(chunk)
        reply.body = b"".join(chunks)
        chunks.clear()
        if unknown and reply.body:
            raise SendError(unknown)
        return reply


def still_coming(answer: Reply | None) -> str:
    """What a timeout cut off, when it was an error answer's body (its headers came)."""
    if answer is None or 200 <= answer.status < 300 or answer.body:
        return ""
    said = f"HTTP {answer.status} {answer.reason}".strip()
    return f" while the body of its {said} answer was still coming (see details.http.response)"


async def send(
    client: httpx.AsyncClient,
    req: Request,
    *,
    retries: int,
    backoff_seconds: float,
    attempt_timeout: float,
    deadline: float,
    cap: int,
    attempts: list[dict[str, Any]],
    redact: Callable[[str], str],
    begun: list[Reply] | None = None,
) -> Reply:
    """Send ``req``, retrying what is worth retrying; returns the last reply.

    Raises :class:`SendError` when no reply could be had (connection errors
    on every attempt, a TLS failure, a body over ``cap``). ``begun`` holds the
    last attempt's reply as soon as its headers came (its events as they come).
    """
    begun = [] if begun is None else begun
    last_error = ""
    own_limit = False
    url = req.shown_url(redact)
    for n in range(1, retries + 2):
        started = time.monotonic()
        entry: dict[str, Any] = {"attempt": n, "method": req.method, "url": url}
        attempts.append(entry)
        wait_hint: float | None = None
        try:
            timeout = max(0.001, min(attempt_timeout, deadline - time.monotonic()))
            # httpx's timeout bounds each read; this bounds the whole attempt (a body
            # that trickles in a byte at a time would otherwise never time out)
            begun.clear()
            reply = await asyncio.wait_for(_once(client, req, timeout, cap, begun), timeout)
        except asyncio.TimeoutError:
            entry["seconds"] = round(time.monotonic() - started, 6)
            entry["error"] = (
                f"TimeoutError: no complete response within {round(timeout, 3):g} s"
                + still_coming(begun[-1] if begun else None)
            )
            last_error = entry["error"]
            own_limit = timeout == attempt_timeout  # not the hook's time running out
        except RETRYABLE_ERRORS as exc:
            entry["seconds"] = round(time.monotonic() - started, 6)
            entry["error"] = _network_text(exc)
            if req.url.lower().startswith("https:") and _no_tls_answer(exc):
                raise SendError(
                    f"{req.method} {url}: the server did not answer with TLS ({entry['error']}); "
                    "if it serves plain HTTP, write http:// in the url"
                ) from None
            if isinstance(exc, httpx.RemoteProtocolError) and "_SWITCH_UPGRADE" in str(exc):
                raise SendError(  # h11's words for a 101 that no request of Rook's asked for
                    f"{req.method} {url}: the server answered HTTP 101 Switching Protocols (it upgrades "
                    "the connection, as a WebSocket endpoint does); Rook's http: transport speaks plain "
                    "HTTP requests and server-sent events: point the url at the endpoint's HTTP API"
                ) from None
            if _tls_failure(exc):
                raise SendError(
                    f"TLS certificate verification failed for {url}: {exc}; {_tls_advice(exc, req, redact)}"
                ) from None
            last_error = entry["error"]
        except SendError as exc:
            entry["seconds"] = round(time.monotonic() - started, 6)
            entry["error"] = str(exc)
            raise
        except httpx.InvalidURL as exc:  # no HTTPError: a URL over httpx's 65536 characters
            entry["seconds"] = round(time.monotonic() - started, 6)
            entry["error"] = f"InvalidURL: {exc}"
            head = req.shown_url(redact, 200)
            advice = (
                "the URL is too long to send: send long text such as the goal in the body, "
                "not in the url or query"
                if "too long" in str(exc)
                else "the URL cannot be sent"
            )
            raise SendError(f"{req.method} {head}: {advice} ({exc})") from None
        except httpx.HTTPError as exc:  # an invalid URL, an unsupported scheme ...
            entry["seconds"] = round(time.monotonic() - started, 6)
            entry["error"] = exception_text(exc)
            raise SendError(f"{req.method} {url}: {entry['error']}") from None
        else:
            entry["seconds"] = round(time.monotonic() - started, 6)
            entry["status"] = reply.status
            reply.attempts = n
            if reply.status != 429 and reply.status < 500:
                return reply
            wait_hint = retry_after(reply.headers.get("retry-after"))
            if wait_hint is not None:
                entry["retry_after"] = wait_hint
            if n > retries:
                return reply
            last_error = f"HTTP {reply.status}"
        if n > retries:
            break
        delay = backoff(n, backoff_seconds)
        if wait_hint is not None:
            delay = max(delay, wait_hint)
        if time.monotonic() + delay >= deadline:
            entry["note"] = f"no retry: waiting {round(delay, 3):g} s would pass the hook's timeout"
            if "status" in entry:
                reply.out_of_time = True
                return reply
            break
        entry["wait_seconds"] = round(delay, 3)
        await asyncio.sleep(delay)
    slow = (  # the hook's own timeout, when it runs out, is said by its caller
        "; raise timeout_seconds under http: (one attempt's limit) if the endpoint is this slow"
        if last_error.startswith("TimeoutError") and own_limit
        else ""
    )
    raise SendError(
        f"{req.method} {url} failed after {counted(len(attempts), 'attempt')}: {last_error}{slow}"
    )
