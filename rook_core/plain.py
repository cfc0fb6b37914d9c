"""``@plain``: a :func:`dataclasses.dataclass` that is quicker to define.

On Python 3.10 and 3.11, ``@dataclass`` writes the source of ``__init__``,
``__repr__`` and ``__eq__`` for every class and compiles each with ``exec``:
≈ 0.2 ms a class, and a ``rook run`` defines two dozen before its first hook.
``@plain`` compiles only ``__init__`` (the one that runs per object) and gives
the class a ``__repr__`` and an ``__eq__`` that read :func:`dataclasses.fields`
when called. They answer exactly what the generated ones do: the same text,
the same comparison (same class, then the fields with ``compare=True`` as a
tuple), and the class stays unhashable, as a non-frozen dataclass with ``eq``
is. Everything else (fields, defaults, ``slots``, ``asdict``, ``replace``) is
``@dataclass`` itself.

Type checkers see ``@dataclass``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any

__all__ = ["plain"]


@recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
    return f"{self.__class__.__qualname__}({shown})"


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = [f.name for f in fields(self) if f.compare]
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _plain(cls: Any = None, /, **options: Any) -> Any:
    if options.get("frozen") or options.get("unsafe_hash") or "repr" in options or "eq" in options:
        return dataclass(cls, **options)  # the generated hash, or a choice made: as asked

    def wrap(cls: type) -> type:
        own = vars(cls)
        if "__repr__" not in own:
            cls.__repr__ = _repr  # type: ignore[assignment]
        if "__eq__" not in own:
            cls.__eq__ = _eq  # type: ignore[assignment,method-assign]
            if "__hash__" not in own:
                cls.__hash__ = None  # type: ignore[assignment]
        return dataclass(cls, repr=False, eq=False, **options)

    return wrap if cls is None else wrap(cls)


if TYPE_CHECKING:
    from dataclasses import dataclass as plain
else:
    plain = _plain
