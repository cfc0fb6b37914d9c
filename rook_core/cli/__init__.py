"""The ``rook`` command. One click module per command group; one error boundary.

Imports stay lazy so ``rook --version`` and ``rook --help`` start fast.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import __version__

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class RookGroup(click.Group):
    """Turns every :class:`RookError` into a clean message and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from ..errors import RookError

        try:
            return super().invoke(ctx)
        except RookError as exc:
            from ..redact import scrub

            click.echo(f"rook: error: {scrub(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("rook: interrupted", err=True)
            ctx.exit(130)


@click.group(cls=RookGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="rook")
def cli() -> None:
    """Rook tests AI agents: profiles reach the agent, scenarios say what to ask and
    what must be true, `rook run` drives the lifecycle and judges the evidence.

    \b
    Examples (start here):
      rook init --project demo --agent my-agent --example
      rook run
      rook doctor
    """


def _register_commands() -> None:
    from . import (
        completion,
        diff,
        doctor,
        init,
        merge,
        plugins_cmd,
        profile,
        report_cmd,
        run,
        runs,
    )

    cli.add_command(run.run_command)
    cli.add_command(init.init_command)
    cli.add_command(plugins_cmd.plugins_command)
    cli.add_command(runs.runs_group)
    cli.add_command(diff.diff_command)
    cli.add_command(merge.merge_command)
    cli.add_command(report_cmd.report_command)
    cli.add_command(profile.profile_group)
    cli.add_command(doctor.doctor_command)
    cli.add_command(completion.completion_command)


_register_commands()


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="rook")
    except KeyboardInterrupt:
        click.echo("rook: interrupted", err=True)
        sys.exit(130)
