"""A local script that already speaks the hook contract (used as it is)."""

import json
import sys

if sys.argv[1] == "execute":
    print(json.dumps({"output": "hook agent: " + sys.stdin.read(), "calls": []}))
