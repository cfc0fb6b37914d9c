"""A command-line agent for Rook's tests: the prompt on stdin, the answer on stdout.

With --json it answers like `claude -p --output-format json`: the answer under
"result", with a session id and token usage; with --stream-json as `claude -p
--output-format stream-json --verbose` does, in JSON Lines: an init event, an
assistant message per line of the prompt, then the result with the usage. With --fail it exits 3. With
--hex the answer is the hex of the bytes it got on stdin; with --latin-1 it
ends with "café" in Latin-1 (a byte that is not UTF-8). With --prompt-arg the
prompt is its last argument, and without one it says its usage and exits 2, as
argparse does; with --usage-error it always does that.
"""

import json
import sys

raw = sys.stdin.buffer.read()
if "--prompt-arg" in sys.argv or "--usage-error" in sys.argv:
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="cli_agent.py")
    parser.add_argument("--prompt-arg", action="store_true")
    parser.add_argument("--usage-error", action="store_true")
    parser.add_argument("prompt")
    args = parser.parse_args()  # a prompt starting with '-' needs '--' before it
    if args.usage_error:
        parser.error("the following arguments are required: PROMPT")
    raw = os.fsencode(args.prompt)
if "--hex" in sys.argv:
    print("hex " + raw.hex())
    sys.exit(0)
prompt = raw.decode().strip()
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
elif "--stream-json" in sys.argv:
    lines = [{"type": "system", "subtype": "init", "session_id": "3f1c2a9e-77aa"}]
    for part in prompt.splitlines() or [prompt]:
        content = [{"type": "text", "text": f"cli part: {part}"}]
        lines.append({"type": "assistant", "message": {"role": "assistant", "content": content}})
    lines.append(
        {
            "type": "result",
            "result": answer,
            "session_id": "3f1c2a9e-77aa",
            "usage": {"input_tokens": 11, "output_tokens": 4},
        }
    )
    for line in lines:
        print(json.dumps(line))
elif "--latin-1" in sys.argv:
    sys.stdout.buffer.write((answer + " café\n").encode("latin-1"))
else:
    print(answer)
