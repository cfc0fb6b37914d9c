"""SPEC §8 held sentence by sentence, in the combinations the other HTTP tests leave out.

Real servers on 127.0.0.1 (:class:`servers.agent_server.AgentServer`, and a tiny
server here that writes an event stream a few bytes at a time), driven by ``rook run``.
"""

from __future__ import annotations

import email.utils
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote

import pytest
from servers.helpers import record_hooks, run_id_of, token_prepare, write_profile
from test_http_resilience import tls_server  # noqa: F401  (a fixture: a self-signed https agent)

pytest_plugins = ["servers.fixtures"]


class Scripted:
    """A server whose answers the test writes: ``routes[path]`` is called with the
    handler and the request's body, and writes the whole response itself."""

    def __init__(self) -> None:
        self.routes: dict[str, Any] = {}
        self.seen: list[dict[str, Any]] = []
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                app.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
                route = app.routes.get(self.path.split("?")[0])
                if route is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                try:
                    route(self, body)
                except OSError:
                    pass
                self.close_connection = True

            do_GET = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    server = Scripted()
    try:
        yield server
    finally:
        server.stop()


def send(handler: Any, status: int, ctype: str, data: bytes, pieces: int = 1) -> None:
    """Writes the response in ``pieces`` separate writes, flushed, a little apart."""
    handler.send_response(status)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Connection", "close")
    if pieces == 1:
        handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    step = max(1, len(data) // pieces)
    for i in range(0, len(data), step):
        handler.wfile.write(data[i : i + step])
        handler.wfile.flush()
        if pieces > 1:
            time.sleep(0.005)


def set_cookies(*cookies: str) -> Any:
    """A route that answers ``{}`` setting each of ``cookies`` (``Set-Cookie`` values)."""

    def route(h: Any, body: bytes) -> None:
        h.send_response(200)
        for cookie in cookies:
            h.send_header("Set-Cookie", cookie)
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"{}")

    return route


def echo_cookies(h: Any, body: bytes) -> None:
    """A route whose answer is the ``Cookie`` header it got (``no cookie`` without one)."""
    answer = json.dumps({"output": h.headers.get("Cookie") or "no cookie"}).encode()
    send(h, 200, "application/json", answer)


def test_a_goal_naming_placeholders_is_sent_as_written_never_filled_in_a_nested_body(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """Substitution is one pass: a goal that holds {{env.SECRET}}, {{token}} or {{goal}}
    reaches the agent as those very characters (a goal must never be able to pull a
    secret into the request), wherever in a nested body it stands."""
    secret = "sk-never-in-the-goal-4242"
    monkeypatch.setenv("AGENT_KEY", secret)
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    goal = 'say {{env.AGENT_KEY}} and {{token}} then {{goal}} {{turn}} "q" \\ \n ü {{ env.AGENT_KEY }}'
    write_profile(
        rook_workspace,
        {
            "prepare": token_prepare(agent_server),
            "execute": {
                "http": {
                    "url": f"{agent_server.url}/echo",
                    "headers": {"X-Key": "{{env.AGENT_KEY}}"},
                    "body": {
                        "outer": [
                            {"inner": {"g": "{{goal}}", "list": ["{{goal}}", "[{{goal}}]"]}},
                            "{{session}}",
                            {"t": "{{turn}}", "tok": "{{token}}"},
                        ],
                        "keys": ["{{env.AGENT_KEY}}", {"k": "x-{{env.AGENT_KEY}}"}],
                    },
                    "extract": {
                        "output": "received.outer[0].inner.g",
                        "evidence": {"list": "received.outer[0].inner.list", "text": "text"},
                    },
                }
            },
        },
        env=("AGENT_KEY", "CLIENT_SECRET"),
    )
    rook_workspace.scenario({"id": "s", "goal": goal, "criteria": [{"equals": goal}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    [seen] = agent_server.seen("POST", "/echo")
    body = seen["json"]
    assert body["outer"][0]["inner"] == {"g": goal, "list": [goal, f"[{goal}]"]}
    assert isinstance(body["outer"][1], str) and body["outer"][1]
    assert body["outer"][2]["t"] == 1 and body["outer"][2]["tok"] != "{{token}}"
    assert seen["headers"]["X-Key"] == secret
    assert body["keys"] == [secret, {"k": f"x-{secret}"}]  # filled where the profile says
    assert seen["text"].count(secret) == 2  # and only there: never from the goal
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert secret not in everything


def test_retry_after_as_an_http_date_is_waited_for(rook_cli, rook_workspace, agent_server):
    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    agent_server.flaky["d"] = [(429, {"Retry-After": when})]
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"{agent_server.url}/flaky/d",
                    "body": {"goal": "{{goal}}"},
                    "backoff_seconds": 0.01,
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "finally"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    first = execute["details"]["attempts"][0]
    assert first["status"] == 429 and 0 < first["retry_after"] <= 3.0
    times = [x["time"] for x in agent_server.seen(path_prefix="/flaky/d")]
    # waited what the date left (under load the first request comes late, and the
    # date, in whole seconds, leaves less than 2 s: 0.85 s once): never less
    assert times[1] - times[0] >= first["retry_after"] - 0.05, (times, first)


def test_a_5xx_echoing_the_secret_is_redacted_after_the_retries(
    rook_cli, rook_workspace, scripted, monkeypatch
):
    secret = "sk-echoed-by-a-500-7777"
    monkeypatch.setenv("AGENT_KEY", secret)
    scripted.routes["/echo-error"] = _echo_error
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"{scripted.url}/echo-error",
                    "headers": {"Authorization": "Bearer {{env.AGENT_KEY}}"},
                    "body": {"goal": "{{goal}}"},
                    "retries": 1,
                    "backoff_seconds": 0.01,
                }
            }
        },
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert len(scripted.seen) == 2  # retried once, then a clear failure
    reason = r.report["scenarios"][0]["reason"]
    assert "HTTP 500" in reason and "[redacted:AGENT_KEY]" in reason, reason
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert secret not in everything


def _echo_error(handler: Any, body: bytes) -> None:
    said = {"error": {"message": "upstream broke", "you_sent": handler.headers["Authorization"]}}
    send(handler, 500, "application/json", json.dumps(said).encode())


def _chat_piece(text: str, finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_an_event_stream_written_a_few_bytes_at_a_time_is_assembled(
    rook_cli, rook_workspace, scripted, newline
):
    """Events split across writes, comments between them, a data: field over
    several lines (joined with a newline, as the SSE standard says), then [DONE]."""
    chat = (
        b": keep-alive comment\n\n"
        + _chat_piece("Hel")
        + b": another comment\n"
        + _chat_piece("lo, w\u00f6rld")
        + _chat_piece("!", "stop")
        + b"data: [DONE]\n\n"
    ).replace(b"\n", newline)
    generic = (b"event: step\ndata: line one\ndata: line two\n\n: c\n\ndata: {\"n\": 1}\n\n").replace(
        b"\n", newline
    )
    scripted.routes["/chat"] = lambda h, b: send(h, 200, "text/event-stream", chat, pieces=len(chat))
    scripted.routes["/gen"] = lambda h, b: send(h, 200, "text/event-stream", generic, pieces=7)
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": scripted.url + "/{{scenario}}",
                    "body": {"q": "{{goal}}"},
                    "stream": "sse",
                    "extract": {"output": "choices[0].message.content || text", "evidence": {"events": "events || `[]`"}},
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "chat", "goal": "g", "criteria": [{"equals": "Hello, w\u00f6rld!"}]})
    rook_workspace.scenario({"id": "gen", "goal": "g", "criteria": [{"equals": "line one\nline two"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, json.dumps(r.report["scenarios"], indent=1)[:3000] + r.stderr
    gen = [s for s in r.report["scenarios"] if s["id"] == "gen"][0]
    assert gen["turns"][0]["evidence"]["events"] == ["line one\nline two", {"n": 1}]



def _json_answer(answer: Any) -> Any:
    return lambda h, b: send(h, 200, "application/json", json.dumps(answer).encode())


NO_HANDLES = {"yes": True, "no": False, "blank": "  ", "obj": {}, "list": []}


def test_an_extracted_conversation_that_is_no_handle_is_none_as_from_a_script(
    rook_cli, rook_workspace, scripted
):
    """hooks.md: null, true/false, a blank string, {} and [] are no handle. A script
    printing {"conversation": true} gets none; an extract.conversation path finding
    true (or {}, []) made the handle "true" ("{}", "[]"), so a second turn went out
    as if it continued a conversation, where the scenario must stop saying why."""
    for name, value in NO_HANDLES.items():
        scripted.routes[f"/{name}"] = _json_answer({"reply": "hi", "thread": value})
        rook_workspace.scenario(
            {"id": name, "turns": ["one", "two"], "criteria": [{"contains": "hi"}]}
        )
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": scripted.url + "/{{scenario}}",
                    "body": {"text": "{{goal}}", "thread": "{{conversation}}"},
                    "extract": {"output": "reply", "conversation": "thread"},
                }
            }
        },
        env=(),
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    for s in r.report["scenarios"]:
        assert s["status"] == "stopped", (s["id"], s["status"], s["turns"])
        assert [t["conversation"] for t in s["turns"]] == [None], s["id"]
        assert "the JMESPath 'thread' found " in s["reason"], s["reason"]
        assert "which is no conversation handle" in s["reason"], s["reason"]
    assert len(scripted.seen) == len(NO_HANDLES)  # no second turn was sent

    # with no extract: the response's own conversation field, said the same way
    scripted.routes["/yes"] = _json_answer({"output": "hi", "conversation": True})
    write_profile(
        rook_workspace,
        {"execute": {"http": {"url": scripted.url + "/{{scenario}}", "body": {"text": "{{goal}}"}}}},
        env=(),
    )
    r = rook_cli("run", "--json", "--only", "yes")
    [s] = r.report["scenarios"]
    assert s["status"] == "stopped" and "response's conversation is true, which is no" in s["reason"]


def _json_answer(answer: Any) -> Any:
    return lambda h, b: send(h, 200, "application/json", json.dumps(answer).encode())


@pytest.mark.parametrize(
    "field, path, status, said",
    [
        ("output", "n", "passed", "42"),  # a non-string output is kept as its JSON text
        ("output", "obj", "passed", '{"a": 1}'),
        ("output", "flag", "passed", "true"),
        ("output", "nothing", "error", "extract.output: the JMESPath 'nothing' found nothing"),
        ("conversation", "n", "passed", "42"),  # a number is a handle, as its JSON text
        ("calls", "text", "error", "extract.calls: the JMESPath 'text' found \"hi\"; expected a list"),
        ("calls", "strs", "error", "extract.calls: the JMESPath 'strs' found [\"a\"]; expected"),
        ("usage.input", "flag", "error", "extract.usage.input: the JMESPath 'flag' found true, not a"),
        # named with its path (it was the hook contract's 'usage.input must be a token count >= 0')
        ("usage.input", "neg", "error", "extract.usage.input: the JMESPath 'neg' found -3, not a token count"),
        ("usage.output", "half", "error", "extract.usage.output: the JMESPath 'half' found 1.5, not a whole"),
        ("usage.input", "whole", "passed", None),  # 7.0 is a whole count, as JSON may write one
    ],
)
def test_a_path_finding_a_value_of_another_type(rook_cli, rook_workspace, scripted, field, path, status, said):
    scripted.routes["/a"] = _json_answer(
        {
            "text": "hi",
            "n": 42,
            "obj": {"a": 1},
            "flag": True,
            "nothing": None,
            "strs": ["a"],
            "neg": -3,
            "half": 1.5,
            "whole": 7.0,
        }
    )
    extract: dict[str, Any] = {"output": "text"}
    if field.startswith("usage."):
        extract["usage"] = {field.split(".")[1]: path}
    else:
        extract[field] = path
    write_profile(
        rook_workspace,
        {"execute": {"http": {"url": scripted.url + "/a", "body": {"q": "{{goal}}"}, "extract": extract}}},
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"matches": "."}]})
    r = rook_cli("run", "--json")
    [s] = r.report["scenarios"]
    assert s["status"] == status, s
    if status == "error":
        assert said in s["reason"], s["reason"]
    elif field.startswith("usage."):
        assert s["turns"][0]["usage"] == {field.split(".")[1]: 7}
    else:
        assert s["turns"][0][field] == said


def test_prepare_saves_used_everywhere_then_a_429_then_a_stream_in_pieces(
    rook_cli, rook_workspace, scripted, monkeypatch
):
    """prepare mints a token and saves a number and an object too; open creates a
    session with them; execute meets a 429 first, then streams its answer in pieces."""
    monkeypatch.setenv("CLIENT_SECRET", "cs-31337")
    token = "tok-" + "z" * 20
    scripted.routes["/token"] = _json_answer(
        {"access_token": token, "expires_in": 3600, "org": {"id": "o-1", "tier": 2}}
    )
    scripted.routes["/sessions"] = _json_answer({"id": "sess-9"})
    calls = {"n": 0}

    def turn(h: Any, b: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            return send(h, 429, "application/json", b'{"error": "slow down"}')
        stream = _chat_piece("to") + _chat_piece("ken ok", "stop") + b"data: [DONE]\n\n"
        return send(h, 200, "text/event-stream", stream, pieces=9)

    scripted.routes["/turn"] = turn
    write_profile(
        rook_workspace,
        {
            "prepare": {
                "http": {
                    "url": scripted.url + "/token",
                    "form": {"secret": "{{env.CLIENT_SECRET}}"},
                    "save": {"token": "access_token", "ttl": "expires_in", "org": "org"},
                }
            },
            "open": {
                "http": {
                    "url": scripted.url + "/sessions?ttl={{ttl}}",
                    "headers": {"Authorization": "Bearer {{token}}"},
                    "body": {"org": "{{org}}", "label": "org {{org}} ttl {{ttl}}"},
                    "extract": {"conversation": "id"},
                }
            },
            "execute": {
                "http": {
                    "url": scripted.url + "/turn",
                    "headers": {"Authorization": "Bearer {{token}}", "X-Session": "{{conversation}}"},
                    "body": {"q": "{{goal}}", "session": "{{conversation}}", "ttl": "{{ttl}}"},
                    "backoff_seconds": 0.01,
                    "stream": "sse",
                    "extract": {"output": "choices[0].message.content"},
                }
            },
        },
        env=("CLIENT_SECRET",),
    )
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"equals": "token ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    by_path = {x["path"].split("?")[0]: x for x in scripted.seen}
    opened = by_path["/sessions"]
    assert opened["path"].endswith("?ttl=3600")
    assert opened["headers"]["Authorization"] == f"Bearer {token}"
    assert json.loads(opened["body"]) == {
        "org": {"id": "o-1", "tier": 2},
        "label": 'org {"id": "o-1", "tier": 2} ttl 3600',
    }
    turns = [x for x in scripted.seen if x["path"] == "/turn"]
    assert len(turns) == 2 and all(t["headers"]["X-Session"] == "sess-9" for t in turns)
    assert json.loads(turns[1]["body"]) == {"q": "go", "session": "sess-9", "ttl": 3600}
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert token not in everything and "cs-31337" not in everything


@pytest.mark.parametrize("pieces", [1, 40])
def test_an_event_stream_starting_with_a_byte_order_mark_loses_no_event(
    rook_cli, rook_workspace, scripted, pieces
):
    """The SSE standard: one leading U+FEFF is ignored. It was read as part of the
    first field's name ('\\ufeffdata'), so the first event was dropped and the rest of
    the answer judged as if whole: here ' there', a criterion 'failed'."""
    stream = b"\xef\xbb\xbf" + _chat_piece("Hello", None) + _chat_piece(" there", "stop")
    stream += b"data: [DONE]\n\n"
    scripted.routes["/s"] = lambda h, b: send(h, 200, "text/event-stream", stream, pieces=pieces)
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": scripted.url + "/s",
                    "body": {"q": "{{goal}}"},
                    "extract": {"output": "choices[0].message.content"},
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "Hello there"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.report["scenarios"][0]["reason"]


def test_a_value_in_the_url_path_never_climbs_out_of_its_place(rook_cli, rook_workspace, agent_server):
    """A path placeholder is percent-encoded but for '/': a goal '../../admin' in
    '/echo/{{goal}}/end' was sent to '/admin/end' (httpx removes dot segments), so a
    value moved the request to another endpoint. Its dots are encoded (%2E) now:
    the request stays under /echo/."""
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": agent_server.url + "/echo/{{goal}}/end?x={{goal}}",
                    "body": {"q": "{{goal}}"},
                    "extract": {"output": "received.q"},
                }
            }
        },
        env=(),
    )
    for sid, goal in (("up", "../../admin"), ("here", "./x/."), ("dots", "a..b/...")):
        rook_workspace.scenario({"id": sid, "goal": goal, "criteria": [{"contains": "zz"}]})
    rook_cli("run", "--json")
    paths = sorted((x["path"], x["raw_query"]) for x in agent_server.seen())
    assert paths == sorted(
        [
            ("/echo/%2E%2E/%2E%2E/admin/end", "x=..%2F..%2Fadmin"),
            ("/echo/%2E/x/%2E/end", "x=.%2Fx%2F."),
            ("/echo/a..b/.../end", "x=a..b%2F..."),
        ]
    ), paths


def test_the_url_recorded_and_shown_is_the_one_sent(rook_cli, rook_workspace, agent_server):
    """The attempts' record and the diagnosis showed the URL percent-decoded whole:
    a goal '../../admin & b=c #1 50% + more' sent as one query value x, and in the
    path with its dot segments encoded, read '/../../admin .../end?x=../../admin & b=c
    #1 50% + more': a request to /admin with a parameter b and a fragment, which
    is not what was sent. What gives a URL its shape (%, /, ?, #, &, =, + and the
    dots) stays encoded; the rest is shown decoded, as before."""
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": agent_server.url + "/no-such/{{goal}}/end?x={{goal}}",
                    "body": {"q": "{{goal}}"},
                    "retries": 0,
                }
            }
        },
        env=(),
    )
    goal = "../../admin & b=c #1 50% + more é"
    rook_workspace.scenario({"id": "s", "goal": goal, "criteria": [{"contains": "zz"}]})
    r = rook_cli("run", "--json")
    [seen] = agent_server.seen()
    assert seen["path"].startswith("/no-such/%2E%2E/%2E%2E/admin"), seen["path"]
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    url = execute["details"]["attempts"][0]["url"]
    assert f"POST {url} failed" in execute["diagnosis"], execute["diagnosis"]
    path, _, query = url.partition("?")
    assert "#" not in url and "/../" not in path, url
    assert path.startswith(agent_server.url + "/no-such/%2E%2E/%2E%2E/admin"), path
    assert unquote(path.removeprefix(agent_server.url)) == f"/no-such/{goal}/end", path
    assert parse_qsl(query) == [("x", goal)], query
    assert "é" in url, url  # the rest still shown decoded


def test_a_space_sent_in_the_urls_query_is_shown_as_a_plus_as_a_form_writes_it(
    rook_cli, rook_workspace, agent_server
):
    """docs/http.md: a goal 'a & b=c' sent as ?q={{goal}} shows as ?q=a+%26+b%3Dc. It
    showed as '?q=a %26 b%3Dc' when the url wrote the query (a query: mapping showed
    '+'): a URL with a bare space in it, which does not paste as one. A space in the
    query shows as '+' now, whoever wrote it; a '+' sent stays '%2B', and a space in
    the path is still shown as itself."""
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": agent_server.url + "/no such/{{goal}}?q={{goal}}&lit=x%20y",
                    "retries": 0,
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "a & b=c +1", "criteria": [{"contains": "z"}]})
    r = rook_cli("run", "--json")
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    url = execute["details"]["attempts"][0]["url"]
    assert url.endswith("/no such/a %26 b%3Dc %2B1?q=a+%26+b%3Dc+%2B1&lit=x+y"), url
    assert f"GET {url} failed" in execute["diagnosis"], execute["diagnosis"]


def test_an_event_stream_of_nothing_but_done_is_no_answer_in_execute(
    rook_cli, rook_workspace, scripted
):
    """An execute answered with an event stream holding no event, only 'data: [DONE]',
    was judged as an empty answer (extract: {output: text} found ''): a not_contains
    criterion passed on nothing, where an empty body, or the same stream without its
    [DONE], fails the hook as no answer. It fails so now; open and close may still
    answer so (an empty answer is fine there)."""
    done = b"data: [DONE]\n\n"
    scripted.routes["/chat"] = lambda h, body: send(h, 200, "text/event-stream", done)
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"not_contains": "zz"}]})
    entry = {"url": scripted.url + "/chat", "body": {"q": "{{goal}}"}, "extract": {"output": "text"}}
    hooks = {"open": {"http": {"url": scripted.url + "/chat", "body": {}}}, "execute": {"http": entry}}
    write_profile(rook_workspace, hooks, env=())
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout
    [open_, execute] = [h for h in r.report["scenarios"][0]["hooks"] if h["phase"] != "close"]
    assert open_["status"] == "ok", open_
    assert "held no event, only data: [DONE]: no answer" in execute["diagnosis"], execute


def test_a_token_in_a_redirects_fragment_is_hidden_as_one_in_its_query_is(
    rook_cli, rook_workspace, scripted
):
    """A redirect to a callback carrying the token in its fragment (OAuth's implicit
    flow: Location: https://cb.example/done#access_token=...) showed the token whole in
    the diagnosis, the record's details.http.location, the report and the terminal,
    where ?access_token=... reads [hidden]. A credential parameter of the fragment is
    [hidden] too now; the others stay readable."""
    token = "frAgT0kenValue99"
    location = f"https://cb.example/done#access_token={token}&token_type=bearer"

    def moved(h: Any, body: bytes) -> None:
        h.send_response(302)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()

    scripted.routes["/chat"] = moved
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "x"}]})
    entry = {"url": scripted.url + "/chat", "body": {"q": "{{goal}}"}, "retries": 0}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    r = rook_cli("run", "--json")
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    shown = "https://cb.example/done#access_token=[hidden]&token_type=bearer"
    assert execute["details"]["http"]["location"] == shown, execute["details"]
    assert f"redirected (HTTP 302) to {shown}" in execute["diagnosis"], execute["diagnosis"]
    assert token not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr


def endless_error(h: Any, body: bytes) -> None:
    """HTTP 500 whose body keeps coming (four bytes each 0.1 s) until the client goes."""
    h.send_response(500, "Oops")
    h.send_header("Content-Type", "text/plain")
    h.end_headers()
    for _ in range(300):  # until the client goes (an OSError ends it)
        h.wfile.write(b"err ")
        h.wfile.flush()
        time.sleep(0.1)


def test_a_hook_timed_out_on_an_error_answers_endless_body_says_it_was_an_error(
    rook_cli, rook_workspace, scripted
):
    """A server that answered HTTP 500 and kept its body coming until the hook's
    timeout gave only 'timed out after 2 s (1 attempt); raise timeout_seconds ... if
    the endpoint is this slow': the error answer went unsaid (only details.http.status
    held it). The diagnosis says the timeout came while an error answer's body was
    still coming."""

    scripted.routes["/chat"] = endless_error
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "x"}]})
    entry = {"url": scripted.url + "/chat", "body": {"q": "{{goal}}"}, "retries": 0}
    write_profile(rook_workspace, {"execute": {"http": entry, "timeout_seconds": 2}}, env=())
    r = rook_cli("run", "--json")
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["status"] == "timeout", execute
    assert execute["details"]["http"]["status"] == 500, execute["details"]
    assert (
        "while the body of its HTTP 500 Oops answer was still coming" in execute["diagnosis"]
    ), execute["diagnosis"]


def test_an_attempt_timed_out_on_an_error_answers_endless_body_says_it_was_an_error(
    rook_cli, rook_workspace, scripted
):
    """The same with the attempt's own timeout_seconds (under http:) running out, not
    the hook's: the attempt said only 'TimeoutError: no complete response within 1 s'.
    It says the error answer's body was still coming, in the attempt and the diagnosis."""

    scripted.routes["/chat"] = endless_error
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "x"}]})
    entry = {
        "url": scripted.url + "/chat",
        "body": {"q": "{{goal}}"},
        "retries": 0,
        "timeout_seconds": 1,
    }
    write_profile(rook_workspace, {"execute": {"http": entry, "timeout_seconds": 30}}, env=())
    r = rook_cli("run", "--json")
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["status"] != "timeout", execute
    [attempt] = execute["details"]["attempts"]
    said = "while the body of its HTTP 500 Oops answer was still coming"
    assert execute["details"]["http"]["status"] == 500, execute["details"]
    assert said in attempt["error"], attempt
    assert said in execute["diagnosis"], execute["diagnosis"]


def test_a_control_character_sent_in_the_url_stays_encoded_where_it_is_shown(
    rook_cli, rook_workspace, agent_server
):
    """A goal with a line break, an escape sequence or a bidi control sent in the query
    was shown decoded: the URL of the attempts' record, the diagnosis and so a JUnit
    or HTML report read over two lines ('...?x=a' then a forged '  PASS ...' line),
    and U+202E showed the rest backwards. Those characters stay encoded, as sent."""
    write_profile(
        rook_workspace,
        {"execute": {"http": {"url": agent_server.url + "/no-such?x={{goal}}", "retries": 0}}},
        env=(),
    )
    goal = "a\n  PASS  forged\x1b[2J\u202eevil\ttab é"
    rook_workspace.scenario({"id": "s", "goal": goal, "criteria": [{"contains": "zz"}]})
    r = rook_cli("run", "--json")
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    url = execute["details"]["attempts"][0]["url"]
    assert f"GET {url} failed" in execute["diagnosis"], execute["diagnosis"]
    assert "%0A" in url and "%1B" in url and "%E2%80%AE" in url and "%09" in url, url
    assert not any(c in url for c in "\n\x1b\u202e\t"), url
    assert parse_qsl(url.partition("?")[2]) == [("x", goal)], url
    assert "é" in url and "PASS" in url, url  # the rest still shown decoded


def test_a_secure_cookie_from_an_agent_on_this_machine_is_sent_back(
    rook_cli, rook_workspace, scripted
):
    """A session cookie marked Secure (as SameSite=None requires, and as many web
    frameworks set it) by an agent served over plain http on 127.0.0.1 was kept and
    never sent: its later turns ran outside the session. A browser sends it (this
    machine's loopback is a secure context); so does Rook now, only there."""

    scripted.routes.update({
        "/open": set_cookies("sid=a; Path=/; Secure; HttpOnly; SameSite=None"),
        "/talk": echo_cookies,
    })
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "x"}]})
    for host in ("127.0.0.1", "localhost"):
        url = scripted.url.replace("127.0.0.1", host)
        hooks = {
            "open": {"http": {"url": url + "/open", "body": {}}},
            "execute": {"http": {"url": url + "/talk", "body": {"q": "{{goal}}"}}},
        }
        write_profile(rook_workspace, hooks, env=())
        r = rook_cli("run", "--json")
        assert r.report["scenarios"][0]["turns"][0]["output"] == "sid=a", (host, r.stderr)


def test_a_cookie_for_domain_localhost_is_kept_and_sent_back(rook_cli, rook_workspace, scripted):
    """Set-Cookie: sid=a; Domain=localhost from an agent on http://localhost was
    dropped (the standard library refuses a domain with no dot in it), so its later
    turns ran outside the session. A loopback host's own Domain= is accepted now;
    another host's still is not (Domain=example.com from localhost)."""

    scripted.routes.update({
        "/open": set_cookies("sid=a; Domain=localhost; Path=/", "other=b; Domain=example.com; Path=/"),
        "/talk": echo_cookies,
    })
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "x"}]})
    url = scripted.url.replace("127.0.0.1", "localhost")
    hooks = {
        "open": {"http": {"url": url + "/open", "body": {}}},
        "execute": {"http": {"url": url + "/talk", "body": {"q": "{{goal}}"}}},
    }
    write_profile(rook_workspace, hooks, env=())
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["turns"][0]["output"] == "sid=a", r.stderr


def test_calls_extracted_without_arguments_leave_argument_criteria_unverifiable(
    rook_cli, rook_workspace, scripted
):
    """extract: {calls: "d[].{name: fn}"} recorded each call with arguments {}: a
    criterion on arguments then failed (called) or passed (not_called) on arguments
    never observed. They are recorded null now, and such a criterion is unverifiable;
    one on the name alone still decides."""

    def talk(h: Any, body: bytes) -> None:
        answer = {"answer": "done", "d": [{"fn": "lookup"}]}
        send(h, 200, "application/json", json.dumps(answer).encode())

    scripted.routes.update({"/talk": talk})
    hooks = {
        "execute": {
            "http": {
                "url": scripted.url + "/talk",
                "body": {"q": "{{goal}}"},
                "extract": {"output": "answer", "calls": "d[].{name: fn}"},
            }
        }
    }
    write_profile(rook_workspace, hooks, env=())
    criteria = [
        {"called": {"name": "lookup", "arguments": {"id": 1}}},
        {"not_called": {"name": "lookup", "arguments": {"id": 2}}},
        {"called": "lookup"},
    ]
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": criteria})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    got = [c["status"] for c in s["criteria"]]
    assert got == ["unverifiable", "unverifiable", "passed"], (got, s["criteria"])
    assert "arguments were not observed" in s["criteria"][0]["reason"], s["criteria"][0]
    assert s["turns"][0]["calls"] == [{"name": "lookup", "arguments": None}], s["turns"]


def test_a_certificate_for_another_host_is_not_told_to_get_a_ca_bundle(
    rook_cli, rook_workspace, tls_server  # noqa: F811
):
    """The agent's certificate names 127.0.0.1; the profile says localhost, with the CA
    bundle that signed it already in verify_tls. The diagnosis told the user to 'give
    verify_tls the path of the CA bundle that signed it', which they had done: what is
    wrong is the host name, and it now says so."""
    server, cert = tls_server
    port = server.url.rsplit(":", 1)[1]
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"https://localhost:{port}/echo",
                    "body": {"goal": "{{goal}}"},
                    "extract": {"output": "received.goal"},
                    "verify_tls": str(cert),
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert r.exit_code == 1 and "TLS certificate verification failed" in reason, reason
    assert "give verify_tls the path of the CA bundle" not in reason, reason
    assert "the certificate does not name localhost" in reason, reason
    # rook profile test's next step said to give verify_tls the CA bundle too
    t = rook_cli("profile", "test")
    assert t.exit_code == 1, t.stdout + t.stderr
    (step,) = [line for line in t.stdout.splitlines() if line.startswith("next: ")]
    assert step.startswith(
        "next: put a host name or address the agent's certificate names in the url of the hook "
        "entry (the diagnosis above says which it does not), or give the agent a certificate "
        "for the url's host; then run rook profile test p "
    ), step  # it said '... or give the agent a certificate for it in the hook entry'
    assert "CA bundle" not in step, step


def test_https_to_a_plain_http_agent_says_so_and_is_not_retried(rook_cli, rook_workspace, agent_server):
    """A url written https:// for an agent that speaks plain HTTP failed, after every
    retry, with 'ConnectError: [SSL: WRONG_VERSION_NUMBER] wrong version number'."""
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": agent_server.url.replace("http://", "https://") + "/echo",
                    "body": {"goal": "{{goal}}"},
                    "backoff_seconds": 0.01,
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert r.exit_code == 1
    assert "did not answer with TLS" in reason and "write http:// in the url" in reason, reason
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert len(execute["details"]["attempts"]) == 1  # the same answer every time: not retried


@pytest.mark.parametrize("where", ["body", "query", "url"])
def test_a_variable_whose_value_is_not_utf8_is_named_not_a_transport_crash(
    rook_cli, rook_workspace, agent_server, where
):
    """A declared variable holding bytes that are no UTF-8 (b'\\xff') used in a body, a
    query or a url ended 'transport http raised UnicodeEncodeError: utf-8 codec ...'
    (a header already said the value cannot be carried). The failure names the field
    and the variable, and never shows the value."""
    os.environb[b"H3_BYTES_KEY"] = b"sk-\xff\xfe-zz"
    try:
        entry: dict[str, Any] = {"url": agent_server.url + "/echo", "body": {"q": "{{goal}}"}}
        if where == "body":
            entry["body"]["k"] = "{{env.H3_BYTES_KEY}}"
        elif where == "query":
            entry["query"] = {"k": "key {{env.H3_BYTES_KEY}}"}
        else:
            entry["url"] = agent_server.url + "/echo/{{env.H3_BYTES_KEY}}"
        write_profile(rook_workspace, {"execute": {"http": entry}}, env=("H3_BYTES_KEY",))
        rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
        r = rook_cli("run", "--json")
    finally:
        del os.environb[b"H3_BYTES_KEY"]
    reason = r.report["scenarios"][0]["reason"]
    assert r.exit_code == 1 and "raised" not in reason, reason
    field = {"body": "body.k", "query": "query.k", "url": "url"}[where]
    assert f"{field}: {{{{env.H3_BYTES_KEY}}}}: the value of H3_BYTES_KEY is not UTF-8 text" in reason, reason
    assert "sk-" not in reason


@pytest.mark.parametrize("placeholder", ["{{conversation}}", "{{env.ROOK_CONVERSATION}}"])
def test_a_conversation_handle_never_changes_the_host_a_request_and_its_key_go_to(
    rook_cli, rook_workspace, scripted, agent_server, monkeypatch, placeholder
):
    """http.md's pattern for a session named only in a Location header: url
    '{{env.BASE_URL}}{{conversation}}/messages'. The handle is the agent's answer,
    and was inserted as is: '@127.0.0.1:PORT/x' sent the next request, with its
    Authorization header, to another server than BASE_URL names. A handle standing
    before the path must begin it ('/...'), or the hook fails saying so; also when
    written as {{env.ROOK_CONVERSATION}}, the same handle (which went to the other
    server)."""
    monkeypatch.setenv("BASE_URL", scripted.url)
    monkeypatch.setenv("AGENT_KEY", "sk-for-the-base-only-1234")
    other = agent_server.url.split("//", 1)[1]
    for sid, handle in (("evil", f"@{other}/echo"), ("good", "/echo")):
        scripted.routes[f"/open-{sid}"] = _json_answer({"id": handle})
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "g"}]})
    scripted.routes["/echo/messages"] = _json_answer({"output": "g here"})
    write_profile(
        rook_workspace,
        {
            "open": {
                "http": {
                    "url": "{{env.BASE_URL}}/open-{{scenario}}",
                    "body": {},
                    "extract": {"conversation": "id"},
                }
            },
            "execute": {
                "http": {
                    "url": "{{env.BASE_URL}}" + placeholder + "/messages",
                    "headers": {"Authorization": "Bearer {{env.AGENT_KEY}}"},
                    "body": {"q": "{{goal}}"},
                }
            },
        },
        env=("BASE_URL", "AGENT_KEY"),
    )
    r = rook_cli("run", "--json")
    assert agent_server.seen() == []  # nothing reached the other server
    by_id = {s["id"]: s for s in r.report["scenarios"]}
    assert by_id["good"]["status"] == "passed", by_id["good"]["reason"]
    assert by_id["evil"]["status"] == "error"
    assert f"url: {placeholder} stands before the url's path" in by_id["evil"]["reason"]


def test_a_handle_beginning_the_path_never_climbs_out_of_its_place(
    rook_cli, rook_workspace, scripted, monkeypatch
):
    """The two url rules meet: a handle standing before the path must begin it
    with '/', and a value's '.' or '..' segment is encoded so that it never moves
    the request up the path. A handle '/../admin' passed the first and, inserted
    as is there, was sent to /admin/messages (httpx removes dot segments): the
    agent's answer chose the endpoint its key went to. Its dot segments are
    encoded too; a handle from a Location header is sent as it is."""
    monkeypatch.setenv("BASE_URL", scripted.url + "/api")
    for sid, handle in (("climb", "/../admin"), ("plain", "/sessions/a.b")):
        scripted.routes[f"/api/open-{sid}"] = _json_answer({"id": handle})
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "here"}]})
    for path in ("/admin/messages", "/api/sessions/a.b/messages"):
        scripted.routes[path] = _json_answer({"output": "here"})
    write_profile(
        rook_workspace,
        {
            "open": {
                "http": {
                    "url": "{{env.BASE_URL}}/open-{{scenario}}",
                    "body": {},
                    "extract": {"conversation": "id"},
                }
            },
            "execute": {"http": {"url": "{{env.BASE_URL}}{{conversation}}/messages", "body": {}}},
        },
        env=("BASE_URL",),
    )
    r = rook_cli("run", "--json")
    sent = sorted(x["path"] for x in scripted.seen if x["path"].endswith("/messages"))
    assert sent == ["/api/%2E%2E/admin/messages", "/api/sessions/a.b/messages"], sent
    assert r.statuses() == {"climb": "error", "plain": "passed"}, r.stderr  # a 404 there


def test_a_handle_that_is_a_whole_url_before_the_path_is_told_where_it_goes(
    rook_cli, rook_workspace, scripted, monkeypatch
):
    """A Location header may hold a whole URL (RFC 9110 allows both), and a handle
    read from one, standing after {{env.BASE_URL}}, is refused since it does not
    begin the path; the reason said only that it 'would change the host', though
    it names the same host. It says too where a whole URL goes: at the start of
    url, '{{conversation}}/messages'."""
    monkeypatch.setenv("BASE_URL", scripted.url)
    scripted.routes["/open"] = _json_answer({"id": scripted.url + "/sessions/1"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    write_profile(
        rook_workspace,
        {
            "open": {"http": {"url": "{{env.BASE_URL}}/open", "body": {}, "extract": {"conversation": "id"}}},
            "execute": {"http": {"url": "{{env.BASE_URL}}{{conversation}}/messages", "body": {}}},
        },
        env=("BASE_URL",),
    )
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert "stands before the url's path" in reason, reason
    assert 'a handle that is a whole URL goes at the start of url: "{{conversation}}/messages"' in reason, reason


def test_a_saved_value_after_a_base_holding_a_path_is_part_of_the_path(
    rook_cli, rook_workspace, scripted, agent_server, monkeypatch
):
    """'{{env.BASE_URL}}{{x}}/messages' with BASE_URL holding a path already
    ('http://HOST/api/users/'): the saved value stands in the path, not before it,
    and was refused when it held '@', '%' or a blank ('stands before the url's
    path'), as if it could change the host. It is encoded as a path's value is;
    a value after a base holding a query is encoded as a query's."""
    monkeypatch.setenv("BASE_URL", scripted.url + "/api/users/")
    other = agent_server.url.split("//", 1)[1]
    values = {"at": f"@{other}", "blank": "jo ann", "pct": "50%", "climb": ".."}
    for sid, value in values.items():
        scripted.routes[f"/api/users/open-{sid}"] = _json_answer({"x": value})
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "g"}]})
    for path in ("/api/users/%40" + other.replace(":", "%3A") + "/messages", "/api/users/jo%20ann/messages",
                 "/api/users/50%25/messages", "/api/users/%2E%2E/messages"):
        scripted.routes[path] = _json_answer({"output": "g here"})
    write_profile(
        rook_workspace,
        {
            "open": {"http": {"url": "{{env.BASE_URL}}open-{{scenario}}", "body": {}, "save": {"x": "x"}}},
            "execute": {"http": {"url": "{{env.BASE_URL}}{{x}}/messages", "body": {"q": "{{goal}}"}}},
        },
        env=("BASE_URL",),
    )
    r = rook_cli("run", "--json")
    assert agent_server.seen() == []
    sent = sorted(x["path"] for x in scripted.seen if x["path"].endswith("/messages"))
    assert r.statuses() == dict.fromkeys(values, "passed"), (sent, r.report["scenarios"])


@pytest.mark.parametrize("shape", ["after-base", "host"])
def test_a_saved_value_before_the_path_never_changes_the_host_a_request_goes_to(
    rook_cli, rook_workspace, scripted, agent_server, monkeypatch, shape
):
    """A value saved from an agent's answer (save:) standing before the url's path
    was inserted as is: in '{{env.BASE_URL}}{{x}}/messages' a saved '@OTHER/echo'
    sent the request, and its Authorization header, to another server, and '#' cut
    the path off; in 'http://{{x}}/messages' a saved 'HOST@OTHER' did the same. Only
    the conversation handle was held to 'begin the path'. A value there other than
    an {{env.NAME}} must now fill the host (a host name, a port) or begin the path
    ('/...', its dot segments encoded): anything else fails the hook naming it."""
    monkeypatch.setenv("BASE_URL", scripted.url)
    monkeypatch.setenv("AGENT_KEY", "sk-for-the-base-only-1234")
    here = scripted.url.split("//", 1)[1]
    other = agent_server.url.split("//", 1)[1]
    if shape == "after-base":
        url = "{{env.BASE_URL}}{{x}}/messages"
        values = {"at": f"@{other}/echo", "frag": "#", "climb": "/../admin", "good": "/echo"}
    else:
        url = "http://{{x}}/messages"
        values = {"at": f"{here}@{other}", "frag": f"{other}#", "slash": f"{other}/echo?", "good": here}
    for sid, value in values.items():
        scripted.routes[f"/open-{sid}"] = _json_answer({"x": value})
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "g"}]})
    for path in ("/echo/messages", "/messages", "/admin/messages"):
        scripted.routes[path] = _json_answer({"output": "g here"})
    write_profile(
        rook_workspace,
        {
            "open": {"http": {"url": "{{env.BASE_URL}}/open-{{scenario}}", "body": {}, "save": {"x": "x"}}},
            "execute": {
                "http": {
                    "url": url,
                    "headers": {"Authorization": "Bearer {{env.AGENT_KEY}}"},
                    "body": {"q": "{{goal}}"},
                }
            },
        },
        env=("BASE_URL", "AGENT_KEY"),
    )
    r = rook_cli("run", "--json")
    assert agent_server.seen() == []  # nothing reached the other server
    by_id = {s["id"]: s for s in r.report["scenarios"]}
    assert by_id["good"]["status"] == "passed", by_id["good"]["reason"]
    for sid in values.keys() - {"good", "climb"}:
        assert by_id[sid]["status"] == "error", (sid, by_id[sid])
        assert "url: {{x}} stands before the url's path" in by_id[sid]["reason"], by_id[sid]["reason"]
    if shape == "after-base":
        sent = [x["path"] for x in scripted.seen if x["path"].endswith("/messages")]
        assert "/admin/messages" not in sent and "/%2E%2E/admin/messages" in sent, sent


def _dify(accepts_null: bool) -> Any:
    """Dify's chat-messages: conversation_id "" starts a conversation (and null too,
    or is refused), a known id continues it; the answer says which turn it is."""
    conversations: dict[str, int] = {}

    def route(h: Any, b: bytes) -> None:
        cid = json.loads(b).get("conversation_id")
        if cid is None and accepts_null:
            cid = ""
        if not isinstance(cid, str) or (cid and cid not in conversations):
            send(h, 400, "application/json", b'{"code": "invalid_param"}')
            return
        if not cid:
            cid = f"c-{len(conversations) + 1}"
            conversations[cid] = 0
        conversations[cid] += 1
        answer = {"answer": f"turn {conversations[cid]} of {cid}", "conversation_id": cid}
        send(h, 200, "application/json", json.dumps(answer).encode())

    return route


@pytest.mark.parametrize("accepts_null", [True, False])
def test_a_conversation_field_the_command_sends_empty_carries_the_handle(
    rook_cli, rook_workspace, scripted, accepts_null
):
    """Dify's cURL example sends conversation_id: "" (a new conversation): profile add
    extracted the id the response gave but left "" in the body (the field was there),
    so every turn started a new conversation while the profile claimed multi_turn."""
    from authoring import add, profile

    scripted.routes["/v1/chat-messages"] = _dify(accepts_null)
    curl = (
        f"curl {scripted.url}/v1/chat-messages -H 'Content-Type: application/json' "
        """-d '{"inputs": {}, "query": "What are the specs?", "conversation_id": "", "user": "u-1"}'"""
    )
    r = add(rook_cli, rook_workspace, "dify", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(rook_workspace, "dify")
    body = data["hooks"]["execute"]["http"]["body"]
    if accepts_null:  # null on the first turn, the handle after
        assert body["conversation_id"] == "{{conversation}}"
        assert data["capabilities"]["multi_turn"] is True
        rook_workspace.scenario(
            {"id": "two", "turns": ["hi", "again"], "criteria": [{"matches": "turn 2 of c-"}]}
        )
        run = rook_cli("run", "--json", "--profile", "dify")
        assert run.statuses() == {"two": "passed"}, run.stdout
    else:  # refused: as the command sent it, and no claim of multi_turn
        assert body["conversation_id"] == ""
        assert data["capabilities"]["multi_turn"] is False
        assert "the first turn failed with null in place of" in r.stdout, r.stdout


def test_cookies_belong_to_their_scenario_run_and_a_login_cookie_to_every_one(
    rook_cli, rook_workspace, scripted
):
    """The one HTTP client of a run kept the cookies every response set, for every
    scenario: two scenarios run at once, each opening a session the server tracks by
    cookie (Set-Cookie: sid=...), sent each other's, so one talked in the other's
    session, and a scenario whose session set none sent theirs. Each scenario run
    now has its own cookies, beginning with those prepare's sign-in set (a login
    cookie every scenario needs)."""
    opened: list[threading.Barrier] = []  # both sessions open before either talks

    def open_session(h: Any, body: bytes) -> None:
        sid = json.loads(body)["s"]
        h.send_response(200)
        if sid != "c":  # c's session sets no cookie
            h.send_header("Set-Cookie", f"sid={sid}; Path=/")
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"{}")
        if sid != "c":
            opened[-1].wait()

    scripted.routes.update({
        "/login": set_cookies("login=ok; Path=/"), "/open": open_session, "/talk": echo_cookies,
    })
    for sid in ("a", "b", "c"):
        rook_workspace.scenario({"id": sid, "goal": "go", "criteria": [{"contains": "x"}]})
    for signed_in in (True, False):
        opened.append(threading.Barrier(2, timeout=20))
        hooks = {
            "open": {"http": {"url": scripted.url + "/open", "body": {"s": "{{scenario}}"}}},
            "execute": {"http": {"url": scripted.url + "/talk", "body": {"q": "{{goal}}"}}},
        }
        if signed_in:
            hooks["prepare"] = {"http": {"url": scripted.url + "/login", "body": {}}}
        write_profile(rook_workspace, hooks, env=(), concurrency=2)
        r = rook_cli("run", "--json")
        said = {s["id"]: s["turns"][0]["output"] for s in r.report["scenarios"]}
        login = ["login=ok"] if signed_in else []
        for sid in ("a", "b"):
            assert sorted(said[sid].split("; ")) == [*login, f"sid={sid}"], said
        assert said["c"] == ("login=ok" if signed_in else "no cookie"), said


def test_a_session_cookie_prepare_got_is_a_secret_as_the_token_it_saves_is(
    rook_cli, rook_workspace, scripted
):
    """A sign-in's session cookie (Set-Cookie on prepare's response) is as much a
    credential as the token prepare saves, and Rook sends it with every request; an
    agent that echoed it showed it whole in the record and the report, where a saved
    token reads [redacted:token]. It is redacted now, named after the cookie, but a
    value that reads as words (theme=dark, a flag), no credential."""
    sid = "Zq7f3a9b2c41e8d5"
    scripted.routes.update({
        "/login": set_cookies(f"sid={sid}; Path=/; HttpOnly", "theme=dark; Path=/"),
        "/talk": echo_cookies,
    })
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "theme=dark"}]})
    hooks = {
        "prepare": {"http": {"url": scripted.url + "/login", "body": {}}},
        "execute": {"http": {"url": scripted.url + "/talk", "body": {"q": "{{goal}}"}}},
    }
    write_profile(rook_workspace, hooks, env=())
    r = rook_cli("run", "--json")
    [scenario] = r.report["scenarios"]
    assert scenario["status"] == "passed", scenario
    said = sorted(scenario["turns"][0]["output"].split("; "))
    assert said == ["sid=[redacted:cookie_sid]", "theme=dark"], said
    assert sid in scripted.seen[-1]["headers"]["Cookie"]  # sent as it is
    assert sid not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr


def test_a_cookie_holding_a_small_number_is_no_secret_but_a_session_number_is(
    rook_cli, rook_workspace, scripted
):
    """A cookie prepare got holding a plain number of 4 or more digits (year=2024) was
    a secret, so every 2024 of every record read [redacted:cookie_year]. A number of
    up to 10 digits (a year, a count, a Unix time) under a name that is not a
    credential's is no secret now; a session's number (sessionid=...) and a longer one
    still are."""
    session, long = "4821395713", "83920194837261504"
    scripted.routes.update({
        "/login": set_cookies(
            "year=2024; Path=/", "seen=1765101234; Path=/",
            f"sessionid={session}; Path=/", f"ticket={long}; Path=/",
        ),
        "/talk": echo_cookies,
    })
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "year=2024"}]})
    hooks = {
        "prepare": {"http": {"url": scripted.url + "/login", "body": {}}},
        "execute": {"http": {"url": scripted.url + "/talk", "body": {"q": "{{goal}}"}}},
    }
    write_profile(rook_workspace, hooks, env=())
    r = rook_cli("run", "--json")
    [scenario] = r.report["scenarios"]
    assert scenario["status"] == "passed", scenario
    said = sorted(scenario["turns"][0]["output"].split("; "))
    assert said == [
        "seen=1765101234",
        "sessionid=[redacted:cookie_sessionid]",
        "ticket=[redacted:cookie_ticket]",
        "year=2024",
    ], said
    text = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert session not in text and long not in text


def test_a_header_filled_with_non_ascii_text_fails_its_scenario_naming_the_header(
    rook_cli, rook_workspace, scripted
):
    """A header a placeholder fills in at run time (the goal, a hook_env value) with
    text a header cannot carry (ü: httpx refuses it, curl would send raw UTF-8 bytes a
    server may read as Latin-1) fails that scenario naming the profile's field, as a
    written one is refused when the profile is read; the run goes on."""
    def echo(h: Any, body: bytes) -> None:
        send(h, 200, "application/json", json.dumps({"output": h.headers.get("X-Goal")}).encode())

    scripted.routes["/talk"] = echo
    rook_workspace.scenario({"id": "plain", "goal": "hello", "criteria": [{"contains": "hello"}]})
    rook_workspace.scenario({"id": "umlaut", "goal": "grüß dich", "criteria": [{"contains": "dich"}]})
    hooks = {"execute": {"http": {"url": scripted.url + "/talk", "headers": {"X-Goal": "{{goal}}"}}}}
    write_profile(rook_workspace, hooks, env=())
    r = rook_cli("run", "--json")
    scenarios = {s["id"]: s for s in r.report["scenarios"]}
    assert scenarios["plain"]["status"] == "passed", scenarios
    assert scenarios["umlaut"]["status"] == "error", scenarios
    assert "headers.X-Goal: its value holds 'ü', which a header cannot carry" in str(
        scenarios["umlaut"]
    ), scenarios["umlaut"]


def test_named_events_of_a_stream_can_be_read_by_their_name(rook_cli, rook_workspace, scripted):
    """An event stream whose events are named (event: thinking, event: answer) was
    assembled into its payloads alone: the answer could not be told from the
    thinking, whose text `text` joined with it. by_event keeps each name's events
    and text (an event with no name under message, as the SSE standard names it)."""
    stream = (
        "event: thinking\ndata: hmm, \n\n"
        "event: answer\ndata: Hello\n\n"
        "data: plain\n\n"
        "event: answer\ndata:  world\n\n"
        'event: usage\ndata: {"tokens": 7}\n\n'
    )
    scripted.routes["/talk"] = lambda h, body: send(h, 200, "text/event-stream", stream.encode())
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"equals": "Hello world"}]})
    extract = {
        "output": "by_event.answer.text",
        "evidence": {
            "all": "text",
            "unnamed": "by_event.message.text",
            "tokens": "by_event.usage.events[0].tokens",
        },
    }
    hooks = {"execute": {"http": {"url": scripted.url + "/talk", "body": {}, "extract": extract}}}
    write_profile(rook_workspace, hooks, env=())
    r = rook_cli("run", "--json")
    [scenario] = r.report["scenarios"]
    assert scenario["status"] == "passed", scenario
    assert scenario["turns"][0]["evidence"] == {
        "all": "hmm, Helloplain world",
        "unnamed": "plain",
        "tokens": 7,
    }, scenario["turns"][0]


def test_each_judgement_of_a_judge_profile_keeps_its_own_cookies_and_saved_values(
    rook_cli, rook_workspace, scripted
):
    """An http: judge profile kept cookies and saved values by scenario run, as an
    agent's do, but every judgement of one scenario run is a session of its own
    (open, execute, close): two rubrics judged at once sent the cookie and the
    saved value the other's open got (both 'jid=2 h=2'), and a later judgement
    of that scenario run sent the cookie an earlier one's open got. Each
    judgement keeps its own now, and lets them go when it ends."""
    count = iter(range(1, 100))
    both_opened = threading.Barrier(2, timeout=20)  # both opens answered before either judges
    judged = iter(range(1, 100))

    def judge_open(h: Any, body: bytes) -> None:
        n = next(count)
        data = json.dumps({"id": n}).encode()
        h.send_response(200)
        if n <= 2:  # the third judgement's session sets no cookie
            h.send_header("Set-Cookie", f"jid={n}; Path=/")
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def judge(h: Any, body: bytes) -> None:
        if next(judged) <= 2:  # the first two, at once
            both_opened.wait()
        said = f"cookie={h.headers.get('Cookie')} h={json.loads(body)['h']}"
        verdict = {"output": {"pass": True, "reason": said}}
        send(h, 200, "application/json", json.dumps(verdict).encode())

    def agent(h: Any, body: bytes) -> None:
        send(h, 200, "application/json", b'{"output": "fine"}')

    scripted.routes.update({"/open": judge_open, "/judge": judge, "/agent": agent})
    write_profile(rook_workspace, {"execute": {"http": {"url": scripted.url + "/agent", "body": {}}}}, env=())
    grader = {
        "id": "grader",
        "concurrency": 2,
        "hooks": {
            "open": {"http": {"url": scripted.url + "/open", "body": {}, "save": {"h": "id"}}},
            "execute": {"http": {"url": scripted.url + "/judge", "body": {"h": "{{h}}", "q": "{{goal}}"}}},
        },
    }
    rook_workspace.profile(grader, active=False)
    rubrics = [{"rubric": "one"}, {"rubric": "two"}, {"rubric": "three"}]
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": rubrics})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stdout + r.stderr
    reasons = sorted(c["reason"] for c in r.report["scenarios"][0]["criteria"])
    assert reasons == [
        "judge: cookie=None h=3", "judge: cookie=jid=1 h=1", "judge: cookie=jid=2 h=2"
    ], reasons


def test_a_number_in_a_header_query_or_form_is_sent_as_the_profile_writes_it(
    rook_cli, rook_workspace, agent_server
):
    """YAML reads `X-Api-Version: 1.10` as the number 1.1 and `0755` as 493: the agent
    got the header 'X-Api-Version: 1.1' (another version) and 'X-Mode: 493', and the
    query `?v=1.1`. Text Rook sends is the number as written; a JSON body keeps numbers."""
    (rook_workspace.agent_dir / "profiles" / "p.yaml").write_text(
        "id: p\n"
        "hooks:\n"
        "  execute:\n"
        "    http:\n"
        f"      url: {agent_server.url}/echo\n"
        "      headers: {X-Api-Version: 1.10, X-Mode: 0755, X-Day: 2023-06-01, X-N: 5, X-On: true}\n"
        "      query: {v: 1.10, l: [1.50, 0x1F], n: 5}\n"
        "      body: {g: '{{goal}}', v: 1.10}\n"
        "      extract: {output: received.g}\n"
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"equals": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    [seen] = agent_server.seen("POST", "/echo")
    headers = seen["headers"]
    assert (headers["X-Api-Version"], headers["X-Mode"], headers["X-Day"]) == ("1.10", "0755", "2023-06-01")
    assert (headers["X-N"], headers["X-On"]) == ("5", "true")
    assert seen["raw_query"] == "v=1.10&l=1.50&l=0x1F&n=5", seen["raw_query"]
    assert seen["json"] == {"g": "hi", "v": 1.1}

    write_profile(  # form fields alike
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/echo", "form": {"g": "x"}}}}, env=()
    )
    path = rook_workspace.agent_dir / "profiles" / "p.yaml"
    path.write_text(path.read_text().replace("g: x", "g: x\n        v: 1.10"))
    r = rook_cli("run", "--json")
    assert agent_server.seen("POST", "/echo")[-1]["text"] == "g=x&v=1.10"
