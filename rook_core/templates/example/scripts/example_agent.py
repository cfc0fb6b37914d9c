"""An example agent for Rook: a tiny, deterministic order desk.

Rook runs this file once per phase with the phase name as its only argument
(``example_agent.py open``, ``example_agent.py execute`` ...). It is not
executable, so Rook starts it with the Python that runs Rook (by its ``.py``
extension). In ``execute`` the turn's text arrives on standard input and the
answer goes to standard output as one JSON object:

    {"output": "...", "conversation": "...", "usage": {...}, "calls": [...]}

To test your own agent, replace :func:`answer` with a call to it (an HTTP
request, an SDK call, a command line) and return what it did.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

ORDERS = {
    "ORD-1": "shipped on Monday and arrives Wednesday",
    "ORD-2": "being packed",
    "ORD-7": "open",
}


def state_file() -> Path:
    # ROOK_STATE_DIR survives every phase of one scenario run: keep the conversation there.
    return Path(os.environ["ROOK_STATE_DIR"]) / "conversation.json"


def answer(text: str, history: list[str]) -> tuple[str, list[dict[str, object]]]:
    """The agent: the answer to one turn and the tool calls it made."""
    ids = re.findall(r"ORD-\d+", text) or re.findall(r"ORD-\d+", " ".join(history))
    lowered = text.lower()
    if not ids:
        return "Hello! I am the example order desk. Give me an order number like ORD-1.", []
    order = ids[-1]
    if "cancel" in lowered and "yes" in lowered:
        return f"I have cancelled {order}.", [{"name": "cancel_order", "arguments": {"id": order}}]
    if "cancel" in lowered:
        return f"Do you really want to cancel {order}? Say 'yes, cancel' to confirm.", []
    calls: list[dict[str, object]] = [{"name": "lookup_order", "arguments": {"id": order}}]
    if order not in ORDERS:
        return f"I could not find {order}.", calls
    return f"Order {order} is {ORDERS[order]}.", calls


def main(phase: str) -> None:
    if phase == "open":
        handle = "conv-" + os.environ["ROOK_SESSION"][-8:]
        state_file().write_text(json.dumps({"handle": handle, "history": []}))
        print(json.dumps({"conversation": handle}))
    elif phase == "execute":
        text = sys.stdin.read()
        state = json.loads(state_file().read_text()) if state_file().is_file() else {}
        history = state.get("history", [])
        output, calls = answer(text, history)
        state["history"] = [*history, text]
        state_file().write_text(json.dumps(state))
        print(
            json.dumps(
                {
                    "output": output,
                    "conversation": state.get("handle"),
                    "usage": {"input": len(text.split()), "output": len(output.split())},
                    "calls": calls,  # [] means "made no call"; leave it out if you cannot see
                }
            )
        )
    # prepare, close and collect: nothing to do; exit 0


if __name__ == "__main__":
    main(sys.argv[1])
