"""Build the plugin manager and the registries the plugins fill.

Built-ins and third-party packages load the same way: every entry point in
the ``rook`` group (found by :mod:`rook_core.entrypoints`, which caches what it
found until something installed changes). Operators can narrow what loads:

* ``ROOK_LOAD_PLUGINS=a,b``   load only these (allow-list);
* ``ROOK_DISABLE_PLUGINS=a,b`` never load these;
* ``ROOK_TRACE_PLUGINS=1``    log every hook call to standard error.

A name in either list is an entry point's (``acme``) or a distribution's
(``rook-acme``, as pip shows it: every plugin of it; see :func:`switch_matches`).

A plugin that fails to import is reported (name, distribution, error) and
the rest of Rook still runs. What a plugin prints while Rook loads and calls it
goes to standard error (:func:`plugin_output`): standard output holds Rook's
own output only, such as the one JSON document of ``--json``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import signal
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pluggy

from . import entrypoints, hookspecs
from .errors import PluginError, counted, exception_text, switch_on
from .registry import (
    OWN,
    LoadFailure,
    PluginInfo,
    Registry,
    WayOut,
    callable_as,
    checked_name,
    criterion_type_ok,
    transport_key_free,
)

ENTRY_POINT_GROUP = "rook"

SLOW_TO_LOAD = 5.0
"""Seconds a plugin may take to import, or in a registration hook, before Rook says
on standard error which plugin it is waiting for (see :func:`_slow_notice`)."""


IN_PROCESS = "registered in this process, not from an entry point"
"""Why no ``ROOK_DISABLE_PLUGINS`` stops a plugin given to :meth:`Rook.register`."""


class Rook:
    """The loaded plugin manager plus the registries built from it."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.hook = pm.hook
        self.infos: list[PluginInfo] = []
        self.failures: list[LoadFailure] = []
        self.transports = Registry("transport")
        self.criteria = Registry("criterion type")
        self.judges = Registry("judge")
        self.reporters = Registry("reporter")
        self._authors: Registry | None = None  # built when first asked for: see authors
        self.executors = Registry("executor")
        self.connectors = Registry("connector")
        for registry in (
            self.transports,
            self.criteria,
            self.judges,
            self.reporters,
            self.executors,
            self.connectors,
        ):
            registry.failures = self.failures  # one list: named in every "installed: ..."
        self.unknown_named: dict[str, list[str]] = {}
        """The names ``ROOK_LOAD_PLUGINS`` or ``ROOK_DISABLE_PLUGINS`` gives that no
        installed plugin has, by switch (a misspelt name loads or disables nothing)."""
        self.installed: list[str] = []
        """The entry point names found (loaded or not)."""
        self.distributions: list[str] = []
        """The distributions those entry points came from, as pip names them."""
        self.trace: Any = None
        """Set by ``ROOK_TRACE_PLUGINS``: writes one trace line to standard error."""
        self._each: dict[str, Any] = {}  # call_each's per-plugin callers, by hook
        self.loading: tuple[str, str] | None = None
        """While the plugins load: the one Rook waits for (``NAME (DIST)``) and what
        it does (``is still importing MODULE``, ``is still in rook_register_...``), a
        new tuple for each step; read by :func:`_slow_notice`."""

    @property
    def authors(self) -> Registry:
        """The profile authors, registered the first time they are asked for.

        Only the authoring commands use them, and the built-in ones register
        by importing their modules (``rook_plugins.authors``): a run never
        calls ``rook_register_authors``."""
        if self._authors is None:
            authors = Registry("author")
            authors.failures = self.failures
            with plugin_output():
                self._collect("rook_register_authors", authors, keyed=True)
            self._authors = authors
        return self._authors

    def way_out(self, plugin: object, it: str = "it") -> str:
        """How a user stops ``plugin``, for a message: ``disable it with
        ROOK_DISABLE_PLUGINS=NAME`` for one loaded from an entry point (``it`` is
        how the message names the plugin); one registered in process
        (:meth:`register`, the ``rook_plugin`` fixture) has no entry point name
        the switch could give, so the phrase says so instead."""
        name = self.pm.get_name(plugin)
        if name is not None and name in self.installed:
            return f"disable {it} with ROOK_DISABLE_PLUGINS={name}"
        return f"unregister {it}: it is {IN_PROCESS}"

    def build_registries(self) -> None:
        collect = self._collect
        collect("rook_register_transports", self.transports, keyed=False, check=transport_key_free)
        collect("rook_register_criteria", self.criteria, keyed=False, check=criterion_type_ok)
        collect(
            "rook_register_judges",
            self.judges,
            keyed=True,
            check=callable_as("judge", "judge(config, view)"),
        )
        collect(
            "rook_register_reporters",
            self.reporters,
            keyed=True,
            check=callable_as("reporter", "write(report, path)"),
        )
        collect(
            "rook_register_executors",
            self.executors,
            keyed=True,
            check=callable_as("executor", "executor(engine, scenario_runs, concurrency, options)"),
        )
        collect("rook_register_connectors", self.connectors, keyed=False)

    def _collect(
        self,
        hook_name: str,
        registry: Registry,
        keyed: bool,
        check: Callable[[Any, str, WayOut], None] | None = None,
    ) -> None:
        """Call every implementation of the registration hook ``hook_name``
        with a ``register`` that adds to ``registry`` under its plugin's name
        (after ``check(item, who, way_out)``, which raises a PluginError for an
        item Rook cannot use)."""
        hook = getattr(self.pm.hook, hook_name)
        for impl in hook.get_hookimpls():
            owner = self.plugin_name(impl.plugin)
            plugin = self.pm.get_name(impl.plugin) or owner
            way_out: WayOut = functools.partial(self.way_out, impl.plugin)
            dist = self.distribution(impl.plugin)

            register: Callable[..., None]
            if keyed:

                def register_keyed(
                    name: str,
                    item: Any,
                    _owner: str = owner,
                    _way_out: WayOut = way_out,
                    _dist: str = dist,
                    _plugin: str = plugin,
                ) -> None:
                    checked = checked_name(name, registry, _owner, way_out=_way_out)
                    if registry.kind == "reporter" and ":" in checked:  # --report FMT:PATH
                        raise PluginError(
                            f"plugin {_owner}: reporter {checked!r}: --report FORMAT:PATH ends "
                            "the format at its first ':', so no --report could choose it; "
                            f"rename it, or {_way_out('the plugin')}"
                        )
                    if check is not None:
                        check(item, f"{_owner}: {registry.kind} {checked!r}", _way_out)
                    registry.add(checked, item, _owner, _way_out, _dist, _plugin)

                register = register_keyed
            else:

                def register_named(
                    item: Any,
                    _owner: str = owner,
                    _way_out: WayOut = way_out,
                    _dist: str = dist,
                    _plugin: str = plugin,
                ) -> None:
                    name = getattr(item, "name", getattr(item, "key", None))
                    checked = checked_name(name, registry, _owner, item, _way_out, keyed=False)
                    if check is not None:
                        check(item, f"{_owner}: {registry.kind} {checked!r}", _way_out)
                    registry.add(checked, item, _owner, _way_out, _dist, _plugin)

                register = register_named

            if self.trace is not None:
                self.trace(f"{hook_name}(register) -> {owner}")
            self.loading = (owner, f"is still in {hook_name}")
            try:
                returned = impl.function(register=register)
            except PluginError:
                raise
            except BaseException as exc:  # a plugin's bug (sys.exit() too): named
                if not plugin_failure(exc):
                    raise
                said = f": {exc}" if str(exc) else ""  # a bare KeyError() says nothing
                raise PluginError(
                    f"plugin {owner} raised {type(exc).__name__} in {hook_name}{said} "
                    f"({way_out('it')})"
                ) from None
            if isinstance(returned, types.CoroutineType):  # an async def: never run
                returned.close()
                raise PluginError(
                    f"plugin {owner} returned a coroutine from {hook_name}: a registration "
                    f"hook must be a plain function (def, not async def) ({way_out('it')})"
                )

    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, str, BaseException]]:
        """Call every implementation of the every-plugin hook ``hook_name``, each
        on its own, and return ``(plugin, way out, exception)`` for each one that
        raised: its name, how to stop it (:meth:`way_out`, about "the plugin").

        pluggy stops a hook call at the first implementation that raises, so one
        plugin's bug would skip the others and reach the caller: for observers
        (``rook_evidence_recorded``) that would end the run. Each call still goes
        through pluggy (its argument subsetting, ``ROOK_TRACE_PLUGINS``)."""
        hook = getattr(self.pm.hook, hook_name)
        impls = hook.get_hookimpls()
        if not impls:
            return []
        key = tuple(id(impl.plugin) for impl in impls)
        callers = self._each.get(hook_name)
        if callers is None or callers[0] != key:
            everyone = [impl.plugin for impl in impls]
            # one caller per plugin, which calls each of its implementations (specname)
            plugins = list({id(p): p for p in reversed(everyone)}.values())
            callers = (
                key,
                [
                    (
                        plugin,
                        self.pm.subset_hook_caller(
                            hook_name, [p for p in everyone if p is not plugin]
                        ),
                    )
                    for plugin in plugins  # pluggy's order: the last registered first
                ],
            )
            self._each[hook_name] = callers
        failed: list[tuple[str, str, BaseException]] = []
        for plugin, caller in callers[1]:
            try:
                for result in caller(**kwargs):
                    if isinstance(result, types.CoroutineType):  # an async def observer
                        result.close()
                        raise TypeError(
                            "it returned a coroutine, which Rook does not run: an observer "
                            "is called on the event loop and must be a plain function "
                            "(def, not async def)"
                        )
            except BaseException as exc:  # a plugin's bug (sys.exit() too): named
                if not plugin_failure(exc):
                    raise
                failed.append((self.plugin_name(plugin), self.way_out(plugin, "the plugin"), exc))
        return failed

    def runs_phase(self, key: str, hook_name: str) -> bool:
        """Whether the plugin that registered transport ``key`` (or another of its
        distribution) implements the phase hook ``hook_name``: a plugin implements
        only the phases its transport supports."""
        owner = self.transports.owner(key)
        dist = self.transports.distribution(key)
        return any(
            self.plugin_name(impl.plugin) == owner
            or (dist and self.distribution(impl.plugin) == dist)
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls()
        )

    def distribution(self, plugin: object) -> str:
        """The distribution that installed ``plugin`` ("" for one registered in process)."""
        name = self.pm.get_name(plugin)
        return next((i.distribution for i in self.infos if i.name == name), "")

    def plugin_name(self, plugin: object) -> str:
        name = self.pm.get_name(plugin) or repr(plugin)
        for info in self.infos:
            if info.name == name and info.distribution:
                return f"{name} ({info.distribution})"
        return name

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register an in-process plugin (tests, embedding) and rebuild registries.

        Without ``name`` it is named as :func:`_in_process` names it (its module,
        else its class), where pluggy would name an instance by its ``id()``, a
        number in every message about it."""
        if name is None:
            name = base = _in_process(plugin)
            n = 1
            while self.pm.has_plugin(name):  # another instance of its class
                n += 1
                name = f"{base}#{n}"
        try:
            self.pm.register(plugin, name=name)
        except (pluggy.PluginValidationError, ValueError) as exc:  # pluggy's are several lines
            said = exception_text(exc).replace("\n", "; ")
            raise PluginError(
                f"plugin {_in_process(plugin)} cannot be registered: {said}"
            ) from None
        why = ""
        if not _hook_names(self.pm, plugin):  # a missing @hookimpl, as for an entry point
            why = f"plugin {_in_process(plugin)}: {_no_hooks(plugin, '')}"
        elif isinstance(plugin, type) and _methods(self.pm, plugin):  # never called with a self
            why = (
                f"plugin {_in_process(plugin)} is a class whose hooks are methods: "
                f"register an instance of it ({plugin.__name__}())"
            )
        if why:
            self.pm.unregister(plugin)
            raise PluginError(why)
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:  # a misspelt hook: Rook's message
            message = _unknown_hooks(self) or str(exc)
            self.pm.unregister(plugin)
            raise PluginError(message) from None
        self.infos.append(
            PluginInfo(
                name=self.pm.get_name(plugin) or repr(plugin),
                distribution="",
                version="",
                module=getattr(plugin, "__name__", type(plugin).__name__),
                hooks=_hook_names(self.pm, plugin),
            )
        )
        self._rebuild()

    def unregister(self, plugin: object) -> None:
        name = self.pm.get_name(plugin)
        self.pm.unregister(plugin)
        self.infos = [i for i in self.infos if i.name != name]
        self._rebuild()

    def _rebuild(self) -> None:
        fresh = Rook(self.pm)
        fresh.infos = self.infos
        fresh.installed = self.installed  # its registries' way_out asks it
        fresh.failures.extend(self.failures)  # the list its registries name
        fresh.trace = self.trace
        fresh.build_registries()
        if self._authors is not None:  # in use already: rebuilt now, its errors raised now
            fresh.authors  # noqa: B018 - the property builds the registry
        for attr in (
            "transports",
            "criteria",
            "judges",
            "reporters",
            "_authors",
            "executors",
            "connectors",
        ):
            setattr(self, attr, getattr(fresh, attr))


_SUSPENDABLE = (
    inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_GENERATOR
    | inspect.CO_ASYNC_GENERATOR
)  # fmt: skip
"""The code flags of a frame that ``close()`` may end with a ``GeneratorExit``."""


def plugin_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a plugin's code that Rook called, is that plugin's
    own failure: named where it was called (that criterion's error, that hook's
    failure, that report's, a refused run), never a traceback nor the end of Rook.

    Every exception is, ``Exception``, ``SystemExit`` (``sys.exit()``) and an
    exception of the plugin's own derived from ``BaseException`` alike, except the
    run's interruption, which passes through: ``KeyboardInterrupt`` (Ctrl-C),
    asyncio's ``CancelledError`` while the task that called the plugin is being
    cancelled (Ctrl-C during a run, a timeout), pytest's outcomes (Rook run in a
    test: ``pytest.fail``, ``pytest.skip``, pytest-timeout's ``Failed`` raised
    wherever the test's time ran out) and ``GeneratorExit`` at a call
    site in a coroutine (it is being closed). A ``CancelledError`` the plugin
    raised when nothing cancelled it (a bug of its own, or of a library it uses)
    is its failure (on Python 3.10 in a task of a loop that called
    :func:`count_cancellations`), and so is a ``GeneratorExit`` at a call site in
    a plain function, where nothing of Rook's can be being closed. The one rule
    of every call of a plugin's code, asked right in the ``except`` clause (the
    caller's frame is the call site)::

        except BaseException as exc:
            if not plugin_failure(exc):
                raise
            ...  # name the plugin and what it raised (exception_text)
    """
    if isinstance(exc, KeyboardInterrupt):
        return False
    outcomes = sys.modules.get("_pytest.outcomes")  # Rook run inside a test (rook_cli)
    if outcomes is not None and isinstance(exc, outcomes.OutcomeException):
        return False  # the test's end (pytest-timeout's Failed, pytest.skip), not the plugin's
    if isinstance(exc, GeneratorExit):  # a coroutine is closed where it waits: only
        # a call site in one (or in a generator) may be being closed
        return not sys._getframe(1).f_code.co_flags & _SUSPENDABLE
    aio = sys.modules.get("asyncio")  # never imported for this: a CancelledError needs it
    if aio is None or not isinstance(exc, aio.CancelledError):
        return True
    try:
        task = aio.current_task()
    except RuntimeError:  # no event loop running: nothing of Rook's was cancelled
        return True
    if task is None:  # a callback of the loop's: no task of Rook's was cancelled
        return True
    cancelling = getattr(task, "cancelling", None)  # Python 3.11, or count_cancellations
    return cancelling is not None and not cancelling()


def count_cancellations() -> None:
    """Have the running loop's new tasks count the cancellations asked of them, as
    ``Task.cancelling()`` does from Python 3.11 on, so that :func:`plugin_failure`
    tells a plugin's own ``CancelledError`` from the run's interruption on Python
    3.10 too. Called first in each loop that calls plugins; nothing on 3.11+."""
    if sys.version_info < (3, 11):
        import asyncio

        asyncio.get_running_loop().set_task_factory(_counting_task)


def _counting_task(loop: Any, coro: Any) -> Any:
    return _counting_task_type()(coro, loop=loop)


@functools.cache
def _counting_task_type() -> type:
    import asyncio

    class CountingTask(asyncio.Task):  # type: ignore[type-arg]
        """Python 3.10's task with 3.11's ``cancelling()``."""

        requested = 0

        def cancel(self, msg: Any = None) -> bool:
            if not self.done():
                self.requested += 1
            return super().cancel(msg)

        def cancelling(self) -> int:
            return self.requested

    return CountingTask


@contextlib.contextmanager
def plugin_output() -> Iterator[None]:
    """While plugin code runs, what it prints (``print()``, ``sys.stdout``) goes to
    standard error, so standard output holds Rook's own output only (the one
    document of ``--json``). Nests; restores standard output however it ends."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _split_env(name: str) -> set[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def distribution_key(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): ``Rook_CSV.report``
    is ``rook-csv-report``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def switch_matches(names: set[str]) -> Callable[[Any], bool]:
    """Whether an entry point is one ``names`` (of ``ROOK_LOAD_PLUGINS`` or
    ``ROOK_DISABLE_PLUGINS``) names: by its own name, or by its distribution's
    name (every plugin of that distribution), the one ``pip list`` shows."""
    dists = {distribution_key(n) for n in names}

    def matches(ep: Any) -> bool:
        return ep.name in names or bool(
            ep.distribution and distribution_key(ep.distribution) in dists
        )

    return matches


def unknown_switch_names(names: set[str], entry_points: Iterable[Any]) -> list[str]:
    """The names in ``names`` that match no entry point (:func:`switch_matches`):
    a misspelt name loads or disables nothing."""
    found = list(entry_points)
    plugins = {ep.name for ep in found}
    dists = {distribution_key(ep.distribution) for ep in found if ep.distribution}
    return sorted(n for n in names if n not in plugins and distribution_key(n) not in dists)


def switch_hint(name: str, plugins: Iterable[str], distributions: Iterable[str]) -> str:
    """``did you mean NAME?`` for a name of ``ROOK_LOAD_PLUGINS`` or
    ``ROOK_DISABLE_PLUGINS`` that no plugin or distribution has, when it looks
    like one of them (``rook-harnes``, ``reportrs``); else ``""``."""
    from .errors import did_you_mean

    close = did_you_mean(name, [*plugins, *distributions])
    return f"did you mean {close}?" if close else ""


def switch_warnings(rook: Rook) -> list[str]:
    """The ``rook: warning: ...`` lines (one per switch) for each name of
    ``ROOK_LOAD_PLUGINS`` or ``ROOK_DISABLE_PLUGINS`` that no installed plugin or
    distribution has: ``rook run`` and ``rook plugins`` write them to standard
    error (``rook doctor`` names each as a problem)."""
    lines = []
    for switch, unknown in rook.unknown_named.items():
        does = "loads" if switch == "ROOK_LOAD_PLUGINS" else "disables"
        hints = [
            h for h in (switch_hint(n, rook.installed, rook.distributions) for n in unknown) if h
        ]
        lines.append(
            f"rook: warning: {switch} names {', '.join(map(repr, unknown))}, which no "
            f"installed plugin or distribution is called: it {does} nothing"
            + "".join(f"; {h}" for h in hints)
            + f" (plugins: {', '.join(rook.installed) or 'none'}; distributions: "
            f"{', '.join(rook.distributions) or 'none'})"
        )
    return lines


def _hook_names(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    return sorted(c.name for c in (pm.get_hookcallers(plugin) or []))


def _methods(pm: pluggy.PluginManager, plugin: type) -> bool:
    """Whether a class registered as a plugin has hook implementations taking
    ``self``: pluggy calls them on the class, where they fail for want of one."""
    for caller in pm.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            code = getattr(impl.function, "__code__", None)
            if impl.plugin is plugin and code is not None and code.co_varnames[:1] == ("self",):
                return True
    return False


def _no_hooks(plugin: object, value: str) -> str:
    """Why a loaded entry point implements no hook: functions named like hooks
    without the marker, else the object it names holds none."""
    try:
        unmarked = sorted(n for n in dir(plugin) if n.startswith("rook_"))
    except Exception:  # an object whose dir() fails: say what it is
        unmarked = []
    if unmarked:
        verb = "is" if len(unmarked) == 1 else "are"
        return (
            f"it implements no Rook hook: {', '.join(unmarked)} {verb} not marked "
            "with @hookimpl (from rook_core.hookspecs import hookimpl)"
        )
    if not value:  # registered in process
        return "it implements no Rook hook: it has no function marked with @hookimpl"
    return (
        f"it implements no Rook hook: its entry point names {value} "
        f"({type(plugin).__name__}), which has no function marked with @hookimpl"
    )


class _PluginManager(pluggy.PluginManager):
    """pluggy's plugin manager, quicker to register a plugin module.

    pluggy looks at every name a plugin has (for a module: each function,
    class and import), statically, for hook implementation markers: ≈ 600
    names and ≈ 2 ms over the built-in plugins on every command. In a
    module, only a function (or a bound method) carrying the marker can be
    one, so a module's other names are passed over with a dictionary lookup;
    everything else is pluggy's own parsing, so the same implementations are
    found and a misspelt one still fails ``check_pending``.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if isinstance(plugin, types.ModuleType):
            value = vars(plugin).get(name)
            marked = isinstance(value, (types.FunctionType, types.MethodType)) and (
                getattr(value, f"{self.project_name}_impl", None) is not None
            )
            if not marked:
                return None
        return super().parse_hookimpl_opts(plugin, name)


def _load_one(
    pm: pluggy.PluginManager, ep: entrypoints.FoundEntryPoint, seen: dict[str, str]
) -> tuple[Any, list[str]] | str:
    """Import entry point ``ep`` and register it under its name: the plugin and the
    hooks it implements, or why it failed to load (then nothing is registered).
    ``seen`` names the distribution of each entry point loaded so far."""
    try:
        plugin = ep.load()
        if plugin is None:  # to pluggy, a None plugin is a blocked name: no hook
            return _no_hooks(None, ep.value)
        other = pm.get_name(plugin)
        if other is not None:  # pluggy's own message lists every plugin loaded
            return (
                f"its entry point names {ep.value}, which the entry point {other} "
                f"({seen.get(other) or 'another distribution'}) loads already; give each "
                "entry point a module of its own"
            )
        pm.register(plugin, name=ep.name)
    except BaseException as exc:  # a broken plugin must not take Rook down
        if not plugin_failure(exc):
            raise
        return exception_text(exc).replace("\n", "; ")  # pluggy's are several lines
    hooks = _hook_names(pm, plugin)
    if not hooks:  # a missing @hookimpl, or the wrong object named
        pm.unregister(name=ep.name)  # by name: an object may not equal itself (NaN)
        return _no_hooks(plugin, ep.value)
    if isinstance(plugin, type) and _methods(pm, plugin):  # never called with a self
        pm.unregister(name=ep.name)
        return (
            f"its entry point names the class {ep.value}, whose hooks are methods: name an "
            f"instance of it (PLUGIN = {plugin.__name__}() in its module, and the entry "
            "point module:PLUGIN)"
        )
    return plugin, hooks


def _for_another_rook(ep: entrypoints.FoundEntryPoint, own: str) -> LoadFailure:
    """The failure of a plugin whose distribution requires a Rook other than
    this one (``rook-harness>=2.0``): it may implement hooks this Rook does not
    define, or use what it lacks, so it is not imported."""
    dist = f"{ep.distribution} {ep.version}".strip()
    return LoadFailure(
        ep.name,
        ep.distribution,
        f"{dist} requires {ep.unmet}, and this Rook is {OWN} {own}: install a Rook it "
        f"supports (pip install '{ep.unmet}') or a release of {ep.distribution} made for "
        f"{OWN} {own}",
        fix=f"install a Rook it supports (pip install '{ep.unmet}') or a release of "
        f"{ep.distribution} made for {OWN} {own}, or skip it with ROOK_DISABLE_PLUGINS={ep.name}",
    )


def _in_process(plugin: object) -> str:
    """A plugin registered in process, by name: a module's, else its class's."""
    if isinstance(plugin, types.ModuleType):
        return plugin.__name__
    cls = plugin if isinstance(plugin, type) else type(plugin)
    return f"{cls.__module__}.{cls.__qualname__}"


def _unknown_hooks(rook: Rook) -> str:
    """Each hook implementation no hookspec defines (a misspelt name), naming its
    plugin and distribution, a did-you-mean and how to disable the plugin."""
    import difflib

    known = [n for n in dir(hookspecs) if n.startswith("rook_")]
    lines = []
    for hook_name, caller in sorted(vars(rook.pm.hook).items()):
        if not isinstance(caller, pluggy.HookCaller) or caller.spec is not None:
            continue
        for impl in caller.get_hookimpls():
            close = difflib.get_close_matches(hook_name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            if rook.pm.get_name(impl.plugin) in rook.installed:  # loaded through its entry point
                who = rook.plugin_name(impl.plugin)
            else:  # registered in process (Rook.register, the rook_plugin fixture)
                who = _in_process(impl.plugin)
            lines.append(
                f"plugin {who} implements {hook_name}, a hook Rook does not define{hint}; "
                f"fix the plugin or {rook.way_out(impl.plugin)}"
            )
    return "\n".join(lines)


def build_plugin_manager(
    load_entry_points: bool = True, say_slow: Callable[[str, str], None] | None = None
) -> Rook:
    """Create a plugin manager, load every ``rook`` entry point, check them.

    Built in a function (never at import time) so tests and embedders get a
    fresh one. ``check_pending()`` makes a misspelt hook implementation fail
    loudly instead of being silently ignored. A plugin slow to load is named
    (:func:`_slow_notice`) on standard error, or to ``say_slow(who, doing)`` when
    given (a Dask worker tells the driver: :func:`slow_plugin` words it).
    """
    pm = _PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    rook = Rook(pm)
    tracing = switch_on("ROOK_TRACE_PLUGINS", "Rook traces every hook call")
    with plugin_output(), _slow_notice(rook, say_slow):  # (prints on import or registration)
        _load(rook, load_entry_points, tracing)
    rook.loading = None
    return rook


def slow_plugin(who: str, doing: str, where: str = "") -> str:
    """What Rook says of plugin ``who`` (``NAME (DIST)``) still ``doing`` its import or
    registration after :data:`SLOW_TO_LOAD` seconds; ``where`` the switch is set."""
    name = who.split(" ", 1)[0]
    return (
        f"plugin {who} {doing} after {SLOW_TO_LOAD:g} seconds, and Rook waits for it (a "
        "plugin should not call a server or wait when it loads); skip it with "
        f"ROOK_DISABLE_PLUGINS={name}{where}, or press Ctrl-C"
    )


def _on_stderr(who: str, doing: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # a closed standard error
        sys.stderr.write(f"rook: warning: {slow_plugin(who, doing)}\n")
        sys.stderr.flush()


@contextlib.contextmanager
def _slow_notice(rook: Rook, say: Callable[[str, str], None] | None = None) -> Iterator[None]:
    """Say which plugin Rook waits for when one takes more than :data:`SLOW_TO_LOAD`
    seconds to import or register (a module that calls a server, or sleeps, as it
    is imported), naming how to skip it, once; otherwise the command would wait
    with no word.

    A timer ticks twice in that time; a tick names the plugin once the two before
    it saw it at the same step (:attr:`Rook.loading`), so it has been there 5 to
    7.5 seconds. In a command, the timer is an interval timer (``SIGALRM``): two
    system calls for the whole loading, no thread, nothing per plugin but that
    attribute; it is left off where the alarm is someone else's (a handler or a
    timer already set, pytest-timeout's in a test), off the main thread, or where
    there is no ``setitimer`` (Windows). Given ``say`` (a Dask worker's task,
    on a thread of its own), a thread ticks and ``say`` is told."""
    seen: list[Any] = [None, 0]  # what the ticks saw loading, and how many saw it
    told: set[str] = set()

    def tick(*_: Any) -> None:
        now = rook.loading
        if now is None or now is not seen[0]:
            seen[:] = [now, 1]
            return
        seen[1] += 1
        if seen[1] < 3 or now[0] in told:
            return
        told.add(now[0])
        (say or _on_stderr)(*now)

    if say is not None:
        import threading

        stop = threading.Event()

        def ticking() -> None:
            while not stop.wait(SLOW_TO_LOAD / 2):
                tick()

        threading.Thread(target=ticking, name="rook-slow-plugin", daemon=True).start()
        try:
            yield
        finally:
            stop.set()
        return
    armed = (
        hasattr(signal, "setitimer")
        and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
        and not signal.getitimer(signal.ITIMER_REAL)[0]
    )
    if armed:
        try:
            signal.signal(signal.SIGALRM, tick)
        except ValueError:  # not the main thread
            armed = False
        else:
            signal.setitimer(signal.ITIMER_REAL, SLOW_TO_LOAD / 2, SLOW_TO_LOAD / 2)
    try:
        yield
    finally:
        if armed:  # stopped first: no alarm can come once the default (ending us) is back
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)


def _load(rook: Rook, load_entry_points: bool, tracing: bool) -> None:
    """Load the entry points into ``rook``, check them and build its registries."""
    pm = rook.pm
    if load_entry_points:
        allow = _split_env("ROOK_LOAD_PLUGINS")
        block = _split_env("ROOK_DISABLE_PLUGINS") or set()
        seen: dict[str, str] = {}  # entry point name -> the distribution loaded under it
        found = entrypoints.discover(ENTRY_POINT_GROUP)
        rook.installed = sorted({ep.name for ep in found.entry_points})
        rook.distributions = sorted(
            {ep.distribution for ep in found.entry_points if ep.distribution}
        )
        for switch, names in (("ROOK_LOAD_PLUGINS", allow), ("ROOK_DISABLE_PLUGINS", block)):
            unknown = unknown_switch_names(names or set(), found.entry_points) if names else []
            if unknown:
                rook.unknown_named[switch] = unknown
        allowed = switch_matches(allow) if allow is not None else None
        blocked = switch_matches(block) if block else None
        if tracing:
            from .plugin_trace import trace_line

            source = "from the cache" if found.from_cache else "by scanning distributions"
            trace_line(f"found {counted(len(found.entry_points), 'entry point')} {source}")
        # one name, two distributions: Rook's own built-in first, then by distribution name;
        # the first that loads keeps the name
        order = sorted(
            found.entry_points, key=lambda e: (e.name, e.distribution != OWN, e.distribution)
        )
        own = next((e.version for e in order if e.distribution == OWN), "")
        tried: set[tuple[str, str]] = set()  # (name, distribution) tried already
        for ep in order:
            if (allowed is not None and not allowed(ep)) or (blocked is not None and blocked(ep)):
                continue
            dist, version = ep.distribution, ep.version
            if ep.name in seen:  # two distributions, one name: only the first loads
                if dist != seen[ep.name]:
                    rook.failures.append(
                        LoadFailure(
                            ep.name,
                            dist,
                            f"entry point name {ep.name!r} is already used by "
                            f"{seen[ep.name] or 'another distribution'}, which is loaded "
                            "instead; the plugin needs an entry point name of its own",
                        )
                    )
                continue
            if (ep.name, dist) in tried:  # one distribution found twice on sys.path
                continue
            tried.add((ep.name, dist))
            if ep.unmet:  # made for another Rook: never imported
                rook.failures.append(_for_another_rook(ep, own))
                continue
            rook.loading = (
                f"{ep.name} ({dist})" if dist else ep.name,
                f"is still importing {ep.value}",
            )
            loaded = _load_one(pm, ep, seen)
            if isinstance(loaded, str):  # its name is left to the next distribution's
                rook.failures.append(LoadFailure(ep.name, dist, loaded))
                continue
            plugin, hooks = loaded
            seen[ep.name] = dist
            rook.infos.append(
                PluginInfo(
                    name=ep.name,
                    distribution=dist,
                    version=version,
                    module=getattr(plugin, "__name__", ep.value),
                    hooks=hooks,
                )
            )
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            _unknown_hooks(rook) or f"a plugin implements a hook Rook does not define: {exc}"
        ) from None
    if tracing:  # its module only then
        from .plugin_trace import trace_after, trace_line, tracer

        rook.trace = trace_line
        pm.add_hookcall_monitoring(tracer(rook.plugin_name), trace_after)
    rook.build_registries()
