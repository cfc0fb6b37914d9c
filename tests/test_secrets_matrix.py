"""Secrets, every sink: a profile's env values never reach a file, a report, the
terminal, a diagnosis, a message or the Ruhroh manifest, however they are hidden."""

from __future__ import annotations

import base64
import dataclasses
import json
import urllib.parse
from pathlib import Path

import pytest

SECRET = "Zq9-s3cr3t-v4lue-77"
OTHER = "pw-second-221"

# The agent leaks the secrets every way it can: plain, nested, URL-encoded in a
# URL, base of a tool call, half on stdout and half on stderr, on failure.
LEAKY = r"""
#!/bin/bash
phase="$1"
echo "stderr: token=$API_TOKEN other=$DB_PASSWORD" >&2
half=${#API_TOKEN}; half=$((half / 2))
case "$phase" in
  prepare) echo "prepare sees $API_TOKEN" >&2 ;;
  execute)
    goal=$(cat)
    if [ "$goal" = fail ]; then echo "401 Unauthorized for Bearer $API_TOKEN at https://u:$DB_PASSWORD@db" >&2; exit 3; fi
    if [ "$goal" = garbage ]; then echo "not json $API_TOKEN"; exit 0; fi
    echo "${API_TOKEN:$half}" >&2
    printf '{"output": "the token is %s and %s", "calls": [{"name": "auth", "arguments": {"k": {"deep": ["%s"]}, "url": "https://x/?key=%s"}}], "usage": {"input": 1, "output": 1}, "trace": "https://u:%s@host/p?t=%s", "prefix": "%s"}\n' \
      "$API_TOKEN" "$DB_PASSWORD" "$API_TOKEN" "$API_TOKEN" "$DB_PASSWORD" "$API_TOKEN" "${API_TOKEN:0:$half}" ;;
  collect) printf '{"log": "Authorization: Bearer %s"}\n' "$API_TOKEN" ;;
esac
exit 0
"""

WRAPPER = r"""
#!/bin/bash
echo "wrapper sees $API_TOKEN" >&2
cat > "$RUHROH_RESULT_PATH" <<JSON
{"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied", "output": "done $API_TOKEN",
 "adapterVersion": "1.0-$API_TOKEN", "model": {"provider": "p", "model": "m-$DB_PASSWORD"},
 "usage": {"inputTokens": 1, "outputTokens": 2}}
JSON
echo '{"status": "goal_satisfied"}'
"""


@pytest.fixture
def ws(rook_workspace, monkeypatch):
    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("DB_PASSWORD", OTHER)
    monkeypatch.setenv("RUHROH_AGENT_MODEL", f"model-{SECRET}")
    ws = rook_workspace
    ws.script("agent.sh", LEAKY)
    ws.script("wrapper.sh", WRAPPER)
    env = [{"variable": "API_TOKEN", "purpose": "agent token"},
           {"variable": "DB_PASSWORD", "purpose": "fixture database"}]
    ws.profile({"id": "p", "hooks": {p: "scripts/agent.sh" for p in ("prepare", "execute", "collect")},
                "env": env, "capabilities": {"calls": True, "usage": True}})
    ws.profile({"id": "r", "hooks": {"execute": {"ruhroh": {"command": "scripts/wrapper.sh"}}}, "env": env},
               active=False)
    for sid, goal in (("leak", "hello"), ("fail", "fail"), ("garbage", "garbage")):
        # a criterion holding SECRET itself is refused (it would be judged on the
        # redacted record): written as the record holds it
        ws.scenario({"id": sid, "goal": goal,
                     "criteria": [{"contains": "[redacted:API_TOKEN]"}, {"called": "auth"}]})
    return ws


def all_text(root: Path) -> str:
    parts = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and "scripts" not in p.parts:
            parts.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def assert_clean(text: str, where: str) -> None:
    for value in (SECRET, OTHER, urllib.parse.quote(SECRET), json.dumps(SECRET)[1:-1]):
        assert value not in text, f"a secret leaked into {where}"


def test_every_sink(ws, rook_cli, tmp_path):
    out = tmp_path / "reports"
    reports = [f"{fmt}:{out}/r.{fmt}" for fmt in ("json", "junit", "markdown", "html")]
    args = ["run", "--json"] + [a for r in reports for a in ("--report", r)]
    r = rook_cli(*args)
    assert r.report["summary"]["error"] == 2
    run_a = r.report["run"]["id"]
    assert_clean(r.stdout + r.stderr, "the terminal (--json)")
    table = rook_cli("run")
    assert_clean(table.stdout + table.stderr, "the terminal (table)")
    run_b = json.loads((ws.runs_dir / sorted(p.name for p in ws.runs_dir.iterdir())[-1] / "run.json").read_text())["id"]
    r2 = rook_cli("run", "--profile", "r", "--json", "--only", "leak")
    assert_clean(r2.stdout + r2.stderr, "the terminal (ruhroh)")
    for args in (["runs", "-w", str(ws.root)], ["runs", "show", run_a, "-w", str(ws.root)],
                 ["diff", run_a, run_b, "-w", str(ws.root)],
                 ["report", run_a, "-w", str(ws.root), "--report", f"html:{out}/again.html"],
                 ["profile", "show", "p", "-w", str(ws.root)],
                 ["profile", "show", "p", "--json", "-w", str(ws.root)],
                 ["profile", "list", "-w", str(ws.root)],
                 ["doctor", "-w", str(ws.root)]):
        res = rook_cli(*args)
        assert res.exception is None, (args, res.exception)
        assert_clean(res.stdout + res.stderr, f"rook {' '.join(args[:2])}")
    assert_clean(all_text(out), "the report files")
    assert_clean(all_text(ws.runs_dir), "the run records (incl. the Ruhroh manifest)")
    manifest = next(ws.runs_dir.rglob("ruhroh-run-manifest.json"))
    assert "[redacted:" in manifest.read_text() or SECRET not in manifest.read_text()
    # what the reader sees instead
    leak = next(s for s in r.report["scenarios"] if s["id"] == "leak")
    assert "[redacted:API_TOKEN]" in leak["turns"][0]["output"]
    assert "[redacted:DB_PASSWORD]" in leak["turns"][0]["evidence"]["trace"]
    fail = next(s for s in r.report["scenarios"] if s["id"] == "fail")
    assert "Bearer [redacted:API_TOKEN]" in fail["hooks"][-1]["diagnosis"] or any(
        "Bearer [redacted:API_TOKEN]" in (h["diagnosis"] or "") for h in fail["hooks"])


# Every place Rook shortens a hook's text: the 64 KiB a record keeps, the stderr
# tail of a diagnosis, the preview of output that is not JSON, and an output
# cap that stops the stream itself. Each cut falls inside the secret.
CUTTER = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s, case = os.environ["API_TOKEN"], os.environ["ROOK_SCENARIO_ID"]
if case == "clip":       # stderr over 64 KiB: the record keeps its head
    sys.stderr.write("e" * (65536 - 9) + s + "\n")
    print(json.dumps({"output": "ok"}))
elif case == "tail":     # a failure's diagnosis shows the last 2000 chars of stderr
    sys.stderr.write(s + "z" * (2000 - 9))
    sys.exit(3)
elif case == "preview":  # not JSON: the diagnosis previews 400 chars of stdout
    sys.stdout.write("not json " + "q" * (400 - 9 - 9) + s)
elif case == "cap":      # stdout over its 1024-byte cap: the stream stops in the secret
    sys.stdout.write("y" * (1024 - 9) + s + "y" * 5000)
"""


def test_a_cut_never_shows_a_piece_of_a_secret(rook_workspace, rook_cli, monkeypatch):
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("cutter.py", CUTTER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/cutter.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}],
                "limits": {"stdout_bytes": 1024, "stderr_bytes": 1024 * 1024}})
    for sid in ("clip", "tail", "preview", "cap"):
        ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    table = rook_cli("run")
    pieces = {SECRET[i:i + 5] for i in range(len(SECRET) - 4)}
    for where, text in (("the terminal", r.stdout + r.stderr + table.stdout + table.stderr),
                        ("the run records", all_text(ws.runs_dir))):
        shown = [p for p in pieces if p in text]
        assert not shown, f"pieces of a secret reached {where}: {shown}"
    assert {s["id"]: s["status"] for s in r.report["scenarios"]}["clip"] == "passed"
    records = ws.runs_dir / r.report["run"]["id"] / "scenarios"
    hooks = {sid: json.loads((records / f"{sid}.1.json").read_text())["hooks"][-1]
             for sid in ("clip", "tail", "preview", "cap")}
    assert hooks["clip"]["stderr"].startswith("e" * 100)
    assert "[redacted:API_TOKEN]\n... [" in hooks["clip"]["stderr"]  # the marker is kept whole
    assert "...[redacted:API_TOKEN]zzz" in hooks["tail"]["diagnosis"]
    assert "q[redacted:API_TOKEN]" in hooks["preview"]["diagnosis"]
    assert hooks["cap"]["stdout"].endswith("y[redacted:API_TOKEN]")
    assert "1024-byte cap" in hooks["cap"]["diagnosis"]


def test_redactor_cuts():
    from rook_core.redact import Redactor

    red = Redactor({"T": "sk-0123456789"})
    text = "a" * 10 + "sk-0123456789" + "b" * 10
    assert red.head(text, 5) == "aaaaa"
    assert red.head(text, 12) == "a" * 10 + "[redacted:T]"  # never half a marker
    assert red.head(text, 12, " (+{n})") == "a" * 10 + "[redacted:T] (+10)"
    assert red.head(text, 100, " (+{n})") == "a" * 10 + "[redacted:T]" + "b" * 10
    assert red.tail(text, 12) == "[redacted:T]" + "b" * 10
    assert red.tail(text, 3) == "bbb"
    assert red.cut_short("x sk-012") == "x [redacted:T]"  # the secret's beginning
    assert red.cut_short("x sk-") == "x sk-"  # under 4 characters and under half: kept
    assert Redactor({"PIN": "123456"}).cut_short("code 123") == "code [redacted:PIN]"
    assert Redactor().head(text, 5) == "aaaaa"


@pytest.mark.parametrize("secret", ["sk-1234\\n5678", "KEYLINE1\\nKEYLINE2\\nKEYLINE3"])
def test_a_secret_holding_a_backslash_n_escape_cut_short_shows_no_piece(secret):
    """A key kept in one line with literal \\n escapes is also looked for as the
    value of several lines it stands for, each line alone: cut short after its
    first line (an output cap), that line was redacted first and the rest
    (``[redacted:K]\\n5``) was then the beginning of no secret, so a character of
    it, and the escape, showed. Now no piece shows, in the value as it is or
    escaped in a JSON string; ordinary text ending in an escape is left alone."""
    from rook_core.redact import PARTIAL_MIN, Redactor

    red = Redactor({"K": secret})
    for form in (secret, json.dumps(secret)[1:-1]):
        for k in range(PARTIAL_MIN, len(form)):
            assert red.cut_short("log: " + form[:k]) == "log: [redacted:K]", (form, k)
    assert red.cut_short("line one\\nline two\\n") == "line one\\nline two\\n"
    line = secret.split("\\")[0]  # a whole line alone: redacted as text() does
    assert red.cut_short(f"{line} and\\n") == "[redacted:K] and\\n"


# A password with the characters that change form in what a hook prints.
ODD = 'p@ss"w\\örd/1 &x'
ENCODER = r"""
#!/usr/bin/env python3
import base64, json, os, sys, urllib.parse
sys.stdin.read()
s = os.environ["DB_PASSWORD"]
b64 = lambda text: base64.b64encode(text.encode()).decode()
sys.stderr.write("raw: " + s + "\n")
lower = urllib.parse.quote(s, safe="").lower()
print(json.dumps({  # ensure_ascii: the JSON text carries \" \\ and \u00f6
    "output": "ok " + s,
    "url": "https://db/?pw=" + urllib.parse.quote(s, safe=""),
    "form": "pw=" + urllib.parse.quote_plus(s) + "&lower=" + lower,
    "slashed": json.dumps(s).replace("/", "\\/"),
    "basic": ["Basic " + b64(user + ":" + s) for user in ("u", "us", "usr")],  # 3 alignments
    "alone": b64(s),
    "urlsafe": base64.urlsafe_b64encode(("x:" + s + "!").encode()).decode(),
    "calls": [{"name": "login", "arguments": json.dumps({"pw": s})}],  # JSON text in JSON
}))
"""


def test_a_secret_is_redacted_in_every_form_a_hook_prints(rook_workspace, rook_cli, monkeypatch):
    import urllib.parse

    monkeypatch.setenv("DB_PASSWORD", ODD)
    ws = rook_workspace
    ws.script("encoder.py", ENCODER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/encoder.py"},
                "env": [{"variable": "DB_PASSWORD", "purpose": "database password"}]})
    ws.scenario({"id": "odd", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.report["summary"]["passed"] == 1
    forms = {ODD, json.dumps(ODD)[1:-1], json.dumps(ODD, ensure_ascii=False)[1:-1],
             urllib.parse.quote(ODD, safe=""), urllib.parse.quote_plus(ODD),
             urllib.parse.quote(ODD, safe="").lower(), json.dumps(ODD)[1:-1].replace("/", "\\/")}
    record = all_text(ws.runs_dir)
    for form in forms:
        assert form not in record, f"{form!r} reached the run record"
        assert form not in r.stdout + r.stderr, f"{form!r} reached the terminal"
    assert record.count("[redacted:DB_PASSWORD]") >= 6
    twice = json.dumps(json.dumps(ODD)[1:-1])[1:-1]  # how the raw stdout holds the arguments
    assert twice not in record and json.dumps(twice)[1:-1] not in record
    # base64: whatever is left around a marker decodes to at most 2 bytes of the secret
    entry = r.report["scenarios"][0]["turns"][0]["evidence"]
    assert entry["alone"] == "[redacted:DB_PASSWORD]"
    for user, shown in [("u", entry["basic"][0]), ("us", entry["basic"][1]),
                        ("usr", entry["basic"][2]), ("x", entry["urlsafe"])]:
        head, marker, tail = shown.removeprefix("Basic ").partition("[redacted:DB_PASSWORD]")
        assert marker and len(head) <= 4 * -(-len(user + ":") // 3) and len(tail) <= 4, shown


def test_redactor_forms():
    import base64

    from rook_core.redact import Redactor
    from rook_core.secret_forms import encodings

    wide = "\x00".join("sk-live")  # printed in UTF-16, read as UTF-8
    # a short token: its UTF-16 form and its whole base64
    assert encodings("sk-live") == ["sk-live", wide, wide.replace("\x00", "\\u0000"), "c2stbGl2ZQ=="]
    token = "sk-live_ABC.def~1"
    assert encodings(token)[0] == token and all(f.isascii() for f in encodings(token))
    basic = Redactor({"T": token})
    for user in ("u", "us", "usr"):  # the three places the token can start in a 3-byte group
        shown = basic.text(base64.b64encode(f"{user}:{token}".encode()).decode())
        head, _, tail = shown.partition("[redacted:T]")
        # left: the groups holding a byte of "user:", and the last partial group
        assert _ and len(head) <= 4 * -(-len(user + ":") // 3) and len(tail) <= 4, shown
    assert basic.text(base64.urlsafe_b64encode(b"?>" + token.encode()).decode()).count("[redacted:T]") == 1
    # under BASE64_MIN bytes: only encoded whole, padding included (8 characters or more)
    assert Redactor({"S": "short"}).text("c2hvcnQ= eHljc2hvcnQ=") == "[redacted:S] eHlj[redacted:S]"
    assert Redactor({"S": "short"}).text("c2hvcnQ c2hvcn") == "c2hvcnQ c2hvcn"
    assert Redactor({"S": ".*+?[x]"}).text("LiorP1t4XQ== LiorP1t4XQ") == "[redacted:S] LiorP1t4XQ"
    # a key shaped like a field name keeps its name, unless a real secret is the key
    keyed = Redactor({"GH": "ghp_AbCdEf123456", "W": "stat"})
    assert keyed.data({"ghp_AbCdEf123456": 1, "status": "passed", "stat": "stat x"}) == {
        "[redacted:GH]": 1, "status": "passed", "stat": "[redacted:W] x"}
    # two keys that redact to one marker both stay (one was lost: the later overwrote it)
    assert keyed.data({"evidence": {"ghp_AbCdEf123456": 1, "GHP_ABCDEF123456": 2, "[redacted:GH]": 3}}) == {
        "evidence": {"[redacted:GH]": 1, "[redacted:GH] (2)": 2, "[redacted:GH] (3)": 3}}
    nested = Redactor({"N": 'a\\b"c'})
    assert nested.text(json.dumps({"args": json.dumps({"k": 'a\\b"c'})})) == '{"args": "{\\"k\\": \\"[redacted:N]\\"}"}'
    odd = Redactor({"P": "a/b c"})
    assert odd.text("u=a%2Fb%20c v=a%2fb+c w=a\\/b c") == "u=[redacted:P] v=[redacted:P] w=[redacted:P]"
    raw = b"ab\xffcd".decode("utf-8", "surrogateescape")  # undecodable bytes in the environment
    assert Redactor({"X": raw}).text(f"zz{raw}zz") == "zz[redacted:X]zz"


ECHO = r"""
#!/bin/bash
cat >/dev/null
echo "stderr has $SEC" >&2
printf '{"output": "said %s", "note": "passed open"}\n' "$SEC"
"""


@pytest.mark.parametrize("value", ["on", "id", "x", "pass", "open"])
def test_a_short_secret_never_changes_the_record_s_shape(
    rook_workspace, rook_cli, monkeypatch, value
):
    # "on" is inside "conversation", "pass" inside "passed": Rook's own words stay whole
    monkeypatch.setenv("SEC", value)
    ws = rook_workspace
    ws.script("echo.sh", ECHO)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "SEC", "purpose": "a short one"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "said"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr
    assert "Traceback" not in r.stderr
    record = ws.record(r.report["run"]["id"], "s.1")
    assert record["status"] == "passed" and record["hooks"][0]["phase"] == "execute"
    assert "output" in record["turns"][0]
    if len(value) < 4:  # too short to redact: said so, by name, never by value
        assert "env SEC: its value is shorter than 4 characters" in r.stderr
        assert record["turns"][0]["output"] == f"said {value}"
    else:
        assert record["turns"][0]["output"] == "said [redacted:SEC]"
        assert value not in record["turns"][0]["evidence"]["note"]  # the agent's text: redacted


@pytest.mark.parametrize("value", [" \\n x", "YQ=="])
def test_a_secret_with_a_short_form_is_redacted_without_a_warning_that_it_is_not(
    rook_workspace, rook_cli, monkeypatch, value
):
    """A value of 4 characters or more is redacted, though a form Rook also looks for
    (its backslash-n as a line break, base64 decoded) is shorter than that: the
    warning 'shorter than 4 characters ... not redacted' was given for it all the same."""
    monkeypatch.setenv("SEC", value)
    ws = rook_workspace
    ws.script("echo.sh", ECHO)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "SEC", "purpose": "a token"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "said"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr
    assert "shorter than 4 characters" not in r.stderr
    record = ws.record(r.report["run"]["id"], "s.1")
    assert record["turns"][0]["output"] == "said [redacted:SEC]"


SHORT_KEY_HOOK = r"""
#!/usr/bin/env python3
import base64, json, os, sys
sys.stdin.read()
s = os.environ["SEC"]
print(json.dumps({"output": "ok", s: s, "kv": {s: 1, "keep": s}, "b64": base64.b64encode(s.encode()).decode(),
                  "calls": [{"name": "look", "arguments": {s: "x"}}]}))
"""


@pytest.mark.parametrize("value", ["k3Y9", "ab12cd", "Pw_7x9z"])
def test_a_short_secret_used_whole_as_a_json_key_is_redacted(rook_workspace, rook_cli, monkeypatch, value):
    """A secret of 4 to 7 characters that a hook printed as a JSON key stayed in
    every record and report (a key was redacted only for a secret of 8 or more,
    so that a short one never renames a field it is inside of), as did its
    base64 (a value under 8 bytes had no base64 form). The key is the marker
    now; the record stays one JSON document, Rook's own fields as they were."""
    monkeypatch.setenv("SEC", value)
    ws = rook_workspace
    ws.script("hook.py", SHORT_KEY_HOOK)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/hook.py"}, "capabilities": {"calls": True},
                "env": [{"variable": "SEC", "purpose": "a PIN"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}, {"called": "look"}]})
    out = ws.root / "reports"
    reports = [a for fmt in ("json", "junit", "markdown", "html") for a in ("--report", f"{fmt}:{out}/r.{fmt}")]
    r = rook_cli("run", "--json", *reports)
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["evidence"] == {"[redacted:SEC]": "[redacted:SEC]", "b64": "[redacted:SEC]",
                                "kv": {"[redacted:SEC]": 1, "keep": "[redacted:SEC]"}}
    assert turn["calls"] == [{"name": "look", "arguments": {"[redacted:SEC]": "x"}}]
    run_id = r.report["run"]["id"]
    shown = [rook_cli(*args) for args in (["report", run_id, "--json"], ["runs", "show", run_id])]
    encoded = base64.b64encode(value.encode()).decode()
    for text in [r.stdout, r.stderr, all_text(out), all_text(ws.runs_dir)] + [x.stdout + x.stderr for x in shown]:
        assert value not in text and encoded not in text
    for p in ws.run_dir(run_id).rglob("*.json"):
        json.loads(p.read_text())  # each record one JSON document
    record = ws.record(run_id, "s.1")
    assert record["status"] == "passed" and record["turns"][0]["output"] == "ok"


SHORT_KEY_WRAPPER = r"""
#!/bin/bash
cat > "$RUHROH_RESULT_PATH" <<JSON
{"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied", "output": "done",
 "model": {"provider": "p", "model": "m", "$SEC": 2}, "usage": {"inputTokens": 1, "$SEC": 3}}
JSON
echo '{"status": "goal_satisfied"}'
"""


def test_a_short_secret_as_a_key_of_a_ruhroh_wrapper_s_model_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A Ruhroh wrapper's ``model`` object went to the hook's record (its details) and the
    run's manifest as the wrapper gave it: a short secret that was one of its keys stayed."""
    monkeypatch.setenv("SEC", "ab12cd")
    ws = rook_workspace
    ws.script("wrapper.sh", SHORT_KEY_WRAPPER)
    ws.profile({"id": "r", "hooks": {"execute": {"ruhroh": {"command": "scripts/wrapper.sh"}}},
                "env": [{"variable": "SEC", "purpose": "a PIN"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "done"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "ab12cd" not in all_text(ws.runs_dir) and "ab12cd" not in r.stdout + r.stderr
    manifest = json.loads(next(ws.runs_dir.rglob("ruhroh-run-manifest.json")).read_text())
    assert manifest["model"] == {"provider": "p", "model": "m", "[redacted:SEC]": 2}, manifest["model"]


ROOK_WORD_HOOK = r"""
#!/usr/bin/env python3
import json, os, sys
phase = sys.argv[1]
if phase == "open":
    print(json.dumps({"conversation": "c-1"}))
elif phase == "execute":
    sys.stdin.read()
    print(json.dumps({"output": "said " + os.environ["SEC"], "conversation": "c-1",
                      "calls": [], "usage": {"input": 1, "output": 1}}))
elif phase == "collect":
    print(json.dumps({"note": "my_" + os.environ["SEC"]}))
"""


@pytest.mark.parametrize("value", ["conversation", "collected", "scenario", "evidence"])
def test_a_secret_that_is_one_of_rook_s_own_field_names_never_breaks_the_run(
    rook_workspace, rook_cli, monkeypatch, value
):
    # a value of 8 characters or more was replaced inside every field name holding
    # it, Rook's own too: the hook's record lost its end_conversation field and the
    # run stopped with a traceback (HookResult got 'end_[redacted:SEC]'), and the
    # records written had their keys renamed ("collected", "scenarios" ...)
    monkeypatch.setenv("SEC", value)
    ws = rook_workspace
    ws.script("hook.py", ROOK_WORD_HOOK)
    ws.profile({"id": "p", "hooks": {p: "scripts/hook.py" for p in ("open", "execute", "collect")},
                "env": [{"variable": "SEC", "purpose": "a Rook word"}],
                "capabilities": {"multi_turn": True, "calls": True, "usage": True}})
    ws.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "said"}, {"max_calls": 3}]})
    r = rook_cli("run", "--json")
    assert "Traceback" not in r.stderr and r.exception is None, r.stderr
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    run_id = r.report["run"]["id"]
    record = ws.record(run_id, "s.1")
    assert {"end_conversation", "conversation_assigned"} <= set(record["hooks"][0])
    assert record["turns"][0]["output"] == "said [redacted:SEC]"
    assert record["turns"][0]["conversation"] == "c-1"
    assert record["collected"]["evidence"] == {"note": "my_[redacted:SEC]"}  # the agent's text
    for args in (["runs", "show", run_id], ["report", run_id],
                 ["run", "--run", run_id, "--phases", "collect,judge", "--json"]):
        shown = rook_cli(*args)
        assert shown.exit_code == 0 and "Traceback" not in shown.stderr, (args, shown.stderr)
    # every field name of Rook's own of 8 characters or more is one the redactor keeps
    from rook_core.models import HookResult
    from rook_core.redact import OWN_KEYS

    assert {f.name for f in dataclasses.fields(HookResult) if len(f.name) >= 8} <= OWN_KEYS
    agent = {"evidence", "data", "collected", "arguments", "usage"}

    def names(x, inside=False):
        if isinstance(x, dict):
            for k, v in x.items():
                if not inside and len(k) >= 8:
                    yield k
                yield from names(v, inside or k in agent)
        elif isinstance(x, list):
            for v in x:
                yield from names(v, inside)

    written = [json.loads(p.read_text()) for p in ws.run_dir(run_id).rglob("*.json")]
    assert set(names(written + [r.report])) <= OWN_KEYS


@pytest.mark.parametrize("value", ["category", "feature_id"])
def test_a_secret_that_is_a_scenario_s_field_name_keeps_the_scenario_s_category(
    rook_workspace, rook_cli, monkeypatch, value
):
    # a scenario's own fields (class, category, feature_id ...) are field names of the
    # records and reports too (the scenario's ``extra``, the report's per-scenario
    # statistics), but were not among OWN_KEYS: a secret "category" renamed the field
    # ("[redacted:SEC]": "billing"), and the reports lost the scenario's category
    monkeypatch.setenv("SEC", value)
    ws = rook_workspace
    ws.script("echo.sh", ECHO)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "SEC", "purpose": "a scenario field's name"}]})
    ws.scenario({"id": "s", "goal": "g", "class": "core", "category": "billing",
                 "feature_id": "F-1", "criteria": [{"contains": "said"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    extra = {"class": "core", "category": "billing", "feature_id": "F-1"}
    assert r.report["scenarios"][0]["extra"] == extra
    assert ws.record(r.report["run"]["id"], "s.1")["scenario"]["extra"] == extra
    [stats] = r.report["summary"]["by_scenario"]
    assert (stats["category"], stats["feature_id"]) == ("billing", "F-1")
    # every field name of a scenario's of 8 characters or more is one the redactor keeps
    from rook_core import scenario
    from rook_core import stats as rook_stats
    from rook_core.redact import OWN_KEYS

    names = {*scenario.PUBLIC_KEYS, *scenario.EXTRA_KEYS, *rook_stats.EXTRA_KEYS}
    assert {k for k in names if len(k) >= 8} <= OWN_KEYS


@pytest.mark.parametrize("value", ["timeout", "script"])
def test_a_run_whose_profile_copy_a_secret_made_unreadable_is_still_shown(
    rook_workspace, rook_cli, monkeypatch, value
):
    # the run's copy of the profile (profile.yaml) is redacted as text: a value
    # that is a word of the file ("timeout" in timeout_seconds) leaves it no YAML
    # ("[redacted:SEC]_seconds: 2"), and rook runs show / rook report of the run
    # stopped with "not valid YAML" (exit 2) reading it for the variables to redact
    monkeypatch.setenv("SEC", value)
    ws = rook_workspace
    ws.script("echo.sh", ECHO)
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/echo.sh", "timeout_seconds": 30}},
                "env": [{"variable": "SEC", "purpose": "a word of the profile file"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "said"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    run_id = r.report["run"]["id"]
    assert "[redacted:SEC]" in (ws.run_dir(run_id) / "profile.yaml").read_text()
    for args in (["runs", "show", run_id], ["runs", "show", run_id, "--json"], ["report", run_id]):
        shown = rook_cli(*args)
        assert shown.exit_code == 0, (args, shown.stdout + shown.stderr)
        assert "said [redacted:SEC]" in shown.stdout or "passed" in shown.stdout, shown.stdout


def test_a_secret_that_is_a_hook_status_never_changes_the_hook_s_status(
    rook_workspace, rook_cli, monkeypatch
):
    # "timeout", a hook's status, was not among Rook's own words kept whole: the
    # record of a hook that timed out said "status": "[redacted:SEC]"
    monkeypatch.setenv("SEC", "timeout")
    ws = rook_workspace
    ws.script("slow.sh", "#!/bin/bash\ncat >/dev/null\necho \"$SEC\" >&2\nsleep 30\n")
    ws.profile({"id": "p", "hooks": {"execute": {"script": "scripts/slow.sh", "timeout_seconds": 1}},
                "env": [{"variable": "SEC", "purpose": "a hook status"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stdout + r.stderr
    [hook] = r.report["scenarios"][0]["hooks"]
    assert hook["status"] == "timeout", hook
    assert ws.record(r.report["run"]["id"], "s.1")["hooks"][0]["status"] == "timeout"


def test_a_secret_with_bytes_that_are_not_utf8_is_redacted_as_rook_reads_it(
    rook_workspace, rook_cli, monkeypatch
):
    import os

    raw = b"hunter2\xff\xfeSECRETC"
    monkeypatch.setitem(os.environ, "SEC", raw.decode("utf-8", "surrogateescape"))
    ws = rook_workspace
    ws.script("echo.sh", ECHO)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "SEC", "purpose": "odd bytes"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "zzz"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "failed"}
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "SECRETC" not in text and "hunter2" not in text
    assert "said [redacted:SEC]" in text


def test_a_secret_with_a_space_sent_as_a_query_parameter_is_redacted_in_the_url(
    rook_workspace, rook_cli, monkeypatch
):
    # A passphrase in `query:` goes out form-encoded (`+` for a space, `%2C`...):
    # the URL a record and a diagnosis show is percent-decoded, so it holds the
    # value with `+` in place of each space.
    from servers.agent_server import AgentServer

    phrase = "correct horse, battery staple!"
    monkeypatch.setenv("PASSPHRASE", phrase)
    server = AgentServer().start()
    try:
        ws = rook_workspace
        ws.profile({"id": "p", "env": [{"variable": "PASSPHRASE", "purpose": "the API passphrase"}],
                    "hooks": {"execute": {"http": {
                        "url": f"{server.url}/echo", "query": {"pass": "{{env.PASSPHRASE}}"},
                        "body": {"q": "{{goal}}"}, "extract": {"output": "received.q"}}}}})
        ws.scenario({"id": "ok", "goal": "hi", "criteria": [{"contains": "hi"}]})
        ws.profile({"id": "gone", "env": [{"variable": "PASSPHRASE", "purpose": "the API passphrase"}],
                    "hooks": {"execute": {"http": {
                        "url": f"{server.url}/no-such-route", "query": {"pass": "{{env.PASSPHRASE}}"},
                        "body": {"q": "{{goal}}"}}}}}, active=False)
        r = rook_cli("run", "--json")
        failed = rook_cli("run", "--profile", "gone")
        assert server.seen("POST", "/echo")[0]["query"] == {"pass": phrase}  # it was sent
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.stderr
    assert failed.exit_code == 1 and "no-such-route?pass=[redacted:PASSPHRASE]" in failed.stderr
    attempt = ws.record(r.report["run"]["id"], "ok.1")["hooks"][0]["details"]["attempts"][0]
    assert attempt["url"] == f"{server.url}/echo?pass=[redacted:PASSPHRASE]"
    text = all_text(ws.runs_dir) + r.stdout + r.stderr + failed.stdout + failed.stderr
    for form in (phrase, phrase.replace(" ", "+"), "horse"):
        assert form not in text, f"{form!r} reached a record or the terminal"


NUMBERS = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
pin = int(os.environ["ACCOUNT_PIN"])
print(json.dumps({"output": "paid", "account": pin, "as_float": float(pin), "n": [1, pin],
                  "calls": [{"name": "pay", "arguments": {"acct": pin}}]}))
"""


def test_a_numeric_secret_printed_as_a_json_number_is_redacted(rook_workspace, rook_cli, monkeypatch):
    monkeypatch.setenv("ACCOUNT_PIN", "987654321012")
    ws = rook_workspace
    ws.script("numbers.py", NUMBERS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/numbers.py"}, "capabilities": {"calls": True},
                "env": [{"variable": "ACCOUNT_PIN", "purpose": "the account's PIN"}]})
    ws.scenario({"id": "s", "goal": "pay", "criteria": [{"contains": "paid"}, {"called": "pay"}]})
    r = rook_cli("run", "--json", "--report", f"html:{ws.root}/out/r.html")
    assert r.statuses() == {"s": "passed"}, r.stderr
    text = all_text(ws.runs_dir) + all_text(ws.root / "out") + r.stdout + r.stderr
    assert "987654321012" not in text
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["evidence"]["account"] == "[redacted:ACCOUNT_PIN]"
    assert turn["evidence"]["as_float"] == "[redacted:ACCOUNT_PIN]"
    assert turn["evidence"]["n"] == [1, "[redacted:ACCOUNT_PIN]"]  # other numbers stay numbers
    assert turn["calls"][0]["arguments"] == {"acct": "[redacted:ACCOUNT_PIN]"}
    assert isinstance(r.report["scenarios"][0]["seconds"], float)


def test_a_run_name_holding_a_secret_is_refused(ws, rook_cli):
    # the name would be the run directory's name, listed raw by `rook runs`
    r = rook_cli("run", "--run-name", f"ci-{SECRET}", "--shard", "1/2")
    assert r.exit_code == 2
    assert "--run-name ci-[redacted:API_TOKEN]: holds the value of a profile env variable" in r.stderr
    assert_clean(r.stdout + r.stderr, "the terminal")
    assert not any(SECRET in p.name for p in ws.runs_dir.iterdir())
    runs = rook_cli("runs", "-w", str(ws.root))
    assert_clean(runs.stdout + runs.stderr, "rook runs")


def test_a_sharded_run_id_holding_a_secret_is_refused_naming_the_flag_given(ws, rook_cli):
    # `--run ID --shard I/N` creates the run too: the message names --run, the flag typed
    r = rook_cli("run", "--run", f"ci-{SECRET}", "--shard", "1/2")
    assert r.exit_code == 2
    assert "rook: error: --run ci-[redacted:API_TOKEN]: holds the value of a profile env" in r.stderr
    assert "--run-name" not in r.stderr
    assert_clean(r.stdout + r.stderr, "the terminal")
    assert not any(SECRET in p.name for p in ws.runs_dir.iterdir())


# URL encoders differ in what they leave as is: JavaScript's encodeURIComponent
# keeps ! ' ( ) *, encodeURI also & = / ? : @ $ , ; + #, Java's URLEncoder keeps *
# and encodes ~. A secret holding them is in none of Python's quote() forms.
URL_ENCODER = r"""
#!/usr/bin/env node
const phase = process.argv[2];
if (phase !== "execute") process.exit(0);
process.stdin.resume();
process.stdin.on("end", () => {
  const s = process.env.DB_PASSWORD;
  console.error("GET https://db.example/login?pw=" + encodeURIComponent(s) + " failed, retrying");
  console.log(JSON.stringify({
    output: "ok",
    url: "https://db.example/?pw=" + encodeURIComponent(s),
    uri: encodeURI("https://db.example/u/" + s),
    java: encodeURIComponent(s).replace(/%20/g, "+").replace(/~/g, "%7E").replace(/[!'()]/g, c => "%" + c.charCodeAt(0).toString(16).toUpperCase()),
  }));
});
"""


def test_a_secret_is_redacted_however_a_url_encoder_encodes_it(rook_workspace, rook_cli, monkeypatch):
    import urllib.parse

    secret = "Pa55w0rd!(x)*y'z~ <&>"
    monkeypatch.setenv("DB_PASSWORD", secret)
    ws = rook_workspace
    ws.script("url_encoder.mjs", URL_ENCODER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/url_encoder.mjs"},
                "env": [{"variable": "DB_PASSWORD", "purpose": "database password"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for piece in ("Pa55w0rd", "y'z", urllib.parse.quote(secret, safe="!'()*")):
        assert piece not in text, f"{piece!r} reached a record or the terminal"
    evidence = r.report["scenarios"][0]["turns"][0]["evidence"]
    assert evidence == {"url": "https://db.example/?pw=[redacted:DB_PASSWORD]",
                        "uri": "https://db.example/u/[redacted:DB_PASSWORD]",
                        "java": "[redacted:DB_PASSWORD]"}


def test_redactor_mixed_percent_encoding():
    from rook_core.redact import Redactor

    red = Redactor({"P": "a!b c/ä", "T": "plain-token-123", "O": "outer-IN!R-tail", "I": "IN!R"})
    for shown in ("a!b%20c/%C3%A4", "a%21b+c%2f%c3%a4", "a!b c/ä", "a%21b%20c%2F%C3%A4"):
        assert red.text(f"<{shown}>") == "<[redacted:P]>", shown
    assert red.text("a!b%20c%2") == "a!b%20c%2"  # not the whole value
    assert red.text("x outer-IN%21R-tail y IN%21R") == "x [redacted:O] y [redacted:I]"
    assert red.text("plain-token-123%21") == "[redacted:T]%21"


MULTIBYTE_CAP = r"""
#!/usr/bin/env python3
import os, sys
sys.stdin.read()
# the 1024-byte cap falls inside the secret's "€" (3 bytes in UTF-8), after "abcdefgh"
sys.stdout.buffer.write(b"y" * (1024 - 10) + os.environ["API_TOKEN"].encode() + b"y" * 3000)
"""


def test_an_output_cap_inside_a_multibyte_character_of_a_secret_shows_no_piece(
    rook_workspace, rook_cli, monkeypatch
):
    monkeypatch.setenv("API_TOKEN", "abcdefgh€rest-12345")
    ws = rook_workspace
    ws.script("cap.py", MULTIBYTE_CAP)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/cap.py"}, "limits": {"stdout_bytes": 1024},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr
    hook = ws.record(r.report["run"]["id"], "s.1")["hooks"][0]
    assert hook["stdout"].endswith("y[redacted:API_TOKEN]") and "1024-byte cap" in hook["diagnosis"]
    # the run id ends with 6 random hex digits, which may spell 'abcd' (20261206-142601-84abcd)
    text = (all_text(ws.runs_dir) + r.stdout + r.stderr).replace(r.report["run"]["id"], "<run>")
    assert "abcd" not in text


QUOTING_HOOK = r"""
#!/usr/bin/env python3
import html, json, logging, os, sys
sys.stdin.read()
s = os.environ["DB_PASSWORD"]
logging.basicConfig(stream=sys.stderr)
logging.getLogger("agent").warning("connecting with %r", s)  # on stderr, kept in the record
print(json.dumps({"output": "ok",
    "repr": repr(s), "ascii": ascii(s), "list": str([s]),
    "html": html.escape(s), "xml": html.escape(s, quote=False),
    "jinja": s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
              .replace('"', "&#34;").replace("'", "&#39;"),
}))
"""


def test_a_secret_quoted_by_python_or_escaped_for_html_is_redacted(
    rook_workspace, rook_cli, monkeypatch
):
    """repr() of a secret holding both quotes and a backslash, ascii() of a
    non-ASCII one, and html.escape() of one holding < & > ' " reached the record."""
    secret = "p@ss\"w\\ord'x <&> sp\u00e4ce"
    monkeypatch.setenv("DB_PASSWORD", secret)
    ws = rook_workspace
    ws.script("quoting.py", QUOTING_HOOK)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/quoting.py"},
                "env": [{"variable": "DB_PASSWORD", "purpose": "database password"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for piece in ("p@ss", "w\\\\ord", "sp\\xe4ce", "&lt;&amp;&gt;"):
        assert piece not in text, f"{piece!r} reached a record or the terminal"
    evidence = r.report["scenarios"][0]["turns"][0]["evidence"]
    assert evidence["repr"] == "'[redacted:DB_PASSWORD]'", evidence
    assert evidence["list"] == "['[redacted:DB_PASSWORD]']"
    assert {evidence[k] for k in ("html", "xml", "jinja")} == {"[redacted:DB_PASSWORD]"}
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][0]["stderr"]
    assert "connecting with '[redacted:DB_PASSWORD]'" in stderr


# A hook's output that fails a check is quoted in the hook's diagnosis, cut to
# 300 characters: the cut fell inside a secret the hook put in a usage key or
# value, before redaction, and the piece before the cut reached the record.
USAGE_HOOK = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
shape = os.path.basename(sys.argv[0])[:-3]
if shape == "cost":
    print(json.dumps({"output": "ok", "usage": {"cost_" + "k" * 283 + s: -1}}))
elif shape == "number":
    print(json.dumps({"output": "ok", "usage": {"input": "n" * 256 + s}}))
else:
    print(json.dumps({"output": "ok", "calls": ["c" * 245 + s]}))
"""


@pytest.mark.parametrize("shape", ["cost", "number", "calls"])
def test_a_check_of_a_hooks_output_never_cuts_a_secret_in_its_diagnosis(
    rook_workspace, rook_cli, monkeypatch, shape
):
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script(f"{shape}.py", USAGE_HOOK)
    ws.profile({"id": "p", "hooks": {"execute": f"scripts/{shape}.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for i in range(len(SECRET) - 5):
        assert SECRET[i : i + 6] not in text, f"a piece of the secret ({SECRET[i:i + 6]!r}) leaked"
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["diagnosis"].endswith("[redacted:API_TOKEN]"), hook["diagnosis"]  # the marker whole


CUT_ANSWER = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
# the secret starts 10 characters before the 120 at which a reason cuts the answer
print(json.dumps({"output": "x" * 110 + os.environ["API_TOKEN"] + " and more"}))
"""


def test_a_reason_quoting_the_answer_never_cuts_a_secret(rook_workspace, rook_cli, monkeypatch):
    """A criterion's reason quoted the answer cut at 120 characters before the
    redactor saw it: the secret's first 10 characters reached record and screen."""
    monkeypatch.setenv("API_TOKEN", "Zq9-s3cr3t-v4lue-77")
    ws = rook_workspace
    ws.script("cut.py", CUT_ANSWER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/cut.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "nope"},
                                                      {"matches": "nope"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "failed"}, r.stderr
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "Zq9-s3" not in text
    reason = r.report["scenarios"][0]["criteria"][0]["reason"]
    assert "[redacted:API_TOKEN]" in reason, reason


def test_the_author_agent_prompt_never_cuts_a_secret(tmp_path):
    """The source shown to the author agent was cut at 8,000 characters before the
    redactor saw it: a secret straddling the cut went to the author half-hidden."""
    from rook_plugins.author_agent import build_request

    from rook_core.authoring import AuthorRequest, Secrets, Source
    from rook_core.redact import Redactor
    from rook_core.workspace import Agent

    secret = "Zq9-s3cr3t-v4lue-77"
    source = Source(kind="file", text="x" * 7990 + secret + " tail", label="call.txt")
    request = AuthorRequest(source=source, agent=Agent(tmp_path, "p", "a"), profile_id="p",
                            name="p", secrets=Secrets("A", Redactor({"API_TOKEN": secret})))
    prompt = build_request(request, "Write it.")
    assert "Zq9-s3" not in prompt and "[redacted:API_TOKEN]" in prompt


HANDLE = r"""
#!/bin/bash
case "$1" in
  open) echo "{\"conversation\": \"c-$API_TOKEN\"}" ;;
  execute) cat >/dev/null; echo '{"output": "ok"}' ;;
  collect) if [ "${ROOK_CONVERSATION+set}" = set ]; then given="$ROOK_CONVERSATION"; else given=absent; fi
           same=no; [ "$given" = "c-$API_TOKEN" ] && same=yes
           echo "{\"same\": \"$same\", \"given\": \"$given\"}" ;;
esac
"""


def test_a_handle_holding_a_secret_is_never_given_back_redacted(rook_workspace, rook_cli, monkeypatch):
    """A conversation handle holding a secret is recorded redacted; a later
    `--run ID --phases collect,judge` gave the hook that redacted text as
    ROOK_CONVERSATION ('c-[redacted:API_TOKEN]'), as if it were the handle."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("handle.sh", HANDLE)
    ws.profile({"id": "p", "hooks": {p: "scripts/handle.sh" for p in ("open", "execute", "collect")},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    whole = rook_cli("run", "--json")  # one invocation: the hook gets the handle itself
    assert whole.report["scenarios"][0]["collected"]["evidence"]["same"] == "yes", whole.stderr
    first = rook_cli("run", "--phases", "prepare,open,execute,close", "--json")
    run_id = first.report["run"]["id"]
    assert ws.record(run_id, "s.1")["conversation"] == "c-[redacted:API_TOKEN]"
    later = rook_cli("run", "--run", run_id, "--phases", "collect,judge", "--json")
    [entry] = later.report["scenarios"]
    assert entry["status"] == "passed", later.stderr
    assert entry["collected"]["evidence"] == {"same": "no", "given": "absent"}
    assert any("conversation handle (c-[redacted:API_TOKEN]) held the value" in w
               for w in entry["warnings"]), entry["warnings"]
    assert SECRET not in all_text(ws.runs_dir) + later.stdout + later.stderr


def test_an_id_holding_a_secret_is_refused_before_a_run(rook_workspace, rook_cli, monkeypatch):
    """A scenario id holding a secret ('admin' in admin-login) went into the run's
    plan redacted, while its record kept its real name: resuming the run said the
    scenario no longer existed, a second shard was refused ('planned other
    scenario runs'), and rook runs show listed it as pending. A profile id did the
    same to a resume ('was made with profile [redacted:...]')."""
    monkeypatch.setenv("DB_PASSWORD", "admin")
    ws = rook_workspace
    ws.script("echo.sh", ECHO)
    env = [{"variable": "DB_PASSWORD", "purpose": "fixture database"}]
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}, "env": env})
    ws.profile({"id": "admin-desk", "hooks": {"execute": "scripts/echo.sh"}, "env": env}, active=False)
    ws.scenario({"id": "admin-login", "goal": "g", "criteria": [{"contains": "said"}]})
    ws.scenario({"id": "other", "goal": "g", "criteria": [{"contains": "said"}]})
    for args in (["run"], ["run", "--shard", "1/2", "--run-name", "ci"], ["run", "--only", "admin-login"]):
        r = rook_cli(*args)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert ("scenario [redacted:DB_PASSWORD]-login" in r.stderr
                and "the id holds the value of a profile env variable" in r.stderr), r.stderr
        assert "admin" not in r.stdout + r.stderr.replace(str(ws.root), "")
    r = rook_cli("run", "--profile", "admin-desk", "--only", "other")
    assert r.exit_code == 2 and "profile [redacted:DB_PASSWORD]-desk" in r.stderr, r.stderr
    assert not ws.runs_dir.exists() or not list(ws.runs_dir.iterdir())
    ok = rook_cli("run", "--only", "other", "--phases", "prepare,open,execute,close", "--json")
    assert ok.exit_code == 0, ok.stderr
    later = rook_cli("run", "--run", ok.report["run"]["id"], "--phases", "collect,judge", "--json")
    assert later.statuses() == {"other": "passed"}, later.stderr


CAPPED_ARTIFACT = r"""
#!/bin/bash
printf 'x%.0s' $(seq 1 100) > "$RUHROH_WORKSPACE/big.log"
printf '%s tail' "$API_TOKEN" >> "$RUHROH_WORKSPACE/big.log"
cat > "$RUHROH_RESULT_PATH" <<JSON
{"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied", "output": "ok",
 "artifacts": {"big": "$RUHROH_WORKSPACE/big.log"}}
JSON
echo '{"status": "goal_satisfied"}'
"""


def test_profile_test_never_shows_the_beginning_of_a_secret_a_cap_cut(rook_workspace, rook_cli, monkeypatch):
    """rook profile test cut hook text (an artifact at artifact_max_bytes, output
    at its cap) with no redactor in place, so a secret the cut fell inside showed
    its beginning ('xxx...Zq9-s3c') where rook run masks it."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("capped.sh", CAPPED_ARTIFACT)
    ws.profile({"id": "r", "env": [{"variable": "API_TOKEN", "purpose": "agent token"}],
                "hooks": {"execute": {"ruhroh": {"command": "scripts/capped.sh", "artifact_max_bytes": 108}}}})
    r = rook_cli("profile", "test", "r", "--json", "-w", str(ws.root))
    assert r.exit_code == 0, r.stderr
    artifact = json.loads(r.stdout)["test"]["turns"][0]["evidence"]["artifacts"]["big"]
    assert artifact["truncated"] and artifact["content"] == "x" * 100 + "[redacted:API_TOKEN]"
    assert SECRET[:6] not in r.stdout + r.stderr


COUNTS = r"""
#!/bin/bash
cat >/dev/null
echo '{"output": "ok", "usage": {"input": 1200, "output": 5}}'
"""


def test_a_token_count_equal_to_a_numeric_secret_is_unverifiable_not_a_crash(
    rook_workspace, rook_cli, monkeypatch
):
    """A usage count equal to a numeric secret (PIN 1200) is recorded as
    "[redacted:PIN]", and max_tokens, judging the record, added it up:
    'criterion max_tokens raised TypeError: unsupported operand type(s)'."""
    monkeypatch.setenv("PIN", "1200")
    ws = rook_workspace
    ws.script("counts.sh", COUNTS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/counts.sh"}, "capabilities": {"usage": True},
                "env": [{"variable": "PIN", "purpose": "account PIN"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [
        {"max_tokens": {"input": 5000}}, {"max_tokens": {"output": 1}}, {"max_tokens": {"output": 10}}]})
    r = rook_cli("run", "--json")
    verdicts = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert verdicts == [
        ("unverifiable", "usage has no input count; input redacted: it holds the value of a profile env variable"),
        ("failed", "tokens output 5/1"),
        ("passed", "tokens output 5/10"),
    ], verdicts
    assert r.report["scenarios"][0]["turns"][0]["usage"] == {"input": "[redacted:PIN]", "output": 5}


STOPPED = r"""
#!/usr/bin/env python3
import os, sys, time
sys.stdin.read()
s = os.environ["API_TOKEN"]
sys.stdout.write('{"output": "' + s[:9]); sys.stdout.flush()
sys.stderr.write("connecting with " + s[:7]); sys.stderr.flush()
time.sleep(60)
"""


@pytest.mark.parametrize("transport", ["script", "ruhroh"])
def test_a_hook_stopped_in_the_middle_of_a_secret_shows_no_piece_of_it(
    rook_workspace, rook_cli, monkeypatch, transport
):
    """A hook killed at its timeout while writing a secret left the secret's
    beginning at the end of its recorded stdout and stderr ('{"output": "Zq9-s3cr3'),
    though a stream an output cap stops has it masked; a Ruhroh wrapper's too
    (and in its diagnosis), after the script's was fixed."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    path = ws.script("stopped.py", STOPPED)
    entry = "scripts/stopped.py" if transport == "script" else {"command": str(path)}
    ws.profile({"id": "p", "hooks": {"execute": {transport: entry, "timeout_seconds": 5}},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["status"] == "timeout"
    assert hook["stdout"] == '{"output": "[redacted:API_TOKEN]'
    assert hook["stderr"] == "connecting with [redacted:API_TOKEN]"
    assert "Zq9-s3" not in all_text(ws.runs_dir) + r.stdout + r.stderr


def test_profile_list_never_shows_an_env_value_in_a_profile_s_name(ws, rook_cli):
    """rook profile list printed each profile's name as written, so a name holding
    the value of one of its env variables showed it (profile show redacts it)."""
    ws.profile({"id": "named", "name": f"desk {SECRET}", "hooks": {"execute": "scripts/agent.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]}, active=False)
    table = rook_cli("profile", "list", "-w", str(ws.root))
    doc = rook_cli("profile", "list", "--json", "-w", str(ws.root))
    assert table.exit_code == doc.exit_code == 0, table.stderr + doc.stderr
    assert_clean(table.stdout + table.stderr + doc.stdout + doc.stderr, "rook profile list")
    assert "desk [redacted:API_TOKEN]" in table.stdout
    named = next(r for r in json.loads(doc.stdout) if r["id"] == "named")
    assert named["name"] == "desk [redacted:API_TOKEN]" and named["active"] is False


PIN_ECHO = r"""
#!/bin/bash
cat >/dev/null
echo "{\"output\": \"pin is $PIN\"}"
"""


def test_a_run_id_holding_a_secret_is_shown_whole(rook_workspace, rook_cli, monkeypatch):
    """A run id holds the date: a 4-digit PIN equal to the year garbled every run
    id Rook printed or recorded ('resume with: rook run --run
    [redacted:PIN]1201-105622-2a9957', the report's run.id and dir), naming no run."""
    import time

    year = time.strftime("%Y", time.gmtime())
    monkeypatch.setenv("PIN", year)
    ws = rook_workspace
    ws.script("pin.sh", PIN_ECHO)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/pin.sh"},
                "env": [{"variable": "PIN", "purpose": "account PIN"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "pin"}]})
    first = rook_cli("run", "--phases", "prepare,open,execute,close", "--json")
    run_id = first.report["run"]["id"]
    assert run_id.startswith(year) and run_id in {p.name for p in ws.runs_dir.iterdir()}
    assert f"rook run --run {run_id} --phases collect,judge" in first.stderr, first.stderr
    later = rook_cli("run", "--run", run_id, "--phases", "collect,judge", "--json")
    assert later.report["run"]["id"] == run_id and later.report["run"]["dir"].endswith(run_id)
    assert later.report["scenarios"][0]["turns"][0]["output"] == "pin is [redacted:PIN]"  # still redacted


STRIPPED = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
token = os.environ["API_TOKEN"].strip()  # as an HTTP client sends it
print(f"calling with Bearer {token}", file=sys.stderr)
print(json.dumps({"output": f"sent Authorization: Bearer {token}"}))
"""


def test_a_secret_read_from_a_file_with_its_newline_is_redacted_without_it(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A value set from a file keeps the file's last newline (a Kubernetes secret
    mounted with --from-file, a CI secret pasted with one); the agent strips it
    before use. Only the value with its newline was redacted: the token itself
    reached the record, the reports and the terminal."""
    monkeypatch.setenv("API_TOKEN", SECRET + "\n")
    ws = rook_workspace
    ws.script("stripped.py", STRIPPED)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/stripped.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "nothing like it"}]})
    r = rook_cli("run", "--json", "--report", f"markdown:{tmp_path}/out/r.md")
    table = rook_cli("run")
    assert r.statuses() == {"s": "failed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "sent Authorization: Bearer [redacted:API_TOKEN]"
    text = all_text(ws.runs_dir) + all_text(tmp_path / "out") + r.stdout + r.stderr + table.stdout + table.stderr
    assert SECRET not in text


ESCAPING = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
text = json.dumps({"output": "the token is " + s})
if os.environ["ROOK_SCENARIO_ID"] == "gson":  # Gson's HTML-safe default, Go's json.Marshal: \u003d...
    for c in "<>&='":
        text = text.replace(c, "\\u%04x" % ord(c))
else:  # an encoder with upper-case hex, and a JSON string inside a JSON string
    text = json.dumps({"output": "ok", "args": json.dumps({"pw": s}).replace("=", "\\u003D")})
print(text)
"""


@pytest.mark.parametrize("sid", ["gson", "nested"])
def test_a_secret_a_json_encoder_escaped_as_unicode_is_redacted_in_the_raw_output(
    rook_workspace, rook_cli, monkeypatch, sid
):
    """Gson (by default) and Go's json.Marshal write `=`, `<`, `>`, `&` as
    `\\u003d`...: the parsed output was redacted, but the raw standard output a
    record keeps held the token, padding escaped ('dGhpc2lzYXNlY3JldA\\u003d\\u003d')."""
    token = "dGhpc2lzYXNl&Y3JldA=="
    monkeypatch.setenv("API_TOKEN", token)
    ws = rook_workspace
    ws.script("escaping.py", ESCAPING)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/escaping.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "token"}]})
    r = rook_cli("run", "--json")
    record = ws.record(r.report["run"]["id"], f"{sid}.1")
    stdout = record["hooks"][0]["stdout"]
    assert "[redacted:API_TOKEN]" in stdout and "\\u00" not in stdout, stdout  # no escape left over
    assert "dGhpc2lzYXNl" not in all_text(ws.runs_dir) + r.stdout + r.stderr


WRITES_ENV = r"""
#!/bin/bash
cat >/dev/null
printf 'API_TOKEN=%s\n' "$API_TOKEN" > agent.env
echo '{"output": "configured"}'
"""


def test_a_file_criterion_quoting_its_match_never_shows_a_piece_of_a_secret(
    rook_workspace, rook_cli, monkeypatch
):
    """A `file: {matches}` reason quotes what the pattern matched in the file: a
    pattern that stops inside a secret the agent wrote ('API_TOKEN=.{8}') showed
    its first characters ('API_TOKEN=Zq9-s3cr'), whole secrets only being found."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("writes.sh", WRITES_ENV)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/writes.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "configure", "workspace": ".",
                 "criteria": [{"file": {"path": "agent.env", "matches": "API_TOKEN=.{8}"}}]})
    r = rook_cli("run", "--json")
    table = rook_cli("run")
    assert r.statuses() == {"s": "passed"}, r.stderr
    [criterion] = r.report["scenarios"][0]["criteria"]
    assert criterion["reason"].endswith("('API_TOKEN=[redacted:API_TOKEN]')"), criterion
    text = all_text(ws.runs_dir) + r.stdout + r.stderr + table.stdout + table.stderr
    assert SECRET[:6] not in text


XTRACE = r"""
#!/bin/bash
set -x
cat >/dev/null
token="$API_TOKEN"
python3 -c 'import shlex, os, sys; print("would run: curl -u " + shlex.quote("me:" + os.environ["API_TOKEN"]), file=sys.stderr)'
echo '{"output": "ok"}'
"""


def test_a_secret_with_a_quote_traced_by_a_shell_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A bash hook run with `set -x` traces each assignment, quoting a value
    that holds a single quote as 'it'\\''s...', and Python's shlex.quote as
    'it'"'"'s...': the secret was found in neither, and the trace kept it."""
    secret = "it's-a-s3cret pass"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("traced.sh", XTRACE)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/traced.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][0]["stderr"]
    assert "+ token=[redacted:API_TOKEN]" in stderr or "+ token='[redacted:API_TOKEN]'" in stderr, stderr
    assert "s3cret" not in all_text(ws.runs_dir) + r.stdout + r.stderr


WRAPPED = r"""
#!/bin/bash
cat >/dev/null
printf '%s' "$API_TOKEN" | base64 >&2  # GNU base64 wraps its output at 76 columns
echo "$API_TOKEN" | openssl base64 >&2  # 64 columns (and the echo's newline encoded too)
echo '{"output": "ok"}'
"""


def test_a_long_secret_base64_encoded_by_a_tool_that_wraps_lines_is_redacted(
    rook_workspace, rook_cli, monkeypatch
):
    """GNU base64, openssl and Python's base64.encodebytes break their output
    into lines (76 or 64 characters): a secret longer than 57 bytes (a private
    key, a service account's JSON) encoded so was found only on one line, so its
    base64 reached the record whole."""
    import base64
    import shutil

    secret = "-----BEGIN KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 2 + "\n-----END KEY-----"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("wraps.sh", WRAPPED if shutil.which("openssl") else WRAPPED.replace("openssl base64", "base64 -w 64"))
    ws.profile({"id": "p", "hooks": {"execute": "scripts/wraps.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "signing key"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][0]["stderr"]
    assert stderr.count("[redacted:API_TOKEN]") == 2, stderr
    encoded = base64.b64encode(secret.encode()).decode()
    shown = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert not [encoded[i:i + 40] for i in range(0, len(encoded) - 40, 20) if encoded[i:i + 40] in shown], stderr


OVERLAP = r"""
#!/bin/bash
cat >/dev/null
echo "joined: ${A_KEY}${B_KEY:4}" >&2
echo "{\"output\": \"ok ${A_KEY}${B_KEY:4}\"}"
"""


def test_two_secrets_that_overlap_leave_no_piece_of_either(rook_workspace, rook_cli, monkeypatch):
    """A_KEY ends with what B_KEY begins with, and the agent printed them run
    together: B_KEY (the longer) was replaced first, and A_KEY, no longer whole,
    was never found, so its first eleven characters stayed in the record."""
    a, b = "Zq9-s3cr3t-abcd", "abcd-p4ssw0rd-99"
    monkeypatch.setenv("A_KEY", a)
    monkeypatch.setenv("B_KEY", b)
    ws = rook_workspace
    ws.script("overlap.sh", OVERLAP)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/overlap.sh"},
                "env": [{"variable": "A_KEY", "purpose": "one key"},
                        {"variable": "B_KEY", "purpose": "another"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    record = ws.record(r.report["run"]["id"], "s.1")
    assert record["turns"][0]["output"] == "ok [redacted:A_KEY][redacted:B_KEY]", record["turns"]
    assert "joined: [redacted:A_KEY][redacted:B_KEY]" in record["hooks"][0]["stderr"]
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "s3cr3t" not in text and "p4ssw0rd" not in text and "Zq9" not in text


def test_runs_show_of_an_unfinished_run_redacts_the_workspace_in_its_finish_hint(tmp_path, monkeypatch):
    """rook runs show of a split run printed 'finish it with: rook run --run ID
    ... -w /path/ws-SECRET' with the folder unredacted, though its table's 'run
    ID: /path/ws-[redacted:API_TOKEN]/...' line and rook report of the same run
    redact it: runs show read no secret names from the run."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})

    def rook(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rook_core", *argv, "-w", str(ws.root)],
                              capture_output=True, text=True, timeout=120)

    split = rook("run", "--phases", "prepare,open,execute,close", "--json")
    run_id = json.loads(split.stdout)["run"]["id"]
    shown = rook("runs", "show", run_id)
    assert shown.returncode == 0 and "PENDING" in shown.stdout, shown.stderr
    assert f"finish it with: rook run --run {run_id} --phases collect,judge -w " in shown.stderr
    assert "ws-[redacted:API_TOKEN]" in shown.stderr, shown.stderr
    assert_clean(shown.stdout + shown.stderr, "rook runs show's finish hint")


def test_a_run_refused_for_its_profile_redacts_a_workspace_holding_a_secret(tmp_path, monkeypatch):
    """rook run of a profile whose hook script is missing said 'hook script ...
    not found; tried /path/ws-SECRET/scripts/...' in the clear (rook profile test
    of the same profile redacts it): the run's redactor was made only after the
    hooks were resolved."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/missing.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    r = subprocess.run([sys.executable, "-m", "rook_core", "run", "-w", str(ws.root)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "hook script 'scripts/missing.sh' not found" in r.stderr, r.stderr
    assert "ws-[redacted:API_TOKEN]/scripts/missing.sh" in r.stderr, r.stderr
    assert_clean(r.stdout + r.stderr, "rook run's message")
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


BASIC_DECODER = r"""
#!/bin/bash
cat >/dev/null
creds=$(printf %s "$DESK_BASIC_AUTH" | base64 -d)
echo "login failed for ${creds%%:*} with password ${creds#*:}" >&2
printf '{"output": "sent %s"}\n' "$creds"
"""


def test_a_basic_credential_is_redacted_decoded_too(rook_workspace, rook_cli, monkeypatch):
    """A Basic credential in env (the base64 of user:password, as rook profile add
    moves a URL's password there) was redacted only as base64: an agent
    echoing what it stands for showed 'bob:pw12345secret' and the password in
    the clear, though rook profile add's own test of it redacts both."""
    import base64

    monkeypatch.setenv("DESK_BASIC_AUTH", base64.b64encode(b"bob:pw12345secret").decode())
    ws = rook_workspace
    ws.script("basic.sh", BASIC_DECODER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/basic.sh"},
                "env": [{"variable": "DESK_BASIC_AUTH", "purpose": "base64 of user:password"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "sent"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "sent [redacted:DESK_BASIC_AUTH]"
    text = r.stdout + r.stderr + ws.all_run_text(r.report["run"]["id"])
    assert "pw12345secret" not in text and "with password [redacted:DESK_BASIC_AUTH]" in text


def test_rook_report_redacts_the_path_it_says_it_wrote(tmp_path, monkeypatch, rook_cli):
    """rook report ID --report html:DIR/out.html, DIR holding an env value, said
    'wrote html report to /path/ws-SECRET/out.html' in the clear, the table of
    the same command redacting it."""
    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    run_id = rook_cli("run", "-w", str(ws.root), "--json").report["run"]["id"]
    out = ws.root / "out.html"
    r = rook_cli("report", run_id, "-w", str(ws.root), f"--report=html:{out}")
    assert r.exit_code == 0 and out.is_file(), r.stderr
    assert "wrote html report to " in r.stderr and "ws-[redacted:API_TOKEN]/out.html" in r.stderr
    assert_clean(r.stdout + r.stderr, "rook report's messages")


def test_a_run_or_profile_not_found_redacts_a_workspace_holding_a_secret(tmp_path, monkeypatch):
    """rook run --run nosuch, rook report nosuch, rook runs show nosuch, rook diff
    A B, rook merge --run nosuch and a --profile that names no profile said 'no
    such run in /path/ws-SECRET/...' in the clear: no profile, so no redactor,
    was loaded yet. The agent's profiles are found, and their env values are
    redacted, as in what the same commands say once a run is found; a run id
    named stays whole (a PIN of the year is in it)."""
    import subprocess
    import sys
    import time

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("DESK_PIN", time.strftime("%Y"))
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"},
                        {"variable": "DESK_PIN", "purpose": "desk PIN"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})

    def rook(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rook_core", *argv, "-w", str(ws.root)],
                              capture_output=True, text=True, timeout=120)

    first = rook("run", "-q", "--json")
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["run"]["id"]
    for argv, said in ((["run", "--run", "nosuch"], "--run nosuch: no such run in "),
                       (["report", "nosuch"], "run nosuch: no such run in "),
                       (["runs", "show", "nosuch"], "run nosuch: no such run in "),
                       (["diff", "latest", "nosuch"], "run nosuch: no such run in "),
                       (["merge", "--run", "nosuch"], "--run nosuch: no such run in "),
                       (["run", "--profile", "nosuch"], "profile 'nosuch' not found in "),
                       (["runs", "--profile", "nosuch"], "profile 'nosuch' not found in ")):
        r = rook(*argv)
        assert r.returncode == 2 and said in r.stderr, (argv, r.stderr)
        assert "ws-[redacted:API_TOKEN]/.testmuai" in r.stderr, (argv, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {argv}")
        assert "run" not in said or f"latest is {run_id})" in r.stderr, (argv, r.stderr)


def test_profile_commands_redact_the_env_values_of_the_agent_s_other_profiles(
    tmp_path, monkeypatch
):
    """rook profile add next to a profile whose env holds API_TOKEN said 'wrote
    /path/ws-SECRET/.../x.yaml' and echoed a command holding the value in the
    clear: its redactor knew only the secrets of the source it read. rook
    profile show, use and rename of a profile not found named the folder in the
    clear too (rook profile test redacted it)."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})

    def rook(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rook_core", *argv, "-w", str(ws.root)],
                              capture_output=True, text=True, timeout=120)

    # a command holding the value is refused (it would reach the script), redacted
    r = rook("profile", "add", "x", "--command", f"/bin/echo {SECRET}", "--no-test")
    assert r.returncode == 2 and "value of API_TOKEN" in r.stderr, r.stdout + r.stderr
    assert_clean(r.stdout + r.stderr, "rook profile add's refusal")
    r = rook("profile", "add", "x", "--command", "/bin/echo hi", "--no-test")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wrote " in r.stdout and "ws-[redacted:API_TOKEN]/.testmuai" in r.stdout, r.stdout
    assert_clean(r.stdout + r.stderr, "rook profile add's messages")
    for argv in (["show", "nosuch"], ["use", "nosuch"], ["rename", "nosuch", "other"]):
        r = rook("profile", *argv)
        assert r.returncode == 2 and "profile 'nosuch' not found in " in r.stderr, r.stderr
        assert "ws-[redacted:API_TOKEN]/.testmuai" in r.stderr, (argv, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook profile {argv[0]}'s message")


JUDGE = r"""
#!/bin/bash
cat >/dev/null
echo "judge sees $JUDGE_KEY" >&2
[ "$1" = execute ] && echo "{\"output\": {\"pass\": true, \"reason\": \"key $JUDGE_KEY\", \"score\": 1}}"
exit 0
"""


def test_a_judge_profile_s_secret_is_redacted_when_the_run_is_shown_again(tmp_path, monkeypatch):
    """rook run of a run judged by a judge profile whose env holds JUDGE_KEY
    redacted its value ('run ID: /path/ws-[redacted:JUDGE_KEY]/...'), but rook
    runs show, rook report and rook runs show --json of that run showed the
    folder in the clear: they redacted only the env of the run's profile copy."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    judge_key = "jk-9Secret-judge-44"
    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("JUDGE_KEY", judge_key)
    ws = Workspace(tmp_path / f"ws-{judge_key}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.script("judge.sh", JUDGE)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.profile({"id": "grader", "hooks": {"execute": "scripts/judge.sh"},
                "env": [{"variable": "JUDGE_KEY", "purpose": "judge model key"}]}, active=False)
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"rubric": "says hi"}]})
    (ws.root / ".testmuai" / "rook" / "config.yaml").write_text("judge_profile: grader\n")

    def rook(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rook_core", *argv, "-w", str(ws.root)],
                              capture_output=True, text=True, timeout=120)

    first = rook("run")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "ws-[redacted:JUDGE_KEY]/.testmuai" in first.stdout and judge_key not in first.stdout
    out = ws.root / "out.html"
    for argv in (["runs", "show", "latest"], ["report", "latest"], ["runs", "show", "latest", "--json"],
                 ["report", "latest", f"--report=html:{out}"]):
        r = rook(*argv)
        assert r.returncode == 0, (argv, r.stderr)
        assert "ws-[redacted:JUDGE_KEY]/" in r.stdout + r.stderr, (argv, r.stdout, r.stderr)
        assert judge_key not in r.stdout + r.stderr, (argv, r.stdout, r.stderr)
    assert judge_key not in out.read_text() + all_text(ws.runs_dir)


def test_a_flag_checked_before_the_agent_is_found_is_redacted(tmp_path, monkeypatch):
    """rook run, rook report and rook merge check --report FORMAT:PATH (and rook
    run --phases) before they find the agent, so a refusal showed the value as
    typed, 'ws-SECRET/afile is not a directory' in the clear: no redactor yet.
    They now redact it with the agent's profiles when the agent is found."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    (ws.root / "afile").write_text("")

    def rook(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rook_core", *argv, "-w", str(ws.root)],
                              capture_output=True, text=True, timeout=120)

    assert rook("run", "-q").returncode == 0
    target = f"--report=junit:{ws.root}/afile/x.xml"
    for argv, said in ((["run", target], "afile is not a directory"),
                       (["report", "latest", target], "afile is not a directory"),
                       (["merge", "--run", "latest", target], "afile is not a directory"),
                       (["run", "--phases", f"prepare,{SECRET}"], "--phases: unknown phase")):
        r = rook(*argv)
        assert r.returncode == 2 and said in r.stderr, (argv, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {' '.join(argv[:2])}")
        assert "[redacted:API_TOKEN]" in r.stderr, (argv, r.stderr)
    out = ws.root / "out.json"  # --json and a --report to the file standard output goes to
    for argv in (["run"], ["report", "latest"]):
        with out.open("w") as stdout:
            r = subprocess.run([sys.executable, "-m", "rook_core", *argv, "--json",
                                f"--report=json:{out}", "-w", str(ws.root)],
                               stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)
        assert r.returncode == 2 and "that is standard output" in r.stderr, (argv, r.stderr)
        assert_clean(r.stderr, f"rook {argv[0]} --json")
        assert "ws-[redacted:API_TOKEN]/out.json" in r.stderr, (argv, r.stderr)


def test_rook_merge_refusing_a_run_redacts_its_folder(tmp_path, monkeypatch):
    """rook merge of a run that was not sharded (given as --run ID or as its
    directory) said '/path/ws-SECRET/.../runs/ID: run ID was not sharded' in the
    clear: rook merge made its redactor only after merging."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})

    def rook(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rook_core", *argv],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)

    first = rook("run", "--json", "-w", str(ws.root))
    assert first.returncode == 0, first.stderr
    run_dir = ws.runs_dir / json.loads(first.stdout)["run"]["id"]
    for argv in (["merge", "--run", "latest", "-w", str(ws.root)],
                 ["merge", str(run_dir), "--into", str(tmp_path / "merged")]):
        r = rook(*argv)
        assert r.returncode == 2 and "was not sharded; nothing to merge" in r.stderr, r.stderr
        assert "ws-[redacted:API_TOKEN]/.testmuai" in r.stderr, (argv, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {' '.join(argv[:2])}")
    # a directory that holds no run, in the workspace: the agent's profiles say what is secret
    (ws.root / "notarun").mkdir()
    r = rook("merge", str(ws.root / "notarun"), "-w", str(ws.root))
    assert r.returncode == 2 and "not a Rook run directory" in r.stderr, r.stderr
    assert "ws-[redacted:API_TOKEN]/notarun" in r.stderr, r.stderr


def _judged_workspace(tmp_path, monkeypatch, judge_hook: str):
    """A workspace whose path holds the judge profile's key (grader, not active,
    its execute hook ``judge_hook``) beside the agent's profile p, and one
    rubric scenario."""
    from rook_core.testing import Workspace

    judge_key = "jk-9Secret-judge-44"
    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("JUDGE_KEY", judge_key)
    ws = Workspace(tmp_path / f"ws-{judge_key}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.profile({"id": "grader", "hooks": {"execute": judge_hook},
                "env": [{"variable": "JUDGE_KEY", "purpose": "judge model key"}]}, active=False)
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"rubric": "says hi"}]})
    return ws, judge_key


def test_a_judge_profile_refused_for_its_hook_redacts_its_own_secret(tmp_path, monkeypatch):
    """rook run with a judge profile whose hook script is missing said 'hook
    script ... not found; tried /path/ws-JUDGE_SECRET/scripts/...' in the clear
    (rook doctor of the same workspace redacts it): the judge profile's env
    was added to the run's redactor only after its hooks were resolved."""
    import subprocess
    import sys

    ws, judge_key = _judged_workspace(tmp_path, monkeypatch, "scripts/missing.sh")
    r = subprocess.run([sys.executable, "-m", "rook_core", "run", "--judge-profile", "grader",
                        "-w", str(ws.root)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "hook script 'scripts/missing.sh' not found" in r.stderr, r.stderr
    assert "ws-[redacted:JUDGE_KEY]/scripts/missing.sh" in r.stderr, r.stderr
    assert judge_key not in r.stdout + r.stderr
    assert not any(ws.runs_dir.iterdir())


def test_a_judge_profile_not_found_redacts_the_secrets_of_the_agent_s_profiles(
    tmp_path, monkeypatch
):
    """rook run --judge-profile nosuch named the profiles folder in the clear
    when it held the env value of another profile of the agent (the judge
    meant, say), though rook run --profile nosuch redacts it: only the run
    profile's env was redacted."""
    import subprocess
    import sys

    ws, judge_key = _judged_workspace(tmp_path, monkeypatch, "scripts/echo.sh")
    r = subprocess.run([sys.executable, "-m", "rook_core", "run", "--judge-profile", "nosuch",
                        "-w", str(ws.root)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "judge profile 'nosuch': profile 'nosuch' not found" in r.stderr
    assert "ws-[redacted:JUDGE_KEY]/.testmuai" in r.stderr, r.stderr
    assert judge_key not in r.stdout + r.stderr


@pytest.mark.parametrize("args", [["--phases", "prepare,open,execute"], ["--only", "plain"]])
def test_a_run_that_does_not_judge_redacts_the_judge_profile_s_secret(
    tmp_path, monkeypatch, args
):
    """rook run --phases prepare,open,execute, and a run of scenarios with no
    rubric, with the judge profile named in config.yaml wrote the judge
    profile's env value in the clear into the record (an agent that echoes its
    environment), and the terminal showed it: only a run that judges with it
    loaded the judge profile, so only it redacted it."""
    import subprocess
    import sys

    ws, judge_key = _judged_workspace(tmp_path, monkeypatch, "scripts/echo.sh")
    ws.script("leak.sh", '#!/bin/bash\ncat >/dev/null\necho "key $JUDGE_KEY" >&2\n'
              'echo "{\\"output\\": \\"hi $JUDGE_KEY\\"}"\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/leak.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "plain", "goal": "hi", "criteria": [{"contains": "hi"}]})
    (ws.root / ".testmuai" / "rook" / "config.yaml").write_text("judge_profile: grader\n")
    r = subprocess.run([sys.executable, "-m", "rook_core", "run", "--json", *args,
                        "-w", str(ws.root)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert judge_key not in r.stdout + r.stderr
    run_id = json.loads(r.stdout)["run"]["id"]
    text = ws.all_run_text(run_id)
    assert "key [redacted:JUDGE_KEY]" in text
    assert judge_key not in text


def test_a_profile_that_is_not_yaml_still_has_its_env_values_redacted(tmp_path, monkeypatch):
    """A profile file that is not valid YAML (a brace left open) declared no
    variable: rook profile list, rook profile show, rook run --profile and
    rook doctor named its file, in a workspace folder holding the value of
    the variable it declares, in the clear; the same file with the brace
    closed has it redacted. The names it declares are read from its text."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    key = "tok3n-notyaml-99"
    monkeypatch.setenv("WEB_KEY", key)
    ws = Workspace(tmp_path / f"ws-{key}")
    ws.profile("id: web\nhooks:\n  execute: {http: {url: 'http://127.0.0.1:1/x'}\n"
               "env:\n  - variable: WEB_KEY\n    purpose: key\n", name="web")
    for args in (["profile", "list"], ["profile", "show", "web"], ["run", "--profile", "web"],
                 ["doctor"]):
        r = subprocess.run([sys.executable, "-m", "rook_core", *args, "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=120)
        assert "not valid YAML" in r.stdout + r.stderr, (args, r.stdout, r.stderr)
        assert key not in r.stdout + r.stderr, (args, r.stdout, r.stderr)
        assert "ws-[redacted:WEB_KEY]" in r.stdout + r.stderr, (args, r.stdout, r.stderr)


def test_rook_runs_saying_there_is_no_run_redacts_the_folder(tmp_path, monkeypatch):
    """rook runs of an agent with no run said 'no runs yet in DIR', and rook
    runs --profile NAME of a profile no run was made with 'no runs made with
    profile NAME in DIR', with DIR in the clear when a workspace folder held
    the value of one of the agent's env variables, though rook runs show
    latest of the same agent redacts it: the listing's lines passed no redactor."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.profile({"id": "q", "hooks": {"execute": "scripts/echo.sh"}}, active=False)
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})

    def rook(*args):
        r = subprocess.run([sys.executable, "-m", "rook_core", *args, "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=120)
        assert SECRET not in r.stdout + r.stderr, (args, r.stdout, r.stderr)
        return r

    assert "ws-[redacted:API_TOKEN]/" in rook("runs").stdout
    assert rook("run").returncode == 0
    none = rook("runs", "--profile", "q").stdout
    assert "no runs made with profile q in " in none and "ws-[redacted:API_TOKEN]/" in none, none


def test_a_merged_run_json_names_its_folders_redacted(tmp_path, monkeypatch):
    """rook merge wrote the merged run.json with its dir and merged.sources in
    the clear, a workspace folder holding an env value included, while every
    shard's part, its report and what rook run writes for an unsharded run
    redact it: the merged manifest was written without the redactor."""
    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "hi"}]})
    run_two_shards_and_merge(ws, "sh")
    manifest = json.loads((ws.runs_dir / "sh" / "run.json").read_text())
    assert manifest["merged"]["shards"] == ["1/2", "2/2"]
    assert manifest["id"] == "sh" and manifest["dir"].endswith("/runs/sh"), manifest["dir"]
    assert "ws-[redacted:API_TOKEN]/" in manifest["dir"]
    assert SECRET not in ws.all_run_text("sh")


HTML_ESCAPER = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
amp = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
php = amp.replace('"', "&quot;").replace("'", "&#039;")  # PHP 8.1 htmlspecialchars
commons = amp.replace('"', "&quot;")  # Apache Commons escapeHtml4: ' as it is
numeric = amp.replace('"', "&#x22;").replace("'", "&#x27;").replace("&amp;", "&#38;")
sys.stderr.write(f"<b>{commons}</b>\n")
print(json.dumps({"output": f"<p>{php}</p>", "page": f"<i>{numeric}</i>"}))
"""


def test_a_secret_escaped_for_html_by_any_library_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A secret holding HTML's special characters was redacted only as Python's
    html.escape, markupsafe and XML attributes escape it: as PHP's
    htmlspecialchars (' as &#039;), Apache Commons' escapeHtml4 (' as it is)
    or with numeric entities it reached the record, the report and the
    terminal whole; and in the raw standard output a record keeps, the JSON
    string holding such HTML (a backslash in it doubled) also once found.
    Each such character is now found in any of its forms."""
    secret = "pw<a>&\"b'c\\d-Zq9"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("html.py", HTML_ESCAPER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/html.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "<p>"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "<p>[redacted:API_TOKEN]</p>", turn
    assert turn["evidence"]["page"] == "<i>[redacted:API_TOKEN]</i>", turn
    text = ws.all_run_text(r.report["run"]["id"]) + r.stdout + r.stderr
    assert "<b>[redacted:API_TOKEN]</b>" in text
    for piece in ("&#039;c", "\\\"b'c", "&quot;b'c", "&#x27;c", "d-Zq9"):
        assert piece not in text, piece
    hook = ws.record(r.report["run"]["id"], "s.1")["hooks"][-1]
    assert hook["stdout"].startswith('{"output": "<p>[redacted:API_TOKEN]</p>"'), hook["stdout"]


QUOTE_DOUBLER = r"""
#!/usr/bin/env python3
import csv, json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
sys.stderr.write("config:\n  password: '" + s.replace("'", "''") + "'\n")  # YAML, as yaml.dump
csv.writer(sys.stderr).writerow(["login", s])  # CSV: a double quote doubled
print(json.dumps({"output": "SELECT 1 WHERE pw = '" + s.replace("'", "''") + "'"}))  # SQL
"""


def test_a_secret_quoted_by_doubling_its_quotes_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A secret holding a quote was redacted as a shell, Python and JSON quote
    it, but not where the quote is doubled: YAML's single-quoted style (what
    yaml.dump writes for '@pw''q...'), a CSV field ("" for ") and an SQL string
    literal kept it whole in the record, the report and the terminal."""
    secret = "@pw'q\"x-Zq9#1"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("quoted.py", QUOTE_DOUBLER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/quoted.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "SELECT"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "SELECT 1 WHERE pw = '[redacted:API_TOKEN]'"
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][-1]["stderr"]
    assert "password: '[redacted:API_TOKEN]'" in stderr and 'login,"[redacted:API_TOKEN]"' in stderr
    assert "x-Zq9" not in ws.all_run_text(r.report["run"]["id"]) + r.stdout + r.stderr


BASH_QUOTER = r"""
#!/bin/bash
cat >/dev/null
printf 'running: curl -H %q\n' "X-Key: $API_TOKEN" >&2
declare -p API_TOKEN >&2
printf %q "$API_TOKEN" >&2
echo '{"output": "ok"}'
"""


def test_a_secret_quoted_by_bash_with_backslashes_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A secret holding characters a shell treats specially was redacted as
    bash's set -x and ${v@Q} quote it, but not as printf %q (a backslash before
    each such character, how a script logs the command it runs) or declare -p
    (a double-quoted string: \\" \\\\ \\$) write it: the record, the report and
    the terminal kept it whole."""
    secret = "pw\"x'y$z&q(1)-Zq9"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("quoter.sh", BASH_QUOTER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/quoter.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][-1]["stderr"]
    assert "X-Key:\\ [redacted:API_TOKEN]" in stderr and stderr.endswith("\n[redacted:API_TOKEN]")
    assert 'API_TOKEN="[redacted:API_TOKEN]"' in stderr, stderr
    assert "Zq9" not in ws.all_run_text(r.report["run"]["id"]) + r.stdout + r.stderr


def test_a_run_not_judged_yet_is_shown_with_the_judge_profile_s_secret_redacted(
    tmp_path, monkeypatch
):
    """rook runs show and rook report of a run split before its judge phase
    (rook run --phases prepare,open,execute, the judge profile named in
    config.yaml) named the run's folder in the clear when it held the judge
    profile's env value, though the run itself redacted it: they read the
    judge profile run.json names, and a run not judged yet names none."""
    import subprocess
    import sys

    ws, judge_key = _judged_workspace(tmp_path, monkeypatch, "scripts/echo.sh")
    (ws.root / ".testmuai" / "rook" / "config.yaml").write_text("judge_profile: grader\n")

    def rook(*args):
        r = subprocess.run([sys.executable, "-m", "rook_core", *args, "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=120)
        assert judge_key not in r.stdout + r.stderr, (args, r.stdout, r.stderr)
        return r

    assert rook("run", "--phases", "prepare,open,execute").returncode == 0
    for args in (["runs", "show", "latest"], ["report", "latest"]):
        r = rook(*args)
        assert r.returncode == 0, (args, r.stderr)
        assert "ws-[redacted:JUDGE_KEY]/" in r.stdout + r.stderr, (args, r.stdout, r.stderr)


PEM = ("-----BEGIN PRIVATE KEY-----\n"
       "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7abcdEFGH\n"
       "Qm9va1NlY3JldExpbmVUd29Gb3JUZXN0aW5nUGVtS2V5c0hlcmUxMjM0NTY3\n"
       "Zz9XY2l0aEFub3RoZXJMaW5lT2ZLZXlNYXRlcmlhbA==\n"
       "-----END PRIVATE KEY-----")

# each logs the key line by line with a prefix, prints it with CRLF line
# endings, and returns it in its JSON output with \r\n escapes

def _key_run(ws, rook_cli, hook, script, variable, contains, table=True):
    """One scenario run through the hook ``hook`` (its text ``script``), the
    profile declaring ``variable``: the JSON run, its hook's standard error as
    recorded, and all Rook wrote (the runs' files, what both runs printed)."""
    ws.script(hook, script)
    ws.profile({"id": "p", "hooks": {"execute": f"scripts/{hook}"},
                "env": [{"variable": variable, "purpose": "a key"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": contains}]})
    r = rook_cli("run", "--json")
    printed = r.stdout + r.stderr
    if table:
        t = rook_cli("run")
        printed += t.stdout + t.stderr
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][-1]["stderr"]
    return r, stderr, all_text(ws.runs_dir) + printed


def _no_line_of_the_key(text):
    for line in PEM.splitlines()[1:-1]:
        assert line[:12] not in text, line


LINE_LOGGERS = {
    "logger.sh": r"""
#!/bin/bash
cat >/dev/null
while read -r l; do echo "log: $l"; done <<<"$PEM" >&2
printf '%s' "$PEM" | sed 's/$/\r/' >&2
crlf=$(printf '%s' "$PEM" | sed 's/$/\\r\\n/' | tr -d '\n')
echo "{\"output\": \"key: ${crlf%\\r\\n}\"}"
""",
    "logger.py": r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
pem = os.environ["PEM"]
for line in pem.splitlines():
    print("log:", line, file=sys.stderr)
print(pem.replace("\n", "\r\n"), file=sys.stderr)
print(json.dumps({"output": "key: " + pem.replace("\n", "\r\n")}))
""",
    "logger.js": r"""
#!/usr/bin/env node
const pem = process.env.PEM;
for (const line of pem.split("\n")) console.error("log: " + line);
console.error(pem.replace(/\n/g, "\r\n"));
console.log(JSON.stringify({output: "key: " + pem.replace(/\n/g, "\r\n")}));
""",
}


@pytest.mark.parametrize("hook", sorted(LINE_LOGGERS))
def test_a_multi_line_secret_logged_line_by_line_or_with_crlf_is_redacted(
    rook_workspace, rook_cli, monkeypatch, hook
):
    """A private key in env was redacted only where it appeared whole, with
    the line endings it was set with: a hook logging it line by line with a
    prefix, or printing it with CRLF line endings (raw, or \\r\\n in its JSON
    output), put its lines in the record, the report and the terminal."""
    import shutil

    if hook.endswith(".js") and not shutil.which("node"):
        pytest.skip("node is not installed")
    monkeypatch.setenv("PEM", PEM)
    r, stderr, text = _key_run(rook_workspace, rook_cli, hook, LINE_LOGGERS[hook], "PEM", "nothing like it")
    assert r.statuses() == {"s": "failed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "key: [redacted:PEM]"
    # the header and footer alone are ordinary text, kept; each line of the key is not
    assert stderr.startswith("log: -----BEGIN PRIVATE KEY-----\n" + "log: [redacted:PEM]\n" * 3), stderr
    assert "log: -----END PRIVATE KEY-----\n[redacted:PEM]" in stderr, stderr
    _no_line_of_the_key(text)


KUBE_LOGGER = r"""
#!/bin/bash
cat >/dev/null
while IFS= read -r l; do echo "config: $l"; done <<<"$KUBE_CONFIG" >&2
echo '{"output": "users: 2 found\n-----BEGIN CERTIFICATE-----\n}"}'
"""


def test_a_multi_line_secret_s_ordinary_lines_are_not_redacted_alone(rook_workspace, rook_cli, monkeypatch):
    """Each line of a kubeconfig in env is redacted where a hook logs it alone,
    but not the lines every such file holds (a key opening a block, a
    certificate's header, punctuation): they would mangle ordinary text."""
    kube = ("apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.1.2.3:6443\n  name: prod\n"
            "users:\n- name: admin\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=\n}\n")
    monkeypatch.setenv("KUBE_CONFIG", kube)
    ws = rook_workspace
    ws.script("kube.sh", KUBE_LOGGER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/kube.sh"},
                "env": [{"variable": "KUBE_CONFIG", "purpose": "cluster access"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "users: 2"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "users: 2 found\n-----BEGIN CERTIFICATE-----\n}"
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][-1]["stderr"]
    assert "config:     [redacted:KUBE_CONFIG]\n" in stderr and "config: users:\n" in stderr, stderr
    assert "LS0tLS1CRUdJTi" not in all_text(ws.runs_dir) + r.stdout + r.stderr


def test_rook_init_redacts_a_workspace_holding_a_secret(tmp_path, monkeypatch):
    """rook init in a workspace whose folder holds an env value of a profile
    there said 'created /path/ws-SECRET/...' (or 'exists already: ...', and
    'rook run -w /path/ws-SECRET' for --example) in the clear, though every
    other command redacts it: it loaded no profile. It now redacts the env
    values of every profile in the workspace, the new agent's being none."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    for argv, said in ((["--project", "proj", "--agent", "agent"], "exists already: "),
                       (["--project", "p2", "--agent", "a2"], "created "),
                       (["--project", "p2", "--agent", "a3", "--example"], "rook run -w ")):
        r = subprocess.run([sys.executable, "-m", "rook_core", "init", *argv, "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert r.returncode == 0, (argv, r.stderr)
        assert said in r.stdout and "ws-[redacted:API_TOKEN]" in r.stdout, (argv, r.stdout)
        assert_clean(r.stdout + r.stderr, f"rook init {' '.join(argv)}")


@pytest.mark.parametrize("flag", ["--project", "--agent"])
def test_rook_init_refuses_a_project_or_agent_named_by_a_secret(rook_workspace, rook_cli, monkeypatch,
                                                                 flag):
    """rook init --project "$VALUE", VALUE the value of an env variable a profile
    of the workspace declares, made projects/VALUE/ on disk (a secret in a folder
    name, which every later command shows redacted, so it names no folder) and
    said 'created .../[redacted:API_TOKEN]/...'. It is refused as --run-name is,
    exit 2, nothing made; a value init cannot know (no profile declares it) it
    cannot refuse."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    names = {"--project": "p2", "--agent": "a2", flag: SECRET}
    argv = ["init", "-w", str(ws.root), *(a for k, v in names.items() for a in (k, v))]
    before = sorted(ws.root.rglob("*"))
    r = rook_cli(*argv)
    assert r.exit_code == 2 and r.exception is None, (r.exit_code, r.stdout, r.stderr)
    assert r.stderr == (
        f"rook: error: {flag} [redacted:API_TOKEN]: holds the value of a profile env variable; "
        f"a{'n agent' if flag == '--agent' else ' project'}'s name is its folder's name and every "
        "command shows it, so it is never redacted: choose another name\n"
    ), r.stderr
    assert sorted(ws.root.rglob("*")) == before, "nothing made"
    assert_clean(r.stdout + r.stderr, "rook init")
    monkeypatch.delenv("API_TOKEN")  # not set: init cannot know it, as rook run cannot
    assert rook_cli(*argv).exit_code == 0


SERVICE_ACCOUNT = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
key = json.loads(os.environ["GCP_KEY"])["private_key"]  # what a client library signs with
print("loaded key:\n" + key, file=sys.stderr)
print(json.dumps({"output": "signed with " + key.splitlines()[1]}))
"""


def test_the_private_key_inside_a_service_account_s_json_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A service account's JSON key in env holds its private key as a JSON
    string (\\n escapes): a hook that read the key out of it and printed it,
    with real line breaks, put it in the record, the report and the terminal,
    only the JSON text being known."""
    pem = PEM + "\n"
    key = {"type": "service_account", "project_id": "demo", "private_key": pem,
           "client_email": "bot@demo.iam.gserviceaccount.com"}
    monkeypatch.setenv("GCP_KEY", json.dumps(key, indent=2))
    r, stderr, text = _key_run(rook_workspace, rook_cli, "sa.py", SERVICE_ACCOUNT, "GCP_KEY", "signed")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "signed with [redacted:GCP_KEY]"
    assert stderr.startswith("loaded key:\n[redacted:GCP_KEY]"), stderr
    _no_line_of_the_key(text)


UNESCAPES = r"""
#!/usr/bin/env node
const key = process.env.PEM.replace(/\\n/g, "\n");  // a key kept in one line, \n for each line break
console.error("using key:\n" + key);
console.log(JSON.stringify({output: "signed with " + key.split("\n")[2]}));
"""


def test_a_private_key_kept_with_backslash_n_for_its_line_breaks_is_redacted(
    rook_workspace, rook_cli, monkeypatch
):
    """A private key is often kept in CI as one line, with \\n (a backslash and
    an n) for each line break; the program turns them back into line breaks
    before use. A hook that printed the key so put its lines in the record,
    the report and the terminal: only the one-line text was known."""
    import shutil

    if not shutil.which("node"):
        pytest.skip("node is not installed")
    monkeypatch.setenv("PEM", PEM.replace("\n", "\\n") + "\\n")
    r, stderr, text = _key_run(rook_workspace, rook_cli, "unescapes.js", UNESCAPES, "PEM", "signed")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "signed with [redacted:PEM]"
    assert stderr.startswith("using key:\n[redacted:PEM]"), stderr
    _no_line_of_the_key(text)


DECODES = r"""
#!/bin/bash
cat >/dev/null
printf '%s' "$SSH_KEY_B64" | base64 -d > id_key
echo "wrote id_key:" >&2
cat id_key >&2
echo "{\"output\": \"key $(sed -n 2p id_key)\"}"
"""


def test_a_multi_line_secret_kept_base64_encoded_is_redacted_decoded(rook_workspace, rook_cli, monkeypatch):
    """An SSH or TLS key is often kept in CI base64-encoded (one line, no line
    breaks to lose); the job decodes it before use. A hook that decoded it and
    printed the key put it in the record, the report and the terminal: only
    its base64 was known."""
    import base64

    monkeypatch.setenv("SSH_KEY_B64", base64.b64encode((PEM + "\n").encode()).decode())
    r, stderr, text = _key_run(rook_workspace, rook_cli, "decodes.sh", DECODES, "SSH_KEY_B64", "key")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "key [redacted:SSH_KEY_B64]"
    assert stderr.rstrip("\n") == "wrote id_key:\n[redacted:SSH_KEY_B64]", stderr
    _no_line_of_the_key(text)


KUBE_KEY = r"""
#!/bin/bash
cat >/dev/null
sed -n 's/^ *client-key-data: //p' <<<"$KUBE_CONFIG" | base64 -d > client.key
echo "client key:" >&2
cat client.key >&2
echo '{"output": "ok"}'
"""


def test_a_key_held_base64_encoded_in_a_kubeconfig_is_redacted_decoded(rook_workspace, rook_cli, monkeypatch):
    """A kubeconfig holds its client key as base64 (client-key-data): a hook
    that decoded it (as kubectl does) and printed the key put it in the
    record and the terminal; only the kubeconfig's own lines were known."""
    import base64

    data = base64.b64encode((PEM + "\n").encode()).decode()
    kube = f"apiVersion: v1\nusers:\n- name: admin\n  user:\n    client-key-data: {data}\n"
    monkeypatch.setenv("KUBE_CONFIG", kube)
    r, stderr, text = _key_run(rook_workspace, rook_cli, "kubekey.sh", KUBE_KEY, "KUBE_CONFIG", "ok", table=False)
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert stderr.rstrip("\n") == "client key:\n[redacted:KUBE_CONFIG]", stderr
    _no_line_of_the_key(text)


def test_a_flag_value_click_refuses_is_redacted(tmp_path, monkeypatch):
    """A value Click itself refuses (not an integer, not a command) was echoed
    in the clear: 'rook run -j "$API_TOKEN"' said "'SECRET' is not a valid
    integer range", as did 'rook SECRET' ("No such command"): Click says it
    before any command has a redactor. Now the values of every profile of the
    workspace (found from --workspace as typed, else from the current folder)
    are redacted from it. So are the two refusals said before any command runs
    (an option of rook itself, an argument that is not UTF-8)."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / "ws")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})

    def rook(*argv: str | bytes, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rook_core", *argv], cwd=cwd,
                              capture_output=True, text=True, timeout=120)

    for argv, cwd, said in ((["run", "-j", SECRET, "-w", str(ws.root)], tmp_path, "not a valid"),
                            (["run", f"--workspace={ws.root}", "-j", SECRET], tmp_path, "not a valid"),
                            (["run", "--concurrency", f"x{SECRET}"], ws.root, "not a valid"),
                            ([SECRET], ws.agent_dir / "profiles", ": no such command"),
                            # said before any command runs: an option of rook itself, and
                            # an argument that is not UTF-8 (they were in the clear)
                            ([f"--{SECRET}"], ws.root, ": no such option"),
                            (["run", "--only", b"\xff" + SECRET.encode()], ws.root,
                             "is not UTF-8 text"),
                            (["run", "-w", str(ws.root), "--goal", b"\xff" + SECRET.encode()],
                             ws.root, "is not UTF-8 text")):
        r = rook(*argv, cwd=cwd)
        assert r.returncode == 2 and said in r.stderr, (argv, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {argv}")
        assert "[redacted:API_TOKEN]" in r.stderr, (argv, r.stderr)


def test_the_ruhroh_manifest_redacts_every_secret_the_run_redacts(tmp_path, monkeypatch):
    """The Ruhroh manifest made its own redactor of the run profile's env values
    alone, so what the rest of the run redacts with the run's redactor (the
    judge profile's env values too) was written in the clear there: its
    runRoot (a workspace folder holding the judge's key) and an environment
    fallback (RUHROH_AGENT_PROVIDER naming a proxy URL with the key in it).
    It now redacts with the run's own redactor."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    judge_key = "jk-9Secret-judge-44"
    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("JUDGE_KEY", judge_key)
    monkeypatch.setenv("RUHROH_AGENT_PROVIDER", f"https://proxy.example/v1?key={judge_key}")
    ws = Workspace(tmp_path / f"ws-{judge_key}")
    ws.script("wrapper.sh", WRAPPER)
    ws.script("judge.sh", JUDGE)
    ws.profile({"id": "r", "hooks": {"execute": {"ruhroh": {"command": "scripts/wrapper.sh"}}},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"},
                        {"variable": "DB_PASSWORD", "purpose": "fixture database"}]})
    monkeypatch.setenv("DB_PASSWORD", OTHER)
    ws.profile({"id": "grader", "hooks": {"execute": "scripts/judge.sh"},
                "env": [{"variable": "JUDGE_KEY", "purpose": "judge model key"}]}, active=False)
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"rubric": "says done"}]})
    (ws.root / ".testmuai" / "rook" / "config.yaml").write_text("judge_profile: grader\n")

    r = subprocess.run([sys.executable, "-m", "rook_core", "run", "-w", str(ws.root)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = next(ws.runs_dir.glob("*/ruhroh-run-manifest.json")).read_text()
    assert judge_key not in manifest, manifest
    doc = json.loads(manifest)
    assert doc["runRoot"].startswith(str(tmp_path / "ws-[redacted:JUDGE_KEY]")), doc["runRoot"]
    assert doc["model"]["provider"] == "p"  # the result's, over the environment's
    assert doc["environment"]["RUHROH_AGENT_PROVIDER"].endswith("key=[redacted:JUDGE_KEY]"), doc
    assert judge_key not in all_text(ws.runs_dir)


def test_a_merged_ruhroh_manifest_names_its_folders_redacted(tmp_path, monkeypatch):
    """rook merge of a sharded Ruhroh run wrote the merged
    ruhroh-run-manifest.json with its runRoot and merged.from in the clear, a
    workspace folder holding an env value included, while each shard's
    manifest and the merged run.json redact it: merging passed no redactor."""
    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("DB_PASSWORD", OTHER)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.script("wrapper.sh", WRAPPER)
    ws.profile({"id": "r", "hooks": {"execute": {"ruhroh": {"command": "scripts/wrapper.sh"}}},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"},
                        {"variable": "DB_PASSWORD", "purpose": "fixture database"}]})
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "done"}]})
    run_two_shards_and_merge(ws, "sh")
    doc = json.loads((ws.runs_dir / "sh" / "ruhroh-run-manifest.json").read_text())
    assert doc["runId"] == "sh" and doc["merged"]["from"], doc
    assert "ws-[redacted:API_TOKEN]/" in doc["runRoot"], doc["runRoot"]
    assert SECRET not in ws.all_run_text("sh")


def test_commands_for_an_agent_with_no_profile_yet_redact_the_workspace_s_secrets(tmp_path, monkeypatch):
    """rook init of a second agent in a workspace whose folder holds an env
    value of the first agent's profile redacts it, but every command for the
    new agent (no profile yet) then named that folder in the clear ('DIR: no
    profiles', 'no runs yet in DIR', rook doctor's workspace): each redacted
    the env values of the agent's own profiles, none. An agent with no profile
    now redacts those of every agent of the workspace, as rook init does."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    Workspace(ws.root, "proj", "fresh")
    for argv, code, said in ((["run"], 2, "no profiles"), (["runs"], 0, "no runs yet in "),
                             (["runs", "show", "latest"], 2, "no run"),
                             (["doctor"], 1, "workspace: "), (["profile", "list"], 0, "no profiles in "),
                             (["profile", "show"], 2, "no profile")):
        r = subprocess.run([sys.executable, "-m", "rook_core", *argv, "--agent", "fresh", "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert r.returncode == code and said in r.stdout + r.stderr, (argv, r.returncode, r.stdout, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {argv}")
        assert "ws-[redacted:API_TOKEN]" in r.stdout + r.stderr, (argv, r.stdout, r.stderr)


def test_commands_for_an_agent_whose_profiles_declare_no_env_redact_the_workspace_s_secrets(
    tmp_path, monkeypatch
):
    """A second agent whose profiles declare no env, in a workspace whose
    folder holds the env value of the first agent's profile: rook run of it
    wrote the folder in the clear to its records, its report and the terminal,
    and so did rook runs show, rook report, rook profile show and test and
    rook doctor of it (only an agent with no profile at all redacted the
    workspace's secrets). Every command redacts them now."""
    import subprocess
    import sys

    from rook_core.testing import Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = Workspace(tmp_path / f"ws-{SECRET}")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    other = Workspace(ws.root, "proj", "other")
    other.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho "in $PWD" >&2\n'
                            'echo "{\\"output\\": \\"hi from $PWD\\"}"\n')
    other.profile({"id": "q", "hooks": {"execute": "scripts/echo.sh"}})
    other.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "nope"}]})
    for argv in (["run"], ["run", "--json"], ["runs"], ["runs", "show", "latest"],
                 ["runs", "show", "latest", "--json"], ["report", "latest", "--report", "html:-"],
                 ["report", "latest", "--rebuild"],
                 ["runs", "show", "nosuch"], ["profile", "show"], ["profile", "test"],
                 ["profile", "show", "nosuch"], ["doctor"]):
        r = subprocess.run([sys.executable, "-m", "rook_core", *argv, "--agent", "other", "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert r.returncode in (0, 1, 2) and "Traceback" not in r.stderr, (argv, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {argv}")
        assert argv == ["runs"] or "ws-[redacted:API_TOKEN]" in r.stdout + r.stderr, (argv, r.stdout)
    assert_clean(all_text(other.agent_dir), "the other agent's records")
    # the first agent's profile written as JSON (which is YAML): rook run finds its
    # variables as well (it scans the other profiles' text, "variable": "API_TOKEN")
    (ws.agent_dir / "profiles" / "p.yaml").write_text(json.dumps(
        {"id": "p", "hooks": {"execute": "scripts/echo.sh"},
         "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]}, indent=1))
    r = subprocess.run([sys.executable, "-m", "rook_core", "run", "--agent", "other", "-w", str(ws.root)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert_clean(r.stdout + r.stderr, "rook run beside a JSON profile")
    assert_clean(all_text(other.agent_dir), "the other agent's records beside a JSON profile")


def test_a_plugin_that_fails_to_load_never_shows_a_secret(rook_distribution, rook_workspace, rook_cli,
                                                          monkeypatch):
    """A plugin whose import fails saying an env value (a client that checks its
    key at import: '401 from https://api/v1?key=...') had it shown in the clear
    in rook run's warning and by rook plugins (its table and --json), which
    passed its error through no redactor; rook doctor redacts it. They now
    redact the env values of every profile of the workspace from it."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    rook_distribution("rook-badkey", {"badkey": "rook_badkey"}, {"rook_badkey.py": (
        "import os\nraise RuntimeError('401 from https://api.example/v1?key=' + os.environ['API_TOKEN'])\n")})
    ws = rook_workspace
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    monkeypatch.chdir(ws.root)
    for argv in (["run"], ["plugins"], ["plugins", "--json"], ["doctor"]):
        r = rook_cli(*argv)
        assert "badkey" in r.stdout + r.stderr, (argv, r.stdout, r.stderr)
        assert "key=[redacted:API_TOKEN]" in r.stdout + r.stderr, (argv, r.stdout, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {argv}")
    # index.md: a message listing what is installed ends with the failure, redacted too
    ws.profile({"id": "q", "hooks": {"execute": {"badkey": {"desk": "x"}}},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]}, active=False)
    for argv in (["profile", "test", "q"], ["run", "--profile", "q"]):
        r = rook_cli(*argv)
        assert r.exit_code == 2, (argv, r.stdout, r.stderr)
        assert "unknown transport key; installed transports: " in r.stderr, (argv, r.stderr)
        assert "(plugin badkey (rook-badkey) failed to load: RuntimeError: 401 from " in r.stderr
        assert "key=[redacted:API_TOKEN]" in r.stderr and SECRET not in r.stdout + r.stderr


WRAPPING = r"""
#!/usr/bin/env python3
import json, os, sys, textwrap
sys.stdin.read()
s = os.environ["API_TOKEN"]
# a console that folds a long word at its width (rich on a pipe: 80 columns; here 12),
# and a log handler that indents its continuation lines
print("Authorization: Bearer " + "\n".join(textwrap.wrap(s, 12, break_on_hyphens=False)), file=sys.stderr)
print(json.dumps({"output": "sent " + "\n    ".join(s[i:i + 10] for i in range(0, len(s), 10))}))
"""


def test_a_secret_a_console_wrapped_across_lines_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A long secret a console or log handler folded at its width (rich writing
    to a pipe folds at 80 columns; a handler indents the continuation lines)
    reached the record in pieces, one per line, each in the clear: only the
    value whole was looked for. The value with line breaks (and the white
    space around them) between its characters is now found, in the record's
    text and in the raw standard output, where the breaks are JSON escapes."""
    secret = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyb29rLWNpIn0.c2VjcmV0LXNpZ25hdHVyZQ"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("wrap.py", WRAPPING)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/wrap.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "sent"}]})
    r = rook_cli("run", "--run-name", "w")
    assert r.exit_code == 0, r.stdout + r.stderr
    text = ws.all_run_text("w")
    for width in (10, 12):
        for i in range(0, len(secret), width):
            assert secret[i:i + width] not in text, secret[i:i + width]
    assert "Bearer [redacted:API_TOKEN]" in text and "sent [redacted:API_TOKEN]" in text, text


def test_redactor_folds():
    from rook_core.redact import Redactor

    r = Redactor({"LONG": "abcdefgh12345678xyz", "PIN": "1234"})
    assert r.text("key: abcdefgh\n  12345678\r\nxyz!") == "key: [redacted:LONG]!"
    assert r.text('"abcdefgh1234\\n5678xyz"') == '"[redacted:LONG]"'  # the raw JSON a hook printed
    assert r.text("total 12\n34 items") == "total 12\n34 items"  # a short value is never joined
    apart = "abcdefgh\n\n12345678xyz"  # a blank line between: two paragraphs, no fold
    assert Redactor({"LONG": "abcdefgh12345678xyz"}).text(apart) == apart



def test_redactor_shows_a_value_two_variables_hold_by_the_first_s_name():
    """Since 656a2ce a run also redacts the env values of the workspace's other
    agents: one holding the run's own BASE_URL under another name
    (OPENAI_BASE_URL) turned '[redacted:BASE_URL]/api' into
    '[redacted:BASE_URL][redacted:OPENAI_BASE_URL]/api'. The first name added
    (the run's own profile's) is the one shown."""
    from rook_core.redact import Redactor

    url = "http://127.0.0.1:4000"
    r = Redactor({"BASE_URL": url, "OPENAI_BASE_URL": url})
    assert r.text(f"x {url}/api") == "x [redacted:BASE_URL]/api"
    r.add("THIRD_URL", url)
    assert r.text(f'"{url}/api"') == '"[redacted:BASE_URL]/api"'

def test_an_error_said_before_a_command_has_a_redactor_never_shows_a_secret(tmp_path, monkeypatch):
    """A plugin whose register hook raised saying an env value (a client that
    checks its key when it registers: '401 key=...') stopped rook run and
    rook plugins with 'plugin NAME raised RuntimeError in
    rook_register_criteria: 401 key=SECRET' in the clear: the plugins load
    before any command has a redactor, and the CLI's boundary redacted with
    none. An error said before a command activated a redactor is now redacted
    with the env values of every profile of the workspace."""
    import os
    import subprocess
    import sys

    from rook_core.testing import Workspace, make_distribution

    monkeypatch.setenv("API_TOKEN", SECRET)
    site = make_distribution(tmp_path / "site", "rook-regkey", {"regkey": "rook_regkey"}, {"rook_regkey.py": (
        "import os, pluggy\nhookimpl = pluggy.HookimplMarker('rook')\n@hookimpl\n"
        "def rook_register_criteria(register):\n"
        "    raise RuntimeError('401 key=' + os.environ['API_TOKEN'])\n")})
    ws = Workspace(tmp_path / "ws")
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "hi"}]})
    env = {**os.environ, "PYTHONPATH": str(site)}
    for argv, cwd in ((["run", "-w", str(ws.root)], tmp_path), (["plugins"], ws.root)):
        r = subprocess.run([sys.executable, "-m", "rook_core", *argv], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "rook_register_criteria" in r.stderr, (argv, r.stderr)
        assert "key=[redacted:API_TOKEN]" in r.stderr, (argv, r.stderr)
        assert_clean(r.stdout + r.stderr, f"rook {argv[0]}")


def run_two_shards_and_merge(ws, name):
    """Run ``ws``'s scenarios as shards 1/2 and 2/2 of the run ``name``, then merge them."""
    import subprocess
    import sys

    for args in (["run", "--shard", "1/2", "--run-name", name], ["run", "--shard", "2/2", "--run", name],
                 ["merge", "--run", name]):
        r = subprocess.run([sys.executable, "-m", "rook_core", *args, "-w", str(ws.root)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)


def test_a_command_run_in_process_after_another_redacts_its_own_workspace(tmp_path, monkeypatch):
    # found by test_fuzz_cli.py: the redactor a command activated stayed active
    # for the next command run in the same process (rook_cli, CliRunner), and an
    # error said before the next one activated its own (config.yaml's, naming an
    # unknown key that is the value of a profile's env variable) was redacted
    # with the first workspace's variables only: the value showed.
    from rook_core.testing import RookCli, Workspace

    monkeypatch.setenv("API_TOKEN", SECRET)
    first = Workspace(tmp_path / "first")
    first.script("agent.sh", "#!/bin/bash\n[ \"$1\" = execute ] && echo '{\"output\": \"hi\"}'\nexit 0\n")
    first.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    first.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    assert RookCli(first)("run").exit_code == 0
    second = Workspace(tmp_path / "second")
    second.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                    "env": [{"variable": "API_TOKEN", "purpose": "token"}]})
    (second.root / ".testmuai/rook/config.yaml").write_text(f"{SECRET}: agent\n")
    for args in (["run"], ["profile", "show"], ["runs"], ["doctor"]):
        r = RookCli(second)(*args)
        assert r.exit_code in (1, 2) and "Traceback" not in r.stderr, (args, r.stderr)
        assert SECRET not in r.stdout + r.stderr, (args, r.stdout + r.stderr)
        assert "[redacted:API_TOKEN]: unknown key" in r.stdout + r.stderr, (args, r.stdout + r.stderr)


@pytest.mark.parametrize("command", [["run"], ["profile", "show"], ["profile", "list"], ["doctor"]])
def test_a_profile_whose_env_key_is_lost_still_redacts_the_variables_it_names(
    rook_workspace, rook_cli, monkeypatch, command
):
    # found by test_fuzz_cli.py: the profile's `env:` key replaced (by the value
    # itself, pasted over it) left valid YAML declaring no variable, so the
    # message naming the unknown key showed the value; a file that is not YAML
    # at all was already scanned for its `variable: NAME` entries, and now so
    # is one whose env list cannot be read
    monkeypatch.setenv("API_TOKEN", SECRET)
    rook_workspace.profile(f"""
        id: p
        hooks: {{execute: scripts/agent.sh}}
        {SECRET}:
          - variable: API_TOKEN
            purpose: token
    """)
    r = rook_cli(*command)
    said = r.stdout + r.stderr
    assert r.exit_code in (0, 1, 2) and "Traceback" not in said, said
    assert SECRET not in said and "[redacted:API_TOKEN]" in said, said


ESCAPES_LETTERS = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
every = "".join(f"\\u{ord(c):04x}" for c in s)   # each character a \u escape
one = s[:3] + f"\\u{ord(s[3]):04X}" + s[4:]        # one letter so, upper-case hex
if os.environ["ROOK_SCENARIO_ID"] == "raw":       # the hook writes the JSON text itself
    print('{"output": "key ' + every + '", "log": "' + one + '"}')
else:                                             # JSON text as the answer: escapes in it
    print(json.dumps({"output": '{"k": "' + every + '", "n": "' + one + '"}'}))
"""


@pytest.mark.parametrize("sid", ["raw", "text"])
def test_a_secret_with_letters_written_as_unicode_escapes_is_redacted(rook_workspace, rook_cli, monkeypatch, sid):
    """A JSON string may write any character as a `\\u` escape, letters too
    ('\\u0073k-live-...' is 'sk-live-...'): the parsed output was redacted, but
    the raw standard output a record keeps, and an answer that is JSON text
    (which a `json` criterion parses and quotes decoded), held the token with
    its letters escaped; only characters other than letters, digits, `-`,
    `_` and `.` were looked for as escapes."""
    monkeypatch.setenv("API_TOKEN", "sk-live-4f9c2b7e8a1d3f6b5c0e9a8d7f2b4c6e")
    ws = rook_workspace
    ws.script("letters.py", ESCAPES_LETTERS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/letters.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "key"}]})
    r = rook_cli("run", "--json", "--run-name", "u")
    said = ws.all_run_text("u") + r.stdout + r.stderr
    for piece in ("4f9c2b7e8a1d", "\\u0034\\u0066\\u0039\\u0063", "\\\\u0034\\\\u0066\\\\u0039"):
        assert piece not in said, piece
    assert "[redacted:API_TOKEN]" in ws.record(r.report["run"]["id"], f"{sid}.1")["hooks"][0]["stdout"]


COLOURS = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
# grep --color highlights a match inside the token; a logger colours its level and resets
print("Authorization: Bearer " + s[:3] + "\x1b[01;31m\x1b[K" + s[3:7] + "\x1b[m\x1b[K" + s[7:], file=sys.stderr)
print(json.dumps({"output": "sent " + s[:10] + "\x1b[0m" + s[10:]}))
"""


def test_a_secret_a_terminal_colour_code_splits_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A program that colours its text for a terminal (grep --color highlighting
    a match inside the token, a logger resetting its colour) puts escape
    sequences between the characters of a secret: the record kept the token
    whole around them ('sk-\\x1b[01;31m\\x1b[Klive\\x1b[m\\x1b[K-4f9c...'),
    in the raw standard output as JSON escapes ('\\u001b[0m'), and every report
    and the terminal showed it so."""
    secret = "sk-live-4f9c2b7e8a1d3f6b5c0e9a8d7f2b4c6e"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("colours.py", COLOURS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/colours.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "nothing like this"}]})
    out = ws.root / "out"
    reports = [a for fmt in ("json", "junit", "markdown", "html") for a in ("--report", f"{fmt}:{out}/r.{fmt}")]
    r = rook_cli("run", "--run-name", "c", *reports)
    assert r.exit_code == 1, r.stdout + r.stderr
    said = ws.all_run_text("c") + r.stdout + r.stderr + all_text(out)
    assert "4f9c2b7e8a1d" not in said and "live" not in said, said
    assert "Bearer [redacted:API_TOKEN]" in said and "sent [redacted:API_TOKEN]" in said, said


def test_redactor_letters_escaped_and_colour_codes():
    from rook_core.redact import Redactor

    r = Redactor({"KEY": "sk-live-4f9c2b7e", "PW": 'p@ss "q" é', "PIN": "1234"})
    assert r.text('"\\u0073k-liv\\u0065-4f9c2b7e"') == '"[redacted:KEY]"'
    assert r.text('"p\\u0040\\u0073s \\"q\\" \\u00e9"') == '"[redacted:PW]"'
    assert r.text('"\\\\u0031234"') == '"[redacted:PIN]"'  # JSON text in a JSON string
    assert r.text("sk-\x1b[01;31m\x1b[Klive\x1b[m\x1b[K-4f9c2b7e!") == "[redacted:KEY]!"
    assert r.text('"sk-live\\u001b[0m-4f9c2b7e"') == '"[redacted:KEY]"'
    assert r.text("12\x1b[0m34 \\u00e9") == "12\x1b[0m34 \\u00e9"  # a short value is never joined
    assert r.text("caf\\u00e9 sk-live") == "caf\\u00e9 sk-live"


INLINING_AUTHOR = r"""
import base64, os, sys
sys.stdin.read()
value = os.environ["DB_PASSWORD"]
literal = {"raw": repr(os.environ["API_TOKEN"]), "quoted": repr(value),
           "basic": repr("Basic " + base64.b64encode(("desk:" + value).encode()).decode())}[os.environ["INLINE"]]
print("```python\nimport json, sys\nKEY = " + literal + "\nif sys.argv[1] == 'execute':\n"
      "    sys.stdin.read()\n    print(json.dumps({'output': 'ok'}))\n```")
"""


@pytest.mark.parametrize("inline", ["raw", "quoted", "basic"])
def test_profile_fix_never_writes_a_script_holding_a_secret(rook_workspace, rook_cli, monkeypatch, inline):
    """rook profile fix wrote the author agent's repair as it came: one that
    read a profile's env value from its environment and put it in the script
    (KEY = 'Zq9-s3cr3t-v4lue-77') reached the agent's scripts/ folder on disk.
    `rook profile add` refused such a file, and only for the value as it is:
    a password in a Python literal ('it\\'s', backslashes doubled) or in the
    base64 of a Basic header was written too."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("DB_PASSWORD", "pw'with\\quote\"s-221")
    monkeypatch.setenv("INLINE", inline)
    ws = rook_workspace
    ws.script("broken.sh", "#!/bin/bash\necho broken >&2\nexit 1\n")
    (ws.root / "author.py").write_text(INLINING_AUTHOR)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/broken.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"},
                        {"variable": "DB_PASSWORD", "purpose": "fixture database"}]})
    import sys
    r = rook_cli("profile", "fix", "p", "--author", f"{sys.executable} {ws.root / 'author.py'}", "-w", str(ws.root))
    said = r.stdout + r.stderr
    assert r.exit_code == 1 and "Traceback" not in said, said
    held = "API_TOKEN" if inline == "raw" else "DB_PASSWORD"
    assert f"the author put the value of {held} (a secret) in the file; refused" in said, said
    scripts = sorted(p.name for p in (ws.agent_dir / "scripts").iterdir())
    assert scripts == ["broken.sh"], scripts
    assert "broken.sh" in (ws.agent_dir / "profiles" / "p.yaml").read_text()


ANSI_C_QUOTER = r"""
#!/bin/bash
cat >/dev/null
printf 'running: curl -u desk:%q\n' "$API_TOKEN" >&2
declare -p API_TOKEN >&2
python3 -c 'import os, sys; print("header:", os.environb[b"API_TOKEN"], file=sys.stderr)'
echo "{\"output\": \"ok ${API_TOKEN@Q}\"}" | sed 's/\\/\\\\/g'
"""


@pytest.mark.parametrize("secret", ["pässwörd-Zq9-\\-'x'", "tab\there-Zq9-\\-'x'"])
def test_a_secret_quoted_with_escapes_for_bytes_is_redacted(rook_workspace, rook_cli, monkeypatch, secret):
    """A secret with a character that is not printable ASCII (a letter with an
    accent, in the C locale a CI job often runs in; a tab) is quoted by bash's
    printf %q, declare -p and ${v@Q} as $'...' (octal escapes for its bytes,
    \\t for a tab, \\' and \\\\), and by Python as bytes (b'...\\xc3\\xa4...'):
    the record, the report and the terminal kept it so."""
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("quoter.sh", ANSI_C_QUOTER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/quoter.sh"}, "hook_env": {"LC_ALL": "C"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][-1]["stderr"]
    assert "desk:$'[redacted:API_TOKEN]'" in stderr and "API_TOKEN=$'[redacted:API_TOKEN]'" in stderr, stderr
    assert "header: b'[redacted:API_TOKEN]'" in stderr or 'header: b"[redacted:API_TOKEN]"' in stderr, stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "ok $'[redacted:API_TOKEN]'"
    assert "Zq9" not in ws.all_run_text(r.report["run"]["id"]) + r.stdout + r.stderr


YAML_DUMPER = r"""
import json, os, sys
import yaml
sys.stdin.read()
config = {"database": {"password": os.environ["API_TOKEN"]}}
print("config:", yaml.dump(config), file=sys.stderr)  # PyYAML's default: allow_unicode off
print(json.dumps({"output": "using " + yaml.safe_dump(config, default_flow_style=True)}))
"""


def test_a_secret_dumped_as_yaml_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """PyYAML writes a value with a character that is not printable ASCII in
    double quotes, that character escaped ('p\\xE4ssw\\xF6rd', '\\"', '\\\\'): a
    hook that logged its configuration so left the password in the record."""
    monkeypatch.setenv("API_TOKEN", 'pässwörd-"Zq9"-\\x')
    ws = rook_workspace
    ws.script("dumper.py", YAML_DUMPER, executable=False)  # run by Rook's own Python, which has yaml
    ws.profile({"id": "p", "hooks": {"execute": "scripts/dumper.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "using"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    stderr = ws.record(r.report["run"]["id"], "s.1")["hooks"][-1]["stderr"]
    assert 'password: "[redacted:API_TOKEN]"' in stderr, stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == 'using {database: {password: "[redacted:API_TOKEN]"}}\n'
    assert "Zq9" not in ws.all_run_text(r.report["run"]["id"]) + r.stdout + r.stderr


def test_a_basic_credential_whose_user_is_the_key_is_redacted_alone_too(
    rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """Stripe's docs authenticate with `curl ... -u sk_test_...:` (the key as the user,
    no password). rook profile add moves it to a Basic credential in env, whose
    redaction covered 'KEY:' and the (empty) password: an agent that echoed the key
    alone showed it in the clear, in the run's record and report."""
    import base64

    key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
    monkeypatch.setenv("DESK_BASIC_AUTH", base64.b64encode(f"{key}:".encode()).decode())
    ws = rook_workspace
    ws.script("basic.sh", BASIC_DECODER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/basic.sh"},
                "env": [{"variable": "DESK_BASIC_AUTH", "purpose": "base64 of user:password"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "sent"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    text = r.stdout + r.stderr + ws.all_run_text(r.report["run"]["id"])
    assert key not in text and "login failed for [redacted:DESK_BASIC_AUTH]" in text


@pytest.mark.timeout(60)
def test_a_long_run_of_backslashes_is_redacted_in_one_pass():
    """A text with a \\u escape of a letter looks for each value with any of its
    letters escaped: the first letter's ``\\\\+u`` was tried at every backslash
    of a run and ran to its end each time, so 400 KB of backslashes (JSON text
    escaped again and again, a hook's binary dump) took hours to redact."""
    from rook_core.redact import Redactor

    r = Redactor({"KEY": "sk-live-4f9c2b7e", "JSON": '{"a":1}-Zq9x'})
    run = "\\" * 400_000
    text = run + "\\u0041 " + run + ' "\\u0073k-live-4f9c2b7e" ' + run + "\\u007b"
    assert r.text(text) == run + "\\u0041 " + run + ' "[redacted:KEY]" ' + run + "\\u007b"
    assert r.text(run + "\\u0073k-live-4f9c2b7e") == "[redacted:KEY]"  # the escape's backslashes too


def test_a_secret_base_url_holding_a_percent_encoded_key_is_never_shown_decoded(
    rook_workspace, rook_cli, monkeypatch
):
    """A base URL kept secret with its key percent-encoded in it (an Azure
    function's `?zz=Zx9%2Bq%2FAb...%3D%3D`) is sent as written; the URL a record
    and a message show is percent-decoded, and showed the key decoded
    (`zz=Zx9+q/AbCdEf==`), a form of the secret the redactor did not know."""
    from servers.agent_server import AgentServer

    key = "Zx9%2Bq%2FAbCdEf%3D%3D"
    server = AgentServer().start()
    try:
        server.flaky["k"] = [(503, {"Retry-After": "0"})]
        monkeypatch.setenv("FN_URL", f"{server.url}/flaky/k?zz={key}")
        monkeypatch.setenv("GONE_URL", f"{server.url}/no-such-route?zz={key}")
        ws = rook_workspace
        env = [{"variable": "FN_URL", "purpose": "the function's URL, key and all"},
               {"variable": "GONE_URL", "purpose": "a URL that is not there"}]
        ws.profile({"id": "p", "env": env, "hooks": {"execute": {"http": {
            "url": "{{env.FN_URL}}", "body": {"q": "{{goal}}"}, "extract": {"output": "output"}}}}})
        ws.profile({"id": "gone", "env": env, "hooks": {"execute": {"http": {
            "url": "{{env.GONE_URL}}", "body": {"q": "{{goal}}"}}}}}, active=False)
        ws.scenario({"id": "ok", "goal": "hi", "criteria": [{"contains": "finally"}]})
        r = rook_cli("run", "--json")
        failed = rook_cli("run", "--profile", "gone")
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.stderr
    attempts = ws.record(r.report["run"]["id"], "ok.1")["hooks"][0]["details"]["attempts"]
    assert [a["url"] for a in attempts] == ["[redacted:FN_URL]"] * 2
    assert failed.exit_code == 1 and "[redacted:GONE_URL]" in failed.stderr
    text = all_text(ws.runs_dir) + r.stdout + r.stderr + failed.stdout + failed.stderr
    decoded = urllib.parse.unquote(key)
    for form in (key, decoded, decoded.replace("+", " "), "AbCdEf"):
        assert form not in text, f"{form!r} reached a record or the terminal"


def test_a_number_prepare_saved_is_a_secret_like_a_string(rook_workspace, rook_cli):
    """Prepare's saved values are secrets, but only the strings among them were
    redacted: a PIN or session number the API answered as a JSON number
    (48213957) was recorded in the next request's URL, its echo and the report."""
    from servers.agent_server import AgentServer

    server = AgentServer().start()
    server.mint = lambda form: (200, {"access_token": "tok-5e55ion-0042", "pin": 48213957,
                                      "ratio": 4821.5, "nested": {"ids": [73019264]}, "n": 42})
    try:
        ws = rook_workspace
        ws.profile({"id": "p", "hooks": {
            "prepare": {"http": {"url": f"{server.url}/oauth/token", "body": {},
                                 "save": {"token": "access_token", "pin": "pin", "ratio": "ratio",
                                          "ids": "nested", "n": "n"}}},
            "execute": {"http": {"url": f"{server.url}/echo", "query": {"p": "{{pin}}"},
                                 "body": {"pin": "{{pin}}", "r": "{{ratio}}", "ids": "{{ids}}",
                                          "n": "{{n}}", "q": "{{goal}}", "t": "pin {{pin}}"},
                                 "extract": {"output": "received.q",
                                             "evidence": {"received": "received", "query": "query"}}}}}})
        ws.scenario({"id": "ok", "goal": "hi", "criteria": [{"contains": "hi"}]})
        r = rook_cli("run", "--json", "--report", f"markdown:{ws.root}/out/r.md")
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.stderr
    received = r.report["scenarios"][0]["turns"][0]["evidence"]["received"]
    assert received["pin"] == "[redacted:pin]" and received["t"] == "pin [redacted:pin]"
    assert received["r"] == "[redacted:ratio]" and received["ids"] == {"ids": ["[redacted:ids]"]}
    assert r.report["scenarios"][0]["turns"][0]["evidence"]["query"] == {"p": "[redacted:pin]"}
    assert received["n"] == 42  # a number of under 4 characters is no secret (as a string)
    text = all_text(ws.runs_dir) + all_text(ws.root / "out") + r.stdout + r.stderr
    for value in ("48213957", "4821.5", "73019264"):
        assert value not in text, f"{value} reached a record or the terminal"


# A secret written in a form of its own (each character a \u escape, or a
# terminal's colour codes between its characters), stopped by the output cap
# in its middle: at `cut` characters of the secret, or inside an escape.
DISGUISED = r"""
#!/usr/bin/env python3
import os, sys
sys.stdin.read()
s, case = os.environ["API_TOKEN"], os.environ["ROOK_SCENARIO_ID"]
form, keep, stream = case.split("-")
escape = {"uesc": lambda c: "\\u%04x" % ord(c), "ansi": lambda c: c + "\x1b[0m",
          "jansi": lambda c: c + "\\u001b[0m", "plain": lambda c: c}[form]
shown = "".join(escape(c) for c in s)
head = "".join(escape(c) for c in s[:int(keep)])
head = {"uesc": head + "\\u00", "ansi": head[:-1], "jansi": head[:-1], "plain": head}[form]  # in an escape
pad = "y" * (1024 - len(head))
(sys.stdout if stream == "stdout" else sys.stderr).write(pad + shown + "y" * 5000)
"""


def _undisguised(text: str) -> str:
    """``text`` with colour codes taken out and \\u escapes read: as a reader sees it."""
    import re

    text = re.sub(r"(?:\x1b|\\+u001[bB])\[[0-9;]*m", "", text)
    return re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)


def test_a_cap_inside_a_disguised_secret_shows_no_piece_of_it(rook_workspace, rook_cli, monkeypatch):
    """A cap cutting a secret written with \\u escapes, or with colour codes
    between its characters, left its beginning in the record ('\\u0073\\u006b...'
    for sk-...): the beginning was looked for only as the secret is written
    plainly. Now it is masked however the whole secret would be found."""
    monkeypatch.setenv("API_TOKEN", "sk-live-Zq9s3cr3tv4lue77")
    ws = rook_workspace
    ws.script("disguised.py", DISGUISED)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/disguised.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}],
                "limits": {"stdout_bytes": 1024, "stderr_bytes": 1024}})
    cases = [f"{form}-{keep}-{stream}" for form in ("uesc", "ansi", "jansi", "plain")
             for keep in (4, 11, 23) for stream in ("stdout", "stderr")]
    for sid in cases:
        ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    secret = "sk-live-Zq9s3cr3tv4lue77"
    pieces = {secret[i:i + 4] for i in range(len(secret) - 3)}
    records = ws.runs_dir / r.report["run"]["id"] / "scenarios"
    for sid in cases:
        hook = json.loads((records / f"{sid}.1.json").read_text())["hooks"][-1]
        stream = sid.split("-")[-1]
        seen = _undisguised(hook[stream])
        assert seen.endswith("y[redacted:API_TOKEN]"), (sid, hook[stream][-80:])
        assert not [p for p in pieces if p in seen], (sid, hook[stream][-80:])
    seen = _undisguised(r.stdout + r.stderr + all_text(ws.runs_dir))
    assert not [p for p in pieces if p in seen]


def test_redactor_cut_short_finds_a_disguised_beginning():
    from rook_core.redact import Redactor

    red = Redactor({"T": "sk-live-Zq9s3cr3t"})
    assert red.cut_short("x \\u0073\\u006b\\u002d\\u006c") == "x [redacted:T]"
    assert red.cut_short("x \\\\u0073\\\\u006b-l\\\\u0069\\\\u0") == "x [redacted:T]"  # JSON in JSON
    assert red.cut_short("x s\x1b[1mk-l\x1b[0") == "x [redacted:T]"
    assert red.cut_short("x s\\u001b[1mk-l\\u001b[0mi") == "x [redacted:T]"
    assert red.cut_short("x sk%2Dli%7") == "x [redacted:T]"
    # under 4 characters and under half the secret, or no secret's beginning: kept
    assert red.cut_short("x \\u0073\\u006b\\u002d") == "x \\u0073\\u006b\\u002d"
    assert red.cut_short("line one\\u00") == "line one\\u00"
    assert red.cut_short("done: 100%") == "done: 100%"
    assert red.cut_short("x \x1b[31mred\x1b[0") == "x \x1b[31mred\x1b[0"


ESCAPER = r"""
#!/usr/bin/env node
import { readFileSync } from "node:fs";
readFileSync(0, "utf8");
const s = process.env.API_TOKEN;
console.log(JSON.stringify({output: "ok " + escape(s), link: "https://x/?k=" + escape(s) + "&v=1"}));
"""


@pytest.mark.parametrize("secret", ["pässwörd-Zq9€s3cr3t", "sk=Zq9/s3cr3t+v4l ue77", "Zq9s3cr3t-\U0001f511-key"])
def test_a_secret_escaped_by_javascript_s_escape_is_redacted(rook_workspace, rook_cli, monkeypatch, secret):
    """JavaScript's escape() writes a character above U+00FF as %uXXXX and one
    of U+0080..U+00FF as %XX of its Latin-1 byte (%E4 for ä, not UTF-8's
    %C3%A4): a non-ASCII secret so escaped reached the record whole."""
    import shutil

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("escaper.mjs", ESCAPER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/escaper.mjs"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "ok [redacted:API_TOKEN]"
    assert turn["evidence"]["link"] == "https://x/?k=[redacted:API_TOKEN]&v=1"
    assert "Zq9" not in all_text(ws.runs_dir) + r.stdout + r.stderr


def test_profile_show_never_folds_a_long_secret_out_of_reach(rook_workspace, rook_cli, monkeypatch):
    """`rook profile show` writes the hooks as YAML, which folds a long value of
    several words over 80 columns at a space: a passphrase pasted into the file
    as well as set in its env variable was shown folded, and so not redacted."""
    phrase = "correct horse battery staple and a long tail of words that runs past eighty columns"
    monkeypatch.setenv("PHRASE", phrase)
    ws = rook_workspace
    ws.profile({"id": "p", "env": [{"variable": "PHRASE", "purpose": "the API passphrase"}],
                "hooks": {"execute": {"http": {"url": "https://api.example.com/chat",
                                               "headers": {"X-Note": phrase}, "body": {"q": "{{goal}}"}}}}})
    r = rook_cli("profile", "show", "p", "-w", str(ws.root))
    assert r.exit_code == 0, r.stderr
    assert "X-Note: [redacted:PHRASE]\n" in r.stdout, r.stdout
    assert "horse" not in r.stdout + r.stderr and "eighty" not in r.stdout + r.stderr


JSON_ANSWER = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
pin = int(os.environ["ACCOUNT_PIN"])
answer = {"status": "paid", "account": pin, "ids": [pin, 7], "note": f"pin {pin}", "ref": f"A{pin}",
          "ts": int(f"17{pin}00")}
print(json.dumps({"output": json.dumps(answer), "pin": pin}))
"""


def test_a_numeric_secret_inside_a_json_answer_leaves_it_json(rook_workspace, rook_cli, monkeypatch):
    """An answer that is JSON text holding a numeric secret as a number
    ({"account": 48213957}) was redacted to {"account": [redacted:ACCOUNT_PIN]},
    no JSON any more: every json criterion on it failed with 'output is not
    JSON', also one about another field. The marker now stands there as a JSON
    string, as it does where Rook reads the number itself."""
    monkeypatch.setenv("ACCOUNT_PIN", "48213957")
    ws = rook_workspace
    ws.script("answer.py", JSON_ANSWER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/answer.py"},
                "env": [{"variable": "ACCOUNT_PIN", "purpose": "the account's PIN"}]})
    ws.scenario({"id": "s", "goal": "pay", "criteria": [
        {"json": {"path": "status", "equals": "paid"}},
        {"json": {"path": "account", "equals": "[redacted:ACCOUNT_PIN]"}},
        {"json": {"path": "note", "equals": "pin [redacted:ACCOUNT_PIN]"}}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.report["scenarios"][0]["criteria"]
    turn = r.report["scenarios"][0]["turns"][0]
    assert json.loads(turn["output"]) == {
        "status": "paid", "account": "[redacted:ACCOUNT_PIN]", "ids": ["[redacted:ACCOUNT_PIN]", 7],
        "note": "pin [redacted:ACCOUNT_PIN]", "ref": "A[redacted:ACCOUNT_PIN]",
        "ts": "17[redacted:ACCOUNT_PIN]00"}  # a number holding it among its digits: text too
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert json.loads(hook["stdout"])["pin"] == "[redacted:ACCOUNT_PIN]"  # the raw output too
    assert "48213957" not in all_text(ws.runs_dir) + r.stdout + r.stderr


def test_redactor_percent_decoded_forms():
    from rook_core.redact import Redactor

    red = Redactor({"U": "https://fn.example/api?v=a+b&code=Zx9%2Bq%2F%3D%3D"})
    assert red.text("POST https://fn.example/api?v=a+b&code=Zx9+q/== failed") == "POST [redacted:U] failed"
    assert red.text("got https://fn.example/api?v=a b&code=Zx9+q/==") == "got [redacted:U]"
    # a value that decodes to blanks, or to bytes that are not UTF-8, adds no decoded form
    assert Redactor({"B": "%20%20%20%20"}).text("a    b") == "a    b"
    assert Redactor({"F": "%FF%FEabcd"}).text("\ufffd\ufffdabcd") == "\ufffd\ufffdabcd"


YAML_WRITER = r"""
#!/usr/bin/env python3
import json, os, sys, textwrap
sys.stdin.read()
phrase = os.environ["PASSPHRASE"]  # as PyYAML's dump writes it at width=60
folded = "\n    ".join(textwrap.wrap("passphrase: " + phrase, 60))
print(json.dumps({"output": "config:\nauth:\n  " + folded + "\n"}))
"""


def test_a_secret_of_several_words_folded_by_yaml_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """YAML (PyYAML's dump, 80 columns by default) folds a long value of several
    words at a space: a line break and the next line's indent where the space
    was. Folded so in a hook's output, a passphrase reached the record whole."""
    phrase = "correct horse battery staple and a long tail of words past the width"
    monkeypatch.setenv("PASSPHRASE", phrase)
    ws = rook_workspace
    ws.script("yamlw.py", YAML_WRITER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/yamlw.py"},
                "env": [{"variable": "PASSPHRASE", "purpose": "the API passphrase"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "config"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "config:\nauth:\n  passphrase: [redacted:PASSPHRASE]\n"
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "horse" not in text and "width" not in text


def test_redactor_folds_at_a_space():
    from rook_core.redact import Redactor

    red = Redactor({"P": "correct horse battery staple"})
    assert red.text("x correct horse\n  battery staple y") == "x [redacted:P] y"
    assert red.text("x correct horse battery\\n    staple y") == "x [redacted:P] y"  # escaped in JSON
    assert red.text("correct horse\n\nbattery staple") == "correct horse\n\nbattery staple"  # paragraphs
    # a value mostly of spaces, its spaces optional, would be found in every x
    for blank in (" " * 16, " " * 15 + "x", "x" + " " * 14 + "y"):
        assert Redactor({"B": blank}).text("a x y xy\nb c") == "a x y xy\nb c"
    accented = Redactor({"P": "pässwörd with spaces and ümlauts"})  # folded YAML in a hook's JSON stdout
    assert accented.text('{"o": "p: p\\u00e4ssw\\u00f6rd with\\n    spaces and \\u00fcmlauts"}') == (
        '{"o": "p: [redacted:P]"}')


def test_redactor_numbers_in_json_text():
    from rook_core.redact import Redactor

    red = Redactor({"PIN": "48213957"})
    assert red.text('{"a": 48213957, "b": [48213957 ], "c": "x 48213957", "d": 148213957}') == (
        '{"a": "[redacted:PIN]", "b": ["[redacted:PIN]" ], "c": "x [redacted:PIN]", '
        '"d": "1[redacted:PIN]"}')
    short = Redactor({"PIN": "2026"})  # a timestamp holding the PIN among its digits
    assert short.text('{"ts": 1765020260000, "n": -2026.5}') == (
        '{"ts": "17650[redacted:PIN]0000", "n": "-[redacted:PIN].5"}')
    assert red.text("[48213957] started") == "[[redacted:PIN]] started"  # no JSON: as it is
    assert red.text('{"s": "a\\\\", "n": 48213957}') == '{"s": "a\\\\", "n": "[redacted:PIN]"}'


DEEP_JSON_ANSWER = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
answer = {"status": "paid", "ts": [int("17650" + os.environ["YEAR_PIN"] + "0000")]}
for _ in range(20):  # a pretty-printed answer deep enough to indent its numbers 80 columns
    answer = {"level": answer}
answer["status"] = "paid"
print(json.dumps({"output": json.dumps(answer, indent=4)}))
"""


def test_a_numeric_secret_deep_in_pretty_printed_json_leaves_it_json(rook_workspace, rook_cli, monkeypatch):
    """A number holding a numeric secret was put in quotes only when what came
    before it, within 64 characters, was `[`, `:` or `,`: in JSON printed with
    an indent, a list's number 80 columns in (`[`, a line break, spaces) stayed bare,
    its digits became `17650[redacted:YEAR_PIN]0000`, and every json criterion
    on the answer failed with 'output is not JSON'."""
    monkeypatch.setenv("YEAR_PIN", "2026")
    ws = rook_workspace
    ws.script("answer.py", DEEP_JSON_ANSWER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/answer.py"},
                "env": [{"variable": "YEAR_PIN", "purpose": "a PIN"}]})
    ws.scenario({"id": "s", "goal": "pay", "criteria": [{"json": {"path": "status", "equals": "paid"}}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.report["scenarios"][0]["criteria"]
    answer = json.loads(r.report["scenarios"][0]["turns"][0]["output"])
    for _ in range(20):
        answer = answer["level"]
    assert answer == {"status": "paid", "ts": ["17650[redacted:YEAR_PIN]0000"]}


@pytest.mark.timeout(60)
def test_numbers_holding_a_numeric_secret_are_quoted_in_one_pass():
    """Each place a numeric secret was found read its whole run of digits again
    and looked through every string of the JSON text: a log line beginning
    with `[` holding 400,000 digits, or a JSON list of 40,000 records each with
    a timestamp holding the PIN, took hours to redact."""
    from rook_core.redact import Redactor

    red = Redactor({"PIN": "2026"})
    digits = "2026" * 100_000
    assert red.text("[x] " + digits) == "[x] " + "[redacted:PIN]" * 100_000
    records = [{"i": i, "ts": 1765020260000 + i % 10, "s": "x"} for i in range(40_000)]
    out = json.loads(red.text(json.dumps(records)))
    assert out[39_999] == {"i": 39_999, "ts": "17650[redacted:PIN]0009", "s": "x"}
    # indent: what comes before a number is read past any white space
    assert red.text('{"a":\n' + " " * 200 + "12026}") == '{"a":\n' + " " * 200 + '"1[redacted:PIN]"}'


@pytest.mark.timeout(60)
def test_a_cut_output_is_read_for_a_secrets_beginning_in_one_pass():
    """Output cut short is read at its end for a secret's beginning, escaped or
    not. A run of backslashes there (JSON text escaped again and again) was
    read again from each of its backslashes for an escape the cut left
    unfinished (`\\\\u00`), and each length of a long secret's beginning was
    copied and compared in turn: a minute for each cut output ending in
    48,000 backslashes with a secret of 4,096 characters, seconds for one
    with a secret of 100,000."""
    from rook_core.redact import Redactor

    long = Redactor({"KEY": "s" * 4095 + "t"})
    run = "x" + "\\" * 48_000 + "y"
    assert long.cut_short(run) == run
    assert long.cut_short(run + "\\u0073\\u0073\\u0073\\u0073\\u00") == run + "[redacted:KEY]"
    key = "".join(chr(0x41 + (i * 7919) % 26) for i in range(100_000))
    huge = Redactor({"KEY": key})
    text = "log line\n" * 8_000
    for _ in range(10):
        assert huge.cut_short(text + "\\u0041") == text + "\\u0041"
        assert huge.cut_short(text + key[:5000]) == text + "[redacted:KEY]"
        assert huge.cut_short(text + "\\u00" + key[1:6]) == text + "\\u00" + key[1:6]



@pytest.mark.parametrize("phrase", [
    "mot de passe très secret pour l’API du service de paiement, ne pas partager",
    "tab\there and a long phrase of words to fold past the eighty columns of YAML",
    "correct horse battery staple and a long tail of words well past the width of eighty columns",
])
def test_a_secret_folded_in_yamls_double_quotes_is_redacted(rook_workspace, rook_cli, monkeypatch, phrase):
    """PyYAML writes a value holding a character past ASCII (as it dumps by
    default) or a tab in double quotes, and folds it there with a backslash at
    the line's end (`...paiement,\\`, then `  \\ ne pas...` where a space was):
    such a fold was not read as one, so a passphrase a hook printed as YAML
    reached the record whole."""
    import yaml

    monkeypatch.setenv("PASSPHRASE", phrase)
    dumped = yaml.dump({"auth": {"passphrase": phrase}}, default_style='"' if phrase.isascii() else None)
    assert "\\\n" in dumped
    ws = rook_workspace
    ws.script("yamlw.py", "#!/usr/bin/env python3\nimport json, sys\nsys.stdin.read()\n"
              f"print(json.dumps({{'output': {dumped!r}}}))\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/yamlw.py"},
                "env": [{"variable": "PASSPHRASE", "purpose": "the API passphrase"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "auth"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    output = r.report["scenarios"][0]["turns"][0]["output"]
    assert output.endswith('"passphrase": "[redacted:PASSPHRASE]"\n') or output.endswith(
        'passphrase: "[redacted:PASSPHRASE]"\n'), output
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "secret pour" not in text and "partager" not in text and "columns" not in text and "width" not in text


ESCAPE_CUT = r"""
#!/usr/bin/env node
import { readFileSync } from "node:fs";
readFileSync(0, "utf8");
const s = process.env.API_TOKEN;
const keep = Number(process.env.ROOK_SCENARIO_ID.split("-")[1]);
let head = escape(s.slice(0, keep));
if (keep === 12) head += escape(s[12]).slice(0, 4);  // the cap stops inside %u20AC
process.stdout.write("y".repeat(1024 - head.length) + escape(s) + "y".repeat(5000));
"""


def test_a_cap_inside_a_secret_written_by_javascripts_escape_shows_no_piece_of_it(
    rook_workspace, rook_cli, monkeypatch
):
    """A cap cutting a secret that JavaScript's escape() wrote (ä as %E4, € as
    %u20AC) left its beginning in the record (`p%E4ssw%F6rd-Zq9%u20`): the end
    of a cut output was read for \\u escapes and %XX of ASCII only."""
    import re

    secret = "pässwörd-Zq9€s3cr3t-v4lue"
    monkeypatch.setenv("API_TOKEN", secret)
    ws = rook_workspace
    ws.script("escapecut.mjs", ESCAPE_CUT)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/escapecut.mjs"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}],
                "limits": {"stdout_bytes": 1024}})
    cases = [f"keep-{n}" for n in (5, 12, 16)]
    for sid in cases:
        ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    pieces = {secret[i:i + 4] for i in range(len(secret) - 3)}
    records = ws.runs_dir / r.report["run"]["id"] / "scenarios"

    def unescaped(text: str) -> str:
        return re.sub(r"%u([0-9a-fA-F]{4})|%([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1) or m.group(2), 16)), text)

    for sid in cases:
        stdout = json.loads((records / f"{sid}.1.json").read_text())["hooks"][-1]["stdout"]
        assert stdout.endswith("y[redacted:API_TOKEN]"), (sid, stdout[-80:])
        assert not [p for p in pieces if p in unescaped(stdout)], (sid, stdout[-80:])
    assert not [p for p in pieces if p in unescaped(r.stdout + r.stderr + all_text(ws.runs_dir))]


TEXT_WRAPPER = r"""
#!/usr/bin/env python3
import json, os, sys, textwrap
sys.stdin.read()
wrapped = textwrap.wrap("passphrase: " + os.environ["PASSPHRASE"], int(os.environ["ROOK_SCENARIO_ID"][1:]))
print(json.dumps({"output": "\n".join(wrapped)}))
"""


def test_a_secret_of_several_words_folded_at_a_space_and_inside_a_word_is_redacted(
    rook_workspace, rook_cli, monkeypatch
):
    """textwrap (as a hook's logging wraps a line) breaks a word longer than its
    width inside it and the rest at a space: a passphrase of several words
    folded both ways reached the record whole, a fold being looked for as a
    space throughout or as nothing throughout."""
    phrase = "correct horse Zq9s3cr3tv4lue77Zq9s3cr3tv4lue77Zq9s3cr3tv4lue77 battery staple"
    monkeypatch.setenv("PASSPHRASE", phrase)
    ws = rook_workspace
    ws.script("wrap.py", TEXT_WRAPPER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/wrap.py"},
                "env": [{"variable": "PASSPHRASE", "purpose": "the API passphrase"}]})
    for width in (20, 40):
        ws.scenario({"id": f"w{width}", "goal": "hi", "criteria": [{"contains": "passphrase"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"w20": "passed", "w40": "passed"}, r.stderr
    for scenario in r.report["scenarios"]:
        assert scenario["turns"][0]["output"] == "passphrase: [redacted:PASSPHRASE]"
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "horse" not in text and "s3cr3t" not in text and "staple" not in text


RUN_ID_ANSWER = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
pin = os.environ["ACCOUNT_PIN"]
answer = {"run": os.environ["ROOK_RUN_ID"], "status": "paid", "ts": int("17" + pin + "00"), "pin": int(pin)}
print(json.dumps({"output": json.dumps(answer)}))
"""


def test_a_json_answer_naming_the_run_keeps_its_numbers_json(rook_workspace, rook_cli, monkeypatch):
    """A run's id that holds a numeric secret (a PIN of 2026 is in every run id
    made that year) is kept as it is, and the text around it was redacted
    piece by piece: a JSON answer naming the run (ROOK_RUN_ID) was no JSON in
    any piece, so its numbers holding the secret were left bare
    (`"ts": 17[redacted:ACCOUNT_PIN]00`) and every json criterion on it failed
    with 'output is not JSON'."""
    import time

    year = time.strftime("%Y", time.gmtime())  # in the run's id, as the PIN 2026 is this year
    monkeypatch.setenv("ACCOUNT_PIN", year)
    ws = rook_workspace
    ws.script("answer.py", RUN_ID_ANSWER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/answer.py"},
                "env": [{"variable": "ACCOUNT_PIN", "purpose": "the account's PIN"}]})
    ws.scenario({"id": "s", "goal": "pay", "criteria": [{"json": {"path": "status", "equals": "paid"}}]})
    r = rook_cli("run", "--json")
    run_id = r.report["run"]["id"]
    assert run_id.startswith(year), run_id
    assert r.statuses() == {"s": "passed"}, r.report["scenarios"][0]["criteria"]
    assert json.loads(r.report["scenarios"][0]["turns"][0]["output"]) == {
        "run": run_id, "status": "paid", "ts": "17[redacted:ACCOUNT_PIN]00", "pin": "[redacted:ACCOUNT_PIN]"}


def test_redactor_kept_words_in_json_text():
    from rook_core.redact import Redactor

    red = Redactor({"PIN": "2026"})
    red.keep("20261206-204700-ab12")
    text = '{"run": "20261206-204700-ab12", "ts": 1765020260000, "pin": 2026, "n": "x 2026"}'
    assert red.text(text) == (
        '{"run": "20261206-204700-ab12", "ts": "17650[redacted:PIN]0000", "pin": "[redacted:PIN]", '
        '"n": "x [redacted:PIN]"}')
    assert red.text("run 20261206-204700-ab12 at 2026") == "run 20261206-204700-ab12 at [redacted:PIN]"


def test_a_lifetime_or_count_in_an_object_prepare_saved_is_no_secret(rook_workspace, rook_cli):
    """Every number of 4 characters or more in an object prepare saved was made
    a secret, a token response's ``expires_in: 3600`` too: every 3600 of every
    record and report (an answer saying "3600 seconds") became
    ``[redacted:auth]``. A number under a key that plainly names a lifetime, a
    time, a count or a status is none now; every other number in it still is
    (a PIN, an account number), and so is one saved as the value itself."""
    from servers.agent_server import AgentServer

    server = AgentServer().start()
    server.mint = lambda form: (200, {
        "access_token": "tok-5e55ion-0042", "token_type": "Bearer", "expires_in": 3600,
        "ext_expires_in": "3599", "refresh_expires_in": 7200, "expiresAt": 1765020260,
        "status": 2001, "account": {"pin": 48213957, "number": 9120, "count": 1500},
    })
    try:
        ws = rook_workspace
        ws.profile({"id": "p", "hooks": {
            "prepare": {"http": {"url": f"{server.url}/oauth/token", "body": {},
                                 "save": {"auth": "@", "token": "access_token",
                                          "ttl": "refresh_expires_in"}}},
            "execute": {"http": {"url": f"{server.url}/echo",
                                 "headers": {"Authorization": "Bearer {{token}}"},
                                 "body": {"q": "{{goal}}"},
                                 "extract": {"output": "received.q",
                                             "evidence": {"received": "received"}}}}}})
        goal = "It lasts 3600 s (3599, 1765020260, 2001, 1500); pin 48213957, 9120, 7200"
        ws.scenario({"id": "ok", "goal": goal, "criteria": [{"contains": "3600"}]})
        r = rook_cli("run", "--json")
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == (
        "It lasts 3600 s (3599, 1765020260, 2001, 1500); pin [redacted:auth], "
        "[redacted:auth], [redacted:ttl]"
    )
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for value in ("48213957", "9120", "7200", "tok-5e55ion-0042"):
        assert value not in text, f"{value} reached a record or the terminal"


def test_a_type_a_status_or_a_scope_in_a_token_response_prepare_saved_is_no_secret(
    rook_workspace, rook_cli
):
    """With a token response saved whole (``save: {auth: "@"}``) every string of
    4 characters or more in it was a secret: ``token_type: "Bearer"``,
    ``status: "active"``, ``scope: "read write"``, so every "Bearer" and
    "active" of every answer, record and report became ``[redacted:auth]`` and
    a criterion looking for them failed. A string with no digit under a key
    that plainly names a type, a kind, a status, a scope or a unit is none now;
    the tokens, an id, a PIN, a password, OAuth's ``state`` and a "type" holding
    a digit still are."""
    from servers.agent_server import AgentServer

    server = AgentServer().start()
    server.mint = lambda form: (200, {
        "access_token": "tok-5e55ion-0042", "token_type": "Bearer", "expires_in": 3600,
        "scope": "read write", "refresh_token": "rfr-9c1d7e2b", "status": "active",
        "scopes": ["openid", "profile"], "state": "af0ifjsldkj",
        "user": {"id": "usr-7781", "password": "hunterhunter", "pin": "482913",
                 "kind": "user:8f3a2c", "plan": "premium", "role": "admin"},
    })
    try:
        ws = rook_workspace
        ws.profile({"id": "p", "hooks": {
            "prepare": {"http": {"url": f"{server.url}/oauth/token", "body": {},
                                 "save": {"auth": "@", "token": "access_token"}}},
            "execute": {"http": {"url": f"{server.url}/echo",
                                 "headers": {"Authorization": "Bearer {{token}}"},
                                 "body": {"q": "{{goal}}"},
                                 "extract": {"output": "received.q",
                                             "evidence": {"received": "received"}}}}}})
        goal = ("Account active, Bearer token, scope read write (openid profile), "
                "premium admin; secrets: af0ifjsldkj usr-7781 hunterhunter 482913 "
                "user:8f3a2c rfr-9c1d7e2b")
        ws.scenario({"id": "ok", "goal": goal, "criteria": [
            {"contains": "active"}, {"contains": "Bearer"}, {"contains": "read write"}]})
        r = rook_cli("run", "--json")
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == (
        "Account active, Bearer token, scope read write (openid profile), "
        "premium admin; secrets: " + " ".join(["[redacted:auth]"] * 6)
    )
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for value in ("af0ifjsldkj", "usr-7781", "hunterhunter", "482913", "8f3a2c",
                  "rfr-9c1d7e2b", "tok-5e55ion-0042"):
        assert value not in text, f"{value} reached a record or the terminal"


def test_a_random_string_with_no_digit_under_a_plain_text_key_is_still_a_secret(
    rook_workspace, rook_cli
):
    """A string with no digit under a key naming a type, a status or a plan
    was no secret whatever it looked like: a login response's API key under
    ``plan`` or a session token under ``status`` (a random token of 22 base64
    characters holds no digit about one time in 40) reached the records and
    the terminal. Only what reads as words is plain text now: ``web``,
    ``admin``, ``MFA_REQUIRED``, ``read:user openid``, and short pieces
    (``DPoP``, a token type; ``OAuth``) stay readable."""
    from servers.agent_server import AgentServer

    server = AgentServer().start()
    server.mint = lambda form: (200, {
        "session_token": "tok-5e55ion-0042", "session_type": "web", "role": "admin",
        "plan": "kQxZbWmRtYpLsNvJcHdGfTaE", "status": "vYtRb-NqWxZ_pLkMjHgFdSa",
        "scope": "read:user openid",
        "state_kind": "MFA_REQUIRED", "token_type": "DPoP", "auth_method": "OAuth",
    })
    try:
        ws = rook_workspace
        ws.profile({"id": "p", "hooks": {
            "prepare": {"http": {"url": f"{server.url}/oauth/token", "body": {},
                                 "save": {"auth": "@"}}},
            "execute": {"http": {"url": f"{server.url}/echo",
                                 "body": {"q": "{{goal}}"},
                                 "extract": {"output": "received.q"}}}}})
        goal = ("web admin read:user openid MFA_REQUIRED DPoP OAuth; secrets: "
                "kQxZbWmRtYpLsNvJcHdGfTaE "
                "vYtRb-NqWxZ_pLkMjHgFdSa")
        ws.scenario({"id": "ok", "goal": goal, "criteria": [
            {"contains": "admin"}, {"contains": "MFA_REQUIRED"}, {"contains": "read:user"},
            {"contains": "DPoP"}, {"contains": "OAuth"}]})
        r = rook_cli("run", "--json")
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == (
        "web admin read:user openid MFA_REQUIRED DPoP OAuth; secrets: "
        + " ".join(["[redacted:auth]"] * 2)
    )
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for value in ("kQxZbWmRtYpLsNvJcHdGfTaE", "vYtRb-NqWxZ_pLkMjHgFdSa"):
        assert value not in text, f"{value} reached a record or the terminal"


def test_a_timestamp_under_a_time_key_or_a_display_name_prepare_saved_is_no_secret(
    rook_workspace, rook_cli
):
    """With a login response saved whole (``save: {auth: "@"}``) every date-time
    under a time key (``expires_at``, AWS STS's ``Expiration``, a cookie's
    ``expires``) and every display name (OIDC's ``name``, ``given_name``,
    ``display_name``) was a secret: every date and name of every answer, record
    and report became ``[redacted:auth]`` and a criterion looking for them
    failed. An ISO-8601 (or HTTP) date under a key naming a time, and a name
    that reads as one under a display-name key, are no credentials now; a
    birth date, a login name (``username``, ``preferred_username``), an email,
    random pieces with digits (``ab12-cd34-ef56``, a UUID) under a plain key,
    a date under a key naming no time and a token under ``name`` still are."""
    from servers.agent_server import AgentServer

    server = AgentServer().start()
    server.mint = lambda form: (200, {
        "access_token": "tok-5e55ion-0042", "token_type": "Bearer",
        "expires_at": "2026-12-07T10:00:00Z", "Expiration": "2026-12-07T10:00:00.000+00:00",
        "refresh_token_expires": "Mon, 07 Dec 2026 10:00:00 GMT", "created_at": "2026-12-06",
        "status": "ab12-cd34-ef56", "type": "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f",
        "nonce": "2026-11-30T09:15:00Z", "expires_in": "a7f3-9c2e-41bd",
        "user": {"name": "Jane Doe", "given_name": "Jane", "display_name": "José Müller-O'Brien",
                 "nickname": "kQxZbWmRtYpLsNvJcHdGfTaE", "username": "jdoe42",
                 "preferred_username": "jane.doe", "email": "jane@example.com",
                 "birth_date": "1980-02-03", "full_name": "Jane 2nd"},
    })
    try:
        ws = rook_workspace
        ws.profile({"id": "p", "hooks": {
            "prepare": {"http": {"url": f"{server.url}/oauth/token", "body": {},
                                 "save": {"auth": "@", "at": "expires_at"}}},
            "execute": {"http": {"url": f"{server.url}/echo",
                                 "body": {"q": "{{goal}}"},
                                 "extract": {"output": "received.q"}}}}})
        goal = ("Valid until 2026-12-07T10:00:00.000+00:00, refresh until Mon, 07 Dec 2026 "
                "10:00:00 GMT, made 2026-12-06; hello Jane Doe (Jane, José Müller-O'Brien). "
                "Secrets: ab12-cd34-ef56 3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f 2026-11-30T09:15:00Z "
                "a7f3-9c2e-41bd kQxZbWmRtYpLsNvJcHdGfTaE jdoe42 jane.doe jane@example.com "
                "1980-02-03 Jane 2nd; saved itself: 2026-12-07T10:00:00Z")
        ws.scenario({"id": "ok", "goal": goal, "criteria": [
            {"contains": "2026-12-07T10:00:00.000+00:00"}, {"contains": "Mon, 07 Dec 2026"},
            {"contains": "made 2026-12-06"}, {"contains": "Jane Doe"},
            {"contains": "José Müller-O'Brien"}]})
        r = rook_cli("run", "--json")
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.report["scenarios"][0]["criteria"]
    assert r.report["scenarios"][0]["turns"][0]["output"] == (
        "Valid until 2026-12-07T10:00:00.000+00:00, refresh until Mon, 07 Dec 2026 "
        "10:00:00 GMT, made 2026-12-06; hello Jane Doe (Jane, José Müller-O'Brien). Secrets: "
        + " ".join(["[redacted:auth]"] * 10) + "; saved itself: [redacted:at]"
    )
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for value in ("ab12-cd34-ef56", "3f2a9c1e", "2026-11-30", "a7f3-9c2e", "kQxZbWmRtYp", "jdoe42",
                  "jane.doe", "jane@example.com", "1980-02-03", "Jane 2nd", "tok-5e55ion-0042"):
        assert value not in text, f"{value} reached a record or the terminal"


def test_prepare_saved_dates_and_names_read_as_plain_only_where_their_key_says_so():
    from rook_plugins.http_transport.phase import _secret_scalars

    saved = {
        "expires": "2026-12-07", "not_after": "2026-12-07 10:00", "issuedAt": "2026-12-07T10:00:00+0100",
        "birth_date": "1980-02-03", "dateOfBirth": "1980-02-03", "dob": "1980-02-03",
        "expires_at": "2026-12-07T10:00:00Z; sk-live-Zq9s", "created_at": "20261207T100000Z",
        "displayName": "Anne-Marie d'Arc", "family_name": "李", "first_name": "Zoë",
        "name": "jane@example.com", "last_name": "Doe_7", "user_name": "Jane Doe",
    }
    assert sorted(_secret_scalars(saved)) == sorted([
        "1980-02-03", "1980-02-03", "1980-02-03", "2026-12-07T10:00:00Z; sk-live-Zq9s",
        "20261207T100000Z", "jane@example.com", "Doe_7", "Jane Doe"])


def test_a_birth_date_under_a_born_key_prepare_saved_stays_a_secret():
    """A birth date is a verification answer, a secret (docs/http.md), but only a key
    with ``birth`` or ``dob`` in it was taken for one: ``born_on`` and ``bornAt`` end
    in a time word (``on``, ``at``), so the date under them read as plain."""
    from rook_plugins.http_transport.phase import _secret_scalars

    saved = {"born_on": "1980-02-03", "bornAt": "1980-02-03T00:00:00Z",
             "born": "1980-02-04", "created_at": "2026-12-06"}
    assert sorted(_secret_scalars(saved)) == ["1980-02-03", "1980-02-03T00:00:00Z", "1980-02-04"]


def test_a_whole_number_prepare_saved_as_a_float_is_found_as_written_without_its_fraction(
    rook_workspace, rook_cli
):
    """A PIN the API answered as ``12345.0`` was a secret as ``12345.0`` only:
    an agent that echoed it as a whole number (JavaScript's ``String(12345.0)``
    is ``12345``) showed it in the record and the report."""
    from servers.agent_server import AgentServer

    server = AgentServer().start()
    server.mint = lambda form: (200, {"pin": 12345.0})
    try:
        ws = rook_workspace
        ws.profile({"id": "p", "hooks": {
            "prepare": {"http": {"url": f"{server.url}/oauth/token", "body": {},
                                 "save": {"pin": "pin"}}},
            "execute": {"http": {"url": f"{server.url}/echo",
                                 "body": {"q": "{{goal}}", "p": "{{pin}}"},
                                 "extract": {"output": "received.q",
                                             "evidence": {"received": "received"}}}}}})
        ws.scenario({"id": "ok", "goal": "your pin is 12345", "criteria": [{"contains": "pin"}]})
        r = rook_cli("run", "--json")
    finally:
        server.stop()
    assert r.statuses() == {"ok": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "your pin is [redacted:pin]"
    assert "12345" not in all_text(ws.runs_dir) + r.stdout + r.stderr


NUMBER_ANSWERS = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
pin = int(os.environ["ACCOUNT_PIN"])
lines = [{"event": "start", "n": 7}, {"account": pin, "note": f"pin {pin}"}, {"ids": [pin]}]
answer = "\n".join(json.dumps(line) for line in lines) + "\n"
print(json.dumps({"output": answer}))
"""


def test_an_answer_in_json_lines_holding_a_numeric_secret_stays_json_lines(
    rook_workspace, rook_cli, monkeypatch
):
    """JSON text holding a numeric secret as a number kept its JSON-ness, but
    JSON Lines (one document a line, as a stream or a log writes them) had a
    bare marker where the number was, ``{"account": [redacted:ACCOUNT_PIN]}``:
    the text as a whole is no JSON document, so its numbers were not put in
    quotes. (An answer that is the number alone becomes the marker unquoted,
    as any string that is a secret's value does.)"""
    monkeypatch.setenv("ACCOUNT_PIN", "48213957")
    ws = rook_workspace
    ws.script("numbers.py", NUMBER_ANSWERS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/numbers.py"},
                "env": [{"variable": "ACCOUNT_PIN", "purpose": "the account's PIN"}]})
    ws.scenario({"id": "number", "goal": "pin?", "criteria": [{"contains": "start"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"number": "passed"}, r.report["scenarios"]
    output = r.report["scenarios"][0]["turns"][0]["output"]
    assert [json.loads(line) for line in output.splitlines()] == [
        {"event": "start", "n": 7},
        {"account": "[redacted:ACCOUNT_PIN]", "note": "pin [redacted:ACCOUNT_PIN]"},
        {"ids": ["[redacted:ACCOUNT_PIN]"]}]
    assert "48213957" not in all_text(ws.runs_dir) + r.stdout + r.stderr



NODE_JSON_LINES = r"""
#!/usr/bin/env node
const pin = Number(process.env.ACCOUNT_PIN);
const lines = [{event: "start", note: "one\u2028two"}, {account: pin}];
// JSON.stringify writes U+2028 in a string as it is (JSON allows it)
process.stdout.write(JSON.stringify({output: lines.map((l) => JSON.stringify(l)).join("\n")}));
"""


def test_json_lines_with_a_line_separator_in_a_string_stay_json_lines(rook_workspace, rook_cli, monkeypatch):
    """A JSON Lines answer whose string holds U+2028 (Node's JSON.stringify
    writes it as it is) was read as lines at that character too (str.splitlines),
    so no line of it was JSON and its numeric secret became a bare marker:
    {"account": [redacted:ACCOUNT_PIN]}, no JSON any more."""
    monkeypatch.setenv("ACCOUNT_PIN", "48213957")
    ws = rook_workspace
    ws.script("lines.js", NODE_JSON_LINES)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/lines.js"},
                "env": [{"variable": "ACCOUNT_PIN", "purpose": "the account's PIN"}]})
    ws.scenario({"id": "lines", "goal": "pin?", "criteria": [{"contains": "start"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"lines": "passed"}, r.report["scenarios"]
    output = r.report["scenarios"][0]["turns"][0]["output"]
    assert [json.loads(line) for line in output.split("\n")] == [
        {"event": "start", "note": "one\u2028two"}, {"account": "[redacted:ACCOUNT_PIN]"}]
    assert "48213957" not in all_text(ws.runs_dir) + r.stdout + r.stderr


JQ_ANSWER = r"""
#!/usr/bin/env bash
cat > /dev/null
out=$(printf '[{"account": %s, "n": 1}, {"account": 7, "note": "ok"}]' "$ACCOUNT_PIN" | jq '.[]')
jq -n --arg o "$out" '{output: $o}'
"""


def test_json_documents_one_after_another_as_jq_prints_them_stay_json(
    rook_workspace, rook_cli, monkeypatch
):
    """jq prints each result as an indented document, one after another (as
    ``jq '.[]'`` does): no one JSON document, and no JSON Lines, so a numeric
    secret in one became a bare marker, "account": [redacted:ACCOUNT_PIN],
    and the text no longer read as JSON documents."""
    monkeypatch.setenv("ACCOUNT_PIN", "48213957")
    ws = rook_workspace
    ws.script("jq.sh", JQ_ANSWER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/jq.sh"},
                "env": [{"variable": "ACCOUNT_PIN", "purpose": "the account's PIN"}]})
    ws.scenario({"id": "jq", "goal": "pin?", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"jq": "passed"}, r.report["scenarios"]
    output = r.report["scenarios"][0]["turns"][0]["output"]
    decoder, docs, at = json.JSONDecoder(), [], 0
    while at < len(output):
        doc, at = decoder.raw_decode(output, at)
        docs.append(doc)
        at += len(output[at:]) - len(output[at:].lstrip())
    assert docs == [{"account": "[redacted:ACCOUNT_PIN]", "n": 1}, {"account": 7, "note": "ok"}]
    assert "48213957" not in all_text(ws.runs_dir) + r.stdout + r.stderr

def test_redactor_numbers_in_json_lines():
    from rook_core.redact import Redactor

    red = Redactor({"PIN": "48213957"})
    assert red.text("48213957") == "[redacted:PIN]"  # a string's value too (p=48213957)
    assert red.text('{"a": 1}\n{"b": 48213957}\n') == '{"a": 1}\n{"b": "[redacted:PIN]"}\n'
    assert red.text('{"a": 1}\r\n[48213957, 2]') == '{"a": 1}\r\n["[redacted:PIN]", 2]'
    # not JSON (a line of text among them, a number among words): as it is
    assert red.text('{"b": 48213957}\nok then') == '{"b": [redacted:PIN]}\nok then'
    assert red.text("48213957 is it") == "[redacted:PIN] is it"
    assert red.text("1234\n48213957") == "1234\n[redacted:PIN]"  # lines of numbers: text
    for sep in ("\u2028", "\x85"):  # in a string: not a line's end in JSON Lines
        text = '{"a": "x' + sep + 'y"}\n{"b": 48213957}'
        assert red.text(text) == '{"a": "x' + sep + 'y"}\n{"b": "[redacted:PIN]"}', repr(sep)
    # documents one after another, indented (jq) or not: each stays JSON
    assert red.text('{\n  "a": 48213957\n}\n{\n  "b": 1\n}') == (
        '{\n  "a": "[redacted:PIN]"\n}\n{\n  "b": 1\n}')
    assert red.text('{"a":48213957}{"b":[48213957]}') == (
        '{"a":"[redacted:PIN]"}{"b":["[redacted:PIN]"]}')
    assert red.text('{"a": 48213957}\n{"b": 1} and more') == '{"a": [redacted:PIN]}\n{"b": 1} and more'


def test_redactor_pieces_keep_a_kept_identifier_split_between_them():
    from rook_core.redact import Redactor

    red = Redactor({"PIN": "2026"})
    run = "20261206-221500-abcdef"
    red.keep(run)
    for cut in (2, 4, 6, 10):  # inside the year, just after it, further on
        assert red.pieces(["run " + run[:cut], run[cut:] + " ok"]) == ["run " + run[:cut], run[cut:] + " ok"]
        assert red.pieces(["pin 2026, run " + run[:cut], run[cut:] + " 2026"]) == [
            "pin [redacted:PIN], run " + run[:cut], run[cut:] + " [redacted:PIN]"]
    # three pieces, the middle one all inside the id; and a PIN right before the id's piece
    assert red.pieces(["2026" + run[:3], run[3:9], run[9:] + "2026"]) == [
        "[redacted:PIN]" + run[:3], run[3:9], run[9:] + "[redacted:PIN]"]


SURROGATES = r"""
#!/usr/bin/env python3
import json, os, re, sys
sys.stdin.read()
s, case = os.environ["API_TOKEN"], os.environ["ROOK_SCENARIO_ID"]
where, hexcase = case.split("-")
escaped = json.dumps(s)[1:-1]  # ensure_ascii: the key's character as \ud83d\udd11
if hexcase == "upper":  # as .NET's System.Text.Json writes it: \uD83D\uDD11
    escaped = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), escaped)
low = escaped.lower().index("\\udd11")
cut = {"between": low, "inside": low + 3, "after": low + 7}[where]
prefix = '{"output": "'
sys.stdout.write(prefix + "y" * (1024 - len(prefix) - cut) + escaped + "y" * 5000 + '"}')
"""


def test_a_cap_inside_a_surrogate_pair_of_a_secret_shows_no_piece_of_it(
    rook_workspace, rook_cli, monkeypatch
):
    """A secret holding a character past U+FFFF (an emoji) is written by a JSON
    encoder as a surrogate pair of \\u escapes (\\ud83d\\udd11). Cut by the output
    cap between the two, inside the second, or after them, its beginning was
    kept in the record when the hex was in capitals (.NET's System.Text.Json):
    each escape was read as a character of its own, which no character of the
    secret is (in lower case, the value's own JSON form found it)."""
    monkeypatch.setenv("API_TOKEN", "sk-li\U0001F511ve-Zq9s3cr3tv4lue77")
    ws = rook_workspace
    ws.script("pairs.py", SURROGATES)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/pairs.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}],
                "limits": {"stdout_bytes": 1024}})
    cases = [f"{where}-{hexcase}" for where in ("between", "inside", "after")
             for hexcase in ("lower", "upper")]
    for sid in cases:
        ws.scenario({"id": sid, "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    records = ws.runs_dir / r.report["run"]["id"] / "scenarios"
    for sid in cases:
        stdout = json.loads((records / f"{sid}.1.json").read_text())["hooks"][-1]["stdout"]
        assert stdout.endswith("y[redacted:API_TOKEN]"), (sid, stdout[-60:])
    seen = _undisguised(r.stdout + r.stderr + all_text(ws.runs_dir))
    assert "sk-li" not in seen and "\\ud83d" not in seen.lower()


def test_redactor_cut_short_reads_a_surrogate_pair_as_one_character():
    from rook_core.redact import Redactor

    red = Redactor({"K": "abc\U0001F511defgh"})
    for end in ("\\uD83D", "\\uD83D\\uDD", "\\ud83d\\udd11de", "\U0001F511de"):
        assert red.cut_short('out: "abc' + end) == 'out: "[redacted:K]', end
    assert red.cut_short('out: "ab\\uD83D') == 'out: "ab\\uD83D'  # no beginning of it


PERCENT_LETTERS = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
every = "".join(f"%{b:02X}" for b in s.encode())           # each byte %XX, as an agent may write it
one = s[:8] + f"%{ord(s[8]):02x}" + s[9:]                    # one letter so, lower-case hex
print(f"GET /v1/chat?key={one}", file=sys.stderr)
print(json.dumps({"output": f"sent https://api.example/?key={every}&x=1"}))
"""


def test_a_secret_with_letters_written_as_percent_escapes_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A URL may write any character percent-encoded, letters too (``%5A`` is
    ``Z``): only characters other than letters, digits, ``-``, ``_`` and ``.``
    were looked for so, so a key with a letter written ``%5a`` (or every
    character, as an agent that encodes whole values writes it) was recorded."""
    monkeypatch.setenv("API_TOKEN", "sk-live-Zq9s3cr3tv4lue77")
    ws = rook_workspace
    ws.script("pct.py", PERCENT_LETTERS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/pct.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "sent"}]})
    r = rook_cli("run", "--json")
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "sent https://api.example/?key=[redacted:API_TOKEN]&x=1", turn
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"].strip() == "GET /v1/chat?key=[redacted:API_TOKEN]", hook["stderr"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    for piece in ("q9s3cr3t", "%71%39%73%33", "sk-live-%5a"):
        assert piece not in said, piece


def test_redactor_letters_percent_encoded():
    from rook_core.redact import Redactor

    red = Redactor({"K": "sk-live-Zq9s3cr3t"})
    assert red.text("k=sk-live-%5Aq9s3cr3t") == "k=[redacted:K]"
    assert red.text("k=%73k%2Dlive-Zq9s3cr3t&") == "k=[redacted:K]&"
    assert red.text("k=sk-live-Zq9s3cr3t%2E") == "k=[redacted:K]%2E"  # after it: as it is
    assert red.cut_short("k=%73%6B%2D%6C%69") == "k=[redacted:K]"
    assert Redactor({"K": "abcd"}).text("%61bcd %2E") == "[redacted:K] %2E"


LONG_SECRET = r"""
#!/usr/bin/env python3
import base64, os, sys, urllib.parse
sys.stdin.read()
s = os.environ["BUNDLE"]
print("as is " + s + "\nquoted " + urllib.parse.quote(s, safe="") + "\nbase64 "
      + base64.b64encode(s.encode()).decode(), file=sys.stderr)
print('{"output": "bundle ' + s + ' ok", "escaped": "' + s.replace("/", "\\/") + '"}')  # as PHP writes it
"""


@pytest.mark.timeout(120)
def test_a_secret_of_100_kb_in_one_line_is_redacted_in_its_forms(rook_workspace, rook_cli, monkeypatch):
    """A value of 100 KB in one line (a certificate bundle, a credential file
    kept base64-encoded) took seconds to prepare in every run: a pattern for
    each of its mixed forms, a group for each character. It is found as it
    is, JSON-escaped, percent-encoded and base64-encoded as before (the mixed
    forms are looked for in values of up to 4,096 characters)."""
    import base64
    import random

    rng = random.Random(7)
    bundle = base64.b64encode(bytes(rng.randrange(256) for _ in range(75_000))).decode()
    monkeypatch.setenv("BUNDLE", bundle)
    ws = rook_workspace
    ws.script("long.py", LONG_SECRET)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/long.py"},
                "env": [{"variable": "BUNDLE", "purpose": "the CA bundle"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == "bundle [redacted:BUNDLE] ok"
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"].split("\n")[:3] == [
        "as is [redacted:BUNDLE]", "quoted [redacted:BUNDLE]", "base64 [redacted:BUNDLE]"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert bundle[1000:1040] not in said and bundle[1000:1040].replace("/", "\\/") not in said


LONG_SECRET_ENCODERS = r"""
#!/usr/bin/env python3
import os, sys
sys.stdin.read()
s = os.environ["KUBECONFIG_B64"]
gson = s.replace("=", "\\u003d")  # Gson escapes = < > & ' so
dotnet = s.replace("+", "\\u002B")  # .NET's System.Text.Json escapes + < > & ' " ` so
print('gson sent {"kubeconfig": "' + gson + '"}', file=sys.stderr)
print('dotnet sent {"kubeconfig":"' + dotnet + '"}', file=sys.stderr)
print('dotnet in php {"kubeconfig":"' + dotnet.replace("/", "\\/") + '"}', file=sys.stderr)
print('{"output": "ok"}')
"""


def test_a_long_secret_is_redacted_as_gson_and_dotnet_escape_it(rook_workspace, rook_cli, monkeypatch):
    """A value longer than 4,096 characters (a kubeconfig kept base64-encoded,
    6 KB) is no longer looked for with each character in a form of its own;
    Gson writes its every '=' as \\u003d and .NET's System.Text.Json its every
    '+' as \\u002B, one form for the whole value, which was shown whole."""
    import base64
    import random

    rng = random.Random(11)
    value = base64.b64encode(bytes(rng.randrange(256) for _ in range(5_000))).decode()
    assert "+" in value and "/" in value and value.endswith("=") and len(value) > 4096
    monkeypatch.setenv("KUBECONFIG_B64", value)
    ws = rook_workspace
    ws.script("enc.py", LONG_SECRET_ENCODERS)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/enc.py"},
                "env": [{"variable": "KUBECONFIG_B64", "purpose": "the cluster"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"].split("\n")[:3] == [
        'gson sent {"kubeconfig": "[redacted:KUBECONFIG_B64]"}',
        'dotnet sent {"kubeconfig":"[redacted:KUBECONFIG_B64]"}',
        'dotnet in php {"kubeconfig":"[redacted:KUBECONFIG_B64]"}',
    ], hook["stderr"][:300]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert value[1000:1040] not in said and value[1000:1040].replace("/", "\\/") not in said


def test_redactor_long_values_as_json_encoders_escape_them():
    from rook_core.redact import MIXED_MAX, Redactor

    value = ("a+b/c=d<e>f&g'h\"i`jé😀" * 300)[: MIXED_MAX + 50]
    red = Redactor({"V": value})
    gson = "".join(f"\\u{ord(c):04x}" if c in "<>&='" else c for c in value)
    gson = gson.replace('"', '\\"')
    assert red.text(gson) == "[redacted:V]"
    dotnet = []
    for c in value:
        if c in "+<>&'\"`" or c > "~":
            units = c.encode("utf-16-be")
            dotnet += [f"\\u{units[i] * 256 + units[i + 1]:04X}" for i in range(0, len(units), 2)]
        else:
            dotnet.append(c)
    assert red.text("".join(dotnet)) == "[redacted:V]"
    go = "".join(f"\\u{ord(c):04x}" if c in "<>&" else c for c in value).replace('"', '\\"')
    assert red.text(go) == "[redacted:V]"


GO_TEMPLATE = r"""
#!/usr/bin/env node
// Go's html/template escapes a value as it writes it into a page: in HTML text
// (htmlEscaper), in an unquoted attribute (htmlNospaceEscaper) and in a
// JavaScript string (jsStrEscaper: \u0026 since Go 1.9.5, \x26 before). These
// are its tables (src/html/template/html.go, js.go), applied as it does.
const html = {'"': "&#34;", "&": "&amp;", "'": "&#39;", "+": "&#43;", "<": "&lt;", ">": "&gt;"};
const attr = {...html, " ": "&#32;", "=": "&#61;", "`": "&#96;"};
const js = {'"': "\\u0022", "`": "\\u0060", "&": "\\u0026", "'": "\\u0027", "+": "\\u002b",
            "/": "\\/", "<": "\\u003c", ">": "\\u003e", "\\": "\\\\"};
const jsOld = {'"': "\\x22", "&": "\\x26", "'": "\\x27", "+": "\\x2b", "/": "\\/",
               "<": "\\x3c", ">": "\\x3e", "\\": "\\\\"};
const esc = (s, table) => [...s].map(c => table[c] ?? c).join("");
require("fs").readFileSync(0);
for (const name of ["SHORT_KEY", "LONG_KEY"]) {
  const v = process.env[name];
  process.stderr.write(`${name} <p>${esc(v, html)}</p>\n`);
  process.stderr.write(`${name} <a title=${esc(v, attr)}>\n`);
  process.stderr.write(`${name} <script>var k = "${esc(v, js)}";</script>\n`);
  process.stderr.write(`${name} <script>var k = "${esc(v, jsOld)}";</script>\n`);
}
console.log(JSON.stringify({output: "ok"}));
"""


def test_a_secret_written_by_gos_html_template_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """Go's html/template writes '+' as &#43; in HTML text (and ' ', '=', '`'
    as &#32;, &#61;, &#96; in an unquoted attribute), and older Go a JavaScript
    string's '+' as \\x2b: a base64 key (a '+' in it three times in four) was
    shown whole in a page a hook logged, short or long, and a value longer
    than 4,096 characters in every one of its forms there."""
    import base64
    import random

    rng = random.Random(5)
    long_key = base64.b64encode(bytes(rng.randrange(256) for _ in range(5_000))).decode() + "&'\""
    short_key = "Zq9+s3cr3t/v4lue= x`y&z<'q'>\"=="
    assert "+" in long_key and "/" in long_key and len(long_key) > 4096
    monkeypatch.setenv("SHORT_KEY", short_key)
    monkeypatch.setenv("LONG_KEY", long_key)
    ws = rook_workspace
    ws.script("page.cjs", GO_TEMPLATE)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/page.cjs"},
                "env": [{"variable": "SHORT_KEY", "purpose": "a key"},
                        {"variable": "LONG_KEY", "purpose": "a bundle"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    lines = hook["stderr"].split("\n")[:8]
    expected = []
    for name in ("SHORT_KEY", "LONG_KEY"):
        marker = f"[redacted:{name}]"
        expected += [f"{name} <p>{marker}</p>", f"{name} <a title={marker}>",
                     f'{name} <script>var k = "{marker}";</script>',
                     f'{name} <script>var k = "{marker}";</script>']
    assert lines == expected, [line[:120] for line in lines]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "s3cr3t" not in said and long_key[1000:1040].replace("+", "&#43;") not in said


PHP_HTMLENTITIES = r"""
#!/usr/bin/env node
// PHP's htmlentities() as a PHP agent writes a value into a page: with ENT_HTML5
// every character its table names is written as that named entity, '.' as
// &period;, '_' as &lowbar;, '+' as &plus;, "fj" as &fjlig; (ext/standard/
// html_tables.h, stage3_table_html5_00000 and _00040); with the default flags
// (ENT_HTML401) '&', quotes, '<', '>' and the letters of Latin-1 by their
// HTML 4 names (é as &eacute;). ENT_HTML5 without ENT_QUOTES leaves quotes be.
const html5 = {"\t": "Tab", "\n": "NewLine", "!": "excl", '"': "quot", "#": "num", "$": "dollar",
  "%": "percnt", "&": "amp", "'": "apos", "(": "lpar", ")": "rpar", "*": "ast", "+": "plus",
  ",": "comma", ".": "period", "/": "sol", ":": "colon", ";": "semi", "<": "lt", "=": "equals",
  ">": "gt", "?": "quest", "@": "commat", "[": "lbrack", "\\": "bsol", "]": "rsqb", "^": "Hat",
  "_": "lowbar", "`": "grave", "{": "lbrace", "|": "vert", "}": "rcub", "é": "eacute"};
const html401 = {"&": "amp", '"': "quot", "'": "#039", "<": "lt", ">": "gt", "é": "eacute"};
const php = (s, table, quotes = true) => s.replace(/fj|[^]/g, c =>
  c === "fj" && table === html5 ? "&fjlig;"
  : table[c] && (quotes || !"\"'".includes(c)) ? `&${table[c]};` : c);
require("fs").readFileSync(0);
const forms = [];
for (const name of ["TOKEN", "KEY"]) {
  const v = process.env[name];
  forms.push(php(v, html5), php(v, html5, false), php(v, html401));
}
for (const f of forms) process.stderr.write(`<td>${f}</td>\n`);
console.log(JSON.stringify({output: forms.join(" | ")}));
"""


def test_a_secret_written_by_phps_htmlentities_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """PHP's ``htmlentities($v, ENT_HTML5)`` writes every character its HTML5
    table names as that entity: a token's ``_`` as ``&lowbar;`` and ``.`` as
    ``&period;`` (letters, digits, '-', '_' and '.' were looked for only as they
    are), ``+`` as ``&plus;`` and ``/`` as ``&sol;`` (only numeric entities and
    the five of ``& < > " '`` were), ``fj`` as ``&fjlig;``; and its default
    (HTML 4) table ``é`` as ``&eacute;``. Such a page a hook logged or answered
    showed the secret whole in the record, the reports and the terminal."""
    token = "sk_live_4fjK.9Zq"  # only letters, digits, '_' and '.'
    key = "Zq9+s3cr3t/v4lu\u00e9=x&y<z>\"w'k_m.n"
    monkeypatch.setenv("TOKEN", token)
    monkeypatch.setenv("KEY", key)
    ws = rook_workspace
    ws.script("page.cjs", PHP_HTMLENTITIES)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/page.cjs"},
                "env": [{"variable": "TOKEN", "purpose": "a token"},
                        {"variable": "KEY", "purpose": "a key"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "TOKEN"}]})
    r = rook_cli("run", "--json")
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    expected = ["[redacted:TOKEN]"] * 3 + ["[redacted:KEY]"] * 3
    assert hook["stderr"].split("\n")[:6] == [f"<td>{m}</td>" for m in expected], hook["stderr"]
    assert r.report["scenarios"][0]["turns"][0]["output"] == " | ".join(expected)
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    for part in ("4fjK", "fjlig", "9Zq", "s3cr3t", "v4lu"):
        assert part not in said, f"{part} reached a record or the terminal"


ESCAPED_TWICE = r"""
#!/usr/bin/env python3
# A page that escapes a value twice (a template escaping what was escaped already:
# "&amp;lt;"), and JSON written into HTML (a data attribute: json.dumps, then
# html.escape, so the JSON's \" is \&quot;).
import html, json, os, sys
sys.stdin.read()
v = os.environ["PASSWORD"]
forms = [html.escape(html.escape(v)), html.escape(json.dumps(v)),
         html.escape(html.escape(json.dumps({"p": v})))]
for f in forms:
    sys.stderr.write(f"<div data-x='{f}'>\n")
print(json.dumps({"output": " | ".join(forms)}))
"""


def test_a_secret_escaped_twice_for_html_or_json_then_html_is_redacted(
    rook_workspace, rook_cli, monkeypatch
):
    """A password holding ``& < > "`` in a page that escapes it twice (``&amp;lt;``,
    a template escaping what was escaped already) or as JSON written into HTML (a
    data attribute: the JSON's ``\\"`` becomes ``\\&quot;``) was shown whole: each
    character was looked for in one form of JSON, of HTML or of both only as HTML
    inside JSON."""
    password = 'Zq9"p&ss<w0rd>\'x'
    monkeypatch.setenv("PASSWORD", password)
    ws = rook_workspace
    ws.script("twice.py", ESCAPED_TWICE)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/twice.py"},
                "env": [{"variable": "PASSWORD", "purpose": "a password"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "[redacted:PASSWORD]"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    marker = "[redacted:PASSWORD]"
    assert hook["stderr"].split("\n")[:3] == [
        f"<div data-x='{marker}'>", f"<div data-x='&quot;{marker}&quot;'>",
        f"<div data-x='{{&amp;quot;p&amp;quot;: &amp;quot;{marker}&amp;quot;}}'>",
    ], hook["stderr"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "p&amp;amp;ss" not in said and "w0rd" not in said


def test_redactor_html_and_javascript_escapes_of_any_character():
    from rook_core.redact import MIXED_MAX, Redactor

    red = Redactor({"V": "Zq9+s3cr3t/v4lue== x`y"})  # up to 4,096: each in a form of its own
    assert red.text("Zq9&#43;s3cr3t/v4lue&#61;&#x3D;&#32;x&#96;y") == "[redacted:V]"
    assert red.text("Zq9&#x2B;s3cr3t\\/v4lue&#61;\\x3d x\\x60y") == "[redacted:V]"
    assert red.text('{"page": "Zq9\\\\x2bs3cr3t/v4lue== x`y"}') == '{"page": "[redacted:V]"}'
    assert red.text("Zq9+s3cr3t/v4lue=\\x3") == "Zq9+s3cr3t/v4lue=\\x3"  # no whole value
    value = ("a+b/c=d e`f&g'h\"i<j>k\\l" * 200)[: MIXED_MAX + 9]  # longer: Go's tables, whole
    red = Redactor({"V": value})
    html = {'"': "&#34;", "&": "&amp;", "'": "&#39;", "+": "&#43;", "<": "&lt;", ">": "&gt;"}
    attr = {**html, " ": "&#32;", "=": "&#61;", "`": "&#96;"}
    js = {'"': "\\x22", "&": "\\x26", "'": "\\x27", "+": "\\x2b", "/": "\\/",
          "<": "\\x3c", ">": "\\x3e", "\\": "\\\\"}
    for table in (html, attr, js):
        escaped = "".join(table.get(c, c) for c in value)
        assert red.text(escaped) == "[redacted:V]"
        assert red.text(json.dumps({"page": escaped})) == '{"page": "[redacted:V]"}'


def test_redactor_mixed_forms_up_to_their_length():
    from rook_core.redact import MIXED_MAX, Redactor

    for n, found in ((MIXED_MAX, True), (MIXED_MAX + 1, False)):
        value = "a/b=" * (n // 4) + "c" * (n % 4)
        red = Redactor({"V": value})
        mixed = value.replace("/", "%2F", 1)  # one character encoded, the others not
        assert (red.text(mixed) == "[redacted:V]") is found, n
        whole = value.replace("/", "%2F").replace("=", "%3D")  # all of them, as quote() does
        assert red.text(whole) == "[redacted:V]"
        assert red.text('"' + value.replace("/", "\\/") + '"') == '"[redacted:V]"'


ESCAPED_IN_URL = r"""
#!/usr/bin/env python3
import html, json, os, re, sys, urllib.parse
sys.stdin.read()
s = os.environ["API_TOKEN"]
as_json = urllib.parse.quote(json.dumps(s), safe="")        # %22Zq9%5C%22s3...%22
as_html = urllib.parse.quote_plus(html.escape(s))          # Zq9%26quot%3Bs3...
print(f"GET /v1/chat?filter={as_json}", file=sys.stderr)
print(json.dumps({"output": f"sent https://api.example/?q={as_html}&x=1",
                  "url": "https://api.example/?f=" + re.sub("%..", lambda m: m[0].lower(), as_json)}))
"""


def test_a_secret_json_or_html_escaped_then_percent_encoded_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A hook that puts ``json.dumps(value)`` or an HTML-escaped value into a
    URL's query writes a ``"`` of the value as ``%5C%22`` or ``%26quot%3B``, a
    ``\\`` as ``%5C%5C``, a tab as ``%5Ct``, ``ü`` as ``%5Cu00fc``: none of these
    was looked for, so the value reached the records and the terminal."""
    monkeypatch.setenv("API_TOKEN", 'Zq9"s3\\cr3t&\u00fc\tX7<v>')
    ws = rook_workspace
    ws.script("esc.py", ESCAPED_IN_URL)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/esc.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "sent"}]})
    r = rook_cli("run", "--json")
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "sent https://api.example/?q=[redacted:API_TOKEN]&x=1", turn
    assert turn["evidence"] == {"url": "https://api.example/?f=%22[redacted:API_TOKEN]%22"}, turn
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"].strip() == "GET /v1/chat?filter=%22[redacted:API_TOKEN]%22", hook["stderr"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    for piece in ("s3%5C", "s3%5c", "cr3t%26", "Zq9%5C", "Zq9%26"):
        assert piece not in said, piece


def test_redactor_escaped_then_percent_encoded():
    import html
    import json

    from rook_core.redact import Redactor

    value = 'ab"cd\\ef\n\u00e9\U0001f511/&<'
    red = Redactor({"K": value})
    shown = [
        urllib.parse.quote(json.dumps(value)[1:-1], safe=""),
        urllib.parse.quote(json.dumps(value, ensure_ascii=False)[1:-1], safe=""),
        urllib.parse.quote(json.dumps(value)[1:-1]).lower(),
        urllib.parse.quote(html.escape(value), safe=""),
        urllib.parse.quote_plus(html.escape(value).replace("&#x27;", "&#39;")),
        urllib.parse.quote(html.escape(value)).replace("%26", "&"),  # some escapes left as they are
        "ab%26%2334%3Bcd%5C%5Cef%5Cn%26eacute%3B%5Cud83d%5CuDD11%5C%2F%26amp%3B%26lt%3B",
    ]
    for text in shown:
        assert red.text(f"q={text}&x=1") == "q=[redacted:K]&x=1", text
    # a value longer than the mixed forms are made for: each written whole one way
    long_value = ('"\\' + "x" * 40) * 120
    red = Redactor({"L": long_value})
    for text in (urllib.parse.quote(json.dumps(long_value)[1:-1], safe=""),
                 urllib.parse.quote(html.escape(long_value), safe="").lower()):
        assert red.text(f"q={text}&") == "q=[redacted:L]&"
    # a letter, a digit, `-`, `_` or `.` has no escape of its own to look for
    assert Redactor({"T": "plain-token-1"}).text("plain%5Cu002dtoken-1") == "plain%5Cu002dtoken-1"


NUMBERS_AROUND = r"""
#!/usr/bin/env python3
import json, os, sys
phase = sys.argv[1]
pin = int(os.environ["PIN"])
if phase == "execute":
    sys.stdin.read()
    print(json.dumps({"output": "ok", "balance": -pin, "ratio": pin + 0.5, "ref": pin * 10 + 7,
                      "usage": {"input": 10, "output": 2, "cached": pin * 100},
                      "calls": [{"name": "pay", "arguments": {"amount": -pin}}]}))
elif phase == "collect":
    print(json.dumps({"trace": {"ids": [pin * 1000 + 1]}}))
"""


def test_a_number_a_hook_prints_holding_a_secret_among_its_digits_is_redacted(
    rook_workspace, rook_cli, monkeypatch
):
    """A numeric secret among a JSON number's digits (``-48213957``,
    ``48213957.5``, ``482139570``) was masked in the hook's standard output as
    the record keeps it, but kept whole in what Rook parsed from it (the turn's
    evidence, usage and calls, what collect gave): only a number equal to the
    secret became the marker there. Rook's own numbers (a hook's start time)
    are never so changed."""
    monkeypatch.setenv("PIN", "48213957")
    ws = rook_workspace
    ws.script("num.py", NUMBERS_AROUND)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/num.py", "collect": "scripts/num.py"},
                "env": [{"variable": "PIN", "purpose": "account pin"}],
                "capabilities": {"calls": True, "usage": True}})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["evidence"] == {"balance": "-[redacted:PIN]", "ratio": "[redacted:PIN].5",
                                "ref": "[redacted:PIN]7"}, turn
    assert turn["usage"] == {"input": 10, "output": 2, "cached": "[redacted:PIN]00"}, turn
    assert turn["calls"] == [{"name": "pay", "arguments": {"amount": "-[redacted:PIN]"}}], turn
    record = ws.record(r.report["run"]["id"], "s.1")
    assert record["collected"] == {"evidence": {"trace": {"ids": ["[redacted:PIN]001"]}}}, record["collected"]
    assert all(isinstance(h["started"], float) for h in record["hooks"]), record["hooks"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "48213957" not in said
    shown = rook_cli("report", r.report["run"]["id"], "--rebuild", "--report", "markdown:-")
    assert shown.exit_code == 0 and "48213957" not in shown.stdout, shown.stdout + shown.stderr



PAYER = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
pin = int(os.environ["PIN"])
print(json.dumps({"output": "ok", "calls": [{"name": "pay", "arguments": {"amount": -pin}}]}))
"""


def test_a_criterion_number_holding_a_secret_among_its_digits_is_refused(rook_workspace, rook_cli, monkeypatch):
    """A call's argument holding a numeric secret among its digits is recorded
    as ``"-[redacted:PIN]"`` (what a hook printed), and criteria judge the
    record: ``called: {name: pay, arguments: {amount: -48213957}}`` failed
    though the agent made exactly that call (a ``not_called`` would pass on
    it); only a number equal to the secret was refused. Such a number is
    refused too, saying how the record holds it."""
    monkeypatch.setenv("PIN", "48213957")
    ws = rook_workspace
    ws.script("pay.py", PAYER)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/pay.py"}, "capabilities": {"calls": True},
                "env": [{"variable": "PIN", "purpose": "account pin"}]})
    ws.scenario({"id": "s", "goal": "hi",
                 "criteria": [{"called": {"name": "pay", "arguments": {"amount": -48213957}}}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "criteria.0.called: holds the value of the profile env variable PIN" in r.stderr, r.stderr
    assert '"-[redacted:PIN]"' in r.stderr and "48213957" not in r.stdout + r.stderr
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"max_calls": 148213957}]})  # a limit: runs
    assert rook_cli("run").exit_code == 0

KEYED = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
token = os.environ["API_TOKEN"]
print(json.dumps({"output": "ok", "calls": [{"name": "lookup", "arguments": {token: 1}}]}))
"""


@pytest.mark.parametrize("criterion", ["called", "not_called", "claim"])
def test_a_criterion_with_a_secret_as_an_argument_s_name_is_refused(
    rook_workspace, rook_cli, monkeypatch, criterion
):
    """A scenario file holding a secret as a call argument's name
    (``called: {name: lookup, arguments: {SECRET: 1}}``) ran, though the same
    secret as the argument's value is refused (a scenario file is shared and
    kept). Both are refused now, saying how the record holds it; written so,
    with the marker as the name, it is judged on the record."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("keyed.py", KEYED)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/keyed.py"}, "capabilities": {"calls": True},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})

    def written(name):
        call = {"name": "lookup", "arguments": {name: 1}}
        return {"claim": {"says": "ok", "requires_call": call}} if criterion == "claim" else {criterion: call}

    ws.scenario({"id": "s", "goal": "hi", "criteria": [written(SECRET)]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"criteria.0.{criterion}: holds the value of the profile env variable API_TOKEN" in r.stderr
    assert '{"[redacted:API_TOKEN]": 1}' in r.stderr, r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())
    ws.scenario({"id": "s", "goal": "hi", "criteria": [written("[redacted:API_TOKEN]")]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "failed" if criterion == "not_called" else "passed"}, r.stdout + r.stderr
    assert SECRET not in all_text(ws.runs_dir) + r.stdout + r.stderr


def test_redactor_numbers_holding_a_secret_in_what_a_hook_printed():
    from rook_core.redact import Redactor

    red = Redactor({"PIN": "2026"})
    record = {"started": 1796614501.2026, "seconds": 2026.5, "turn": 12026,
              "data": {"n": 120260, "deep": [{"m": -2026.25}], "ok": 77},
              "evidence": {"x": 2026}, "usage": {"input": 20261}}
    assert red.data(record) == {
        "started": 1796614501.2026, "seconds": 2026.5, "turn": 12026,  # Rook's own: as they are
        "data": {"n": "1[redacted:PIN]0", "deep": [{"m": "-[redacted:PIN].25"}], "ok": 77},
        "evidence": {"x": "[redacted:PIN]"}, "usage": {"input": "[redacted:PIN]1"},
    }
    assert Redactor({"K": "sk-token-1"}).data({"data": {"n": 20261}}) == {"data": {"n": 20261}}



COST_AROUND = r"""
#!/usr/bin/env python3
import json, os, sys
phase = sys.argv[1]
pin = int(os.environ["PIN"])
if phase == "execute":
    sys.stdin.read()
    print(json.dumps({"output": "ok", "usage": {"input": 10, "output": 2, "cost_usd": 0.5}}))
elif phase == "collect":  # the whole scenario's usage: a cost holding the PIN among its digits
    print(json.dumps({"usage": {"input": pin * 100, "output": 2, "cost_usd": float(f"1.{pin}")}}))
"""


def test_a_cost_or_count_redacted_for_holding_a_secret_leaves_the_criteria_unverifiable(
    rook_workspace, rook_cli, monkeypatch
):
    """A cost or a token count that holds a numeric secret among its digits is
    recorded as a string (``"1.[redacted:PIN]"``), and criteria judge the
    record: ``max_cost`` raised a TypeError on it (the scenario an error, the
    traceback's words as its reason); it is ``unverifiable`` now, saying the
    cost was redacted, as ``max_tokens`` says of a count."""
    monkeypatch.setenv("PIN", "48213957")
    ws = rook_workspace
    ws.script("cost.py", COST_AROUND)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/cost.py", "collect": "scripts/cost.py"},
                "env": [{"variable": "PIN", "purpose": "account pin"}],
                "capabilities": {"usage": True}})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}, {"max_cost": 5.0},
                                                      {"max_tokens": {"input": 100}}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "unverifiable"}, r.stdout + r.stderr
    verdicts = {v["type"]: v for v in r.report["scenarios"][0]["criteria"]}
    assert verdicts["max_cost"]["status"] == "unverifiable", verdicts
    assert "cost_usd redacted: it holds the value of a profile env variable" in verdicts["max_cost"]["reason"]
    assert verdicts["max_tokens"]["status"] == "unverifiable", verdicts
    assert "input redacted: it holds the value of a profile env variable" in verdicts["max_tokens"]["reason"]
    assert "48213957" not in all_text(ws.runs_dir) + r.stdout + r.stderr

CASED = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s, w = os.environ["API_TOKEN"], os.environ["PASSPHRASE"]
print(f"LOGIN WITH {s.upper()} / {w.upper()}", file=sys.stderr)
print(json.dumps({"output": f"key {s.lower()} words {w.title()}", "k": s.upper()}))
"""


def test_a_secret_an_agent_prints_in_upper_or_lower_case_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """An agent that shouts or folds a value (``.upper()``, ``tr a-z A-Z``, a
    header name's value lower-cased) printed it in the clear: a token of mixed
    case shown in one case gives away all but its letters' case."""
    monkeypatch.setenv("API_TOKEN", "sk-live-Hq7ZpX3vR9mK2wLt")
    monkeypatch.setenv("PASSPHRASE", "correct Horse bättery staple")
    ws = rook_workspace
    ws.script("cased.py", CASED)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/cased.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"},
                        {"variable": "PASSPHRASE", "purpose": "vault passphrase"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "key"}]})
    r = rook_cli("run", "--json")
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "key [redacted:API_TOKEN] words [redacted:PASSPHRASE]", turn
    assert turn["evidence"] == {"k": "[redacted:API_TOKEN]"}, turn
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"].strip() == "LOGIN WITH [redacted:API_TOKEN] / [redacted:PASSPHRASE]"
    said = (all_text(ws.runs_dir) + r.stdout + r.stderr).lower()
    for piece in ("hq7zpx3vr9mk2wlt", "horse", "b\\u00e4ttery"):
        assert piece not in said, piece



CASED_CAP = r"""
#!/usr/bin/env python3
import os, sys
sys.stdin.read()
# the 1024-byte cap falls inside the token, shouted: SK-LIVE-HQ7ZPX3V|R9MK2WLT
sys.stdout.buffer.write(b"y" * (1024 - 16) + os.environ["API_TOKEN"].upper().encode() + b"y" * 3000)
"""


def test_an_output_cap_inside_a_secret_in_another_case_shows_no_piece(rook_workspace, rook_cli, monkeypatch):
    """A secret printed upper-cased and cut by an output cap: its beginning at
    the end of what was kept (``SK-LIVE-HQ7ZPX3V``, two thirds of the token) was
    left in the clear, as only its forms in its own case were looked for there."""
    monkeypatch.setenv("API_TOKEN", "sk-live-Hq7ZpX3vR9mK2wLt")
    ws = rook_workspace
    ws.script("cap.py", CASED_CAP)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/cap.py"}, "limits": {"stdout_bytes": 1024},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    hook = ws.record(r.report["run"]["id"], "s.1")["hooks"][0]
    assert hook["stdout"].endswith("y[redacted:API_TOKEN]"), hook["stdout"][-60:]
    assert "HQ7Z" not in (all_text(ws.runs_dir) + r.stdout + r.stderr).upper()


def test_redactor_cut_short_finds_a_beginning_in_another_case():
    from rook_core.redact import Redactor

    red = Redactor({"K": "sk-live-Hq7ZpX3vR9mK2wLt", "S": "Abcd-123"})
    assert red.cut_short("token SK-LIVE-HQ7ZPX3V") == "token [redacted:K]"
    assert red.cut_short("token sk-live-hq7z") == "token [redacted:K]"
    assert red.cut_short("token SK-") == "token SK-"  # 3 characters: kept, as in its own case


CASED_KEY = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["API_TOKEN"]
print(json.dumps({"output": "ok", "seen": {s.upper(): "header", "x_" + s.lower(): 1}}))
"""


def test_a_secret_in_another_case_as_a_field_name_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A token upper-cased as a field name of what a hook printed (a header map,
    an environment dump) was masked in the hook's standard output but kept in
    the evidence Rook parsed from it: field names were looked for in the
    value's own case only."""
    monkeypatch.setenv("API_TOKEN", "ghp_Zq9sEcrEt4812")
    ws = rook_workspace
    ws.script("key.py", CASED_KEY)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/key.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["evidence"] == {"seen": {"[redacted:API_TOKEN]": "header", "x_[redacted:API_TOKEN]": 1}}, turn
    assert "zq9secret4812" not in (all_text(ws.runs_dir) + r.stdout + r.stderr).lower()

def test_redactor_cased_forms():
    from rook_core.redact import Redactor

    red = Redactor({"K": "Zq9-S3cr3t-v4lue", "S": "Abcd", "W": "Grüße Straße"})
    assert red.text("ZQ9-S3CR3T-V4LUE zq9-s3cr3t-v4lue") == "[redacted:K] [redacted:K]"
    assert red.text('{"w": "GR\\u00dcSSE STRASSE"}') == '{"w": "[redacted:W]"}'
    assert red.text("grüße straße") == "[redacted:W]"
    assert red.text("ABCD abcd") == "ABCD abcd"  # under 8 characters: a word, perhaps



NAMED_LIKE = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
p = os.environ["DB_PASSWORD"]
print("connecting with " + p.upper(), file=sys.stderr)
print(json.dumps({"output": "ok, used " + p, "calls": [{"name": "login", "arguments": {"pw": p}}]}))
"""


def test_a_secret_inside_its_variables_name_in_another_case_leaves_names_and_markers_whole(
    rook_workspace, rook_cli, monkeypatch
):
    """``DB_PASSWORD=password`` (a test database's): since secrets of 8
    characters are found in any case, ``PASSWORD`` in the variable's name was
    masked wherever Rook wrote it, the marker too when a text was redacted
    again: the record held ``[redacted:DB_[redacted:DB_PASSWORD]]``, the run's
    profile.yaml ``variable: DB_[redacted:DB_PASSWORD]``, a message named
    ``DB_[redacted:DB_PASSWORD]``. A variable's name and a marker are Rook's
    own words (the name is in every marker anyway), kept whole."""
    monkeypatch.setenv("DB_PASSWORD", "password")
    ws = rook_workspace
    ws.script("named.py", NAMED_LIKE)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/named.py"}, "capabilities": {"calls": True},
                "env": [{"variable": "DB_PASSWORD", "purpose": "test database"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}, {"called": "login"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    run_id = r.report["run"]["id"]
    record = ws.record(run_id, "s.1")
    assert record["turns"][0]["output"] == "ok, used [redacted:DB_PASSWORD]", record["turns"][0]
    assert record["hooks"][0]["stderr"].strip() == "connecting with [redacted:DB_PASSWORD]"
    shown = rook_cli("report", run_id, "--rebuild", "--report", f"markdown:{ws.root / 'r.md'}")
    assert shown.exit_code == 0, shown.stderr
    markdown = (ws.root / "r.md").read_text(encoding="utf-8")
    said = all_text(ws.runs_dir) + r.stdout + r.stderr + markdown
    assert "variable: DB_PASSWORD" in (ws.run_dir(run_id) / "profile.yaml").read_text()
    at = said.find("DB_[redacted")
    assert at == -1, said[at - 300 : at + 100]
    assert "password" not in said.replace("DB_PASSWORD", "")
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"not_contains": "Password"}]})
    refused = rook_cli("run")
    assert refused.exit_code == 2 and "env variable DB_PASSWORD," in refused.stderr, refused.stderr
    assert "DB_[redacted" not in refused.stderr, refused.stderr


def test_redactor_keeps_variable_names_and_markers_whole():
    from rook_core.redact import Redactor

    red = Redactor({"DB_PASSWORD": "password", "K": "Redacted-x"})
    once = red.text("pw password PASSWORD Redacted-x; set DB_PASSWORD")
    assert once == "pw [redacted:DB_PASSWORD] [redacted:DB_PASSWORD] [redacted:K]; set DB_PASSWORD"
    assert red.text(once) == once
    assert red.data({"output": once}) == {"output": once}
    assert Redactor({"K": "REDACTED"}).text("[redacted:K] redacted") == "[redacted:K] [redacted:K]"
    # what an agent writes as a marker holding a secret is no marker: the secret is masked
    assert Redactor({"K": "sk_live_Zq9x"}).text("[redacted:sk_live_Zq9x]") == "[redacted:[redacted:K]]"

NODE_INSPECT = r"""
const s = process.env.API_TOKEN, t = process.env.TAB_KEY;
console.error({token: s});                    // util.inspect: `Zq9\\k"y't-77ab` in backticks
console.error("keys", [s, t]);                // 'tab\tkey\\y-123' in single quotes
console.log(JSON.stringify({output: "ok " + require("util").inspect({s, t})}));
"""


def test_a_secret_node_prints_in_an_object_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """Node's ``console.log(obj)`` (``util.inspect``) writes a string with its
    backslashes doubled and a control character escaped (``\\t``, ``\\x1B``) but
    its quotes as they are, in backticks when it holds both ``'`` and ``"``: a
    form no JSON encoder, Python's ``repr`` or a shell writes, so a secret
    holding a backslash reached the record from a hook logging its config."""
    monkeypatch.setenv("API_TOKEN", 'Zq9\\k"y\'t-77ab')
    monkeypatch.setenv("TAB_KEY", "tab\tkey\\y-123")
    ws = rook_workspace
    ws.script("inspect.cjs", NODE_INSPECT, executable=False)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/inspect.cjs"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"},
                        {"variable": "TAB_KEY", "purpose": "other key"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "ok { s: `[redacted:API_TOKEN]`, t: '[redacted:TAB_KEY]' }", turn
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"] == ("{ token: `[redacted:API_TOKEN]` }\n"
                              "keys [ `[redacted:API_TOKEN]`, '[redacted:TAB_KEY]' ]\n"), hook["stderr"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    for piece in ("Zq9", "77ab", "tab\\\\tkey", "y-123"):
        assert piece not in said, piece


def test_redactor_node_inspect_forms():
    from rook_core.redact import Redactor

    red = Redactor({"K": "a\\b'c\"d-1234", "A": "a\\b'c\"d`e-1234", "C": "ctl\x1b\x7fch\\r"})
    assert red.text("`a\\\\b'c\"d-1234`") == "`[redacted:K]`"
    assert red.text("'a\\\\b\\'c\"d`e-1234'") == "'[redacted:A]'"  # all three quotes: ' escaped
    assert red.text("'ctl\\x1B\\x7Fch\\\\r'") == "'[redacted:C]'"


NORMALIZED = r"""
#!/usr/bin/env python3
import json, os, sys, unicodedata
sys.stdin.read()
s = os.environ["PASSPHRASE"]
nfd = unicodedata.normalize("NFD", s)
print("login as " + nfd, file=sys.stderr)  # as a macOS file name or a NFD-normalising library gives it
print(json.dumps({"output": "ok " + nfd, "raw": nfd}, ensure_ascii=False))
"""


def test_a_secret_printed_decomposed_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A value with an accented letter printed in its decomposed form (NFD:
    ``u`` then a combining diaeresis, as macOS writes file names and some
    libraries normalise text) is the same text, canonically equivalent, and
    Rook's own ``contains`` reads it so; it was not found, and reached the
    record and the terminal."""
    monkeypatch.setenv("PASSPHRASE", "Grüße-Schlüssel-Zq9é")
    ws = rook_workspace
    ws.script("nfd.py", NORMALIZED)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/nfd.py"},
                "env": [{"variable": "PASSPHRASE", "purpose": "vault passphrase"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "ok [redacted:PASSPHRASE]", turn
    assert turn["evidence"] == {"raw": "[redacted:PASSPHRASE]"}, turn
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"].strip() == "login as [redacted:PASSPHRASE]", hook["stderr"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    for piece in ("Schlu", "ssel-Zq9", "u\u0308", "u\\u0308"):
        assert piece not in said, piece


def test_redactor_normalized_forms():
    import unicodedata

    from rook_core.redact import Redactor

    red = Redactor({"D": "Zq9-caf\u00e9-key", "C": "Zq9-nai\u0308ve-key"})  # composed, decomposed
    assert red.text(unicodedata.normalize("NFD", "x Zq9-caf\u00e9-key y")) == "x [redacted:D] y"
    assert red.text("x Zq9-na\u00efve-key y") == "x [redacted:C] y"
    assert red.text('"Zq9-cafe\\u0301-key"') == '"[redacted:D]"'


NESTED_URL = r"""
#!/usr/bin/env python3
import json, os, sys, urllib.parse
sys.stdin.read()
s = os.environ["API_TOKEN"]
inner = "https://app.example/cb?key=" + urllib.parse.quote(s, safe="")
outer = "https://login.example/authorize?redirect_uri=" + urllib.parse.quote(inner, safe="")
print("redirecting to " + outer, file=sys.stderr)
print(json.dumps({"output": "go to " + outer}))
"""


def test_a_secret_percent_encoded_twice_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A URL holding a secret in its query, itself sent in another URL's query
    (an OAuth ``redirect_uri``, a login page's ``next=``), is percent-encoded
    twice: ``@`` as ``%2540``, a space as ``%2520``; that form was not looked
    for, and the secret reached the record and the terminal."""
    monkeypatch.setenv("API_TOKEN", "Zq9@s3cr3t/v4l ue+77")
    ws = rook_workspace
    ws.script("nested.py", NESTED_URL)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/nested.py"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "go to"}]})
    r = rook_cli("run", "--json")
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == ("go to https://login.example/authorize?redirect_uri="
                              "https%3A%2F%2Fapp.example%2Fcb%3Fkey%3D[redacted:API_TOKEN]"), turn
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    for piece in ("Zq9%25", "s3cr3t%25", "v4l%25"):
        assert piece not in said, piece


def test_redactor_percent_encoded_twice():
    from rook_core.redact import Redactor

    red = Redactor({"K": "a@b c/\u00e4-1234"})
    for shown in ("a%2540b%2520c%252F%25C3%25A4-1234", "a%2540b%252Bc%252f%25c3%25a4-1234",
                  "a%2540b+c/%25C3%25A4-1234"):
        assert red.text(f"u={shown}&") == "u=[redacted:K]&", shown



def test_redactor_cut_short_finds_a_beginning_percent_encoded_twice_or_escaped_then_encoded():
    """Output cut inside a secret percent-encoded twice (a redirect_uri's) or
    JSON-escaped and then percent-encoded kept its beginning in the clear
    (``Zq9%2540s3cr3t%252Fv``: ``Zq9@s3cr3t/v``): cut_short read one layer of
    percent-escapes only."""
    import json
    import urllib.parse

    from rook_core.redact import Redactor

    value = 'Zq9@s3cr3t/v4l ue+77"x\\y'
    red = Redactor({"K": value})
    twice = urllib.parse.quote(urllib.parse.quote(value, safe=""), safe="")
    escaped = urllib.parse.quote(json.dumps(value)[1:-1], safe="")
    for form in (twice, escaped):
        assert red.text(f"x {form} y") == "x [redacted:K] y", form
        for k in (len(form) // 2, len(form) - 4, len(form) - 1):
            assert red.cut_short("x " + form[:k]) == "x [redacted:K]", form[:k]
    assert red.cut_short("x a%2540b") == "x a%2540b"  # no secret's beginning

MOJIBAKE = r"""
#!/usr/bin/env python3
import json, os, sys
sys.stdin.read()
s = os.environ["PASSPHRASE"]
sys.stderr.reconfigure(encoding="cp1252")                 # a Windows or Java console's charset
print("login as " + s, file=sys.stderr)
garbled = s.encode("utf-8").decode("cp1252")             # UTF-8 read as cp1252, written again
print(json.dumps({"output": "ok " + garbled, "raw": s.encode("utf-8").decode("latin-1")}))
"""


def test_a_secret_printed_in_another_charset_is_redacted(rook_workspace, rook_cli, monkeypatch):
    """A hook that writes a value with accented letters in cp1252 or Latin-1
    (a Windows or Java console's charset), which Rook reads as UTF-8 (each
    such letter becomes U+FFFD), or that read its UTF-8 bytes as one of those
    and wrote them again (``GrÃ¼ÃŸe``), left every other letter of the value
    in the record and on the terminal."""
    monkeypatch.setenv("PASSPHRASE", "Grüße-Schlüssel-Zq9é")
    ws = rook_workspace
    ws.script("charset.py", MOJIBAKE)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/charset.py"},
                "env": [{"variable": "PASSPHRASE", "purpose": "vault passphrase"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    turn = r.report["scenarios"][0]["turns"][0]
    assert turn["output"] == "ok [redacted:PASSPHRASE]", turn
    assert turn["evidence"] == {"raw": "[redacted:PASSPHRASE]"}, turn
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert hook["stderr"].strip() == "login as [redacted:PASSPHRASE]", hook["stderr"]
    said = all_text(ws.runs_dir) + r.stdout + r.stderr
    assert "ssel-Zq9" not in said


def test_redactor_charset_forms():
    from rook_core.redact import Redactor

    value = "Grüße-Schlüssel-Zq9é"
    red = Redactor({"P": value})
    for shown in (value.encode("latin-1").decode("utf-8", "replace"),
                  value.encode("utf-8").decode("latin-1"), value.encode("utf-8").decode("cp1252")):
        assert red.text(f"x {shown} y") == "x [redacted:P] y", shown
    assert Redactor({"A": "plain-ascii-1"}).text("plain-ascii-1") == "[redacted:A]"
    # a value whose Latin-1 form read as UTF-8 is mostly U+FFFD is not looked for so:
    # it would be any run of invalid bytes
    garbage = bytes(range(0x80, 0x90)).decode("utf-8", "replace")
    assert Redactor({"U": "ÄÖÜß"}).text(garbage) == garbage
    assert Redactor({"U": "ÄÖÜß-äöü"}).text(f"x {garbage} y") == f"x {garbage} y"
    assert Redactor({"Z": "Zürich-1"}).text("Z\ufffdrich-1") == "[redacted:Z]"


BINARY = r"""
#!/usr/bin/env python3
import sys
sys.stdin.read()
sys.stderr.buffer.write(b"frame: " + bytes(range(0x80, 0xA0)) + b"\n")  # a hook dumping binary
print('{"output": "ok"}')
"""


def test_binary_output_is_not_taken_for_a_secret_of_accented_letters(rook_workspace, rook_cli, monkeypatch):
    """A secret of accented letters only (ÄÖÜß), written in Latin-1 and read as
    UTF-8, is a run of U+FFFD, as any invalid bytes are: a hook printing binary
    had its output masked as that secret, in the record and the terminal."""
    monkeypatch.setenv("PIN_WORD", "ÄÖÜß")
    ws = rook_workspace
    ws.script("binary.py", BINARY)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/binary.py"},
                "env": [{"variable": "PIN_WORD", "purpose": "vault word"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "--json")
    [hook] = ws.record(r.report["run"]["id"], "s.1")["hooks"]
    assert "[redacted:PIN_WORD]" not in hook["stderr"] and "\ufffd" * 8 in hook["stderr"], hook["stderr"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be"])
def test_a_secret_a_hook_prints_in_utf_16_is_redacted(codec, rook_workspace, rook_cli, monkeypatch):
    # A hook that prints UTF-16 (PowerShell's Out-File, Windows tools) fails as "is UTF-16
    # text", but its output, read as UTF-8, kept the secret in the record with a NUL beside
    # each letter ("S\u0000u\u0000p..."), which the redactor never looked for.
    monkeypatch.setenv("SEC", "Wide-s3cr3t-88")
    ws = rook_workspace
    ws.script("wide.py", f"""
        #!/usr/bin/env python3
        import os, sys
        sys.stdin.read()
        if sys.argv[1] == "execute":
            said = '{{"output": "token ' + os.environ["SEC"] + '"}}'
            sys.stdout.buffer.write(said.encode("{codec}"))
            sys.stderr.buffer.write(("error: " + os.environ["SEC"]).encode("{codec}"))
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/wide.py"},
                "env": [{"variable": "SEC", "purpose": "a key"}]})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "zzz"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "error"}, r.stderr
    text = all_text(ws.runs_dir) + r.stdout + r.stderr
    for shown in ("\x00".join("s3cr3t"), "\\u0000".join("s3cr3t")):
        assert shown not in text, text
    assert "UTF-16" in text


CUTTING_AUTHOR = r"""
import json, os, sys
sys.stdin.read()
value = os.environ["API_TOKEN"]
how = os.environ["CUT"]
if how == "said":  # no script: the start of what it said is quoted
    print("y" * 295 + value + " is what I read")
elif how == "stderr":  # a failure: the end of its standard error is quoted
    print(value + "z" * 495, file=sys.stderr)
    sys.exit(3)
else:  # a JSON answer whose phases or env item is no phase or variable
    item = "q" * 95 + value
    print(json.dumps({"output": "#!/bin/sh\necho hi\n", how: [item if how == "phases" else [item]]}))
"""


@pytest.mark.parametrize("cut", ["said", "stderr", "phases", "env"])
def test_what_the_author_agent_said_is_never_cut_inside_a_secret(rook_workspace, rook_cli, monkeypatch, cut):
    """rook profile add --notes quoted what a failing author agent said cut
    first (its first 300 characters, the last 500 of its standard error, 100 of
    a phase or env item it answered), then redacted: a secret the cut fell in
    was shown in part ('...yyytok-H', 'Z5pLmzzz...'), which the redactor no
    longer recognised."""
    import sys

    monkeypatch.setenv("API_TOKEN", SECRET)
    monkeypatch.setenv("CUT", cut)
    ws = rook_workspace
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    (ws.root / "author.py").write_text(CUTTING_AUTHOR)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    r = rook_cli("profile", "add", "x", "--notes", "an agent that says hi",
                 "--author", f"{sys.executable} {ws.root / 'author.py'}", "-w", str(ws.root))
    said = r.stdout + r.stderr
    assert r.exit_code != 0 and "Traceback" not in said, said
    assert "the author agent" in said and "[redacted:API_TOKEN]" in said, said
    for piece in (SECRET[:4], SECRET[-4:]):
        assert piece not in said, said


REPORTS_ITS_WORKSPACE = r"""
#!/bin/bash
cat >/dev/null
ws="$ROOK_STATE_DIR/checkout-$API_TOKEN"
mkdir -p "$ws" && echo "done" > "$ws/out.txt"
echo "{\"output\": \"ok\", \"workspace\": \"$ws\"}"
"""


def test_a_reported_workspace_whose_path_holds_a_secret_is_still_looked_in(
    rook_workspace, rook_cli, monkeypatch
):
    """An agent workspace whose path holds a profile env value (a checkout named
    after a token, a folder whose name a PIN is in by chance) is recorded
    redacted; file and command criteria looked for the redacted path
    ('.../checkout-[redacted:API_TOKEN] does not exist'), an error. They look in
    the folder the hook reported; every record and message still shows the
    path redacted."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("agent.sh", REPORTS_ITS_WORKSPACE)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [
        {"file": {"path": "out.txt", "contains": "done"}},
        {"file": "missing.txt"},
        {"command": {"run": "pwd; exit 3"}},
    ]})
    r = rook_cli("run", "--json", "-w", str(ws.root))
    verdicts = [(c["status"], c["reason"]) for c in r.report["scenarios"][0]["criteria"]]
    assert [s for s, _ in verdicts] == ["passed", "failed", "failed"], verdicts
    assert "checkout-[redacted:API_TOKEN]" in verdicts[2][1], verdicts
    assert_clean(all_text(ws.runs_dir) + r.stdout + r.stderr, "the run")


GOAL_READER = r"""
#!/bin/bash
echo "{\"status\": \"goal_satisfied\", \"output\": \"read $(wc -c < "$RUHROH_GOAL_PATH") bytes\"}"
"""


def test_the_goal_file_a_ruhroh_wrapper_reads_keeps_no_secret_in_the_run(rook_workspace, rook_cli, monkeypatch):
    """A goal that holds a profile env value (a password that is a common word,
    a token pasted into the goal) is recorded redacted, but the goal file Rook
    wrote for a Ruhroh wrapper (RUHROH_GOAL_PATH, state/<id>.<k>/ruhroh/goal.txt)
    stayed in the run's folder as it was, the value in the clear. The wrapper
    reads it whole; once the run ends it is redacted like the result files."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("wrapper.sh", GOAL_READER)
    ws.profile({"id": "r", "hooks": {"execute": {"ruhroh": {"command": "scripts/wrapper.sh"}}},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    goal = f"sign in with {SECRET}"
    ws.scenario({"id": "s", "goal": goal, "criteria": [{"contains": f"read {len(goal)} bytes"}]})
    r = rook_cli("run", "--json", "-w", str(ws.root))
    assert r.statuses() == {"s": "passed"}, r.stdout + r.stderr
    [goal_file] = ws.runs_dir.rglob("goal.txt")
    assert goal_file.read_text() == "sign in with [redacted:API_TOKEN]"
    assert_clean(all_text(ws.runs_dir) + r.stdout + r.stderr, "the run")


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_a_criterion_named_by_its_text_never_shows_a_piece_of_a_secret(rook_workspace, rook_cli, monkeypatch,
                                                                       command):
    """rook run's refusal of rubrics with no judge profile, and rook doctor's
    finding, name each criterion by the start of its text: cut at 60
    characters, then redacted, a secret the cut fell in showed its first
    characters ('rubric: "xxx...Zq9-s..."')."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho \'{"output": "hi"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"rubric": "x" * 55 + SECRET + " is never shown"}]})
    r = rook_cli(command, "-w", str(ws.root))
    said = r.stdout + r.stderr
    assert 'rubric: "' + "x" * 55 + '[redacted:API_TOKEN]..."' in said, said
    assert SECRET[:5] not in said, said


def test_a_status_field_quoted_in_a_reason_keeps_a_marker_whole(rook_workspace, rook_cli, monkeypatch):
    """A status criterion quoting an answer's status field that is no completion
    status cut it at 40 characters after redaction had put a marker there:
    'xxx...[reda...', a marker cut in two."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("status.sh", '#!/bin/bash\ncat >/dev/null\n'
              'echo "{\\"output\\": \\"ok\\", \\"status\\": \\"' + "x" * 35 + '$API_TOKEN tail\\"}"\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/status.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json", "-w", str(ws.root))
    reason = r.report["scenarios"][0]["criteria"][0]["reason"]
    assert "'" + "x" * 35 + "[redacted:API_TOKEN]...'" in reason, reason


def test_profile_test_s_phase_table_never_cuts_a_marker_in_two(rook_workspace, rook_cli, monkeypatch):
    """rook profile test's phase table cuts each diagnosis at 90 characters, and cut
    a redaction marker there in two ('xxx[redacted:API_T...'), where every other cut
    keeps it whole or leaves it out."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("fails.sh", '#!/bin/bash\ncat >/dev/null\necho "' + "x" * 55 + '$API_TOKEN and more" >&2\nexit 3\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/fails.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    r = rook_cli("profile", "test", "p", "-w", str(ws.root))
    [row] = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("execute 1")]
    assert row.endswith("exited with code 3: " + "x" * 55 + "..."), row
    assert "[redacted:API_TOKEN] and more" in r.stdout  # the diagnosis line below: whole


@pytest.mark.parametrize("argv", [["runs", "show"], ["report"], ["report", "--rebuild"]])
def test_a_past_run_shown_as_json_is_redacted_as_its_table_is(rook_workspace, rook_cli, monkeypatch, argv):
    """A run recorded before its profile declared API_TOKEN holds the value as
    the hook printed it. rook runs show ID and rook report ID redact it in their
    table, but with --json they copied report.json byte for byte: the value in
    the clear. The document printed is redacted as the table is, and stays JSON."""
    monkeypatch.setenv("API_TOKEN", SECRET)
    ws = rook_workspace
    ws.script("echo.sh", '#!/bin/bash\ncat >/dev/null\necho "{\\"output\\": \\"the token is $API_TOKEN\\"}"\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "token"}]})
    run_id = rook_cli("run", "--json", "-w", str(ws.root)).report["run"]["id"]
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"},
                "env": [{"variable": "API_TOKEN", "purpose": "agent token"}]})
    table = rook_cli(*argv, run_id, "-w", str(ws.root))
    assert table.exit_code == 0 and SECRET not in table.stdout + table.stderr, table.stdout
    r = rook_cli(*argv, run_id, "--json", "-w", str(ws.root))
    assert r.exit_code == 0, r.stderr
    assert SECRET not in r.stdout + r.stderr, r.stdout
    report = json.loads(r.stdout)
    assert report["run"]["id"] == run_id
    assert report["scenarios"][0]["turns"][0]["output"] == "the token is [redacted:API_TOKEN]"
    if argv[0] == "report":  # and every format it writes (json and html copied the record too)
        written = [ws.root / f"out.{fmt}" for fmt in ("json", "junit", "markdown", "html")]
        targets = [a for p in written for a in ("--report", f"{p.suffix[1:]}:{p}")]
        r = rook_cli(*argv, run_id, *targets, "-w", str(ws.root))
        assert r.exit_code == 0, r.stderr
        for path in written:
            assert SECRET not in path.read_text(), path
