"""The authors' parts on their own: the cURL parser, goal placement, secret moving,
reading a response's shape, OpenAPI operations, the author agent's answers."""

from __future__ import annotations

import pytest
from rook_plugins.author_agent import parse_answer
from rook_plugins.author_http import move_header_secrets, move_value_secrets, place_goal
from rook_plugins.author_openapi import candidates, pick
from rook_plugins.author_shapes import (
    find_answer,
    find_calls,
    find_conversation,
    find_usage,
    jmes,
)
from rook_plugins.curl_command import parse_curl
from servers.authoring_server import MANY, SESSION_API

from rook_core.authoring import NeedsChoice, Secrets, env_prefix
from rook_core.credentials import command_secrets, mask_command, secret_name, secret_value
from rook_core.errors import ConfigError
from rook_core.redact import Redactor


@pytest.mark.parametrize(
    "text, expect",
    [
        ("curl https://h/x", {"url": "https://h/x", "method": None, "data": []}),
        (
            "curl -XPOST https://h/x -d 'a=1' --data-raw b=2",
            {"method": "POST", "data": ["a=1", "b=2"]},
        ),
        ("$ curl --request PUT --url=https://h/x", {"method": "PUT", "url": "https://h/x"}),
        ("curl -sSL -H 'A: 1' -H'B:2' https://h", {"headers": [("A", "1"), ("B", "2")]}),
        ("curl -skX PATCH https://h", {"method": "PATCH", "insecure": True}),
        (
            "# a comment\ncurl https://h \\\n  --json '{\"a\": 1}'",
            {"json": True, "data": ['{"a": 1}']},
        ),
        ("curl -u me:pw -G https://h -d q=hi", {"user": "me:pw", "get": True}),
        ("curl -o out.txt --max-time 12 https://h", {"max_time": 12.0, "url": "https://h"}),
        (
            "curl -b 'sid=abc' -A ua https://h",
            {"cookies": ["sid=abc"], "headers": [("User-Agent", "ua")]},
        ),
        ("/usr/bin/curl --compressed https://h", {"url": "https://h"}),
        # Windows: cmd.exe's ^ and %NAME%, PowerShell's backtick and $env:NAME
        (
            'curl ^\r\n  https://h ^\r\n  -H "X-Key: %ACME_KEY%"',
            {"url": "https://h", "variables": {"ACME_KEY": "the X-Key header"}},
        ),
        (
            "PS C:\\> curl.exe `\n  https://h `\n  -H \"X-Key: $env:ACME_KEY\"",
            {"url": "https://h", "variables": {"ACME_KEY": "the X-Key header"}},
        ),
        ('curl https://h -d \'{"q": "^"}\'', {"data": ['{"q": "^"}']}),
        (
            'curl ^\n  "https://h/caf%C3%A9/%E2%80%99x" ^\n  -d "{}"',
            {"url": "https://h/caf%C3%A9/%E2%80%99x", "variables": {}},
        ),
        # a browser's 'Copy as cURL (cmd)' writes each % before a letter or digit as %^,
        # so cmd.exe expands no variable: d%C3%A9j%C3%A0 was read with the variable %A9j%
        (
            'curl ^"https://h/d^%^C3^%^A9j^%^C3^%^A0?q=%^A9x%^20^" ^\n  -H ^"X-Key: %ACME_KEY%^"',
            {"url": "https://h/d%C3%A9j%C3%A0?q=%A9x%20", "variables": {"ACME_KEY": "the X-Key header"}},
        ),
        ('curl "https://h/d%C3%A9j%C3%A0" ^\n  -d "{}"', {"url": "https://h/d%C3%A9j%C3%A0", "variables": {}}),
        # a browser's 'Copy as cURL (cmd)' writes a line end in a value as ^ and two line
        # ends: cmd.exe reads one line end (the value went with a blank before it)
        (
            'curl ^"https://h^" ^\r\n  --data-raw ^"line one^\r\n\r\nline two^"',
            {"data": ["line one\nline two"]},
        ),
        ('curl ^"https://h^" ^\n  --data-raw ^"a^\n\nb^\n\n^"', {"data": ["a\nb\n"]}),
        # cmd.exe: a backslash is a backslash unless a quote follows it (a Windows path)
        (
            'curl ^\n  https://h ^\n  -d path=C:\\Users\\me\\f.txt -d "q=\\"hi\\" C:\\x"',
            {"data": ["path=C:\\Users\\me\\f.txt", 'q="hi" C:\\x']},
        ),
        # flags that take a value Rook does not use: the value is no URL
        (
            "curl --max-redirs 5 --proto =https --retry-max-time 9 --keepalive-time 60 "
            "--tls-max 1.3 --ciphers X --speed-limit 1 --speed-time 5 https://h -d m=1",
            {"url": "https://h"},
        ),
        # --url-query adds to the URL's query, encoded as --data-urlencode encodes
        ("curl https://h/x?a=1 --url-query 'q=two words' --url-query +raw=%41", {"url": "https://h/x?a=1&q=two+words&raw=%41"}),
        # a URL whose path ends in /curl is no second command
        ("curl https://h/tools/curl -d message=hi", {"url": "https://h/tools/curl"}),
        # curl.exe named by its Windows path, on one line: typed for cmd.exe (it was no
        # cURL command at all: a POSIX shell's split ate the backslashes)
        (
            'C:\\tools\\curl.exe https://h -H "X-Key: %ACME_KEY%" -d "<p>hi</p>"',
            {"url": "https://h", "data": ["<p>hi</p>"], "variables": {"ACME_KEY": "the X-Key header"}},
        ),
        ('"C:\\Program Files\\curl\\bin\\curl.exe" https://h -d "{\\"q\\": 1}"', {"url": "https://h", "data": ['{"q": 1}']}),
        ('C:\\Users\\me>.\\curl.exe https://h -d x=1', {"url": "https://h", "data": ["x=1"]}),
        ('C:\\Users\\me>curl.exe https://h -d "p=C:\\x"', {"url": "https://h", "data": ["p=C:\\x"]}),
        # bash's ANSI-C quoting, which a browser's 'Copy as cURL (bash)' writes for a
        # value holding ' ! a newline or (Firefox) any non-ASCII character
        (
            "curl 'https://h' -H $'x-note: caf\\u00e9' --data-raw $'{\"q\":\"it\\'s \\\\u0021\\\\n\\u0021\"}'",
            {"headers": [("x-note", "café")], "data": ['{"q": "it\'s !\\n!"}']},
        ),
        ("curl $'https://h/\\x61\\142' -d $'a=\\t\\'' -d \"$'x'\" -d '$'", {"url": "https://h/ab", "data": ["a=\t'", "$'x'", "$"]}),
        # Firefox writes a character beyond U+FFFF as its two UTF-16 halves (an emoji):
        # one character, never two halves no encoder takes (a lone one: U+FFFD)
        ("curl https://h -d $'m=\\ud83d\\ude00 \\ud83d!'", {"data": ["m=\U0001F600 \ufffd!"]}),
    ],
)
def test_parse_curl(text, expect):
    c = parse_curl(text)
    for key, value in expect.items():
        assert getattr(c, key) == value, key


@pytest.mark.parametrize(
    "text, message",
    [
        ("curl", "no URL"),
        ("curl -H", "needs a value"),
        ("wget https://h", "no word 'curl'"),
        ("curl 'https://h", "split"),
        ("curl -d @nowhere-body.json https://h", "-d @nowhere-body.json: nowhere-body.json: no such file"),
        ("curl -H @a\x00b https://h", "no file name holds a NUL character"),
    ],
)
def test_parse_curl_refuses(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_curl(text)


def test_place_goal():
    chat = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "long system prompt here"},
            {"role": "user", "content": "hi"},
        ],
    }
    doc, where = place_goal(chat)
    assert doc["messages"][1]["content"] == "{{goal}}" and where == "messages[1].content"
    assert chat["messages"][1]["content"] == "hi", "the original is not changed"
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert place_goal(parts)[1] == "messages[0].content[0].text"
    assert place_goal({"lang": "en", "data": {"query": "x"}})[1] == "data.query"
    assert place_goal({"a": "short", "b": "a much longer sample"})[1] == "b"
    assert place_goal("raw text") == ("{{goal}}", "the whole body")
    assert place_goal({"n": 1})[1] is None


def test_secrets_move_to_env_and_are_redacted():
    red = Redactor()
    secrets = Secrets(env_prefix("order-desk"), red)
    headers = move_header_secrets(
        {
            "Authorization": "Bearer tok-abcdef",
            "X-Api-Key": "k-1234",
            "Accept": "application/json",
            "Cookie": "sid=99999",
        },
        secrets,
        "https://h/x",
    )
    assert headers == {
        "Authorization": "Bearer {{env.ORDER_DESK_API_TOKEN}}",
        "X-Api-Key": "{{env.ORDER_DESK_API_KEY}}",
        "Accept": "application/json",
        "Cookie": "{{env.ORDER_DESK_COOKIE}}",
    }
    assert red.text("tok-abcdef and k-1234") == (
        "[redacted:ORDER_DESK_API_TOKEN] and [redacted:ORDER_DESK_API_KEY]"
    )
    assert secrets.found_in("x sid=99999 y") and not secrets.found_in("nothing")
    # a value hidden after a first look is found in its forms too (the forms are kept)
    secrets.hide("p@ss'w0rd-later", "LATER")
    assert secrets.holder("pw = 'p@ss\\'w0rd-later'") == "LATER"
    assert secrets.holder("x-api-key: " + __import__("base64").b64encode(b"p@ss'w0rd-later").decode()) == "LATER"
    assert secrets.add("API_TOKEN", "again", "tok-abcdef") == "ORDER_DESK_API_TOKEN"
    assert secrets.add("API_TOKEN", "another", "tok-other") == "ORDER_DESK_API_TOKEN_2"
    assert env_prefix("9lives") == "AGENT_9LIVES"
    # a value shaped like a key moves whatever its field or header is called
    body = move_value_secrets(
        {"opaque": "sk-proj-abcdef123456", "author": "me", "model": "gpt-4o-mini"},
        secrets,
        "https://h/x",
        "field",
    )
    assert body == {
        "opaque": "{{env.ORDER_DESK_API_KEY_2}}",
        "author": "me",
        "model": "gpt-4o-mini",
    }
    assert move_header_secrets({"X-Custom": "sk-proj-abcdef123456"}, secrets, "h") == {
        "X-Custom": "{{env.ORDER_DESK_API_KEY_2}}"
    }


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "Proxy-Authorization",
        "X-Api-Key",
        "x-goog-api-key",
        "api_key",
        "apikey",
        "key",
        "sig",
        "X-Sig",
        "access_token",
        "client_secret",
        "Cookie",
        "OPENAI_API_KEY",
        "ANTHROPIC_KEY",
        "DB_PASSWORD",
        "db-pass",
        "--token",
        "--api-key",
    ],
)
def test_credential_names(name):
    assert secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["author", "monkey", "passenger", "max_tokens", "model", "TOKEN_FILE", "--api-key-env", "url"],
)
def test_names_that_hold_no_credential(name):
    assert not secret_name(name)


def test_values_shaped_like_keys():
    for value in ("sk-proj-abc123def456", "sk-ant-api03-xyz98765", "ghp_" + "a" * 36,
                  "AKIAABCDEFGHIJKLMNOP", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig"):
        assert secret_value(value), value
    for value in ("gpt-4o-mini", "task-abcdefghijk", "hello", "sk-short"):
        assert not secret_value(value), value


def test_secrets_in_notes():
    from rook_core.credentials import text_secrets

    notes = (
        "Use Authorization: Bearer abcdef123456 against https://bob:pw-1234@h.example/x?key=qq12345678. "
        'Send "api_key": "secret-9999" and password=hunter2notes; or sk-proj-abcdef1234567890. '
        "auth: none; the token-file: /etc/tok; a monkey: bananas1234; keep {{env.X}} and $MY_KEY"
    )
    found = [(f.value, f.name) for f in text_secrets(notes)]
    assert found == [
        ("abcdef123456", "Authorization"),
        ("pw-1234", "password"),
        ("qq12345678", "key"),
        ("secret-9999", "api_key"),
        ("hunter2notes", "password"),
        ("sk-proj-abcdef1234567890", "key"),
    ]
    secrets = Secrets("DESK", Redactor())
    moved = secrets.move_from_text(notes + " (again: abcdef123456)", "the notes")
    assert "Bearer $DESK_API_TOKEN" in moved and "(again: $DESK_API_TOKEN)" in moved
    assert "bob:$DESK_PASSWORD@" in moved and "?key=$DESK_API_KEY." in moved
    assert not any(v in moved for v, _ in found)


def test_command_line_secrets():
    argv = [
        "env", "MODE=fast", "OPENAI_API_KEY=sk-CMDSECRET999", "python3", "agent.py",
        "--api-key", "sk-ARGSECRET888", "--token=tok1", "--token-file", "t.txt",
        "-H", "Authorization: Bearer hdr1", "--header=X-Api-Key: hdr2",
        "http://u:pw12@h/x?key=q1&q=hi", "--model", "gpt-4o", "sk-loose0000001",
    ]
    found = {(i, f.value, f.name) for i, f in command_secrets(argv)}
    assert found == {
        (2, "sk-CMDSECRET999", "OPENAI_API_KEY"),
        (6, "sk-ARGSECRET888", "api-key"),
        (7, "tok1", "token"),
        (11, "hdr1", "Authorization"),
        (12, "hdr2", "X-Api-Key"),
        (13, "pw12", "password"),
        (13, "q1", "key"),
        (16, "sk-loose0000001", ""),
    }
    assert command_secrets(["claude", "-p", "--output-format", "json"]) == []
    assert command_secrets(["python3", "a.py", "--api-key", "$MY_KEY"]) == []
    assert mask_command("OPENAI_API_KEY=abc python3 a.py --password 'p w' 'hi there'") == (
        "OPENAI_API_KEY=[hidden] python3 a.py --password [hidden] 'hi there'"
    )


def test_reading_response_shapes():
    openai = {
        "id": "chatcmpl-1234567890",
        "model": "gpt",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "Your order ships Tuesday.",
                    "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": "{}"}}],
                }
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    }
    assert jmes(find_answer(openai, "goal")) == "choices[0].message.content"
    assert find_calls(openai) == (
        "choices[0].message.tool_calls[].{name: function.name, arguments: function.arguments}"
    )
    assert find_usage(openai) == {
        "input": ("usage", "prompt_tokens"),
        "output": ("usage", "completion_tokens"),
    }
    anthropic = {
        "id": "msg_01ABCDEFGH",
        "content": [
            {"type": "text", "text": "Sure, here it is."},
            {"type": "tool_use", "name": "search", "input": {"q": "x"}},
        ],
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }
    assert jmes(find_answer(anthropic)) == "content[0].text"
    assert find_calls(anthropic) == "content[?type=='tool_use'].{name: name, arguments: input}"
    echo = {
        "prompt": "what is the time",
        "answer": "It is noon.",
        "thread": {"id": "th_1"},
        "meta": {"request-id": "4f9a8c7e6d5b"},
    }
    assert find_answer(echo, "what is the time") == ("answer",)
    assert find_conversation(echo) == ("thread", "id")
    assert jmes(("a-b", 0, "c")) == '"a-b"[0].c'
    assert find_answer("plain text") == () and find_answer({"id": "abcdefgh1234"}) is None


def test_openapi_operations():
    found = candidates(SESSION_API)
    assert [c["id"] for c in found] == ["sendMessage"]
    assert found[0]["field"] == "text"
    with pytest.raises(NeedsChoice) as exc:
        pick(candidates(MANY), None)
    assert [c for c, _ in exc.value.candidates] == ["ask", "askV2"]
    assert pick(candidates(MANY), "POST /v2/ask")["id"] == "askV2"
    with pytest.raises(ConfigError, match="no such operation"):
        pick(candidates(MANY), "nope")


def test_author_agent_answers():
    script, lang, extra = parse_answer("Sure!\n\n```bash\necho hi\n```\nbye")
    assert (script, lang, extra) == ("echo hi\n", "bash", {})
    script, lang, extra = parse_answer(
        '{"output": "#!/usr/bin/env node\\nconsole.log(1)",'
        ' "env": [{"variable": "K", "purpose": "p"}]}'
    )
    assert lang == "node" and script.startswith("#!") and extra["env"][0]["variable"] == "K"
    assert parse_answer("#!/usr/bin/env python3\nprint(1)\n")[1] == "python"
    with pytest.raises(Exception, match="no script"):
        parse_answer("I cannot do that")


def test_executable_paths_are_run_explicitly(tmp_path):
    from rook_plugins.author_command import interpreter_code

    exe = tmp_path / "desk.sh"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert interpreter_code("desk.sh", exe) == '["./desk.sh"]'  # not looked up on PATH
    assert interpreter_code("bin/desk.sh", exe) == '["bin/desk.sh"]'
    assert interpreter_code(str(exe), exe) == f'["{exe}"]'
    exe.chmod(0o644)
    assert interpreter_code("desk.sh", exe) == "['bash', 'desk.sh']"


def test_written_files_keep_their_mode_and_are_not_rewritten(tmp_path):
    from rook_core.authoring import write_files
    from rook_core.workspace import Agent

    agent = Agent(tmp_path, "p", "a")
    script = agent.dir / "scripts" / "desk.sh"
    script.parent.mkdir(parents=True)
    script.write_text("old\n")
    script.chmod(0o750)
    inode = script.stat().st_ino
    secrets = Secrets("A", Redactor())
    assert write_files(agent, {"scripts/desk.sh": "old\n"}, secrets) == []
    assert script.stat().st_ino == inode  # the same file, untouched
    assert write_files(agent, {"scripts/desk.sh": "new\n"}, secrets) == [script.resolve()]
    assert script.read_text() == "new\n" and script.stat().st_mode & 0o777 == 0o750


def test_two_json_bodies_are_named_as_joined(tmp_path):
    """`-d '{...}' -d '{...}'`: curl joins them with &, no JSON; the refusal said only
    'not valid JSON', which each piece the user wrote is."""
    from rook_plugins.author_curl import _body

    c = parse_curl("curl https://h --json '{\"a\": 1}' -d '{\"message\": \"hi\"}'")
    with pytest.raises(ConfigError, match="curl joins its 2 -d/--data/--json pieces with &"):
        _body(c)
    # with no Content-Type either: the joined text became a text body, replaced whole by
    # the goal ('the goal goes ... body (the whole body)'), so the agent got the goal alone
    c = parse_curl("curl https://h -d '{\"message\": \"hi\"}' -d '{\"model\": \"x\"}'")
    with pytest.raises(ConfigError, match="curl joins its 2 -d/--data/--json pieces with &"):
        _body(c)
    # a JSON piece beside name=value pairs is a form curl sends, still refused, not guessed
    c = parse_curl("curl https://h -d 'message=hi' -d '[1, 2]'")
    with pytest.raises(ConfigError, match="curl joins its 2 -d/--data/--json pieces with &"):
        _body(c)



def test_a_key_given_as_the_basic_user_is_a_secret_alone():
    """`curl -u sk_test_...:` (Stripe): the key is the user and there is no password;
    only 'KEY:' was hidden from what profile add shows."""
    from rook_plugins.author_http import basic_header

    red = Redactor()
    secrets = Secrets(env_prefix("desk"), red)
    key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
    assert basic_header(key, "", secrets, "https://h/x") == "Basic {{env.DESK_BASIC_AUTH}}"
    assert key not in red.text(f"the key {key} was refused")


def test_a_body_text_beginning_with_nul_is_no_variable_of_the_command():
    # goal_for_variable marked each lone $NAME of the body with a NUL before its name
    # and turned every body text beginning with a NUL back into {{env.TEXT}}: a value
    # the command sent (JSON's "\u0000END") became an environment reference
    from rook_plugins.author_curl import _body, goal_for_variable

    c = parse_curl("""curl https://h -d '{"prompt": "'"$PROMPT"'", "stop": "\\u0000END"}'""")
    kind, body = _body(c)
    assert kind == "json" and body["stop"] == "\x00END", body
    doc, name, where = goal_for_variable(body, c)
    assert (name, where) == ("PROMPT", "prompt"), (name, where)
    assert doc == {"prompt": "{{goal}}", "stop": "\x00END"}, doc
    # and a text beginning with a NUL where the message goes is the sample message
    c = parse_curl("""curl https://h -d '{"prompt": "\\u0000hi", "n": "'"$N"'"}'""")
    assert goal_for_variable(_body(c)[1], c) is None
