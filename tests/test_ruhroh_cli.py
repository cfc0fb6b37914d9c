"""`rook profile add NAME --ruhroh CMD`, and an existing wrapper end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_ruhroh import BASH, PY


def profile_add(rook_cli, ws, *args):
    return rook_cli("profile", "add", "--workspace", str(ws.root), *args)


def test_profile_add_writes_a_ruhroh_profile(rook_workspace, rook_cli):
    ws = rook_workspace
    r = profile_add(
        rook_cli, ws, "Claude Code", "--ruhroh", f"{BASH} --fast", "--max-iterations", "7"
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    path = ws.agent_dir / "profiles" / "claude-code.yaml"
    data = yaml.safe_load(path.read_text())
    assert data == {
        "name": "Claude Code",
        "id": "claude-code",
        "hooks": {"execute": {"ruhroh": {"command": f"{BASH} --fast", "max_iterations": 7}}},
        # what `profile add` observed when it tested the wrapper: it reports usage, but
        # no sessionHandle (the handle Rook made up for it shows nothing: not multi_turn)
        "capabilities": {"multi_turn": False, "calls": False, "usage": True},
    }
    assert (ws.agent_dir / "profiles" / "active").read_text().strip() == "claude-code"
    ws.scenario({"id": "s", "goal": "a", "criteria": [{"status": "goal_satisfied"}]})
    run = rook_cli("run", "--json")
    assert run.exit_code == 0, run.stderr + run.stdout
    assert run.statuses() == {"s": "passed"}


def test_profile_add_observes_multi_turn_only_from_a_reported_handle(
    rook_workspace, rook_cli, monkeypatch
):
    ws = rook_workspace
    monkeypatch.setenv("WRAPPER_HANDLE", "native-42")
    assert profile_add(rook_cli, ws, "native", "--ruhroh", BASH).exit_code == 0
    data = yaml.safe_load((ws.agent_dir / "profiles" / "native.yaml").read_text())
    assert data["capabilities"]["multi_turn"] is True
    monkeypatch.delenv("WRAPPER_HANDLE")
    # --no-test assumes nothing
    assert profile_add(rook_cli, ws, "untested", "--ruhroh", BASH, "--no-test").exit_code == 0
    data = yaml.safe_load((ws.agent_dir / "profiles" / "untested.yaml").read_text())
    assert not (data.get("capabilities") or {}).get("multi_turn")
    # a claim of multi_turn by a wrapper that reports no handle is optimistic
    ws.profile(
        {
            "id": "claims",
            "hooks": {"execute": {"ruhroh": BASH}},
            "capabilities": {"multi_turn": True, "usage": True},
        }
    )
    tested = rook_cli("profile", "test", "claims", "--json", "--workspace", str(ws.root))
    assert tested.exit_code == 1, tested.stdout + tested.stderr
    doc = json.loads(tested.stdout)
    assert "multi_turn" not in doc["test"]["observed"]
    row = next(c for c in doc["capabilities"] if c["capability"] == "multi_turn")
    assert row["declared"] is True and row["observed"] is False


def test_profile_add_defaults_and_activation(rook_workspace, rook_cli):
    ws = rook_workspace
    shutil.copy(PY, ws.agent_dir / "scripts" / "my_agent.py")
    assert profile_add(rook_cli, ws, "--ruhroh", "scripts/my_agent.py").exit_code == 0
    assert (ws.agent_dir / "profiles" / "my_agent.yaml").is_file()
    r = profile_add(rook_cli, ws, "second", "--ruhroh", BASH)
    assert r.exit_code == 0
    assert (ws.agent_dir / "profiles" / "active").read_text().strip() == "my_agent"  # kept
    assert profile_add(rook_cli, ws, "third", "--ruhroh", BASH, "--use").exit_code == 0
    assert (ws.agent_dir / "profiles" / "active").read_text().strip() == "third"


def test_profile_add_refuses_mistakes(rook_workspace, rook_cli):
    ws = rook_workspace
    missing = profile_add(rook_cli, ws, "x", "--ruhroh", "./nowhere.sh")
    assert missing.exit_code == 2 and "not found" in missing.stderr
    assert not (ws.agent_dir / "profiles" / "x.yaml").exists()
    nosource = profile_add(rook_cli, ws, "x")
    assert nosource.exit_code == 2 and "--ruhroh" in nosource.stderr
    assert profile_add(rook_cli, ws, "x", "--ruhroh", BASH).exit_code == 0
    again = profile_add(rook_cli, ws, "x", "--ruhroh", BASH)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert profile_add(rook_cli, ws, "x", "--ruhroh", BASH, "--force").exit_code == 0
    bad = profile_add(rook_cli, ws, "!!!", "--ruhroh", BASH)
    assert bad.exit_code == 2 and "Traceback" not in bad.stderr


def test_installed_rook_runs_an_existing_wrapper(tmp_path):
    """The installed command, a fresh workspace, a wrapper written for Ruhroh."""
    # the command installed beside this Python (not a `rook` found on PATH: that can
    # be another environment's, running another checkout's Rook)
    rook = str(Path(sys.executable).parent / "rook")
    env = {**os.environ, "WRAPPER_PLAN": "continue,goal_satisfied"}
    env.pop("PROBE_DIR", None)

    def run(*args):
        return subprocess.run([rook, *args], cwd=tmp_path, env=env, capture_output=True, text=True)

    assert run("init", "--project", "p", "--agent", "a").returncode == 0
    added = run("profile", "add", "wrapped", "--ruhroh", BASH)
    assert added.returncode == 0, added.stderr
    scenarios = tmp_path / ".testmuai/rook/projects/p/agents/a/scenarios"
    (scenarios / "s.yaml").write_text(
        "id: s\ngoal: ship it\ncriteria:\n  - status: goal_satisfied\n  - contains: reply 2\n"
    )
    done = run("run", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    turn = report["scenarios"][0]["turns"][0]
    assert [i["message"] for i in turn["evidence"]["iterations"]] == ["ship it", "continue"]
    assert (Path(report["run"]["dir"]) / "ruhroh-run-manifest.json").is_file()


def test_a_script_given_to_an_interpreter_is_found_like_the_wrapper_itself(
    rook_workspace, rook_cli
):
    # `--ruhroh "python3 wrappers/pw.py"` looked up python3 only: the script path
    # went to the wrapper as it was, relative to the scenario's fresh workspace
    # (RUHROH_WORKSPACE) where it runs, so profile add's test and every run failed
    # with "can't open file .../ruhroh/workspace/wrappers/pw.py"
    ws = rook_workspace
    (ws.root / "wrappers").mkdir()
    (ws.root / "wrappers" / "pw.py").write_text(
        "import json, os\n"
        'print(json.dumps({"status": "goal_satisfied", "output": "py " + os.getcwd()}))\n'
    )
    (ws.agent_dir / "scripts" / "nw.mjs").write_text(
        'console.log(JSON.stringify({status: "goal_satisfied", output: "node ok"}))\n'
    )
    r = profile_add(rook_cli, ws, "pw", "--ruhroh", "python3 wrappers/pw.py")
    assert r.exit_code == 0, r.stdout + r.stderr
    data = yaml.safe_load((ws.agent_dir / "profiles" / "pw.yaml").read_text())
    assert data["hooks"]["execute"]["ruhroh"]["command"] == "python3 wrappers/pw.py"
    ws.scenario({"id": "s", "goal": "a", "criteria": [{"contains": "py "}]})
    run = rook_cli("run", "--json")
    assert run.statuses() == {"s": "passed"}, run.stderr + run.stdout
    # it still works in the scenario's workspace, never the checkout
    assert "/ruhroh/workspace" in run.report["scenarios"][0]["turns"][0]["output"]
    if shutil.which("node"):  # relative to the agent's folder, as for the wrapper
        r = profile_add(rook_cli, ws, "nw", "--ruhroh", "node scripts/nw.mjs", "--use")
        assert r.exit_code == 0, r.stdout + r.stderr
        ws.scenario({"id": "s", "goal": "a", "criteria": [{"contains": "node ok"}]})
        assert rook_cli("run", "--json").statuses() == {"s": "passed"}


def test_a_script_in_the_workspace_template_is_left_to_the_scenarios_copy(
    rook_workspace, rook_cli
):
    # the template's copy is what runs, even when the checkout has a file of that name
    ws = rook_workspace
    template = ws.agent_dir / "fixtures" / "repo"
    template.mkdir(parents=True)
    (template / "run.sh").write_text('echo \'{"status":"goal_satisfied","output":"template"}\'\n')
    (ws.root / "run.sh").write_text('echo \'{"status":"goal_satisfied","output":"checkout"}\'\n')
    ws.profile(
        {
            "id": "rr",
            "hooks": {
                "execute": {"ruhroh": {"command": "bash run.sh", "workspace_template": "fixtures/repo"}}
            },
        }
    )
    ws.scenario({"id": "s", "goal": "a", "criteria": [{"contains": "template"}]})
    run = rook_cli("run", "--json")
    assert run.statuses() == {"s": "passed"}, run.stderr + run.stdout


def test_a_missing_script_given_to_an_interpreter_is_refused_before_anything_runs(
    rook_workspace, rook_cli
):
    # `--ruhroh "python3 wrappers/missing.py"` wrote a profile that could never work
    # (exit 1, "can't open file" in the scenario's workspace), and a profile naming
    # it errored every scenario, where a missing wrapper is refused (exit 2)
    ws = rook_workspace
    r = profile_add(rook_cli, ws, "miss", "--ruhroh", "python3 wrappers/missing.py")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "wrappers/missing.py' not found" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (ws.agent_dir / "profiles" / "miss.yaml").exists()
    ws.profile({"id": "rr", "hooks": {"execute": {"ruhroh": "node ./gone/w.mjs"}}})
    ws.scenario({"id": "s", "goal": "a", "criteria": [{"contains": "x"}]})
    run = rook_cli("run")
    assert run.exit_code == 2, run.stdout + run.stderr
    assert "'./gone/w.mjs' not found" in run.stderr and "tried" in run.stderr, run.stderr
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


def test_variables_set_before_the_wrapper_in_its_command_line(rook_workspace, rook_cli):
    # `MODE=fast ./wrappers/w.sh` was refused as "'MODE=fast' is not installed (not
    # on PATH)"; `env MODE=fast ./wrappers/w.sh` was written, and every call failed:
    # env looked for ./wrappers/w.sh in the scenario's workspace
    ws = rook_workspace
    (ws.root / "wrappers").mkdir()
    wrapper = ws.root / "wrappers" / "w.sh"
    wrapper.write_text('#!/bin/bash\necho "{\\"status\\":\\"goal_satisfied\\",\\"output\\":\\"mode $MODE\\"}"\n')
    wrapper.chmod(0o755)
    r = profile_add(rook_cli, ws, "bare", "--ruhroh", "MODE=fast ./wrappers/w.sh")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "starts with MODE=..., which sets a variable" in r.stderr, r.stderr
    assert "hook_env" in r.stderr and "fast" not in r.stderr, r.stderr
    assert not (ws.agent_dir / "profiles" / "bare.yaml").exists()
    r = profile_add(rook_cli, ws, "viaenv", "--ruhroh", "env MODE=fast ./wrappers/w.sh")
    assert r.exit_code == 0, r.stdout + r.stderr
    ws.scenario({"id": "s", "goal": "a", "criteria": [{"contains": "mode fast"}]})
    run = rook_cli("run", "--json")
    assert run.statuses() == {"s": "passed"}, run.stderr + run.stdout


@pytest.mark.parametrize(
    "assigned,said",
    [
        ("RUHROH_SCENARIO_ID=mine", "which Rook sets itself"),  # the wrapper got 'mine'
        ("RUHROH_RUN_SEED=4242", "hook_env"),  # RUHROH_SAMPLE_SEED ignored it
        ("RUHROH_AGENT_MODEL=m-env", "hook_env"),  # the manifest left it out
    ],
)
def test_a_ruhroh_variable_set_after_env_in_the_command_line_is_refused(
    assigned, said, rook_workspace, rook_cli
):
    ws = rook_workspace
    (ws.root / "wrappers").mkdir()
    wrapper = ws.root / "wrappers" / "w.sh"
    wrapper.write_text('#!/bin/bash\necho "{\\"status\\":\\"goal_satisfied\\"}"\n')
    wrapper.chmod(0o755)
    name, value = assigned.split("=")
    command = f"env MODE=fast {assigned} ./wrappers/w.sh"
    r = profile_add(rook_cli, ws, "viaenv", "--ruhroh", command)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert name in r.stderr and said in r.stderr and value not in r.stderr, r.stderr
    assert not (ws.agent_dir / "profiles" / "viaenv.yaml").exists()
    ws.profile({"id": "rr", "hooks": {"execute": {"ruhroh": {"command": command}}}})
    ws.scenario({"id": "s", "goal": "a", "criteria": [{"status": "goal_satisfied"}]})
    run = rook_cli("run")
    assert run.exit_code == 2, run.stdout + run.stderr
    assert name in run.stderr and said in run.stderr and "Traceback" not in run.stderr
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


def test_a_placeholder_in_a_wrapper_command_line_is_refused(rook_workspace, rook_cli, monkeypatch):
    # `./wrappers/w.sh --api-key {{env.KEY}}` ran the wrapper with the text
    # {{env.KEY}} as its key: a command line is not filled like an http: entry
    monkeypatch.setenv("KEY", "real-key-value")
    ws = rook_workspace
    (ws.root / "wrappers").mkdir()
    wrapper = ws.root / "wrappers" / "w.sh"
    wrapper.write_text('#!/bin/bash\necho "{\\"status\\":\\"goal_satisfied\\",\\"output\\":\\"$2\\"}"\n')
    wrapper.chmod(0o755)
    env = [{"variable": "KEY", "purpose": "the agent's key"}]
    for entry in ("./wrappers/w.sh --api-key {{env.KEY}}", ["./wrappers/w.sh", "{{ env.KEY }}"]):
        ws.profile({"id": "rr", "hooks": {"execute": {"ruhroh": {"command": entry}}}, "env": env})
        ws.scenario({"id": "s", "goal": "a", "criteria": [{"contains": "real"}]})
        run = rook_cli("run")
        assert run.exit_code == 2, run.stdout + run.stderr
        assert "{{env.KEY}}" in run.stderr.replace(" ", "") and "as written" in run.stderr, run.stderr
        assert "real-key-value" not in run.stderr
        assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


def test_an_empty_answer_from_a_wrapper_is_not_blamed_on_standard_input(
    rook_workspace, rook_cli
):
    # the protocol's own minimal wrapper, {"status":"goal_satisfied"} alone, was told
    # "the agent said nothing to the goal (it comes on standard input ...)": a wrapper
    # gets the goal in RUHROH_MESSAGE, and its standard input is empty by design
    ws = rook_workspace
    (ws.root / "wrappers").mkdir()
    wrapper = ws.root / "wrappers" / "min.sh"
    wrapper.write_text('#!/bin/bash\nprintf \'{"status":"goal_satisfied"}\\n\'\n')
    wrapper.chmod(0o755)
    r = profile_add(rook_cli, ws, "min", "--ruhroh", "./wrappers/min.sh")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: \n" in r.stdout
    assert "standard input" not in r.stdout, r.stdout
    assert "the answer is empty: the wrapper reported none" in r.stdout, r.stdout
    assert "RUHROH_MESSAGE" in r.stdout and "output" in r.stdout
    r = rook_cli("profile", "test", "min", "-w", str(ws.root))
    assert "standard input" not in r.stdout and "the wrapper reported none" in r.stdout
    # the same wrapper as the built-in connector
    entry = {"connector": {"name": "ruhroh-command", "command": "./wrappers/min.sh"}}
    ws.profile({"id": "conn", "hooks": {"execute": entry}})
    r = rook_cli("profile", "test", "conn", "-w", str(ws.root))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "standard input" not in r.stdout and "RUHROH_MESSAGE" in r.stdout, r.stdout


def test_a_wrapper_reads_nothing_on_standard_input_whatever_rook_was_given(rook_workspace):
    # "Standard input is empty": the text comes in RUHROH_MESSAGE, never what was typed
    # (or piped) into rook run, which a wrapper reading its standard input would take
    ws = rook_workspace
    wrapper = ws.script(
        "stdin.sh",
        """
        #!/bin/bash
        got=$(head -c 100 | tr -d '\\n')
        echo "{\\"status\\":\\"goal_satisfied\\",\\"output\\":\\"stdin=[$got]\\"}"
        """,
    )
    ws.profile({"id": "in", "hooks": {"execute": {"ruhroh": str(wrapper)}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "stdin=[]"}]})
    argv = [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json"]
    env = {k: v for k, v in os.environ.items() if k != "PROBE_DIR"}
    done = subprocess.run(argv, input="typed at the terminal\n", capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip
    report = json.loads(done.stdout)
    assert report["scenarios"][0]["turns"][0]["output"] == "stdin=[]", done.stderr
    assert done.returncode == 0


def test_the_wait_announced_for_a_wrapper_counts_its_iterations(rook_workspace, rook_cli):
    # "trying the agent: a ruhroh entry (up to 2 s)" was said before a test that could
    # call the wrapper max_iterations times, each up to the entry's timeout: a wrapper
    # answering continue ran 5 calls of 1.5 s, past the 2 s it announced
    ws = rook_workspace
    ws.profile(
        {
            "id": "loop",
            "hooks": {
                "execute": {"ruhroh": {"command": BASH, "max_iterations": 3}, "timeout_seconds": 2}
            },
        }
    )
    r = rook_cli("profile", "test", "loop", "-w", str(ws.root))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"trying the agent: {BASH} (up to 3 iterations of up to 2 s each)\n" in r.stderr


def test_the_wait_announced_for_a_wrapper_names_its_command_with_no_secret(
    rook_workspace, rook_cli
):
    # "trying the agent: a ruhroh entry (...)" named no wrapper, where a script hook's
    # names its path and an http: entry's its URL: which of the profile's wrappers it
    # waits for is its command line, with a key written in it hidden (as profile show does)
    ws = rook_workspace
    key = "sk-live-" + "4f9a2c" * 4
    ws.profile(
        {
            "id": "one",
            "hooks": {"execute": {"ruhroh": {"command": f"{BASH} --fast --api-key {key}"}}},
        }
    )
    ws.profile({"id": "two", "hooks": {"execute": {"ruhroh": {"command": [BASH, "--fast"]}}}})
    for name, shown in (("one", f"{BASH} --fast --api-key [hidden]"), ("two", f"{BASH} --fast")):
        r = rook_cli("profile", "test", name, "-w", str(ws.root))
        assert r.exit_code == 0, r.stdout + r.stderr
        assert f"trying the agent: {shown} (up to 5 iterations of up to 300 s each)\n" in r.stderr
        assert key not in r.stdout + r.stderr


COST_ONLY = r"""
#!/usr/bin/env python3
import json, os
usage = json.loads(os.environ.get("WRAPPER_USAGE", '{"costUsd": 0.1}'))
print(json.dumps({"status": "goal_satisfied", "output": "ok", "usage": usage}))
"""


def test_a_cost_only_wrapper_can_be_held_to_a_cost_budget(rook_workspace, rook_cli, monkeypatch):
    """A wrapper that reports costUsd and no token counts shows no usage capability
    (that is token counts), yet max_cost judges what it reports: it is never
    not_runnable for want of token counts. With no cost at all it is unverifiable."""
    ws = rook_workspace
    ws.script("cost.py", COST_ONLY)
    assert profile_add(rook_cli, ws, "cost", "--ruhroh", "scripts/cost.py").exit_code == 0
    data = yaml.safe_load((ws.agent_dir / "profiles" / "cost.yaml").read_text())
    assert data["capabilities"]["usage"] is False  # no token count was observed
    ws.scenario({"id": "cheap", "goal": "g", "criteria": [{"max_cost": 0.5}]})
    ws.scenario({"id": "dear", "goal": "g", "criteria": [{"max_cost": 0.05}]})
    ws.scenario({"id": "tokens", "goal": "g", "criteria": [{"max_tokens": 100}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"cheap": "passed", "dear": "failed", "tokens": "not_runnable"}, (
        r.stdout + r.stderr
    )
    monkeypatch.setenv("WRAPPER_USAGE", "{}")  # no cost at all: not a pass
    r = rook_cli("run", "--json", "--only", "cheap")
    assert r.statuses() == {"cheap": "unverifiable"}, r.stdout + r.stderr


def test_a_wrapper_reporting_infra_failure_is_not_sent_to_profile_fix(rook_workspace, rook_cli):
    # infra_failure is not counted against the agent, nor the profile: profile add said
    # 'the profile does not work yet; next: rook profile fix NAME', and profile test and
    # fix sent the user to an author agent, which would rewrite a profile that works
    ws = rook_workspace
    wrapper = ws.script(
        "down.sh",
        """
        #!/bin/bash
        echo '{"status":"infra_failure","error":"sandbox unavailable"}'
        """,
    )
    r = profile_add(rook_cli, ws, "sandboxed", "--ruhroh", str(wrapper))
    assert r.exit_code == 1, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert "rook profile fix" not in said and "does not work" not in said, said
    assert "infrastructure" in said and "then: rook profile test sandboxed" in said, said
    assert (ws.agent_dir / "profiles" / "sandboxed.yaml").exists()  # written, as it is
    t = rook_cli("profile", "test", "sandboxed", "-w", str(ws.root))
    assert t.exit_code == 1 and "rook profile fix" not in t.stdout + t.stderr, t.stdout
    assert "next: try again when the agent's infrastructure is up" in t.stdout, t.stdout
    f = rook_cli("profile", "fix", "sandboxed", "-w", str(ws.root))
    assert f.exit_code == 1 and "author agent" not in f.stdout, f.stdout + f.stderr
    assert "next: try again when the agent's infrastructure is up" in f.stdout, f.stdout


@pytest.mark.parametrize(
    ("status", "said"),
    [
        ("policy_blocked", "it refused the test goal"),
        ("cannot_satisfy", "it could not satisfy the test goal"),
    ],
)
def test_a_wrapper_that_refuses_the_test_goal_is_said_to_have_refused(
    rook_workspace, rook_cli, status, said
):
    # a wrapper answering policy_blocked (or cannot_satisfy) to 'Say hello' was reported
    # plainly "ok", its status shown nowhere but in the --json turns' evidence. The profile
    # works (the turn completes, SPEC §7), so the test passes, with a warning saying so
    ws = rook_workspace
    wrapper = ws.script(
        "refuse.sh",
        f"""
        #!/bin/bash
        echo '{{"status":"{status}","message":"I cannot help with that"}}'
        """,
    )
    r = profile_add(rook_cli, ws, "refuser", "--ruhroh", str(wrapper))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"warning: the agent answered {status}: {said}" in r.stdout, r.stdout
    assert (ws.agent_dir / "profiles" / "refuser.yaml").exists()
    t = rook_cli("profile", "test", "refuser", "-w", str(ws.root))
    assert t.exit_code == 0, t.stdout + t.stderr
    assert f"warning: the agent answered {status}: {said}" in t.stdout, t.stdout
    j = rook_cli("profile", "test", "refuser", "--json", "-w", str(ws.root))
    test = json.loads(j.stdout)["test"]
    assert test["ok"] is True
    assert any(f"the agent answered {status}" in w for w in test["warnings"]), test
