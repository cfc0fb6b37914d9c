"""The lifecycle engine: prepare once, then per scenario run
open → execute × turns → close → collect → judge.

The engine owns the order and the evidence; transports (through the phase
hooks) reach the agent; an executor plugin decides where and how many
scenario runs are in flight; the store records each one atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from . import process
from .errors import (
    ConfigError,
    MissingEnvError,
    PluginError,
    RookError,
    RunStoreError,
    ScenarioError,
    exception_text,
    os_error_text,
)
from .hookio import (
    OutputError,
    calls_names_warning,
    collected_evidence,
    conversation_handle,
    cut_off_output,
    handle_said,
    has_token_counts,
    turn_evidence,
    usage_names_warning,
)
from .judging import CHECK_MARKER, JudgingContext, evaluate_criterion, runnability, scenario_status
from .models import (
    ERROR,
    INFRA_ERROR,
    MAX_PLANNED,
    NOT_RUNNABLE,
    PHASES,
    STOPPED,
    HookCall,
    HookResult,
    Profile,
    RunContext,
    Scenario,
    ScenarioRun,
    TurnEvidence,
)
from .plugins import OWN, Rook
from .recording import Recorder
from .redact import MARK, Redactor
from .report import EntrySpool, printable, run_seconds
from .store import RunDir
from .transports import (
    PHASE_HOOKS,
    dispatch,
    run_check,
    searching,
    start_resource,
    stop_resources,
    transport_named,
)
from .workspace import Agent

SCENARIO_PHASES = ("open", "execute", "close", "collect", "judge")


def check_env(profile: Profile, environ: dict[str, str] | os._Environ[str] | None = None) -> None:
    env = os.environ if environ is None else environ
    missing = [e for e in profile.env if not env.get(e.variable)]
    if missing:
        lines = "\n".join(
            f"  {e.variable}: {e.purpose}"
            + (" (set, but empty)" if e.variable in env else "")  # a CI secret that is missing
            for e in missing
        )
        names = " ".join(f"{e.variable}=..." for e in missing)
        raise MissingEnvError(
            f"profile {profile.id!r} ({profile.path}) needs these environment variables, "
            f"which are not set:\n{lines}\nset them first, e.g.: export {names}"
        )


def base_environment(profile: Profile) -> dict[str, str]:
    """What every hook inherits: Rook's environment without any ``ROOK_*`` name
    (except the profile's ``env`` variables, which the hooks need whatever their
    name), plus the profile's ``hook_env`` (which holds no Rook-owned name, see
    :data:`rook_core.models.ROOK_VARIABLES`, but may hold another ``ROOK_*``
    name). Phase variables are added per call."""
    needed = {e.variable for e in profile.env}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_") or k in needed}
    if profile.inherit_env is not None:
        keep = [*profile.inherit_env, *(e.variable for e in profile.env)]
        env = {k: v for k, v in env.items() if any(fnmatch.fnmatchcase(k, pat) for pat in keep)}
    env.update(profile.hook_env)
    return env


def hook_env(
    base: dict[str, str],
    agent: Agent,
    run: RunContext,
    phase: str,
    state_dir: Any,
    scenario_id: str | None = None,
    session: str | None = None,
    turn: int | None = None,
    conversation: str | None = None,
) -> dict[str, str]:
    """A hook's environment: ``base`` (:func:`base_environment`) and the
    ``ROOK_*`` variables of its phase, each only in the phases the contract
    gives it (:data:`rook_core.models.ROOK_VARIABLES`). The engine's hooks and
    the judge profile's use this one function."""
    env = dict(base)
    env["ROOK_HOOK"] = phase
    env["ROOK_WORKSPACE"] = str(agent.workspace)
    env["ROOK_PROJECT"] = agent.project
    env["ROOK_AGENT"] = agent.name
    env["ROOK_STATE_DIR"] = str(state_dir)
    env["ROOK_RUN_STATE_DIR"] = str(run.state_dir)
    env["ROOK_RUN_ID"] = run.id
    if scenario_id is not None and phase != "prepare":
        env["ROOK_SCENARIO_ID"] = scenario_id
        env["ROOK_SESSION"] = session or ""
    if phase == "execute" and turn is not None:
        env["ROOK_TURN"] = str(turn)
    if phase in ("execute", "close", "collect") and conversation:
        env["ROOK_CONVERSATION"] = conversation
    return env


def phases_missing_before(record: dict[str, Any], phases: Iterable[str]) -> list[str]:
    """The phases a scenario run has not done that come before the first of
    ``phases`` it still needs: a selection resumed across a hole (``--phases
    judge`` before collect ran) cannot go on for it."""
    done = record.get("phases_done") or []
    todo = [p for p in SCENARIO_PHASES if p in phases and p not in done]
    if not todo:
        return []
    return [p for p in SCENARIO_PHASES[: SCENARIO_PHASES.index(todo[0])] if p not in done]


class Slot:
    """A scenario run's place among the runs whose hooks are in flight: a
    semaphore's slot, taken before a hook and given back after the last one
    (see :meth:`Engine.run_scenario`)."""

    __slots__ = ("_sem", "held", "taken")

    def __init__(self, sem: asyncio.Semaphore) -> None:
        self._sem = sem
        self.held = False
        self.taken = False  # ever: the run has started

    async def take(self) -> None:
        if not self.held:
            await self._sem.acquire()
            self.held = self.taken = True

    async def give(self) -> None:
        """Give the slot back, then let a run waiting for it go first."""
        if self.held:
            self.drop()
            await asyncio.sleep(0)

    def drop(self) -> None:
        if self.held:
            self.held = False
            self._sem.release()


ATTEMPT_KEYS = ("reason", "started", "ended", "seconds", "hooks", "turns", "attempts")
"""What ``infra_attempts`` keeps of a scenario run the infrastructure failed."""


def _snapshot(record: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in record.items()}


class PluginFault(str):
    """Why a scenario cannot run when the reason is a plugin's bug (a transport's
    ``runnable`` that raised): the scenario run is an ``error``, never skipped."""


class Engine:
    def __init__(
        self,
        rook: Rook,
        agent: Agent,
        profile: Profile,
        run: RunDir,
        phases: list[str],
        redactor: Redactor,
        observed_before: dict[str, bool] | None = None,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        judging: JudgingContext | None = None,
    ) -> None:
        self.rook = rook
        self.agent = agent
        self.profile = profile
        self.run_dir = run
        self.phases = phases
        self.redactor = redactor
        self.observed_before = dict(observed_before or {})
        self._runs_programs_of: dict[str, bool] = {}
        self._program_types: frozenset[str] | None = None  # the criterion types that do
        self.observed: dict[str, bool] = {}
        self.on_progress = on_progress
        self.base_env = base_environment(profile)
        self.judging = judging or JudgingContext(
            workspace=agent.workspace, env=self.base_env, judges=rook.judges
        )
        self.ctx = RunContext(
            id=run.id,
            dir=run.path,
            workspace=agent.workspace,
            project=agent.project,
            agent=agent.name,
            agent_dir=agent.dir,
            profile=profile,
            state_dir=run.state / "run",
            redactor=redactor,
        )
        self.ctx.state_dir.mkdir(parents=True, exist_ok=True)
        shard = getattr(run, "shard", None)  # a shard (ShardRunDir) resumes as that shard
        self.resume = f"rook run --run {run.id}" + (f" --shard {shard.label}" if shard else "")
        """The command that finishes this run's unfinished scenario runs (stored reasons)."""
        self.prepare_failed: str | None = None
        self.prepare_ended: float | None = None
        """When this invocation's prepare hook ended: the phase before each
        scenario run's first (a new record's ``last_phase_end``, for its delay)."""
        self.fresh = False
        """True when this invocation created the run (no scenario record exists yet)."""
        self.prepare_again = False
        """True when the run's successful prepare is not this process's to reuse: a
        merged run resumed whole, whose prepare was a shard's."""
        self.observer_failures: set[str] = set()
        """The plugins whose ``rook_evidence_recorded`` raised (each is warned of once)."""
        self.observe: Callable[[dict[str, Any] | None, HookResult], None] | None = None
        """When set, called instead of the ``rook_evidence_recorded`` observers (an executor
        running scenarios elsewhere sends the evidence to the driver, which calls them)."""
        self.recorder = Recorder(run, self.store_scenario)
        """Writes finished runs' records and makes state directories in idle turns."""
        self.entries = EntrySpool(str(run.path))
        """The report entries of the runs recorded by this invocation."""

    # -- environment -----------------------------------------------------

    def env_for(
        self,
        phase: str,
        state_dir: Any,
        sr: ScenarioRun | None = None,
        session: str | None = None,
        turn: int | None = None,
        conversation: str | None = None,
    ) -> dict[str, str]:
        scenario_id = sr.scenario.id if sr is not None else None
        return hook_env(
            self.base_env, self.agent, self.ctx, phase, state_dir, scenario_id, session, turn,
            conversation,
        )  # fmt: skip

    # -- transports --------------------------------------------------------

    async def start_transports(self) -> None:
        for key in {e.transport for e in self.profile.hooks.values()}:
            spec = self.rook.transports.get(key)
            if spec is not None and spec.start is not None:
                self.ctx.resources[key] = await start_resource(spec, self.ctx, self.rook.transports)

    async def stop_transports(self) -> None:
        def warn(message: str) -> None:
            sys.stderr.write(printable(self.redactor.text(f"rook: warning: {message}")) + "\n")

        await stop_resources(self.ctx.resources, self.rook.transports, warn)

    async def call_hook(self, call: HookCall, record: dict[str, Any] | None = None) -> HookResult:
        entry = call.entry
        began = time.time()

        def ended(status: str, diagnosis: str) -> HookResult:
            """A hook that ended without a transport's result (Rook's own verdict),
            timed from its call (an interrupted one ran until the interrupt)."""
            now = time.time()
            return HookResult(
                call.phase,
                status,
                round(now - began, 6),
                diagnosis=diagnosis,
                turn=call.turn,
                transport=entry.transport,
                started=began,
                ended=now,
            )

        try:
            return await dispatch(self.rook.hook, call, self.rook.transports)
        except PluginError:
            raise
        except asyncio.CancelledError as exc:
            if record is not None:  # the run was interrupted while this hook ran
                interrupted = ended("interrupted", "interrupted; its process group was killed")
                cut_off_output(exc, call, interrupted)
                record["hooks"].append(interrupted.to_dict())
                record["interrupted"] = True
            raise
        except RookError as exc:
            return ended("failed", str(exc))
        except Exception as exc:  # a transport plugin's bug fails this hook, not the run
            who = transport_named(entry.transport, self.rook.transports)
            return ended("failed", f"{who} raised {exception_text(exc)}")

    async def _delay(self, entry: Any, last_end: float | None) -> None:
        if entry.delay_seconds and last_end is not None:
            wait = last_end + entry.delay_seconds - time.time()
            if wait > 0:
                await asyncio.sleep(wait)

    def _record_hook(self, record: dict[str, Any] | None, result: HookResult) -> dict[str, Any]:
        data = self.redactor.data(result.to_dict())
        if record is not None:
            record["hooks"].append(data)
            record["last_phase_end"] = result.ended
        seen = HookResult(**data) if self.redactor else result  # observers see it redacted
        if self.observe is not None:
            self.observe(record, seen)
        else:
            self.notify_observers(record, seen)
        return data

    def notify_observers(self, record: dict[str, Any] | None, result: HookResult) -> None:
        """Call the ``rook_evidence_recorded`` observers. One that raises (a plugin's
        bug) neither stops the others nor the run: a warning names it, once per
        plugin, with the profile's secret values redacted."""
        failed = self.rook.call_each(
            "rook_evidence_recorded", run=self.ctx, record=record, result=result
        )
        for owner, name, exc in failed:
            if owner in self.observer_failures:
                continue
            self.observer_failures.add(owner)
            sys.stderr.write(
                self.redactor.text(
                    f"rook: warning: plugin {owner} raised {type(exc).__name__} in "
                    f"rook_evidence_recorded: {exc} (the run goes on; disable the plugin "
                    f"with ROOK_DISABLE_PLUGINS={name})"
                )
                + "\n"
            )

    # -- prepare -----------------------------------------------------------

    async def prepare(self, manifest: dict[str, Any], runs: list[ScenarioRun]) -> bool:
        """Run the prepare hook once per run: not when it succeeded before (a
        resumed run; a merged run resumed whole prepares once for itself, as a
        shard does: :attr:`prepare_again`), not when no scenario of ``runs`` can run (each is
        ``not_runnable``; they are skipped before any hook runs), and not when
        each of ``runs`` has its final record already. Returns
        whether a hook ran (the manifest then says how it went)."""
        entry = self.profile.hooks.get("prepare")
        if manifest.get("prepare", {}).get("status") == "ok":
            self.prepare_ended = self._earlier_prepare_end()  # until this process prepares again
        done = manifest.get("prepare", {}).get("status") == "ok" and not self.prepare_again
        if "prepare" not in self.phases or done:
            return False
        if entry is None:
            manifest["prepare"] = {"status": "ok", "note": "no prepare hook"}
            return False
        if all(self.not_runnable(sr.scenario) for sr in runs):
            return False
        if not self.fresh and all(self._finished(sr.key) for sr in runs):
            return False  # nothing left to run: a shard joining a run finished whole
        call = HookCall(
            phase="prepare",
            entry=entry,
            run=self.ctx,
            env=self.env_for("prepare", self.ctx.state_dir),
            timeout=entry.timeout,
            limits=self.profile.limits,
            state_dir=self.ctx.state_dir,
        )
        held: dict[str, Any] = {"hooks": []}  # where call_hook puts it when interrupted
        try:
            result = await self.call_hook(call, held)
        except asyncio.CancelledError:  # kept where prepare's record goes; a resume prepares
            data = self.redactor.data(held["hooks"][-1]) if held["hooks"] else None
            if data is not None:
                manifest["prepare"] = {"status": data["status"], "diagnosis": data["diagnosis"]}
                with contextlib.suppress(RunStoreError):  # never in place of the interrupt
                    self.run_dir.write_json("prepare.json", data)
            raise
        self.prepare_ended = result.ended
        data = self._record_hook(None, result)
        self.run_dir.write_json("prepare.json", data)
        manifest["prepare"] = {"status": result.status, "diagnosis": data.get("diagnosis")}
        if not result.ok:
            self.prepare_failed = f"prepare failed: {data.get('diagnosis')}"
        return True

    def _earlier_prepare_end(self) -> float | None:
        """When the prepare hook of an earlier invocation of this run ended
        (``prepare.json``): still the phase before each new scenario run's
        first, for its delay. ``None`` when no hook ran or its record is gone."""
        try:
            data = self.run_dir.read_json("prepare.json")
        except RunStoreError:
            return None
        ended = data.get("ended") if isinstance(data, dict) else None
        if isinstance(ended, bool) or not isinstance(ended, (int, float)):
            return None
        return float(ended)

    def _finished(self, key: str) -> bool:
        """Whether scenario run ``key`` has its final record (an unreadable one is
        left for the run itself to refuse)."""
        try:
            return bool((self.run_dir.load_scenario(key) or {}).get("final"))
        except RunStoreError:
            return False

    # -- one scenario run ----------------------------------------------------

    @staticmethod
    def scenario_block(s: Scenario) -> dict[str, Any]:
        """The definition a record says its scenario run was judged by."""
        return {
            "id": s.id,
            "name": s.name,
            "tags": s.tags,
            "turns": s.turns,
            "criteria": [c.raw for c in s.criteria],
            "content_hash": s.content_hash,
            "file": str(s.path) if s.path else None,
            **({"extra": s.extra} if s.extra else {}),
        }

    def new_record(self, sr: ScenarioRun) -> dict[str, Any]:
        return {
            "key": sr.key,
            "scenario": self.scenario_block(sr.scenario),
            "repeat_index": sr.repeat_index,
            "repeat_count": sr.repeat_count,
            "session": f"{self.ctx.id}-{sr.key}-{os.urandom(4).hex()}",
            "conversation": None,
            "phases_done": [],
            "hooks": [],
            "turns": [],
            "collected": None,
            "status": None,
            "reason": "",
            "criteria": [],
            "observed": {},
            "started": None,
            "ended": None,
            "seconds": 0.0,
            "last_phase_end": self.prepare_ended,
        }

    def load_record(self, sr: ScenarioRun) -> tuple[dict[str, Any], list[str]]:
        """The record of one scenario run and the phases still to run for it (driver side).

        An empty list means nothing is to run: it finished in an earlier
        invocation, no selected phase is missing, or earlier phases are missing
        (``reason`` says so).
        """
        # a run this invocation created has no records yet: skip the lookup
        existing = None if self.fresh else self.run_dir.load_scenario(sr.key)
        record = existing or self.new_record(sr)
        if record.get("final"):
            return record, []  # finished in an earlier invocation: never repeated
        if existing is not None:
            _note_changed_definition(record, self.scenario_block(sr.scenario))
            _drop_redacted_handle(record)
        if record.get("blocked") == "prepare":  # never started: prepare failed before it
            if "prepare" not in self.phases:
                return record, []  # as it was, until an invocation prepares again
            record = self.new_record(sr)
        earlier = record if record.get("infra") else None
        if earlier is not None:
            record = self._retry(sr, earlier)
        todo = [p for p in SCENARIO_PHASES if p in self.phases and p not in record["phases_done"]]
        if not todo:
            return record, []
        missing_before = phases_missing_before(record, self.phases)
        if missing_before:
            if earlier is not None:
                return earlier, []  # as it was: an infra_error a later resume tries again
            record["reason"] = (
                f"phases {','.join(missing_before)} have not run for this scenario; "
                "run them first (or resume without --phases)"
            )
            self.store_scenario(sr, record)  # the report reads the reason from the record
            return record, []
        if earlier is not None and not self._set_aside_attempt(sr, record):
            return earlier, []  # as it was: an infra_error a later resume tries again
        record["reason"] = ""  # what it said while it waited ('interrupted; ...') no longer holds
        return record, todo

    def _retry(self, sr: ScenarioRun, earlier: dict[str, Any]) -> dict[str, Any]:
        """A fresh record for a scenario run the infrastructure failed (an
        ``infra_error``: untested, so a resume runs it again from the start);
        what that attempt recorded is kept in ``infra_attempts``."""
        record = self.new_record(sr)
        attempt = {k: earlier[k] for k in ATTEMPT_KEYS if earlier.get(k) is not None}
        record["infra_attempts"] = [*(earlier.get("infra_attempts") or []), attempt]
        return record

    def _set_aside_attempt(self, sr: ScenarioRun, record: dict[str, Any]) -> bool:
        """Set aside the files the attempt ``record`` retries left in its state
        directory, only once the retry is about to run (an invocation that runs
        none of its phases leaves them where they are): its ``infra_attempts``
        entry names where they went (``state``), and the record is written at
        once, so that it names them however this invocation ends. False (and a
        warning naming the directory) when they cannot be moved: the retry would
        not start as the first attempt did, so it does not run."""
        try:
            aside = self.set_aside_state(sr.key)
        except OSError as exc:
            sys.stderr.write(
                self.redactor.text(
                    f"rook: warning: {sr.key}: not tried again: cannot set aside the files "
                    f"its failed attempt left in its state directory ({os_error_text(exc)}); "
                    f"move them away, then {self.resume} tries it again"
                )
                + "\n"
            )
            return False
        if aside is not None:
            record["infra_attempts"][-1]["state"] = aside
            self.run_dir.save_scenario(sr.key, record)
        return True

    def set_aside_state(self, key: str) -> str | None:
        """Move what an earlier attempt of scenario run ``key`` left in its state
        directory (``ROOK_STATE_DIR``) to ``state/<key>.attempt-N`` (N: 1, 2, ...
        in the order attempts were set aside) and leave an empty one, so that a
        retried attempt starts as the first did and nothing is lost. Returns
        where the files went (relative to the run directory), or ``None`` when
        there were none."""
        d = self.run_dir.state / key
        try:
            with os.scandir(d) as entries:
                if next(entries, None) is None:
                    return None
        except (FileNotFoundError, NotADirectoryError):
            return None
        n = 1
        while (self.run_dir.state / f"{key}.attempt-{n}").exists():
            n += 1
        aside = self.run_dir.state / f"{key}.attempt-{n}"
        os.rename(d, aside)
        d.mkdir()
        return f"state/{aside.name}"

    async def compute_scenario(
        self,
        sr: ScenarioRun,
        record: dict[str, Any],
        todo: list[str],
        slot: Slot | None = None,
        checkpoint: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Run the phases ``todo`` of one scenario run on ``record`` and return it.

        Writes no record itself: inputs and output are plain, picklable data,
        so an executor may run this in another process or on another machine
        (the Dask executor does); :meth:`store_scenario` records the result.
        ``checkpoint`` (the in-process executor's: :meth:`run_scenario`) is
        given the record after each phase that ran a hook when another hook
        is still to come (open before execute, execute before close or
        collect...), so that a run killed meanwhile resumes after that phase
        and never sends the agent the goal again.
        ``slot`` (see :meth:`run_scenario`) is taken just before the run's first
        hook and given back just after its last. The run's ``started`` is its
        first hook's start (this call's, when it runs none); its ``seconds``
        add this call's span, from its first hook (or its judging) to its end,
        so that the time between invocations (a split or resumed run) is never
        counted. A checkpoint holds the span so far.
        """
        # The state to go back to if interrupted: phases only append to lists and
        # set keys, so a one-level copy is a faithful snapshot (and cheap). It
        # moves on as each phase completes.
        before = _snapshot(record)

        prior = run_seconds(record)  # the spans of earlier invocations
        span: list[float] = []  # this call's work began: its first hook's start, or its judging's

        def phase_done(write: bool) -> None:
            nonlocal before
            if write and checkpoint is not None:
                if span:
                    record["seconds"] = round(prior + time.time() - span[0], 6)
                before = _snapshot(record)
                checkpoint(record)
            else:
                before = _snapshot(record)

        began = time.time()
        try:
            await self._run_phases(sr, record, todo, span, slot, phase_done)
        except asyncio.CancelledError:
            # Keep the record as it was after its last completed phase (so a
            # resume redoes exactly the interrupted one) and note the attempt.
            attempt = {"at": time.time(), "hooks": record["hooks"][len(before["hooks"]) :]}
            record.clear()
            record.update(before)
            record.setdefault("interrupted_attempts", []).append(attempt)
            record["reason"] = f"interrupted; {self.resume} finishes it"
            raise
        finally:
            end = time.time()
            record["started"] = record["started"] or began  # when it ran no hook
            record["seconds"] = round(prior + (end - span[0] if span else 0.0), 6)
            record["ended"] = end
        return record

    def store_scenario(self, sr: ScenarioRun, record: dict[str, Any]) -> None:
        """Record one scenario run atomically, spool its report entry and report
        progress (the driver alone)."""
        self.entries.add(sr.key, self.run_dir.save_scenario(sr.key, record))
        for cap, seen in record.get("observed", {}).items():
            if seen:
                self.observed[cap] = True
        if self.on_progress is not None:
            self.on_progress(record)

    async def run_scenario(
        self, sr: ScenarioRun, slots: asyncio.Semaphore | None = None
    ) -> dict[str, Any]:
        """Run what is missing of one scenario run and record it; returns the record.

        A finished run is recorded in the event loop's next idle turn (see
        :mod:`rook_core.recording`); :meth:`flush_records` writes what is
        still pending. An interrupted or failed attempt is recorded at once.

        ``slots`` bounds the scenario runs whose hooks are in flight (the
        executor's concurrency): the run is prepared (its record, state
        directory and first hook's call), takes a slot just before its first
        hook and gives it back as soon as its last hook has finished, so that
        a run waiting for a slot spawns while this one is recorded and judged.
        A run cancelled while it waits for a slot has not started: nothing is
        recorded.
        """
        slot = Slot(slots) if slots is not None else None
        try:
            self.recorder.started()
            record, todo = self.load_record(sr)
            if not todo:
                return record
            try:
                await self.compute_scenario(sr, record, todo, slot, self._checkpoint(sr))
            except asyncio.CancelledError:
                if slot is None or slot.taken:
                    self.store_scenario(sr, record)
                raise
            except BaseException:
                self.store_scenario(sr, record)
                raise
            self.recorder.record_soon(sr, record)
            return record
        finally:
            if slot is not None:
                slot.drop()

    def _checkpoint(self, sr: ScenarioRun) -> Callable[[dict[str, Any]], None]:
        """Write an unfinished scenario run's record as it stands (see
        :meth:`compute_scenario`); its report entry waits for the end."""

        def write(record: dict[str, Any]) -> None:
            self.run_dir.save_scenario(sr.key, record)

        return write

    def plan_ahead(self, runs: list[ScenarioRun], lead: int) -> None:
        """Have the state directories of ``runs`` made ahead of their start."""
        self.recorder.plan_ahead(runs, lead)

    def flush_records(self) -> None:
        """Record every finished scenario run not yet written; raises a write failure."""
        self.recorder.flush()

    def _finish(self, record: dict[str, Any], status: str, reason: str) -> None:
        record["status"] = status
        record["reason"] = self.redactor.text(reason)
        record["final"] = True
        record["phases_done"] = list(SCENARIO_PHASES)

    def not_runnable(self, scenario: Scenario) -> str | None:
        """Why this profile cannot run the scenario (a capability it neither
        declares nor has shown, or a transport's refusal), or ``None``."""
        why = runnability(
            scenario,
            self.rook.criteria,
            self.profile.capabilities,
            {**self.observed_before, **self.observed},
        )
        return why or self.transport_runnability(scenario)

    def transport_runnability(self, scenario: Scenario) -> str | None:
        """Why a transport of this profile cannot run the scenario, or ``None``."""
        for phase, entry in self.profile.hooks.items():
            spec = self.rook.transports.get(entry.transport)
            check = getattr(spec, "runnable", None)
            try:
                why = check(entry.config, scenario) if check is not None else None
            except Exception as exc:  # the plugin's bug: the scenario is an error, never skipped
                owner = self.rook.transports.owner(entry.transport)
                return PluginFault(
                    f"hooks.{phase} ({entry.transport}): the transport plugin {owner} raised "
                    f"{type(exc).__name__} in runnable: {exc}"
                )
            if why and not isinstance(why, str):  # True ('runnable'), a number: the plugin's bug
                owner = self.rook.transports.owner(entry.transport)
                return PluginFault(
                    f"hooks.{phase} ({entry.transport}): the transport plugin {owner} "
                    f"{not_a_reason(why, 'runnable', 'the entry can run the scenario')}"
                )
            if why:
                return f"hooks.{phase} ({entry.transport}): {why}"
        return None

    def _runs_programs(self, scenario: Scenario) -> bool:
        """Whether judging ``scenario`` may run programs or call out, for a while: a
        ``command`` criterion (a test suite, up to its timeout), a plugin judge, or
        a plugin's criterion type (its own model or service)."""
        found = self._runs_programs_of.get(scenario.id)
        if found is None:  # once per scenario: asked for every run of it, twice
            if self._program_types is None:
                criteria = self.rook.criteria
                self._program_types = frozenset(
                    t
                    for t in criteria.names()
                    if t in ("command", "judge") or criteria.distribution(t) != OWN
                )
            found = not self._program_types.isdisjoint([c.type for c in scenario.criteria])
            self._runs_programs_of[scenario.id] = found
        return found

    async def _run_phases(
        self,
        sr: ScenarioRun,
        record: dict[str, Any],
        todo: list[str],
        span: list[float],
        slot: Slot | None = None,
        phase_done: Callable[[bool], None] = lambda write: None,
    ) -> None:
        scenario = sr.scenario
        state_dir = self.recorder.state_dir(sr.key)

        if self.prepare_failed and ("open" in todo or "execute" in todo):
            # never started: no result of its own, so a resume (preparing again) runs it
            self._finish(
                record,
                ERROR,
                f"{self.prepare_failed} ({self.resume} prepares again and runs it)",
            )
            record.update(final=False, blocked="prepare", phases_done=[])
            return
        if "open" in todo or "execute" in todo:
            why = self.not_runnable(scenario)
            if why:
                self._finish(record, ERROR if isinstance(why, PluginFault) else NOT_RUNNABLE, why)
                return

        def call_for(phase: str, turn: int | None = None, stdin: str | None = None) -> HookCall:
            entry = self.profile.hooks[phase]
            timeout = entry.timeout
            if phase == "execute" and scenario.extra.get("timeout_seconds"):
                timeout = min(timeout, float(scenario.extra["timeout_seconds"]))
            return HookCall(
                phase=phase,
                entry=entry,
                run=self.ctx,
                env=self.env_for(  # ROOK_CONVERSATION: a handle a hook returned, never
                    phase,  # one the transport made up (that shows no multi_turn either)
                    state_dir,
                    sr,
                    record["session"],
                    turn,
                    record["conversation"] if record["observed"].get("multi_turn") else None,
                ),
                timeout=timeout,
                limits=self.profile.limits,
                scenario_run=sr,
                turn=turn,
                stdin=stdin,
                conversation=record["conversation"],
                session=record["session"],
                state_dir=state_dir,
                turns_total=len(scenario.turns),
                recorded=record["hooks"],
            )

        async def hook(call: HookCall) -> HookResult:
            if slot is not None:
                await slot.take()
            if not span:  # this call's first hook: its work begins
                span.append(time.time())
                record["started"] = record["started"] or span[0]  # the run's first hook
            return await self.call_hook(call, record)

        # what the agent did is recorded before criteria that run programs or call out,
        # as before a judge profile
        slow_criteria = self._runs_programs(scenario)
        # No hook after execute: its last turn gives the slot back at once.
        hooks = self.profile.hooks
        last_is_execute = not any(p in todo and p in hooks for p in ("close", "collect"))

        def hooks_after(phase: str) -> bool:
            """Whether a hook of a later phase is still to run, the judge
            profile's, a ``command`` criterion's and a plugin's judge or criterion
            type's included (then a phase's record is written as it completes:
            see compute_scenario)."""
            later = SCENARIO_PHASES[SCENARIO_PHASES.index(phase) + 1 :]
            if "judge" in todo and (self.judging.client is not None or slow_criteria):
                return True
            return any(p in todo and p in hooks for p in later)

        # How the run ends when an earlier phase decided it (open or execute
        # failed, the first turn gave no handle): kept in the record, so a run
        # resumed after a later phase was cut off still ends that way.
        def end(status: str, reason: str) -> None:
            record["ending"] = {"status": status, "reason": reason}

        if "open" in todo:
            entry = self.profile.hooks.get("open")
            if entry is not None:
                await self._delay(entry, record["last_phase_end"])
                result = await hook(call_for("open"))
                handle = None
                if result.ok:
                    try:
                        handle = conversation_handle((result.data or {}).get("conversation"))
                    except OutputError as exc:
                        result.status, result.diagnosis = "failed", str(exc)
                self._record_hook(record, result)
                if not result.ok:
                    end(ERROR, f"open failed: {result.diagnosis}")
                elif handle:
                    record["conversation"] = handle
                    if not result.conversation_assigned:
                        record["observed"]["multi_turn"] = True
            record["phases_done"].append("open")
            if entry is not None:
                phase_done(hooks_after("open"))

        if "execute" in todo and "ending" not in record:
            entry = self.profile.hooks["execute"]
            sent = len(record["turns"])  # turns a cut-off attempt finished: not sent again
            for n, text in enumerate(scenario.turns, start=1):
                if n <= sent:
                    continue
                await self._delay(entry, record["last_phase_end"])
                call = call_for("execute", turn=n, stdin=text)
                last = last_is_execute and n == len(scenario.turns)
                if last and slot is not None:
                    call.on_exit = slot.drop  # the agent's process is done: next run's turn
                result = await hook(call)
                if last and slot is not None:
                    await slot.give()
                if result.ok:
                    try:
                        ev = turn_evidence(n, text, result.data or {}, result.seconds)
                    except OutputError as exc:
                        result.status = "failed"
                        result.diagnosis = str(exc)
                hooked = self._record_hook(record, result)
                if not result.ok:
                    end(
                        INFRA_ERROR if result.infra else ERROR,
                        f"execute turn {n} failed: {result.diagnosis}",
                    )
                    break
                if ev.conversation:
                    record["conversation"] = ev.conversation
                    if not result.conversation_assigned:  # a handle Rook made shows nothing
                        record["observed"]["multi_turn"] = True
                if ev.calls is not None:
                    record["observed"]["calls"] = True
                elif ev.evidence:
                    _warn_once(record, calls_names_warning(ev.evidence), self.redactor)
                if has_token_counts(ev.usage):
                    record["observed"]["usage"] = True
                elif ev.usage is not None:
                    _warn_once(record, usage_names_warning(ev.usage), self.redactor)
                turn = ev.to_dict()
                if result.conversation_assigned:  # the transport's own handle: none returned
                    turn["conversation"] = None
                record["turns"].append(self.redactor.data(turn))
                record["hooks"][-1] = {**hooked, "data": None}  # stored once: as its turn
                if result.end_conversation and n < len(scenario.turns):
                    self._end_conversation(record, n, len(scenario.turns), result)
                    break
                if n == 1 and len(scenario.turns) > 1 and not record["conversation"]:
                    said = handle_said(record["hooks"], hooked)  # a handle given wrongly
                    end(
                        STOPPED,
                        "the first turn returned no conversation handle, so later turns cannot "
                        "continue the same conversation (treating independent calls as one "
                        "conversation would mislead); scenario stopped"
                        + (f"; {said}" if said else ""),
                    )
                    break
                if n < len(scenario.turns):  # a cut during the next turn resumes there
                    phase_done(True)
            record["phases_done"].append("execute")
            phase_done(hooks_after("execute"))
        elif "execute" in todo:  # decided before it (open failed): nothing is sent
            record["phases_done"].append("execute")

        if "close" in todo:
            entry = self.profile.hooks.get("close")
            if entry is not None:
                await self._delay(entry, record["last_phase_end"])
                result = await hook(call_for("close"))
                self._record_hook(record, result)
                if not result.ok:
                    record.setdefault("warnings", []).append(f"close failed: {result.diagnosis}")
            record["phases_done"].append("close")
            if entry is not None:
                phase_done(hooks_after("close"))

        if "ending" in record and "close" in hooks and "close" not in record["phases_done"]:
            return  # decided, but close is still to run (a later --phases): the end waits
        ending = record.pop("ending", None)
        if ending is not None:
            self._finish(record, ending["status"], ending["reason"])
            if ending["status"] == INFRA_ERROR:  # not the agent's doing: a resume tries again
                record["infra"] = True
                record["final"] = False
                record["reason"] += f" ({self.resume} tries it again)"
            return

        if "collect" in todo:
            entry = self.profile.hooks.get("collect")
            if entry is not None:
                await self._delay(entry, record["last_phase_end"])
                result = await hook(call_for("collect"))
                collected = None
                if result.ok:
                    try:
                        collected = collected_evidence(result.data or {})
                    except OutputError as exc:
                        result.status = "failed"
                        result.diagnosis = str(exc)
                hooked = self._record_hook(record, result)
                if not result.ok:
                    self._finish(record, ERROR, f"collect failed: {result.diagnosis}")
                    return
                if result.data is None:  # exit 0, nothing printed: nothing to add
                    record.setdefault("warnings", []).append(
                        "collect printed nothing: no evidence collected (a script exits 0 "
                        "for a phase it does not implement)"
                    )
                record["collected"] = self.redactor.data(collected)
                record["hooks"][-1] = {**hooked, "data": None}  # stored once: as collected
                if collected and collected.get("calls") is not None:
                    record["observed"]["calls"] = True
                elif collected:
                    warning = calls_names_warning(collected.get("evidence"))
                    _warn_once(record, warning, self.redactor)
                if collected and has_token_counts(collected.get("usage")):
                    record["observed"]["usage"] = True
                elif collected:
                    _warn_once(record, usage_names_warning(collected.get("usage")), self.redactor)
            record["phases_done"].append("collect")
            if entry is not None:
                phase_done(hooks_after("collect"))

        if "judge" in todo:
            if slot is not None:
                await slot.give()
            if not span:  # no hook ran in this call: its work is the judging
                span.append(time.time())
            await self.judge(scenario, record)
            record["phases_done"].append("judge")
            record["final"] = True

    def _end_conversation(
        self, record: dict[str, Any], n: int, total: int, result: HookResult
    ) -> None:
        """Turn ``n`` ended the conversation: the later turns are not sent."""
        reason = self.redactor.text(str(result.end_conversation))
        later = f"turn {n + 1}" if n + 1 == total else f"turns {n + 1}-{total}"
        record["conversation_ended"] = {
            "after_turn": n,
            "reason": reason,
            "not_sent": list(range(n + 1, total + 1)),
        }
        record.setdefault("warnings", []).append(
            f"{later} not sent: the conversation ended after turn {n} ({reason})"
        )

    async def judge(self, scenario: Scenario, record: dict[str, Any]) -> None:
        turns = [TurnEvidence(**t) for t in record["turns"]]
        verdicts = []
        record["criteria"] = []
        # what a criterion runs (command:, a plugin's) is found by its marker when this
        # run is killed meanwhile; the built-in text criteria run nothing
        judging = self.judging
        if self._runs_programs(scenario):
            state = str(self.run_dir.state / record["key"])
            judging = replace(judging, env={**judging.env, CHECK_MARKER: state})
        for criterion in scenario.criteria:
            ctype = self.rook.criteria.get(criterion.type)
            try:
                v = await evaluate_criterion(
                    criterion,
                    ctype,
                    scenario,
                    turns,
                    record.get("collected"),
                    record,
                    judging=judging,
                    owner=self.rook.criteria.owner(criterion.type),
                    third_party=self.rook.criteria.distribution(criterion.type) != OWN,
                )
            except asyncio.CancelledError:  # the judge profile's hooks it cut: in the attempt
                if judging.client is not None:
                    record["hooks"].extend(judging.client.interrupted_hooks(record["key"]))
                raise
            verdicts.append(v)
            verdict: dict[str, Any] = {
                "index": criterion.index,
                "type": criterion.type,
                "turn": criterion.turn,
                "status": v.status,
                "reason": self.redactor.text(v.reason),
            }
            if isinstance(criterion.raw, dict) and criterion.raw.get("id") is not None:
                verdict["id"] = criterion.raw["id"]
            if getattr(v, "evidence", None):
                verdict["evidence"] = self.redactor.data(v.evidence)
            record["criteria"].append(verdict)
        status, reason = scenario_status(verdicts)
        record["status"] = status
        record["reason"] = self.redactor.text(reason)


def _warn_once(record: dict[str, Any], warning: str | None, redactor: Redactor) -> None:
    """Add ``warning`` (redacted: it names the hook's own fields) to the record's
    warnings unless it is there (or ``None``)."""
    warning = redactor.text(warning) if warning else None
    if warning and warning not in record.setdefault("warnings", []):
        record["warnings"].append(warning)


def _drop_redacted_handle(record: dict[str, Any]) -> None:
    """A conversation handle that held the value of an env variable is on disk
    only redacted (``c-[redacted:TOKEN]``): a later invocation of the run
    cannot give it back, so its hooks get no ``ROOK_CONVERSATION`` (never the
    redacted text as if it were the handle), and the record says why."""
    handle = record.get("conversation")
    if not handle or MARK not in handle:
        return
    record["conversation"] = None
    record.setdefault("warnings", []).append(
        f"the conversation handle ({handle}) held the value of a profile env variable, so the "
        "record keeps it redacted and the phases run by this invocation get no "
        "ROOK_CONVERSATION; run the scenario's phases in one invocation to keep the handle"
    )


def _note_changed_definition(record: dict[str, Any], now: dict[str, Any]) -> None:
    """A scenario file edited between two invocations of one run (``--phases``,
    or a resume): what is still to run, judging included, uses the definition
    as it is now, so the record says so, with a warning, rather than listing
    the criteria it started with beside verdicts of others."""
    before = record.get("scenario") or {}
    old = before.get("content_hash")
    if not old or old == now["content_hash"]:
        return
    what = [k for k in ("turns", "criteria") if before.get(k) != now.get(k)] or ["definition"]
    record["scenario"] = now
    record.setdefault("warnings", []).append(
        f"the scenario's {' and '.join(what)} changed after this run started it (content "
        f"hash {old} -> {now['content_hash']}); the phases still to run use the file as it is now"
    )


def plan_runs(scenarios: list[Scenario], repeat: int | None) -> list[ScenarioRun]:
    planned = sum(repeat or s.repeat for s in scenarios)
    if planned > MAX_PLANNED:
        if repeat:
            where = f"--repeat {repeat}"
        else:
            big = max(scenarios, key=lambda s: s.repeat)
            where = f"{big.path or big.id}: repeat: {big.repeat}"
        raise ConfigError(
            f"{where}: plans {planned} scenario runs; a run plans at most {MAX_PLANNED:,} "
            "(split it into several runs)"
        )
    runs: list[ScenarioRun] = []
    for s in scenarios:
        n = repeat or s.repeat
        runs.extend(ScenarioRun(s, i, n) for i in range(1, n + 1))
    return runs


def kept(owner: str, callback: str, given: Any, returned: Any) -> Any:
    """The config a transport's ``resolve`` or ``check`` returned; ``None`` for
    an entry that had one is a forgotten ``return config``, refused up front
    rather than failing every scenario with the plugin's own ``TypeError``; so is
    the coroutine of one written ``async def``."""
    if asyncio.iscoroutine(returned):
        returned.close()  # never to be awaited: no 'never awaited' warning of Python's
        raise ConfigError(
            f"the transport plugin {owner} returned a coroutine from {callback} (an async def); "
            f"{callback} is a plain function: return the entry's config"
        )
    if returned is None and given is not None:
        raise ConfigError(
            f"the transport plugin {owner} returned None from {callback}; return the entry's config"
        )
    return returned


def resolve_entry(rook: Rook, profile: Profile, agent: Agent, phase: str, entry: Any) -> None:
    """Let the entry's transport check it before anything runs (``resolve``, then
    ``check``); a :class:`ConfigError` names the problem. ``rook run`` and ``rook
    doctor`` both use it, so they find the same mistakes."""
    spec = rook.transports.get(entry.transport)
    if spec is None:
        return
    hook_name = PHASE_HOOKS[phase]
    if not rook.runs_phase(entry.transport, hook_name):
        raise ConfigError(
            f"transport {entry.transport!r} ({rook.transports.owner(entry.transport)}) runs "
            f"no {phase!r} phase (it implements no {hook_name} hook)"
        )
    owner = rook.transports.owner(entry.transport)
    try:
        if spec.resolve is not None:
            entry.config = kept(owner, "resolve", entry.config, spec.resolve(entry.config, agent))
        if spec.check is not None:
            checked = run_check(spec, entry.config, rook, phase, profile)
            entry.config = kept(owner, "check", entry.config, checked)
    except RookError:
        raise
    except Exception as exc:  # the plugin's bug: named, never a traceback
        raise ConfigError(
            f"the transport plugin {owner} could not check "
            f"its {entry.transport!r} entry: {exception_text(exc)}"[:500]
        ) from None


def resolve_entries(rook: Rook, profile: Profile, agent: Agent) -> None:
    """Let each transport check its entries before anything runs."""
    with searching(base_environment(profile).get("PATH", os.defpath)):
        for phase, entry in profile.hooks.items():
            try:
                resolve_entry(rook, profile, agent, phase, entry)
            except ConfigError as exc:
                raise type(exc)(f"{profile.path}: hooks.{phase}: {exc}") from None


def not_a_reason(returned: Any, hook: str, fine: str) -> str:
    """What a transport's ``runnable`` or ``check_scenario`` returned that is no
    reason (``True``, a number, a coroutine), said of its plugin."""
    if asyncio.iscoroutine(returned):
        returned.close()  # never to be awaited: no 'never awaited' warning of Python's
    shown = repr(returned)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    return f"returned {shown} from {hook}, not a reason (a text, or None when {fine})"


def check_scenarios(
    rook: Rook, profile: Profile, scenarios: list[Scenario], phases: Sequence[str] | None = None
) -> None:
    """Refuse, before anything runs, a scenario an entry of the profile could never
    send as written (its transport's ``check_scenario``), naming the file and field;
    with ``phases`` (a resume), only the entries of those phases, which send now."""
    problems: dict[str, None] = {}
    for phase, entry in profile.hooks.items():
        if phases is not None and phase not in phases:
            continue
        spec = rook.transports.get(entry.transport)
        check = getattr(spec, "check_scenario", None)
        if check is None:
            continue
        for scenario in scenarios:
            try:
                why = check(entry.config, scenario)
            except Exception as exc:  # the plugin's bug: named, never a traceback
                raise ConfigError(
                    f"the transport plugin {rook.transports.owner(entry.transport)} could not "
                    f"check scenario {scenario.id!r}: {exception_text(exc)}"[:500]
                    + f" (hooks.{phase} of {profile.path})"
                ) from None
            if why and not isinstance(why, str):  # the plugin's bug: named
                raise ConfigError(
                    f"the transport plugin {rook.transports.owner(entry.transport)} "
                    + not_a_reason(
                        why, f"check_scenario for scenario {scenario.id!r}", "the entry can send it"
                    )
                    + f" (hooks.{phase} of {profile.path})"
                )
            if why:
                where = scenario.path or f"scenario {scenario.id}"
                problems[f"{where}: {why} (hooks.{phase} of {profile.path})"] = None
    if problems:
        raise ScenarioError("\n".join(problems))


__all__ = [
    "Engine",
    "PHASES",
    "check_env",
    "check_scenarios",
    "plan_runs",
    "resolve_entry",
    "resolve_entries",
    "process",
]
