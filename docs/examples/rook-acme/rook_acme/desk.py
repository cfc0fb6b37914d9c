"""The Acme support desk: a toy agent the ``acme`` transport reaches.

It is deterministic so examples and tests can assert on it. The ``polite``
desk thanks the customer, cites a ticket (``ACME-1234``) and looks the order
up; the ``grumpy`` desk does neither.

Run as a program (``python -m rook_acme.desk DESK``) it reads
``{"text": ..., "turn": ..., "conversation": ...}`` on standard input and
prints the reply as one JSON object: that is how the transport's
``mode: subprocess`` reaches it.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

DESKS = ("polite", "grumpy")


def ticket(text: str) -> str:
    return f"ACME-{1000 + sum(text.encode('utf-8')) % 9000}"


def reply(desk: str, text: str, turn: int = 1, conversation: str | None = None) -> dict[str, Any]:
    """The desk's answer to one turn, in the shape of Rook's hook contract."""
    orders = re.findall(r"ORD-\d+", text)
    calls = [{"name": "acme_lookup", "arguments": {"order": o}} for o in orders]
    status = " ".join(f"Order {o} ships Tuesday." for o in orders) or "No order was mentioned."
    if desk == "polite":
        output = f"Thank you for contacting Acme! Ticket {ticket(text)}: {status} Happy to help."
    else:
        output = f"What now? {status}"
    return {
        "output": output,
        "conversation": conversation or f"acme-{ticket(text).lower()}",
        "usage": {"input": len(text.split()), "output": len(output.split())},
        "calls": calls,
        "desk": desk,
        "turn_seen": turn,
    }


def main() -> None:
    desk = sys.argv[1] if len(sys.argv) > 1 else "polite"
    request = json.loads(sys.stdin.read() or "{}")
    answer = reply(
        desk, request.get("text", ""), request.get("turn", 1), request.get("conversation")
    )
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
