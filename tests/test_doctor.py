"""``rook doctor``: every check finds its problem on real files, says how to fix it,
and the exit code is 1 exactly when a problem was found."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

# The built-ins a script-based workspace needs; pinning them keeps these tests about
# the workspace, whatever else is installed.
CORE_PLUGINS = "script,criteria,executor_local,reporters"


@pytest.fixture(autouse=True)
def core_plugins_only(monkeypatch):
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS)
    for var in ("ROOK_DISABLE_PLUGINS", "ROOK_TRACE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)


def doctor(rook_cli, ws, *args, env=None):
    r = rook_cli("doctor", "-w", str(ws.root), "--json", *args, env=env)
    assert r.exception is None, r.exception
    return r.exit_code, json.loads(r.stdout)["findings"]


def problems(findings):
    return [f for f in findings if f["status"] == "problem"]


def healthy(ws):
    ws.script(
        "agent.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo '{"output": "ok"}'
    """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})


def test_a_healthy_workspace_has_no_problem(rook_workspace, rook_cli):
    healthy(rook_workspace)
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 0 and problems(findings) == []
    subjects = {f["subject"] for f in findings}
    assert {
        "python",
        "plugins",
        "workspace",
        "proj/agent profile p",
        "proj/agent scenarios",
    } <= subjects
    python = next(f for f in findings if f["subject"] == "python")
    assert sys.executable in python["message"]
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    assert r.exit_code == 0 and "no problems found" in r.stdout


def test_node_is_reported_as_an_interpreter(rook_workspace, rook_cli):
    healthy(rook_workspace)
    _, findings = doctor(rook_cli, rook_workspace)
    node = next(f for f in findings if f["subject"] == "node")
    if shutil.which("node"):
        assert node["status"] == "ok" and "runs .mjs .js .cjs hooks" in node["message"]
    else:
        assert node["status"] == "note" and "not on PATH" in node["message"]


def test_a_missing_script_names_both_paths_tried(rook_workspace, rook_cli):
    healthy(rook_workspace)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/nope.sh"}})
    code, findings = doctor(rook_cli, rook_workspace)
    (p,) = problems(findings)
    assert code == 1 and p["subject"] == "proj/agent profile p hooks.execute"
    assert "'scripts/nope.sh' not found" in p["message"]
    assert str(rook_workspace.root / "scripts/nope.sh") in p["message"]
    assert str(rook_workspace.agent_dir / "scripts/nope.sh") in p["message"]
    assert p["fix"].startswith("create the script, or correct the path in")


@pytest.mark.parametrize("written, said", [
    ("scripts", "is a directory"),
    ("node scripts/agent.sh", "it looks like a command line: a script entry names one file"),
])
def test_a_hook_path_naming_a_directory_or_a_command_line_says_so(
    rook_workspace, rook_cli, written, said
):
    """hooks.md: a hook path naming a directory says so, and one that looks like a
    command line says a script entry names one file, as rook run does; the doctor
    said 'not found (tried ...)' of a folder that is there, and of node ... offered
    another script."""
    healthy(rook_workspace)
    rook_workspace.profile({"id": "p", "hooks": {"execute": written}})
    run = rook_cli("run")
    assert run.exit_code == 2 and said in run.stderr, run.stderr
    code, findings = doctor(rook_cli, rook_workspace)
    (p,) = problems(findings)
    assert code == 1 and said in p["message"] and p["message"] in run.stderr, p  # run's words


def test_a_hook_path_naming_a_named_pipe_says_so(rook_workspace, rook_cli):
    """hooks.md: a pipe where the hook script should be is refused as what it is; rook
    run said so, but the doctor said 'not found (tried ...)' and to create the script."""
    healthy(rook_workspace)
    os.mkfifo(rook_workspace.agent_dir / "scripts" / "pipe.py")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/pipe.py"}})
    run = rook_cli("run")
    assert run.exit_code == 2 and "is not a regular file" in run.stderr, run.stderr
    code, findings = doctor(rook_cli, rook_workspace)
    (p,) = problems(findings)
    assert code == 1 and "not found" not in p["message"], p
    assert "is not a regular file" in p["message"] and p["message"] in run.stderr, p


def test_a_program_for_another_machine_is_a_problem(rook_workspace, rook_cli):
    """An ELF program for another machine passed rook doctor (any ELF did), and
    then failed every scenario with 'Exec format error'."""
    from test_core_config import foreign_program

    from rook_core.execformat import cannot_start, handlers_visible

    ws = rook_workspace
    healthy(ws)
    body, name = foreign_program()
    path = ws.script("prog", "x")
    path.write_bytes(body)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/prog"}})
    said = f"it is a program for {name}, and this machine is "
    if handlers_visible():
        if cannot_start(path, body) is None:
            pytest.skip("a binfmt_misc handler on this machine starts it")
        code, findings = doctor(rook_cli, ws)
        (p,) = [f for f in problems(findings) if f["subject"].endswith("execute")]
        assert code == 1 and said in p["message"], p
        return
    # no binfmt_misc to see (a container, whose host may start it): a note, not a problem
    code, findings = doctor(rook_cli, ws)
    assert not [f for f in problems(findings) if f["subject"].endswith("execute")]
    (n,) = [f for f in findings if f["subject"].endswith("execute") and f["status"] == "note"]
    assert "may not start" in n["message"] and said in n["message"], n
    assert "binfmt_misc is not mounted" in n["message"], n


def test_run_bits_and_shebang_lines(rook_workspace, rook_cli, tmp_path):
    ws = rook_workspace
    healthy(ws)
    ws.script("plain.rb", "puts 1\n", executable=False)
    ws.script("nobang.sh", "echo hi\n", executable=True)
    ws.script("ghost.sh", "#!/usr/bin/env no-such-interpreter-xyz\necho\n")
    crlf = ws.script("crlf.sh", "x")
    crlf.write_bytes(b"#!/bin/bash\r\necho '{}'\r\n")
    ws.profile(
        {
            "id": "p",
            "hooks": {
                "prepare": "scripts/plain.rb",
                "open": "scripts/nobang.sh",
                "execute": "scripts/ghost.sh",
                "close": "scripts/crlf.sh",
            },
        }
    )
    code, findings = doctor(rook_cli, ws)
    by_phase = {p["subject"].rsplit(".", 1)[-1]: p for p in problems(findings)}
    assert code == 1 and set(by_phase) == {"prepare", "open", "execute", "close"}
    assert "not executable and Rook does not know its extension" in by_phase["prepare"]["message"]
    assert by_phase["prepare"]["fix"].startswith("chmod +x ")
    assert "has no #! line" in by_phase["open"]["message"]
    assert "add #!/usr/bin/env bash as its first line" in by_phase["open"]["fix"]
    assert "needs no-such-interpreter-xyz, which is not installed" in by_phase["execute"]["message"]
    assert "Windows line endings" in by_phase["close"]["message"]
    assert "dos2unix" in by_phase["close"]["fix"]


def test_an_interpreter_missing_from_path(rook_workspace, rook_cli, tmp_path):
    """A .mjs hook needs node: with node off PATH, the hook is a problem with the fix."""
    ws = rook_workspace
    healthy(ws)
    ws.script("agent.mjs", "console.log('{}')\n", executable=False)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.mjs"}})
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(shutil.which("bash"), bare / "bash")
    code, findings = doctor(rook_cli, ws, env={"PATH": str(bare)})
    (p,) = problems(findings)
    assert code == 1 and "agent.mjs runs with node, which is not on PATH" in p["message"]
    assert p["fix"].startswith("install Node.js")
    node = next(f for f in findings if f["subject"] == "node")
    assert node["status"] == "note"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node")
def test_an_interpreter_off_the_hooks_path_only_is_not_to_install(rook_workspace, rook_cli, tmp_path):
    """node on Rook's PATH, not on the hook_env PATH: the fix said to install Node.js."""
    ws = rook_workspace
    healthy(ws)
    ws.script("agent.mjs", "console.log('{}')\n", executable=False)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.mjs"},
                "hook_env": {"PATH": str(tmp_path)}})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and "agent.mjs runs with node, which is not on the PATH the hooks get" in (
        p["message"]), p
    assert not p["fix"].startswith("install") and os.path.dirname(shutil.which("node")) in (
        p["fix"]), p
    ws.script("agent", "#!/usr/bin/env node\nconsole.log('{}')\n")  # its #! line: the same
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent"},
                "hook_env": {"PATH": str(tmp_path)}})
    code, findings = doctor(rook_cli, ws)
    assert code == 1 and any("agent's #! line needs node, which is not on the PATH the hooks get"
                             in p["message"] for p in problems(findings)), problems(findings)
    assert not any(p["fix"].startswith("install") for p in problems(findings)), problems(findings)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node")
def test_an_interpreter_on_the_hooks_path_only_is_no_problem(rook_workspace, rook_cli, tmp_path):
    """A .mjs hook runs with the node on the PATH its hooks get (hook_env), as rook
    run looks for it: the doctor looked on its own PATH, a problem rook run has not."""
    ws = rook_workspace
    healthy(ws)
    ws.script("agent.mjs", "if (process.argv[2] === 'execute') console.log('{\"output\": \"ok\"}');\n",
              executable=False)
    bare, tools = tmp_path / "bin", tmp_path / "tools"
    for d in (bare, tools):
        d.mkdir()
        os.symlink(shutil.which("bash"), d / "bash")
    os.symlink(shutil.which("node"), tools / "node")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.mjs"},
                "hook_env": {"PATH": str(tools)}})
    code, findings = doctor(rook_cli, ws, env={"PATH": str(bare)})
    assert (code, problems(findings)) == (0, []), problems(findings)
    r = rook_cli("run", "--json", env={"PATH": str(bare)})
    assert r.statuses() == {"s": "passed"}, r.stderr


def test_an_env_shebang_is_read_as_rook_run_reads_it(rook_workspace, rook_cli, tmp_path):
    """hooks.md: for ``#!/usr/bin/env NAME`` (with or without -S, options and
    VAR=value assignments) NAME must be on the PATH the hook will get. rook doctor
    took the word after env or -S (``LC_ALL=C``, ``-u``) for the interpreter and
    looked on its own PATH: a problem for hooks rook run runs, and the wrong name
    for the one it refuses."""
    ws = rook_workspace
    healthy(ws)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "mysh").write_text('#!/bin/sh\nexec bash "$@"\n')
    (tools / "mysh").chmod(0o755)
    body = "[ \"$1\" = execute ] && echo '{\"output\": \"ok\"}'\nexit 0\n"
    ws.script("assigns.sh", "#!/usr/bin/env -S LC_ALL=C bash\n" + body)
    ws.script("unsets.sh", "#!/usr/bin/env -S -u NOTHING bash\n" + body)
    ws.script("own_path.sh", "#!/usr/bin/env mysh\n" + body)
    ws.script("missing.sh", "#!/usr/bin/env -S LC_ALL=C no-such-interpreter-xyz\n" + body)
    hooks = {"prepare": "scripts/assigns.sh", "open": "scripts/unsets.sh",
             "execute": "scripts/own_path.sh", "close": "scripts/missing.sh"}
    hook_env = {"PATH": f"{tools}:{os.environ['PATH']}"}  # mysh is on the hooks' PATH only
    ws.profile({"id": "p", "hooks": hooks, "hook_env": hook_env})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and p["subject"].endswith("hooks.close"), problems(findings)
    assert "no-such-interpreter-xyz" in p["message"] and "LC_ALL" not in p["message"], p
    del hooks["close"]
    ws.profile({"id": "p", "hooks": hooks, "hook_env": hook_env})
    code, findings = doctor(rook_cli, ws)
    assert code == 0 and problems(findings) == []
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr  # rook run runs all three


def test_an_env_line_linux_passes_as_one_word_is_a_problem(rook_workspace, rook_cli):
    """'#!/usr/bin/env -u X bash' gives env '-u X bash' as one argument: it starts
    the script itself again and again until the hook's timeout. The doctor took
    it as bash's line ('no problems found'); rook run refuses it, and so does the
    doctor, in rook run's words."""
    ws = rook_workspace
    healthy(ws)
    body = "[ \"$1\" = execute ] && echo '{\"output\": \"ok\"}'\nexit 0\n"
    ws.script("loops.sh", "#!/usr/bin/env -u X bash\n" + body)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/loops.sh"}})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and p["subject"].endswith("hooks.execute"), problems(findings)
    assert "gives env '-u X bash' as one argument" in p["message"], p
    assert "#!/usr/bin/env -S -u X bash" in p["message"], p
    assert rook_cli("run").exit_code == 2


def test_required_variables(rook_workspace, rook_cli, monkeypatch):
    healthy(rook_workspace)
    monkeypatch.delenv("DOCTOR_TOKEN", raising=False)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/agent.sh"},
            "env": [{"variable": "DOCTOR_TOKEN", "purpose": "the API token"}],
        }
    )
    code, findings = doctor(rook_cli, rook_workspace)
    (p,) = problems(findings)
    assert code == 1 and p["message"] == "variable DOCTOR_TOKEN is not set (the API token)"
    assert p["subject"] == "proj/agent profile p", p  # as its other findings name it
    assert p["fix"].startswith("export DOCTOR_TOKEN=")
    code, findings = doctor(rook_cli, rook_workspace, env={"DOCTOR_TOKEN": ""})
    (p,) = problems(findings)  # exported empty: said so, as rook run says it
    assert code == 1 and p["message"] == "variable DOCTOR_TOKEN is set, but empty (the API token)"
    code, findings = doctor(rook_cli, rook_workspace, env={"DOCTOR_TOKEN": "s3cret"})
    assert code == 0 and problems(findings) == []
    assert "s3cret" not in json.dumps(findings)
    assert not [f for f in findings if "DOCTOR_TOKEN" in f["message"]], findings
    # a value too short to redact: rook run warns of it and runs; doctor notes it
    code, findings = doctor(rook_cli, rook_workspace, env={"DOCTOR_TOKEN": "ab"})
    (n,) = [f for f in findings if "DOCTOR_TOKEN" in f["message"]]
    assert code == 0 and n["status"] == "note", findings
    assert "shorter than 4 characters" in n["message"] and "does not redact it" in n["message"]


def test_invalid_profile_bad_active_file_and_broken_scenario(rook_workspace, rook_cli):
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "q", "hooks": {"execute": "scripts/agent.sh"}, "colour": "red"}, active=False)
    (ws.agent_dir / "profiles" / "active").write_text("gone\n")
    ws.scenario({"id": "bad", "goal": "g", "criteria": [{"no_such_criterion": 1}]})
    code, findings = doctor(rook_cli, ws)
    messages = {p["subject"]: p for p in problems(findings)}
    assert code == 1
    assert "colour" in messages["proj/agent profile q"]["message"]
    assert "names 'gone', which is not a profile here" in messages["proj/agent"]["message"]
    assert "no_such_criterion" in messages["proj/agent scenarios"]["message"]
    assert all(p["fix"] for p in problems(findings))


def test_an_active_file_naming_the_profile_by_its_name_is_no_problem(rook_workspace, rook_cli):
    """rook run finds the active profile by file name, id or name; doctor called
    the name 'not a profile here', a false alarm."""
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "p", "name": "Local desk", "hooks": {"execute": "scripts/agent.sh"}})
    (ws.agent_dir / "profiles" / "active").write_text("Local desk\n")
    r = rook_cli("run", "-w", str(ws.root), "--json")
    assert r.exit_code == 0 and r.report["run"]["profile"]["id"] == "p", r.stderr
    code, findings = doctor(rook_cli, ws)
    assert code == 0 and problems(findings) == []


def test_no_active_profile_is_fixed_with_rook_profile_use(rook_workspace, rook_cli):
    """Several profiles and no profiles/active, or one naming a profile that is
    gone: the fix is the reference's own command, rook profile use NAME (with the
    -w doctor was given, so it works as printed), and it does fix it; doctor
    said to write the id into the file by hand."""
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "q", "hooks": {"execute": "scripts/agent.sh"}})
    (ws.agent_dir / "profiles" / "active").unlink(missing_ok=True)
    for active in (None, "gone\n"):
        if active is not None:
            (ws.agent_dir / "profiles" / "active").write_text(active)
        code, findings = doctor(rook_cli, ws)
        (problem,) = problems(findings)
        assert code == 1 and problem["subject"] == "proj/agent", findings
        assert f"rook profile use NAME -w {ws.root}" in problem["fix"], problem
        assert "(profiles: p, q)" in problem["fix"], problem
    r = rook_cli("profile", "use", "q", "-w", str(ws.root))
    assert r.exit_code == 0, r.stderr
    code, findings = doctor(rook_cli, ws)
    assert code == 0 and problems(findings) == [], findings


def test_no_active_profile_among_profiles_none_of_which_loads_is_not_told_to_use_one(
    rook_workspace, rook_cli
):
    """Several profiles, none of which loads, and no profiles/active: the fix said
    'rook profile use NAME ... (profiles: )', naming none, and rook profile use
    refuses each of them; it says to fix the profiles first."""
    ws = rook_workspace
    healthy(ws)
    (ws.agent_dir / "profiles" / "p.yaml").write_text("id: p\nhooks: [\n")
    (ws.agent_dir / "profiles" / "q.yaml").write_text("id: q\nhookz: {}\n")
    (ws.agent_dir / "profiles" / "active").unlink(missing_ok=True)
    code, findings = doctor(rook_cli, ws)
    [active] = [f for f in problems(findings) if "no " in f["message"] and "active" in f["message"]]
    assert "(profiles: )" not in active["fix"], active
    assert active["fix"].startswith("fix the profiles above first (none of them loads)"), active
    assert f"rook profile use NAME -w {ws.root}" in active["fix"], active


def test_the_profile_rook_run_uses_is_marked(rook_workspace, rook_cli):
    """Doctor checks every profile of an agent; its ok line says which one plain
    rook run uses (profiles/active, by id or name, or the only one), so a
    finding about another profile reads as that profile's."""
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "q", "name": "Staging", "hooks": {"execute": "scripts/agent.sh"}})
    uses = "the profile rook run uses"

    def marked():
        code, findings = doctor(rook_cli, ws)
        assert code == 0, findings
        return {f["subject"]: uses in f["message"] for f in findings if "profile" in f["subject"]}

    assert marked() == {"proj/agent profile p": False, "proj/agent profile q": True}
    (ws.agent_dir / "profiles" / "active").write_text("p\n")
    assert marked() == {"proj/agent profile p": True, "proj/agent profile q": False}
    (ws.agent_dir / "profiles" / "active").write_text("Staging\n")
    assert marked() == {"proj/agent profile p": False, "proj/agent profile q": True}
    (ws.agent_dir / "profiles" / "active").unlink()
    (ws.agent_dir / "profiles" / "q.yaml").unlink()
    assert marked() == {"proj/agent profile p": True}


def test_a_scenario_without_criteria_gets_a_note(rook_workspace, rook_cli):
    """It can only end unverifiable, which the run's exit code 0 does not show."""
    healthy(rook_workspace)
    rook_workspace.scenario({"id": "bare", "goal": "g"})
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 0 and not problems(findings)  # a note, not a problem
    notes = [f for f in findings if f["status"] == "note" and f["subject"].endswith("scenarios")]
    assert len(notes) == 1, findings
    note = notes[0]
    assert note["message"].startswith("no criteria in bare: nothing is verified")


def test_every_scenario_excluded_gets_a_note(rook_workspace, rook_cli):
    """Plain `rook run` refuses (exit 2) to run an agent whose every scenario is
    excluded: true, but the doctor said 'no problems found' without a word of it."""
    ws = rook_workspace
    healthy(ws)
    ws.scenario({"id": "s", "goal": "g", "excluded": True, "criteria": [{"contains": "ok"}]})
    code, findings = doctor(rook_cli, ws)
    assert code == 0 and not problems(findings)  # --only runs them: a note
    notes = [f for f in findings if f["status"] == "note" and f["subject"].endswith("scenarios")]
    assert [n["message"] for n in notes] == [
        "every scenario is excluded: true, so plain rook run selects none and refuses to run "
        "(exit 2); such a scenario runs only when --only names it"
    ], findings
    assert notes[0]["fix"] == (  # with the flags doctor was given: it works as printed
        f"rook run -w {ws.root} --project proj --agent agent --only s, or remove excluded: true "
        "from the ones to run"
    )
    assert rook_cli("run", "-w", str(ws.root)).exit_code == 2
    ws.scenario({"id": "t", "goal": "g", "criteria": [{"contains": "ok"}]})
    code, findings = doctor(rook_cli, ws)
    assert not [f for f in findings if "excluded: true" in f["message"]], findings


def test_a_missing_scenarios_folder_is_told_to_be_made(rook_workspace, rook_cli):
    """Its fix said 'correct the scenario file named above', naming no file."""
    import shutil

    healthy(rook_workspace)
    sdir = rook_workspace.agent_dir / "scenarios"
    shutil.rmtree(sdir)
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 1
    [problem] = problems(findings)
    assert problem["message"] == f"no scenarios directory {sdir.resolve()}", problem
    assert problem["fix"] == (
        "create it and add scenarios/NAME.yaml: an id, a goal and criteria "
        "(docs/concepts.md in Rook's source)"
    )


def test_a_scenario_file_that_holds_no_scenario_gets_a_note(rook_workspace, rook_cli):
    """An empty file (or one of comments only) was skipped without a word: '1 load'."""
    healthy(rook_workspace)
    sdir = rook_workspace.agent_dir / "scenarios"
    (sdir / "new.yaml").write_text("# id: refund\n# goal: ...\n")
    (sdir / "empty.yml").write_text("")
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 0 and not problems(findings)
    notes = [f["message"] for f in findings
             if f["status"] == "note" and f["subject"].endswith("scenarios")]
    assert notes == [
        f"no scenario in {(sdir / 'empty.yml').resolve()} (empty), "
        f"{(sdir / 'new.yaml').resolve()} (only comments): rook run reads none from them "
        "and runs the others, without a word"
    ], findings
    # what rook run does with them: the others run, exit 0, the files not named
    r = rook_cli("run", "-w", str(rook_workspace.root))
    assert r.exit_code == 0 and "empty.yml" not in r.stdout + r.stderr, r.stdout + r.stderr
    (sdir / "new.yaml").unlink()
    code, findings = doctor(rook_cli, rook_workspace)
    notes = [f["message"] for f in findings
             if f["status"] == "note" and f["subject"].endswith("scenarios")]
    assert notes == [
        f"no scenario in {(sdir / 'empty.yml').resolve()} "
        "(empty): rook run reads none from it and runs the others, without a word"
    ], findings


def test_a_scenario_file_that_holds_none_is_said_to_hold_what_it_holds(rook_workspace, rook_cli):
    """Doctor said "(empty, or only comments)" of every file that yields no scenario:
    one holding an empty list, only ---, or null is neither. Each is said as it is."""
    healthy(rook_workspace)
    sdir = rook_workspace.agent_dir / "scenarios"
    held = {
        "a-list.yaml": ("[]  # none yet\n", "an empty list, []"),
        "b-dashes.yaml": ("# soon\n---\n", "only ---"),
        "c-ends.yaml": ("---\n...\n", "only --- and ..."),
        "d-null.yaml": ("null\n", "only null"),
        "e-tilde.yaml": ("--- ~\n", "only ~, YAML's null"),
        "f-blank.yaml": ("\n  \n", "empty"),
    }
    for name, (text, _) in held.items():
        (sdir / name).write_text(text)
    r = rook_cli("run", "-w", str(rook_workspace.root))
    assert r.exit_code == 0 and "a-list.yaml" not in r.stdout + r.stderr, r.stdout + r.stderr
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 0 and not problems(findings), findings
    notes = [f["message"] for f in findings
             if f["status"] == "note" and f["subject"].endswith("scenarios")]
    listed = ", ".join(f"{(sdir / n).resolve()} ({why})" for n, (_, why) in held.items())
    assert notes == [
        f"no scenario in {listed}: rook run reads none from them and runs the others, "
        "without a word"
    ], notes
    assert "only comments" not in str(findings)


def test_a_scenarios_folder_whose_only_file_is_empty_says_what_rook_run_does(
    rook_workspace, rook_cli
):
    """Its only scenario file saved empty: doctor said "no scenario in DIR", not
    that a file is there and holds none, nor that rook run refuses (exit 2)."""
    healthy(rook_workspace)
    sdir = rook_workspace.agent_dir / "scenarios"
    for old in sdir.iterdir():
        old.unlink()
    (sdir / "only.yaml").write_text("")
    r = rook_cli("run", "-w", str(rook_workspace.root))
    assert r.exit_code == 2 and "no scenarios in" in r.stderr, r.stdout + r.stderr
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 1, findings
    (problem,) = problems(findings)
    assert problem["message"] == (
        f"no scenario in {sdir.resolve()}: {(sdir / 'only.yaml').resolve()} holds none "
        "(empty), so rook run refuses to run (exit 2)"
    ), problem
    (sdir / "list.yaml").write_text("[]\n")
    code, findings = doctor(rook_cli, rook_workspace)
    (problem,) = problems(findings)
    assert problem["message"] == (
        f"no scenario in {sdir.resolve()}: {(sdir / 'list.yaml').resolve()} (an empty list, "
        f"[]), {(sdir / 'only.yaml').resolve()} (empty) hold none, so rook run refuses to "
        "run (exit 2)"
    ), problem
    assert not [f for f in findings if f["status"] == "note" and "only.yaml" in f["message"]]


def test_a_project_or_agent_that_does_not_exist_is_a_usage_error(rook_workspace, rook_cli):
    """It was a finding (exit 1) where every other command says exit 2."""
    healthy(rook_workspace)
    for flags in (["--project", "nope"], ["--agent", "nope"]):
        r = rook_cli("doctor", "-w", str(rook_workspace.root), *flags)
        assert r.exit_code == 2 and "nope" in r.stderr and r.exception is None, r.stderr
    code, findings = doctor(rook_cli, rook_workspace, "--agent", rook_workspace.agent_dir.name)
    assert code == 0, findings


def test_no_workspace_says_how_to_make_one(tmp_path, rook_cli):
    r = rook_cli("doctor", "-w", str(tmp_path), "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and doc["ok"] is False and doc["problems"] == 1
    (p,) = [f for f in doc["findings"] if f["status"] == "problem"]
    # in the folder -w named, wherever doctor ran: it works as printed
    assert f"rook init -w {tmp_path} --project P --agent A --example" in p["fix"]


def test_every_agent_is_checked_unless_one_is_chosen(rook_workspace, rook_cli):
    healthy(rook_workspace)
    other = rook_workspace.agent_dir.parent / "other"
    (other / "profiles").mkdir(parents=True)
    (other / "scenarios").mkdir()
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 1 and any(p["subject"] == "proj/other" for p in problems(findings))
    code, findings = doctor(rook_cli, rook_workspace, "--agent", "agent")
    assert code == 0, problems(findings)


def test_a_plugin_that_fails_to_load_is_a_problem(
    rook_workspace, rook_cli, rook_distribution, monkeypatch
):
    healthy(rook_workspace)
    rook_distribution(
        "rook-bad",
        {"bad": "rook_bad_mod"},
        {"rook_bad_mod.py": "raise RuntimeError('boom at import')\n"},
    )
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",bad")
    code, findings = doctor(rook_cli, rook_workspace)
    (p,) = problems(findings)
    assert code == 1 and p["subject"] == "plugin bad"
    assert p["message"] == "from rook-bad failed to load: RuntimeError: boom at import"
    assert "ROOK_DISABLE_PLUGINS=bad" in p["fix"]


AUTHOR = """
from rook_core.hookspecs import hookimpl


class Author:
    def detect(self, source):
        return 0.0

    def write(self, request):
        return None


@hookimpl
def rook_register_authors(register):
    register("curl", Author())
"""


def test_an_author_that_the_profile_commands_refuse_is_a_problem(
    rook_workspace, rook_cli, rook_distribution, monkeypatch
):
    """A plugin's author clashing with a built-in one: rook plugins and every rook
    profile command that asks for the authors exit 2, so doctor is not all ok."""
    healthy(rook_workspace)
    rook_distribution("rook-mycurl", {"mycurl": "rook_mycurl"}, {"rook_mycurl.py": AUTHOR})
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",author_curl,mycurl")
    assert rook_cli("plugins").exit_code == 2
    code, findings = doctor(rook_cli, rook_workspace)
    (p,) = problems(findings)
    assert code == 1 and p["subject"] == "plugins"
    assert p["message"].startswith("author 'curl' is registered twice: by author_curl")
    assert "ROOK_DISABLE_PLUGINS=mycurl" in p["message"] + p["fix"]


def test_the_text_output_shows_each_fix(rook_workspace, rook_cli):
    healthy(rook_workspace)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/nope.sh"}})
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    assert r.exit_code == 1
    assert (
        "PROBLEM  proj/agent profile p hooks.execute: hook script 'scripts/nope.sh' not found" in r.stdout
    )
    assert "fix: create the script" in r.stdout and "1 problem found" in r.stdout


@pytest.mark.parametrize("text, named", [
    ("bogus: 1\n", "bogus"),
    ("project: a\nproject: b\n", "duplicate key 'project'"),
    ("project: [\n", "not valid YAML"),
])
def test_a_config_yaml_rook_run_refuses_is_a_problem(rook_workspace, rook_cli, text, named):
    healthy(rook_workspace)
    config = rook_workspace.root / ".testmuai/rook/config.yaml"
    config.write_text(text)
    code, findings = doctor(rook_cli, rook_workspace)
    (found,) = [f for f in problems(findings) if f["subject"] == "config"]
    assert code == 1 and named in found["message"] and "config.yaml" in found["message"]
    assert rook_cli("run", "-w", str(rook_workspace.root)).exit_code == 2  # the same verdict


@pytest.mark.parametrize("text, named", [
    ("project: nope\n", "project 'nope' not found"),
    ("agent: nope\n", "agent 'nope' not found in any project"),
    ("project: proj\nagent: nope\n", "agent 'nope' not found in project 'proj'"),
])
def test_a_config_yaml_naming_a_missing_project_or_agent_is_a_problem(
    rook_workspace, rook_cli, text, named
):
    """It was 'no problems found' while every rook run stopped on it (exit 2)."""
    healthy(rook_workspace)
    (rook_workspace.root / ".testmuai/rook/config.yaml").write_text(text)
    code, findings = doctor(rook_cli, rook_workspace)
    (found,) = [f for f in problems(findings) if f["subject"] == "config"]
    assert code == 1 and named in found["message"] and "config.yaml" in found["fix"]
    assert rook_cli("run", "-w", str(rook_workspace.root)).exit_code == 2  # the same verdict
    (rook_workspace.root / ".testmuai/rook/config.yaml").write_text("project: proj\nagent: agent\n")
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 0 and problems(findings) == []


def test_two_profile_files_with_one_id_are_a_problem(rook_workspace, rook_cli):
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}}, name="p-copy", active=False)
    code, findings = doctor(rook_cli, ws)
    (dup,) = [p for p in problems(findings) if "both have id" in p["message"]]
    assert code == 1
    assert dup["message"] == "p-copy.yaml and p.yaml both have id 'p'"
    assert "ids are unique" in dup["fix"]


def test_the_judge_profile_rubric_criteria_need_is_checked(rook_workspace, rook_cli, monkeypatch):
    """rook run refuses (exit 2) rubric criteria whose judge profile config.yaml
    misnames, or one of another agent whose variables are unset or whose script
    is missing; the doctor said "no problems found" for each."""
    from rook_core.testing import Workspace

    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",judges")
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    ws = rook_workspace
    healthy(ws)
    ws.scenario({"id": "tone", "goal": "g", "criteria": [{"rubric": "is polite"}]})
    judge = """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo '{"output": {"pass": true, "reason": "ok"}}'
    """
    ws.script("judge.sh", judge)
    ws.profile({"id": "grader", "hooks": {"execute": "scripts/judge.sh"}}, active=False)
    config = ws.root / ".testmuai" / "rook" / "config.yaml"

    # none configured: rook run refuses the run (exit 2); doctor said "no problems
    # found" (a note), so `rook doctor && rook run` failed past a green check
    assert rook_cli("run", "-w", str(ws.root)).exit_code == 2
    code, findings = doctor(rook_cli, ws)
    assert code == 1
    [p] = problems(findings)
    assert p["subject"] == "proj/agent judge profile" and "scenario tone" in p["message"], p
    assert "rook run refuses them" in p["message"], p
    assert "pass --judge-profile NAME" in p["fix"] and "judge_profile: NAME" in p["fix"], p
    # only excluded scenarios need one: plain rook run runs; --only NAME needs one (a note)
    ws.scenario({"id": "tone", "goal": "g", "excluded": True, "criteria": [{"rubric": "is polite"}]})
    assert rook_cli("run", "-w", str(ws.root)).exit_code == 0
    code, findings = doctor(rook_cli, ws)
    assert code == 0, problems(findings)
    note = next(f for f in findings if f["subject"] == "proj/agent judge profile")
    assert note["status"] == "note" and "excluded: true" in note["message"], note
    ws.scenario({"id": "tone", "goal": "g", "criteria": [{"rubric": "is polite"}]})
    # ... unless it is given as rook run takes it: doctor checks the same profile
    assert rook_cli("run", "-w", str(ws.root), "--judge-profile", "grader").exit_code == 0
    code, findings = doctor(rook_cli, ws, "--judge-profile", "grader")
    assert code == 0, problems(findings)
    ok = next(f for f in findings if f["subject"] == "proj/agent judge profile")
    assert ok["status"] == "ok" and "grader" in ok["message"]
    code, findings = doctor(rook_cli, ws, "--judge-profile", "gradr")
    assert code == 1
    [p] = problems(findings)
    assert p["message"].startswith("--judge-profile: judge profile 'gradr'"), p
    assert "--judge-profile" in p["fix"], p
    r = rook_cli("doctor", "-w", str(ws.root), "--judge-profile", " ")
    assert r.exit_code == 2 and "--judge-profile ' ': names no profile" in r.stderr, r.stderr

    config.write_text("judge_profile: gradr\n")
    assert rook_cli("run", "-w", str(ws.root)).exit_code == 2
    code, findings = doctor(rook_cli, ws)
    assert code == 1
    [p] = problems(findings)
    assert "judge profile 'gradr'" in p["message"] and "grader" in p["message"], p
    assert "judge_profile" in p["fix"]

    config.write_text("judge_profile: grader\n")
    code, findings = doctor(rook_cli, ws)
    assert code == 0, problems(findings)
    ok = next(f for f in findings if f["subject"] == "proj/agent judge profile")
    assert ok["status"] == "ok" and "grader" in ok["message"]
    assert ok["message"] == "grader for 1 criterion", ok  # it said "for 1 criteria"

    # another agent's judge profile: checked as rook run checks it, even with --agent
    judges = Workspace(ws.root, project=ws.project, agent="judges")
    judges.script("judge.sh", judge)
    judges.profile({"id": "grader", "hooks": {"execute": "scripts/judge.sh"},
                    "env": [{"variable": "JUDGE_KEY", "purpose": "key for the judge model"}]})
    judges.scenario({"id": "j", "goal": "g", "criteria": [{"contains": "ok"}]})
    config.write_text("judge_profile: judges/grader\n")
    assert rook_cli("run", "-w", str(ws.root), "--agent", "agent").exit_code == 2
    code, findings = doctor(rook_cli, ws, "--agent", "agent")
    assert code == 1
    [p] = problems(findings)
    assert p["subject"] == "proj/agent judge profile judges/grader", p
    assert "JUDGE_KEY" in p["message"] and "key for the judge model" in p["message"], p
    assert "export JUDGE_KEY=" in p["fix"]
    code, findings = doctor(rook_cli, ws, "--agent", "agent", env={"JUDGE_KEY": "jk-0123456789"})
    assert code == 0, problems(findings)
    (judges.agent_dir / "scripts" / "judge.sh").unlink()
    code, findings = doctor(rook_cli, ws, "--agent", "agent", env={"JUDGE_KEY": "jk-0123456789"})
    assert code == 1
    [p] = problems(findings)
    assert "judge.sh" in p["message"], p



def test_a_config_judge_profile_naming_no_profile_is_a_problem_with_no_rubric(
    rook_workspace, rook_cli
):
    # rook run refuses judge_profile: gradr in config.yaml with no rubric too (exit
    # 2, naming config.yaml): doctor said "no problems found"; another agent's
    # profile of that name is no problem (config.yaml is the workspace's)
    from rook_core.testing import Workspace

    ws = rook_workspace
    healthy(ws)
    config = ws.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text("judge_profile: gradr\n")
    assert rook_cli("run", "-w", str(ws.root)).exit_code == 2
    code, findings = doctor(rook_cli, ws)
    assert code == 1
    [p] = problems(findings)
    assert p["subject"] == "proj/agent judge profile", p
    assert p["message"].startswith("config.yaml: judge_profile: judge profile 'gradr'"), p
    assert "(profiles: p)" in p["message"] and "judge_profile: in config.yaml" in p["fix"], p
    other = Workspace(ws.root, agent="other")
    healthy(other)
    other.profile({"id": "gradr", "hooks": {"execute": "scripts/agent.sh"}}, active=False)
    config.write_text("judge_profile: gradr\n")
    assert rook_cli("run", "-w", str(ws.root), "--agent", "agent").exit_code == 0
    code, findings = doctor(rook_cli, ws, "--agent", "agent")
    assert code == 0, problems(findings)


def test_a_scenario_with_an_empty_goal_is_a_problem(rook_workspace, rook_cli):
    """rook run sent the agent an empty goal and judged its answer; doctor said
    'no problems found'."""
    healthy(rook_workspace)
    rook_workspace.scenario({"id": "blank", "goal": "  ", "criteria": [{"contains": "ok"}]})
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 1
    [p] = problems(findings)
    assert "blank.yaml" in p["message"] and "goal: empty" in p["message"], p


def test_a_criterion_rook_run_refuses_is_a_problem(rook_workspace, rook_cli, monkeypatch):
    """A `judge:` criterion naming no installed judge (or one whose options the
    judge refuses): rook run stops with exit 2 before anything runs; doctor
    said 'no problems found'."""
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",judges")
    ws = rook_workspace
    healthy(ws)
    ws.scenario({"id": "tone", "goal": "g", "criteria": [{"judge": {"name": "acme-tone"}}]})
    ws.scenario({"id": "kw", "goal": "g", "criteria": [{"judge": {"name": "keywords"}}]})
    run = rook_cli("run", "-w", str(ws.root))
    assert run.exit_code == 2 and "unknown judge 'acme-tone'" in run.stderr, run.stderr
    code, findings = doctor(rook_cli, ws)
    assert code == 1
    [p] = problems(findings)
    assert p["subject"] == "proj/agent scenarios", p
    assert "tone.yaml: scenario tone: criteria.0.judge: unknown judge 'acme-tone'" in p["message"]
    assert "scenario kw: criteria.0.judge: keywords needs words" in p["message"], p
    assert p["fix"]
    ws.scenario({"id": "tone", "goal": "g", "criteria": [{"judge": {"name": "keywords", "words": ["x"]}}]})
    ws.scenario({"id": "kw", "goal": "g", "criteria": [{"contains": "ok"}]})
    code, findings = doctor(rook_cli, ws)
    assert code == 0, problems(findings)
    # only an excluded: true scenario has it: plain rook run leaves it out and
    # exits 0 (doctor called it a problem); rook run --only NAME refuses it: a note
    ws.scenario({"id": "tone", "goal": "g", "excluded": True,
                 "criteria": [{"judge": {"name": "acme-tone"}}]})
    assert rook_cli("run", "-w", str(ws.root)).exit_code == 0
    assert rook_cli("run", "-w", str(ws.root), "--only", "tone").exit_code == 2
    code, findings = doctor(rook_cli, ws)
    assert code == 0, problems(findings)
    note = next(f for f in findings if "acme-tone" in f["message"])
    assert note["status"] == "note" and "excluded: true" in note["message"], note
    assert "rook run --only" in note["message"] and note["fix"], note


def test_a_judge_profile_flag_naming_nothing_is_a_problem_without_rubrics(rook_workspace, rook_cli):
    """rook run --judge-profile NAME loads NAME even when no criterion needs it."""
    ws = rook_workspace
    healthy(ws)
    assert rook_cli("run", "-w", str(ws.root), "--judge-profile", "gradr").exit_code == 2
    code, findings = doctor(rook_cli, ws, "--judge-profile", "gradr")
    assert code == 1
    [p] = problems(findings)
    assert p["message"].startswith("--judge-profile: judge profile 'gradr'"), p
    code, findings = doctor(rook_cli, ws, "--judge-profile", "p")
    assert code == 0, problems(findings)
    [ok] = [f for f in findings if f["subject"].endswith("judge profile")]
    # it said "p for 0 criteria"
    assert ok["message"] == "p (no rubric criterion uses it; rook run loads it all the same)", ok


def test_a_judge_profile_of_the_agent_with_a_variable_unset_is_not_ok(
    rook_workspace, rook_cli, monkeypatch
):
    """rook run --judge-profile cu refuses (exit 2) when cu's variable is unset;
    doctor --judge-profile cu said "ok ... judge profile: cu" and named the
    variable only under the profile itself."""
    monkeypatch.delenv("CU_TOKEN", raising=False)
    ws = rook_workspace
    healthy(ws)
    ws.profile(
        {
            "id": "cu",
            "hooks": {"execute": "scripts/agent.sh"},
            "env": [{"variable": "CU_TOKEN", "purpose": "token for cu"}],
        },
        active=False,
    )
    r = rook_cli("run", "-w", str(ws.root), "--judge-profile", "cu")
    assert r.exit_code == 2 and "judge profile 'cu'" in r.stderr, r.stderr
    code, findings = doctor(rook_cli, ws, "--judge-profile", "cu")
    assert code == 1
    judge = next(f for f in findings if f["subject"].startswith("proj/agent judge profile"))
    assert judge["status"] == "problem", judge
    assert judge["message"].startswith("judge profile 'cu'"), judge
    assert "CU_TOKEN: token for cu" in judge["message"], judge
    assert "export CU_TOKEN=" in judge["fix"], judge
    code, findings = doctor(rook_cli, ws, "--judge-profile", "cu", env={"CU_TOKEN": "t-0123456789"})
    assert code == 0, problems(findings)


def test_an_id_holding_a_secret_value_is_a_problem(rook_workspace, rook_cli):
    """rook run refuses (exit 2) a scenario whose id holds the value of a profile
    env variable; doctor said 'no problems found'. Neither shows the value."""
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "env": [{"variable": "DOCTOR_TOKEN", "purpose": "token"}]})
    ws.scenario({"id": "s-tok3n99", "goal": "g", "criteria": [{"contains": "ok"}]})
    env = {"DOCTOR_TOKEN": "tok3n99"}
    assert rook_cli("run", "-w", str(ws.root), env=env).exit_code == 2
    code, findings = doctor(rook_cli, ws, env=env)
    assert code == 1
    [p] = problems(findings)
    assert "scenario s-[redacted:DOCTOR_TOKEN]" in p["message"], p
    assert "holds the value of a profile env variable" in p["message"] and p["fix"], p
    assert "tok3n99" not in json.dumps(findings)
    # only an excluded: true scenario's id: plain rook run leaves it out and exits
    # 0 (doctor called it a problem); rook run --only NAME refuses it: a note
    ws.scenario({"id": "s-tok3n99", "goal": "g", "excluded": True,
                 "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "-w", str(ws.root), env=env).exit_code == 0
    assert rook_cli("run", "-w", str(ws.root), "--only", "s-tok3n99", env=env).exit_code == 2
    code, findings = doctor(rook_cli, ws, env=env)
    assert code == 0, problems(findings)
    note = next(f for f in findings if "scenario s-[redacted:DOCTOR_TOKEN]" in f["message"])
    assert note["status"] == "note" and "excluded: true" in note["message"], note
    assert "rook run --only" in note["message"] and note["fix"], note
    assert "tok3n99" not in json.dumps(findings)


def test_a_turn_the_transport_cannot_send_is_a_problem(rook_workspace, rook_cli, monkeypatch):
    """rook run refuses (exit 2) a scenario a hook entry's transport could never
    send (a Ruhroh wrapper's turn over 128 KiB: RUHROH_MESSAGE cannot carry it);
    doctor never asked the transport (check_scenario) and said 'no problems found'.
    It reports rook run's own message now; an excluded: true scenario, a note."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the limit of one environment variable is Linux's")
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",ruhroh")
    ws = rook_workspace
    healthy(ws)
    wrapper = os.path.join(os.path.dirname(__file__), "agents", "ruhroh", "wrapper.sh")
    ws.profile({"id": "rr", "hooks": {"execute": {"ruhroh": {"command": wrapper}}}})
    path = ws.scenario({"id": "big", "goal": "x" * 140_000, "criteria": [{"contains": "x"}]})
    run = rook_cli("run", "-w", str(ws.root))
    assert run.exit_code == 2, run.stderr
    refused = run.stderr.removeprefix("rook: error: ").strip()
    assert f"{path}: turn 1 (goal) holds 140000 bytes" in refused, refused
    code, findings = doctor(rook_cli, ws)
    assert code == 1
    [p] = problems(findings)
    assert p["subject"] == "proj/agent profile rr", p
    assert p["message"] == refused and p["fix"], p
    # only in an excluded: true scenario: plain rook run leaves it out: a note
    ws.scenario({"id": "big", "goal": "x" * 140_000, "excluded": True,
                 "criteria": [{"contains": "x"}]})
    assert rook_cli("run", "-w", str(ws.root), "--only", "big").exit_code == 2
    code, findings = doctor(rook_cli, ws)
    assert code == 0, problems(findings)
    note = next(f for f in findings if "holds 140000 bytes" in f["message"])
    assert note["status"] == "note" and "excluded: true" in note["message"], note


@pytest.mark.parametrize(
    "entry,page",
    [
        ({"connector": {"name": "acme"}}, "docs/ruhroh.md in Rook's source (Writing a connector)"),
        ({"ruhroh": {"command": "./missing-wrapper.sh"}}, "docs/ruhroh.md in Rook's source"),
        ({"http": {"url": "http://127.0.0.1:1/{{nowhere}}"}}, "docs/http.md in Rook's source"),
    ],
)
def test_a_problem_with_a_built_in_transports_entry_names_its_page(
    entry, page, rook_workspace, rook_cli, monkeypatch
):
    """The fix said 'see the connector transport's page in docs/': there is no such
    page (a connector is on docs/ruhroh.md); it names the page now."""
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",ruhroh,http")
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "x", "hooks": {"execute": entry}})
    code, findings = doctor(rook_cli, ws)
    assert code == 1
    [p] = [f for f in problems(findings) if f["subject"].endswith("profile x hooks.execute")] or [
        problems(findings)
    ]
    assert f"(see {page})" in p["fix"], p


def test_no_finding_shows_the_value_of_a_profile_env_variable(rook_workspace, rook_cli, tmp_path):
    """A scenario id holding an env value: the problem redacted it, but the note
    on scenarios the profile cannot run named 's-tok3n99' in the clear, and so
    did the workspace line for a folder holding one: nothing in doctor's
    findings passed the redactor."""
    from rook_core.testing import Workspace

    ws = Workspace(tmp_path / "ws-tok3n99")
    healthy(ws)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "env": [{"variable": "DOCTOR_TOKEN", "purpose": "token"}]})
    ws.scenario({"id": "s-tok3n99", "goal": "g", "criteria": [{"called": "lookup"}]})
    env = {"DOCTOR_TOKEN": "tok3n99"}
    code, findings = doctor(rook_cli, ws, env=env)
    assert code == 1
    note = next(f for f in findings if "not_runnable" in f["message"])
    assert "s-[redacted:DOCTOR_TOKEN] (needs capability 'calls'" in note["message"], note
    assert any("ws-[redacted:DOCTOR_TOKEN]" in f["message"] for f in findings), findings
    assert "tok3n99" not in json.dumps(findings)
    shown = rook_cli("doctor", "-w", str(ws.root), env=env)
    assert "tok3n99" not in shown.stdout + shown.stderr, shown.stdout


def test_a_profile_that_does_not_load_still_has_its_env_values_redacted(tmp_path, rook_cli):
    """A profile doctor finds invalid (a key it does not know) declared no
    variable for doctor's redactor, which knew only the profiles that loaded:
    a workspace folder holding that profile's env value was named in the
    clear in the workspace line and in the problem naming the file, though
    rook profile list and rook profile show of the same profile redact it."""
    from rook_core.testing import Workspace

    ws = Workspace(tmp_path / "ws-tok3n99")
    healthy(ws)
    ws.profile({"id": "w", "hooks": {"execute": "scripts/agent.sh"}, "bogus": 1,
                "env": [{"variable": "DOCTOR_TOKEN", "purpose": "token"}]}, active=False)
    env = {"DOCTOR_TOKEN": "tok3n99"}
    code, findings = doctor(rook_cli, ws, env=env)
    assert code == 1
    assert any("ws-[redacted:DOCTOR_TOKEN]" in f["message"] for f in problems(findings)), findings
    assert "tok3n99" not in json.dumps(findings)
    shown = rook_cli("doctor", "-w", str(ws.root), env=env)
    assert "tok3n99" not in shown.stdout + shown.stderr, shown.stdout


def test_scenarios_planning_more_runs_than_a_run_may_are_a_problem(rook_workspace, rook_cli):
    """rook run refuses (exit 2) to plan over 1,000,000 scenario runs; doctor said
    'no problems found'."""
    ws = rook_workspace
    healthy(ws)
    ws.scenario({"id": "s", "goal": "g", "repeat": 600_000, "criteria": [{"contains": "ok"}]})
    ws.scenario({"id": "t", "goal": "g", "repeat": 600_000, "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "-w", str(ws.root)).exit_code == 2
    code, findings = doctor(rook_cli, ws)
    assert code == 1
    [p] = problems(findings)
    assert "plan 1,200,000 scenario runs" in p["message"] and "1,000,000" in p["message"], p
    assert "--only" in p["fix"] or "--tag" in p["fix"], p


def test_a_scenario_file_with_an_upper_case_suffix_gets_a_note(rook_workspace, rook_cli):
    """rook run reads *.yaml and *.yml: a Refund.YAML was skipped without a word,
    its scenario never run, and doctor said nothing."""
    ws = rook_workspace
    healthy(ws)
    deeper = ws.agent_dir / "scenarios" / "more"
    deeper.mkdir()
    (deeper / "Refund.YAML").write_text("id: refund\ngoal: g\ncriteria: [{contains: ok}]\n")
    (ws.agent_dir / "scenarios" / "old.yaml.bak").write_text("id: old\ngoal: g\n")
    code, findings = doctor(rook_cli, ws)
    assert code == 0 and not problems(findings)
    notes = [f for f in findings if f["status"] == "note" and f["subject"].endswith("scenarios")]
    assert len(notes) == 1, findings
    assert "more/Refund.YAML" in notes[0]["message"] and "old.yaml.bak" not in notes[0]["message"]
    assert "rename" in notes[0]["message"] + notes[0]["fix"], notes


def test_every_broken_scenario_file_is_named(rook_workspace, rook_cli):
    """Only the first was: each doctor round found one more."""
    healthy(rook_workspace)
    rook_workspace.scenario({"id": "a", "goal": " "})
    rook_workspace.scenario({"id": "b", "goal": "g", "criteria": [{"containz": "x"}]})
    code, findings = doctor(rook_cli, rook_workspace)
    assert code == 1
    [p] = problems(findings)
    assert "a.yaml" in p["message"] and "b.yaml" in p["message"], p
    assert "each scenario file named above" in p["fix"]


def test_scenarios_a_profile_cannot_run_get_a_note(rook_workspace, rook_cli):
    """rook run skips them as not_runnable and exits 0; doctor said nothing."""
    ws = rook_workspace
    healthy(ws)
    ws.scenario({"id": "quiet", "goal": "g", "criteria": [{"not_called": "cancel_order"}]})
    ws.scenario({"id": "off", "goal": "g", "excluded": True, "criteria": [{"max_tokens": 9}]})
    r = rook_cli("run", "-w", str(ws.root), "--json")
    assert r.exit_code == 0 and r.statuses()["quiet"] == "not_runnable", r.stderr
    code, findings = doctor(rook_cli, ws)
    assert code == 0 and not problems(findings)
    [note] = [f for f in findings if f["subject"] == "proj/agent profile p" and f["status"] == "note"]
    assert "quiet" in note["message"] and "not_runnable" in note["message"], note
    assert "'calls'" in note["message"] and "off" not in note["message"], note
    assert "capabilities" in note["fix"], note
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "capabilities": {"calls": True}})
    code, findings = doctor(rook_cli, ws)
    assert not [f for f in findings if f["status"] == "note" and "not_runnable" in f["message"]]


def test_a_hook_whose_shebang_follows_a_byte_order_mark_is_told_so(rook_workspace, rook_cli):
    """An editor saving UTF-8 with a BOM hides the #! line from the system: it was
    "has no #! line, add a first line such as #!/usr/bin/env bash", which it has."""
    ws = rook_workspace
    healthy(ws)
    bom = ws.script("bom.sh", "x")
    bom.write_bytes(b'\xef\xbb\xbf#!/bin/bash\necho \'{"output": "ok"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/bom.sh"}})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and p["subject"] == "proj/agent profile p hooks.execute"
    assert "bom.sh starts with a byte order mark (U+FEFF) before its #! line" in p["message"]
    assert "without a BOM" in p["fix"] and "add a first line" not in p["fix"]


def test_a_bash_hook_with_windows_line_endings_and_no_run_bit(rook_workspace, rook_cli):
    """A .sh hook without the run bit runs with bash, which cannot run a file saved
    with Windows line endings (each \\r ends up in a word): a problem, with the fix."""
    ws = rook_workspace
    healthy(ws)
    crlf = ws.script("crlf.sh", "x", executable=False)
    crlf.write_bytes(b'if [ "$1" = execute ]; then\r\n  echo \'{"output": "ok"}\'\r\nfi\r\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/crlf.sh"}})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and p["subject"] == "proj/agent profile p hooks.execute"
    assert "crlf.sh has Windows line endings" in p["message"]
    assert "dos2unix" in p["fix"]


def test_no_shebang_and_no_known_extension_is_not_told_to_drop_the_run_bit(
    rook_workspace, rook_cli
):
    """chmod -x lets Rook pick the interpreter by the extension: for a file with none
    it knows (scripts/agent), that advice would only trade one problem for another."""
    ws = rook_workspace
    healthy(ws)
    ws.script("bare", "echo '{}'\n", executable=True)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/bare"}})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and "has no #! line" in p["message"]
    assert "add a #! line naming its interpreter as its first line, such as " \
        "#!/usr/bin/env bash" in p["fix"], p["fix"]
    assert "chmod -x" not in p["fix"]
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "-w", str(ws.root))
    assert r.exit_code == 2 and "has no #! line" in r.stderr
    assert "such as #!/usr/bin/env bash" in r.stderr, r.stderr  # doctor and run say the same
    assert "chmod -x" not in r.stderr


def test_a_profile_file_named_yml_is_named_as_unread(rook_workspace, rook_cli):
    """profiles/local.yml (as scenarios may be named) is read by no command: rook run
    and rook doctor said only 'no profiles', never why that file was not one."""
    ws = rook_workspace
    healthy(ws)
    profiles = ws.agent_dir / "profiles"
    for path in profiles.glob("*.yaml"):
        path.rename(path.with_suffix(".yml"))
    (profiles / "active").unlink(missing_ok=True)
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and "no profile in" in p["message"]
    assert f"rook profile add -w {ws.root} --project proj --agent agent" in p["fix"], p["fix"]
    assert "p.yml is not read: a profile file ends in .yaml" in p["message"]
    assert "rename" in p["fix"]
    r = rook_cli("run", "-w", str(ws.root))
    assert r.exit_code == 2
    assert "p.yml is not read: a profile file ends in .yaml; rename it" in r.stderr
    (profiles / "active").write_text("p\n")  # as rook profile use p wrote it
    r = rook_cli("run", "-w", str(ws.root))
    assert r.exit_code == 2 and "names 'p', which is no profile here" in r.stderr
    assert "p.yml is not read: a profile file ends in .yaml; rename it" in r.stderr
    (profiles / "active").unlink()
    r = rook_cli("profile", "list", "-w", str(ws.root))
    assert r.exit_code == 0 and "p.yml is not read: a profile file ends in .yaml" in r.stdout
    # beside a profile that loads, it is a note
    ws.profile({"id": "other", "hooks": {"execute": "scripts/agent.sh"}})
    code, findings = doctor(rook_cli, ws)
    notes = [f for f in findings if f["status"] == "note" and "p.yml" in f["message"]]
    assert code == 0 and len(notes) == 1, findings
    assert "is not read: a profile file ends in .yaml" in notes[0]["message"]


def test_a_credential_written_literally_in_a_profile_is_a_note(
    rook_workspace, rook_cli, monkeypatch
):
    """rook profile show hides it (so does a run's copy of the profile), but nothing
    redacts it where a hook repeats it: doctor names the field (never the value) and
    says to move it to env."""
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",http")
    ws = rook_workspace
    healthy(ws)
    secret = "sk-abcdefghijklmnopqrstuvwxyz123456"
    ws.profile(
        {
            "id": "p",
            "hooks": {
                "execute": {
                    "http": {
                        "url": "http://127.0.0.1:9/ask",
                        "headers": {"Authorization": f"Bearer {secret}"},
                        "body": {"q": "{{goal}}"},
                    }
                }
            },
            "hook_env": {"REGION": "eu", "SERVICE_TOKEN": "plain-looking-value"},
        }
    )
    r = rook_cli("doctor", "-w", str(ws.root), "--json")
    assert secret not in r.stdout + r.stderr and "plain-looking-value" not in r.stdout
    findings = json.loads(r.stdout)["findings"]
    (note,) = [f for f in findings if f["status"] == "note" and "literally" in f["message"]]
    assert note["subject"] == "proj/agent profile p"
    assert "hooks.execute.http.headers.Authorization" in note["message"]
    assert "hook_env.SERVICE_TOKEN" in note["message"] and "REGION" not in note["message"]
    assert "nothing redacts it" in note["message"], note["message"]
    assert "env" in note["fix"]
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    r = rook_cli("doctor", "-w", str(ws.root))
    assert "literally" not in r.stdout


def test_a_literal_credential_in_a_ruhroh_command_is_not_told_to_become_a_placeholder(
    rook_workspace, rook_cli, monkeypatch
):
    """A Ruhroh command line expands no {{env.NAME}} (it is not run through a shell,
    nor filled like an http: entry): doctor's fix, "write {{env.NAME}} in its place",
    had the wrapper get the text {{env.NAME}} as its key. For a field outside an
    http: entry the fix says to have the program read the variable instead."""
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", CORE_PLUGINS + ",ruhroh")
    ws = rook_workspace
    healthy(ws)
    secret = "sk-abcdefghijklmnopqrstuvwxyz123456"
    ws.script("w.sh", '#!/bin/bash\necho \'{"status": "goal_satisfied"}\'\n')
    command = f"scripts/w.sh --api-key {secret}"
    ws.profile({"id": "p", "hooks": {"execute": {"ruhroh": {"command": command}}}})
    r = rook_cli("doctor", "-w", str(ws.root), "--json")
    assert secret not in r.stdout + r.stderr
    (note,) = [
        f
        for f in json.loads(r.stdout)["findings"]
        if f["status"] == "note" and "literally" in f["message"]
    ]
    assert "hooks.execute.ruhroh.command" in note["message"], note
    assert "{{env." not in note["fix"], note["fix"]
    assert "read it from its environment" in note["fix"], note["fix"]


def test_a_literal_hook_env_credential_is_moved_to_env_by_name_not_by_placeholder(
    rook_workspace, rook_cli, monkeypatch
):
    """For a hook_env value written literally, doctor said to "declare the variable
    under env: and write {{env.NAME}} in its place": hook_env expands no
    placeholder, so a hook then got the text {{env.NAME}} as its token. Its fix
    says to declare the name under env: and delete it from hook_env (the hook
    reads the variable from the environment); {{env.NAME}} is for a hooks field."""
    monkeypatch.setenv("SERVICE_TOKEN", "st-real-value")
    ws = rook_workspace
    healthy(ws)
    ws.script(
        "token.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo "{\\"output\\": \\"token $SERVICE_TOKEN\\"}"
        """,
    )
    ws.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/token.sh"},
            "hook_env": {"SERVICE_TOKEN": "plain-looking-value"},
        }
    )
    r = rook_cli("doctor", "-w", str(ws.root), "--json")
    (note,) = [
        f for f in json.loads(r.stdout)["findings"] if f["status"] == "note" and "literally" in f["message"]
    ]
    assert "{{env." not in note["fix"], note["fix"]
    assert "SERVICE_TOKEN" in note["fix"] and "delete it from hook_env" in note["fix"], note["fix"]
    # the fix, followed, reaches the hook with the real value (redacted in the record)
    env = [{"variable": "SERVICE_TOKEN", "purpose": "the service token"}]
    ws.profile({"id": "p", "hooks": {"execute": "scripts/token.sh"}, "env": env})
    ws.scenario({"id": "t", "goal": "g", "criteria": [{"contains": "token [redacted:SERVICE_TOKEN]"}]})
    r = rook_cli("run", "--json")
    assert r.statuses()["t"] == "passed", r.report["scenarios"]
    r = rook_cli("doctor", "-w", str(ws.root))
    assert "literally" not in r.stdout


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("agent.py", "#!/usr/bin/env python3"),
        ("agent.mjs", "#!/usr/bin/env node"),
        ("agent.js", "#!/usr/bin/env node"),
        # `rook run` said "such as #!/bin/sh": a .sh hook is a bash script (SPEC §3 runs
        # one without the run bit with bash), and a .bash one was told /bin/sh too
        ("agent.sh", "#!/usr/bin/env bash"),
        ("agent.bash", "#!/usr/bin/env bash"),
    ],
)
def test_the_missing_shebang_suggested_fits_the_language(rook_workspace, rook_cli, name, line):
    """An executable agent.py with no #! line was told to begin with a bash line; the
    reference runs `your-script.mjs <phase>`, so the line to add is said exactly."""
    ws = rook_workspace
    healthy(ws)
    ws.script(name, "print('{}')\n", executable=True)
    ws.profile({"id": "p", "hooks": {"execute": f"scripts/{name}"}})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and "has no #! line" in p["message"]
    assert f"add {line} as its first line" in p["fix"], p["fix"]
    r = rook_cli("run", "-w", str(ws.root))
    assert r.exit_code == 2 and f"; add {line} as its first line" in r.stderr, r.stderr
    assert "such as" not in r.stderr, r.stderr
    # the line said, added, starts it
    script = ws.agent_dir / "scripts" / name
    body = {
        "python3": "print('{\"output\": \"ok\"}')",
        "node": "console.log(JSON.stringify({output: 'ok'}))",
        "bash": "echo '{\"output\": \"ok\"}'",
    }[line.rsplit(" ", 1)[-1]]
    script.write_text(f"{line}\n{body}\n")
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json", "-w", str(ws.root))
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr


@pytest.mark.parametrize("written", ["script/agent.sh", "agent.sh", "scripts/agent.py"])
def test_a_hook_path_that_misses_a_script_in_scripts_names_it(rook_workspace, rook_cli, written):
    """A folder typo, a bare name, another extension: the script is right there in the
    agent's scripts/ folder, and the message says so."""
    ws = rook_workspace
    healthy(ws)
    ws.profile({"id": "p", "hooks": {"execute": written}})
    code, findings = doctor(rook_cli, ws)
    (p,) = problems(findings)
    assert code == 1 and f"'{written}' not found" in p["message"]
    assert "did you mean scripts/agent.sh?" in p["message"], p["message"]
    r = rook_cli("run", "-w", str(ws.root))
    assert r.exit_code == 2 and "did you mean scripts/agent.sh?" in r.stderr, r.stderr


def test_help_and_behaviour_agree_on_which_agents_are_checked(rook_workspace, rook_cli):
    # --agent's help said "default: the only one, or config.yaml's", shared with
    # rook run, while doctor checks every agent of the workspace without a flag,
    # config.yaml or not: the help now says what doctor does
    from rook_core.testing import Workspace

    ws = rook_workspace
    healthy(ws)
    other = Workspace(ws.root, agent="other")
    healthy(other)
    (ws.root / ".testmuai/rook/config.yaml").write_text("project: proj\nagent: agent\n")
    code, findings = doctor(rook_cli, ws)
    subjects = {f["subject"].split()[0] for f in findings}
    assert {"proj/agent", "proj/other"} <= subjects, findings
    text = " ".join(rook_cli("doctor", "--help").stdout.split())
    assert "config.yaml's)" not in text, text
    assert "--agent AGENT Check this agent only (default: every agent" in text, text


def test_a_project_or_agent_that_leaves_the_other_to_choose_exits_2_as_the_help_says(
    rook_workspace, rook_cli
):
    # the help's exit codes said 2 only for a --project or --agent that does not
    # exist, while one that leaves the other to choose among several exits 2 too
    # (as rook run refuses it): the help now says so
    from rook_core.testing import Workspace

    ws = rook_workspace
    healthy(ws)
    healthy(Workspace(ws.root, agent="other"))
    r = rook_cli("doctor", "-w", str(ws.root), "--project", "proj")
    assert r.exit_code == 2 and "several agents (agent, other)" in r.stderr, r.stderr
    assert r.exception is None and r.stdout == ""
    text = " ".join(rook_cli("doctor", "--help").stdout.split())
    assert (
        "2: a --workspace (or ROOK_WORKSPACE_DIR) that names no directory, a --project or "
        "--agent that does not exist, or one given while the other is left to choose among "
        "several" in text
    ), text


def test_a_workspace_flag_naming_a_folder_inside_one_names_it(rook_workspace, rook_cli):
    # rook doctor -w ws/src said "no .testmuai/rook here or above", when one is
    # above (a --workspace is never searched upwards from); rook run names it
    healthy(rook_workspace)
    inside = rook_workspace.root / "src"
    inside.mkdir()
    r = rook_cli("doctor", "-w", str(inside), "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    [p] = problems(json.loads(r.stdout)["findings"])
    assert "here or above" not in p["message"], p
    assert f"it is inside the workspace {rook_workspace.root}" in p["message"], p
    assert p["fix"] == f"give -w {rook_workspace.root}", p
    run = rook_cli("run", "-w", str(inside))
    assert f"it is inside the workspace {rook_workspace.root}: give -w" in run.stderr


def test_a_workspace_inside_a_path_with_a_colon_and_a_blank_is_named_whole_and_quoted(
    tmp_path, monkeypatch
):
    # doctor cut "...; it is inside the workspace WS: give -w WS" at its last ': ',
    # so a workspace path holding one split the message in the wrong place; and the
    # fix's path was not quoted for the shell (a path with a blank could not be pasted)
    from rook_core.testing import RookCli

    root = tmp_path / "team ws: agents"
    root.mkdir()
    cli = RookCli(None)
    assert cli("init", "-w", str(root), "--project", "p", "--agent", "a").exit_code == 0
    (root / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    r = cli("doctor", "-w", str(root / "src"), "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    [p] = problems(json.loads(r.stdout)["findings"])
    assert p["message"].endswith(f"; it is inside the workspace {root.resolve()}"), p
    assert p["fix"] == f"give -w '{root.resolve()}'", p
    run = cli("run", "-w", str(root / "src"))
    assert run.exit_code == 2, run.stderr
    assert f"it is inside the workspace {root.resolve()}: give -w '{root.resolve()}'" in run.stderr
