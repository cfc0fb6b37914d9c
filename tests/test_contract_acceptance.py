"""Acceptance checks of the hook contract (reference, SPEC §2-§5) in combinations
that the single-feature tests do not reach: the variable table under repeat,
several turns and a split run; the goal's bytes at a turn's edges in every
language; Rook's own terminal never reaching a hook; collect's empty output;
a delay whose preceding phase ran in an earlier invocation."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time

import probes
import pytest
from test_core_contract import EXPECTED, LANGS

TABLE = sorted(set().union(*EXPECTED.values()))

# Logs every call (phase, argv, ROOK_* variables, stdin and whether it is a
# terminal) and answers: open a handle made from the session, execute a handle
# on every turn but 2 (which keeps the one before), collect an empty object.
LOGGER = """
import json, os, sys
phase = sys.argv[1]
data = sys.stdin.buffer.read()
with open(os.environ["LOG"], "a") as f:
    f.write(json.dumps({
        "phase": phase, "argv": sys.argv[1:], "tty": os.isatty(0), "stdin": data.hex(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("ROOK_")},
    }) + "\\n")
if phase == "open":
    print(json.dumps({"conversation": "open-" + os.environ["ROOK_SESSION"]}))
elif phase == "execute":
    answer = {"output": "ok " + data.decode()}
    if os.environ["ROOK_TURN"] != "2":
        answer["conversation"] = "c-" + os.environ["ROOK_TURN"]
    print(json.dumps(answer))
elif phase == "collect":
    print("{}")
"""


def logged(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_variable_table_holds_under_repeat_turns_and_a_split_run(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    ws = rook_workspace
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("LOG", str(log))
    for name in ("ROOK_SESSION", "ROOK_CONVERSATION", "ROOK_SCENARIO_ID", "ROOK_TURN"):
        monkeypatch.setenv(name, "leaked")  # Rook's own environment: never a hook's
    ws.script("log.py", LOGGER, executable=False)
    phases = ("prepare", "open", "execute", "close", "collect")
    ws.profile({
        "id": "p",
        "hooks": dict.fromkeys(phases, "scripts/log.py"),
        "capabilities": {"multi_turn": True},
        "hook_env": {**dict.fromkeys(TABLE, "hijack"), "REGION": "eu"},
    })
    goals = ["first", 'it\'s "q" $HOME `date`\nnext', "third — café"]
    ws.scenario({"id": "s", "turns": goals, "repeat": 2, "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json", "--concurrency", "1", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr
    run_id = first.report["run"]["id"]
    before = len(logged(log))
    second = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert second.statuses() == {"s.1": "passed", "s.2": "passed"}, second.stderr
    calls = logged(log)
    assert [c["phase"] for c in calls[before:]] == ["collect", "collect"]  # only collect resumed

    for c in calls:
        env = c["env"]
        assert c["argv"] == [c["phase"]]
        assert set(env) == EXPECTED[c["phase"]], (c["phase"], set(env) ^ EXPECTED[c["phase"]])
        assert "hijack" not in env.values() and "leaked" not in env.values(), env
        assert env["ROOK_HOOK"] == c["phase"] and env["ROOK_RUN_ID"] == run_id
        assert not c["tty"]
        if c["phase"] != "execute":
            assert c["stdin"] == ""
    assert len({c["env"]["ROOK_RUN_STATE_DIR"] for c in calls}) == 1

    by_session: dict[str, list] = {}
    for c in calls[1:]:
        by_session.setdefault(c["env"]["ROOK_SESSION"], []).append(c)
    assert len(by_session) == 2  # one session per repeat, the same in the resumed collect
    dirs = set()
    for session, run in by_session.items():
        assert [c["phase"] for c in run] == ["open", "execute", "execute", "execute", "close",
                                             "collect"]
        assert len({c["env"]["ROOK_STATE_DIR"] for c in run}) == 1
        dirs.add(run[0]["env"]["ROOK_STATE_DIR"])
        executes = run[1:4]
        assert [c["env"]["ROOK_TURN"] for c in executes] == ["1", "2", "3"]
        assert [bytes.fromhex(c["stdin"]).decode() for c in executes] == goals  # byte-exact
        # from open, then the previous execute; turn 2 returned none: turn 3 keeps c-1
        assert [c["env"].get("ROOK_CONVERSATION") for c in run[1:]] == [
            f"open-{session}", "c-1", "c-1", "c-3", "c-3",
        ]
    assert len(dirs) == 2 and calls[0]["env"]["ROOK_STATE_DIR"] not in dirs


def test_a_handle_from_open_alone_carries_every_turn(rook_workspace, rook_cli, tmp_path):
    # the handle "returned by open" counts: execute never returning one does not stop the run
    ws = rook_workspace
    seen = tmp_path / "seen"
    ws.script("h.sh", f"""
        #!/bin/bash
        echo "$1 ${{ROOK_CONVERSATION-none}}" >> {seen}
        case "$1" in
          open) echo '{{"conversation": "from-open"}}' ;;
          execute) cat >/dev/null; echo '{{"output": "ok"}}' ;;
          collect) echo '{{}}' ;;
        esac
        exit 0
    """)
    phases = ("open", "execute", "close", "collect")
    ws.profile({"id": "p", "hooks": dict.fromkeys(phases, "scripts/h.sh"),
                "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b", "c"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert seen.read_text().splitlines() == [
        "open none", "execute from-open", "execute from-open", "execute from-open",
        "close from-open", "collect from-open",
    ]
    assert r.report["scenarios"][0]["turns"][0]["conversation"] is None  # what the turn returned


EDGE_GOALS = ["ends in a newline\n", "a\r\nwindows line", "\t blanks around \n\n", "$ `` \\ '\"",
              "€ 日本 no newline"]


@pytest.mark.parametrize("lang", LANGS)
def test_every_turn_arrives_byte_exact_at_its_edges(lang, rook_workspace, rook_cli, tmp_path,
                                                    monkeypatch):
    # trailing newlines, a carriage return and blanks at either end are the goal's
    # own: nothing added, trimmed or translated, in bash, Python and Node alike
    ws = rook_workspace
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(probe_dir))
    hook = probes.install(ws, lang)
    ws.profile({"id": "p", "hooks": {"execute": hook}, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": EDGE_GOALS, "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    calls = probes.read(probe_dir)
    assert [c.stdin for c in calls] == [g.encode() for g in EDGE_GOALS]
    assert [t["input"] for t in r.report["scenarios"][0]["turns"]] == EDGE_GOALS


def test_no_hook_gets_rooks_own_terminal(rook_workspace, tmp_path):
    # rook run at a terminal: execute gets its goal, every other phase an
    # immediate end of input, and none of them the terminal (a hook reading it
    # would wait for the user); the CliRunner tests cannot show this, as their
    # Rook's file descriptor 0 is not a terminal
    ws = rook_workspace
    log = tmp_path / "log.jsonl"
    ws.script("log.py", LOGGER, executable=False)
    phases = ("prepare", "open", "execute", "close", "collect")
    ws.profile({"id": "p", "hooks": dict.fromkeys(phases, "scripts/log.py")})
    ws.scenario({"id": "s", "goal": "hello", "criteria": [{"contains": "ok"}]})
    parent, child = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json"],
            stdin=child, capture_output=True, text=True, timeout=120,
            env={**os.environ, "LOG": str(log)},
        )
    finally:
        os.close(child)
        os.close(parent)
    assert proc.returncode == 0, proc.stderr
    calls = logged(log)
    assert [c["phase"] for c in calls] == list(phases)
    assert not any(c["tty"] for c in calls)
    assert [bytes.fromhex(c["stdin"]) for c in calls] == [b"", b"", b"hello", b"", b""]


SWITCH = """
#!/bin/bash
case "$1" in
  execute) cat >/dev/null; echo '{"output": "ok"}' ;;
  collect) BODY ;;
esac
exit 0
"""


@pytest.mark.parametrize(
    "body, status, said",
    [
        (r"printf ' \n\n'", "passed", "collect printed nothing: no evidence collected"),
        ("echo null", "error", "collect failed: stdout must be one JSON object, got null"),
        ("echo '[]'", "error", "collect failed: stdout must be one JSON object, got an array"),
        ("echo '{}{}'", "error", "collect failed: stdout is not one JSON object"),
    ],
)
def test_collect_printing_only_blanks_collected_nothing_and_anything_else_must_be_an_object(
    body, status, said, rook_workspace, rook_cli
):
    ws = rook_workspace
    ws.script("h.sh", SWITCH.replace("BODY", body))
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": "scripts/h.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == status, s
    assert said in (s["reason"] if status == "error" else " ".join(s["warnings"])), s


def test_a_collect_delay_with_no_close_hook_counts_from_execute_even_in_an_earlier_invocation(
    rook_workspace, rook_cli, tmp_path
):
    ws = rook_workspace
    log = tmp_path / "times"
    ws.script("h.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] && {{ cat >/dev/null; echo '{{"output": "ok"}}'; }}
        [ "$1" = collect ] && echo '{{}}'
        echo "$1 $(date +%s.%N)" >> {log}
        exit 0
    """)
    collect = {"script": "scripts/h.sh", "delay_seconds": 1}
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": collect}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})

    def times():
        return {k: float(v) for k, v in (ln.split() for ln in log.read_text().splitlines())}

    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}
    assert times()["collect"] - times()["execute"] >= 1.0  # waited: execute ended just now
    log.unlink()
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0, r.stderr
    time.sleep(1.2)  # the delay passes while nothing runs
    resumed = time.time()
    r = rook_cli("run", "--json", "--run", r.report["run"]["id"], "--phases", "collect,judge")
    assert r.statuses() == {"s": "passed"}
    assert times()["collect"] - resumed < 0.9  # already elapsed: Rook waited nothing


def test_rook_profile_test_gives_its_hooks_the_variable_table(rook_workspace, rook_cli, tmp_path,
                                                              monkeypatch):
    ws = rook_workspace
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("LOG", str(log))
    ws.script("log.py", LOGGER, executable=False)
    phases = ("prepare", "open", "execute", "close", "collect")
    ws.profile({"id": "p", "hooks": dict.fromkeys(phases, "scripts/log.py"),
                "hook_env": dict.fromkeys(TABLE, "hijack")})
    r = rook_cli("profile", "test")
    assert r.exit_code == 0, r.stderr + r.stdout
    calls = logged(log)
    assert [c["phase"] for c in calls] == list(phases)
    for c in calls:
        assert set(c["env"]) == EXPECTED[c["phase"]], c["phase"]
        assert "hijack" not in c["env"].values()
    assert len({c["env"]["ROOK_RUN_ID"] for c in calls}) == 1
    assert len({c["env"]["ROOK_SESSION"] for c in calls[1:]}) == 1
    assert calls[2]["env"]["ROOK_CONVERSATION"] == "open-" + calls[1]["env"]["ROOK_SESSION"]
    assert bytes.fromhex(calls[2]["stdin"]) != b"" and calls[3]["stdin"] == ""
