"""``--report markdown:PATH``: a summary that fits a GitHub step summary.

Append it to ``$GITHUB_STEP_SUMMARY`` (``--report markdown:$GITHUB_STEP_SUMMARY``
writes it there directly). The page holds the verdict, pass rate and
coverage, one table row per scenario (passes over repeats, the 95 % Wilson
interval, flaky), the warnings of any run (a failed close hook: what did not
change a status), and a collapsed section for every run that did not pass:
its criteria verdicts, hook diagnoses, turns and what collect returned. It stays under GitHub's
1 MiB limit (of bytes: an answer in CJK takes three a character): past a
budget, details, warnings and table rows (those of scenarios that passed
first) are left out with a note. It is written a piece at a time, with one
run's details in memory at once.

``--report markdown-comment:PATH`` writes the same page kept to a pull-request
comment's size (GitHub refuses a comment over 65,536 characters).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rook_core.errors import counted
from rook_core.hookspecs import hookimpl
from rook_core.lazyre import later
from rook_core.redact import current
from rook_core.report import (
    continuity_levels,
    ellipsis,
    exit_code,
    failing,
    interval,
    percent,
    printable,
    repeat_label,
    scenario_stats,
    status_counts,
    warning_lines,
)
from rook_core.reportio import atomic_file
from rook_core.stats import is_flaky, row_word

MAX_BYTES = 900_000
"""The page's budget in UTF-8 bytes (GitHub refuses a step summary over 1 MiB)."""
COMMENT_CHARS = 65_000
"""A ``markdown-comment`` page's budget in characters: GitHub refuses a pull-request
comment body over 65,536 (422 "Body is too long"); the rest is room for the line a
commenting action adds (its hidden marker, a heading). At most 4 UTF-8 bytes a
character, it is under the 262,144 bytes GitHub also holds a comment to."""
OUTPUT_CHARS = 2_000
MAX_WARNINGS = 200  # runs whose warnings are listed (each item stays under ~1 KB)
ICON = {
    "passed": "✅",
    "failed": "❌",
    "error": "💥",
    "stopped": "⏹️",
    "unverifiable": "❔",
    "not_runnable": "⏭️",
    "infra_error": "🔌",
    "pending": "⏳",
    "flaky": "⚠️",
    "unverified": "❔",
}


MARKUP = later(r"([\\`*_\[\]!~|$])")
"""The characters that make Markdown of plain text on GitHub: images and links
(``![x](url)``, ``[x](url)``), emphasis, code spans, strikethrough, math, a
table's pipes, and the backslash itself."""

AUTOLINK = later(r"(?i)(://|(?<![^\W_]|[.-])www\.)")
"""What GitHub makes a link of in text (its autolink extension: ``https://...``,
``http://``, ``ftp://``, ``www.``; an address an agent printed, perhaps prompt-
injected). Its ``:`` (or the dot after ``www``) is written with a backslash
before it: Markdown shows ``\\:`` as ``:``, and the address is text, not a link.
A ``www.`` after a letter, a digit, ``.`` or ``-`` is no link; after ``_`` it is
(``_www.evil.example``, as after ``*``, ``~`` or ``(``)."""

MENTION = later(r"(?<![\w@/.+-])@(?=[A-Za-z0-9])")
"""An ``@`` that GitHub would make a mention of (``@octocat``, ``@org/team``), which
notifies that user or team when the report is posted as a pull-request comment; an
e-mail address's is none. Written ``@&#8203;`` (a zero-width space after it, as
Renovate writes mentions it quotes): shown as ``@``, never a mention."""


EMAIL = later(r"(?<=[\w.+-])@(?=[\w-]|\\_)")
"""The ``@`` of an e-mail address, which GitHub makes a ``mailto:`` link of where it
reads Markdown (the GFM spec's extended email autolink: ``[A-Za-z0-9.+_-]+@`` then
a domain with a period, "recognised within any text node"). A backslash (``\\@``)
or an entity (``&#64;``) does not stop it: cmark-gfm joins adjacent text nodes
again before it looks for one. Written ``@<wbr>``: ``<wbr>`` (an element GitHub's
sanitizer keeps) has no text, so the address is shown and copied as it was, but
it stands in two text nodes, neither an address, and is no link. Disjoint from
:data:`MENTION` (which needs no such character before the ``@``). A domain may
begin with ``_`` (``ops@_evil.example`` is linked too), escaped ``\\_`` here by then."""


def cell(text: Any, limit: int = 160, table: bool = True) -> str:
    """Agent text shown as it is in Markdown, on one line: in a table cell or a
    list item (``table=True``) its markup is escaped (an answer holding
    ``![x](https://...)`` is never an image fetched from that address, nor
    ``[approve](https://...)`` a link, nor ``*`` emphasis), and it has no
    newlines and no HTML; with ``table=False``, on one line of raw HTML (a
    ``<summary>``), where Markdown is not read and a backslash would be shown
    as it is. Control characters are shown as their escapes (``\\x1b``), as
    on the terminal: the file is read with ``cat`` too. An ``@mention`` is
    none (:data:`MENTION`), in both."""
    import html  # only when a Markdown report is written

    s = printable(" ".join(str(text if text is not None else "").split()))
    s = ellipsis(s, limit)
    if table:
        s = MARKUP.sub(r"\\\1", s)
        s = AUTOLINK.sub(_unlinked, s)
    s = MENTION.sub("@&#8203;", html.escape(s, quote=False))
    return EMAIL.sub("@<wbr>", s) if table else s


def _unlinked(found: re.Match[str]) -> str:
    """``\\://`` for ``://``, ``www\\.`` for ``www.`` (:data:`AUTOLINK`)."""
    text = found.group()
    return "\\://" if text == "://" else f"{text[:-1]}\\."


def code(text: str) -> str:
    import html

    return f"<code>{html.escape(text)}</code>"


def fenced(text: str, limit: int = OUTPUT_CHARS) -> str:
    """A fenced block that the content's own backticks cannot close, its
    control characters but newline and tab shown as their escapes."""
    s = text if len(text) <= limit else current().head(text, limit, "\n... [{n} more chars]")
    s = printable(s)
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{s}\n{fence}"


def headline(report: dict[str, Any]) -> str:
    s = report["summary"]
    bad = status_counts({k: s[k] for k in failing(s)})  # "2 errors", as the line under it
    gate = s.get("gate")
    if s.get("pending") and exit_code(report) == 0:  # not finished: never a pass yet
        done = all_passed(s["decided"]) if s.get("decided") else "nothing was verified yet"
        return f"⏳ Rook: incomplete, {s['pending']} pending; {done}"
    if gate:
        missed = len(gate.get("missed") or ())
        if not missed and not bad and not s.get("decided"):  # met by nothing: not a pass
            return f"❔ Rook: nothing was verified (gate {gate['min_pass_rate']:g})"
        ungated = len(gate.get("ungated") or ())
        what = (
            f"{missed} scenario{'s' * (missed != 1)} missed the pass-rate gate"
            if missed
            else f"every {'decided ' * bool(ungated)}scenario reached the pass-rate gate"
        )
        if ungated:  # no decided run, no rate: never "reached"
            what += f"; {ungated} ungated (no decided run)"
        if s.get("infra_error"):  # fails the run, gate or not
            what += f"; {status_counts({'infra_error': s['infra_error']})}"
        mark = "✅" if exit_code(report) == 0 else "❌"
        return f"{mark} Rook: {what} ({gate['min_pass_rate']:g})"
    if bad:
        return f"❌ Rook: {bad}"
    if not s.get("decided"):
        return "❔ Rook: nothing was verified"
    return f"✅ Rook: {all_passed(s['decided'])}"


def all_passed(decided: int) -> str:
    if decided == 1:
        return "1 decided scenario run passed"
    return f"all {decided} decided scenario runs passed"


def listed(items: list[str], room: int) -> str:
    """``items`` joined with commas, as many as fit in ``room`` characters, then
    how many more there are."""
    shown: list[str] = []
    size = 0
    for item in items:
        size += len(item) + 2
        if size > room:
            more = len(items) - len(shown)
            return ", ".join(shown) + f" and {more} more (see the JSON report's `summary.gate`)"
        shown.append(item)
    return ", ".join(shown)


def summary_lines(report: dict[str, Any], room: int = MAX_BYTES // 8) -> list[str]:
    """The facts under the heading; a list of scenarios (the gate's) in ``room``
    characters at most."""
    run, s = report["run"], report["summary"]
    judge = (run.get("judge_profile") or {}).get("id")
    facts = [
        f"**Run** {code(run['id'])}",
        f"**Agent** {code(str(run.get('project')) + '/' + str(run.get('agent')))}",
        f"**Profile** {code(str((run.get('profile') or {}).get('id')))}",
    ]
    if judge:
        facts.append(f"**Judge** {code(judge)}")
    levels = continuity_levels(report)
    if levels:
        facts.append(f"**Ruhroh continuity** {', '.join(map(code, levels))}")
    counts = status_counts(s)
    lines = [
        " · ".join(facts),
        "",
        f"**Pass rate** {percent(s.get('pass_rate'))} of decided runs "
        f"({s.get('passed', 0)}/{s.get('decided', 0)}) · **Coverage** {percent(s.get('coverage'))}"
        f" ({s.get('decided', 0)} of {s.get('total', 0)} planned "
        f"run{'s' * (s.get('total') != 1)} decided)"
        f" · {counts or 'no runs'}",
    ]
    gate = s.get("gate")
    if gate and gate.get("missed"):
        missed = listed(
            [f"{code(m['id'])} {percent(m['pass_rate'])}" for m in gate["missed"]], room
        )
        lines += ["", f"**Missed --min-pass-rate {gate['min_pass_rate']:g}:** {missed}"]
    if gate and gate.get("ungated"):
        ungated = listed([code(u) for u in gate["ungated"]], room)
        lines += [
            "",
            f"**Ungated --min-pass-rate {gate['min_pass_rate']:g} (no decided run):** {ungated}",
        ]
    return lines


def _reasons(report: dict[str, Any]) -> dict[str, str]:
    """Per scenario id, the reason its row shows: the last run that did not pass,
    else its first run (one pass; equal reasons share one string)."""
    last_reason: dict[str, str] = {}
    shared: dict[str, str] = {}
    for e in report["scenarios"]:
        if e["status"] != "passed" or e["id"] not in last_reason:
            reason = e.get("reason") or ""
            last_reason[e["id"]] = shared.setdefault(reason, reason)
    return last_reason


def scenario_table(report: dict[str, Any]) -> list[str]:
    return list(iter_scenario_table(report))


def iter_scenario_table(report: dict[str, Any]) -> Iterator[str]:
    """The table's lines, one scenario at a time."""
    yield "| Scenario | Result | Passes | Pass rate (95 % CI) | Reason |"
    yield "|---|---|---|---|---|"
    yield from (row for _, row in iter_rows(report))


def iter_rows(report: dict[str, Any], order: list[int] | None = None) -> Iterator[tuple[bool, str]]:
    """Per scenario (in ``order``, indexes into its statistics, when given):
    whether every run passed, and its table row."""
    last_reason = _reasons(report)
    per = scenario_stats(report)
    for p in per if order is None else (per[i] for i in order):
        word = row_word(p["statuses"])
        result = f"{ICON.get(word, '')} {word}"
        if word != "flaky" and is_flaky(p["statuses"]):  # the report's flag: results differ
            result += f" {ICON['flaky']} flaky"
        rate = f"{percent(p['pass_rate'])} ({interval(p['wilson'])})" if p["decided"] else "n/a"
        # the public CLI's class and category, kept for reports (as JUnit and HTML show them)
        kind = " / ".join(cell(p[k]) for k in ("class", "category") if p.get(k))
        yield (
            word == "passed",
            f"| {code(p['id'])}{f' ({kind})' if kind else ''} | {result} | "
            f"{p['passed']}/{p['runs']} | "
            f"{rate} | {cell(last_reason.get(p['id']))} |",
        )


def details(entry: dict[str, Any]) -> str:
    rep = repeat_label(entry)
    icon = ICON.get(entry["status"], "")
    parts = [
        f"<details><summary>{icon} {code(entry['id'])}{rep} — {entry['status']}: "
        f"{cell(entry.get('reason'), 200, table=False)}</summary>",
        "",
    ]
    for c in entry.get("criteria", []):
        label = f" [{cell(c['id'])}]" if c.get("id") is not None else ""
        parts.append(
            f"- {ICON.get(c['status'], '')} {code(c['type'])}{label} {c['status']}: "
            f"{cell(c['reason'], 400)}"
        )
    for h in entry.get("hooks", []):
        if h.get("status") != "ok":
            parts.append(
                f"- 💥 hook {code(str(h['phase']))} {h['status']}: {cell(h.get('diagnosis'), 400)}"
            )
    parts += [f"- {ICON['flaky']} {cell(w, 400)}" for w in warning_lines(entry)]
    for t in entry.get("turns", []):
        parts += [
            "",
            f"**Turn {t.get('turn')}** input:",
            "",
            fenced(t.get("input") or ""),
            "",
            "output:",
            "",
            fenced(t.get("output") or ""),
        ]
        if t.get("calls") is not None:
            parts += ["", "calls:", "", fenced(json.dumps(t["calls"], ensure_ascii=False))]
        if t.get("evidence"):  # what the hook returned beyond the contract's keys
            parts += ["", "evidence:", "", fenced(json.dumps(t["evidence"], ensure_ascii=False))]
    if entry.get("collected"):  # what collect returned: a trace's address, its usage and calls
        parts += ["", "collected:", "", fenced(json.dumps(entry["collected"], ensure_ascii=False))]
    parts += ["", "</details>", "", ""]
    return "\n".join(parts)


def warning_item(entry: dict[str, Any]) -> str:
    """A run's warnings as one list item (what did not change its status)."""
    rep = repeat_label(entry)
    lines = warning_lines(entry)
    what = "; ".join(cell(w, 400) for w in lines[:3])
    if len(lines) > 3:
        what += f" (+{len(lines) - 3} more)"
    return f"- {ICON['flaky']} {code(entry['id'])}{rep} ({entry['status']}): {what}\n"


def render(report: dict[str, Any]) -> str:
    """The Markdown summary of a JSON report."""
    return "".join(iter_render(report))


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


def iter_render(
    report: dict[str, Any], limit: int = MAX_BYTES, measure: Callable[[str], int] = utf8_size
) -> Iterator[str]:
    """The Markdown summary in pieces (a table row, a run's details at a time),
    kept to ``limit`` as ``measure`` counts (UTF-8 bytes; characters for a
    comment), past which table rows (those that passed first), warnings and
    details are left out with a note."""
    size = 0  # written so far, as measure counts

    def out(text: str) -> str:
        nonlocal size
        size += measure(text)
        return text

    budget = limit - 400  # room kept for the notes on what was left out

    def fits(text: str) -> bool:
        return size + measure(text) <= budget

    lines = summary_lines(report, limit // 8)
    yield out(f"## {headline(report)}\n\n" + "\n".join(lines) + "\n\n")
    yield out(
        "| Scenario | Result | Passes | Pass rate (95 % CI) | Reason |\n|---|---|---|---|---|"
    )
    rows = [(ok, measure(row) + 1) for ok, row in iter_rows(report)]  # sizes only
    order: list[int] | None = None  # all fit: the table's own order
    if size + sum(n for _, n in rows) > budget:  # what did not pass first, then the passes
        order, room = [], budget - size
        for i, (_ok, n) in sorted(enumerate(rows), key=lambda r: r[1][0]):
            if n <= room:
                order.append(i)
                room -= n
    for _, row in iter_rows(report, order):
        yield out("\n" + row)
    yield out("\n")
    left_out = len(rows) - (len(rows) if order is None else len(order))
    if left_out:
        kept = set(order or ())
        failing = sum(1 for i, (ok, _) in enumerate(rows) if not ok and i not in kept)
        which = f"{failing} of them did not pass" if failing else "all passed"
        yield out(
            f"\n_{counted(left_out, 'more scenario', 'more scenarios')} not shown here "
            f"(size limit), {which}; see the JSON or HTML report._\n"
        )
    troubled, unlisted = 0, 0
    warned: list[str] = []
    warned_size = 0
    for e in report["scenarios"]:
        troubled += e["status"] != "passed"
        if e.get("warnings"):
            item = warning_item(e) if len(warned) < MAX_WARNINGS else ""
            item_size = measure(item)
            if item and size + warned_size + item_size <= budget - 20:  # and its heading
                warned.append(item)
                warned_size += item_size
            else:
                unlisted += 1
    if warned or unlisted:
        yield out("\n### Warnings\n\n" + "".join(warned))
        if unlisted:
            more = counted(unlisted, "more run", "more runs")
            yield out(f"\n_{more} with warnings; see the JSON or HTML report._\n")
    if not troubled:
        return
    yield out("\n### What did not pass\n\n")
    shown = 0
    for entry in report["scenarios"]:
        if entry["status"] == "passed":
            continue
        block = details(entry)
        if not fits(block):
            yield (
                f"\n_{troubled - shown} more not shown here (size limit); see the "
                "JSON or HTML report._\n"
            )
            return
        shown += 1
        yield out(block)


def write_markdown(report: dict[str, Any], path: Path) -> None:
    with atomic_file(path) as fh:
        for piece in iter_render(report):
            fh.write(piece)


def write_comment(report: dict[str, Any], path: Path) -> None:
    """The same page, kept to a pull-request comment's size (:data:`COMMENT_CHARS`)."""
    with atomic_file(path) as fh:
        for piece in iter_render(report, COMMENT_CHARS, len):
            fh.write(piece)


@hookimpl
def rook_register_reporters(register: Any) -> None:
    register("markdown", write_markdown)
    register("markdown-comment", write_comment)
