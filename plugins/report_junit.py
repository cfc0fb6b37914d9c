"""``--report junit:PATH``: JUnit XML that GitHub Actions, GitLab and Jenkins read.

The file is valid against the strict JUnit schemas CI tools use (Jenkins'
``junit-10.xsd``; the Ant ``JUnit.xsd`` too but for a testcase's
``<system-out>``/``<system-err>``, which it leaves out): a bare
``<testsuites>``, one ``<testsuite>`` with ``id="0"``, ``package``, a UTC
``timestamp`` without a zone (the run's start) and ``hostname``, its
properties, the testcases, and an empty ``<system-out>`` and ``<system-err>``.

One ``<testcase>`` per scenario run (``name`` is the scenario id, with
``[index/count]`` when it has several runs, so one ``--repeat`` value always
gives the same names). A failed scenario carries ``<failure>``, an
errored or stopped one, or one with an infrastructure error, ``<error>``
(``type`` is the status), each with the reason as ``message`` and
the criteria verdicts and hook diagnoses as text. ``unverifiable``,
``not_runnable`` and pending runs are ``<skipped>``: never counted as passes.
Turn outputs, calls, usage and other evidence, then what collect returned, go to
``<system-out>``, each turn cut to its share
(of ~20,000 characters a test case, less past 500 of them: ``text_share``, and past
:data:`FILE_BYTES` written). With a ``--min-pass-rate``
gate, the suite's properties carry its verdict (``gate``: ``met``,
``missed``, or ``unverifiable`` when no run was decided); the testcases still hold every run's own result.

Characters XML 1.0 cannot hold (most control characters) or discourages (DEL,
the C1 controls, the noncharacters U+FDD0-U+FDEF) become U+FFFD, so the file
always parses and shows no terminal escape; a carriage return is written ``&#13;``, so a parser
gives it back rather than a line feed. The file is written one testcase at a time.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rook_core.hookspecs import hookimpl
from rook_core.redact import current
from rook_core.report import (
    BIDI,
    fair_shares,
    repeat_label,
    replaced,
    text_share,
    warning_lines,
)
from rook_core.reportio import atomic_file

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

# The characters XML 1.0's Char production leaves out (it allows #x9 | #xA | #xD |
# [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]), and those it asks documents
# to avoid (section 2.2): DEL and the C1 controls (U+009B starts a terminal escape
# as ESC [ does; U+0085 is a line end to XML 1.1) and the noncharacters U+FDD0-U+FDEF,
# as the HTML report does; a bidi control is shown as its escape (\u202e), as there.
# Listed rather than negated:
# the same set, compiled in ~0.3 ms instead of ~3 ms, and only when a JUnit report
# is written (every run loads this module).
ERRORS = ("error", "stopped", "infra_error")
"""Statuses written as ``<error>``: the run did not get a fair verdict."""
_INVALID = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff" + BIDI + "]"
TEXT_LIMIT = 20_000
FILE_BYTES = 25_000_000
"""A JUnit file's size at most, as written (GitLab reads no JUnit file over 30 MB):
a test case holds several texts (its failure, a system-out of twice the share, a
system-err), escaped (``<`` is ``&lt;``) in UTF-8 (``日`` takes three bytes), so
past its share of what is left of it a test case's texts are cut further."""
LEAST = 200
"""The characters a test case's text keeps however many there are."""


@functools.cache
def _invalid() -> re.Pattern[str]:
    return re.compile(_INVALID)


def clean(text: Any, limit: int | None = TEXT_LIMIT) -> str:
    """Text safe for an XML 1.0 document, cut at ``limit`` characters (``None``:
    not cut) with a redaction marker at the cut kept whole."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    s = _invalid().sub(replaced, s)
    if limit is None or len(s) <= limit:
        return s
    return current().head(s, limit, "... [{n} more chars]")


def _classname(report: dict[str, Any], entry: dict[str, Any]) -> str:
    run = report["run"]
    parts = ["rook", run.get("project") or "", run.get("agent") or ""]
    extra = entry.get("extra") or {}
    parts += [extra[k] for k in ("class", "category") if extra.get(k)]
    # one level of Jenkins' package tree each: a dot inside a part (a class
    # `safety.v2`, an agent `bot.v1`) would add levels
    return ".".join(str(p).replace(".", "_") for p in parts if p)


def _details(entry: dict[str, Any]) -> str:
    lines = [f"status: {entry['status']}", f"reason: {entry.get('reason', '')}"]
    for c in entry.get("criteria", []):
        label = f" [{c['id']}]" if c.get("id") is not None else ""
        lines.append(f"criterion {c['type']}{label}: {c['status']} - {c['reason']}")
    for h in entry.get("hooks", []):
        if h.get("status") != "ok":
            turn = f" turn {h['turn']}" if h.get("turn") else ""
            lines.append(f"hook {h['phase']}{turn}: {h['status']} - {h.get('diagnosis') or ''}")
    lines += warning_lines(entry)
    return "\n".join(lines)


MORE = "\n... [{n} more chars]"


def _system_out(entry: dict[str, Any], limit: int = TEXT_LIMIT) -> str:
    """The turns' input, output, calls, usage and other evidence, then what collect
    returned, within about ``limit`` characters: every turn (and what was
    collected) gets a fair share, and in it every part, so a long
    first turn never hides the later ones or their calls. The text is redacted
    before it is cut (the run's redactor), so a cut never splits a secret, and
    each part that was cut says how many characters were left out."""
    redactor = current()
    turns = []
    for t in entry.get("turns", []):
        n = t.get("turn")
        parts = [
            (f"--- turn {n} input ---\n", f"{t.get('input') or ''}"),
            (f"--- turn {n} output ---\n", f"{t.get('output') or ''}"),
        ]
        if t.get("calls") is not None:
            parts.append(("calls: ", json.dumps(t["calls"], ensure_ascii=False)))
        if t.get("usage") is not None:
            parts.append(("usage: ", json.dumps(t["usage"], ensure_ascii=False)))
        if t.get("evidence"):  # what the hook returned beyond the contract's keys
            parts.append(("evidence: ", json.dumps(t["evidence"], ensure_ascii=False)))
        turns.append([(label, redactor.text(value)) for label, value in parts])
    if entry.get("collected"):  # what collect returned (traces, usage, calls): its own share
        text = json.dumps(entry["collected"], ensure_ascii=False)
        turns.append([("--- collected ---\n", redactor.text(text))])
    sizes = [sum(len(value) for _, value in parts) for parts in turns]
    lines = []
    for parts, share in zip(turns, fair_shares(sizes, limit), strict=True):
        caps = fair_shares([len(value) for _, value in parts], share)
        lines += [
            label + redactor.head(value, cap, MORE)
            for (label, value), cap in zip(parts, caps, strict=True)
        ]
    # the labels and notes are outside the shares: a run of very many turns is cut once more
    return redactor.head("\n".join(lines), 2 * limit, MORE)


PARTS = ("details", "system-out", "system-err")
"""A test case's texts that share its part of the file (:func:`_cases`): the
failure's or error's text (criteria verdicts, hook diagnoses), the turns, the warnings."""


def testcase(
    report: dict[str, Any],
    entry: dict[str, Any],
    limit: int = TEXT_LIMIT,
    limits: dict[str, int] | None = None,
) -> ET.Element:
    """The test case of one scenario run, its texts cut to about ``limit``
    characters, or each of :data:`PARTS` to its own in ``limits``."""
    import xml.etree.ElementTree as ET  # only when a JUnit report is written

    cuts = {part: limit for part in PARTS} | (limits or {})

    name = entry["id"] + repeat_label(entry)
    case = ET.Element(
        "testcase",
        {
            "name": clean(name, 500),
            "classname": clean(_classname(report, entry), 500),
            "time": f"{float(entry.get('seconds') or 0):.3f}",
        },
    )
    status = entry["status"]
    message = clean(entry.get("reason") or status, min(2000, cuts["details"]))
    if status == "failed":
        ET.SubElement(case, "failure", {"message": message, "type": "failed"}).text = clean(
            _details(entry), cuts["details"]
        )
    elif status in ERRORS:
        ET.SubElement(case, "error", {"message": message, "type": status}).text = clean(
            _details(entry), cuts["details"]
        )
    elif status != "passed":
        ET.SubElement(
            case,
            "skipped",
            {"message": clean(f"{status}: {entry.get('reason', '')}", min(2000, limit))},
        )
    out = _system_out(entry, cuts["system-out"])
    if out:  # already cut, turn by turn (an escape, longer than its character, cuts nothing)
        ET.SubElement(case, "system-out").text = clean(out, None)
    warned = warning_lines(entry)
    if warned:  # a passed run's too: CI shows a test case's system-err
        ET.SubElement(case, "system-err").text = clean("\n".join(warned), cuts["system-err"])
    return case


def _counts(entries: Iterable[dict[str, Any]]) -> dict[str, str]:
    """The ``tests``/``failures``/``errors``/``skipped``/``time`` attributes (one pass)."""
    tests = failures = errors = skipped = 0
    seconds = 0.0
    for e in entries:
        tests += 1
        status = e["status"]
        if status == "failed":
            failures += 1
        elif status in ERRORS:
            errors += 1
        elif status != "passed":
            skipped += 1
        seconds += float(e.get("seconds") or 0)
    attrs = {"tests": tests, "failures": failures, "errors": errors, "skipped": skipped}
    return {**{k: str(v) for k, v in attrs.items()}, "time": f"{seconds:.3f}"}


def _timestamp(run: dict[str, Any]) -> str:
    """When the run started, in UTC: the schemas' ``YYYY-MM-DDTHH:MM:SS``, which
    has no zone and no fraction (the time of writing for a run that kept none)."""
    started = run.get("started")
    when = started if isinstance(started, int | float) and started > 0 else time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when))


def _hostname() -> str:
    """The machine writing the report, redacted like every other text;
    ``localhost`` when it has no name (the schemas want one)."""
    import socket  # only when a JUnit report is written (every run loads this module)

    name = clean(current().text(socket.gethostname()), 200).strip()
    return name or "localhost"


def _skeleton(report: dict[str, Any], attrs: dict[str, str]) -> tuple[ET.Element, ET.Element]:
    """The root and its one testsuite, with the run's properties and no testcase."""
    import xml.etree.ElementTree as ET  # only when a JUnit report is written

    run = report["run"]
    # the counts are the testsuite's: the schemas let <testsuites> carry no
    # ``skipped`` (Jenkins') or no attribute at all (Ant's)
    root = ET.Element("testsuites")
    profile = (run.get("profile") or {}).get("id")
    suite_name = f"rook {run.get('project')}/{run.get('agent')} ({profile})"
    head = {
        "name": clean(suite_name, 500),
        "package": clean(_classname(report, {}), 500),
        "id": "0",  # the suite's index in the file (the schema's int); the run id is a property
        "timestamp": _timestamp(run),
        "hostname": _hostname(),
    }
    suite = ET.SubElement(root, "testsuite", {**head, **attrs})
    props = ET.SubElement(suite, "properties")
    summary = report["summary"]
    facts: list[tuple[str, Any]] = [
        ("run_id", run["id"]),
        ("profile", (run.get("profile") or {}).get("id")),
        ("pass_rate", summary.get("pass_rate")),
        ("coverage", summary.get("coverage")),
        ("run_dir", run.get("dir")),
    ]
    gate = summary.get("gate")
    if gate and gate.get("min_pass_rate") is not None:
        # the testcases keep every run's result (a failed repeat is a <failure>
        # even when its scenario reached the gate): the gate's verdict is here
        missed = [m["id"] for m in gate.get("missed") or ()]
        # a gate no decided run reached verified nothing: never "met"
        verdict = "missed" if missed else "met" if summary.get("decided") else "unverifiable"
        facts += [
            ("min_pass_rate", f"{gate['min_pass_rate']:g}"),
            ("gate", verdict),
            ("gate_missed", ",".join(missed)),
            ("gate_ungated", ",".join(gate.get("ungated") or ())),
        ]
    for key, value in facts:
        ET.SubElement(
            props,
            "property",
            {"name": key, "value": clean("" if value is None else str(value), 2000)},
        )
    return root, suite


def _close(suite: ET.Element) -> None:
    """The suite's own ``<system-out>`` and ``<system-err>``, after its testcases:
    empty (a run's text is its testcases'), but the strict schema wants them."""
    import xml.etree.ElementTree as ET  # only when a JUnit report is written

    ET.SubElement(suite, "system-out")
    ET.SubElement(suite, "system-err")


def tostring(element: ET.Element) -> str:
    """``element`` as XML text, a carriage return as ``&#13;``: written as it is,
    XML's end-of-line handling would give a parser a line feed instead."""
    import xml.etree.ElementTree as ET  # only when a JUnit report is written

    # the indentation is all line feeds: a carriage return here is the text's
    return ET.tostring(element, encoding="unicode").replace("\r", "&#13;")


PLACEHOLDER = "rook-testcases"


def document(report: dict[str, Any]) -> ET.Element:
    """The JUnit XML document (its root element) of a JSON report, all in memory
    (:func:`iter_xml` writes the same text one testcase at a time)."""
    entries = report["scenarios"]
    root, suite = _skeleton(report, _counts(entries))
    for case, _ in _cases(report, _around(*_frame(report, entries))):
        suite.append(case)
    _close(suite)
    return root


def _frame(report: dict[str, Any], entries: Any) -> tuple[str, str]:
    """The file's text before its first test case and after its last."""
    import xml.etree.ElementTree as ET  # only when a JUnit report is written

    root, suite = _skeleton(report, _counts(entries))
    ET.SubElement(suite, PLACEHOLDER)  # where the testcases go, indented like one
    _close(suite)
    ET.indent(root, space="  ")
    before, after = tostring(root).split(f"<{PLACEHOLDER} />")
    return before, after


def _around(before: str, after: str) -> int:
    """The bytes the file writes around its test cases (:func:`_frame`)."""
    return len((XML_HEAD + before + after + "\n").encode("utf-8"))


BETWEEN = "\n" + "  " * 2
"""What the file writes between two test cases (their indent)."""
XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _cases(report: dict[str, Any], around: int = 0) -> Iterator[tuple[ET.Element, str]]:
    """Each scenario run's test case (indented as in the file) and its text, each
    cut to its share of the texts (:func:`~rook_core.report.text_share`), and
    further to its share of what is left of :data:`FILE_BYTES` once the ``around``
    bytes of the file around them (its head, the suite's properties, its end)
    and the indents between them are written."""
    import xml.etree.ElementTree as ET  # only when a JUnit report is written

    entries = report["scenarios"]
    limit = text_share(len(entries), TEXT_LIMIT)
    size = around + len(BETWEEN) * max(len(entries) - 1, 0)
    for n, entry in enumerate(entries):
        room = (FILE_BYTES - size) // (len(entries) - n)
        cuts = {part: limit for part in PARTS}
        while True:
            case = testcase(report, entry, limit, cuts)
            ET.indent(case, space="  ", level=2)
            text = tostring(case)
            used = len(text.encode("utf-8"))
            if used <= room:
                break
            shrunk = _shrunk(case, cuts, room - used)
            if shrunk == cuts:  # every text at its least
                break
            cuts = shrunk
        size += used
        yield case, text


def _shrunk(case: ET.Element, cuts: dict[str, int], over: int) -> dict[str, int]:
    """``cuts`` for a test case ``-over`` bytes too large: its texts (:data:`PARTS`)
    get fair shares of the bytes they may take (one that needs less leaves the rest
    to the others), so one huge text (criteria verdicts of ``<``, ``&lt;`` as
    written) never leaves the turns a few characters; none under :data:`LEAST`."""
    sizes = {}
    for child in case:
        part = "details" if child.tag in ("failure", "error") else child.tag
        if part in cuts:
            sizes[part] = len(tostring(child).encode("utf-8"))
    names = list(sizes)
    shares = fair_shares([sizes[p] for p in names], max(sum(sizes.values()) + over, 0))
    shrunk = dict(cuts)
    for part, share in zip(names, shares, strict=True):
        if sizes[part] > share:
            shrunk[part] = max(LEAST, min(cuts[part], cuts[part] * share // sizes[part] * 9 // 10))
    return shrunk


def iter_xml(report: dict[str, Any]) -> Iterator[str]:
    """The JUnit XML file in pieces, one per testcase: the same text as the
    indented :func:`document` (written with :func:`tostring`), but with one
    testcase in memory at a time (the entries are read twice: once for the
    counts the suite carries, once to write)."""
    import xml.etree.ElementTree as ET  # only when a JUnit report is written

    entries = report["scenarios"]
    yield XML_HEAD
    if not entries:
        root, suite = _skeleton(report, _counts(entries))
        _close(suite)
        ET.indent(root, space="  ")
        yield tostring(root) + "\n"
        return
    before, after = _frame(report, entries)
    yield before
    for n, (_, text) in enumerate(_cases(report, _around(before, after))):
        yield (BETWEEN if n else "") + text
    yield after + "\n"


def write_junit(report: dict[str, Any], path: Path) -> None:
    with atomic_file(path) as fh:
        for piece in iter_xml(report):
            fh.write(piece)


@hookimpl
def rook_register_reporters(register: Any) -> None:
    register("junit", write_junit)
