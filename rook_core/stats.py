"""Statistics over repeats: per-scenario pass counts, pass^N, pass@N, Wilson intervals.

A scenario run with ``repeat: N`` (or ``--repeat N``) yields N records. This
module folds them into one aggregate per scenario:

* ``passed``/``decided``: passes among the runs that reached a verdict
  (passed, failed, error, stopped); ``unverifiable``, ``not_runnable`` and
  ``infra_error`` runs are never counted as passes, nor as decided;
* ``pass_all`` (pass^N): every one of the N planned runs passed;
* ``pass_any`` (pass@N): at least one run passed;
* ``wilson``: the 95 % Wilson score interval of the pass rate over decided runs;
* ``flaky``: the runs' results differ (:func:`is_flaky`): their statuses
  are not all the same. ``not_runnable`` and ``pending`` runs are not results
  (nothing ran, or it has not finished) and are left out; every other status
  (passed, failed, unverifiable, error, stopped) is one.

Everything here is pure: it reads report entries (dicts) and returns dicts;
:class:`Scenarios` folds entries one at a time, keeping only small values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from .models import (
    DECIDED,
    INFRA_ERROR,
    NOT_RUNNABLE,
    PASSED,
    SCENARIO_STATUSES,
)
from .reportio import LazyList

NOT_RESULTS = frozenset({NOT_RUNNABLE, INFRA_ERROR, "pending"})
"""Statuses of runs that produced no result of the agent's: they never make a scenario flaky."""
STATUSES = (*SCENARIO_STATUSES, "pending")
Z95 = 1.959963984540054
EXTRA_KEYS = ("class", "category", "feature_id")
_STATUS = {s: s for s in STATUSES}  # one string object per status, shared by every scenario


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for ``passes`` successes in ``n`` trials.

    Unlike the normal approximation it stays inside [0, 1] and is sensible for
    small ``n`` and for rates of 0 or 1. ``None`` when ``n`` is 0.
    """
    if n <= 0:
        return None
    if not 0 <= passes <= n:
        raise ValueError(f"passes must be between 0 and n ({passes} of {n})")
    p = passes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, round(centre - half, 4)), min(1.0, round(centre + half, 4)))


def aggregate(scenario_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold the report entries of one scenario (its repeats) into one aggregate."""
    first = entries[0] if entries else {}
    hashes = {e.get("content_hash") for e in entries}
    return _aggregate(
        scenario_id,
        first.get("name"),
        first.get("content_hash"),
        kept_extra(first),
        [e["status"] for e in entries],
        hashes if len(hashes) > 1 else None,
    )


def kept_extra(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The keys of an entry's ``extra`` that its scenario's aggregate carries."""
    extra = entry.get("extra") or {}
    kept = {k: extra[k] for k in EXTRA_KEYS if k in extra}
    return kept or None


def _aggregate(
    scenario_id: str,
    name: Any,
    content_hash: Any,
    extra: dict[str, Any] | None,
    statuses: list[str],
    hashes: set[Any] | None = None,
) -> dict[str, Any]:
    """``hashes``: the content hashes of its runs when they differ (its repeats ran
    different definitions: shards of other commits, a resume after an edit)."""
    counts = {s: 0 for s in STATUSES}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    decided = sum(counts[s] for s in DECIDED)
    passed = counts[PASSED]
    runs, pass_all, pass_any, flaky = _flags(statuses)
    interval = wilson(passed, decided)
    differ = sorted(h for h in hashes if isinstance(h, str)) if hashes else []
    return {
        "id": scenario_id,
        "name": name,
        "content_hash": content_hash,
        **({"content_hashes": differ} if len(differ) > 1 else {}),
        **(extra or {}),
        "runs": runs,
        "decided": decided,
        **{s: counts[s] for s in STATUSES if s != "pending"},
        "pending": counts["pending"],
        "pass_rate": round(passed / decided, 4) if decided else None,
        "pass_all": pass_all,
        "pass_any": pass_any,
        "wilson": list(interval) if interval else None,
        "flaky": flaky,
        "statuses": statuses,
    }


class _Scenario:
    """What one scenario's aggregate needs, and no more: a few strings and its statuses."""

    __slots__ = ("id", "name", "content_hash", "extra", "first", "runs", "hashes")

    def __init__(self, sid: str, entry: dict[str, Any], index: int) -> None:
        self.id = sid
        self.first = index
        self.hashes: set[Any] | None = None  # every run's, once one differs (rare)
        self._take(entry)
        self.runs: Any = _STATUS.get(entry["status"], entry["status"])  # one run: its status

    def _take(self, entry: dict[str, Any]) -> None:
        name = entry.get("name")
        self.name = self.id if name == self.id else name
        self.content_hash = entry.get("content_hash")
        self.extra = kept_extra(entry)

    def add(self, entry: dict[str, Any], index: int) -> None:
        status = _STATUS.get(entry["status"], entry["status"])
        if isinstance(self.runs, str):
            self.runs = [(self.first, self.runs)]
        self.runs.append((index, status))
        digest = entry.get("content_hash")
        if self.hashes is not None:
            self.hashes.add(digest)
        elif digest != self.content_hash:
            self.hashes = {self.content_hash, digest}
        if index < self.first:  # the lowest repeat index names the scenario
            self.first = index
            self._take(entry)

    def statuses(self) -> list[str]:
        if isinstance(self.runs, str):
            return [self.runs]
        return [s for _, s in sorted(self.runs, key=lambda r: r[0])]

    def aggregate(self) -> dict[str, Any]:
        return _aggregate(
            self.id, self.name, self.content_hash, self.extra, self.statuses(), self.hashes
        )


class Aggregates(LazyList):
    """The per-scenario aggregates of a :class:`Scenarios` fold, made on demand."""

    __slots__ = ("_items",)

    def __init__(self, items: list[_Scenario]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def _item(self, i: int) -> dict[str, Any]:
        return self._items[i].aggregate()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for item in self._items:
            yield item.aggregate()

    def totals(self) -> dict[str, Any]:
        """:func:`totals` of these aggregates, from the statuses alone (without
        making each aggregate: the report makes them once, to write them)."""
        return _totals(_flags(s.statuses()) for s in self._items)


class Scenarios:
    """Folds report entries, one at a time, into per-scenario aggregates.

    Keeps a few small values per scenario (its id, name, content hash and the
    status of each run), never the entries, so a report of any size is
    summarised in one pass in little memory.
    """

    def __init__(self) -> None:
        self._by_id: dict[str, _Scenario] = {}

    def add(self, entry: dict[str, Any]) -> None:
        sid = entry["id"]
        index = entry.get("repeat_index") or 0
        known = self._by_id.get(sid)
        if known is None:
            self._by_id[sid] = _Scenario(sid, entry, index)
        else:
            known.add(entry, index)

    def aggregates(self) -> Aggregates:
        """One aggregate per scenario id, in the order scenarios first appeared."""
        return Aggregates(list(self._by_id.values()))


def by_scenario(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One aggregate per scenario id, in the order scenarios first appear (a
    read-only list whose aggregates are made on demand)."""
    fold = Scenarios()
    for e in entries:
        fold.add(e)
    return fold.aggregates()


def totals(per_scenario: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Scenario-level counts: how many scenarios passed every run, any run, were flaky."""
    if isinstance(per_scenario, Aggregates):
        return per_scenario.totals()
    return _totals(
        (s["runs"], bool(s["pass_all"]), bool(s["pass_any"]), bool(s["flaky"]))
        for s in per_scenario
    )


def _flags(statuses: list[str]) -> tuple[int, bool, bool, bool]:
    """runs, pass_all, pass_any and flaky of one scenario's statuses, as
    :func:`_aggregate` has them."""
    runs = len(statuses)
    passed = statuses.count(PASSED)
    return runs, runs > 0 and passed == runs, passed > 0, is_flaky(statuses)


def is_flaky(statuses: Iterable[str]) -> bool:
    """Whether the repeat runs' results differ: the statuses of the runs that
    produced a result (all but ``not_runnable`` and ``pending``) are not all
    the same. ``passed, unverifiable`` and ``failed, error`` are flaky;
    ``passed, not_runnable`` is not. The report's ``flaky`` flag; ``rook
    diff`` sums runs up by pass or not (:func:`outcome`)."""
    first = None
    for status in statuses:
        if status in NOT_RESULTS:
            continue
        if first is None:
            first = status
        elif status != first:
            return True
    return False


def _totals(flags: Iterable[tuple[int, bool, bool, bool]]) -> dict[str, Any]:
    n = pass_all = pass_any = flaky = max_runs = 0
    for runs, all_, any_, flaky_ in flags:
        n += 1
        pass_all += all_
        pass_any += any_
        flaky += flaky_
        max_runs = max(max_runs, runs)
    return {
        "scenarios": n,
        "pass_all": pass_all,
        "pass_any": pass_any,
        "flaky": flaky,
        "max_runs": max_runs,
    }


def gate(per_scenario: Iterable[dict[str, Any]], min_pass_rate: float) -> dict[str, Any]:
    """Apply ``--min-pass-rate``: every scenario with a decided run must reach the rate.

    A scenario with no decided run has no rate; it is listed as ``ungated``
    (verification coverage shows it), never as a pass.
    """
    missed, ungated = [], []
    for s in per_scenario:
        if not s["decided"]:
            ungated.append(s["id"])
        elif s[PASSED] / s["decided"] < min_pass_rate:  # the exact rate, not the rounded one
            missed.append(
                {
                    "id": s["id"],
                    "pass_rate": s["pass_rate"],
                    "passed": s[PASSED],
                    "decided": s["decided"],
                }
            )
    return {"min_pass_rate": min_pass_rate, "missed": missed, "ungated": ungated}


def row_word(statuses: list[str]) -> str:
    """The result a report's scenario table shows: :func:`outcome`, or, when
    every run had the same status and it is not a pass, that status (``error``,
    ``stopped``, ``not_runnable``...): a scenario whose hook crashed reads
    ``error`` there, as in its details."""
    word = outcome(statuses)
    if word in ("failed", "unverified") and len(set(statuses)) == 1:
        return statuses[0]
    return word


def outcome(statuses: list[str]) -> str:
    """One word for a scenario's runs, for ``rook diff``: ``flaky`` when some
    passed and some did not; else ``passed`` (every run that produced a
    result passed), ``failed`` (none passed, and one failed, errored or
    stopped) or ``unverified`` (unverifiable every time, or no run produced a
    result). A scenario that failed once and errored once never passed: it is
    ``failed`` here, though the report flags it flaky (:func:`is_flaky`: its
    results differ)."""
    results = [s for s in statuses if s not in NOT_RESULTS]
    if PASSED in results:
        return "passed" if all(s == PASSED for s in results) else "flaky"
    if any(s in DECIDED for s in results):
        return "failed"
    if not results and "pending" in statuses:
        return "pending"  # the run was cut off or split before it: no result yet
    return "unverified"
