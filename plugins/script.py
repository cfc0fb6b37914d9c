"""Built-in transport: hook scripts run as subprocesses (the reference contract).

A profile's hook entry ``execute: scripts/agent.mjs`` (or ``{script: PATH}``)
runs ``PATH <phase>`` with the goal on standard input in execute only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rook_core.errors import ConfigError
from rook_core.hookio import hook_result
from rook_core.hookspecs import hookimpl
from rook_core.process import NEVER_EXITED_HELP, STOPPED_HELP, run_process
from rook_core.redact import current
from rook_core.transports import (
    SCRIPT_INTERPRETERS,
    SHEBANGS,
    TransportSpec,
    elsewhere_on_path,
    env_program,
    hook_search_path,
    off_hook_path,
    phase_hooks,
    saves_nothing,
    shebang_advice,
    windows_line_endings,
)

KEY = "script"


def load_config(value: Any) -> dict[str, Any]:
    if not isinstance(value, str) or not value.strip():
        from marshmallow import ValidationError  # only an invalid entry needs it

        raise ValidationError("must be the path of a hook script")
    return {"path": value}


def _head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(1024)
    except OSError:
        return None


def shebang(path: Path, head: bytes | None = None) -> tuple[str, str] | None:
    """The interpreter and its one optional argument from the ``#!`` line of
    ``path`` (as the kernel reads them), or ``None`` when it has none."""
    head = _head(path) if head is None else head
    if head is None or not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "surrogateescape").strip(" \t")
    words = line.replace("\t", " ").split(" ", 1)  # not \r: the kernel keeps it too
    return words[0], (words[1] if len(words) > 1 else "").strip(" \t")


def interpreter_problem(
    path: Path, cwd: Path, search_path: str | None = None, failed: bool = False
) -> str | None:
    """Why the ``#!`` interpreter of the executable script ``path`` cannot start,
    naming it, or why a text script with no ``#!`` line cannot start at all
    (the kernel refuses it: ``Exec format error``), or why a program cannot
    (:func:`rook_core.execformat.cannot_start`: one for another machine, say);
    ``None`` when it can. An
    absolute (or ``cwd``-relative) interpreter must be an executable file; for
    ``/usr/bin/env NAME`` (options and ``-S`` allowed), NAME must be on PATH."""
    head = _head(path)
    found = shebang(path, head)
    if found is None:
        if head is not None and head.startswith(b"\xef\xbb\xbf#!"):  # an editor's UTF-8 BOM
            return (
                f"its #! line comes after a byte order mark (U+FEFF), which hides it from "
                f"the system ({path}); save the file as UTF-8 without a BOM "
                f"(sed -i '1s/^\\xEF\\xBB\\xBF//' {path})"
            )
        if head is not None and b"\0" not in head:  # text (a program holds NUL bytes)
            what = "is empty" if not head.strip() else "has no #! line"
            return (
                f"it is executable but {what}, so the system cannot start it ({path}); "
                + shebang_advice(path.suffix)
                + (  # without the run bit, only a known extension picks an interpreter
                    ", or chmod -x it so Rook picks the interpreter by its extension"
                    if path.suffix.lower() in SCRIPT_INTERPRETERS
                    else ""
                )
            )
        if head is not None:  # a program (it holds NUL bytes): one for this machine?
            from rook_core.execformat import cannot_start

            return cannot_start(path, head, failed)
        return None
    interpreter, arg = found
    if not interpreter:
        return f"its #! line names no interpreter ({path})"
    program = Path(interpreter) if interpreter.startswith("/") else cwd / interpreter
    if (arg or interpreter).endswith("\r"):
        return (
            f"its #! line ends with a carriage return, which becomes part of the "
            f"interpreter's name ({(interpreter + ' ' + arg).strip(' ')!r}): Windows line "
            "endings; convert the file to LF"
        )
    if not (program.is_file() and os.access(program, os.X_OK)):
        why = "is not executable" if program.exists() else "does not exist"
        return f"its interpreter {interpreter} (from its #! line) {why}"
    if program.name != "env":
        return None
    if _unsplit(arg):
        return (
            f"its #! line ({interpreter} {arg}) gives env {arg!r} as one argument (Linux "
            "does not split a #! line), which env cannot start: it fails, or starts the "
            f"script itself again and again; write #!{interpreter} -S {arg}"
        )
    name = env_program(arg)
    if name is None:
        return f"its #! line ({interpreter} {arg}) names no program for env to start".replace(
            " )", ")"
        )
    if "/" in name:
        target = Path(name) if name.startswith("/") else cwd / name
        if target.is_file() and os.access(target, os.X_OK):
            return None
        return f"its interpreter {name} (from its #! line: {interpreter} {arg}) does not exist"
    import shutil

    path_value = hook_search_path() if search_path is None else search_path
    if shutil.which(name, path=path_value) is not None:
        return None
    elsewhere = elsewhere_on_path(name) if search_path is None else None
    return f"its interpreter {name!r} (from its #! line: {interpreter} {arg}) " + (
        off_hook_path(elsewhere) if elsewhere else "is not installed (not on PATH)"
    )


def _unsplit(arg: str) -> bool:
    """Whether ``/usr/bin/env ARG`` on a ``#!`` line gets several words as one
    argument: on Linux the kernel passes all that follows the interpreter as
    one word, which only env's ``-S`` (``-vS``, ``--split-string=``) splits."""
    import re

    return (
        sys.platform.startswith("linux")
        and len(arg.split()) > 1
        and re.match(r"-[iv0]*S|--split-string=", arg) is None
    )


def interpreter_argv(path: Path, cwd: Path | None = None) -> list[str]:
    """Executable scripts run directly (their ``#!`` interpreter checked);
    others by extension."""
    if os.access(path, os.X_OK):
        problem = interpreter_problem(path, cwd or path.parent)
        if problem:
            raise ConfigError(f"hook script {path} cannot start: {problem}")
        return [str(path)]
    suffix = path.suffix.lower()
    if suffix not in SCRIPT_INTERPRETERS:
        fix = (  # the run bit alone would be refused next: the system needs a #! line
            "chmod +x it"
            if shebang(path) is not None
            else "give it a #! line naming its interpreter "
            f"({SHEBANGS.get(suffix, '#!/usr/bin/env INTERPRETER')}) and chmod +x it"
        )
        raise ConfigError(
            f"hook script {path} is not executable and its extension is not one Rook knows "
            f"(.mjs .js .cjs run with node, .py with Python, .sh with bash); {fix}"
        )
    if not os.access(path, os.R_OK):  # its interpreter would fail on every call
        raise ConfigError(
            f"hook script {path} cannot be read: Permission denied; "
            f"its interpreter must read it (chmod +r it)"
        )
    program = SCRIPT_INTERPRETERS[suffix]
    if program is None:
        return [sys.executable, str(path)]
    import shutil  # only a script that is not executable needs it (start-up: 1.4 ms)

    found = shutil.which(program, path=hook_search_path())
    if found is None:
        elsewhere = elsewhere_on_path(program)
        raise ConfigError(
            f"hook script {path} needs {program!r}, which "
            + (off_hook_path(elsewhere) if elsewhere else "is not installed (not on PATH)")
        )
    return [found, str(path)]


def resolve(config: dict[str, Any], agent: Any) -> dict[str, Any]:
    try:
        return _resolve(config, agent)
    except OSError as exc:  # a name too long, a folder Rook may not enter: no system call takes it
        raise ConfigError(unusable("hook script", config["path"], exc)) from None


def unusable(what: str, path: str, exc: OSError) -> str:
    """The message for a ``path`` a profile names that the system refuses to look at,
    naming where it refused (a folder Rook may not enter, the path as tried)."""
    where = (
        f" ({current().head(exc.filename, 200, '...')})" if isinstance(exc.filename, str) else ""
    )
    return (
        f"{what} {current().head(path, 200, '...')!r} cannot be used: {exc.strerror or exc}{where}"
    )


def _resolve(config: dict[str, Any], agent: Any) -> dict[str, Any]:
    candidates = agent.candidates(config["path"])
    for candidate in candidates:
        if candidate.is_file():
            return {**config, "argv": interpreter_argv(candidate.resolve(), agent.workspace)}
    for candidate in candidates:
        if candidate.is_dir():
            raise ConfigError(
                f"hook script {config['path']!r} is a directory ({candidate}); "
                "name the script in it"
            )
        if candidate.exists():  # a FIFO, a device: there, but never a script
            raise ConfigError(
                f"hook script {config['path']!r} is not a regular file (a pipe, a socket or a "
                f"device: {candidate}); name a script"
            )
    tried = " and ".join(str(c) for c in candidates)
    hint = ""
    if len(config["path"].split()) > 1:  # node scripts/agent.mjs, scripts/agent.sh --fast
        hint = (
            "; it looks like a command line: a script entry names one file, which Rook runs "
            "as PATH <phase> (put the command in a script, or let rook profile add --command "
            "'...' write one)"
        )
    hint = hint or agent.near_script(config["path"])
    raise ConfigError(f"hook script {config['path']!r} not found; tried {tried}{hint}")


async def run_script(call: Any) -> Any:
    argv = [*call.entry.config["argv"], call.phase]
    stdin = (
        call.stdin.encode("utf-8") if call.phase == "execute" and call.stdin is not None else None
    )
    proc = await run_process(
        argv,
        env=call.env,
        stdin=stdin,
        timeout=call.timeout,
        cwd=str(call.run.workspace),
        stdout_cap=call.limits.stdout_bytes,
        stderr_cap=call.limits.stderr_bytes,
        marker=call.marker,
        on_exit=call.on_exit,
    )
    if proc.spawn_error and os.access(argv[0], os.X_OK):
        # the script is there: most likely its #! interpreter is not (any more)
        problem = interpreter_problem(
            Path(argv[0]), Path(call.run.workspace), call.env.get("PATH"), failed=True
        )
        if problem:
            proc.spawn_error = f"{proc.spawn_error}: {problem}"
    result = hook_result(call, proc, required_json=call.phase in ("execute", "collect"))
    if (
        result.status == "failed"
        and len(argv) == 3
        and Path(argv[1]).suffix.lower() == ".sh"
        and windows_line_endings(argv[1])  # run by bash: its own words would not say why
    ):
        name = Path(argv[1]).name  # first: the table's reason column shows the start
        result.diagnosis = (
            f"{name} has Windows line endings (\\r\\n), which bash cannot run: convert "
            f"it to LF (dos2unix {argv[1]}); {result.diagnosis}"
        )
    elif result.status == "timeout" and proc.was_stopped:  # no setting helps
        result.diagnosis += f"; {STOPPED_HELP}"
    elif result.status == "timeout" and _printed_an_answer(proc.stdout):  # nor here
        result.diagnosis += f"; {NEVER_EXITED_HELP}"
    # which setting to raise, as http: and ruhroh: say
    elif result.status == "timeout":
        who = "the judge" if call.run.judge else "the agent"  # a judge profile's hook: its own
        if call.timeout < call.entry.timeout:  # a scenario's timeout_seconds caps execute
            result.diagnosis += (
                f"; the scenario's timeout_seconds ({call.timeout:g} s) ran out first: "
                f"raise it if {who} is this slow"
            )
        else:
            result.diagnosis += (
                f"; raise timeout_seconds on the hook entry if {who} is this slow"
                + call.entry.floor_note()
            )
    elif (
        result.status == "failed"
        and call.phase == "execute"
        and result.exit_code == 1
        and not result.stdout.strip()
        and not result.stderr.strip()
        and not (call.stdin or "").endswith("\n")
        and _reads_under_set_e(argv[-2])
    ):
        result.diagnosis += (
            f"; if {Path(argv[-2]).name} stopped at its read: the goal comes with no newline "
            "at its end, so read returns 1 there, which set -e makes an exit; read the goal "
            "with goal=$(cat)"
        )
    return result


def _printed_an_answer(stdout: bytes) -> bool:
    """Whether a timed-out hook's stdout holds one whole JSON object (its answer,
    printed before something kept it from exiting). Read only at a timeout."""
    from rook_core.hookio import loads

    try:
        return isinstance(loads(stdout.decode("utf-8", "replace").strip().lstrip("\ufeff")), dict)
    except (ValueError, RecursionError):
        return False


def _reads_under_set_e(path: str) -> bool:
    """Whether a shell script (by its ``#!`` line or ``.sh``) stops on errors
    (``set -e``, ``set -euo pipefail``, ``#!/bin/bash -e``) and uses ``read``: a
    ``read`` of the goal, which has no newline at its end, returns 1 and stops it
    in silence. Read only after such a script failed that way."""
    import re

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(65536)
    except OSError:
        return False
    first = text.split("\n", 1)[0]
    shell = path.lower().endswith(".sh") or re.match(r"#!.*\b(ba|z|k|da)?sh\b", first)
    stops = re.search(r"^\s*set\s+-[a-zA-Z]*e", text, re.MULTILINE) or re.match(
        r"#!\S+(\s+\S*sh)?\s+-[a-zA-Z]*e", first
    )
    return bool(shell and stops and re.search(r"(^|[\s;|&(])read\b", text))


@hookimpl
def rook_register_transports(register: Any) -> None:
    register(
        TransportSpec(
            key=KEY,
            handles_timeout=True,
            load_config=load_config,
            resolve=resolve,
            saved_names=saves_nothing,  # a script keeps its own state (ROOK_RUN_STATE_DIR)
            description="run a hook script as a subprocess (phase as argument, goal on stdin)",
        )
    )


(
    rook_auth_prepare,
    rook_session_open,
    rook_transport_execute,
    rook_session_close,
    rook_evidence_collect,
) = phase_hooks(KEY, run_script)
