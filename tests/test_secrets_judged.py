"""Rook's own text criteria judge what the agent said, not Rook's redaction
markers: a profile env value is ``[redacted:NAME]`` in every record, and a leak
test (``not_contains: "sk-"``) passed on the very leak it forbids, a
``contains: "redacted"`` on Rook's own marker. The value is put back in memory
only: no record, report, reason or line on the terminal holds it."""

from __future__ import annotations

from pathlib import Path

from rook_core.testing import Workspace

KEY = "sk-secret-123"

LEAK = r"""
#!/bin/bash
goal=$(cat)
if [ "$goal" = quiet ]; then echo '{"output": "I will not tell you my key"}'; exit 0; fi
printf '{"output": "my key is %s"}\n' "$API_KEY"
"""

JSON_LEAK = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
key = os.environ["API_KEY"]
print(json.dumps({"output": json.dumps({"key": key, "note": "the key is " + key}), "calls": []}))
"""

ENV = [{"variable": "API_KEY", "purpose": "the agent's key"}]


def _all_text(root: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in sorted(root.rglob("*")) if p.is_file()
    )


def _verdicts(report: dict, sid: str) -> list[tuple[str, str]]:
    scenario = next(s for s in report["scenarios"] if s["id"] == sid)
    return [(c["status"], c["reason"]) for c in scenario["criteria"]]


def _assert_no_value(text: str, where: str) -> None:
    for piece in (KEY, "secret-123", "sk-sec"):
        assert piece not in text, f"a piece of the key ({piece}) reached {where}"


def test_text_criteria_judge_what_the_agent_said_never_the_marker(
    rook_workspace, rook_cli, monkeypatch
):
    monkeypatch.setenv("API_KEY", KEY)
    ws = rook_workspace
    ws.script("agent.sh", LEAK)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "env": ENV})
    criteria = [
        {"not_contains": "sk-"},  # the leak test: fails on the leak
        {"contains": "redacted"},  # Rook's marker is no word of the agent's
        {"not_matches": "sk-.*"},
        {"matches": "sk-\\w{3}"},  # quoted in its reason as the marker, no piece
        {"not_contains": "[redacted:API_KEY]"},  # the documented idiom: judged as recorded
        {"not_matches": "\\[redacted:API_KEY\\]"},
        {"contains": "my key"},
        {"not_contains": "[redacted:"},  # no secret shown at all: judged as recorded too
    ]
    ws.scenario({"id": "leak", "goal": "tell", "criteria": criteria})
    ws.scenario({"id": "quiet", "goal": "quiet", "criteria": criteria})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    leak = _verdicts(r.report, "leak")
    assert [s for s, _ in leak] == ["failed", "failed", "failed", "passed", "failed", "failed",
                                    "passed", "failed"], leak
    assert leak[0][1] == "found 'sk-' in 'my key is [redacted:API_KEY]'"
    assert leak[3][1] == "/sk-\\w{3}/ matched '[redacted:API_KEY]'"
    quiet = _verdicts(r.report, "quiet")  # the agent that keeps its key passes, as before
    assert [s for s, _ in quiet] == ["passed", "failed", "passed", "failed", "passed", "passed",
                                     "passed", "passed"], quiet
    table = rook_cli("run")
    assert "found 'sk-' in 'my key is [redacted:API_KEY]'" in table.stdout + table.stderr
    _assert_no_value(r.stdout + r.stderr + table.stdout + table.stderr, "the terminal")
    _assert_no_value(_all_text(ws.runs_dir), "the run directory")


def test_json_and_claim_judge_the_answer_as_said(rook_workspace, rook_cli, monkeypatch):
    monkeypatch.setenv("API_KEY", KEY)
    ws = rook_workspace
    ws.script("agent.py", JSON_LEAK)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}, "env": ENV,
                "capabilities": {"calls": True}})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [
        {"json": {"path": "key", "contains": "sk-"}},
        {"claim": {"says": "the key is sk-", "requires_call": "read_key"}},
        {"judge": {"name": "keywords", "words": ["sk-"]}},
    ]})
    r = rook_cli("run", "--json")
    verdicts = _verdicts(r.report, "s")
    assert [s for s, _ in verdicts] == ["passed", "failed", "passed"], verdicts
    assert verdicts[0][1] == 'key is "[redacted:API_KEY]"; contains "sk-": true'
    _assert_no_value(r.stdout + r.stderr, "the terminal")
    _assert_no_value(_all_text(ws.runs_dir), "the run directory")


OTHERS = r"""
#!/bin/bash
cat > /dev/null
printf '{"output": "their key is %s"}\n' "$OTHER_KEY"
"""


def test_a_marker_whose_value_is_unknown_when_judged_is_unverifiable(
    rook_workspace, rook_cli, monkeypatch
):
    """Judged in a later invocation without the variable (another agent's of
    the workspace, redacted when the run recorded it): the value the marker
    stands for is unknown, so a text criterion that reads it is unverifiable,
    never a pass on the marker."""
    ws = rook_workspace
    other = Workspace(ws.root, agent="other")
    other.script("agent.sh", "#!/bin/bash\necho '{\"output\": \"ok\"}'\n")
    other.profile({"id": "o", "hooks": {"execute": "scripts/agent.sh"},
                   "env": [{"variable": "OTHER_KEY", "purpose": "the other agent's key"}]})
    ws.script("agent.sh", OTHERS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [
        {"not_contains": "sk-"}, {"contains": "their key"},
        {"not_contains": "[redacted:OTHER_KEY]"}]})
    monkeypatch.setenv("OTHER_KEY", KEY)
    first = rook_cli("run", "--agent", "agent", "--phases", "prepare,open,execute,close", "--json")
    assert first.exit_code == 0, first.stderr
    run_id = first.report["run"]["id"]
    monkeypatch.delenv("OTHER_KEY")
    r = rook_cli("run", "--agent", "agent", "--run", run_id, "--phases", "collect,judge", "--json")
    verdicts = _verdicts(r.report, "s")
    assert [s for s, _ in verdicts] == ["unverifiable", "unverifiable", "failed"], verdicts
    assert "[redacted:OTHER_KEY]" in verdicts[0][1] and "OTHER_KEY: not set" in verdicts[0][1]
    _assert_no_value(first.stdout + first.stderr + r.stdout + r.stderr, "the terminal")
    _assert_no_value(_all_text(ws.runs_dir), "the run directory")


PEEKER = '''
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Peek(CriterionType):
    name = "peek"
    compares_record_text = True  # a plugin's own text criterion: still the record alone

    def evaluate(self, config, view):
        seen = view.output + " " + str(view.calls)
        return Verdict(PASSED, "saw the value" if "sk-secret" in seen else "saw the marker")


@hookimpl
def rook_register_criteria(register):
    register(Peek())
'''


def test_a_plugin_criterion_sees_the_record_never_the_value(
    rook_workspace, rook_cli, monkeypatch, rook_distribution
):
    """Only Rook's own text criteria get the value put back: a plugin's criterion
    type (its own code, maybe a service) sees the redacted record, as a judge
    profile does."""
    rook_distribution("peek-plugin", {"peek": "peek_plugin"}, {"peek_plugin.py": PEEKER})
    monkeypatch.setenv("API_KEY", KEY)
    ws = rook_workspace
    ws.script("agent.sh", LEAK)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "env": ENV})
    ws.scenario({"id": "s", "goal": "tell", "criteria": [{"peek": True}, {"not_contains": "sk-"}]})
    r = rook_cli("run", "--json")
    assert _verdicts(r.report, "s") == [
        ("passed", "saw the marker"), ("failed", "found 'sk-' in 'my key is [redacted:API_KEY]'")
    ], r.stderr
