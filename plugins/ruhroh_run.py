"""Checking and running ``ruhroh:`` and ``connector:`` hook entries.

:mod:`rook_plugins.ruhroh` registers the two transports on every run; this
module (the task loop, connector sessions, the run manifest) is imported the
first time a profile with such an entry is checked or run. Validation lives in
:mod:`rook_plugins.ruhroh_config`.
"""

from __future__ import annotations

import sys
from typing import Any

from rook_core.errors import ConfigError, RookError, exception_text
from rook_core.plugins import plugin_failure
from rook_core.report import printable

from . import ruhroh_manifest
from .ruhroh import CONNECTOR, RUHROH
from .ruhroh_command import CommandConnector
from .ruhroh_connector import resolve_command, resolve_dir
from .ruhroh_loop import phase
from .ruhroh_protocol import CONTINUITY_LEVELS
from .ruhroh_session import PROTOCOL_VARIABLES, Runtime
from .script import unusable


def resolve(config: dict[str, Any], agent: Any) -> dict[str, Any]:
    """Check what can be checked before anything runs (paths, programs)."""
    try:
        return _resolve(config, agent)
    except OSError as exc:  # a name too long, a folder Rook may not enter
        raise ConfigError(unusable("ruhroh command", str(config.get("command")), exc)) from None


def _resolve(config: dict[str, Any], agent: Any) -> dict[str, Any]:
    out = dict(config)
    if config.get("workspace_template"):
        out["workspace_template_path"] = resolve_dir(
            config["workspace_template"], "workspace_template", agent.workspace, agent.dir
        )
    target = out
    if config["kind"] == "connector":
        if config["name"] != CommandConnector.name:
            return out
        target = out["options"] = dict(config["options"])  # the wrapper, as a connector
    if target.get("command") is not None:
        target["argv"] = resolve_command(
            target["command"],
            agent.workspace,
            agent.dir,
            out.get("workspace_template_path"),
            scripts=not target.get("cwd"),  # the entry's cwd: where its paths are
        )
    if target.get("cwd"):
        target["cwd_path"] = resolve_dir(target["cwd"], "ruhroh cwd", agent.workspace, agent.dir)
    return out


def _instantiate(cls: Any, options: dict[str, Any], name: str, owner: str = "") -> Any:
    """The connector ``cls`` made with the entry's ``options``: a bad-options error it
    raises is the user's; anything else its plugin's (``owner``), named."""
    try:
        return cls(dict(options))
    except RookError:  # a connector refusing its options as Rook's own refusals are
        raise
    except BaseException as exc:
        if not plugin_failure(exc):
            raise
        from marshmallow import ValidationError  # a connector may check its options with it

        if isinstance(exc, (ValueError, TypeError, KeyError, ValidationError)):
            raise ConfigError(f"connector {name!r}: bad options: {exc}") from None
        who = f"connector {name!r}" + (f" ({owner})" if owner else "")
        raise ConfigError(f"{who} raised {exception_text(exc)}"[:500]) from None


def check(config: dict[str, Any], plugins: Any) -> dict[str, Any]:
    """Find the connector class, check its options and continuity level."""
    if config["kind"] == "command":
        conn = _instantiate(CommandConnector, config, RUHROH)
        return {**config, "class": CommandConnector, "continuity": conn.continuity}
    name = config["name"]
    cls = plugins.connectors.get(name)
    if cls is None:
        installed = plugins.connectors.listing()
        raise ConfigError(f"connector {name!r} is not installed; installed: {installed}")
    conn = _instantiate(cls, config["options"], name, plugins.connectors.owner(name))
    level = getattr(conn, "continuity", None)
    if level not in CONTINUITY_LEVELS and not (level is None and cls is CommandConnector):
        raise ConfigError(
            f"connector {name!r} declares continuity {level!r}; "
            f"expected one of {', '.join(CONTINUITY_LEVELS)}"
        )
    return {**config, "class": cls, "continuity": level}


def build(config: dict[str, Any]) -> Any:
    """A fresh connector for one run (the class was found by :func:`check`)."""
    cls = config.get("class")
    if cls is None:
        raise ConfigError("connector entries must be checked (resolve_entries) before a run")
    return cls(dict(config if config["kind"] == "command" else config["options"]))


async def start(run: Any) -> Runtime:
    """One runtime per run and transport key (connectors, sessions); the manifest is begun."""
    ruhroh_manifest.write(run)
    if not any(key in run.resources for key in (RUHROH, CONNECTOR)):  # once per run
        _warn_overridden(run)
    return Runtime(run, build)


def _warn_overridden(run: Any) -> None:
    """A ``hook_env`` value (or an ``env`` variable) for a variable Rook sets on every
    call never reaches the wrapper (Rook's own takes precedence, as for ``ROOK_*``):
    say so, and go on."""
    profile = run.profile
    names = sorted(set(profile.hook_env) & set(PROTOCOL_VARIABLES))
    declared = sorted({e.variable for e in profile.env} & set(PROTOCOL_VARIABLES))
    redactor = run.redactor
    if names:
        them = "it" if len(names) == 1 else "them"
        message = (
            f"rook: warning: {profile.path or profile.id}: hook_env sets {', '.join(names)}, "
            "which Rook sets itself on every Ruhroh wrapper or connector call (the protocol's "
            f"variables): the wrapper gets Rook's value, never this one; remove {them} from "
            "hook_env"
        )
        sys.stderr.write((redactor.text(message) if redactor else message) + "\n")
    if declared:  # required set, redacted everywhere, and never passed on
        them = "it" if len(declared) == 1 else "them"
        message = (
            f"rook: warning: {profile.path or profile.id}: env declares {', '.join(declared)}, "
            "which Rook sets itself on every Ruhroh wrapper or connector call (the protocol's "
            "variables): the wrapper gets Rook's value, never yours, yet yours is required "
            f"and redacted from every record; remove {them} from env"
        )
        sys.stderr.write((redactor.text(message) if redactor else message) + "\n")


async def stop(rt: Runtime) -> None:
    await rt.stop()


def _runtime(call: Any) -> Runtime:
    key = call.entry.transport
    rt = call.run.resources.get(key)
    if rt is None:  # a caller that did not start the transports
        rt = call.run.resources[key] = Runtime(call.run, build)
    return rt


async def run_phase(call: Any) -> Any:
    """Run one phase call of a ``ruhroh:`` or ``connector:`` entry through the task loop.
    A judge profile's results reach no ``rook_evidence_recorded`` observer (the
    plugin's keeps the agent's manifest): its manifest, in ``judge/``, is kept here."""
    result = await phase(_runtime(call), call.entry.config, call)
    details = result.details or {}
    if getattr(call.run, "judge", False) and details.get("ruhroh"):
        try:
            ruhroh_manifest.write(call.run, details["ruhroh"])
        except Exception as exc:  # as the agent's manifest (an observer's): a warning, once
            _warn_unwritten(call.run, exc)
    return result


JUDGE_WARNED = "ruhroh:judge-manifest"
"""The ``run.resources`` key set once a judge's manifest could not be written (warned of)."""


def _warn_unwritten(run: Any, exc: Exception) -> None:
    """The judge profile's manifest could not be written (disk full, permissions):
    the judgement stands; say so once per run, redacted."""
    if run.resources.get(JUDGE_WARNED):
        return
    run.resources[JUDGE_WARNED] = True
    text = str(exc) if isinstance(exc, RookError) else exception_text(exc)
    message = (
        f"rook: warning: judge profile {run.profile.id}: {text} (its Ruhroh manifest "
        "is not updated; the run goes on)"
    )
    redactor = getattr(run, "redactor", None)
    sys.stderr.write(printable(redactor.text(message) if redactor else message) + "\n")
