"""The fake agent of :mod:`agent_server`, plus what ``rook profile add`` meets in the wild.

Extra endpoints (everything of :class:`AgentServer` still answers):

* ``GET  /openapi.json``        OpenAPI 3 for the session API (``/api/sessions...``)
* ``GET  /openapi.yaml``        the same document in YAML, served as ``text/plain``
* ``GET  /openapi-many.json``   two operations that take a message equally (must ask)
* ``GET  /openapi-key.json``    ``POST /ask`` with an API key in the query (security scheme)
* ``POST /ask?key=K``           needs ``prompt`` (422 naming it, FastAPI style); answers
                                ``{"answer", "conversation_id", "usage"}``; continues a
                                conversation sent back as ``conversation_id``
* ``POST /strict``              400 when the ``X-Debug`` header is sent; answers under
                                ``result.text``
* ``POST /basic``               Basic auth (``user``/``basic_password``); a text answer
* ``POST /form``                form-encoded ``message``; answers ``{"reply": ...}``
* ``POST /history``             ``message``; answers the history: ``{"messages": [{"role":
                                "user", "content": message}, {"role": "assistant", ...}]}``
* ``ANY  /moved/PATH``           308 to ``/PATH`` (``/moved/away/PATH``: to another host;
                                ``/moved/to?url=URL``: to ``URL``)
* ``GET  /lookup?q=...``        answers ``{"results": [{"title": ...}]}``; any other method
                                is not allowed (405)
* ``POST /jsononly``            415 unless the body is sent as ``application/json``;
                                ``message``; answers ``{"output": ...}``
* ``POST /chatonly``            400 unless the body holds a ``messages`` list (OpenAI
                                style); answers ``{"output": ...}``
* ``POST /keyed/KEY/ask``       the API key in the URL path (401 unless it is ``api_key``);
                                ``message``; answers ``{"reply": ...}``
"""

from __future__ import annotations

import base64
import secrets
import sys
from pathlib import Path
from typing import Any

from .agent_server import AgentServer, _Handler

# The scripted author agent of tests/agents/author, as --author takes it.
SCRIPTED_AUTHOR = (
    f"{sys.executable} {Path(__file__).parent.parent / 'agents' / 'author' / 'scripted_author.py'}"
)

SESSION_API = {
    "openapi": "3.0.3",
    "info": {"title": "Order Desk", "version": "1"},
    "servers": [{"url": "/"}],
    "paths": {
        "/api/sessions": {
            "post": {
                "operationId": "createSession",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "properties": {"user": {"type": "string"}}}
                        }
                    }
                },
                "responses": {
                    "201": {
                        "description": "created",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "session": {
                                            "type": "object",
                                            "properties": {
                                                "id": {"type": "string"},
                                                "created": {"type": "number"},
                                            },
                                        }
                                    },
                                }
                            }
                        },
                    }
                },
            }
        },
        "/api/sessions/{id}/messages": {
            "post": {
                "operationId": "sendMessage",
                "summary": "Send a message to the desk",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Message"}}
                    }
                },
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Reply"}}
                        },
                    }
                },
            }
        },
        "/api/sessions/{id}": {
            "delete": {
                "operationId": "closeSession",
                "responses": {"204": {"description": "closed"}},
            }
        },
        "/health": {"get": {"operationId": "health", "responses": {"200": {"description": "ok"}}}},
    },
    "components": {
        "schemas": {
            "Message": {
                "type": "object",
                "required": ["text"],
                "properties": {"text": {"type": "string"}, "turn": {"type": "integer"}},
            },
            "Reply": {
                "type": "object",
                "properties": {
                    "data": {
                        "type": "object",
                        "properties": {"reply": {"type": "string"}, "trace_id": {"type": "string"}},
                    }
                },
            },
        }
    },
}


def _ask_op(op_id: str, secured: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": op_id,
        "summary": f"Ask the agent ({op_id})",
        "requestBody": {
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["prompt"],
                        "properties": {
                            "prompt": {"type": "string"},
                            "conversation_id": {"type": "string"},
                        },
                    }
                }
            }
        },
        "responses": {
            "200": {
                "description": "ok",
                "content": {
                    "application/json": {
                        "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}
                    }
                },
            }
        },
    }
    if secured:
        op["security"] = [{"key": []}]
    return op


MANY = {
    "openapi": "3.0.0",
    "info": {"title": "Two asks", "version": "1"},
    "paths": {"/ask": {"post": _ask_op("ask")}, "/v2/ask": {"post": _ask_op("askV2")}},
}
KEYED = {
    "openapi": "3.1.0",
    "info": {"title": "Keyed ask", "version": "1"},
    "paths": {"/ask": {"post": _ask_op("ask", secured=True)}},
    "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "key"}}},
}


class AuthoringServer(AgentServer):
    """:class:`AgentServer` with the endpoints ``rook profile add`` is tested against."""

    def __init__(self) -> None:
        super().__init__()
        self.basic_password = "pw-" + secrets.token_hex(8)
        self.conversations: dict[str, list[str]] = {}

    def ask(self, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if query.get("key") != self.api_key:
            return 401, {"detail": "invalid or missing key"}
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return 422, {
                "detail": [
                    {
                        "loc": ["body", "prompt"],
                        "msg": "field required",
                        "type": "value_error.missing",
                    }
                ]
            }
        cid = body.get("conversation_id")
        with self.lock:
            if cid is None:
                cid = "c-" + secrets.token_hex(4)
                self.conversations[cid] = []
            elif cid not in self.conversations:
                return 404, {"detail": f"no conversation {cid}"}
            self.conversations[cid].append(body["prompt"])
            n = len(self.conversations[cid])
        return 200, {
            "answer": f"answer {n}: {body['prompt']}",
            "conversation_id": cid,
            "usage": {"input_tokens": 7, "output_tokens": 3},
        }


class _AuthoringHandler(_Handler):
    app: AuthoringServer

    def _handle(self) -> None:
        path, _, qs = self.path.partition("?")
        docs = {
            "/openapi.json": SESSION_API,
            "/openapi-many.json": MANY,
            "/openapi-key.json": KEYED,
        }
        if self.command == "GET" and path in docs:
            return self._send(200, docs[path])
        if self.command == "GET" and path == "/openapi.yaml":
            import yaml

            return self._send(200, yaml.safe_dump(SESSION_API, sort_keys=False))
        if path.startswith("/moved/"):  # curl -L follows it; Rook does not
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            rest = path[len("/moved") :]
            if rest == "/to":
                from urllib.parse import parse_qs

                where = parse_qs(qs)["url"][0]
            elif rest.startswith("/away/"):
                where = "http://elsewhere.invalid/" + rest[len("/away/") :]
            else:
                where = rest + ("?" + qs if qs else "")
            return self._send(308, {"moved": where}, {"Location": where})
        if path == "/lookup":  # GET only: a POST is not allowed (405)
            if self.command != "GET":
                return self._send(405, {"detail": "Method Not Allowed"}, {"Allow": "GET"})
            from urllib.parse import parse_qs

            q = parse_qs(qs).get("q", [""])[0]
            return self._send(200, {"results": [{"title": f"found: {q}"}]} if q else {})
        if self.command == "POST" and path in ("/ask", "/strict", "/basic", "/form", "/history", "/jsononly", "/chatonly"):
            return self._extra(path, qs)
        if self.command == "POST" and path.startswith("/keyed/"):
            return self._extra(path, qs)
        return super()._handle()

    def _extra(self, path: str, qs: str) -> None:
        import json
        from urllib.parse import parse_qs

        app = self.app
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = None
        query = {k: v[0] for k, v in parse_qs(qs).items()}
        with app.lock:
            app.requests.append(
                {
                    "method": self.command,
                    "path": path,
                    "query": query,
                    "headers": dict(self.headers.items()),
                    "text": text,
                    "json": body,
                }
            )
        if path == "/ask":
            return self._send(*app.ask(query, body))
        if path == "/jsononly":
            if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                return self._send(415, {"detail": "Unsupported Media Type"})
            return self._send(200, {"output": f"json reply to: {(body or {}).get('message', '')}"})
        if path == "/chatonly":
            messages = (body or {}).get("messages") if isinstance(body, dict) else None
            if not isinstance(messages, list) or not messages:
                return self._send(400, {"error": {"message": "'messages' is a required property"}})
            return self._send(200, {"output": f"chat reply to: {messages[-1].get('content')}"})
        if path.startswith("/keyed/"):
            if path != f"/keyed/{app.api_key}/ask":
                return self._send(401, {"error": "no such key"})
            return self._send(200, {"reply": f"keyed reply to: {(body or {}).get('message', '')}"})
        if path == "/strict":
            if "X-Debug" in self.headers:
                return self._send(400, {"error": "header X-Debug is not allowed here"})
            message = (body or {}).get("message", "")
            return self._send(200, {"result": {"text": f"strictly: {message}", "id": "r-1"}})
        if path == "/basic":
            expected = base64.b64encode(f"user:{app.basic_password}".encode()).decode()
            if self.headers.get("Authorization") != f"Basic {expected}":
                return self._send(
                    401, {"error": "bad credentials"}, {"WWW-Authenticate": 'Basic realm="agent"'}
                )
            return self._send(200, f"basic answer to: {(body or {}).get('q', '')}")
        if path == "/history":  # the conversation so far, the request first
            message = (body or {}).get("message", "")
            return self._send(
                200,
                {
                    "messages": [
                        {"role": "user", "content": message},
                        {"role": "assistant", "content": f"noted: {message}"},
                    ]
                },
            )
        form = {k: v[0] for k, v in parse_qs(text).items()}
        return self._send(200, {"reply": f"form reply to: {form.get('message', '')}"})


AuthoringServer.handler = _AuthoringHandler
