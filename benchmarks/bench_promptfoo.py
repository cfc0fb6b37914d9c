"""Target 6: against promptfoo.

The same 200 scenarios (the trivial `sh` hook, a `contains: ok` check each)
through promptfoo 0.121.x's `exec:` provider (`promptfoo eval -c config.yaml
--no-cache`; exec passes the prompt as argv[1] and reads stdout) and through
`rook run`, at default concurrency (promptfoo's own default, rook's profile
default of 1), at 1 and at 8 (`-j 8` / `--concurrency 8`). Target: rook's wall
time <= 0.5 of promptfoo's, at default concurrency and at 8 (1 is shown too).

promptfoo is installed by setup_promptfoo.sh into benchmarks/.promptfoo. It
runs with telemetry and update checks disabled, a scratch config directory
(its database and logs) and a scratch HOME that is checked to stay empty.
Even with PROMPTFOO_DISABLE_TELEMETRY=1, 0.121 still posts one "telemetry
disabled" event to its server; HTTP(S)_PROXY points at a closed port on
127.0.0.1 so that request never leaves the machine.
"""

import json
import os
import re
import shutil
import subprocess

from common import (
    HERE,
    Ctx,
    Row,
    floor,
    info,
    interleaved,
    judged,
    make_workspace,
    rook_run,
    skipped,
    timed,
)

NAME = "promptfoo"
N, LIMIT = 200, 0.5
SETUP = HERE / "setup_promptfoo.sh"
PROMPTFOO = HERE / ".promptfoo/node_modules/.bin/promptfoo"
MODES = (("default", None), ("1", 1), ("8", 8))
DEAD_PROXY = "http://127.0.0.1:9"


def write_config(path, script, n):
    lines = [
        "description: rook benchmark",
        'prompts: ["{{goal}}"]',
        f"providers: [{json.dumps('exec: ' + str(script))}]",
        "tests:",
    ]
    for i in range(1, n + 1):
        lines += [f'  - vars: {{goal: "hello {i}"}}', '    assert: [{type: contains, value: "ok"}]']
    path.write_text("\n".join(lines) + "\n")


def run(ctx: Ctx) -> list[Row]:
    subprocess.run(["sh", str(SETUP)], check=True, stdout=subprocess.DEVNULL)
    here = ctx.dir(NAME)
    ws = make_workspace(here / "ws", N, bundle=ctx.bundle)
    config = here / "config.yaml"
    write_config(config, ws.script, N)
    home, cfg = here / "home", here / "config"
    for d in (home, cfg):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    env = dict(
        os.environ,
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_CONFIG_DIR=str(cfg),
        HOME=str(home),
        HTTPS_PROXY=DEAD_PROXY,
        HTTP_PROXY=DEAD_PROXY,
        https_proxy=DEAD_PROXY,
        http_proxy=DEAD_PROXY,
        NO_PROXY="",
        no_proxy="",
    )
    seen_default = {}

    def promptfoo(c):
        out = here / "promptfoo-out.txt"
        argv = [PROMPTFOO, "eval", "-c", config, "--no-cache"] + (["-j", c] if c else [])
        t = timed(argv, env=env, cwd=here, stdout=out)
        text = out.read_text(errors="replace")
        if m := re.search(r"up to (\d+) at a time", text):
            seen_default.setdefault(c, m.group(1))
        if t.rc != 0 or not re.search(rf"\b{N} passed", text):
            t.problem = f"promptfoo exited {t.rc}; see {out}"
        return t

    rows = []
    for label, c in MODES:
        commands = {"promptfoo": lambda c=c: promptfoo(c)}
        if c:
            commands["floor"] = lambda c=c: floor(ctx, ws, c)
        if ctx.rook:
            commands["rook"] = lambda c=c: rook_run(ctx, ws, c)
        m = interleaved(commands, ctx.reps(3), warmup=True)
        j = f"{label} (promptfoo {seen_default.get(c, '?')}, rook 1)" if c is None else label
        pf, rk, fl = m["promptfoo"], m.get("rook"), m.get("floor")
        rows += [
            info(
                NAME, f"promptfoo eval, {N} exec tests, j={j}", pf.seconds, "s", problem=pf.problem
            ),
            info(NAME, f"promptfoo peak RSS, j={label}", pf.rss_mb, "MB"),
        ]
        if fl:
            note = f"peak RSS {fl.rss_mb:.0f} MB"
            measure = f"floor, {N} hooks, c={c}"
            rows.append(info(NAME, measure, fl.seconds, "s", problem=fl.problem, note=note))
        measure = f"rook run / promptfoo, j={label}"
        if not rk:
            rows.append(skipped(NAME, measure, ctx.rook_note, f"≤ {LIMIT:g}"))
            continue
        note, problem = f"peak RSS {rk.rss_mb:.0f} MB", rk.problem or pf.problem
        rows += [
            info(NAME, f"rook run, {N} scenarios, j={label}", rk.seconds, "s", note=note),
            judged(NAME, measure, rk.seconds / pf.seconds, "x", LIMIT, problem=problem),
        ]
    leaked = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    problem = ", ".join(leaked[:5])
    rows.append(info(NAME, "promptfoo files written to HOME", len(leaked), "", problem=problem))
    return rows
