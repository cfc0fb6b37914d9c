"""Whether starting a child releases the GIL: can another thread run meanwhile?

    python benchmarks/bench_spawn_gil.py

A thread starts `/bin/true` again and again for a second, with ~1.5 MB of
arguments so that each start (until the child has called ``exec``) takes
milliseconds, while the main thread counts loop iterations and notes the
longest pause between two. It is done with ``os.posix_spawn``, with
``subprocess.Popen`` (``fork_exec``, vfork) and, for scale, with a thread
that only sleeps as long. If a spawn released the GIL, the main thread would
count about as many iterations as beside the sleeping thread, and its
longest pause would be far below one spawn. Stdlib only; not part of run.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

BIG = ["x" * 100_000] * 15


def measure(mode: str) -> tuple[int, int, float, float]:
    done = threading.Event()
    spawned = [0, 0.0]

    def spawner() -> None:
        end = time.perf_counter() + 1.0
        while time.perf_counter() < end:
            t = time.perf_counter()
            if mode == "sleep":
                time.sleep(0.0025)
            elif mode == "posix_spawn":
                os.waitpid(os.posix_spawn("/bin/true", ["/bin/true", *BIG], {}), 0)
            else:
                subprocess.Popen(["/bin/true", *BIG], env={}, close_fds=False).wait()
            spawned[0] += 1
            spawned[1] += time.perf_counter() - t
        done.set()

    sys.setswitchinterval(0.0001)  # hand the GIL over as soon as it is released
    thread = threading.Thread(target=spawner)
    thread.start()
    n, longest, last = 0, 0.0, time.perf_counter()
    while not done.is_set():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
        n += 1
    thread.join()
    return n, int(spawned[0]), longest, spawned[1] / max(spawned[0], 1)


def main() -> int:
    print(f"Python {sys.version.split()[0]}")
    for mode in ("sleep", "posix_spawn", "popen"):
        n, k, longest, each = measure(mode)
        print(
            f"  {mode:<12} main thread: {n:>9,} iterations, longest pause {longest * 1000:5.2f} ms;"
            f" {k} spawns of {each * 1000:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
