"""A command-line agent that needs secrets: OPENAI_API_KEY in its environment and
--api-key (or --token=) on its command line. It answers with the goal and a short
digest of each value it got (never the value), so a test can tell that the real
secret reached it without the secret being printed."""

import hashlib
import os
import sys


def digest(value):
    return hashlib.sha256(value.encode()).hexdigest()[:12] if value else "none"


args = sys.argv[1:]
key = None
for i, arg in enumerate(args):
    if arg == "--api-key" and i + 1 < len(args):
        key = args[i + 1]
    elif arg.startswith("--token="):
        key = arg.partition("=")[2]
prompt = sys.stdin.read().strip()
print(f"keyed answer: {prompt} [arg {digest(key)}] [env {digest(os.environ.get('OPENAI_API_KEY'))}]")
