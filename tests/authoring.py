"""Shared steps of the profile-authoring tests (`rook profile add` and what it wrote)."""

from __future__ import annotations

import yaml


def add(rook_cli, ws, *args, input=None, env=None):
    """``rook profile add --workspace WS ARGS``; never a traceback."""
    r = rook_cli("profile", "add", "--workspace", str(ws.root), *args, input=input, env=env)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def profile(ws, pid):
    """The profile file ``pid`` as written, parsed."""
    return yaml.safe_load((ws.agent_dir / "profiles" / f"{pid}.yaml").read_text())
