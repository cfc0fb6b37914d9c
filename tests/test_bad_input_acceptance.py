"""SPEC §12 held in combinations the other bad-input tests leave out: a message naming
the file, field, hook or variable; exit 2 before anything runs; never a traceback;
never a lost result for anything that already finished."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOK = [sys.executable, "-m", "rook_core"]


def rook(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([*ROOK, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


MISBEHAVING = r"""#!/bin/bash
# one misbehaviour per scenario, chosen by its id; the others answer
case "$1" in execute) ;; collect) [ "$ROOK_SCENARIO_ID" = collect-fails ] && { echo 'collector down' >&2; exit 4; }; echo '{}'; exit 0;; *) exit 0;; esac
goal=$(cat)
case "$ROOK_SCENARIO_ID" in
  fails) echo "agent crashed: $goal" >&2; exit 3;;
  hangs) sleep 60;;
  floods) head -c 3000000 /dev/zero | tr '\0' 'y';;
  garbage) printf '\x00\xff\x1b[2J not json {';;
  half) printf '{"output": "cut';;
  two-objects) echo '{"output": "a"}'; echo '{"output": "b"}';;
esac
printf '{"output": "ok: %s"}\n' "$goal"
"""

KINDS = ["fails", "hangs", "floods", "garbage", "half", "two-objects", "collect-fails"]


def test_every_kind_of_misbehaving_hook_fails_only_its_scenario_and_keeps_the_rest(tmp_path):
    """Failing, hanging, flooding, garbage, half an object, two objects and a failing
    collect, in one run at concurrency 3 with two repeats: each fails its scenario with a
    diagnosis saying what went wrong; the passing scenario passes every time; every
    record is on disk; resuming the run finds nothing to do and loses nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    assert rook("init", "--project", "p", "--agent", "a", cwd=ws).returncode == 0
    agent = ws / ".testmuai/rook/projects/p/agents/a"
    script = agent / "scripts" / "h.sh"
    script.parent.mkdir(exist_ok=True)
    script.write_text(MISBEHAVING)
    script.chmod(0o755)
    (agent / "profiles" / "p.yaml").write_text(
        "id: p\nhooks:\n  execute: {script: scripts/h.sh, timeout_seconds: 3}\n"
        "  collect: scripts/h.sh\nconcurrency: 3\nlimits: {stdout_bytes: 1000000}\n"
    )
    (agent / "profiles" / "active").write_text("p")
    for sid in [*KINDS, "good"]:
        (agent / "scenarios" / f"{sid}.yaml").write_text(
            f"id: {sid}\ngoal: 'hello {sid}'\ncriteria: [{{contains: ok}}]\n"
        )
    r = rook("run", "--repeat", "2", "--json", cwd=ws)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    report = json.loads(r.stdout)
    got = {(s["id"], s["repeat_index"]): s for s in report["scenarios"]}
    assert len(got) == 2 * (len(KINDS) + 1)
    said = {
        "fails": "agent crashed: hello fails",
        "hangs": "timed out after 3 s",
        "floods": "stdout exceeded the 1000000-byte cap",
        "garbage": "not one JSON object",
        "half": "not one JSON object",
        "two-objects": "not one JSON object",
        "collect-fails": "collector down",
    }
    for (sid, n), s in got.items():
        if sid == "good":
            assert s["status"] == "passed", s
            continue
        assert s["status"] == "error", (sid, n, s["status"], s["reason"])
        assert said[sid] in s["reason"], (sid, s["reason"])
        failed = [h for h in s["hooks"] if h["status"] != "ok"]
        assert failed and failed[-1]["diagnosis"], (sid, s["hooks"])
    assert "\x1b[2J" not in r.stderr  # the garbage's terminal control never reaches the screen
    run_dir = Path(report["run"]["dir"])
    assert sorted(p.name for p in (run_dir / "scenarios").glob("*.json")) == sorted(
        f"{sid}.{n}.json" for sid in [*KINDS, "good"] for n in (1, 2)
    )
    before = {p.name: p.read_bytes() for p in (run_dir / "scenarios").glob("*.json")}
    again = rook("run", "--run", report["run"]["id"], "--json", cwd=ws)
    assert again.returncode == 1 and "Traceback" not in again.stderr, again.stderr
    assert {p.name: p.read_bytes() for p in (run_dir / "scenarios").glob("*.json")} == before


PREPARE_MARKS = r"""#!/bin/bash
[ "$1" = prepare ] && echo prepared >> "$ROOK_WORKSPACE/prepared.log"
[ "$1" = execute ] && { cat >/dev/null; echo '{"output": "ok"}'; }
exit 0
"""


def _marked_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert rook("init", "--project", "p", "--agent", "a", cwd=ws).returncode == 0
    agent = ws / ".testmuai/rook/projects/p/agents/a"
    (agent / "scripts").mkdir(exist_ok=True)
    (agent / "scripts" / "h.sh").write_text(PREPARE_MARKS)
    (agent / "scripts" / "h.sh").chmod(0o755)
    (agent / "profiles" / "p.yaml").write_text(
        "id: p\nhooks:\n  prepare: scripts/h.sh\n  execute: scripts/h.sh\n"
    )
    (agent / "profiles" / "judge.yaml").write_text(
        "id: judge\nhooks:\n  execute: scripts/h.sh\n"
        "env: [{variable: JUDGE_KEY_UNSET_H3, purpose: the judge's API key}]\n"
    )
    (agent / "profiles" / "active").write_text("p")
    for sid in ("one", "two"):
        (agent / "scenarios" / f"{sid}.yaml").write_text(
            f"id: {sid}\ngoal: hi\ncriteria: [{{contains: ok}}]\n"
        )
    return ws, agent


def test_bad_input_found_only_on_a_resume_or_in_a_judge_profile_runs_no_prepare(tmp_path):
    """Each of these is refused with exit 2, naming what is wrong, before prepare runs
    again (its marker file does not grow) and without touching what the first
    invocation recorded."""
    ws, agent = _marked_workspace(tmp_path)
    first = rook("run", "--phases", "prepare,open,execute,close", cwd=ws)
    assert first.returncode == 0, first.stderr
    marks = (ws / "prepared.log").read_text()
    [run_dir] = (agent / "runs").iterdir()
    recorded = {p.name: p.read_bytes() for p in (run_dir / "scenarios").glob("*.json")}
    cases = [
        (["--only", "three"], None, "--only: this run has no scenario with id three"),
        (["--phases", "execute,judge"], None, "--phases"),
        (["--profile", "judge"], None, "made with profile 'p', not 'judge'"),
        (["--judge-profile", "judge"], None, "JUDGE_KEY_UNSET_H3: the judge's API key"),
        ([], ("scenarios/two.yaml", "id: two\ngoal: [\n"), "two.yaml (line 3"),
        ([], ("scenarios/two.yaml", "id: two\ngoal: hi\ncriteria: [{containz: ok}]\n"), "did you mean contains"),
        ([], ("profiles/p.yaml", "id: p\nhooks:\n  execute: scripts/h.sh\nbogus: 1\n"), "bogus: unknown field"),
        ([], ("profiles/p.yaml", "id: p\nhooks:\n  execute: scripts/gone.sh\n"), "scripts/gone.sh' not found"),
        ([], ("../../../../config.yaml", "judge_profile: judge\n"), "JUDGE_KEY_UNSET_H3"),
    ]
    for args, edit, said in cases:
        saved = None
        if edit:
            path = agent / edit[0]
            saved = path.read_text() if path.exists() else None
            path.write_text(edit[1])
        if "judge" in " ".join(args) or (edit and "config" in edit[0]):
            (agent / "scenarios" / "rubric.yaml").write_text("id: one\ngoal: hi\ncriteria: [{rubric: polite}]\n")
            (agent / "scenarios" / "one.yaml").rename(agent / "scenarios" / "one.yaml.off")
        r = rook("run", "--run", run_dir.name, "--phases", "collect,judge", *args, cwd=ws)
        assert r.returncode == 2, (args, edit, r.returncode, r.stdout, r.stderr)
        assert said in r.stderr, (args, edit, r.stderr)
        assert "Traceback" not in r.stderr and not r.stdout.strip()
        assert (ws / "prepared.log").read_text() == marks, (args, edit)
        assert {p.name: p.read_bytes() for p in (run_dir / "scenarios").glob("*.json")} == recorded
        if edit:
            path = agent / edit[0]
            if saved is None:
                path.unlink()
            else:
                path.write_text(saved)
        if (agent / "scenarios" / "one.yaml.off").exists():
            (agent / "scenarios" / "rubric.yaml").unlink()
            (agent / "scenarios" / "one.yaml.off").rename(agent / "scenarios" / "one.yaml")
    done = rook("run", "--run", run_dir.name, "--phases", "collect,judge", cwd=ws)
    assert done.returncode == 0, done.stderr  # and the run still finishes
