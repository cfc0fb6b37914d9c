"""What Tab offers for a flag's value once ``rook completion SHELL`` is loaded:
the agent's profiles (``--profile``), its scenario ids (``--only``) and its
runs (``--run``, ``rook runs show``, ``rook diff``, ``rook report``), read from
the workspace the command would use (its ``-w``, ``--project`` and ``--agent``
typed so far). Only the files' names and YAML are read, nothing is validated,
and a workspace that cannot be read offers nothing: completion never fails
loudly. Loaded with the commands that use it, never by ``rook --version``."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from typing import Any

import click


def _agent(ctx: click.Context) -> Any:
    """The agent the command being completed would use, its notes unsaid."""
    from ..workspace import find_workspace, select_agent

    given: dict[str, Any] = {}
    for level in (ctx, *_parents(ctx)):  # rook runs -w DIR show ...: the group's too
        for name in ("workspace", "project", "agent"):
            if given.get(name) is None:
                given[name] = level.params.get(name)
    workspace = given["workspace"]
    return select_agent(find_workspace(workspace), given["project"], given["agent"], workspace)


def _parents(ctx: click.Context) -> list[click.Context]:
    found = []
    while ctx.parent is not None:
        ctx = ctx.parent
        found.append(ctx)
    return found


def _quietly(find: Callable[[click.Context], list[str]]) -> Any:
    """A ``shell_complete`` callback offering what ``find`` finds that starts
    with what is typed; nothing, and nothing printed, when it fails."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
        try:
            with (
                contextlib.redirect_stderr(io.StringIO()),
                contextlib.redirect_stdout(io.StringIO()),
            ):
                return [c for c in find(ctx) if c.startswith(incomplete)]
        except Exception:  # a workspace not found, unreadable, damaged: nothing to offer
            return []

    return complete


def _profiles(ctx: click.Context) -> list[str]:
    """The agent's profile ids, as ``rook profile list`` shows them."""
    from ..definitions import _profile_ids

    profiles_dir = _agent(ctx).profiles_dir
    return sorted({pid for pid, _ in _profile_ids(sorted(profiles_dir.glob("*.yaml")))})


def _scenario_ids(ctx: click.Context) -> list[str]:
    """The ids the agent's scenario files give (one scenario or a list per file)."""
    from pathlib import Path

    from ..definitions import _yaml_files
    from ..yamlio import load_yaml

    ids: set[str] = set()
    for _, path, _, _ in _yaml_files(_agent(ctx).scenarios_dir):
        try:
            data = load_yaml(Path(path))
        except Exception:  # one damaged file: the others still offered
            continue
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                ids.add(item["id"])
    return sorted(ids)


def _run_ids(ctx: click.Context) -> list[str]:
    """``latest``, then the agent's runs, newest id first."""
    runs_dir = _agent(ctx).runs_dir
    with os.scandir(runs_dir) as it:
        names = [e.name for e in it if e.is_dir() and not e.name.startswith(".")]
    return ["latest", *sorted(names, reverse=True)]


profiles = _quietly(_profiles)
runs = _quietly(_run_ids)
_scenarios = _quietly(_scenario_ids)


def scenarios(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Scenario ids for ``--only ID,...``: the item after the last comma."""
    done, _, last = incomplete.rpartition(",")
    before = f"{done}," if done else ""
    taken = set(done.split(",")) if done else set()
    return [before + s for s in _scenarios(ctx, param, last) if s not in taken]
