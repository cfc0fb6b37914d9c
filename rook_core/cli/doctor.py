"""``rook doctor``: check that everything a run needs is in place, and say how to fix it.

Checks, in order: the interpreters hook scripts need (Python, Node, bash),
plugin loading, the workspace and each agent's profiles (the file, every hook
entry: script paths, run bits, ``#!`` lines, interpreters; other transports'
own early checks), the variables each profile requires, and the scenarios.
Every problem comes with a ``fix:``; the exit code is 1 when one is found.
Nothing is run against the agent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict
from typing import Any

import click

from ..plain import plain
from .options import workspace_options

OK, PROBLEM, NOTE = "ok", "problem", "note"


@plain
class Finding:
    status: str
    subject: str
    message: str
    fix: str = ""


class Doctor:
    """Collects findings; each ``check_*`` method adds some."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.interpreters: dict[str, str | None] = {}
        self.config: dict[str, Any] = {}
        """The workspace's config.yaml, as read (``judge_profile`` is checked per agent)."""
        self.judge_profile: str | None = None
        """``--judge-profile``: checked instead of config.yaml's, as ``rook run`` would."""
        self.secret_names: set[str] = set()
        """The ``env`` variables of every profile checked: their values are redacted
        in every finding (an id or a folder holding one), as ``rook run`` redacts them."""
        self.left: dict[str, list[int]] = {}
        """What processes a run left running (:func:`~rook_core.procscan.left_by_runs`),
        by run folder, of every agent checked: read once, before the agents are."""
        self.workspace: str | None = None
        """``-w`` as given (or ``ROOK_WORKSPACE_DIR``): kept in the commands a fix names."""

    def where(self, project: str | None = None, agent: Any = None) -> str:
        """The flags a command a fix names needs to work as printed from where doctor
        ran: ``-w`` as given, and the agent's (or ``project``'s) ``--project``/``--agent``
        (:func:`rook_core.workspace.found_by`)."""
        from ..workspace import found_by

        if agent is not None:
            return found_by(self.workspace, agent.project, agent.name)
        return found_by(self.workspace, project, None)

    def add(self, status: str, subject: str, message: str, fix: str = "") -> None:
        self.findings.append(Finding(status, subject, message, fix))

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.status == PROBLEM]

    # -- interpreters ------------------------------------------------------

    def check_interpreters(self) -> None:
        version = ".".join(str(p) for p in sys.version_info[:3])
        self.add(OK, "python", f"{sys.executable} ({version}) runs .py hooks")
        self.interpreters["python"] = sys.executable
        for program, use in (("node", ".mjs .js .cjs hooks"), ("bash", ".sh hooks")):
            found = shutil.which(program)
            self.interpreters[program] = found
            if found:
                self.add(OK, program, f"{found}{_version(found)} runs {use}")
            else:
                self.add(NOTE, program, f"not on PATH (needed only for {use})")

    # -- plugins -----------------------------------------------------------

    def check_plugins(self) -> Any:
        from .. import plugins
        from ..errors import PluginError

        for var in ("ROOK_LOAD_PLUGINS", "ROOK_DISABLE_PLUGINS", "ROOK_TRACE_PLUGINS"):
            if os.environ.get(var) is not None:
                self.add(NOTE, "plugins", f"{var}={os.environ[var]} is set")
        try:
            rook = plugins.build_plugin_manager()
        except PluginError as exc:
            self.add(
                PROBLEM,
                "plugins",
                str(exc),
                "upgrade or uninstall the plugin named above (pip install --upgrade DIST), "
                "or stop it as the message says (ROOK_DISABLE_PLUGINS=NAME for a plugin "
                "loaded from an entry point)",
            )
            return None
        names = ", ".join(i.name for i in rook.infos) or "none"
        self._check_switch_names()
        self.add(OK, "plugins", f"{len(rook.infos)} loaded ({names})")
        loaded = {i.name for i in rook.infos}
        for f in rook.failures:
            dist = f.distribution or "unknown distribution"
            fix = f.fix or (  # its name is another's: disabling it would disable both
                f"uninstall one of the two (pip uninstall {f.distribution or f.name}), or "
                "give the plugin an entry point name of its own"
                if f.name in loaded
                else f"reinstall or upgrade it (pip install --upgrade {f.distribution or f.name}), "
                f"or skip it with ROOK_DISABLE_PLUGINS={f.name}"
            )
            self.add(PROBLEM, f"plugin {f.name}", f"from {dist} failed to load: {f.error}", fix)
        try:  # registered only when asked for, which rook run never does
            rook.authors.names()
        except PluginError as exc:
            self.add(
                PROBLEM,
                "plugins",
                str(exc),
                "rook plugins and the rook profile commands exit 2 until the plugin named "
                "above is fixed, uninstalled or stopped as the message says "
                "(ROOK_DISABLE_PLUGINS=NAME for a plugin loaded from an entry point)",
            )
        if "script" not in rook.transports:
            self.add(NOTE, "plugins", "the built-in script transport is not loaded")
        return rook

    # -- workspace, agents -------------------------------------------------

    def check_workspace(
        self, rook: Any, workspace: str | None, project: str | None, agent: str | None
    ) -> None:
        from ..errors import ConfigError
        from ..workspace import (
            ROOT,
            Agent,
            find_workspace,
            folder_names,
            in_the_way,
            no_workspace,
            read_config,
            select_agent,
        )

        # a -w (or ROOK_WORKSPACE_DIR) naming no directory is a wrong value, as for
        # every other command and as --project nope here: exit 2, not a finding
        root = find_workspace(workspace)
        self.workspace = workspace
        if not (root / ROOT).is_dir():
            message = f"{root}: no {ROOT} here or above"
            fix = (  # -w given: made there, wherever doctor ran
                f"create one: rook init{self.where()} --project P --agent A --example"
                if workspace
                else "create one: rook init --project P --agent A --example (or pass -w DIR)"
            )
            said, where, how = no_workspace(root, workspace)
            if workspace is not None and where:
                # a --workspace is the workspace itself (never searched upwards from),
                # and there is one above it: named as rook run names it
                message, fix = f"{said}; {where}", how
            for path, folder in ((root / ROOT.parent, ".testmuai"), (root / ROOT, "Rook")):
                blocked = in_the_way(path, folder)  # rook init could not make it there
                if blocked:
                    message, _, fix = blocked.partition("; ")
                    break
            self.add(PROBLEM, "workspace", message, fix)
            return
        self.add(OK, "workspace", str(root))
        config: dict[str, Any] = {}
        try:  # what rook run reads first: the same validation
            config = read_config(root)
            self.config = config
            if config and self._check_defaults(root, config):
                self.add(OK, "config", str(root / ROOT / "config.yaml"))
        except ConfigError as exc:
            self.add(
                PROBLEM,
                "config",
                str(exc),
                "fix config.yaml (docs/running.md in Rook's source lists its keys)",
            )
        if project or agent:  # a --project or --agent that names nothing: a usage error
            agents = [select_agent(root, project, agent)]
        else:
            projects = root / ROOT / "projects"  # a hidden folder is no project or agent
            agents = [
                Agent(root, p, a)
                for p in _listed(projects, folder_names)
                for a in _listed(projects / p / "agents", folder_names)
            ]
            from ..workspace import linked_no_folder

            folders = [
                projects,
                *(projects / p / "agents" for p in _listed(projects, folder_names)),
            ]
            for path, what in (found for f in folders for found in linked_no_folder(f)):
                kind = "a project" if path.parent == projects else "an agent"
                self.add(
                    PROBLEM,
                    "workspace",
                    f"{path}: {what}; {kind} is a folder",
                    "remove the link, or point it at the folder",
                )
        if not agents:
            in_way = [
                in_the_way(f, f.name)  # a file where projects/ or agents/ belongs
                for f in (projects, *(projects / p / "agents" for p in folder_names(projects)))
            ]
            said = next((b for b in in_way if b), "")
            message, _, fix = said.partition("; ")
            self.add(
                PROBLEM,
                "workspace",
                message or "no agent in this workspace",
                fix or f"create one: rook init{self.where()} --project P --agent A --example",
            )
        if agents:  # one walk of /proc for every agent's leftovers (check_leftovers)
            from ..procscan import left_by_runs

            self.left = left_by_runs([str(a.runs_dir) for a in agents])
        for a in agents:
            self.check_agent(rook, a)

    def _check_defaults(self, root: Any, config: dict[str, Any]) -> bool:
        """The project and agent config.yaml chooses exist (else every ``rook run``
        without --project/--agent stops); False when a problem was added."""
        from ..workspace import ROOT

        path = root / ROOT / "config.yaml"
        projects_dir = root / ROOT / "projects"
        projects = sorted(p.name for p in projects_dir.glob("*") if p.is_dir())
        project = config.get("project")
        if project is not None and project not in projects:
            self.add(
                PROBLEM,
                "config",
                f"{path}: project {project!r} not found in {projects_dir} "
                f"(projects: {', '.join(projects) or 'none'})",
                "correct project: in config.yaml, or create it: "
                f"rook init{self.where(project)} --agent A",
            )
            return False
        agent = config.get("agent")
        candidates = [project] if project is not None else projects
        if agent is not None and not any(
            (projects_dir / p / "agents" / agent).is_dir() for p in candidates
        ):
            where = f"project {project!r}" if project is not None else "any project"
            self.add(
                PROBLEM,
                "config",
                f"{path}: agent {agent!r} not found in {where}",
                "correct agent: in config.yaml, or create it: "
                f"rook init{self.where(project or 'P')} --agent {agent}",
            )
            return False
        return True

    def check_agent(self, rook: Any, agent: Any) -> None:
        from ..definitions import agent_secret_names
        from ..redact import Redactor, use
        from .doctor_profiles import (
            check_ids_hold_no_secret,
            check_judge_profile,
            check_profiles,
            check_runnable,
            check_scenarios,
            check_sendable,
        )

        label = f"{agent.project}/{agent.name}"
        self.check_leftovers(agent, label)
        self.check_temporaries(agent, label)
        # every profile's, one that does not load included: a finding names its file
        self.secret_names.update(agent_secret_names(agent.profiles_dir))
        if rook is None:
            self.add(NOTE, label, "profiles and scenarios not checked: the plugins did not load")
            return
        profiles = check_profiles(self, rook, agent, label)
        self.secret_names.update(e.variable for p in profiles for e in p.env)
        # what a check cuts short (a criterion's text) is redacted before the cut, as
        # every finding is at the end: a piece of a secret left by a cut is not found
        use(Redactor.for_variables(sorted(self.secret_names)))
        scenarios = check_scenarios(self, rook, agent, label)
        if scenarios:
            check_ids_hold_no_secret(self, rook, profiles, label, scenarios)
            check_sendable(self, rook, profiles, label, scenarios)
            check_runnable(self, rook, agent, profiles, label, scenarios)
            check_judge_profile(
                self, rook, agent, label, scenarios, self.config, self.judge_profile
            )

    def check_leftovers(self, agent: Any, label: str) -> None:
        """Processes a run of ``agent`` killed with SIGKILL left running: its hooks
        (their timeouts died with it) and what they started, found by the run
        their environment names, whose lock no process holds any more."""
        from pathlib import Path

        from ..procscan import command_name
        from ..workspace import found_by
        from .runs import held_by

        mine = os.path.join(str(agent.runs_dir), "")
        for path, pids in sorted(self.left.items()):
            if not path.startswith(mine):
                continue  # another agent's run
            if not os.path.isdir(path) or held_by(Path(path)) is not None:
                continue  # not a run, or one that is going on (its hooks are its own)
            run_id = os.path.basename(path)
            shard, given = killed_shard(Path(path))
            shown = ", ".join(f"pid {p} ({command_name(p)})" for p in pids[:5])
            more = f" and {len(pids) - 5} more" if len(pids) > 5 else ""
            self.add(
                PROBLEM,
                label,
                f"run {run_id} was killed before it could end its hooks: {len(pids)} "
                f"process(es) it started still run, past any timeout ({shown}{more})",
                # the flags that find the run whatever else the workspace holds
                f"rook run --run {run_id}{shard}"
                f"{found_by(str(agent.workspace), agent.project, agent.name)}"
                # as the run was given: its gate (exit code), concurrency and reports
                f"{given} kills them and finishes the run; "
                f"or kill {' '.join(str(p) for p in pids)}",
            )

    def check_temporaries(self, agent: Any, label: str) -> None:
        """Temporary files a run's process killed while it wrote a record or a
        report left in the run's folder (:func:`rook_core.store.left_temporaries`),
        of the runs no process works on now."""
        import shlex
        from pathlib import Path

        from ..store import left_temporaries
        from .runs import held_by

        try:
            folders = sorted(e.path for e in os.scandir(agent.runs_dir) if e.is_dir())
        except OSError:
            return  # no runs yet, or a folder the other checks name
        for folder in folders:
            path = Path(folder)
            found = [
                p
                for where in (path, path / "scenarios", path / "judge")
                for p in left_temporaries(where)
            ]
            if not found or held_by(path) is not None:
                continue  # a run going on: its files may be in the making
            size = sum(p.stat().st_size for p in found if p.exists())
            self.add(
                NOTE,
                label,
                f"run {path.name}: {len(found)} temporary file(s) ({size:,} bytes) left by a "
                "rook process killed while it wrote them; no command reads them",
                "rm -- " + " ".join(shlex.quote(str(p)) for p in found),
            )

    def _check_switch_names(self) -> None:
        from ..entrypoints import discover
        from ..plugins import ENTRY_POINT_GROUP, switch_hint, unknown_switch_names

        # the names `rook run` sees: the same discovery, cache included
        found = discover(ENTRY_POINT_GROUP).entry_points
        installed = sorted({ep.name for ep in found})
        dists = sorted({ep.distribution for ep in found if ep.distribution})
        for var in ("ROOK_LOAD_PLUGINS", "ROOK_DISABLE_PLUGINS"):
            wanted = {n.strip() for n in os.environ.get(var, "").split(",") if n.strip()}
            for name in unknown_switch_names(wanted, found):
                hint = switch_hint(name, installed, dists)
                self.add(
                    PROBLEM,
                    "plugins",
                    f"{var} names {name!r}, which no installed plugin or distribution is called"
                    + (f"; {hint}" if hint else ""),
                    f"use a plugin's name ({', '.join(installed) or 'none'}) or a distribution's "
                    f"({', '.join(dists) or 'none'}), or install it",
                )


def _listed(folder: Any, names: Any) -> list[str]:
    """``names(folder)``, or none when Rook cannot list the folder (as a glob skips it)."""
    try:
        return list(names(folder))
    except OSError:
        return []


def _version(program: str) -> str:
    try:
        out = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    found = re.search(r"\d+(\.\d+)+", out.stdout or out.stderr or "")
    return f" ({found.group(0)})" if found and out.returncode == 0 else ""


def _echo_findings(doctor: Doctor) -> None:
    from ..report import printable

    marks = {OK: ("ok", "green"), PROBLEM: ("PROBLEM", "red"), NOTE: ("note", "yellow")}
    # click drops colours off a terminal; NO_COLOR asks for none on one (no-color.org),
    # FORCE_COLOR for them off one too, a CI log that shows them (force-color.org), and
    # wins over TERM=dumb, as for pytest
    none = bool(os.environ.get("NO_COLOR"))
    forced = None if none or not os.environ.get("FORCE_COLOR") else True
    plain = none or (os.environ.get("TERM") == "dumb" and not forced)
    for f in doctor.findings:  # a file's ESC or U+202E quoted in a finding: shown as its escape
        word, colour = marks[f.status]
        message = printable(f.message).replace("\n", "\n" + " " * 11)
        mark = f"{word:<8}" if plain else click.style(f"{word:<8}", fg=colour)
        click.echo(f"{mark} {printable(f.subject)}: {message}", color=forced)
        if f.fix:
            click.echo(f"{'':<8}   fix: {printable(f.fix)}")
    n = len(doctor.problems)
    click.echo("")
    click.echo("no problems found" if n == 0 else f"{n} problem{'s' if n != 1 else ''} found")


def _doctor_options(f: Any) -> Any:
    """The workspace options, with help that says what doctor checks without them."""
    return workspace_options(
        f,
        agent_help="Check this agent only (default: every agent of the workspace).",
        project_help=(
            "Check this project's agent only: --agent's, or its only one, as rook run picks"
            " it (default: every agent of the workspace)."
        ),
    )


@click.command("doctor", short_help="Check the set-up (profiles, scripts, variables, scenarios).")
@_doctor_options
@click.option(
    "--judge-profile",
    metavar="NAME",
    help="Check the judge profile rook run --judge-profile NAME would use (default: "
    "config.yaml's judge_profile).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as one JSON document.")
@click.pass_context
def doctor_command(
    ctx: click.Context,
    workspace: str | None,
    project: str | None,
    agent: str | None,
    judge_profile: str | None,
    as_json: bool,
) -> None:
    """Check interpreters, plugins, profiles, hook scripts, required variables and
    scenarios, and say how to fix each problem. Nothing is sent to the agent.

    Exit code 0: no problem found; 1: at least one problem (each has a fix);
    2: a --workspace (or ROOK_WORKSPACE_DIR) that names no directory, a --project
    or --agent that does not exist, or one given while the other is left to
    choose among several (as rook run refuses them).
    Without --project/--agent every agent of the workspace is checked, also
    when config.yaml names one; given one of them, the other is taken as rook
    run takes it (the only one, or config.yaml's default).

    \b
    Examples:
      rook doctor
      rook doctor -w path/to/repo --agent order-desk
      rook doctor --judge-profile grader
      rook doctor --json | jq '.findings[] | select(.status != "ok")'
    """
    from ..errors import ConfigError
    from ..plugins import plugin_output
    from ..redact import Redactor
    from .options import refuse_empty

    # `--agent "$AGENT"` with AGENT unset: never taken as left out (every agent checked)
    refuse_empty(("--project", project), ("--agent", agent))
    if judge_profile is not None and not judge_profile.strip():  # `--judge-profile "$J"`
        raise ConfigError(
            f"--judge-profile {judge_profile!r}: names no profile; give NAME (or AGENT/NAME), "
            "or leave the flag out to check judge_profile: in config.yaml"
        )
    doctor = Doctor()
    doctor.judge_profile = judge_profile
    doctor.check_interpreters()
    rook = doctor.check_plugins()
    with plugin_output():  # a plugin's criteria parse the scenarios
        doctor.check_workspace(rook, workspace, project, agent)
    redactor = Redactor.for_variables(sorted(doctor.secret_names))
    doctor.findings = [
        Finding(f.status, redactor.text(f.subject), redactor.text(f.message), redactor.text(f.fix))
        for f in doctor.findings
    ]
    if as_json:
        doc = {
            "ok": not doctor.problems,
            "problems": len(doctor.problems),
            "findings": [asdict(f) for f in doctor.findings],
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        _echo_findings(doctor)
    if doctor.problems:
        ctx.exit(1)


__all__ = ["Doctor", "Finding", "doctor_command"]


def killed_shard(run_path: Any) -> tuple[str, str]:
    """`` --shard I/N`` of the one shard of the run at ``run_path`` whose last
    invocation never ended (killed: its ``run.shard-I-of-N.json`` says so), and the
    ``--min-pass-rate``, ``--concurrency`` and ``--report`` flags it was given; for
    a run no shard (or more than one) was killed in, ``""`` and the flags of the
    run's own last invocation (:func:`rook_core.reporting.run_flags`). Read when
    doctor names a killed run only."""
    import re

    from ..reporting import invocation_flags, run_flags
    from ..store import DamagedRecord, read_json

    killed = []
    for path in sorted(run_path.glob("run.shard-*-of-*.json")):
        named = re.fullmatch(r"(?a)run\.shard-(\d+)-of-(\d+)\.json", path.name)
        try:
            part = read_json(path) if named else None
        except DamagedRecord:
            continue
        runs = part.get("invocations") if isinstance(part, dict) else None
        last = runs[-1] if isinstance(runs, list) and runs else None
        if named and isinstance(last, dict) and "ended" not in last:
            killed.append((f" --shard {int(named[1])}/{int(named[2])}", last))
    if len(killed) == 1:
        return killed[0][0], invocation_flags(killed[0][1])
    return "", run_flags(run_path)
