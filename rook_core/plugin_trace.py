"""``ROOK_TRACE_PLUGINS=1``: every hook call and its result on standard error,
each argument and result described in a few secret-free words (never the
environment, a hook's output or the evidence)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import counted


def trace_line(text: str) -> None:
    sys.stderr.write(f"[rook-trace] {text}\n")
    sys.stderr.flush()


def _summary(value: Any) -> str:
    """A short, secret-free description of a hook argument or result: never the
    environment, the hook's output or the evidence, which may hold secret values."""
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    entry = getattr(value, "entry", None)
    if entry is not None and hasattr(value, "phase"):
        sr = getattr(value, "scenario_run", None)
        parts = [f"phase={value.phase}", f"transport={getattr(entry, 'transport', '?')}"]
        if sr is not None:
            parts.append(f"scenario={sr.key}")
        if getattr(value, "turn", None) is not None:
            parts.append(f"turn={value.turn}")
        return f"HookCall({', '.join(parts)})"
    if hasattr(value, "status") and hasattr(value, "phase"):
        return f"HookResult(phase={value.phase}, status={value.status})"
    if hasattr(value, "profile") and hasattr(value, "id"):
        return f"RunContext(id={value.id})"
    if isinstance(value, dict) and "key" in value:
        return f"record({value['key']})"
    if isinstance(value, list):
        return f"[{counted(len(value), 'result')}]"
    return type(value).__name__


def tracer(name_of: Callable[[object], str]) -> Callable[..., None]:
    """pluggy's ``before`` monitor: each hook call, its arguments and the plugins it
    reaches, each named by ``name_of`` (``ruhroh (rook-harness)``), so the one call
    per plugin of an observer hook (``Rook.call_each``) says whose it is."""

    def before(hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        args = ", ".join(f"{k}={_summary(v)}" for k, v in kwargs.items())
        names = ", ".join(name_of(impl.plugin) for impl in impls)
        said = counted(len(impls), "implementation") + (f": {names}" if names else "")
        trace_line(f"{hook_name}({args}) -> {said}")

    return before


def trace_after(
    outcome: Any, hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]
) -> None:
    exc = getattr(outcome, "exception", None)
    if exc is not None:
        trace_line(f"finish {hook_name}: raised {type(exc).__name__}")
        return
    trace_line(f"finish {hook_name} -> {_summary(outcome.get_result())}")


__all__ = ["trace_after", "trace_line", "tracer"]
