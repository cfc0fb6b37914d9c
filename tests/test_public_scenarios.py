"""Scenarios written for the public Rook CLI load as is (SPEC §6, decided)."""

from __future__ import annotations

import pytest
from test_judging import JUDGE

# Echoes the turn; on the last turn (the goal) it calls a tool, unless told not to.
AGENT = """
    #!/usr/bin/env python3
    import json, os, sys, time
    if sys.argv[1] != "execute":
        sys.exit(0)
    text = sys.stdin.read()
    if text == "sleep":
        time.sleep(10)
    turn = int(os.environ["ROOK_TURN"])
    answer = {"output": f"turn {turn}: you said {text}; your refund is on its way",
              "conversation": "conv-1", "calls": []}
    if "cancel" in text:
        answer["calls"] = [{"name": "cancel_order", "arguments": {"id": "ORD-1"}}]
    print(json.dumps(answer))
"""

PUBLIC = """
    title: Refund status after a cancelled order
    class: functional
    category: state_context
    feature_id: refunds
    tags: [refunds, smoke]
    goal: "Where is my refund?"
    multi_turn: true
    setup_messages:
      - "I cancelled ORD-1 yesterday"
      - "It was a blue kettle"
    timeout_seconds: 60
    max_turns: 5
    repeat: 1
    expectation:
      acceptance_criteria:
        - id: ac-1
          statement: "The answer must mention refund"
          check: llm_judge
      forbidden:
        - "Claims to be unable to help, must mention cannot"
        - pattern: "(?i)internal error"
      mcp:
        - server: orders
          tool: cancel_order
          expect: not_called
"""


@pytest.fixture
def ws(rook_workspace):
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.script("judge.py", JUDGE)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True, "multi_turn": True}})
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}},
                           active=False)
    return rook_workspace


def test_a_public_cli_scenario_loads_and_runs_as_is(ws, rook_cli):
    ws.scenario(PUBLIC, name="refund-status")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1, r.stdout + r.stderr  # the forbidden statement's judge fails it
    (entry,) = r.report["scenarios"]
    assert entry["id"] == "refund-status"  # from the file name: the file has no id
    assert entry["name"] == "Refund status after a cancelled order"
    assert entry["extra"] == {"class": "functional", "category": "state_context",
                              "feature_id": "refunds", "timeout_seconds": 60.0,
                              "max_turns": 5, "multi_turn": True}
    assert [t["input"] for t in entry["turns"]] == [
        "I cancelled ORD-1 yesterday", "It was a blue kettle", "Where is my refund?"]
    got = [(c["type"], c.get("id"), c["status"]) for c in entry["criteria"]]
    assert got == [
        ("rubric", "ac-1", "passed"),  # "refund" is mentioned
        ("rubric", None, "failed"),  # this test judge looks for the rubric's last word
        ("not_matches", None, "passed"),
        ("not_called", None, "failed"),  # turn 1 called cancel_order (calls count all turns)
    ]
    forbidden = entry["criteria"][1]["evidence"]["judge"]["prompt"]
    assert "Forbidden behaviour: Claims to be unable to help" in forbidden
    stats = r.report["summary"]["by_scenario"][0]
    assert stats["class"] == "functional" and stats["category"] == "state_context"


def test_a_missing_judge_profile_names_the_criteria_as_the_file_writes_them(ws, rook_cli):
    """The refusal named them 'criterion 1 (rubric)', 'criterion 2 (rubric)': numbers a
    public-CLI file never shows (they are made from its expectation). It names each
    by its id where it has one, else by the start of its text."""
    ws.scenario(PUBLIC, name="refund-status")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "criterion 1 (rubric ac-1)" in r.stderr, r.stderr
    assert 'criterion 2 (rubric: "Forbidden behaviour: Claims to be unable to help' in r.stderr


def test_class_and_category_reach_every_report(ws, rook_cli, tmp_path):
    """SPEC §6: class and category are kept for selection and reports; the
    Markdown report (a CI job's summary) showed neither."""
    ws.scenario({"id": "kept", "goal": "hello", "class": "functional",
                 "category": "happy_path", "criteria": [{"contains": "hello"}]})
    ws.scenario({"id": "plain", "goal": "hello", "criteria": [{"contains": "hello"}]})
    out = {f: tmp_path / f"r.{f}" for f in ("markdown", "html", "junit")}
    r = rook_cli("run", *[a for f, p in out.items() for a in ("--report", f"{f}:{p}")])
    assert r.exit_code == 0, r.stderr
    for fmt, path in out.items():
        text = path.read_text(encoding="utf-8").replace("\\_", "_")  # Markdown's escape
        assert "functional" in text and "happy_path" in text, (fmt, text)
    md = out["markdown"].read_text(encoding="utf-8")
    assert "| <code>kept</code> (functional / happy\\_path) |" in md, md
    assert "| <code>plain</code> |" in md, md


@pytest.mark.parametrize("field", ["name", "title"])
def test_a_blank_name_is_no_name(ws, rook_cli, field):
    # scenarios.md: name defaults to the id; an empty one did, a blank one ("   ")
    # was kept, and reports showed a row with no name
    ws.scenario({"id": "blank", field: "   ", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"][0]["name"] == "blank"



def test_a_name_and_a_title_that_differ_are_refused_naming_both(ws, rook_cli):
    # title is the public CLI's spelling of name: given both, name won silently,
    # and the title written in the file was shown nowhere
    path = ws.scenario({"id": "both", "name": "Refunds", "title": "Refund status",
                        "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None, r.stdout + r.stderr
    assert f"{path}: invalid scenario both:" in r.stderr, r.stderr
    assert "title: 'Refund status' differs from name: 'Refunds'" in r.stderr, r.stderr
    assert not any(ws.runs_dir.iterdir())
    path.write_text("id: both\nname: Refunds\ntitle: ' Refunds'\ngoal: hi\n"
                    "criteria: [{contains: hi}]\n")  # the same name twice: no conflict
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"][0]["name"] == "Refunds"


def test_public_and_native_fields_mix(ws, rook_cli):
    ws.scenario({"id": "mixed", "title": "Mixed", "goal": "hello", "class": "functional",
                 "criteria": [{"contains": "hello"}],
                 "expectation": {"forbidden": [{"pattern": "internal error"}]}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    (entry,) = r.report["scenarios"]
    assert [c["type"] for c in entry["criteria"]] == ["contains", "not_matches"]
    assert entry["criteria"][1]["turn"] == "all"


def test_selectors_narrow_one_another_and_excluded_needs_only(ws, rook_cli):
    specs = [
        ("f-happy", "functional", "happy_path", ["smoke"]),
        ("f-edge", "functional", "boundary", []),
        ("a-inject", "adversarial", "prompt_injection", ["smoke"]),
        ("a-jail", "adversarial", "jailbreak", []),
    ]
    for sid, cls, cat, tags in specs:
        ws.scenario({"id": sid, "goal": "hi", "class": cls, "category": cat, "tags": tags,
                     "criteria": [{"contains": "hi"}]})
    ws.scenario({"id": "parked", "goal": "hi", "class": "functional", "excluded": True,
                 "criteria": [{"contains": "hi"}]})

    def selected(*args):
        r = rook_cli("run", "--json", *args)
        assert r.exit_code in (0, 2), r.stderr
        return sorted(r.statuses()) if r.exit_code == 0 else r.stderr

    assert selected() == ["a-inject", "a-jail", "f-edge", "f-happy"]
    assert selected("--class", "functional") == ["f-edge", "f-happy"]
    assert selected("--category", "jailbreak,boundary") == ["a-jail", "f-edge"]
    assert selected("--class", "adversarial", "--tag", "smoke") == ["a-inject"]
    none = selected("--class", "adversarial", "--category", "happy_path")
    assert none.startswith("rook: error: no scenario selected"), none
    # what emptied the selection, and what there is
    assert "by --class adversarial --category happy_path (5 scenarios there; tags: " in none
    # the classes and categories there, as the tags: a misspelt one is seen at once
    assert "class: adversarial, functional; category: boundary, happy_path, jailbreak, " in none
    assert "class:" not in selected("--tag", "nope")  # only for the flags given
    assert selected("--only", "parked") == ["parked"]
    assert selected("--only", "parked,f-edge", "--class", "functional") == ["f-edge", "parked"]


def test_selectors_that_match_only_excluded_scenarios_say_so(ws, rook_cli):
    """The selectors matched a scenario with excluded: true, which runs only when
    --only names it: the refusal listed its tag and category among what is there
    ("--tag nightly ... tags: nightly"), and never said why it was not run."""
    ws.scenario({"id": "live", "goal": "hi", "tags": ["smoke"], "criteria": [{"contains": "hi"}]})
    ws.scenario({"id": "parked", "goal": "hi", "tags": ["nightly"], "category": "slow",
                 "excluded": True, "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--tag", "nightly")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "by --tag nightly (2 scenarios there; tags: nightly, smoke" in r.stderr, r.stderr
    assert "excluded: true, run only when --only names them: parked" in r.stderr, r.stderr
    r = rook_cli("run", "--category", "slow")
    assert "excluded: true, run only when --only names them: parked" in r.stderr, r.stderr
    r = rook_cli("run", "--tag", "other")  # parked is not what it would have selected
    assert r.exit_code == 2 and "excluded" not in r.stderr, r.stderr


def test_a_lone_excluded_scenario_is_counted_in_the_singular(rook_workspace, rook_cli):
    # "(every scenario there is excluded: true) (1 scenarios there; ...)"
    rook_workspace.script("agent.sh", "#!/bin/sh\ncat >/dev/null; echo '{\"output\": \"hi\"}'\n")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "parked", "goal": "hi", "excluded": True,
                             "criteria": [{"contains": "hi"}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "(1 scenario there; " in r.stderr, r.stderr
    # it never said how to run it: excluded: true runs only when --only names it
    assert (
        "(every scenario there is excluded: true, which runs only when --only names it: "
        "--only parked)" in r.stderr
    ), r.stderr
    assert rook_cli("run", "--only", "parked").exit_code == 0


def test_timeout_seconds_caps_each_execute_turn(ws, rook_cli):
    ws.scenario({"id": "slow", "title": "Slow", "goal": "sleep", "timeout_seconds": 0.5,
                 "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"slow": "error"}
    assert "timed out after 0.5 s" in r.report["scenarios"][0]["reason"]


@pytest.mark.parametrize("scenario, needles", [
    ({"title": "t", "goal": "g", "expectation": {"acceptance_criteria": [
        {"id": "x", "statement": "s", "check": "regex"}]}},
     ["expectation.acceptance_criteria.0.check", "llm_judge"]),
    ({"title": "t", "goal": "g", "expectation": {"forbidden": [{"pattern": "(open"}]}},
     ["expectation.forbidden.0.pattern", "regular expression"]),
    # a blank statement was sent to the judge as the rubric "Forbidden behaviour: "
    ({"title": "t", "goal": "g", "expectation": {"forbidden": ["  ", {"statement": ""}]}},
     ["expectation.forbidden.0: must be a statement (a text, not empty)",
      "expectation.forbidden.1.statement: must be a statement"]),
    ({"title": "t", "goal": "g", "expectation": {"acceptance_criteria": [
        {"id": "a", "statement": " "}]}},
     ["expectation.acceptance_criteria.0.statement: must be a statement"]),
    ({"title": "t", "goal": "g", "expectation": {"mcp": [{"server": "s", "tool": ""}]}},
     ["expectation.mcp.0.tool: must be a tool name"]),
    ({"title": "t", "goal": "g", "expectation": {"forbidden": [{"statement": "a", "pattern": "b"}]}},
     ["expectation.forbidden.0", "exactly one of statement or pattern"]),
    ({"title": "t", "goal": "g", "expectation": {"mcp": [{"tool": "x", "expect": "maybe"}]}},
     ["expectation.mcp.0.expect"]),
    ({"title": "t", "goal": "g", "expectation": {"vibes": []}}, ["expectation.vibes", "unknown field"]),
    ({"title": "t", "goal": "g", "setup_messages": ["a"]}, ["setup_messages", "multi_turn: true"]),
    ({"title": "t", "turns": ["a"], "multi_turn": True, "setup_messages": ["a"]},
     ["setup_messages", "goes with goal"]),
    ({"title": "t", "goal": "g", "excluded": "yes"}, ["excluded"]),
    ({"title": "t", "goal": "g", "timeout_seconds": -1}, ["timeout_seconds"]),
    ({"title": "t", "goal": "g", "class": ["a"]}, ["class"]),
    # expectation, or one of its lists, of another shape said "invalid input type",
    # "not a valid list": marshmallow's words, where criteria: says what it takes
    ({"title": "t", "goal": "g", "expectation": "be nice"},
     ["expectation: must be a mapping of acceptance_criteria, forbidden and mcp, each a list"]),
    ({"title": "t", "goal": "g", "expectation": {"acceptance_criteria": "Greets"}},
     ["expectation.acceptance_criteria: must be a list of statements: [{id: ac-1, "
      "statement: ..., check: llm_judge}]"]),
    ({"title": "t", "goal": "g", "expectation": {"forbidden": {"pattern": "x"}}},
     ["expectation.forbidden: must be a list of statements or {pattern: ...}: [{pattern: x}]"]),
    # a text given a mapping or a list said "not a valid string"
    ({"title": "t", "goal": "g", "multi_turn": True, "setup_messages": [{"a": 1}]},
     ["setup_messages.0: must be text, not a mapping"]),
    ({"title": ["t"], "goal": "g"}, ["title: must be text, not a list"]),
    ({"title": "t", "goal": {"text": "g"}}, ["goal: must be text, not a mapping"]),
    ({"title": "t", "goal": "g", "expectation": {"mcp": "cancel_order"}},
     ["expectation.mcp: must be a list of tools: [{server: ..., tool: ..., expect: "
      "not_called}]"]),
])
def test_invalid_public_fields_are_refused_with_their_path(ws, rook_cli, scenario, needles):
    path = ws.scenario(scenario, name="bad")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert path.name in r.stderr
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)


def test_public_scenarios_need_a_judge_profile_only_for_judged_expectations(ws, rook_cli):
    ws.scenario({"title": "t", "goal": "g", "expectation": {"acceptance_criteria": ["mention g"]}},
                name="judged")
    r = rook_cli("run")
    assert r.exit_code == 2 and "--judge-profile" in r.stderr
    (ws.agent_dir / "scenarios" / "judged.yaml").unlink()
    ws.scenario({"title": "t", "goal": "g", "expectation": {
        "mcp": [{"server": "s", "tool": "cancel_order", "expect": "not_called"}]}}, name="plain")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"plain": "passed"}


def test_the_content_hash_changes_with_the_definition(ws, rook_cli):
    path = ws.scenario({"id": "s", "title": "t", "goal": "g"})
    r1 = rook_cli("run", "--json").report["scenarios"][0]["content_hash"]
    assert rook_cli("run", "--json").report["scenarios"][0]["content_hash"] == r1
    path.write_text(path.read_text().replace("title: t", "title: u"))
    assert rook_cli("run", "--json").report["scenarios"][0]["content_hash"] != r1


# Fails a forbidden statement when any answer it is asked to judge ("turns")
# shows the word: earlier turns given as context only are not judged.
FORBIDDEN_JUDGE = r"""
    #!/usr/bin/env python3
    import json, re, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    prompt = sys.stdin.read()
    doc = json.loads(re.search(r"^EVIDENCE[^\n]*\n(.*?)\n\nAnswer with", prompt, re.S | re.M).group(1))
    seen = [t["turn"] for t in doc["turns"] if "promise" in (t["output"] or "").casefold()]
    print(json.dumps({"output": {"pass": not seen, "reason": f"promises in turns {seen}"}}))
"""


def test_a_forbidden_statement_is_judged_on_every_answer(rook_workspace, rook_cli):
    # docs/scenarios.md: "the answers must not exhibit the statement", like the
    # pattern form (not_matches on every turn). A setup turn's answer that
    # exhibits it fails the scenario; it is not only context for the last one.
    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            said = "I promise a refund by Friday" if os.environ["ROOK_TURN"] == "1" else "Noted."
            print(json.dumps({"output": said, "conversation": "conv-1"}))
    """)
    rook_workspace.script("judge.py", FORBIDDEN_JUDGE)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"multi_turn": True}})
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}},
                           active=False)
    rook_workspace.scenario("""
        title: No promised dates
        goal: "Where is my refund?"
        multi_turn: true
        setup_messages: ["I cancelled ORD-1"]
        expectation:
          forbidden: ["Promises a refund date it cannot know"]
    """, name="no-promises")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    (entry,) = r.report["scenarios"]
    (criterion,) = entry["criteria"]
    assert criterion["turn"] == "all"
    assert (criterion["status"], criterion["reason"]) == ("failed", "judge: promises in turns [1]")
    assert r.exit_code == 1


def test_the_goal_of_a_public_cli_file_is_its_goal_not_its_first_setup_message(
    ws, rook_cli, tmp_path, monkeypatch
):
    """setup_messages come first, the goal last: the judge (and {{goal}}, the
    Ruhroh goal file) get the file's goal, not the first setup message."""
    import json
    import re

    log = tmp_path / "judge-log"
    log.mkdir()
    monkeypatch.setenv("JUDGE_LOG", str(log))
    ws.scenario(PUBLIC, name="public")
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code in (0, 1), r.stderr
    prompt = (log / "0.prompt").read_text()
    found = re.search(r"^EVIDENCE[^\n]*\n(.*?)\n\nAnswer with", prompt, re.S | re.M)
    evidence = json.loads(found.group(1))
    assert evidence["goal"] == "Where is my refund?"
    assert [t["input"] for t in r.report["scenarios"][0]["turns"]] == [
        "I cancelled ORD-1 yesterday", "It was a blue kettle", "Where is my refund?",
    ]


def test_a_public_scenario_in_a_list_is_told_that_only_a_file_of_one_takes_its_name(
        ws, rook_cli):
    """scenarios.md: a public-CLI scenario with no id takes its file's name. In a file
    holding a list, where the name cannot tell the scenarios apart, the refusal said
    only 'id: missing: a scenario needs an id', as if the file name were never used."""
    path = ws.scenario("- {title: One, goal: hello}\n", name="One Thing")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stderr
    assert f"{path}[0]: invalid scenario:\n  id: missing: a scenario in a list needs its own id" \
        in r.stderr, r.stderr
    assert "(a file of one scenario takes the file name's: one-thing)" in r.stderr, r.stderr



def test_a_file_name_with_accents_gives_its_letters_folded_not_dropped(ws, rook_cli):
    # 'Café Ünïcode.yaml' gave the id caf-n-code, where a profile named Café gets cafe
    ws.scenario("title: One\ngoal: hello\n", name="Café Ünïcode")
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert r.exit_code == 0, r.stderr
    assert [s["id"] for s in r.report["scenarios"]] == ["cafe-unicode"]


# Reports the calls given in its goal (a JSON list), as an agent's log names them.
CALLS_AGENT = """
    #!/usr/bin/env python3
    import json, sys
    if sys.argv[1] == "execute":
        print(json.dumps({"output": "done", "calls": json.loads(sys.stdin.read())}))
"""


@pytest.mark.parametrize("calls, status", [
    ([{"name": "mcp__orders__cancel_order"}], "failed"),  # Claude Code, Codex
    ([{"name": "orders__cancel_order"}], "failed"),
    ([{"name": "orders.cancel_order"}], "failed"),
    ([{"name": "cancel_order"}], "failed"),  # the bare name: which server, not told
    ([{"name": "cancel_order", "server": "orders"}], "failed"),
    ([{"name": "cancel_order", "server": "billing"}], "passed"),
    ([{"name": "mcp__billing__cancel_order"}], "passed"),
    ([{"name": "mcp__orders__cancel_order_preview"}], "passed"),
    ([{"name": "lookup_order"}], "passed"),
])
def test_an_mcp_expectation_finds_the_tool_as_the_agent_names_it(
    rook_workspace, rook_cli, calls, status
):
    """expectation.mcp gives a server and a tool: an agent whose client names the
    tool by its server (mcp__orders__cancel_order) called it. Matched by the bare
    name only, not_called passed while the agent cancelled the order."""
    import json

    rook_workspace.script("agent.py", CALLS_AGENT)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True}})
    goal = json.dumps(json.dumps(calls))
    rook_workspace.scenario(f"""
        title: No cancelling
        goal: {goal}
        expectation:
          mcp:
            - server: orders
              tool: cancel_order
              expect: not_called
    """, name="no-cancel")
    rook_workspace.scenario(f"""
        id: native
        goal: {goal}
        criteria:
          - not_called: {{name: cancel_order, server: " orders "}}
    """, name="native")
    r = rook_cli("run", "--json")
    got = {e["id"]: (e["status"], e["criteria"][0]["reason"]) for e in r.report["scenarios"]}
    assert got["no-cancel"] == got["native"], got
    assert got["native"][0] == status, got
    assert "cancel_order (MCP server orders)" in got["native"][1]


def test_an_mcp_server_that_is_no_name_is_refused(rook_workspace, rook_cli):
    rook_workspace.script("agent.py", CALLS_AGENT)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario("""
        title: t
        goal: "[]"
        expectation: {mcp: [{server: 7, tool: cancel_order}]}
    """, name="bad")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "expectation.mcp.0.server" in r.stderr, r.stderr


@pytest.mark.parametrize("server, tool", [("billing__refund", "all"), ("billing", "refund__all")])
def test_a_server_or_tool_name_holding_a_double_underscore_is_refused(
    rook_workspace, rook_cli, server, tool
):
    """mcp__billing__refund__all is server billing's tool refund__all and server
    billing__refund's tool all: a call so named passed called: {server: billing__refund,
    name: all} and failed not_called: {server: billing, name: refund__all} alike. A
    server given with a name holding "__" is refused, saying to name the call as the
    agent's log does."""
    rook_workspace.script("agent.py", CALLS_AGENT)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True}})
    native = rook_workspace.scenario(
        {"id": "native", "goal": "[]", "criteria": [
            {"contains": "done"}, {"not_called": {"name": tool, "server": server}}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{native}" in r.stderr and "criteria.1.not_called.server:" in r.stderr, r.stderr
    assert "mcp__billing__refund__all" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "without server: mcp__billing__refund__all" in r.stderr, r.stderr
    assert ("the tool 'refund__all' of server 'billing' or the tool 'all' of server "
            "'billing__refund'") in r.stderr, r.stderr
    native.unlink()
    public = rook_workspace.scenario(f"""
        title: t
        goal: "[]"
        expectation: {{mcp: [{{server: {server}, tool: {tool}, expect: called}}]}}
    """, name="public")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{public}" in r.stderr and "expectation.mcp.0" in r.stderr, r.stderr
    assert "without server: mcp__billing__refund__all" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not list(rook_workspace.runs_dir.iterdir())


# Answers each turn with its number, and logs every turn it was sent.
TURNS_AGENT = """
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] == "execute":
        text = sys.stdin.read()
        with open(os.environ["TURN_LOG"], "a") as fh:
            fh.write(text + "\\n")
        print(json.dumps({"output": f"reply to {text}", "conversation": "c-1"}))
"""


def test_max_turns_caps_the_turns_sent_to_a_script_agent(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """A public CLI file's max_turns lowered a Ruhroh wrapper's iterations (turn 3 of 3
    not sent with max_turns 2) but a script or HTTP agent was sent every turn: the
    same file meant two things. Every transport now stops at max_turns, as Ruhroh does:
    the later turns are not sent, and the record and criteria say why."""
    log = tmp_path / "turns.log"
    monkeypatch.setenv("TURN_LOG", str(log))
    rook_workspace.script("agent.py", TURNS_AGENT)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"multi_turn": True}})
    rook_workspace.scenario(
        {"title": "Three", "id": "three", "turns": ["a", "b", "c"], "max_turns": 2,
         "criteria": [{"contains": "reply to b", "turn": 2}, {"contains": "reply", "turn": 3}]})
    rook_workspace.scenario(
        {"title": "One", "id": "one", "turns": ["x", "y"], "max_turns": 1,
         "criteria": [{"contains": "reply to x"}]})
    r = rook_cli("run", "--json")
    assert "Traceback" not in r.stderr, r.stderr
    assert sorted(log.read_text().split()) == ["a", "b", "x"]
    by_id = {s["id"]: s for s in r.report["scenarios"]}
    three = by_id["three"]
    assert [t["input"] for t in three["turns"]] == ["a", "b"]
    assert three["warnings"] == [
        "turn 3 not sent: the conversation ended after turn 2 (the scenario's max_turns (2) "
        "reached)"]
    assert [c["status"] for c in three["criteria"]] == ["passed", "unverifiable"]
    assert "turn 3 was not sent" in three["criteria"][1]["reason"]
    # the last criterion judges the last turn sent; no handle is needed for turns never sent
    assert by_id["one"]["status"] == "passed", by_id["one"]
    assert by_id["one"]["warnings"] == [
        "turn 2 not sent: the conversation ended after turn 1 (the scenario's max_turns (1) "
        "reached)"]


def test_a_scenario_whose_max_turns_is_1_needs_no_multi_turn(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """Two turns with max_turns 1 send one turn: it was not_runnable on a profile that
    does not declare multi_turn ('it has 2 turns'), though no second turn is ever sent."""
    monkeypatch.setenv("TURN_LOG", str(tmp_path / "turns.log"))
    rook_workspace.script("agent.py", TURNS_AGENT)
    rook_workspace.profile({"id": "agent", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario(
        {"title": "One", "id": "one", "turns": ["x", "y"], "max_turns": 1,
         "criteria": [{"contains": "reply to x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"one": "passed"}, r.stdout + r.stderr
