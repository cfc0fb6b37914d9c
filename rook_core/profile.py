"""Profiles: the file format of the reference, validated with marshmallow."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path
from typing import Any

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate, validates

from .credentials import hidden_profile, secret_value
from .errors import ProfileError, exception_text, format_validation_messages
from .lazyre import later
from .models import (
    ENTRY_OPTIONS,
    HOOK_PHASES,
    ID_MAX,
    ROOK_VARIABLES,
    EnvRef,
    HookEntry,
    OutputLimits,
    Profile,
)
from .plugins import plugin_failure, plugin_output
from .registry import Registry
from .schemafields import (
    StrictBoolean,
    StrictFloat,
    StrictInteger,
    Text,
    did_you_mean,
    explain_unknown,
    slug_id,
)
from .yamlio import load_yaml

VARIABLE = later(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_DELAY = 86400
"""The longest ``delay_seconds`` of a hook entry (a day)."""


class _EnvValue(fields.String):
    """A ``hook_env`` value: text, as every environment variable holds. YAML types
    ``8080`` and ``true`` as a number and a boolean: the message says to quote them."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, (bool, int, float)):
            text = str(value).lower() if isinstance(value, bool) else str(value)
            raise ValidationError(
                f'must be text, as an environment variable holds: quote it ("{text}")'
            )
        return super()._deserialize(value, attr, data, **kwargs)


def env_var_limit() -> int:
    """The most bytes one environment variable (``NAME=value`` and its NUL) can
    hold: 32 pages on Linux (``MAX_ARG_STRLEN``); 0 (no limit known) elsewhere."""
    try:
        return 32 * os.sysconf("SC_PAGE_SIZE") if sys.platform.startswith("linux") else 0
    except (ValueError, OSError):
        return 0


def _environment_limit() -> int:
    """The most bytes a program's arguments and environment together can hold
    (``ARG_MAX``); 0 when it is not known."""
    try:
        return max(os.sysconf("SC_ARG_MAX"), 0)
    except (ValueError, OSError, AttributeError):
        return 0


def _not_blank(message: str) -> Any:
    """A validator refusing an empty (or blank) text with ``message``, where
    marshmallow's ``Length(min=1)`` said "Shorter than minimum length 1."."""

    def check(value: str) -> None:
        if not value.strip():
            raise ValidationError(message)

    return check


NOT_A_NAME = "not a variable name: letters, digits and _, not starting with a digit"


def _no_nul(value: str) -> None:
    if "\0" in value:  # the operating system would refuse to start every hook
        raise ValidationError("holds a NUL character (\\0), which no environment variable can")


ENV_PLACEHOLDER = later(r"\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _hook_env_value(value: str) -> None:
    _no_nul(value)
    found = ENV_PLACEHOLDER.search(value)
    if found:  # an http: entry's placeholder: here every hook would get the text itself
        raise ValidationError(
            f"holds {found.group(0)}, but hook_env expands no placeholder (the hook would get "
            f"that text): declare the variable the hook reads under env: instead (its value "
            "then comes from the environment)"
        )


def _inherited_name(value: str) -> None:
    """An ``inherit_env`` item: a name or pattern some variable could have (no
    ``=``, no NUL: no environment variable's name holds one)."""
    if "=" in value or "\0" in value:
        name = value.partition("=")[0]
        shown = f"{name}=..." if "=" in value else name  # what follows '=' may be a secret
        raise ValidationError(
            f"{shown!r} can name no variable (a name holds no '=' or NUL); it is a name or "
            'pattern to pass through, e.g. PATH or "AWS_*": a value to set goes in hook_env '
            "(NAME: value)"
        )


class _EnvRefSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {"type": "must be a mapping: {variable: NAME, purpose: TEXT}"}

    variable = fields.String(
        required=True,
        error_messages={
            "required": "missing: the name of an environment variable "
            "(its value stays in the environment)"
        },
    )
    purpose = Text(
        required=True,
        validate=_not_blank("must say what the variable is for (shown when it is not set)"),
        error_messages={"required": "missing: what the variable is for (shown when it is not set)"},
    )

    @validates("variable")
    def _a_name(self, value: str, **kwargs: Any) -> None:
        if secret_value(value):  # ghp_..., AKIA...: a key is shaped like a name too
            raise ValidationError(
                "is shaped like a credential (a key's value, not a variable's name), which "
                "no field of a profile holds: keep the value in the environment under a name "
                "of your own, e.g. variable: API_TOKEN (export API_TOKEN=...)"
            )
        if VARIABLE.match(value):
            return
        name = value.partition("=")[0].strip()
        if "=" in value and VARIABLE.match(name):  # NAME=value: never show what follows '='
            raise ValidationError(
                f"holds a value ('{name}=...'): env names the variable only; write "
                f"variable: {name}, and keep its value in the environment (export {name}=...)"
            )
        bare = re.sub(r"^\$\{?|^\{\{\s*env\.|\}+$|\s*\}\}$", "", value.strip())
        hint = (
            f"; write it as {bare}"
            if bare != value and VARIABLE.match(bare)
            else " (letters, digits and _, not starting with a digit)"
        )
        raise ValidationError(f"must be an environment variable name{hint}")

    @validates("variable")
    def _not_rooks(self, value: str, **kwargs: Any) -> None:
        if value in ROOK_VARIABLES:  # Rook sets it per phase: a hook never gets the user's value
            raise ValidationError(
                f"{value} is set by Rook for the hooks; name your variable otherwise"
            )


class _CapabilitiesSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {"type": "must be a mapping: {multi_turn: BOOL, calls: BOOL, usage: BOOL}"}

    multi_turn = StrictBoolean()
    calls = StrictBoolean()
    usage = StrictBoolean()


class _LimitsSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {"type": "must be a mapping: {stdout_bytes: BYTES, stderr_bytes: BYTES}"}

    stdout_bytes = StrictInteger(validate=validate.Range(min=1024))
    stderr_bytes = StrictInteger(validate=validate.Range(min=1024))


class _ProfileSchema(Schema):
    class Meta:
        unknown = RAISE

    name = Text(validate=_not_blank("must not be empty (leave name out to use the id)"))
    id = Text(
        required=True,
        validate=[
            slug_id,
            validate.Length(max=ID_MAX, error=f"at most {ID_MAX} characters"),
        ],
        error_messages={
            "required": "missing: a profile needs an id (lower-case letters, digits, - and _); "
            "runs pin it"
        },
    )
    hooks = fields.Dict(
        keys=fields.String(validate=validate.OneOf(HOOK_PHASES)),
        values=fields.Raw(allow_none=False),
        required=True,
        error_messages={
            "required": "missing: a profile needs hooks, at least execute",
            "invalid": "must be a mapping of phase to hook entry: {{execute: scripts/agent.sh}}",
        },
    )
    env = fields.List(
        fields.Nested(_EnvRefSchema),
        load_default=list,
        error_messages={
            "invalid": "must be a list of {{variable: NAME, purpose: TEXT}}, which holds no "
            "value (secrets stay in the environment; plain values go in hook_env)"
        },
    )
    capabilities = fields.Nested(_CapabilitiesSchema, load_default=dict)
    hook_env = fields.Dict(
        keys=fields.String(validate=validate.Regexp(VARIABLE, error=NOT_A_NAME)),
        values=_EnvValue(validate=_hook_env_value),
        load_default=dict,
        error_messages={
            "invalid": "must be a mapping of NAME: text value, e.g. {{REGION: eu-west-1}}"
        },
    )
    concurrency = StrictInteger(validate=validate.Range(min=1), load_default=1)
    limits = fields.Nested(_LimitsSchema, load_default=dict)
    inherit_env = fields.List(
        fields.String(
            validate=[
                _not_blank("must not be empty: a variable name or pattern, e.g. PATH"),
                _inherited_name,
            ]
        ),
        error_messages={
            "invalid": 'must be a list of variable names or patterns, e.g. [PATH, "AWS_*"]'
        },
    )

    @validates("hook_env")
    def _each_value_fits(self, value: dict[str, str], **kwargs: Any) -> None:
        limit = env_var_limit()  # the system would refuse to start every hook
        sizes = {
            k: len(f"{k}={v}".encode("utf-8", "surrogateescape")) + 1 for k, v in value.items()
        }
        big = {
            k: [f"{k} holds {n} bytes, more than one environment variable can carry ({limit})"]
            for k, n in sizes.items()
            if limit and n > limit
        }
        if big:
            raise ValidationError(big)
        total = sum(sizes.values()) + 8 * len(sizes)  # each string, and its pointer
        room = _environment_limit()
        if room and total > room:
            largest = sorted(sizes, key=sizes.__getitem__, reverse=True)[:3]
            raise ValidationError(
                f"together {total} bytes, more than a hook's whole environment can carry "
                f"({room}, ARG_MAX); the largest: "
                + ", ".join(f"{k} ({sizes[k]} bytes)" for k in largest)
            )

    @validates("env")
    def _each_variable_once(self, value: list[dict[str, Any]], **kwargs: Any) -> None:
        first: dict[str, int] = {}
        twice: dict[int, dict[str, list[str]]] = {}
        for i, ref in enumerate(value):
            name = ref.get("variable") if isinstance(ref, dict) else None
            if name is None:  # refused on its own (not a mapping, a bad name)
                continue
            if name in first:
                twice[i] = {"variable": [f"{name} is declared twice (also env.{first[name]})"]}
            first.setdefault(name, i)
        if twice:
            raise ValidationError(twice)


class _EntryOptionsSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    timeout_seconds = StrictFloat(validate=validate.Range(min=0, min_inclusive=False))
    delay_seconds = StrictFloat(  # 1.0e+30 waited forever: a longer wait splits the run
        validate=validate.Range(
            min=0,
            max=MAX_DELAY,
            error=f"must be between 0 and {MAX_DELAY} seconds (a day); to wait longer, "
            "split the run: rook run --phases prepare,open,execute,close, then "
            "rook run --run ID --phases collect,judge",
        ),
        load_default=0.0,
    )


_PROFILE_SCHEMA = _ProfileSchema()
_ENTRY_OPTIONS_SCHEMA = _EntryOptionsSchema()


def _unknown_entry_key(key: str, installed: str, names: list[str]) -> str:
    """An entry's key that is neither an option nor a transport: the one it looks
    like a typo of (``timeout``: ``timeout_seconds``; ``scirpt``: ``script``)."""
    message = f"unknown transport key; installed transports: {installed}"
    close = did_you_mean(key, [*ENTRY_OPTIONS, *names])
    return f"{message}; did you mean {close}?" if close else message


def parse_hook_entry(phase: str, value: Any, transports: Registry) -> HookEntry:
    """Turn one ``hooks.<phase>`` value into a :class:`HookEntry`.

    Raises ``ValidationError`` whose messages are keyed by the field inside
    the entry.
    """
    installed = transports.listing()
    if isinstance(value, str):
        key, raw_config, options = "script", value, {}
    elif isinstance(value, dict):
        keys = [k for k in value if k not in ENTRY_OPTIONS]
        unknown = [k for k in keys if k not in transports]
        if unknown:
            raise ValidationError(
                {
                    str(k): [_unknown_entry_key(str(k), installed, transports.names())]
                    for k in unknown
                }
            )
        if len(keys) != 1:
            given = [k for k in value if k in ENTRY_OPTIONS]
            found = (
                f"found {len(keys)}: {', '.join(map(str, keys))}"
                if keys
                else f"found none (only {', '.join(given)})"
                if given
                else "found none"
            )
            raise ValidationError(f"needs exactly one transport key (one of: {installed}); {found}")
        key = keys[0]
        raw_config = value[key]
        options = _ENTRY_OPTIONS_SCHEMA.load({k: value[k] for k in ENTRY_OPTIONS if k in value})
    else:
        raise ValidationError(
            "must be a script path or a mapping with one transport key "
            f"({installed}) and optional timeout_seconds, delay_seconds"
        )
    spec = transports.get(key)
    if spec is None:
        raise ValidationError(
            f"no installed transport runs {key!r} entries; installed: {installed}"
        )
    try:
        with plugin_output():  # what it prints is not Rook's output (--json)
            config = spec.load_config(raw_config)
    except ValidationError as exc:
        raise ValidationError({key: exc.messages}) from None
    except BaseException as exc:  # refused its own way: still the user's value
        if not plugin_failure(exc):
            raise
        why = f"the transport plugin {transports.owner(key)} refused it: {exception_text(exc)}"
        raise ValidationError({key: [why[:500]]}) from None
    if isinstance(config, types.CoroutineType) or (config is None and raw_config is not None):
        raise ValidationError({key: [_no_config(transports.owner(key), config)]})
    return HookEntry(
        phase=phase,
        transport=key,
        config=config,
        timeout_seconds=options.get("timeout_seconds"),
        delay_seconds=options.get("delay_seconds", 0.0),
    )


def _no_config(owner: str, returned: Any) -> str:
    """Why a transport's ``load_config`` that returned no config is refused: ``None``
    for a value that was there (a forgotten ``return``: every phase hook would get
    ``None``), or the coroutine of one written ``async def`` (never awaited), as
    the engine refuses the same from ``resolve`` or ``check``."""
    if returned is None:
        return f"the transport plugin {owner} returned None from load_config; return the entry's config"
    returned.close()  # never to be awaited: no 'never awaited' warning of Python's
    return (
        f"the transport plugin {owner} returned a coroutine from load_config (an async def); "
        "load_config is a plain function: return the entry's config"
    )


def undeclared_env(
    hooks: dict[str, HookEntry],
    loaded: dict[str, Any],
    transports: Registry,
    written: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per phase, ``{transport: {field: [message]}}`` for each variable a hook
    entry reads itself (``{{env.NAME}}``) that the profile does not declare in
    ``env:``: nothing would check it is set before the run, and its value, a
    secret, would not be redacted. A ``hook_env`` name, or a variable Rook sets
    in that phase, needs no declaration. The message cites ``{{env.NAME}}`` where
    the entry as ``written`` (the file's ``hooks``) holds it, else names the
    plugin that reads the variable."""
    declared = {e["variable"] for e in loaded["env"]}
    plain = set(loaded["hook_env"]) - set(ROOK_VARIABLES)
    found: dict[str, dict[str, Any]] = {}
    for phase, entry in hooks.items():
        spec = transports.get(entry.transport)
        if spec is None or spec.env_names is None:
            continue
        owner = transports.owner(entry.transport)
        try:
            with plugin_output():
                returned = spec.env_names(entry.config)
            names = list(returned)
        except BaseException as exc:  # the plugin's bug: named, never a traceback
            if not plugin_failure(exc):
                raise
            problem = (
                f"the transport plugin {owner} could not list its variables: {exception_text(exc)}"
            )
            found.setdefault(phase, {})[entry.transport] = [problem[:500]]
            continue
        if isinstance(returned, str) or not all(
            isinstance(pair, (tuple, list))
            and len(pair) == 2
            and all(isinstance(part, str) for part in pair)
            for pair in names
        ):  # names alone, a text: the plugin's bug too
            problem = (
                f"the transport plugin {owner} returned {returned!r:.200} from env_names, not a "
                "list of (field path, NAME) pairs"
            )
            found.setdefault(phase, {})[entry.transport] = [problem]
            continue
        for where, name in names:
            if name in declared or name in plain or phase in ROOK_VARIABLES.get(name, ()):
                continue
            if name in ROOK_VARIABLES:
                why = f"Rook does not set {name} in {phase}"
            else:
                why = (
                    f"{name} is not declared in the profile's env: list (nothing would check "
                    "it is set before the run, nor redact its value); add "
                    f"env: [{{variable: {name}, purpose: ...}}]"
                )
            cited = f"{{{{env.{name}}}}}"  # written so, or {{ env.NAME }}
            if not re.search(rf"\{{\{{\s*env\.{name}\s*\}}\}}", str(_mapping(written).get(phase))):
                cited = f"the transport plugin {owner} reads the variable {name}"  # its own
            messages = found.setdefault(phase, {}).setdefault(entry.transport, {})
            messages.setdefault(where, []).append(f"{cited}: {why}")
    return found


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _env_names(data: dict[str, Any]) -> set[str]:
    """The variable names ``env`` declares, as the file writes them."""
    from .definitions import env_names

    return set(env_names(data))


def _explain_phases(errors: dict[str, Any]) -> None:
    """A ``hooks`` key that is no phase, told as one (``hooks.exec: unknown phase;
    did you mean execute?``), not as marshmallow's ``hooks.exec.key: Must be one of``."""
    found = errors.get("hooks")
    if not isinstance(found, dict):
        return
    for key, problem in found.items():
        if isinstance(problem, dict) and "key" in problem:
            close = did_you_mean(str(key), HOOK_PHASES)
            hint = f"did you mean {close}?" if close else f"the phases are {', '.join(HOOK_PHASES)}"
            if key == "judge":  # the lifecycle's last phase, but Rook's: no hook runs it
                hint = (
                    "judge is Rook's own phase, which no hook runs: a scenario's criteria "
                    "are judged by Rook, and a model judge is a judge profile "
                    "(judge_profile in config.yaml, or --judge-profile; docs/judges.md in Rook's source); "
                    f"the phases a profile hooks are {', '.join(HOOK_PHASES)}"
                )
            found[key] = [f"unknown phase; {hint}"]  # its value matters no more


def _explain_env_values(errors: dict[str, Any], env: Any) -> None:
    """An ``env`` item with a field for its value (``value:``, ``secret:``), which
    the structure has none of (the reference), is told where the value goes
    (``export TOKEN=...``), never shown; a typo of ``purpose`` keeps its "did you
    mean"."""
    found = errors.get("env")
    if not isinstance(found, dict) or not isinstance(env, list):
        return
    for index, problems in found.items():
        item = env[index] if isinstance(index, int) and index < len(env) else None
        if not isinstance(problems, dict) or not isinstance(item, dict):
            continue
        name = item.get("variable")
        name = name if isinstance(name, str) and VARIABLE.match(name) else "NAME"
        for key, said in problems.items():
            if key not in ("variable", "purpose") and said and "did you mean" not in said[0]:
                problems[key] = [
                    f"{said[0]} (a profile holds no value of a variable: keep it in the "
                    f"environment, export {name}=...)",
                    *said[1:],
                ]


def _explain_mapping(errors: dict[str, Any], field: str) -> None:
    """A ``hook_env`` entry named by the file's own path (``hook_env.PORT``, a
    name that is none quoted: ``hook_env.'1X'``, ``hook_env.''``), not by
    marshmallow's ``.key`` and ``.value`` inside it."""
    found = errors.get(field)
    if not isinstance(found, dict):
        return
    out: dict[str, Any] = {}
    for key, problem in found.items():
        if not (isinstance(problem, dict) and set(problem) <= {"key", "value"}):
            out[str(key)] = problem
            continue
        named = str(key) if "key" not in problem else f"'{key}'"
        out[named] = [m for part in ("key", "value") for m in problem.get(part, [])]
    errors[field] = out


EMPTY_MEANS_NONE = ("env", "hook_env", "capabilities", "limits")
"""Keys whose empty value (YAML's null) means their default: none declared."""


def profile_from_dict(data: Any, transports: Registry, source: str) -> Profile:
    """Validate a profile mapping; every problem is reported with its field path."""
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: a profile must be a mapping (name, id, hooks, ...)")
    # a key with nothing but comments under it (`env:` above a commented-out
    # `# - variable: API_KEY`) is YAML's null: none of them, as if left out
    data = {k: v for k, v in data.items() if not (v is None and k in EMPTY_MEANS_NONE)}
    errors: dict[str, Any] = {}
    try:
        loaded = _PROFILE_SCHEMA.load(data)
    except ValidationError as exc:
        messages = explain_unknown(exc.messages, _PROFILE_SCHEMA)
        errors.update(messages if isinstance(messages, dict) else {"_schema": messages})
        _explain_phases(errors)
        _explain_mapping(errors, "hook_env")
        _explain_env_values(errors, data.get("env"))
        loaded = None
    hooks: dict[str, HookEntry] = {}
    raw_hooks = data.get("hooks")
    if isinstance(raw_hooks, dict):
        for phase, value in raw_hooks.items():
            if phase not in HOOK_PHASES:
                continue
            try:
                hooks[phase] = parse_hook_entry(phase, value, transports)
            except ValidationError as exc:
                errors.setdefault("hooks", {})
                if isinstance(errors["hooks"], dict):
                    errors["hooks"][phase] = exc.messages
        if "execute" not in raw_hooks and "hooks" not in errors:
            errors["hooks"] = {"execute": ["missing: execute is the one required phase"]}
    # An env variable's value comes from the environment (a secret stays out of
    # the file): a hook_env value for it would replace the value checked set
    # before the run, and the hooks would never see it. Read from the file as
    # written, so it is listed with any other problem of the file.
    for name in sorted(_env_names(data) & set(_mapping(data.get("hook_env")))):
        found = errors.setdefault("hook_env", {})
        message = (
            f"{name} is declared in env: its value comes from the environment, "
            "never from the file; remove it from hook_env"
        )
        if isinstance(found, dict) and isinstance(found.get(name, []), list):
            found[name] = [*found.get(name, []), message]
    if loaded is not None:
        for phase, problems in undeclared_env(hooks, loaded, transports, raw_hooks).items():
            errors.setdefault("hooks", {})
            if isinstance(errors["hooks"], dict):
                errors["hooks"][phase] = problems
    if errors or loaded is None:
        lines = format_validation_messages(errors)
        raise ProfileError(f"{source}: invalid profile:\n" + "\n".join(f"  {ln}" for ln in lines))
    # A Rook-owned name is Rook's alone (set by Rook, in its phases only); any
    # other name, ROOK_CUSTOM included, reaches every hook.
    hook_env = {k: v for k, v in loaded["hook_env"].items() if k not in ROOK_VARIABLES}
    limits = OutputLimits(**loaded["limits"])
    return Profile(
        id=loaded["id"],
        name=loaded.get("name") or loaded["id"],
        hooks=hooks,
        env=[EnvRef(**e) for e in loaded["env"]],
        capabilities=dict(loaded["capabilities"]),
        hook_env=hook_env,
        concurrency=loaded["concurrency"],
        limits=limits,
        inherit_env=loaded.get("inherit_env"),
        raw=data,
        shown=hidden_profile(data),
    )


def load_profile(path: Path, transports: Registry) -> Profile:
    data = load_yaml(path, ProfileError)
    profile = profile_from_dict(data, transports, str(path))
    profile.path = path
    return profile
