"""One ``rook run`` invocation: validate everything, then drive the engine.

Every configuration problem is found before the first hook runs (exit 2,
nothing run). Then the run directory is created (or reopened with ``--run``),
prepare runs once, the executor drives the scenario runs, and the report is
built from the records on disk.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import process
from .engine import Engine, check_env, plan_runs, resolve_entries
from .errors import ConfigError, ScenarioError
from .models import HOOK_PHASES, Profile
from .phases import parse_phases
from . import plugins as plugin_manager
from .plugins import Rook
from .profile import find_profile
from .redact import Redactor
from .report import build_report, exit_code
from .scenario import load_scenarios, select
from .store import RunDir, create_run, open_run, read_json
from .workspace import Agent, find_workspace, select_agent
from .yamlio import dump_yaml


@dataclass
class RunRequest:
    workspace: str | None = None
    project: str | None = None
    agent: str | None = None
    profile: str | None = None
    phases: str | None = None
    run_id: str | None = None
    only: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    concurrency: int | None = None
    repeat: int | None = None
    executor: str = "local"
    reports: list[tuple[str, str]] = field(default_factory=list)
    on_progress: Callable[[dict[str, Any]], None] | None = None


@dataclass
class RunOutcome:
    report: dict[str, Any]
    exit_code: int
    run_dir: Path
    redactor: Redactor


def parse_report_option(value: str, rook: Rook) -> tuple[str, str]:
    fmt, sep, path = value.partition(":")
    if not sep or not path:
        raise ConfigError(f"--report {value}: use FORMAT:PATH, e.g. json:report.json")
    if fmt not in rook.reporters:
        raise ConfigError(
            f"--report {value}: unknown format {fmt!r}; installed: {', '.join(rook.reporters.names())}"
        )
    return fmt, path


def observed_file(agent: Agent, profile: Profile) -> Path:
    return agent.profiles_dir / f"{profile.id}.observed.json"


def load_observed(agent: Agent, profile: Profile) -> dict[str, bool]:
    try:
        data = read_json(observed_file(agent, profile))
    except Exception:
        return {}
    return {k: bool(v) for k, v in (data or {}).items() if isinstance(data, dict)}


def save_observed(agent: Agent, profile: Profile, observed: dict[str, bool]) -> None:
    from .store import atomic_write, dumps

    merged = {**load_observed(agent, profile), **{k: True for k, v in observed.items() if v}}
    try:
        atomic_write(observed_file(agent, profile), dumps(merged))
    except Exception:
        pass  # history of observations is a convenience; never fail a run on it


def write_reports(rook: Rook, report: dict[str, Any], reports: list[tuple[str, str]]) -> None:
    for fmt, path in reports:
        writer = rook.reporters.get(fmt)
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            writer(report, target)
        except OSError as exc:
            raise ConfigError(f"--report {fmt}:{path}: cannot write: {exc.strerror or exc}") from None


def prepare_run(request: RunRequest, rook: Rook) -> tuple[Agent, Profile, RunDir, dict[str, Any], list[Any], list[str], Redactor]:
    phases = parse_phases(request.phases)
    reports = [parse_report_option(r, rook) if isinstance(r, str) else r for r in request.reports]
    request.reports = reports
    if request.executor not in rook.executors:
        raise ConfigError(
            f"--executor {request.executor}: unknown; installed: {', '.join(rook.executors.names())}"
        )
    workspace = find_workspace(request.workspace)
    agent = select_agent(workspace, request.project, request.agent)

    manifest: dict[str, Any] | None = None
    profile_name = request.profile
    if request.run_id:
        run_path = agent.runs_dir / request.run_id
        manifest = read_json(run_path / "run.json") if (run_path / "run.json").is_file() else None
        if manifest is None:
            open_run(agent.runs_dir, request.run_id, Redactor())  # raises the clear error
        assert manifest is not None
        pinned = manifest["profile"]["id"]
        if profile_name is None:
            profile_name = pinned
    profile = find_profile(agent.profiles_dir, profile_name, rook.transports)
    if manifest is not None and profile.id != manifest["profile"]["id"]:
        raise ConfigError(
            f"--run {request.run_id} was made with profile {manifest['profile']['id']!r}, "
            f"not {profile.id!r}; a run keeps its profile"
        )
    resolve_entries(rook, profile, agent)
    if any(p in HOOK_PHASES for p in phases):
        check_env(profile)
    redactor = Redactor.for_variables([e.variable for e in profile.env])

    scenarios = load_scenarios(agent.scenarios_dir, rook.criteria)
    if manifest is not None:
        planned_ids = list(dict.fromkeys(k.rsplit(".", 1)[0] for k in manifest["plan"]))
        by_id = {s.id: s for s in scenarios}
        gone = [i for i in planned_ids if i not in by_id]
        if gone:
            raise ScenarioError(
                f"--run {request.run_id}: scenario(s) {', '.join(gone)} of this run no longer exist "
                f"in {agent.scenarios_dir}"
            )
        scenarios = [by_id[i] for i in planned_ids]
        scenarios = select(scenarios, request.only or None, request.tags or None)
        counts: dict[str, int] = {}
        for key in manifest["plan"]:
            sid = key.rsplit(".", 1)[0]
            counts[sid] = counts.get(sid, 0) + 1
        runs = [r for s in scenarios for r in plan_runs([s], counts[s.id])]
        run = RunDir(agent.runs_dir / request.run_id, redactor)
    else:
        scenarios = select(scenarios, request.only or None, request.tags or None)
        if not scenarios:
            raise ScenarioError(f"no scenario selected in {agent.scenarios_dir}")
        runs = plan_runs(scenarios, request.repeat)
        run = create_run(agent.runs_dir, redactor)
        manifest = {
            "id": run.id,
            "dir": str(run.path),
            "workspace": str(agent.workspace),
            "project": agent.project,
            "agent": agent.name,
            "profile": {"id": profile.id, "name": profile.name, "file": str(profile.path)},
            "created": time.time(),
            "plan": [r.key for r in runs],
            "phases": [],
            "invocations": [],
            "capabilities": {"declared": dict(profile.capabilities), "observed": {}},
        }
        run.write_text("profile.yaml", dump_yaml(profile.raw))
    return agent, profile, run, manifest, runs, phases, redactor


async def _drive(rook: Rook, engine: Engine, manifest: dict[str, Any], runs: list[Any], request: RunRequest, concurrency: int) -> None:
    await engine.start_transports()
    try:
        await engine.prepare(manifest)
        executor = rook.executors.get(request.executor)
        await executor(engine=engine, scenario_runs=runs, concurrency=concurrency, options={})
    finally:
        await engine.stop_transports()
        process.kill_leftovers()


def run(request: RunRequest, rook: Rook | None = None) -> RunOutcome:
    rook = rook or plugin_manager.build_plugin_manager()
    agent, profile, run_dir, manifest, runs, phases, redactor = prepare_run(request, rook)
    concurrency = request.concurrency or profile.concurrency
    engine = Engine(
        rook,
        agent,
        profile,
        run_dir,
        phases,
        redactor,
        observed_before=load_observed(agent, profile),
        on_progress=request.on_progress,
    )
    invocation = {"phases": phases, "started": time.time(), "pid": os.getpid(), "concurrency": concurrency}
    manifest["invocations"].append(invocation)
    for p in phases:
        if p not in manifest["phases"]:
            manifest["phases"].append(p)
    manifest["phases"].sort(key=["prepare", "open", "execute", "close", "collect", "judge"].index)
    run_dir.write_json("run.json", manifest)
    try:
        asyncio.run(_drive(rook, engine, manifest, runs, request, concurrency))
    finally:
        observed = {**manifest["capabilities"].get("observed", {}), **engine.observed}
        manifest["capabilities"]["observed"] = observed
        invocation["ended"] = time.time()
        run_dir.write_json("run.json", manifest)
        save_observed(agent, profile, engine.observed)
    records = [run_dir.load_scenario(key) or engine.new_record(sr) for key, sr in ((r.key, r) for r in runs)]
    report = redactor.data(build_report(manifest, records))
    run_dir.write_json("report.json", report)
    write_reports(rook, report, request.reports)
    return RunOutcome(report, exit_code(report), run_dir.path, redactor)
