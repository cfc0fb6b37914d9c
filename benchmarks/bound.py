"""The in-process bound: the least a runner built as the SPEC builds Rook can do.

    python bound.py SCRIPT WORKSPACE COUNT CONCURRENCY

Like floor.py it spawns `SCRIPT execute` COUNT times with the parent
environment plus the ROOK_* variables of the execute phase, writes the goal
`hello i` on standard input, parses standard output as one JSON object and
checks that `output` contains "ok". Unlike the floor it is built the way the
SPEC builds Rook's default executor (§11): one process, one asyncio event
loop, CONCURRENCY hooks in flight, and it does the disk work the SPEC asks of
every scenario run (§10): the scenario run's state directory made before its
hook, its record written to a temporary file and renamed into `scenarios/`
after. Each hook is started the way Rook starts it (`os.posix_spawn` in a new
session, on three pipes) and watched the way Rook watches it (its pipes and a
pidfd, through `loop.add_reader`).

Nothing else: no plugins, no judging beyond the one check, no redaction, no
report, no progress. Rook's time over this bound is Rook's own work; this
bound's time over the floor is what the design and the SPEC's files cost.
Linux only (pidfds); stdlib; timed from the outside, interpreter start-up
included, like floor.py and `rook run`.
"""

import asyncio
import json
import os
import sys
import time

from hookenv import RUNS, run_env

script, workspace, count, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
width = max(4, len(str(count)))
run_id = time.strftime("bound-%Y%m%d-%H%M%S") + f"-{os.getpid()}"
run_dir = os.path.join(workspace, RUNS, run_id)
scenarios, state = os.path.join(run_dir, "scenarios"), os.path.join(run_dir, "state")
base = run_env(workspace, run_id, os.path.join(state, "run"))


async def hook(loop, env, goal):
    """Spawn the hook, feed it, read both streams to their end and wait for its exit."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.posix_spawn(
        script,
        [script, "execute"],
        env,
        file_actions=[
            (os.POSIX_SPAWN_DUP2, in_r, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ],
        setsid=True,
    )
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    os.write(in_w, goal)  # a goal this small fits the pipe buffer
    os.close(in_w)
    pidfd = os.pidfd_open(pid)
    done = loop.create_future()
    out = {out_r: bytearray(), err_r: bytearray()}
    left = [3]
    status = [None]

    def one_down():
        left[0] -= 1
        if left[0] == 0:
            done.set_result(None)

    def readable(fd):
        data = os.read(fd, 65536)
        if data:
            out[fd] += data
        else:
            loop.remove_reader(fd)
            os.close(fd)
            one_down()

    def exited():
        loop.remove_reader(pidfd)
        status[0] = os.waitid(os.P_PIDFD, pidfd, os.WEXITED).si_status
        os.close(pidfd)
        one_down()

    for fd in (out_r, err_r):
        os.set_blocking(fd, False)
        loop.add_reader(fd, readable, fd)
    loop.add_reader(pidfd, exited)
    await done
    return status[0], bytes(out[out_r])


async def one(i, loop, slots):
    key = f"s{i:0{width}d}.1"
    state_dir = os.path.join(state, key)
    env = dict(
        base,
        ROOK_SCENARIO_ID=key[:-2],
        ROOK_SESSION=f"{run_id}-{key}",
        ROOK_STATE_DIR=state_dir,
        ROOK_TURN="1",
    )
    os.mkdir(state_dir)
    async with slots:
        code, stdout = await hook(loop, env, f"hello {i}".encode())
    await asyncio.sleep(0)  # let a run waiting for the slot spawn first, as Rook does
    try:
        ok = code == 0 and "ok" in json.loads(stdout)["output"].lower()
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    record = {"key": key, "passed": ok, "stdout": stdout.decode()}
    tmp = os.path.join(scenarios, f".{key}.json.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    os.write(fd, json.dumps(record).encode())
    os.close(fd)
    os.replace(tmp, os.path.join(scenarios, f"{key}.json"))
    return ok


async def main():
    loop = asyncio.get_running_loop()
    slots = asyncio.Semaphore(concurrency)
    todo = iter(range(1, count + 1))
    results = []

    async def worker():  # twice the concurrency: the next runs are ready when a slot frees
        for i in todo:
            results.append(await one(i, loop, slots))

    await asyncio.gather(*(worker() for _ in range(2 * concurrency)))
    return results


os.makedirs(scenarios)
os.makedirs(os.path.join(state, "run"))
results = asyncio.run(main())
passed = sum(results)
print(f"{passed} passed, {count - passed} failed", file=sys.stderr, flush=True)
os._exit(0 if passed == count else 1)  # as the rook console script leaves: no teardown
