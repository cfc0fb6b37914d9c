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
