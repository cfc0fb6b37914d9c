"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


def workspace_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--agent", metavar="AGENT", help="Agent to use (default: the only one, or config.yaml's)."
    )(f)
    f = click.option(
        "--project",
        metavar="PROJECT",
        help="Project to use (default: the only one, or config.yaml's).",
    )(f)
    f = click.option(
        "--workspace",
        "-w",
        metavar="DIR",
        envvar="ROOK_WORKSPACE_DIR",
        help="Workspace directory (default: nearest ancestor holding .testmuai/rook, else cwd).",
    )(f)
    return f


def split_csv(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for v in values for part in v.split(",") if part.strip()]
