"""What a transport plugin registers, and how the engine dispatches a phase."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from .errors import ConfigError, HookFailed, PluginError, RookError, exception_text
from .models import HookCall, HookResult
from .plain import plain
from .plugins import plugin_failure
from .redact import quoted
from .registry import opted_in

T = TypeVar("T")
_hook_path: ContextVar[str | None] = ContextVar("rook_hook_path", default=None)


@contextmanager
def searching(path: str) -> Iterator[None]:
    """Make ``path`` the :func:`hook_search_path` while transports resolve a
    profile's entries (the engine's ``resolve_entries``)."""
    token = _hook_path.set(path)
    try:
        yield
    finally:
        _hook_path.reset(token)


def hook_search_path() -> str:
    """The ``PATH`` the profile's hooks will get (its ``hook_env`` and
    ``inherit_env`` applied; the system default when they leave none), for a
    transport's ``resolve`` that looks a program up; Rook's own ``PATH``
    outside one."""
    found = _hook_path.get()
    return os.environ.get("PATH", os.defpath) if found is None else found


def elsewhere_on_path(name: str) -> str | None:
    """Where Rook's own ``PATH`` finds ``name`` when the hooks' ``PATH`` (their
    ``hook_env`` or ``inherit_env``) does not: ``None`` when the two are the same or
    Rook's does not have it either (it is not installed). Said instead of "not
    installed", which sends a user to install what they have. Error path only."""
    import shutil

    own = os.environ.get("PATH", os.defpath)
    if hook_search_path() == own:
        return None
    return shutil.which(name, path=own)


def not_on_hook_path() -> str:
    """``is not on the PATH the hooks get (...)``, that PATH cut to 200 characters."""
    shown = hook_search_path()
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    return f"is not on the PATH the hooks get ({shown})"


def add_to_hook_path(found: str) -> str:
    """The fix for a program found by :func:`elsewhere_on_path` only, at ``found``."""
    return (
        f"add {os.path.dirname(found)} to the PATH in the profile's hook_env "
        "(or PATH to its inherit_env)"
    )


def off_hook_path(found: str) -> str:
    """The words for an interpreter found by :func:`elsewhere_on_path` only."""
    return f"{not_on_hook_path()}, though Rook's own PATH has it ({found}): " + add_to_hook_path(
        found
    )


SCRIPT_INTERPRETERS = {".mjs": "node", ".js": "node", ".cjs": "node", ".sh": "bash", ".py": None}
"""The program that runs a hook script without the run bit, by its extension
(``None``: the Python running Rook). The script transport runs them so, and
``rook doctor`` checks them so."""

SHEBANGS = {
    ".sh": "#!/usr/bin/env bash",  # as Rook runs one without the run bit
    ".bash": "#!/usr/bin/env bash",
    ".py": "#!/usr/bin/env python3",
    ".mjs": "#!/usr/bin/env node",
    ".js": "#!/usr/bin/env node",
    ".cjs": "#!/usr/bin/env node",
    ".rb": "#!/usr/bin/env ruby",
    ".pl": "#!/usr/bin/env perl",
    ".php": "#!/usr/bin/env php",
    ".lua": "#!/usr/bin/env lua",
}
"""The ``#!`` line to suggest for an executable script of each extension."""


def shebang_advice(suffix: str) -> str:
    """What to add to an executable script of the extension ``suffix`` that has no
    ``#!`` line: the exact line for a known extension, an example for another."""
    line = SHEBANGS.get(suffix.lower())
    if line is not None:
        return f"add {line} as its first line"
    return "add a #! line naming its interpreter as its first line, such as #!/usr/bin/env bash"


# env's options that take a value as the next word (GNU and BSD env).
ENV_VALUE_OPTIONS = ("-u", "--unset", "-C", "--chdir", "-P", "--argv0", "-a")


def env_program(arg: str) -> str | None:
    """The program ``/usr/bin/env ARG`` starts: options (``-S``/``--split-string``
    and the rest) and ``NAME=VALUE`` assignments skipped, or ``None``: how the
    script transport and ``rook doctor`` read a ``#!/usr/bin/env`` line."""
    words = arg.split()
    i = 0
    while i < len(words):
        word = words[i]
        if word in ENV_VALUE_OPTIONS:
            i += 2
            continue
        if word.startswith("-S") and len(word) > 2:  # -Snode --flag
            return word[2:]
        if word.startswith("--split-string=") and len(word) > 15:  # its long form
            return word[15:]
        if word.startswith("-") or ("=" in word and not word.startswith("=")):
            i += 1
            continue
        return word
    return None


def windows_line_endings(path: Any) -> bool:
    """Whether the first 64 KiB of the file at ``path`` hold a line ending in
    ``\\r\\n`` (which bash reads as part of each line's last word)."""
    try:
        with open(path, "rb") as fh:
            return b"\r\n" in fh.read(65536)
    except OSError:
        return False


@plain
class TransportSpec:
    """A hook-entry key a plugin runs.

    :param key: the key in a profile's hook entry (``script``, ``http`` ...).
    :param load_config: validates and normalises the entry's value; raises
        ``marshmallow.ValidationError`` (message, or ``{field: [message]}``).
    :param description: one line for ``rook plugins`` and error messages.
    :param resolve: optional ``resolve(config, agent) -> config``, called before
        anything runs with the :class:`rook_core.workspace.Agent`; checks what
        can be checked early (a script exists, an interpreter is installed)
        and raises :class:`rook_core.errors.ConfigError` naming the problem. A
        program looked up by name is looked up in :func:`hook_search_path`.
    :param start: optional ``async start(run) -> resource``, called once per
        run before the first hook of this transport, when a phase the
        invocation runs uses it (``--phases``); the resource is kept in
        ``run.resources[key]``. Under ``--executor dask`` each task (one
        scenario run on a worker) starts its own too, and stops it when it ends.
    :param stop: optional ``async stop(resource)``, called when the run ends.
    :param scenario_ended: optional ``scenario_ended(resource, scenario_run)``,
        called with the resource ``start`` gave (or a hook left in
        ``run.resources[key]``) when a scenario run's phases of this invocation
        are over, however they ended (cut off, interrupted, its close phase
        absent or not selected): the transport frees what it keeps for that run
        (its cookies, its saved values), which would otherwise grow with every
        scenario run of a long run. No hook of that run comes after it in this
        invocation; a later one (``rook run --run ID``, ``--phases``) starts afresh, so
        what it needs then is in the run's ``call.state_dir``. A judge profile's
        hooks get a scenario run of their own for each judgement (key ``ID.N-jK``),
        ended when that judgement ends.
    :param check: optional ``check(config, plugins) -> config``, called right after
        ``resolve`` with the loaded :class:`rook_core.plugins.Rook`, for entries
        naming something another plugin registers (a connector), or needing the
        rest of the profile; raises :class:`rook_core.errors.ConfigError` naming
        the problem. Opt-in arguments, as pluggy's: a ``check`` that names the
        parameter ``phase`` gets the entry's phase, one that names ``profile``
        the whole :class:`rook_core.models.Profile` (every phase's entry), so it
        can check what one entry needs from another (see :func:`run_check`).
    :param saved_names: optional ``saved_names(config) -> [NAME, ...]``: the
        names of the values the entry saves for later phases (``run.saved``, or
        an ``http:`` entry's ``save:``). A transport that gives it (returning
        nothing when it saves nothing) lets a later entry's ``check`` refuse a
        name no earlier phase saves; without it, its entries may save any name.
    :param env_names: optional ``env_names(config) -> [(field path, NAME), ...]``:
        the environment variables the entry itself reads (an ``http:`` entry's
        ``{{env.NAME}}``). When the profile loads, each NAME must be declared in
        its ``env:`` list (so it is checked before the run and its value
        redacted) or be a ``hook_env`` name or a variable Rook sets in that
        phase; otherwise the profile is refused naming the field and variable.
    :param handles_timeout: ``True`` when the transport's phase hooks end within
        ``call.timeout`` themselves (killing what they started; a Ruhroh entry's
        several iterations each have it). Otherwise (the default) Rook stops
        waiting :data:`TIMEOUT_GRACE_SECONDS` after ``call.timeout`` and the hook
        is a ``timeout``, so a plugin that ignores the timeout cannot hang a run.
    :param runnable: optional ``runnable(config, scenario) -> str | None``, called
        before a scenario's first hook; a string is why this
        entry cannot run the scenario, which then is ``not_runnable`` with that
        reason.
    :param check_scenario: optional ``check_scenario(config, scenario) -> str | None``,
        called by ``rook run`` with each selected scenario before anything runs; a
        string (``FIELD holds ...``) is why the entry could never send the scenario
        as written (a turn longer than the environment variable that carries it):
        the run is refused (exit 2), naming the scenario's file. It is asked about
        the entry of every phase: written ``check_scenario(config, scenario, phase)``
        (or with ``profile``), as ``check`` may be, it gets the entry's phase too.
    :param continuity: optional ``continuity(config) -> str | None``: the Ruhroh
        continuity level the entry declares (``native_session``,
        ``workspace_plus_transcript``, ``workspace_only``), or ``None``. Called
        once per new run, after ``check``, for each entry of the agent's profile;
        the levels are recorded in the run's ``run.json`` (``continuity``) and
        shown by its reports, also when no hook ran (every scenario
        ``not_runnable``).
    """

    key: str
    load_config: Callable[[Any], Any]
    description: str = ""
    resolve: Callable[[Any, Any], Any] | None = None
    start: Callable[[Any], Awaitable[Any]] | None = None
    stop: Callable[[Any], Awaitable[None]] | None = None
    scenario_ended: Callable[[Any, Any], None] | None = None
    check: Callable[..., Any] | None = None  # (config, plugins), plus opt-in phase, profile
    runnable: Callable[[Any, Any], str | None] | None = None
    check_scenario: Callable[..., str | None] | None = None  # plus opt-in phase, profile
    env_names: Callable[[Any], Iterable[tuple[str, str]]] | None = None
    saved_names: Callable[[Any], Iterable[str]] | None = None
    handles_timeout: bool = False
    continuity: Callable[[Any], str | None] | None = None


TIMEOUT_GRACE_SECONDS = 5.0
"""How long after ``call.timeout`` Rook waits for a transport that does not
handle its timeout itself (``TransportSpec.handles_timeout``)."""

HANDLED_TIMEOUT_GRACE_SECONDS = 30.0
"""How long after ``call.timeout`` Rook waits for a plugin's transport that says
it handles its timeout itself (``TransportSpec.handles_timeout``): time for it to
stop what it started and answer its own ``timeout``, and a bound on one that
never does."""


def saves_nothing(config: Any) -> tuple[str, ...]:
    """A ``saved_names`` for a transport whose entries save no value for later phases."""
    return ()


START_TIMEOUT_SECONDS = 60.0
"""How long Rook waits for a transport's ``start`` before the run ends."""


async def start_resource(spec: TransportSpec, run: Any, transports: Any) -> Any:
    """``spec.start(run)``, bounded by :data:`START_TIMEOUT_SECONDS`. One that raises
    (a plugin's bug) or does not return in time is a :class:`HookFailed` naming
    the transport and its plugin, never a traceback or a run that hangs;
    a :class:`rook_core.errors.RookError` it raises passes as it is."""
    assert spec.start is not None
    owner = transports.owner(spec.key)
    limit, clock = START_TIMEOUT_SECONDS, time.monotonic()
    try:
        starting = asyncio.ensure_future(_no_exit(spec.start(run)))
        # read when it ends: cancelled (Ctrl-C), a plugin may raise its own exception
        starting.add_done_callback(_forget)  # instead, which wait_for never reads
        return await asyncio.wait_for(starting, limit)
    except ConfigError as exc:  # a user's mistake (exit 2): said with who refused it
        exc.args = (f"transport {spec.key!r} ({owner}) could not start: {exc}",)
        raise
    except RookError:
        raise
    except asyncio.TimeoutError as exc:
        if time.monotonic() - clock < limit:  # the plugin's own TimeoutError: its bug
            raise HookFailed(
                f"transport {spec.key!r} ({owner}) could not start: {exception_text(exc)}"
            ) from None
        raise HookFailed(
            f"transport {spec.key!r} ({owner}) did not start within {limit:g} s; "
            "Rook stopped waiting (no scenario was run)"
        ) from None
    except BaseException as exc:  # the plugin's bug (sys.exit() too)
        if not plugin_failure(exc):
            raise
        raise HookFailed(
            f"transport {spec.key!r} ({owner}) could not start: {_fault_text(exc)}"
        ) from None


class _Exited(Exception):
    """A plugin's ``sys.exit()``, as an exception the callers name (``SystemExit: 0``)."""


async def _no_exit(awaitable: Any) -> Any:
    """``awaitable``'s result; a ``sys.exit()`` in it (SystemExit, no Exception) is
    raised as :class:`_Exited`: in the task ``wait_for`` makes (Python 3.11),
    asyncio would otherwise end the whole run with it. Once per run, never per hook."""
    try:
        return await awaitable
    except SystemExit as exc:
        raise _Exited(exception_text(exc)) from None


def _fault_text(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, _Exited) else exception_text(exc)


STOP_TIMEOUT_SECONDS = 10.0
"""How long Rook waits for a transport's ``stop`` when the run ends."""


async def stop_resources(
    resources: dict[str, Any], transports: Any, warn: Callable[[str], None]
) -> None:
    """Call each transport's ``stop`` on the resource its ``start`` gave. One that
    raises or does not return within :data:`STOP_TIMEOUT_SECONDS` (a plugin's
    bug) never loses the run's results and never keeps the others from
    stopping: ``warn`` gets a message naming the transport and its plugin."""
    for key, resource in list(resources.items()):
        spec = transports.get(key)
        if spec is not None and spec.stop is not None:
            try:
                stopping = asyncio.ensure_future(_no_exit(spec.stop(resource)))
                stopping.add_done_callback(_forget)  # read, as a start is (cancelled)
                await asyncio.wait_for(stopping, STOP_TIMEOUT_SECONDS)
            except asyncio.TimeoutError:  # nor hang it when every scenario has run
                warn(
                    f"transport {key!r} ({transports.owner(key)}) did not stop within "
                    f"{STOP_TIMEOUT_SECONDS:g} s; Rook stopped waiting (the run's results are kept)"
                )
            except BaseException as exc:  # closing must never lose the run's results
                if not plugin_failure(exc):
                    raise
                warn(
                    f"transport {key!r} ({transports.owner(key)}) could not stop: "
                    f"{_fault_text(exc)} "
                    "(the run's results are kept)"
                )
    resources.clear()


def end_scenario(
    resources: dict[str, Any], sr: Any, transports: Any, warn: Callable[[str], None]
) -> None:
    """Tell each transport holding a resource that scenario run ``sr`` is over
    (``TransportSpec.scenario_ended``). One that raises (a plugin's bug) never
    loses the scenario's result: ``warn`` gets a message naming it and its plugin."""
    for key, resource in list(resources.items()):
        spec = transports.get(key)
        ended = getattr(spec, "scenario_ended", None)
        if ended is None:
            continue
        try:
            ended(resource, sr)
        except BaseException as exc:
            if not plugin_failure(exc):
                raise
            warn(
                f"transport {key!r} ({transports.owner(key)}) failed when scenario run "
                f"{sr.name} ended: {exception_text(exc)} (its result is kept)"
            )


def opt_in(func: Any, phase: str, profile: Any) -> dict[str, Any]:
    """The opt-in arguments a transport's ``check`` or ``check_scenario`` names:
    ``phase=`` and ``profile=`` (:func:`rook_core.registry.opted_in`)."""
    return opted_in(func, {"phase": phase, "profile": profile})


def run_check(spec: TransportSpec, config: Any, plugins: Any, phase: str, profile: Any) -> Any:
    """Call ``spec.check(config, plugins)``, adding ``phase=`` and ``profile=``
    when the function names those parameters (:func:`opt_in`)."""
    assert spec.check is not None
    return spec.check(config, plugins, **opt_in(spec.check, phase, profile))


PHASE_HOOKS = {
    "prepare": "rook_auth_prepare",
    "open": "rook_session_open",
    "execute": "rook_transport_execute",
    "close": "rook_session_close",
    "collect": "rook_evidence_collect",
}


CANCEL_GRACE_SECONDS = 2.0
"""How long Rook waits for a plugin's coroutine to end once it is cancelled
(its time ran out, or the run was interrupted) before it closes it."""


class CancelIgnored(asyncio.TimeoutError):
    """:func:`wait_bounded`'s timeout when the awaitable also ignored its cancellation."""


async def wait_bounded(awaitable: Awaitable[T], limit: float) -> T:
    """``asyncio.wait_for(awaitable, limit)`` for a plugin's coroutine, except that
    one that catches its ``CancelledError`` and goes on (which ``wait_for`` waits
    for, however long) is waited for :data:`CANCEL_GRACE_SECONDS` at most: then
    its coroutine is closed (``GeneratorExit`` where it waits, so its ``finally``
    runs) and :class:`CancelIgnored` is raised. The same bound holds when the
    caller is cancelled (an interrupted run). Costs one future more than
    ``wait_for`` on the normal path."""
    task = asyncio.ensure_future(awaitable)
    try:
        return await asyncio.wait_for(asyncio.shield(task), limit)
    except asyncio.TimeoutError:
        if task.done():  # the awaitable's own TimeoutError
            raise
        if not await _cancelled(task):
            raise CancelIgnored() from None
        raise
    except asyncio.CancelledError:
        await _cancelled(task)
        raise


_left: set[asyncio.Future[Any]] = set()  # closed coroutines whose tasks end later
_ignored: list[Any] = []  # coroutines that ignored their closing, never finalized


async def _cancelled(task: asyncio.Future[Any]) -> bool:
    """Cancel ``task`` and wait for it to end; False when it ignored that for
    :data:`CANCEL_GRACE_SECONDS` and its coroutine was closed instead."""
    task.cancel()
    await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
    if task.done():
        if not task.cancelled():
            task.exception()  # retrieved: the caller reports what matters
        return True
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    awaited: list[Any] = []  # the coroutines it awaits (the plugin's, under a wrapper of Rook's)
    step = coro
    while step is not None and len(awaited) < 100:
        awaited.append(step)
        step = getattr(step, "cr_await", None) or getattr(step, "gi_yieldfrom", None)
    try:
        if coro is not None:
            coro.close()  # type: ignore[attr-defined]
    except RuntimeError:  # it ignored GeneratorExit too: nothing more can stop it
        # kept: the garbage collector would close each again, printing 'Exception
        # ignored ... coroutine ignored GeneratorExit' (rook leaves with os._exit)
        _ignored.extend(awaited)
    task.cancel()  # the closed coroutine's task ends at its next step, not at the run's end
    _left.add(task)
    task.add_done_callback(_forget)
    return False


def _forget(task: asyncio.Future[Any]) -> None:
    _left.discard(task)
    if not task.cancelled():
        task.exception()


async def dispatch(hook: Any, call: HookCall, transports: Any = None) -> HookResult:
    """Ask the plugins for the phase's hook; exactly one must answer.

    With the ``transports`` registry, a plugin's transport is waited for at most
    :data:`TIMEOUT_GRACE_SECONDS` beyond ``call.timeout`` (one that handles its
    timeout, ``TransportSpec.handles_timeout``, :data:`HANDLED_TIMEOUT_GRACE_SECONDS`);
    then the hook is a ``timeout`` naming the plugin, never a run that hangs. One
    whose code held the event loop past ``call.timeout`` (:class:`_Timed`) is a
    ``timeout`` too, its late answer not kept. Rook's own transports (each
    handles its timeout: ``TransportSpec.handles_timeout``) are awaited as they are."""
    key = call.entry.transport
    if transports is None or key not in transports.foreign:  # one look a hook: Rook's own
        return await _dispatch(hook, call, transports)  # (script, http, ruhroh) end in time
    handled = transports.get(key).handles_timeout
    grace = HANDLED_TIMEOUT_GRACE_SECONDS if handled else TIMEOUT_GRACE_SECONDS
    limit = call.timeout + grace
    started, clock = time.time(), time.monotonic()
    timed = _Timed(_dispatch(hook, call, transports), clock + call.timeout)
    cut: list[BaseException] = []  # the cancellation that cut the hook off, in its own task
    ignored, said = "", f"did not answer within {call.timeout:g} s"
    try:
        result = await wait_bounded(_noting_cut(timed, cut), limit)
        if not timed.held:
            return result
        late = time.monotonic() - clock
        said = f"answered after {late:.1f} s, past its {call.timeout:g} s timeout"
    except CancelIgnored:
        ignored = "; it ignored its cancellation too, so Rook closed its coroutine"
    except asyncio.TimeoutError:
        if time.monotonic() - clock < limit:  # the transport's own TimeoutError: its bug
            raise
    except asyncio.CancelledError as exc:
        # the hook's own task ended with a cancellation of its own: what run_process or
        # keep_cut_off_output kept on the hook's goes with it (hookio.cut_off_output)
        for name, value in vars(cut[-1]).items() if cut and cut[-1] is not exc else ():
            if not hasattr(exc, name):
                setattr(exc, name, value)
        raise
    if timed.held:  # Rook could not stop waiting while the plugin's code held its loop
        diagnosis = (
            f"{transport_named(key, transports)} {said}: "
            f"its hook blocked Rook's event loop ({timed.held:.1f} s in one stretch without "
            "awaiting, past call.timeout: a blocking call such as time.sleep in an async hook), "
            "so its answer is not kept; a plugin must never block the loop (await, or run "
            "blocking code in a thread: asyncio.to_thread)"
        )
    else:
        diagnosis = (
            f"{transport_named(key, transports)} did not answer within {call.timeout:g} s; "
            f"Rook stopped waiting {grace:g} s later "
            + (
                "(the plugin sets handles_timeout but did not end its hook within call.timeout)"
                if handled
                else "(the plugin does not honour call.timeout)"
            )
        )
    return HookResult(
        call.phase,
        "timeout",
        round(time.monotonic() - clock, 6),
        started,
        time.time(),
        diagnosis=diagnosis + ignored,
        turn=call.turn,
        transport=key,
    )


LOOP_HOLD_SECONDS = 0.5
"""How long one stretch of a transport plugin's hook (from one ``await`` to the
next) may hold the event loop, ending past ``call.timeout``, before the hook is a
``timeout`` that blocked the loop (a ``time.sleep`` in an ``async def``)."""


class _Timed:
    """A plugin's hook coroutine awaited as ``await`` would, each step (its code
    from one ``await`` to the next, which holds the event loop) timed: ``held`` is
    the longest that lasted :data:`LOOP_HOLD_SECONDS` or more and ended after
    ``deadline`` (a monotonic time), else 0. A plugin's transports only: two clock
    reads a step. ``cr_await`` is the coroutine, so a closing walks on to it."""

    __slots__ = ("cr_await", "_it", "deadline", "held")

    def __init__(self, coro: Any, deadline: float) -> None:
        self.cr_await = coro
        self._it = coro.__await__()
        self.deadline = deadline
        self.held = 0.0

    def __await__(self) -> Any:
        return self

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        return self._step(self._it.send, None)

    def send(self, value: Any) -> Any:
        return self._step(self._it.send, value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        # thrown as one exception: the 3-argument form is deprecated
        exc = typ if val is None else val
        if isinstance(exc, type):
            exc = exc()
        if tb is not None:
            exc = exc.with_traceback(tb)
        return self._step(self._it.throw, exc)

    def close(self) -> None:
        self._it.close()

    def _step(self, step: Callable[[Any], Any], arg: Any) -> Any:
        began = time.monotonic()
        try:
            return step(arg)
        finally:
            ended = time.monotonic()
            if ended > self.deadline and ended - began >= LOOP_HOLD_SECONDS:
                self.held = max(self.held, ended - began)


async def _noting_cut(awaitable: Any, cut: list[BaseException]) -> HookResult:
    """``awaitable``'s result; the cancellation that cuts it off goes in ``cut``."""
    try:
        return await awaitable
    except asyncio.CancelledError as exc:
        cut.append(exc)
        raise


def transport_named(key: str, transports: Any = None) -> str:
    """``transport 'KEY' (PLUGIN (DIST))``, as a transport plugin's fault names it
    (the key alone without the ``transports`` registry)."""
    if transports is None or key not in transports:
        return f"transport {key!r}"
    return f"transport {key!r} ({transports.owner(key)})"


async def _dispatch(hook: Any, call: HookCall, transports: Any = None) -> HookResult:
    try:
        caller = getattr(hook, PHASE_HOOKS[call.phase])
        awaitable = caller(call=call)
        if awaitable is None and transports is not None and call.entry.transport in transports:
            # the profile was checked to name a phase its plugin runs: a plugin's bug, this hook's
            raise HookFailed(
                f"{transport_named(call.entry.transport, transports)} returned None for its own "
                f"{call.phase!r} entry, not an awaitable of a HookResult (None is the answer "
                "for another transport's entries)"
            )
        if awaitable is None:
            raise PluginError(
                f"no installed plugin runs the {call.phase!r} phase for "
                f"{call.entry.transport!r} hook entries"
            )
        if not inspect.isawaitable(awaitable):  # a plugin's bug: this hook's failure, named
            raise HookFailed(
                f"{transport_named(call.entry.transport, transports)} returned "
                f"{type(awaitable).__name__}, not an awaitable of a HookResult"
            )
        result = await awaitable
        if not isinstance(result, HookResult):
            raise HookFailed(
                f"{transport_named(call.entry.transport, transports)} returned "
                f"{type(result).__name__}, not a HookResult"
            )
        result = _checked_result(call.entry.transport, result, call.phase, transports)
        if transports is not None and call.entry.transport in transports.foreign:
            return _capped(call, result, transports)  # a plugin's: held to the output cap
        return result
    except SystemExit as exc:  # sys.exit() in a plugin (no Exception): its hook's failure,
        # caught here, in the hook's own task, before asyncio would end the run with it
        raise HookFailed(
            f"{transport_named(call.entry.transport, transports)} raised {exception_text(exc)}"
        ) from None


RESULT_STATUSES = ("ok", "failed", "timeout")


_SCALARS = (str, int, float, type(None))


def _plain_json(value: Any) -> bool:
    """True when ``value`` is made of JSON's own types only (dicts with string
    keys, lists, strings, numbers, booleans, ``None``): checked by walking it, in
    time proportional to its number of values, where encoding it would copy every
    string (an output of 10 MiB: milliseconds on every hook). False does not mean
    it is not JSON (a tuple, an int key), only that it must be encoded to tell."""
    try:
        if isinstance(value, _SCALARS):
            return True
        if type(value) is dict:
            return all(type(k) is str and _plain_json(v) for k, v in value.items())
        if type(value) is list:
            return all(_plain_json(v) for v in value)
    except RecursionError:  # nested too deeply, or circular: json.dumps tells which
        pass
    return False


def _checked_result(key: str, result: HookResult, phase: str, transports: Any = None) -> HookResult:
    """A transport's result as the record can hold it: a known status, a diagnosis
    for one that is not ``ok``, JSON ``data`` and ``details``; anything else is
    this hook's failure naming the transport, its plugin and distribution (not an
    error of the whole run)."""
    if result.status not in RESULT_STATUSES:
        raise HookFailed(
            f"{transport_named(key, transports)} returned a HookResult with status {quoted(result.status)} "
            f"(expected {', '.join(RESULT_STATUSES)})"
        )
    if result.phase != phase:  # recorded as another phase's hook, silently
        raise HookFailed(
            f"{transport_named(key, transports)} returned a HookResult of phase "
            f"{quoted(result.phase)} for its {phase!r} hook (HookResult(call.phase, ...))"
        )
    for name in ("seconds", "started", "ended"):
        number = getattr(result, name)
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise HookFailed(
                f"{transport_named(key, transports)} returned a HookResult whose {name} is a "
                f"{type(number).__name__}, not a number: {quoted(number)}"
            )
    code = result.exit_code
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        raise HookFailed(
            f"{transport_named(key, transports)} returned a HookResult whose exit_code is a "
            f"{type(code).__name__}, not a whole number: {quoted(code)}"
        )
    for name in ("diagnosis", "end_conversation", "warning"):
        text = getattr(result, name)
        if text is not None and not isinstance(text, str):  # read as text by every report
            raise HookFailed(
                f"{transport_named(key, transports)} returned a HookResult whose {name} is a "
                f"{type(text).__name__}, not a text: {quoted(text)}"
            )
    for name, value in (("data", result.data), ("details", result.details)):
        if value is not None and not isinstance(value, dict):  # the engine reads their keys
            raise HookFailed(
                f"{transport_named(key, transports)} returned a HookResult whose {name} is a "
                f"{type(value).__name__}, not a JSON object (a dict)"
            )
    for name in ("data", "details"):
        value = getattr(result, name)
        if _plain_json(value):  # what every built-in transport gives: no need to encode it
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError, RecursionError) as exc:
            raise HookFailed(
                f"{transport_named(key, transports)} returned a HookResult whose {name} is not JSON: {exc}"
            ) from None
    if phase == "execute" and result.status == "ok" and result.data is None:
        raise HookFailed(
            f"{transport_named(key, transports)} returned an ok execute result without data "
            "(the agent's answer goes in data, as {'output': ...})"
        )
    if phase == "execute" and result.status == "ok":
        data = result.data or {}
        if (  # no answer in what a plugin built: the plugin's fault (checked last: rare)
            data.get("output") is None
            and data.get("agent_reply") is None
            and _a_plugins(key, transports)
        ):
            what = (  # worded as turn_evidence's, which profile_probe reads as no_answer
                "data's output is None, which holds no answer"
                if "output" in data
                else f"data has no output field (keys: {', '.join(sorted(data))})"
            )
            raise HookFailed(
                f"{transport_named(key, transports)} returned an ok execute result whose "
                f"{what}: the agent's answer goes in data, as {{'output': ...}}"
            )
    if result.status != "ok" and not result.diagnosis:
        result.diagnosis = (
            f"{transport_named(key, transports)} gave status {result.status} and no diagnosis"
        )
    return result


def _json_chars(value: Any) -> int:
    """At most the number of characters ``value`` takes as JSON (a string's
    characters, one for any other value), counted by walking it: what
    :func:`_capped` measures first, without encoding a result of every hook."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _json_chars(v) for k, v in value.items()) + 1
    if isinstance(value, (list, tuple)):
        return sum(_json_chars(v) for v in value) + 1
    return 1


def _capped(call: HookCall, result: HookResult, transports: Any) -> HookResult:
    """A plugin transport's result held to the cap a script hook's output is
    (``limits.stdout_bytes``, ``limits.stderr_bytes``): ``data`` or ``details``
    longer than that as JSON fails the hook naming the cap and how to raise it,
    the record keeping its first characters only (as a script hook's flood);
    ``stdout`` and ``stderr`` are kept as a script hook's are (their first
    characters)."""
    from .hookio import RECORD_CHARS, clip

    cap = call.limits.stdout_bytes
    for name, limit in (("stdout", cap), ("stderr", call.limits.stderr_bytes)):
        text = getattr(result, name)
        if isinstance(text, str) and len(text) > RECORD_CHARS:
            setattr(result, name, clip(text[:limit]))
    said = False
    for name in ("data", "details"):
        value = getattr(result, name)
        if not value or _json_chars(value) * 6 <= cap:  # \uXXXX: at most 6 bytes a character
            continue
        text = json.dumps(value, ensure_ascii=False, default=str)
        size = len(text.encode("utf-8", "replace"))
        if size <= cap:
            continue
        setattr(result, name, None if name == "data" else {})
        if said:  # data's, said first
            continue
        said = True
        result.status = "failed"
        result.diagnosis = (
            f"{transport_named(call.entry.transport, transports)} returned {name} of {size} "
            f"bytes as JSON, over the {cap}-byte cap on a hook's output; the record keeps its "
            f"first {RECORD_CHARS} characters as stdout (raise limits.stdout_bytes in the "
            "profile if this much output is expected)"
        )
        result.stdout = clip(text[:cap])
        result.end_conversation = result.warning = None
    return result


def _a_plugins(key: str, transports: Any) -> bool:
    """True when ``key`` is a transport of a plugin other than Rook's own: its
    ``data`` is what the plugin built, so a fault in it is the plugin's (Rook's
    ``script`` and ``ruhroh`` pass on what the agent printed, told as the agent's)."""
    return transports is not None and key in transports.foreign


def phase_hooks(keys: str | Collection[str], run: Callable[[HookCall], Any]) -> tuple[Any, ...]:
    """The five phase hook implementations for a transport that runs every phase
    the same way: each answers ``run(call)`` for entries whose key is one of
    ``keys`` and ``None`` for the rest. Unpack them into the plugin module::

        (rook_auth_prepare, rook_session_open, rook_transport_execute,
         rook_session_close, rook_evidence_collect) = phase_hooks("script", run_script)

    A plugin that treats a phase differently implements that hook itself.
    """
    from .hookspecs import hookimpl

    mine = {keys} if isinstance(keys, str) else set(keys)

    def make(name: str) -> Any:
        def impl(call: HookCall) -> Any:
            return run(call) if call.entry.transport in mine else None

        impl.__name__ = impl.__qualname__ = name
        impl.__doc__ = f"Run {name.split('_', 2)[-1]} for {', '.join(sorted(mine))} entries."
        return hookimpl(impl)

    return tuple(make(PHASE_HOOKS[phase]) for phase in PHASE_HOOKS)
