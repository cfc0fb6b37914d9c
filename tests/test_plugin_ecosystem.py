"""The plugin ecosystem as a user who installed community packages meets it.

Each plugin here is a real installed distribution (``rook_distribution``: an
entry point in the ``rook`` group, found as ``pip install`` would leave it).
"""

from __future__ import annotations

COUNTED = """
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing

LOG = {log!r}


def said(word):
    with open(LOG, "a") as fh:
        fh.write(word + "\\n")


async def start(run):
    said("start")
    return "pool"


async def stop(resource):
    said("stop")


async def answer(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={{"output": call.stdin}},
                      turn=call.turn, transport="counted")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="counted", load_config=lambda value: value,
                           saved_names=saves_nothing, start=start, stop=stop))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "counted" else None
"""


def test_a_transport_is_started_only_when_a_phase_that_runs_uses_it(
    rook_distribution, rook_workspace, rook_cli, tmp_path
):
    """``rook run --run ID --phases collect,judge`` started (and stopped) the
    transport of the execute hook, though no phase it runs uses it: a
    connection pool opened, a service woken, for nothing. Only the transports
    of the hooks of the phases that run are started."""
    log = tmp_path / "counted.log"
    rook_distribution(
        "rook-counted", {"counted": "rook_counted"}, {"rook_counted.py": COUNTED.format(log=str(log))}
    )
    rook_workspace.script("collect.sh", "#!/bin/bash\necho '{}'\n")
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": {"counted": {}}, "collect": "scripts/collect.sh"}}
    )
    rook_workspace.scenario({"id": "s", "goal": "HELLO", "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0, r.stderr
    assert log.read_text().split() == ["start", "stop"]
    r = rook_cli("run", "--json", "--run", r.report["run"]["id"], "--phases", "collect,judge")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr
    assert log.read_text().split() == ["start", "stop"], "no phase of the second used it"

