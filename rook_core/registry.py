"""The registries plugins fill (transports, criterion types, judges,
reporters, executors, authors): named things, a duplicate name refused with
both owners named, and the checks a registered thing must pass to be usable,
each refusal naming the plugin and how to stop it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field
from typing import Any

from .entrypoints import OWN
from .errors import PluginError
from .plain import plain


def opted_in(func: Any, offered: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``offered`` that ``func``'s signature names: a
    plugin's function asks for the extra ones it reads (pluggy's way: one written
    for fewer arguments keeps working). Asked before anything runs, not per
    scenario."""
    import inspect

    try:
        names = inspect.signature(func).parameters
    except (TypeError, ValueError):  # a callable without a signature: none
        return {}
    return {k: v for k, v in offered.items() if k in names}


@plain
class PluginInfo:
    """A plugin registered from an entry point (``rook plugins``)."""

    name: str
    distribution: str
    version: str
    module: str
    hooks: list[str] = field(default_factory=list)


@plain
class LoadFailure:
    """An entry point that could not be loaded, and why (and, when reinstalling
    the plugin is not the way out, ``fix``: what is)."""

    name: str
    distribution: str
    error: str
    fix: str = ""


class Registry:
    """Named things plugins register; duplicates are refused with both owners named."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Any] = {}
        self._owners: dict[str, str] = {}
        self._plugins: dict[str, str] = {}  # name -> the plugin's entry point name
        self._ways_out: dict[str, tuple[WayOut | None, str]] = {}  # name -> (way out, dist)
        self.failures: list[LoadFailure] = []  # the Rook's: what may have provided a name
        self.foreign: set[str] = set()
        """The names a plugin other than Rook's own registered (a set to look in, not a
        call, where every hook asks it)."""

    def add(
        self,
        name: str,
        item: Any,
        owner: str,
        way_out: WayOut | None = None,
        distribution: str = "",
        plugin: str = "",
    ) -> None:
        """``way_out``: how a user stops ``owner`` (:meth:`Rook.way_out`),
        ``distribution`` the one that installed it (named when it clashes), and
        ``plugin`` its name alone (``owner`` is ``NAME (DIST)``)."""
        if name in self._items:
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by {self._owners[name]} "
                f"and by {owner}{self._way_out(name, way_out, distribution)}"
            )
        self._items[name] = item
        self._owners[name] = owner
        self._plugins[name] = plugin or owner
        self._ways_out[name] = (way_out, distribution)
        if distribution != OWN:
            self.foreign.add(name)

    def _way_out(self, name: str, way_out: WayOut | None, distribution: str) -> str:
        """How to end a clash: when one side is Rook's own built-in, the other
        plugin (never Rook itself); else the one that registered second."""
        first_way_out, first_distribution = self._ways_out[name]
        if first_distribution == OWN and distribution != OWN:
            culprit = (way_out, distribution)
        elif distribution == OWN and first_distribution != OWN:
            culprit = (first_way_out, first_distribution)
        else:
            if way_out is None:
                return ""
            uninstall = "uninstall one, or " if distribution or first_distribution else ""
            return f" ({uninstall}{way_out('the second')})"
        way_out, distribution = culprit
        if way_out is None:
            return ""
        uninstall = f"uninstall {distribution}, or " if distribution else ""
        return f" (Rook's own {self.kind} keeps the name: {uninstall}{way_out('it')})"

    def get(self, name: str) -> Any:
        return self._items.get(name)

    def listing(self) -> str:
        """The names, for an ``installed: ...`` message: ``none`` when there are
        none, the plugin switches that are set and the plugins that failed to
        load (they may be why one is missing)."""
        failed = "".join(
            f" (plugin {f.name} ({f.distribution}) failed to load: {f.error})"
            for f in self.failures
        )
        return (", ".join(self.names()) or "none") + switches_note() + failed

    def distribution(self, name: str) -> str:
        """The distribution of the plugin that registered ``name`` ("" when none)."""
        return self._ways_out.get(name, ("", ""))[1]

    def names(self) -> list[str]:
        return sorted(self._items)

    def owner(self, name: str) -> str:
        return self._owners.get(name, "?")

    def plugin(self, name: str) -> str:
        """The name of the plugin that registered ``name`` (its entry point's, for
        ``ROOK_DISABLE_PLUGINS``), without its distribution."""
        return self._plugins.get(name, "?")

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._items.items())


WayOut = Callable[[str], str]
"""How a user stops one plugin, as a phrase about ``it`` (:meth:`Rook.way_out`)."""


def callable_as(kind: str, signature: str) -> Callable[[Any, str, WayOut], None]:
    """A check that a registered judge, reporter or executor can be called as
    ``signature``: one that cannot would fail only when used, after a whole run."""

    def check(item: Any, who: str, way_out: WayOut) -> None:
        if kind == "judge":
            an_instance(item, who, way_out)
        if not callable(item):
            raise PluginError(
                f"plugin {who} is a {type(item).__name__}, not callable (a {kind} is "
                f"{signature}); fix the plugin or {way_out('it')}"
            )

    return check


def an_instance(item: Any, who: str, way_out: WayOut) -> None:
    """A judge or criterion type registered as its class (``register(CitesOrder)``)
    is refused: its methods, called unbound, would fail on every scenario using it
    (``parse() missing ... 'value'``), as if the scenario's value were wrong."""
    if isinstance(item, type):
        raise PluginError(
            f"plugin {who} is the class {item.__name__}, not an instance (register "
            f"{item.__name__}()); fix the plugin or {way_out('it')}"
        )


UNNAMED_HINTS = {
    "transport": "a rook_core.transports.TransportSpec(key=..., load_config=...)",
    "criterion type": "an instance of a rook_core.judging.CriterionType subclass, with its name",
    "connector": "a connector class, with its name (docs/ruhroh.md#writing-a-connector in Rook's source)",
}
"""What an unkeyed registration (``register(item)``) takes, for one that has no name."""


def checked_name(
    name: Any,
    registry: Registry,
    owner: str,
    item: Any = None,
    way_out: WayOut | None = None,
    keyed: bool = True,
) -> str:
    """A registered name: a non-empty string, else a PluginError naming the plugin
    and the way out. ``keyed=False``: the name is the item's own (``register(item)``),
    so an item without one (a dict for a TransportSpec) is told what to register."""
    if isinstance(name, str) and name.strip():
        return name
    fix = f"; fix the plugin or {way_out('it')}" if way_out is not None else ""
    kind = registry.kind
    if not keyed and not hasattr(item, "name") and not hasattr(item, "key"):
        hint = UNNAMED_HINTS.get(kind, f"a {kind} with its name")
        raise PluginError(
            f"plugin {owner}: the {kind} it registered is {article(type(item).__name__)}, "
            f"not a {kind} (register {hint}){fix}"
        )
    what = f" ({type(item).__name__})" if not keyed else ""
    raise PluginError(
        f"plugin {owner}: the {kind} it registered{what} is named {name!r} "
        f"(a name must be a non-empty string){fix}"
    )


def article(noun: str) -> str:
    """``a dict``, ``an object``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def transport_key_free(item: Any, who: str, way_out: WayOut) -> None:
    """A transport's key is no option a profile's hook entry keeps for itself
    (``timeout_seconds``): an entry holding it would be read as that option, so
    the transport, listed among the installed ones, could never be used."""
    from .models import ENTRY_OPTIONS

    key = getattr(item, "key", None)
    if key in ENTRY_OPTIONS:
        raise PluginError(
            f"plugin {who}: a profile's hook entry keeps {key!r} for its own option "
            f"({', '.join(ENTRY_OPTIONS)}), so no profile could use the transport; rename "
            f"it, or {way_out('the plugin')}"
        )


def criterion_type_ok(item: Any, who: str, way_out: WayOut) -> None:
    """A criterion type's name is no key a scenario keeps for itself (``turn``,
    ``id``), and its ``needs`` is a set of the capabilities a profile can declare:
    one it cannot (a typo, ``"calls"`` read as its letters) would make every
    scenario using the type ``not_runnable``, with nothing the user could fix."""
    from .models import CAPABILITIES

    an_instance(item, who, way_out)
    name = getattr(item, "name", None)
    if name in ("turn", "id"):  # a criterion's own keys in a scenario (scenario.LABEL)
        raise PluginError(
            f"plugin {who}: scenarios keep {name!r} for a criterion's own key (turn, id), "
            f"so no scenario could use the type; rename it, or {way_out('the plugin')}"
        )
    needs: Any = getattr(item, "needs", frozenset())
    if isinstance(needs, (str, bytes)) or not isinstance(needs, (set, frozenset, list, tuple)):
        raise PluginError(
            f"plugin {who} needs {needs!r:.80}: needs must be a set of capabilities, "
            f"such as frozenset({{'calls'}}) (of: {', '.join(CAPABILITIES)}); fix the plugin "
            f"or {way_out('it')}"
        )
    unknown = [c for c in needs if c not in CAPABILITIES]
    if unknown:
        raise PluginError(
            f"plugin {who} needs {', '.join(repr(c) for c in unknown)}, not a capability "
            f"a profile can declare (one of: {', '.join(CAPABILITIES)}); fix the plugin or "
            f"{way_out('it')}"
        )


def switches_note() -> str:
    """`` (ROOK_LOAD_PLUGINS=a is set: ...)`` when a switch that leaves plugins
    out is set, so a message listing what is installed names it."""
    found = [f"{v}={os.environ[v]}" for v in SWITCHES if os.environ.get(v) is not None]
    if not found:
        return ""
    said = "is set: plugins it leaves" if len(found) == 1 else "are set: plugins they leave"
    return f" ({' and '.join(found)} {said} out are not loaded)"


SWITCHES = ("ROOK_LOAD_PLUGINS", "ROOK_DISABLE_PLUGINS")


__all__ = [
    "OWN",
    "SWITCHES",
    "LoadFailure",
    "PluginInfo",
    "Registry",
    "WayOut",
    "an_instance",
    "callable_as",
    "checked_name",
    "criterion_type_ok",
    "switches_note",
    "transport_key_free",
]
