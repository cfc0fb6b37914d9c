"""``rook run``: drive every selected scenario through the lifecycle and report."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .options import split_csv, workspace_options


@click.command("run")
@workspace_options
@click.option("--profile", "profile", metavar="NAME", help="Profile to use (default: profiles/active).")
@click.option("--only", multiple=True, metavar="ID,...", help="Run only these scenario ids.")
@click.option("--tag", "tags", multiple=True, metavar="TAG,...", help="Run scenarios with one of these tags.")
@click.option("--phases", metavar="P,...", help="A prefix or suffix of prepare,open,execute,close,collect,judge.")
@click.option("--run", "run_id", metavar="ID", help="Continue this run in place, running only what is missing.")
@click.option("--concurrency", "-j", type=click.IntRange(min=1), help="Scenarios in flight (default: the profile's).")
@click.option("--repeat", type=click.IntRange(min=1), help="Run each scenario N times (overrides repeat:).")
@click.option("--executor", default="local", show_default=True, help="Executor plugin that runs scenarios.")
@click.option("--report", "reports", multiple=True, metavar="FORMAT:PATH", help="Also write a report (e.g. json:out.json).")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON document (the report) on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
def run_command(
    workspace: str | None,
    project: str | None,
    agent: str | None,
    profile: str | None,
    only: tuple[str, ...],
    tags: tuple[str, ...],
    phases: str | None,
    run_id: str | None,
    concurrency: int | None,
    repeat: int | None,
    executor: str,
    reports: tuple[str, ...],
    as_json: bool,
    quiet: bool,
) -> None:
    """Run scenarios against the agent and judge them.

    Exit code 0: every decided scenario passed; 1: a scenario failed, errored
    or stopped; 2: a usage or configuration error (nothing was run).

    \b
    Examples:
      rook run
      rook run --only refund-status --concurrency 4 --report json:out/rook.json
      rook run --phases prepare,open,execute,close     # then, later:
      rook run --run 20261130-101500-ab12cd --phases collect,judge
    """
    from ..report import SYMBOL, table
    from ..runner import RunRequest, run

    def progress(record: dict[str, Any]) -> None:
        if quiet:
            return
        status = record.get("status") or "pending"
        mark = SYMBOL.get(status, status)
        sys.stderr.write(f"  {mark:<12} {record['key']}  {(record.get('reason') or '')[:100]}\n")
        sys.stderr.flush()

    request = RunRequest(
        workspace=workspace,
        project=project,
        agent=agent,
        profile=profile,
        phases=phases,
        run_id=run_id,
        only=split_csv(only),
        tags=split_csv(tags),
        concurrency=concurrency,
        repeat=repeat,
        executor=executor,
        reports=list(reports),
        on_progress=progress,
    )
    outcome = run(request)
    report = outcome.report
    if as_json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
    else:
        click.echo(table(report))
    if "judge" not in report["run"]["phases"] or report["summary"].get("pending"):
        click.echo(
            f"resume with: rook run --run {report['run']['id']} --phases collect,judge", err=True
        )
    sys.exit(outcome.exit_code) if outcome.exit_code else None
