"""Report files written for real and parsed back: JSON, JUnit XML, Markdown, HTML."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import socket
import stat
import time
import xml.dom.minidom
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from rook_core.hookspecs import hookimpl

# One agent, many behaviours, chosen by the goal.
AGENT = r"""
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    goal = sys.stdin.read()
    if goal == "crash":
        sys.stderr.write("boom: the agent fell over\n")
        sys.exit(1)
    if goal == "flaky":
        counter = os.path.join(os.environ["FLAKY_DIR"], "n")
        n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
        open(counter, "w").write(str(n))
        print(json.dumps({"output": "good" if n % 2 else "bad", "calls": []}))
        sys.exit(0)
    out = {
        "pass": "all good",
        "fail": "all bad",
        "blind": "all good",
        "ctrl": "all good \x01\x07\x1b[31m <script>alert(1)</script> ]]> & | pipe `tick`",
    }.get(goal, "all good")
    answer = {"output": out}
    if goal != "blind":
        answer["calls"] = [{"name": "lookup", "arguments": {"q": goal}}]
    print(json.dumps(answer))
"""

SCENARIOS = [
    {"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}, {"not_called": "delete"}]},
    {"id": "fail", "goal": "fail", "criteria": [{"contains": "good"}]},
    {"id": "crash", "goal": "crash", "criteria": [{"contains": "good"}]},
    {"id": "blind", "goal": "blind", "criteria": [{"contains": "good"}, {"not_called": "delete"}]},
    {"id": "notrun", "goal": "pass", "criteria": [{"max_tokens": 100}]},
    {"id": "ctrl", "goal": "ctrl", "criteria": [{"contains": "good"}]},
    {"id": "flaky", "goal": "flaky", "repeat": 4, "criteria": [{"contains": "good"}]},
]
EXPECTED = {"pass": "passed", "fail": "failed", "crash": "error", "blind": "unverifiable",
            "notrun": "not_runnable", "ctrl": "passed", "flaky.1": "passed",
            "flaky.2": "failed", "flaky.3": "passed", "flaky.4": "failed"}


@pytest.fixture
def mixed(rook_workspace, rook_cli, tmp_path, monkeypatch):
    """One real run with every status, and every built-in report format written."""
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    ws = rook_workspace
    ws.script("agent.py", AGENT)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                "capabilities": {"calls": True}})
    for s in SCENARIOS:
        ws.scenario(s)
    out = tmp_path / "out"
    r = rook_cli("run", "--json", *[f"--report={f}:{out}/r.{e}" for f, e in (
        ("json", "json"), ("junit", "xml"), ("markdown", "md"), ("html", "html"))])
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == EXPECTED
    return r, out


def test_json_report_file_is_the_printed_report_with_every_stable_key(mixed):
    r, out = mixed
    report = json.loads((out / "r.json").read_text())
    assert report == r.report
    for key in ("id", "dir", "project", "agent", "profile", "phases", "capabilities"):
        assert key in report["run"]
    assert set(report["run"]["capabilities"]) >= {"declared", "observed"}
    for s in report["scenarios"]:
        for key in ("id", "repeat_index", "status", "reason", "turns", "criteria", "hooks"):
            assert key in s
        for t in s["turns"]:
            assert {"turn", "output", "conversation", "usage", "calls", "evidence",
                    "seconds"} <= set(t)
        for c in s["criteria"]:
            assert {"type", "status", "reason"} <= set(c)
        for h in s["hooks"]:
            assert {"phase", "status", "exit_code", "seconds", "diagnosis"} <= set(h)
    summary = report["summary"]
    for key in ("passed", "failed", "unverifiable", "error", "stopped", "not_runnable",
                "pass_rate", "coverage"):
        assert key in summary
    # decided: pass, ctrl, fail, crash and 4 flaky runs = 8 (4 passed); planned 10
    assert summary["decided"] == 8 and summary["total"] == 10
    assert summary["pass_rate"] == 0.5 and summary["coverage"] == 0.8


def test_per_scenario_statistics_over_repeats(mixed):
    r, _ = mixed
    per = {p["id"]: p for p in r.report["summary"]["by_scenario"]}
    flaky = per["flaky"]
    assert (flaky["runs"], flaky["passed"], flaky["decided"]) == (4, 2, 4)
    assert flaky["pass_rate"] == 0.5 and flaky["flaky"] is True
    assert flaky["pass_all"] is False and flaky["pass_any"] is True
    assert flaky["wilson"] == [0.15, 0.85]
    assert flaky["statuses"] == ["passed", "failed", "passed", "failed"]
    assert per["pass"]["pass_all"] is True and per["pass"]["flaky"] is False
    assert per["blind"]["pass_rate"] is None and per["blind"]["wilson"] is None
    assert per["blind"]["pass_all"] is False  # unverifiable is never a pass
    assert r.report["summary"]["repeats"] == {"scenarios": 7, "pass_all": 2, "pass_any": 3,
                                              "flaky": 1, "max_runs": 4}
    assert "FLAKY" in _table(r.report)


def _table(report):
    from rook_core.report import table

    return table(report)


def test_junit_xml_parses_and_holds_every_run(mixed):
    r, out = mixed
    text = (out / "r.xml").read_text(encoding="utf-8")
    xml.dom.minidom.parseString(text.encode("utf-8"))  # a second, strict parser
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites" and root.attrib == {}  # the counts are the suite's
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("10", "3", "1", "2")
    # the strict schema's: the suite's index, a package, when (UTC, no zone) and where
    assert suite.get("id") == "0" and suite.get("package") == "rook.proj.agent"
    started = time.gmtime(r.report["run"]["started"])
    assert suite.get("timestamp") == time.strftime("%Y-%m-%dT%H:%M:%S", started)
    assert suite.get("hostname") == (socket.gethostname().strip() or "localhost")
    cases = {c.get("name"): c for c in suites[0].findall("testcase")}
    assert set(cases) == {"pass", "fail", "crash", "blind", "notrun", "ctrl",
                          "flaky [1/4]", "flaky [2/4]", "flaky [3/4]", "flaky [4/4]"}
    for case in cases.values():
        assert case.get("classname").startswith("rook.proj.agent")
        float(case.get("time"))
    assert list(cases["pass"]) == [cases["pass"].find("system-out")]  # no failure: a pass
    failure = cases["fail"].find("failure")
    assert "did not find 'good'" in failure.get("message") and "contains" in failure.text
    error = cases["crash"].find("error")
    assert error.get("type") == "error" and "boom: the agent fell over" in error.text
    assert cases["blind"].find("skipped").get("message").startswith("unverifiable:")
    assert cases["notrun"].find("skipped").get("message").startswith("not_runnable:")
    assert cases["flaky [2/4]"].find("failure") is not None
    out_text = cases["ctrl"].find("system-out").text
    assert "<script>alert(1)</script> ]]>" in out_text and "\x01" not in out_text
    props = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert props["pass_rate"] == "0.5" and props["profile"] == "p"
    assert props["run_id"] == r.report["run"]["id"]  # no longer the suite's id


# What the strict JUnit schemas (Jenkins' junit-10.xsd, Ant's JUnit.xsd) ask
# of each element: its attributes (required ones first) and its children's order.
SUITE_REQUIRED = {"name", "tests", "failures", "errors", "time", "timestamp", "hostname",
                  "id", "package"}
SUITE_ALLOWED = SUITE_REQUIRED | {"skipped", "disabled"}
CASE_REQUIRED = {"name", "classname", "time"}
DECIMAL = re.compile(r"-?\d+(\.\d+)?")


def test_junit_file_of_many_long_runs_stays_under_gitlabs_limit(tmp_path):
    """Each test case's text was cut to ~20,000 characters, but the file had no
    bound: 2,000 failed runs with long answers made a 40 MB file, and GitLab
    reads no JUnit file over 30 MB. The share of each test case's
    ``<system-out>`` now shrinks with the number of runs."""
    from rook_plugins.report_junit import write_junit

    from rook_core.report import summarize

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "failed",
             "reason": "1 criterion failed", "seconds": 1.5,
             "turns": [{"turn": 1, "input": "q" * 30_000, "output": "o" * 30_000,
                        "calls": None}],
             "criteria": [{"type": "contains", "status": "failed", "reason": "no"}],
             "hooks": [], "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"s{i}"} for i in range(2000)]
    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summarize(entries)}
    write_junit(report, tmp_path / "r.xml")
    assert (tmp_path / "r.xml").stat().st_size < 30 * 1024 * 1024
    root = ET.parse(tmp_path / "r.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 2000
    out = cases[-1].find("system-out").text
    assert out.startswith("--- turn 1 input ---\nqqq") and "--- turn 1 output ---\nooo" in out
    assert "more chars]" in out
    # a few runs keep the whole share
    write_junit({**report, "scenarios": entries[:3], "summary": summarize(entries[:3])},
                tmp_path / "few.xml")
    out = ET.parse(tmp_path / "few.xml").getroot().find("./testsuite/testcase/system-out").text
    assert out.count("o") > 9_000


@pytest.mark.parametrize("char", ["o", "<", "日"])
def test_junit_file_of_many_long_runs_stays_under_gitlabs_limit_whatever_they_say(
    tmp_path, char
):
    """The share of 10,000,000 characters was each text's, and a test case has
    several (the failure, a system-out of twice the share, a system-err), written
    escaped (``<`` is ``&lt;``) in UTF-8 (``日`` three bytes): 2,000 failed runs of
    two long turns made 33 MB, of HTML-like answers 130 MB, of Japanese ones 98 MB,
    none of which GitLab reads (30 MB)."""
    from rook_plugins.report_junit import write_junit

    from rook_core.report import summarize

    long = char * 30_000
    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "failed",
             "reason": char * 3000, "seconds": 1.5,
             "turns": [{"turn": t, "input": long, "output": long, "calls": None} for t in (1, 2)],
             "criteria": [{"type": "contains", "status": "failed", "reason": long}],
             "hooks": [{"phase": "execute", "status": "failed", "diagnosis": long}],
             "warnings": [long], "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"s{i}"} for i in range(2000)]
    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summarize(entries)}
    write_junit(report, tmp_path / "r.xml")
    assert (tmp_path / "r.xml").stat().st_size < 30 * 1000 * 1000
    cases = ET.parse(tmp_path / "r.xml").getroot().findall("./testsuite/testcase")
    assert len(cases) == 2000
    first, last = (c.find("system-out").text for c in (cases[0], cases[-1]))
    assert char * 100 in first and char * 100 in last  # every case keeps some of its texts


def test_junit_shares_a_test_cases_part_of_the_file_among_its_texts(tmp_path):
    """A test case over its part of the file had every text cut alike in
    characters, so criteria verdicts of ``<`` (``&lt;`` as written, four bytes a
    character) took most of its bytes and left each turn a few hundred
    characters. The failure's text, the turns and the warnings now get fair
    shares of its bytes: one that needs less leaves the rest to the others."""
    from rook_plugins.report_junit import write_junit

    from rook_core.report import summarize

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "failed",
             "reason": "5 criteria failed", "seconds": 1.5,
             "turns": [{"turn": t, "input": "q" * 30_000, "output": "o" * 30_000, "calls": None}
                       for t in (1, 2, 3)],
             "criteria": [{"type": "contains", "status": "failed", "reason": "<" * 4000}] * 5,
             "hooks": [], "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"s{i}"} for i in range(2000)]
    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summarize(entries)}
    write_junit(report, tmp_path / "r.xml")
    assert (tmp_path / "r.xml").stat().st_size < 30 * 1000 * 1000
    case = ET.parse(tmp_path / "r.xml").getroot().findall("./testsuite/testcase")[1000]
    shown = [len(m) for m in re.findall(r"q{10,}|o{10,}", case.find("system-out").text)]
    assert len(shown) == 6 and min(shown) > 600, shown
    failure = case.find("failure").text.count("<")
    assert 1000 < failure < 2 * sum(shown), failure  # cut too, never to nothing



def test_junit_file_of_many_test_cases_is_kept_to_its_bound_as_written(tmp_path):
    """reports.md keeps the JUnit file to 25,000,000 bytes as written, but the
    test cases shared all of them and the suite's head, properties and the
    indent between test cases were written besides: 5,000 test cases of long
    answers made a file of 25,025,701 bytes."""
    from rook_plugins.report_junit import write_junit

    from rook_core.report import summarize

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "failed",
             "reason": "1 criterion failed", "seconds": 1.5,
             "turns": [{"turn": t, "input": "<" * 5000, "output": "<" * 5000, "calls": None}
                       for t in range(1, 11)],
             "criteria": [{"type": "contains", "status": "failed", "reason": "no"}],
             "hooks": [], "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"s{i}"} for i in range(5000)]
    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summarize(entries)}
    write_junit(report, tmp_path / "r.xml")
    assert (tmp_path / "r.xml").stat().st_size <= 25_000_000
    cases = ET.parse(tmp_path / "r.xml").getroot().findall("./testsuite/testcase")
    assert len(cases) == 5000 and "turn 10 output" in cases[-1].find("system-out").text

def test_junit_has_the_shape_the_strict_junit_schemas_ask_for(mixed):
    # The file only parsed: the run id as the suite's id (an integer in the
    # schemas), no timestamp, hostname or package, and a skipped count on
    # <testsuites> failed the schemas strict JUnit readers validate with.
    _, out = mixed
    root = ET.fromstring((out / "r.xml").read_bytes())
    assert root.tag == "testsuites" and root.attrib == {}
    for suite in root:
        assert suite.tag == "testsuite"
        assert SUITE_REQUIRED <= set(suite.attrib) <= SUITE_ALLOWED, suite.attrib
        assert re.fullmatch(r"\d+", suite.get("id"))
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp"))
        assert suite.get("hostname").strip() and suite.get("package").strip()
        for count in ("tests", "failures", "errors", "skipped"):
            assert re.fullmatch(r"\d+", suite.get(count)), count
        assert DECIMAL.fullmatch(suite.get("time"))
        tags = [child.tag for child in suite]
        # properties, then the testcases, then the suite's own system-out and system-err
        assert tags[0] == "properties" and tags[-2:] == ["system-out", "system-err"]
        assert set(tags[1:-2]) == {"testcase"}
        for case in suite.iter("testcase"):
            assert CASE_REQUIRED <= set(case.attrib) <= CASE_REQUIRED, case.attrib
            assert DECIMAL.fullmatch(case.get("time"))
            parts = [child.tag for child in case]
            assert set(parts) <= {"failure", "error", "skipped", "system-out", "system-err"}
            assert len([t for t in parts if t in ("failure", "error", "skipped")]) <= 1
            for verdict in case.findall("failure") + case.findall("error"):
                assert verdict.get("message") is not None and verdict.get("type"), parts


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_self_contained_and_shows_everything(mixed):
    r, out = mixed
    page_text = (out / "r.html").read_text(encoding="utf-8")
    page = _Page()
    page.feed(page_text)
    # self-contained: nothing to fetch, no script at all
    assert not {"script", "link", "img", "iframe", "object", "embed", "base"} & set(page.tags)
    for tag, name, value in page.attrs:
        assert name not in ("src", "srcset", "action", "poster", "data"), (tag, name)
        if name == "href":
            assert value.startswith("#"), value
        if name == "xmlns":
            assert value == "http://www.w3.org/2000/svg"
        assert "url(" not in value and "javascript:" not in value.lower()
    assert "@import" not in page_text and "url(" not in page_text
    # the agent's markup is shown as text, never as markup
    assert "<script>alert(1)</script>" not in page_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page_text
    text = "".join(page.text)
    # summary, pass rate, coverage, chart, every scenario with turns, criteria, hooks
    assert r.report["run"]["id"] in text
    assert "50.0%" in text and "80.0%" in text
    assert page.tags.count("svg") == 1
    chart_rows = [v for t, n, v in page.attrs if t == "rect" and n == "width"]
    assert len(chart_rows) >= 7 * 2  # a track and a bar per scenario
    for sid in ("pass", "fail", "crash", "blind", "notrun", "ctrl", "flaky"):
        assert f"s-{sid}" in [v for t, n, v in page.attrs if n == "id"]
    assert "boom: the agent fell over" in text  # hook diagnosis
    assert "did not find 'good'" in text  # criterion verdict
    assert "all bad" in text and '"lookup"' in text  # turns and calls
    assert "not observed" in text  # calls/usage not observed are said so
    assert "2/4" in text and "15–85%" in text  # passes over repeats, Wilson interval
    # runs that did not pass are expanded, the passed ones folded
    runs = dict(re.findall(r'<details class="run" id="s-([^"]+)"\s*(open)?', page_text))
    expected = {k if "." not in k or not k.endswith(".1") else k[:-2]: v
                for k, v in EXPECTED.items()}
    assert runs.keys() == expected.keys(), runs
    assert {k for k, v in runs.items() if v} == {k for k, v in expected.items() if v != "passed"}


def test_every_report_format_names_a_repeat_as_junit_does(mixed):
    # JUnit named flaky's second run `flaky [2/4]`, the Markdown details
    # `flaky #2` and the HTML page `flaky run 2/4`: one run, three names to
    # look for. Each report file names it as JUnit does (CI keys on it).
    _, out = mixed
    cases = [c.get("name") for c in ET.parse(out / "r.xml").getroot().iter("testcase")]
    assert "flaky [2/4]" in cases and "pass" in cases
    md = (out / "r.md").read_text(encoding="utf-8")
    assert "<code>flaky</code> [2/4] — failed" in md and "#2" not in md
    page = _Page()
    page.feed((out / "r.html").read_text(encoding="utf-8"))
    text = re.sub(r"\s+", " ", "".join(page.text))
    assert "flaky [2/4] — " in text and "run 2/4" not in text
    assert "flaky [2/4]: failed" in text and "run 2:" not in text  # the chart's square
    assert "pass — " in text and "pass [1/1]" not in text


def test_markdown_fits_a_step_summary(mixed):
    r, out = mixed
    md = (out / "r.md").read_text(encoding="utf-8")
    lines = md.splitlines()
    assert lines[0].startswith("## ❌ Rook:") and "1 failed" not in lines[0]
    assert "3 failed" in lines[0] and "1 error" in lines[0]
    assert "**Pass rate** 50.0%" in md and "**Coverage** 80.0%" in md
    rows = [ln for ln in lines if ln.startswith("| <code>")]
    assert len(rows) == 7
    flaky = next(ln for ln in rows if "<code>flaky</code>" in ln)
    assert "⚠️ flaky" in flaky and "2/4" in flaky and "50.0% (15–85%)" in flaky
    for row in rows:  # a cell never breaks the table
        assert row.count(" | ") + 2 == 6 or row.replace("\\|", "").count("|") == 6
    assert "<script>" not in md.replace("```", "")  # HTML escaped outside code blocks
    assert md.count("<details>") == md.count("</details>") == 6  # every run that did not pass
    assert "boom: the agent fell over" in md


def test_markdown_and_html_scenario_tables_give_class_and_category(rook_workspace, rook_cli,
                                                                     tmp_path):
    # reports.md: the scenario's id, "with its class and category when the
    # scenario has them"; no test held it
    ws = rook_workspace
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "good"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "both", "class": "functional", "category": "happy_path", "goal": "g",
                 "criteria": [{"contains": "good"}]})
    ws.scenario({"id": "one", "class": "safety", "goal": "g", "criteria": [{"contains": "good"}]})
    ws.scenario({"id": "none", "goal": "g", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "-q", f"--report=markdown:{tmp_path}/r.md",
                 f"--report=html:{tmp_path}/r.html")
    assert r.exit_code == 0, r.stderr
    rows = {ln.split(" | ")[0] for ln in (tmp_path / "r.md").read_text(encoding="utf-8")
            .splitlines() if ln.startswith("| <code>")}
    assert rows == {"| <code>both</code> (functional / happy\\_path)",
                    "| <code>one</code> (safety)", "| <code>none</code>"}, rows
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "functional / happy_path" in page and "safety" in page


def test_junit_classname_has_one_level_for_each_of_project_agent_class_category(
        tmp_path, rook_cli):
    """Jenkins makes a package tree of a test case's classname, a level at each
    dot: a class `safety.v2` (or an agent `bot.v1`) gave `rook.demo.bot.v1.safety.v2`,
    two levels more than there are. A dot inside a part is written `_`."""
    from rook_core.testing import Workspace

    ws = Workspace(tmp_path / "dotted", "demo", "bot.v1")
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "good"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "both", "class": "safety.v2", "category": "a.b.c", "goal": "g",
                 "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "-w", str(tmp_path / "dotted"), "-q", f"--report=junit:{tmp_path}/r.xml")
    assert r.exit_code == 0, r.stderr
    root = ET.parse(tmp_path / "r.xml").getroot()
    (case,) = root.iter("testcase")
    assert case.get("classname") == "rook.demo.bot_v1.safety_v2.a_b_c"
    assert root.find("testsuite").get("package") == "rook.demo.bot_v1"


def test_a_wilson_interval_is_shown_rounded_outward(rook_workspace, rook_cli, tmp_path):
    """5 passes of 5: the interval is 56.55–100 %; rounded to the nearest it read
    57–100%, a lower bound higher than the data support. Shown rounded outward, it
    holds the interval, in the table, Markdown, HTML and rook runs show alike."""
    ws = rook_workspace
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] && echo '{"output": "good"}'
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "five", "goal": "g", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--repeat", "5", f"--report=markdown:{tmp_path}/r.md",
                 f"--report=html:{tmp_path}/r.html")
    assert r.exit_code == 0, r.stderr
    assert "100.0% (56–100%)" in (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "56–100%" in (tmp_path / "r.html").read_text(encoding="utf-8")
    shown = rook_cli("runs", "show", "latest")
    assert "56–100%" in shown.stdout and "57–100%" not in shown.stdout, shown.stdout


def test_markdown_run_summary_shows_a_pipe_as_it_is(rook_workspace, rook_cli, tmp_path):
    """A <summary> line is raw HTML, where Markdown escapes are not read: a reason
    holding | showed as \\| there (a table cell needs the backslash, it does not)."""
    ws = rook_workspace
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        echo 'boom | pipe' >&2
        exit 3
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "crash", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "-q", f"--report=markdown:{tmp_path}/r.md")
    assert r.exit_code == 1, r.stderr
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    summary = next(ln for ln in md.splitlines() if ln.startswith("<details><summary>"))
    assert "boom | pipe" in summary and "\\|" not in summary
    row = next(ln for ln in md.splitlines() if ln.startswith("| <code>crash"))
    assert "boom \\| pipe" in row  # in the table, escaped


def markdown_report(ws, rook_cli, tmp_path, sid, answer):
    """The Markdown report of a run whose agent answers ``answer`` and whose
    scenario ``sid`` fails (its criterion looks for what the answer lacks)."""
    ws.script("agent.py", f"""
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({{"output": {answer!r}}}))
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "nope"}]})
    r = rook_cli("run", "-q", f"--report=markdown:{tmp_path}/r.md")
    assert r.exit_code == 1, r.stderr
    return (tmp_path / "r.md").read_text(encoding="utf-8")


def test_markdown_shows_agent_markup_as_text(rook_workspace, rook_cli, tmp_path):
    """An answer is quoted in the table's reason and the criteria list, where
    GitHub reads Markdown: ``![x](url)`` became an image fetched from the agent's
    address when the step summary was opened, ``[approve](url)`` a link, ``*x*``
    emphasis. Every such character is escaped there, and shown as it is."""
    answer = ("![pixel](http://127.0.0.1:9/p.png) [approve](http://127.0.0.1:9/ok) "
              "*loud* _x_ `tick` ~~gone~~ $x$")
    md = markdown_report(rook_workspace, rook_cli, tmp_path, "marked", answer)
    lines = md.splitlines()
    row = next(ln for ln in lines if ln.startswith("| <code>marked"))
    item = next(ln for ln in lines if ln.startswith("- ") and "<code>contains</code>" in ln)
    escaped = ("\\!\\[pixel\\](http\\://127.0.0.1:9/p.png) \\[approve\\](http\\://127.0.0.1:9/ok) "
               "\\*loud\\* \\_x\\_ \\`tick\\` \\~\\~gone\\~\\~ \\$x\\$")
    for line in (row, item):
        assert escaped in line, line
    # where Markdown is not read (the raw-HTML <summary>, the fenced output) it is as it is
    summary = next(ln for ln in lines if ln.startswith("<details><summary>"))
    assert "![pixel](http://127.0.0.1:9/p.png)" in summary
    assert answer in md.split("output:", 1)[1]


def test_markdown_never_mentions_a_user_the_agent_names(rook_workspace, rook_cli, tmp_path):
    """reports.md offers the Markdown report for a pull-request comment, where
    GitHub made ``@octocat`` in an answer a mention that notified that user (in
    the table, the criteria list and the raw-HTML <summary> alike). Such an @
    is followed by a zero-width space there; an e-mail address is no mention (and,
    with ``<wbr>`` after its ``@``, no link), and the fenced output is as it is
    (code: no mention)."""
    answer = "ping @octocat and @acme/reviewers, mail ops@example.com"
    md = markdown_report(rook_workspace, rook_cli, tmp_path, "named", answer)
    lines = md.splitlines()
    row = next(ln for ln in lines if ln.startswith("| <code>named"))
    item = next(ln for ln in lines if ln.startswith("- ") and "<code>contains</code>" in ln)
    summary = next(ln for ln in lines if ln.startswith("<details><summary>"))
    for line in (row, item, summary):
        assert "@&#8203;octocat" in line and "@&#8203;acme/reviewers" in line, line
    assert "ops@<wbr>example.com" in row and "ops@<wbr>example.com" in item  # no mailto link
    assert "ops@example.com" in summary
    outside = md.split("output:", 1)[0]
    assert "@octocat" not in outside and "@acme" not in outside
    assert answer in md.split("output:", 1)[1]


def test_markdown_never_links_an_address_the_agent_printed(rook_workspace, rook_cli, tmp_path):
    """GitHub makes a bare address a link (``https://...``, ``www....``) where it
    reads Markdown: an address a prompt-injected agent printed became a link in
    the step summary or the pull-request comment, in the table and the criteria
    list. There its ``://`` is written ``\\://`` and ``www.`` ``www\\.``, which
    GitHub shows as they were, as no link; an e-mail address stays as it is; the
    raw-HTML <summary> and the fenced output (no links there) are as they were."""
    answer = "claim at https://evil.example/x?a=1 or HTTP://a.example, www.evil.example, ftp://f.example"
    md = markdown_report(rook_workspace, rook_cli, tmp_path, "linked", answer)
    lines = md.splitlines()
    row = next(ln for ln in lines if ln.startswith("| <code>linked"))
    item = next(ln for ln in lines if ln.startswith("- ") and "<code>contains</code>" in ln)
    for line in (row, item):
        assert "https\\://evil.example/x?a=1" in line and "HTTP\\://a.example" in line, line
        assert "www\\.evil.example" in line and "ftp\\://f.example" in line, line
        assert "://" not in line.replace("\\://", ""), line
    summary = next(ln for ln in lines if ln.startswith("<details><summary>"))
    assert "https://evil.example/x?a=1" in summary
    assert answer in md.split("output:", 1)[1]



def test_markdown_never_links_an_email_address_the_agent_printed(rook_workspace, rook_cli, tmp_path):
    """GitHub makes an e-mail address a ``mailto:`` link wherever it reads Markdown
    (the GFM spec's extended email autolink: ``[A-Za-z0-9.+_-]+@`` a domain with a
    period, recognised within any text node). A backslash (``\\@``) or an entity
    (``&#64;``) does not stop it: cmark-gfm joins the text nodes back before it
    looks. An ``<wbr>`` (an element GitHub keeps, with no text of its own) after
    the ``@`` splits the address into two text nodes, neither an address: shown
    and copied as it was, no link, in the table and the criteria list. The
    raw-HTML <summary> (no links there) and the fenced output are as they were."""
    answer = "mail ops@example.com or mailto:x.y+z@evil.example, a@b.co@c.example, @octocat"
    md = markdown_report(rook_workspace, rook_cli, tmp_path, "mailed", answer)
    lines = md.splitlines()
    row = next(ln for ln in lines if ln.startswith("| <code>mailed"))
    item = next(ln for ln in lines if ln.startswith("- ") and "<code>contains</code>" in ln)
    for line in (row, item):
        assert "ops@<wbr>example.com" in line and "mailto:x.y+z@<wbr>evil.example" in line, line
        assert "a@<wbr>b.co@<wbr>c.example" in line and "@&#8203;octocat" in line, line
        assert "@" not in line.replace("@<wbr>", "").replace("@&#8203;", ""), line
    summary = next(ln for ln in lines if ln.startswith("<details><summary>"))
    assert "ops@example.com" in summary and "<wbr>" not in summary
    assert answer in md.split("output:", 1)[1]
    try:  # GitHub's own renderer, where it is installed (pip install cmarkgfm)
        import cmarkgfm
        from cmarkgfm.cmark import Options
    except ImportError:
        return
    page = cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)
    assert "<a " not in page, page


def test_markdown_never_links_an_email_address_whose_domain_begins_with_an_underscore(
        rook_workspace, rook_cli, tmp_path):
    """GFM's extended email autolink takes a domain beginning with ``_``
    (``ops@_evil.example``), but the ``@`` was written ``@<wbr>`` only before a word
    character or ``-``: the ``_`` was escaped already (``\\_``), so the address
    stayed whole and GitHub made a ``mailto:`` link of it."""
    answer = "mail ops@_evil.example or x@__y.example"
    md = markdown_report(rook_workspace, rook_cli, tmp_path, "underdomain", answer)
    lines = md.splitlines()
    row = next(ln for ln in lines if ln.startswith("| <code>underdomain"))
    item = next(ln for ln in lines if ln.startswith("- ") and "<code>contains</code>" in ln)
    for line in (row, item):
        assert "ops@<wbr>\\_evil.example" in line and "x@<wbr>\\_\\_y.example" in line, line
    try:  # GitHub's own renderer, where it is installed (pip install cmarkgfm)
        import cmarkgfm
        from cmarkgfm.cmark import Options
    except ImportError:
        return
    page = cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)
    assert "<a " not in page, page


def test_markdown_never_links_an_address_after_an_underscore(rook_workspace, rook_cli, tmp_path):
    """GitHub links ``www.`` after ``_`` as after a space (``_www.evil.example``,
    ``a_www.evil.example``: cmark-gfm makes each a link), but the ``www.`` rule
    left out a ``www.`` after any word character, ``_`` too: the agent's address
    became a link in the table and the criteria list."""
    answer = "go _www.evil.example or a_www.evil.example or __www.evil.example"
    md = markdown_report(rook_workspace, rook_cli, tmp_path, "under", answer)
    lines = md.splitlines()
    row = next(ln for ln in lines if ln.startswith("| <code>under"))
    item = next(ln for ln in lines if ln.startswith("- ") and "<code>contains</code>" in ln)
    for line in (row, item):
        assert "www." not in line.replace("www\\.", ""), line
        assert "\\_www\\.evil.example" in line and "a\\_www\\.evil.example" in line, line

def test_markdown_stays_under_the_github_limit():
    from rook_plugins.report_markdown import MAX_BYTES, render

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "failed",
             "reason": "r" * 300, "turns": [{"turn": 1, "input": "i", "output": "o" * 5000,
                                             "calls": None}],
             "criteria": [{"type": "contains", "status": "failed", "reason": "no"}],
             "hooks": [], "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"s{i}"} for i in range(3000)]
    from rook_core.report import summarize

    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summarize(entries)}
    md = render(report)
    assert len(md.encode("utf-8")) <= MAX_BYTES + 1000 < 1024 * 1024
    assert "more not shown here (size limit)" in md


def test_markdown_counts_bytes_not_characters(rook_workspace, rook_cli, tmp_path):
    """GitHub's step-summary limit is 1 MiB of bytes: an agent answering in CJK
    (3 bytes a character) made a 900,000-character page of ~2.5 MB, which GitHub
    refuses whole."""
    ws = rook_workspace
    ws.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "回答" * 2500}))
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}, "concurrency": 4})
    ws.scenario({"id": "cjk", "goal": "问题" * 1000, "repeat": 120,
                 "criteria": [{"contains": "nope"}]})
    r = rook_cli("run", "-q", f"--report=markdown:{tmp_path}/r.md")
    assert r.exit_code == 1, r.stderr
    md = (tmp_path / "r.md").read_bytes()
    assert len(md) < 1024 * 1024
    assert "more not shown here (size limit)" in md.decode("utf-8")


def test_markdown_table_of_many_scenarios_stays_under_the_github_limit():
    """The scenario table had no budget: 20,000 scenarios made a 2 MB page."""
    from rook_plugins.report_markdown import render

    from rook_core.report import summarize

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "passed",
             "reason": "all 1 criteria passed", "turns": [], "criteria": [], "hooks": [],
             "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"scenario-with-a-longish-id-{i}"} for i in range(20000)]
    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summarize(entries)}
    md = render(report)
    assert len(md.encode("utf-8")) < 1024 * 1024
    assert "scenario-with-a-longish-id-0</code>" in md
    assert "more scenarios not shown here (size limit)" in md
    assert md.startswith("## ✅ Rook: all 20000 decided scenario runs passed")


def test_markdown_comment_fits_a_pull_request_comment(rook_workspace, rook_cli, tmp_path):
    """The Markdown report is documented for a pull-request comment, but GitHub
    refuses a comment body over 65,536 characters (422 "Body is too long"): 60
    failing runs with long answers made a page of ~300,000 characters, which no
    commenting step could post. ``markdown-comment`` keeps under the limit,
    with a note saying what was left out."""
    ws = rook_workspace
    ws.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            goal = sys.stdin.read()
            print(json.dumps({"output": ("good " if "pass" in goal else "bad ") + "x" * 4000}))
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}, "concurrency": 8})
    for i in range(60):
        ws.scenario({"id": f"a-pass-{i:02d}", "goal": "pass", "criteria": [{"contains": "good"}]})
        ws.scenario({"id": f"z-fail-{i:02d}", "goal": "fail", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "-q", f"--report=markdown-comment:{tmp_path}/c.md",
                 f"--report=markdown:{tmp_path}/s.md")
    assert r.exit_code == 1, r.stderr
    summary = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert len(summary) > 65_536  # the step summary keeps its own, larger budget
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert len(comment) <= 65_536 and len(comment.encode("utf-8")) <= 262_144
    assert comment.startswith("## ❌ Rook: 60 failed")
    rows = [ln for ln in comment.splitlines() if ln.startswith("| <code>")]
    assert len(rows) == 120  # the whole table, then what details fit
    assert comment.count("<details>") == comment.count("</details>") >= 1
    assert "more not shown here (size limit" in comment


def test_markdown_comment_names_only_as_many_gate_misses_as_fit():
    """The lines under the heading listed every scenario that missed (or had no
    rate for) the --min-pass-rate gate, outside any budget: 3,000 scenarios
    missing it made a 100,000-character comment, which GitHub refuses."""
    from rook_plugins.report_markdown import COMMENT_CHARS, iter_render

    from rook_core.report import summarize

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "failed",
             "reason": "1 criterion failed", "turns": [], "criteria": [], "hooks": [],
             "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"scenario-{i}"} for i in range(3000)]
    summary = summarize(entries)
    summary["gate"] = {"min_pass_rate": 0.9, "ungated": [f"other-{i}" for i in range(3000)],
                       "missed": [{"id": e["id"], "pass_rate": 0.0, "passed": 0, "decided": 1}
                                  for e in entries]}
    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summary}
    md = "".join(iter_render(report, COMMENT_CHARS, len))
    assert len(md) <= 65_536, len(md)
    assert md.startswith("## ❌ Rook: 3000 scenarios missed the pass-rate gate; 3000 ungated")
    assert "<code>scenario-0</code> 0.0%" in md and "<code>other-0</code>" in md
    assert re.search(r"and \d+ more \(see the JSON report's `summary.gate`\)", md)


def test_markdown_cut_table_lists_what_did_not_pass_first():
    """Past the size budget, the table's last rows were left out whatever they
    were: 20,000 scenarios whose last ones failed showed 6,000 passes and hid
    the failures."""
    from rook_plugins.report_markdown import render

    from rook_core.report import summarize

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "passed",
             "reason": "1 criterion passed", "turns": [], "criteria": [], "hooks": [],
             "extra": {}, "content_hash": "h"}
    entries = [{**entry, "id": f"scenario-with-a-longish-id-{i}"} for i in range(20000)]
    for e in entries[-3:]:
        e.update(status="failed", reason="1 criterion failed")
    report = {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
              "scenarios": entries, "summary": summarize(entries)}
    md = render(report)
    assert len(md.encode("utf-8")) < 1024 * 1024
    rows = [ln for ln in md.splitlines() if ln.startswith("| <code>")]
    assert [r.split("</code>")[0] for r in rows[:3]] == [
        f"| <code>scenario-with-a-longish-id-{i}" for i in (19997, 19998, 19999)]
    assert rows[3].startswith("| <code>scenario-with-a-longish-id-0</code>")
    assert re.search(r"_\d+ more scenarios not shown here \(size limit\), all passed;", md)


def _many(n, **extra):
    from rook_core.report import summarize

    entry = {"id": "x", "name": "x", "repeat_index": 1, "repeat_count": 1, "status": "passed",
             "reason": "1 criterion passed", "turns": [], "criteria": [], "hooks": [],
             "extra": {}, "content_hash": "h", **extra}
    entries = [{**entry, "id": f"scenario-with-a-longish-id-{i}"} for i in range(n)]
    return {"run": {"id": "r", "project": "p", "agent": "a", "profile": {"id": "p"}},
            "scenarios": entries, "summary": summarize(entries)}


def test_reports_count_one_left_out_in_the_singular(rook_workspace, rook_cli):
    """"1 more scenarios not shown here", "1 more run(s) with warnings" and "1
    more scenarios are in the table below": a count of one read as many."""
    from rook_plugins.report_html import CHART_LIMIT
    from rook_plugins.report_html import render as html
    from rook_plugins.report_markdown import MAX_WARNINGS
    from rook_plugins.report_markdown import render as markdown

    from rook_core.report import summarize

    md = markdown(_many(20000))
    left = int(re.search(r"_(\d+) more scenarios not shown here", md).group(1))
    md = markdown(_many(20000 - left + 1))  # rows of one size: one fewer fits, one left out
    assert "\n_1 more scenario not shown here (size limit), all passed; see the" in md, md[-300:]
    md = markdown(_many(MAX_WARNINGS + 1, warnings=["close hook failed"]))
    assert "\n_1 more run with warnings; see the JSON or HTML report._" in md
    md = markdown(_many(MAX_WARNINGS + 2, warnings=["close hook failed"]))
    assert "\n_2 more runs with warnings; see the JSON or HTML report._" in md
    rook_workspace.script("agent.sh", "#!/bin/sh\ncat >/dev/null; echo '{\"output\": \"hi\"}'\n")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    (entry,) = r.report["scenarios"]

    def page(n):  # the run's report, its one entry as n scenarios
        entries = [{**entry, "id": f"s{i}"} for i in range(n)]
        return html({**r.report, "scenarios": entries, "summary": summarize(entries)})

    assert "1 more scenario is in the table below." in page(CHART_LIMIT + 1)
    assert "2 more scenarios are in the table below." in page(CHART_LIMIT + 2)


@pytest.mark.parametrize("gate, code", [(None, 1), ("0.5", 0), ("0.75", 1)])
def test_min_pass_rate_gates_each_scenario(rook_workspace, rook_cli, tmp_path, monkeypatch,
                                           gate, code):
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "flaky", "goal": "flaky", "criteria": [{"contains": "good"}]})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    args = ["run", "--json", "--repeat", "4"] + (["--min-pass-rate", gate] if gate else [])
    r = rook_cli(*args)
    assert r.exit_code == code, r.stderr
    summary = r.report["summary"]
    if gate:
        assert summary["gate"]["min_pass_rate"] == float(gate)
        missed = [m["id"] for m in summary["gate"]["missed"]]
        assert missed == ([] if code == 0 else ["flaky"])
    else:
        assert "gate" not in summary


@pytest.mark.parametrize("gate, code", [("0.6666", 0), ("0.66667", 1)])
def test_min_pass_rate_gates_the_exact_rate(rook_workspace, rook_cli, tmp_path, monkeypatch,
                                            gate, code):
    # 2 passes in 3 runs is 0.6666...: below a 0.66667 gate, though the report
    # rounds it to 0.6667.
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "flaky", "goal": "flaky", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--json", "--repeat", "3", "-j", "1", "--min-pass-rate", gate)
    assert r.report["summary"]["by_scenario"][0]["passed"] == 2
    assert r.exit_code == code, r.stderr
    missed = [m["id"] for m in r.report["summary"]["gate"]["missed"]]
    assert missed == ([] if code == 0 else ["flaky"])


def test_a_gate_met_by_no_decided_run_is_never_shown_as_passed(rook_workspace, rook_cli, tmp_path):
    """Every scenario unverifiable under --min-pass-rate: the HTML said "passed",
    Markdown "every scenario reached the pass-rate gate" and the table the same,
    where without the gate the run reads unverifiable (exit 0 either way)."""
    rook_workspace.script("agent.sh", '#!/bin/sh\ncat >/dev/null; echo \'{"output": "ok"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "bare", "goal": "g"})  # no criteria: unverifiable
    r = rook_cli("run", "--min-pass-rate", "0.9", "--report", f"html:{tmp_path}/r.html",
                 "--report", f"markdown:{tmp_path}/r.md", "--report", f"junit:{tmp_path}/r.xml")
    assert r.exit_code == 0, r.stderr
    assert "gate --min-pass-rate 0.9: no run was decided" in r.stdout
    assert (tmp_path / "r.md").read_text().startswith("## ❔ Rook: nothing was verified (gate 0.9)")
    assert re.search(r"<title>Rook run \S+ — unverifiable", (tmp_path / "r.html").read_text())
    # JUnit said gate=met
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "r.xml").iter("property")}
    assert props["gate"] == "unverifiable" and props["gate_ungated"] == "bare"


def test_min_pass_rate_is_validated(rook_workspace, rook_cli):
    r = rook_cli("run", "--min-pass-rate", "80")
    assert r.exit_code == 2 and "--min-pass-rate" in r.stderr


def test_a_min_pass_rate_of_minus_zero_is_shown_as_0(rook_workspace, rook_cli, tmp_path):
    # accepted (-0 is within 0 to 1), it was shown as "gate --min-pass-rate -0",
    # "gate (-0)" in Markdown and -0.0 in the JSON report
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    md = tmp_path / "r.md"
    r = rook_cli("run", "--min-pass-rate", "-0", "--report", f"markdown:{md}")
    assert r.exit_code == 0, r.stderr
    assert "gate --min-pass-rate 0: every scenario reached it" in r.stdout, r.stdout
    assert "gate (0)" in md.read_text() and "-0" not in md.read_text().split("\n")[0]
    gate = rook_cli("report", "latest", "--json").report["summary"]["gate"]
    assert str(gate["min_pass_rate"]) == "0.0", gate


def test_unknown_report_format_names_the_installed_ones(rook_workspace, rook_cli):
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--report", "pdf:out.pdf")
    assert r.exit_code == 2
    for name in ("html", "json", "junit", "markdown"):
        assert name in r.stderr
    assert "did you mean" not in r.stderr, r.stderr  # pdf looks like none of them


def test_a_misspelt_report_format_is_told_the_one_it_looks_like(rook_workspace, rook_cli):
    # 'unknown format' with a list, where a misspelt criterion type or transport key
    # is told 'did you mean ...?'
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--report", "junitt:out.xml")
    assert r.exit_code == 2, r.stderr
    assert "unknown format 'junitt'" in r.stderr and "did you mean junit:out.xml?" in r.stderr
    r = rook_cli("run", "--report", "JSON:out.json")
    assert r.exit_code == 2 and "did you mean json:out.json?" in r.stderr, r.stderr
    r = rook_cli("run", "--executor", "dsk")
    assert r.exit_code == 2 and "--executor dsk: unknown" in r.stderr, r.stderr
    assert "did you mean dask?" in r.stderr, r.stderr


class CsvReporter:
    @hookimpl
    def rook_register_reporters(self, register):
        def write(report, path):
            rows = [f"{s['id']},{s['repeat_index']},{s['status']}" for s in report["scenarios"]]
            path.write_text("\n".join(rows) + "\n")

        register("csv", write)


def test_a_plugin_reporter_is_used_like_the_built_ins(rook_workspace, rook_cli, rook_plugin,
                                                      tmp_path):
    rook_plugin(CsvReporter())
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--report", f"csv:{tmp_path}/r.csv")
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "r.csv").read_text() == "pass,1,passed\n"


def test_statistics_functions():
    from rook_core import stats

    assert stats.wilson(0, 0) is None
    assert stats.wilson(81, 263) == (0.2553, 0.3662)  # a textbook example
    assert stats.wilson(10, 10) == (0.7225, 1.0)
    assert stats.wilson(0, 10) == (0.0, 0.2775)
    assert stats.outcome(["passed", "unverifiable"]) == "flaky"  # results differ
    assert stats.outcome(["failed", "error"]) == "failed"  # never passed
    assert stats.is_flaky(["failed", "error"])  # though its results differ
    assert stats.outcome(["failed", "failed", "not_runnable"]) == "failed"
    assert stats.outcome(["passed", "stopped"]) == "flaky"
    assert stats.outcome(["unverifiable", "not_runnable"]) == "unverified"
    entries = [{"id": "a", "repeat_index": i, "status": s}
               for i, s in enumerate(["passed", "unverifiable", "passed"], 1)]
    (agg,) = stats.by_scenario(entries)
    assert agg["decided"] == 2 and agg["pass_rate"] == 1.0
    assert agg["pass_all"] is False  # pass^N needs all N
    assert agg["flaky"] is True  # an unverifiable run among passes: the results differ
    gate = stats.gate([agg, {**agg, "id": "b", "decided": 0, "pass_rate": None}], 0.9)
    assert gate == {"min_pass_rate": 0.9, "missed": [], "ungated": ["b"]}


class BrokenReporter:
    @hookimpl
    def rook_register_reporters(self, register):
        def write(report, path):
            raise KeyError("summary")

        register("broken", write)


def test_a_broken_reporter_is_named_without_a_traceback(rook_workspace, rook_cli, rook_plugin,
                                                        tmp_path):
    rook_plugin(BrokenReporter())
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--report", f"broken:{tmp_path}/x", "--report", f"json:{tmp_path}/r.json")
    assert r.exit_code == 1 and r.exception is None
    assert "the 'broken' reporter" in r.stderr and "KeyError" in r.stderr
    assert "Traceback" not in r.stderr
    (run_id,) = [p.name for p in rook_workspace.runs_dir.iterdir()]
    assert (rook_workspace.run_dir(run_id) / "report.json").is_file()


class EscapingReporter:
    @hookimpl
    def rook_register_reporters(self, register):
        def write(report, path):
            raise RuntimeError("upload refused\x1b[2J\x07 by the server")

        register("escaping", write)


def test_a_reporters_failure_is_printed_with_its_control_characters_escaped(
        rook_workspace, rook_cli, rook_plugin, tmp_path):
    """A reporter's message reached the terminal raw (ESC [2J cleared the screen,
    BEL rang), from rook run and rook report alike; it is shown escaped, as every
    other printer shows a plugin's text."""
    rook_plugin(EscapingReporter())
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--report", f"escaping:{tmp_path}/x")
    assert r.exit_code == 1 and r.exception is None, r.stderr
    shown = "failed: RuntimeError: upload refused\\x1b[2J\\x07 by the server"
    assert shown in r.stderr and "\x1b" not in r.stderr and "\x07" not in r.stderr, r.stderr
    (run_id,) = [p.name for p in rook_workspace.runs_dir.iterdir()]
    again = rook_cli("report", run_id, "--report", f"escaping:{tmp_path}/y")
    assert again.exit_code == 1 and again.exception is None, again.stderr
    assert shown in again.stderr and "\x1b" not in again.stderr, again.stderr
    assert "\x07" not in again.stderr


class HalfwayReporter:
    @hookimpl
    def rook_register_reporters(self, register):
        def write(report, path):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("id,status\n")
                for entry in report["scenarios"]:
                    fh.write(f"{entry['id']},{entry['status']}\n")
                    raise RuntimeError("the upload of the attachments failed")

        register("halfway", write)


def test_a_reporter_that_fails_midway_leaves_no_half_written_report(
        rook_workspace, rook_cli, rook_plugin, tmp_path):
    rook_plugin(HalfwayReporter())
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.csv").write_text("the last good report\n")
    (out / "link.csv").symlink_to(out / "old.csv")
    for target in ("new.csv", "old.csv", "link.csv"):
        r = rook_cli("run", "--report", f"halfway:{out}/{target}")
        assert r.exit_code == 1 and r.exception is None, r.stderr
        assert "the 'halfway' reporter" in r.stderr and "upload of the attachments" in r.stderr
        # the file a CI step picks up is never a truncated one: what was there stays
        assert not (out / "new.csv").exists()
        assert (out / "old.csv").read_text() == "the last good report\n"
        assert (out / "link.csv").is_symlink()
        assert sorted(p.name for p in out.iterdir()) == ["link.csv", "old.csv"], target


# A third-party reporter that writes its page and, beside it, the files the page
# links to, each named from the page's own path: rook-site, installed for real.
SITE = """
import os

from rook_core.hookspecs import hookimpl


def write_site(report, path):
    assets = path.with_name(path.stem + "_files")
    assets.mkdir(exist_ok=True)
    (assets / "style.css").write_text("body { color: teal }\\n")
    path.with_suffix(".json").write_text('{"scenarios": %d}\\n' % len(report["scenarios"]))
    if os.environ.get("SITE_FAIL"):
        raise RuntimeError("the upload of the page failed")
    path.write_text(f'<link rel="stylesheet" href="{assets.name}/style.css">\\n')


@hookimpl
def rook_register_reporters(register):
    register("site", write_site)
"""


def test_a_reporters_companion_files_are_named_from_the_target(
        rook_workspace, rook_cli, rook_distribution, tmp_path, monkeypatch):
    # Rook gave the reporter a temporary file, '.PID.tmp.index.html', and renamed only
    # that: the companion files kept the temporary name ('.PID.tmp.index_files/'),
    # hidden, left behind by every run, and the page linked to that name
    rook_distribution("rook-site", {"site": "rook_site"}, {"rook_site.py": SITE})
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    out = tmp_path / "out"
    for _ in range(2):  # and again, over the files of the first run
        r = rook_cli("run", "--report", f"site:{out}/index.html")
        assert r.exit_code == 0, r.stderr
        assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
            "index.html", "index.json", "index_files", "index_files/style.css"]
        page = (out / "index.html").read_text()
        assert page == '<link rel="stylesheet" href="index_files/style.css">\n'
        assert (out / "index.json").read_text() == '{"scenarios": 1}\n'
    # a reporter that fails leaves the files of the last good report, and nothing else
    (out / "index_files" / "style.css").write_text("the last good style\n")
    monkeypatch.setenv("SITE_FAIL", "1")
    r = rook_cli("run", "--report", f"site:{out}/index.html")
    assert r.exit_code == 1 and "upload of the page failed" in r.stderr, r.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "index.html", "index.json", "index_files", "index_files/style.css"]
    assert (out / "index_files" / "style.css").read_text() == "the last good style\n"
    # a file where the companion folder goes: 'cannot write: Not a directory' named
    # nothing; the message names what is in the way
    monkeypatch.delenv("SITE_FAIL")
    shutil.rmtree(out / "index_files")
    (out / "index_files").write_text("a file in the way\n")
    r = rook_cli("run", "--report", f"site:{out}/index.html")
    assert r.exit_code == 1 and r.exception is None, r.stderr
    blocked = os.path.join(os.path.realpath(out), "index_files")
    assert f"site:{out}/index.html: cannot write {blocked}: Not a directory" in r.stderr, r.stderr


SPREAD = """
from rook_core.hookspecs import hookimpl


def write_spread(report, path):
    for name in ("a", "b", "c", "d", "e", "f"):  # companions beside the report, and in folders
        path.with_name(f"{path.stem}_{name}.txt").write_text("new\\n")
        folder = path.with_name(f"{path.stem}_{name}")
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "x.txt").write_text("new\\n")
        (folder / "y.txt").write_text("new\\n")
    path.write_text("new report\\n")


@hookimpl
def rook_register_reporters(register):
    register("spread", write_spread)
"""


def test_a_companion_that_cannot_be_moved_leaves_the_last_report_whole(
        rook_workspace, rook_cli, rook_distribution, tmp_path):
    # a file where one companion folder goes failed the report, but the companions
    # moved before it stayed: new files beside the old report, half of a report
    rook_distribution("rook-spread", {"spread": "rook_spread"}, {"rook_spread.py": SPREAD})
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    out = tmp_path / "out"
    out.mkdir()
    real = os.path.realpath(out)

    def files():
        return {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file()}

    for blocker, kind, why in (("r_e", "file", "Not a directory"),  # where a folder goes
                               ("r_e/sub", "file", "Not a directory"),  # deeper
                               ("r_d.txt", "folder", "Is a directory")):  # where a file goes
        shutil.rmtree(out)
        out.mkdir()
        (out / "r.txt").write_text("old report\n")
        (out / "r_a.txt").write_text("old\n")
        if blocker != "r_e":
            (out / "r_e").mkdir()
            (out / "r_e" / "y.txt").write_text("old\n")
        if kind == "file":
            (out / blocker).write_text("in the way\n")
        else:
            (out / blocker).mkdir()
        before = files()
        r = rook_cli("run", "--report", f"spread:{out}/r.txt")
        assert r.exit_code == 1 and r.exception is None, r.stderr
        assert f"cannot write {real}/{blocker}: {why}" in r.stderr, r.stderr
        assert files() == before, blocker  # nothing moved: the last report is whole
        assert not [p for p in out.iterdir() if p.name.startswith(".")]  # nor left behind


AWAY = """
import os

from rook_core.hookspecs import hookimpl
from rook_core.models import PASSED, Verdict


def write_away(report, path):
    os.chdir(os.environ["AWAY_DIR"])  # a plugin that works from a folder of its own
    path.write_text("away\\n")


class Away:
    def __call__(self, config, view):  # a judge too: its chdir is the whole process's
        os.chdir(os.environ["AWAY_DIR"])
        return Verdict(PASSED, "judged from away")


@hookimpl
def rook_register_reporters(register):
    register("away", write_away)


@hookimpl
def rook_register_judges(register):
    register("away", Away())
"""


def test_a_reporter_that_changes_the_working_folder_moves_no_other_report(
        rook_workspace, rook_cli, rook_distribution, tmp_path, monkeypatch):
    # the next --report with a relative path was written under the folder the
    # reporter had moved to (/out/r.json from a reporter that did chdir('/')), exit 0
    rook_distribution("rook-away", {"away": "rook_away"}, {"rook_away.py": AWAY})
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    here, away = tmp_path / "here", tmp_path / "away"
    here.mkdir()
    away.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("AWAY_DIR", str(away))
    r = rook_cli("run", "--report", "away:out/a.txt", "--report", "json:out/r.json")
    assert r.exit_code == 0 and r.exception is None, r.stderr
    assert (here / "out" / "a.txt").read_text() == "away\n"
    assert (here / "out" / "r.json").is_file() and not (away / "out").exists()
    # a judge that moved during the run: the reports still go where the user said
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"judge": {"name": "away"}}]})
    r = rook_cli("run", "--report", "json:out/judged.json")
    assert r.exit_code == 0 and r.exception is None, r.stderr
    assert (here / "out" / "judged.json").is_file() and not (away / "out").exists()


def test_a_reporter_writing_to_standard_output_leaves_no_companion_files_behind(
        rook_workspace, tmp_path):
    # --report site:- gave the reporter $TMPDIR/.rook-report-XXXX.stdout, and the
    # folder it wrote beside it ($TMPDIR/.rook-report-XXXX_files) stayed, one per run
    import subprocess
    import sys

    from rook_core.testing import make_distribution

    site = make_distribution(tmp_path / "site", "rook-site", {"site": "rook_site"},
                             {"rook_site.py": SITE})
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    temp = tmp_path / "temp"
    temp.mkdir()
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": path}
    proc = subprocess.run([sys.executable, "-m", "rook_core", "run", "--report", "site:-"],
                          cwd=rook_workspace.root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('<link rel="stylesheet"'), proc.stdout
    assert list(temp.iterdir()) == []


class LeakyReporter:
    @hookimpl
    def rook_register_reporters(self, register):
        def write(report, path):
            raise RuntimeError(f"cannot reach the upload service with {os.environ['AGENT_KEY']}")

        register("leaky", write)


def test_a_failing_reporter_never_shows_a_secret(rook_workspace, rook_cli, rook_plugin,
                                                 tmp_path, monkeypatch):
    secret = "sk-live-reporter-5ecret"
    monkeypatch.setenv("AGENT_KEY", secret)
    rook_plugin(LeakyReporter())
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "env": [{"variable": "AGENT_KEY", "purpose": "the agent's key"}]})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    target = f"leaky:{tmp_path}/x"
    for args in (("run", "--run-name", "s1", "--shard", "1/1", "--report", target),
                 ("merge", "--run", "s1", "--report", target),
                 ("report", "s1", "--report", target)):
        r = rook_cli(*args[:1], "-w", str(rook_workspace.root), *args[1:])
        assert r.exit_code == 1, (args, r.stderr)
        assert "the 'leaky' reporter" in r.stderr
        assert "[redacted:AGENT_KEY]" in r.stderr, (args, r.stderr)
        assert secret not in r.stdout + r.stderr, args


# An agent that leaves a mark, so a test can tell that nothing ran; with REPLACE set,
# it puts a file where that directory was (the report's folder vanishes mid-run).
MARKING_AGENT = r"""
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    touch "$MARK"
    if [ -n "$REPLACE" ]; then rm -rf "$REPLACE" && touch "$REPLACE"; fi
    cat >/dev/null
    echo '{"output": "all good"}'
"""


@pytest.fixture
def marking(rook_workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("MARK", str(tmp_path / "ran"))
    rook_workspace.script("agent.sh", MARKING_AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    return tmp_path


@pytest.mark.parametrize("target, problem", [
    ("afile/x.json", "afile is not a directory"),
    ("afile/deeper/x.json", "afile is not a directory"),
    ("outdir", "outdir is a directory"),
    ("/proc/nope/x.json", "cannot create directory /proc/nope: No such file or directory"),
])
def test_a_report_that_cannot_be_written_is_refused_before_anything_runs(
        rook_workspace, rook_cli, marking, target, problem):
    (marking / "afile").touch()
    (marking / "outdir").mkdir()
    path = target if target.startswith("/") else f"{marking}/{target}"
    r = rook_cli("run", "--json", "--report", f"junit:{marking}/fine/r.xml",
                 "--report", f"json:{path}")
    assert r.exit_code == 2, r.stderr
    assert f"--report json:{path}: " in r.stderr and problem in r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert not (marking / "ran").exists()  # no hook ran
    assert list(rook_workspace.runs_dir.iterdir()) == []  # no run directory
    assert not (marking / "fine").exists() and not (marking / "afile").is_dir()
    assert sorted(p.name for p in (marking / "outdir").iterdir()) == []  # no probe left


def test_a_missing_report_folder_is_fine_and_made_at_the_end(rook_workspace, rook_cli, marking):
    r = rook_cli("run", "--report", f"json:{marking}/new/deep/r.json")
    assert r.exit_code == 0, r.stderr
    assert json.loads((marking / "new/deep/r.json").read_text())["summary"]["passed"] == 1


def test_a_report_that_fails_at_the_end_keeps_the_run_its_json_and_its_exit_code(
        rook_workspace, rook_cli, marking, monkeypatch):
    monkeypatch.setenv("REPLACE", str(marking / "out"))
    (marking / "out").mkdir()
    r = rook_cli("run", "--json", "--report", f"json:{marking}/out/r.json",
                 "--report", f"markdown:{marking}/md/r.md")
    assert r.exit_code == 1 and r.exception is None  # passed, but a report is missing
    assert r.statuses() == {"pass": "passed"}  # the --json document is whole
    run_id = r.report["run"]["id"]
    # named as before the run: the folder that became a file, not a bare "File exists"
    assert f"rook: error: --report json:{marking}/out/r.json: {marking}/out is not a directory" in r.stderr
    assert f"rook report {run_id} --report json:{marking}/out/r.json" in r.stderr
    assert (marking / "md/r.md").is_file()  # the other report is written
    assert "Traceback" not in r.stderr
    # the table too, and a failed scenario's exit code keeps its meaning
    rook_workspace.scenario({"id": "fail", "goal": "fail", "criteria": [{"contains": "nope"}]})
    (marking / "out").unlink()
    (marking / "out").mkdir()
    r = rook_cli("run", "--report", f"json:{marking}/out/r.json")
    assert r.exit_code == 1
    assert f"{marking}/out is not a directory" in r.stderr
    assert "1 passed" in r.stdout and "1 failed" in r.stdout


# execute answers; close fails (exit 3) for every scenario but "tidy".
CLOSE_FAILS = r"""
    #!/bin/bash
    case "$1" in
      execute) cat >/dev/null; echo '{"output": "all good", "conversation": "c1"}';;
      close) [ "$ROOK_SCENARIO_ID" = tidy ] && exit 0
             echo "session c1 is gone: 404" >&2; exit 3;;
    esac
    exit 0
"""


def test_a_failed_close_hook_is_a_warning_everywhere_people_look(rook_workspace, rook_cli,
                                                                  tmp_path):
    ws = rook_workspace
    ws.script("agent.sh", CLOSE_FAILS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh", "close": "scripts/agent.sh"}})
    ws.scenario({"id": "kept", "goal": "g", "criteria": [{"contains": "good"}]})
    ws.scenario({"id": "tidy", "goal": "g", "criteria": [{"contains": "good"}]})
    out = tmp_path / "out"
    r = rook_cli("run", *[f"--report={f}:{out}/r.{e}" for f, e in (
        ("json", "json"), ("junit", "xml"), ("markdown", "md"), ("html", "html"))])
    assert r.exit_code == 0, r.stderr  # a close failure keeps the scenario passed
    note = "warning: close failed: exited with code 3"
    whole = "warning: close failed: exited with code 3: session c1 is gone: 404"
    # the progress line and the results table: a short note after the reason
    (progress,) = [line for line in r.stderr.splitlines() if " kept  " in line]
    assert progress.endswith(f"1 criterion passed; {note}")
    (row,) = [line for line in r.stdout.splitlines() if line.startswith("kept ")]
    assert row.endswith(f"; {note}")
    (tidy,) = [line for line in r.stdout.splitlines() if line.startswith("tidy ")]
    assert "warning" not in tidy
    assert "warnings on 1 scenario run: kept" in r.stdout
    # the JSON report keeps the whole warning
    report = json.loads((out / "r.json").read_text())
    by_id = {s["id"]: s for s in report["scenarios"]}
    assert by_id["kept"]["warnings"] == [whole.removeprefix("warning: ")]
    assert by_id["tidy"]["warnings"] == []
    # markdown: a Warnings section, though every run passed
    md = (out / "r.md").read_text()
    assert f"### Warnings\n\n- ⚠️ <code>kept</code> (passed): {whole}\n" in md
    assert "tidy</code> (passed)" not in md and "What did not pass" not in md
    # JUnit: the passed test case carries it in system-err
    cases = {c.get("name"): c for c in ET.parse(out / "r.xml").iter("testcase")}
    assert cases["kept"].findtext("system-err") == whole
    assert cases["kept"].find("failure") is None and cases["tidy"].find("system-err") is None
    # HTML: in the run's summary line and in its details
    page = (out / "r.html").read_text()
    assert f"1 criterion passed; {note}</span>" in page and f">{whole}</div>" in page
    # rook runs show: the same table
    shown = rook_cli("runs", "show", "latest")
    assert shown.exit_code == 0
    assert any(line.startswith("kept ") and line.endswith(note) for line in shown.stdout.splitlines())
    assert "warnings on 1 scenario run: kept" in shown.stdout


def test_warning_notes_stay_short():
    from rook_core.report import reason_text, warning_lines, warning_note

    long = "close failed: exited with code 3: " + "x" * 500
    timeout = "close failed: timed out after 5 s; its process group was killed"
    entry = {"reason": "all 2 criteria passed", "warnings": [long, timeout]}
    assert warning_note(entry) == "warning: close failed: exited with code 3 (+1 more)"
    assert warning_note({"warnings": [timeout]}) == "warning: close failed: timed out after 5 s"
    assert warning_note({"warnings": []}) == warning_note({}) == ""
    assert warning_lines(entry) == [f"warning: {long}", f"warning: {timeout}"]
    assert reason_text(entry) == "all 2 criteria passed; " + warning_note(entry)
    cut = reason_text({"reason": "r" * 300, "warnings": [long]}, 90)
    assert len(cut) <= 90 and cut.endswith("; warning: close failed: exited with code 3")
    assert reason_text({"reason": "a\nb  c"}) == "a b c"


def test_a_report_goes_through_a_link_and_into_a_fifo_never_replacing_them(
        rook_workspace, rook_cli, marking):
    import threading

    tmp = marking
    (tmp / "tgt.json").write_text("old")
    (tmp / "link.json").symlink_to(tmp / "tgt.json")
    fifo = tmp / "pipe.xml"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = rook_cli("run", "--json", "--report", f"json:{tmp / 'link.json'}",
                 "--report", f"junit:{fifo}")
    reader.join(timeout=30)
    assert r.exit_code == 0, r.stderr
    assert (tmp / "link.json").is_symlink()  # the link stays; the file it names is the report
    assert json.loads((tmp / "tgt.json").read_text())["run"]["id"] == r.report["run"]["id"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and got and got[0].startswith(b"<?xml")


def test_a_report_through_a_link_to_a_folder_not_made_yet(rook_workspace, rook_cli, marking):
    tmp = marking
    (tmp / "d.json").symlink_to(tmp / "later" / "sub" / "out.json")
    r = rook_cli("run", "--json", "--report", f"json:{tmp / 'd.json'}")
    assert r.exit_code == 0, r.stderr
    assert (tmp / "d.json").is_symlink() and (tmp / "later/sub/out.json").is_file()


@pytest.mark.parametrize("char", ["o", "<", "日"])
def test_html_of_many_long_runs_stays_a_size_a_browser_opens(rook_workspace, rook_cli,
                                                              tmp_path, char):
    """Each text on the page was cut to 20,000 characters, but the page had no
    bound: 2,000 failed runs with long answers made an 80 MB page (10,000 of
    them, 400 MB), which no one attaches to a mail or opens in a browser. The
    texts now share the page's budget as JUnit's do, as written: an answer of
    ``<`` (``&lt;`` on the page) or of CJK text (3 bytes a character) made 85 MB
    and 65 MB of the same 10,000,000 characters."""
    from rook_plugins.report_html import write_html

    from rook_core.report import summarize

    rook_workspace.script("agent.py", f"""
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({{"output": "{char}" * 30000}}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "long", "goal": char * 30000,
                             "criteria": [{"contains": "nope"}]})
    report = rook_cli("run", "--json").report
    entries = [{**report["scenarios"][0], "id": f"s{i}"} for i in range(2000)]
    many = {**report, "scenarios": entries, "summary": summarize(entries)}
    write_html(many, tmp_path / "many.html")
    assert (tmp_path / "many.html").stat().st_size < 30 * 1024 * 1024
    page = (tmp_path / "many.html").read_text(encoding="utf-8")
    assert 'id="s-s1999"' in page and "more chars]" in page
    write_html(report, tmp_path / "one.html")  # one run keeps the whole share
    shown = {"<": "&lt;"}.get(char, char)
    assert shown * 19_000 in (tmp_path / "one.html").read_text(encoding="utf-8")


def test_html_shares_a_runs_part_of_the_page_among_its_texts(rook_workspace, rook_cli, tmp_path):
    """The texts of a run took its part of the page's bytes in the order the page
    shows them: a long criterion evidence of ``<`` (``&lt;`` on the page) left the
    turns after it 200 characters each on a page of 2,000 runs, and a criterion's
    reason was not cut at all (a page of 2,000 runs with long reasons made 267 MB).
    Each text now gets a fair share of its run's part: one that needs less leaves
    the rest to the others."""
    from rook_plugins.report_html import write_html

    from rook_core.report import summarize

    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "o" * 30000}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "long", "goal": "q" * 30000,
                             "criteria": [{"contains": "nope"}]})
    report = rook_cli("run", "--json").report
    entry = report["scenarios"][0]
    entry = {**entry, "criteria": [{**c, "reason": "<" * 30000, "evidence": "<" * 30000}
                                   for c in entry["criteria"]]}
    entries = [{**entry, "id": f"s{i}"} for i in range(2000)]
    many = {**report, "scenarios": entries, "summary": summarize(entries)}
    write_html(many, tmp_path / "many.html")
    assert (tmp_path / "many.html").stat().st_size < 30 * 1024 * 1024
    page = (tmp_path / "many.html").read_text(encoding="utf-8")
    run = page[page.index('id="s-s1000"'):page.index('id="s-s1001"')]
    shown = [len(m) for m in re.findall(r"<pre>(q+|o+)", run)]
    assert len(shown) == 2 and min(shown) > 1000, shown  # input, output: never 200
    lt = [len(m) // 4 for m in re.findall(r"(?:&lt;){100,}", run)]
    assert len(lt) == 2 and max(lt) < 3000, lt  # the reason and the evidence: cut too



def test_html_keeps_its_texts_to_the_page_bound_for_runs_of_many_turns(
        rook_workspace, rook_cli, tmp_path):
    """reports.md keeps the page to 25,000,000 bytes of texts as written, but each
    text kept 200 characters however many a run had: 2,000 runs of 10 turns
    answering HTML (``<`` is ``&lt;``, four bytes) made 32 MB of texts (a 40 MB
    page), and 50 turns five times that. A run whose texts at 200 characters
    each would pass its part of the page now gives each fewer."""
    from rook_plugins.report_html import write_html

    from rook_core.report import summarize

    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "<p>" * 2000}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "many", "goal": "<" * 5000, "criteria": [{"contains": "nope"}]})
    report = rook_cli("run", "--json").report
    entry = report["scenarios"][0]
    turn = entry["turns"][0]
    entry = {**entry, "turns": [{**turn, "turn": k + 1} for k in range(10)]}
    entries = [{**entry, "id": f"s{i}"} for i in range(2000)]
    many = {**report, "scenarios": entries, "summary": summarize(entries)}
    write_html(many, tmp_path / "many.html")
    page = (tmp_path / "many.html").read_text(encoding="utf-8")
    texts = re.findall(r"<pre>(.*?)</pre>", page, re.S)
    assert sum(len(t.encode("utf-8")) for t in texts) <= 25_000_000
    run = page[page.index('id="s-s1000"'):page.index('id="s-s1001"')]
    shown = [len(m) // 4 for m in re.findall(r"<pre>((?:&lt;){2,})", run)]
    assert len(shown) == 10 and min(shown) > 100, shown  # each turn's input still shown

def test_html_holds_a_huge_usage_and_criterion_id_to_a_texts_share(rook_workspace, rook_cli,
                                                                  tmp_path):
    """A turn's ``usage`` (any object of numbers a hook returns) and a criterion's
    ``id`` were written whole, outside the page's budget of texts: an agent whose
    usage held 60,000 counters made a 2 MB page of one run (a few hundred such
    runs, gigabytes), and so did a criterion labelled with a 1 MB id. Both are now
    texts like the others, cut to their share (``... [N more chars]``); a usage of
    a few counts is shown as before."""
    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            usage = {"input": 12, "output": 3, **{f"k{i:06d}": i for i in range(60000)}}
            print(json.dumps({"output": "hi", "usage": usage}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "big", "goal": "g",
                             "criteria": [{"contains": "nope", "id": "L" * 1_000_000}]})
    r = rook_cli("run", "-q", f"--report=html:{tmp_path}/r.html")
    assert r.exit_code == 1, r.stderr
    assert (tmp_path / "r.html").stat().st_size < 200_000
    page = html.unescape((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "L" * 10_000 in page and "L" * 30_000 not in page
    assert '"input": 12' in page and "k000100" in page and "k059999" not in page
    assert page.count("more chars]") == 2
    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "hi", "usage": {"output": 3, "input": 12}}))
    """)
    r = rook_cli("run", "-q", f"--report=html:{tmp_path}/small.html")
    assert r.exit_code == 1, r.stderr
    small = html.unescape((tmp_path / "small.html").read_text(encoding="utf-8"))
    assert 'usage: {"input": 12, "output": 3}' in small  # as before


def test_html_anchors_of_repeats_never_collide_with_another_scenarios(
        rook_workspace, rook_cli, tmp_path):
    # Run 2 of scenario `a` and the only run of scenario `a-2` once both got the
    # anchor `s-a-2`: a duplicate id, and the table's link to `a-2` could land on `a`.
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "a", "goal": "pass", "repeat": 3,
                             "criteria": [{"contains": "good"}]})
    rook_workspace.scenario({"id": "a-2", "goal": "pass", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", f"--report=html:{tmp_path}/r.html")
    assert r.exit_code == 0, r.stderr
    page = _Page()
    page.feed((tmp_path / "r.html").read_text(encoding="utf-8"))
    ids = [v for t, n, v in page.attrs if n == "id"]
    assert len(ids) == len(set(ids)) == 4, ids
    runs = [v for t, n, v in page.attrs if t == "details" and n == "id"]
    links = [v[1:] for t, n, v in page.attrs if t == "a" and n == "href"]
    assert sorted(links) == ["s-a", "s-a-2"] and set(links) <= set(runs)


def test_html_shows_characters_html_cannot_hold_as_replacement_marks(mixed):
    # The agent's \x01\x07\x1b went into the page as they were: control characters
    # are parse errors in HTML (a NUL is dropped by browsers), so what the agent
    # sent was shown without them; JUnit replaces them with U+FFFD, and so does HTML.
    _, out = mixed
    page_text = (out / "r.html").read_text(encoding="utf-8")
    bad = [c for c in page_text if (ord(c) < 0x20 and c not in "\t\n\r")
           or 0x7F <= ord(c) <= 0x9F or c in "\ufffe\uffff"]
    assert bad == []
    assert "all good \ufffd\ufffd\ufffd[31m &lt;script&gt;" in page_text


def test_junit_shows_c1_controls_as_replacement_marks(rook_workspace, rook_cli, tmp_path):
    # The C0 controls became U+FFFD in JUnit, yet the C1 ones (U+0080-U+009F:
    # CSI U+009B starts a terminal escape as ESC [ does, NEL U+0085 is a line
    # end to XML 1.1) and the noncharacters U+FDD0-U+FDEF, which XML 1.0 asks
    # documents to avoid, went into the file raw, in the message, the
    # diagnosis and <system-out>: a CI log that prints the failure message got
    # the escape. They are U+FFFD, as in the HTML report; JSON keeps them.
    rook_workspace.script("agent.py", r"""
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            if os.environ["ROOK_SCENARIO_ID"] == "out":
                print(json.dumps({"output": "out \x9b2J nel\x85 \ufdd0 \x7f end"}))
                sys.exit(0)
            sys.stderr.write("boom \x9b2J nel\x85 \ufdd0 \x7f end")
            sys.exit(3)
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    for sid in ("hook", "out"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "-q", f"--report=junit:{tmp_path}/r.xml", f"--report=json:{tmp_path}/r.json")
    assert r.exit_code == 1, r.stderr
    text = (tmp_path / "r.xml").read_text(encoding="utf-8")
    assert [c for c in text if 0x7F <= ord(c) <= 0x9F or 0xFDD0 <= ord(c) <= 0xFDEF] == [], text
    root = ET.parse(tmp_path / "r.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["hook"].find("error").get("message").endswith(
        "boom \ufffd2J nel\ufffd \ufffd \ufffd end")
    assert "out \ufffd2J nel\ufffd \ufffd \ufffd end" in cases["out"].find("system-out").text
    kept = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["scenarios"]
    assert "boom \x9b2J nel\x85" in next(e["reason"] for e in kept if e["id"] == "hook")


def test_html_and_junit_show_bidi_controls_as_escapes(rook_workspace, rook_cli, tmp_path):
    # An agent's U+202E (right-to-left override) went raw into the HTML page and
    # the JUnit file (which CI shows as a page): a reason "boom \u202eSSAP ..."
    # read "boom ... PASS", the rest of its line backwards. They are shown as
    # escapes, as on the terminal and in Markdown; the JSON report keeps them.
    rook_workspace.script("agent.py", r"""
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "out \u202eSSAP\u202c \u2067x\u2069"}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "ok"}]})
    r = rook_cli("run", "-q", f"--report=html:{tmp_path}/r.html", f"--report=junit:{tmp_path}/r.xml",
                 f"--report=json:{tmp_path}/r.json")  # fmt: skip
    assert r.exit_code == 1, r.stderr
    bidi = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    for name in ("r.html", "r.xml"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert [c for c in text if c in bidi] == [], text
        assert "out \\u202eSSAP\\u202c \\u2067x\\u2069" in text, text  # the turn's output
    ET.parse(tmp_path / "r.xml")
    kept = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["scenarios"][0]
    assert kept["turns"][0]["output"] == "out \u202eSSAP\u202c \u2067x\u2069"


def test_junit_system_out_keeps_the_end_of_an_output_holding_bidi_controls(
    rook_workspace, rook_cli, tmp_path
):
    # <system-out> was cut again after each bidi control became its 6-character
    # escape, at the length the text had before: an output of 40 characters with
    # four controls lost its last 20 ("... [20 more chars]"), though reports.md
    # says only a part over its share of about 20,000 characters is cut.
    rook_workspace.script("agent.py", r"""
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "a\u202eb\u202cc\u2067d\u2069 and here is THE END"}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "ok"}]})
    r = rook_cli("run", "-q", f"--report=junit:{tmp_path}/r.xml")
    assert r.exit_code == 1, r.stderr
    case = next(ET.parse(tmp_path / "r.xml").getroot().iter("testcase"))
    out = case.find("system-out").text
    assert "a\\u202eb\\u202cc\\u2067d\\u2069 and here is THE END" in out, out
    assert "more chars" not in out, out


@pytest.mark.parametrize("pad", [0, 10])
def test_junit_cuts_a_long_message_with_the_redaction_marker_whole(
    rook_workspace, rook_cli, tmp_path, monkeypatch, pad
):
    # A failure message is cut at 2,000 characters: cut as plain text, a hook's
    # diagnosis full of a redacted secret ended in the middle of its marker
    # ('[redacted:API_T'), where every other cut of Rook's keeps it whole.
    monkeypatch.setenv("API_TOKEN", "tok-0123456789abcdef")
    rook_workspace.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '%{pad}s' '' >&2
        for i in $(seq 200); do printf '%s ' "$API_TOKEN"; done >&2
        exit 3
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                            "env": [{"variable": "API_TOKEN", "purpose": "token"}]})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "ok"}]})
    r = rook_cli("run", "-q", f"--report=junit:{tmp_path}/r.xml")
    assert r.exit_code == 1, r.stderr
    message = next(ET.parse(tmp_path / "r.xml").getroot().iter("testcase")).find("error").get(
        "message")
    assert "more chars]" in message, message  # it was cut
    kept = message[: message.rindex("... [")]
    assert kept.endswith("[redacted:API_TOKEN]") or kept.endswith(" "), kept[-40:]
    assert "tok-" not in message


def token_agent(ws, monkeypatch, pad, times, criterion):
    """A workspace whose agent answers ``pad`` then its API_TOKEN (a declared
    secret) ``times`` times, and a scenario ``s`` with one criterion."""
    monkeypatch.setenv("API_TOKEN", "tok-0123456789abcdef")
    ws.script("agent.py", f"""
        #!/usr/bin/env python3
        import json, os, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            token = os.environ["API_TOKEN"]
            print(json.dumps({{"output": {pad!r} + " ".join([token] * {times})}}))
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "token"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [criterion]})


@pytest.mark.parametrize("pad", [0, 10])
def test_markdown_and_html_cut_a_long_output_with_the_redaction_marker_whole(
    rook_workspace, rook_cli, tmp_path, monkeypatch, pad
):
    # The Markdown report's turns (2,000 characters) and the HTML page's texts
    # (20,000) were cut as plain text: an answer full of a redacted secret ended
    # in the middle of its marker ('[redacted:API_T'), where every other cut of
    # Rook's keeps it whole (reliability.md).
    token_agent(rook_workspace, monkeypatch, " " * pad, 1200, {"equals": "ok"})
    r = rook_cli("run", "-q", f"--report=markdown:{tmp_path}/r.md",
                 f"--report=html:{tmp_path}/r.html")  # fmt: skip
    assert r.exit_code == 1, r.stderr
    for name in ("r.md", "r.html"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "more chars]" in text, name  # it was cut
        assert "tok-" not in text, name
        for m in re.finditer(r"\n\.\.\. \[\d+ more chars\]", text):
            kept = text[: m.start()]
            assert kept.endswith("[redacted:API_TOKEN]") or kept.endswith(" "), (name, kept[-40:])


def test_a_redacted_text_the_agent_wrote_itself_never_stops_a_cut(rook_workspace, rook_cli, tmp_path):
    # An answer that holds '[redacted:' itself, with a ']' far later, is no
    # marker: the JUnit, Markdown and HTML reports kept the whole 60,000
    # characters up to that ']' as if it were one, past their 2,000 and 20,000.
    rook_workspace.script("agent.py", """
        #!/usr/bin/env python3
        import json, sys
        if sys.argv[1] == "execute":
            sys.stdin.read()
            print(json.dumps({"output": "[redacted: " + "x" * 60000 + "]"}))
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "ok"}]})
    r = rook_cli("run", "-q", f"--report=junit:{tmp_path}/r.xml", f"--report=markdown:{tmp_path}/r.md",
                 f"--report=html:{tmp_path}/r.html")  # fmt: skip
    assert r.exit_code == 1, r.stderr
    for name in ("r.xml", "r.md", "r.html"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "more chars]" in text, name  # it was cut
        assert "x" * 30000 not in text, name


def test_a_redacted_text_a_hook_wrote_itself_never_stops_the_diagnosis_cut(rook_workspace, rook_cli):
    # A failed hook's diagnosis is the last 2,000 characters of its standard
    # error; one that printed '[redacted:' itself, long before a ']', kept all of
    # it from there, as if a marker stood at the cut.
    rook_workspace.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '[redacted: %60000s]' '' >&2
        exit 3
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"equals": "ok"}]})
    r = rook_cli("run", "-q", "--json")
    assert r.exit_code == 1, r.stderr
    reason = r.report["scenarios"][0]["reason"]
    assert "earlier chars]" in reason and len(reason) < 3000, len(reason)


@pytest.mark.parametrize("pad", [0, 10])
def test_the_table_and_progress_lines_cut_a_reason_before_a_redaction_marker(
    rook_workspace, rook_cli, monkeypatch, pad
):
    # The results table and the progress lines cut a reason at 90 characters as
    # plain text: a reason quoting a redacted answer ended '[red…', half a marker.
    token_agent(rook_workspace, monkeypatch, "x" * pad, 10, {"contains": "zzz"})
    r = rook_cli("run")
    assert r.exit_code == 1, r.stderr
    lines = [line for line in (r.stdout + r.stderr).splitlines() if "did not find" in line]
    assert len(lines) == 2, (r.stdout, r.stderr)  # the table's row and the progress line
    for line in lines:
        assert line.endswith("…"), line
        assert re.search(r"(\[redacted:API_TOKEN\]|[^\]a-z:_A-Z])\s*…$", line), line


@pytest.mark.parametrize("pad", [0, 10])
def test_the_markdown_table_cuts_a_reason_before_a_redaction_marker(
    rook_workspace, rook_cli, tmp_path, monkeypatch, pad
):
    # The Markdown table's cells are cut at 160 characters: as plain text, a
    # reason quoting a redacted answer ended '[redacted:API_T…', half a marker.
    token_agent(rook_workspace, monkeypatch, "x" * pad, 20, {"contains": "zzz"})
    r = rook_cli("run", "-q", f"--report=markdown:{tmp_path}/r.md")
    assert r.exit_code == 1, r.stderr
    row = next(line for line in (tmp_path / "r.md").read_text().splitlines()
               if line.startswith("| <code>s</code>"))
    reason = row.rstrip(" |").rsplit(" | ", 1)[1]
    assert reason.endswith("…"), row
    assert re.search(r"(\\\[redacted:API\\_TOKEN\\\]|[^\]a-zA-Z:_\\])\s*…$", reason), reason


@pytest.mark.parametrize("gate, verdict, missed", [("0.5", "met", ""), ("0.75", "missed", "flaky")])
def test_junit_carries_the_pass_rate_gate(rook_workspace, rook_cli, tmp_path, monkeypatch,
                                          gate, verdict, missed):
    # A gated run that exits 0 still has failed repeats as <failure>: the JUnit
    # file named no gate at all, so CI showed failures with nothing telling them
    # apart from a run that missed it.
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "flaky", "goal": "flaky", "criteria": [{"contains": "good"}]})
    rook_workspace.scenario({"id": "blind", "goal": "blind", "criteria": [{"max_tokens": 9}]})
    r = rook_cli("run", "--repeat", "4", "-j", "1", "--min-pass-rate", gate,
                 f"--report=junit:{tmp_path}/r.xml")
    assert r.exit_code == (0 if verdict == "met" else 1), r.stderr
    root = ET.parse(tmp_path / "r.xml").getroot()
    assert root.find("testsuite").get("failures") == "2"  # every run's result, as before
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["min_pass_rate"] == gate
    assert props["gate"] == verdict
    assert props["gate_missed"] == missed
    assert props["gate_ungated"] == "blind"


def test_junit_names_no_gate_without_one(mixed):
    _, out = mixed
    props = {p.get("name") for p in ET.parse(out / "r.xml").getroot().iter("property")}
    assert not {"min_pass_rate", "gate", "gate_missed", "gate_ungated"} & props


def test_html_gate_card_lists_the_ungated_scenarios(rook_workspace, rook_cli, tmp_path,
                                                   monkeypatch):
    # The card named the scenarios that missed the gate, never those with no
    # decided run, though the table text and JUnit's gate_ungated list them.
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "flaky", "goal": "flaky", "criteria": [{"contains": "good"}]})
    rook_workspace.scenario({"id": "blind", "goal": "blind", "criteria": [{"max_tokens": 9}]})
    r = rook_cli("run", "--repeat", "2", "-j", "1", "--min-pass-rate", "0.5",
                 f"--report=html:{tmp_path}/r.html")
    assert r.exit_code == 0, r.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    card = page[page.index("gate --min-pass-rate"):]
    card = card[:card.index("<h2>")]
    text = re.sub(r"<[^>]+>", " ", card)
    assert "met" in text
    assert "ungated (no decided run): blind" in " ".join(text.split())


def test_markdown_never_says_every_scenario_reached_the_gate_when_one_was_ungated(
        rook_workspace, rook_cli, tmp_path, monkeypatch):
    # The heading said "every scenario reached the pass-rate gate (0.5)" while a
    # scenario had no decided run (ungated: never verified), and the page named
    # it nowhere, though the table text, JUnit and HTML list it.
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "flaky", "goal": "flaky", "criteria": [{"contains": "good"}]})
    rook_workspace.scenario({"id": "blind", "goal": "blind", "criteria": [{"max_tokens": 9}]})
    r = rook_cli("run", "--repeat", "2", "-j", "1", "--min-pass-rate", "0.5",
                 f"--report=markdown:{tmp_path}/r.md")
    assert r.exit_code == 0, r.stderr
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    heading = md.splitlines()[0]
    assert "every scenario reached" not in heading, heading
    assert heading == ("## ✅ Rook: every decided scenario reached the pass-rate gate; "
                       "1 ungated (no decided run) (0.5)"), heading
    assert "**Ungated --min-pass-rate 0.5 (no decided run):** <code>blind</code>" in md, md


def test_a_turn_all_criterion_of_one_turn_says_turn_1_not_all_1_turns(rook_workspace, rook_cli):
    # a `turn: all` criterion of a one-turn scenario said "all 1 turns: found 'good' ..."
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "one", "goal": "pass",
                             "criteria": [{"contains": "good", "turn": "all"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    reason = r.report["scenarios"][0]["criteria"][0]["reason"]
    assert reason == "turn 1: found 'good' in 'all good'", reason


FAIL_OR_CRASH = r"""
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    sys.stdin.read()
    counter = os.path.join(os.environ["FLAKY_DIR"], "n")
    n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
    open(counter, "w").write(str(n))
    if n % 2 == 0:
        sys.stderr.write("boom\n")
        sys.exit(1)
    print(json.dumps({"output": "bad"}))
"""


def test_a_scenario_failed_once_and_errored_once_is_flagged_flaky_in_its_row(
        rook_workspace, rook_cli, tmp_path, monkeypatch):
    # The HTML card counted it flaky (its results differ) but its row showed
    # only "failed": no row told which scenario the count meant.
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    rook_workspace.script("agent.py", FAIL_OR_CRASH)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "mixed", "goal": "g", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--json", "--repeat", "2", "-j", "1", f"--report=html:{tmp_path}/r.html",
                 f"--report=markdown:{tmp_path}/r.md")
    assert r.exit_code == 1, r.stderr
    per = r.report["summary"]["by_scenario"][0]
    assert per["statuses"] == ["failed", "error"] and per["flaky"] is True
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "1 flaky" in page  # the card's count
    row = page[page.index('<a href="#s-mixed">'):]
    row = row[:row.index("</tr>")]
    assert ">failed</span>" in row and ">flaky</span>" in row
    md_row = next(ln for ln in (tmp_path / "r.md").read_text().splitlines()
                  if ln.startswith("| <code>mixed</code>"))
    assert "❌ failed" in md_row and "⚠️ flaky" in md_row


LONG_TURNS = r"""
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    goal = sys.stdin.read()
    if goal == "long":  # nothing but the secret: any cut falls in one
        out = os.environ["AGENT_KEY"] * 3000
    else:
        out = "second answer"
    print(json.dumps({"output": out, "conversation": "c1",
                      "calls": [{"name": "lookup", "arguments": {"q": goal}}]}))
"""


def test_junit_system_out_cuts_each_turn_and_never_splits_a_secret(
        rook_workspace, rook_cli, tmp_path, monkeypatch):
    # 20,000 characters of all turns together: a long first turn hid the second
    # turn and its calls, and a cut could leave half of a redaction marker.
    secret = "sk-live-junit-5ecret-value"
    monkeypatch.setenv("AGENT_KEY", secret)
    rook_workspace.script("agent.py", LONG_TURNS)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True, "multi_turn": True},
                            "env": [{"variable": "AGENT_KEY", "purpose": "the agent's key"}]})
    rook_workspace.scenario({"id": "two", "turns": ["long", "short"],
                             "criteria": [{"contains": "second"}]})
    r = rook_cli("run", "--json", f"--report=junit:{tmp_path}/r.xml")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"two": "passed"}
    out = ET.parse(tmp_path / "r.xml").getroot().find(".//system-out").text
    assert secret not in out
    assert "--- turn 2 output ---\nsecond answer" in out
    assert '"q": "short"' in out  # the second turn's calls
    assert re.search(r"\.\.\. \[\d+ more chars\]", out)  # what was left out is said
    assert "[redacted:AGENT_KEY]" in out
    assert "[r" not in out.replace("[redacted:AGENT_KEY]", "")  # never half a marker
    assert len(out) < 25_000


CARRIAGE = r"""
    #!/usr/bin/env python3
    import json, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    sys.stdin.read()
    print(json.dumps({"output": "one\r\ntwo\rthree\n", "calls": []}))
"""


def test_junit_gives_a_carriage_return_back_as_one(rook_workspace, rook_cli, tmp_path):
    # Written as it is, a carriage return in the text came back from every XML
    # parser as a line feed (XML's end-of-line handling): '\r\n' and '\r' were '\n'.
    rook_workspace.script("agent.py", CARRIAGE)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True}})
    rook_workspace.scenario({"id": "cr", "goal": "x", "criteria": [{"contains": "four"}]})
    r = rook_cli("run", "--json", f"--report=junit:{tmp_path}/r.xml")
    assert r.statuses() == {"cr": "failed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "one\r\ntwo\rthree\n"
    text = (tmp_path / "r.xml").read_bytes().decode("utf-8")  # every \r as written
    assert "\r" not in text and "one&#13;\ntwo&#13;three" in text
    for root in (ET.fromstring(text.encode("utf-8")), ET.parse(tmp_path / "r.xml").getroot()):
        out = root.find(".//testcase/system-out").text
        assert "--- turn 1 output ---\none\r\ntwo\rthree\n" in out
    dom = xml.dom.minidom.parseString(text.encode("utf-8"))
    (node,) = dom.getElementsByTagName("testcase")[0].getElementsByTagName("system-out")
    assert "one\r\ntwo\rthree" in node.firstChild.data


def test_junit_hostname_is_the_machines_redacted(rook_workspace, rook_cli, tmp_path,
                                                 monkeypatch):
    # The machine's name is no secret, but it goes through the run's redactor
    # like every other text: a host named after a secret value shows its name.
    # (The machine here has the name it has: the lookup is replaced for the run.)
    secret = "sk-live-host-5ecret"
    monkeypatch.setenv("AGENT_KEY", secret)
    monkeypatch.setattr(socket, "gethostname", lambda: f"ci-{secret}.example")
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True},
                            "env": [{"variable": "AGENT_KEY", "purpose": "the agent's key"}]})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--json", f"--report=junit:{tmp_path}/r.xml")
    assert r.exit_code == 0, r.stderr
    text = (tmp_path / "r.xml").read_text(encoding="utf-8")
    assert secret not in text
    suite = ET.fromstring(text).find("testsuite")
    assert suite.get("hostname") == "ci-[redacted:AGENT_KEY].example"
    monkeypatch.setattr(socket, "gethostname", lambda: "")  # no name: the schema's default
    r = rook_cli("report", "latest", f"--report=junit:{tmp_path}/again.xml")
    assert r.exit_code == 0, r.stderr
    again = ET.parse(tmp_path / "again.xml").getroot().find("testsuite")
    assert again.get("hostname") == "localhost"
    # the run's start, not the time of writing: a report rendered again says the same
    assert again.get("timestamp") == suite.get("timestamp")


def test_junit_test_case_names_stay_the_same_for_one_repeat_value(rook_workspace, rook_cli,
                                                                  tmp_path, monkeypatch):
    # CI tools follow a test case's history by classname and name: two runs with
    # the same --repeat must give the same names (another --repeat gives others).
    monkeypatch.setenv("FLAKY_DIR", str(tmp_path))
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    rook_workspace.scenario({"id": "flaky", "goal": "flaky", "criteria": [{"contains": "good"}]})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "repeat": 5,
                             "criteria": [{"contains": "good"}]})

    def names(*args):
        rook_cli("run", *args, f"--report=junit:{tmp_path}/r.xml")
        return sorted((c.get("classname"), c.get("name"))
                      for c in ET.parse(tmp_path / "r.xml").getroot().iter("testcase"))

    twice = names("--repeat", "2")
    assert twice == names("--repeat", "2")
    assert [n for _, n in twice] == ["flaky [1/2]", "flaky [2/2]", "pass [1/2]", "pass [2/2]"]
    assert [n for _, n in names("--repeat", "1")] == ["flaky", "pass"]


def test_markdown_shows_control_characters_as_escapes(rook_workspace, rook_cli, tmp_path):
    # A hook's ESC [2J, OSC title, BEL, NUL and C1 bytes went raw into the
    # Markdown report (the table's reason, the hook diagnosis, the fenced
    # output), which is read with `cat` as much as on GitHub: the file could
    # clear or retitle the terminal that showed it. They are shown as escapes,
    # as on the terminal itself; the JSON report keeps them as printed.
    ws = rook_workspace
    ws.script("agent.sh", r"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        if [ "$ROOK_SCENARIO_ID" = out ]; then
            printf '{"output": "bad\\u001b[2J\\u0007 title\\u001b]0;pwned\\u0007\\r\\nnext\\u009b"}'
            exit 0
        fi
        printf 'boom\033[2J\033]0;pwned\007 nul\000 c1\302\233 end' >&2
        exit 3
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("hook", "out"):
        ws.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "-q", f"--report=markdown:{tmp_path}/r.md", f"--report=json:{tmp_path}/r.json")
    assert r.exit_code == 1, r.stderr
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    controls = [c for c in md if c not in "\n\t" and (ord(c) < 32 or 0x7F <= ord(c) < 0xA0)]
    assert controls == [], md
    # in the table and the list, as Markdown shows a backslash; in the raw-HTML <summary>, as it is
    assert r"boom\\x1b\[2J\\x1b\]0;pwned\\x07 nul\\x00 c1\\x9b end" in md
    assert r"<summary>💥 <code>hook</code> — error: execute turn 1 failed: exited with code 3: " \
           r"boom\x1b[2J\x1b]0;pwned\x07 nul\x00 c1\x9b end</summary>" in md
    assert "bad\\x1b[2J\\x07 title\\x1b]0;pwned\\x07\\r\nnext\\x9b" in md  # the fenced output
    kept = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["scenarios"]
    assert "boom\x1b[2J" in next(e["reason"] for e in kept if e["id"] == "hook")


def test_a_pending_run_says_why_in_every_report(rook_workspace, rook_cli, tmp_path):
    # A scenario run with no result yet (a run split with --phases, cut off, or
    # a shard not run) had an empty reason: JUnit's <skipped message="pending: ">,
    # an empty Markdown cell and <summary>, nothing in the table. It now says
    # what is still to run.
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"calls": True}})
    rook_workspace.scenario({"id": "pass", "goal": "pass", "criteria": [{"contains": "good"}]})
    out = tmp_path / "out"
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close",
                 f"--report=junit:{out}/r.xml", f"--report=markdown:{out}/r.md")
    assert r.statuses() == {"pass": "pending"}, r.stderr
    reason = "not finished: collect, judge still to run"
    assert r.report["scenarios"][0]["reason"] == reason
    case = ET.parse(out / "r.xml").getroot().find(".//testcase")
    assert case.find("skipped").get("message") == f"pending: {reason}"
    md = (out / "r.md").read_text(encoding="utf-8")
    assert f"— pending: {reason}</summary>" in md
    shown = rook_cli("runs", "show", "latest")
    assert "not finished: collect, judge still to run" in shown.stdout
    # never run at all: a run with no record of it (here: its record deleted)
    run_id = r.report["run"]["id"]
    (rook_workspace.run_dir(run_id) / "scenarios" / "pass.1.json").unlink()
    again = rook_cli("report", run_id, "--rebuild", f"--report=junit:{out}/again.xml")
    assert again.exit_code == 0, again.stderr
    skipped = ET.parse(out / "again.xml").getroot().find(".//testcase/skipped")
    assert skipped.get("message") == "pending: not run yet"
    # a finished run keeps its own reason
    done = rook_cli("run", "--json", "--run", run_id)
    assert done.statuses() == {"pass": "passed"}
    assert done.report["scenarios"][0]["reason"] == "1 criterion passed"


def test_junit_gives_a_stopped_run_as_an_error_ci_counts(rook_workspace, rook_cli, tmp_path):
    # SPEC: exit 1 for a scenario that failed, errored or stopped; CI reads the
    # JUnit counts, so a stopped run is an <error type="stopped">, never a pass or a skip
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "capabilities": {"multi_turn": True}})
    # the agent returns no conversation handle: turn 2 cannot continue, the run is stopped
    rook_workspace.scenario({"id": "two", "turns": ["pass", "pass"],
                             "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--json", f"--report=junit:{tmp_path}/r.xml")
    assert r.statuses() == {"two": "stopped"} and r.exit_code == 1, r.stderr
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["1", "0", "1", "0"]
    error = suite.find("testcase/error")
    assert error.get("type") == "stopped" and "no conversation handle" in error.get("message")


def test_a_run_with_runs_still_pending_is_never_headed_as_passed(rook_workspace, rook_cli,
                                                                 tmp_path):
    # A shard merged with --partial (or a run cut off, rendered with rook report)
    # whose finished runs all passed: rook merge exits 1 and rook runs says
    # "incomplete", but the Markdown step summary read "✅ Rook: all 1 decided
    # scenario runs passed" and the HTML page "passed". They now say incomplete.
    rook_workspace.script("agent.py", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    for sid in ("a", "b", "c", "d"):
        rook_workspace.scenario({"id": sid, "goal": "pass", "criteria": [{"contains": "good"}]})
    first = rook_cli("run", "--shard", "1/2", "--run-name", "half")
    assert first.exit_code == 0, first.stderr
    out = tmp_path / "out"
    merged = rook_cli("merge", "--run", "half", "--partial", "--json", "-w",
                      str(rook_workspace.root),
                      f"--report=markdown:{out}/r.md", f"--report=html:{out}/r.html")
    assert merged.exit_code == 1, merged.stderr
    assert merged.report["summary"]["pending"] == 2 and merged.report["summary"]["passed"] == 2
    heading = (out / "r.md").read_text(encoding="utf-8").splitlines()[0]
    assert heading == "## ⏳ Rook: incomplete, 2 pending; all 2 decided scenario runs passed"
    page = (out / "r.html").read_text(encoding="utf-8")
    assert "<title>Rook run half — incomplete</title>" in page
    # nothing decided yet: still incomplete, never "nothing was verified" alone
    rook_cli("run", "--run-name", "split", "--phases", "prepare,open,execute")
    again = rook_cli("report", "split", f"--report=markdown:{out}/s.md")
    assert again.exit_code == 0, again.stderr
    heading = (out / "s.md").read_text(encoding="utf-8").splitlines()[0]
    assert heading == "## ⏳ Rook: incomplete, 4 pending; nothing was verified yet"


def test_scenario_tables_show_the_status_every_run_shared(mixed):
    # A scenario whose one run errored read "failed" in the Markdown and HTML
    # scenario tables (its details said error), and the HTML table said
    # "unverified" for not_runnable and unverifiable runs alike. A row whose
    # runs share one status that is not a pass now shows that status.
    _, out = mixed
    rows = {ln.split("</code>")[0][len("| <code>"):]: ln
            for ln in (out / "r.md").read_text(encoding="utf-8").splitlines()
            if ln.startswith("| <code>")}
    assert "| 💥 error |" in rows["crash"]
    assert "| ⏭️ not_runnable |" in rows["notrun"] and "| ❔ unverifiable |" in rows["blind"]
    assert "| ❌ failed |" in rows["fail"] and "| ⚠️ flaky |" in rows["flaky"]
    page = (out / "r.html").read_text(encoding="utf-8")

    def word(sid):
        row = page[page.index(f'<a href="#s-{sid}">'):]
        row = row[:row.index("</tr>")]
        return re.findall(r'class="badge"[^>]*>([^<]+)</span>', row)

    assert word("crash") == ["error"] and word("notrun") == ["not_runnable"]
    assert word("blind") == ["unverifiable"] and word("fail") == ["failed"]
    assert word("flaky") == ["flaky"] and word("pass") == ["passed"]


def test_counted_wording_says_one_in_the_singular(rook_workspace, rook_cli, tmp_path):
    # "all 1 criteria passed", "1 criterion(s) failed" and "## ✅ Rook: all 1 decided
    # scenario runs passed": a count of one was worded as many, in the reason (the
    # table, JUnit, HTML) and in the Markdown heading
    ws = rook_workspace
    ws.script("agent.py", AGENT)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"}})
    ws.scenario({"id": "one", "goal": "pass", "criteria": [{"contains": "good"}]})
    out = tmp_path / "out"
    r = rook_cli("run", "--json", f"--report=markdown:{out}/r.md", f"--report=junit:{out}/r.xml",
                 f"--report=html:{out}/r.html")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"][0]["reason"] == "1 criterion passed"
    md = (out / "r.md").read_text(encoding="utf-8")
    assert md.startswith("## ✅ Rook: 1 decided scenario run passed"), md
    assert "(1 of 1 planned run decided)" in md, md
    assert "1 of 1 planned run decided" in (out / "r.html").read_text(encoding="utf-8")
    assert "1 criterion passed" in rook_cli("runs", "show", "latest").stdout
    ws.scenario({"id": "two", "goal": "fail", "criteria": [{"contains": "good"}, {"contains": "bad"}]})
    ws.scenario({"id": "one", "goal": "fail", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--json", f"--report=junit:{out}/r.xml")
    reasons = {s["id"]: s["reason"] for s in r.report["scenarios"]}
    assert reasons["one"].startswith("1 criterion failed: "), reasons
    assert reasons["two"].startswith("1 criterion failed: "), reasons
    ws.scenario({"id": "two", "goal": "pass", "criteria": [{"contains": "good"}, {"contains": "all"}]})
    r = rook_cli("run", "--json", "--only", "two")
    assert r.report["scenarios"][0]["reason"] == "all 2 criteria passed"
    failures = [f.get("message") for f in ET.parse(out / "r.xml").getroot().iter("failure")]
    assert failures and all(m.startswith("1 criterion failed: ") for m in failures), failures


EXTRA_EVIDENCE = r"""
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1] != "execute":
        sys.exit(0)
    sys.stdin.read()
    print(json.dumps({"output": "all bad", "model": "m-7 <b>|`x`", "trace_id": "tr-42",
                      "token_echo": "key=" + os.environ["AGENT_KEY"]}))
"""


def test_markdown_and_junit_show_a_turns_extra_evidence(rook_workspace, rook_cli, tmp_path,
                                                       monkeypatch):
    # docs/concepts.md: what a hook returns beyond the contract's keys is kept as
    # evidence "in the record and the reports"; JSON and HTML showed it, Markdown
    # and JUnit (what a CI view shows) did not.
    secret = "sk-live-evidence-5ecret"
    monkeypatch.setenv("AGENT_KEY", secret)
    rook_workspace.script("agent.py", EXTRA_EVIDENCE)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.py"},
                            "env": [{"variable": "AGENT_KEY", "purpose": "the agent's key"}]})
    rook_workspace.scenario({"id": "ev", "goal": "x", "criteria": [{"contains": "good"}]})
    r = rook_cli("run", "--json", f"--report=junit:{tmp_path}/r.xml",
                 f"--report=markdown:{tmp_path}/r.md")
    assert r.statuses() == {"ev": "failed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["evidence"]["trace_id"] == "tr-42"
    out = ET.parse(tmp_path / "r.xml").getroot().find(".//testcase/system-out").text
    assert '"trace_id": "tr-42"' in out and '"model": "m-7 <b>|`x`"' in out
    assert "key=[redacted:AGENT_KEY]" in out
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "tr-42" in md and "key=[redacted:AGENT_KEY]" in md
    # in a fenced block, as the turn's output and calls are: shown as text, never markup
    assert re.search(r"evidence:\n\n```text\n\{[^`]*\"model\": \"m-7 <b>\|", md), md
    for text in (out, md, (tmp_path / "r.xml").read_text(encoding="utf-8")):
        assert secret not in text


def test_junit_and_markdown_show_what_collect_returned(rook_workspace, rook_cli, tmp_path):
    # What a collect hook returned (a trace's address, the usage and calls it
    # read from the traces) was in the JSON and HTML reports only: a CI page
    # (JUnit's <system-out>, the Markdown details) showed the turns, so the
    # trace a failing run's verdict was judged on could not be found from it.
    ws = rook_workspace
    ws.script("agent.sh", r"""
        #!/bin/bash
        case "$1" in
          execute) cat > /dev/null; echo '{"output": "hello", "calls": []}';;
          collect) echo '{"usage": {"input": 3, "output": 4}, "trace_url": "https://t.example/abc<&>"}';;
        esac
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"},
                "capabilities": {"calls": True, "usage": True}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "bye"}]})
    r = rook_cli("run", "--json", f"--report=junit:{tmp_path}/r.xml",
                 f"--report=markdown:{tmp_path}/r.md", f"--report=html:{tmp_path}/r.html")
    assert r.statuses() == {"s": "failed"}, r.stderr
    assert "https://t.example/abc&lt;&amp;&gt;" in (tmp_path / "r.html").read_text()  # as before
    assert r.report["scenarios"][0]["collected"]["evidence"] == {
        "trace_url": "https://t.example/abc<&>"}
    out = ET.parse(tmp_path / "r.xml").getroot().find(".//testcase/system-out").text
    assert out.index("--- turn 1 output ---") < out.index("--- collected ---\n")
    collected = json.loads(out[out.index("--- collected ---\n") + 18:].splitlines()[0])
    assert collected["evidence"] == {"trace_url": "https://t.example/abc<&>"}
    assert collected["usage"] == {"input": 3, "output": 4}
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert md.index("**Turn 1** input:") < md.index("collected:") < md.index("</details>")
    assert "https://t.example/abc<&>" in md[md.index("collected:"):]  # fenced: as it is


def test_a_clock_set_back_during_a_run_never_gives_it_negative_seconds(
        rook_workspace, rook_cli, tmp_path, monkeypatch):
    # A scenario run's seconds were the wall clock's difference: a clock set back
    # while it ran (NTP stepping a CI machine's clock, a VM resumed) gave it minus
    # an hour, in the table and every report, and JUnit's suite time '-3599.9',
    # which Jenkins' junit-10.xsd refuses (its time is digits only). The time Rook
    # worked is measured on a clock that only goes forward (a hook's and a turn's
    # seconds too); the run's start and end stay wall-clock times.
    flag = tmp_path / "stepped"
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - (3600 if flag.exists() else 0))
    rook_workspace.script("agent.sh", f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        touch {flag}                        # the clock is set back an hour meanwhile
        echo '{{"output": "hello"}}'
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hello"}]})
    r = rook_cli("run", "--json", f"--report=junit:{tmp_path}/r.xml")
    assert r.statuses() == {"s": "passed"}, r.stderr
    entry = r.report["scenarios"][0]
    assert 0 <= entry["seconds"] < 600, entry
    assert 0 <= entry["turns"][0]["seconds"] < 600 and 0 <= entry["hooks"][0]["seconds"] < 600
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert re.fullmatch(r"\d+\.\d{3}", suite.get("time")), suite.get("time")
    assert re.fullmatch(r"\d+\.\d{3}", suite.find("testcase").get("time"))


def test_a_failed_run_not_finished_gets_the_failures_heading_and_counts_what_is_pending(
        rook_workspace, rook_cli, tmp_path):
    # reports.md promised the "incomplete" heading whenever runs were pending,
    # while a run that failed gets the failure's: what a CI page shows first is
    # that something failed; the line under the heading counts what is pending.
    rook_workspace.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{"output": "no"}'
    """)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid in ("a", "b", "c", "d"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "yes"}]})
    assert rook_cli("run", "-q", "--run-name", "ci", "--shard", "1/2").exit_code == 1
    r = rook_cli("merge", "--run", "ci", "--partial", f"--report=markdown:{tmp_path}/r.md",
                 f"--report=html:{tmp_path}/r.html")
    assert r.exit_code == 1, r.stderr
    md = (tmp_path / "r.md").read_text(encoding="utf-8").splitlines()
    assert re.fullmatch(r"## ❌ Rook: \d failed", md[0]), md[0]
    assert re.search(r"· \d failed, \d pending$", md[4]), md[4]
    assert "<title>Rook run ci — failed</title>" in (tmp_path / "r.html").read_text()
