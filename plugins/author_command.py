"""Built-in author: a command line (``--command 'claude -p'``) -> a small, readable
Python hook script that runs the command with the goal on its standard input and
answers with its standard output.

When the probe shows the command prints JSON (or JSON Lines, a stream of events),
the script is corrected to take the answer (and token usage, and a session id)
from the right field; when the
command refuses to run with the goal on its standard input as a command wanting
an argument does (exit 2, or a usage message), it is given the goal as its last
argument instead (back to standard input if that fails too).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from rook_core.credentials import ASSIGNMENT
from rook_core.errors import ConfigError
from rook_core.workspace import user_path

from .author_shapes import find_answer, find_conversation, find_usage

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Source
    from rook_core.profile_probe import Observation

MARK = "# Written by rook profile add"
TEMPLATE = '''#!/usr/bin/env python3
"""Rook hook script for: {shown}

{mark} ({origin}). Rook runs it as `<this script> <phase>`. In
execute, the turn's text arrives on standard input; this script sends it to
the command on the command's standard input (or as its last argument, see
GOAL_AS_ARGUMENT) and prints one JSON object:
{{"output": <the command's answer>}}. Other phases need nothing here.
Edit it freely: it is yours now.
"""

import json
import os
import subprocess
import sys

COMMAND = {command}

# When the command prints JSON: where the answer is (keys and list indices),
# or None when its whole standard output is the answer.
ANSWER = {answer!r}
# Where the command reports token usage ({{"input": [...], "output": [...]}}), or None.
USAGE = {usage!r}
# Where the command reports its session or conversation id, or None.
SESSION = {session!r}
# Extra arguments that continue a conversation; "{{conversation}}" becomes the id,
# e.g. ["--resume", "{{conversation}}"]. Empty: every turn stands alone, and the
# id is kept as evidence (session_id) instead of being a conversation handle.
RESUME_ARGS = {resume!r}
# True: the goal is the command's last argument (after RESUME_ARGS; after "--"
# when it starts with "-") and its standard input is empty, for a command that
# takes its prompt as an argument.
GOAL_AS_ARGUMENT = {goal_argument!r}
# True: the command prints JSON Lines (one JSON value a line, a stream of events);
# each place above is then looked for in its lines, the last line first.
JSON_LINES = {json_lines!r}


def dig(data, path):
    if not JSON_LINES:
        for key in path:
            data = data[key]
        return data
    for line in reversed(data):  # the last event that has it
        try:
            return dig_line(line, path)
        except (KeyError, IndexError, TypeError):
            pass
    raise KeyError(path)


def dig_line(data, path):
    for key in path:
        data = data[key]
    return data


def main(phase):
    if phase != "execute":
        return 0
    goal = sys.stdin.buffer.read()  # bytes: the goal reaches the command as it came
    argv = list(COMMAND)
    conversation = os.environ.get("ROOK_CONVERSATION")
    if conversation and RESUME_ARGS:
        argv += [arg.replace("{{conversation}}", conversation) for arg in RESUME_ARGS]
    if GOAL_AS_ARGUMENT:  # the same bytes as an argument (os.fsdecode keeps any byte)
        text = os.fsdecode(goal)
        if "\\0" in text:  # the operating system ends an argument at a NUL byte
            sys.stderr.write(
                "the goal holds a NUL byte (\\\\0), which no command-line argument can "
                "carry: take it out of the scenario's goal, or give the command the goal "
                "on its standard input (GOAL_AS_ARGUMENT = False) if it reads it there\\n"
            )
            return 1
        argv += ["--", text] if text.startswith("-") else [text]  # a goal is no option
        goal = b""
    try:
        done = subprocess.run(argv, input=goal, capture_output=True)
    except (OSError, ValueError) as exc:  # gone; as an argument: too long, or holding a NUL
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        here = os.path.relpath(__file__)  # the workspace: where hooks run
        if isinstance(exc, PermissionError):  # a script that lost its run bit, say
            hint = f" (chmod +x {{argv[0]}}, or put its interpreter before it in COMMAND in {{here}})"
        elif isinstance(exc, FileNotFoundError):
            hint = f" (not installed, moved or renamed? correct COMMAND in {{here}})"
        elif GOAL_AS_ARGUMENT:
            hint = " (the goal is its last argument: GOAL_AS_ARGUMENT)"
        else:
            hint = ""
        sys.stderr.write(f"cannot run {{argv[0]}}: {{why}}{{hint}}\\n")
        return 1
    sys.stderr.buffer.write(done.stderr)
    if done.returncode != 0:
        sys.stderr.write(f"{{argv[0]}} exited with code {{done.returncode}}\\n")
        return 1
    # bytes that are not UTF-8 become U+FFFD, as Rook reads a hook's output
    text = done.stdout.decode("utf-8", "replace").strip()
    answer = {{"output": text}}
    if ANSWER is not None or USAGE or SESSION:
        if JSON_LINES:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
        if ANSWER is not None:
            answer["output"] = dig(data, ANSWER)
        if USAGE:
            answer["usage"] = {{k: dig(data, path) for k, path in USAGE.items()}}
        if SESSION:
            answer["conversation" if RESUME_ARGS else "session_id"] = dig(data, SESSION)
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
'''


def command_script(
    command_code: str,
    shown: str,
    origin: str,
    answer: list[Any] | None = None,
    usage: dict[str, list[Any]] | None = None,
    session: list[Any] | None = None,
    resume: list[str] | None = None,
    goal_argument: bool = False,
    json_lines: bool = False,
) -> str:
    """The hook script's text; ``command_code`` is the Python list expression to run."""
    return TEMPLATE.format(
        shown=shown.replace('"""', "'''"),
        mark=MARK,
        origin=origin,
        command=command_code,
        answer=answer,
        usage=usage,
        session=session,
        resume=resume or [],
        goal_argument=goal_argument,
        json_lines=json_lines,
    )


SCRIPT_REFERENCE = {
    "": '"${{{var}}}"',
    '"': "${{{var}}}",
    "'": "'\"${{{var}}}\"'",
    "$'": "'\"${{{var}}}\"$'",
}
"""A variable in a shell's script (``bash -c``) in place of a secret, by how the
shell reads that place (unquoted, in '...', "..." or $'...'): the value is never
written into the script, so a quote, space or ``$`` in it is read as it is."""


def move_secrets(argv: list[str], request: AuthorRequest) -> tuple[list[str], str, str, list[str]]:
    """Move the secrets in a command line to ``env`` references, as the cURL author
    does (:func:`rook_core.credentials.command_secrets` finds them).

    ``VAR=secret`` before the program (or after ``env``) becomes the ``env``
    variable ``VAR``, which the command then inherits from the environment;
    any other secret (``--api-key X``, ``-H 'Authorization: Bearer X'``, a
    key-shaped word, a password in a URL, curl's ``-u user:password``) becomes
    ``<AGENT>_<KIND>`` and the hook script reads it with ``os.environ``; in a
    shell's script (``bash -c '...'``) the script refers to the variable
    (:data:`SCRIPT_REFERENCE`), which the shell inherits. Returns the words that stay (with
    ``$VAR`` where a secret was, to check and show), the Python expression
    the script runs, the command as shown, and notes.
    """
    from rook_core.credentials import command_secrets, join, secret_kind

    if argv and ASSIGNMENT.fullmatch(argv[0]):
        argv = ["env", *argv]  # VAR=value program ...: run as a shell would
    found = command_secrets(argv)
    if not found:
        return argv, repr(argv), join(argv), []
    program = program_label(argv)
    secrets = request.secrets
    by_word: dict[int, list[tuple[int, int, str, str | None]]] = {}
    dropped: set[int] = set()
    notes: list[str] = []
    for index, f in found:
        if f.purpose == "environment variable":
            var = secrets.add(f.name, f"{f.name} for {program}", f.value, variable=f.name)
            if var == f.name:
                dropped.add(index)  # the command inherits it from the environment
                notes.append(f"the command gets {var} from the environment (no longer inline)")
                continue
        else:
            where = {
                "option": f"the --{f.name} option",
                "header": f"the {f.name} header",
                "password": "the password in the URL",
                "query parameter": f"the {f.name} parameter of the URL",
                "assignment": f"{f.name}=",
                "user": "the password in -u/--user"
                if f.name == "password"
                else "the user in -u/--user (its password empty)",
            }.get(f.purpose, "a key-shaped argument")
            given = program_label(list(f.command)) if f.command else program  # bash -c 'curl'
            var = secrets.add(secret_kind(f.name or "key"), f"{where} of {given}", f.value)
        by_word.setdefault(index, []).append((f.start, f.end, var, f.quoting))
    words: list[str] = []
    codes: list[str] = []
    for i, word in enumerate(argv):
        if i in dropped:
            continue
        parts: list[str] = []  # Python expressions
        text, shown_word, pos = "", "", 0  # text: what is written as it is
        for start, end, var, quoting in sorted(by_word.get(i, [])):
            text += word[pos:start]
            shown_word += word[pos:start]
            if quoting is None:  # a word of the command: the value, from the environment
                if text:
                    parts.append(repr(text))
                parts.append(f"os.environ[{var!r}]")
                text = ""
                shown_word += f'"${var}"'
            else:  # in a shell's script: the shell reads the variable, whatever it holds
                reference = SCRIPT_REFERENCE[quoting].format(var=var)
                if quoting == "'" and word[start - 1 : start] == "'" and text.endswith("'"):
                    text, shown_word, reference = text[:-1], shown_word[:-1], reference[1:]
                if quoting == "'" and word[end : end + 1] == "'":  # not '"$X"'' but '"$X"
                    reference, end = reference[:-1], end + 1
                text += reference
                shown_word += reference
            pos = end
        text += word[pos:]
        if text or not parts:
            parts.append(repr(text))
        words.append(shown_word + word[pos:])
        codes.append(" + ".join(parts))
    if len(words) > 1 and words[0] == "env" and not ASSIGNMENT.fullmatch(words[1]):
        if not words[1].startswith("-"):
            words, codes = words[1:], codes[1:]  # nothing left for env to set
    return words, "[" + ", ".join(codes) + "]", join(words), notes


INTERPRETERS = re.compile(r"(python[0-9.]*|node|deno|bun|bash|sh|zsh|ruby|perl|php|npx|uvx?)")


def program_label(argv: list[str]) -> str:
    """How purposes name the command: its program (``claude``), with the script an
    interpreter runs (``python3 agent.py``)."""
    words = [w for w in argv if not ASSIGNMENT.fullmatch(w) and PurePath(w).name != "env"]
    if not words:
        return "the command"
    name = PurePath(words[0]).name
    if INTERPRETERS.fullmatch(name) and len(words) > 1 and not words[1].startswith("-"):
        return f"{name} {PurePath(words[1]).name}"
    return name


def check_program(argv: list[str], agent: Any) -> None:
    """The command's program must exist (on PATH, or a path in the workspace)."""
    program = argv[0]
    if "/" in program:
        path = user_path(program)
        if not path.is_absolute():
            path = agent.workspace / path
        if path.is_file() and os.access(path, os.X_OK):
            return
        if path.is_dir():
            raise ConfigError(f"--command: {program} is a directory, not a program")
        if path.exists() and not path.is_file():  # reading a FIFO's first line would wait
            raise ConfigError(
                f"--command: {program} is not a regular file (a pipe, a socket or a device), "
                "not a program"
            )
        if path.exists():
            raise ConfigError(
                f"--command: {program} is not executable; chmod +x {program}, or name its "
                f"interpreter first (--command '{_interpreter(path)} {program}')"
            )
        raise ConfigError(
            f"--command: {program} not found in the workspace {agent.workspace} (the command "
            f"runs there){_from_here(program, agent.workspace)}"
        )
    if shutil.which(program) is None:
        raise ConfigError(f"--command: {program!r} is not installed (not on PATH)")


def _interpreter(path: Path) -> str:
    """The program to name before a script without the run bit: its ``#!`` line's
    (``#!/usr/bin/env node``: node), else its extension's, else python3."""
    try:
        with path.open("rb") as f:
            first = f.readline(256).decode("utf-8", errors="replace")
    except OSError:
        first = ""
    words = first[2:].split() if first.startswith("#!") else []
    if words and PurePath(words[0]).name == "env" and len(words) > 1:
        words = words[1:]
    if words and not words[0].startswith("-"):
        return PurePath(words[0]).name
    program = {".sh": "bash", ".bash": "bash", ".mjs": "node", ".js": "node", ".cjs": "node"}
    return program.get(path.suffix.lower(), "python3")


def check_script(argv: list[str], agent: Any) -> None:
    """The script an interpreter runs (``python3 ../agent.py``), a relative path typed
    in a folder below the workspace: found from there, not from the workspace the
    command runs in, it is refused with the path to write (like a program path)."""
    name = PurePath(argv[0]).name
    if not INTERPRETERS.fullmatch(name) or name in ("npx", "uv", "uvx") or len(argv) < 2:
        return
    script = argv[1]
    if script.startswith("-") or user_path(script).is_absolute():
        return
    if (agent.workspace / user_path(script)).exists():
        return
    here = _from_here(script, agent.workspace)
    if here:
        raise ConfigError(
            f"--command: {script} not found in the workspace {agent.workspace} (the command "
            f"runs there){here}"
        )


def _from_here(program: str, workspace: Path) -> str:
    """A program path typed in a folder below (or beside) the workspace: where the
    user meant it, said as the command must write it, or nothing."""
    here = Path.cwd() / user_path(program)
    if user_path(program).is_absolute() or not here.is_file():
        return ""
    try:
        return (
            "; it is there from the current directory: write its path from the workspace, "
            f"{here.resolve().relative_to(workspace.resolve())}"
        )
    except ValueError:
        return (
            f"; it is there from the current directory: write its absolute path, {here.resolve()}"
        )


def json_fields(draft: Draft, obs: Observation) -> Draft | None:
    """When the command printed JSON: take the answer, usage and session id from it."""
    st = draft.state
    if not obs.ok or st.get("json_read") or obs.answer is None:
        return None
    lines = json_lines(obs.answer)
    try:
        data = json.loads(obs.answer) if lines is None else lines
    except ValueError:
        return None
    if not isinstance(data, (dict, list)):
        return None
    # JSON Lines: each place in the last line that has one, as the script reads it
    events = [data] if lines is None else lines[::-1]
    answer = next((a for a in (find_answer(e, obs.goal) for e in events) if a), None)
    if answer is None:
        return None
    usage = next((u for u in map(find_usage, events) if u), None)
    session = next((c for c in map(find_conversation, events) if c), None)
    new = draft.copy()
    new.state.update(
        json_read=True,
        json_lines=lines is not None,
        answer=list(answer),
        usage={k: list(v) for k, v in usage.items()} if usage else None,
        session=list(session) if session else None,
    )
    new.files = {
        st["script"]: command_script(
            st["command_code"],
            st["shown"],
            st["origin"],
            new.state["answer"],
            new.state["usage"],
            new.state["session"],
            goal_argument=bool(st.get("goal_argument")),
            json_lines=lines is not None,
        )
    }
    shown = ".".join(str(p) for p in answer) or "(whole text)"
    new.changes.append(
        f"the command prints JSON: the answer is taken from {shown}"
        if lines is None
        else f"the command prints JSON Lines: the answer is taken from {shown}, in the last "
        "line that has it"
    )
    if usage:
        new.changes.append("it reports token usage: the script passes it on as usage")
    if session:
        sid = ".".join(str(p) for p in session)
        new.changes.append(f"it reports a session id ({sid}): kept as evidence (session_id)")
        new.notes.append(
            f"to test conversations of several turns, set RESUME_ARGS in {st['script']} to the "
            'arguments that continue a session (e.g. ["--resume", "{conversation}"]); '
            "the id then becomes the conversation handle"
        )
    return new


def json_lines(text: str) -> list[Any] | None:
    """The events of a command that prints JSON Lines (two or more lines, each one
    JSON object), as ``claude -p --output-format stream-json`` does; None otherwise."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    try:
        events = [json.loads(line) for line in lines]
    except ValueError:
        return None
    return events if all(isinstance(e, dict) for e in events) else None


_USAGE = re.compile(r"\busage\b|\bargument|\bmissing\b|\brequired\b", re.I)


def command_failed(obs: Observation) -> tuple[str, str] | None:
    """The command's exit code and the execute hook's standard error, when the
    probe failed because the command did (the script's own last line, ``CMD
    exited with code N``); None when it passed or the script itself failed."""
    execute = next((h for h in obs.hooks if h.get("phase") == "execute"), None)
    if obs.ok or execute is None:
        return None
    stderr = str(execute.get("stderr") or "")
    found = re.search(r"exited with code (-?\d+)\n?$", stderr)
    return None if found is None else (found.group(1), stderr)


def usage_error(code: str, stderr: str) -> bool:
    """Whether a command's failure reads as a usage error: exit 2 (the usual code of
    one) or a usage message, as a command wanting its prompt as an argument gives."""
    return code == "2" or _USAGE.search(stderr) is not None


def goal_as_argument(draft: Draft, obs: Observation) -> Draft | None:
    """When the command refused to run with the goal on its standard input as a
    command wanting its prompt as an argument does (exit 2, the usual code of a
    usage error, or a usage message on stderr): the goal as its last argument;
    when that fails too, back to standard input (tried once each)."""
    st = draft.state
    failed = None if st.get("json_read") else command_failed(obs)
    if failed is None:
        return None
    code, stderr = failed
    new = draft.copy()
    if st.get("goal_argument"):
        new.state["goal_argument"] = False
        new.changes.append(
            "it failed with the goal as its last argument too: the goal goes on its "
            "standard input again"
        )
    elif not st.get("argument_tried") and usage_error(code, stderr):
        new.state.update(goal_argument=True, argument_tried=True)
        new.changes.append(
            f"the command refused the goal on its standard input (exited with code "
            f"{code}): it gets the goal as its last argument now"
        )
    else:
        return None
    new.files = {
        st["script"]: command_script(
            st["command_code"],
            st["shown"],
            st["origin"],
            goal_argument=new.state["goal_argument"],
        )
    }
    return new


_GOAL_WAY = re.compile(r"^GOAL_AS_ARGUMENT = (True|False)$", re.M)


def switch_goal_way(draft: Draft, obs: Observation, agent: Any) -> Draft | None:
    """The existing execute hook script, when ``rook profile add`` wrote it (its mark
    and its ``GOAL_AS_ARGUMENT`` line) and its command failed with a usage error
    (exit 2 or a usage message): that line flipped, nothing else of the script
    changed (it may hold the user's edits). Tried once; a second failure is the
    command's own."""
    failed = None if draft.state.get("goal_way_switched") else command_failed(obs)
    if failed is None or not usage_error(*failed):
        return None
    entry = draft.hooks.get("execute")
    path = entry.get("script") if isinstance(entry, dict) else entry
    if not isinstance(path, str):
        return None
    key = draft.file_for(path, agent)  # ./scripts/x-hook.py is scripts/x-hook.py
    text = draft.files.get(key) if key is not None else None
    if key is None or text is None or MARK not in text:
        return None
    line = _GOAL_WAY.search(text)
    if line is None:
        return None
    to_argument = line.group(1) == "False"
    new = draft.copy()
    new.state["goal_way_switched"] = True
    new.files[key] = text[: line.start()] + f"GOAL_AS_ARGUMENT = {to_argument}" + text[line.end() :]
    code = failed[0]
    new.changes.append(
        f"the command refused the goal on its standard input (exited with code {code}): "
        f"{path} gives it the goal as its last argument now (GOAL_AS_ARGUMENT = True)"
        if to_argument
        else f"the command refused the goal as its last argument (exited with code {code}): "
        f"{path} gives it the goal on its standard input now (GOAL_AS_ARGUMENT = False)"
    )
    return new


class CommandAuthor:
    """``--command CMD``: a hook script that runs CMD with the goal on standard input."""

    fallback = False
    options: tuple[str, ...] = ()

    def detect(self, source: Source) -> float:
        return 1.0 if source.kind == "command" else 0.0

    def suggest_name(self, source: Source) -> str | None:
        return source.program_name()

    def write(self, request: AuthorRequest) -> Draft:
        from rook_core.authoring import Draft

        try:
            argv = shlex.split(request.source.text)
        except ValueError as exc:
            raise ConfigError(f"--command: cannot split the command line: {exc}") from None
        if not argv:
            raise ConfigError("--command: give the command line, e.g. --command 'claude -p'")
        argv, code, shown, notes = move_secrets(argv, request)
        check_program(argv, request.agent)
        check_script(argv, request.agent)
        script = request.script_path(".py")
        state = {
            "script": script,
            "command_code": code,
            "shown": shown,
            "origin": "--command",
        }
        text = command_script(state["command_code"], shown, state["origin"])
        return Draft(
            hooks={"execute": script},
            files={script: text},
            state=state,
            notes=[f"hook script: {script} (runs {shown})", *notes],
        )

    def revise(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        if "command_code" not in draft.state:
            return None
        return json_fields(draft, observation) or goal_as_argument(draft, observation)

    def repair(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        """``rook profile fix``: a hook script ``rook profile add`` wrote whose command
        now refuses the goal the way the script gives it (a usage error) gets it the
        other way, as :func:`goal_as_argument` corrects a new one; any other failure of
        the command is its own, which no rewrite of the script fixes."""
        return switch_goal_way(draft, observation, request.agent)


def interpreter_code(path: str, real: Path | None = None) -> str:
    """The Python expression that runs the script at ``path`` (``real``: where it is
    now, when ``path`` is relative to the workspace) as a command. An executable
    runs itself; a relative path is made explicit (``desk.sh`` -> ``./desk.sh``), as
    a program named without a slash would be looked up on PATH instead."""
    if os.access(real or path, os.X_OK):
        if not PurePath(path).is_absolute() and "/" not in path and os.sep not in path:
            path = "./" + path
        return json.dumps([path])
    ext = PurePath(path).suffix.lower()
    if ext == ".py":
        return f"[sys.executable, {path!r}]"
    program = {".sh": "bash", ".bash": "bash", ".mjs": "node", ".js": "node", ".cjs": "node"}
    return repr([program.get(ext, "sh"), path])
