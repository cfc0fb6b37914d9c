"""`rook profile fix`: deliberately broken profiles, repaired and tested again; never by
loosening a check; nothing changed when no repair passes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
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
    path.chmod(0o640)  # the repaired file and its .bak keep the mode, not the umask's
    before = path.read_text()
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    for written in (path, path.with_name("p.yaml.bak")):
        assert written.stat().st_mode & 0o777 == 0o640, written
    assert "FAILED (no_answer)" in r.stdout and "has no output field (keys: reply, usage)" in r.stdout
    assert "changed: hook.mjs puts its answer under reply, not output" in r.stdout
    assert "test after repair 1: ok" in r.stdout and f"fixed: wrote {path}" in r.stdout
    data = yaml.safe_load(path.read_text())
    assert data["hooks"]["execute"] == {"script": "scripts/p-hook.py", "timeout_seconds": 20}
    assert path.with_name("p.yaml.bak").read_text() == before
    assert (ws.root / "hook.mjs").read_text() == (agents / "reply_hook.mjs").read_text()
    # what the repaired profile's test observed is remembered, as profile test's is
    shown = rook_cli("profile", "show", "p", "--workspace", str(ws.root))
    assert "usage declared=no observed=yes" in shown.stdout, shown.stdout
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


def test_a_repair_that_makes_no_valid_profile_is_refused_and_changes_nothing(
    rook_workspace, rook_cli
):
    """An author agent's repair whose env names no variable ('desk token') stopped
    fix with '.../profiles/p.yaml: invalid profile' (exit 2), as if the user's own
    file were wrong. The repair is refused; nothing is changed (exit 1)."""
    ws = rook_workspace
    ws.script("desk.py", "import sys\nprint('plain text, not the contract')\n", executable=False)
    path = write(ws, {"execute": "scripts/desk.py"}, env=())
    before = path.read_text()
    r = fix(rook_cli, ws, "--author", AUTHOR, env={"AUTHOR_MODE": "bad_env"})
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "refused a repair that makes no valid profile" in r.stdout, r.stdout
    assert "env.0.variable" in r.stdout and "invalid profile" not in r.stderr, r.stderr
    assert "not fixed; nothing was changed" in r.stdout
    assert path.read_text() == before
    assert "plain text" in (ws.agent_dir / "scripts" / "desk.py").read_text()


def test_fix_with_a_working_profile(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    write(ws, {"execute": chat(authoring_server)})
    r = fix(rook_cli, ws, env={"AGENT_KEY": authoring_server.api_key})
    assert r.exit_code == 0 and "the profile works; nothing to fix" in r.stdout
    r = fix(rook_cli, ws, "--what", "answers are slow", env={"AGENT_KEY": authoring_server.api_key})
    assert r.exit_code == 0 and "--what needs an author agent" in r.stdout


def test_fix_of_an_endpoint_sent_no_credential_never_sends_the_user_to_a_variable(
    rook_workspace, rook_cli, authoring_server
):
    """A profile that sends no credential to an endpoint that wants one (what
    `profile add --from URL` writes for it): the advice said "the credential is
    wrong or expired: check the variable named above", naming none, and a --what
    given with no author agent was dropped without a word."""
    ws = rook_workspace
    path = write(ws, {"execute": chat(authoring_server, headers={})}, env=())
    before = path.read_text()
    r = fix(rook_cli, ws, "--what", "it needs a bearer token")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "FAILED (auth)" in r.stdout and "not fixed; nothing was changed" in r.stdout
    assert "check the variable named above" not in r.stdout
    assert "No header or query parameter carried a credential" in r.stdout
    assert "next: the target refused the request's credentials" in r.stdout
    assert "--what needs an author agent (--author CMD" in r.stdout
    assert path.read_text() == before


def test_a_what_with_no_author_agent_is_said_unread_whatever_the_outcome(rook_workspace, rook_cli):
    """--what with no author agent was named unread only when nothing was to fix or
    the failure had advice: a repair Rook made itself (an optimistic claim withdrawn),
    or a script breaking the contract, said nothing of it."""
    ws = rook_workspace
    ws.script("ok.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "hi"}\'\nexit 0\n')
    ws.script("text.sh", "#!/bin/bash\necho not json\n")
    write(ws, {"execute": "scripts/ok.sh"}, env=(), capabilities={"calls": True})
    r = fix(rook_cli, ws, "--what", "the answer is wrong")
    assert r.exit_code == 0 and "changed: capabilities.calls: false" in r.stdout, r.stdout
    assert "--what needs an author agent (--author CMD" in r.stdout
    write(ws, {"execute": "scripts/text.sh"}, env=())
    r = fix(rook_cli, ws, "--what", "the answer is wrong")
    assert r.exit_code == 1 and "FAILED (not_json)" in r.stdout, r.stdout
    assert "--what needs an author agent (--author CMD" in r.stdout


def test_fix_reports_missing_variables(rook_workspace, rook_cli, authoring_server):
    ws = rook_workspace
    write(ws, {"execute": chat(authoring_server)})
    r = fix(rook_cli, ws)
    # a configuration error, said as rook run and rook profile test say it: on
    # standard error, nothing on standard output, exit 2
    assert r.exit_code == 2 and r.stdout == "", r.stdout + r.stderr
    assert r.stderr.startswith("rook: error: profile 'p' ("), r.stderr
    assert "  AGENT_KEY: AGENT_KEY for the agent\nset them first, e.g.: export AGENT_KEY=..." in r.stderr


def test_fix_of_a_profile_that_cannot_run_as_written_says_so_on_standard_error(
    rook_workspace, rook_cli
):
    ws = rook_workspace
    write(ws, {"execute": "scripts/gone.sh"}, env=())
    r = fix(rook_cli, ws)
    assert r.exit_code == 2 and r.stdout == "", r.stdout + r.stderr
    assert r.stderr.startswith("rook: error: "), r.stderr
    assert "hooks.execute: hook script 'scripts/gone.sh' not found" in r.stderr


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


REPLY_SCRIPTS = {
    "rep.sh": """\
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        goal=$(cat)
        printf '{"reply": "bash says: %s"}\\n' "$goal"
        """,
    "rep3": """\
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            print(json.dumps({"reply": "python says: " + sys.stdin.read()}))
        """,
}


def state(folder):
    """Every file under ``folder``: its bytes, mode and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("name", sorted(REPLY_SCRIPTS))
def test_fix_maps_the_answer_of_an_executable_script(rook_workspace, rook_cli, name):
    ws = rook_workspace
    script = ws.script(name, REPLY_SCRIPTS[name])
    before = (script.read_bytes(), script.stat().st_mode, script.stat().st_mtime_ns)
    assert before[1] & 0o111
    path = write(ws, {"execute": f"scripts/{name}"}, env=())
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "FAILED (no_answer)" in r.stdout and "test after repair 1: ok" in r.stdout
    assert "says: Say hello" in r.stdout and f"fixed: wrote {path}" in r.stdout
    assert f"  scripts/{name}\n" not in r.stdout  # listed as written only when it was
    # the user's script is not touched: same bytes, still executable, no backup
    assert (script.read_bytes(), script.stat().st_mode, script.stat().st_mtime_ns) == before
    assert not script.with_name(name + ".bak").exists()
    assert yaml.safe_load(path.read_text())["hooks"]["execute"] == "scripts/p-hook.py"
    again = rook_cli("profile", "test", "--workspace", str(ws.root))
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "test: ok" in again.stdout and "says: Say hello" in again.stdout


def test_a_repair_whose_test_fails_changes_nothing(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    count = tmp_path / "count"
    # answers under reply once (the diagnosis), then fails: the mapped repair's test fails
    ws.script(
        "flaky.sh",
        f"""\
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat >/dev/null
        if [ -e {count} ]; then echo "down for maintenance" >&2; exit 1; fi
        touch {count}
        echo '{{"reply": "once"}}'
        """,
    )
    path = write(ws, {"execute": "scripts/flaky.sh"}, env=())
    before = state(ws.agent_dir)
    r = fix(rook_cli, ws)
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "changed: " in r.stdout and "down for maintenance" in r.stdout
    assert "not fixed; nothing was changed" in r.stdout
    assert state(ws.agent_dir) == before  # no hook script left, modes and times as they were
    assert not path.with_name("p.yaml.bak").exists()
    again = rook_cli("profile", "test", "--workspace", str(ws.root))
    assert "not executable" not in again.stdout + again.stderr


def test_a_rewritten_executable_script_is_restored_exactly(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    ws.script("desk.py", "#!/usr/bin/env python3\nprint('plain text, not the contract')\n")
    author = tmp_path / "author.py"  # an author agent whose repair never works
    author.write_text(
        "import sys\nsys.stdin.read()\n"
        "print('```python\\nimport sys\\nprint(\"still plain text\")\\n```')\n"
    )
    path = write(ws, {"execute": "scripts/desk.py"}, env=())
    before = state(ws.agent_dir)
    r = fix(rook_cli, ws, "--author", f"{sys.executable} {author}")
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "the author agent repaired the script: scripts/desk.py" in r.stdout
    assert "not fixed; nothing was changed" in r.stdout
    assert state(ws.agent_dir) == before  # content, mode (still executable) and times
    assert not path.with_name("p.yaml.bak").exists()


def test_an_executable_script_repaired_without_its_hash_bang_line_keeps_it(
    rook_workspace, rook_cli, tmp_path
):
    """The file stays executable, so it needs its #! line: an author's answer
    without one keeps the script's own (else the system could not start it)."""
    ws = rook_workspace
    ws.script("desk.py", "#!/usr/bin/env python3\nprint('plain text, not the contract')\n")
    author = tmp_path / "author.py"
    author.write_text(
        "import sys\nsys.stdin.read()\n"
        "print('```python\\nimport json, sys\\nif sys.argv[1] == \"execute\":\\n"
        "    sys.stdin.read()\\n    print(json.dumps({\"output\": \"fixed\"}))\\n```')\n"
    )
    write(ws, {"execute": "scripts/desk.py"}, env=())
    r = fix(rook_cli, ws, "--author", f"{sys.executable} {author}")
    assert r.exit_code == 0, r.stdout + r.stderr
    script = ws.agent_dir / "scripts" / "desk.py"
    assert script.read_text().startswith("#!/usr/bin/env python3\nimport json, sys\n")
    assert os.access(script, os.X_OK)


def test_a_script_replacing_an_http_entry_never_drops_its_credential(
    rook_workspace, rook_cli, authoring_server
):
    """The author agent's repair of an http: entry is a script: the Authorization
    header the entry sent would be gone, so the repair is refused (a check loosened),
    however well the script answers; every file stays as it was."""
    ws = rook_workspace
    path = write(ws, {"execute": chat(authoring_server, url=f"{authoring_server.url}/v1/nowhere")})
    before = path.read_text()
    r = fix(rook_cli, ws, "--author", AUTHOR, env={"AGENT_KEY": authoring_server.api_key})
    assert "FAILED (not_found)" in r.stdout, r.stdout + r.stderr
    assert (
        "refused a repair that would loosen a check: "
        "hooks.execute.http.headers.Authorization (a credential) would be dropped" in r.stdout
    )
    assert r.exit_code == 1 and "not fixed; nothing was changed" in r.stdout
    assert path.read_text() == before and not path.with_name("p.yaml.bak").exists()
    assert not (ws.agent_dir / "scripts" / "p-hook.py").exists()
    # the same in the function: an http: entry becoming a script keeps no credential
    base = {"hooks": {"execute": {"http": {"url": "https://x", "query": {"key": "{{env.Q}}"}}}}}
    found = loosened(base, {"hooks": {"execute": {"script": "scripts/p-hook.py"}}})
    assert found == ["hooks.execute.http.query.key (a credential) would be dropped"]


def test_a_script_replacing_an_http_entry_never_drops_its_digest_credential(
    rook_workspace, rook_cli, authoring_server
):
    """An http: entry's auth.digest was not counted among its credentials: a repair
    that made the entry a script, dropping it, was written (exit 0). It is refused
    like a dropped Authorization header; every file stays as it was."""
    ws = rook_workspace
    digest = {"username": "{{env.DIGEST_USER}}", "password": "{{env.DIGEST_PASSWORD}}"}
    entry = chat(authoring_server, url=f"{authoring_server.url}/v1/nowhere", headers={})
    entry["http"]["auth"] = {"digest": digest}
    path = write(ws, {"execute": entry}, env=("DIGEST_USER", "DIGEST_PASSWORD"))
    before = path.read_text()
    env = {"DIGEST_USER": "desk-operator", "DIGEST_PASSWORD": authoring_server.digest_password}
    r = fix(rook_cli, ws, "--author", AUTHOR, env=env)
    assert "FAILED (not_found)" in r.stdout, r.stdout + r.stderr
    assert (
        "refused a repair that would loosen a check: "
        "hooks.execute.http.auth (a credential) would be dropped" in r.stdout
    ), r.stdout
    assert r.exit_code == 1 and path.read_text() == before


def test_fix_withdraws_an_optimistic_claim_that_profile_test_flags(rook_workspace, rook_cli):
    """A profile that works but declares calls it never shows: rook profile test flags
    it OPTIMISTIC (exit 1) and fix said 'the profile works; nothing to fix'. Now fix
    reports the same finding and withdraws the claim (the old file kept as .bak);
    an observation not declared is only said, never claimed by fix."""
    ws = rook_workspace
    ws.script(
        "agent.py",
        """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            print(json.dumps({"output": "hi " + sys.stdin.read(), "usage": {"input": 3, "output": 4}}))
        """,
    )
    path = write(
        ws,
        {"execute": "scripts/agent.py"},
        env=(),
        capabilities={"multi_turn": False, "calls": True, "usage": False},
    )
    before = path.read_text()
    test = rook_cli("profile", "test", "--workspace", str(ws.root))
    assert test.exit_code == 1 and "OPTIMISTIC" in test.stdout, test.stdout + test.stderr
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "nothing to fix" not in r.stdout
    assert (
        "changed: capabilities.calls: false (declared, but the test observed no tool call "
        "evidence; an optimistic claim is unsafe)" in r.stdout
    )
    assert "note: capabilities.usage is observed but not declared" in r.stdout
    assert f"fixed: wrote {path}" in r.stdout
    data = yaml.safe_load(path.read_text())
    assert data["capabilities"] == {"multi_turn": False, "calls": False, "usage": False}
    assert path.with_name("p.yaml.bak").read_text() == before
    assert rook_cli("profile", "test", "--workspace", str(ws.root)).exit_code == 0
    r = fix(rook_cli, ws)  # the two agree now: nothing optimistic left
    assert r.exit_code == 0 and "the profile works; nothing to fix" in r.stdout


def test_fix_follows_a_redirect_and_never_shows_a_credential_written_in_the_url(
    rook_workspace, rook_cli, authoring_server
):
    # a url written with a literal key (and a password) that redirects: the password
    # made the repair raise ('hidden' does not appear to be an IPv4 or IPv6 address),
    # and the 'changed:' line would have shown the key
    ws = rook_workspace
    host = authoring_server.url.split("//", 1)[1]
    url = f"http://{host}/moved/strict?api_key=literal-key-55501"
    write(ws, {"execute": {"http": {"url": url, "body": {"message": "{{goal}}"}}}}, env=())
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    changed = "\n".join(ln for ln in r.stdout.splitlines() if ln.startswith("changed:"))
    assert "redirects (HTTP 308)" in changed and "api_key=[hidden]" in changed
    assert "literal-key-55501" not in changed
    assert "to /strict?api_key=[hidden];" in r.stdout  # the Location, masked as the URL sent
    fixed = yaml.safe_load((ws.agent_dir / "profiles" / "p.yaml").read_text())
    assert fixed["hooks"]["execute"]["http"]["url"] == (
        f"http://{host}/strict?api_key=literal-key-55501"
    )
    assert "capabilities" not in fixed, fixed  # claimed none: was written 'capabilities: {}'

    url = f"http://bob:literal-pw-55502@{host}/moved/strict"
    write(ws, {"execute": {"http": {"url": url, "body": {"message": "{{goal}}"}}}}, env=())
    r = fix(rook_cli, ws)
    assert r.exit_code == 1, r.stdout + r.stderr  # not repaired, but said so
    assert "failed in repair" not in r.stderr and "redirected (HTTP 308)" in r.stdout
    assert "literal-pw-55502" not in r.stdout + r.stderr
    assert not [ln for ln in r.stdout.splitlines() if ln.startswith("changed:")]


NO_HANDLE = {
    "agent.sh": '#!/bin/bash\n[ "$1" = execute ] || exit 0\necho "{\\"output\\": \\"hi $(cat)\\"}"\n',
    "agent.mjs": (
        "#!/usr/bin/env node\nif (process.argv[2] !== 'execute') process.exit(0);\n"
        "let s = ''; process.stdin.on('data', d => (s += d));\n"
        "process.stdin.on('end', () => console.log(JSON.stringify({output: 'hi ' + s})));\n"
    ),
}


@pytest.mark.parametrize("name", sorted(NO_HANDLE))
def test_fix_stops_claiming_multi_turn_a_hook_script_never_shows(rook_workspace, rook_cli, name):
    """A hook script that returns no conversation handle, in a profile claiming
    multi_turn: fix failed the two-turn test and said 'not fixed; nothing was
    changed' (only an http: entry had the claim withdrawn), though the table of
    profiles.md says it stops claiming multi_turn. It does now, for any transport."""
    ws = rook_workspace
    ws.script(name, NO_HANDLE[name])
    path = write(ws, {"execute": f"scripts/{name}"}, env=(), capabilities={"multi_turn": True})
    before = path.read_text()
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "changed: capabilities.multi_turn: false" in r.stdout, r.stdout
    assert f"fixed: wrote {path}" in r.stdout
    assert yaml.safe_load(path.read_text())["capabilities"]["multi_turn"] is False
    assert path.with_name("p.yaml.bak").read_text() == before
    assert rook_cli("profile", "test", "--workspace", str(ws.root)).exit_code == 0


def test_an_author_flag_that_cannot_run_is_refused_before_anything_runs(
    rook_workspace, rook_cli, tmp_path
):
    """--author naming a program not installed was checked only when the author
    agent was asked: a fix of a working profile exited 0 without a word, with
    --what the hooks ran first, and profile add --command took it silently."""
    ws = rook_workspace
    mark = tmp_path / "ran"
    ws.script("ok.sh", f'#!/bin/bash\ntouch {mark}\n[ "$1" = execute ] && echo \'{{"output": "hi"}}\'\nexit 0\n')
    write(ws, {"execute": "scripts/ok.sh"}, env=())
    for extra in ((), ("--what", "the answer is wrong")):
        r = fix(rook_cli, ws, "--author", "no-such-author-agent -p", *extra)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert "--author: 'no-such-author-agent' is not installed (not on PATH)" in r.stderr
        assert not mark.exists(), "a hook ran despite a bad --author"
    # a path is looked up from the workspace, where the author agent runs
    r = fix(rook_cli, ws, "--author", "./nope-author.sh --x")
    assert r.exit_code == 2 and "--author: './nope-author.sh' not found (no " in r.stderr, r.stderr
    assert not mark.exists(), "a hook ran despite an --author path to no file"
    # config.yaml's author, asked whenever --what is given: refused before the test too
    config = ws.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text("author: no-such-author-agent\n")
    r = fix(rook_cli, ws, "--what", "the answer is wrong")
    assert r.exit_code == 2 and f"{config}: author: 'no-such-author-agent'" in r.stderr, r.stderr
    assert not mark.exists(), "a hook ran despite a bad author: in config.yaml"
    config.unlink()
    r = rook_cli("profile", "add", "q", "--command", "cat", "--author", "no-such-author-agent",
                 "--workspace", str(ws.root))
    assert r.exit_code == 2 and "--author: 'no-such-author-agent'" in r.stderr, r.stdout + r.stderr
    assert not (ws.agent_dir / "profiles" / "q.yaml").exists()


STDIN_AGENT = 'import sys\nprint("you said: " + sys.stdin.read().strip())\n'
ARGV_AGENT = """import sys
if len(sys.argv) != 2:
    sys.exit("usage: agent.py PROMPT")
print("you said: " + sys.argv[1])
"""


def test_fix_gives_a_command_that_now_wants_its_prompt_as_an_argument_the_goal_so(
    rook_workspace, rook_cli
):
    """A `--command` profile whose command took the goal on stdin and now demands it
    as an argument (a usage message): `rook profile fix` makes the switch `profile add`
    makes for a new one, in the script's GOAL_AS_ARGUMENT line alone (the user's edits
    stay); and back, when the command reads stdin again and refuses the argument."""
    ws = rook_workspace
    agent = ws.root / "agent.py"
    agent.write_text(STDIN_AGENT)
    r = rook_cli(
        "profile", "add", "local", "--workspace", str(ws.root), "--command",
        f"{sys.executable} agent.py",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    script = ws.agent_dir / "scripts" / "local-hook.py"
    edited = script.read_text() + "# my own note\n"
    script.write_text(edited)
    agent.write_text(ARGV_AGENT)

    r = fix(rook_cli, ws, "local")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "changed: the command refused the goal on its standard input (exited with code 1): " \
        "scripts/local-hook.py gives it the goal as its last argument now " \
        "(GOAL_AS_ARGUMENT = True)" in r.stdout, r.stdout
    assert "answer: you said: Say hello in one short sentence." in r.stdout
    assert script.read_text() == edited.replace(
        "\nGOAL_AS_ARGUMENT = False\n", "\nGOAL_AS_ARGUMENT = True\n"
    )
    assert script.with_name("local-hook.py.bak").read_text() == edited

    agent.write_text(STDIN_AGENT.replace("import sys", "import sys\nsys.argv[1:] and sys.exit(2)"))
    r = fix(rook_cli, ws, "local")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "changed: the command refused the goal as its last argument (exited with code 2): " \
        "scripts/local-hook.py gives it the goal on its standard input now " \
        "(GOAL_AS_ARGUMENT = False)" in r.stdout, r.stdout
    assert script.read_text() == edited

    # any other failure of the command is its own: nothing changed, exit 1
    agent.write_text("import sys\nsys.exit('the model is down')\n")
    r = fix(rook_cli, ws, "local")
    assert r.exit_code == 1 and "not fixed; nothing was changed" in r.stdout, r.stdout
    assert script.read_text() == edited


def test_fix_finds_the_command_script_however_the_profile_spells_its_path(
    rook_workspace, rook_cli
):
    """The profile names the hook script `./scripts/local-hook.py` (or by its absolute
    path) where `profile add` wrote `scripts/local-hook.py`: fix switched the goal's way
    only for the exact path it was written with, and said 'not fixed' otherwise. The
    paths are compared where they lead now."""
    ws = rook_workspace
    agent = ws.root / "agent.py"
    agent.write_text(STDIN_AGENT)
    r = rook_cli(
        "profile", "add", "local", "--workspace", str(ws.root), "--command",
        f"{sys.executable} agent.py",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    script = ws.agent_dir / "scripts" / "local-hook.py"
    yaml_file = ws.agent_dir / "profiles" / "local.yaml"
    text = yaml_file.read_text()
    assert "execute: scripts/local-hook.py" in text, text
    yaml_file.write_text(text.replace("execute: scripts/local-hook.py", "execute: ./scripts/local-hook.py"))
    agent.write_text(ARGV_AGENT)

    r = fix(rook_cli, ws, "local")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "./scripts/local-hook.py gives it the goal as its last argument now" in r.stdout, r.stdout
    assert "\nGOAL_AS_ARGUMENT = True\n" in script.read_text()
    assert "execute: ./scripts/local-hook.py" in yaml_file.read_text()  # as the user wrote it

    # by its absolute path, back to standard input
    yaml_file.write_text(text.replace("execute: scripts/local-hook.py", f"execute: {script}"))
    agent.write_text(STDIN_AGENT.replace("import sys", "import sys\nsys.argv[1:] and sys.exit(2)"))
    r = fix(rook_cli, ws, "local")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "gives it the goal on its standard input now" in r.stdout, r.stdout
    assert "\nGOAL_AS_ARGUMENT = False\n" in script.read_text()


def test_fix_that_drops_the_conversation_handle_leaves_no_placeholder_that_only_sends_null(
    rook_workspace, rook_cli, authoring_server
):
    """An HTTP profile whose agent stopped returning a conversation id: fix removed
    extract.conversation but left the body's ``session_id: '{{conversation}}'``,
    which could then only ever send null while reading as a conversation carried on.
    The body now says what is sent (null, as the test that passed sent it), and the
    change is named."""
    ws = rook_workspace
    path = write(
        ws,
        {
            "execute": {
                "http": {
                    "url": f"{authoring_server.url}/jsononly",
                    "body": {"message": "{{goal}}", "session_id": "{{conversation}}"},
                    "extract": {"output": "output", "conversation": "session_id"},
                }
            }
        },
        env=(),
        capabilities={"multi_turn": True},
    )
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "FAILED (no_conversation)" in r.stdout
    assert "conversation extraction removed" in r.stdout
    assert "changed: body.session_id: null, as it was sent" in r.stdout
    data = yaml.safe_load(path.read_text())
    http = data["hooks"]["execute"]["http"]
    assert http["body"] == {"message": "{{goal}}", "session_id": None}
    assert "extract" not in http or "conversation" not in http["extract"]
    assert data["capabilities"]["multi_turn"] is False
    sent = [q["json"] for q in authoring_server.requests if q["path"] == "/jsononly"]
    assert sent and all(b["session_id"] is None for b in sent)


def test_an_agent_that_keeps_answering_429_is_waited_for_not_repaired(
    rook_workspace, rook_cli, authoring_server
):
    """An agent that answered 429 Too Many Requests on every attempt (its rate limit)
    ended rook profile fix with 'next: name an author agent ...', and profile test and
    add sent the user to profile fix: no repair lifts a rate limit. Each now says to
    wait, or to let Rook wait longer, and profile fix tries no repair."""
    ws = rook_workspace
    limited = [(429, {"Retry-After": "0"})] * 3
    url = f"{authoring_server.url}/flaky/limited"
    write(ws, {"execute": {"http": {"url": url, "body": {"m": "{{goal}}"}, "retries": 1}}}, env=())
    for command in ("test", "fix"):
        authoring_server.flaky["limited"] = list(limited)
        r = rook_cli("profile", command, "p", "--workspace", str(ws.root))
        assert r.exit_code == 1, r.stdout + r.stderr
        assert "FAILED (rate_limited)" in r.stdout, r.stdout
        (step,) = [line for line in r.stdout.splitlines() if line.startswith("next: ")]
        assert step.startswith(
            "next: the agent kept answering HTTP 429 Too Many Requests (its rate limit"
        ), step
        assert step.endswith(f"then run rook profile test p -w {ws.root}"), step
        assert "test after repair" not in r.stdout and "author agent" not in r.stdout
    authoring_server.flaky["limited"] = list(limited)
    r = rook_cli(
        "profile", "add", "q", "--workspace", str(ws.root), input=f"curl {url} --json '{{\"m\": \"hi\"}}' --retry 1"
    )
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "rook profile fix" not in r.stdout, r.stdout
    assert "the agent kept answering HTTP 429 Too Many Requests" in r.stdout, r.stdout


def test_an_http_attempt_that_runs_out_of_its_own_timeout_is_a_timeout(
    rook_workspace, rook_cli, agent_server
):
    """An http: entry whose attempt ran out of its own timeout_seconds ('TimeoutError:
    no complete response within 0.5 s') was a plain failure: FAILED, next: rook profile
    fix, which then said 'name an author agent'. It is a timeout, with a timeout's next
    step: check the target, or raise the timeout the diagnosis names."""
    ws = rook_workspace
    entry = {"url": f"{agent_server.url}/trickle", "timeout_seconds": 0.5, "retries": 0}
    write(ws, {"execute": {"http": entry}}, env=())
    for command in ("test", "fix"):
        r = rook_cli("profile", command, "p", "--workspace", str(ws.root))
        assert r.exit_code == 1, r.stdout + r.stderr
        assert "FAILED (timeout)" in r.stdout and "no complete response within 0.5 s" in r.stdout
        (step,) = [line for line in r.stdout.splitlines() if line.startswith("next: ")]
        assert step.startswith("next: check that the target is up and answers"), step
        assert "raise the timeout the diagnosis above names" in step, step


def test_a_profile_fix_rewrites_and_profile_show_shows_keep_numbers_as_written(
    rook_workspace, rook_cli, authoring_server
):
    """A repaired profile is written anew from its data, and rook profile show prints
    it so: 'X-Api-Version: 1.10' came back as 1.1 (another version) and 0755 as 493,
    which YAML reads the numbers as. Both keep each number as the file wrote it."""
    ws = rook_workspace
    host = authoring_server.url.split("//", 1)[1]
    path = ws.agent_dir / "profiles" / "p.yaml"
    path.write_text(
        "id: p\nhooks:\n  execute:\n    http:\n"
        f"      url: http://{host}/moved/strict\n"
        "      headers: {X-Api-Version: 1.10, X-Mode: 0755}\n"
        "      body: {message: '{{goal}}', temperature: 0.50}\n"
    )
    shown = rook_cli("profile", "show", "p", "--workspace", str(ws.root))
    assert "X-Api-Version: 1.10\n" in shown.stdout and "X-Mode: 0755\n" in shown.stdout, shown.stdout
    r = fix(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    text = path.read_text()
    assert "/strict" in text and "/moved/" not in text, text  # repaired and rewritten
    assert "X-Api-Version: 1.10\n" in text and "X-Mode: 0755\n" in text, text
    assert "temperature: 0.50\n" in text, text
