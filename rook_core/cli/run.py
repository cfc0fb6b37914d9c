"""``rook run``: drive every selected scenario through the lifecycle and report."""

from __future__ import annotations

import sys
from typing import Any

import click

from .options import RATE, Count, offers, split_csv, workspace_options
from .streams import terminal_width


@click.command("run")
@workspace_options
@click.option(
    "--profile",
    "profile",
    metavar="NAME",
    shell_complete=offers("profiles"),
    help="Profile to use (default: the one profiles/active names, or the only one).",
)
@click.option(
    "--only",
    multiple=True,
    metavar="ID,...",
    shell_complete=offers("scenarios"),
    help="Run only these scenario ids.",
)
@click.option(
    "--tag", "tags", multiple=True, metavar="TAG,...", help="Run scenarios with one of these tags."
)
@click.option(
    "--class", "classes", multiple=True, metavar="CLASS,...", help="Run scenarios of these classes."
)
@click.option(
    "--category",
    "categories",
    multiple=True,
    metavar="CAT,...",
    help="Run scenarios of these categories.",
)
@click.option(
    "--judge-profile",
    metavar="NAME",
    help="Profile that judges rubric criteria (NAME, or AGENT/NAME).",
)
@click.option(
    "--min-pass-rate",
    type=RATE,
    metavar="RATE",
    help="Per-scenario gate: exit 1 when a scenario's pass rate over its decided "
    "runs is below RATE (0-1).",
)
@click.option(
    "--phases",
    metavar="P,...",
    help="A prefix or suffix of prepare,open,execute,close,collect,judge.",
)
@click.option(
    "--run",
    "run_id",
    metavar="ID",
    shell_complete=offers("runs"),
    help="Continue this run in place, running only what is missing.",
)
@click.option(
    "--concurrency",
    "-j",
    type=Count(min=1),
    metavar="N",
    help="Scenarios in flight (default: the profile's).",
)
@click.option(
    "--repeat",
    type=Count(min=1),
    metavar="N",
    help="Run each scenario N times (overrides repeat:).",
)
@click.option(
    "--executor",
    default="local",
    show_default=True,
    metavar="NAME",
    help="Executor plugin that runs scenarios.",
)
@click.option(
    "--report",
    "reports",
    multiple=True,
    metavar="FORMAT:PATH",
    help="Also write a report (json, junit, markdown, markdown-comment, html, or a plugin's; "
    "e.g. json:out.json; PATH - is standard output).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print exactly one JSON document (the report) on stdout.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N of the selected scenario runs (needs --run or --run-name; join shards with rook merge).",
)
@click.option(
    "--run-name",
    metavar="NAME",
    help="Create or continue the run whose id derives from NAME (the same on every shard).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Dask scheduler address or scheduler file, for --executor dask (default: a local cluster).",
)
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
    classes: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    judge_profile: str | None = None,
    min_pass_rate: float | None = None,
    shard: str | None = None,
    run_name: str | None = None,
    scheduler: str | None = None,
) -> None:
    """Run scenarios against the agent and judge them.

    Exit code 0: every decided scenario passed and none was left untested; 1: a
    scenario failed, errored or stopped (with --min-pass-rate: a scenario's pass
    rate missed the gate), or an infrastructure error left one untested (even
    with every decided one passed); 2: a usage or configuration error (nothing
    was run).

    \b
    Examples:
      rook run
      rook run --only refund-status --concurrency 4 --report json:out/rook.json
      rook run --repeat 5 --min-pass-rate 0.8 --report junit:out/rook.xml
      rook run --class adversarial --judge-profile grader --report html:out/rook.html
      rook run --phases prepare,open,execute,close     # then, later:
      rook run --run 20261130-101500-ab12cd --phases collect,judge
      rook run --shard 2/4 --run-name ci-1234     # then: rook merge --run ci-1234
      rook run --executor dask --scheduler tcp://scheduler:8786 -j 64
    """
    from ..startup import collector_paused

    with collector_paused():  # most of Rook's modules: objects that live as long as the run
        from ..errors import ConfigError
        from ..models import run_name as shown_name
        from ..plugins import plugin_output
        from ..report import (
            SYMBOL,
            pending_reason,
            reason_text,
            reason_width,
            table,
            undecided_warning,
        )
        from ..reportfile import print_json
        from ..reporting import check_json_out, finish_flags, say_written, to_stdout
        from ..runner import RunRequest, run
        from ..workspace import found_by

    if scheduler is not None and executor == "local":
        raise ConfigError("--scheduler: only for an executor that uses one (--executor dask)")

    recorded_now = 0  # scenario runs this invocation recorded
    terminal = terminal_width(sys.stderr)  # the progress lines' terminal, if any

    def progress(record: dict[str, Any]) -> None:
        nonlocal recorded_now
        recorded_now += 1
        if quiet:
            return
        status = record.get("status") or "pending"
        mark = SYMBOL.get(status, status)
        if not record.get("reason"):  # pending: what is still to run, as the table says
            record = {**record, "reason": pending_reason(record)}
        key, count = record["key"], record.get("repeat_count", 1)
        if count == 1:  # its scenario's id: the key (ID.1) less its index
            name = key.rpartition(".")[0] or key
        else:
            scenario = record.get("scenario") or {}
            name = shown_name(scenario.get("id", key), record.get("repeat_index", 1), count)
        line = f"  {mark:<12} {name}  "  # on a terminal: its reason fits the width
        width = 100 if terminal is None else reason_width(len(line), terminal)
        sys.stderr.write(f"{line}{reason_text(record, width)}\n")
        sys.stderr.flush()

    def say_starting(said: str) -> None:
        """On a terminal, before the first hook: what runs (a slow prepare is no hang),
        folded at a space to the terminal's width (a run's id makes it long)."""
        if terminal is not None and len(said) > terminal:
            import textwrap

            said = textwrap.fill(said, terminal, subsequent_indent="  ", break_on_hyphens=False)
        sys.stderr.write(f"{said}\n")
        sys.stderr.flush()

    if as_json:
        from ..known_secrets import flags_redacted

        with flags_redacted(workspace, project, agent):  # a folder as typed may hold a secret
            check_json_out(reports)
    if profile is not None and not profile.strip():  # `--profile "$P"` with P unset
        raise ConfigError(
            f"--profile {profile!r}: names no profile; give NAME, or leave the flag out to "
            "use the active one"
        )
    selectors = {"--only": only, "--tag": tags, "--class": classes, "--category": categories}
    for flag, given in selectors.items():
        if given and not split_csv(given):  # `--tag "$TAGS"` with TAGS empty selects nothing
            raise ConfigError(
                f"{flag} {','.join(given)!r}: names nothing; leave the flag out to run "
                "every scenario"
            )
        for value in given:  # `--only "$A,$B"` with B empty: refused, as --phases is
            parts = [part.strip() for part in value.split(",")]
            if "" in parts:  # `--only a --only "$B"` with B empty too
                what = "an empty item (two commas, or one at an end)" if any(parts) else "empty"
                raise ConfigError(f"{flag} {value!r}: {what}; name each one")
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
        on_start=None if quiet or terminal is None else say_starting,
        classes=split_csv(classes),
        categories=split_csv(categories),
        judge_profile=judge_profile,
        min_pass_rate=min_pass_rate,
        shard=shard,
        run_name=run_name,
        executor_options={"scheduler": scheduler} if scheduler is not None else {},
        found_by=found_by(workspace, project, agent, absolute=True),
    )
    # a reader of standard output or error that leaves (rook run 2>&1 | head -1) stops
    # nothing: the console script drops what it no longer reads (streams.py)
    with plugin_output():  # standard output is for the table or the one document
        outcome = run(request)
    from . import recorded

    report = outcome.report
    # Ctrl-C while the results are printed: the run is whole on disk, and said to be
    shown_by = f"rook runs show {report['run']['id']}{found_by(workspace, project, agent)}"
    recorded("" if shard else shown_by)
    continued = bool(run_id or run_name) and not shard  # an existing run, perhaps finished
    empty = None  # a shard past the end of the plan: no table of nothing (exit 0, recorded)
    if shard and not as_json and not report["scenarios"] and not outcome.interrupted:
        where = found_by(workspace, project, agent)
        empty = empty_shard(report, shard, outcome.run_dir, where)
    if as_json:
        print_json(report)
    elif empty:
        click.echo(empty, err=to_stdout(reports))
    else:  # after a report to standard output (junit:-, /dev/stdout): to standard error
        err = to_stdout(reports)
        click.echo(table(report, terminal_width(sys.stderr if err else sys.stdout)), err=err)
    say_written(
        outcome.reports_written, {}, outcome.redactor.text
    )  # where each report went, as rook report says
    run_id = report["run"]["id"] + (f" --shard {shard}" if shard else "")
    where = found_by(workspace, project, agent)  # so the command works as printed
    # and runs with the same gate and concurrency, and writes the run's reports again, whole
    where += finish_flags(reports, min_pass_rate, concurrency, executor, scheduler)
    if outcome.interrupted:
        from rook_core.models import PHASES

        split = report["run"].get("phases") or []  # split by phase: keep the selection
        again = f" --phases {','.join(split)}" if split and split != list(PHASES) else ""
        click.echo(
            f"rook: run {run_id} was interrupted; what finished is recorded and reported.\n"
            f"finish it with: rook run --run {run_id}{again}{where}",
            err=True,
        )
    elif report["summary"].get("pending") and not outcome.stopped:  # else said: once
        click.echo(f"resume with: rook run --run {run_id}{rest_of(report)}{where}", err=True)
    elif continued and not recorded_now and not outcome.stopped:  # stopped: said why
        click.echo(
            f"rook: note: run {run_id} had nothing left to run: every selected scenario "
            "run was finished already, and its results are shown as recorded; rook run "
            "without --run or --run-name starts a new run",
            err=True,
        )
    warning = undecided_warning(report)
    if warning and not outcome.interrupted and not outcome.exit_code:
        click.echo(warning, err=True)
    if shard and merged_before(report, shard):  # rook runs and rook report show that merge
        from pathlib import Path

        from .runs import held_by

        run_id = report["run"]["id"]
        merge = f"rook merge --run {run_id}{found_by(workspace, project, agent)}"
        holder = held_by(Path(report["run"]["dir"]))  # another shard: a merge waits for it
        click.echo(
            f"rook: run {run_id} was merged before this shard ran; its report leaves "
            + (
                f"this shard out until: {merge}"
                if holder is None
                else f"this shard out until merged again, and run {run_id} is in "
                f"progress ({holder}): when it ends: {merge}"
            ),
            err=True,
        )
    if outcome.exit_code:
        sys.exit(outcome.exit_code)


def empty_shard(report: dict[str, Any], shard: str, run_dir: Any, where: str) -> str | None:
    """What a shard with no scenario run of its own says instead of an empty table:
    why it had nothing (the plan has fewer scenario runs than shards; which shards
    have them) and that it is recorded all the same, so ``rook merge`` counts it.
    ``None`` when its share of the plan is not empty (then the table says why)."""
    from pathlib import Path

    from ..errors import RookError
    from ..report import table_notes
    from ..sharding import parse_shard
    from ..store import read_json

    run_id, mine = report["run"]["id"], parse_shard(shard)
    try:
        plan = (read_json(Path(run_dir) / "run.json") or {}).get("plan")
    except (OSError, ValueError, AttributeError, RookError):
        return None
    if mine is None or not isinstance(plan, list):
        return None
    n, count = len(dict.fromkeys(map(str, plan))), mine.count
    if mine.index <= n:
        return None
    shards = f"shard 1/{count}" if n == 1 else f"shards 1/{count} to {n}/{count}"
    why = f"plans {n} scenario run{'s' * (n != 1)}, for {shards}" if n else "plans none"
    return (
        f"shard {mine.label} has no scenarios to run: run {run_id} {why}. It is recorded, "
        f"so that rook merge --run {run_id}{where} counts it." + table_notes(report)
    )  # what the table says under it (a Ruhroh continuity, the gate), and the run's folder


def merged_before(report: dict[str, Any], shard: str) -> bool:
    """Whether the run a shard ran into was merged before this shard recorded
    something (``rook merge --partial``, then the missing shard): the run's
    ``run.json`` and ``report.json`` are that merge's, without this work. If so,
    ``rook runs`` lists it as ``merge again`` until it is merged again."""
    from pathlib import Path

    from ..history import note_unjoined
    from ..merging import joined_since
    from ..sharding import parse_shard

    path, mine = Path(report["run"]["dir"]), parse_shard(shard)
    late = joined_since(path)
    if mine is None or mine.label not in late:
        return False
    note_unjoined(path, late)
    return True


def rest_of(report: dict[str, Any]) -> str:
    """The ``--phases`` that finish a run split by phase (the ones it has not
    run yet, when they are the end of the lifecycle), else nothing: a plain
    ``--run ID`` finishes whatever is missing."""
    from rook_core.models import PHASES

    done = report["run"].get("phases") or []
    rest = [p for p in PHASES if p not in done]
    if not rest:  # every phase was asked for (an executor failed, say): --run ID finishes it
        return ""
    for entry in report["scenarios"]:  # one a narrower --only left further behind
        if entry.get("status") == "pending" and entry.get("phases_done") is not None:
            behind = [p for p in PHASES[1:] if p not in entry["phases_done"]]
            rest = behind if len(behind) > len(rest) else rest
    prepare = report["run"].get("prepare")
    if rest[:1] == ["open"] and not (isinstance(prepare, dict) and prepare.get("status") == "ok"):
        return ""  # no prepare succeeded (killed in it): --run ID alone prepares first
    return f" --phases {','.join(rest)}" if rest and rest == list(PHASES[-len(rest) :]) else ""
