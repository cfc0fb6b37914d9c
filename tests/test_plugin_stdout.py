"""What a plugin prints never reaches standard output, which holds Rook's output only.

A plugin that prints (a banner when it is imported, a debug line in a hook, a
criterion, a reporter or an observer) used to write into standard output, so
``rook run --json`` and every other ``--json`` command printed something that
is not one JSON document. Now what plugin code prints while Rook loads and
calls it goes to standard error, and the document stays whole.
"""

from __future__ import annotations

import json

NOISY = """
print("noisy: imported")

from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Loud(CriterionType):
    name = "loud"

    def parse(self, value):
        print("noisy: parse")
        return value

    def evaluate(self, config, view):
        print("noisy: evaluate")
        return Verdict(PASSED, "heard")


def write(report, path):
    print("noisy: report")
    path.write_text("noisy\\n")


class Author:
    def detect(self, source):
        print("noisy: detect")
        return 0.0

    def write(self, request):
        return None


@hookimpl
def rook_register_criteria(register):
    print("noisy: register criteria")
    register(Loud())


@hookimpl
def rook_register_reporters(register):
    register("noisy", write)


@hookimpl
def rook_register_authors(register):
    print("noisy: register authors")
    register("noisy", Author())


@hookimpl
def rook_evidence_recorded(run, record, result):
    print("noisy: recorded", result.phase)


@hookimpl
def rook_evidence_merged(merged):
    print("noisy: merged")
"""


def noisy_workspace(rook_distribution, ws):
    rook_distribution("rook-noisy", {"noisy": "rook_noisy"}, {"rook_noisy.py": NOISY})
    ws.script(
        "echo.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        printf '{"output": "%s"}\\n' "$(cat)"
        """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    ws.scenario({"id": "a", "goal": "HELLO", "criteria": [{"loud": True}]})
    ws.scenario({"id": "b", "goal": "BYE", "criteria": [{"loud": True}]})


def one_document(r, *said):
    """stdout is exactly one JSON document; what the plugin said is on stderr."""
    assert r.exception is None, r.stderr
    assert "noisy:" not in r.stdout, r.stdout
    doc = json.loads(r.stdout)
    for text in said:
        assert f"noisy: {text}" in r.stderr, r.stderr
    return doc


def test_what_a_plugin_prints_goes_to_stderr_in_every_json_command(
    rook_distribution, rook_workspace, rook_cli, tmp_path
):
    noisy_workspace(rook_distribution, rook_workspace)
    doc = one_document(rook_cli("plugins", "--json"), "imported", "register authors")
    assert "loud" in doc["criteria"] and "noisy" in doc["authors"]

    r = rook_cli("run", "--json", "--report", f"noisy:{tmp_path / 'out.txt'}")
    doc = one_document(r, "register criteria", "parse", "recorded execute", "evaluate", "report")
    assert r.exit_code == 0 and r.statuses() == {"a": "passed", "b": "passed"}
    run_id = doc["run"]["id"]

    r = rook_cli("report", run_id, "--json", "--report", f"noisy:{tmp_path / 'again.txt'}")
    assert r.exit_code == 0
    assert one_document(r, "report")["run"]["id"] == run_id

    ws = ("-w", str(rook_workspace.root))
    for argv in (("profile", "list", "--json"), ("profile", "show", "p", "--json")):
        one_document(rook_cli(*argv, *ws), "register criteria")
    r = rook_cli("profile", "test", "--json", *ws)
    assert r.exit_code == 0, r.stderr
    one_document(r, "recorded execute")
    r = rook_cli("doctor", "--json", *ws)
    assert one_document(r, "parse")["problems"] == 0

    for shard in ("1/2", "2/2"):
        r = rook_cli("run", "--shard", shard, "--run-name", "sharded", "--json")
        assert r.exit_code == 0, r.stderr
        one_document(r, "evaluate")
    r = rook_cli("merge", "--run", "sharded", "--json", *ws)
    assert r.exit_code == 0, r.stderr
    assert one_document(r, "merged")["summary"]["passed"] == 2


def test_what_a_plugin_prints_does_not_mix_into_tables(
    rook_distribution, rook_workspace, rook_cli
):
    noisy_workspace(rook_distribution, rook_workspace)
    r = rook_cli("plugins")
    assert r.exit_code == 0 and "noisy:" not in r.stdout and "noisy: imported" in r.stderr
    r = rook_cli("run")
    assert r.exit_code == 0 and "noisy:" not in r.stdout and "noisy: evaluate" in r.stderr
    assert "2 passed" in r.stdout


NOISY_TRANSPORT = """
import time

from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec, saves_nothing


def load_config(value):
    print("noisy: load_config")
    return value


def env_names(config):
    print("noisy: env_names")
    return []


async def answer(call):
    now = time.time()
    return HookResult(call.phase, "ok", 0.0, now, now, data={"output": call.entry.config},
                      turn=call.turn, transport="noisy")


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="noisy", load_config=load_config, env_names=env_names,
                           saved_names=saves_nothing))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "noisy" else None
"""


def test_what_a_transport_plugin_prints_while_a_profile_loads_goes_to_stderr(
    rook_distribution, rook_workspace, rook_cli, monkeypatch
):
    """A transport's load_config and env_names run when a profile loads: what they
    printed reached standard output in `rook profile list/show/test --json`."""
    rook_distribution("rook-noisyt", {"noisyt": "rook_noisyt"},
                      {"rook_noisyt.py": NOISY_TRANSPORT})
    monkeypatch.setenv("ROOK_NO_CACHE", "1")  # the profile is validated on every command
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"noisy": "HELLO"}}})
    rook_workspace.scenario({"id": "a", "goal": "hi", "criteria": [{"contains": "HELLO"}]})
    ws = ("-w", str(rook_workspace.root))
    for argv in (("profile", "list", "--json"), ("profile", "show", "p", "--json"),
                 ("profile", "test", "--json"), ("run", "--json"), ("doctor", "--json")):
        one_document(rook_cli(*argv, *ws), "load_config", "env_names")
