"""Workspace criteria (file, command) for coding agents, and a judge reached over HTTP."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

# A "coding agent": writes a report into the scenario's workspace directory.
CODER = """
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    goal=$(cat)
    mkdir -p "$ROOK_WORKSPACE/project/out"
    printf '# Report\\n\\n## Summary\\nAll %s tests pass.\\n' "$goal" > "$ROOK_WORKSPACE/project/out/report.md"
    echo '{"output": "done"}'
"""


def coder(ws, scenario):
    ws.script("coder.sh", CODER)
    ws.profile({"id": "coder", "hooks": {"execute": "scripts/coder.sh"}})
    (ws.root / "project").mkdir(exist_ok=True)
    ws.scenario({"id": "s", "goal": "42", "workspace": "project", **scenario})


def verdicts(r):
    return [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]


@pytest.mark.parametrize("criterion, expected, needle", [
    ({"file": "out/report.md"}, "passed", "exists"),
    ({"file": {"path": "out/report.md", "exists": True}}, "passed", "exists"),
    ({"file": {"path": "out/missing.md", "exists": False}}, "passed", "does not exist"),
    ({"file": {"path": "out/missing.md"}}, "failed", "does not exist"),
    ({"file": {"path": "out/report.md", "contains": "## summary"}}, "passed", "contains"),
    ({"file": {"path": "out/report.md", "contains": "failure"}}, "failed", "does not contain"),
    ({"file": {"path": "out/report.md", "not_contains": "failure"}}, "passed", "does not contain"),
    ({"file": {"path": "out/report.md", "matches": r"All \d+ tests"}}, "passed", "matches"),
    ({"file": {"path": "out/report.md", "not_matches": r"All \d+ tests"}}, "failed", "matches"),
    ({"file": {"path": "out/missing.md", "contains": "x"}}, "failed", "does not exist"),
    # a folder where a file was expected: it was "does not exist (or is not a file)"
    ({"file": {"path": "out", "contains": "x"}}, "failed", "/out is a directory, not a file"),
    ({"command": {"run": "grep -q 'All 42' out/report.md"}}, "passed", "exited 0"),
    ({"command": "test -f out/report.md"}, "passed", "exited 0"),
    ({"command": {"run": "grep 'All 43' out/report.md", "exit": 0}}, "failed", "exited 1"),
    ({"command": {"run": ["sh", "-c", "echo broken >&2; exit 4"], "exit": 4}}, "passed",
     "exited 4"),
    ({"command": {"run": "echo nope >&2; exit 2"}}, "failed", "nope"),
])
def test_workspace_criteria(rook_workspace, rook_cli, criterion, expected, needle):
    coder(rook_workspace, {"criteria": [criterion]})
    r = rook_cli("run", "--json")
    status, reason = verdicts(r)[0]
    assert (status, needle in reason) == (expected, True), reason


def test_command_runs_in_the_scenario_workspace_and_is_recorded(rook_workspace, rook_cli):
    coder(rook_workspace, {"criteria": [{"command": {"run": "pwd; ls out"}}]})
    r = rook_cli("run", "--json")
    c = r.report["scenarios"][0]["criteria"][0]
    assert c["status"] == "passed"
    cmd = c["evidence"]["command"]
    assert cmd["cwd"] == str(rook_workspace.root / "project")
    assert cmd["exit_code"] == 0 and "report.md" in cmd["stdout"]



def test_command_gets_the_hook_environment_without_rook_variables(
    rook_workspace, rook_cli, monkeypatch
):
    """criteria.md: a command runs with the agent's hook environment (hook_env and
    the profile's env variables) without ROOK_* variables; exit -N is a command
    killed by signal N."""
    monkeypatch.setenv("CODER_KEY", "ck-77aa66bb55")
    coder(rook_workspace, {"criteria": [
        {"command": {"run": 'test "$FOO" = bar && test "$CODER_KEY" = ck-77aa66bb55 && '
                            'test -z "$(env | grep ^ROOK_)"'}},
        {"command": {"run": "kill -TERM $$", "exit": -15}},
        {"command": {"run": "kill -TERM $$"}}]})
    rook_workspace.profile({"id": "coder", "hooks": {"execute": "scripts/coder.sh"},
                            "hook_env": {"FOO": "bar"},
                            "env": [{"variable": "CODER_KEY", "purpose": "a key"}]})
    r = rook_cli("run", "--json")
    assert [s for s, _ in verdicts(r)] == ["passed", "passed", "failed"], verdicts(r)
    assert "exited -15 (expected 0)" in verdicts(r)[2][1]

def test_default_workspace_is_the_rook_workspace(rook_workspace, rook_cli):
    rook_workspace.script("coder.sh", CODER)
    rook_workspace.profile({"id": "coder", "hooks": {"execute": "scripts/coder.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "7", "criteria": [
        {"file": {"path": "project/out/report.md", "contains": "All 7 tests"}}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}


def test_a_command_that_hangs_fails_and_its_process_group_is_killed(
    rook_workspace, rook_cli, tmp_path
):
    pidfile = tmp_path / "grandchild.pid"
    coder(rook_workspace, {"criteria": [{"command": {
        "run": f"sleep 60 & echo $! > {pidfile}; wait", "timeout_seconds": 0.5}}]})
    r = rook_cli("run", "--json")
    status, reason = verdicts(r)[0]
    assert status == "failed" and "did not finish within 0.5 s" in reason
    pid = int(pidfile.read_text())
    for _ in range(50):  # the kill is asynchronous: give it a moment
        if not alive(pid):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the command's background process survived its timeout")


@pytest.mark.parametrize("lang", ["bash", "python", "node", "bash daemon"])
def test_a_commands_descendant_that_escapes_with_setsid_dies_at_its_timeout_and_is_recorded(
    rook_workspace, rook_cli, tmp_path, lang
):
    """A command's descendant in a session of its own (bash setsid, Python os.setsid,
    Node detached: true) is out of reach of the group kill: it was killed at the
    command's timeout, but unlike a hook's (details.process) the kill was nowhere in
    the record. The criterion's evidence lists it (command.process)."""
    pidfile = tmp_path / "escaped.pid"
    escape = {
        "bash": ["bash", "-c", f"setsid sleep 300 & echo $! > {pidfile}; sleep 300"],
        # double fork: orphaned at once, found by RUN_BY_ROOK (it outlived the timeout)
        "bash daemon": ["bash", "-c", "( setsid sleep 300 </dev/null >/dev/null 2>&1 & "
                        f"echo $! > {pidfile} ); sleep 300"],
        "python": [sys.executable, "-c", "import os, time\n"
                   "pid = os.fork()\n"
                   "if pid == 0:\n os.setsid(); os.execvp('sleep', ['sleep', '300'])\n"
                   f"open({str(pidfile)!r}, 'w').write(str(pid)); time.sleep(300)"],
        "node": ["node", "-e", "const c = require('child_process').spawn('sleep', ['300'], "
                 "{detached: true, stdio: 'inherit'}); "
                 f"require('fs').writeFileSync({json.dumps(str(pidfile))}, String(c.pid)); "
                 "setTimeout(() => {}, 300000)"],
    }[lang]
    coder(rook_workspace, {"criteria": [{"command": {"run": escape, "timeout_seconds": 1}}]})
    r = rook_cli("run", "--json")
    c = r.report["scenarios"][0]["criteria"][0]
    assert c["status"] == "failed" and "did not finish within 1 s" in c["reason"]
    escaped = int(pidfile.read_text())
    for _ in range(50):
        if not alive(escaped):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the command's escaped descendant survived its timeout")
    process = c["evidence"]["command"].get("process", [])
    assert any(f"pid {escaped}" in n for n in process), c["evidence"]


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper is dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_missing_workspace_directory_is_an_error(rook_workspace, rook_cli):
    rook_workspace.script("coder.sh", CODER)
    rook_workspace.profile({"id": "coder", "hooks": {"execute": "scripts/coder.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "1", "workspace": "nowhere",
                             "criteria": [{"file": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    assert "does not exist" in verdicts(r)[0][1]


def test_a_workspace_that_is_a_file_is_an_error_saying_so(rook_workspace, rook_cli):
    # was "the scenario's workspace directory .../notes.txt does not exist"
    rook_workspace.script("coder.sh", CODER)
    rook_workspace.profile({"id": "coder", "hooks": {"execute": "scripts/coder.sh"}})
    (rook_workspace.root / "notes.txt").write_text("a file\n")
    rook_workspace.scenario({"id": "s", "goal": "1", "workspace": "notes.txt",
                             "criteria": [{"file": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    assert verdicts(r)[0][1] == (f"the scenario's workspace directory "
                                 f"{rook_workspace.root}/notes.txt is not a directory")


@pytest.mark.parametrize("criterion, needle", [
    ({"file": {"path": "a", "contains": "x", "matches": "y"}}, "at most one"),
    ({"file": {"path": "a", "matches": "(open"}}, "regular expression"),
    ({"file": {"path": "a", "size": 3}}, "criteria.0.file.size"),
    ({"command": {"run": "true", "exit": "zero"}}, "criteria.0.command.exit"),
    ({"command": {"run": "true", "exit": 300}}, "0 to 255"),  # no process exits 300
    ({"command": {"run": "true", "exit": -65}}, "criteria.0.command.exit"),
    ({"command": {"run": "true", "timeout_seconds": 0}}, "timeout_seconds"),
    ({"command": {"exit": 0}}, "criteria.0.command"),
    # a check of the agent's work, not of this machine: /etc/passwd, ../, ~ were read
    ({"file": "/etc/passwd"}, "criteria.0.file.path: must be a path inside"),
    ({"file": {"path": "../outside.txt", "exists": True}}, "must be a path inside"),
    ({"file": {"path": "~/.ssh/id_rsa"}}, "must be a path inside"),
    # `turn: 2` was accepted, and a turn never sent made the check unverifiable
    ({"file": "out/report.md", "turn": 1},
     "criteria.0.turn: does not apply to file criteria: they judge what the scenario left"),
    ({"command": "true", "turn": "all"}, "criteria.0.turn: does not apply to command criteria"),
    # a NUL byte no path or argument can hold was the criterion's error at judging time
    # ("criterion file raised ValueError: embedded null byte"), after the agent ran
    ({"file": "out/report\0.md"}, "criteria.0.file.path: must be a path inside"),
    ({"command": "test -f out\0x"}, "criteria.0.command.run: must be a command line"),
    ({"command": {"run": ["test", "-f", "a\0"]}}, "criteria.0.command.run: must be a command"),
    ({"command": {"run": ["", "x"]}}, "criteria.0.command.run: must be a command line"),
])
def test_invalid_workspace_criteria_are_refused(rook_workspace, rook_cli, criterion, needle):
    coder(rook_workspace, {"criteria": [criterion]})
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr


class _Judge(BaseHTTPRequestHandler):
    """A chat-style judge endpoint: passes when the prompt shows the agent said 'done'."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        ok = '"output": "done"' in prompt
        content = json.dumps({"pass": ok, "reason": "agent said done" if ok else "no"})
        data = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def judge_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_judge_profile_reached_over_http(rook_workspace, rook_cli, judge_server):
    coder(rook_workspace, {"criteria": [{"rubric": "the agent reports it is done"}]})
    rook_workspace.profile({"id": "llm-judge", "hooks": {"execute": {"http": {
        "url": f"{judge_server}/v1/chat",
        "body": {"messages": [{"role": "user", "content": "{{goal}}"}]},
        "extract": {"output": "choices[0].message.content"},
    }}}}, active=False)
    r = rook_cli("run", "--json", "--judge-profile", "llm-judge")
    assert r.exit_code == 0, r.stdout + r.stderr
    c = r.report["scenarios"][0]["criteria"][0]
    assert c["status"] == "passed" and "agent said done" in c["reason"]
    assert c["evidence"]["judge"]["hooks"][0]["transport"] == "http"


def test_file_contains_reads_canonically_equivalent_text_as_the_same(rook_workspace, rook_cli):
    # the agent wrote "café" as e + U+0301; the scenario forbids "café" (U+00E9)
    coder(
        rook_workspace,
        {
            "goal": "cafe\u0301",
            "criteria": [
                {"file": {"path": "out/report.md", "not_contains": "caf\u00e9"}},
                {"file": {"path": "out/report.md", "contains": "ALL CAF\u00c9"}},
                # a pattern too (not_matches passed on it)
                {"file": {"path": "out/report.md", "not_matches": "caf\u00e9 tests"}},
                {"file": {"path": "out/report.md", "matches": "All caf\u00e9 tests"}},
            ],
        },
    )
    r = rook_cli("run", "--json")
    assert [v[0] for v in verdicts(r)] == ["failed", "passed", "failed", "passed"], verdicts(r)


def test_a_link_out_of_the_workspace_is_not_checked(rook_workspace, rook_cli, tmp_path):
    """A symlink the agent made to a file outside its workspace was read and passed."""
    outside = tmp_path / "outside.txt"
    outside.write_text("All 42 tests pass")
    rook_workspace.script("linker.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        mkdir -p "$ROOK_WORKSPACE/project/out"
        ln -sf {outside} "$ROOK_WORKSPACE/project/out/report.md"
        echo '{{"output": "done"}}'
    """)
    rook_workspace.profile({"id": "coder", "hooks": {"execute": "scripts/linker.sh"}})
    (rook_workspace.root / "project").mkdir(exist_ok=True)
    rook_workspace.scenario({"id": "s", "goal": "42", "workspace": "project", "criteria": [
        {"file": {"path": "out/report.md", "contains": "All 42"}}]})
    r = rook_cli("run", "--json")
    status, reason = verdicts(r)[0]
    assert status == "error" and "leads outside the workspace" in reason, reason



SANDBOXED = """
    #!/bin/bash
    mkdir -p "$RUHROH_WORKSPACE/out"
    echo "Summary: all $RUHROH_ITERATION done" > "$RUHROH_WORKSPACE/out/report.md"
    echo '{"status": "goal_satisfied"}'
"""


def test_workspace_criteria_look_where_a_ruhroh_wrapper_worked(rook_workspace, rook_cli):
    """A Ruhroh wrapper works in its own sandbox (RUHROH_WORKSPACE, under the
    run's state directory), but file and command criteria looked at the Rook
    workspace: the report it wrote was never seen, and a stale out/report.md
    in the user's checkout would have passed. With no ``workspace:`` in the
    scenario they now look at the agent workspace the hook reported."""
    ws = rook_workspace
    ws.script("wrapper.sh", SANDBOXED)
    ws.profile({"id": "w", "hooks": {"execute": {"ruhroh": {"command": "scripts/wrapper.sh"}}}})
    (ws.root / "out").mkdir()
    (ws.root / "out" / "report.md").write_text("stale: the user's own file\n")
    ws.scenario({"id": "s", "goal": "write the report", "criteria": [
        {"file": {"path": "out/report.md", "contains": "Summary: all 1 done"}},
        {"file": {"path": "out/report.md", "not_contains": "stale"}},
        {"command": {"run": "pwd; grep -q Summary out/report.md"}},
    ]})
    ws.scenario({"id": "named", "goal": "g", "workspace": ".", "criteria": [
        {"file": {"path": "out/report.md", "contains": "stale"}},  # named: as before
    ]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, (r.stderr, [e["criteria"] for e in r.report["scenarios"]])
    sandbox = r.report["scenarios"][1]["turns"][-1]["evidence"]["workspace"]
    assert sandbox.endswith("/state/s.1/ruhroh/workspace"), sandbox
    cmd = r.report["scenarios"][1]["criteria"][2]
    assert sandbox in cmd["reason"] + json.dumps(cmd), cmd


def test_a_reported_workspace_that_is_gone_is_an_error_naming_it(rook_workspace, rook_cli):
    rook_workspace.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{"output": "done", "workspace": "gone/away"}'
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"file": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    assert verdicts(r)[0][1] == (
        f"the agent workspace its execute hook reported {rook_workspace.root}/gone/away "
        "does not exist")


@pytest.mark.parametrize("reported, shown", [
    ("5", "5"), ('["a"]', '["a"]'), ('""', '""'), ('"  "', '"  "'), ("true", "true"),
])
def test_a_reported_workspace_that_is_not_a_path_is_an_error_naming_it(
    rook_workspace, rook_cli, reported, shown
):
    # was ignored: the file criterion then looked in the Rook workspace, where
    # a stale file of the same name passed it
    rook_workspace.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{{"output": "done", "workspace": {reported}}}'
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    (rook_workspace.root / "x").write_text("stale\n")
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"file": "x"}, {"command": {"run": "true"}}, {"contains": "done"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}
    (fs, fr), (cs, cr), (ok, _) = verdicts(r)
    assert fs == cs == "error" and ok == "passed"
    assert fr == cr == (
        f"the agent workspace its execute hook reported in turn 1 ({shown}) is not a path"), fr


def test_a_reported_workspace_no_system_call_can_take_is_an_error_naming_why(
    rook_workspace, rook_cli
):
    # a name of 5,000 characters: checking it raised OSError (File name too long) out of
    # the built-in criterion, shown as "criterion file (workspace_criteria (rook-harness))
    # raised OSError: [Errno 36] ..." with the whole name
    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        sys.stdin.read()
        print(json.dumps({"output": "done", "workspace": "w" * 5000}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"file": "x"}, {"command": {"run": "true"}}, {"contains": "done"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    (fs, fr), (cs, cr), (ok, _) = verdicts(r)
    assert fs == cs == "error" and ok == "passed"
    for reason in (fr, cr):
        assert reason.startswith(
            f"the agent workspace its execute hook reported {rook_workspace.root}/www"), reason
        assert reason.endswith(" cannot be used: File name too long"), reason
        assert "raised" not in reason and len(reason) < 500, reason


def test_a_file_path_no_system_call_can_take_is_an_error_naming_why(rook_workspace, rook_cli):
    # the agent's workspace and the file's path together longer than a name may be: was
    # "criterion file (workspace_criteria (rook-harness)) raised OSError: [Errno 36] ..."
    rook_workspace.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{"output": "done"}'
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"file": "f" * 5000}, {"file": {"path": "f" * 300, "contains": "x"}}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    for status, reason in verdicts(r):
        assert status == "error", reason
        assert reason.startswith(f"{rook_workspace.root}/fff"), reason
        assert reason.endswith(" cannot be checked: File name too long"), reason
        assert "raised" not in reason and len(reason) < 500, reason


def test_a_file_larger_than_rook_reads_is_never_judged_on_its_first_part_alone(
    rook_workspace, rook_cli
):
    """Rook reads the first 10 MiB of a file: a text found there decides, but one
    not found there may lie in the rest. Such a check passed not_contains (and
    failed contains) on an 11 MiB log that ends with the text."""
    coder(rook_workspace, {"criteria": [
        {"file": {"path": "big.log", "not_contains": "Traceback"}},
        {"file": {"path": "big.log", "contains": "traceback"}},
        {"file": {"path": "big.log", "not_matches": "Trace"}},
        {"file": {"path": "big.log", "matches": "^start"}},
        {"file": {"path": "big.log", "not_contains": "start"}},
    ]})
    log = rook_workspace.root / "project" / "big.log"
    log.write_bytes(b"start\n" + b"x" * (11 * 1024 * 1024) + b"\nTraceback (most recent)\n")
    r = rook_cli("run", "--json")
    got = verdicts(r)
    assert [status for status, _ in got] == ["error", "error", "error", "passed", "failed"], got
    assert "larger than the 10 MiB Rook reads of a file" in got[0][1], got[0][1]
    assert "the rest was not checked" in got[0][1], got[0][1]


def test_a_file_that_is_not_utf8_is_never_judged_on_what_could_not_be_read(
    rook_workspace, rook_cli
):
    """A file was read as UTF-8 with its undecodable bytes replaced: not_contains
    'café' passed on a Latin-1 file holding 'Café', and not_contains 'summary'
    on a UTF-16 file (PowerShell's Out-File) holding 'Summary'. A UTF-16 or
    UTF-8 file with a byte order mark is read as such; in a file that is not
    UTF-8 text, a text found decides, and one not found is an error."""
    coder(rook_workspace, {"criteria": [
        {"file": {"path": "latin.txt", "not_contains": "café"}},
        {"file": {"path": "latin.txt", "contains": "café"}},
        {"file": {"path": "latin.txt", "contains": "order"}},
        {"file": {"path": "latin.txt", "not_matches": "order"}},
        {"file": {"path": "utf16.txt", "not_contains": "summary"}},
        {"file": {"path": "utf16.txt", "contains": "summary"}},
        {"file": {"path": "bom8.txt", "matches": "^Summary"}},
    ]})
    project = rook_workspace.root / "project"
    (project / "latin.txt").write_bytes("Café order\n".encode("latin-1"))
    (project / "utf16.txt").write_text("## Summary\n", encoding="utf-16")
    (project / "bom8.txt").write_text("Summary\n", encoding="utf-8-sig")
    r = rook_cli("run", "--json")
    got = verdicts(r)
    statuses = [status for status, _ in got]
    assert statuses == ["error", "error", "passed", "failed", "failed", "passed", "passed"], got
    assert "is not UTF-8 text (byte 0xe9 at offset 3)" in got[0][1], got[0][1]


def test_a_utf16_file_without_a_byte_order_mark_is_read_as_utf16(rook_workspace, rook_cli):
    """UTF-16 without a byte order mark (what some Windows tools write) is
    valid UTF-8 when its text is ASCII, NUL bytes between the letters: it was
    read so, and not_contains 'summary' passed on a file holding 'Summary'.
    A file holding NUL bytes that is no such text (a binary file) is judged
    as one not UTF-8: a text found decides, one not found is an error."""
    coder(rook_workspace, {"criteria": [
        {"file": {"path": "le.txt", "not_contains": "summary"}},
        {"file": {"path": "le.txt", "contains": "summary"}},
        {"file": {"path": "be.txt", "matches": "(?m)^## Summary$"}},
        {"file": {"path": "blob.bin", "not_contains": "secret"}},
        {"file": {"path": "blob.bin", "not_contains": "summary"}},
        {"file": {"path": "nul.txt", "not_contains": "summary"}},
    ]})
    project = rook_workspace.root / "project"
    (project / "le.txt").write_bytes("## Summary\nAll good\n".encode("utf-16-le"))
    (project / "be.txt").write_bytes("## Summary\nAll good\n".encode("utf-16-be"))
    (project / "blob.bin").write_bytes(b"\x00\x01\x02\x03SECRET\x00\x00\x07\x08" * 8)
    (project / "nul.txt").write_bytes(b"plain text\x00with a NUL byte\n")
    r = rook_cli("run", "--json")
    got = verdicts(r)
    statuses = [status for status, _ in got]
    assert statuses == ["failed", "passed", "passed", "failed", "error", "error"], got
    assert "contains 'secret'" in got[3][1], got[3][1]
    assert "is not text (a NUL byte at offset 0" in got[4][1], got[4][1]
    assert "is not text (a NUL byte at offset 10" in got[5][1], got[5][1]
    assert "a binary file cannot be checked for text" in got[4][1], got[4][1]


def test_a_utf32_file_with_a_byte_order_mark_is_read_as_utf32(rook_workspace, rook_cli):
    """UTF-32 with its byte order mark (Python's utf-32, PowerShell's -Encoding
    utf32) begins with UTF-16's little-endian mark: it was read as UTF-16, a NUL
    between the letters, so not_contains 'summary' passed on a file holding
    'Summary' and contains failed."""
    coder(rook_workspace, {"criteria": [
        {"file": {"path": "le.txt", "not_contains": "summary"}},
        {"file": {"path": "le.txt", "contains": "summary"}},
        {"file": {"path": "be.txt", "matches": "(?m)^## Summary$"}},
    ]})
    project = rook_workspace.root / "project"
    (project / "le.txt").write_bytes("## Summary\nAll good\n".encode("utf-32"))
    (project / "be.txt").write_bytes(b"\0\0\xfe\xff" + "## Summary\n".encode("utf-32-be"))
    r = rook_cli("run", "--json")
    got = verdicts(r)
    assert [status for status, _ in got] == ["failed", "passed", "passed"], got
