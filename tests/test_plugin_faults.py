"""A third-party plugin's bugs, met through the real ``rook`` command.

Each plugin here is installed through its entry point (``rook_distribution``),
the way ``pip install`` would, and does one thing the plugin author guide
says not to do. Rook must name the plugin, never show a traceback, never
lose a recorded result and never let a profile's secret value through.
"""

from __future__ import annotations

import json

SECRET = "hunter2-secret-value"


def secret_workspace(ws, monkeypatch, criteria=None):
    """A script agent whose profile declares the secret ``DESK_KEY``."""
    monkeypatch.setenv("DESK_KEY", SECRET)
    ws.script(
        "echo.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || { echo '{}'; exit 0; }
        printf '{"output": "%s"}\\n' "$(cat)"
        """,
    )
    ws.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/echo.sh", "close": "scripts/echo.sh"},
            "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}],
        }
    )
    for n in (1, 2):
        ws.scenario(
            {"id": f"s{n}", "goal": "HELLO", "criteria": criteria or [{"contains": "HELLO"}]}
        )


OBSERVERS = """
import os
from rook_core.hookspecs import hookimpl

SEEN = []

@hookimpl
def rook_evidence_recorded(result):
    raise RuntimeError("observer broke, key " + os.environ["DESK_KEY"])
"""

COUNTER = """
from rook_core.hookspecs import hookimpl

SEEN = []

@hookimpl
def rook_evidence_recorded(record, result):
    SEEN.append((record["key"], result.phase))
"""


def test_an_evidence_observer_that_raises_is_named_and_the_run_goes_on(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """An observer that raised ended ``rook run`` with a Python traceback that showed
    the secret value, and the other observers never saw the hook; it is now a
    warning naming the plugin (once), redacted, and the run and the others go on."""
    rook_distribution("rook-watch", {"watch": "rook_watch"}, {"rook_watch.py": OBSERVERS})
    rook_distribution("rook-count", {"count": "rook_count"}, {"rook_count.py": COUNTER})
    secret_workspace(rook_workspace, monkeypatch)
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 0 and r.statuses() == {"s1": "passed", "s2": "passed"}, r.stderr
    warning = (
        "rook: warning: plugin watch (rook-watch) raised RuntimeError in "
        "rook_evidence_recorded: observer broke, key [redacted:DESK_KEY] (the run goes on; "
        "disable the plugin with ROOK_DISABLE_PLUGINS=watch)"
    )
    assert r.stderr.count(warning) == 1, r.stderr
    assert SECRET not in r.stderr + r.stdout
    import rook_count

    assert sorted(rook_count.SEEN) == [
        ("s1.1", "close"),
        ("s1.1", "execute"),
        ("s2.1", "close"),
        ("s2.1", "execute"),
    ]
    assert SECRET not in rook_workspace.all_run_text(r.report["run"]["id"])
    json.dumps(r.report)
