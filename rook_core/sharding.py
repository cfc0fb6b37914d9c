"""Sharding: ``rook run --shard I/N`` runs a deterministic 1/N of a run's scenario runs.

Every shard plans the same run (same workspace, same selection flags) and
keeps the scenario runs whose place in the partition is ``I``. The partition
ranks the scenario-run keys (``<scenario id>.<repeat>``) by the SHA-256 of the
key and deals them round-robin, so it is the same on every machine and Python
version (never ``hash()``) and the shards differ in size by at most one.

All shards write under one run id (``--run ID`` or ``--run-name NAME``, which
create the run when it does not exist yet). Shards on one shared file system
write into the same directory at the same time, so nothing two shards write
has the same name:

* a scenario record is per key (``scenarios/<key>.json``): one shard owns it;
* ``run.json`` is written once, exclusively, by whichever shard comes first
  (the run's id, profile, full plan and shard count); each shard keeps its own
  manifest in ``run.shard-I-of-N.json``, and likewise ``prepare.shard-I-of-N.json``
  and ``report.shard-I-of-N.json`` (prepare runs once per shard);
* :mod:`rook_core.cli.merge` (``rook merge``) assembles ``run.json`` and
  ``report.json`` from the parts and the records, exactly as an unsharded run
  would have them.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import shapes
from .errors import ConfigError, DamagedRecord, RunStoreError, counted, typed
from .models import run_name
from .redact import Redactor
from .store import RunDir, cannot_create, create_run, dumps, read_json

_SHARD = r"(?a)^\s*(\d+)\s*/\s*(\d+)\s*$"  # ASCII digits: int() would read '١/٢' as 1/2
_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_LATEST = r"(?a)^latest(?:~\d+)?$"  # the newest run to every command (history.resolve_run)
PART = r"^run\.shard-(\d+)-of-(\d+)\.json$"
MAX_SHARDS = 100_000
"""The most shards a run is split into (a Kubernetes indexed Job's most completions)."""
BASE_KEYS = (
    "id",
    "dir",
    "workspace",
    "project",
    "agent",
    "profile",
    "created",
    "plan",
    "definitions",
    "shards",
    "continuity",
)
"""What the shared ``run.json`` of a sharded run holds until it is merged."""
PART_KEYS = frozenset(
    {
        *BASE_KEYS,
        *("phases", "invocations", "capabilities", "prepare", "kills", "interrupted"),
        *("judge_profile", "shard", "merged"),
    }
)
"""The keys Rook writes in a shard's part (``run.shard-I-of-N.json``): the shard's
manifest (``runner``, ``engine``, :func:`assign`)."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def suffix(self) -> str:
        return f"shard-{self.index}-of-{self.count}"

    def part(self, name: str) -> str:
        """This shard's own file for ``name``: ``run.json`` -> ``run.shard-1-of-3.json``."""
        stem, dot, ext = name.rpartition(".")
        return f"{stem}.{self.suffix}.{ext}" if dot and stem else f"{name}.{self.suffix}"


def parse_shard(value: str | None) -> Shard | None:
    """``"2/3"`` -> ``Shard(2, 3)``; ``None`` stays ``None``; anything else is a ConfigError."""
    if value is None:
        return None
    m = re.match(_SHARD, str(value))
    if not m:
        raise ConfigError(
            f"--shard {typed(value)}: use I/N in digits 0-9, e.g. --shard 1/4 (shards count from 1)"
        )
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(
            f"--shard {value}: I must be between 1 and N (N >= 1), e.g. 1/{max(count, 1)}"
        )
    if count > MAX_SHARDS:
        raise ConfigError(f"--shard {value}: N must be at most {MAX_SHARDS}")
    return Shard(index, count)


def rank(key: str) -> str:
    """The stable sort key of a scenario-run key: its SHA-256, hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def shard_keys(plan: list[str], shard: Shard) -> list[str]:
    """The keys of ``plan`` that belong to ``shard``, in plan order.

    Keys are ranked by SHA-256 and dealt round-robin over the N shards: the
    result depends only on the set of keys, never on the machine, the Python
    version or the order the scenarios were loaded in. Only this shard's part
    is built (N may be far larger than the plan: the shards past its end have
    nothing to do)."""
    unique = list(dict.fromkeys(plan))
    ranked = sorted(unique, key=lambda k: (rank(k), k))
    mine = set(ranked[shard.index - 1 :: shard.count])
    return [k for k in unique if k in mine]


def shard_of(plan: list[str], count: int) -> dict[str, int]:
    """The shard index (from 1) of each key of ``plan`` split ``count`` ways, in one
    ranking: what :func:`shard_keys` deals, for every key at once."""
    ranked = sorted(dict.fromkeys(plan), key=lambda k: (rank(k), k))
    return {k: i % count + 1 for i, k in enumerate(ranked)}


def partition(keys: list[str], count: int) -> list[list[str]]:
    """All ``count`` parts of ``keys`` (:func:`shard_keys` of each shard)."""
    return [shard_keys(keys, Shard(n, count)) for n in range(1, count + 1)]


def run_id_from_name(name: str) -> str:
    """A run id from ``--run-name``: the name when it is already a valid id, else a
    slug of it plus 8 hex digits of its SHA-256 (the same on every machine)."""
    text = name.strip()
    if not text:
        raise ConfigError("--run-name: must not be empty (e.g. --run-name ci-$GITHUB_RUN_ID)")
    if re.match(_LATEST, text):
        raise ConfigError(
            f"--run-name {text}: latest names the newest run wherever a command takes a run "
            "(rook runs show latest), so no run is named so; choose another name"
        )
    if re.match(_ID, text):
        return text
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:100] or "run"
    return f"{slug}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


def requested_run_id(run_id: str | None, run_name: str | None, shard: Shard | None) -> str | None:
    """The run id a ``rook run`` asks for; checks the flags go together."""
    if run_id is not None and not run_id.strip():  # `--run "$ID"` with ID empty
        raise ConfigError(
            f"--run {run_id!r}: names no run; give its id, a unique prefix, latest or "
            "latest~N, or leave the flag out to start a new run"
        )
    if run_id and run_name is not None:
        raise ConfigError("--run and --run-name: give one of them, not both")
    if shard is not None and not run_id and run_name is None:
        raise ConfigError(
            f"--shard {shard.label}: every shard must write into the same run; "
            "pass the same --run ID or --run-name NAME to every shard "
            "(e.g. --run-name ci-$GITHUB_RUN_ID, which a re-run of failed jobs keeps)"
        )
    if run_name is not None:  # an empty one is refused, never taken for no name
        return run_id_from_name(run_name)
    if run_id and shard is not None and re.match(_LATEST, run_id):
        raise ConfigError(
            f"--run {run_id} with --shard: every shard writes into the run named exactly "
            "(the first one makes it), where latest would name another run on each; "
            "give the run's id, or --run-name NAME"
        )
    if run_id and not re.match(_ID, run_id) and shard is not None:
        raise ConfigError(f"--run {run_id}: a run id uses letters, digits, '.', '_' and '-'")
    return run_id


def creates_run(run_name: str | None, shard: Shard | None) -> bool:
    """Whether a missing ``--run`` id is created (sharded or named runs) rather than refused."""
    return shard is not None or run_name is not None


class ShardRunDir(RunDir):
    """A run directory as one shard sees it: the run-wide files it writes
    (``run.json``, ``prepare.json``, ``report.json``) are its own parts, and it
    takes its own lock, so shards sharing a file system never clobber each other."""

    OWN = ("run.json", "prepare.json", "report.json")

    def __init__(self, path: Path, redactor: Redactor, shard: Shard) -> None:
        super().__init__(path, redactor)
        self.shard = shard

    def _name(self, name: str) -> str:
        return self.shard.part(name) if name in self.OWN else name

    def write_json(self, name: str, data: Any, *args: Any, **kwargs: Any) -> Path:
        return super().write_json(self._name(name), data, *args, **kwargs)

    def read_json(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return super().read_json(self._name(name), *args, **kwargs)

    def lock(self, name: str = ".lock", *args: Any, **kwargs: Any) -> None:
        super().lock(f"{name}.{self.shard.suffix}", *args, **kwargs)


def check_alone(run: RunDir, count: int | None, shard: Shard | None) -> None:
    """Refuse a resume of a sharded run while the other kind of process works on it:
    each takes its own lock, so a shard and ``rook run --run ID`` on the merged run
    would both run (and kill as leftovers the hooks of) the same scenario runs."""
    if type(count) is not int or count < 1:
        return
    others = [(".lock", "the whole run")] if shard is not None else shard_locks(run.path, count)
    for name, what in others:
        holder = run.holder(name)
        if holder is not None:
            run.unlock()  # its own, taken a moment ago
            raise ConfigError(
                f"run {run.id} is in use by another rook process ({holder}, {what}); "
                "wait for it to finish, then resume with --run"
            )


def shard_locks(path: Path, count: int | None = None) -> list[tuple[str, str]]:
    """The lock files the shards of the run at ``path`` made (of a ``count``-way split,
    else of any), by name, each with the shard it is (``shard I/N``): a shard working
    on the run holds its own."""
    of = r"\d+" if count is None else str(count)
    return [
        (p.name, f"shard {m[1]}/{m[2]}")
        for p in sorted(path.glob(f".lock.shard-*-of-{'*' if count is None else count}"))
        if (m := re.fullmatch(rf"\.lock\.shard-(\d+)-of-({of})", p.name))
    ]


def run_dir(path: Path, redactor: Redactor, shard: Shard | None) -> RunDir:
    """The run directory of an existing run, as this shard (or an unsharded run) sees it.

    Its ``scenarios`` and ``state/run`` folders are made again when something removed
    them (a hook's clean-up aimed a level too high): the run stopped then, unable to
    write a record, saying to finish it with ``rook run --run ID``, which must not
    fail on the same missing folder."""
    try:
        (path / "scenarios").mkdir(exist_ok=True)
        (path / "state" / "run").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunStoreError(
            f"cannot write in the run directory {path}: {exc.strerror or exc}"
        ) from None
    return RunDir(path, redactor) if shard is None else ShardRunDir(path, redactor, shard)


def new_run(runs_dir: Path, redactor: Redactor, run_id: str | None, shard: Shard | None) -> RunDir:
    """Create the run directory: a fresh id, or the named one (``--run``/``--run-name``),
    which another shard may have created a moment ago (the run's lock, taken next,
    keeps two processes of the same shard apart)."""
    if run_id is None:
        return create_run(runs_dir, redactor)
    path = runs_dir / run_id
    try:
        (path / "scenarios").mkdir(parents=True, exist_ok=True)
        (path / "state" / "run").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_create(path, exc) from None
    return run_dir(path, redactor, shard)


def _write_exclusive(path: Path, text: str) -> bool:
    """Create ``path`` with ``text`` unless it exists; atomic (link of a complete file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
    except OSError as exc:
        raise RunStoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass


def publish(run: RunDir, manifest: dict[str, Any], shard: Shard | None) -> None:
    """For a new sharded run: write the shared ``run.json`` once (first shard wins)
    and check that a shard that came second planned exactly the same run."""
    if shard is None:
        return
    manifest["shards"] = shard.count
    base = {k: manifest[k] for k in BASE_KEYS if k in manifest}
    base["phases"], base["invocations"] = [], []
    base["capabilities"] = {"declared": manifest["capabilities"]["declared"], "observed": {}}
    target = run.path / "run.json"
    if _write_exclusive(target, dumps(run.redactor.data(base))):
        return
    existing = read_json(target)
    if isinstance(existing, dict):
        check_same_run(existing, manifest, str(target), shard)


def check_same_run(
    existing: dict[str, Any],
    mine: dict[str, Any],
    where: str,
    shard: Shard | None,
    against: str = "the other copies",
) -> None:
    """Refuse to join a run whose profile, plan or shard count differs from this one's
    (``shard``'s; without one, ``rook merge``'s copy ``against``)."""
    who, ours_is = (f"--shard {shard.label}", "this shard") if shard else ("rook merge", against)
    if existing.get("profile", {}).get("id") != mine.get("profile", {}).get("id"):
        raise ConfigError(
            f"{who}: {where} was made with profile {existing.get('profile', {}).get('id')!r}, "
            f"not {mine.get('profile', {}).get('id')!r}; every shard must use the same profile"
        )
    if existing.get("plan") != mine.get("plan"):
        theirs, ours = existing.get("plan") or [], mine.get("plan") or []
        keys = sorted(set(theirs) ^ set(ours))
        diff = ", ".join(run_names(keys[:5], [*theirs, *ours]))
        diff += f" and {len(keys) - 5} more" if len(keys) > 5 else ""
        raise ConfigError(
            f"{who}: {where} planned other scenario runs than {ours_is} "
            f"(differing: {diff or 'the order'}); every shard must select the same "
            "scenarios from the same workspace (same flags, same commit)"
        )
    if existing.get("shards") != mine.get("shards"):
        raise ConfigError(
            f"{who}: {where} is split into {existing.get('shards')} shards, "
            f"not {mine.get('shards')}"
        )


def run_names(keys: list[str], plans: list[str]) -> list[str]:
    """The scenario runs of record ``keys`` (``fails.2``) as Rook names them to its
    user (:func:`rook_core.models.run_name`: ``fails #2``), each counted in the
    plan of ``plans`` (one or more, joined) that holds it."""
    counts: dict[str, int] = {}
    for key in dict.fromkeys(plans):
        sid = key.rsplit(".", 1)[0]
        counts[sid] = counts.get(sid, 0) + 1
    names = []
    for key in keys:
        sid, _, index = key.rpartition(".")
        if not sid or not index.isdigit():  # not a key Rook plans: as it is
            names.append(key)
            continue
        names.append(run_name(sid, int(index), counts.get(sid, 1)))
    return names


def resume_manifest(
    run_path: Path,
    base: dict[str, Any],
    shard: Shard | None,
    where: str = "",
    flag: str | None = None,
) -> dict[str, Any]:
    """The manifest a ``rook run --run ID`` continues: the run's own, or this shard's
    part. ``where``: the flags that found the run, for the commands a refusal names;
    ``flag``: the one that named it, as typed (``--run-name NAME``,
    :func:`rook_core.resuming.run_flag`), else ``--run ID``."""
    run_id = base.get("id", run_path.name)
    n = base.get("shards")
    if shard is None:
        if n and not base.get("merged"):
            raise ConfigError(
                f"{flag or f'--run {run_id}'}: this run is split into {counted(n, 'shard')} and not merged yet; "
                "resume "
                f"one shard with --run {run_id} --shard I/{n}, or join the shards first with "
                f"rook merge --run {run_id}{where} (then rook run --run {run_id}{where} "
                "finishes whatever is missing, in one process)"
            )
        return base
    if not n:
        raise ConfigError(
            f"--shard {shard.label}: run {run_id} was not started sharded; "
            "resume it without --shard"
        )
    if n != shard.count:
        raise ConfigError(
            f"--shard {shard.label}: run {run_id} is split into {counted(n, 'shard')}; "
            f"use --shard I/{n}"
        )
    part = read_json(run_path / shard.part("run.json"))
    if part is not None:  # (JSON's null: none) an array, say, is no part
        problem = shapes.problem(part, shapes.SHARD_PART)
        if problem is not None:  # as rook merge reads it: refused before anything runs
            raise DamagedRecord(
                f"{run_path / shard.part('run.json')}: {problem}, not what Rook writes there"
            )
        return part
    fresh = copy.deepcopy({k: base[k] for k in BASE_KEYS if k in base})
    fresh["phases"], fresh["invocations"] = [], []
    declared = (base.get("capabilities") or {}).get("declared", {})
    fresh["capabilities"] = {"declared": declared, "observed": {}}
    return fresh


def assign(runs: list[Any], manifest: dict[str, Any], shard: Shard | None) -> list[Any]:
    """Keep the scenario runs of this shard (partitioned over the run's whole plan,
    so a narrower ``--only`` on resume never moves a run to another shard)."""
    if shard is None:
        return runs
    mine = shard_keys(list(manifest["plan"]), shard)
    manifest["shard"] = {"index": shard.index, "count": shard.count, "plan": mine}
    keep = set(mine)
    return [r for r in runs if r.key in keep]


def is_shard(run: RunDir) -> bool:
    return isinstance(run, ShardRunDir)


def joins_merged(run: RunDir) -> bool:
    """Whether ``run`` is a shard of a run already merged (``rook merge --partial``)."""
    if not is_shard(run):
        return False
    try:
        base = read_json(run.path / "run.json")
    except RunStoreError:
        return False
    return isinstance(base, dict) and bool(base.get("merged"))


__all__ = [
    "Shard",
    "ShardRunDir",
    "assign",
    "check_same_run",
    "creates_run",
    "is_shard",
    "joins_merged",
    "new_run",
    "parse_shard",
    "partition",
    "publish",
    "requested_run_id",
    "resume_manifest",
    "run_dir",
    "run_id_from_name",
    "shard_keys",
    "shard_of",
]
