"""``rook run --run ID``: a run reopened to finish it or to run the phases
it has not run. What is checked before anything runs (its manifest is one
Rook wrote, no phase is skipped, its prepare succeeded), what an earlier,
killed invocation left running, and what changed since it started."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import history, known_secrets, procscan, sharding
from .attempts import phases_missing_before
from .definitions import profile_copy
from .errors import ConfigError, DamagedRecord, RunStoreError, ScenarioError, listed
from .models import PHASES, Profile, Scenario
from .plugins import Rook
from .preflight import check_scenarios
from .redact import Redactor
from .reporting import check_report_targets
from .store import RunDir, left_temporaries, planned_records, read_json
from .workspace import Agent

if TYPE_CHECKING:
    from .runner import RunRequest


def check_manifest(path: Path, manifest: Any) -> None:
    """Refuse to resume from a ``run.json`` that is not a manifest Rook wrote
    (edited by hand, or damaged): exit 2, naming the file, nothing run."""
    ok = (
        isinstance(manifest, dict)
        and isinstance(manifest.get("profile"), dict)
        and isinstance(manifest["profile"].get("id"), str)
        and isinstance(manifest.get("plan"), list)
        and all(isinstance(k, str) for k in manifest["plan"])
        and all(isinstance(manifest.get(k), str) for k in ("project", "agent"))
        and isinstance(manifest.get("invocations"), list)
        and isinstance(manifest.get("phases"), list)
        and all(p in PHASES for p in manifest["phases"])
        and isinstance(manifest.get("capabilities"), dict)
        and all(
            isinstance(manifest["capabilities"].get(k, {}), dict) for k in ("declared", "observed")
        )
        and isinstance(manifest.get("prepare", {}), dict)
        and isinstance(manifest.get("judge_profile") or {}, dict)
        and isinstance(manifest.get("id", ""), str)
    )
    if not ok:
        raise ConfigError(
            f"{path}: not a run manifest rook can resume (a JSON object with project, agent, "
            "profile.id, plan, phases, invocations and capabilities); was it edited or damaged?"
        )


def resumable(read: Callable[[], Any]) -> Any:
    """``read()``, a resume's reading of its ``run.json`` or shard part: one that
    is not JSON (cut short, damaged) is bad input, exit 2, nothing run."""
    try:
        return read()
    except DamagedRecord as exc:
        raise ConfigError(str(exc)) from None


def kill_leftovers(run: RunDir, runs: list[Any], whole: bool) -> None:
    """Kill what an earlier, killed invocation of this run left running (a hung
    hook whose timeout died with it): its scenario runs are this one's now, and
    so are the judge profile's hooks judging them (``judge/state/<key>-j<n>``,
    see :mod:`judge_client`)."""
    import signal

    dirs = [str(run.state_dir(r.key, make=False)) for r in runs]
    judge_state = run.path / "judge" / "state"
    # scenario ids are slugs (no dot), so "<id>.<k>-j" names only that run's judgements
    judged = [str(judge_state / f"{r.key}-j") for r in runs]
    if whole:  # the run-wide state directories are every shard's: only a whole run's
        dirs += [str(run.state / "run"), str(judge_state / "run")]
    stale = procscan.leftovers(run.id, dirs, judged)
    for pid in stale:
        for kill in (os.killpg, os.kill):  # a hook leads its own process group
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    if stale:
        sys.stderr.write(
            f"rook: warning: killed {len(stale)} process(es) an earlier rook run of {run.id} "
            "left running (it was killed before it could end its hooks)\n"
        )


def still_sending(run_path: Path, keys: list[str], ids: set[str]) -> set[str]:
    """The scenarios of ``ids`` with a planned run (of ``keys``) that has turns left
    to send on a resume: not finished, its execute not done (a run cut off in a turn
    sends that turn again)."""
    keys = [k for k in keys if k.rsplit(".", 1)[0] in ids]
    return {
        r["scenario"]["id"]
        for r in planned_records(run_path, keys)
        if not r.get("final") and "execute" not in (r.get("phases_done") or ())
    }


def warn_changed_profile(run: RunDir, profile: Profile, redactor: Redactor, run_id: str) -> None:
    """A profile edited between two invocations of one run (``--phases``, or a
    resume): what is still to run uses the file as it is now, while the run's
    ``profile.yaml`` keeps the copy it started with; say so rather than nothing."""
    try:
        before = (run.path / "profile.yaml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # no copy to compare with (removed, damaged): nothing to say
    if before == redactor.text(profile_copy(profile)):
        return
    sys.stderr.write(
        f"rook: warning: profile {profile.id} ({profile.path}) changed after run {run_id} "
        "started; the phases still to run use the file as it is now (the run's profile.yaml "
        "keeps the one it started with)\n"
    )


def warn_joined_differently(
    run_json: Path,
    manifest: dict[str, Any],
    profile: Profile,
    scenarios: list[Scenario],
    shard: sharding.Shard,
    redactor: Redactor,
) -> None:
    """A shard's first start in a run another shard started in the same folder (a
    shared file system): its profile (same id) or a scenario of its share defined
    otherwise than the run was started with (another commit) is said, as ``rook
    merge`` says it of copies, since the run keeps one ``profile.yaml`` and the
    definitions the first shard planned."""
    run_id = run_json.parent.name
    hint = "check every shard runs the same commit"
    try:
        before: str | None = (run_json.parent / "profile.yaml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        before = None  # no copy to compare with (removed, damaged): nothing to say
    said = []
    if before is not None and before != redactor.text(profile_copy(profile)):
        said.append(
            f"rook: warning: profile {profile.id} ({profile.path}) differs from the one run "
            f"{run_id} was started with (its profile.yaml, from another shard): {hint}; this "
            "shard uses the file as it is now"
        )
    definitions = manifest.get("definitions")
    if isinstance(definitions, dict):
        own = {k.rsplit(".", 1)[0] for k in sharding.shard_keys(manifest["plan"], shard)}
        for s in scenarios:
            if s.id in own and definitions.get(s.id) not in (None, s.content_hash):
                said.append(
                    f"rook: warning: scenario {s.id} ({s.path}) differs from when run {run_id} "
                    f"was started (by another shard): {hint}"
                )
    for line in said:
        sys.stderr.write(redactor.text(line) + "\n")


def check_prepared(
    request: RunRequest, run: RunDir, manifest: dict[str, Any], profile: Profile
) -> None:
    """Refuse (exit 2, nothing run) a ``--phases`` without prepare on a run that
    recorded no scenario run and whose prepare hook never succeeded (it failed, or
    was killed while preparing): its scenario runs would run unprepared."""
    prepared = manifest.get("prepare")
    if "prepare" not in profile.hooks or (
        isinstance(prepared, dict) and prepared.get("status") == "ok"
    ):
        return
    raise ConfigError(
        f"--phases {request.phases}: no prepare of run {run.id} has succeeded (it failed, "
        "or was cut off), so its scenario runs would run unprepared; nothing run. "
        f"Finish it with rook run --run {run.id}{request.found_by}{request.kept()}, which "
        "prepares first"
    )


def check_no_hole(request: RunRequest, run: RunDir, runs: list[Any], phases: list[str]) -> None:
    """Refuse (exit 2, nothing run) a ``--phases`` suffix that no scenario run of
    the run can go on with, since phases before it have not run (``--phases
    judge`` on a run split before collect): across invocations, a hole."""
    blocked: dict[str, list[str]] = {}
    waiting = 0
    for sr in runs:
        record = run.load_scenario(sr.key) or {}
        if record.get("final"):
            continue
        waiting += 1
        fresh = record.get("infra") or record.get("blocked")  # a resume runs it from the start
        missing = phases_missing_before({} if fresh else record, phases)
        if record.get("blocked") == "prepare":
            missing = ["prepare", *missing]
        if missing:
            blocked[sr.name] = missing
    if not waiting or len(blocked) < waiting:
        return  # something can go on: the blocked ones say why in their reason
    first = min((m[0] for m in blocked.values()), key=PHASES.index)
    needed = ",".join(PHASES[PHASES.index(first) : PHASES.index(phases[-1]) + 1])
    key, missing = next(iter(blocked.items()))
    shard = run.shard if isinstance(run, sharding.ShardRunDir) else None  # a shard: its own
    which = f"{run.id} --shard {shard.label}" if shard else run.id
    raise ConfigError(
        f"--phases {request.phases}: no scenario run of run {run.id} can go on: phases before "
        f"it have not run (e.g. {', '.join(missing)} for {key}); nothing run. Finish it with "
        f"rook run --run {which} --phases {needed}{request.found_by}{request.kept()}, or "
        "leave --phases out"
    )


def find_run(
    request: RunRequest,
    agent: Agent,
    reports: list[tuple[str, str]],
    shard: sharding.Shard | None,
    phases: list[str],
) -> tuple[dict[str, Any] | None, tuple[Path, dict[str, Any]] | None, Path]:
    """The run ``--run`` names (an id, a unique prefix, ``latest`` or ``latest~N``;
    ``request.run_id`` becomes its folder's name) and its manifest as this
    invocation resumes it; ``None`` for a run not made yet (``--run-name``, a
    shard's first start). With a shard starting in a run another shard made,
    also that run's ``run.json`` and manifest (the run it joins). Returns the
    manifest, what it joins and the run's folder."""
    assert request.run_id is not None
    if not sharding.creates_run(request.run_name, shard):
        try:  # an id, a unique prefix, latest or latest~N, as for every command
            # one not found is named with its folder
            with known_secrets.agent_secrets_redacted(agent.profiles_dir, agent.runs_dir):
                request.run_id = history.resolve_run(
                    agent.runs_dir, request.run_id, request.found_by
                ).name
        except ConfigError as exc:
            raise ConfigError(f"--{exc}") from None  # "--run X: no such run ..."
    run_path = agent.runs_dir / request.run_id
    check_report_targets(reports, None, [run_path])  # --report runs/ID, ID made or not
    found = (run_path / "run.json").is_file()
    if not found and (run_path / "report.json").is_file():
        raise ConfigError(  # a run shown from its report.json, but what it ran is gone
            f"run {request.run_id}: {run_path / 'run.json'} is missing, so the run cannot "
            f"be finished (its plan and profile are in it); rook runs show {request.run_id}"
            f"{request.found_by} shows what it recorded"
        )
    manifest = resumable(lambda: read_json(run_path / "run.json")) if found else None
    joined: tuple[Path, dict[str, Any]] | None = None
    if manifest is not None:
        check_manifest(run_path / "run.json", manifest)
        if shard is not None and not (run_path / shard.part("run.json")).is_file():
            joined = (run_path / "run.json", manifest)  # its first start: it joins the run
            if phases[0] != "prepare":  # as a new run: nothing of it has run yet
                raise ConfigError(
                    f"--phases {request.phases}: shard {shard.label} of run "
                    f"{request.run_id} has not run yet, and a shard starts with prepare; "
                    "leave --phases out, or give a selection that starts with prepare"
                )
        base = manifest
        manifest = resumable(
            lambda: sharding.resume_manifest(
                run_path, base, shard, request.found_by, run_flag(request)
            )
        )
        manifest["dir"] = str(run_path)  # where it is now: a workspace moves, or is restored
        manifest["id"] = run_path.name  # its folder's name: a run copied under a new one
        check_manifest(run_path / "run.json", manifest)
    return manifest, joined, run_path


def warn_new_beside(
    runs_dir: Path, run_id: str, shard: sharding.Shard, found_by: str, redactor: Redactor
) -> None:
    """``--run ID --shard I/N`` names its run exactly (the first shard makes it), so a
    prefix of an existing run starts a new one: say so, naming the runs it begins, as
    every other command would have taken it for one of them."""
    try:
        hits = sorted(
            e.name
            for e in os.scandir(runs_dir)
            if e.name.startswith(run_id) and e.is_dir() and history._is_run(Path(e.path))
        )
    except OSError:
        return
    if not hits:
        return
    named = f"run {hits[0]} begins" if len(hits) == 1 else f"runs {', '.join(hits[:5])} begin"
    sys.stderr.write(
        redactor.text(
            f"rook: warning: --run {run_id} --shard {shard.label}: no run is named {run_id}, "
            f"so this shard starts it (with --shard, --run names its run exactly); {named} so: "
            f"to run this shard in {'it' if len(hits) == 1 else 'one'}, give its whole id: "
            f"rook run --run {hits[0]} --shard {shard.label}{found_by}"
        )
        + "\n"
    )


def run_flag(request: RunRequest) -> str:
    """The flag that named the run, as typed, for a message about it: ``--run ID``,
    or ``--run-name NAME`` (with the id it derives when that is another text),
    quoted as a shell needs it (``--run-name 'nightly ci'``), so it pastes."""
    import shlex

    if request.run_name is None:
        return f"--run {shlex.quote(str(request.run_id))}"
    named = f"--run-name {shlex.quote(request.run_name)}"
    return named if request.run_name == request.run_id else f"{named} (run {request.run_id})"


def resumed_scenarios(
    request: RunRequest,
    rook: Rook,
    agent: Agent,
    profile: Profile,
    scenarios: list[Scenario],
    manifest: dict[str, Any],
    run_path: Path,
    shard: sharding.Shard | None,
    phases: list[str],
) -> tuple[list[Scenario], dict[str, int]]:
    """The scenarios of the run ``manifest`` plans that this invocation selects
    (in the plan's order), checked as a new run's are, and how many runs of each
    the plan holds. A planned scenario whose file is gone, a selection of none,
    or a ``--repeat`` other than the plan's is refused (exit 2, nothing run)."""
    planned_ids = list(dict.fromkeys(k.rsplit(".", 1)[0] for k in manifest["plan"]))
    by_id = {s.id: s for s in scenarios}
    # a shard finishes its own scenario runs only: another shard's need no file here
    own = manifest["plan"] if shard is None else sharding.shard_keys(manifest["plan"], shard)
    gone = [i for i in dict.fromkeys(k.rsplit(".", 1)[0] for k in own) if i not in by_id]
    if request.only:  # what --only leaves out is not finished now: it needs no file
        gone = [i for i in gone if i in request.only]
    if gone:  # nor does one whose every run is finished: its records are reported
        removed = set(gone)
        keys = [k for k in own if k.rsplit(".", 1)[0] in removed]
        records = planned_records(run_path, keys)
        unfinished = {r["scenario"]["id"] for r in records if not r.get("final")}
        gone = [i for i in gone if i in unfinished]
    if gone:
        rest = [i for i in planned_ids if i in by_id]
        raise ScenarioError(
            f"{run_flag(request)}: {listed('scenario', gone)} of this run no longer "
            f"{'exists' if len(gone) == 1 else 'exist'} in {agent.scenarios_dir}; restore "
            f"{'its file to finish it' if len(gone) == 1 else 'their files to finish them'}"
            + (f", or finish the others with --only {','.join(rest)}" if rest else "")
        )
    # removed since, every run of it finished (else refused above): nothing left to run
    absent = {i for i in planned_ids if i not in by_id}
    only = [i for i in request.only if i not in absent]
    scenarios = (
        [] if request.only and not only else _selected_of_plan(request, by_id, planned_ids, only)
    )
    selects = request.only or request.tags or request.classes or request.categories
    if not scenarios and not (absent and (request.only or not selects)):
        # a selector that matches none of the run's scenarios: nothing to do
        unread = [i for i in planned_ids if i in absent]  # a --tag cannot match a file gone
        by = [flag for flag, _ in request.selectors(with_only=False)]
        hint = request.case_hint([by_id[i] for i in planned_ids if i in by_id])
        given = [f"{flag} {','.join(v)}" for flag, v in request.selectors(with_only=False)]
        raise ScenarioError(
            f"{run_flag(request)}: no scenario of this run selected"
            + (f" by {' '.join(given)}{hint}" if hint else "")
            + f" (its scenarios: {', '.join(planned_ids)})"
            + (
                f"; the {'file' if len(unread) == 1 else 'files'} of "
                f"{', '.join(unread)} {'is' if len(unread) == 1 else 'are'} gone from "
                f"{agent.scenarios_dir}, so {' or '.join(by)} cannot select "
                f"{'it' if len(unread) == 1 else 'them'}: --only selects by id"
                if unread and by
                else ""
            )
        )
    try:
        check_scenarios(rook, profile, scenarios, phases)  # what the phases run now send
    except ScenarioError:  # a scenario whose every run sent its turns sends none now
        sending = still_sending(run_path, own, {s.id for s in scenarios})
        check_scenarios(rook, profile, [s for s in scenarios if s.id in sending], phases)
    counts: dict[str, int] = {}
    for key in manifest["plan"]:
        sid = key.rsplit(".", 1)[0]
        counts[sid] = counts.get(sid, 0) + 1
    if request.repeat is not None:
        other = sorted({counts[s.id] for s in scenarios} - {request.repeat})
        if other:  # silently running another number of repeats would mislead
            raise ConfigError(
                f"--repeat {request.repeat}: run {request.run_id} planned "
                f"{' or '.join(map(str, other))} {'run' if other == [1] else 'runs'} of a "
                "scenario, and a run keeps its "
                "plan; leave --repeat out to finish it, or start a new run"
            )
    return scenarios, counts


def _selected_of_plan(
    request: RunRequest, by_id: dict[str, Scenario], planned_ids: list[str], only: list[str]
) -> list[Scenario]:
    """The planned scenarios the selectors pick, in the plan's order (``only``:
    ``--only``'s ids but those of the run whose files are gone). An ``--only``
    id that ``--tag``, ``--class`` or ``--category`` leaves out is no error here
    either: the flags that made the run (a later shard joining it, a CI retry by
    ``--run-name``) never planned it, and must be accepted again."""
    if only and (request.tags or request.classes or request.categories):
        named = [by_id[i] for i in dict.fromkeys(only) if i in by_id]
        kept = {s.id for s in request.selected(named, include_excluded=True, only=None)}
        only = [i for i in only if i not in by_id or i in kept]
        if not only:  # every id named is left out by the other selectors
            return []
    unplanned = [i for i in dict.fromkeys(only) if i not in planned_ids]
    if unplanned:  # a scenario of the agent, or a typo: not one the run can finish
        raise ScenarioError(_unplanned(request, unplanned, planned_ids, by_id))
    planned = [by_id[i] for i in planned_ids if i in by_id]
    return request.selected(planned, include_excluded=True, only=only)


def _unplanned(
    request: RunRequest, ids: list[str], planned_ids: list[str], by_id: dict[str, Scenario]
) -> str:
    """Why ``--only`` with ``--run`` cannot name ``ids``: the run has no scenario
    of that id (a typo: told the run's scenario it looks like), or did not plan the
    agent's scenario it names (no typo: told what runs it)."""
    from .definitions import IDS_SHOWN
    from .errors import did_you_mean

    shown = ", ".join(planned_ids[:IDS_SHOWN])
    more = f" and {len(planned_ids) - IDS_SHOWN} more" if len(planned_ids) > IDS_SHOWN else ""
    theirs = f"(its scenarios: {shown}{more})"
    typos = [i for i in ids if i not in by_id]
    if typos:

        def named(wrong: str) -> str:
            close = did_you_mean(wrong, planned_ids)
            return f"{wrong} (did you mean {close}?)" if close else wrong

        return (
            f"{run_flag(request)}: --only: this run has no scenario with id "
            f"{', '.join(map(named, typos))} {theirs}"
        )
    return (
        f"{run_flag(request)}: --only {','.join(ids)}: this run did not plan "
        f"{listed('scenario', ids)} {theirs}; a run finishes only what it planned: rook run "
        f"without --run or --run-name runs {'it' if len(ids) == 1 else 'them'} in a new run"
    )


def check_reopened(
    request: RunRequest,
    run: RunDir,
    manifest: dict[str, Any],
    runs: list[Any],
    phases: list[str],
    profile: Profile,
    redactor: Redactor,
    shard: sharding.Shard | None,
) -> None:
    """A run an earlier invocation started, reopened under its lock: every record
    the run's report reads is checked (one of another shape is refused, exit 2,
    nothing run, the lock given back), what those records observed joins the
    manifest's capabilities, a ``--phases`` suffix or a run never prepared is
    refused as :func:`check_no_hole` and :func:`check_prepared` say; then what a
    killed invocation left running is killed, and a profile changed since is
    said."""
    assert request.run_id is not None
    try:
        # a record of another shape is refused before anything runs: each one the
        # run's report reads, not only those run now (--only), as it was read at the end
        observed = dict(manifest["capabilities"].get("observed") or {})
        started = False  # a scenario run of the run has a record
        for key in manifest["shard"]["plan"] if shard is not None else manifest["plan"]:
            record = run.load_scenario(key) or {}
            started = started or bool(record)
            # what an invocation killed before it ended (SIGKILL) observed is in its
            # records only: the manifest was to get it when that invocation ended
            observed.update((cap, True) for cap, seen in record.get("observed", {}).items() if seen)
        manifest["capabilities"]["observed"] = observed
        if phases[0] not in ("prepare", "open"):  # a suffix: earlier phases must be done
            check_no_hole(request, run, runs, phases)
        if phases[0] != "prepare" and not started and not manifest.get("shards"):
            check_prepared(request, run, manifest, profile)
    except DamagedRecord as exc:  # nothing has run: bad input, exit 2 (never 1)
        run.unlock()
        raise ConfigError(str(exc)) from None
    except (ConfigError, RunStoreError):
        run.unlock()
        raise
    kill_leftovers(run, runs, shard is None)
    remove_temporaries(run, manifest, shard)
    warn_changed_profile(run, profile, redactor, request.run_id)


def remove_temporaries(run: RunDir, manifest: dict[str, Any], shard: sharding.Shard | None) -> None:
    """Remove the temporary files (:func:`rook_core.store.left_temporaries`) an
    earlier invocation killed while it wrote one of the run's files left: those
    of its scenario runs' records (a shard's: its own) and, of a whole run, of its
    run-wide files (``report.json``, ``run.json``, the judge's); a shard's own
    parts of those."""
    plan = manifest["shard"]["plan"] if shard is not None else manifest["plan"]
    found = left_temporaries(run.scenarios, {f"{key}.json" for key in plan})
    if shard is None:
        found += left_temporaries(run.path) + left_temporaries(run.path / "judge")
    else:
        found += left_temporaries(run.path, {shard.part(n) for n in sharding.ShardRunDir.OWN})
    for path in found:
        with contextlib.suppress(OSError):
            path.unlink()


__all__ = ["check_reopened", "find_run", "resumed_scenarios", "warn_joined_differently"]
