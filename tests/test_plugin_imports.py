"""Loading the built-in plugins imports only what registering them needs.

Every ``rook`` command builds the plugin manager: it imports every plugin
module and runs the registration hooks, so whatever those import is paid on
every command, used or not. What a plugin needs only when it is used (a
schema, a parser, an HTTP client, a report template) is imported inside the
function that uses it. These tests build the plugin manager in a fresh
interpreter and check which modules the plugins' own code imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# What building the plugin manager must not import, in one place. Each is
# needed only when a plugin is used, and costs start-up time on every command:
# marshmallow and yaml only validate definitions (which Rook's cache of
# validated definitions spares a run whose files did not change); jmespath,
# httpx, jinja2, xml, html, tarfile and email serve one transport, criterion,
# report or executor each; the Rook modules below pull in those libraries.
FORBIDDEN = (
    "marshmallow",
    "yaml",
    "jmespath",
    "httpx",
    "jinja2",
    "email",
    "xml",
    "html",
    "tarfile",
    "rook_core.authoring",
    "rook_core.authoring_loop",
    "rook_core.profile_probe",
    "rook_core.profile",
    "rook_core.scenario",
    "rook_plugins.ruhroh_connector",
    "rook_plugins.ruhroh_manifest",
    "rook_plugins.ruhroh_protocol",
    "rook_plugins.http_transport",
)

# Runs in a fresh interpreter. After ``import rook_core.plugins`` (what the core
# imports on its own is not the plugins' doing), a finder first on sys.meta_path
# sees every import of a module not loaded yet and notes the plugin module whose
# code asked for it, directly or through what it called (a module the core
# imports while it looks for entry points is not a plugin's doing). Then the
# registration data a command reads is read, inside the same watch.
PROBE = r"""
import json, sys
import rook_core.plugins

blamed = {}

class Watch:
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame is not None:
            module = frame.f_globals.get("__name__") or ""
            if module == "rook_plugins" or module.startswith("rook_plugins."):
                blamed.setdefault(name, module)
                break
            frame = frame.f_back
        return None

watch = Watch()
sys.meta_path.insert(0, watch)
rook = rook_core.plugins.build_plugin_manager()
data = {
    "plugins": sorted(info.name for info in rook.infos),
    "failures": [f"{f.name}: {f.error}" for f in rook.failures],
    "transports": {k: spec.description for k, spec in rook.transports.items()},
    "criteria": {
        k: [sorted(c.needs), c.per_turn, c.description, c.uses_judge_profile]
        for k, c in rook.criteria.items()
    },
    "judges": rook.judges.names(),
    "reporters": rook.reporters.names(),
    "authors": {k: bool(getattr(a, "fallback", False)) for k, a in rook.authors.items()},
    "executors": rook.executors.names(),
    "connectors": {k: c.name for k, c in rook.connectors.items()},
}
sys.meta_path.remove(watch)
print(json.dumps({"blamed": blamed, "data": data}))
"""


def forbidden(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


def probe(cache_dir: Path) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ROOK_LOAD_PLUGINS", "ROOK_DISABLE_PLUGINS", "ROOK_TRACE_PLUGINS")
    }
    env["ROOK_CACHE_DIR"] = str(cache_dir)
    env.pop("ROOK_NO_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    return result


def test_registering_the_builtin_plugins_imports_nothing_only_use_needs(tmp_path):
    # Twice: the first start looks for entry points (and caches them), the
    # second finds them in the cache, so the core itself imports less.
    for attempt in ("first start", "second start"):
        result = probe(tmp_path / "cache")
        data = result["data"]
        assert data["failures"] == [], attempt
        bad = {m: by for m, by in result["blamed"].items() if forbidden(m)}
        by_plugin: dict[str, list[str]] = {}
        for module, plugin in sorted(bad.items()):
            if module.rpartition(".")[0] not in bad:  # a package's submodules go with it
                by_plugin.setdefault(plugin, []).append(module)
        assert by_plugin == {}, (
            f"{attempt}: registering the plugins imported (plugin: modules) {by_plugin}; "
            "import these inside the functions that use them"
        )


def test_registration_data_is_complete_without_those_imports(tmp_path):
    data = probe(tmp_path / "cache")["data"]
    assert {"script", "http", "ruhroh", "connector"} <= set(data["transports"])
    assert all(data["transports"].values())  # every transport describes itself
    criteria = data["criteria"]
    assert criteria["contains"] == [[], True, criteria["contains"][2], False]
    assert criteria["not_called"][:2] == [["calls"], False]
    assert criteria["max_tokens"][:2] == [["usage"], False]
    assert criteria["max_cost"][:2] == [[], False]  # a cost is no token count
    assert criteria["rubric"][1:] == [False, criteria["rubric"][2], True]
    assert {"json", "status", "file", "command", "judge"} <= set(criteria)
    assert "keywords" in data["judges"]
    assert {"json", "junit", "markdown", "html"} <= set(data["reporters"])
    assert {"curl", "command", "openapi", "script", "url", "ruhroh"} <= set(data["authors"])
    assert [name for name, fallback in data["authors"].items() if fallback] == ["agent"]
    assert {"local", "dask"} <= set(data["executors"])
    assert data["connectors"]["ruhroh-command"] == "ruhroh-command"


AUTHORS_PROBE = r"""
import json, sys
import rook_core.plugins

def loaded():
    return sorted(m for m in sys.modules if m.startswith("rook_plugins.author_"))

rook = rook_core.plugins.build_plugin_manager()
before = loaded()
names = rook.authors.names()
print(json.dumps({"before": before, "names": names, "after": loaded()}))
"""


def test_the_authors_are_registered_and_imported_only_when_asked_for(tmp_path):
    # A run builds the plugin manager but never asks for the authors: their
    # modules (only `rook profile` uses them) must not be imported by it.
    env = {**os.environ, "ROOK_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", AUTHORS_PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["before"] == []
    assert {"agent", "command", "curl", "openapi", "ruhroh", "script", "url"} <= set(
        result["names"]
    )
    assert "rook_plugins.author_curl" in result["after"]


def test_start_up_work_runs_with_the_collector_paused_and_restores_it():
    import gc

    from rook_core.startup import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with collector_paused():
            raise ValueError("a failed start")
    except ValueError:
        pass
    assert gc.isenabled()  # on again after an error
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a caller's choice to keep it off is left alone
    finally:
        gc.enable()


CONSOLE_PROBE = r"""
import atexit, gc, json, sys
import rook_core.console  # what the console script imports first
paused = not gc.isenabled()
atexit.register(lambda: print(json.dumps({
    "paused_at_import": paused, "on_at_exit": gc.isenabled(), "frozen": gc.get_freeze_count(),
})))
sys.argv = ["rook", "plugins"]
rook_core.console.main()
"""


def test_the_console_script_pauses_the_collector_until_the_command_runs(tmp_path):
    env = {**os.environ, "ROOK_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", CONSOLE_PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    state = json.loads(proc.stdout.strip().splitlines()[-1])
    assert state["paused_at_import"] and state["on_at_exit"] and state["frozen"] > 0
