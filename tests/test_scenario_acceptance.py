"""SPEC §6 held sentence by sentence where no other test holds it: the scenario
status a mix of criterion verdicts gives (and the reason naming what decided it),
repeats whose runs differ only by an unverifiable one, judges answering outside
the contract, a plugin judge installed through its entry point, and the public
Rook CLI's scenario fields not held elsewhere. Real hooks, the real command."""

from __future__ import annotations

import json

import pytest

# Answers with the JSON object the goal holds (the turn's text, for several turns).
MIRROR = """
    #!/usr/bin/env python3
    import json, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    print(json.dumps(json.loads(sys.stdin.read())))
"""

SAID_HELLO = json.dumps({"output": "hello"})  # no calls: could not observe them
NO_COMMAND = {"command": {"run": ["/nonexistent/rook-no-such-program"]}}  # cannot start: error


@pytest.fixture
def ws(rook_workspace):
    rook_workspace.script("mirror.py", MIRROR)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/mirror.py"},
                            "capabilities": {"calls": True, "usage": True,
                                             "multi_turn": True}})
    return rook_workspace


MIXES = [
    # (criteria, scenario status, criterion statuses): the scenario is failed when a
    # criterion failed, else error when one errored, else unverifiable when one could
    # not be verified -- never a pass
    ([{"contains": "bye"}, {"not_called": "x"}], "failed", ["failed", "unverifiable"]),
    ([{"contains": "hello"}, {"not_called": "x"}], "unverifiable", ["passed", "unverifiable"]),
    ([{"contains": "bye"}, NO_COMMAND], "failed", ["failed", "error"]),
    ([{"not_called": "x"}, NO_COMMAND], "error", ["unverifiable", "error"]),
    ([NO_COMMAND, {"contains": "bye"}, {"not_called": "x"}], "failed",
     ["error", "failed", "unverifiable"]),
    ([{"contains": "hello"}], "passed", ["passed"]),
]


def test_the_scenario_status_of_each_mix_of_verdicts(ws, rook_cli):
    for i, (criteria, _, _) in enumerate(MIXES):
        ws.scenario({"id": f"m{i}", "goal": SAID_HELLO, "criteria": criteria})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    got = {s["id"]: (s["status"], [c["status"] for c in s["criteria"]])
           for s in r.report["scenarios"]}
    assert got == {f"m{i}": (status, each) for i, (_, status, each) in enumerate(MIXES)}
    summary = r.report["summary"]
    assert (summary["passed"], summary["failed"], summary["error"],
            summary["unverifiable"]) == (1, 3, 1, 1)
    assert summary["decided"] == 5 and summary["pass_rate"] == 0.2  # unverifiable: not decided


def test_a_failed_scenarios_reason_also_names_a_criterion_that_errored(ws, rook_cli):
    """A scenario with one failed and one errored criterion gave as its reason the
    failure alone ('1 criterion failed: ...'): a reader of the table, the JUnit
    message or the Markdown row never learnt that a criterion could not be judged
    at all (a command that could not start, a judge that broke), which fixing the
    failure alone would not cure. The reason names both, the failure first."""
    ws.scenario({"id": "both", "goal": SAID_HELLO,
                 "criteria": [NO_COMMAND, {"contains": "bye"}, {"not_called": "x"}]})
    r = rook_cli("run", "--json")
    (s,) = r.report["scenarios"]
    assert s["status"] == "failed"
    failed, errored = s["criteria"][1]["reason"], s["criteria"][0]["reason"]
    assert s["reason"] == f"1 criterion failed: {failed}; 1 criterion error: {errored}", s["reason"]
    assert "unverifiable" not in s["reason"]
