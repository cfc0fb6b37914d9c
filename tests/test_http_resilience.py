"""The HTTP transport when things go wrong or scale: retries, resumes, reuse, concurrency, TLS."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from peak import run_rook
from servers.agent_server import AgentServer, _bomb
from servers.helpers import (
    chat,
    record_hooks,
    run_id_of,
    session_hooks,
    token_prepare,
    write_profile,
)

pytest_plugins = ["servers.fixtures"]


def flaky_entry(server: AgentServer, key: str, **over: Any) -> dict[str, Any]:
    return {
        "http": {
            "url": f"{server.url}/flaky/{key}",
            "body": {"goal": "{{goal}}"},
            "backoff_seconds": 0.01,
            **over,
        }
    }


def test_503_with_retry_after_is_retried_after_the_asked_delay(
    rook_cli, rook_workspace, agent_server
):
    agent_server.flaky["k"] = [(503, {"Retry-After": "1"}), (429, {"Retry-After": "1"})]
    write_profile(rook_workspace, {"execute": flaky_entry(agent_server, "k", retries=3)}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "finally"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    attempts = execute["details"]["attempts"]
    assert [a.get("status") for a in attempts] == [503, 429, 200]
    assert [a.get("retry_after") for a in attempts[:2]] == [1.0, 1.0]
    assert all(a["wait_seconds"] >= 1.0 for a in attempts[:2])
    times = [x["time"] for x in agent_server.seen(path_prefix="/flaky/k")]
    assert times[1] - times[0] >= 1.0 and times[2] - times[1] >= 1.0  # Retry-After honoured


def test_retries_are_bounded_and_other_4xx_fail_at_once(rook_cli, rook_workspace, agent_server):
    agent_server.flaky["five"] = [(500, {})] * 5
    agent_server.flaky["four"] = [(400, {})] * 5
    write_profile(
        rook_workspace, {"execute": flaky_entry(agent_server, "{{scenario}}", retries=2)}, env=()
    )
    rook_workspace.scenario({"id": "five", "goal": "g", "criteria": [{"contains": "g"}]})
    rook_workspace.scenario({"id": "four", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    assert r.statuses() == {"five": "error", "four": "error"}
    five = record_hooks(rook_workspace, run_id_of(r), "five.1", "execute")[0]
    assert [a["status"] for a in five["details"]["attempts"]] == [500, 500, 500]
    assert "failed after 3 attempts" in five["diagnosis"]
    four = record_hooks(rook_workspace, run_id_of(r), "four.1", "execute")[0]
    assert [a["status"] for a in four["details"]["attempts"]] == [400]
    assert "HTTP 400" in four["diagnosis"] and "planned 400" in four["diagnosis"]


def test_a_403_is_never_retried_and_a_redirect_is_never_followed(
    rook_cli, rook_workspace, agent_server
):
    # a 403 is an authentication problem, from any phase: retrying cannot mend it
    agent_server.flaky["denied"] = [(403, {})] * 3
    # a 3xx fails with where it points, its credentials hidden, for the profile's url
    moved = "https://bob:pw-55501@elsewhere.example/v2/chat?api_key=k-55502&v=1"
    agent_server.flaky["moved"] = [(302, {"Location": moved})] * 3
    write_profile(
        rook_workspace,
        {
            "open": flaky_entry(agent_server, "denied", retries=2),
            "execute": flaky_entry(agent_server, "{{scenario}}", retries=2),
        },
        env=(),
    )
    rook_workspace.scenario({"id": "moved", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    [opened] = record_hooks(rook_workspace, run_id_of(r), "moved.1", "open")
    assert [a["status"] for a in opened["details"]["attempts"]] == [403]
    assert opened["diagnosis"].startswith("authentication problem"), opened["diagnosis"]
    agent_server.flaky["denied"].clear()
    r = rook_cli("run", "--json")
    [execute] = record_hooks(rook_workspace, run_id_of(r), "moved.1", "execute")
    assert [a["status"] for a in execute["details"]["attempts"]] == [302]
    assert len(agent_server.seen(path_prefix="/flaky/moved")) == 1
    hidden = "https://bob:[hidden]@elsewhere.example/v2/chat?api_key=[hidden]&v=1"
    assert execute["details"]["http"]["location"] == hidden
    assert f"was redirected (HTTP 302) to {hidden}; Rook does not follow" in execute["diagnosis"]
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert "pw-55501" not in everything and "k-55502" not in everything


@pytest.mark.parametrize(
    "status, said",
    [
        (304, "answered HTTP 304 Not Modified, which is no redirect: the answer to a "
              "conditional request (If-None-Match, If-Modified-Since)"),
        (300, "answered HTTP 300 with no Location: it points nowhere"),
    ],
)  # fmt: skip
def test_a_3xx_with_no_location_is_not_said_to_be_redirected_to_a_question_mark(
    rook_cli, rook_workspace, agent_server, status, said
):
    agent_server.flaky["moved"] = [(status, {})]
    write_profile(rook_workspace, {"execute": flaky_entry(agent_server, "moved", retries=0)}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert said in execute["diagnosis"], execute["diagnosis"]
    assert "redirected" not in execute["diagnosis"] and " to ?" not in execute["diagnosis"]


def test_a_prepare_redirect_shows_no_value_of_its_query(rook_cli, rook_workspace, agent_server):
    """A prepare (sign in) redirected to a callback carries an authorization code in
    its query (?code=...): only credential-named parameters were hidden, so the code
    went into prepare.json, the report and the terminal. A prepare's are all hidden."""
    moved = "https://idp.example/cb?code=c-55503&state=s-55504#t-55505"
    agent_server.flaky["signin"] = [(302, {"Location": moved})]
    write_profile(
        rook_workspace,
        {"prepare": flaky_entry(agent_server, "signin", body={"user": "bob"}),
         "execute": flaky_entry(agent_server, "{{scenario}}")},
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    everything = rook_workspace.all_run_text(run_id_of(r)) + r.stdout + r.stderr
    assert "https://idp.example/cb?code=[hidden]&state=[hidden]" in everything, everything
    for value in ("c-55503", "s-55504", "t-55505"):
        assert value not in everything, value


def test_a_retry_after_beyond_the_hook_timeout_fails_at_once_and_says_so(
    rook_cli, rook_workspace, agent_server
):
    agent_server.flaky["slow"] = [(429, {"Retry-After": "3600"})]
    entry = flaky_entry(agent_server, "slow", retries=3)
    write_profile(rook_workspace, {"execute": {**entry, "timeout_seconds": 10}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    [attempt] = execute["details"]["attempts"]
    # the wait in plain seconds: it said 'waiting 3.6e+03 s'
    assert attempt["note"] == "no retry: waiting 3600 s would pass the hook's timeout"
    assert attempt["status"] == 429 and execute["status"] == "failed"
    # it said "retry after 3600", no unit: the header's seconds
    assert "the server asked to retry after 3600 seconds" in execute["diagnosis"]


def test_the_diagnosis_says_whether_retries_or_the_timeout_stopped_the_retrying(
    rook_cli, rook_workspace, agent_server
):
    """Rook waited the asked second before each retry, then ran out of retries, and
    the diagnosis said to raise timeout_seconds 'to wait that long'."""
    agent_server.flaky["busy"] = [(429, {"Retry-After": "1"})] * 5
    agent_server.flaky["slow"] = [(429, {"Retry-After": "120"})]
    entry = flaky_entry(agent_server, "{{scenario}}", retries=1)
    write_profile(rook_workspace, {"execute": {**entry, "timeout_seconds": 10}}, env=())
    rook_workspace.scenario({"id": "busy", "goal": "g", "criteria": [{"contains": "g"}]})
    rook_workspace.scenario({"id": "slow", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    busy = record_hooks(rook_workspace, run_id_of(r), "busy.1", "execute")[0]["diagnosis"]
    assert "failed after 2 attempts" in busy
    assert "the server still asked to retry after 1 second; raise the hook entry's retries" in busy
    assert "timeout_seconds" not in busy
    slow = record_hooks(rook_workspace, run_id_of(r), "slow.1", "execute")[0]["diagnosis"]
    assert "the server asked to retry after 120 seconds, which would pass the hook's timeout" in slow
    assert "raise the hook entry's timeout_seconds to wait that long" in slow
    assert "retries" not in slow


def test_an_absurd_retry_after_never_puts_infinity_in_the_record(
    rook_cli, rook_workspace, agent_server
):
    # JSON has no Infinity: float("inf"), float("1e400") and 400 nines must not reach the record
    agent_server.flaky["k"] = [
        (503, {"Retry-After": "inf"}),
        (503, {"Retry-After": "1e400"}),
        (429, {"Retry-After": "9" * 400}),
    ]
    entry = flaky_entry(agent_server, "k", retries=3)
    write_profile(rook_workspace, {"execute": {**entry, "timeout_seconds": 10}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    text = (rook_workspace.run_dir(run_id_of(r)) / "scenarios" / "s.1.json").read_text()

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the record")

    record = json.loads(text, parse_constant=refuse)
    [execute] = [h for h in record["hooks"] if h["phase"] == "execute"]
    attempts = execute["details"]["attempts"]
    # not a number of seconds nor a date: ignored (RFC 9110), so the usual backoff
    assert [a["status"] for a in attempts] == [503, 503, 429]
    assert "retry_after" not in attempts[0] and "retry_after" not in attempts[1]
    # a wait longer than any hook: not retried, and said so
    assert attempts[2]["retry_after"] > 10 and "would pass the hook's timeout" in attempts[2]["note"]
    assert "the server asked to retry after 999" in execute["diagnosis"]
    assert "9 seconds, which would pass" in execute["diagnosis"], execute["diagnosis"]


def test_an_ignored_retry_after_is_not_said_to_be_what_the_server_asked(
    rook_cli, rook_workspace, agent_server
):
    # http.md: a Retry-After that is neither seconds nor a date (inf) is ignored; the
    # diagnosis still said "the server still asked to retry after inf"
    agent_server.flaky["inf"] = [(503, {"Retry-After": "inf"})] * 2
    write_profile(rook_workspace, {"execute": flaky_entry(agent_server, "inf", retries=1)},
                  env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert "failed after 2 attempts" in execute["diagnosis"], execute["diagnosis"]
    assert "retry after" not in execute["diagnosis"], execute["diagnosis"]


def test_a_body_in_an_encoding_rook_cannot_decode_fails_rather_than_being_judged(
    rook_cli, rook_workspace, agent_server
):
    # httpx passes a body it has no decoder for (compress, br without brotli ...) through as
    # is: the still-encoded bytes became the answer
    write_profile(
        rook_workspace,
        {
            "open": {"http": {"url": f"{agent_server.url}/encoded/compress", "method": "HEAD"}},
            "execute": {"http": {"url": f"{agent_server.url}/encoded/compress", "retries": 0}},
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "garbled"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    [open_] = record_hooks(rook_workspace, run_id_of(r), "s.1", "open")
    assert open_["status"] == "ok"  # no body, nothing to decode
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["status"] == "failed"
    assert "Content-Encoding: compress" in execute["diagnosis"]
    assert len(execute["details"]["attempts"]) == 1  # the same answer again would not help


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_gzip_body_is_read_decoded_recorded_to_16_kib_and_capped(
    rook_cli, rook_workspace, agent_server
):
    # gzip is undone; the record keeps 16 KiB of the answer; limits.stdout_bytes counts
    # the decoded body: 40 kB sent as a few hundred compressed bytes is over 30 000
    entry = {"http": {"url": f"{agent_server.url}/gzip?pad={{{{env.PAD}}}}", "retries": 0}}
    for pad, status in (("40000", "passed"), ("10", "passed")):
        write_profile(
            rook_workspace,
            {"execute": entry},
            env=(),
            hook_env={"PAD": pad},
            limits={"stdout_bytes": 50_000},
        )
        rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "ok"}]})
        r = rook_cli("run", "--json")
        assert r.statuses() == {"s": status}, r.stdout + r.stderr
        [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
        response = execute["details"]["http"]["response"]
        assert response.startswith('{"output": "ok", "pad": "xxx'), response[:100]
        assert len(response) <= 16 * 1024 + 100 and (pad == "10") == ("more chars]" not in response)
    write_profile(
        rook_workspace,
        {"execute": entry},
        env=(),
        hook_env={"PAD": "40000"},
        limits={"stdout_bytes": 30_000},
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["diagnosis"] == (
        "the response body exceeded the 30000-byte cap (raise limits.stdout_bytes in the "
        "profile if this much output is expected)"
    ), execute


@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
def test_a_body_gzipped_twice_is_capped_before_it_is_decoded_whole(
    rook_workspace, agent_server, kind
):
    # Content-Encoding: gzip, gzip: each layer multiplies by ~1000, and httpx undoes the
    # second layer of a whole network read at once, so 2 KB on the wire took 512 MiB of
    # memory (and a third layer, any amount) before the cap could say a word
    url = f"{agent_server.url}/bomb?mib=512&layers=2&type={kind}"
    write_profile(rook_workspace, {"execute": {"http": {"url": url, "retries": 0}}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    _bomb(512, 2)  # made before rook starts
    proc, err, peak_mib = run_rook("run", "-w", str(rook_workspace.root), "--json", timeout=120)
    assert "Traceback" not in err, err[-2000:]
    [scenario] = json.loads(proc.stdout)["scenarios"]
    assert scenario["status"] == "error", scenario
    assert "exceeded the 10485760-byte cap" in scenario["reason"], scenario["reason"]
    assert peak_mib < 300, f"rook took {peak_mib:.0f} MiB to refuse a 10 MiB answer"


def test_connection_errors_are_retried_then_reported(rook_cli, rook_workspace):
    port = _closed_port()
    write_profile(
        rook_workspace,
        {
            "execute": {
                "http": {
                    "url": f"http://127.0.0.1:{port}/chat",
                    "body": {"q": "{{goal}}"},
                    "retries": 2,
                    "backoff_seconds": 0.01,
                }
            }
        },
        env=(),
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    attempts = execute["details"]["attempts"]
    assert len(attempts) == 3 and all(a["error"].startswith("ConnectError") for a in attempts)
    assert f"POST http://127.0.0.1:{port}/chat failed after 3 attempts" in execute["diagnosis"]


def _resetting_server() -> tuple[socket.socket, int]:
    """A server on 127.0.0.1 that starts a response, then resets the connection (RST)."""
    import struct
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"output": "par'
            )
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def test_a_refused_or_reset_connection_is_said_so(rook_cli, rook_workspace):
    """The diagnosis said "ConnectError: All connection attempts failed" for a port
    nothing listens on, and a bare "ReadError" for a connection reset mid-body: the
    reason the system gave (refused, reset) was dropped."""
    listener, reset_port = _resetting_server()
    closed_port = _closed_port()
    try:
        for scenario, port in (("refused", closed_port), ("reset", reset_port)):
            entry = {"url": f"http://127.0.0.1:{port}/chat", "body": {"q": "{{goal}}"}}
            write_profile(
                rook_workspace, {"execute": {"http": {**entry, "retries": 0}}}, env=()
            )
            rook_workspace.scenario({"id": scenario, "goal": "g", "criteria": [{"contains": "g"}]})
            r = rook_cli("run", "--json", "--only", scenario)
            assert r.exit_code == 1, r.stdout + r.stderr
            [execute] = record_hooks(rook_workspace, run_id_of(r), f"{scenario}.1", "execute")
            expected = "Connection refused" if scenario == "refused" else "Connection reset by peer"
            assert expected in execute["diagnosis"], execute["diagnosis"]
            assert expected in execute["details"]["attempts"][0]["error"]
        # a name that does not resolve: its own words, no "(Unknown error -2)" after them
        entry = {"url": "http://nonexistent.invalid/chat", "body": {"q": "{{goal}}"}}
        write_profile(rook_workspace, {"execute": {"http": {**entry, "retries": 0}}}, env=())
        rook_workspace.scenario({"id": "nohost", "goal": "g", "criteria": [{"contains": "g"}]})
        r = rook_cli("run", "--json", "--only", "nohost")
        [execute] = record_hooks(rook_workspace, run_id_of(r), "nohost.1", "execute")
        assert "ConnectError: " in execute["diagnosis"], execute["diagnosis"]
        assert "Unknown error" not in execute["diagnosis"], execute["diagnosis"]
        # https to a server that speaks plain HTTP: TLS's words, no "(Operation not permitted)"
        entry = {"url": f"https://127.0.0.1:{reset_port}/chat", "body": {"q": "{{goal}}"}}
        write_profile(rook_workspace, {"execute": {"http": {**entry, "retries": 0}}}, env=())
        rook_workspace.scenario({"id": "tls", "goal": "g", "criteria": [{"contains": "g"}]})
        r = rook_cli("run", "--json", "--only", "tls")
        [execute] = record_hooks(rook_workspace, run_id_of(r), "tls.1", "execute")
        assert "SSL" in execute["diagnosis"], execute["diagnosis"]
        assert "Operation not permitted" not in execute["diagnosis"], execute["diagnosis"]
    finally:
        listener.close()


def test_a_slow_endpoint_times_out_with_its_attempts_recorded(rook_cli, rook_workspace):
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        write_profile(
            rook_workspace,
            {
                "execute": {
                    "http": {
                        "url": f"http://127.0.0.1:{port}/",
                        "body": {"q": "{{goal}}"},
                        "retries": 0,
                    },
                    "timeout_seconds": 1,
                }
            },
            env=(),
        )
        rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
        r = rook_cli("run", "--json")
    assert r.exit_code == 1
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["status"] == "timeout"
    assert execute["diagnosis"].startswith("timed out after 1 s")
    assert len(execute["details"]["attempts"]) == 1


def test_timeout_seconds_bounds_a_whole_attempt_even_when_bytes_keep_coming(
    rook_cli, rook_workspace, agent_server
):
    # /trickle sends a byte every 0.2 s: no single read waits long, the attempt does
    entry = {
        "http": {
            "url": f"{agent_server.url}/trickle",
            "timeout_seconds": 0.5,
            "retries": 1,
            "backoff_seconds": 0.01,
        },
        "timeout_seconds": 30,
    }
    write_profile(rook_workspace, {"execute": entry}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "slowly"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert execute["status"] == "failed", execute
    attempts = execute["details"]["attempts"]
    assert len(attempts) == 2
    assert all("0.5 s" in a["error"] and a["seconds"] < 2 for a in attempts), attempts
    assert "failed after 2 attempts" in execute["diagnosis"]


def test_a_plain_body_cut_off_by_the_timeout_keeps_what_had_come(
    rook_cli, rook_workspace, agent_server
):
    """A plain (not streamed) body the entry's timeout cut off was lost: the
    record held the status and content type only, not the bytes already read.
    They are kept, as a cut-off event stream's events are."""
    entry = {"http": {"url": f"{agent_server.url}/trickle", "timeout_seconds": 0.5}}
    write_profile(rook_workspace, {"execute": entry}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "slowly"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert "0.5 s" in execute["diagnosis"], execute
    http = execute["details"]["http"]
    assert http["status"] == 200 and http["content_type"] == "application/json", http
    kept = http["response"]
    assert kept and '{"output": "slowly"}'.startswith(kept) and kept != '{"output": "slowly"}', http


def test_a_resumed_run_sends_prepare_again_for_secrets_it_kept_in_memory(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    monkeypatch.setenv("CLIENT_SECRET", agent_server.client_secret)
    hooks = session_hooks(agent_server)
    hooks["prepare"] = token_prepare(agent_server)
    hooks["collect"] = chat(
        agent_server,
        headers={"Authorization": "Bearer {{token}}"},
        extract={"evidence": {"summary": "choices[0].message.content"}},
        body={"messages": [{"role": "user", "content": "summarise {{conversation}}"}]},
    )
    hooks["open"]["http"]["save"] = {"opened_id": "session.id"}
    write_profile(rook_workspace, hooks, env=("CLIENT_SECRET",))
    rook_workspace.scenario({"id": "s", "goal": "hello", "criteria": [{"contains": "noted"}]})
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stdout + first.stderr
    run_id = run_id_of(first)
    [first_token] = agent_server.tokens
    state = rook_workspace.run_dir(run_id) / "state" / "s.1" / "http-saved.json"
    [sid] = agent_server.sessions
    assert state.read_text() == f'{{"opened_id": "{sid}"}}'  # not a secret: kept on disk

    second = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert second.exit_code == 0, second.stdout + second.stderr
    assert len(agent_server.seen("POST", "/oauth/token")) == 2
    [_, second_token] = sorted(agent_server.tokens, key=lambda t: t != first_token)
    [collect] = record_hooks(rook_workspace, run_id, "s.1", "collect")
    assert "earlier invocation" in collect["details"]["prepare_rerun"]["why"]
    assert collect["details"]["prepare_rerun"]["attempts"][0]["status"] == 200
    record = rook_workspace.record(run_id, "s.1")
    assert record["collected"]["evidence"]["summary"] == f"echo: summarise {sid}"
    everything = "".join(
        p.read_text(errors="replace")
        for p in rook_workspace.run_dir(run_id).rglob("*")
        if p.is_file()
    )
    for token in agent_server.tokens:
        assert token not in everything + first.stdout + second.stdout + second.stderr


def test_a_resumed_phase_needing_a_secret_open_kept_in_memory_is_told_so(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """A value open saved that holds a secret is never written to the state directory,
    so a later --phases collect,judge cannot have it: the failure said '{{k}} is not a
    value saved by an earlier phase ... save it with save: {k: PATH}', though open saves it."""
    monkeypatch.setenv("KEY", "k3y-value-1234")
    echo = f"{agent_server.url}/echo"
    hooks = {
        "open": {
            "http": {
                "url": echo,
                "body": {"k": "key={{env.KEY}}", "plain": "p-1"},
                "save": {"k": "received.k", "plain": "received.plain"},
            }
        },
        "execute": {
            "http": {"url": echo, "body": {"g": "{{goal}}"}, "extract": {"output": "received.g"}}
        },
        "collect": {
            "http": {
                "url": echo,
                "body": {"k": "{{k}}", "plain": "{{plain}}"},
                "extract": {"evidence": {"col": "received"}},
            }
        },
    }
    write_profile(rook_workspace, hooks, env=("KEY",))
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stdout + first.stderr
    run_id = run_id_of(first)
    second = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert second.exit_code == 1, second.stdout + second.stderr
    [collect] = record_hooks(rook_workspace, run_id, "s.1", "collect")
    why = collect["diagnosis"]
    assert "body.k: {{k}} was saved by open in an earlier invocation" in why, why
    assert "kept it in memory only" in why and "save it with save:" not in why, why
    everything = "".join(
        p.read_text(errors="replace")
        for p in rook_workspace.run_dir(run_id).rglob("*")
        if p.is_file()
    )
    assert "k3y-value-1234" not in everything + second.stdout + second.stderr


def test_one_connection_is_reused_across_scenarios(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    monkeypatch.setenv("AGENT_KEY", agent_server.api_key)
    write_profile(rook_workspace, {"execute": chat(agent_server)})
    for i in range(6):
        rook_workspace.scenario(
            {"id": f"s{i}", "goal": f"goal {i}", "criteria": [{"equals": f"echo: goal {i}"}]}
        )
    r = rook_cli("run", "--json", "--concurrency", "1")
    assert r.exit_code == 0, r.stdout + r.stderr
    ports = {x["port"] for x in agent_server.seen("POST", "/v1/chat")}
    assert len(agent_server.seen("POST", "/v1/chat")) == 6
    assert len(ports) == 1


def test_concurrent_scenarios_keep_their_own_sessions(rook_cli, rook_workspace, agent_server):
    write_profile(rook_workspace, session_hooks(agent_server), env=())
    for i in range(8):
        rook_workspace.scenario(
            {
                "id": f"s{i}",
                "turns": [f"My code is C-{i}.", "What did I say first?"],
                "criteria": [{"contains": f"C-{i}."}],
            }
        )
    r = rook_cli("run", "--json", "--concurrency", "4")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert len(agent_server.sessions) == 8
    assert all(s["closed"] and len(s["messages"]) == 2 for s in agent_server.sessions.values())
    ports = {x["port"] for x in agent_server.seen()}
    assert len(ports) <= 8  # connections are pooled, not one per request (8 x 5 requests)


# -- TLS ---------------------------------------------------------------------------


@pytest.fixture
def tls_server(tmp_path: Path):
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server = AgentServer().start(tls=(cert, key))
    try:
        yield server, cert
    finally:
        server.stop()


def test_tls_is_verified_unless_the_profile_says_otherwise(rook_cli, rook_workspace, tls_server):
    server, cert = tls_server
    assert server.url.startswith("https://")

    def entry(**over: Any) -> dict[str, Any]:
        return {
            "execute": {
                "http": {
                    "url": f"{server.url}/echo",
                    "body": {"goal": "{{goal}}"},
                    "extract": {"output": "received.goal"},
                    **over,
                }
            }
        }

    rook_workspace.scenario({"id": "s", "goal": "over tls", "criteria": [{"equals": "over tls"}]})
    write_profile(rook_workspace, entry(), env=())
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    reason = r.report["scenarios"][0]["reason"]
    assert "TLS certificate verification failed" in reason and "verify_tls" in reason

    write_profile(rook_workspace, entry(verify_tls=str(cert)), env=())
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr

    write_profile(rook_workspace, entry(verify_tls=False), env=())
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr

    # a relative path: in the workspace, else in the agent's folder
    for where in (rook_workspace.root, rook_workspace.agent_dir):
        (where / "certs").mkdir(exist_ok=True)
        shutil.copy(cert, where / "certs" / f"ca-{where.name}.pem")
        write_profile(rook_workspace, entry(verify_tls=f"certs/ca-{where.name}.pem"), env=())
        r = rook_cli("run", "--json")
        assert r.exit_code == 0, r.stdout + r.stderr

    write_profile(rook_workspace, entry(verify_tls="certs/missing.pem"), env=())
    r = rook_cli("run", "--json")
    assert r.exit_code == 2 and "CA bundle 'certs/missing.pem' not found" in r.stderr

    # a file that is no PEM bundle (a key, a script, a DER file): refused before the
    # run, naming the field; it was a run-time 'transport raised SSLError' per scenario
    (rook_workspace.root / "notes.txt").write_text("not a certificate\n")
    write_profile(rook_workspace, entry(verify_tls="notes.txt"), env=())
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "http.verify_tls: " in r.stderr and "notes.txt" in r.stderr
    assert "holds no CA certificate" in r.stderr
    assert "raised" not in r.stderr and not r.stdout.strip()

    # a quoted "false" is text, not false: it was looked for as a CA bundle file
    write_profile(rook_workspace, entry(verify_tls="false"), env=())
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "hooks.execute.http.verify_tls: must be true or false unquoted" in r.stderr, r.stderr


def _private_ca(tmp_path: Path, openssl: str) -> tuple[Path, Path, Path]:
    """A private CA as many guides make one (basicConstraints CA:TRUE, not marked
    critical) and a certificate for 127.0.0.1 it signed: curl and OpenSSL accept it."""
    (tmp_path / "ca.cnf").write_text(
        "[req]\ndistinguished_name = dn\nx509_extensions = ext\nprompt = no\n"
        "[dn]\nCN = Test CA\n[ext]\nbasicConstraints = CA:TRUE\nsubjectKeyIdentifier = hash\n"
    )
    (tmp_path / "leaf.cnf").write_text("[ext]\nsubjectAltName = IP:127.0.0.1\n")
    ca, cert, key = tmp_path / "ca.pem", tmp_path / "leaf.pem", tmp_path / "leaf-key.pem"
    steps = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-config", "ca.cnf"]
        + ["-keyout", "ca-key.pem", "-out", str(ca)],
        ["req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1"]
        + ["-keyout", str(key), "-out", "leaf.csr"],
        ["x509", "-req", "-in", "leaf.csr", "-CA", str(ca), "-CAkey", "ca-key.pem"]
        + ["-set_serial", "7", "-days", "2", "-extfile", "leaf.cnf", "-extensions", "ext", "-out", str(cert)],
    ]
    for step in steps:
        subprocess.run([openssl, *step], check=True, capture_output=True, cwd=tmp_path)
    return ca, cert, key


def test_a_private_ca_curl_accepts_is_accepted_on_every_python(rook_cli, rook_workspace, tmp_path):
    """Python 3.13 made its default TLS context strict (VERIFY_X509_STRICT): a private
    CA whose basicConstraints is not marked critical, which curl --cacert, OpenSSL and
    Python 3.10-3.12 accept, failed every scenario on 3.13 only ('TLS certificate
    verification failed ... give verify_tls the path of the CA bundle', which it was).
    The same profile works on every Python Rook supports, through verify_tls and
    through SSL_CERT_FILE."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    ca, cert, key = _private_ca(tmp_path, openssl)
    server = AgentServer().start(tls=(cert, key))
    try:
        entry = {"url": f"{server.url}/echo", "body": {"goal": "{{goal}}"}, "extract": {"output": "received.goal"}}
        rook_workspace.scenario({"id": "s", "goal": "over tls", "criteria": [{"equals": "over tls"}]})
        write_profile(rook_workspace, {"execute": {"http": {**entry, "verify_tls": str(ca)}}}, env=())
        r = rook_cli("run", "--json")
        assert r.exit_code == 0, r.stdout + r.stderr
        write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
        r = rook_cli("run", "--json", env={"SSL_CERT_FILE": str(ca)})
        assert r.exit_code == 0, r.stdout + r.stderr
    finally:
        server.stop()


def test_an_untrusted_certificate_is_told_to_be_trusted_not_fixed(rook_cli, rook_workspace, tls_server):
    """profile add of a cURL command for an https agent whose certificate Rook does not
    trust ended 'next: rook profile fix NAME', and profile test sent the user there too,
    but no repair helps: a repair never turns TLS verification off. Each says what to
    do: verify_tls with the CA bundle that signed it."""
    server, _ = tls_server
    ws = rook_workspace
    command = f"curl {server.url}/echo -H 'Content-Type: application/json' -d '{{\"message\": \"hi\"}}'"
    r = rook_cli("profile", "add", "--workspace", str(ws.root), "tls", input=command)
    assert r.exit_code == 1, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert "rook profile fix" not in said, said
    assert "give verify_tls the path of the CA bundle" in said, said
    assert "then: rook profile test tls" in said, said
    t = rook_cli("profile", "test", "tls", "-w", str(ws.root))
    assert t.exit_code == 1 and "rook profile fix" not in t.stdout + t.stderr, t.stdout
    assert "next: give verify_tls" in t.stdout, t.stdout
    f = rook_cli("profile", "fix", "tls", "-w", str(ws.root))
    assert f.exit_code == 1 and "next: give verify_tls" in f.stdout, f.stdout + f.stderr
    assert "test after repair" not in f.stdout


def test_curl_cacert_becomes_verify_tls_and_what_an_entry_cannot_send_is_said(
    rook_cli, rook_workspace, tls_server
):
    # `curl --cacert CERT https://...` was written without verify_tls (the option was
    # dropped in silence), so the profile's own test failed TLS verification; options
    # an http: entry cannot reproduce (--cert, --proxy ...) were dropped unsaid
    server, cert = tls_server
    ws = rook_workspace
    command = (
        f"curl --cacert {cert} {server.url}/echo -H 'Content-Type: application/json' "
        "-d '{\"message\": \"hi\"}'"
    )
    r = rook_cli("profile", "add", "--workspace", str(ws.root), "tls", input=command)
    assert r.exit_code == 0, r.stdout + r.stderr
    written = (ws.agent_dir / "profiles" / "tls.yaml").read_text()
    assert f"verify_tls: {cert}" in written

    command = f"curl --cert client.pem -x http://proxy.invalid:3128 {server.url}/echo -d 'q=hi'"
    r = rook_cli("profile", "add", "--workspace", str(ws.root), "mtls", "--no-test", input=command)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "--cert, --proxy: an http: entry cannot send them; left out" in r.stdout


class _Proxy:
    """A forward proxy on 127.0.0.1 that answers every request itself, naming the URL asked for."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = json.dumps({"output": f"via proxy: {self.path}"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_in_the_environment_never_stands_between_rook_and_a_loopback_agent(
    rook_cli, rook_workspace, agent_server, monkeypatch, variable
):
    """A CI job's HTTP_PROXY sent requests for the agent on 127.0.0.1 to the proxy
    (which cannot reach this machine's loopback): 'ConnectError: All connection
    attempts failed' for a server that was up, the proxy named nowhere."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv(variable, f"http://127.0.0.1:{_closed_port()}")
    rook_workspace.scenario({"id": "s", "goal": "hello", "criteria": [{"contains": "hello"}]})
    for base in (agent_server.url, agent_server.url.replace("127.0.0.1", "localhost")):
        entry = {"url": base + "/echo", "body": {"q": "{{goal}}"}, "extract": {"output": "text"}}
        write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
        r = rook_cli("run", "--json")
        scenario = r.report["scenarios"][0]
        assert scenario["status"] == "passed", (base, scenario["reason"])


def test_a_proxy_in_the_environment_still_carries_requests_to_other_hosts(
    rook_cli, rook_workspace, monkeypatch
):
    proxy = _Proxy()
    try:
        for name in ("HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
            monkeypatch.delenv(name.lower(), raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        entry = {"url": "http://agent.invalid/chat", "body": {"q": "{{goal}}"}, "retries": 0}
        write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
        rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "proxy"}]})
        r = rook_cli("run", "--json")
        scenario = r.report["scenarios"][0]
        assert scenario["status"] == "passed", scenario["reason"]
        assert scenario["turns"][0]["output"] == "via proxy: http://agent.invalid/chat"
    finally:
        proxy.stop()


@pytest.mark.parametrize(
    "variable, value, says",
    [
        ("HTTPS_PROXY", "ftp://rook:pw-0123456789@proxy.example:21", "Unknown scheme"),
        ("ALL_PROXY", "socks5://proxy.example:1080", "socksio"),
    ],
)
def test_a_proxy_variable_httpx_cannot_use_fails_the_hook_naming_the_variable(
    rook_cli, rook_workspace, agent_server, monkeypatch, variable, value, says
):
    """'transport 'http' raised ValueError: Unknown scheme for proxy URL ...' named
    neither the variable nor what to do about it."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv(variable, value)
    entry = {"url": agent_server.url + "/echo", "body": {"q": "{{goal}}"}}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    reason = r.report["scenarios"][0]["reason"]
    assert f"the proxy in {variable} cannot be used" in reason, reason
    assert says in reason and " raised " not in reason
    assert "pw-0123456789" not in r.stdout + r.stderr  # the proxy's password is never shown


def test_a_verify_tls_folder_is_named_a_folder_not_missing(rook_workspace, rook_cli):
    # verify_tls: /etc/ssl/certs (OpenSSL's folder of certificates) was
    # "CA bundle '/etc/ssl/certs' not found; tried /etc/ssl/certs": it exists
    certs = rook_workspace.root / "certs"
    certs.mkdir()
    url = "https://127.0.0.1:9/chat"
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"http": {"url": url, "verify_tls": "certs"}}}})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"http.verify_tls: {certs} is a folder" in r.stderr, r.stderr
    assert "the path of the PEM file" in r.stderr and "not found" not in r.stderr


def test_a_101_switching_protocols_is_named_and_not_retried(rook_cli, rook_workspace, agent_server):
    """An endpoint that upgrades (a WebSocket one) answers 101: h11's own words
    ("Received server _SWITCH_UPGRADE event without a pending proposal") reached
    the user, and the request was retried as if the network had failed."""
    agent_server.flaky["up"] = [(101, {"Upgrade": "websocket", "Connection": "Upgrade"})] * 3
    write_profile(rook_workspace, {"execute": flaky_entry(agent_server, "up", retries=2)}, env=())
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    [execute] = record_hooks(rook_workspace, run_id_of(r), "s.1", "execute")
    assert "HTTP 101 Switching Protocols" in execute["diagnosis"], execute["diagnosis"]
    assert "_SWITCH_UPGRADE" not in execute["diagnosis"], execute["diagnosis"]
    assert [q["path"] for q in agent_server.requests].count("/flaky/up") == 1, agent_server.requests


def test_a_close_endpoint_that_times_out_at_the_floor_says_its_entry_asked_less(
    rook_cli, rook_workspace
):
    # an endpoint that never answers: close's "timed out after 5 s" when its entry
    # said 1 named no floor, so the setting read as ignored
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nothing ever answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/close"
        rook_workspace.script(
            "agent.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "ok"}\'\nexit 0\n'
        )
        close = {"http": {"url": url, "method": "POST", "retries": 0}, "timeout_seconds": 1}
        write_profile(rook_workspace, {"execute": "scripts/agent.sh", "close": close}, env=())
        rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
        s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == "passed", s
    diagnosis = s["hooks"][-1]["diagnosis"]
    assert diagnosis.startswith("timed out after 5 s"), diagnosis
    assert "the entry's timeout_seconds (1) is below that floor" in diagnosis, diagnosis


def test_a_long_goal_in_the_url_is_cut_in_each_attempt_record_and_message(
    rook_cli, rook_workspace, agent_server
):
    # a goal sent in the query stayed whole in every attempt's record (and every
    # message): a 10,000-character goal retried 3 times wrote 30,000 characters of URL
    agent_server.flaky["long"] = [(503, {})] * 2
    agent_server.flaky["down"] = [(503, {})] * 9
    entry = flaky_entry(agent_server, "{{scenario}}", retries=2, method="GET")
    entry["http"]["url"] += "?q={{goal}}"
    del entry["http"]["body"]
    write_profile(rook_workspace, {"execute": entry}, env=())
    goal = "word " * 2000 + "END"
    for sid in ("long", "down"):
        rook_workspace.scenario({"id": sid, "goal": goal, "criteria": [{"equals": "finally"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"long": "passed", "down": "error"}
    assert agent_server.seen(path_prefix="/flaky/long")[-1]["query"]["q"] == goal  # sent whole
    for sid in ("long", "down"):
        [execute] = record_hooks(rook_workspace, run_id_of(r), f"{sid}.1", "execute")
        urls = [a["url"] for a in execute["details"]["attempts"]]
        assert len(urls) == 3
        for url in urls:
            assert url.startswith(f"{agent_server.url}/flaky/{sid}?q=word+word")  # sent as word%20word, shown as a form writes it
            full = len(f"{agent_server.url}/flaky/{sid}?q=") + len(goal)
            assert url.endswith(f"... ({full} characters)"), url[-60:]
            assert len(url) < 1100, len(url)
        assert len(execute["diagnosis"] or "") < 2000


def test_a_long_url_cut_in_an_attempt_record_never_splits_a_redaction_marker(
    rook_cli, rook_workspace, agent_server, monkeypatch
):
    """A URL over 1,000 characters is cut for the attempt's record and the
    message, after redaction: a marker at the cut was split (``&k=[reda... (1015
    characters)``). The marker is left out whole now, as a table's cut leaves it."""
    monkeypatch.setenv("AGENT_KEY", "k3y-v4lue-2291")
    agent_server.flaky["down"] = [(503, {})] * 9
    entry = flaky_entry(agent_server, "down", retries=0, method="GET")
    entry["http"]["url"] += "?q={{goal}}&k={{env.AGENT_KEY}}"
    del entry["http"]["body"]
    write_profile(rook_workspace, {"execute": entry})
    prefix = f"{agent_server.url}/flaky/down?q="
    goal = "a" * (1000 - len(prefix) - len("&k=") - 5)  # the marker begins 5 before the cut
    rook_workspace.scenario({"id": "down", "goal": goal, "criteria": [{"equals": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"down": "error"}
    [execute] = record_hooks(rook_workspace, run_id_of(r), "down.1", "execute")
    [url] = [a["url"] for a in execute["details"]["attempts"]]
    assert url == f"{prefix}{goal}&k=... ({len(prefix + goal) + 3 + 20} characters)", url[-60:]
    assert "[reda" not in execute["diagnosis"].replace("[redacted:AGENT_KEY]", ""), execute["diagnosis"]


def test_a_timeout_the_scenario_set_names_the_scenarios_setting(
    rook_cli, rook_workspace, agent_server
):
    """A scenario's timeout_seconds caps each execute turn, an http: one too; when it
    ran out the diagnosis said 'raise timeout_seconds on the hook entry', a setting
    that had 300 s left (as a script hook and a Ruhroh wrapper name the scenario's).
    So for a Retry-After longer than the scenario leaves."""
    agent_server.flaky["wait"] = [(503, {"Retry-After": "30"})]
    endless = {"http": {"url": f"{agent_server.url}/endless", "body": {"q": "{{goal}}"}}}
    for sid in ("endless", "wait"):
        write_profile(
            rook_workspace,
            {"execute": endless if sid == "endless" else flaky_entry(agent_server, "wait")},
            env=(),
        )
        rook_workspace.scenario(
            {"id": "s", "goal": "go", "timeout_seconds": 2, "criteria": [{"contains": "x"}]}
        )
        r = rook_cli("run", "--json")
        reason = r.report["scenarios"][0]["reason"]
        assert "the scenario's timeout_seconds (2 s)" in reason, reason
        assert "on the hook entry" not in reason and "hook entry's timeout" not in reason, reason


def test_an_attempt_cut_off_by_its_own_limit_names_that_setting(
    rook_cli, rook_workspace, agent_server
):
    """An endpoint slower than the entry's http.timeout_seconds (one attempt's limit)
    failed with 'TimeoutError: no complete response within 0.5 s', naming no setting,
    as a hook's timeout names the entry's (or the scenario's)."""
    entry = {"url": f"{agent_server.url}/endless", "timeout_seconds": 0.5, "retries": 0}
    write_profile(rook_workspace, {"execute": {"http": entry}}, env=())
    rook_workspace.scenario({"id": "s", "goal": "go", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    reason = r.report["scenarios"][0]["reason"]
    assert "no complete response within 0.5 s" in reason, reason
    assert "raise timeout_seconds under http: (one attempt's limit)" in reason, reason
