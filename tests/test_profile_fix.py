"""`rook profile fix`: deliberately broken profiles, repaired and tested again; never by
loosening a check; nothing changed when no repair passes."""

from __future__ import annotations

from pathlib import Path

import yaml
from servers.authoring_server import SCRIPTED_AUTHOR as AUTHOR
from servers.helpers import chat

from rook_core.authoring import loosened

pytest_plugins = ["servers.fixtures"]


def fix(rook_cli, ws, *args, env=None):
    r = rook_cli("profile", "fix", "--workspace", str(ws.root), *args, env=env)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def write(ws, hooks, env=("AGENT_KEY",), **extra):
    ws.profile(
        {
            "id": "p",
            "hooks": hooks,
            "env": [{"variable": v, "purpose": f"{v} for the agent"} for v in env],
            **extra,
        }
    )
    return ws.agent_dir / "profiles" / "p.yaml"


def test_fix_finds_the_answer_under_another_field(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    path = write(ws, {"execute": chat(authoring_server, extract={"output": "reply.text"})})
    before = path.read_text()
    r = fix(rook_cli, ws, env={"AGENT_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "FAILED (no_answer)" in r.stdout
    assert (
        "changed: the answer is under choices[0].message.content (not under reply.text)" in r.stdout
    )
    assert "test after repair 1: ok" in r.stdout and f"fixed: wrote {path}" in r.stdout
    data = yaml.safe_load(path.read_text())
    assert data["hooks"]["execute"]["http"]["extract"]["output"] == "choices[0].message.content"
    assert data["hooks"]["execute"]["http"]["headers"] == {
        "Authorization": "Bearer {{env.AGENT_KEY}}"
    }
    assert (path.with_name("p.yaml.bak")).read_text() == before
    assert authoring_server.api_key not in r.stdout
    again = rook_cli(
        "profile", "test", "--workspace", str(ws.root), env={"AGENT_KEY": authoring_server.api_key}
    )
    assert again.exit_code in (0, 1) and "test: ok" in again.stdout


def test_fix_maps_a_hook_scripts_answer_field_without_an_author_agent(
    rook_workspace, rook_cli
):
    ws = rook_workspace
    agents = Path(__file__).parent / "agents"
    (ws.root / "hook.mjs").write_text((agents / "reply_hook.mjs").read_text())
    path = write(ws, {"execute": {"script": "hook.mjs", "timeout_seconds": 20}}, env=())
    before = path.read_text()
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "FAILED (no_answer)" in r.stdout and "has no output field (keys: reply, usage)" in r.stdout
    assert "changed: hook.mjs puts its answer under reply, not output" in r.stdout
    assert "test after repair 1: ok" in r.stdout and f"fixed: wrote {path}" in r.stdout
    data = yaml.safe_load(path.read_text())
    assert data["hooks"]["execute"] == {"script": "scripts/p-hook.py", "timeout_seconds": 20}
    assert path.with_name("p.yaml.bak").read_text() == before
    assert (ws.root / "hook.mjs").read_text() == (agents / "reply_hook.mjs").read_text()
    again = rook_cli("profile", "test", "--workspace", str(ws.root))
    assert "test: ok" in again.stdout and "answer: mjs reply to: Say hello" in again.stdout


def test_fix_drops_a_rejected_header_but_never_a_credential(
    rook_workspace, rook_cli, authoring_server
):
    ws = rook_workspace
    path = write(
        ws,
        {
            "execute": {
                "http": {
                    "url": f"{authoring_server.url}/strict",
                    "headers": {"X-Debug": "1"},
                    "body": {"message": "{{goal}}"},
                    "extract": {"output": "result.text"},
                }
            }
        },
        env=(),
    )
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "rejected the X-Debug header" in r.stdout
    assert "headers" not in yaml.safe_load(path.read_text())["hooks"]["execute"]["http"]

    path = write(ws, {"execute": chat(authoring_server)})
    before = path.read_text()
    r = fix(rook_cli, ws, env={"AGENT_KEY": "wrong-key-123"})
    assert r.exit_code == 1
    assert "FAILED (auth)" in r.stdout and "not fixed; nothing was changed" in r.stdout
    assert path.read_text() == before, "a 401 is never 'fixed' by dropping the credential"
    assert "wrong-key-123" not in r.stdout


def test_fix_asks_the_author_agent_for_a_broken_script(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    ws.script("desk.py", "import sys\nprint('plain text, not the contract')\n", executable=False)
    path = write(ws, {"execute": "scripts/desk.py"}, env=())
    log = tmp_path / "log"
    log.mkdir()
    r = fix(rook_cli, ws, "--what", "it prints text", env={"AUTHOR_LOG": str(log)})
    assert r.exit_code == 1 and "name an author agent" in r.stdout
    assert "plain text" in (ws.agent_dir / "scripts" / "desk.py").read_text()

    r = fix(
        rook_cli, ws, "--what", "it prints text", "--author", AUTHOR, env={"AUTHOR_LOG": str(log)}
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "the author agent repaired the script" in r.stdout
    request = next(log.glob("request-*.md")).read_text()
    assert "it prints text" in request and "not_json" in request
    assert "plain text, not the contract" in request  # the current script was sent
    assert yaml.safe_load(path.read_text())["hooks"]["execute"] == "scripts/desk.py"
    assert "scripted answer" in (ws.agent_dir / "scripts" / "desk.py").read_text()
    assert "plain text" in (ws.agent_dir / "scripts" / "desk.py.bak").read_text()


def test_fix_with_a_working_profile(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    write(ws, {"execute": chat(authoring_server)})
    r = fix(rook_cli, ws, env={"AGENT_KEY": authoring_server.api_key})
    assert r.exit_code == 0 and "the profile works; nothing to fix" in r.stdout
    r = fix(rook_cli, ws, "--what", "answers are slow", env={"AGENT_KEY": authoring_server.api_key})
    assert r.exit_code == 0 and "--what needs an author agent" in r.stdout


def test_fix_reports_missing_variables(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    write(ws, {"execute": chat(authoring_server)})
    r = fix(rook_cli, ws)
    assert r.exit_code == 2 and "AGENT_KEY: AGENT_KEY for the agent" in r.stdout


def test_loosening_is_refused():
    base = {
        "hooks": {
            "prepare": "scripts/login.py",
            "execute": {
                "http": {
                    "url": "https://x",
                    "headers": {"Authorization": "Bearer {{env.K}}", "X-Trace": "1"},
                    "query": {"api_key": "{{env.Q}}"},
                }
            },
        },
        "env": [{"variable": "K", "purpose": "k"}, {"variable": "Q", "purpose": "q"}],
        "capabilities": {"calls": False},
    }
    same = yaml.safe_load(yaml.safe_dump(base))
    assert loosened(base, same) == []
    worse = yaml.safe_load(yaml.safe_dump(base))
    http = worse["hooks"]["execute"]["http"]
    http["verify_tls"] = False
    del http["headers"]["Authorization"], http["query"]["api_key"], http["headers"]["X-Trace"]
    del worse["hooks"]["prepare"]
    worse["env"] = [{"variable": "Q", "purpose": "q"}]
    worse["capabilities"] = {"calls": True}
    found = " | ".join(loosened(base, worse))
    for part in (
        "verify_tls",
        "headers.Authorization",
        "query.api_key",
        "hooks.prepare",
        "env: K",
        "capabilities.calls",
    ):
        assert part in found
    assert "X-Trace" not in found  # an ordinary header may go


def test_the_author_agent_never_sees_a_secret(rook_workspace, rook_cli, authoring_server, tmp_path):
    ws = rook_workspace
    path = write(ws, {"execute": chat(authoring_server, url=f"{authoring_server.url}/v1/nowhere")})
    log = tmp_path / "log"
    log.mkdir()
    r = fix(
        rook_cli,
        ws,
        "--author",
        AUTHOR,
        env={"AGENT_KEY": authoring_server.api_key, "AUTHOR_LOG": str(log)},
    )
    assert "FAILED (not_found)" in r.stdout
    request = next(log.glob("request-*.md")).read_text()
    assert "not_found" in request and "AGENT_KEY" in request
    assert authoring_server.api_key not in request and authoring_server.api_key not in r.stdout
    data = yaml.safe_load(path.read_text())
    assert {"variable": "AGENT_KEY", "purpose": "AGENT_KEY for the agent"} in data["env"]
    for file in ws.root.rglob("*"):
        if file.is_file():
            assert authoring_server.api_key.encode() not in file.read_bytes(), file


def test_fix_extracts_a_conversation_handle_it_was_missing(
    rook_workspace, rook_cli, authoring_server
):
    ws = rook_workspace
    path = write(
        ws,
        {
            "execute": {
                "http": {
                    "url": f"{authoring_server.url}/ask",
                    "query": {"key": "{{env.AGENT_KEY}}"},
                    "body": {"prompt": "{{goal}}", "conversation_id": "{{conversation}}"},
                    "extract": {"output": "answer"},
                }
            }
        },
        capabilities={"multi_turn": True},
    )
    r = fix(rook_cli, ws, env={"AGENT_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "FAILED (no_conversation)" in r.stdout
    assert "extract.conversation = conversation_id" in r.stdout
    extract = yaml.safe_load(path.read_text())["hooks"]["execute"]["http"]["extract"]
    assert extract["conversation"] == "conversation_id"
    assert any(len(prompts) == 2 for prompts in authoring_server.conversations.values())
