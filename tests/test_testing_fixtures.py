"""``rook_core.testing`` as a plugin author uses it: their own pytest suite,
run as a real ``pytest`` process (docs/plugins/testing.md)."""

from __future__ import annotations

import getpass
import os
import subprocess
import textwrap

import pytest
from nested import pytest_argv

AUTHOR_TESTS = """
import os
import pathlib

import pytest


def agent(ws):
    ws.script("agent.sh", '''
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '{"output": "%s, please"}\\\\n' "$(cat)"
    ''')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "ask", "goal": "Pass the salt", "criteria": [{"contains": "please"}]})


@pytest.mark.parametrize("i", range(4))
def test_a_run(i, rook_distribution, rook_workspace, rook_cli):
    assert not [k for k in os.environ if k.startswith("ROOK_") and k != "ROOK_CACHE_DIR"]
    rook_distribution(f"rook-none{i}", {f"none{i}": f"rook_none{i}"}, {f"rook_none{i}.py": ""})
    agent(rook_workspace)
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"ask": "passed"}
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    seen = pathlib.Path(os.environ["SEEN"]) / f"{worker}-{i}"
    seen.write_text(os.environ["ROOK_CACHE_DIR"])
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_an_authors_suite_ignores_the_shells_rook_variables_and_cache(tmp_path, workers):
    """A plugin author's suite ran with the ROOK_* variables of their shell (a
    ROOK_DISABLE_PLUGINS=script left from disabling a plugin failed every run)
    and wrote its entries into their real cache (~/.cache/rook, or their
    ROOK_CACHE_DIR), one for each test's workspace and sys.path: now it runs
    with none of them and with a fresh cache of its own, one for each
    pytest-xdist worker, removed at the end."""
    project = tmp_path / "author"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "conftest.py").write_text('pytest_plugins = ["rook_core.testing"]\n')
    (project / "tests" / "test_author.py").write_text(textwrap.dedent(AUTHOR_TESTS))
    outer_cache = tmp_path / "developers-cache"
    outer_cache.mkdir(mode=0o700)
    seen = tmp_path / "seen"
    seen.mkdir()
    env = {
        **os.environ,
        "ROOK_CACHE_DIR": str(outer_cache),
        "ROOK_DISABLE_PLUGINS": "script",
        "ROOK_TRACE_PLUGINS": "1",
        "SEEN": str(seen),
    }
    out = subprocess.run(
        pytest_argv(tmp_path, "-q", "-p", "no:cacheprovider", "-n", workers, "tests"),
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "4 passed" in out.stdout, out.stdout + out.stderr
    assert not any(outer_cache.iterdir())  # nothing written into the developer's cache
    caches = {p.name.rsplit("-", 1)[0]: p.read_text() for p in seen.iterdir()}
    assert len(set(caches.values())) == len(caches)  # one cache for each worker
    assert len(caches) == (2 if workers == "2" else 1), caches
    assert not any(os.path.exists(c) for c in caches.values())  # removed at the end


CLAIMS = """
import importlib
import sys

COUNTED = '''
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Counted(CriterionType):
    name = "counted"

    def evaluate(self, config, view):
        return Verdict(PASSED, "counted")


@hookimpl
def rook_register_criteria(register):
    register(Counted())
'''


def agent(ws, criterion):
    ws.script("agent.sh", '''
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '{"output": "%s, please"}\\\\n' "$(cat)"
    ''')
    ws.profile('''
        id: p
        hooks:
          execute: scripts/agent.sh
    ''')
    ws.scenario(f'''
        id: ask
        goal: Pass the salt
        repeat: 2
        criteria:
          - {criterion}
    ''')


def test_1_installed_and_registered_again_runs_once(rook_distribution, rook_plugin, rook_workspace, rook_cli):
    rook_distribution("rook-counted", {"counted": "rook_counted"}, {"rook_counted.py": COUNTED})
    rook_plugin(importlib.import_module("rook_counted"))  # registered twice: an error
    agent(rook_workspace, "counted: true")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"ask.1": "passed", "ask.2": "passed"}


def test_2_the_distribution_is_gone_in_the_next_test(rook_workspace, rook_cli):
    assert "rook_counted" not in sys.modules
    assert "counted" not in rook_cli("plugins").stdout
    agent(rook_workspace, "counted: true")
    assert rook_cli("run").exit_code == 2


def test_3_every_workspace_command_gets_the_workspace_wherever_the_test_runs(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    agent(rook_workspace, "contains: please")
    monkeypatch.chdir(tmp_path)  # no workspace above it
    a = rook_cli("run", "--json").report["run"]["id"]
    b = rook_cli("run", "--json").report["run"]["id"]
    assert rook_workspace.record(a, "ask.1")["status"] == "passed"
    for args in (("runs",), ("runs", "show", a), ("report", a), ("diff", a, b), ("doctor",),
                 ("profile", "list"), ("profile", "show", "p"), ("profile", "use", "p")):
        r = rook_cli(*args)
        assert r.exit_code == 0, (args, r.stderr)
"""


def test_the_fixtures_do_what_the_testing_page_says(tmp_path):
    """docs/plugins/testing.md's claims, in a plugin author's own suite: a plugin
    object an installed entry point loads already and rook_plugin registers again
    runs once; a rook_distribution is gone (entry point and modules) in the next
    test; rook_cli gives every workspace command the fixture's workspace from
    any directory; statuses() keys a repeated scenario ID.N, as record() does."""
    project = tmp_path / "author"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "conftest.py").write_text('pytest_plugins = ["rook_core.testing"]\n')
    (project / "tests" / "test_claims.py").write_text(textwrap.dedent(CLAIMS))
    out = subprocess.run(
        pytest_argv(tmp_path, "-q", "-p", "no:cacheprovider", "-n", "0", "tests"),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "3 passed" in out.stdout, out.stdout + out.stderr


def test_a_nested_session_leaves_the_temporary_folders_of_other_sessions_alone(tmp_path):
    """A pytest session numbers its temporary folder in the user's shared
    /tmp/pytest-of-USER and, as it ends, deletes the oldest unlocked ones there:
    those of sessions that have ended, a whole earlier run of this suite among
    them (a hundred thousand files; minutes on a loaded machine). A session
    started inside a test did that inside the test's 120 s: CI failed once so on
    docs/plugins/testing.md, its nested pytest at work in rmtree after "2 passed".
    Each session this suite starts keeps its folders in the test's tmp_path."""
    temp = tmp_path / "temp"  # the shared root, as a session would find it
    shared = temp / f"pytest-of-{getpass.getuser()}"
    for n in (1, 2, 3):  # ended sessions (no .lock): the first is the oldest
        (shared / f"pytest-{n}" / "popen-gw0" / "test_x0").mkdir(parents=True)
    shared.chmod(0o700)
    project = tmp_path / "author"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_t.py").write_text("def test_t(tmp_path):\n    assert tmp_path.is_dir()\n")
    out = subprocess.run(
        pytest_argv(tmp_path, "-q", "-p", "no:cacheprovider", "-n", "0", "tests"),
        cwd=project, env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout + out.stderr
    assert sorted(p.name for p in shared.iterdir()) == ["pytest-1", "pytest-2", "pytest-3"]


BLOCKING = """
import time

from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec


async def go(call):
    time.sleep(40)  # blocks the loop: the test's time runs out in here


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="blocky", load_config=lambda value: value))


@hookimpl
def rook_transport_execute(call):
    return go(call) if call.entry.transport == "blocky" else None
"""

TIMED_OUT = """
import rook_blocky


def test_agent(rook_workspace, rook_cli, rook_plugin):
    rook_plugin(rook_blocky)
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"blocky": {}}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    print("rook run went on:", r.exit_code)
"""


def test_a_test_whose_time_runs_out_inside_a_transport_fails_as_timed_out(tmp_path):
    """pytest-timeout (--timeout-method signal) ends a test by raising its Failed
    wherever the test is, a BaseException so that no `except Exception` swallows it.
    Raised inside a transport plugin during rook_cli("run"), Rook took it for the
    transport's own failure (`raised Failed: Timeout (>12.0s) from pytest-timeout`)
    and the run, and the test, went on: a hung test passed. pytest's outcomes now
    pass through Rook as a Ctrl-C does: the test fails, timed out."""
    project = tmp_path / "author"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "conftest.py").write_text('pytest_plugins = ["rook_core.testing"]\n')
    (project / "tests" / "rook_blocky.py").write_text(BLOCKING)
    (project / "tests" / "test_agent.py").write_text(TIMED_OUT)
    out = subprocess.run(
        pytest_argv(tmp_path, "-q", "-p", "no:cacheprovider", "-n", "0", "--timeout", "12",
                    "--timeout-method", "signal", "tests"),
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 1 and "1 failed" in out.stdout, out.stdout + out.stderr
    assert "Failed: Timeout (>12.0s) from pytest-timeout" in out.stdout, out.stdout
    assert "rook run went on" not in out.stdout, out.stdout
