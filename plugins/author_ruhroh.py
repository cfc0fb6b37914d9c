"""Built-in author: an existing Ruhroh command wrapper (``--ruhroh ./wrapper.sh``),
run as it is through the ``ruhroh:`` transport (docs/ruhroh.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rook_core.errors import ConfigError

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Source


def refuse_secrets(command: str) -> None:
    """A ``ruhroh:`` entry holds its command line as it is, in the profile: one
    holding a secret is refused (naming where it is, never the value)."""
    import shlex

    from rook_core.credentials import command_secrets

    try:
        found = command_secrets(shlex.split(command))
    except ValueError:
        return  # the transport reports a command it cannot split
    if found:
        where = ", ".join(dict.fromkeys(f.name or "a key-shaped argument" for _, f in found))
        raise ConfigError(
            f"--ruhroh: the command line holds a secret ({where}); the profile would keep "
            "it in the file. Export it and let the wrapper read it from its environment "
            "(add it to the profile's env: list so Rook checks it is set)"
        )


def refuse_a_path_from_here(command: str, agent: Any) -> None:
    """The wrapper (or the script an interpreter runs), a relative path typed in a
    folder below the workspace: found from there but not where the transport looks
    (the workspace, then the agent's folder), it is refused with the path to write."""
    import shlex
    from pathlib import PurePath

    from .author_command import INTERPRETERS, _from_here

    try:
        words = shlex.split(command)
    except ValueError:
        return  # the transport reports a command it cannot split
    if not words or PurePath(words[0]).name == "env":
        return  # the transport names what it cannot find
    paths = words[:1] if "/" in words[0] else []
    if len(words) > 1 and INTERPRETERS.fullmatch(PurePath(words[0]).name):
        paths = [words[1]] if not words[1].startswith("-") else []
    for path in paths:
        relative = PurePath(path)
        if relative.is_absolute() or path.startswith("~"):
            continue
        if (agent.workspace / relative).exists() or (agent.dir / relative).exists():
            continue
        here = _from_here(path, agent.workspace)
        if here:
            raise ConfigError(
                f"--ruhroh: {path} not found in the workspace {agent.workspace} (the wrapper "
                f"is looked up there, then in the agent's folder){here}"
            )


class RuhrohAuthor:
    """``--ruhroh CMD``: a profile whose execute hook runs the wrapper."""

    fallback = False
    options = ("max_iterations",)

    def detect(self, source: Source) -> float:
        return 1.0 if source.kind == "ruhroh" else 0.0

    def suggest_name(self, source: Source) -> str | None:
        return source.program_name()

    def write(self, request: AuthorRequest) -> Draft:
        from rook_core.authoring import Draft

        command = request.source.text
        if not command.strip():
            raise ConfigError(
                "--ruhroh: give the wrapper's command line, e.g. --ruhroh ./wrapper.sh"
            )
        refuse_secrets(command)
        refuse_a_path_from_here(command, request.agent)
        iterations = request.options.get("max_iterations", 5)
        # No capability is assumed: the handle Rook puts in RUHROH_SESSION_HANDLE when
        # the wrapper reports none shows nothing about the agent; the probe observes
        # multi_turn only when the wrapper reports a sessionHandle.
        return Draft(
            hooks={"execute": {"ruhroh": {"command": command, "max_iterations": iterations}}}
        )
