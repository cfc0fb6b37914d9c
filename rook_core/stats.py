"""Statistics over repeats: per-scenario pass counts, pass^N, pass@N, Wilson intervals.

A scenario run with ``repeat: N`` (or ``--repeat N``) yields N records. This
module folds them into one aggregate per scenario:

* ``passed``/``decided``: passes among the runs that reached a verdict
  (passed, failed, error, stopped); ``unverifiable`` and ``not_runnable`` runs
  are never counted as passes, nor as decided;
* ``pass_all`` (pass^N): every one of the N planned runs passed;
* ``pass_any`` (pass@N): at least one run passed;
* ``wilson``: the 95 % Wilson score interval of the pass rate over decided runs;
* ``flaky``: the decided runs disagree (some passed, some did not).

Everything here is pure: it reads report entries (dicts) and returns dicts.
"""

from __future__ import annotations

import math
from typing import Any

from .models import ERROR, FAILED, NOT_RUNNABLE, PASSED, STOPPED, UNVERIFIABLE

DECIDED = (PASSED, FAILED, ERROR, STOPPED)
STATUSES = (PASSED, FAILED, UNVERIFIABLE, ERROR, STOPPED, NOT_RUNNABLE, "pending")
Z95 = 1.959963984540054


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for ``passes`` successes in ``n`` trials.

    Unlike the normal approximation it stays inside [0, 1] and is sensible for
    small ``n`` and for rates of 0 or 1. ``None`` when ``n`` is 0.
    """
    if n <= 0:
        return None
    if not 0 <= passes <= n:
        raise ValueError(f"passes must be between 0 and n ({passes} of {n})")
    p = passes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, round(centre - half, 4)), min(1.0, round(centre + half, 4)))


def aggregate(scenario_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold the report entries of one scenario (its repeats) into one aggregate."""
    counts = {s: 0 for s in STATUSES}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    decided = sum(counts[s] for s in DECIDED)
    passed = counts[PASSED]
    runs = len(entries)
    interval = wilson(passed, decided)
    first = entries[0] if entries else {}
    extra = first.get("extra") or {}
    return {
        "id": scenario_id,
        "name": first.get("name"),
        "content_hash": first.get("content_hash"),
        **{k: extra[k] for k in ("class", "category", "feature_id") if k in extra},
        "runs": runs,
        "decided": decided,
        **{s: counts[s] for s in STATUSES if s != "pending"},
        "pending": counts["pending"],
        "pass_rate": round(passed / decided, 4) if decided else None,
        "pass_all": runs > 0 and passed == runs,
        "pass_any": passed > 0,
        "wilson": list(interval) if interval else None,
        "flaky": 0 < passed < decided,
        "statuses": [e["status"] for e in entries],
    }


def by_scenario(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One aggregate per scenario id, in the order scenarios first appear."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        groups.setdefault(e["id"], []).append(e)
    for group in groups.values():
        group.sort(key=lambda e: e.get("repeat_index") or 0)
    return [aggregate(sid, group) for sid, group in groups.items()]


def totals(per_scenario: list[dict[str, Any]]) -> dict[str, Any]:
    """Scenario-level counts: how many scenarios passed every run, any run, were flaky."""
    n = len(per_scenario)
    return {
        "scenarios": n,
        "pass_all": sum(1 for s in per_scenario if s["pass_all"]),
        "pass_any": sum(1 for s in per_scenario if s["pass_any"]),
        "flaky": sum(1 for s in per_scenario if s["flaky"]),
        "max_runs": max((s["runs"] for s in per_scenario), default=0),
    }


def gate(per_scenario: list[dict[str, Any]], min_pass_rate: float) -> dict[str, Any]:
    """Apply ``--min-pass-rate``: every scenario with a decided run must reach the rate.

    A scenario with no decided run has no rate; it is listed as ``ungated``
    (verification coverage shows it), never as a pass.
    """
    missed = [
        {"id": s["id"], "pass_rate": s["pass_rate"], "passed": s[PASSED], "decided": s["decided"]}
        for s in per_scenario
        if s["decided"] and s["pass_rate"] is not None and s["pass_rate"] < min_pass_rate
    ]
    ungated = [s["id"] for s in per_scenario if not s["decided"]]
    return {"min_pass_rate": min_pass_rate, "missed": missed, "ungated": ungated}


def outcome(statuses: list[str]) -> str:
    """One word for a scenario's runs: passed, failed, flaky or unverified."""
    decided = [s for s in statuses if s in DECIDED]
    if not decided:
        return "unverified"
    passes = sum(1 for s in decided if s == PASSED)
    if passes == len(decided):
        return "passed"
    if passes == 0:
        return "failed"
    return "flaky"
