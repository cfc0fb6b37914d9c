"""A scenario run's record across attempts and invocations: made new, read
back to resume (the phases still to run), tried again after an infrastructure
failure (what the failed attempt left set aside), and checked for a scenario
file edited meanwhile. :class:`Attempts` is the part of
:class:`~rook_core.engine.Engine` that does it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from .errors import RunStoreError, os_error_text
from .models import SCENARIO_PHASES, RunContext, Scenario, ScenarioRun
from .redact import MARK, Redactor
from .store import RunDir


def phases_missing_before(record: dict[str, Any], phases: Iterable[str]) -> list[str]:
    """The phases a scenario run has not done that come before the first of
    ``phases`` it still needs: a selection resumed across a hole (``--phases
    judge`` before collect ran) cannot go on for it."""
    done = record.get("phases_done") or []
    todo = [p for p in SCENARIO_PHASES if p in phases and p not in done]
    if not todo:
        return []
    return [p for p in SCENARIO_PHASES[: SCENARIO_PHASES.index(todo[0])] if p not in done]


ATTEMPT_KEYS = ("reason", "started", "ended", "seconds", "hooks", "turns", "attempts")
"""What ``infra_attempts`` keeps of a scenario run the infrastructure failed."""


def snapshot(record: dict[str, Any]) -> dict[str, Any]:
    """A one-level copy of a record: phases only append to its lists and set its
    keys, so it is a faithful snapshot to go back to (and a cheap one)."""
    return {k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in record.items()}


class Attempts:
    """The engine's record keeping (mixed into :class:`~rook_core.engine.Engine`,
    which sets these attributes)."""

    run_dir: RunDir
    ctx: RunContext
    phases: list[str]
    redactor: Redactor
    resume: str
    fresh: bool
    prepare_ended: float | None
    store_scenario: Callable[[ScenarioRun, dict[str, Any]], None]

    def _finished(self, key: str) -> bool:
        """Whether scenario run ``key`` has its final record (an unreadable one is
        left for the run itself to refuse)."""
        try:
            return bool((self.run_dir.load_scenario(key) or {}).get("final"))
        except RunStoreError:
            return False

    @staticmethod
    def scenario_block(s: Scenario) -> dict[str, Any]:
        """The definition a record says its scenario run was judged by."""
        return {
            "id": s.id,
            "name": s.name,
            "tags": s.tags,
            "turns": s.turns,
            "criteria": [c.raw for c in s.criteria],
            "content_hash": s.content_hash,
            "file": str(s.path) if s.path else None,
            **({"extra": s.extra} if s.extra else {}),
        }

    def new_record(self, sr: ScenarioRun) -> dict[str, Any]:
        return {
            "key": sr.key,
            "scenario": self.scenario_block(sr.scenario),
            "repeat_index": sr.repeat_index,
            "repeat_count": sr.repeat_count,
            "session": f"{self.ctx.id}-{sr.key}-{os.urandom(4).hex()}",
            "conversation": None,
            "phases_done": [],
            "hooks": [],
            "turns": [],
            "collected": None,
            "status": None,
            "reason": "",
            "criteria": [],
            "observed": {},
            "started": None,
            "ended": None,
            "seconds": 0.0,
            "last_phase_end": self.prepare_ended,
        }

    def load_record(self, sr: ScenarioRun) -> tuple[dict[str, Any], list[str]]:
        """The record of one scenario run and the phases still to run for it (driver side).

        An empty list means nothing is to run: it finished in an earlier
        invocation, no selected phase is missing, or earlier phases are missing
        (``reason`` says so).
        """
        # a run this invocation created has no records yet: skip the lookup
        existing = None if self.fresh else self.run_dir.load_scenario(sr.key)
        record = existing or self.new_record(sr)
        if record.get("final"):
            return record, []  # finished in an earlier invocation: never repeated
        if existing is not None:
            _note_changed_definition(record, self.scenario_block(sr.scenario))
            _drop_redacted_handle(record)
        if record.get("blocked") == "prepare":  # never started: prepare failed before it
            if "prepare" not in self.phases:
                return record, []  # as it was, until an invocation prepares again
            record = self.new_record(sr)
        earlier = record if record.get("infra") else None
        if earlier is not None:
            record = self._retry(sr, earlier)
        todo = [p for p in SCENARIO_PHASES if p in self.phases and p not in record["phases_done"]]
        if not todo:
            return record, []
        missing_before = phases_missing_before(record, self.phases)
        if missing_before:
            if earlier is not None:
                return earlier, []  # as it was: an infra_error a later resume tries again
            record["reason"] = (
                f"phases {','.join(missing_before)} have not run for this scenario; "
                "run them first (or resume without --phases)"
            )
            self.store_scenario(sr, record)  # the report reads the reason from the record
            return record, []
        if earlier is not None and not self._set_aside_attempt(sr, record):
            return earlier, []  # as it was: an infra_error a later resume tries again
        record["reason"] = ""  # what it said while it waited ('interrupted; ...') no longer holds
        return record, todo

    def _retry(self, sr: ScenarioRun, earlier: dict[str, Any]) -> dict[str, Any]:
        """A fresh record for a scenario run the infrastructure failed (an
        ``infra_error``: untested, so a resume runs it again from the start);
        what that attempt recorded is kept in ``infra_attempts``."""
        record = self.new_record(sr)
        attempt = {k: earlier[k] for k in ATTEMPT_KEYS if earlier.get(k) is not None}
        record["infra_attempts"] = [*(earlier.get("infra_attempts") or []), attempt]
        return record

    def _set_aside_attempt(self, sr: ScenarioRun, record: dict[str, Any]) -> bool:
        """Set aside the files the attempt ``record`` retries left in its state
        directory, only once the retry is about to run (an invocation that runs
        none of its phases leaves them where they are): its ``infra_attempts``
        entry names where they went (``state``), and the record is written at
        once, so that it names them however this invocation ends. False (and a
        warning naming the directory) when they cannot be moved: the retry would
        not start as the first attempt did, so it does not run."""
        try:
            aside = self.set_aside_state(sr.key)
        except OSError as exc:
            sys.stderr.write(
                self.redactor.text(
                    f"rook: warning: {sr.name}: not tried again: cannot set aside the files "
                    f"its failed attempt left in its state directory ({os_error_text(exc)}); "
                    f"move them away, then {self.resume} tries it again"
                )
                + "\n"
            )
            return False
        if aside is not None:
            record["infra_attempts"][-1]["state"] = aside
            self.run_dir.save_scenario(sr.key, record)
        return True

    def set_aside_state(self, key: str) -> str | None:
        """Move what an earlier attempt of scenario run ``key`` left in its state
        directory (``ROOK_STATE_DIR``) to ``state/<key>.attempt-N`` (N: 1, 2, ...
        in the order attempts were set aside) and leave an empty one, so that a
        retried attempt starts as the first did and nothing is lost. Returns
        where the files went (relative to the run directory), or ``None`` when
        there were none."""
        d = self.run_dir.state / key
        try:
            with os.scandir(d) as entries:
                if next(entries, None) is None:
                    return None
        except (FileNotFoundError, NotADirectoryError):
            return None
        n = 1
        while (self.run_dir.state / f"{key}.attempt-{n}").exists():
            n += 1
        aside = self.run_dir.state / f"{key}.attempt-{n}"
        os.rename(d, aside)
        d.mkdir()
        return f"state/{aside.name}"


def _drop_redacted_handle(record: dict[str, Any]) -> None:
    """A conversation handle that held the value of an env variable is on disk
    only redacted (``c-[redacted:TOKEN]``): a later invocation of the run
    cannot give it back, so its hooks get no ``ROOK_CONVERSATION`` (never the
    redacted text as if it were the handle), and the record says why."""
    handle = record.get("conversation")
    if not handle or MARK not in handle:
        return
    record["conversation"] = None
    record.setdefault("warnings", []).append(
        f"the conversation handle ({handle}) held the value of a profile env variable, so the "
        "record keeps it redacted and the phases run by this invocation get no "
        "ROOK_CONVERSATION; run the scenario's phases in one invocation to keep the handle"
    )


def _note_changed_definition(record: dict[str, Any], now: dict[str, Any]) -> None:
    """A scenario file edited between two invocations of one run (``--phases``,
    or a resume): what is still to run, judging included, uses the definition
    as it is now, so the record says so, with a warning, rather than listing
    the criteria it started with beside verdicts of others."""
    before = record.get("scenario") or {}
    old = before.get("content_hash")
    if not old or old == now["content_hash"]:
        return
    what = [k for k in ("turns", "criteria") if before.get(k) != now.get(k)] or ["definition"]
    record["scenario"] = now
    record.setdefault("warnings", []).append(
        f"the scenario's {' and '.join(what)} changed after this run started it (content "
        f"hash {old} -> {now['content_hash']}); the phases still to run use the file as it is now"
    )


__all__ = ["ATTEMPT_KEYS", "Attempts", "phases_missing_before", "snapshot"]
