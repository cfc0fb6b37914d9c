"""The report streams: entries are read on demand, every writer writes as it goes.

A run's report is written entry by entry into ``report.json`` (one entry per
line) and handed to ``--json``, the reporters, ``rook report`` and ``rook runs
show`` as a read-only list read back from that file. What they write must be
exactly what the whole document, in memory, gave before.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import pickle
import random
import tracemalloc
import weakref
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rook_core.hookspecs import hookimpl
from rook_core.reportfile import read_report
from rook_core.reportio import LazyList, MappedList, dumps, iterencode
from rook_core.testing import RookCli, Workspace

AGENT = r"""
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    goal=$(cat)
    case "$goal" in
      crash*) echo "boom: the agent fell over" >&2; exit 1 ;;
      fail*) printf '{"output": "all bad", "calls": []}\n' ;;
      blind*) printf '{"output": "all good"}\n' ;;
      ctrl*) printf '{"output": "all good \\u0001\\u001b[31m <script>x</script> ]]> & | é ✓ \\u2028 \\"q\\"", "calls": [{"name": "lookup", "arguments": {"q": "%s"}}]}\n' "$ROOK_SCENARIO_ID" ;;
      flaky*) case "$ROOK_SESSION" in
                *.2-*) printf '{"output": "bad", "calls": []}\n' ;;
                *) printf '{"output": "good", "calls": []}\n' ;;
              esac ;;
      *) printf '{"output": "all good", "calls": []}\n' ;;
    esac
"""
KINDS = ("pass", "fail", "crash", "blind", "notrun", "ctrl", "flaky")
COUNT = 210  # scenarios; the flaky ones run 3 times: 270 scenario runs
FORMATS = (("json", "json"), ("junit", "xml"), ("markdown", "md"), ("html", "html"))


def _workspace(root: Path) -> Workspace:
    ws = Workspace(root)
    ws.script("agent.sh", AGENT)
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "capabilities": {"calls": True}}
    )
    for i in range(COUNT):
        kind = KINDS[i % len(KINDS)]
        criteria: list = [{"contains": "good"}]
        if kind in ("pass", "blind"):
            criteria.append({"not_called": "delete"})
        if kind == "notrun":
            criteria = [{"max_tokens": 100}]
        scenario = {
            "id": f"{kind}-{i:03d}",
            "name": f"{kind} n°{i}",
            "goal": kind,
            "tags": [kind],
            "criteria": criteria,
        }
        if kind == "flaky":
            scenario["repeat"] = 3
        if i % 5 == 0:
            scenario["class"], scenario["category"] = "functional", "happy_path"
        ws.scenario(scenario)
    return ws


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """One real run of a few hundred scenario runs, every built-in report written."""
    root = tmp_path_factory.mktemp("streaming")
    ws = _workspace(root / "ws")
    out = root / "out"
    cli = RookCli(ws)
    reports = [f"--report={fmt}:{out}/r.{ext}" for fmt, ext in FORMATS]
    r = cli("run", "--json", "-j", "8", "--min-pass-rate", "0.6", *reports)
    assert r.exit_code == 1, r.stderr
    return ws, cli, r, out


def test_every_json_output_is_the_whole_document(big):
    ws, _, r, out = big
    report = json.loads(r.stdout)
    assert len(report["scenarios"]) == 270 and report["summary"]["total"] == 270
    assert {s["status"] for s in report["scenarios"]} == {
        "passed",
        "failed",
        "error",
        "unverifiable",
        "not_runnable",
    }
    assert report["summary"]["gate"]["missed"]
    # --json: the run's report.json, byte for byte (its layout is checked below)
    run_dir = Path(report["run"]["dir"])
    assert r.stdout == (run_dir / "report.json").read_text(encoding="utf-8")
    # --report json: the indented document
    assert (out / "r.json").read_text(encoding="utf-8") == (
        json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    )
    # report.json in the run: the compact document, one scenario entry per line
    text = (run_dir / "report.json").read_text(encoding="utf-8")
    assert json.loads(text) == report
    lines = text[:-1].split("\n")  # (splitlines would also split at U+2028)
    assert len(lines) == 270 + 2
    assert [json.loads(line.rstrip(",")) for line in lines[1:-1]] == report["scenarios"]
    compact = json.dumps(report, ensure_ascii=False, default=str, separators=(",", ":"))
    assert text[:-1].replace("\n", "") + "\n" == compact + "\n"


def test_junit_written_a_testcase_at_a_time_is_the_indented_document(big):
    from rook_plugins.report_junit import document

    _, _, r, out = big
    root = document(r.report)
    ET.indent(root, space="  ")
    whole = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
    text = (out / "r.xml").read_text(encoding="utf-8")
    assert text == whole + "\n"
    parsed = ET.fromstring(text.encode("utf-8"))
    assert parsed.find("testsuite").get("tests") == "270"
    assert len(parsed.findall("testsuite/testcase")) == 270


def test_markdown_and_html_are_what_the_whole_document_renders(big):
    from rook_plugins.report_html import render as html
    from rook_plugins.report_markdown import render as markdown

    _, _, r, out = big
    assert (out / "r.md").read_text(encoding="utf-8") == markdown(r.report)
    assert (out / "r.html").read_text(encoding="utf-8") == html(r.report)
    assert "<script>x</script>" not in (out / "r.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("rebuild", [False, True])
def test_rook_report_renders_the_same_files_again(big, tmp_path, rebuild):
    _, cli, r, out = big
    args = [f"--report={fmt}:{tmp_path}/r.{ext}" for fmt, ext in FORMATS]
    again = cli("report", "latest", "--json", *args, *(["--rebuild"] if rebuild else []))
    assert again.exit_code == 0, again.stderr
    if rebuild:  # from the records: the same entries, and the gate the run was given
        report = json.loads(r.stdout)
        assert again.report == report
        compact = json.dumps(report, ensure_ascii=False, separators=(",", ":"))
        assert again.stdout.replace("\n", "") == compact  # the same layout, entries encoded again
        return
    assert again.stdout == r.stdout
    for _, ext in FORMATS:
        assert (tmp_path / f"r.{ext}").read_bytes() == (out / f"r.{ext}").read_bytes(), ext
    shown = cli("runs", "show", "latest", "--json")
    assert shown.exit_code == 0 and shown.stdout == r.stdout
    table = cli("runs", "show", "latest")
    assert table.exit_code == 0 and "flaky-006 #2" in table.stdout and "FAIL" in table.stdout


def test_diff_reads_two_streamed_reports(big):
    ws, cli, r, _ = big
    again = cli("run", "--json", "-j", "8", "--only", "pass-000,fail-001,flaky-006")
    assert again.exit_code == 1, again.stderr
    diff = cli("diff", r.report["run"]["id"], again.report["run"]["id"], "--json")
    assert diff.exit_code == 0, diff.stderr
    result = json.loads(diff.stdout)
    assert result["counts"]["removed"] == COUNT - 3
    assert {row["id"] for row in result["scenarios"] if "removed" not in row["changes"]} == {
        "fail-001",
        "flaky-006",
    }  # still failing, flaky


def test_an_older_report_json_is_still_read_whole(big, tmp_path):
    ws, cli, r, _ = big
    run_dir = Path(r.report["run"]["dir"])
    copy_dir = ws.runs_dir / "20000101-000000-old001"
    copy_dir.mkdir()
    for name in ("run.json", "report.json"):
        (copy_dir / name).write_bytes((run_dir / name).read_bytes())
    # as rook wrote it before: one line (and as rook merge writes it: indented)
    for text in (
        json.dumps(r.report, ensure_ascii=False, separators=(",", ":")),
        json.dumps(r.report, indent=2, ensure_ascii=False),
    ):
        (copy_dir / "report.json").write_text(text + "\n", encoding="utf-8")
        loaded = read_report(copy_dir / "report.json")
        assert type(loaded["scenarios"]) is list and loaded == r.report
        again = cli("report", copy_dir.name, "--json")
        # the same report, naming the folder the run is in now (the copy), and the
        # copy by its folder's name
        moved = r.stdout.replace(json.dumps(str(run_dir)), json.dumps(str(copy_dir)), 1)
        moved = moved.replace(f'"id":"{run_dir.name}"', f'"id":"{copy_dir.name}"', 1)
        assert again.exit_code == 0 and again.stdout == moved


def bare_manifest(tmp_path):
    """The smallest run manifest a report can be written from."""
    return {
        "id": "r",
        "dir": str(tmp_path),
        "project": "p",
        "agent": "a",
        "profile": {"id": "p"},
        "phases": ["judge"],
        "capabilities": {"declared": {}, "observed": {}},
    }


def test_a_view_keeps_reading_the_file_it_opened(tmp_path):
    from rook_core.report import write_report

    manifest = bare_manifest(tmp_path)
    path = tmp_path / "report.json"
    first = write_report(manifest, _records(5), path=path)
    second = read_report(path)
    write_report(manifest, _records(2, status="failed"), path=path)  # replaced, e.g. a resume
    assert [e["status"] for e in first["scenarios"]] == ["passed"] * 5
    assert len(second["scenarios"]) == 5 and second["scenarios"][-1]["id"] == "s00004"
    assert [e["status"] for e in read_report(path)["scenarios"]] == ["failed"] * 2
    second["scenarios"].close()
    with pytest.raises(ValueError, match="closed"):
        second["scenarios"][0]


class Inspector:
    """A third-party reporter that treats report["scenarios"] as the list it always was."""

    seen: dict = {}

    @hookimpl
    def rook_register_reporters(self, register):
        def write(report, path):
            scenarios = report["scenarios"]
            per = report["summary"]["by_scenario"]
            first = scenarios[0]
            self.seen.update(
                is_list=isinstance(scenarios, list),
                length=len(scenarios),
                first=first["id"],
                last=scenarios[-1]["id"],
                ids=[s["id"] for s in scenarios],
                again=[s["id"] for s in scenarios],
                sliced=[s["id"] for s in scenarios[1:3]],
                contains=first in scenarios,
                enumerated=[(n, s["repeat_index"]) for n, s in enumerate(scenarios, 1)],
                per=(len(per), per[0]["id"], sorted(p["id"] for p in per)),
                dumped=json.loads(json.dumps(report)),
                indented=json.loads(json.dumps(report, indent=2)),
                copied=copy.deepcopy(report)["scenarios"],
            )
            for change in (
                lambda: scenarios.append({}),
                lambda: scenarios.sort(),
                lambda: scenarios.__setitem__(0, {}),
                lambda: per.append({}),  # rook report gave a plain list: one reporter's
                lambda: per.sort(key=str),  # sort was what the next one wrote
            ):
                with pytest.raises(TypeError, match="read-only"):
                    change()
            mine = list(scenarios)
            mine.append({"id": "extra"})
            first["status"] = "changed"  # a fresh entry: the report is not changed
            assert scenarios[0]["status"] != "changed"
            per[0]["id"] = "changed"
            assert per[0]["id"] != "changed"
            path.write_text("\n".join(s["id"] for s in scenarios) + "\n")

        register("inspect", write)


def test_a_third_party_reporter_gets_a_list(rook_workspace, rook_cli, rook_plugin, tmp_path):
    rook_plugin(Inspector())
    rook_workspace.script("agent.sh", AGENT)
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    for sid, goal in (("b", "pass"), ("a", "fail"), ("c", "flaky")):
        rook_workspace.scenario(
            {
                "id": sid,
                "goal": goal,
                "criteria": [{"contains": "good"}],
                "repeat": 2 if sid == "c" else 1,
            }
        )
    r = rook_cli("run", "--json", "--report", f"inspect:{tmp_path}/ids.txt")
    assert r.exit_code == 1 and r.exception is None, r.stderr
    seen = Inspector.seen
    ids = ["a", "b", "c", "c"]
    assert seen["is_list"] and seen["length"] == 4 and (seen["first"], seen["last"]) == ("a", "c")
    assert seen["ids"] == seen["again"] == ids and seen["sliced"] == ["b", "c"]
    assert seen["contains"] and seen["enumerated"] == [(1, 1), (2, 1), (3, 1), (4, 2)]
    assert seen["per"] == (3, "a", ["a", "b", "c"])
    assert seen["dumped"] == seen["indented"] == r.report
    assert seen["copied"] == r.report["scenarios"] and type(seen["copied"]) is list
    assert (tmp_path / "ids.txt").read_text() == "a\nb\nc\nc\n"
    again = rook_cli("report", "latest", "--report", f"inspect:{tmp_path}/again.txt")
    assert again.exit_code == 0 and again.exception is None, again.stderr
    assert Inspector.seen["per"] == (3, "a", ["a", "b", "c"])
    assert (tmp_path / "again.txt").read_text() == "a\nb\nc\nc\n"


def test_a_lazy_list_behaves_like_a_read_only_list():
    items = MappedList([1, 2, 3, 2], lambda x: {"n": x})
    plain = [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 2}]
    assert items == plain and plain == items and items != plain[:3] and not (items != plain)
    assert len(items) == 4 and bool(items) and not MappedList([], str)
    assert items[-1] == {"n": 2} and items[1:3] == plain[1:3] and items[::-2] == plain[::-2]
    assert list(reversed(items)) == plain[::-1] and {"n": 3} in items and {"n": 9} not in items
    assert (
        items.index({"n": 2}) == 1 and items.index({"n": 2}, 2) == 3 and items.count({"n": 2}) == 2
    )
    assert items + [{"n": 5}] == plain + [{"n": 5}] and [{"n": 0}] + items == [{"n": 0}] + plain
    assert items * 2 == plain * 2 and sorted(items, key=lambda d: d["n"])[0] == {"n": 1}
    for made in (
        items.copy(),
        copy.copy(items),
        copy.deepcopy(items),
        pickle.loads(pickle.dumps(items)),
    ):
        assert type(made) is list and made == plain
    assert repr(items) == repr(plain) and json.dumps(items) == json.dumps(plain)
    with pytest.raises(IndexError):
        items[4]
    with pytest.raises(TypeError):
        items += [1]
    with pytest.raises(TypeError):
        hash(items)


class _Items(LazyList):
    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def _item(self, i):
        return self._data[i]


def _value(rnd: random.Random, depth: int = 0):
    kind = rnd.randrange(8 if depth < 3 else 4)
    if kind == 0:
        return rnd.choice([0.1, -2.5, 1e20, 3])
    if kind == 1:
        return "".join(rnd.choice('ab\n\u2028é"\\ \x01') for _ in range(rnd.randrange(6)))
    if kind == 2:
        return rnd.choice([None, True, False, 0, -7])
    if kind == 3:
        return rnd.choice([[], {}])
    if kind in (4, 5):
        return [_value(rnd, depth + 1) for _ in range(rnd.randrange(4))]
    return {f"k{n}\n": _value(rnd, depth + 1) for n in range(rnd.randrange(4))}


def test_iterencode_is_json_dumps_piece_by_piece():
    rnd = random.Random(8)
    options = [
        {},
        {"indent": 2},
        {"indent": 2, "ensure_ascii": False},
        {"ensure_ascii": False},
        {"separators": (",", ":"), "ensure_ascii": False, "default": str},
        {"indent": 0},
        {"indent": "\t"},
    ]
    for _ in range(200):
        entries = [_value(rnd) for _ in range(rnd.randrange(4))]
        per = [_value(rnd) for _ in range(rnd.randrange(3))]
        run = _value(rnd)
        lazy = {
            "version": 1,
            "run": run,
            "scenarios": _Items(entries),
            "summary": {"n": 1, "by_scenario": _Items(per), "empty": {}, 2: "x"},
        }
        plain = {
            "version": 1,
            "run": run,
            "scenarios": entries,
            "summary": {"n": 1, "by_scenario": per, "empty": {}, 2: "x"},
        }
        for kw in options:
            expected = json.dumps(plain, **kw)
            assert dumps(lazy, **kw) == expected == json.dumps(lazy, **kw)
            assert len(list(iterencode(lazy, **kw))) > 1


def _records(n: int, status: str = "passed", output: str = ""):
    for i in range(n):
        sid = f"s{i:05d}"
        yield {
            "key": f"{sid}.1",
            "scenario": {"id": sid, "name": sid, "tags": [], "content_hash": f"{i:064x}"},
            "repeat_index": 1,
            "repeat_count": 1,
            "phases_done": ["open", "execute", "close", "collect", "judge"],
            "hooks": [
                {
                    "phase": "execute",
                    "turn": 1,
                    "status": "ok",
                    "exit_code": 0,
                    "seconds": 0.004,
                    "diagnosis": None,
                }
            ],
            "turns": [
                {
                    "turn": 1,
                    "input": f"hello {i}",
                    "output": output or f"ok {i}",
                    "conversation": None,
                    "usage": None,
                    "calls": None,
                    "evidence": {},
                    "seconds": 0.004,
                }
            ],
            "collected": None,
            "status": status,
            "reason": "",
            "criteria": [{"type": "contains", "turn": None, "status": status, "reason": "x"}],
            "started": 1.0,
            "ended": 1.5,
        }


def test_an_empty_report_streams_like_the_whole_one(tmp_path):
    from rook_plugins.report_html import render as html
    from rook_plugins.report_junit import document, iter_xml
    from rook_plugins.report_markdown import render as markdown

    from rook_core.report import build_report, write_report

    manifest = bare_manifest(tmp_path)
    for n in (0, 1, 3):
        lazy = write_report(manifest, _records(n), 0.5, path=None)
        whole = build_report(manifest, list(_records(n)), 0.5)
        assert lazy == whole and dumps(lazy, indent=2) == json.dumps(whole, indent=2)
        root = document(whole)
        ET.indent(root, space="  ")
        expected = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode")
        assert "".join(iter_xml(lazy)) == expected + "\n"
        assert markdown(lazy) == markdown(whole) and html(lazy) == html(whole)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_json_output_is_the_report_file_layout_whatever_holds_the_report(tmp_path, n):
    from rook_core.report import build_report, write_report
    from rook_core.reportfile import print_json, write_json

    manifest = bare_manifest(tmp_path)
    written = write_report(manifest, _records(n), 0.5, path=tmp_path / "report.json")
    text = (tmp_path / "report.json").read_text(encoding="utf-8")
    whole = build_report(manifest, list(_records(n)), 0.5)  # in memory: encoded, not copied
    # a new summary: the entries are still the file's
    changed = {**written, "summary": json.loads(json.dumps(written["summary"]))}
    for report in (written, read_report(tmp_path / "report.json"), whole, changed):
        out = io.BytesIO()
        write_json(report, out)
        assert out.getvalue().decode("utf-8") == text
    changed["summary"]["total"] = 99  # no longer the file's document: encoded, not copied
    out = io.BytesIO()
    write_json(changed, out)
    assert json.loads(out.getvalue())["summary"]["total"] == 99
    assert json.loads(text) == whole and len(text.split("\n")) == n + 3
    with contextlib.redirect_stdout(io.StringIO()) as shown:  # a stream without bytes
        print_json(written)
    assert shown.getvalue() == text
    view = weakref.ref(written["scenarios"])
    del written, changed, report
    assert view() is None  # no cycle through the view: its file closes as the report goes


def test_spooled_entries_are_the_entries_their_records_give(tmp_path):
    from rook_core.report import EntrySpool, Spooled, write_report

    manifest = bare_manifest(tmp_path)
    records = list(_records(4))
    spool = EntrySpool()
    for r in records[:3]:
        spool.add(r["key"], {**r, "status": "error"})  # an earlier attempt
        spool.add(r["key"], r)  # recorded again: the latest entry counts
    mixed = [spool.entry(r["key"]) or r for r in records]  # the last one was not spooled
    assert [isinstance(m, Spooled) for m in mixed] == [True, True, True, False]
    spooled = write_report(manifest, mixed, 0.5, path=tmp_path / "a.json")
    plain = write_report(manifest, records, 0.5, path=tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert spooled == plain
    spool.close()  # off: the report reads the records back instead
    assert spool.entry(records[0]["key"]) is None
    spool.add(records[0]["key"], records[0])
    assert spool.entry(records[0]["key"]) is None


def test_spooled_entries_read_back_in_any_order_through_a_small_window(tmp_path):
    # The spool reads ahead: in recording order a few large reads serve every
    # entry; out of order (runs finishing out of order above concurrency 1)
    # each entry outside the window is read again. Same bytes, same report.
    from rook_core.report import EntrySpool, write_report

    manifest = bare_manifest(tmp_path)
    records = [
        {
            **r,
            "status": ["passed", "failed", "error"][i % 3],
            "scenario": {**r["scenario"], "extra": {"class": f"c{i % 2}", "other": i}},
        }
        for i, r in enumerate(_records(40, output="o" * 900))
    ]
    spool = EntrySpool()
    spool.READ_AHEAD = 4096  # a few entries per window
    for r in records:
        spool.add(r["key"], r)
    plain = write_report(manifest, records, 0.5, path=tmp_path / "plain.json").copy()
    strided = [r for k in range(7) for r in records[k::7]]
    for order in (records, records[::-1], strided):
        by_key = {r["key"]: spool.entry(r["key"]) for r in order}
        mixed = [by_key[r["key"]] for r in records]
        assert all(m is not None for m in mixed)
        spooled = write_report(manifest, mixed, 0.5, path=tmp_path / "spooled.json")
        assert (tmp_path / "spooled.json").read_bytes() == (tmp_path / "plain.json").read_bytes()
        assert spooled["summary"] == plain["summary"]
    spool.close()


def _pipeline(tmp_path: Path, n: int) -> int:
    """Peak traced memory of writing a report of ``n`` records and rendering every
    built-in format from it."""
    from rook_plugins.report_html import write_html
    from rook_plugins.report_junit import write_junit
    from rook_plugins.report_markdown import write_markdown
    from rook_plugins.reporters import write_json

    from rook_core.report import write_report
    from rook_core.reportfile import write_json as print_report

    manifest = bare_manifest(tmp_path)
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    report = write_report(manifest, _records(n, output="o" * 3000), path=tmp_path / "report.json")
    with open(os.devnull, "wb") as fh:  # what --json prints
        print_report(report, fh)
    for write, name in (
        (write_json, "r.json"),
        (write_junit, "r.xml"),
        (write_markdown, "r.md"),
        (write_html, "r.html"),
    ):
        write(report, tmp_path / name)
    peak = tracemalloc.get_traced_memory()[1] - before
    report["scenarios"].close()
    return peak


def test_writing_every_format_keeps_no_entry_per_scenario(tmp_path):
    """Ten times the records add far less memory than holding their entries would."""
    from rook_core.report import scenario_entry

    small, large = 300, 1200
    tracemalloc.start()
    try:
        _pipeline(tmp_path, 20)  # warm up: imports, the compiled HTML template
        streamed = _pipeline(tmp_path, large) - _pipeline(tmp_path, small)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        held = [
            scenario_entry(json.loads(json.dumps(r)))  # as read from its file
            for r in _records(large - small, output="o" * 3000)
        ]
        whole = tracemalloc.get_traced_memory()[0] - before
        del held
    finally:
        tracemalloc.stop()
    assert streamed < whole / 4, (streamed, whole)


SECRET = "s3cr3t-token-value"


@pytest.fixture(scope="module")
def big_answers(tmp_path_factory):
    """A run of 300 scenario runs with 60 KB answers, its profile declaring an env
    variable (set as it ran): the workspace and the run id."""
    import subprocess
    import sys

    ws = Workspace(tmp_path_factory.mktemp("big_answers") / "ws")
    ws.script("a.sh", "#!/bin/bash\n[ \"$1\" = execute ] || exit 0\ncat >/dev/null\n"
              "printf '{\"output\": \"%s\"}\\n' \"$(head -c 60000 /dev/zero | tr '\\0' x)\"\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"},
                "env": [{"variable": "ROOK_T_TOKEN", "purpose": "a token"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    env = {**os.environ, "ROOK_T_TOKEN": SECRET}
    run = subprocess.run([sys.executable, "-m", "rook_core", "run", "-w", str(ws.root), "--json",
                          "--repeat", "300", "--concurrency", "8"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    return ws, json.loads(run.stdout)["run"]["id"]


def _report_peak(ws: Workspace, run_id: str, *args: str, secret: str = "") -> tuple[str, float]:
    """``rook report ID ARGS`` with ``ROOK_T_TOKEN`` set to ``secret``: its output and
    its peak memory (MiB)."""
    from peak import run_rook

    os.environ["ROOK_T_TOKEN"] = secret
    try:
        proc, err, peak = run_rook("report", "-w", str(ws.root), run_id, *args, timeout=300)
    finally:
        del os.environ["ROOK_T_TOKEN"]
    assert proc.returncode == 0, err
    return proc.stdout, peak


def test_a_past_run_shown_with_its_secrets_redacted_is_read_one_entry_at_a_time(big_answers):
    """rook report ID of a run whose profile declares an env variable (set now, so
    each entry is redacted again: a record may predate the declaration) read every
    entry into a list first: a run of 300 scenario runs of 60 KB answers took 20 MB
    more than the same report shown without a secret. Each entry is now redacted as
    it is read, as the report without a secret is streamed."""
    peaks = {}
    for name in ("with", "without"):
        out, peaks[name] = _report_peak(*big_answers, "--json",
                                        secret=SECRET if name == "with" else "")
        assert len(json.loads(out)["scenarios"]) == 300
    assert peaks["with"] < peaks["without"] + 8, peaks  # MiB; held whole: about 20 more


def test_the_table_of_a_past_run_is_read_one_entry_at_a_time(big_answers):
    """rook report ID's table kept every entry until its rows were cut to the width
    the widest row leaves: 300 scenario runs of 60 KB answers peaked at 49 MiB against
    31 MiB for --json. Each row keeps only its cells and what its reason is made of,
    so the table takes no more than the JSON document."""
    table, peak_table = _report_peak(*big_answers)
    assert table.count("\ns #") == 300 and "300 passed" in table, table[-2000:]
    _, peak_json = _report_peak(*big_answers, "--json")
    assert peak_table < peak_json + 8, (peak_table, peak_json)  # MiB; held whole: 18 more
