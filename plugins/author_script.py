"""Built-in author: a local script (``--from ./agent.py``).

A script that already speaks the hook contract is used as it is (the probe
decides: run with ``execute``, the goal on standard input, it must print one
JSON object with ``output``). Any other script is wrapped: a generated hook
script runs it with the goal on its standard input and its standard output
becomes the answer, exactly as for ``--command``.

A script that switches on its phase argument gets every phase it handles
(one it names as a quoted word, ``"open"``, or a shell ``case`` label,
``open)``): probed with its prepare and open, as a run runs it.

A script that speaks the contract but puts its answer under another field
(``{"reply": ...}``) is mapped: a generated hook script runs it as a hook
(same phase, standard input and environment) and moves the field it found to
``output`` (and token usage to ``usage``). ``rook profile fix`` does the same
for any profile whose execute hook is such a script.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rook_core.models import HOOK_PHASES

from .author_command import MARK, command_script, interpreter_code, json_fields
from .author_shapes import find_answer, find_usage, jmes

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Source
    from rook_core.profile_probe import Observation

SCRIPT_SUFFIXES = {".py", ".sh", ".bash", ".mjs", ".js", ".cjs"}
OPTIONAL_PHASES = ("prepare", "open", "close", "collect")


def names_phase(text: str, phase: str) -> bool:
    """Whether a hook script's ``text`` names ``phase`` as a quoted word
    (``phase === "open"``, ``== 'close'``), a shell ``case`` label (``open)``,
    ``close|collect)``) or a shell test (``[ "$1" = open ]``): it switches on its
    phase argument."""
    quoted_or_label = rf"""(["'`]){phase}\1|(?:^|[\s(|]){phase}\s*[|)]"""
    shell_test = rf"""\$\{{?1\}}?"?\s*==?\s*{phase}\b"""  # [ "$1" = execute ]
    return re.search(f"{quoted_or_label}|{shell_test}", text, re.M) is not None


def handled_phases(text: str) -> list[str]:
    """The optional phases a hook script switches on (:func:`names_phase`), in
    lifecycle order. By the hook contract a script exits 0 for a phase it does
    not implement, so one named by chance costs a call."""
    return [phase for phase in OPTIONAL_PHASES if names_phase(text, phase)]


MAPPER = '''#!/usr/bin/env python3
"""Rook hook script around: {shown}

{mark} ({origin}). {shown} speaks the hook contract but does not
put its answer in "output". Rook runs this script as `<this script> <phase>`;
it runs {shown} with the same phase, standard input and environment,
and passes its JSON object on with the answer copied to "output" (and token
usage to "usage"). Other phases pass through unchanged.
Edit it freely: it is yours now.
"""

import json
import subprocess
import sys

COMMAND = {command}

# Where the script puts its answer (keys and list indices).
ANSWER = {answer!r}
# Where it reports token usage ({{"input": [...], "output": [...]}}), or None.
USAGE = {usage!r}


def dig(data, path):
    for key in path:
        data = data[key]
    return data


def main(phase):
    done = subprocess.run(COMMAND + [phase], stdin=sys.stdin, capture_output=True)
    sys.stderr.buffer.write(done.stderr)
    if done.returncode != 0:
        sys.stderr.write(f"{{COMMAND[-1]}} exited with code {{done.returncode}}\\n")
        return 1
    if phase != "execute":
        sys.stdout.buffer.write(done.stdout)
        return 0
    # as Rook reads a hook's output: a byte order mark skipped, bytes that are
    # not UTF-8 as U+FFFD
    data = json.loads(done.stdout.decode("utf-8-sig", "replace"))
    data["output"] = dig(data, ANSWER)
    if USAGE:
        data["usage"] = {{k: dig(data, path) for k, path in USAGE.items()}}
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
'''


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
    options: tuple[str, ...] = ()

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
        phases = handled_phases(request.source.text)
        hooks = {p: {"script": path} for p in HOOK_PHASES if p in phases or p == "execute"}
        notes = [f"hook script: {path}"]
        if phases:
            notes.append(f"{path} switches on its phase: it is the hook for {', '.join(hooks)}")
        return Draft(hooks=hooks, state=state, notes=notes)

    def revise(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        st = draft.state
        if (
            st.get("mode") == "hook"
            and observation.problem == "failed"
            and names_phase(request.source.text, "execute")
        ):
            return None  # a hook that reads its phase failed: its stderr says why
        if (
            st.get("mode") == "hook"
            and observation.problem == "not_json"
            and names_phase(request.source.text, "execute")
            and broken_json(observation)
        ):
            return None  # a hook that reads its phase printed broken JSON: the diagnosis says where
        if st.get("mode") == "hook" and observation.problem in ("not_json", "failed"):
            script = request.script_path(".py")
            state = {
                "mode": "wrapped",
                "script": script,
                "shown": st["path"],
                "command_code": interpreter_code(st["path"], Path(st["real"])),
                "origin": "--from, wrapped",
                "answered_text": observation.problem == "not_json" and answered_text(observation),
            }
            phased = state["answered_text"] and names_phase(request.source.text, "execute")
            if phased:  # it answered as `<script> execute`, and reads that argument
                state.update(command_code=state["command_code"][:-1] + ', "execute"]', phased=True)
            text = command_script(state["command_code"], st["path"], state["origin"])
            notes = [f"hook script: {script} (runs {st['path']})"]
            new = draft.copy(
                hooks={"execute": script}, files={script: text}, state=state, notes=notes
            )
            new.changes.append(
                f"{st['path']} does not speak the hook contract ({observation.problem}): "
                f"wrapped by {script}, which "
                + (
                    f"runs it as the probe did ({st['path']} execute: it reads its phase), "
                    "sends it the goal on standard input and takes its standard output as "
                    "the answer"
                    if phased
                    else "sends it the goal on standard input and takes its standard output "
                    "as the answer"
                )
            )
            return new
        if st.get("mode") == "hook" and observation.problem == "no_answer":
            return map_answer(draft, observation, request, st["path"], Path(st["real"]))
        if st.get("mode") == "wrapped" and silent_without_its_phase(st, observation):
            # It answered the probe, `<script> execute`, in plain text, and says nothing
            # run as a command: it reads the phase (`[ "$1" = execute ] || exit 0`).
            state = {**st, "command_code": st["command_code"][:-1] + ', "execute"]'}
            state["phased"] = True
            new = draft.copy(state=state)
            code = command_script(state["command_code"], st["shown"], st["origin"])
            new.files = {st["script"]: code}
            without = "fails" if not observation.ok else "says nothing"
            new.changes.append(
                f"{st['shown']} answered the probe ({st['shown']} execute) but {without} "
                f"without that argument: {st['script']} now runs it with execute as its argument"
            )
            return new
        if st.get("mode") == "wrapped":
            return json_fields(draft, observation)
        return None

    def repair(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        """``rook profile fix``: an execute script whose answer is under another field
        gets a hook script that maps it to ``output``."""
        if observation.problem != "no_answer":
            return None
        entry = draft.hooks.get("execute")
        path = entry.get("script") if isinstance(entry, dict) else entry
        if not isinstance(path, str):
            return None
        agent = request.agent
        candidates = agent.candidates(path)
        real = next((c.resolve() for c in candidates if c.is_file()), None)
        if real is None:
            return None
        return map_answer(draft, observation, request, hook_path(real, agent), real)


def silent_without_its_phase(state: dict[str, Any], observation: Observation) -> bool:
    """A wrapped script that printed text run as ``<script> execute`` (the probe)
    answered nothing run as a command, without the argument, or failed there (a
    Python script reading ``sys.argv[1]``)."""
    return bool(
        state.get("answered_text")
        and not state.get("phased")
        and (not observation.ok or not (observation.answer or "").strip())
    )


def broken_json(observation: Observation) -> bool:
    """The execute hook printed what starts as a JSON object or list but does not parse."""
    hook = next((h for h in observation.hooks if h.get("phase") == "execute"), None)
    return bool(hook and (hook.get("stdout") or "").lstrip()[:1] in ("{", "["))


def answered_text(observation: Observation) -> bool:
    """The execute hook exited 0 having printed text (not the hook contract's JSON)."""
    hook = next((h for h in observation.hooks if h.get("phase") == "execute"), None)
    return bool(hook and hook.get("exit_code") == 0 and (hook.get("stdout") or "").strip())


def executed_object(observation: Observation) -> Any:
    """The JSON object the execute hook printed, when the probe kept it."""
    hook = next((h for h in observation.hooks if h.get("phase") == "execute"), None)
    if hook is None:
        return None
    if isinstance(hook.get("data"), dict):
        return hook["data"]
    try:
        data = json.loads(hook.get("stdout") or "")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def map_answer(
    draft: Draft, observation: Observation, request: AuthorRequest, shown: str, real: Path
) -> Draft | None:
    """A draft whose execute hook runs the script through a mapping hook script."""
    data = executed_object(observation)
    answer = find_answer(data, observation.goal) if data is not None else None
    if not answer:
        return None
    usage = find_usage(data)
    script = request.script_path(".py")
    if (request.agent.dir / script).resolve() == real:
        script = request.script_path(".py", f"{request.profile_id}-answer-hook")
    text = MAPPER.format(
        shown=shown.replace('"""', "'''"),
        mark=MARK,
        origin="answer field mapped",
        command=interpreter_code(shown, real),
        answer=list(answer),
        usage={k: list(v) for k, v in usage.items()} if usage else None,
    )
    entry = draft.hooks.get("execute")
    hook: Any = script
    if isinstance(entry, dict):
        hook = {k: v for k, v in entry.items() if k in ("timeout_seconds", "delay_seconds")}
        hook = {"script": script, **hook} if hook else script
    new = draft.copy()
    new.hooks = {**draft.hooks, "execute": hook}
    new.files = {**draft.files, script: text}
    new.state = {**draft.state, "mode": "mapped", "script": script}
    new.notes = [n for n in draft.notes if not n.startswith("hook script:")]
    new.notes.append(f"hook script: {script} (runs {shown} as the hook, answer mapped)")
    new.changes.append(
        f"{shown} puts its answer under {jmes(answer)}, not output: {script} runs it "
        f"as the hook and hands on {jmes(answer)} as output"
        + (" (and its token usage as usage)" if usage else "")
    )
    return new
