"""Acceptance checks of SPEC §8 and §9 that no other test file held: `rook profile
add` and `fix` meeting what real endpoints answer, through real servers on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from authoring import add, profile

pytest_plugins = ["servers.fixtures"]


def _events(*payloads, named=False):
    """An event stream of ``payloads``; ``named``: each under its ``type`` as its
    ``event:`` name, as Anthropic's Messages API streams them."""
    name = (lambda p: f"event: {p['type']}\n") if named else (lambda p: "")
    return b"".join(f"{name(p)}data: {json.dumps(p)}\n\n".encode() for p in payloads)


# A stream of text pieces in events of the endpoint's own shape (not OpenAI's chat
# chunks): the answer is every piece joined, never one piece alone.
STREAMS = {
    "pieces": (
        _events({"delta": "Hello there,"}, {"delta": " friend"}, {"delta": "."}) + b"data: [DONE]\n\n",
        "join('', events[].delta)",
    ),
    "anthropic": (
        _events(
            {"type": "message_start", "message": {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "role": "assistant"}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello there,"}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " friend"}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "."}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ),
        "join('', events[].delta.text)",
    ),
    "growing": (
        _events({"text": "Hello"}, {"text": "Hello there,"}, {"text": "Hello there, friend."}),
        "events[].text | [-1]",
    ),
    # Gemini's streamGenerateContent?alt=sse: each piece inside lists; was the last alone
    "gemini": (
        _events(
            *({"candidates": [{"content": {"parts": [{"text": t}], "role": "model"}}]}
              for t in ("Hello there,", " friend")),
            {"candidates": [{"content": {"parts": [{"text": "."}], "role": "model"},
                             "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}},
        ),
        "join('', events[].candidates[0].content.parts[0].text)",
    ),
}


@pytest.mark.parametrize("kind", sorted(STREAMS))
def test_an_answer_streamed_in_pieces_of_the_endpoints_own_shape_is_joined(
    rook_workspace, rook_cli, authoring_server, kind
):
    ws = rook_workspace
    stream, path = STREAMS[kind]
    authoring_server.streams[kind] = stream
    curl = f"curl -N {authoring_server.url}/stream/{kind} --json '{{\"message\": \"hi\"}}'"
    r = add(rook_cli, ws, "streamed", input=curl)
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert "answer: Hello there, friend." in out
    assert f"changed: the answer is under {path}" in out
    assert profile(ws, "streamed")["hooks"]["execute"]["http"]["extract"]["output"] == path


@pytest.mark.parametrize("name", ["desk.sh", "desk.py", "argv.py"])
def test_a_script_that_reads_its_phase_but_prints_plain_text_keeps_its_answer(
    rook_workspace, rook_cli, name
):
    """A script written for the phase argument (`desk.sh execute`) that prints its
    answer as plain text, not the hook contract's JSON: wrapped, it still gets the
    argument it answered to, and the answer is the text it printed, not nothing; also
    one that fails without the argument, as `sys.argv[1]` does (IndexError), which was
    left wrapped without it, so the profile written failed every turn. Such a script
    (it names its execute phase) is wrapped with the argument at once."""
    ws = rook_workspace
    text = {
        "desk.sh": '[ "$1" = execute ] || exit 0\nread -r goal\necho "plain answer to $goal"\n',
        "desk.py": "import sys\nif sys.argv[1:] == ['execute']:\n"
        "    print('plain answer to ' + sys.stdin.read())\n",
        "argv.py": "import sys\nif sys.argv[1] == 'execute':\n"
        "    print('plain answer to ' + sys.stdin.read())\n",
    }[name]
    (ws.root / name).write_text(text)
    r = add(rook_cli, ws, "desk", "--from", str(ws.root / name))
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert "answer: plain answer to Say hello in one short sentence." in out
    assert f"runs it as the probe did ({name} execute: it reads its phase)" in out, out
    assert "test 2 (script): ok" in out and "test 3" not in out, out
    hook = profile(ws, "desk")["hooks"]["execute"]
    r = rook_cli("profile", "test", "desk", "--workspace", str(ws.root))
    assert r.exit_code == 0 and "answer: plain answer to" in r.stdout, r.stdout + r.stderr
    assert (ws.agent_dir / hook).is_file()


def test_a_script_that_reads_its_phase_and_prints_broken_json_stays_the_hook(
    rook_workspace, rook_cli
):
    """A hook script (it names its execute phase) printing JSON that does not parse is
    a hook with a bug, not a program printing text: it stays the profile's hook, its
    diagnosis says where the JSON broke, for rook profile fix to take over (wrapped,
    it failed without its phase argument, or its broken JSON became the answer)."""
    ws = rook_workspace
    (ws.root / "desk.py").write_text(
        "import sys\nif sys.argv[1] == 'execute':\n    sys.stdin.read()\n    print('{broken json')\n"
    )
    r = add(rook_cli, ws, "desk", "--from", str(ws.root / "desk.py"))
    out = r.stdout + r.stderr
    assert r.exit_code == 1, out
    assert "FAILED (not_json)" in out and "received '{broken json'" in out, out
    assert "wrapped" not in out and "answer: {broken json" not in out, out
    assert profile(ws, "desk")["hooks"] == {"execute": {"script": "desk.py"}}
    assert not (ws.agent_dir / "scripts" / "desk-hook.py").exists()


@pytest.mark.parametrize("source", ["curl", "url"])
def test_a_key_in_the_url_path_moves_to_env_and_is_never_shown(
    rook_workspace, rook_cli, authoring_server, source
):
    """A key written in the URL's path (`/keyed/sk-.../ask`), shaped as a key is
    whatever it is called: moved to env as one in the query is, and `profile show`
    hides one written there by hand."""
    ws = rook_workspace
    key = authoring_server.api_key
    if source == "curl":
        curl = f"curl {authoring_server.url}/keyed/{key}/ask --json '{{\"message\": \"hi\"}}'"
        r = add(rook_cli, ws, "keyed", input=curl)
    else:
        r = add(rook_cli, ws, "keyed", "--from", f"{authoring_server.url}/keyed/{key}/ask")
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert "answer: keyed reply to: Say hello in one short sentence." in out
    url = profile(ws, "keyed")["hooks"]["execute"]["http"]["url"]
    assert url == f"{authoring_server.url}/keyed/{{{{env.AGENT_API_KEY}}}}/ask", url
    assert key not in out
    for path in ws.root.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    ws.profile({"id": "pasted", "hooks": {"execute": {"http": {"url": f"http://127.0.0.1:9/keyed/{key}/ask"}}}})
    r = rook_cli("profile", "show", "pasted", "--workspace", str(ws.root))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert key not in r.stdout + r.stderr and "http://127.0.0.1:9/keyed/[hidden]/ask" in r.stdout


def test_a_response_over_the_cap_names_the_setting_that_raises_it(
    rook_workspace, rook_cli, agent_server
):
    """A body (or event stream) over the output cap fails the hook saying which
    setting raises the cap, as the script and Ruhroh transports say."""
    ws = rook_workspace
    ws.profile(
        {
            "id": "big",
            "limits": {"stdout_bytes": 1024},
            "hooks": {
                "execute": {
                    "http": {
                        "url": f"{agent_server.url}/echo",
                        "body": {"message": "{{goal}}", "padding": "x" * 4000},
                    }
                }
            },
        }
    )
    r = rook_cli("profile", "test", "big", "--workspace", str(ws.root))
    out = r.stdout + r.stderr
    assert r.exit_code == 1, out
    assert "the response body exceeded the 1024-byte cap" in out
    assert "raise limits.stdout_bytes in the profile" in out


def test_an_openapi_document_in_yaml_at_a_url_builds_the_session_profile(
    rook_workspace, rook_cli, authoring_server
):
    """An OpenAPI document served as YAML (as text/plain, as a raw file host serves
    it) is read as the JSON one is: the same session profile, tested."""
    ws = rook_workspace
    r = add(rook_cli, ws, "desk", "--from", f"{authoring_server.url}/openapi.yaml")
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert "author: openapi" in out and "answer: " in out
    hooks = profile(ws, "desk")["hooks"]
    assert hooks["open"]["http"]["extract"] == {"conversation": "session.id"}
    assert hooks["execute"]["http"]["body"] == {"text": "{{goal}}"}
    assert hooks["execute"]["http"]["extract"]["output"] == "data.reply"
    assert hooks["close"]["http"]["method"] == "DELETE"


def test_an_author_agent_answering_the_script_as_plain_text_is_taken(
    rook_workspace, rook_cli, tmp_path
):
    """The author agent's answer may be the script itself, neither fenced nor in a
    JSON object: it becomes the hook script, tested on the real target."""
    import sys

    ws = rook_workspace
    author = tmp_path / "author.py"
    author.write_text(
        "import sys\nsys.stdin.read()\n"
        "print('#!/usr/bin/env python3')\n"
        "print('import json, sys')\n"
        "print('if sys.argv[1] == \"execute\":')\n"
        "print('    print(json.dumps({\"output\": \"plain author: \" + sys.stdin.read()}))')\n"
    )
    r = add(
        rook_cli, ws, "plain", "--notes", "answer every goal politely",
        "--author", f"{sys.executable} {author}",
    )
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert "answer: plain author: Say hello in one short sentence." in out
    hook = profile(ws, "plain")["hooks"]["execute"]
    script = hook if isinstance(hook, str) else hook["script"]
    assert (ws.agent_dir / script).read_text().startswith("#!/usr/bin/env python3\nimport json")


@pytest.mark.parametrize(
    "data, changed",
    [
        ("-d 'message=hi'", "the fields are sent as a JSON body"),
        ("-d '{\"message\": \"hi\"}'", "Content-Type set to JSON"),
    ],
)
def test_a_body_refused_for_its_content_type_is_sent_as_json(
    rook_workspace, rook_cli, authoring_server, data, changed
):
    """A 415 (the server takes JSON only) for a form body, or a JSON body that curl
    labels as a form: corrected once, so the second test passes; never the same
    change announced again and again."""
    ws = rook_workspace
    r = add(rook_cli, ws, "jo", input=f"curl {authoring_server.url}/jsononly {data}")
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert out.count("changed: ") == 1 and changed in out, out
    assert "answer: json reply to: Say hello in one short sentence." in out
    http = profile(ws, "jo")["hooks"]["execute"]["http"]
    assert http["body"] == {"message": "{{goal}}"} and "form" not in http
    assert "application/x-www-form-urlencoded" not in out  # no note left saying it is sent so


def test_a_json_body_refused_for_its_content_type_is_not_changed_in_vain(
    rook_workspace, rook_cli, agent_server
):
    """A JSON body already sent as JSON and refused (415): nothing a content type can
    correct, so no change is announced and tried again."""
    ws = rook_workspace
    agent_server.flaky["ct"] = [(415, {})] * 10
    r = add(rook_cli, ws, "ct", input=f"curl {agent_server.url}/flaky/ct --json '{{\"message\": \"hi\"}}'")
    out = r.stdout + r.stderr
    assert r.exit_code == 1, out
    assert "changed: " not in out and "test 2" not in out, out


def test_show_hides_secrets_pasted_by_hand_into_headers_and_bodies(rook_workspace, rook_cli):
    """Credentials written literally into an http entry's headers (under any of the
    names APIs give them) and body fields, by hand: `show` never prints them."""
    ws = rook_workspace
    headers = {
        "Authorization": "Bearer pasted-61-bearer",
        "x-api-key": "pasted-62-xkey",
        "Cookie": "session=pasted-63-cookie; theme=dark",
        "Proxy-Authorization": "Basic cGFzdGVkOjY0LXB3",
        "X-Auth-Token": "pasted-65-authtoken",
        "api-key": "pasted-66-azure",
    }
    body = {"message": "{{goal}}", "client_secret": "pasted-67-cs", "auth": {"password": "pasted-68-pw"}}
    ws.profile(
        {
            "id": "pasted",
            "hooks": {"execute": {"http": {"url": "http://127.0.0.1:9/x", "headers": headers, "body": body}}},
            "hook_env": {"SERVICE_TOKEN": "pasted-69-hookenv"},
        }
    )
    for args in ((), ("--json",)):
        r = rook_cli("profile", "show", "pasted", *args, "--workspace", str(ws.root))
        assert r.exit_code == 0, r.stdout + r.stderr
        assert "pasted-" not in r.stdout + r.stderr and "cGFzdGVk" not in r.stdout, r.stdout
    assert "theme=dark" not in r.stdout  # the whole Cookie header is hidden, not a part


@pytest.mark.parametrize(
    "segment",
    ["sk%2Dproj7Hq2mZ8vX4", "%73k-proj7Hq2mZ8vX4", "sk-proj7Hq2mZ8vX4:generate", "key=sk-proj7Hq2mZ8vX4"],
)
def test_a_key_in_the_url_path_percent_encoded_or_with_more_text_is_never_shown(rook_workspace, rook_cli, segment):
    """A key-shaped path segment percent-encoded (`sk%2D...`: the same URL to a server),
    or a key with more text in its segment (`/v1/sk-...:generate`), is hidden as a
    plain one is: by `profile show`, and in the message of a --from URL that fails."""
    ws = rook_workspace
    key = "proj7Hq2mZ8vX4"
    url = f"http://127.0.0.1:9/v1/{segment}/ask"
    ws.profile({"id": "pasted", "hooks": {"execute": {"http": {"url": url}}}})
    r = rook_cli("profile", "show", "pasted", "--workspace", str(ws.root))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert key not in r.stdout + r.stderr and "http://127.0.0.1:9/v1/" in r.stdout
    r = add(rook_cli, ws, "keyed", "--from", url)
    assert r.exit_code != 0 and "127.0.0.1:9" in r.stdout + r.stderr
    assert key not in r.stdout + r.stderr


def test_an_answer_streamed_in_one_event_is_extracted_so_that_more_pieces_join(
    rook_workspace, rook_cli, authoring_server
):
    """A stream of the endpoint's own shape that sent its short test answer in one
    event (`{"delta": "Hello there, friend."}`) sends a longer one in pieces: the
    extraction joins every event's piece, never the first event's alone."""
    ws = rook_workspace
    authoring_server.streams["one"] = _events({"delta": "Hello there, friend."}) + b"data: [DONE]\n\n"
    curl = f"curl -N {authoring_server.url}/stream/one --json '{{\"message\": \"hi\"}}'"
    r = add(rook_cli, ws, "streamed", input=curl)
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert "answer: Hello there, friend." in out
    authoring_server.streams["one"] = STREAMS["pieces"][0]
    r = rook_cli("profile", "test", "streamed", "--workspace", str(ws.root))
    assert r.exit_code == 0 and "answer: Hello there, friend." in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("headers", [{"Content-Type": "text/plain"}, {}])
def test_a_json_text_body_refused_for_its_content_type_is_sent_as_json(
    rook_workspace, rook_cli, authoring_server, headers
):
    """A body written as JSON text (`body: '{"message": "hi"}'`, no placeholder in
    it) labelled text/plain and refused (415): `fix` sends it as JSON, as a
    structured body labelled otherwise is sent."""
    ws = rook_workspace
    http = {"url": f"{authoring_server.url}/jsononly", "headers": headers, "body": '{"message": "hi"}'}
    ws.profile({"id": "jt", "hooks": {"execute": {"http": http}}})
    r = rook_cli("profile", "fix", "jt", "--workspace", str(ws.root))
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert out.count("changed: ") == 1 and "Content-Type set to JSON, the body written as JSON" in out, out
    assert "answer: json reply to: hi" in out
    fixed = profile(ws, "jt")["hooks"]["execute"]["http"]
    assert fixed["body"] == {"message": "hi"} and fixed["headers"] == {"Content-Type": "application/json"}


@pytest.mark.parametrize("named", [False, True], ids=["data-only", "event-names"])
def test_token_usage_of_an_anthropic_stream_is_the_final_count_not_the_first_events(
    rook_workspace, rook_cli, authoring_server, named
):
    """Anthropic's stream sends usage twice: message_start's (output_tokens 1, a
    placeholder) and message_delta's, the count for the whole answer, last. The
    profile read events[0].message.usage.output_tokens: every answer cost 1 output
    token, so a max_tokens criterion passed whatever the agent wrote. With each event
    under its name (event: content_block_delta), as the API sends them, the answer was
    one piece (events[31].delta.text) and the usage message_start's: the stream's
    by_event made it no stream to the answer finders."""
    ws = rook_workspace
    words = [f" word{i}" for i in range(30)]  # more events than the first ten
    authoring_server.streams["usage"] = _events(
        {"type": "message_start", "message": {"id": "msg_1", "role": "assistant",
         "usage": {"input_tokens": 25, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}
          for w in words),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 31}},
        {"type": "message_stop"},
        named=named,
    )
    curl = (
        f"curl -N {authoring_server.url}/stream/usage -H 'anthropic-version: 2023-06-01' "
        """--json '{"model": "claude", "max_tokens": 256, "stream": true, """
        """"messages": [{"role": "user", "content": "hi"}]}'"""
    )
    r = add(rook_cli, ws, "claude", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    extract = profile(ws, "claude")["hooks"]["execute"]["http"]["extract"]
    assert extract["output"] == "join('', events[].delta.text)"
    ws.scenario({"id": "s", "goal": "hello", "criteria": [{"max_tokens": {"output": 10}}]})
    run = rook_cli("run", "--json")
    (turn,) = run.report["scenarios"][0]["turns"]
    assert turn["usage"] == {"input": 25, "output": 31}, turn
    assert run.statuses() == {"s": "failed"}, run.stdout


def test_an_output_field_holding_a_list_is_looked_into_for_the_answer(
    rook_workspace, rook_cli, authoring_server
):
    """OpenAI's Responses API answers `{"output": [{"type": "message", "content":
    [{"type": "output_text", "text": ...}]}]}`: `output` is there, so the test said ok,
    and the answer was that list as JSON text. The answer is the text inside it."""
    from urllib.parse import urlencode

    ws = rook_workspace
    reply = {
        "id": "resp_1", "object": "response", "status": "completed",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "content": [
            {"type": "output_text", "text": "Once upon a time, a unicorn slept.", "annotations": []}
        ]}],
        "usage": {"input_tokens": 36, "output_tokens": 87, "total_tokens": 123},
    }
    query = urlencode({"type": "application/json", "text": json.dumps(reply)})
    curl = (
        f"curl '{authoring_server.url}/charset?{query}' -H 'Content-Type: application/json' "
        """-d '{"model": "gpt-4.1", "input": "Tell me a bedtime story."}'"""
    )
    r = add(rook_cli, ws, "responses", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: Once upon a time, a unicorn slept." in r.stdout, r.stdout
    extract = profile(ws, "responses")["hooks"]["execute"]["http"]["extract"]
    assert extract["output"] == "output[0].content[0].text"
    assert "changed: output holds a list, not the answer's text: the answer is under " in r.stdout


@pytest.mark.parametrize("ctype", ["application/x-ndjson", "application/jsonl"])
def test_a_response_streamed_as_json_lines_is_assembled_like_an_event_stream(
    rook_workspace, rook_cli, authoring_server, ctype
):
    """Ollama's /api/generate (and /api/chat) stream by default: one JSON object a
    line, `application/x-ndjson`. The test failed ('labelled application/x-ndjson but
    is not JSON (Extra data ...)') and no correction followed: the curl command from
    Ollama's docs made a profile that never worked."""
    from urllib.parse import urlencode

    ws = rook_workspace
    lines = [
        {"model": "llama3.2", "response": piece, "done": False}
        for piece in ["The", " sky", " is\u2028", " blue."]
    ] + [{"model": "llama3.2", "response": "", "done": True, "eval_count": 12}]
    # a line ends at \n only: U+2028 is written as it is inside a string (orjson, Python's
    # ensure_ascii=False), and str.splitlines would cut that line in two
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    query = urlencode({"type": ctype, "text": text})
    curl = (
        f"curl '{authoring_server.url}/charset?{query}' "
        """-d '{"model": "llama3.2", "prompt": "Why is the sky blue?"}'"""
    )
    r = add(rook_cli, ws, "ollama", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: The sky is" in r.stdout and " blue." in r.stdout, r.stdout
    http = profile(ws, "ollama")["hooks"]["execute"]["http"]
    assert http["extract"]["output"] == "join('', events[].response)"


def test_an_output_field_holding_a_typed_message_object_is_looked_into(
    rook_workspace, rook_cli, authoring_server
):
    """LangServe's /invoke answers `{"output": {"content": ..., "type": "ai", ...}}`
    for a chat model's chain: the answer was that object as JSON text."""
    from urllib.parse import urlencode

    ws = rook_workspace
    reply = {
        "output": {"content": "Why did the cat sit on the keyboard?", "additional_kwargs": {},
                   "type": "ai", "name": None, "id": "run-1", "example": False},
        "metadata": {"run_id": "0b9e4c4e-1a7e-4d3c-9f3e-1b2c3d4e5f60", "feedback_tokens": []},
    }
    query = urlencode({"type": "application/json", "text": json.dumps(reply)})
    curl = (
        f"curl -X POST '{authoring_server.url}/charset?{query}' -H 'Content-Type: application/json' "
        """-d '{"input": {"topic": "cats"}}'"""
    )
    r = add(rook_cli, ws, "chain", input=curl)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: Why did the cat sit on the keyboard?" in r.stdout, r.stdout
    assert profile(ws, "chain")["hooks"]["execute"]["http"]["extract"]["output"] == "output.content"
