"""``rook init``: create the workspace layout for a project and an agent.

With ``--example`` the new agent also gets a working sample: a small Python
hook script (a deterministic order desk), a profile made active, and three
scenarios, so ``rook run`` right after passes. The files come from the
package data under ``rook_core/templates/example/``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

import click

TEMPLATE = ("templates", "example")


def _template_files(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, bytes]]:
    files: list[tuple[str, bytes]] = []
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name == "__pycache__" or child.name.endswith(".pyc"):
            continue
        if child.is_dir():
            files += _template_files(child, (*prefix, child.name))
        else:
            files.append(("/".join((*prefix, child.name)), child.read_bytes()))
    return files


def example_files() -> list[tuple[str, bytes]]:
    """The sample agent's files: (path relative to the agent folder, content)."""
    root: Any = resources.files("rook_core")
    for part in TEMPLATE:
        root = root.joinpath(part)
    return _template_files(root)


def check_example(agent_dir: Path) -> None:
    """Refuse the sample (before anything is written) where one of its files exists."""
    from ..errors import WorkspaceError

    clashes = [agent_dir / rel for rel, _ in example_files() if (agent_dir / rel).exists()]
    if clashes:
        listing = "\n".join(f"  {p}" for p in clashes)
        raise WorkspaceError(
            f"--example: these files exist already, nothing was written:\n{listing}\n"
            "use a new agent name, or move them away"
        )


def write_example(agent_dir: Path) -> list[Path]:
    """Copy the sample into ``agent_dir``; refuse (nothing written) if a file exists."""
    check_example(agent_dir)
    written = []
    for rel, data in example_files():
        target = agent_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(target)
    return written


def _redact_workspace_secrets(workspaces: list[Path]) -> Any:
    """Redact the ``env`` values of every profile of every agent in
    ``workspaces`` from what ``rook init`` says: it names their folders (which
    may hold such a value), as every other command redacts them, and the new
    agent has no profile of its own. Returns the redactor."""
    from ..definitions import workspace_secret_names
    from ..redact import Redactor, activate

    names = [name for ws in workspaces for name in workspace_secret_names(ws)]
    redactor = Redactor.for_variables(dict.fromkeys(names))
    activate(redactor)
    return redactor


def check_names_hold_no_secret(redactor: Any, project: str, agent: str) -> None:
    """Refuse a project or agent name that holds the value of an ``env`` variable
    a profile of the workspace declares (as set now), as ``rook run`` refuses such
    a ``--run-name``: the name is a folder's, on disk, and every command shows it
    redacted, which names no folder. A value no profile declares is not known."""
    from ..errors import WorkspaceError

    for flag, kind, value in (("--project", "a project", project), ("--agent", "an agent", agent)):
        if redactor.text(value) != value:
            raise WorkspaceError(
                f"{flag} {redactor.text(value)}: holds the value of a profile env variable; "
                f"{kind}'s name is its folder's name and every command shows it, so it is "
                "never redacted: choose another name"
            )


@click.command("init", short_help="Create an agent's folders (--example: a working sample).")
@click.option("--project", required=True, metavar="PROJECT", help="Project id, e.g. demo.")
@click.option("--agent", required=True, metavar="AGENT", help="Agent id, e.g. order-desk.")
@click.option("--workspace", "-w", metavar="DIR", help="Workspace directory (default: cwd).")
@click.option(
    "--example",
    is_flag=True,
    help="Also write a working sample agent (a Python hook script), a profile and scenarios.",
)
def init_command(project: str, agent: str, workspace: str | None, example: bool) -> None:
    """Create .testmuai/rook/projects/PROJECT/agents/AGENT/ with profiles, scripts,
    scenarios and runs folders.

    With --example the agent gets a sample order desk (scripts/example_agent.py),
    an active profile and three scenarios: `rook run` right after passes, and
    the files show where your own agent goes.

    \b
    Examples:
      rook init --project demo --agent order-desk
      rook init --project demo --agent sample --example && rook run
    """
    from ..errors import WorkspaceError
    from ..redact import scrub
    from ..report import printable
    from ..workspace import (
        ROOT,
        Agent,
        check_name,
        init_agent,
        no_directory,
        resolved,
    )

    if workspace is not None:
        no_directory(workspace)
    root = resolved(workspace) if workspace else Path.cwd()  # ~ as rook run
    try:
        if workspace and root.exists() and not root.is_dir():
            raise WorkspaceError(f"--workspace {workspace}: not a directory")
    except OSError as exc:  # a name too long for a file name (ENAMETOOLONG)
        raise WorkspaceError(f"--workspace {workspace}: {exc.strerror}") from None
    outer = None  # a workspace above: this one, new, is nested in it (allowed, but said)
    if not (root / ROOT).is_dir():
        outer = next((p for p in root.resolve().parents if (p / ROOT).is_dir()), None)
    redactor = _redact_workspace_secrets([root] if outer is None else [root, outer])
    check_name("--project", project)  # before any path is made of them (300 characters:
    check_name("--agent", agent)  # 'File name too long' asking whether the folder exists)
    check_names_hold_no_secret(redactor, project, agent)
    if example:  # refused before the folders are made and "created" is said
        check_example(Agent(root, project, agent).dir)
    import shlex

    existed = Agent(root, project, agent).dir.is_dir()
    a = init_agent(root, project, agent)
    click.echo(  # a typed ESC or U+202E in the path shown as its escape, never obeyed
        printable(
            scrub(
                f"exists already: {a.dir} (missing folders made)" if existed else f"created {a.dir}"
            )
        )
    )
    if outer is not None:
        click.echo(
            printable(
                scrub(
                    f"rook: warning: {root} is inside the workspace {outer}: this made a second "
                    f"workspace, nested in it, which rook uses from {root} and below; to add the "
                    f"agent to {outer} instead, run: rook init --project {project} --agent "
                    f"{agent} -w {shlex.quote(str(outer))}"
                )
            ),
            err=True,
        )
    env_workspace = (os.environ.get("ROOK_WORKSPACE_DIR") or "").strip()
    try:  # written already: a loop there (which every other command refuses) stops nothing
        env_root = resolved(env_workspace, "ROOK_WORKSPACE_DIR") if env_workspace else None
    except WorkspaceError:
        env_root = None
    if workspace is None and env_root is not None and env_root != root:
        click.echo(  # every later command looks there, and finds no such agent
            printable(
                f"rook: warning: ROOK_WORKSPACE_DIR names {env_workspace}, the workspace the "
                f"other rook commands use, but rook init made the agent in {root} (its workspace "
                f"is -w or the current directory); to add the agent there instead, run: rook "
                f"init --project {project} --agent {agent} -w {shlex.quote(env_workspace)}"
            ),
            err=True,
        )
    if example:
        for path in write_example(a.dir):
            click.echo(f"  wrote {path.relative_to(a.dir)}")
    projects = [p for p in (root / ROOT / "projects").iterdir() if p.is_dir()]
    agents = [p for p in (root / ROOT / "projects" / project / "agents").iterdir() if p.is_dir()]
    from ..workspace import found_by

    one = len(projects) == 1 and len(agents) == 1
    # rook run would take ROOK_WORKSPACE_DIR, not cwd
    here = env_root if env_root is not None else Path.cwd().resolve()
    where = found_by(  # the flags the next command needs, quoted: it works as printed
        None if root == here else str(root), None if one else project, None if one else agent
    )
    if not example and existed and any(a.profiles_dir.glob("*.yaml")):  # set up already
        click.echo(printable(scrub(f"next: rook doctor{where}, then rook run{where}")))
        return
    if not example:  # the step a new user needs: rook profile add writes the profile
        click.echo(
            printable(
                scrub(
                    f"next: rook profile add{where} --command 'CMD' (or --from FILE|URL) "
                    "writes a profile that reaches your agent, or write profiles/NAME.yaml and "
                    "a hook script in scripts/ yourself; then scenarios in scenarios/"
                )
            )
        )
        return
    click.echo(printable(scrub(f"next: rook run{where}     (then edit scripts/example_agent.py)")))
