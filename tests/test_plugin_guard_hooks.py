"""One behavioural test per hook of ``rook_core/hookspecs.py``, named ``test_hook_<hook>``.

Each registers an in-test plugin (``rook_plugin``) that implements the hook
the way the plugin author guide says, and drives it through the real ``rook``
command. ``tests/test_plugin_guard.py`` fails when a hook has no such test.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from marshmallow import ValidationError

from rook_core import plugins
from rook_core.errors import PluginError
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import FAILED, PASSED, HookResult, Verdict
from rook_core.transports import TransportSpec


def answer(call: Any, data: dict[str, Any] | None) -> Any:
    """An awaitable HookResult, the way a transport returns one."""

    async def done() -> HookResult:
        now = time.time()
        return HookResult(
            call.phase,
            "ok",
            0.0,
            now,
            now,
            data=data,
            turn=call.turn,
            transport=call.entry.transport,
        )

    return done()


class Desk:
    """A transport plugin for key ``desk``; records every phase call it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.resources: list[str] = []

    def mine(self, call: Any) -> bool:
        return call.entry.transport == "desk"

    @hookimpl
    def rook_register_transports(self, register):
        def load(value):
            if not isinstance(value, dict) or not isinstance(value.get("greeting"), str):
                raise ValidationError({"greeting": ["must be a text"]})
            return value

        async def start(run):
            self.resources.append("start")
            return {"run": run.id}

        async def stop(resource):
            self.resources.append(f"stop {bool(resource['run'])}")

        register(
            TransportSpec(
                key="desk", load_config=load, start=start, stop=stop, description="an in-test desk"
            )
        )

    @hookimpl
    def rook_auth_prepare(self, call):
        if not self.mine(call):
            return None
        self.calls.append(("prepare", call.scenario))
        call.run.saved["token"] = "tok-1"
        return answer(call, None)

    @hookimpl
    def rook_session_open(self, call):
        if not self.mine(call):
            return None
        self.calls.append(("open", call.scenario.id))
        return answer(call, {"conversation": f"conv-{call.scenario.id}"})

    @hookimpl
    def rook_transport_execute(self, call):
        if not self.mine(call):
            return None
        self.calls.append(("execute", (call.turn, call.conversation, call.env["ROOK_TURN"])))
        text = f"{call.entry.config['greeting']} {call.stdin} [{call.run.saved.get('token')}]"
        if "explode" in call.stdin:

            async def boom():
                raise RuntimeError("desk exploded")

            return boom()
        return answer(call, {"output": text, "conversation": f"{call.conversation}+{call.turn}"})

    @hookimpl
    def rook_session_close(self, call):
        if not self.mine(call):
            return None
        self.calls.append(("close", call.conversation))
        return answer(call, None)

    @hookimpl
    def rook_evidence_collect(self, call):
        if not self.mine(call):
            return None
        self.calls.append(("collect", call.conversation))
        return answer(
            call,
            {
                "usage": {"input": 3, "output": 4},
                "calls": [{"name": "lookup", "arguments": {"id": 1}}],
                "trace": "t-1",
            },
        )


def desk_profile(ws, phases=("execute",), **extra):
    hooks = {p: {"desk": {"greeting": "Hi"}} for p in phases}
    ws.profile({"id": "desk", "hooks": hooks, **extra})


def test_hook_rook_register_transports(rook_plugin, rook_workspace, rook_cli):
    desk = rook_plugin(Desk())
    r = rook_cli("plugins", "--json")
    assert "desk" in json.loads(r.stdout)["transports"]
    desk_profile(rook_workspace)
    rook_workspace.scenario({"id": "s", "goal": "there", "criteria": [{"contains": "Hi there"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert desk.resources == ["start", "stop True"], "start once per run, stop at its end"
    rook_workspace.profile({"id": "desk", "hooks": {"execute": {"desk": {"greeting": 3}}}})
    r = rook_cli("run")
    assert r.exit_code == 2 and "hooks.execute.desk.greeting: must be a text" in r.stderr


def test_hook_rook_transport_execute(rook_plugin, rook_workspace, rook_cli):
    desk = rook_plugin(Desk())
    desk_profile(rook_workspace, ("open", "execute"), capabilities={"multi_turn": True})
    rook_workspace.scenario(
        {"id": "two", "turns": ["one", "two"], "criteria": [{"contains": "Hi two"}]}
    )
    rook_workspace.scenario({"id": "bad", "goal": "explode", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"two": "passed", "bad": "error"}
    executes = [c[1] for c in desk.calls if c[0] == "execute"]
    assert (1, "conv-two", "1") in executes and (2, "conv-two+1", "2") in executes
    bad = next(s for s in r.report["scenarios"] if s["id"] == "bad")
    assert "raised RuntimeError: desk exploded" in bad["reason"]


def test_hook_rook_auth_prepare(rook_plugin, rook_workspace, rook_cli):
    desk = rook_plugin(Desk())
    desk_profile(rook_workspace, ("prepare", "execute"))
    for sid in ("a", "b"):
        rook_workspace.scenario({"id": sid, "goal": sid, "criteria": [{"contains": "[tok-1]"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"a": "passed", "b": "passed"}
    prepares = [c for c in desk.calls if c[0] == "prepare"]
    assert prepares == [("prepare", None)], "once per run, with no scenario"
    assert desk.calls[0][0] == "prepare"
    # resumed in a new process: prepare is not run again, and run.saved starts empty
    r = rook_cli("run", "--phases", "prepare", "--json")
    desk.calls.clear()
    r = rook_cli("run", "--run", r.report["run"]["id"], "--json")
    assert [c[0] for c in desk.calls] == ["execute", "execute"]
    assert r.statuses() == {"a": "failed", "b": "failed"}
    assert "[None]" in r.report["scenarios"][0]["turns"][0]["output"]


def test_hook_rook_session_open(rook_plugin, rook_workspace, rook_cli):
    desk = rook_plugin(Desk())
    desk_profile(rook_workspace, ("open", "execute"))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "Hi g"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}
    assert [c[0] for c in desk.calls] == ["open", "execute"]
    assert desk.calls[1][1][1] == "conv-s", "open's conversation is the first turn's handle"
    assert r.report["run"]["capabilities"]["observed"].get("multi_turn") is True


def test_hook_rook_session_close(rook_plugin, rook_workspace, rook_cli):
    desk = rook_plugin(Desk())
    desk_profile(rook_workspace, ("open", "execute", "close"))
    rook_workspace.scenario({"id": "ok", "goal": "g", "criteria": [{"contains": "Hi"}]})
    rook_workspace.scenario({"id": "bad", "goal": "explode", "criteria": [{"contains": "Hi"}]})
    r = rook_cli("run", "--json", "--concurrency", "1")
    assert r.statuses() == {"ok": "passed", "bad": "error"}
    closes = sorted(c[1] for c in desk.calls if c[0] == "close")
    assert closes == ["conv-bad", "conv-ok+1"], "close gets the last handle, also after a failure"


def test_hook_rook_evidence_collect(rook_plugin, rook_workspace, rook_cli):
    desk = rook_plugin(Desk())
    desk_profile(
        rook_workspace, ("open", "execute", "collect"), capabilities={"calls": True, "usage": True}
    )
    rook_workspace.scenario(
        {
            "id": "s",
            "goal": "g",
            "criteria": [
                {"called": {"name": "lookup", "arguments": {"id": 1}}},
                {"max_tokens": {"total": 7}},
            ],
        }
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.report["scenarios"][0]["criteria"]
    collected = r.report["scenarios"][0]["collected"]
    assert collected["evidence"]["trace"] == "t-1"
    assert ("collect", "conv-s+1") in desk.calls


def test_hook_rook_evidence_recorded(rook_plugin, rook_workspace, rook_cli):
    class Observer:
        def __init__(self):
            self.seen = []

        @hookimpl
        def rook_evidence_recorded(self, run, record, result):
            self.seen.append((record["key"] if record else None, result.phase, result.status))
            return "ignored"

    rook_plugin(Desk())
    observer = rook_plugin(Observer())
    desk_profile(
        rook_workspace, ("prepare", "open", "execute", "close"), capabilities={"multi_turn": True}
    )
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "Hi"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    assert observer.seen == [
        (None, "prepare", "ok"),
        ("s.1", "open", "ok"),
        ("s.1", "execute", "ok"),
        ("s.1", "execute", "ok"),
        ("s.1", "close", "ok"),
    ]


def test_evidence_observers_see_every_phase_failures_and_a_later_collect_redacted(
    rook_plugin, rook_workspace, rook_cli, monkeypatch
):
    """hookspecs: rook_evidence_recorded is called for every hook result of every
    phase, in order, after redaction: with a real bash hook, that is collect too
    (also run by a later rook run --run ID process), a failed execute, and the
    value of a profile env variable the hook echoes shown only redacted."""

    class Observer:
        def __init__(self):
            self.seen = []

        @hookimpl
        def rook_evidence_recorded(self, run, record, result):
            data = json.dumps([result.data, result.stderr, result.diagnosis])
            self.seen.append((record["key"] if record else None, result.phase, result.status, data))

    observer = rook_plugin(Observer())
    monkeypatch.setenv("DESK_KEY", "k-9qx-secret")
    rook_workspace.script(
        "desk.sh",
        """
        #!/bin/bash
        case "$1" in
          prepare) echo "signed in with $DESK_KEY" >&2 ;;
          execute) goal=$(cat)
            if [ "$goal" = bad ]; then echo "refused $DESK_KEY" >&2; exit 3; fi
            echo "{\\"output\\": \\"hi $DESK_KEY\\"}" ;;
          collect) echo "{\\"trace\\": \\"t-$DESK_KEY\\"}" ;;
        esac
        exit 0
        """,
    )
    hooks = {p: "scripts/desk.sh" for p in ("prepare", "execute", "close", "collect")}
    env = [{"variable": "DESK_KEY", "purpose": "desk key"}]
    rook_workspace.profile({"id": "desk", "hooks": hooks, "env": env})
    rook_workspace.scenario({"id": "a", "goal": "g", "criteria": [{"contains": "hi"}]})
    rook_workspace.scenario({"id": "b", "goal": "bad", "criteria": [{"contains": "hi"}]})
    first = rook_cli("run", "--json", "-j", "1", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 1, first.stderr  # b's execute failed
    run_id = first.report["run"]["id"]
    assert [s[:3] for s in observer.seen] == [
        (None, "prepare", "ok"),
        ("a.1", "execute", "ok"),
        ("a.1", "close", "ok"),
        ("b.1", "execute", "failed"),
        ("b.1", "close", "ok"),
    ]
    observer.seen.clear()
    later = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert later.statuses() == {"a": "passed", "b": "error"}, later.stderr
    assert [s[:3] for s in observer.seen] == [("a.1", "collect", "ok")]
    seen = json.dumps(observer.seen)
    assert "k-9qx-secret" not in seen and "t-[redacted:DESK_KEY]" in seen, seen


def test_hook_rook_evidence_merged(rook_plugin, rook_workspace, rook_cli):
    class Joiner:
        """Keeps a run-level file of its own; joins the shards' copies on merge."""

        def __init__(self):
            self.merged = []

        @hookimpl
        def rook_evidence_recorded(self, run, record, result):
            if record is not None:
                (run.dir / f"seen.{record['key']}").write_text(result.phase)

        @hookimpl
        def rook_evidence_merged(self, merged):
            seen = sorted(f.name for d in merged.sources for f in d.glob("seen.*"))
            (merged.path / "seen.txt").write_text("\n".join(seen))
            merged.notes.append(f"joined {len(seen)}")
            self.merged.append((merged.manifest["id"], [d.name for d in merged.sources]))
            return "ignored"

    rook_plugin(Desk())
    joiner = rook_plugin(Joiner())
    desk_profile(rook_workspace)
    for sid in ("a", "b", "c"):
        rook_workspace.scenario({"id": sid, "goal": sid, "criteria": [{"contains": "Hi"}]})
    for i in (1, 2):
        r = rook_cli("run", "--shard", f"{i}/2", "--run-name", "m-1", "--json")
        assert r.exit_code == 0, r.stderr
    merged = rook_cli("merge", "--workspace", str(rook_workspace.root), "--run", "m-1", "--json")
    assert merged.exit_code == 0, merged.stderr
    assert joiner.merged == [("m-1", ["m-1"])]
    run_dir = rook_workspace.run_dir("m-1")
    assert (run_dir / "seen.txt").read_text() == "seen.a.1\nseen.b.1\nseen.c.1"
    assert "joined 3" in merged.stderr


class Polite(CriterionType):
    name = "polite"
    needs = frozenset({"calls"})
    per_turn = True

    def parse(self, value):
        if not isinstance(value, str):
            raise ValidationError("must be the polite word")
        return value.lower()

    def evaluate(self, config, view):
        ok = config in (view.output or "").lower()
        return Verdict(PASSED if ok else FAILED, f"{'said' if ok else 'did not say'} {config!r}")


def test_hook_rook_register_criteria(rook_plugin, rook_workspace, rook_cli):
    class Whole(Polite):  # judges all turns together, so collect's calls are in its view
        per_turn = False

    class Plugin:
        @hookimpl
        def rook_register_criteria(self, register):
            register(Whole())

    rook_plugin(Plugin())
    rook_plugin(Desk())
    rook_workspace.scenario({"id": "yes", "goal": "please", "criteria": [{"polite": "PLEASE"}]})
    rook_workspace.scenario({"id": "no", "goal": "now", "criteria": [{"polite": "please"}]})
    desk_profile(rook_workspace, capabilities={"calls": False})  # and never observed
    r = rook_cli("run", "--json")
    assert set(r.statuses().values()) == {"not_runnable"}, "needs: calls is honoured"
    # the calls it needs are observed: collect reports them
    desk_profile(rook_workspace, ("execute", "collect"), capabilities={"calls": True})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"yes": "passed", "no": "failed"}
    # declared but not observed (no collect, no calls in the answers): never a pass (SPEC 5)
    desk_profile(rook_workspace, capabilities={"calls": True})
    r = rook_cli("run", "--json")
    assert set(r.statuses().values()) == {"unverifiable"}, r.report["scenarios"]
    rook_workspace.scenario({"id": "no", "goal": "now", "criteria": [{"polite": 1}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and "polite: must be the polite word" in r.stderr


def test_hook_rook_register_judges(rook_plugin, rook_workspace, rook_cli):
    seen = []

    class Shouting:
        def check(self, config):
            return None if set(config) <= {"min"} else "shouting: only min"

        def __call__(self, config, view):
            seen.append((config, view.output))
            share = sum(c.isupper() for c in view.output) / max(1, len(view.output))
            ok = share >= config.get("min", 0.5)
            return Verdict(PASSED if ok else FAILED, f"share {share:.2f}", {"share": share})

    class Plugin:
        @hookimpl
        def rook_register_judges(self, register):
            register("shouting", Shouting())

    rook_plugin(Plugin())
    rook_plugin(Desk())
    rook = plugins.build_plugin_manager()
    assert "shouting" in rook.judges
    if "judge" not in rook.criteria:
        pytest.skip("the judge: criterion type is not installed")
    desk_profile(rook_workspace)
    rook_workspace.scenario(
        {
            "id": "loud",
            "goal": "HELLO THERE",
            "criteria": [{"judge": {"name": "shouting", "min": 0.4}}],
        }
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"loud": "passed"}
    assert seen == [({"min": 0.4}, "Hi HELLO THERE [None]")], "config without name, the view"
    assert r.report["scenarios"][0]["criteria"][0]["evidence"]["share"] > 0.4
    rook_workspace.scenario(
        {"id": "loud", "goal": "x", "criteria": [{"judge": {"name": "whisper"}}]}
    )
    r = rook_cli("run")
    assert r.exit_code == 2 and "shouting" in r.stderr, "unknown judge names the installed ones"


def test_hook_rook_register_connectors():
    class Echo:
        name = "echo-connector"
        continuity = "workspace_only"

    class Plugin:
        @hookimpl
        def rook_register_connectors(self, register):
            register(Echo)

    rook = plugins.build_plugin_manager()
    rook.register(Plugin(), name="connectors-test")
    assert rook.connectors.get("echo-connector") is Echo
    assert rook.connectors.owner("echo-connector") == "connectors-test"
    with pytest.raises(PluginError, match="connector 'echo-connector' is registered twice"):
        rook.register(type("Again", (Plugin,), {})(), name="again")


def test_hook_rook_register_reporters(rook_plugin, rook_workspace, rook_cli):
    class Plugin:
        @hookimpl
        def rook_register_reporters(self, register):
            def write(report, path):
                lines = [f"{s['id']}={s['status']}" for s in report["scenarios"]]
                path.write_text("\n".join(lines) + "\n")

            register("lines", write)

    rook_plugin(Plugin())
    rook_plugin(Desk())
    desk_profile(rook_workspace)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "Hi g"}]})
    out = rook_workspace.root / "out" / "r.txt"
    r = rook_cli("run", "--report", f"lines:{out}")
    assert r.exit_code == 0, r.stderr
    assert out.read_text() == "s=passed\n"
    r = rook_cli("run", "--report", "nope:x")
    assert r.exit_code == 2 and "lines" in r.stderr, "unknown format names the installed ones"


def test_hook_rook_register_authors(rook_plugin, rook_cli):
    class Author:
        def __call__(self, source):
            return {"profile": {"id": "p"}, "script": "#!/bin/sh\n"}

    class Plugin:
        @hookimpl
        def rook_register_authors(self, register):
            register("canned", Author())

    rook_plugin(Plugin())
    r = rook_cli("plugins", "--json")
    assert "canned" in json.loads(r.stdout)["authors"]
    rook = plugins.build_plugin_manager()
    assert rook.authors.get("canned")(None)["profile"]["id"] == "p"
    with pytest.raises(PluginError, match="author 'canned' is registered twice"):
        rook.register(type("Again", (Plugin,), {})(), name="again")


def test_hook_rook_register_executors(rook_plugin, rook_workspace, rook_cli):
    runs = []

    async def backwards(engine, scenario_runs, concurrency, options):
        runs.append((concurrency, options))
        for sr in reversed(scenario_runs):
            await engine.run_scenario(sr)

    class Plugin:
        @hookimpl
        def rook_register_executors(self, register):
            register("backwards", backwards)

    rook_plugin(Plugin())
    rook_plugin(Desk())
    desk_profile(rook_workspace)
    for sid in ("a", "b", "c"):
        rook_workspace.scenario({"id": sid, "goal": sid, "criteria": [{"contains": "Hi"}]})
    r = rook_cli("run", "--json", "--executor", "backwards", "--concurrency", "3")
    assert r.statuses() == {"a": "passed", "b": "passed", "c": "passed"}
    assert runs == [(3, {})]
    r = rook_cli("run", "--executor", "nope")
    assert r.exit_code == 2 and "backwards" in r.stderr
