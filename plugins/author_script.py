"""Built-in author: a local script (``--from ./agent.py``).

A script that already speaks the hook contract is used as it is (the probe
decides: run with ``execute``, the goal on standard input, it must print one
JSON object with ``output``). Any other script is wrapped: a generated hook
script runs it with the goal on its standard input and its standard output
becomes the answer, exactly as for ``--command``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .author_command import command_script, interpreter_code, json_fields

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Source
    from rook_core.profile_probe import Observation

SCRIPT_SUFFIXES = {".py", ".sh", ".bash", ".mjs", ".js", ".cjs"}


def hook_path(path: Path, agent: Any) -> str:
    """How the profile names the script: relative to the workspace when inside it."""
    path = path.resolve()
    try:
        return str(path.relative_to(agent.workspace.resolve()))
    except ValueError:
        return str(path)


class ScriptAuthor:
    """A script file: used as a hook when it is one, wrapped when it is not."""

    fallback = False

    def detect(self, source: Source) -> float:
        if source.kind != "file" or source.path is None:
            return 0.0
        if source.path.suffix.lower() in SCRIPT_SUFFIXES or source.text.startswith("#!"):
            return 0.8
        return 0.6 if os.access(source.path, os.X_OK) else 0.0

    def suggest_name(self, source: Source) -> str | None:
        return source.path.stem if source.path is not None else None

    def write(self, request: AuthorRequest) -> Draft:
        from rook_core.authoring import Draft

        assert request.source.path is not None
        path = hook_path(request.source.path, request.agent)
        state = {"mode": "hook", "path": path, "real": str(request.source.path.resolve())}
        return Draft(
            hooks={"execute": {"script": path}}, state=state, notes=[f"hook script: {path}"]
        )

    def revise(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        st = draft.state
        if st.get("mode") == "hook" and observation.problem in ("not_json", "failed"):
            script = request.script_path(".py")
            state = {
                "mode": "wrapped",
                "script": script,
                "shown": st["path"],
                "command_code": interpreter_code(st["path"], Path(st["real"])),
                "origin": "--from, wrapped",
            }
            text = command_script(state["command_code"], st["path"], state["origin"])
            new = draft.copy(hooks={"execute": script}, files={script: text}, state=state)
            new.changes.append(
                f"{st['path']} does not speak the hook contract ({observation.problem}): "
                f"wrapped by {script}, which sends it the goal on standard input and takes "
                "its standard output as the answer"
            )
            return new
        if st.get("mode") == "wrapped":
            return json_fields(draft, observation)
        return None
