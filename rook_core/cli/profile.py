"""``rook profile``: let Rook write, test, fix and manage the agent's profiles.

``add`` is here; ``test`` and ``fix`` are in :mod:`.profile_check`; ``show``,
``use``, ``list`` and ``rename`` in :mod:`.profile_manage`. The work itself
is in the core (:mod:`rook_core.authoring_loop`, :mod:`rook_core.profile_probe`)
and the authors are plugins (``rook_register_authors``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from ..models import slug
from ..profile_probe import DEFAULT_GOAL
from ..workspace import user_path
from .options import Count, refuse_unrunnable_author, workspace_options


class Session:
    """What one ``rook profile`` command shares: agent, plugins, redactor, output."""

    def __init__(self, workspace: str | None, project: str | None, agent: str | None) -> None:
        from .. import plugins
        from ..definitions import agent_secret_names
        from ..redact import Redactor, activate
        from ..workspace import find_workspace, found_by, select_agent

        self.agent = select_agent(find_workspace(workspace), project, agent, workspace)
        self.rook = plugins.build_plugin_manager()
        # the agent's profiles' secrets too: a new profile's source or folder may hold one
        self.secret_names = agent_secret_names(self.agent.profiles_dir)
        self.redactor = Redactor.for_variables(self.secret_names)
        activate(self.redactor)  # for the CLI's error boundary too: a profile not found
        self.warned: set[str] = set()
        # the flags this command was given, for a command it prints: it works as printed
        self.where = found_by(workspace, project, agent)

    def profile(self, name: str | None, command: str) -> Any:
        """The profile ``name`` (the only or active one when None) for ``rook profile
        COMMAND``, its ``env`` values added to the redactor."""
        from ..definitions import find_profile

        profile = find_profile(
            self.agent.profiles_dir,
            name,
            self.rook.transports,
            choose=f"rook profile {command} NAME{self.where}",
            where=self.where,
        )
        for ref in profile.env:
            self.redactor.add(ref.variable, os.environ.get(ref.variable, ""))
        return profile

    def say(self, text: str) -> None:
        from ..report import printable  # a hook's ESC or U+202E quoted: shown, never obeyed

        click.echo(printable(self.redactor.text(text)))

    def wait(self, text: str) -> None:
        """What the command waits for now (``trying the agent: ...``): on standard
        error, at once, so a target that never answers is no silent wait. A
        warning (``rook: warning: ...``) is said once, however many tests run."""
        if text.startswith("rook: warning: "):
            if text in self.warned:
                return
            self.warned.add(text)
        from ..report import printable

        click.echo(printable(self.redactor.text(text)), err=True)

    def author_command(self, given: str | None) -> str | None:
        from ..errors import ConfigError
        from ..workspace import read_config

        configured = read_config(self.agent.workspace).get("author")
        if configured is not None and not isinstance(configured, str):
            raise ConfigError("config.yaml: author must be a command line (a string)")
        return given or configured or None

    def author_options(self, given: str | None) -> dict[str, str | None]:
        """The author agent's command line, and where it was given (for its messages)."""
        from ..workspace import ROOT

        config = self.agent.workspace / ROOT / "config.yaml"
        return {
            "author_command": self.author_command(given),
            "author_from": "--author" if given else f"{config}: author",
        }

    def guard(self, exc: Exception) -> Exception:
        """The same error with every secret value replaced."""
        exc.args = (self.redactor.text(str(exc)),)
        return exc


def read_source(
    from_: str | None,
    command: str | None,
    ruhroh: str | None,
    notes: str | None,
    wait: Any = None,
) -> Any:
    """The :class:`~rook_core.authoring.Source` the options (or standard input) give;
    ``wait`` is told before a URL is fetched (what, and for how long at most)."""
    from ..authoring import Source
    from ..authoring_loop import FETCH_TIMEOUT, fetch
    from ..errors import ConfigError

    given = [
        k
        for k, v in (("--from", from_), ("--command", command), ("--ruhroh", ruhroh))
        if v is not None
    ]
    if len(given) > 1:
        raise ConfigError(f"give one source, not {' and '.join(given)}")
    if command is not None:  # labels never show a value that may hold a secret
        return Source("command", command, label="--command")
    if ruhroh is not None:
        return Source("ruhroh", ruhroh, label="--ruhroh")
    if from_ is not None and from_ != "-":
        if from_.startswith(("http://", "https://")):
            from ..urlcheck import shown, url_problem

            problem = url_problem(from_)
            if problem:  # named without its query or password: either may hold a secret
                raise ConfigError(f"--from {shown(from_)}: {problem}")
            label = shown(from_)
            if wait is not None:
                wait(f"reading {label} (GET, up to {FETCH_TIMEOUT:g} s)")
            source = fetch(from_)
            source.label = label
            if source.status is None and wait is not None:
                why = source.content_type.removeprefix("error: ") or "no answer"
                wait(f"{label}: no answer to GET ({why}); trying it as an endpoint")
            return source
        path = user_path(from_)
        scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", from_)
        if scheme and not path.exists():  # acme://desk: a plugin author's own scheme
            from ..urlcheck import shown

            # not fetched (Rook fetches http and https alone): an author claims it
            return Source("url", url=from_, label=shown(from_))
        try:
            is_file = path.is_file()
        except OSError as exc:  # a name too long for a file (ENAMETOOLONG)
            raise ConfigError(f"--from {from_}: cannot read it: {exc.strerror}") from None
        if not is_file:
            what = "a directory, not a file" if path.is_dir() else "no such file"
            if path.exists() and not path.is_dir():  # never waited on: a pipe may not end
                what = (
                    "not a regular file (a pipe, a socket or a device); give a file, or "
                    "pipe the source in with --from - (e.g. pbpaste | rook profile add NAME --from -)"
                )
            raise ConfigError(f"--from {from_}: {what}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--from {from_}: cannot read it: {exc}") from None
        # a byte order mark first (Notepad, PowerShell's Out-File write one) is no part of it
        return Source("file", text.removeprefix("\ufeff"), path=path.resolve(), label=from_)
    piped = from_ == "-" or (notes is None and not sys.stdin.isatty())
    if piped:
        text = sys.stdin.read().removeprefix("\ufeff")
        if text.strip():
            return Source("stdin", text, label="standard input")
        if from_ == "-":  # `pbpaste | rook profile add NAME --from -` with nothing copied
            raise ConfigError(
                "--from -: standard input is empty; pipe the source in, e.g. "
                "pbpaste | rook profile add NAME --from -"
            )
    if notes is not None:
        return Source("notes", notes, label="--notes")
    asked = ask_source() if from_ is None and sys.stdin.isatty() else None
    if asked is not None:  # the bare `rook profile add` at a terminal
        kind, value = asked
        if kind == "curl":
            return Source("stdin", value, label="the pasted cURL command")
        if kind == "notes":
            return Source("notes", value, label="your notes")
        options: dict[str, Any] = dict.fromkeys(("from_", "command", "ruhroh", "notes"))
        return read_source(**{**options, kind: value}, wait=wait)
    raise ConfigError(
        "give a source: --from FILE|URL, --command CMD, --ruhroh CMD or "
        "--notes TEXT (or pipe a cURL command on standard input)"
        + ("; standard input was empty" if piped else "")
    )


ASKED = (
    ("curl", "a cURL command (paste it; a line ending in \\ goes on)", "cURL command"),
    ("from_", "a URL: the agent's endpoint, or an OpenAPI document", "URL"),
    ("from_", "a file: a cURL command, an OpenAPI document or a hook script", "file"),
    ("command", "a command line that takes the goal on its standard input", "command line"),
    ("ruhroh", "a Ruhroh command wrapper", "wrapper command"),
    ("notes", "plain-language notes, for an author agent", "notes"),
)
"""What a bare ``rook profile add`` at a terminal offers: (kind, choice, prompt)."""


def _goes_on(lines: list[str]) -> bool:
    """Whether a cURL command pasted at the terminal goes on after ``lines``."""
    last = lines[-1].rstrip()
    if last.endswith(("\\", "^", " `")):
        return True
    return not last and len(lines) > 1 and lines[-2].rstrip().endswith("^")


def ask_source() -> tuple[str, str] | None:
    """Ask at the terminal what reaches the agent, and for it (the reference's bare
    ``rook profile add``); ``None`` when nothing was given (end of input, Ctrl-C)."""
    click.echo("What reaches the agent?", err=True)
    for n, (_, choice, _) in enumerate(ASKED, 1):
        click.echo(f"  {n}. {choice}", err=True)
    try:
        pick = click.prompt("choose", type=click.IntRange(1, len(ASKED)), default=1, err=True)
        kind, _, what = ASKED[pick - 1]
        lines = [click.prompt(what, err=True)]
        # pasted over lines: a shell's \, cmd.exe's ^, PowerShell's backtick go on; so
        # does the empty line after a ^ (cmd's line end inside a value: ^ and two line ends)
        while kind == "curl" and _goes_on(lines):
            lines.append(
                click.prompt(">", default="", show_default=False, prompt_suffix=" ", err=True)
            )
    except (click.Abort, EOFError):
        click.echo("", err=True)
        return None
    value = "\n".join(lines).strip()
    return (kind, value) if value else None


@click.group("profile")
def profile_group() -> None:
    """Write, test, fix and manage the profiles that reach the agent.

    \b
    Examples:
      rook profile add staging --from call.txt      # a cURL command you already use
      rook profile add local --command 'claude -p'
      rook profile test
      rook profile fix --what 'the auth header is wrong'
      rook profile show staging
      rook profile use staging
    """


@profile_group.command(
    "add", short_help="Write a profile from what you already use, test it, correct it."
)
@workspace_options
@click.argument("name", required=False)
@click.option(
    "--from",
    "from_",
    metavar="FILE|URL|-",
    help="A cURL command, an OpenAPI 3 document or a script (file), a URL (an "
    "OpenAPI document, or an endpoint to probe), or - for standard input.",
)
@click.option(
    "--command",
    metavar="CMD",
    help="A command line: the goal goes on its standard input, its output is the answer.",
)
@click.option("--ruhroh", metavar="CMD", help="An existing Ruhroh command wrapper, run as it is.")
@click.option(
    "--notes",
    metavar="TEXT",
    help="Plain-language notes for the author agent (alone, or with another source).",
)
@click.option(
    "--author",
    "author_cmd",
    metavar="CMD",
    help="Author agent: a command that reads the request on stdin and answers with "
    "the script (default: author: in config.yaml).",
)
@click.option("--operation", metavar="ID", help="OpenAPI: the operation to use, when several fit.")
@click.option(
    "--base-url", metavar="URL", help="OpenAPI: the server URL, when the document has none."
)
@click.option(
    "--goal", default=DEFAULT_GOAL, show_default=True, help="The small goal sent to test it."
)
@click.option(
    "--attempts",
    type=Count(1, 10),
    metavar="N",
    default=4,
    show_default=True,
    help="Tests (and corrections) at most.",
)
@click.option("--no-test", is_flag=True, help="Write the profile without invoking the target.")
@click.option(
    "--max-iterations",
    type=Count(min=1),
    metavar="N",
    default=5,
    show_default=True,
    help="Ruhroh task loop: most iterations per scenario run.",
)
@click.option("--force", is_flag=True, help="Overwrite a profile with the same id.")
@click.option(
    "--use/--no-use",
    "use",
    default=None,
    help="Make it the active profile (default: only when no profile is active).",
)
def add_command(
    workspace: str | None,
    project: str | None,
    agent: str | None,
    name: str | None,
    from_: str | None,
    command: str | None,
    ruhroh: str | None,
    notes: str | None,
    author_cmd: str | None,
    operation: str | None,
    base_url: str | None,
    goal: str,
    attempts: int,
    no_test: bool,
    max_iterations: int,
    force: bool,
    use: bool | None,
) -> None:
    """Write a profile from what you already use, test it on the real target, correct it.

    Secrets found in the source (an Authorization header, an API key, a password
    in the URL) become env references: never written to a file, never shown.

    \b
    Examples:
      rook profile add staging --from call.txt
      pbpaste | rook profile add staging
      rook profile add local --command 'claude -p'
      rook profile add api --from https://api.example.com/openapi.json --operation chat
      rook profile add desk --from ./desk.py
      rook profile add crm --notes 'POST the goal as {"q": ...} to http://localhost:8080/ask' --author 'claude -p'
      rook profile add codex --ruhroh ./wrappers/codex.sh
    """
    from ..errors import ConfigError, RookError

    for what, value in (
        ("NAME", name),
        ("--from", from_),
        ("--command", command),
        ("--ruhroh", ruhroh),
        ("--notes", notes),
        ("--author", author_cmd),
        ("--operation", operation),
        ("--base-url", base_url),
        ("--goal", goal),
    ):  # `--command "$CMD"` with CMD empty: refused, never taken for something else
        if value is not None and not value.strip():
            raise ConfigError(
                f"{what} {value!r}: names nothing; give a value, or leave it out"
                + (" (the profile is then named after its source)" if what == "NAME" else "")
            )
    ctx = click.get_current_context()
    given = {  # the flags refused when the author that writes the source does not read them
        key
        for key, value in (("operation", operation), ("base_url", base_url))
        if value is not None
    }
    if ctx.get_parameter_source("max_iterations") is click.core.ParameterSource.COMMANDLINE:
        given.add("max_iterations")
    for flag, param in (("--goal", "goal"), ("--attempts", "attempts")):
        if no_test and ctx.get_parameter_source(param) is click.core.ParameterSource.COMMANDLINE:
            raise ConfigError(f"{flag}: only for the test, which --no-test leaves out")
    if (
        name is not None
        and name.strip().lower().startswith(("http://", "https://"))
        and from_ is command is ruhroh is notes is None
    ):  # `rook profile add https://host/chat`: the URL typed where the name goes
        from ..urlcheck import shown

        from_, name = name.strip(), None
        click.echo(
            f"note: {shown(from_)} is a URL, not a name: read as --from {shown(from_)} "
            "(the profile is named after it; give a NAME before --from to choose)",
            err=True,
        )
    s = Session(workspace, project, agent)
    refuse_unrunnable_author(author_cmd, s.agent.workspace)
    try:
        _add(
            s,
            name,
            read_source(from_, command, ruhroh, notes, s.wait),
            notes,
            author_cmd,
            {"operation": operation, "base_url": base_url, "max_iterations": max_iterations},
            given,
            goal,
            attempts,
            no_test,
            force,
            use,
        )
    except RookError as exc:
        raise s.guard(exc) from None


def _add(
    s: Session,
    name: str | None,
    source: Any,
    notes: str | None,
    author_cmd: str | None,
    options: dict[str, Any],
    given: set[str],
    goal: str,
    attempts: int,
    no_test: bool,
    force: bool,
    use: bool | None,
) -> None:
    from ..authoring import AuthorRequest, NeedsChoice, Secrets, env_prefix
    from ..authoring_loop import Events, add_profile, choose_author, fallback_author, suggest_name
    from ..errors import ConfigError
    from ..store import atomic_write
    from .profile_output import show_observation

    options.update(s.author_options(author_cmd))
    chosen = choose_author(s.rook, source)
    if chosen is None and options["author_command"] and fallback_author(s.rook):
        chosen = fallback_author(s.rook)
    words = source.text.split() if source.kind in ("file", "stdin") else []
    if chosen is None and len(words) == 1 and words[0].startswith(("http://", "https://")):
        raise ConfigError(  # not echoed: a URL may hold a key
            f"{source.label}: it holds a URL alone; give it as --from URL (an endpoint to "
            "probe, or an OpenAPI document), or paste the cURL command that calls it"
        )
    scheme = (source.url or "").partition("://")[0].lower()
    if chosen is None and source.kind == "url" and scheme not in ("http", "https"):
        raise ConfigError(
            f"--from {source.label}: no installed author reads {scheme}:// URLs (Rook "
            "fetches http:// and https:// ones; a plugin's author claims its own scheme)"
        )
    if chosen is None:
        raise ConfigError(
            f"{source.label}: Rook cannot tell what this is (not a cURL command, an OpenAPI 3 "
            "document, a script or an endpoint it can reach); describe the target with --notes "
            "and name an author agent with --author CMD (or author: in config.yaml)"
        )
    author, plugin = chosen
    reads = getattr(plugin, "options", None)  # the options an author says it reads
    for flag, key, meant in (
        ("--operation", "operation", "an OpenAPI document"),
        ("--base-url", "base_url", "an OpenAPI document"),
        ("--max-iterations", "max_iterations", "a Ruhroh wrapper, --ruhroh CMD"),
    ):
        if key in given and reads is not None and key not in reads:
            raise ConfigError(
                f"{flag}: the {author!r} author, which reads {source.label}, does not use it "
                f"(it is for {meant})"
            )
    named = name is not None
    suggested = None if named else suggest_name(s.rook, author, source)
    name = name or suggested or s.agent.name
    pid = slug(name)
    if not pid:
        raise ConfigError(
            f"profile name {name!r}: the id is made from the name's letters a-z (accents "
            "folded) and digits, and it has none; add the profile under a name that has "
            f"some, then rename it: rook profile rename ID {shlex.quote(name)}{s.where}"
        )
    from ..models import ID_MAX

    if len(pid) > ID_MAX:
        raise ConfigError(
            f"profile name {name[:40]!r}...: its id would be {len(pid)} characters; "
            f"at most {ID_MAX}"
        )
    path = holder(s.agent.profiles_dir, pid) or s.agent.profiles_dir / f"{pid}.yaml"
    if path.exists() and not force:
        if not named:  # --force would replace a profile the user never named here
            why = (
                "its source"
                if suggested
                else f"the agent (the {author!r} author found no name in its source)"
            )
            raise ConfigError(
                f"{path}: a profile with id {pid!r} exists; no NAME was given, so the profile "
                f"was named {pid!r} after {why}: give it a name of its own: rook profile "
                "add NAME ... (or --force to overwrite that profile)"
            )
        raise ConfigError(f"{path}: a profile with id {pid!r} exists; use --force to overwrite")
    from ..definitions import read_active

    if use is not True or (s.agent.profiles_dir / "active").is_dir():
        read_active(s.agent.profiles_dir)  # one it cannot read or write: refused, nothing written

    secrets = Secrets(env_prefix(s.agent.name), s.redactor)
    secrets.hide_known(s.secret_names)  # another profile's value: in no new file either
    if source.kind == "command":  # as typed: split into words, a value with a space is in none
        fix = "let the program read it from its environment"
        secrets.refuse_known(secrets.holder(source.text), "--command", fix)
    secrets.profile, secrets.taken = pid, _taken_variables(s.agent.profiles_dir, path)
    if source.kind == "notes":  # a key in the notes never reaches the author agent
        source = dataclasses.replace(source, text=secrets.move_from_text(source.text, "the notes"))
    elif notes:
        notes = secrets.move_from_text(notes, "the notes")
    request = AuthorRequest(
        source=source,
        agent=s.agent,
        profile_id=pid,
        name=name,
        secrets=secrets,
        notes=(notes or "") if source.kind != "notes" else source.text,
        goal=goal,
        options={**options, "interactive": sys.stdin.isatty()},
        say=s.say,
    )

    def attempt(n: int, draft: Any, obs: Any) -> None:
        show_observation(obs, s.say, f"test {n} ({draft.author})")

    s.say(f"author: {author} ({source.label})")
    while True:
        try:
            outcome = add_profile(
                s.rook,
                request,
                author,
                s.redactor,
                Events(s.say, attempt, s.wait),
                path,
                attempts,
                test=not no_test,
            )
            break
        except NeedsChoice as exc:
            if not request.options["interactive"]:
                raise
            ids = [c for c, _ in exc.candidates]
            s.say(exc.question + ":")
            for cid, what in exc.candidates:
                s.say(f"  {cid}  {what}")
            request.options[exc.option.lstrip("-").replace("-", "_")] = click.prompt(
                "choose", type=click.Choice(ids)
            )
    held = secrets.values  # the values the source held; the rest it only referred to
    for ref in secrets.refs:
        where = "moved to env" if ref["variable"] in held else "read from the environment"
        s.say(f"secret: {ref['variable']} ({ref['purpose']}) - {where}, in no file")
        taken = secrets.renamed.get(ref["variable"])
        if taken:
            s.say(
                f"note: {taken} is already the variable of profile {secrets.taken[taken][0][0]}, "
                f"for another service, so this profile's is {ref['variable']}; for the same "
                f"token, set {taken} to it before rook profile add, or write "
                "{{env." + taken + "}} in the source"
            )
        set_to = os.environ.get(ref["variable"])
        if not no_test and ref["variable"] in held and set_to and set_to != held[ref["variable"]]:
            s.say(  # the environment wins: a stale value there is why a test may fail
                f"note: {ref['variable']} is set in your environment: the test used its "
                "value, not the one in your source"
            )
    for note in outcome.draft.notes:
        s.say(f"note: {note}")
    s.say(f"wrote {path}")
    active = s.agent.profiles_dir / "active"
    if use or (use is None and not active.is_file()):
        atomic_write(active, pid + "\n")
        s.say(f"active profile: {pid}")
    is_active = read_active(s.agent.profiles_dir) == pid
    _next_steps(s, outcome, pid, secrets, no_test, is_active, author_cmd)


def _taken_variables(profiles_dir: Path, path: Path) -> dict[str, list[tuple[str, str]]]:
    """The ``env`` variables the agent's other profiles declare (all but the file
    ``path``, which is written anew), each with the profile (file name) declaring
    it and its purpose (a file Rook cannot read declares none)."""
    from ..errors import RookError
    from ..yamlio import load_yaml

    files = sorted(profiles_dir.glob("*.yaml")) if profiles_dir.is_dir() else []
    taken: dict[str, list[tuple[str, str]]] = {}
    for other in files:
        if other.resolve() == path.resolve():
            continue
        try:
            data = load_yaml(other)
        except RookError:
            continue
        env = data.get("env") if isinstance(data, dict) else None
        for entry in env if isinstance(env, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("variable"), str):
                declared = (other.stem, str(entry.get("purpose", "")))
                taken.setdefault(entry["variable"], []).append(declared)
    return taken


def holder(profiles_dir: Path, pid: str) -> Path | None:
    """The file that already holds the profile ``pid``: ``<pid>.yaml``, else any
    profile file whose ``id`` is ``pid`` (its file name may be another), else None.
    Ids are unique: ``add`` overwrites that file (with ``--force``), never adds a twin."""
    from ..errors import RookError
    from ..yamlio import load_yaml

    direct = profiles_dir / f"{pid}.yaml"
    if direct.exists():
        return direct
    for path in sorted(profiles_dir.glob("*.yaml")) if profiles_dir.is_dir() else []:
        try:
            data = load_yaml(path)
        except RookError:
            continue  # an unreadable file holds no id
        if isinstance(data, dict) and data.get("id") == pid:
            return path
    return None


def _next_steps(
    s: Session,
    outcome: Any,
    pid: str,
    secrets: Any,
    no_test: bool,
    is_active: bool,
    author_cmd: str | None = None,
) -> None:
    unset = [r for r in outcome.data.get("env", []) if not os.environ.get(r["variable"])]
    for ref in unset:
        known = ref["variable"] in secrets.values
        s.say(
            f"set {ref['variable']} before rook run ({ref['purpose']})"
            + (
                "; the value from your source was used for this test only"
                if known and not no_test
                else ""
            )
        )
    if no_test:
        s.say(f"not tested; next: rook profile test {pid}{s.where}")
    elif getattr(outcome.observation, "problem", None) == "missing_variable":
        # nothing could run: a missing variable is the user's to set, not a repair
        s.say(
            f"not tested: its variables are not set; set them, then: rook profile test {pid}{s.where}"
        )
        sys.exit(2)
    elif getattr(outcome.observation, "problem", None) == "unreachable":
        # no repair helps an agent that is not running
        found = re.search(r"https?://([^/\s]+)", outcome.observation.diagnosis or "")
        at = f" (nothing answered at {found.group(1)})" if found else ""
        s.say(
            f"the agent did not answer{at}: start the agent, or correct the address in "
            f"the profile, then: rook profile test {pid}{s.where}"
        )
        sys.exit(1)
    elif getattr(outcome.observation, "problem", None) == "infra":
        # an infrastructure error is not counted against the agent, nor the profile
        s.say(
            "the agent reported an infrastructure failure (infra_failure, retried once), "
            f"which is not the profile's: wait until it is up, then: rook profile test {pid}{s.where}"
        )
        sys.exit(1)
    elif getattr(outcome.observation, "problem", None) == "rate_limited":
        from .profile_check import RATE_LIMITED  # no repair lifts a rate limit

        s.say(f"{RATE_LIMITED}, then: rook profile test {pid}{s.where}")
        sys.exit(1)
    elif getattr(outcome.observation, "problem", None) == "tls":
        # no repair turns TLS verification off
        from ..profile_probe import tls_advice

        advice = tls_advice(getattr(outcome.observation, "diagnosis", None), "the profile")
        s.say(
            f"Rook does not accept the agent's TLS certificate: {advice}, "
            f"then: rook profile test {pid}{s.where}"
        )
        sys.exit(1)
    elif not outcome.ok:
        import shlex

        fix = f"rook profile fix {pid}{s.where}"
        if author_cmd:  # fix asks the author agent this command was given, as add did
            fix += f" --author {shlex.quote(author_cmd)} --what '...'"
        elif s.author_command(None):  # config.yaml's
            fix += " --what '...'"
        else:
            fix += " (it repairs what it can itself; --author CMD --what '...' asks an author agent for the rest)"
        s.say(f"the profile does not work yet; next: {fix}")
        sys.exit(1)
    else:
        # plain rook run uses the active profile: name this one when another is
        run = (
            f"rook run{s.where}"
            if is_active
            else (f"rook run{s.where} --profile {pid} (or rook profile use {pid}{s.where})")
        )
        s.say(
            f"next: {run}"
            if _has_scenarios(s.agent)
            else f"next: write scenarios in scenarios/, then: {run}"
        )


def _has_scenarios(agent: Any) -> bool:
    """Whether the agent has a scenario file already (rook run says what it holds)."""
    from ..definitions import _yaml_files
    from ..errors import RookError

    try:
        return agent.scenarios_dir.is_dir() and bool(_yaml_files(agent.scenarios_dir))
    except RookError:
        return False


def _register() -> None:
    from .profile_check import fix_command, test_command
    from .profile_manage import list_command, rename_command, show_command, use_command

    for cmd in (test_command, fix_command, show_command, use_command, list_command, rename_command):
        profile_group.add_command(cmd)


_register()
