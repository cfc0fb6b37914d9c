"""Judged criteria: ``rubric`` (the judge profile) and ``judge`` (a plugin's whole judge).

* ``rubric: "Apologises and gives a concrete date"`` (or ``{text, min_score}``)
  sends the rubric and the evidence (goal, the judged turn's input and output
  (default: the last turn), the earlier turns labelled as context only, calls,
  usage, other evidence) to the judge profile, which answers
  ``{"pass": bool, "reason": str}`` (``score`` optional). Anything else, or a
  failed judge hook, is the criterion's ``error``, never a pass. The judge's
  call and answer are recorded with the verdict.
* ``judge: {name: acme-tone, ...}`` calls a judge registered through
  ``rook_register_judges`` as ``judge(config, view)`` (``config`` is the
  mapping without ``name``; ``view`` the :class:`EvidenceView`), which returns
  a :class:`Verdict` (or an awaitable of one). An unknown name refuses the run
  before anything runs, naming the installed judges. A judge object may offer
  ``check(config) -> str | None`` to refuse a wrong configuration early
  (``check(config, judging)`` also gets the :class:`JudgingContext`: its
  ``workspace``, as a criterion type's ``check`` does).

This plugin also registers one whole judge, ``keywords``: the share of the
listed words found in the answer is its score, and it passes at ``min_score``
(default 1: every word).

Every run registers these, and only validating a scenario needs marshmallow, so
its ``ValidationError`` is imported by the functions that raise it.
"""

from __future__ import annotations

import json
from typing import Any

from rook_core.errors import did_you_mean, exception_text, listed
from rook_core.evaluating import OVERDUE, evaluation
from rook_core.hookspecs import hookimpl
from rook_core.judging import (
    CriterionType,
    EvidenceView,
    JudgingContext,
    check_message,
    checked_verdict,
    combine_turn_verdicts,
    every_turn_seen,
    overdue,
    time_bound,
)
from rook_core.models import ERROR, FAILED, PASSED, UNVERIFIABLE, Verdict
from rook_core.plugins import plugin_failure
from rook_core.redact import current
from rook_core.registry import OWN, opted_in

from .criteria import folded, unknown_keys, with_yaml_hint

NO_JUDGE = (
    "no judge profile is configured (pass --judge-profile NAME or set judge_profile: in "
    "config.yaml)"
)
PROMPT = """You are a strict, impartial judge of an AI agent's behaviour. Decide whether the \
evidence below satisfies the rubric. Judge only from the evidence.

RUBRIC:
{rubric}

EVIDENCE (JSON; "turns" holds the answer to judge; "earlier_turns", when present, is the \
conversation before it, given only as context: do not judge it; "calls": null means tool calls \
were not observed, [] means none were made ("calls_by_turn", when present, gives the calls of the \
turns where they were observed, null for the others); "usage": null means token usage was not \
observed, and a count only some turns reported is left out of it ("usage_by_turn", when present, \
gives each turn's usage as the turn reported it, null for a turn whose usage was not observed):
{evidence}

Answer with exactly one JSON object and nothing else:
{{"pass": true or false, "reason": "<one or two sentences citing the evidence>", \
"score": <optional number from 0 to 1>}}
"""


def _min_score(value: Any) -> float:
    from marshmallow import ValidationError

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        # the judge is asked for a score from 0 to 1: a min_score above 1 could never pass
        raise ValidationError(
            {"min_score": [with_yaml_hint("must be a number from 0 to 1", value)]}
        )
    return float(value) or 0.0  # -0.0 is 0: never shown as "min_score -0"


def evidence_document(view: EvidenceView) -> dict[str, Any]:
    """What the judge sees: the goal, the turns it judges (``turns``: the last
    by default, every turn with ``turn: all``, turn N with ``turn: N``), the
    turns before the judged one as context only (``earlier_turns``, by
    default and with ``turn: N``), calls, usage and other evidence of the
    turns in view."""
    judged, earlier = view.turns, list(view.earlier)
    if view.scope == "last" and len(view.turns) > 1:
        judged, earlier = view.turns[-1:], view.turns[:-1]
    doc: dict[str, Any] = {
        "scenario": {"id": view.scenario.id, "name": view.scenario.name},
        "goal": view.scenario.goal,
        "turns": [{"turn": t.turn, "input": t.input, "output": t.output} for t in judged],
    }
    if earlier:
        doc["earlier_turns"] = [
            {"turn": t.turn, "input": t.input, "output": t.output} for t in earlier
        ]
    doc.update(calls=view.calls, usage=view.usage, evidence=view.evidence)
    if view.calls is None and any(t.calls is not None for t in view.turns):
        # some turns' calls were seen: what they showed is evidence too
        doc["calls_by_turn"] = {str(t.turn): t.calls for t in view.turns}
    if any(t.usage is not None for t in view.turns) and (
        view.usage is None or _counts_left_out(view.usage, view.turns)
    ):
        # some turns' token counts were seen: never told that none were, nor that a
        # count one turn left out (so not summed) was reported by none
        doc["usage_by_turn"] = {str(t.turn): t.usage for t in view.turns}
    return doc


def _counts_left_out(usage: dict[str, Any], turns: list[Any]) -> bool:
    """Whether a count some of ``turns`` reported is not in ``usage``, their sum
    (a count is summed only when every turn reports it)."""
    reported = {
        k
        for t in turns
        for k, v in (t.usage or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    return bool(reported - usage.keys())


def rubric_prompt(rubric: str, view: EvidenceView) -> str:
    doc = json.dumps(evidence_document(view), indent=2, ensure_ascii=False, default=str)
    return PROMPT.format(rubric=rubric.strip(), evidence=doc)


REASON_SHOWN = 400  # of a judge's reason, in the criterion's (a judge may write 120 KB)


def judge_reason(reason: str) -> str:
    """A judge's ``reason`` as the criterion's reason shows it: redacted, then cut
    to :data:`REASON_SHOWN` characters; the whole answer is the criterion's
    evidence (``judge.answer``)."""
    return current().head(
        reason, REASON_SHOWN, " ... {n} characters more (the whole reason: evidence judge.answer)"
    )


class Rubric(CriterionType):
    name = "rubric"
    per_turn = False
    uses_judge_profile = True
    timeout_seconds = None  # the judge profile's hooks have their timeouts
    description = "the judge profile decides whether the evidence satisfies the rubric"

    def parse(self, value: Any) -> dict[str, Any]:
        from marshmallow import ValidationError

        if isinstance(value, str) and value.strip():
            return {"text": value, "min_score": None}
        unknown_keys(value, ("text", "min_score"))
        if isinstance(value, dict) and isinstance(value.get("text"), str) and value["text"].strip():
            ms = value.get("min_score")
            return {"text": value["text"], "min_score": None if ms is None else _min_score(ms)}
        from rook_core.schemafields import yaml_typed

        typed = yaml_typed(value)  # `rubric: yes`: text to its writer
        if typed:
            raise ValidationError(typed)
        typed = yaml_typed(value.get("text")) if isinstance(value, dict) else None
        if typed:
            raise ValidationError({"text": [typed]})
        raise ValidationError("must be the rubric text, or a mapping with text and min_score")

    async def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        client = view.judging.client
        if client is None:
            return Verdict(ERROR, NO_JUDGE)
        if not view.turns or view.output is None:
            return Verdict(UNVERIFIABLE, "no output was recorded to judge")
        record = view.record or {}
        answer = await client.ask(
            rubric_prompt(config["text"], view),
            view.scenario,
            record.get("repeat_index", 1),
            record.get("repeat_count", 1),
        )
        evidence: dict[str, Any] = {"judge": answer.record}
        if not answer.ok:
            return Verdict(ERROR, answer.diagnosis, evidence)
        score = answer.score
        if score is not None:
            evidence["score"] = score
        scored = "" if score is None else f" (score {score:g})"
        status = PASSED if answer.passed else FAILED
        blank = not answer.reason.strip()  # never "judge: " followed by nothing
        if config["min_score"] is not None and answer.passed:  # a fail needs no score
            if score is None:
                return Verdict(
                    ERROR,
                    f"the rubric sets min_score {config['min_score']:g} but the judge gave "
                    + ("no score, nor any reason" if blank else "no score; its reason: ")
                    + ("" if blank else judge_reason(answer.reason)),
                    evidence,
                )
            if score < config["min_score"]:
                status = FAILED
                scored += f" below min_score {config['min_score']:g}"
        said = "the judge gave no reason" if blank else f"judge: {judge_reason(answer.reason)}"
        return Verdict(status, f"{said}{scored}", evidence)


class PluginJudge(CriterionType):
    name = "judge"
    per_turn = False
    timeout_seconds = None  # each judge has its own: see evaluate
    description = "a whole judge a plugin registered (rook_register_judges)"

    def parse(self, value: Any) -> dict[str, Any]:
        from marshmallow import ValidationError

        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise ValidationError("must be a mapping with the judge's name and its options")
        return {"name": value["name"], "config": {k: v for k, v in value.items() if k != "name"}}

    def may_ask_judge_profile(self, config: dict[str, Any], judges: Any) -> bool:
        """A plugin's judge may ask the judge profile (``view.judging.client``):
        a configured one is loaded for it. Rook's own (``keywords``) never does."""
        name = config["name"]
        return judges is not None and name in judges and judges.distribution(name) != OWN

    def check(self, config: dict[str, Any], judging: JudgingContext) -> str | None:
        judges = judging.judges
        if judges is None or config["name"] not in judges:
            names = ", ".join(judges.names()) if judges is not None else ""
            close = did_you_mean(config["name"], judges.names()) if judges is not None else None
            hint = f"; did you mean {close}?" if close else ""
            return f"unknown judge {config['name']!r}; installed judges: {names or 'none'}{hint}"
        judge = judges.get(config["name"])
        check = getattr(judge, "check", None)
        who = f"the judge {config['name']!r} ({judges.owner(config['name'])})"
        try:
            # check(config), or check(config, judging) for a judge that reads the
            # workspace (a list of known ids): an opt-in argument, as pluggy's are
            extra = opted_in(check, {"judging": judging}) if callable(check) else {}
            message = check(config["config"], **extra) if callable(check) else None
        except BaseException as exc:  # the judge plugin's bug (sys.exit() too)
            if not plugin_failure(exc):
                raise
            return f"{who} could not check it: {exception_text(exc)}"[:500]
        return check_message(message, who, "the configuration is fine")

    async def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        judges = view.judging.judges
        judge = judges.get(config["name"]) if judges is not None else None
        if judge is None:
            return Verdict(ERROR, f"judge {config['name']!r} is not installed")
        who = f"judge {config['name']!r} ({judges.owner(config['name'])})"
        try:
            seconds = time_bound(judge)
            own = judges.distribution(config["name"]) == OWN  # Rook's own: no thread hop
            result = await evaluation(judge, (config["config"], view), seconds, not own)
            if result is OVERDUE:
                return overdue(who, seconds)
        except BaseException as exc:  # the judge plugin's bug (sys.exit() too, its own
            if not plugin_failure(exc):  # BaseException): an interruption is the run's
                raise
            return Verdict(  # cut as a check's is: a service's whole error page may be in it
                ERROR,
                current().head(
                    f"judge {config['name']!r} ({judges.owner(config['name'])}) raised "
                    f"{exception_text(exc)}",
                    500,
                    "...",
                ),
            )
        if not isinstance(result, Verdict):
            return Verdict(
                ERROR,
                f"{who} returned {current().head(repr(result), 200)}, not a Verdict",
            )
        verdict = checked_verdict(result, who)
        if view.scope == "all":  # it could not see turns never sent
            return every_turn_seen(verdict, view.record)
        return verdict


class Keywords:
    """The built-in ``keywords`` judge: the share of listed words the answer contains."""

    def check(self, config: dict[str, Any]) -> str | None:
        from rook_core.schemafields import did_you_mean, yaml_typed
        from rook_core.yamlio import written

        unknown = sorted(map(str, set(config) - {"words", "min_score"}))  # 1: x is a number
        if unknown:  # first: a misspelt words: is named as a typo, not as words missing
            close = did_you_mean(unknown[0], ("words", "min_score")) if len(unknown) == 1 else None
            hint = f"; did you mean {close}?" if close else ""
            return f"keywords: unknown {listed('option', unknown)}{hint}"
        words = config.get("words")
        listed_words = words if isinstance(words, list) else []
        typed = [(i, yaml_typed(w)) for i, w in enumerate(listed_words) if isinstance(w, bool)]
        if typed:  # `words: [refund, yes]`: text to its writer (19.90 is taken as written)
            return f"keywords: words.{typed[0][0]}: {typed[0][1]}"
        if (
            not isinstance(words, list)
            or not words
            or not all(isinstance(w, (str, int, float)) and written(w).strip() for w in words)
        ):  # an empty word is in every answer: it would be found verifying nothing
            return "keywords needs words: a non-empty list of texts, none of them empty"
        ms = config.get("min_score", 1.0)
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= 1:
            return with_yaml_hint("keywords: min_score must be a number from 0 to 1", ms)
        return None

    def __call__(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        if view.scope == "all":  # as contains: every turn's answer must hold the words
            verdicts = [(t.turn, self.judge(config, t.output)) for t in view.turns]
            verdict = combine_turn_verdicts(verdicts)
            scores = [v.evidence["score"] for _, v in verdicts if "score" in v.evidence]
            return Verdict(verdict.status, verdict.reason, {"score": min(scores)} if scores else {})
        return self.judge(config, view.output)

    def judge(self, config: dict[str, Any], output: str | None) -> Verdict:
        """The verdict on one answer."""
        if output is None:
            return Verdict(UNVERIFIABLE, "no output was recorded")
        from rook_core.yamlio import written

        text = folded(output)  # ignoring case as contains does: one Unicode form
        words = [written(w) for w in config["words"]]  # a number as written, as contains
        missing = [w for w in words if folded(w) not in text]
        found = len(words) - len(missing)
        wanted = float(config.get("min_score", 1.0)) or 0.0  # -0.0 is 0: never "min_score -0"
        ok = found / len(words) >= wanted  # exact, not rounded
        score = round(found / len(words), 4)
        reason = f"{found}/{len(words)} keywords found (score {score:g}, min_score {wanted:g})"
        if missing:
            reason += f"; missing: {', '.join(repr(m) for m in missing)}"
        return Verdict(PASSED if ok else FAILED, reason, {"score": score})


@hookimpl
def rook_register_criteria(register: Any) -> None:
    register(Rubric())
    register(PluginJudge())


@hookimpl
def rook_register_judges(register: Any) -> None:
    register("keywords", Keywords())
