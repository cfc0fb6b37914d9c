"""Every next-step command Rook prints works as printed: run from another folder
with ``-w DIR --project P --agent A`` (the workspace's path holding a space, and
holding two projects, so that none of the flags can be left out), the command a
message names is copied and run from that same folder (real subprocesses of the
installed ``rook_core``, real bash hooks)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import pytest

from rook_core.testing import Workspace

ANSWER = """
#!/bin/bash
[ "$1" = execute ] || exit 0
cat >/dev/null
echo '{"output": "ok"}'
"""


@pytest.fixture
def place(tmp_path):
    """A workspace of two projects at a path with a space, and a folder elsewhere."""
    ws = Workspace(tmp_path / "my ws", project="shop", agent="desk")
    Workspace(ws.root, project="other", agent="bot")  # --project can never be left out
    ws.script("agent.sh", ANSWER)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}}, active=False)
    ws.profile({"id": "two", "hooks": {"execute": "scripts/agent.sh"}}, active=False)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return ws, elsewhere


def rook(cwd, *argv):
    return subprocess.run(
        [sys.executable, "-m", "rook_core", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def flags(ws):
    return ["-w", str(ws.root), "--project", ws.project, "--agent", ws.agent]


def printed(text, after, end=None):
    """The ``rook ...`` command that follows ``after`` in ``text`` (to ``end``, or to
    the end of the line), as argv without ``rook``."""
    line = text[text.index(after) + len(after) :].splitlines()[0]
    if end is not None:
        line = line[: line.index(end)]
    argv = shlex.split(line)
    assert argv[0] == "rook", line
    return argv[1:]


def test_several_profiles_and_none_active_name_a_rook_profile_use_that_works(place):
    """'choose one with rook profile show NAME, or make one active: rook profile use
    NAME' was printed without the -w/--project/--agent the command was given: run as
    printed from the same folder, it found no workspace (exit 2)."""
    ws, elsewhere = place
    for command in (["run"], ["profile", "show"], ["profile", "test"]):
        r = rook(elsewhere, *command, *flags(ws))
        assert r.returncode == 2, r.stdout + r.stderr
        assert "several profiles (one, two)" in r.stderr, r.stderr
        use = printed(r.stderr, "make one active: ")
        assert use[:3] == ["profile", "use", "NAME"], use
        if command != ["run"]:  # its own command, with NAME chosen, works too
            chosen = printed(r.stderr, "choose one with ", ", or make")
            chosen[chosen.index("NAME")] = "one"
            shown = rook(elsewhere, *chosen)
            assert shown.returncode == 0 and "one" in shown.stdout, shown.stdout + shown.stderr
    use[2] = "two"
    r = rook(elsewhere, *use)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (ws.agent_dir / "profiles" / "active").read_text().strip() == "two"
    # profiles/active naming a profile removed since: the same
    (ws.agent_dir / "profiles" / "active").write_text("gone")
    r = rook(elsewhere, "run", *flags(ws))
    assert r.returncode == 2 and "names 'gone', which is no profile here" in r.stderr, r.stderr
    use = printed(r.stderr, "choose one with ")
    use[2] = "one"
    assert rook(elsewhere, *use).returncode == 0


def test_no_such_run_names_a_rook_runs_that_works(place):
    """'(try: rook runs; latest is ...)' had none of the flags that found the agent."""
    ws, elsewhere = place
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    assert rook(elsewhere, "run", *flags(ws)).returncode == 0
    for command in (
        ["runs", "show", "nope"],
        ["report", "nope"],
        ["diff", "latest", "nope"],
        ["run", "--run", "nope"],
    ):
        r = rook(elsewhere, *command, *flags(ws))
        assert r.returncode == 2 and "no such run" in r.stderr, r.stderr
        again = rook(elsewhere, *printed(r.stderr, "(try: ", ";"))
        assert again.returncode == 0 and "passed" in again.stdout, again.stdout + again.stderr


def test_a_report_not_written_names_a_rook_report_that_writes_it(place):
    """At the end of a run, 'write again with: rook report ID --report json:PATH' had
    none of the flags that found the run, and its path unquoted."""
    ws, elsewhere = place
    target = elsewhere / "out dir"
    ws.script(  # the folder the report goes to becomes a file while the run goes on
        "agent.sh",
        f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat >/dev/null
        touch {shlex.quote(str(target))}
        echo '{{"output": "ok"}}'
        """,
    )
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    r = rook(elsewhere, "run", *flags(ws), "--report", "json:out dir/r.json")
    assert r.returncode == 1 and "out dir is not a directory" in r.stderr, r.stderr
    target.unlink()
    again = rook(elsewhere, *printed(r.stderr, "write again with: "))
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((target / "r.json").read_text())["summary"]["passed"] == 1


def test_init_names_a_next_command_that_works_from_another_folder(tmp_path):
    """rook init -w 'my ws' printed 'next: rook run -w /.../my ws': the path unquoted,
    so the command as printed named another folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "my ws"
    r = rook(elsewhere, "init", "-w", str(ws), "--project", "a", "--agent", "b", "--example")
    assert r.returncode == 0, r.stdout + r.stderr
    argv = printed(r.stdout, "next: ", "     (then")
    assert argv == ["run", "-w", str(ws)], argv
    again = rook(elsewhere, *argv)
    assert again.returncode == 0 and "3 passed" in again.stdout, again.stdout + again.stderr
    r = rook(elsewhere, "init", "-w", str(ws), "--project", "c", "--agent", "d")
    argv = printed(r.stdout, "next: ", " (or --from")
    assert argv[:6] == ["profile", "add", "-w", str(ws), "--project", "c"], argv
    assert argv[6:8] == ["--agent", "d"], argv


def test_doctor_names_commands_that_work_from_another_folder(place):
    """rook doctor -w DIR's fixes named 'rook profile add --project P --agent A' and
    'rook init --project P --agent NEW --example' without -w: run as printed from
    the folder doctor ran in, they made or looked for a workspace there."""
    ws, elsewhere = place
    Workspace(ws.root, project="shop", agent="bare")  # no profile
    r = rook(elsewhere, "doctor", "-w", str(ws.root), "--json")
    fixes = [f["fix"] for f in json.loads(r.stdout)["findings"] if "shop/bare" in f["subject"]]
    fix = next(f for f in fixes if "rook init" in f)
    argv = shlex.split(fix[fix.index("rook init") :])[1:]
    argv[argv.index("NEW")] = "new"
    again = rook(elsewhere, *argv)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (ws.root / ".testmuai/rook/projects/shop/agents/new/profiles/active").is_file()
    assert not (elsewhere / ".testmuai").exists()
    add = fix[fix.index("rook profile add") : fix.index(" (docs/")]
    assert re.fullmatch(r"rook profile add -w '.*' --project shop --agent bare", add), add


HOOKS = {  # a hook of each way a test can end without an answer, and what next: says
    "slow": ("sleep 30", "check that the target is up and answers"),
    "hang": ("echo '{\"output\": \"hi\"}'; sleep 30", "make the hook exit once it has printed"),
    "stop": ("kill -STOP $$", "find what stopped the hook"),
    "oom": ("kill -KILL $$", "killed by signal 9 (SIGKILL), by something other than Rook"),
    "crash": ("kill -SEGV $$", "killed by signal 11 (SIGSEGV), by something other than Rook"),
}


@pytest.mark.parametrize("name", HOOKS)
def test_profile_fix_advice_follows_the_diagnosis_and_its_command_works(place, name):
    """rook profile fix (and test) told every timed-out hook to check the target and
    raise the timeout, and a hook a signal killed to name an author agent; the advice
    ended 'then run rook profile test again', which, run from another folder (or with
    several profiles and none active), found no workspace or asked which profile.
    (One hook a test: each waits out its timeout, and the kill's grace, three times.)"""
    ws, elsewhere = place
    body, said = HOOKS[name]
    ws.script(f"{name}.sh", f"#!/bin/bash\ncat >/dev/null\n{body}\n")
    hook = {"script": f"scripts/{name}.sh", "timeout_seconds": 1}
    ws.profile({"id": name, "hooks": {"execute": hook}}, active=False)
    for command in ("fix", "test"):
        r = rook(elsewhere, "profile", command, name, *flags(ws))
        assert r.returncode == 1, r.stdout + r.stderr
        nxt = r.stdout.split("\nnext: ", 1)[1]
        assert nxt.startswith(said) or said in nxt.split(":")[0], (name, command, nxt)
        if name != "slow":  # no timeout helps these: never "raise the timeout"
            assert "raise the timeout" not in nxt and "target is up" not in nxt, nxt
        assert "author agent" not in nxt, nxt
    again = rook(elsewhere, *printed(nxt, "then run "))
    assert again.returncode == 1 and f"profile {name} (" in again.stdout, again.stderr


FLAKY = """
#!/bin/bash
[ "$1" = execute ] || exit 0
cat >/dev/null
touch "$ROOK_WORKSPACE/started"
[ -e "$ROOK_WORKSPACE/hold" ] && sleep 60
mkdir "$ROOK_RUN_STATE_DIR/first" 2>/dev/null && echo '{"output": "no"}' || echo '{"output": "ok"}'
"""
"""Fails the run's first execute, passes the others; holds while ``hold`` exists."""


def test_the_command_that_finishes_a_run_keeps_its_gate_and_concurrency(place):
    """A run split by phase (or cut off) with --min-pass-rate printed 'resume with:
    rook run --run ID --phases collect,judge -w ...' without the gate: run as printed,
    the finished run had none, so one failed repeat of four exited 1 where the gate
    (0.5) passes it (exit 0); --concurrency was dropped too."""
    ws, elsewhere = place
    ws.script("agent.sh", FLAKY)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    given = ["--repeat", "4", "--min-pass-rate", "0.5", "-j", "3"]
    r = rook(elsewhere, "run", *flags(ws), *given, "--phases", "prepare,open,execute,close")
    assert r.returncode == 0, r.stdout + r.stderr
    argv = printed(r.stderr, "resume with: ")
    assert argv[-4:] == ["--min-pass-rate", "0.5", "--concurrency", "3"], argv
    shown = rook(elsewhere, "runs", "show", "latest", *flags(ws))
    assert printed(shown.stderr, "finish it with: ") == argv, shown.stderr
    again = rook(elsewhere, *argv)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "gate --min-pass-rate 0.5: every scenario reached it" in again.stdout, again.stdout


def test_the_command_that_finishes_an_interrupted_run_keeps_its_gate(place):
    import os
    import signal
    import time

    ws, elsewhere = place
    ws.script("agent.sh", FLAKY)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    (ws.root / "hold").touch()
    argv = [sys.executable, "-m", "rook_core", "run", *flags(ws), "--repeat", "2"]
    proc = subprocess.Popen(
        [*argv, "--min-pass-rate", "0.5", "-j", "1"],
        cwd=elsewhere,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (ws.root / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    argv = printed(err, "finish it with: ")
    assert argv[-4:] == ["--min-pass-rate", "0.5", "--concurrency", "1"], argv
    reason = json.loads(
        rook(elsewhere, "runs", "show", "latest", *flags(ws), "--json").stdout
    )["scenarios"][0]["reason"]
    assert "--min-pass-rate 0.5 --concurrency 1" in reason, reason
    (ws.root / "hold").unlink()
    again = rook(elsewhere, *argv)
    assert again.returncode == 0, again.stdout + again.stderr  # 1 of 2 passed: the gate holds
    assert "gate --min-pass-rate 0.5: every scenario reached it" in again.stdout, again.stdout


def test_no_project_or_agent_names_a_rook_init_that_makes_it_there(tmp_path):
    """'no agent in DIR; create one with: rook init --project P --agent A', said to
    rook run -w DIR from another folder, made the agent there, not in DIR."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "my ws"
    (ws / ".testmuai/rook/projects/p/agents").mkdir(parents=True)
    r = rook(elsewhere, "run", "-w", str(ws))
    assert r.returncode == 2 and "no agent in" in r.stderr, r.stderr
    argv = printed(r.stderr, "create one with: ")
    assert argv == ["init", "-w", str(ws), "--project", "p", "--agent", "A"], argv
    made = rook(elsewhere, *argv[:-1], "a", "--example")
    assert made.returncode == 0, made.stdout + made.stderr
    assert rook(elsewhere, "run", "-w", str(ws)).returncode == 0
    assert not (elsewhere / ".testmuai").exists()


def test_a_damaged_reports_way_out_keeps_the_runs_gate(place):
    """A damaged report.json's way out, 'rook run --run ID -w ... writes it again',
    left out the --min-pass-rate the run was given: run as printed, it wrote the
    report again without the gate, and one failed repeat of two exited 1 where the
    run (gate 0.5) had exited 0."""
    ws, elsewhere = place
    ws.script("agent.sh", FLAKY)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    given = ["--repeat", "2", "--min-pass-rate", "0.5", "-j", "2"]
    assert rook(elsewhere, "run", *flags(ws), *given).returncode == 0
    (run_dir,) = ws.runs_dir.iterdir()
    (run_dir / "report.json").write_text('{"broken', encoding="utf-8")
    shown = rook(elsewhere, "runs", "show", "latest", *flags(ws))
    assert shown.returncode == 2, shown.stderr
    found = re.search(r"(rook run --run .*?) writes it again", shown.stderr)
    assert found, shown.stderr
    argv = shlex.split(found.group(1))
    assert argv[-4:] == ["--min-pass-rate", "0.5", "--concurrency", "2"], argv
    again = rook(elsewhere, *argv[1:])
    assert again.returncode == 0, again.stdout + again.stderr  # 1 of 2 passed: the gate holds
    assert "gate --min-pass-rate 0.5: every scenario reached it" in again.stdout, again.stdout


def test_a_merged_runs_unfinished_shard_is_finished_with_its_gate(place):
    """rook merge (and rook runs show) of a run whose shard left scenario runs
    pending named 'finish each with: rook run --run ID --shard I/N ... -w ...'
    without the --min-pass-rate and --concurrency that shard was given: run as
    printed, the shard ran ungated and exited 1 where it passes the gate (0)."""
    ws, elsewhere = place
    ws.script("agent.sh", FLAKY)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    given = ["--repeat", "2", "--min-pass-rate", "0.5", "-j", "1"]
    split = ["--phases", "prepare,open,execute,close"]
    r = rook(elsewhere, "run", *flags(ws), "--shard", "1/1", "--run-name", "ci", *given, *split)
    assert r.returncode == 0, r.stdout + r.stderr
    merged = rook(elsewhere, "merge", "--run", "ci", *flags(ws), "--min-pass-rate", "0.5")
    assert merged.returncode == 1, merged.stdout + merged.stderr  # still pending
    argv = printed(merged.stderr, "finish each with: ", ", then merge again")
    assert argv[-4:] == ["--min-pass-rate", "0.5", "--concurrency", "1"], argv
    shown = rook(elsewhere, "runs", "show", "ci", *flags(ws))
    assert printed(shown.stderr, "finish each with: ", ", then merge again") == argv
    again = rook(elsewhere, *argv)
    assert again.returncode == 0, again.stdout + again.stderr  # 1 of 2 passed: the gate holds
    assert "gate --min-pass-rate 0.5: every scenario reached it" in again.stdout, again.stdout


@pytest.mark.parametrize("shard", [[], ["--shard", "1/1", "--run-name", "ci"]])
def test_doctors_command_for_a_killed_run_keeps_its_gate(place, shard):
    """rook doctor's fix for a run SIGKILLed with hooks still running, 'rook run --run
    ID -w ... kills them and finishes the run', left out the --min-pass-rate and
    --concurrency the run was given: run as printed, the finished run had no gate,
    and one failed repeat of two exited 1 where the gate (0.5) passes it (0). For a
    shard it left out --shard I/N too: refused, 'this run is split into 1 shard and
    not merged yet' (exit 2)."""
    import os
    import signal
    import time

    ws, elsewhere = place
    ws.script("agent.sh", FLAKY)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    (ws.root / "hold").touch()
    argv = [sys.executable, "-m", "rook_core", "run", *flags(ws), "--repeat", "2"]
    proc = subprocess.Popen(
        [*argv, "--min-pass-rate", "0.5", "-j", "1", *shard],
        cwd=elsewhere,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (ws.root / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    (ws.root / "hold").unlink()  # what the printed command runs again passes
    doctor = rook(elsewhere, "doctor", *flags(ws))
    argv = printed(doctor.stdout, "fix: ", " kills them and finishes the run")
    assert argv[-4:] == ["--min-pass-rate", "0.5", "--concurrency", "1"], doctor.stdout
    assert ("--shard" in argv) == bool(shard), argv
    again = rook(elsewhere, *argv)
    assert again.returncode == 0, again.stdout + again.stderr  # 1 of 2 passed: the gate holds
    assert "gate --min-pass-rate 0.5: every scenario reached it" in again.stdout, again.stdout


def test_a_refused_phases_selection_names_a_command_that_keeps_its_gate(place):
    """rook run --run ID --phases collect,judge --min-pass-rate 0.5 -j 2 on a run whose
    execute has not run is refused, naming 'Finish it with rook run --run ID --phases
    execute,...,judge -w ...' (and a new run's --phases collect,judge 'rook run --run
    ID --phases collect,judge -w ...'), without the gate and concurrency that command
    was given: run as printed, the run finished ungated, exit 1 where the gate passes
    it (0)."""
    ws, elsewhere = place
    ws.script("agent.sh", FLAKY)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    given = ["--min-pass-rate", "0.5", "-j", "2"]
    split = rook(elsewhere, "run", *flags(ws), "--repeat", "2", "--phases", "prepare,open")
    assert split.returncode == 0, split.stdout + split.stderr
    later = ["--phases", "collect,judge", *given]
    refused = rook(elsewhere, "run", *flags(ws), *later)  # no --run: a new run
    assert refused.returncode == 2, refused.stderr
    argv = printed(refused.stderr, "give its id: ")
    assert argv[-4:] == ["--min-pass-rate", "0.5", "--concurrency", "2"], argv
    refused = rook(elsewhere, "run", *flags(ws), "--run", "latest", *later)
    assert refused.returncode == 2, refused.stderr
    argv = printed(refused.stderr, "Finish it with ", ", or leave --phases out")
    assert argv[-4:] == ["--min-pass-rate", "0.5", "--concurrency", "2"], argv
    again = rook(elsewhere, *argv)
    assert again.returncode == 0, again.stdout + again.stderr  # 1 of 2 passed: the gate holds
    assert "gate --min-pass-rate 0.5: every scenario reached it" in again.stdout, again.stdout


@pytest.mark.parametrize("how", ["dotdot", "tilde"])
def test_a_stored_command_names_the_workspace_the_run_used(place, tmp_path, how):
    """The stored reason of a run cut off ('interrupted; rook run --run ID -w /abs/ws
    ... finishes it') made -w absolute by text: given -w link/.. (link: a symbolic
    link to a folder inside the workspace), it named link's parent folder, not the
    workspace the run used (the system follows the link before the ..); given
    ROOK_WORKSPACE_DIR='~/my ws' (no shell expands a variable's ~), it named
    './~/my ws'. Either way the stored command found no workspace (exit 2)."""
    import os
    import signal
    import time

    ws, elsewhere = place
    ws.script("agent.sh", FLAKY)
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    (ws.root / "inner").mkdir()
    (tmp_path / "link").symlink_to(ws.root / "inner")
    (ws.root / "hold").touch()
    env = {**os.environ, "HOME": str(tmp_path)}
    given = ["--project", ws.project, "--agent", ws.agent]
    if how == "dotdot":
        given += ["-w", "../link/.."]
    else:
        env["ROOK_WORKSPACE_DIR"] = "~/my ws"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", *given],
        env=env,
        cwd=elsewhere,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (ws.root / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    reason = json.loads(rook(elsewhere, "runs", "show", "latest", *flags(ws), "--json").stdout)[
        "scenarios"
    ][0]["reason"]
    argv = shlex.split(reason.partition("interrupted; ")[2].rpartition(" finishes it")[0])
    (ws.root / "hold").unlink()
    again = rook(tmp_path, *argv[1:])  # found the run and finished it: its one execute
    assert again.returncode == 1, reason + again.stdout + again.stderr  # FLAKY fails first
    assert "1 failed — pass rate 0.0%" in again.stdout, reason + again.stdout


def test_a_workspace_that_is_a_symbolic_link_loop_is_bad_input(tmp_path):
    """-w LOOP (a symbolic link to itself) was a traceback (RuntimeError: Symlink loop,
    from Path.resolve) for every command, rook run's stored -w first: exit 2 naming it."""
    import os

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    init = ["init", "--project", "p", "--agent", "a"]
    for command in (["run"], ["runs"], ["report", "latest"], ["profile", "list"], init):
        r = rook(tmp_path, *command, "-w", "loop")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert "--workspace loop: " in r.stderr, r.stderr  # a loop (3.13: not a directory)
    env = {**os.environ, "ROOK_WORKSPACE_DIR": "loop"}  # init's workspace is -w or cwd
    made = subprocess.run(
        [sys.executable, "-m", "rook_core", *init], cwd=tmp_path, env=env, capture_output=True
    )
    assert made.returncode == 0 and b"Traceback" not in made.stderr, made.stderr


def test_a_report_a_merge_into_a_folder_could_not_write_is_written_from_that_run(place):
    """rook merge --into DIR SHARDS (DIR outside the workspace) said of a report it
    could not write 'write again with: rook report ID -w ...': that renders the run
    of that id in the workspace (here the shards' own, not merged yet), never the
    merged run in DIR, which rook report cannot read. It names the merge again."""
    ws, elsewhere = place
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    r = rook(elsewhere, "run", *flags(ws), "--shard", "1/1", "--run-name", "ci")
    assert r.returncode == 0, r.stdout + r.stderr
    shards = str(ws.runs_dir / "ci")
    given = ["--into", "merged run", shards, "--report", "json:/dev/full"]
    m = rook(elsewhere, "merge", *flags(ws), *given)
    assert m.returncode == 1 and "No space left on device" in m.stderr, m.stderr
    argv = printed(m.stderr, "write again with: ")
    argv[argv.index("json:/dev/full")] = "json:r.json"
    again = rook(elsewhere, *argv)
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads((elsewhere / "r.json").read_text())
    assert report["run"]["dir"] == str(elsewhere / "merged run"), report["run"]
    assert report["summary"]["passed"] == 1, report["summary"]


def test_stored_report_paths_name_the_file_the_run_wrote(place, tmp_path):
    """The stored command that finishes a run keeps its --report flags with absolute
    paths, but made them so by text: `sub/../out/r.json` stayed with its `..`, and
    `link/../r.json` (link: a symbolic link to a folder elsewhere) named the file
    beside the link, not the one the system wrote (it follows the link before the
    `..`). Now they name the file the run wrote, as rook runs show says them, and
    the command works as printed from anywhere."""
    ws, elsewhere = place
    ws.profile({"id": "one", "hooks": {"execute": "scripts/agent.sh"}})
    (elsewhere / "sub").mkdir()
    (elsewhere / "out").mkdir()
    (tmp_path / "far" / "inner").mkdir(parents=True)
    (elsewhere / "link").symlink_to(tmp_path / "far" / "inner")
    first = rook(elsewhere, "run", *flags(ws), "--phases", "prepare,open", "--report",
                 "json:sub/../out/a.json", "--report", "markdown:link/../b.md")
    assert first.returncode == 0, first.stderr
    assert (elsewhere / "out" / "a.json").is_file() and (tmp_path / "far" / "b.md").is_file()
    shown = rook(tmp_path, "runs", "show", "latest", *flags(ws))
    argv = printed(shown.stderr, "finish it with: ")
    assert f"json:{elsewhere / 'out' / 'a.json'}" in argv, argv
    assert f"markdown:{tmp_path / 'far' / 'b.md'}" in argv, argv
    (elsewhere / "out" / "a.json").unlink()
    (tmp_path / "far" / "b.md").unlink()
    again = rook(tmp_path, *argv)
    assert again.returncode == 0, again.stderr
    assert (elsewhere / "out" / "a.json").is_file() and (tmp_path / "far" / "b.md").is_file()
