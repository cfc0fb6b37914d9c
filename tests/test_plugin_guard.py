"""Guards on the plugin contract, and the operator switches, tested on real entry points.

* every hook in ``rook_core/hookspecs.py`` has a test named ``test_hook_<hook>``
  somewhere in ``tests/``, a complete docstring, an entry with its real argument
  names in the plugin author guide, and a built-in plugin that implements it
  (datasette's ``test_plugin_hooks_have_tests`` / ``..._are_documented``);
* ``ROOK_LOAD_PLUGINS``, ``ROOK_DISABLE_PLUGINS`` and ``ROOK_TRACE_PLUGINS``
  work on installed distributions (made with ``rook_distribution``: a real
  ``*.dist-info`` with ``entry_points.txt`` on ``sys.path``, found by
  :mod:`importlib.metadata` exactly as a pip-installed one is);
* a plugin that fails to import is reported with its distribution and error,
  and the rest of Rook still runs.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path

import pytest

from rook_core import hookspecs, plugins

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "plugins"

# Hooks that no built-in plugin implements yet, each with the reason. Remove an
# entry when a built-in starts to use the hook (a test below says when).
NO_BUILTIN_YET: dict[str, str] = {}


def hook_names() -> list[str]:
    return [
        name
        for name, func in vars(hookspecs).items()
        if name.startswith("rook_") and getattr(func, "rook_spec", None) is not None
    ]


def test_there_are_hooks_to_guard():
    assert {"rook_transport_execute", "rook_register_criteria"} <= set(hook_names())


def test_plugin_hooks_have_tests():
    test_functions = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        test_functions |= {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
    missing = [h for h in hook_names() if f"test_hook_{h}" not in test_functions]
    assert missing == [], f"write a test named test_hook_<hook> for: {', '.join(missing)}"


def test_plugin_hooks_are_documented():
    guide = "\n".join(p.read_text(encoding="utf-8") for p in sorted(GUIDE.glob("*.md")))
    undocumented = []
    for name in hook_names():
        args = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        if f"{name}({args})" not in guide:
            undocumented.append(f"{name}({args})")
    assert undocumented == [], f"document in docs/plugins/: {', '.join(undocumented)}"


def test_plugin_hook_docstrings_describe_every_argument_and_the_result():
    for name in hook_names():
        func = getattr(hookspecs, name)
        doc = " ".join((inspect.getdoc(func) or "").split())
        assert "Called" in doc, f"{name}: say when it is called"
        for arg in inspect.signature(func).parameters:
            assert f":param {arg}:" in doc, f"{name}: document parameter {arg}"
        assert ":returns:" in doc, f"{name}: say what it returns"
        if func.rook_spec.get("firstresult"):
            assert "first non-None result" in doc, f"{name}: say it stops at the first result"


def test_every_hook_is_used_by_a_builtin_plugin():
    """No hook without a real plugin in the box that uses it (datasette's rule)."""
    rook = plugins.build_plugin_manager()
    used = {
        caller.name
        for plugin in rook.pm.get_plugins()
        if (rook.pm.get_name(plugin) or "") in _builtin_names()
        for caller in (rook.pm.get_hookcallers(plugin) or [])
    }
    unused = [h for h in hook_names() if h not in used and h not in NO_BUILTIN_YET]
    assert unused == [], f"no built-in plugin implements: {', '.join(unused)}"
    now_used = [h for h in NO_BUILTIN_YET if h in used]
    assert now_used == [], f"remove from NO_BUILTIN_YET, a built-in uses it now: {now_used}"


def _builtin_names() -> set[str]:
    return {
        ep.name
        for ep in metadata.entry_points(group=plugins.ENTRY_POINT_GROUP)
        if ep.dist is not None and ep.dist.name == "rook-harness"
    }


# ---------------------------------------------------------------------------
# installed plugins and the operator switches
# ---------------------------------------------------------------------------

SHOUT = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import FAILED, PASSED, Verdict


class Shouts(CriterionType):
    name = "shouts"

    def evaluate(self, config, view):
        ok = (view.output or "").isupper()
        return Verdict(PASSED if ok else FAILED, "upper case" if ok else "not upper case")


@hookimpl
def rook_register_criteria(register):
    register(Shouts())
"""

BROKEN = """
raise ImportError("rook-broken needs the acme-sdk package")
"""


def echo_workspace(ws, criteria):
    ws.script(
        "echo.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '{"output": "%s"}\\n' "$(cat)"
        """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    ws.scenario({"id": "loud", "goal": "HELLO", "criteria": criteria})


def test_an_installed_distribution_loads_through_its_entry_point(
    rook_distribution, rook_workspace, rook_cli
):
    rook_distribution("rook-shout", {"shout": "rook_shout"}, {"rook_shout.py": SHOUT}, "1.2.3")
    doc = json.loads(rook_cli("plugins", "--json").stdout)
    shout = next(p for p in doc["plugins"] if p["name"] == "shout")
    assert shout == {
        "name": "shout",
        "distribution": "rook-shout",
        "version": "1.2.3",
        "module": "rook_shout",
        "hooks": ["rook_register_criteria"],
    }
    assert "shouts" in doc["criteria"]
    echo_workspace(rook_workspace, [{"shouts": True}])
    r = rook_cli("run", "--json")
    assert r.statuses() == {"loud": "passed"}


PICKY = SHOUT.replace(
    "    def evaluate(",
    """    def parse(self, value):
        if value is not True:
            raise ValidationError(MESSAGES)
        return value

    def evaluate(""",
).replace("from rook_core.hookspecs", "from marshmallow import ValidationError\nfrom rook_core.hookspecs")


@pytest.mark.parametrize(
    "messages, said",
    [
        ('"must be true"', "criteria.0.shouts: must be true (the criterion plugin shout "
         "(rook-shout) refused it)"),
        ('{"level": ["must be a number"]}', "criteria.0.shouts.level: must be a number (the "
         "criterion plugin shout (rook-shout) refused it)"),
    ],
)
def test_a_criterion_plugins_refusal_names_the_plugin_after_its_message(
    rook_distribution, rook_workspace, rook_cli, messages, said
):
    """A criterion plugin's ``parse`` that refuses a value (``ValidationError``) was
    shown with the file and field only, ``criteria.0.shouts: must be true``: a user
    could not tell which installed plugin to read about. Its message now ends
    naming the plugin and its distribution (the message keeps its place, first).
    Rook's own criteria say nothing more."""
    source = PICKY.replace("MESSAGES", messages)
    rook_distribution("rook-shout", {"shout": "rook_shout"}, {"rook_shout.py": source})
    echo_workspace(rook_workspace, [{"shouts": 5}])
    r = rook_cli("run")
    assert r.exit_code == 2 and said in r.stderr, r.stderr
    echo_workspace(rook_workspace, [{"contains": {"x": 1}}])
    r = rook_cli("run")
    assert r.exit_code == 2 and "criteria.0.contains: " in r.stderr, r.stderr
    assert "criterion plugin" not in r.stderr, r.stderr


def test_rook_plugin_of_a_module_its_package_installs_already_runs_it_once(
    rook_distribution, rook_plugin, rook_workspace, rook_cli
):
    """A plugin author's package is installed (``pip install -e .``) and the test
    hands ``rook_plugin`` the very module its entry point loads."""
    import importlib

    rook_distribution("rook-shout", {"shout": "rook_shout"}, {"rook_shout.py": SHOUT})
    rook_plugin(importlib.import_module("rook_shout"))
    echo_workspace(rook_workspace, [{"shouts": True}])
    r = rook_cli("run", "--json")
    assert r.exception is None and r.exit_code == 0, r.stderr
    assert r.statuses() == {"loud": "passed"}
    doc = json.loads(rook_cli("plugins", "--json").stdout)
    assert [p["name"] for p in doc["plugins"] if p["module"] == "rook_shout"] == ["shout"]


def test_rook_cli_gives_every_workspace_command_the_fixture_workspace(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """testing.md: ``run`` and the other workspace commands (``profile add``, ``profile
    test``, ``merge`` ...) get the fixture's ``--workspace``, wherever the test runs."""
    monkeypatch.chdir(tmp_path)  # no workspace here
    echo_workspace(rook_workspace, [{"contains": "HELLO"}])
    r = rook_cli("profile", "test", "p")
    assert r.exit_code == 0, r.stderr
    r = rook_cli("profile", "add", "q", "--command", "cat", "--no-test")
    assert r.exit_code == 0, r.stderr
    assert (rook_workspace.agent_dir / "profiles" / "q.yaml").is_file()
    assert "q" in rook_cli("profile", "list").stdout
    r = rook_cli("merge", "--run", "nope")
    assert r.exit_code == 2 and "no Rook workspace here" not in r.stderr, r.stderr
    assert "--help" in rook_cli("profile", "--help").stdout


def test_a_plugin_that_fails_to_import_is_reported_and_rook_still_runs(
    rook_distribution, rook_workspace, rook_cli
):
    rook_distribution("rook-broken", {"broken": "rook_broken"}, {"rook_broken.py": BROKEN})
    r = rook_cli("plugins")
    assert r.exit_code == 0
    assert (
        "rook: warning: plugin broken (rook-broken) failed to load: ImportError: rook-broken needs the acme-sdk package"
        in r.stderr
    )
    r = rook_cli("plugins", "--json")
    assert (  # standard error too: a script keeping the document still sees it
        "rook: warning: plugin broken (rook-broken) failed to load: ImportError: rook-broken needs the acme-sdk package"
        in r.stderr
    )
    doc = json.loads(r.stdout)
    assert {
        "name": "broken",
        "distribution": "rook-broken",
        "error": "ImportError: rook-broken needs the acme-sdk package",
    } in doc["failed"]
    assert "script" in doc["transports"], "the rest of Rook is loaded"
    echo_workspace(rook_workspace, [{"contains": "HELLO"}])
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"loud": "passed"}
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    assert r.exit_code == 1
    assert "plugin broken: from rook-broken failed to load: ImportError" in r.stdout
    assert "ROOK_DISABLE_PLUGINS=broken" in r.stdout


UNMARKED = """
def rook_register_reporters(register):  # no @hookimpl: pluggy never sees it
    register("plain", lambda report, path: path.write_text("plain"))
"""


def test_an_entry_point_that_implements_no_hook_is_reported_not_silently_loaded(
    rook_distribution, rook_workspace, rook_cli
):
    rook_distribution(
        "rook-unmarked",
        {"unmarked": "rook_unmarked", "number": "rook_unmarked:NUMBER"},
        {"rook_unmarked.py": UNMARKED + "NUMBER = 42\n"},
    )
    r = rook_cli("plugins")
    assert r.exit_code == 0
    assert (
        "rook: warning: plugin unmarked (rook-unmarked) failed to load: it implements no Rook hook: "
        "rook_register_reporters is not marked with @hookimpl" in r.stderr
    )
    assert "rook: warning: plugin number (rook-unmarked) failed to load: it implements no Rook hook" in r.stderr
    echo_workspace(rook_workspace, [{"contains": "HELLO"}])
    r = rook_cli("run", "--report", "plain:out.txt")
    assert r.exit_code == 2
    assert "unknown format 'plain'" in r.stderr
    assert "plugin unmarked (rook-unmarked) failed to load" in r.stderr
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    assert r.exit_code == 1
    assert "plugin unmarked: from rook-unmarked failed to load" in r.stdout


A_CLASS = """
from rook_core.hookspecs import hookimpl


class Plugin:
    @hookimpl
    def rook_register_reporters(self, register):
        register("classy", lambda report, path: path.write_text("classy"))
"""


def test_an_entry_point_naming_a_class_says_to_name_an_instance(
    rook_distribution, rook_workspace, rook_cli
):
    """An entry point naming a class whose hooks are methods made every command exit 2
    with 'Plugin.rook_register_reporters() missing 1 required positional argument:
    'self''; it is now a plugin that failed to load, saying to name an instance."""
    rook_distribution("rook-classy", {"classy": "rook_classy:Plugin"}, {"rook_classy.py": A_CLASS})
    r = rook_cli("plugins")
    assert r.exit_code == 0, r.stderr
    assert (
        "rook: warning: plugin classy (rook-classy) failed to load: its entry point names the class "
        "rook_classy:Plugin, whose hooks are methods: name an instance of it (PLUGIN = "
        "Plugin() in its module, and the entry point module:PLUGIN)" in r.stderr
    ), r.stderr
    echo_workspace(rook_workspace, [{"contains": "HELLO"}])
    assert rook_cli("run", "--json").statuses() == {"loud": "passed"}, "the rest of Rook runs"


WRONG_ARGUMENT = """
from rook_core.hookspecs import hookimpl


@hookimpl
def rook_register_reporters(regster):
    regster("typo", lambda report, path: path.write_text("typo"))
"""


def test_a_hook_taking_an_argument_the_hook_lacks_is_one_line_naming_it(
    rook_distribution, rook_workspace, rook_cli
):
    """A hook implementation with a misspelt argument was reported in pluggy's three
    lines, breaking the layout of rook doctor and of every warning of rook run."""
    rook_distribution("rook-typo", {"typo": "rook_typo"}, {"rook_typo.py": WRONG_ARGUMENT})
    r = rook_cli("plugins")
    assert r.exit_code == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("rook: warning: plugin typo "))
    assert "rook_register_reporters(regster)" in line and "{'regster'}" in line, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    problem = next(ln for ln in r.stdout.splitlines() if "plugin typo" in ln)
    assert "can not be found in the hookspec" in problem, r.stdout


def test_rook_load_plugins_is_an_allow_list(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    rook_distribution("rook-shout", {"shout": "rook_shout"}, {"rook_shout.py": SHOUT})
    rook_distribution("rook-broken", {"broken": "rook_broken"}, {"rook_broken.py": BROKEN})
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", "script, criteria,executor_local,reporters")
    rook = plugins.build_plugin_manager()
    assert {i.name for i in rook.infos} == {"script", "criteria", "executor_local", "reporters"}
    assert rook.failures == [], "a plugin that is not allowed is never imported"
    assert "shouts" not in rook.criteria
    echo_workspace(rook_workspace, [{"shouts": True}])
    r = rook_cli("run")
    assert r.exit_code == 2 and "shouts" in r.stderr, "its criterion is unknown: nothing runs"
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", "script,criteria,executor_local,reporters,shout")
    r = rook_cli("run", "--json")
    assert r.statuses() == {"loud": "passed"}


def test_rook_disable_plugins_blocks_named_plugins(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    rook_distribution("rook-shout", {"shout": "rook_shout"}, {"rook_shout.py": SHOUT})
    rook_distribution("rook-broken", {"broken": "rook_broken"}, {"rook_broken.py": BROKEN})
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", "broken,shout")
    rook = plugins.build_plugin_manager()
    names = {i.name for i in rook.infos}
    assert "shout" not in names and "script" in names
    assert [f.name for f in rook.failures if f.name == "broken"] == [], "blocked, so not imported"
    echo_workspace(rook_workspace, [{"shouts": True}])
    r = rook_cli("run")
    assert r.exit_code == 2 and "unknown criterion type" in r.stderr
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", "broken")
    assert rook_cli("run", "--json").statuses() == {"loud": "passed"}


def test_rook_trace_plugins_logs_every_hook_call_without_secrets(
    rook_workspace, rook_cli, monkeypatch
):
    monkeypatch.setenv("ROOK_TRACE_PLUGINS", "1")
    monkeypatch.setenv("TRACE_SECRET", "s3cr3t-value")
    rook_workspace.script(
        "echo.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '{"output": "%s %s"}\\n' "$(cat)" "$TRACE_SECRET"
        """,
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"open": "scripts/echo.sh", "execute": "scripts/echo.sh"},
            "env": [{"variable": "TRACE_SECRET", "purpose": "a secret"}],
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("[rook-trace]")]
    text = "\n".join(lines)
    assert "rook_register_transports(register) -> script (rook-harness)" in text
    assert "rook_session_open(call=HookCall(phase=open, transport=script, scenario=s.1))" in text
    assert (
        "rook_transport_execute(call=HookCall(phase=execute, transport=script, scenario=s.1, "
        "turn=1))" in text
    )
    assert "finish rook_transport_execute" in text
    assert "rook_evidence_recorded(" in text
    # counts as everywhere else in Rook: "1 implementation", "0 results", never "(s)"
    assert re.search(r"found \d+ entry points (from the cache|by scanning)", text), text
    assert "-> 1 implementation: " in text and "-> [0 results]" in text, text
    # each call names the plugins it reaches: an observer's (one line per plugin,
    # rook_core.plugins.call_each) said only "-> 1 implementation"
    assert re.search(
        r"rook_transport_execute\(call=HookCall\(phase=execute, transport=script, scenario=s\.1,"
        r" turn=1\)\) -> \d+ implementations: .*script \(rook-harness\)",
        text,
    ), text
    observed = re.findall(r"rook_evidence_recorded\(.*\) -> 1 implementation: (.+)", text)
    assert observed and all(name.endswith("(rook-harness)") for name in observed), text
    assert "(s)" not in text, text
    assert "s3cr3t-value" not in r.stderr and "s3cr3t-value" not in r.stdout
    monkeypatch.setenv("ROOK_TRACE_PLUGINS", "0")
    r = rook_cli("run", "--json")
    assert "[rook-trace]" not in r.stderr, "ROOK_TRACE_PLUGINS=0 is off"


@pytest.mark.parametrize("switch", ["ROOK_LOAD_PLUGINS", "ROOK_DISABLE_PLUGINS"])
def test_doctor_names_a_switch_entry_that_matches_no_plugin(rook_cli, monkeypatch, switch):
    monkeypatch.setenv(switch, "no-such-plugin")
    r = rook_cli("doctor", "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 1
    assert any(
        f["status"] == "problem" and f"{switch} names 'no-such-plugin'" in f["message"]
        for f in doc["findings"]
    )


def test_rooks_own_tests_use_the_testing_fixtures():
    """Rook's suite is built on ``rook_core.testing``, the helpers plugin authors get."""
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert '"rook_core.testing"' in conftest and "pytest_plugins" in conftest
    users, own_runner = [], []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if any(
            f in text for f in ("rook_workspace", "rook_cli", "rook_plugin", "rook_distribution")
        ):
            users.append(path.name)
        if re.search(r"^\s*(from|import) click\.testing", text, re.MULTILINE):
            own_runner.append(path.name)
    assert own_runner == [], "drive the CLI with the rook_cli fixture"
    assert len(users) >= 10


# A criterion plugin that refuses a bad value with ValueError, TypeError or
# KeyError instead of marshmallow's ValidationError, or whose check raises.
STRICT = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class AtLeast(CriterionType):
    name = "at_least"

    def parse(self, value):
        if isinstance(value, dict):
            return {"n": int(value["n"])}  # KeyError without n
        if not isinstance(value, int):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        if value < 0:
            raise ValueError("must not be negative")
        return {"n": value}

    def check(self, config, judging):
        if config["n"] > 1000:
            raise LookupError()  # no message: named without a colon after it
        if config["n"] > 100:
            raise RuntimeError("the limit service is down")
        return None

    def evaluate(self, config, view):
        return Verdict(PASSED, "fine")


@hookimpl
def rook_register_criteria(register):
    register(AtLeast())
"""


@pytest.mark.parametrize(
    "value, message",
    [
        (-1, "ValueError: must not be negative"),
        ("many", "TypeError: expected a number, got str"),
        ({"m": 1}, "KeyError: 'n'"),
        (101, "could not check it: RuntimeError: the limit service is down"),
        (1001, "could not check it: LookupError\n"),
    ],
)
def test_a_criterion_plugin_that_raises_on_a_bad_value_is_a_config_error(
    rook_distribution, rook_workspace, rook_cli, value, message
):
    rook_distribution("rook-strict", {"strict": "rook_strict"}, {"rook_strict.py": STRICT})
    echo_workspace(rook_workspace, [{"contains": "HELLO"}, {"at_least": value}])
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert r.exception is None and "Traceback" not in r.stderr + r.stdout
    assert "loud.yaml" in r.stderr and "criteria.1.at_least: " in r.stderr
    assert "scenario loud" in r.stderr, r.stderr  # criterion.md: names the scenario too
    assert "strict (rook-strict)" in r.stderr and message in r.stderr
    assert not any(rook_workspace.runs_dir.glob("*/run.json")), "nothing ran"
    echo_workspace(rook_workspace, [{"at_least": 3}])
    assert rook_cli("run", "--json").statuses() == {"loud": "passed"}


# A transport plugin one of whose callbacks, run before anything runs, has a
# bug: it raises instead of a ValidationError or ConfigError (FUSSY_FAILS says which).
FUSSY = """
import json, os, time

from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec


def fails(name, result):
    def callback(*args):
        if os.environ.get("FUSSY_FAILS") == name:
            raise RuntimeError(f"the {name} of fussy has a bug")
        return result(*args)
    return callback


async def later(config):
    return config


def returned(name, config):  # FUSSY_RETURNS_NONE: the callback that forgets `return config`
    if os.environ.get("FUSSY_RETURNS_ASYNC") == name:  # one written `async def`
        return later(config)
    return None if os.environ.get("FUSSY_RETURNS_NONE") == name else config


async def execute(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={"output": call.entry.config},
                      turn=call.turn, transport="fussy")


async def start(run):
    if os.environ.get("FUSSY_FAILS") == "start":
        raise RuntimeError("the start of fussy has a bug")
    return None


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="fussy", start=start,
                           load_config=fails("load_config", lambda v: returned("load_config", v)),
                           resolve=fails("resolve", lambda c, a: returned("resolve", c)),
                           check=fails("check", lambda c, p: returned("check", c)),
                           env_names=fails("env_names", lambda c: json.loads(
                               os.environ.get("FUSSY_ENV_NAMES", "[]"))),
                           runnable=fails("runnable", lambda c, s: json.loads(
                               os.environ.get("FUSSY_REASON", "null"))),
                           check_scenario=fails("check_scenario", lambda c, s: json.loads(
                               os.environ.get("FUSSY_SCENARIO_REASON", "null"))),
                           saved_names=fails("saved_names", lambda c: json.loads(
                               os.environ.get("FUSSY_SAVES", "[]"))),
                           continuity=fails("continuity", lambda c: json.loads(
                               os.environ.get("FUSSY_CONTINUITY", "null")))))


@hookimpl
def rook_transport_execute(call):
    return execute(call) if call.entry.transport == "fussy" else None
"""


@pytest.mark.parametrize("callback", ["load_config", "resolve", "check", "env_names"])
def test_a_transport_plugin_whose_callback_raises_is_named_not_a_traceback(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, callback
):
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("ROOK_NO_CACHE", "1")
    monkeypatch.setenv("FUSSY_FAILS", callback)
    for command in (("run",), ("doctor",)):
        r = rook_cli(*command)
        assert r.exception is None and "Traceback" not in r.stderr + r.stdout, command
        out = r.stdout + r.stderr
        assert "p.yaml" in out and "hooks.execute" in out, out
        assert "fussy (rook-fussy)" in out, out
        assert f"RuntimeError: the {callback} of fussy has a bug" in out, out
        if command == ("doctor",) and callback in ("resolve", "check"):
            # its fix points at the plugin's own documentation: Rook's docs/ has no page of it
            assert "see the documentation of rook-fussy" in out and "docs/)" not in out, out
    assert rook_cli("run").exit_code == 2
    assert not any(rook_workspace.runs_dir.glob("*/run.json")), "nothing ran"
    monkeypatch.delenv("FUSSY_FAILS")
    assert rook_cli("run", "--json").statuses() == {"loud": "passed"}


@pytest.mark.parametrize("callback", ["load_config", "resolve", "check"])
@pytest.mark.parametrize(
    "switch, said",
    [
        ("FUSSY_RETURNS_NONE", "returned None from {0}; return the entry's config"),
        ("FUSSY_RETURNS_ASYNC",
         "returned a coroutine from {0} (an async def); {0} is a plain function: return the "
         "entry's config"),
    ],
)
def test_a_transport_plugin_whose_resolve_or_check_returns_no_config_is_refused_up_front(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, callback, switch, said
):
    """A resolve or check that forgot `return config` made the entry's config None,
    and one written `async def` made it a coroutine: the run started, and every
    scenario was an error with the plugin's own TypeError (here: 'output is null',
    "'coroutine' object ..."), while rook doctor found no problem. Each is refused
    before anything runs, naming the plugin, the callback and what it returned.
    So is a load_config that returns None for a value that was there: the run
    started and every scenario was an error ('output is null'), the doctor found
    nothing; or a coroutine, which was blamed on resolve (fussy's hands it on)."""
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv(switch, callback)
    for command in (("run",), ("doctor",), ("profile", "test", "p")):
        r = rook_cli(*command)
        assert r.exception is None and "Traceback" not in r.stderr + r.stdout, command
        out = r.stdout + r.stderr
        entry = "hooks.execute.fussy" if callback == "load_config" else "hooks.execute"
        assert "p.yaml" in out and entry in out, out
        assert f"the transport plugin fussy (rook-fussy) {said.format(callback)}" in out, out
        assert "never awaited" not in out, out
    assert rook_cli("run").exit_code == 2
    assert not any(rook_workspace.runs_dir.glob("*/run.json")), "nothing ran"
    monkeypatch.delenv(switch)
    assert rook_cli("run", "--json").statuses() == {"loud": "passed"}


@pytest.mark.parametrize(
    "fails, saves, message",
    [
        ("saved_names", '["token"]', "RuntimeError: the saved_names of fussy has a bug"),
        ("", '"token"', "returned 'token', not a list of names"),
    ],
)
def test_a_transport_plugin_whose_saved_names_fails_is_named_not_http(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, fails, saves, message
):
    """An entry of a third-party transport whose saved_names raised, or returned a
    text (read letter by letter), before an http: entry that uses a saved value: the
    run was refused blaming Rook's own http plugin ('the transport plugin http
    (rook-harness) could not check its entry'), or named {{t}}, {{o}}, {{k}} ... as
    the names saved. The transport plugin is now named."""
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    hooks = {
        "execute": {"fussy": "HELLO"},
        "close": {"http": {"url": "http://127.0.0.1:9/end", "body": {"t": "{{token}}"}}},
    }
    rook_workspace.profile({"id": "p", "hooks": hooks})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("ROOK_NO_CACHE", "1")
    monkeypatch.setenv("FUSSY_FAILS", fails)
    monkeypatch.setenv("FUSSY_SAVES", saves)
    r = rook_cli("run")
    assert r.exception is None and r.exit_code == 2, r.stderr
    assert "p.yaml: hooks.close: the transport plugin fussy (rook-fussy)" in r.stderr, r.stderr
    assert message in r.stderr and "http (rook-harness)" not in r.stderr, r.stderr
    assert not any(rook_workspace.runs_dir.glob("*/run.json")), "nothing ran"


@pytest.mark.parametrize("returned", ['["DESK_KEY"]', '"DESK_KEY"', '[["url", 5]]'])
def test_a_transport_plugin_whose_env_names_returns_no_pairs_is_named_not_a_traceback(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, returned
):
    """env_names returning the variables' names alone (not (field path, NAME) pairs),
    or a text, ended rook run with a Python traceback ('not enough values to unpack')."""
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("ROOK_NO_CACHE", "1")
    monkeypatch.setenv("FUSSY_ENV_NAMES", returned)
    for command in (("run",), ("doctor",)):
        r = rook_cli(*command)
        assert r.exception is None and "Traceback" not in r.stderr + r.stdout, command
        out = r.stdout + r.stderr
        assert "p.yaml" in out and "hooks.execute.fussy: the transport plugin fussy " in out, out
        assert "from env_names, not a list of (field path, NAME) pairs" in out, out
    assert rook_cli("run").exit_code == 2
    assert not any(rook_workspace.runs_dir.glob("*/run.json")), "nothing ran"


@pytest.mark.parametrize(
    "variable, why",
    [
        ("API_KEY", "API_KEY is not declared in the profile's env: list"),
        ("ROOK_TURN", "Rook does not set ROOK_TURN in open"),
    ],
)
def test_a_transport_plugin_variable_not_declared_is_named_in_its_own_terms(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, variable, why
):
    """A transport plugin whose env_names gives a variable the profile does not
    declare was refused in the http transport's placeholder syntax
    ('hooks.execute.fussy.key: {{env.API_KEY}}: ...'), which the user never wrote
    and no fussy entry takes. The field and the variable are named, with the plugin
    that reads it."""
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"open": {"fussy": "HI"},
                                                 "execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("ROOK_NO_CACHE", "1")
    monkeypatch.setenv("FUSSY_ENV_NAMES", json.dumps([["key", variable]]))
    for command in (("run",), ("doctor",)):
        r = rook_cli(*command)
        assert r.exception is None and "Traceback" not in r.stderr + r.stdout, command
        out = r.stdout + r.stderr
        assert "{{env." not in out, out
        phase = "open" if variable.startswith("ROOK_") else "execute"
        assert (
            f"hooks.{phase}.fussy.key: the transport plugin fussy (rook-fussy) reads the "
            f"variable {variable}: {why}"
        ) in out, out
    assert rook_cli("run").exit_code == 2
    assert not any(rook_workspace.runs_dir.glob("*/run.json")), "nothing ran"


def test_a_transport_plugin_whose_start_raises_is_named_not_a_traceback(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("FUSSY_FAILS", "start")
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.exception is None, r.stderr
    assert "Traceback" not in r.stderr
    # recorded as a failed prepare is: each scenario run says why, nothing sent; the run
    # was left 'incomplete (0/1 recorded)', 'not run yet', its reason saved nowhere
    why = ("transport 'fussy' (fussy (rook-fussy)) could not start: "
           "RuntimeError: the start of fussy has a bug")
    assert r.statuses() == {"loud": "error"}
    assert r.report["scenarios"][0]["reason"].startswith(why), r.report["scenarios"][0]
    run_id = r.report["run"]["id"]
    assert "incomplete" not in rook_cli("runs").stdout
    shown = rook_cli("runs", "show", run_id)
    assert "could not start" in shown.stdout and "not run yet" not in shown.stdout
    monkeypatch.delenv("FUSSY_FAILS")
    assert rook_cli("run", "--run", run_id, "--json").statuses() == {"loud": "passed"}
    assert rook_cli("run", "--json").statuses() == {"loud": "passed"}


@pytest.mark.parametrize("prepare", [False, True])
def test_a_transport_plugin_whose_runnable_raises_errors_the_scenario(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, prepare
):
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.script("ok.sh", "#!/bin/bash\nexit 0\n")
    hooks = {"execute": {"fussy": "HELLO"}, **({"prepare": "scripts/ok.sh"} if prepare else {})}
    rook_workspace.profile({"id": "p", "hooks": hooks})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("FUSSY_FAILS", "runnable")
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"loud": "error"}  # never skipped as if fine
    assert r.report["scenarios"][0]["reason"] == (
        "hooks.execute (fussy): the transport plugin fussy (rook-fussy) raised "
        "RuntimeError in runnable: the runnable of fussy has a bug")
    assert "executor" not in r.stderr


@pytest.mark.parametrize("returned", ["true", "42"])
def test_a_transport_plugin_whose_runnable_or_check_scenario_returns_no_text_is_named(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, returned
):
    """runnable returning True ('yes, runnable') skipped every scenario as not_runnable
    with the reason 'True' (exit 0, nothing tested); check_scenario returning it refused
    the run with 'FILE: True'. Like a criterion's check, anything but a text or None is
    now the plugin's fault, named: the scenario run is an error, or the run is refused."""
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("FUSSY_REASON", returned)
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.statuses() == {"loud": "error"}, r.stderr
    shown = {"true": "True", "42": "42"}[returned]
    assert r.report["scenarios"][0]["reason"] == (
        f"hooks.execute (fussy): the transport plugin fussy (rook-fussy) returned {shown} "
        "from runnable, not a reason (a text, or None when the entry can run the scenario)")
    monkeypatch.delenv("FUSSY_REASON")
    monkeypatch.setenv("FUSSY_SCENARIO_REASON", returned)
    runs = len(list(rook_workspace.runs_dir.glob("*/run.json")))
    r = rook_cli("run")
    assert r.exit_code == 2, r.stderr
    assert (
        f"the transport plugin fussy (rook-fussy) returned {shown} from check_scenario "
        "for scenario 'loud', not a reason (a text, or None when the entry can send it)"
    ) in r.stderr, r.stderr
    assert len(list(rook_workspace.runs_dir.glob("*/run.json"))) == runs, "nothing ran"


def test_a_transport_plugin_declares_its_continuity_once_per_run(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """TransportSpec.continuity: the level a third-party entry declares is recorded in
    run.json and shown; one that raises, or returns no text, refuses the run naming
    the plugin and the entry (exit 2, nothing run)."""
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"loud": "passed"} and "continuity" not in r.report["run"]
    monkeypatch.setenv("FUSSY_CONTINUITY", '"native_session"')
    r = rook_cli("run")
    assert r.exit_code == 0 and "Ruhroh continuity: native_session" in r.stdout, r.stdout
    runs = len(list(rook_workspace.runs_dir.iterdir()))
    profile = rook_workspace.agent_dir / "profiles" / "p.yaml"
    for env, said in (
        ({"FUSSY_CONTINUITY": "42"}, "returned 42, not a text"),
        ({"FUSSY_FAILS": "continuity"}, "RuntimeError: the continuity of fussy has a bug"),
    ):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        r = rook_cli("run")
        assert r.exception is None and r.exit_code == 2, r.stderr
        assert (
            f"{profile}: hooks.execute: the transport plugin fussy (rook-fussy) could not say "
            f"its 'fussy' entry's continuity level: {said}"
        ) in r.stderr, r.stderr
        assert len(list(rook_workspace.runs_dir.iterdir())) == runs, "nothing ran"


def test_a_transport_plugin_whose_check_scenario_raises_names_the_phase_and_profile(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """check_scenario raising refused the run naming the plugin and the scenario
    alone, while its returning True named 'hooks.execute of PROFILE' too: the user
    could not tell which entry of which profile asked. Both name them now."""
    rook_distribution("rook-fussy", {"fussy": "rook_fussy"}, {"rook_fussy.py": FUSSY})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"fussy": "HELLO"}}})
    rook_workspace.scenario({"id": "loud", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    monkeypatch.setenv("FUSSY_FAILS", "check_scenario")
    r = rook_cli("run")
    assert r.exception is None and r.exit_code == 2, r.stderr
    assert "Traceback" not in r.stderr
    profile = rook_workspace.agent_dir / "profiles" / "p.yaml"
    assert (
        "the transport plugin fussy (rook-fussy) could not check scenario 'loud': "
        f"RuntimeError: the check_scenario of fussy has a bug (hooks.execute of {profile})"
    ) in r.stderr, r.stderr
    assert not any(rook_workspace.runs_dir.glob("*/run.json")), "nothing ran"
    # rook doctor said "no problems found" (it never asked check_scenario): it
    # reports rook run's own message now, for a bug and for a reason alike
    def doctor_problems():
        r = rook_cli("doctor", "--json")
        assert r.exception is None and r.exit_code == 1, r.stdout
        return [f["message"] for f in json.loads(r.stdout)["findings"] if f["status"] == "problem"]

    assert doctor_problems() == [r.stderr.removeprefix("rook: error: ").strip()]
    monkeypatch.delenv("FUSSY_FAILS")
    monkeypatch.setenv("FUSSY_SCENARIO_REASON", '"too loud for fussy"')
    r = rook_cli("run")
    assert r.exit_code == 2 and "loud.yaml: too loud for fussy" in r.stderr, r.stderr
    assert doctor_problems() == [r.stderr.removeprefix("rook: error: ").strip()]



PHASED = """
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, phase_hooks


def check_scenario(config, scenario, phase):
    if phase == "execute" and any(len(t) > 20 for t in scenario.turns):
        return "turns.0 is longer than the 20 characters phased takes"
    return None


async def run(call):
    now = time.time()
    data = {"output": call.stdin or ""} if call.phase == "execute" else {}
    return HookResult(call.phase, "ok", 0.0, now, now, data=data, turn=call.turn,
                      transport="phased")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="phased", load_config=lambda v: v,
                           check_scenario=check_scenario, description="a turn, echoed"))


(rook_auth_prepare, rook_session_open, rook_transport_execute, rook_session_close,
 rook_evidence_collect) = phase_hooks("phased", run)
"""


def test_a_transport_check_scenario_may_ask_for_its_phase(
    rook_distribution, rook_workspace, rook_cli
):
    """check_scenario(config, scenario) was asked about every entry, one on open too,
    which sends no turn, and could not tell which phase it checked: a transport used on
    open and execute refused a long turn twice (hooks.open of PROFILE, hooks.execute of
    PROFILE), or had to stash the phase in its config from check. Like check, it now
    gets `phase` (and `profile`) when its signature names them."""
    rook_distribution("rook-phased", {"phased": "rook_phased"}, {"rook_phased.py": PHASED})
    entry = {"phased": "x"}
    rook_workspace.profile({"id": "p", "hooks": {"open": entry, "execute": entry}})
    rook_workspace.scenario({"id": "short", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"short": "passed"}
    rook_workspace.scenario({"id": "long", "goal": "a" * 30, "criteria": [{"contains": "a"}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None, r.stderr
    profile = rook_workspace.agent_dir / "profiles" / "p.yaml"
    assert (
        f"long.yaml: turns.0 is longer than the 20 characters phased takes "
        f"(hooks.execute of {profile})"
    ) in r.stderr, r.stderr
    assert "hooks.open" not in r.stderr, r.stderr
    doctor = rook_cli("doctor", "--json")  # doctor asks through the same check
    problems = [f["message"] for f in json.loads(doctor.stdout)["findings"]
                if f["status"] == "problem"]
    assert problems == [r.stderr.removeprefix("rook: error: ").strip()], problems


BAD_REGISTRATION = """
    from rook_core.hookspecs import hookimpl


    @hookimpl
    def rook_register_reporters(register):
        raise RuntimeError("the licence server is down")
"""

NAMELESS = """
    from rook_core.hookspecs import hookimpl


    @hookimpl
    def rook_register_criteria(register):
        register(object())
"""

UNCALLABLE = """
    from rook_core.hookspecs import hookimpl


    @hookimpl
    def rook_register_reporters(register):
        register("csv", "rook_bad.write_csv")
"""

NONE_NAMED = """
    from rook_core.hookspecs import hookimpl


    @hookimpl
    def rook_register_executors(register):
        register(None, lambda **kw: None)
"""

A_DICT_TRANSPORT = """
    from rook_core.hookspecs import hookimpl


    @hookimpl
    def rook_register_transports(register):
        register({"key": "grpc", "load_config": lambda value: value})
"""

A_JUDGE_CLASS = """
    from rook_core.hookspecs import hookimpl
    from rook_core.models import PASSED, Verdict


    class Tone:
        def __call__(self, config, view):
            return Verdict(PASSED, "calm")


    @hookimpl
    def rook_register_judges(register):
        register("tone", Tone)
"""

ASYNC_REGISTRATION = """
    from rook_core.hookspecs import hookimpl


    @hookimpl
    async def rook_register_reporters(register):
        register("csv", lambda report, path: None)
"""


@pytest.mark.parametrize(
    "module, message",
    [
        (  # registered, listed, and never usable: `- id: x` is a criterion's label
            SHOUT.replace('name = "shouts"', 'name = "id"'),
            "plugin bad (rook-bad): criterion type 'id': scenarios keep 'id' for a "
            "criterion's own key (turn, id), so no scenario could use the type",
        ),
        (  # listed as a transport key, and never usable: a hook entry's own option
            FUSSY.replace('key="fussy"', 'key="delay_seconds"'),
            "plugin bad (rook-bad): transport 'delay_seconds': a profile's hook entry keeps "
            "'delay_seconds' for its own option (timeout_seconds, delay_seconds), so no "
            "profile could use the transport",
        ),
        (  # its coroutine was never run: nothing registered, and a Python RuntimeWarning
            ASYNC_REGISTRATION,
            "plugin bad (rook-bad) returned a coroutine from rook_register_reporters: a "
            "registration hook must be a plain function (def, not async def) (disable it "
            "with ROOK_DISABLE_PLUGINS=bad)",
        ),
        (
            BAD_REGISTRATION,
            "plugin bad (rook-bad) raised RuntimeError in rook_register_reporters: "
            "the licence server is down (disable it with ROOK_DISABLE_PLUGINS=bad)",
        ),
        # an object with no name at all was said to be 'named None', and no way out
        (NAMELESS, "plugin bad (rook-bad): the criterion type it registered is an object, "
         "not a criterion type (register an instance of a rook_core.judging.CriterionType "
         "subclass, with its name); fix the plugin or disable it with ROOK_DISABLE_PLUGINS=bad"),
        (A_DICT_TRANSPORT, "plugin bad (rook-bad): the transport it registered is a dict, not "
         "a transport (register a rook_core.transports.TransportSpec(key=..., load_config=...)); "
         "fix the plugin or disable it with ROOK_DISABLE_PLUGINS=bad"),
        (NONE_NAMED, "plugin bad (rook-bad): the executor it registered is named None (a name "
         "must be a non-empty string); fix the plugin or disable it with "
         "ROOK_DISABLE_PLUGINS=bad"),
        # the class, not an instance: every scenario using it was then refused with
        # 'refused it: TypeError: parse() missing ... value', as if its value were wrong
        (SHOUT.replace("register(Shouts())", "register(Shouts)"),
         "plugin bad (rook-bad): criterion type 'shouts' is the class Shouts, not an instance "
         "(register Shouts()); fix the plugin or disable it with ROOK_DISABLE_PLUGINS=bad"),
        # listed among the installed formats, and never usable: --report a:b:PATH
        # is format 'a', path 'b:PATH'
        (ASYNC_REGISTRATION.replace("async def", "def").replace('"csv"', '"csv:excel"'),
         "plugin bad (rook-bad): reporter 'csv:excel': --report FORMAT:PATH ends the format "
         "at its first ':', so no --report could choose it; rename it, or disable the plugin "
         "with ROOK_DISABLE_PLUGINS=bad"),
        (A_JUDGE_CLASS,
         "plugin bad (rook-bad): judge 'tone' is the class Tone, not an instance (register "
         "Tone()); fix the plugin or disable it with ROOK_DISABLE_PLUGINS=bad"),
        # found only when the report was written, after every scenario had run
        (UNCALLABLE, "plugin bad (rook-bad): reporter 'csv' is a str, not callable (a "
         "reporter is write(report, path)); fix the plugin or disable it with "
         "ROOK_DISABLE_PLUGINS=bad"),
        (UNCALLABLE.replace("reporters", "judges"),
         "plugin bad (rook-bad): judge 'csv' is a str, not callable (a judge is "
         "judge(config, view)); fix the plugin or disable it with ROOK_DISABLE_PLUGINS=bad"),
    ],
)
def test_a_registration_hook_that_raises_or_registers_garbage_is_named(
    rook_distribution, rook_workspace, rook_cli, module, message
):
    """A registration hook's bug (an exception, a thing without a name) is refused
    like a duplicate name: exit 2 naming the plugin and its distribution, never a
    traceback, nothing run; disabling the plugin gets Rook going again."""
    rook_distribution("rook-bad", {"bad": "rook_bad"}, {"rook_bad.py": module})
    echo_workspace(rook_workspace, [{"contains": "HELLO"}])
    for argv in (("plugins",), ("plugins", "--json"), ("run",)):
        r = rook_cli(*argv)
        assert r.exception is None and "Traceback" not in r.stderr, (argv, r.stderr)
        assert r.exit_code == 2 and message in r.stderr, (argv, r.stderr)
    assert not any(rook_workspace.runs_dir.iterdir()), "nothing ran"
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    assert r.exit_code == 1 and "plugin bad (rook-bad)" in r.stdout + r.stderr
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROOK_DISABLE_PLUGINS", "bad")
        assert rook_cli("run", "--json").statuses() == {"loud": "passed"}


def test_a_plugin_whose_entry_point_name_is_taken_is_reported_not_dropped(
    rook_distribution, rook_workspace, rook_cli
):
    """Two distributions with one entry point name: only one can load (the name is how
    operators refer to it). The other was silently dropped, its criteria and reporters
    missing without a word; now it is reported as a failure naming both."""
    rook_distribution("rook-shout", {"criteria": "rook_shout"}, {"rook_shout.py": SHOUT})
    r = rook_cli("plugins")
    assert r.exit_code == 0
    assert (
        "rook: warning: plugin criteria (rook-shout) failed to load: entry point name 'criteria' is already used "
        "by rook-harness, which is loaded instead" in r.stderr
    ), r.stderr
    doc = json.loads(rook_cli("plugins", "--json").stdout)
    assert [f["distribution"] for f in doc["failed"]] == ["rook-shout"]
    assert "contains" in doc["criteria"], "the built-in criteria still load"
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    assert r.exit_code == 1 and "plugin criteria: from rook-shout failed to load" in r.stdout
    assert "pip uninstall rook-shout" in r.stdout
    assert "ROOK_DISABLE_PLUGINS=criteria" not in r.stdout, "that would disable both"
    # between two third-party distributions the choice is stable: by distribution name
    rook_distribution("rook-a", {"shout": "rook_shout_a"}, {"rook_shout_a.py": SHOUT})
    rook_distribution("rook-b", {"shout": "rook_shout_b"}, {"rook_shout_b.py": SHOUT})  # first
    doc = json.loads(rook_cli("plugins", "--json").stdout)
    assert next(p for p in doc["plugins"] if p["name"] == "shout")["distribution"] == "rook-a"
    assert {f["distribution"] for f in doc["failed"]} == {"rook-shout", "rook-b"}


def test_two_entry_points_naming_one_module_name_each_other_in_one_line(
    rook_distribution, rook_workspace, rook_cli
):
    """A second entry point naming a module another one loaded: the module's hooks run
    once, and the second is a failure naming the first, never pluggy's dump of every
    plugin loaded."""
    rook_distribution("rook-shout", {"shout": "rook_shout"}, {"rook_shout.py": SHOUT})
    rook_distribution("rook-again", {"again": "rook_shout"}, {})
    r = rook_cli("plugins")
    assert r.exit_code == 0
    failure = [line for line in r.stderr.splitlines() if line.startswith("rook: warning: plugin ")]
    assert failure == [
        "rook: warning: plugin shout (rook-shout) failed to load: its entry point names rook_shout, which the "
        "entry point again (rook-again) loads already; give each entry point a module "
        "of its own"
    ], r.stderr
    assert "rook_plugins" not in r.stderr, "no dump of the plugins loaded"
    echo_workspace(rook_workspace, [{"shouts": True}])
    r = rook_cli("run", "--json")
    assert r.statuses() == {"loud": "passed"}, "the module's criterion is registered once"


def test_rook_run_says_which_plugin_failed_to_load(rook_distribution, rook_workspace, rook_cli):
    """The profile's transport comes from a plugin that failed to import: rook run
    names the plugin and its error (not only 'unknown transport key'), and a run that
    does not need it still runs, with the same warning."""
    rook_distribution("rook-broken", {"broken": "rook_broken"}, {"rook_broken.py": BROKEN})
    warning = (
        "rook: warning: plugin broken (rook-broken) failed to load: "
        "ImportError: rook-broken needs the acme-sdk package"
    )
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"acme": {"agent": "x"}}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and "hooks.execute.acme: unknown transport key" in r.stderr
    assert warning in r.stderr, r.stderr
    echo_workspace(rook_workspace, [{"contains": "HELLO"}])  # the script transport instead
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"loud": "passed", "s": "passed"}, r.stderr
    assert warning in r.stderr and r.report is not None


def test_a_profile_whose_transport_plugin_failed_to_load_says_so(
    rook_distribution, rook_workspace, rook_cli
):
    """`rook profile test` (show, list, doctor) said only 'unknown transport key;
    installed transports: ...' for a profile whose transport's plugin failed to
    import, as if the profile were wrong: every 'installed: ...' list now names
    the plugins that failed to load."""
    rook_distribution("rook-broken", {"broken": "rook_broken"}, {"rook_broken.py": BROKEN})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"acme": {"agent": "x"}}}})
    note = ("(plugin broken (rook-broken) failed to load: ImportError: rook-broken needs "
            "the acme-sdk package)")
    for argv in (("profile", "test"), ("profile", "show", "p")):
        r = rook_cli(*argv, "-w", str(rook_workspace.root))
        assert r.exit_code == 2 and "hooks.execute.acme: unknown transport key" in r.stderr
        assert note in r.stderr, (argv, r.stderr)


SQUATTER = """
from rook_core.hookspecs import hookimpl


@hookimpl
def rook_register_reporters(register):
    register("json", lambda report, path: path.write_text("not json"))
"""


@pytest.mark.parametrize("entry_point", ["aaa", "zzz"])
def test_a_name_clashing_with_a_builtin_says_to_disable_the_plugin_not_rook(
    rook_distribution, rook_workspace, rook_cli, entry_point
):
    """A plugin that registers a built-in's name (the ``json`` reporter): the way
    out named was whichever plugin registered second, so an entry point sorted
    before ``reporters`` was told ``disable the second with
    ROOK_DISABLE_PLUGINS=reporters`` — Rook's own JSON reporter — and ``uninstall
    one``, which for Rook means uninstalling Rook. Now the fix is always the
    third-party plugin, whatever its name."""
    rook_distribution("rook-squat", {entry_point: "rook_squat"}, {"rook_squat.py": SQUATTER})
    echo_workspace(rook_workspace, [{"contains": "HELLO"}])
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None, r.stderr
    assert "reporter 'json' is registered twice" in r.stderr
    assert f"{entry_point} (rook-squat)" in r.stderr and "reporters (rook-harness)" in r.stderr
    assert f"uninstall rook-squat, or disable it with ROOK_DISABLE_PLUGINS={entry_point}" in (
        r.stderr
    ), r.stderr
    assert "ROOK_DISABLE_PLUGINS=reporters" not in r.stderr
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROOK_DISABLE_PLUGINS", entry_point)
        assert rook_cli("run", "--json").statuses() == {"loud": "passed"}


WAITING = """
import os
import time

from rook_core.hookspecs import hookimpl

while not os.path.exists(os.environ["GO_FILE"]):  # a module that waits as it is imported
    time.sleep(0.05)


@hookimpl
def rook_register_reporters(register):
    register("waited", lambda report, path: path.write_text("waited"))
"""


def test_a_plugin_whose_import_hangs_is_named_on_standard_error_while_rook_waits(
    rook_distribution, tmp_path
):
    """A plugin whose module waits as it is imported (a network call, a sleep)
    held every command with no word: after a few seconds Rook names it on
    standard error, with how to skip it, and goes on once the import ends.
    (A real command: in a test's own process the alarm is pytest-timeout's.)"""
    root = rook_distribution("rook-waiting", {"waiting": "rook_waiting"},
                             {"rook_waiting.py": WAITING})
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(root), "ROOK_NO_CACHE": "1", "GO_FILE": str(go)}
    env.pop("ROOK_DISABLE_PLUGINS", None)
    env.pop("ROOK_LOAD_PLUGINS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "plugins", "--json"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    letting_go = threading.Timer(40, go.touch)  # a command that never says: it ends, silent
    letting_go.start()
    try:
        line = proc.stderr.readline()  # the command says nothing else before it
    finally:
        letting_go.cancel()
        go.touch()
    out, rest = proc.communicate(timeout=60)
    assert proc.returncode == 0, line + rest
    assert line == (
        "rook: warning: plugin waiting (rook-waiting) is still importing rook_waiting after "
        "5 seconds, and Rook waits for it (a plugin should not call a server or wait when it "
        "loads); skip it with ROOK_DISABLE_PLUGINS=waiting, or press Ctrl-C\n"
    )
    assert "still importing" not in rest, rest  # said once
    assert "waited" in json.loads(out)["reporters"]
