"""Plain data passed between the engine, the plugins and the store.

Everything here is a dataclass with no behaviour beyond small helpers, so a
plugin can rely on the attribute names (they are part of the contract) and
the store can turn any record into JSON.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .plain import plain


def _as_dict(obj: Any) -> dict[str, Any]:
    """A dataclass instance's fields as a dict, one level deep (a shallow
    ``asdict``); the field names are read once per class."""
    cls = type(obj)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return {name: getattr(obj, name) for name in names}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}

if TYPE_CHECKING:
    from collections.abc import Callable

PHASES: tuple[str, ...] = ("prepare", "open", "execute", "close", "collect", "judge")
"""The fixed lifecycle, in order. ``judge`` is owned by Rook."""

HOOK_PHASES: tuple[str, ...] = PHASES[:-1]
"""Phases a profile can attach a hook to."""

SCENARIO_PHASES: tuple[str, ...] = PHASES[1:]
"""The phases each scenario run goes through (prepare is once per run)."""

_SCENARIO_PHASES = ("open", "execute", "close", "collect")
ROOK_VARIABLES: dict[str, tuple[str, ...]] = {
    "ROOK_HOOK": HOOK_PHASES,
    "ROOK_WORKSPACE": HOOK_PHASES,
    "ROOK_PROJECT": HOOK_PHASES,
    "ROOK_AGENT": HOOK_PHASES,
    "ROOK_STATE_DIR": HOOK_PHASES,
    "ROOK_RUN_STATE_DIR": HOOK_PHASES,
    "ROOK_RUN_ID": HOOK_PHASES,
    "ROOK_SCENARIO_ID": _SCENARIO_PHASES,
    "ROOK_SESSION": _SCENARIO_PHASES,
    "ROOK_TURN": ("execute",),
    "ROOK_CONVERSATION": ("execute", "close", "collect"),
}
"""The variables Rook owns (the reference's table, and ``ROOK_RUN_STATE_DIR``),
each with the phases in which Rook may set it. A hook sees one only when Rook
sets it: never from Rook's own environment, never from a profile's ``hook_env``
(``ROOK_CONVERSATION`` is absent when no handle was returned)."""

DEFAULT_TIMEOUTS: dict[str, float] = {
    "prepare": 60.0,
    "open": 30.0,
    "execute": 300.0,
    "close": 30.0,
    "collect": 120.0,
}
ENTRY_OPTIONS = ("timeout_seconds", "delay_seconds")
"""A hook entry's own options beside its one transport key (no transport's key)."""
CLOSE_TIMEOUT_FLOOR = 5.0
# The variables that identify a hook's descendants once they escaped its process
# group (HookCall.marker; a Ruhroh wrapper's are in its turn's env)
MARKER_KEYS = ("ROOK_RUN_ID", "ROOK_STATE_DIR", "ROOK_HOOK", "ROOK_TURN")
DEFAULT_OUTPUT_LIMIT = 10 * 1024 * 1024

SLUG = r"^[a-z0-9][a-z0-9_-]*$"
"""Profile and scenario ids: lower-case letters, digits, - and _ (a pattern for
:func:`re.match`: the modules every ``rook run`` imports compile none at import)."""
SLUG_RULE = "must be a slug: lower-case letters, digits, - and _, starting with a letter or digit"
"""What a file whose id breaks :data:`SLUG` is told."""


def slug(text: str) -> str:
    """An id made from a name: lower-case letters, digits, ``-`` and ``_``;
    accents are folded (``Café`` -> ``cafe``), not dropped (``caf``); empty
    when the name holds none of them (``日本``)."""
    import re
    import unicodedata

    folded = unicodedata.normalize("NFKD", text.strip().lower())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return re.sub(r"[^a-z0-9_-]+", "-", folded).strip("-_")


MAX_PLANNED = 1_000_000
"""The most scenario runs one run plans (scenarios times repeats): each is an
object in memory and a record on disk, and a mistyped ``--repeat`` must be
refused, not planned until the kernel kills Rook."""
ID_MAX = 128
"""The longest profile or scenario id, project or agent name (ASCII, so also
bytes): a run writes ``scenarios/.<id>.<k>.json.<pid>.tmp`` and state folders
named after ids, and a file name holds at most 255 bytes."""

CAPABILITIES: tuple[str, ...] = ("multi_turn", "calls", "usage")

# Scenario verdicts.
PASSED, FAILED, UNVERIFIABLE, ERROR, STOPPED, NOT_RUNNABLE = (
    "passed",
    "failed",
    "unverifiable",
    "error",
    "stopped",
    "not_runnable",
)
INFRA_ERROR = "infra_error"
"""The infrastructure failed, not the agent (a hook result with ``infra`` set, a
lost Dask worker): shown, and the run exits 1, but never counted as decided."""
SCENARIO_STATUSES = (PASSED, FAILED, UNVERIFIABLE, ERROR, STOPPED, NOT_RUNNABLE, INFRA_ERROR)
DECIDED = (PASSED, FAILED, ERROR, STOPPED)
"""Statuses that decide a scenario run (the pass rate's denominator)."""
CRITERION_STATUSES = (PASSED, FAILED, UNVERIFIABLE, ERROR)


@plain
class HookEntry:
    """One phase's hook from a profile: which transport runs it, and how."""

    phase: str
    transport: str
    config: Any
    timeout_seconds: float | None = None
    delay_seconds: float = 0.0

    @property
    def timeout(self) -> float:
        t = (
            self.timeout_seconds
            if self.timeout_seconds is not None
            else DEFAULT_TIMEOUTS[self.phase]
        )
        if self.phase == "close":
            t = max(t, CLOSE_TIMEOUT_FLOOR)
        return float(t)

    def floor_note(self) -> str:
        """Said after a timed-out close whose entry asked less than the floor (the
        timeout path only): else "timed out after 5 s" reads as a setting ignored."""
        asked = self.timeout_seconds
        if self.phase != "close" or asked is None or asked >= CLOSE_TIMEOUT_FLOOR:
            return ""
        return (
            f" (close is given at least {CLOSE_TIMEOUT_FLOOR:g} s: the entry's "
            f"timeout_seconds ({asked:g}) is below that floor)"
        )


@plain
class EnvRef:
    """A variable a profile's ``env`` names: read from Rook's environment, redacted everywhere."""

    variable: str
    purpose: str


@plain
class OutputLimits:
    """The most a hook may print on each stream."""

    stdout_bytes: int = DEFAULT_OUTPUT_LIMIT
    stderr_bytes: int = DEFAULT_OUTPUT_LIMIT


@plain
class Profile:
    """A validated profile: how Rook reaches one agent."""

    id: str
    name: str
    hooks: dict[str, HookEntry]
    env: list[EnvRef] = field(default_factory=list)
    capabilities: dict[str, bool] = field(default_factory=dict)
    hook_env: dict[str, str] = field(default_factory=dict)
    concurrency: int = 1
    limits: OutputLimits = field(default_factory=OutputLimits)
    inherit_env: list[str] | None = None
    """Allow-list (names or glob patterns) of Rook's environment passed to hooks;
    ``None`` passes everything. ``env`` variables always pass."""
    path: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    shown: dict[str, Any] | None = None
    """``raw`` with the credentials written literally in it hidden, as ``rook profile
    show`` hides them (:func:`rook_core.credentials.hidden_profile`), made when the
    profile is validated (so cached with it: a run's copy needs no pattern
    compiled); ``None`` when it holds none."""


SHELL_REFERENCE = r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"
"""A shell variable (``$PATH``, ``${HOME}``), which a hook_env value holds as
text (compiled on first use, as Rook's other patterns: most profiles have no
hook_env)."""


def hook_env_references(profile: Profile) -> list[str]:
    """What to say of each ``hook_env`` entry for a variable Rook owns (ignored), and
    of each value naming a shell variable (``PATH: "$PATH:/opt/bin"``): hooks get it
    as written. Only a reference to a variable
    that is set (or one the profile declares) is quoted, never the rest of the
    value: a literal credential with a ``$`` in it is not read as one."""
    raw = profile.raw.get("hook_env")
    said = [  # dropped when the profile loaded: Rook's value, in its phases only
        f"hook_env.{name} is ignored: {name} is Rook's own variable (the hook contract's), "
        "set by Rook in the phases it belongs to; remove it, or give yours another name"
        for name in (raw if isinstance(raw, dict) else {})
        if name in ROOK_VARIABLES
    ]
    if not profile.hook_env:
        return said
    known = set(os.environ) | {ref.variable for ref in profile.env}
    for name, value in profile.hook_env.items():
        found = [
            ref
            for ref in dict.fromkeys(re.findall(SHELL_REFERENCE, value))
            if ref.strip("${}") in known
        ]
        if found:
            said.append(
                f"hook_env.{name} holds {', '.join(found)}, which every hook gets as written "
                "(hook_env expands no variable): write the value itself"
            )
    return said


@plain(slots=True)
class Criterion:
    """One parsed criterion of a scenario."""

    type: str
    config: Any
    turn: int | str | None = None  # None: the type's default scope; "all"; or 1-based
    index: int = 0
    raw: dict[str, Any] = field(default_factory=dict)


@plain(slots=True)
class Scenario:
    """One scenario definition. Slotted: a run holds every selected definition."""

    id: str
    name: str
    turns: list[str]
    criteria: list[Criterion] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    repeat: int = 1
    path: str | None = None
    """The file it was read from."""
    content_hash: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    goal_turn: int = 0
    """Which turn is the goal (0-based): the first, but the last for a public-CLI
    file, whose ``setup_messages`` come before its ``goal``."""

    @property
    def goal(self) -> str:
        return self.turns[self.goal_turn]


@plain(slots=True)
class ScenarioRun:
    """One planned execution of a scenario (one repeat)."""

    scenario: Scenario
    repeat_index: int = 1
    repeat_count: int = 1
    key: str = field(init=False, repr=False, compare=False)
    """``<scenario id>.<repeat index>``: its record's name (made once: a run reads it
    about ten times)."""

    def __post_init__(self) -> None:
        self.key = f"{self.scenario.id}.{self.repeat_index}"

    @property
    def name(self) -> str:
        """How Rook names it to its user (:func:`run_name`): ``fails #2``, not its key."""
        return run_name(self.scenario.id, self.repeat_index, self.repeat_count)


def run_name(scenario_id: str, index: int, count: int) -> str:
    """A scenario run as Rook names it to its user, in the results table, the
    progress lines and messages: its scenario's id (``fails``), with ``#N`` when
    the scenario runs more than once (``fails #2``). Its record key
    (``fails.2``) names its file, not it."""
    return scenario_id if count == 1 else f"{scenario_id} #{index}"


@plain
class RunContext:
    """What every hook call knows about the run it belongs to."""

    id: str
    dir: Path
    workspace: Path
    project: str
    agent: str
    agent_dir: Path
    profile: Profile
    state_dir: Path
    resources: dict[str, Any] = field(default_factory=dict)
    """Per-run objects a transport keeps (e.g. one HTTP client), by transport key."""
    saved: dict[str, Any] = field(default_factory=dict)
    """Values a phase saved for later phases (e.g. a token minted in prepare)."""
    redactor: Any = None
    """The run's :class:`rook_core.redact.Redactor`; a transport ``add``s secrets it
    learns during the run (e.g. a token minted in prepare) so they are never recorded."""
    judge: bool = False
    """True for the judge profile's hooks (their records under ``runs/<id>/judge/``):
    their results reach no ``rook_evidence_recorded`` observer, so a transport that
    keeps a file of its own from its results (the Ruhroh manifest) keeps it itself."""


@plain
class HookCall:
    """Everything a transport needs to run one phase of one hook entry."""

    phase: str
    entry: HookEntry
    run: RunContext
    env: dict[str, str]
    timeout: float
    limits: OutputLimits
    scenario_run: ScenarioRun | None = None
    turn: int | None = None
    stdin: str | None = None
    conversation: str | None = None
    session: str | None = None
    state_dir: Path | None = None
    turns_total: int = 1
    recorded: list[dict[str, Any]] | None = None
    """The hook records (redacted) of the scenario run so far, an earlier
    invocation's too (a run split by ``--phases``, or resumed): what a transport
    tells of them, such as why open gave no conversation handle."""
    on_exit: Callable[[], None] | None = None
    """Set on a scenario run's last hook call when that is the last turn's
    execute (no close or collect hook follows), else ``None``: a transport whose agent is a
    process may call it (once, without awaiting) as soon as the process has
    exited, before reading the rest of its output; the next scenario run's
    hook then starts without waiting for this one's output to be parsed. A
    transport that does not call it loses nothing: the run's place is given
    back when the call returns."""

    @property
    def profile(self) -> Profile:
        return self.run.profile

    @property
    def marker(self) -> dict[str, str]:
        """Variables that identify this hook's descendants if they escape its
        process group (passed to :func:`rook_core.process.run_process`)."""
        return {k: self.env[k] for k in MARKER_KEYS if k in self.env}

    @property
    def scenario(self) -> Scenario | None:
        return self.scenario_run.scenario if self.scenario_run else None


@plain
class HookResult:
    """What running one hook produced; written to the run record as is."""

    phase: str
    status: str  # "ok", "failed", "timeout", "interrupted"
    seconds: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    exit_code: int | None = None
    data: dict[str, Any] | None = None
    stdout: str = ""
    stderr: str = ""
    diagnosis: str | None = None
    turn: int | None = None
    transport: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    infra: bool = False
    """On a failed result: the infrastructure failed, not the agent (after any
    retry the transport made). The scenario run is ``infra_error``: never
    counted against the agent, nor as decided."""
    end_conversation: str | None = None
    """On an ``ok`` execute result: the conversation is over (the agent reported
    a terminal status, an iteration budget ran out), and why. The engine sends
    no later turn and records the reason; the scenario is judged on the turns
    that ran."""
    conversation_assigned: bool = False
    """``data["conversation"]`` is a handle the transport made up itself, not one
    the agent (or an open hook) returned: the conversation continues by it,
    but it does not show the ``multi_turn`` capability."""
    warning: str | None = None
    """On an ``ok`` execute result: something the scenario run's report should
    say although the turn completed (a budget ran out, a retried failure); the
    engine adds it to the run's ``warnings``."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        # a shallow copy: asdict's recursive deep copy costs more than the hook
        # on fast agents; the engine redacts (and so copies) what it records
        return _as_dict(self)


@plain
class Verdict:
    """A criterion's verdict. ``evidence`` holds what the criterion gathered
    while judging (a judge's call and answer, a command's output); it is
    recorded with the verdict."""

    status: str
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)


@plain
class TurnEvidence:
    """What one execute turn gave back, normalised."""

    turn: int
    input: str
    output: str | None
    conversation: str | None = None
    usage: dict[str, Any] | None = None  # None: not observed
    calls: list[dict[str, Any]] | None = None  # None: not observed; [] observed none
    evidence: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)
