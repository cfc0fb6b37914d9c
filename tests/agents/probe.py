# A probe agent (run by extension with Python, deliberately not executable).
import json
import os
import sys
import time

phase = sys.argv[1]
d = os.environ["PROBE_DIR"]
base = os.path.join(d, f"{time.time_ns()}-{os.getpid()}-{phase}")
with open(base + ".argc", "w") as fh:
    fh.write(f"{len(sys.argv) - 1}\n")
with open(base + ".cwd", "w") as fh:
    fh.write(os.getcwd() + "\n")
with open(base + ".env", "wb") as fh:
    fh.write(b"".join(k.encode() + b"=" + v.encode() + b"\0" for k, v in os.environ.items()))
data = sys.stdin.buffer.read()
with open(base + ".stdin", "wb") as fh:
    fh.write(data)
turn = os.environ.get("ROOK_TURN", "")
if phase == "open":
    print(json.dumps({"conversation": "conv-open"}))
elif phase == "execute":
    print(json.dumps({"output": f"ok turn {turn}", "conversation": f"conv-{turn}", "calls": [],
                      "usage": {"input": 1, "output": 2}, "trace_id": f"t-{turn}"}))
elif phase == "collect":
    print(json.dumps({"trace_url": "file:///trace"}))
