"""The floor: a bare loop doing only what `rook run` cannot avoid doing.

    python floor.py SCRIPT WORKSPACE COUNT CONCURRENCY

For scenario i in 1..COUNT it spawns `SCRIPT execute` with the parent
environment plus the ROOK_* variables of the execute phase, writes the goal
`hello i` on standard input, reads standard output, parses it as one JSON
object and checks that `output` contains "ok". CONCURRENCY 1 runs them one
after the other; more runs that many at a time in a thread pool. It prints
"N passed, M failed" on standard error and exits 0 only when all passed.

Deliberately lean (stdlib, no argparse): it is timed from the outside,
interpreter start-up included, exactly like `rook run`.
"""

import json
import os
import subprocess
import sys
import time

script, workspace, count, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
width = max(4, len(str(count)))
run_id = time.strftime("floor-%Y%m%d-%H%M%S")
run_dir = os.path.join(workspace, ".testmuai/rook/projects/bench/agents/a/runs", run_id)
base = dict(
    os.environ,
    ROOK_HOOK="execute",
    ROOK_WORKSPACE=workspace,
    ROOK_PROJECT="bench",
    ROOK_AGENT="a",
    ROOK_RUN_ID=run_id,
    ROOK_RUN_STATE_DIR=os.path.join(run_dir, "state"),
)


def one(i):
    sid = f"s{i:0{width}d}"
    env = dict(
        base,
        ROOK_SCENARIO_ID=sid,
        ROOK_SESSION=f"{run_id}-{sid}",
        ROOK_STATE_DIR=os.path.join(run_dir, "scenarios", sid, "state"),
        ROOK_TURN="1",
    )
    proc = subprocess.run(
        [script, "execute"], input=f"hello {i}".encode(), capture_output=True, env=env
    )
    if proc.returncode != 0:
        return False
    try:
        return "ok" in json.loads(proc.stdout)["output"].lower()
    except (ValueError, KeyError, TypeError, AttributeError):
        return False


if concurrency <= 1:
    results = [one(i) for i in range(1, count + 1)]
else:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, range(1, count + 1)))

passed = sum(results)
print(f"{passed} passed, {count - passed} failed", file=sys.stderr)
sys.exit(0 if passed == count else 1)
