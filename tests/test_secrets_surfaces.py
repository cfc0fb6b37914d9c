"""Secrets, by surface: where a profile's env values could leave Rook other
than through the text it writes (that is test_secrets_matrix's): what a
command Rook is given would write or show."""

from __future__ import annotations

AGENT = """#!/bin/bash
cat >/dev/null
[ "$1" = execute ] && echo '{"output": "ok"}'
exit 0
"""


def test_profile_add_refuses_a_command_holding_another_profile_s_value_with_spaces(
    rook_workspace, rook_cli, monkeypatch
):
    """rook profile add --command 'tool VALUE', VALUE the value of another
    profile's env variable, is refused; but a value with spaces and quotes,
    split into words as a shell splits it, was in no one word of the command,
    so the script was written holding it word by word, and the terminal showed
    it ('runs echo he said ...', the answer). The command as typed is checked
    too now: refused (exit 2, nothing written), naming the variable only."""
    value = 'he said "open sesame" now'
    monkeypatch.setenv("DESK_PASS", value)
    ws = rook_workspace
    ws.script("agent.sh", AGENT)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "env": [{"variable": "DESK_PASS", "purpose": "the desk's password"}]})
    r = rook_cli("profile", "add", "x", "--command", f"echo {value}")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "--command: it would hold the value of DESK_PASS" in r.stderr
    assert "sesame" not in r.stdout + r.stderr
    assert not (ws.agent_dir / "profiles" / "x.yaml").exists()
    assert not (ws.agent_dir / "scripts" / "x-hook.py").exists()
