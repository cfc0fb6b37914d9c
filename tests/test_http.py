"""The HTTP transport against a real fake agent on 127.0.0.1: auth, sessions, SSE, extraction.

Every test runs ``rook run`` (in process) with a profile whose hooks are
``http:`` entries pointing at :class:`servers.agent_server.AgentServer`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import parse_qsl

import pytest
from servers.helpers import (
    CHAT_EXTRACT,
    chat,
    record_hooks,
    run_id_of,
    session_hooks,
    token_prepare,
    write_profile,
)

from rook_core.hookspecs import hookimpl

pytest_plugins = ["servers.fixtures"]


def shown_anywhere(ws, *results) -> str:
    """What the commands printed and every file the runs left, with the workspace's
    own path taken out (pytest-of-root/pytest-1133/... holds 'test-1', a piece of
    every 'sk-test-1...' key)."""
    text = "".join(r.stdout + r.stderr for r in results) + "".join(
        p.read_text(errors="replace") for p in ws.runs_dir.rglob("*") if p.is_file()
    )
    return text.replace(str(ws.root), "<ws>")


def assert_no_piece(secret: str, text: str) -> None:
    """Not even six characters of ``secret`` are in ``text``."""
    for i in range(len(secret) - 5):
        assert secret[i : i + 6] not in text, f"a piece of the key ({secret[i:i + 6]!r}) leaked"


def test_bearer_auth_with_the_right_token(rook_cli, rook_workspace, agent_server, monkeypatch):
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    write_profile(rook_workspace, {"execute": chat(agent_server)})
    rook_workspace.scenario(
        {
            "id": "hello",
            "goal": "hello there",
            "criteria": [{"equals": "echo: hello there"}, {"max_calls": 0}],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "echo: hello there"
    assert turn["usage"] == {"input": 2, "output": 2}
    assert turn["calls"] == []  # observed: no calls (not "could not observe")
    assert turn["evidence"]["model"] == "fake-model"
    [execute] = record_hooks(rook_workspace, run_id_of(r), "hello.1", "execute")
    [attempt] = execute["details"]["attempts"]
    assert attempt["status"] == 200 and attempt["method"] == "POST"
    assert attempt["url"] == f"{agent_server.url}/v1/chat/completions"
    assert agent_server.seen("POST", "/v1/chat")[0]["headers"]["Authorization"] == (
        f"Bearer {agent_server.api_key}"
    )


def test_digest_auth_answers_the_servers_challenge(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """An API that takes HTTP Digest only could not be reached from an http: entry
    (it sends fixed headers; a digest answers the server's challenge). auth.digest
    answers it, with its username and password from env: never recorded or shown;
    a wrong one is an authentication problem naming the variables."""
    monkeypatch.setenv("DIGEST_USER", agent_server.digest_user)
    monkeypatch.setenv("DIGEST_PASSWORD", agent_server.digest_password)
    digest = {"username": "{{env.DIGEST_USER}}", "password": "{{env.DIGEST_PASSWORD}}"}
    entry = {
        "url": f"{agent_server.url}/digest",
        "body": {"message": "{{goal}}"},
        "auth": {"digest": digest},
        "extract": {"output": "output"},
    }
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=("DIGEST_USER", "DIGEST_PASSWORD"))
    rook_workspace.scenario(
        {"id": "s", "goal": "hi there", "criteria": [{"equals": "digest answer to: hi there"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    challenged, answered = agent_server.seen("POST", "/digest")
    assert "Authorization" not in challenged["headers"]
    assert answered["headers"]["Authorization"].startswith("Digest username=")
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert agent_server.digest_password not in everything

    monkeypatch.setenv("DIGEST_PASSWORD", "dp-wrong-0123456789")
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert "authentication problem" in reason and "401" in reason, reason
    assert "digest password from {{env.DIGEST_PASSWORD}}" in reason, reason
    assert "DIGEST_USER, DIGEST_PASSWORD hold valid credentials" in reason, reason
    assert "dp-wrong-0123456789" not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout

    # written literally in the profile: never the advice to add a Bearer header
    entry["auth"] = {"digest": {"username": "desk-operator", "password": "dp-literal-0123"}}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert "auth.digest writes literally in the profile" in reason, reason
    assert "Bearer" not in reason and "dp-literal-0123" not in reason, reason

    del entry["auth"]  # without it, the diagnosis says how to answer the challenge
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    r = rook_cli("run", "--json")
    assert "give the entry auth: {digest: {username: ..., password: ...}}" in (
        r.report["scenarios"][0]["reason"]
    )


@pytest.mark.parametrize(
    "auth, field, said",
    [
        ({"digest": {"username": "u", "password": "{{env.UNDECLARED}}"}},
         "hooks.execute.http.auth.digest.password", "UNDECLARED is not declared"),
        ({"digest": {"username": "u"}}, "hooks.execute.http.auth.digest.password",
         "missing data for required field\n"),
        ({}, "hooks.execute.http.auth", "digest"),
        ({"basic": {"username": "u", "password": "p"}}, "hooks.execute.http.auth.basic",
         "unknown field"),
    ],
)
def test_a_wrong_auth_entry_is_refused_before_anything_runs(
    rook_cli, rook_workspace, agent_server, auth, field, said
):
    entry = {"url": f"{agent_server.url}/digest", "body": {"q": "{{goal}}"}, "auth": auth}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and "Traceback" not in r.stderr, r.stderr
    assert field in r.stderr and said in r.stderr, r.stderr
    assert not agent_server.seen(path_prefix="/digest")


def test_a_wrong_token_is_diagnosed_as_an_authentication_problem(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    wrong = "sk-wrong-0123456789abcdef"
    monkeypatch.setenv("AGENT_KEY", wrong)
    write_profile(rook_workspace, {"execute": chat(agent_server)})
    rook_workspace.scenario({"id": "hello", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "error"
    reason = scenario["reason"]
    assert "authentication problem" in reason
    assert "401" in reason
    assert "header Authorization" in reason
    assert "{{env.AGENT_KEY}}" in reason and "AGENT_KEY holds a valid credential" in reason
    assert 'WWW-Authenticate: Bearer error="invalid_token"' in reason
    [execute] = record_hooks(rook_workspace, run_id_of(r), "hello.1", "execute")
    assert [a["status"] for a in execute["details"]["attempts"]] == [401]  # never retried
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert wrong not in everything


def test_a_credential_in_the_url_query_is_named_in_an_authentication_problem(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """A 401 for a request whose URL carried ``?key={{env.AGENT_KEY}}`` was diagnosed
    "No header or query parameter carried a credential; add one", though one had."""
    monkeypatch.setenv("AGENT_KEY", "k-wrong-0123456789")
    entry = chat(agent_server, headers={})
    entry["http"]["url"] += "?key={{env.AGENT_KEY}}"
    write_profile(rook_workspace, {"execute": entry})
    rook_workspace.scenario({"id": "q", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert "Credentials sent: the URL's query from {{env.AGENT_KEY}}" in reason, reason
    assert "No header or query parameter carried a credential" not in reason, reason
    assert "k-wrong-0123456789" not in reason


def test_two_credentials_are_named_in_the_plural(rook_cli, rook_workspace, agent_server,
                                                 monkeypatch):
    # "Check that AGENT_KEY, ORG_KEY holds a valid credential": two variables hold
    monkeypatch.setenv("AGENT_KEY", "k-wrong-0123456789")
    monkeypatch.setenv("ORG_KEY", "org-0123456789")
    entry = chat(agent_server)
    entry["http"]["headers"]["X-Org"] = "{{env.ORG_KEY}}"
    write_profile(rook_workspace, {"execute": entry}, env=("AGENT_KEY", "ORG_KEY"))
    rook_workspace.scenario({"id": "q", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert "that AGENT_KEY, ORG_KEY hold valid credentials for this endpoint" in reason, reason


@pytest.mark.parametrize("challenge", ['Digest realm="agent", nonce="n1", qop="auth"', "NTLM"])
def test_a_server_asking_for_digest_is_said_to_need_a_script_hook(
    rook_cli, rook_workspace, agent_server, challenge
):
    """A 401 asking for Digest (or NTLM) was diagnosed "No header or query parameter
    carried a credential; add one, e.g. headers: {Authorization: 'Bearer ...'}":
    advice that cannot work, since such a scheme answers a challenge on each
    request and an http entry sends fixed headers."""
    agent_server.flaky["d"] = [(401, {"WWW-Authenticate": challenge})]
    entry = {"url": f"{agent_server.url}/flaky/d", "body": {"q": "{{goal}}"}, "retries": 0}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "d", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    scheme = challenge.split()[0]
    assert f"The server asks for {scheme} authentication" in reason, reason
    if scheme == "Digest":  # an http: entry answers it with auth.digest
        assert "give the entry auth: {digest: {username: ..., password: ...}}" in reason
    else:
        assert "cannot answer it: reach the agent from a script hook" in reason, reason
    assert "Bearer" not in reason, reason


def test_prepare_mints_a_token_that_later_phases_use(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    write_profile(
        rook_workspace,
        {
            "prepare": token_prepare(agent_server),
            "execute": chat(agent_server, headers={"Authorization": "Bearer {{token}}"}),
        },
        env=("CLIENT_SECRET",),
    )
    rook_workspace.scenario({"id": "a", "goal": "first", "criteria": [{"contains": "first"}]})
    rook_workspace.scenario({"id": "b", "goal": "second", "criteria": [{"contains": "second"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    [mint] = agent_server.seen("POST", "/oauth/token")
    assert mint["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    [token] = agent_server.tokens
    chats = agent_server.seen("POST", "/v1/chat")
    assert [c["headers"]["Authorization"] for c in chats] == [f"Bearer {token}"] * 2
    run_text = rook_workspace.all_run_text(run_id_of(r))
    state = "".join(
        p.read_text(errors="replace")
        for p in rook_workspace.run_dir(run_id_of(r)).rglob("*")
        if p.is_file()
    )
    for secret in (token, agent_server.client_secret, mint["text"]):
        assert secret not in run_text + state + r.stdout + r.stderr
    prepare = json.loads((rook_workspace.run_dir(run_id_of(r)) / "prepare.json").read_text())
    assert prepare["status"] == "ok" and prepare["data"] == {"saved": ["token"]}
    assert "refresh_token" not in run_text  # prepare responses are never recorded


def test_every_string_inside_an_object_prepare_saved_is_a_secret(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    # save: {grant: "@"} keeps the whole token response; the agent echoes it back
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    prepare = token_prepare(agent_server)
    prepare["http"]["save"] = {"grant": "@"}
    echo = {
        "http": {
            "url": f"{agent_server.url}/echo",
            "body": {"auth": "{{grant}}"},
            "extract": {"output": "received.auth.access_token", "evidence": {"all": "received"}},
        }
    }
    write_profile(rook_workspace, {"prepare": prepare, "execute": echo}, env=("CLIENT_SECRET",))
    rook_workspace.scenario({"id": "a", "goal": "g", "criteria": [{"contains": "tok-"}]})
    r = rook_cli("run", "--json")
    [token] = agent_server.tokens
    [echoed] = agent_server.seen("POST", "/echo")
    refresh = echoed["json"]["auth"]["refresh_token"]
    assert r.report["scenarios"][0]["turns"][0]["output"] == "[redacted:grant]"
    run_text = rook_workspace.all_run_text(run_id_of(r))
    for secret in (token, refresh):
        assert secret not in run_text + r.stdout + r.stderr


def test_a_prepare_failure_shows_no_number_of_its_response_either(
    rook_cli, rook_workspace, agent_server
):
    """A prepare response is shown by its shape, "never its values" (docs/http.md): its
    strings were hidden, but a number was shown as it is, and a sign-in's numbers can
    be credentials (a PIN, a one-time code, an account number)."""
    text = json.dumps({"access_token": "tok-1", "pin": 48392017, "ok": True, "n": [7.5]})
    agent_server.streams["signin"] = f"data: {text}\n\n".encode()
    prepare = {"http": {"url": f"{agent_server.url}/stream/signin", "save": {"token": "acces_token"}}}
    execute = {"http": {"url": f"{agent_server.url}/echo", "body": {"t": "{{token}}"}}}
    write_profile(rook_workspace, {"prepare": prepare, "execute": execute}, env=())
    rook_workspace.scenario({"id": "a", "goal": "x", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert "save.token: the JMESPath 'acces_token' found nothing" in reason, reason
    assert '"pin": "<number>", "ok": true, "n": ["<number>"]' in reason, reason
    for value in ("48392017", "7.5"):
        assert value not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr


def test_a_prepare_path_whose_function_does_not_fit_never_shows_the_token(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """``save: {token: abs(access_token)}`` failed prepare with JMESPath's reason
    'invalid type for value: tok-...', the minted token itself, into the record and the
    terminal, where a prepare response is shown only by its shape."""
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    prepare = token_prepare(agent_server)
    prepare["http"]["save"] = {"token": "abs(access_token)"}
    write_profile(
        rook_workspace,
        {"prepare": prepare, "execute": chat(agent_server)},
        env=("CLIENT_SECRET", "AGENT_KEY"),
    )
    rook_workspace.scenario({"id": "a", "goal": "x", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert "save.token: the JMESPath 'abs(access_token)' cannot be applied" in reason, reason
    assert "In function abs()" in reason and '"<string, 36 chars>"' in reason, reason
    [token] = agent_server.tokens
    assert token not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr


def test_a_rejected_client_secret_names_the_form_field_and_variable(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    monkeypatch.setenv("CLIENT_SECRET", "cs-wrong-secret-value")
    write_profile(
        rook_workspace,
        {
            "prepare": token_prepare(agent_server),
            "execute": chat(agent_server, headers={"Authorization": "Bearer {{token}}"}),
        },
        env=("CLIENT_SECRET",),
    )
    rook_workspace.scenario({"id": "a", "goal": "x", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    reason = r.report["scenarios"][0]["reason"]
    assert reason.startswith("prepare failed: authentication problem")
    assert "form field client_secret from {{env.CLIENT_SECRET}}" in reason
    assert "cs-wrong-secret-value" not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout
    assert not agent_server.seen("POST", "/v1/chat")


def test_sessions_carry_multi_turn_memory_and_are_closed(rook_cli, rook_workspace, agent_server):
    write_profile(rook_workspace, session_hooks(agent_server), env=())
    rook_workspace.scenario(
        {
            "id": "memory",
            "turns": ["My order is ORD-77.", "What did I say first?"],
            "criteria": [
                {"contains": "ORD-77"},
                {"called": {"name": "remember", "arguments": {"count": 2}}},
            ],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    [sid] = agent_server.sessions
    scenario = r.report["scenarios"][0]
    assert [t["conversation"] for t in scenario["turns"]] == [sid, sid]
    assert scenario["turns"][1]["output"] == "You first said: My order is ORD-77."
    assert scenario["turns"][0]["calls"] == [{"name": "remember", "arguments": {"count": 1}}]
    assert scenario["turns"][1]["evidence"] == {"trace_id": f"tr-{sid}-2"}
    assert [r_["json"]["turn"] for r_ in agent_server.seen("POST", f"/api/sessions/{sid}")] == [
        1,
        2,
    ]
    assert agent_server.sessions[sid]["closed"] is True
    assert agent_server.sessions[sid]["user"] == "memory"
    assert [x["path"] for x in agent_server.seen("DELETE")] == [f"/api/sessions/{sid}"]
    record = rook_workspace.record(run_id_of(r), "memory.1")
    assert record["collected"]["evidence"] == {
        "trace_url": f"https://traces.example/{sid}",
        "steps": 2,
    }


class _HttpKept:
    """Sees the HTTP transport's run-wide state through a real evidence observer."""

    def __init__(self) -> None:
        self.res: object = None
        self.most = 0

    @hookimpl
    def rook_evidence_recorded(self, run, record, result):
        self.res = run.resources.get("http", self.res)
        self.most = max(self.most, len(self.res.scenario_cookies))


@pytest.mark.parametrize("phases", [("open", "execute", "close", "collect"), ("open", "execute")])
def test_a_scenario_runs_cookies_and_saved_values_are_let_go_when_it_ends(
    rook_cli, rook_workspace, agent_server, rook_plugin, phases
):
    """Each scenario run's cookies and saved values were kept until the run ended
    (about 2 KB a scenario run: 200 MB over 100,000): they are let go as each
    scenario run ends, with its close phase or without one, and every scenario
    still has its own session across its turns and repeats."""
    kept = rook_plugin(_HttpKept())
    hooks = {p: e for p, e in session_hooks(agent_server).items() if p in phases}
    hooks["open"]["http"]["save"] = {"sid": "session.id"}
    write_profile(rook_workspace, hooks, env=(), concurrency=3)
    n = 7
    for i in range(n):
        rook_workspace.scenario(
            {
                "id": f"s{i}",
                "turns": [f"My order is ORD-{i}.", "What did I say first?"],
                "criteria": [{"contains": f"ORD-{i}"}],
            }
        )
    r = rook_cli("run", "--json", "--repeat", "2")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert len(r.report["scenarios"]) == 2 * n
    for scenario in r.report["scenarios"]:
        assert scenario["status"] == "passed", scenario
        assert scenario["turns"][0]["conversation"] == scenario["turns"][1]["conversation"]
    assert len(agent_server.sessions) == 2 * n
    assert kept.most <= 2 * n  # seen, and never more than one a scenario run
    for name in ("scenario_cookies", "scenario_saved", "scenario_lost", "scenario_no_handle"):
        assert getattr(kept.res, name) == {}, name


def test_server_sent_events_are_assembled_into_one_answer(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    body = {
        "model": "fake-model",
        "stream": True,
        "messages": [{"role": "user", "content": "{{goal}}"}],
    }
    write_profile(rook_workspace, {"execute": chat(agent_server, stream="sse", body=body)})
    rook_workspace.scenario(
        {
            "id": "streamed",
            "goal": "Please refund my order, it arrived broken.",
            "criteria": [
                {"equals": "echo: Please refund my order, it arrived broken."},
                {"called": {"name": "issue_refund", "arguments": {"order": "ORD-1"}}},
                {"max_tokens": {"input": 100}},
            ],
        }
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["usage"] == {"input": 7, "output": 2}
    [execute] = record_hooks(rook_workspace, run_id_of(r), "streamed.1", "execute")
    assert execute["details"]["http"]["stream"]["done"] is True
    assert execute["details"]["http"]["stream"]["events"] > 5
    assert agent_server.seen("POST")[0]["headers"]["Accept"] == "text/event-stream"


@pytest.mark.parametrize("off", ["none", None])
def test_stream_none_is_stream_left_out(rook_cli, rook_workspace, agent_server, monkeypatch, off):
    # http.md: stream: none (accepted since the transport's first version, and named
    # in its error message, 'must be sse (or none)') was documented nowhere. It is the
    # default written out, as is null: no event stream asked for (Accept as httpx sends
    # it), one the endpoint sends still assembled.
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    body = {
        "model": "fake-model",
        "stream": True,
        "messages": [{"role": "user", "content": "{{goal}}"}],
    }
    write_profile(rook_workspace, {"execute": chat(agent_server, body=body, stream=off)})
    rook_workspace.scenario(
        {"id": "streamed", "goal": "Say hi", "criteria": [{"equals": "echo: Say hi"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert agent_server.seen("POST")[0]["headers"]["Accept"] == "*/*"  # not asked for
    [execute] = record_hooks(rook_workspace, run_id_of(r), "streamed.1", "execute")
    assert execute["details"]["http"]["stream"]["done"] is True


def test_an_event_stream_answer_is_assembled_without_stream_sse(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    # SPEC 8: "Responses streamed as server-sent events are assembled". An entry
    # with no stream: key (as rook profile add writes from `curl -N ... "stream": true`)
    # whose endpoint answers text/event-stream: the raw "data: {...}" lines were
    # judged as the answer
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    body = {
        "model": "fake-model",
        "stream": True,
        "messages": [{"role": "user", "content": "{{goal}}"}],
    }
    write_profile(rook_workspace, {"execute": chat(agent_server, body=body)})
    rook_workspace.scenario(
        {"id": "streamed", "goal": "Say hi", "criteria": [{"equals": "echo: Say hi"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.report["scenarios"][0]["turns"][0]["usage"] == {"input": 2, "output": 2}
    [execute] = record_hooks(rook_workspace, run_id_of(r), "streamed.1", "execute")
    assert execute["details"]["http"]["stream"]["done"] is True
    assert agent_server.seen("POST")[0]["headers"]["Accept"] == "*/*"  # not asked for

    # and one cut short is no answer either, stream: sse or not
    agent_server.streams["cut"] = _chunk("Hello ") + _chunk("wor")
    entry = _stream_entry(agent_server, "cut")
    del entry["http"]["stream"]
    write_profile(rook_workspace, {"execute": entry}, env=())
    r = rook_cli("run", "--json")
    assert r.statuses() == {"streamed": "error"}
    assert "cut short" in r.report["scenarios"][0]["reason"]


def test_an_event_stream_is_known_whatever_the_case_of_its_content_type(
    rook_cli, rook_workspace, agent_server
):
    # media types are case-insensitive (RFC 9110); 'Text/Event-Stream' was read as a
    # plain body even with stream: sse, and the raw 'data:' lines went to extraction
    from urllib.parse import urlencode

    text = 'data: {"output": "streamed answer"}\n\n'
    query = urlencode({"type": "Text/Event-Stream; charset=UTF-8", "enc": "utf-8", "text": text})
    entry = {
        "url": f"{agent_server.url}/charset?{query}",
        "stream": "sse",
        "extract": {"output": "events[0].output"},
    }
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"equals": "streamed answer"}]})
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["status"] == "passed", r.report["scenarios"][0]["reason"]


def test_a_generic_event_stream_and_a_text_answer(rook_cli, rook_workspace, agent_server):
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"{agent_server.url}/events",
                    "body": {"q": "{{goal}}"},
                    "stream": "sse",
                    "extract": {"output": "text", "evidence": {"last": "events[-1].note"}},
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "ev", "goal": "go", "criteria": [{"equals": "first second"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.report["scenarios"][0]["turns"][0]["evidence"] == {"last": "json event"}

    write_profile(
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/text"}}}, env=()
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1  # "first second" is not the text answer
    assert r.report["scenarios"][0]["turns"][0]["output"] == "a plain answer"


def test_a_text_answer_is_read_in_the_charset_its_content_type_declares(
    rook_cli, rook_workspace, agent_server
):
    # text/plain; charset=iso-8859-1: "café" must not become "caf\ufffd"
    write_profile(
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/latin1"}}}, env=()
    )
    rook_workspace.scenario(
        {"id": "fr", "goal": "go", "criteria": [{"equals": "Le caf\u00e9 est pr\u00eat"}]}
    )
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["turns"][0]["output"] == "Le caf\u00e9 est pr\u00eat"
    assert r.exit_code == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    "ctype, enc",
    [
        # UTF-16 without a byte order mark: a decoder fed in pieces refuses it
        ("text/plain; charset=utf-16", "utf-16-le"),
        # not a text encoding at all (codecs knows it): no answer read as bytes
        ("text/plain; charset=base64", "utf-8"),
        ("text/plain; charset=hex", "utf-8"),
        # JSON is UTF-8 whatever charset it is labelled with (RFC 8259, as httpx's
        # .json() reads it): a server labelling its UTF-8 JSON ISO-8859-1
        ('application/json; charset="ISO-8859-1"', "utf-8"),
    ],
)
def test_a_declared_charset_never_breaks_or_garbles_the_answer(
    rook_cli, rook_workspace, agent_server, ctype, enc
):
    """Decoding in the Content-Type's charset (321c967) raised for UTF-16 without
    a BOM ('transport raised UnicodeError') and for a codec that is not a text
    encoding, and read UTF-8 JSON labelled ISO-8859-1 as 'cafÃ©'."""
    from urllib.parse import urlencode

    answer = "Le caf\u00e9 est pr\u00eat"
    text = json.dumps({"output": answer}, ensure_ascii=False) if "json" in ctype else answer
    query = urlencode({"type": ctype, "enc": enc, "text": text})
    entry = {"url": f"{agent_server.url}/charset?{query}"}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "fr", "goal": "go", "criteria": [{"contains": "caf"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "passed", s["reason"]
    assert s["turns"][0]["output"] == answer


@pytest.mark.parametrize("ctype", ["application/json", "text/plain"])
def test_an_answer_in_utf_16_is_named_so(rook_cli, rook_workspace, agent_server, ctype):
    # was "the response is binary (application/json, 34 bytes), not text or JSON"
    from urllib.parse import urlencode

    query = urlencode({"type": ctype, "enc": "utf-16", "text": '{"output": "ok"}'})
    entry = {"url": f"{agent_server.url}/charset?{query}"}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error", s
    assert f"the response is UTF-16 text ({ctype}, 34 bytes), which Rook reads only " in (
        s["reason"]), s["reason"]


def test_an_error_event_fails_the_hook_with_what_it_said(rook_cli, rook_workspace, agent_server):
    # event: error with {"message": ...} (no "error" key): the message is the diagnosis
    entry = {"http": {"url": f"{agent_server.url}/events/error", "body": {}, "stream": "sse"}}
    write_profile(rook_workspace, {"execute": entry}, env=())
    rook_workspace.scenario({"id": "ev", "goal": "go", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "error"
    assert "the event stream reported an error" in scenario["reason"]
    assert "model overloaded" in scenario["reason"], scenario["reason"]


@pytest.mark.parametrize(
    ("stream", "said"),
    [
        (
            b'data: {"error": {"message": "rotated", "refresh_token": "rt-55503-secret"}}\n\n',
            'the event stream reported an error: {"message": "<string, 7 chars>", '
            '"refresh_token": "<string, 15 chars>"}',
        ),
        (
            b'data: {"choices": [{"delta": "rt-55503-secret"}]}\n\n',
            "chat chunk 1 of the event stream is malformed: choices[0].delta is "
            '"<string, 15 chars>", expected an object',
        ),
    ],
)
def test_a_prepare_event_stream_that_fails_shows_its_shape_not_its_values(
    rook_cli, rook_workspace, agent_server, stream, said
):
    """A prepare answered with an event stream that reported an error, or a malformed
    chat chunk, quoted its payload (here a refresh token) into the record and the
    terminal, where a prepare response is otherwise shown only by its shape."""
    agent_server.streams["p"] = stream
    prepare = {"http": {"url": f"{agent_server.url}/stream/p", "save": {"token": "text"}}}
    execute = {"http": {"url": f"{agent_server.url}/echo", "body": {"t": "{{token}}"}}}
    write_profile(rook_workspace, {"prepare": prepare, "execute": execute}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert f"/stream/p: {said} (" in reason, reason
    assert "rt-55503" not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr


def _chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"id": "c1", "choices": [choice]}).encode() + b"\n\n"


def _stream_entry(server, key: str) -> dict:
    return {
        "http": {
            "url": f"{server.url}/stream/{key}",
            "body": {"q": "{{goal}}"},
            "stream": "sse",
            "retries": 0,
            "extract": {"output": "choices[0].message.content || text"},
        }
    }


def test_a_chat_streams_other_message_fields_are_assembled_as_without_streaming(
    rook_cli, rook_workspace, agent_server
):
    """Only a delta's content and tool_calls were assembled: a refusal streamed in
    delta.refusal (OpenAI), a reasoning model's delta.reasoning_content (DeepSeek,
    vLLM) and a legacy delta.function_call were dropped, so the paths that read them
    without streaming (choices[0].message.refusal ...) found nothing, and a scenario
    expecting a refusal failed only because the endpoint streamed it."""

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"id": "c1", "choices": [choice]}).encode() + b"\n\n"

    agent_server.streams["refusal"] = (
        chunk({"role": "assistant", "content": None, "refusal": ""})
        + chunk({"refusal": "I cannot help"})
        + chunk({"refusal": " with that."}, "stop")
        + b"data: [DONE]\n\n"
    )
    agent_server.streams["reasoning"] = (
        chunk({"role": "assistant", "reasoning_content": "Six times "})
        + chunk({"reasoning_content": "seven."})
        + chunk({"content": "42"}, "stop")
        + b"data: [DONE]\n\n"
    )
    agent_server.streams["legacy"] = (
        chunk({"role": "assistant", "content": None, "function_call": {"name": "look", "arguments": ""}})
        + chunk({"function_call": {"arguments": '{"id": '}})
        + chunk({"function_call": {"arguments": '"ORD-1"}'}})
        + chunk({}, "function_call")
        + b"data: [DONE]\n\n"
    )
    # Perplexity repeats its citations in every chunk; logprobs come a token a chunk
    cited = {"id": "c1", "citations": ["https://a.example"], "choices": []}
    for n, token in enumerate(("Par", "is")):
        choice = {"index": 0, "delta": {"content": token}, "finish_reason": "stop" if n else None}
        choice["logprobs"] = {"content": [{"token": token, "logprob": -0.5}]}
        cited["choices"] = [choice]
        agent_server.streams["cited"] = agent_server.streams.get("cited", b"") + (
            b"data: " + json.dumps(cited).encode() + b"\n\n"
        )
    agent_server.streams["cited"] += b"data: [DONE]\n\n"
    entry = _stream_entry(agent_server, "{{scenario}}")
    entry["http"]["extract"] = {
        "output": "choices[0].message.content || choices[0].message.refusal || 'none'",
        "calls": "choices[0].message.function_call | [{name: name, arguments: arguments}] || `[]`",
        "evidence": {"reasoning": "choices[0].message.reasoning_content || 'none'"},
    }
    write_profile(rook_workspace, {"execute": entry}, env=())
    for sid, criterion in (
        ("refusal", {"equals": "I cannot help with that."}),
        ("reasoning", {"equals": "42"}),
        ("legacy", {"called": {"name": "look", "arguments": {"id": "ORD-1"}}}),
        ("cited", {"equals": "Paris"}),
    ):
        rook_workspace.scenario({"id": sid, "goal": "go", "criteria": [criterion]})
    r = rook_cli("run", "--json")
    assert set(r.statuses().values()) == {"passed"}, [s["reason"] for s in r.report["scenarios"]]
    [reasoning] = [s for s in r.report["scenarios"] if s["id"] == "reasoning"]
    assert reasoning["turns"][0]["evidence"]["reasoning"] == "Six times seven."
    [execute] = record_hooks(rook_workspace, run_id_of(r), "cited.1", "execute")
    answer = json.loads(execute["details"]["http"]["response"])
    assert answer["citations"] == ["https://a.example"]
    assert [t["token"] for t in answer["choices"][0]["logprobs"]["content"]] == ["Par", "is"]


def test_a_streamed_answer_with_no_text_is_no_empty_text(rook_cli, rook_workspace, agent_server):
    """A chat stream whose deltas carried tool calls and no text (content null, as
    OpenAI streams one) was assembled with content "", so choices[0].message.content
    found an empty answer, judged (not_contains passed on it), where the same answer
    not streamed has content null and the path finds nothing: a hook failure, never a
    silent empty answer. A stream that sent "" and no more is an empty text, as before."""
    call = {"index": 0, "id": "c1", "type": "function"}
    call["function"] = {"name": "cancel_order", "arguments": "{}"}
    for key, content in (("calls", None), ("blank", "")):
        first = {"index": 0, "delta": {"role": "assistant", "content": content}}
        if content is None:
            first["delta"]["tool_calls"] = [call]
        end = {"index": 0, "delta": {}, "finish_reason": "stop"}
        agent_server.streams[key] = b"".join(
            b"data: " + json.dumps({"id": "c1", "choices": [c]}).encode() + b"\n\n"
            for c in (first, end)
        ) + b"data: [DONE]\n\n"
    entry = _stream_entry(agent_server, "{{scenario}}")
    entry["http"]["extract"] = {"output": "choices[0].message.content"}
    write_profile(rook_workspace, {"execute": entry}, env=())
    for sid in ("calls", "blank"):
        rook_workspace.scenario({"id": sid, "goal": "go", "criteria": [{"not_contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"calls": "error", "blank": "passed"}, r.stdout
    [calls] = [s for s in r.report["scenarios"] if s["id"] == "calls"]
    assert "'choices[0].message.content' found nothing" in calls["reason"], calls["reason"]


def test_a_stream_cut_short_fails_the_hook_rather_than_judging_half_an_answer(
    rook_cli, rook_workspace, agent_server
):
    # the connection closes mid-event: no finish_reason, no [DONE]; "Hello wor" is no answer
    agent_server.streams["cut"] = _chunk("Hello ") + _chunk("wor") + b'data: {"choi'
    # nothing but keep-alive comments, then the end: no answer at all
    agent_server.streams["empty"] = b": ping\n\n: ping\n\n"
    # complete (a finish_reason) though the server sends no [DONE]: the answer stands
    agent_server.streams["finished"] = _chunk("Hello ") + _chunk("world", "stop")
    write_profile(
        rook_workspace, {"execute": _stream_entry(agent_server, "{{scenario}}")}, env=()
    )
    for sid in ("cut", "empty", "finished"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"not_contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"cut": "error", "empty": "error", "finished": "passed"}
    [cut] = record_hooks(rook_workspace, run_id_of(r), "cut.1", "execute")
    assert cut["status"] == "failed"
    assert "the event stream ended before data: [DONE]" in cut["diagnosis"]
    assert "cut short" in cut["diagnosis"]
    assert cut["details"]["http"]["stream"] == {"events": 2, "done": False}
    assert "Hello wor" in cut["details"]["http"]["response"]  # the partial answer is evidence
    [empty] = record_hooks(rook_workspace, run_id_of(r), "empty.1", "execute")
    assert "the event stream ended before any event" in empty["diagnosis"]


def test_a_stream_cut_in_the_middle_of_an_event_is_no_answer(
    rook_cli, rook_workspace, agent_server
):
    """A stream of the endpoint's own shape (no chat chunks, so no finish_reason to
    tell) whose connection closed in the middle of an event: the events before it
    were judged as the whole answer ("The refund was" passed a criterion that the
    rest, "not issued", would have failed). An event left without its ending blank
    line is a cut short stream; a last 'data: [DONE]' without one is still the end."""
    agent_server.streams["cut"] = b"data: The refund was\n\ndata:  not iss"
    agent_server.streams["nl"] = b"data: The refund was\n\ndata:  not issued\n"
    agent_server.streams["done"] = b"data: The refund was\n\ndata:  issued\n\ndata: [DONE]\n"
    agent_server.streams["whole"] = b": hi\r\n\r\ndata: The refund was\r\n\r\ndata:  issued\r\n\r\n"
    entry = _stream_entry(agent_server, "{{scenario}}")
    entry["http"]["extract"] = {"output": "text"}
    write_profile(rook_workspace, {"execute": entry}, env=())
    for sid in ("cut", "nl", "done", "whole"):
        criteria = [{"contains": "refund was"}]
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": criteria})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"cut": "error", "nl": "error", "done": "passed", "whole": "passed"}
    for sid in ("cut", "nl"):
        [hook] = record_hooks(rook_workspace, run_id_of(r), f"{sid}.1", "execute")
        assert "the event stream ended in the middle of an event" in hook["diagnosis"], hook
        assert "cut short" in hook["diagnosis"]
        assert hook["details"]["http"]["stream"] == {"events": 1, "done": False}
    [done] = record_hooks(rook_workspace, run_id_of(r), "done.1", "execute")
    assert done["details"]["http"]["stream"] == {"events": 2, "done": True}


def test_a_json_lines_stream_with_a_line_that_is_not_json_is_no_answer(
    rook_cli, rook_workspace, agent_server
):
    """A stream of JSON lines (Ollama's application/x-ndjson) whose connection closed
    in the middle of a line: the cut line was kept as a text event, which
    join('', events[].response) passes over, so the lines before it were judged as
    the whole answer ("The refund was" passed; " not issued" was cut). A line that is
    not JSON fails the hook, naming it, as a body labelled JSON that does not parse."""
    lines = ['{"response": "The refund was"}', '{"response": " issued", "done": true}']
    bodies = {  # the goal is the body the server answers with
        "whole": "\n".join(lines) + "\n",
        "cut": lines[0] + '\n{"response": " not iss',
        "bad": lines[0] + "\nnot json\n" + lines[1] + "\n",
        "string": '"The refund was"\n',  # a JSON string is JSON, a text event
    }
    entry = {
        "http": {
            "url": f"{agent_server.url}/charset",
            "query": {"type": "application/x-ndjson", "text": "{{goal}}"},
            "extract": {"output": "join('', events[].response) || events[0]"},
        }
    }
    write_profile(rook_workspace, {"execute": entry}, env=())
    for sid, text in bodies.items():
        rook_workspace.scenario({"id": sid, "goal": text, "criteria": [{"contains": "refund was"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"whole": "passed", "cut": "error", "bad": "error", "string": "passed"}
    said = "line 2 of the response (application/x-ndjson: one JSON value a line) is not JSON"
    cut = record_hooks(rook_workspace, run_id_of(r), "cut.1", "execute")[0]["diagnosis"]
    assert said in cut and "ended in the middle of it: the answer was cut short" in cut, cut
    bad = record_hooks(rook_workspace, run_id_of(r), "bad.1", "execute")[0]["diagnosis"]
    assert said in bad and "cut short" not in bad, bad


def test_the_size_cap_holds_while_an_event_is_still_arriving(
    rook_cli, rook_workspace, agent_server
):
    # one event, then a data: line that never ends (here 300 kB, then the connection closes):
    # it was held in memory whatever its size, and the answer "hi" was judged
    agent_server.streams["flood"] = b"data: hi\n\ndata: " + b"y" * 300_000
    write_profile(
        rook_workspace,
        {"execute": _stream_entry(agent_server, "flood")},
        env=(),
        limits={"stdout_bytes": 100_000},
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert "the event stream exceeded the 100000-byte cap" in execute["diagnosis"]


@pytest.mark.parametrize("stopped", ["timeout", "cap"])
def test_a_stream_stopped_by_the_timeout_or_the_cap_keeps_what_it_had_sent(
    rook_cli, rook_workspace, agent_server, stopped, monkeypatch
):
    """An event stream that stalls until the hook's timeout, or whose next event
    runs over the cap, after two chunks ("Hello ", "wor"): the record kept only
    the request (a timeout) or the diagnosis (the cap), not the status nor the
    events read, which a stream the server closed as early keeps as evidence."""
    secret = "sk-" + "q" * 20
    agent_server.streams["k"] = _chunk("Hello ") + _chunk("wor " + secret)
    entry = _stream_entry(agent_server, "k")
    extra = {}
    if stopped == "timeout":
        entry["http"]["url"] = f"{agent_server.url}/stalled/k"
        entry["timeout_seconds"] = 1
    else:
        agent_server.streams["k"] += b"data: " + b"y" * 300_000
        extra["limits"] = {"stdout_bytes": 100_000}
    monkeypatch.setenv("AGENT_KEY", secret)
    write_profile(rook_workspace, {"execute": entry}, **extra)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "Hello"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["status"] == ("timeout" if stopped == "timeout" else "failed"), execute
    http = execute["details"]["http"]
    assert (http["status"], http["stream"]) == (200, {"events": 2, "done": False}), http
    assert "Hello wor " in http["response"], http
    assert secret not in rook_workspace.all_run_text(run_id_of(r))


@pytest.mark.parametrize("shape", ["text", "json", "chat"])
def test_a_stream_stopped_in_the_middle_of_a_secret_keeps_no_piece_of_it(
    rook_cli, rook_workspace, agent_server, monkeypatch, shape
):
    # the events read before the hook's timeout were kept as read: the stream
    # stopped after the first half of the key, which is no secret on its own,
    # so it reached the record (and, as the text of the events, the report)
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    secret = agent_server.api_key
    texts = ["hello ", "the key is " + secret[: len(secret) // 2 + 1]]
    if shape == "chat":
        agent_server.streams["k"] = b"".join(_chunk(t) for t in texts)
    else:
        events = texts if shape == "text" else [json.dumps({"delta": {"text": t}}) for t in texts]
        agent_server.streams["k"] = b"".join(b"data: " + e.encode() + b"\n\n" for e in events)
    entry = _stream_entry(agent_server, "k")
    entry["http"]["url"] = f"{agent_server.url}/stalled/k"
    entry["timeout_seconds"] = 1
    write_profile(rook_workspace, {"execute": entry})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hello"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["status"] == "timeout", execute
    response = execute["details"]["http"]["response"]
    assert "hello " in response and "the key is [redacted:AGENT_KEY]" in response, response
    text = r.stdout + r.stderr + rook_workspace.all_run_text(run_id_of(r))
    text = text.replace(str(rook_workspace.root), "<ws>")
    assert_no_piece(secret, text)


def test_a_stream_cut_off_by_an_interrupt_keeps_what_it_had_sent(
    rook_workspace, agent_server, monkeypatch
):
    """SIGINT while an event stream had sent two chunks and stalled: the interrupted
    hook's record (in the scenario run's interrupted attempt) kept neither its
    attempts nor the status and events read; it keeps them, redacted. Its
    diagnosis said its process group was killed: an HTTP hook has none, it says
    the request was abandoned."""
    import signal
    import time

    secret = "sk-" + "q" * 20
    agent_server.streams["k"] = _chunk("Hello ") + _chunk("wor " + secret)
    entry = _stream_entry(agent_server, "k")
    entry["http"]["url"] = f"{agent_server.url}/stalled/k"
    monkeypatch.setenv("AGENT_KEY", secret)
    write_profile(rook_workspace, {"execute": entry})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "Hello"}]})
    proc = subprocess.Popen([sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not agent_server.seen(path_prefix="/stalled/k"):
        time.sleep(0.05)
    time.sleep(0.5)  # the two chunks are read
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_id = json.loads(out)["run"]["id"]
    (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
    (hook,) = attempt["hooks"]
    assert hook["status"] == "interrupted", hook
    # no process was killed: an HTTP hook's record never says its process group was
    assert hook["diagnosis"] == "interrupted; its request was cancelled", hook
    assert "process" not in hook["details"], hook
    assert [a["url"] for a in hook["details"]["attempts"]] == [f"{agent_server.url}/stalled/k"]
    http = hook["details"]["http"]
    assert (http["status"], http["stream"]) == (200, {"events": 2, "done": False}), http
    assert "Hello wor [redacted:AGENT_KEY]" in http["response"], http
    assert secret not in rook_workspace.all_run_text(run_id)

@pytest.mark.parametrize(
    ("choice", "named"),
    [
        ({"delta": "oops"}, "choices[0].delta"),
        ({"delta": {"tool_calls": [{"index": 0, "function": "x"}]}}, "tool_calls[0].function"),
        ({"index": [1], "delta": {"content": "a"}}, "choices[0].index"),
        ({"delta": {"tool_calls": [{"index": 0, "function": {"name": 7}}]}}, "function.name"),
        ({"delta": {"tool_calls": {"index": 0}}}, "choices[0].delta.tool_calls"),
    ],
)
def test_a_malformed_chat_chunk_fails_the_hook_naming_it(
    rook_cli, rook_workspace, agent_server, choice, named
):
    agent_server.streams["bad"] = (
        _chunk("Hello ")
        + b"data: "
        + json.dumps({"choices": [choice]}).encode()
        + b"\n\ndata: [DONE]\n\n"
    )
    write_profile(rook_workspace, {"execute": _stream_entry(agent_server, "bad")}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"not_contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert "raised" not in execute["diagnosis"], execute["diagnosis"]
    assert "chunk 2" in execute["diagnosis"] and named in execute["diagnosis"]
    assert execute["details"]["attempts"][0]["status"] == 200  # the evidence is kept
    assert execute["details"]["http"]["stream"] == {"events": 2, "done": True}


@pytest.mark.parametrize(
    ("payload", "pad"),
    [
        # a tool_calls that is an object: the chunk's field is quoted, cut at 200
        (lambda s: {"choices": [{"index": 0, "delta": {"tool_calls": {"x": s}}}]}, 183),
        # an error event: its payload is quoted, cut at 500
        (lambda s: {"error": {"message": s}}, 477),
    ],
)
def test_a_stream_error_quoting_a_chunk_never_cuts_a_secret(
    rook_cli, rook_workspace, agent_server, monkeypatch, payload, pad
):
    # the quoted chunk was cut before redaction: the cut fell inside the echoed
    # secret and its first characters reached the record, the report and the terminal
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    secret = agent_server.api_key
    body = json.dumps(payload("p" * pad + secret)).encode()
    agent_server.streams["echo"] = b"data: " + body + b"\n\ndata: [DONE]\n\n"
    write_profile(rook_workspace, {"execute": _stream_entry(agent_server, "echo")})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"not_contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert "[redacted:AGENT_KEY]" in execute["diagnosis"], execute["diagnosis"]
    text = shown_anywhere(rook_workspace, r)
    assert_no_piece(secret, text)


@pytest.mark.parametrize("named", [False, True])
def test_a_secret_split_between_two_stream_events_leaves_no_piece_behind(
    rook_cli, rook_workspace, agent_server, monkeypatch, named
):
    # each event was redacted on its own: neither half is the secret, so both
    # halves reached the record's events, the report and the terminal, and
    # put together they are the key. Named events (event: answer) were masked
    # in events but not in by_event.answer.events, which holds them again
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    secret = agent_server.api_key
    cut = len(secret) // 2
    events = ["the key is " + secret[:cut], secret[cut:] + " (do not share)", "bye"]
    name = b"event: answer\n" if named else b""
    agent_server.streams["split"] = (
        b"".join(name + b"data: " + e.encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    )
    entry = _stream_entry(agent_server, "split")
    entry["http"]["extract"] = {"output": "text", "evidence": {"first": "events[0]"}}
    write_profile(rook_workspace, {"execute": entry})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "bye"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "the key is [redacted:AGENT_KEY] (do not share)bye", turn
    assert turn["evidence"] == {"first": "the key is [redacted:AGENT_KEY]"}, turn
    text = shown_anywhere(rook_workspace, r)
    assert "[redacted:AGENT_KEY] (do not share)" in text, "the second event is recorded, masked"
    assert_no_piece(secret, text)



def test_a_token_of_a_plain_text_stream_that_reads_as_a_number_is_text(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """A plain-text token stream's piece "42" (or "true", "null") parsed as JSON was a
    number, left out of the stream's text: "The answer is ." was judged. And a
    secret split so that a piece was digits alone lost that piece from the text the
    events are joined into, so no piece of it was found: every other piece reached
    the record. Such a payload is text, as every other one of a text stream."""
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    secret = "Zq9-s3cr3t-v4lue-77"  # a key of the agent's own, not the one it is called with
    monkeypatch.setenv("AGENT_KEY2", secret)
    answer = ["The answer is ", "42", ". ", "true", " ", "null", " ", "1e3", "; key "]
    answer += [secret[:8], secret[8:-2], "77", " bye"]  # the key's last piece: digits alone
    agent_server.streams["numbers"] = (
        b"".join(b"data: " + e.encode() + b"\n\n" for e in answer) + b"data: [DONE]\n\n"
    )
    entry = _stream_entry(agent_server, "numbers")
    entry["http"]["extract"] = {"output": "text", "evidence": {"second": "events[1]"}}
    write_profile(rook_workspace, {"execute": entry}, env=("AGENT_KEY", "AGENT_KEY2"))
    rook_workspace.scenario(
        {"id": "s", "goal": "g", "criteria": [{"contains": "is 42. true null 1e3"}]}
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"].startswith("The answer is 42. true null 1e3; key [redacted:"), turn
    assert turn["evidence"] == {"second": "42"}, turn
    assert_no_piece(secret, shown_anywhere(rook_workspace, r))


def test_a_long_stream_repeating_a_secret_is_redacted_event_by_event(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """A stream of 10,000 small events (a token stream) repeating the key 1,000
    times, each split between events: each event's share of each key is masked.
    Redactor.pieces read every secret found for every event (events x secrets:
    seconds for a long answer a prompt-injected agent repeats the key in); it
    now reads each once, in the events' order. The same markers as before."""
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    secret = agent_server.api_key
    answer = "".join(f"key {secret} n{i}; " for i in range(1000)) + "bye"
    events = [answer[i : i + 4] for i in range(0, len(answer), 4)]
    assert len(events) > 10_000
    agent_server.streams["long"] = (
        b"".join(b"data: " + json.dumps({"delta": {"text": e}}).encode() + b"\n\n" for e in events)
        + b"data: [DONE]\n\n"
    )
    entry = _stream_entry(agent_server, "long")
    entry["http"]["extract"] = {"output": "join('', events[].delta.text)"}
    write_profile(rook_workspace, {"execute": entry})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "bye"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    output = r.report["scenarios"][0]["turns"][0]["output"]
    assert output.count("n999;") == 1 and secret not in output
    assert_no_piece(secret, shown_anywhere(rook_workspace, r))

def test_a_secret_split_between_two_json_stream_events_leaves_no_piece_behind(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    # events that are JSON objects ({"delta": {"text": ...}}, as most streaming
    # APIs send them) were redacted each on its own: only text events were joined,
    # so both halves of the key reached the record's events, the report and the
    # terminal (a diagnosis shows the response)
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    secret = agent_server.api_key
    cut = len(secret) // 2
    texts = ["the key is " + secret[:cut], secret[cut:] + " (do not share)", "bye"]
    events = [{"type": "delta", "index": i, "delta": {"text": t}} for i, t in enumerate(texts)]
    agent_server.streams["split"] = (
        b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        + b"data: [DONE]\n\n"
    )
    entry = _stream_entry(agent_server, "split")
    entry["http"]["extract"] = {
        "output": "join('', events[].delta.text)",
        "evidence": {"first": "events[0].delta.text", "kind": "events[1].type"},
    }
    write_profile(rook_workspace, {"execute": entry})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "bye"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    # each event that held a share shows the marker: joined, the output shows it twice
    joined = "the key is [redacted:AGENT_KEY][redacted:AGENT_KEY] (do not share)bye"
    assert turn["output"] == joined, turn
    assert turn["evidence"] == {"first": "the key is [redacted:AGENT_KEY]", "kind": "delta"}, turn
    no_output = _stream_entry(agent_server, "split")  # no output: its diagnosis shows the events
    no_output["http"]["extract"] = {"output": "answer"}
    write_profile(rook_workspace, {"execute": no_output})
    failed = rook_cli("run", "--json")
    assert failed.statuses() == {"s": "error"}, failed.stdout + failed.stderr
    text = shown_anywhere(rook_workspace, r, failed)
    assert "[redacted:AGENT_KEY] (do not share)" in text, "the second event is recorded, masked"
    assert_no_piece(secret, text)


class _RunIdStreams(dict):
    """``agent_server.streams`` whose events name the run that asks for them (its
    directory exists by the time execute runs), its id split between two events."""

    def __init__(self, ws, tail: str) -> None:
        super().__init__()
        self.ws, self.tail = ws, tail

    def get(self, key, default=None):
        [run] = [p.name for p in self.ws.runs_dir.iterdir() if p.is_dir()]
        cut = {"head": 2, "year": 6}[key]  # inside the year, or just after it
        texts = ["run " + run[:cut], run[cut:] + " ok", self.tail]
        events = [{"delta": {"text": t}} for t in texts]
        return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + (
            b"data: [DONE]\n\n"
        )


@pytest.mark.parametrize("cut", ["head", "year"])
@pytest.mark.parametrize("tail", ["bye", "pin 2026"])
def test_a_run_id_split_between_stream_events_is_kept_whole(
    rook_cli, rook_workspace, agent_server, monkeypatch, cut, tail
):
    # the run's id is kept as it is though it holds a PIN of 2026 (every id made
    # that year does), but split between two events, with the PIN elsewhere in
    # their text, the share of the id holding its year (202612...) was masked in
    # its event: the answer joined from them said 'run [redacted:PIN]...'. (A
    # record's view of one event alone, its evidence here, holds no whole id to
    # keep, and is redacted as any text is.)
    year = __import__("time").strftime("%Y", __import__("time").gmtime())
    monkeypatch.setenv("PIN", year)
    agent_server.streams = _RunIdStreams(rook_workspace, tail.replace("2026", year))
    entry = _stream_entry(agent_server, cut)
    entry["http"]["extract"] = {
        "output": "join('', events[].delta.text)",
        "evidence": {"first": "events[0].delta.text", "second": "events[1].delta.text"},
    }
    write_profile(rook_workspace, {"execute": entry}, env=("PIN",))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    run = r.report["run"]["id"]
    at = {"head": 2, "year": 6}[cut]
    turn = r.report["scenarios"][0]["turns"][0]
    masked = "bye" if tail == "bye" else "pin [redacted:PIN]"
    assert turn["output"] == f"run {run} ok{masked}", turn
    assert turn["evidence"]["second"] == run[at:] + " ok", turn


def test_a_handle_from_json_stream_events_holding_a_secret_is_sent_on_as_it_came(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    # JSON events' strings were redacted before the handle was read from them: a
    # conversation handle holding an env value (a PIN inside a dated id) came out as
    # conv-[redacted:PIN]-77 and was sent so to the next hook, where a plain JSON
    # answer's handle is sent on as it came (the record keeps it redacted)
    monkeypatch.setenv("PIN", "7331")
    handle = "conv-7331-77"
    events = [{"conversation_id": handle, "delta": {"text": t}} for t in ("Hel", "lo")]
    agent_server.streams["opened"] = (
        b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        + b"data: [DONE]\n\n"
    )
    opened = _stream_entry(agent_server, "opened")
    opened["http"]["extract"] = {"conversation": "events[0].conversation_id"}
    execute = {"http": {"url": f"{agent_server.url}/echo", "retries": 0,
                        "body": {"conv": "{{conversation}}", "q": "{{goal}}"},
                        "extract": {"output": "received.q"}}}
    write_profile(rook_workspace, {"open": opened, "execute": execute}, env=("PIN",))
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    sent = [q["json"]["conv"] for q in agent_server.requests if q["path"] == "/echo"]
    assert sent == [handle], sent
    record = rook_workspace.record(r.report["run"]["id"], "s.1")
    assert record["conversation"] == "conv-[redacted:PIN]-77"  # on disk: redacted


def test_a_path_that_finds_nothing_fails_the_hook_and_shows_the_response(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    extract = {**CHAT_EXTRACT, "output": "choices[0].message.contnt"}
    write_profile(rook_workspace, {"execute": chat(agent_server, extract=extract)})
    rook_workspace.scenario({"id": "typo", "goal": "where is it", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "error"
    reason = scenario["reason"]
    assert "extract.output" in reason
    assert "'choices[0].message.contnt' found nothing" in reason
    assert "HTTP 200" in reason and '"content": "echo: where is it"' in reason
    assert scenario["turns"] == []


@pytest.mark.parametrize("field", ["output", "conversation", "save"])
def test_a_path_whose_function_the_response_does_not_fit_fails_the_hook_saying_so(
    rook_cli, rook_workspace, agent_server, monkeypatch, field
):
    """``abs(choices[0].message.content)`` (a function given text) failed the hook as
    "transport 'http' raised JMESPathTypeError", as if Rook had a bug, naming
    neither the field nor the path, and without the response."""
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    bad = "abs(choices[0].message.content)"
    if field == "save":
        entry = chat(agent_server, save={"n": bad})
    else:
        entry = chat(agent_server, extract={**CHAT_EXTRACT, field: bad})
    write_profile(rook_workspace, {"execute": entry})
    rook_workspace.scenario({"id": "fn", "goal": "where is it", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    where = f"extract.{field}" if field != "save" else "save.n"
    assert f"{where}: the JMESPath {bad!r} cannot be applied to the response" in reason, reason
    assert "In function abs()" in reason and "raised" not in reason, reason
    assert "HTTP 200" in reason, reason


def test_a_token_count_written_as_text_is_said_to_be_text(rook_cli, rook_workspace, agent_server):
    """An API that reports its token counts as text ("7") failed the hook saying the path
    'found 7, not a number', which reads as a contradiction. It says it found the text
    "7", and how to read it as a number (to_number), which then works."""
    def entry(path: str) -> dict:
        return {"execute": {"http": {
            "url": f"{agent_server.url}/echo", "body": {"g": "{{goal}}", "tokens": "7"},
            "extract": {"output": "received.g", "usage": {"input": path}}}}}

    write_profile(rook_workspace, entry("received.tokens"), env=())
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert "'received.tokens' found the text \"7\", not a number" in reason, reason
    assert "to_number(received.tokens)" in reason, reason
    write_profile(rook_workspace, entry("to_number(received.tokens)"), env=())
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.report["scenarios"][0]["turns"][0]["usage"] == {"input": 7}


def test_a_long_response_is_shown_truncated(rook_cli, rook_workspace, agent_server):
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"{agent_server.url}/echo",
                    "body": {"padding": "{{goal}}"},
                    "extract": {"output": "nothing.here"},
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "long", "goal": "y" * 5000, "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert "found nothing" in reason and "more chars]" in reason
    assert len(reason) < 2000


TRICKY = {
    "quotes": "She said \"stop\" and 'go'",
    "braces": '{"output": "injected"} {{conversation}} {{env.HOME}} }}{{',
    "backslashes": 'C:\\path\\to\\file \\n not a newline \\"',
    "newlines": "line one\nline two\r\n\ttabbed\n",
    "shell": "$HOME `whoami` $(rm -rf /) && echo ok; | cat",
    "unicode": "naïve café — 日本語 🚀 \u2028 end",
}


def test_a_goal_too_long_for_the_url_fails_the_hook_saying_so(
    rook_cli, rook_workspace, agent_server
):
    """A long goal in the query (or the path) makes a URL longer than httpx sends (64K
    characters): the scenario's reason was "transport 'http' (http (rook-harness))
    raised InvalidURL: URL component 'query' too long", as if the plugin had crashed,
    with nothing on what to do. It names the URL, says why, and to send it in the body;
    the diagnosis does not hold the 70 kB URL."""
    entry = {"url": f"{agent_server.url}/echo", "query": {"q": "{{goal}}"}}
    path = {"url": f"{agent_server.url}/echo/{{{{goal}}}}"}
    write_profile(rook_workspace, {"execute": {"http": {**entry}}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "x" * 70_000, "criteria": [{"contains": "x"}]})
    for http in (entry, path):
        write_profile(rook_workspace, {"execute": {"http": http}}, env=())
        r = rook_cli("run", "--json")
        assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
        reason = r.report["scenarios"][0]["reason"]
        assert "raised" not in reason, reason[:300]
        assert "the URL is too long to send" in reason, reason[:300]
        assert "send long text such as the goal in the body" in reason, reason[:300]
        assert len(reason) < 1000, reason[:300]
        assert agent_server.seen("GET", "/echo") == []


def test_an_empty_value_in_an_entry_s_mapping_is_named_by_the_file_s_path(
    rook_cli, rook_workspace
):
    """`headers: {X-Trace: }` (a value left out): the field was named by marshmallow's
    path, 'hooks.execute.http.headers.X-Trace.value', a key the file does not have."""
    entry = {
        "url": "http://127.0.0.1:9/x",
        "headers": {"X-Trace": None},
        "query": {"q": None},
        "save": {"k": None},
        "extract": {"evidence": {"e": None}},
    }
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    for field in ("headers.X-Trace", "query.q", "save.k", "extract.evidence.e"):
        assert f"  hooks.execute.http.{field}: empty: nothing is written there" in r.stderr, r.stderr
    assert ".value" not in r.stderr, r.stderr


def test_tricky_goals_arrive_intact(rook_cli, rook_workspace, agent_server):
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"{agent_server.url}/echo",
                    "query": {"q": "{{goal}}"},
                    "headers": {"X-Turn": "{{turn}}"},
                    "body": {
                        "goal": "{{goal}}",
                        "turn": "{{turn}}",
                        "mixed": "<{{goal}}> turn {{turn}}",
                    },
                    "extract": {
                        "output": "received.goal",
                        "evidence": {
                            "turn": "received.turn",
                            "mixed": "received.mixed",
                            "query": "query.q",
                        },
                    },
                }
            }
        },
        env=(),
    )
    for name, goal in TRICKY.items():
        rook_workspace.scenario({"id": name, "goal": goal, "criteria": [{"equals": goal}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    by_id = {s["id"]: s for s in r.report["scenarios"]}
    for name, goal in TRICKY.items():
        turn = by_id[name]["turns"][0]
        assert turn["output"] == goal, name
        assert turn["evidence"] == {"turn": 1, "mixed": f"<{goal}> turn 1", "query": goal}, name
    received = [x["json"]["goal"] for x in agent_server.seen("POST", "/echo")]
    assert sorted(received) == sorted(TRICKY.values())
    assert {x["headers"]["X-Turn"] for x in agent_server.seen("POST", "/echo")} == {"1"}


def test_secrets_from_env_never_reach_the_record(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    declared = "declared-secret-9f8e7d6c"
    other = "other-secret-1a2b3c4d"
    monkeypatch.setenv("ECHO_SECRET", declared)
    monkeypatch.setenv("OTHER_SECRET", other)
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"{agent_server.url}/echo",
                    "headers": {"X-Api-Key": "{{env.ECHO_SECRET}}", "X-Region": "{{env.REGION}}"},
                    "query": {"key": "{{env.OTHER_SECRET}}"},
                    "body": {"goal": "{{goal}}", "api_key": "{{env.ECHO_SECRET}}"},
                    "extract": {
                        "output": "text",
                        "evidence": {"headers": "headers", "query": "query"},
                    },
                }
            }
        },
        env=("ECHO_SECRET", "OTHER_SECRET"),
        hook_env={"REGION": "eu-west-1"},
    )
    rook_workspace.scenario(
        {"id": "leak", "goal": "show me", "criteria": [{"contains": "show me"}]}
    )
    formats = ("json", "markdown", "html", "junit")
    reports = [f"--report={f}:{rook_workspace.root}/report.{f}" for f in formats]
    r = rook_cli("run", "--json", *reports)
    assert r.exit_code == 0, r.stdout + r.stderr
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    for f in formats:
        everything += (rook_workspace.root / f"report.{f}").read_text()
    assert declared not in everything and other not in everything
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["evidence"]["headers"]["X-Api-Key"] == "[redacted:ECHO_SECRET]"
    assert turn["evidence"]["query"]["key"] == "[redacted:OTHER_SECRET]"
    assert turn["evidence"]["headers"]["X-Region"] == "eu-west-1"  # hook_env: not a secret
    assert "[redacted:ECHO_SECRET]" in turn["output"]
    [execute] = record_hooks(rook_workspace, run_id_of(r), "leak.1", "execute")
    assert execute["details"]["attempts"][0]["url"].endswith("?key=[redacted:OTHER_SECRET]")
    [seen] = agent_server.seen("POST", "/echo")
    assert seen["headers"]["X-Api-Key"] == declared  # the agent got the real value


def test_a_query_in_the_url_is_sent_with_the_query_mapping(
    rook_cli, rook_workspace, agent_server
):
    # e.g. Azure OpenAI's ...?api-version=2024-02-01, with or without a query: mapping
    url = f"{agent_server.url}/echo?api-version=2024-02-01&deployment={{{{scenario}}}}"
    for query in ({}, {"key": "k1"}):
        write_profile(
            rook_workspace,
            {
                "execute": {
                    "http": {
                        "url": url,
                        "query": query,
                        "body": {"q": "{{goal}}"},
                        "extract": {"output": "text"},
                    }
                }
            },
            env=(),
        )
        rook_workspace.scenario({"id": "q", "goal": "hi", "criteria": [{"contains": "hi"}]})
        r = rook_cli("run", "--json")
        assert r.exit_code == 0, r.stdout + r.stderr
        seen = agent_server.seen("POST", "/echo")[-1]
        assert seen["query"] == {"api-version": "2024-02-01", "deployment": "q", **query}
        [execute] = record_hooks(rook_workspace, run_id_of(r), "q.1", "execute")
        assert "api-version=2024-02-01" in execute["details"]["attempts"][0]["url"]


def test_a_null_placeholder_leaves_its_header_or_parameter_out(
    rook_cli, rook_workspace, agent_server
):
    # before any handle {{conversation}} is null: the header, query and form parameter
    # it fills are left out, not sent as "None" or empty; stream: sse asks for a stream
    # (Accept) and an answer that is no stream is read as a body, noted in the record
    echo = f"{agent_server.url}/echo"
    hooks = {
        "open": {
            "http": {
                "url": echo,
                "query": {"n": 3, "c": "{{conversation}}", "l": ["{{conversation}}", {"b": 1}]},
                "headers": {"X-Conv": "{{conversation}}", "X-Kept": "k"},
                "stream": "sse",
                "extract": {},
            }
        },
        "execute": {
            "http": {
                "url": echo,
                "form": {"g": "{{goal}}", "c": "{{conversation}}"},
                "extract": {"output": "text"},
            }
        },
    }
    write_profile(rook_workspace, hooks, env=())
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"equals": "g=hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    opened, executed = agent_server.seen(path_prefix="/echo")
    assert opened["method"] == "GET", opened
    # a list's null is left out too, and an object in it is sent as JSON (it was
    # sent 'l=&l={'b': 1}': an empty value, and Python's text of the object)
    assert parse_qsl(opened["raw_query"], keep_blank_values=True) == [
        ("n", "3"), ("l", '{"b": 1}')
    ], opened["raw_query"]
    assert "X-Conv" not in opened["headers"] and opened["headers"]["X-Kept"] == "k"
    assert opened["headers"]["Accept"] == "text/event-stream"
    assert executed["method"] == "POST" and executed["text"] == "g=hi"
    [open_hook] = record_hooks(rook_workspace, run_id_of(r), "s.1", "open")
    [note] = open_hook["details"]["http"]["notes"]
    assert note.startswith("stream: sse was asked for but the response is application/json")


def test_a_form_list_repeats_its_field_as_a_query_list_does(
    rook_cli, rook_workspace, agent_server
):
    # a list in form: is one field per item, as HTML forms and httpx send it (it was
    # sent as one field holding the list's JSON text, tag=["a", "b"]); its nulls are
    # left out and an object in it is sent as JSON, as in a query list
    hooks = {
        "open": {
            "http": {
                "url": f"{agent_server.url}/echo",
                "query": {"tag": ["a", "b"]},
                "extract": {},
            }
        },
        "execute": {
            "http": {
                "url": f"{agent_server.url}/echo",
                "form": {"tag": ["a", "{{goal}}", "{{conversation}}", {"b": 1}], "n": 2},
                "extract": {"output": "text"},
            }
        },
    }
    write_profile(rook_workspace, hooks, env=())
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "tag="}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    opened, executed = agent_server.seen(path_prefix="/echo")
    assert parse_qsl(opened["raw_query"]) == [("tag", "a"), ("tag", "b")]
    assert executed["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert parse_qsl(executed["text"], keep_blank_values=True) == [
        ("tag", "a"), ("tag", "hi"), ("tag", '{"b": 1}'), ("n", "2")
    ], executed["text"]


def test_placeholders_in_the_url_are_encoded_for_where_they_stand(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """In the query a value holding @, space, quotes, &, + or # is sent exactly as
    written (percent-encoded whole); in the path a / stays a separator; the
    base URL placeholder is inserted as is."""
    odd = 'p@ss w"rd:(x)!+;$&a=b#f'
    monkeypatch.setenv("ODD", odd)
    monkeypatch.setenv("BASE_URL", agent_server.url)
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": "{{env.BASE_URL}}/echo?key={{env.ODD}}&g={{goal}}",
                    "query": {"q": "{{env.ODD}}"},
                    "body": {"q": "{{goal}}"},
                    "extract": {"output": "text"},
                }
            }
        },
        env=("ODD", "BASE_URL"),
    )
    rook_workspace.scenario({"id": "s", "goal": "a & b + c", "criteria": [{"contains": "a"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    seen = agent_server.seen("POST", "/echo")[-1]
    assert seen["query"] == {"key": odd, "q": odd, "g": "a & b + c"}
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    url = execute["details"]["attempts"][0]["url"]
    assert url.startswith("[redacted:BASE_URL]/echo?key=[redacted:ODD]&"), url
    assert "rd:(x)" not in json.dumps(execute) and "rd%3A%28x" not in json.dumps(execute)


def test_a_secret_base_url_is_redacted_as_written_not_as_httpx_normalises_it(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    # the URL shown (the attempts' record, every message) was httpx's, which writes
    # the host in lower case (and drops a default port, resolves ./..): the secret
    # as written was not in it, so all but its case reached the record and the terminal
    base = agent_server.url.replace("127.0.0.1", "LocalHost")
    monkeypatch.setenv("BASE_URL", base)
    entry = {"url": "{{env.BASE_URL}}/no-such-route?g={{goal}}", "body": {"q": "{{goal}}"}}
    write_profile(rook_workspace, {"execute": {"http": {**entry, "retries": 0}}}, env=("BASE_URL",))
    rook_workspace.scenario({"id": "s", "goal": "hi there", "criteria": [{"contains": "a"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    url = "[redacted:BASE_URL]/no-such-route?g=hi+there"  # sent as hi%20there, shown as a form writes it
    assert execute["details"]["attempts"][0]["url"] == url
    assert f"POST {url}" in execute["diagnosis"], execute["diagnosis"]
    text = shown_anywhere(rook_workspace, r)
    assert base.lower() not in text.lower(), "the base URL leaked, in lower case"


def test_a_failure_message_never_shows_a_secret(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    secret = "sk-bad-but-secret-55aa"
    monkeypatch.setenv("AGENT_KEY", secret)
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"{agent_server.url}/echo",
                    "headers": {"Authorization": "Bearer {{env.AGENT_KEY}}"},
                    "body": {"goal": "{{goal}}"},
                    "extract": {"output": "missing"},
                }
            }
        },
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert "found nothing" in reason and "Bearer [redacted:AGENT_KEY]" in reason
    assert secret not in rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"bogus": 1}, "hooks.execute.http.bogus: unknown field; expected one of: url, method"),
        (
            {"extract": {"output": "choices[0"}},
            "hooks.execute.http.extract.output: not a valid JMESPath",
        ),
        (
            {"extract": {"usage": {"total": "x"}}},
            "hooks.execute.http.extract.usage.total: unknown field; expected one of: input, output",
        ),
        (  # as prose writes it: told the nested form
            {"extract": {"output": "a", "usage.input": "tokens.in"}},
            "hooks.execute.http.extract.usage.input: write it nested: usage: {input: ...}",
        ),
        ({"save": {"goal": "x"}}, "hooks.execute.http.save: goal: a name Rook fills in itself"),
        ({"body": {"a": "{{ not a name }}"}}, "hooks.execute.http.body.a: {{not a name}} is not"),
        ({"method": "FETCH"}, "hooks.execute.http.method: must be one of"),
        ({"retries": -1}, "hooks.execute.http.retries:"),
        ({"retries": 21}, "hooks.execute.http.retries: must be greater than or equal to 0 and"),
        ({"form": {"a": "b"}}, "hooks.execute.http.form: give body (JSON) or form"),
        # a key is sent as written: {"{{env.FIELD}}": 1} went out with its braces
        ({"body": {"m": [{"{{scenario}}": 1}]}}, "http.body.m.0.{{scenario}}: a placeholder in"),
        ({"query": {"k-{{run}}": "v"}}, "hooks.execute.http.query.k-{{run}}: a placeholder in"),
        ({"url": "ftp://127.0.0.1/echo"}, "hooks.execute.http.url: must start with http://"),
        ({"stream": "websocket"}, "hooks.execute.http.stream:"),
        # a part of the wrong type said "invalid input type" (or "not a valid string"),
        # not what was expected there
        ({"stream": True}, "hooks.execute.http.stream: must be sse (or none), as text"),
        (
            {"extract": "choices[0].message.content"},
            "hooks.execute.http.extract: must be a mapping of JMESPath expressions: "
            "{output: PATH, conversation: PATH, usage: {input: PATH, output: PATH}, calls: PATH",
        ),
        (
            {"extract": {"usage": "usage"}},
            "hooks.execute.http.extract.usage: must be a mapping: {input: PATH, output: PATH}",
        ),
        (
            {"auth": "digest"},
            "hooks.execute.http.auth: must be a mapping: "
            "{digest: {username: ..., password: ...}}",
        ),
        (
            {"auth": {"digest": "u:p"}},
            "hooks.execute.http.auth.digest: must be a mapping: {username: ..., password: ...}",
        ),
        ({"url": "http://127.0.0.1:99999/echo"}, "hooks.execute.http.url: not a valid URL (Port"),
        ({"url": "http://[::1/echo"}, "hooks.execute.http.url: not a valid URL (Invalid IPv6"),
        ({"url": "http:///echo"}, "hooks.execute.http.url: names no host"),
        ({"headers": {"X Bad": "x"}}, "hooks.execute.http.headers.X Bad: not a valid header"),
        ({"headers": {"X-City": "Zürich"}}, "hooks.execute.http.headers.X-City: its value holds"),
        # JSON written as one string: a goal holding a quote would break it (as text it
        # was sent '{"q": "say "hi""}'); Rook fills placeholders inside a structure only
        ({"body": '{"q": "{{goal}}"}'}, "hooks.execute.http.body: JSON written as a string"),
        ({"body": ' [{"turn": {{turn}}}]'}, "remove the quotes around it"),
    ],
)
def test_invalid_entries_are_refused_before_anything_runs(
    rook_cli, rook_workspace, agent_server, bad, field
):
    entry = {"url": f"{agent_server.url}/echo", "body": {"goal": "{{goal}}"}, **bad}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert field in r.stderr
    assert "Traceback" not in r.stderr
    assert not agent_server.seen()


def test_a_url_that_becomes_invalid_fails_the_hook_naming_the_url(
    rook_cli, rook_workspace, agent_server
):
    # a port out of range from hook_env: a clear diagnosis, not "raised ExceptionGroup"
    entry = {"url": "http://127.0.0.1:{{env.PORT}}/echo", "body": {"goal": "{{goal}}"}}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=(), hook_env={"PORT": "99999"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "error"
    assert "url: not a valid URL (Port out of range" in scenario["reason"], scenario["reason"]
    assert "127.0.0.1:99999" in scenario["reason"]


def test_a_header_value_a_header_cannot_carry_fails_the_hook_naming_the_header(
    rook_cli, rook_workspace, agent_server
):
    entry = {"url": f"{agent_server.url}/echo", "headers": {"X-Goal": "{{goal}}"}, "body": {}}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    for goal, why in (("café", "holds 'é'"), ("two\nlines", "holds a line break")):
        rook_workspace.scenario({"id": "s", "goal": goal, "criteria": [{"contains": "g"}]})
        r = rook_cli("run", "--json")
        assert r.exit_code == 1, r.stdout + r.stderr
        reason = r.report["scenarios"][0]["reason"]
        assert f"headers.X-Goal: its value {why}" in reason, reason
        assert "raised" not in reason and "ProtocolError" not in reason
    assert not agent_server.seen()


def test_the_installed_rook_command_runs_an_http_profile(rook_workspace, agent_server):
    """End to end: a separate ``rook`` process finds the plugin through its entry point."""
    write_profile(rook_workspace, session_hooks(agent_server), env=("AGENT_KEY",))
    rook_workspace.scenario(
        {
            "id": "e2e",
            "turns": ["Remember ORD-5.", "What did I say first?"],
            "criteria": [{"contains": "ORD-5"}],
        }
    )
    env = {**os.environ, "AGENT_KEY": agent_server.api_key}
    proc = subprocess.run(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["scenarios"][0]["status"] == "passed"
    assert agent_server.api_key not in proc.stdout + proc.stderr


OPEN_MARK = """#!/bin/bash
[ "$1" = open ] && touch "$MARK"
exit 0
"""


def env_profile(ws, server, body, env=(), **extra):
    ws.script("open.sh", OPEN_MARK)
    write_profile(
        ws,
        {
            "open": "scripts/open.sh",
            "execute": {
                "http": {
                    "url": f"{server.url}/echo",
                    "body": {"goal": "{{goal}}", **body},
                    "extract": {"output": "text", "evidence": {"got": "received"}},
                }
            },
        },
        env=env,
        **extra,
    )
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})


def test_an_undeclared_env_placeholder_is_refused_before_anything_runs(
    rook_cli, rook_workspace, agent_server, monkeypatch, tmp_path
):
    mark = tmp_path / "opened"
    monkeypatch.setenv("MARK", str(mark))
    monkeypatch.setenv("SET_BUT_UNDECLARED", "s3cret-value")
    body = {"a": "{{env.UNDECLARED_VAR_Q}}", "b": ["x {{env.SET_BUT_UNDECLARED}}"]}
    env_profile(rook_workspace, agent_server, body)
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "p.yaml" in r.stderr
    assert "hooks.execute.http.body.a: {{env.UNDECLARED_VAR_Q}}: UNDECLARED_VAR_Q" in r.stderr
    assert "env: [{variable: UNDECLARED_VAR_Q, purpose: ...}]" in r.stderr
    assert "hooks.execute.http.body.b.0: {{env.SET_BUT_UNDECLARED}}" in r.stderr
    assert "s3cret-value" not in r.stderr
    assert not mark.exists(), "the open hook ran"
    assert not agent_server.seen("POST", "/echo")
    path = rook_workspace.agent_dir / "profiles" / "p.yaml"
    before = path.read_text()
    r = rook_cli("profile", "fix", "--workspace", str(rook_workspace.root))  # nor repaired
    assert r.exit_code == 2 and "env: [{variable: UNDECLARED_VAR_Q" in r.stderr, r.stderr
    assert path.read_text() == before and not mark.exists()


def test_an_undeclared_env_placeholder_written_with_spaces_is_cited_as_one(
    rook_cli, rook_workspace, agent_server, monkeypatch, tmp_path
):
    """{{ env.NAME }} is a placeholder as {{env.NAME}} is: undeclared, it is cited as
    the user's placeholder, never as a variable the http plugin reads of its own."""
    monkeypatch.setenv("MARK", str(tmp_path / "opened"))
    env_profile(rook_workspace, agent_server, {"a": "{{ env.SPACED_VAR_Q }}"})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "hooks.execute.http.body.a: {{env.SPACED_VAR_Q}}: SPACED_VAR_Q" in r.stderr, r.stderr
    assert "reads the variable" not in r.stderr, r.stderr


def test_a_declared_env_placeholder_that_is_unset_stops_the_run_before_prepare(
    rook_cli, rook_workspace, agent_server, monkeypatch, tmp_path
):
    mark = tmp_path / "opened"
    monkeypatch.setenv("MARK", str(mark))
    monkeypatch.delenv("UNDECLARED_VAR_Q", raising=False)
    env_profile(rook_workspace, agent_server, {"a": "{{env.UNDECLARED_VAR_Q}}"}, env=("UNDECLARED_VAR_Q",))
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "UNDECLARED_VAR_Q: UNDECLARED_VAR_Q for the fake agent" in r.stderr
    assert not mark.exists(), "the open hook ran"


def test_env_placeholders_of_hook_env_and_rook_need_no_declaration(
    rook_cli, rook_workspace, agent_server, monkeypatch, tmp_path
):
    monkeypatch.setenv("MARK", str(tmp_path / "opened"))
    body = {"region": "{{env.REGION}}", "mine": "{{env.ROOK_CUSTOM}}", "t": "{{env.ROOK_TURN}}"}
    env_profile(
        rook_workspace,
        agent_server,
        body,
        hook_env={"REGION": "eu-west-1", "ROOK_CUSTOM": "mine"},
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    got = r.report["scenarios"][0]["turns"][0]["evidence"]["got"]
    assert got == {"goal": "hi", "region": "eu-west-1", "mine": "mine", "t": "1"}


def test_a_rook_variable_outside_its_phases_is_refused(rook_cli, rook_workspace, agent_server):
    write_profile(
        rook_workspace,
        {
            "open": {"http": {"url": f"{agent_server.url}/echo", "body": {"t": "{{env.ROOK_TURN}}"}}},
            "execute": chat(agent_server),
        },
    )
    rook_workspace.scenario({"id": "s", "goal": "hi"})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "hooks.open.http.body.t: {{env.ROOK_TURN}}: Rook does not set ROOK_TURN in open" in r.stderr


def test_rook_conversation_before_any_handle_names_why_it_is_unset(
    rook_cli, rook_workspace, agent_server, monkeypatch, tmp_path
):
    # open returned no handle: ROOK_CONVERSATION is absent, as for a script;
    # listing it under env: (which the message used to say) is refused
    monkeypatch.setenv("MARK", str(tmp_path / "opened"))
    env_profile(rook_workspace, agent_server, {"conv": "{{env.ROOK_CONVERSATION}}"})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert r.statuses() == {"s": "error"}, reason
    assert "{{env.ROOK_CONVERSATION}}" in reason and "no conversation handle" in reason, reason
    assert "{{conversation}}" in reason and "env:" not in reason, reason


def test_blank_lines_after_an_id_or_retry_line_are_no_events(
    rook_cli, rook_workspace, agent_server
):
    """httpx-sse yields an empty event for a block holding only ``id:`` or ``retry:``
    (the SSE standard dispatches none): ``events[-1]`` was "" and the count too high."""
    agent_server.streams["idle"] = b"retry: 100\n\nid: 1\ndata: hi\n\nid: 2\n\n\n\ndata: [DONE]\n\n"
    entry = _stream_entry(agent_server, "idle")
    entry["http"]["extract"] = {"output": "events[-1]"}
    write_profile(rook_workspace, {"execute": entry}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["details"]["http"]["stream"] == {"events": 1, "done": True}


def test_a_text_body_says_it_is_text(rook_cli, rook_workspace, agent_server):
    """A plain-string ``body`` went out with no Content-Type at all."""
    write_profile(rook_workspace, {"execute": {"http": {
        "url": f"{agent_server.url}/echo", "body": "héllo {{goal}} ☃",
        "extract": {"output": "text"}}}}, env=())
    rook_workspace.profile({"id": "own", "hooks": {"execute": {"http": {
        "url": f"{agent_server.url}/echo", "body": "{{goal}}",
        "headers": {"content-type": "text/markdown"}, "extract": {"output": "text"}}}}},
        active=False)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"not_contains": "zzz"}]})
    assert rook_cli("run", "--json").statuses() == {"s": "passed"}
    assert rook_cli("run", "--json", "--profile", "own").statuses() == {"s": "passed"}
    first, own = [r for r in agent_server.seen(path_prefix="/echo")]
    assert first["headers"].get("Content-Type") == "text/plain; charset=utf-8", first["headers"]
    assert first["text"] == "héllo g ☃"
    assert own["headers"].get("content-type", own["headers"].get("Content-Type")) == "text/markdown"


def test_a_later_turn_whose_response_repeats_no_thread_id_keeps_the_handle(
    rook_cli, rook_workspace, agent_server
):
    """An API that names the thread only when it creates it (the first turn):
    extract.conversation found nothing on turn 2 and failed the scenario, though
    the turn was sent with a handle it simply continues."""
    entry = {
        "url": f"{agent_server.url}/threads",
        "body": {"text": "{{goal}}", "thread": "{{conversation}}"},
        "extract": {"output": "reply", "conversation": "thread_id"},
    }
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario(
        {"id": "two", "turns": ["hello", "again"], "criteria": [{"equals": "in th-1: again"}]}
    )
    r = rook_cli("run", "--json")
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "passed", scenario["reason"]
    assert [t["conversation"] for t in scenario["turns"]] == ["th-1", "th-1"]
    # the first turn has no handle to keep: a path that finds nothing is no handle, so
    # the later turn cannot continue the conversation (the contract's stop)
    entry["extract"]["conversation"] = "thread.id"
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    r = rook_cli("run", "--json")
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "stopped", scenario["reason"]
    assert "the first turn returned no conversation handle" in scenario["reason"]


def test_a_first_turn_whose_conversation_is_null_has_no_handle(
    rook_cli, rook_workspace, agent_server
):
    """The hook contract makes the handle optional: a script returning
    ``"conversation": null`` passes a one-turn scenario, but an ``http:`` entry
    whose ``extract.conversation`` found ``null`` made even that scenario
    ``error``. Null is no handle: one turn passes, two turns stop."""
    entry = {
        "url": f"{agent_server.url}/echo",
        "body": {"text": "{{goal}}", "thread": None},
        "extract": {"output": "received.text", "conversation": "received.thread"},
    }
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "one", "goal": "hi", "criteria": [{"equals": "hi"}]})
    rook_workspace.scenario(
        {"id": "two", "turns": ["hi", "again"], "criteria": [{"equals": "again"}]}
    )
    r = rook_cli("run", "--json")
    by_id = {s["id"]: s for s in r.report["scenarios"]}
    assert by_id["one"]["status"] == "passed", by_id["one"]["reason"]
    assert by_id["one"]["turns"][0]["conversation"] is None
    assert by_id["two"]["status"] == "stopped", by_id["two"]["reason"]
    assert "the first turn returned no conversation handle" in by_id["two"]["reason"]
    assert len(agent_server.seen("POST", "/echo")) == 2  # turn 2 never sent


def test_a_conversation_path_that_finds_nothing_is_named_when_the_scenario_stops(
    rook_cli, rook_workspace, agent_server
):
    """A typo in execute's extract.conversation (thread where the API says
    thread_id) stopped a two-turn scenario with the generic 'the first turn
    returned no conversation handle': nothing said the path found nothing.
    The reason names the path and the response's keys, as open's failure
    does; a one-turn scenario is still judged."""
    entry = {"url": f"{agent_server.url}/threads", "body": {"text": "{{goal}}", "thread": "{{conversation}}"},
             "extract": {"output": "reply", "conversation": "thread"}}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "one", "goal": "hi", "criteria": [{"contains": "thread"}]})
    rook_workspace.scenario({"id": "two", "turns": ["hi", "again"], "criteria": [{"contains": "thread"}]})
    by_id = {s["id"]: s for s in rook_cli("run", "--json").report["scenarios"]}
    assert by_id["one"]["status"] == "passed", by_id["one"]["reason"]
    reason = by_id["two"]["reason"]
    assert by_id["two"]["status"] == "stopped", reason
    assert "the first turn returned no conversation handle" in reason
    assert "execute's extract.conversation: the JMESPath 'thread' found nothing in the response" in reason
    assert "(its keys: reply, thread_id)" in reason, reason
    # rook profile test's optimistic multi_turn says so too
    shown = rook_cli("profile", "test", "-w", str(rook_workspace.root)).stdout
    assert "note: execute's extract.conversation: the JMESPath 'thread' found nothing" in shown, shown


def test_a_response_with_no_conversation_field_is_named_when_the_scenario_stops(
    rook_cli, rook_workspace, agent_server
):
    """With no extract, a JSON response is the hook's answer: one with no
    conversation field is no handle, and the stop reason says so, with the
    keys it has, for open and for execute alike (it read 'open's the
    response is ...' when first written)."""
    hooks = {"open": {"http": {"url": f"{agent_server.url}/api/sessions", "body": {}}},
             "execute": {"http": {"url": f"{agent_server.url}/flaky/none", "body": {"text": "{{goal}}"}}}}
    write_profile(rook_workspace, hooks, env=())
    rook_workspace.scenario({"id": "two", "turns": ["hi", "again"], "criteria": [{"equals": "finally"}]})
    rook_workspace.scenario({"id": "one", "goal": "hi", "criteria": [{"equals": "finally"}]})
    r = rook_cli("run", "--json")
    scenario = next(s for s in r.report["scenarios"] if s["id"] == "two")
    assert scenario["status"] == "stopped", scenario["reason"]
    for phase, keys in (("open", "session"), ("execute", "attempt_path, output")):
        said = f"{phase}'s response is a JSON object with no conversation (its keys: {keys})"
        assert said in scenario["reason"], scenario["reason"]
    # a one-turn scenario against an API that keeps no conversation needs no handle:
    # its records carry no note of one
    one = rook_workspace.record(run_id_of(r), "one.1")
    assert not [h for h in one["hooks"] if "no_handle" in (h.get("details") or {})], one["hooks"]


def test_an_open_whose_conversation_path_finds_nothing_gives_no_handle(
    rook_cli, rook_workspace, agent_server
):
    """The handle is optional (hook contract), and execute's conversation path
    that finds nothing is no handle; open's failed the hook, so even a one-turn
    scenario, which needs no handle, was 'error'. Now it is no handle in open
    too: one turn is judged, two turns stop, the reason naming open's path and
    the response's keys; a {{conversation}} that execute's url needs says it."""
    open_entry = {"url": f"{agent_server.url}/api/sessions", "body": {},
                  "extract": {"conversation": "sesion.id"}}
    execute = {"url": f"{agent_server.url}/echo", "body": {"text": "{{goal}}", "c": "{{conversation}}"},
               "extract": {"output": "received.text"}}
    write_profile(rook_workspace, {"open": {"http": open_entry}, "execute": {"http": execute}}, env=())
    rook_workspace.scenario({"id": "one", "goal": "hi", "criteria": [{"equals": "hi"}]})
    rook_workspace.scenario({"id": "two", "turns": ["hi", "again"], "criteria": [{"equals": "again"}]})
    by_id = {s["id"]: s for s in rook_cli("run", "--json").report["scenarios"]}
    assert by_id["one"]["status"] == "passed", by_id["one"]["reason"]
    reason = by_id["two"]["reason"]
    assert by_id["two"]["status"] == "stopped", reason
    assert "the first turn returned no conversation handle" in reason
    assert ("open's extract.conversation: the JMESPath 'sesion.id' found nothing in the response "
            "(its keys: session)") in reason, reason
    # an execute url that needs the handle fails, saying why there is none
    execute["url"] = agent_server.url + "/api/sessions/{{conversation}}/messages"
    write_profile(rook_workspace, {"open": {"http": open_entry}, "execute": {"http": execute}}, env=())
    one = rook_cli("run", "--json", "--only", "one").report["scenarios"][0]
    assert one["status"] == "error", one["reason"]
    assert "url: {{conversation}} has no value yet" in one["reason"], one["reason"]
    assert "open's extract.conversation: the JMESPath 'sesion.id' found nothing" in one["reason"]
    # split after open (--phases, then rook run --run ID): open's record says why, as
    # one rook run does, for execute's url and for a multi-turn scenario's stop
    run_id = rook_cli("run", "--json", "--phases", "prepare,open").report["run"]["id"]
    by_id = {s["id"]: s for s in rook_cli("run", "--run", run_id, "--json").report["scenarios"]}
    assert by_id["one"]["status"] == "error", by_id["one"]["reason"]
    assert "open's extract.conversation: the JMESPath 'sesion.id' found nothing" in by_id["one"]["reason"]
    execute["url"] = f"{agent_server.url}/echo"
    write_profile(rook_workspace, {"open": {"http": open_entry}, "execute": {"http": execute}}, env=())
    run_id = rook_cli("run", "--json", "--phases", "prepare,open").report["run"]["id"]
    by_id = {s["id"]: s for s in rook_cli("run", "--run", run_id, "--json").report["scenarios"]}
    two = by_id["two"]
    assert two["status"] == "stopped", two["reason"]
    assert ("open's extract.conversation: the JMESPath 'sesion.id' found nothing in the response "
            "(its keys: session)") in two["reason"], two["reason"]


def test_open_reads_the_session_from_a_response_header(rook_cli, rook_workspace, agent_server):
    """A 201 Created whose only answer is its Location header: no extract path
    could read a header, so open could not give the conversation handle."""
    hooks = {
        "open": {"http": {"url": f"{agent_server.url}/located", "body": {},
                          "extract": {"conversation": "header('Location')"}}},
        "execute": {"http": {"url": agent_server.url + "{{conversation}}/messages",
                             "body": {"text": "{{goal}}"},
                             "extract": {"output": "data.reply"}}},
    }
    write_profile(rook_workspace, hooks, env=())
    rook_workspace.scenario({"id": "loc", "turns": ["My order is ORD-9.", "What did I say first?"],
                             "criteria": [{"contains": "ORD-9"}]})
    r = rook_cli("run", "--json")
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "passed", scenario["reason"]
    [sid] = agent_server.sessions
    assert [t["conversation"] for t in scenario["turns"]] == [f"/api/sessions/{sid}"] * 2
    assert len(agent_server.seen("POST", f"/api/sessions/{sid}/messages")) == 2
    # a header the response does not have is a path that finds nothing, naming the headers
    hooks["open"]["http"]["extract"] = {"conversation": "header('X-Thread')"}
    write_profile(rook_workspace, hooks, env=())
    scenario = rook_cli("run", "--json").report["scenarios"][0]
    assert scenario["status"] == "error"
    assert "extract.conversation: the JMESPath \"header('X-Thread')\" found nothing" in (
        scenario["reason"])
    assert "location" in scenario["reason"].lower(), scenario["reason"]


@pytest.mark.parametrize(
    "ctype, text",
    [
        ("image/png", "\x89PNG\r\n\x1a\nhi"),  # binary by its type
        ("application/octet-stream", "hi\x00\x01\x02\x00"),  # NUL bytes: no text
        ("text/plain", "hi\x00\x00\x00\x00"),
    ],
)
def test_a_binary_response_is_no_answer_to_judge(
    rook_cli, rook_workspace, agent_server, ctype, text
):
    """An image or raw bytes became the turn's output, decoded as text with
    replacement characters, and criteria were judged on it ('contains: hi' passed)."""
    from urllib.parse import urlencode

    query = urlencode({"type": ctype, "enc": "utf-8", "text": text})
    write_profile(
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/charset?{query}"}}}, env=()
    )
    rook_workspace.scenario({"id": "bin", "goal": "go", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "error", scenario
    assert f"the response is binary ({ctype}, " in scenario["reason"], scenario["reason"]
    assert scenario["turns"] == []  # nothing judged


def test_a_json_response_starting_with_a_byte_order_mark_is_json(
    rook_cli, rook_workspace, agent_server
):
    # some servers (.NET) write a BOM first; the raw text was judged, braces and all
    from urllib.parse import urlencode

    text = '\ufeff{"output": "refund issued"}'
    query = urlencode({"type": "application/json", "enc": "utf-8", "text": text})
    write_profile(
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/charset?{query}"}}}, env=()
    )
    rook_workspace.scenario({"id": "j", "goal": "go", "criteria": [{"equals": "refund issued"}]})
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["status"] == "passed", r.report["scenarios"][0]["reason"]


@pytest.mark.parametrize(
    "text",
    [
        '{"output": "refund issued", "score": NaN}',  # Python's json.dumps default
        "{'output': 'refund issued'}",
        '{"output": "refund issued"',  # cut short
    ],
)
def test_a_json_response_that_is_not_json_is_no_answer_to_judge(
    rook_cli, rook_workspace, agent_server, text
):
    """A body labelled application/json that does not parse became the text
    answer, raw braces and all, and 'contains: refund issued' passed on it; a
    hook script's stdout that is not one JSON object fails the hook (SPEC 4)."""
    from urllib.parse import urlencode

    query = urlencode({"type": "application/json", "enc": "utf-8", "text": text})
    write_profile(
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/charset?{query}"}}}, env=()
    )
    rook_workspace.scenario({"id": "j", "goal": "go", "criteria": [{"contains": "refund issued"}]})
    r = rook_cli("run", "--json")
    scenario = r.report["scenarios"][0]
    assert scenario["status"] == "error", scenario
    assert "the response is labelled application/json but is not JSON" in scenario["reason"]
    assert "refund issued" in scenario["reason"]  # shows what was received
    assert scenario["turns"] == []  # nothing judged


def test_a_password_written_in_the_url_never_reaches_a_record_or_message(
    rook_cli, rook_workspace, agent_server
):
    # `url: http://bob:PASSWORD@host/...?api_key=KEY` written by hand (not moved
    # into env as `rook profile add` does) went whole into every diagnosis, the
    # records and the reports; `rook profile show` already hid it.
    host = agent_server.url.split("//", 1)[1]
    url = f"http://bob:literal-pw-9911@{host}/no-such-route?api_key=literal-key-7733&lang=en"
    write_profile(rook_workspace, {"execute": {"http": {
        "url": url, "body": {"goal": "{{goal}}"}, "extract": {"output": "missing"}}}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json", f"--report=markdown:{rook_workspace.root}/r.md")
    reason = r.report["scenarios"][0]["reason"]
    assert f"POST http://bob:[hidden]@{host}/no-such-route?api_key=[hidden]&lang=en" in reason, reason
    runs = rook_workspace.run_dir(run_id_of(r))
    # the run's copy of the profile too (profile.yaml kept them whole): hidden as shown
    copy = (runs / "profile.yaml").read_text()
    assert f"http://bob:[hidden]@{host}/no-such-route?api_key=[hidden]&lang=en" in copy, copy
    shown = [p.read_text() for p in runs.rglob("*") if p.is_file()]
    for text in [*shown, r.stdout, r.stderr, (rook_workspace.root / "r.md").read_text()]:
        assert "literal-pw-9911" not in text and "literal-key-7733" not in text



def test_a_run_resumed_with_a_password_in_the_url_keeps_it_hidden_and_sees_no_change(
    rook_cli, rook_workspace, agent_server
):
    """The copy of a profile holding a literal credential hides it; finishing the run
    compares the file with the copy as it was written (no 'changed' warning when the
    file is as it was; one when it was edited), and the secret reaches no file."""
    host = agent_server.url.split("//", 1)[1]
    url = f"http://bob:literal-pw-9911@{host}/no-such-route"
    hooks = {"execute": {"http": {"url": url, "body": {"goal": "{{goal}}"}}}}
    write_profile(rook_workspace, hooks, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute")
    run_id = run_id_of(first)
    r = rook_cli("run", "--run", run_id, "--phases", "close,collect,judge")
    assert "changed after run" not in r.stderr, r.stderr
    hooks["execute"]["timeout_seconds"] = 30
    write_profile(rook_workspace, hooks, env=())
    r = rook_cli("run", "--run", run_id)
    assert "changed after run" in r.stderr, r.stderr
    runs = rook_workspace.run_dir(run_id)
    assert "bob:[hidden]@" in (runs / "profile.yaml").read_text()
    for p in runs.rglob("*"):
        if p.is_file():
            assert "literal-pw-9911" not in p.read_text(errors="replace"), p


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_a_blank_response_is_shown_as_blank_not_as_an_empty_body(
    rook_cli, rook_workspace, agent_server, content_type
):
    # a body of blanks and newlines only was shown as "(empty body)" (or as the
    # blanks themselves): the user looked for a server sending nothing
    from urllib.parse import urlencode

    query = urlencode({"type": content_type, "enc": "utf-8", "text": " \r\n\t \n"})
    write_profile(
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/charset?{query}"}}}, env=()
    )
    rook_workspace.scenario({"id": "n", "goal": "go", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert reason.endswith(f"{content_type}): (blank body: 6 bytes of whitespace only)"), reason


def test_a_json_null_response_is_shown_as_null_not_as_an_empty_body(
    rook_cli, rook_workspace, agent_server
):
    # the diagnosis said "response (HTTP 200 OK, application/json): (empty body)"
    # of a body that was `null`: the user looked for a server sending nothing
    from urllib.parse import urlencode

    query = urlencode({"type": "application/json", "enc": "utf-8", "text": "null"})
    write_profile(
        rook_workspace, {"execute": {"http": {"url": f"{agent_server.url}/charset?{query}"}}}, env=()
    )
    rook_workspace.scenario({"id": "n", "goal": "go", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert "the response holds no answer" in reason, reason
    assert reason.endswith("application/json): null"), reason
