"""The capabilities a profile has shown in earlier runs
(``profiles/<id>.observed.json``, beside the profile): read before a run,
so that a scenario needing one the profile does not declare can still run,
and added to after it (SPEC: capabilities are observed)."""

from __future__ import annotations

from pathlib import Path

from .models import CAPABILITIES, Profile
from .store import read_json
from .workspace import Agent


def observed_file(agent: Agent, profile: Profile) -> Path:
    return agent.profiles_dir / f"{profile.id}.observed.json"


def load_observed(agent: Agent, profile: Profile) -> dict[str, bool]:
    """The capabilities this profile has shown in earlier runs: only those Rook
    wrote as ``true`` (a damaged or hand-edited file shows nothing more)."""
    return _read_observed(observed_file(agent, profile))


def _read_observed(path: Path) -> dict[str, bool]:
    try:
        data = read_json(path)
    except Exception:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: True for k, v in data.items() if k in CAPABILITIES and v is True}


def save_observed(agent: Agent, profile: Profile, observed: dict[str, bool]) -> None:
    save_observed_file(observed_file(agent, profile), observed)


def save_observed_file(path: Path, observed: dict[str, bool]) -> None:
    """Add ``observed`` to the profile's ``<id>.observed.json`` at ``path`` (a run,
    or a merged one: ``rook merge``)."""
    from .store import atomic_write, dumps

    merged = {**_read_observed(path), **{k: True for k, v in observed.items() if v}}
    try:
        atomic_write(path, dumps(merged))
    except Exception:
        pass  # history of observations is a convenience; never fail a run on it


__all__ = ["load_observed", "observed_file", "save_observed", "save_observed_file"]
