"""History: list past runs, re-read their reports, compare two runs.

The run directories are the truth (SPEC §10). For speed, each run also gets a
small derived ``summary.json`` (written next to ``report.json``): listing a
thousand runs reads a thousand small files, never the reports. A summary that
is missing, older than its ``report.json`` or of an older format is rebuilt
from the report (and rewritten); a run with no report yet (in progress, or
killed) is summarised from its manifest. Deleting every ``summary.json`` loses
nothing.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import shapes, stats
from .errors import (
    ConfigError,
    DamagedRecord,
    ProfileError,
    ProfileNotFound,
    RunStoreError,
    counted,
)
from .known_secrets import secret_names
from .report import COUNTED, PENDING, Tally, exit_code, scenario_entry, write_report
from .reportfile import read_report, rebuild_hint
from .store import RUN_FILE, atomic_write, dumps, not_a_folder, planned_records, read_json

SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.json"
SUMMARY_VERSION = 1


# -- summaries ---------------------------------------------------------------


def summary_of(report: dict[str, Any]) -> dict[str, Any]:
    """The small per-run summary ``rook runs`` lists."""
    run, s = report["run"], report["summary"]
    totals = s.get("repeats") or stats.totals(stats.by_scenario(report["scenarios"]))
    judge = run.get("judge_profile") or {}
    return {
        "summary_version": SUMMARY_VERSION,
        "id": run["id"],
        "started": run.get("started"),
        "profile": (run.get("profile") or {}).get("id"),
        "judge_profile": judge.get("id"),
        "phases": run.get("phases", []),
        "complete": "judge" in run.get("phases", []) and not s.get(PENDING),
        "counts": {k: s.get(k, 0) for k in (*COUNTED, PENDING)},
        "total": s.get("total"),
        "decided": s.get("decided"),
        "pass_rate": s.get("pass_rate"),
        "coverage": s.get("coverage"),
        "scenarios": totals["scenarios"],
        "flaky": totals["flaky"],
        "exit_code": exit_code(report),
    }


def write_summary(run_path: Path, report: dict[str, Any]) -> None:
    """Write ``summary.json`` beside ``report.json``; a failure never fails the run."""
    try:
        atomic_write(run_path / SUMMARY_FILE, dumps(summary_of(report)))
    except RunStoreError:
        pass


def note_unjoined(run_path: Path, shards: list[str], seen: int | None = None) -> None:
    """Note in a merged run's summary the shards (``2/3``) that recorded scenario
    runs since it was merged, beside those noted before: ``rook runs`` lists it as
    ``merge again`` until ``rook merge`` (or ``rook run --run ID``) writes its
    summary anew. Late shards note themselves at the same moment, so the summary
    is read and written back under a lock (``.summary.lock``), never losing a note.
    ``seen``: the time of the run's ``scenarios`` folder when :func:`list_runs` looked
    for records copied in, so that it looks again only when the folder changes."""
    try:
        fh = open(run_path / ".summary.lock", "a")  # noqa: SIM115 - closed below
    except OSError:
        return
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # released on close
        except OSError:
            return
        summary = read_summary(run_path)
        if summary is None or summary.get("counts") is None or "recorded" in summary:
            return  # no report yet: its summary is made from its records, never written
        labels = set(shards)  # with those noted before that look like 2/3
        labels.update(
            x for x in summary.get("unjoined_shards") or [] if x.partition("/")[0].isdecimal()
        )
        noted = sorted(labels, key=lambda x: int(x.partition("/")[0]))
        try:
            doc = {**summary, "unjoined_shards": noted} if noted else dict(summary)
            if seen is not None:
                doc["scenarios_seen"] = seen
            atomic_write(run_path / SUMMARY_FILE, dumps(doc))
        except RunStoreError:
            pass


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _listable(summary: Any) -> bool:
    """Whether a summary has the shape ``rook runs`` reads: a ``summary.json``
    edited by hand or written by another tool, or one made from such a report
    or manifest, may hold a value of another type, which must never break the
    listing of every other run."""
    if not isinstance(summary, dict):
        return False
    counts = summary.get("counts")
    if counts is not None and not (
        isinstance(counts, dict) and all(_number(v) for v in counts.values())
    ):
        return False
    numbers = (
        "started",
        "total",
        "recorded",
        "decided",
        "pass_rate",
        "coverage",
        "exit_code",
        "unmerged_shards",
    )
    if any(summary.get(k) is not None and not _number(summary[k]) for k in numbers):
        return False
    unjoined = summary.get("unjoined_shards")
    if unjoined is not None and not (
        isinstance(unjoined, list) and all(isinstance(x, str) for x in unjoined)
    ):
        return False
    profile = summary.get("profile")
    return (profile is None or isinstance(profile, str)) and isinstance(
        summary.get("phases", []), list
    )


REPORTED = ("id", "project", "agent", "profile", "phases", "capabilities")
"""What a report rebuilt from a ``run.json`` reads of it (besides ``dir``)."""


def _is_manifest(manifest: Any) -> bool:
    """Whether ``manifest`` has the fields of a ``run.json`` that history reads."""
    return (
        isinstance(manifest, dict)
        and isinstance(manifest.get("plan", []), list)
        and all(isinstance(k, str) for k in manifest.get("plan", []))
        and isinstance(manifest.get("profile") or {}, dict)
        and isinstance(manifest.get("judge_profile") or {}, dict)
        and isinstance(manifest.get("phases", []), list)
        and isinstance(manifest.get("invocations", []), list)
        and isinstance(manifest.get("capabilities") or {}, dict)
        and all(
            isinstance((manifest.get("capabilities") or {}).get(k) or {}, dict)
            for k in ("declared", "observed")
        )
    )


def _records_seen(run_path: Path) -> list[int | None]:
    """When the run's records and manifest last changed: a summary counted from
    them (a run with no report yet) stands while they have not."""
    return [_mtime(run_path / "scenarios"), _mtime(run_path / RUN_FILE)]


def _incomplete(run_path: Path) -> dict[str, Any] | None:
    seen = _records_seen(run_path)
    manifest = read_json(run_path / RUN_FILE)
    if not _is_manifest(manifest):
        return None
    planned = {f"{key}.json" for key in manifest.get("plan", [])}
    try:  # its records, never a stray file or a copy kept beside one
        recorded = sum(1 for e in os.scandir(run_path / "scenarios") if e.name in planned)
    except OSError:
        recorded = 0
    summary = _recorded_counts(run_path, manifest)
    incomplete = {
        "summary_version": SUMMARY_VERSION,
        "id": run_path.name,
        "started": manifest.get("created"),
        "profile": (manifest.get("profile") or {}).get("id"),
        "judge_profile": (manifest.get("judge_profile") or {}).get("id"),
        "phases": manifest.get("phases", []),
        "complete": False,
        "counts": summary and {k: summary.get(k, 0) for k in (*COUNTED, PENDING)},
        "total": len(manifest.get("plan", [])),
        "recorded": recorded,
        "decided": summary and summary["decided"],
        "pass_rate": summary and summary["pass_rate"],
        "coverage": summary and summary["coverage"],
        "scenarios": len({k.rsplit(".", 1)[0] for k in manifest.get("plan", [])}),
        "flaky": None,
        "exit_code": None,
        # split with --shard and not merged yet: rook merge finishes it, not rook run --run
        "unmerged_shards": None if manifest.get("merged") else manifest.get("shards"),
    }
    # kept in summary.json while its records stay as they were: a run killed long
    # ago is not read again by every listing (one still writing them always is;
    # a change in the same tick of a coarse clock shows a second later)
    settled = time.time_ns() - 10**9
    if (
        summary is not None
        and all(t is not None and t < settled for t in seen)
        and seen == _records_seen(run_path)
    ):
        try:
            atomic_write(run_path / SUMMARY_FILE, dumps({**incomplete, "records_seen": seen}))
        except RunStoreError:
            pass
    return incomplete


def _recorded_counts(run_path: Path, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The counts, pass rate and coverage of what a run with no report yet (cut
    off, or still running) recorded, the rest pending, as ``rook runs show``
    counts them; ``None`` when a record is damaged (``rook runs show`` names it)."""
    tally = Tally()
    try:
        for record in planned_records(run_path, manifest.get("plan", [])):
            tally.add(scenario_entry(record))
    except (RunStoreError, AttributeError, KeyError, TypeError, ValueError):
        return None
    return {k: v for k, v in tally.summary().items() if k not in ("repeats", "by_scenario")}


def read_summary(run_path: Path, rebuild: bool = False) -> dict[str, Any] | None:
    """The run's summary, rebuilt when stale; ``None`` when the directory is not a run."""
    summary_time = _mtime(run_path / SUMMARY_FILE)
    report_time = _mtime(run_path / REPORT_FILE)
    if (
        not rebuild
        and summary_time is not None
        and (report_time is None or summary_time >= report_time)
    ):
        try:
            data = read_json(run_path / SUMMARY_FILE)
        except RunStoreError:
            data = None
        if (
            _listable(data)
            and data.get("summary_version") == SUMMARY_VERSION
            and (  # one counted from the records of a run with no report: while they stand
                "recorded" not in data
                and report_time is not None  # derived from a report: while it is there
                or "recorded" in data
                and report_time is None
                and data.get("records_seen") == _records_seen(run_path)
            )
        ):
            return data
    if report_time is not None:
        try:
            report = read_report(run_path / REPORT_FILE)  # head and tail only
            summary = summary_of(report) if _is_report(report) else None
        except (RunStoreError, AttributeError, KeyError, TypeError, ValueError):
            summary = None  # a malformed report: the run is summarised from its manifest
        if _listable(summary):
            write_summary(run_path, report)
            return summary
    if (run_path / RUN_FILE).is_file():
        try:
            summary = _incomplete(run_path)
        except (RunStoreError, AttributeError, TypeError):
            return None
        return summary if _listable(summary) else None
    return None


def _is_report(report: Any) -> bool:
    """Whether ``report`` has the head and tail of a run's JSON report."""
    return (
        isinstance(report, dict)
        and isinstance(report.get("run"), dict)
        and isinstance(report["run"].get("id"), str)
        and isinstance(report["run"].get("profile") or {}, dict)
        and isinstance(report["run"].get("phases", []), list)
        and isinstance(report.get("summary"), dict)
        and "pass_rate" in report["summary"]
        and "coverage" in report["summary"]  # beside it in every report (rook report's table)
        and all(
            report["summary"].get(k) is None or _number(report["summary"][k])
            for k in ("pass_rate", "coverage", "total", "decided")
        )
        and isinstance(report.get("scenarios"), list)  # a view of the file's entries too
        and _summary_ok(report["summary"])
    )


def _summary_ok(summary: dict[str, Any]) -> bool:
    """Whether a report's per-scenario statistics (``by_scenario``, ``repeats``),
    which ``rook runs show`` and ``rook diff`` read, have the shape Rook writes."""
    per, repeats = summary.get("by_scenario"), summary.get("repeats")
    return (repeats is None or isinstance(repeats, dict)) and (
        per is None
        or isinstance(per, list)
        and all(
            shapes.problem(p, shapes.BY_SCENARIO) is None
            and all(isinstance(s, str) for s in p["statuses"])
            for p in per
        )
    )


def list_runs(runs_dir: Path, rebuild: bool = False) -> list[dict[str, Any]]:
    """Every run of an agent, newest first."""
    if not runs_dir.is_dir():
        check_runs_folder(runs_dir)
        return []
    out = []
    with os.scandir(runs_dir) as entries:
        for entry in entries:
            if entry.is_dir() and not entry.name.startswith("."):
                summary = listed(Path(entry.path), rebuild)
                if summary is not None:
                    out.append(summary)
    out.sort(key=lambda s: (s.get("started") or 0, s["id"]), reverse=True)
    return out


def listed(run_path: Path, rebuild: bool = False) -> dict[str, Any] | None:
    """The run's summary as :func:`list_runs` lists it, its ``id`` in it; ``None``
    when the directory is not a run."""
    summary = read_summary(run_path, rebuild)
    if summary is not None and summary.get("counts") is not None:
        summary = _copied_in(run_path, summary)
    if summary is not None:
        summary.pop("scenarios_seen", None)  # bookkeeping, not the run's
        summary.pop("records_seen", None)
        summary["id"] = run_path.name
    return summary


def _copied_in(run_path: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The summary of a merged run with the shards noted whose scenario runs were
    copied into it since it was merged (an artifact of a late shard unpacked there:
    a shard run into it notes itself). Looked for only when its ``scenarios``
    folder changed after its report and since such shards were last noted."""
    folder = _mtime(run_path / "scenarios")
    report = _mtime(run_path / REPORT_FILE)
    if folder is None or report is None or folder <= report:
        return summary
    if summary.get("scenarios_seen") == folder:
        return summary
    from .merging import joined_since

    late = joined_since(run_path)
    if not late:  # nothing written: a run still going writes its own summary meanwhile
        return summary
    note_unjoined(run_path, late, folder)
    return read_summary(run_path) or summary


# -- choosing runs by profile -----------------------------------------------------


def profile_id(profiles_dir: Path, name: str, made_with: Iterable[str]) -> str:
    """The profile id ``rook runs --profile NAME`` selects runs by.

    Runs pin the id of the profile they were made with, so an id some run
    holds is taken first (its profile may have been renamed or removed since);
    else NAME is looked up as ``rook run --profile NAME`` looks it up (an id,
    a file name, then a unique name: :func:`~rook_core.definitions.locate_profile`).
    A NAME that is neither is a :class:`ProfileNotFound` naming the profiles
    and the ids the runs were made with.
    """
    from .definitions import locate_profile
    from .yamlio import load_yaml

    pinned = sorted(set(made_with))
    if name in pinned:
        return name
    try:
        path = locate_profile(profiles_dir, name)
    except ProfileNotFound as exc:
        raise ProfileNotFound(
            f"--profile: {exc}, and no run was made with a profile of id {name!r} "
            f"(runs were made with: {', '.join(pinned) or 'none'})"
        ) from None
    data = load_yaml(path, ProfileError)
    pid = data.get("id") if isinstance(data, dict) else None
    if not isinstance(pid, str) or not pid:
        raise ProfileError(f"{path}: id: missing; a profile needs an id (runs pin it)")
    return pid


def check_runs_folder(runs_dir: Path, said: str = "") -> None:
    """Refuse a ``runs`` that is not a folder (a file, a named pipe, a broken
    symbolic link), never taken for an agent with no runs (``said``: what the
    message starts with, ``run REF:``)."""
    kind = not_a_folder(runs_dir)
    if kind:
        raise ConfigError(
            f"{said}{runs_dir} is {kind}, not the runs folder; move it away (rook run makes the "
            "folder, and looks for the agent's runs in it)"
        )


# -- finding a run -------------------------------------------------------------

_LATEST = r"(?a)^latest(?:~(\d+))?$"  # ASCII digits: int() reads any digit


def resolve_run(runs_dir: Path, ref: str, where: str = "") -> Path:
    """A run directory from an id, a unique id prefix, ``latest`` or ``latest~N``;
    ``where``: the flags that found the agent (:func:`rook_core.workspace.found_by`),
    for the ``rook runs`` a "no such run" error suggests."""
    if not ref.strip():  # an empty prefix would match every run, or the only one
        raise ConfigError(
            f"run {ref!r}: names no run; give its id, a unique prefix, latest or latest~N"
        )
    check_runs_folder(runs_dir, f"run {ref}: ")
    named = "/" not in ref and len(os.fsencode(ref)) <= 255  # longer: no file name, ENAMETOOLONG
    if named and _is_run(runs_dir / ref):
        return runs_dir / ref
    m = re.match(_LATEST, ref)
    if m:
        runs = newest_first(runs_dir)
        back = int(m.group(1) or 0)
        if not runs:
            raise ConfigError(f"run {ref}: no runs yet in {runs_dir} (rook run makes one)")
        if back >= len(runs):
            raise ConfigError(
                f"run {ref}: there {'is' if len(runs) == 1 else 'are'} only "
                f"{counted(len(runs), 'run')} in {runs_dir}"
            )
        return runs_dir / runs[back]
    names = [e.name for e in os.scandir(runs_dir) if e.is_dir()] if runs_dir.is_dir() else []
    hits = [n for n in names if n.startswith(ref) and _is_run(runs_dir / n)]
    if len(hits) == 1:
        return runs_dir / hits[0]
    if len(hits) > 1:
        shown = ", ".join(sorted(hits)[:5]) + (", ..." if len(hits) > 5 else "")
        raise ConfigError(
            f"run {ref}: ambiguous, matches {len(hits)} runs ({shown}); give more of its id"
        )
    raise ConfigError(
        f"run {ref}: no such run in {runs_dir}{latest_hint(runs_dir, where)}"
        f"{_elsewhere(runs_dir, ref) or _named(runs_dir, ref)}"
    )


def _named(runs_dir: Path, ref: str) -> str:
    """What a "no such run" error adds when ``ref`` is the ``--run-name`` of a
    run, whose id is derived from it (``nightly ci``: ``nightly-ci-<hash>``):
    that id, which the commands that read a run take."""
    from .sharding import run_id_from_name

    try:
        run_id = run_id_from_name(ref)
    except ConfigError:
        return ""
    if run_id == ref or not _is_run(runs_dir / run_id):
        return ""
    return f"; {ref!r} is the --run-name of run {run_id}: give its id, {run_id}"


def _elsewhere(runs_dir: Path, ref: str) -> str:
    """What a "no such run" error adds when ``ref`` is the id of a run of another
    agent of the project (copied from its ``rook runs``): whose it is."""
    agents = runs_dir.parent.parent
    if "/" in ref or ref.startswith(".") or len(os.fsencode(ref)) > 255:
        return ""
    try:
        others = sorted(
            e.name for e in os.scandir(agents) if e.is_dir() and e.name != runs_dir.parent.name
        )
    except OSError:
        return ""
    owners = [name for name in others if _is_run(agents / name / "runs" / ref)]
    if not owners:
        return ""
    return (
        f"; it is a run of agent {', '.join(owners)} (--agent {owners[0]}): a command reads "
        "one agent's runs, and rook diff compares two runs of one agent"
    )


def _is_run(path: Path) -> bool:
    """Whether a folder is a run as ``rook runs`` lists it: it has its manifest, or
    its report (a run whose ``run.json`` was deleted is shown from its report)."""
    return (path / RUN_FILE).is_file() or (path / REPORT_FILE).is_file()


def newest_first(runs_dir: Path) -> list[str]:
    """The ids of an agent's runs, newest (last started) first: what ``latest``
    and ``latest~N`` count and what ``rook runs`` lists, never the name order
    (a run named with ``--run-name`` sorts anywhere)."""
    return [s["id"] for s in list_runs(runs_dir)]


def latest_hint(runs_dir: Path, where: str = "") -> str:
    """What a "no such run" error adds: the run ``latest`` is (:func:`newest_first`),
    and ``rook runs`` with the flags ``where`` that found the agent."""
    runs = newest_first(runs_dir)
    return f" (try: rook runs{where}; latest is {runs[0]})" if runs else " (no runs yet)"


def held_by(run_path: Path) -> str | None:
    """Who works on the run now: the ``rook run`` that holds its lock (``pid N``),
    or the shards that hold theirs (``pid N, shard I/N``); None when none does."""
    from .redact import Redactor
    from .sharding import shard_locks
    from .store import RunDir

    run = RunDir(run_path, Redactor())
    holder = run.holder(".lock")
    if holder is not None:
        return holder
    shards = [
        f"{holder}, {shard}"
        for name, shard in shard_locks(run_path)
        if (holder := run.holder(name)) is not None
    ]
    return "; ".join(shards) or None


def resumed_now(run_path: Path) -> str | None:
    """Who resumes the run now (``pid N``: a ``rook run --run ID`` holding its lock,
    whose ``report.json``, if any, is an earlier invocation's), or ``None``. A shard
    running into a merged run is not this: its report is the merge's until merged
    again (:func:`rook_core.merging.joined_since`)."""
    from .redact import Redactor
    from .store import RunDir

    if not os.path.exists(run_path / REPORT_FILE):
        return None  # rebuilt from the records anyway
    return RunDir(run_path, Redactor()).holder(".lock")


# The reason of a scenario run with no record while its run is in progress: it
# may be the one running now (no record says which), or one still to come.
NOT_RECORDED_YET = "not recorded yet: the run is in progress"


def load_report(run_path: Path, rebuild: bool = False) -> dict[str, Any]:
    """The run's JSON report: ``report.json``, or rebuilt from the run's records.

    Either way its ``scenarios`` are read on demand (a read-only list,
    :mod:`rook_core.reportio`) when the file allows it: ``report.json`` as
    ``rook run`` writes it, one entry per line, or the rebuilt report (written
    to a temporary file in one pass over the records). A ``report.json`` in
    another layout (written by an older Rook) is read whole.
    """
    if not rebuild and resumed_now(run_path):
        rebuild = True  # its report.json is an earlier invocation's: shown as recorded now
    if not rebuild:
        report = read_report(run_path / REPORT_FILE)
        if _is_report(report):
            run = report["run"]
            where = _where(run_path, run.get("dir"))  # where it is now, if moved since
            if (run.get("id"), run.get("dir")) != (run_path.name, where):  # moved, or copied
                # a new value, so that the report is no longer printed as its file holds it
                report["run"] = {**run, "id": run_path.name, "dir": where}
            return report
        if report is not None:
            raise DamagedRecord(
                f"{run_path / REPORT_FILE}: not a Rook report (its run, summary or scenarios "
                f"are missing or of another type); {rebuild_hint(run_path)}"
            )
    manifest = read_json(run_path / RUN_FILE)
    if manifest is None:
        raise ConfigError(f"{run_path}: not a run (no {RUN_FILE})")
    if not _is_manifest(manifest):
        raise DamagedRecord(
            f"{run_path / RUN_FILE}: not a Rook run manifest (its plan, profile, phases, "
            "invocations or capabilities are of another type)"
        )
    missing = [k for k in REPORTED if k not in manifest]
    if missing:  # what the report's run names (report._run)
        raise DamagedRecord(
            f"{run_path / RUN_FILE}: not a Rook run manifest (it has no {', '.join(missing)})"
        )
    plan, definitions = manifest.get("plan", []), manifest.get("definitions")
    # a run killed before its invocation ended (SIGKILL) has what it observed in its records only
    observed = dict((manifest.get("capabilities") or {}).get("observed") or {})
    for record in planned_records(run_path, plan, None, definitions):
        observed.update((cap, True) for cap, seen in (record.get("observed") or {}).items() if seen)
    capabilities = {**(manifest.get("capabilities") or {}), "observed": observed}
    unrecorded = NOT_RECORDED_YET if held_by(run_path) is not None else None
    return write_report(
        {
            **manifest,
            "id": run_path.name,
            "dir": _where(run_path, manifest.get("dir")),
            "capabilities": capabilities,
        },
        planned_records(run_path, plan, None, definitions, unrecorded),
        _gate_rate(run_path, manifest),
    )


def _where(run_path: Path, written: Any) -> Any:
    """The run's folder as its reports name it (``written``: as the run wrote
    it, perhaps elsewhere), redacted as the run redacted it: a secret's value
    may be part of a path. A damaged profile copy leaves it as written."""
    from .redact import Redactor

    try:
        names = secret_names(run_path)
    except ConfigError:
        return written
    return Redactor.for_variables(names).text(str(run_path))


def _gate_rate(run_path: Path, manifest: dict[str, Any]) -> float | None:
    """The ``--min-pass-rate`` the run's report was written with, so that a report
    rebuilt from the records gives the run's verdict: the gate of its
    ``report.json`` when that is readable, else the one its last invocation was
    given (``run.json``); ``None``: the run had no gate."""
    try:
        report = read_report(run_path / REPORT_FILE)
    except RunStoreError:
        report = None
    if isinstance(report, dict) and isinstance(report.get("summary"), dict):
        gate = report["summary"].get("gate")
        rate = gate.get("min_pass_rate") if isinstance(gate, dict) else None
        return rate if isinstance(rate, (int, float)) else None
    invocations = manifest.get("invocations") or [{}]
    rate = invocations[-1].get("min_pass_rate") if isinstance(invocations[-1], dict) else None
    return rate if isinstance(rate, (int, float)) else None
