"""The lifecycle engine: prepare once, then per scenario run
open → execute × turns → close → collect → judge.

The engine owns the order and the evidence; transports (through the phase
hooks) reach the agent; an executor plugin decides where and how many
scenario runs are in flight; the store records each one atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .attempts import Attempts, snapshot
from .errors import PluginError, RookError, RunStoreError, exception_text
from .evaluating import at_once
from .hookenv import base_environment, hook_env
from .hookio import cut_off_output
from .judging import (
    CHECK_MARKER,
    JUDGED_REPEAT,
    JudgingContext,
    Said,
    evaluate_criterion,
    runnability,
    scenario_status,
)
from .lifecycle import PluginFault, ScenarioPhases, Slot, warn_once
from .models import (
    PHASES,
    Criterion,
    HookCall,
    HookResult,
    Profile,
    RunContext,
    Scenario,
    ScenarioRun,
    TurnEvidence,
    Verdict,
)
from .plugins import Rook, plugin_failure
from .preflight import not_a_reason
from .recording import Recorder
from .redact import Redactor
from .registry import OWN
from .report import EntrySpool, printable, run_seconds
from .store import RunDir
from .transports import (
    dispatch,
    end_scenario,
    start_resource,
    stop_resources,
    transport_named,
)
from .workspace import Agent


class Engine(Attempts):
    """One run's lifecycle, driven by an executor: :meth:`prepare` once, then
    :meth:`run_scenario` (or :meth:`load_record`, :meth:`compute_scenario` and
    :meth:`store_scenario`, for an executor that runs scenarios elsewhere) for
    each scenario run. A scenario run's phases are
    :class:`~rook_core.lifecycle.ScenarioPhases`; its record across attempts
    and invocations is kept by :class:`~rook_core.attempts.Attempts`."""

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
        self._plans: dict[str, tuple[bool, bool]] = {}  # see _judging_plan
        self._said: dict[str, frozenset[int]] = {}  # see _judged_said
        self._program_types: frozenset[str] | None = None  # the criterion types that do
        self._slow_types: frozenset[str] = frozenset()  # see _judging_plan
        self._ordered_types: frozenset[str] = frozenset()
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
        split = tuple(phases) != PHASES  # split by phase: never collect early what arrives late
        self.resume = (
            f"rook run --run {run.id}"
            + (f" --shard {shard.label}" if shard else "")
            + (f" --phases {','.join(phases)}" if split else "")
        )
        """The command that finishes this run's unfinished scenario runs (stored reasons),
        with this invocation's ``--phases``."""
        self.prepare_failed: str | None = None
        self.signalled: Callable[[], bool] = lambda: False
        """Whether a signal stopped the run (the runner's interrupts say): else one of
        the run's files it could not write did, when one could not (``stopped_by``)."""
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
        self._runs: dict[str, asyncio.Future[None] | bool | None] = {}
        """The scenario runs :meth:`run_scenario` is running or ran to their end, by
        key: ``None`` while one runs, the future a second call for it waits on
        (made by that call), ``True`` once it ran to its end."""
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
        """Start (``TransportSpec.start``) each transport a hook of a phase this
        invocation runs uses: ``--phases collect,judge`` never starts the one only
        execute uses."""
        hooks = self.profile.hooks
        for key in {e.transport for phase, e in hooks.items() if phase in self.phases}:
            spec = self.rook.transports.get(key)
            if spec is not None and spec.start is not None:
                self.ctx.resources[key] = await start_resource(spec, self.ctx, self.rook.transports)

    def warn(self, message: str) -> None:
        sys.stderr.write(printable(self.redactor.text(f"rook: warning: {message}")) + "\n")

    async def stop_transports(self) -> None:
        await stop_resources(self.ctx.resources, self.rook.transports, self.warn)

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
        except RookError as exc:
            return ended("failed", str(exc))
        except BaseException as exc:  # a transport plugin's bug fails this hook, not the run
            if not plugin_failure(exc):
                if record is not None and isinstance(exc, asyncio.CancelledError):
                    # the run was interrupted while this hook ran
                    interrupted = ended("interrupted", "interrupted; its process group was killed")
                    cut_off_output(exc, call, interrupted)
                    if self.stopped_by():  # not a signal: the run could not write
                        interrupted.diagnosis = f"{interrupted.diagnosis} ({self.stopped_by()})"
                    record["hooks"].append(interrupted.to_dict())
                    record["interrupted"] = True
                raise
            who = transport_named(entry.transport, self.rook.transports)
            return ended("failed", f"{who} raised {exception_text(exc)}")

    def record_hook(self, record: dict[str, Any] | None, result: HookResult) -> dict[str, Any]:
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
                    f"rook_evidence_recorded{f': {exc}' if str(exc) else ''} "
                    f"(the run goes on; {name})"
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
        data = self.record_hook(None, result)
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

    # -- one scenario run ----------------------------------------------------

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
        before = snapshot(record)

        prior = run_seconds(record)  # the spans of earlier invocations
        # this call's work began (its first hook's start, or its judging's), on the
        # monotonic clock: a wall clock set back meanwhile would make it negative
        span: list[float] = []

        def phase_done(write: bool) -> None:
            nonlocal before
            if write and checkpoint is not None:
                if span:
                    record["seconds"] = round(prior + time.monotonic() - span[0], 6)
                before = snapshot(record)
                checkpoint(record)
            else:
                before = snapshot(record)

        began = time.time()
        try:
            await ScenarioPhases(self, sr, record, todo, span, slot, phase_done).run()
        except asyncio.CancelledError:
            # Keep the record as it was after its last completed phase (so a
            # resume redoes exactly the interrupted one) and note the attempt.
            attempt = {"at": time.time(), "hooks": record["hooks"][len(before["hooks"]) :]}
            record.clear()
            record.update(before)
            record.setdefault("interrupted_attempts", []).append(attempt)
            record["reason"] = f"interrupted; {self.resume} finishes it"
            if self.stopped_by():  # not a signal: the run could not write
                record["reason"] = f"interrupted ({self.stopped_by()}); {self.resume} finishes it"
            raise
        finally:
            worked = time.monotonic() - span[0] if span else 0.0
            end = time.time()
            record["started"] = record["started"] or began  # when it ran no hook
            record["seconds"] = round(prior + worked, 6)
            record["ended"] = end
            end_scenario(self.ctx.resources, sr, self.rook.transports, self.warn)
        return record

    def stopped_by(self) -> str:
        """Why the run stopped, said by the scenario runs it cut off, when it was not a
        signal: a file of the run it could not write (a full disk); else ''."""
        if self.run_dir.failed is None or self.signalled():
            return ""
        return f"the run stopped, unable to write its records: {self.run_dir.failed}"

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

        Asked again for a scenario run (an executor's bug), it never runs its hooks
        twice: while the run is in flight it waits for it, and once it has run to
        its end, nothing is missing: it returns the record.
        """
        key, runs = sr.key, self._runs
        if key in runs:
            return await self._run_again(sr, slots)
        runs[key] = None  # a future only when a second call comes to wait for it
        slot = Slot(slots) if slots is not None else None
        ended = False
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
            ended = True
            return record
        finally:
            if slot is not None:
                slot.drop()
            waiting = runs[key]
            if ended:
                runs[key] = True
            else:  # ended short: a second call runs what is missing
                del runs[key]
            if waiting is not None:
                waiting.set_result(None)  # type: ignore[union-attr]

    async def _run_again(self, sr: ScenarioRun, slots: asyncio.Semaphore | None) -> dict[str, Any]:
        """:meth:`run_scenario` asked for a scenario run it is running or has run: wait
        for the run in flight, then return its record, or run what is still missing
        when it ended short (failed, cut off)."""
        waiting = self._runs.get(sr.key)
        if waiting is not True and sr.key in self._runs:  # in flight
            if waiting is None:
                waiting = self._runs[sr.key] = asyncio.get_running_loop().create_future()
            await asyncio.shield(waiting)  # type: ignore[arg-type]
        if self._runs.get(sr.key) is not True:
            return await self.run_scenario(sr, slots)
        self.recorder.flush()
        return self.run_dir.load_scenario(sr.key) or self.new_record(sr)

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
            except BaseException as exc:  # the plugin's bug: an error, never skipped
                if not plugin_failure(exc):
                    raise
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

    def runs_programs(self, scenario: Scenario) -> bool:
        """Whether judging ``scenario`` may run programs or call out, for a while: a
        ``command`` criterion (a test suite, up to its timeout), a plugin judge, or
        a plugin's criterion type (its own model or service)."""
        found = self._plans.get(scenario.id)  # (one call a scenario run, as it was)
        return (found or self._judging_plan(scenario))[0]

    def _judging_plan(self, scenario: Scenario) -> tuple[bool, bool]:
        """Whether judging ``scenario`` may run programs (:meth:`runs_programs`), and
        whether its criteria are judged together: when two or more are slow (the
        judge profile's, a ``judge:``, a plugin's criterion type) and none looks at
        the workspace (``file``, ``command``, a type with ``turns_apply = False``),
        which a ``command`` may change for the criteria after it."""
        found = self._plans.get(scenario.id)
        if found is None:  # once per scenario: asked for every run of it, twice
            if self._program_types is None:
                criteria = self.rook.criteria
                names = criteria.names()
                self._program_types = frozenset(
                    t for t in names if t in ("command", "judge") or criteria.distribution(t) != OWN
                )
                self._slow_types = frozenset(
                    t
                    for t in names
                    if t == "judge"
                    or getattr(criteria.get(t), "uses_judge_profile", False)
                    or criteria.distribution(t) != OWN
                )
                self._ordered_types = frozenset(
                    t for t in names if getattr(criteria.get(t), "turns_apply", True) is False
                )
            types = [c.type for c in scenario.criteria]
            together = (
                len(types) > 1  # (counted only then: most scenarios have one criterion)
                and self._ordered_types.isdisjoint(types)
                and sum(
                    c.type in self._slow_types and not self._own_judge(c) for c in scenario.criteria
                )
                > 1
            )
            found = (not self._program_types.isdisjoint(types), together)
            self._plans[scenario.id] = found
        return found

    def _own_judge(self, criterion: Criterion) -> bool:
        """Whether ``criterion`` is a ``judge:`` naming one of Rook's own judges
        (``keywords``: it only reads the answer)."""
        if criterion.type != "judge" or not isinstance(criterion.config, dict):
            return False
        judges, name = self.rook.judges, criterion.config.get("name")
        return isinstance(name, str) and name in judges and judges.distribution(name) == OWN

    def _judged_said(self, scenario: Scenario) -> frozenset[int]:
        """The indexes of ``scenario``'s criteria that judge what the agent said
        (:meth:`_judges_said_text`), found once a scenario, when first needed: when
        a run of it recorded a marker (:meth:`~rook_core.judging.Said.of`)."""
        found = self._said.get(scenario.id)
        if found is None:
            found = frozenset(c.index for c in scenario.criteria if self._judges_said_text(c))
            self._said[scenario.id] = found
        return found

    def _judges_said_text(self, criterion: Criterion) -> bool:
        """Whether ``criterion`` is one of Rook's own criteria that compare text
        (``compares_record_text``) or the ``keywords`` judge, judged on what the
        agent said (:class:`~rook_core.judging.Said`), its own text holding no
        marker (``not_contains: "[redacted:API_TOKEN]"`` is judged as recorded);
        never a plugin's or a judge profile's, which see the record alone."""
        criteria = self.rook.criteria
        return (
            self._own_judge(criterion)
            or (
                getattr(criteria.get(criterion.type), "compares_record_text", False)
                and criteria.distribution(criterion.type) == OWN
            )
        ) and not Said.written_with_marker(criterion)

    async def judge(self, scenario: Scenario, record: dict[str, Any]) -> None:
        turns = [TurnEvidence(**t) for t in record["turns"]]
        verdicts = []
        record["criteria"] = []
        # what a criterion runs (command:, a plugin's) is found by its marker when this
        # run is killed meanwhile; the built-in text criteria run nothing
        judging = self.judging
        runs_programs, together = self._judging_plan(scenario)
        if runs_programs:
            state = str(self.run_dir.state / record["key"])
            judging = replace(judging, env={**judging.env, CHECK_MARKER: state})
        criteria = self.rook.criteria
        said = Said.of(self.redactor, turns, record.get("collected"))  # None: no marker
        judged_said = self._judged_said(scenario) if said is not None else frozenset()

        async def evaluate(c: Criterion) -> Verdict:
            seen: Any = (turns, record.get("collected"))
            if said is not None and c.index in judged_said:  # what the agent said, not markers
                seen = said.evidence(c, criteria.get(c.type))
                if isinstance(seen, Verdict):
                    return seen
            return await evaluate_criterion(
                c,
                criteria.get(c.type),
                scenario,
                seen[0],
                seen[1],
                record,
                judging=judging,
                owner=criteria.owner(c.type),
                third_party=criteria.distribution(c.type) != OWN,
            )

        # what a judge asks the judge profile belongs to this repeat (client.ask names none)
        client = judging.client
        repeat = (
            None
            if client is None
            else JUDGED_REPEAT.set((record.get("repeat_index", 1), record.get("repeat_count", 1)))
        )
        try:
            # two slow criteria or more: judged at once, none waiting for another's judge
            given = (
                iter(await at_once(list(map(evaluate, scenario.criteria)))) if together else None
            )
            for criterion in scenario.criteria:
                v = next(given) if given is not None else await evaluate(criterion)
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
        except asyncio.CancelledError:  # the judge profile's hooks it cut: in the attempt
            if client is not None:
                record["hooks"].extend(client.interrupted_hooks(record["key"]))
            raise
        finally:  # what the judge profile reported beside its verdicts (a failed close)
            if client is not None and repeat is not None:
                JUDGED_REPEAT.reset(repeat)
                for warning in client.warnings(record["key"]):
                    warn_once(record, warning, self.redactor)
        status, reason = scenario_status(verdicts)
        record["status"] = status
        record["reason"] = self.redactor.text(reason)


__all__ = ["Engine"]
