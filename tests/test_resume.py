"""Resuming a run cut off inside a scenario run (SIGINT or SIGKILL): what
finished is never done again, what was decided stays decided."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_reliability import alive

AGENT = r"""#!/bin/bash
D={d}
goal=""
if [ "$1" = execute ]; then goal=$(cat); fi
echo "$1 ${{ROOK_TURN:-}} $goal" >> $D/log
blk="$1${{ROOK_TURN:+:$ROOK_TURN}}"
if [ -e "$D/block-$blk" ] && [ ! -e $D/fast-now ]; then echo $$ > $D/hook.pid; sleep 300; fi
if [ -e "$D/fail-$blk" ]; then echo "$blk is down" >&2; exit 1; fi
case "$1" in
 open) echo '{{"conversation":"c1"}}';;
 execute) echo "{{\"output\": \"ok $ROOK_TURN\", \"conversation\": \"c1\"}}";;
 collect) echo '{{"calls": []}}';;
esac
"""

JUDGE = r"""#!/usr/bin/env python3
import json, os, sys, time
D = "{d}"
if sys.argv[1] != "execute":
    sys.exit(0)
sys.stdin.read()
if os.path.exists(D + "/block-judge") and not os.path.exists(D + "/fast-now"):
    open(D + "/hook.pid", "w").write(str(os.getpid()))
    open(D + "/blocked", "a").write(str(os.getpid()) + "\n")
    time.sleep(300)
print(json.dumps({{"output": json.dumps({{"pass": True, "reason": "fine"}})}}))
"""


def setup_agent(ws, d, phases, judge=False):
    d.mkdir(exist_ok=True)
    ws.script("agent.sh", AGENT.format(d=d))
    ws.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in phases},
                "capabilities": {"multi_turn": True, "calls": True}})
    if judge:
        ws.script("judge.py", JUDGE.format(d=d))
        ws.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"}}, active=False)


def rook(ws, *args):
    return [sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json", *args]


def wait_for_the_blocked_hook(d, judges=0):
    """Until the blocking hook has written ``d/hook.pid`` (and ``judges`` blocking
    judge hooks their lines in ``d/blocked``; 60 s at most), and a moment more
    for Rook to have recorded its start."""

    def blocked():
        if judges:
            return (d / "blocked").exists() and len((d / "blocked").read_text().split()) >= judges
        return (d / "hook.pid").exists()

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not blocked():
        time.sleep(0.05)
    time.sleep(0.2)


def cut(ws, d, sig, *args, judges=0):
    """Start a run, send ``sig`` once a blocking hook is running (and ``judges``
    blocking judge hooks); kill that hook."""
    proc = subprocess.Popen(rook(ws, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_the_blocked_hook(d, judges)
    os.kill(proc.pid, sig)
    proc.communicate(timeout=60)
    try:
        os.killpg(int((d / "hook.pid").read_text()), signal.SIGKILL)
    except (ProcessLookupError, ValueError, PermissionError):
        pass
    (run_dir,) = ws.runs_dir.iterdir()
    (d / "fast-now").touch()
    return run_dir.name


def finish(ws, run_id, *args):
    out = subprocess.run(rook(ws, "--run", run_id, *args), capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout)["scenarios"][0]


def log(d):
    return [line.rstrip() for line in (d / "log").read_text().splitlines()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_cut_in_turn_2_resumes_at_turn_2(rook_workspace, tmp_path, sig):
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("open", "execute", "close"))
    rook_workspace.scenario({"id": "s", "turns": ["t1", "t2", "t3"], "criteria": [{"contains": "ok"}]})
    (d / "block-execute:2").touch()
    run_id = cut(rook_workspace, d, sig)
    s = finish(rook_workspace, run_id)
    assert s["status"] == "passed" and [t["turn"] for t in s["turns"]] == [1, 2, 3]
    # turn 1 went to the agent once; turn 2 again (it was cut off), then turn 3
    assert log(d) == ["open", "execute 1 t1", "execute 2 t2", "execute 2 t2", "execute 3 t3", "close"]


@pytest.mark.parametrize(("blocked", "sig"), [("prepare", signal.SIGTERM), ("close", signal.SIGHUP),
                                           ("collect", signal.SIGINT)])
def test_a_signal_in_prepare_close_or_collect_resumes_at_that_phase(rook_workspace, tmp_path,
                                                                     blocked, sig):
    """The first signal in any phase: exit 130, the cut phase recorded as an interrupted
    attempt, and the resume does that phase again and what follows it, nothing before."""
    d = tmp_path / "d"
    phases = ("prepare", "open", "execute", "close", "collect")
    setup_agent(rook_workspace, d, phases)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / f"block-{blocked}").touch()
    proc = subprocess.Popen(rook(rook_workspace), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    wait_for_the_blocked_hook(d)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_id = json.loads(out)["run"]["id"]
    assert f"rook run --run {run_id}" in err
    if blocked != "prepare":  # no scenario run had started: none has a record
        (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
        assert [(h["phase"], h["status"]) for h in attempt["hooks"]] == [(blocked, "interrupted")]
    else:  # its record was kept nowhere: it goes where prepare's does, and run.json says so
        run_dir = rook_workspace.run_dir(run_id)
        hook = json.loads((run_dir / "prepare.json").read_text())
        assert (hook["phase"], hook["status"]) == ("prepare", "interrupted"), hook
        assert "interrupted" in hook["diagnosis"] and hook["seconds"] > 0
        prepared = json.loads((run_dir / "run.json").read_text())["prepare"]
        assert prepared == {"status": "interrupted", "diagnosis": hook["diagnosis"]}
        assert json.loads(out)["run"]["prepare"] == prepared
    (d / "fast-now").touch()
    assert finish(rook_workspace, run_id)["status"] == "passed"
    done = ["prepare", "open", "execute 1 g", "close", "collect"]
    i = phases.index(blocked)
    assert log(d) == done[: i + 1] + done[i:]


def test_a_run_split_by_phase_and_interrupted_is_finished_with_its_phases(rook_workspace, tmp_path):
    """running.md: a run split with --phases (evidence that arrives late) and
    interrupted printed `finish it with: rook run --run ID`, which runs collect and
    judge too, before the evidence is there; and a collect done is never done
    again. The command it prints (and the reason it stores) keep the --phases it
    was given: it finishes the cut phase and the rest of that prefix, then says
    what is still to come."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("prepare", "open", "execute", "close", "collect"))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-close").touch()
    selection = "prepare,open,execute,close"
    proc = subprocess.Popen(rook(rook_workspace, "--phases", selection), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for_the_blocked_hook(d)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_id = json.loads(out)["run"]["id"]
    command = f"rook run --run {run_id} --phases {selection} -w {rook_workspace.root}"
    assert f"finish it with: {command}\n" in err, err
    assert rook_workspace.record(run_id, "s.1")["reason"] == f"interrupted; {command} finishes it"
    shown = subprocess.run([sys.executable, "-m", "rook_core", "runs", "show", run_id, "-w",
                            str(rook_workspace.root)], capture_output=True, text=True, timeout=60)
    assert f"finish it with: {command}\n" in shown.stderr, shown.stderr  # as rook run said it
    (d / "fast-now").touch()
    argv = shlex.split(command)
    done = subprocess.run([sys.executable, "-m", "rook_core", *argv[1:]], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"resume with: rook run --run {run_id} --phases collect,judge" in done.stderr
    assert log(d) == ["prepare", "open", "execute 1 g", "close", "close"]  # no collect yet


def test_an_http_agent_cut_in_turn_2_is_resumed_at_turn_2_in_the_session_open_made(
    rook_workspace, tmp_path
):
    """The same over HTTP: a real server on 127.0.0.1 whose open makes a session
    (saved with ``save:``, used in every turn's URL); rook run SIGKILLed while turn
    2 waits for its answer. The resume neither opens again nor sends turn 1 again,
    and its turns go to the session the first invocation opened."""
    seen, release = [], threading.Event()

    class Agent(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
            seen.append(f"{self.path} {body.get('turn', '')} {body.get('text', '')}".strip())
            if self.path == "/sessions":
                answer = {"id": f"sess-{len(seen)}"}
            else:
                if body["turn"] == 2 and not release.is_set():
                    release.wait(60)  # rook is killed meanwhile
                answer = {"reply": f"ok {body['turn']} {body['text']}"}
            data = json.dumps(answer).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the killed rook's connection is gone
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        rook_workspace.profile({"id": "h", "capabilities": {"multi_turn": True}, "hooks": {
            "open": {"http": {"url": f"{url}/sessions", "body": {}, "save": {"sid": "id"},
                              "extract": {"conversation": "id"}}},
            "execute": {"http": {"url": url + "/sessions/{{sid}}",
                                 "body": {"text": "{{goal}}", "turn": "{{turn}}"},
                                 "extract": {"output": "reply"}}}}})
        rook_workspace.scenario({"id": "s", "turns": ["t1", "t2", "t3"],
                                 "criteria": [{"contains": "ok 3 t3"}]})
        proc = subprocess.Popen(rook(rook_workspace, "--run-name", "cut"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(seen) < 3:
            time.sleep(0.05)
        proc.kill()
        proc.communicate(timeout=60)
        release.set()
        assert seen == ["/sessions", "/sessions/sess-1 1 t1", "/sessions/sess-1 2 t2"]
        s = finish(rook_workspace, "cut")
        assert s["status"] == "passed", s
        assert [t["output"] for t in s["turns"]] == ["ok 1 t1", "ok 2 t2", "ok 3 t3"]
        assert seen[3:] == ["/sessions/sess-1 2 t2", "/sessions/sess-1 3 t3"]
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_a_judge_hook_interrupted_is_in_the_interrupted_attempt(rook_workspace, tmp_path):
    """SIGINT while the judge profile's execute hook ran: the scenario record's
    interrupted attempt had an empty hook list; it names the judge's hook."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("execute",), judge=True)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"rubric": "is fine"}]})
    (d / "block-judge").touch()
    run_id = cut(rook_workspace, d, signal.SIGINT, "--judge-profile", "grader")
    (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
    (hook,) = attempt["hooks"]
    assert (hook["phase"], hook["status"], hook["judge_profile"]) == (
        "execute", "interrupted", "grader"), hook
    assert "interrupted" in hook["diagnosis"] and hook["seconds"] > 0
    assert finish(rook_workspace, run_id, "--judge-profile", "grader")["status"] == "passed"


def test_rubrics_judged_together_and_interrupted_are_each_in_the_attempt(rook_workspace, tmp_path):
    """Two rubrics of a scenario are judged at once (the judge profile allows 2): a
    SIGINT meanwhile records both of the judge's hooks in the interrupted attempt, and
    the resume judges both, in their order."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("execute",), judge=True)
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"},
                            "concurrency": 2}, active=False)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"rubric": "is fine"}, {"contains": "ok"}, {"rubric": "is kind"}]})
    (d / "block-judge").touch()
    run_id = cut(rook_workspace, d, signal.SIGINT, "--judge-profile", "grader", judges=2)
    (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
    assert [(h["phase"], h["status"], h["judge_profile"]) for h in attempt["hooks"]] == [
        ("execute", "interrupted", "grader")] * 2, attempt["hooks"]
    s = finish(rook_workspace, run_id, "--judge-profile", "grader")
    assert s["status"] == "passed", s
    assert [c["type"] for c in s["criteria"]] == ["rubric", "contains", "rubric"]


ASKER = """
from rook_core.hookspecs import hookimpl
from rook_core.models import ERROR, FAILED, PASSED, Verdict


class Asker:
    timeout_seconds = 60

    async def __call__(self, config, view):
        answer = await view.judging.client.ask(f"judge {config['n']}", view.scenario)
        if not answer.ok:
            return Verdict(ERROR, answer.diagnosis)
        return Verdict(PASSED if answer.passed else FAILED, f"asked {config['n']}")


@hookimpl
def rook_register_judges(register):
    register("asker", Asker())
"""


@pytest.mark.parametrize("judges", [1, 2])
def test_a_plugin_judge_s_hook_interrupted_is_in_the_interrupted_attempt(
    rook_workspace, rook_distribution, tmp_path, monkeypatch, judges
):
    """SIGINT while a plugin judge's judgement ran (the judge profile's execute hook
    it asked for): the interrupted attempt had an empty hook list, as a rubric's had
    once. The judge's timeout_seconds runs its evaluation in a task of its own,
    which Rook cancelled without waiting for it to end, so the hook it cut was kept
    only after the attempt was written. It is in the attempt, one judge or two
    judged at once, and the resume judges again."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("execute",), judge=True)
    root = rook_distribution("rook-asker", {"asker": "rook_asker"}, {"rook_asker.py": ASKER})
    monkeypatch.setenv("PYTHONPATH", str(root))
    rook_workspace.profile({"id": "grader", "hooks": {"execute": "scripts/judge.py"},
                            "concurrency": 2}, active=False)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"judge": {"name": "asker", "n": n}} for n in range(judges)]})
    (d / "block-judge").touch()
    run_id = cut(rook_workspace, d, signal.SIGINT, "--judge-profile", "grader", judges=judges)
    (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
    assert [(h["phase"], h["status"], h["judge_profile"]) for h in attempt["hooks"]] == [
        ("execute", "interrupted", "grader")] * judges, attempt["hooks"]
    s = finish(rook_workspace, run_id, "--judge-profile", "grader")
    assert s["status"] == "passed", s


def test_a_judge_prepare_hook_interrupted_is_recorded_where_its_prepare_goes(rook_workspace,
                                                                            tmp_path):
    """SIGINT while the judge profile's prepare hook ran: it was recorded nowhere
    (no judge/prepare.json); it is, as the agent's prepare is (prepare.json)."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("execute",), judge=True)
    rook_workspace.script("judge.py", JUDGE.format(d=d).replace(
        'if sys.argv[1] != "execute":',
        'if sys.argv[1] == "prepare" and not os.path.exists(D + "/fast-now"):\n'
        '    open(D + "/hook.pid", "w").write(str(os.getpid()))\n'
        '    time.sleep(300)\n'
        'if sys.argv[1] != "execute":'))
    rook_workspace.profile({"id": "grader", "hooks": {"prepare": "scripts/judge.py",
                                                      "execute": "scripts/judge.py"}},
                           active=False)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"rubric": "is fine"}]})
    run_id = cut(rook_workspace, d, signal.SIGINT, "--judge-profile", "grader")
    hook = json.loads((rook_workspace.run_dir(run_id) / "judge" / "prepare.json").read_text())
    assert (hook["phase"], hook["status"]) == ("prepare", "interrupted"), hook
    assert "interrupted" in hook["diagnosis"] and hook["seconds"] > 0
    assert finish(rook_workspace, run_id, "--judge-profile", "grader")["status"] == "passed"
    hook = json.loads((rook_workspace.run_dir(run_id) / "judge" / "prepare.json").read_text())
    assert hook["status"] == "ok", hook


ANSWER = '{"output": "{\\"pass\\": true, \\"reason\\": \\"fine\\"}"}'
# A hook that prints a line and the start of a JSON object on stdout, a line with
# a secret on stderr, then blocks in PHASE (until fast-now); else it answers.
CUT_HOOKS = {
    "sh": r"""#!/bin/bash
D={d}
[ "$1" = execute ] && cat > /dev/null
if [ "$1" = {phase} ] && [ ! -e $D/fast-now ]; then
  printf 'partial line\n{{"output": "half'
  echo "warming up with $MY_TOKEN" >&2
  echo $$ > $D/hook.pid
  sleep 300
fi
[ "$1" = execute ] && echo '{answer}'
exit 0
""",
    "py": r"""#!/usr/bin/env python3
import json, os, sys, time
D = "{d}"
if sys.argv[1] == "execute":
    sys.stdin.read()
if sys.argv[1] == "{phase}" and not os.path.exists(D + "/fast-now"):
    print('partial line\n{{"output": "half', end="", flush=True)
    print("warming up with " + os.environ["MY_TOKEN"], file=sys.stderr, flush=True)
    open(D + "/hook.pid", "w").write(str(os.getpid()))
    open(D + "/blocked", "a").write(str(os.getpid()) + "\n")
    time.sleep(300)
if sys.argv[1] == "execute":
    print(json.dumps({{"output": json.dumps({{"pass": True, "reason": "fine"}})}}))
""",
    "mjs": r"""#!/usr/bin/env node
import fs from "node:fs";
const D = "{d}";
const phase = process.argv[2];
if (phase === "execute") fs.readFileSync(0);
if (phase === "{phase}" && !fs.existsSync(D + "/fast-now")) {{
  fs.writeSync(1, 'partial line\n{{"output": "half');
  fs.writeSync(2, "warming up with " + process.env.MY_TOKEN + "\n");
  fs.writeFileSync(D + "/hook.pid", String(process.pid));
  setTimeout(() => {{}}, 300000);
}} else if (phase === "execute") {{
  console.log(JSON.stringify({{output: JSON.stringify({{pass: true, reason: "fine"}})}}));
}}
""",
}


@pytest.mark.parametrize(("lang", "sig", "where"), [
    ("sh", signal.SIGINT, "execute"), ("py", signal.SIGTERM, "execute"),
    ("mjs", signal.SIGINT, "execute"), ("sh", signal.SIGTERM, "prepare"),
    ("py", signal.SIGINT, "judge"), ("mjs", signal.SIGTERM, "judge prepare")])
def test_a_hook_cut_off_keeps_what_it_had_printed_and_the_resume_ignores_it(
        rook_workspace, tmp_path, monkeypatch, lang, sig, where):
    """A hook that printed (stdout, stderr) and then blocked, cut off by SIGINT or
    SIGTERM: its interrupted record had empty stdout and stderr. It keeps what
    was read, redacted (the secret stays out of the run directory) and cut as a
    stopped hook's is; the resume takes no part of it for an answer."""
    d = tmp_path / "d"
    d.mkdir()
    monkeypatch.setenv("MY_TOKEN", "s3cr3t-t0ken-value")
    env = [{"variable": "MY_TOKEN", "purpose": "the agent's token"}]
    judged = where.startswith("judge")
    phase = "prepare" if where.endswith("prepare") else "execute"
    cut_script = rook_workspace.script(f"cut.{lang}", CUT_HOOKS[lang].format(
        d=d, phase=phase, answer=ANSWER))
    plain = rook_workspace.script("plain.sh", f"#!/bin/bash\n[ \"$1\" = execute ] && "
                                              f"cat >/dev/null && echo '{ANSWER}'\nexit 0\n")
    agent = plain if judged else cut_script
    hooks = {"prepare": f"scripts/{agent.name}", "execute": f"scripts/{agent.name}"}
    rook_workspace.profile({"id": "p", "hooks": hooks, "env": env})
    args = ()
    criterion = {"contains": "fine"}
    if judged:
        rook_workspace.profile({"id": "grader", "hooks": {
            "prepare": f"scripts/{cut_script.name}", "execute": f"scripts/{cut_script.name}"},
            "env": env}, active=False)
        args, criterion = ("--judge-profile", "grader"), {"rubric": "is fine"}
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [criterion]})
    run_id = cut(rook_workspace, d, sig, *args)
    run_dir = rook_workspace.run_dir(run_id)
    if phase == "prepare":
        hook = json.loads((run_dir / ("judge" if judged else "") / "prepare.json").read_text())
    else:
        (attempt,) = rook_workspace.record(run_id, "s.1")["interrupted_attempts"]
        (hook,) = attempt["hooks"]
        assert hook.get("judge_profile") == ("grader" if judged else None), hook
    assert (hook["phase"], hook["status"]) == (phase, "interrupted"), hook
    assert hook["stdout"] == 'partial line\n{"output": "half', hook
    assert hook["stderr"] == "warming up with [redacted:MY_TOKEN]\n", hook
    assert "s3cr3t-t0ken-value" not in rook_workspace.all_run_text(run_id)
    shown = subprocess.run([sys.executable, "-m", "rook_core", "runs", "show", run_id, "-w",
                            str(rook_workspace.root)], capture_output=True, text=True, timeout=60)
    assert "s3cr3t" not in shown.stdout + shown.stderr
    s = finish(rook_workspace, run_id, *args)
    assert s["status"] == "passed", s["reason"]
    assert [json.loads(t["output"]) for t in s["turns"]] == [{"pass": True, "reason": "fine"}]


@pytest.mark.parametrize("phases", [("execute",), ("execute", "collect")])
def test_a_cut_while_the_judge_profile_judges_never_asks_the_agent_again(
    rook_workspace, tmp_path, phases
):
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, phases, judge=True)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"rubric": "is fine"}]})
    (d / "block-judge").touch()
    run_id = cut(rook_workspace, d, signal.SIGKILL, "--judge-profile", "grader")
    s = finish(rook_workspace, run_id)
    assert s["status"] == "passed"
    assert log(d) == ["execute 1 g"] + (["collect"] if "collect" in phases else [])


SLOW_JUDGE = """
import asyncio, os
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Slow:  # a plugin judge asking its own model or service
    async def __call__(self, config, view):
        if not os.path.exists({d!r} + "/fast-now"):
            open({d!r} + "/hook.pid", "w").write("none: no process of its own")
            await asyncio.sleep(300)
        return Verdict(PASSED, "fine", {{}})


@hookimpl
def rook_register_judges(register):
    register("slow", Slow())


class SlowCheck(CriterionType):  # a plugin's criterion type, as slow
    name = "slowcheck"
    evaluate = Slow.__call__


@hookimpl
def rook_register_criteria(register):
    register(SlowCheck())
"""


@pytest.mark.parametrize("phases", [("execute",), ("execute", "collect")])
@pytest.mark.parametrize("criterion", ["command", "plugin judge", "plugin criterion"])
def test_a_cut_while_a_command_criterion_or_a_plugin_judge_runs_never_asks_the_agent_again(
    rook_workspace, tmp_path, monkeypatch, phases, criterion
):
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, phases)
    if criterion == "command":
        check = rook_workspace.script("check.sh", f"""
            #!/bin/bash
            [ -e {d}/fast-now ] && exit 0
            echo $$ > {d}/hook.pid
            exec sleep 300
        """)
        slow = {"command": {"run": [str(check)]}}
    else:
        from rook_core.testing import make_distribution

        site = make_distribution(tmp_path / "site", "rook-slow", {"slow": "rook_slow"},
                                 {"rook_slow.py": SLOW_JUDGE.format(d=str(d))})
        monkeypatch.setenv("PYTHONPATH", str(site))
        slow = {"judge": {"name": "slow"}} if criterion == "plugin judge" else {"slowcheck": True}
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}, slow]})
    run_id = cut(rook_workspace, d, signal.SIGKILL)
    s = finish(rook_workspace, run_id)
    assert s["status"] == "passed"
    assert log(d) == ["execute 1 g"] + (["collect"] if "collect" in phases else [])


@pytest.mark.parametrize("broken", ["open", "execute:1"])
def test_a_split_run_still_closes_after_a_failure(rook_workspace, tmp_path, broken):
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("open", "execute", "close"))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / f"fail-{broken}").touch()
    first = subprocess.run(rook(rook_workspace, "--phases", "prepare,open,execute"),
                           capture_output=True, text=True, timeout=60)
    run_id = json.loads(first.stdout)["run"]["id"]
    assert json.loads(first.stdout)["scenarios"][0]["status"] == "pending"
    s = finish(rook_workspace, run_id, "--phases", "close,collect,judge")
    assert s["status"] == "error" and f"{broken} is down" in s["reason"]
    assert log(d)[-1] == "close"


def test_a_pending_runs_reason_says_what_is_still_to_run_after_a_partial_resume(rook_workspace,
                                                                                 tmp_path):
    """An interrupted scenario run resumed by a prefix of the phases is no longer
    interrupted: its reason says what is still to run, never the stale 'interrupted'."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("open", "execute", "close"))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    run_id = cut(rook_workspace, d, signal.SIGTERM)
    assert rook_workspace.record(run_id, "s.1")["reason"].startswith("interrupted; ")
    s = finish(rook_workspace, run_id, "--phases", "prepare,open,execute")
    assert s["status"] == "pending" and log(d)[-1] == "execute 1 g"
    assert s["reason"] == "not finished: close, collect, judge still to run", s["reason"]


def test_a_scenario_run_a_suffix_cannot_go_on_with_says_which_phases_must_run_first(
        rook_workspace, tmp_path):
    """--phases collect,judge on a run where one scenario run has closed and the
    other has not: the first goes on, the second stays pending, its reason (in
    the report and the record) naming the phase that must run first."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ("open", "execute", "close"))
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    first = subprocess.run(rook(ws, "--phases", "prepare,open,execute"),
                           capture_output=True, text=True, timeout=60)
    run_id = json.loads(first.stdout)["run"]["id"]
    subprocess.run(rook(ws, "--run", run_id, "--only", "b", "--phases",
                        "prepare,open,execute,close"), capture_output=True, timeout=60, check=True)
    out = subprocess.run(rook(ws, "--run", run_id, "--phases", "collect,judge"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    a, b = json.loads(out.stdout)["scenarios"]
    assert b["status"] == "passed" and a["status"] == "pending"
    assert a["reason"].startswith("phases close have not run for this scenario"), a["reason"]
    assert ws.record(run_id, "a.1")["reason"] == a["reason"]
    # a later invocation that does run it leaves no stale reason behind
    s = finish(ws, run_id)
    assert s["status"] == "passed" and s["reason"] == "1 criterion passed", s


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_turn_answered_before_the_interrupt_is_kept(rook_workspace, tmp_path, sig):
    """Turn 1's hook answered and exited, but a process it started holds its
    stdout open, so Rook is still reading when the signal comes: the answer is
    recorded, and a resume never sends turn 1 again."""
    ws, d = rook_workspace, tmp_path / "d"
    d.mkdir()
    ws.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        goal=$(cat)
        echo "{{\\"output\\": \\"ok $goal\\", \\"conversation\\": \\"c1\\"}}"
        if [ "$ROOK_TURN" = 1 ]; then sleep 300 & echo $! > {d}/child.pid; echo $$ > {d}/hook.pid; fi
        echo "execute $ROOK_TURN $goal" >> {d}/log
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["t1", "t2"], "criteria": [{"contains": "ok"}]})
    proc = subprocess.Popen(rook(ws), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        (d / "hook.pid").exists() and reaped(int((d / "hook.pid").read_text() or 0))
    ):
        time.sleep(0.01)
    os.kill(proc.pid, sig)  # within the wait for the stdout its child holds
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    run_id = json.loads(out)["run"]["id"]
    assert [t["output"] for t in ws.record(run_id, "s.1")["turns"]] == ["ok t1"]
    assert not alive(int((d / "child.pid").read_text()))  # what it started was killed
    s = finish(ws, run_id)
    assert s["status"] == "passed" and [t["output"] for t in s["turns"]] == ["ok t1", "ok t2"]
    assert log(d) == ["execute 1 t1", "execute 2 t2"]


def reaped(pid: int) -> bool:
    """Gone, not a zombie: Rook has seen its hook exit (a zombie, which alive()
    counts as dead, may not be seen yet: an interrupt then cuts the hook's call
    before its answer was read, which is another test)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def kill_rook_while_a_hook_hangs(ws, d, *args):
    """Start rook run, SIGKILL it once the blocked hook has written its pid; the
    hook's pid (it outlives rook)."""
    proc = subprocess.Popen(rook(ws, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_the_blocked_hook(d)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    return int((d / "hook.pid").read_text())


def resume_kills_what_it_left(ws, d, hung, killed):
    """``rook run --run ID`` after rook was SIGKILLed with ``hung`` running: the
    run finishes (passed), saying it killed ``killed`` processes, and they are gone."""
    assert alive(hung)  # it outlived rook
    (run_dir,) = ws.runs_dir.iterdir()
    (d / "fast-now").touch()
    out = subprocess.run(rook(ws, "--run", run_dir.name), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scenarios"][0]["status"] == "passed"
    assert f"killed {killed} process(es) an earlier rook run" in out.stderr, out.stderr
    assert gone_soon(hung)


def gone_soon(pid):
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def test_a_hook_left_running_by_a_killed_rook_is_killed_on_resume(rook_workspace, tmp_path):
    """rook run SIGKILLed while a hook hangs: nothing is left to enforce its
    timeout, so rook run --run ID (under the run's lock, owning its scenario
    runs) kills it, and says so."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    hung = kill_rook_while_a_hook_hangs(ws, d)
    try:
        assert alive(hung)  # it outlived rook
        (run_dir,) = ws.runs_dir.iterdir()
        (d / "fast-now").touch()
        # a new run leaves it alone: it is the killed run's (docs/running.md)
        new = subprocess.run(rook(ws), capture_output=True, text=True, timeout=120)
        assert new.returncode == 0 and "earlier rook run" not in new.stderr, new.stderr
        assert alive(hung)
        out = subprocess.run(rook(ws, "--run", run_dir.name), capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        assert "killed 2 process(es) an earlier rook run" in out.stderr  # the hook, its sleep
        assert gone_soon(hung)
    finally:
        kill_group(hung)


def test_a_judge_hook_left_running_by_a_killed_rook_is_killed_on_resume(rook_workspace, tmp_path):
    """The same for the judge profile's hook: rook run SIGKILLed while the judge
    hangs; the resume owns the scenario run, so it kills its judge too."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"], judge=True)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"rubric": "is fine"}]})
    (d / "block-judge").touch()
    hung = kill_rook_while_a_hook_hangs(ws, d, "--judge-profile", "grader")
    try:
        resume_kills_what_it_left(ws, d, hung, 1)
    finally:
        kill_group(hung)


def test_a_command_criterion_left_running_by_a_killed_rook_is_killed_on_resume(rook_workspace,
                                                                              tmp_path):
    """rook run SIGKILLed while a command: criterion runs: its program (which has
    no ROOK_* variable to be found by) kept running, and rook run --run ID
    started it again beside it. The resume now kills it, as it kills a hook."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    check = ws.script("check.sh", f"""
        #!/bin/bash
        echo started >> {d}/checks
        [ -e {d}/fast-now ] && exit 0
        echo $$ > {d}/hook.pid
        sleep 300
    """)
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"command": {"run": [str(check)]}}]})
    hung = kill_rook_while_a_hook_hangs(ws, d)
    try:
        resume_kills_what_it_left(ws, d, hung, 2)  # the program and its sleep
        assert (d / "checks").read_text().split() == ["started", "started"]
    finally:
        kill_group(hung)


def test_what_a_run_killed_midway_observed_stays_in_its_capabilities(rook_workspace, tmp_path):
    """The run's observed capabilities were written only when an invocation
    ended: a run SIGKILLed after a scenario run that made a tool call was
    recorded, then resumed, reported calls as never observed (a run not cut
    off reports them), though that scenario run's record shows them."""
    d = tmp_path / "d"
    d.mkdir()
    rook_workspace.script("agent.py", f"""
        #!/usr/bin/env python3
        import json, os, sys, time
        goal = sys.stdin.read()
        if goal == "slow" and not os.path.exists("{d}/fast-now"):
            open("{d}/hook.pid", "w").write(str(os.getpid()))
            time.sleep(300)
        calls = {{"calls": [{{"name": "lookup", "arguments": {{}}}}]}} if goal == "tool" else {{}}
        print(json.dumps({{"output": "ok", **calls}}))  # b reports no calls: not observed
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True}, "concurrency": 1})
    rook_workspace.scenario({"id": "a", "goal": "tool", "criteria": [{"called": "lookup"}]})
    rook_workspace.scenario({"id": "b", "goal": "slow", "criteria": [{"contains": "ok"}]})
    hung = kill_rook_while_a_hook_hangs(rook_workspace, d)
    kill_group(hung)
    (run_dir,) = rook_workspace.runs_dir.iterdir()
    assert rook_workspace.record(run_dir.name, "a.1")["observed"] == {"calls": True}
    shown = subprocess.run([sys.executable, "-m", "rook_core", "runs", "-w", str(rook_workspace.root),
                            "show", run_dir.name, "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(shown.stdout)["run"]["capabilities"]["observed"] == {"calls": True}
    (d / "fast-now").touch()
    out = subprocess.run(rook(rook_workspace, "--run", run_dir.name), capture_output=True,
                         text=True, timeout=120)
    report = json.loads(out.stdout)
    assert [s["status"] for s in report["scenarios"]] == ["passed", "passed"], out.stderr
    assert report["run"]["capabilities"]["observed"] == {"calls": True}
    assert json.loads((run_dir / "run.json").read_text())["capabilities"]["observed"] == {
        "calls": True
    }
    # and the profile's observed capabilities (rook profile show, rook doctor) have it too
    observed = rook_workspace.agent_dir / "profiles" / "p.observed.json"
    assert json.loads(observed.read_text()) == {"calls": True}


# -- a scenario run's seconds: the time Rook worked on it, never the time between invocations

GAP = 2.0  # between the invocations; each hook takes milliseconds


def junit_times(path):
    import xml.etree.ElementTree as ET

    return [float(c.get("time")) for c in ET.parse(path).getroot().iter("testcase")]


def seconds_everywhere(ws, run_id, junit):
    """The scenario run's seconds as the JSON report, JUnit and the report rebuilt from the records give it."""
    rebuilt = subprocess.run(
        [sys.executable, "-m", "rook_core", "report", "-w", str(ws.root), run_id, "--rebuild",
         "--json"], capture_output=True, text=True, timeout=60)
    assert rebuilt.returncode == 0, rebuilt.stderr
    (time_,) = junit_times(junit)  # JUnit's time has 3 decimals
    return json.loads(rebuilt.stdout)["scenarios"][0]["seconds"], time_


@pytest.mark.parametrize("collect", [True, False], ids=["collect", "judge-only"])
def test_a_split_runs_seconds_leave_out_the_time_between_its_invocations(rook_workspace, tmp_path,
                                                                        collect):
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ("prepare", "open", "execute", "close", "collect")[: 5 if collect else 4])
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    first = subprocess.run(rook(ws, "--phases", "prepare,open,execute,close"),
                           capture_output=True, text=True, timeout=60)
    report = json.loads(first.stdout)
    run_id = report["run"]["id"]
    assert report["scenarios"][0]["seconds"] < 1.5
    time.sleep(GAP)
    junit = tmp_path / "r.xml"
    s = finish(ws, run_id, "--phases", "collect,judge", "--report", f"junit:{junit}")
    assert s["status"] == "passed" and log(d)[-1] == ("collect" if collect else "close")
    assert 0 < s["seconds"] < 1.5
    assert seconds_everywhere(ws, run_id, junit) == (s["seconds"], round(s["seconds"], 3))
    record = ws.record(run_id, "s.1")
    assert record["ended"] - record["started"] >= GAP  # they still mean first hook .. last end


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_resumed_runs_seconds_leave_out_the_time_it_was_not_running(rook_workspace, tmp_path,
                                                                     sig):
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ("open", "execute"))
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    run_id = cut(ws, d, sig)
    time.sleep(GAP)
    junit = tmp_path / "r.xml"
    s = finish(ws, run_id, "--report", f"junit:{junit}")
    assert s["status"] == "passed" and log(d) == ["open", "execute 1 g", "execute 1 g"]
    assert 0 < s["seconds"] < 1.5
    assert seconds_everywhere(ws, run_id, junit) == (s["seconds"], round(s["seconds"], 3))


def test_a_record_written_without_its_seconds_still_reports_and_resumes(rook_workspace, tmp_path):
    """A record from before Rook kept a scenario run's seconds: its first
    invocation counts from its first hook to its end, as it was reported then."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ("prepare", "open", "execute", "close", "collect"))
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    first = subprocess.run(rook(ws, "--phases", "prepare,open,execute,close"),
                           capture_output=True, text=True, timeout=60)
    run_id = json.loads(first.stdout)["run"]["id"]
    path = ws.runs_dir / run_id / "scenarios" / "s.1.json"
    old = json.loads(path.read_text())
    old.pop("seconds", None)
    old["ended"] = old["started"] + 0.5  # a first invocation that took half a second
    path.write_text(json.dumps(old))
    rebuilt = subprocess.run(
        [sys.executable, "-m", "rook_core", "report", "-w", str(ws.root), run_id, "--rebuild",
         "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(rebuilt.stdout)["scenarios"][0]["seconds"] == 0.5
    time.sleep(GAP)
    s = finish(ws, run_id, "--phases", "collect,judge")
    assert s["status"] == "passed" and 0.5 < s["seconds"] < 1.5


def test_a_scenario_edited_between_two_invocations_says_what_judged_it(rook_workspace, tmp_path):
    """The criteria were edited between --phases prepare..close and --phases
    collect,judge: the verdicts were of the new ones, the record listed the old
    ones and their content hash, without a word."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    first = subprocess.run(rook(ws, "--phases", "prepare,open,execute,close"),
                           capture_output=True, text=True, timeout=120)
    report = json.loads(first.stdout)
    run_id, before = report["run"]["id"], report["scenarios"][0]["content_hash"]
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "goodbye"}]})
    got = finish(ws, run_id, "--phases", "collect,judge")
    assert [c["type"] for c in got["criteria"]] == ["contains"]
    assert got["status"] == "failed" and "goodbye" in got["criteria"][0]["reason"], got
    record = ws.record(run_id, "s.1")
    assert record["scenario"]["criteria"] == [{"contains": "goodbye"}]
    assert got["content_hash"] == record["scenario"]["content_hash"] != before
    assert any(f"criteria changed after this run started it (content hash {before} ->" in w
               for w in record["warnings"]), record.get("warnings")
    assert log(d) == ["execute 1 hi"]  # nothing sent again


def test_a_profile_edited_between_two_invocations_is_warned_of(rook_workspace, tmp_path):
    """The profile was edited between --phases prepare..close and --phases
    collect,judge: the resume used the file as it is now, and runs/ID/profile.yaml
    (the copy of the profile the run started with) kept the old text, without a word."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute", "collect"])
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})

    def split_run(edit):
        first = subprocess.run(rook(ws, "--phases", "prepare,open,execute,close"),
                               capture_output=True, text=True, timeout=120)
        run_id = json.loads(first.stdout)["run"]["id"]
        if edit:
            ws.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in ["execute", "collect"]},
                        "capabilities": {"multi_turn": True, "calls": True, "usage": True}})
        out = subprocess.run(rook(ws, "--run", run_id, "--phases", "collect,judge"),
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return run_id, out.stderr

    _, stderr = split_run(edit=False)
    assert "changed after" not in stderr, stderr  # unchanged: no word
    run_id, stderr = split_run(edit=True)
    assert (f"rook: warning: profile p ({ws.agent_dir / 'profiles' / 'p.yaml'}) changed after "
            f"run {run_id} started") in stderr, stderr
    assert "profile.yaml keeps the one it started with" in stderr, stderr


def test_a_scenario_removed_after_the_run_started_does_not_strand_the_others(
        rook_workspace, tmp_path):
    """A scenario file removed while a split run waited for collect,judge: the run
    could not be finished at all, not even the others with --only, whose evidence
    was left unjudged."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    for sid in ("s", "t"):
        ws.scenario({"id": sid, "goal": sid, "criteria": [{"contains": "ok"}]})
    first = subprocess.run(rook(ws, "--phases", "prepare,open,execute,close"),
                           capture_output=True, text=True, timeout=120)
    run_id = json.loads(first.stdout)["run"]["id"]
    (ws.agent_dir / "scenarios" / "t.yaml").unlink()
    refused = subprocess.run(rook(ws, "--run", run_id, "--phases", "collect,judge"),
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2, refused.stderr
    assert "scenario t of this run no longer exists" in refused.stderr
    assert "restore its file to finish it, or finish the others with --only s" in (
        refused.stderr)
    rest = subprocess.run(rook(ws, "--run", run_id, "--phases", "collect,judge", "--only", "s"),
                          capture_output=True, text=True, timeout=120)
    assert rest.returncode == 0, rest.stderr
    report = json.loads(rest.stdout)
    assert [(e["id"], e["status"]) for e in report["scenarios"]] == [
        ("s", "passed"), ("t", "pending")]
    assert log(d) == ["execute 1 s", "execute 1 t"]  # nothing sent again
    again = subprocess.run(rook(ws, "--run", run_id, "--only", "t"),
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "no longer exist" in again.stderr


def test_a_run_moved_with_its_workspace_names_where_it_is_now(rook_workspace, rook_cli, tmp_path,
                                                              monkeypatch):
    # A workspace copied or restored elsewhere (the runs folder kept between CI
    # jobs in another checkout, an archive unpacked on another machine): the
    # reports of its runs named the folder the run was made in, which is gone.
    # 'rook runs show', 'rook report' (JUnit's run_dir) and a resumed run's
    # report and manifest now name where the run is.
    import shutil
    import xml.etree.ElementTree as ET

    from rook_core.testing import Workspace

    rook_workspace.script("agent.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "env": [{"variable": "MOVE_KEY", "purpose": "a secret"}]})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    secret = "mv-5ecret-in-a-path"  # the folder it moves to holds it: still redacted
    monkeypatch.setenv("MOVE_KEY", secret)
    first = rook_cli("run", "--json", "--run-name", "moved", "--phases", "prepare,open,execute")
    assert first.statuses() == {"s": "pending"}, first.stderr
    old = rook_workspace.run_dir("moved")
    assert first.report["run"]["dir"] == str(old)
    there = Workspace(tmp_path / f"elsewhere-{secret}")
    shutil.copytree(rook_workspace.root, there.root, dirs_exist_ok=True)
    shutil.rmtree(rook_workspace.root)
    now = str(there.run_dir("moved")).replace(secret, "[redacted:MOVE_KEY]")
    shown = rook_cli("runs", "show", "moved", "-w", str(there.root))
    assert shown.exit_code == 0, shown.stderr
    assert f"run moved: {now}" in shown.stdout
    report = rook_cli("report", "moved", "-w", str(there.root), f"--report=junit:{tmp_path}/r.xml")
    assert report.exit_code == 0, report.stderr
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "r.xml").iter("property")}
    assert props["run_dir"] == now
    done = rook_cli("run", "--json", "--run", "moved", "-w", str(there.root))
    assert done.statuses() == {"s": "passed"}, done.stderr
    assert done.report["run"]["dir"] == now
    assert json.loads((there.run_dir("moved") / "run.json").read_text())["dir"] == now
    assert not rook_workspace.root.exists()  # nothing written where the run was made
    for r in (shown, report, done):
        assert secret not in r.stdout + r.stderr
    assert secret not in (tmp_path / "r.xml").read_text() + there.all_run_text("moved")


def test_a_finished_run_needs_no_file_of_a_scenario_removed_since(rook_workspace, rook_cli):
    # 'rook run --run ID' on a finished run (a reused --run-name: "runs nothing")
    # was refused (exit 2, "restore the file(s) to finish them") when a scenario
    # of the run had been removed since, though none of its runs had anything
    # left to finish. Only a removed scenario with unfinished runs needs its file.
    rook_workspace.script("agent.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("s", "t", "u"):
        rook_workspace.scenario({"id": sid, "goal": sid, "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json", "--run-name", "kept", "--only", "s,t")
    assert first.statuses() == {"s": "passed", "t": "passed"}, first.stderr
    (rook_workspace.agent_dir / "scenarios" / "t.yaml").unlink()
    again = rook_cli("run", "--json", "--run-name", "kept")
    assert again.exit_code == 0, again.stderr
    assert again.statuses() == {"s": "passed", "t": "passed"}  # t reported from its record
    # a removed scenario with a run still to finish is still refused
    split = rook_cli("run", "--json", "--run-name", "split", "--phases", "prepare,open,execute")
    assert split.statuses() == {"s": "pending", "u": "pending"}, split.stderr
    (rook_workspace.agent_dir / "scenarios" / "u.yaml").unlink()
    refused = rook_cli("run", "--json", "--run", "split")
    assert refused.exit_code == 2 and "scenario u of this run no longer exists" in (
        refused.stderr)


def test_a_finished_run_whose_every_scenario_file_is_gone_shows_its_results(
        rook_workspace, rook_cli):
    # With the file of every scenario of a finished run removed (a --run-name reused
    # after the scenarios were renamed), 'rook run --run ID' was refused: exit 2, "no
    # scenario of this run selected", as if a selector had matched none of it; and
    # '--only t', t one of its finished scenarios, "no scenario with id t". Neither
    # has anything left to run: its results are shown from its records, as with one
    # file left.
    rook_workspace.script("agent.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("s", "t"):
        rook_workspace.scenario({"id": sid, "goal": sid, "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json", "--run-name", "kept")
    assert first.statuses() == {"s": "passed", "t": "passed"}, first.stderr
    for sid in ("s", "t"):
        (rook_workspace.agent_dir / "scenarios" / f"{sid}.yaml").unlink()
    for only in ([], ["--only", "t"]):
        again = rook_cli("run", "--json", "--run-name", "kept", *only)
        assert again.exit_code == 0, again.stderr
        assert again.statuses() == {"s": "passed", "t": "passed"}, again.stderr
        assert "had nothing left to run" in again.stderr
    # a selector that matches none of the run is still refused
    other = rook_cli("run", "--json", "--run-name", "kept", "--only", "x")
    assert other.exit_code == 2 and "no scenario with id x" in other.stderr, other.stderr


def test_resuming_with_only_a_scenario_the_run_did_not_plan_says_so(rook_workspace, rook_cli):
    # 'rook run --run ID --only t', t a scenario of the agent the run never planned
    # (it was started with --only s), was told "--only: no scenario with id t
    # (scenarios: s)": t exists, and the list was the run's. It names the run
    # and says the run did not plan t, and what runs it.
    rook_workspace.script("agent.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("s", "t", "tea"):
        rook_workspace.scenario({"id": sid, "goal": sid, "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "--run-name", "one", "--only", "s,tea").exit_code == 0
    r = rook_cli("run", "--run-name", "one", "--only", "t")
    assert r.exit_code == 2, r.stderr
    assert r.stderr.startswith(
        "rook: error: --run-name one: --only t: this run did not plan scenario t (its "
        "scenarios: s, tea); a run finishes only what it planned: rook run without "
        "--run or --run-name runs it in a new run"), r.stderr
    # an id no scenario has is told the run's scenario it looks like
    r = rook_cli("run", "--run", "one", "--only", "s,te")
    assert r.exit_code == 2, r.stderr
    assert "rook: error: --run one: --only: this run has no scenario with id te (did you " \
           "mean tea?) (its scenarios: s, tea)\n" in r.stderr, r.stderr


def test_a_refused_resume_names_the_flag_that_named_the_run(rook_workspace, rook_cli):
    # 'rook run --run-name kept --tag x' on a finished run whose scenario files are
    # gone was refused as '--run kept: no scenario of this run selected (its scenarios:
    # s, t)': a flag never typed, and no word that the tags of files gone cannot match.
    rook_workspace.script("agent.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("s", "t"):
        rook_workspace.scenario(
            {"id": sid, "goal": sid, "tags": ["x"], "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "--run-name", "kept").exit_code == 0
    assert rook_cli("run", "--run-name", "Kept Too").exit_code == 0  # id Kept-Too-<hash>
    for sid in ("s", "t"):
        (rook_workspace.agent_dir / "scenarios" / f"{sid}.yaml").unlink()
    gone = (f"the files of s, t are gone from {rook_workspace.agent_dir / 'scenarios'}, "
            "so --tag cannot select them: --only selects by id")
    for given, named in ((["--run-name", "kept"], "--run-name kept: "),
                         (["--run", "kept"], "--run kept: "),
                         (["--run-name", "Kept Too"], "--run-name 'Kept Too' (run Kept-Too-")):
        r = rook_cli("run", *given, "--tag", "x")
        assert r.exit_code == 2, r.stderr
        assert f"rook: error: {named}" in r.stderr, r.stderr
        assert "no scenario of this run selected (its scenarios: s, t); " + gone in r.stderr
    # a scenario of an unfinished run gone: named by --run-name too
    rook_workspace.scenario({"id": "u", "goal": "u", "criteria": [{"contains": "ok"}]})
    split = rook_cli("run", "--run-name", "split", "--phases", "prepare,open,execute")
    assert split.exit_code in (0, 1), split.stderr
    (rook_workspace.agent_dir / "scenarios" / "u.yaml").unlink()
    r = rook_cli("run", "--run-name", "split")
    assert r.exit_code == 2 and "rook: error: --run-name split: scenario u of this run" in r.stderr


DELETED = object()


def test_a_run_whose_scenarios_folder_was_removed_is_finished_by_its_resume(rook_workspace):
    """A hook that removes its run's ``scenarios`` folder (a clean-up aimed one
    level too high) stops the run (its record cannot be written), and the message
    says to finish it with ``rook run --run ID``: that command makes the folder
    again and finishes it, rather than failing on the same missing folder."""
    ws = rook_workspace
    ws.script("agent.sh", '#!/bin/bash\n[ "$1" = execute ] || exit 0\ncat >/dev/null\n'
              '[ -e "$ROOK_WORKSPACE/gone" ] || { touch "$ROOK_WORKSPACE/gone"; '
              'rm -rf "$ROOK_STATE_DIR/../../scenarios"; }\necho \'{"output": "ok"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    first = subprocess.run(rook(ws), capture_output=True, text=True, timeout=60)
    assert first.returncode == 1 and "No such file or directory" in first.stderr, first.stderr
    assert "Traceback" not in first.stderr
    (run_dir,) = ws.runs_dir.iterdir()
    assert f"rook run --run {run_dir.name}" in first.stderr
    again = subprocess.run(rook(ws, "--run", run_dir.name), capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["scenarios"][0]["status"] == "passed"


@pytest.mark.parametrize(("key", "value"), [
    ("prepare", 5), ("capabilities", {"declared": 5, "observed": 5}), ("judge_profile", 5),
    ("id", 5),
    # a key Rook always writes, left out, and phases or prepare of another shape made it a
    # KeyError, ValueError or AttributeError traceback, exit 1 (found by test_fuzz_boundaries)
    *((k, DELETED) for k in ("project", "agent", "phases", "invocations", "capabilities")),
    ("phases", [1]), ("phases", ["nope"]), ("prepare", None), ("prepare", []),
])
def test_a_run_json_of_another_shape_is_refused_before_a_resume_runs(rook_workspace, rook_cli,
                                                                     key, value):
    # A run.json edited by hand with a prepare, capabilities, judge_profile or id
    # of another type made 'rook run --run ID' an AttributeError or TypeError
    # traceback; it is refused as any damaged manifest is (exit 2, nothing run).
    rook_workspace.script("agent.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json", "--run-name", "edited", "--phases", "prepare,open,execute")
    assert first.statuses() == {"s": "pending"}, first.stderr
    path = rook_workspace.run_dir("edited") / "run.json"
    data = json.loads(path.read_text())
    if value is DELETED:
        del data[key]
    else:
        data[key] = value
    path.write_text(json.dumps(data))
    r = rook_cli("run", "--run", "edited")
    assert r.exception is None, r.exception
    assert r.exit_code == 2 and f"{path}: not a run manifest rook can resume" in r.stderr, r.stderr
    assert rook_workspace.record("edited", "s.1")["status"] is None  # nothing run


def test_a_shard_cut_off_names_the_command_that_finishes_it(rook_workspace, tmp_path):
    """The reason stored for a scenario run cut off said 'rook run --run ID', with ID
    left as it is, and no --shard, which a shard not merged yet needs."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("open", "execute", "close"))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    run_id = cut(rook_workspace, d, signal.SIGINT, "--shard", "1/1", "--run-name", "ci")
    record = json.loads((rook_workspace.runs_dir / run_id / "scenarios" / "s.1.json").read_text())
    assert record["reason"] == (
        f"interrupted; rook run --run ci --shard 1/1 -w {rook_workspace.root} finishes it"), record


def test_the_printed_resume_command_finishes_a_run_made_with_workspace_project_and_agent(
        tmp_path):
    """In CI the workspace and the agent are often named on the command line
    (`rook run -w DIR --project P --agent A`, one of several): the command Rook
    prints to finish the run names them too, so it works as printed."""
    ws = tmp_path / "ws"
    rook = [sys.executable, "-m", "rook_core"]
    for project, agent in (("demo", "a1"), ("demo", "a2"), ("other", "b")):
        subprocess.run([*rook, "init", "--project", project, "--agent", agent, "--example",
                        "-w", str(ws)], check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = subprocess.run(
        [*rook, "run", "-w", str(ws), "--project", "demo", "--agent", "a2",
         "--phases", "prepare,open,execute"],
        cwd=elsewhere, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    (hint,) = [ln for ln in first.stderr.splitlines() if ln.startswith("resume with: ")]
    argv = shlex.split(hint.removeprefix("resume with: "))
    assert argv[0] == "rook"
    # a suffix that skips close is refused, naming a command that finishes the run as printed
    run_id = argv[argv.index("--run") + 1]
    hole = subprocess.run(
        [*rook, "run", "-w", str(ws), "--project", "demo", "--agent", "a2", "--run", run_id,
         "--phases", "judge"], cwd=elsewhere, capture_output=True, text=True, timeout=60)
    assert hole.returncode == 2 and "nothing run" in hole.stderr, hole.stderr
    finish_it = hole.stderr.split("Finish it with ", 1)[1].split(", or leave --phases out")[0]
    assert shlex.split(finish_it) == argv, (finish_it, hint)
    done = subprocess.run([*rook, *argv[1:], "--json"], cwd=elsewhere, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, (hint, done.stderr)
    assert json.loads(done.stdout)["summary"]["passed"] == 3


def test_rook_runs_show_names_the_workspace_project_and_agent_in_its_finish_command(tmp_path):
    ws = tmp_path / "ws"
    rook = [sys.executable, "-m", "rook_core"]
    for project, agent in (("demo", "a1"), ("demo", "a2"), ("other", "b")):
        subprocess.run([*rook, "init", "--project", project, "--agent", agent, "--example",
                        "-w", str(ws)], check=True, capture_output=True)
    where = ["-w", str(ws), "--project", "demo", "--agent", "a2"]
    first = subprocess.run([*rook, "run", *where, "--phases", "prepare,open,execute", "--json"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    run_id = json.loads(first.stdout)["run"]["id"]
    shown = subprocess.run([*rook, "runs", "show", run_id, *where], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    (hint,) = [ln for ln in shown.stderr.splitlines() if ln.startswith("finish it with: ")]
    argv = shlex.split(hint.removeprefix("finish it with: "))
    done = subprocess.run([*rook, *argv[1:], "--json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, (hint, done.stderr)
    assert json.loads(done.stdout)["summary"]["passed"] == 3


def test_the_stored_reason_of_a_run_cut_off_names_where_it_was_found(tmp_path, monkeypatch):
    """A scenario run cut off in a run made with -w, --project and --agent stored
    'interrupted; rook run --run ID finishes it': from anywhere but the workspace
    (rook runs show, a report read later) that command finds no run. The stored
    reason names the flags too, the workspace as an absolute path (it is read from
    anywhere), redacted as every stored text is."""
    from rook_core.testing import Workspace

    secret = "cut-5ecret-in-a-path"
    monkeypatch.setenv("CUT_KEY", secret)
    ws = Workspace(tmp_path / f"ws-{secret}", project="demo", agent="a2")
    Workspace(ws.root, project="demo", agent="a1")  # --agent is needed to pick a2
    d = tmp_path / "d"
    setup_agent(ws, d, ("open", "execute", "close"))
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "env": [{"variable": "CUT_KEY", "purpose": "a secret"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    rook = [sys.executable, "-m", "rook_core"]
    proc = subprocess.Popen([*rook, "run", "-w", f"../ws-{secret}", "--project", "demo",
                             "--agent", "a2", "--json"], cwd=here,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_the_blocked_hook(d)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    (d / "fast-now").touch()
    run_id = json.loads(out)["run"]["id"]
    root = str(ws.root).replace(secret, "[redacted:CUT_KEY]")
    expected = (f"interrupted; rook run --run {run_id} -w {root} --project demo --agent a2 "
                "finishes it")
    assert ws.record(run_id, "s.1")["reason"] == expected
    assert secret not in ws.all_run_text(run_id)
    # with the folder's name given as it is, the stored command finishes it from elsewhere
    argv = shlex.split(expected.removeprefix("interrupted; ").removesuffix(" finishes it"))
    argv[argv.index("-w") + 1] = str(ws.root)
    done = subprocess.run([*rook, *argv[1:], "--json"], cwd=there, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["scenarios"][0]["status"] == "passed"


def test_a_run_killed_keeps_the_definitions_it_planned_for_rook_diff(rook_workspace, rook_cli,
                                                                     tmp_path):
    """A run SIGKILLed before some of its scenario runs were recorded had no
    content hash for them (their stand-ins named only the scenario), so rook diff
    against it lost 'changed definition' for exactly those, resumed or not."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("open", "execute", "close"))
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "concurrency": 1})
    for sid in ("s", "t"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json", "--run-name", "before")
    assert first.statuses() == {"s": "passed", "t": "passed"}, first.stderr
    for sid in ("s", "t"):  # both change before the run that is killed
        rook_workspace.scenario({"id": sid, "goal": "new", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    proc = subprocess.Popen(rook(rook_workspace, "--run-name", "killed"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_the_blocked_hook(d)
    proc.kill()
    proc.communicate(timeout=60)
    os.killpg(int((d / "hook.pid").read_text()), signal.SIGKILL)
    (d / "fast-now").touch()
    for resumed in (False, True):
        if resumed:  # only s: t is still never recorded
            again = rook_cli("run", "--json", "--run", "killed", "--only", "s")
            assert again.statuses() == {"s": "passed", "t": "pending"}, again.stderr
        r = rook_cli("diff", "before", "killed", "--json")
        rows = {row["id"]: row["changes"] for row in json.loads(r.stdout)["scenarios"]}
        assert rows["t"] == ["changed definition", "not finished"], (resumed, rows)
        assert rows["s"][0] == "changed definition", (resumed, rows)


def test_diff_with_a_run_in_progress_says_so(rook_workspace, rook_cli, tmp_path):
    """rook diff of a run another rook run still held compared its scenario runs to
    come as 'not finished' (a regression, exit 1) without a word that the run was
    still running, where rook runs show and rook report say it is in progress."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("execute",))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    assert rook_cli("run", "--run-name", "before").exit_code == 0
    (d / "block-execute:1").touch()
    proc = subprocess.Popen(rook(rook_workspace, "--run-name", "busy"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_the_blocked_hook(d)
        for a, b in (("before", "busy"), ("busy", "before")):
            r = rook_cli("diff", a, b)
            said = f"rook: run busy is in progress (pid {proc.pid}); it is compared as"
            assert said in r.stderr, (a, b, r.stderr)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=60)
    assert "in progress" not in rook_cli("diff", "before", "busy").stderr


def test_a_report_of_a_run_in_progress_never_says_the_scenario_running_now_was_not_run(
        rook_workspace, rook_cli, tmp_path):
    """rook report (every format) and rook runs show of a run another rook run
    still held called the scenario run it was running 'pending: not run yet':
    no record says which one runs now, so one not recorded yet is said to be so,
    the run being in progress; once the run is cut off, it was not run."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("execute",))
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "concurrency": 1})
    for sid in ("s", "t"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    proc = subprocess.Popen(rook(rook_workspace, "--run-name", "busy"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = "not recorded yet: the run is in progress"
    try:
        wait_for_the_blocked_hook(d)
        files = [tmp_path / f"r.{fmt}" for fmt in ("junit", "markdown", "html")]
        assert rook_cli("report", "busy", *(f"--report={f.suffix[1:]}:{f}" for f in files)
                        ).exit_code == 0
        shown = [f.read_text() for f in files]
        shown += [rook_cli("report", "busy").stdout, rook_cli("runs", "show", "busy").stdout]
        report = rook_cli("report", "busy", "--json").report
        for out in shown:
            assert "not run yet" not in out, out
            assert said in out, out
        assert [(e["status"], e["reason"]) for e in report["scenarios"]] == [("pending", said)] * 2
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=60)
    report = rook_cli("report", "busy", "--json").report
    assert report["scenarios"][1]["reason"] == "not run yet", report["scenarios"]


def test_runs_show_of_a_run_in_progress_says_so_and_of_one_cut_off_prints_what_rook_run_did(
        rook_workspace, tmp_path):
    """rook runs show of a run another rook run still held said its scenario runs were
    pending and 'finish it with: rook run --run ID --phases ...', a command refused
    while the run is in use; it says the run is in progress. Once that run was cut
    off, rook run said 'finish it with: rook run --run ID' and rook runs show added
    '--phases open,execute,close,collect,judge': it prints what rook run printed."""
    d = tmp_path / "d"
    setup_agent(rook_workspace, d, ("open", "execute", "close"))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    proc = subprocess.Popen(rook(rook_workspace), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    wait_for_the_blocked_hook(d)
    (run_dir,) = rook_workspace.runs_dir.iterdir()
    show = [sys.executable, "-m", "rook_core", "runs", "show", run_dir.name,
            "-w", str(rook_workspace.root)]
    busy = subprocess.run(show, capture_output=True, text=True, timeout=60)
    assert busy.returncode == 0 and "PENDING" in busy.stdout, busy.stderr
    assert f"rook: run {run_dir.name} is in progress (pid {proc.pid})" in busy.stderr, busy.stderr
    assert "finish it with" not in busy.stderr, busy.stderr
    # the listing said 'incomplete (0/1 recorded)' of it, as of a run cut off
    listing = [sys.executable, "-m", "rook_core", "runs", "-w", str(rook_workspace.root)]
    listed = subprocess.run(listing, capture_output=True, text=True, timeout=60)
    (row,) = [ln for ln in listed.stdout.splitlines() if ln.startswith(run_dir.name)]
    assert "in progress (" in row and "incomplete" not in row, listed.stdout
    as_json = subprocess.run([*listing, "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(as_json.stdout)["runs"][0]["in_progress"] == f"pid {proc.pid}"
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    (printed,) = [ln for ln in err.splitlines() if ln.startswith("finish it with: ")]
    assert printed == f"finish it with: rook run --run {run_dir.name} -w {rook_workspace.root}"
    shown = subprocess.run(show, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "is in progress" not in shown.stderr, shown.stderr
    listed = subprocess.run(listing, capture_output=True, text=True, timeout=60)
    assert "incomplete" in listed.stdout and "in progress" not in listed.stdout, listed.stdout
    assert [ln for ln in shown.stderr.splitlines() if ln.startswith("finish it")] == [printed]


def test_rook_doctor_names_what_a_killed_rook_left_running(rook_workspace, tmp_path):
    """rook run SIGKILLed while a hook hangs: a new run leaves the hook alone (it
    is the killed run's), so nothing said it was there, running for ever. rook
    doctor now names the run and its processes, with the command that ends them;
    once the run is finished (which kills them), it names nothing."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    hung = kill_rook_while_a_hook_hangs(ws, d)
    doctor = [sys.executable, "-m", "rook_core", "doctor", "-w", str(ws.root)]
    try:
        (run_dir,) = ws.runs_dir.iterdir()
        out = subprocess.run(doctor, capture_output=True, text=True, timeout=120)
        assert out.returncode == 1, out.stdout + out.stderr
        assert f"run {run_dir.name} was killed before it could end its hooks" in out.stdout
        assert f"pid {hung} (agent.sh)" in out.stdout, out.stdout
        assert f"rook run --run {run_dir.name}" in out.stdout
        doc = json.loads(subprocess.run([*doctor, "--json"], capture_output=True, text=True,
                                        timeout=120).stdout)
        (finding,) = [f for f in doc["findings"] if run_dir.name in f["message"]]
        assert finding["status"] == "problem" and str(hung) in finding["message"]
        (d / "fast-now").touch()
        done = subprocess.run(rook(ws, "--run", run_dir.name), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert gone_soon(hung)
        out = subprocess.run(doctor, capture_output=True, text=True, timeout=120)
        assert run_dir.name not in out.stdout and out.returncode == 0, out.stdout
    finally:
        kill_group(hung)


def test_temporary_files_a_killed_rook_left_are_named_by_doctor_and_removed_on_resume(
        rook_workspace, tmp_path):
    """rook run SIGKILLed while it writes a record or report.json leaves the hidden
    temporary file (.NAME.PID.tmp) it was writing: no reader takes it for a record,
    but nothing removed it either (one of report.json is as large as the report),
    not even the resume. Now rook doctor names them (with the rm that removes them)
    and the resume removes them: those whose PID no process has any more; one whose
    writer still lives (here the test itself) is left alone."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    hung = kill_rook_while_a_hook_hangs(ws, d)
    try:
        (run_dir,) = ws.runs_dir.iterdir()
        gone = subprocess.Popen(["true"])
        gone.wait()  # a PID no process has now: the killed writer's
        left = [run_dir / f".report.json.{gone.pid}.tmp", run_dir / f".run.json.{gone.pid}.tmp",
                run_dir / "scenarios" / f".s.1.json.{gone.pid}.tmp"]
        for path in left:
            path.write_text('{"half": ')
        live = run_dir / f".report.json.{os.getpid()}.tmp"
        live.write_text("{")
        doctor = [sys.executable, "-m", "rook_core", "doctor", "-w", str(ws.root)]
        out = subprocess.run(doctor, capture_output=True, text=True, timeout=120).stdout
        assert f"run {run_dir.name}: 3 temporary file(s)" in out, out
        fix = out.split(f"run {run_dir.name}: 3 temporary file(s)")[1]
        assert all(shlex.quote(str(p)) in fix for p in left) and str(live) not in out, out
        (d / "fast-now").touch()
        done = subprocess.run(rook(ws, "--run", run_dir.name), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert not any(p.exists() for p in left)
        assert live.exists()  # its writer lives
        live.unlink()
        out = subprocess.run(doctor, capture_output=True, text=True, timeout=120).stdout
        assert "temporary file" not in out, out
    finally:
        kill_group(hung)


def test_a_run_being_resumed_is_reported_as_recorded_now_not_as_its_last_report_json(
        rook_workspace, tmp_path):
    """rook report ID (and rook runs show, rook diff) of a run that rook run --run ID
    is resuming showed the report.json its earlier invocation wrote: a scenario run
    the resume had finished meanwhile still pending there. While the run is being
    resumed, it is shown from its records, as a run in its first invocation is."""
    ws = rook_workspace
    gate = tmp_path / "go"
    ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\ncat >/dev/null\n"
              f"[ $ROOK_SCENARIO_ID = b ] && while [ ! -e {gate} ]; do sleep 0.1; done\n"
              "echo '{\"output\": \"ok\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    first = subprocess.run(rook(ws, "--phases", "prepare,open"), capture_output=True,
                           text=True, timeout=120)
    run_id = json.loads(first.stdout)["run"]["id"]
    resume = subprocess.Popen(rook(ws, "--run", run_id), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        record = ws.runs_dir / run_id / "scenarios" / "a.1.json"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and json.loads(record.read_text()).get("status") != "passed":
            time.sleep(0.1)
        shown = subprocess.run([sys.executable, "-m", "rook_core", "report", "-w", str(ws.root),
                                run_id, "--json"], capture_output=True, text=True, timeout=120)
        statuses = {e["id"]: e["status"] for e in json.loads(shown.stdout)["scenarios"]}
        assert statuses == {"a": "passed", "b": "pending"}, statuses
        table = subprocess.run([sys.executable, "-m", "rook_core", "runs", "show", "-w",
                                str(ws.root), run_id], capture_output=True, text=True, timeout=120)
        assert "1 passed, 1 pending" in table.stdout, table.stdout
        assert f"run {run_id} is in progress (pid {resume.pid})" in table.stderr, table.stderr
    finally:
        gate.touch()
        out, err = resume.communicate(timeout=120)
    assert resume.returncode == 0, err
    shown = subprocess.run([sys.executable, "-m", "rook_core", "report", "-w", str(ws.root),
                            run_id, "--json"], capture_output=True, text=True, timeout=120)
    assert json.loads(shown.stdout)["summary"]["passed"] == 2


def test_rook_doctor_s_command_for_a_killed_run_finds_it_among_several_agents(
        rook_workspace, tmp_path):
    """In a workspace of several projects, the command rook doctor gave to end what
    a killed run left (rook run --run ID -w WS) was refused: 'several projects
    (other, proj); choose one with --project'. It names the run's project and
    agent, and works as printed."""
    from rook_core.testing import Workspace

    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    other = Workspace(ws.root, "other", "helper")
    other.script("a.sh", "#!/bin/sh\necho '{\"output\": \"ok\"}'\n")
    other.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    (d / "block-execute:1").touch()
    hung = kill_rook_while_a_hook_hangs(ws, d, "--project", "proj", "--agent", "agent")
    try:
        (run_dir,) = ws.runs_dir.iterdir()
        doc = json.loads(subprocess.run(
            [sys.executable, "-m", "rook_core", "doctor", "-w", str(ws.root), "--json"],
            capture_output=True, text=True, timeout=120).stdout)
        (finding,) = [f for f in doc["findings"] if run_dir.name in f["message"]]
        command = finding["fix"].split(" kills them")[0]
        assert command.startswith(f"rook run --run {run_dir.name} "), finding
        (d / "fast-now").touch()
        done = subprocess.run([sys.executable, "-m", "rook_core", *shlex.split(command)[1:]],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert gone_soon(hung)
    finally:
        kill_group(hung)


def test_rook_doctor_reads_the_process_table_once_for_every_agent(rook_workspace, tmp_path):
    """rook doctor looked for a killed run's leftovers agent by agent, each time
    reading every process's environment in /proc: in a workspace of many agents on a
    busy machine, as many walks as agents. One walk now serves them all (counted by
    strace: the opens of /proc itself), and a killed run is still named under its
    own agent, none under the others."""
    import shutil

    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    from rook_core.testing import Workspace

    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    for name in ("second", "third"):
        other = Workspace(ws.root, "proj", name)
        other.script("a.sh", "#!/bin/sh\necho '{\"output\": \"ok\"}'\n")
        other.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    (d / "block-execute:1").touch()
    hung = kill_rook_while_a_hook_hangs(ws, d, "--agent", "agent")
    trace = tmp_path / "trace"
    try:
        (run_dir,) = ws.runs_dir.iterdir()
        out = subprocess.run(
            ["strace", "-f", "-e", "trace=openat", "-o", str(trace), sys.executable, "-m",
             "rook_core", "doctor", "-w", str(ws.root), "--json"],
            capture_output=True, text=True, timeout=120)
        if not trace.is_file() or "PTRACE" in out.stderr or "ptrace" in out.stderr:
            pytest.skip(f"strace cannot trace here: {out.stderr[-300:]}")
        doc = json.loads(out.stdout)
        found = [f for f in doc["findings"] if run_dir.name in f["message"]]
        assert [f["subject"] for f in found] == ["proj/agent"], doc["findings"]
        walks = [ln for ln in trace.read_text().splitlines()
                 if '"/proc"' in ln and "O_DIRECTORY" in ln]
        assert len(walks) == 1, walks
    finally:
        (d / "fast-now").touch()
        kill_group(hung)


def test_rook_doctor_leaves_alone_the_hooks_of_a_run_that_is_running(rook_workspace, tmp_path):
    """A run in progress holds its lock: its hooks are no leftovers, and doctor
    names none."""
    ws, d = rook_workspace, tmp_path / "d"
    setup_agent(ws, d, ["execute"])
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (d / "block-execute:1").touch()
    proc = subprocess.Popen(rook(ws), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_the_blocked_hook(d)
        out = subprocess.run([sys.executable, "-m", "rook_core", "doctor", "-w", str(ws.root)],
                             capture_output=True, text=True, timeout=120)
        assert "was killed before it could end its hooks" not in out.stdout, out.stdout
        assert out.returncode == 0, out.stdout
    finally:
        (d / "fast-now").touch()
        kill_group(int((d / "hook.pid").read_text()))
        proc.communicate(timeout=60)


CLEARS_ITS_ENVIRONMENT = r"""#!/bin/bash
[ "$1" = execute ] || exit 0
cat >/dev/null
if [ -e {d}/fast-now ]; then echo '{{"output": "ok"}}'; exit 0; fi
env -i /bin/sleep 300 &
echo $! > {d}/clean.pid
sleep 300 &
echo $! > {d}/marked.pid
echo $$ > {d}/hook.pid
wait
"""


def test_what_a_killed_run_s_hook_started_with_a_clean_environment_is_named_and_killed(
        rook_workspace, tmp_path):
    """rook run SIGKILLed while a hook hangs that had started a process with a clean
    environment (env -i, as a Node spawn with env: {} or a Python subprocess with
    env={} does), in its own session: rook doctor named the hook and what carried
    the run's variables, never that one, and its fix 'or kill PIDS' left it
    running; once the hook itself was gone, rook run --run ID left it running too.
    Found now by its session, which the hook started: named and killed."""
    ws, d = rook_workspace, tmp_path / "d"
    d.mkdir()
    ws.script("agent.sh", CLEARS_ITS_ENVIRONMENT.format(d=d))
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    hung = kill_rook_while_a_hook_hangs(ws, d)
    clean, marked = (int((d / f"{n}.pid").read_text()) for n in ("clean", "marked"))
    doctor = [sys.executable, "-m", "rook_core", "doctor", "-w", str(ws.root)]
    try:
        (run_dir,) = ws.runs_dir.iterdir()
        out = subprocess.run(doctor, capture_output=True, text=True, timeout=120).stdout
        assert f"run {run_dir.name} was killed before it could end its hooks: 3 " in out, out
        assert f"pid {clean} (sleep)" in out and f"pid {hung} (agent.sh)" in out, out
        # the hook itself gone (killed alone): what it started is still the run's
        os.kill(hung, signal.SIGKILL)
        assert gone_soon(hung)
        out = subprocess.run(doctor, capture_output=True, text=True, timeout=120).stdout
        assert f"pid {clean} (sleep)" in out and f"pid {marked} (sleep)" in out, out
        (d / "fast-now").touch()
        done = subprocess.run(rook(ws, "--run", run_dir.name), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert "killed 2 process(es) an earlier rook run" in done.stderr, done.stderr
        assert gone_soon(clean) and gone_soon(marked)
    finally:
        for pid in (hung, clean, marked):
            kill_group(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
