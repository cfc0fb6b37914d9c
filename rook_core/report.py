"""The JSON report (a stable interface), the summary, the table and the exit code."""

from __future__ import annotations

import functools
import math
import os
import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from . import closing, reportfile, stats
from .errors import RunStoreError
from .models import (
    DECIDED,
    ERROR,
    FAILED,
    INFRA_ERROR,
    NOT_RUNNABLE,
    PASSED,
    PHASES,
    SCENARIO_STATUSES,
    STOPPED,
    UNVERIFIABLE,
    run_name,
)
from .redact import marker_cut

PENDING = "pending"
COUNTED = SCENARIO_STATUSES
SHOWN = (*COUNTED, PENDING)
"""Every status a summary counts, in the order reports list them."""


def status_counts(summary: dict[str, Any]) -> str:
    """``2 passed, 1 failed, 2 errors``: the summary's counts in the order of
    :data:`SHOWN`, those that are none left out (``""`` when all are); the two
    statuses that are nouns take a plural."""
    return ", ".join(
        f"{n} {k}{'s' if n != 1 and k in (ERROR, INFRA_ERROR) else ''}"
        for k in SHOWN
        if (n := summary.get(k))
    )


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
    if not record.get("turns"):  # no turn recorded (a Ruhroh turn that failed): a hook's
        _hook_continuity(hooks, record.get("hooks", []))  # answer may name the level
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
    criteria = []
    for c in record.get("criteria", []):
        item = {
            "type": c["type"],
            "turn": c.get("turn"),
            "status": c["status"],
            "reason": c["reason"],
        }
        if c.get("id") is not None:
            item["id"] = c["id"]
        if c.get("evidence"):
            item["evidence"] = c["evidence"]
        criteria.append(item)
    return {
        "id": scenario.get("id"),
        "name": scenario.get("name"),
        "tags": scenario.get("tags", []),
        "repeat_index": record.get("repeat_index", 1),
        "repeat_count": record.get("repeat_count", 1),
        "content_hash": scenario.get("content_hash"),
        "status": record.get("status") or PENDING,
        "reason": record.get("reason") or pending_reason(record),
        "phases_done": record.get("phases_done", []),
        "turns": turns,
        "collected": record.get("collected"),
        "criteria": criteria,
        "hooks": hooks,
        "warnings": record.get("warnings", []),
        "extra": scenario.get("extra", {}),
        "seconds": run_seconds(record),
    }


def _hook_continuity(entries: list[dict[str, Any]], hooks: list[dict[str, Any]]) -> None:
    """Give each hook entry the continuity level its answer declared (kept in the
    record when its turn was not recorded), where no turn can show it."""
    for item, h in zip(entries, hooks, strict=True):
        data = h.get("data")
        if isinstance(data, dict) and isinstance(data.get("continuity"), str):
            item["continuity"] = data["continuity"]


def pending_reason(record: dict[str, Any]) -> str:
    """The reason of a scenario run with no result yet (``pending``): what it
    still has to do (a run with a result keeps its own). The command that
    finishes it depends on the run (``--shard``, ``--phases``): the terminal
    and ``rook merge`` name it."""
    if record.get("status"):
        return ""
    done = record.get("phases_done") or ()
    if not done:
        return "not run yet"
    rest = [p for p in PHASES[1:] if p not in done]
    return f"not finished: {', '.join(rest)} still to run"


def run_seconds(record: dict[str, Any]) -> float:
    """The time Rook worked on a scenario run: its record's ``seconds``, the sum
    of one span per invocation (or per executor's part) that worked on it, from
    its first hook, or its judging, to the end of that work. A record written
    before Rook kept it counts its ``started`` to its ``ended`` (0 when a run cut
    off midway has no end)."""
    seconds = record.get("seconds")
    if seconds is not None:
        return seconds
    started, ended = record.get("started"), record.get("ended")
    return round(ended - started, 6) if started and ended else 0.0


# What the summary reads of an entry (Tally.add), in this order: see summary_facts.
FACT_KEYS = ("status", "id", "repeat_index", "name", "content_hash", "extra")


def summary_facts(entry: dict[str, Any]) -> tuple[Any, ...]:
    """The few values of a report entry that its run's summary needs."""
    return tuple(entry.get(k) for k in FACT_KEYS[:-1]) + (stats.kept_extra(entry),)


class Spooled(NamedTuple):
    """A report entry from :class:`EntrySpool`: its encoded line and its summary facts."""

    line: bytes
    facts: tuple[Any, ...]


class EntrySpool:
    """Report entries made as scenario runs are recorded, so that the report at
    the end copies them instead of reading every record back.

    Each entry is encoded once (compact JSON, from the redacted record) into an
    anonymous temporary file; what stays in memory per run key is its place in
    that file (one int) and the few values the summary needs
    (:func:`summary_facts`: its status, scenario id, repeat index, name,
    content hash and kept extras), so the report decodes no entry. A run
    recorded again (an interrupted attempt, then the finished one) keeps its
    latest entry. A file error turns the spool off: the report then reads
    those records back, as it does for the runs recorded by earlier
    invocations of a resumed run. Entries are read back through a window of
    the file (READ_AHEAD bytes), so the report's pass over them, in the order
    they were recorded at concurrency 1 and nearly so above, reads the file in
    a few large reads.
    """

    READ_AHEAD = 256 * 1024

    def __init__(self, directory: str | None = None) -> None:
        self._dir = directory  # where the file is made (anonymous); None: the temp directory
        self._fd = -1
        self._closer: weakref.finalize | None = None
        self._where: dict[str, int] | None = {}  # key -> offset << 32 | length
        self._facts: dict[str, tuple[Any, ...]] = {}
        self._end = 0
        self._window = (0, b"")  # (offset, bytes) last read from the file

    def add(self, key: str, record: dict[str, Any]) -> None:
        if self._where is None:
            return
        entry = scenario_entry(record)
        line = reportfile.encode_entry(entry)
        if len(line) > 0xFFFFFFFF:  # its length would not fit: read the record back
            self._where.pop(key, None)
            return
        try:
            if self._fd < 0:
                self._open()
            view, at = memoryview(line), self._end
            while view:  # a regular file takes it whole, but a write may be short
                n = os.pwrite(self._fd, view, at)
                view, at = view[n:], at + n
        except OSError:
            self.close()
            return
        self._where[key] = self._end << 32 | len(line)
        self._facts[key] = summary_facts(entry)
        self._end += len(line)

    def entry(self, key: str) -> Spooled | None:
        """The encoded entry of run ``key``; ``None`` when it was not spooled."""
        at = self._where.get(key) if self._where is not None else None
        if at is None:
            return None
        offset, size = at >> 32, at & 0xFFFFFFFF
        start, window = self._window
        if not (start <= offset and offset + size <= start + len(window)):
            try:
                window = reportfile.pread_all(
                    self._fd, min(max(size, self.READ_AHEAD), self._end - offset), offset
                )
            except (OSError, RunStoreError):
                return None
            start = offset
            self._window = (start, window)
        return Spooled(window[offset - start : offset - start + size], self._facts[key])

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
        self._fd, self._where, self._facts, self._window = -1, None, {}, (0, b"")

    def _open(self) -> None:
        fd = -1
        if self._dir is not None and hasattr(os, "O_TMPFILE"):
            try:  # a file with no name from the start (Linux): nothing to unlink or leave
                fd = os.open(self._dir, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
            except OSError:  # a file system without it
                fd = -1
        if fd < 0:
            import tempfile  # (and shutil with it: ≈ 2 ms of start-up the usual run spares)

            fd, name = tempfile.mkstemp(prefix="rook-entries-", dir=self._dir)
            os.unlink(name)  # nameless: it goes when its descriptor is closed
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        closing.at_end(self._closer)  # a command's spool: closed as the command ends


class Tally:
    """The summary of a report, folded from its entries one at a time.

    Keeps counts and a few small values per scenario (:class:`rook_core.stats.Scenarios`),
    never the entries themselves.
    """

    def __init__(self) -> None:
        self.counts = {s: 0 for s in (*COUNTED, PENDING)}
        self.planned = 0
        self.scenarios = stats.Scenarios()

    def add(self, entry: dict[str, Any]) -> None:
        self.counts[entry["status"]] = self.counts.get(entry["status"], 0) + 1
        self.planned += 1
        self.scenarios.add(entry)

    def summary(self, min_pass_rate: float | None = None) -> dict[str, Any]:
        counts = self.counts
        decided = sum(counts[s] for s in DECIDED)
        planned = self.planned
        per_scenario = self.scenarios.aggregates()
        summary = {
            **counts,
            "total": planned,
            "decided": decided,
            "pass_rate": round(counts[PASSED] / decided, 4) if decided else None,
            "coverage": round(decided / planned, 4) if planned else None,
            "repeats": stats.totals(per_scenario),
            "by_scenario": per_scenario,
        }
        if min_pass_rate is not None:
            summary["gate"] = stats.gate(per_scenario, min_pass_rate)
        return summary


def summarize(
    entries: Iterable[dict[str, Any]], min_pass_rate: float | None = None
) -> dict[str, Any]:
    """Counts of scenario runs by status, the pass rate over decided runs, the
    verification coverage (decided / planned), and per-scenario aggregates over
    repeats (:mod:`rook_core.stats`; ``by_scenario`` is a read-only list made on
    demand); with ``min_pass_rate``, the gate's result. One pass over ``entries``."""
    tally = Tally()
    for e in entries:
        tally.add(e)
    return tally.summary(min_pass_rate)


def _run(manifest: dict[str, Any]) -> dict[str, Any]:
    run = {
        "id": manifest["id"],
        "dir": manifest["dir"],
        "project": manifest["project"],
        "agent": manifest["agent"],
        "profile": manifest["profile"],
        "phases": manifest["phases"],
        "started": manifest.get("created"),
        "capabilities": manifest["capabilities"],
        "prepare": manifest.get("prepare"),
    }
    if manifest.get("judge_profile"):
        run["judge_profile"] = manifest["judge_profile"]
    if manifest.get("continuity"):  # the Ruhroh levels the profile declares
        run["continuity"] = manifest["continuity"]
    # empty for a run made by a Rook that did not record its version: never guessed
    run["rook_versions"] = rook_versions(manifest)
    return run


def rook_versions(manifest: dict[str, Any]) -> list[str]:
    """The versions of Rook that ran the run (its invocations, shards' included),
    each once, in the order they first ran it."""
    found = [
        i.get("rook_version") for i in manifest.get("invocations") or [] if isinstance(i, dict)
    ]
    return list(dict.fromkeys(v for v in found if isinstance(v, str)))


def build_report(
    manifest: dict[str, Any],
    records: Iterable[dict[str, Any]],
    min_pass_rate: float | None = None,
) -> dict[str, Any]:
    """The JSON report: a stable interface (keys are only ever added), every
    entry in memory (a plain list). :func:`write_report` keeps none."""
    entries = [scenario_entry(r) for r in records]
    return {
        "version": 1,
        "run": _run(manifest),
        "scenarios": entries,
        "summary": summarize(entries, min_pass_rate),
    }


def write_report(
    manifest: dict[str, Any],
    records: Iterable[dict[str, Any] | Spooled],
    min_pass_rate: float | None = None,
    *,
    path: Path | None = None,
    redact: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """The JSON report of :func:`build_report`, built in one pass over ``records``
    (which may be a generator) without keeping any entry in memory.

    Each record becomes its entry, is written to ``path`` (the run's
    ``report.json``, one entry per line; ``None``: a temporary file) and is
    folded into the summary. The report returned reads its ``scenarios`` back
    from that file on demand (a read-only list, :mod:`rook_core.reportfile`).
    ``redact`` is applied to the run and to each entry (the summary is made
    from the redacted entries). An item of ``records`` may instead be its
    entry already encoded, with its summary facts (:class:`Spooled`, from a
    redacted record: :class:`EntrySpool`), which is written as it is.
    """
    clean = redact or (lambda value: value)
    tally = Tally()

    def entries() -> Iterator[Any]:
        for record in records:
            if isinstance(record, Spooled):
                tally.add(dict(zip(FACT_KEYS, record.facts, strict=True)))
                yield record.line
                continue
            entry = clean(scenario_entry(record))
            tally.add(entry)
            yield entry

    head = {"version": 1, "run": clean(_run(manifest))}
    return reportfile.write_report_file(
        path, head, entries(), lambda: {"summary": tally.summary(min_pass_rate)}
    )


def exit_code(report: dict[str, Any]) -> int:
    """0: every decided scenario passed; 1: a scenario failed, errored or stopped,
    or the infrastructure failed (``infra_error``: not decided, but not tested either).

    With a ``--min-pass-rate`` gate (``summary.gate``), each scenario must reach
    the rate over its decided runs instead: 1 when any scenario missed it (or
    an infrastructure error left a run untested).
    """
    s = report["summary"]
    if s.get(INFRA_ERROR):
        return 1
    gate = s.get("gate")
    if gate and gate.get("min_pass_rate") is not None:
        return 1 if gate.get("missed") else 0
    return 1 if failing(s) else 0


def undecided_warning(report: dict[str, Any]) -> str | None:
    """The warning for a finished run of which no scenario run was decided (each
    unverifiable or not runnable): it exits 0, yet nothing was verified. None for
    a run with a decided run, with nothing planned, or with runs still pending."""
    s = report["summary"]
    if s.get("decided") or not s.get("total") or s.get("pending"):
        return None
    counts = status_counts(s)
    return (
        f"rook: warning: no scenario run was decided ({counts}): nothing was verified, "
        "and exit code 0 says only that nothing failed"
    )


FAILING = (FAILED, ERROR, STOPPED, INFRA_ERROR)


def failing(summary: dict[str, Any]) -> list[str]:
    """The statuses in ``summary`` that fail a run without a gate (see
    :func:`exit_code`); with a gate, ``infra_error`` still does."""
    return [k for k in FAILING if summary.get(k)]


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def interval(w: list[float] | None) -> str:
    """A Wilson interval in whole percents, rounded outward (its low end down, its high
    end up), so that what is shown holds the interval: 5 passes of 5 is 56.55–100 %,
    shown 56–100%, never 57."""
    if not w:
        return "n/a"
    low, high = math.floor(w[0] * 100 + 1e-9), math.ceil(w[1] * 100 - 1e-9)
    return f"{low}–{high}%"


SYMBOL = {
    PASSED: "PASS",
    FAILED: "FAIL",
    UNVERIFIABLE: "UNVERIFIED",
    ERROR: "ERROR",
    STOPPED: "STOPPED",
    NOT_RUNNABLE: "NOT RUNNABLE",
    INFRA_ERROR: "INFRA ERROR",
    PENDING: "PENDING",
}


BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""The bidi controls (U+061C, U+200E/F, U+202A-E, U+2066-9) as the body of a
regular expression's character class: U+202E shows the rest of a line
backwards. Every printer and report shows them as :func:`escaped`."""


def escaped(match: re.Match[str]) -> str:
    """A matched character as its escape (``\\x1b``, ``\\u202e``), the way
    :func:`repr` shows it."""
    return repr(match.group())[1:-1]


def replaced(match: re.Match[str]) -> str:
    """What the HTML and JUnit reports show of a character they cannot hold
    (a control character, a lone surrogate): U+FFFD; of a bidi control (U+061C
    to U+2069, where none of those is), its escape, as :func:`printable` does."""
    return escaped(match) if "\u061c" <= match.group() <= "\u2069" else "\ufffd"


@functools.cache
def _control() -> re.Pattern[str]:  # compiled on first use, as Rook's other patterns
    return re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}]")  # all but newline, tab


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: each control character but newline
    and tab (C0, DEL, C1: ``ESC [2J`` would clear the screen, an OSC sequence
    retitle it, a carriage return overwrite the line) and each bidi control
    (U+202E would show the rest of the line backwards: ``SSAP`` as ``PASS``) is
    written as its escape (``\\x1b``, ``\\u202e``), the way :func:`repr` shows it.
    Hook output reaches the screen in diagnoses; the records keep it as it was."""
    return _control().sub(escaped, text)


FILE_TEXT = 10_000_000
"""The characters of agent text a JUnit or HTML report holds in all, shared among its
scenario runs (GitLab reads no JUnit file over 30 MB; a page of hundreds of MB opens in
no browser)."""


def text_share(runs: int, most: int = 20_000, least: int = 1_000) -> int:
    """Each text's share of :data:`FILE_TEXT` in a report of ``runs`` scenario runs:
    ``most`` up to ``FILE_TEXT // most`` runs, less past that, never under ``least``."""
    return max(least, min(most, FILE_TEXT // max(runs, 1)))


def fair_shares(sizes: list[int], budget: int) -> list[int]:
    """Fair shares of ``budget`` for parts of ``sizes`` (a JUnit test case's turns,
    an HTML page's texts of one run): a part under its equal share keeps its size
    and leaves the rest to the others."""
    shares = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    for k, i in enumerate(order):
        shares[i] = min(sizes[i], left // (len(sizes) - k))
        left -= shares[i]
    return shares


def ellipsis(text: str, n: int, end: str = "…") -> str:
    """``text`` cut to ``n`` characters, ending with ``end`` when it was cut; a
    redaction marker the cut would split is left out whole."""
    if len(text) <= n:
        return text
    return text[: marker_cut(text, n - len(end))] + end


def _cut(text: str, n: int = 90) -> str:
    return ellipsis(printable(" ".join((text or "").split())), n)


WARNING_CHARS = 60


def repeat_label(entry: dict[str, Any]) -> str:
    """What a report file puts after a scenario run's id: `` [2/3]`` when its
    scenario has several runs, else ``""``. JUnit's test case is named so
    (``refund [2/3]``: CI follows a test's history by its name, and one
    ``--repeat`` value always gives the same names); the Markdown and HTML
    reports name a run the same way, so one name finds it in each."""
    count = entry.get("repeat_count") or 1
    return f" [{entry.get('repeat_index')}/{count}]" if count > 1 else ""


def warning_lines(entry: dict[str, Any]) -> list[str]:
    """A scenario run's warnings (a failed close hook, a lost Dask worker: what
    did not change its status), whole, one ``warning: ...`` line each. Every
    report that lists them uses this; :func:`warning_note` is the short form."""
    return [f"warning: {w}" for w in entry.get("warnings") or ()]


def warning_note(entry: dict[str, Any]) -> str:
    """A scenario run's warnings in a few words, for a table row or a progress
    line: the first clause of the first one (``close failed: exited with code
    3``, not the hook's standard error after it), and how many more; ``""``
    when there is none."""
    warnings = entry.get("warnings")
    if not warnings:
        return ""
    more = f" (+{len(warnings) - 1} more)" if len(warnings) > 1 else ""
    # its first clause: "close failed: exited with code 3", not the hook's stderr after it
    first = ": ".join(str(warnings[0]).split("; ", 1)[0].split(": ", 2)[:2])
    return f"warning: {_cut(first, WARNING_CHARS)}{more}"


def reason_text(entry: dict[str, Any], n: int = 90) -> str:
    """A scenario run's reason on one line of about ``n`` characters, with its
    :func:`warning_note` after it (the reason is cut first): what the results
    table and the progress lines show."""
    note = warning_note(entry)
    if not note:
        return _cut(entry.get("reason") or "", n)
    reason = _cut(entry.get("reason") or "", max(20, n - len(note) - 2))
    return f"{reason}; {note}" if reason else note


def continuity_levels(report: dict[str, Any]) -> list[str]:
    """The continuity levels the run's Ruhroh wrappers or connectors declared
    (each turn's ``continuity`` evidence, or a hook's whose turn was not
    recorded), in the order first met, after those the run recorded as declared
    (``run.continuity``, also when no hook ran): none for a run without Ruhroh."""
    levels = declared_levels(report)
    for e in report["scenarios"]:
        _note_levels(e, levels)
    return list(levels)


def declared_levels(report: dict[str, Any]) -> dict[str, None]:
    """The continuity levels the run recorded as declared by its profile's entries
    (``run.continuity``, in ``run.json`` from the start of the run)."""
    declared = report["run"].get("continuity")
    if not isinstance(declared, list):
        return {}
    return {level: None for level in declared if isinstance(level, str)}


def _note_levels(entry: dict[str, Any], levels: dict[str, None]) -> None:
    for t in entry.get("turns") or ():
        level = (t.get("evidence") or {}).get("continuity")
        if isinstance(level, str):
            levels[level] = None
    for h in entry.get("hooks") or ():
        level = h.get("continuity")
        if isinstance(level, str):
            levels[level] = None


REASON_CHARS = 90
"""Characters of a reason the results table shows where it goes to no terminal."""

REASON_MIN = 30
"""Characters of a reason the results table shows on a terminal too narrow for
the rest of its row: fewer would say nothing."""


def reason_width(before: int, width: int | None, fixed: int = REASON_CHARS) -> int:
    """Characters of a reason a line of ``width`` columns (a terminal's; ``None``:
    no terminal, ``fixed``) leaves after ``before`` characters, at least
    :data:`REASON_MIN`."""
    return fixed if width is None else max(REASON_MIN, width - before)


def table(report: dict[str, Any], width: int | None = None) -> str:
    """The results table, its summary line and notes. On a terminal ``width``
    columns wide each reason is cut to what the row leaves of the width, else
    to :data:`REASON_CHARS`."""
    from tabulate import tabulate

    rows = []
    reasons: list[dict[str, Any]] = []  # what each row's reason is made of: no entry kept
    warned: list[str] = []
    levels = declared_levels(report)  # and the entries', read here: once (a file of them)
    for e in report["scenarios"]:
        _note_levels(e, levels)
        crit = e["criteria"]
        ok = sum(1 for c in crit if c["status"] == PASSED)
        name = run_name(e["id"], e["repeat_index"], e["repeat_count"])
        if e.get("warnings"):
            warned.append(name)
        rows.append(
            [name, SYMBOL.get(e["status"], e["status"]), f"{ok}/{len(crit)}", f"{e['seconds']:.2f}"]
        )
        reasons.append({"reason": e.get("reason"), "warnings": e.get("warnings")})
    headers = ["scenario", "status", "criteria", "seconds", "reason"]
    # the columns before the reason, two spaces apart, each as wide as its widest cell
    # and its heading and two more (tabulate's "simple" format pads each heading so)
    before = sum(
        max([len(h) + 2, *(len(r[i]) for r in rows)]) + 2 for i, h in enumerate(headers[:4])
    )
    n = reason_width(before, width)
    for row, e in zip(rows, reasons, strict=True):
        row.append(reason_text(e, n))
    # seconds as written ("0.00", not tabulate's reparsed "0"), right-aligned; no colalign
    # without rows (an empty shard's table): tabulate 0.9 raises IndexError on it
    body = tabulate(
        rows,
        headers=headers,
        tablefmt="simple",
        disable_numparse=True,
        colalign=("left", "left", "left", "right", "left") if rows else None,
    )
    s = report["summary"]
    rate, cov = percent(s["pass_rate"]), percent(s["coverage"])
    counts = status_counts(s)
    text = body
    repeats = repeats_table(report)
    if repeats:
        text += "\n\n" + repeats
    text += (
        f"\n\n{counts or 'no scenarios'} — pass rate {rate} of decided, coverage {cov} of planned"
    )
    return text + table_notes(report, levels, warned)


def table_notes(
    report: dict[str, Any],
    levels: dict[str, None] | None = None,
    warned: list[str] | None = None,
) -> str:
    """What :func:`table` says under its summary line, each line after a newline:
    the Ruhroh continuity, the scenario runs with warnings, the gate, and the run's
    folder (also under an empty shard's sentence, which stands for the table)."""
    s, text = report["summary"], ""
    levels = declared_levels(report) if levels is None else levels
    if levels:
        text += f"\nRuhroh continuity: {', '.join(map(printable, levels))}"
    if warned:
        some = ", ".join(warned[:5]) + (f" and {len(warned) - 5} more" if len(warned) > 5 else "")
        text += f"\nwarnings on {len(warned)} scenario run{'s' * (len(warned) > 1)}: {some}"
    gate = s.get("gate")
    if gate:
        missed = ", ".join(f"{m['id']} ({percent(m['pass_rate'])})" for m in gate["missed"])
        ungated = gate.get("ungated") or []
        reached = "every scenario reached it" if s.get("decided") else "no run was decided"
        if ungated and s.get("decided"):
            reached = f"every decided scenario reached it; ungated (none decided): {len(ungated)}"
        text += f"\ngate --min-pass-rate {gate['min_pass_rate']:g}: " + (
            f"missed by {missed}" if missed else reached
        )
    # a workspace folder's ESC or U+202E shown as its escape, never obeyed
    return text + f"\nrun {report['run']['id']}: {printable(report['run']['dir'])}"


def scenario_stats(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-scenario aggregates of a report (computed when an older report lacks them)."""
    per = report["summary"].get("by_scenario")
    return per if per is not None else stats.by_scenario(report["scenarios"])


def repeats_table(report: dict[str, Any]) -> str:
    """Per-scenario statistics, shown when any scenario ran more than once."""
    from tabulate import tabulate

    per = scenario_stats(report)
    if not any(p["runs"] > 1 for p in per):
        return ""
    rows = [
        [
            p["id"],
            f"{p[PASSED]}/{p['runs']}",
            "yes" if p["pass_all"] else "no",
            "yes" if p["pass_any"] else "no",
            percent(p["pass_rate"]),
            interval(p["wilson"]),
            "FLAKY" if p["flaky"] else "",
        ]
        for p in per
    ]
    headers = ["scenario", "passes/N", "pass^N", "pass@N", "rate", "95% CI", "flaky"]
    return tabulate(rows, headers=headers, tablefmt="simple")
