"""A hook's environment: what every hook inherits from Rook's own, the
``ROOK_*`` variables of its phase, and the check that a profile's ``env``
variables are set before anything runs."""

from __future__ import annotations

import fnmatch
import os
from typing import Any

from .errors import MissingEnvError
from .models import Profile, RunContext
from .workspace import Agent


def missing_env(
    profile: Profile, environ: dict[str, str] | os._Environ[str] | None = None
) -> str | None:
    """What :func:`check_env` says of the profile's ``env`` variables not set, or
    ``None`` when every one is: for a command that reports it with other problems."""
    env = os.environ if environ is None else environ
    missing = [e for e in profile.env if not env.get(e.variable)]
    if not missing:
        return None
    lines = "\n".join(
        f"  {e.variable}: {e.purpose}"
        + (" (set, but empty)" if e.variable in env else "")  # a CI secret that is missing
        for e in missing
    )
    names = " ".join(f"{e.variable}=..." for e in missing)
    return (
        f"profile {profile.id!r} ({profile.path}) needs these environment variables, "
        f"which are not set:\n{lines}\nset them first, e.g.: export {names}"
    )


def check_env(profile: Profile, environ: dict[str, str] | os._Environ[str] | None = None) -> None:
    problem = missing_env(profile, environ)
    if problem is not None:
        raise MissingEnvError(problem)


def base_environment(profile: Profile) -> dict[str, str]:
    """What every hook inherits: Rook's environment without any ``ROOK_*`` name
    (except the profile's ``env`` variables, which the hooks need whatever their
    name), plus the profile's ``hook_env`` (which holds no Rook-owned name, see
    :data:`rook_core.models.ROOK_VARIABLES`, but may hold another ``ROOK_*``
    name). Phase variables are added per call."""
    needed = {e.variable for e in profile.env}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_") or k in needed}
    if profile.inherit_env is not None:
        keep = [*profile.inherit_env, *(e.variable for e in profile.env)]
        env = {k: v for k, v in env.items() if any(fnmatch.fnmatchcase(k, pat) for pat in keep)}
    env.update(profile.hook_env)
    return env


def hook_env(
    base: dict[str, str],
    agent: Agent,
    run: RunContext,
    phase: str,
    state_dir: Any,
    scenario_id: str | None = None,
    session: str | None = None,
    turn: int | None = None,
    conversation: str | None = None,
) -> dict[str, str]:
    """A hook's environment: ``base`` (:func:`base_environment`) and the
    ``ROOK_*`` variables of its phase, each only in the phases the contract
    gives it (:data:`rook_core.models.ROOK_VARIABLES`). The engine's hooks and
    the judge profile's use this one function."""
    env = dict(base)
    env["ROOK_HOOK"] = phase
    env["ROOK_WORKSPACE"] = str(agent.workspace)
    env["ROOK_PROJECT"] = agent.project
    env["ROOK_AGENT"] = agent.name
    env["ROOK_STATE_DIR"] = str(state_dir)
    env["ROOK_RUN_STATE_DIR"] = str(run.state_dir)
    env["ROOK_RUN_ID"] = run.id
    if scenario_id is not None and phase != "prepare":
        env["ROOK_SCENARIO_ID"] = scenario_id
        env["ROOK_SESSION"] = session or ""
    if phase == "execute" and turn is not None:
        env["ROOK_TURN"] = str(turn)
    if phase in ("execute", "close", "collect") and conversation:
        env["ROOK_CONVERSATION"] = conversation
    return env


__all__ = ["base_environment", "check_env", "hook_env"]
