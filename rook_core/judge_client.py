"""The judge profile: any profile, reached by any transport, that grades evidence.

``rubric`` criteria (and any criterion type with ``uses_judge_profile``) send
a prompt holding the rubric and the evidence to the profile named by
``--judge-profile NAME`` or ``judge_profile:`` in config.yaml. The judge
profile's hooks run exactly like an agent's: ``prepare`` once (on first use),
then per judgement ``open`` → ``execute`` (the prompt on standard input, or
in the transport's body) → ``close``. Its execute ``output`` must be one JSON
object ``{"pass": bool, "reason": str}`` (``score``, a number, optional);
anything else is a judge error with a diagnosis, never a pass.

The runner builds the client (:func:`setup_judging`) before anything runs and
hands it to the engine inside a :class:`rook_core.judging.JudgingContext`;
criteria reach it as ``view.judging.client``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import sys
import time
import uuid
from dataclasses import field
from pathlib import Path
from typing import Any

from . import hookio
from .definitions import agent_secret_names, find_profile, fits, locate_profile
from .errors import (
    ConfigError,
    HookFailed,
    PluginError,
    ProfileNotFound,
    RookError,
    RunStoreError,
    exception_text,
)
from .evaluating import queueing
from .hookenv import base_environment, check_env, hook_env
from .hookio import OutputError, preview, turn_evidence
from .judging import (
    JudgingContext,
    check_criteria,
    judge_profile_users,
    judged_repeat,
    may_ask_judge_profile,
)
from .lifecycle import delay
from .models import HookCall, HookResult, Profile, RunContext, Scenario, ScenarioRun
from .plain import plain
from .plugins import Rook, plugin_failure
from .preflight import resolve_entries
from .redact import Redactor, current
from .report import printable
from .store import atomic_write, dumps
from .transports import (
    dispatch,
    end_scenario,
    start_resource,
    stop_resources,
    transport_named,
)
from .workspace import ROOT, Agent

VERDICT_KEYS = ("pass", "reason", "score")
VERDICT_SHAPE = '{"pass": true|false, "reason": "...", "score": 0.0-1.0 (optional)}'
_FENCE = r"(?s)^```[A-Za-z0-9_-]*\s*\n(.*?)\n?```$"
NOT_JUDGED = (
    "cannot_satisfy",
    "policy_blocked",
    "out_of_scope",
    "cancelled",
    "continue",
    "runtime_failure",
    "infra_failure",
)
"""Completion statuses (a Ruhroh wrapper's, or a ``status`` a script prints) by which
a judge says it did not do the judging (``continue``: not finished when its iterations
ran out; ``runtime_failure``, ``infra_failure``: it failed, which a script judge says
in its status, a Ruhroh wrapper's failing its hook): whatever its output holds is no
verdict. Only ``goal_satisfied``, or no status, judges."""


class JudgeError(Exception):
    """The verdict of a judgement that gave none was read (``JudgeAnswer.passed``
    with ``ok`` false): a plugin judge that does so raises it, so its criterion is
    an ``error`` naming the judge profile's failure, never a decided verdict."""


@plain(slots=True)
class Judgement(ScenarioRun):
    """The scenario run one judgement judges, under a key of its own
    (``ID.N-jK``, as its state folder): a transport keeps what it holds for a
    scenario run (an HTTP entry's cookies and saved values) per judgement, so
    judgements of one scenario run in flight together never share them, and
    lets it go when the judgement ends (:func:`rook_core.transports.end_scenario`)."""

    number: int = 0

    def __post_init__(self) -> None:
        self.key = f"{self.judged}-j{self.number}"

    @property
    def judged(self) -> str:
        """The key of the agent's scenario run being judged."""
        return f"{self.scenario.id}.{self.repeat_index}"


@plain
class JudgeAnswer:
    """One judgement: ``status`` is ``ok`` (``passed``/``reason``/``score`` hold the
    verdict) or ``error`` (``diagnosis`` says why; ``passed`` then raises
    :class:`JudgeError`). ``record`` is the evidence kept with the criterion's
    verdict: profile, prompt, hook records, answer."""

    status: str
    verdict: bool | None = None  # the judge's "pass"; None: it gave none
    reason: str = ""
    score: float | None = None
    diagnosis: str = ""
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def passed(self) -> bool:
        """The judge's ``pass``. A judgement that failed has none: reading it raises
        (a judge that fails is never a fail, SPEC §6), saying why."""
        if not self.ok or self.verdict is None:
            raise JudgeError(
                f"{self.diagnosis or 'the judge profile gave no verdict'}; this judgement "
                "gave no verdict, so answer.passed has none (check answer.ok first, and "
                "return Verdict(ERROR, answer.diagnosis) when it is false)"
            )
        return self.verdict


def parse_verdict(text: str) -> tuple[dict[str, Any] | None, str]:
    """Read a judge's output as ``{"pass": bool, "reason": str, "score"?: number}``.

    Returns ``(verdict, "")`` or ``(None, what is wrong)``. The whole output
    must be the object; one enclosing Markdown code fence is tolerated.
    """
    body = text.strip()
    fenced = re.match(_FENCE, body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = hookio.loads(body)
    except json.JSONDecodeError as exc:
        return None, _not_json(body, exc)
    except ValueError as exc:  # JSON's syntax, but a value no reader gets back (1e999, NaN)
        return None, f"it is not JSON: {current().head(str(exc), 120, '...')}"
    if not isinstance(value, dict):
        return None, f"it is a JSON {_JSON_TYPES.get(type(value), 'value')}, not an object"
    repeated = repeated_keys(body)
    if repeated:
        return None, _repeated_problem(repeated)
    if not isinstance(value.get("pass"), bool):
        return None, f'"pass" must be true or false (got {_got(value, "pass")})'
    if not isinstance(value.get("reason"), str):
        return None, f'"reason" must be a string (got {_got(value, "reason")})'
    score = value.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        return None, f'"score" must be a number (got {_got(value, "score")})'
    if score is not None and not 0 <= score <= 1:  # NaN too: the prompt asks for 0 to 1
        return None, f'"score" must be a number from 0 to 1 (got {score!r})'
    return value, ""


def _not_json(body: str, exc: json.JSONDecodeError) -> str:
    """Why a judge's answer is no JSON, where its shape says: one object and then
    more (text after a code fence, a second object), or text before the object."""
    if exc.msg == "Extra data":
        more = "a second one" if body[exc.pos :].startswith(("{", "[")) else "more text"
        return (
            f"it is one JSON object followed by {more} (line {exc.lineno}, column "
            f"{exc.colno}): answer with the object alone"
        )
    start = body.find("{")
    if start > 0:
        try:
            _, end = json.JSONDecoder().raw_decode(body, start)
        except ValueError:
            return "it is not JSON"
        shape = (
            "text followed by a JSON object"
            if not body[end:].strip()
            else "a JSON object with text before and after it"
        )
        return f"it is {shape}: answer with the object alone"
    return "it is not JSON"


_JSON_TYPES = {
    list: "list",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _got(value: dict[str, Any], key: str) -> str:
    """What the judge gave for ``key``, as JSON writes it (``true``, ``null``, ``"yes"``)."""
    if key not in value:
        return "missing"
    return current().head(json.dumps(value[key], ensure_ascii=False), 80, "...")


def repeated_keys(text: str, inside: str | None = None) -> list[str]:
    """The verdict's keys (``pass``, ``reason``, ``score``) that the JSON object
    in ``text`` (or its member ``inside``) gives more than once. A decoder keeps
    the last of them, another the first: ``{"pass": false, "pass": true}`` is
    not a verdict."""
    value = hookio.members(text)
    if inside is not None:
        value = hookio.last_member(value, inside)
    return hookio.repeated_members(value, VERDICT_KEYS)


def _repeated_problem(keys: list[str]) -> str:
    shown = ", ".join(f'"{k}"' for k in keys)
    return f"it gives {shown} more than once, so its verdict is ambiguous"


class JudgeClient:
    """Sends prompts to the judge profile's hooks and reads its verdicts."""

    def __init__(
        self, rook: Rook, agent: Agent, profile: Profile, redactor: Redactor, ref: str
    ) -> None:
        self.rook = rook
        self.agent = agent
        self.profile = profile
        self.redactor = redactor
        self.ref = ref
        self.base_env = base_environment(profile)
        self.ctx: RunContext | None = None
        self._prepared: str | None = None  # None: not yet; "" ok; else the failure
        self._prepare_ended: float | None = None  # when this invocation's prepare hook ended
        self._lock: asyncio.Lock | None = None
        self._slots: asyncio.Semaphore | None = None
        self._count = itertools.count(1)
        self._interrupted: dict[str, list[dict[str, Any]]] = {}  # see interrupted_hooks
        self._warnings: dict[str, list[str]] = {}  # see warnings

    @property
    def info(self) -> dict[str, Any]:
        return {
            "id": self.profile.id,
            "name": self.profile.name,
            "agent": self.agent.name,
            "ref": self.ref,
            "file": str(self.profile.path),
        }

    def attach(self, run_id: str, run_dir: Path) -> None:
        """Bind the client to a run: its records go to ``<run>/judge/``."""
        base = run_dir / "judge"
        state = base / "state" / "run"
        state.mkdir(parents=True, exist_ok=True)
        self.ctx = RunContext(
            id=run_id,
            dir=base,
            workspace=self.agent.workspace,
            project=self.agent.project,
            agent=self.agent.name,
            agent_dir=self.agent.dir,
            profile=self.profile,
            state_dir=state,
            judge=True,  # no evidence observer sees its results (see RunContext.judge)
        )
        for name, value in (("plugins", self.rook), ("redactor", self.redactor)):
            if hasattr(self.ctx, name):  # optional context other transports rely on
                setattr(self.ctx, name, value)

    async def start(self) -> None:
        assert self.ctx is not None, "attach() the client to a run first"
        for key in {e.transport for e in self.profile.hooks.values()}:
            spec = self.rook.transports.get(key)
            if spec is not None and spec.start is not None:
                try:
                    resource = await start_resource(spec, self.ctx, self.rook.transports)
                except HookFailed as exc:  # each judgement errors saying so; the run goes on
                    self._prepared = self.redactor.text(str(exc))
                    return
                self.ctx.resources[key] = resource

    async def stop(self) -> None:
        if self.ctx is None:
            return
        await stop_resources(self.ctx.resources, self.rook.transports, self._warn)

    def _warn(self, message: str) -> None:
        message = f"rook: warning: judge profile {self.ref}: {message}"
        sys.stderr.write(printable(self.redactor.text(message)) + "\n")

    # -- hooks ---------------------------------------------------------------

    def _env(
        self,
        phase: str,
        state_dir: Path,
        sr: ScenarioRun | None,
        session: str,
        conversation: str | None,
    ) -> dict[str, str]:
        assert self.ctx is not None
        scenario_id = sr.scenario.id if sr is not None else None
        turn = 1 if phase == "execute" else None
        return hook_env(
            self.base_env, self.agent, self.ctx, phase, state_dir, scenario_id, session, turn,
            conversation,
        )  # fmt: skip

    async def _hook(
        self,
        phase: str,
        state_dir: Path,
        sr: ScenarioRun | None = None,
        session: str = "",
        conversation: str | None = None,
        stdin: str | None = None,
        after: float | None = None,
    ) -> HookResult:
        """Run the judge profile's ``phase`` hook; its entry's ``delay_seconds``
        is a minimum time since ``after`` (the preceding phase's end), as for
        an agent's hooks."""
        assert self.ctx is not None
        entry = self.profile.hooks[phase]
        await delay(entry, after)
        call = HookCall(
            phase=phase,
            entry=entry,
            run=self.ctx,
            env=self._env(phase, state_dir, sr, session, conversation),
            timeout=entry.timeout,
            limits=self.profile.limits,
            scenario_run=sr,
            turn=1 if phase == "execute" else None,
            stdin=stdin,
            conversation=conversation,
            session=session or None,
            state_dir=state_dir,
            turns_total=1,
        )
        began = time.time()
        try:
            return await dispatch(self.rook.hook, call, self.rook.transports)
        except PluginError:
            raise
        except RookError as exc:
            diagnosis = str(exc)
        except BaseException as exc:  # a transport plugin's bug fails this judgement only
            if not plugin_failure(exc):
                if isinstance(exc, asyncio.CancelledError):
                    self._cut(exc, call, began, sr)
                raise
            who = transport_named(entry.transport, self.rook.transports)
            diagnosis = f"{who} raised {exception_text(exc)}"
        now = time.time()
        return HookResult(
            phase,
            "failed",
            0.0,
            now,
            now,
            diagnosis=diagnosis,
            turn=call.turn,
            transport=entry.transport,
        )

    def interrupted_hooks(self, key: str) -> list[dict[str, Any]]:
        """The records (redacted, with ``judge_profile``) of this profile's hooks
        that were judging scenario run ``key`` when the run was interrupted; each
        is given once, for that scenario run's interrupted attempt."""
        return self._interrupted.pop(key, [])

    def warnings(self, key: str) -> list[str]:
        """What went wrong in the judgements of scenario run ``key`` that decided no
        verdict (a close that failed, as an agent's close failure is reported): each
        given once, for that scenario run's warnings."""
        return self._warnings.pop(key, [])

    async def _prepare(self) -> str:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._prepared is None:
                failed = ""
                if "prepare" in self.profile.hooks:
                    assert self.ctx is not None
                    # cut off (a judge that gave up asking): not done, the next one runs it
                    result = await self._hook("prepare", self.ctx.state_dir)
                    self._prepare_ended = result.ended
                    data = self.redactor.data(result.to_dict())
                    self.ctx.dir.mkdir(parents=True, exist_ok=True)
                    atomic_write(self.ctx.dir / "prepare.json", dumps(data))
                    if not result.ok:
                        failed = f"its prepare hook failed: {data.get('diagnosis')}"
                self._prepared = failed
        return self._prepared

    async def ask(
        self,
        prompt: str,
        scenario: Scenario,
        repeat_index: int | None = None,
        repeat_count: int | None = None,
    ) -> JudgeAnswer:
        """Run one judgement of ``prompt`` (about ``scenario``) through the judge profile.
        It belongs to the repeat being judged unless ``repeat_index`` names one.

        The prompt is redacted before it leaves Rook: a secret the agent
        echoed reaches the judge (often a model provider) as ``[redacted:NAME]``,
        which still tells it that a secret was shown."""
        assert self.ctx is not None, "attach() the client to a run first"
        if repeat_index is None or repeat_count is None:
            index, count = judged_repeat()
            repeat_index = index if repeat_index is None else repeat_index
            repeat_count = count if repeat_count is None else repeat_count
        prompt = self.redactor.text(prompt)
        who = f"judge profile {self.profile.id!r}"
        record: dict[str, Any] = {"profile": self.profile.id, "prompt": prompt, "hooks": []}
        with queueing():  # nor is the judge profile's prepare, once a run (its own timeout)
            failed = await self._prepare()
        if failed:
            return JudgeAnswer("error", diagnosis=f"{who}: {failed}", record=record)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.profile.concurrency)
        n = next(self._count)
        state_dir = self.ctx.dir / "state" / f"{scenario.id}.{repeat_index}-j{n}"
        state_dir.mkdir(parents=True, exist_ok=True)
        judged = Scenario(id=scenario.id, name=f"judge: {scenario.name}", turns=[prompt])
        sr = Judgement(judged, repeat_index, repeat_count, number=n)
        session = f"{self.ctx.id}-judge-{n}-{uuid.uuid4().hex[:8]}"
        with queueing():  # waiting for a slot is not judging (a judge's timeout_seconds)
            await self._slots.acquire()
        try:
            return await self._judge(prompt, sr, session, state_dir, record, who)
        finally:
            self._slots.release()
            end_scenario(self.ctx.resources, sr, self.rook.transports, self._warn)

    def _cut(
        self, exc: asyncio.CancelledError, call: HookCall, began: float, sr: ScenarioRun | None
    ) -> None:
        """Keep the hook the run's interruption cut off: in the attempt of the scenario
        run it judged, or where its prepare's record goes (the resume prepares)."""
        now = time.time()
        hook = HookResult(
            call.phase,
            "interrupted",
            round(now - began, 6),
            began,
            now,
            diagnosis="interrupted; its process group was killed",
            turn=call.turn,
            transport=call.entry.transport,
        )
        hookio.cut_off_output(exc, call, hook)
        data = self.redactor.data(hook.to_dict())
        if sr is not None:  # a judgement interrupted: its scenario run's attempt names it
            judged = sr.judged if isinstance(sr, Judgement) else sr.key
            self._interrupted.setdefault(judged, []).append(
                {**data, "judge_profile": self.profile.id}
            )
        elif call.phase == "prepare" and self.ctx is not None:
            with contextlib.suppress(RunStoreError, OSError):
                atomic_write(self.ctx.dir / "prepare.json", dumps(data))

    async def _judge(
        self,
        prompt: str,
        sr: Judgement,
        session: str,
        state_dir: Path,
        record: dict[str, Any],
        who: str,
    ) -> JudgeAnswer:
        def keep(result: HookResult) -> HookResult:
            record["hooks"].append(self.redactor.data(result.to_dict()))
            return result

        async def close(conversation: str | None, after: float | None) -> float | None:
            """Run close, as after an agent's scenario run (a failed one too): one that
            fails is reported on the scenario run, as an agent's failed close is."""
            if "close" not in self.profile.hooks:
                return after
            closed = keep(
                await self._hook("close", state_dir, sr, session, conversation, after=after)
            )
            if not closed.ok:
                warning = self.redactor.text(f"{who}: close failed: {closed.diagnosis}")
                warnings = self._warnings.setdefault(sr.judged, [])  # the engine's key
                if warning not in warnings:
                    warnings.append(warning)
            return closed.ended

        conversation = None
        last_end = self._prepare_ended
        if "open" in self.profile.hooks:
            opened = keep(await self._hook("open", state_dir, sr, session, after=last_end))
            last_end = opened.ended
            problem = None if opened.ok else opened.diagnosis
            if opened.ok:
                try:
                    conversation = hookio.conversation_handle(
                        (opened.data or {}).get("conversation")
                    )
                except OutputError as exc:
                    problem = str(exc)
            if problem is not None:  # close still runs, to release what open made
                await close(None, last_end)
                return JudgeAnswer(
                    "error", diagnosis=f"{who}: open failed: {problem}", record=record
                )
        result = await self._hook(
            "execute", state_dir, sr, session, conversation, prompt, after=last_end
        )
        output = None
        if result.ok:
            try:
                turn = turn_evidence(1, prompt, result.data or {}, result.seconds)
                output = turn.output
                if turn.conversation and not result.conversation_assigned:  # made up: no hook's
                    conversation = turn.conversation
            except OutputError as exc:
                result.status, result.diagnosis = "failed", str(exc)
        keep(result)
        last_end = await close(conversation, result.ended)
        if not result.ok or output is None:
            return JudgeAnswer(
                "error", diagnosis=f"{who}: execute failed: {result.diagnosis}", record=record
            )
        if "collect" in self.profile.hooks:  # the judge's usage, a trace: kept with its record
            collected = await self._hook(
                "collect", state_dir, sr, session, conversation, after=last_end
            )
            if collected.ok:  # read as an agent's collect is (usage, calls, the rest evidence)
                try:
                    evidence = hookio.collected_evidence(collected.data or {})
                    record["collected"] = self.redactor.data(evidence)
                except OutputError as exc:
                    collected.status, collected.diagnosis = "failed", str(exc)
            keep(collected)
            if not collected.ok:  # as a failed collect fails an agent's scenario
                return JudgeAnswer(
                    "error",
                    diagnosis=f"{who}: collect failed: {collected.diagnosis}",
                    record=record,
                )
        data = result.data or {}
        if data.get("status") in NOT_JUDGED:  # a refusal (the judge model's policy) is no verdict
            record["answer"] = self.redactor.text(output)
            return JudgeAnswer(
                "error",
                diagnosis=f"{who} reported {data['status']}: it did not "
                f"{'finish judging' if data['status'] == 'continue' else 'judge'}, so its answer "
                f"{preview(output, 300, self.redactor)} is no verdict (a judge that judged "
                "reports goal_satisfied, or no status)",
                record=record,
            )
        verdict, problem = parse_verdict(output)
        if verdict is not None and isinstance(data.get("output"), dict) and result.stdout:
            repeated = repeated_keys(result.stdout, inside="output")  # the object form
            if repeated:
                verdict, problem = None, _repeated_problem(repeated)
        if verdict is None:
            record["answer"] = self.redactor.text(output)
            return JudgeAnswer(
                "error",
                diagnosis=f"{who} answered {preview(output, 300, self.redactor)}, which is "
                f"not one JSON object {VERDICT_SHAPE}: {problem}",
                record=record,
            )
        record["answer"] = self.redactor.data(verdict)
        score = verdict.get("score")
        return JudgeAnswer(
            "ok",
            verdict=verdict["pass"],
            reason=verdict["reason"],
            score=float(score) or 0.0 if score is not None else None,  # -0.0 is 0, never "-0"
            record=record,
        )


def find_judge_profile(agent: Agent, ref: str, rook: Rook) -> tuple[Agent, Profile]:
    """``NAME`` is a profile of this agent; ``AGENT/NAME`` one of another agent of the project."""
    judge_agent, name = _judge_agent(agent, ref)
    try:
        profile = find_profile(judge_agent.profiles_dir, name, rook.transports)
    except ConfigError as exc:
        raise type(exc)(f"judge profile {ref!r}: {exc}") from None
    return judge_agent, profile


def _judge_agent(agent: Agent, ref: str) -> tuple[Agent, str]:
    """The agent whose profile ``ref`` names, and the profile's name there (a
    :class:`ConfigError` for another form than ``NAME`` or ``AGENT/NAME``, or an
    agent that does not exist)."""
    judge_agent = agent
    name = ref
    if "/" in ref:
        other, _, name = ref.partition("/")
        # no agent's folder, no profile, or a path deeper than AGENT/NAME (a/b/c)
        if other in ("", ".", "..") or not name or "/" in name:
            agents = agent.dir.parent
            names = sorted(p.name for p in agents.iterdir() if p.is_dir())
            raise ConfigError(
                f"judge profile {ref!r}: give NAME, or AGENT/NAME (agents: {', '.join(names)})"
            )
        judge_agent = Agent(agent.workspace, agent.project, other)
        if not judge_agent.dir.is_dir():
            raise ConfigError(
                f"judge profile {ref!r}: no agent {other!r} in project {agent.project!r} "
                f"({judge_agent.dir} does not exist)"
            )
    return judge_agent, name


def _names_a_profile(agent: Agent, ref: str) -> None:
    """Refuse ``ref`` (a :class:`ConfigError`, as :func:`find_judge_profile` says
    it) when it picks no profile file from ``agent``; the file is not validated."""
    judge_agent, name = _judge_agent(agent, ref)
    direct = judge_agent.profiles_dir / f"{name}.yaml"
    if fits(direct) and direct.is_file():  # the common case: no file read
        return
    try:
        locate_profile(judge_agent.profiles_dir, name)
    except ProfileNotFound as exc:
        raise ProfileNotFound(f"judge profile {ref!r}: {exc}") from None
    except ConfigError:  # found, but another problem: the run that uses it says which
        return


def check_configured_judge(agent: Agent, ref: str) -> None:
    """config.yaml's ``judge_profile``, in a run that does not load it (no selected
    criterion needs it), is refused as a run that needs it would refuse it when
    it names no profile (exit 2, naming config.yaml and the field): never kept
    quietly until the first ``rubric``. config.yaml is the workspace's: a value
    that picks a profile from another agent of the workspace (the one whose
    rubrics it judges) is no mistake, so only then is every agent tried."""
    try:
        _names_a_profile(agent, ref)
        return
    except ConfigError as exc:
        refusal = exc
    projects = agent.workspace / ROOT / "projects"
    for other in sorted(projects.glob("*/agents/*")):
        if other.name.startswith(".") or other == agent.dir or not other.is_dir():
            continue
        try:
            _names_a_profile(Agent(agent.workspace, other.parent.parent.name, other.name), ref)
            return
        except (ConfigError, OSError):
            continue
    raise type(refusal)(f"{agent.root / 'config.yaml'}: judge_profile: {refusal}")


def _load_client(
    rook: Rook, agent: Agent, ref: str, redactor: Redactor, source: str = ""
) -> JudgeClient:
    """The judge profile ``ref`` names, checked as any profile (exit 2 on a problem,
    the message after ``source``: where the name came from)."""
    try:
        return _loaded_client(rook, agent, ref, redactor)
    except ConfigError as exc:
        if not source:
            raise
        raise type(exc)(source + str(exc)) from None


def _loaded_client(rook: Rook, agent: Agent, ref: str, redactor: Redactor) -> JudgeClient:
    try:
        judge_agent, profile = find_judge_profile(agent, ref, rook)
    except ConfigError:  # named with its folder: the secrets of every profile there
        for name in _folder_secret_names(agent, ref):
            redactor.add(name, os.environ.get(name, ""))
        raise
    for e in profile.env:  # before its checks: their messages name paths
        redactor.add(e.variable, os.environ.get(e.variable, ""))
    resolve_entries(rook, profile, judge_agent)
    try:
        check_env(profile)
    except ConfigError as exc:
        raise type(exc)(f"judge {exc}") from None
    return JudgeClient(rook, judge_agent, profile, redactor, ref)


def _add_judge_secrets(rook: Rook, agent: Agent, ref: str, redactor: Redactor) -> None:
    """Redact the ``env`` values of the judge profile ``ref`` names in an
    invocation that does not judge with it (``--phases`` without judge, no
    scenario with a rubric): the agent's hooks see them all the same. Never a
    refusal: a profile that cannot be read adds the secrets of every profile
    of its folder."""
    try:
        names = [e.variable for e in find_judge_profile(agent, ref, rook)[1].env]
    except ConfigError:
        names = _folder_secret_names(agent, ref)
    for name in names:
        redactor.add(name, os.environ.get(name, ""))


def _folder_secret_names(agent: Agent, ref: str) -> list[str]:
    """The ``env`` variables of every profile of the agent, and of the agent
    ``ref`` names (``AGENT/NAME``): for a judge profile not found or not read."""
    other = ref.partition("/")[0] if "/" in ref else ""
    folders = [agent.profiles_dir]
    if other not in ("", ".", ".."):
        folders.append(agent.dir.parent / other / "profiles")
    return [n for folder in folders for n in agent_secret_names(folder)]


def setup_judging(
    rook: Rook,
    agent: Agent,
    agent_profile: Profile,
    scenarios: list[Scenario],
    phases: list[str],
    redactor: Redactor,
    requested: str | None = None,
    configured: Any = None,
    pinned: str | None = None,
) -> JudgingContext:
    """Everything criteria may reach, checked before anything runs (exit 2 on a problem).

    The judge profile is ``requested`` (``--judge-profile``), else the one the
    run already used (``pinned``), else ``configured`` (config.yaml's
    ``judge_profile``). It is loaded when a selected scenario sends evidence to
    it (and the judge phase is selected) or when it was requested explicitly;
    also when a selected scenario has a criterion that may ask it (a plugin's
    judge), but then one that cannot be used is a warning, never a refusal.
    """
    if configured is not None and not isinstance(configured, str):
        raise ConfigError("config.yaml: judge_profile must be a profile name (a string)")
    if requested is not None and not requested.strip():  # `--judge-profile "$J"`, J empty
        raise ConfigError(
            f"--judge-profile {requested!r}: names no profile; give NAME (or AGENT/NAME), "
            "or leave the flag out to use judge_profile: in config.yaml"
        )
    users = judge_profile_users(scenarios, rook.criteria) if "judge" in phases else []
    ref = requested or pinned or configured
    client = None
    if users and not ref:
        shown = "\n".join(f"  {u}" for u in users[:10])
        more = f"\n  ... and {len(users) - 10} more" if len(users) > 10 else ""
        raise ConfigError(
            "these criteria send evidence to a judge profile, but none is configured; "
            "pass --judge-profile NAME or set judge_profile: NAME in "
            f"{agent.root / 'config.yaml'}:\n{shown}{more}"
        )
    # a name config.yaml gave is refused naming config.yaml: no flag was given to blame
    # (the flag, when it named the profile; a resumed run's pinned one: neither)
    source = "" if pinned else f"{agent.root / 'config.yaml'}: judge_profile: "
    if requested:
        source = "--judge-profile: "
    if ref and (users or requested):
        client = _load_client(rook, agent, ref, redactor, source)
    elif ref and "judge" in phases and may_ask_judge_profile(scenarios, rook.criteria, rook.judges):
        # a plugin's judge may ask it (view.judging.client), or may not: no reason to refuse
        try:
            client = _load_client(rook, agent, ref, redactor)
        except ConfigError as exc:
            sys.stderr.write(
                redactor.text(
                    f"rook: warning: {exc}\n(plugin judges find no judge profile: "
                    "view.judging.client is None)"
                )
                + "\n"
            )
    elif ref and not pinned:  # config.yaml's, not used now: it must name a profile all the same
        try:
            check_configured_judge(agent, ref)
        except ConfigError:  # named with its folder: the secrets of every profile there
            _add_judge_secrets(rook, agent, ref, redactor)
            raise
    if ref and client is None:  # not used now: the agent's hooks see its env all the same
        _add_judge_secrets(rook, agent, ref, redactor)
    judging = JudgingContext(
        workspace=agent.workspace,
        env=base_environment(agent_profile),
        client=client,
        judges=rook.judges,
    )
    check_criteria(scenarios, rook.criteria, judging)
    return judging


__all__ = [
    "JudgeAnswer",
    "JudgeError",
    "JudgeClient",
    "VERDICT_SHAPE",
    "check_configured_judge",
    "find_judge_profile",
    "parse_verdict",
    "setup_judging",
]
