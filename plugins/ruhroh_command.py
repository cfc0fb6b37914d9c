"""The connector base class and the built-in ``ruhroh-command`` connector.

Every run registers :class:`CommandConnector`, so this module imports nothing
beyond the standard library at import time: what running a wrapper needs (the
protocol, the subprocess machinery) is imported by the methods that use it.
Connector authors import :class:`Connector` and the types its methods get from
:mod:`rook_plugins.ruhroh_connector`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rook_core.hookio import overflowed, tail
from rook_core.process import STOPPED_HELP

if TYPE_CHECKING:
    from .ruhroh_connector import RunInfo, Session, TurnInput
    from .ruhroh_protocol import IterationResult

NODE_LOSS_BYTES = 32768
"""Printed this much, a Node wrapper may have had writes still queued for the pipe
(64 KiB) when process.exit() ended it: they are lost."""


def _node(argv: list[str]) -> bool:
    """Whether the wrapper runs in Node (``node w.js``, or a ``.mjs`` run by its ``#!``)."""
    return any(
        Path(a).name in ("node", "nodejs") or Path(a).suffix.lower() in (".mjs", ".js", ".cjs")
        for a in argv[:3]
    )


def _ended(returncode: int) -> str:
    """How a wrapper that failed ended: ``exited with code 3``, ``was killed by signal 9``."""
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


class Connector:
    """Base class for connectors with the advanced lifecycle (optional to inherit).

    ``name`` is what a profile's ``connector: {name: ...}`` uses; ``continuity``
    is ``native_session``, ``workspace_plus_transcript`` or ``workspace_only``
    (a ``workspace_only`` connector cannot run scenarios of more than one
    turn). The class is instantiated with the entry's options (every key but
    ``name``, ``max_iterations``, ``artifact_max_bytes`` and
    ``workspace_template``) once when the profile is checked, before anything
    runs, and again once per run: raise ``ValueError`` there for bad options,
    and leave I/O to ``prepare``.
    """

    name: str = ""
    continuity: str | None = None
    handles_timeout = False
    """``True`` when ``run_turn`` enforces ``turn.timeout`` itself (killing what it
    started); otherwise Rook stops waiting for it after the timeout."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def prepare(self, run: RunInfo) -> None:
        """Once per run, before the first session: sign in, warm up."""

    def start_session(self, session: Session) -> str | None:
        """Open the agent's session; return its handle (or ``None`` to keep Rook's),
        read as a hook's ``conversation``: a number or an object is its JSON text."""
        return None

    def run_turn(self, session: Session, turn: TurnInput) -> dict[str, Any]:
        """Send ``turn.message``; return a mapping shaped like the Ruhroh result file
        (``status``, ``output``, ``usage``, ``model``, ``artifacts`` ...)."""
        raise NotImplementedError

    def detect_completion(self, session: Session, result: IterationResult) -> str | None:
        """The completion status of one iteration; by default the one reported."""
        return result.status

    def collect_artifacts(self, session: Session) -> dict[str, Any]:
        """Artifacts at the end of the session: ``{name: path}`` or ``{name: {...}}``."""
        return {}

    def cleanup(self, session: Session) -> None:
        """Release the session's resources (always called, also after a failure)."""


class CommandConnector(Connector):
    """A Ruhroh command wrapper, run as is: one process per iteration, the message
    and context in ``RUHROH_*`` variables, the answer in the final JSON line
    and the result file. Its process group is killed on timeout."""

    name = "ruhroh-command"
    handles_timeout = True

    def __init__(self, options: dict[str, Any]) -> None:
        from .ruhroh_protocol import CONTINUITY_LEVELS

        super().__init__(options)
        self.continuity = options.get("continuity")
        if self.continuity is not None and self.continuity not in CONTINUITY_LEVELS:
            raise ValueError(f"continuity must be one of {', '.join(CONTINUITY_LEVELS)}")
        if not options.get("argv"):
            raise ValueError("command is required: the wrapper's command line")
        self.argv = list(options["argv"])
        self.cwd = options.get("cwd_path")

    async def run_turn(self, session: Session, turn: TurnInput) -> IterationResult:  # type: ignore[override]
        from rook_core.hookio import decode
        from rook_core.models import MARKER_KEYS
        from rook_core.process import run_process

        from .ruhroh_protocol import (
            IterationResult,
            ProtocolError,
            final_line_problem,
            merge_fields,
            normalize,
            read_result_file,
            split_final_line,
            status_on_stderr,
        )

        cwd = self.cwd or str(session.workspace)
        result = IterationResult(artifacts_base=Path(cwd))
        if "\0" in turn.message:
            result.failure = "RUHROH_MESSAGE cannot carry a NUL character"
            return result
        proc = await run_process(
            self.argv,
            env=turn.env,
            stdin=None,
            timeout=turn.timeout,
            cwd=cwd,
            stdout_cap=turn.limits.stdout_bytes,
            stderr_cap=turn.limits.stderr_bytes,
            # a daemon it started is found by these at its timeout, as a hook's is
            marker={k: turn.env[k] for k in MARKER_KEYS if k in turn.env},
        )
        result.started, result.ended = proc.started, proc.ended
        result.exit_code = proc.returncode
        # a wrapper stopped from outside (its timeout, a signal) was cut off wherever it
        # was, perhaps in the middle of a secret: its streams end as a cap's do
        stopped = proc.timed_out or (proc.returncode is not None and proc.returncode < 0)
        result.stdout = decode(proc.stdout, 0 if stopped else turn.limits.stdout_bytes)
        result.stderr = decode(proc.stderr, 0 if stopped else turn.limits.stderr_bytes)
        result.notes = list(proc.notes)
        final, transcript = split_final_line(result.stdout)
        unread = False  # a result file Rook could not read (half-written by a killed wrapper?)
        try:
            from_file = read_result_file(turn.result_path, turn.limits.stdout_bytes)
        except ProtocolError as exc:
            from_file, result.failure, unread = None, str(exc), True
        fields, shadowed = merge_fields(final, from_file)
        normalize(fields, transcript, result, shadowed)
        if from_file:  # for the reason of a failure status (the file's wins)
            result.file_fields = frozenset(from_file)
        result.source = "+".join(
            s for s, present in (("result_file", from_file), ("final_line", final)) if present
        )
        stderr = f"; stderr: {tail(result.stderr)}" if result.stderr.strip() else ""
        if proc.spawn_error and not Path(cwd).is_dir():  # not the wrapper: where it runs
            whose = (
                "the agent workspace (RUHROH_WORKSPACE), removed after Rook made it (by an earlier call?)"
                if self.cwd is None
                else "the entry's cwd"
            )
            result.failure = (
                f"could not start the wrapper: its working directory {cwd} does not exist: {whose}"
            )
        elif proc.spawn_error:
            result.failure = f"could not start the wrapper: {proc.spawn_error}"
            if "RUHROH_SESSION_HANDLE holds" in proc.spawn_error:  # as for ROOK_CONVERSATION
                result.failure += (  # the wrapper's, or an open hook's conversation
                    "; return a short sessionHandle (or, when the open hook returned this "
                    "handle, a short conversation from it) and keep the session's state in "
                    "RUHROH_WORKSPACE (kept across the scenario run's turns)"
                )
            elif "RUHROH_MESSAGE holds" in proc.spawn_error:  # turns are checked before a run:
                result.failure += (  # here a judge profile's prompt, which holds the evidence
                    "; a Ruhroh wrapper gets its text in RUHROH_MESSAGE alone, so a text this "
                    "long (a judge profile's prompt: the rubric with the evidence it judges) "
                    "can never reach one: judge with a script hook, which gets the prompt on "
                    "standard input, or an http: entry"
                )
        elif proc.timed_out:
            result.timed_out = True
            paused = f"; {proc.stopped_words}" if proc.was_stopped else ""
            result.failure = (
                f"timed out after {turn.timeout:g} s{paused}; its process group was killed" + stderr
            )
            if proc.was_stopped:  # no setting helps (ruhroh_loop adds none then)
                result.stopped = True
                result.failure += f"; {STOPPED_HELP}"
            elif isinstance(fields.get("status"), str) and fields["status"].strip():
                result.never_exited = True  # nor here
                result.failure += (
                    f"; it had reported its status ({tail(fields['status'], 60)}) but never "
                    "exited: a wrapper exits once it has answered, and no timeout is long "
                    "enough for one that does not (what kept it running: a process it waits "
                    "for, such as an agent CLI left serving; in Node an open timer, socket or "
                    "keep-alive connection, which process.exit() ends)"
                )
        elif proc.overflow:
            cap = (
                turn.limits.stdout_bytes if proc.overflow == "stdout" else turn.limits.stderr_bytes
            )
            result.failure = overflowed(proc, cap, "the wrapper")
        elif result.failure is None and result.status is None:
            given = fields.get("status")
            in_file = bool(from_file and "status" in from_file)
            hidden = (final or {}).get("status") if in_file else None
            if given not in (None, "") or hidden not in (None, ""):
                where = "result file" if in_file else "final line"
                wins = (
                    f" (the result file wins over the final line's {tail(json.dumps(hidden), 100)})"
                    if hidden not in (None, "")
                    else ""
                )
                result.failure = (
                    f"the wrapper's {where} gives status {tail(json.dumps(given), 100)}{wins}: "
                    'a completion status is a string such as "goal_satisfied"'
                )
            elif proc.returncode:
                how = _ended(proc.returncode)
                misplaced = status_on_stderr(result.stderr)
                why = f": {misplaced}" if misplaced else ""
                result.failure = f"the wrapper {how} and reported no status{why}{stderr}"
            else:
                problem = status_on_stderr(result.stderr) or final_line_problem(result.stdout)
                if problem is None and len(proc.stdout) >= NODE_LOSS_BYTES and _node(self.argv):
                    problem = (
                        "a Node program that ends with process.exit() can lose the end of what "
                        "it printed to a pipe, its final line with it (as under any reader: "
                        "node w.mjs | tail): set process.exitCode and let it end, or write the "
                        "result file (RUHROH_RESULT_PATH)"
                    )
                if problem is None and proc.left_running and not from_file:
                    problem = (
                        "it exited while a process it started still ran (a job left in the "
                        "background): a result file that job writes later is never read; "
                        "wait for it before exiting (bash: wait)"
                    )
                result.failure = (
                    "the wrapper reported no completion status: "
                    + (f"{problem}; " if problem else "")
                    + 'expected a final JSON line such as {"status":"goal_satisfied"} or a '
                    f"result file at RUHROH_RESULT_PATH; its last output: "
                    f"{tail(result.stdout, 300)!r}{stderr}"
                )
        elif unread and proc.returncode:  # how it ended: the file may be cut off by it
            result.failure = f"{result.failure}; the wrapper {_ended(proc.returncode)}{stderr}"
        elif proc.returncode and result.status is not None:
            result.notes.append(
                f"the wrapper exited with code {proc.returncode}; its reported status "
                f"{result.status!r} is used"
            )
        return result
