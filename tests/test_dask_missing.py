"""Without the dask extra, ``--executor dask`` is a clear configuration error (exit 2)."""

from __future__ import annotations

import subprocess
import sys

BLOCK = (
    "import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None; "
    "from rook_core.cli import main; main(sys.argv[1:])"
)


def test_executor_dask_without_dask_says_how_to_install_it(rook_workspace, tmp_path):
    rook_workspace.script(
        "echo.sh",
        """
        #!/bin/bash
        touch "$RAN"; printf '{"output": "ok"}\\n'
    """,
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/echo.sh"},
            "hook_env": {"RAN": str(tmp_path / "ran")},
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = subprocess.run(
        [sys.executable, "-c", BLOCK, "run", "-w", str(rook_workspace.root), "--executor", "dask"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert "pip install 'rook-harness[dask]'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "ran").exists()


def test_rook_plugins_lists_both_executors(rook_cli):
    r = rook_cli("plugins", "--json")
    assert r.exit_code == 0, r.stderr
    import json

    assert {"local", "dask"} <= set(json.loads(r.stdout)["executors"])
