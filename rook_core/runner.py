"""One ``rook run`` invocation: validate everything, then drive the engine.

Every configuration problem is found before the first hook runs (exit 2,
nothing run). Then the run directory is created (or reopened with ``--run``),
prepare runs once, the executor drives the scenario runs, and the report is
built from the records on disk.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from . import __version__, history, known_secrets, process, procscan, sharding
from . import plugins as plugin_manager
from .definitions import (
    HIDDEN_NOTE,
    DefinitionCache,
    find_profile,
    load_scenarios,
    other_secret_names,
    profile_copy,
    select,
)
from .engine import Engine
from .errors import (
    ConfigError,
    HookFailed,
    MissingEnvError,
    ProfileNotFound,
    RookError,
    RunStopped,
    ScenarioError,
    counted,
    did_you_mean,
    exception_text,
    typed,
)
from .evaluating import let_threads_go
from .hookenv import missing_env
from .interrupts import Interrupts, after_hooks, late_signal, report_cut
from .interrupts import restore as restore_signals
from .judge_client import setup_judging
from .judging import JudgingContext, check_message
from .models import HOOK_PHASES, PHASES, Profile, Scenario, hook_env_references
from .observed import load_observed, save_observed
from .phases import parse_phases
from .plain import plain
from .plugins import Rook, count_cancellations, plugin_failure, switch_warnings
from .preflight import check_scenarios, declared_continuity, plan_runs, resolve_entries
from .redact import Redactor, scrub, too_short_warning
from .redact import activate as activate_redactor
from .registry import Registry
from .report import Spooled, exit_code, write_report
from .reporting import (
    STDOUT,
    back_to,
    check_definitions_kept,
    check_report_targets,
    finish_flags,
    parse_report_options,
    report_failures,
    working_folder,
    write_reports,
)
from .startup import collector_paused
from .store import RunDir, discard_unstarted, planned_records
from .workspace import Agent, find_workspace, read_config, select_agent


@plain
class RunRequest:
    """What ``rook run`` was asked to do (its flags)."""

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
    reports: list[Any] = field(default_factory=list)
    """``FORMAT:PATH`` strings (validated into ``(format, path)`` pairs)."""
    cwd: str | None = None
    """The working folder the reports' relative paths are in (set with them)."""
    on_progress: Callable[[dict[str, Any]], None] | None = None
    on_start: Callable[[str], None] | None = None
    """Told, once its scenario runs are planned and before its first hook runs, what
    the run is about to do (:func:`starting`): ``rook run`` says it on a terminal."""
    classes: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    judge_profile: str | None = None
    min_pass_rate: float | None = None
    shard: str | None = None
    """``I/N``: run only this shard of the selected scenario runs (:mod:`rook_core.sharding`)."""
    run_name: str | None = None
    """A name every shard (or a CI retry) passes; the run id is derived from it."""
    executor_options: dict[str, Any] = field(default_factory=dict)
    """Passed to the executor as ``options`` (e.g. ``{"scheduler": ADDRESS}`` for dask)."""
    found_by: str = ""
    """The ``-w``, ``--project`` and ``--agent`` flags that found the agent (`` -w DIR
    --agent A``): the stored reasons' ``rook run --run ID`` ends with them."""

    def kept(self) -> str:
        """The ``--min-pass-rate``, ``--concurrency`` and ``--report`` flags this run was
        given (:func:`~rook_core.reporting.finish_flags`), for a command a refusal names
        in its place: run as printed, it has the same gate (so exit code). Error path."""
        reports = [r if isinstance(r, str) else f"{r[0]}:{r[1]}" for r in self.reports]
        return finish_flags(reports, self.min_pass_rate, self.concurrency, *self.executed_by())

    def executed_by(self) -> tuple[str, str | None]:
        """The ``--executor`` this run was given and its ``--scheduler``, for a command
        stored or printed that finishes the run (read from anywhere: a scheduler file
        given by a relative path is made absolute)."""
        scheduler = self.executor_options.get("scheduler")
        if isinstance(scheduler, str) and "://" not in scheduler and os.path.exists(scheduler):
            scheduler = os.path.abspath(os.path.join(self.cwd or "", scheduler))
        return self.executor, scheduler if isinstance(scheduler, str) else None

    def selectors(self, with_only: bool = True) -> list[tuple[str, list[str]]]:
        """The selectors given, each flag with its values (``("--tag", ["smoke"])``),
        ``--only`` first (left out without ``with_only``)."""
        given = (
            ("--only", self.only if with_only else []),
            ("--tag", self.tags),
            ("--class", self.classes),
            ("--category", self.categories),
        )
        return [(flag, list(values)) for flag, values in given if values]

    def case_hint(self, every: list[Scenario]) -> str:
        """`` (did you mean --tag Smoke? ...)`` when a tag, class or category given
        names none of the scenarios' but one of them written in other letters' case:
        the selectors compare names exactly, as ``--only`` compares ids."""
        given = dict(self.selectors(with_only=False))
        fixed = [
            f"{flag} {','.join(right)}"
            for flag, right in self.in_their_case(every).items()
            if right != given.get(flag)
        ]
        if not fixed:
            return ""
        return f" (did you mean {' '.join(fixed)}? tags, classes and categories are case-sensitive)"

    def in_their_case(self, every: list[Scenario]) -> dict[str, list[str]]:
        """The tags, classes and categories given, by flag, each written as a scenario
        of ``every`` writes it where it is there only in other letters' case."""
        right: dict[str, list[str]] = {}
        for flag, values, key in (
            ("--tag", self.tags, None),
            ("--class", self.classes, "class"),
            ("--category", self.categories, "category"),
        ):
            if not values:
                continue
            names = {
                str(n)
                for s in every
                for n in (s.tags if key is None else [s.extra.get(key)])
                if n is not None
            }
            by_case = {n.casefold(): n for n in sorted(names, reverse=True)}
            right[flag] = [v if v in names else by_case.get(v.casefold(), v) for v in values]
        return right

    def selected(
        self,
        scenarios: list[Scenario],
        include_excluded: bool = False,
        only: list[str] | None | Literal[False] = False,
    ) -> list[Scenario]:
        """The scenarios ``--only``, ``--tag``, ``--class`` and ``--category`` select
        (:func:`~rook_core.definitions.select`); ``only`` given stands for ``--only``'s
        ids (``None``: none, the other selectors alone)."""
        return select(
            scenarios,
            (self.only if only is False else only) or None,
            self.tags or None,
            self.classes or None,
            self.categories or None,
            include_excluded=include_excluded,
        )


@plain
class RunOutcome:
    """A finished run: its report, its exit code and its directory."""

    report: dict[str, Any]
    exit_code: int
    run_dir: Path
    redactor: Redactor
    interrupted: bool = False
    report_errors: list[str] = field(default_factory=list)
    """Why each ``--report`` that could not be written at the end failed (said on
    standard error already; the exit code is then at least 1)."""
    stopped: bool = False
    """The executor stopped the run (:class:`RunStopped`): the command that finishes
    it is said on standard error already."""
    reports_written: list[tuple[str, str]] = field(default_factory=list)
    """Each ``--report`` (format, path) written at the end."""


@contextmanager
def _also_unset(unset: str | None) -> Iterator[None]:
    """A scenario problem raised inside, told with ``unset`` (the profile's ``env``
    variables not set, :func:`~rook_core.hookenv.missing_env`) when there is one."""
    try:
        yield
    except ScenarioError as exc:
        if unset is None:
            raise
        raise ScenarioError(f"{exc}\nrook: error: {unset}") from None


def _none_selected(request: RunRequest, agent: Agent, every: list[Scenario]) -> str:
    """Why a new run selected no scenario: the selectors given, and what there is."""
    given = [f"{flag} {','.join(values)}" for flag, values in request.selectors()]
    if not every:
        return (
            f"no scenarios in {agent.scenarios_dir}: write one there (a .yaml file with id, "
            "goal and criteria; see docs/scenarios.md in Rook's source)"
        )
    tags = sorted({t for s in every for t in s.tags})
    there = [f"tags: {', '.join(tags) or 'none'}"]
    for values, key in ((request.classes, "class"), (request.categories, "category")):
        if values:  # what the flag could have named
            kept = sorted({str(s.extra[key]) for s in every if s.extra.get(key) is not None})
            there.append(f"{key}: {', '.join(kept) or 'none'}")
    if given and not request.only:  # what they would select, were it not excluded
        right = request.in_their_case(every)  # as meant, when only the case was wrong
        parked = select(
            every,
            None,
            right.get("--tag"),
            right.get("--class"),
            right.get("--category"),
            include_excluded=True,
        )
        parked = [s for s in parked if s.extra.get("excluded")]  # the case's: not all of them
        if parked:
            ids = ", ".join(s.id for s in parked)
            there.append(f"excluded: true, run only when --only names them: {ids}")
    every_id = [s.id for s in every]
    only = ",".join(every_id[:10]) + (",..." if len(every_id) > 10 else "")
    return (
        f"no scenario selected in {agent.scenarios_dir}"
        + (
            f" by {' '.join(given)}{request.case_hint(every)}"
            if given
            else " (every scenario there is excluded: true, which runs only when --only names "
            f"it: --only {only})"
        )
        + f" ({counted(len(every), 'scenario')} there; {'; '.join(there)})"
    )


def check_names_hold_no_secret(
    redactor: Redactor, profile: Profile, scenarios: list[Scenario], criteria: Registry
) -> None:
    """Refuse a new run whose profile id or a selected scenario's id holds the
    value of a profile env variable: the ids name the run's files (records,
    state directories) and are read back from its manifest to resume, shard
    and merge it, where the redacted form would find nothing."""
    if not redactor:  # no env values: nothing to find
        return
    named = [f"profile {redactor.text(profile.id)} ({redactor.text(str(profile.path))})"]
    named = named if redactor.text(profile.id) != profile.id else []
    named += [
        f"scenario {redactor.text(s.id)}" + (f" ({redactor.text(str(s.path))})" if s.path else "")
        for s in scenarios
        if redactor.text(s.id) != s.id
    ]
    if named:
        raise ConfigError(
            f"{'; '.join(named)}: the id holds the value of a profile env variable; an id names "
            "the run's files and is how a resumed, sharded or merged run finds them, so it is "
            "never redacted: give it another id (id: in its file)"
        )
    criteria_hold_no_secret(redactor, scenarios, criteria)


_MARKER = r"\[redacted:([A-Za-z_][A-Za-z0-9_]*)\]"  # compiled on first use (re's cache)


def _redacted_texts(value: Any, redactor: Redactor, nested: bool = False) -> Any:
    """``value`` as the record would hold it: each text in it redacted, and a number
    inside a mapping or list (a call's argument) equal to a numeric secret made the
    marker, or holding one among its digits redacted as a string (``"-[redacted:PIN]"``),
    as a hook's JSON number is recorded; the whole value a number as it is
    (a limit equal to a numeric secret is compared with a count, not with a record)."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, list):
        return [_redacted_texts(v, redactor, True) for v in value]
    if isinstance(value, dict):  # a name too (a call's argument: the record's key is redacted)
        return {
            _redacted_key(k, redactor): _redacted_texts(v, redactor, True) for k, v in value.items()
        }
    return redactor.data(value, printed=True) if nested else value


def _redacted_key(key: Any, redactor: Redactor) -> Any:
    """A mapping's key as the record would hold it (:meth:`Redactor.key`): a hook's
    JSON keys are text, so a number YAML read (``48213957: 1``) as its text."""
    if isinstance(key, bool) or not isinstance(key, (str, int, float)):
        return key
    shown = redactor.key(str(key), printed=True)  # a call's argument: what the hook printed
    return key if shown == str(key) else shown


def _as_written(shown: Any, config: Any) -> Any:
    """``shown`` (a criterion's value as the record holds it) as it is to be written:
    in a regular expression (``matches``, ``claim``'s ``says``: the parsed value has
    a ``pattern``) each marker escaped, ``\\[redacted:NAME\\]``, since ``[...]`` is a
    character class there, which would match a single letter of it."""
    if isinstance(shown, str) and isinstance(getattr(config, "pattern", None), str):
        return re.sub(_MARKER, lambda m: re.escape(m.group(0)), shown)
    if isinstance(shown, dict) and isinstance(config, dict):
        return {k: _as_written(v, config.get(k)) for k, v in shown.items()}
    return shown


def criteria_hold_no_secret(
    redactor: Redactor, scenarios: list[Scenario], criteria: Registry
) -> None:
    """Refuse a run whose selected scenarios hold a criterion written with the
    value of a profile env variable in a text: a scenario file is shared and
    kept, and the value written there is a leak of its own; the message gives
    the criterion as the record holds it (``not_contains: "[redacted:NAME]"``),
    which is judged on the record. Only the types that compare their text with
    the record (``compares_record_text``). Once per
    run (a new one, a resumed one: its files as they are now, and ``rook doctor``)."""
    if not redactor:  # no env values: nothing to find
        return
    problems = []
    for s in scenarios:
        for c in s.criteria:
            if not getattr(criteria.get(c.type), "compares_record_text", False):
                continue  # command runs its text, file reads real files, rubric: redacted too
            value = c.raw.get(c.type)
            shown = _redacted_texts(value, redactor)
            if shown == value:
                continue
            text = json.dumps(shown, ensure_ascii=False, default=str)
            names = sorted(
                set(re.findall(_MARKER, text))
                - set(re.findall(_MARKER, json.dumps(value, default=str)))
            )
            which = "the profile env variable " + ", ".join(names) if names else "an env variable"
            where = f"{redactor.text(str(s.path))}: " if s.path else ""
            problems.append(
                f"{where}scenario {redactor.text(s.id)}: criteria.{c.index}.{c.type}: holds the "
                f"value of {which}, which a scenario file must never hold (it is shared and kept; "
                "every record and message shows the value redacted); write it as the record "
                f"holds it, judged as recorded: {c.type}: "
                + redactor.head(
                    json.dumps(_as_written(shown, c.config), ensure_ascii=False, default=str),
                    200,
                    "...",
                )
            )
    if problems:
        raise ConfigError("\n".join(problems))


def prepare_run(
    request: RunRequest, rook: Rook
) -> tuple[Agent, Profile, RunDir, dict[str, Any], list[Any], list[str], Redactor, JudgingContext]:
    # what it would have registered is missing from this run; its error may say a secret
    failed = known_secrets.workspace_redactor(request.workspace) if rook.failures else None
    for f in rook.failures:
        sys.stderr.write(
            f"rook: warning: plugin {f.name} ({f.distribution or 'unknown distribution'}) "
            f"failed to load: {failed.text(f.error) if failed else f.error}\n"
        )
    for line in switch_warnings(rook):  # a misspelt name (doctor names it too)
        sys.stderr.write(line + "\n")
    # a value as typed (a folder of --report's PATH) may hold a secret
    with known_secrets.flags_redacted(request.workspace, request.project, request.agent):
        phases = parse_phases(request.phases)
        reports = parse_report_options(request.reports, rook)
        request.reports = reports
        request.cwd = working_folder()
        if request.executor not in rook.executors:
            close = did_you_mean(request.executor, rook.executors.names())
            raise ConfigError(
                f"--executor {typed(request.executor)}: unknown; installed: {rook.executors.listing()}"
                + (f"; did you mean {close}?" if close else "")
            )
        check_executor = getattr(rook.executors.get(request.executor), "check", None)
        if check_executor is not None:
            who = f"the executor plugin {rook.executors.owner(request.executor)}"
            try:  # raises ConfigError before anything runs
                message = check_executor(request.executor_options)
            except RookError:
                raise
            except BaseException as exc:  # the plugin's bug (sys.exit() too)
                if not plugin_failure(exc):
                    raise
                raise ConfigError(
                    f"--executor {request.executor}: {who} could not check its options: "
                    f"{exception_text(exc)}"
                ) from None
            said = check_message(message, who, "the options are fine")  # as a criterion's
            if said:
                raise ConfigError(f"--executor {request.executor}: {said}")
        shard = sharding.parse_shard(request.shard)
        request.run_id = sharding.requested_run_id(request.run_id, request.run_name, shard)
    workspace = find_workspace(request.workspace)
    agent = select_agent(workspace, request.project, request.agent, request.workspace)
    check_report_targets(reports, agent.runs_dir)
    check_definitions_kept(reports, agent)

    manifest: dict[str, Any] | None = None
    joined: tuple[Path, dict[str, Any]] | None = None
    run_path: Path | None = None
    if request.run_id:
        from . import resuming  # a resumed run's (or a named one's) only

        manifest, joined, run_path = resuming.find_run(request, agent, reports, shard, phases)
    profile_name = request.profile
    if manifest is not None and profile_name is None:
        profile_name = manifest["profile"]["id"]
    definitions = DefinitionCache(rook)
    # one not found is named with its folder
    with known_secrets.agent_secrets_redacted(agent.profiles_dir, agent.runs_dir):
        try:
            profile = find_profile(
                agent.profiles_dir,
                profile_name,
                rook.transports,
                definitions,
                where=request.found_by,  # its rook profile use NAME works as printed
            )
        except ProfileNotFound as exc:
            if request.profile is not None:  # named as rook runs --profile names it
                raise ProfileNotFound(f"--profile: {exc}") from None
            copy = run_path / "profile.yaml" if run_path is not None else None
            if manifest is None or copy is None or not copy.is_file():
                raise
            try:
                hides = copy.read_text(encoding="utf-8").startswith(HIDDEN_NOTE)
            except (OSError, UnicodeDecodeError):
                hides = False
            raise ProfileNotFound(  # the pinned profile, gone since the run started
                f"{exc}; the run keeps the one it started with: {copy} (to finish the run "
                f"with it: cp {copy} {agent.profiles_dir / f'{profile_name}.yaml'}"
                + (", then put back the credentials it shows as [hidden]" if hides else "")
                + ")"
            ) from None
    redactor = Redactor.for_variables([e.variable for e in profile.env])
    own_short = list(redactor.too_short)  # another profile's short value: its own runs warn
    for name in other_secret_names(agent.profiles_dir, profile.path):  # a path may hold one
        redactor.add(name, os.environ.get(name, ""))
    redactor.too_short[:] = own_short
    activate_redactor(redactor)  # before the profile's checks: their messages name paths
    if manifest is not None and profile.id != manifest["profile"]["id"]:
        pinned = manifest["profile"]["id"]
        if request.profile is None:  # found by the pinned id as a file name or name
            raise ConfigError(
                f"{resuming.run_flag(request)} was made with profile {pinned!r}, and no profile "
                f"holds that id now: {profile.path} holds id {profile.id!r} now; an id is made "
                f"once and runs pin it: put back id: {pinned} in that file to finish this run"
            )
        raise ConfigError(
            f"{resuming.run_flag(request)} was made with profile {manifest['profile']['id']!r}, "
            f"not {profile.id!r}; a run keeps its profile"
        )
    resolve_entries(rook, profile, agent)
    # told with the scenarios' problems, which need no secret, once they are known:
    # a user fixing one problem does not meet the next on the next try
    unset = missing_env(profile) if any(p in HOOK_PHASES for p in phases) else None
    if manifest is None and request.run_id and redactor.text(request.run_id) != request.run_id:
        flag = "--run-name" if request.run_name is not None else "--run"  # the one given
        raise ConfigError(  # the id names the run's directory and every listing of runs
            f"{flag} {redactor.text(request.run_id)}: holds the value of a profile env "
            "variable; a run's name is its directory's name and is shown by rook runs, so it "
            "is never redacted: choose another name"
        )
    if manifest is None and shard is not None and request.run_name is None:
        assert request.run_id is not None  # a shard names its run
        where = request.found_by + request.kept()  # its command keeps the gate given
        resuming.warn_new_beside(agent.runs_dir, request.run_id, shard, where, redactor)

    with _also_unset(unset):
        scenarios = load_scenarios(agent.scenarios_dir, rook.criteria, definitions)
    if joined is not None and shard is not None:  # it must plan exactly the run it joins
        mine = request.selected(scenarios)
        if not mine:  # as a new run says it, not "planned other scenario runs"
            with _also_unset(unset):
                raise ScenarioError(_none_selected(request, agent, scenarios))
        sharding.check_same_run(
            joined[1],
            {
                "profile": {"id": profile.id},
                "plan": [r.key for r in plan_runs(mine, request.repeat)],
                "shards": shard.count,
            },
            str(joined[0]),
            shard,
        )
        from . import resuming

        resuming.warn_joined_differently(joined[0], joined[1], profile, mine, shard, redactor)
    if manifest is not None:
        assert run_path is not None  # the manifest was read from it
        from . import resuming

        with _also_unset(unset):
            scenarios, counts = resuming.resumed_scenarios(
                request, rook, agent, profile, scenarios, manifest, run_path, shard, phases
            )
        if unset is not None:
            raise MissingEnvError(unset)
        criteria_hold_no_secret(redactor, scenarios, rook.criteria)  # a file edited since
        judging = _judging(request, rook, agent, profile, scenarios, phases, redactor, manifest)
        runs = [r for s in scenarios for r in plan_runs([s], counts[s.id])]
        assert request.run_id is not None  # the manifest was read from it
        run = sharding.run_dir(agent.runs_dir / request.run_id, redactor, shard)
        run.lock()
        sharding.check_alone(run, shard.count if shard else manifest.get("shards"), shard)
    else:
        if phases[0] != "prepare":
            raise ConfigError(
                f"--phases {request.phases}: a new run starts with prepare; to finish a run "
                f"split by phase, give its id: rook run --run ID --phases {request.phases}"
                f"{request.found_by}{request.kept()}"
            )
        every = scenarios
        with _also_unset(unset):
            scenarios = request.selected(scenarios)
            if not scenarios:
                raise ScenarioError(_none_selected(request, agent, every))
        if unset is not None:
            raise MissingEnvError(unset)
        check_names_hold_no_secret(redactor, profile, scenarios, rook.criteria)
        check_scenarios(rook, profile, scenarios)
        judging = _judging(request, rook, agent, profile, scenarios, phases, redactor, None)
        runs = plan_runs(scenarios, request.repeat)
        levels = declared_continuity(rook, profile)  # once per run: shown when no hook ran
        # its folder, when this invocation makes it (a shard's, another shard may make)
        made = shard is None and not (request.run_id and (agent.runs_dir / request.run_id).exists())
        try:  # a start interrupted as it makes the folder leaves none either
            run = sharding.new_run(agent.runs_dir, redactor, request.run_id, shard)
            run.made = made
        except BaseException:
            if made and request.run_id:  # a fresh id's folder: create_run removed it
                discard_unstarted(agent.runs_dir / request.run_id)
            raise
        try:  # a start that fails (a full disk) or is interrupted leaves no folder that is no run
            run.lock()
            manifest = {
                "id": run.id,
                "dir": str(run.path),
                "workspace": str(agent.workspace),
                "project": agent.project,
                "agent": agent.name,
                "profile": {"id": profile.id, "name": profile.name, "file": str(profile.path)},
                "created": time.time(),
                "plan": [r.key for r in runs],
                # what each scenario was when planned: a run cut off (SIGKILL) before a scenario
                # run was recorded still says which definition it is of (rook diff)
                "definitions": {s.id: s.content_hash for s in scenarios},
                "phases": [],
                "invocations": [],
                "capabilities": {"declared": dict(profile.capabilities), "observed": {}},
            }
            if levels:
                manifest["continuity"] = levels
            run.write_text("profile.yaml", profile_copy(profile))
            sharding.publish(run, manifest, shard)
        except BaseException:
            run.discard_unstarted()
            raise
    runs = sharding.assign(runs, manifest, shard)
    if request.run_id and manifest.get("invocations"):  # resumed, under the run's lock
        from . import resuming

        resuming.check_reopened(request, run, manifest, runs, phases, profile, redactor, shard)
    if judging.client is not None:
        judging.client.attach(run.id, run.path)
        manifest["judge_profile"] = judging.client.info
    for note in hook_env_references(profile):
        sys.stderr.write(f"rook: warning: {profile.path or profile.id}: {note}\n")
    for name in redactor.too_short:  # the judge profile's env variables included
        sys.stderr.write(too_short_warning(name) + "\n")
    return agent, profile, run, manifest, runs, phases, redactor, judging


def _judging(
    request: RunRequest,
    rook: Rook,
    agent: Agent,
    profile: Profile,
    scenarios: list[Any],
    phases: list[str],
    redactor: Redactor,
    manifest: dict[str, Any] | None,
) -> JudgingContext:
    pinned = ((manifest or {}).get("judge_profile") or {}).get("ref")
    return setup_judging(
        rook,
        agent,
        profile,
        scenarios,
        phases,
        redactor,
        requested=request.judge_profile,
        configured=read_config(agent.workspace).get("judge_profile"),
        pinned=pinned,
    )


def _kept(engine: Engine, run_dir: Any, alone: bool) -> str:
    """What a run stopped after prepare says of its record: kept, and the command that
    finishes it; and its folder to delete instead, when ``alone`` (a run this
    invocation made, no shard: no other work is in it)."""
    delete = alone and not sharding.is_shard(run_dir)
    return (
        f"rook: run {run_dir.path.name} is kept as it stands; once that is fixed, "
        f"finish it with: {engine.resume}"
        + (f", or delete its folder {run_dir.path}" if delete else "")
    )


def _task_exit(rook: Rook, name: str, exc: SystemExit) -> str:
    """Who ended the run's loop with ``exc`` (a ``sys.exit()`` in a task a plugin
    started): the innermost function outside asyncio and Rook, as ``module.function``,
    named as the executor's when it is in the executor's package."""
    where, tb = "", exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if not module.startswith(("asyncio", "rook_core", "concurrent", "threading")):
            where = f"{module}.{tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    executor = rook.executors.get(name)
    home = str(getattr(executor, "__module__", None) or type(executor).__module__)
    said = f"raised {exception_text(exc)}"
    if where and where.split(".")[0] == home.split(".")[0]:
        return f"executor {name!r} ({rook.executors.owner(name)}) {said} in a task it started ({where})"
    return (
        f"a task a plugin started ({where or 'unknown'}) {said}, which ended the run's event loop"
    )


async def _drive(
    rook: Rook,
    engine: Engine,
    manifest: dict[str, Any],
    runs: list[Any],
    request: RunRequest,
    concurrency: int,
) -> bool:
    """Run prepare and the executor; returns True when interrupted by a signal."""
    procscan.become_subreaper()
    let_threads_go()  # a plugin's to_thread that never returns: Rook still exits
    count_cancellations()  # Python 3.10: a plugin's own CancelledError is told
    marker = {"ROOK_RUN_ID": engine.ctx.id}
    client = engine.judging.client

    async def work() -> None:
        try:
            await engine.start_transports()
        except HookFailed as exc:  # recorded as a failed prepare: each run it stops says why
            if "open" not in engine.phases and "execute" not in engine.phases:
                raise
            why = engine.redactor.text(str(exc))
            manifest["prepare"] = {"status": "failed", "diagnosis": why}
            engine.prepare_failed = why
        if client is not None:
            await client.start()
        if not engine.prepare_failed and await engine.prepare(manifest, runs):
            engine.run_dir.write_json("run.json", manifest)  # a resume never prepares twice
        # no more in flight than there are runs: -j 10**30 sized a Dask cluster's
        # threads past what its messages carry (OverflowError, no run ran)
        lanes = max(1, min(concurrency, len(runs)))
        engine.plan_ahead(runs, lanes)
        executor = rook.executors.get(request.executor)
        owner = rook.executors.owner(request.executor)
        try:
            pending = executor(
                engine=engine,
                scenario_runs=runs,
                concurrency=lanes,
                options=dict(request.executor_options),
            )
            if inspect.isawaitable(pending):
                await pending
            else:  # a plain def: nothing ran; named, as the plugin's other bugs are
                for item in pending if isinstance(pending, (list, tuple)) else ():
                    if inspect.iscoroutine(item):
                        item.close()  # never to be awaited: no warning of Python's
                manifest["invocations"][-1]["executor_error"] = (
                    f"executor {request.executor!r} ({owner}) returned "
                    f"{type(pending).__name__}, not an awaitable (an executor is an async "
                    "function: async def executor(engine, scenario_runs, concurrency, options))"
                )
        except RunStopped as exc:  # the executor's own reason: what it recorded is kept
            manifest["invocations"][-1]["stopped"] = engine.redactor.text(str(exc))
        except RookError:
            raise
        except BaseException as exc:  # a plugin's bug (sys.exit() too): kept
            if not plugin_failure(exc):
                raise
            manifest["invocations"][-1]["executor_error"] = (
                f"executor {request.executor!r} ({owner}) raised {exception_text(exc)}"
            )
        engine.flush_records()

    task = asyncio.create_task(work())
    interrupts = Interrupts(
        task, lambda: process.kill_leftovers(marker, scrubbed=True), finish=engine.resume
    )
    engine.run_dir.driven = True  # a signal is the run's to handle from here on
    engine.signalled = lambda: interrupts.interrupted
    engine.run_dir.on_failure = interrupts.stop  # a record the disk cannot hold stops the run
    try:
        await task
    except asyncio.CancelledError:
        if interrupts.failure is not None:  # came first: a signal after it changes nothing
            raise interrupts.failure from None
        if not interrupts.interrupted:
            raise
        engine.flush_records()  # the runs that finished before the signal
    finally:
        engine.run_dir.on_failure = None
        interrupts.remove()
        # a signal now: the record and reports are still written
        after_hooks(
            interrupts.interrupted,
            lambda: process.kill_leftovers(marker, scrubbed=True),
            finish=engine.resume,
        )
        if client is not None:
            await client.stop()
        await engine.stop_transports()
        kills = process.kill_leftovers(marker, scrubbed=True)
        if kills:
            manifest.setdefault("kills", []).extend(kills)
    if interrupts.interrupted:
        manifest["interrupted"] = interrupts.signal_name
        manifest["invocations"][-1]["interrupted"] = interrupts.signal_name  # rook runs show
    return interrupts.interrupted


def run(request: RunRequest, rook: Rook | None = None) -> RunOutcome:
    if rook is None:
        with collector_paused():  # the plugin modules: objects that live as long as the run
            rook = plugin_manager.build_plugin_manager()
    prepared = prepare_run(request, rook)
    run_dir = prepared[2]
    try:
        return _execute(request, rook, *prepared)
    except BaseException as exc:
        # a new run's, when its first run.json could not be written, or when Ctrl-C came
        # before the run took the signals over: no hook ran, there is nothing to finish
        run_dir.discard_unstarted(isinstance(exc, KeyboardInterrupt) and not run_dir.driven)
        raise
    finally:
        restore_signals()  # after_hooks() in _drive
        run_dir.unlock()  # idempotent: released however the run ends


def starting(
    runs: list[Any], profile: Profile, concurrency: int, run_dir: RunDir, fresh: bool
) -> str:
    """What a run is about to do, as pytest says ``collected N items``: ``running 3
    scenarios with profile staging (concurrency 2)``; ``6 scenario runs of 3
    scenarios`` with repeats; ``resuming run ID: ...`` for a run gone on with (``--run``)."""
    scenarios = len({sr.scenario.id for sr in runs})
    what = f"{scenarios} scenario{'s' * (scenarios != 1)}"
    if len(runs) != scenarios:
        what = f"{len(runs)} scenario run{'s' * (len(runs) != 1)} of {what}"
    said = f"{what} with profile {profile.id} (concurrency {concurrency})"
    shard = f", shard {run_dir.shard.label}" if isinstance(run_dir, sharding.ShardRunDir) else ""
    if fresh:
        return f"running {said}" if not shard else f"running run {run_dir.id}{shard}: {said}"
    return f"resuming run {run_dir.id}{shard}: {said}"


def stored_path(cwd: str | None, path: str) -> str:
    """``--report``'s ``path`` typed in ``cwd``, as the run stores it: absolute, its
    folder as the system reaches it (``out/../r.json``, ``link/..``: no ``..`` left,
    symbolic links followed), the file's own name as given."""
    full = os.path.join(cwd or "", path)
    folder, name = os.path.split(full)
    if name in ("", ".", ".."):
        return os.path.realpath(full)
    return os.path.join(os.path.realpath(folder or "."), name)


def _noting_unjoined(
    run_dir: RunDir, then: Callable[[dict[str, Any]], None] | None
) -> Callable[[dict[str, Any]], None]:
    """``on_progress`` for a shard of a run merged before it: its first record notes
    the shard in the merged run's summary, so ``rook runs`` lists the run as ``merge
    again`` from then on, even when the shard is killed before it ends."""
    noted = False

    def progress(record: dict[str, Any]) -> None:
        nonlocal noted
        if not noted and isinstance(run_dir, sharding.ShardRunDir):
            noted = True
            history.note_unjoined(run_dir.path, [run_dir.shard.label])
        if then is not None:
            then(record)

    return progress


def _execute(
    request: RunRequest,
    rook: Rook,
    agent: Agent,
    profile: Profile,
    run_dir: RunDir,
    manifest: dict[str, Any],
    runs: list[Any],
    phases: list[str],
    redactor: Redactor,
    judging: JudgingContext,
) -> RunOutcome:
    concurrency = request.concurrency or profile.concurrency
    late = sharding.joins_merged(run_dir)
    engine = Engine(
        rook,
        agent,
        profile,
        run_dir,
        phases,
        redactor,
        observed_before=load_observed(agent, profile),
        on_progress=_noting_unjoined(run_dir, request.on_progress) if late else request.on_progress,
        judging=judging,
    )
    engine.resume += redactor.text(request.found_by)  # works as stored, from anywhere
    outputs = [  # its reports again, their paths absolute: the stored command works from anywhere
        redactor.text(f"{fmt}:{path if path == STDOUT else stored_path(request.cwd, path)}")
        for fmt, path in request.reports
    ]
    engine.resume += finish_flags(
        outputs, request.min_pass_rate, request.concurrency, *request.executed_by()
    )
    # first invocation: no records to look up, unless a shard joins a run merged without
    # it, whose scenario runs rook run --run ID may have finished since
    engine.fresh = not manifest["invocations"] and not late
    # a merged run resumed whole: its prepare was a shard's (another process, often on
    # another machine); this one prepares for itself once, as a shard does (prepare.json)
    engine.prepare_again = (
        bool(manifest.get("merged"))
        and not sharding.is_shard(run_dir)
        and not (run_dir.path / "prepare.json").is_file()
    )
    invocation: dict[str, Any] = {
        "phases": phases,
        "started": time.time(),
        "pid": os.getpid(),
        "concurrency": concurrency,
        "rook_version": __version__,  # which Rook ran it (rook runs show; rook merge compares)
    }
    if request.min_pass_rate is not None:  # the gate its report has (rook report --rebuild)
        invocation["min_pass_rate"] = request.min_pass_rate
    if request.concurrency is not None:  # rook runs show's command that finishes it keeps it
        invocation["concurrency_given"] = request.concurrency
    executor, scheduler = request.executed_by()
    if executor != "local":  # and these: finished as printed, it runs where this one did
        invocation["executor"] = executor
    if scheduler is not None:
        invocation["scheduler"] = redactor.text(scheduler)
    if outputs:  # rook runs show's command that finishes the run writes them again
        invocation["reports"] = outputs
    manifest["invocations"].append(invocation)
    for p in phases:
        if p not in manifest["phases"]:
            manifest["phases"].append(p)
    manifest["phases"].sort(key=["prepare", "open", "execute", "close", "collect", "judge"].index)
    run_dir.write_json("run.json", manifest)
    if request.on_start is not None:
        request.on_start(redactor.text(starting(runs, profile, concurrency, run_dir, engine.fresh)))
    drive = _drive(rook, engine, manifest, runs, request, concurrency)
    try:
        process.use_fast_child_watcher()
        interrupted = asyncio.run(drive)
    except SystemExit as exc:  # sys.exit() in a task a plugin started itself: asyncio (3.11)
        # ends its loop with it, past every await Rook makes; kept, as the executor's own is
        invocation["executor_error"] = _task_exit(rook, request.executor, exc)
        engine.flush_records()
        interrupted = False
    except RookError as exc:  # after prepare (a cluster it cannot use): the run stays, named
        exc.args = (f"{exc}\n{_kept(engine, run_dir, alone=engine.fresh)}",)
        raise
    finally:
        drive.close()  # never started when Ctrl-C came first: no "never awaited" warning
        observed = {**manifest["capabilities"].get("observed", {}), **engine.observed}
        manifest["capabilities"]["observed"] = observed
        invocation["ended"] = time.time()
        try:
            run_dir.write_json("run.json", manifest)
        except RookError as exc:  # a full disk: this error replaces any other, so it says
            # what the others say of the record (an interrupt's only, at its flush)
            exc.args = (f"{exc}\n{_kept(engine, run_dir, alone=engine.fresh)}",)
            raise
        save_observed(agent, profile, observed)

    # The entries of the runs recorded by this invocation were spooled as they were
    # recorded; the others' records (redacted on disk) are read one at a time. The
    # report is written entry by entry into report.json and its entries are read back
    # from it on demand, so no writer below holds every entry at once. The report is
    # the run's (this shard's): the scenario runs a selector left out of this
    # invocation are reported from their records as well (pending when none).
    shard_plan = manifest.get("shard")
    every: list[str] = shard_plan["plan"] if shard_plan else manifest["plan"]
    unselected_pending = 0

    def one(sr: Any) -> dict[str, Any] | Spooled:
        spooled = engine.entries.entry(sr.key)
        if spooled is not None:
            return spooled
        return run_dir.load_scenario(sr.key) or redactor.data(engine.new_record(sr))

    def records() -> Iterator[dict[str, Any] | Spooled]:
        nonlocal unselected_pending
        if len(every) == len(runs):  # nothing left out: the run's scenario runs, in order
            yield from map(one, runs)
            return
        selected = {sr.key: sr for sr in runs}
        for key in every:
            sr = selected.get(key)
            if sr is not None:
                yield one(sr)
                continue
            record = next(planned_records(run_dir.path, [key], None, manifest.get("definitions")))
            unselected_pending += not record.get("status")
            yield record

    shard = run_dir.shard if isinstance(run_dir, sharding.ShardRunDir) else None
    name = shard.part("report.json") if shard else "report.json"
    try:
        report = write_report(
            redactor.data(manifest),
            records(),
            request.min_pass_rate,
            path=run_dir.path / name,
            redact=redactor.data,
        )
    except RookError as exc:  # a full disk at the last file: every record is whole
        exc.args = (f"{exc}\n{_kept(engine, run_dir, alone=False)}",)
        raise
    finally:
        engine.entries.close()
    if not sharding.is_shard(run_dir):  # a shard's summary waits for rook merge
        history.write_summary(run_dir.path, report)
    run_dir.unlock()  # the record is complete; reports are written outside the run directory
    back_to(request.cwd)  # a judge's os.chdir (the whole process's) moves no report
    failed = write_reports(rook, report, request.reports, typed_in=request.cwd)
    report_failures(failed, report["run"]["id"], request.found_by)
    code = 130 if interrupted or late_signal() or report_cut() else exit_code(report)
    left_undone = (report["summary"].get("pending") or 0) - unselected_pending
    if invocation.get("stopped") and not interrupted:
        recorded = len(report["scenarios"]) - (report["summary"].get("pending") or 0)
        sys.stderr.write(
            f"rook: error: {scrub(invocation['stopped'])}\n"
            f"{_kept(engine, run_dir, alone=engine.fresh and not recorded)}\n"
        )
        code = 1
    elif invocation.get("executor_error") and not interrupted:
        sys.stderr.write(
            f"rook: error: {scrub(invocation['executor_error'])}; "
            "the scenario runs it finished are recorded\n"
        )
        code = 1
    elif tuple(phases) == PHASES and not interrupted and left_undone:
        owner = rook.executors.owner(request.executor)  # every phase was asked for
        sys.stderr.write(
            f"rook: error: executor {request.executor!r} ({owner}) returned without running "
            f"{counted(left_undone, 'scenario run')}\n"
        )
        code = 1
    if engine.prepare_failed and not interrupted and not {"open", "execute"} & set(phases):
        # --phases prepare: no scenario run records the failure, so it is said here
        sys.stderr.write(f"rook: error: {scrub(engine.prepare_failed)}\n")
        code = code or 1
    if failed and not code:  # everything passed, but not everything asked for was done
        code = 1
    stopped = bool(invocation.get("stopped")) and not interrupted
    written = [target for target in request.reports if target not in failed]
    return RunOutcome(
        report, code, run_dir.path, redactor, interrupted, list(failed.values()), stopped, written
    )
