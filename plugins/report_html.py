"""``--report html:PATH``: one self-contained page a person can read.

No network fetches: the styles are inline, the chart is inline SVG, and
there is no script. The page shows the verdict, pass rate and coverage, a
chart of each scenario's pass rate over its repeats (bar, 95 % Wilson
interval, one mark per run), a table of scenarios, and for every run its
turns, calls, usage, criteria verdicts (with a judge's answer) and hook
diagnoses. Runs that did not pass are expanded.

Rendered with Jinja2 with autoescaping on, so nothing an agent answered can
inject markup; characters HTML cannot show (control characters, lone
surrogates) become U+FFFD. The page is streamed to the file as the template
renders it, one run at a time; only the chart (at most 300 scenarios) is
built up front.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rook_core import __version__
from rook_core.hookspecs import hookimpl
from rook_core.redact import current
from rook_core.report import (
    BIDI,
    SHOWN,
    continuity_levels,
    exit_code,
    fair_shares,
    interval,
    percent,
    repeat_label,
    replaced,
    scenario_stats,
    text_share,
    warning_lines,
    warning_note,
)
from rook_core.reportio import MappedList, atomic_file
from rook_core.stats import is_flaky, outcome, row_word, totals

from .report_html_template import TEMPLATE

COLOURS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "error": "#a40e26",
    "stopped": "#bc4c00",
    "unverifiable": "#8250df",
    "not_runnable": "#6e7781",
    "infra_error": "#953800",
    "pending": "#afb8c1",
    "incomplete": "#afb8c1",
    "flaky": "#bf8700",
    "unverified": "#8250df",
}
CHART_LIMIT = 300
TEXT_LIMIT = 20_000
FILE_BYTES = 25_000_000
"""The agent texts a page holds in all, as written (escaped: ``<`` is ``&lt;``; in
UTF-8: ``日`` takes three bytes), shared among its runs (:class:`_Budget`)."""
LEAST = 200
"""The characters an agent text keeps however many runs share the page."""


def _cut(text: Any, limit: int = TEXT_LIMIT) -> str:
    s = (
        text
        if isinstance(text, str)
        else json.dumps(text, indent=2, ensure_ascii=False, default=str)
    )
    return s if len(s) <= limit else current().head(s, limit, "\n... [{n} more chars]")


def chart(per: list[dict[str, Any]]) -> dict[str, Any]:
    """Geometry of the pass-rate chart: one row per scenario."""
    shown = per[:CHART_LIMIT]
    label_w, bar_w, mark, row_h = 230, 360, 10, 24
    most = max((p["runs"] for p in shown), default=1)
    marks_w = min(most, 40) * (mark + 2)
    rows = []
    for i, p in enumerate(shown):
        y = 24 + i * row_h
        rate = p["pass_rate"]
        row = {
            "y": y,
            "label": p["id"] if len(p["id"]) <= 32 else p["id"][:31] + "…",
            "title": f"{p['id']}: {p['passed']}/{p['runs']} passed, "
            f"rate {percent(rate)}, 95% CI {interval(p['wilson'])}",
            "width": round(bar_w * (rate or 0), 1),
            "rate": percent(rate),
            "colour": COLOURS[outcome(p["statuses"])],
            "whisker": None,
            "marks": [
                {
                    "x": label_w + bar_w + 70 + j * (mark + 2),
                    "colour": COLOURS.get(s, "#999"),
                    # named as the runs below name it (JUnit's test case): flaky [2/4]
                    "title": f"{p['id']}"
                    f"{repeat_label({'repeat_index': j + 1, 'repeat_count': p['runs']})}: {s}",
                }
                for j, s in enumerate(p["statuses"][:40])
            ],
            "count": f"{p['passed']}/{p['runs']}",
        }
        if p["wilson"]:
            lo, hi = p["wilson"]
            row["whisker"] = {
                "x1": round(label_w + bar_w * lo, 1),
                "x2": round(label_w + bar_w * hi, 1),
            }
        rows.append(row)
    return {
        "rows": rows,
        "label_w": label_w,
        "bar_w": bar_w,
        "mark": mark,
        "row_h": row_h,
        "width": label_w + bar_w + 80 + marks_w,
        "height": 34 + len(rows) * row_h,
        "ticks": [{"x": label_w + bar_w * t / 4, "label": f"{t * 25}%"} for t in range(5)],
        "hidden": len(per) - len(shown),
    }


ENTRY: dict[str, Any] = {
    "name": "",
    "tags": [],
    "repeat_index": 1,
    "repeat_count": 1,
    "status": "pending",
    "reason": "",
    "turns": [],
    "criteria": [],
    "hooks": [],
    "warnings": [],
    "collected": None,
    "seconds": 0.0,
}
TURN: dict[str, Any] = {
    "turn": None,
    "input": "",
    "output": None,
    "usage": None,
    "calls": None,
    "evidence": {},
    "seconds": 0.0,
}
HOOK: dict[str, Any] = {
    "phase": "",
    "turn": None,
    "status": "",
    "exit_code": None,
    "seconds": 0.0,
    "diagnosis": None,
    "continuity": None,
}
CRITERION: dict[str, Any] = {"type": "", "turn": None, "status": "", "reason": ""}


class _Budget:
    """The page's agent texts held to :data:`FILE_BYTES` as written: each text is
    cut to its share of the characters (:func:`~rook_core.report.text_share`), and
    a run's texts further to fair shares of its part of the bytes (what is left
    of the budget over the runs left, given as each run is rendered:
    :meth:`runs`): a text that needs less than its share leaves the rest to the
    others, so one huge text (a criterion's evidence of ``<``, ``&lt;`` on the
    page) never leaves the texts after it a few characters."""

    def __init__(self, runs: int) -> None:
        self.share = text_share(runs, TEXT_LIMIT)
        self.runs_left, self.left = runs, FILE_BYTES

    def runs(self, entries: Any) -> Iterator[Any]:
        """``entries`` (the template's copies), each with its texts cut to their
        shares of its part of the budget."""
        for entry in entries:
            room = self.left // max(self.runs_left, 1)
            self.runs_left -= 1
            self.left -= self._fit(entry, room)
            yield entry

    def cut(self, text: Any) -> str:
        """A text as the page shows it (one :meth:`runs` has fitted is kept as it is)."""
        return _cut(text, self.share)

    def _fit(self, entry: dict[str, Any], room: int) -> int:
        """Cut the texts of ``entry`` in place to fair shares of ``room`` bytes as
        written; the bytes they take."""
        from markupsafe import escape  # Jinja's own, as the page writes it

        places = _texts(entry)
        whole = [_cut(holder[key], self.share) for holder, key in places]
        full = [len(str(escape(s)).encode("utf-8", "surrogatepass")) for s in whole]
        caps = fair_shares(full, max(room, 0))
        least = LEAST
        while True:
            shown, sizes = list(whole), list(full)
            for i, cap in enumerate(caps):
                if sizes[i] > cap and len(shown[i]) > least:
                    chars = max(least, len(shown[i]) * cap // sizes[i] * 9 // 10)
                    shown[i] = _cut(places[i][0][places[i][1]], chars)
                    sizes[i] = len(str(escape(shown[i])).encode("utf-8", "surrogatepass"))
            # so many texts that LEAST characters each pass the run's part of the
            # page (a run of many turns of HTML answers): fewer, the page's bound holds
            if sum(sizes) <= max(room, 0) or least == 0:
                break
            least = least * max(room, 0) // sum(sizes) * 9 // 10
        for (holder, key), text in zip(places, shown, strict=True):
            holder[key] = text
        return sum(sizes)


def _texts(e: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Where the texts of a run (an :func:`_entry` copy) that the page shows are:
    the reasons, a criterion's id (a label a scenario gives it) and evidence, each
    turn's input, output, calls, usage (any object of numbers a hook returned)
    and other evidence, what was collected, the hooks' diagnoses."""
    places: list[tuple[dict[str, Any], str]] = [(e, "reason")] if e.get("reason") else []
    for c in e["criteria"]:
        places += [(c, key) for key in ("id", "reason", "evidence") if c.get(key)]
    for t in e["turns"]:
        places += [(t, key) for key in ("input", "calls", "usage", "evidence") if t.get(key)]
        places += [(t, "output")] if t.get("output") is not None else []
    places += [(e, "collected")] if e.get("collected") else []
    places += [(h, "diagnosis") for h in e["hooks"] if h.get("diagnosis")]
    return places


def _entry(e: dict[str, Any]) -> dict[str, Any]:
    """A report entry with every key the template reads (reports written by other tools)."""
    return {
        **ENTRY,
        **e,
        "turns": [{**TURN, **t, "usage": _usage(t.get("usage"))} for t in e.get("turns") or []],
        "hooks": [{**HOOK, **h} for h in e.get("hooks") or []],
        "criteria": [{**CRITERION, **c} for c in e.get("criteria") or []],
    }


def _usage(usage: Any) -> str | None:
    """A turn's usage as the page shows it, on one line (``{"input": 12, "output": 3}``):
    a text, cut to its share as the others are (a hook may return thousands of counters)."""
    if usage is None:
        return None
    return json.dumps(usage, sort_keys=True, ensure_ascii=False, default=str)


def _row(p: dict[str, Any]) -> dict[str, Any]:
    """A per-scenario aggregate with what the page shows of it (a copy: the
    caller's report is never changed)."""
    rate = f"{percent(p['pass_rate'])} ({interval(p['wilson'])})" if p["decided"] else "n/a"
    word = row_word(p["statuses"])
    # the flag the "flaky" count sums (is_flaky), shown beside an outcome that
    # is not already "flaky": failed once and errored once never passed, but its
    # results differ
    also_flaky = word != "flaky" and is_flaky(p["statuses"])
    return {**p, "outcome": word, "also_flaky": also_flaky, "rate_text": rate}


def context(report: dict[str, Any]) -> dict[str, Any]:
    """What the template reads. The runs and the per-scenario rows are read-only
    lists made on demand, so the page is rendered one run at a time."""
    report = {**report, "scenarios": MappedList(report["scenarios"], _entry)}
    run, summary = report["run"], report["summary"]
    per = MappedList(scenario_stats(report), _row)
    gate = summary.get("gate")
    if exit_code(report):
        verdict = "failed"
    elif summary.get("pending"):  # runs not finished yet: never a pass
        verdict = "incomplete"
    else:
        # a gate met by no decided run verified nothing: never "passed"
        verdict = "passed" if summary.get("decided") else "unverifiable"
    started = run.get("started")
    budget = _Budget(len(report["scenarios"]))
    return {
        "report": report,
        "run": run,
        "summary": summary,
        "per": per,
        "chart": chart(per),
        "verdict": verdict,
        "colours": COLOURS,
        "version": __version__,
        # each text's share of the page's budget (20,000 characters up to 500 runs,
        # and its run's part of FILE_BYTES as written)
        "cut": budget.cut,
        "runs": budget.runs,
        "percent": percent,
        "gate": gate,
        "repeats": summary.get("repeats") or totals(per),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
        if isinstance(started, (int, float))
        else "",
        "statuses": list(SHOWN),
        # run.continuity (also when no hook ran), then the turns' and hooks'
        # (a run that recorded none): what the table and the Markdown facts show
        "continuity": continuity_levels(report),
    }


# Characters an HTML page cannot show: control characters other than tab, line
# feed and carriage return (parse errors; a NUL is dropped by browsers), C1
# controls, the noncharacters U+FFFE and U+FFFF, and lone surrogates (half a
# character, which UTF-8 cannot even encode). Each becomes U+FFFD, as in JUnit.
# A bidi control (U+202E would show the rest of a line backwards) is shown as its
# escape (\u202e), as on the terminal.
_UNSHOWABLE = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff" + BIDI + "]"


@functools.cache
def _unshowable() -> re.Pattern[str]:
    return re.compile(_UNSHOWABLE)


def _showable(value: Any) -> Any:
    """What the page shows of a value the template writes (Jinja's ``finalize``:
    before escaping, so Markup stays Markup)."""
    if not isinstance(value, str):
        return value
    cleaned = _unshowable().sub(replaced, value)
    if cleaned == value:
        return value
    return type(value)(cleaned) if hasattr(value, "__html__") else cleaned  # Markup stays


@functools.cache
def _template() -> Any:
    """The compiled template; jinja2 loads only when an HTML report is written."""
    from jinja2 import Environment, StrictUndefined

    env = Environment(
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_showable,
    )
    env.globals.update(
        warning_lines=warning_lines, warning_note=warning_note, repeat_label=repeat_label
    )
    return env.from_string(TEMPLATE)


def render(report: dict[str, Any]) -> str:
    """The HTML page of a JSON report."""
    return _template().render(**context(report))


def iter_html(report: dict[str, Any]) -> Iterator[str]:
    """The HTML page in pieces, as the template renders it (one run at a time)."""
    return _template().generate(**context(report))


def write_html(report: dict[str, Any], path: Path) -> None:
    with atomic_file(path) as fh:
        for piece in iter_html(report):
            fh.write(piece)


@hookimpl
def rook_register_reporters(register: Any) -> None:
    register("html", write_html)
