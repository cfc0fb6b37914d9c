"""The slow criteria of one scenario (judge profile, plugin judges and criterion
types) are judged together; verdicts and records stay in the scenario's order."""

from __future__ import annotations

import json

# Plain ``meet`` criteria (third-party: each in a thread) pass only when the other
# one is being judged at the same time; async ``gather`` judges likewise. Judged one
# after another, the first waits in vain and both fail.
MEETING = """
import asyncio
import threading
from pathlib import Path

from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import FAILED, PASSED, Verdict

MET = threading.Barrier(2, timeout=5)
ARRIVED = []


class Meet(CriterionType):
    name = "meet"
    timeout_seconds = 20

    def evaluate(self, config, view):
        try:
            MET.wait()
        except threading.BrokenBarrierError:
            return Verdict(FAILED, f"meet {config}: judged alone")
        return Verdict(PASSED, f"meet {config}: judged with the other")


class Made(CriterionType):
    name = "made"

    def evaluate(self, config, view):
        found = (view.judging.workspace / config).exists()
        return Verdict(PASSED if found else FAILED, f"{config} {'is' if found else 'is not'} there")


class Gather:
    timeout_seconds = 20

    async def __call__(self, config, view):
        ARRIVED.append(config["n"])
        for _ in range(500):
            if len(ARRIVED) >= 2:
                return Verdict(PASSED, f"gather {config['n']}: judged with the other")
            await asyncio.sleep(0.01)
        return Verdict(FAILED, f"gather {config['n']}: judged alone")


@hookimpl
def rook_register_criteria(register):
    register(Meet())
    register(Made())


@hookimpl
def rook_register_judges(register):
    register("gather", Gather())
"""


def agent(ws, criteria, **profile):
    ws.script("a.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "refund issued"}\'\n'
                      "exit 0\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}, **profile})
    ws.scenario({"id": "s", "goal": "g", "criteria": criteria})


def test_slow_criteria_of_a_scenario_are_judged_together_in_their_order(
    rook_distribution, rook_workspace, rook_cli
):
    """Two plugin criteria and two plugin judges of one scenario were judged one
    after another: two that hang took twice their timeout. They are judged at
    once; the built-in criteria between them, verdicts and records keep the
    scenario's order."""
    rook_distribution("rook-meeting", {"meeting": "rook_meeting"}, {"rook_meeting.py": MEETING})
    agent(rook_workspace, [
        {"meet": 1},
        {"contains": "refund"},
        {"judge": {"name": "gather", "n": 1}},
        {"id": "no-sorry", "not_contains": "sorry"},
        {"meet": 2},
        {"judge": {"name": "gather", "n": 2}},
        {"contains": "Monday"},
    ])
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and "Traceback" not in r.stderr, r.stderr
    criteria = r.report["scenarios"][0]["criteria"]
    assert [(c["type"], c["status"], c["reason"]) for c in criteria] == [
        ("meet", "passed", "meet 1: judged with the other"),
        ("contains", "passed", "found 'refund' in 'refund issued'"),
        ("judge", "passed", "gather 1: judged with the other"),
        ("not_contains", "passed", "did not find 'sorry' in 'refund issued'"),
        ("meet", "passed", "meet 2: judged with the other"),
        ("judge", "passed", "gather 2: judged with the other"),
        ("contains", "failed", "did not find 'Monday' in 'refund issued'"),
    ]
    stored = rook_workspace.record(r.report["run"]["id"], "s.1")
    assert [c["index"] for c in stored["criteria"]] == list(range(7))
    assert stored["criteria"][3]["id"] == "no-sorry"
    assert stored["status"] == "failed"
    assert stored["reason"] == (
        "1 criterion failed: did not find 'Monday' in 'refund issued'"
    )


def test_a_scenario_that_checks_the_workspace_is_judged_in_order(
    rook_distribution, rook_workspace, rook_cli
):
    """A ``command`` may make what a later criterion reads: a scenario with a
    workspace criterion is judged one criterion after another, as written."""
    rook_distribution("rook-meeting", {"meeting": "rook_meeting"}, {"rook_meeting.py": MEETING})
    agent(rook_workspace, [
        {"command": "sleep 0.5 && touch made.txt"},
        {"made": "made.txt"},
        {"made": "made.txt"},
    ])
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    reasons = [c["reason"] for c in r.report["scenarios"][0]["criteria"]]
    assert reasons[1:] == ["made.txt is there", "made.txt is there"]


# A judge profile's execute: it passes when another judgement of the same
# scenario is under way at the same time (both mark a folder and wait for two marks).
MEETING_JUDGE = """
    #!/usr/bin/env python3
    import json, os, sys, time
    if sys.argv[1] != "execute":
        sys.exit(0)
    sys.stdin.read()
    folder = os.environ["JUDGE_MEET"]
    open(os.path.join(folder, str(os.getpid())), "w").close()
    for _ in range(500):
        if len(os.listdir(folder)) >= 2:
            break
        time.sleep(0.01)
    met = len(os.listdir(folder)) >= 2
    print(json.dumps({"output": json.dumps({"pass": met, "reason": "met" if met else "alone"})}))
"""


def test_rubrics_of_a_scenario_reach_the_judge_profile_together(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """Two rubrics waited for each other's judgement, however many the judge
    profile's ``concurrency`` allowed; each keeps its own judge record."""
    meet = tmp_path / "meet"
    meet.mkdir()
    monkeypatch.setenv("JUDGE_MEET", str(meet))
    agent(rook_workspace, [{"rubric": "says refund"}, {"contains": "refund"},
                           {"rubric": "is polite"}])
    rook_workspace.script("judge.py", MEETING_JUDGE)
    rook_workspace.profile(
        {"id": "grader", "hooks": {"execute": "scripts/judge.py"}, "concurrency": 2},
        active=False,
    )
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stderr
    criteria = r.report["scenarios"][0]["criteria"]
    assert [(c["type"], c["status"]) for c in criteria] == [
        ("rubric", "passed"), ("contains", "passed"), ("rubric", "passed")]
    prompts = [c["evidence"]["judge"]["prompt"] for c in (criteria[0], criteria[2])]
    assert "says refund" in prompts[0] and "is polite" in prompts[1]
    assert json.loads(json.dumps(criteria[0]["evidence"]["judge"]["answer"])) == {
        "pass": True, "reason": "met"}


ASKING = """
from rook_core.hookspecs import hookimpl
from rook_core.models import ERROR, FAILED, PASSED, Verdict


class Asker:
    timeout_seconds = 4

    async def __call__(self, config, view):
        answer = await view.judging.client.ask(f"judge {config['n']}", view.scenario)
        if not answer.ok:
            return Verdict(ERROR, answer.diagnosis)
        return Verdict(PASSED if answer.passed else FAILED, f"asked {config['n']}")


@hookimpl
def rook_register_judges(register):
    register("asker", Asker())
"""

SLOW_JUDGE = """#!/bin/bash
[ "$1" = execute ] || { echo '{}'; exit 0; }
cat > /dev/null
sleep 1.5
echo '{"output": "{\\"pass\\": true, \\"reason\\": \\"fine\\"}"}'
"""


def test_waiting_for_a_judge_profile_slot_is_not_judging_time(
    rook_distribution, rook_workspace, rook_cli
):
    """Plugin judges judged together that ask a judge profile of concurrency 1 took
    turns at it: the wait for its slot counted toward each judge's own
    timeout_seconds, so the fourth, after three judgements of 1.5 s before it,
    'gave no verdict within 4 s' though its own judgement took 1.5 s. A timeout
    bounds the judging, not the queueing: each judge passes."""
    rook_distribution("rook-asker", {"asker": "rook_asker"}, {"rook_asker.py": ASKING})
    agent(rook_workspace, [{"judge": {"name": "asker", "n": n}} for n in range(4)])
    rook_workspace.script("slow-judge.sh", SLOW_JUDGE)
    rook_workspace.profile(
        {"id": "grader", "hooks": {"execute": "scripts/slow-judge.sh"}, "concurrency": 1},
        active=False,
    )
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    criteria = r.report["scenarios"][0]["criteria"]
    assert [(c["status"], c["reason"]) for c in criteria] == [
        ("passed", f"asked {n}") for n in range(4)], criteria
    assert r.exit_code == 0, r.stderr


def test_the_judge_profile_s_prepare_is_not_a_judge_s_judging_time(
    rook_distribution, rook_workspace, rook_cli
):
    """The judge profile's prepare (once a run, with a timeout of its own: a
    sign-in) ran inside the first judge's timeout_seconds, and every judge asking
    meanwhile waited for it inside its own: a prepare of 3 s and judgements of
    1.5 s made judges of 4 s give no verdict. Not judging: not counted."""
    rook_distribution("rook-asker", {"asker": "rook_asker"}, {"rook_asker.py": ASKING})
    agent(rook_workspace, [{"judge": {"name": "asker", "n": n}} for n in range(2)])
    rook_workspace.script("slow-judge.sh", SLOW_JUDGE.replace(
        "[ \"$1\" = execute ]", "[ \"$1\" = prepare ] && sleep 3\n[ \"$1\" = execute ]"))
    rook_workspace.profile(
        {"id": "grader", "concurrency": 2,
         "hooks": {"prepare": "scripts/slow-judge.sh", "execute": "scripts/slow-judge.sh"}},
        active=False,
    )
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    criteria = r.report["scenarios"][0]["criteria"]
    assert [(c["status"], c["reason"]) for c in criteria] == [
        ("passed", f"asked {n}") for n in range(2)], criteria
    assert r.exit_code == 0, r.stderr


IMPATIENT = """
import asyncio

from rook_core.hookspecs import hookimpl
from rook_core.models import ERROR, PASSED, Verdict


class Impatient:
    async def __call__(self, config, view):
        try:  # its own bound on the judge profile, shorter than its prepare
            answer = await asyncio.wait_for(view.judging.client.ask("now", view.scenario), 0.5)
        except asyncio.TimeoutError:
            return Verdict(ERROR, "gave up waiting")
        return Verdict(PASSED if answer.ok else ERROR, answer.diagnosis or "judged")


class Patient:
    async def __call__(self, config, view):
        await asyncio.sleep(1)  # asks once the impatient one gave up
        answer = await view.judging.client.ask("later", view.scenario)
        return Verdict(PASSED if answer.ok else ERROR, answer.diagnosis or "judged")


@hookimpl
def rook_register_judges(register):
    register("impatient", Impatient())
    register("patient", Patient())
"""


def test_a_prepare_cut_off_by_a_judge_that_gave_up_is_run_again_for_the_next(
    rook_distribution, rook_workspace, rook_cli, tmp_path
):
    """A judge that bounds its own ask (asyncio.wait_for) and gives up while the
    judge profile's prepare runs cancels that prepare; the prepare was taken as
    done all the same, so every later judgement ran without it ('execute failed:
    ... not signed in'). A prepare cut off is not done: the next judgement runs it."""
    rook_distribution("rook-impatient", {"impatient": "rook_impatient"},
                      {"rook_impatient.py": IMPATIENT})
    agent(rook_workspace, [{"judge": {"name": "impatient"}}, {"judge": {"name": "patient"}}])
    signed_in = tmp_path / "signed-in"
    rook_workspace.script("judge.sh", f"""#!/bin/bash
if [ "$1" = prepare ]; then sleep 2; touch {signed_in}; echo '{{}}'; exit 0; fi
[ "$1" = execute ] || {{ echo '{{}}'; exit 0; }}
cat > /dev/null
[ -e {signed_in} ] || {{ echo 'not signed in' >&2; exit 1; }}
echo '{{"output": "{{\\"pass\\": true, \\"reason\\": \\"fine\\"}}"}}'
""")
    rook_workspace.profile(
        {"id": "grader", "concurrency": 2,
         "hooks": {"prepare": "scripts/judge.sh", "execute": "scripts/judge.sh"}},
        active=False,
    )
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    criteria = r.report["scenarios"][0]["criteria"]
    assert [(c["status"], c["reason"]) for c in criteria] == [
        ("error", "gave up waiting"), ("passed", "judged")], criteria
