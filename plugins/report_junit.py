"""``--report junit:PATH``: JUnit XML that GitHub Actions, GitLab and Jenkins read.

One ``<testcase>`` per scenario run (``name`` is the scenario id, with the
repeat when there are several). A failed scenario carries ``<failure>``, an
errored or stopped one ``<error>``, each with the reason as ``message`` and
the criteria verdicts and hook diagnoses as text. ``unverifiable``,
``not_runnable`` and pending runs are ``<skipped>``: never counted as passes.
Turn outputs and calls go to ``<system-out>``.

Characters XML 1.0 cannot hold (most control characters) are replaced, so
the file always parses.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rook_core.hookspecs import hookimpl
from rook_core.store import atomic_write

# Everything outside XML 1.0's Char production.
_INVALID = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
TEXT_LIMIT = 20_000


def clean(text: Any, limit: int = TEXT_LIMIT) -> str:
    """Text safe for an XML 1.0 document, cut at ``limit`` characters."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    s = _INVALID.sub("\ufffd", s)
    return s if len(s) <= limit else s[:limit] + f"... [{len(s) - limit} more chars]"


def _classname(report: dict[str, Any], entry: dict[str, Any]) -> str:
    run = report["run"]
    parts = ["rook", run.get("project") or "", run.get("agent") or ""]
    extra = entry.get("extra") or {}
    parts += [extra[k] for k in ("class", "category") if extra.get(k)]
    return ".".join(p for p in parts if p)


def _details(entry: dict[str, Any]) -> str:
    lines = [f"status: {entry['status']}", f"reason: {entry.get('reason', '')}"]
    for c in entry.get("criteria", []):
        label = f" [{c['id']}]" if c.get("id") is not None else ""
        lines.append(f"criterion {c['type']}{label}: {c['status']} - {c['reason']}")
    for h in entry.get("hooks", []):
        if h.get("status") != "ok":
            turn = f" turn {h['turn']}" if h.get("turn") else ""
            lines.append(f"hook {h['phase']}{turn}: {h['status']} - {h.get('diagnosis') or ''}")
    lines += [f"warning: {w}" for w in entry.get("warnings", [])]
    return "\n".join(lines)


def _system_out(entry: dict[str, Any]) -> str:
    parts = []
    for t in entry.get("turns", []):
        parts.append(f"--- turn {t.get('turn')} input ---\n{t.get('input') or ''}")
        parts.append(f"--- turn {t.get('turn')} output ---\n{t.get('output') or ''}")
        if t.get("calls") is not None:
            parts.append(f"calls: {json.dumps(t['calls'], ensure_ascii=False)}")
        if t.get("usage") is not None:
            parts.append(f"usage: {json.dumps(t['usage'], ensure_ascii=False)}")
    return "\n".join(parts)


def testcase(report: dict[str, Any], entry: dict[str, Any]) -> ET.Element:
    name = entry["id"]
    if (entry.get("repeat_count") or 1) > 1:
        name = f"{name} [{entry['repeat_index']}/{entry['repeat_count']}]"
    case = ET.Element(
        "testcase",
        {
            "name": clean(name, 500),
            "classname": clean(_classname(report, entry), 500),
            "time": f"{float(entry.get('seconds') or 0):.3f}",
        },
    )
    status = entry["status"]
    message = clean(entry.get("reason") or status, 2000)
    if status == "failed":
        ET.SubElement(case, "failure", {"message": message, "type": "failed"}).text = clean(
            _details(entry)
        )
    elif status in ("error", "stopped"):
        ET.SubElement(case, "error", {"message": message, "type": status}).text = clean(
            _details(entry)
        )
    elif status != "passed":
        ET.SubElement(
            case, "skipped", {"message": clean(f"{status}: {entry.get('reason', '')}", 2000)}
        )
    out = _system_out(entry)
    if out:
        ET.SubElement(case, "system-out").text = clean(out)
    return case


def document(report: dict[str, Any]) -> ET.Element:
    """The JUnit XML document (its root element) of a JSON report."""
    entries = report["scenarios"]
    counts = {
        "tests": len(entries),
        "failures": sum(1 for e in entries if e["status"] == "failed"),
        "errors": sum(1 for e in entries if e["status"] in ("error", "stopped")),
        "skipped": sum(
            1 for e in entries if e["status"] not in ("passed", "failed", "error", "stopped")
        ),
    }
    seconds = sum(float(e.get("seconds") or 0) for e in entries)
    attrs = {k: str(v) for k, v in counts.items()}
    attrs["time"] = f"{seconds:.3f}"
    run = report["run"]
    root = ET.Element("testsuites", {"name": "rook", **attrs})
    profile = (run.get("profile") or {}).get("id")
    suite_name = f"rook {run.get('project')}/{run.get('agent')} ({profile})"
    suite = ET.SubElement(
        root, "testsuite", {"name": clean(suite_name, 500), **attrs, "id": clean(run["id"], 200)}
    )
    props = ET.SubElement(suite, "properties")
    summary = report["summary"]
    for key, value in (
        ("run_id", run["id"]),
        ("profile", (run.get("profile") or {}).get("id")),
        ("pass_rate", summary.get("pass_rate")),
        ("coverage", summary.get("coverage")),
        ("run_dir", run.get("dir")),
    ):
        ET.SubElement(
            props,
            "property",
            {"name": key, "value": clean("" if value is None else str(value), 2000)},
        )
    for entry in entries:
        suite.append(testcase(report, entry))
    return root


def write_junit(report: dict[str, Any], path: Path) -> None:
    root = document(report)
    ET.indent(root, space="  ")
    text = ET.tostring(root, encoding="unicode")
    atomic_write(path, '<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n")


@hookimpl
def rook_register_reporters(register: Any) -> None:
    register("junit", write_junit)
