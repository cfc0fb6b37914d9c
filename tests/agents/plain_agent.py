"""A local script that does not speak the hook contract: it reads a question on
stdin and prints its answer as plain text (Rook wraps it)."""

import sys

print("plain agent says hello to: " + sys.stdin.read().strip())
