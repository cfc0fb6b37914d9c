"""Testing one profile against the real target: ``rook profile test``, and the probe
behind ``rook profile add`` and ``rook profile fix``.

A probe is a one-scenario run through the lifecycle engine (prepare, open,
execute, close, collect; no judge), so every transport, timeout, redaction
and process rule of ``rook run`` applies unchanged. It is kept out of history:
the run directory is a temporary one, removed afterwards (``keep`` keeps it),
and nothing is added to ``runs/``. What it saw is returned as an
:class:`Observation`: each phase's result and time, the extracted answer, the
observed capabilities and, when it failed, a classified diagnosis.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from . import process, procscan
from .engine import Engine
from .errors import ConfigError, HookFailed
from .evaluating import let_threads_go
from .hookio import repeated_contract_keys
from .models import CAPABILITIES, HOOK_PHASES, Profile, Scenario, ScenarioRun
from .plain import plain
from .plugins import Rook, count_cancellations
from .preflight import resolve_entries
from .redact import MIN_LENGTH, Redactor, too_short_warning, use
from .store import create_run, read_json
from .workspace import Agent

DEFAULT_GOAL = "Say hello in one short sentence."
SECOND_TURN = "Thank you. Now say goodbye in one short sentence."

# Problems a failed probe is classified as (``Observation.problem``).
PROBLEMS = {
    "config": "the profile cannot run as written",
    "missing_variable": "a variable the profile needs is not set",
    "auth": "the target rejected the credentials (401/403)",
    "not_found": "the target answered 404 Not Found",
    "header_rejected": "the target rejected a request header",
    "http_error": "the target refused the request",
    "rate_limited": "the target kept answering 429 Too Many Requests (a rate limit)",
    "unreachable": "nothing answered at the target's address (is the agent running?)",
    "infra": "the agent reported an infrastructure failure (Ruhroh infra_failure, twice)",
    "tls": "Rook does not trust the target's TLS certificate",
    "timeout": "a hook timed out",
    "not_json": "the hook's output is not one JSON object",
    "no_answer": "the answer was not found in the response",
    "no_conversation": "no conversation handle came back, so turns cannot continue",
    "failed": "a hook failed",
}


@plain
class Observation:
    """What one probe of a profile saw.

    ``hooks`` are the hook records as stored (redacted), in order; ``turns``
    the execute turns' evidence; ``observed`` the capabilities seen;
    ``problem`` one of :data:`PROBLEMS` (``None`` when the probe passed);
    ``response`` the failing HTTP response, parsed when it is JSON.
    """

    ok: bool
    goal: str
    hooks: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    observed: dict[str, bool] = field(default_factory=dict)
    problem: str | None = None
    diagnosis: str = ""
    phase: str | None = None
    http_status: int | None = None
    response: Any = None
    missing: list[dict[str, Any]] = field(default_factory=list)
    run_dir: str | None = None
    handle: str | None = None
    kills: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What ``rook run`` would warn of (the scenario record's ``warnings``), then
    what only the probe checks (a key the contract reads given twice)."""

    @property
    def evidence_complete(self) -> bool:
        """Every hook but close answered (the probe passed, or only close failed):
        the answer and the observed capabilities hold, as a run keeps them when its
        close fails."""
        if self.ok:
            return True
        rest = [h for h in self.hooks if h.get("phase") != "close"]
        return bool(self.turns) and all(h.get("status") == "ok" for h in rest)

    @property
    def answer(self) -> str | None:
        return self.turns[0].get("output") if self.turns else None

    @property
    def conversation(self) -> str | None:
        """The last conversation handle: from a turn, else from open."""
        return next((t["conversation"] for t in self.turns if t.get("conversation")), self.handle)

    def evidence(self) -> dict[str, Any]:
        """The first turn's extra evidence fields (everything beyond the contract's)."""
        return dict(self.turns[0].get("evidence") or {}) if self.turns else {}

    def summary(self) -> str:
        if self.ok:
            return "ok"
        what = PROBLEMS.get(self.problem or "failed", "failed")
        return f"{what}: {self.diagnosis}" if self.diagnosis else what

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "goal": self.goal,
            "answer": self.answer,
            "conversation": self.conversation,
            "observed": self.observed,
            "problem": self.problem,
            "diagnosis": self.diagnosis,
            "phase": self.phase,
            "http_status": self.http_status,
            "hooks": [phase_line(h) for h in self.hooks],
            "turns": self.turns,
            "missing": self.missing,
            "kills": self.kills,
            "warnings": self.warnings,
        }


def phase_line(hook: dict[str, Any]) -> dict[str, Any]:
    """A hook record reduced to what a person reads: phase, status, seconds, diagnosis."""
    return {
        "phase": hook.get("phase"),
        "turn": hook.get("turn"),
        "status": hook.get("status"),
        "seconds": round(float(hook.get("seconds") or 0.0), 3),
        "diagnosis": hook.get("diagnosis"),
    }


def compare_capabilities(
    declared: dict[str, Any], observed: dict[str, bool]
) -> list[dict[str, Any]]:
    """Declared against observed, per capability (the reference's "Capabilities Are
    Observed"): ``optimistic`` is claimed but not seen (unsafe), ``unclaimed`` is seen
    but not claimed, ``ok`` agrees."""
    rows = []
    for cap in CAPABILITIES:
        d, o = bool(declared.get(cap)), bool(observed.get(cap))
        verdict = "ok" if d == o else ("optimistic" if d else "unclaimed")
        rows.append({"capability": cap, "declared": d, "observed": o, "verdict": verdict})
    return rows


# -- classification -------------------------------------------------------------

_NOT_JSON = (
    "not one JSON object",
    "must be one JSON object",
    "printed nothing on stdout",
    "printed only white space on stdout",
)
_NO_ANSWER = ("has no output field", "found nothing in the response", "holds no answer")
_UNSET = re.compile(r"environment variable (\w+), which is not set")
_UNREACHABLE = ("ConnectError", "Connection refused", "Name or service not known")
"""What an HTTP entry's diagnosis says when nothing answered (httpx's errors)."""
_TIMED_OUT = "TimeoutError: no complete response within"
"""What an HTTP entry's diagnosis says when its last attempt ran out of its own
``timeout_seconds`` (the hook itself did not time out)."""


def _response(hook: dict[str, Any]) -> Any:
    text = ((hook.get("details") or {}).get("http") or {}).get("response")
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def mentions_header(hook: dict[str, Any], headers: list[str]) -> str | None:
    """The request header a refusal names, if any (``header_rejected``)."""
    text = (hook.get("diagnosis") or "").lower()
    for name in headers:
        if re.search(rf"(?<![\w-]){re.escape(name.lower())}(?![\w-])", text):
            return name
    return None


HOST_MISMATCH = "the certificate does not name"
"""What the HTTP transport's diagnosis says of a trusted certificate for another host."""


def tls_advice(diagnosis: str | None, where: str) -> str:
    """What to do about a certificate Rook does not accept (problem ``tls``): trust
    the CA that signed it, unless it names another host (no CA bundle helps then).
    ``where`` names what to edit (``the hook entry``)."""
    if HOST_MISMATCH in (diagnosis or ""):
        return (
            f"put a host name or address the agent's certificate names in the url of {where} "
            "(the diagnosis above says which it does not), or give the agent a certificate "
            "for the url's host"
        )
    return (
        "give verify_tls the path of the CA bundle that signed the agent's certificate "
        f"(or, for a test server only, verify_tls: false) in {where}"
    )


def classify(hook: dict[str, Any], headers: list[str] | None = None) -> tuple[str, int | None]:
    """The problem a failed hook record shows, and its HTTP status when it has one."""
    status = ((hook.get("details") or {}).get("http") or {}).get("status")
    diagnosis = hook.get("diagnosis") or ""
    if hook.get("status") == "timeout" or _TIMED_OUT in diagnosis:
        return "timeout", status  # the hook's time, or an http: entry's attempt's
    if hook.get("infra"):  # not the profile's fault, nor the agent's (Ruhroh infra_failure)
        return "infra", status
    if _UNSET.search(diagnosis):
        return "missing_variable", status
    if status is None and "TLS certificate verification failed" in diagnosis:
        return "tls", status  # no repair helps: none turns verification off
    if status is None and any(s in diagnosis for s in _UNREACHABLE):
        return "unreachable", status
    if isinstance(status, int):
        if status in (401, 403):
            return "auth", status
        if status == 404:
            return "not_found", status
        if status == 429:  # every retry spent: the agent's limit, which no repair lifts
            return "rate_limited", status
        if 400 <= status < 500 and (status in (406, 415) or mentions_header(hook, headers or [])):
            return "header_rejected", status
        if status >= 300:
            return "http_error", status
    if any(s in diagnosis for s in _NO_ANSWER):
        return "no_answer", status
    if any(s in diagnosis for s in _NOT_JSON):
        return "not_json", status
    return "failed", status


def request_headers(profile: Profile) -> list[str]:
    """Header names the profile's http entries send (to recognise a refusal naming one)."""
    names: list[str] = []
    for entry in profile.hooks.values():
        names.extend(getattr(entry.config, "headers", None) or {})
    return names


# -- the probe ------------------------------------------------------------------


async def _drive(
    engine: Engine, sr: ScenarioRun, manifest: dict[str, Any], kills: list[str]
) -> None:
    procscan.become_subreaper()
    let_threads_go()  # a plugin's to_thread that never returns: Rook still exits
    count_cancellations()  # Python 3.10: a plugin's own CancelledError is told
    try:
        try:
            await engine.start_transports()
        except HookFailed as exc:  # as rook run records it: a failed prepare that names it
            engine.prepare_failed = engine.redactor.text(str(exc))
            return
        await engine.prepare(manifest, [sr])
        if not engine.prepare_failed:
            await engine.run_scenario(sr)
            engine.flush_records()
    finally:
        await engine.stop_transports()
        # what the hooks left running dies here; it is reported, as a run records it
        kills.extend(process.kill_leftovers({"ROOK_RUN_ID": engine.ctx.id}, scrubbed=True))


def _entry_shown(entry: Any) -> str:
    """A hook entry as a person recognises it: ``POST http://host/ask`` (no query,
    no password: either may hold a credential), a script's path, a wrapper's command
    line (its secrets hidden, as ``rook profile show`` hides them), a connector's
    name, or its transport."""
    from .credentials import join, mask_command, mask_words
    from .urlcheck import shown

    config = entry.config
    url, method = getattr(config, "url", None), getattr(config, "method", None)
    if isinstance(url, str) and isinstance(method, str):
        return f"{method} {shown(url)}"
    if not isinstance(config, dict):
        return f"a {entry.transport} entry"
    if isinstance(config.get("path"), str):
        return str(config["path"])
    command = config.get("command")  # a Ruhroh wrapper: a command line, or its words
    if isinstance(command, str) and command.strip():
        return mask_command(command)
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return join(mask_words(command))
    if entry.transport == "connector" and isinstance(config.get("name"), str):
        return f"connector {config['name']}"
    return f"a {entry.transport} entry"


def waiting_line(profile: Profile, turns: int = 1) -> str:
    """What a probe of ``profile`` waits for, and for how long at most (each hook's
    timeout), said before it starts: a target that never answers is then no
    silent wait (nor is a delay_seconds). ``trying the agent: POST http://host/ask
    (up to 300 s)``."""
    parts = []
    for phase in HOOK_PHASES:
        entry = profile.hooks.get(phase)
        if entry is None:
            continue
        name = "" if list(profile.hooks) == ["execute"] else f"{phase} "
        limit = f"up to {entry.timeout:g} s"
        # an entry that calls its agent several times over a scenario run (a Ruhroh
        # wrapper's max_iterations: its turns and continue iterations) waits that often
        calls = entry.config.get("max_iterations") if isinstance(entry.config, dict) else None
        if phase == "execute" and isinstance(calls, int) and calls > 1:
            limit = f"up to {calls} iterations of {limit} each"
            if turns > 1:
                limit = f"{turns} turns, {limit} in all"
        elif phase == "execute" and turns > 1:
            limit = f"{turns} turns, {limit} each"
        # its delay_seconds is waited in silence first (prepare has no preceding phase)
        if phase != "prepare" and entry.delay_seconds:
            each = " before each turn" if phase == "execute" and turns > 1 else ""
            limit = f"after a delay of up to {entry.delay_seconds:g} s{each}, {limit}"
        parts.append(f"{name}{_entry_shown(entry)} ({limit})")
    return "trying the agent: " + (", ".join(parts) or "no hook")


def probe(
    rook: Rook,
    agent: Agent,
    profile: Profile,
    redactor: Redactor,
    goal: str = DEFAULT_GOAL,
    turns: int = 1,
    extra_env: dict[str, str] | None = None,
    keep: bool = False,
    announce: Callable[[str], None] | None = None,
) -> Observation:
    """Run ``profile`` once against the real target with ``goal`` (and a second turn
    when ``turns`` is 2, to check that the conversation continues).

    ``extra_env`` holds values for the probe only (a secret found in a cURL
    command and not yet exported): they reach the hooks' environment and
    nothing else; they must already be in ``redactor``. ``announce`` gets the
    :func:`waiting_line` just before the target is called, after a warning for
    each ``env`` value too short to be redacted.
    """
    obs = Observation(ok=False, goal=goal)
    try:
        resolve_entries(rook, profile, agent)
    except ConfigError as exc:
        obs.problem, obs.diagnosis = "config", str(exc)
        return obs
    extra = dict(extra_env or {})
    for e in profile.env:  # a draft's own variables (an author agent's), as rook run redacts them
        redactor.add(e.variable, os.environ.get(e.variable) or extra.get(e.variable) or "")
    missing = [e for e in profile.env if not (os.environ.get(e.variable) or extra.get(e.variable))]
    if missing:
        obs.problem = "missing_variable"
        obs.missing = [{"variable": e.variable, "purpose": e.purpose} for e in missing]
        empty = [e.variable for e in missing if e.variable in os.environ]  # a CI secret missing
        unset = [e.variable for e in missing if e.variable not in empty]
        obs.diagnosis = "; ".join(
            f"{what}: {', '.join(names)}"
            for what, names in (("not set", unset), ("set, but empty", empty))
            if names
        )
        for ref in obs.missing:
            if ref["variable"] in empty:
                ref["empty"] = True
        return obs
    if announce is not None:
        for e in profile.env:  # what rook run warns of: shown as it is
            value = os.environ.get(e.variable) or extra.get(e.variable) or ""
            if len(value) < MIN_LENGTH:
                announce(too_short_warning(e.variable))
        announce(waiting_line(profile, turns))
    tmp = Path(tempfile.mkdtemp(prefix="rook-profile-test-"))
    engine: Engine | None = None
    try:
        run = create_run(tmp, redactor, f"profile-test-{os.getpid()}")
        engine = Engine(
            rook,
            agent,
            profile,
            run,
            list(HOOK_PHASES),
            redactor,
            observed_before={"multi_turn": True} if turns > 1 else {},
        )
        for name, value in extra.items():
            if not os.environ.get(name):
                engine.base_env[name] = value
        texts = [goal, SECOND_TURN][: max(1, min(turns, 2))]
        sr = ScenarioRun(Scenario(id="profile-test", name="rook profile test", turns=texts))
        manifest: dict[str, Any] = {}
        process.use_fast_child_watcher()
        use(redactor)  # what the hooks' text is cut to (a capped artifact ...) is redacted first
        asyncio.run(_drive(engine, sr, manifest, obs.kills))
        prepare = read_json(run.path / "prepare.json")
        record = run.load_scenario(sr.key) or {}
        obs.hooks = ([prepare] if isinstance(prepare, dict) else []) + list(record.get("hooks", []))
        obs.turns = list(record.get("turns", []))
        obs.warnings = [str(w) for w in record.get("warnings") or []]
        obs.warnings += repeated_keys_warnings(obs.hooks, len(texts))
        obs.warnings += refusal_warnings(obs.turns)
        obs.observed = {k: bool(v) for k, v in (record.get("observed") or {}).items() if v}
        if obs.observed.get("multi_turn"):  # else no hook returned one (a transport's own)
            obs.handle = record.get("conversation")
        if keep:
            obs.run_dir = str(run.path)
        _conclude(obs, record, engine, request_headers(profile))
    finally:
        if engine is not None:  # its spooled entry's file: never read, closed now
            engine.entries.close()
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return obs


UNMET = {
    "policy_blocked": "it refused the test goal (on its policy)",
    "cannot_satisfy": "it could not satisfy the test goal",
    "out_of_scope": "it took the test goal as out of its scope",
    "cancelled": "it cancelled the test goal",
    "continue": "it had not finished the test goal when its iterations ran out",
}
"""Completion statuses (a Ruhroh wrapper's, or a ``status`` a hook prints) that end a
turn without meeting its goal, and what each says of the agent."""


def refusal_warnings(turns: list[dict[str, Any]]) -> list[str]:
    """A warning for each turn whose completion status says the agent did not meet
    the goal (``policy_blocked`` ...): the turn completed, so the profile works (a
    scenario can expect a refusal), but an agent that will not say hello is worth
    a look before scenarios fail on it."""
    said = []
    for turn in turns:
        status = (turn.get("evidence") or {}).get("status")
        if not isinstance(status, str) or status not in UNMET:
            continue
        which = f" (turn {turn['turn']})" if len(turns) > 1 and turn.get("turn") else ""
        said.append(
            f"the agent answered {status}{which}: {UNMET[status]}; the profile reaches it "
            "and reads its answer, but a scenario whose goal it does not meet fails: check "
            "the agent (its policy, model or setup)"
        )
    return said


def repeated_keys_warnings(hooks: list[dict[str, Any]], turns: int = 1) -> list[str]:
    """A warning for each hook whose JSON object gives a key the contract reads
    more than once (``{"output": "ok", "output": "no"}``). Checked here, once
    per command, and not in a run: its scenarios pay nothing for it."""
    said = []
    for hook in hooks:
        repeated = repeated_contract_keys(str(hook.get("stdout") or ""))
        if not repeated:
            continue
        who = str(hook.get("phase") or "a hook")
        if who == "execute" and turns > 1 and hook.get("turn"):
            who += f" (turn {hook['turn']})"
        shown = ", ".join(f'"{k}"' for k in repeated)
        said.append(
            f"{who} printed a JSON object that gives {shown} more than once: Rook reads the "
            "last value, another JSON reader may read the first; print each key once"
        )
    return list(dict.fromkeys(said))


def _conclude(obs: Observation, record: dict[str, Any], engine: Engine, headers: list[str]) -> None:
    execute = next((h for h in obs.hooks if h.get("phase") == "execute"), None)
    if execute is not None:
        obs.response = _response(execute)
    failed = next((h for h in obs.hooks if h.get("status") != "ok"), None)
    if failed is not None:
        obs.problem, obs.http_status = classify(failed, headers)
        obs.phase = failed.get("phase")
        obs.diagnosis = f"{obs.phase} {failed.get('status')}: {failed.get('diagnosis') or ''}"
        obs.response = _response(failed)
        # close failures are warnings in a run; here they still count: the profile is wrong
        return
    if engine.prepare_failed:
        obs.problem, obs.phase, obs.diagnosis = "failed", "prepare", engine.prepare_failed
        return
    if record.get("status") == "stopped":
        obs.problem, obs.phase = "no_conversation", "execute"
        obs.diagnosis = record.get("reason") or PROBLEMS["no_conversation"]
        return
    if not obs.turns:
        obs.problem, obs.diagnosis = "failed", record.get("reason") or "no turn was recorded"
        return
    obs.ok = True


__all__ = [
    "DEFAULT_GOAL",
    "Observation",
    "PROBLEMS",
    "classify",
    "compare_capabilities",
    "phase_line",
    "probe",
    "waiting_line",
]
