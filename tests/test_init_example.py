"""``rook init``: the layout, and ``--example``: a working sample agent, so that
``rook run`` right after passes (in process and as a real ``rook`` process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

AGENT = (".testmuai", "rook", "projects", "demo", "agents", "sample")


def agent_dir(root):
    return root.joinpath(*AGENT)


def test_init_makes_the_layout(tmp_path, rook_cli):
    r = rook_cli("init", "--project", "demo", "--agent", "sample", "-w", str(tmp_path))
    assert r.exit_code == 0, r.stderr
    for sub in ("profiles", "scripts", "scenarios", "runs"):
        assert (agent_dir(tmp_path) / sub).is_dir()
    assert list((agent_dir(tmp_path) / "profiles").iterdir()) == []


def test_init_of_an_agent_that_exists_says_so_not_created(tmp_path, rook_cli):
    # a second rook init of the same agent said "created DIR", as if it were new
    args = ("init", "--project", "demo", "--agent", "sample", "-w", str(tmp_path))
    assert rook_cli(*args).stdout.startswith(f"created {agent_dir(tmp_path)}\n")
    (agent_dir(tmp_path) / "scripts").rmdir()
    r = rook_cli(*args)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(
        f"exists already: {agent_dir(tmp_path)} (missing folders made)\n"
    ), r.stdout
    assert (agent_dir(tmp_path) / "scripts").is_dir()


def test_init_example_then_run_passes(tmp_path, rook_cli):
    r = rook_cli("init", "--project", "demo", "--agent", "sample", "--example", "-w", str(tmp_path))
    assert r.exit_code == 0, r.stderr
    assert "next: rook run -w" in r.stdout
    d = agent_dir(tmp_path)
    assert (d / "profiles" / "active").read_text().strip() == "example"
    assert (d / "scripts" / "example_agent.py").is_file()
    assert sorted(p.name for p in (d / "scenarios").iterdir()) == [
        "greeting.yaml",
        "keep-order.yaml",
        "order-status.yaml",
    ]
    r = rook_cli("run", "--workspace", str(tmp_path), "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"greeting": "passed", "keep-order": "passed", "order-status": "passed"}
    observed = r.report["run"]["capabilities"]["observed"]
    assert observed == {"multi_turn": True, "calls": True, "usage": True}, (
        "the sample shows every capability it declares"
    )
    keep = next(s for s in r.report["scenarios"] if s["id"] == "keep-order")
    assert (
        len(keep["turns"]) == 2
        and keep["turns"][1]["conversation"] == keep["turns"][0]["conversation"]
    )


def test_the_example_is_a_real_program_run_by_a_real_rook(tmp_path):
    """What a new user types: init, then run, in the same directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
    rook = [sys.executable, "-m", "rook_core"]
    r = subprocess.run(
        [*rook, "init", "--project", "demo", "--agent", "sample", "--example"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "next: rook run     (then edit scripts/example_agent.py)" in r.stdout
    r = subprocess.run(
        [*rook, "run", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert {s["status"] for s in json.loads(r.stdout)["scenarios"]} == {"passed"}
    r = subprocess.run(
        [*rook, "doctor"],
        cwd=tmp_path,
        env={**env, "ROOK_LOAD_PLUGINS": "script,criteria,executor_local,reporters"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and "no problems found" in r.stdout, r.stdout


def test_the_next_command_names_the_workspace_when_rook_workspace_dir_points_elsewhere(tmp_path):
    """init's workspace is -w or cwd, but rook run's is ROOK_WORKSPACE_DIR first: the
    printed 'next: rook run' ran that other workspace, not the example."""
    import shlex

    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}

    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
    rook = [sys.executable, "-m", "rook_core"]
    other, here = tmp_path / "other", tmp_path / "here"
    here.mkdir()
    r = subprocess.run([*rook, "init", "--project", "o", "--agent", "o", "-w", str(other)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    env["ROOK_WORKSPACE_DIR"] = str(other)
    r = subprocess.run([*rook, "init", "--project", "demo", "--agent", "sample", "--example"],
                       cwd=here, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("next: rook run"))
    assert f"-w {here.resolve()}" in line, line
    args = shlex.split(line.split("rook", 1)[1].split("(", 1)[0])
    r = subprocess.run([*rook, *args, "--json"], cwd=here, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["run"]["agent"] == "sample"


def test_init_warns_when_rook_workspace_dir_names_another_workspace(tmp_path):
    """With ROOK_WORKSPACE_DIR exported (running.md shows it), rook init made the agent
    in the current directory without a word, and every later command (rook run
    --agent NEW, rook profile add) looked in ROOK_WORKSPACE_DIR: 'agent not found'."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
    rook = [sys.executable, "-m", "rook_core"]
    other, here = tmp_path / "other ws", tmp_path / "here"
    here.mkdir()
    r = subprocess.run([*rook, "init", "--project", "demo", "--agent", "a", "-w", str(other)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    env["ROOK_WORKSPACE_DIR"] = str(other)
    r = subprocess.run([*rook, "init", "--project", "demo", "--agent", "second"],
                       cwd=here, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (here / ".testmuai" / "rook" / "projects" / "demo" / "agents" / "second").is_dir()
    assert (
        f"rook: warning: ROOK_WORKSPACE_DIR names {other}, the workspace the other rook "
        f"commands use, but rook init made the agent in {here.resolve()}" in r.stderr
    ), r.stderr
    assert f"rook init --project demo --agent second -w '{other}'" in r.stderr, r.stderr
    r = subprocess.run([*rook, "init", "--project", "demo", "--agent", "second", "-w",
                        str(other)], cwd=here, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    r = subprocess.run([*rook, "init", "--project", "demo", "--agent", "third"],
                       cwd=other, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_init_expands_a_tilde_in_the_workspace_as_rook_run_does(tmp_path):
    """`rook init -w '~/ws'` (a quoted ~, as a CI file passes it) made a folder named
    '~' in the current directory, while `rook run -w '~/ws'` reads the home one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
    home, here = tmp_path / "home", tmp_path / "here"
    home.mkdir()
    here.mkdir()
    env["HOME"] = str(home)
    rook = [sys.executable, "-m", "rook_core"]
    r = subprocess.run([*rook, "init", "--project", "demo", "--agent", "sample", "--example",
                        "-w", "~/ws"], cwd=here, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert list(here.iterdir()) == [], "a folder named ~ was made in the current directory"
    assert agent_dir(home / "ws").is_dir()
    assert f"next: rook run -w {home / 'ws'}" in r.stdout, r.stdout
    r = subprocess.run([*rook, "run", "-w", "~/ws", "--json"], cwd=here, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["summary"]["passed"] == 3, r.stderr


def test_the_sample_agent_catches_a_regression(tmp_path, rook_cli):
    """The sample is a real agent: break it and a scenario fails."""
    rook_cli("init", "--project", "demo", "--agent", "sample", "--example", "-w", str(tmp_path))
    script = agent_dir(tmp_path) / "scripts" / "example_agent.py"
    text = script.read_text()
    script.write_text(
        text.replace('if "cancel" in lowered and "yes" in lowered:', 'if "cancel" in lowered:')
    )
    r = rook_cli("run", "--workspace", str(tmp_path), "--json")
    assert r.exit_code == 1
    assert r.statuses()["keep-order"] == "failed"


def test_example_refuses_to_overwrite_and_writes_nothing(tmp_path, rook_cli):
    rook_cli("init", "--project", "demo", "--agent", "sample", "--example", "-w", str(tmp_path))
    script = agent_dir(tmp_path) / "scripts" / "example_agent.py"
    script.write_text("# my edits\n")
    (agent_dir(tmp_path) / "scenarios" / "greeting.yaml").unlink()
    r = rook_cli("init", "--project", "demo", "--agent", "sample", "--example", "-w", str(tmp_path))
    assert r.exit_code == 2
    assert "these files exist already, nothing was written" in r.stderr
    assert r.stdout == ""  # it said "created ..." before refusing
    assert str(script) in r.stderr
    assert script.read_text() == "# my edits\n"
    assert not (agent_dir(tmp_path) / "scenarios" / "greeting.yaml").exists()


def test_a_second_agent_gets_the_selecting_run_command(tmp_path, rook_cli):
    rook_cli("init", "--project", "demo", "--agent", "first", "-w", str(tmp_path))
    r = rook_cli("init", "--project", "demo", "--agent", "sample", "--example", "-w", str(tmp_path))
    assert f"next: rook run -w {tmp_path} --project demo --agent sample" in r.stdout
    r = rook_cli(
        "run", "--workspace", str(tmp_path), "--project", "demo", "--agent", "sample", "--json"
    )
    assert r.exit_code == 0, r.stderr


@pytest.mark.parametrize("name", ["bad name", "../up", "", ".hidden", "-x", "_a"])
@pytest.mark.parametrize("flag", ["--agent", "--project"])
def test_bad_names_are_refused(tmp_path, rook_cli, name, flag):
    # getting-started.md: letters, digits, '.', '_' and '-', starting with a letter
    # or digit ('.hidden' or '-x' is refused, exit 2)
    names = {"--project": "demo", "--agent": "a", flag: name}
    r = rook_cli("init", "--project", names["--project"], "--agent", names["--agent"],
                 "--example", "-w", str(tmp_path))
    assert r.exit_code == 2 and flag in r.stderr, r.stderr
    assert not (tmp_path / ".testmuai").exists() or not any(
        (tmp_path / ".testmuai").rglob("example_agent.py")
    )


def test_the_templates_ship_as_package_data():
    """pyproject.toml's package-data covers every template file (checked for real by
    the installed-package test in tests/test_third_party_plugin.py)."""
    from rook_core.cli.init import example_files

    names = sorted(rel for rel, _ in example_files())
    assert names == [
        "profiles/active",
        "profiles/example.yaml",
        "scenarios/greeting.yaml",
        "scenarios/keep-order.yaml",
        "scenarios/order-status.yaml",
        "scripts/example_agent.py",
    ]


def test_init_inside_a_workspace_warns_naming_the_outer_one(tmp_path, rook_cli):
    """``rook init`` in a folder below a workspace silently made a second, nested
    workspace (and later commands there use it, not the outer one). It still does,
    but says so on stderr, naming the outer workspace and how to add to it."""
    outer = tmp_path / "my ws"
    rook_cli("init", "--project", "demo", "--agent", "sample", "-w", str(outer))
    inner = outer / "src" / "app"
    inner.mkdir(parents=True)
    r = rook_cli("init", "--project", "demo", "--agent", "bot", "-w", str(inner))
    assert r.exit_code == 0, r.stderr
    assert (inner / ".testmuai" / "rook" / "projects" / "demo" / "agents" / "bot").is_dir()
    assert f"warning: {inner} is inside the workspace {outer}" in r.stderr, r.stderr
    assert f"rook init --project demo --agent bot -w '{outer}'" in r.stderr
    r = rook_cli("init", "--project", "demo", "--agent", "bot2", "-w", str(inner))
    assert "warning" not in r.stderr  # that workspace exists already: nothing new is made
    r = rook_cli("init", "--project", "demo", "--agent", "other", "-w", str(outer))
    assert "warning" not in r.stderr


def test_init_without_the_example_names_rook_profile_add(tmp_path, rook_cli, monkeypatch):
    """The next step printed was 'add a profile in profiles/, a hook script in scripts/,
    scenarios in scenarios/': nothing said that rook profile add writes the profile
    (and its script) from what reaches the agent, the step a new user needs."""
    monkeypatch.chdir(tmp_path)
    r = rook_cli("init", "--project", "demo", "--agent", "bot")
    assert r.exit_code == 0, r.stderr
    assert "next: rook profile add --command 'CMD'" in r.stdout, r.stdout
    assert "profiles/NAME.yaml" in r.stdout and "scenarios/" in r.stdout
    r = rook_cli("init", "--project", "demo", "--agent", "bot2")  # two agents: name it
    assert "next: rook profile add --project demo --agent bot2 --command 'CMD'" in r.stdout
    r = rook_cli("init", "--project", "demo", "--agent", "bot3", "-w", str(tmp_path / "other"))
    assert f"next: rook profile add -w {tmp_path / 'other'} --command 'CMD'" in r.stdout
