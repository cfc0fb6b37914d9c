def test_examples_order_desk(rook_cli, rook_workspace):
    rook_workspace.script("echo.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        goal=$(cat)
        printf '{"output": "you said %s"}\\n' "$goal"
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    rook_workspace.scenario({"id": "hello", "goal": "hi", "criteria": [{"contains": "you said hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"hello": "passed"}


def test_the_examples_readme_shows_how_to_see_faq_bots_optimistic_claim(tmp_path):
    """examples/README.md said `rook profile test` flags faq-bot's claim: with two
    agents there, that command refuses to choose one (exit 2)."""
    import re
    import shlex
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "examples" / "README.md").read_text()
    command = re.search(r"`(rook profile test[^`]*)` flags the claim", text).group(1)
    shutil.copytree(root / "examples", tmp_path / "examples")
    r = subprocess.run(
        [sys.executable, "-m", "rook_core", *shlex.split(command)[1:]],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    [calls] = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("calls ")]
    assert "OPTIMISTIC" in calls, r.stdout
