"""Every built-in deterministic criterion: passed, failed, unverifiable."""

from __future__ import annotations

import json

import pytest

RESPONSE = {
    "output": "Your refund was issued for ORD-1; it ships Tuesday.",
    "calls": [
        {"name": "lookup_order", "arguments": {"id": "ORD-1", "opts": {"deep": True}}},
        {"name": "issue_refund", "arguments": {"id": "ORD-1", "amount": 42}},
    ],
    "usage": {"input": 1200, "output": 340},
}
JSON_OUT = {"output": json.dumps({"order": {"status": "open", "items": ["a", "b"]}})}
BLIND = {"output": "Your refund was issued."}  # no calls, no usage observed
# arguments given as a JSON string (OpenAI's style) are parsed (hooks.md)
ARGS_AS_TEXT = {"output": "ok", "calls": [{"name": "cancel_order", "arguments": '{"id": "ORD-1"}'}]}
# a non-string output is kept as its JSON text (hooks.md), never a language's rendering
OBJECT_OUT = {"output": {"order": {"status": "open", "note": "café"}}}

CASES = [
    # (criterion, response, expected)
    ({"contains": "REFUND"}, RESPONSE, "passed"),
    ({"contains": "cannot help"}, RESPONSE, "failed"),
    ({"not_contains": "cannot help"}, RESPONSE, "passed"),
    ({"not_contains": "refund"}, RESPONSE, "failed"),
    ({"matches": "ships (Monday|Tuesday)"}, RESPONSE, "passed"),
    ({"matches": "^ships"}, RESPONSE, "failed"),
    ({"equals": "  Your refund was issued for ORD-1; it ships Tuesday.\n"}, RESPONSE, "passed"),
    ({"equals": "42"}, RESPONSE, "failed"),
    ({"json": {"path": "order.status", "equals": "open"}}, JSON_OUT, "passed"),
    ({"json": {"path": "order.status", "equals": "closed"}}, JSON_OUT, "failed"),
    ({"json": {"path": "order.items", "contains": "b"}}, JSON_OUT, "passed"),
    ({"json": {"path": "order.missing"}}, JSON_OUT, "failed"),
    ({"json": {"path": "order.status", "equals": "open"}}, RESPONSE, "failed"),  # not JSON
    ({"json": {"path": "order.status", "equals": "open"}}, OBJECT_OUT, "passed"),
    ({"contains": '"note": "café"'}, OBJECT_OUT, "passed"),
    ({"equals": "42"}, {"output": 42}, "passed"),
    ({"called": "lookup_order"}, RESPONSE, "passed"),
    ({"called": {"name": "lookup_order", "arguments": {"id": "ORD-1"}}}, RESPONSE, "passed"),
    (
        {"called": {"name": "lookup_order", "arguments": {"opts": {"deep": True}}}},
        RESPONSE,
        "passed",
    ),
    ({"called": {"name": "lookup_order", "arguments": {"id": "ORD-2"}}}, RESPONSE, "failed"),
    ({"called": {"name": "issue_refund", "arguments": {"amount": "42"}}}, RESPONSE, "passed"),
    ({"called": "cancel_order"}, RESPONSE, "failed"),
    ({"called": "lookup_order"}, BLIND, "unverifiable"),
    ({"not_called": "cancel_order"}, RESPONSE, "passed"),
    ({"not_called": "issue_refund"}, RESPONSE, "failed"),
    ({"not_called": "cancel_order"}, BLIND, "unverifiable"),
    ({"called": {"name": "cancel_order", "arguments": {"id": "ORD-1"}}}, ARGS_AS_TEXT, "passed"),
    ({"not_called": {"name": "cancel_order", "arguments": {"id": "ORD-1"}}}, ARGS_AS_TEXT, "failed"),
    ({"call_order": ["lookup_order", "issue_refund"]}, RESPONSE, "passed"),
    ({"call_order": ["issue_refund", "lookup_order"]}, RESPONSE, "failed"),
    ({"call_order": ["lookup_order"]}, BLIND, "unverifiable"),
    ({"max_calls": 2}, RESPONSE, "passed"),
    ({"max_calls": 1}, RESPONSE, "failed"),
    ({"max_calls": 1}, BLIND, "unverifiable"),
    ({"max_tokens": {"input": 5000, "output": 800, "total": 5500}}, RESPONSE, "passed"),
    ({"max_tokens": {"output": 300}}, RESPONSE, "failed"),
    ({"max_tokens": 1000}, RESPONSE, "failed"),
    ({"max_tokens": 1000}, BLIND, "unverifiable"),
    ({"max_seconds": 20}, RESPONSE, "passed"),
    (
        {"claim": {"says": "refund (is|was) issued", "requires_call": "issue_refund"}},
        RESPONSE,
        "passed",
    ),
    (
        {"claim": {"says": "refund (is|was) issued", "requires_call": "refund_v2"}},
        RESPONSE,
        "failed",
    ),
    (
        {"claim": {"says": "refund (is|was) issued", "requires_call": "issue_refund"}},
        BLIND,
        "unverifiable",
    ),
    (
        {"claim": {"says": "cancelled", "requires_call": "cancel_order"}},
        BLIND,
        "passed",
    ),  # no claim
]


def verdicts(ws, rook_cli, cases):
    """Each (output, criterion) of ``cases`` as a scenario of its own (x00, x01 ...),
    the mirror agent answering that output, all run at once: their verdicts, in order."""
    for i, (output, criterion) in enumerate(cases):
        ws.scenario({"id": f"x{i:02d}", "goal": json.dumps({"output": output}),
                     "criteria": [criterion]})
    r = rook_cli("run", "--json", "--concurrency", "4")
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    return [got[f"x{i:02d}"] for i in range(len(cases))]


@pytest.fixture
def ws(rook_workspace):
    # The agent answers with whatever JSON the goal holds.
    rook_workspace.script("mirror.sh", '#!/bin/bash\n[ "$1" = execute ] && cat\nexit 0\n')
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/mirror.sh"},
            "capabilities": {"calls": True, "usage": True},
        }
    )
    return rook_workspace


def test_every_builtin_criterion(ws, rook_cli):
    for i, (criterion, response, _) in enumerate(CASES):
        ws.scenario({"id": f"c{i:02d}", "goal": json.dumps(response), "criteria": [criterion]})
    r = rook_cli("run", "--json", "--concurrency", "8")
    got = {
        s["id"]: (s["criteria"][0]["status"], s["criteria"][0]["reason"])
        for s in r.report["scenarios"]
    }
    wrong = [
        (criterion, expected, got[f"c{i:02d}"])
        for i, (criterion, _, expected) in enumerate(CASES)
        if got[f"c{i:02d}"][0] != expected
    ]
    assert wrong == []


def test_unverifiable_is_never_a_pass(ws, rook_cli):
    ws.scenario(
        {
            "id": "s",
            "goal": json.dumps(BLIND),
            "criteria": [{"contains": "refund"}, {"not_called": "cancel_order"}],
        }
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "unverifiable"
    assert r.report["summary"]["passed"] == 0 and r.report["summary"]["unverifiable"] == 1
    assert r.report["summary"]["pass_rate"] is None and r.report["summary"]["coverage"] == 0


def test_a_scenario_without_criteria_is_not_a_pass(ws, rook_cli):
    ws.scenario({"id": "s", "goal": json.dumps(RESPONSE)})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "unverifiable"}


# Echoes the JSON object each turn sends, after sleeping its "sleep" seconds.
SLOW_MIRROR = """
    #!/usr/bin/env python3
    import json, sys, time
    if sys.argv[1] != "execute":
        sys.exit(0)
    answer = json.loads(sys.stdin.read())
    time.sleep(answer.pop("sleep", 0))
    print(json.dumps(answer))
"""

SLOW_TURN = {
    "output": "Your refund was issued.",
    "conversation": "c1",
    "calls": [{"name": "lookup_order", "arguments": {"id": "ORD-1"}}],
    "usage": {"input": 10, "output": 5},
    "sleep": 3.0,  # well apart from the fast turn, however loaded the machine
}
FAST_TURN = {
    "output": "It ships Tuesday.",
    "conversation": "c1",
    "calls": [{"name": "issue_refund", "arguments": {"id": "ORD-1"}}],
    "usage": {"input": 20, "output": 5},
}
TURN_CASES = [
    # (criterion, expected): turn 1 is slow, claims the refund and looks the order
    # up; turn 2 is fast, says when it ships and issues the refund
    ({"max_seconds": 2.5}, "passed"),  # the last turn, by default
    ({"max_seconds": 2.5, "turn": "all"}, "failed"),  # every turn
    ({"max_seconds": 2.5, "turn": 1}, "failed"),
    ({"max_seconds": 60, "turn": "all"}, "passed"),
    ({"contains": "Tuesday"}, "passed"),
    ({"contains": "issued"}, "failed"),
    ({"contains": "issued", "turn": 1}, "passed"),
    ({"called": "lookup_order"}, "passed"),  # calls: across all turns
    ({"called": "lookup_order", "turn": 2}, "failed"),
    ({"not_called": "issue_refund"}, "failed"),
    ({"call_order": ["lookup_order", "issue_refund"]}, "passed"),
    ({"max_calls": 1}, "failed"),
    ({"max_calls": 1, "turn": 2}, "passed"),
    ({"max_tokens": {"total": 40}}, "passed"),  # usage: across all turns
    ({"max_tokens": {"total": 39}}, "failed"),
    ({"max_tokens": {"total": 25}, "turn": 2}, "passed"),
    # claim: the last answer's claim by default, backed by a call in any turn
    ({"claim": {"says": "ships", "requires_call": "lookup_order"}}, "passed"),
    ({"claim": {"says": "ships", "requires_call": "lookup_order"}, "turn": 2}, "failed"),
    ({"claim": {"says": "issued", "requires_call": "cancel_order"}}, "passed"),  # no claim
    ({"claim": {"says": "issued", "requires_call": "cancel_order"}, "turn": "all"}, "failed"),
    ({"claim": {"says": "issued", "requires_call": "issue_refund"}, "turn": "all"}, "passed"),
    ({"claim": {"says": "issued", "requires_call": "issue_refund"}, "turn": 1}, "failed"),
]


def test_which_turn_each_criterion_looks_at_by_default(rook_workspace, rook_cli):
    # SPEC §6: calls and usage criteria count across all turns unless turn is
    # given; every other criterion looks at the last turn by default.
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/slow_mirror.py"},
            "capabilities": {"calls": True, "usage": True, "multi_turn": True},
        }
    )
    rook_workspace.scenario(
        {
            "id": "two",
            "turns": [json.dumps(SLOW_TURN), json.dumps(FAST_TURN)],
            "criteria": [c for c, _ in TURN_CASES],
        }
    )
    r = rook_cli("run", "--json")
    (s,) = r.report["scenarios"]
    got = [(c["status"], c["reason"]) for c in s["criteria"]]
    wrong = [
        (criterion, expected, got[i])
        for i, (criterion, expected) in enumerate(TURN_CASES)
        if got[i][0] != expected
    ]
    assert wrong == [], "\n".join(map(str, wrong))
    assert s["turns"][0]["seconds"] > 2.5
    claim_in_turn_1 = got[-1][1]  # issue_refund was called, in turn 2: never "never called"
    assert claim_in_turn_1.endswith("issue_refund was not called in turn 1"), claim_in_turn_1


PARTIAL_CASES = [
    # (criterion, expected): turn 1 reported its calls (a cancel_order), turn 2
    # reported none (no "calls" key). What turn 1 shows is evidence; what turn 2
    # may have done is not.
    ({"not_called": "cancel_order"}, "failed"),  # the forbidden call was seen
    ({"max_calls": 0}, "failed"),
    ({"called": "cancel_order"}, "passed"),
    ({"call_order": ["lookup_order", "cancel_order"]}, "passed"),
    ({"claim": {"says": "cancelled", "requires_call": "cancel_order"}}, "passed"),
    ({"not_called": "issue_refund"}, "unverifiable"),  # turn 2 may have called it
    ({"max_calls": 2}, "unverifiable"),
    ({"called": "issue_refund"}, "unverifiable"),
    ({"call_order": ["cancel_order", "lookup_order"]}, "unverifiable"),
    ({"claim": {"says": "cancelled", "requires_call": "issue_refund"}}, "unverifiable"),
    ({"not_called": "cancel_order", "turn": 2}, "unverifiable"),
]


def test_calls_seen_in_some_turns_are_evidence(rook_workspace, rook_cli):
    # SPEC §4/§5: a missing calls means "could not observe" -- for that turn. A
    # forbidden call another turn did report was observed: the criterion fails
    # (and the run exits 1) instead of hiding as unverifiable.
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/slow_mirror.py"},
            "capabilities": {"calls": True, "multi_turn": True},
        }
    )
    first = {
        "output": "Looking it up.",
        "conversation": "c1",
        "calls": [
            {"name": "lookup_order", "arguments": {"id": "ORD-1"}},
            {"name": "cancel_order", "arguments": {"id": "ORD-1"}},
        ],
    }
    second = {"output": "ORD-1 is cancelled.", "conversation": "c1"}
    for i, (criterion, _) in enumerate(PARTIAL_CASES):
        rook_workspace.scenario(
            {
                "id": f"p{i:02d}",
                "turns": [json.dumps(first), json.dumps(second)],
                "criteria": [criterion],
            }
        )
    r = rook_cli("run", "--json", "--concurrency", "4")
    assert r.exit_code == 1, r.stderr
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    wrong = [
        (criterion, expected, got[f"p{i:02d}"]["status"], got[f"p{i:02d}"]["reason"])
        for i, (criterion, expected) in enumerate(PARTIAL_CASES)
        if got[f"p{i:02d}"]["status"] != expected
    ]
    assert wrong == [], "\n".join(map(str, wrong))
    assert "the calls of turn 2 were not observed" in got["p05"]["reason"]


def test_a_token_count_one_turn_left_out_is_not_zero(rook_workspace, rook_cli):
    # max_tokens counts "the usage of all turns": turn 1 reported no output
    # count, so the output (and the total) of both turns was not observed and
    # cannot pass a limit; the input count both turns reported still can.
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/slow_mirror.py"},
            "capabilities": {"usage": True, "multi_turn": True},
        }
    )
    first = {"output": "one", "conversation": "c1", "usage": {"input": 100}}
    second = {"output": "two", "conversation": "c1", "usage": {"input": 1, "output": 1}}
    rook_workspace.scenario(
        {
            "id": "s",
            "turns": [json.dumps(first), json.dumps(second)],
            "criteria": [
                {"max_tokens": {"output": 10}},
                {"max_tokens": 150},
                {"max_tokens": {"input": 150}},
                {"max_tokens": {"input": 100}},
            ],
        }
    )
    r = rook_cli("run", "--json")
    (s,) = r.report["scenarios"]
    got = [(c["status"], c["reason"]) for c in s["criteria"]]
    assert [g[0] for g in got] == ["unverifiable", "unverifiable", "passed", "failed"], got


def _call(**arguments):
    return {"output": "done", "calls": [{"name": "set_flag", "arguments": arguments}]}


BOOL_ARGUMENT_CASES = [
    # (criterion, response, expected): JSON true is not the number 1, false not 0
    ({"called": {"name": "set_flag", "arguments": {"force": True}}}, _call(force=1), "failed"),
    ({"called": {"name": "set_flag", "arguments": {"force": 1}}}, _call(force=True), "failed"),
    ({"called": {"name": "set_flag", "arguments": {"dry_run": False}}}, _call(dry_run=0), "failed"),
    ({"not_called": {"name": "set_flag", "arguments": {"n": 0}}}, _call(n=False), "passed"),
    ({"called": {"name": "set_flag", "arguments": {"n": [1]}}}, _call(n=[True]), "failed"),
    ({"called": {"name": "set_flag", "arguments": {"force": True}}}, _call(force=True), "passed"),
    ({"called": {"name": "set_flag", "arguments": {"n": 1}}}, _call(n=1.0), "passed"),
    ({"called": {"name": "set_flag", "arguments": {"n": "1"}}}, _call(n=1), "passed"),
]


def test_a_boolean_argument_is_not_a_number(ws, rook_cli):
    # Python's True == 1 must not make a call with force: 1 show force: true.
    for i, (criterion, response, _) in enumerate(BOOL_ARGUMENT_CASES):
        ws.scenario({"id": f"b{i:02d}", "goal": json.dumps(response), "criteria": [criterion]})
    r = rook_cli("run", "--json", "--concurrency", "8")
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    wrong = [
        (criterion, expected, got[f"b{i:02d}"]["status"], got[f"b{i:02d}"]["reason"])
        for i, (criterion, _, expected) in enumerate(BOOL_ARGUMENT_CASES)
        if got[f"b{i:02d}"]["status"] != expected
    ]
    assert wrong == [], "\n".join(map(str, wrong))


def test_a_trace_call_with_true_is_not_the_turns_call_with_1(rook_workspace, rook_cli):
    # Collect's calls replace the turns' ones they repeat; a call with force: 1
    # that the turn reported is not "repeated" by the trace's force: true, so
    # it is still there for not_called.
    rook_workspace.script(
        "agent.sh",
        """#!/bin/bash
case "$1" in
  execute) cat >/dev/null
    echo '{"output": "ok", "calls": [{"name": "set_flag", "arguments": {"force": 1}}]}' ;;
  collect) echo '{"calls": [{"name": "set_flag", "arguments": {"force": true}}]}' ;;
esac
""",
    )
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"},
            "capabilities": {"calls": True},
        }
    )
    rook_workspace.scenario(
        {
            "id": "s",
            "goal": "go",
            "criteria": [
                {"not_called": {"name": "set_flag", "arguments": {"force": 1}}},
                {"max_calls": 1},
            ],
        }
    )
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert [c["status"] for c in s["criteria"]] == ["failed", "failed"], s["criteria"]


JSON_VALUE_CASES = [
    # (criterion, answer, expected): JSON true is not 1, nor false 0
    ({"json": {"path": "ok", "equals": 1}}, {"ok": True}, "failed"),
    ({"json": {"path": "ok", "equals": True}}, {"ok": 1}, "failed"),
    ({"json": {"path": "n", "equals": False}}, {"n": 0}, "failed"),
    ({"json": {"path": "n", "equals": [1]}}, {"n": [True]}, "failed"),
    ({"json": {"path": "n", "equals": {"a": 0}}}, {"n": {"a": False}}, "failed"),
    ({"json": {"path": "tags", "contains": 1}}, {"tags": [True]}, "failed"),
    ({"json": {"path": "tags", "contains": False}}, {"tags": [0]}, "failed"),
    ({"json": {"path": "ok", "equals": True}}, {"ok": True}, "passed"),
    ({"json": {"path": "n", "equals": 1}}, {"n": 1.0}, "passed"),
    ({"json": {"path": "tags", "contains": 1}}, {"tags": [2, 1]}, "passed"),
]


def test_json_true_is_not_1(ws, rook_cli):
    for i, (criterion, answer, _) in enumerate(JSON_VALUE_CASES):
        response = {"output": json.dumps(answer)}
        ws.scenario({"id": f"j{i:02d}", "goal": json.dumps(response), "criteria": [criterion]})
    r = rook_cli("run", "--json", "--concurrency", "8")
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    wrong = [
        (criterion, expected, got[f"j{i:02d}"]["status"], got[f"j{i:02d}"]["reason"])
        for i, (criterion, _, expected) in enumerate(JSON_VALUE_CASES)
        if got[f"j{i:02d}"]["status"] != expected
    ]
    assert wrong == [], "\n".join(map(str, wrong))


def test_an_answer_with_nan_or_infinity_is_not_json(ws, rook_cli):
    # "An answer that is not JSON fails": NaN, Infinity and 1e999 are not JSON,
    # though Python's json.loads reads them.
    answers = ["NaN", '{"a": NaN}', '{"a": -Infinity}', '{"a": 1e999}']
    for i, answer in enumerate(answers):
        ws.scenario(
            {
                "id": f"n{i}",
                "goal": json.dumps({"output": answer}),
                "criteria": [{"json": {"path": "b", "exists": False}}],
            }
        )
    r = rook_cli("run", "--json", "--concurrency", "4")
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    assert all(c["status"] == "failed" for c in got.values()), got
    assert all("not JSON" in c["reason"] for c in got.values()), got
    # saying why, as a hook's output does: it said only "output is not JSON"
    assert "not JSON (NaN is not a JSON value)" in got["n1"]["reason"], got
    assert "not JSON (1e999 is too large for a JSON number)" in got["n3"]["reason"], got


def test_a_token_limit_the_reported_counts_already_break_fails(rook_workspace, rook_cli):
    # Token counts are never negative: when the turns that reported a count
    # already exceed its limit, the limit is broken whatever the others used,
    # as a not_called that the observed calls already break fails. A limit on
    # a count nobody reported stays unverifiable, but never hides another
    # limit of the same criterion that the evidence shows broken.
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/slow_mirror.py"},
            "capabilities": {"usage": True, "multi_turn": True},
        }
    )
    first = {"output": "one", "conversation": "c1", "usage": {"input": 50, "output": 6}}
    second = {"output": "two", "conversation": "c1"}  # its usage was not observed
    rook_workspace.scenario(
        {
            "id": "two",
            "turns": [json.dumps(first), json.dumps(second)],
            "criteria": [
                {"max_tokens": {"input": 10}},
                {"max_tokens": 40},  # at least 56
                {"max_tokens": {"input": 100}},  # turn 2 may have used the rest
                {"max_tokens": 100},
            ],
        }
    )
    rook_workspace.scenario(
        {
            "id": "one",
            "goal": json.dumps({"output": "x", "usage": {"input": 50}}),
            "criteria": [
                {"max_tokens": {"input": 10, "output": 1}},  # no output count
                {"max_tokens": {"output": 1, "input": 10}},
                {"max_tokens": {"input": 100, "output": 1}},
            ],
        }
    )
    r = rook_cli("run", "--json")
    got = {s["id"]: [(c["status"], c["reason"]) for c in s["criteria"]] for s in r.report["scenarios"]}
    statuses = {sid: [g[0] for g in v] for sid, v in got.items()}
    assert statuses == {
        "two": ["failed", "failed", "unverifiable", "unverifiable"],
        "one": ["failed", "failed", "unverifiable"],
    }, got
    assert "input at least 50/10" in got["two"][0][1], got
    assert "input 50/10" in got["one"][1][1] and "no output count" in got["one"][1][1], got


DECOMPOSED = "Your cafe\u0301 order is cancelled"  # é as e + a combining acute accent
UNICODE_CASES = [
    # (criterion, answer, expected): the same text in another Unicode form is the same text
    ({"not_contains": "caf\u00e9"}, DECOMPOSED, "failed"),
    ({"contains": "CAF\u00c9"}, DECOMPOSED, "passed"),
    ({"contains": "cafe"}, "caf\u00e9", "failed"),  # é is not e
    ({"contains": "STRASSE"}, "die Stra\u00dfe", "passed"),
    ({"equals": "caf\u00e9"}, "cafe\u0301", "passed"),
    ({"not_equals": "caf\u00e9"}, "cafe\u0301", "failed"),
    # İ (dotted capital I) folds to i + a combining dot: "istanbul" was not found
    # in "İSTANBUL", so not_contains passed on it (claim.says, regex's folding, found it)
    ({"contains": "istanbul"}, "\u0130STANBUL", "passed"),
    ({"not_contains": "istanbul"}, "\u0130stanbul", "failed"),
    ({"contains": "\u0130zmir"}, "izmir", "passed"),
    ({"contains": "\u0131"}, "I", "failed"),  # dotless ı stays its own letter
    # a pattern sees the answer in one Unicode form too: not_matches passed on
    # an answer holding "café" written as e + U+0301
    ({"matches": "caf\u00e9 ouvert"}, "cafe\u0301 ouvert", "passed"),
    ({"not_matches": "caf\u00e9"}, "cafe\u0301", "failed"),
    ({"matches": "cafe\u0301$"}, "caf\u00e9", "passed"),
    # a pattern ignoring case folds case fully, as contains and claim.says do:
    # (?i)straße did not match STRASSE
    ({"matches": "(?i)stra\u00dfe"}, "die STRASSE", "passed"),
    ({"not_matches": "(?i)STRASSE"}, "die Stra\u00dfe", "failed"),
    ({"matches": "stra\u00dfe"}, "die STRASSE", "failed"),  # case counts without (?i)
    ({"matches": "(?i)istanbul"}, "\u0130STANBUL", "passed"),
    # regex's FULLCASE without a global (?i) broke a part (?i:...) that begins
    # with a letter folding to two (ß, ΐ): it no longer matched that letter itself
    ({"matches": "(?i:\u00df)"}, "Stra\u00dfe", "passed"),
    ({"matches": "^(?i:\u00dfa)x"}, "\u00dfax", "passed"),
    ({"not_matches": "(?i:\u00df)"}, "Stra\u00dfe", "failed"),
    ({"matches": "(?i:\u0390)"}, "\u0390", "passed"),
]


def test_canonically_equivalent_text_is_the_same_text(ws, rook_cli):
    for i, (criterion, answer, _) in enumerate(UNICODE_CASES):
        response = {"output": answer}
        ws.scenario({"id": f"u{i:02d}", "goal": json.dumps(response), "criteria": [criterion]})
    r = rook_cli("run", "--json", "--concurrency", "6")
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    wrong = [
        (criterion, expected, got[f"u{i:02d}"]["status"], got[f"u{i:02d}"]["reason"])
        for i, (criterion, _, expected) in enumerate(UNICODE_CASES)
        if got[f"u{i:02d}"]["status"] != expected
    ]
    assert wrong == [], "\n".join(map(str, wrong))


@pytest.mark.parametrize(
    "criterion, field",
    [
        ({"contains": ""}, "criteria.0.contains"),
        ({"not_contains": ""}, "criteria.0.not_contains"),
        ({"matches": ""}, "criteria.0.matches"),
        ({"not_matches": ""}, "criteria.0.not_matches"),
        ({"file": {"path": "a.txt", "contains": ""}}, "contains"),
        ({"file": {"path": "a.txt", "not_matches": ""}}, "not_matches"),
        # json: {contains: ""} passed on every text the path found
        ({"json": {"path": "order.status", "contains": ""}}, "criteria.0.json.contains"),
    ],
)
def test_an_empty_text_to_look_for_is_refused_before_the_run(ws, rook_cli, criterion, field):
    # contains: "" is found in every answer: it would pass verifying nothing
    ws.scenario({"id": "s", "goal": json.dumps(RESPONSE), "criteria": [criterion]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stdout
    assert field in r.stderr and "empty" in r.stderr and "s.yaml" in r.stderr, r.stderr


def test_a_pattern_that_backtracks_without_end_is_an_error_not_a_hung_run(ws, rook_cli):
    """``(a|aa)+$`` on a long run of ``a`` ending in ``b`` never finished with
    Python's ``re``: the whole run hung, hook timeouts and other scenarios too."""
    answer = json.dumps({"output": "a" * 60 + "b"})
    for sid, crit in [("m", {"matches": "(a|aa)+$"}), ("n", {"not_matches": "(a|aa)+$"}),
                      ("c", {"claim": {"says": "(a|aa)+$", "requires_call": "x"}})]:
        ws.scenario({"id": sid, "goal": answer, "criteria": [crit]})
    ws.scenario({"id": "fine", "goal": answer, "criteria": [{"matches": "a+b"}]})
    r = rook_cli("run", "--json", "-j", "1")
    assert r.statuses() == {"m": "error", "n": "error", "c": "error", "fine": "passed"}, r.stderr
    for sid in "mnc":
        reason = next(s for s in r.report["scenarios"] if s["id"] == sid)["criteria"][0]["reason"]
        assert "/(a|aa)+$/ took over 2 s on 61 characters and was stopped" in reason, reason


def test_two_criterion_types_in_one_item_are_named(ws, rook_cli):
    """{contains: a, matches: b} (a '-' left out between two criteria) was refused
    as 'needs exactly one criterion type (one of: <every installed type>)',
    naming neither of the two it holds."""
    ws.scenario({"id": "s", "goal": json.dumps(RESPONSE),
                 "criteria": [{"contains": "refund", "matches": "ships", "turn": 1}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert ("criteria.0: holds 2 criterion types (contains, matches), not exactly one; "
            "give each its own item of the list") in r.stderr, r.stderr
    assert not list(ws.runs_dir.iterdir())


def test_a_call_whose_arguments_are_not_json_is_no_evidence_either_way(ws, rook_cli):
    """Arguments cut short (``"{\\"path\\": \\"/etc\\""``) let ``not_called`` with
    arguments pass ("was not called") and ``called`` fail, though they may match."""
    cut = '{"path": "/etc"'
    answer = json.dumps({"output": "done", "calls": [{"name": "delete", "arguments": cut}]})
    ws.scenario({"id": "nc", "goal": answer, "criteria": [
        {"not_called": {"name": "delete", "arguments": {"path": "/etc"}}}]})
    ws.scenario({"id": "c", "goal": answer, "criteria": [
        {"called": {"name": "delete", "arguments": {"path": "/etc"}}}]})
    ws.scenario({"id": "bare", "goal": answer, "criteria": [{"not_called": "delete"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"nc": "unverifiable", "c": "unverifiable", "bare": "failed"}, r.stderr
    reason = next(s for s in r.report["scenarios"] if s["id"] == "nc")["criteria"][0]["reason"]
    assert "delete was called with arguments that are not a JSON object" in reason, reason
    # and the record says so, whatever the criteria (it was kept as text without a word)
    for s in r.report["scenarios"]:
        assert s["warnings"] == [
            "turn 1: calls[0] (delete) gave its arguments as a string that is not valid JSON "
            "('{\"path\": \"/etc\"'): Rook reads arguments as a JSON object, or a string "
            "holding one (as an API's function.arguments), so they count as not observed"
        ], s["warnings"]
    # arguments that are JSON in a string (as an API gives them) are read, never warned of
    whole = json.dumps({"output": "done", "calls": [
        {"name": "delete", "arguments": '{"path": "/tmp"}'},
        {"name": "delete", "arguments": {"path": "/var"}}, {"name": "delete"}]})
    ws.scenario({"id": "ok", "goal": whole, "criteria": [
        {"called": {"name": "delete", "arguments": {"path": "/tmp"}}}]})
    r = rook_cli("run", "--json", "--only", "ok")
    assert r.statuses() == {"ok": "passed"} and not r.report["scenarios"][0].get("warnings")
    # cut short in collect's call log too: named with the phase
    ws.script("collect.sh", "#!/bin/bash\ncat >/dev/null\n[ \"$1\" = collect ] && echo "
              "'{\"calls\": [{\"name\": \"a\", \"arguments\": \"[1,\"}, "
              "{\"name\": \"b\", \"arguments\": \"nope\"}]}'\n"
              "[ \"$1\" = execute ] && echo '{\"output\": \"done\"}'\nexit 0\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/collect.sh",
                                     "collect": "scripts/collect.sh"},
                "capabilities": {"calls": True}})
    ws.scenario({"id": "col", "goal": "g", "criteria": [{"called": {"name": "a",
                                                                     "arguments": {"x": 1}}}]})
    r = rook_cli("run", "--json", "--only", "col")
    (entry,) = r.report["scenarios"]
    assert entry["status"] == "unverifiable", entry
    assert entry["warnings"] == [
        "collect: calls[0] (a), calls[1] (b) gave their arguments as strings that are not "
        "valid JSON ('[1,', 'nope'): Rook reads arguments as a JSON object, or a string "
        "holding one (as an API's function.arguments), so they count as not observed"
    ], entry["warnings"]
    # collect's list repeating a turn's call (the same call: counted once) is one warning,
    # the turn's; a call of collect's own beside it is named for collect
    ws.script("both.sh", "#!/bin/bash\ncat >/dev/null\n"
              "[ \"$1\" = collect ] && echo '{\"calls\": [{\"name\": \"a\", \"arguments\": "
              "\"[1,\"}, {\"name\": \"b\", \"arguments\": \"nope\"}]}'\n"
              "[ \"$1\" = execute ] && echo '{\"output\": \"done\", \"calls\": "
              "[{\"name\": \"a\", \"arguments\": \"[1,\"}]}'\nexit 0\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/both.sh", "collect": "scripts/both.sh"},
                "capabilities": {"calls": True}})
    r = rook_cli("run", "--json", "--only", "col")
    (entry,) = r.report["scenarios"]
    assert entry["warnings"] == [
        "turn 1: calls[0] (a) gave its arguments as a string that is not valid JSON ('[1,'): "
        "Rook reads arguments as a JSON object, or a string holding one (as an API's "
        "function.arguments), so they count as not observed",
        "collect: calls[1] (b) gave its arguments as a string that is not valid JSON "
        "('nope'): Rook reads arguments as a JSON object, or a string holding one (as an "
        "API's function.arguments), so they count as not observed",
    ], entry["warnings"]


@pytest.mark.parametrize("args", [["/etc"], 5, True])
def test_a_call_whose_arguments_are_no_object_is_no_evidence_either_way(ws, rook_cli, args):
    """Positional arguments (``["/etc"]``) or a bare value have no names to match
    ``{path: /etc}`` against: not_called passed ("was not called") and called
    failed, while arguments that are text not JSON were unverifiable."""
    answer = json.dumps({"output": "done", "calls": [{"name": "delete", "arguments": args}]})
    ws.scenario({"id": "nc", "goal": answer, "criteria": [
        {"not_called": {"name": "delete", "arguments": {"path": "/etc"}}}]})
    ws.scenario({"id": "c", "goal": answer, "criteria": [
        {"called": {"name": "delete", "arguments": {"path": "/etc"}}}]})
    ws.scenario({"id": "bare", "goal": answer, "criteria": [{"called": "delete"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"nc": "unverifiable", "c": "unverifiable", "bare": "passed"}, r.stderr
    reason = next(s for s in r.report["scenarios"] if s["id"] == "c")["criteria"][0]["reason"]
    assert "delete was called with arguments that are not a JSON object" in reason, reason
    assert json.dumps(args) in reason, reason


def test_what_a_pattern_matched_is_shown_cut_as_the_answer_is(ws, rook_cli):
    """matches and not_matches quoted the whole match: ``(?s).+`` on a long answer
    put thousands of characters in the reason (cut at Rook's reason limit, the
    whole kept again in the evidence), where a miss shows the answer cut short."""
    answer = json.dumps({"output": "word " * 2000})
    ws.scenario({"id": "m", "goal": answer, "criteria": [{"matches": "(?s)w.+"}]})
    ws.scenario({"id": "n", "goal": answer, "criteria": [{"not_matches": "(?s)w.+"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"m": "passed", "n": "failed"}, r.stderr
    for s in r.report["scenarios"]:
        c = s["criteria"][0]
        assert c["reason"].startswith("/(?s)w.+/ matched 'word word"), c["reason"][:200]
        assert len(c["reason"]) < 300 and "reason" not in c.get("evidence", {}), c["reason"][:300]


def test_an_answer_cut_in_a_reason_says_how_much_was_left_out(ws, rook_cli):
    """A failed criterion quoted a long answer cut to 120 characters ending in a
    bare '...', as an answer that itself ends in '...' would read: nothing
    said it was cut, nor by how much. It ends '... [N more chars]', as the
    preview of a hook's output that is not JSON does; the turn keeps it whole."""
    answer = "x" * 1000
    ws.scenario({"id": "c", "goal": json.dumps({"output": answer}),
                 "criteria": [{"contains": "nope"}]})
    ws.scenario({"id": "j", "goal": json.dumps({"output": json.dumps({"a": answer})}),
                 "criteria": [{"json": {"path": "a", "equals": "b"}}]})
    r = rook_cli("run", "--json")
    got = {s["id"]: s for s in r.report["scenarios"]}
    assert got["c"]["criteria"][0]["reason"] == (
        "did not find 'nope' in '" + "x" * 120 + "... [880 more chars]'")
    assert got["j"]["criteria"][0]["reason"] == (
        'a is "' + "x" * 119 + "... [882 more chars], expected \"b\"")
    assert got["c"]["turns"][0]["output"] == answer


def test_a_claim_whose_call_has_unreadable_arguments_is_unverifiable(ws, rook_cli):
    """claim said "cancel with {...} was never called" (failed) for a call of the
    tool whose arguments were cut short, which called finds unverifiable."""
    answer = json.dumps({"output": "Order cancelled.",
                         "calls": [{"name": "cancel", "arguments": '{"id": "ORD-1"'}]})
    spec = {"name": "cancel", "arguments": {"id": "ORD-1"}}
    ws.scenario({"id": "claim", "goal": answer, "criteria": [
        {"claim": {"says": "cancelled", "requires_call": spec}}]})
    ws.scenario({"id": "called", "goal": answer, "criteria": [{"called": spec}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"claim": "unverifiable", "called": "unverifiable"}, r.stderr
    reason = next(s for s in r.report["scenarios"] if s["id"] == "claim")["criteria"][0]["reason"]
    assert "cancel was called with arguments that are not a JSON object" in reason, reason


def test_call_counts_in_reasons_are_never_1_calls(ws, rook_cli):
    """max_calls and not_called said "1 calls (max 0)", "1 calls observed" and
    "at least 1 calls": Rook's messages count one call as one call."""
    one = {"output": "done", "conversation": "c-1", "calls": [{"name": "lookup"}]}
    blind = {"output": "done", "conversation": "c-1"}
    ws.scenario({"id": "max", "goal": json.dumps(one), "criteria": [{"max_calls": 0}]})
    ws.scenario({"id": "not", "goal": json.dumps(one), "criteria": [{"not_called": "x"}]})
    ws.scenario({"id": "part", "turns": [json.dumps(one), json.dumps(blind)],
                 "criteria": [{"max_calls": 0}]})
    ws.profile({"id": "p", "hooks": {"execute": "scripts/mirror.sh"},
                "capabilities": {"calls": True, "usage": True, "multi_turn": True}})
    r = rook_cli("run", "--json")
    reasons = {s["id"]: s["criteria"][0]["reason"] for s in r.report["scenarios"]}
    assert reasons["max"] == "1 call (max 0)", reasons
    assert reasons["not"] == "x was not called (1 call observed)", reasons
    assert reasons["part"].startswith("at least 1 call (max 0;"), reasons
    assert "1 calls" not in json.dumps(r.report), reasons



def test_a_calls_reason_shows_the_arguments_numbers_as_the_scenario_wrote_them(ws, rook_cli):
    """called: {arguments: {amount: 19.90, code: 007}} is matched as written, but its
    reason said 'issue_refund with {"amount": 19.9, "code": 7} was called'."""
    call = {"output": "done", "conversation": "c-1",
            "calls": [{"name": "issue_refund", "arguments": {"amount": "19.90", "code": "007"}}]}
    ws.scenario(f"id: s\ngoal: '{json.dumps(call)}'\ncriteria:\n"
                "  - called: {name: issue_refund, arguments: {amount: 19.90, code: 007}}\n"
                "  - not_called: {name: issue_refund, arguments: {amount: 1.0e+1}}\n", name="s")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/mirror.sh"},
                "capabilities": {"calls": True}})
    r = rook_cli("run", "--json")
    reasons = [c["reason"] for c in r.report["scenarios"][0]["criteria"]]
    assert reasons == ['issue_refund with {"amount": 19.90, "code": 007} was called (1x)',
                       'issue_refund with {"amount": 1.0e+1} was not called (1 call observed)'], \
        reasons

def test_a_date_written_in_yaml_is_the_text_written(ws, rook_cli):
    """YAML reads 2024-01-01 as a date, which no JSON answer holds: json equals
    failed every run ("expected datetime.date(2024, 1, 1)") and called raised
    "Object of type date is not JSON serializable"."""
    answer = {
        "output": json.dumps({"day": "2024-01-01", "at": "2024-01-01T10:00:00Z"}),
        "calls": [{"name": "book", "arguments": {"day": "2024-01-01"}}],
    }
    ws.scenario(f"""
        id: s
        goal: '{json.dumps(answer)}'
        criteria:
          - json: {{path: day, equals: 2024-01-01}}
          - json: {{path: at, equals: 2024-01-01T10:00:00Z}}
          - called: {{name: book, arguments: {{day: 2024-01-01}}}}
          - not_called: {{name: book, arguments: {{day: 2024-01-02}}}}
    """)
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert [status for status, _ in got] == ["passed"] * 4, got


def test_a_number_written_as_a_key_in_yaml_is_the_text_written(ws, rook_cli):
    """YAML reads the key of {200: ok} as a number, and a JSON object's keys are
    text: json equals failed with 'codes is {"200": "ok"}, expected {"200": "ok"}'
    and called never matched arguments {1: first}."""
    answer = {
        "output": json.dumps({"codes": {"200": "ok", "404": "missing"}, "list": [{"7": "x"}]}),
        "calls": [{"name": "pin", "arguments": {"1": "first", "2": "second"}}],
    }
    ws.scenario(f"""
        id: s
        goal: '{json.dumps(answer)}'
        criteria:
          - json: {{path: codes, equals: {{200: ok, 404: missing}}}}
          - json: {{path: list, contains: {{7: x}}}}
          - called: {{name: pin, arguments: {{1: first}}}}
          - not_called: {{name: pin, arguments: {{2: third}}}}
          - claim: {{says: codes, requires_call: {{name: pin, arguments: {{2: second}}}}}}
    """)
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert [status for status, _ in got] == ["passed"] * 5, got


def test_a_time_of_day_written_in_yaml_is_the_text_written(ws, rook_cli):
    """YAML 1.1 reads 12:30 as the base-60 number 750: contains: 12:30 looked
    for '750' and failed on an answer saying 12:30."""
    answer = {"output": "The meeting is at 12:30 in room 1:05, for 90 min.", "calls": []}
    ws.scenario(f"""
        id: s
        goal: '{json.dumps(answer)}'
        criteria:
          - contains: 12:30
          - equals: The meeting is at 12:30 in room 1:05, for 90 min.
          - contains: 90
          - not_contains: 750
    """)
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert [status for status, _ in got] == ["passed"] * 4, got


def test_a_number_written_in_yaml_is_compared_as_written(ws, rook_cli):
    """criteria.md and scenarios.md: a number is taken as written where a
    criterion compares text. YAML reads 19.90 as 19.9, 007 as 7, 0x1F as 31 and
    1_000 as 1000: equals: 19.90 failed on the answer 19.90, and not_contains:
    0x1F looked for '31'."""
    answer = {"output": "19.90", "calls": []}
    ws.scenario(f"""
        id: s
        goal: '{json.dumps(answer)}'
        criteria:
          - equals: 19.90
          - not_equals: 19.9
          - not_contains: 0x1F
          - file: {{path: codes.txt, contains: 007}}
          - file: {{path: codes.txt, not_contains: 1000}}
          - file: {{path: codes.txt, contains: 1_000}}
    """)
    (ws.root / "codes.txt").write_text("code 007, 1_000 of them, 31 left\n")
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert [status for status, _ in got] == ["passed"] * 6, got


def test_a_cost_limit_the_reported_costs_already_break_fails(rook_workspace, rook_cli):
    """As for max_tokens: a cost is never negative, so turns that reported $5
    break max_cost: 1 whatever the others cost. It was unverifiable, saying
    "the agent's usage has no cost", though turn 1 reported one."""
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/slow_mirror.py"},
                            "capabilities": {"usage": True, "multi_turn": True}})
    first = {"output": "one", "conversation": "c1", "usage": {"input": 9, "cost_usd": 5}}
    second = {"output": "two", "conversation": "c1"}  # its usage was not observed
    rook_workspace.scenario({"id": "two", "turns": [json.dumps(first), json.dumps(second)],
                             "criteria": [{"max_cost": 1}, {"max_cost": 10}]})
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert [status for status, _ in got] == ["failed", "unverifiable"], got
    assert "cost at least $5.0000 (max $1.0000" in got[0][1], got
    assert "turn 2 reported no cost" in got[1][1] and "(s)" not in got[0][1] + got[1][1], got


def test_a_cost_under_another_name_is_named_never_silently_missed(rook_workspace, rook_cli):
    """A script hook reports its cost as usage.cost_usd. One that gave usage.costUsd
    (a Ruhroh wrapper's name) was told "the agent's usage has no cost (costUsd)":
    the very name it had used. The reason names the field Rook reads, and the one
    the hook gave instead."""
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/slow_mirror.py"}})
    answer = {"output": "one", "usage": {"input": 9, "costUsd": 5}}
    rook_workspace.scenario({"id": "s", "goal": json.dumps(answer), "criteria": [{"max_cost": 1}]})
    r = rook_cli("run", "--json")
    (c,) = r.report["scenarios"][0]["criteria"]
    assert c["status"] == "unverifiable", c  # never a pass
    assert "usage.cost_usd" in c["reason"] and "usage.costUsd" in c["reason"], c
    # rook plugins describes max_cost by the field Rook reads (it said "usage costUsd")
    listed = json.loads(rook_cli("plugins", "--json").stdout)["descriptions"]["criteria"]
    assert "usage.cost_usd" in listed["max_cost"], listed["max_cost"]


def test_a_token_count_some_turns_left_out_names_those_turns(rook_workspace, rook_cli):
    """max_tokens said "usage has no input count" when turn 1 reported 9 and
    turn 2 none, as if no turn had; max_cost names the turns that reported none."""
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/slow_mirror.py"},
                            "capabilities": {"usage": True, "multi_turn": True}})
    first = {"output": "one", "conversation": "c1", "usage": {"input": 9, "output": 3}}
    second = {"output": "two", "conversation": "c1"}  # its usage was not observed
    rook_workspace.scenario({"id": "two", "turns": [json.dumps(first), json.dumps(second)],
                             "criteria": [{"max_tokens": {"input": 100}}, {"max_tokens": 100}]})
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert got == [
        ("unverifiable", "turn 2 reported no input count (the others: 9)"),
        ("unverifiable", "turn 2 reported no total count (the others: 12)"),
    ], got


def test_a_claim_names_the_turns_whose_calls_were_not_observed(rook_workspace, rook_cli):
    """claim said "calls were not observed" though turn 1 reported its calls;
    called and call_order name the turns whose calls were not observed."""
    rook_workspace.script("slow_mirror.py", SLOW_MIRROR)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/slow_mirror.py"},
                            "capabilities": {"calls": True, "multi_turn": True}})
    first = {"output": "looking", "conversation": "c1", "calls": [{"name": "lookup"}]}
    second = {"output": "Refund issued.", "conversation": "c1"}  # its calls not observed
    rook_workspace.scenario({"id": "two", "turns": [json.dumps(first), json.dumps(second)],
                             "criteria": [{"claim": {"says": "refund", "requires_call": "refund"}}]})
    r = rook_cli("run", "--json")
    (c,) = r.report["scenarios"][0]["criteria"]
    assert (c["status"], c["reason"]) == (
        "unverifiable", "the answer claims it (turn 2) but the calls of turn 2 were not observed"
    ), c


def test_a_criterion_labelled_with_a_number_is_reported_with_that_label(ws, rook_cli):
    """A label written as a number (`id: 5`, as a public CLI file's
    acceptance criterion `id: 1` gives) was accepted, the run ran, and then its
    own report.json was refused ("'id' is a whole number, not what Rook writes
    there"): exit 1 with no report. The label is the text written."""
    ws.scenario("""
        id: s
        goal: '{"output": "hello", "calls": []}'
        criteria:
          - contains: hello
            id: 5
        expectation:
          mcp:
            - {id: 7, server: orders, tool: cancel_order, expect: not_called}
    """)
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    (entry,) = r.report["scenarios"]
    assert [c.get("id") for c in entry["criteria"]] == ["5", "7"]
    shown = rook_cli("runs", "show", "latest")  # the run's own report read back
    assert shown.exit_code == 0 and "s           PASS      2/2" in shown.stdout, shown.stderr
    shown = rook_cli("runs", "show", "latest", "--json")
    (entry,) = shown.report["scenarios"]
    assert [c.get("id") for c in entry["criteria"]] == ["5", "7"], shown.stderr


def test_a_json_criterion_shows_json_values_and_cuts_a_large_one(ws, rook_cli):
    """The reason showed Python's spelling of what the path found ("n is None,
    expected None", "t is True, expected 1") and all of it: a path naming the
    whole answer copied every byte of it into the reason, the record and report."""
    big = {"items": [{"sku": f"SKU-{i:05d}", "note": "x" * 40} for i in range(3000)]}
    answer = {"output": json.dumps({"n": None, "t": True, "s": "open", **big})}
    ws.scenario({"id": "s", "goal": json.dumps(answer), "criteria": [
        {"json": {"path": "n", "equals": None}},
        {"json": {"path": "t", "equals": 1}},
        {"json": {"path": "s", "contains": "OP"}},
        {"json": {"path": "items", "exists": True}},
    ]})
    r = rook_cli("run", "--json")
    reasons = [c["reason"] for c in r.report["scenarios"][0]["criteria"]]
    assert reasons[0] == "n is null, expected null", reasons
    assert reasons[1] == "t is true, expected 1", reasons
    assert reasons[2] == 's is "open"; contains "OP": true', reasons
    assert reasons[3].startswith('items is [{"sku": "SKU-00000"') and len(reasons[3]) < 200, reasons


def test_a_json_function_the_answer_does_not_fit_fails_the_criterion(ws, rook_cli):
    """A function given a value of the wrong type by the answer (length of a number,
    sort_by on nulls) made the criterion an error, "criterion json (criteria
    (rook-harness)) raised JMESPathTypeError", as if Rook had a bug: the scenario
    was undecided. The answer does not meet the criterion: it fails, saying why."""
    answer = {"output": json.dumps({"n": 5, "items": [{"b": None}]})}
    ws.scenario({"id": "s", "goal": json.dumps(answer), "criteria": [
        {"json": {"path": "length(n)", "equals": 1}},
        {"json": {"path": "sort_by(items, &b)"}},
    ]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    (entry,) = r.report["scenarios"]
    got = [(c["status"], c["reason"]) for c in entry["criteria"]]
    assert [status for status, _ in got] == ["failed", "failed"], got
    assert got[0][1].startswith("length(n): In function length(), invalid type for value: 5"), got
    assert entry["status"] == "failed" and "raised" not in entry["reason"], entry


def test_a_call_criterion_names_some_calls_not_every_one(ws, rook_cli):
    """`called` and `call_order` listed every call made in their reason: an agent
    that made 5,000 calls gave each such criterion a 64 KB reason (and its
    scenario the same reason), in the record, every report and the terminal."""
    calls = [{"name": f"tool_{i}", "arguments": {"i": i}} for i in range(5000)]
    ws.scenario({"id": "s", "goal": json.dumps({"output": "x", "calls": calls}), "criteria": [
        {"called": "zzz"},
        {"call_order": ["zzz", "tool_1"]},
        {"called": {"name": "tool_3", "arguments": {"i": 4}}},
    ]})
    r = rook_cli("run", "--json")
    (entry,) = r.report["scenarios"]
    reasons = [c["reason"] for c in entry["criteria"]]
    # the names as JSON, as the arguments are shown: never Python's ['a', 'b']
    assert reasons[0].startswith('zzz was not called; calls: ["tool_0", "tool_1", '), reasons[0]
    assert reasons[1].startswith('expected order ["zzz", "tool_1"]; calls were ["tool_0", ')
    assert all(r.endswith("4980 more]") and len(r) < 500 for r in reasons), reasons
    assert len(entry["reason"]) < 600, entry["reason"]


@pytest.mark.parametrize("criterion, field", [
    ("json: {path: a, equals: .nan}", "criteria.0.json.equals"),
    ("json: {path: a, contains: -.inf}", "criteria.0.json.contains"),
    ("called: {name: a, arguments: {x: [1, .inf]}}", "criteria.0.called.arguments.x.1"),
    ("not_called: {name: a, arguments: {x: .NaN}}", "criteria.0.not_called.arguments.x"),
])
def test_a_value_json_cannot_hold_is_refused_before_the_run(ws, rook_cli, criterion, field):
    """YAML's .nan and .inf are no JSON value, so no answer or call ever holds
    one: the check could never be met, and the scenario record kept the bare
    NaN, which no strict JSON reader (jq, JSON.parse) can read."""
    path = ws.scenario(f"id: s\ngoal: '{{}}'\ncriteria:\n  - {criterion}\n")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert str(path) in r.stderr and f"{field}: " in r.stderr, r.stderr
    assert "not a JSON value" in r.stderr, r.stderr
    assert not list(ws.runs_dir.glob("*/"))


@pytest.mark.parametrize("criterion, field", [
    ({"not_called": {"name": ""}}, "criteria.0.not_called.name"),
    ({"called": {"name": "", "arguments": {"id": "ORD-1"}}}, "criteria.0.called.name"),
    ({"claim": {"says": "refund", "requires_call": {"name": ""}}},
     "criteria.0.claim.requires_call.name"),
    # a blank name was taken: no call is named " " either
    ({"called": {"name": "  "}}, "criteria.0.called.name"),
    ({"not_called": " "}, "criteria.0.not_called"),
    ({"claim": {"says": "refund", "requires_call": " "}}, "criteria.0.claim.requires_call"),
    ({"call_order": ["lookup_order", ""]}, "criteria.0.call_order.1"),
    ({"call_order": [" "]}, "criteria.0.call_order.0"),
    # nor "\u200b", a zero-width space pasted from a web page: it shows nothing either
    ({"called": {"name": "\u200b"}}, "criteria.0.called.name"),
    ({"not_called": "\u200b "}, "criteria.0.not_called"),
    ({"call_order": ["lookup_order", "\u200b"]}, "criteria.0.call_order.1"),
])
def test_a_call_with_an_empty_name_is_refused_like_an_empty_tool_name(
    ws, rook_cli, criterion, field
):
    # not_called: "" was refused, but not_called: {name: ""} passed every run:
    # no call is named "", so it verified nothing
    ws.scenario({"id": "s", "goal": json.dumps(RESPONSE), "criteria": [criterion]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout
    assert f"{field}: must be a tool name (a text, not empty)" in r.stderr, r.stderr
    assert "s.yaml" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_key_holding_null_exists_and_a_missing_key_does_not(ws, rook_cli):
    # exists asks whether the path is there: {"n": null} has n (its value is
    # null), {} has not. JMESPath gives null for both, so a plain path is
    # walked to tell them apart.
    cases = [
        ({"n": None}, {"path": "n", "exists": True}, "passed"),
        ({"n": None}, {"path": "n"}, "passed"),
        ({"n": None}, {"path": "n", "exists": False}, "failed"),
        ({}, {"path": "n", "exists": True}, "failed"),
        ({}, {"path": "n", "exists": False}, "passed"),
        ({"a": {"b": [1, None]}}, {"path": "a.b[1]", "exists": True}, "passed"),
        ({"a": {"b": [1, None]}}, {"path": "a.b[-1]"}, "passed"),
        ({"a": {"b": [1, None]}}, {"path": "a.b[2]", "exists": True}, "failed"),
        ({"a": {"b": [1, None]}}, {"path": "a.c", "exists": False}, "passed"),
        ({"a": None}, {"path": "a.b", "exists": False}, "passed"),
        ({"a": {"b": None}}, {"path": "a | b"}, "passed"),
        ({"a": [{"b": None}]}, {"path": "a[0].b", "exists": True}, "passed"),
        # a filter or function piped into plain keys: the keys after the pipe are
        # walked too ("a[?id==`1`] | [0].b is missing" though b is there, as null)
        ({"a": [{"id": 1, "b": None}]}, {"path": "a[?id==`1`] | [0].b"}, "passed"),
        ({"a": [{"id": 1, "b": None}]}, {"path": "a[?id==`2`] | [0].b"}, "failed"),
        ({"a": [{"id": 1}]}, {"path": "a[?id==`1`] | [0].b", "exists": False}, "passed"),
        ({"a": [{"b": None}]}, {"path": "reverse(a) | [0].b"}, "passed"),
        ([None], {"path": "[0]"}, "passed"),
        ({"a": [None]}, {"path": "a | [0]"}, "passed"),
    ]
    got = verdicts(ws, rook_cli, [(json.dumps(a), {"json": c}) for a, c, _ in cases])
    wrong = [(*case, g) for case, g in zip(cases, got, strict=True) if g["status"] != case[2]]
    assert wrong == [], "\n".join(map(str, wrong))


def test_a_max_seconds_limit_is_shown_as_written(ws, rook_cli):
    """max_seconds: 0.000001 read "max 1e-06 s", and 1234567 "max 1.23457e+06 s"
    (rounded: another limit than the one written)."""
    answer = {"output": "done", "conversation": "c-1"}
    ws.scenario({"id": "tiny", "goal": json.dumps(answer), "criteria": [{"max_seconds": 0.000001}]})
    ws.scenario({"id": "big", "goal": json.dumps(answer), "criteria": [{"max_seconds": 1234567}]})
    ws.scenario({"id": "half", "goal": json.dumps(answer), "criteria": [{"max_seconds": 2.5}]})
    ws.profile({"id": "p", "hooks": {"execute": "scripts/mirror.sh"},
                "capabilities": {"calls": True, "usage": True, "multi_turn": True}})
    r = rook_cli("run", "--json")
    reasons = {s["id"]: s["criteria"][0]["reason"] for s in r.report["scenarios"]}
    assert reasons["tiny"].endswith(" s (max 0.000001 s)"), reasons
    assert reasons["big"].endswith(" s (max 1234567 s)"), reasons
    assert reasons["half"].endswith(" s (max 2.5 s)"), reasons


def test_a_missing_key_never_equals_null(ws, rook_cli):
    """json: {path: n, equals: null} passed on {} ("n is null, expected null"):
    JMESPath answers null for a key that is not there, so an answer that left
    the key out passed a check that it holds null. A missing plain path fails,
    and the reason says it is missing, for any expected value."""
    cases = [
        ({"n": None}, {"path": "n", "equals": None}, "passed", "n is null, expected null"),
        ({}, {"path": "n", "equals": None}, "failed", "n is missing, expected null"),
        ({"a": {}}, {"path": "a.n", "equals": None}, "failed", "a.n is missing"),
        ({"a": [None]}, {"path": "a[0]", "equals": None}, "passed", "a[0] is null"),
        ({"a": [None]}, {"path": "a[1]", "equals": None}, "failed", "a[1] is missing"),
        ({}, {"path": "n", "equals": 1}, "failed", "n is missing, expected 1"),
        # a projection's or function's null is its result: compared as before
        ({"a": [{"b": 1}]}, {"path": "max(a[*].c)", "equals": None}, "passed", "is null"),
    ]
    got = verdicts(ws, rook_cli, [(json.dumps(a), {"json": c}) for a, c, _, _ in cases])
    wrong = [
        (*case, g)
        for case, g in zip(cases, got, strict=True)
        if g["status"] != case[2] or case[3] not in g["reason"]
    ]
    assert wrong == [], "\n".join(map(str, wrong))


def test_a_json_value_looked_for_in_a_text_is_its_json_text(ws, rook_cli):
    """json: {path: a, contains: null} passed on {"a": "None left"}, and
    contains: {k: 1} on "x {'k': 1}": a value that is no text was looked for
    in a text as Python writes it (None, True, {'k': 1}), never as JSON does."""
    cases = [
        ("None left", None, "failed"),
        ("null left", None, "passed"),
        ("x {'k': 1}", {"k": 1}, "failed"),
        ('x {"k": 1}', {"k": 1}, "passed"),
        ("x ['a']", ["a"], "failed"),
        ("order 5", 5, "passed"),
    ]
    got = verdicts(
        ws,
        rook_cli,
        [(json.dumps({"a": t}), {"json": {"path": "a", "contains": n}}) for t, n, _ in cases],
    )
    wrong = [(*case, g) for case, g in zip(cases, got, strict=True) if g["status"] != case[2]]
    assert wrong == [], "\n".join(map(str, wrong))


def test_an_argument_number_written_in_yaml_matches_its_text_as_written(ws, rook_cli):
    """arguments: {code: 007} did not match a call with {"code": "007"}, nor
    {amount: 19.90} one with "19.90": YAML reads them as 7 and 19.9, and a number
    was matched with an argument's text as Python writes it ('7', '19.9'). As
    "42" matches 42, the number matches its text as written (and as a number)."""
    calls = [{"name": "pay", "arguments": {"code": "007", "amount": "19.90", "n": 19.9}}]
    answer = {"output": "ok", "calls": calls}
    ws.scenario(f"""
        id: s
        goal: '{json.dumps(answer)}'
        criteria:
          - called: {{name: pay, arguments: {{code: 007}}}}
          - called: {{name: pay, arguments: {{amount: 19.90}}}}
          - called: {{name: pay, arguments: {{n: 19.90}}}}
          - not_called: {{name: pay, arguments: {{code: 7}}}}
    """)
    r = rook_cli("run", "--json")
    got = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert [status for status, _ in got] == ["passed"] * 4, got


def test_a_claim_is_seen_ignoring_case_and_unicode_form_as_contains_sees_text(ws, rook_cli):
    """claim.says ignores case, but only by simple case folding and in the
    answer's own Unicode form: an answer claiming "Refund issued for STRAßE"
    made no claim of /issued for strasse/, nor "rembourse" + U+0301 one of
    /remboursé/, and the claim passed without the call. It is seen as contains
    sees text: Unicode's full case folding (ß is SS), one Unicode form."""
    cases = [
        ("Refund issued for STRAßE 1", "refund issued for strasse"),
        ("Refund issued for strasse 1", "issued for STRAßE"),
        ("Commande rembourse\u0301e", "commande remboursée"),
        ("Commande remboursée", "commande rembourse\u0301e"),
    ]
    for i, (answer, says) in enumerate(cases):
        ws.scenario(
            {
                "id": f"x{i:02d}",
                "goal": json.dumps({"output": answer, "calls": []}),
                "criteria": [{"claim": {"says": says, "requires_call": "issue_refund"}}],
            }
        )
    r = rook_cli("run", "--json", "--concurrency", "4")
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    wrong = [
        (answer, says, got[f"x{i:02d}"])
        for i, (answer, says) in enumerate(cases)
        if got[f"x{i:02d}"]["status"] != "failed"
        or "issue_refund was never called" not in got[f"x{i:02d}"]["reason"]
    ]
    assert wrong == [], "\n".join(map(str, wrong))


def test_a_reported_total_below_its_parts_is_never_what_a_budget_passes_on(ws, rook_cli):
    # usage {input: 60, output: 60, total: 10} passed max_tokens: {total: 100}: counts are
    # never negative, so the total is at least input + output (as across turns already)
    response = {"output": "ok", "usage": {"input": 60, "output": 60, "total": 10}}
    for i, limit in enumerate((100, 200)):
        ws.scenario({"id": f"t{i}", "goal": json.dumps(response),
                     "criteria": [{"max_tokens": {"total": limit}}]})
    got = {s["id"]: s["criteria"][0] for s in rook_cli("run", "--json").report["scenarios"]}
    assert got["t0"]["status"] == "failed", got
    assert "total 120/100" in got["t0"]["reason"], got
    assert "the agent reported 10, less than input + output" in got["t0"]["reason"], got
    assert got["t1"]["status"] == "passed", got


def test_a_call_criterion_of_one_turn_says_when_only_collect_reported_calls(rook_workspace, rook_cli):
    # execute gives no call log, collect gives the scenario's: 'called: X, turn: 1' said
    # "the agent's evidence shows no call log (calls were not observed)", though it did
    rook_workspace.script("h.sh", """#!/bin/bash
case "$1" in
  execute) cat >/dev/null; echo '{"output": "done"}' ;;
  collect) echo '{"calls": [{"name": "lookup", "arguments": {}}]}' ;;
esac
exit 0
""")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": "scripts/h.sh"},
                            "capabilities": {"calls": True}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"called": "lookup", "turn": 1}, {"called": "lookup"}]})
    one, every = rook_cli("run", "--json").report["scenarios"][0]["criteria"]
    assert every["status"] == "passed", every  # across the turns, collect's log counts
    assert one["status"] == "unverifiable", one
    assert "only collect reported calls" in one["reason"], one
    assert "leave turn out" in one["reason"], one


def test_json_equals_a_number_yaml_read_as_text_says_so(ws, rook_cli):
    # json: {path: n, equals: 1e3} failed against 1000 with 'expected "1e3"': YAML 1.1
    # reads 1e3 as text, which the reason did not say
    got = verdicts(ws, rook_cli, [
        ('{"n": 1000}', {"json": {"path": "n", "equals": "1e3"}}),
        ('{"n": "1e3"}', {"json": {"path": "n", "equals": "1e3"}}),
        ('{"n": 7}', {"json": {"path": "n", "equals": "1e3"}}),
    ])
    assert got[0]["status"] == "failed", got
    assert "YAML reads 1e3 as text; write 1000 or 1.0e+3" in got[0]["reason"], got
    assert got[1]["status"] == "passed", got  # the text it is
    assert got[2]["status"] == "failed" and "YAML" not in got[2]["reason"], got
