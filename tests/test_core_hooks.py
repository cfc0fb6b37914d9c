"""Hooks that fail, hang, flood or print garbage: the scenario fails with a
diagnosis, Rook goes on, nothing already recorded is lost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from rook_core.models import HookEntry


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def one_scenario(ws, script_body: str, entry=None, name="h.sh", criteria=None, goal="g"):
    ws.script(name, script_body)
    ws.profile({"id": "p", "hooks": {"execute": entry or f"scripts/{name}"}})
    ws.scenario({"id": "s", "goal": goal, "criteria": criteria or [{"contains": "ok"}]})


def test_nonzero_exit_fails_with_stderr_as_diagnosis(rook_workspace, rook_cli):
    one_scenario(
        rook_workspace,
        """
        #!/bin/sh
        echo "the agent is down: 503 from upstream" >&2
        exit 3
    """,
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    s = r.report["scenarios"][0]
    assert s["status"] == "error"
    hook = s["hooks"][0]
    assert hook["exit_code"] == 3 and hook["status"] == "failed"
    assert "the agent is down: 503 from upstream" in hook["diagnosis"]
    assert "execute turn 1 failed" in s["reason"]


def test_timeout_kills_the_whole_process_group(rook_workspace, rook_cli, tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    one_scenario(
        rook_workspace,
        f"""
        #!/bin/bash
        sleep 300 &
        echo $! > {pidfile}
        sleep 300
    """,
        entry={"script": "scripts/h.sh", "timeout_seconds": 1},
    )
    t0 = time.monotonic()
    r = rook_cli("run", "--json")
    assert time.monotonic() - t0 < 60
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and s["hooks"][0]["status"] == "timeout"
    assert "timed out after 1 s" in s["hooks"][0]["diagnosis"]
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild), "a grandchild of a timed-out hook survived"


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(rook_workspace, rook_cli):
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        trap '' TERM
        while :; do sleep 0.1; done
    """,
        entry={"script": "scripts/h.sh", "timeout_seconds": 1},
    )
    r = rook_cli("run", "--json")
    rec = rook_workspace.record(r.report["run"]["id"], "s.1")
    notes = rec["hooks"][0]["details"]["process"]
    assert any("SIGKILL" in n for n in notes)


def test_flood_is_capped_and_never_lands_in_the_record(rook_workspace, rook_cli):
    # 30 MiB on stdout and a 10 MiB default cap
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        head -c 31457280 /dev/zero | tr '\\0' 'x'
        sleep 30
    """,
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error"
    assert "stdout exceeded the 10485760-byte cap" in s["hooks"][0]["diagnosis"]
    run_dir = rook_workspace.run_dir(r.report["run"]["id"])
    assert max(p.stat().st_size for p in run_dir.rglob("*") if p.is_file()) < 1_000_000


def test_output_cap_is_configurable_per_profile(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script(
        "h.sh",
        """
        #!/bin/bash
        head -c 5000 /dev/zero | tr '\\0' 'x' >&2
        echo '{"output": "ok"}'
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}, "limits": {"stderr_bytes": 4096}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    diagnosis = r.report["scenarios"][0]["hooks"][0]["diagnosis"]
    assert "stderr exceeded the 4096-byte cap" in diagnosis
    # the setting that raises it, named as the HTTP and Ruhroh hooks name theirs
    assert "(raise limits.stderr_bytes in the profile if this much output is expected)" in diagnosis



def test_a_flood_after_the_hook_exited_is_said_to_be_its_leftover_process_s(
    rook_workspace, rook_cli
):
    """A hook that answered and exited 0, leaving a process that floods its stdout
    after: the diagnosis said "the hook was killed", though it had exited; it says
    which happened (the cap passed after the hook exited, by a process it started),
    and a hook flooding while it runs is still "killed"."""
    ws = rook_workspace
    ws.script(
        "h.sh",
        """
        #!/bin/bash
        cat >/dev/null
        (sleep 0.2; head -c 100000 /dev/zero | tr '\\0' 'y') &
        echo '{"output": "ok"}'
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}, "limits": {"stdout_bytes": 4096}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    diagnosis = s["hooks"][0]["diagnosis"]
    assert s["status"] == "error" and s["hooks"][0]["exit_code"] == 0, s
    assert diagnosis.startswith(
        "stdout exceeded the 4096-byte cap after the hook exited: a process it started kept "
        "writing to its stdout, and its process group was killed (raise limits.stdout_bytes"
    ), diagnosis
    assert "the hook was killed" not in diagnosis

@pytest.mark.parametrize(
    "body, expect",
    [
        ("echo 'Sure! Here is your answer: 42'", "stdout is not one JSON object"),
        # what was received is named in JSON's words, never Python's (got list, got True)
        ("echo '[1, 2, 3]'", "stdout must be one JSON object, got an array"),
        ("echo null", "stdout must be one JSON object, got null"),
        ("echo '{\"answer\": 42}'", "has no output field (keys: answer)"),
        ("echo '{\"output\": null, \"calls\": []}'", "output is null, which holds no answer"),
        ("true", "printed nothing on stdout"),
        ("printf '\\n  \\n'", "printed only white space on stdout; expected one JSON object"),
        ('echo \'{"output": "x", "calls": "lookup"}\'', "calls must be a list"),
        ('echo \'{"output": "x", "calls": "lookup"}\'', "got a string"),
        ('echo \'{"output": "x", "calls": [{"name": 5}]}\'', 'name, got {"name": 5}'),
        ('echo \'{"output": "x", "usage": "many"}\'', '"output": 3}, got "many"'),
        ('echo \'{"output": "x", "usage": {"input": "7"}}\'', 'usage.input must be a number, got "7"'),
        ('echo \'{"output": "x", "usage": {"input": true}}\'', "must be a number, got true"),
        (
            'echo \'{"output": "x", "usage": {"input": -5, "output": 2}}\'',
            "usage.input must be a token count >= 0, got -5",
        ),
        ('echo \'{"output": "x", "usage": {"total": -1}}\'', "usage.total must be a token count"),
        # token counts are whole numbers: 1.5 tokens is a broken count, never a budget's input
        (
            'echo \'{"output": "x", "usage": {"input": 1.5, "output": 2}}\'',
            "usage.input must be a whole token count (0 or more), got 1.5",
        ),
        ('echo \'{"output": "x", "usage": {"total": 0.25}}\'', "usage.total must be a whole token count"),
        ('echo \'{"output": "x", "usage": {"cost_usd": -5}}\'', "usage.cost_usd must be a cost >= 0"),
        ('echo \'{"output": "x", "score": NaN}\'', "NaN is not a JSON value"),
        ('echo \'{"output": "x", "usage": {"input": Infinity}}\'', "Infinity is not a JSON value"),
        ('echo \'{"output": "x", "usage": {"input": 1e999}}\'', "1e999 is too large for a JSON number"),
    ],
)
def test_garbage_output_fails_the_hook_showing_what_was_received(
    rook_workspace, rook_cli, body, expect
):
    one_scenario(rook_workspace, f'#!/bin/bash\n[ "$1" = execute ] || exit 0\n{body}\n')
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error"
    assert expect in s["hooks"][0]["diagnosis"]


def test_an_open_handle_printed_beside_log_lines_fails_open_instead_of_being_lost(
    rook_workspace, rook_cli
):
    # open's output need not be JSON, so its handle beside a log line on stdout
    # was dropped in silence: the scenario was "stopped" as if open returned none
    ws = rook_workspace
    ws.script(
        "h.sh",
        """
        #!/bin/bash
        if [ "$1" = open ]; then
          echo "opening a session"
          [ -f "$ROOK_WORKSPACE/quiet" ] || echo '{"conversation": "c-9"}'
        fi
        [ "$1" = execute ] && echo "{\\"output\\": \\"ok $ROOK_CONVERSATION\\"}"
        exit 0
    """,
    )
    ws.profile(
        {
            "id": "p",
            "hooks": {"open": "scripts/h.sh", "execute": "scripts/h.sh"},
            "capabilities": {"multi_turn": True},
        }
    )
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and s["turns"] == [], s
    assert s["reason"].startswith("open failed: stdout is not one JSON object"), s["reason"]
    assert "print logs to stderr" in s["reason"] and "c-9" in s["reason"]
    # a log line alone (no handle among it) is still only kept in the record
    (ws.root / "quiet").write_text("")
    s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == "stopped", s


@pytest.mark.parametrize(
    "name, body",
    [
        ("h.py", """
            import json, os, sys
            if sys.argv[1] == "open":
                print({"conversation": "c-9"})
            if sys.argv[1] == "execute":
                sys.stdin.read()
                print(json.dumps({"output": "ok " + os.environ.get("ROOK_CONVERSATION", "")}))
        """),
        ("h.mjs", """
            if (process.argv[2] === "open") console.log({conversation: "c-9"});
            if (process.argv[2] === "execute")
              console.log(JSON.stringify({output: "ok " + (process.env.ROOK_CONVERSATION || "")}));
        """),
    ],
)
def test_an_open_handle_printed_as_a_dict_or_object_fails_open_instead_of_being_lost(
    rook_workspace, rook_cli, name, body
):
    # Python's print(dict) / Node's console.log(obj) on open was not JSON, so it was
    # ignored: the handle was lost in silence and the scenario "stopped" as if open
    # returned none (a single-turn one went on without it, without a word)
    ws = rook_workspace
    ws.script(name, body, executable=False)
    hooks = {"open": f"scripts/{name}", "execute": f"scripts/{name}"}
    ws.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and s["turns"] == [], s
    assert s["reason"].startswith("open failed: stdout is not one JSON object"), s["reason"]
    assert "JSON.stringify(...)" in s["reason"] and "c-9" in s["reason"], s["reason"]


@pytest.mark.parametrize(
    "printed, says",
    [
        ('{"conversation": "c-9", "latency": NaN}', "NaN"),  # Python's json.dumps writes it
        ('{"conversation": "c-9", "cost": 1e999}', "1e999"),
        ('{"conversation": "c-9",}', "c-9"),
    ],
)
def test_an_open_handle_in_output_that_is_not_json_fails_open_instead_of_being_lost(
    rook_workspace, rook_cli, printed, says
):
    # open's output that is not JSON was ignored, with the handle it held: the
    # scenario was "stopped" as if open returned none
    ws = rook_workspace
    ws.script("h.sh", f"""
        #!/bin/bash
        [ "$1" = open ] && echo '{printed}'
        [ "$1" = execute ] && echo "{{\\"output\\": \\"ok $ROOK_CONVERSATION\\"}}"
        exit 0
    """)
    hooks = {"open": "scripts/h.sh", "execute": "scripts/h.sh"}
    ws.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and s["turns"] == [], s
    assert s["reason"].startswith("open failed: "), s["reason"]
    assert says in s["reason"], s["reason"]


def test_non_utf8_output_does_not_crash(rook_workspace, rook_cli):
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        printf '\\xff\\xfe bad bytes\\n' >&2
        printf '{"output": "ok \\xff\\xfe"}\\n'
    """,
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "passed"
    assert "\ufffd" in s["turns"][0]["output"]


def test_half_a_character_escaped_in_json_does_not_crash(rook_workspace, rook_cli):
    # "\ud83d" alone is valid JSON text but half of a UTF-16 pair: UTF-8 cannot hold it
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        echo '{"output": "ok \\ud83d then \\ud83d\\ude00", "\\udc00note": ["\\ud800"]}'
    """,
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "passed", s
    assert s["turns"][0]["output"] == "ok \ufffd then \U0001f600"
    assert s["turns"][0]["evidence"] == {"\ufffdnote": ["\ufffd"]}
    assert "Traceback" not in r.stderr


def test_a_failing_scenario_does_not_stop_the_others(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script(
        "h.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        g=$(cat)
        [ "$g" = bad ] && { echo boom >&2; exit 1; }
        echo '{"output": "ok"}'
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    for sid, goal in (("a", "good"), ("b", "bad"), ("c", "good")):
        ws.scenario({"id": sid, "goal": goal, "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"a": "passed", "b": "error", "c": "passed"}
    assert r.exit_code == 1


def _timed_hook(ws, tmp_path):
    """``scripts/h.sh``, logging each phase and when it started to the file returned."""
    log = tmp_path / "times"
    ws.script(
        "h.sh",
        f"""
        #!/bin/bash
        echo "$1 $(date +%s.%N)" >> {log}
        [ "$1" = execute ] && {{ cat >/dev/null; echo '{{"output": "ok"}}'; }}
        [ "$1" = collect ] && echo '{{}}'
        exit 0
    """,
    )
    return log


def test_delay_is_a_minimum_since_the_previous_phase_not_a_sleep(
    rook_workspace, rook_cli, tmp_path
):
    ws = rook_workspace
    log = _timed_hook(ws, tmp_path)
    ws.profile(
        {
            "id": "p",
            "hooks": {
                "open": "scripts/h.sh",
                "execute": {"script": "scripts/h.sh", "delay_seconds": 1},  # 1 s after open ended
                "close": "scripts/h.sh",
                "collect": {"script": "scripts/h.sh", "delay_seconds": 1},  # 1 s after close ended
            },
        }
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0
    times = dict(line.split() for line in log.read_text().splitlines())
    assert float(times["execute"]) - float(times["open"]) >= 1.0  # waited: not yet elapsed
    time.sleep(1.2)  # the delay passes while nothing runs
    t_resume = time.time()
    r = rook_cli("run", "--json", "--run", r.report["run"]["id"], "--phases", "collect,judge")
    assert r.statuses() == {"s": "passed"}
    times = dict(line.split() for line in log.read_text().splitlines())
    assert float(times["collect"]) - t_resume < 0.9  # already elapsed: Rook waited nothing


def test_an_execute_delay_holds_before_every_turn(rook_workspace, rook_cli, tmp_path):
    # turn 2's preceding phase is turn 1: it waits its delay after turn 1 ended
    ws = rook_workspace
    log = tmp_path / "times"
    ws.script(
        "h.sh",
        f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat >/dev/null
        echo "start-$ROOK_TURN $(date +%s.%N)" >> {log}
        echo '{{"output": "ok", "conversation": "c"}}'
        echo "end-$ROOK_TURN $(date +%s.%N)" >> {log}
    """,
    )
    entry = {"script": "scripts/h.sh", "delay_seconds": 1}
    ws.profile({"id": "p", "hooks": {"execute": entry}, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}
    times = {k: float(v) for k, v in (line.split() for line in log.read_text().splitlines())}
    assert times["start-2"] - times["end-1"] >= 1.0


def test_the_first_phase_of_a_scenario_run_waits_its_delay_after_prepare(
    rook_workspace, rook_cli, tmp_path
):
    # prepare is the phase before open: open's delay counts from its end
    ws = rook_workspace
    log = tmp_path / "times"
    ws.script(
        "h.sh",
        f"""
        #!/bin/bash
        echo "$1${{ROOK_SCENARIO_ID:+-$ROOK_SCENARIO_ID}} $(date +%s.%N)" >> {log}
        [ "$1" = execute ] && {{ cat >/dev/null; echo '{{"output": "ok"}}'; }}
        exit 0
    """,
    )
    ws.profile(
        {
            "id": "p",
            "hooks": {
                "prepare": "scripts/h.sh",
                "open": {"script": "scripts/h.sh", "delay_seconds": 1},
                "execute": "scripts/h.sh",
            },
        }
    )
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--concurrency", "1")
    assert r.statuses() == {"a": "passed", "b": "passed"}
    times = {k: float(v) for k, v in (line.split() for line in log.read_text().splitlines())}
    first, second = sorted(("a", "b"), key=lambda sid: times[f"open-{sid}"])
    assert times[f"open-{first}"] - times["prepare"] >= 1.0  # waited: not yet elapsed
    # the second run's open: a second has long passed since prepare ended
    assert times[f"open-{second}"] - times[f"execute-{first}"] < 0.9


def test_a_split_runs_first_phase_waits_its_delay_after_the_earlier_prepare(
    rook_workspace, rook_cli, tmp_path
):
    # --phases prepare, then --run ID: prepare ran in the earlier invocation,
    # and it is still the phase open's delay counts from
    ws = rook_workspace
    log = tmp_path / "times"
    ws.script(
        "h.sh",
        f"""
        #!/bin/bash
        echo "$1 $(date +%s.%N)" >> {log}
        [ "$1" = execute ] && {{ cat >/dev/null; echo '{{"output": "ok"}}'; }}
        exit 0
    """,
    )
    ws.profile(
        {
            "id": "p",
            "hooks": {
                "prepare": "scripts/h.sh",
                "open": {"script": "scripts/h.sh", "delay_seconds": 2},
                "execute": "scripts/h.sh",
            },
        }
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--phases", "prepare")
    assert r.exit_code == 0, r.stderr
    r = rook_cli("run", "--json", "--run", r.report["run"]["id"])
    assert r.statuses() == {"s": "passed"}
    times = {k: float(v) for k, v in (line.split() for line in log.read_text().splitlines())}
    assert times["open"] - times["prepare"] >= 2.0  # waited: not yet elapsed


def test_a_delay_never_waits_longer_than_its_delay_seconds(rook_workspace, rook_cli, tmp_path):
    # delay_seconds is a minimum since the preceding phase ended, measured on the
    # wall clock (the phase may have ended in an earlier invocation). An end
    # stamped later than now (a clock that stepped back since, or a run record
    # written where the clock ran ahead) made Rook wait delay_seconds plus the
    # skew: 30 s here for a 1 s delay, an hour for an hour's skew.
    ws = rook_workspace
    log = _timed_hook(ws, tmp_path)
    collect = {"script": "scripts/h.sh", "delay_seconds": 1}
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": collect}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0, r.stderr
    run_id = r.report["run"]["id"]
    path = ws.run_dir(run_id) / "scenarios" / "s.1.json"
    record = json.loads(path.read_text())
    record["last_phase_end"] += 30  # stamped by a clock 30 s ahead of this one
    path.write_text(json.dumps(record))
    resumed = time.time()
    r = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert r.statuses() == {"s": "passed"}, r.stderr
    times = dict(line.split() for line in log.read_text().splitlines())
    assert float(times["collect"]) - resumed < 10  # at most its 1 s, never the 31 s



def test_default_timeouts_and_the_close_floor():
    e = {p: HookEntry(p, "script", {}) for p in ("prepare", "open", "execute", "close", "collect")}
    assert {p: x.timeout for p, x in e.items()} == {
        "prepare": 60,
        "open": 30,
        "execute": 300,
        "close": 30,
        "collect": 120,
    }
    assert HookEntry("close", "script", {}, timeout_seconds=1).timeout == 5
    assert HookEntry("execute", "script", {}, timeout_seconds=1).timeout == 1


def test_a_close_entry_below_the_floor_still_gets_5_seconds_in_a_run(rook_workspace, rook_cli):
    # the floor holds where the hook runs, not only in HookEntry
    ws = rook_workspace
    ws.script(
        "h.sh",
        """
        #!/bin/bash
        case "$1" in
          execute) cat >/dev/null; echo '{"output": "ok"}' ;;
          close) sleep 2 ;;
        esac
        exit 0
    """,
    )
    close = {"script": "scripts/h.sh", "timeout_seconds": 1}
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "close": close}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "passed" and not s.get("warnings"), s
    assert [h["status"] for h in s["hooks"]] == ["ok", "ok"]


def test_a_close_that_times_out_at_the_floor_says_its_entry_asked_less(rook_workspace, rook_cli):
    # "timed out after 5 s; ... raise timeout_seconds" read as a setting ignored when
    # the entry said 1: the diagnosis names the floor
    ws = rook_workspace
    ws.script(
        "h.sh",
        """
        #!/bin/bash
        case "$1" in
          execute) cat >/dev/null; echo '{"output": "ok"}' ;;
          close) sleep 30 ;;
        esac
        exit 0
    """,
    )
    close = {"script": "scripts/h.sh", "timeout_seconds": 1}
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "close": close}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == "passed", s
    diagnosis = s["hooks"][-1]["diagnosis"]
    assert diagnosis.startswith("timed out after 5 s"), diagnosis
    assert "close is given at least 5 s: the entry's timeout_seconds (1) is below that floor" in (
        diagnosis
    ), diagnosis


def test_a_long_stderr_cut_in_the_diagnosis_says_how_much_was_left_out(rook_workspace, rook_cli):
    # The diagnosis keeps the last 2,000 characters of a failed hook's stderr and
    # began with a bare "...": nothing said how much came before, while a cut
    # preview of stdout ends "... [N more chars]". It now says it, and the
    # record keeps the whole stream.
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        { head -c 7000 /dev/zero | tr '\\0' 'a'; printf 'LAST'; } >&2
        exit 3
    """,
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["hooks"][0]["diagnosis"] == "exited with code 3: [5004 earlier chars] ..." + "a" * 1996 + "LAST"
    assert s["reason"].startswith("execute turn 1 failed: exited with code 3: [5004 earlier chars] ...a")
    record = json.loads(next(rook_workspace.root.rglob("scenarios/s.1.json")).read_text())
    assert record["hooks"][0]["stderr"] == "a" * 7000 + "LAST"  # the record keeps it whole


def test_the_record_keeps_a_failed_hooks_streams_up_to_64_kib(rook_workspace, rook_cli):
    # hooks.md: the record keeps the stream, up to 64 KiB (well below the output
    # cap): its beginning, then how much was left out
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        { printf FIRST; head -c 200000 /dev/zero | tr '\\0' a; printf LAST; } >&2
        { printf FIRST; head -c 200000 /dev/zero | tr '\\0' b; }
        exit 3
    """,
    )
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["status"] == "error"
    record = json.loads(next(rook_workspace.root.rglob("scenarios/s.1.json")).read_text())
    for stream in ("stderr", "stdout"):
        kept = record["hooks"][0][stream]
        head, _, note = kept.partition("\n... [")
        assert head.startswith("FIRST") and len(head) == 64 * 1024, (stream, len(head))
        assert note.endswith("more chars not recorded]") and "LAST" not in kept, note


def test_big_goal_to_a_hook_that_writes_before_it_reads(rook_workspace, rook_cli):
    # 3 MB of goal; the hook writes 200 KB of stderr before reading stdin
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        head -c 200000 /dev/zero | tr '\\0' 'e' >&2
        n=$(wc -c)
        printf '{"output": "ok %s"}\\n' "$n"
    """,
        goal="x" * 3_000_000,
    )
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["turns"][0]["output"] == "ok 3000000"


# Every phase writes 1 MB to stdout and 1 MB to stderr at once (16 pipe buffers each);
# execute writes 200 KB before it reads its goal; "cmd" is a command criterion's run
FLOODERS = {
    "bash": ("flood.sh", r"""
        #!/bin/bash
        head -c 1000000 /dev/zero | tr '\0' e >&2 &
        printf '{"status": "goal_satisfied", "pad": "'; head -c 200000 /dev/zero | tr '\0' x
        n=$(wc -c)
        head -c 800000 /dev/zero | tr '\0' x
        a="\"ok $n\""; [ "$ROLE$1" = judgeexecute ] && a='{"pass": true, "reason": "fine"}'
        printf '", "output": %s}\n' "$a"
        wait
    """),
    "python": ("flood.py", r"""
        import json, os, sys, threading
        err = threading.Thread(target=lambda: (sys.stderr.write("e" * 1000000), sys.stderr.flush()))
        err.start()
        sys.stdout.write('{"status": "goal_satisfied", "pad": "' + "x" * 200000)
        sys.stdout.flush()
        n = len(sys.stdin.read())
        a = {"pass": True, "reason": "fine"} if os.environ.get("ROLE") == "judge" and sys.argv[1] == "execute" else f"ok {n}"
        sys.stdout.write("x" * 800000 + '", "output": ' + json.dumps(a) + "}\n")
        sys.stdout.flush()
        err.join()
    """),
    "node": ("flood.cjs", r"""
        const fs = require("fs");
        process.stderr.write("e".repeat(1000000));
        process.stdout.write('{"status": "goal_satisfied", "pad": "' + "x".repeat(200000), () => {
          const n = fs.readFileSync(0).length;
          const a = process.env.ROLE === "judge" && process.argv[2] === "execute"
            ? {pass: true, reason: "fine"} : `ok ${n}`;
          process.stdout.write("x".repeat(800000) + '", "output": ' + JSON.stringify(a) + "}\n");
        });
    """),
}
INTERPRETER = {"bash": [], "python": [sys.executable], "node": ["node"]}


@pytest.mark.parametrize("lang", list(FLOODERS))
def test_a_megabyte_on_both_streams_at_once_deadlocks_no_phase(rook_workspace, rook_cli, lang):
    """The pipe buffer holds 64 KiB: a hook that fills stdout while Rook waits on
    stderr (or writes before reading its goal) would block forever. Each phase, a
    judge profile's hook, a command criterion's program and a Ruhroh wrapper, in
    bash, Python and Node, writes 1 MB on each stream at once, and execute 200 KB
    before reading a 3 MB goal: each runs to its end."""
    ws = rook_workspace
    name, body = FLOODERS[lang]
    path = ws.script(name, body, executable=lang == "bash")
    script = f"scripts/{name}"
    phases = ("prepare", "open", "execute", "collect", "close")
    ws.profile({"id": "p", "hooks": dict.fromkeys(phases, script)})
    ws.profile({"id": "grader", "hooks": {"execute": script}, "hook_env": {"ROLE": "judge"}},
               active=False)
    wrapper = " ".join([*INTERPRETER[lang], str(path), "execute"])
    ws.profile({"id": "r", "hooks": {"execute": {"ruhroh": {"command": wrapper}}}}, active=False)
    ws.scenario({"id": "s", "goal": "g" * 3_000_000, "criteria": [
        {"contains": "ok"}, {"rubric": "fine"},
        {"command": {"run": [*INTERPRETER[lang], str(path), "cmd"]}}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    (s,) = r.report["scenarios"]
    assert r.exit_code == 0 and s["status"] == "passed", s["reason"]
    assert s["turns"][0]["output"] == "ok 3000000"
    assert [h["phase"] for h in s["hooks"] if h["status"] == "ok"] == [
        "open", "execute", "close", "collect"], s["hooks"]
    assert r.report["run"]["prepare"]["status"] == "ok", r.report["run"]["prepare"]
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--profile", "r")
    assert r.exit_code == 0 and r.report["scenarios"][0]["turns"][0]["output"] == "ok 0"


def test_hook_that_closes_stdout_early_is_still_bounded(rook_workspace, rook_cli):
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        exec 1>&-
        sleep 300
    """,
        entry={"script": "scripts/h.sh", "timeout_seconds": 1},
    )
    t0 = time.monotonic()
    r = rook_cli("run", "--json")
    assert time.monotonic() - t0 < 30
    assert r.report["scenarios"][0]["hooks"][0]["status"] == "timeout"


@pytest.mark.parametrize("name,body", [
    ("h.mjs", """
        #!/usr/bin/env node
        if (process.argv[2] === "execute") {
          console.log(JSON.stringify({output: "ok"}));
          setInterval(() => {}, 1000);  // an open handle: Node never exits
        }
    """),
    ("h.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo '{"output": "ok"}'
        exec 1>&-  # closes its stdout early, and goes on
        sleep 300
    """),
    ("h.py", """
        #!/usr/bin/env python3
        import json, sys, time
        if sys.argv[1] == "execute":
            print(json.dumps({"output": "ok"}), flush=True)
            time.sleep(300)
    """),
])
def test_a_hook_that_answered_but_never_exited_is_told_so(rook_workspace, rook_cli, name, body):
    """A hook that prints its answer and then does not exit (a Node timer or
    keep-alive socket, stdout closed early and the script going on) ran into
    its timeout, and the diagnosis said to raise timeout_seconds "if the agent
    is this slow": the agent had answered at once, and no timeout is enough.
    The diagnosis now says it answered and never exited; the answer it
    printed is kept in the record, and the run goes on."""
    if name.endswith(".mjs") and shutil.which("node") is None:
        pytest.skip("node is not installed")
    one_scenario(rook_workspace, body, name=name,
                 entry={"script": f"scripts/{name}", "timeout_seconds": 2})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1
    (hook,) = r.report["scenarios"][0]["hooks"]
    assert hook["status"] == "timeout"
    assert "it had printed one JSON object on stdout but never exited" in hook["diagnosis"]
    assert "raise timeout_seconds" not in hook["diagnosis"], hook["diagnosis"]
    record = rook_workspace.record(r.report["run"]["id"], "s.1")
    assert json.loads(record["hooks"][0]["stdout"]) == {"output": "ok"}


def test_background_process_holding_stdout_does_not_hang_rook(rook_workspace, rook_cli, tmp_path):
    pidfile = tmp_path / "bg.pid"
    one_scenario(
        rook_workspace,
        f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        sleep 300 &
        echo $! > {pidfile}
        echo '{{"output": "ok"}}'
    """,
    )
    t0 = time.monotonic()
    r = rook_cli("run", "--json")
    assert time.monotonic() - t0 < 30
    assert r.report["scenarios"][0]["status"] == "passed"
    # leftovers are killed when the run ends
    bg = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while pid_alive(bg) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(bg)
    assert json.dumps(r.report)  # report is plain JSON


def test_a_daemon_holding_the_pipes_costs_the_hook_none_of_its_time(rook_workspace, rook_cli,
                                                                     tmp_path):
    """A hook that starts a daemon in a session of its own with a clean
    environment (setsid env -i), which keeps its stdout and stderr open: Rook
    read on for 0.5 s per stream after the hook's exit and counted that second
    as the hook's, so a max_seconds budget failed an agent that answered at once.
    Its time now ends at its exit; the record says which streams were held, and
    the daemon dies when the run ends (run.json's kills)."""
    ended = tmp_path / "ended"
    one_scenario(
        rook_workspace,
        f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        setsid env -i sh -c 'exec sleep 300' &
        echo '{{"output": "ok"}}'
        date +%s.%N > {ended}
    """,
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "passed", s
    run_id = r.report["run"]["id"]
    (hook,) = rook_workspace.record(run_id, "s.1")["hooks"]
    assert hook["details"]["process"] == [
        "a process started by the hook kept its stdout open after it exited; stopped reading",
        "a process started by the hook kept its stderr open after it exited; stopped reading",
    ]
    assert hook["ended"] - float(ended.read_text()) < 0.45, hook  # not 1 s later
    kills = json.loads((rook_workspace.run_dir(run_id) / "run.json").read_text())["kills"]
    assert any("outlived its hook" in k for k in kills), kills


# Each phase ("cmd": a command criterion's run) starts `sleep 300` holding its stdout
# and stderr, writes its pid to $PIDS, then answers and exits (STAY=1: stays)
LEAVERS = {
    "bash": ("leave.sh", """
        #!/bin/bash
        sleep 300 &
        echo $! >> "$PIDS"
        [ "$STAY" = 1 ] && sleep 300
        a='"ok"'; [ "$ROLE$1" = judgeexecute ] && a='{"pass": true, "reason": "fine"}'
        echo "{\\"status\\": \\"goal_satisfied\\", \\"output\\": $a}"
    """),
    "python": ("leave.py", """
        import json, os, subprocess, sys, time
        child = subprocess.Popen(["sleep", "300"])
        with open(os.environ["PIDS"], "a") as fh:
            fh.write(f"{child.pid}\\n")
        if os.environ.get("STAY") == "1":
            time.sleep(300)
        judge = os.environ.get("ROLE") == "judge" and sys.argv[1] == "execute"
        a = {"pass": True, "reason": "fine"} if judge else "ok"
        print(json.dumps({"status": "goal_satisfied", "output": a}), flush=True)
        os._exit(0)  # not waiting for its child
    """),
    "node": ("leave.cjs", """
        const c = require("child_process").spawn("sleep", ["300"], {stdio: "inherit"});
        require("fs").appendFileSync(process.env.PIDS, `${c.pid}\\n`);
        if (process.env.STAY === "1") setTimeout(() => {}, 300000);
        else {
          const judge = process.env.ROLE === "judge" && process.argv[2] === "execute";
          const a = judge ? {pass: true, reason: "fine"} : "ok";
          process.stdout.write(JSON.stringify({status: "goal_satisfied", output: a}) + "\\n",
                               () => process.exit(0));
        }
    """),
}


@pytest.mark.parametrize("lang", list(LEAVERS))
def test_a_grandchild_holding_the_pipes_holds_up_no_phase_and_dies_with_the_run(
    rook_workspace, rook_cli, tmp_path, lang
):
    """A hook that exits leaving `sleep 300 &` (its stdout and stderr still open) in
    each phase, as a judge profile's hook, a command criterion's program and a
    Ruhroh wrapper, in bash, Python and Node: Rook stops reading, the run ends, and
    every one of them is killed."""
    ws = rook_workspace
    name, body = LEAVERS[lang]
    path = ws.script(name, body, executable=lang == "bash")
    pids = tmp_path / "pids"
    script, env = f"scripts/{name}", {"PIDS": str(pids)}
    # every phase in bash; Python's and Node's children in execute (the phases share
    # one process layer: each open pipe costs the run its half-second grace)
    phases = ("prepare", "open", "execute", "collect", "close") if lang == "bash" else ("execute",)
    ws.profile({"id": "p", "hooks": dict.fromkeys(phases, script), "hook_env": env})
    ws.profile({"id": "grader", "hooks": {"execute": script}, "hook_env": {**env, "ROLE": "judge"}},
               active=False)
    wrapper = " ".join([*INTERPRETER[lang], str(path), "execute"])
    ws.profile({"id": "r", "hooks": {"execute": {"ruhroh": {"command": wrapper}}}, "hook_env": env},
               active=False)
    cmd = ["env", f"PIDS={pids}", *INTERPRETER[lang], str(path), "cmd"]
    ws.scenario({"id": "s", "goal": "g", "criteria": [
        {"contains": "ok"}, {"rubric": "fine"}, {"command": {"run": cmd}}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.report["scenarios"][0]["reason"]
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "--json", "--profile", "r").exit_code == 0
    left = [int(p) for p in pids.read_text().split()]
    assert len(left) == len(phases) + 3  # the phases', the judge's, the command's, the wrapper's
    deadline = time.monotonic() + 5
    while any(pid_alive(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in left if pid_alive(p)]


@pytest.mark.parametrize("lang", list(LEAVERS))
def test_a_grandchild_dies_with_its_hook_at_the_timeout_in_every_language(
    rook_workspace, rook_cli, tmp_path, lang
):
    ws = rook_workspace
    name, body = LEAVERS[lang]
    ws.script(name, body, executable=lang == "bash")
    pids = tmp_path / "pids"
    entry = {"script": f"scripts/{name}", "timeout_seconds": 1}
    ws.profile({"id": "p", "hooks": {"execute": entry}, "hook_env": {"PIDS": str(pids), "STAY": "1"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["hooks"][0]["status"] == "timeout"
    (grandchild,) = [int(p) for p in pids.read_text().split()]
    deadline = time.monotonic() + 5
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild)


@pytest.mark.parametrize("depth", [500, 100_000])
@pytest.mark.parametrize("phase", ["execute", "collect"])
def test_json_nested_too_deep_fails_the_hook_and_the_run_goes_on(rook_workspace, phase, depth):
    # 500 levels parse, but redacting (an env variable is set) recursed past
    # Python's limit: a traceback, and every scenario after it left pending.
    # 100,000 levels stop the JSON parser itself: the diagnosis was Python's
    # "maximum recursion depth exceeded while decoding a JSON array from a
    # unicode string", not the nesting limit the docs name
    ws = rook_workspace
    ws.script(
        "deep.py",
        f"""
        import sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
        deep = "[" * {depth} + "]" * {depth} if sys.argv[1] == {phase!r} else "1"
        if sys.argv[1] in ("execute", "collect"):
            print('{{"output": "ok", "deep": ' + deep + '}}')
    """,
        executable=False,  # run by extension, with the Python running Rook
    )
    ws.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/deep.py", "collect": "scripts/deep.py"},
            "env": [{"variable": "DEEP_TOKEN", "purpose": "a secret to redact"}],
        }
    )
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    proc = subprocess.run(
        [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "DEEP_TOKEN": "s3cret-deep-value"},
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    for s in report["scenarios"]:
        assert s["status"] == "error", s
        assert "nested more than 100 levels deep" in s["reason"], s["reason"]


@pytest.mark.parametrize(
    "lines",
    [
        'print("starting agent...")\n    print(json.dumps({"output": "ok"}))',
        'print(json.dumps({"output": "ok"}))\n    print("done.")',
    ],
)
def test_log_lines_on_stdout_say_to_print_logs_to_stderr(rook_workspace, rook_cli, lines):
    # the newcomer's mistake: a log line beside the JSON object; the table's
    # shortened reason must still say what to do
    body = f"#!/usr/bin/env python3\nimport json, sys\nif sys.argv[1] == 'execute':\n    {lines}\n"
    one_scenario(rook_workspace, body, name="h.py")
    r = rook_cli("run")
    assert r.exit_code == 1
    assert "print logs to stderr" in r.stdout
    s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == "error"
    assert "other lines beside the JSON object" in s["reason"]
    assert "received 'starting agent" in s["reason"] or "done." in s["reason"]


@pytest.mark.parametrize(
    "body, said",
    [
        # JSON Lines: a CLI's stream of events (stream-json), every line an object
        (r"""printf '{"type": "start"}\n{"type": "delta"}\n{"output": "ok"}\n'""", "3 JSON objects"),
        (r"""printf '{"output": "ok"}\n{"output": "ok"}\n'""", "2 JSON objects"),
        (r"""printf '{"output": "ok"}{"output": "ok"}'""", "2 JSON objects"),
    ],
)
@pytest.mark.parametrize("phase", ["execute", "collect"])
def test_several_json_objects_on_stdout_are_named_as_such(rook_workspace, rook_cli, body, said, phase):
    """Several JSON objects one after another were told "print logs to stderr: it has
    other lines beside the JSON object" (or a parser's "Extra data"): there was no log
    line, and the hook's author was sent looking for one."""
    ws = rook_workspace
    ws.script("h.sh", f'#!/bin/bash\ncat >/dev/null\n[ "$1" = {phase} ] && {body}\n'
              '[ "$1" = execute ] && [ "$1" != ' + phase + ' ] && echo \'{"output": "ok"}\'\nexit 0\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": "scripts/h.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == "error", s
    assert f"stdout is not one JSON object: it holds {said} one after another" in s["reason"], s
    assert "print one object" in s["reason"] and "received '{" in s["reason"], s
    assert "print logs to stderr" not in s["reason"] and "Extra data" not in s["reason"], s


def test_a_whole_token_count_written_as_a_float_is_recorded_as_a_whole_number(
    rook_workspace, rook_cli
):
    """``7.0`` is read as 7 (the judge said so) but the record and every report kept
    ``7.0`` (the HTML report showed "input": 7.0, "output": 1000.0); a cost stays as given."""
    body = (
        "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\n"
        """echo '{"output": "ok", "usage": {"input": 7.0, "output": 1e3, "total": 1007.0, """
        """"cost_usd": 2.0}}'\n"""
    )
    one_scenario(rook_workspace, body, criteria=[{"max_tokens": {"input": 7, "total": 1007}}])
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "capabilities": {"usage": True}}
    )
    s = rook_cli("run", "--json").report["scenarios"][0]
    assert s["status"] == "passed", s
    usage = s["turns"][0]["usage"]
    assert usage == {"input": 7, "output": 1000, "total": 1007, "cost_usd": 2.0}, usage
    assert all(type(usage[k]) is int for k in ("input", "output", "total")), usage
    assert type(usage["cost_usd"]) is float, usage


def test_agent_reply_beside_output_is_kept_as_evidence(rook_workspace, rook_cli):
    """output is the answer; an agent_reply given too was dropped, neither judged nor kept."""
    rook_workspace.script("both.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{"output": "a", "agent_reply": "b"}'
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/both.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "a"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "a" and turn["evidence"] == {"agent_reply": "b"}


API_NAMED = {
    # a hook passing on its API's usage ({"input_tokens": 5}) showed no token count:
    # max_tokens was unverifiable ("usage has no total count") and nothing said why
    "usage": ('"usage": {"input_tokens": 5, "output_tokens": 3}', {"max_tokens": 100},
              "usage has input_tokens, output_tokens but no input, output or total"),
    # a hook passing on its API's tool_calls showed no call log: not_called was
    # unverifiable ("shows no call log") and nothing said the name was why
    "calls": ('"tool_calls": [{"function": {"name": "cancel_order"}}]',
              {"not_called": "cancel_order"}, "the hook's output has tool_calls but no calls"),
}


@pytest.mark.parametrize("phase", ["execute", "collect"])
@pytest.mark.parametrize("capability", ["usage", "calls"])
def test_usage_or_calls_under_an_apis_own_names_are_named_in_a_warning(
    rook_workspace, rook_cli, phase, capability
):
    field, criterion, said = API_NAMED[capability]
    rook_workspace.script("api.sh", f"""
        #!/bin/bash
        case "$1" in
          execute) cat > /dev/null; echo '{{"output": "a"{", " + field if phase == "execute" else ""}}}' ;;
          collect) echo '{{{field if phase == "collect" else ""}}}' ;;
        esac
        exit 0
    """)
    hooks = {"execute": "scripts/api.sh", "collect": "scripts/api.sh"}
    rook_workspace.profile({"id": "p", "hooks": hooks, "capabilities": {capability: True}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [criterion]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "unverifiable", s["reason"]  # never taken as what they are not
    warnings = " ".join(s.get("warnings") or [])
    assert said in warnings, s


def test_a_warning_naming_the_hooks_fields_never_shows_a_secret(
    rook_workspace, rook_cli, monkeypatch
):
    # the fields are the hook's: one may be named after an env variable's value
    monkeypatch.setenv("AGENT_TOKEN", "s3cr3t-value-42")
    rook_workspace.script("api.py", """
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            t = os.environ["AGENT_TOKEN"]
            sys.stdin.read()
            print(json.dumps({"output": "a", t + "_tool_calls": [], "usage": {t + "_tokens": 1}}))
    """)
    env = [{"variable": "AGENT_TOKEN", "purpose": "the agent's token"}]
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/api.py"}, "env": env})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "a"}]})
    r = rook_cli("run")
    assert "[redacted:AGENT_TOKEN]_tool_calls" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "s3cr3t-value-42" not in r.stdout + r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's per-variable limit")
def test_a_handle_too_big_for_an_environment_variable_is_named_by_the_failure(
    rook_workspace, rook_cli
):
    """A conversation handle holding the whole history (an object grows each turn)
    can outgrow what one environment variable carries (128 KiB on Linux): the next
    hook cannot start, and its failure said only 'Argument list too long (python3)',
    though the hook takes one argument."""
    ws = rook_workspace
    ws.script("hist.py", """
        import json, os, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "ok", "conversation": {"history": "x" * 200000}}))
    """, executable=False)
    hooks = {"execute": "scripts/hist.py", "close": "scripts/hist.py"}
    ws.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error", s
    execute2, close = s["hooks"][1], s["hooks"][2]
    assert execute2["turn"] == 2 and close["phase"] == "close"
    for hook in (execute2, close):
        diagnosis = hook["diagnosis"]
        assert "ROOK_CONVERSATION holds 200" in diagnosis, diagnosis
        assert "more than one environment variable can carry" in diagnosis, diagnosis
        assert "ROOK_STATE_DIR" in diagnosis, diagnosis


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's ARG_MAX")
def test_an_environment_too_big_in_all_names_its_largest_variables(
    rook_workspace, rook_cli, monkeypatch
):
    """hook_env values each under 128 KiB, with Rook's own environment, can be more
    than a program's whole environment carries: the failure said only 'Argument
    list too long (...)', naming no variable."""
    ws = rook_workspace
    half = os.sysconf("SC_ARG_MAX") // 120_000 // 2 + 1
    for i in range(half):
        monkeypatch.setenv(f"PAD{i}", "p" * 120_000)
    hook_env = {f"V{i}": "v" * 120_000 for i in range(half)}
    hook_env["BIG"] = "b" * 125_000
    ws.script("ok.sh", """
        #!/bin/bash
        echo '{"output": "ok"}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/ok.sh"}, "hook_env": hook_env})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error", s
    diagnosis = s["hooks"][0]["diagnosis"]
    assert "Argument list too long" in diagnosis, diagnosis
    assert "more than it can carry with the arguments (ARG_MAX)" in diagnosis, diagnosis
    assert "the largest: BIG (125005 bytes)" in diagnosis, diagnosis


SWITCHES_ON_ITS_PHASE = """#!/bin/bash
# one script for every phase: it implements execute and exits 0 for the rest
case "$1" in
  execute) cat >/dev/null; echo '{"output": "ok"}' ;;
  collect) COLLECT_BODY ;;
  *) exit 0 ;;
esac
"""


@pytest.mark.parametrize("body", ["exit 0", r"printf '\xef\xbb\xbf'"])
def test_a_script_that_exits_0_for_collect_it_does_not_implement_passes(body, rook_workspace,
                                                                        rook_cli):
    # "A script implements the phases it needs and exits successfully for the
    # rest": one script named for every phase, collect printing nothing, failed
    # every scenario ("the hook printed nothing on stdout"); it collected nothing,
    # which the scenario run's warnings say; so is a byte order mark alone (a
    # PowerShell or .NET tool writes one before nothing), which failed the hook
    ws = rook_workspace
    ws.script("agent.sh", SWITCHES_ON_ITS_PHASE.replace("COLLECT_BODY", body))
    phases = ("prepare", "open", "execute", "close", "collect")
    ws.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in phases}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    s = r.report["scenarios"][0]
    assert s["status"] == "passed", s["reason"]
    assert [h["phase"] for h in s["hooks"]] == ["open", "execute", "close", "collect"]
    assert any("collect printed nothing" in w for w in s["warnings"]), s["warnings"]


def test_a_collect_that_prints_what_is_no_json_object_still_fails(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("agent.sh", SWITCHES_ON_ITS_PHASE.replace("COLLECT_BODY", "echo 'traces: 3'"))
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and "collect failed" in s["reason"], s["reason"]
    assert "traces: 3" in s["reason"]


def test_a_bash_hook_with_windows_line_endings_is_named_as_such(rook_workspace, rook_cli):
    """A .sh hook saved with Windows line endings and run by bash fails with bash's
    own puzzling words (syntax error: unexpected end of file): the diagnosis says why."""
    ws = rook_workspace
    one_scenario(ws, "x")
    script = ws.agent_dir / "scripts" / "h.sh"
    script.write_bytes(b'if [ "$1" = execute ]; then\r\n  echo \'{"output": "ok"}\'\r\nfi\r\n')
    script.chmod(0o644)
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    hook = r.report["scenarios"][0]["hooks"][0]
    assert hook["status"] == "failed"
    assert "Windows line endings" in hook["diagnosis"] and "convert it to LF" in hook["diagnosis"]




@pytest.mark.parametrize("bound_by", ["entry", "scenario"])
def test_a_timed_out_hook_says_which_timeout_to_raise(rook_workspace, rook_cli, bound_by):
    """A script hook that timed out said 'timed out after 1 s; its process group was
    killed' and not which setting to raise, as an http: entry's and a Ruhroh wrapper's
    diagnoses do: the hook entry's timeout_seconds, or the scenario's when it is lower."""
    ws = rook_workspace
    ws.script("h.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\nsleep 30\n")
    entry_timeout = 1 if bound_by == "entry" else 20
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/h.sh",
                                                  "timeout_seconds": entry_timeout}}})
    scenario = {"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]}
    if bound_by == "scenario":
        scenario["timeout_seconds"] = 1
    ws.scenario(scenario)
    r = rook_cli("run", "--json")
    hook = r.report["scenarios"][0]["hooks"][0]
    assert hook["status"] == "timeout", hook
    want = {
        "entry": "raise timeout_seconds on the hook entry if the agent is this slow",
        "scenario": "the scenario's timeout_seconds (1 s) ran out first: raise it",
    }[bound_by]
    assert hook["diagnosis"].startswith("timed out after 1 s; its process group was killed")
    assert want in hook["diagnosis"], hook["diagnosis"]

def test_a_hook_stopped_by_sigstop_is_said_stopped_and_can_clean_up(rook_workspace, rook_cli, tmp_path):
    """A hook that stopped itself (`kill -STOP $$`, a shell's job control) was
    "timed out ... raise timeout_seconds if the agent is this slow", and its SIGTERM
    stayed pending until the SIGKILL: its trap never ran. Rook now says it was
    stopped, and sends SIGCONT after the SIGTERM, as systemd does."""
    cleaned = tmp_path / "cleaned"
    ws = rook_workspace
    ws.script("h.sh", f"#!/bin/bash\ntrap 'echo yes > {cleaned}; exit 0' TERM\nkill -STOP $$\nsleep 30\n")
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/h.sh", "timeout_seconds": 1}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    hook = r.report["scenarios"][0]["hooks"][0]
    assert hook["status"] == "timeout", hook
    assert hook["diagnosis"].startswith(
        "timed out after 1 s; it was stopped (SIGSTOP or SIGTSTP) and never continued; "
        "its process group was killed"
    ), hook["diagnosis"]
    assert "if the agent is this slow" not in hook["diagnosis"], hook["diagnosis"]
    assert "raising timeout_seconds will not help" in hook["diagnosis"], hook["diagnosis"]
    assert cleaned.read_text() == "yes\n"


def test_a_stopped_process_that_left_the_hook_s_group_can_clean_up_too(
    rook_workspace, rook_cli, tmp_path
):
    """The SIGCONT after the SIGTERM went to the hook's process group only: a
    stopped descendant that had left it (setsid) kept its SIGTERM pending until
    the SIGKILL, and its trap never ran."""
    cleaned = tmp_path / "cleaned"
    ws = rook_workspace
    ws.script("h.sh", f"""#!/bin/bash
setsid bash -c 'trap "echo yes > {cleaned}; exit 0" TERM; kill -STOP $$; sleep 30' &
sleep 30
""")
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/h.sh", "timeout_seconds": 1}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    hook = r.report["scenarios"][0]["hooks"][0]
    assert hook["status"] == "timeout", hook
    assert cleaned.read_text() == "yes\n"


def test_a_hook_waiting_for_a_stopped_child_is_said_so_not_told_to_raise_its_timeout(
    rook_workspace, rook_cli
):
    """A hook that waited for a process it started, which was stopped (SIGSTOP,
    SIGTSTP), was "timed out ... raise timeout_seconds if the agent is this slow":
    no timeout would have been enough. The diagnosis names the stopped process and
    says raising timeout_seconds will not help."""
    ws = rook_workspace
    ws.script("h.sh", "#!/bin/bash\nsleep 30 &\nkill -STOP $!\nwait\n")
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/h.sh", "timeout_seconds": 1}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    hook = r.report["scenarios"][0]["hooks"][0]
    assert hook["status"] == "timeout", hook
    d = hook["diagnosis"]
    assert d.startswith("timed out after 1 s; a process it started (pid "), d
    # its name: sleep, or h.sh when the STOP came before the fork's exec
    assert ") was stopped (SIGSTOP or SIGTSTP) and never continued; " in d, d
    assert "raising timeout_seconds will not help" in d, d
    assert "if the agent is this slow" not in d, d


@pytest.mark.parametrize("run_bit", [True, False], ids=["executable", "by-extension"])
def test_a_bash_hook_whose_read_meets_the_goals_end_under_set_e_is_told_so(
    rook_workspace, rook_cli, run_bit
):
    """`read goal` returns 1 at a last line with no newline (Rook sends the goal as it
    is), which stops a script under set -e in silence: the diagnosis said only
    'exited with code 1 (stderr was empty)', docs/hooks.md's pitfall without its fix."""
    ws = rook_workspace
    body = """
        #!/bin/bash
        set -euo pipefail
        [ "$1" = execute ] || exit 0
        read -r goal
        echo "{\\"output\\": \\"ok: $goal\\"}"
    """
    one_scenario(ws, body, goal="When are you open?")
    (ws.agent_dir / "scripts" / "h.sh").chmod(0o755 if run_bit else 0o644)
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    diagnosis = r.report["scenarios"][0]["hooks"][0]["diagnosis"]
    assert diagnosis.startswith("exited with code 1 (stderr was empty)"), diagnosis
    assert "read" in diagnosis and "goal=$(cat)" in diagnosis, diagnosis


def test_a_bash_hook_that_exits_1_in_silence_for_another_reason_gets_no_read_hint(
    rook_workspace, rook_cli
):
    ws = rook_workspace
    one_scenario(ws, "#!/bin/bash\nset -e\n[ \"$1\" = execute ] || exit 0\nexit 1\n")
    r = rook_cli("run", "--json")
    diagnosis = r.report["scenarios"][0]["hooks"][0]["diagnosis"]
    assert diagnosis == "exited with code 1 (stderr was empty)", diagnosis

@pytest.mark.parametrize(
    ("name", "body"),
    [
        (  # console.log of an object prints JavaScript, not JSON
            "h.mjs",
            "if (process.argv[2] === 'execute') console.log({output: 'ok', calls: []});\n",
        ),
        (  # print of a dict prints Python, not JSON
            "h.py",
            "import sys\nif sys.argv[1] == 'execute':\n    print({'output': 'ok', 'usage': None})\n",
        ),
    ],
)
def test_an_object_printed_as_is_is_told_to_print_json(rook_workspace, rook_cli, name, body):
    """console.log(obj) and print(dict) print no JSON; the diagnosis says what to print."""
    if name.endswith(".mjs") and not shutil.which("node"):
        pytest.skip("node is not installed")
    ws = rook_workspace
    one_scenario(ws, body, name=name)
    (ws.agent_dir / "scripts" / name).chmod(0o644)
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    diagnosis = r.report["scenarios"][0]["hooks"][0]["diagnosis"]
    assert diagnosis.startswith(
        "stdout is not one JSON object: it looks like a Python dict or a JavaScript object "
        "printed as it is; print json.dumps(...) (Python) or JSON.stringify(...) (Node)"
    ), diagnosis
    assert "received" in diagnosis


def test_nothing_on_stdout_shows_what_went_to_stderr(rook_workspace, rook_cli):
    """console.error (or print to sys.stderr) sends the JSON object to the wrong stream:
    'printed nothing on stdout' alone hid that it was printed at all."""
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo '{"output": "ok"}' >&2
    """,
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    diagnosis = r.report["scenarios"][0]["hooks"][0]["diagnosis"]
    assert diagnosis.startswith("the hook printed nothing on stdout; expected one JSON object")
    assert 'its stderr: {"output": "ok"}' in diagnosis, diagnosis


def test_a_hook_that_answered_and_exited_non_zero_is_told_to_exit_0(rook_workspace, rook_cli):
    """A script whose last command fails (a grep that matched nothing, an exit 1 left
    in) after printing its answer: 'exited with code 1 (stderr was empty)' hid why."""
    one_scenario(
        rook_workspace,
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo '{"output": "ok"}'
        grep -q never-there /dev/null
    """,
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    diagnosis = r.report["scenarios"][0]["hooks"][0]["diagnosis"]
    assert diagnosis == (
        "exited with code 1 (stderr was empty) after printing one JSON object on stdout: "
        "a hook that answered exits 0"
    ), diagnosis


MISBEHAVING = {
    "h.sh": r"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        case "$(cat)" in
          crash) echo 'about to crash' >&2; kill -SEGV $$ ;;
          partial) printf '{"output": "ha'; sleep 300 ;;
          nonl) head -c 3000000 /dev/zero | tr '\0' x ;;
          *) echo '{"output": "ok"}' ;;
        esac
    """,
    "h.py": r"""
        #!/usr/bin/env python3
        import os, signal, sys, time
        if sys.argv[1] != "execute":
            sys.exit(0)
        goal, out = sys.stdin.read(), sys.stdout
        if goal == "crash":
            print("about to crash", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        elif goal == "partial":
            out.write('{"output": "ha'); out.flush(); time.sleep(300)
        elif goal == "nonl":
            out.write("x" * 3000000)
        else:
            print('{"output": "ok"}')
    """,
    "h.mjs": r"""
        #!/usr/bin/env node
        if (process.argv[2] !== "execute") process.exit(0);
        let goal = "";
        process.stdin.on("data", (d) => (goal += d)).on("end", () => {
          if (goal === "crash") {
            process.stderr.write("about to crash\n", () => process.kill(process.pid, "SIGSEGV"));
          } else if (goal === "partial") {
            process.stdout.write('{"output": "ha'); setTimeout(() => {}, 300000);
          } else if (goal === "nonl") process.stdout.write("x".repeat(3000000));
          else process.stdout.write('{"output": "ok"}\n');
        });
    """,
}


@pytest.mark.parametrize("name", list(MISBEHAVING))
def test_a_crashing_half_writing_or_newline_less_hook_fails_its_scenario_and_the_run_goes_on(
    rook_workspace, rook_cli, name
):
    """SPEC §12: a hook killed by a signal, one that writes half a JSON line and
    hangs, one that prints megabytes without a newline: each fails its scenario
    with a diagnosis, and the scenarios around them still run."""
    if name.endswith(".mjs") and not shutil.which("node"):
        pytest.skip("node is not installed")
    ws = rook_workspace
    ws.script(name, MISBEHAVING[name])
    ws.profile({"id": "p", "hooks": {"execute": {"script": f"scripts/{name}", "timeout_seconds": 2}}})
    for goal in ("crash", "partial", "nonl", "fine"):
        ws.scenario({"id": goal, "goal": goal, "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "--concurrency", "4")
    assert r.exit_code == 1, r.stdout + r.stderr
    by_id = {s["id"]: s for s in r.report["scenarios"]}
    assert {k: s["status"] for k, s in by_id.items()} == {
        "crash": "error", "partial": "error", "nonl": "error", "fine": "passed"}
    crash = by_id["crash"]["hooks"][0]
    assert crash["exit_code"] == -11
    assert crash["diagnosis"].startswith("killed by signal 11: about to crash"), crash
    partial = by_id["partial"]["hooks"][0]
    assert partial["status"] == "timeout" and partial["diagnosis"].startswith("timed out after 2 s")
    # what it wrote before it hung is kept in the record
    assert ws.record(r.report["run"]["id"], "partial.1")["hooks"][0]["stdout"] == '{"output": "ha'
    nonl = by_id["nonl"]["hooks"][0]["diagnosis"]
    assert nonl.startswith("stdout is not one JSON object") and "received 'xxx" in nonl
    assert len(nonl) < 2000  # the preview is cut: megabytes never reach a message


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_json_printed_in_utf_16_is_named_so(rook_workspace, rook_cli, codec):
    # PowerShell's Out-File and > write UTF-16: the diagnosis only said "Expecting value:
    # line 1 column 1 (char 0)" beside '\ufffd\ufffd{\x00"\x00o\x00...'
    one_scenario(rook_workspace, f"""
        #!/usr/bin/env python3
        import sys
        sys.stdin.read()
        sys.stdout.buffer.write('{{"output": "ok"}}'.encode("{codec}"))
    """, name="h.py")
    r = rook_cli("run", "--json")
    [hook] = r.report["scenarios"][0]["hooks"]
    assert hook["status"] == "failed", hook
    assert hook["diagnosis"].startswith(
        "stdout is not one JSON object: it is UTF-16 text, and Rook reads a hook's output as "
        "UTF-8; print UTF-8"), hook["diagnosis"]


def test_a_number_of_thousands_of_digits_is_named_without_pythons_advice(rook_workspace, rook_cli):
    # was "(Exceeds the limit (4300 digits) for integer string conversion: value has 5001
    # digits; use sys.set_int_max_str_digits() to increase the limit)": advice for Rook's code
    one_scenario(rook_workspace, """
        #!/usr/bin/env python3
        import sys
        sys.stdin.read()
        print('{"output": "ok", "n": 1' + '0' * 5000 + '}')
    """, name="h.py")
    r = rook_cli("run", "--json")
    [hook] = r.report["scenarios"][0]["hooks"]
    assert hook["status"] == "failed", hook
    assert hook["diagnosis"].startswith(
        "stdout is not one JSON object (a number of 5001 digits, more than the 4300 a JSON "
        "number may have here); received"), hook["diagnosis"]


def test_an_open_handle_printed_in_utf_16_fails_open_instead_of_being_lost(
    rook_workspace, rook_cli
):
    # open's {"conversation": "c-9"} in UTF-16 (PowerShell's Out-File) was no JSON, so it
    # was ignored with its handle: the scenario "stopped" as if open returned none
    ws = rook_workspace
    ws.script("h.py", """
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "open":
            sys.stdout.buffer.write('{"conversation": "c-9"}'.encode("utf-16"))
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "ok " + os.environ.get("ROOK_CONVERSATION", "")}))
    """)
    hooks = {"open": "scripts/h.py", "execute": "scripts/h.py"}
    ws.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and s["turns"] == [], s
    assert s["reason"].startswith(
        "open failed: stdout is not one JSON object: it is UTF-16 text"), s["reason"]
