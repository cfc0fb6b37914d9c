"""The workspace layout (SPEC §2) and how a project and an agent are chosen."""

from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path
from typing import Any

from .errors import WorkspaceError, shown, utf8
from .plain import plain

ROOT = Path(".testmuai") / "rook"
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


def user_path(raw: str | Path) -> Path:
    """``raw`` with a leading ``~`` or ``~user`` expanded, as a shell does: a
    ``~user`` of no such user stays as written (``Path.expanduser`` raises),
    a path that is not there for the caller to name."""
    return Path(os.path.expanduser(raw))


def given_as(explicit: object) -> str:
    """What the user set to give ``explicit``, for a message to name: the
    variable when the command took it from one (the CLI marks such a value
    with ``given_as``: :class:`rook_core.cli.options.FromEnv`), else the flag."""
    return getattr(explicit, "given_as", "--workspace")


def no_directory(explicit: str) -> None:
    """Refuse ``--workspace ""`` (``-w "$DIR"`` with DIR unset), which would
    quietly be the current directory, as every other empty flag is refused;
    and a NUL, which no path holds (resolving it raises ValueError)."""
    if "\0" in explicit:
        raise WorkspaceError(
            f"{given_as(explicit)} {str(explicit)!r}: no path holds a NUL character"
        )
    if not explicit.strip():
        what = given_as(explicit)
        leave = "the flag out" if what == "--workspace" else "it unset"
        raise WorkspaceError(
            f"{what} {str(explicit)!r}: names no directory; give one, or leave {leave} "
            "to use the nearest workspace"
        )


def resolved(raw: str | Path, flag: str = "--workspace") -> Path:
    """:func:`user_path` of ``raw`` made absolute, its links followed; a symbolic
    link loop (``Path.resolve`` raises RuntimeError before Python 3.13, and leaves
    the loop in the path from 3.13 on: ELOOP) is a :class:`WorkspaceError` naming
    ``flag`` (the flag or variable that gave it)."""
    loop = WorkspaceError(f"{flag} {raw}: too many levels of symbolic links")
    try:
        path = user_path(raw).resolve()
    except RuntimeError:
        raise loop from None
    try:
        os.stat(path)
    except OSError as exc:  # a missing path is the caller's to name
        if exc.errno == errno.ELOOP:
            raise loop from None
    return path


def find_workspace(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    """``--workspace``, else the nearest ancestor holding ``.testmuai/rook``, else cwd."""
    if explicit is not None:
        no_directory(explicit if isinstance(explicit, str) else str(explicit))
        path = resolved(explicit, given_as(explicit))
        try:
            is_dir = path.is_dir()
        except OSError as exc:  # a name too long for a file name (ENAMETOOLONG)
            raise WorkspaceError(f"{given_as(explicit)} {explicit}: {exc.strerror}") from None
        if not is_dir:
            raise WorkspaceError(f"{given_as(explicit)} {explicit}: not a directory")
        return _utf8_path(path)
    start = (cwd or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if (candidate / ROOT).is_dir():
            return _utf8_path(candidate)
    return _utf8_path(start)


def _utf8_path(path: Path) -> Path:
    """``path``, when it is UTF-8 text: Rook writes the workspace's path into its
    JSON records and gives it to every hook (``ROOK_WORKSPACE``)."""
    if not utf8(str(path)):
        raise WorkspaceError(
            f"the workspace {shown(str(path))} is not UTF-8 text: Rook writes its path into "
            "the run's records; rename the directory (or move the workspace)"
        )
    return path


@plain
class Agent:
    """One agent of a project in a workspace, and where its files are."""

    workspace: Path
    project: str
    name: str

    @property
    def root(self) -> Path:
        return self.workspace / ROOT

    @property
    def dir(self) -> Path:
        return self.root / "projects" / self.project / "agents" / self.name

    @property
    def profiles_dir(self) -> Path:
        return self.dir / "profiles"

    @property
    def scenarios_dir(self) -> Path:
        return self.dir / "scenarios"

    @property
    def runs_dir(self) -> Path:
        return self.dir / "runs"

    @property
    def scripts_dir(self) -> Path:
        return self.dir / "scripts"

    def near_script(self, raw: str | Path) -> str:
        """``; did you mean scripts/NAME?`` for a file of this agent's ``scripts/``
        folder with the name (or the stem) of ``raw``, a path that found no file
        (``script/agent.sh``, ``agent.sh``, ``scripts/agent.py``); else ``""``."""
        name = Path(raw).name
        stem = Path(raw).stem
        try:
            found = sorted(p.name for p in self.scripts_dir.iterdir() if p.is_file())
        except OSError:
            return ""
        for match in [n for n in found if n == name] + [n for n in found if Path(n).stem == stem]:
            if Path(raw) != Path("scripts") / match:
                return f"; did you mean scripts/{match}?"
        return ""

    def candidates(self, raw: str | Path) -> list[Path]:
        """Where a file a profile names is looked for: the path itself when it
        is absolute (after ``~``), else in the workspace, then in this agent's
        folder."""
        path = user_path(raw)
        return [path] if path.is_absolute() else [self.workspace / path, self.dir / path]


def read_config(workspace: Path) -> dict[str, Any]:
    path = workspace / ROOT / "config.yaml"
    if not path.is_file():
        if path.exists() or path.is_symlink():
            raise WorkspaceError(f"{path}: not a file (config.yaml must be a YAML file)")
        return {}
    from .definitions import read_yaml  # cached: no YAML parser while it is unchanged

    data = read_yaml(path, lambda: _load_config(path), schema=("validated", CONFIG_KEYS))
    return dict(data)


CONFIG_KEYS = ("project", "agent", "judge_profile", "author")
"""Every key ``config.yaml`` may hold (each is read by a command; any other is an error)."""


UNKNOWN_CONFIG_KEY = "unknown key; config.yaml takes " + ", ".join(CONFIG_KEYS)


def _load_config(path: Path) -> dict[str, Any]:
    """Read and validate ``config.yaml``; a problem is a :class:`WorkspaceError`
    (exit 2) naming the file and each field at fault."""
    from .yamlio import load_yaml

    data = load_yaml(path, WorkspaceError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise WorkspaceError(
            f"{path}: must be a mapping of {', '.join(CONFIG_KEYS)} (found {type(data).__name__})"
        )
    from marshmallow import ValidationError

    from .errors import format_validation_messages

    try:
        loaded: dict[str, Any] = _config_schema().load(data)
    except ValidationError as exc:
        from .schemafields import did_you_mean

        messages: Any = exc.messages
        for key, problem in list(messages.items() if isinstance(messages, dict) else ()):
            close = did_you_mean(str(key), CONFIG_KEYS)
            if close and problem == [UNKNOWN_CONFIG_KEY]:
                messages[key] = [f"unknown key; did you mean {close}?"]
        lines = format_validation_messages(messages)
        raise WorkspaceError(
            f"{path}: invalid config.yaml:\n" + "\n".join(f"  {ln}" for ln in lines)
        ) from None
    return loaded


def _config_schema() -> Any:
    from marshmallow import RAISE, Schema, fields, validate

    def text(what: str) -> Any:
        return fields.String(
            validate=validate.Length(min=1, error=f"must be {what} (not empty)"),
            error_messages={"invalid": f"must be {what} (a string)"},
        )

    class ConfigSchema(Schema):
        class Meta:
            unknown = RAISE

        error_messages = {"unknown": UNKNOWN_CONFIG_KEY}  # noqa: RUF012

        project = text("a project name")
        agent = text("an agent name")
        judge_profile = text("a profile name (NAME, or AGENT/NAME for another agent's)")
        author = fields.String(  # a blank command line is empty too
            validate=validate.Regexp(r"\S", error="must be a command line (not empty)"),
            error_messages={"invalid": "must be a command line (a string)"},
        )

    return ConfigSchema()


def folder_names(parent: Path) -> list[str]:
    """The projects (or agents) in ``parent``: its folders, but a hidden one
    (``.ipynb_checkpoints``), which no project or agent can be named (``NAME``)."""
    if not parent.is_dir():
        return []
    return sorted(p.name for p in parent.iterdir() if p.is_dir() and not p.name.startswith("."))


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def linked_no_folder(parent: Path) -> list[tuple[Path, str]]:
    """The symbolic links in ``parent`` (a projects or agents folder) to no folder
    (to nothing, to themselves, to a file), each with what it is: where a project
    or agent seems to be (``ls`` lists it) and is not. A hidden one is none."""
    try:
        names = sorted(n for n in os.listdir(parent) if not n.startswith("."))
    except OSError:
        return []
    found = []
    for name in names:
        what = _not_a_folder(parent, name)
        if what and (parent / name).is_symlink():
            found.append((parent / name, what))
    return found


def _not_a_folder(parent: Path, name: str) -> str | None:
    """What stands at ``parent/name`` where a project or agent folder belongs
    (``a file, not a folder``, ``a symbolic link to TARGET, which is no
    folder``), or None when nothing is there, or a folder is."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        return None
    path = parent / name
    try:
        if path.is_dir():
            return None
        if path.is_symlink():
            return f"a symbolic link to {os.readlink(path)}, which is no folder"
        if path.exists():
            return "a file, not a folder" if path.is_file() else "not a folder"
    except OSError:  # a name too long to be one
        return None
    return None


def _choose(
    kind: str,
    flag: str,
    wanted: str | None,
    default: Any,
    parent: Path,
    config: Path,
    init: str = "rook init --project P --agent A",
) -> str:
    """The project or agent (``kind``) chosen in ``parent``; ``init``: the command
    that creates one, as printed when there is none."""
    try:
        names = folder_names(parent)
    except OSError as exc:
        raise WorkspaceError(f"{parent}: cannot list the {kind}s: {exc.strerror or exc}") from None
    said = "" if names else in_the_way(parent, parent.name)
    if said:  # never "no project in" (or "project X not found in") a file
        raise WorkspaceError(said)
    source = ""
    if wanted is None and isinstance(default, str):
        wanted, source = default, f" (the {kind}: of {config})"
    if wanted is not None:
        if wanted not in names:
            what = _not_a_folder(parent, wanted)
            if what:  # listed by ls, so never "not found"
                raise WorkspaceError(f"{parent / wanted}{source}: {what}; {_a(kind)} is a folder")
            listing = ", ".join(names) or "none"
            fix = f"; correct it there, or give {flag}" if source else ""
            raise WorkspaceError(
                f"{kind} {wanted!r}{source} not found in {parent} ({kind}s: {listing}){fix}"
            )
        return wanted
    if len(names) == 1:
        return names[0]
    if not names:
        for path, what in linked_no_folder(parent):  # named, never "no agent" ...
            raise WorkspaceError(f"{path}: {what}; {_a(kind)} is a folder")
        raise WorkspaceError(f"no {kind} in {parent}; create one with: {init}")
    raise WorkspaceError(f"several {kind}s ({', '.join(names)}); choose one with {flag}")


def no_workspace(workspace: Path, given: object = None) -> tuple[str, str, str]:
    """What is wrong with ``workspace``, which holds no ``.testmuai/rook``, where it
    is (``"it is inside the workspace WS"``, or ``""``) and the fix: a --workspace
    (``given``) naming a folder inside one (found upwards only without it) names
    that one, never ``rook init`` (a second workspace inside the first). Paths in
    a command to type are quoted for the shell."""
    import shlex

    inside = next((p for p in workspace.parents if (p / ROOT).is_dir()), None)
    how = given_as(given)
    what = f"{workspace}: no Rook workspace here ({ROOT} is missing)"
    if inside is None:  # rook init reads no variable: -w names the folder for it
        here = "" if given is None else f" -w {shlex.quote(str(workspace))}"
        return what, "", f"run: rook init{here} --project P --agent A"
    where = f"it is inside the workspace {inside}"
    if how == "--workspace":
        return what, where, f"give -w {shlex.quote(str(inside))}"
    return what, where, f"set {how} to {inside}"


def in_the_way(path: Path, folder: str) -> str:
    """``PATH is a file, not the FOLDER folder; move it away`` when something that is
    no folder (a file, a broken symbolic link ...) stands where Rook needs one: advice
    to create it (``rook init``, "create a profile") could not be followed. Else ``""``."""
    from .store import not_a_folder

    kind = not_a_folder(path)
    return f"{path} is {kind}, not the {folder} folder; move it away" if kind else ""


def _project_with(projects: Path, agent: str) -> str | None:
    """The one project in ``projects`` that has ``agent`` (``--agent`` given, no
    ``--project`` nor config.yaml's): where there are several projects, the agent
    names its own. ``None`` where there is at most one project (it is used, as
    ever); several with that agent, or none, are a :class:`WorkspaceError`."""
    if agent.startswith(".") or "/" in agent or "\0" in agent:  # no agent's name: _choose says so
        return None
    try:
        names = folder_names(projects)
    except OSError:  # a folder it may not list: _choose says so
        return None
    if len(names) < 2:
        return None
    having, unreadable = [], []
    for name in names:
        try:
            if (projects / name / "agents" / agent).is_dir():
                having.append(name)
        except OSError as exc:  # agents/ it may not read (chmod 000)
            if exc.errno == errno.ENAMETOOLONG:  # no agent's name: _choose says so
                return None
            unreadable.append(_unreadable(projects / name, exc))
    if len(having) == 1:
        for path, reason in unreadable:  # where it may be too: the one Rook can see is used
            _note(
                projects.parent.parent.parent,
                f"{path}: cannot read ({reason}); agent {agent!r} is project {having[0]}'s: used",
            )
        return having[0]
    if having:
        raise WorkspaceError(
            f"several projects have an agent {agent!r} ({', '.join(having)}); "
            "choose one with --project"
        )
    for name in names:  # listed by ls (a file, a link to nothing), so never "not found"
        what = _not_a_folder(projects / name / "agents", agent)
        if what:
            raise WorkspaceError(
                f"{projects / name / 'agents' / agent}: {what}; an agent is a folder"
            )
    raise WorkspaceError(
        f"agent {agent!r} not found in any project (projects: {', '.join(names)}); "
        + "".join(f"cannot read {path} ({reason}); " for path, reason in unreadable)
        + "give --project, or check the name"
    )


def _unreadable(project: Path, exc: OSError) -> tuple[Path, str]:
    """The folder of ``project`` that ``exc`` kept Rook out of (its ``agents``
    folder, or the project's own), and why."""
    agents = project / "agents"
    try:
        os.stat(agents)
    except OSError:
        agents = project
    return agents, str(exc.strerror or exc)


def _note(workspace: Path, text: str) -> None:
    """``rook: note: TEXT`` on standard error, redacted as an error is: before a
    command has found its agent, with the env values of every profile of
    ``workspace``."""
    from .known_secrets import workspace_redactor
    from .report import printable

    said = workspace_redactor(str(workspace)).text(f"rook: note: {text}")
    sys.stderr.write(printable(said) + "\n")


def select_agent(
    workspace: Path, project: str | None, agent: str | None, given: object = None
) -> Agent:
    """The agent ``project`` and ``agent`` choose in ``workspace`` (``given``: the
    ``--workspace`` value it came from, which may be ``ROOK_WORKSPACE_DIR``'s)."""
    for flag, value in (("--project", project), ("--agent", agent)):
        if value is not None and not value.strip():  # `--agent "$AGENT"` with AGENT unset
            raise WorkspaceError(f"{flag} {value!r}: names nothing; give a value, or leave it out")
    root = workspace / ROOT
    if not root.is_dir():
        for path, folder in ((root.parent, ".testmuai"), (root, "Rook")):
            said = in_the_way(path, folder)
            if said:
                raise WorkspaceError(said)
        what, where, fix = no_workspace(workspace, given)
        raise WorkspaceError(f"{what}; {where}: {fix}" if where else f"{what}; {fix}")
    config = read_config(workspace)
    source = root / "config.yaml"
    if project is None and config.get("project") is None and agent is not None:
        project = _project_with(root / "projects", agent)
    # what makes one, in this workspace wherever it is typed (a -w given: it is kept)
    here = None if given is None else str(workspace)
    project_name = _choose(
        "project",
        "--project",
        project,
        config.get("project"),
        root / "projects",
        source,
        f"rook init{found_by(here, None, None)} --project P --agent A",
    )
    agents_dir = root / "projects" / project_name / "agents"
    # config.yaml's agent is its project's: another project chosen, it is no default there
    default = config.get("agent") if config.get("project") in (None, project_name) else None
    agent_name = _choose(
        "agent",
        "--agent",
        agent,
        default,
        agents_dir,
        source,
        f"rook init{found_by(here, project_name, None)} --agent A",
    )
    return Agent(workspace, project_name, agent_name)


def found_by(
    workspace: str | None, project: str | None, agent: str | None, absolute: bool = False
) -> str:
    """The ``-w``, ``--project`` and ``--agent`` flags given on the command line,
    for a command Rook prints that must find the same run; a workspace from
    ``ROOK_WORKSPACE_DIR`` is given as ``-w`` too, so that the command works where
    the variable is not set (another shell, a CI log read later). ``absolute``:
    the workspace as an absolute path, for a command stored in a record (read
    from anywhere): the folder :func:`find_workspace` takes it for (``~`` expanded,
    as no shell does in ``ROOK_WORKSPACE_DIR``; links followed before ``..``, as the
    system does), never its text made absolute. Shell-quoted, and redacted (a folder
    named after an env value)."""
    import shlex

    from .redact import scrub

    if absolute and workspace:
        try:
            workspace = str(user_path(workspace).resolve())
        except (RuntimeError, OSError, ValueError):  # a loop, a NUL: refused after (exit 2)
            workspace = os.path.abspath(workspace)
    flags = (("-w", workspace), ("--project", project), ("--agent", agent))
    return scrub("".join(f" {flag} {shlex.quote(value)}" for flag, value in flags if value))


def run_found_by(run_path: Path) -> str:
    """:func:`found_by` for the run folder ``run_path`` of an agent's ``runs``
    (``WS/.testmuai/rook/projects/P/agents/A/runs/ID``), the workspace absolute:
    for a message that names a command on that run and knows no flags (a damaged
    record met deep in a reader). ``""`` for a run folder elsewhere."""
    parts = Path(os.path.abspath(run_path)).parts
    if len(parts) < 9 or parts[-2] != "runs" or parts[-4] != "agents" or parts[-6] != "projects":
        return ""
    if Path(*parts[-8:-6]) != ROOT:
        return ""
    return found_by(str(Path(*parts[:-8])), parts[-5], parts[-3])


def check_name(kind: str, value: str) -> None:
    """A project or agent name: a folder name, so a slug of at most ``ID_MAX``
    characters (exit 2 naming it)."""
    from .models import ID_MAX

    if not re.match(NAME, value):
        raise WorkspaceError(
            f"{kind} {value!r}: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    if len(value) > ID_MAX:
        raise WorkspaceError(f"{kind} {value[:40]!r}...: {len(value)} characters; at most {ID_MAX}")


def init_agent(workspace: Path, project: str, agent: str) -> Agent:
    for kind, value in (("--project", project), ("--agent", agent)):
        check_name(kind, value)
    a = Agent(workspace, project, agent)
    made: list[Path] = []  # the folders this call created, removed again on a failure
    try:
        for d in (a.profiles_dir, a.scenarios_dir, a.scripts_dir, a.runs_dir):
            missing = [p for p in (d, *d.parents) if not p.exists() and not p.is_symlink()]
            d.mkdir(parents=True, exist_ok=True)
            made += reversed(missing)
    except OSError as exc:
        for p in reversed(made):
            try:
                p.rmdir()
            except OSError:
                pass
        where = exc.filename or a.dir
        reason = exc.strerror or str(exc)
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            target = Path(where)
            blocker = next(
                (p for p in (*reversed(target.parents), target) if p.exists() and not p.is_dir()),
                None,
            )
            if blocker is not None:
                raise WorkspaceError(
                    f"{blocker}: not a directory; Rook needs a folder there for {a.dir}"
                ) from None
        raise WorkspaceError(f"{where}: cannot create the agent's folders: {reason}") from None
    return a
