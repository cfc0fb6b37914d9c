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
