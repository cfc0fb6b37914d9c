"""What the real ``rook`` command tells a user who typed what another tool
(``git``, ``pytest``, ``promptfoo``) takes: a transposed command, a scenario
named as ``pytest`` names a test, ``rook help``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOK = [sys.executable, "-m", "rook_core"]


def said(*args: str, cwd: Path) -> list[str]:
    """The lines ``rook ARGS`` writes to standard error, asserting a usage error
    (exit 2, nothing on standard output, no traceback)."""
    proc = subprocess.run([*ROOK, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (2, ""), (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.splitlines()


@pytest.mark.parametrize(
    "typed, meant",
    [(["rnu"], "run"), (["urn"], "run"), (["profile", "sohw"], "show"), (["runs", "sohw"], "show"),
     (["porfile"], "profile")],
)  # fmt: skip
def test_two_letters_swapped_in_a_command_are_told_the_command(tmp_path, typed, meant):
    """``rook rnu`` said only ``rnu: no such command``: two letters swapped are
    the commonest typo of a short command (git says ``did you mean run?``), but
    ``rnu`` is too unlike ``run`` by letters in order for the close-match test
    that told ``dcotor`` its ``doctor``."""
    first = said(*typed, cwd=tmp_path)[0]
    assert first == f"rook: error: {typed[-1]}: no such command; did you mean {meant}?", first


@pytest.mark.parametrize(
    "typed, hint",
    [("greeting", "--only greeting"), ("order-status", "--only order-status"),
     ("scenarios/greeting.yaml", "--only ID"), ("greeting.yaml", "--only ID")],
)  # fmt: skip
def test_a_scenario_named_as_pytest_names_a_test_is_told_only(tmp_path, typed, hint):
    """``rook run greeting`` (or ``rook run scenarios/greeting.yaml``), as
    ``pytest test_x.py`` runs one file, said ``greeting: unexpected extra
    argument`` and nothing of how ``rook run`` chooses scenarios."""
    lines = said("run", typed, cwd=tmp_path)
    assert lines[0].startswith(f"rook: error: {typed}: unexpected extra argument; "), lines
    assert "rook run takes no argument" in lines[0] and hint in lines[0], lines
    assert lines[1:] == ["Usage: rook run [OPTIONS]", "Try 'rook run --help' for help."], lines


@pytest.mark.parametrize(
    "typed, hint",
    [(["help"], "rook --help"), (["help", "run"], "rook run --help"),
     (["help", "profile", "add"], "rook profile add --help"), (["help", "nosuch"], "rook --help")],
)  # fmt: skip
def test_rook_help_is_told_where_the_help_is(tmp_path, typed, hint):
    """``rook help`` and ``rook help run`` (as ``git help`` and ``kubectl help``
    take them) said ``help: no such command`` and no more."""
    first = said(*typed, cwd=tmp_path)[0]
    assert first == f"rook: error: help: no such command; for help: {hint}", first


@pytest.mark.parametrize(
    "typed, meant", [("80", "0.8"), ("80%", "0.8"), ("67.5", "0.675"), ("100%", "1")]
)
@pytest.mark.parametrize("command", [["run"], ["merge", "--run", "x"]])
def test_a_pass_rate_given_in_percent_is_told_the_fraction(tmp_path, typed, meant, command):
    """``--min-pass-rate 80`` (or ``80%``), as a percentage is often written, was
    refused as ``not a number between 0 and 1`` with nothing of the value meant."""
    first = said(*command, "--min-pass-rate", typed, cwd=tmp_path)[0]
    assert first == (
        f"rook: error: --min-pass-rate: {typed!r} is not a number between 0 and 1; "
        f"for {typed.rstrip('%')}%, write {meant}"
    ), first
    assert "for" not in said(*command, "--min-pass-rate", "1.5e9", cwd=tmp_path)[0]


@pytest.mark.parametrize("group", [[], ["profile"], ["runs"]])
def test_a_group_help_lists_each_command_in_a_whole_sentence(tmp_path, group):
    """``rook --help`` on an 80-column terminal listed eight of its ten commands
    cut mid-sentence (``doctor  Check interpreters, plugins, profiles, hook
    scripts,...``), and ``rook profile --help`` four of seven: Click cuts a
    command's first sentence to what the width leaves. Each says what it does
    in a sentence that fits."""
    import os

    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([*ROOK, *group, "--help"], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    listed = proc.stdout.split("\nCommands:\n", 1)[1].splitlines()
    assert listed and all(not line.endswith("...") and len(line) <= 80 for line in listed), listed
    assert all(line.rstrip().endswith(".") for line in listed), listed


@pytest.mark.parametrize("command", [["run"], ["merge"], ["report"]])
def test_every_report_flag_help_names_the_formats(tmp_path, command):
    """``rook report --help`` named the report formats; ``rook run --help`` said
    only ``e.g. json:out.json`` and ``rook merge --help`` ``Also write a
    report.``: the formats were found by getting one wrong."""
    import os
    import re

    env = {**os.environ, "COLUMNS": "100"}  # narrower, Click breaks markdown-comment at its dash
    proc = subprocess.run([*ROOK, *command, "--help"], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=60)
    flag = proc.stdout[proc.stdout.index("--report FORMAT:PATH"):]
    text = " ".join(flag[:flag.index("\n  -", 1)].split())
    assert re.search(r"json, junit, markdown, markdown-comment, html, or a plugin's", text), text
    assert "PATH - is standard output" in text, text


def test_init_of_an_agent_that_has_a_profile_names_rook_doctor(tmp_path):
    """``rook init`` of an agent that exists already, profiles and scenarios and
    all (``rook init --example`` run before, or a clone's agent), said ``next:
    rook profile add --command 'CMD' ... writes a profile that reaches your
    agent`` as to a new one. It names ``rook doctor`` and ``rook run`` then; an
    agent folder with no profile yet still gets ``rook profile add``."""
    def init(*extra: str) -> str:
        proc = subprocess.run([*ROOK, "init", "--project", "demo", "--agent", "bot", *extra],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "next: rook profile add --command 'CMD'" in init()
    assert "next: rook profile add --command 'CMD'" in init()  # still no profile
    agent = tmp_path / ".testmuai/rook/projects/demo/agents/bot"
    (agent / "profiles/local.yaml").write_text("id: local\nhooks: {execute: scripts/a.sh}\n")
    out = init()
    assert out.startswith("exists already: ") and "rook profile add" not in out, out
    assert "next: rook doctor, then rook run" in out, out


def test_only_naming_no_scenario_is_told_the_one_it_looks_like_and_a_short_list(tmp_path):
    """``rook run --only greting`` listed every scenario id of the agent (all
    300 of a large suite, one line of thousands of characters) and left the
    user to find ``greeting`` in it. It names the id the typo looks like and
    lists the first 30 ids, saying how many more there are."""
    init = subprocess.run([*ROOK, "init", "--project", "demo", "--agent", "sample", "--example"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    scenarios = tmp_path / ".testmuai/rook/projects/demo/agents/sample/scenarios"
    for n in range(40):
        (scenarios / f"case-{n:02d}.yaml").write_text(
            f"id: case-{n:02d}\ngoal: hi\ncriteria:\n  - contains: x\n")
    first = said("run", "--only", "greting,nosuch", cwd=tmp_path)[0]
    assert first.startswith(
        "rook: error: --only: no scenario with id greting (did you mean greeting?), nosuch "
        "(scenarios: case-00, case-01, "
    ), first
    assert first.endswith(", case-29 and 13 more)"), first
    assert "keep-order" not in first and len(first) < 500, first


def test_a_misspelt_profile_is_told_the_one_it_looks_like(tmp_path):
    """``rook run --profile exmple`` (and ``rook profile use exampel``) listed the
    profiles and left the user to spot ``example`` among them, where a misspelt
    command, option value or scenario id is told the one it looks like."""
    init = subprocess.run([*ROOK, "init", "--project", "demo", "--agent", "sample", "--example"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    for typed in (["run", "--profile", "exmple"], ["profile", "use", "exampel"]):
        first = said(*typed, cwd=tmp_path)[0]
        assert f"profile {typed[-1]!r} not found in " in first, first
        assert first.endswith("; did you mean example? (profiles: example)"), first
    first = said("run", "--profile", "zzz", cwd=tmp_path)[0]  # nothing like it: the list alone
    assert "did you mean" not in first and first.endswith("(profiles: example)"), first
