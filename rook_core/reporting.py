"""``--report FORMAT:PATH``: each target checked before anything runs (a
format installed, a path that can be written, no two reports in one file,
no file of a run's record replaced, standard output kept for ``--json``),
and each report written by its reporter plugin after the run, a failure
named without losing the others. ``rook run``, ``rook report`` and ``rook
merge`` share it."""

from __future__ import annotations

import asyncio
import inspect
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import (
    ConfigError,
    DamagedRecord,
    RookError,
    did_you_mean,
    exception_text,
    typed,
)
from .plugins import Rook, plugin_failure, plugin_output
from .redact import scrub
from .report import printable
from .reportio import LazyList, MappedList, is_special, own_stream, staged, target_problem
from .store import kind_of

STDOUT = "-"
"""A ``--report`` PATH that means standard output (``junit:-``; a file named ``-`` is ``./-``)."""


SUFFIX = {"junit": "xml", "markdown": "md", "markdown-comment": "md"}
"""A report file's usual suffix, where it is not the format's name (for an example)."""


def to_stdout(values: Iterable[str]) -> bool:
    """Whether a ``--report FORMAT:PATH`` given writes to standard output: ``-``,
    or a path that is the same file (:func:`is_stdout`: ``/dev/stdout``,
    ``/proc/self/fd/1``, the file it is redirected to). The report is then all
    standard output holds: the table goes to standard error. Asked once, when
    the run is over."""
    for value in values:
        path = value.partition(":")[2]
        if path == STDOUT or (path and "\0" not in path and is_stdout(os.path.expanduser(path))):
            return True
    return False


def finish_flags(
    reports: Iterable[str],
    min_pass_rate: float | None = None,
    concurrency: int | None = None,
    executor: str | None = None,
    scheduler: str | None = None,
) -> str:
    """`` --report FORMAT:PATH ...``: a run's reports, for the command Rook prints or
    stores that finishes it (so a user who copies it gets them again, whole).
    ``reports`` as given, or made absolute for a stored command; shell-quoted and
    redacted. ``--json`` is left out: its document goes where standard output was
    redirected (``> FILE``), which a command cannot say; the run's own
    ``report.json`` and ``rook report ID --json`` hold it. Before them the
    ``--min-pass-rate`` the run was given (without it the finished run would have
    no gate, and another exit code), ``--concurrency`` (how many at once) and, for
    another executor than the default one, ``--executor`` and its ``--scheduler``
    (without them a Dask run would be finished on this machine)."""
    import shlex

    kept = f" --min-pass-rate {min_pass_rate!r}" if min_pass_rate is not None else ""
    kept += f" --concurrency {concurrency}" if concurrency is not None else ""
    kept += f" --executor {shlex.quote(executor)}" if executor not in (None, "local") else ""
    kept += scrub(f" --scheduler {shlex.quote(scheduler)}") if scheduler else ""
    return kept + scrub("".join(f" --report {shlex.quote(r)}" for r in reports))


def invocation_flags(invocation: Any, reports: bool = True) -> str:
    """:func:`finish_flags` for ``invocation``, an entry of a run's ``run.json``: the
    ``--min-pass-rate``, ``--concurrency``, ``--executor`` and ``--scheduler`` it was
    given and, with ``reports``, its ``--report`` flags as stored (absolute paths), for
    a command that finishes its run or writes it again (run as printed, it keeps the run's gate, so its exit code).
    ``""`` for none (a run.json edited by hand: what is not of its type is left out)."""
    if not isinstance(invocation, dict):
        return ""
    outputs = invocation.get("reports") if reports else None
    if not isinstance(outputs, list) or not all(isinstance(r, str) for r in outputs):
        outputs = []  # none given, or a run.json edited by hand
    gate, many = invocation.get("min_pass_rate"), invocation.get("concurrency_given")
    executor, scheduler = invocation.get("executor"), invocation.get("scheduler")
    return finish_flags(
        outputs,
        gate if isinstance(gate, (int, float)) and not isinstance(gate, bool) else None,
        many if isinstance(many, int) and not isinstance(many, bool) and many > 0 else None,
        executor if isinstance(executor, str) else None,
        scheduler if isinstance(scheduler, str) else None,
    )


def run_flags(run_path: Path, reports: bool = True) -> str:
    """:func:`invocation_flags` of the last invocation in the ``run.json`` of the run
    folder ``run_path``, for a command on that run Rook prints where no flags of
    its are known (a damaged report's way out, ``rook doctor``'s fix for a killed
    run); ``""`` when that cannot be read (damaged too: the command without them)."""
    from .store import DamagedRecord, read_json

    try:
        manifest = read_json(run_path / "run.json")
    except DamagedRecord:
        return ""
    invocations = manifest.get("invocations") if isinstance(manifest, dict) else None
    last = invocations[-1] if isinstance(invocations, list) and invocations else None
    return invocation_flags(last, reports)


def is_stdout(path: str) -> bool:
    """Whether ``path`` is the file Rook's standard output is (the same device
    and inode), but never ``/dev/null``, from which nothing is read back."""
    try:
        out = os.fstat(sys.__stdout__.fileno())  # type: ignore[union-attr]
        if os.path.samestat(out, os.stat(os.devnull)):
            return False
        return os.path.samestat(os.stat(path), out)
    except (OSError, ValueError, AttributeError):  # closed, or no file behind it
        return False


def _format_hint(value: str, rook: Rook) -> str:
    """What a ``--report`` without a colon meant: a format alone (``json``), one
    mistyped (``jsn``) or a file alone (``out.xml``): ``; did you mean json:PATH?``
    (``junit:out.xml``), else the formats installed."""
    names = rook.reporters.names()
    stem, dot, suffix = value.strip().rpartition(".")
    by_suffix = {SUFFIX.get(n, n): n for n in reversed(names)}  # xml -> junit, md -> markdown
    if dot and stem and suffix.lower() in by_suffix:  # a file's name: its format before it
        return f"; did you mean {by_suffix[suffix.lower()]}:{value.strip()}?"
    close = value if value in names else did_you_mean(value, names)
    if close:
        return f"; did you mean {close}:PATH (e.g. {close}:report.{SUFFIX.get(close, close)})?"
    return f", e.g. json:report.json; formats: {rook.reporters.listing()}"


def parse_report_option(value: str, rook: Rook) -> tuple[str, str]:
    fmt, sep, path = value.partition(":")
    if not sep or not path.strip():  # `json:"$OUT"` with OUT unset, or blank
        if sep:  # `html:` alone: its own example
            known = fmt if fmt in rook.reporters else "json"
            hint = f", e.g. {known}:report.{SUFFIX.get(known, known)}"
        else:  # `json`, `jsn`, `out.xml`: what it meant
            hint = _format_hint(fmt, rook)
        raise ConfigError(f"--report {typed(value)}: use FORMAT:PATH{hint}")
    if fmt not in rook.reporters:
        close = did_you_mean(fmt, rook.reporters.names())
        raise ConfigError(
            f"--report {value}: unknown format {fmt!r}; installed: {rook.reporters.listing()}"
            + (f"; did you mean {close}:{path}?" if close else "")
        )
    if path == STDOUT:
        if sys.__stdout__ is None:  # rook run >&-
            raise ConfigError(f"--report {value}: standard output is closed")
        return fmt, path
    if "\0" in path:  # Path() would take it; os.stat raises ValueError
        raise ConfigError(f"--report {value}: no path holds a NUL character")
    path = os.path.expanduser(path)  # `json:~/x`: no shell expands a ~ after the colon
    if path.endswith(os.sep):  # a folder's name (Path() would drop the slash: r.json/ -> r.json)
        raise ConfigError(
            f"--report {value}: ends with {os.sep}, the name of a folder; a report is a file: "
            f"give its name, e.g. {fmt}:{os.path.join(path, 'report.' + SUFFIX.get(fmt, fmt))}"
        )
    problem = target_problem(Path(path))
    if problem is not None:  # found now, not after every scenario ran
        raise ConfigError(f"--report {value}: {problem}")
    return fmt, path


def parse_report_options(
    values: Iterable[str | tuple[str, str]], rook: Rook
) -> list[tuple[str, str]]:
    """Every ``--report`` (:func:`parse_report_option`; one parsed already is
    kept); two different ones that would write one file (the last would
    replace the other) are refused."""
    reports = [parse_report_option(v, rook) if isinstance(v, str) else v for v in values]
    if any(path == STDOUT for _, path in reports):  # junit:-: the one thing on standard output
        out = [
            f"{fmt}:{path}"
            for fmt, path in reports
            if path == STDOUT or own_stream(Path(path)) is sys.__stdout__
        ]
        if len(out) > 1:
            raise ConfigError(
                f"--report {out[0]} and --report {out[1]} both write to standard output, "
                "which then holds one report (the table goes to standard error): write the "
                "other to a file"
            )
    files: dict[str, tuple[str, str]] = {}
    for fmt, path in reports:
        if path == STDOUT or is_special(Path(path)) or own_stream(Path(path)) is not None:
            continue  # /dev/stdout: each is written into it in turn
        first = files.setdefault(os.path.realpath(path), (fmt, path))
        if first[0] != fmt:
            raise ConfigError(
                f"--report {fmt}:{path} and --report {first[0]}:{first[1]} name the same file, "
                "and the one written last would replace the other: give each its own file"
            )
    return reports


RUN_OWN_DIRS = ("scenarios", "state", "judge")
"""The folders of a run's directory that hold its record (see :mod:`rook_core.store`)."""


def check_report_targets(
    reports: Iterable[tuple[str, str]],
    runs_dir: Path | None = None,
    run_dirs: Iterable[Path] = (),
) -> None:
    """Refuse (exit 2, nothing run or written) a ``--report`` that would replace
    a file of a run's record: in a run directory (one of ``run_dirs``, or any
    folder of ``runs_dir``), a JSON file or ``profile.yaml`` at its top
    (``run.json``, ``report.json``, ``summary.json``, ``prepare.json``...), a
    hidden file, or ``scenarios``, ``state`` or ``judge`` and anything under them;
    or the folder of one of ``run_dirs`` itself (the run ``rook run --run-name``
    makes). Other files there (``report.html``) are the user's to write."""
    roots = [os.path.realpath(d) for d in run_dirs]
    top = os.path.realpath(runs_dir) if runs_dir is not None else None
    for fmt, path in reports:
        if path == STDOUT or is_special(Path(path)):
            continue
        real = os.path.realpath(path)
        for root in roots:
            if real == root:  # --report runs/ID: where the run's folder is, or will be
                raise ConfigError(
                    f"--report {fmt}:{path}: that is the folder of run "
                    f"{os.path.basename(root)} ({root}), which a report never replaces; write "
                    "the report elsewhere (or in that folder under another name, e.g. "
                    f"{os.path.join(path, 'report.html')})"
                )
        found = [(r, os.path.relpath(real, r)) for r in roots if real.startswith(r + os.sep)]
        if not found and top is not None and real.startswith(top + os.sep):
            head, *rest = os.path.relpath(real, top).split(os.sep)
            if rest:  # in a run's folder, not beside the runs
                found = [(os.path.join(top, head), os.sep.join(rest))]
        for root, rel in found:
            parts = rel.split(os.sep)
            name = parts[0]
            if len(parts) > 1 and name not in RUN_OWN_DIRS:
                continue
            if len(parts) == 1 and not (  # scenarios, state, judge: where its folder belongs
                name.endswith(".json")
                or name == "profile.yaml"
                or name.startswith(".")
                or name in RUN_OWN_DIRS
            ):
                continue
            raise ConfigError(
                f"--report {fmt}:{path}: that is {rel} of run {os.path.basename(root)} "
                f"({root}), part of its record, which a report never replaces; write the "
                "report elsewhere (or under another name there, e.g. report.html)"
            )


def check_definitions_kept(reports: Iterable[tuple[str, str]], agent: Any) -> None:
    """Refuse (exit 2, nothing run or written) a ``--report`` that would replace
    one of the agent's definitions: a file that exists in its ``profiles``,
    ``scenarios`` or ``scripts`` folder, or the workspace's ``config.yaml`` (a
    path completed to the wrong file). A new file there, or elsewhere in the
    agent's folder, is the user's to write."""
    reports = list(reports)
    if not reports:  # the usual run: nothing to look up
        return
    folders = [os.path.realpath(d) for d in (agent.profiles_dir, agent.scenarios_dir)]
    folders.append(os.path.realpath(agent.scripts_dir))
    config = os.path.realpath(agent.root / "config.yaml")
    for fmt, path in reports:
        if path == STDOUT or is_special(Path(path)):
            continue
        real = os.path.realpath(path)
        if not os.path.isfile(real):
            continue
        if real == config or any(real.startswith(f + os.sep) for f in folders):
            raise ConfigError(
                f"--report {fmt}:{path}: that is {real}, one of agent {agent.name}'s "
                "definitions (its profiles, scenarios and scripts, the workspace's "
                "config.yaml), which a report never replaces; write the report elsewhere"
            )


def check_json_out(reports: Iterable[str]) -> None:
    """With ``--json``, standard output holds exactly one JSON document: a
    ``--report`` that would write there too (``/dev/stdout``, or the file
    standard output is redirected to) is refused before anything runs."""
    for value in reports:
        if value.partition(":")[2] == STDOUT:
            raise ConfigError(
                f"--report {value}: that is standard output, where --json prints the report; "
                "write the report to a file, or leave out --json"
            )
    try:
        out = os.fstat(sys.stdout.fileno())
        if os.path.samestat(out, os.stat(os.devnull)):
            return  # nothing is read back from /dev/null
    except (OSError, ValueError, AttributeError):  # no real standard output (in process)
        return
    for value in reports:
        path = value.partition(":")[2]
        try:
            same = bool(path) and os.path.samestat(os.stat(path), out)
        except OSError:
            same = False
        if same:
            raise ConfigError(
                f"--report {value}: that is standard output, where --json prints the report; "
                "write the report to a file, or leave out --json"
            )


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def write_reports(
    rook: Rook,
    report: dict[str, Any],
    reports: list[tuple[str, str]],
    read_only: bool = False,
    typed_in: str | None = None,
) -> dict[tuple[str, str], str]:
    """Write each report; return why each one that failed did (the others are written).

    The targets were checked before anything ran (:func:`parse_report_option`);
    what fails here fails at the end (a full disk, a directory removed meanwhile,
    a reporter plugin's bug). The run is recorded either way: callers print
    these and still print the run's table or ``--json`` document. With
    ``read_only`` (``rook report``, which only reads a past run), a damaged entry
    of the run's ``report.json`` met while writing is raised: bad input, exit 2.
    ``typed_in``: the folder the targets were given in (``rook run``'s), where a
    relative one is written even if this process could not go back there (it
    lost its search permission while a hook was started elsewhere: then the
    report is written there, by its path, or fails saying why; never into the
    folder this process is in).
    """
    from .interrupts import ReportCut, note_cut, report_cut, reporter_cut

    failed: dict[tuple[str, str], str] = {}
    cut = ""  # the signal that ended a reporter: the reports after it are skipped
    report = _read_only_aggregates(report)
    home = working_folder()
    base = typed_in if typed_in is not None and typed_in != home else None  # rarely: see above
    for fmt, path in reports:
        cut = cut or report_cut() or ""  # also when a reporter took the ReportCut itself
        if cut:
            failed[fmt, path] = f"--report {fmt}:{path}: not written: interrupted ({cut})"
            continue
        back_to(home)  # after a reporter's os.chdir, a relative target is still the user's
        writer = rook.reporters.get(fmt)
        where = path if base is None or path == STDOUT else os.path.join(base, path)
        target = Path("/dev/stdout" if path == STDOUT else where)  # written into Rook's own
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with staged(target, f"--report {fmt}:{path}") as given, plugin_output():
                with reporter_cut(f"{fmt}:{path}"):  # a signal ends it: Rook exits 130
                    written = writer(report, given)
                    if inspect.isawaitable(written):  # an async def write: run it to its end
                        asyncio.run(_awaited(written))
                left = _left_at(given) if given != target else ""  # a FIFO given as it is
                if given != target and not left and own_stream(target) is None:
                    left = _left_beside(given, target)  # companions, moved beside the target
                if left:  # raised, so what it wrote is removed and what was there stays
                    raise _NotWritten(
                        f"--report {fmt}:{path}: the {fmt!r} reporter "
                        f"({rook.reporters.owner(fmt)}) {left}"
                    )
        except KeyboardInterrupt as exc:  # what it wrote is removed; what was there stays
            if isinstance(exc, ReportCut):  # a signal came
                cut = str(exc)
                failed[fmt, path] = (
                    f"--report {fmt}:{path}: interrupted ({cut}) while the {fmt!r} reporter "
                    f"({rook.reporters.owner(fmt)}) wrote it"
                )
            else:  # raised by the reporter's own code (or a library it uses), or Ctrl-C
                cut = "KeyboardInterrupt"  # where no signal handler of Rook's is (rook report)
                note_cut(cut)  # taken as a signal: the others skipped, exit 130
                failed[fmt, path] = (
                    f"--report {fmt}:{path}: the {fmt!r} reporter "
                    f"({rook.reporters.owner(fmt)}) was interrupted (KeyboardInterrupt) "
                    "while it wrote it"
                )
        except _NotWritten as exc:
            failed[fmt, path] = str(exc)
        except OSError as exc:  # named as before the run when it can be (a folder now a file)
            blocked = f" {exc.filename2}" if exc.filename2 else ""  # a companion's place
            problem = target_problem(target) or f"cannot write{blocked}: {exc.strerror or exc}"
            failed[fmt, path] = f"--report {fmt}:{path}: {problem}"
        except RookError as exc:
            if read_only and isinstance(exc, DamagedRecord):
                raise
            failed[fmt, path] = f"--report {fmt}:{path}: {exc}"
        except BaseException as exc:  # a reporter plugin's bug (sys.exit() too):
            if not plugin_failure(exc):  # name it, never a traceback nor the end of Rook
                raise
            failed[fmt, path] = (
                f"--report {fmt}:{path}: the {fmt!r} reporter ({rook.reporters.owner(fmt)}) "
                f"failed: {exception_text(exc)}"
            )
    back_to(home)
    # a plugin's message may hold a secret, and control characters (ESC [2J) for a terminal
    return {k: printable(scrub(v)) for k, v in failed.items()}


class _NotWritten(Exception):
    """A reporter returned without a report file at its path (the message says why)."""


def _left_at(given: Path) -> str:
    """What is wrong with what a reporter left at the path it was given ('' when
    it is a report): nothing (it wrote elsewhere, or returned early), or what is
    not a regular file: a folder, a symbolic link (to a file anywhere), a named
    pipe (the next reader waits forever), a socket or a device."""
    try:
        mode = os.lstat(given).st_mode
    except FileNotFoundError:
        return "wrote nothing at the path it was given"
    if stat.S_ISREG(mode):
        return ""
    return f"left {kind_of(mode)} at the path it was given, not a file"


def _left_beside(given: Path, target: Path) -> str:
    """What is wrong with what a reporter left beside the path it was given
    (its companions, moved beside ``target``; '' when nothing is): the first,
    in a companion folder too, that is neither a regular file nor a folder,
    named where it would go, as :func:`_left_at` names one at the path."""
    for top, dirs, files in os.walk(given.parent):
        for name in sorted(dirs + files):
            found = Path(top, name)
            mode = os.lstat(found).st_mode
            if found == given or stat.S_ISREG(mode) or stat.S_ISDIR(mode):
                continue
            where = target.parent / found.relative_to(given.parent)
            return f"left {kind_of(mode)} beside its report ({where}), not a file"
    return ""


def working_folder() -> str | None:
    """The working folder; ``None`` when it is gone (nothing to come back to)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def back_to(home: str | None) -> None:
    """Back to the working folder ``home`` (unless it was gone to begin with)."""
    if home is not None:
        try:
            os.chdir(home)
        except OSError:  # removed meanwhile: relative targets fail, each named
            pass


def _read_only_aggregates(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with its ``summary.by_scenario`` a read-only list of fresh entries,
    as ``rook run`` gives it: read back whole from ``report.json`` (``rook
    report``) it was a plain list, and one reporter's ``sort`` or ``append`` was
    what the next one wrote."""
    summary = report.get("summary")
    if not isinstance(summary, dict):
        return report
    per = summary.get("by_scenario")
    if not isinstance(per, list) or isinstance(per, LazyList):
        return report
    return {**report, "summary": {**summary, "by_scenario": MappedList(per, _fresh)}}


def _fresh(value: Any) -> Any:
    """A copy of ``value`` as JSON holds it (dicts, lists and scalars): a third
    of :func:`copy.deepcopy`'s time, which a 10,000-scenario ``rook report``
    pays once for each reporter that reads the aggregates."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def say_written(
    reports: list[tuple[str, str]],
    failed: dict[tuple[str, str], str],
    redact: Callable[[str], str] | None = None,
) -> None:
    """Say on standard error where each report of ``reports`` that did not fail
    went (``wrote html report to out/rook.html``), as ``rook report``, ``rook
    run`` and ``rook merge`` say it: a folder's name redacted (by ``redact``,
    else the command's redactor), a typed ESC or U+202E shown as its escape,
    never obeyed."""
    from .redact import scrub
    from .report import printable

    for fmt, path in reports:
        if (fmt, path) not in failed:
            shown = "standard output" if path == STDOUT else path
            said = f"wrote {fmt} report to {shown}"
            sys.stderr.write(printable((redact or scrub)(said)) + "\n")


def report_failures(
    failed: dict[tuple[str, str], str], run_id: str, where: str = "", command: str = ""
) -> None:
    """Say on standard error which reports could not be written at the end of a
    run, and how to write them again from the run's record: ``rook report`` with
    ``where``, the flags that found the run (:func:`rook_core.workspace.found_by`),
    and the targets shell-quoted, so that it works as printed; or ``command`` and
    the targets, for a run ``rook report`` cannot find (merged ``--into`` a folder
    outside a workspace: the merge again)."""
    if not failed:
        return
    lines = [f"rook: error: {message}" for message in failed.values()]
    again = finish_flags(f"{fmt}:{path}" for fmt, path in failed)
    again = f"{command}{again}" if command else f"rook report {run_id}{again}{where}"
    lines.append(f"rook: the run is recorded; write again with: {again}")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


__all__ = [
    "RUN_OWN_DIRS",
    "STDOUT",
    "check_json_out",
    "check_definitions_kept",
    "check_report_targets",
    "parse_report_option",
    "parse_report_options",
    "report_failures",
    "to_stdout",
    "back_to",
    "working_folder",
    "write_reports",
]
