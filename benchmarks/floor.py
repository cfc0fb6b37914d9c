"""The floor: a bare loop doing only what `rook run` cannot avoid doing.

    python floor.py SCRIPT WORKSPACE COUNT CONCURRENCY [records]

For scenario i in 1..COUNT it spawns `SCRIPT execute` with the parent
environment plus the ROOK_* variables of the execute phase, writes the goal
`hello i` on standard input, reads standard output, parses it as one JSON
object and checks that `output` contains "ok". CONCURRENCY 1 runs them one
after the other; more runs that many at a time in a thread pool. It prints
"N passed, M failed" on standard error and exits 0 only when all passed.

With `records` it also does the disk work the SPEC asks of every scenario run
(and that the hooks themselves never see): it makes the scenario's state
directory before spawning, and writes a small JSON record of the result to a
temporary file renamed into `scenarios/` after. This shows how much of Rook's
overhead is that mandated work rather than Rook.

Deliberately lean (stdlib, no argparse): it is timed from the outside,
interpreter start-up included, exactly like `rook run`.
"""

import json
import os
import subprocess
import sys
import time

from hookenv import RUNS, run_env

script, workspace, count, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
records = sys.argv[5:] == ["records"]
width = max(4, len(str(count)))
run_id = time.strftime("floor-%Y%m%d-%H%M%S") + f"-{os.getpid()}"
run_dir = os.path.join(workspace, RUNS, run_id)
base = run_env(workspace, run_id, os.path.join(run_dir, "state"))


def one(i):
    sid = f"s{i:0{width}d}"
    env = dict(
        base,
        ROOK_SCENARIO_ID=sid,
        ROOK_SESSION=f"{run_id}-{sid}",
        ROOK_STATE_DIR=os.path.join(run_dir, "scenarios", sid, "state"),
        ROOK_TURN="1",
    )
    if records:
        os.makedirs(env["ROOK_STATE_DIR"])
    proc = subprocess.run(
        [script, "execute"], input=f"hello {i}".encode(), capture_output=True, env=env
    )
    try:
        ok = proc.returncode == 0 and "ok" in json.loads(proc.stdout)["output"].lower()
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if records:
        target = os.path.join(run_dir, "scenarios", f"{sid}.1.json")
        tmp = os.path.join(run_dir, "scenarios", f".{sid}.1.json.tmp")
        with open(tmp, "w") as fh:
            fh.write(json.dumps({"key": f"{sid}.1", "passed": ok, "stdout": proc.stdout.decode()}))
        os.replace(tmp, target)
    return ok


if records:
    os.makedirs(os.path.join(run_dir, "scenarios"))


if concurrency <= 1:
    results = [one(i) for i in range(1, count + 1)]
else:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, range(1, count + 1)))

passed = sum(results)
print(f"{passed} passed, {count - passed} failed", file=sys.stderr)
sys.exit(0 if passed == count else 1)
