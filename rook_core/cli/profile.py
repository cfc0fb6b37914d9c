"""``rook profile``: write and manage the agent's profiles.

Only ``add`` exists so far, with one source (``--ruhroh CMD``, an existing
Ruhroh command wrapper). Each source is one entry of :data:`SOURCES`: a
function turning the option's value into a profile mapping, so further
sources (``--from``, ``--command``, ``--notes``) slot in beside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

from .options import workspace_options

SourceBuilder = Callable[[str, dict[str, Any]], dict[str, Any]]


def _ruhroh_profile(command: str, options: dict[str, Any]) -> dict[str, Any]:
    """A profile whose execute hook runs a Ruhroh command wrapper as is."""
    if not command.strip():
        from ..errors import ConfigError

        raise ConfigError("--ruhroh: give the wrapper's command line, e.g. --ruhroh ./wrapper.sh")
    return {
        "hooks": {
            "execute": {
                "ruhroh": {"command": command, "max_iterations": options["max_iterations"]},
            }
        },
        # Rook carries RUHROH_SESSION_HANDLE from turn to turn, so a conversation
        # handle is always returned: multi-turn scenarios can run.
        "capabilities": {"multi_turn": True},
    }


SOURCES: dict[str, SourceBuilder] = {"ruhroh": _ruhroh_profile}
"""Option name -> builder of the profile mapping from that option's value."""


def slug(text: str) -> str:
    """A profile id from a name: lower-case letters, digits, ``-`` and ``_``."""
    s = re.sub(r"[^a-z0-9_-]+", "-", text.strip().lower()).strip("-_")
    return s


def _default_name(source: str, value: str) -> str:
    import shlex
    from pathlib import PurePath

    try:
        first = shlex.split(value)[0]
    except (ValueError, IndexError):
        first = source
    return slug(PurePath(first).stem) or source


@click.group("profile")
def profile_group() -> None:
    """Write and manage the profiles that reach the agent.

    \b
    Example:
      rook profile add claude --ruhroh ./wrappers/claude.sh
    """


@profile_group.command("add")
@workspace_options
@click.argument("name", required=False)
@click.option(
    "--ruhroh",
    "ruhroh",
    metavar="CMD",
    help="An existing Ruhroh command wrapper (e.g. ./wrapper.sh); it runs as is.",
)
@click.option(
    "--max-iterations",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Ruhroh task loop: most iterations per scenario run.",
)
@click.option("--force", is_flag=True, help="Overwrite a profile with the same id.")
@click.option(
    "--use/--no-use",
    "use",
    default=None,
    help="Make it the active profile (default: only when no profile is active).",
)
def add_command(
    workspace: str | None,
    project: str | None,
    agent: str | None,
    name: str | None,
    ruhroh: str | None,
    max_iterations: int,
    force: bool,
    use: bool | None,
) -> None:
    """Write a profile for the agent from a source.

    \b
    Examples:
      rook profile add --ruhroh ./wrapper.sh
      rook profile add codex --ruhroh "python3 wrappers/codex.py" --max-iterations 8
    """
    from .. import plugins
    from ..engine import resolve_entries
    from ..errors import ConfigError
    from ..profile import profile_from_dict
    from ..store import atomic_write
    from ..workspace import find_workspace, select_agent
    from ..yamlio import dump_yaml

    given = {k: v for k, v in {"ruhroh": ruhroh}.items() if v is not None}
    if len(given) != 1:
        options = ", ".join(f"--{k}" for k in SOURCES)
        raise ConfigError(f"rook profile add: give exactly one source ({options})")
    source, value = next(iter(given.items()))
    name = name or _default_name(source, value)
    pid = slug(name)
    if not pid:
        raise ConfigError(f"profile name {name!r}: needs at least one letter or digit")

    a = select_agent(find_workspace(workspace), project, agent)
    a.profiles_dir.mkdir(parents=True, exist_ok=True)
    path = a.profiles_dir / f"{pid}.yaml"
    if path.exists() and not force:
        raise ConfigError(f"{path}: a profile with id {pid!r} exists; use --force to overwrite")

    data = {"name": name, "id": pid, **SOURCES[source](value, {"max_iterations": max_iterations})}
    rook = plugins.build_plugin_manager()
    profile = profile_from_dict(data, rook.transports, str(path))
    profile.path = path
    resolve_entries(rook, profile, a)  # the wrapper must exist before the file is written

    atomic_write(path, dump_yaml(data))
    click.echo(f"wrote {path}")
    active = a.profiles_dir / "active"
    if use or (use is None and not active.is_file()):
        atomic_write(active, pid + "\n")
        click.echo(f"active profile: {pid}")
    click.echo("next: write scenarios in scenarios/, then: rook run")
