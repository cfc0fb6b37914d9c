"""`rook profile add` against real targets: cURL, command lines, scripts, URLs,
OpenAPI documents, Ruhroh wrappers and an author agent; no secret reaches a file."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
import yaml
from authoring import add, profile
from servers.authoring_server import SCRIPTED_AUTHOR as AUTHOR

AGENTS = Path(__file__).parent / "agents"
pytest_plugins = ["servers.fixtures"]


def assert_nowhere(ws, *secrets):
    """No file under the workspace holds any of the secret values."""
    for path in ws.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, f"{secret!r} leaked into {path}"


def chat_curl(authoring_server, extra=""):
    return (
        f"curl -sS {authoring_server.url}/v1/chat/completions \\\n"
        f"  -H 'Authorization: Bearer {authoring_server.api_key}' \\\n"
        "  -H 'Content-Type: application/json' -H 'Content-Length: 123' " + extra + "\\\n"
        """  -d '{"model": "gpt-4o-mini", "messages": [{"role": "system", "content": "Be brief."},"""
        """ {"role": "user", "content": "Where is my order ORD-1?"}]}'\n"""
    )


def test_curl_file_becomes_a_tested_http_profile(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    ws = rook_workspace
    call = tmp_path / "call.txt"
    call.write_text(chat_curl(authoring_server))
    r = add(rook_cli, ws, "staging", "--from", str(call))
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(ws, "staging")
    http = data["hooks"]["execute"]["http"]
    assert http["url"] == f"{authoring_server.url}/v1/chat/completions"
    assert http["headers"] == {"Authorization": "Bearer {{env.AGENT_API_TOKEN}}"}
    assert http["body"]["messages"][1] == {"role": "user", "content": "{{goal}}"}
    assert http["body"]["messages"][0]["content"] == "Be brief."
    assert http["extract"]["output"] == "choices[0].message.content"
    assert http["extract"]["usage"] == {
        "input": "usage.prompt_tokens",
        "output": "usage.completion_tokens",
    }
    assert data["env"][0]["variable"] == "AGENT_API_TOKEN" and data["env"][0]["purpose"]
    assert data["capabilities"] == {"multi_turn": False, "calls": False, "usage": True}
    out = r.stdout
    assert "test 1 (curl): FAILED (no_answer)" in out and "test 2 (curl): ok" in out
    assert "changed: the answer is under choices[0].message.content" in out
    assert "answer: echo: Say hello in one short sentence." in out
    assert "AGENT_API_TOKEN" in out and authoring_server.api_key not in out + r.stderr
    assert "active profile: staging" in out
    assert_nowhere(ws, authoring_server.api_key)
    # the real request carried the real token and the goal where the sample was
    sent = authoring_server.seen("POST", "/v1/chat/completions")[-1]
    assert sent["headers"]["Authorization"] == f"Bearer {authoring_server.api_key}"
    assert sent["json"]["messages"][1]["content"] == "Say hello in one short sentence."
    assert "Content-Length: 123" not in str(sent["headers"])
    # and rook run works with the variable set
    ws.scenario({"id": "s", "goal": "hello there", "criteria": [{"contains": "echo: hello"}]})
    run = rook_cli("run", "--json", env={"AGENT_API_TOKEN": authoring_server.api_key})
    assert run.statuses() == {"s": "passed"}, run.stderr
    assert_nowhere(ws, authoring_server.api_key)


def test_a_variable_already_set_to_another_value_is_said_to_have_been_used(
    rook_workspace, rook_cli, authoring_server
):
    """With the variable a secret moves to already set (a stale token in the shell),
    the test used that value, as documented, but nothing said so: the user saw their
    working cURL command fail as 'rejected the credentials' with no hint why."""
    ws = rook_workspace
    stale = "stale-token-5678"
    env = {"AGENT_API_TOKEN": stale}
    r = add(rook_cli, ws, "staging", input=chat_curl(authoring_server), env=env)
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "FAILED (auth)" in r.stdout
    assert (
        "AGENT_API_TOKEN is set in your environment: the test used its value, "
        "not the one in your source" in r.stdout
    ), r.stdout
    assert stale not in r.stdout + r.stderr and authoring_server.api_key not in r.stdout
    # set to the value the source holds, there is nothing to say
    env = {"AGENT_API_TOKEN": authoring_server.api_key}
    r = add(rook_cli, ws, "staging", "--force", input=chat_curl(authoring_server), env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "is set in your environment" not in r.stdout


def test_a_second_profiles_other_token_gets_a_variable_named_after_the_profile(
    rook_workspace, rook_cli, authoring_server
):
    """Every profile of an agent made by profile add named its token AGENT_API_TOKEN:
    a second profile, for another service with another token, silently reused the
    first's variable, so one of the two was always sent the wrong token."""
    ws = rook_workspace
    r = add(rook_cli, ws, "staging", input=chat_curl(authoring_server))
    assert r.exit_code == 0, r.stdout + r.stderr
    other = "tok-" + "b" * 24
    curl = chat_curl(authoring_server).replace(authoring_server.api_key, other)
    elsewhere = curl.replace("127.0.0.1", "localhost")  # another origin: another service
    r = add(rook_cli, ws, "eu", "--no-test", input=elsewhere)
    assert r.exit_code == 0, r.stdout + r.stderr
    eu = profile(ws, "eu")
    assert eu["env"][0]["variable"] == "AGENT_EU_API_TOKEN"
    assert eu["hooks"]["execute"]["http"]["headers"] == {
        "Authorization": "Bearer {{env.AGENT_EU_API_TOKEN}}"
    }
    assert "AGENT_API_TOKEN is already the variable of profile staging" in r.stdout, r.stdout
    assert profile(ws, "staging")["env"][0]["variable"] == "AGENT_API_TOKEN"  # not renamed
    assert_nowhere(ws, other, authoring_server.api_key)
    # a profile written again keeps its own variable
    r = add(rook_cli, ws, "eu", "--force", "--no-test", input=elsewhere)
    assert profile(ws, "eu")["env"][0]["variable"] == "AGENT_EU_API_TOKEN"
    # the same token, set in the variable the other profile reads: the same variable
    env = {"AGENT_API_TOKEN": other}
    r = add(rook_cli, ws, "copy", "--no-test", input=elsewhere, env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "copy")["env"][0]["variable"] == "AGENT_API_TOKEN"
    # the same service (another model, say): its secret, so its variable
    r = add(rook_cli, ws, "mini", "--no-test", input=curl)
    assert profile(ws, "mini")["env"][0]["variable"] == "AGENT_API_TOKEN"
    assert "already the variable" not in r.stdout


def test_a_variable_named_after_the_profile_is_never_another_services_either(
    rook_workspace, rook_cli, authoring_server
):
    """Profiles eu-1 and eu_1 give one name (AGENT_EU_1_API_TOKEN): the second,
    for a third service, was given the variable eu-1 declares for its own, the
    wrong token again. It gets a name no other service's profile has."""
    ws = rook_workspace
    curl = chat_curl(authoring_server)
    for pid, host, token in [("staging", "a.example", "tok-" + "a" * 24),
                             ("eu-1", "b.example", "tok-" + "b" * 24),
                             ("eu_1", "c.example", "tok-" + "c" * 24)]:
        source = curl.replace(authoring_server.api_key, token).replace(
            authoring_server.url, f"https://{host}")
        r = add(rook_cli, ws, pid, "--no-test", input=source)
        assert r.exit_code == 0, r.stdout + r.stderr
    names = [profile(ws, pid)["env"][0]["variable"] for pid in ("staging", "eu-1", "eu_1")]
    assert names[:2] == ["AGENT_API_TOKEN", "AGENT_EU_1_API_TOKEN"], names
    assert names[2] not in names[:2], names


@pytest.mark.parametrize("written", ["{api_key}", "<your-api-key>", "YOUR_API_KEY", "[TOKEN]"])
def test_a_documentation_placeholder_for_the_token_is_no_value_to_test_with(
    rook_workspace, rook_cli, authoring_server, written
):
    """Dify's docs (and many others) write Authorization: Bearer {api_key}: that text
    was taken as the token, used for the test ('the value from your source was used
    for this test only'), so the test was sent "Bearer {api_key}" and rejected. It is a
    placeholder: the variable is read from the environment, as one the source names."""
    ws = rook_workspace
    curl = chat_curl(authoring_server).replace(authoring_server.api_key, written)
    r = add(rook_cli, ws, "dify", input=curl)
    assert r.exit_code == 2, r.stdout + r.stderr  # not set: nothing could be tested
    assert "not set: AGENT_API_TOKEN" in r.stdout, r.stdout
    assert "read from the environment" in r.stdout and "used for this test only" not in r.stdout
    http = profile(ws, "dify")["hooks"]["execute"]["http"]
    assert http["headers"] == {"Authorization": "Bearer {{env.AGENT_API_TOKEN}}"}
    # set, its value is what the test sends
    r = add(rook_cli, ws, "dify", "--force", input=curl, env={"AGENT_API_TOKEN": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr


@pytest.mark.parametrize("token", ["PROD_9F8A7C6B5D4E3F2A1B0C", "ADMIN_PASS_2024"])
def test_a_real_token_in_capitals_and_underscores_is_a_value_not_a_placeholder(
    rook_workspace, rook_cli, authoring_server, token
):
    """A token of capitals, digits and underscores (an internal API's
    PROD_9F8A..., a password ADMIN_PASS_2024) was taken for a documentation's
    stand-in (YOUR_API_KEY): the value pasted was dropped and the test stopped,
    'not set: AGENT_API_TOKEN'. A part of 4 digits or more is no word: it is the
    value, used for the test."""
    ws = rook_workspace
    authoring_server.api_key = token
    r = add(rook_cli, ws, "internal", input=chat_curl(authoring_server))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "used for this test only" in r.stdout, r.stdout
    assert_nowhere(ws, token)


@pytest.mark.parametrize("token", ["{3F2504E0-4F89-11D3-9A0C-0305E82C3301}",
                                   "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
                                   "<0305E82C3301>", "[9A0C-0305E82C3301]"])
def test_a_guid_in_braces_is_a_value_not_a_placeholder(
    rook_workspace, rook_cli, authoring_server, token
):
    """A key written as a GUID in braces ({3F2504E0-4F89-...}, as Windows writes
    them) was taken for a documentation's stand-in ({api_key}): the value pasted
    was dropped and the test stopped, 'not set: AGENT_API_TOKEN'. Bracketed text
    with a part of 4 digits or more is no word: it is the value, used for the test."""
    ws = rook_workspace
    authoring_server.api_key = token
    r = add(rook_cli, ws, "guid", input=chat_curl(authoring_server))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "used for this test only" in r.stdout, r.stdout
    assert_nowhere(ws, token)


@pytest.mark.parametrize(
    "data, query",
    [
        ('{"text": "{{goal}}", "meta": {"sid": "{{session}}"}}', ""),
        ('{"text": "hi", "tag": "a longer sample tag"}', "?q={{goal}}"),
    ],
)
def test_a_curl_command_that_already_says_where_the_goal_goes_is_taken_as_written(
    rook_workspace, rook_cli, authoring_server, data, query
):
    """A cURL command written with {{goal}} where the message goes (as http.md shows
    it) was refused: 'the cURL command sends no message Rook could replace with the
    goal'; with {{goal}} in its query, the goal also replaced the longest body string.
    The goal goes where the command says, and the other placeholders stay."""
    ws = rook_workspace
    curl = (
        f"curl '{authoring_server.url}/echo{query}' -H 'Content-Type: application/json' "
        f"-H 'X-Session: {{{{session}}}}' -d '{data}'"
    )
    r = add(rook_cli, ws, "echo", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "note: the goal goes where your command has {{goal}}" in r.stdout, r.stdout
    http = profile(ws, "echo")["hooks"]["execute"]["http"]
    assert http["headers"]["X-Session"] == "{{session}}", http
    sent = authoring_server.seen("POST", "/echo")[-1]
    goal = "Say hello in one short sentence."
    assert sent["headers"]["X-Session"] not in ("", "{{session}}"), sent
    if query:
        assert sent["query"]["q"] == goal
        assert sent["json"] == {"text": "hi", "tag": "a longer sample tag"}, sent
    else:
        assert sent["json"]["text"] == goal and sent["json"]["meta"]["sid"], sent


def test_a_url_that_already_says_where_the_goal_goes_is_not_probed(
    rook_workspace, rook_cli, authoring_server
):
    """--from URL?q={{goal}} was probed like a bare URL: POST {"message": goal} first
    (with the goal in the query too, so an endpoint taking both got it twice). The URL
    says where the goal goes: a GET with that query, nothing else tried."""
    ws = rook_workspace
    r = add(rook_cli, ws, "look", "--from", f"{authoring_server.url}/lookup?q={{{{goal}}}}&n=3")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "note: the goal goes where your URL has {{goal}}" in r.stdout, r.stdout
    assert "answer: found: Say hello" in r.stdout and "HTTP 405" not in r.stdout, r.stdout
    http = profile(ws, "look")["hooks"]["execute"]["http"]
    assert http.get("method", "GET") == "GET" and "body" not in http, http
    assert http["query"] == {"q": "{{goal}}", "n": "3"}, http
    assert not authoring_server.seen("POST", "/lookup")


def test_curl_on_stdin_with_a_rejected_header(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    curl = (
        f"curl -X POST '{authoring_server.url}/strict' -H 'X-Debug: 1' "
        """-H 'X-Api-Key: k-123456789' --json '{"message": "hi there"}'"""
    )
    r = add(rook_cli, ws, "strict", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "the server rejected the X-Debug header (HTTP 400): removed" in r.stdout
    http = profile(ws, "strict")["hooks"]["execute"]["http"]
    assert "X-Debug" not in http["headers"]
    assert http["headers"]["X-Api-Key"] == "{{env.AGENT_API_KEY}}"
    assert http["extract"]["output"] == "result.text"
    assert "answer: strictly: Say hello" in r.stdout
    assert_nowhere(ws, "k-123456789")


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_a_curl_command_saved_with_a_byte_order_mark_is_read(
    rook_workspace, rook_cli, authoring_server, tmp_path, via
):
    # Notepad and PowerShell (Out-File -Encoding utf8) write a BOM first, and CRLF:
    # it was "Rook cannot tell what this is"
    ws = rook_workspace
    text = "\ufeff" + chat_curl(authoring_server).replace("\n", "\r\n")
    call = tmp_path / "call.txt"
    call.write_bytes(text.encode())
    args = ("--from", str(call)) if via == "file" else ()
    r = add(rook_cli, ws, "staging", *args, input=text if via == "stdin" else None)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "staging")["hooks"]["execute"]["http"]
    assert http["url"] == f"{authoring_server.url}/v1/chat/completions"
    assert http["headers"] == {"Authorization": "Bearer {{env.AGENT_API_TOKEN}}"}
    assert "answer: echo: Say hello in one short sentence." in r.stdout
    assert_nowhere(ws, authoring_server.api_key)


def test_curl_basic_auth_and_form_body(rook_workspace, rook_cli, authoring_server, tmp_path):
    ws = rook_workspace
    call = tmp_path / "basic.sh"
    call.write_text(
        f"# my call\n$ curl -u user:{authoring_server.basic_password} "
        f"""{authoring_server.url}/basic -d '{{"q": "what is up"}}'\n"""
    )
    r = add(rook_cli, ws, "basic", "--from", str(call))
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "basic")["hooks"]["execute"]["http"]
    assert http["headers"] == {  # no Content-Type in the command: what curl sends
        "Authorization": "Basic {{env.AGENT_BASIC_AUTH}}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    assert http["body"] == {"q": "{{goal}}"} and "extract" not in http
    assert "answer: basic answer to: Say hello" in r.stdout
    assert_nowhere(ws, authoring_server.basic_password)
    assert authoring_server.basic_password not in r.stdout + r.stderr

    form = tmp_path / "form.txt"
    form.write_text(
        f"curl {authoring_server.url}/form --data-urlencode 'message=hello desk' --data-urlencode 'lang=en'"
    )
    r = add(rook_cli, ws, "form", "--from", str(form))
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "form")["hooks"]["execute"]["http"]
    assert http["form"] == {"message": "{{goal}}", "lang": "en"}
    assert http["extract"]["output"] == "reply"


def test_curl_fields_given_more_than_once_are_all_sent(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A form field or query parameter a cURL command gives twice (`-d tag=a -d
    tag=b`, `?tag=x&tag=y`) kept only its last value: the profile sent another
    request than the command. Each is a list, sent once per item as curl sends it."""
    ws = rook_workspace
    call = tmp_path / "tags.sh"
    call.write_text(
        f"curl '{authoring_server.url}/form?tag=x&tag=y' -d tag=a -d tag=b -d message=hi\n"
    )
    r = add(rook_cli, ws, "tags", "--from", str(call))
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "tags")["hooks"]["execute"]["http"]
    assert http["form"] == {"tag": ["a", "b"], "message": "{{goal}}"}, http
    assert http["query"] == {"tag": ["x", "y"]}, http
    assert "answer: form reply to: Say hello" in r.stdout
    sent = [q for q in authoring_server.requests if q["path"] == "/form"][-1]
    assert parse_qsl(sent["text"])[:2] == [("tag", "a"), ("tag", "b")], sent["text"]


def test_half_a_character_in_a_json_body_is_written_as_the_replacement_character(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A JSON body holding half of an emoji ("\\ud83d" alone: JSON reads it as a lone
    surrogate, which no UTF-8 text holds) failed the test with "raised
    UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud83d'", and the
    profile written held "\\uD83D", which YAML then refused to read. It is U+FFFD,
    as bash's $'...' makes of it, and a note says so."""
    ws = rook_workspace
    call = tmp_path / "half.sh"
    call.write_text(chat_curl(authoring_server).replace('"Be brief."', '"Be brief \\ud83d"'))
    r = add(rook_cli, ws, "half", "--from", str(call))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "UnicodeEncodeError" not in r.stdout + r.stderr
    assert "half of a character" in r.stdout and "U+FFFD" in r.stdout, r.stdout
    body = profile(ws, "half")["hooks"]["execute"]["http"]["body"]
    assert body["messages"][0]["content"] == "Be brief \ufffd"
    test = rook_cli("profile", "test", "half", env={"AGENT_API_TOKEN": authoring_server.api_key})
    assert test.exit_code == 0, test.stdout + test.stderr


def test_curl_digest_credentials_answer_the_servers_challenge(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """`curl --digest -u USER:PW` was written with no credential at all (a note said
    an http entry cannot answer the challenge), so the profile could not reach the
    API. It is the entry's auth.digest: the user as written, the password moved to
    env, tested against the real server's challenge."""
    ws = rook_workspace
    password = authoring_server.digest_password
    call = tmp_path / "digest.sh"
    call.write_text(
        f"curl --digest -u desk-operator:{password} {authoring_server.url}/digest "
        """-H 'Content-Type: application/json' -d '{"message": "hi"}'\n"""
    )
    r = add(rook_cli, ws, "dig", "--from", str(call))
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "dig")["hooks"]["execute"]["http"]
    assert http["auth"] == {
        "digest": {"username": "desk-operator", "password": "{{env.AGENT_DIGEST_PASSWORD}}"}
    }, http
    assert "Authorization" not in http.get("headers", {})
    assert "answer: digest answer to: Say hello" in r.stdout
    assert "are not sent" not in r.stdout
    assert password not in r.stdout + r.stderr
    assert_nowhere(ws, password)


@pytest.mark.parametrize("flag", ["--ntlm", "--negotiate"])
def test_curl_digest_credentials_are_not_sent_as_basic(
    rook_workspace, rook_cli, authoring_server, tmp_path, flag
):
    """`curl --digest -u bob:PW` was written as a Basic header: the password went in
    clear to a server that asked for digest. An http entry cannot answer the
    challenge, so the credential is not sent, and a note says so."""
    ws = rook_workspace
    password = "pw-" + "5e0b7d93c1"
    call = tmp_path / "digest.sh"
    call.write_text(
        f"curl {flag} -u bob:{password} {authoring_server.url}/history "
        """-H 'Content-Type: application/json' -d '{"message": "hi"}'\n"""
    )
    r = add(rook_cli, ws, "dig", "--from", str(call))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "Authorization" not in authoring_server.requests[-1]["headers"]
    assert "Authorization" not in profile(ws, "dig")["hooks"]["execute"]["http"].get("headers", {})
    assert f"the cURL command's {flag}: the user and password (-u, or in the URL) are not sent" in r.stdout
    assert password not in r.stdout + r.stderr
    assert_nowhere(ws, password)


def test_curl_anyauth_is_written_as_basic_with_a_note_saying_so(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """`curl --anyauth -u user:PW` lets curl pick the scheme the server asks for; it
    was written as a Basic header in silence. Basic stays (what such a server
    most often takes, and the test shows whether it does), and a note says the
    scheme was assumed and what to do when the server asks for another."""
    ws = rook_workspace
    call = tmp_path / "any.sh"
    call.write_text(
        f"curl --anyauth -u user:{authoring_server.basic_password} "
        f"""{authoring_server.url}/basic -d '{{"q": "what is up"}}'\n"""
    )
    r = add(rook_cli, ws, "any", "--from", str(call))
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "any")["hooks"]["execute"]["http"]
    assert http["headers"]["Authorization"] == "Basic {{env.AGENT_BASIC_AUTH}}"
    assert "the cURL command's --anyauth: Basic authentication is assumed" in r.stdout, r.stdout
    assert authoring_server.basic_password not in r.stdout + r.stderr
    assert_nowhere(ws, authoring_server.basic_password)


def test_url_endpoint_is_probed_into_shape(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    r = add(
        rook_cli, ws, "ask", "--from", f"{authoring_server.url}/ask?key={authoring_server.api_key}"
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "ask")["hooks"]["execute"]["http"]
    assert http["query"] == {"key": "{{env.AGENT_API_KEY}}"}
    assert http["body"] == {"prompt": "{{goal}}", "conversation_id": "{{conversation}}"}
    assert http["extract"]["output"] == "answer"
    assert http["extract"]["conversation"] == "conversation_id"
    assert http["extract"]["usage"] == {
        "input": "usage.input_tokens",
        "output": "usage.output_tokens",
    }
    assert "(HTTP 422): the goal now goes in the body field prompt" in r.stdout
    assert f"url ({authoring_server.url}/ask)" in r.stdout  # host and port, no query
    # each wait is said first, on stderr: the fetch, then each test (no query: it has the key)
    assert f"reading {authoring_server.url}/ask (GET, up to 30 s)\n" in r.stderr
    assert f"trying the agent: POST {authoring_server.url}/ask (up to 300 s)\n" in r.stderr
    assert f"{authoring_server.url}/ask (2 turns, up to 300 s each)" in r.stderr
    caps = profile(ws, "ask")["capabilities"]
    assert caps == {"multi_turn": True, "calls": False, "usage": True}
    # the second turn of the probe continued the same conversation
    assert any(len(prompts) == 2 for prompts in authoring_server.conversations.values())
    assert authoring_server.api_key not in r.stdout + r.stderr
    assert_nowhere(ws, authoring_server.api_key)


def test_the_note_on_the_request_shape_says_what_probing_showed(
    rook_workspace, rook_cli, authoring_server
):
    """An endpoint that never answered still got 'the request shape was found by
    probing the endpoint'. The note says what happened: found, never confirmed
    (no answer), or not sent (no test ran)."""
    import socket

    ws = rook_workspace
    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    r = add(rook_cli, ws, "gone", "--from", f"http://127.0.0.1:{port}/ask")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "found by probing" not in r.stdout
    assert (
        'note: the request shape is the last one tried (POST {"message": GOAL}), never '
        "confirmed: the endpoint gave no answer" in r.stdout
    )
    r = add(rook_cli, ws, "later", "--no-test", "--from", f"http://127.0.0.1:{port}/ask")
    assert "found by probing" not in r.stdout
    assert "(no test ran)" in r.stdout
    r = add(rook_cli, ws, "strict", "--from", f"{authoring_server.url}/strict")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert 'note: the request shape (POST {"message": GOAL}) was found by probing' in r.stdout
    # a chat endpoint: its shape is a list of messages, not {"messages": GOAL}
    r = add(rook_cli, ws, "chat", "--from", f"{authoring_server.url}/chatonly")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "chat")["hooks"]["execute"]["http"]["body"] == {
        "messages": [{"role": "user", "content": "{{goal}}"}]
    }
    assert (
        'note: the request shape (POST {"messages": [{"role": "user", "content": GOAL}]}) '
        "was found by probing" in r.stdout
    ), r.stdout


def test_an_endpoint_that_allows_no_post_is_asked_with_get(
    rook_workspace, rook_cli, authoring_server
):
    """A 405 to the first POST says the method is wrong: the probe goes to ``GET ?q=``
    next (it tried every other POST body first, and the default 4 tests ran out
    before it reached GET: the profile was written broken, exit 1)."""
    ws = rook_workspace
    r = add(rook_cli, ws, "lookup", "--from", f"{authoring_server.url}/lookup")
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "lookup")["hooks"]["execute"]["http"]
    assert http["method"] == "GET" and http["query"] == {"q": "{{goal}}"}
    assert "body" not in http
    assert "(HTTP 405): the goal now goes in the query parameter q (GET)" in r.stdout
    assert "answer: found: Say hello in one short sentence." in r.stdout
    assert "test 4" not in r.stdout, r.stdout


def test_openapi_document_by_url_builds_a_session_profile(
    rook_workspace, rook_cli, authoring_server
):
    ws = rook_workspace
    r = add(rook_cli, ws, "--from", f"{authoring_server.url}/openapi.json")
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(ws, "order-desk")
    hooks = data["hooks"]
    assert hooks["open"]["http"]["url"] == f"{authoring_server.url}/api/sessions"
    assert hooks["open"]["http"]["extract"] == {"conversation": "session.id"}
    assert (
        hooks["execute"]["http"]["url"]
        == f"{authoring_server.url}/api/sessions/{{{{conversation}}}}/messages"
    )
    assert hooks["execute"]["http"]["body"] == {"text": "{{goal}}"}
    assert hooks["execute"]["http"]["extract"]["output"] == "data.reply"
    assert hooks["close"]["http"]["method"] == "DELETE"
    assert data["capabilities"] == {"multi_turn": True, "calls": True, "usage": True}
    assert "noted (2 message(s) so far)" in r.stdout or "noted (1 message(s) so far)" in r.stdout


def test_openapi_with_several_operations_asks(rook_workspace, rook_cli, authoring_server, tmp_path):
    ws = rook_workspace
    import json

    from servers.authoring_server import MANY

    doc = tmp_path / "api.json"
    doc.write_text(json.dumps(MANY))
    r = add(rook_cli, ws, "two", "--from", str(doc))
    assert r.exit_code == 2
    assert "--operation ID" in r.stderr and "ask" in r.stderr and "askV2" in r.stderr
    assert not (ws.agent_dir / "profiles" / "two.yaml").exists()
    r = add(rook_cli, ws, "two", "--from", str(doc), "--operation", "askV2")
    assert r.exit_code == 2 and "--base-url" in r.stderr  # the document names no server
    assert "api.json: the OpenAPI document names no server URL (servers)" in r.stderr
    r = add(
        rook_cli,
        ws,
        "two",
        "--from",
        str(doc),
        "--operation",
        "askV2",
        "--base-url",
        authoring_server.url,
        "--no-test",
    )
    assert r.exit_code == 0, r.stderr
    assert profile(ws, "two")["hooks"]["execute"]["http"]["url"] == f"{authoring_server.url}/v2/ask"
    assert "not tested; next: rook profile test two" in r.stdout


def test_an_api_key_in_the_openapi_url_fills_the_query_key_scheme(
    rook_workspace, rook_cli, authoring_server
):
    """``--from https://HOST/openapi.json?key=KEY``, for a document whose apiKey scheme
    is that query parameter, wrote ``{{env.AGENT_API_KEY}}`` with no value for it: the
    key in hand was ignored and the test did not run ("not set: AGENT_API_KEY")."""
    ws = rook_workspace
    key = authoring_server.api_key
    r = add(rook_cli, ws, "keyed", "--from", f"{authoring_server.url}/openapi-key.json?key={key}")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: answer 1: Say hello" in r.stdout, r.stdout
    data = profile(ws, "keyed")
    assert data["hooks"]["execute"]["http"]["query"] == {"key": "{{env.AGENT_API_KEY}}"}
    assert [e["variable"] for e in data["env"]] == ["AGENT_API_KEY"]
    assert key not in r.stdout + r.stderr
    assert_nowhere(ws, key)


def test_openapi_security_scheme_becomes_env(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    r = add(rook_cli, ws, "keyed", "--from", f"{authoring_server.url}/openapi-key.json")
    # the key is not set: written, not tested; a missing variable is exit 2, as in profile test
    assert r.exit_code == 2, r.stdout + r.stderr
    data = profile(ws, "keyed")
    assert data["hooks"]["execute"]["http"]["query"] == {"key": "{{env.AGENT_API_KEY}}"}
    assert data["env"][0]["variable"] == "AGENT_API_KEY"
    assert "missing_variable" in r.stdout and "set AGENT_API_KEY before rook run" in r.stdout
    assert "not tested: its variables are not set" in r.stdout and "profile fix" not in r.stdout
    r = add(
        rook_cli,
        ws,
        "keyed",
        "--from",
        f"{authoring_server.url}/openapi-key.json",
        "--force",
        env={"AGENT_API_KEY": authoring_server.api_key},
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: answer 1: Say hello" in r.stdout


def test_command_line_becomes_a_readable_hook_script(rook_workspace, rook_cli):
    ws = rook_workspace
    cmd = f"{sys.executable} {AGENTS / 'cli_agent.py'}"
    r = add(rook_cli, ws, "local", "--command", cmd)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "local")["hooks"] == {"execute": "scripts/local-hook.py"}
    script = (ws.agent_dir / "scripts" / "local-hook.py").read_text()
    assert "cli_agent.py" in script and "def main(phase)" in script
    assert "answer: cli answer: Say hello in one short sentence." in r.stdout

    r = add(rook_cli, ws, "json", "--command", cmd + " --json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "the command prints JSON: the answer is taken from result" in r.stdout
    assert "session id (session_id)" in r.stdout
    script = (ws.agent_dir / "scripts" / "json-hook.py").read_text()
    assert "ANSWER = ['result']" in script
    assert profile(ws, "json")["capabilities"]["usage"] is True
    assert "answer: cli answer: Say hello" in r.stdout


def test_a_command_printing_json_lines_is_read_from_its_events(rook_workspace, rook_cli):
    """A command that prints JSON Lines (`claude -p --output-format stream-json`: an
    init event, the messages, a result event) was taken for plain text: the answer
    shown and judged was every line of the stream. Its answer, usage and session
    id are taken from the events now, each from the last line that has it, so a
    turn printing more message lines than the test's is read the same way."""
    ws = rook_workspace
    cmd = f"{sys.executable} {AGENTS / 'cli_agent.py'} --stream-json"
    r = add(rook_cli, ws, "stream", "--command", cmd)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "the command prints JSON Lines: the answer is taken from result, in the last line" in r.stdout, r.stdout
    assert "answer: cli answer: Say hello in one short sentence.\n" in r.stdout, r.stdout
    assert "session id (session_id)" in r.stdout
    script = (ws.agent_dir / "scripts" / "stream-hook.py").read_text()
    assert "JSON_LINES = True" in script and "ANSWER = ['result']" in script
    assert profile(ws, "stream")["capabilities"]["usage"] is True

    r = rook_cli("profile", "test", "stream", "-w", str(ws.root), "--goal", "one\ntwo\nthree")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: cli answer: one two three" in " ".join(r.stdout.split()), r.stdout


def test_what_the_add_test_observed_is_remembered_as_a_profile_test_s_is(
    rook_workspace, rook_cli
):
    """profile add claims exactly what its test observed, but did not remember it:
    `rook profile show` right after said `calls declared=yes observed=no`, as if
    the claim were optimistic. A profile added anew with --force keeps nothing the
    one it replaces observed."""
    ws = rook_workspace
    r = add(rook_cli, ws, "desk", "--from", str(AGENTS / "hook_agent.py"))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "desk")["capabilities"]["calls"] is True
    shown = rook_cli("profile", "show", "desk", "-w", str(ws.root))
    assert "calls declared=yes observed=yes" in shown.stdout, shown.stdout

    r = add(rook_cli, ws, "desk", "--force", "--command", f"{sys.executable} {AGENTS / 'plain_agent.py'}")
    assert r.exit_code == 0, r.stdout + r.stderr
    shown = rook_cli("profile", "show", "desk", "-w", str(ws.root))
    assert "calls declared=no observed=no" in shown.stdout, shown.stdout


def test_the_next_step_asks_for_scenarios_only_when_the_agent_has_none(rook_workspace, rook_cli):
    """profile add ended 'next: write scenarios in scenarios/, then: rook run' also for
    an agent whose scenarios are written already; then the next step is rook run."""
    ws = rook_workspace
    r = add(rook_cli, ws, "desk", "--from", str(AGENTS / "hook_agent.py"))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "next: write scenarios in scenarios/, then: rook run" in r.stdout, r.stdout
    ws.scenario({"id": "hello", "goal": "Say hello", "criteria": [{"contains": "hook"}]})
    r = add(rook_cli, ws, "desk2", "--use", "--from", str(AGENTS / "hook_agent.py"))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "write scenarios" not in r.stdout, r.stdout
    step = r.stdout.splitlines()[-1]
    assert step == f"next: rook run -w {ws.root}", step
    run = rook_cli("run", "-w", str(ws.root))
    assert run.exit_code == 0 and "1 passed" in run.stdout, run.stdout + run.stderr


def test_a_command_that_lost_its_run_bit_or_its_file_says_how_to_mend_it(rook_workspace, rook_cli):
    """A --command program that later lost its run bit (or was renamed) failed its
    turns with 'cannot run ./tool.sh: Permission denied' alone, and profile test sent
    the user to profile fix, which can repair neither; the hook script now says what
    to do: chmod +x it, or correct COMMAND in the script it names."""
    ws = rook_workspace
    tool = ws.root / "tool.sh"
    tool.write_text('#!/bin/bash\nread -r g\necho "tool says: $g"\n')
    tool.chmod(0o755)
    r = add(rook_cli, ws, "tool", "--command", "./tool.sh")
    assert r.exit_code == 0 and "answer: tool says: Say hello" in r.stdout, r.stdout + r.stderr
    tool.chmod(0o644)
    # rook doctor, which sends nothing, sees it too (it said ok)
    r = rook_cli("doctor", "-w", str(ws.root))
    said = " ".join(r.stdout.split())
    assert r.exit_code == 1, said
    assert "PROBLEM proj/agent profile tool hooks.execute: its command's program ./tool.sh is not executable" in said, said
    assert f"fix: chmod +x {tool}, or put its interpreter before it in COMMAND in" in said, said
    r = rook_cli("profile", "test", "tool", "-w", str(ws.root))
    assert r.exit_code == 1, r.stdout + r.stderr
    said = " ".join(r.stdout.split())
    assert "cannot run ./tool.sh: Permission denied (chmod +x ./tool.sh" in said, said
    step = r.stdout.splitlines()[-1]  # profile fix repairs neither: not the next step
    assert step.startswith("next: the command the hook script runs cannot start: "), step
    assert step.endswith(f"then run rook profile test tool -w {ws.root}"), step
    tool.rename(ws.root / "tool2.sh")
    r = rook_cli("profile", "test", "tool", "-w", str(ws.root))
    said = " ".join(r.stdout.split())
    assert "cannot run ./tool.sh: No such file or directory (not installed, moved or renamed?" in said, said
    assert "scripts/tool-hook.py" in said, said
    r = rook_cli("doctor", "-w", str(ws.root))
    said = " ".join(r.stdout.split())
    assert r.exit_code == 1 and "its command's program ./tool.sh is not there" in said, said


def test_the_written_script_reads_bytes_that_are_not_utf8_and_keeps_the_goal_exact(
    rook_workspace, rook_cli
):
    """Rook reads a hook's bytes that are not UTF-8 as U+FFFD, never a crash; the
    script `--command` writes crashed on them (UnicodeDecodeError), so a command
    printing Latin-1 failed every turn. The goal reaches the command byte for byte."""
    ws = rook_workspace
    cmd = f"{sys.executable} {AGENTS / 'cli_agent.py'}"
    r = add(rook_cli, ws, "latin", "--command", cmd + " --latin-1")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: cli answer: Say hello in one short sentence. caf\ufffd" in r.stdout, r.stdout
    assert "UnicodeDecodeError" not in r.stdout + r.stderr

    r = add(rook_cli, ws, "hex", "--command", cmd + " --hex")
    assert r.exit_code == 0, r.stdout + r.stderr
    goal = 'line "1" $HOME `x`\r\nline 2: caf\u00e9 \u6f22\r'
    ws.scenario({"id": "s", "goal": goal, "criteria": [{"equals": "hex " + goal.encode().hex()}]})
    run = rook_cli("run", "--json", "--profile", "hex")
    assert run.statuses() == {"s": "passed"}, run.stdout + run.stderr


def test_the_script_wrapping_a_hook_reads_bytes_that_are_not_utf8(rook_workspace, rook_cli):
    """The wrapper `--from` writes around a hook that answers under another field
    crashed on bytes that are not UTF-8 (or a byte order mark), which Rook itself reads."""
    ws = rook_workspace
    hook = ws.root / "latin.sh"
    hook.write_bytes(
        b'#!/bin/bash\n[ "$1" = execute ] || exit 0\ncat >/dev/null\n'
        b"printf '\\xef\\xbb\\xbf{\"reply\": \"caf\\xe9\"}\\n'\n"
    )
    hook.chmod(0o755)
    r = add(rook_cli, ws, "latin", "--from", str(hook))
    assert "UnicodeDecodeError" not in r.stdout + r.stderr and "JSONDecodeError" not in r.stdout
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "scripts/latin-hook.py runs it as the hook and hands on reply as output" in r.stdout
    assert "answer: caf\ufffd" in r.stdout, r.stdout


def digest(value):
    import hashlib

    return hashlib.sha256(value.encode()).hexdigest()[:12]


def test_command_line_secrets_move_to_env(rook_workspace, rook_cli):
    ws = rook_workspace
    env_key, arg_key = "sk-CMDSECRET999", "sk-ARGSECRET888"
    agent = AGENTS / "keyed_agent.py"
    cmd = f"env OPENAI_API_KEY={env_key} {sys.executable} {agent} --api-key {arg_key}"
    r = add(rook_cli, ws, "keyed", "--command", cmd, env={"OPENAI_API_KEY": ""})
    assert r.exit_code == 0, r.stdout + r.stderr
    # the probe reached the command with both real values ...
    assert f"[arg {digest(arg_key)}] [env {digest(env_key)}]" in r.stdout
    # ... which are in no file and never on the screen
    assert env_key not in r.stdout + r.stderr and arg_key not in r.stdout + r.stderr
    assert_nowhere(ws, env_key, arg_key)
    data = profile(ws, "keyed")
    assert [e["variable"] for e in data["env"]] == ["OPENAI_API_KEY", "AGENT_API_KEY"]
    assert all(e["purpose"] for e in data["env"])
    assert "the --api-key option of python" in data["env"][1]["purpose"]
    script = (ws.agent_dir / "scripts" / "keyed-hook.py").read_text()
    assert "os.environ['AGENT_API_KEY']" in script and "OPENAI_API_KEY" not in script
    assert 'keyed_agent.py --api-key "$AGENT_API_KEY"' in r.stdout  # the note line
    assert "secret: OPENAI_API_KEY" in r.stdout and "secret: AGENT_API_KEY" in r.stdout
    assert "set AGENT_API_KEY before rook run" in r.stdout
    # a run reads both from the environment
    ws.scenario(
        {
            "id": "s",
            "goal": "hello",
            "criteria": [{"contains": f"[arg {digest('run-arg')}] [env {digest('run-env')}]"}],
        }
    )
    run = rook_cli(
        "run", "--json", env={"OPENAI_API_KEY": "run-env", "AGENT_API_KEY": "run-arg"}
    )
    assert run.statuses() == {"s": "passed"}, run.stdout + run.stderr

    # VAR=value before the program (as a shell reads it), --token=VALUE attached
    cmd = f"OPENAI_API_KEY={env_key} MODE=fast {sys.executable} {agent} --token={arg_key}"
    r = add(rook_cli, ws, "--command", cmd, env={"OPENAI_API_KEY": ""})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"[arg {digest(arg_key)}] [env {digest(env_key)}]" in r.stdout
    assert env_key not in r.stdout + r.stderr and arg_key not in r.stdout + r.stderr
    assert_nowhere(ws, env_key, arg_key)
    pid = agent.stem  # named after the script the program runs, not after the assignment
    script = (ws.agent_dir / "scripts" / f"{pid}-hook.py").read_text()
    assert "'env', 'MODE=fast'" in script and "'--token=' + os.environ['AGENT_API_TOKEN']" in script


def test_secrets_in_a_bash_c_script_move_to_env(rook_workspace, rook_cli):
    """``--command "bash -c 'agent --api-key KEY'"`` kept the key in the hook
    script and the note (the script after ``-c`` was one word, read for no
    secret), and ``--ruhroh`` so took it into the profile. The script's command
    lines are read as a command line is now: the key moves to env (the hook
    script puts it back from the environment), and ``--ruhroh`` is refused."""
    ws = rook_workspace
    env_key, arg_key = "sk-CMDSECRET999", "sk-ARGSECRET888"
    agent = AGENTS / "keyed_agent.py"
    script = f"cd . && OPENAI_API_KEY={env_key} {sys.executable} {agent} --api-key {arg_key} | cat"
    r = add(rook_cli, ws, "keyed", "--command", shlex.join(["bash", "-c", script]),
            env={"OPENAI_API_KEY": ""})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"[arg {digest(arg_key)}] [env {digest(env_key)}]" in r.stdout  # both reached it
    assert env_key not in r.stdout + r.stderr and arg_key not in r.stdout + r.stderr
    assert_nowhere(ws, env_key, arg_key)
    r = add(rook_cli, ws, "wrapped", "--ruhroh", shlex.join(["bash", "-c", script]))
    assert r.exit_code == 2 and "holds a secret" in r.stderr, r.stdout + r.stderr
    assert env_key not in r.stdout + r.stderr and arg_key not in r.stdout + r.stderr
    assert_nowhere(ws, env_key, arg_key)


@pytest.mark.parametrize("shape", ["words", "bash -c"])
def test_curl_s_user_and_password_in_a_command_moves_to_env(
    rook_workspace, rook_cli, authoring_server, shape
):
    """``--command 'curl -u user:PW URL'`` kept the password in the hook script
    and the note (``-u`` was read for no secret). It moves to env as a header's
    token does, the user staying; the test reaches the server with it."""
    ws = rook_workspace
    pw = authoring_server.basic_password
    cmd = f"curl -sSu user:{pw} {authoring_server.url}/basic --data-binary @-"
    if shape == "bash -c":
        cmd = shlex.join(["bash", "-c", cmd])
    r = add(rook_cli, ws, "basic", "--command", cmd)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: basic answer to:" in r.stdout
    (entry,) = profile(ws, "basic")["env"]
    assert entry["variable"] == "AGENT_PASSWORD"
    assert entry["purpose"] == "the password in -u/--user of curl", entry  # not of bash
    script = (ws.agent_dir / "scripts" / "basic-hook.py").read_text()
    if shape == "words":
        assert "'user:' + os.environ['AGENT_PASSWORD']" in script
    else:
        assert 'curl -sSu user:"${AGENT_PASSWORD}" ' in script
    assert pw not in r.stdout + r.stderr
    assert_nowhere(ws, pw)


@pytest.mark.parametrize(
    "written",
    [
        "--api-key 'sk-k\"e y$1-3141'",  # in '...': ", a space, $
        "--api-key \"sk-it's-2718\"",  # in "...": '
        "--api-key sk-plain-1618",
        "--token=sk-plain-1618",
        "-H 'Authorization: Bearer tok-1414' --api-key 'sk-two-1732'",
        'echo "$({cmd} --api-key sk-sub-2236)"',  # in "$(...)": unquoted, read afresh
        'x="$( ({cmd} --api-key "sk-in-2449") )"; echo "$x"',
        'echo "`{cmd} --api-key sk-tick-1259`"',
        'echo "$(case y in y) {cmd} --api-key sk-case-3571;; esac)"',  # a pattern's ) ends no $(
        'x=`echo "\\`{cmd} --api-key sk-nest-4813\\`"`; echo "$x"',  # `...` in "..." in `...`
        'echo "${{NOPE:-"$({cmd} --api-key sk-dflt-5923)"}}"',  # "..." nested in "${X:-...}"
        '{cmd} --api-key "${{NOPE:-"sk-dflt-6121"}}"',
    ],
)
def test_a_secret_in_a_bash_c_script_reaches_the_agent_whatever_it_holds(
    rook_workspace, rook_cli, written
):
    """A secret in a ``bash -c`` script moved to env was put back by writing its
    value into the script when the hook ran (``'... --api-key ' + os.environ[X]``):
    a value holding ``'`` (or ``"``, a space, ``$`` where the script quoted it
    otherwise) broke the shell's quoting, or ran as shell code. The script refers
    to the variable now (``"${X}"``), the shell reading it: any value reaches
    the agent exactly, at the test and in a run with another value."""
    ws = rook_workspace
    agent = AGENTS / "keyed_agent.py"
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    script = written.format(cmd=cmd) if "{cmd}" in written else f"{cmd} {written}"
    r = add(rook_cli, ws, "keyed", "--command", shlex.join(["bash", "-c", script]))
    assert r.exit_code == 0, r.stdout + r.stderr
    key = shlex.split(written)[-1].partition("--token=")[2] or shlex.split(written)[-1]
    if "{cmd}" in written:  # a secret in a command substitution, given to the agent
        key = re.search(r"sk-[a-z]+-\d+", written).group()
        (entry,) = profile(ws, "keyed")["env"]
        purpose = entry["purpose"]  # the program given it, not the shell
        assert purpose == f"the --api-key option of {Path(sys.executable).name} keyed_agent.py"
    assert f"[arg {digest(key)}]" in r.stdout  # the value reached it whole
    assert_nowhere(ws, key)
    env = profile(ws, "keyed")["env"]
    (var,) = [e["variable"] for e in env if e["purpose"].startswith(("the --api-key", "the --token"))]
    other = "it's a \"key\" $HOME `id` \\ x"  # another value: each of the shell's specials
    ws.scenario({"id": "k", "goal": "hi", "criteria": [{"contains": f"[arg {digest(other)}]"}]})
    env = {name: "tok-1414-other" for name in ("AGENT_API_TOKEN",)} | {var: other}
    r = rook_cli("run", "--profile", "keyed", env=env)
    assert r.exit_code == 0, r.stdout + r.stderr


def test_a_command_taking_its_prompt_as_an_argument_is_corrected_to_get_it_so(
    rook_workspace, rook_cli
):
    """The reference: profile add corrects the script when the target's response differs
    from its assumptions. A command that takes the prompt as an argument (it says its
    usage and exits 2 when given it on stdin) was written anyway, failing, with only
    `rook profile fix` (an author agent) to go on; the goal is now its last argument,
    byte for byte. One that fails both ways keeps the goal on stdin."""
    ws = rook_workspace
    cmd = f"{sys.executable} {AGENTS / 'cli_agent.py'} --prompt-arg"
    r = add(rook_cli, ws, "argv", "--command", cmd)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "the command refused the goal on its standard input (exited with code 2): it " \
        "gets the goal as its last argument now" in r.stdout, r.stdout
    assert "answer: cli answer: Say hello in one short sentence." in r.stdout
    assert "GOAL_AS_ARGUMENT = True" in (ws.agent_dir / "scripts" / "argv-hook.py").read_text()
    goal = 'line "1" $HOME `x` \\ \'q\'\nline 2: caf\u00e9 \u6f22'
    ws.scenario({"id": "s", "goal": goal, "criteria": [{"equals": f"cli answer: {goal}"}]})
    dash = "-v"  # a goal that starts with a dash is no option (argparse: no space in it)
    ws.scenario({"id": "d", "goal": dash, "criteria": [{"equals": f"cli answer: {dash}"}]})
    run = rook_cli("run", "--json", "--profile", "argv")
    assert run.statuses() == {"s": "passed", "d": "passed"}, run.stdout + run.stderr
    # a NUL byte ends an argument: the scenario fails saying so, never with a traceback
    ws.scenario({"id": "z", "goal": "a\u0000b", "criteria": [{"contains": "a"}]})
    run = rook_cli("run", "--json", "--profile", "argv", "--only", "z")
    assert run.statuses() == {"z": "error"}, run.stdout + run.stderr
    reason = run.report["scenarios"][0]["reason"]
    assert "the goal holds a NUL byte (\\0), which no command-line argument can carry: take " \
        "it out of the scenario's goal, or give the command the goal on its standard input " \
        "(GOAL_AS_ARGUMENT = False)" in reason, reason
    assert "Traceback" not in run.stdout + run.stderr
    # a goal longer than one argument may be (Linux: 128 KiB) failed with a traceback
    ws.scenario({"id": "long", "goal": "x" * 200_000, "criteria": [{"contains": "x"}]})
    run = rook_cli("run", "--json", "--profile", "argv", "--only", "long")
    [long] = run.report["scenarios"]
    assert "cannot run " in long["reason"] and "Argument list too long (the goal is its last " \
        "argument: GOAL_AS_ARGUMENT)" in long["reason"], long["reason"]
    assert "Traceback" not in json.dumps(long), long

    cmd = f"{sys.executable} {AGENTS / 'cli_agent.py'} --usage-error"
    r = add(rook_cli, ws, "neither", "--command", cmd)
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "it failed with the goal as its last argument too: the goal goes on its " \
        "standard input again" in r.stdout, r.stdout
    assert "GOAL_AS_ARGUMENT = False" in (ws.agent_dir / "scripts" / "neither-hook.py").read_text()


def test_command_that_fails_is_written_and_reported(rook_workspace, rook_cli):
    ws = rook_workspace
    r = add(rook_cli, ws, "bad", "--command", f"{sys.executable} {AGENTS / 'cli_agent.py'} --fail")
    assert r.exit_code == 1
    assert "failing on purpose" in r.stdout and "rook profile fix bad" in r.stdout
    assert "the last test failed: the profile is written anyway (exit 1)" in r.stdout
    r = add(rook_cli, ws, "nope", "--command", "no-such-program-xyz -p")
    assert r.exit_code == 2 and "not installed" in r.stderr


def test_a_command_path_from_a_folder_below_the_workspace_is_told_its_path_from_there(
    rook_workspace, rook_cli, monkeypatch
):
    """The command runs in the workspace: ./tool.sh typed in a folder below it is not
    found there, and the message says where it is and what to write instead."""
    ws = rook_workspace
    below = ws.root / "tools"
    below.mkdir()
    tool = below / "tool.sh"
    tool.write_text("#!/bin/sh\nread line\necho \"tool: $line\"\n")
    tool.chmod(0o755)
    monkeypatch.chdir(below)
    r = add(rook_cli, ws, "t", "--command", "./tool.sh --fast")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"--command: ./tool.sh not found in the workspace {ws.root}" in r.stderr
    assert "the command runs there" in r.stderr
    assert "write its path from the workspace, tools/tool.sh" in r.stderr
    assert not (ws.agent_dir / "profiles" / "t.yaml").exists()
    r = add(rook_cli, ws, "t", "--command", "tools/tool.sh --fast")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: tool: Say hello in one short sentence." in r.stdout


def test_an_interpreters_script_from_a_folder_below_the_workspace_is_told_its_path(
    rook_workspace, rook_cli, monkeypatch
):
    """`python3 ../agent.py` typed in a folder below the workspace names a file that is
    there from the current directory, not from the workspace the command runs in: the
    profile was written and its test failed (python3 cannot open the file), exit 1;
    it is refused like a program path, nothing written, with the path to write."""
    ws = rook_workspace
    (ws.root / "agent.py").write_text("import sys\nprint('desk: ' + sys.stdin.read())\n")
    below = ws.root / "tools"
    below.mkdir()
    monkeypatch.chdir(below)
    python = Path(sys.executable).name
    r = add(rook_cli, ws, "t", "--command", f"{python} ../agent.py --fast")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"--command: ../agent.py not found in the workspace {ws.root}" in r.stderr
    assert "write its path from the workspace, agent.py" in r.stderr
    assert not (ws.agent_dir / "profiles" / "t.yaml").exists()
    assert not (ws.agent_dir / "scripts" / "t-hook.py").exists()
    r = add(rook_cli, ws, "t", "--command", f"{python} agent.py")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: desk: Say hello in one short sentence." in r.stdout


def test_command_without_the_run_bit_is_refused_with_the_fix(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    agent = tmp_path / "agent.py"
    agent.write_text("import sys\nprint('hi ' + sys.stdin.read())\n")
    agent.chmod(0o644)
    r = add(rook_cli, ws, "plain", "--command", str(agent))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"--command: {agent} is not executable" in r.stderr
    assert f"chmod +x {agent}" in r.stderr and "Traceback" not in r.stdout + r.stderr
    assert f"--command 'python3 {agent}'" in r.stderr
    assert not (ws.agent_dir / "profiles" / "plain.yaml").exists()
    # the interpreter to name is the script's own: python3 would fail on a bash script
    tool = tmp_path / "tool.sh"
    tool.write_text("#!/bin/bash\necho hi\n")
    r = add(rook_cli, ws, "plain", "--command", str(tool))
    assert r.exit_code == 2 and f"--command 'bash {tool}'" in r.stderr, r.stderr
    r = add(rook_cli, ws, "folder", "--command", str(tmp_path))
    assert r.exit_code == 2 and "is a directory, not a program" in r.stderr


@pytest.mark.timeout(60)
def test_command_naming_a_pipe_or_device_is_refused_not_read(rook_workspace, rook_cli, tmp_path):
    # `--command ./fifo` hung for good: the advice for a program without the run
    # bit read its first line to name the interpreter, and a FIFO has no writer
    os.mkfifo(tmp_path / "fifo")
    for program in (tmp_path / "fifo", Path("/dev/null")):
        r = add(rook_cli, rook_workspace, "p", "--command", str(program), "--no-test")
        assert r.exit_code == 2, r.stdout + r.stderr
        assert f"--command: {program} is not a regular file (a pipe, a socket or a device)" in (
            r.stderr
        )
    assert not list((rook_workspace.agent_dir / "profiles").glob("*.yaml"))


def test_scripts_used_as_hooks_or_wrapped(rook_workspace, rook_cli):
    ws = rook_workspace
    r = add(rook_cli, ws, "--from", str(AGENTS / "hook_agent.py"))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "hook_agent")["hooks"]["execute"] == {
        "script": str(AGENTS / "hook_agent.py")
    }
    assert profile(ws, "hook_agent")["capabilities"]["calls"] is True

    r = add(rook_cli, ws, "plain", "--from", str(AGENTS / "plain_agent.py"))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert (
        "does not speak the hook contract (not_json): wrapped by scripts/plain-hook.py" in r.stdout
    )
    assert profile(ws, "plain")["hooks"]["execute"] == "scripts/plain-hook.py"
    assert "answer: plain agent says hello to: Say hello" in r.stdout


def test_hook_script_with_the_answer_under_another_field_is_mapped(rook_workspace, rook_cli):
    ws = rook_workspace
    hook = ws.root / "hook.mjs"
    hook.write_text((AGENTS / "reply_hook.mjs").read_text())
    r = add(rook_cli, ws, "hook-mjs", "--from", str(hook))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "test 1 (script): FAILED (no_answer)" in r.stdout
    assert (
        "changed: hook.mjs puts its answer under reply, not output: scripts/hook-mjs-hook.py "
        "runs it as the hook and hands on reply as output (and its token usage as usage)"
    ) in r.stdout
    assert "test 2 (script): ok" in r.stdout
    assert "answer: mjs reply to: Say hello in one short sentence." in r.stdout
    data = profile(ws, "hook-mjs")
    assert data["hooks"] == {"execute": "scripts/hook-mjs-hook.py"}
    assert data["capabilities"]["usage"] is True
    script = (ws.agent_dir / "scripts" / "hook-mjs-hook.py").read_text()
    assert "ANSWER = ['reply']" in script and "'node', 'hook.mjs'" in script
    ws.scenario({"id": "s", "goal": "hi there", "criteria": [{"contains": "mjs reply to: hi"}]})
    run = rook_cli("run", "--json")
    assert run.statuses() == {"s": "passed"}, run.stdout + run.stderr


PHASED = {
    # one script that switches on its phase, as the hook contract allows: prepare
    # mints a token, open starts a conversation, close and collect have their own jobs
    "desk.mjs": """import fs from "node:fs";
const phase = process.argv[2];
const runState = process.env.ROOK_RUN_STATE_DIR;
if (phase === "prepare") fs.writeFileSync(runState + "/token", "t0k");
else if (phase === "open") console.log(JSON.stringify({ conversation: "c-" + process.env.ROOK_SESSION }));
else if (phase === "execute") {
  const goal = fs.readFileSync(0, "utf8");
  const token = fs.readFileSync(runState + "/token", "utf8");
  console.log(JSON.stringify({ output: `answer(${token}) to ${goal}`, conversation: process.env.ROOK_CONVERSATION, calls: [] }));
} else if (phase === "close") fs.writeFileSync(process.env.ROOK_STATE_DIR + "/closed", "yes");
else if (phase === "collect") console.log(JSON.stringify({ usage: { input: 1, output: 2 } }));
""",
    "desk.sh": """#!/bin/bash
case "$1" in
  prepare) echo t0k > "$ROOK_RUN_STATE_DIR/token" ;;
  open) echo "{\\"conversation\\": \\"c-$ROOK_SESSION\\"}" ;;
  execute)
    goal=$(cat)
    echo "{\\"output\\": \\"answer($(cat "$ROOK_RUN_STATE_DIR/token")) to $goal\\", \\"conversation\\": \\"$ROOK_CONVERSATION\\", \\"calls\\": []}" ;;
  close) echo yes > "$ROOK_STATE_DIR/closed" ;;
  collect) echo '{"usage": {"input": 1, "output": 2}}' ;;
esac
""",
}


@pytest.mark.parametrize("name", list(PHASED))
def test_a_script_that_switches_on_its_phase_gets_every_phase_it_handles(
    rook_workspace, rook_cli, name
):
    """`profile add --from` a hook script that handles prepare, open, close and collect
    as well gave it execute alone: probed without its prepare it failed, was wrapped
    as a program that does not speak the contract, and the profile written (exit 0)
    answered nothing and dropped its session and its evidence."""
    ws = rook_workspace
    hook = ws.root / name
    hook.write_text(PHASED[name])
    if name.endswith(".sh"):
        hook.chmod(0o755)  # started directly; desk.mjs by its extension
    r = add(rook_cli, ws, "desk", "--from", str(hook))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "test 1 (script): ok" in r.stdout and "wrapped" not in r.stdout, r.stdout
    assert "answer: answer(t0k) to Say hello in one short sentence." in r.stdout, r.stdout
    data = profile(ws, "desk")
    phases = ["prepare", "open", "execute", "close", "collect"]
    assert list(data["hooks"]) == phases, data["hooks"]
    assert all(data["hooks"][p] in (name, {"script": name}) for p in phases), data["hooks"]
    assert data["capabilities"] == {"multi_turn": True, "calls": True, "usage": True}, data
    ws.scenario({"id": "s", "turns": ["one", "two"], "criteria": [{"contains": "answer(t0k) to two"}]})
    run = rook_cli("run", "--json")
    assert run.statuses() == {"s": "passed"}, run.stdout + run.stderr
    turns = run.report["scenarios"][0]["turns"]
    assert turns[1]["conversation"].startswith("c-"), turns
    assert any((d / "closed").exists() for d in (ws.agent_dir / "runs").glob("*/state/s.1"))


def test_a_hook_script_that_fails_is_reported_not_wrapped_into_silence(rook_workspace, rook_cli):
    """A script that reads its phase and fails its test (a variable not set) was taken
    for a program that does not speak the contract: wrapped, run without its phase,
    it answered nothing, and profile add exited 0 with that profile. Its failure is
    the diagnosis: the profile is written as it is, exit 1, for the user to fix."""
    ws = rook_workspace
    hook = ws.root / "desk.sh"
    hook.write_text(
        "#!/bin/bash\n"
        '[ "$1" = execute ] || exit 0\n'
        "goal=$(cat)\n"
        '[ -n "$DESK_TOKEN" ] || { echo "DESK_TOKEN is not set" >&2; exit 1; }\n'
        'echo "{\\"output\\": \\"hi: $goal\\"}"\n'
    )
    hook.chmod(0o755)
    r = add(rook_cli, ws, "desk", "--from", str(hook), env={"DESK_TOKEN": ""})
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "wrapped" not in r.stdout and "test 2" not in r.stdout, r.stdout
    assert "exited with code 1: DESK_TOKEN is not set" in r.stdout, r.stdout
    assert "rook profile fix desk" in r.stdout, r.stdout
    assert profile(ws, "desk")["hooks"] == {"execute": {"script": "desk.sh"}}
    t = rook_cli("profile", "test", "desk", env={"DESK_TOKEN": "t"})
    assert t.exit_code == 0 and "answer: hi: Say hello" in t.stdout, t.stdout + t.stderr


def test_ruhroh_wrapper_is_tested_too(rook_workspace, rook_cli):
    ws = rook_workspace
    wrapper = AGENTS / "ruhroh" / "wrapper.sh"
    r = add(rook_cli, ws, "wrapped", "--ruhroh", f"bash {wrapper}")
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(ws, "wrapped")
    assert data["hooks"]["execute"]["ruhroh"]["command"] == f"bash {wrapper}"
    # no sessionHandle reported: the handle Rook made up for the wrapper shows nothing
    assert data["capabilities"]["multi_turn"] is False
    assert "answer: reply 1 to Say hello" in r.stdout
    # a ruhroh: entry keeps its command line in the profile: a secret in it is refused
    r = add(rook_cli, ws, "leaky", "--ruhroh", f"bash {wrapper} --api-key sk-RUHROHSECRET77")
    assert r.exit_code == 2 and "holds a secret (api-key)" in r.stderr
    assert "sk-RUHROHSECRET77" not in r.stdout + r.stderr
    assert not (ws.agent_dir / "profiles" / "leaky.yaml").exists()


@pytest.mark.parametrize("typed, write", [("./wrapper.sh", "wrappers/wrapper.sh"),
                                          ("bash wrapper.sh", "wrappers/wrapper.sh")])
def test_a_ruhroh_wrapper_from_a_folder_below_the_workspace_is_told_its_path(
    rook_workspace, rook_cli, monkeypatch, typed, write
):
    """--ruhroh ./wrapper.sh typed in wrappers/ was refused naming only the paths tried
    (from the workspace and the agent's folder); it now also says where the file is
    from the current directory and the path to write, as --command does."""
    ws = rook_workspace
    below = ws.root / "wrappers"
    below.mkdir()
    wrapper = below / "wrapper.sh"
    wrapper.write_text((AGENTS / "ruhroh" / "wrapper.sh").read_text())
    wrapper.chmod(0o755)
    monkeypatch.chdir(below)
    r = add(rook_cli, ws, "w", "--ruhroh", typed)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"write its path from the workspace, {write}" in r.stderr, r.stderr
    assert not (ws.agent_dir / "profiles" / "w.yaml").exists()
    r = add(rook_cli, ws, "w", "--ruhroh", typed.replace("wrapper.sh", write).replace("./", ""))
    assert r.exit_code == 0, r.stdout + r.stderr


def test_notes_go_to_the_author_agent(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    log = tmp_path / "log"
    log.mkdir()
    notes = "The desk answers on stdin; use the DESK_TOKEN variable."
    r = add(
        rook_cli,
        ws,
        "desk",
        "--notes",
        notes,
        "--author",
        AUTHOR,
        env={"AUTHOR_LOG": str(log), "AUTHOR_MODE": "broken"},
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "test 1 (agent): FAILED (not_json)" in r.stdout and "test 2 (agent): ok" in r.stdout
    assert "answer: scripted answer to: Say hello" in r.stdout
    first, second = sorted(log.glob("request-*.md"))
    assert notes in first.read_text() and "## The hook contract" in first.read_text()
    assert "not_json" in second.read_text() and "just text" in second.read_text()
    assert profile(ws, "desk")["hooks"] == {"execute": "scripts/desk-hook.py"}
    assert "scripted answer" in (ws.agent_dir / "scripts" / "desk-hook.py").read_text()


def test_author_agent_from_config_answers_json(rook_workspace, rook_cli):
    ws = rook_workspace
    (ws.root / ".testmuai" / "rook" / "config.yaml").write_text(f"author: {AUTHOR}\n")
    r = add(
        rook_cli,
        ws,
        "desk",
        "--notes",
        "anything",
        env={"AUTHOR_MODE": "json", "DESK_TOKEN": "tok-1234567"},
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "desk")["env"] == [
        {"variable": "DESK_TOKEN", "purpose": "token of the desk"}
    ]
    assert "tok-1234567" not in r.stdout
    r = add(rook_cli, ws, "other", "--notes", "anything", env={"AUTHOR_MODE": "none"})
    assert r.exit_code == 1 and "answered no script" in r.stderr


def test_an_author_agents_node_script_using_require_runs_as_commonjs(rook_workspace, rook_cli, tmp_path):
    """A ```javascript block using require() (CommonJS, as coding agents often write
    Node) was written as .mjs, an ES module, where require is not defined: every test
    failed the same way (ReferenceError) and the author agent's rewrites with it. Such
    a script is written .cjs; one with import statements stays .mjs."""
    ws = rook_workspace
    common = "const fs = require('fs');\n"
    esm = "import fs from 'fs';\n"
    body = (
        "if (process.argv[2] === 'execute') {\n"
        "  console.log(JSON.stringify({output: 'js author: ' + fs.readFileSync(0, 'utf8')}));\n"
        "}\n"
    )
    for pid, head, suffix in (("common", common, ".cjs"), ("esm", esm, ".mjs")):
        author = tmp_path / f"{pid}_author.py"
        block = "```javascript\n" + head + body + "```"
        author.write_text(f"import sys\nsys.stdin.read()\nprint('Here it is:\\n\\n' + {block!r})\n")
        r = add(rook_cli, ws, pid, "--notes", "a node agent", "--author", f"{sys.executable} {author}")
        assert r.exit_code == 0, r.stdout + r.stderr
        assert "answer: js author: Say hello in one short sentence." in r.stdout, r.stdout
        assert profile(ws, pid)["hooks"]["execute"] == f"scripts/{pid}-hook{suffix}"


def test_the_fix_a_failed_add_points_to_asks_the_same_author_agent(rook_workspace, rook_cli, tmp_path):
    """A profile add whose last test failed ended 'next: rook profile fix NAME --what ...'
    without the --author it was given, so the command as printed had no author agent
    to read --what ('--what needs an author agent'); it names that author agent now,
    and without one says what fix does alone."""
    ws = rook_workspace
    author = tmp_path / "author.py"
    author.write_text(
        "import sys\nsys.stdin.read()\n"
        "print('```python\\nimport sys\\nsys.exit(3)\\n```')\n"
    )
    cmd = f"{sys.executable} {author}"
    r = add(rook_cli, ws, "broken", "--notes", "anything", "--author", cmd, "--attempts", "1")
    assert r.exit_code == 1, r.stdout + r.stderr
    step = r.stdout.splitlines()[-1]
    assert step.startswith("the profile does not work yet; next: rook profile fix broken"), step
    assert f"--author '{cmd}' --what '...'" in step, step
    r = add(rook_cli, ws, "plain", "--command", "false")
    assert r.exit_code == 1, r.stdout + r.stderr
    step = r.stdout.splitlines()[-1]
    assert "(it repairs what it can itself; --author CMD --what '...' asks an author agent" in step, step


@pytest.mark.timeout(60)
def test_notes_holding_a_long_word_are_read_not_stuck(rook_workspace, rook_cli):
    # looking for URLs in the notes tried every letter of a long word (a pasted
    # hex dump) as the start of a scheme: 100,000 letters took minutes
    word = "f" * 200_000
    r = add(rook_cli, rook_workspace, "n", "--command", "cat", "--no-test", "--notes", word)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert (rook_workspace.agent_dir / "profiles" / "n.yaml").is_file()


def test_an_author_agent_answering_no_valid_profile_is_its_failure_not_the_users(
    rook_workspace, rook_cli
):
    """An author agent whose JSON answer lists an env entry that is no variable name
    ('desk token') was the user's mistake: '--notes: Rook cannot make a valid profile
    of it' (exit 2); as a correction, '.../profiles/desk.yaml: invalid profile' (exit 2)
    for a file never written. It is the author agent's failure: exit 1, and a correction
    that makes no valid profile is no correction, the tested profile written for fix."""
    ws = rook_workspace
    r = add(rook_cli, ws, "desk", "--notes", "x", "--author", AUTHOR, env={"AUTHOR_MODE": "bad_env"})
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "the author agent's answer makes no valid profile" in r.stderr, r.stderr
    assert "env.0.variable" in r.stderr and "--notes: Rook cannot" not in r.stderr
    assert not (ws.agent_dir / "profiles" / "desk.yaml").exists()

    mode = {"AUTHOR_MODE": "broken bad_env"}
    r = add(rook_cli, ws, "desk", "--notes", "x", "--author", AUTHOR, env=mode)
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "no correction: the correction makes no valid profile" in r.stdout, r.stdout
    assert "env.0.variable" in r.stdout and "invalid profile" not in r.stderr, r.stderr
    assert profile(ws, "desk")["hooks"] == {"execute": "scripts/desk-hook.py"}


@pytest.mark.parametrize(
    "command, said",
    [
        ("nosuchprogram-xyz --flag", "'nosuchprogram-xyz' is not installed (not on PATH)"),
        ("'  '", "must be a command line (not empty)"),
        ("'python3 -c \"'", "cannot split the command line: No closing quotation"),
    ],
)
def test_an_author_agent_from_config_that_cannot_run_names_config_not_a_flag(
    rook_workspace, rook_cli, command, said
):
    """An author: of config.yaml that cannot run was reported as '--author: ...', a
    flag the user never gave (and a blank one passed the config check): the message
    names config.yaml's author field."""
    ws = rook_workspace
    config = ws.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text(f"author: {command}\n")
    r = add(rook_cli, ws, "desk", "--notes", "anything")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{config}" in r.stderr and "author" in r.stderr and said in r.stderr, r.stderr
    assert "--author" not in r.stderr.replace("--author CMD", ""), r.stderr
    assert not (ws.agent_dir / "profiles" / "desk.yaml").exists()


@pytest.mark.timeout(60)
def test_an_author_that_is_a_folder_or_a_pipe_is_said_to_be_one(rook_workspace, rook_cli, tmp_path):
    # --author DIR (or a FIFO) said "'DIR' not found (no DIR)": it is there
    os.mkfifo(tmp_path / "fifo")
    for author, said in ((tmp_path, "is a directory, not a program"),
                         (tmp_path / "fifo", "is not a regular file (a pipe, a socket or a device)")):  # fmt: skip
        r = add(rook_cli, rook_workspace, "desk", "--notes", "anything", "--author", str(author))
        assert r.exit_code == 2, r.stdout + r.stderr
        assert f"--author: {str(author)!r} {said}" in r.stderr, r.stderr
        assert "not found" not in r.stderr, r.stderr
    assert not list((rook_workspace.agent_dir / "profiles").glob("*.yaml"))


def test_sources_that_cannot_be_written(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    odd = tmp_path / "odd.txt"
    odd.write_text("hello, this is not a request")
    r = add(rook_cli, ws, "--from", str(odd))
    assert r.exit_code == 2 and "--notes" in r.stderr
    r = add(rook_cli, ws, "--notes", "an agent")
    assert r.exit_code == 2 and "--author CMD" in r.stderr
    r = add(rook_cli, ws, "x", "--from", str(odd), "--command", "ls")
    assert r.exit_code == 2 and "one source" in r.stderr
    r = add(rook_cli, ws, "x", input="curl https://example.invalid/health")
    assert r.exit_code == 2 and "no message" in r.stderr


def test_openapi_choice_is_asked_on_a_terminal(rook_workspace, authoring_server, tmp_path):
    """With a terminal on standard input, Rook offers the candidates and reads the pick."""
    import json
    import os
    import subprocess

    from servers.authoring_server import MANY

    ws = rook_workspace
    doc = tmp_path / "api.json"
    doc.write_text(json.dumps(MANY))
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rook_core",
            "profile",
            "add",
            "two",
            "--from",
            str(doc),
            "--base-url",
            authoring_server.url,
            "--no-test",
            "-w",
            str(ws.root),
        ],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    os.close(slave)
    try:
        os.write(master, b"askV2\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
    assert proc.returncode == 0, out + err
    assert "several operations of the OpenAPI document take a message:" in out
    assert profile(ws, "two")["hooks"]["execute"]["http"]["url"] == f"{authoring_server.url}/v2/ask"


def _at_a_terminal(ws, answers, *args):
    """rook profile add ARGS with a terminal on standard input, typing ``answers``."""
    import os
    import subprocess

    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "profile", "add", *args, "-w", str(ws.root)],
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    os.close(slave)
    try:
        os.write(master, answers.encode())
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
    assert "Traceback" not in out + err, out + err
    return proc.returncode, out, err


def test_a_bare_profile_add_at_a_terminal_asks_for_the_source(rook_workspace, authoring_server):
    """The reference's first example is a bare `rook profile add`: at a terminal it
    said only 'give a source' (exit 2). It asks what reaches the agent, and reads it;
    a cURL command pasted over several lines (ending in a backslash) is read whole."""
    ws = rook_workspace
    curl = f"curl {authoring_server.url}/form \\\n  --data-urlencode 'message=hello desk'\n"
    code, out, err = _at_a_terminal(ws, "1\n" + curl)
    assert code == 0, out + err
    assert "What reaches the agent?" in out + err
    (written,) = (ws.agent_dir / "profiles").glob("*.yaml")
    http = profile(ws, written.stem)["hooks"]["execute"]["http"]
    assert http["form"] == {"message": "{{goal}}"} and http["url"] == f"{authoring_server.url}/form"

    code, out, err = _at_a_terminal(ws, "4\nprintf x\n", "by-command", "--no-test")
    assert code == 0, out + err
    assert (ws.agent_dir / "profiles" / "by-command.yaml").is_file()

    code, out, err = _at_a_terminal(ws, "\x04")  # Ctrl-D, nothing typed: nothing written
    assert code == 2 and "give a source" in err, out + err


def test_a_curl_command_pasted_at_the_terminal_with_carets_is_read_whole(
    rook_workspace, authoring_server
):
    """A command copied from Windows docs ends its lines in ^: the question took the
    first line alone ('curl ^'), and no URL."""
    ws = rook_workspace
    curl = f"curl ^\n  {authoring_server.url}/form ^\n  --data-urlencode \"message=hello desk\"\n"
    code, out, err = _at_a_terminal(ws, "1\n" + curl, "win", "--no-test")
    assert code == 0, out + err
    http = profile(ws, "win")["hooks"]["execute"]["http"]
    assert http["form"] == {"message": "{{goal}}"} and http["url"] == f"{authoring_server.url}/form"


def test_a_cmd_curl_command_with_a_line_end_in_a_value_is_read_whole_at_the_terminal(
    rook_workspace, authoring_server
):
    """A browser's "Copy as cURL (cmd)" writes a line end inside a value as ^ and two
    line ends: the question stopped at the ^ with no space before it ('hello^'), and
    the command was refused: 'No closing quotation'. Read from a file, it worked."""
    ws = rook_workspace
    curl = (
        f'curl ^"{authoring_server.url}/form^" ^\n'
        '  --data-urlencode ^"message=hello^\n\ndesk^"\n'
    )
    code, out, err = _at_a_terminal(ws, "1\n" + curl, "win", "--no-test")
    assert code == 0, out + err
    http = profile(ws, "win")["hooks"]["execute"]["http"]
    assert http["form"] == {"message": "{{goal}}"} and http["url"] == f"{authoring_server.url}/form"


EXECUTABLES = {
    # a hook script that puts its answer under reply: mapped
    "desk.sh": (
        '#!/bin/bash\n[ "$1" = execute ] || exit 0\n'
        'printf \'{"reply": "bash desk: %s"}\\n\' "$(cat)"\n'
    ),
    "desk": (
        "#!/usr/bin/env python3\nimport json, sys\nif sys.argv[1] == 'execute':\n"
        "    print(json.dumps({'reply': 'python desk: ' + sys.stdin.read()}))\n"
    ),
    # a program that does not speak the contract: wrapped
    "plain": "#!/usr/bin/env python3\nimport sys\nprint('plain desk: ' + sys.stdin.read())\n",
}


@pytest.mark.parametrize("name", sorted(EXECUTABLES))
def test_executable_script_at_the_workspace_root(rook_workspace, rook_cli, monkeypatch, name):
    ws = rook_workspace
    script = ws.root / name
    script.write_text(EXECUTABLES[name])
    script.chmod(0o755)
    monkeypatch.chdir(ws.root)
    r = add(rook_cli, ws, "d5", "--from", f"./{name}")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "test 2 (script): ok" in r.stdout and "desk: Say hello" in r.stdout
    hook = (ws.agent_dir / "scripts" / "d5-hook.py").read_text()
    # run as ./NAME: a bare NAME would be looked up on PATH
    assert f'COMMAND = ["./{name}"]' in hook
    assert profile(ws, "d5")["hooks"]["execute"] == "scripts/d5-hook.py"
    assert script.stat().st_mode & 0o777 == 0o755 and script.read_text() == EXECUTABLES[name]
    ws.scenario({"id": "s", "goal": "hi there", "criteria": [{"contains": "desk: hi there"}]})
    run = rook_cli("run", "--json")
    assert run.statuses() == {"s": "passed"}, run.stdout + run.stderr


def test_an_id_another_profile_file_holds_is_not_added_twice(rook_workspace, rook_cli):
    """Ids are unique (runs pin them): a profile whose file has another name but the
    same id is that profile; add refuses it without --force, and overwrites it with."""
    ws = rook_workspace
    other = ws.profile({"id": "desk", "hooks": {"execute": "scripts/old.py"}}, name="other")
    before = other.read_text()
    cmd = f"{sys.executable} {AGENTS / 'plain_agent.py'}"
    r = add(rook_cli, ws, "desk", "--command", cmd, "--no-test")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{other}: a profile with id 'desk' exists; use --force" in r.stderr
    assert sorted(p.name for p in (ws.agent_dir / "profiles").glob("*.yaml")) == ["other.yaml"]
    assert other.read_text() == before
    r = add(rook_cli, ws, "desk", "--command", cmd, "--no-test", "--force")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert sorted(p.name for p in (ws.agent_dir / "profiles").glob("*.yaml")) == ["other.yaml"]
    assert yaml.safe_load(other.read_text())["hooks"] == {"execute": "scripts/desk-hook.py"}


def test_a_name_rook_chose_that_an_existing_profile_holds_is_refused_asking_for_a_name(
    rook_workspace, rook_cli
):
    """Without NAME the profile is named after its source (`python3 a.py` -> python3): a
    second command run by the same interpreter gets the first one's id. The refusal asks
    for a NAME, never suggests --force alone, which would replace the first profile."""
    ws = rook_workspace
    cmd = f"{sys.executable} {AGENTS / 'plain_agent.py'}"
    r = add(rook_cli, ws, "--command", cmd, "--no-test")
    assert r.exit_code == 0, r.stdout + r.stderr
    (first,) = (ws.agent_dir / "profiles").glob("*.yaml")
    before = first.read_text()
    r = add(rook_cli, ws, "--command", f"{cmd} --verbose", "--no-test")
    assert r.exit_code == 2, r.stdout + r.stderr
    pid = first.stem
    assert f"no NAME was given, so the profile was named {pid!r} after its source" in r.stderr
    assert "give it a name of its own: rook profile add NAME" in r.stderr
    assert first.read_text() == before
    assert [p.name for p in (ws.agent_dir / "profiles").glob("*.yaml")] == [first.name]


def test_a_url_names_the_profile_after_its_host_but_localhost_or_an_ip_after_the_agent(
    rook_workspace, rook_cli
):
    ws = rook_workspace
    for curl, pid in (
        ("curl https://api.acme.example/v1/ask -d message=hi", "acme"),
        ("curl http://127.0.0.1:9/ask -d message=hi", ws.agent_dir.name),
    ):
        r = add(rook_cli, ws, "--no-test", input=curl)
        assert r.exit_code == 0 and (ws.agent_dir / "profiles" / f"{pid}.yaml").is_file(), r.stderr


def test_an_author_agent_that_fails_a_correction_leaves_the_profile_written(
    rook_workspace, rook_cli, tmp_path
):
    """The draft was tested and its script written: when the author agent then fails
    to correct it, the profile is written anyway (exit 1) for rook profile fix, never
    left as a hook script no profile names."""
    ws = rook_workspace
    author = tmp_path / "crashing_author.py"
    author.write_text(
        "import json, re, sys\n"
        "request = sys.stdin.read()\n"
        "facts = json.loads(re.findall(r'```json\\n(.*?)\\n```', request, re.S)[-1])\n"
        "if facts['problem']:\n"
        "    sys.exit('the author agent crashed')\n"
        "print('```python\\nprint(\"not the hook contract\")\\n```')\n"
    )
    r = add(rook_cli, ws, "helper", "--notes", "echo it", "--author", f"{sys.executable} {author}")
    assert "test 1 (agent): FAILED (not_json)" in r.stdout, r.stdout + r.stderr
    assert f"asking the author agent ({sys.executable}, up to 900 s)..." in r.stdout + r.stderr
    assert "the author agent exited with code 1: the author agent crashed" in r.stdout
    assert r.exit_code == 1 and "rook profile fix helper" in r.stdout
    assert profile(ws, "helper")["hooks"] == {"execute": "scripts/helper-hook.py"}
    assert (ws.agent_dir / "scripts" / "helper-hook.py").is_file()


@pytest.mark.parametrize("form", ["text", "json"])
def test_an_author_agent_answering_after_a_byte_order_mark_is_read(
    rook_workspace, rook_cli, tmp_path, form
):
    """A .NET or PowerShell author agent may write a BOM first: it was 'answered no
    script', in either form of answer."""
    ws = rook_workspace
    script = '#!/usr/bin/env python3\nimport sys\nsys.stdin.read()\nprint(\'{"output": "hi"}\')\n'
    answer = script if form == "text" else json.dumps({"output": script})
    author = tmp_path / "bom_author.py"
    author.write_text(
        "import sys\nsys.stdin.read()\n"
        f"sys.stdout.buffer.write('\\ufeff'.encode() + {answer!r}.encode())\n"
    )
    r = add(rook_cli, ws, "helper", "--notes", "say hi", "--author", f"{sys.executable} {author}")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: hi" in r.stdout
    written = (ws.agent_dir / "scripts" / "helper-hook.py").read_text()
    assert written.startswith("#!/usr/bin/env python3\n")


def test_the_phases_of_a_bash_script_are_its_case_labels(rook_workspace, rook_cli, tmp_path):
    """A bash hook script names its phases as case labels, unquoted (open) ... ;;): only
    quoted names were looked for, so the author agent's open hook was never run, and
    the session it creates never made (no conversation handle, no second turn)."""
    ws = rook_workspace
    script = (
        'case "$1" in\n'
        "  open) echo '{\"conversation\": \"c-1\"}' ;;\n"
        "  execute) g=$(cat); printf '{\"output\": \"in %s: %s\", \"conversation\": \"%s\"}\\n'"
        ' "$ROOK_CONVERSATION" "$g" "$ROOK_CONVERSATION" ;;\n'
        "  prepare|close) : ;;\n"
        "esac\n"
    )
    author = tmp_path / "bash_author.py"
    answer = f"```bash\n{script}```"
    author.write_text(f"import sys\nsys.stdin.read()\nprint({answer!r})\n")
    r = add(rook_cli, ws, "helper", "--notes", "x", "--author", f"{sys.executable} {author}")
    assert r.exit_code == 0, r.stdout + r.stderr
    hooks = profile(ws, "helper")["hooks"]
    assert set(hooks) == {"prepare", "open", "execute", "close"}, hooks
    assert "answer: in c-1: Say hello" in r.stdout, r.stdout


@pytest.mark.parametrize(
    ("ends", "said"),
    [
        ("exit 3", "the author agent exited with code 3 (it wrote nothing on standard error)"),
        ("kill -9 $$", "the author agent was killed by signal 9 (it wrote nothing on standard"),
    ],
)
def test_an_author_agent_failing_silently_is_told_how_it_ended(
    rook_workspace, rook_cli, tmp_path, ends, said
):
    # it was "exited with code -9: " (a negative code, and nothing after the colon)
    ws = rook_workspace
    author = tmp_path / "silent_author.sh"
    author.write_text(f"cat > /dev/null\n{ends}\n")
    r = add(rook_cli, ws, "helper", "--notes", "say hi", "--author", f"bash {author}")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert said in r.stderr
    assert not (ws.agent_dir / "profiles" / "helper.yaml").exists()


@pytest.mark.parametrize("answer", ["[1, 2, 3]", "42", '"done"', "null"])
def test_an_author_agent_answering_json_that_is_no_object_answered_no_script(
    rook_workspace, rook_cli, tmp_path, answer
):
    """A JSON answer that is no object (a list, a number, a string) holds no script:
    it was written as the hook script and tested (and the author agent asked again,
    every attempt); it is refused like any answer with no script, nothing written."""
    ws = rook_workspace
    author = tmp_path / "json_author.py"
    author.write_text(f"import sys\nsys.stdin.read()\nprint({answer!r})\n")
    r = add(rook_cli, ws, "helper", "--notes", "echo it", "--author", f"{sys.executable} {author}")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "the author agent answered no script" in r.stderr
    assert "test 1" not in r.stdout
    assert not (ws.agent_dir / "profiles" / "helper.yaml").exists()
    assert not (ws.agent_dir / "scripts" / "helper-hook.py").exists()


TOKEN_SCRIPT = (  # reads the variable in a way no scan of the script finds, and echoes it
    "import json, os, sys\nif sys.argv[1] == 'execute':\n    sys.stdin.read()\n"
    "    print(json.dumps({'output': 'token is ' + os.getenv('DESK_TOKEN', '')}))\n"
)


def test_a_variable_the_author_agent_declares_is_redacted_in_the_test(
    rook_workspace, rook_cli, tmp_path
):
    """The test of an author agent's script showed the value of a variable its answer
    declares in env (answer: token is tok-...): the redactor knew the secrets of the
    source only. The profile's env values are redacted in the test, as rook run does."""
    ws = rook_workspace
    token = "tok-desk-" + "5c1e9b07a3"
    author = tmp_path / "env_author.py"
    env = [{"variable": "DESK_TOKEN", "purpose": "the desk's token"}]
    answer = json.dumps({"output": f"```python\n{TOKEN_SCRIPT}```", "env": env})
    author.write_text(f"import sys\nsys.stdin.read()\nprint({answer!r})\n")
    r = add(rook_cli, ws, "desk", "--notes", "x", "--author", f"{sys.executable} {author}",
            env={"DESK_TOKEN": token})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: token is [redacted:DESK_TOKEN]" in r.stdout, r.stdout
    assert token not in r.stdout + r.stderr
    assert profile(ws, "desk")["env"] == env


@pytest.mark.parametrize(
    "env, said",
    [
        # a name alone was dropped in silence: the variable neither checked nor redacted
        (["DESK_TOKEN"], None),
        ("DESK_TOKEN", None),
        ([{"name": "DESK_TOKEN"}], "env: {'name': 'DESK_TOKEN'} is not a variable"),
        ([3], "env: 3 is not a variable"),
    ],
)
def test_an_author_agents_env_names_alone_are_declared_else_refused_by_name(
    rook_workspace, rook_cli, tmp_path, env, said
):
    ws = rook_workspace
    token = "tok-desk-" + "5c1e9b07a3"
    author = tmp_path / "env_author.py"
    answer = json.dumps({"output": f"```python\n{TOKEN_SCRIPT}```", "env": env})
    author.write_text(f"import sys\nsys.stdin.read()\nprint({answer!r})\n")
    r = add(rook_cli, ws, "desk", "--notes", "x", "--author", f"{sys.executable} {author}",
            env={"DESK_TOKEN": token})
    assert token not in r.stdout + r.stderr
    if said is None:
        assert r.exit_code == 0, r.stdout + r.stderr
        assert "answer: token is [redacted:DESK_TOKEN]" in r.stdout, r.stdout
        assert profile(ws, "desk")["env"] == [
            {"variable": "DESK_TOKEN", "purpose": "read by the hook script"}
        ]
        return
    assert r.exit_code == 1, r.stdout + r.stderr
    assert said in r.stderr and "{variable: NAME, purpose: ...}" in r.stderr, r.stderr
    assert not (ws.agent_dir / "profiles" / "desk.yaml").exists()


PHASED_SCRIPT = (  # open is handled without its quoted name, so no scan of the script finds it
    "import json, sys\nphase = sys.argv[1]\nif phase[:2] == 'op':\n"
    "    print(json.dumps({'conversation': 'c-1'}))\nelif phase == 'execute':\n"
    "    print(json.dumps({'output': 'heard: ' + sys.stdin.read()}))\n"
)


@pytest.mark.parametrize(
    "phases, hooks, said",
    [
        # one phase written as a string was ignored: open silently fell back to what a
        # scan of the script found (no open hook, a single-turn profile)
        ("open", ["execute", "open"], None),
        (["open"], ["execute", "open"], None),
        # a name that is no phase was dropped in silence, as was a value of another kind
        (["execute", "opne"], None, "phases: 'opne' is not a phase"),
        ("open close", None, "phases: 'open close' is not a phase"),
        (3, None, "phases: 3 is not a phase name nor a list of them"),
    ],
)
def test_an_author_agents_phases_are_a_list_or_one_phase_else_refused_by_name(
    rook_workspace, rook_cli, tmp_path, phases, hooks, said
):
    ws = rook_workspace
    author = tmp_path / "phased_author.py"
    answer = json.dumps({"output": f"```python\n{PHASED_SCRIPT}```", "phases": phases})
    author.write_text(f"import sys\nsys.stdin.read()\nprint({answer!r})\n")
    r = add(rook_cli, ws, "helper", "--notes", "echo it", "--author", f"{sys.executable} {author}")
    if said is None:
        assert r.exit_code == 0, r.stdout + r.stderr
        assert sorted(profile(ws, "helper")["hooks"]) == sorted(hooks)
        assert "answer: heard: Say hello" in r.stdout
        return
    assert r.exit_code == 1, r.stdout + r.stderr
    assert said in r.stderr and "(prepare, open, execute, close, collect)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "test 1" not in r.stdout
    assert not (ws.agent_dir / "profiles" / "helper.yaml").exists()
    assert not (ws.agent_dir / "scripts" / "helper-hook.py").exists()


PERL = '#!/usr/bin/env perl\nprint "{\\"output\\": \\"perl\\"}\\n" if $ARGV[0] eq "execute";\n'


@pytest.mark.parametrize(
    "answer",
    [f"```perl\n{PERL}```", PERL, "```ruby\nputs 'hi'\n```"],
    ids=["fenced perl", "a perl #! line", "fenced ruby"],
)
def test_a_script_in_a_language_rook_cannot_run_is_no_script(
    rook_workspace, rook_cli, tmp_path, answer
):
    """A script the author agent wrote in a language Rook runs no hook script in
    (```perl, a #!/usr/bin/env perl line) was saved as scripts/NAME-hook.py (or .sh)
    and run by Python (or bash): a SyntaxError, sent back to the author agent as if
    its script were broken. It is refused, naming the language and those Rook runs."""
    ws = rook_workspace
    author = tmp_path / "perl_author.py"
    author.write_text(f"import sys\nsys.stdin.read()\nprint({answer!r})\n")
    r = add(rook_cli, ws, "helper", "--notes", "x", "--author", f"{sys.executable} {author}")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "a script Rook cannot run" in r.stderr and "Python, bash or Node" in r.stderr, r.stderr
    assert "test 1" not in r.stdout
    assert not (ws.agent_dir / "profiles" / "helper.yaml").exists()
    assert not list((ws.agent_dir / "scripts").glob("helper-hook*"))


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1/ask?key=sk-URLSECRET12345678", "--from http://[::1/ask: not a valid URL"),
        ("http://bob:pw-URLSECRET9@127.0.0.1:99999/ask", "--from http://127.0.0.1:99999/ask: not"),
        ("https://?q=1", "--from https://: names no host"),
    ],
)
def test_a_url_that_is_no_url_is_a_usage_error(rook_workspace, rook_cli, url, problem):
    """--from with a malformed URL: exit 2 naming it (never its key or password), no
    traceback, nothing written."""
    ws = rook_workspace
    r = add(rook_cli, ws, "u", "--from", url)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert problem in r.stderr
    assert "URLSECRET" not in r.stdout + r.stderr
    assert not list((ws.agent_dir / "profiles").glob("*.yaml"))


@pytest.mark.parametrize("name", [(), ("named",)])
@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1/ask?key=sk-CURLSECRET12345678", "'http://[::1/ask': not a valid URL"),
        ("http://u:pw-CURLSECRET9@a.example:99999/ask", "'http://a.example:99999/ask': not a"),
    ],
)
def test_a_curl_url_that_is_no_url_is_a_usage_error(rook_workspace, rook_cli, url, problem, name):
    """The user's mistake in a cURL command: exit 2 naming the URL (never its key or
    password); not a traceback (without a name), nor an author plugin's failure."""
    ws = rook_workspace
    call = f"""curl '{url}' -d '{{"message": "hi"}}'\n"""
    r = add(rook_cli, ws, *name, input=call)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"the cURL URL {problem}" in r.stderr and "failed in" not in r.stderr
    assert "CURLSECRET" not in r.stdout + r.stderr
    assert not list((ws.agent_dir / "profiles").glob("*.yaml"))


@pytest.mark.parametrize(
    "doc",
    [
        "openapi: 3.0.0\ninfo: hello\npaths: {}\n",
        "openapi: 3.0.0\ninfo: {title: Desk}\npaths: [1]\n",
        "openapi: 3.0.0\ninfo: {title: Desk}\npaths:\n  /ask: [1]\n",
    ],
)
def test_a_malformed_openapi_document_is_a_usage_error(rook_workspace, rook_cli, tmp_path, doc):
    """A list or text where OpenAPI has a mapping is the document's fault: exit 2 naming
    the file; never a traceback (it was one without a profile name) nor a plugin failure."""
    ws = rook_workspace
    api = tmp_path / "api.yaml"
    api.write_text(doc)
    r = add(rook_cli, ws, "--from", str(api))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "failed in" not in r.stderr
    named = f"{api}: " in r.stderr and "not a valid OpenAPI 3 document" in r.stderr
    assert named or "no operation" in r.stderr
    assert not list((ws.agent_dir / "profiles").glob("*.yaml"))


def test_from_a_directory_says_so(rook_workspace, rook_cli, tmp_path):
    r = add(rook_cli, rook_workspace, "d", "--from", str(tmp_path))
    assert r.exit_code == 2 and f"--from {tmp_path}: a directory, not a file" in r.stderr
    r = add(rook_cli, rook_workspace, "d", "--from", str(tmp_path / "nope.txt"))
    assert r.exit_code == 2 and "nope.txt: no such file" in r.stderr


def test_from_a_name_too_long_for_a_file_names_the_flag(rook_workspace, rook_cli):
    # --from www... (300 characters): '/cwd/www...: File name too long', no flag named
    r = add(rook_cli, rook_workspace, "d", "--from", "w" * 300)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"--from {'w' * 300}: cannot read it: " in r.stderr and "too long" in r.stderr
    assert not list((rook_workspace.agent_dir / "profiles").glob("*.yaml"))


def test_from_a_pipe_or_device_says_what_it_is_and_how_to_pipe(rook_workspace, rook_cli, tmp_path):
    # `--from <(pbpaste)` (a pipe) and /dev/null were "no such file": they exist
    os.mkfifo(tmp_path / "fifo")
    for source in (tmp_path / "fifo", Path("/dev/null")):
        r = add(rook_cli, rook_workspace, "d", "--from", str(source))
        assert r.exit_code == 2, r.stdout + r.stderr
        assert f"--from {source}: not a regular file (a pipe, a socket or a device)" in r.stderr
        assert "--from - " in r.stderr
    assert not list((rook_workspace.agent_dir / "profiles").glob("*.yaml"))


@pytest.mark.parametrize(
    "args, needle",
    [
        (["x", "--command", "python3 a.py", "--base-url", "http://x", "--no-test"], "--base-url"),
        (["x", "--command", "python3 a.py", "--operation", "chat", "--no-test"], "--operation"),
        (["x", "--command", "python3 a.py", "--max-iterations", "3", "--no-test"],
         "--max-iterations: the 'command' author, which reads --command, does not use it"),
        (["x", "--command", "cat", "--no-test", "--goal", "Where is ORD-1?"],
         "--goal: only for the test, which --no-test leaves out"),
        (["x", "--command", "cat", "--no-test", "--attempts=2"],
         "--attempts: only for the test, which --no-test leaves out"),
    ],
)
def test_a_flag_the_source_does_not_use_is_refused(rook_workspace, rook_cli, args, needle):
    """A flag that would be silently ignored is a usage error naming it: exit 2, nothing written."""
    ws = rook_workspace
    r = add(rook_cli, ws, *args)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert needle in r.stderr, r.stderr
    assert not list((ws.agent_dir / "profiles").glob("*.yaml"))


class LoopAuthor:
    """A plugin's author of ``.loop`` files; ``options`` as the test sets it."""

    def __init__(self, options):
        if options is not None:
            self.options = options

    def detect(self, source):
        return 0.9 if source.path is not None and source.path.suffix == ".loop" else 0.0

    def write(self, request):
        from rook_core.authoring import Draft

        iterations = str(request.options.get("max_iterations"))
        script = {"scripts/loop.sh": "#!/bin/sh\necho '{\"output\": \"hi\"}'\n"}
        return Draft(hooks={"execute": "scripts/loop.sh"}, files=script,
                     hook_env={"ITERATIONS": iterations})


@pytest.mark.parametrize("options", [("max_iterations",), None, ("operation",)])
def test_max_iterations_reaches_a_plugin_author_that_reads_it(
    rook_plugin, rook_workspace, rook_cli, tmp_path, options
):
    """author.md: an author lists the flags it reads in ``options`` (``max_iterations``
    among them), and one it does not read is refused; without ``options`` every flag
    is passed on."""
    from rook_core.hookspecs import hookimpl

    class Plugin:
        @hookimpl
        def rook_register_authors(self, register):
            register("loop", LoopAuthor(options))

    rook_plugin(Plugin())
    (tmp_path / "desk.loop").write_text("loop\n")
    r = add(rook_cli, rook_workspace, "desk", "--from", str(tmp_path / "desk.loop"),
            "--max-iterations", "3", "--no-test")
    if options == ("operation",):
        assert r.exit_code == 2, r.stdout
        assert "--max-iterations: the 'loop' author, which reads " in r.stderr
        assert "desk.loop, does not use it (it is for a Ruhroh wrapper" in r.stderr
        assert not list((rook_workspace.agent_dir / "profiles").glob("*.yaml"))
        return
    assert r.exit_code == 0, r.stderr
    assert profile(rook_workspace, "desk")["hook_env"] == {"ITERATIONS": "3"}


def test_a_fallback_author_gets_only_what_no_other_author_claims(
    rook_plugin, rook_workspace, rook_cli, tmp_path
):
    """author.md: ``fallback = True`` is for an author that should only get what no
    other author claims, however sure its ``detect`` is."""
    from rook_core.hookspecs import hookimpl

    class CatchAll(LoopAuthor):
        fallback = True

        def detect(self, source):
            return 1.0 if source.kind == "file" else 0.0

    class Plugin:
        @hookimpl
        def rook_register_authors(self, register):
            register("catchall", CatchAll(None))

    rook_plugin(Plugin())
    script = tmp_path / "desk.py"
    script.write_text("import sys\nprint('{\"output\": \"hi\"}')\n")
    r = add(rook_cli, rook_workspace, "desk", "--from", str(script), "--no-test")
    assert r.exit_code == 0, r.stderr
    assert "author: script (" in r.stdout, "the script author claims a .py file"
    notes = tmp_path / "notes.txt"
    notes.write_text("an agent somewhere\n")
    r = add(rook_cli, rook_workspace, "other", "--from", str(notes), "--no-test")
    assert r.exit_code == 0, r.stderr
    assert "author: catchall (" in r.stdout, "what no other author claims"


def test_a_plugin_author_asks_for_a_choice_or_gives_up_with_exit_2(
    rook_plugin, rook_workspace, rook_cli, tmp_path
):
    """author.md: NeedsChoice off a terminal lists the candidates and exits 2; then the
    flag it names reaches the author. CannotAuthor with no author agent configured
    says how to give one. Nothing is written until a draft is."""
    from rook_core.authoring import CannotAuthor, NeedsChoice
    from rook_core.hookspecs import hookimpl

    class Picky(LoopAuthor):
        def write(self, request):
            if request.source.text.startswith("give up"):
                raise CannotAuthor("desk.loop names no endpoint after all")
            if not request.options.get("operation"):
                raise NeedsChoice("two desks fit", "--operation", [("north", "N"), ("south", "S")])
            request.options["max_iterations"] = request.options["operation"]
            return super().write(request)

    class Plugin:
        @hookimpl
        def rook_register_authors(self, register):
            register("picky", Picky(("operation",)))

    rook_plugin(Plugin())
    source = tmp_path / "desk.loop"
    source.write_text("loop\n")
    r = add(rook_cli, rook_workspace, "desk", "--from", str(source), "--no-test")
    assert r.exit_code == 2, r.stdout
    assert "two desks fit; choose one with --operation ID:\n  north  N\n  south  S" in r.stderr
    assert not list((rook_workspace.agent_dir / "profiles").glob("*.yaml"))
    r = add(rook_cli, rook_workspace, "desk", "--from", str(source), "--operation", "south",
            "--no-test")
    assert r.exit_code == 0, r.stderr
    assert profile(rook_workspace, "desk")["hook_env"] == {"ITERATIONS": "south"}
    source.write_text("give up\n")
    r = add(rook_cli, rook_workspace, "other", "--from", str(source), "--no-test")
    assert r.exit_code == 2, r.stdout
    assert "desk.loop names no endpoint after all; describe the target with --notes and " \
           "name an author agent with --author CMD" in r.stderr
    assert not (rook_workspace.agent_dir / "profiles" / "other.yaml").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["", "--command", "cat", "--no-test"], "NAME '': names nothing"),
        (["x", "--command", "", "--no-test"], "--command '': names nothing"),
        (["x", "--from", "", "--no-test"], "--from '': names nothing"),
        (["x", "--ruhroh", " ", "--no-test"], "--ruhroh ' ': names nothing"),
    ],
)
def test_an_empty_name_or_source_is_refused(rook_workspace, rook_cli, args, needle):
    """`rook profile add "$NAME" --command "$CMD"` with a variable empty: NAME ''
    was silently replaced by the command's name, --from '' read the current
    directory, --command '' printed its author before failing."""
    ws = rook_workspace
    r = add(rook_cli, ws, *args)
    assert r.exit_code == 2 and needle in r.stderr, r.stdout + r.stderr
    assert r.stdout == ""
    assert not list((ws.agent_dir / "profiles").glob("*.yaml"))


def test_an_empty_standard_input_is_named_as_the_source_given(rook_workspace, rook_cli):
    """`pbpaste | rook profile add NAME --from -` with the clipboard empty was told
    to "give a source ... (or pipe a cURL command on standard input)", which it
    did, and with --notes the empty input was dropped for the notes in silence."""
    ws = rook_workspace
    for args in (["x", "--from", "-"], ["x", "--from", "-", "--notes", "n", "--author", "cat"]):
        r = add(rook_cli, ws, *args, input=" \n")
        assert r.exit_code == 2, r.stdout + r.stderr
        assert "--from -: standard input is empty" in r.stderr, r.stderr
    r = add(rook_cli, ws, "x", input="")  # piped, no --from: said too
    assert r.exit_code == 2 and "standard input was empty" in r.stderr, r.stderr
    assert not list((ws.agent_dir / "profiles").glob("*.yaml"))


def test_curl_get_data_credentials_move_to_env(rook_workspace, rook_cli, authoring_server):
    """With -G the -d/--data-urlencode pairs are the query: an api_key among them
    went into the profile's query as written, not into env."""
    ws = rook_workspace
    key = "k-" + authoring_server.api_key[-12:]
    curl = (
        f"curl -G {authoring_server.url}/echo --data-urlencode 'q=hi there' "
        f"--data-urlencode 'api_key={key}' --data-urlencode 'token={key}x'"
    )
    r = add(rook_cli, ws, "getter", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "getter")["hooks"]["execute"]["http"]
    assert http["query"] == {
        "q": "{{goal}}",
        "api_key": "{{env.AGENT_API_KEY}}",
        "token": "{{env.AGENT_API_TOKEN}}",
    }
    assert key not in r.stdout + r.stderr
    assert_nowhere(ws, key)
    sent = authoring_server.seen("GET", "/echo")[-1]["query"]
    assert sent == {"q": "Say hello in one short sentence.", "api_key": key, "token": key + "x"}


def test_the_goal_never_replaces_a_credential_moved_to_env(rook_workspace, rook_cli, authoring_server):
    """With no field named like a message, the goal went to the longest string:
    the `{{env.AGENT_API_KEY}}` the key had just become. The profile sent the goal
    as the key and declared a variable nothing used."""
    ws = rook_workspace
    key = "k-" + authoring_server.api_key[-12:]
    r = add(rook_cli, ws, "echo", "--no-test", input=f"curl '{authoring_server.url}/echo?api_key={key}&say=hello'")
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "echo")["hooks"]["execute"]["http"]
    assert http["query"] == {"api_key": "{{env.AGENT_API_KEY}}", "say": "{{goal}}"}
    assert "the goal goes where your sample message was: query parameter say" in r.stdout
    curl = (
        f"curl {authoring_server.url}/echo -H 'Content-Type: application/json' "
        f"""-d '{{"auth": {{"token": "{key}"}}, "payload": {{"words": "hi"}}}}'"""
    )
    r = add(rook_cli, ws, "nested", "--no-test", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    body = profile(ws, "nested")["hooks"]["execute"]["http"]["body"]
    assert body == {"auth": {"token": "{{env.AGENT_API_TOKEN}}"}, "payload": {"words": "{{goal}}"}}
    assert_nowhere(ws, key)


def test_credentials_inside_json_lists_move_to_env(rook_workspace, rook_cli, authoring_server):
    """A token in an object inside a list (`{"auth": [{"token": ...}]}`), a key in a
    list of strings, or in a JSON array body was written into the profile as is."""
    ws = rook_workspace
    key = "tok-" + authoring_server.api_key[-12:]
    shaped = "sk-proj-" + authoring_server.api_key[-20:]
    curl = (
        f"curl {authoring_server.url}/echo -H 'Content-Type: application/json' "
        f"""-d '{{"message": "hi", "auth": [{{"token": "{key}"}}], "keys": ["{shaped}"]}}'"""
    )
    r = add(rook_cli, ws, "listed", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    body = profile(ws, "listed")["hooks"]["execute"]["http"]["body"]
    assert body == {
        "message": "{{goal}}",
        "auth": [{"token": "{{env.AGENT_API_TOKEN}}"}],
        "keys": ["{{env.AGENT_API_KEY}}"],
    }
    sent = authoring_server.seen("POST", "/echo")[-1]["json"]
    assert sent["auth"] == [{"token": key}] and sent["keys"] == [shaped]
    r = add(rook_cli, ws, "array", "--no-test", input=(
        f"curl {authoring_server.url}/echo -H 'Content-Type: application/json' "
        f"""-d '[{{"message": "hi", "token": "{key}"}}]'"""
    ))
    assert r.exit_code == 0, r.stdout + r.stderr
    body = profile(ws, "array")["hooks"]["execute"]["http"]["body"]
    assert body == [{"message": "{{goal}}", "token": "{{env.AGENT_API_TOKEN}}"}]
    assert key not in r.stdout + r.stderr and shaped not in r.stdout + r.stderr
    assert_nowhere(ws, key, shaped)


def test_data_pieces_beside_data_urlencode_are_kept(rook_workspace, rook_cli, authoring_server):
    """curl joins -d and --data-urlencode pieces into one form body; with any
    --data-urlencode the -d pieces were dropped: the message (and a password
    among them) vanished and the goal went into another field."""
    ws = rook_workspace
    pw = "pw-" + authoring_server.api_key[-12:]
    curl = (
        f"curl {authoring_server.url}/form -d 'message=hello desk' -d 'password={pw}' "
        "--data-urlencode 'lang=en'"
    )
    r = add(rook_cli, ws, "mixed", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "mixed")["hooks"]["execute"]["http"]
    assert http["form"] == {
        "message": "{{goal}}",
        "password": "{{env.AGENT_PASSWORD}}",
        "lang": "en",
    }
    assert "answer: form reply to: Say hello in one short sentence." in r.stdout
    sent = authoring_server.seen("POST", "/form")[-1]["text"]
    assert f"password={pw}" in sent and "lang=en" in sent
    assert_nowhere(ws, pw)
    r = add(rook_cli, ws, "bad", "--no-test", input=(
        f"""curl {authoring_server.url}/form -d '{{"message": "hi"}}' --data-urlencode 'lang=en'"""
    ))
    assert r.exit_code == 2 and "mixes --data-urlencode with a -d/--data piece" in r.stderr, (
        r.stdout + r.stderr
    )


def test_a_name_in_another_script_gets_an_id_or_a_way_out(rook_workspace, rook_cli):
    """Accents were dropped from the id (`Café Öl` -> `caf-l`), and a name with no
    letter a-z (`東京`) was refused as having "no letter or digit", with no way
    to give a profile that name."""
    ws = rook_workspace
    r = add(rook_cli, ws, "Café Öl", "--no-test", "--command", "cat")
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(ws, "cafe-ol")
    assert data["name"] == "Café Öl" and data["id"] == "cafe-ol"
    r = add(rook_cli, ws, "東京", "--no-test", "--command", "cat")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "profile name '東京': the id is made from the name's letters a-z" in r.stderr
    assert f"rook profile rename ID '東京' -w {ws.root}" in r.stderr  # works as printed
    r = rook_cli("profile", "rename", "--workspace", str(ws.root), "cafe-ol", "東京")
    assert r.exit_code == 0, r.stdout + r.stderr
    r = rook_cli("profile", "show", "--workspace", str(ws.root), "東京")
    assert r.exit_code == 0 and "東京 (id cafe-ol)" in r.stdout, r.stdout + r.stderr


COPYING_AUTHOR = r'''
import json, re, sys
request = sys.stdin.read()
open(sys.argv[1], "w").write(request)
token = re.search(r"Bearer (\S+)", json.loads(request.rsplit("```json", 1)[1].split("```")[0])["notes"]).group(1)
read = f"os.environ[{token[1:]!r}]" if token.startswith("$") else repr(token)
print(f"""```python
import json, os, sys, urllib.request
if sys.argv[1] == "execute":
    body = {{"messages": [{{"role": "user", "content": sys.stdin.read()}}]}}
    req = urllib.request.Request(sys.argv[0] and {sys.argv[2]!r}, json.dumps(body).encode(),
                                 {{"Authorization": "Bearer " + {read}, "Content-Type": "application/json"}})
    answer = json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]
    print(json.dumps({{"output": answer}}))
```""")
'''


def test_a_key_in_the_notes_never_reaches_the_author_agent(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A key written in --notes went to the author agent as is, and an author that
    copies what it reads (as a coding agent does) put it in the hook script:
    Rook wrote the file, since it knew of no secret."""
    ws = rook_workspace
    author = tmp_path / "author.py"
    author.write_text(COPYING_AUTHOR)
    seen = tmp_path / "request.md"
    url = f"{authoring_server.url}/v1/chat/completions"
    notes = f"POST a chat to {url} with the header Authorization: Bearer {authoring_server.api_key}"
    r = add(rook_cli, ws, "desk", "--notes", notes, "--author", f"{sys.executable} {author} {seen} {url}")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: echo: Say hello in one short sentence." in r.stdout
    assert "secret: AGENT_API_TOKEN (the Authorization in the notes)" in r.stdout
    assert profile(ws, "desk")["env"] == [
        {"variable": "AGENT_API_TOKEN", "purpose": "the Authorization in the notes"}
    ]
    assert "Bearer $AGENT_API_TOKEN" in seen.read_text()
    assert authoring_server.api_key not in seen.read_text()
    assert authoring_server.api_key not in r.stdout + r.stderr
    assert_nowhere(ws, authoring_server.api_key)
    ws.scenario({"id": "s", "goal": "hello there", "criteria": [{"contains": "echo: hello"}]})
    run = rook_cli("run", "--json", env={"AGENT_API_TOKEN": authoring_server.api_key})
    assert run.statuses() == {"s": "passed"}, run.stderr


def test_an_endpoint_that_never_answers_is_no_silent_wait(rook_workspace, tmp_path):
    """An endpoint that accepts the connection and never answers: Rook says at once, on
    standard error, what it waits for and for how long; curl's -m bounds the whole call
    (it used to bound each of the 3 attempts: 3 times the wait), and the diagnosis says
    it timed out."""
    import os
    import socket
    import subprocess
    import threading

    ws = rook_workspace
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache

    held: list[socket.socket] = []  # every connection made, held open unanswered

    def accept(listener: socket.socket) -> None:
        try:
            while True:
                held.append(listener.accept()[0])
        except OSError:  # the listener closed: the test is over
            pass

    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        threading.Thread(target=accept, args=(listener,), daemon=True).start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/ask"
        call = tmp_path / "call.txt"
        call.write_text(f"""curl -m 2 {url} -d '{{"message": "hi"}}'\n""")
        argv = ["profile", "add", "hang", "--from", str(call), "-w", str(ws.root)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "rook_core", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        first = proc.stderr.readline()
        waiting = proc.poll() is None  # said before the wait, not after it
        out, err = proc.communicate(timeout=60)
        listener.shutdown(socket.SHUT_RDWR)
    for conn in held:
        conn.close()
    assert first == f"trying the agent: POST {url} (up to 2 s)\n", first + err
    assert waiting and len(held) == 1, held  # one call timed out, not 3 attempts of it
    assert proc.returncode == 1, out + err
    assert "test 1 (curl): FAILED (timeout)" in out and "test 2" not in out
    assert "timed out after 2 s (1 attempt)" in out
    assert "raise timeout_seconds on the hook entry" in out
    execute = profile(ws, "hang")["hooks"]["execute"]
    assert execute["timeout_seconds"] == 2 and "timeout_seconds" not in execute["http"]


@pytest.mark.parametrize(
    "curl, named",
    [
        (
            "curl {url}/ask -H 'Authorization: Bearer zq9' -d '{{\"message\": \"hi\"}}'",
            "Bearer credential for {url}/ask (the Authorization header)",
        ),
        (
            "curl '{url}/ask?key=zq9' -d '{{\"message\": \"hi\"}}'",
            "the key query parameter of {url}/ask",
        ),
    ],
)
def test_a_secret_too_short_to_redact_is_a_usage_error(
    rook_workspace, rook_cli, authoring_server, curl, named
):
    """A credential under the redactor's 4 characters could be neither hidden nor told
    apart from the profile's own words ('ask' in '/ask'): it was a bare 'a secret value
    would reach the profile' (exit 1); now exit 2 names where it is and what to do."""
    ws = rook_workspace
    url = authoring_server.url
    r = add(rook_cli, ws, "short", "--no-test", input=curl.format(url=url))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert named.format(url=url) + ": its value is 3 characters, too short to be redacted" in (
        r.stderr
    )
    assert "write {{env.NAME}} in its place and set NAME" in r.stderr
    assert "zq9" not in r.stdout + r.stderr
    assert not list((ws.agent_dir / "profiles").iterdir())
    # what it says works: the variable is declared, checked and used
    r = add(
        rook_cli,
        ws,
        "short",
        "--no-test",
        input=curl.format(url=url).replace("zq9", "{{env.SHORT_KEY}}"),
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "short")["env"] == [
        {"variable": "SHORT_KEY", "purpose": f"{{{{env.SHORT_KEY}}}} in your source, for {url}/ask"}
    ]
    assert "set SHORT_KEY before rook run" in r.stdout


def test_a_cookie_file_given_to_b_is_read_as_curl_reads_it(
    rook_workspace, rook_cli, authoring_server, tmp_path, monkeypatch
):
    """curl -b FILE (no '=': a file of cookies, Netscape format, as curl -c writes it)
    sends the cookies it holds for the URL's host and path; the flag was dropped
    without a word, so the profile sent no session cookie. They are read now, and the
    Cookie header moves to env like one written inline; a file that is not there is
    named, exit 2."""
    ws = rook_workspace
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jar.txt").write_text(
        "# Netscape HTTP Cookie File\n"
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tsess-4f9a2c71e0\n"
        "#HttpOnly_127.0.0.1\tFALSE\t/form\tFALSE\t0\tcsrf\tc5rf-77a1\n"
        "127.0.0.1\tFALSE\t/elsewhere\tFALSE\t0\tnot\tother-path-1\n"
        "other.example\tFALSE\t/\tFALSE\t0\tfar\taway-1234\n"
    )
    url = f"{authoring_server.url}/form"
    r = add(rook_cli, ws, "jar", input=f"curl -b jar.txt {url} -d message=hi")
    assert r.exit_code == 0, r.stdout + r.stderr
    sent = authoring_server.seen("POST", "/form")[-1]["headers"]
    assert sent.get("Cookie") == "csrf=c5rf-77a1; sid=sess-4f9a2c71e0", sent  # as curl sends them
    http = profile(ws, "jar")["hooks"]["execute"]["http"]
    assert http["headers"]["Cookie"] == "{{env.AGENT_COOKIE}}", http
    assert "secret: AGENT_COOKIE" in r.stdout
    for value in ("sess-4f9a2c71e0", "c5rf-77a1"):
        assert value not in r.stdout + r.stderr
        assert_nowhere(ws, value)
    r = add(rook_cli, ws, "gone", "--no-test", input=f"curl -b nojar.txt {url}")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "-b nojar.txt" in r.stderr and "no such file" in r.stderr, r.stderr
    assert not (ws.agent_dir / "profiles" / "gone.yaml").exists()


def test_a_cookie_file_is_read_with_its_subdomain_flag_expiry_and_set_cookie_lines(
    rook_workspace, rook_cli, authoring_server, tmp_path, monkeypatch
):
    """curl -b FILE sends a Netscape line's cookie to subdomains only when its flag is
    TRUE and not once it has expired, and reads a file of Set-Cookie: lines (a curl -D
    dump) too; every cookie was sent, expired ones included, and a Set-Cookie file was
    refused. The variable's purpose says what to set it to: the file's cookies for the
    URL, by name, as one Cookie header."""
    ws = rook_workspace
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jar.txt").write_text(
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tsess-4f9a2c71e0\n"
        "127.0.0.1\tFALSE\t/\tFALSE\t1000\told\texpired-7d2e\n"
        "127.0.0.1\tFALSE\t/\tTRUE\t4102444800\tsafe\tsecure-on-loopback\n"
    )
    url = f"{authoring_server.url}/form"
    r = add(rook_cli, ws, "jar", input=f"curl -b jar.txt -b 'lang=en-GB' {url} -d message=hi")
    assert r.exit_code == 0, r.stdout + r.stderr
    sent = authoring_server.seen("POST", "/form")[-1]["headers"]
    assert sent.get("Cookie") == "safe=secure-on-loopback; sid=sess-4f9a2c71e0; lang=en-GB"
    env = profile(ws, "jar")["env"]
    assert env[0] == {
        "variable": "AGENT_COOKIE",
        "purpose": f"the cookies jar.txt holds for {url} (safe, sid), as curl sends them "
        "in the Cookie header: name=value pairs joined by '; '",
    }
    said = f"set AGENT_COOKIE before rook run ({env[0]['purpose']})"
    assert said in " ".join(r.stdout.split()), r.stdout
    assert env[1]["variable"] == "AGENT_COOKIE_2"  # -b 'lang=...': moved as any cookie is
    http = profile(ws, "jar")["hooks"]["execute"]["http"]
    assert http["headers"]["Cookie"] == "{{env.AGENT_COOKIE}}; {{env.AGENT_COOKIE_2}}", http
    assert_nowhere(ws, "sess-4f9a2c71e0")

    # Set-Cookie: lines among a response's headers (curl -D), as curl reads them
    (tmp_path / "dump.txt").write_text(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        "Set-Cookie: sid=hdr-9b1c55e2; Path=/; HttpOnly\r\n"
        "set-cookie: gone=max-age-0-x; Max-Age=0\r\n"
        "Set-Cookie: past=expired-3c; Expires=Wed, 01 Jan 2020 00:00:00 GMT\r\n"
        "Set-Cookie: deep=other-path-1; Path=/elsewhere\r\n"
        "Set-Cookie: far=away-1234; Domain=other.example\r\n\r\n"
    )
    r = add(rook_cli, ws, "dump", input=f"curl -b dump.txt {url} -d message=hi")
    assert r.exit_code == 0, r.stdout + r.stderr
    sent = authoring_server.seen("POST", "/form")[-1]["headers"]
    assert sent.get("Cookie") == "sid=hdr-9b1c55e2", sent
    assert f"dump.txt holds for {url} (sid), as" in profile(ws, "dump")["env"][0]["purpose"]
    assert_nowhere(ws, "hdr-9b1c55e2")

    # the subdomain flag, for a host name (not tested: the purpose names the cookies)
    (tmp_path / "hosts.txt").write_text(
        "example.test\tTRUE\t/\tFALSE\t0\twide\twide-value-1\n"
        "example.test\tFALSE\t/\tFALSE\t0\texact\texact-value-1\n"
        ".example.test\tFALSE\t/\tFALSE\t0\tdotted\tdotted-value-1\n"
        "api.example.test\tFALSE\t/\tFALSE\t0\town\town-value-1\n"
        "api.example.test\tFALSE\t/\tTRUE\t0\ttls\ttls-value-1\n"
    )
    r = add(
        rook_cli,
        ws,
        "hosts",
        "--no-test",
        input="curl -b hosts.txt http://api.example.test/ask -d message=hi",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    purpose = profile(ws, "hosts")["env"][0]["purpose"]
    assert "hosts.txt holds for http://api.example.test/ask (own, wide), as" in purpose, purpose

    # a file with no cookie for the URL: said so, nothing sent
    r = add(rook_cli, ws, "none", "--no-test", input="curl -b hosts.txt http://other.test/ask -d m=hi")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "-b hosts.txt: no cookie in it is for http://other.test/ask" in r.stdout, r.stdout
    assert "Cookie" not in profile(ws, "none")["hooks"]["execute"]["http"].get("headers", {})


def test_a_set_cookie_line_without_domain_goes_to_an_ip_address_only_as_curl_sends_it(
    rook_workspace, rook_cli, authoring_server, tmp_path, monkeypatch
):
    """A Set-Cookie: line with no Domain= in a -b FILE dump was sent to any host; curl
    7.88 sends it to an IP address (127.0.0.1) but not to a host name (localhost), and
    sends a file's cookies longest path first, then longest domain, longest name, latest
    line, a later line for the same cookie replacing the earlier one (Rook kept the
    file's order and sent both). Seen with curl -b dump.txt against both host names."""
    ws = rook_workspace
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dump.txt").write_text(
        "HTTP/1.1 200 OK\r\n"
        "Set-Cookie: sid=nodomain-61c2; Path=/\r\n"
        "Set-Cookie: any=nopath-0b7e\r\n"
        "Set-Cookie: ip=ipdomain-93d0; Domain=127.0.0.1\r\n"
        "Set-Cookie: loc=localname-5a18; Domain=localhost\r\n"
        "Set-Cookie: sub=subpath-2f44; Path=/form\r\n"
        "Set-Cookie: any=nopath-later-77c1\r\n\r\n"
    )
    port = authoring_server.url.rsplit(":", 1)[1]
    for pid, host, cookie in (
        (
            "ip",
            "127.0.0.1",
            "sub=subpath-2f44; sid=nodomain-61c2; ip=ipdomain-93d0; any=nopath-later-77c1",
        ),
        ("name", "localhost", "loc=localname-5a18"),
    ):
        url = f"http://{host}:{port}/form"
        r = add(rook_cli, ws, pid, input=f"curl -b dump.txt {url} -d message=hi")
        assert r.exit_code == 0, r.stdout + r.stderr
        sent = authoring_server.seen("POST", "/form")[-1]["headers"]
        assert sent.get("Cookie") == cookie, (host, sent)
        names = ", ".join(pair.split("=")[0] for pair in cookie.split("; "))
        purpose = profile(ws, pid)["env"][0]["purpose"]
        assert f"dump.txt holds for {url} ({names}), as curl sends" in purpose, purpose
    assert_nowhere(ws, "nodomain-61c2", "nopath-0b7e", "nopath-later-77c1", "localname-5a18")
    # a dump of such lines alone: nothing for a host name, and the note says why
    (tmp_path / "bare.txt").write_text("Set-Cookie: sid=nodomain-61c2; Path=/\r\n")
    r = add(rook_cli, ws, "bare", "--no-test", input=f"curl -b bare.txt http://localhost:{port}/form -d m=hi")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert (
        f"-b bare.txt: no cookie in it is for http://localhost:{port}/form (another host or "
        "path, expired, Secure over plain http, or a Set-Cookie: line without Domain=, which "
        "curl sends to an IP address only): none sent" in " ".join(r.stdout.split())
    ), r.stdout


def test_data_urlencode_reads_files_as_curl_does(
    rook_workspace, rook_cli, authoring_server, tmp_path, monkeypatch
):
    """--data-urlencode name@file sends name=<the file's content, encoded> and @file the
    content alone (curl reads the file, relative to the current directory); they were
    read literally ('message@msg.txt' became a field 'message@msg.txt'). A key in a file
    moves to env like one written inline; a missing file is named, exit 2."""
    ws = rook_workspace
    monkeypatch.chdir(tmp_path)
    key = "kq-" + authoring_server.api_key[-16:]
    (tmp_path / "msg.txt").write_text("Where is ORD-1?\n")
    (tmp_path / "key.txt").write_text(key + "\n")
    url = f"{authoring_server.url}/form"
    r = add(
        rook_cli,
        ws,
        "files",
        input=f"curl {url} --data-urlencode message@msg.txt --data-urlencode api_key@key.txt",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "files")["hooks"]["execute"]["http"]
    assert http["form"] == {"message": "{{goal}}", "api_key": "{{env.AGENT_API_KEY}}"}
    assert "answer: form reply to: Say hello in one short sentence." in r.stdout
    sent = authoring_server.seen("POST", "/form")[-1]["text"]
    assert f"api_key={key}%0A" in sent  # the file's content, newline and all, encoded
    assert key not in r.stdout + r.stderr
    assert_nowhere(ws, key)

    # @file: the content alone, encoded; beside a named piece the goal takes that one
    (tmp_path / "extra.txt").write_text("a b&c")
    r = add(
        rook_cli,
        ws,
        "alone",
        input=f"curl {url} --data-urlencode message@msg.txt --data-urlencode @extra.txt",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "alone")["hooks"]["execute"]["http"]
    assert http["body"] == "message={{goal}}&a+b%26c"
    assert http["headers"] == {"Content-Type": "application/x-www-form-urlencoded"}
    assert "answer: form reply to: Say hello in one short sentence." in r.stdout
    assert "a --data-urlencode piece has no name, so the body is sent as text" in r.stdout
    # a key-shaped content alone moves to env as well
    shaped = "sk-" + authoring_server.api_key[-24:]
    (tmp_path / "token.txt").write_text(shaped)
    r = add(
        rook_cli,
        ws,
        "shaped",
        "--no-test",
        input=f"curl {url} --data-urlencode message@msg.txt --data-urlencode @token.txt",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "shaped")["hooks"]["execute"]["http"]["body"] == (
        "message={{goal}}&{{env.AGENT_API_KEY}}"
    )
    assert_nowhere(ws, shaped)

    r = add(rook_cli, ws, "gone", input=f"curl {url} --data-urlencode message@nowhere.txt")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "--data-urlencode message@nowhere.txt: nowhere.txt: no such file" in r.stderr
    assert not (ws.agent_dir / "profiles" / "gone.yaml").exists()


def test_url_query_reads_files_as_curl_does(
    rook_workspace, rook_cli, authoring_server, tmp_path, monkeypatch
):
    """--url-query takes its pieces as --data-urlencode does: name@file sends name=<the
    file's content, encoded> (curl reads it, relative to the current directory). The
    piece was taken literally: the profile held a parameter named 'note@note.txt' with
    no value, the file never read. A key in a file moves to env; a missing file is
    named, exit 2."""
    ws = rook_workspace
    monkeypatch.chdir(tmp_path)
    key = "kq-" + authoring_server.api_key[-16:]
    (tmp_path / "note.txt").write_text("a b&c\n")
    (tmp_path / "key.txt").write_text(key)
    url = f"{authoring_server.url}/ask"
    curl = (
        f"curl {url} --url-query note@note.txt --url-query api_key@key.txt "
        "--url-query 'plain=x y' --json '{\"message\": \"hi\"}'"
    )
    r = add(rook_cli, ws, "uq", "--no-test", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "uq")["hooks"]["execute"]["http"]
    assert http["query"] == {
        "note": "a b&c\n",
        "api_key": "{{env.AGENT_API_KEY}}",
        "plain": "x y",
    }, http
    assert key not in r.stdout + r.stderr
    assert_nowhere(ws, key)

    r = add(rook_cli, ws, "gone", input=f"curl {url} --url-query q@nowhere.txt -d m=hi")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "--url-query q@nowhere.txt: nowhere.txt: no such file" in r.stderr
    assert not (ws.agent_dir / "profiles" / "gone.yaml").exists()


def test_shell_variables_in_url_query_pieces_are_environment_variables(
    rook_workspace, rook_cli, authoring_server
):
    """--url-query 'key=$API_KEY' (as in the URL, ?key=$API_KEY): the piece was encoded
    before its variables were read, so '$API_KEY' became the text '%24API_KEY', moved to
    env under an invented name (AGENT_API_KEY) and sent as the literal '$API_KEY'; a
    ${QUERY} stayed in the profile as written. They are the environment variables."""
    ws = rook_workspace
    url = f"{authoring_server.url}/ask"
    curl = (
        f"curl {url} --url-query 'key=$API_KEY' --url-query 'q=a ${{QUERY}}!' "
        "--json '{\"message\": \"hi\"}'"
    )
    r = add(rook_cli, ws, "vars", "--no-test", input=curl, env={"API_KEY": "kq-0123456789"})
    assert r.exit_code == 0, r.stdout + r.stderr
    written = profile(ws, "vars")
    assert written["hooks"]["execute"]["http"]["query"] == {
        "key": "{{env.API_KEY}}",
        "q": "a {{env.QUERY}}!",
    }, written
    assert sorted(e["variable"] for e in written["env"]) == ["API_KEY", "QUERY"], written
    assert "AGENT_API_KEY" not in r.stdout


@pytest.mark.parametrize(
    "command",
    [
        "curl -H 'Content-Type: application/json' -d '{\"a\": 1}' -d '{\"b\": 2}' https://h/x",
        "curl -F a=b https://h/x",
        "curl -d @nowhere.json https://h/x",
        "curl -m forever https://h/x",
        "curl -H 'Authorization: $(gcloud auth print-access-token)' https://h/x",
    ],
)
def test_a_curl_command_refused_is_named_by_its_file(rook_workspace, rook_cli, tmp_path, command):
    """SPEC 12: a message names the file at fault. A cURL command no shell could split
    was named by its file ('call.txt: the cURL command cannot be split ...'), but the
    rest of what Rook refuses in one was not: 'rook: error: the cURL body is declared
    as JSON ... give the body once' left the user to guess which source was meant."""
    call = tmp_path / "call.txt"
    call.write_text(command + "\n")
    r = add(rook_cli, rook_workspace, "x", "--from", str(call))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"rook: error: {call}: " in r.stderr, r.stderr
    assert r.stderr.count(str(call)) == 1, r.stderr  # once, not twice
    r = add(rook_cli, rook_workspace, "x", input=command)
    assert r.exit_code == 2 and "rook: error: standard input: " in r.stderr, r.stderr
    assert not (rook_workspace.agent_dir / "profiles" / "x.yaml").exists()


def test_shell_variables_in_a_curl_command_are_environment_variables(
    rook_workspace, rook_cli, authoring_server
):
    """$NAME / ${NAME} in the URL, a header or the body, in any quoting, is the
    environment variable NAME: declared in env, written {{env.NAME}}, read from the
    environment for the test and redacted. It was sent as the literal '$NAME' (the
    agent rejected it) and moved to env under an invented name."""
    ws = rook_workspace
    url, key = authoring_server.url, authoring_server.api_key
    curl = (
        """curl "$DESK_URL/ask?key=${DESK_KEY}" -H 'Content-Type: application/json' """
        """-H 'X-Trace: $TRACE_ID' -d '{"prompt": "hi", "tag": "'"$DESK_KEY"'", "cost": "$5"}'"""
    )
    env = {"DESK_URL": url, "DESK_KEY": key, "TRACE_ID": "trace-77"}
    r = add(rook_cli, ws, "desk", input=curl, env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(ws, "desk")
    http = data["hooks"]["execute"]["http"]
    assert http["url"] == "{{env.DESK_URL}}/ask"
    assert http["query"] == {"key": "{{env.DESK_KEY}}"}
    assert http["headers"] == {"X-Trace": "{{env.TRACE_ID}}"}
    assert http["body"]["tag"] == "{{env.DESK_KEY}}" and http["body"]["prompt"] == "{{goal}}"
    assert http["body"]["cost"] == "$5"  # no name after the $: kept as written
    assert [e["variable"] for e in data["env"]] == ["DESK_URL", "DESK_KEY", "TRACE_ID"]
    assert "$DESK_KEY taken as the environment variable DESK_KEY (the URL)" in r.stdout
    assert "$TRACE_ID taken as the environment variable TRACE_ID (the X-Trace header)" in r.stdout
    assert "DESK_KEY" in r.stdout and "moved to env" not in r.stdout  # the command held no value
    assert "- read from the environment, in no file" in r.stdout
    sent = authoring_server.seen("POST", "/ask")[-1]
    assert sent["query"] == {"key": key} and sent["headers"]["X-Trace"] == "trace-77"
    assert sent["json"]["tag"] == key and sent["json"]["prompt"] != "hi"
    assert key not in r.stdout + r.stderr
    assert_nowhere(ws, key)

    # the value is redacted like any env value: /echo sends the header back
    token = "tok-" + key[-20:]
    r = add(
        rook_cli,
        ws,
        "echo",
        input=f"""curl {url}/echo -H "Authorization: Bearer $ECHO_TOKEN" --json '{{"q": "hi"}}'""",
        env={"ECHO_TOKEN": token},
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert authoring_server.seen("POST", "/echo")[-1]["headers"]["Authorization"] == (
        f"Bearer {token}"
    )
    assert "Bearer [redacted:ECHO_TOKEN]" in r.stdout and token not in r.stdout + r.stderr
    assert profile(ws, "echo")["env"][0]["variable"] == "ECHO_TOKEN"

    # unset: as for a {{env.NAME}}, the profile is written, the variable named, exit 2
    r = add(rook_cli, ws, "unset", input=curl, env={**env, "DESK_KEY": None})
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "not set: DESK_KEY" in r.stdout and "set DESK_KEY before rook run" in r.stdout
    assert "rook profile test unset" in r.stdout

    # what only a shell can work out is refused, nothing written
    for bad, needle in [
        (
            f"""curl {url}/ask -H "Authorization: Bearer $(gcloud auth print-access-token)" -d x""",
            "'$(gcloud ...)' in the Authorization header: a shell expansion",
        ),
        (f"""curl {url}/ask -d "key=${{KEY:-none}}" """, "'${KEY:-...}' in the body"),
        (f"""curl -u "me:$PASSWORD" {url}/basic -d x""", "-u/--user holds a shell variable"),
    ]:
        r = add(rook_cli, ws, "bad", input=bad)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert needle in r.stderr
        assert not (ws.agent_dir / "profiles" / "bad.yaml").exists()


def test_data_without_a_content_type_is_sent_as_curl_sends_it(
    rook_workspace, rook_cli, authoring_server
):
    """-d/--data/--data-raw/--data-binary with no Content-Type: curl sends
    application/x-www-form-urlencoded, and so does the profile now (a text body went
    as text/plain, a JSON one as application/json). A JSON body gets a note saying how
    to send it as JSON; a Content-Type the command gives, or --json, is kept."""
    ws = rook_workspace
    url = authoring_server.url
    form = "application/x-www-form-urlencoded"
    for n, flag in enumerate(["-d", "--data", "--data-raw", "--data-binary"]):
        r = add(rook_cli, ws, f"text{n}", input=f"curl {url}/echo {flag} 'hello desk'")
        assert r.exit_code == 0, r.stdout + r.stderr
        http = profile(ws, f"text{n}")["hooks"]["execute"]["http"]
        assert http["headers"] == {"Content-Type": form} and http["body"] == "{{goal}}"
        sent = authoring_server.seen("POST", "/echo")[-1]
        assert sent["headers"]["Content-Type"] == form
        assert sent["text"] == "Say hello in one short sentence."

    r = add(rook_cli, ws, "json", input=f"""curl {url}/echo -d '{{"message": "hi"}}'""")
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "json")["hooks"]["execute"]["http"]
    assert http["headers"] == {"Content-Type": form} and http["body"] == {"message": "{{goal}}"}
    sent = authoring_server.seen("POST", "/echo")[-1]
    assert sent["headers"]["Content-Type"] == form
    assert sent["json"] == {"message": "Say hello in one short sentence."}
    assert "add -H 'Content-Type: application/json' to the command" in r.stdout

    for name, extra in [("typed", "-H 'Content-Type: application/json' -d"), ("flagged", "--json")]:
        r = add(rook_cli, ws, name, input=f"""curl {url}/echo {extra} '{{"message": "hi"}}'""")
        assert r.exit_code == 0, r.stdout + r.stderr
        assert "headers" not in profile(ws, name)["hooks"]["execute"]["http"]
        assert authoring_server.seen("POST", "/echo")[-1]["headers"]["Content-Type"] == (
            "application/json"
        )
        assert "Content-Type: application/json' to the command" not in r.stdout


def test_a_refused_shell_expansion_never_shows_what_it_holds(
    rook_workspace, rook_cli, authoring_server
):
    """The refusal of $(command) or ${NAME:-default} showed 60 characters of it,
    and both are where a secret is written: a default value, a password piped to
    base64. It now shows the command's first word or the variable, never the rest."""
    ws = rook_workspace
    url, key = authoring_server.url, authoring_server.api_key
    for bad, needle in [
        (
            f"""curl {url}/ask -H "Authorization: Basic $(echo -n me:{key} | base64)" -d x""",
            "'$(echo ...)' in the Authorization header: a shell expansion",
        ),
        (
            f"""curl {url}/ask -H 'Authorization: Bearer ${{DESK_KEY:-{key}}}' -d x""",
            "'${DESK_KEY:-...}' in the Authorization header: a shell expansion",
        ),
        (f"""curl {url}/ask -d "n=${{#DESK_KEY}}" """, "'${#DESK_KEY}' in the body"),
        (f"""curl {url}/ask -d "key=$(cat)" """, "'$(cat)' in the body"),
    ]:
        r = add(rook_cli, ws, "bad", input=bad)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert needle in r.stderr
        assert key not in r.stdout + r.stderr and key[-8:] not in r.stdout + r.stderr
        assert not (ws.agent_dir / "profiles" / "bad.yaml").exists()
    assert_nowhere(ws, key)


def test_a_variable_value_written_out_elsewhere_in_the_command_is_refused(
    rook_workspace, rook_cli, authoring_server
):
    """A $NAME (or {{env.NAME}}) the command refers to, whose value the command also
    holds written out elsewhere (a body field that is not key-shaped, the URL's
    path), went into the profile as written: the value of an env variable on disk,
    and in the author agent's prompt. Such a value, and a secret the command held
    that is also in the URL's path (a vague 'a secret value would reach the
    profile', exit 1, after the test), are now refused before anything runs,
    naming the variable and where (exit 2, nothing written)."""
    ws = rook_workspace
    url = authoring_server.url
    value = "opensesame-please"
    for curl, needle in [
        (
            f"curl {url}/echo -H 'Authorization: Bearer $TOK' -d 'message=hi&note={value}'",
            "the value of $TOK (set in your environment) is also written out in the note "
            "form field; write $TOK there too",
        ),
        (
            f"curl {url}/echo -H 'X-Api-Key: {{{{env.TOK}}}}' "
            f"""-H 'Content-Type: application/json' -d '{{"message": "hi", "user": "{value}"}}'""",
            "the value of $TOK (set in your environment) is also written out in the body",
        ),
        (
            f"curl {url}/echo/{value}/x -H 'X-Api-Key: {value}' -d 'message=hi'",
            "the secret moved to AGENT_API_KEY is also written out in the URL; nothing "
            "written. Put it in an environment variable (export AGENT_API_KEY=...)",
        ),
    ]:
        for extra in ([], ["--no-test"]):
            r = add(rook_cli, ws, "twice", *extra, input=curl, env={"TOK": value})
            assert r.exit_code == 2, r.stdout + r.stderr
            assert needle in r.stderr, r.stderr
            assert value not in r.stdout + r.stderr
            assert not (ws.agent_dir / "profiles" / "twice.yaml").exists()
    assert not authoring_server.seen("POST", "/echo")  # refused before the test
    assert_nowhere(ws, value)


def test_a_shell_variable_in_a_name_is_refused(rook_workspace, rook_cli, authoring_server):
    """${NAME} in a JSON body's key, a form field's or a query parameter's name became
    a key '{{env.NAME}}', which an http: entry never fills in (it fills values): the
    agent got the literal '{{env.NAME}}' as the name, and the test could pass; a
    JSON key such as MongoDB's "$set" was a variable 'set' to export. A JSON key is
    now kept as written; a form field's or query parameter's name with a variable
    is refused (exit 2, nothing written), naming the variable and where."""
    ws = rook_workspace
    url = authoring_server.url
    env = {"FIELD": "account-field-name", "set": "not-this-one"}
    body = '{"message": "hi", "update": {"$set": {"${FIELD}": "x"}}}'
    r = add(rook_cli, ws, "mongo", input=f"curl {url}/echo --json '{body}'", env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(ws, "mongo")
    assert data["hooks"]["execute"]["http"]["body"]["update"] == {"$set": {"${FIELD}": "x"}}
    assert "env" not in data and "taken as the environment variable" not in r.stdout
    assert authoring_server.seen("POST", "/echo")[-1]["json"]["update"] == {
        "$set": {"${FIELD}": "x"}
    }
    sent = len(authoring_server.seen("POST", "/echo"))
    for curl, needle in [
        (f"curl {url}/echo -d 'message=hi&$FIELD=x'", "$FIELD in the name of the $FIELD form field"),
        (f"curl '{url}/echo?$FIELD=x' -d 'message=hi'", "$FIELD in the name of the $FIELD query"),
        (
            f"curl {url}/echo --data-urlencode 'message=hi' --data-urlencode '$FIELD=x'",
            "$FIELD in the name of the $FIELD form field",
        ),
    ]:
        r = add(rook_cli, ws, "named", input=curl, env=env)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert needle in r.stderr, r.stderr
        assert "an http: entry fills in values, not names" in r.stderr
        assert not (ws.agent_dir / "profiles" / "named.yaml").exists()
    assert len(authoring_server.seen("POST", "/echo")) == sent  # refused before the test


@pytest.mark.parametrize(
    "value, shown",
    [("-1", "'-1'"), ("nan", "'nan'"), ("inf", "'inf'"), ("abc", "'abc'"), ("1e999", "'1e999'")],
)
def test_a_curl_max_time_that_is_no_time_is_a_usage_error(rook_workspace, rook_cli, value, shown):
    """-m with a value curl refuses: a negative, nan or infinite number was reported
    as the profile file's 'hooks.execute.timeout_seconds' (a field the user never
    wrote), and one that is no number was dropped without a word (the test then
    waited 300 s). It is refused naming -m, exit 2, nothing written."""
    ws = rook_workspace
    r = add(rook_cli, ws, "m", "--no-test", input=f"curl http://127.0.0.1:9/ask -m {value} -d x")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"the cURL command's -m/--max-time {shown}: curl takes a number of seconds" in r.stderr
    assert "timeout_seconds" not in r.stderr
    assert not (ws.agent_dir / "profiles" / "m.yaml").exists()


def test_a_curl_max_time_of_zero_keeps_the_default_timeout(rook_workspace, rook_cli):
    """-m 0 is no limit to curl: the hook keeps Rook's own timeout, and says so."""
    ws = rook_workspace
    r = add(rook_cli, ws, "m", "--no-test", input="curl http://127.0.0.1:9/ask --max-time=0 -d x")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "timeout_seconds" not in profile(ws, "m")["hooks"]["execute"]
    assert "-m 0 (no limit to curl): the hook keeps Rook's timeout (300 s for execute" in r.stdout
    for given, written in (("30", "30"), ("2.5", "2.5"), ("30.0", "30")):  # was 30.0 for -m 30
        r = add(rook_cli, ws, "n", "--no-test", "--force", input=f"curl http://127.0.0.1:9/ask -m {given} -d x")
        assert r.exit_code == 0, r.stdout + r.stderr
        text = (ws.agent_dir / "profiles" / "n.yaml").read_text()
        assert f"    timeout_seconds: {written}\n" in text, text


def test_a_variable_too_short_to_redact_is_warned_of(rook_workspace, rook_cli, authoring_server):
    """A $NAME whose value is under 4 characters cannot be redacted (rook run warns
    of it); profile add and profile test showed it (/echo sends the header back)
    without a word. Both now warn on standard error before the test, naming the
    variable (never its value)."""
    ws = rook_workspace
    curl = f"curl {authoring_server.url}/echo -H 'X-Api-Key: $TOK' -d 'message=hi'"
    warning = (
        "warning: env TOK: its value is shorter than 4 characters, too short to find in "
        "text without mangling it: it is not redacted\n"
    )
    r = add(rook_cli, ws, "short", input=curl, env={"TOK": "q7"})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.stderr.count(warning) == 1 and r.stderr.count("trying the agent") == 2
    assert r.stderr.index(warning) < r.stderr.index("trying the agent")
    r = rook_cli("profile", "test", "short", "-w", str(ws.root), env={"TOK": "q7"})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert warning in r.stderr
    # worded and prefixed as rook run's warning (and every other 'rook: warning: ...')
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    run = rook_cli("run", "--profile", "short", env={"TOK": "q7"})
    [said] = [ln for ln in run.stderr.splitlines() if "env TOK:" in ln]
    assert said == "rook: " + warning.rstrip("\n"), said
    assert said + "\n" in r.stderr, r.stderr
    r = rook_cli("profile", "test", "short", "-w", str(ws.root), env={"TOK": "long-enough"})
    assert "warning" not in r.stderr


@pytest.mark.parametrize(
    "option, needle",
    [
        ("-X BREW", "hooks.execute.http.method: must be one of GET"),
        ("-H 'X Foo: 1'", "hooks.execute.http.headers.X Foo: not a valid header name"),
    ],
)
def test_a_curl_command_rook_cannot_make_a_valid_profile_of_names_the_command(
    rook_workspace, rook_cli, option, needle
):
    # every such draft was refused as '.../profiles/cx.yaml: invalid profile', a file
    # never written (or, with --force, one that is valid and stays as it was); `-H
    # @file` is read now (test_a_body_and_headers_in_files_are_read_as_curl_reads_them)
    ws = rook_workspace
    command = f"curl https://example.invalid/ask {option} -d 'message=hi'"
    r = add(rook_cli, ws, "cx", "--no-test", input=command)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert needle in r.stderr
    assert "invalid profile" not in r.stderr
    if not option.startswith("-H @"):
        assert "standard input: Rook cannot make a valid profile of it (nothing written)" in (
            r.stderr
        )
    assert not (ws.agent_dir / "profiles" / "cx.yaml").exists()


def test_a_curl_header_ending_in_a_semicolon_is_sent_empty(rook_workspace, rook_cli):
    # curl's -H 'X-Empty;' sends the header with no value; it was refused as a header
    # named 'X-Empty;'
    ws = rook_workspace
    command = "curl https://example.invalid/ask -H 'X-Empty;' -d 'message=hi'"
    r = add(rook_cli, ws, "cx", "--no-test", input=command)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "cx")["hooks"]["execute"]["http"]["headers"]["X-Empty"] == ""


def test_a_redirect_curl_follows_is_corrected_to_the_final_url(
    rook_workspace, rook_cli, authoring_server
):
    # `curl -L` follows a redirect (http to https, a moved path); Rook does not, and
    # profile add wrote the URL that redirects, failing, with no correction
    ws = rook_workspace
    base = authoring_server.url
    command = (
        f"curl -sSL {base}/moved/strict -H 'Content-Type: application/json' "
        "-d '{\"message\": \"hi\"}'"
    )
    r = add(rook_cli, ws, "moved", input=command)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"redirects (HTTP 308) to {base}/strict: url set to it" in r.stdout
    http = profile(ws, "moved")["hooks"]["execute"]["http"]
    assert http["url"] == f"{base}/strict"
    assert http["extract"]["output"] == "result.text"

    # a key in the query, moved to env, comes back redacted in the Location: still followed
    key = "qk-" + "7" * 20
    command = (
        f"curl -sSL '{base}/moved/strict?api_key={key}' -H 'Content-Type: application/json' "
        "-d '{\"message\": \"hi\"}'"
    )
    r = add(rook_cli, ws, "keyed", input=command)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "keyed")["hooks"]["execute"]["http"]
    assert http["url"] == f"{base}/strict" and "{{env." in http["query"]["api_key"]
    assert key not in r.stdout + r.stderr
    assert_nowhere(ws, key)

    # never to another host (the credentials would go with it)
    command = f"curl -sSL {base}/moved/away/strict -d 'message=hi'"
    r = add(rook_cli, ws, "away", input=command)
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "url set to it" not in r.stdout
    assert profile(ws, "away")["hooks"]["execute"]["http"]["url"] == f"{base}/moved/away/strict"


def test_an_author_agent_that_floods_its_output_is_said_so(rook_workspace, rook_cli, tmp_path):
    # past the 10 MiB cap the author agent is stopped; the message was "the author
    # agent exited with code -15: " (a signal, and nothing said about why)
    flood = tmp_path / "flood.py"
    flood.write_text(
        "import sys\nsys.stdin.read()\n"
        "for _ in range(12):\n    sys.stdout.write('x' * (1 << 20))\n"
    )
    r = add(
        rook_cli,
        rook_workspace,
        "flood",
        "--notes",
        "an agent",
        "--author",
        f"{sys.executable} {flood}",
    )
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "the author agent wrote more than 10 MiB on its standard output" in r.stderr
    assert "code -15" not in r.stderr
    assert not (rook_workspace.agent_dir / "profiles" / "flood.yaml").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (("--ruhroh", "./nope.sh"), "--ruhroh: hooks.execute: ruhroh command './nope.sh' not found"),
    ],
)
def test_a_source_that_cannot_run_names_the_source_not_an_unwritten_file(
    rook_workspace, rook_cli, args, needle
):
    # the message began '.../profiles/r1.yaml: hooks.execute: ...', a file never written
    ws = rook_workspace
    r = add(rook_cli, ws, "r1", *args)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert needle in r.stderr and "(nothing written)" in r.stderr
    assert "r1.yaml" not in r.stderr
    assert not (ws.agent_dir / "profiles" / "r1.yaml").exists()


def test_an_openapi_url_that_redirects_resolves_its_servers_against_where_it_is(
    rook_workspace, rook_cli, authoring_server
):
    # the document was fetched through the redirect, but its relative server URL
    # ("/") was resolved against the URL given, a host that does not serve the API
    from urllib.parse import quote

    from servers.authoring_server import AuthoringServer

    api = AuthoringServer().start()
    try:
        ws = rook_workspace
        source = f"{authoring_server.url}/moved/to?url={quote(api.url + '/openapi.json')}"
        r = add(rook_cli, ws, "desk", "--from", source)
        assert r.exit_code == 0, r.stdout + r.stderr
        hooks = profile(ws, "desk")["hooks"]
        assert hooks["open"]["http"]["url"] == f"{api.url}/api/sessions"
        assert api.seen("POST", "/api/sessions")  # the test reached the API's host
    finally:
        api.stop()


def test_a_url_whose_body_never_ends_is_read_for_30_seconds_at_most(
    rook_workspace, rook_cli, authoring_server, monkeypatch
):
    # 'reading URL (GET, up to 30 s)', and then it read forever: the whole body was
    # taken in (also past any size) before a byte of it was looked at. The deadline
    # is authoring_loop.FETCH_TIMEOUT (30 s, as the docs say); the test waits 2 s of it
    from rook_core import authoring_loop

    assert authoring_loop.FETCH_TIMEOUT == 30.0
    monkeypatch.setattr(authoring_loop, "FETCH_TIMEOUT", 2.0)
    ws = rook_workspace
    r = add(rook_cli, ws, "slow", "--no-test", "--from", f"{authoring_server.url}/endless")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "(GET, up to 2 s)" in r.stderr
    assert "no answer to GET (no complete answer within 2 s); trying it as an endpoint" in (
        r.stderr
    )
    assert (ws.agent_dir / "profiles" / "slow.yaml").exists()


@pytest.mark.parametrize("joiner", ["\n", " && ", "; "])
def test_two_curl_commands_are_refused_as_two(rook_workspace, rook_cli, joiner):
    # a token request, then the chat request (as API docs show them) were read as one
    # command: both -d bodies joined, refused as 'the cURL body is declared as JSON
    # but is not valid JSON' (or, without a Content-Type, written as one mixed form)
    ws = rook_workspace
    text = (
        "curl -X POST https://example.invalid/token -d 'client_id=x&client_secret=cs-123456789'"
        + joiner
        + "curl https://example.invalid/ask -H 'Content-Type: application/json' "
        "-d '{\"message\": \"hi\"}'"
    )
    r = add(rook_cli, ws, "two", "--no-test", input=text)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "more than one cURL command" in r.stderr
    assert "cs-123456789" not in r.stdout + r.stderr
    assert not (ws.agent_dir / "profiles" / "two.yaml").exists()


def test_an_openapi_url_with_a_password_never_writes_it(rook_workspace, rook_cli, authoring_server):
    # the document's relative server URL was resolved against the URL given, password
    # and all: 'url: http://bob:PASSWORD@host/api/sessions' went into the profile file
    ws = rook_workspace
    host = authoring_server.url.split("//", 1)[1]
    password = "doc-pw-" + "8" * 12
    r = add(rook_cli, ws, "desk", "--from", f"http://bob:{password}@{host}/openapi.json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert_nowhere(ws, password)
    assert password not in r.stdout + r.stderr
    http = profile(ws, "desk")["hooks"]["open"]["http"]
    assert http["url"] == f"http://{host}/api/sessions"
    assert http["headers"]["Authorization"].startswith("Basic {{env.")


def test_a_base_url_with_a_query_keeps_the_path_before_it(rook_workspace, rook_cli, tmp_path):
    """``--base-url 'http://h/api?x=1'`` wrote ``http://h/api?x=1/v2/ask``: the
    operation's path went after the query, so every request missed the API."""
    ws = rook_workspace
    import json

    from servers.authoring_server import MANY

    doc = tmp_path / "api.json"
    doc.write_text(json.dumps(MANY))
    r = add(rook_cli, ws, "q", "--from", str(doc), "--operation", "askV2", "--base-url",
            "http://127.0.0.1:9/api/?x=1#top", "--no-test")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert profile(ws, "q")["hooks"]["execute"]["http"]["url"] == "http://127.0.0.1:9/api/v2/ask?x=1"


def test_the_next_step_of_a_profile_that_is_not_active_names_it(rook_workspace, rook_cli):
    """Another profile is active: plain `rook run` would test that one, so the next
    step after adding a second profile names the new one (--profile, or profile use)."""
    ws = rook_workspace
    w = f" -w {ws.root}"  # the workspace it was given: the commands work as printed
    cmd = f"{sys.executable} {AGENTS / 'cli_agent.py'}"
    r = add(rook_cli, ws, "first", "--command", cmd)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "active profile: first" in r.stdout
    assert f"then: rook run{w}\n" in r.stdout
    r = add(rook_cli, ws, "second", "--command", cmd)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "active profile: second" not in r.stdout
    assert f"then: rook run{w} --profile second (or rook profile use second{w})" in r.stdout
    r = add(rook_cli, ws, "third", "--command", cmd, "--use")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "active profile: third" in r.stdout and f"then: rook run{w}\n" in r.stdout


@pytest.mark.parametrize("damage", ["not utf-8", "a folder"])
def test_a_damaged_active_file_is_refused_before_the_profile_is_written(
    rook_workspace, rook_cli, damage
):
    """profiles/active holding bytes that are not UTF-8, or a folder there: the
    profile and its script were written, then rook profile add ended with 'a
    file Rook reads is not UTF-8 text' (exit 2, naming no file) or 'cannot write
    .../active: Is a directory' (exit 1). It is refused first, as rook run and
    rook profile list refuse it, naming the file; nothing is written."""
    ws = rook_workspace
    active = ws.agent_dir / "profiles" / "active"
    active.parent.mkdir(parents=True, exist_ok=True)
    if damage == "a folder":
        active.mkdir()
    else:
        active.write_bytes(b"\xff\xfe\x00local")
    r = add(rook_cli, ws, "p", "--command", "cat", "--no-test")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"rook: error: {active}: not " in r.stderr
    assert "write the id of the active profile in it" in r.stderr
    assert not (ws.agent_dir / "profiles" / "p.yaml").exists()
    assert not (ws.agent_dir / "scripts" / "p-hook.py").exists()


def test_a_url_alone_on_standard_input_is_told_to_come_as_from_url(
    rook_workspace, rook_cli, tmp_path
):
    """pbpaste | rook profile add, with a URL copied: the text is no cURL command, and
    the message says to give the URL with --from (without echoing it: a key may be in it)."""
    ws = rook_workspace
    url = "https://api.example.invalid/ask?key=sk-abcdefghijklmnopqrstuv"
    r = add(rook_cli, ws, "u", input=url + "\n")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "standard input: it holds a URL alone; give it as --from URL" in r.stderr
    assert "sk-abcdefghijklmnopqrstuv" not in r.stdout + r.stderr
    held = tmp_path / "url.txt"
    held.write_text(url + "\n")
    r = add(rook_cli, ws, "u", "--from", str(held))
    assert r.exit_code == 2 and "url.txt: it holds a URL alone; give it as --from URL" in r.stderr
    assert not (ws.agent_dir / "profiles" / "u.yaml").exists()


def test_an_empty_answer_is_pointed_out(rook_workspace, rook_cli, tmp_path):
    """A command that takes the goal as an argument, not on standard input, answers
    nothing: the test passes, but 'answer: ' alone did not say anything was amiss."""
    ws = rook_workspace
    tool = tmp_path / "argv_tool.py"
    tool.write_text("import sys\nprint(' '.join(sys.argv[1:]))\n")
    r = add(rook_cli, ws, "argv", "--command", f"{sys.executable} {tool}")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: \n" in r.stdout
    assert "the answer is empty: the agent said nothing to the goal" in r.stdout
    assert "standard input" in r.stdout
    r = rook_cli("profile", "test", "argv", "-w", str(ws.root))
    assert "the answer is empty" in r.stdout, r.stdout + r.stderr
    r = add(rook_cli, ws, "cli", "--command", f"{sys.executable} {AGENTS / 'cli_agent.py'}")
    assert r.exit_code == 0 and "the answer is empty" not in r.stdout


def test_another_profile_s_secret_in_a_source_is_refused(
    rook_workspace, rook_cli, tmp_path, authoring_server
):
    """rook profile add --command 'tool VALUE', VALUE the env value of another
    profile of the agent, wrote it into scripts/<id>-hook.py (while the screen
    showed it redacted): only the secrets the source held were checked against
    the files; a URL holding it ended, after the tests, in 'would reach the
    profile' (exit 1). Both are refused before any test (exit 2, nothing
    written), naming the variable, never its value."""
    ws = rook_workspace
    value = "main-Tok3n-7781x"
    ws.profile({"id": "main", "hooks": {"execute": "scripts/none.sh"},
                "env": [{"variable": "MAIN_TOKEN", "purpose": "the agent's token"}]})
    tool = tmp_path / "tool.sh"
    tool.write_text('#!/bin/bash\ncat >/dev/null\necho "hello from $1" > "$0.ran"\necho hi\n')
    tool.chmod(0o755)
    r = add(rook_cli, ws, "x", "--command", f"{tool} {value}", env={"MAIN_TOKEN": value})
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "MAIN_TOKEN" in r.stderr and "nothing written" in r.stderr, r.stderr
    assert value not in r.stdout + r.stderr
    assert_nowhere(ws, value)
    assert not (ws.agent_dir / "profiles" / "x.yaml").exists()
    assert not (tmp_path / "tool.sh.ran").exists()  # refused before any test
    sent = len(authoring_server.seen("POST", "/echo"))
    r = add(rook_cli, ws, "y", "--from", f"{authoring_server.url}/echo?say={value}",
            env={"MAIN_TOKEN": value})
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "value of MAIN_TOKEN" in r.stderr and "{{env.MAIN_TOKEN}}" in r.stderr, r.stderr
    assert value not in r.stdout + r.stderr
    assert_nowhere(ws, value)
    assert len(authoring_server.seen("POST", "/echo")) == sent  # refused before the test
    # a Ruhroh command line is kept in the profile as written: the wrapper reads it instead
    r = add(rook_cli, ws, "z", "--ruhroh", f"{tool} {value}", env={"MAIN_TOKEN": value})
    assert r.exit_code == 2 and "value of MAIN_TOKEN" in r.stderr, r.stdout + r.stderr
    assert "let the program read it from its environment" in r.stderr, r.stderr
    assert value not in r.stdout + r.stderr
    assert_nowhere(ws, value)


def test_an_agent_that_is_not_running_is_told_to_be_started_not_fixed(rook_workspace, rook_cli):
    """profile add of a cURL command whose agent is not running (nothing listens
    at its address) said 'the profile does not work yet; next: rook profile fix
    NAME --what ...', and profile test sent the user to rook profile fix: no
    repair helps an agent that is not running."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ws = rook_workspace
    curl = f"curl http://127.0.0.1:{port}/ask -H 'Content-Type: application/json' -d '{{\"q\": \"hi\"}}'"
    r = add(rook_cli, ws, "down", input=curl)
    assert r.exit_code == 1, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert "rook profile fix" not in said, said
    assert f"nothing answered at 127.0.0.1:{port}" in said, said
    assert "start the agent" in said and "then: rook profile test down" in said, said
    t = rook_cli("profile", "test", "down", "-w", str(ws.root))
    assert t.exit_code == 1 and "rook profile fix" not in t.stdout + t.stderr, t.stdout
    assert "next: start the agent" in t.stdout, t.stdout
    f = rook_cli("profile", "fix", "down", "-w", str(ws.root))
    assert f.exit_code == 1 and "next: start the agent" in f.stdout, f.stdout + f.stderr


@pytest.mark.parametrize(
    ("command", "pid"),
    [
        ("python3 agent.py", "agent"),
        ("python3 -u tools/order_desk.py --verbose", "order_desk"),
        ("env OPENAI_API_KEY=sk-x python3 agent.py", "agent"),
        ("python -m desk.server", "server"),
        ("node dist/agent.js", "agent"),
        ("bash ./run-agent.sh", "run-agent"),
        ("uv run agent.py", "agent"),
        ("uv run python bot.py", "bot"),
        ("npx @acme/desk-agent --port 1", "desk-agent"),
        ("npx tsx src/agent.ts", "agent"),
        ("claude -p", "claude"),
        ("./bin/claude -p", "claude"),
        ("python3 -c 'print(1)'", "python3"),
        # Windows' Python launcher, and uv's tool runner (three words)
        ("py -3 agent.py", "agent"),
        ("py.exe agent.py", "agent"),
        ("uv tool run desk-agent", "desk-agent"),
    ],
)
def test_with_no_name_a_command_running_a_script_names_the_profile_after_the_script(
    rook_workspace, rook_cli, command, pid
):
    """`rook profile add --command 'python3 agent.py'` with no NAME: the profile is
    the agent's, `agent`, not the interpreter's, `python3` (every Python command
    would get the same id). A program run directly keeps its own name."""
    from rook_core.authoring import Source

    assert Source(kind="command", text=command).program_name() == pid
    ws = rook_workspace
    if command == "python3 agent.py":
        (ws.root / "agent.py").write_text("print('hi')\n")
        r = add(rook_cli, ws, "--command", command, "--no-test")
        assert r.exit_code == 0, r.stdout + r.stderr
        assert (ws.agent_dir / "profiles" / "agent.yaml").is_file(), r.stdout


@pytest.mark.parametrize(
    "body", ["--json '\"Where is ORD-1?\"'", "-H 'Content-Type: application/json' -d '\"hi there\"'"]
)
def test_a_curl_body_that_is_a_bare_json_string_is_refused_not_sent_as_text(
    rook_workspace, rook_cli, authoring_server, body
):
    """`curl --json '"hello"'` sends the JSON document "hello" (quotes and all, as
    application/json). The profile was `body: '{{goal}}'`, which an http: entry sends
    as text: the agent got `hello` as text/plain, a different request, and the test
    said ok. No http: entry sends a JSON string, so the command is refused, naming why."""
    ws = rook_workspace
    r = add(rook_cli, ws, "str", input=f"curl {authoring_server.url}/echo {body}")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "the cURL body is a JSON string, not an object or a list" in r.stderr
    assert "an http: entry sends a string body as text" in r.stderr
    assert not (ws.agent_dir / "profiles" / "str.yaml").exists()
    assert authoring_server.seen("POST", "/echo") == []


@pytest.mark.parametrize("cont", [" ^\r\n", " ^\n", " `\n"])
def test_a_curl_command_with_windows_line_continuations_is_read_whole(
    rook_workspace, rook_cli, authoring_server, cont
):
    """API docs show cmd.exe's `^` (and PowerShell's backtick) at line ends. With the
    URL on a later line, the `^` was taken for the URL ("the cURL URL '^': must be an
    http:// or https:// URL"), and `curl.exe` was no cURL command at all."""
    ws = rook_workspace
    program = "curl.exe" if "`" in cont else "curl"
    text = cont.join(
        [
            program,
            "  -X POST",
            f"  {authoring_server.url}/echo",
            '  -H "Content-Type: application/json"',
            '  -d "{\\"message\\": \\"Where is ORD-1?\\"}"',
        ]
    )
    r = add(rook_cli, ws, "win", input=text + cont.rstrip(" ^`\r\n") + "\r\n")
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "win")["hooks"]["execute"]["http"]
    assert http["url"] == f"{authoring_server.url}/echo"
    assert http["body"] == {"message": "{{goal}}"}
    sent = authoring_server.seen("POST", "/echo")[-1]
    assert sent["json"] == {"message": "Say hello in one short sentence."}


def test_a_curl_command_copied_from_a_browser_for_cmd_is_read(
    rook_workspace, rook_cli, authoring_server
):
    """A browser's 'Copy as cURL (cmd)' escapes every quote and brace with `^`."""
    ws = rook_workspace
    text = (
        f'curl ^"{authoring_server.url}/echo^" ^\r\n'
        '  -H ^"accept: */*^" ^\r\n'
        '  -H ^"content-type: application/json^" ^\r\n'
        '  --data-raw ^"^{^\\^"message^\\^":^\\^"Where is ORD-1?^\\^"^}^"\r\n'
    )
    r = add(rook_cli, ws, "cmd", input=text)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "cmd")["hooks"]["execute"]["http"]
    assert http["url"] == f"{authoring_server.url}/echo"
    assert http["body"] == {"message": "{{goal}}"}
    assert http["headers"] == {"accept": "*/*"}


def test_a_curl_command_copied_from_a_browser_for_bash_with_ansi_c_quotes_is_read(
    rook_workspace, rook_cli, authoring_server
):
    """A browser's 'Copy as cURL (bash)' writes a value holding ', !, a newline (and,
    Firefox, any non-ASCII character) in bash's ANSI-C quotes, `$'...'`: such a
    command was 'not a cURL command' ("Rook cannot tell what this is")."""
    ws = rook_workspace
    text = (
        f"curl '{authoring_server.url}/echo' \\\n"
        "  -H 'accept: */*' \\\n"
        "  -H 'content-type: application/json' \\\n"
        "  -H $'x-note: Bob\\'s' \\\n"
        "  --data-raw $'{\"message\":\"Where\\'s ORD-1\\u0021\\\\nThanks\"}' \\\n"
        "  --compressed\n"
    )
    r = add(rook_cli, ws, "bash", input=text)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "bash")["hooks"]["execute"]["http"]
    assert http["url"] == f"{authoring_server.url}/echo"
    assert http["body"] == {"message": "{{goal}}"}
    assert http["headers"] == {"accept": "*/*", "x-note": "Bob's"}
    sent = authoring_server.seen("POST", "/echo")[-1]
    assert sent["json"] == {"message": "Say hello in one short sentence."}


@pytest.mark.parametrize(
    "body",
    [
        "-F message=hi",
        "-H 'content-type: multipart/form-data; boundary=----WebKitFormBoundaryAbC123' "
        "--data-raw $'------WebKitFormBoundaryAbC123\\r\\nContent-Disposition: form-data; "
        "name=\"message\"\\r\\n\\r\\nhi\\r\\n------WebKitFormBoundaryAbC123--\\r\\n'",
    ],
)
def test_a_multipart_curl_command_is_refused(rook_workspace, rook_cli, authoring_server, body):
    """A browser's copy of a form upload sends the multipart body with --data-raw
    (in $'...', for its CRLFs): the whole body became {{goal}}, still labelled
    multipart/form-data, which no server reads. Refused like -F, nothing written."""
    ws = rook_workspace
    r = add(rook_cli, ws, "mp", input=f"curl '{authoring_server.url}/echo' {body}\n")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "multipart" in r.stderr and "send the message as JSON or form data" in r.stderr
    assert not (ws.agent_dir / "profiles" / "mp.yaml").exists()
    assert authoring_server.seen("POST", "/echo") == []


@pytest.mark.parametrize(
    "program",
    [
        "C:\\tools\\curl.exe",
        '"C:\\Program Files\\curl\\bin\\curl.exe"',
        "C:\\Users\\me>curl.exe",
        "C:\\Users\\me>C:\\tools\\curl.exe",
    ],
)
def test_a_curl_command_naming_curl_by_its_windows_path_is_read(
    rook_workspace, rook_cli, authoring_server, program
):
    """docs/profiles.md: curl.exe "also by its path, C:\\tools\\curl.exe", and with
    cmd.exe's prompt pasted before it. The parser read them, but no author claimed
    them: 'Rook cannot tell what this is'."""
    ws = rook_workspace
    text = f'{program} {authoring_server.url}/echo -H "Content-Type: application/json" -d "{{\\"message\\": \\"hi\\"}}"\r\n'
    r = add(rook_cli, ws, "win", input=text)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "win")["hooks"]["execute"]["http"]
    assert http["url"] == f"{authoring_server.url}/echo"
    assert http["body"] == {"message": "{{goal}}"}


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_curl_command_that_cannot_be_split_says_so(
    rook_workspace, rook_cli, authoring_server, how, tmp_path
):
    """A cURL command with a quote left open (a paste cut short) was 'Rook cannot tell
    what this is (not a cURL command, ...)': it is one, and the message says what is
    wrong with it."""
    ws = rook_workspace
    text = f"curl '{authoring_server.url}/echo \\\n  -d '{{\"message\": \"hi\"}}'\n"
    if how == "file":
        (tmp_path / "call.txt").write_text(text)
        r = add(rook_cli, ws, "cut", "--from", str(tmp_path / "call.txt"))
        label = "call.txt"
    else:
        r = add(rook_cli, ws, "cut", input=text)
        label = "standard input"
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "cannot tell what this is" not in r.stderr
    assert f"{label}: the cURL command cannot be split like a shell would" in r.stderr, r.stderr
    assert not (ws.agent_dir / "profiles" / "cut.yaml").exists()
    assert authoring_server.seen("POST", "/echo") == []


def test_a_url_given_where_the_name_goes_is_read_as_the_source(
    rook_workspace, rook_cli, authoring_server
):
    """`rook profile add http://host/chat`, the URL typed as NAME with no source:
    it said 'give a source: --from FILE|URL ...' with no word of the URL typed. A
    NAME that is a URL, with no source beside it, is read as `--from URL`."""
    ws = rook_workspace
    r = add(rook_cli, ws, f"{authoring_server.url}/jsononly")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"note: {authoring_server.url}/jsononly is a URL, not a name: read as --from" in (
        r.stderr
    )
    (written,) = (ws.agent_dir / "profiles").glob("*.yaml")
    http = profile(ws, written.stem)["hooks"]["execute"]["http"]
    assert http["url"] == f"{authoring_server.url}/jsononly"
    assert http["body"] == {"message": "{{goal}}"}
    # beside a source, a NAME is a name, whatever it looks like
    r = add(rook_cli, ws, "https://x.example/a", "--command", "printf hi", "--no-test")
    assert r.exit_code == 0 and "is a URL, not a name" not in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ("""-H 'Content-Type: application/json' -d '{"model": "m", "prompt": "'"$PROMPT"'"}'""", "prompt"),
        ("""--json '{"model": "m", "messages": [{"role": "user", "content": "$QUESTION"}]}'""", None),
        ('-d "message=$MESSAGE" -d "user=bob"', "message"),
        ('-G -d "q=$QUERY" -d limit=5', "q"),
        ("'?q=$QUERY&limit=5'", "q"),
    ],
)
def test_a_shell_variable_where_the_message_goes_takes_the_goal(
    rook_workspace, rook_cli, authoring_server, data, field
):
    """Docs' scripts put the message in a variable (`"prompt": "'"$PROMPT"'"`). It was
    declared as an env secret that every run needed, and the goal went into `model`:
    each test sent the goal as the model's name and the variable as the prompt."""
    ws = rook_workspace
    curl = f"curl {authoring_server.url}/echo {data}"
    if data.startswith("'?"):  # the query written in the URL
        curl = f"curl '{authoring_server.url}/echo{data[1:]}"
    env = {"PROMPT": "Hi there", "QUESTION": "Hi there", "MESSAGE": "Hi there", "QUERY": "Hi"}
    query = "-G" in data or data.startswith("'?")  # /echo's GET answer is no answer
    r = add(rook_cli, ws, "shell", *(["--no-test"] if query else []), input=curl, env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    data = profile(ws, "shell")
    http = data["hooks"]["execute"]["http"]
    assert "env" not in data, data
    if field is None:
        assert http["body"]["messages"][0]["content"] == "{{goal}}"
        assert http["body"]["model"] == "m"
    else:
        sent = http.get("form") or http.get("query") or http["body"]
        assert sent[field] == "{{goal}}", http
        assert sent.get("model", "m") == "m" and sent.get("user", "bob") == "bob"
        assert sent.get("limit", "5") == "5"
    assert "the goal goes where your command has $" in r.stdout, r.stdout


def test_a_body_and_headers_in_files_are_read_as_curl_reads_them(
    rook_workspace, rook_cli, authoring_server, tmp_path, monkeypatch
):
    """API docs write `--data @body.json` and `-H @headers.txt`; both were refused
    ('Rook cannot read a file the command refers to'). curl reads them from the
    current directory: -d strips the file's line ends, --data-binary keeps them, a
    header file holds a header a line. A key in either moves to env as one inline."""
    ws = rook_workspace
    monkeypatch.chdir(tmp_path)
    key = authoring_server.api_key
    (tmp_path / "body.json").write_text(
        '{\r\n  "model": "gpt-4o",\r\n  "messages": [{"role": "user", "content": "Hello!"}]\r\n}\r\n'
    )
    (tmp_path / "headers.txt").write_text(
        f"Authorization: Bearer {key}\nContent-Type: application/json\n\nX-Team: desk\n"
    )
    curl = f"curl {authoring_server.url}/v1/chat/completions -H @headers.txt --data @body.json"
    r = add(rook_cli, ws, "files", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "files")["hooks"]["execute"]["http"]
    assert http["headers"] == {"Authorization": "Bearer {{env.AGENT_API_TOKEN}}", "X-Team": "desk"}
    assert http["body"] == {"model": "gpt-4o", "messages": [{"role": "user", "content": "{{goal}}"}]}
    sent = authoring_server.seen("POST", "/v1/chat/completions")[-1]
    assert sent["headers"]["Authorization"] == f"Bearer {key}"
    assert key not in r.stdout + r.stderr
    assert_nowhere(ws, key)
    # --data-binary keeps the file as it is: text with its newline
    (tmp_path / "note.txt").write_text("Where is ORD-1?\n")
    r = add(rook_cli, ws, "text", "--no-test", input=f"curl {authoring_server.url}/echo "
            "-H 'Content-Type: text/plain' --data-binary @note.txt")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(ws, "text")["hooks"]["execute"]["http"]["body"] == "{{goal}}"
    for option, said in (
        ("-d @nowhere.json", "-d @nowhere.json: nowhere.json: no such file"),
        ("-H @nowhere.txt", "-H @nowhere.txt: nowhere.txt: no such file"),
        ("-d @-", "-d @-: reads standard input"),
    ):
        r = add(rook_cli, ws, "gone", "--no-test", input=f"curl {authoring_server.url}/echo {option}")
        assert r.exit_code == 2 and said in r.stderr, r.stdout + r.stderr
        assert not (ws.agent_dir / "profiles" / "gone.yaml").exists()


def test_a_url_whose_body_is_gzipped_twice_is_read_with_memory_bounded(
    rook_workspace, agent_server
):
    # --from URL read the body through httpx, which undoes a layer a whole network read
    # at a time: 2 KB on the wire (1 GiB gzipped twice) took 2 GB before FETCH_LIMIT
    from peak import run_rook
    from servers.agent_server import _bomb

    _bomb(512, 2)  # made before rook starts
    proc, err, peak_mib = run_rook(
        "profile", "add", "bomb", "-w", str(rook_workspace.root), "--from",
        f"{agent_server.url}/bomb?mib=512&layers=2", timeout=300,
    )  # fmt: skip
    assert "Traceback" not in err, err[-2000:]
    assert f"reading {agent_server.url}/bomb" in err, err[-2000:]
    assert peak_mib < 300, f"rook took {peak_mib:.0f} MiB to read a body it reads 5 MiB of"


class AcmeUriAuthor:
    """A plugin's author of ``acme://DESK`` sources (an organisation's own scheme)."""

    def detect(self, source):
        return 0.9 if source.kind == "url" and (source.url or "").startswith("acme://") else 0.0

    def suggest_name(self, source):
        return source.url.removeprefix("acme://").split("/")[0]

    def write(self, request):
        from rook_core.authoring import Draft

        desk = request.source.url.removeprefix("acme://")
        script = {"scripts/acme.sh": "#!/bin/sh\necho '{\"output\": \"hi\"}'\n"}
        return Draft(hooks={"execute": "scripts/acme.sh"}, files=script,
                     hook_env={"ACME_DESK": desk})


def test_a_plugin_author_reads_a_url_of_its_own_scheme(rook_plugin, rook_workspace, rook_cli):
    """author.md: ``--from acme://desk`` (a URL of a scheme Rook does not fetch) is a
    ``url`` source, not fetched (``text`` empty, ``status`` None), for an author of
    that scheme to claim; with none installed, the refusal says no author reads it,
    never 'no such file'."""
    from rook_core.hookspecs import hookimpl

    r = add(rook_cli, rook_workspace, "desk", "--from", "acme://support?key=s3cr3t", "--no-test")
    assert r.exit_code == 2, r.stdout
    assert "no such file" not in r.stderr
    assert "--from acme://support: no installed author reads acme:// URLs" in r.stderr
    assert "s3cr3t" not in r.stderr

    class Plugin:
        @hookimpl
        def rook_register_authors(self, register):
            register("acme", AcmeUriAuthor())

    rook_plugin(Plugin())
    r = add(rook_cli, rook_workspace, "--from", "acme://support/v2", "--no-test")
    assert r.exit_code == 0, r.stderr
    assert "author: acme (" in r.stdout
    assert profile(rook_workspace, "support")["hook_env"] == {"ACME_DESK": "support/v2"}


class NamelessAuthor(AcmeUriAuthor):
    """An author with no ``suggest_name`` (it is optional)."""

    suggest_name = None


def test_a_profile_named_after_the_agent_is_said_so_when_its_name_is_taken(
    rook_plugin, rook_workspace, rook_cli
):
    """An author without suggest_name: the profile is named after the agent. A second
    add without NAME was refused saying the profile 'was named after its source', which
    named nothing of the kind; it says the agent's name was used, and why."""
    from rook_core.hookspecs import hookimpl

    class Plugin:
        @hookimpl
        def rook_register_authors(self, register):
            register("nameless", NamelessAuthor())

    rook_plugin(Plugin())
    r = add(rook_cli, rook_workspace, "--from", "acme://support", "--no-test")
    assert r.exit_code == 0, r.stderr
    assert (rook_workspace.agent_dir / "profiles" / "agent.yaml").is_file()
    r = add(rook_cli, rook_workspace, "--from", "acme://support", "--no-test")
    assert r.exit_code == 2, r.stdout
    assert "after its source" not in r.stderr
    assert (
        "no NAME was given, so the profile was named 'agent' after the agent (the 'nameless' "
        "author found no name in its source): give it a name of its own"
    ) in r.stderr


class Boom(BaseException):
    """An author's own exception: neither Exception nor SystemExit."""


class LeavingAuthor(AcmeUriAuthor):
    def __init__(self, where, how):
        self.where, self.how = where, how

    def leave(self, code):
        if self.how == "SystemExit":
            sys.exit(code)
        raise Boom(code)

    def detect(self, source):
        if self.where == "detect":
            self.leave(0)
        return super().detect(source)

    def suggest_name(self, source):
        if self.where == "suggest_name":
            self.leave(0)
        return super().suggest_name(source)

    def write(self, request):
        if self.where == "write":
            self.leave(0)
        return super().write(request)


@pytest.mark.parametrize("how", ["SystemExit", "Boom"])
@pytest.mark.parametrize("where", ["detect", "suggest_name", "write"])
def test_a_plugin_author_that_calls_sys_exit_is_named_never_exit_0(
    rook_plugin, rook_workspace, rook_cli, where, how
):
    """An author's detect or write calling sys.exit(0) (SystemExit, no Exception)
    ended rook profile add with exit 0 and nothing written nor said; raising an
    exception of its own derived from BaseException, with a traceback. Either is
    the author's failure, named, as any exception it raises (exit 2)."""
    from rook_core.hookspecs import hookimpl

    class Plugin:
        @hookimpl
        def rook_register_authors(self, register):
            register("leaving", LeavingAuthor(where, how))

    rook_plugin(Plugin())
    r = add(rook_cli, rook_workspace, "--from", "acme://support", "--no-test")
    assert r.exit_code == 2 and r.exception is None, r.stdout
    assert "author " in r.stderr and f"{how}: 0" in r.stderr, r.stderr
