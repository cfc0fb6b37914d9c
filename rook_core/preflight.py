"""What a run checks before anything runs: its plan (the scenario runs), each
hook entry as its transport resolves and checks it, and each scenario an
entry could never send. Each problem is a :class:`ConfigError` (exit 2)
naming the file and field."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from .errors import ConfigError, RookError, ScenarioError, exception_text
from .hookenv import base_environment
from .models import MAX_PLANNED, Profile, Scenario, ScenarioRun
from .plugins import Rook, plugin_failure
from .transports import PHASE_HOOKS, opt_in, run_check, searching
from .workspace import Agent


def plan_runs(scenarios: list[Scenario], repeat: int | None) -> list[ScenarioRun]:
    planned = sum(repeat or s.repeat for s in scenarios)
    if planned > MAX_PLANNED:
        if repeat:
            where = f"--repeat {_digits(repeat)}"
        else:
            big = max(scenarios, key=lambda s: s.repeat)
            where = f"{big.path or big.id}: repeat: {_digits(big.repeat)}"
        raise ConfigError(
            f"{where}: plans {_counted(planned)} scenario runs; a run plans at most "
            f"{MAX_PLANNED:,} (split it into several runs)"
        )
    runs: list[ScenarioRun] = []
    for s in scenarios:
        n = repeat or s.repeat
        runs.extend(ScenarioRun(s, i, n) for i in range(1, n + 1))
    return runs


def _digits(n: int) -> str:
    """``n`` in a message: whole up to 20 digits, else its first 20 and how many."""
    text = str(n)
    return text if len(text) <= 20 else f"{text[:20]}... ({len(text):,} digits)"


def _counted(n: int) -> str:
    """A count Rook made (the runs a plan holds) in a message: ``1,200,000``, as the
    limit beside it is written; past 20 digits as :func:`_digits` shows one."""
    return f"{n:,}" if len(str(n)) <= 20 else _digits(n)


def kept(owner: str, callback: str, given: Any, returned: Any) -> Any:
    """The config a transport's ``resolve`` or ``check`` returned; ``None`` for
    an entry that had one is a forgotten ``return config``, refused up front
    rather than failing every scenario with the plugin's own ``TypeError``; so is
    the coroutine of one written ``async def``."""
    if asyncio.iscoroutine(returned):
        returned.close()  # never to be awaited: no 'never awaited' warning of Python's
        raise ConfigError(
            f"the transport plugin {owner} returned a coroutine from {callback} (an async def); "
            f"{callback} is a plain function: return the entry's config"
        )
    if returned is None and given is not None:
        raise ConfigError(
            f"the transport plugin {owner} returned None from {callback}; return the entry's config"
        )
    return returned


def resolve_entry(rook: Rook, profile: Profile, agent: Agent, phase: str, entry: Any) -> None:
    """Let the entry's transport check it before anything runs (``resolve``, then
    ``check``); a :class:`ConfigError` names the problem. ``rook run`` and ``rook
    doctor`` both use it, so they find the same mistakes."""
    spec = rook.transports.get(entry.transport)
    if spec is None:
        return
    hook_name = PHASE_HOOKS[phase]
    if not rook.runs_phase(entry.transport, hook_name):
        raise ConfigError(
            f"transport {entry.transport!r} ({rook.transports.owner(entry.transport)}) runs "
            f"no {phase!r} phase (it implements no {hook_name} hook)"
        )
    owner = rook.transports.owner(entry.transport)
    try:
        if spec.resolve is not None:
            entry.config = kept(owner, "resolve", entry.config, spec.resolve(entry.config, agent))
        if spec.check is not None:
            checked = run_check(spec, entry.config, rook, phase, profile)
            entry.config = kept(owner, "check", entry.config, checked)
    except RookError:
        raise
    except BaseException as exc:  # the plugin's bug: named, never a traceback
        if not plugin_failure(exc):
            raise
        raise ConfigError(
            f"the transport plugin {owner} could not check "
            f"its {entry.transport!r} entry: {exception_text(exc)}"[:500]
        ) from None


def resolve_entries(rook: Rook, profile: Profile, agent: Agent) -> None:
    """Let each transport check its entries before anything runs."""
    with searching(base_environment(profile).get("PATH", os.defpath)):
        for phase, entry in profile.hooks.items():
            try:
                resolve_entry(rook, profile, agent, phase, entry)
            except ConfigError as exc:
                raise type(exc)(f"{profile.path}: hooks.{phase}: {exc}") from None


def declared_continuity(rook: Rook, profile: Profile) -> list[str]:
    """The continuity levels the profile's entries declare (their transport's
    ``continuity``; execute's first), each once: what a run records in its
    ``run.json``, once per run, so its reports show them when no hook ran."""
    levels: dict[str, None] = {}
    for phase, entry in sorted(profile.hooks.items(), key=lambda item: item[0] != "execute"):
        spec = rook.transports.get(entry.transport)
        declared = getattr(spec, "continuity", None)
        if declared is None:
            continue
        try:
            level = declared(entry.config)
        except BaseException as exc:  # the plugin's bug: named, never a traceback
            if not plugin_failure(exc):
                raise
            level = exc
        if level is not None and not isinstance(level, str):
            owner = rook.transports.owner(entry.transport)
            said = exception_text(level) if isinstance(level, BaseException) else repr(level)[:200]
            raise ConfigError(
                f"{profile.path}: hooks.{phase}: the transport plugin {owner} could not say "
                f"its {entry.transport!r} entry's continuity level: "
                + (said if isinstance(level, BaseException) else f"returned {said}, not a text")
            )
        if level:
            levels[level] = None
    return list(levels)


def not_a_reason(returned: Any, hook: str, fine: str) -> str:
    """What a transport's ``runnable`` or ``check_scenario`` returned that is no
    reason (``True``, a number, a coroutine), said of its plugin."""
    if asyncio.iscoroutine(returned):
        returned.close()  # never to be awaited: no 'never awaited' warning of Python's
    shown = repr(returned)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    return f"returned {shown} from {hook}, not a reason (a text, or None when {fine})"


def check_scenarios(
    rook: Rook, profile: Profile, scenarios: list[Scenario], phases: Sequence[str] | None = None
) -> None:
    """Refuse, before anything runs, a scenario an entry of the profile could never
    send as written (its transport's ``check_scenario``), naming the file and field;
    with ``phases`` (a resume), only the entries of those phases, which send now."""
    problems: dict[str, None] = {}
    for phase, entry in profile.hooks.items():
        if phases is not None and phase not in phases:
            continue
        spec = rook.transports.get(entry.transport)
        check = getattr(spec, "check_scenario", None)
        if check is None:
            continue
        extra = opt_in(check, phase, profile)  # once per entry, not per scenario
        for scenario in scenarios:
            try:
                why = check(entry.config, scenario, **extra)
            except BaseException as exc:  # the plugin's bug: named, never a traceback
                if not plugin_failure(exc):
                    raise
                raise ConfigError(
                    f"the transport plugin {rook.transports.owner(entry.transport)} could not "
                    f"check scenario {scenario.id!r}: {exception_text(exc)}"[:500]
                    + f" (hooks.{phase} of {profile.path})"
                ) from None
            if why and not isinstance(why, str):  # the plugin's bug: named
                raise ConfigError(
                    f"the transport plugin {rook.transports.owner(entry.transport)} "
                    + not_a_reason(
                        why, f"check_scenario for scenario {scenario.id!r}", "the entry can send it"
                    )
                    + f" (hooks.{phase} of {profile.path})"
                )
            if why:
                where = scenario.path or f"scenario {scenario.id}"
                problems[f"{where}: {why} (hooks.{phase} of {profile.path})"] = None
    if problems:
        raise ScenarioError("\n".join(problems))


__all__ = [
    "check_scenarios",
    "kept",
    "not_a_reason",
    "plan_runs",
    "resolve_entries",
    "resolve_entry",
]
