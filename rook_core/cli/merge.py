"""``rook merge``: join the shards of a sharded run into one run, one report."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .options import RATE, NoNulPath, offers, refuse_empty, workspace_options
from .streams import terminal_width

if TYPE_CHECKING:
    from ..redact import Redactor


@contextmanager
def _bad_input() -> Iterator[None]:
    """A damaged file of the run met before anything is merged (a shard part,
    ``run.json`` or scenario record edited by hand or cut short): bad input,
    exit 2 (nothing merged, nothing written), never 1, which says a scenario
    failed."""
    from ..errors import ConfigError, DamagedRecord

    try:
        yield
    except DamagedRecord as exc:
        raise ConfigError(str(exc)) from None


def _target(
    run_dirs: tuple[Path, ...],
    run_id: str | None,
    into: Path | None,
    workspace: str | None,
    project: str | None,
    agent: str | None,
) -> Path:
    """Where the merged run goes: ``--into``, else the workspace's ``runs/<id>``."""
    from ..errors import ConfigError, WorkspaceError
    from ..store import read_json
    from ..workspace import find_workspace, select_agent

    ids = set()
    for d in run_dirs:  # each one named, with --into too: none is skipped unsaid
        data = read_json(d / "run.json")
        if not isinstance(data, dict) or not data.get("id"):
            raise ConfigError(f"{d}: not a Rook run directory (no run.json)")
        ids.add(data["id"])
    if into is not None:
        return into
    if run_id is None:
        if len(ids) > 1:
            raise ConfigError(f"these directories hold different runs ({', '.join(sorted(ids))})")
        run_id = ids.pop()
    try:
        found = select_agent(find_workspace(workspace), project, agent, workspace)
    except WorkspaceError as exc:
        if len(run_dirs) == 1 and not workspace:
            return run_dirs[0]  # merge in place
        if not run_dirs:  # --run ID: its shards are in the workspace's run (no --into)
            raise
        raise ConfigError(f"{exc}\n(or name the merged run's directory with --into DIR)") from None
    if run_dirs:
        return found.runs_dir / run_id
    from ..history import resolve_run
    from ..known_secrets import agent_secrets_redacted
    from ..workspace import found_by

    try:  # an id, a unique prefix, latest or latest~N, as for every command
        # one not found is named with its folder
        with agent_secrets_redacted(found.profiles_dir, found.runs_dir):
            return resolve_run(found.runs_dir, run_id, found_by(workspace, project, agent))
    except ConfigError as exc:
        raise ConfigError(f"--{exc}") from None  # "--run X: no such run ..."


def _save_observed(target: Path, manifest: dict[str, Any]) -> None:
    """What the merged run observed, added to its profile's ``<id>.observed.json``
    when the run is in an agent's ``runs/`` (as every run's is; not ``--into``
    elsewhere): capabilities are recorded per run and per profile."""
    from ..models import SLUG
    from ..observed import save_observed_file

    profiles = target.parent.parent / "profiles"
    profile_id = (manifest.get("profile") or {}).get("id")
    if not isinstance(profile_id, str) or not re.fullmatch(SLUG, profile_id):
        return  # a hand-edited run.json names no file here
    if target.parent.name != "runs" or not profiles.is_dir():
        return
    observed = (manifest.get("capabilities") or {}).get("observed") or {}
    save_observed_file(profiles / f"{profile_id}.observed.json", observed)


def _runs_redactor(*run_dirs: Path) -> Redactor:
    """A redactor of the ``env`` values of the profiles the runs in ``run_dirs``
    were made with (:func:`rook_core.known_secrets.secret_names`; a damaged profile
    copy adds none: merging it says so)."""
    from ..errors import ConfigError
    from ..known_secrets import secret_names
    from ..redact import Redactor

    names: list[str] = []
    for d in dict.fromkeys(run_dirs):
        try:
            names += secret_names(d)
        except ConfigError:
            continue
    return Redactor.for_variables(dict.fromkeys(names))


def _running_shard(run_dir: Path, count: int) -> int | None:
    """A shard of ``count`` still writing into ``run_dir`` (it holds its lock there),
    or ``None``. The lock files are only read: a shard's copy may be read-only."""
    import fcntl

    from ..sharding import Shard

    started = sorted(  # a shard that never started here has no lock file to hold
        int(m.group(1))
        for p in run_dir.glob(f".lock.shard-*-of-{count}")
        if (m := re.fullmatch(rf"\.lock\.shard-(\d+)-of-{count}", p.name))
    )
    for i in started:
        try:
            fh = open(run_dir / f".lock.{Shard(i, count).suffix}", "rb")  # noqa: SIM115
        except OSError:
            continue  # unreadable: a copy, whose shard holds no lock here
        with fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on close
            except OSError:
                return i
    return None


def _check_idle(target: Path, count: int, sources: tuple[Path, ...] = ()) -> Any:
    """Refuse while a shard is still writing into ``target`` or one of the ``sources``
    (a shard's directory given, merged elsewhere: it would be merged half-written);
    returns the run's own lock when ``target`` is a run already, held while merging."""
    from ..errors import ConfigError
    from ..redact import Redactor
    from ..store import RunDir

    for d in dict.fromkeys([target, *sources]):
        i = _running_shard(d, count)
        if i is not None:
            raise ConfigError(
                f"run {d.name}: shard {i}/{count} is still running; merge when it ends"
            )
    if not (target / "run.json").is_file():
        return None
    run = RunDir(target, Redactor())
    run.lock()
    return run


@click.command("merge", short_help="Join the shards of a sharded run into one run.")
@workspace_options
@click.argument("run_dirs", nargs=-1, type=NoNulPath(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--run",
    "run_id",
    metavar="ID",
    shell_complete=offers("runs"),
    help="Merge the shards written into this run (an id, a unique prefix, latest or latest~N).",
)
@click.option(
    "--into",
    type=NoNulPath(file_okay=False),  # text: Path("") would be the current directory
    metavar="DIR",
    help="Directory of the merged run (default: runs/<run-id> of the workspace).",
)
@click.option("--partial", is_flag=True, help="Merge even when a shard left no record.")
@click.option(
    "--min-pass-rate",
    type=RATE,
    metavar="RATE",
    help="Per-scenario gate, as for rook run (0-1).",
)
@click.option(
    "--report",
    "reports",
    multiple=True,
    metavar="FORMAT:PATH",
    help="Also write a report (json, junit, markdown, markdown-comment, html, or a plugin's; "
    "PATH - is standard output).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print exactly one JSON document (the report)."
)
def merge_command(
    workspace: str | None,
    project: str | None,
    agent: str | None,
    run_dirs: tuple[Path, ...],
    run_id: str | None,
    into: str | None,
    partial: bool,
    min_pass_rate: float | None,
    reports: tuple[str, ...],
    as_json: bool,
) -> None:
    """Join the shards of a sharded run (rook run --shard I/N) into one run.

    RUN_DIRS are copies of runs/<run-id>/ from the machines that ran the shards
    (e.g. CI artifacts); with --run ID, the shards wrote into the workspace's
    run directory (a shared file system, or artifacts unpacked into it). The
    merged run gets one run.json and one report.json, exactly those of an
    unsharded run; `rook runs`, `rook diff` and `rook run --run ID` then treat
    it as any other run. Exit codes as for rook run, and 1 while scenario runs
    are still pending (2: a shard is missing).

    \b
    Examples:
      rook merge --run ci-1234 --report junit:out/rook.xml
      rook merge shards/*/ --report json:out/rook.json
    """
    from .. import history, known_secrets, plugins
    from ..errors import ConfigError, counted
    from ..merging import merge_runs, run_json, shard_list, write_merged_report
    from ..redact import Redactor, activate
    from ..report import exit_code, table, undecided_warning
    from ..reportfile import print_json
    from ..reporting import (
        check_json_out,
        check_report_targets,
        parse_report_options,
        report_failures,
        say_written,
        to_stdout,
        write_reports,
    )
    from ..workspace import found_by, user_path

    if as_json:
        check_json_out(reports)
    refuse_empty(("--into", into))  # `--into "$OUT"` with OUT unset: not the cwd

    if not run_dirs and run_id is None:
        raise ConfigError("give the shards' run directories, or --run ID")
    if not run_dirs and into is not None:  # --run X --into DIR would merge what DIR holds
        raise ConfigError(
            "--into: where the RUN_DIRS given are merged; --run ID merges the run's shards "
            "in its own directory (leave --into out, or give the shards' directories)"
        )
    rook = plugins.build_plugin_manager()
    with known_secrets.flags_redacted(workspace, project, agent):  # a folder as typed: a secret?
        if run_dirs and run_id is not None:  # which of them merge used was never said
            raise ConfigError(
                f"--run {run_id} and {', '.join(map(str, run_dirs))}: give --run ID (the shards "
                "wrote into the workspace's run) or the shards' run directories, not both"
            )
        wanted = parse_report_options(reports, rook)
    # a directory named as given: the agent's profiles say what is secret in it
    with _bad_input(), known_secrets.flags_redacted(workspace, project, agent):
        target = _target(  # --into as an absolute path: the run's dir, read from anywhere
            run_dirs,
            run_id,
            None if into is None else Path(os.path.abspath(user_path(into))),  # '~/x' quoted
            workspace,
            project,
            agent,
        )
    runs_redactor = _runs_redactor(target, *run_dirs)
    runs_redactor.keep(target.name)  # the run's id, as rook run keeps it
    activate(runs_redactor)  # a message about a run names its folder
    check_report_targets(wanted, None, [target, *map(Path, run_dirs)])
    with _bad_input():
        base = run_json(target) if (target / "run.json").is_file() else None
        if base is None and run_dirs and (run_dirs[0] / "run.json").is_file():
            base = run_json(run_dirs[0])  # merged into a new directory (--into): the shards' N
    shards = int(base.get("shards") or 0) if base is not None else 0
    lock = _check_idle(target, shards, run_dirs) if base is not None else None
    try:
        with _bad_input():
            merged = merge_runs(
                list(run_dirs),
                target,
                partial,
                runs_redactor.data,
                found_by(workspace, project, agent),
            )
        # plugins join their run-level files, each on its own: one that raises is a warning
        with plugins.plugin_output():
            raised = rook.call_each("rook_evidence_merged", merged=merged)
        redactor = Redactor.for_variables(known_secrets.secret_names(target))
        activate(redactor)  # also for what plugins (a failing reporter) say
        for owner, way_out, exc in raised:
            merged.notes.append(
                redactor.text(
                    f"plugin {owner} raised {type(exc).__name__} in rook_evidence_merged"
                    f"{f': {exc}' if str(exc) else ''} "
                    f"(its run-level files are not joined; {way_out})"
                )
            )
        # report.json as rook run writes it: one entry per line, one record read at a
        # time; the report's entries are read back from that file on demand.
        report = write_merged_report(merged, min_pass_rate, redactor.data)
        history.write_summary(target, report)
        _save_observed(target, merged.manifest)
        from . import recorded

        recorded()
    finally:
        if lock is not None:
            lock.unlock()
    failed = write_reports(rook, report, wanted)
    pending = report["summary"].get("pending") or 0
    code = exit_code(report) or (1 if failed or pending else 0)
    if failed:
        from .report_cmd import interrupted_report

        code = 130 if interrupted_report() else code  # a reporter interrupted: as Ctrl-C
    where = found_by(workspace, project, agent)  # its commands work as printed
    report_failures(failed, report["run"]["id"], *_written_by(target, run_dirs, into, where))
    for note in merged.notes:  # paths among them: a folder may be named after an env value
        click.echo(f"rook: warning: {redactor.text(note)}", err=True)
    if merged.missing:
        click.echo(f"rook: note: merged without {shard_list(merged.missing)} (--partial)", err=True)
    if as_json:
        print_json(report)
    else:  # after a report to standard output (junit:-, /dev/stdout): to standard error
        err = to_stdout(reports)
        click.echo(table(report, terminal_width(sys.stderr if err else sys.stdout)), err=err)
    say_written(wanted, failed, redactor.text)  # where each report went, as rook report says
    if pending:  # a shard was cut off: the run is not whole, CI must not pass it
        click.echo(
            f"rook: {counted(pending, 'scenario run')} still pending: "
            f"{unfinished(report, merged.manifest, found_by(workspace, project, agent))}",
            err=True,
        )
    warning = undecided_warning(report)
    if warning and not code:
        click.echo(warning, err=True)
    if code:
        sys.exit(code)


def _written_by(
    target: Path, run_dirs: tuple[Path, ...], into: str | None, where: str
) -> tuple[str, str]:
    """``where`` and ``command`` for :func:`~rook_core.reporting.report_failures`: the
    flags of a ``rook report ID`` that finds the merged run ``target``, or, for one
    outside an agent's ``runs/`` (``--into`` elsewhere, or merged in place) that
    ``rook report`` cannot find, the merge again (it writes the reports again)."""
    import shlex

    from ..redact import scrub
    from ..workspace import run_found_by

    if not run_dirs:
        return where, ""  # --run ID: the workspace's run, found as merge found it
    found = run_found_by(target)  # in an agent's runs/: its flags, the workspace absolute
    if found and into is None and target not in run_dirs:
        return where, ""  # the workspace's runs/<id>, found as merge found it
    if found:  # by its folder's name, which rook report finds (--into runs/OTHER)
        return "", f"rook report {shlex.quote(target.name)}{found}"
    dirs = "".join(f" {shlex.quote(str(d))}" for d in run_dirs)
    into_flag = "" if into is None else f" --into {shlex.quote(into)}"
    return "", scrub(f"rook merge{where}{into_flag}{dirs}")


def unfinished(report: dict[str, Any], manifest: dict[str, Any], where: str) -> str:
    """Which shards left scenario runs pending, and the command that finishes them
    (``where``: the ``-w``, ``--project`` and ``--agent`` merge was given)."""
    from ..merging import shard_list
    from ..sharding import shard_of

    run_id, count = report["run"]["id"], manifest.get("shards")
    if not isinstance(count, int) or count < 1:
        return f"finish them with: rook run --run {run_id}{where}, then merge again"
    shard_by_key = shard_of(manifest["plan"], count)
    pending = {
        f"{s['id']}.{s['repeat_index']}" for s in report["scenarios"] if s["status"] == "pending"
    }
    shards = sorted({shard_by_key[k] for k in pending if k in shard_by_key})
    labels = [f"{i}/{count}" for i in shards] or ["I/N"]
    return (
        f"{shard_list(labels)} did not finish; finish each with: "
        f"rook run --run {run_id} --shard {labels[0]}"
        f"{_phases_left(report, shard_by_key, shards[0] if shards else None)}{where}"
        f"{_given(manifest, labels[0])}, then merge again"
    )


def _given(manifest: dict[str, Any], shard: str) -> str:
    """The ``--min-pass-rate``, ``--concurrency`` and ``--report`` flags the last
    invocation of ``shard`` was given (:func:`rook_core.reporting.invocation_flags`),
    so that the command that finishes it runs as that shard did (its gate: its exit
    code); ``""`` for a shard that recorded no invocation."""
    from ..reporting import invocation_flags

    invocations = manifest.get("invocations")
    mine = [
        i
        for i in (invocations if isinstance(invocations, list) else [])
        if isinstance(i, dict) and i.get("shard") == shard
    ]
    return invocation_flags(mine[-1]) if mine else ""


def _phases_left(report: dict[str, Any], where: dict[str, int], shard: int | None) -> str:
    """``--phases collect,judge`` when the pending scenario runs of ``shard`` were
    split by phase and have only the end of the lifecycle left, else nothing."""
    from ..models import PHASES

    later = PHASES[1:]  # prepare runs once per invocation, never in a record's phases_done
    rest = [
        p
        for p in later
        if any(
            p not in (s.get("phases_done") or ())
            for s in report["scenarios"]
            if s["status"] == "pending" and where.get(f"{s['id']}.{s['repeat_index']}") == shard
        )
    ]
    suffix = rest and len(rest) < len(later) and rest == list(later[-len(rest) :])
    return f" --phases {','.join(rest)}" if suffix else ""
