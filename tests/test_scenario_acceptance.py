"""SPEC §6 held sentence by sentence where no other test holds it: the scenario
status a mix of criterion verdicts gives (and the reason naming what decided it),
repeats whose runs differ only by an unverifiable one, judges answering outside
the contract, a plugin judge installed through its entry point, and the public
Rook CLI's scenario fields not held elsewhere. Real hooks, the real command."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import Verdict

# Answers with the JSON object the goal holds (the turn's text, for several turns).
MIRROR = """
    #!/usr/bin/env python3
    import json, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    print(json.dumps(json.loads(sys.stdin.read())))
"""

SAID_HELLO = json.dumps({"output": "hello"})  # no calls: could not observe them
NO_COMMAND = {"command": {"run": ["/nonexistent/rook-no-such-program"]}}  # cannot start: error


@pytest.fixture
def ws(rook_workspace):
    rook_workspace.script("mirror.py", MIRROR)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/mirror.py"},
                            "capabilities": {"calls": True, "usage": True,
                                             "multi_turn": True}})
    return rook_workspace


MIXES = [
    # (criteria, scenario status, criterion statuses): the scenario is failed when a
    # criterion failed, else error when one errored, else unverifiable when one could
    # not be verified -- never a pass
    ([{"contains": "bye"}, {"not_called": "x"}], "failed", ["failed", "unverifiable"]),
    ([{"contains": "hello"}, {"not_called": "x"}], "unverifiable", ["passed", "unverifiable"]),
    ([{"contains": "bye"}, NO_COMMAND], "failed", ["failed", "error"]),
    ([{"not_called": "x"}, NO_COMMAND], "error", ["unverifiable", "error"]),
    ([NO_COMMAND, {"contains": "bye"}, {"not_called": "x"}], "failed",
     ["error", "failed", "unverifiable"]),
    ([{"contains": "hello"}], "passed", ["passed"]),
]


NODE_MIRROR = """
    import { readFileSync } from "node:fs";
    if (process.argv[2] === "execute") {
      process.stdout.write(JSON.stringify(JSON.parse(readFileSync(0, "utf8"))));
    }
"""


@pytest.mark.parametrize("lang", ["python", "node"])
def test_the_scenario_status_of_each_mix_of_verdicts(ws, rook_cli, lang):
    if lang == "node":  # the same answers from a Node hook, started by its extension
        ws.script("mirror.mjs", NODE_MIRROR, executable=False)
        ws.profile({"id": "p", "hooks": {"execute": "scripts/mirror.mjs"},
                    "capabilities": {"calls": True, "usage": True}})
    for i, (criteria, _, _) in enumerate(MIXES):
        ws.scenario({"id": f"m{i}", "goal": SAID_HELLO, "criteria": criteria})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    got = {s["id"]: (s["status"], [c["status"] for c in s["criteria"]])
           for s in r.report["scenarios"]}
    assert got == {f"m{i}": (status, each) for i, (_, status, each) in enumerate(MIXES)}
    summary = r.report["summary"]
    assert (summary["passed"], summary["failed"], summary["error"],
            summary["unverifiable"]) == (1, 3, 1, 1)
    assert summary["decided"] == 5 and summary["pass_rate"] == 0.2  # unverifiable: not decided


def test_a_failed_scenarios_reason_also_names_a_criterion_that_errored(ws, rook_cli):
    """A scenario with one failed and one errored criterion gave as its reason the
    failure alone ('1 criterion failed: ...'): a reader of the table, the JUnit
    message or the Markdown row never learnt that a criterion could not be judged
    at all (a command that could not start, a judge that broke), which fixing the
    failure alone would not cure. The reason names both, the failure first."""
    ws.scenario({"id": "both", "goal": SAID_HELLO,
                 "criteria": [NO_COMMAND, {"contains": "bye"}, {"not_called": "x"}]})
    r = rook_cli("run", "--json")
    (s,) = r.report["scenarios"]
    assert s["status"] == "failed"
    failed, errored = s["criteria"][1]["reason"], s["criteria"][0]["reason"]
    assert s["reason"] == f"1 criterion failed: {failed}; 1 criterion error: {errored}", s["reason"]
    assert "unverifiable" not in s["reason"]


def test_runs_that_differ_only_by_an_unverifiable_one_are_flaky_and_never_all_passed(
        ws, rook_cli):
    """SPEC §6: each run of a repeat is recorded; the report gives passes/N, pass^N, a
    95 % Wilson interval (of the decided runs) and marks the scenario flaky when the
    results differ -- an unverifiable run among passes is a different result, and
    never counted as a pass."""
    ws.script("turns.py", """
        #!/usr/bin/env python3
        # answers the repeat's next kind: P (passes), U (no call log), F (fails)
        import json, os, sys
        if sys.argv[1] != "execute":
            sys.exit(0)
        kinds = json.loads(sys.stdin.read())
        count = os.path.join(os.environ["ROOK_RUN_STATE_DIR"], os.environ["ROOK_SCENARIO_ID"])
        n = int(open(count).read()) if os.path.exists(count) else 0
        open(count, "w").write(str(n + 1))
        kind = kinds[n % len(kinds)]
        answer = {"output": "nope" if kind == "F" else "hello"}
        if kind != "U":
            answer["calls"] = []
        print(json.dumps(answer))
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/turns.py"},
                "capabilities": {"calls": True}})
    checks = [{"contains": "hello"}, {"not_called": "x"}]
    for sid, kinds in (("pup", "PUP"), ("ppp", "P"), ("fff", "F"), ("pff", "PFF")):
        ws.scenario({"id": sid, "goal": json.dumps(list(kinds)), "repeat": 5,
                     "criteria": checks})
    r = rook_cli("run", "--json", "--concurrency", "1", "--repeat", "3")  # overrides repeat: 5
    assert r.exit_code == 1, r.stderr
    by = {b["id"]: b for b in r.report["summary"]["by_scenario"]}
    got = {sid: (b["statuses"], b["passed"], b["decided"], b["pass_rate"], b["pass_all"],
                 b["pass_any"], b["wilson"], b["flaky"]) for sid, b in by.items()}
    assert got == {
        "pup": (["passed", "unverifiable", "passed"], 2, 2, 1.0, False, True, wilson(2, 2),
                True),
        "ppp": (["passed"] * 3, 3, 3, 1.0, True, True, wilson(3, 3), False),
        "fff": (["failed"] * 3, 0, 3, 0.0, False, False, wilson(0, 3), False),
        "pff": (["passed", "failed", "failed"], 1, 3, 0.3333, False, True, wilson(1, 3), True),
    }
    assert [s["repeat_index"] for s in r.report["scenarios"] if s["id"] == "pup"] == [1, 2, 3]
    # the repeats table: passes/N counts every planned run (2/3, never 2/2), pass^N no
    shown = rook_cli("runs", "show", r.report["run"]["id"]).stdout
    row = [ln.split() for ln in shown.splitlines() if ln.startswith("pup ")][-1]
    assert row == ["pup", "2/3", "no", "yes", "100.0%", "34–100%", "FLAKY"], shown


def wilson(k, n, z=1.959963984540054):
    """The 95 % Wilson score interval, from its formula, rounded as reports round it."""
    import math

    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(centre - half, 0.0), 4), round(min(centre + half, 1.0), 4)]


class _Judge(BaseHTTPRequestHandler):
    """A chat-style judge on 127.0.0.1 whose answer is named by the agent's answer
    (``mode:NAME``) in the evidence it is sent."""

    ANSWERS = {
        "pass": json.dumps({"pass": True, "reason": "fine", "score": 0.8}),
        "low": json.dumps({"pass": True, "reason": "fine", "score": 0.79}),
        "prose": "Yes, that looks fine to me.",
        "no-pass": json.dumps({"reason": "fine"}),
        "pass-yes": json.dumps({"pass": "yes", "reason": "fine"}),
    }

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        mode = re.search(r"mode:([a-z-]+)", body["messages"][0]["content"]).group(1)
        if mode == "slow":
            time.sleep(12)  # past the hook's timeout, however loaded the machine
        content = self.ANSWERS.get(mode, self.ANSWERS["pass"])
        data = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # Rook gave up waiting: the slow mode's point
            pass


@pytest.fixture
def http_judge():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


JUDGED = [
    # (agent's mode, rubric, status, in the reason): min_score is met at the score itself
    ("pass", "is polite", "passed", "judge: fine (score 0.8)"),
    ("pass", {"text": "is polite", "min_score": 0.8}, "passed", "judge: fine (score 0.8)"),
    ("low", {"text": "is polite", "min_score": 0.8}, "failed", "below min_score 0.8"),
    ("low", "is polite", "passed", "judge: fine (score 0.79)"),
    ("prose", "is polite", "error", "'Yes, that looks fine to me.', which is not one JSON"),
    ("no-pass", "is polite", "error", '"pass" must be true or false (got missing)'),
    ("pass-yes", "is polite", "error", '"pass" must be true or false (got "yes")'),
    ("slow", "is polite", "error", "timed out"),
]


def test_an_http_judge_named_in_config_yaml_answering_in_and_out_of_contract(
        ws, rook_cli, http_judge):
    """SPEC §6: a rubric goes to the judge profile config.yaml names (any profile,
    here an HTTP endpoint on 127.0.0.1), which must answer {"pass": bool, "reason":
    str}; anything else -- prose, no pass, pass "yes", no answer in time -- is the
    criterion's error with a reason, never a pass."""
    for i, (mode, rubric, _, _) in enumerate(JUDGED):
        ws.scenario({"id": f"j{i}", "goal": json.dumps({"output": f"mode:{mode}"}),
                     "criteria": [{"rubric": rubric}]})
    ws.profile({"id": "llm-judge", "hooks": {"execute": {
        "timeout_seconds": 5,  # the others answer well within it
        "http": {"url": f"{http_judge}/v1/chat",
                 "body": {"messages": [{"role": "user", "content": "{{goal}}"}]},
                 "extract": {"output": "choices[0].message.content"}}}}}, active=False)
    (ws.root / ".testmuai" / "rook" / "config.yaml").write_text("judge_profile: llm-judge\n")
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    got = {s["id"]: s["criteria"][0] for s in r.report["scenarios"]}
    wrong = [(mode, rubric, status, needle, got[f"j{i}"]["status"], got[f"j{i}"]["reason"])
             for i, (mode, rubric, status, needle) in enumerate(JUDGED)
             if got[f"j{i}"]["status"] != status or needle not in got[f"j{i}"]["reason"]]
    assert wrong == [], "\n".join(map(str, wrong))
    assert r.report["summary"]["passed"] == 3 and r.report["summary"]["error"] == 4
    assert all("judge profile 'llm-judge'" in got[f"j{i}"]["reason"]
               for i, (_, _, status, _) in enumerate(JUDGED) if status == "error")


def test_a_script_judge_that_times_out_is_an_error_never_a_pass(ws, rook_cli):
    ws.script("judge.sh", '#!/bin/bash\n[ "$1" = execute ] || exit 0\ncat >/dev/null\n'
              'sleep 30\necho \'{"output": {"pass": true, "reason": "late"}}\'\n')
    ws.profile({"id": "grader", "hooks": {"execute": {"script": "scripts/judge.sh",
                                                      "timeout_seconds": 1}}}, active=False)
    ws.scenario({"id": "s", "goal": SAID_HELLO, "criteria": [{"rubric": "is polite"}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 1, r.stderr
    (c,) = r.report["scenarios"][0]["criteria"]
    assert c["status"] == "error" and r.report["scenarios"][0]["status"] == "error"
    assert c["reason"].startswith("judge profile 'grader': execute failed: timed out after 1 s")
    # the setting to raise is the judge's: it is the judge that was slow, not the agent
    assert "on the hook entry if the judge is this slow" in c["reason"], c["reason"]


def test_a_public_cli_file_s_repeat_tags_excluded_and_expectations_as_named(ws, rook_cli):
    """SPEC §6 (decided): repeat, tags and excluded of a public Rook CLI file work
    as named; a forbidden {pattern} is not_matches on every turn (a setup turn's
    answer that shows it fails the scenario); mcp expect: called gives called, and
    expect left out not_called."""
    turn = {"output": "fine", "conversation": "c1", "calls": []}
    ws.scenario(f"""
        title: Kept apart
        tags: [nightly]
        excluded: true
        repeat: 2
        multi_turn: true
        setup_messages:
          - '{json.dumps({**turn, "output": "Internal Error at step 1"})}'
        goal: '{json.dumps({**turn, "calls": [{"name": "lookup", "arguments": {}}]})}'
        expectation:
          forbidden:
            - pattern: "(?i)internal error"
          mcp:
            - {{server: orders, tool: lookup, expect: called}}
            - {{server: orders, tool: cancel}}  # expect left out: not_called
    """, name="kept-apart")
    r = rook_cli("run", "--tag", "nightly")
    assert r.exit_code == 2 and "--only names them: kept-apart" in r.stderr, r.stderr
    r = rook_cli("run", "--json", "--only", "kept-apart", "--tag", "nightly")
    assert r.exit_code == 1, r.stderr
    runs = r.report["scenarios"]
    assert [(s["id"], s["repeat_index"], s["repeat_count"]) for s in runs] == [
        ("kept-apart", 1, 2), ("kept-apart", 2, 2)]
    for s in runs:
        assert s["name"] == "Kept apart" and len(s["turns"]) == 2
        assert [(c["type"], c["turn"], c["status"]) for c in s["criteria"]] == [
            ("not_matches", "all", "failed"), ("called", None, "passed"),
            ("not_called", None, "passed")]
        assert s["criteria"][0]["reason"].startswith("turn 1: /(?i)internal error/ matched")
        assert s["status"] == "failed"


ACME_TONE = """
    from rook_core.hookspecs import hookimpl
    from rook_core.models import FAILED, PASSED, Verdict


    class AcmeTone:
        def check(self, config):
            if not 0 <= config.get("min_score", 0.5) <= 1:
                return "min_score must be between 0 and 1"
            return None

        async def __call__(self, config, view):
            score = float(view.output.split()[-1])  # "tone 0.8": the agent's own score
            ok = score >= config.get("min_score", 0.5)
            return Verdict(PASSED if ok else FAILED, f"tone score {score}", {"score": score})


    @hookimpl
    def rook_register_judges(register):
        register("acme-tone", AcmeTone())
"""


def test_a_plugin_judge_installed_through_its_entry_point_below_at_and_above_min_score(
        ws, rook_cli, rook_distribution):
    rook_distribution("rook-acme-tone", {"acme": "rook_acme_tone"},
                      {"rook_acme_tone/__init__.py": ACME_TONE})
    for sid, score in (("below", "0.79"), ("at", "0.8"), ("above", "0.81")):
        ws.scenario({"id": sid, "goal": json.dumps({"output": f"tone {score}"}),
                     "criteria": [{"judge": {"name": "acme-tone", "min_score": 0.8}}]})
    ws.scenario({"id": "bad", "goal": SAID_HELLO,
                 "criteria": [{"judge": {"name": "acme-tone", "min_score": 2}}]}, name="bad")
    r = rook_cli("run")
    assert r.exit_code == 2 and "min_score must be between 0 and 1" in r.stderr, r.stderr
    (ws.agent_dir / "scenarios" / "bad.yaml").unlink()
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    got = {s["id"]: (s["status"], s["criteria"][0]["reason"], s["criteria"][0]["evidence"])
           for s in r.report["scenarios"]}
    assert got == {"below": ("failed", "tone score 0.79", {"score": 0.79}),
                   "at": ("passed", "tone score 0.8", {"score": 0.8}),
                   "above": ("passed", "tone score 0.81", {"score": 0.81})}
    listed = rook_cli("plugins")
    assert "acme-tone" in listed.stdout and "rook-acme-tone" in listed.stdout, listed.stdout


NEEDS = [
    # (criterion, the capability it needs): every calls and usage criterion
    ({"called": "x"}, "calls"),
    ({"not_called": "x"}, "calls"),
    ({"call_order": ["x", "y"]}, "calls"),
    ({"max_calls": 2}, "calls"),
    ({"claim": {"says": "issued", "requires_call": "x"}}, "calls"),
    ({"max_tokens": 9}, "usage"),
]


def test_every_calls_and_usage_criterion_is_not_runnable_on_a_profile_that_cannot_show_it(
        rook_workspace, rook_cli, tmp_path):
    """SPEC §5/§6: a scenario whose criteria need a capability the profile neither
    declares nor ever showed is not_runnable, skipped before any hook runs, with the
    reason; the core test held not_called and max_tokens, not the other four."""
    log = tmp_path / "ran"
    rook_workspace.script("agent.sh", f'#!/bin/bash\necho "$1" >> {log}\n'
                          '[ "$1" = execute ] && echo \'{"output": "refund issued"}\'\nexit 0\n')
    rook_workspace.profile({"id": "bare", "hooks": {"execute": "scripts/agent.sh"}})
    for i, (criterion, _) in enumerate(NEEDS):
        rook_workspace.scenario({"id": f"n{i}", "goal": "g", "criteria": [
            {"contains": "refund"}, criterion]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr  # not a failure, never a pass
    got = {s["id"]: (s["status"], s["reason"], s["hooks"]) for s in r.report["scenarios"]}
    for i, (criterion, needs) in enumerate(NEEDS):
        status, reason, hooks = got[f"n{i}"]
        (ctype,) = criterion
        assert status == "not_runnable" and hooks == [], (criterion, status, hooks)
        assert reason.startswith(f"needs capability '{needs}' (criterion 2 ({ctype}) needs it)"), reason
    assert not log.exists()  # no hook ran
    assert r.report["summary"]["passed"] == 0 and r.report["summary"]["not_runnable"] == 6


def test_a_not_runnable_reason_names_every_criterion_that_needs_the_capability(
        rook_workspace, rook_cli):
    """It named the first only: a user who removed criterion 1 found criterion 2 next."""
    rook_workspace.script("agent.sh", '#!/bin/bash\n[ "$1" = execute ] && '
                          'echo \'{"output": "ok"}\'\nexit 0\n')
    rook_workspace.profile({"id": "bare", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"called": "x"}, {"contains": "ok"}, {"max_calls": 2}, {"not_called": "y"},
        {"max_tokens": 9}]})
    r = rook_cli("run", "--json")
    (s,) = r.report["scenarios"]
    assert s["status"] == "not_runnable", s
    assert s["reason"] == (
        "needs capability 'calls' (criteria 1 (called), 3 (max_calls), 4 (not_called) need it); "
        "the profile does not declare it and never showed it; needs capability 'usage' "
        "(criterion 5 (max_tokens) needs it); the profile does not declare it and never showed it"
    ), s["reason"]


class _Blank(CriterionType):
    """A criterion type whose verdicts carry a blank reason."""

    name = "blank_reason"

    def evaluate(self, config, view):
        return Verdict(config, "  ")


def _blank_judge(config, view):
    """A judge whose verdicts carry an empty reason."""
    return Verdict(config["status"], "")


class _BlankPlugin:
    @hookimpl
    def rook_register_criteria(self, register):
        register(_Blank())

    @hookimpl
    def rook_register_judges(self, register):
        register("blank-judge", _blank_judge)


def test_a_plugin_verdict_with_a_blank_reason_still_has_one(ws, rook_cli, rook_plugin):
    """SPEC §6: each criterion yields its verdict with a reason. A plugin criterion or
    judge whose Verdict held a blank reason left the criterion's reason blank, and a
    failed scenario's reason '1 criterion failed: ' ending in nothing; the judge
    profile's blank reason already said 'the judge gave no reason'."""
    rook_plugin(_BlankPlugin())
    ws.scenario({"id": "crit", "goal": SAID_HELLO, "criteria": [{"blank_reason": "failed"}]})
    ws.scenario({"id": "judged", "goal": SAID_HELLO,
                 "criteria": [{"judge": {"name": "blank-judge", "status": "passed"}}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    got = {s["id"]: (s["status"], s["reason"], s["criteria"][0]["reason"])
           for s in r.report["scenarios"]}
    assert got["crit"][0] == "failed" and got["judged"][0] == "passed", got
    for sid, (_, reason, criterion_reason) in got.items():
        assert criterion_reason.endswith("gave no reason"), (sid, criterion_reason)
        assert not reason.endswith(": "), (sid, reason)
    assert got["crit"][1].startswith("1 criterion failed: criterion blank_reason ("), got
    assert got["judged"][2].startswith("judge 'blank-judge' ("), got


@pytest.mark.parametrize("turn, needle", [
    (3, "criteria.0.turn: scenario has 2 turns, not 3"),
    (0, "criteria.0.turn: must be a turn number (1, 2, ...) or 'all'"),
    (-1, "criteria.0.turn: must be a turn number (1, 2, ...) or 'all'"),
    ("2", "criteria.0.turn: must be a turn number (1, 2, ...) or 'all'"),  # text, not a number
    (2.0, "criteria.0.turn: must be a turn number (1, 2, ...) or 'all'"),
    (True, "criteria.0.turn: must be a turn number (1, 2, ...) or 'all'"),
    ("ALL", "criteria.0.turn: must be a turn number (1, 2, ...) or 'all'"),
])
def test_a_turn_that_names_no_turn_of_the_scenario_is_refused_before_anything_runs(
        ws, rook_cli, tmp_path, turn, needle):
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x", '
              '"conversation": "c"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "x", "turn": turn}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not ran.exists()
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [  # the turns it has: fine
        {"contains": "x", "turn": 2}, {"contains": "x", "turn": "all"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and ran.exists(), r.stderr


@pytest.mark.parametrize("key, needle", [
    ("turn", "criteria.0.turn: empty: nothing is written there (YAML's null); leave turn "
             "out for the last turn"),
    ("id", "criteria.0.id: empty: nothing is written there (YAML's null); leave id out for "
           "none"),
])
def test_a_criterion_key_left_empty_is_refused_as_id_blank_is(ws, rook_cli, tmp_path, key, needle):
    """`turn:` or `id:` with nothing after it (YAML's null: a value not filled in) was
    taken as left out, the criterion judged on the last turn or unlabelled, where
    `id: ""` is refused and every other key left so in a scenario is too."""
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x", '
              '"conversation": "c"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "capabilities": {"multi_turn": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "x", key: None}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not ran.exists()


@pytest.mark.parametrize("criterion, needle", [
    ("max_seconds: 1e-7", "criteria.0.max_seconds: must be a number of seconds > 0: YAML "
                          "reads 1e-7 as text; write 0.0000001 or 1.0e-7"),
    ("max_cost: 1e-3", "criteria.0.max_cost: must be a number of US dollars >= 0: YAML reads "
                       "1e-3 as text; write 0.001 or 1.0e-3"),
    ("max_tokens: 1e3", "criteria.0.max_tokens: must be a number (total) or a mapping of "
                        "input, output, total: YAML reads 1e3 as text; write 1000"),
    ("max_tokens: {input: 1e3}", "criteria.0.max_tokens.input: must be a whole number >= 0: "
                                 "YAML reads 1e3 as text; write 1000"),
    ("max_calls: 1e1", "criteria.0.max_calls: must be a whole number >= 0: YAML reads 1e1 as "
                       "text; write 10"),
    ("rubric: {text: calm, min_score: 5e-1}", "criteria.0.rubric.min_score: must be a number "
                                              "from 0 to 1: YAML reads 5e-1 as text; write 0.5"),
    ("command: {run: 'true', timeout_seconds: 1e2}", "criteria.0.command.timeout_seconds: must "
     "be a number of seconds > 0: YAML reads 1e2 as text; write 100 or 1.0e+2"),
    ("judge: {name: keywords, words: [hello], min_score: 5e-1}", "criteria.0.judge: keywords: "
     "min_score must be a number from 0 to 1: YAML reads 5e-1 as text; write 0.5"),
])
def test_a_limit_written_with_an_exponent_says_yaml_read_it_as_text(ws, rook_cli, criterion,
                                                                    needle):
    """YAML 1.1 reads 1e-7 (no dot, or no sign) as text. A criterion's limit written so
    was refused as 'must be a number of seconds > 0', which 1e-7 looks like, where a
    scenario's own timeout_seconds or repeat says YAML read it as text and how to
    write it; the criteria's limits say so too."""
    ws.scenario(f"id: s\ngoal: '{SAID_HELLO}'\ncriteria:\n  - {criterion}\n")
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def _refused_naming(ws, rook_cli, tmp_path, line: str, needle: str) -> None:
    """A scenario holding ``line`` is refused (exit 2) saying ``needle``, its hook never run."""
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x"}}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario(f"id: s\ngoal: hi\n{line}\n")
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not ran.exists()


@pytest.mark.parametrize("line, needle", [
    ('repeat: "2"', 'repeat: not a valid integer: "2" is quoted, so YAML reads it as text; '
                    'write 2 without the quotes'),
    ('max_turns: "1"', 'max_turns: not a valid integer: "1" is quoted'),
    ('timeout_seconds: "5"', 'timeout_seconds: not a valid number: "5" is quoted, so YAML '
                             'reads it as text; write 5 without the quotes'),
    ('criteria: [{max_calls: "3"}]', 'criteria.0.max_calls: must be a whole number >= 0: "3" '
                                     'is quoted, so YAML reads it as text; write 3 without'),
    ('criteria: [{max_seconds: "20"}]', 'criteria.0.max_seconds: must be a number of seconds '
                                        '> 0: "20" is quoted'),
    ('criteria: [{max_tokens: "500"}]', 'criteria.0.max_tokens: must be a number (total) or a '
                                        'mapping of input, output, total: "500" is quoted'),
    ('criteria: [{max_tokens: {input: "5"}}]', 'criteria.0.max_tokens.input: must be a whole '
                                               'number >= 0: "5" is quoted'),
    ('criteria: [{max_cost: "0.5"}]', 'criteria.0.max_cost: must be a number of US dollars '
                                      '>= 0: "0.5" is quoted'),
    ('criteria: [{contains: x, turn: "1"}]', "criteria.0.turn: must be a turn number (1, 2, "
                                             '...) or \'all\': "1" is quoted'),
])
def test_a_number_written_in_quotes_is_refused_saying_the_quotes_make_it_text(
        ws, rook_cli, tmp_path, line, needle):
    """`repeat: "2"` was refused as 'not a valid integer', which "2" looks like, and
    `max_seconds: "20"` as 'must be a number of seconds > 0 (not .nan or .inf)':
    neither said that the quotes made the number a text, as a number YAML reads as
    text (1e3) is told."""
    _refused_naming(ws, rook_cli, tmp_path, line, needle)


@pytest.mark.parametrize("line, needle", [
    ("repeat: true", "repeat: not a valid integer: YAML reads an unquoted yes, on or true as a "
                     "boolean; write a whole number"),
    ("max_turns: off", "max_turns: not a valid integer: YAML reads an unquoted no, off or "
                       "false as a boolean; write a whole number"),
    ("repeat: 2.0", "repeat: not a valid integer: 2.0 is written with a decimal point; write 2"),
    ("repeat: 2.5", "repeat: not a valid integer: 2.5 is no whole number"),
])
def test_a_whole_number_written_as_a_boolean_or_a_decimal_says_so(ws, rook_cli, tmp_path,
                                                                   line, needle):
    """`repeat: true` and `repeat: 2.0` got a bare 'not a valid integer', where a
    number in quotes or written with an exponent is told what YAML made of it."""
    _refused_naming(ws, rook_cli, tmp_path, line, needle)


def test_a_json_equals_written_in_quotes_fails_against_the_number_saying_why(ws, rook_cli):
    """`json: {equals: "7"}` looks for the text "7", which the number 7 is not (JSON
    values): the failure says the quotes made it text, as it says of 1e3."""
    answer = json.dumps({"output": json.dumps({"a": 7})})
    ws.scenario({"id": "s", "goal": answer, "criteria": [{"json": {"path": "a", "equals": "7"}}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    [criterion] = json.loads(r.stdout)["scenarios"][0]["criteria"]
    assert criterion["reason"] == ('a is 7, expected "7" ("7" is quoted, so YAML reads it as '
                                   "text; write 7 without the quotes)")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_scenario_file_saved_as_utf_16_or_32_with_a_byte_order_mark_runs(ws, rook_cli, encoding):
    """YAML may be UTF-16 or UTF-32 after a byte order mark, and Windows PowerShell 5's
    `>` and Out-File write UTF-16 so (CRLF line ends too): such a file was refused with
    Python's "'utf-8' codec can't decode byte 0xff in position 0"."""
    text = "id: s\r\ngoal: 'say héllo'\r\ncriteria:\r\n  - contains: HÉLLO\r\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":  # Python writes a mark only for the native order
        data = b"\xfe\xff" + data
    path = ws.agent_dir / "scenarios" / "s.yaml"
    path.write_bytes(data)
    ws.script("agent.sh", '#!/bin/bash\n[ "$1" = execute ] || exit 0\n'
              'echo \'{"output": "héllo"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    [scenario] = json.loads(r.stdout)["scenarios"]
    assert (scenario["id"], scenario["status"]) == ("s", "passed")


def test_a_scenario_file_that_is_not_utf_8_names_the_byte_line_and_column(ws, rook_cli, tmp_path):
    """A Latin-1 file was refused with Python's "cannot read: 'utf-8' codec can't
    decode byte 0xe9 in position 16: invalid continuation byte" (a byte offset)."""
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x"}}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    path = ws.agent_dir / "scenarios" / "s.yaml"
    path.write_bytes("id: s\ngoal: café\n".encode("latin-1"))
    r = rook_cli("run")
    assert r.exit_code == 2 and not ran.exists(), r.stderr
    assert r.stderr == (f"rook: error: {path}: not UTF-8 text (byte 0xe9 at line 2, column 10);"
                        " save it as UTF-8\n")


@pytest.mark.parametrize("text, needle", [
    ("turns: []", "  turns: empty: a list of texts, one per turn, holds none (one turn alone: "
                  "write goal: instead)\n"),
    ("goal: hi\ncriteria:\n  - contains", "  criteria.0: 'contains' alone is no criterion: "
                                          "write contains: followed by its value\n"),
    ("goal: hi\ncriteria:\n  - contains refund", "  criteria.0: 'contains refund' is no "
     "criterion: write contains: followed by its value (a colon after the type)\n"),
    ("goal: hi\ncriteria:\n  - contains:refund", "  criteria.0: 'contains:refund' is no "
     "criterion: write contains: refund (a space after the colon)\n"),
    ("goal: hi\ncriteria:\n  - 'not_called: x'", "  criteria.0: 'not_called: x' is in quotes, "
     "so YAML reads it as text, not a mapping; drop the quotes\n"),
    ("goal: hi\ncriteria:\n  - 5", "  criteria.0: must be a mapping with one criterion type "
     "(one of: call_order, "),
    ("goal: hi\ncriteria:\n  - 5", ") and optional turn and id\n"),
])
def test_an_empty_turns_list_or_a_criterion_written_without_its_colon_says_what_to_write(
        ws, rook_cli, tmp_path, text, needle):
    """`turns: []` was refused as 'shorter than minimum length 1' (marshmallow's
    words), and `- contains`, `- contains refund` (the colon left out),
    `- contains:refund` (no space after it) or `- "not_called: x"` (in quotes) as
    'must be a mapping with one criterion type (one of: ...) and optional turn',
    which named neither what was wrong nor the optional id."""
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x"}}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario(f"id: s\n{text}\n", name="s")
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not ran.exists()


def test_a_status_criterion_on_an_answer_without_one_says_a_hook_may_print_it(ws, rook_cli):
    """`status: goal_satisfied` on a script hook's answer with no status said "the
    agent is not reached through a Ruhroh wrapper or connector", as if only those
    could report one, where a hook that prints a completion status is judged on it."""
    ws.scenario({"id": "s", "goal": SAID_HELLO, "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    [criterion] = json.loads(r.stdout)["scenarios"][0]["criteria"]
    assert criterion["status"] == "unverifiable"
    assert criterion["reason"] == (
        "no completion status was recorded: the last turn's answer has no status field "
        '(a Ruhroh wrapper or connector reports one; a hook may print one, "status": '
        '"goal_satisfied")')
    ws.scenario({"id": "s", "goal": json.dumps({"output": "hi", "status": "goal_satisfied"}),
                 "criteria": [{"status": "goal_satisfied"}]})
    assert rook_cli("run", "--json").statuses() == {"s": "passed"}


def test_an_alias_to_no_anchor_is_named_with_the_anchor_it_needs(ws, rook_cli):
    """`goal: *base` with no `&base` before it said "found undefined alias", naming
    neither the alias nor what it needs."""
    path = ws.scenario("- &first\n  id: a\n  goal: hi\n- <<: *frist\n  id: b\n", name="s")
    r = rook_cli("run")
    assert r.exit_code == 2, r.stderr
    assert r.stderr == (f"rook: error: {path} (line 4, column 7): not valid YAML: found undefined "
                        "alias: *frist, but no anchor &frist comes before it\n")


@pytest.mark.parametrize("entry, needle", [
    ("{server: a__b, tool: x}", "  expectation.mcp.0.server: 'a__b' with the tool 'x': a name "
                                "holding '__' cannot be told apart"),
    ("{server: s, tool: a__b}", "  expectation.mcp.0.server: 's' with the tool 'a__b': a name "
                                "holding '__'"),
    ("{server: s, tool: \"\\u200b\"}", "  expectation.mcp.0.tool: must be a tool name"),
])
def test_an_mcp_expectation_is_refused_under_the_fields_the_file_writes(ws, rook_cli, tmp_path,
                                                                        entry, needle):
    """`expectation.mcp: [{server: a__b, tool: x}]` was refused under
    expectation.mcp.0.not_called.server, the criterion Rook maps it to, where the
    docs promise the field as the file writes it (as forbidden's pattern is)."""
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x"}}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario(f"id: s\ntitle: t\ngoal: hi\nexpectation:\n  mcp:\n    - {entry}\n")
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert "not_called" not in r.stderr and not ran.exists()


def test_an_only_id_that_looks_like_one_there_is_named_with_it(ws, rook_cli, tmp_path):
    """`--only Refund-Status` or `--only refund-stauts` said "no scenario with id ...
    (scenarios: ...)" and left the user to spot the one meant among them all, where
    every misspelt key of a file is told the one it looks like."""
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x"}}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("refund-status", "greeting", "jailbreak"):
        ws.scenario({"id": sid, "goal": "hi"})
    r = rook_cli("run", "--only", "Refund-Status,greeting,refund-stauts,zzz")
    assert r.exit_code == 2 and not ran.exists(), r.stderr
    assert r.stderr == (
        "rook: error: --only: no scenario with id Refund-Status (did you mean refund-status?), "
        "refund-stauts (did you mean refund-status?), zzz (scenarios: greeting, jailbreak, "
        "refund-status)\n")


@pytest.mark.parametrize("line, needle", [
    ('workspace: ""', "  workspace: must not be empty: the directory the agent works in (leave "
                      "workspace out for the Rook workspace)\n"),
    ('excluded: "yes"', '  excluded: not a valid boolean: "yes" is text; write true or false\n'),
    ("multi_turn: 'true'", '  multi_turn: not a valid boolean: "true" is text; write true or '
                           "false\n"),
])
def test_an_empty_workspace_or_a_boolean_in_quotes_says_what_to_write(ws, rook_cli, tmp_path,
                                                                      line, needle):
    """`workspace: ""` was refused as 'shorter than minimum length 1' (marshmallow's
    words), and `excluded: "yes"` as 'not a valid boolean', which "yes" looks like."""
    ran = tmp_path / "ran"
    ws.script("agent.sh", f'#!/bin/bash\ntouch {ran}\necho \'{{"output": "x"}}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario(f"id: s\ntitle: t\ngoal: hi\n{line}\n")
    r = rook_cli("run")
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not ran.exists()
