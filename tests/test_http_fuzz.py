"""The HTTP transport's extraction, fuzzed: any JSON yields a hook object or a clean error."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rook_plugins.http_transport.config import load_config
from rook_plugins.http_transport.extract import ExtractError, extract

from rook_core.hookio import OutputError, turn_evidence

CONFIGS = [
    load_config({"url": "http://127.0.0.1:1/x", "body": {"q": "{{goal}}"}}),
    load_config({
        "url": "http://127.0.0.1:1/x",
        "extract": {
            "output": "choices[0].message.content",
            "conversation": "id",
            "usage": {"input": "usage.prompt_tokens", "output": "usage.completion_tokens"},
            "calls": "choices[0].message.tool_calls[].{name: function.name, arguments: function.arguments}",
            "evidence": {"model": "model"},
        },
    }),
    load_config({"url": "http://127.0.0.1:1/x", "extract": {"output": "data.answer", "calls": "data.calls"}}),
]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
keys = st.sampled_from(["choices", "message", "content", "id", "usage", "prompt_tokens", "completion_tokens",
                        "tool_calls", "function", "name", "arguments", "model", "data", "answer", "calls",
                        "output", "x"])
docs = st.recursive(
    scalars,
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(keys, c, max_size=5)),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs, st.sampled_from(range(len(CONFIGS))), st.sampled_from(["execute", "collect", "open"]))
def test_extraction_never_crashes(doc, which, phase):
    try:
        data = extract(doc, CONFIGS[which], phase)
    except ExtractError as exc:
        assert "extract" in str(exc) or str(exc)
        return
    assert isinstance(data, dict)
    if phase == "execute":
        try:
            turn_evidence(1, "g", data, 0.1)
        except OutputError:
            pass
