"""The HTTP transport's pieces on their own: placeholders, event streams, Retry-After."""

from __future__ import annotations

import email.utils
import json
import time

import pytest
from marshmallow import ValidationError
from rook_plugins.http_transport.client import backoff, retry_after
from rook_plugins.http_transport.config import load_config
from rook_plugins.http_transport.sse import StreamError, assemble
from rook_plugins.http_transport.template import Scope, TemplateError


def scope(**values):
    return Scope(
        values=values,
        unavailable={"turn": "is only available in execute"},
        env={"KEY": "k-1"},
        saved_names=[],
    )


def test_a_whole_placeholder_keeps_its_type_and_text_is_never_substituted_twice():
    s = scope(goal='{{turn}} "quoted" {braces} \\ \n', turn=3, conversation=None, token={"a": [1]})
    body = {
        "n": "{{turn}}",
        "c": "{{conversation}}",
        "t": "{{token}}",
        "m": ["<{{goal}}>", "{{ env.KEY }}"],
        "keep": 5,
    }
    out = s.render(body, "body")
    assert out == {
        "n": 3,
        "c": None,
        "t": {"a": [1]},
        "m": ['<{{turn}} "quoted" {braces} \\ \n>', "k-1"],
        "keep": 5,
    }
    assert json.loads(json.dumps(out)) == out
    assert [(w, n) for w, n, _ in s.used] == [
        ("body.n", "turn"),
        ("body.c", "conversation"),
        ("body.t", "token"),
        ("body.m.0", "goal"),
        ("body.m.1", "env.KEY"),
    ]


@pytest.mark.parametrize(
    "template, message",
    [
        ("x {{conversation}}", "body: {{conversation}} has no value yet"),
        ("{{turn}}", "body: {{turn}} is only available in execute"),
        ("{{env.NOPE}}", "body: {{env.NOPE}} needs the environment variable NOPE"),
        ("{{tokn}}", "body: {{tokn}} is not a value saved by an earlier phase"),
    ],
)
def test_a_placeholder_that_cannot_be_filled_names_itself_and_its_field(template, message):
    with pytest.raises(
        TemplateError,
        match="^" + message.replace("{", r"\{").replace("}", r"\}").replace(".", r"\."),
    ):
        scope(conversation=None).render(template, "body")


def test_config_defaults_and_the_saved_names_a_request_needs():
    c = load_config(
        {
            "url": "https://x/{{conversation}}",
            "headers": {"A": "Bearer {{token}}"},
            "body": {"q": "{{goal}}", "k": "{{env.K}}", "s": "{{sid}}"},
        }
    )
    assert (c.method, c.retries, c.verify_tls, c.stream) == ("POST", 2, True, None)
    assert c.names == ["token", "sid"]
    assert load_config({"url": "http://x"}).method == "GET"
    with pytest.raises(ValidationError) as err:
        load_config({"url": "http://x", "body": {}, "form": {}})
    assert err.value.messages == {"form": ["give body (JSON) or form (form-encoded), not both"]}


def test_openai_chunks_become_one_chat_completion():
    chunks = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "t1",
                                "type": "function",
                                "function": {"name": "look", "arguments": '{"id":'},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": " 7}"}}]},
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    out = assemble([("", json.dumps(c)) for c in chunks])
    assert out == {
        "object": "chat.completion",
        "id": "c1",
        "model": "m",
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Hello",
                    "tool_calls": [
                        {
                            "id": "t1",
                            "type": "function",
                            "function": {"name": "look", "arguments": '{"id": 7}'},
                        }
                    ],
                },
            }
        ],
    }


def test_a_text_streamed_in_many_pieces_is_joined_whole():
    """content, reasoning_content, a legacy function_call's arguments and a tool
    call's are each the pieces joined in order; a piece of another type than
    text in the middle (a number, a list, an object, null) does as it did: the
    latest replaces a text, null keeps it."""
    text = "".join(chr(97 + i % 26) for i in range(5000))
    chunks = [{"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    for ch in text:
        delta = {
            "content": ch,
            "reasoning_content": ch.upper(),
            "function_call": {"name": "f" if ch == "a" else None, "arguments": ch},
            "tool_calls": [{"index": 0, "function": {"arguments": ch}}],
        }
        chunks.append({"choices": [{"index": 0, "delta": delta}]})
    chunks.append({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}]})
    message = assemble([("", json.dumps(c)) for c in chunks])["choices"][0]["message"]
    assert message["content"] == text
    assert message["reasoning_content"] == text.upper()
    assert message["function_call"] == {"name": "f" * text.count("a"), "arguments": text}
    assert message["tool_calls"][0]["function"]["arguments"] == text

    def merged(*pieces: object) -> object:
        chunks = [{"choices": [{"index": 0, "delta": {"refusal": p}}]} for p in pieces]
        return assemble([("", json.dumps(c)) for c in chunks])["choices"][0]["message"]["refusal"]

    assert merged("a", "b", None, "c") == "abc"
    assert merged("a", "b", 3) == 3
    assert merged("a", "b", 3, "c") == "c"
    assert merged("a", "b", ["x"], ["y"]) == ["x", "y"]
    assert merged("a", "b", {"k": "x"}, {"k": "y"}) == {"k": "xy"}
    assert merged("", "", "a") == "a" and merged("") == "" and merged(None) is None
    only_empty = [{"choices": [{"index": 0, "delta": {"content": ""}}]}]
    assert assemble([("", json.dumps(c)) for c in only_empty])["choices"][0]["message"][
        "content"
    ] == ""


def test_other_streams_keep_their_events_and_errors_fail():
    out = assemble([("", "a "), ("", "b"), ("step", '{"n": 1}')])
    assert out == {
        "events": ["a ", "b", {"n": 1}],
        "text": "a b",
        "by_event": {  # named events: each name's own (no name: message)
            "message": {"events": ["a ", "b"], "text": "a b"},
            "step": {"events": [{"n": 1}], "text": ""},
        },
    }
    assert assemble([("", "a "), ("message", "b")]) == {"events": ["a ", "b"], "text": "a b"}
    with pytest.raises(StreamError, match="overloaded"):
        assemble([("", '{"choices": []}'), ("", '{"error": {"message": "overloaded"}}')])


def test_retry_after_reads_seconds_and_dates():
    assert retry_after("2") == 2.0
    assert retry_after(" 0.5 ") == 0.5
    assert retry_after(None) is None and retry_after("soon") is None
    for invalid in ("inf", "nan", "1e400", "-5", "1_0"):  # not delay-seconds (RFC 9110)
        assert retry_after(invalid) is None
    assert retry_after("9" * 400) == 7 * 24 * 3600.0  # finite, so JSON can hold it
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after(later) or 0) <= 30
    assert retry_after(email.utils.formatdate(time.time() - 60, usegmt=True)) == 0.0


def test_backoff_grows_exponentially_with_jitter_and_a_ceiling():
    for n, ceiling in ((1, 0.5), (2, 1.0), (3, 2.0), (20, 30.0)):
        waits = [backoff(n, 0.5) for _ in range(50)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)


def test_the_profiles_in_the_http_docs_are_valid():
    import re
    from pathlib import Path

    import yaml

    from rook_core.plugins import build_plugin_manager
    from rook_core.profile import profile_from_dict

    text = (Path(__file__).parent.parent / "docs" / "http.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    profiles = [b for b in blocks if isinstance(b, dict) and "id" in b]
    transports = build_plugin_manager().transports
    loaded = [profile_from_dict(data, transports, "docs/http.md") for data in profiles]
    # the http: profiles, and the multi-turn recipe's script profile for a stateless API
    http = [p for p in loaded if all(e.transport == "http" for e in p.hooks.values())]
    assert len(http) >= 2 and len(loaded) == len(http) + 1, [p.id for p in loaded]
    # every other snippet loads too: a hooks: mapping, an extract: mapping, a calls: path
    snippets = 0
    for block in blocks:
        if not isinstance(block, dict) or "id" in block:
            continue
        if "hooks" in block:
            profile_from_dict({"id": "x", **block}, transports, "docs/http.md")
        elif set(block) <= {"extract", "calls"}:
            load_config({"url": "http://x", "extract": block.get("extract", block)})
        elif "url" in block:  # a whole http: entry
            load_config(block)
        else:
            raise AssertionError(f"a yaml snippet this test does not check: {block}")
        snippets += 1
    assert snippets >= 4
