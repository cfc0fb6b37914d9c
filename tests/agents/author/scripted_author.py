"""A scripted author agent for Rook's tests: it reads Rook's request on stdin and
answers with a hook script, like a coding agent's CLI would (but deterministically).

AUTHOR_MODE chooses how it answers:
  fenced      prose around a ```python block (default)
  json        a hook-contract JSON object whose output holds the script (and env)
  broken      the first answer prints plain text (not the hook contract); asked again
              with the observed failure, it answers a working script
  none        prose without any script
  bad_env     a JSON object whose env names no environment variable ("desk token");
              with broken, only once asked again with the observed failure
AUTHOR_LOG, when set, is a directory where each request is saved (request-N.md).
"""

import json
import os
import re
import sys
from pathlib import Path

request = sys.stdin.read()
log = os.environ.get("AUTHOR_LOG")
if log:
    n = len(list(Path(log).glob("request-*.md"))) + 1
    Path(log, f"request-{n}.md").write_text(request, encoding="utf-8")
machine = json.loads(re.findall(r"```json\n(.*?)\n```", request, re.S)[-1])
mode = os.environ.get("AUTHOR_MODE", "fenced")

WORKING = """import json
import os
import sys

if sys.argv[1] == "execute":
    goal = sys.stdin.read()
    token = os.environ.get("DESK_TOKEN", "")
    print(json.dumps({"output": "scripted answer to: " + goal, "token_length": len(token)}))
"""
BROKEN = """import sys

if sys.argv[1] == "execute":
    print("just text, not the hook contract: " + sys.stdin.read())
"""

if mode == "none":
    print("I am not sure how to do that.")
elif mode == "bad_env" or (mode == "broken bad_env" and machine.get("problem")):
    print(json.dumps({"output": WORKING, "env": [{"variable": "desk token", "purpose": "p"}]}))
elif mode == "json":
    print(
        json.dumps(
            {"output": WORKING, "env": [{"variable": "DESK_TOKEN", "purpose": "token of the desk"}]}
        )
    )
else:
    script = BROKEN if mode.startswith("broken") and not machine.get("problem") else WORKING
    print("Here is the hook script you asked for.\n\n```python\n" + script + "```\n\nDone.")
