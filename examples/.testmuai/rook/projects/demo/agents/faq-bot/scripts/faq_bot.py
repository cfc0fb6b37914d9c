#!/usr/bin/env python3
"""FAQ bot: a single-turn, rule-based "agent" behind the Rook hook contract.

It implements only execute (every other phase exits 0 silently), reads the
question from standard input and prints {"output": ...}. It reports neither
calls nor usage, so Rook can never see what it did or did not call: a
not_called criterion against it is unverifiable, never a pass.

Standard library only. Deterministic.
"""
import json
import sys

ANSWERS = [
    (("hours", "open", "saturday", "sunday"),
     "We are open Monday to Friday 9:00 to 17:00, and Saturday 10:00 to 14:00. "
     "We are closed on Sunday."),
    (("return", "exchange"),
     "You can return any item within 30 days with its receipt."),
    (("human", "person", "complaint", "escalate"),
     "I understand. Our support team reads every message sent to "
     "help@example.com and answers within one working day."),
]


def answer(question: str) -> str:
    lower = question.lower()
    for keywords, reply in ANSWERS:
        if any(word in lower for word in keywords):
            return reply
    # Unknown questions are echoed back verbatim, which lets a scenario prove
    # that the goal arrived byte for byte (quotes, $, backticks, newlines).
    return "I don't know that one yet. You asked: " + question


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] != "execute":
        return 0
    question = sys.stdin.buffer.read().decode("utf-8")
    sys.stdout.write(json.dumps({"output": answer(question)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
