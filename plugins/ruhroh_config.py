"""Validation of ``ruhroh:`` and ``connector:`` hook entries (marshmallow schemas).

Imported by :mod:`rook_plugins.ruhroh` the first time a profile with such an
entry is validated, never just to register the transports.
"""

from __future__ import annotations

import json
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from rook_core.schemafields import StrictInteger, explain_unknown, yaml_typed

from .ruhroh import CONNECTOR, RUHROH
from .ruhroh_command import CommandConnector
from .ruhroh_protocol import CONTINUITY_LEVELS, DEFAULT_ARTIFACT_BYTES

DEFAULT_MAX_ITERATIONS = 5


class _LoopSchema(Schema):
    class Meta:
        unknown = RAISE

    max_iterations = StrictInteger(
        validate=validate.Range(min=1), load_default=DEFAULT_MAX_ITERATIONS
    )
    artifact_max_bytes = StrictInteger(
        validate=validate.Range(min=0), load_default=DEFAULT_ARTIFACT_BYTES
    )
    workspace_template = fields.String(validate=validate.Length(min=1))


class _CommandSchema(_LoopSchema):
    command = fields.Raw(
        required=True,
        error_messages={"required": "missing: the wrapper's command line (or a list of arguments)"},
    )
    continuity = fields.String(validate=validate.OneOf(CONTINUITY_LEVELS))
    cwd = fields.String(validate=validate.Length(min=1))


def _check_command(command: Any) -> None:
    if isinstance(command, str) and command.strip():
        return
    if isinstance(command, list) and command:
        for i, arg in enumerate(command):  # each argument text: say which one is not
            if not (isinstance(arg, str) and arg):
                raise ValidationError({"command": {i: [_not_an_argument(arg)]}})
        return
    raise ValidationError({"command": ["must be a command line or a list of arguments"]})


def _not_an_argument(arg: Any) -> str:
    """Why ``arg``, an item of a ``command`` list, is no argument (``1``, ``yes``: YAML
    typed what was written as text; ``""``; a list or a mapping)."""
    if arg == "":
        return "must be text, not empty"
    if isinstance(arg, (dict, list)):
        return f"must be text, not a {'mapping' if isinstance(arg, dict) else 'list'}"
    return yaml_typed(arg) or "must be text"


def _ident(key: str, value: Any) -> str:
    """A stable identity for an entry's settings (one connector per distinct entry)."""
    try:
        return f"{key}:" + json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):  # keys of mixed types cannot be sorted
        return f"{key}:{value!r}"


ENTRY_KEYS = ("timeout_seconds", "delay_seconds")
"""Keys of the hook entry itself, beside ``ruhroh:``, often written inside it."""


def load_command(value: Any, key: str = RUHROH) -> dict[str, Any]:
    """Validate a ``ruhroh:`` entry (a command line, or a mapping); ``key`` is the
    entry's key (``connector:`` for the wrapper as the built-in connector)."""
    if isinstance(value, str):
        value = {"command": value}
    if not isinstance(value, dict):
        raise ValidationError("must be a command line or a mapping with command, max_iterations")
    schema = _CommandSchema()
    try:
        data = schema.load(value)
    except ValidationError as exc:  # a misspelt key: the one it looks like, else every one
        messages = explain_unknown(exc.messages, schema)
        if isinstance(messages, dict):
            for name in ENTRY_KEYS:
                if name in messages:
                    messages[name] = [
                        f"belongs on the hook entry, beside {key}: (at the same "
                        f"indentation as {key}:), not inside it"
                    ]
        raise ValidationError(messages) from None
    _check_command(data["command"])
    return {**data, "kind": "command", "ident": _ident(RUHROH, value)}


def load_connector(value: Any) -> dict[str, Any]:
    """Validate a ``connector:`` entry: ``name`` plus the connector's own options."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        raise ValidationError({"name": ["required: a registered connector's name"]})
    if value["name"] == CommandConnector.name:  # the wrapper: a ruhroh: entry's keys, checked
        command = load_command({k: v for k, v in value.items() if k != "name"}, CONNECTOR)
        loop = {k: command.pop(k) for k in _LoopSchema().fields if k in command}
        options = {k: v for k, v in command.items() if k not in ("kind", "ident")}
        return {
            **loop,
            "kind": "connector",
            "name": value["name"],
            "options": options,
            "ident": _ident(CONNECTOR, value),
        }
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
