"""Connectors: the advanced lifecycle, and the command wrapper built on it.

A connector owns agent-specific behaviour (``prepare``, ``start_session``,
``run_turn``, ``detect_completion``, ``collect_artifacts``, ``cleanup``) and
declares a continuity level; Rook owns the task loop and the result mapping
(:mod:`rook_plugins.ruhroh_loop`). A Ruhroh command wrapper is just the
built-in :class:`CommandConnector`, so wrappers and Python connectors share
one loop.

Subclass :class:`Connector` (or write any class with the same attributes)
and register it with ``rook_register_connectors``. Methods may be plain or
``async``; plain ones run in a worker thread so they never block the loop.
:class:`Connector` and :class:`CommandConnector` are defined in
:mod:`rook_plugins.ruhroh_command` (which every run imports to register the
wrapper connector, so it stays light) and re-exported here.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import field
from pathlib import Path
from typing import Any

from rook_core.credentials import ASSIGNMENT
from rook_core.errors import ConfigError
from rook_core.models import OutputLimits
from rook_core.plain import plain
from rook_core.transports import hook_search_path
from rook_core.workspace import user_path

from .ruhroh_command import CommandConnector, Connector
from .script import interpreter_argv

__all__ = [
    "CommandConnector",
    "Connector",
    "RunInfo",
    "Session",
    "TurnInput",
    "resolve_command",
    "resolve_dir",
]


@plain
class RunInfo:
    """What ``prepare`` gets: the run, once, before the first session."""

    id: str
    dir: Path
    workspace: Path
    agent_dir: Path
    adapter_id: str
    state_dir: Path
    env: dict[str, str]


@plain
class Session:
    """One scenario run's conversation with the agent."""

    scenario_id: str
    sample_id: str
    repeat_index: int
    repeat_count: int
    sample_seed: int
    goal: str
    goal_path: Path
    workspace: Path
    handle: str
    dir: Path
    run_dir: Path
    adapter_id: str
    turns_total: int
    env: dict[str, str] = field(default_factory=dict)
    iteration: int = 0
    data: dict[str, Any] = field(default_factory=dict)
    """Free for the connector's own state (a client, a native session id ...)."""
    handle_assigned: bool = False
    """``handle`` is one Rook made up (no open hook, ``start_session`` or
    iteration returned one): it carries the conversation, but does not show
    that the agent keeps one."""


@plain
class TurnInput:
    """One iteration: the message, its number, and where the result may go."""

    message: str
    iteration: int
    turn: int
    turns_total: int
    attempt: int
    result_path: Path
    env: dict[str, str]
    """Rook's phase environment plus every ``RUHROH_*`` variable of this call."""
    timeout: float
    limits: OutputLimits


def _candidates(raw: str, workspace: Path, agent_dir: Path) -> list[Path]:
    path = user_path(raw)
    return [path] if path.is_absolute() else [workspace / path, agent_dir / path]


INTERPRETERS = re.compile(r"(python[0-9.]*|node|bash|sh|zsh|ruby|perl|php)")
"""Programs whose first argument is the script they run (``python3 wrapper.py``)."""
SCRIPT_SUFFIXES = re.compile(r"\.(py|sh|bash|zsh|js|mjs|cjs|ts|rb|pl|php)")


def _script_argument(
    program: str, rest: list[str], workspace: Path, agent_dir: Path, template: str | None
) -> list[str]:
    """An interpreter's script found as the wrapper is (the wrapper runs in the
    scenario's workspace, where a path relative to the checkout names nothing),
    unless the workspace template puts it there. A script (a name with a
    script's extension) found nowhere is refused, as a missing wrapper is."""
    if not rest or not INTERPRETERS.fullmatch(Path(program).name) or rest[0].startswith("-"):
        return rest
    if template is not None and (Path(template) / rest[0]).exists():
        return rest
    tried = _candidates(rest[0], workspace, agent_dir)
    for candidate in tried:
        if candidate.is_file():
            return [str(candidate.resolve()), *rest[1:]]
    if SCRIPT_SUFFIXES.fullmatch(Path(rest[0]).suffix):
        raise ConfigError(
            f"ruhroh command: {Path(program).name}'s script {rest[0]!r} not found; tried "
            + " and ".join(str(c) for c in tried)
            + (f" and the workspace_template {template}" if template else "")
        )
    return rest


PLACEHOLDER = re.compile(r"\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""An http: entry's ``{{env.NAME}}``, which a command line passes as written."""


def resolve_command(
    command: Any,
    workspace: Path,
    agent_dir: Path,
    template: str | None = None,
    scripts: bool = True,
) -> list[str]:
    """The wrapper's argv: a path (relative to the workspace, then the agent's
    folder) or a program on PATH, then its arguments; an interpreter's script
    is found the same way (with ``scripts``: the wrapper runs in the scenario's
    workspace), unless ``template`` (the workspace template's folder) has it."""
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"ruhroh command {command!r}: cannot split it: {exc}") from None
    else:
        argv = list(command)
    if not argv:
        raise ConfigError("ruhroh command is empty")
    for word in argv:
        if (held := PLACEHOLDER.search(str(word))) is not None:
            raise ConfigError(
                f"ruhroh command: it holds {held.group(0)}, which the wrapper would get as "
                "written: a command line is not filled like an http: entry; have the wrapper "
                f"read {held.group(1)} from its environment (declared under env:), or run it "
                f"with bash -c '... \"${held.group(1)}\"'"
            )
    first, rest = argv[0], argv[1:]
    if (assigned := ASSIGNMENT.fullmatch(first)) is not None:
        name = assigned.group(1)  # its value is never shown: it may be a secret
        raise ConfigError(
            f"ruhroh command: it starts with {name}=..., which sets a variable, but the "
            f"command line is not run through a shell: put {name} under the profile's "
            f"hook_env (or env: for a secret), or start the command with env {name}=..."
        )
    if Path(first).name == "env" and rest and not rest[0].startswith("-"):
        count = next((i for i, w in enumerate(rest) if not ASSIGNMENT.fullmatch(w)), len(rest))
        if count and count < len(rest):  # env NAME=value ... program: the program found
            _no_ruhroh_assignment(rest[:count])
            program = resolve_command(rest[count:], workspace, agent_dir, template, scripts)
            return [*resolve_command([first], workspace, agent_dir), *rest[:count], *program]
    if "/" in first or first.startswith("."):
        tried = _candidates(first, workspace, agent_dir)
        for candidate in tried:
            if candidate.is_file():
                argv = interpreter_argv(candidate.resolve())
                break
        else:
            folder = next((c for c in tried if c.is_dir()), None)
            if folder is not None:
                raise ConfigError(
                    f"ruhroh command {first!r} is a directory ({folder}); name the wrapper in it"
                )
            odd = next((c for c in tried if c.exists()), None)  # a FIFO, a device
            if odd is not None:
                raise ConfigError(
                    f"ruhroh command {first!r} is not a regular file (a pipe, a socket or a "
                    f"device: {odd}); name the wrapper"
                )
            raise ConfigError(
                f"ruhroh command {first!r} not found; tried {' and '.join(str(c) for c in tried)}"
                + _unexpanded(first)
            )
    else:
        # the PATH the wrapper gets (the profile's hook_env PATH), then Rook's own: it
        # runs by the path found, also when the profile's inherit_env leaves PATH out
        found = shutil.which(first, path=hook_search_path()) or shutil.which(first)
        if found is None:
            raise ConfigError(
                f"ruhroh command {first!r} is not installed (not on PATH)" + _unexpanded(first)
            )
        argv = [found]
    if scripts and len(argv) == 1:
        rest = _script_argument(argv[0], rest, workspace, agent_dir, template)
    return [*argv, *rest]


def _no_ruhroh_assignment(words: list[str]) -> None:
    """Refuse a ``RUHROH_*`` variable of the protocol given after ``env`` in the
    command line: one Rook sets would hide Rook's value from the wrapper, and a
    fallback (``RUHROH_RUN_SEED``, ``RUHROH_AGENT_MODEL`` ...) would reach the
    wrapper but neither ``RUHROH_SAMPLE_SEED`` nor the run's manifest, which read
    the profile's ``hook_env``. The value is never shown (it may be a secret)."""
    from .ruhroh_manifest import FALLBACKS
    from .ruhroh_session import PROTOCOL_VARIABLES

    for word in words:
        name = word.split("=", 1)[0]
        if name in PROTOCOL_VARIABLES:
            raise ConfigError(
                f"ruhroh command: env {name}=... sets {name}, which Rook sets itself for "
                "every call: the wrapper would never get Rook's value; remove it"
            )
        if name in FALLBACKS:
            raise ConfigError(
                f"ruhroh command: env {name}=... reaches the wrapper only, not Rook, which "
                f"reads {name} from the profile's hook_env (for ruhroh-run-manifest.json"
                + (" and RUHROH_SAMPLE_SEED" if name == "RUHROH_RUN_SEED" else "")
                + f"): put {name} under hook_env instead"
            )


def _unexpanded(program: str) -> str:
    """Why a program naming a variable (``$HOME/w.sh``) was not found: no shell runs
    the command line, so nothing expands the variable."""
    found = re.search(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", program)
    if found is None:
        return ""
    return (
        f" (the command line is not run through a shell, so ${found.group(1)} is not "
        "expanded: write the path itself, or run it with bash -c '...')"
    )


def resolve_dir(raw: str, what: str, workspace: Path, agent_dir: Path) -> str:
    tried = _candidates(raw, workspace, agent_dir)
    for candidate in tried:
        if candidate.is_dir():
            return str(candidate.resolve())
    raise ConfigError(f"{what} {raw!r} is not a directory; tried {' and '.join(map(str, tried))}")
