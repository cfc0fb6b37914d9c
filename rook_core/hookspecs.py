"""The contract between Rook's core and every plugin, built-in or third-party.

Every hook is ``rook_``-prefixed and called with keyword arguments only.
Plugins implement a subset with :data:`hookimpl`; pluggy lets an
implementation accept fewer arguments than the spec offers, so specs gain
arguments over time and never lose them.

Result modes are chosen on purpose:

* ``firstresult`` where exactly one plugin answers (the transport that owns a
  hook entry's key runs that phase);
* list-collecting where everyone contributes (observers of evidence);
* a ``register`` callback for registries, so the core rejects duplicate names
  with a clear error.

Phase hooks return an *awaitable* resolving to a
:class:`rook_core.models.HookResult` (the engine is asyncio based), or
``None`` when the call is not theirs.
"""

from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "rook"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ---------------------------------------------------------------------------
# transport: how a phase reaches the agent
# ---------------------------------------------------------------------------


@hookspec
def rook_register_transports(register: Any) -> None:
    """Register the hook-entry keys this plugin can run.

    Called once when the plugin manager is built.

    :param register: ``register(spec)`` where ``spec`` is a
        :class:`rook_core.transports.TransportSpec`: the key a profile's hook
        entry uses (``script``, ``http``, ``ruhroh`` ...), a function that
        validates and normalises the entry's value (raising
        ``marshmallow.ValidationError`` with a message naming the field), and
        optional per-run ``start``/``stop`` callables for shared resources such
        as one HTTP client per run (under ``--executor dask``, also once per
        scenario run on the worker that runs it: a resource cannot travel).
        Registering a key twice is an error naming both plugins.
    :returns: nothing.
    """


@hookspec(firstresult=True)
def rook_transport_execute(call: Any) -> Any:
    """Run the ``execute`` phase: send one turn's text and return the answer.

    Called once per turn of every scenario. Stops at the first non-None result.

    :param call: a :class:`rook_core.models.HookCall`; ``call.entry.transport``
        names the key of the profile's hook entry (answer only for your own
        key), ``call.stdin`` holds the turn's text byte for byte,
        ``call.turn`` its one-based number, ``call.conversation`` the handle
        returned by open or the previous turn, ``call.env`` the environment
        Rook built for this phase.
    :returns: an awaitable of :class:`rook_core.models.HookResult` whose
        ``data`` is the JSON object the agent answered (``output`` required,
        ``conversation``, ``usage``, ``calls`` and any other field kept as
        evidence), or ``None`` when the entry is not yours.
    """


# ---------------------------------------------------------------------------
# auth: once per run, before any scenario
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def rook_auth_prepare(call: Any) -> Any:
    """Run the ``prepare`` phase: sign in, mint a token, warm a cache.

    Called once per run before any scenario starts (and not again when a run
    is resumed after a successful prepare). Stops at the first non-None result.

    :param call: a :class:`rook_core.models.HookCall` with no scenario;
        ``call.run.saved`` is where values for later phases may be put (in
        memory only: a run resumed in a new process starts with it empty).
    :returns: an awaitable of :class:`rook_core.models.HookResult`, or
        ``None`` when the entry is not yours.
    """


# ---------------------------------------------------------------------------
# session: around each scenario
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def rook_session_open(call: Any) -> Any:
    """Run the ``open`` phase: create a session or reset fixtures.

    Called before each scenario run that starts (not for one refused before
    it, as ``not_runnable`` for a capability the profile lacks, nor after a
    failed prepare). A ``conversation`` in the result's
    ``data`` becomes the conversation handle for the first turn. Stops at the
    first non-None result.

    :param call: a :class:`rook_core.models.HookCall` for the scenario run.
    :returns: an awaitable of :class:`rook_core.models.HookResult`, or
        ``None`` when the entry is not yours.
    """


@hookspec(firstresult=True)
def rook_session_close(call: Any) -> Any:
    """Run the ``close`` phase: end the session or release resources.

    Called after the last turn of each scenario run (also after a stopped or
    failed one, so resources are released). Stops at the first non-None
    result.

    :param call: a :class:`rook_core.models.HookCall`; ``call.conversation``
        holds the last known handle.
    :returns: an awaitable of :class:`rook_core.models.HookResult`, or
        ``None`` when the entry is not yours.
    """


# ---------------------------------------------------------------------------
# evidence: collection after the session, and observers of what was recorded
# ---------------------------------------------------------------------------


@hookspec(firstresult=True)
def rook_evidence_collect(call: Any) -> Any:
    """Run the ``collect`` phase: fetch traces, logs, usage, calls, artifacts.

    Called after close, possibly in a later ``rook run --run ID`` process,
    and only for a scenario run still to be judged: not when it already
    ended ``error`` or ``stopped`` (a failed open or execute, say), so release
    nothing here that close does not. Stops at the first non-None result.

    :param call: a :class:`rook_core.models.HookCall`.
    :returns: an awaitable of :class:`rook_core.models.HookResult` whose
        ``data`` is a JSON object (``usage`` and ``calls`` are read, every
        other field kept as evidence), or ``None`` when the entry is not
        yours.
    """


@hookspec
def rook_evidence_recorded(run: Any, record: Any, result: Any) -> None:
    """Observe a hook result the moment it is part of a scenario's evidence.

    Called for every hook result of every phase of the agent's profile, in
    the order they happen, after redaction (a judge profile's hook results,
    kept with its criterion's verdict, are not observed). Every implementation is called; return values are
    ignored. Observers must not block (they run on the event loop). One that
    raises is named in a warning (once per plugin and run) and stops neither
    the run nor the other observers.

    :param run: the :class:`rook_core.models.RunContext`.
    :param record: the scenario-run record (a dict, as stored) or ``None``
        for prepare.
    :param result: the :class:`rook_core.models.HookResult`.
    :returns: nothing (return values are ignored).
    """


@hookspec
def rook_evidence_merged(merged: Any) -> None:
    """Join a plugin's own run-level files when ``rook merge`` joins a sharded run.

    Called by ``rook merge`` once the shards' records, state directories and
    manifest parts are joined into the merged run directory and its
    ``run.json`` is written, before the report is made. A plugin that keeps a
    file of its own in the run directory (the Ruhroh plugin's
    ``ruhroh-run-manifest.json``) reads each shard's copy from
    ``merged.sources`` and writes the joined one into ``merged.path``. Every
    implementation is called, each on its own; return values are ignored. One
    that raises is named in a warning and stops neither ``rook merge`` nor the
    others.

    :param merged: the :class:`rook_core.merging.Merged` run: ``path`` (the merged
        run directory), ``manifest`` (its ``run.json``), ``sources`` (the shards'
        run directories, ``path`` among them when it held a shard), and ``notes``
        (append a warning to have ``rook merge`` print it).
    :returns: nothing (return values are ignored).
    """


# ---------------------------------------------------------------------------
# judging: criterion types and whole judges
# ---------------------------------------------------------------------------


@hookspec
def rook_register_criteria(register: Any) -> None:
    """Register criterion types usable in a scenario's ``criteria`` list.

    Called once when the plugin manager is built.

    :param register: ``register(criterion_type)`` where ``criterion_type`` is
        an instance of a :class:`rook_core.judging.CriterionType` subclass (the
        class itself is refused): its ``name`` (the key in the scenario file),
        the capabilities it ``needs``, whether it is judged ``per_turn`` (one
        answer: the last turn, ``turn: N`` or each with ``turn: all``) or across
        the turns, and ``parse``/``evaluate`` methods. A duplicate name, or
        ``turn`` or ``id``, is an error naming the plugins.
    :returns: nothing.
    """


@hookspec
def rook_register_judges(register: Any) -> None:
    """Register whole judges, used by ``judge: {name: ..., ...}`` criteria.

    Called once when the plugin manager is built.

    :param register: ``register(name, judge)`` where ``judge`` is a callable
        ``judge(config, view) -> Verdict`` (or an awaitable of one):
        ``config`` is the criterion's mapping without ``name``, ``view``
        the :class:`rook_core.judging.EvidenceView` of every turn (only turn N
        with ``turn: N``; its ``judging.client`` reaches the judge profile when
        one is configured). ``judge`` is an instance (a class is refused).
        The judge may also offer ``check(config) -> str | None``, called
        before anything runs; a message refuses the run (exit 2). Written
        ``check(config, judging)``, it also gets the
        :class:`rook_core.judging.JudgingContext` (``judging.workspace``, to
        check a file the configuration names). A
        duplicate name is an error naming both plugins.
    :returns: nothing.
    """


# ---------------------------------------------------------------------------
# connectors: agent connectors with the advanced (Ruhroh) lifecycle
# ---------------------------------------------------------------------------


@hookspec
def rook_register_connectors(register: Any) -> None:
    """Register agent connectors usable as ``connector: {name: ..., ...}`` hook entries.

    Called once when the plugin manager is built. A connector owns the
    agent-specific behaviour of the advanced lifecycle (the Ruhroh connector
    contract); Rook owns the task loop and maps the connector onto its own
    phases (see ``docs/ruhroh.md``).

    :param register: ``register(connector_class)`` where ``connector_class``
        has a ``name`` (the value of ``connector.name`` in a profile), a
        declared ``continuity`` level (``native_session``,
        ``workspace_plus_transcript`` or ``workspace_only``) and the methods
        ``prepare``, ``start_session``, ``run_turn``, ``detect_completion``,
        ``collect_artifacts`` and ``cleanup`` (each may be a coroutine). It is
        instantiated with the entry's options when the profile is checked
        (before anything runs) and once per run. A duplicate name is an error
        naming both plugins.
    :returns: nothing.
    """


# ---------------------------------------------------------------------------
# registries: reporters, authors, executors
# ---------------------------------------------------------------------------


@hookspec
def rook_register_reporters(register: Any) -> None:
    """Register report formats for ``--report FORMAT:PATH``.

    Called once when the plugin manager is built.

    :param register: ``register(name, write)`` where ``write(report, path)``
        (a plain function, or an ``async def`` one, run to its end) writes the
        JSON report document (a dict) to ``path`` in its format: a temporary
        file with the target's name, renamed over the target once ``write``
        returns (removed if it raises, which fails that report only, exit 1:
        the run is recorded). ``name`` is the ``FORMAT`` of ``--report
        FORMAT:PATH`` (no ``:`` in it); a duplicate is an error naming both
        plugins.
        ``report["scenarios"]`` and ``report["summary"]["by_scenario"]`` are
        lists, possibly read-only ones whose items are read on demand
        (:class:`rook_core.reportio.LazyList`, so a run of any size never sits
        in memory whole): index, slice, ``len`` and iterate them as often as
        needed, but do not change them (``list(...)`` makes a copy you may
        change). ``json.dumps(report)`` works and builds the whole text;
        :func:`rook_core.reportio.dump` writes the same text piece by piece.
    :returns: nothing.
    """


@hookspec
def rook_register_authors(register: Any) -> None:
    """Register profile authors for ``rook profile add`` and ``rook profile fix``.

    Called once, the first time a command asks for the authors (the
    ``rook profile`` commands, ``rook plugins``, ``rook doctor``), not by ``rook run``: a
    plugin may import what its authors need here. An author turns a source (a
    cURL command, a command line, an OpenAPI document, a script, a URL,
    plain-language notes) into a :class:`rook_core.authoring.Draft`: the
    profile's hooks, any hook script to write under the agent's ``scripts/``,
    and ``env`` references in place of every secret (values go to
    ``request.secrets.add(...)``, never into a file). Rook then probes the real
    target and lets the author correct the draft from what it observed.

    :param register: ``register(name, author)``; ``author`` is an object with
        ``detect(source) -> float`` (0 to 1: how sure it is it can write the
        :class:`rook_core.authoring.Source`; the most confident one writes),
        ``write(request) -> Draft`` (from a
        :class:`rook_core.authoring.AuthorRequest`; may raise
        :class:`rook_core.authoring.NeedsChoice` to let the user pick, or
        :class:`rook_core.authoring.CannotAuthor` to hand the source to the
        author agent), and optionally ``revise(draft, observation, request)``
        (after each probe, with the :class:`rook_core.profile_probe.Observation`:
        a corrected draft whose ``changes`` say what and why, or ``None``),
        ``repair(draft, observation, request)`` (``rook profile fix``: the same,
        for an existing profile; a repair that loosens a check is refused),
        ``conclude(draft, observation, request)`` (once, with the last
        observation, ``None`` when nothing was tested: the draft's notes, as
        what the probes showed, or ``None`` to keep them) and
        ``suggest_name(source)``. ``fallback = True`` marks the author agent,
        which gets plain-language notes and what no other author settles. A
        duplicate name is an error naming both plugins.
    :returns: nothing.
    """


@hookspec
def rook_register_executors(register: Any) -> None:
    """Register executors that run scenario runs (``--executor NAME``).

    Called once when the plugin manager is built.

    :param register: ``register(name, executor)`` where ``executor`` is an
        async callable ``executor(engine, scenario_runs, concurrency, options)``
        that runs ``await engine.run_scenario(sr)`` for every scenario run
        and returns when all are done; the engine records each result
        (``engine.run_scenario(sr, slots)`` holds a slot of the semaphore
        ``slots`` from the run's first hook to its last, not while it is
        prepared or judged). An
        executor that runs scenarios elsewhere splits it: ``engine.load_record``
        and ``engine.store_scenario`` here, ``engine.compute_scenario`` (plain,
        picklable inputs and output) where the hooks run. ``options`` holds the
        executor's flags (``{"scheduler": ADDRESS}`` for ``dask``). The executor
        may have a ``check(options)`` method, called before anything runs, that
        raises :class:`rook_core.errors.ConfigError` (a missing extra, a bad flag)
        or returns that message (``None`` when the options are fine).
    :returns: nothing.
    """
