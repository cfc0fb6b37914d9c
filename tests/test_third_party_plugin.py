"""A real third-party plugin, installed for real.

``docs/examples/rook-acme`` (its own ``pyproject.toml``, distribution
``rook-acme``, entry point ``acme`` in the ``rook`` group) is pip-installed
next to Rook into a fresh virtual environment (no ``--system-site-packages``:
nothing leaks in from the test's own environment). Then the installed
``rook`` lists it, and scenarios use each of its parts: transport (in process
and through a subprocess), criterion, judge and reporter. The operator
switches and a broken plugin are exercised on the installed entry points too.

Skipped, with the reason, when a virtual environment cannot be built here
(no ``venv``/``ensurepip``, or no package index reachable).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(900)

ROOT = Path(__file__).resolve().parents[1]
ACME = ROOT / "docs" / "examples" / "rook-acme"
NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    ".hypothesis",
    "runs",
    "tests",
    "docs",
    "benchmarks",
    "examples",
    ".testmuai",
)
CANNOT_REACH_INDEX = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "NewConnectionError",
    "ReadTimeoutError",
    "ProxyError",
)


class Venv:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.bin = path / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ROOK_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        }
        env["ROOK_CACHE_DIR"] = os.environ["ROOK_CACHE_DIR"]  # the suite's, never ~/.cache
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.path)
        env.update(extra)
        return env

    def run(
        self,
        *argv: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        program = argv[0] if "/" in argv[0] else str(self.bin / argv[0])
        return subprocess.run(
            [program, *argv[1:]],
            env=env or self.env(),
            cwd=cwd or self.path.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def pip_install(self, *targets: Path) -> None:
        r = self.run(
            "python",
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            *map(str, targets),
            timeout=600,
        )
        if r.returncode != 0:
            output = r.stdout + r.stderr
            if any(marker in output for marker in CANNOT_REACH_INDEX):
                pytest.skip(
                    f"cannot build the virtual environment: no package index: {output[-800:]}"
                )
            pytest.fail(f"pip install {' '.join(map(str, targets))} failed:\n{output[-3000:]}")


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Venv:
    base = tmp_path_factory.mktemp("third-party")
    src = base / "src"
    shutil.copytree(ROOT, src / "rook", ignore=NOT_SOURCE)  # never build in the work tree
    shutil.copytree(
        ACME,
        src / "rook-acme",
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "workspace"),
    )
    path = base / "venv"
    try:
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(path)], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot build a virtual environment: {exc}")
    if made.returncode != 0 or not (path / "bin" / "python").exists():
        pytest.skip(f"cannot build a virtual environment (python -m venv): {made.stderr[-800:]}")
    env = Venv(path)
    env.pip_install(src / "rook", src / "rook-acme")
    return env


@pytest.fixture
def acme_workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(ACME / "workspace", ws, ignore=shutil.ignore_patterns("runs"))
    return ws


def report_of(r: subprocess.CompletedProcess[str]) -> dict:
    assert r.stdout.strip(), r.stderr
    return json.loads(r.stdout)


def statuses(report: dict) -> dict[str, str]:
    return {s["id"]: s["status"] for s in report["scenarios"]}


def test_the_environment_is_clean_and_rook_is_installed_from_the_package(venv):
    r = venv.run(
        "python",
        "-c",
        "import rook_core, rook_acme; print(rook_core.__file__); print(rook_acme.__file__)",
    )
    assert r.returncode == 0, r.stderr
    for line in r.stdout.split():
        assert str(venv.path) in line, "imported from the venv's site-packages, not the work tree"
    r = venv.run("python", "-c", "import pytest")
    assert r.returncode != 0, "the test's own packages do not leak into the venv"


def test_rook_plugins_lists_the_installed_plugin(venv):
    r = venv.run("rook", "plugins", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    acme = next(p for p in doc["plugins"] if p["name"] == "acme")
    assert acme["distribution"] == "rook-acme" and acme["version"] == "0.1.0"
    assert acme["module"] == "rook_acme.plugin"
    assert {
        "rook_register_transports",
        "rook_transport_execute",
        "rook_session_open",
        "rook_session_close",
        "rook_register_criteria",
        "rook_register_judges",
        "rook_register_reporters",
    } <= set(acme["hooks"])
    assert "acme" in doc["transports"] and "acme_ticket" in doc["criteria"]
    assert "acme-tone" in doc["judges"] and "acme-csv" in doc["reporters"]
    assert not [f for f in doc["failed"] if f["name"] == "acme"]
    acme_owner = {"plugin": "acme", "distribution": "rook-acme"}  # which package gives each
    assert doc["owners"]["judges"]["acme-tone"] == acme_owner
    assert doc["owners"]["reporters"]["acme-csv"] == acme_owner
    assert doc["owners"]["transports"]["acme"] == acme_owner
    r = venv.run("rook", "plugins")
    assert "rook-acme" in r.stdout and "acme" in r.stdout
    assert "  acme-tone  · acme (rook-acme)" in r.stdout.splitlines(), r.stdout


def test_scenarios_use_the_transport_criterion_judge_and_reporter(venv, acme_workspace, tmp_path):
    out = tmp_path / "out" / "acme.csv"
    r = venv.run("rook", "run", "-w", str(acme_workspace), "--json", "--report", f"acme-csv:{out}")
    report = report_of(r)
    assert r.returncode == 0, r.stderr
    assert statuses(report) == {"order": "passed", "follow-up": "passed"}
    order = next(s for s in report["scenarios"] if s["id"] == "order")
    types = [c["type"] for c in order["criteria"]]
    assert "acme_ticket" in types and "judge" in types
    judged = next(c for c in order["criteria"] if c["type"] == "judge")
    assert judged["reason"].startswith("tone score") and judged["evidence"]["score"] >= 0.5
    assert order["turns"][0]["evidence"]["desk"] == "polite"
    run_dir = Path(report["run"]["dir"])
    record = json.loads((run_dir / "scenarios" / "follow-up.1.json").read_text())
    assert [h["transport"] for h in record["hooks"]] == ["acme"] * 4  # open, 2 turns, close
    assert record["turns"][0]["conversation"].startswith("acme-")  # the execute hook's answer
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    assert {(row["scenario"], row["status"]) for row in rows} == {
        ("order", "passed"),
        ("follow-up", "passed"),
    }
    assert next(r for r in rows if r["scenario"] == "order")["criteria"] == "4"


def test_the_transport_reaches_the_agent_through_a_subprocess(venv, acme_workspace):
    r = venv.run("rook", "run", "-w", str(acme_workspace), "--profile", "desk-subprocess", "--json")
    report = report_of(r)
    assert r.returncode == 0, r.stderr
    assert statuses(report) == {"order": "passed", "follow-up": "passed"}
    hooks = report["scenarios"][0]["hooks"]
    assert hooks and all(h["exit_code"] == 0 for h in hooks), "a real process answered"


def test_the_criterion_and_judge_fail_a_grumpy_agent(venv, acme_workspace):
    r = venv.run("rook", "run", "-w", str(acme_workspace), "--profile", "grumpy", "--json")
    report = report_of(r)
    assert r.returncode == 1
    order = next(s for s in report["scenarios"] if s["id"] == "order")
    by_type = {c["type"]: c for c in order["criteria"]}
    assert by_type["acme_ticket"]["status"] == "failed"
    assert by_type["judge"]["status"] == "failed" and "tone score 0" in by_type["judge"]["reason"]
    assert by_type["contains"]["status"] == "passed"
    # the README: "order fails tone and ticket, follow-up the ticket"
    follow_up = next(s for s in report["scenarios"] if s["id"] == "follow-up")
    failed = [c["type"] for c in follow_up["criteria"] if c["status"] == "failed"]
    assert (follow_up["status"], failed) == ("failed", ["acme_ticket"]), follow_up["criteria"]


def test_the_judge_through_the_registry(venv):
    script = textwrap.dedent("""
        import json
        from rook_core.judging import EvidenceView
        from rook_core.models import Scenario, TurnEvidence
        from rook_core.plugins import build_plugin_manager

        rook = build_plugin_manager()
        judge = rook.judges.get("acme-tone")
        out = {"owner": rook.judges.owner("acme-tone"),
               "bad_config": judge.check({"min_score": 3}),
               "unknown": judge.check({"colour": "red"}),
               "unknowns": judge.check({"colour": "red", "size": 3}),
               "numbered": judge.check({1: "x", "colour": "red"}),
               "good_config": judge.check({"min_score": 0.6})}
        for text in ("Thank you! Happy to help.", "What now? Whatever."):
            s = Scenario("s", "s", ["hi"])
            view = EvidenceView(s, [TurnEvidence(1, "hi", text)], None, None, 0.0)
            v = judge({"min_score": 0.6}, view)
            out[text] = [v.status, v.reason, v.evidence]
        print(json.dumps(out))
    """)
    r = venv.run("python", "-c", script)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["owner"] == "acme (rook-acme)"
    assert doc["bad_config"] == "acme-tone: min_score must be a number from 0 to 1"
    assert doc["unknown"] == "acme-tone: unknown option colour" and doc["good_config"] is None
    assert doc["unknowns"] == "acme-tone: unknown options colour, size"  # never option(s)
    assert doc["numbered"] == "acme-tone: unknown options 1, colour"  # 1: x, a number key
    assert doc["Thank you! Happy to help."] == ["passed", "tone score 1 (min 0.6)", {"score": 1.0}]
    assert doc["What now? Whatever."][0] == "failed"


def test_operator_switches_on_the_installed_plugin(venv, acme_workspace):
    r = venv.run("rook", "plugins", "--json", env=venv.env(ROOK_DISABLE_PLUGINS="acme"))
    assert "acme" not in {p["name"] for p in json.loads(r.stdout)["plugins"]}
    # the distribution's name, as pip shows it, disables it too
    r = venv.run("rook", "plugins", "--json", env=venv.env(ROOK_DISABLE_PLUGINS="rook-acme"))
    assert "acme" not in {p["name"] for p in json.loads(r.stdout)["plugins"]}
    assert "ROOK_DISABLE_PLUGINS" not in r.stderr, r.stderr
    r = venv.run(
        "rook", "run", "-w", str(acme_workspace), env=venv.env(ROOK_DISABLE_PLUGINS="acme")
    )
    assert r.returncode == 2 and "unknown transport key" in r.stderr, r.stderr
    allow = "acme,script,criteria,judges,executor_local,reporters"
    r = venv.run("rook", "plugins", "--json", env=venv.env(ROOK_LOAD_PLUGINS=allow))
    assert {p["name"] for p in json.loads(r.stdout)["plugins"]} == set(allow.split(","))
    r = venv.run(
        "rook",
        "run",
        "-w",
        str(acme_workspace),
        "-q",
        env=venv.env(ROOK_LOAD_PLUGINS=allow, ROOK_TRACE_PLUGINS="1"),
    )
    assert r.returncode == 0, r.stderr
    assert "[rook-trace] rook_register_judges(register) -> acme (rook-acme)" in r.stderr
    assert "rook_transport_execute(call=HookCall(phase=execute, transport=acme" in r.stderr


def test_a_broken_installed_plugin_is_reported_and_rook_still_runs(venv, acme_workspace, tmp_path):
    pkg = tmp_path / "rook-broken"
    (pkg / "rook_broken").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "rook-broken"
        version = "0.0.1"

        [project.entry-points.rook]
        broken = "rook_broken"
    """)
    )
    (pkg / "rook_broken" / "__init__.py").write_text(
        'raise ImportError("rook-broken needs the acme-sdk package")\n'
    )
    venv.pip_install(pkg)
    try:
        r = venv.run("rook", "plugins")
        assert r.returncode == 0
        assert (
            "rook: warning: plugin broken (rook-broken) failed to load: ImportError: rook-broken needs the "
            "acme-sdk package"
        ) in r.stderr
        assert "rook-acme" in r.stdout
        r = venv.run("rook", "run", "-w", str(acme_workspace), "--json")
        assert r.returncode == 0 and statuses(report_of(r)) == {
            "order": "passed",
            "follow-up": "passed",
        }
        r = venv.run("rook", "doctor", "-w", str(acme_workspace))
        assert r.returncode == 1
        assert "plugin broken: from rook-broken failed to load" in r.stdout
        assert "fix: reinstall or upgrade it (pip install --upgrade rook-broken)" in r.stdout
        r = venv.run(
            "rook", "doctor", "-w", str(acme_workspace), env=venv.env(ROOK_DISABLE_PLUGINS="broken")
        )
        assert r.returncode == 0, r.stdout
        assert "no problems found" in r.stdout
    finally:
        venv.run("python", "-m", "pip", "uninstall", "-y", "-q", "rook-broken")


def test_a_plugin_made_for_a_newer_rook_is_named_and_rook_still_runs(venv, acme_workspace, tmp_path):
    """A package requiring a newer Rook, installed anyway (pip install --no-deps;
    or Rook downgraded under it), was loaded: its hook of the newer Rook made every
    command exit 2 blaming the plugin ('a hook Rook does not define ... fix the
    plugin'). It is reported as a plugin that failed to load, saying which Rook it
    requires, and never imported; the rest of Rook runs."""
    pkg = tmp_path / "rook-future"
    (pkg / "rook_future").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "rook-future"
        version = "3.1"
        dependencies = ["rook-harness>=99"]

        [project.entry-points.rook]
        future = "rook_future"
    """)
    )
    (pkg / "rook_future" / "__init__.py").write_text(
        textwrap.dedent("""
        from rook_core.hookspecs import hookimpl

        print("rook_future imported")


        @hookimpl
        def rook_register_widgets(register):  # a hook of Rook 99
            register("gadget", object())
    """)
    )
    r = venv.run("python", "-m", "pip", "install", "-q", "--no-deps", str(pkg), timeout=600)
    assert r.returncode == 0, r.stderr
    said = (
        "rook: warning: plugin future (rook-future) failed to load: rook-future 3.1 requires "
        "rook-harness>=99, and this Rook is rook-harness 0.1.0: install a Rook it supports "
        "(pip install 'rook-harness>=99') or a release of rook-future made for rook-harness 0.1.0"
    )
    try:
        for _ in range(2):  # found by scanning, then from the cache
            r = venv.run("rook", "plugins")
            assert r.returncode == 0, r.stderr
            assert said in r.stderr.splitlines(), r.stderr
            assert "rook_future imported" not in r.stdout + r.stderr
        r = venv.run("rook", "run", "-w", str(acme_workspace), "--json")
        assert r.returncode == 0, r.stderr
        assert statuses(report_of(r)) == {"order": "passed", "follow-up": "passed"}
        assert said in r.stderr.splitlines()
        r = venv.run("rook", "doctor", "-w", str(acme_workspace))
        assert r.returncode == 1
        assert "fix: install a Rook it supports (pip install 'rook-harness>=99') or a " in r.stdout
    finally:
        venv.run("python", "-m", "pip", "uninstall", "-y", "-q", "rook-future")
    r = venv.run("rook", "plugins")
    assert r.returncode == 0 and "future" not in r.stderr, r.stderr


def test_rook_init_example_works_from_the_installed_package(venv, tmp_path):
    """The sample agent ships as package data: init, then run, passes."""
    r = venv.run(
        "rook", "init", "--project", "demo", "--agent", "sample", "--example", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    r = venv.run("rook", "run", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert set(statuses(report_of(r)).values()) == {"passed"}
