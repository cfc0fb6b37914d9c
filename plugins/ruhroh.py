"""Built-in plugin: Ruhroh command wrappers and native (Python) connectors.

Two hook-entry keys:

* ``ruhroh: {command: ./wrapper.sh, max_iterations: 5}`` runs any wrapper
  that speaks the Ruhroh agent command protocol, as is;
* ``connector: {name: acme, ...}`` runs a connector class registered with
  ``rook_register_connectors`` (the advanced lifecycle).

Both go through one task loop (:mod:`rook_plugins.ruhroh_loop`). The plugin
also registers the ``ruhroh-command`` connector (the wrapper, as a
connector), the ``status`` and ``max_cost`` criteria, and keeps
``ruhroh-run-manifest.json`` up to date from every recorded result (and
joins the shards' copies when ``rook merge`` joins a sharded run).

Every run imports this module to register all that, so it holds only the
registration: validating entries (:mod:`rook_plugins.ruhroh_config`, with
marshmallow) and checking and running them (:mod:`rook_plugins.ruhroh_run`)
are imported the first time a profile has a ``ruhroh:`` or ``connector:``
entry.
"""

from __future__ import annotations

from typing import Any

from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec, phase_hooks, saves_nothing

from .ruhroh_command import CommandConnector
from .ruhroh_criteria import CRITERIA

RUHROH, CONNECTOR = "ruhroh", "connector"
KEYS = (RUHROH, CONNECTOR)


def load_command(value: Any) -> dict[str, Any]:
    """Validate a ``ruhroh:`` entry (:func:`rook_plugins.ruhroh_config.load_command`)."""
    from .ruhroh_config import load_command as load

    return load(value)


def load_connector(value: Any) -> dict[str, Any]:
    """Validate a ``connector:`` entry (:func:`rook_plugins.ruhroh_config.load_connector`)."""
    from .ruhroh_config import load_connector as load

    return load(value)


def resolve(config: dict[str, Any], agent: Any) -> dict[str, Any]:
    """Check paths and programs before anything runs (:func:`rook_plugins.ruhroh_run.resolve`)."""
    from .ruhroh_run import resolve as run_resolve

    return run_resolve(config, agent)


def check(config: dict[str, Any], plugins: Any, phase: str) -> dict[str, Any]:
    """Find the connector class and check it (:func:`rook_plugins.ruhroh_run.check`).
    A command wrapper (a ``ruhroh:`` entry, or the same as the built-in connector
    ``ruhroh-command``) has only iterations: on any phase but execute it would
    run nothing, so it is refused there."""
    from rook_core.errors import ConfigError

    from .ruhroh_run import check as run_check

    wrapper = config.get("kind") == "command" or config.get("name") == CommandConnector.name
    if wrapper and phase != "execute":
        raise ConfigError(
            f"a ruhroh command wrapper runs on execute only (each turn an iteration); on "
            f"{phase} it would run nothing: give {phase} a script hook ({phase}: "
            "scripts/NAME.sh), or write a connector for it"
        )

    return run_check(config, plugins)


def runnable(config: dict[str, Any], scenario: Any) -> str | None:
    """A ``workspace_only`` connector keeps no conversational memory."""
    if config.get("continuity") == "workspace_only" and len(scenario.turns) > 1:
        return (
            f"continuity level workspace_only keeps no conversational memory, and this scenario "
            f"has {len(scenario.turns)} turns"
        )
    return None


def continuity(config: dict[str, Any]) -> str | None:
    """The continuity level the entry declares (its connector's, found by ``check``)."""
    level = config.get("continuity")
    return level if isinstance(level, str) else None


def fits(config: dict[str, Any], scenario: Any) -> str | None:
    """A command wrapper gets each turn's text in ``RUHROH_MESSAGE``: a turn longer
    than one environment variable can carry, or holding a NUL, could never be sent
    (the system refuses to start the wrapper), so it is refused before anything runs."""
    if config.get("kind") != "command" and config.get("name") != "ruhroh-command":
        return None  # a connector's run_turn gets the text as a value
    from rook_core.profile import env_var_limit

    limit = env_var_limit()
    for i, text in enumerate(scenario.turns):
        if "\0" in text:
            return (
                f"turn {i + 1} ({_turn_field(scenario, i)}) holds a NUL character (\\0): the "
                "Ruhroh wrapper gets it in RUHROH_MESSAGE, and no environment variable can "
                "carry one"
            )
        size = len(f"RUHROH_MESSAGE={text}".encode("utf-8", "surrogateescape")) + 1
        if limit and size > limit:
            return (
                f"turn {i + 1} ({_turn_field(scenario, i)}) holds {size - 16} bytes: the "
                f"Ruhroh wrapper gets it in RUHROH_MESSAGE, and one environment variable "
                f"carries at most {limit} bytes (with its name); shorten it, or put the long "
                "text in a file the turn names (a workspace_template can provide one)"
            )
    return None


def _turn_field(scenario: Any, index: int) -> str:
    """The field of a scenario file that holds turn ``index`` (0-based)."""
    if scenario.goal_turn == 0 and len(scenario.turns) > 1:
        return f"turns[{index}]"
    return "goal" if index == scenario.goal_turn else f"setup_messages[{index}]"


async def start(run: Any) -> Any:
    """The run's connector runtime (:func:`rook_plugins.ruhroh_run.start`)."""
    from .ruhroh_run import start as run_start

    return await run_start(run)


async def stop(runtime: Any) -> None:
    from .ruhroh_run import stop as run_stop

    await run_stop(runtime)


def run_phase(call: Any) -> Any:
    from .ruhroh_run import run_phase as run

    return run(call)


@hookimpl
def rook_register_transports(register: Any) -> None:
    register(
        TransportSpec(
            key=RUHROH,
            handles_timeout=True,
            load_config=load_command,
            resolve=resolve,
            check=check,
            start=start,
            stop=stop,
            runnable=runnable,
            check_scenario=fits,
            continuity=continuity,
            saved_names=saves_nothing,
            description="run a Ruhroh command wrapper as is (RUHROH_* variables, the task loop)",
        )
    )
    register(
        TransportSpec(
            key=CONNECTOR,
            handles_timeout=True,
            load_config=load_connector,
            resolve=resolve,
            check=check,
            start=start,
            stop=stop,
            runnable=runnable,
            check_scenario=fits,
            continuity=continuity,
            saved_names=saves_nothing,
            description="run a registered connector with the advanced Ruhroh lifecycle",
        )
    )


@hookimpl
def rook_register_connectors(register: Any) -> None:
    register(CommandConnector)


@hookimpl
def rook_register_criteria(register: Any) -> None:
    for cls in CRITERIA:
        register(cls())


@hookimpl
def rook_evidence_recorded(run: Any, record: Any, result: Any) -> None:
    details = getattr(result, "details", None) or {}
    if getattr(result, "transport", "") in KEYS and details.get("ruhroh"):
        from . import ruhroh_manifest

        ruhroh_manifest.write(run, details["ruhroh"])


@hookimpl
def rook_evidence_merged(merged: Any) -> None:
    from . import ruhroh_manifest

    ruhroh_manifest.merge(merged)
    ruhroh_manifest.merge(merged, "judge")  # a Ruhroh judge profile's, in judge/


(
    rook_auth_prepare,
    rook_session_open,
    rook_transport_execute,
    rook_session_close,
    rook_evidence_collect,
) = phase_hooks(KEYS, run_phase)
