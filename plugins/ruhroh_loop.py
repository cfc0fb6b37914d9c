"""Rook's side of the Ruhroh contract: the task loop and the phase mapping.

Each Rook turn is a Ruhroh iteration (``RUHROH_MESSAGE`` is the turn's text).
While the agent answers ``continue`` and iterations remain, the engine sends
the next turn; when the turns are exhausted the loop goes on inside the last
execute call with the text ``continue``. Any other status, or the budget used
up, ends the conversation: a turn before the last says so
(``HookResult.end_conversation``) and the engine sends no later turn.
``infra_failure`` is retried once, then reported as an infrastructure error
(``HookResult.infra``: the scenario is ``infra_error``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rook_core import transports
from rook_core.hookio import RECORD_CHARS, clip, decode, keep_cut_off_output, preview, tail
from rook_core.judging import with_totals
from rook_core.models import HookCall, HookResult
from rook_core.redact import current
from rook_core.store import read_json
from rook_core.transports import CancelIgnored, wait_bounded

from .ruhroh_command import CommandConnector
from .ruhroh_connector import Session, TurnInput
from .ruhroh_protocol import (
    CONTINUE,
    INFRA_FAILURE,
    RUNTIME_FAILURE,
    STATUSES,
    IterationResult,
    non_finite,
    normalize,
    read_artifacts,
    redact_result_file,
)
from .ruhroh_session import Runtime, StepError, invoke, ready_for_call, remember, ruhroh_env

INFRA_PREFIX = "infrastructure error:"


def _as_result(raw: Any, started: float, session: Session) -> IterationResult:
    if isinstance(raw, IterationResult):
        raw.started = raw.started or started
        raw.ended = raw.ended or time.time()
        return raw
    result = IterationResult(
        started=started, ended=time.time(), artifacts_base=session.workspace, source="connector"
    )
    if not isinstance(raw, dict):
        result.failure = f"run_turn returned {type(raw).__name__}, not a mapping with a status"
        return result
    where = non_finite(raw)
    if where:  # never into a record: NaN is no JSON (jq, JSON.parse refuse the file)
        result.failure = (
            f"run_turn returned {where}, which no JSON can hold: return a number or null"
        )
        return result
    transcript = raw.get("transcript") if isinstance(raw.get("transcript"), str) else ""
    return normalize(dict(raw), transcript or "", result)


async def one_iteration(
    conn: Any,
    session: Session,
    call: HookCall,
    message: str,
    attempt: int,
    timeout: float | None = None,
) -> IterationResult:
    turn_no = call.turn or 1
    path = (
        session.dir
        / "results"
        / f"turn-{turn_no}-iteration-{session.iteration}-attempt-{attempt}.json"
    )
    try:
        ready_for_call(session, path.parent)
        path.unlink(missing_ok=True)
    except OSError as exc:
        return IterationResult(
            started=time.time(),
            ended=time.time(),
            failure=f"could not make the goal file and the result file's folder: {exc}",
        )
    turn = TurnInput(
        message,
        session.iteration,
        turn_no,
        call.turns_total,
        attempt,
        path,
        {},
        call.timeout if timeout is None else timeout,
        call.limits,
    )
    turn.env = ruhroh_env(session, call, turn)
    started = time.time()
    what = f"connector {conn.name!r} run_turn"
    try:
        coro = invoke(what, conn.run_turn, session, turn)
        grace = 0.0
        if type(conn) is CommandConnector:  # Rook's own wrapper: killed at its timeout, an
            raw = await coro  # interrupt's cancellation carrying what it printed
        else:  # a plugin's that handles its timeout is still bounded, a grace later
            grace = transports.HANDLED_TIMEOUT_GRACE_SECONDS if conn.handles_timeout else 0.0
            raw = await wait_bounded(coro, turn.timeout + grace)
    except asyncio.TimeoutError as exc:
        ignored = isinstance(exc, CancelIgnored)
        return IterationResult(
            started=started,
            ended=time.time(),
            timed_out=True,
            failure=f"{what} did not finish within {turn.timeout:g} s"
            + (
                f"; Rook stopped waiting {grace:g} s later (the connector sets "
                "handles_timeout but did not end run_turn within its timeout)"
                if grace
                else ""
            )
            + ("; it ignored its cancellation, so Rook closed its coroutine" if ignored else ""),
        )
    except StepError as exc:
        return IterationResult(started=started, ended=time.time(), failure=str(exc))
    finally:
        _redact_result_file(call, path)
    result = _as_result(raw, started, session)
    if result.failure is None:
        try:
            status = await invoke(
                f"connector {conn.name!r} detect_completion",
                conn.detect_completion,
                session,
                result,
            )
        except StepError as exc:
            result.failure = str(exc)
        else:
            result.status = status if isinstance(status, str) and status else None
            if result.status is None:
                result.failure = f"connector {conn.name!r} reported no completion status"
    return result


def _redact_result_file(call: HookCall, path: Any) -> None:
    """No secret stays in the run directory in the result file Rook asked for."""
    redactor = call.run.redactor or current()
    try:
        redact_result_file(path, redactor, call.limits.stdout_bytes)
    except Exception:  # the record is redacted regardless; never lose the iteration
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass


WHY_FIELDS = ("error", "reason", "message", "summary", "output")


def _why(result: IterationResult) -> str:
    """Why a failure status was answered: the result file's reason wins over the
    final line's, whatever names each gives it under."""
    mine = result.file_fields
    for key in sorted(WHY_FIELDS, key=lambda k: k not in mine):  # stable: the file's first
        value = result.fields.get(key)
        if isinstance(value, str) and value.strip():
            return current().head(value.strip(), 2000)
    return ("stderr: " + tail(result.stderr)) if result.stderr.strip() else "no message given"


def _joined(results: list[IterationResult], attr: str, labels: list[str]) -> str:
    parts = [
        (label, getattr(r, attr))
        for label, r in zip(labels, results, strict=True)
        if getattr(r, attr)
    ]
    if len(results) == 1:
        return parts[0][1] if parts else ""
    return "\n".join(f"--- {label} ---\n{text}" for label, text in parts)


def _label(iteration: int, attempt: int) -> str:
    return f"iteration {iteration}" + (" (retry)" if attempt > 1 else "")


def _keep_cut_off(
    exc: BaseException, call: HookCall, results: list[IterationResult], labels: list[str]
) -> None:
    """An interrupt cut off the turn's last iteration (``labels[-1]``): its hook's
    record holds what the turn's iterations printed, as a finished turn's does,
    the cut one's as far as it was read (see :func:`rook_core.hookio.cut_off_output`),
    and the artifacts the finished ones reported (a resume may empty the workspace)."""
    from rook_core.process import read_before

    red = call.run.redactor or current()
    cut, proc = IterationResult(), read_before(exc)
    if proc is not None:  # a wrapper's process (a connector's run_turn in Python has none)
        cut.stdout, cut.stderr = decode(proc.stdout, 0, red), decode(proc.stderr, 0, red)
    done = [*results, cut]
    kept: dict[str, Any] = {}
    if proc is not None and proc.notes:
        kept["details"] = {"process": list(proc.notes)}
    artifacts = _artifacts(results, labels[: len(results)])
    if artifacts:  # redacted with the record
        kept["data"] = {"artifacts": artifacts}
    keep_cut_off_output(
        exc,
        stdout=clip(_joined(done, "stdout", labels), red),
        stderr=clip(_joined(done, "stderr", labels), red),
        **kept,  # what was killed, as at a timeout
    )


def sum_usage(results: list[IterationResult]) -> dict[str, float] | None:
    """Usage over a turn's iterations; a field counts only when every iteration
    that answered reported it (never an under-count)."""
    answered = [r for r in results if r.failure is None and r.status != INFRA_FAILURE]
    retried = [r for r in results if r.status == INFRA_FAILURE and r.usage]
    if not answered or any(r.usage is None for r in answered):
        return None
    usages = with_totals([r.usage or {} for r in answered + retried])
    keys = set.intersection(*(set(u) for u in usages[: len(answered)]))
    total = {k: sum(u.get(k, 0) for u in usages) for k in sorted(keys)}
    return total or None


def joined_calls(results: list[IterationResult]) -> list[Any] | None:
    """The call log of a turn's iterations (a ``calls`` list in the hook
    contract's shape, read as a hook's is), in order; ``None`` (not observed)
    unless every iteration that answered reported one, as for usage: a call
    log missing an iteration's calls would pass a ``not_called`` it should
    fail. A ``calls`` that is no list (a count) is no call log: it stays in
    ``result`` only. A retried ``infra_failure``'s calls happened too."""
    answered = [r for r in results if r.failure is None and r.status != INFRA_FAILURE]
    if not answered or not all(isinstance(r.fields.get("calls"), list) for r in answered):
        return None
    return [
        call
        for r in results
        if r.failure is None and isinstance(r.fields.get("calls"), list)
        for call in r.fields["calls"]
    ]


def usage_at_least(results: list[IterationResult], total: dict[str, float] | None) -> Any:
    """What the iterations that did report a count add up to, for each count some
    iteration of the turn left out (so the turn's usage has none): a lower bound
    (counts and costs are never negative) that a budget already over it fails on."""
    counted = with_totals([r.usage for r in results if r.usage and r.failure is None])
    keys = {k for u in counted for k in u} - set(total or {})
    return {k: sum(u.get(k, 0) for u in counted) for k in sorted(keys)} or None


def _latest(results: list[IterationResult], attr: str) -> Any:
    return next((getattr(r, attr) for r in reversed(results) if getattr(r, attr) is not None), None)


def _summary(result: IterationResult, message: str, iteration: int, attempt: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "iteration": iteration,
        "attempt": attempt,
        "message": current().head(message, 200, "..."),  # redacted, then cut
        "status": result.status,
        "seconds": round(result.seconds, 6),
    }
    for key, value in (
        ("exit_code", result.exit_code),
        ("source", result.source or None),
        ("runId", result.run_id),
        ("failure", result.failure),
        ("notes", result.notes or None),
    ):
        if value is not None:
            entry[key] = value
    return entry


def _began() -> tuple[float, float]:
    """Now on the wall clock (the hook's ``started``) and on the monotonic one, from
    which its seconds are counted: a wall clock set back meanwhile (NTP) would make
    them negative."""
    return time.time(), time.monotonic()


def _hook_result(
    call: HookCall,
    began: tuple[float, float],
    status: str,
    diagnosis: str | None = None,
    data: dict[str, Any] | None = None,
    **details: Any,
) -> HookResult:
    started, clock = began
    return HookResult(
        phase=call.phase,
        status=status,
        seconds=round(time.monotonic() - clock, 6),
        started=started,
        ended=time.time(),
        data=data,
        diagnosis=diagnosis,
        turn=call.turn,
        transport=call.entry.transport,
        details={k: v for k, v in details.items() if v is not None},
    )


def _warning(
    results: list[IterationResult],
    summaries: list[dict[str, Any]],
    turn: int,
    exhausted: int | None,
    limit: str = "max_iterations",
) -> str | None:
    """What the report says of a turn that completed (its run's ``warnings``): an
    ``infra_failure`` retried (the record keeps both attempts), and the last
    turn's ``limit`` (``exhausted``: ``max_iterations``, or the scenario's lower
    ``max_turns``) reached with the agent still
    answering ``continue``, which only a ``status`` criterion would judge."""
    said = [
        f"turn {turn}, iteration {s['iteration']}: the agent reported infra_failure "
        f"({current().head(_why(r), 300, '...')}); retried once, the retry answered {results[i + 1].status}"
        for i, (r, s) in enumerate(zip(results, summaries, strict=True))
        if r.status == INFRA_FAILURE and s["attempt"] == 1 and i + 1 < len(results)
    ]
    answered = [
        (s["iteration"], isinstance(r.fields.get("calls"), list))
        for r, s in zip(results, summaries, strict=True)
        if r.failure is None and r.status != INFRA_FAILURE
    ]
    if any(gave for _, gave in answered) and not all(gave for _, gave in answered):
        missing = ", ".join(str(i) for i, gave in answered if not gave)
        said.append(
            f"turn {turn}: iteration {missing} reported no calls list while another did, so "
            "the turn's call log is not observed (a partial log would pass not_called)"
        )
    if exhausted is not None:
        said.append(
            f"turn {turn}: {limit} ({exhausted}) reached with the agent still "
            "answering continue: it never said the goal was done (a status criterion "
            "judges this; the others judged its last answer)"
        )
    return "; ".join(said) or None


def _outcome(final: IterationResult, conn: Any) -> tuple[str, str | None, bool]:
    """(hook status, diagnosis, infra) of the iteration that ended the loop."""
    if final.timed_out:
        return "timeout", final.failure, False
    if final.failure:
        return "failed", final.failure, False
    if final.status == INFRA_FAILURE:
        return (
            "failed",
            (
                f"{INFRA_PREFIX} the agent reported infra_failure on both attempts (retried once; "
                f"not counted against the agent): {_why(final)}"
            ),
            True,
        )
    if final.status == RUNTIME_FAILURE:
        return "failed", f"the agent reported runtime_failure: {_why(final)}", False
    if final.status not in STATUSES:
        return (
            "failed",
            (
                f"unknown completion status {preview(str(final.status), 100)}; "
                + (
                    f"connector {conn.name!r} (its run_turn or detect_completion)"
                    if final.source == "connector"
                    else "a Ruhroh wrapper"
                )
                + " answers one of "
                + ", ".join(STATUSES)
            ),
            False,
        )
    return "ok", None, False


def turn_cap(call: HookCall) -> float | None:
    """A scenario's ``timeout_seconds``: it caps the whole execute turn, every
    iteration of it (each call also has the entry's own timeout)."""
    scenario = call.scenario
    cap = scenario.extra.get("timeout_seconds") if scenario is not None else None
    return float(cap) if cap else None


def _defers_to_close(call: HookCall) -> bool:
    close = call.profile.hooks.get("close")
    return close is not None and close.transport == call.entry.transport


def iteration_budget(config: dict[str, Any], call: HookCall) -> tuple[int, str]:
    """``max_iterations``, lowered by a scenario's ``max_turns`` (public Rook CLI
    files), and the name of the one that sets it, as the files write it."""
    budget = int(config["max_iterations"])
    scenario = call.scenario
    max_turns = scenario.extra.get("max_turns") if scenario is not None else None
    if max_turns and int(max_turns) < budget:
        return int(max_turns), "the scenario's max_turns"
    return budget, "max_iterations"


def _ended(final: IterationResult, exhausted: bool, budget: int, limit: str) -> str:
    """Why a turn before the last ends the conversation."""
    if exhausted:
        return (
            f"{limit} ({budget}) reached with the agent still answering continue; "
            "no further call is made"
        )
    return f"the agent answered {final.status}"


async def execute(rt: Runtime, config: dict[str, Any], call: HookCall) -> HookResult:
    """One Rook turn: one iteration, and on the last turn iterations with the text
    ``continue`` while the agent answers ``continue`` and the budget lasts.

    A turn before the last that ends with a status other than ``continue``, or
    uses up ``max_iterations``, ends the conversation (``end_conversation``):
    the engine sends no later turn."""
    began = _began()
    try:
        conn = await rt.ensure_prepared(config, call.env)
        session = await rt.ensure_session(config, conn, call)
    except StepError as exc:
        return _hook_result(call, began, "failed", str(exc))
    last_turn = (call.turn or 1) >= call.turns_total
    budget, limit = iteration_budget(config, call)
    message = call.stdin or ""
    results: list[IterationResult] = []
    summaries: list[dict[str, Any]] = []
    labels: list[str] = []
    exhausted = False
    cap = turn_cap(call)
    retry_cut: str | None = None  # why an infra_failure's retry had no fair chance
    while True:
        session.iteration += 1
        for attempt in (1, 2):
            timeout = call.timeout
            if cap is not None:  # what is left of the turn's time
                left = round(began[1] + cap - time.monotonic(), 3)
                if attempt == 2 and left <= 0:
                    retry_cut = (
                        f"no time was left of the scenario's timeout_seconds ({cap:g} s) "
                        "for its retry"
                    )
                    break
                timeout = min(timeout, max(left, 0.001))
            try:
                result = await one_iteration(conn, session, call, message, attempt, timeout)
            except asyncio.CancelledError as exc:  # the run interrupted: keep what they printed
                _keep_cut_off(exc, call, results, [*labels, _label(session.iteration, attempt)])
                raise
            if result.stopped or result.never_exited:  # no timeout helps: its failure says so
                pass
            elif cap is not None and result.timed_out and timeout < call.entry.timeout:
                if attempt == 2:
                    retry_cut = (
                        f"its retry had what was left of the scenario's timeout_seconds "
                        f"({cap:g} s) and was cut off"
                    )
                result.failure = (
                    f"{result.failure}; the scenario's timeout_seconds ({cap:g} s) caps the "
                    f"whole turn: iteration {session.iteration} had what was left of it"
                )
            elif result.timed_out:  # the entry's own timeout, for each call
                result.failure = (
                    f"{result.failure}; raise timeout_seconds on the hook entry (beside "
                    f"{call.entry.transport}:) if {'the judge' if call.run.judge else 'the agent'}"
                    " is this slow"
                )
            if result.artifacts is not None:  # as this call left them: the next may move them
                base = result.artifacts_base or session.workspace
                most = config["artifact_max_bytes"]  # cap is the turn's time: kept
                result.artifacts_read = read_artifacts(result.artifacts, base, most)
            results.append(result)
            summaries.append(_summary(result, message, session.iteration, attempt))
            labels.append(_label(session.iteration, attempt))
            if result.handle:
                session.handle, session.handle_assigned = result.handle, False
            if attempt == 1 and result.failure is None and result.status == INFRA_FAILURE:
                continue
            break
        if result.failure or result.status != CONTINUE:
            break
        if session.iteration >= budget:
            exhausted = True
            break
        if not last_turn:
            break  # continue: the engine sends the next turn
        message = CONTINUE
    final = results[-1]
    status, diagnosis, infra = _outcome(final, conn)
    if retry_cut:  # the infra failure stands: the agent had no fair second attempt
        first = next(r for r in reversed(results) if r.status == INFRA_FAILURE)
        status, infra = "failed", True
        diagnosis = (
            f"{INFRA_PREFIX} the agent reported infra_failure and {retry_cut} (not counted "
            f"against the agent): {_why(first)}"
        )
    data = evidence(config, conn, session, results, summaries, labels)
    if exhausted:
        data["max_iterations_reached"] = True
        if limit != "max_iterations":  # which limit it was, for the status criterion
            data["iteration_limit"] = limit
    ended = None
    if status == "ok" and not last_turn and (exhausted or final.status != CONTINUE):
        ended = _ended(final, exhausted, budget, limit)
        data["conversation_ended"] = ended
    notes: list[str] = []
    if status == "ok" and not (last_turn or ended):
        remember(session)  # a run cut off in the next turn goes on from here
    if status != "ok" or ((last_turn or ended) and not _defers_to_close(call)):
        artifacts, notes = await rt.finish(config, conn, call)
        if artifacts:
            data["artifacts"] = {**data.get("artifacts", {}), **artifacts}
    hook = _hook_result(
        call,
        began,
        status,
        diagnosis,
        data,
        iterations=len(results),
        ruhroh=_manifest_details(results, conn),
        notes=notes or None,
    )
    hook.infra = infra
    hook.end_conversation = ended
    if status == "ok":
        hook.warning = _warning(
            results, summaries, call.turn or 1, budget if exhausted and last_turn else None, limit
        )
    hook.conversation_assigned = session.handle_assigned
    hook.exit_code = final.exit_code
    hook.stdout = clip(_joined(results, "stdout", labels))
    hook.stderr = clip(_joined(results, "stderr", labels))
    return hook


def evidence(
    config: dict[str, Any],
    conn: Any,
    session: Session,
    results: list[IterationResult],
    summaries: list[dict[str, Any]],
    labels: list[str],
) -> dict[str, Any]:
    """The execute answer: ``output``, ``conversation``, ``usage`` and evidence."""
    final = results[-1]
    artifacts = _artifacts(results, labels)
    usage = sum_usage(results)
    data: dict[str, Any] = {
        "output": final.output if final.output is not None else "",
        "conversation": session.handle,
        "usage": usage,
        "usage_at_least": usage_at_least(results, usage),
        "calls": joined_calls(results),
        "status": final.status,
        "model": _latest(results, "model"),
        "adapterVersion": _latest(results, "adapter_version"),
        "runId": _latest(results, "run_id"),
        "artifacts": artifacts or None,
        "transcript": clip(_joined(results, "transcript", labels)) or None,
        "iterations": _with_answers(results, summaries),
        "result": _answer_once(final.fields, final.output) or None,
        "continuity": getattr(conn, "continuity", None),
        "workspace": str(session.workspace),
    }
    return {k: v for k, v in data.items() if v is not None}


ITERATION_ANSWER_CHARS = 2000
"""How much of an earlier iteration's answer its ``iterations`` entry keeps."""


def _with_answers(
    results: list[IterationResult], summaries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each iteration's entry with what it answered (``output``), but the last's,
    which is the turn's output: a ``continue`` answered in a result file is
    otherwise in no record. An answer that is only the transcript (no answer
    field) is kept as the transcript already."""
    more = "\n... [{n} more chars]"
    return [
        {**s, "output": current().head(r.output, ITERATION_ANSWER_CHARS, more)}
        if r is not results[-1] and r.output and r.output != r.transcript
        else s
        for r, s in zip(results, summaries, strict=True)
    ]


def _answer_once(fields: dict[str, Any], answer: str | None) -> dict[str, Any]:
    """The fields the wrapper reported, a long one that is the turn's answer (over
    :data:`RECORD_CHARS`: a 5 MiB ``output``) cut as a record cuts a long text:
    the answer is whole in the turn's output, and is not stored twice."""
    if answer is None or len(answer) <= RECORD_CHARS:
        return fields
    more = "\n... [{n} more chars; the whole answer is the turn's output]"
    return {
        k: current().head(v, RECORD_CHARS, more) if v is answer or v == answer else v
        for k, v in fields.items()
    }


def _artifacts(results: list[IterationResult], labels: list[str]) -> dict[str, Any]:
    """The artifacts the turn's iterations reported, each as read right after its
    call. A name reported again for another file (``transcript`` of each
    iteration) keeps the latest under the name and the earlier one as ``name
    (iteration N)``: none is lost."""
    artifacts: dict[str, Any] = {}
    came_from: dict[str, str] = {}
    for r, label in zip(results, labels, strict=True):
        for name, info in (r.artifacts_read or {}).items():
            earlier = artifacts.get(name)
            if earlier is not None and earlier.get("path", earlier) != info.get("path", info):
                artifacts[f"{name} ({came_from[name]})"] = earlier
            artifacts[name], came_from[name] = info, label
    return artifacts


def _reported(model: Any) -> Any:
    """A model as the manifest takes it: an empty field (``"model": ""`` from a
    wrapper's unset variable) is no value, as an empty ``adapterVersion`` is."""
    if isinstance(model, dict):
        return {k: v for k, v in model.items() if v not in (None, "")} or None
    return None if model in (None, "") else model


def _manifest_details(results: list[IterationResult], conn: Any) -> dict[str, Any]:
    """What ``ruhroh-run-manifest.json`` takes from the latest result that reported
    each value (an iteration of this turn, not only the turn's last)."""
    models = (_reported(r.model) for r in reversed(results))
    return {
        "adapterVersion": _latest(results, "adapter_version"),
        "model": next((m for m in models if m is not None), None),
        "usage": _latest(results, "usage_raw"),
        "continuity": getattr(conn, "continuity", None),
    }


async def phase(rt: Runtime, config: dict[str, Any], call: HookCall) -> HookResult:
    """Map a Rook phase onto the connector lifecycle."""
    if call.phase == "execute":
        return await execute(rt, config, call)
    began = _began()
    try:
        conn = await rt.ensure_prepared(config, call.env)
        if call.phase == "prepare" or call.scenario_run is None:
            data = {"connector": conn.name, "continuity": getattr(conn, "continuity", None)}
            return _hook_result(call, began, "ok", data={k: v for k, v in data.items() if v})
        if call.phase == "open":
            session = await rt.ensure_session(config, conn, call)
            hook = _hook_result(call, began, "ok", data={"conversation": session.handle})
            hook.conversation_assigned = session.handle_assigned
            return hook
        artifacts, notes = await rt.finish(config, conn, call)
        if call.phase == "collect" and not artifacts and call.state_dir is not None:
            artifacts = read_json(call.state_dir / "ruhroh" / "artifacts.json") or {}
        return _hook_result(call, began, "ok", data={"artifacts": artifacts}, notes=notes or None)
    except StepError as exc:
        return _hook_result(call, began, "failed", str(exc))
