"""``ruhroh-run-manifest.json``: what produced a run, for reproducible reports.

The latest command result's ``adapterVersion``, ``model`` and ``usage`` take
precedence, field by field, over the ``RUHROH_*`` environment fallbacks
(from Rook's environment and the profile's ``hook_env``), which are also
written as they were when present. A variable the profile lists under
``env`` holds a secret and is never copied; every value passes the run's
redactor (the judge profile's ``env`` values too, as in the rest of the record).
``rook merge`` joins the shards' manifests (:func:`merge`) by the same rule.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rook_core.hookio import preview
from rook_core.redact import Redactor, current
from rook_core.store import atomic_write, dumps, read_json

from .ruhroh_protocol import rook_usage, ruhroh_usage

MANIFEST = "ruhroh-run-manifest.json"
VERSION = "rook_ruhroh_run_manifest_v1"

# variable -> (section, field) in the manifest
FALLBACKS: dict[str, tuple[str | None, str]] = {
    "RUHROH_RUN_AGENT_ADAPTER_VERSION": (None, "adapterVersion"),
    "RUHROH_AGENT_PROVIDER": ("model", "provider"),
    "RUHROH_AGENT_MODEL": ("model", "model"),
    "RUHROH_AGENT_MODEL_VERSION": ("model", "version"),
    "RUHROH_AGENT_PROMPT_VERSION": ("model", "promptVersion"),
    "RUHROH_RUN_SEED": (None, "runSeed"),
    "RUHROH_RETRY_POLICY": (None, "retryPolicy"),
    "RUHROH_COST_USD": ("usage", "costUsd"),
    "RUHROH_INPUT_TOKENS": ("usage", "inputTokens"),
    "RUHROH_OUTPUT_TOKENS": ("usage", "outputTokens"),
    "RUHROH_TOTAL_TOKENS": ("usage", "totalTokens"),
}


def _environment(run: Any) -> dict[str, str]:
    """The fallbacks present in what the wrappers saw (Rook's environment as the
    profile's ``inherit_env`` passes it, and its ``hook_env``); secrets withheld."""
    from rook_core.hookenv import base_environment

    profile = run.profile
    secret = {e.variable for e in profile.env}
    env = base_environment(profile)
    return {k: env[k] for k in FALLBACKS if env.get(k) and k not in secret}


def build(run: Any, latest: dict[str, Any], environment: dict[str, str]) -> dict[str, Any]:
    """The manifest from the latest result's values and the environment fallbacks."""
    doc: dict[str, Any] = {
        "version": VERSION,
        "runId": run.id,
        "runRoot": str(run.dir),
        "adapterId": run.profile.id,
        "model": {},
        "usage": {},
        "sources": {},
    }
    for variable, (section, name) in FALLBACKS.items():
        if variable not in environment:
            continue
        value: Any = environment[variable]
        if section == "usage":
            value = _count(name, value)
            if value is None:  # said when the run began (_warn_no_counts)
                continue
        target = doc[section] if section else doc
        target[name] = value
        doc["sources"][f"{section}.{name}" if section else name] = f"env:{variable}"
    if latest.get("adapterVersion") is not None:
        doc["adapterVersion"] = latest["adapterVersion"]
        doc["sources"]["adapterVersion"] = "result"
    for section in ("model", "usage"):
        value = latest.get(section)
        if isinstance(value, dict):
            for name, v in value.items():
                if v is not None:
                    doc[section][name] = v
                    doc["sources"][f"{section}.{name}"] = "result"
        elif value is not None:  # the whole section: the fallbacks it replaced are gone
            doc[section] = value
            for key in [k for k in doc["sources"] if k.startswith(f"{section}.")]:
                del doc["sources"][key]
            doc["sources"][section] = "result"
    for key in ("continuity", "resultAt"):
        if latest.get(key) is not None:
            doc[key] = latest[key]
    doc["environment"] = dict(environment)
    doc["updated"] = time.time()
    return {k: v for k, v in doc.items() if v not in ({}, None)}


def _count(name: str, text: str) -> Any:
    """A usage fallback's text as the number it holds (``None``: it holds no count)."""
    value = (ruhroh_usage(rook_usage({name: text})) or {}).get(name)
    return value if isinstance(value, (int, float)) and value >= 0 else None


NO_COUNT_WARNED = "ruhroh:no-count-warned"
"""The ``run.resources`` key set once the usage fallbacks that hold no count were said."""


def _warn_no_counts(run: Any, environment: dict[str, str]) -> None:
    """A usage fallback (``RUHROH_COST_USD=abc``) that holds no count is left out of
    the manifest's ``usage`` (a report summing costs would break on text): said on
    standard error once per run, which goes on."""
    resources = getattr(run, "resources", None)
    if resources is None or resources.get(NO_COUNT_WARNED) or getattr(run, "judge", False):
        return
    resources[NO_COUNT_WARNED] = True
    redactor = getattr(run, "redactor", None)
    for variable, (section, name) in FALLBACKS.items():
        if section == "usage" and variable in environment:
            if _count(name, environment[variable]) is None:
                value = preview(environment[variable], 40, redactor)  # quoted: no line break
                message = (
                    f"rook: warning: {variable}={value} is no count (a number, "
                    f"not negative): {MANIFEST} keeps it under environment only, not as "
                    f"usage.{name}; set it to a number such as 0.42 (or unset it)"
                )
                sys.stderr.write((redactor.text(message) if redactor else message) + "\n")


def _recorded(path: Path) -> dict[str, Any]:
    try:
        data = read_json(path)
    except Exception:
        return {}
    return data if isinstance(data, dict) else {}


def _declared_continuity(profile: Any) -> str | None:
    """The continuity level the profile's Ruhroh entries declare (execute's first)."""
    hooks = getattr(profile, "hooks", None) or {}
    entries = sorted(hooks.values(), key=lambda e: e.phase != "execute")
    for entry in entries:
        config = getattr(entry, "config", None)
        if isinstance(config, dict) and isinstance(config.get("continuity"), str):
            return str(config["continuity"])
    return None


def write(run: Any, result: dict[str, Any] | None = None) -> Path:
    """Write (or update with ``result``'s values) the run's manifest, atomically.
    The environment fallbacks are those of the invocation that recorded the
    latest result: one that has recorded none yet (a resume, ``rook run --run
    ID``) keeps those the run's wrappers saw. Begun (no ``result``), it records
    the declared continuity level, so a run none of whose scenarios could run
    (a ``workspace_only`` wrapper's conversations) still has it."""
    path = Path(run.dir) / MANIFEST
    recorded = _recorded(path)
    latest = dict(recorded.get("latest") or {})
    environment = _environment(run)
    if not result:
        _warn_no_counts(run, environment)
    if not result and "continuity" not in latest:
        level = _declared_continuity(run.profile)
        if level:
            latest["continuity"] = level
    if result:
        for key in ("adapterVersion", "model", "usage", "continuity"):
            if result.get(key) is not None:
                latest[key] = result[key]
        latest["resultAt"] = time.time()
    elif isinstance(recorded.get("environment"), dict):
        _warn_another_seed(run, recorded["environment"], environment)
        environment = {k: v for k, v in recorded["environment"].items() if k in FALLBACKS}
    doc = build(run, latest, environment)
    doc["latest"] = latest
    redactor = getattr(run, "redactor", None)  # the run's: the judge profile's env values too
    if redactor is None:
        redactor = Redactor.for_variables(
            [e.variable for e in run.profile.env], {**os.environ, **run.profile.hook_env}
        )
    redactor.keep(str(run.id))  # the run's id, as its record keeps it (a PIN of 2026)
    atomic_write(path, dumps(redactor.data(doc)))
    return path


SEED = "RUHROH_RUN_SEED"
SEED_WARNED = "ruhroh:seed-warned"
"""The ``run.resources`` key set once a resume's other run seed was warned of."""


def _warn_another_seed(run: Any, recorded: dict[str, Any], environment: dict[str, str]) -> None:
    """A resume (``rook run --run ID``) whose ``RUHROH_RUN_SEED`` is not the one the
    run's wrappers saw: the scenario runs it starts afresh get sample seeds from the
    new one, and the manifest's ``runSeed`` becomes it with the resume's first
    result (the fallbacks are the latest invocation's), though what was recorded
    before was seeded from the old one. Said once per run, before any scenario runs;
    the run goes on. Only when a run is begun again, so never on a fresh run. The
    resume's seed is compared as the manifest records it (redacted: a PIN of 2026 in
    a seed of 20261207 is ``[redacted:PIN]1207`` there)."""
    old, new = recorded.get(SEED), environment.get(SEED)
    redactor = getattr(run, "redactor", None)
    if redactor is not None and new is not None:  # recorded as the manifest writes it
        new = redactor.text(new)
    resources = getattr(run, "resources", None)
    if old == new or getattr(run, "judge", False) or resources is None:
        return
    if resources.get(SEED_WARNED):
        return
    resources[SEED_WARNED] = True
    was = f"{SEED}={old}" if old is not None else f"no {SEED}"
    now = f"{SEED}={new}" if new is not None else f"no {SEED}"
    message = (
        f"rook: warning: run {run.id} began with {was} and this resume has {now}: the "
        "scenario runs it starts afresh get sample seeds from it (those it goes on with "
        f"keep theirs), and {MANIFEST}'s runSeed follows the latest result; "
        + _keep_seed(run.profile, old)
    )
    sys.stderr.write((redactor.text(message) if redactor else message) + "\n")


def _keep_seed(profile: Any, old: str | None) -> str:
    """What keeps the run's seed ``old``: the profile's ``hook_env`` when it sets the
    seed (it wins over Rook's environment, so a resume with the variable set would
    still run with the profile's), else Rook's environment."""
    if SEED in (getattr(profile, "hook_env", None) or {}):
        where = f"hook_env in {getattr(profile, 'path', None) or getattr(profile, 'id', '')}"
        if old is None:
            return f"remove {SEED} from {where} to keep the run's seed"
        return f"set {SEED} back to {old} under {where} to keep the run's seed"
    if old is None:
        return f"resume with {SEED} unset"
    return f"resume with {SEED}={old} to keep the run's seed"


def _warn_mixed_seeds(merged: Any, found: list[dict[str, Any]]) -> None:
    """Shards that ran with different ``RUHROH_RUN_SEED`` values, or some with none
    (each as its manifest recorded it, redacted): each shard's scenario runs were
    seeded from its own, and the merged manifest's ``runSeed`` is the last shard's,
    so the merged run cannot be reproduced from it. Said once, on standard error, as
    a resume with another seed is (:func:`_warn_another_seed`); the merge goes on."""
    from rook_core.report import printable

    seeds: dict[str | None, int] = {}
    for doc in found:  # a manifest leaves out an environment with no fallback in it
        environment = doc.get("environment")
        seed = environment.get(SEED) if isinstance(environment, dict) else None
        key = seed if isinstance(seed, str) else None
        seeds[key] = seeds.get(key, 0) + 1
    if len(seeds) < 2:
        return
    each = ", ".join(
        (f"{SEED}={seed}" if seed is not None else f"no {SEED}")
        + f" ({count} shard {'copy' if count == 1 else 'copies'})"
        for seed, count in seeds.items()
    )
    run_id = (merged.manifest or {}).get("id")
    sys.stderr.write(
        printable(
            current().text(
                f"rook: warning: the shards of run {run_id} ran with different {SEED} "
                f"values: {each}; each shard's scenario runs were seeded from its own, and "
                f"{MANIFEST}'s runSeed is the last shard's; run every shard with one "
                f"{SEED} to keep the run reproducible"
            )
        )
        + "\n"
    )


def merge(merged: Any, sub: str = "") -> Path | None:
    """The merged run's manifest from its shards' (``rook merge``): their latest
    values applied in the order the shards recorded their results, so field by
    field the latest result wins, as in a single run; the environment fallbacks
    of the shard that recorded last. ``None`` when no shard has a manifest.
    ``sub="judge"``: the judge profile's manifests, in each run's ``judge/``."""
    found = []
    for d in merged.sources:
        try:
            doc = read_json(Path(d) / sub / MANIFEST)
        except Exception:
            doc = None
        if isinstance(doc, dict):
            found.append(doc)
    if not found:
        return None

    def when(doc: dict[str, Any]) -> tuple[float, float]:
        latest = doc.get("latest") or {}
        return float(latest.get("resultAt") or 0), float(doc.get("updated") or 0)

    found.sort(key=when)
    latest: dict[str, Any] = {}
    for doc in found:
        for key, value in (doc.get("latest") or {}).items():
            if value is not None:
                latest[key] = value
    manifest = merged.manifest
    profile = manifest.get("judge_profile" if sub else "profile") or {}
    run = SimpleNamespace(
        id=manifest.get("id"),
        dir=Path(merged.path) / sub,
        profile=SimpleNamespace(id=profile.get("id")),
    )
    if not sub:
        _warn_mixed_seeds(merged, found)
    environment = {k: v for k, v in (found[-1].get("environment") or {}).items() if k in FALLBACKS}
    doc = build(run, latest, environment)
    doc["latest"] = latest
    doc["merged"] = {"from": [str(Path(d) / sub) for d in merged.sources]}
    path = Path(merged.path) / sub / MANIFEST
    # its parts were redacted when each shard wrote them; its folders are rook merge's
    atomic_write(path, dumps(current().data(doc)))
    return path
