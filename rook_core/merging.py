"""``rook merge``: join the records of a sharded run's shards into one run.

Shards on different machines each write their own copy of ``runs/<run-id>/``;
shards on one shared file system write into the same one. Either way the
records are per scenario run, so joining them is choosing one record per
planned key and assembling ``run.json`` from the shards' manifest parts
(:mod:`rook_core.sharding`). The merged run's report and diff are exactly
those of an unsharded run, and so is its ``report.json``: written by
:func:`write_merged_report` through :func:`rook_core.report.write_report`, one
entry per line, with no more than one record in memory at a time.
"""

from __future__ import annotations

import copy
import glob
import math
import os
import re
import shutil
import stat
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from . import shapes
from .errors import ConfigError, DamagedRecord, RunStoreError
from .models import PHASES
from .plain import plain
from .report import write_report
from .sharding import BASE_KEYS, PART, PART_KEYS, Shard, check_same_run, shard_of
from .store import atomic_write, dumps, planned_records, read_json, read_record


@plain
class Merged:
    """What :func:`merge_runs` assembled in ``path``: the run's manifest, the planned
    scenario runs some shard recorded (their records are in ``path/scenarios``), and
    notes. :meth:`records` reads the records back one at a time."""

    path: Path
    manifest: dict[str, Any]
    recorded: set[str] = field(default_factory=set)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)
    """The shards' run directories that were joined (``path`` too when it held one)."""

    def records(self) -> Iterator[dict[str, Any]]:
        """One record per planned scenario run, in plan order, read from the merged
        run's ``scenarios/`` as needed (a stand-in naming the run where no shard
        recorded it: ``pending`` in the report)."""
        definitions = self.manifest.get("definitions")
        return planned_records(self.path, self.manifest["plan"], self.recorded, definitions)


def run_json(path: Path) -> dict[str, Any]:
    """The shared ``run.json`` of a sharded run's directory, checked."""
    data = read_json(path / "run.json")
    if not isinstance(data, dict) or "plan" not in data:
        raise ConfigError(
            f"{path}: not a Rook run directory (no run.json); give runs/<run-id> dirs"
        )
    problem = _manifest_problem(data)
    if problem is not None:  # refused before anything is copied
        raise DamagedRecord(f"{path / 'run.json'}: not a Rook run manifest ({problem})")
    return data


def _manifest_problem(data: dict[str, Any]) -> str | None:
    """What a merge cannot work with in a shared ``run.json`` (edited by hand,
    or written by another tool), or ``None``."""
    missing = [k for k in ("id", "project", "agent", "profile") if k not in data]
    if missing:
        return f"it has no {', '.join(missing)}"
    plan, profile, shards = data["plan"], data["profile"], data.get("shards")
    if not isinstance(plan, list) or not all(isinstance(k, str) for k in plan):
        return "its plan is not a list of scenario run keys"
    if not isinstance(profile, dict) or not isinstance(profile.get("id"), str):
        return "its profile is not an object with a text id"
    if shards is not None and (type(shards) is not int or shards < 1):
        return "its shards is not a whole number of at least 1"
    return None


def _parts(path: Path, count: int) -> dict[int, dict[str, Any]]:
    """The shard parts in ``path`` of a run of ``count`` shards, checked."""
    out: dict[int, dict[str, Any]] = {}
    for f in sorted(path.glob("run.shard-*-of-*.json")):
        m = re.match(PART, f.name)
        if m and int(m.group(2)) == count:
            data = read_json(f)
            if data is not None:  # (JSON's null: none) an array, say, is no part
                problem = shapes.problem(data, shapes.SHARD_PART)
                if problem is not None:  # refused before anything is copied
                    raise DamagedRecord(f"{f}: {problem}, not what Rook writes there")
                out[int(m.group(1))] = data
    return out


def _copies_note(shard: Shard, held: list[Path], kept: Path) -> str:
    """The warning for a shard whose copies in ``held`` differ (it ran more than
    once: a CI job run again, a copy of an earlier attempt given too)."""
    name = shard.part("run.json")
    return (
        f"shard {shard.label} has {len(held)} different copies "
        f"({', '.join(str(d / name) for d in held)}): the merge keeps the one that ran "
        f"last, {kept / name}, and of each of its scenario runs the finished record, else "
        "the latest, whichever copy holds it: check that no copy is of an attempt you "
        "did not mean to merge"
    )


def _unknown_keys_note(path: Path, unknown: list[str]) -> str:
    from .errors import did_you_mean

    def named(key: str) -> str:
        close = did_you_mean(key, sorted(PART_KEYS))
        return f"{key!r} (did you mean {close!r}?)" if close else repr(key)

    keys = ", ".join(named(k) for k in unknown[:10]) + (
        f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
    )
    return (
        f"{path}: {'key' if len(unknown) == 1 else 'keys'} {keys}, which Rook never "
        "writes in a shard's part (edited by hand, or written by another version of "
        f"Rook): the merge ignores {'it' if len(unknown) == 1 else 'them'}"
    )


def _created(manifest: dict[str, Any]) -> float:
    created = manifest.get("created")
    return float(created) if isinstance(created, (int, float)) else math.inf


def _latest(manifest: dict[str, Any]) -> float:
    return max((i.get("started") or 0 for i in manifest.get("invocations") or []), default=0.0)


def _latest_of(invocation: dict[str, Any]) -> float:
    started = invocation.get("started")
    return float(started) if isinstance(started, (int, float)) else 0.0


def _better(new: dict[str, Any], old: dict[str, Any] | None) -> bool:
    if old is None:
        return True
    if bool(new.get("final")) != bool(old.get("final")):
        return bool(new.get("final"))
    return (new.get("ended") or 0) > (old.get("ended") or 0)


def _copy(src: Path, dst: Path) -> None:
    if src.resolve() == dst.resolve():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except OSError as exc:
        raise RunStoreError(f"cannot copy {src} to {dst}: {exc.strerror or exc}") from None


def _special(path: str) -> bool:
    """Whether ``path`` is a named pipe, a socket or a device: what a hook may leave in
    its state directory, which holds no data to copy (reading a pipe waits for ever)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def _copy_tree(src: Path, dst: Path, keep: frozenset[str] = frozenset()) -> None:
    """``src`` into ``dst``; ``keep``: the names in ``src`` itself not copied (``dst``'s own)."""
    if src.is_dir() and src.resolve() != dst.resolve():
        try:
            top = str(src)
            shutil.copytree(
                src,
                dst,
                symlinks=True,
                dirs_exist_ok=True,
                ignore=lambda d, names: [
                    n for n in names if (d == top and n in keep) or _special(os.path.join(d, n))
                ],
            )
        except (OSError, shutil.Error) as exc:
            raise RunStoreError(f"cannot copy {src} to {dst}: {exc}") from None


def combine(base: dict[str, Any], parts: dict[int, dict[str, Any]], path: Path) -> dict[str, Any]:
    """The run's manifest from the shared ``run.json`` and every shard's part: what
    an unsharded run's ``run.json`` holds, plus ``shards`` and ``merged``."""
    n = base["shards"]
    m: dict[str, Any] = {k: copy.deepcopy(base[k]) for k in BASE_KEYS if k in base}
    m["dir"] = str(path)
    created = [p["created"] for p in (base, *parts.values()) if p.get("created")]
    if created:
        m["created"] = min(created)
    ordered = [parts[i] for i in sorted(parts)]
    m["phases"] = [p for p in PHASES if any(p in (q.get("phases") or []) for q in ordered)]
    m["invocations"] = [
        {**inv, "shard": f"{i}/{n}"}
        for i in sorted(parts)
        for inv in parts[i].get("invocations") or []
    ]
    # merged before, then resumed whole (rook run --run ID): that invocation is no shard's
    whole = [i for i in base.get("invocations") or [] if isinstance(i, dict) and "shard" not in i]
    if whole:
        m["invocations"] = sorted([*m["invocations"], *whole], key=_latest_of)
    declared = (base.get("capabilities") or {}).get("declared", {})
    observed: dict[str, bool] = {}
    for q in (base, *ordered) if whole else ordered:
        for cap, seen in ((q.get("capabilities") or {}).get("observed") or {}).items():
            observed[cap] = bool(observed.get(cap) or seen)
    m["capabilities"] = {"declared": declared, "observed": observed}
    prepared = [(i, parts[i]["prepare"]) for i in sorted(parts) if parts[i].get("prepare")]
    failed = [(i, p) for i, p in prepared if p.get("status") != "ok"]
    if failed:
        m["prepare"] = {**failed[0][1], "shard": f"{failed[0][0]}/{n}"}
    elif prepared:
        m["prepare"] = prepared[0][1]
    for key in ("judge_profile", "interrupted"):
        found = [q[key] for q in ordered if q.get(key)]
        if found:
            m[key] = found[0]
    kills = [k for q in ordered for k in q.get("kills") or []]
    if kills:
        m["kills"] = kills
    return m


def _version_note(parts: dict[int, dict[str, Any]], n: int) -> str | None:
    """A warning when the shards were run by different versions of Rook (each
    invocation records its own), else ``None``."""
    by: dict[str, list[int]] = {}
    for i, part in sorted(parts.items()):
        for inv in part.get("invocations") or []:
            v = inv.get("rook_version") if isinstance(inv, dict) else None
            v = v if isinstance(v, str) else "an older Rook (no version recorded)"
            if i not in by.setdefault(v, []):
                by[v].append(i)
    if len(by) < 2:
        return None
    said = "; ".join(f"{v}: {shard_list([f'{i}/{n}' for i in shards])}" for v, shards in by.items())
    return f"the shards were run by different versions of Rook ({said}): check every shard ran the same install"


def _profile_as_used(run_dir: Path) -> Any:
    """The run's ``profile.yaml`` as data (its text when it is not YAML), or ``None``."""
    from .yamlio import load_yaml  # only rook merge: rook report reads this module too

    path = run_dir / "profile.yaml"
    if not path.is_file():
        return None
    try:
        return load_yaml(path)
    except ConfigError:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None


def _profile_note(dirs: list[Path], profile_id: Any) -> str | None:
    """A warning when the directories' ``profile.yaml`` differ (same profile id,
    another definition: shards run on different commits), else ``None``."""
    used = [(d, _profile_as_used(d)) for d in dirs]
    used = [(d, p) for d, p in used if p is not None]
    other = [d for d, p in used[1:] if p != used[0][1]]
    if not other:
        return None
    return (
        f"profile {profile_id} was defined differently on different shards "
        f"({', '.join(map(str, other))} against {used[0][0]}): "
        "check every shard ran the same commit"
    )


def shard_list(labels: list[str], most: int = 10) -> str:
    """``shard 1/4``, ``shards 1/4, 3/4``; past ``most`` labels, the first ones
    and how many in all."""
    noun = "shard" if len(labels) == 1 else "shards"
    if len(labels) <= most:
        return f"{noun} {', '.join(labels)}"
    return f"{noun} {', '.join(labels[:most])} ... ({len(labels)} in all)"


def _still_unfinished(plan: list[str], n: int, labels: list[str], dirs: list[Path]) -> list[str]:
    """Of the shards that left no part, those with a planned scenario run that no
    directory holds a final record of (a shard never run, after which ``rook run
    --run ID`` on the merged run finished all it would have run, is not missing);
    a shard with nothing planned is never missing: running it would run nothing."""
    where, wanted, undone = shard_of(plan, n), set(labels), set()
    for key in plan:
        label = f"{where[key]}/{n}"
        if label in wanted and label not in undone:
            records = (read_record(d / "scenarios" / f"{key}.json") for d in dirs)
            if not any(rec is not None and rec.get("final") for rec in records):
                undone.add(label)
    return [label for label in labels if label in undone]


def _continuity(base: dict[str, Any], copies: list[dict[str, Any]]) -> list[str]:
    """The continuity levels any copy's ``run.json`` recorded (one made by a Rook
    before ``run.continuity`` has none): the base's, then the others' sorted, so
    the order the copies are given in never changes them."""
    levels = {
        v
        for c in copies
        if isinstance(c.get("continuity"), list)
        for v in c["continuity"]
        if isinstance(v, str)
    }
    own = base.get("continuity")
    ours = [v for v in own if isinstance(v, str)] if isinstance(own, list) else []
    return list(dict.fromkeys([*ours, *sorted(levels - set(ours))]))


def merge_runs(
    sources: list[Path],
    path: Path,
    partial: bool = False,
    redact: Callable[[Any], Any] = lambda data: data,
    flags: str = "",
) -> Merged:
    """Join the records of a sharded run's shards into the run directory ``path``.

    ``sources`` are copies of ``runs/<run-id>/`` (one per machine, or the one
    directory shards on a shared file system wrote into); ``path`` may be one of
    them. Every planned scenario run keeps its best record (a final one over an
    unfinished one, else the latest); records, state directories and shard parts
    are copied into ``path``; ``run.json`` is rewritten as the merged manifest.
    A missing shard is refused unless ``partial``. ``redact`` is applied to the
    ``run.json`` written (its folders may hold a secret, as a shard's part does);
    ``flags``: the ``-w``, ``--project`` and ``--agent`` given, for the command a
    refusal names.
    """
    dirs: list[Path] = []
    for d in [*sources, path]:
        if (d / "run.json").is_file() and all(d.resolve() != e.resolve() for e in dirs):
            dirs.append(d)
    if not dirs:
        raise ConfigError(f"{path}: no run to merge (no run.json)")
    bases = [(d, run_json(d)) for d in dirs]
    # the order the copies are given in never changes the merged run: the base is the
    # shard's run.json made first (a source's before an earlier merge's in ``path``,
    # then by path), as one shared directory's would be
    into = path.resolve()
    first_dir, base = min(bases, key=lambda b: (_created(b[1]), b[0].resolve() == into, str(b[0])))
    if not base.get("shards"):
        raise ConfigError(f"{first_dir}: run {base.get('id')} was not sharded; nothing to merge")
    for d, other in bases:
        if d is first_dir:
            continue
        if other.get("id") != base.get("id"):
            raise ConfigError(
                f"{d}: holds run {other.get('id')!r}, not {base.get('id')!r}; "
                "merge the shards of one run"
            )
        if not other.get("shards"):  # a run of that id made without --shard, where it goes
            raise ConfigError(
                f"{d}: holds run {other.get('id')}, which was not sharded, not a copy of "
                "these shards' run; merge them elsewhere (--into DIR) or move it away"
            )
        check_same_run(other, base, str(d / "run.json"), None, str(first_dir))
    levels = _continuity(base, [c for _, c in bases])
    if levels and levels != base.get("continuity"):
        base = {**base, "continuity": levels}
    n = int(base["shards"])
    parts: dict[int, tuple[Path, dict[str, Any]]] = {}
    read_notes: list[str] = []  # about the parts read: said after the merge's own notes
    copies: dict[int, list[Path]] = {}  # a shard's copies that differ from the one kept
    # ``path`` not given as a source holds what an earlier merge copied there (or a shard
    # run in place): a given copy that ran later replaces its copy of a shard unsaid, the
    # usual merge again after a shard's CI job ran again; one it keeps over a given is named
    earlier = all(d.resolve() != into for d in sources)
    for d in dirs:
        for i, part in _parts(d, n).items():
            if i in parts and part != parts[i][1]:  # the same shard run twice (a CI re-run)
                replaced = earlier and d.resolve() == into and _latest(part) <= _latest(parts[i][1])
                if not replaced:
                    copies.setdefault(i, [parts[i][0]]).append(d)
            if i not in parts or _latest(part) > _latest(parts[i][1]):
                parts[i] = (d, part)
    for i, (d, part) in sorted(parts.items()):  # merged without keys Rook never writes
        unknown = sorted(k for k in part if k not in PART_KEYS)
        if unknown:  # edited by hand (a key misspelt is one missing) or a newer Rook
            read_notes.append(_unknown_keys_note(d / Shard(i, n).part("run.json"), unknown))
    for i, held in sorted(copies.items()):
        read_notes.append(_copies_note(Shard(i, n), held, parts[i][0]))
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in parts]
    if missing:  # rook run --run ID on the merged run may have finished a shard's part
        missing = _still_unfinished(base["plan"], n, missing, dirs)
    if missing and not partial:
        raise ConfigError(
            f"run {base['id']}: no record of {shard_list(missing)} in "
            f"{', '.join(str(d) for d in dirs)}; run {'each' if missing[1:] else 'it'}: "
            f"rook run --run {base['id']} --shard {missing[0]}{flags}"
            f"{f' (and likewise {shard_list(missing[1:])})' if missing[1:] else ''}, "
            "or merge what there is with --partial"
        )
    recorded: set[str] = set()
    chosen = array("I")  # per planned key, 1 + the index in dirs of its best record (0: none)
    first: dict[str, str] = {}  # scenario id -> the hash of its first definition seen
    versions: dict[str, set[str]] = {}  # scenario id -> hashes, where they differ
    observed: dict[str, bool] = {}  # a shard killed before it ended has it in its records only
    newest: dict[str, float] = {}  # per shard, the latest time of a record merged: its clock's
    shard_at = shard_of(base["plan"], n)
    for _, planned in sorted(bases, key=lambda b: b[0] is not first_dir):  # the base's first
        # what each copy planned: a machine on another commit that did not run the scenario
        # (or ran it into a run whose run.json another shard wrote) differs here only
        defs = planned.get("definitions")
        for sid, digest in defs.items() if isinstance(defs, dict) else ():
            if isinstance(digest, str) and digest and first.setdefault(sid, digest) != digest:
                versions.setdefault(sid, {first[sid]}).add(digest)
    for key in base["plan"]:  # one record in memory at a time, all read before any is copied
        best, found = None, 0
        for i, d in enumerate(dirs, start=1):
            rec = read_record(d / "scenarios" / f"{key}.json")
            if rec is not None and _better(rec, best):
                best, found = rec, i
        chosen.append(found)
        if best is None:
            continue
        recorded.add(key)
        label = f"{shard_at[key]}/{n}"
        for stamp in (best.get("started"), best.get("ended")):
            if isinstance(stamp, (int, float)) and stamp > newest.get(label, -math.inf):
                newest[label] = float(stamp)
        observed.update((cap, True) for cap, seen in (best.get("observed") or {}).items() if seen)
        scenario = best.get("scenario") or {}
        sid, digest = str(scenario.get("id")), scenario.get("content_hash")
        if digest and first.setdefault(sid, digest) != digest:
            versions.setdefault(sid, {first[sid]}).add(digest)
    path.mkdir(parents=True, exist_ok=True)
    for sub in ("scenarios", "state"):
        (path / sub).mkdir(exist_ok=True)
    for key, i in zip(base["plan"], chosen, strict=True):
        if not i:
            continue
        where = dirs[i - 1]
        _copy(where / "scenarios" / f"{key}.json", path / "scenarios" / f"{key}.json")
        _copy_tree(where / "state" / key, path / "state" / key)
        for aside in (where / "state").glob(f"{glob.escape(key)}.attempt-*"):
            _copy_tree(aside, path / "state" / aside.name)  # an earlier attempt's files
    for i, (d, _) in sorted(parts.items()):
        shard = Shard(i, n)
        for name in ("run.json", "prepare.json", "report.json"):
            if (d / shard.part(name)).is_file():
                _copy(d / shard.part(name), path / shard.part(name))
    # a source's judge/ files (``path`` is a shard's folder): plugins join their run-level
    # files there from each source's (rook_evidence_merged), so its own are never copied over
    judge, own = path / "judge", frozenset[str]()
    if judge.is_dir() and any(d.resolve() == path.resolve() for d in dirs):
        own = frozenset(p.name for p in judge.iterdir() if p.is_file())
    for d in sorted(dirs, key=lambda d: d is not first_dir):  # the base's first
        for name in ("profile.yaml",):
            if (d / name).is_file() and not (path / name).is_file():
                _copy(d / name, path / name)
        if not any((path / "state" / "run").glob("*")):
            _copy_tree(d / "state" / "run", path / "state" / "run")
    for d in dirs:
        _copy_tree(d / "judge", judge, own)
    manifest = combine(base, {i: p for i, (_, p) in parts.items()}, path)
    manifest["capabilities"]["observed"].update(observed)
    manifest["merged"] = {
        "at": time.time(),
        "shards": [f"{i}/{n}" for i in sorted(parts)],
        "missing": missing,
        "sources": [os.path.abspath(d) for d in dirs],
        "newest": newest,
    }
    notes = [
        f"scenario {sid} was defined differently on different shards "
        f"({len(h)} versions): check every shard ran the same commit"
        for sid, h in sorted(versions.items())
    ]
    profile_note = _profile_note(dirs, base["profile"].get("id"))
    if profile_note is not None:
        notes.insert(0, profile_note)
    version_note = _version_note({i: p for i, (_, p) in parts.items()}, n)
    if version_note is not None:
        notes.insert(0, version_note)
    atomic_write(path / "run.json", dumps(redact(manifest)))
    return Merged(path, manifest, recorded, missing, [*notes, *read_notes], dirs)


SKEW = 5.0
"""Seconds a file's time (a shared file system's server clock) may lag ``time.time()``."""


def joined_since(run_path: Path) -> list[str]:
    """The shards (``2/3``) that recorded scenario runs into the merged run in
    ``run_path`` after its ``report.json`` was written (``rook merge --partial``,
    then the missing shard): its report leaves them out until merged again.

    A record's own times decide (a run copied, or unpacked from an artifact, has
    new file times); only the records whose file changed since are read, and those
    of shards the merge had nothing of (``merged.missing``): one of theirs made
    before the merge came since too (its copy arrived late, its file times kept or
    not). A shard's record is late only once it is later than the newest the merge
    took of that shard too (``merged.newest``, on that machine's clock): a shard run
    where the clock is ahead of the merging machine's is not late for that."""
    try:
        manifest = read_json(run_path / "run.json")
        merged, plan, n = manifest["merged"], list(manifest["plan"]), int(manifest["shards"])
        if not all(isinstance(k, str) for k in plan) or n < 1:  # edited by hand: none known
            return []
        since, reported = float(merged["at"]), (run_path / "report.json").stat().st_mtime
        at, missing = since, {str(x) for x in merged.get("missing") or []}
        if reported < since - SKEW:  # a merge killed between its run.json and its report:
            since = reported  # the report is an earlier merge's
        for inv in manifest.get("invocations") or []:  # rook run --run ID since: its report
            if isinstance(inv, dict) and "shard" not in inv:
                since = max(since, float(inv.get("ended") or 0))
        touched = max(since, reported)
        newest = merged.get("newest") if isinstance(merged.get("newest"), dict) else {}
        if reported < at - SKEW:  # a merge killed before its report: what it took is not
            newest = {}  # in the report shown
    except (OSError, RunStoreError, KeyError, TypeError, ValueError):
        return []
    where, late = shard_of(plan, n), set()
    for key in plan:
        if where[key] in late:
            continue
        path = run_path / "scenarios" / f"{key}.json"
        absent = f"{where[key]}/{n}" in missing  # its copy may keep older file times
        try:
            if path.stat().st_mtime <= touched and not absent:
                continue
            record = read_record(path) or {}
        except (OSError, RunStoreError):
            continue
        times: list[float] = [
            t for t in (record.get("started"), record.get("ended")) if isinstance(t, (int, float))
        ]
        seen = newest.get(f"{where[key]}/{n}")  # its clock may be ahead of the merge's
        limit = max(since, seen) if isinstance(seen, (int, float)) else since
        if times and (max(times) > limit or (absent and max(times) < at)):
            late.add(where[key])
    return [f"{i}/{n}" for i in sorted(late)]


def write_merged_report(
    merged: Merged,
    min_pass_rate: float | None = None,
    redact: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """Write the merged run's ``report.json`` as ``rook run`` writes an unsharded
    run's (:func:`rook_core.report.write_report`: one entry per line, one record
    read at a time) and return the report, its entries read back on demand."""
    manifest = redact(merged.manifest) if redact else merged.manifest
    return write_report(
        manifest,
        merged.records(),
        min_pass_rate,
        path=merged.path / "report.json",
        redact=redact,
    )


__all__ = ["Merged", "combine", "joined_since", "merge_runs", "write_merged_report"]
