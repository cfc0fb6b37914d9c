"""``rook init``: create the workspace layout for a project and an agent."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("init")
@click.option("--project", required=True, help="Project id, e.g. demo.")
@click.option("--agent", required=True, help="Agent id, e.g. order-desk.")
@click.option("--workspace", "-w", metavar="DIR", help="Workspace directory (default: cwd).")
def init_command(project: str, agent: str, workspace: str | None) -> None:
    """Create .testmuai/rook/projects/PROJECT/agents/AGENT/ with profiles, scripts,
    scenarios and runs folders.

    \b
    Example:
      rook init --project demo --agent order-desk
    """
    from ..workspace import init_agent

    root = Path(workspace).resolve() if workspace else Path.cwd()
    a = init_agent(root, project, agent)
    click.echo(f"created {a.dir}")
    click.echo("next: add a profile in profiles/, a hook script in scripts/, scenarios in scenarios/")
