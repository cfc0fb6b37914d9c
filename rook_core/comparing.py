"""``rook diff``: two runs compared scenario by scenario (each scenario's
outcome over its repeats, and what changed between the runs); ``regressed``
is what a CI gate reads."""

from __future__ import annotations

from typing import Any

from . import stats
from .models import PASSED

REGRESSIONS = ("newly failing", "newly flaky", "no longer verified", "not finished")
"""The changes that make ``rook diff`` exit 1."""


def outcomes(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per scenario id: its aggregate over repeats plus a one-word ``outcome``."""
    per = report["summary"].get("by_scenario") or stats.by_scenario(report["scenarios"])
    return {p["id"]: {**p, "outcome": stats.outcome(p["statuses"])} for p in per}


def changes(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """What happened to one scenario between run A and run B.

    A scenario ``pending`` in a run has no result there (the run was cut off,
    or split before judging): pending in A is compared as unverified (so
    pending -> failed is "newly failing", pending -> passed "now verified");
    pending in B, whatever A had, is ``not finished`` (a regression: B has no
    result for it).
    """
    if a is None:
        return ["added"]
    if b is None:
        return ["removed"]
    out = []
    was_defined, now_defined = _definitions(a), _definitions(b)
    if was_defined and now_defined and was_defined != now_defined:
        out.append("changed definition")
    was, now = a["outcome"], b["outcome"]
    if was == "pending":
        was = "unverified"  # no result in A: nothing B's result could be unchanged from
    if now == "pending":
        out.append("not finished")
    elif now == "failed" and was != "failed":
        out.append("newly failing")
    elif now == "flaky" and was in ("passed", "unverified"):
        out.append("newly flaky")
    elif now == "unverified" and was in ("passed", "failed", "flaky"):
        out.append("no longer verified")  # a failure that can no longer be shown is no fix
    elif now == "passed" and was in ("failed", "flaky"):
        out.append("fixed")
    elif now == "passed" and was == "unverified":
        out.append("now verified")
    elif now == "flaky" and was == "failed":
        out.append("improved")
    elif now == "flaky":
        out.append("flaky")
    elif now == "failed":
        out.append("still failing")
    return out


def _definitions(o: dict[str, Any]) -> set[str]:
    """The content hashes a scenario's runs had: every repeat's (``content_hashes``,
    when they differ), not the first one's alone."""
    every = o.get("content_hashes")
    if isinstance(every, list) and every:
        return {h for h in every if isinstance(h, str)}
    return {o["content_hash"]} if o.get("content_hash") else set()


def diff(report_a: dict[str, Any], report_b: dict[str, Any]) -> dict[str, Any]:
    """Compare two runs scenario by scenario; ``regressed`` is what a CI gate reads."""
    oa, ob = outcomes(report_a), outcomes(report_b)
    order = list(ob) + [sid for sid in oa if sid not in ob]
    rows: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for sid in order:
        found = changes(oa.get(sid), ob.get(sid))
        for c in found:
            counts[c] = counts.get(c, 0) + 1
        if found:
            rows.append(
                {"id": sid, "a": _brief(oa.get(sid)), "b": _brief(ob.get(sid)), "changes": found}
            )
    regressed = [r["id"] for r in rows if any(c in REGRESSIONS for c in r["changes"])]
    return {
        "a": _run_brief(report_a),
        "b": _run_brief(report_b),
        "scenarios": rows,
        "counts": counts,
        "unchanged": len(order) - len(rows),
        "regressed": regressed,
    }


def _brief(o: dict[str, Any] | None) -> dict[str, Any] | None:
    if o is None:
        return None
    return {
        "outcome": o["outcome"],
        "passed": o[PASSED],
        "decided": o["decided"],
        "runs": o["runs"],
        "pass_rate": o["pass_rate"],
        "content_hash": o.get("content_hash"),
        **({"content_hashes": o["content_hashes"]} if o.get("content_hashes") else {}),
    }


def _run_brief(report: dict[str, Any]) -> dict[str, Any]:
    run, s = report["run"], report["summary"]
    return {
        "id": run["id"],
        "started": run.get("started"),
        "profile": (run.get("profile") or {}).get("id"),
        "pass_rate": s.get("pass_rate"),
        "coverage": s.get("coverage"),
    }


__all__ = ["REGRESSIONS", "changes", "diff", "outcomes"]
