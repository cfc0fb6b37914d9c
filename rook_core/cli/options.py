"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pathlib import Path


class FromEnv(str):
    """A flag's value that the command took from the flag's environment
    variable: ``given_as`` names the variable, so that a message about the
    value names what the user actually set (not a flag they never typed)."""

    given_as: str


def _from_env(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    source = ctx.get_parameter_source(param.name) if param.name else None
    if isinstance(value, str) and source is click.core.ParameterSource.ENVIRONMENT:
        value = FromEnv(value)
        value.given_as = str(param.envvar)
    return value


def workspace_options(
    f: Callable[..., Any],
    agent_help: str = "Agent to use (default: the only one, or config.yaml's).",
    project_help: str = "Project to use (default: the only one, or config.yaml's).",
) -> Callable[..., Any]:
    f = click.option("--agent", metavar="AGENT", help=agent_help)(f)
    f = click.option("--project", metavar="PROJECT", help=project_help)(f)
    f = click.option(
        "--workspace",
        "-w",
        metavar="DIR",
        envvar="ROOK_WORKSPACE_DIR",
        show_envvar=True,
        callback=_from_env,
        help="Workspace directory (default: nearest ancestor holding .testmuai/rook, else cwd).",
    )(f)
    return f


def offers(what: str) -> Callable[[click.Context, click.Parameter, str], list[str]]:
    """A ``shell_complete`` callback offering the agent's ``what`` (``profiles``,
    ``scenarios``, ``runs``: :mod:`rook_core.cli.completing`), which is loaded on
    the first Tab, never by a command that is run."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
        from . import completing

        found: list[str] = getattr(completing, what)(ctx, param, incomplete)
        return found

    return complete


class Count(click.IntRange):
    """A whole number in a range (``--concurrency``, ``--repeat``, ``--limit``):
    one that is none is "'x' is not a valid integer", not click's "'x' is not a
    valid integer range" (the type's name). Give its option ``metavar="N"``."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        digits = value.strip().lstrip("+-") if isinstance(value, str) else ""
        if len(digits) > 308 and digits.isascii() and digits.isdigit():  # past any float
            shown = value.strip()  # (Python reads no more than 4,300 digits at all)
            self.fail(
                f"{shown[:20]}...: too {'small' if shown.startswith('-') else 'large'}: "
                f"a whole number of {len(digits):,} digits",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


class Rate(click.ParamType):
    """A rate in [0, 1]: ``nan`` and ``inf`` are refused (``FloatRange`` lets
    ``nan`` through, since every comparison with it is false)."""

    name = "rate"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        import math

        said = f"{value!r} is not a number between 0 and 1"
        try:
            rate = float(value)
        except (TypeError, ValueError):
            self.fail(said + _percent_meant(value), param, ctx)
        if not math.isfinite(rate) or not 0 <= rate <= 1:
            self.fail(said + _percent_meant(value), param, ctx)
        return rate or 0.0  # -0 is 0: never shown as "gate -0"


def _percent_meant(value: Any) -> str:
    """``; for 80%, write 0.8`` for a rate written as a percentage (``80``,
    ``80%``), from above 1 to 100; ``""`` for anything else."""
    text = str(value).strip().removesuffix("%")
    try:
        percent = float(text)
    except ValueError:
        return ""
    if not 1 < percent <= 100:
        return ""
    return f"; for {text}%, write {percent / 100:g}"


RATE = Rate()


class NoNulPath(click.Path):
    """A ``click.Path`` that refuses a NUL character, naming the flag or argument
    as Rook names a bad value (``os.stat`` raises ValueError on one: a traceback).
    No command line holds one; a program calling Rook from Python can."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "\0" in value:
            from ..errors import ConfigError

            name = (
                (
                    param.opts[0]
                    if param.opts and param.param_type_name == "option"
                    else param.human_readable_name
                )
                if param is not None
                else "path"
            )
            raise ConfigError(f"{name} {value!r}: no path holds a NUL character")
        return super().convert(value, param, ctx)


def refuse_empty(*flags: tuple[str, str | None]) -> None:
    """Refuse a flag given as empty or blank text (``--goal "$GOAL"`` with GOAL
    unset): never taken as left out, nor sent on as nothing."""
    from ..errors import ConfigError

    for what, value in flags:
        if value is not None and not value.strip():
            raise ConfigError(f"{what} {value!r}: names nothing; give a value, or leave it out")


def refuse_unrunnable_author(command: str | None, workspace: Path, given: str = "--author") -> None:
    """Refuse an author agent's command line that cannot run (it does not split,
    its program is not on ``PATH``, or a path to it names no file from
    ``workspace``, where the author agent runs) before anything runs, as the
    author agent would when asked: a fix of a working profile never asks it.
    ``given`` says where it was given (``--author``, or ``.../config.yaml:
    author``)."""
    import shlex
    import shutil

    from ..errors import ConfigError

    if command is None:
        return
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"{given}: cannot split the command line: {exc}") from None
    if argv and "/" not in argv[0] and shutil.which(argv[0]) is None:
        raise ConfigError(f"{given}: {argv[0]!r} is not installed (not on PATH)")
    path = workspace / argv[0] if argv else workspace
    if argv and "/" in argv[0] and not path.is_file():
        if path.is_dir():
            raise ConfigError(f"{given}: {argv[0]!r} is a directory, not a program")
        if path.exists():
            raise ConfigError(
                f"{given}: {argv[0]!r} is not a regular file (a pipe, a socket or a device)"
            )
        raise ConfigError(f"{given}: {argv[0]!r} not found (no {path})")


def split_csv(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for v in values for part in v.split(",") if part.strip()]
