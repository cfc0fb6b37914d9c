"""A fake agent reachable over real HTTP on 127.0.0.1, for the HTTP transport's tests.

It runs ``http.server.ThreadingHTTPServer`` (HTTP/1.1, keep-alive) in a
background thread and logs every request it receives. Endpoints:

* ``POST /oauth/token``              mint a bearer token (form or JSON client credentials)
* ``POST /v1/chat/completions``      OpenAI-compatible chat (bearer auth; ``stream`` → SSE)
* ``POST /api/sessions``             create a session → ``{"session": {"id": ...}}``
* ``POST /api/sessions/ID/messages`` a turn in a session (it remembers earlier turns)
* ``GET  /api/sessions/ID/trace``    evidence about a session
* ``DELETE /api/sessions/ID``        close a session
* ``POST /located``                  create a session → 201, an empty body, ``Location: /api/sessions/ID``
* ``POST /echo``                     answer with exactly what was received
* ``ANY  /flaky/KEY``                answer the statuses queued in ``flaky[KEY]`` first
* ``GET  /text``                     a plain-text answer
* ``POST /events``                   a non-OpenAI event stream
* ``POST /events/error``             a stream whose ``event: error`` says what went wrong
* ``ANY  /latin1``                   text in ISO-8859-1, as its ``Content-Type`` says
* ``ANY  /charset``                  ``?type=T&enc=E&text=X``: X encoded in E, sent as type T
* ``ANY  /trickle``                  a JSON answer sent one byte every 0.2 s
* ``ANY  /endless``                  text, one byte every 0.2 s, until the client goes (or 300 s)
* ``ANY  /encoded/NAME``             a JSON answer labelled ``Content-Encoding: NAME``, not encoded
* ``ANY  /bomb``                     ``?mib=N&layers=L&type=T``: a JSON answer of N MiB, gzipped L times
                                     (``Content-Encoding: gzip, gzip``): a few KB that decode to N MiB
* ``ANY  /stream/KEY``               the raw bytes of ``streams[KEY]`` as an event stream, then close
* ``ANY  /stalled/KEY``              the same, then nothing more (keep-alive comments) until the client leaves
* ``POST /digest``                   ``message``, behind HTTP Digest auth (RFC 7616, MD5, qop=auth) of ``digest_user``
                                     and ``digest_password``; answers ``{"output": ...}``
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import secrets
import ssl
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

_S = TypeVar("_S", bound="AgentServer")
DIGEST_NONCE = "dcd98b7102dd2f0e8b11d0f600bfb0c093"


_BOMBS: dict[tuple[int, int], bytes] = {}


def _bomb(mib: int, layers: int) -> bytes:
    """``{"output": "xxx..."}`` of ``mib`` MiB, gzipped ``layers`` times (made once)."""
    if (mib, layers) not in _BOMBS:
        inner = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = b"x" * (1 << 20)
        parts = [inner.compress(b'{"output": "')]
        parts += [inner.compress(block) for _ in range(mib)]
        data = b"".join([*parts, inner.compress(b'"}'), inner.flush()])
        for _ in range(layers - 1):
            data = gzip.compress(data, 9)
        _BOMBS[mib, layers] = data
    return _BOMBS[mib, layers]


class AgentServer:
    """The fake agent's state; ``start()`` it, use ``url``, then ``stop()`` it."""

    handler: type[BaseHTTPRequestHandler]  # its request handler, assigned at the end of the module

    def __init__(self) -> None:
        self.api_key = "sk-test-" + secrets.token_hex(12)
        self.client_id = "rook-client"
        self.client_secret = "cs-" + secrets.token_hex(12)
        self.digest_user = "desk-operator"
        self.digest_password = "dp-" + secrets.token_hex(12)
        self.tokens: set[str] = set()
        self.sessions: dict[str, dict[str, Any]] = {}
        self.flaky: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self.streams: dict[str, bytes] = {}
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.scheme = "http"

    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def start(self: _S, tls: tuple[Path, Path] | None = None) -> _S:
        """Serve on a free port; ``tls=(certfile, keyfile)`` serves HTTPS."""
        Handler = type("Handler", (self.handler,), {"app": self})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def seen(self, method: str | None = None, path_prefix: str = "") -> list[dict[str, Any]]:
        """Logged requests, optionally filtered by method and path prefix."""
        with self.lock:
            return [
                r
                for r in self.requests
                if (method is None or r["method"] == method) and r["path"].startswith(path_prefix)
            ]

    # -- the agent's behaviour ------------------------------------------------------

    def authorised(self, headers: Any) -> bool:
        auth = headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        return scheme.lower() == "bearer" and (token == self.api_key or token in self.tokens)

    def digest_ok(self, method: str, uri: str, header: str) -> bool:
        """Whether ``header`` answers the ``/digest`` challenge (RFC 7616, MD5, qop=auth)."""
        scheme, _, rest = header.partition(" ")
        if scheme.lower() != "digest":
            return False
        given = dict(
            (k.strip(), v.strip().strip('"')) for k, _, v in
            (p.partition("=") for p in re.split(r",\s*(?=[a-z]+=)", rest))
        )

        def md5(text: str) -> str:
            return hashlib.md5(text.encode()).hexdigest()

        ha1 = md5(f"{self.digest_user}:agent:{self.digest_password}")
        ha2 = md5(f"{method}:{given.get('uri', '')}")
        expected = md5(
            f"{ha1}:{DIGEST_NONCE}:{given.get('nc', '')}:{given.get('cnonce', '')}:auth:{ha2}"
        )
        return (
            given.get("username") == self.digest_user
            and given.get("uri") == uri
            and given.get("response") == expected
        )

    def mint(self, form: dict[str, str]) -> tuple[int, Any]:
        if (
            form.get("client_id") != self.client_id
            or form.get("client_secret") != self.client_secret
        ):
            return 401, {"error": "invalid_client"}
        token = "tok-" + secrets.token_hex(16)
        with self.lock:
            self.tokens.add(token)
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": "rt-" + secrets.token_hex(16),
        }

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        goal = next(
            (
                m.get("content", "")
                for m in reversed(body.get("messages", []))
                if m.get("role") == "user"
            ),
            "",
        )
        message: dict[str, Any] = {"role": "assistant", "content": f"echo: {goal}"}
        if "refund" in goal.lower():
            message["tool_calls"] = [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "issue_refund",
                        "arguments": json.dumps({"order": "ORD-1"}),
                    },
                }
            ]
        return {
            "id": "chatcmpl-" + secrets.token_hex(4),
            "object": "chat.completion",
            "model": body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": len(goal.split()),
                "completion_tokens": 2,
                "total_tokens": len(goal.split()) + 2,
            },
        }

    def chat_chunks(self, answer: dict[str, Any]) -> list[str]:
        """The same answer as OpenAI ``chat.completion.chunk`` events."""
        msg = answer["choices"][0]["message"]
        base = {"id": answer["id"], "object": "chat.completion.chunk", "model": answer["model"]}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            return json.dumps(
                {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            )

        text = msg["content"]
        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({"content": text[i : i + 4]}) for i in range(0, len(text), 4)]
        for i, tc in enumerate(msg.get("tool_calls", [])):
            args = tc["function"]["arguments"]
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": tc["id"],
                                "type": "function",
                                "function": {"name": tc["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
        out.append(chunk({}, "stop"))
        out.append(json.dumps({**base, "choices": [], "usage": answer["usage"]}))
        out.append("[DONE]")
        return out

    def session_turn(self, sid: str, text: str) -> tuple[int, Any]:
        with self.lock:
            session = self.sessions.get(sid)
            if session is None or session["closed"]:
                return 404, {"error": f"no open session {sid}"}
            session["messages"].append(text)
            history = list(session["messages"])
        if "what did i say first" in text.lower():
            reply = f"You first said: {history[0]}"
        else:
            reply = f"noted ({len(history)} message(s) so far)"
        return 200, {
            "data": {
                "reply": reply,
                "tool_calls": [{"function": "remember", "args": {"count": len(history)}}],
                "tokens": {"in": len(text.split()), "out": len(reply.split())},
                "trace_id": f"tr-{sid}-{len(history)}",
            }
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    app: AgentServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        if status in (204, 304):  # no body, as HTTP says (one would be read as the next answer)
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            return
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
            ctype = "application/json"
        else:
            data = str(body).encode()
            ctype = "text/plain; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _events(self, events: list[str], named: str | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for data in events:
            prefix = f"event: {named}\n" if named else ""
            self.wfile.write(f"{prefix}data: {data}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def _handle(self) -> None:
        app = self.app
        split = urlsplit(self.path)
        path = split.path
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        text = raw.decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = None
        entry = {
            "method": self.command,
            "path": path,
            "query": {k: v[0] for k, v in parse_qs(split.query).items()},
            "raw_query": split.query,
            "headers": dict(self.headers.items()),
            "text": text,
            "json": body,
            "port": self.client_address[1],
            "time": time.monotonic(),
        }
        with app.lock:
            app.requests.append(entry)
        parts = [p for p in path.split("/") if p]

        if path == "/oauth/token" and self.command == "POST":
            ctype = self.headers.get("Content-Type", "")
            form = body if "json" in ctype else {k: v[0] for k, v in parse_qs(text).items()}
            status, answer = app.mint(form or {})
            return self._send(status, answer)
        if path == "/v1/chat/completions" and self.command == "POST":
            if not app.authorised(self.headers):
                return self._send(
                    401,
                    {"error": {"message": "invalid api key"}},
                    {"WWW-Authenticate": 'Bearer error="invalid_token"'},
                )
            answer = app.chat(body or {})
            if (body or {}).get("stream"):
                return self._events(app.chat_chunks(answer))
            return self._send(200, answer)
        if parts[:2] == ["api", "sessions"]:
            if len(parts) == 2 and self.command == "POST":
                sid = "s-" + secrets.token_hex(4)
                with app.lock:
                    app.sessions[sid] = {
                        "messages": [],
                        "closed": False,
                        "user": (body or {}).get("user"),
                    }
                return self._send(201, {"session": {"id": sid, "created": time.time()}})
            sid = parts[2] if len(parts) > 2 else ""
            if len(parts) == 4 and parts[3] == "messages" and self.command == "POST":
                status, answer = app.session_turn(sid, (body or {}).get("text", ""))
                return self._send(status, answer)
            if len(parts) == 4 and parts[3] == "trace" and self.command == "GET":
                with app.lock:
                    s = app.sessions.get(sid)
                if s is None:
                    return self._send(404, {"error": "no such session"})
                return self._send(
                    200,
                    {
                        "trace_url": f"https://traces.example/{sid}",
                        "steps": len(s["messages"]),
                        "closed": s["closed"],
                    },
                )
            if len(parts) == 3 and self.command == "DELETE":
                with app.lock:
                    s = app.sessions.get(sid)
                    if s is not None:
                        s["closed"] = True
                return self._send(204 if s is not None else 404, "")
        if path == "/echo":
            return self._send(
                200,
                {
                    "received": body,
                    "text": text,
                    "query": entry["query"],
                    "headers": entry["headers"],
                },
            )
        if parts[:1] == ["flaky"] and len(parts) == 2:
            with app.lock:
                queue = app.flaky.get(parts[1], [])
                planned = queue.pop(0) if queue else None
            if planned is not None:
                status, headers = planned
                return self._send(status, {"error": f"planned {status}"}, headers)
            return self._send(200, {"output": "finally", "attempt_path": path})
        if path == "/text":
            return self._send(200, "a plain answer")
        if path == "/latin1":  # text in the charset the Content-Type declares
            data = "Le caf\u00e9 est pr\u00eat".encode("latin-1")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=iso-8859-1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if path == "/charset":  # ?type=Content-Type&enc=codec&text=...: the text so encoded
            q = {k: v[0] for k, v in parse_qs(split.query).items()}
            data = q.get("text", "Le caf\u00e9 est pr\u00eat").encode(q.get("enc", "utf-8"))
            self.send_response(200)
            self.send_header("Content-Type", q["type"])
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if path == "/trickle":  # headers at once, then the body one byte every 0.2 s
            data = json.dumps({"output": "slowly"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for i in range(len(data)):
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                time.sleep(0.2)
            return None
        if path == "/endless":  # a body that never ends, trickling
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            deadline = time.monotonic() + 300
            try:
                while time.monotonic() < deadline:
                    self.wfile.write(b"1\r\nx\r\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:  # the client went away
                pass
            self.close_connection = True
            return None
        if path == "/gzip":  # ?pad=N: {"output": "ok", "pad": N x's}, gzip-encoded
            pad = int(entry["query"].get("pad", "0"))
            data = gzip.compress(json.dumps({"output": "ok", "pad": "x" * pad}).encode())
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if path == "/bomb":  # a few KB on the wire that decode to ?mib=N MiB
            q = entry["query"]
            data = _bomb(int(q.get("mib", "1")), int(q.get("layers", "2")))
            self.send_response(200)
            self.send_header("Content-Type", q.get("type", "application/json"))
            self.send_header("Content-Encoding", ", ".join(["gzip"] * int(q.get("layers", "2"))))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if parts[:1] == ["encoded"] and len(parts) == 2:  # an encoding httpx cannot undo
            data = json.dumps({"output": "garbled"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", parts[1])
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            return None
        if parts[:1] == ["stalled"] and len(parts) == 2:  # written as is, then it stalls
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            deadline = time.monotonic() + 300
            try:
                self.wfile.write(app.streams.get(parts[1], b""))
                while time.monotonic() < deadline:
                    self.wfile.write(b": ping\n\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:  # the client went away
                pass
            self.close_connection = True
            return None
        if parts[:1] == ["stream"] and len(parts) == 2:  # written as is, cut where it ends
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(app.streams.get(parts[1], b""))
            self.wfile.flush()
            self.close_connection = True
            return None
        if path == "/located" and self.command == "POST":  # 201, the session only in Location
            sid = "s-" + secrets.token_hex(4)
            with app.lock:
                app.sessions[sid] = {"messages": [], "closed": False, "user": None}
            self.send_response(201)
            self.send_header("Location", f"/api/sessions/{sid}")
            self.send_header("X-Session-Id", sid)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if path == "/threads" and self.command == "POST":  # the thread id on its first turn only
            thread = (body or {}).get("thread")
            if thread is None:
                return self._send(200, {"reply": "new thread", "thread_id": "th-1"})
            return self._send(200, {"reply": f"in {thread}: {(body or {}).get('text')}"})
        if path == "/digest" and self.command == "POST":
            if not app.digest_ok(self.command, self.path, self.headers.get("Authorization", "")):
                return self._send(
                    401,
                    {"error": "digest credentials needed"},
                    {"WWW-Authenticate": f'Digest realm="agent", qop="auth", nonce="{DIGEST_NONCE}"'},
                )
            return self._send(200, {"output": f"digest answer to: {(body or {}).get('message', '')}"})
        if path == "/events":
            return self._events(["first ", "second", json.dumps({"note": "json event"})])
        if path == "/events/error":
            return self._events([json.dumps({"message": "model overloaded"})], named="error")
        return self._send(404, {"error": f"no route {self.command} {path}"})

    def _safe(self) -> None:
        try:
            self._handle()
        except Exception as exc:  # record, never crash the server thread
            self.app.errors.append(f"{type(exc).__name__}: {exc}")
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _safe


AgentServer.handler = _Handler
