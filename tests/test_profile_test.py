"""`rook profile test`: one scenario through the real engine, capabilities compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest_plugins = ["servers.fixtures"]

PROBE_SCRIPT = """
#!/usr/bin/env python3
import json, os, sys
phase = sys.argv[1]
log = os.path.join(os.environ["ROOK_STATE_DIR"], "..", "..", "..", "phases.log")
if phase == "open":
    print(json.dumps({"conversation": "c-1"}))
elif phase == "execute":
    goal = sys.stdin.read()
    print(json.dumps({"output": "you said: " + goal, "usage": {"input": 3, "output": 4}}))
elif phase == "collect":
    print(json.dumps({"trace": "t-1"}))
sys.stderr.write(phase + " " + os.environ.get("ROOK_RUN_ID", "") + "\\n")
"""


def profile_test(rook_cli, ws, *args, env=None):
    r = rook_cli("profile", "test", "--workspace", str(ws.root), *args, env=env)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def write(ws, caps, hooks=None, env=()):
    ws.script("agent.py", PROBE_SCRIPT)
    phases = ("prepare", "open", "execute", "close", "collect")
    ws.profile(
        {
            "id": "p",
            "hooks": hooks or {p: "scripts/agent.py" for p in phases},
            "capabilities": caps,
            "env": [{"variable": v, "purpose": f"{v} for the agent"} for v in env],
        }
    )


def test_runs_every_phase_and_shows_answer_and_times(rook_workspace, rook_cli):
    ws = rook_workspace
    write(ws, {"multi_turn": True, "usage": True})
    r = profile_test(rook_cli, ws, "--goal", "ping $HOME `x`")
    assert r.exit_code == 0, r.stdout + r.stderr
    for phase in ("prepare", "open", "execute 1", "close", "collect"):
        assert phase in r.stdout
    assert "answer: you said: ping $HOME `x`" in r.stdout
    assert "conversation: c-1" in r.stdout
    assert "observed capabilities: multi_turn, usage" in r.stdout
    assert not list(ws.runs_dir.iterdir()), "a profile test is kept out of history"
    observed = json.loads((ws.agent_dir / "profiles" / "p.observed.json").read_text())
    assert observed == {"multi_turn": True, "usage": True}


def test_json_document_and_phase_results(rook_workspace, rook_cli):
    ws = rook_workspace
    write(ws, {"multi_turn": True, "usage": True})
    r = profile_test(rook_cli, ws, "--json")
    doc = json.loads(r.stdout)
    assert doc["test"]["ok"] is True and doc["profile"]["id"] == "p"
    assert [h["phase"] for h in doc["test"]["hooks"]] == [
        "prepare",
        "open",
        "execute",
        "close",
        "collect",
    ]
    assert all(h["status"] == "ok" and h["seconds"] >= 0 for h in doc["test"]["hooks"])
    assert {c["capability"]: c["verdict"] for c in doc["capabilities"]} == {
        "multi_turn": "ok",
        "calls": "ok",
        "usage": "ok",
    }


def test_flags_optimistic_claims_and_unclaimed_observations(rook_workspace, rook_cli):
    ws = rook_workspace
    write(ws, {"calls": True})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1, "an optimistic claim fails the test"
    lines = {
        ln.split()[0]: ln
        for ln in r.stdout.splitlines()
        if ln.strip()[:5] in ("multi", "calls", "usage")
    }
    assert "OPTIMISTIC" in lines["calls"]
    assert "observed but not declared" in lines["multi_turn"]
    assert "observed but not declared" in lines["usage"]
    # what resolves it, as a failed hook's test says (it said nothing), with the
    # workspace it was given, so that it works as printed
    assert r.stdout.splitlines()[-1] == (
        f"next: rook profile test p -w {ws.root} --update (claims only what was observed), "
        "or show the capability in the hooks' output"
    ), r.stdout

    r = profile_test(rook_cli, ws, "--update")
    assert r.exit_code == 0, r.stdout
    caps = yaml.safe_load((ws.agent_dir / "profiles" / "p.yaml").read_text())["capabilities"]
    assert caps == {"multi_turn": True, "calls": False, "usage": True}
    assert profile_test(rook_cli, ws).exit_code == 0


def test_the_next_command_it_prints_works_as_printed_from_where_it_was_run(
    rook_workspace, tmp_path
):
    """examples/README.md has `rook profile test --workspace examples --project demo
    --agent faq-bot` run from the clone's root; it ended `next: rook profile test local
    --update ...`, which run as printed there found no workspace (exit 2). The command
    it prints keeps the -w/--project/--agent it was given, as rook run's `resume with:`
    does."""
    import shlex
    import subprocess
    import sys

    ws = rook_workspace
    write(ws, {"calls": True})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def rook(*argv):
        return subprocess.run(
            [sys.executable, "-m", "rook_core", *argv],
            cwd=elsewhere,
            capture_output=True,
            text=True,
            timeout=120,
        )

    where = ["--workspace", str(ws.root), "--project", ws.project, "--agent", ws.agent]
    r = rook("profile", "test", *where)
    assert r.returncode == 1, r.stdout + r.stderr
    last = r.stdout.splitlines()[-1]
    assert last.startswith("next: rook profile test p ") and " (claims only" in last, last
    printed = shlex.split(last[len("next: rook ") : last.index(" (claims only")])
    again = rook(*printed)
    assert again.returncode == 0, (printed, again.stdout + again.stderr)
    caps = yaml.safe_load((ws.agent_dir / "profiles" / "p.yaml").read_text())["capabilities"]
    assert caps == {"multi_turn": True, "calls": False, "usage": True}


def test_an_optimistic_claim_says_the_test_failed_where_it_says_the_result(
    rook_workspace, rook_cli
):
    """An optimistic claim fails the test (exit 1), but the summary line said
    "test: ok" and --json "test": {"ok": true}: what it printed and its exit code
    disagreed. Both say it failed and why; --update, which fixes the claim, passes."""
    ws = rook_workspace
    write(ws, {"calls": True, "usage": True})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1, r.stdout
    assert "test: FAILED (optimistic claim: calls, declared but not observed)" in r.stdout.splitlines(), r.stdout
    assert "test: ok" not in r.stdout, r.stdout
    r = profile_test(rook_cli, ws, "--json")
    assert r.exit_code == 1, r.stdout
    test = json.loads(r.stdout)["test"]
    assert test["ok"] is False and test["problem"] == "optimistic", test
    assert test["diagnosis"] == "optimistic claim: calls, declared but not observed", test
    assert test["phase"] is None and all(h["status"] == "ok" for h in test["hooks"]), test
    r = profile_test(rook_cli, ws, "--json", "--update")
    assert r.exit_code == 0, r.stdout
    test = json.loads(r.stdout)["test"]
    assert test["ok"] is True and test["problem"] is None, test


def test_an_optimistic_multi_turn_names_what_open_printed_that_is_no_handle(
    rook_workspace, rook_cli
):
    # open "returned" its handle as plain text: ignored, so multi_turn was not
    # observed; the table alone left the user wondering why
    ws = rook_workspace
    ws.script(
        "agent.sh",
        """
        #!/bin/bash
        case "$1" in
          open) echo thread_abc123 ;;
          execute) cat >/dev/null; echo '{"output": "ok"}' ;;
        esac
        exit 0
    """,
    )
    hooks = {"open": "scripts/agent.sh", "execute": "scripts/agent.sh"}
    ws.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1, r.stdout
    assert "open printed 'thread_abc123', which is not a JSON object" in r.stdout, r.stdout
    assert '{"conversation": "..."}' in r.stdout


@pytest.mark.parametrize(
    ("capability", "field", "said"),
    [
        ("usage", '"usage": {"input_tokens": 5, "output_tokens": 3}',
         "warning: usage has input_tokens, output_tokens but no input, output or total"),
        ("calls", '"tool_calls": []', "warning: the hook's output has tool_calls but no calls"),
    ],
)
def test_an_optimistic_usage_or_calls_names_what_the_api_called_them(
    rook_workspace, rook_cli, capability, field, said
):
    ws = rook_workspace
    ws.script(
        "agent.sh",
        f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat >/dev/null; echo '{{"output": "ok", {field}}}'
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "capabilities": {capability: True}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1, r.stdout
    assert said in r.stdout, r.stdout


def test_a_hook_repeating_a_key_the_contract_reads_is_named(rook_workspace, rook_cli):
    """A hook printing {"output": "ok", "output": "no"} was judged on the last value
    with no word (another JSON reader takes the first). rook profile test (not
    every scenario of a run) names each key the contract reads that an object
    repeats, in any phase, nested in usage and calls too, as a warning."""
    ws = rook_workspace
    ws.script(
        "agent.sh",
        """
        #!/bin/bash
        case "$1" in
          open) echo '{"conversation": "c1", "conversation": "c2", "note": 1, "note": 2}' ;;
          execute) cat >/dev/null
            echo '{"output": "ok", "output": "no", "usage": {"input": 1, "input": 2},'\
                 ' "calls": [{"name": "a", "name": "b"}], "extra": 1, "extra": 2}' ;;
          collect) echo '{"status": "goal_satisfied", "status": "cannot_satisfy"}' ;;
        esac
    """,
    )
    hooks = {p: "scripts/agent.sh" for p in ("open", "execute", "collect")}
    ws.profile({"id": "p", "hooks": hooks,
                "capabilities": {"multi_turn": True, "usage": True, "calls": True}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 0, r.stdout  # it works: Rook reads the last value, and says so
    warned = [ln.strip() for ln in r.stdout.splitlines() if "more than once" in ln]
    assert warned == [
        'warning: open printed a JSON object that gives "conversation" more than once: '
        "Rook reads the last value, another JSON reader may read the first; print each "
        "key once",
        'warning: execute printed a JSON object that gives "output", "usage.input", '
        '"calls[0].name" more than once: Rook reads the last value, another JSON reader '
        "may read the first; print each key once",
        'warning: collect printed a JSON object that gives "status" more than once: '
        "Rook reads the last value, another JSON reader may read the first; print each "
        "key once",
    ], r.stdout
    doc = json.loads(profile_test(rook_cli, ws, "--json").stdout)
    assert sum("more than once" in w for w in doc["test"]["warnings"]) == 3, doc
    # a run says nothing of it: the check is the profile test's, not each scenario's
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "no"}]})
    ran = rook_cli("run", "--workspace", str(ws.root))
    assert ran.exit_code == 0 and "more than once" not in ran.stdout + ran.stderr


def test_update_keeps_comments(rook_workspace, rook_cli):
    ws = rook_workspace
    write(ws, {})
    path = ws.agent_dir / "profiles" / "p.yaml"
    path.write_text("# my profile\n" + path.read_text() + "concurrency: 1  # keep me\n")
    assert profile_test(rook_cli, ws, "--update").exit_code == 0
    text = path.read_text()
    assert text.startswith("# my profile\n") and "# keep me" in text
    assert yaml.safe_load(text)["capabilities"]["usage"] is True
    # comments in the capabilities block itself stay with their lines
    path.write_text(text.replace("  calls: false", "  # what the agent shows\n  calls: false   # no tools yet"))
    assert profile_test(rook_cli, ws, "--update").exit_code == 0
    text = path.read_text()
    assert "  # what the agent shows\n" in text and "  calls: false   # no tools yet\n" in text, text


def test_update_keeps_an_anchor_and_refuses_to_lose_what_it_cannot_keep(rook_workspace, rook_cli):
    """--update dropped the anchor of `capabilities: &caps`; a profile written as
    one JSON mapping made it (and rook profile rename) end in a traceback."""
    ws = rook_workspace
    write(ws, {})
    path = ws.agent_dir / "profiles" / "p.yaml"
    text = path.read_text()
    path.write_text(text.replace("capabilities: {}", "capabilities: &caps  # claimed\n  calls: false"))
    assert profile_test(rook_cli, ws, "--update").exit_code == 0
    text = path.read_text()
    assert "capabilities: &caps  # claimed\n" in text, text
    assert yaml.safe_load(text)["capabilities"] == {"multi_turn": True, "calls": False, "usage": True}
    # one JSON mapping, no comment: nothing to lose, the data is written whole
    data = yaml.safe_load(text)
    data["capabilities"] = {}
    path.write_text(json.dumps(data))
    assert profile_test(rook_cli, ws, "--update").exit_code == 0
    assert yaml.safe_load(path.read_text())["capabilities"]["usage"] is True
    r = rook_cli("profile", "rename", "--workspace", str(ws.root), "p", "Renamed")
    assert "Traceback" not in r.stdout + r.stderr and r.exit_code == 0, r.stderr
    assert yaml.safe_load(path.read_text())["name"] == "Renamed"
    # ... with a comment, rewriting it would drop the comment: refused, before anything runs
    data["capabilities"] = {}
    before = "# staging desk\n" + json.dumps(data) + "\n"
    path.write_text(before)
    (ws.agent_dir / "profiles" / "p.observed.json").unlink()
    r = profile_test(rook_cli, ws, "--update")
    assert r.exit_code == 2 and str(path) in r.stderr and "capabilities" in r.stderr, r.stderr
    assert "by hand" in r.stderr, r.stderr
    assert path.read_text() == before
    assert not (ws.agent_dir / "profiles" / "p.observed.json").exists(), "nothing ran"
    r = rook_cli("profile", "rename", "--workspace", str(ws.root), "p", "Other")
    assert "Traceback" not in r.stdout + r.stderr and r.exit_code == 2, r.stderr
    assert path.read_text() == before


def test_failures_are_shown_with_their_phase(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("bad.sh", "#!/bin/bash\necho 'not json'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/bad.sh"}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1
    assert "FAILED (not_json)" in r.stdout and "not one JSON object" in r.stdout
    # a hook that fails in no particular way read "test: FAILED (failed)"
    ws.script("bad.sh", "#!/bin/bash\necho 'model not loaded' >&2\nexit 3\n")
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1 and "test: FAILED\n" in r.stdout, r.stdout
    assert "(failed)" not in r.stdout and "execute failed: exited with code 3" in r.stdout, r.stdout


def test_a_failure_rook_can_repair_points_to_rook_profile_fix(rook_workspace, rook_cli):
    """A hook that answers under another field (what `rook profile fix` repairs by
    itself): the test failed with no next step, as `profile add` and `fix` give one."""
    ws = rook_workspace
    ws.script("reply.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"reply": "hi"}\'\nexit 0\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/reply.sh"}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1 and "FAILED (no_answer)" in r.stdout, r.stdout + r.stderr
    assert "next: rook profile fix p" in r.stdout, r.stdout
    r = rook_cli("profile", "fix", "--workspace", str(ws.root))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile_test(rook_cli, ws).exit_code == 0


def test_missing_variables_exit_2_and_are_listed(rook_workspace, rook_cli):
    """A variable not set is a configuration error, said as rook run says it: on
    standard error (``rook: error: ...``), nothing on standard output, exit 2; with
    --json too, as rook run --json (the report went to standard output)."""
    ws = rook_workspace
    write(ws, {}, env=("DESK_TOKEN",))
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    run = rook_cli("run", "--json")
    assert run.exit_code == 2 and run.stdout == "", run.stdout + run.stderr
    for args in ((), ("--json",)):
        r = profile_test(rook_cli, ws, *args)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert r.stdout == "", r.stdout
        assert r.stderr == run.stderr, r.stderr  # rook run's own message
        assert r.stderr.startswith("rook: error: profile 'p' (") and (
            "needs these environment variables, which are not set:\n"
            "  DESK_TOKEN: DESK_TOKEN for the agent\n"
            "set them first, e.g.: export DESK_TOKEN=...\n"
        ) in r.stderr, r.stderr
    # exported empty (a CI secret that is missing): said so, as rook run says it
    r = profile_test(rook_cli, ws, env={"DESK_TOKEN": ""})
    assert r.exit_code == 2 and r.stdout == "", r.stdout
    assert "  DESK_TOKEN: DESK_TOKEN for the agent (set, but empty)\n" in r.stderr, r.stderr
    r = profile_test(rook_cli, ws, env={"DESK_TOKEN": "tok-secret-value"})
    assert r.exit_code == 0 and "tok-secret-value" not in r.stdout


def test_keep_leaves_the_run_record(rook_workspace, rook_cli):
    ws = rook_workspace
    write(ws, {"multi_turn": True, "usage": True})
    r = profile_test(rook_cli, ws, "--keep")
    kept = next(ln.split("kept: ", 1)[1] for ln in r.stdout.splitlines() if "kept: " in ln)
    from pathlib import Path

    files = list(Path(kept).rglob("*.json"))
    assert any(f.name == "profile-test.1.json" for f in files)
    import json
    import shutil

    shutil.rmtree(Path(kept).parent, ignore_errors=True)
    # with --json the directory was kept, but said nowhere: not in the document
    r = profile_test(rook_cli, ws, "--keep", "--json")
    kept = json.loads(r.stdout)["kept"]
    assert any(f.name == "profile-test.1.json" for f in Path(kept).rglob("*.json")), kept
    shutil.rmtree(Path(kept).parent, ignore_errors=True)
    assert json.loads(profile_test(rook_cli, ws, "--json").stdout)["kept"] is None


USAGE_SCRIPT = """
#!/bin/bash
[ "$1" = execute ] || exit 0
cat > /dev/null
printf '{"output": "ok", "usage": %s}\\n' "$USAGE"
"""


def test_usage_is_observed_only_with_a_token_count(rook_workspace, rook_cli):
    # The reference: usage becomes observed when hook output contains token
    # counts. {} is as if usage were absent; other numbers (a cost) are kept
    # as usage evidence but are not token counts.
    ws = rook_workspace
    ws.script("agent.sh", USAGE_SCRIPT)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    observed_file = ws.agent_dir / "profiles" / "p.observed.json"
    for usage in ("{}", '{"foo": 1}', '{"input": null}', '{"cost_usd": 0.2}'):
        r = rook_cli("run", "--json", env={"USAGE": usage})
        assert r.exit_code == 0, r.stdout + r.stderr
        record = ws.record(r.report["run"]["id"], "s.1")
        assert not record["observed"].get("usage"), usage
        turn = record["turns"][0]
        assert turn["usage"] == (None if usage in ("{}", '{"input": null}') else json.loads(usage))
        if observed_file.exists():
            assert not json.loads(observed_file.read_text()).get("usage"), usage
        t = profile_test(rook_cli, ws, "--json", env={"USAGE": usage})
        doc = json.loads(t.stdout)
        assert doc["test"]["ok"] is True and "usage" not in doc["test"]["observed"], usage
        caps = {c["capability"]: c["observed"] for c in doc["capabilities"]}
        assert caps["usage"] is False, usage

    # a budget on a profile that never showed token counts is not runnable
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"max_tokens": {"total": 100}}]})
    r = rook_cli("run", "--json", env={"USAGE": "{}"})
    assert r.statuses() == {"s": "not_runnable"}

    t = profile_test(rook_cli, ws, "--json", env={"USAGE": '{"output": 7}'})  # one count will do
    assert json.loads(t.stdout)["test"]["observed"]["usage"] is True
    assert json.loads(observed_file.read_text())["usage"] is True
    r = rook_cli("run", "--json", env={"USAGE": '{"output": 7}'})
    assert r.statuses() == {"s": "unverifiable"}  # no total, and no input to add up

    # with the capability declared, usage without counts is unverifiable, never a pass
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "capabilities": {"usage": True}})
    r = rook_cli("run", "--json", env={"USAGE": "{}"})
    assert r.statuses() == {"s": "unverifiable"}
    assert "has no token usage" in r.report["scenarios"][0]["criteria"][0]["reason"]

    r = rook_cli("run", "--json", env={"USAGE": '{"input": -5, "output": 2}'})
    assert r.statuses() == {"s": "error"}
    assert "usage.input must be a token count >= 0, got -5" in r.report["scenarios"][0]["reason"]


def test_update_keeps_the_files_mode_and_refuses_a_read_only_file(rook_workspace, rook_cli):
    ws = rook_workspace
    write(ws, {"multi_turn": False, "usage": False})
    path = ws.agent_dir / "profiles" / "p.yaml"
    path.chmod(0o600)  # private: rewriting it must not make it world-readable
    assert profile_test(rook_cli, ws, "--update").exit_code == 0
    assert yaml.safe_load(path.read_text())["capabilities"]["usage"] is True
    assert path.stat().st_mode & 0o777 == 0o600
    assert rook_cli("profile", "rename", "--workspace", str(ws.root), "p", "P").exit_code == 0
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text(path.read_text().replace("usage: true", "usage: false"))
    path.chmod(0o444)  # read-only: --update must not replace it (root could)
    before = path.read_text()
    r = profile_test(rook_cli, ws, "--update")
    assert r.exit_code == 2 and str(path) in r.stderr and "read-only" in r.stderr
    assert path.read_text() == before and path.stat().st_mode & 0o777 == 0o444
    r = rook_cli("profile", "rename", "--workspace", str(ws.root), "p", "Q")
    assert r.exit_code == 2 and "read-only" in r.stderr and path.read_text() == before


@pytest.mark.parametrize("escape", ["setsid", "setsid env -i"])  # env -i: no ROOK_RUN_ID left
def test_a_daemon_a_hook_leaves_is_killed_and_reported(rook_workspace, rook_cli, tmp_path, escape):
    import os
    import time

    ws = rook_workspace
    write(ws, {})
    pidfile = tmp_path / "daemon.pid"
    ws.script(
        "daemon.sh",
        f"""
        #!/bin/bash
        cat >/dev/null
        {escape} /bin/bash -c 'echo $$ > {pidfile}; exec /bin/sleep 600' </dev/null >/dev/null 2>&1 &
        echo '{{"output": "started"}}'
        """,
    )
    hooks = {p: "scripts/agent.py" for p in ("open", "close", "collect")}
    ws.profile({"id": "p", "hooks": {**hooks, "execute": "scripts/daemon.sh"}, "capabilities": {}})
    r = profile_test(rook_cli, ws)
    for _ in range(50):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    stat = f"/proc/{pid}/stat"
    alive = os.path.exists(stat) and Path(stat).read_text().split()[2] != "Z"
    assert not alive, "the daemon outlived rook profile test"
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "left running" in r.stdout and f"pid {pid}" in r.stdout, r.stdout
    doc = json.loads(profile_test(rook_cli, ws, "--json").stdout)
    assert doc["test"]["kills"], doc["test"]


def test_capabilities_table_has_no_blank_heading(rook_workspace, rook_cli):
    # the table ended in an untitled column: its rule printed a stray `--`
    # under no heading, and when every claim held, a column of nothing
    ws = rook_workspace
    write(ws, {"multi_turn": True, "usage": True, "calls": False})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    lines = r.stdout.split("capabilities:\n", 1)[1].splitlines()
    assert lines[0].split() == ["capability", "declared", "observed"], lines
    assert len(lines[1].split()) == 3 and not lines[1].replace("-", "").strip(), lines
    write(ws, {"multi_turn": True, "usage": True, "calls": True})
    r = profile_test(rook_cli, ws)
    lines = r.stdout.split("capabilities:\n", 1)[1].splitlines()
    assert lines[0].split() == ["capability", "declared", "observed", "note"], lines
    assert all(w.strip("-") == "" for w in lines[1].split()) and len(lines[1].split()) == 4


def test_an_empty_http_answer_speaks_of_the_response_not_standard_input(
    rook_workspace, rook_cli, agent_server
):
    # the note said the goal comes on standard input, as for a command: an http:
    # entry has none; its answer is the response body, or what extract.output reads
    ws = rook_workspace
    url = f"{agent_server.url}/echo"
    http = {"url": url, "body": {"q": "{{goal}}"}, "extract": {"output": "''"}}
    ws.profile({"id": "p", "hooks": {"execute": {"http": http}}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    note = r.stdout.split("the answer is empty: ", 1)[1].splitlines()[0]
    assert "standard input" not in note and "standard output" not in note, note
    assert "HTTP response" in note and "extract.output" in note, note


MUTE = """
import time

from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing


async def execute(call):
    now = time.time()
    return HookResult(call.phase, "ok", started=now, ended=now, data={"output": ""},
                      turn=call.turn, transport="mute")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="mute", load_config=lambda value: value or {},
                           description="answers nothing", saved_names=saves_nothing))


@hookimpl
def rook_transport_execute(call):
    return execute(call) if call.entry.transport == "mute" else None
"""


def test_an_empty_answer_of_a_plugin_transport_names_its_entry_not_standard_input(
    rook_workspace, rook_cli, rook_distribution
):
    # a third-party transport's entry has no standard input either: the note said it had
    rook_distribution("rook-mute", {"mute": "rook_mute"}, {"rook_mute.py": MUTE})
    ws = rook_workspace
    ws.profile({"id": "p", "hooks": {"execute": {"mute": {}}}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    note = r.stdout.split("the answer is empty: ", 1)[1].splitlines()[0]
    assert note == "the agent said nothing to the goal (its mute: entry gave an empty output)", note


def test_a_note_quoting_what_a_hook_printed_shows_control_characters_as_escapes(rook_workspace, rook_cli):
    # An open hook whose JSON object had no conversation but a key holding ESC ]0;
    # (a terminal title), BEL and U+202E: the note naming its keys went raw to
    # the terminal, while the phases table and the diagnosis showed escapes.
    rook_workspace.script("agent.py", r"""
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "open":
            print(json.dumps({"h\x1b]0;pwned\x07\u202ex": "c"}))
        elif sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "ok"}))
    """)
    rook_workspace.profile({"id": "p", "capabilities": {"multi_turn": True},
                            "hooks": {"open": "scripts/agent.py", "execute": "scripts/agent.py"}})
    r = profile_test(rook_cli, rook_workspace, "p")
    said = r.stdout + r.stderr
    assert "(keys: h\\x1b]0;pwned\\x07\\u202ex)" in said, said
    assert not [c for c in said if c != "\n" and (ord(c) < 32 or c == "\u202e")], said


def test_a_profile_that_cannot_run_as_written_exits_2_as_the_help_says(rook_workspace, rook_cli):
    # exit 2 was documented only for a variable not set, while a hook script
    # not found (nothing ran) exits 2 too: the help and profiles.md say so now.
    # Said as rook run says it: on standard error, nothing on standard output
    # (its report went there, and with --json a document rook run --json never prints)
    ws = rook_workspace
    write(ws, {}, hooks={"execute": "scripts/gone.sh"})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    run = rook_cli("run", "--json")
    assert run.exit_code == 2 and run.stdout == "", run.stdout + run.stderr
    for args in ((), ("--json",)):
        r = profile_test(rook_cli, ws, *args)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert r.stdout == "" and r.stderr == run.stderr, r.stdout + r.stderr
        assert r.stderr.startswith("rook: error: "), r.stderr
        assert "hooks.execute: hook script 'scripts/gone.sh' not found" in r.stderr
    text = " ".join(rook_cli("profile", "test", "--help").stdout.split())
    assert "2: a variable is not set, or the profile cannot run as written" in text, text


def test_a_timed_out_hook_says_what_to_do_next_once(rook_workspace, rook_cli):
    """The diagnosis names the timeout_seconds to raise; the next: line adds
    what to check first instead of saying it again."""
    ws = rook_workspace
    ws.script("slow.sh", "#!/bin/bash\nsleep 5\n")
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/slow.sh", "timeout_seconds": 0.5}}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert out.count("raise timeout_seconds on the hook entry") == 1, out
    assert "next: check that the target is up and answers" in out, out


def test_a_hook_that_answered_but_never_exited_is_not_told_to_check_the_target(
    rook_workspace, rook_cli
):
    # the diagnosis says the hook printed its answer and never exited (or was stopped),
    # and that no timeout helps; the next: line still said to check the target is up
    # and, if it is only slow, to raise the timeout
    ws = rook_workspace
    ws.script("hang.sh", """
        #!/bin/bash
        cat >/dev/null
        echo '{"output": "hi"}'
        sleep 30
    """)
    ws.script("stop.sh", "#!/bin/bash\ncat >/dev/null\nkill -STOP $$\n")
    for name, said in (("hang", "exit once it has printed its answer"), ("stop", "stopped")):
        ws.profile({"id": name, "hooks": {"execute": {"script": f"scripts/{name}.sh",
                                                      "timeout_seconds": 1}}})
        r = profile_test(rook_cli, ws, name)
        assert r.exit_code == 1, r.stdout + r.stderr
        nxt = r.stdout.split("\nnext: ", 1)[1]
        assert "target is up" not in nxt and "raise the timeout" not in nxt, r.stdout
        assert said in nxt and f"then run rook profile test {name} -w " in nxt, r.stdout


def test_the_line_said_before_the_test_names_the_delays_it_will_wait(rook_workspace, rook_cli):
    # "trying the agent: ... collect scripts/agent.py (up to 120 s)" said no word of
    # a collect delay_seconds, which the test waits in silence first (a minute for
    # the reference's example); a prepare delay never waits and is not named
    ws = rook_workspace
    hooks = {
        "prepare": {"script": "scripts/agent.py", "delay_seconds": 5},
        "execute": "scripts/agent.py",
        "collect": {"script": "scripts/agent.py", "delay_seconds": 1, "timeout_seconds": 9},
    }
    write(ws, {}, hooks=hooks)
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert (
        "trying the agent: prepare scripts/agent.py (up to 60 s), execute scripts/agent.py "
        "(up to 300 s), collect scripts/agent.py (after a delay of up to 1 s, up to 9 s)\n"
    ) in r.stderr, r.stderr


def test_the_warnings_a_run_would_give_are_shown(rook_workspace, rook_cli):
    # rook run warns that a collect hook printed nothing (no evidence collected);
    # rook profile test, there to say whether the profile works, said nothing of it
    ws = rook_workspace
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && { cat >/dev/null; echo '{"output": "hi", "tokens": {"in": 3}}'; }
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"},
                "capabilities": {"usage": False}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "warning: collect printed nothing: no evidence collected" in r.stdout
    doc = json.loads(profile_test(rook_cli, ws, "--json").stdout)
    assert any(w.startswith("collect printed nothing") for w in doc["test"]["warnings"])


def test_a_failed_close_still_shows_the_answer_and_flags_an_optimistic_claim(
    rook_workspace, rook_cli
):
    """Close fails the test (the profile is wrong), yet execute and collect answered:
    the test hid the answer and the capabilities table, so an optimistic claim went
    unflagged, and what it observed was not remembered (a run records it)."""
    ws = rook_workspace
    ws.script(
        "agent.sh",
        """
        #!/bin/bash
        case "$1" in
          execute) cat >/dev/null; echo '{"output": "hello there", "calls": []}';;
          close) echo 'session already gone' >&2; exit 3;;
        esac
        exit 0
        """,
    )
    hooks = {p: "scripts/agent.sh" for p in ("execute", "close", "collect")}
    ws.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True, "calls": True}})
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1, r.stdout
    assert "test: FAILED" in r.stdout and "close failed: exited with code 3" in r.stdout, r.stdout
    assert "answer: hello there" in r.stdout, r.stdout
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.strip()[:5] in ("multi", "calls")}
    assert "OPTIMISTIC" in lines["multi_turn"] and "OPTIMISTIC" not in lines["calls"], r.stdout
    observed = json.loads((ws.agent_dir / "profiles" / "p.observed.json").read_text())
    assert observed == {"calls": True}
    # --update writes only after a test that passed, and says so now that the table shows
    before = (ws.agent_dir / "profiles" / "p.yaml").read_text()
    r = profile_test(rook_cli, ws, "--update")
    assert r.exit_code == 1 and (ws.agent_dir / "profiles" / "p.yaml").read_text() == before
    assert "capabilities not updated: the test failed (close)" in r.stdout, r.stdout
    # a failed execute observed nothing: no answer, no table that calls every claim optimistic
    ws.script("agent.sh", '#!/bin/bash\n[ "$1" = execute ] && exit 4\nexit 0\n')
    r = profile_test(rook_cli, ws)
    assert r.exit_code == 1 and "answer:" not in r.stdout and "OPTIMISTIC" not in r.stdout, r.stdout


def test_json_says_the_capabilities_were_not_checked_when_execute_failed(rook_workspace, rook_cli):
    """After a failed execute the human output shows no capabilities table (nothing
    was observed, so nothing can be called optimistic), but --json listed every
    declared capability as optimistic. Both now say the capabilities were not checked."""
    ws = rook_workspace
    ws.script("agent.sh", '#!/bin/bash\n[ "$1" = execute ] && exit 4\nexit 0\n')
    caps = {"multi_turn": True, "calls": True, "usage": False}
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "capabilities": caps})
    r = profile_test(rook_cli, ws, "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["capabilities_checked"] is False
    assert [(c["capability"], c["declared"], c["observed"], c["verdict"]) for c in doc["capabilities"]] == [
        ("multi_turn", True, None, "not_checked"),
        ("calls", True, None, "not_checked"),
        ("usage", False, None, "not_checked"),
    ]
    r = profile_test(rook_cli, ws)
    assert "capabilities not checked: the test did not complete (execute failed)" in r.stdout, r.stdout
    # a test that completed checked them
    write(ws, {"multi_turn": True, "usage": True})
    doc = json.loads(profile_test(rook_cli, ws, "--json").stdout)
    assert doc["capabilities_checked"] is True
    assert {c["verdict"] for c in doc["capabilities"]} == {"ok"}
