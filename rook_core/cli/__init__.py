"""The ``rook`` command. One click module per command group; one error boundary.

Imports stay lazy so ``rook --version`` and ``rook --help`` start fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from .. import __version__

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# Commands load on first use, so `rook --version` imports none of them.
COMMANDS = {
    "run": "run:run_command",
    "init": "init:init_command",
    "plugins": "plugins_cmd:plugins_command",
    "runs": "runs:runs_group",
    "diff": "diff:diff_command",
    "merge": "merge:merge_command",
    "report": "report_cmd:report_command",
    "profile": "profile:profile_group",
    "doctor": "doctor:doctor_command",
    "completion": "completion:completion_command",
}


class RookGroup(click.Group):
    """Loads commands lazily and turns every :class:`RookError` into a clean
    message and its exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            import importlib

            module, attr = COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            if not ctx.resilient_parsing:  # the commands load lazily: Click knows none yet
                helped = _command_context(ctx, args[1:])  # rook help run: rook run --help
                path = helped.command_path if helped is not None else ctx.command_path
                ctx.fail(no_such_command(name, self.list_commands(ctx), path))
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        typed = list(args)  # as typed: Click's parser takes them off the list
        try:
            return super().parse_args(ctx, args)
        except click.ClickException as exc:  # rook's own options: rook --VALUE
            refused(ctx, exc, typed)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt:  # reading the command line: Click's "Aborted!", exit 1
            click.echo("rook: interrupted", err=True)
            sys.exit(130)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            from .. import closing
            from ..startup import resume

            resume()  # the command line is parsed: the console script's start-up is over
            redact = sys.modules.get(f"{__name__.rpartition('.')[0]}.redact")
            if redact is not None:  # a command run before this one in this process activated it
                redact.deactivate()
            args = [*_protected_args(ctx), *ctx.args]  # as typed, for a usage error
            with closing.command():  # the files it opened for itself, closed however it ends
                return self._invoke(ctx, args)
        except KeyboardInterrupt:  # before the command began: Click's "Aborted!", exit 1
            click.echo("rook: interrupted", err=True)
            ctx.exit(130)

    def _invoke(self, ctx: click.Context, args: list[str]) -> Any:
        from ..errors import RookError

        try:
            return super().invoke(ctx)
        except click.ClickException as exc:  # a value Click refuses is shown as typed
            refused(ctx, exc, args)
        except RookError as exc:
            from ..errors import DamagedRecord
            from ..report import printable  # a file's ESC or U+202E quoted: shown, never obeyed

            click.echo(f"rook: error: {printable(_redacted(str(exc), args))}", err=True)
            if isinstance(exc, DamagedRecord) and ctx.meta.get(READS_RUNS):
                ctx.exit(2)  # bad input to a command that only reads runs: no run failed
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            shown = ctx.meta.get(RECORDED)  # a run recorded whole: only what it prints was cut
            click.echo(
                "rook: interrupted"
                + (f"; the run is recorded, see: {shown}" if isinstance(shown, str) else ""),
                err=True,
            )
            ctx.exit(130)
        except OSError as exc:
            # The last resort for a file a command could not read or write (a
            # directory it may not list, a file where a directory belongs, a name
            # too long): the path and the reason, never a traceback. The places
            # that know which file is at fault raise a ConfigError before this.
            from ..errors import os_error_text
            from ..report import printable  # a file's ESC or U+202E quoted: shown, never obeyed

            said = os_error_text(exc)
            if exc.filename is None and _stdout_fails(exc):  # a full disk under rook ... > FILE
                said = f"cannot write standard output: {said}"
                _STDOUT_FAILED.append(True)  # said once: leave() does not say it again
            click.echo(f"rook: error: {printable(_redacted(said, args))}", err=True)
            # after a run was recorded (its output could not be written, say) the
            # run still happened: 1, never 2 ("nothing was run")
            ctx.exit(1 if ctx.meta.get(RECORDED) else 2)
        except UnicodeDecodeError as exc:
            click.echo(
                f"rook: error: a file Rook reads is not UTF-8 text ({exc.reason} at byte "
                f"{exc.start})",
                err=True,
            )
            ctx.exit(2)


_STDOUT_FAILED: list[bool] = []
"""Not empty once standard output was found unwritable and said so."""


def _stdout_fails(exc: OSError) -> bool:
    """Whether standard output is what ``exc``, an :class:`OSError` naming no
    file, was about (``rook ... > FILE`` on a full disk). Rook's own files are
    named in their errors; a write to standard output that failed leaves its
    bytes in the buffer, so flushing again fails again, and where the stream
    is unbuffered (``PYTHONUNBUFFERED``) the frame that wrote holds it
    (``click.echo``'s ``file``, the ``--json`` writer's ``out``). Asked on the
    error path only."""
    out = sys.stdout
    try:
        out.flush()
    except (OSError, ValueError):
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    held = tb.tb_frame.f_locals.values()
    streams = (out, getattr(out, "buffer", None))
    return any(value is stream for value in held for stream in streams if stream is not None)


def no_such_command(name: str, commands: list[str], helped: str = "rook") -> str:
    """A command a group lacks (``rook NAME``, ``rook profile NAME``), named first,
    with the one it looks like; ``help`` (``rook help run``, as ``git help`` takes
    it) with where the help of ``helped``, the command it names, is."""
    from ..errors import did_you_mean

    if name == "help":
        return f"help: no such command; for help: {helped} --help"
    close = did_you_mean(name, commands)
    return f"{name}: no such command" + (f"; did you mean {close}?" if close else "")


def _protected_args(ctx: click.Context) -> list[str]:
    """The subcommand's name and what follows it, which a group's context keeps
    apart from ``ctx.args``: ``_protected_args`` in Click 8.2+ (where reading
    ``protected_args`` warns), ``protected_args`` in Click 8.1."""
    kept = getattr(ctx, "_protected_args", None)
    return list(kept if kept is not None else getattr(ctx, "protected_args", ()))


def refused(ctx: click.Context, exc: click.ClickException, args: list[str]) -> NoReturn:
    """Say what Click refused, as typed in ``args``: redacted with the env values
    of every profile of the workspace ``args`` name, long values cut."""
    import io

    from ..known_secrets import typed_workspace, workspace_redactor

    if isinstance(exc, _NO_ARGS_IS_HELP):  # `rook` or `rook profile` alone (Click 8.2+):
        click.echo(exc.format_message())  # the help, as --help and Click 8.1 give it: exit 0
        ctx.exit(0)
    redactor = workspace_redactor(typed_workspace(args))
    if isinstance(exc, click.UsageError):
        said_text = usage_error(ctx, exc, args)
    else:  # another ClickException: as Click shows it
        said = io.StringIO()
        exc.show(file=said)
        said_text = said.getvalue()
    text = shortened(said_text, args, redactor.text)
    click.echo(text, err=True, nl=False)
    ctx.exit(exc.exit_code)


_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())
"""What Click 8.2+ raises for a group given no command (help on standard error,
exit 2; Click 8.1 printed the help and exited 0). Rook shows the help on standard
output and exits 0 on either (docs/running.md)."""


def usage_error(ctx: click.Context, exc: click.UsageError, args: list[str]) -> str:
    """What Click refused, in Rook's form: ``rook: error: FLAG: what is wrong``
    (the flag, argument or command at fault first, as every Rook message names
    it), then the command's usage line and where its help is, as a user of any
    command-line tool expects after a usage error. Exit 2, as Click's."""
    from ..report import printable  # a typed ESC or U+202E quoted: shown, never obeyed

    found = exc.ctx or _command_context(ctx, args)
    line = f"rook: error: {printable(_usage_message(exc, found, args))}\n"
    if found is None:
        return line
    return f"{line}{found.get_usage()}\nTry '{found.command_path} --help' for help.\n"


def _command_context(ctx: click.Context, args: list[str]) -> click.Context | None:
    """The context of the (sub)command ``args`` name, for its usage line: Click
    gives none with some errors (``rook run --concurrency`` with no value)."""
    found = ctx
    for arg in args:
        command = found.command
        if not isinstance(command, click.Group) or arg.startswith("-"):
            break
        sub = command.get_command(found, arg)
        if sub is None:
            break
        found = click.Context(sub, info_name=arg, parent=found)
    return found


def _usage_message(exc: click.UsageError, ctx: click.Context | None, args: list[str]) -> str:
    import re

    text = exc.message
    if isinstance(exc, click.NoSuchOption):
        from ..errors import did_you_mean  # the flag it begins or is a typo of, as for a field

        params = ctx.command.params if ctx is not None else []
        flags = [o for p in params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")]
        close = did_you_mean(exc.option_name, flags)
        near = [close] if close else [*exc.possibilities] if exc.possibilities else []
        meant = f"; did you mean {' or '.join(near)}?" if near else ""
        return f"{exc.option_name}: no such option{meant}"
    if isinstance(exc, click.BadOptionUsage):
        what = re.sub(r"^Option '[^']*' ", "", text).rstrip(".")
        return f"{exc.option_name}: " + (
            "needs a value" if what == "requires an argument" else what
        )
    if isinstance(exc, click.BadParameter):
        param = exc.param
        name = _param_name(param, args) if param is not None else exc.param_hint
        if isinstance(exc, click.MissingParameter):
            choices = getattr(param.type, "choices", None) if param is not None else None
            one_of = f" (one of {', '.join(map(str, choices))})" if choices else ""
            needs = f"; {ctx.command_path} needs it" if ctx is not None else ""
            return f"{name}: missing{one_of}{needs}"
        return f"{name}: {_lowered(text)}" if name else _lowered(text)
    command = re.fullmatch(r"No such command (['\"])(.*)\1\.", text, re.S)  # as repr quotes it
    if command:  # a subgroup's (rook profile NAME): named first, as rook NAME is
        group = ctx.command if ctx is not None else None
        names = group.list_commands(ctx) if isinstance(group, click.Group) and ctx else []
        return no_such_command(command[2], names, ctx.command_path if ctx else "rook")
    extra = re.fullmatch(r"Got unexpected extra (arguments?) \((.*)\)\.?", text, re.S)
    if extra:  # what is at fault first, as for a flag
        said = f"{extra[2]}: unexpected extra {extra[1]}"
        return said + (
            _select_hint(extra[2]) if ctx is not None and ctx.command_path == "rook run" else ""
        )
    return _lowered(re.sub(r"^Got unexpected ", "unexpected ", text))


def _select_hint(extra: str) -> str:
    """How ``rook run`` chooses scenarios, for one named as ``pytest`` names a test
    (``rook run greeting``, ``rook run scenarios/greeting.yaml``): ``--only``,
    with the ids typed, or with ``ID`` for a file's path (its ``id:`` may differ)."""
    import shlex

    ids = extra.split()  # Click's list of them, joined by spaces
    if ids and not any("/" in a or a.endswith((".yaml", ".yml")) for a in ids):
        only = shlex.quote(",".join(ids))
    else:
        only = "ID,... (a scenario's id:, or its file's name without .yaml)"
    return f"; rook run takes no argument: select scenarios with --only {only}"


def _param_name(param: click.Parameter, args: list[str]) -> str:
    """The flag of ``param`` as typed in ``args`` (``-j``, ``--concurrency``),
    else its first; an argument's name (``ID``, ``RUN_DIRS``)."""
    if not isinstance(param, click.Option):
        return param.human_readable_name
    for opt in param.opts:
        short = not opt.startswith("--")
        if any(a == opt or a.startswith(opt + "=") or (short and a.startswith(opt)) for a in args):
            return opt
    return param.opts[0]


def _lowered(text: str) -> str:
    """Click's sentence as Rook writes a message: ``not a valid integer``, not
    ``Not a valid integer.`` (its first word lowercased, its closing period
    dropped); a text that begins with a name is left as written."""
    import re

    if re.match(r"[A-Z][a-z]+ ", text):
        text = text[0].lower() + text[1:]
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def _redacted(text: str, args: list[str]) -> str:
    """``text``, an error's, redacted with the command's redactor; said before
    the command activated one (a plugin that raised as Rook loaded it), with
    the env values of every profile of the workspace ``args`` name. A long
    value typed in ``args`` is cut (:func:`shortened`)."""
    from ..errors import RookError
    from ..redact import activated, scrub

    if activated():
        return shortened(text, args, scrub)
    from ..known_secrets import typed_workspace, workspace_redactor

    try:
        return shortened(text, args, workspace_redactor(typed_workspace(args)).text)
    except (RookError, OSError, ValueError):  # a profile Rook cannot read: as before
        return shortened(text, args, scrub)


VALUE_SHOWN = 500
"""Characters of a value typed on the command line that an error message shows."""


def shortened(text: str, args: list[str], redact: Callable[[str], str]) -> str:
    """``text``, an error message, redacted by ``redact``, with each value typed
    in ``args`` that it echoes (a flag's value, one of its comma-separated
    items) cut to :data:`VALUE_SHOWN` characters, saying how many were left
    out: a 100 KB ``--only`` is not 100 KB on the terminal. Cut once redacted,
    so a secret at the cut is dropped whole, never halved."""
    from ..redact import Redactor

    text = redact(text)
    for typed in sorted(_typed_values(args), key=len, reverse=True):
        value = redact(typed)
        if len(value) > VALUE_SHOWN and value in text:  # redacted: only its markers to keep
            cut = Redactor().head(value, VALUE_SHOWN, " ... {n} characters more")
            text = text.replace(value, cut)
    return text


def _typed_values(args: list[str]) -> set[str]:
    """Each argument of ``args`` longer than :data:`VALUE_SHOWN`, and the parts an
    error message may quote: after ``--flag=`` or ``-j``, after ``FORMAT:``, its
    comma-separated items; each as typed and as :func:`repr` shows it."""
    found = set()
    for arg in args:
        if len(arg) <= VALUE_SHOWN:
            continue
        parts = {arg, arg.partition("=")[2], arg.partition(":")[2], *arg.split(",")}
        if arg.startswith("-") and not arg.startswith("--"):
            parts.add(arg[2:])
        found |= {form for part in parts for form in (part, repr(part)[1:-1])}
    return found


RECORDED = "rook.recorded"
"""``click.Context.meta`` key a command sets once it has recorded a run: an
error after that exits 1, not 2 (see :meth:`RookGroup.invoke`), and Ctrl-C
names the command that shows the run, when the command gave it."""


READS_RUNS = "rook.reads_runs"
"""``click.Context.meta`` key a command sets when it only reads runs (``rook
report``, ``rook runs show``, ``rook diff``): a damaged record it meets
(:class:`rook_core.errors.DamagedRecord`) exits 2, bad input, never 1, which
says a scenario failed (see :meth:`RookGroup.invoke`)."""


def reads_runs() -> None:
    """Say that this command only reads runs (see :data:`READS_RUNS`)."""
    click.get_current_context().meta[READS_RUNS] = True


def recorded(shown_by: str = "") -> None:
    """Say that this command has recorded a run (see :data:`RECORDED`), which
    ``shown_by`` (``rook runs show ID ...``) shows."""
    click.get_current_context().meta[RECORDED] = shown_by or True


@click.group(cls=RookGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="rook")
def cli() -> None:
    """Rook tests AI agents: profiles reach the agent, scenarios say what to ask and
    what must be true, `rook run` drives the lifecycle and judges the evidence.

    \b
    Examples (start here):
      rook init --project demo --agent my-agent --example
      rook run
      rook doctor
    """


def main(argv: list[str] | None = None) -> None:
    """The ``rook`` console script (through :mod:`rook_core.console`): run the
    command, then leave at once. A signal :mod:`rook_core.console` turned into
    ``KeyboardInterrupt`` ends it as Ctrl-C does, wherever it comes: before the
    command starts too, and a second one while it says so."""
    try:
        console = sys.modules.get(f"{__name__.rpartition('.')[0]}.console")
        if console is not None:  # the console script: a signal now ends the command
            console.command_starts()
        _main(argv)
    except KeyboardInterrupt:
        interrupted()


def interrupted() -> None:
    """``rook: interrupted``, exit 130; a further signal no longer stops the exit
    half-way (a traceback instead of the message)."""
    import signal

    for sig in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")):
        if sig is not None:
            signal.signal(sig, signal.SIG_IGN)
    try:
        click.echo("rook: interrupted", err=True)
    except OSError:  # a terminal that hung up (SIGHUP): nothing can be said there
        pass
    leave(130)


def _main(argv: list[str] | None) -> None:
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:  # started with it closed (rook run >&-): output goes nowhere
            import os

            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
        else:  # rook doctor | head -1: once the reader leaves, the rest is dropped (streams.py)
            from .streams import UntilTheReaderLeaves, blocking, escaping

            blocking(getattr(sys, name))  # a parent's O_NONBLOCK: writes stay whole
            escaping(getattr(sys, name))  # PYTHONIOENCODING=latin-1: a dash as \u2014

            # standard error that cannot be written: nowhere is left to say so
            last_word = name == "stderr"
            setattr(sys, name, UntilTheReaderLeaves(getattr(sys, name), last_word=last_word))
    from ..errors import shown, utf8

    for arg in sys.argv[1:] if argv is None else argv:
        if not utf8(arg):  # bytes that are not UTF-8: no record or message could hold them
            said = f"argument {shown(arg)} is not UTF-8 text"
            typed = [shown(a) for a in (sys.argv[1:] if argv is None else argv)]
            click.echo(f"rook: error: {_redacted(said, typed)}", err=True)
            leave(2)
    try:
        cli.main(args=argv, prog_name="rook")
    except SystemExit as exc:
        leave(exc.code)
    except OSError as exc:  # outside any command: --help or --version, into standard output
        from ..errors import os_error_text

        said = os_error_text(exc)  # no file named: the stream Click's option wrote to
        if exc.filename is None:
            said = f"cannot write standard output: {said}"
            _STDOUT_FAILED.append(True)
        try:
            click.echo(f"rook: error: {said}", err=True)
        except OSError:  # standard error cannot be written either: nothing can be said
            pass
        leave(2)
    leave(0)


def leave(code: Any) -> None:
    """Exit with ``code`` (as :func:`sys.exit` reads it) without tearing the
    interpreter down.

    By the time a command returns, everything it does is done and written; what
    remains of a normal exit is garbage-collecting and unloading a few hundred
    modules, about 30 ms on every command. So: run the ``atexit`` handlers,
    flush both streams, and ``os._exit``. Only the console script does this;
    :data:`cli` called in process (tests, ``click.testing``) exits normally.
    """
    import atexit
    import os

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message goes to stderr, the status is 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    from .streams import as_found

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError) as exc:  # a closed pipe (rook ... | head): nothing to keep
            if stream is sys.stdout and not _reader_left(exc, stream) and not _STDOUT_FAILED:
                # a full disk the command did not see (its last line still buffered): never a silent 0
                try:
                    said = getattr(exc, "strerror", None) or exc
                    click.echo(f"rook: error: cannot write standard output: {said}", err=True)
                except OSError:
                    pass
                status = status or 2
    as_found()  # a stream made blocking at the start is non-blocking again, as its parent left it
    os._exit(status)


def _reader_left(exc: BaseException, stream: Any) -> bool:
    """Whether standard output failed because its reader left (a closed pipe, a
    terminal hung up: :func:`~rook_core.cli.streams.reader_gone`) rather than
    because it cannot be written (a full disk, EIO on a file)."""
    import errno

    from .streams import reader_gone

    if not isinstance(exc, OSError) or exc.errno == errno.EBADF:
        return True
    return reader_gone(exc, stream)
