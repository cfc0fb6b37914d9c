"""Built-in plugin: Ruhroh command wrappers and native (Python) connectors.

Two hook-entry keys:

* ``ruhroh: {command: ./wrapper.sh, max_iterations: 5}`` runs any wrapper
  that speaks the Ruhroh agent command protocol, as is;
* ``connector: {name: acme, ...}`` runs a connector class registered with
  ``rook_register_connectors`` (the advanced lifecycle).

Both go through one task loop (:mod:`rook_plugins.ruhroh_loop`). The plugin
also registers the ``ruhroh-command`` connector (the wrapper, as a
connector), the ``status`` and ``max_cost`` criteria, and keeps
``ruhroh-run-manifest.json`` up to date from every recorded result.
"""

from __future__ import annotations

import json
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from rook_core.errors import ConfigError
from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec, phase_hooks

from . import ruhroh_manifest
from .ruhroh_connector import CommandConnector, resolve_command, resolve_dir
from .ruhroh_criteria import CRITERIA
from .ruhroh_loop import phase
from .ruhroh_protocol import CONTINUITY_LEVELS, DEFAULT_ARTIFACT_BYTES
from .ruhroh_session import Runtime

RUHROH, CONNECTOR = "ruhroh", "connector"
KEYS = (RUHROH, CONNECTOR)
DEFAULT_MAX_ITERATIONS = 5


class _LoopSchema(Schema):
    class Meta:
        unknown = RAISE

    max_iterations = fields.Integer(
        strict=True, validate=validate.Range(min=1), load_default=DEFAULT_MAX_ITERATIONS
    )
    artifact_max_bytes = fields.Integer(
        strict=True, validate=validate.Range(min=0), load_default=DEFAULT_ARTIFACT_BYTES
    )
    workspace_template = fields.String(validate=validate.Length(min=1))


class _CommandSchema(_LoopSchema):
    command = fields.Raw(required=True)
    continuity = fields.String(validate=validate.OneOf(CONTINUITY_LEVELS))
    cwd = fields.String(validate=validate.Length(min=1))


def _check_command(command: Any) -> None:
    if isinstance(command, str) and command.strip():
        return
    if isinstance(command, list) and command and all(isinstance(a, str) and a for a in command):
        return
    raise ValidationError({"command": ["must be a command line or a list of arguments"]})


def _ident(key: str, value: Any) -> str:
    """A stable identity for an entry's settings (one connector per distinct entry)."""
    try:
        return f"{key}:" + json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):  # keys of mixed types cannot be sorted
        return f"{key}:{value!r}"


def load_command(value: Any) -> dict[str, Any]:
    """Validate a ``ruhroh:`` entry (a command line, or a mapping)."""
    if isinstance(value, str):
        value = {"command": value}
    if not isinstance(value, dict):
        raise ValidationError("must be a command line or a mapping with command, max_iterations")
    data = _CommandSchema().load(value)
    _check_command(data["command"])
    return {**data, "kind": "command", "ident": _ident(RUHROH, value)}


def load_connector(value: Any) -> dict[str, Any]:
    """Validate a ``connector:`` entry: ``name`` plus the connector's own options."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        raise ValidationError({"name": ["required: a registered connector's name"]})
    own = {k: v for k, v in value.items() if k in _LoopSchema().fields}
    data = _LoopSchema().load(own)
    options = {k: v for k, v in value.items() if k not in own and k != "name"}
    return {
        **data,
        "kind": "connector",
        "name": value["name"],
        "options": options,
        "ident": _ident(CONNECTOR, value),
    }


def resolve(config: dict[str, Any], agent: Any) -> dict[str, Any]:
    """Check what can be checked before anything runs (paths, programs)."""
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
        target["argv"] = resolve_command(target["command"], agent.workspace, agent.dir)
    if target.get("cwd"):
        target["cwd_path"] = resolve_dir(target["cwd"], "ruhroh cwd", agent.workspace, agent.dir)
    return out


def _instantiate(cls: Any, options: dict[str, Any], name: str) -> Any:
    try:
        return cls(dict(options))
    except (ValueError, TypeError, KeyError, ValidationError) as exc:
        raise ConfigError(f"connector {name!r}: bad options: {exc}") from None


def check(config: dict[str, Any], plugins: Any) -> dict[str, Any]:
    """Find the connector class, check its options and continuity level."""
    if config["kind"] == "command":
        conn = _instantiate(CommandConnector, config, RUHROH)
        return {**config, "class": CommandConnector, "continuity": conn.continuity}
    name = config["name"]
    cls = plugins.connectors.get(name)
    if cls is None:
        installed = ", ".join(plugins.connectors.names()) or "none"
        raise ConfigError(f"connector {name!r} is not installed; installed: {installed}")
    conn = _instantiate(cls, config["options"], name)
    level = getattr(conn, "continuity", None)
    if level not in CONTINUITY_LEVELS and not (level is None and cls is CommandConnector):
        raise ConfigError(
            f"connector {name!r} declares continuity {level!r}; "
            f"expected one of {', '.join(CONTINUITY_LEVELS)}"
        )
    return {**config, "class": cls, "continuity": level}


def runnable(config: dict[str, Any], scenario: Any) -> str | None:
    """A ``workspace_only`` connector keeps no conversational memory."""
    if config.get("continuity") == "workspace_only" and len(scenario.turns) > 1:
        return (
            f"continuity level workspace_only keeps no conversational memory, and this scenario "
            f"has {len(scenario.turns)} turns"
        )
    return None


def build(config: dict[str, Any]) -> Any:
    """A fresh connector for one run (the class was found by :func:`check`)."""
    cls = config.get("class")
    if cls is None:
        raise ConfigError("connector entries must be checked (resolve_entries) before a run")
    return cls(dict(config if config["kind"] == "command" else config["options"]))


async def _start(run: Any) -> Runtime:
    ruhroh_manifest.write(run)
    return Runtime(run, build)


async def _stop(rt: Runtime) -> None:
    await rt.stop()


def _runtime(call: Any) -> Runtime:
    key = call.entry.transport
    rt = call.run.resources.get(key)
    if rt is None:  # a caller that did not start the transports
        rt = call.run.resources[key] = Runtime(call.run, build)
    return rt


@hookimpl
def rook_register_transports(register: Any) -> None:
    register(
        TransportSpec(
            key=RUHROH,
            load_config=load_command,
            resolve=resolve,
            check=check,
            start=_start,
            stop=_stop,
            runnable=runnable,
            description="run a Ruhroh command wrapper as is (RUHROH_* variables, the task loop)",
        )
    )
    register(
        TransportSpec(
            key=CONNECTOR,
            load_config=load_connector,
            resolve=resolve,
            check=check,
            start=_start,
            stop=_stop,
            runnable=runnable,
            description="run a registered connector with the advanced Ruhroh lifecycle",
        )
    )


@hookimpl
def rook_register_connectors(register: Any) -> None:
    register(CommandConnector)


@hookimpl
def rook_register_criteria(register: Any) -> None:
    for cls in CRITERIA:
        register(cls())


@hookimpl
def rook_evidence_recorded(run: Any, record: Any, result: Any) -> None:
    details = getattr(result, "details", None) or {}
    if getattr(result, "transport", "") in KEYS and details.get("ruhroh"):
        ruhroh_manifest.write(run, details["ruhroh"])


(
    rook_auth_prepare,
    rook_session_open,
    rook_transport_execute,
    rook_session_close,
    rook_evidence_collect,
) = phase_hooks(KEYS, lambda call: phase(_runtime(call), call.entry.config, call))
