"""Which ``{{placeholder}}`` each phase of a profile can fill, checked before the run.

An ``http:`` entry's own schema (:mod:`.config`) sees that entry alone; a
``{{NAME}}`` for a saved value can only be checked against the rest of the
profile: which earlier phase saves ``NAME``. The transport's ``check`` (given
the whole profile, see :func:`rook_core.transports.run_check`) refuses, before
anything runs:

* a name no earlier phase saves (a typo, or a script prepare, which saves
  nothing), with a did-you-mean and what the phase can use instead;
* a name saved only by a later phase, or by the same phase (after its request);
* a built-in the phase cannot fill (``{{turn}}`` outside execute, ``{{goal}}`` in
  prepare).

Values are saved for the phases *after* the one that saves them, in the order
prepare, open, execute, close, collect: prepare's for every later phase,
open's for execute, close and collect, and so on. An earlier entry of a
transport that does not say what it saves (no ``saved_names``) may put any
name in ``run.saved``; its later phases' saved names are then not refused.
``{{env.NAME}}`` is checked when the profile loads (``env_names``).
"""

from __future__ import annotations

from typing import Any

from rook_core.errors import ConfigError, exception_text
from rook_core.models import HOOK_PHASES
from rook_core.plugins import plugin_failure

from .entry import HttpConfig
from .template import BUILTINS, ENV_NAME, placeholders, unavailable_in

ORDER = " → ".join(HOOK_PHASES)


def request_parts(config: HttpConfig) -> dict[str, Any]:
    """The parts of the request that may hold placeholders, by field name."""
    return {
        "url": config.url,
        "headers": config.headers,
        "query": config.query,
        "body": config.body if config.has_body else None,
        "form": config.form,
        "auth": config.auth,
    }


def saved_by_phase(profile: Any, plugins: Any) -> tuple[dict[str, list[str]], set[str]]:
    """Per phase, the names its entry saves; and the phases whose entry may save any name."""
    saves: dict[str, list[str]] = {}
    unknown: set[str] = set()
    for phase, entry in profile.hooks.items():
        spec = plugins.transports.get(entry.transport)
        if spec is None or spec.saved_names is None:
            unknown.add(phase)
        else:
            saves[phase] = _saved_names(spec, entry, phase, plugins)
    return saves, unknown


def _saved_names(spec: Any, entry: Any, phase: str, plugins: Any) -> list[str]:
    """What another transport's entry saves: a bug of its plugin (an exception, a
    text read letter by letter) names that plugin, not the http: entry checked."""
    who = (
        f"the transport plugin {plugins.transports.owner(entry.transport)} could not say "
        f"which values its {entry.transport!r} entry of hooks.{phase} saves (saved_names)"
    )
    try:
        names = spec.saved_names(entry.config)
        listed = None if isinstance(names, (str, bytes)) else list(names)
    except BaseException as exc:  # the other plugin's bug, named
        if not plugin_failure(exc):
            raise
        raise ConfigError(f"{who}: {exception_text(exc)}") from None
    if listed is None or not all(isinstance(n, str) for n in listed):
        raise ConfigError(f"{who}: returned {names!r:.200}, not a list of names")
    return listed


def _shown(names: Any) -> str:
    return ", ".join(f"{{{{{n}}}}}" for n in names)


def problems(config: HttpConfig, phase: str, profile: Any, plugins: Any) -> list[str]:
    """``field: why`` for every placeholder of the entry ``phase`` cannot fill."""
    saves, unknown = saved_by_phase(profile, plugins)
    at = HOOK_PHASES.index(phase)
    earlier = HOOK_PHASES[:at]
    available: dict[str, str] = {}  # saved name -> the phase that saves it
    for p in earlier:
        for name in saves.get(p, ()):
            available.setdefault(name, p)
    later = {n: p for p in reversed(HOOK_PHASES[at + 1 :]) for n in saves.get(p, ())}
    may_save_any = any(p in unknown for p in earlier)
    off = unavailable_in(phase)
    builtins = [b for b in BUILTINS if b not in off]
    env = [e.variable for e in profile.env] + list(profile.hook_env)
    found: list[str] = []
    for key, value in request_parts(config).items():
        for where, name in placeholders(value, key):
            if ENV_NAME.match(name) or name in available:
                continue
            if name in BUILTINS:
                if name in off:
                    found.append(f"{where}: {{{{{name}}}}} {off[name]}")
                continue
            if may_save_any:
                continue
            if name in saves.get(phase, ()):
                first = " (the first turn is sent before it is saved)" if phase == "execute" else ""
                found.append(
                    f"{where}: {{{{{name}}}}} is saved by {phase} itself, after its request is "
                    f"sent, so {phase} cannot use it{first}; save it in an earlier phase, or "
                    f"use it in a later one ({ORDER})"
                )
                continue
            if name in later:
                found.append(
                    f"{where}: {{{{{name}}}}} is saved by {later[name]}, which runs after "
                    f"{phase}: a saved value is available only to the phases after the one "
                    f"that saves it ({ORDER})"
                )
                continue
            from rook_core.schemafields import did_you_mean  # marshmallow: only on a mistake

            known = [*available, *builtins, *(f"env.{v}" for v in env)]
            close = did_you_mean(name, known)
            hint = f"; did you mean {{{{{close}}}}}?" if close else "."
            if available:
                saved = ", ".join(f"{{{{{n}}}}} (saved by {p})" for n, p in available.items())
            else:
                saved = (
                    "no saved value (no earlier phase saves a value: an http: entry's save: does)"
                )
            env_text = f"{_shown(f'env.{v}' for v in env)} and " if env else ""
            as_written = (
                ""
                if close
                else f"; to send {{{{{name}}}}} as written (a template the agent fills in), "
                "put the text under hook_env and write {{env.NAME}} here: a value is never "
                "filled in again"
            )
            found.append(
                f"{where}: {{{{{name}}}}} is not a value saved by an earlier phase{hint} "
                f"Available in {phase}: {saved}; Rook's {_shown(builtins)}; "
                f"{env_text}{{{{env.ROOK_...}}}} (Rook's variables of {phase}){as_written}"
            )
    return found


def check(config: HttpConfig, plugins: Any, phase: str, profile: Any) -> HttpConfig:
    """Refuse the entry when one of its placeholders cannot be filled in ``phase``
    (:func:`problems`); raises :class:`rook_core.errors.ConfigError`."""
    found = problems(config, phase, profile, plugins)
    if found:
        lines = [f"http.{line}" for line in found]
        raise ConfigError("\n  ".join([lines[0], *(f"hooks.{phase}: {ln}" for ln in lines[1:])]))
    return config
