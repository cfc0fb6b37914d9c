"""``rook report ID --report FORMAT:PATH``: re-render a past run's report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .options import offers, workspace_options
from .runs import find_agent, finish_hint, warn_unmerged
from .streams import terminal_width


@click.command("report", short_help="Render a past run again, in any report format.")
@click.argument("run_ref", metavar="ID", shell_complete=offers("runs"))
@workspace_options
@click.option(
    "--report",
    "reports",
    multiple=True,
    metavar="FORMAT:PATH",
    help="Write the report in this format (json, junit, markdown, markdown-comment, html, or a plugin's); PATH - is standard output.",
)
@click.option(
    "--rebuild",
    is_flag=True,
    help="Rebuild the report from the run's records instead of its report.json.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout.")
def report_command(
    run_ref: str,
    workspace: str | None,
    project: str | None,
    agent: str | None,
    reports: tuple[str, ...],
    rebuild: bool,
    as_json: bool,
) -> None:
    """Render a past run again, in any report format; without --report, show its table.

    ID is a run id, a unique prefix, `latest` or `latest~N`. The run's own
    files are only read.

    \b
    Examples:
      rook report latest --report html:out/rook.html
      rook report 20261130-101500-ab12cd --report junit:out/rook.xml --report markdown:out/rook.md
    """
    from .. import plugins
    from ..history import load_report, resolve_run
    from ..known_secrets import flags_redacted, secret_names
    from ..redact import Redactor, activate, scrub
    from ..report import printable, summarize, table
    from ..reportfile import check_entries, print_json, redacted_report
    from ..reporting import (
        check_definitions_kept,
        check_json_out,
        check_report_targets,
        parse_report_options,
        say_written,
        write_reports,
    )
    from . import reads_runs

    reads_runs()  # a damaged record is bad input here: exit 2
    with flags_redacted(workspace, project, agent):  # a folder as typed may hold a secret
        if as_json:
            check_json_out(reports)
        rook = plugins.build_plugin_manager()
        targets = parse_report_options(reports, rook)
    from ..workspace import found_by

    a = find_agent(workspace, project, agent)
    where = found_by(workspace, project, agent)  # its commands work as printed
    run_path = resolve_run(a.runs_dir, run_ref, where)
    check_report_targets(targets, a.runs_dir, [run_path])
    check_definitions_kept(targets, a)
    redactor = Redactor.for_variables(secret_names(run_path))
    redactor.keep(run_path.name)  # the id names the run, whatever it holds
    activate(redactor)  # for what a reporter says
    report = load_report(run_path, rebuild=rebuild)
    if "by_scenario" not in report["summary"]:  # written before per-scenario statistics
        gate = report["summary"].get("gate") or {}
        fresh = summarize(report["scenarios"], gate.get("min_pass_rate"))
        report["summary"] = {**fresh, **report["summary"]}
    if redactor:  # a record older than a variable's declaration: redacted in every format
        report = redacted_report(report, redactor)
    if as_json:  # before any report is written: a damaged entry is refused, nothing printed
        check_entries(report)
    failed = write_reports(rook, report, targets, read_only=True)
    cut = interrupted_report()
    if as_json:
        print_json(report)
    elif not targets:
        click.echo(table(report, terminal_width(sys.stdout)))
    say_written(targets, failed)
    for message in failed.values():
        click.echo(f"rook: error: {printable(scrub(message))}", err=True)
    if not as_json:  # as rook runs show says it (--json: the one document, nothing else)
        finish_hint(run_path, report, where)
    warn_unmerged(run_path, where)
    if not rebuild:  # --rebuild reads every record, theirs too
        warn_joined_since(run_path, where)
    if failed:
        sys.exit(130 if cut else 1)  # a reporter interrupted: as Ctrl-C exits


def warn_joined_since(run_path: Path, where: str = "") -> None:
    """Warn when shards recorded scenario runs after the run was merged: its
    report, shown as it was merged, leaves them out until merged again. ``where``:
    the flags that found the run (:func:`rook_core.workspace.found_by`). While a shard
    still runs into it, the run is in progress: a merge waits for it to end."""
    from ..merging import joined_since, shard_list
    from .runs import held_by

    late = joined_since(run_path)
    holder = held_by(run_path) if late else None
    if holder is not None:
        click.echo(
            f"rook: run {run_path.name} is in progress ({holder}); {shard_list(late)} "
            "recorded scenario runs after it was merged: this report leaves them out; "
            f"once it ends, merge again with: rook merge --run {run_path.name}{where}",
            err=True,
        )
    elif late:
        click.echo(
            f"rook: warning: {shard_list(late)} recorded scenario runs after run "
            f"{run_path.name} was merged; this report leaves them out until: "
            f"rook merge --run {run_path.name}{where}",
            err=True,
        )


def interrupted_report() -> bool:
    """Whether a reporter was interrupted while :func:`write_reports` ran (a
    ``KeyboardInterrupt`` it raised: :func:`rook_core.interrupts.note_cut`), that
    note cleared, as ``rook run`` clears it, for the next command in this process."""
    from ..interrupts import report_cut, restore

    cut = report_cut() is not None
    restore()
    return cut
