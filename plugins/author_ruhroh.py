"""Built-in author: an existing Ruhroh command wrapper (``--ruhroh ./wrapper.sh``),
run as it is through the ``ruhroh:`` transport (docs/ruhroh.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
        iterations = request.options.get("max_iterations", 5)
        # No capability is assumed: the handle Rook puts in RUHROH_SESSION_HANDLE when
        # the wrapper reports none shows nothing about the agent; the probe observes
        # multi_turn only when the wrapper reports a sessionHandle.
        return Draft(
            hooks={"execute": {"ruhroh": {"command": command, "max_iterations": iterations}}}
        )
