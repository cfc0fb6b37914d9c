"""``rook completion SHELL``: print click's shell completion script for bash, zsh or fish."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_ROOK_COMPLETE"
INSTALL = {
    "bash": 'eval "$(rook completion bash)"      # in ~/.bashrc',
    "zsh": 'eval "$(rook completion zsh)"       # in ~/.zshrc',
    "fish": "rook completion fish > ~/.config/fish/completions/rook.fish",
}


def completion_source(shell: str, cli: click.Command, prog_name: str = "rook") -> str:
    """The completion script click generates for ``shell``."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click always knows the three shells
        raise click.BadParameter(f"unsupported shell {shell!r}")
    return cls(cli, {}, prog_name, COMPLETE_VAR).source()


@click.command("completion", short_help="Print the shell completion script (bash, zsh or fish).")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion_command(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    Commands, options and choices complete with Tab once it is loaded, and
    so do the agent's profile ids (--profile), scenario ids (--only) and run
    ids (--run, rook runs show, rook diff, rook report).

    \b
    Examples:
      eval "$(rook completion bash)"      # add to ~/.bashrc
      eval "$(rook completion zsh)"       # add to ~/.zshrc
      rook completion fish > ~/.config/fish/completions/rook.fish
    """
    root = ctx.find_root().command
    click.echo(completion_source(shell, root), nl=False)
