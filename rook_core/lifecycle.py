"""One scenario run's phases in one invocation: open → execute × turns →
close → collect → judge, each only when selected and not done yet.

:class:`ScenarioPhases` holds what one call of
:meth:`~rook_core.engine.Engine.compute_scenario` needs while the phases run
(the record, the phases to do, the run's place among those in flight) and
asks its :class:`~rook_core.engine.Engine` for hooks, records and judging.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .hookio import (
    OutputError,
    bad_arguments,
    calls_arguments_warning,
    calls_names_warning,
    collected_evidence,
    conversation_handle,
    handle_said,
    has_token_counts,
    turn_evidence,
    usage_names_warning,
)
from .models import (
    ERROR,
    INFRA_ERROR,
    NOT_RUNNABLE,
    SCENARIO_PHASES,
    STOPPED,
    HookCall,
    HookResult,
    ScenarioRun,
)
from .redact import Redactor

if TYPE_CHECKING:
    from .engine import Engine


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


class PluginFault(str):
    """Why a scenario cannot run when the reason is a plugin's bug (a transport's
    ``runnable`` that raised): the scenario run is an ``error``, never skipped."""


def finish(record: dict[str, Any], status: str, reason: str, redactor: Redactor) -> None:
    """Decide a scenario run: its status, its reason (redacted), every phase done."""
    record["status"] = status
    record["reason"] = redactor.text(reason)
    record["final"] = True
    record["phases_done"] = list(SCENARIO_PHASES)


async def delay(entry: Any, last_end: float | None) -> None:
    """Wait what is left of the entry's ``delay_seconds`` since the preceding
    phase ended (``last_end``): a minimum, not a sleep. Never more than
    ``delay_seconds``: an end stamped later than now (a wall clock stepped
    back since, or a record written where the clock ran ahead) waits that."""
    if entry.delay_seconds and last_end is not None:
        wait = min(last_end + entry.delay_seconds - time.time(), entry.delay_seconds)
        if wait > 0:
            await asyncio.sleep(wait)


def warn_once(record: dict[str, Any], warning: str | None, redactor: Redactor) -> None:
    """Add ``warning`` (redacted: it names the hook's own fields) to the record's
    warnings unless it is there (or ``None``)."""
    warning = redactor.text(warning) if warning else None
    if warning and warning not in record.setdefault("warnings", []):
        record["warnings"].append(warning)


class ScenarioPhases:
    """The phases ``todo`` of scenario run ``sr``, run on ``record`` (see
    :meth:`Engine.compute_scenario` for ``span``, ``slot`` and ``phase_done``)."""

    __slots__ = (
        "engine",
        "sr",
        "scenario",
        "record",
        "todo",
        "span",
        "slot",
        "phase_done",
        "state_dir",
        "slow_criteria",
    )

    def __init__(
        self,
        engine: Engine,
        sr: ScenarioRun,
        record: dict[str, Any],
        todo: list[str],
        span: list[float],
        slot: Slot | None = None,
        phase_done: Callable[[bool], None] = lambda write: None,
    ) -> None:
        self.engine = engine
        self.sr = sr
        self.scenario = sr.scenario
        self.record = record
        self.todo = todo
        self.span = span
        self.slot = slot
        self.phase_done = phase_done
        self.state_dir = engine.recorder.state_dir(sr.key)
        # what the agent did is recorded before criteria that run programs or call out,
        # as before a judge profile
        self.slow_criteria = engine.runs_programs(sr.scenario)

    async def run(self) -> None:
        engine, record, todo = self.engine, self.record, self.todo
        if engine.prepare_failed and ("open" in todo or "execute" in todo):
            # never started: no result of its own, so a resume (preparing again) runs it
            finish(
                record,
                ERROR,
                f"{engine.prepare_failed} ({engine.resume} prepares again and runs it)",
                engine.redactor,
            )
            record.update(final=False, blocked="prepare", phases_done=[])
            return
        if "open" in todo or "execute" in todo:
            why = engine.not_runnable(self.scenario)
            if why:
                status = ERROR if isinstance(why, PluginFault) else NOT_RUNNABLE
                finish(record, status, why, engine.redactor)
                return

        if "open" in todo:
            await self.open()
        if "execute" in todo and "ending" not in record:
            await self.execute()
        elif "execute" in todo:  # decided before it (open failed): nothing is sent
            record["phases_done"].append("execute")
        if "close" in todo:
            await self.close()

        if "ending" in record and "close" in engine.profile.hooks:
            if "close" not in record["phases_done"]:
                return  # decided, but close is still to run (a later --phases): the end waits
        ending = record.pop("ending", None)
        if ending is not None:
            finish(record, ending["status"], ending["reason"], engine.redactor)
            if ending["status"] == INFRA_ERROR:  # not the agent's doing: a resume tries again
                record["infra"] = True
                record["final"] = False
                record["reason"] += f" ({engine.resume} tries it again)"
            return

        if "collect" in todo and not await self.collect():
            return
        if "judge" in todo:
            if self.slot is not None:
                await self.slot.give()
            if not self.span:  # no hook ran in this call: its work is the judging
                self.span.append(time.monotonic())
            await engine.judge(self.scenario, record)
            record["phases_done"].append("judge")
            record["final"] = True

    # -- the calls ---------------------------------------------------------

    def call_for(self, phase: str, turn: int | None = None, stdin: str | None = None) -> HookCall:
        engine, record, scenario = self.engine, self.record, self.scenario
        entry = engine.profile.hooks[phase]
        timeout = entry.timeout
        if phase == "execute" and scenario.extra.get("timeout_seconds"):
            timeout = min(timeout, float(scenario.extra["timeout_seconds"]))
        return HookCall(
            phase=phase,
            entry=entry,
            run=engine.ctx,
            env=engine.env_for(  # ROOK_CONVERSATION: a handle a hook returned, never
                phase,  # one the transport made up (that shows no multi_turn either)
                self.state_dir,
                self.sr,
                record["session"],
                turn,
                record["conversation"] if record["observed"].get("multi_turn") else None,
            ),
            timeout=timeout,
            limits=engine.profile.limits,
            scenario_run=self.sr,
            turn=turn,
            stdin=stdin,
            conversation=record["conversation"],
            session=record["session"],
            state_dir=self.state_dir,
            turns_total=len(scenario.turns),
            recorded=record["hooks"],
        )

    async def hook(self, call: HookCall) -> HookResult:
        if self.slot is not None:
            await self.slot.take()
        span = self.span
        if not span:  # this call's first hook: its work begins (monotonic: a duration)
            span.append(time.monotonic())
            self.record["started"] = self.record["started"] or time.time()  # the run's first hook
        return await self.engine.call_hook(call, self.record)

    def hooks_after(self, phase: str) -> bool:
        """Whether a hook of a later phase is still to run, the judge
        profile's, a ``command`` criterion's and a plugin's judge or criterion
        type's included (then a phase's record is written as it completes:
        see :meth:`Engine.compute_scenario`)."""
        todo = self.todo
        if "judge" in todo and (self.engine.judging.client is not None or self.slow_criteria):
            return True
        later = SCENARIO_PHASES[SCENARIO_PHASES.index(phase) + 1 :]
        hooks = self.engine.profile.hooks
        return any(p in todo and p in hooks for p in later)

    def end(self, status: str, reason: str) -> None:
        """How the run ends when an earlier phase decided it (open or execute
        failed, the first turn gave no handle): kept in the record, so a run
        resumed after a later phase was cut off still ends that way."""
        self.record["ending"] = {"status": status, "reason": reason}

    async def call(self, phase: str) -> HookResult | None:
        """Run the hook of ``phase`` (open, close or collect) once its delay has
        passed; ``None`` when the profile has none."""
        entry = self.engine.profile.hooks.get(phase)
        if entry is None:
            return None
        await delay(entry, self.record["last_phase_end"])
        return await self.hook(self.call_for(phase))

    def done(self, phase: str, ran: bool) -> None:
        """``phase`` is done; when its hook ran, its record is written if a later
        hook follows (:meth:`hooks_after`)."""
        self.record["phases_done"].append(phase)
        if ran:
            self.phase_done(self.hooks_after(phase))

    # -- the phases --------------------------------------------------------

    async def open(self) -> None:
        record = self.record
        result = await self.call("open")
        if result is not None:
            handle = None
            if result.ok:
                try:
                    handle = conversation_handle((result.data or {}).get("conversation"))
                except OutputError as exc:
                    result.status, result.diagnosis = "failed", str(exc)
            self.engine.record_hook(record, result)
            if not result.ok:
                self.end(ERROR, f"open failed: {result.diagnosis}")
            elif handle:
                record["conversation"] = handle
                if not result.conversation_assigned:
                    record["observed"]["multi_turn"] = True
        self.done("open", result is not None)

    async def execute(self) -> None:
        engine, record, scenario, slot = self.engine, self.record, self.scenario, self.slot
        redactor = engine.redactor
        entry = engine.profile.hooks["execute"]
        total = len(scenario.turns)
        # No hook after execute: its last turn gives the slot back at once.
        hooks = engine.profile.hooks
        last_is_execute = not any(p in self.todo and p in hooks for p in ("close", "collect"))
        sent = len(record["turns"])  # turns a cut-off attempt finished: not sent again
        for n, text in enumerate(scenario.turns, start=1):
            if n <= sent:
                continue
            await delay(entry, record["last_phase_end"])
            call = self.call_for("execute", turn=n, stdin=text)
            last = last_is_execute and n == total
            if last and slot is not None:
                call.on_exit = slot.drop  # the agent's process is done: next run's turn
            result = await self.hook(call)
            if last and slot is not None:
                await slot.give()
            if result.ok:
                try:
                    ev = turn_evidence(n, text, result.data or {}, result.seconds)
                except OutputError as exc:
                    result.status = "failed"
                    result.diagnosis = str(exc)
            hooked = engine.record_hook(record, result)
            if not result.ok:
                self.end(
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
                warn_once(record, calls_arguments_warning(result.data or {}, f"turn {n}"), redactor)
            elif ev.evidence:
                warn_once(record, calls_names_warning(ev.evidence), redactor)
            if has_token_counts(ev.usage):
                record["observed"]["usage"] = True
            elif ev.usage is not None:
                warn_once(record, usage_names_warning(ev.usage), redactor)
            turn = ev.to_dict()
            if result.conversation_assigned:  # the transport's own handle: none returned
                turn["conversation"] = None
            record["turns"].append(redactor.data(turn))
            if result.warning:  # a transport's note on a turn that completed
                warn_once(record, result.warning, redactor)
            record["hooks"][-1] = {**hooked, "data": None}  # stored once: as its turn
            if result.end_conversation and n < total:
                self.end_conversation(n, total, str(result.end_conversation))
                break
            if n < total and n == scenario.extra.get("max_turns"):  # (multi-turn runs only)
                self.end_conversation(n, total, f"the scenario's max_turns ({n}) reached")
                break
            if n == 1 and total > 1 and not record["conversation"]:
                said = handle_said(record["hooks"], hooked)  # a handle given wrongly
                self.end(
                    STOPPED,
                    "the first turn returned no conversation handle, so later turns cannot "
                    "continue the same conversation (treating independent calls as one "
                    "conversation would mislead); scenario stopped" + (f"; {said}" if said else ""),
                )
                break
            if n < total:  # a cut during the next turn resumes there
                self.phase_done(True)
        self.done("execute", True)

    def end_conversation(self, n: int, total: int, why: str) -> None:
        """Turn ``n`` ended the conversation (``why``: the transport's reason, or the
        scenario's ``max_turns``): the later turns are not sent."""
        reason = self.engine.redactor.text(why)
        later = f"turn {n + 1}" if n + 1 == total else f"turns {n + 1}-{total}"
        self.record["conversation_ended"] = {
            "after_turn": n,
            "reason": reason,
            "not_sent": list(range(n + 1, total + 1)),
        }
        self.record.setdefault("warnings", []).append(
            f"{later} not sent: the conversation ended after turn {n} ({reason})"
        )

    async def close(self) -> None:
        result = await self.call("close")
        if result is not None:
            self.engine.record_hook(self.record, result)
            if not result.ok:
                warning = f"close failed: {result.diagnosis}"
                self.record.setdefault("warnings", []).append(warning)
        self.done("close", result is not None)

    async def collect(self) -> bool:
        """Run collect; False when it failed (the run is decided: an error)."""
        engine, record = self.engine, self.record
        redactor = engine.redactor
        result = await self.call("collect")
        if result is not None:
            collected = None
            if result.ok:
                try:
                    collected = collected_evidence(result.data or {})
                except OutputError as exc:
                    result.status = "failed"
                    result.diagnosis = str(exc)
            hooked = engine.record_hook(record, result)
            if not result.ok:
                finish(record, ERROR, f"collect failed: {result.diagnosis}", redactor)
                return False
            if result.data is None:  # exit 0, nothing printed: nothing to add
                record.setdefault("warnings", []).append(
                    "collect printed nothing: no evidence collected (a script exits 0 "
                    "for a phase it does not implement)"
                )
            record["collected"] = redactor.data(collected)
            record["hooks"][-1] = {**hooked, "data": None}  # stored once: as collected
            if collected and collected.get("calls") is not None:
                record["observed"]["calls"] = True
                said = {k for t in record["turns"] for k in bad_arguments(t.get("calls"))}
                data = redactor.data(result.data or {})  # as the turns' calls are recorded
                warn_once(record, calls_arguments_warning(data, "collect", said), redactor)
            elif collected:
                warn_once(record, calls_names_warning(collected.get("evidence")), redactor)
            if collected and has_token_counts(collected.get("usage")):
                record["observed"]["usage"] = True
            elif collected:
                warn_once(record, usage_names_warning(collected.get("usage")), redactor)
        self.done("collect", result is not None)
        return True


__all__ = ["PluginFault", "ScenarioPhases", "Slot", "delay", "finish", "warn_once"]
