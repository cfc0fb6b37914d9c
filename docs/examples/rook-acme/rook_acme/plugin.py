"""The rook-acme plugin: one module, four extensions.

* a **transport**: hook entries ``acme: {desk: polite, mode: inprocess}`` reach
  the Acme desk in process, or ``mode: subprocess`` through
  ``python -m rook_acme.desk`` (with Rook's own safe subprocess runner);
* a **criterion**: ``acme_ticket: true`` (the answer cites an Acme ticket);
* a **judge**: ``judge: {name: acme-tone, min_score: 0.5}`` scores the tone;
* a **reporter**: ``--report acme-csv:PATH`` writes one CSV row per scenario run.

Rook finds this module through the entry point in ``pyproject.toml``
(``[project.entry-points.rook] acme = "rook_acme.plugin"``).
"""

from __future__ import annotations

import csv
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from rook_core.hookio import hook_result
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType, EvidenceView
from rook_core.models import FAILED, PASSED, UNVERIFIABLE, HookCall, HookResult, Verdict
from rook_core.process import run_process
from rook_core.transports import TransportSpec, saves_nothing

from . import desk

KEY = "acme"

# ---------------------------------------------------------------------------
# the transport
# ---------------------------------------------------------------------------


class AcmeEntry(Schema):
    """The value of an ``acme:`` hook entry."""

    class Meta:
        unknown = RAISE

    desk = fields.String(load_default="polite", validate=validate.OneOf(desk.DESKS))
    mode = fields.String(
        load_default="inprocess", validate=validate.OneOf(("inprocess", "subprocess"))
    )


def load_config(value: Any) -> dict[str, Any]:
    """Validate a hook entry's value; errors name the field (``hooks.execute.acme.desk``)."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ValidationError(
            "must be a mapping: {desk: polite|grumpy, mode: inprocess|subprocess}"
        )
    loaded: dict[str, Any] = AcmeEntry().load(value)
    return loaded


async def start(run: Any) -> dict[str, Any]:
    """Once per run: the shared resource (here, a count of turns per conversation)."""
    return {"turns": {}}


async def stop(resource: dict[str, Any]) -> None:
    resource.clear()


def _result(call: HookCall, data: dict[str, Any] | None, started: float) -> HookResult:
    ended = time.time()
    return HookResult(
        phase=call.phase,
        status="ok",
        seconds=round(ended - started, 6),
        started=started,
        ended=ended,
        data=data,
        turn=call.turn,
        transport=KEY,
    )


async def open_session(call: HookCall) -> HookResult:
    started = time.time()
    handle = f"acme-{call.session}"
    call.run.resources[KEY]["turns"][handle] = 0
    return _result(call, {"conversation": handle}, started)


async def execute(call: HookCall) -> HookResult:
    config = call.entry.config
    text = call.stdin or ""
    counts = call.run.resources[KEY]["turns"]
    if call.conversation is not None:
        counts[call.conversation] = counts.get(call.conversation, 0) + 1
    if config["mode"] == "subprocess":
        request = {"text": text, "turn": call.turn, "conversation": call.conversation}
        proc = await run_process(
            [sys.executable, "-m", "rook_acme.desk", config["desk"]],
            env=call.env,
            stdin=json.dumps(request).encode("utf-8"),
            timeout=call.timeout,
            stdout_cap=call.limits.stdout_bytes,
            stderr_cap=call.limits.stderr_bytes,
        )
        result: HookResult = hook_result(call, proc, required_json=True)
        return result
    started = time.time()
    return _result(
        call, desk.reply(config["desk"], text, call.turn or 1, call.conversation), started
    )


async def close_session(call: HookCall) -> HookResult:
    started = time.time()
    turns = call.run.resources[KEY]["turns"].pop(call.conversation, 0)
    return _result(call, {"turns_in_conversation": turns}, started)


def _mine(call: HookCall) -> bool:
    return call.entry.transport == KEY


@hookimpl
def rook_register_transports(register: Any) -> None:
    register(
        TransportSpec(
            key=KEY,
            load_config=load_config,
            description="the Acme support desk, in process or as a subprocess",
            start=start,
            stop=stop,
            saved_names=saves_nothing,  # it keeps no value for later phases
        )
    )


@hookimpl
def rook_session_open(call: HookCall) -> Any:
    return open_session(call) if _mine(call) else None


@hookimpl
def rook_transport_execute(call: HookCall) -> Any:
    return execute(call) if _mine(call) else None


@hookimpl
def rook_session_close(call: HookCall) -> Any:
    return close_session(call) if _mine(call) else None


# ---------------------------------------------------------------------------
# the criterion
# ---------------------------------------------------------------------------


class AcmeTicket(CriterionType):
    """``acme_ticket: true`` — the answer cites a ticket (``ACME-1234``); ``false``: it must not."""

    name = "acme_ticket"
    description = "the answer cites an Acme ticket number (ACME-1234)"
    PATTERN = re.compile(r"\bACME-\d{4}\b")

    def parse(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("must be true (a ticket is cited) or false (none is)")
        return value

    def evaluate(self, config: bool, view: EvidenceView) -> Verdict:
        if view.output is None:
            return Verdict(UNVERIFIABLE, "no output was recorded")
        found = self.PATTERN.search(view.output)
        ok = bool(found) == config
        what = f"cites {found.group(0)}" if found else "cites no ticket"
        return Verdict(PASSED if ok else FAILED, f"the answer {what}")


@hookimpl
def rook_register_criteria(register: Any) -> None:
    register(AcmeTicket())


# ---------------------------------------------------------------------------
# the judge
# ---------------------------------------------------------------------------

WARM = ("thank", "please", "happy to help", "sorry", "glad")
COLD = ("what now", "whatever", "not my problem")


class AcmeTone:
    """``judge: {name: acme-tone, min_score: 0.5}``: a score from 0 to 1 for the tone.

    Rook calls ``check(config)`` before anything runs and ``judge(config, view)``
    for each scenario run (``config`` is the criterion's mapping without ``name``).
    """

    def check(self, config: dict[str, Any]) -> str | None:
        unknown = set(config) - {"min_score"}
        if unknown:
            options = "option" if len(unknown) == 1 else "options"  # never "option(s)"
            return f"acme-tone: unknown {options} {', '.join(sorted(map(str, unknown)))}"
        ms = config.get("min_score", 0.5)
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= 1:
            return "acme-tone: min_score must be a number from 0 to 1"
        return None

    def score(self, text: str) -> float:
        lowered = text.casefold()
        warm = sum(word in lowered for word in WARM)
        cold = sum(word in lowered for word in COLD)
        return round(max(0.0, min(1.0, 0.5 + 0.25 * warm - 0.5 * cold)), 4)

    def __call__(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        if view.output is None:
            return Verdict(UNVERIFIABLE, "no output was recorded")
        score = self.score(view.output)
        wanted = float(config.get("min_score", 0.5))
        status = PASSED if score >= wanted else FAILED
        return Verdict(status, f"tone score {score:g} (min {wanted:g})", {"score": score})


@hookimpl
def rook_register_judges(register: Any) -> None:
    register("acme-tone", AcmeTone())


# ---------------------------------------------------------------------------
# the reporter
# ---------------------------------------------------------------------------

COLUMNS = ["scenario", "repeat", "status", "criteria_passed", "criteria", "reason"]


def write_csv(report: dict[str, Any], path: Path) -> None:
    """One row per scenario run of the JSON report (a stable interface)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for s in report["scenarios"]:
            criteria = s.get("criteria", [])
            passed = sum(c["status"] == PASSED for c in criteria)
            out.writerow(
                [s["id"], s.get("repeat_index", 1), s["status"], passed, len(criteria), s["reason"]]
            )


@hookimpl
def rook_register_reporters(register: Any) -> None:
    register("acme-csv", write_csv)
