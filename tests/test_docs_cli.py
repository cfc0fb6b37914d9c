"""The command line documents itself: every command's ``--help`` has an example, and
``rook completion bash|zsh|fish`` prints a completion script that really completes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import click
import pytest

from rook_core.cli import cli


def all_commands():
    found = []

    def walk(cmd, path, parent):
        ctx = click.Context(cmd, info_name=path[-1], parent=parent)
        found.append((" ".join(path), cmd, ctx))
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name], ctx)

    walk(cli, ["rook"], None)
    return found


@pytest.mark.parametrize("path", [p for p, _, _ in all_commands()])
def test_every_command_has_help_with_an_example(path, rook_cli):
    r = rook_cli(*path.split()[1:], "--help")
    assert r.exit_code == 0, r.stderr
    assert "Usage: " in r.stdout
    assert "Example" in r.stdout, f"`{path} --help` shows no example"
    assert any(
        line.strip().startswith(("rook ", 'eval "$(rook'))
        for line in r.stdout.splitlines()
        if line.startswith("    ")
    ), f"`{path} --help`: examples are rook command lines"


def test_every_command_has_a_short_help():
    for path, cmd, _ctx in all_commands()[1:]:
        assert cmd.get_short_help_str(limit=100).strip(), f"{path}: no one-line help"



def test_every_option_says_what_it_takes():
    # rook init --project TEXT, run --executor TEXT, -j INTEGER RANGE: click's type
    # names, where the docs write PROJECT, NAME and N; TEXT is left for free text
    free_text = {"--goal", "--what", "--notes"}
    for path, cmd, ctx in all_commands():
        for param in cmd.params:
            if not isinstance(param, click.Option) or param.is_flag or param.hidden:
                continue
            try:
                shown = param.make_metavar(ctx)  # click 8.2 and later
            except TypeError:
                shown = param.make_metavar()  # type: ignore[call-arg]
            if shown.isupper() and shown in ("TEXT", "INTEGER", "INTEGER RANGE", "FLOAT"):
                assert set(param.opts) & free_text and shown == "TEXT", (path, param.opts, shown)


@pytest.fixture
def rook_bin(tmp_path):
    """A `rook` on PATH that runs the Rook under test, and a HOME of its own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    rook = bin_dir / "rook"
    rook.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rook_core "$@"\n')
    rook.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOK_", "_ROOK", "XDG_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
    home = tmp_path / "home"  # zsh's compinit and fish write their files under HOME
    home.mkdir()
    env["HOME"] = str(home)
    return env


@pytest.mark.parametrize(
    "shell,marker",
    [
        ("bash", "complete -o nosort -F _rook_completion rook"),
        ("zsh", "#compdef rook"),
        ("fish", "complete --no-files --command rook"),
    ],
)
def test_completion_prints_the_script(rook_cli, shell, marker):
    r = rook_cli("completion", shell)
    assert r.exit_code == 0, r.stderr
    assert marker in r.stdout and "_ROOK_COMPLETE" in r.stdout


def test_completion_refuses_an_unknown_shell(rook_cli):
    r = rook_cli("completion", "powershell")
    assert r.exit_code == 2 and "'bash', 'zsh', 'fish'" in r.stderr


def test_bash_completes_commands_and_options_for_real(rook_bin):
    """Source the script in a real bash and call its completion function."""
    script = subprocess.run(
        ["rook", "completion", "bash"],
        env=rook_bin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout

    def complete(words: str) -> list[str]:
        program = (
            f"{script}\n"
            f"COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n"
            "_rook_completion rook\n"
            'printf "%s\\n" "${COMPREPLY[@]}"\n'
        )
        r = subprocess.run(
            ["bash", "-c", program], env=rook_bin, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, r.stderr
        return r.stdout.split()

    assert {"run", "doctor", "init", "completion", "plugins"} <= set(complete("rook ''"))
    assert complete("rook do") == ["doctor"]
    assert "--example" in complete("rook init --ex")
    assert complete("rook completion f") == ["fish"]


def test_bash_completes_profiles_scenarios_and_runs_of_the_workspace(rook_bin, tmp_path):
    """Tab offered nothing for --profile, --only, --run and a run's ID: it now
    offers the agent's profile ids, scenario ids (the item after a comma too)
    and runs (latest first), read from the workspace the command would use
    (its -w too); where there is none, nothing, and nothing printed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for argv in (["init", "--project", "demo", "--agent", "sample", "--example"], ["run", "-q"]):
        subprocess.run(["rook", *argv], cwd=ws, env=rook_bin, capture_output=True, timeout=60,
                       check=True)
    agent = ws / ".testmuai/rook/projects/demo/agents/sample"
    (agent / "profiles/staging.yaml").write_text(
        (agent / "profiles/example.yaml").read_text().replace("id: example", "id: staging"))
    (run_id,) = os.listdir(agent / "runs")
    script = subprocess.run(["rook", "completion", "bash"], env=rook_bin, capture_output=True,
                            text=True, timeout=60, check=True).stdout

    def complete(words: str, cwd=ws) -> tuple[list[str], str]:
        program = (
            f"{script}\n"
            f"COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n"
            "_rook_completion rook\n"
            'printf "%s\\n" "${COMPREPLY[@]}"\n'
        )
        r = subprocess.run(["bash", "-c", program], cwd=cwd, env=rook_bin, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.split(), r.stderr

    assert complete("rook run --profile ''")[0] == ["example", "staging"]
    assert complete("rook runs --profile st")[0] == ["staging"]
    assert complete("rook run --only ''")[0] == ["greeting", "keep-order", "order-status"]
    assert complete("rook run --only greeting,k")[0] == ["greeting,keep-order"]
    for words in ("rook run --run ''", "rook runs show ''", "rook diff latest ''",
                  "rook report ''", "rook merge --run ''"):
        assert complete(words)[0] == ["latest", run_id], words
    assert complete(f"rook run -w {ws} --profile ''", cwd=tmp_path)[0] == ["example", "staging"]
    assert complete("rook run --profile ''", cwd=tmp_path) == ([], "")  # no workspace here
    assert complete(f"rook runs show -w {tmp_path}/none ''") == ([], "")


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_protocols_answer(rook_bin, shell):
    """The scripts call `rook` with _ROOK_COMPLETE=<shell>_complete; check that answer
    (and, when the shell is installed, that it loads the script)."""
    cword = "1" if shell == "zsh" else "do"  # fish passes the incomplete word itself
    env = {
        **rook_bin,
        "_ROOK_COMPLETE": f"{shell}_complete",
        "COMP_WORDS": "rook do",
        "COMP_CWORD": cword,
    }
    r = subprocess.run(["rook"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "doctor" in r.stdout, r.stderr
    if shutil.which(shell):
        script = subprocess.run(
            ["rook", "completion", shell], env=rook_bin, capture_output=True, text=True, timeout=60
        ).stdout
        if shell == "zsh":
            check = ["zsh", "-c", f"autoload -Uz compinit && compinit -u; {script}"]
        else:
            check = ["fish", "-c", f"{script}; complete -C 'rook do'"]
        r = subprocess.run(check, env=rook_bin, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        if shell == "fish":
            assert r.stdout.startswith("doctor"), r.stdout
