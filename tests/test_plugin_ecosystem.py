"""The plugin ecosystem as a user who installed community packages meets it.

Each plugin here is a real installed distribution (``rook_distribution``: an
entry point in the ``rook`` group, found as ``pip install`` would leave it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from xml.etree import ElementTree

import pytest

ROOK = [sys.executable, "-m", "rook_core"]

COUNTED = """
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing

LOG = {log!r}


def said(word):
    with open(LOG, "a") as fh:
        fh.write(word + "\\n")


async def start(run):
    said("start")
    return "pool"


async def stop(resource):
    said("stop")


async def answer(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={{"output": call.stdin}},
                      turn=call.turn, transport="counted")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="counted", load_config=lambda value: value,
                           saved_names=saves_nothing, start=start, stop=stop))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "counted" else None
"""


def test_a_transport_is_started_only_when_a_phase_that_runs_uses_it(
    rook_distribution, rook_workspace, rook_cli, tmp_path
):
    """``rook run --run ID --phases collect,judge`` started (and stopped) the
    transport of the execute hook, though no phase it runs uses it: a
    connection pool opened, a service woken, for nothing. Only the transports
    of the hooks of the phases that run are started."""
    log = tmp_path / "counted.log"
    rook_distribution(
        "rook-counted", {"counted": "rook_counted"}, {"rook_counted.py": COUNTED.format(log=str(log))}
    )
    rook_workspace.script("collect.sh", "#!/bin/bash\necho '{}'\n")
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": {"counted": {}}, "collect": "scripts/collect.sh"}}
    )
    rook_workspace.scenario({"id": "s", "goal": "HELLO", "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0, r.stderr
    assert log.read_text().split() == ["start", "stop"]
    r = rook_cli("run", "--json", "--run", r.report["run"]["id"], "--phases", "collect,judge")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr
    assert log.read_text().split() == ["start", "stop"], "no phase of the second used it"


COMMUNITY = """
from rook_core.hookspecs import hookimpl
from rook_core.models import PASSED, Verdict


class Tone:
    def __call__(self, config, view):
        return Verdict(PASSED, "fine")


def write_csv(report, path):
    path.write_text("scenario,status\\n")


async def serial(engine, scenario_runs, concurrency, options):
    for sr in scenario_runs:
        await engine.run_scenario(sr)


@hookimpl
def rook_register_judges(register):
    register("acme-tone", Tone())


@hookimpl
def rook_register_reporters(register):
    register("csv", write_csv)


@hookimpl
def rook_register_executors(register):
    register("serial", serial)
"""


def _block(stdout: str, kind: str) -> list[str]:
    """The lines of ``rook plugins`` listing ``kind`` (``judges``: its ``  NAME ...`` lines)."""
    lines = stdout.splitlines()
    rest = lines[lines.index(f"{kind}:") + 1 :]
    return rest[: next((i for i, ln in enumerate(rest) if not ln.startswith("  ")), len(rest))]


def test_rook_plugins_names_the_plugin_of_every_judge_reporter_and_executor(
    rook_distribution, rook_cli
):
    """``rook plugins`` said which plugin registered each transport and criterion
    type, but listed judges, reporters and executors (and authors, connectors) by
    name alone, and ``--json`` said it for none: a user could not tell which
    installed package gives ``--report csv`` or the judge ``acme-tone``. Every kind
    is now listed the same way (``NAME  [description  ]· PLUGIN (DIST)``), and
    ``--json`` has ``owners``: for each kind, each name's plugin and distribution."""
    rook_distribution(
        "rook-csvreport", {"csvreport": "rook_csvreport"}, {"rook_csvreport.py": COMMUNITY}
    )
    r = rook_cli("plugins")
    assert r.exit_code == 0, r.stderr
    judges = _block(r.stdout, "judges")
    assert "  acme-tone  · csvreport (rook-csvreport)" in judges, r.stdout
    assert "  keywords   · judges (rook-harness)" in judges, r.stdout
    assert "  csv               · csvreport (rook-csvreport)" in _block(r.stdout, "reporters"), r.stdout
    assert "  json              · reporters (rook-harness)" in _block(r.stdout, "reporters"), r.stdout
    assert "  serial  · csvreport (rook-csvreport)" in _block(r.stdout, "executors"), r.stdout
    for kind in ("authors", "connectors"):
        assert all("· " in line for line in _block(r.stdout, kind)), r.stdout
    assert "  script     run a hook script" in "\n".join(_block(r.stdout, "transports"))

    doc = json.loads(rook_cli("plugins", "--json").stdout)
    owners = doc["owners"]
    community = {"plugin": "csvreport", "distribution": "rook-csvreport"}
    assert owners["judges"]["acme-tone"] == community
    assert owners["reporters"]["csv"] == community
    assert owners["executors"]["serial"] == community
    assert owners["reporters"]["json"] == {"plugin": "reporters", "distribution": "rook-harness"}
    assert owners["transports"]["script"] == {"plugin": "script", "distribution": "rook-harness"}
    assert owners["criteria"]["contains"]["distribution"] == "rook-harness"
    for kind in ("transports", "criteria", "judges", "reporters", "authors", "executors",
                 "connectors"):
        assert sorted(owners[kind]) == doc[kind], kind  # every name has its owner


def _plugin_names(rook_cli) -> set[str]:
    r = rook_cli("plugins", "--json")
    assert r.exit_code == 0, r.stderr
    return {p["name"] for p in json.loads(r.stdout)["plugins"]}


def test_the_plugin_switches_take_a_distribution_name_as_pip_shows_it(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """``ROOK_DISABLE_PLUGINS=rook-csvreport`` (the name pip shows, which users
    type) disabled nothing and only warned that no plugin is called so, without
    saying the plugin is ``csvreport``. A name in either switch now matches a
    plugin's entry point name or its distribution's name (as pip compares them:
    ``Rook_CSVReport`` is ``rook-csvreport``), meaning every plugin of it; a
    name matching neither is still warned of, and flagged by ``rook doctor``."""
    rook_distribution(
        "rook-csvreport", {"csvreport": "rook_csvreport"}, {"rook_csvreport.py": COMMUNITY}
    )
    assert "csvreport" in _plugin_names(rook_cli)
    for given in ("rook-csvreport", "Rook_CSVReport", "rook.csvreport", "csvreport"):
        monkeypatch.setenv("ROOK_DISABLE_PLUGINS", given)
        names = _plugin_names(rook_cli)
        assert "csvreport" not in names and "script" in names, given
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", "rook-csvreport")
    rook_workspace.script("echo.sh", "#!/bin/bash\n[ \"$1\" = execute ] && echo '{\"output\": \"hi\"}'\n")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert "ROOK_DISABLE_PLUGINS" not in r.stderr, r.stderr
    r = rook_cli("run", "--report", "csv:out.csv")
    assert r.exit_code == 2 and "unknown format 'csv'" in r.stderr, r.stderr
    r = rook_cli("doctor")
    assert "ROOK_DISABLE_PLUGINS names" not in r.stdout + r.stderr, r.stdout

    monkeypatch.delenv("ROOK_DISABLE_PLUGINS")
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", "rook-csvreport,script")
    assert _plugin_names(rook_cli) == {"csvreport", "script"}
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", "rook-harness")  # every plugin of Rook's own
    names = _plugin_names(rook_cli)
    assert "csvreport" not in names and {"script", "reporters", "executor_local"} <= names

    monkeypatch.delenv("ROOK_LOAD_PLUGINS")
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", "rook-csvreprot")  # misspelt: still said
    r = rook_cli("run", "--json")
    assert (
        "rook: warning: ROOK_DISABLE_PLUGINS names 'rook-csvreprot', which no installed plugin"
    ) in r.stderr, r.stderr
    r = rook_cli("doctor")
    assert "ROOK_DISABLE_PLUGINS names 'rook-csvreprot'" in r.stdout + r.stderr

    # two distributions with one entry point name: the one loaded can now be chosen
    monkeypatch.delenv("ROOK_DISABLE_PLUGINS")
    rook_distribution("rook-csvfork", {"csvreport": "rook_csvfork"}, {"rook_csvfork.py": COMMUNITY})
    doc = json.loads(rook_cli("plugins", "--json").stdout)
    assert doc["owners"]["reporters"]["csv"]["distribution"] == "rook-csvfork"  # first by name
    assert [f["distribution"] for f in doc["failed"]] == ["rook-csvreport"]
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", "rook-csvfork")
    doc = json.loads(rook_cli("plugins", "--json").stdout)
    assert doc["owners"]["reporters"]["csv"]["distribution"] == "rook-csvreport"
    assert doc["failed"] == []


@pytest.mark.parametrize(
    "value, broken",
    [
        ("rook_csva", "raise ImportError('rook-csva needs the acme-sdk package')\n"),
        ("rook_csva:PLUGIN", "PLUGIN = None\n"),  # names nothing
        ("rook_csva", "def rook_register_reporters(register):\n    pass\n"),  # no @hookimpl
    ],
)
def test_of_two_distributions_with_one_name_the_next_loads_when_the_first_cannot(
    rook_distribution, rook_cli, value, broken
):
    """Two distributions with one entry point name: the first by distribution name
    loads. When it could not (an import error, no hook), the other was not tried
    either and was reported as 'already used by rook-csva, which is loaded
    instead', which nothing was: neither loaded. The name goes to the next one,
    and only the one that failed is reported."""
    rook_distribution("rook-csva", {"csvreport": value}, {"rook_csva.py": broken})
    rook_distribution("rook-csvb", {"csvreport": "rook_csvb"}, {"rook_csvb.py": COMMUNITY})
    r = rook_cli("plugins", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["owners"]["reporters"]["csv"]["distribution"] == "rook-csvb"
    assert [f["distribution"] for f in doc["failed"]] == ["rook-csva"], doc["failed"]
    assert "which is loaded instead" not in r.stderr, r.stderr


def _example(tmp_path):
    """``rook init --example``: a workspace whose ``rook run`` passes (3 scenarios)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    made = subprocess.run([*ROOK, "init", "--project", "demo", "--agent", "sample", "--example"],
                          cwd=ws, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    return ws


@pytest.mark.parametrize("target", ["/dev/stdout", "/proc/self/fd/1"])
def test_a_report_to_standard_output_by_its_path_is_all_standard_output_holds(tmp_path, target):
    """``rook run --report junit:/dev/stdout | junit-parser``: the results table
    followed the report on standard output, so the parser got a broken document,
    though ``-`` sends the table to standard error. A target that is standard
    output (the same file as it: /dev/stdout, /proc/self/fd/1, the file it is
    redirected to) is treated as ``-`` is: the table goes to standard error."""
    ws = _example(tmp_path)
    proc = subprocess.run([*ROOK, "run", "--report", f"junit:{target}"], cwd=ws,
                          capture_output=True, text=True, timeout=120)  # stdout: a pipe
    assert proc.returncode == 0, proc.stderr
    root = ElementTree.fromstring(proc.stdout)  # the report alone: one XML document
    assert root.tag == "testsuites", proc.stdout
    assert "3 passed" in proc.stderr, proc.stderr  # the table, where - puts it
    out = tmp_path / "out.xml"
    with out.open("w") as fh:  # rook run --report junit:out.xml > out.xml
        proc = subprocess.run([*ROOK, "run", "--report", f"junit:{out}"], cwd=ws, stdout=fh,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ElementTree.fromstring(out.read_text()).tag == "testsuites"
    assert "3 passed" in proc.stderr, proc.stderr
    # a report to another file, or to standard error, leaves the table where it was
    proc = subprocess.run([*ROOK, "run", "--report", "junit:/dev/stderr"], cwd=ws,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "3 passed" in proc.stdout, proc.stdout
    assert "<testsuites" not in proc.stdout
