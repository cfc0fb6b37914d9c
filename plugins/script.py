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
from rook_core.process import run_process
from rook_core.transports import TransportSpec, phase_hooks

KEY = "script"
INTERPRETERS = {".mjs": "node", ".js": "node", ".cjs": "node", ".sh": "bash", ".py": None}


def load_config(value: Any) -> dict[str, Any]:
    if not isinstance(value, str) or not value.strip():
        from marshmallow import ValidationError  # only an invalid entry needs it

        raise ValidationError("must be the path of a hook script")
    return {"path": value}


def interpreter_argv(path: Path) -> list[str]:
    """Executable scripts run directly; others by extension."""
    if os.access(path, os.X_OK):
        return [str(path)]
    suffix = path.suffix.lower()
    if suffix not in INTERPRETERS:
        raise ConfigError(
            f"hook script {path} is not executable and its extension is not one Rook knows "
            "(.mjs .js .cjs run with node, .py with Python, .sh with bash); chmod +x it"
        )
    program = INTERPRETERS[suffix]
    if program is None:
        return [sys.executable, str(path)]
    import shutil  # only a script that is not executable needs it (start-up: 1.4 ms)

    found = shutil.which(program)
    if found is None:
        raise ConfigError(
            f"hook script {path} needs {program!r}, which is not installed (not on PATH)"
        )
    return [found, str(path)]


def resolve(config: dict[str, Any], agent: Any) -> dict[str, Any]:
    raw = Path(config["path"]).expanduser()
    candidates = [raw] if raw.is_absolute() else [agent.workspace / raw, agent.dir / raw]
    for candidate in candidates:
        if candidate.is_file():
            return {**config, "argv": interpreter_argv(candidate.resolve())}
    tried = " and ".join(str(c) for c in candidates)
    raise ConfigError(f"hook script {config['path']!r} not found; tried {tried}")


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
    return hook_result(call, proc, required_json=call.phase in ("execute", "collect"))


@hookimpl
def rook_register_transports(register: Any) -> None:
    register(
        TransportSpec(
            key=KEY,
            load_config=load_config,
            resolve=resolve,
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
