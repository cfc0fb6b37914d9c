"""The JSON report (a stable interface), the summary, the table and the exit code."""

from __future__ import annotations

from typing import Any

from .models import ERROR, FAILED, NOT_RUNNABLE, PASSED, STOPPED, UNVERIFIABLE

PENDING = "pending"
COUNTED = (PASSED, FAILED, UNVERIFIABLE, ERROR, STOPPED, NOT_RUNNABLE)
DECIDED = (PASSED, FAILED, ERROR, STOPPED)


def scenario_entry(record: dict[str, Any]) -> dict[str, Any]:
    hooks = [
        {
            "phase": h.get("phase"),
            "turn": h.get("turn"),
            "status": h.get("status"),
            "exit_code": h.get("exit_code"),
            "seconds": h.get("seconds"),
            "diagnosis": h.get("diagnosis"),
        }
        for h in record.get("hooks", [])
    ]
    turns = [
        {
            "turn": t.get("turn"),
            "input": t.get("input"),
            "output": t.get("output"),
            "conversation": t.get("conversation"),
            "usage": t.get("usage"),
            "calls": t.get("calls"),
            "evidence": t.get("evidence", {}),
            "seconds": t.get("seconds"),
        }
        for t in record.get("turns", [])
    ]
    scenario = record.get("scenario", {})
    return {
        "id": scenario.get("id"),
        "name": scenario.get("name"),
        "tags": scenario.get("tags", []),
        "repeat_index": record.get("repeat_index", 1),
        "repeat_count": record.get("repeat_count", 1),
        "content_hash": scenario.get("content_hash"),
        "status": record.get("status") or PENDING,
        "reason": record.get("reason", ""),
        "phases_done": record.get("phases_done", []),
        "turns": turns,
        "collected": record.get("collected"),
        "criteria": [
            {"type": c["type"], "turn": c.get("turn"), "status": c["status"], "reason": c["reason"]}
            for c in record.get("criteria", [])
        ],
        "hooks": hooks,
        "warnings": record.get("warnings", []),
        "seconds": round((record.get("ended") or 0) - (record.get("started") or 0), 6)
        if record.get("started")
        else 0.0,
    }


def summarize(entries: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {s: 0 for s in (*COUNTED, PENDING)}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    decided = sum(counts[s] for s in DECIDED)
    planned = len(entries)
    return {
        **counts,
        "total": planned,
        "decided": decided,
        "pass_rate": round(counts[PASSED] / decided, 4) if decided else None,
        "coverage": round(decided / planned, 4) if planned else None,
    }


def build_report(manifest: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    entries = [scenario_entry(r) for r in records]
    return {
        "version": 1,
        "run": {
            "id": manifest["id"],
            "dir": manifest["dir"],
            "project": manifest["project"],
            "agent": manifest["agent"],
            "profile": manifest["profile"],
            "phases": manifest["phases"],
            "started": manifest.get("created"),
            "capabilities": manifest["capabilities"],
            "prepare": manifest.get("prepare"),
        },
        "scenarios": entries,
        "summary": summarize(entries),
    }


def exit_code(report: dict[str, Any]) -> int:
    """0: every decided scenario passed; 1: a scenario failed, errored or stopped."""
    s = report["summary"]
    return 1 if (s[FAILED] or s[ERROR] or s[STOPPED]) else 0


SYMBOL = {
    PASSED: "PASS",
    FAILED: "FAIL",
    UNVERIFIABLE: "UNVERIFIED",
    ERROR: "ERROR",
    STOPPED: "STOPPED",
    NOT_RUNNABLE: "NOT RUNNABLE",
    PENDING: "PENDING",
}


def _cut(text: str, n: int = 90) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def table(report: dict[str, Any]) -> str:
    from tabulate import tabulate

    rows = []
    for e in report["scenarios"]:
        crit = e["criteria"]
        ok = sum(1 for c in crit if c["status"] == PASSED)
        name = e["id"] if e["repeat_count"] == 1 else f"{e['id']} #{e['repeat_index']}"
        rows.append(
            [name, SYMBOL.get(e["status"], e["status"]), f"{ok}/{len(crit)}", f"{e['seconds']:.2f}", _cut(e["reason"])]
        )
    body = tabulate(rows, headers=["scenario", "status", "criteria", "seconds", "reason"], tablefmt="simple")
    s = report["summary"]
    rate = "n/a" if s["pass_rate"] is None else f"{s['pass_rate'] * 100:.1f}%"
    cov = "n/a" if s["coverage"] is None else f"{s['coverage'] * 100:.1f}%"
    parts = [f"{s[k]} {k}" for k in (*COUNTED, PENDING) if s.get(k)]
    return (
        f"{body}\n\n{', '.join(parts) or 'no scenarios'} — pass rate {rate} of decided, "
        f"coverage {cov} (decided/planned)\nrun {report['run']['id']}: {report['run']['dir']}"
    )
