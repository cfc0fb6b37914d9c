"""``rook diff A B``: what regressed or improved between two runs."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .options import offers, workspace_options
from .runs import find_agent, held_by, warn_unmerged


def _side(o: dict[str, Any] | None) -> str:
    if o is None:
        return "-"
    return f"{o['outcome']} {o['passed']}/{o['runs']}"


def _rate(value: Any) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def warn_in_progress(run_path: Any) -> None:
    """On standard error, that a run another ``rook run`` works on now (not split
    with ``--shard``: :func:`warn_unmerged` and ``warn_joined_since`` say it of
    those) is compared as recorded so far: its scenario runs still to come are
    ``not finished``, as ``rook runs show`` says of it."""
    from ..errors import RunStoreError
    from ..history import RUN_FILE
    from ..store import read_json

    try:
        manifest = read_json(run_path / RUN_FILE)
    except (OSError, RunStoreError):  # a damaged run.json is named by whoever reads it
        return
    if isinstance(manifest, dict) and manifest.get("shards"):
        return
    holder = held_by(run_path)
    if holder is not None:
        click.echo(
            f"rook: run {run_path.name} is in progress ({holder}); it is compared as "
            "recorded so far (what it has still to run is not finished)",
            err=True,
        )


@click.command("diff", short_help="Compare two runs, scenario by scenario: what regressed.")
@click.argument("run_a", metavar="A", shell_complete=offers("runs"))
@click.argument("run_b", metavar="B", shell_complete=offers("runs"))
@workspace_options
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--all", "show_all", is_flag=True, help="List every changed scenario (default: 200).")
def diff_command(
    run_a: str,
    run_b: str,
    workspace: str | None,
    project: str | None,
    agent: str | None,
    as_json: bool,
    show_all: bool,
) -> None:
    """Compare run A (before) with run B (after), scenario by scenario.

    Lists scenarios newly failing, newly flaky, no longer verified, not
    finished (these are regressions), fixed, improved, now verified, still
    failing, flaky, added, removed, and changed in definition (the content
    hashes of their repeats differ, any repeat's). A and B are run ids, unique
    prefixes, `latest` or `latest~N`.

    Exit code 0: nothing regressed; 1: something regressed (gate CI on it);
    2: a usage error, or a run's files are damaged.

    \b
    Examples:
      rook diff latest~1 latest
      rook diff 20261130-101500-ab12cd 20261201-090000-ef34gh --json
    """
    from tabulate import tabulate

    from ..comparing import diff
    from ..history import load_report, resolve_run
    from . import reads_runs

    reads_runs()  # a damaged record is bad input here: exit 2
    from ..workspace import found_by
    from .report_cmd import warn_joined_since

    a = find_agent(workspace, project, agent)
    where = found_by(workspace, project, agent)  # its commands work as printed
    path_a, path_b = resolve_run(a.runs_dir, run_a, where), resolve_run(a.runs_dir, run_b, where)
    report_a, report_b = load_report(path_a), load_report(path_b)
    result = diff(report_a, report_b)
    for path in dict.fromkeys((path_a, path_b)):  # compared as its shards left it: said so
        warn_unmerged(path, where)
        warn_joined_since(path, where)
        warn_in_progress(path)
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False))  # flushed: a full disk is said
    else:
        ra, rb = result["a"], result["b"]
        click.echo(
            f"A {ra['id']} (profile {ra['profile']}, pass rate {_rate(ra['pass_rate'])})"
            f"  ->  B {rb['id']} (profile {rb['profile']}, pass rate "
            f"{_rate(rb['pass_rate'])})"
        )
        rows = result["scenarios"] if show_all else result["scenarios"][:200]
        if rows:
            click.echo(
                tabulate(
                    [
                        [r["id"], _side(r["a"]), _side(r["b"]), ", ".join(r["changes"])]
                        for r in rows
                    ],
                    headers=["scenario", "A", "B", "change"],
                    tablefmt="simple",
                )
            )
            if len(rows) < len(result["scenarios"]):
                click.echo(f"({len(result['scenarios']) - len(rows)} more; --all lists them)")
        counts = ", ".join(f"{n} {k}" for k, n in result["counts"].items())
        click.echo(f"{counts or 'no changes'}; {result['unchanged']} unchanged")
        if result["regressed"]:
            shown = ", ".join(result["regressed"][:20])
            more = (
                f" and {len(result['regressed']) - 20} more"
                if len(result["regressed"]) > 20
                else ""
            )
            click.echo(f"regressed: {shown}{more}", err=True)
    sys.exit(1 if result["regressed"] else 0)
