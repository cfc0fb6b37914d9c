"""``rook runs``: list past runs; ``rook runs show ID``: one run's table."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click
from click.core import ParameterSource

from .options import Count, offers, workspace_options
from .streams import terminal_width


def find_agent(workspace: str | None, project: str | None, agent: str | None) -> Any:
    """The agent a command that reads runs reads, with the values of its profiles'
    ``env`` variables redacted from what it says until it has a run's own (a
    run not found is named with its folder, which may hold such a value)."""
    from ..known_secrets import activate_agent_redactor
    from ..workspace import find_workspace, select_agent

    found = select_agent(find_workspace(workspace), project, agent, workspace)
    activate_agent_redactor(found.profiles_dir, found.runs_dir)
    return found


def _when(started: Any) -> str:
    if not isinstance(started, (int, float)):
        return "?"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
    except (OverflowError, ValueError, OSError):  # NaN, or past any clock (a damaged record)
        return "?"


def _rate(value: Any) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _row(s: dict[str, Any]) -> list[Any]:
    counts, state = s.get("counts"), _state(s)
    if counts is None:  # a record damaged: rook runs show ID names it
        return [
            s["id"],
            _when(s.get("started")),
            s.get("profile"),
            s.get("total"),
            "",
            "",
            "",
            "",
            "n/a",
            "n/a",
            state,
        ]
    return [
        s["id"],
        _when(s.get("started")),
        s.get("profile"),
        s.get("total"),
        counts.get("passed", 0),
        counts.get("failed", 0),
        counts.get("error", 0) + counts.get("stopped", 0) + counts.get("infra_error", 0),
        counts.get("unverifiable", 0) + counts.get("not_runnable", 0) + counts.get("pending", 0),
        _rate(s.get("pass_rate")),
        _rate(s.get("coverage")),
        state,
    ]


def _state(s: dict[str, Any]) -> str:
    """The run's state as ``rook runs`` shows it (its table's last column, and
    ``state`` in ``--json``)."""
    if "recorded" in s:  # no report yet (cut off, still running, or shards not merged)
        recorded = f"{s.get('recorded', 0)}/{s.get('total', 0)} recorded"
        state = (
            f"not merged ({recorded})" if s.get("unmerged_shards") else f"incomplete ({recorded})"
        )
        if s.get("in_progress"):  # another rook run is working on it: not cut off
            state = f"in progress ({recorded})"
    else:
        state = "complete" if s.get("complete") else "incomplete"
        if s.get("exit_code") and s.get("complete"):
            state = "failing"
        if s.get("in_progress"):  # being resumed now (a shard, too: merged when it ends)
            state = "in progress"
        elif s.get("unjoined_shards"):  # a shard recorded scenario runs since it was merged
            state = "merge again"
    return state


# the subcommand is optional (``rook runs`` lists them): Click 8.2+ says so by
# itself, Click 8.1 would print ``COMMAND`` as if it were required
@click.group(
    "runs",
    invoke_without_command=True,
    subcommand_metavar="[COMMAND] [ARGS]...",
    short_help="List past runs, newest first, with their counts.",
)
@workspace_options
@click.option(
    "--limit",
    "-n",
    type=Count(min=1),
    metavar="N",
    default=20,
    show_default=True,
    help="Show the newest N runs.",
)
@click.option("--all", "show_all", is_flag=True, help="Show every run.")
@click.option(
    "--profile",
    metavar="NAME",
    shell_complete=offers("profiles"),
    help="Only runs made with this profile: its id, file name or name, as rook run takes "
    "it, or the id runs were made with (the profile may be gone since).",
)
@click.option("--reindex", is_flag=True, help="Rebuild every run's summary.json from its files.")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
@click.pass_context
def runs_group(
    ctx: click.Context,
    workspace: str | None,
    project: str | None,
    agent: str | None,
    limit: int,
    show_all: bool,
    profile: str | None,
    reindex: bool,
    as_json: bool,
) -> None:
    """List past runs, newest first: id, time, profile, counts, pass rate, coverage.

    \b
    Examples:
      rook runs
      rook runs --all --profile staging
      rook runs show latest
    """
    ctx.ensure_object(dict)
    ctx.obj.update(workspace=workspace, project=project, agent=agent, as_json=as_json)
    if ctx.invoked_subcommand is not None:
        from ..errors import ConfigError

        listing = {
            "limit": "-n",
            "show_all": "--all",
            "profile": "--profile",
            "reindex": "--reindex",
        }
        for name, flag in listing.items():  # never silently ignored
            if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None):
                raise ConfigError(
                    f"{flag}: lists runs; rook runs {ctx.invoked_subcommand} does not take it"
                )
        return

    from ..history import list_runs, profile_id

    if show_all and ctx.get_parameter_source("limit") not in (ParameterSource.DEFAULT, None):
        from ..errors import ConfigError

        raise ConfigError(f"-n {limit} and --all: give one of them (--all lists every run)")
    if profile is not None and not profile.strip():  # `--profile "$P"` with P empty
        from ..errors import ConfigError

        raise ConfigError(
            f"--profile {profile!r}: names no profile; leave the flag out to list every run"
        )
    a = find_agent(workspace, project, agent)
    runs = list_runs(a.runs_dir, rebuild=reindex)
    made_with = sorted({str(r.get("profile")) for r in runs})
    wanted = None
    if profile is not None:  # looked up as rook run --profile looks it up, or an id runs hold
        pinned = [r["profile"] for r in runs if isinstance(r.get("profile"), str)]
        wanted = profile_id(a.profiles_dir, profile, pinned)
        runs = [r for r in runs if r.get("profile") == wanted]
    shown = runs if show_all else runs[:limit]
    shown = [_in_progress(a.runs_dir, s) for s in shown]
    _listing(a.runs_dir, runs, shown, wanted, profile, made_with, as_json)


def _in_progress(runs_dir: Any, s: dict[str, Any]) -> dict[str, Any]:
    """``s``, with ``in_progress`` (``pid N``; a shard's ``pid N, shard I/N``) when
    a ``rook run`` holds the run now. Only a run not finished has its locks looked
    at: a listing of 1,000 runs opens no file of the finished ones. One that no
    ``rook run`` holds is read again: it may have finished, its report written and
    its lock let go, since its summary was read."""
    if s.get("complete") or not isinstance(s.get("id"), str):
        return s
    holder = held_by(runs_dir / s["id"])
    if holder is not None:
        return {**s, "in_progress": holder}
    from ..history import listed

    return listed(runs_dir / s["id"]) or s


def held_by(run_path: Any) -> str | None:
    """Who works on the run now (:func:`rook_core.history.held_by`)."""
    from ..history import held_by as holder

    return holder(run_path)


def _listing(
    runs_dir: Any,
    runs: list[dict[str, Any]],
    shown: list[dict[str, Any]],
    wanted: str | None,
    profile: str | None,
    made_with: list[str],
    as_json: bool,
) -> None:
    """Print the runs listed (``shown`` of ``runs``), or why there are none."""
    from tabulate import tabulate

    from ..redact import scrub

    if as_json:
        listed = [{**s, "state": _state(s)} for s in shown]
        click.echo(json.dumps({"runs": listed, "total": len(runs)}, indent=2, ensure_ascii=False))
        return
    if not runs and wanted is not None and made_with:
        named = "" if wanted == profile else f" ({profile})"
        click.echo(  # the folder, redacted as in an error (find_agent's redactor)
            scrub(
                f"no runs made with profile {wanted}{named} in {runs_dir} "
                f"(runs were made with: {', '.join(made_with)})"
            )
        )
        return
    if not runs:
        click.echo(scrub(f"no runs yet in {runs_dir}"))
        return
    headers = [
        "run",
        "started",
        "profile",
        "runs",
        "passed",
        "failed",
        "errored",
        "unverified",
        "pass rate",
        "coverage",
        "state",
    ]
    full = tabulate([_row(s) for s in shown], headers=headers, tablefmt="simple")
    width = terminal_width(sys.stdout)
    if width is not None and max(map(len, full.splitlines())) > width:
        full = narrow_table(shown, width)
    click.echo(full)
    if len(shown) < len(runs):
        left = len(runs) - len(shown)
        click.echo(f"({left} older run{'' if left == 1 else 's'} not shown; --all shows every run)")


NARROW = ("run", "started", "profile", "runs", "p/f/e/u", "rate", "cov", "state")
"""The headings of ``rook runs`` on a terminal too narrow for its full table."""

NARROW_RIGHT = {3, 4, 5, 6}
"""Its columns aligned right (the numbers)."""

NARROW_LEGEND = "p/f/e/u: passed/failed/errored/unverified; rate: pass rate; cov: coverage"

NARROW_CUT = 6
"""Characters a profile or a state is cut to at the least (``stag…``): fewer say nothing."""


def _short_when(started: Any, year: int) -> str:
    """``12-01 09:00`` for a run started this year, ``2025-12-01`` for an older one."""
    if not isinstance(started, (int, float)):
        return "?"
    try:
        t = time.localtime(started)
        return time.strftime("%m-%d %H:%M" if t.tm_year == year else "%Y-%m-%d", t)
    except (OverflowError, ValueError, OSError):  # as _when
        return "?"


def narrow_table(shown: list[dict[str, Any]], width: int) -> str:
    """``rook runs`` on a terminal narrower than its full table: every column's data
    in fewer characters (the four counts in one column, ``20/3/0/1``; the start
    without its year and seconds), one space apart, then the profiles and states
    cut to what is left of ``width`` (never under :data:`NARROW_CUT`), and a line
    that says what the short headings stand for."""
    from ..report import ellipsis

    year = time.localtime().tm_year
    rows = []
    for s in shown:
        full = ["" if v is None else str(v) for v in _row(s)]
        counts = "/".join(full[4:8]) if full[4] else ""
        when = _short_when(s.get("started"), year)
        rows.append([full[0], when, full[2], full[3], counts, full[8], full[9], full[10]])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(NARROW)]
    over = sum(widths) + len(widths) - 1 - width
    for i in (2, 7, 2, 7):  # the profile, the state, each cut by half what is over, then the rest
        if over <= 0:
            break
        cut = min(widths[i] - max(NARROW_CUT, len(NARROW[i])), (over + 1) // 2 if i == 2 else over)
        if cut > 0:
            widths[i] -= cut
            over -= cut
    lines = [NARROW, ["-" * w for w in widths]]
    lines += [[ellipsis(c, w) for c, w in zip(r, widths, strict=True)] for r in rows]
    text = "\n".join(
        " ".join(
            c.rjust(w) if i in NARROW_RIGHT else c.ljust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    )
    return f"{text}\n{NARROW_LEGEND}"


@runs_group.command("show")
@click.argument("run_ref", metavar="ID", shell_complete=offers("runs"))
@workspace_options
@click.option("--json", "as_json", is_flag=True, help="Print the run's JSON report.")
@click.pass_context
def show_command(
    ctx: click.Context,
    run_ref: str,
    workspace: str | None,
    project: str | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """Show one run's table. ID is a run id, a unique prefix, `latest` or `latest~N`.

    \b
    Example:
      rook runs show latest~1
    """
    from ..history import load_report, resolve_run
    from ..known_secrets import secret_names
    from ..redact import Redactor, activate
    from ..report import table
    from ..reportfile import check_entries, print_json
    from . import reads_runs

    reads_runs()  # a damaged record is bad input here: exit 2
    parent = ctx.obj or {}
    # a flag given here wins, also given empty (`-w "$DIR"` with DIR unset: refused)
    workspace, project, agent = (
        parent.get(k) if v is None else v
        for k, v in (("workspace", workspace), ("project", project), ("agent", agent))
    )
    from ..workspace import found_by

    a = find_agent(workspace, project, agent)
    where = found_by(workspace, project, agent)  # its commands work as printed
    run_path = resolve_run(a.runs_dir, run_ref, where)
    redactor = Redactor.for_variables(secret_names(run_path))
    redactor.keep(run_path.name)  # the id names the run, whatever it holds
    activate(redactor)  # the finish hint's -w, as rook report
    report = load_report(run_path)
    if as_json or parent.get("as_json"):  # rook runs --json show ID
        check_entries(report)  # as the table does: a damaged entry is refused, exit 2
        print_json(report, redactor)  # a record older than a variable's declaration
    else:
        click.echo(table(report, terminal_width(sys.stdout)))
        versions = report["run"].get("rook_versions")
        if isinstance(versions, list) and versions:  # none: an older Rook recorded none
            click.echo(f"made with Rook {', '.join(map(str, versions))}")
        finish_hint(run_path, report, where)
    warn_unmerged(run_path, where)
    from .report_cmd import warn_joined_since

    warn_joined_since(run_path, where)


def finish_hint(run_path: Any, report: dict[str, Any], where: str = "") -> None:
    """On standard error, the command that finishes a run with scenario runs
    still pending (split with --phases, or cut off), ending with ``where``: the
    flags that found the run (:func:`rook_core.workspace.found_by`). A sharded run
    is finished shard by shard, then merged: a merged one (``--partial``) names the
    shards that left them and the command that finishes each, as ``rook merge``
    did; one not merged yet gets none (:func:`warn_unmerged` says to merge it)."""
    from ..history import RUN_FILE
    from ..store import read_json

    if not report["summary"].get("pending"):
        return
    manifest = read_json(run_path / RUN_FILE)
    if isinstance(manifest, dict) and manifest.get("shards") and manifest.get("merged"):
        from ..merging import joined_since
        from .merge import unfinished

        plan = manifest.get("plan")
        if not isinstance(plan, list) or not all(isinstance(k, str) for k in plan):
            return  # a run.json edited by hand: which shard left what is not known
        if not isinstance(manifest["shards"], int):
            return
        if joined_since(run_path):  # merge again, as warn_joined_since says (in progress too)
            return
        holder = held_by(run_path)
        if holder is not None:  # a shard finishing it now: no command finishes it
            click.echo(
                f"rook: run {report['run']['id']} is in progress ({holder}); what it has "
                "recorded so far is shown",
                err=True,
            )
        else:
            click.echo(unfinished(report, manifest, where), err=True)
        return
    if isinstance(manifest, dict) and not manifest.get("shards"):
        from ..reporting import invocation_flags
        from .run import rest_of

        run_id = report["run"]["id"]
        holder = held_by(run_path)
        if holder is not None:  # its pending runs are still to come: no command finishes it
            click.echo(
                f"rook: run {run_id} is in progress ({holder}); what it has recorded so far "
                "is shown",
                err=True,
            )
            return
        invocations = manifest.get("invocations")
        last = invocations[-1] if isinstance(invocations, list) and invocations else None
        # cut off: as rook run said it, --run ID with the phases it was given finishes it
        cut_off = isinstance(last, dict) and last.get("interrupted")
        if cut_off:
            from rook_core.models import PHASES

            split = last.get("phases") if isinstance(last, dict) else None
            rest = (
                f" --phases {','.join(split)}"
                if isinstance(split, list)
                and split
                and split != list(PHASES)
                and all(isinstance(p, str) for p in split)
                else ""
            )
        else:
            rest = rest_of(report)
        finish = f"rook run --run {run_id}{rest}{where}{invocation_flags(last)}"
        click.echo(f"finish it with: {finish}", err=True)


def warn_unmerged(run_path: Any, where: str = "") -> None:
    """On standard error, a warning that a run split with ``--shard`` is not merged
    yet: what is shown is what its shards recorded so far, not the run. ``where``:
    the flags that found the run (:func:`rook_core.workspace.found_by`)."""
    import os
    import re

    from ..errors import RunStoreError
    from ..history import RUN_FILE
    from ..merging import shard_list
    from ..sharding import PART, shard_of
    from ..store import read_json

    try:
        manifest = read_json(run_path / RUN_FILE)
        names = os.listdir(run_path)
    except (OSError, RunStoreError):  # a damaged run.json is named by whoever reads it
        return
    if not isinstance(manifest, dict) or manifest.get("merged"):
        return
    n = manifest.get("shards")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return
    parts = {int(m[1]) for m in map(re.compile(PART).match, names) if m and int(m[2]) == n}
    plan = manifest.get("plan")
    if isinstance(plan, list) and all(isinstance(k, str) for k in plan):
        busy = set(shard_of(plan, n).values())
    else:
        busy = set(range(1, n + 1))
    silent = [f"{i}/{n}" for i in sorted(busy) if i not in parts]  # none to run: none missed
    missing = f" ({shard_list(silent)} recorded nothing yet)" if silent else ""
    holder = held_by(run_path)
    if holder is not None:  # a merge now is refused while a shard runs
        click.echo(
            f"rook: run {run_path.name} is in progress ({holder}); it was split with "
            "--shard and is not merged yet: this shows what its shards recorded so far; "
            f"once they end, join them with: rook merge --run {run_path.name}{where}",
            err=True,
        )
        return
    click.echo(
        f"rook: warning: run {run_path.name} was split with --shard and is not merged "
        f"yet{missing}: this shows what its shards recorded so far; join them with: "
        f"rook merge --run {run_path.name}{where}",
        err=True,
    )
