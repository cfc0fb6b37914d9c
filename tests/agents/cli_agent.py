"""A command-line agent for Rook's tests: the prompt on stdin, the answer on stdout.

With --json it answers like `claude -p --output-format json`: the answer under
"result", with a session id and token usage. With --fail it exits 3.
"""

import json
import sys

prompt = sys.stdin.read().strip()
if "--fail" in sys.argv:
    sys.stderr.write("cli agent: failing on purpose\n")
    sys.exit(3)
answer = f"cli answer: {prompt}"
if "--json" in sys.argv:
    print(
        json.dumps(
            {
                "type": "result",
                "result": answer,
                "session_id": "3f1c2a9e-77aa",
                "usage": {"input_tokens": 11, "output_tokens": 4},
            }
        )
    )
else:
    print(answer)
