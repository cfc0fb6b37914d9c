"""The small family of errors Rook's domain code raises.

One boundary in the CLI turns them into clean messages and exit codes:
:class:`ConfigError` and its subclasses mean "a user's mistake, nothing was
run" (exit 2); any other :class:`RookError` is a run-time failure (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable


class RookError(Exception):
    """Base of every error Rook raises on purpose."""

    exit_code = 1


class ConfigError(RookError):
    """A wrong profile, scenario, flag, variable or workspace: exit 2, nothing run."""

    exit_code = 2


class WorkspaceError(ConfigError):
    """The workspace, project or agent cannot be found or chosen."""


class ProfileError(ConfigError):
    """A profile file is missing or invalid."""


class ProfileNotFound(ProfileError):
    """No profile has the id, file name or name given."""


class ScenarioError(ConfigError):
    """A scenario file is missing or invalid."""


class PluginError(ConfigError):
    """A plugin is missing, misspelt or registers a duplicate name."""


class MissingEnvError(ConfigError):
    """Variables a profile requires are not set."""


class RunStoreError(RookError):
    """The run record cannot be read or written."""


class DamagedRecord(RunStoreError):
    """A file of a run's record that cannot be read or is not what Rook writes
    there (edited by hand, damaged). To a command that only reads runs
    (``rook report``, ``rook runs show``, ``rook diff``) it is bad input: exit 2
    (see :func:`rook_core.cli.reads_runs`)."""


class RunStopped(RookError):
    """An executor stops the run for a reason of its own (a cluster with no worker
    left): what it recorded is kept, the run's report is written (what it did not
    run is ``pending``) and ``rook run`` exits 1, naming the reason and the command
    that finishes the run."""


class HookFailed(RookError):
    """A hook failed; the message is its diagnosis."""


def exception_text(exc: BaseException) -> str:
    """An exception as ``Type: message`` (the type alone when it says nothing):
    a plugin's bug, named in a message."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def os_error_text(exc: OSError) -> str:
    """``PATH: reason`` for an :class:`OSError` (``Permission denied``, ``File
    name too long``, ...), as a message to a user, never a traceback."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is None:
        return reason
    where = str(exc.filename)
    if exc.filename2 is not None:
        where += f" -> {exc.filename2}"
    return f"{where}: {reason}"


NULL_MESSAGE = "empty: nothing is written there (YAML's null); write a value"
"""What marshmallow's "Field may not be null." says to a user who left a key unfilled."""


MARSHMALLOW_WORDS = (
    "Missing",
    "Field",
    "Invalid",
    "Unknown",
    "Not",
    "Must",
    "Shorter",
    "Longer",
    "Length",
    "String",
    "Value",
    "Number",  # "Number too large." (a float past 1e308)
    "Special",  # "Special numeric values (nan or infinity) are not permitted."
    "One",  # "One or more of the choices you made was not in: ..."
)
"""The words marshmallow's own messages start with ("Not a valid string.",
"Missing data for required field.", "Must be greater than ..."), capitalised and
ending in a period, as Rook's own are not."""


def in_rook_form(message: str) -> str:
    """``message`` as Rook writes a field's message: ``not a valid string``, not
    marshmallow's ``Not a valid string.`` (its first word lowercased, its one
    closing period dropped); Rook's own messages are left as written."""
    first = message.split(" ", 1)[0].rstrip(".:")
    if first not in MARSHMALLOW_WORDS:
        return message
    message = message[0].lower() + message[1:]
    if message.endswith(".") and not message.endswith(".."):
        message = message[:-1]
    return message


def format_validation_messages(messages: object, prefix: str = "") -> list[str]:
    """Flatten marshmallow's nested error dict into ``a.b.c: message`` lines, each
    message in Rook's form (:func:`in_rook_form`)."""
    lines: list[str] = []
    if isinstance(messages, dict):
        for key, value in messages.items():
            key_s = str(key)
            if key_s == "_schema":
                path = prefix
            else:
                path = f"{prefix}.{key_s}" if prefix else key_s
            lines.extend(format_validation_messages(value, path))
    elif isinstance(messages, (list, tuple)):
        if all(isinstance(m, str) for m in messages):
            for m in messages:
                m = NULL_MESSAGE if m == "Field may not be null." else in_rook_form(m)
                lines.append(f"{prefix}: {m}" if prefix else m)
        else:
            for m in messages:
                lines.extend(format_validation_messages(m, prefix))
    else:
        text = in_rook_form(str(messages))
        lines.append(f"{prefix}: {text}" if prefix else text)
    return lines


def typed(value: str) -> str:
    """A flag's value as the user typed it, for a message: quoted when it is empty
    or blank (``--shard ''``, as ``--shard "$SHARD"`` gives with SHARD unset),
    which would otherwise show as nothing at all."""
    return value if value.strip() else repr(value)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 scenario``, ``2 scenarios``: a count and its noun (``plural``, else
    the noun with an ``s``), for a message or a report, never ``1 scenarios``
    or ``scenario(s)``."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def listed(noun: str, items: list[str], plural: str | None = None) -> str:
    """``turn 3``, ``turns 2, 3``: a noun and the items it names, in one line,
    never ``turn(s) 2, 3``."""
    return f"{noun if len(items) == 1 else plural or noun + 's'} {', '.join(items)}"


def utf8(text: str) -> bool:
    """Whether ``text`` is UTF-8 text: not a command-line argument or path whose
    bytes were not (Python keeps them as lone surrogates, which no JSON record,
    hook's standard input or message can hold)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(text: str) -> str:
    """``text`` that may hold bytes that are not UTF-8, printable: each as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def missing(path: object) -> str:
    """Why ``path``, a file Rook was to read, is not there: ``a symbolic link to
    TARGET, which does not exist`` for a broken link (listed in its folder, so
    "not found" would contradict what ``ls`` shows), else ``file not found``."""
    import os

    try:
        return f"a symbolic link to {os.readlink(str(path))}, which does not exist"
    except OSError:  # not a link (gone, or never there)
        return "file not found"


def did_you_mean(key: str, known: Iterable[str]) -> str | None:
    """The one name in ``known`` that ``key`` looks like a typo or a short form
    of (``gaol``: ``goal``; ``timeout``: ``timeout_seconds``; ``JSON``: ``json``), if
    any."""
    import difflib  # only on a mistake

    names = list(known)
    same = [n for n in names if n.lower() == key.lower()]  # JSON for json
    if len(same) == 1:
        return same[0]
    longer = [n for n in names if key and n.startswith(key)]
    if len(longer) == 1:
        return longer[0]
    swapped = [n for n in names if _swapped(key, n)]  # rnu: run, the commonest typo
    if len(swapped) == 1:
        return swapped[0]
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.7)
    return close[0] if close else None


def _swapped(key: str, name: str) -> bool:
    """Whether ``key`` is ``name`` with two neighbouring letters swapped (``rnu``
    for ``run``: too unlike it letter by letter for a close match)."""
    if len(key) != len(name) or key == name:
        return False
    differ = [i for i, (a, b) in enumerate(zip(key, name, strict=True)) if a != b]
    return (
        len(differ) == 2
        and differ[1] == differ[0] + 1
        and key[differ[0]] == name[differ[1]]
        and key[differ[1]] == name[differ[0]]
    )


TRUE = ("1", "true", "yes", "on")
FALSE = ("", "0", "false", "no", "off")
_warned: set[str] = set()  # the variables warned about: once a process
_said_by_rook = False  # see said_by_rook


def said_by_rook() -> None:
    """In a process Rook started with its own environment (a worker of the
    LocalCluster it starts): what its variables are warned of (:func:`warn_variable`)
    was said by Rook already, and is not said again here."""
    global _said_by_rook
    _said_by_rook = True


def warn_variable(variable: str, message: str) -> None:
    """``rook: warning: MESSAGE`` on standard error, once a process for
    ``variable`` (a variable is read many times a command); never raises."""
    import sys

    if variable in _warned or _said_by_rook:
        return
    _warned.add(variable)
    try:
        sys.stderr.write(f"rook: warning: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # standard error closed, or its reader gone
        pass


def switch_on(variable: str, on: str) -> bool:
    """Whether the on/off environment variable ``variable`` (``ROOK_NO_CACHE``,
    ``ROOK_TRACE_PLUGINS``) is on, read the one way every such variable of Rook's
    is: on for ``1``, ``true``, ``yes``, ``on``; off for ``0``, ``false``, ``no``,
    ``off``, empty or unset (any case, blanks around ignored); any other value is
    a warning naming the variable (:func:`warn_variable`) and on, as the user set it
    for something. ``on`` says what on does (``Rook runs without its cache``),
    for that warning. (``NO_COLOR`` is not one: any value but empty is on, as its
    standard says.)"""
    import os

    value = os.environ.get(variable, "")
    word = value.strip().lower()
    if word in FALSE:
        return False
    if word not in TRUE:
        warn_variable(
            variable,
            f"{variable}={value!r} is neither true ({', '.join(TRUE)}) nor false "
            f"({', '.join(FALSE[1:])}, or empty): {on}, as for 1",
        )
    return True
