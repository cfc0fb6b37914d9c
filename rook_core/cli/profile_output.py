"""How ``rook profile`` commands show a probe: phases, answer, capabilities.

Everything passes the command's redactor before it is printed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tabulate import tabulate

from ..profile_probe import Observation, compare_capabilities, phase_line
from ..report import ellipsis, printable

ANSWER_CHARS = 400
VERDICTS = {
    "ok": "",
    "optimistic": "OPTIMISTIC: declared but not observed (unsafe: criteria would "
    "trust evidence that never came)",
    "unclaimed": "observed but not declared (rook profile test --update writes it)",
}


def cut(text: Any, limit: int) -> str:
    """``text`` (redacted: from the probe's record) on one line, cut to ``limit``
    characters ending with ``...``; a redaction marker the cut would split is left
    out whole (``...``, never ``[redacted:API_TO...``)."""
    return ellipsis(printable(" ".join(str(text or "").split())), limit, "...")


def phases_table(obs: Observation) -> str:
    rows = []
    for hook in obs.hooks:
        line = phase_line(hook)
        phase = line["phase"] + (f" {line['turn']}" if line["phase"] == "execute" else "")
        rows.append([phase, line["status"], f"{line['seconds']:.3f}", cut(line["diagnosis"], 90)])
    if not rows:
        return "  (no hook ran)"
    table = tabulate(  # seconds as written ("0.100"), right-aligned
        rows,
        headers=["phase", "status", "seconds", "diagnosis"],
        tablefmt="simple",
        disable_numparse=True,
        colalign=("left", "left", "right", "left"),
    )
    return "\n".join("  " + ln for ln in table.splitlines())


EMPTY_WHY = {
    # a Ruhroh wrapper or connector gets the goal in RUHROH_MESSAGE; its stdin is empty
    "ruhroh": "the wrapper reported none (it gets the goal in RUHROH_MESSAGE; the answer is "
    "its first non-empty output, agent_reply, message, summary, result, response, answer or "
    "text field, else the lines it printed before its final JSON line)",
    # an http: entry has no standard input: the goal goes where the request puts {{goal}}
    "http": "the endpoint answered none (the answer is the HTTP response body, or what "
    "extract.output reads from it: check that the request sends {{goal}} and that "
    "extract.output points at the reply)",
    "connector": "the connector's run_turn returned none (no output, agent_reply, message, "
    "summary, result, response, answer or text; a ruhroh-command wrapper gets the goal in "
    "RUHROH_MESSAGE, and its answer is else the lines it printed before its final JSON line)",
}


def _why_empty(obs: Observation) -> str:
    """Why an answer that is empty may be so, by the transport that gave it."""
    execute = next((h for h in obs.hooks if h.get("phase") == "execute"), {})
    key = str(execute.get("transport") or "")
    if key in EMPTY_WHY:
        return EMPTY_WHY[key]
    if key not in ("", "script"):  # a plugin's transport: no standard input to speak of
        return (
            f"the agent said nothing to the goal (its {printable(key)}: entry gave an empty output)"
        )
    return (
        "the agent said nothing to the goal (it comes on standard input: a command "
        "that reads its arguments instead never sees it)"
    )


def show_observation(
    obs: Observation, say: Callable[[str], None], title: str = "", failed: str = ""
) -> None:
    """The phases with their times, then the answer or the diagnosis.

    ``failed`` says why the test failed although every hook worked (an
    optimistic claim): the first line then says FAILED, as the exit code does.
    """
    head = f"{title}: " if title else ""
    kind = "" if obs.ok or obs.problem in (None, "failed") else f" ({obs.problem})"  # no "(failed)"
    if obs.ok and failed:
        say(f"{head}FAILED ({failed})")
    else:
        say(f"{head}{'ok' if obs.ok else 'FAILED'}{kind}")
    say(phases_table(obs))
    if obs.evidence_complete:  # also when only close failed: execute answered
        say(f"  answer: {cut(obs.answer, ANSWER_CHARS)!s}")
        if isinstance(obs.answer, str) and not obs.answer.strip():  # ok, yet it said nothing
            say(f"  the answer is empty: {_why_empty(obs)}")
        if obs.conversation:
            say(f"  conversation: {printable(obs.conversation)}")
    if not obs.ok:
        say(f"  diagnosis: {printable(obs.diagnosis)}")
        for ref in obs.missing:
            empty = " (set, but empty)" if ref.get("empty") else ""
            say(f"    {ref['variable']}: {ref['purpose']}{empty}")
    for warning in obs.warnings:  # what rook run warns of, and what only a test checks
        if not obs.ok and warning == obs.diagnosis:  # a failed close: said once
            continue
        say(f"  warning: {printable(warning)}")
    for note in obs.kills:  # a hook left it running (a run records it in run.json: kills)
        say(f"  left running by a hook, killed at the end: {note}")
    seen = [c for c, v in obs.observed.items() if v]
    say(f"  observed capabilities: {', '.join(seen) or 'none'}")


def capabilities_table(
    declared: dict[str, Any], observed: dict[str, bool]
) -> tuple[str, list[str]]:
    """The comparison table, and the capabilities claimed optimistically."""
    rows, optimistic = [], []
    for row in compare_capabilities(declared, observed):
        if row["verdict"] == "optimistic":
            optimistic.append(row["capability"])
        rows.append(
            [
                row["capability"],
                "yes" if row["declared"] else "no",
                "yes" if row["observed"] else "no",
                VERDICTS[row["verdict"]],
            ]
        )
    headers = ["capability", "declared", "observed", "note"]
    if not any(r[-1] for r in rows):  # every claim holds: no column of nothing
        headers, rows = headers[:-1], [r[:-1] for r in rows]
    table = tabulate(rows, headers=headers, tablefmt="simple")
    return "\n".join("  " + ln for ln in table.splitlines()), optimistic
