"""A third-party plugin's bugs, met through the real ``rook`` command.

Each plugin here is installed through its entry point (``rook_distribution``),
the way ``pip install`` would, and does one thing the plugin author guide
says not to do. Rook must name the plugin, never show a traceback, never
lose a recorded result and never let a profile's secret value through.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types

import pytest

from rook_core.hookspecs import hookimpl

SECRET = "hunter2-secret-value"


OWN_BASE_EXCEPTION = """
class Boom(BaseException):
    \"\"\"The plugin's own exception: derived from BaseException, neither Exception
    nor SystemExit (nor KeyboardInterrupt, CancelledError or GeneratorExit).\"\"\"


def boom(*args):
    raise Boom(*args)


def interrupt(*args):
    raise KeyboardInterrupt(*args)


def close_me(*args):
    raise GeneratorExit(*args)

"""


def leaving_by(source, how):
    """A plugin's ``source`` as written (``sys.exit(...)``), or raising instead, with
    the same arguments, its own ``Boom(BaseException)`` ("Boom") or a
    ``KeyboardInterrupt`` ("KeyboardInterrupt": a Ctrl-C arriving in the plugin)."""
    if how == "SystemExit":
        return source
    leave = {"Boom": "boom(", "KeyboardInterrupt": "interrupt(", "GeneratorExit": "close_me("}[how]
    return OWN_BASE_EXCEPTION + source.replace("sys.exit(", leave)


LEAVING_BY = pytest.mark.parametrize("how", ["SystemExit", "Boom"])
"""Each way a plugin leaves that is no Exception: sys.exit(), or an exception of its own
derived from BaseException. Both are the plugin's failure, named, at every call site."""

LEAVING_PLAINLY_BY = pytest.mark.parametrize("how", ["SystemExit", "Boom", "GeneratorExit"])
"""The same at a call site of plain (not async) code, where a GeneratorExit too is the
plugin's own: no coroutine of Rook's is being closed there."""


def secret_workspace(ws, monkeypatch, criteria=None):
    """A script agent whose profile declares the secret ``DESK_KEY``."""
    monkeypatch.setenv("DESK_KEY", SECRET)
    ws.script(
        "echo.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || { echo '{}'; exit 0; }
        printf '{"output": "%s"}\\n' "$(cat)"
        """,
    )
    ws.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/echo.sh", "close": "scripts/echo.sh"},
            "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}],
        }
    )
    for n in (1, 2):
        ws.scenario(
            {"id": f"s{n}", "goal": "HELLO", "criteria": criteria or [{"contains": "HELLO"}]}
        )


OBSERVERS = """
import os
from rook_core.hookspecs import hookimpl

SEEN = []

@hookimpl
def rook_evidence_recorded(result):
    raise RuntimeError("observer broke, key " + os.environ["DESK_KEY"])
"""

COUNTER = """
from rook_core.hookspecs import hookimpl

SEEN = []

@hookimpl
def rook_evidence_recorded(record, result):
    SEEN.append((record["key"], result.phase))
"""


def test_an_evidence_observer_that_raises_is_named_and_the_run_goes_on(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """An observer that raised ended ``rook run`` with a Python traceback that showed
    the secret value, and the other observers never saw the hook; it is now a
    warning naming the plugin (once), redacted, and the run and the others go on."""
    rook_distribution("rook-watch", {"watch": "rook_watch"}, {"rook_watch.py": OBSERVERS})
    rook_distribution("rook-count", {"count": "rook_count"}, {"rook_count.py": COUNTER})
    secret_workspace(rook_workspace, monkeypatch)
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 0 and r.statuses() == {"s1": "passed", "s2": "passed"}, r.stderr
    warning = (
        "rook: warning: plugin watch (rook-watch) raised RuntimeError in "
        "rook_evidence_recorded: observer broke, key [redacted:DESK_KEY] (the run goes on; "
        "disable the plugin with ROOK_DISABLE_PLUGINS=watch)"
    )
    assert r.stderr.count(warning) == 1, r.stderr
    assert SECRET not in r.stderr + r.stdout
    import rook_count

    assert sorted(rook_count.SEEN) == [
        ("s1.1", "close"),
        ("s1.1", "execute"),
        ("s2.1", "close"),
        ("s2.1", "execute"),
    ]
    assert SECRET not in rook_workspace.all_run_text(r.report["run"]["id"])
    json.dumps(r.report)


TWO_OBSERVERS = """
from rook_core.hookspecs import hookimpl

SEEN = []

@hookimpl
def rook_evidence_recorded(record, result):
    SEEN.append(("first", record["key"], result.phase))

@hookimpl(specname="rook_evidence_recorded")
def second_observer(record, result):
    SEEN.append(("second", record["key"], result.phase))
"""


ASYNC_OBSERVER = """
from rook_core.hookspecs import hookimpl


@hookimpl
async def rook_evidence_recorded(result):
    pass
"""


def test_an_async_observer_is_named_in_a_warning_not_left_unawaited(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """An ``async def`` observer never ran: its coroutine was dropped, and all the user
    saw was Python's 'RuntimeWarning: coroutine ... was never awaited'. It is now a
    warning naming the plugin and the fix, and the run goes on."""
    rook_distribution("rook-later", {"later": "rook_later"}, {"rook_later.py": ASYNC_OBSERVER})
    secret_workspace(rook_workspace, monkeypatch)
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 0 and r.statuses() == {"s1": "passed"}, r.stderr
    assert "never awaited" not in r.stderr
    warning = (
        "rook: warning: plugin later (rook-later) raised TypeError in rook_evidence_recorded: "
        "it returned a coroutine, which Rook does not run: an observer is called on the "
        "event loop and must be a plain function (def, not async def)"
    )
    assert r.stderr.count(warning) == 1, r.stderr


def test_a_plugin_with_two_observers_has_each_called_once_per_result(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A plugin implementing rook_evidence_recorded twice (pluggy's specname) had both
    called twice for every hook result."""
    rook_distribution("rook-twice", {"twice": "rook_twice"}, {"rook_twice.py": TWO_OBSERVERS})
    secret_workspace(rook_workspace, monkeypatch)
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.statuses() == {"s1": "passed"}, r.stderr
    import rook_twice

    assert sorted(rook_twice.SEEN) == [
        ("first", "s1.1", "close"),
        ("first", "s1.1", "execute"),
        ("second", "s1.1", "close"),
        ("second", "s1.1", "execute"),
    ]


SLOPPY = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import Verdict


class Sure(CriterionType):
    name = "sure"

    def evaluate(self, config, view):
        return Verdict("pass", "looks fine")


class Lenient:
    def __call__(self, config, view):
        return Verdict("ok", "fine by me", {"score": 1})


@hookimpl
def rook_register_criteria(register):
    register(Sure())


@hookimpl
def rook_register_judges(register):
    register("lenient", Lenient())
"""


def test_a_verdict_with_a_misspelt_status_is_an_error_never_a_pass(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion or judge plugin returning ``Verdict("pass", ...)`` (not ``PASSED``)
    made the scenario pass: 'all 1 criteria passed', exit 0, JUnit green. The
    honesty rule says never pass what was not checked: it is that criterion's error."""
    rook_distribution("rook-sloppy", {"sloppy": "rook_sloppy"}, {"rook_sloppy.py": SLOPPY})
    secret_workspace(rook_workspace, monkeypatch, [{"sure": True}, {"judge": {"name": "lenient"}}])
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    sure, lenient = r.report["scenarios"][0]["criteria"]
    assert sure["status"] == lenient["status"] == "error"
    assert sure["reason"].startswith(
        "criterion sure (sloppy (rook-sloppy)) returned a Verdict with status 'pass'; a status "
        "is one of passed, "
        "failed, unverifiable, error"
    ), sure
    assert lenient["reason"].startswith(
        "judge 'lenient' (sloppy (rook-sloppy)) returned a Verdict with status 'ok'")
    assert lenient["evidence"] == {"score": 1}


PIECES = """
import os
import time
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import HookResult, Verdict
from rook_core.transports import TransportSpec

PAD = "x" * 45  # the secret runs across character 60 of its repr


async def answer(call):
    now, kind, key = time.time(), call.entry.config, PAD + os.environ["DESK_KEY"]
    status, seconds, diagnosis = "ok", 0.0, None
    if kind == "status":
        status = key
    elif kind == "seconds":
        seconds = key
    elif kind == "diagnosis":
        status, diagnosis = "failed", [key]
    return HookResult(call.phase, status, seconds, now, now, data={"output": "fine"},
                      turn=call.turn, diagnosis=diagnosis, transport="pieces")


class Keyed(CriterionType):
    name = "keyed"

    def evaluate(self, config, view):
        return Verdict(PAD + os.environ["DESK_KEY"], "looks fine")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="pieces", load_config=lambda value: value))


@hookimpl
def rook_register_criteria(register):
    register(Keyed())


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "pieces" else None
"""


@pytest.mark.parametrize("kind", ["status", "seconds", "diagnosis", "verdict"])
def test_a_plugin_s_return_quoted_in_a_message_shows_no_piece_of_a_secret(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, kind
):
    """A transport's malformed HookResult (a status, seconds or diagnosis holding
    a profile's secret) and a criterion's Verdict with such a status were quoted
    cut to 60 characters before redaction: a secret across the cut left its
    beginning in the reason, every record and report (``'xxx...hunter2-secr``),
    where no redaction finds it. Redacted first, then cut: the marker whole."""
    rook_distribution("rook-pieces", {"pieces": "rook_pieces"}, {"rook_pieces.py": PIECES})
    secret_workspace(rook_workspace, monkeypatch, [{"keyed": True}] if kind == "verdict" else None)
    if kind != "verdict":
        rook_workspace.profile({"id": "p", "hooks": {"execute": {"pieces": kind}},
                                "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}]})
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    assert "x[redacted:DESK_KEY]" in json.dumps(r.report), r.report["scenarios"][0]["reason"]
    said = r.stdout + r.stderr + "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in rook_workspace.runs_dir.rglob("*")
        if p.is_file())
    assert SECRET[:6] not in said


MUTE = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Scored(CriterionType):
    name = "scored"

    def evaluate(self, config, view):
        return Verdict(PASSED, 0.93)  # the score where the reason goes


class Quiet:
    def __call__(self, config, view):
        return Verdict(PASSED, None, {"score": 1})


@hookimpl
def rook_register_criteria(register):
    register(Scored())


@hookimpl
def rook_register_judges(register):
    register("quiet", Quiet())
"""


def test_a_verdict_whose_reason_is_not_text_is_an_error_and_the_reports_are_written(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A criterion or judge plugin returning ``Verdict(PASSED, 0.93)`` passed, and
    then no report could be written (JUnit, Markdown, HTML: 'reason is a number,
    not what Rook writes there'), exit 1. A verdict without a text reason says
    nothing a reviewer can read: it is that criterion's error, named."""
    rook_distribution("rook-mute", {"mute": "rook_mute"}, {"rook_mute.py": MUTE})
    secret_workspace(rook_workspace, monkeypatch, [{"scored": True}, {"judge": {"name": "quiet"}}])
    reports = [f"--report={f}:{tmp_path}/r.{f}" for f in ("junit", "markdown", "html")]
    r = rook_cli("run", "--json", "--only", "s1", *reports)
    assert r.exception is None and "rook: error" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    scored, quiet = r.report["scenarios"][0]["criteria"]
    assert scored["status"] == quiet["status"] == "error"
    assert scored["reason"] == (
        "criterion scored (mute (rook-mute)) returned a Verdict whose reason is 0.93, not a text")
    assert quiet["reason"] == (
        "judge 'quiet' (mute (rook-mute)) returned a Verdict whose reason is None, not a text")
    assert quiet["evidence"] == {"score": 1}
    for f in ("junit", "markdown", "html"):
        assert "returned a Verdict whose reason is" in (tmp_path / f"r.{f}").read_text(), f


UNWRITABLE = r"""
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Looped(CriterionType):
    name = "looped"

    def evaluate(self, config, view):
        evidence = {"note": "mine"}
        evidence["self"] = evidence  # a circular reference
        return Verdict(PASSED, "fine", evidence)


class NotANumber:
    def __call__(self, config, view):
        return Verdict(PASSED, "fine", {"score": float("nan")})


class Keyed:
    def __call__(self, config, view):  # keys as JSON takes them (numbers), and one it cannot
        if config.get("pairs"):
            return Verdict(PASSED, "fine", {("a", "b"): 1})
        return Verdict(PASSED, "fine", {1: 0.5, 2: 0.75})


class Undecoded:
    def __call__(self, config, view):  # a file name read with os.fsdecode: not UTF-8
        return Verdict(PASSED, "found report-\udcff.md", {"path": "report-\udcff.md"})


@hookimpl
def rook_register_criteria(register):
    register(Looped())


@hookimpl
def rook_register_judges(register):
    register("nan", NotANumber())
    register("undecoded", Undecoded())
    register("keyed", Keyed())
"""


def test_a_verdict_whose_evidence_is_no_json_is_an_error_and_the_run_goes_on(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion plugin's evidence with a circular reference stopped the whole
    run with a traceback when its record was written (the other scenarios never
    ran); a judge's NaN score was written into the JSON report, which no strict
    JSON reader takes. Either is that criterion's error, named, and the run goes on."""
    rook_distribution("rook-unwritable", {"unwritable": "rook_unwritable"},
                      {"rook_unwritable.py": UNWRITABLE})
    secret_workspace(rook_workspace, monkeypatch, [{"looped": True}, {"judge": {"name": "nan"}}])
    r = rook_cli("run", "--json")
    assert r.exception is None and "rook: error" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"s1": "error", "s2": "error"}, r.stderr
    json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the JSON report"))
    looped, nan = r.report["scenarios"][0]["criteria"]
    assert looped["status"] == nan["status"] == "error"
    assert looped["reason"].startswith(
        "criterion looped (unwritable (rook-unwritable)) returned a Verdict whose evidence "
        "cannot be written as JSON")
    assert nan["reason"].startswith(
        "judge 'nan' (unwritable (rook-unwritable)) returned a Verdict whose evidence cannot "
        "be written as JSON")


def test_a_verdicts_evidence_keys_json_cannot_hold_are_an_error_numbers_are_text(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """criterion.md said any key that is not a text makes the criterion error: a
    number key (a score per turn) is written as text, as JSON writes it; a key
    JSON cannot hold (a tuple) is that criterion's error, the evidence left out."""
    rook_distribution("rook-unwritable", {"unwritable": "rook_unwritable"},
                      {"rook_unwritable.py": UNWRITABLE})
    secret_workspace(rook_workspace, monkeypatch,
                     [{"judge": {"name": "keyed"}}, {"judge": {"name": "keyed", "pairs": True}}])
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exception is None and r.exit_code == 1, r.stderr
    numbered, paired = r.report["scenarios"][0]["criteria"]
    assert numbered["status"] == "passed" and numbered["evidence"] == {"1": 0.5, "2": 0.75}
    assert paired["status"] == "error" and not paired.get("evidence"), paired
    assert paired["reason"].startswith("judge 'keyed' (unwritable (rook-unwritable)) returned "
                                       "a Verdict whose evidence cannot be written as JSON")


def test_a_verdict_with_text_that_is_not_utf8_is_written_with_replacement_characters(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A judge's reason or evidence holding a lone surrogate (a file name decoded
    with os.fsdecode) passed, and then no report could be written: a traceback,
    the run left incomplete. Rook writes it as it writes a hook's undecodable
    bytes: U+FFFD in their place."""
    rook_distribution("rook-unwritable", {"unwritable": "rook_unwritable"},
                      {"rook_unwritable.py": UNWRITABLE})
    secret_workspace(rook_workspace, monkeypatch, [{"judge": {"name": "undecoded"}}])
    r = rook_cli("run", "--json")
    assert r.exception is None and "rook: error" not in r.stderr, r.stderr
    assert r.exit_code == 0 and r.statuses() == {"s1": "passed", "s2": "passed"}, r.stderr
    (verdict,) = r.report["scenarios"][0]["criteria"]
    assert verdict["reason"] == "found report-\ufffd.md"
    assert verdict["evidence"] == {"path": "report-\ufffd.md"}
    shown = rook_cli("runs", "show", "--json", "latest")
    assert shown.exit_code == 0 and shown.exception is None, shown.stderr
    assert shown.report["scenarios"][0]["criteria"][0]["reason"] == "found report-\ufffd.md"


LISTED = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Listy(CriterionType):
    name = "listy"

    def evaluate(self, config, view):
        return Verdict(PASSED, "y" * 5000, ["a"])  # a list where the evidence dict goes


class Tally:
    def __call__(self, config, view):
        return Verdict(PASSED, "fine", [1, 2])


@hookimpl
def rook_register_criteria(register):
    register(Listy())


@hookimpl
def rook_register_judges(register):
    register("tally", Tally())
"""


def test_a_verdict_whose_evidence_is_not_a_dict_is_an_error_and_kept(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion plugin's ``Verdict(PASSED, "y" * 5000, ["a"])`` passed with its
    evidence silently replaced by {"reason": ...} (the list lost when the long
    reason was kept); a short reason kept the list, though a verdict's evidence
    is a dict. Either is that criterion's error, named, the list kept."""
    rook_distribution("rook-listed", {"listed": "rook_listed"}, {"rook_listed.py": LISTED})
    secret_workspace(rook_workspace, monkeypatch, [{"listy": True}, {"judge": {"name": "tally"}}])
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exception is None and "rook: error" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    listy, tally = r.report["scenarios"][0]["criteria"]
    assert listy["status"] == tally["status"] == "error"
    assert listy["reason"] == (
        "criterion listy (listed (rook-listed)) returned a Verdict whose evidence is ['a'], "
        "not a dict"), listy["reason"][:300]
    assert listy["evidence"] == {"evidence": ["a"], "reason": "y" * 5000}
    assert tally["reason"] == (
        "judge 'tally' (listed (rook-listed)) returned a Verdict whose evidence is [1, 2], "
        "not a dict")
    assert tally["evidence"] == {"evidence": [1, 2], "reason": "fine"}


WORDY = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import FAILED, Verdict


class Wordy(CriterionType):
    name = "wordy"

    def evaluate(self, config, view):
        return Verdict(FAILED, "no: " + "because " * 15000 + "THE-END", {"score": 0})


class Chatty:
    def __call__(self, config, view):
        return Verdict(FAILED, "no: " + "since " * 20000 + "THE-END")


@hookimpl
def rook_register_criteria(register):
    register(Wordy())


@hookimpl
def rook_register_judges(register):
    register("chatty", Chatty())
"""


def test_a_plugins_endless_reason_is_kept_in_evidence_and_cut_in_the_reason(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion or judge plugin's 120 KB reason went whole into the criterion's
    and the scenario's reason, every report and the record twice over."""
    rook_distribution("rook-wordy", {"wordy": "rook_wordy"}, {"rook_wordy.py": WORDY})
    secret_workspace(rook_workspace, monkeypatch, [{"wordy": True}, {"judge": {"name": "chatty"}}])
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 1 and r.statuses() == {"s1": "failed"}, r.stderr
    scenario = r.report["scenarios"][0]
    wordy, chatty = scenario["criteria"]
    for c in (wordy, chatty):
        assert c["status"] == "failed" and c["reason"].startswith("no: ")
        assert len(c["reason"]) < 5000 and "characters more" in c["reason"], c["reason"][-200:]
        assert c["evidence"]["reason"].endswith("THE-END")
    assert wordy["evidence"]["score"] == 0
    assert len(scenario["reason"]) < 5000


RAISER = """
from rook_core.hookspecs import hookimpl


class Raiser:
    def __call__(self, config, view):
        raise ValueError("tone model unavailable")


@hookimpl
def rook_register_judges(register):
    register("raiser", Raiser())
"""


def test_a_judge_that_raises_is_named_with_its_plugin(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """The reason named the built-in ``judge`` criterion, not the judge that raised."""
    rook_distribution("rook-raiser", {"raiser": "rook_raiser"}, {"rook_raiser.py": RAISER})
    secret_workspace(rook_workspace, monkeypatch, [{"judge": {"name": "raiser"}}])
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    (verdict,) = r.report["scenarios"][0]["criteria"]
    assert verdict["reason"] == (
        "judge 'raiser' (raiser (rook-raiser)) raised ValueError: tone model unavailable"
    ), verdict


STUCK = """
import asyncio
from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec


async def forever(call):
    await asyncio.sleep(3600)  # ignores call.timeout


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="stuck", load_config=lambda value: value))


@hookimpl
def rook_transport_execute(call):
    return forever(call) if call.entry.transport == "stuck" else None
"""


def test_a_transport_that_ignores_its_timeout_cannot_hang_the_run(
    rook_distribution, rook_workspace, rook_cli
):
    """A transport plugin whose execute never ends (it ignores ``call.timeout``)
    hung ``rook run`` for ever, ``timeout_seconds`` notwithstanding. Rook now stops
    waiting a grace after the timeout: the hook is a ``timeout`` naming the plugin,
    and the other scenario runs and every record are kept."""
    from rook_core.transports import TIMEOUT_GRACE_SECONDS

    rook_distribution("rook-stuck", {"stuck": "rook_stuck"}, {"rook_stuck.py": STUCK})
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": {"stuck": {}, "timeout_seconds": 1}}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.statuses() == {"s": "error"}, r.stderr
    hook = r.report["scenarios"][0]["hooks"][-1]
    assert hook["status"] == "timeout", hook
    assert hook["diagnosis"] == (
        f"transport 'stuck' (stuck (rook-stuck)) did not answer within 1 s; Rook stopped "
        f"waiting {TIMEOUT_GRACE_SECONDS:g} s later (the plugin does not honour call.timeout)"
    )
    record = rook_workspace.record(r.report["run"]["id"], "s.1")
    assert record["hooks"][-1]["status"] == "timeout"


DEAF = """
import asyncio, os
from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec


async def deaf(call):
    try:
        while True:
            try:
                await asyncio.sleep(3600)  # ignores call.timeout
            except asyncio.CancelledError:
                pass  # and its cancellation
    finally:
        with open(os.environ["DEAF_FINALLY"], "w") as fh:
            fh.write("ran")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="deaf", load_config=lambda value: value))


@hookimpl
def rook_transport_execute(call):
    return deaf(call) if call.entry.transport == "deaf" else None
"""


def test_a_transport_that_swallows_its_cancellation_cannot_hang_the_run(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A transport plugin that ignores ``call.timeout`` and catches the
    ``CancelledError`` Rook sends it a grace later held its hook, and so the
    run, for ever: ``asyncio.wait_for`` waits for the cancelled task to end. Rook
    now waits a short grace for the cancellation, then closes the plugin's
    coroutine (its ``finally`` runs): the hook is a ``timeout`` saying so, naming
    the plugin, and the run ends with every record kept."""
    from rook_core.transports import TIMEOUT_GRACE_SECONDS

    done = tmp_path / "finally"
    monkeypatch.setenv("DEAF_FINALLY", str(done))
    rook_distribution("rook-deaf", {"deaf": "rook_deaf"}, {"rook_deaf.py": DEAF})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"deaf": {}, "timeout_seconds": 1}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.statuses() == {"s": "error"}, r.stderr
    hook = r.report["scenarios"][0]["hooks"][-1]
    assert hook["status"] == "timeout", hook
    assert hook["diagnosis"] == (
        f"transport 'deaf' (deaf (rook-deaf)) did not answer within 1 s; Rook stopped "
        f"waiting {TIMEOUT_GRACE_SECONDS:g} s later (the plugin does not honour call.timeout); "
        "it ignored its cancellation too, so Rook closed its coroutine"
    )
    assert done.read_text() == "ran"


STUBBORN = """
import asyncio
from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec


async def stubborn(call):
    while True:
        try:
            await asyncio.sleep(3600)  # ignores call.timeout
        except BaseException:
            pass  # its cancellation, and its closing (GeneratorExit) too


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="stubborn", load_config=lambda value: value))


@hookimpl
def rook_transport_execute(call):
    return stubborn(call) if call.entry.transport == "stubborn" else None
"""


def test_a_transport_that_ignores_its_closing_too_leaves_no_traceback(
    rook_distribution, rook_workspace
):
    """A transport plugin that catches GeneratorExit as well as its cancellation
    ended the run (Rook closed the coroutine of its own that awaited it) but left
    the plugin's coroutine to the garbage collector, which printed 'Exception
    ignored in: <coroutine object stubborn ...> Traceback ... RuntimeError:
    coroutine ignored GeneratorExit' on Rook's standard error."""
    root = rook_distribution("rook-stubborn", {"stubborn": "rook_stubborn"},
                             {"rook_stubborn.py": STUBBORN})
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": {"stubborn": {}, "timeout_seconds": 1}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    env = {**os.environ, "PYTHONPATH": str(root), "ROOK_NO_CACHE": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root), "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stderr
    hook = json.loads(r.stdout)["scenarios"][0]["hooks"][-1]
    assert hook["status"] == "timeout", hook
    assert hook["diagnosis"].endswith("so Rook closed its coroutine"), hook


BLOCKING = """
import asyncio, time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec


async def blocking(call):
    started = time.time()
    time.sleep(call.timeout + 1.5)  # blocks the event loop past call.timeout
    ended = time.time()
    return HookResult(call.phase, "ok", ended - started, started, ended,
                      data={"output": "late g"}, turn=call.turn, transport="blocking")


async def quick(call):  # awaits: a short answer while the other holds the loop
    await asyncio.sleep(0)
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={"output": "g"},
                      turn=call.turn, transport="quick")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="blocking", load_config=lambda value: value))
    register(TransportSpec(key="quick", load_config=lambda value: value))


@hookimpl
def rook_transport_execute(call):
    if call.entry.transport == "blocking":
        return blocking(call)
    return quick(call) if call.entry.transport == "quick" else None
"""


def test_a_transport_that_blocks_the_event_loop_past_its_timeout_is_a_timeout(
    rook_distribution, rook_workspace, rook_cli
):
    """A transport plugin whose async hook blocked the event loop (``time.sleep``)
    past ``call.timeout`` had its late answer accepted: no timeout can fire while
    the loop is held, so a hook of 2.5 s against a 1 s timeout passed. It is now a
    ``timeout`` naming the plugin and saying it blocked the loop; a plugin's hook
    that awaits, and answers within its timeout, is kept as it was."""
    rook_distribution("rook-blocking", {"blocking": "rook_blocking"},
                      {"rook_blocking.py": BLOCKING})
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": {"blocking": {}, "timeout_seconds": 1}}})
    rook_workspace.profile(
        {"id": "q", "hooks": {"execute": {"quick": {}, "timeout_seconds": 1}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json", "--profile", "p")
    assert r.exit_code == 1 and r.statuses() == {"s": "error"}, r.stderr
    hook = r.report["scenarios"][0]["hooks"][-1]
    assert hook["status"] == "timeout", hook
    assert hook["diagnosis"].startswith(
        "transport 'blocking' (blocking (rook-blocking)) answered after 2."
    ), hook
    assert ", past its 1 s timeout: its hook blocked Rook's event loop (" in hook["diagnosis"]
    assert "time.sleep in an async hook" in hook["diagnosis"], hook
    assert "late g" not in json.dumps(r.report), "the late answer was kept"
    r = rook_cli("run", "--json", "--profile", "q")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr


def test_a_transport_that_handles_its_timeout_but_never_answers_cannot_hang_the_run(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A transport plugin registered with ``handles_timeout=True`` whose hook never
    ended (it did not honour that promise) hung ``rook run`` for ever: Rook set
    no bound of its own. It now stops waiting ``HANDLED_TIMEOUT_GRACE_SECONDS``
    after the timeout (made short here): the hook is a ``timeout`` naming the plugin."""
    from rook_core import transports

    monkeypatch.setattr(transports, "HANDLED_TIMEOUT_GRACE_SECONDS", 1.0)
    source = STUCK.replace('load_config=lambda value: value',
                           'load_config=lambda value: value, handles_timeout=True')
    rook_distribution("rook-stuck", {"stuck": "rook_stuck"}, {"rook_stuck.py": source})
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": {"stuck": {}, "timeout_seconds": 1}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.statuses() == {"s": "error"}, r.stderr
    hook = r.report["scenarios"][0]["hooks"][-1]
    assert hook["status"] == "timeout", hook
    assert hook["diagnosis"] == (
        "transport 'stuck' (stuck (rook-stuck)) did not answer within 1 s; Rook stopped "
        "waiting 1 s later (the plugin sets handles_timeout but did not end its hook "
        "within call.timeout)"
    )


SHAPELESS = """
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec


async def answer(call):
    now = time.time()
    kind = call.entry.config
    status, data = "ok", {"output": "fine"}
    if kind == "status":
        status = "passed"
    elif kind == "set":
        data = {"output": "fine", "tags": {"a", "b"}}
    elif kind == "silent":
        status = "failed"
    elif kind == "empty":
        data = None
    elif kind == "answerless":
        data = {"answer": "fine"}
    elif kind == "nulled":
        data = {"output": None}
    diagnosis, seconds, code = None, 0.0, None
    if kind == "coded":
        status, diagnosis = "failed", 503  # an HTTP status where the text goes
    elif kind == "timed":
        seconds = "0.2 s"
    elif kind == "exited":
        code = "0"
    phase = "close" if kind == "misphased" else call.phase  # a copied close's result
    warning = ["budget ran out"] if kind == "warned" else None
    return HookResult(phase, status, seconds, now, now, data=data, turn=call.turn,
                      diagnosis=diagnosis, exit_code=code, transport="shapeless",
                      warning=warning)


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="shapeless", load_config=lambda value: value))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "shapeless" else None
"""


def test_a_malformed_hook_result_fails_that_hook_naming_the_transport(
    rook_distribution, rook_workspace, rook_cli
):
    """A transport's HookResult was taken as is: data that JSON cannot hold (a set)
    crashed the whole run, blamed on ``executor 'local'`` with every scenario left
    pending; an unknown status or a failed one without a diagnosis gave the reason
    'execute turn 1 failed: None'. Each is now that hook's failure, named."""
    rook_distribution("rook-shapeless", {"shapeless": "rook_shapeless"},
                      {"rook_shapeless.py": SHAPELESS})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"shapeless": "status"}}})
    kinds = ("status", "set", "silent", "empty", "answerless", "nulled", "coded", "timed", "exited", "misphased", "warned",
             "fine")
    for kind in kinds:
        rook_workspace.profile({"id": kind, "hooks": {"execute": {"shapeless": kind}}},
                               active=False)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fine"}]})
    rook_workspace.scenario({"id": "t", "goal": "g", "criteria": [{"contains": "fine"}]})
    expected = {
        "status": "transport 'shapeless' (shapeless (rook-shapeless)) returned a HookResult with status 'passed' "
        "(expected ok, failed, timeout)",
        "set": "transport 'shapeless' (shapeless (rook-shapeless)) returned a HookResult whose data is not JSON: "
        "Object of type set is not JSON serializable",
        "silent": "transport 'shapeless' (shapeless (rook-shapeless)) gave status failed and no diagnosis",
        # was "the JSON object has no output field (keys: none)", naming no transport
        "empty": "transport 'shapeless' (shapeless (rook-shapeless)) returned an ok execute result without data "
        "(the agent's answer goes in data, as {'output': ...})",
        # were "the JSON object has no output field (keys: answer)", naming no transport
        "answerless": "transport 'shapeless' (shapeless (rook-shapeless)) returned an ok execute "
        "result whose data has no output field (keys: answer): the agent's answer goes in data, as "
        "{'output': ...}",
        "nulled": "transport 'shapeless' (shapeless (rook-shapeless)) returned an ok execute "
        "result whose data's output is None, which holds no answer: the agent's answer goes in "
        "data, as "
        "{'output': ...}",
        # was the reason '... failed: 503', and then no report could be written
        "coded": "transport 'shapeless' (shapeless (rook-shapeless)) returned a HookResult whose diagnosis is a int, "
        "not a text: 503",
        # were a crash blamed on the executor, and reports that could not be written
        "timed": "transport 'shapeless' (shapeless (rook-shapeless)) returned a HookResult whose seconds is a str, "
        "not a number: '0.2 s'",
        "exited": "transport 'shapeless' (shapeless (rook-shapeless)) returned a HookResult whose exit_code is a str, "
        "not a whole number: '0'",
        "warned": "transport 'shapeless' (shapeless (rook-shapeless)) returned a HookResult whose warning is a "
        "list, not a text: ['budget ran out']",
        # was recorded as a close hook, the turn's answer taken from it
        "misphased": "transport 'shapeless' (shapeless (rook-shapeless)) returned a HookResult of phase 'close' "
        "for its 'execute' hook (HookResult(call.phase, ...))",
    }
    for kind, reason in expected.items():
        r = rook_cli("run", "--json", "--profile", kind,
                     "--report", f"junit:{rook_workspace.root}/r.xml")
        assert r.exception is None and "Traceback" not in r.stderr, r.stderr
        assert "rook: error" not in r.stderr, r.stderr  # the report is written
        assert r.exit_code == 1 and r.statuses() == {"s": "error", "t": "error"}, r.stderr
        assert r.report["scenarios"][0]["reason"] == f"execute turn 1 failed: {reason}"
    r = rook_cli("run", "--json", "--profile", "fine")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed", "t": "passed"}


MISSPELT = """
from rook_core.hookspecs import hookimpl


@hookimpl
def rook_transport_excute(call):
    return None
"""


def test_a_misspelt_hook_names_the_plugin_its_distribution_and_the_fix(
    rook_distribution, rook_workspace, rook_cli
):
    """The error for a misspelt hook implementation showed only pluggy's
    ``<module 'rook_typo' from '...'>``, while ``rook doctor``'s fix said
    'pip install --upgrade DIST ... ROOK_DISABLE_PLUGINS=NAME' for the plugin
    'named above', which it was not: it now names the entry point, the
    distribution, the hook it meant and the switch."""
    rook_distribution("rook-typo", {"typo": "rook_typo"}, {"rook_typo.py": MISSPELT})
    message = (
        "plugin typo (rook-typo) implements rook_transport_excute, a hook Rook does not "
        "define (did you mean rook_transport_execute?); fix the plugin or disable it with "
        "ROOK_DISABLE_PLUGINS=typo"
    )
    r = rook_cli("plugins")
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = rook_cli("doctor", "-w", str(rook_workspace.root))
    assert r.exit_code == 1 and message in r.stdout, r.stdout


class _Typo:
    @hookimpl
    def rook_register_criterai(self, register):
        pass


def _typo_module():
    module = types.ModuleType("rook_typo")
    exec(MISSPELT, vars(module))
    return module


@pytest.mark.parametrize(
    "make, name, wrong, meant",
    [
        (_typo_module, "rook_typo", "rook_transport_excute", "rook_transport_execute"),
        (_Typo, f"{__name__}._Typo", "rook_register_criterai", "rook_register_criteria"),
    ],
)
def test_a_misspelt_hook_of_an_in_test_plugin_gets_rooks_message_not_pluggys(
    make, name, wrong, meant, rook_plugin, rook_workspace, rook_cli
):
    """A plugin registered with the ``rook_plugin`` fixture whose hook is misspelt
    ended the command with pluggy's PluginValidationError (exit 1, the exception
    in the CliResult, nothing on stderr), where the same plugin installed gets
    Rook's message: it now gets that message too, exit 2, without the
    ROOK_DISABLE_PLUGINS fix (that switch names entry points only)."""
    rook_plugin(make())
    r = rook_cli("plugins")
    assert r.exit_code == 2 and r.exception is None, (r.exit_code, r.exception)
    assert (
        f"rook: error: plugin {name} implements {wrong}, a hook Rook does not define "
        f"(did you mean {meant}?); fix the plugin or unregister it: it is registered in "
        "this process, not from an entry point\n"
    ) in r.stderr, r.stderr
    assert "ROOK_DISABLE_PLUGINS" not in r.stderr
    r = rook_cli("doctor")
    assert r.exit_code == 1 and f"plugin {name} implements {wrong}" in r.stdout, r.stdout


class _WrongArgument:
    @hookimpl
    def rook_register_criteria(self, registry):
        pass


def test_a_hook_with_a_wrong_argument_in_an_in_test_plugin_is_named_not_pluggys(
    rook_plugin, rook_workspace, rook_cli
):
    """A plugin registered with ``rook_plugin`` whose hook takes an argument the
    hook does not have (``registry`` for ``register``) ended the command with
    pluggy's PluginValidationError (exit 1, nothing on stderr; installed, the
    same plugin is named as failing to load): it is now Rook's error, exit 2,
    naming the plugin, the hook and the argument on one line."""
    rook_plugin(_WrongArgument())
    r = rook_cli("plugins")
    assert r.exit_code == 2 and r.exception is None, (r.exit_code, r.exception)
    assert (  # pluggy's text names it as Rook does, not by its id(), a number
        f"rook: error: plugin {__name__}._WrongArgument cannot be registered: "
        f"PluginValidationError: Plugin '{__name__}._WrongArgument' for hook "
        "'rook_register_criteria'; "
    ) in r.stderr, r.stderr
    assert "Argument(s) {'registry'} are declared in the hookimpl" in r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr


class _Observer:
    @hookimpl
    def rook_evidence_recorded(self, result):
        raise RuntimeError("observer broke")


class _Registrar:
    @hookimpl
    def rook_register_reporters(self, register):
        raise RuntimeError("the licence server is down")


class _Merger:
    @hookimpl
    def rook_evidence_merged(self, merged):
        raise RuntimeError("cannot join my files")


class _BareObserver:
    @hookimpl
    def rook_evidence_recorded(self, result):
        raise RuntimeError  # no message: none said, no dangling colon


class _BareMerger:
    @hookimpl
    def rook_evidence_merged(self, merged):
        raise RuntimeError


@pytest.mark.parametrize(
    "plugin, said",
    [
        (
            _Observer,
            "rook: warning: plugin {}._Observer raised RuntimeError in rook_evidence_recorded: "
            "observer broke (the run goes on; unregister the plugin: it is registered in this "
            "process, not from an entry point)\n",
        ),
        (
            _Registrar,
            "rook: error: plugin {}._Registrar raised RuntimeError in rook_register_reporters: "
            "the licence server is down (unregister it: it is registered in this process, "
            "not from an entry point)\n",
        ),
        (
            _Merger,
            "rook: warning: plugin {}._Merger raised RuntimeError in rook_evidence_merged: "
            "cannot join my files (its run-level files are not joined; unregister the plugin: "
            "it is registered in this process, not from an entry point)\n",
        ),
        (
            _BareObserver,
            "rook: warning: plugin {}._BareObserver raised RuntimeError in rook_evidence_recorded "
            "(the run goes on; unregister the plugin: it is registered in this "
            "process, not from an entry point)\n",
        ),
        (
            _BareMerger,
            "rook: warning: plugin {}._BareMerger raised RuntimeError in rook_evidence_merged "
            "(its run-level files are not joined; unregister the plugin: "
            "it is registered in this process, not from an entry point)\n",
        ),
    ],
)
def test_an_in_test_plugin_that_raises_is_named_with_a_way_out_that_fits_it(
    plugin, said, rook_plugin, rook_workspace, rook_cli, monkeypatch
):
    """A plugin registered with ``rook_plugin`` that raised was named by its id(), a
    number, and the advice was 'disable it with ROOK_DISABLE_PLUGINS=<that number>',
    which disables nothing: that switch names entry points. It is now named by its
    class, and the advice says it is registered in process (an installed one still
    gets the switch: the tests of the same faults through entry points)."""
    rook_plugin(plugin())
    secret_workspace(rook_workspace, monkeypatch)
    if plugin in (_Merger, _BareMerger):  # a sharded run, joined by rook merge
        for i in (1, 2):
            r = rook_cli("run", "--shard", f"{i}/2", "--run-name", "m-1")
            assert r.exit_code == 0, r.stderr
        r = rook_cli("merge", "--run", "m-1")
        assert r.exit_code == 0, r.stderr
    else:
        r = rook_cli("run")
        assert r.exit_code == (2 if plugin is _Registrar else 0), r.stderr
    assert r.exception is None and said.format(__name__) in r.stderr, r.stderr
    assert "ROOK_DISABLE_PLUGINS" not in r.stderr


class _Unmarked:
    def rook_register_criteria(self, register):
        pass


class _Methods:
    @hookimpl
    def rook_register_criteria(self, register):
        pass


@pytest.mark.parametrize(
    "plugin, said",
    [
        (
            _Methods,
            f"plugin {__name__}._Methods is a class whose hooks are methods: "
            "register an instance of it (_Methods())",
        ),
        (
            _Unmarked(),
            f"plugin {__name__}._Unmarked: it implements no Rook hook: rook_register_criteria "
            "is not marked with @hookimpl (from rook_core.hookspecs import hookimpl)",
        ),
    ],
)
def test_an_in_test_plugin_given_as_a_class_or_with_no_hook_is_named_as_installed(
    plugin, said, rook_plugin, rook_workspace, rook_cli
):
    """``rook_plugin(Plugin)`` (the class, not an instance) ended rook run with
    'plugin Plugin raised TypeError in rook_register_criteria: ... missing 1
    required positional argument: 'self'', and a plugin whose hooks lack
    @hookimpl was registered with none (its criterion then 'unknown'), where an
    entry point naming either is refused saying so: Rook.register now refuses
    them the same way, exit 2."""
    rook_plugin(plugin)
    r = rook_cli("plugins")
    assert r.exit_code == 2 and r.exception is None, (r.exit_code, r.exception)
    assert f"rook: error: {said}\n" == r.stderr, r.stderr


def test_checking_a_hook_result_does_not_encode_a_big_output():
    """Every hook's result is checked to be JSON; encoding it to tell cost
    milliseconds per hook for a big output (10 MiB: about the time of
    ``json.dumps``), where the data of every built-in transport is JSON's own
    types, which a walk over its values tells at once."""
    import asyncio
    import time

    from rook_core.hookspecs import hookimpl
    from rook_core.models import HookCall, HookEntry, HookResult, OutputLimits
    from rook_core.plugins import build_plugin_manager
    from rook_core.transports import dispatch

    data = {"output": "é" * (5 * 1024 * 1024), "calls": [{"name": "t", "arguments": {"n": 1}}]}

    class Big:
        @hookimpl
        def rook_transport_execute(self, call):
            async def answer():
                return HookResult("execute", "ok", 0.0, 0.0, 0.0, data=data, transport="big")

            return answer() if call.entry.transport == "big" else None

    rook = build_plugin_manager(load_entry_points=False)
    rook.pm.register(Big(), "big")
    call = HookCall("execute", HookEntry("execute", "big", None), None, {}, 10.0, OutputLimits())
    start = time.perf_counter()
    json.dumps(data)
    encoding = time.perf_counter() - start

    async def dispatched():
        start = time.perf_counter()
        result = await dispatch(rook.hook, call)
        return result, time.perf_counter() - start

    result, checking = asyncio.run(dispatched())
    assert result.data is data and result.status == "ok"
    assert checking < encoding / 5, (checking, encoding)


NOT_AN_OBJECT = """
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec


def answer(call):
    async def run():
        now = time.time()
        data = {"output": "fine"} if call.phase == "execute" else {}
        details = {}
        if call.phase == call.entry.config["phase"]:
            if call.entry.config.get("details"):
                details = call.entry.config["data"]
            else:
                data = call.entry.config["data"]
        return HookResult(call.phase, "ok", 0.0, now, now, data=data, details=details,
                          turn=call.turn, transport="listy")
    return run() if call.entry.transport == "listy" else None


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="listy", load_config=lambda value: value))


@hookimpl
def rook_session_open(call):
    return answer(call)


@hookimpl
def rook_transport_execute(call):
    return answer(call)


@hookimpl
def rook_evidence_collect(call):
    return answer(call)
"""


def test_hook_result_data_that_is_not_a_json_object_fails_that_hook_naming_the_transport(
    rook_distribution, rook_workspace, rook_cli
):
    """``data`` is the JSON object the agent answered. A list or a string is JSON, so
    it was taken: an open or collect that returned one crashed the run, blamed on
    ``executor 'local' (rook-harness) raised AttributeError`` with the scenario left
    pending, and an execute that returned a string said ``no output field (keys: e,
    h, l, l, o)``; ``details`` that are not a mapping crashed ``rook profile test``.
    Now it is that hook's failure, naming the transport."""
    rook_distribution("rook-listy", {"listy": "rook_listy"}, {"rook_listy.py": NOT_AN_OBJECT})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fine"}]})
    cases = [
        (phase, data, shown, False)
        for phase in ("open", "execute", "collect")
        for data, shown in ((["a", "b"], "list"), ("hello", "str"))
    ]
    cases.append(("execute", ["a"], "list", True))
    for phase, data, shown, details in cases:
        name = "details" if details else "data"
        entry = {"listy": {"phase": phase, "data": data, "details": details}}
        rook_workspace.profile(
            {"id": "p", "hooks": {"open": entry, "execute": entry, "collect": entry}}
        )
        r = rook_cli("run", "--json")
        assert r.exception is None and "Traceback" not in r.stderr, r.stderr
        assert "executor" not in r.stderr, r.stderr
        assert r.exit_code == 1 and r.statuses() == {"s": "error"}, (phase, r.stderr)
        reason = r.report["scenarios"][0]["reason"]
        assert (
            f"transport 'listy' (listy (rook-listy)) returned a HookResult whose {name} is a {shown}, "
            "not a JSON object" in reason
        ), (phase, reason)
    r = rook_cli("profile", "test", "-w", str(rook_workspace.root))
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and "whose details is a list" in r.stdout + r.stderr, r.stdout


def test_a_phase_the_transport_does_not_run_is_refused_before_anything_runs(
    rook_distribution, rook_workspace, rook_cli
):
    """A profile naming a transport for a phase its plugin implements no hook of
    (``open: {shapeless: ...}`` where the plugin runs only execute) made the run
    directory, ran the phases before it, and then stopped with exit 2 ("no
    installed plugin runs the 'open' phase"), naming no file and leaving an
    incomplete run in the history. It is refused when the profile is checked:
    exit 2, naming the file, the phase and the plugin, nothing run."""
    rook_distribution("rook-shapeless", {"shapeless": "rook_shapeless"},
                      {"rook_shapeless.py": SHAPELESS})
    ws = rook_workspace
    ws.script("prep.sh", "#!/bin/bash\ntouch \"$ROOK_RUN_STATE_DIR/../../prepared\"\necho '{}'\n")
    profile = ws.profile({"id": "p", "hooks": {"prepare": "scripts/prep.sh",
                                               "open": {"shapeless": "fine"},
                                               "execute": {"shapeless": "fine"}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "fine"}]})
    for args in (("run",), ("profile", "test", "p", "-w", str(ws.root)), ("doctor",)):
        r = rook_cli(*args)
        assert r.exception is None and "Traceback" not in r.stderr, r.stderr
        if args[0] == "doctor":
            assert r.exit_code == 1 and "hooks.open" in r.stdout + r.stderr, r.stdout
            continue
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        said = " ".join((r.stdout + r.stderr).split())  # profile test wraps its lines
        assert (f"{profile}: hooks.open: transport 'shapeless' (shapeless (rook-shapeless)) "
                "runs no 'open' phase (it implements no rook_session_open hook)") in said, said
    assert not list(ws.root.rglob("runs/*")) and not list(ws.root.rglob("prepared"))


NEEDS = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Traced(CriterionType):
    name = "traced"
    needs = {NEEDS}
    per_turn = False

    def evaluate(self, config, view):
        return Verdict(PASSED, "traced")


@hookimpl
def rook_register_criteria(register):
    register(Traced())
"""


@pytest.mark.parametrize("needs, said", [
    ('frozenset({"trace"})', "needs 'trace', not a capability a profile can declare"),
    ('"calls"', "needs 'calls': needs must be a set of capabilities"),
])
def test_a_criterion_that_needs_what_no_profile_can_declare_names_the_plugin(
    rook_distribution, rook_workspace, rook_cli, needs, said
):
    """``needs = {"trace"}`` (no such capability) or ``needs = "calls"`` (read as
    its letters) made every scenario using the type not_runnable ("needs
    capability 'c' ...; the profile does not declare it"), which no profile can
    fix, and the run exited 0: nothing verified, nothing failed."""
    rook_workspace.script("a.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "x"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"traced": True}]})
    rook_distribution("rook-traced", {"traced": "rook_traced"},
                      {"rook_traced.py": NEEDS.replace("{NEEDS}", needs)})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"plugin traced (rook-traced): criterion type 'traced' {said}" in r.stderr, r.stderr
    assert "ROOK_DISABLE_PLUGINS=traced" in r.stderr and "Traceback" not in r.stderr
    assert not list(rook_workspace.runs_dir.iterdir())
    r = rook_cli("run", env={"ROOK_DISABLE_PLUGINS": "traced"})
    assert r.exit_code == 2 and "unknown criterion type" in r.stderr, r.stderr


@pytest.mark.parametrize("needs, answer, said", [
    ('frozenset({"calls"})', {"output": "x"},
     "it needs the calls capability, and the evidence in view shows no call log (calls were "
     "not observed)"),
    ('frozenset({"usage"})', {"output": "x", "calls": [], "usage": {"cost_usd": 0.1}},
     "it needs the usage capability, and the evidence in view shows no token count (usage was "
     "not observed)"),
])
def test_a_plugin_criterion_that_passes_on_a_capability_never_observed_is_unverifiable(
    rook_distribution, rook_workspace, rook_cli, needs, answer, said
):
    """SPEC 5: where the capability is declared but this scenario's evidence does
    not show it, the criterion is unverifiable: never a pass. Rook made a scenario
    needing it not_runnable, but the unverifiable half was left to the plugin, and a
    plugin type with needs = {"calls"} that passed without looking at view.calls (None)
    passed the scenario on a call log nobody saw (and one that failed, failed it)."""
    rook_workspace.script("a.sh", f"""#!/bin/bash\n[ "$1" = execute ] && echo '{json.dumps(answer)}'\n""")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"},
                            "capabilities": {"calls": True, "usage": True}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"traced": True}]})
    rook_distribution("rook-traced", {"traced": "rook_traced"},
                      {"rook_traced.py": NEEDS.replace("{NEEDS}", needs)})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s": "unverifiable"}, r.stdout + r.stderr
    verdict = r.report["scenarios"][0]["criteria"][0]
    assert verdict["status"] == "unverifiable", verdict
    assert verdict["reason"] == (
        f"criterion traced (traced (rook-traced)) passed ('traced'), but {said}: a verdict "
        "on evidence never seen is unverifiable"), verdict["reason"]
    # a fail on it is no more founded: a missing call log read as an empty one
    rook_distribution("rook-failing", {"failing": "rook_failing"}, {"rook_failing.py": NEEDS.replace(
        "{NEEDS}", needs).replace("PASSED", "FAILED").replace('"traced"', '"failing"')})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"failing": True}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s": "unverifiable"}, r.stdout + r.stderr
    reason = r.report["scenarios"][0]["criteria"][0]["reason"]
    assert reason.startswith("criterion failing (failing (rook-failing)) failed ('failing'), but "
                             "it needs the "), reason
    # with the evidence there, its verdict stands
    rook_workspace.script("a.sh", """#!/bin/bash\n[ "$1" = execute ] && echo '{"output": "x", "calls": [], "usage": {"input": 1, "output": 2}}'\n""")
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.statuses() == {"s": "failed"}, r.stdout + r.stderr


def test_a_plugin_criterion_whose_view_leaves_out_collects_calls_says_so(
    rook_distribution, rook_workspace, rook_cli
):
    """capabilities.md: a plugin type needing calls whose view shows none is
    unverifiable. Where collect reported them (the profile observed calls) the reason
    said 'calls were not observed', with no word that they were collect's, which a
    per_turn type's view of one turn (or a turn: N view) leaves out."""
    rook_workspace.script("a.sh", '#!/bin/bash\ncat >/dev/null\n'
                          '[ "$1" = execute ] && echo \'{"output": "x"}\'\n'
                          '[ "$1" = collect ] && echo \'{"calls": [{"name": "f"}]}\'\nexit 0\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/a.sh",
                                                 "collect": "scripts/a.sh"},
                            "capabilities": {"calls": True}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"traced": True}, {"traced": True, "turn": 1}, {"turned": True}]})
    rook_distribution("rook-traced", {"traced": "rook_traced"},
                      {"rook_traced.py": NEEDS.replace("{NEEDS}", 'frozenset({"calls"})')})
    rook_distribution("rook-turned", {"turned": "rook_turned"}, {"rook_turned.py": NEEDS.replace(
        "{NEEDS}", 'frozenset({"calls"})').replace("per_turn = False", "per_turn = True")
        .replace('"traced"', '"turned"')})
    r = rook_cli("run", "--json")
    whole, one, turned = r.report["scenarios"][0]["criteria"]
    assert whole["status"] == "passed", whole  # collect's calls in its view
    assert one["status"] == turned["status"] == "unverifiable", (one, turned)
    assert one["reason"].endswith(
        "but it needs the calls capability, and turn 1 reported no call log: only collect "
        "reported calls, for the whole scenario, which no one turn's view holds (leave turn "
        "out to judge them): a verdict on evidence never seen is unverifiable"), one["reason"]
    assert turned["reason"].endswith(
        "but it needs the calls capability, and turn 1 reported no call log: only collect "
        "reported calls, for the whole scenario, which the view of a type judged on one turn "
        "(per_turn = True) never holds (per_turn = False does): a verdict on evidence never "
        "seen is unverifiable"), turned["reason"]
    # token counts alike
    rook_workspace.script("a.sh", '#!/bin/bash\ncat >/dev/null\n'
                          '[ "$1" = execute ] && echo \'{"output": "x"}\'\n'
                          '[ "$1" = collect ] && echo \'{"usage": {"input": 3}}\'\nexit 0\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/a.sh",
                                                 "collect": "scripts/a.sh"},
                            "capabilities": {"usage": True}})
    rook_distribution("rook-counted", {"counted": "rook_counted"}, {"rook_counted.py": NEEDS.replace(
        "{NEEDS}", 'frozenset({"usage"})').replace('"traced"', '"counted"')})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [
        {"counted": True}, {"counted": True, "turn": 1}]})
    r = rook_cli("run", "--json")
    whole, one = r.report["scenarios"][0]["criteria"]
    assert whole["status"] == "passed" and one["status"] == "unverifiable", (whole, one)
    assert one["reason"].endswith(
        "but it needs the usage capability, and turn 1 reported no token count: only collect "
        "reported usage, for the whole scenario, which no one turn's view holds (leave "
        "turn out to judge them): a verdict on evidence never seen is unverifiable"), one["reason"]


def test_a_plugin_criterion_judging_all_turns_together_could_not_see_the_turns_not_sent(
    rook_distribution, rook_workspace, rook_cli
):
    """criteria.md: a turn: all criterion that held on every turn sent is unverifiable
    when the conversation ended before the others were (it could not see them), a
    rubric's or a plugin judge's judging all turns together too. A plugin criterion
    type judging all turns together (per_turn = False) passed all the same."""
    rook_workspace.script("a.sh", """#!/bin/bash\n[ "$1" = execute ] && echo '{"output": "x", "conversation": "c"}'\n""")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"},
                            "capabilities": {"multi_turn": True}})
    rook_workspace.scenario({"id": "s", "turns": ["a", "b", "c"], "max_turns": 2,
                             "criteria": [{"traced": True, "turn": "all"}, {"traced": True}]})
    rook_distribution("rook-traced", {"traced": "rook_traced"},
                      {"rook_traced.py": NEEDS.replace("{NEEDS}", "frozenset()")})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    every, last = r.report["scenarios"][0]["criteria"]
    assert every["status"] == "unverifiable", every
    assert every["reason"] == ("traced; but turn 3 was not sent: the conversation ended after "
                               "turn 2 (the scenario's max_turns (2) reached)"), every["reason"]
    assert last["status"] == "passed", last  # the last turn sent is the last turn


ENDLESS = """
import asyncio
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType


class Forever(CriterionType):
    name = "forever"
    timeout_seconds = 1

    async def evaluate(self, config, view):
        await asyncio.Event().wait()  # a service that never answers


class Stuck:
    timeout_seconds = 1

    async def __call__(self, config, view):
        await asyncio.Event().wait()


@hookimpl
def rook_register_criteria(register):
    register(Forever())


@hookimpl
def rook_register_judges(register):
    register("stuck", Stuck())
"""


@pytest.mark.timeout(60)
def test_a_criterion_or_judge_that_never_answers_cannot_hang_the_run(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion or judge plugin whose async evaluation never returned hung
    ``rook run`` for ever (hooks have timeouts, criteria had none). Past its
    ``timeout_seconds`` the criterion is an error naming the plugin, the other
    criteria are judged and the run goes on."""
    rook_distribution("rook-endless", {"endless": "rook_endless"}, {"rook_endless.py": ENDLESS})
    secret_workspace(
        rook_workspace,
        monkeypatch,
        [{"forever": True}, {"judge": {"name": "stuck"}}, {"contains": "HELLO"}],
    )
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"s1": "error", "s2": "error"}, r.stderr
    assert_timed_out_criteria(r.report)


def assert_timed_out_criteria(report):
    """The endless plugin's criterion and judge an error past their 1 s, each
    naming the plugin; the run's built-in criterion judged as usual."""
    forever, stuck, contains = report["scenarios"][0]["criteria"]
    assert forever["status"] == stuck["status"] == "error"
    assert forever["reason"] == (
        "criterion forever (endless (rook-endless)) gave no verdict within 1 s "
        "(its timeout_seconds); it was cancelled"
    ), forever
    assert stuck["reason"] == (
        "judge 'stuck' (endless (rook-endless)) gave no verdict within 1 s "
        "(its timeout_seconds); it was cancelled"
    ), stuck
    assert contains["status"] == "passed"



STUCK_SYNC = """
import threading
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType


class Forever(CriterionType):
    name = "forever"
    timeout_seconds = 1

    def evaluate(self, config, view):
        threading.Event().wait()  # a blocking call that never returns


class Stuck:
    timeout_seconds = 1

    def __call__(self, config, view):
        threading.Event().wait()


@hookimpl
def rook_register_criteria(register):
    register(Forever())


@hookimpl
def rook_register_judges(register):
    register("stuck", Stuck())
"""


def test_a_plain_criterion_or_judge_that_never_returns_cannot_hang_the_run(
    rook_distribution, rook_workspace, monkeypatch
):
    """A criterion or judge plugin whose plain (not async) evaluation never
    returned blocked ``rook run`` for ever, Ctrl-C included: only awaitables had
    ``timeout_seconds``. A third-party plugin's plain evaluation now runs in a
    thread bounded by the same timeout: past it the criterion is an error naming
    the plugin, the run goes on, and the stuck thread does not keep ``rook`` from
    exiting (the real command, in its own process)."""
    root = rook_distribution("rook-endless", {"endless": "rook_endless"},
                             {"rook_endless.py": STUCK_SYNC})
    secret_workspace(
        rook_workspace,
        monkeypatch,
        [{"forever": True}, {"judge": {"name": "stuck"}}, {"contains": "HELLO"}],
    )
    env = {**os.environ, "PYTHONPATH": str(root), "ROOK_NO_CACHE": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root), "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert "Traceback" not in r.stderr, r.stderr
    report = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr
    assert {s["id"]: s["status"] for s in report["scenarios"]} == {"s1": "error", "s2": "error"}
    assert_timed_out_criteria(report)


ODD_CHECK = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Scored(CriterionType):
    name = "scored_check"

    def check(self, config, judging):
        return 42  # a score where the message goes

    def evaluate(self, config, view):
        return Verdict(PASSED, "fine")


class Odd:
    def check(self, config):
        return 42

    def __call__(self, config, view):
        return Verdict(PASSED, "fine")


@hookimpl
def rook_register_criteria(register):
    register(Scored())


@hookimpl
def rook_register_judges(register):
    register("odd", Odd())
"""


def test_a_check_that_returns_no_text_names_the_plugin_and_what_it_returned(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A judge's or criterion type's ``check`` returning 42 (not a message) refused
    the run with only that value as the reason ('criteria.0.judge: 42'); it now
    names the judge or criterion, its plugin and what it returned."""
    rook_distribution("rook-odd", {"odd": "rook_odd"}, {"rook_odd.py": ODD_CHECK})
    secret_workspace(
        rook_workspace, monkeypatch, [{"judge": {"name": "odd"}}, {"scored_check": True}]
    )
    r = rook_cli("run")
    assert r.exit_code == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert (
        "scenario s1: criteria.0.judge: the judge 'odd' (odd (rook-odd)) returned 42 from "
        "check, not a message (a text, or None when the configuration is fine)"
    ) in r.stderr, r.stderr
    assert (
        "scenario s1: criteria.1.scored_check: the criterion plugin odd (rook-odd) returned 42 "
        "from check, not a message (a text, or None when the value is fine)"
    ) in r.stderr, r.stderr
    assert not list(rook_workspace.runs_dir.iterdir())


UNCLOSED = """
import os
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing


async def start(run):
    return "pool"


async def stop(resource):
    raise RuntimeError("could not close the pool, key " + os.environ["DESK_KEY"] + "\x1b[2J\x07")


async def answer(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={"output": call.stdin},
                      turn=call.turn, transport="unclosed")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="unclosed", load_config=lambda value: value,
                           saved_names=saves_nothing, start=start, stop=stop))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "unclosed" else None
"""


def test_a_transport_whose_stop_raises_is_a_warning_and_the_results_stand(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """An exception from a transport plugin's ``stop`` was silently ignored: exit 0,
    nothing said. The run's results still stand, and a warning (redacted) names
    the transport and its plugin; its control characters are shown escaped (they
    were printed raw: ESC [2J cleared the screen)."""
    rook_distribution("rook-unclosed", {"unclosed": "rook_unclosed"},
                      {"rook_unclosed.py": UNCLOSED})
    monkeypatch.setenv("DESK_KEY", SECRET)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": {"unclosed": {}}},
            "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}],
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "HELLO", "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr
    warning = (
        "rook: warning: transport 'unclosed' (unclosed (rook-unclosed)) could not stop: "
        "RuntimeError: could not close the pool, key [redacted:DESK_KEY]\\x1b[2J\\x07 "
        "(the run's results are kept)"
    )
    assert r.stderr.count(warning) == 1, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr, r.stderr
    assert SECRET not in r.stderr + r.stdout
    assert SECRET not in rook_workspace.all_run_text(r.report["run"]["id"])


FORGETFUL = UNCLOSED.replace("stop=stop))", "stop=stop_ok, scenario_ended=ended))").replace(
    "async def answer(call):",
    """async def stop_ok(resource):
    pass


def ended(resource, sr):
    print("ENDED", resource, sr.key, file=sys.stderr)
    raise RuntimeError("could not let go, key " + os.environ["DESK_KEY"])


async def answer(call):""",
)


def test_a_transport_told_a_scenario_run_ended_is_told_once_and_a_raise_is_a_warning(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """``TransportSpec.scenario_ended`` is called once each scenario run ends, with
    the resource ``start`` gave; one that raises loses nothing: the scenario's result
    stands and a warning (redacted) names the transport and its plugin."""
    rook_distribution("rook-unclosed", {"unclosed": "rook_unclosed"},
                      {"rook_unclosed.py": "import sys\n" + FORGETFUL})
    monkeypatch.setenv("DESK_KEY", SECRET)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": {"unclosed": {}}},
            "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}],
        }
    )
    for sid in ("s", "t"):
        rook_workspace.scenario({"id": sid, "goal": "HELLO", "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 0 and r.statuses() == {"s": "passed", "t": "passed"}, r.stderr
    for key in ("s.1", "t.1"):
        assert r.stderr.count(f"ENDED pool {key}\n") == 1, r.stderr
        warning = (
            f"rook: warning: transport 'unclosed' (unclosed (rook-unclosed)) failed when "
            f"scenario run {key[0]} ended: RuntimeError: could not let go, key "
            "[redacted:DESK_KEY] (its result is kept)"
        )
        assert r.stderr.count(warning) == 1, r.stderr
    assert SECRET not in rook_workspace.all_run_text(r.report["run"]["id"])


@pytest.mark.timeout(60)
def test_a_transport_whose_stop_never_returns_cannot_hang_the_run(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A transport plugin's ``stop`` that never returned hung ``rook run`` for ever
    after every scenario had run: no report, and the run, interrupted, was left
    'incomplete'. Rook now waits ``STOP_TIMEOUT_SECONDS`` (10 s) for it, then
    warns naming the transport and its plugin, and the run ends with its
    results. The test waits 1 s of it."""
    from rook_core import transports

    monkeypatch.setattr(transports, "STOP_TIMEOUT_SECONDS", 1.0)
    endless = UNCLOSED.replace(
        'raise RuntimeError("could not close the pool, key " + os.environ["DESK_KEY"] + "\x1b[2J\x07")',
        "import asyncio; await asyncio.Event().wait()",
    )
    rook_distribution("rook-unclosed", {"unclosed": "rook_unclosed"},
                      {"rook_unclosed.py": endless})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"unclosed": {}}}})
    rook_workspace.scenario({"id": "s", "goal": "HELLO", "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr
    warning = (
        "rook: warning: transport 'unclosed' (unclosed (rook-unclosed)) did not stop within "
        "1 s; Rook stopped waiting (the run's results are kept)"
    )
    assert r.stderr.count(warning) == 1, r.stderr
    listed = rook_cli("runs")
    assert "incomplete" not in listed.stdout, listed.stdout



@pytest.mark.timeout(60)
def test_a_transport_whose_start_never_returns_cannot_hang_the_run(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A transport plugin's ``start`` that never returned hung ``rook run`` before
    any scenario ran (only Ctrl-C ended it). Rook now waits
    ``START_TIMEOUT_SECONDS`` for it, then ends the run as for a ``start`` that
    raises (exit 1, naming the transport and its plugin), nothing sent."""
    from rook_core import transports

    monkeypatch.setattr(transports, "START_TIMEOUT_SECONDS", 2.0)  # 60 s by default
    endless = UNCLOSED.replace(
        'async def start(run):\n    return "pool"',
        "async def start(run):\n    import asyncio; await asyncio.Event().wait()",
    )
    assert endless != UNCLOSED
    rook_distribution("rook-unclosed", {"unclosed": "rook_unclosed"},
                      {"rook_unclosed.py": endless})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"unclosed": {}}}})
    rook_workspace.scenario({"id": "s", "goal": "HELLO", "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"s": "error"}, r.stderr
    assert r.report["scenarios"][0]["reason"].startswith(
        "transport 'unclosed' (unclosed (rook-unclosed)) did not start within "
        "2 s; Rook stopped waiting (no scenario was run)"
    )  # recorded as a failed prepare is, never a run left 'incomplete' saying nothing
    assert not r.report["scenarios"][0]["hooks"], "nothing was sent"


BROKEN = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType


class Broken(CriterionType):
    name = "broken"

    def evaluate(self, config, view):
        raise ValueError("tone table missing")


@hookimpl
def rook_register_criteria(register):
    register(Broken())
"""


def test_a_criterion_that_raises_is_named_with_its_plugin(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion type that raised was 'criterion broken raised ValueError: ...',
    naming no plugin (a judge that raised names its plugin); it now does."""
    rook_distribution("rook-broken", {"broken": "rook_broken"}, {"rook_broken.py": BROKEN})
    secret_workspace(rook_workspace, monkeypatch, [{"broken": True}, {"contains": "HELLO"}])
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    broken, contains = r.report["scenarios"][0]["criteria"]
    assert broken["reason"] == (
        "criterion broken (broken (rook-broken)) raised ValueError: tone table missing"
    ), broken
    assert contains["status"] == "passed"


NO_VERDICT = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType


class Echoes(CriterionType):
    name = "echoes"

    def evaluate(self, config, view):
        return "x" * 100_000  # the output, say, instead of a Verdict


@hookimpl
def rook_register_criteria(register):
    register(Echoes())


@hookimpl
def rook_register_judges(register):
    register("echo-judge", lambda config, view: "y" * 100_000)
"""


def test_a_criterion_or_judge_that_returns_no_verdict_is_named_and_cut(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion that returned a long text instead of a Verdict put all of it in the
    criterion's and the scenario's reason (100 KB in every report), naming no plugin."""
    rook_distribution("rook-echoes", {"echoes": "rook_echoes"}, {"rook_echoes.py": NO_VERDICT})
    criteria = [{"echoes": True}, {"judge": {"name": "echo-judge"}}]
    secret_workspace(rook_workspace, monkeypatch, criteria)
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    scenario = r.report["scenarios"][0]
    echoes, judge = scenario["criteria"]
    assert echoes["reason"].startswith("criterion echoes (echoes (rook-echoes)) returned 'xxx")
    assert judge["reason"].startswith("judge 'echo-judge' (echoes (rook-echoes)) returned 'yyy")
    for reason in (echoes["reason"], judge["reason"]):
        assert reason.endswith(", not a Verdict") and len(reason) < 400, reason[-80:]
    assert len(scenario["reason"]) < 1000


ASYNC_REPORTER = """
import asyncio
from rook_core.hookspecs import hookimpl


async def write_count(report, path):
    await asyncio.sleep(0)
    path.write_text(f"{len(report['scenarios'])} scenario runs\\n", encoding="utf-8")


@hookimpl
def rook_register_reporters(register):
    register("count", write_count)
"""


def test_an_async_reporter_writes_its_report(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A reporter whose write is ``async def`` wrote nothing: its coroutine was
    never awaited, no report file appeared, and Rook said nothing but a Python
    RuntimeWarning. It is now awaited, as a judge's or criterion's is."""
    rook_distribution("rook-count-report", {"countrep": "rook_countrep"},
                      {"rook_countrep.py": ASYNC_REPORTER})
    secret_workspace(rook_workspace, monkeypatch)
    out = tmp_path / "runs.txt"
    r = rook_cli("run", f"--report=count:{out}")
    assert r.exit_code == 0 and "never awaited" not in r.stderr, r.stderr
    assert out.read_text() == "2 scenario runs\n"
    again = tmp_path / "again.txt"
    r = rook_cli("report", "latest", f"--report=count:{again}")
    assert r.exit_code == 0, r.stderr
    assert again.read_text() == "2 scenario runs\n"


SILENT_REPORTER = """
from rook_core.hookspecs import hookimpl


def write_elsewhere(report, path):
    with open("results-elsewhere.txt", "w") as fh:  # not the path it was given
        fh.write("done")


@hookimpl
def rook_register_reporters(register):
    register("elsewhere", write_elsewhere)
"""


def test_a_reporter_that_writes_nothing_at_its_path_is_named(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A reporter that wrote nothing at the path it was given (it wrote elsewhere, or
    returned early) left no report and Rook said nothing: the run looked reported."""
    rook_distribution("rook-elsewhere", {"elsewhere": "rook_elsewhere"},
                      {"rook_elsewhere.py": SILENT_REPORTER})
    secret_workspace(rook_workspace, monkeypatch)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out" / "results.txt"
    r = rook_cli("run", f"--report=elsewhere:{out}", "--json")
    assert r.statuses() == {"s1": "passed", "s2": "passed"}, "the run is recorded"
    assert not out.exists()
    assert (
        f"rook: error: --report elsewhere:{out}: the 'elsewhere' reporter (elsewhere "
        "(rook-elsewhere)) wrote nothing at the path it was given" in r.stderr
    ), r.stderr
    assert "write again with: rook report" in r.stderr
    assert r.exit_code == 1


FOLDER_REPORTER = """
from rook_core.hookspecs import hookimpl


def write_folder(report, path):
    path.with_suffix(".css").write_text("a companion")
    path.mkdir()  # a folder where the report goes


@hookimpl
def rook_register_reporters(register):
    register("folder", write_folder)
"""


def test_a_reporter_that_leaves_a_folder_at_its_path_is_named(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A reporter that made a folder at the path it was given (``path.mkdir()``)
    exited 0 with that folder as the report. It is that reporter's failure,
    named, exit 1, and what it wrote is removed as when it raises: the file
    that was there stays."""
    rook_distribution("rook-folder", {"folder": "rook_folder"},
                      {"rook_folder.py": FOLDER_REPORTER})
    secret_workspace(rook_workspace, monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("the last good report")
    for target in ("out/new.txt", "out/old.txt"):
        r = rook_cli("run", f"--report=folder:{target}", "--json")
        assert r.exception is None and r.statuses() == {"s1": "passed", "s2": "passed"}
        assert (
            f"rook: error: --report folder:{target}: the 'folder' reporter (folder "
            "(rook-folder)) left a folder at the path it was given, not a file" in r.stderr
        ), r.stderr
        assert "write again with: rook report" in r.stderr
        assert r.exit_code == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["old.txt"]
    assert (tmp_path / "out" / "old.txt").read_text() == "the last good report"



ODD_FILE_REPORTER = """
import os
from rook_core.hookspecs import hookimpl


def write_fifo(report, path):
    os.mkfifo(path)  # whoever reads "the report" next waits forever


def write_link(report, path):
    os.symlink(os.environ["ODD_OUTSIDE"], path)  # "the report" is a file elsewhere


@hookimpl
def rook_register_reporters(register):
    register("fifo", write_fifo)
    register("link", write_link)
"""


def test_a_reporter_that_leaves_a_link_or_a_pipe_at_its_path_is_named(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A reporter that left a symbolic link (to a file anywhere) or a named pipe
    at the path it was given exited 0 with it moved to the target as the
    report; with ``-`` a pipe hung Rook and a link printed the file it named.
    Each is that reporter's failure, as a folder is: named, exit 1, removed."""
    site = rook_distribution("rook-odd", {"odd": "rook_odd"}, {"rook_odd.py": ODD_FILE_REPORTER})
    secret_workspace(rook_workspace, monkeypatch)
    outside = tmp_path / "outside.txt"
    outside.write_text("not a report")
    monkeypatch.setenv("ODD_OUTSIDE", str(outside))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("the last good report")
    left = {"fifo": "a named pipe", "link": "a symbolic link"}
    for fmt in left:
        for target in ("out/new.txt", "out/old.txt"):
            r = rook_cli("run", f"--report={fmt}:{target}", "--json")
            assert r.exception is None and r.statuses() == {"s1": "passed", "s2": "passed"}
            assert (
                f"rook: error: --report {fmt}:{target}: the '{fmt}' reporter (odd "
                f"(rook-odd)) left {left[fmt]} at the path it was given, not a file" in r.stderr
            ), r.stderr
            assert r.exit_code == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["old.txt"]
    assert (tmp_path / "out" / "old.txt").read_text() == "the last good report"
    assert outside.read_text() == "not a report"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    for fmt in left:  # Rook's own standard output: the pipe is never read, the link never followed
        proc = subprocess.run(
            [sys.executable, "-m", "rook_core", "report", "latest", "--report", f"{fmt}:-"],
            cwd=rook_workspace.root, env=env, capture_output=True, text=True, timeout=60,
        )
        assert proc.returncode == 1 and "not a report" not in proc.stdout, proc.stdout
        assert f"left {left[fmt]} at the path it was given, not a file" in proc.stderr


ODD_COMPANION_REPORTER = """
import os, stat
from rook_core.hookspecs import hookimpl


def write_odd(report, path):
    path.with_suffix(".css").write_text("a companion")
    odd = os.environ["ODD_COMPANION"]
    beside = path.with_name(path.stem + "_files") / "live" if "/" in odd else path.with_suffix(".x")
    beside.parent.mkdir(exist_ok=True)
    if odd.endswith("fifo"):
        os.mkfifo(beside)  # whoever reads it next waits forever
    elif odd.endswith("link"):
        os.symlink(os.environ["ODD_OUTSIDE"], beside)  # a file anywhere
    else:
        os.mknod(beside, 0o600 | stat.S_IFSOCK)
    path.write_text("a new report")


@hookimpl
def rook_register_reporters(register):
    register("oddside", write_odd)
"""


@pytest.mark.parametrize(("odd", "kind"), [
    ("fifo", "a named pipe"), ("link", "a symbolic link"), ("socket", "a socket"),
    ("in/fifo", "a named pipe"),  # in a companion folder
])
def test_a_reporter_that_leaves_a_link_or_a_pipe_beside_its_report_is_named(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path, odd, kind
):
    """A reporter that left a named pipe, a socket or a symbolic link beside its
    report (a companion) had it moved beside the target, as a companion file:
    a pipe hangs whoever reads the report's folder next, a link makes a
    companion any file. It is that reporter's failure, as one at the report's
    own path is: named, exit 1, nothing moved, the last report whole; the
    other reports are written."""
    rook_distribution("rook-oddside", {"oddside": "rook_oddside"},
                      {"rook_oddside.py": ODD_COMPANION_REPORTER})
    secret_workspace(rook_workspace, monkeypatch)
    outside = tmp_path / "outside.txt"
    outside.write_text("not a report")
    monkeypatch.setenv("ODD_OUTSIDE", str(outside))
    monkeypatch.setenv("ODD_COMPANION", odd)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("the last good report")
    where = "out/old_files/live" if "/" in odd else "out/old.x"
    r = rook_cli("run", "--report=oddside:out/old.txt", "--report=json:out/r.json", "--json")
    assert r.exception is None and r.statuses() == {"s1": "passed", "s2": "passed"}
    assert (
        "rook: error: --report oddside:out/old.txt: the 'oddside' reporter (oddside "
        f"(rook-oddside)) left {kind} beside its report ({where}), not a file" in r.stderr
    ), r.stderr
    assert "write again with: rook report" in r.stderr and r.exit_code == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["old.txt", "r.json"]
    assert (tmp_path / "out" / "old.txt").read_text() == "the last good report"
    assert json.loads((tmp_path / "out" / "r.json").read_text())["summary"]["passed"] == 2


EXITS = """
import os, sys
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict



def leave_in(where):
    if os.environ.get("EXITS_IN") == where:
        sys.exit(0)


class Quits(CriterionType):
    name = "quits"

    def parse(self, value):
        leave_in("parse")
        return value

    def check(self, config, judging):
        leave_in("check")

    def evaluate(self, config, view):
        sys.exit(0)


class Leaves:
    def check(self, config):
        leave_in("judge check")

    def __call__(self, config, view):
        sys.exit(3)


class LeavesLater:
    async def __call__(self, config, view):
        sys.exit(0)


def write_and_leave(report, path):
    path.write_text("half")
    sys.exit(0)


@hookimpl
def rook_register_criteria(register):
    register(Quits())


@hookimpl
def rook_register_judges(register):
    register("leaves", Leaves())
    register("leaves-later", LeavesLater())


@hookimpl
def rook_register_reporters(register):
    register("leaving", write_and_leave)
"""


@LEAVING_BY
def test_a_plugin_that_calls_sys_exit_is_named_and_the_run_goes_on(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path, how
):
    """A criterion, judge or reporter calling sys.exit() (SystemExit, no Exception)
    ended rook run at once with the plugin's exit code, 0 for sys.exit(0): no
    table, no --json document, the scenario left pending, the other reports not
    written, and CI green. In evaluate or a judge it is that criterion's error; in
    write, that report's failure (exit 1); in parse or check, a refused run (exit 2)."""
    rook_distribution("rook-exits", {"exits": "rook_exits"}, {"rook_exits.py": leaving_by(EXITS, how)})
    criteria = [{"quits": True}, {"judge": {"name": "leaves"}},
                {"judge": {"name": "leaves-later"}}, {"contains": "HELLO"}]
    secret_workspace(rook_workspace, monkeypatch, criteria)
    out = tmp_path / "r.tap"
    r = rook_cli("run", "--json", f"--report=leaving:{out}", f"--report=junit:{tmp_path}/r.xml")
    assert r.exit_code == 1 and r.statuses() == {"s1": "error", "s2": "error"}, r.stderr
    quits, leaves, later, contains = r.report["scenarios"][0]["criteria"]
    assert quits["reason"] == f"criterion quits (exits (rook-exits)) raised {how}: 0", quits
    assert leaves["reason"] == f"judge 'leaves' (exits (rook-exits)) raised {how}: 3"
    assert later["reason"] == f"judge 'leaves-later' (exits (rook-exits)) raised {how}: 0"
    assert contains["status"] == "passed"
    assert (tmp_path / "r.xml").is_file() and not out.exists()
    assert (f"--report leaving:{out}: the 'leaving' reporter (exits (rook-exits)) failed: "
            f"{how}: 0") in r.stderr, r.stderr
    for where in ("parse", "check", "judge check"):
        monkeypatch.setenv("EXITS_IN", where)  # a new value: parse is not cached
        secret_workspace(rook_workspace, monkeypatch, [{"quits": where}, *criteria[1:]])
        r = rook_cli("run")
        assert r.exit_code == 2 and "exits (rook-exits)" in r.stderr, (where, r.stderr)
        assert how in r.stderr, (where, r.stderr)


BASE_EXCEPTIONS = """
import asyncio

from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Abort(BaseException):
    pass


class Aborts(CriterionType):
    name = "aborts"

    def evaluate(self, config, view):
        raise Abort("gave up")


class Slow:
    async def __call__(self, config, view):
        await asyncio.sleep(0.2)
        if config.get("abort"):
            raise Abort("gave up later")
        return Verdict(PASSED, "slow and fine")


@hookimpl
def rook_register_criteria(register):
    register(Aborts())


@hookimpl
def rook_register_judges(register):
    register("slow", Slow())
"""


def test_a_criterion_raising_its_own_base_exception_is_that_criterion_s_error(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion or judge raising an exception of its own derived from
    BaseException (neither Exception nor SystemExit) ended rook run with a
    Python traceback, alone or judged at once with other slow criteria. It is
    that criterion's error, as an Exception is; the other criteria are judged."""
    rook_distribution("rook-abort", {"abort": "rook_abort"}, {"rook_abort.py": BASE_EXCEPTIONS})
    for criteria in ([{"aborts": True}],
                     [{"aborts": True}, {"judge": {"name": "slow", "abort": True}},
                      {"judge": {"name": "slow"}}, {"contains": "HELLO"}]):
        secret_workspace(rook_workspace, monkeypatch, criteria)
        r = rook_cli("run", "--json")
        assert r.exit_code == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.statuses() == {"s1": "error", "s2": "error"}, r.stderr
        got = r.report["scenarios"][0]["criteria"]
        assert got[0]["reason"] == "criterion aborts (abort (rook-abort)) raised Abort: gave up"
        if len(got) > 1:
            assert got[1]["reason"] == (
                "judge 'slow' (abort (rook-abort)) raised Abort: gave up later"
            ), got
            assert [c["status"] for c in got[2:]] == ["passed", "passed"], got


ASYNC_CHECK = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Awaited(CriterionType):
    name = "awaited_check"

    async def check(self, config, judging):
        return None

    def evaluate(self, config, view):
        return Verdict(PASSED, "fine")


class Later:
    async def check(self, config):
        return None

    def __call__(self, config, view):
        return Verdict(PASSED, "fine")


@hookimpl
def rook_register_criteria(register):
    register(Awaited())


@hookimpl
def rook_register_judges(register):
    register("later", Later())
"""


def test_an_async_check_is_refused_saying_check_must_be_a_plain_function(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A judge's or criterion type's ``async def check`` refused the run with the
    coroutine's repr as the reason, and Python's 'coroutine was never awaited'
    warning on standard error. It is now refused saying check must be a plain
    function, naming the plugin, and no warning leaks."""
    rook_distribution("rook-later", {"later": "rook_later"}, {"rook_later.py": ASYNC_CHECK})
    secret_workspace(
        rook_workspace, monkeypatch, [{"judge": {"name": "later"}}, {"awaited_check": True}]
    )
    r = rook_cli("run")
    assert r.exit_code == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "never awaited" not in r.stderr and "<coroutine" not in r.stderr, r.stderr
    assert (
        "scenario s1: criteria.0.judge: the judge 'later' (later (rook-later)) returned a "
        "coroutine from check: check is called before anything runs and must be a plain "
        "function (def, not async def)"
    ) in r.stderr, r.stderr
    assert (
        "scenario s1: criteria.1.awaited_check: the criterion plugin later (rook-later) returned "
        "a coroutine from check: check is called before anything runs and must be a plain "
        "function (def, not async def)"
    ) in r.stderr, r.stderr


UNSTARTED = UNCLOSED.replace(
    'async def start(run):\n    return "pool"',
    'async def start(run):\n    raise RuntimeError("no broker, key " + os.environ["DESK_KEY"])',
)


def test_profile_test_of_a_transport_whose_start_raises_says_so_as_a_failed_test(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """``rook profile test`` of a profile whose transport's ``start`` raised ended
    with a bare ``rook: error:``: no phase table, and with --json nothing on
    stdout. It is now a failed test (exit 1, as documented for a hook that
    failed) whose diagnosis names the transport and its plugin, redacted."""
    assert "raise RuntimeError" in UNSTARTED
    rook_distribution("rook-unstarted", {"unstarted": "rook_unstarted"},
                      {"rook_unstarted.py": UNSTARTED.replace('"unclosed"', '"unstarted"')})
    monkeypatch.setenv("DESK_KEY", SECRET)
    rook_workspace.profile(
        {
            "id": "p",
            "hooks": {"execute": {"unstarted": {}}},
            "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}],
        }
    )
    named = (
        "transport 'unstarted' (unstarted (rook-unstarted)) could not start: "
        "RuntimeError: no broker, key [redacted:DESK_KEY]"
    )
    ws = ["-w", str(rook_workspace.root)]
    r = rook_cli("profile", "test", *ws)
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "rook: error" not in r.stderr and named in r.stdout, r.stdout + r.stderr
    assert SECRET not in r.stdout + r.stderr
    r = rook_cli("profile", "test", *ws, "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert not doc["test"]["ok"] and named in doc["test"]["diagnosis"], doc


UNCONFIGURED = UNCLOSED.replace(
    'async def start(run):\n    return "pool"',
    "async def start(run):\n    from rook_core.errors import ConfigError\n"
    '    raise ConfigError("DESK_URL is not set; export DESK_URL=...")',
)


def test_a_transport_whose_start_refuses_a_users_mistake_is_named_exit_2(
    rook_distribution, rook_workspace, rook_cli
):
    """transport.md: a ``start`` raises ConfigError for a user's mistake (exit 2).
    Its message reached the terminal alone ('rook: error: DESK_URL is not set ...'),
    saying neither which transport nor which plugin refused; it is named as a
    start that raises is, and no hook runs."""
    assert "ConfigError(" in UNCONFIGURED
    rook_distribution("rook-unconfigured", {"unconfigured": "rook_unconfigured"},
                      {"rook_unconfigured.py": UNCONFIGURED.replace('"unclosed"', '"unconfigured"')})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"unconfigured": {}}}})
    rook_workspace.scenario({"id": "s", "goal": "HELLO", "criteria": [{"contains": "HELLO"}]})
    named = (
        "rook: error: transport 'unconfigured' (unconfigured (rook-unconfigured)) could not "
        "start: DESK_URL is not set; export DESK_URL=..."
    )
    for command in (("run",), ("profile", "test", "-w", str(rook_workspace.root))):
        r = rook_cli(*command)
        assert r.exception is None and "Traceback" not in r.stderr, r.stderr
        assert r.exit_code == 2 and named in r.stderr, (command, r.stderr)
    assert not list(rook_workspace.runs_dir.glob("*/scenarios/*")), "no hook ran"


def test_a_judge_profile_whose_transport_cannot_start_fails_its_criteria_only(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A judge profile whose transport's ``start`` raised ended ``rook run`` with a
    bare ``rook: error: transport ...`` (not saying it was the judge profile's),
    no scenario run and no report. The agent's scenarios now run and are kept;
    each judgement errors naming the judge profile, the transport and its plugin."""
    rook_distribution("rook-unstarted", {"unstarted": "rook_unstarted"},
                      {"rook_unstarted.py": UNSTARTED.replace('"unclosed"', '"unstarted"')})
    monkeypatch.setenv("DESK_KEY", SECRET)
    ws = rook_workspace
    ws.script("agent.sh", "#!/bin/bash\ncat >/dev/null\necho '{\"output\": \"hello there\"}'\n")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.profile(
        {
            "id": "grader",
            "hooks": {"execute": {"unstarted": {}}},
            "env": [{"variable": "DESK_KEY", "purpose": "the desk's key"}],
        },
        active=False,
    )
    ws.scenario({"id": "plain", "goal": "hi", "criteria": [{"contains": "hello"}]})
    ws.scenario({"id": "tone", "goal": "hi", "criteria": [{"rubric": "is polite"}]})
    r = rook_cli("run", "--judge-profile", "grader", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert "rook: error" not in r.stderr, r.stderr
    assert r.exit_code == 1, r.stdout + r.stderr
    assert r.statuses() == {"plain": "passed", "tone": "error"}, r.stdout
    reason = next(s["reason"] for s in r.report["scenarios"] if s["id"] == "tone")
    assert "judge profile 'grader'" in reason and (
        "transport 'unstarted' (unstarted (rook-unstarted)) could not start: RuntimeError: "
        "no broker, key [redacted:DESK_KEY]"
    ) in reason, reason
    assert SECRET not in r.stdout + r.stderr
    assert SECRET not in ws.all_run_text(r.report["run"]["id"])


SILENT = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType


class Silent(CriterionType):
    name = "silent"

    def evaluate(self, config, view):
        raise KeyError()


class Quiet:
    def __call__(self, config, view):
        assert view.output == "never"


@hookimpl
def rook_register_criteria(register):
    register(Silent())


@hookimpl
def rook_register_judges(register):
    register("quiet", Quiet())
"""


def test_an_exception_without_a_message_is_named_without_a_dangling_colon(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A bare ``assert`` or ``raise KeyError()`` in a criterion or judge was
    reported as '... raised AssertionError: ', a colon followed by nothing."""
    rook_distribution("rook-silent", {"silent": "rook_silent"}, {"rook_silent.py": SILENT})
    secret_workspace(
        rook_workspace, monkeypatch, [{"silent": True}, {"judge": {"name": "quiet"}}]
    )
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.exit_code == 1 and r.statuses() == {"s1": "error"}, r.stderr
    criterion, judge = (c["reason"] for c in r.report["scenarios"][0]["criteria"])
    assert criterion == "criterion silent (silent (rook-silent)) raised KeyError", criterion
    assert judge == "judge 'quiet' (silent (rook-silent)) raised AssertionError", judge


BARE_AUTHOR = """
from rook_core.hookspecs import hookimpl


class Bare:
    def detect(self, source):
        suffix = source.path.suffix if source.path is not None else ""
        if suffix == ".bare":
            raise KeyError()
        return 1.0 if suffix == ".bare2" else 0.0

    def write(self, request):
        raise ValueError()


@hookimpl
def rook_register_authors(register):
    register("bare", Bare())
"""


def test_an_author_that_raises_without_a_message_is_named_without_a_dangling_colon(
    rook_distribution, rook_workspace, rook_cli, tmp_path
):
    """An author plugin raising a bare KeyError() or ValueError() was reported as
    '... failed while reading the source: KeyError: ', a colon followed by nothing."""
    rook_distribution("rook-bare", {"bare": "rook_bare"}, {"rook_bare.py": BARE_AUTHOR})
    for suffix, what in ((".bare", "failed while reading the source: KeyError"),
                         (".bare2", "failed in write: ValueError")):
        source = tmp_path / f"call{suffix}"
        source.write_text("POST http://127.0.0.1:9/ask\n")
        r = rook_cli("profile", "add", "p", "--from", str(source), "--no-test",
                     "-w", str(rook_workspace.root))
        assert r.exit_code != 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
        line = next(ln for ln in r.stderr.splitlines() if "author 'bare'" in ln)
        assert line.endswith(what), line


DRAFTLESS_AUTHOR = """
from rook_core.authoring import Draft
from rook_core.hookspecs import hookimpl


class Draftless:
    def detect(self, source):
        return 1.0 if source.path is not None and source.path.suffix == ".nodraft" else 0.0

    def write(self, request):
        if "revise" in request.source.text:  # a good draft, for an agent answering no JSON
            return Draft(hooks={"execute": "scripts/agent.sh"})
        draft = {"hooks": {"execute": "scripts/agent.sh"}}  # built, but not returned as a Draft
        return None if "none" in request.source.text else draft

    def revise(self, draft, observation, request):
        return {"hooks": {}}


@hookimpl
def rook_register_authors(register):
    register("draftless", Draftless())
"""


@pytest.mark.parametrize(
    "text, shown", [("none", "None from write"), ("dict", "{'hooks': "), ("revise", "from revise")]
)
def test_an_author_whose_write_returns_no_draft_is_named_not_a_traceback(
    rook_distribution, rook_workspace, rook_cli, tmp_path, text, shown
):
    """An author whose write returned None (a forgotten return) or a dict, or whose
    revise returned a dict, ended rook profile add with a Python traceback ('NoneType'
    object has no attribute 'author')."""
    rook_distribution("rook-draftless", {"draftless": "rook_draftless"},
                      {"rook_draftless.py": DRAFTLESS_AUTHOR})
    source = tmp_path / "call.nodraft"
    source.write_text(text)
    rook_workspace.script("agent.sh", "#!/bin/bash\necho 'not json'\n")
    tested = () if text == "revise" else ("--no-test",)
    r = rook_cli("profile", "add", "p", "--from", str(source), *tested,
                 "-w", str(rook_workspace.root))
    out = r.stdout + r.stderr
    assert r.exception is None, (r.exception, out)
    assert "author 'draftless' (draftless (rook-draftless)) returned " in out, out
    assert shown in out and ", not a Draft (rook_core.authoring.Draft" in out, out
    if text == "revise":  # no correction: the tested draft is kept, for rook profile fix
        assert r.exit_code == 1 and "no correction: author 'draftless'" in out
        return
    assert r.exit_code == 2
    assert not (rook_workspace.agent_dir / "profiles" / "p.yaml").exists()


CONCLUDING_AUTHOR = """
from rook_core.authoring import Draft
from rook_core.hookspecs import hookimpl


class Concluding:
    def detect(self, source):
        return 1.0 if source.path is not None and source.path.suffix == ".concl" else 0.0

    def write(self, request):
        return Draft(hooks={"execute": "scripts/agent.sh"}, notes=["assumed: JSON"])

    def conclude(self, draft, observation, request):
        return eval(request.source.text)


@hookimpl
def rook_register_authors(register):
    register("concluding", Concluding())
"""


def test_an_author_whose_conclude_returns_a_text_gives_one_note(
    rook_distribution, rook_workspace, rook_cli, tmp_path
):
    """conclude returning a text ('the probe answered') gave one note per character
    (note: t, note: h, ...); a text is now one note, and a number is the author's
    failure, named, never a traceback."""
    rook_distribution("rook-concluding", {"concluding": "rook_concluding"},
                      {"rook_concluding.py": CONCLUDING_AUTHOR})
    rook_workspace.script("agent.sh", "#!/bin/bash\necho '{\"output\": \"hi\"}'\n")
    source = tmp_path / "call.concl"
    source.write_text("'the probe answered'")
    r = rook_cli("profile", "add", "p", "--from", str(source), "--no-test",
                 "-w", str(rook_workspace.root))
    assert r.exit_code == 0, r.stdout + r.stderr
    notes = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("note:")]
    assert notes == ["note: the probe answered"], notes
    source.write_text("42")
    r = rook_cli("profile", "add", "q", "--from", str(source), "--no-test",
                 "-w", str(rook_workspace.root))
    assert r.exception is None and r.exit_code == 2, (r.exception, r.stdout + r.stderr)
    assert (
        "author 'concluding' (concluding (rook-concluding)) returned 42 from conclude, "
        "not notes (a list of texts, a text, or None)" in r.stderr
    ), r.stderr


def test_an_author_s_conclude_quoted_in_a_message_shows_no_piece_of_a_secret(
    rook_distribution, rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """An author's conclude returning no notes was quoted cut to 200 characters
    before redaction: a profile's secret across the cut (the agent's answer
    repeating it, say) left its beginning on the screen, where no redaction
    finds it. Redacted first, then cut: the marker whole."""
    rook_distribution("rook-concluding", {"concluding": "rook_concluding"},
                      {"rook_concluding.py": CONCLUDING_AUTHOR})
    secret_workspace(rook_workspace, monkeypatch)
    rook_workspace.script("agent.sh", "#!/bin/bash\necho '{\"output\": \"hi\"}'\n")
    source = tmp_path / "call.concl"
    source.write_text('{"notes": "x" * 180 + __import__("os").environ["DESK_KEY"]}')
    r = rook_cli("profile", "add", "q", "--from", str(source), "--no-test",
                 "-w", str(rook_workspace.root))
    assert r.exception is None and r.exit_code == 2, (r.exception, r.stdout + r.stderr)
    assert "returned {'notes': 'xxx" in r.stderr and "x[redacted:DESK_KEY]" in r.stderr, r.stderr
    assert SECRET[:6] not in r.stdout + r.stderr


NAMING_AUTHOR = """
from rook_core.authoring import Draft
from rook_core.hookspecs import hookimpl


class Naming:
    def detect(self, source):
        return 1.0 if source.path is not None and source.path.suffix == ".naming" else 0.0

    def suggest_name(self, source):
        return eval(source.text)

    def write(self, request):
        return Draft(hooks={"execute": "scripts/agent.sh"})


@hookimpl
def rook_register_authors(register):
    register("naming", Naming())
"""


@pytest.mark.parametrize(
    "text, said",
    [
        ("1 / 0", "failed in suggest_name: ZeroDivisionError: division by zero"),
        ("42", "returned 42 from suggest_name, not a profile name (a text, or None)"),
        ("['desk']", "returned ['desk'] from suggest_name, not a profile name"),
    ],
)
def test_an_author_whose_suggest_name_fails_is_named_with_its_plugin(
    rook_distribution, rook_workspace, rook_cli, tmp_path, text, said
):
    """author.md: an author's method that raises is 'author NAME (PLUGIN (DIST))
    failed in METHOD'. suggest_name's said 'author Naming failed in suggest_name',
    its class, neither its name nor its plugin; one returning something other than
    a text or None (42) was ignored and the profile named after the agent."""
    rook_distribution("rook-naming", {"naming": "rook_naming"},
                      {"rook_naming.py": NAMING_AUTHOR})
    source = tmp_path / "call.naming"
    source.write_text(text)
    r = rook_cli("profile", "add", "--from", str(source), "--no-test",
                 "-w", str(rook_workspace.root))
    assert r.exception is None and r.exit_code == 2, (r.exception, r.stdout + r.stderr)
    assert f"rook: error: author 'naming' (naming (rook-naming)) {said}" in r.stderr, r.stderr
    assert not list((rook_workspace.agent_dir / "profiles").glob("*.yaml"))
    source.write_text("'desk'")  # a name: used
    rook_workspace.script("agent.sh", "#!/bin/bash\necho '{\"output\": \"hi\"}'\n")
    r = rook_cli("profile", "add", "--from", str(source), "--no-test",
                 "-w", str(rook_workspace.root))
    assert r.exit_code == 0, r.stderr
    assert (rook_workspace.agent_dir / "profiles" / "desk.yaml").exists()


BARE_TRANSPORT = """
from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec, saves_nothing


class Boom(BaseException):
    pass


async def execute(call):
    raise RAISED()


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="boom", load_config=lambda value: value or {},
                           description="raises", saved_names=saves_nothing))


@hookimpl
def rook_transport_execute(call):
    return execute(call) if call.entry.transport == "boom" else None
"""


@pytest.mark.parametrize("raised", ["RuntimeError", "SystemExit", "Boom"])
def test_a_transport_that_raises_without_a_message_is_named_without_a_dangling_colon(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, raised
):
    """A transport plugin raising a bare RuntimeError() failed the agent's hook, or
    a judgement, with "transport 'boom' raised RuntimeError: ", a colon followed by
    nothing. Its own BaseException (Boom) ended rook run with a traceback, in the
    agent's hook or the judge profile's; sys.exit() is named too."""
    rook_distribution("rook-boom", {"boom": "rook_boom"},
                      {"rook_boom.py": BARE_TRANSPORT.replace("RAISED", raised)})
    secret_workspace(rook_workspace, monkeypatch, [{"rubric": "says hello"}])
    rook_workspace.profile({"id": "grader", "hooks": {"execute": {"boom": {}}}}, active=False)
    r = rook_cli("run", "--json", "--only", "s1", "--judge-profile", "grader")
    (verdict,) = r.report["scenarios"][0]["criteria"]
    assert verdict["reason"].endswith(f"transport 'boom' (boom (rook-boom)) raised {raised}")
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"boom": {}}}})
    r = rook_cli("run", "--json", "--only", "s1", "--judge-profile", "grader")
    (hook,) = r.report["scenarios"][0]["hooks"]
    assert hook["diagnosis"] == f"transport 'boom' (boom (rook-boom)) raised {raised}", hook


LOUD = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType


class Loud(CriterionType):
    name = "loud"

    def evaluate(self, config, view):
        raise ValueError("service said: " + "boom " * 50000)


class LoudJudge:
    def __call__(self, config, view):
        raise ValueError("service said: " + "boom " * 50000)


@hookimpl
def rook_register_criteria(register):
    register(Loud())


@hookimpl
def rook_register_judges(register):
    register("loud", LoudJudge())
"""


def test_an_exception_with_a_huge_message_is_cut_in_the_reason(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A criterion or judge raising with a 250 KB message (a service's error page)
    put all of it in the criterion's reason, in every report; a check's message
    is cut at 500 characters."""
    rook_distribution("rook-loud", {"loud": "rook_loud"}, {"rook_loud.py": LOUD})
    secret_workspace(rook_workspace, monkeypatch, [{"loud": True}, {"judge": {"name": "loud"}}])
    r = rook_cli("run", "--json", "--only", "s1")
    assert r.statuses() == {"s1": "error"}, r.stderr
    for c in r.report["scenarios"][0]["criteria"]:
        assert "raised ValueError: service said: boom boom" in c["reason"], c["reason"][:200]
        assert len(c["reason"]) <= 600, len(c["reason"])


BARE_REGISTRATION = """
from rook_core.hookspecs import hookimpl


@hookimpl
def rook_register_reporters(register):
    raise KeyError()
"""

BARE_REPORTER = """
from rook_core.hookspecs import hookimpl


def write(report, path):
    raise ValueError()


@hookimpl
def rook_register_reporters(register):
    register("mute", write)
"""


def test_a_plugin_that_raises_bare_in_registration_import_or_report_says_no_dangling_colon(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """A plugin raising a bare KeyError() while registering, an ImportError() while
    imported, or a reporter a bare ValueError() was named as 'raised KeyError in
    rook_register_reporters: (disable ...)', 'ImportError: ' and 'failed: ValueError: ',
    a colon followed by nothing."""
    secret_workspace(rook_workspace, monkeypatch, [{"contains": "HELLO"}])
    rook_distribution("rook-bare", {"bare": "rook_bare"}, {"rook_bare.py": BARE_REGISTRATION})
    r = rook_cli("run", "--json")
    assert r.exit_code == 2 and "Traceback" not in r.stderr, r.stderr
    assert (
        "plugin bare (rook-bare) raised KeyError in rook_register_reporters "
        "(disable it with ROOK_DISABLE_PLUGINS=bare)" in r.stderr
    ), r.stderr
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", "bare")
    rook_distribution("rook-noimp", {"noimp": "rook_noimp"}, {"rook_noimp.py": "raise ImportError()\n"})
    r = rook_cli("plugins")
    line = next(ln for ln in r.stderr.splitlines() if "plugin noimp (rook-noimp) failed to load" in ln)
    assert line.endswith("(rook-noimp) failed to load: ImportError"), line
    rook_distribution("rook-mute", {"mute": "rook_mute"}, {"rook_mute.py": BARE_REPORTER})
    r = rook_cli("run", "--json", f"--report=mute:{tmp_path}/r.mute")
    line = next(ln for ln in r.stderr.splitlines() if "reporter" in ln and "mute" in ln)
    assert line.rstrip().endswith("failed: ValueError"), line


LAGGING = """
import sys
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.process import run_process
from rook_core.transports import TransportSpec, saves_nothing

PROGRAM = (
    "import os, sys, time; print('half an answer', flush=True); "
    "print('warming up', file=sys.stderr, flush=True); "
    "open(os.environ['LAG_DIR'] + '/hook.pid', 'w').write(str(os.getpid())); time.sleep(300)"
)


async def answer(call):
    proc = await run_process([sys.executable, "-c", PROGRAM], env=call.env, stdin=None,
                             timeout=call.timeout)
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={"output": proc.stdout.decode()},
                      turn=call.turn, transport="lagging")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="lagging", load_config=lambda value: value,
                           saved_names=saves_nothing))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "lagging" else None
"""


def test_an_interrupted_hook_of_a_transport_without_handles_timeout_keeps_its_output(
    rook_distribution, rook_workspace, tmp_path
):
    """A third-party transport that does not handle its timeout is waited for
    through asyncio.wait_for, which (Python 3.11) runs it in a task of its own
    and re-raises another cancellation: what run_process had read from the
    program it ran, cut off by SIGTERM, was lost (the interrupted record had empty
    stdout and stderr). It is kept, as for the built-in script transport."""
    root = rook_distribution("rook-lagging", {"lagging": "rook_lagging"},
                             {"rook_lagging.py": LAGGING})
    d = tmp_path / "d"
    d.mkdir()
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"lagging": {}}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "answer"}]})
    env = {**os.environ, "PYTHONPATH": str(root), "ROOK_NO_CACHE": "1", "LAG_DIR": str(d)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (d / "hook.pid").exists():
        time.sleep(0.05)
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    (run_dir,) = rook_workspace.runs_dir.iterdir()
    (attempt,) = rook_workspace.record(run_dir.name, "s.1")["interrupted_attempts"]
    (hook,) = attempt["hooks"]
    assert (hook["phase"], hook["status"]) == ("execute", "interrupted"), hook
    assert hook["stdout"] == "half an answer\n", hook
    assert hook["stderr"] == "warming up\n", hook


QUITS = """
import os
import sys
import time

from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="quitter", load_config=lambda v: v, saved_names=saves_nothing))


async def answer(call):
    if call.entry.config == "later" and call.scenario_run.scenario.id == "s2":
        sys.exit(5)  # in the awaitable
    now = time.time()
    data = {"output": "HELLO " + (call.stdin or "")} if call.phase == "execute" else {}
    return HookResult(call.phase, "ok", 0.0, now, now, data=data, turn=call.turn,
                      transport="quitter")


@hookimpl
def rook_transport_execute(call):
    if call.entry.transport != "quitter":
        return None
    if call.entry.config == "now" and call.scenario_run.scenario.id == "s2":
        sys.exit(4)  # in the hook itself
    return answer(call)


@hookimpl
def rook_session_close(call):
    return answer(call) if call.entry.transport == "quitter" else None


@hookimpl
def rook_evidence_recorded(result):
    if result.phase == "close" and os.environ.get("QUIT_OBSERVING"):
        sys.exit(0)
"""


@LEAVING_BY
@pytest.mark.parametrize("when", ["now", "later"])
def test_a_transport_or_observer_that_calls_sys_exit_is_named_and_the_run_goes_on(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, when, how
):
    """A transport's phase hook or an evidence observer calling sys.exit()
    (SystemExit, no Exception) ended rook run at once with the plugin's exit code:
    no --json document, the scenario in flight never closed and left pending, 0
    (CI green) for sys.exit(0). A phase hook's is now that hook's failure, named
    like any exception it raises (close still runs); an observer's, the observer's
    warning."""
    rook_distribution("rook-quits", {"quits": "rook_quits"},
                      {"rook_quits.py": leaving_by(QUITS, how)})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"quitter": when},
                                                 "close": {"quitter": when}}})
    for n in (1, 2):
        rook_workspace.scenario({"id": f"s{n}", "goal": "HELLO",
                                 "criteria": [{"contains": "HELLO"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.statuses() == {"s1": "passed", "s2": "error"}, r.stderr
    code = 4 if when == "now" else 5
    assert r.report["scenarios"][1]["reason"] == (
        f"execute turn 1 failed: transport 'quitter' (quits (rook-quits)) raised {how}: {code}"
    )
    record = rook_workspace.record(r.report["run"]["id"], "s2.1")
    assert [h["phase"] for h in record["hooks"]] == ["execute", "close"]
    monkeypatch.setenv("QUIT_OBSERVING", "1")
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"quitter": "never"},
                                                 "close": {"quitter": "never"}}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s1": "passed", "s2": "passed"}, r.stderr
    assert f"rook: warning: plugin quits (rook-quits) raised {how} in rook_evidence_recorded" \
        in r.stderr, r.stderr


LEAVES_EARLY = """
import asyncio
import sys

from rook_core.hookspecs import hookimpl


async def leave(engine, scenario_runs, concurrency, options):
    await engine.run_scenario(scenario_runs[0])
    sys.exit(0)


async def leave_in_a_task(engine, scenario_runs, concurrency, options):
    async def one(sr):
        await engine.run_scenario(sr)
        sys.exit(0)

    await asyncio.gather(one(scenario_runs[0]))  # a task it started, not the one Rook awaits
    for sr in scenario_runs[1:]:
        await engine.run_scenario(sr)


class Checks:
    def check(self, options):
        sys.exit(0)

    async def __call__(self, engine, scenario_runs, concurrency, options):
        pass


@hookimpl
def rook_register_executors(register):
    register("leaves-early", leave)
    register("leaves-checking", Checks())
    register("leaves-in-a-task", leave_in_a_task)
"""


@LEAVING_BY
def test_an_executor_that_calls_sys_exit_loses_nothing_and_never_exits_0(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, how
):
    """executor.md: an executor that raises loses nothing recorded, the report is
    written and rook run exits 1. One calling sys.exit(0) (SystemExit, no
    Exception) ended rook run at once with exit 0: no --json document, the rest of
    the run left pending and CI green. Its check calling it refuses the run (exit 2)."""
    rook_distribution("rook-leaves", {"leaves": "rook_leaves"},
                      {"rook_leaves.py": leaving_by(LEAVES_EARLY, how)})
    secret_workspace(rook_workspace, monkeypatch)
    r = rook_cli("run", "--json", "--executor", "leaves-early")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"s1": "passed", "s2": "pending"}, r.stderr
    assert (f"rook: error: executor 'leaves-early' (leaves (rook-leaves)) raised {how}: 0"
            in r.stderr), r.stderr
    # in a task the executor started itself, asyncio (3.11) let it end the loop: rook
    # run exited 0 (no --json document, s2 never run); now named, as the executor's is
    r = rook_cli("run", "--json", "--executor", "leaves-in-a-task")
    assert r.exit_code == 1, r.stderr
    assert r.statuses() == {"s1": "passed", "s2": "pending"}, r.stderr
    in_a_task = " in a task it started (rook_leaves.one)" if how == "SystemExit" else ""
    assert ("rook: error: executor 'leaves-in-a-task' (leaves (rook-leaves)) raised "
            f"{how}: 0{in_a_task}") in r.stderr, r.stderr  # Boom comes out of its gather
    r = rook_cli("run", "--executor", "leaves-checking")
    assert r.exit_code == 2, r.stderr
    assert ("--executor leaves-checking: the executor plugin leaves (rook-leaves) could not "
            f"check its options: {how}: 0") in r.stderr, r.stderr


EXITS_LOADING = """
import os
import sys

from rook_core.hookspecs import hookimpl

if os.environ.get("QUIT_WHERE") == "import":
    sys.exit("rook-quitting needs the Acme SDK")


@hookimpl
def rook_register_reporters(register):
    if os.environ.get("QUIT_WHERE") == "register":
        sys.exit(0)
    register("quitting", lambda report, path: path.write_text("q"))
"""


@LEAVING_PLAINLY_BY
def test_a_plugin_that_calls_sys_exit_while_loading_is_named_never_exit_0(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, how
):
    """A plugin module calling sys.exit() on import (a missing SDK, say) ended every
    rook command, rook doctor too, with its message alone and exit 1; sys.exit(0)
    in a registration hook made every command, rook run too, exit 0 having done
    nothing. On import it is a plugin that failed to load (the rest of Rook runs);
    in a registration hook, that hook's error naming the plugin (exit 2)."""
    rook_distribution("rook-quitting", {"quitting": "rook_quitting"},
                      {"rook_quitting.py": leaving_by(EXITS_LOADING, how)})
    secret_workspace(rook_workspace, monkeypatch)
    monkeypatch.setenv("QUIT_WHERE", "import")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s1": "passed", "s2": "passed"}, r.stderr
    assert (f"plugin quitting (rook-quitting) failed to load: {how}: rook-quitting needs "
            "the Acme SDK") in r.stderr, r.stderr
    r = rook_cli("doctor")
    assert f"PROBLEM  plugin quitting: from rook-quitting failed to load: {how}" in r.stdout
    monkeypatch.setenv("QUIT_WHERE", "register")
    r = rook_cli("run", "--json")
    assert r.exit_code == 2, r.stderr
    assert (f"plugin quitting (rook-quitting) raised {how} in rook_register_reporters: 0"
            in r.stderr), r.stderr


QUITS_ELSEWHERE = """
import os
import sys
import time

from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing
from rook_plugins.ruhroh_connector import Connector

WHERE = os.environ.get("QUIT_WHERE")


def load_config(value):
    if WHERE == "load_config":
        sys.exit(0)
    return value


async def start(run):
    if WHERE == "start":
        sys.exit(0)
    return {}


async def stop(resource):
    if WHERE == "stop":
        sys.exit(0)


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="leaver", load_config=load_config, start=start, stop=stop,
                           saved_names=saves_nothing))


async def closed(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={}, transport="leaver")


@hookimpl
def rook_session_close(call):
    return closed(call) if call.entry.transport == "leaver" else None


class Leaving(Connector):
    name = "leaving"
    continuity = "workspace_only"

    async def run_turn(self, session, turn):
        sys.exit(0)


@hookimpl
def rook_register_connectors(register):
    register(Leaving)
"""


@LEAVING_BY
@pytest.mark.parametrize("where", ["load_config", "start", "stop", "run_turn"])
def test_a_transport_or_connector_that_calls_sys_exit_elsewhere_never_exits_0(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, where, how
):
    """sys.exit(0) in a transport's load_config, start or stop, or in a
    connector's method, ended rook run at once with exit 0 (CI green, nothing
    judged, no --json document). Each is now named as any exception there is."""
    rook_distribution("rook-leaver", {"leaver": "rook_leaver"},
                      {"rook_leaver.py": leaving_by(QUITS_ELSEWHERE, how)})
    monkeypatch.setenv("QUIT_WHERE", where)
    secret_workspace(rook_workspace, monkeypatch)
    hooks = {"execute": "scripts/echo.sh", "close": {"leaver": {}}}
    if where == "run_turn":
        hooks = {"execute": {"connector": {"name": "leaving"}}}
    rook_workspace.profile({"id": "p", "hooks": hooks})
    r = rook_cli("run", "--json")
    said = {
        "load_config": "hooks.close.leaver: the transport plugin leaver (rook-leaver) refused it: "
        f"{how}: 0",
        "start": f"transport 'leaver' (leaver (rook-leaver)) could not start: {how}: 0",
        "stop": "rook: warning: transport 'leaver' (leaver (rook-leaver)) could not stop: "
        f"{how}: 0 (the run's results are kept)",
        "run_turn": f"execute turn 1 failed: connector 'leaving' run_turn raised {how}: 0",
    }[where]
    assert said in r.stderr, r.stderr
    assert r.exit_code == {"load_config": 2, "stop": 0}.get(where, 1), r.stderr
    if where != "load_config":  # the run was recorded and reported
        assert r.statuses() == ({"s1": "passed", "s2": "passed"} if where == "stop"
                                else {"s1": "error", "s2": "error"}), r.stderr


LEAVES_CHECKING = """
import os
import sys
import time

from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec

WHERE = os.environ.get("QUIT_WHERE")


def leave_in(where, value=None):
    if WHERE == where:
        sys.exit(0)
    return value


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(
        key="checker",
        load_config=lambda value: value,
        env_names=lambda config: leave_in("env_names", []),
        resolve=lambda config, agent: leave_in("resolve", config),
        check=lambda config, plugins: leave_in("check", config),
        runnable=lambda config, scenario: leave_in("runnable"),
        check_scenario=lambda config, scenario: leave_in("check_scenario"),
        continuity=lambda config: leave_in("continuity"),
        saved_names=lambda config: leave_in("saved_names", []),
    ))


async def opened(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={}, transport="checker")


@hookimpl
def rook_session_open(call):
    return opened(call) if call.entry.transport == "checker" else None
"""


@LEAVING_PLAINLY_BY
@pytest.mark.parametrize("where", ["env_names", "resolve", "check", "check_scenario",
                                   "continuity", "saved_names", "runnable"])
def test_a_transport_that_leaves_while_checking_is_named_never_exit_0(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, where, how
):
    """sys.exit(0) in a transport's env_names, resolve, check, check_scenario,
    continuity, saved_names or runnable (guarded for an Exception only) ended rook
    run at once with exit 0, nothing run and nothing said; its own BaseException,
    with a traceback. Each is named as any exception there is: a refused run
    (exit 2), or for runnable the scenario's error (exit 1)."""
    rook_distribution("rook-checker", {"checker": "rook_checker"},
                      {"rook_checker.py": leaving_by(LEAVES_CHECKING, how)})
    monkeypatch.setenv("QUIT_WHERE", where)
    secret_workspace(rook_workspace, monkeypatch)
    rook_workspace.profile({"id": "p", "hooks": {
        "open": {"checker": {}},
        # an http: entry asks every earlier entry what it saves (saved_names)
        "execute": {"http": {"url": "http://127.0.0.1:9/", "body": {"q": "{{goal}}"},
                             "extract": {"output": "answer"}}},
    }})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert "checker (rook-checker)" in r.stderr, r.stderr
    if where == "runnable":
        assert r.exit_code == 1 and r.statuses() == {"s1": "error", "s2": "error"}, r.stderr
        reason = r.report["scenarios"][0]["reason"]  # the table's line may be cut
        assert f"raised {how} in runnable: 0" in reason, reason
        return
    assert f"{how}: 0" in r.stderr and r.exit_code == 2, r.stderr


@pytest.mark.parametrize("where", ["env_names", "check", "continuity", "saved_names"])
def test_a_ctrl_c_arriving_in_a_transport_s_check_still_interrupts_rook(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, where
):
    """A plugin's own failure, whatever it raises, is named where it was called;
    a KeyboardInterrupt there is the user's Ctrl-C arriving while the plugin ran,
    never the plugin's failure: rook run stops as interrupted (exit 130). (These run
    before the run's signal handlers are set; during the run a Ctrl-C reaches them,
    not the plugin.)"""
    rook_distribution("rook-checker", {"checker": "rook_checker"},
                      {"rook_checker.py": leaving_by(LEAVES_CHECKING, "KeyboardInterrupt")})
    monkeypatch.setenv("QUIT_WHERE", where)
    secret_workspace(rook_workspace, monkeypatch)
    rook_workspace.profile({"id": "p", "hooks": {
        "open": {"checker": {}},
        "execute": {"http": {"url": "http://127.0.0.1:9/", "body": {"q": "{{goal}}"},
                             "extract": {"output": "answer"}}},
    }})
    r = rook_cli("run", "--json")
    assert r.exit_code == 130 and "rook: interrupted" in r.stderr, r.stderr
    assert "KeyboardInterrupt" not in r.stderr and "checker" not in r.stderr, r.stderr


UNASKED = """
import asyncio
import os
import time

from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, HookResult, Verdict
from rook_core.transports import TransportSpec, saves_nothing

WHERE = os.environ.get("UNASKED_WHERE", "")


def unasked(where):
    if WHERE == where:
        raise asyncio.CancelledError()  # the plugin's bug: nothing cancelled it


async def start(run):
    unasked("start")
    return object()


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="unasked", load_config=lambda v: v, saved_names=saves_nothing,
                           start=start))


async def answer(call):
    unasked(call.phase)
    now = time.time()
    data = {"output": "HELLO " + (call.stdin or "")} if call.phase == "execute" else {}
    return HookResult(call.phase, "ok", 0.0, now, now, data=data, turn=call.turn,
                      transport="unasked")


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "unasked" else None


class Unasked(CriterionType):
    name = "unasked"
    timeout_seconds = 30

    async def evaluate(self, config, view):
        unasked("criterion")
        return Verdict(PASSED, "fine")


@hookimpl
def rook_register_criteria(register):
    register(Unasked())


@hookimpl
def rook_register_judges(register):
    def judge(config, view):
        unasked("judge")
        return Verdict(PASSED, "fine")
    register("unasked-judge", judge)
"""


@pytest.mark.parametrize("where", ["start", "execute", "criterion", "judge"])
def test_a_cancelled_error_no_one_asked_for_is_the_plugin_s_failure(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, where
):
    """asyncio.CancelledError raised by a plugin's own code when nothing cancelled
    it (a plugin's bug: an exception of its own, a library's, passed on) was taken
    for the run's interruption: rook run ended with a Python traceback, exit 1,
    and no report. Rook's interruption is a cancellation of the task that runs the
    plugin; with none under way the CancelledError is the plugin's failure, named
    where it was raised as any exception there is."""
    rook_distribution("rook-unasked", {"unasked": "rook_unasked"},
                      {"rook_unasked.py": UNASKED})
    monkeypatch.setenv("UNASKED_WHERE", where)
    secret_workspace(rook_workspace, monkeypatch,
                     [{"unasked": True}, {"judge": {"name": "unasked-judge"}}])
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"unasked": {}}}})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"s1": "error", "s2": "error"}, r.stderr
    said = json.dumps(r.report)
    if where == "start":
        assert "transport 'unasked' (unasked (rook-unasked)) could not start: CancelledError" in said
    elif where == "execute":
        assert "transport 'unasked' (unasked (rook-unasked)) raised CancelledError" in said
    elif where == "criterion":
        assert "criterion unasked (unasked (rook-unasked)) raised CancelledError" in said
    else:
        assert "judge 'unasked-judge' (unasked (rook-unasked)) raised CancelledError" in said


TURNS_ITS_CANCELLATION = """
import asyncio
import os
import time

from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing

WHERE = os.environ["TURN_WHERE"]



class Boom(BaseException):
    pass


async def wait_then_boom(where):
    if WHERE != where:
        return
    open(os.environ["TURN_MARK"], "w").close()
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        raise Boom("caught my cancellation")  # instead of letting it propagate


async def start(run):
    await wait_then_boom("start")
    return object()


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="turner", load_config=lambda v: v, saved_names=saves_nothing,
                           start=start))


async def opened(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={}, transport="turner")


@hookimpl
def rook_session_open(call):
    return opened(call) if call.entry.transport == "turner" else None


class Turner(CriterionType):
    name = "turner"
    timeout_seconds = float(os.environ.get("TURN_TIMEOUT", "30"))

    async def evaluate(self, config, view):
        await wait_then_boom("criterion")


@hookimpl
def rook_register_criteria(register):
    register(Turner())
"""


@pytest.mark.parametrize("where", ["start", "criterion", "criterion past its timeout"])
def test_a_plugin_that_turns_its_cancellation_into_its_own_exception_leaves_no_traceback(
    rook_distribution, rook_workspace, tmp_path, where
):
    """A transport's start or a criterion catching the CancelledError Rook sent it
    (Ctrl-C, or the criterion's timeout_seconds) and raising its own exception
    instead: the task Rook stopped waiting for ended with that exception, which no
    one read, so asyncio printed 'Task exception was never retrieved' and the
    plugin's traceback on rook's standard error. Rook reads it now: a Ctrl-C still
    ends the run as interrupted (exit 130), a timeout is the criterion's error."""
    root = rook_distribution("rook-turner", {"turner": "rook_turner"},
                             {"rook_turner.py": TURNS_ITS_CANCELLATION})
    mark = tmp_path / "mark"
    rook_workspace.script(
        "echo.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || { echo '{}'; exit 0; }
        printf '{"output": "%s"}\\n' "$(cat)"
        """,
    )
    rook_workspace.profile({"id": "p", "hooks": {"open": {"turner": {}},
                                                 "execute": "scripts/echo.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "HELLO",
                             "criteria": [{"turner": True}, {"contains": "HELLO"}]})
    env = {**os.environ, "PYTHONPATH": str(root), "ROOK_NO_CACHE": "1",
           "TURN_WHERE": where.split()[0], "TURN_MARK": str(mark)}
    if where == "criterion past its timeout":
        env["TURN_TIMEOUT"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rook_core", "run", "-w", str(rook_workspace.root), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    if where != "criterion past its timeout":
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not mark.exists() and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err and "never retrieved" not in err, err
    if where == "criterion past its timeout":
        assert proc.returncode == 1, err
        (scenario,) = json.loads(out)["scenarios"]
        assert scenario["criteria"][0]["reason"] == (
            "criterion turner (turner (rook-turner)) gave no verdict within 1 s "
            "(its timeout_seconds); it was cancelled"
        ), scenario
    else:
        assert proc.returncode == 130 and "was interrupted" in err, err


MADE_BADLY = """
import sys

from rook_core.hookspecs import hookimpl
from rook_plugins.ruhroh_connector import Connector


class Refusing(Connector):
    name = "refusing"
    continuity = "workspace_only"

    def __init__(self, options):
        sys.exit(0)  # the connector's own bug as Rook makes it

    async def run_turn(self, session, turn):
        return None


@hookimpl
def rook_register_connectors(register):
    register(Refusing)
"""


@pytest.mark.parametrize("how", ["SystemExit", "Boom", "RuntimeError"])
def test_a_connector_that_cannot_be_made_is_named_not_the_ruhroh_transport(
    rook_distribution, rook_workspace, rook_cli, how
):
    """A connector class whose constructor raised anything but a bad-options error
    (ValueError, TypeError, KeyError, ValidationError) was caught for an Exception
    only and passed on, so the run was refused as 'the transport plugin ruhroh
    (rook-harness) could not check its 'connector' entry: ...', blaming Rook's own
    plugin. The connector is named, as a connector's failing method is."""
    source = MADE_BADLY
    if how == "RuntimeError":
        source = source.replace("sys.exit(0)", "raise RuntimeError('no SDK')")
    else:
        source = leaving_by(source, how)
    rook_distribution("rook-refusing", {"refusing": "rook_refusing"},
                      {"rook_refusing.py": source})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"connector": {"name": "refusing"}}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 2, r.stderr
    said = {"SystemExit": "SystemExit: 0", "Boom": "Boom: 0", "RuntimeError": "RuntimeError: no SDK"}
    assert f"connector 'refusing' (refusing (rook-refusing)) raised {said[how]}" in r.stderr, r.stderr
    assert "the transport plugin ruhroh" not in r.stderr, r.stderr


OBSERVES_AND_REPORTS = """
import sys

from rook_core.hookspecs import hookimpl


@hookimpl
def rook_evidence_recorded(result):
    if result.phase == "execute":
        sys.exit(0)


def write(report, path):
    sys.exit(0)


@hookimpl
def rook_register_reporters(register):
    register("leaving", write)
"""


def test_an_observer_or_reporter_raising_generator_exit_is_named(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, tmp_path
):
    """GeneratorExit raised by a plugin's plain code (an observer, a reporter) was
    taken for a coroutine of Rook's being closed: the observer's stopped the run at
    the next scenario ('executor 'local' raised RuntimeError: coroutine ignored
    GeneratorExit'), the reporter's ended rook run with a Python traceback. No
    coroutine is closed at a plain call site: it is the plugin's failure there."""
    rook_distribution("rook-closing", {"closing": "rook_closing"},
                      {"rook_closing.py": leaving_by(OBSERVES_AND_REPORTS, "GeneratorExit")})
    secret_workspace(rook_workspace, monkeypatch)
    r = rook_cli("run", "--json", f"--report=leaving:{tmp_path}/out.txt")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"s1": "passed", "s2": "passed"}, r.stderr
    assert ("plugin closing (rook-closing) raised GeneratorExit in rook_evidence_recorded: 0"
            in r.stderr), r.stderr
    assert ("the 'leaving' reporter (closing (rook-closing)) failed: GeneratorExit: 0"
            in r.stderr), r.stderr


THREADED = """
import asyncio
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing


def agent(text):
    time.sleep(600)  # an in-process agent that never answers in time
    return {"output": text}


async def execute(call):
    started = time.time()
    try:  # docs/plugins/transport.md's pyfunc: a plain function in a thread, bounded
        data = await asyncio.wait_for(asyncio.to_thread(agent, call.stdin), call.timeout)
        status, diagnosis = "ok", None
    except asyncio.TimeoutError:
        data, status, diagnosis = None, "timeout", f"no answer within {call.timeout:g} s"
    ended = time.time()
    return HookResult(call.phase, status, ended - started, started, ended, data=data,
                      diagnosis=diagnosis, turn=call.turn, transport="threaded")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="threaded", load_config=lambda value: value,
                           saved_names=saves_nothing))


@hookimpl
def rook_transport_execute(call):
    return execute(call) if call.entry.transport == "threaded" else None
"""


def test_a_transport_whose_thread_never_returns_does_not_keep_rook_from_exiting(
    rook_workspace, tmp_path
):
    """The pyfunc transport of docs/plugins/transport.md runs the agent with
    ``asyncio.to_thread`` under ``wait_for``: past its timeout the scenario was an
    ``error`` and the results printed, but ``rook run`` then waited for the thread
    (asyncio's default executor is joined at exit) as long as the agent took:
    forever for one that never answers, a CI job hung after its run. The thread
    is now let go, as a plain judge's is: Rook exits once the run is recorded."""
    from rook_core.testing import make_distribution

    site = make_distribution(tmp_path / "site", "rook-threaded", {"threaded": "rook_threaded"},
                             {"rook_threaded.py": THREADED})
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"threaded": 1,
                                                             "timeout_seconds": 1}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "g"}]})
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.Popen([sys.executable, "-m", "rook_core", "run", "--json"],
                            cwd=rook_workspace.root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=120)  # the agent's thread sleeps 600 s
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("rook run waited for the transport's thread after the run")
    assert proc.returncode == 1, err
    scenario = json.loads(out)["scenarios"][0]
    assert scenario["status"] == "error" and "no answer within 1 s" in scenario["reason"]


FLOOD = """
import time
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec


async def answer(call):
    now = time.time()
    size = call.entry.config["bytes"]
    return HookResult(call.phase, "ok", 0.0, now, now, data={"output": "said " + "x" * size},
                      turn=call.turn, transport="flood")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="flood", load_config=lambda value: value))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "flood" else None
"""


def test_a_transport_s_answer_is_held_to_the_output_cap_of_a_script_hook(
    rook_distribution, rook_workspace, rook_cli
):
    """A transport plugin's answer was recorded whole, however long (40 MiB: a run
    folder of 81 MB), where a script hook's stdout is capped (limits.stdout_bytes).
    An answer over the cap now fails the hook naming the cap and how to raise it,
    the record keeping its first 64 KiB; one under it passes as before."""
    rook_distribution("rook-flood", {"flood": "rook_flood"}, {"rook_flood.py": FLOOD})
    ws = rook_workspace
    ws.profile({"id": "p", "limits": {"stdout_bytes": 200_000},
                "hooks": {"execute": {"flood": {"bytes": 300_000}}}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "said"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1 and r.statuses() == {"s": "error"}, r.stderr
    run_id = r.report["run"]["id"]
    hook = ws.record(run_id, "s.1")["hooks"][-1]
    assert hook["status"] == "failed" and hook["data"] is None, hook["diagnosis"]
    assert hook["diagnosis"] == (
        "transport 'flood' (flood (rook-flood)) returned data of 300019 bytes as JSON, over "
        "the 200000-byte cap on a hook's output; the record keeps its first 65536 characters "
        "as stdout (raise limits.stdout_bytes in the profile if this much output is expected)"
    )
    assert hook["stdout"].startswith('{"output": "said xxx')
    assert len(hook["stdout"]) < 70_000
    assert sum(p.stat().st_size for p in ws.run_dir(run_id).rglob("*") if p.is_file()) < 250_000
    ws.profile({"id": "p", "limits": {"stdout_bytes": 400_000},
                "hooks": {"execute": {"flood": {"bytes": 300_000}}}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0 and r.statuses() == {"s": "passed"}, r.stderr
