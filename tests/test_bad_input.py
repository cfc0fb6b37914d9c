"""Bad input (SPEC §12): a message naming the file, field or flag, exit 2,
nothing run, never a traceback — through the real ``rook`` command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOK = [sys.executable, "-m", "rook_core"]
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def rook(*args: str, cwd: Path, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    cmd = [*(prefix or []), *ROOK, *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)


def clean_error(proc: subprocess.CompletedProcess, *named: str, code: int = 2) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "rook: error:" in proc.stderr, proc.stderr
    for text in named:
        assert text in proc.stderr, (text, proc.stderr)


@pytest.fixture
def example(tmp_path):
    """``rook init --example``: a workspace whose ``rook run`` passes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    assert rook("init", "--project", "demo", "--agent", "sample", "--example", cwd=ws).returncode == 0
    yield ws, ws / ".testmuai/rook/projects/demo/agents/sample"
    for top, dirs, _files in os.walk(ws):  # undo a chmod 000, top down: a user cannot see
        for d in dirs:  # into an unreadable folder before it is readable again
            if not os.path.islink(os.path.join(top, d)):
                os.chmod(os.path.join(top, d), 0o755)


def _unprivileged(tmp_path: Path) -> list[str] | None:
    """The prefix that runs a command without the power to read any file: none for
    a user (who cannot read a file chmod 000 anyway), ``setpriv`` dropping
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH for root; None when neither works."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        for prefix in ([], NO_DAC):
            if prefix and shutil.which(prefix[0]) is None:
                continue
            if prefix and subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
                continue  # setpriv itself cannot run here
            if subprocess.run([*prefix, "cat", str(probe)], capture_output=True).returncode != 0:
                return prefix
    finally:
        probe.chmod(0o644)
    return None


UNREADABLE = [
    ("scenarios", "run"),
    ("profiles/active", "run"),
    ("profiles/active", "profile list"),
    ("profiles", "run"),
    ("profiles", "profile list"),
    (".", "run"),
    (".", "runs"),
    ("../..", "run"),  # the project's agents folder
    ("../../..", "profile list"),  # .testmuai/rook/projects
    ("../../..", "runs"),
    ("scripts", "run"),
    ("scripts/example_agent.py", "run"),  # not executable: Python would have to read it
]


@pytest.mark.parametrize(("target", "command"), UNREADABLE)
def test_an_unreadable_file_or_folder_is_named_without_a_traceback(
    example, tmp_path, target, command
):
    prefix = _unprivileged(tmp_path)
    if prefix is None:
        pytest.skip("cannot run rook without the power to read any file")
    ws, agent = example
    path = (agent / target).resolve()
    mode = path.stat().st_mode
    path.chmod(0)
    try:
        proc = rook(*command.split(), cwd=ws, prefix=prefix)
    finally:
        path.chmod(mode)  # a user could not look into runs/ below it otherwise
    clean_error(proc, str(path), "Permission denied")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize("command", ["run", "runs", "profile list"])
def test_an_agent_named_without_its_project_skips_a_project_rook_cannot_read(
    example, tmp_path, command
):
    """`rook run --agent sample` in a workspace of two projects, one of whose
    agents folders Rook may not read, said "several projects (demo, locked);
    choose one with --project", though the other project clearly has the agent:
    the unreadable folder is skipped with a note naming it. An agent no readable
    project has is an error naming the folder it could not read."""
    prefix = _unprivileged(tmp_path)
    if prefix is None:
        pytest.skip("cannot run rook without the power to read any file")
    ws, agent = example
    assert rook("init", "--project", "locked", "--agent", "other", cwd=ws).returncode == 0
    locked = ws / ".testmuai/rook/projects/locked/agents"
    locked.chmod(0)
    try:
        proc = rook(*command.split(), "--agent", "sample", cwd=ws, prefix=prefix)
        missing = rook(*command.split(), "--agent", "nobody", cwd=ws, prefix=prefix)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    note = (f"rook: note: {locked}: cannot read (Permission denied); agent 'sample' is "
            "project demo's: used\n")
    assert proc.stderr.count(note) == 1, proc.stderr
    clean_error(
        missing,
        "agent 'nobody' not found in any project (projects: demo, locked); "
        f"cannot read {locked} (Permission denied)",
    )


@pytest.mark.parametrize("args", [["run"], ["run", "--run-name", "ci-1", "--shard", "1/2"]])
def test_a_runs_folder_rook_may_not_write_in_is_a_workspace_error(example, tmp_path, args):
    """A runs folder Rook may not write in (a chmod, a read-only mount) made rook run
    exit 1, which says a scenario failed, though nothing ran; an unreadable agent
    folder and rook runs on an unreadable runs folder exit 2. It is exit 2 too."""
    prefix = _unprivileged(tmp_path)
    if prefix is None:
        pytest.skip("cannot run rook without the power to write any file")
    ws, agent = example
    runs = agent / "runs"
    runs.chmod(0o555)
    try:
        proc = rook(*args, cwd=ws, prefix=prefix)
    finally:
        runs.chmod(0o755)
    clean_error(proc, f"cannot create the run directory {runs}/", "Permission denied")
    assert not list(runs.iterdir())


@pytest.mark.parametrize("target", ["r.xml", "sub/r.xml"])
def test_a_report_in_a_folder_rook_may_not_write_in_is_refused_before_anything_runs(
    example, tmp_path, target
):
    """reports.md: a --report target is checked before anything runs; a folder that
    cannot be written, or made, is exit 2, naming it, with no run made (a missing
    folder that can be made is fine: it is made when the report is written)."""
    prefix = _unprivileged(tmp_path)
    if prefix is None:
        pytest.skip("cannot run rook without the power to write any file")
    ws, agent = example
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    try:
        proc = rook("run", "--report", f"junit:{folder / target}", cwd=ws, prefix=prefix)
    finally:
        folder.chmod(0o755)
    where = f"write in {folder}" if target == "r.xml" else f"create directory {folder / 'sub'}"
    clean_error(proc, f"--report junit:{folder / target}: cannot {where}: Permission denied")
    assert not list((agent / "runs").iterdir()) and not list(folder.iterdir())


def test_an_unreadable_scenarios_folder_is_a_problem_doctor_names(example, tmp_path):
    prefix = _unprivileged(tmp_path)
    if prefix is None:
        pytest.skip("cannot run rook without the power to read any file")
    ws, agent = example
    (agent / "scenarios").chmod(0)
    proc = rook("doctor", cwd=ws, prefix=prefix)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{agent / 'scenarios'}: cannot read: Permission denied" in proc.stdout


@pytest.mark.parametrize("command", ["run", "profile show", "profile list"])
def test_an_active_file_that_is_not_utf8_is_named(example, command):
    ws, agent = example
    (agent / "profiles/active").write_bytes(b"\xff\xfe")
    proc = rook(*command.split(), cwd=ws)
    clean_error(proc, f"{agent / 'profiles/active'}: not UTF-8 text")


@pytest.mark.parametrize("rel", [
    ".testmuai/rook/config.yaml",
    ".testmuai/rook/projects/demo/agents/sample/profiles/example.yaml",
    ".testmuai/rook/projects/demo/agents/sample/scenarios/greeting.yaml",
])
def test_a_yaml_file_of_tens_of_megabytes_is_refused_unread(example, rel):
    # 50 MB of YAML was parsed (a profile three times, a scenario twice) before
    # the message: 30 s and more; past 16 MiB it is refused by its size alone
    ws, agent = example
    path = ws / rel
    with path.open("ab") as f:  # a sparse file: its size is all that is read
        f.truncate(16 * 2**20 + 1)
    proc = rook("run", cwd=ws)
    clean_error(proc, f"{path}: 16.0 MiB, more than a YAML file Rook reads holds (at most 16 MiB)")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize(("rel", "at"), [
    ("scenarios/greeting.yaml", "at its start"),
    ("profiles/example.yaml", "at its start"),
    ("scenarios/joined.yaml", "at the start of line 7"),  # cat a.yaml b.yaml > joined.yaml
])
def test_a_second_byte_order_mark_is_named_not_told_as_expected_document_start(
        example, rel, at):
    # an editor adding a mark to a file that had one, or two files joined, each with
    # its own: YAML's "did not find expected <document start>" said nothing of it
    ws, agent = example
    path = agent / rel
    bom = "\ufeff".encode()
    if rel.endswith("joined.yaml"):  # greeting.yaml's six lines, then another file
        greeting = (agent / "scenarios/greeting.yaml").read_bytes()
        assert greeting.count(b"\n") == 6
        path.write_bytes(bom + greeting + bom + b"id: other\ngoal: hi\n")
    else:  # (libyaml reads a second mark before a comment, as the example's first line)
        path.write_bytes(bom + bom + b"id: example\nhooks: {execute: scripts/example_agent.py}\n")
    proc = rook("run", cwd=ws)
    clean_error(proc, f"{path}: a second byte order mark (U+FEFF, the bytes EF BB BF in UTF-8) "
                      f"{at}, which YAML cannot read: delete it")
    assert not list((agent / "runs").iterdir())


PURE_PYTHON_YAML = [  # rook with PyYAML's own loader, as where no libyaml is built
    sys.executable, "-c",
    "import runpy, sys, yaml; del yaml.CSafeLoader; sys.argv[0] = 'rook'; "
    "runpy.run_module('rook_core', run_name='__main__')",
]


@pytest.mark.parametrize("loader", ["libyaml", "python"])
@pytest.mark.parametrize(("text", "at"), [
    (b"\xef\xbb\xbf\xef\xbb\xbf# a comment\nid: greeting\ngoal: hi\n", "at its start"),
    (b"id: greeting\n\xef\xbb\xbf# a comment\ngoal: hi\n", "at the start of line 2"),
    (b"\xef\xbb\xbf\xef\xbb\xbfid: greeting\ngoal: hi\n", "at its start"),
    (b"id: greeting\n\xef\xbb\xbfgoal: hi\n", "at the start of line 2"),
])
def test_a_second_byte_order_mark_is_refused_by_either_yaml_loader(example, loader, text, at):
    # libyaml read a second mark before a comment, or before a key, without a word
    # (PyYAML's own loader refused it, or took it into the key: '\ufeffid')
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_bytes(text)
    proc = subprocess.run([*PURE_PYTHON_YAML, "run"] if loader == "python" else [*ROOK, "run"],
                          cwd=ws, capture_output=True, text=True, timeout=120)
    clean_error(proc, f"{path}: a second byte order mark (U+FEFF, the bytes EF BB BF in UTF-8) "
                      f"{at}, which YAML cannot read: delete it")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize("loader", ["libyaml", "python"])
@pytest.mark.parametrize(("text", "named"), [
    ("id: greeting\ngoal: hi\ufeff\n", " (line 2, column 9): goal: holds"),
    ("id: greeting\ngoal: |\n  hi\ufeff\n", " (line 3, column 5): goal: holds"),
    ("- id: greeting\n  goal: hi\n  criteria:\n    - contains: x\ufeffy\n",
     "[0] (line 4, column 18): criteria.0.contains: holds"),
    ("id: greeting\ngo\ufeffal: hi\n", " (line 2, column 3): a key holds"),
    ("id: greeting # a\ufeff\ngoal: hi\n", " (line 1, column 17): a byte order mark"),
])
def test_a_byte_order_mark_inside_a_value_is_refused_naming_the_field(
        example, loader, text, named):
    # an invisible U+FEFF pasted into a goal was sent to the agent, and looked for
    # in its answer, as part of the text; YAML allows one only in a quoted text
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([*PURE_PYTHON_YAML, "run"] if loader == "python" else [*ROOK, "run"],
                          cwd=ws, capture_output=True, text=True, timeout=120)
    clean_error(proc, f"{path}{named}", "a byte order mark (U+FEFF, an invisible character), "
                      "which YAML allows only in a quoted text: delete it")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize(("text", "named"), [
    ("id: greeting\ngoal: hi\ntags: !!set {smoke, nightly}\n",
     "(line 3, column 7): !!set: a YAML set, which is no JSON value"),
    ("id: greeting\ngoal: !!binary aGk=\n",
     "(line 2, column 7): !!binary: binary data, which is no JSON value"),
])
def test_a_yaml_set_or_binary_value_is_refused_as_no_json_value(example, text, named):
    # tags: !!set {...} ran, its tags (and the scenario's content hash) in another order
    # in every invocation; a !!binary goal was bytes
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(text)
    clean_error(rook("run", cwd=ws), f"{path} {named}")
    assert not list((agent / "runs").iterdir())


def test_a_byte_order_mark_in_a_quoted_value_is_the_character(example):
    # YAML allows it there (JSON may hold one): the agent gets it, byte for byte
    ws, agent = example
    (agent / "scenarios/greeting.yaml").write_text(
        'id: greeting\ngoal: "hi\ufeff"\ncriteria:\n  - not_contains: \'x\ufeff\'\n',
        encoding="utf-8")
    proc = rook("run", "--only", "greeting", "--json", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    scenario, = json.loads(proc.stdout)["scenarios"]
    assert scenario["status"] == "passed", scenario
    assert scenario["turns"][0]["input"] == "hi\ufeff", scenario["turns"]


@pytest.mark.parametrize("command", ["run", "profile show"])
def test_an_active_file_far_too_big_for_an_id_is_named_not_printed(example, command):
    # 60 MB of text was read whole and printed back in "names 'aaaa...', which is
    # no profile here": a minute and 60 MB on the terminal
    ws, agent = example
    (agent / "profiles/active").write_text("a" * 5_000_000)
    proc = rook(*command.split(), cwd=ws)
    clean_error(proc, f"{agent / 'profiles/active'}: more than 4,096 bytes, so no profile id")
    assert len(proc.stderr) < 1000, len(proc.stderr)


def test_an_active_file_written_with_a_byte_order_mark_names_its_profile(example):
    # PowerShell 5's Set-Content -Encoding utf8 writes a BOM (and CRLF): it was
    # "names '\ufeffexample', which is no profile here"
    ws, agent = example
    (agent / "profiles/second.yaml").write_text(
        (agent / "profiles/example.yaml").read_text().replace("id: example", "id: second")
    )
    (agent / "profiles/active").write_bytes("\ufeffsecond\r\n".encode())
    proc = rook("run", "--json", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["run"]["profile"]["id"] == "second"
    listed = json.loads(rook("profile", "list", "--json", cwd=ws).stdout)
    assert [p["id"] for p in listed if p["active"]] == ["second"]
    doctor = rook("doctor", cwd=ws)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def test_an_active_file_that_is_a_folder_is_named(example):
    ws, agent = example
    (agent / "profiles/active").unlink()
    (agent / "profiles/active").mkdir()
    (agent / "profiles/second.yaml").write_text(
        (agent / "profiles/example.yaml").read_text().replace("id: example", "id: second")
    )
    proc = rook("run", cwd=ws)
    clean_error(proc, f"{agent / 'profiles/active'}: not a file")


@pytest.mark.parametrize(("link", "said"), [
    ("nowhere.yaml", "a symbolic link to nowhere.yaml, which does not exist"),
    ("example.yaml", "cannot read: Too many levels of symbolic links"),  # to itself
])
@pytest.mark.parametrize("command", ["run", "profile show", "profile show example",
                                     "profile use example", "profile test"])
def test_a_profile_file_that_is_a_link_to_no_file_is_named(example, command, link, said):
    # found by test_fuzz_cli.py: it was "profiles/active: names 'example', which
    # is no profile here (profiles: example)", naming the file it listed as there
    ws, agent = example
    profile = agent / "profiles/example.yaml"
    profile.unlink()
    profile.symlink_to(link)
    proc = rook(*command.split(), cwd=ws)
    clean_error(proc, f"{profile}: {said}")
    assert not list((agent / "runs").iterdir())
    listed = rook("profile", "list", cwd=ws)
    assert listed.returncode == 0 and f"{profile}: {said}" in listed.stdout, listed.stdout


def test_a_scenario_file_that_is_a_broken_link_says_so(example):
    ws, agent = example
    scenario = agent / "scenarios/greeting.yaml"
    scenario.unlink()
    scenario.symlink_to("gone.yaml")
    clean_error(rook("run", cwd=ws), f"{scenario}: a symbolic link to gone.yaml, which does not exist")
    doctor = rook("doctor", cwd=ws)
    assert doctor.returncode == 1 and f"{scenario}: a symbolic link to gone.yaml" in doctor.stdout


@pytest.mark.parametrize(("how", "said"), [
    ("broken link", "a symbolic link to gone, which is no folder"),
    ("file", "a file, not a folder"),
])
@pytest.mark.parametrize("args", [[], ["--agent", "sample"], ["--project", "demo"]])
def test_an_agent_folder_that_is_no_folder_is_named(example, how, said, args):
    # found by test_fuzz_cli.py: it was "agent 'sample' not found in .../agents
    # (agents: none)" or "no agent in .../agents; create one with: rook init",
    # of a folder whose listing shows it
    ws, agent = example
    shutil.rmtree(agent)
    if how == "file":
        agent.write_text("")
    else:
        agent.symlink_to("gone")
    if how == "file" and "--agent" not in args:  # a stray file (notes.txt) names no agent
        said = "no agent in"
    else:
        said = f"{agent}: {said}; an agent is a folder"
    for command in (["run"], ["profile", "list"], ["runs"]):
        clean_error(rook(*command, *args, cwd=ws), said)
    if how == "broken link" and not args:  # a file there may be anything: only a link is listed
        doctor = rook("doctor", cwd=ws)
        assert doctor.returncode == 1, doctor.stdout + doctor.stderr
        assert said in doctor.stdout, doctor.stdout


@pytest.mark.parametrize("blocker", [".testmuai", ".testmuai/rook", ".testmuai/rook/projects"])
def test_init_names_the_file_where_a_folder_belongs(tmp_path, blocker):
    (tmp_path / blocker).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / blocker).write_text("")
    proc = rook("init", "--project", "demo", "--agent", "x", cwd=tmp_path)
    clean_error(proc, f"{tmp_path / blocker}: not a directory")


def test_init_refuses_a_workspace_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("")
    proc = rook("init", "--project", "demo", "--agent", "x", "-w", str(tmp_path / "file"), cwd=tmp_path)
    clean_error(proc, "--workspace", "not a directory")


@pytest.mark.parametrize("value", ["", "  "])
@pytest.mark.parametrize("command", [["run"], ["runs"], ["doctor"], ["profile", "list"], ["init", "--project", "demo", "--agent", "other"]])
def test_an_empty_workspace_flag_is_refused_not_taken_for_cwd(example, command, value):
    # `-w "$DIR"` with DIR unset: refused as every other empty flag is
    # (--run '', --only ''), never quietly the current directory.
    ws, agent = example
    runs = sorted(p.name for p in (agent / "runs").iterdir())
    proc = rook(*command, "-w", value, cwd=ws)
    clean_error(proc, "--workspace", "names no directory")
    assert sorted(p.name for p in (agent / "runs").iterdir()) == runs
    assert not (ws / ".testmuai/rook/projects/demo/agents/other").exists()


@pytest.mark.parametrize(
    ("flag", "said"),
    [("-w", "--workspace '': names no directory"), ("--project", "--project '': names nothing"),
     ("--agent", "--agent '': names nothing")],
)
def test_runs_show_refuses_an_empty_flag_as_runs_does(example, flag, said):
    # `rook runs show latest -w "$DIR"` with DIR unset showed the run of the
    # current directory's workspace (--project/--agent "": the default one)
    ws, _agent = example
    assert rook("run", cwd=ws).returncode == 0
    clean_error(rook("runs", flag, "", "show", "latest", cwd=ws), said)
    clean_error(rook("runs", "show", "latest", flag, "", cwd=ws), said)


def test_runs_show_takes_the_agent_before_or_after_show_the_later_winning(example):
    # history.md: -w, --project and --agent "may come before or after show
    # (after wins)"; no test held it
    ws, _agent = example
    assert rook("init", "--project", "demo", "--agent", "second", "--example",
                cwd=ws).returncode == 0
    for name, agent in (("in-sample", "sample"), ("in-second", "second")):
        assert rook("run", "--agent", agent, "--run-name", name, "-q", cwd=ws).returncode == 0
    for args, shown in ((["--agent", "second", "show", "latest"], "in-second"),
                        (["show", "latest", "--agent", "sample"], "in-sample"),
                        (["--agent", "sample", "show", "latest", "--agent", "second"], "in-second"),
                        (["--agent", "second", "show", "latest", "--agent", "sample"], "in-sample")):
        proc = rook("runs", *args, "--json", cwd=ws)
        assert proc.returncode == 0, (args, proc.stderr)
        assert json.loads(proc.stdout)["run"]["id"] == shown, args


@pytest.mark.parametrize("command", [["run"], ["runs"], ["profile", "list"]])
def test_a_bad_rook_workspace_dir_is_named_as_the_variable_not_the_flag(example, tmp_path, command):
    # the user set the variable (a CI job's, say), never typed --workspace: the
    # message names what they set; the flag, given, still wins and is named
    ws, agent = example
    runs = sorted(p.name for p in (agent / "runs").iterdir())
    for value, said in ((str(tmp_path / "nowhere"), "not a directory"), ("  ", "names no directory")):
        env = dict(os.environ, ROOK_WORKSPACE_DIR=value)
        proc = subprocess.run([*ROOK, *command], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
        clean_error(proc, f"ROOK_WORKSPACE_DIR {value if said != 'names no directory' else repr(value)}", said)
        assert "--workspace" not in proc.stderr, proc.stderr
    proc = subprocess.run([*ROOK, *command, "-w", str(tmp_path / "gone")], cwd=ws, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, ROOK_WORKSPACE_DIR=str(ws)))
    clean_error(proc, f"--workspace {tmp_path / 'gone'}: not a directory")
    assert sorted(p.name for p in (agent / "runs").iterdir()) == runs


def test_doctor_names_a_bad_rook_workspace_dir(example, tmp_path):
    ws, _agent = example
    env = dict(os.environ, ROOK_WORKSPACE_DIR=str(tmp_path / "nowhere"))
    # a wrong value, as for every other command (and as doctor --project nope): exit 2,
    # not "1 problem found" (exit 1)
    proc = subprocess.run([*ROOK, "doctor"], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    clean_error(proc, f"ROOK_WORKSPACE_DIR {tmp_path / 'nowhere'}: not a directory")
    assert "--workspace" not in proc.stderr and proc.stdout == "", proc


@pytest.mark.parametrize("command", [["doctor"], ["doctor", "--json"], ["run"], ["runs"],
                                     ["profile", "list"], ["profile", "test"]])
def test_a_workspace_flag_naming_no_directory_is_a_usage_error(example, tmp_path, command):
    # rook doctor -w /nonexistent said "1 problem found" (exit 1) where rook doctor
    # --project nope, and every other command given -w /nonexistent, exit 2
    ws, _ = example
    proc = rook(*command, "-w", str(tmp_path / "gone"), cwd=ws)
    clean_error(proc, f"--workspace {tmp_path / 'gone'}: not a directory")
    assert proc.stdout == "", proc.stdout


@pytest.mark.parametrize("value", ["", "  "])
@pytest.mark.parametrize("args, flag", [
    (["profile", "test", "--goal"], "--goal"),
    (["profile", "fix", "--goal"], "--goal"),
    (["profile", "fix", "--what"], "--what"),
    (["profile", "fix", "--author"], "--author"),
    (["profile", "add", "x", "--command", "./agent.sh", "--goal"], "--goal"),
    (["profile", "add", "x", "--notes", "n", "--author"], "--author"),
    (["profile", "add", "x", "--from", "api.json", "--operation"], "--operation"),
    (["profile", "add", "x", "--from", "api.json", "--base-url"], "--base-url"),
])
def test_an_empty_profile_flag_is_refused_not_taken_as_given(example, args, flag, value):
    # `--goal "$GOAL"` with GOAL unset sent the agent an empty goal, and
    # `--what ""` / `--author ""` were quietly taken as left out.
    ws, agent = example
    before = sorted(p.name for p in (agent / "profiles").iterdir())
    proc = rook(*args, value, cwd=ws)
    clean_error(proc, f"{flag} {value!r}: names nothing")
    assert sorted(p.name for p in (agent / "profiles").iterdir()) == before
    assert not (agent / "runs").exists() or not any((agent / "runs").iterdir())


@pytest.mark.parametrize("value", ["", "  "])
@pytest.mark.parametrize("flag", ["--project", "--agent"])
def test_doctor_refuses_an_empty_project_or_agent_not_checks_every_one(example, flag, value):
    # `rook doctor --agent "$AGENT"` with AGENT unset checked every agent and
    # exited 0: "no problems found" said of an agent nobody named
    ws, _agent = example
    proc = rook("doctor", flag, value, cwd=ws)
    clean_error(proc, f"{flag} {value!r}: names nothing")
    assert "no problems found" not in proc.stdout


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [(["run"], "--project", ""), (["run"], "--agent", "  "), (["runs"], "--agent", ""),
     (["runs", "show", "latest"], "--project", ""), (["report", "latest"], "--agent", ""),
     (["diff", "latest", "latest"], "--project", " "), (["merge", "--run", "latest"], "--agent", ""),
     (["profile", "list"], "--project", "")],
)
def test_an_empty_project_or_agent_is_named_as_the_flag_in_every_command(
    example, command, flag, value
):
    # `rook run --project "$P"` with P unset said "project '' not found in ... (projects:
    # demo)", naming neither the flag nor that it was empty; rook doctor said it right
    ws, _agent = example
    proc = rook(*command, flag, value, cwd=ws)
    clean_error(proc, f"rook: error: {flag} {value!r}: names nothing; give a value, or leave it out")
    assert "not found" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("value", ["", "  "])
def test_merge_into_an_empty_directory_name_is_refused_not_the_cwd(example, value):
    # `--into "$OUT"` with OUT unset merged the shards into the current
    # directory, strewing run.json, report.json and scenarios/ there.
    ws, agent = example
    out = ws / "out"
    out.mkdir()
    for i in (1, 2):
        assert rook("run", "--shard", f"{i}/2", "--run-name", "m", "-q", cwd=ws).returncode == 0
        shutil.copytree(agent / "runs/m", out / f"s{i}")
        shutil.rmtree(agent / "runs/m")
    proc = rook("merge", "s1", "s2", "--into", value, cwd=out)
    clean_error(proc, f"--into {value!r}: names nothing")
    assert sorted(p.name for p in out.iterdir()) == ["s1", "s2"]


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_a_report_path_of_blanks_is_refused(example, command):
    ws, _ = example
    if command[0] == "report":
        assert rook("run", cwd=ws).returncode == 0
    proc = rook(*command, "--report", "json:  ", cwd=ws)
    clean_error(proc, "--report json:  ", "use FORMAT:PATH")
    assert not (ws / "  ").exists()


@pytest.mark.parametrize("flag", ["--project", "--agent"])
@pytest.mark.parametrize("name", [".hidden", "_draft", "..", "-x"])
def test_init_tells_why_a_name_of_allowed_characters_is_refused(tmp_path, flag, name):
    # ".hidden" was told "use letters, digits, '.', '_' and '-'", which it is made of
    names = {"--project": "p", "--agent": "a"}
    names[flag] = name
    proc = rook("init", f"--project={names['--project']}", f"--agent={names['--agent']}", cwd=tmp_path)
    clean_error(proc, f"{flag} {name!r}", "starting with a letter or digit")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command", [["runs"], ["run"], ["profile", "list"], ["init", "--project", "p", "--agent", "a"]]
)
def test_a_workspace_name_too_long_is_refused_naming_the_flag(example, command):
    # -w of 300 characters: '/.../www...: File name too long', naming no flag
    # (and rook doctor stopped there, instead of reporting it as a problem)
    ws, _ = example
    proc = rook(*command, "-w", "w" * 300, cwd=ws)
    clean_error(proc, f"--workspace {'w' * 300}: File name too long")
    assert "w" * 300 not in os.listdir(ws)
    clean_error(rook("doctor", "-w", "w" * 300, cwd=ws), f"--workspace {'w' * 300}: File name too long")


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_a_report_path_too_long_is_refused_naming_the_flag(example, command):
    # --report json:www....json (300 characters): 'www....json: File name too long'
    # from the last-resort boundary, naming no flag, where every other target
    # problem is '--report json:PATH: ...'
    ws, agent = example
    if command[0] == "report":
        assert rook("run", cwd=ws).returncode == 0
    runs = sorted(os.listdir(agent / "runs")) if (agent / "runs").exists() else []
    target = "w" * 300 + ".json"
    proc = rook(*command, "--report", f"json:{target}", cwd=ws)
    clean_error(proc, f"--report json:{target}: ", "File name too long")
    assert (sorted(os.listdir(agent / "runs")) if (agent / "runs").exists() else []) == runs


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_a_report_that_would_replace_a_profile_scenario_or_script_is_refused(example, command):
    # --report junit:<a scenario file> (a path completed to the wrong file) replaced the
    # scenario with the JUnit XML: only a run's record was protected, not its definitions
    ws, agent = example
    if command[0] == "report":
        assert rook("run", cwd=ws).returncode == 0
    (ws / ".testmuai/rook/config.yaml").write_text("agent: sample\n")
    runs = sorted(os.listdir(agent / "runs")) if (agent / "runs").exists() else []
    targets = [
        sorted((agent / "scenarios").glob("*.yaml"))[0],
        sorted((agent / "profiles").glob("*.yaml"))[0],
        sorted(p for p in (agent / "scripts").rglob("*") if p.is_file())[0],
        ws / ".testmuai/rook/config.yaml",
    ]
    for target in targets:
        before = target.read_bytes()
        shown = os.path.relpath(target, ws)
        proc = rook(*command, "--report", f"junit:{shown}", cwd=ws)
        clean_error(proc, f"--report junit:{shown}: ", "which a report never replaces")
        assert target.read_bytes() == before
    assert (sorted(os.listdir(agent / "runs")) if (agent / "runs").exists() else []) == runs
    # a new file beside them, or a report the user wrote there before, is theirs to write
    out = agent / "report.xml"
    assert rook(*command, "--report", f"junit:{out}", cwd=ws).returncode == 0
    assert rook(*command, "--report", f"junit:{out}", cwd=ws).returncode == 0


@pytest.mark.parametrize("flag", ["--project", "--agent"])
def test_init_refuses_a_name_too_long_and_leaves_nothing(tmp_path, flag):
    names = {"--project": "p", "--agent": "a"}
    names[flag] = "n" * 300
    proc = rook("init", "--project", names["--project"], "--agent", names["--agent"], cwd=tmp_path)
    clean_error(proc, flag, "300 characters; at most 128")
    assert list(tmp_path.iterdir()) == []
    names[flag] = "n" * 128
    proc = rook("init", "--project", names["--project"], "--agent", names["--agent"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # in a workspace whose folders exist: was '.../projects/nnn...: File name too long'
    names[flag] = "n" * 300
    proc = rook("init", "--project", names["--project"], "--agent", names["--agent"], cwd=tmp_path)
    clean_error(proc, flag, "300 characters; at most 128")


def test_profile_add_refuses_a_name_too_long(example):
    ws, agent = example
    before = sorted(p.name for p in (agent / "profiles").iterdir())
    proc = rook("profile", "add", "x" * 300, "--command", "cat", "--no-test", cwd=ws)
    clean_error(proc, "profile name", "at most 128")
    assert sorted(p.name for p in (agent / "profiles").iterdir()) == before


# -- scenario ids -----------------------------------------------------------------


def test_a_scenario_id_too_long_is_refused_at_load_naming_file_and_id(example):
    ws, agent = example
    long_id = "s" * 129
    path = agent / "scenarios/long.yaml"
    path.write_text(f"id: {long_id}\ngoal: hi\ncriteria:\n  - contains: order\n")
    proc = rook("run", cwd=ws)
    clean_error(proc, str(path), "id: at most 128 characters")
    assert not list((agent / "runs").iterdir())


def test_the_longest_scenario_id_runs_with_many_repeats(example):
    ws, agent = example
    for p in (agent / "scenarios").iterdir():
        p.unlink()
    long_id = "s" * 128
    (agent / "scenarios/long.yaml").write_text(
        f"id: {long_id}\ngoal: hi\nrepeat: 12\ncriteria:\n  - contains: order\n"
    )
    proc = rook("run", "--json", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {s["status"] for s in report["scenarios"]} == {"passed"}
    assert len(report["scenarios"]) == 12


def test_a_public_scenario_named_by_a_long_file_name_is_refused(example):
    ws, agent = example
    path = agent / "scenarios" / ("p" * 200 + ".yaml")
    path.write_text("goal: hi\nexpectation:\n  acceptance_criteria:\n    - order number\n")
    proc = rook("run", cwd=ws)
    # 'id: at most 128 characters', though the file holds no id: line to shorten
    clean_error(proc, str(path), "id: missing, and the file name gives ppp",
                "(200 characters; an id has at most 128): add id:")


def test_a_public_scenario_whose_file_name_gives_no_id_is_refused(example):
    # such a file was given the id 'scenario', so a second one was refused as
    # "scenario id 'scenario' is already used by ...", an id the user never wrote
    ws, agent = example
    for name in ("日本", "中文"):
        (agent / "scenarios" / f"{name}.yaml").write_text(f"title: {name}\ngoal: hi\n")
    proc = rook("run", cwd=ws)
    clean_error(proc, "id: missing, and the file name", "add id:")
    assert "'scenario'" not in proc.stderr, proc.stderr
    assert not list((agent / "runs").iterdir())


# -- flags ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "-0.1", "1.5", "x"])
def test_min_pass_rate_must_be_a_number_from_0_to_1(example, value):
    ws, agent = example
    proc = rook("run", "--min-pass-rate", value, cwd=ws)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--min-pass-rate" in proc.stderr and "between 0 and 1" in proc.stderr
    assert not list((agent / "runs").iterdir())


LONG = "x" * 100_000


@pytest.mark.parametrize(("args", "said", "then"), [
    (["run", "--only", LONG], "--only: no scenario with id x", "(scenarios: greeting"),
    (["run", "--only", f"greeting,{LONG}"], "--only: no scenario with id x", "(scenarios: "),
    (["run", "--agent", LONG], "agent 'x", "(agents: sample)"),
    (["run", "--tag", LONG], "by --tag x", "tags: "),
    (["run", "--report", LONG], "--report x", ": use FORMAT:PATH"),
    (["run", f"--phases={LONG}"], "--phases: unknown phase x", "; phases are prepare"),
    (["run", "--shard", LONG], "--shard x", ": use I/N"),
    (["run", "--executor", LONG], "--executor x", ": unknown; installed: "),
    (["run", "--run", LONG], "--run x", ": no such run in "),
    (["run", "-j", LONG], "-j: 'x", "is not a valid integer"),
    (["report", LONG], "run x", ": no such run in "),
    (["profile", "add", "p2", "--from", LONG], "--from x", ": cannot read it"),
])
def test_a_long_flag_value_is_cut_in_its_message(example, args, said, then):
    # a 100 KB flag value was echoed whole in its error message: 100 KB on the terminal
    ws, _ = example
    proc = rook(*args, cwd=ws)
    clean_error(proc, said, "x ... 99", then)
    assert len(proc.stderr) < 2000 and "characters more" in proc.stderr, proc.stderr[-300:]


def test_a_long_flag_value_is_redacted_before_it_is_cut(example, monkeypatch):
    # a secret where the value is cut must be dropped whole, never leave its first half
    ws, agent = example
    profile = agent / "profiles/example.yaml"
    profile.write_text(profile.read_text().replace(
        "# env:", "env: [{variable: ORDER_API_TOKEN, purpose: token}]\n# env:", 1))
    secret = "tok-Sekr3t-Straddled-99"
    monkeypatch.setenv("ORDER_API_TOKEN", secret)
    for args in (["run", "--only"], ["run", "-j"], ["run", "--shard"]):
        for at in range(485, 505, 6):  # cut at 500: inside the secret, then after it
            proc = rook(*args, "y" * at + secret + LONG, cwd=ws)
            clean_error(proc)
            assert len(proc.stderr) < 2000 and "characters more" in proc.stderr, proc.stderr[-300:]
            assert "tok-" not in proc.stderr and "Sekr3t" not in proc.stderr, proc.stderr
            assert "[redacted:ORDER_API_TOKEN]" in proc.stderr or "y ... " in proc.stderr


def test_merge_min_pass_rate_refuses_nan(example):
    ws, _ = example
    proc = rook("merge", "--min-pass-rate", "nan", str(ws), cwd=ws)
    assert proc.returncode == 2 and "--min-pass-rate" in proc.stderr


# -- YAML -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["scenario", "profile", "config"])
def test_a_duplicate_yaml_key_is_refused_naming_file_key_and_line(example, kind):
    ws, agent = example
    if kind == "scenario":
        path = agent / "scenarios/greeting.yaml"
        path.write_text(path.read_text() + "goal: again\n")
        key = "goal"
    elif kind == "profile":
        path = agent / "profiles/example.yaml"
        path.write_text(path.read_text() + "name: again\n")
        key = "name"
    else:
        path = ws / ".testmuai/rook/config.yaml"
        path.write_text("project: demo\nagent: sample\nproject: demo\n")
        key = "project"
    line = len(path.read_text().splitlines())
    proc = rook("run", cwd=ws)
    clean_error(proc, f"{path} (line {line}, column", f"duplicate key {key!r}")
    assert not list((agent / "runs").iterdir())


LAUGHS = "".join(
    f"  - json: {{path: x, equals: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]}}\n"
    for n in range(1, 9)
)


@pytest.mark.parametrize(
    "kind, added, said",
    [
        # a value holding itself: ValueError: Circular reference detected, a traceback
        ("scenario", "  - json: {path: a, equals: &a [*a]}\n", "an alias inside its own anchor"),
        ("profile", "hook_env: &e {A: *e}\n", "an alias inside its own anchor"),
        # nine aliases of nine aliases ...: 9**9 values written into every record
        ("scenario", "  - json: {path: x, equals: &l0 [lol]}\n" + LAUGHS, "more than 1,000,000"),
    ],
)
def test_yaml_aliases_that_hold_themselves_or_explode_are_refused(example, kind, added, said):
    ws, agent = example
    path = agent / ("scenarios/greeting.yaml" if kind == "scenario" else "profiles/example.yaml")
    path.write_text(path.read_text() + added)
    proc = rook("run", cwd=ws)
    clean_error(proc, f"{path} (line ", said)
    assert not list((agent / "runs").iterdir())


def test_a_yaml_merge_key_may_still_be_overridden(example):
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(
        "id: greeting\ngoal: Hi there!\ncriteria:\n"
        "  - &c {contains: order number}\n  - <<: *c\n    contains: order\n"
    )
    proc = rook("run", cwd=ws)
    assert proc.returncode == 0, proc.stderr


def test_a_config_yaml_that_is_a_folder_is_refused(example):
    ws, agent = example
    (ws / ".testmuai/rook/config.yaml").mkdir()
    proc = rook("run", cwd=ws)
    clean_error(proc, f"{ws / '.testmuai/rook/config.yaml'}: not a file")


# -- hook output ------------------------------------------------------------------


@pytest.fixture
def hooked(rook_workspace):
    ws = rook_workspace
    ws.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] != "execute":
            sys.exit(0)
        goal = sys.stdin.read().strip()
        if goal == "bom":
            sys.stdout.write("\\ufeff" + json.dumps({"output": "ok", "usage": {"input": 3}}))
        else:
            sys.stdout.write('{"output": "ok", "usage": {"input": 1' + "0" * 4000 + '}}')
    """)
    ws.profile({"id": "p", "capabilities": {"usage": True}, "hooks": {"execute": "scripts/agent.py"}})
    return ws


def test_a_hook_json_object_after_a_byte_order_mark_is_read(hooked, rook_cli):
    hooked.scenario({"id": "bom", "goal": "bom", "criteria": [{"contains": "ok"}]})
    result = rook_cli("run", "--json")
    assert result.exception is None
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.statuses() == {"bom": "passed"}


def test_an_absurd_token_count_is_a_diagnosis_naming_the_field(hooked, rook_cli):
    hooked.scenario({"id": "big", "goal": "big", "criteria": [{"max_tokens": 100}]})
    result = rook_cli("run", "--json")
    assert result.exception is None
    assert result.exit_code == 1
    (entry,) = result.report["scenarios"]
    assert entry["status"] == "error"
    assert "usage.input is absurdly large" in json.dumps(entry)


def test_a_merge_of_a_mapping_that_merged_an_anchor_may_override_it(tmp_path):
    # &n (deeper) is flattened before m (shallower) merges it: its override is no duplicate
    import yaml

    from rook_core.yamlio import load_yaml

    path = tmp_path / "m.yaml"
    path.write_text("base: &base {a: 1}\nx:\n  n: &n\n    <<: *base\n    a: 2\nm:\n  <<: *n\n")
    # loaded as PyYAML's own safe loader loads it (6.0.3 and 6.0.4 differ on m's a)
    assert load_yaml(path) == yaml.load(path.read_text(), Loader=yaml.SafeLoader)


def test_output_that_cannot_be_written_after_the_run_exits_1_not_2(example):
    ws, _ = example
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*ROOK, "run", "--json"], cwd=ws, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "rook: error: cannot write standard output: No space left on device" in proc.stderr


@pytest.mark.parametrize("args", [["runs", "--json"], ["runs"], ["runs", "show", "RUN", "--json"],
                                  ["diff", "RUN", "RUN", "--json"], ["profile", "test", "--json"],
                                  ["plugins"]])
def test_a_command_whose_output_cannot_be_written_names_standard_output(example, args):
    # rook runs --json > /dev/full said "rook: error: No space left on device": no word
    # of where; the disk that is full is standard output's
    ws, agent = example
    assert rook("run", cwd=ws).returncode == 0
    run_id = next((agent / "runs").iterdir()).name
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*ROOK, *(run_id if a == "RUN" else a for a in args)], cwd=ws,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    said = "rook: error: cannot write standard output: No space left on device\n"
    assert proc.stderr.endswith(said) and proc.stderr.count("rook: error") == 1, proc.stderr
    assert proc.returncode == 2


@pytest.mark.parametrize("buffered", [True, False])
def test_diff_json_into_a_full_disk_is_never_a_silent_0(example, buffered):
    # rook diff A B --json > /dev/full exited 0 and said nothing: its document sat in
    # standard output's buffer until the exit, which dropped what could not be written
    ws, agent = example
    assert rook("run", cwd=ws).returncode == 0
    run_id = next((agent / "runs").iterdir()).name
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED" or not buffered}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*ROOK, "diff", run_id, run_id, "--json"], cwd=ws, env=env,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.stderr == "rook: error: cannot write standard output: No space left on device\n"
    assert proc.returncode == 2


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["-h"], ["-V"]])
def test_help_or_version_that_cannot_be_written_is_a_message_not_a_traceback(tmp_path, args):
    # rook --help > file on a full disk: Click's eager option wrote outside any command,
    # where only rook's own error boundary (a command's) turned an OSError into a message
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*ROOK, *args], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr == "rook: error: cannot write standard output: No space left on device\n"
    assert proc.returncode == 2


@pytest.mark.parametrize(
    ("where", "edit", "field"),
    [
        (
            "profiles/example.yaml",
            ("  execute: scripts/example_agent.py",
             '  execute: {script: scripts/example_agent.py, timeout_seconds: "30"}'),
            "hooks.execute.timeout_seconds: not a valid number: \"30\" is quoted, so YAML reads it as "
            "text; write 30 without the quotes\n",
        ),
        (
            "profiles/example.yaml",
            ("  execute: scripts/example_agent.py",
             '  execute: {script: scripts/example_agent.py, delay_seconds: "5"}'),
            "hooks.execute.delay_seconds: not a valid number: \"5\" is quoted, so YAML reads it as "
            "text; write 5 without the quotes\n",
        ),
        (
            "profiles/example.yaml",
            ("  execute: scripts/example_agent.py",
             '  execute: {http: {url: "http://127.0.0.1:9/", timeout_seconds: "30"}}'),
            "hooks.execute.http.timeout_seconds: not a valid number: \"30\" is quoted, so YAML reads it as "
            "text; write 30 without the quotes\n",
        ),
        (
            "scenarios/greeting.yaml",
            ("\ngoal:", '\ntimeout_seconds: "30"\ngoal:'),
            "  timeout_seconds: not a valid number: \"30\" is quoted, so YAML reads it as "
            "text; write 30 without the quotes\n",
        ),
        (  # unquoted, but YAML 1.1 reads an exponent without a dot and a sign as text
            "profiles/example.yaml",
            ("  execute: scripts/example_agent.py",
             "  execute: {script: scripts/example_agent.py, timeout_seconds: 1e3}"),
            "hooks.execute.timeout_seconds: not a valid number: YAML reads 1e3 as text; "
            "write 1000 or 1.0e+3",
        ),
        (
            "profiles/example.yaml",
            ("  execute: scripts/example_agent.py",
             "  execute: {script: scripts/example_agent.py, delay_seconds: 2.5E2}"),
            "hooks.execute.delay_seconds: not a valid number: YAML reads 2.5E2 as text; "
            "write 250 or 2.5E+2",
        ),
    ],
)  # fmt: skip
def test_a_number_written_as_a_string_is_refused_naming_the_field(example, where, edit, field):
    # "30" in quotes is text: refused as the strict integers (repeat, concurrency) refuse
    # it, saying that the quotes make it text (it said "not a valid number" alone)
    ws, agent = example
    path = agent / where
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    proc = rook("run", cwd=ws)
    clean_error(proc, str(path), field)
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize(("field", "value"), [("delay_seconds", "1e-5"), ("timeout_seconds", "2e20")])
def test_every_way_the_exponent_message_says_to_write_a_number_is_read(example, field, value):
    # 1e-5 was told "write 1e-05 or 1.0e-5": YAML reads 1e-05 as text too
    ws, agent = example
    path = agent / "profiles/example.yaml"
    text = path.read_text()
    line = "  execute: scripts/example_agent.py"

    def write(number: str) -> None:
        path.write_text(text.replace(line, f"  execute: {{script: {line[11:]}, {field}: {number}}}"))

    write(value)
    proc = rook("run", cwd=ws)
    clean_error(proc, f"hooks.execute.{field}: not a valid number: YAML reads {value} as text")
    advice = proc.stderr.split("; write ", 1)[1].splitlines()[0]
    for suggested in advice.split(" or "):
        write(suggested)
        proc = rook("run", "--only", "greeting", cwd=ws)
        assert proc.returncode == 0, (suggested, proc.stderr)


@pytest.mark.parametrize("command", ["run", "profile show example"])
@pytest.mark.parametrize("content", ["[1, 2]", '"calls"', "7", '{"calls": ', '{"calls": "yes"}'])
def test_an_observed_capabilities_file_that_is_not_a_mapping_is_ignored(
    example, command, content
):
    # Rook's own file, hand-edited or damaged: what was observed is forgotten, not a traceback
    ws, agent = example
    observed = agent / "profiles/example.observed.json"
    observed.write_text(content)
    proc = rook(*command.split(), cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    if command == "run":  # capabilities.md: the next run writes it again, what it observed
        assert json.loads(observed.read_text()) == {"multi_turn": True, "calls": True, "usage": True}


def test_an_observed_capability_is_only_one_rook_wrote_as_true(example):
    # "calls": "no" is not an observation of calls: the profile that does not
    # declare it cannot run a scenario that needs it
    ws, agent = example
    profile = agent / "profiles/example.yaml"
    profile.write_text(profile.read_text().replace("  calls: true", "  calls: false"))
    (agent / "profiles/example.observed.json").write_text(
        '{"calls": "no", "multi_turn": true, "usage": true, "teleport": true}'
    )
    proc = rook("run", "--json", "--only", "greeting", cwd=ws)
    assert "Traceback" not in proc.stderr, proc.stderr
    (entry,) = json.loads(proc.stdout)["scenarios"]
    assert entry["status"] == "not_runnable", entry
    assert "needs capability 'calls'" in entry["reason"]
    shown = rook("profile", "show", "example", "--json", cwd=ws)
    assert json.loads(shown.stdout)["capabilities"]["observed"] == {
        "multi_turn": True,
        "usage": True,
    }


@pytest.mark.parametrize("damage", ["[1]", '"x"', '{"id": "r1"}', '{"profile": {"id": 3}, "plan": []}'])
def test_resuming_a_run_whose_manifest_is_damaged_names_the_file(example, damage):
    ws, agent = example
    cut = rook("run", "--phases", "prepare,open,execute,close", "--run-name", "r1", cwd=ws)
    assert cut.returncode == 0, cut.stderr
    manifest = agent / "runs" / "r1" / "run.json"
    manifest.write_text(damage)
    done = rook("run", "--run", "r1", "--phases", "collect,judge", cwd=ws)
    clean_error(done, str(manifest), "not a run manifest")


@pytest.mark.parametrize("name", ["run.json", "run.shard-1-of-2.json"])
def test_resuming_a_run_whose_manifest_is_not_json_is_bad_input(example, name):
    # a run.json (or a shard's part) that is not JSON, cut short or damaged,
    # exited 1 ("a scenario failed") though nothing ran; one of another shape, 2
    ws, agent = example
    cut = rook("run", "--shard", "1/2", "--phases", "prepare,open,execute,close", "--run-name",
               "r1", cwd=ws)
    assert cut.returncode == 0, cut.stderr
    path = agent / "runs" / "r1" / name
    path.write_text('{"plan": [')
    done = rook("run", "--run", "r1", "--shard", "1/2", "--phases", "collect,judge", cwd=ws)
    clean_error(done, f"{path}: unreadable record")
    assert path.read_text() == '{"plan": ['


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_json_with_a_report_on_standard_output_is_refused(example, command, tmp_path):
    """--json prints exactly one document on standard output: a --report
    writing there too (/dev/stdout, or the file stdout goes to) is refused."""
    ws, _ = example
    assert rook("run", cwd=ws).returncode == 0
    clean_error(
        rook(*command, "--json", "--report", "junit:/dev/stdout", cwd=ws),
        "--report junit:/dev/stdout",
        "standard output",
    )
    out = tmp_path / "out.json"
    with out.open("w") as fh:
        done = subprocess.run(
            [*ROOK, *command, "--json", "--report", f"markdown:{out}"],
            cwd=ws, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    clean_error(done, f"--report markdown:{out}")
    assert out.read_text() == ""  # nothing ran, nothing printed
    assert rook(*command, "--json", "--report", f"junit:{tmp_path / 'r.xml'}", cwd=ws).returncode == 0


def test_a_json_criterion_exists_that_is_not_true_or_false_is_refused(example):
    # exists: "false" (text) read as true inverted the check the author wrote
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(path.read_text() + '  - json: {path: order.id, exists: "false"}\n')
    proc = rook("run", cwd=ws)
    clean_error(proc, str(path), "criteria.2.json.exists: must be true or false")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize("value", ["{equals: open}", "order.id"])
def test_a_json_criterion_without_path_says_a_check_is_optional(example, value):
    # the message said "path and one of equals, contains, exists", but
    # {path: P} alone is accepted (it checks that P exists)
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(path.read_text() + f"  - json: {value}\n")
    proc = rook("run", cwd=ws)
    clean_error(
        proc,
        str(path),
        "criteria.2.json: must be a mapping with path and at most one of equals, contains, "
        "exists (with none of them, the path must exist)",
    )
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize("value", ["80", "-0.5", "1.01"])
def test_a_rubric_min_score_outside_0_to_1_is_refused(example, value):
    # the judge is asked for a score from 0 to 1: min_score 80 could never pass
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(path.read_text() + f"  - rubric: {{text: polite, min_score: {value}}}\n")
    proc = rook("run", "--judge-profile", "example", cwd=ws)
    clean_error(proc, str(path), "criteria.2.rubric.min_score: must be a number from 0 to 1")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize(
    "args, named",
    [
        (["run", "--run", ""], "--run ''"),  # was: a run written into runs/ itself
        (["run", "--run-name", ""], "--run-name"),  # was: ignored, a new run made
        (["run", "--run-name", "  "], "--run-name"),
        # was: "pass the same --run ID or --run-name NAME", as though none were given
        (["run", "--shard", "1/2", "--run-name", ""], "--run-name: must not be empty"),
        (["runs", "show", ""], "run ''"),
        (["report", ""], "run ''"),
        (["diff", "", "latest"], "run ''"),
    ],
)
def test_an_empty_run_id_or_name_names_no_run(example, args, named):
    ws, agent = example
    assert rook("run", "-q", cwd=ws).returncode == 0
    before = sorted(p.name for p in (agent / "runs").iterdir())
    clean_error(rook(*args, cwd=ws), named)
    assert sorted(p.name for p in (agent / "runs").iterdir()) == before  # nothing run


@pytest.mark.parametrize(
    "how, named",
    [
        ("flag", "--repeat 100000000000"),  # was: killed by the kernel (24 GB planning it)
        ("file", "repeat: 100000000000"),
    ],
)
def test_a_plan_too_big_to_hold_is_refused_before_anything_runs(example, how, named):
    ws, agent = example
    args = ["run", "-q"]
    if how == "flag":
        args += ["--repeat", "100000000000"]
    else:
        path = agent / "scenarios/greeting.yaml"
        path.write_text(path.read_text() + "repeat: 100000000000\n")
    proc = rook(*args, cwd=ws)
    clean_error(proc, named, "at most 1,000,000")
    if how == "file":
        assert "greeting.yaml" in proc.stderr
    assert not any((agent / "runs").iterdir())  # nothing run


@pytest.mark.parametrize(
    "criterion, field",
    [
        ("max_seconds: .nan", "criteria.2.max_seconds: must be a number of seconds > 0"),
        ("max_seconds: .inf", "criteria.2.max_seconds: must be a number of seconds > 0"),
        ("max_cost: .nan", "criteria.2.max_cost: must be a number of US dollars >= 0"),
        (
            "command: {run: 'true', timeout_seconds: .nan}",
            "criteria.2.command.timeout_seconds: must be a number of seconds > 0",
        ),
    ],
)
def test_a_limit_of_nan_or_infinity_is_refused(example, criterion, field):
    # max_seconds: .nan was accepted and failed every run ("0.02 s (max nan s)"), a
    # command with timeout_seconds: .nan "did not finish within nan s"; max_cost: .nan
    # could never pass, max_seconds: .inf never fail
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(path.read_text() + f"  - {criterion}\n")
    clean_error(rook("run", cwd=ws), str(path), field)
    assert not list((agent / "runs").iterdir())


def test_a_plugin_switch_that_leaves_out_what_a_run_needs_is_named(example):
    """``ROOK_LOAD_PLUGINS`` is an allow-list: a name that misses the built-ins
    leaves no executor, transport or reporter. The message names the variable
    (never only a flag the user did not give) and an empty list reads ``none``."""
    ws, _agent = example
    env = {**os.environ, "ROOK_LOAD_PLUGINS": "my_csv"}
    for args in (["run"], ["run", "--report", "junit:out/r.xml"]):
        proc = subprocess.run(
            [*ROOK, *args], cwd=ws, env=env, capture_output=True, text=True, timeout=120
        )
        clean_error(proc, "ROOK_LOAD_PLUGINS=my_csv", "installed: none")
        assert not list((_agent / "runs").iterdir())
    env = {**os.environ, "ROOK_DISABLE_PLUGINS": "script"}
    proc = subprocess.run([*ROOK, "run"], cwd=ws, env=env, capture_output=True, text=True,
                          timeout=120)
    clean_error(proc, "ROOK_DISABLE_PLUGINS=script", "hooks.execute")


@pytest.mark.parametrize(
    "args",
    [
        [b"run", b"--run-name", b"caf\xe9"],  # was a traceback (the run id made from it)
        [b"profile", b"test", b"--goal", b"caf\xe9"],  # was "transport 'script' raised ..."
    ],
)
def test_a_command_line_argument_that_is_not_utf8_is_refused(example, args):
    ws, agent = example
    cmd = [os.fsencode(a) for a in ROOK] + args
    proc = subprocess.run(cmd, cwd=ws, capture_output=True, timeout=120)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert "rook: error: argument caf\\xe9 is not UTF-8 text" in err, err
    assert not list((agent / "runs").iterdir())


def test_a_workspace_whose_path_is_not_utf8_is_refused_before_anything_runs(tmp_path):
    # the run went ahead, its hooks ran, then writing the path into a JSON record
    # was a traceback
    made = tmp_path / "cafe"
    made.mkdir()
    assert rook("init", "--project", "demo", "--agent", "sample", "--example", cwd=made).returncode == 0
    ws = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9")))
    made.rename(ws)
    proc = subprocess.run([*ROOK, "run"], cwd=ws, capture_output=True, timeout=120)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert "caf\\xe9" in err and "is not UTF-8 text" in err, err
    assert not (ws / ".testmuai/rook/projects/demo/agents/sample/runs").exists() or not list(
        (ws / ".testmuai/rook/projects/demo/agents/sample/runs").iterdir()
    )


def test_a_profile_file_whose_name_is_not_utf8_is_refused_before_anything_runs(example):
    # its hooks ran, then writing its path into the report was a traceback
    ws, agent = example
    profiles = os.fsencode(agent / "profiles")
    os.rename(os.path.join(profiles, b"example.yaml"), os.path.join(profiles, b"exampl\xe9.yaml"))
    proc = subprocess.run([*ROOK, "run"], cwd=ws, capture_output=True, timeout=120)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert "exampl\\xe9.yaml: its name is not UTF-8 text" in err, err
    assert not list((agent / "runs").iterdir())


NO_USER = "~rook-no-such-user-zz"


@pytest.mark.parametrize(
    ("command", "edit", "named"),
    [
        (
            ["run"],
            ("execute: scripts/example_agent.py", f"execute: {NO_USER}/agent.py"),
            f"hook script '{NO_USER}/agent.py' not found",
        ),
        (
            ["doctor"],
            ("execute: scripts/example_agent.py", f"execute: {NO_USER}/agent.py"),
            f"{NO_USER}/agent.py",
        ),
        (
            ["run"],
            (
                "  execute: scripts/example_agent.py",
                '  execute: {http: {url: "http://127.0.0.1:9/", '
                f"verify_tls: {NO_USER}/ca.pem}}}}",
            ),
            f"{NO_USER}/ca.pem",
        ),
        (["run", "--workspace", f"{NO_USER}/ws"], None, f"--workspace {NO_USER}/ws"),
        (["profile", "add", "p2", "--from", f"{NO_USER}/api.yaml"], None, f"{NO_USER}/api.yaml"),
    ],
)  # fmt: skip
def test_a_path_under_the_home_of_no_such_user_is_named_never_a_traceback(
    example, command, edit, named
):
    # ~user of a user that does not exist: a shell leaves it as written, and so
    # does Rook: a path that is not there, named, exit 2 (Path.expanduser raises)
    ws, agent = example
    if edit is not None:
        path = agent / "profiles/example.yaml"
        text = path.read_text()
        assert edit[0] in text
        path.write_text(text.replace(edit[0], edit[1], 1))
    proc = rook(*command, cwd=ws)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (1, 2) if command == ["doctor"] else proc.returncode == 2, (
        proc.returncode,
        proc.stderr,
    )
    assert named in proc.stderr + proc.stdout, proc.stderr + proc.stdout
    assert not (agent / "runs").exists() or not list((agent / "runs").iterdir())


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_report_to_dev_stdout_or_stderr_that_is_a_pipe_is_written(example, stream):
    """A report to /dev/stdout (or /dev/stderr) is written into as it is; but when
    that stream was a pipe (`rook run --report junit:/dev/stdout | tee`, a CI
    log), its real path is /proc/PID/fd/pipe:[N], which no file has: the run was
    refused, exit 2, "cannot write in /proc/PID/fd"."""
    ws, _ = example
    proc = rook("run", "--report", f"junit:/dev/{stream}", cwd=ws)  # both streams are pipes
    assert proc.returncode == 0, proc.stderr
    assert "<?xml" in getattr(proc, stream) and "testsuite" in getattr(proc, stream)
    # the table: on standard output, but on standard error after a report to standard
    # output, as after junit:- (test_plugin_ecosystem.py)
    assert "3 passed" in (proc.stderr if stream == "stdout" else proc.stdout), proc.stdout


def test_a_report_to_a_named_pipe_nobody_reads_says_it_waits_for_a_reader(example, tmp_path):
    """A report into a named pipe is written into it as it is; with no program reading
    it, rook run waited after the table for ever, saying nothing (and a first SIGTERM
    did not end the wait). It says now that it waits for a reader, and the reader that
    comes gets the whole report; one reading from the start gets it whole too."""
    import threading

    ws, _ = example
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([*ROOK, "run", "--report", f"junit:{fifo}"], cwd=ws, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    said: list[str] = []
    waiting = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            said.append(line)
            if "waiting for a program to read the named pipe" in line:
                waiting.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert waiting.wait(60), "".join(said)
        assert f"--report junit:{fifo}" in "".join(said), said
        with open(fifo, encoding="utf-8") as fh:  # the reader comes: the report arrives whole
            got = fh.read()
        assert proc.wait(60) == 0, "".join(said)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    for stream in (proc.stdout, proc.stderr):
        assert stream is not None
        stream.close()
    assert got.startswith("<?xml") and got.rstrip().endswith("</testsuites>"), got
    # a reader there from the start: no word of waiting, the whole report
    box: list[str] = []
    early = threading.Thread(target=lambda: box.append(fifo.read_text(encoding="utf-8")), daemon=True)
    early.start()
    done = rook("run", "--report", f"junit:{fifo}", cwd=ws)
    early.join(30)
    assert done.returncode == 0 and "waiting for a program" not in done.stderr, done.stderr
    assert box and box[0].startswith("<?xml") and box[0].rstrip().endswith("</testsuites>"), box


@pytest.mark.parametrize("kind", ["scenarios/greeting.yaml", "profiles/example.yaml"])
def test_an_id_starting_with_a_dash_or_underscore_is_told_why_it_is_refused(example, kind):
    # "_draft" was refused as "must be a slug: lower-case letters, digits, - and _",
    # which it is made of: the rule that a slug starts with a letter or digit was unsaid
    ws, agent = example
    path = agent / kind
    text = path.read_text()
    old = next(line for line in text.splitlines() if line.startswith("id: "))
    path.write_text(text.replace(old, "id: _draft"))
    clean_error(rook("run", cwd=ws), str(path), "id: must be a slug", "starting with a letter or digit")


@pytest.mark.parametrize("kind", ["scenarios/greeting.yaml", "profiles/example.yaml"])
@pytest.mark.parametrize(("given", "made"), [("Staging", "staging"), ("Refund Status", "refund-status"), ("Café", "cafe")])
def test_an_id_that_is_no_slug_is_told_the_slug_it_would_be(example, kind, given, made):
    ws, agent = example
    path = agent / kind
    text = path.read_text()
    old = next(line for line in text.splitlines() if line.startswith("id: "))
    path.write_text(text.replace(old, f"id: {given}"))
    clean_error(rook("run", cwd=ws), str(path), "id: must be a slug", f"e.g. '{made}'")


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_a_report_path_ending_with_a_slash_is_refused(example, command, tmp_path):
    # --report json:r.json/ wrote the file r.json: Path() drops the slash that
    # names a folder
    ws, agent = example
    if command[0] == "report":
        assert rook("run", cwd=ws).returncode == 0
    target = tmp_path / "out"
    proc = rook(*command, "--report", f"junit:{target}/", cwd=ws)
    clean_error(proc, f"--report junit:{target}/", "a report is a file", f"junit:{target}/report.xml")
    assert not target.exists()


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_two_reports_into_one_file_are_refused(example, command, tmp_path):
    # --report json:out --report junit:out wrote both, one over the other: the
    # JSON report asked for was silently gone (also through a link, or ./out)
    ws, agent = example
    assert rook("run", cwd=ws).returncode == 0
    (tmp_path / "link.xml").symlink_to(tmp_path / "out")
    for second in (f"junit:{tmp_path / 'out'}", f"junit:{tmp_path / 'link.xml'}",
                   f"markdown:{tmp_path / '.' / 'out'}"):
        done = rook(*command, "--report", f"json:{tmp_path / 'out'}", "--report", second, cwd=ws)
        clean_error(done, f"--report {second}", f"json:{tmp_path / 'out'}", "same file")
        assert not (tmp_path / "out").exists()
    runs = len(list((agent / "runs").iterdir()))
    same = rook(*command, "--report", f"json:{tmp_path / 'out'}", "--report", f"json:{tmp_path / 'out'}", cwd=ws)
    assert same.returncode == 0, same.stderr  # the same report twice loses nothing
    assert json.loads((tmp_path / "out").read_text())["summary"]["passed"] == 3
    assert len(list((agent / "runs").iterdir())) == runs + (command == ["run"])


def test_a_scenario_path_that_is_no_regular_file_is_refused_not_waited_on(example):
    # a FIFO named *.yaml in scenarios/ (left by a tool, or a mistake) made every
    # rook run wait forever to read it, with no word of why
    ws, agent = example
    fifo = agent / "scenarios" / "feed.yaml"
    os.mkfifo(fifo)
    proc = subprocess.run([*ROOK, "run"], cwd=ws, capture_output=True, text=True, timeout=30)
    clean_error(proc, str(fifo), "not a regular file")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize(
    ("command", "code"),
    [(["run"], 2), (["profile", "show", "feed"], 2), (["profile", "list"], 0), (["doctor"], 1)],
)
def test_a_profile_path_that_is_no_regular_file_is_named_not_waited_on(example, command, code):
    # a FIFO named profiles/*.yaml made 'rook profile list', 'profile show' and
    # 'doctor' wait forever to read it, and 'profile show' of it said 'not found'
    ws, agent = example
    fifo = agent / "profiles" / "feed.yaml"
    os.mkfifo(fifo)
    if command == ["run"]:
        (agent / "profiles" / "active").write_text("feed\n")
    proc = subprocess.run([*ROOK, *command], cwd=ws, capture_output=True, text=True, timeout=30)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"{fifo}: not a regular file" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert not list((agent / "runs").iterdir())


def test_a_report_to_dev_stdout_redirected_to_a_file_keeps_the_table(example, tmp_path):
    """`rook run --report junit:/dev/stdout > out.txt`: /dev/stdout is then the
    regular file out.txt, which the report replaced (written beside it, then
    renamed over it): the results table Rook printed went to the file replaced,
    lost. A report into Rook's own standard output or error is written into that
    stream, after what Rook printed before it; after a report to standard output
    the table goes to standard error, as after junit:-, so out.txt holds the
    report alone."""
    ws, _ = example
    out = tmp_path / "out.txt"
    with out.open("w") as fh:
        proc = subprocess.run([*ROOK, "run", "--report", "junit:/dev/stdout"], cwd=ws,
                              stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "3 passed" in proc.stderr and "<testsuites" in text, text
    assert text.count("<?xml") == 1 and text.rstrip().endswith(("</testsuites>", text.splitlines()[-1]))
    with out.open("w") as fh:  # two reports into it: each in turn, not one file twice
        proc = subprocess.run([*ROOK, "run", "--report", "junit:/dev/stdout", "--report",
                               "markdown:/dev/stdout"], cwd=ws, stdout=fh, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "<testsuites" in text and "## " in text and "3 passed" in proc.stderr, text
    with out.open("w") as fh:
        proc = subprocess.run([*ROOK, "run", "--report", "markdown:/dev/stderr"], cwd=ws,
                              stdout=subprocess.PIPE, stderr=fh, text=True, timeout=120)
    assert proc.returncode == 0 and "3 passed" in proc.stdout, proc.stdout
    text = out.read_text()
    assert "## " in text and "PASS" in text, text  # the report and the progress lines


TAP = """
    from rook_core.hookspecs import hookimpl


    def write_tap(report, path):
        lines = [f"ok {n} - {s['id']}" for n, s in enumerate(report["scenarios"], start=1)]
        path.write_text("TAP version 13\\n" + "\\n".join(lines) + "\\n")


    @hookimpl
    def rook_register_reporters(register):
        register("tap", write_tap)
"""


def test_a_plugin_report_to_dev_stdout_redirected_to_a_file_keeps_what_is_there(
        example, tmp_path):
    """A reporter plugin opens the path it is given itself (`path.write_text`):
    given /dev/stdout redirected to a file, it truncated that file, losing what
    was there before (`>>`) and what Rook printed; the next report or the table
    then overwrote it in part. Written into Rook's stream, after what is there."""
    from rook_core.testing import make_distribution

    ws, _ = example
    site = make_distribution(tmp_path / "site", "rook-tap", {"tap": "rook_tap"},
                             {"rook_tap.py": TAP})
    env = {**os.environ, "PYTHONPATH": str(site), "ROOK_NO_CACHE": "1"}
    out = tmp_path / "out.txt"
    out.write_text("earlier CI log\n")
    with out.open("a") as fh:
        proc = subprocess.run([*ROOK, "run", "--report", "tap:/dev/stdout", "--report",
                               "junit:/dev/stdout"], cwd=ws, env=env, stdout=fh,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.startswith("earlier CI log\nTAP version 13\nok 1 - "), text
    assert "<testsuites" in text and "3 passed" in proc.stderr, text


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_a_report_path_starting_with_a_tilde_is_in_the_home_directory(example, command, tmp_path):
    # the shell leaves `json:~/x` as it is (the ~ is not at the start of a word):
    # the report went to a folder named "~" made in the current directory, a
    # folder `rm -rf ~` would then be one typo from
    ws, _ = example
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    assert rook("run", cwd=ws).returncode == 0
    proc = subprocess.run([*ROOK, *command, "--report", "json:~/out/r.json"], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((home / "out" / "r.json").read_text())["summary"]["passed"] == 3
    assert not (ws / "~").exists()


@pytest.mark.parametrize("typo, meant", [("rn", "run"), ("doctr", "doctor"), ("dif", "diff")])
def test_a_misspelt_command_is_told_the_one_it_looks_like(tmp_path, typo, meant):
    # the subcommands' groups said "Did you mean 'show'?"; the top level, whose
    # commands load lazily, said only "No such command 'rn'."
    proc = rook(typo, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"rook: error: {typo}: no such command; did you mean {meant}?\n" in proc.stderr, proc.stderr
    assert "did you mean" not in rook("xyzzy", cwd=tmp_path).stderr


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_a_report_to_dash_is_written_to_standard_output(example, command):
    """`--report junit:-` wrote a file named `-` in the current directory; a
    user of a CLI tool expects `-` to be standard output. It is now, and the
    report is all standard output holds (the table goes to standard error), so
    `rook run --report junit:- > rook.xml` gives a report that parses."""
    ws, agent = example
    assert rook("run", cwd=ws).returncode == 0
    for fmt in ("junit", "markdown", "json", "html"):
        proc = rook(*command, "--report", f"{fmt}:-", cwd=ws)
        assert proc.returncode == 0, proc.stderr
        assert not (ws / "-").exists()
        if fmt == "junit":
            import xml.etree.ElementTree as ET

            assert ET.fromstring(proc.stdout).find("testsuite").get("tests") == "3"
        elif fmt == "json":
            assert json.loads(proc.stdout)["summary"]["passed"] == 3
        elif fmt == "markdown":
            assert proc.stdout.startswith("## ✅ Rook"), proc.stdout
        else:
            assert proc.stdout.startswith("<!DOCTYPE html>") and proc.stdout.rstrip().endswith("</html>")
        if command == ["run"]:
            assert "3 passed — pass rate" in proc.stderr, proc.stderr
            assert "pass rate 100.0% of decided" not in proc.stdout, proc.stdout
    named = rook(*command, "--report", "json:./-", cwd=ws)  # a file named -: ./-
    assert named.returncode == 0, named.stderr
    assert json.loads((ws / "-").read_text())["summary"]["passed"] == 3


@pytest.mark.parametrize("command", [["run"], ["report", "latest"]])
def test_a_report_to_dash_with_json_or_another_report_to_stdout_is_refused(example, command):
    """Standard output holds one document: `--json` with `--report junit:-`, or
    two reports to it (`junit:- --report markdown:-`), are refused before
    anything runs."""
    ws, agent = example
    assert rook("run", cwd=ws).returncode == 0
    runs = sorted((agent / "runs").iterdir())
    clean_error(rook(*command, "--json", "--report", "junit:-", cwd=ws),
                "--report junit:-", "standard output", "--json")
    for other in ("markdown:-", "junit:-", "html:/dev/stdout"):
        clean_error(rook(*command, "--report", "junit:-", "--report", other, cwd=ws),
                    "--report junit:-", f"--report {other}", "standard output")
    assert sorted((agent / "runs").iterdir()) == runs and not (ws / "-").exists()


def test_a_delay_of_more_than_a_day_is_refused_naming_the_field(example):
    """delay_seconds: 1.0e+30 was accepted and the run waited forever before collect;
    a wait that long belongs in a split run (--phases), as the docs say."""
    ws, agent = example
    path = agent / "profiles/example.yaml"
    line = "  execute: scripts/example_agent.py"
    text = path.read_text()
    assert line in text
    path.write_text(text.replace(line, f"{line}\n  collect: {{script: scripts/example_agent.py, "
                                       "delay_seconds: 1.0e+30}"))
    proc = rook("run", cwd=ws)
    clean_error(proc, str(path), "hooks.collect.delay_seconds: must be between 0 and 86400",
                "--phases collect,judge")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize("label", ['""', '"   "'])
def test_an_empty_criterion_label_is_refused(example, label):
    # id: "" was taken as an empty label: reports showed the criterion with no name
    ws, agent = example
    path = agent / "scenarios/greeting.yaml"
    path.write_text(path.read_text() + f"  - {{contains: hi, id: {label}}}\n")
    clean_error(rook("run", cwd=ws), str(path), "criteria.2.id: must not be empty")
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize(
    "args, said",
    [
        (["merge"], "give the shards' run directories, or --run ID"),
        (["profile", "add", "--from", "x", "--command", "y"], "give one source, not --from and --command"),
        (["profile", "rename", "example", " "], "the new name is empty"),
    ],
)
def test_a_commands_own_error_is_said_as_every_other_rook_error(example, args, said):
    """Every other message follows ``rook: error:`` with what is at fault (a flag, a
    file, a field); these began 'rook: error: rook merge: ...', the command named
    twice over, the second time as if it were the thing at fault."""
    ws, _ = example
    r = rook(*args, cwd=ws)
    clean_error(r)
    assert r.stderr.startswith(f"rook: error: {said}"), r.stderr


@pytest.mark.parametrize(("command", "code"), [(["run"], 2), (["runs"], 2), (["doctor"], 2)])
def test_a_workspace_path_with_a_nul_is_named_not_a_traceback(example, monkeypatch, command, code):
    # No path holds a NUL: Path.resolve() raised ValueError ("embedded null
    # byte"; "lstat: embedded null character in path" on 3.13), a traceback
    # (in process only: an argv or a variable cannot carry a NUL). doctor
    # refuses it as the others do (exit 2), as it does -w ''
    from rook_core.testing import RookCli

    ws, agent = example
    monkeypatch.chdir(ws)
    runs = sorted(p.name for p in (agent / "runs").iterdir())
    r = RookCli(None)(*command, "-w", "a\x00b")  # in process, from the workspace
    assert r.exception is None, repr(r.exception)
    assert r.exit_code == code, r.stdout + r.stderr
    assert "--workspace 'a\\x00b': no path holds a NUL character" in r.stdout + r.stderr
    assert sorted(p.name for p in (agent / "runs").iterdir()) == runs


def test_a_report_path_with_a_nul_is_named_not_a_traceback(example, monkeypatch):
    # --report json:PATH with a NUL: os.stat raised ValueError, a traceback (in
    # process only, as above); refused before anything runs
    from rook_core.testing import RookCli

    ws, agent = example
    monkeypatch.chdir(ws)
    runs = sorted(p.name for p in (agent / "runs").iterdir())
    r = RookCli(None)("run", "--report", "json:a\x00b")
    assert r.exception is None, repr(r.exception)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "--report json:a\\x00b: no path holds a NUL character" in r.stderr
    assert sorted(p.name for p in (agent / "runs").iterdir()) == runs


@pytest.mark.parametrize(("args", "flag"), [
    (["run", "--concurrency", "x"], "--concurrency"),
    (["run", "--repeat", "2.5"], "--repeat"),
    (["runs", "--limit", "many"], "--limit"),
    (["profile", "fix", "--attempts", "x"], "--attempts"),
])
def test_a_count_that_is_no_whole_number_is_said_so(example, args, flag):
    # click said "'x' is not a valid integer range" (its type's name), and the
    # help showed "--concurrency INTEGER RANGE" where the docs write N
    ws, _ = example
    proc = rook(*args, cwd=ws)
    clean_error(proc, f"rook: error: {flag}: {args[-1]!r} is not a valid integer\n")
    assert "range" not in proc.stderr, proc.stderr
    usage = rook(*args[:-2], "--help", cwd=ws).stdout
    assert f"{args[-2]} N " in usage and "INTEGER RANGE" not in usage, usage


@pytest.mark.parametrize(("value", "said"), [
    ("", "--profile '': names no profile; give NAME, or leave the flag out to use the active one"),
    ("  ", "--profile '  ': names no profile"),
    ("nosuch", "--profile: profile 'nosuch' not found in "),
])
def test_rook_run_names_the_profile_flag_it_refuses(example, value, said):
    # rook run --profile nosuch said "profile 'nosuch' not found in ...", naming no
    # flag (rook runs --profile and --judge-profile name theirs), and --profile ""
    # (`--profile "$P"` with P unset) was looked for as a profile named ''
    ws, agent = example
    proc = rook("run", "--profile", value, cwd=ws)
    clean_error(proc, said)
    assert proc.stderr.startswith(f"rook: error: {said}"), proc.stderr
    assert not list((agent / "runs").iterdir())


@pytest.mark.parametrize(("args", "said"), [
    (["run", "--executor", ""], "--executor '': unknown; installed: "),
    (["run", "--shard", ""], "--shard '': use I/N"),
    (["run", "--shard", " "], "--shard ' ': use I/N"),
    (["run", "--report", ""], "--report '': use FORMAT:PATH"),
    (["merge", "--run", "latest", "--report", " "], "--report ' ': use FORMAT:PATH"),
])
def test_an_empty_flag_value_is_shown_quoted(example, args, said):
    # `--shard "$SHARD"` with SHARD unset said "--shard : use I/N ...": the value,
    # empty, showed as nothing at all
    ws, _ = example
    clean_error(rook(*args, cwd=ws), said)


def _every_command() -> list[list[str]]:
    """Every command and subcommand ``rook --help`` leads to, as typed."""
    import click

    from rook_core.cli import cli

    ctx = click.Context(cli, info_name="rook")
    found = []
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        found.append([name])
        if isinstance(command, click.Group):
            found += [[name, sub] for sub in command.list_commands(ctx)]
    return found


def usage_said(proc: subprocess.CompletedProcess, command: list[str], first: str) -> None:
    """A usage error in Rook's one form: its message first, naming what is at fault,
    then the command's usage line and where its help is; exit 2."""
    assert proc.returncode == 2, (command, proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert lines[0] == f"rook: error: {first}", (command, proc.stderr)
    assert lines[1].startswith(f"Usage: rook {' '.join(command)} ".replace("  ", " ")), (command, proc.stderr)
    assert lines[2:] == [f"Try '{' '.join(['rook', *command])} --help' for help."], (command, proc.stderr)
    assert "Error:" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_usage_error_names_what_was_typed_as_it_is_and_obeys_no_control(tmp_path):
    """A misspelt command said as Click quotes it ("a'b", with double quotes) was
    left in Click's words ('no such command "a'b"'), and one typed with an ESC
    reached the terminal raw (rook NAME) where every other error of Rook's shows
    a control character as its escape."""
    usage_said(rook("profile", "a'b", cwd=tmp_path), ["profile"], "a'b: no such command")
    usage_said(rook("runs", "a'b", cwd=tmp_path), ["runs"], "a'b: no such command")
    for args, command in (
        (["r\x1b[2Jun"], []),
        (["profile", "sh\x1b[2Jow"], ["profile"]),
        (["run", "--x\x1b[2J"], ["run"]),
        (["run", "x\x1b[2J"], ["run"]),
    ):
        proc = rook(*args, cwd=tmp_path)
        assert "\x1b" not in proc.stderr, (args, proc.stderr)
        assert "\\x1b[2J" in proc.stderr.splitlines()[0], (args, proc.stderr)
        usage_said(proc, command, proc.stderr.splitlines()[0].removeprefix("rook: error: "))


def test_every_command_says_a_usage_error_in_one_form(tmp_path):
    """Click's own usage errors printed 'Usage: ...', 'Try ...' and 'Error: No such
    option '--nosuch'.' (and 'Error: Option '--concurrency' requires an argument.'
    with no usage at all), while Rook's own say 'rook: error: --flag: ...'. Every
    command now says both kinds in Rook's form, the flag first, with the usage hint
    after it, exit 2."""
    commands = _every_command()
    assert ["run"] in commands and ["profile", "add"] in commands and ["runs", "show"] in commands
    for command in commands:
        usage_said(rook(*command, "--nosuch-flag", cwd=tmp_path), command, "--nosuch-flag: no such option")
    usage_said(rook("run", "--concurrency", cwd=tmp_path), ["run"], "--concurrency: needs a value")
    usage_said(rook("run", "-j", "x", cwd=tmp_path), ["run"], "-j: 'x' is not a valid integer")
    usage_said(rook("run", "--json=1", cwd=tmp_path), ["run"], "--json: does not take a value")
    usage_said(rook("runs", "show", cwd=tmp_path), ["runs", "show"], "ID: missing; rook runs show needs it")
    usage_said(rook("init", cwd=tmp_path), ["init"], "--project: missing; rook init needs it")
    usage_said(rook("rn", cwd=tmp_path), [], "rn: no such command; did you mean run?")
    usage_said(rook("profile", "shw", cwd=tmp_path), ["profile"], "shw: no such command; did you mean show?")
    usage_said(rook("runs", "xyzzy", cwd=tmp_path), ["runs"], "xyzzy: no such command")
    usage_said(rook("run", "extra", cwd=tmp_path), ["run"], "extra: unexpected extra argument; "
               "rook run takes no argument: select scenarios with --only extra")  # fmt: skip
    usage_said(rook("runs", "show", "a", "b", "c", cwd=tmp_path), ["runs", "show"],
               "b c: unexpected extra arguments")  # fmt: skip
    usage_said(rook("report", "--format", "x", cwd=tmp_path), ["report"],
               "--format: no such option; did you mean --report?")
    # a flag's beginning, or a typo of one, is told that flag alone, as a criterion's is
    usage_said(rook("run", "--conc", "3", cwd=tmp_path), ["run"],
               "--conc: no such option; did you mean --concurrency?")
    usage_said(rook("run", "--jsn", cwd=tmp_path), ["run"], "--jsn: no such option; did you mean --json?")
