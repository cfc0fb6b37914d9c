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


def _example_outcomes():
    """The outcome examples/README.md promises for each scenario, per agent:
    its `## order-desk` and `## faq-bot` tables, `| `id` | ... | **status** |`."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "examples" / "README.md").read_text()
    outcomes = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        agent = section.split()[0]
        rows = re.findall(r"^\| `([\w-]+)`.*\*\*(\w+)\*\*", section, flags=re.M)
        if rows:
            outcomes[agent] = dict(rows)
    return outcomes


def test_the_example_agents_end_as_the_readmes_say(tmp_path):
    """README.md's first command and examples/README.md promise what the example
    workspace does: order-desk exits 1 (refund-promise fails, the rest pass),
    faq-bot exits 0 with no-escalation unverifiable, and --tag smoke runs only the
    smoke-tagged ones. Run the real `rook` on a copy, as a user would."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shutil.copytree(Path(__file__).resolve().parents[1] / "examples", tmp_path / "examples")
    expected = _example_outcomes()
    assert expected["order-desk"]["refund-promise"] == "failed", expected
    assert expected["faq-bot"]["no-escalation"] == "unverifiable", expected

    def run(*args):
        r = subprocess.run(
            [sys.executable, "-m", "rook_core", "run", "-w", "examples", "--json", *args],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        report = json.loads(r.stdout)
        return r.returncode, {s["id"]: s["status"] for s in report["scenarios"]}, report

    code, statuses, report = run("--agent", "order-desk")
    assert (code, statuses) == (1, expected["order-desk"]), report["summary"]
    [refund] = [s for s in report["scenarios"] if s["id"] == "refund-promise"]
    verdicts = {c["type"]: c["status"] for c in refund["criteria"]}
    assert verdicts == {"contains": "passed", "called": "failed", "claim": "failed"}, refund
    [status] = [s for s in report["scenarios"] if s["id"] == "cancel-then-status"]
    collected = json.dumps(status)
    assert "eu-west-1" in collected and "trace_url" in collected, status  # hook_env, collect

    code, statuses, report = run("--project", "demo", "--agent", "faq-bot")
    assert (code, statuses) == (0, expected["faq-bot"]), report["summary"]

    code, statuses, _ = run("--project", "demo", "--agent", "order-desk", "--tag", "smoke")
    assert (code, statuses) == (1, {"order-status": "passed", "refund-promise": "failed"})


def test_the_examples_readme_s_hooks_by_hand_run_as_written(tmp_path):
    """examples/README.md's 'Trying the hooks by hand' block, copied as written:
    every phase of the order desk by hand (turn 2 remembers turn 1's cancel,
    collect names the transcript), then the faq bot's execute."""
    import json
    import os
    import re
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "examples" / "README.md").read_text()
    section = text.split("## Trying the hooks by hand", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)
    shutil.copytree(root / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    turn1, turn2, collected, faq = lines
    assert "now cancelled" in turn1["output"] and "cancelled" in turn2["output"], lines
    assert [c["name"] for c in turn1["calls"]] == ["lookup_order", "cancel_order"], turn1
    assert collected["turns"] == 2 and collected["trace_url"].startswith("file://"), collected
    assert "Saturday" in faq["output"], faq
