"""Hostile data at Rook's boundaries, fuzzed: what Rook reads back or receives
yields a clean message, a diagnosis or a redaction, never a traceback.

Run records read back by the real ``rook`` commands, an HTTP agent's raw
responses from a real server on 127.0.0.1, a Ruhroh wrapper's final line and
result file, criteria configs and the redactor's claims (its module docstring
and :func:`rook_core.secret_forms.encodings`).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import threading
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from rook_plugins.ruhroh_protocol import (
    IterationResult,
    ProtocolError,
    final_line_problem,
    normalize,
    read_artifacts,
    read_result_file,
    split_final_line,
)

from rook_core.errors import ScenarioError
from rook_core.hookio import OutputError, decode, turn_evidence
from rook_core.judging import evaluate_criterion
from rook_core.plugins import build_plugin_manager
from rook_core.redact import MIN_LENGTH, PARTIAL_MIN, Redactor
from rook_core.scenario import scenario_from_dict
from rook_core.testing import RookCli, Workspace

ROOK = build_plugin_manager()


def bounded(n):
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.filter_too_much])


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=8),
    st.sampled_from(["\ud800", "\u202e", "\u2066x", "latest", "", "passed", "a.1", "../x", "\x00"]),
)


def trees(keys, leaves=10, leaf=scalars):
    key = st.one_of(st.sampled_from(keys), st.text(max_size=5))
    return st.recursive(
        leaf, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(key, c, max_size=4)),
        max_leaves=leaves,
    )


def json_bytes(value):
    """``value`` as JSON text, lone surrogates and NaN included, as a damaged file holds it."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def clean_exit(r):
    assert r.exception is None, r.exception
    assert r.exit_code in (0, 1, 2), (r.exit_code, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr, r.stderr


# ---------------------------------------------------------------- run records read back

RECORD_KEYS = ["id", "status", "scenarios", "run", "counts", "turns", "criteria", "hooks", "key",
               "plan", "profile", "phases", "invocations", "capabilities", "prepare", "summary"]
RECORD_FILES = ["run.json", "report.json", "summary.json", "scenarios/a.1.json", "scenarios/b.1.json"]
COMMANDS = [("report", "{run}"), ("runs", "show", "{run}", "--json"), ("runs", "show", "{run}"),
            ("diff", "{other}", "{run}"), ("runs", "--json"), ("report", "{run}", "--format", "html"),
            ("run", "--run", "{run}")]


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("records") / "ws")
    ws.script("agent.sh", """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat > /dev/null
        echo '{"output": "good", "calls": [{"name": "t", "arguments": {}}]}'
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "a", "goal": "a", "criteria": [{"contains": "good"}]})
    ws.scenario({"id": "b", "goal": "b", "criteria": [{"contains": "bad"}]})
    cli = RookCli(ws)
    runs = [cli("run", "--json").report["run"]["id"] for _ in range(2)]
    # and one stopped after execute, which rook run --run ID finishes
    unfinished = cli("run", "--json", "--phases", "prepare,open,execute").report["run"]["id"]
    return ws.root, runs, unfinished


def places(doc, at=()):
    yield at
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from places(v, (*at, k))


@bounded(40)
@given(st.sampled_from(RECORD_FILES), st.data(), trees(RECORD_KEYS), st.booleans(),
       st.sampled_from(COMMANDS), st.booleans())
def test_damaged_run_records_never_crash_the_commands_reading_them(
        three_runs, tmp_path_factory, name, data, value, remove, command, finished):
    template, (run, other), unfinished = three_runs
    run = run if finished else unfinished
    root = tmp_path_factory.mktemp("damaged") / "ws"
    shutil.copytree(template, root)
    ws = Workspace(root)
    path = ws.runs_dir / run / name
    doc = json.loads(path.read_text())
    at = data.draw(st.sampled_from(list(places(doc))))
    if not at:
        doc = value
    else:
        parent = doc
        for k in at[:-1]:
            parent = parent[k]
        if remove:
            del parent[at[-1]]
        else:
            parent[at[-1]] = value
    path.write_bytes(json_bytes(doc))
    r = RookCli(ws)(*(a.format(run=run, other=other) for a in command))
    clean_exit(r)
    if r.exit_code == 2 and command[0] != "runs" and not r.stderr.startswith("Usage"):
        assert r.stderr.strip()


# ---------------------------------------------------------------- HTTP responses

class RawServer:
    """A real server on 127.0.0.1 that answers every request with ``raw``, as it is."""

    def __init__(self):
        self.raw = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/x"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        with conn:
            try:
                conn.settimeout(5)
                seen = b""
                while b"\r\n\r\n" not in seen:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    seen += chunk
                head, _, body = seen.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(body) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                conn.sendall(self.raw)
            except OSError:
                pass


@pytest.fixture(scope="module")
def raw_server():
    server = RawServer()
    yield server
    server.sock.close()


PATHS = ["output", "choices[0].message.content", "@", "length(@)", "to_number(a)", "abs(a)",
         "sort(@)", "join(',', @)", "a.b[*].c", "keys(@)", "max(@)", "a || b", "[a, b]", "{x: a}",
         "to_string(@)", "sum(@)", "a[-1]", "not_null(a, b)", "starts_with(a, 'x')"]
CONTENT_TYPES = [None, "application/json", "application/json; charset=nope", "text/plain",
                 "text/event-stream", "text/html"]
body_values = trees(["a", "b", "c", "output", "choices", "message", "content", "data"])
sse = st.lists(
    st.one_of(body_values.map(lambda v: b"data: " + json_bytes(v)), st.binary(max_size=10),
              st.sampled_from([b"data: [DONE]", b"event: error", b"data:", b": c", b"data: {"])),
    max_size=5,
).map(lambda events: b"\n\n".join(events) + b"\n\n")


@bounded(20)
@given(st.sampled_from([200, 201, 204, 299, 301, 400, 401, 404, 429, 500, 599]),
       st.sampled_from(CONTENT_TYPES), st.one_of(body_values.map(json_bytes), st.binary(max_size=40), sse),
       st.sampled_from([None, "gzip", "br"]), st.sampled_from(["length", "close", "chunked", "short"]),
       st.sampled_from(PATHS), st.sampled_from([None, "sse"]), st.one_of(st.none(), st.sampled_from(PATHS)))
def test_any_http_response_fails_the_scenario_with_a_diagnosis(
        raw_server, tmp_path_factory, status, content_type, body, encoding, framing, output, stream,
        evidence):
    head = [f"HTTP/1.1 {status} X", "Connection: close"]
    head += [f"Content-Type: {content_type}"] if content_type else []
    head += [f"Content-Encoding: {encoding}"] if encoding else []
    if framing in ("length", "short"):  # short: the connection closes before the body is whole
        head.append(f"Content-Length: {len(body) + (10 if framing == 'short' else 0)}")
    elif framing == "chunked":
        head.append("Transfer-Encoding: chunked")
        body = (f"{len(body):x}\r\n".encode() + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
    raw_server.raw = ("\r\n".join(head) + "\r\n\r\n").encode() + body
    entry = {"url": raw_server.url, "body": {"q": "{{goal}}"}, "extract": {"output": output},
             "timeout_seconds": 5, "retries": 0, **({"stream": stream} if stream else {})}
    if evidence:
        entry["extract"]["evidence"] = {"e": evidence}
    ws = Workspace(tmp_path_factory.mktemp("http") / "ws")
    ws.profile({"id": "p", "hooks": {"execute": {"http": entry}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = RookCli(ws)("run", "--json")
    clean_exit(r)
    assert r.exit_code in (0, 1), r.stderr  # a response is the agent's, never the user's mistake
    [scenario] = r.report["scenarios"]
    assert scenario["status"] in ("passed", "failed", "error", "infra_error"), scenario
    assert scenario["reason"]


# ---------------------------------------------------------------- Ruhroh final line, result file

RUHROH_KEYS = ["status", "output", "message", "summary", "result", "sessionHandle", "session_handle",
               "conversation", "usage", "inputTokens", "outputTokens", "totalTokens", "costUsd",
               "model", "artifacts", "path", "name", "version", "adapterVersion", "runId", "text"]
ruhroh_values = trees(RUHROH_KEYS, leaves=12)
ruhroh_bytes = st.one_of(st.dictionaries(st.sampled_from(RUHROH_KEYS), ruhroh_values, max_size=5)
                         .map(json_bytes), ruhroh_values.map(json_bytes), st.binary(max_size=50))


@bounded(150)
@given(st.binary(max_size=20), ruhroh_bytes, st.one_of(st.none(), ruhroh_bytes))
def test_any_ruhroh_answer_is_read_or_refused_naming_what_is_wrong(tmp_path_factory, before, final,
                                                                  from_file):
    stdout = decode(before + b"\n" + final + b"\n")
    path = tmp_path_factory.mktemp("rr") / "result.json"
    if from_file is not None:
        path.write_bytes(from_file)
    line, transcript = split_final_line(stdout)
    result = IterationResult(artifacts_base=path.parent)
    try:
        read = read_result_file(path, 64 * 1024)
    except ProtocolError as exc:
        assert str(path) in str(exc)
        read = None
    normalize({**(line or {}), **(read or {})}, transcript, result)
    assert result.status is None or isinstance(result.status, str)
    assert result.output is None or isinstance(result.output, str)
    assert result.handle is None or isinstance(result.handle, str)
    if line is None:
        problem = final_line_problem(stdout)
        assert problem is None or isinstance(problem, str)
    try:
        read_artifacts(result.artifacts, path.parent, 1024)
    except ProtocolError as exc:
        assert str(exc)


# ---------------------------------------------------------------- criteria configs

CRITERION_KEYS = ["path", "equals", "matches", "contains", "exists", "name", "arguments", "turn",
                  "input", "output", "total", "claim", "says", "requires_call", "min", "max", "x",
                  "ignore_case", "count", "any", "all"]
# evidence a hook gives is JSON, read as UTF-8: no lone surrogate (a scenario
# given in process may hold one: it is refused, naming the field)
yaml_scalars = scalars.filter(lambda v: not (isinstance(v, str) and "\ud800" in v))
JUDGED_ALONE = {"command", "file", "judge", "rubric"}  # need a workspace or a judge profile
turn_outputs = st.fixed_dictionaries(
    {"output": st.one_of(st.text(max_size=20), st.sampled_from(['{"a": 1}', "[1, 2]", "1e999"]))},
    optional={"calls": st.lists(st.fixed_dictionaries({"name": st.text(max_size=5)},
                                                      optional={"arguments": trees(CRITERION_KEYS, leaf=yaml_scalars)}),
                                max_size=3),
              "usage": st.dictionaries(st.sampled_from(["input", "output", "total", "cost_usd"]),
                                       scalars, max_size=3)},
)


@bounded(150)
@given(st.sampled_from(sorted(ROOK.criteria.names())), trees(CRITERION_KEYS, leaf=scalars),
       st.lists(turn_outputs, min_size=1, max_size=2), st.sampled_from([None, 1, 2, "all", "last"]))
def test_a_criterion_config_is_refused_at_load_or_judged_without_raising(name, config, outputs, turn):
    criterion = {name: config, **({} if turn is None else {"turn": turn})}
    try:
        scenario = scenario_from_dict(
            {"id": "s", "turns": ["a", "b"][: len(outputs)], "criteria": [criterion]},
            ROOK.criteria, "s.yaml")
    except ScenarioError as exc:
        assert str(exc).startswith("s.yaml"), exc
        return
    if name in JUDGED_ALONE:
        return
    try:
        turns = [turn_evidence(i, "g", o, 0.1) for i, o in enumerate(outputs, 1)]
    except OutputError:
        return
    [parsed] = scenario.criteria
    verdict = asyncio.run(evaluate_criterion(parsed, ROOK.criteria.get(name), scenario, turns, None, {}))
    assert " raised " not in verdict.reason, (criterion, outputs, verdict.reason)


@pytest.mark.parametrize(
    "data, field",
    [
        ({"id": "s", "goal": "where is \udc80 it"}, "goal: holds a lone surrogate (\\udc80, character 10)"),
        ({"id": "s", "turns": ["a", "b\ud800"]}, "turns.1: holds a lone surrogate (\\ud800, character 2)"),
        ({"id": "s", "goal": "g", "criteria": [{"matches": "x\udc80"}]}, "criteria.0.matches: holds"),
        ({"id": "s", "goal": "g", "tags": ["t\udc80"]}, "tags.0: holds"),
        ({"id": "s", "goal": "g", "criteria": [{"called": {"name": "f", "arguments": {"k\udc80": 1}}}]},
         "criteria.0.called.arguments: has a key that holds a lone surrogate"),
        ({"title": "t\udc80", "goal": "g"}, "title: holds"),
    ],
)
def test_a_scenario_holding_a_lone_surrogate_is_refused_naming_the_field(data, field):
    """A YAML file cannot carry a lone surrogate, but a scenario given in process
    (a plugin, a JSON scenario source) can: scenario_from_dict raised Python's
    UnicodeEncodeError (its content hash encodes the text as UTF-8), a traceback
    for a user's scenario. It is a ScenarioError naming the field."""
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(data, ROOK.criteria, "s.json", "from-file")
    said = str(err.value)
    assert said.startswith("s.json: invalid scenario") and f"\n  {field}" in said, said
    said.encode("utf-8")  # the message itself can be printed


# ---------------------------------------------------------------- the redactor's claims

FILL = " .-_\n:/=\"'{}"
MARKER = "[redacted:S]"
unlike_filler = st.characters(blacklist_characters=FILL + "[]\\\0",
                              blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"))
secrets = st.text(unlike_filler, min_size=MIN_LENGTH, max_size=24)
any_secret = st.text(st.characters(blacklist_characters="\0"), min_size=MIN_LENGTH,
                     max_size=24).filter(lambda s: s.strip() == s)
filler = st.text(st.sampled_from(FILL), max_size=20)


def shown(out):
    return out.replace(MARKER, "\0")  # a marker never counts as the secret's characters


def claimed_forms(secret):
    """The forms :func:`rook_core.secret_forms.encodings` says it covers: as it is, in a
    JSON string (both escapings, and JSON text inside a JSON string) and
    percent-encoded (upper- and lower-case hex, ``+`` for a space)."""
    forms = [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
             json.dumps(json.dumps(secret))[1:-1]]
    try:
        urls = [quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret)]
    except UnicodeEncodeError:  # no URL form, as encodings says
        urls = []
    lower = [re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), u) for u in urls]
    return forms + urls + lower


@bounded(100)
@given(any_secret, st.text(max_size=20), st.text(max_size=20), st.data())
def test_a_secret_in_any_claimed_form_never_shows(secret, before, after, data):
    form = data.draw(st.sampled_from(claimed_forms(secret)))
    out = Redactor({"S": secret}).text(before + form + after)
    assert form not in shown(out), (secret, form, out)


@bounded(100)
@given(secrets, filler, filler, st.integers(0, 80))
def test_no_piece_of_a_secret_shows_where_a_cutter_cuts(secret, before, after, limit):
    redactor = Redactor({"S": secret})
    text = before + secret + after
    for out in (redactor.head(text, limit), redactor.tail(text, limit)):
        assert not set(shown(out)) & set(secret), (secret, text, limit, out)


@bounded(80)
@given(secrets, filler, st.integers(1, 23))
def test_a_secret_cut_short_at_the_end_never_shows_its_beginning(secret, before, k):
    assume(k < len(secret) and (k >= PARTIAL_MIN or 2 * k >= len(secret)))
    out = Redactor({"S": secret}).cut_short(before + secret[:k])
    assert not set(shown(out)) & set(secret), (secret, k, out)
