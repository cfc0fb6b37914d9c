"""The secrets a command redacts when it shows a past run, or speaks before it
has a profile of its own: the ``env`` variables of the profile a run kept, of
its judge profile and of every profile of the agent or the workspace (a
folder as typed, a flag's value, a plugin's error may hold one). Profiles
are read only when there is something to say."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, RookError, RunStoreError
from .store import RUN_FILE, read_json

if TYPE_CHECKING:
    from .redact import Redactor


def secret_names(run_path: Path) -> list[str]:
    """The ``env`` variables of the profile copy a run keeps (``profile.yaml``),
    and of the judge profile it names (:func:`judge_secret_names`): their
    values are secrets wherever the run's data is shown again; then those of
    every profile of the workspace, as the run redacted them (its folder may
    hold one)."""
    from .definitions import agent_secret_names, profile_secret_names

    names = profile_secret_names(run_path / "profile.yaml")  # also a copy left no YAML
    agent_profiles = run_path.parent.parent / "profiles"  # the run's folder is <agent>/runs/<id>
    return names + judge_secret_names(run_path) + agent_secret_names(agent_profiles)


def judge_secret_names(run_path: Path) -> list[str]:
    """The ``env`` variables of the judge profile ``run.json`` names, read from
    its agent's profiles (the run keeps no copy of it; the run redacted their
    values as the agent profile's); none when it is not found there now. A run
    not judged (yet: ``--phases`` without judge) names none: then those of the
    one ``config.yaml`` names, whose values the run redacted as well."""
    from .definitions import env_names, locate_profile
    from .yamlio import load_yaml

    try:
        manifest = read_json(run_path / RUN_FILE)
    except RunStoreError:  # damaged: what reads it next says so
        return []
    judge = manifest.get("judge_profile") if isinstance(manifest, dict) else None
    if not isinstance(judge, dict):
        judge = _configured_judge(run_path)
    pid, agent = judge.get("id"), judge.get("agent")
    if (
        not isinstance(pid, str)
        or not isinstance(agent, str)
        or "/" in agent
        or agent in ("", "..", ".")
    ):
        return []
    try:  # the run's folder is <agent>/runs/<id>; the judge's agent is one of the project's
        path = locate_profile(run_path.parent.parent.parent / agent / "profiles", pid)
        return env_names(load_yaml(path, ConfigError))
    except ConfigError:
        return []


def _configured_judge(run_path: Path) -> dict[str, Any]:
    """The judge profile ``config.yaml`` names (``NAME`` or ``AGENT/NAME``), as
    ``run.json`` names one; empty when none is named or the file cannot be read.
    The run's folder is ``<workspace>/.testmuai/rook/projects/P/agents/A/runs/ID``."""
    from .workspace import read_config

    try:
        ref = read_config(run_path.parents[7]).get("judge_profile")
    except (ConfigError, IndexError):
        return {}
    agent, _, pid = ref.rpartition("/") if isinstance(ref, str) else ("", "", "")
    return {"id": pid, "agent": agent or run_path.parent.parent.name} if pid else {}


def activate_agent_redactor(profiles_dir: Path, runs_dir: Path) -> None:
    """Redact :func:`~rook_core.definitions.agent_secret_names` from every
    message until the command has a profile or a run of its own; the ids of
    the agent's runs are kept whole (:meth:`~rook_core.redact.Redactor.keep`:
    "latest is ID")."""
    from .definitions import agent_secret_names
    from .redact import Redactor, activate

    redactor = Redactor.for_variables(agent_secret_names(profiles_dir))
    if redactor and runs_dir.is_dir():
        for entry in os.scandir(runs_dir):
            redactor.keep(entry.name)
    activate(redactor)


@contextmanager
def agent_secrets_redacted(profiles_dir: Path, runs_dir: Path) -> Iterator[None]:
    """Say a :class:`RookError` raised inside (a run or a profile not found,
    named with its folder) with :func:`activate_agent_redactor`'s redaction:
    the command has no profile of its own yet. The profiles are read only
    when one is raised."""
    try:
        yield
    except RookError:
        activate_agent_redactor(profiles_dir, runs_dir)
        raise


@contextmanager
def flags_redacted(workspace: str | None, project: str | None, agent: str | None) -> Iterator[None]:
    """Say a :class:`RookError` raised inside (a flag checked before the agent is
    found: ``--report FORMAT:PATH``, ``--phases``) with
    :func:`activate_agent_redactor`'s redaction when the workspace and agent
    the flags name are found (else as it is): the value is shown as typed."""
    try:
        yield
    except RookError:
        from .workspace import find_workspace, select_agent

        try:
            found = select_agent(find_workspace(workspace), project, agent, workspace)
        except (RookError, OSError):
            found = None
        if found is not None:
            activate_agent_redactor(found.profiles_dir, found.runs_dir)
        raise


def workspace_redactor(workspace: str | None) -> Redactor:
    """A redactor of the ``env`` values of every profile of every agent of the
    workspace ``workspace`` names (as typed) and of the one the current folder
    is in: for what is said before a command has found its agent, a value
    Click refuses (``rook run -j VALUE``, shown as typed) or a plugin that
    failed to load (its error). Both: a ``-w`` that names another folder
    (``-w /``, a typo) does not make the secrets of the project Rook was
    started in safe to print. Made only then: it costs a command nothing
    otherwise."""
    from .definitions import workspace_secret_names
    from .redact import Redactor
    from .workspace import find_workspace

    names: list[str] = []
    for typed in dict.fromkeys([workspace, None]):
        try:
            names += workspace_secret_names(find_workspace(typed))
        except (RookError, OSError):
            continue
    return Redactor.for_variables(list(dict.fromkeys(names)))


def typed_workspace(args: list[str]) -> str | None:
    """The ``-w``/``--workspace`` value in a command line's ``args``, if any."""
    given = None
    for i, arg in enumerate(args):
        if arg in ("-w", "--workspace") and i + 1 < len(args):
            given = args[i + 1]
        elif arg.startswith("--workspace="):
            given = arg.partition("=")[2]
        elif arg.startswith("-w") and not arg.startswith("--") and len(arg) > 2:
            given = arg[2:]
    return given


__all__ = [
    "activate_agent_redactor",
    "agent_secrets_redacted",
    "flags_redacted",
    "judge_secret_names",
    "secret_names",
    "typed_workspace",
    "workspace_redactor",
]
