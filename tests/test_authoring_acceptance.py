"""Acceptance checks of SPEC §8 and §9 that no other test file held: `rook profile
add` and `fix` meeting what real endpoints answer, through real servers on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
import yaml

pytest_plugins = ["servers.fixtures"]


def add(rook_cli, ws, *args, input=None, env=None):
    r = rook_cli("profile", "add", "--workspace", str(ws.root), *args, input=input, env=env)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def profile(ws, pid):
    return yaml.safe_load((ws.agent_dir / "profiles" / f"{pid}.yaml").read_text())


def _events(*payloads):
    return b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in payloads)


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


@pytest.mark.parametrize("name", ["desk.sh", "desk.py"])
def test_a_script_that_reads_its_phase_but_prints_plain_text_keeps_its_answer(
    rook_workspace, rook_cli, name
):
    """A script written for the phase argument (`desk.sh execute`) that prints its
    answer as plain text, not the hook contract's JSON: wrapped, it still gets the
    argument it answered to, and the answer is the text it printed, not nothing."""
    ws = rook_workspace
    text = {
        "desk.sh": '[ "$1" = execute ] || exit 0\nread -r goal\necho "plain answer to $goal"\n',
        "desk.py": "import sys\nif sys.argv[1:] == ['execute']:\n"
        "    print('plain answer to ' + sys.stdin.read())\n",
    }[name]
    (ws.root / name).write_text(text)
    r = add(rook_cli, ws, "desk", "--from", str(ws.root / name))
    out = r.stdout + r.stderr
    assert r.exit_code == 0, out
    assert "answer: plain answer to Say hello in one short sentence." in out
    assert "now runs it with execute as its argument" in out
    hook = profile(ws, "desk")["hooks"]["execute"]
    r = rook_cli("profile", "test", "desk", "--workspace", str(ws.root))
    assert r.exit_code == 0 and "answer: plain answer to" in r.stdout, r.stdout + r.stderr
    assert (ws.agent_dir / hook).is_file()
