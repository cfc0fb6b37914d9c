"""The judge engine: criterion types, evidence views, verdicts.

A criterion type (built-in or an organisation's own) is registered through
``rook_register_criteria``. The engine builds an :class:`EvidenceView` for
the turns the criterion looks at and asks the type for a verdict. Evidence a
criterion needs but the agent did not give is ``unverifiable``, never a pass.
"""

from __future__ import annotations

import contextvars
import inspect
import json
from collections.abc import Awaitable
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from .errors import counted, exception_text, listed
from .evaluating import (
    OVERDUE,
    evaluation,
)
from .lazyre import later
from .models import (
    CRITERION_STATUSES,
    ERROR,
    FAILED,
    PASSED,
    UNVERIFIABLE,
    Criterion,
    Scenario,
    TurnEvidence,
    Verdict,
)
from .plain import plain
from .plugins import plugin_failure
from .redact import MARK, current, quoted
from .registry import Registry

CHECK_MARKER = "RUN_BY_ROOK"
"""The variable a criterion's programs carry while a run judges a scenario run
(not a ``ROOK_*`` name: they see none of the hooks'): that scenario run's state
directory, by which a resume of the run, killed while they ran, finds and kills
them (:func:`rook_core.procscan.leftovers`)."""


@plain
class JudgingContext:
    """What a criterion can reach beyond the recorded evidence (``view.judging``).

    * ``workspace``: the Rook workspace; workspace criteria (``file``,
      ``command``) work in the scenario's ``workspace:`` directory, resolved
      from here, or here when the scenario names none;
    * ``env``: the environment for programs a criterion runs (the agent's
      hook environment without any ``ROOK_*`` variable), with
      :data:`CHECK_MARKER` when a run judges a scenario run;
    * ``client``: the judge profile's client (:class:`rook_core.judge_client.JudgeClient`)
      when one is configured (``--judge-profile`` or ``judge_profile:`` in
      config.yaml), else ``None``;
    * ``judges``: the registry of whole judges plugins registered through
      ``rook_register_judges``.
    """

    workspace: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    client: Any = None
    judges: Any = None


@plain
class EvidenceView:
    """The evidence one criterion judges: one turn, or all of them together.

    ``calls`` and ``usage`` are ``None`` when they were not observed for every
    turn in view (``[]`` means "observed no calls"). ``scope`` is what the
    criterion's ``turn:`` asked for: ``"last"`` (no ``turn:``, the default),
    ``"all"`` or a turn number. A criterion judged on all turns together
    (``per_turn = False``) sees every turn in ``turns`` with ``scope`` ``"last"``
    by default: its answer is the last turn's (``output``), the earlier turns
    are context.
    """

    scenario: Scenario
    turns: list[TurnEvidence]
    calls: list[dict[str, Any]] | None
    usage: dict[str, Any] | None
    seconds: float
    evidence: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    judging: JudgingContext = field(default_factory=JudgingContext)
    scope: int | str = "last"
    earlier: list[TurnEvidence] = field(default_factory=list)
    """With ``turn: N``, the turns before N: context for the one judged (a rubric
    sends them as ``earlier_turns``), never judged themselves."""

    @property
    def output(self) -> str | None:
        return self.turns[-1].output if self.turns else None

    @property
    def turn(self) -> int | None:
        return self.turns[-1].turn if len(self.turns) == 1 else None


CRITERION_TIMEOUT_SECONDS = 300.0
"""How long a criterion's or a judge's awaitable evaluation may take unless it
sets ``timeout_seconds`` (the default execute timeout: it may call a model)."""


class CriterionType:
    """Base for criterion types. Subclasses set ``name`` and implement ``evaluate``.

    * ``needs``: capabilities the type requires (``calls``, ``usage``,
      ``multi_turn``); a scenario using it is ``not_runnable`` when the profile
      neither declares nor has observed them.
    * ``per_turn``: ``True`` (the default) for criteria judged on one turn:
      the last turn unless the criterion gives ``turn: N``; ``turn: all``
      means every turn must satisfy it. ``False`` for criteria on calls and
      usage, which count across all turns (and what collect returned) unless
      ``turn: N`` is given; such a criterion that also reads an answer reads
      the last one by default (``view.output``; ``view.scope`` says which
      turns were asked for).
    * ``turns_apply``: ``False`` for a type that judges no turn (``file`` and
      ``command`` look at the workspace after the scenario): a ``turn:`` on it
      is refused when the scenario is loaded.
    * ``uses_judge_profile``: ``True`` when the type sends evidence to the
      judge profile (``rubric``); a run whose scenarios use it needs
      ``--judge-profile`` or ``judge_profile:`` in config.yaml, or it is refused
      before anything runs.
    * ``timeout_seconds``: how long ``evaluate`` may take (default
      :data:`CRITERION_TIMEOUT_SECONDS`); past it, it is cancelled and the
      criterion is an ``error`` naming the plugin, and the run goes on. A
      third-party plugin's plain ``evaluate`` runs in a thread to be bounded
      (Rook stops waiting for it; the thread cannot be stopped).
      ``None`` for a type that bounds its own work (``rubric``: its judge
      profile's hooks have timeouts; ``command``: its ``timeout_seconds``).
    * ``may_ask_judge_profile(config, judges)``: optional; ``True`` when the
      criterion may ask the judge profile (``view.judging.client``) without
      needing one (``judge:`` naming a plugin's judge): a judge profile
      config.yaml names is then loaded for the run (one that cannot be used
      is a warning, not a refusal).
    * ``compares_record_text``: ``True`` when ``evaluate`` compares text the
      criterion was written with (a needle, a call's arguments) with the
      recorded evidence, where a profile ``env`` value is ``[redacted:NAME]``:
      a run whose criterion of such a type holds such a value is refused
      before anything runs (a scenario file must not hold it). Rook's own such
      types judge the answers and calls as the agent said them (:class:`Said`);
      a plugin's sees the record alone. ``False`` (the default) for a type
      that does not (``command`` runs its text, ``file`` reads the agent's
      files, a ``rubric`` is sent redacted with the evidence).
    * ``check(config, judging)``: optional; called before anything runs with
      the :class:`JudgingContext`; returns a message when the criterion cannot
      work (an unknown judge name), which refuses the run (exit 2).
    """

    name: str = ""
    needs: frozenset[str] = frozenset()
    per_turn: bool = True
    turns_apply: bool = True
    description: str = ""
    uses_judge_profile: bool = False
    compares_record_text: bool = False
    timeout_seconds: float | None = CRITERION_TIMEOUT_SECONDS

    def parse(self, value: Any) -> Any:
        return value

    def check(self, config: Any, judging: JudgingContext) -> str | None:
        return None

    def evaluate(  # pragma: no cover
        self, config: Any, view: EvidenceView
    ) -> Verdict | Awaitable[Verdict]:
        raise NotImplementedError


JUDGED_REPEAT: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar(
    "rook_judged_repeat", default=(1, 1)
)
"""The repeat (index, count) of the scenario run whose criteria the current task
judges, set by the engine while a run with a judge profile is judged: what a
judgement asks the judge profile (a plugin judge's ``client.ask(prompt,
scenario)``, which names no repeat) belongs to that scenario run."""


def judged_repeat() -> tuple[int, int]:
    """The repeat (index, count) being judged (:data:`JUDGED_REPEAT`; ``(1, 1)`` unset)."""
    return JUDGED_REPEAT.get()


def time_bound(evaluator: Any) -> float | None:
    """A criterion type's or judge's ``timeout_seconds``: ``None`` (no bound), a
    number of seconds > 0, else :data:`CRITERION_TIMEOUT_SECONDS`."""
    seconds = getattr(evaluator, "timeout_seconds", CRITERION_TIMEOUT_SECONDS)
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        return CRITERION_TIMEOUT_SECONDS
    return float(seconds)


def overdue(who: str, seconds: float | None) -> Verdict:
    """The error of an evaluation :func:`within` found :data:`OVERDUE`."""
    return Verdict(
        ERROR,
        f"{who} gave no verdict within {seconds or 0:g} s (its timeout_seconds); it was cancelled",
    )


def with_totals(numbers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """When some of these usages report a ``total``: the others' is their input plus
    output (as ``max_tokens`` takes a total that was not reported), so a total one
    turn or iteration left out does not hide the whole of it."""
    if not any("total" in n for n in numbers):
        return numbers
    return [
        {**n, "total": n["input"] + n["output"]}
        if "total" not in n and "input" in n and "output" in n
        else n
        for n in numbers
    ]


def _sum_usage(usages: list[dict[str, Any]]) -> dict[str, Any]:
    """The usage of several turns: each count summed when every turn reports it.
    A count some turn left out was not observed for them together (it is not 0)."""
    numbers = with_totals(
        [
            {k: v for k, v in u.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            for u in usages
        ]
    )
    if not numbers:
        return {}
    return {k: sum(n[k] for n in numbers) for k in numbers[0] if all(k in n for n in numbers)}


def same_json_value(a: Any, b: Any) -> bool:
    """``a == b`` as JSON values: ``true`` is not ``1``, nor ``false`` ``0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same_json_value(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(same_json_value(x, y) for x, y in zip(a, b, strict=True))
        )
    return bool(a == b)


def _json_key(value: Any) -> Any:
    """A hashable key of a JSON value: two values have the same key exactly when
    :func:`same_json_value` holds (``true`` is not ``1``; ``1`` is ``1.0``; an
    object's keys in any order)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, dict):
        return ("d", frozenset((k, _json_key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("l", tuple(_json_key(v) for v in value))
    try:
        hash(value)
    except TypeError:  # not from JSON (a plugin's own object): its text
        return ("r", repr(value))
    return ("v", value)


def _call_key(call: dict[str, Any]) -> Any:
    """The same key for two calls exactly when they are the same call: the same name,
    and arguments that are the same JSON value (none as ``{}``)."""
    return (_json_key(call.get("name")), _json_key(call.get("arguments") or {}))


def merge_calls(
    collected: list[dict[str, Any]], reported: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The scenario's calls when collect returned ``calls``: collect's list (a
    call it lists again is not counted twice), and every call the turns
    ``reported`` that it lacks (a trace that came back empty or late is no
    evidence that a reported call was not made), each placed after the collect
    call matched by the reported call before it, so both orders are kept.

    A reported call matches the first same call of collect's list at or after
    the last match, else the first same call not matched yet. Collect's calls
    are found by their key, never each against each: a trace of 100,000 calls
    of a few tools took half an hour to judge that way."""
    from bisect import bisect_left  # only a run whose collect returns calls

    same: dict[Any, list[int]] = {}  # by call, the indices of collect's calls
    for i, c in enumerate(collected):
        same.setdefault(_call_key(c), []).append(i)
    matched = bytearray(len(collected))
    oldest: dict[Any, int] = {}  # by call, where its first unmatched index may be
    extras: list[list[dict[str, Any]]] = [[] for _ in range(len(collected) + 1)]
    pos = 0  # after the last collect call a reported call matched
    for call in reported:
        key = _call_key(call)
        group = same.get(key, ())
        # every matched index is below pos (a match moves pos past it, a match
        # below pos is one), so the first index at or after pos is unmatched
        j = bisect_left(group, pos)
        if j < len(group):
            idx: int | None = group[j]
        else:
            k = oldest.get(key, 0)
            while k < len(group) and matched[group[k]]:
                k += 1
            oldest[key] = k
            idx = group[k] if k < len(group) else None
        if idx is None:
            extras[pos].append(call)
        else:
            matched[idx] = 1
            pos = max(pos, idx + 1)
    merged: list[dict[str, Any]] = []
    for i, extra in enumerate(extras):
        merged.extend(extra)
        if i < len(collected):
            merged.append(collected[i])
    return merged


def _collected_usage(turns: dict[str, Any] | None, collected: dict[str, Any]) -> dict[str, Any]:
    """The turns' usage with each count collect gives replacing theirs. The turns'
    ``total`` is their input plus output: when collect gives its own input or
    output but no total, that sum no longer holds and it is dropped (``max_tokens``
    adds collect's counts instead of reading the turns' smaller total)."""
    usage = {**(turns or {}), **collected}
    if "total" not in collected and any(k in collected for k in ("input", "output")):
        usage.pop("total", None)
    return usage


def build_view(
    scenario: Scenario,
    turns: list[TurnEvidence],
    collected: dict[str, Any] | None,
    record: dict[str, Any],
    aggregate: bool,
    judging: JudgingContext | None = None,
    scope: int | str = "last",
    earlier: list[TurnEvidence] | None = None,
) -> EvidenceView:
    calls: list[dict[str, Any]] | None
    if turns and all(t.calls is not None for t in turns):
        calls = [c for t in turns for c in (t.calls or [])]
    else:
        calls = None
    usage: dict[str, Any] | None
    if turns and all(t.usage is not None for t in turns):
        usage = _sum_usage([t.usage for t in turns if t.usage is not None])
    else:
        usage = None
    evidence: dict[str, Any] = {}
    for t in turns:
        evidence.update(t.evidence)
    if aggregate and collected:  # collect's reply is the whole scenario's evidence
        if isinstance(collected.get("calls"), list):
            calls = merge_calls(collected["calls"], [c for t in turns for c in (t.calls or [])])
        if isinstance(collected.get("usage"), dict):  # its counts replace the turns' own
            usage = _collected_usage(usage, collected["usage"])
        evidence.update(collected.get("evidence") or {})
    seconds = sum(t.seconds for t in turns)
    return EvidenceView(
        scenario,
        turns,
        calls,
        usage,
        seconds,
        evidence,
        record,
        judging or JudgingContext(),
        scope,
        earlier or [],
    )


def required_capabilities(scenario: Scenario, criteria: Registry) -> dict[str, str]:
    """Capability -> why this scenario needs it."""
    needs: dict[str, str] = {}
    if len(scenario.turns) > 1 and scenario.extra.get("max_turns") != 1:  # 1: one is sent
        needs["multi_turn"] = f"it has {len(scenario.turns)} turns"
    by: dict[str, list[str]] = {}  # every criterion that needs it, not the first alone
    for c in scenario.criteria:
        ctype = criteria.get(c.type)
        for cap in getattr(ctype, "needs", ()):
            by.setdefault(cap, []).append(f"{c.index + 1} ({c.type})")
    for cap, named in by.items():
        if cap not in needs:
            many = len(named) > 1
            needs[cap] = f"{'criteria' if many else 'criterion'} {', '.join(named)} " + (
                "need it" if many else "needs it"
            )
    return needs


def runnability(
    scenario: Scenario, criteria: Registry, declared: dict[str, bool], observed: dict[str, bool]
) -> str | None:
    """Return why the scenario is not runnable, or ``None`` when it is."""
    reasons = []
    for cap, why in required_capabilities(scenario, criteria).items():
        if declared.get(cap) or observed.get(cap):
            continue
        state = "declares it false" if declared.get(cap) is False else "does not declare it"
        reasons.append(f"needs capability {cap!r} ({why}); the profile {state} and never showed it")
    return "; ".join(reasons) if reasons else None


async def evaluate_criterion(
    criterion: Criterion,
    ctype: CriterionType,
    scenario: Scenario,
    turns: list[TurnEvidence],
    collected: dict[str, Any] | None,
    record: dict[str, Any],
    judging: JudgingContext | None = None,
    owner: str = "?",
    third_party: bool = False,
) -> Verdict:
    """The criterion's verdict; ``owner`` is the plugin that registered its type
    (``NAME (DIST)``), named when it gives no verdict in its time. A
    ``third_party`` type's plain ``evaluate`` runs in a thread, bounded by its
    ``timeout_seconds`` as an awaitable one is (:func:`evaluation`)."""
    if not turns:
        return Verdict(UNVERIFIABLE, "no turn was recorded")
    scope = criterion.turn

    def view(picked: list[TurnEvidence], aggregate: bool) -> EvidenceView:
        return build_view(
            scenario,
            picked,
            collected if aggregate else None,
            record,
            aggregate,
            judging,
            "last" if scope is None else scope,
            [t for t in turns if t.turn < scope] if isinstance(scope, int) else None,
        )

    try:
        if isinstance(scope, int):
            picked = [t for t in turns if t.turn == scope]
            if not picked:
                ended = record.get("conversation_ended") or {}
                if scope in (ended.get("not_sent") or ()):
                    return Verdict(
                        UNVERIFIABLE,
                        f"turn {scope} was not sent: the conversation ended after turn "
                        f"{ended.get('after_turn')} ({ended.get('reason')})",
                    )
                return Verdict(UNVERIFIABLE, f"turn {scope} was not recorded")
            return await _call(ctype, criterion, owner, view(picked, False), third_party)
        if ctype.per_turn and scope == "all":
            verdicts = []
            for t in turns:
                v = await _call(ctype, criterion, owner, view([t], False), third_party)
                verdicts.append((t.turn, v))
            return every_turn_seen(combine_turn_verdicts(verdicts), record)
        if ctype.per_turn:
            return await _call(ctype, criterion, owner, view([turns[-1]], False), third_party)
        verdict = await _call(ctype, criterion, owner, view(turns, True), third_party)
        if scope == "all" and (getattr(ctype, "uses_judge_profile", False) or third_party):
            # a rubric, or a plugin's type, judging all turns together: the unsent unseen
            return every_turn_seen(verdict, record)
        return verdict
    except BaseException as exc:  # a criterion plugin's bug (sys.exit() too, and its own
        # BaseException) is that criterion's error, not Rook's; an interruption is the run's
        if not plugin_failure(exc):
            raise
        return Verdict(  # cut as a check's is: a service's whole error page may be in it
            ERROR,
            current().head(
                f"criterion {criterion.type} ({owner}) raised {exception_text(exc)}", 500, "..."
            ),
        )


WRITTEN_MARKER = later(r"\[redacted|redacted:")
"""A marker in a criterion's own text, whole or begun, as it is or escaped for a
regular expression (``\\[redacted:API_TOKEN\\]``; ``not_contains: "[redacted:"``,
no secret shown at all): such a criterion is about the record's markers."""


class Said:
    """A scenario run's answers and calls as the agent said them, for Rook's own
    text criteria (``contains``, ``matches``, ``equals``, ``json``, a call's
    arguments, ``claim``, the ``keywords`` judge): each marker of a secret put
    back to its value (:meth:`rook_core.redact.Redactor.put_back`), in memory
    only, made once for all of them. A judge profile and a plugin see the
    record alone: a secret sent to them would leave Rook."""

    def __init__(
        self, redactor: Any, turns: list[TurnEvidence], collected: dict[str, Any] | None
    ) -> None:
        self.redactor, self.recorded, self.collected = redactor, turns, collected
        self.turns: list[TurnEvidence] | None = None
        self.collected_said = collected
        self.left: dict[Any, tuple[list[str], list[str]]] = {}
        """Per turn (and ``"collect"``): the markers its answer, its calls still hold."""

    @classmethod
    def of(
        cls, redactor: Any, turns: list[TurnEvidence], collected: dict[str, Any] | None
    ) -> Said | None:
        """The answers and calls of a scenario run as the agent said them, or
        ``None`` when its record holds no marker in them (the usual run): then the
        record is what was said."""
        calls = collected.get("calls") if isinstance(collected, dict) else None
        if calls or any(t.calls or (t.output is not None and MARK in t.output) for t in turns):
            return cls(redactor, turns, collected)
        return None

    @staticmethod
    def written_with_marker(criterion: Criterion) -> bool:
        """Whether ``criterion``'s own text holds a marker (the documented idiom,
        ``not_contains: "[redacted:API_TOKEN]"``): it is judged as recorded."""
        raw = criterion.raw.get(criterion.type) if isinstance(criterion.raw, dict) else None
        return bool(WRITTEN_MARKER.search(json.dumps(raw, default=str)))

    def evidence(
        self, criterion: Criterion, ctype: CriterionType
    ) -> tuple[list[TurnEvidence], dict[str, Any] | None] | Verdict:
        """The turns and collect's reply ``criterion`` judges, or why it cannot:
        ``unverifiable`` when what it reads holds a marker whose value this
        process does not hold (a variable set when the run recorded it, unset
        now), which could decide its verdict."""
        if self.turns is None:
            self._put_back()
        assert self.turns is not None
        scope, calls = criterion.turn, "calls" in ctype.needs
        if isinstance(scope, int):
            looked: list[Any] = [t.turn for t in self.turns if t.turn == scope]
        elif ctype.per_turn and scope != "all":
            looked = [t.turn for t in self.turns[-1:]]
        else:
            looked = [t.turn for t in self.turns] + ["collect"]
        answers = not calls or ctype.name == "claim"  # claim reads both
        left: set[str] = set()
        for key in looked:
            in_output, in_calls = self.left.get(key, ([], []))
            left.update(in_output if answers else (), in_calls if calls else ())
        if left:
            names = sorted(left)
            return Verdict(
                UNVERIFIABLE,
                f"what it judges holds {', '.join(f'[redacted:{n}]' for n in names)}, and the "
                f"value Rook redacted there is unknown here ({listed('variable', names)}: not "
                "set), so what the agent said cannot be judged: set it when the run is judged",
            )
        return self.turns, self.collected_said

    def _put_back(self) -> None:
        put = self.redactor.put_back
        self.turns = []
        for t in self.recorded:
            if not t.calls and (
                t.output is None or isinstance(t.output, str) and MARK not in t.output
            ):
                self.turns.append(t)  # nothing redacted in what it said: the usual turn
                continue
            output, in_output = put(t.output)
            calls, in_calls = put(t.calls)
            self.turns.append(replace(t, output=output, calls=calls))
            self.left[t.turn] = (in_output, in_calls)
        if isinstance(self.collected, dict) and "calls" in self.collected:
            calls, in_calls = put(self.collected["calls"])
            self.collected_said = {**self.collected, "calls": calls}
            self.left["collect"] = ([], in_calls)


def every_turn_seen(verdict: Verdict, record: dict[str, Any]) -> Verdict:
    """A ``turn: all`` pass, unless the conversation ended before some turns were
    sent: then it could not see them, and the criterion is unverifiable."""
    ended = record.get("conversation_ended") or {}
    if verdict.status != PASSED or not ended.get("not_sent"):
        return verdict
    unsent = [str(n) for n in ended["not_sent"]]
    return Verdict(
        UNVERIFIABLE,
        f"{verdict.reason}; but {listed('turn', unsent)} {'was' if len(unsent) == 1 else 'were'} "
        "not sent: the conversation "
        f"ended after turn {ended.get('after_turn')} ({ended.get('reason')})",
    )


async def _call(
    ctype: CriterionType,
    criterion: Criterion,
    owner: str,
    view: EvidenceView,
    third_party: bool = False,
) -> Verdict:
    seconds = time_bound(ctype)
    result = await evaluation(ctype.evaluate, (criterion.config, view), seconds, third_party)
    if result is OVERDUE:
        return overdue(f"criterion {criterion.type} ({owner})", seconds)
    if not isinstance(result, Verdict):
        return Verdict(
            ERROR,
            f"criterion {criterion.type} ({owner}) returned "
            f"{current().head(repr(result), 200)}, not a Verdict",
        )
    verdict = checked_verdict(result, f"criterion {criterion.type} ({owner})")
    if third_party and verdict.status in (PASSED, FAILED):  # Rook's own judge the unseen
        unseen = _unseen_need(ctype, view)
        if unseen:  # SPEC 5: a capability this evidence does not show: unverifiable
            return Verdict(
                UNVERIFIABLE,
                f"criterion {criterion.type} ({owner}) {verdict.status} "
                f"({current().head(repr(verdict.reason), 200)}), but it needs {unseen}: a "
                "verdict on evidence never seen is unverifiable",
                verdict.evidence,
            )
    return verdict


def _unseen_need(ctype: CriterionType, view: EvidenceView) -> str | None:
    """What of the capabilities ``ctype`` needs the evidence in ``view`` shows
    nothing of (no turn in view, nor collect, reported it), or ``None``. What some
    turns showed may decide it, as for Rook's own call and usage criteria."""
    from .hookio import has_token_counts

    needs = getattr(ctype, "needs", ()) or ()
    collected = view.record.get("collected")
    collected = collected if isinstance(collected, dict) else {}

    def unseen(cap: str, log: str, what: str, by_collect: bool) -> str:
        if not by_collect:
            return (
                f"the {cap} capability, and the evidence in view shows no {log} ({what} "
                f"{'were' if cap == 'calls' else 'was'} not observed)"
            )
        # observed, but collect's are the whole scenario's: in no one turn's view
        turn = view.scope if isinstance(view.scope, int) else view.turns[-1].turn
        sees = (
            "no one turn's view holds (leave turn out to judge them)"
            if isinstance(view.scope, int)
            else "the view of a type judged on one turn (per_turn = True) never holds "
            "(per_turn = False does)"
        )
        return (
            f"the {cap} capability, and turn {turn} reported no {log}: only collect reported "
            f"{what}, for the whole scenario, which {sees}"
        )

    if "calls" in needs and view.calls is None and all(t.calls is None for t in view.turns):
        by_collect = isinstance(collected.get("calls"), list)
        return unseen("calls", "call log", "calls", by_collect)
    if (
        "usage" in needs
        and not has_token_counts(view.usage)
        and not any(has_token_counts(t.usage) for t in view.turns)
    ):
        by_collect = has_token_counts(collected.get("usage"))
        return unseen("usage", "token count", "usage", by_collect)
    if "multi_turn" in needs and not (view.record.get("observed") or {}).get("multi_turn"):
        return (
            "the multi_turn capability, and this scenario run returned no conversation handle "
            "(multi_turn was not observed)"
        )
    return None


REASON_MAX = 4000  # of a plugin's reason: the criterion's and scenario's, in every report


def checked_verdict(verdict: Verdict, who: str) -> Verdict:
    """``verdict`` when its status is one of the four, else that criterion's error:
    a misspelt status (``"pass"``) must never count as a pass. A reason longer
    than :data:`REASON_MAX` is cut, the whole one kept in its evidence; one that
    is not a text (a score, ``None``) is that criterion's error too, and so is
    evidence that is not a dict (a list: kept in the error's evidence); a blank
    one says the plugin gave none."""
    evidence = verdict.evidence  # most verdicts carry none: nothing to check
    unwritable, evidence = _as_json(evidence) if evidence else (None, evidence)
    if unwritable:
        return Verdict(
            ERROR,
            f"{who} returned a Verdict whose evidence cannot be written as JSON ({unwritable}); "
            "it is left out",
        )
    if isinstance(verdict.reason, str) and _SURROGATE.search(verdict.reason):
        verdict = Verdict(verdict.status, _SURROGATE.sub("\ufffd", verdict.reason), evidence)
    elif evidence is not verdict.evidence:
        verdict = Verdict(verdict.status, verdict.reason, evidence)
    if evidence is not None and not isinstance(evidence, dict):  # a list: kept, never dropped
        kept = {"evidence": evidence}
        return Verdict(
            ERROR,
            f"{who} returned a Verdict whose evidence is {current().head(repr(evidence), 60)}, "
            "not a dict",
            {**kept, "reason": verdict.reason} if isinstance(verdict.reason, str) else kept,
        )
    if not isinstance(verdict.reason, str):
        return Verdict(
            ERROR,
            f"{who} returned a Verdict whose reason is {current().head(repr(verdict.reason), 60)}, "
            "not a text",
            verdict.evidence if isinstance(verdict.evidence, dict) else {},
        )
    if verdict.status in CRITERION_STATUSES:
        if not verdict.reason or verdict.reason.isspace():  # a verdict has a reason (SPEC §6)
            return Verdict(verdict.status, f"{who} gave no reason", verdict.evidence)
        if len(verdict.reason) <= REASON_MAX:
            return verdict
        evidence = verdict.evidence if isinstance(verdict.evidence, dict) else {}
        return Verdict(
            verdict.status,
            current().head(  # well under the limit, so a verdict checked twice is cut once
                verdict.reason,
                REASON_MAX - 200,
                " ... {n} characters more (the whole reason: evidence)",
            ),
            {**evidence, "reason": verdict.reason},
        )
    return Verdict(
        ERROR,
        f"{who} returned a Verdict with status {quoted(verdict.status)}; a status is one of "
        f"{', '.join(CRITERION_STATUSES)} (the constants of rook_core.models)",
        verdict.evidence if isinstance(verdict.evidence, dict) else {},
    )


_SURROGATE = later("[\ud800-\udfff]")
"""A lone surrogate: text decoded with ``surrogateescape`` (``os.fsdecode``), no UTF-8."""


def _as_json(evidence: Any) -> tuple[str | None, Any]:
    """Why a verdict's evidence cannot be written into the run's records and JSON
    report (a circular reference, NaN or Infinity, a key that is no text), else
    ``None`` and the evidence: as it is, or, when a text holds what UTF-8 cannot
    (a lone surrogate), read back with U+FFFD in its place, as Rook reads a
    hook's undecodable bytes. Values JSON has no type for (a set, bytes) are
    written as text."""
    try:
        text = json.dumps(evidence, default=str, allow_nan=False, ensure_ascii=False)
    except RecursionError:
        return "it nests too deeply, or refers to itself", evidence
    except (ValueError, TypeError) as exc:
        return current().head(str(exc), 200), evidence
    if _SURROGATE.search(text):
        return None, json.loads(_SURROGATE.sub("\ufffd", text))
    return None, evidence


def combine_turn_verdicts(verdicts: list[tuple[int, Verdict]]) -> Verdict:
    for status in (FAILED, ERROR, UNVERIFIABLE):
        bad = [(n, v) for n, v in verdicts if v.status == status]
        if bad:
            n, v = bad[0]
            return Verdict(status, f"turn {n}: {v.reason}")
    if len(verdicts) == 1:  # "all 1 turns" would say one as many
        n, v = verdicts[0]
        return Verdict(PASSED, f"turn {n}: {v.reason}")
    return Verdict(
        PASSED, f"all {len(verdicts)} turns: " + (verdicts[-1][1].reason if verdicts else "")
    )


ALSO_MAX = 200
"""Of an errored criterion's reason named after a failure's in a failed scenario's reason."""


def scenario_status(criteria_verdicts: list[Verdict]) -> tuple[str, str]:
    """Fold criterion verdicts into the scenario's status and reason: the first
    verdict of the status that decided it, and, for a failed scenario, the first
    errored one too (a criterion that could not be judged at all)."""
    for status in (FAILED, ERROR, UNVERIFIABLE):
        hits = [v for v in criteria_verdicts if v.status == status]
        if hits:
            reason = f"{criteria(len(hits))} {status}: {hits[0].reason}"
            errored = [v for v in criteria_verdicts if v.status == ERROR]
            if status == FAILED and errored:  # fixing the failure alone would not cure it
                first = current().head(errored[0].reason, ALSO_MAX, " ...")
                reason += f"; {criteria(len(errored))} {ERROR}: {first}"
            return status, reason
    if not criteria_verdicts:
        return UNVERIFIABLE, "the scenario has no criteria: nothing was verified"
    if len(criteria_verdicts) == 1:
        return PASSED, "1 criterion passed"
    return PASSED, f"all {len(criteria_verdicts)} criteria passed"


def criteria(n: int) -> str:
    """``1 criterion``, ``2 criteria``: a count of criteria, for a reason."""
    return counted(n, "criterion", "criteria")


def judge_profile_users(scenarios: list[Scenario], criteria: Registry) -> list[str]:
    """Where the selected scenarios send evidence to the judge profile, for messages."""
    users = []
    for s in scenarios:
        for c in s.criteria:
            if getattr(criteria.get(c.type), "uses_judge_profile", False):
                where = f" ({s.path})" if s.path else ""
                users.append(f"scenario {s.id}{where} criterion {c.index + 1} ({_named(c)})")
    return users


def _named(c: Criterion) -> str:
    """A criterion as its file lets a reader find it: its type, with its id where it
    has one (``rubric ac-1``), else the start of its text (a public-CLI file's are
    made from its ``expectation``: their numbers are nowhere in it)."""
    label = c.raw.get("id") if isinstance(c.raw, dict) else None  # scenario.LABEL
    if label is not None:
        return f"{c.type} {label}"
    text = c.raw.get(c.type) if isinstance(c.raw, dict) else None
    if isinstance(text, dict):  # the mapping form: rubric: {text: ..., min_score: ...}
        text = text.get("text")
    if isinstance(text, str) and text.strip():
        first = " ".join(text.split())  # redacted, then cut: never a piece of a secret
        return f'{c.type}: "{current().head(first, 60, "...")}"'
    return c.type


def may_ask_judge_profile(scenarios: list[Scenario], criteria: Registry, judges: Any) -> bool:
    """Whether a selected scenario has a criterion that may ask the judge profile
    without needing one (a type's optional ``may_ask_judge_profile(config, judges)``
    says so: a ``judge:`` naming a plugin's judge, which reaches it through
    ``view.judging.client``), so that a configured judge profile is loaded."""
    for s in scenarios:
        for c in s.criteria:
            may_ask = getattr(criteria.get(c.type), "may_ask_judge_profile", None)
            if callable(may_ask) and may_ask(c.config, judges):
                return True
    return False


def check_message(message: Any, who: str, fine: str) -> str | None:
    """What a plugin's ``check`` returned as the message refusing the run, or
    ``None``; ``who`` names the plugin. A score, ``True`` or a coroutine (an
    ``async def check``) is no message a user can act on: it says what it was."""
    if not message or isinstance(message, str):
        return message or None
    if inspect.isawaitable(message):
        close = getattr(message, "close", None)
        if callable(close):
            close()  # never to be awaited: no 'never awaited' warning of Python's
        return (
            f"{who} returned a coroutine from check: check is called before anything runs "
            "and must be a plain function (def, not async def)"
        )
    return (
        f"{who} returned {current().head(repr(message), 200)} from check, not a message "
        f"(a text, or None when {fine})"
    )


def check_criteria(scenarios: list[Scenario], criteria: Registry, judging: JudgingContext) -> None:
    """Ask every criterion whether it can work; refuse the run (exit 2) when one cannot."""
    from .errors import ScenarioError

    problems = []
    for s in scenarios:
        for c in s.criteria:
            ctype = criteria.get(c.type)
            check = getattr(ctype, "check", None)
            try:
                message = check(c.config, judging) if check is not None else None
            except BaseException as exc:  # the plugin's check failed on the value
                if not plugin_failure(exc):
                    raise
                message = f"the criterion plugin {criteria.owner(c.type)} could not check it: "
                message += current().head(exception_text(exc), 400)
            message = check_message(
                message, f"the criterion plugin {criteria.owner(c.type)}", "the value is fine"
            )
            if message:
                where = f"{s.path}: " if s.path else ""
                problems.append(f"{where}scenario {s.id}: criteria.{c.index}.{c.type}: {message}")
    if problems:
        raise ScenarioError("\n".join(problems))
