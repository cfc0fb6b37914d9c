"""Rook's constant regular expressions are compiled when first used, not when
their module is imported: a run of a script agent that never meets a secret, a
hook's error or a Markdown report compiles none of theirs (rook_core.lazyre)."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys

from rook_core.lazyre import later

# Records every pattern compiled by the code at the top of a Rook module (its
# import), then runs `rook run --json` in process in the current folder.
PROBE = r"""
import json, re, sys

found = []
compile_ = re._compile

def watched(pattern, flags):
    if not isinstance(pattern, re.Pattern) and (type(pattern), pattern, flags) not in re._cache:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.endswith(("re/__init__.py", "lazyre.py")):
            frame = frame.f_back
        where = frame.f_code.co_filename if frame is not None else ""
        if frame is not None and frame.f_code.co_name == "<module>" and (
            "rook_core" in where or "rook_plugins" in where or "/plugins/" in where
        ):
            found.append(f"{where.rsplit('/', 2)[-2]}/{where.rsplit('/', 1)[-1]}:{frame.f_lineno}")
    return compile_(pattern, flags)

re._compile = watched
from rook_core.cli import cli
try:
    cli.main(["run", "--json"], prog_name="rook", standalone_mode=False)
finally:
    print("PROBE " + json.dumps(found), file=sys.stderr)
"""


def test_a_plain_run_compiles_no_pattern_at_import(rook_workspace, rook_cli):
    """Neither a run that validates the profile and scenarios (no cache: the
    first run, or one after an edit) nor one that reads them from the cache."""
    rook_workspace.script("echo.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        goal=$(cat)
        printf '{"output": "you said %s"}\\n' "$goal"
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    rook_workspace.scenario({"id": "hello", "goal": "hi", "criteria": [{"contains": "you said"}]})
    assert rook_cli("run", "--json").exit_code == 0  # the definitions cached
    for no_cache in ("1", ""):
        done = subprocess.run(
            [sys.executable, "-c", PROBE], cwd=rook_workspace.root,
            env={**os.environ, "ROOK_NO_CACHE": no_cache},
            capture_output=True, text=True, timeout=120, check=False,
        )
        [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("PROBE ")]
        assert json.loads(done.stdout)["summary"]["passed"] == 1, done.stderr
        assert (no_cache, json.loads(line[len("PROBE "):])) == (no_cache, [])


def test_a_later_pattern_answers_as_the_compiled_one():
    text = "Tool_Calls and function_use, twice: tool_calls"
    lazy = later(r"(tool|function)_?(call|use)s?", re.IGNORECASE)
    real = re.compile(r"(tool|function)_?(call|use)s?", re.IGNORECASE)
    assert "_compiled" not in vars(lazy)  # nothing compiled until it is used
    assert lazy.findall(text) == real.findall(text)
    assert lazy.sub("x", text) == real.sub("x", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert (lazy.pattern, lazy.flags, lazy.groups) == (real.pattern, real.flags, real.groups)
    assert vars(lazy)["sub"] is not None  # kept: the next use is one attribute read
    assert repr(later("a+")) == "later('a+')"
    assert copy.copy(lazy).search("tool_use")  # copied as any object


def test_a_mistake_in_a_later_pattern_shows_at_its_first_use():
    bad = later("(unclosed")
    try:
        bad.search("x")
    except re.error as exc:
        assert "missing )" in str(exc)
    else:
        raise AssertionError("no error")
