"""Criteria on Ruhroh evidence: the completion ``status`` and a ``max_cost`` in USD.

Registered by every run, so what only ``parse`` needs (marshmallow's
``ValidationError``, the protocol's statuses) is imported there.
"""

from __future__ import annotations

import json
from typing import Any

from rook_core.errors import listed
from rook_core.judging import CriterionType, EvidenceView
from rook_core.models import FAILED, PASSED, UNVERIFIABLE, Verdict
from rook_core.redact import current

from .criteria import finite_number, with_yaml_hint

NEVER_JUDGED = {
    "runtime_failure": "a wrapper answering it fails its hook (the scenario is error)",
    "infra_failure": "it is an infrastructure error (retried once, not counted against the agent)",
}
"""Statuses no turn is ever judged with: the call they end is not a completed turn."""


class Status(CriterionType):
    """``status: goal_satisfied`` or ``status: [cannot_satisfy, policy_blocked]``:
    the turn's completion status (default: the last turn) is one of these."""

    name = "status"
    description = "the Ruhroh completion status is one of these (default turn: the last)"

    def parse(self, value: Any) -> list[str]:
        from marshmallow import ValidationError

        from .ruhroh_protocol import STATUSES

        wanted = [value] if isinstance(value, str) else value
        if (
            not isinstance(wanted, list)
            or not wanted
            or not all(isinstance(v, str) for v in wanted)
        ):
            raise ValidationError("must be a completion status or a list of them")
        unknown = [v for v in wanted if v not in STATUSES]
        if unknown:
            raise ValidationError(
                f"unknown status {', '.join(map(repr, unknown))}; one of: {', '.join(STATUSES)}"
            )
        never = [v for v in wanted if v in NEVER_JUDGED]
        if never:
            raise ValidationError(
                "; ".join(f"{v} is never judged: {NEVER_JUDGED[v]}" for v in never)
                + "; a status criterion expects one of: "
                + ", ".join(v for v in STATUSES if v not in NEVER_JUDGED)
            )
        return wanted

    def evaluate(self, config: list[str], view: EvidenceView) -> Verdict:
        status = view.turns[-1].evidence.get("status") if view.turns else None
        if status is None:
            return Verdict(
                UNVERIFIABLE,
                "no completion status was recorded: the last turn's answer has no status "
                "field (a Ruhroh wrapper or connector reports one; a hook may print one, "
                '"status": "goal_satisfied")',
            )
        from .ruhroh_protocol import STATUSES

        if not isinstance(status, str) or status not in STATUSES:
            # an API's own status field ("ok", 200): no completion status was observed
            if isinstance(status, str):
                shown = repr(current().head(status, 40, "..."))  # a marker at the cut kept whole
            else:
                shown = current().head(json.dumps(status, ensure_ascii=False, default=str), 40)
            return Verdict(
                UNVERIFIABLE,
                f"the answer's status field holds {shown}, which is no completion status "
                f"(one of: {', '.join(STATUSES)}): no completion status was recorded",
            )
        last = view.turns[-1].evidence
        limit = last.get("iteration_limit")
        extra = (
            f" ({limit if isinstance(limit, str) else 'max_iterations'} reached)"
            if last.get("max_iterations_reached")
            else ""
        )
        ok = status in config
        expected = config[0] if len(config) == 1 else f"one of {', '.join(config)}"
        return Verdict(
            PASSED if ok else FAILED, f"status is {status!r}{extra}; expected {expected}"
        )


COST_FIELD = "usage.cost_usd, or a Ruhroh wrapper's costUsd"
REDACTED_COST = "; usage.cost_usd redacted: it holds the value of a profile env variable"


def _cost_named_otherwise(view: EvidenceView) -> str:
    """What a hook gave under another name than the cost Rook reads (a script's
    ``usage.costUsd``): said, since it is not read as the cost."""
    usages = [t.usage or {} for t in view.turns] + [view.usage or {}]
    names = sorted({k for u in usages for k in u if "cost" in k.lower() and k != "cost_usd"})
    if not names:
        return ""
    return f"; it gave {', '.join(f'usage.{n}' for n in names)}, which is not read as the cost"


class MaxCost(CriterionType):
    """``max_cost: 0.50``: the reported cost (``usage.cost_usd``), summed over the turns,
    is at most this many US dollars."""

    name = "max_cost"
    # the usage capability is token counts: a cost is judged wherever it is reported
    # (a wrapper reporting only costUsd), and is unverifiable where it is not
    needs: frozenset[str] = frozenset()
    per_turn = False
    description = (
        "the reported cost in USD (usage.cost_usd, or a Ruhroh wrapper's costUsd) stays within"
        " the limit"
    )

    def parse(self, value: Any) -> float:
        from marshmallow import ValidationError

        if not finite_number(value) or value < 0:
            raise ValidationError(with_yaml_hint("must be a number of US dollars >= 0", value))
        return float(value)

    def evaluate(self, config: float, view: EvidenceView) -> Verdict:
        cost = (view.usage or {}).get("cost_usd")
        # a cost holding the value of an env variable among its digits is recorded
        # as "1.[redacted:PIN]": a cost that cannot be read, never one to compare
        hidden = any(
            isinstance(u.get("cost_usd"), str)
            for u in (view.usage or {}, *(t.usage or {} for t in view.turns))
        )
        why = REDACTED_COST if hidden else ""
        if isinstance(cost, str):
            return Verdict(UNVERIFIABLE, f"{REDACTED_COST[2:]}, so this cannot be verified")
        if cost is None:
            # Not reported by every turn in view: what the turns that did report
            # add up to is a lower bound (a cost is never negative), as for max_tokens.
            costs = {t.turn: (t.usage or {}).get("cost_usd") for t in view.turns}
            seen = {n: c for n, c in costs.items() if isinstance(c, (int, float))}
            # a turn some iteration of which reported no cost: what the others did
            partial: dict[int, float] = {}
            for t in view.turns:
                part = (t.evidence.get("usage_at_least") or {}).get("cost_usd")
                if t.turn not in seen and isinstance(part, (int, float)):
                    partial[t.turn] = part
            if not seen and not partial:
                return Verdict(
                    UNVERIFIABLE,
                    f"the agent's usage has no cost ({COST_FIELD}){_cost_named_otherwise(view)}"
                    f"{why}, so this cannot be verified",
                )
            least = sum(seen.values()) + sum(partial.values())
            blind = listed(
                "turn",
                [
                    f"{n} (some iterations)" if n in partial else str(n)
                    for n in costs
                    if n not in seen
                ],
            )
            if least > config:
                return Verdict(
                    FAILED,
                    f"cost at least ${least:.4f} (max ${config:.4f}; in the turns that "
                    f"reported it, not {blind})",
                )
            return Verdict(
                UNVERIFIABLE,
                f"{blind} reported no cost ({COST_FIELD}){_cost_named_otherwise(view)}{why}, "
                "so this cannot be verified "
                f"(the others: ${least:.4f})",
            )
        ok = cost <= config
        return Verdict(PASSED if ok else FAILED, f"cost ${cost:.4f} (max ${config:.4f})")


CRITERIA = [Status, MaxCost]
