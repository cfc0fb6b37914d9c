"""Connector sessions for one run: prepare once, a workspace and goal file per
scenario run, the ``RUHROH_*`` environment, artifacts and cleanup.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rook_core import process
from rook_core.errors import exception_text
from rook_core.models import HookCall, RunContext
from rook_core.plugins import plugin_failure
from rook_core.redact import current
from rook_core.store import RunStoreError, atomic_write, dumps, read_json

from .ruhroh_connector import Connector, RunInfo, Session, TurnInput
from .ruhroh_protocol import (
    ProtocolError,
    non_finite,
    read_artifacts,
    read_handle,
    redact_result_file,
    sample_seed,
)


class StepError(Exception):
    """A connector method failed; the message is the diagnosis."""


_INLINE = {
    Connector.prepare,
    Connector.start_session,
    Connector.detect_completion,
    Connector.collect_artifacts,
    Connector.cleanup,
}


async def invoke(what: str, method: Callable[..., Any], *args: Any) -> Any:
    """Call a connector method, plain (in a worker thread) or ``async``."""
    try:
        if inspect.iscoroutinefunction(method):
            return await method(*args)
        if getattr(method, "__func__", None) in _INLINE:  # the base class's trivial defaults
            return method(*args)
        value = await asyncio.to_thread(method, *args)
        return await value if inspect.isawaitable(value) else value
    except BaseException as exc:  # sys.exit() in a connector too: its step's error
        if not plugin_failure(exc):
            raise
        raise StepError(f"{what} raised {exception_text(exc)}") from None


def _copy_template(template: str, workspace: Path) -> None:
    """Copy ``workspace_template`` into a scenario run's fresh agent workspace."""
    try:
        shutil.copytree(template, workspace, symlinks=True)
    except shutil.Error as exc:  # some files could not be copied: (src, dst, why) each
        failed = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        whys = [f"{why}" for _src, _dst, why in failed[:3]] or [str(exc)]
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        raise StepError(
            f"workspace_template {template}: cannot copy it into the agent workspace: "
            + "; ".join(whys)
            + more
        ) from None
    except OSError as exc:
        raise StepError(
            f"workspace_template {template}: cannot copy it into the agent workspace: {exc}"
        ) from None


SESSION_FILE = "session.json"


def _went_on(base: Path) -> dict[str, int] | None:
    """What the earlier turns of a resumed scenario run left (:func:`remember`)."""
    try:
        data = read_json(base / SESSION_FILE)
    except RunStoreError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("iteration"), int):
        return None
    went_on = {"iteration": data["iteration"]}
    if isinstance(data.get("sample_seed"), int):
        went_on["sample_seed"] = data["sample_seed"]
    return went_on


def _remove(path: Path) -> None:
    """``path`` removed, whatever is there: a link a wrapper put in place of a folder
    is removed itself, never followed (``shutil.rmtree`` refuses one)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _drop_cut_results(folder: Path, turn: int) -> None:
    """What the calls of ``turn`` (which a resume goes on at) and of later turns left in
    the results ``folder`` (``turn-T-iteration-I-attempt-A.json``; a cut call's, even a
    directory at its path), removed: every RUHROH_RESULT_PATH is new. A folder that is
    none (a link) is left to :func:`ready_for_call`, which makes it anew."""
    if folder.is_symlink() or not folder.is_dir():
        return
    for entry in folder.iterdir():
        parts = entry.name.split("-", 2)
        if len(parts) == 3 and parts[0] == "turn" and parts[1].isdigit() and int(parts[1]) >= turn:
            _remove(entry)


def ready_for_call(session: Session, results: Path) -> None:
    """The goal file and the result file's folder as Rook made them, for every call:
    they are Rook's, not the agent's, and an earlier call may have removed or
    replaced them. A link put in their place is removed, never written through."""
    goal = session.goal_path
    if goal.is_dir() and not goal.is_symlink():
        shutil.rmtree(goal)
    else:
        goal.unlink(missing_ok=True)
    with open(goal, "x", encoding="utf-8", newline="") as fh:
        fh.write(session.goal)
    if results.is_symlink() or (results.exists() and not results.is_dir()):
        results.unlink()
    results.mkdir(parents=True, exist_ok=True)


def _redact_late(folders: dict[Path, tuple[Any, int]]) -> None:
    """Every result file in ``folders`` redacted (one over the cap removed), at the end
    of the run: also one a wrapper's job wrote after Rook had read it. So is the
    goal file beside them (a goal may hold a secret's value, which the wrapper
    read whole): Rook writes it anew before every call, a resumed run's too."""
    for folder, (redactor, cap) in folders.items():
        _redact_goal(folder.parent / "goal.txt", redactor)
        for path in folder.glob("*.json"):
            try:
                redact_result_file(path, redactor, cap)
            except Exception:  # as after a call: never keep one that could not be redacted
                try:
                    path.unlink(missing_ok=True)
                except OSError:
                    pass


def _redact_goal(path: Path, redactor: Any) -> None:
    """The goal file at ``path`` redacted in place (removed when it cannot be); a
    link or anything but a regular file put there is left alone, never followed."""
    try:
        if path.is_symlink() or not path.is_file():
            return
        text = path.read_text(encoding="utf-8")
        clean = redactor.text(text)
        if clean != text:
            atomic_write(path, clean)
    except Exception:  # never keep one that could not be redacted
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass


def redact_state(state: Path, redactor: Any, cap: int) -> None:
    """The result files in a scenario run's ``state`` redacted: a scenario run's state
    come back from where it ran (a Dask worker), which may hold one a wrapper's job
    wrote after Rook read it there (that worker's copy is redacted at the run's end)."""
    folder = state / "ruhroh" / "results"
    if redactor and folder.is_dir() and not folder.is_symlink():
        _redact_late({folder: (redactor, cap)})


def remember(session: Session) -> None:
    """After a turn the conversation goes on from: how many iterations have run,
    and the sample seed, for a resumed run that goes on at the next turn (with
    the conversation's seed, whatever ``RUHROH_RUN_SEED`` the resume has)."""
    state = {"iteration": session.iteration, "sample_seed": session.sample_seed}
    try:
        atomic_write(session.dir / SESSION_FILE, dumps(state))
    except (OSError, RunStoreError):  # a convenience for a resume, which then starts afresh
        pass


class Runtime:
    """One run's connectors (one instance per distinct entry) and open sessions."""

    def __init__(self, run: RunContext, build: Callable[[dict[str, Any]], Any]) -> None:
        self.run = run
        self.build = build
        self.info = RunInfo(
            id=run.id,
            dir=run.dir,
            workspace=run.workspace,
            agent_dir=run.agent_dir,
            adapter_id=run.profile.id,
            state_dir=run.state_dir,
            env={},
        )
        self.connectors: dict[str, Any] = {}
        self.prepared: dict[str, str | None] = {}
        self.sessions: dict[tuple[str, str], Session] = {}
        # each scenario run's result folder: its redactor and cap (redacted again at the end)
        self.results: dict[Path, tuple[Any, int]] = {}
        self.lock = asyncio.Lock()

    def connector(self, config: dict[str, Any]) -> Any:
        ident = config["ident"]
        if ident not in self.connectors:
            self.connectors[ident] = self.build(config)
        return self.connectors[ident]

    async def ensure_prepared(self, config: dict[str, Any], env: dict[str, str]) -> Any:
        conn = self.connector(config)
        ident = config["ident"]
        async with self.lock:
            if ident not in self.prepared:
                self.info.env = dict(env)
                try:
                    await invoke(f"connector {conn.name!r} prepare", conn.prepare, self.info)
                    self.prepared[ident] = None
                except StepError as exc:
                    self.prepared[ident] = str(exc)
        if self.prepared[ident]:
            raise StepError(str(self.prepared[ident]))
        return conn

    async def ensure_session(self, config: dict[str, Any], conn: Any, call: HookCall) -> Session:
        key = (config["ident"], call.session or "")
        if key in self.sessions:
            return self.sessions[key]
        sr = call.scenario_run
        assert sr is not None and call.state_dir is not None
        base = Path(call.state_dir) / "ruhroh"
        workspace = base / "workspace"
        # A resumed run goes on at the turn that was cut off (the engine sends no turn
        # twice): the workspace stays as the earlier turns left it, and iterations go
        # on counting. Cut in its first turn, the scenario run starts afresh.
        went_on = _went_on(base) if call.phase == "execute" and (call.turn or 1) > 1 else None
        if went_on:  # the turns recorded before keep their result files, as every call's
            _drop_cut_results(base / "results", call.turn or 1)
        else:
            for stale in (workspace, base / "results"):
                _remove(stale)  # every RUHROH_RESULT_PATH new, whatever a cut call left
        if config.get("workspace_template_path") and not went_on:
            _copy_template(config["workspace_template_path"], workspace)
        workspace.mkdir(parents=True, exist_ok=True)
        goal_path = base / "goal.txt"
        made_up = str(uuid.uuid5(uuid.NAMESPACE_URL, f"rook:{call.run.id}:{call.session}"))
        # no open hook returned one: Rook makes one up (the same again when resumed)
        assigned = call.conversation in (None, "", made_up)
        handle = call.conversation or made_up
        session = Session(
            scenario_id=sr.scenario.id,
            # <scenario>.<index>: a judge profile's judgement (key ID.N-jK) is the judged run's
            sample_id=f"{sr.scenario.id}.{sr.repeat_index}",
            repeat_index=sr.repeat_index,
            repeat_count=sr.repeat_count,
            sample_seed=sample_seed(
                sr.scenario.id, sr.repeat_index, call.env.get("RUHROH_RUN_SEED", "")
            ),
            goal=sr.scenario.goal,
            goal_path=goal_path,
            workspace=workspace,
            handle=handle,
            dir=base,
            run_dir=call.run.dir,
            adapter_id=call.run.profile.id,
            turns_total=call.turns_total,
            env=dict(call.env),
            handle_assigned=assigned,
        )
        ready_for_call(session, base / "results")  # and again before every call
        redactor = call.run.redactor or current()
        if redactor:  # a profile with secrets: its result files are redacted again at the end
            self.results[base / "results"] = (redactor, call.limits.stdout_bytes)
        if went_on:
            session.iteration = went_on["iteration"]
            session.sample_seed = went_on.get("sample_seed", session.sample_seed)
        started = await invoke(
            f"connector {conn.name!r} start_session", conn.start_session, session
        )
        try:  # read as a hook's conversation: {} is none, an object its JSON text
            started = read_handle(started, f"connector {conn.name!r} start_session's handle")
        except ProtocolError as exc:
            raise StepError(str(exc)) from None
        if started is not None:
            session.handle, session.handle_assigned = started, False
        self.sessions[key] = session
        return session

    async def finish(
        self, config: dict[str, Any], conn: Any, call: HookCall
    ) -> tuple[dict[str, Any], list[str]]:
        """collect_artifacts then cleanup; the artifacts are also kept on disk for collect."""
        session = self.sessions.pop((config["ident"], call.session or ""), None)
        if session is None:
            return {}, []
        artifacts, notes = await self._close(config, conn, session)
        try:
            redactor = call.run.redactor or current()  # no secret stays in the run directory
            atomic_write(session.dir / "artifacts.json", dumps(redactor.data(artifacts)))
        except Exception as exc:  # the state dir is a convenience for collect
            notes.append(f"could not keep the artifacts for collect: {exc}")
        return artifacts, notes

    async def _close(
        self, config: dict[str, Any], conn: Any, session: Session
    ) -> tuple[dict[str, Any], list[str]]:
        notes: list[str] = []
        artifacts: dict[str, Any] = {}
        try:
            raw = await invoke(
                f"connector {conn.name!r} collect_artifacts", conn.collect_artifacts, session
            )
            where = non_finite(raw)
            if where:  # never into a record: NaN is no JSON (jq, JSON.parse refuse the file)
                raise StepError(
                    f"connector {conn.name!r} collect_artifacts returned {where}, which no "
                    "JSON can hold: its artifacts were left out"
                )
            artifacts = read_artifacts(raw, session.workspace, config["artifact_max_bytes"])
        except StepError as exc:
            notes.append(str(exc))
        try:
            await invoke(f"connector {conn.name!r} cleanup", conn.cleanup, session)
        except StepError as exc:
            notes.append(str(exc))
        return artifacts, notes

    async def stop(self) -> None:
        """End of run: clean up every session a failure or interruption left open.
        Once what the wrappers left running is killed, their result files are
        redacted again: a job a wrapper left may have written one after Rook read it."""
        for (ident, _), session in list(self.sessions.items()):
            conn = self.connectors.get(ident)
            if conn is not None:
                try:
                    await invoke("cleanup", conn.cleanup, session)
                except StepError:
                    pass
        self.sessions.clear()
        if self.results:
            process.when_leftovers_killed(partial(_redact_late, dict(self.results)))
            self.results.clear()


PROTOCOL_VARIABLES = (
    "RUHROH_MESSAGE",
    "RUHROH_ITERATION",
    "RUHROH_WORKSPACE",
    "RUHROH_WORKSPACE_PATH",
    "RUHROH_GOAL_PATH",
    "RUHROH_RESULT_PATH",
    "RUHROH_SESSION_HANDLE",
    "RUHROH_SCENARIO_ID",
    "RUHROH_RUN_ROOT",
    "RUHROH_ADAPTER_ID",
    "RUHROH_SAMPLE_ID",
    "RUHROH_SAMPLE_SEED",
    "RUHROH_RUN_INDEX",
    "RUHROH_RUN_COUNT",
)
"""The variables :func:`ruhroh_env` sets on every call (a ``hook_env`` value for one
never reaches the wrapper)."""


def ruhroh_env(session: Session, call: HookCall, turn: TurnInput) -> dict[str, str]:
    """The phase environment plus every ``RUHROH_*`` variable of the reference;
    ``ROOK_CONVERSATION`` is the session's latest handle (a ``continue`` call of
    the same turn may have changed it)."""
    env = dict(call.env)
    env.update(
        {
            "RUHROH_MESSAGE": turn.message,
            "RUHROH_ITERATION": str(turn.iteration),
            "RUHROH_WORKSPACE": str(session.workspace),
            "RUHROH_WORKSPACE_PATH": str(session.workspace),
            "RUHROH_GOAL_PATH": str(session.goal_path),
            "RUHROH_RESULT_PATH": str(turn.result_path),
            "RUHROH_SESSION_HANDLE": session.handle,
            "RUHROH_SCENARIO_ID": session.scenario_id,
            "RUHROH_RUN_ROOT": str(session.run_dir),
            "RUHROH_ADAPTER_ID": session.adapter_id,
            "RUHROH_SAMPLE_ID": session.sample_id,
            "RUHROH_SAMPLE_SEED": str(session.sample_seed),
            "RUHROH_RUN_INDEX": str(session.repeat_index),
            "RUHROH_RUN_COUNT": str(session.repeat_count),
        }
    )
    if not session.handle_assigned:  # the agent's (or open's) latest handle, as for any hook;
        env["ROOK_CONVERSATION"] = session.handle  # never the one Rook made up
    return env
