"""How an evaluation runs in time: a criterion's or a judge's code on the loop
or, a third-party plugin's plain function, in a daemon thread of its own
(:func:`in_thread`, :class:`LetGo`); bounded by its ``timeout_seconds``
(:func:`within`), a wait for a judge profile's slot not counted
(:func:`queueing`); a plugin coroutine's ``sys.exit()`` kept to its criterion.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import threading
import time
from collections.abc import Awaitable, Iterator
from typing import Any

OVERDUE = object()
"""What :func:`within` gives for an evaluation that took longer than its bound."""


class _Budget:
    """The time an evaluation bounded by :func:`within` has spent judging: its
    ``seconds`` since it began, less the time it waited for a turn
    (:func:`queueing`: a judge profile's slot, held by other judgements)."""

    __slots__ = ("seconds", "started", "queued", "since", "waits")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.queued = 0.0  # waited, over
        self.since = 0.0  # when the waits under way began
        self.waits = 0  # waits under way (the evaluation asks twice at once)

    def left(self) -> float:
        now = time.monotonic()
        queued = self.queued + (now - self.since if self.waits else 0.0)
        return self.seconds - (now - self.started - queued)


_BUDGETS: contextvars.ContextVar[tuple[_Budget, ...]] = contextvars.ContextVar(
    "rook_judging_budgets", default=()
)
"""The budgets of the evaluations the current task runs in (:func:`within`)."""


@contextlib.contextmanager
def queueing() -> Iterator[None]:
    """Time spent inside is a wait for a turn (a judge profile's ``concurrency``
    slot, taken by other judgements; its prepare, once a run, bounded by its own
    timeout), not judging: it does not count toward the
    ``timeout_seconds`` of the evaluation that waits (:func:`within`), so a judge
    judged together with others, or beside other scenarios', gets its whole
    timeout to judge. Nothing to do outside a bounded evaluation (a ``rubric``)."""
    budgets = _BUDGETS.get()
    if not budgets:  # a rubric's: no timeout_seconds to spare
        yield
        return
    now = time.monotonic()
    for budget in budgets:
        if not budget.waits:
            budget.since = now
        budget.waits += 1
    try:
        yield
    finally:
        now = time.monotonic()
        for budget in budgets:
            budget.waits -= 1
            if not budget.waits:
                budget.queued += now - budget.since


async def within(awaitable: Awaitable[Any], seconds: float | None) -> Any:
    """``await awaitable`` for at most ``seconds`` of judging (``None``: no bound;
    a wait inside :func:`queueing` is not counted); past it, it is cancelled and
    the result is :data:`OVERDUE` (a plugin's own ``TimeoutError`` is raised as
    any other exception)."""
    if seconds is None:
        return await awaitable
    budget = _Budget(seconds)
    token = _BUDGETS.set((*_BUDGETS.get(), budget))
    try:
        task = asyncio.ensure_future(awaitable)  # a coroutine's task holds the budget
    finally:
        _BUDGETS.reset(token)
    try:
        left = seconds
        while left > 0:
            done, _ = await asyncio.wait({task}, timeout=left)
            if done:
                return task.result()
            left = budget.left()  # more when it waited for a turn meanwhile
    except asyncio.CancelledError:  # the run was interrupted: so is the evaluation,
        _cancel_unread(task)  # which keeps what it cut (a judge profile's hook) as it
        await _ended(task)  # ends: before the interrupted attempt is written
        raise
    _cancel_unread(task)
    return OVERDUE


async def _ended(task: asyncio.Future[Any]) -> None:
    """Wait for the cancelled ``task`` to end, as long as a hook it ran takes to be
    stopped (SIGTERM, the grace, SIGKILL) and a plugin's coroutine to be given up
    (:data:`rook_core.transports.CANCEL_GRACE_SECONDS`), no longer."""
    from .process import KILL_GRACE_SECONDS  # loaded: the interrupted run's hooks use them
    from .transports import CANCEL_GRACE_SECONDS

    await asyncio.wait({task}, timeout=KILL_GRACE_SECONDS + CANCEL_GRACE_SECONDS)


def _cancel_unread(task: asyncio.Future[Any]) -> None:
    """Cancel ``task``, which no one waits for any more: what it raises as it ends
    (a plugin that catches its cancellation and raises its own exception instead)
    is read, never asyncio's 'Task exception was never retrieved' and the plugin's
    traceback on standard error."""
    task.cancel()
    task.add_done_callback(_read)


def _read(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


class LetGo(concurrent.futures.ThreadPoolExecutor):
    """The event loop's default executor in a run (``asyncio.to_thread``,
    ``loop.run_in_executor(None, ...)``, as a plugin bounds a plain function with
    ``wait_for``): each call in a daemon thread of its own that neither the end of
    ``asyncio.run`` nor the interpreter's exit waits for, so a plugin's function
    that never returns, past the bound the plugin or Rook set, keeps Rook from
    exiting no more than a plain judge does (:func:`in_thread`)."""

    def submit(  # type: ignore[override]
        self, fn: Any, /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # the caller's, raised where it is awaited
                future.set_exception(exc)

        threading.Thread(target=work, name="rook-plugin-thread", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: the threads are let go."""


def let_threads_go() -> None:
    """Make :class:`LetGo` the running loop's default executor."""
    asyncio.get_running_loop().set_default_executor(LetGo(max_workers=1))


def in_thread(fn: Any, *args: Any) -> asyncio.Future[Any]:
    """``fn(*args)`` in a daemon thread (with the caller's context variables), as a
    future of the running loop: a third-party plugin's plain evaluation that
    never returns then blocks neither the run nor Rook's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, exc: BaseException | None) -> None:
        if not future.done():  # else it was cancelled: past its bound, or interrupted
            future.set_result(result) if exc is None else future.set_exception(exc)

    def work() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (context.run(fn, *args), None)
        except BaseException as exc:  # the plugin's: raised where it is awaited
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop is closed: the run ended without it
            pass

    threading.Thread(target=work, name="rook-plugin-evaluation", daemon=True).start()
    return future


async def at_once(awaitables: list[Awaitable[Any]]) -> list[Any]:
    """Await ``awaitables`` at the same time; their results in their order. When one
    raises (an interruption), the others are cancelled, and it is raised once they
    have ended: each records what it cut (a judge profile's hook) before the caller
    reads the interrupted hooks."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        raise


def is_async(fn: Any) -> bool:
    """Whether calling ``fn`` only makes a coroutine (``async def``, or an
    object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def evaluation(fn: Any, args: tuple[Any, ...], seconds: float | None, threaded: bool) -> Any:
    """``fn(*args)``, and what it returns awaited when it is awaitable, each part
    bounded by ``seconds`` (:func:`within`): :data:`OVERDUE` past it. A plain
    ``fn`` is called in a thread (:func:`in_thread`) when ``threaded`` (a
    third-party plugin's), else directly (Rook's own: no thread hop)."""
    if threaded and not is_async(fn):
        result = await within(in_thread(fn, *args), seconds)
    else:
        result = fn(*args)
    if result is not OVERDUE and inspect.isawaitable(result):
        result = await within(_exit_kept(result), seconds)
        if isinstance(result, _Exited):
            raise result.exc
    return result


class _Exited:
    """A plugin coroutine's ``sys.exit()``, carried out of the task it ran in."""

    def __init__(self, exc: SystemExit) -> None:
        self.exc = exc


async def _exit_kept(awaitable: Awaitable[Any]) -> Any:
    """``await awaitable``, its ``SystemExit`` returned as :class:`_Exited`: raised
    in a task, it would end the event loop (the whole run, with the plugin's exit
    code); the caller raises it again, where it is that criterion's error."""
    try:
        return await awaitable
    except SystemExit as exc:
        return _Exited(exc)
