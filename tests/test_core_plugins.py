"""The plugin system: entry points, registries, in-test plugins, the core/plugins boundary."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from rook_core.errors import PluginError
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import FAILED, PASSED, HookResult, Verdict
from rook_core.plugins import build_plugin_manager
from rook_core.transports import TransportSpec

ROOT = Path(__file__).resolve().parents[1]


def test_rook_core_never_imports_a_builtin_plugin():
    offenders = []
    for path in (ROOT / "rook_core").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [
                f"{path}: {n}" for n in names if n.split(".")[0] in ("rook_plugins", "plugins")
            ]
    assert offenders == []


def test_builtins_load_through_the_entry_point_group(rook_cli):
    r = rook_cli("plugins", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    by_name = {p["name"]: p for p in doc["plugins"]}
    for name in ("script", "criteria", "reporters", "executor_local"):
        assert by_name[name]["distribution"] == "rook-harness"
        assert by_name[name]["module"].startswith("rook_plugins.")
    assert "rook_transport_execute" in by_name["script"]["hooks"]
    assert "script" in doc["transports"] and "contains" in doc["criteria"]
    assert "local" in doc["executors"] and "json" in doc["reporters"]
    r = rook_cli("plugins")
    assert "rook-harness" in r.stdout and "reporters:\n  html              · report_html" in r.stdout
    # each transport and criterion type with its description (the docs promise the line)
    assert doc["descriptions"]["transports"]["script"].startswith("run a hook script")
    lines = r.stdout.splitlines()
    assert "transports:" in lines and "criteria:" in lines
    assert any(line.split()[:3] == ["script", "run", "a"] and line.endswith("· script (rook-harness)")
               for line in lines), r.stdout


WORDY = """
from rook_core.hookspecs import hookimpl
from rook_core.transports import TransportSpec


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="wordy", load_config=lambda v: v,
                           description="Call the agent.\\n\\n    Over several lines, \\x1b[2J too.\\n"))
"""


def test_a_plugins_description_is_one_line_in_rook_plugins(rook_distribution, rook_cli):
    """transport.md: a description is one line for rook plugins. One written over
    several lines (a docstring) broke the listing, its second line at the margin,
    and a control character in it reached the terminal raw (ESC [2J clears it)."""
    rook_distribution("rook-wordy", {"wordy": "rook_wordy"}, {"rook_wordy.py": WORDY})
    r = rook_cli("plugins")
    assert r.exit_code == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("  wordy "))
    assert line.split(None, 1)[1] == (
        "Call the agent. Over several lines, \\x1b[2J too.  · wordy (rook-wordy)"
    ), r.stdout
    assert "\x1b" not in r.stdout
    listed = json.loads(rook_cli("plugins", "--json").stdout)["descriptions"]["transports"]
    assert listed["wordy"].startswith("Call the agent.\n\n")  # the JSON keeps it as given


MODEST = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Polite(CriterionType):
    name = "polite"  # no description

    def evaluate(self, config, view):
        return Verdict(PASSED, "polite enough")


@hookimpl
def rook_register_criteria(register):
    register(Polite())
"""


def test_a_criterion_type_without_a_description_is_aligned_in_rook_plugins(
    rook_distribution, rook_cli
):
    """A criterion type with no description was listed out of line with the
    others ('  polite  · polite (rook-polite)'): its name's padding was cut
    with the missing description. Its plugin is where the descriptions are."""
    rook_distribution("rook-polite", {"polite": "rook_polite"}, {"rook_polite.py": MODEST})
    r = rook_cli("plugins")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    criteria = lines[lines.index("criteria:") + 1 :]
    criteria = criteria[: next(i for i, ln in enumerate(criteria) if not ln.startswith("  "))]
    polite = next(ln for ln in criteria if ln.startswith("  polite "))
    contains = next(ln for ln in criteria if ln.startswith("  contains "))
    column = len(contains) - len(contains[2:].split(None, 1)[1])  # where descriptions start
    assert polite[column:] == "· polite (rook-polite)", r.stdout
    assert polite[2:column].rstrip() == "polite"


def test_operator_switches_disable_and_allow(monkeypatch):
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", "reporters")
    assert "json" not in build_plugin_manager().reporters
    monkeypatch.delenv("ROOK_DISABLE_PLUGINS")
    monkeypatch.setenv("ROOK_LOAD_PLUGINS", "script,criteria")
    rook = build_plugin_manager()
    assert {i.name for i in rook.infos} == {"script", "criteria"}


@pytest.mark.parametrize(
    "switch, value, message",
    [
        ("ROOK_DISABLE_PLUGINS", "script", "hooks.execute: no installed transport runs 'script' "
         "entries; installed: connector, http, ruhroh (ROOK_DISABLE_PLUGINS=script is set: "
         "plugins it leaves out are not loaded)"),
        ("ROOK_DISABLE_PLUGINS", "criteria", "criteria.0.contains: unknown criterion type; "
         "installed: "),
        ("ROOK_DISABLE_PLUGINS", "executor_local", "--executor local: unknown; installed: dask "
         "(ROOK_DISABLE_PLUGINS=executor_local is set: plugins it leaves out are not loaded)"),
        ("ROOK_LOAD_PLUGINS", "script,criteria,reporters", "--executor local: unknown; installed: "
         "none (ROOK_LOAD_PLUGINS=script,criteria,reporters is set: plugins it leaves out are "
         "not loaded)"),
    ],
)
def test_a_builtin_is_switched_off_by_name_as_any_plugin_and_the_refusal_says_so(
    rook_workspace, rook_cli, monkeypatch, switch, value, message
):
    """The built-ins are entry points like any plugin: the operator switches reach them
    by name through the real CLI, and what is then missing is refused (exit 2, nothing
    run) naming what is installed and the switch that left the rest out."""
    rook_workspace.script("agent.sh", "#!/bin/sh\necho '{\"output\": \"hi\"}'\n")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    assert rook_cli("run").exit_code == 0
    monkeypatch.setenv(switch, value)
    r = rook_cli("run")
    assert r.exit_code == 2 and r.exception is None, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    if value == "criteria":
        assert "(ROOK_DISABLE_PLUGINS=criteria is set: plugins it leaves out" in r.stderr
        assert "contains" not in r.stderr.split("installed: ")[1].split(" (")[0]
    assert len(list(rook_workspace.runs_dir.iterdir())) == 1  # the first run only


@pytest.mark.parametrize(("value", "hint"), [
    ("rook-harnes", "did you mean rook-harness?"),
    ("reportrs", "did you mean reporters?"),
    ("nosuch", ""),
])
def test_a_switch_naming_nothing_says_the_distributions_too(
        rook_workspace, rook_cli, monkeypatch, value, hint):
    """ROOK_DISABLE_PLUGINS=rook-harnes warned 'which no installed plugin is called
    ... (installed: author_agent, ...)': entry point names only, though a
    distribution's name (pip's) is as good, and the one meant was not named. The
    warning, and rook doctor's fix, list both and the name it looks like."""
    rook_workspace.script("agent.sh", "#!/bin/sh\necho '{\"output\": \"hi\"}'\n")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    monkeypatch.setenv("ROOK_DISABLE_PLUGINS", value)
    r = rook_cli("run")
    assert r.exit_code == 0, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if "ROOK_DISABLE_PLUGINS" in ln]
    assert line.startswith(f"rook: warning: ROOK_DISABLE_PLUGINS names {value!r}, which no "
                           "installed plugin or distribution is called: it disables nothing"), line
    assert "(plugins: author_agent, " in line and "; distributions: rook-harness)" in line, line
    assert (hint in line) if hint else ("did you mean" not in line), line
    said = rook_cli("doctor")
    out = said.stdout + said.stderr
    assert "or a distribution's (rook-harness)" in out, out
    assert (hint in out) if hint else ("did you mean" not in out), out


@pytest.mark.parametrize("switch", ["ROOK_LOAD_PLUGINS", "ROOK_DISABLE_PLUGINS"])
def test_rook_plugins_warns_of_a_switch_naming_nothing_as_rook_run_does(
        rook_workspace, rook_cli, switch):
    """`ROOK_LOAD_PLUGINS=nosuch rook plugins` showed the table (an empty one) with
    no word: only rook run and rook doctor said the name matches nothing. rook
    plugins, the command an operator runs to see what the switches did, now
    warns with rook run's very line, on standard error (--json's document stays
    one JSON document on standard output)."""
    rook_workspace.script("agent.sh", "#!/bin/sh\necho '{\"output\": \"hi\"}'\n")
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    env = {switch: "nosuch" if switch == "ROOK_LOAD_PLUGINS" else "reportrs"}
    warning = f"rook: warning: {switch} names "
    ran = rook_cli("run", env=env)  # (refused when nothing loads: the line comes first)
    (said_by_run,) = [ln for ln in ran.stderr.splitlines() if ln.startswith(warning)]
    for args in (("plugins",), ("plugins", "--json")):
        r = rook_cli(*args, env=env)
        assert r.exit_code == 0, r.stderr
        assert [ln for ln in r.stderr.splitlines() if switch in ln] == [said_by_run], r.stderr
        assert switch not in r.stdout
    assert "did you mean reporters?" in said_by_run or switch == "ROOK_LOAD_PLUGINS"
    json.loads(rook_cli("plugins", "--json", env=env).stdout)  # still one document
    quiet = rook_cli("plugins", env={switch: "rook-harness"})  # a distribution's name
    assert switch not in quiet.stderr, quiet.stderr


class Shouty(CriterionType):
    name = "shouts"
    description = "the answer is in capitals"

    def evaluate(self, config: Any, view: Any) -> Verdict:
        ok = (view.output or "").isupper()
        return Verdict(PASSED if ok else FAILED, f"output is{'' if ok else ' not'} upper case")


class OrgPlugin:
    """An organisation's plugin: a criterion type, a transport and an observer."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def rook_register_criteria(self, register):
        register(Shouty())

    @hookimpl
    def rook_register_transports(self, register):
        register(TransportSpec(key="echo", load_config=lambda v: {"prefix": str(v)}))

    @hookimpl
    def rook_transport_execute(self, call):
        if call.entry.transport != "echo":
            return None

        async def run():
            return HookResult(
                "execute", "ok", data={"output": call.entry.config["prefix"] + call.stdin}
            )

        return run()

    @hookimpl
    def rook_evidence_recorded(self, run, record, result):
        self.seen.append(f"{result.phase}:{result.status}")


def test_an_in_test_plugin_adds_a_criterion_a_transport_and_observes(
    rook_plugin, rook_workspace, rook_cli
):
    plugin = rook_plugin(OrgPlugin())
    ws = rook_workspace
    ws.profile({"id": "p", "hooks": {"execute": {"echo": "ECHO: "}}})
    ws.scenario(
        {"id": "loud", "goal": "HELLO", "criteria": [{"shouts": True}, {"contains": "echo: hello"}]}
    )
    ws.scenario({"id": "quiet", "goal": "hello", "criteria": [{"shouts": True}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"loud": "passed", "quiet": "failed"}
    assert plugin.seen == ["execute:ok", "execute:ok"]


class AnswersEveryPhase:
    """A test transport's phase hooks, each answered by ``self.answer(call)``."""

    @hookimpl
    def rook_auth_prepare(self, call):
        return self.answer(call)

    @hookimpl
    def rook_session_open(self, call):
        return self.answer(call)

    @hookimpl
    def rook_transport_execute(self, call):
        return self.answer(call)

    @hookimpl
    def rook_session_close(self, call):
        return self.answer(call)


class OnExitSeen(AnswersEveryPhase):
    """A transport noting which of its calls carried ``HookCall.on_exit``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int | None, bool]] = []

    @hookimpl
    def rook_register_transports(self, register):
        register(TransportSpec(key="seen", load_config=lambda v: v))

    def answer(self, call):
        if call.entry.transport != "seen":
            return None
        self.seen.append((call.phase, call.turn, call.on_exit is not None))

        async def run():
            data = {"output": "hi", "conversation": "c"}
            return HookResult(call.phase, "ok", data=data, turn=call.turn)

        return run()


@pytest.mark.parametrize("close", [False, True])
def test_on_exit_is_set_on_the_last_hook_call_only_when_that_is_execute(
    rook_plugin, rook_workspace, rook_cli, close
):
    """transport.md: on_exit is set on the last turn's execute call when no close or
    collect hook follows it (the scenario run's last hook call), else None."""
    plugin = rook_plugin(OnExitSeen())
    hooks = {"execute": {"seen": {}}, **({"close": {"seen": {}}} if close else {})}
    rook_workspace.profile({"id": "p", "hooks": hooks, "capabilities": {"multi_turn": True}})
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    last = not close
    expected = [("execute", 1, False), ("execute", 2, last)] + (
        [("close", None, False)] if close else []
    )
    assert plugin.seen == expected


class CheckArguments(AnswersEveryPhase):
    """Four transports whose ``check`` takes the opt-in arguments or not."""

    def __init__(self) -> None:
        self.got: dict[str, tuple[Any, ...]] = {}

    @hookimpl
    def rook_register_transports(self, register):
        def two(config, plugins):
            self.got["two"] = (config, "transports" in dir(plugins))
            return {**config, "checked": "two"}

        def phase(config, plugins, phase):
            self.got["phase"] = (config, phase)
            return {**config, "checked": "phase"}

        def profile(config, plugins, profile):
            self.got["profile"] = (config, sorted(profile.hooks))
            return {**config, "checked": "profile"}

        def both(config, plugins, profile, phase):  # by name, in any order
            self.got["both"] = (config, phase, sorted(profile.hooks))
            return {**config, "checked": "both"}

        for key, check in (("two", two), ("phase", phase), ("profile", profile), ("both", both)):
            register(TransportSpec(key=key, load_config=lambda v: dict(v), check=check))

    def answer(self, call):
        if call.entry.transport not in self.got:
            return None
        self.got.setdefault("configs", []).append((call.phase, call.entry.config))

        async def run():
            return HookResult(call.phase, "ok", data={"output": "hi"}, turn=call.turn)

        return run()


def test_a_transport_check_gets_phase_and_profile_only_when_it_names_them(
    rook_plugin, rook_workspace, rook_cli
):
    """transport.md: check(config, plugins) gets the entry's phase and the whole
    profile as opt-in arguments, either or both, by those names; what it returns is
    the entry's config from then on."""
    plugin = rook_plugin(CheckArguments())
    hooks = {"prepare": {"two": {"n": 1}}, "open": {"phase": {"n": 2}},
             "execute": {"profile": {"n": 3}}, "close": {"both": {"n": 4}}}
    rook_workspace.profile({"id": "p", "hooks": hooks})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "passed"}, r.stderr
    phases = ["close", "execute", "open", "prepare"]
    assert plugin.got["two"] == ({"n": 1}, True)
    assert plugin.got["phase"] == ({"n": 2}, "open")
    assert plugin.got["profile"] == ({"n": 3}, phases)
    assert plugin.got["both"] == ({"n": 4}, "close", phases)
    assert plugin.got["configs"] == [
        ("prepare", {"n": 1, "checked": "two"}),
        ("open", {"n": 2, "checked": "phase"}),
        ("execute", {"n": 3, "checked": "profile"}),
        ("close", {"n": 4, "checked": "both"}),
    ]


def test_unknown_transport_key_names_the_installed_ones(rook_plugin, rook_workspace, rook_cli):
    rook_plugin(OrgPlugin())
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"grpc": "x"}}})
    rook_workspace.scenario({"id": "s", "goal": "g"})
    r = rook_cli("run")
    assert r.exit_code == 2 and "installed transports: " in r.stderr
    installed = r.stderr.split("installed transports: ")[1].split()
    assert "echo," in installed and "script" in " ".join(installed)


def test_duplicate_registration_names_both_plugins():
    rook = build_plugin_manager()

    class Dup:
        @hookimpl
        def rook_register_criteria(self, register):
            register(Shouty())
            register(type("Again", (Shouty,), {})())

    with pytest.raises(PluginError, match="criterion type 'shouts' is registered twice") as err:
        rook.register(Dup(), name="dup")
    # the way out: no switch reaches a plugin registered in process (it has no entry point)
    assert str(err.value).endswith(
        " (unregister the second: it is registered in this process, not from an entry point)"
    )


def test_a_misspelt_hook_fails_loudly():
    rook = build_plugin_manager()

    class Typo:
        @hookimpl
        def rook_transport_excute(self, call):  # noqa: D401 - the typo is the point
            return None

    with pytest.raises(PluginError, match="implements rook_transport_excute, a hook Rook"):
        rook.register(Typo(), name="typo")
    assert rook.pm.get_plugin("typo") is None  # not left registered


def test_a_transport_plugin_bug_fails_the_hook_not_the_run(rook_plugin, rook_workspace, rook_cli):
    class Broken:
        @hookimpl
        def rook_register_transports(self, register):
            register(TransportSpec(key="broken", load_config=lambda v: v))

        @hookimpl
        def rook_transport_execute(self, call):
            if call.entry.transport != "broken":
                return None

            async def run():
                raise ZeroDivisionError("oops")

            return run()

    rook_plugin(Broken())
    rook_workspace.profile({"id": "p", "hooks": {"execute": {"broken": {}}}})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    s = r.report["scenarios"][0]
    assert s["status"] == "error" and "raised ZeroDivisionError: oops" in s["reason"]


GARBAGE_TRANSPORT = """
    from rook_core.hookspecs import hookimpl
    from rook_core.transports import TransportSpec


    @hookimpl
    def rook_register_transports(register):
        register(TransportSpec(key="garbage", load_config=lambda v: v))


    @hookimpl
    def rook_transport_execute(call):
        if call.entry.transport != "garbage":
            return None
        if call.entry.config == "sync":
            return 42
        if call.entry.config == "unanswered":  # None for its own entry: no answer at all
            return None

        async def answer():
            return {"dict": {"output": "hello"}, "none": None, "text": "hello"}[call.entry.config]

        return answer()
"""


@pytest.mark.parametrize(
    "kind, shown",
    [
        ("dict", "returned dict, not a HookResult"),
        ("none", "returned NoneType, not a HookResult"),
        ("text", "returned str, not a HookResult"),
        ("sync", "returned int, not an awaitable of a HookResult"),
        ("unanswered", "returned None for its own 'execute' entry, not an awaitable of a HookResult"),
    ],
)
def test_a_transport_that_resolves_to_garbage_fails_the_hook_not_the_run(
    rook_distribution, rook_workspace, rook_cli, kind, shown
):
    """The awaitable of a phase hook must resolve to a HookResult; anything else is
    that hook's failure naming the transport, its plugin and its distribution (as an
    exception is; it named the transport's key alone), never a traceback
    that ends the run and loses what the other scenario runs recorded."""
    modules = {"rook_garbage.py": GARBAGE_TRANSPORT}
    rook_distribution("rook-garbage", {"garbage": "rook_garbage"}, modules)
    rook_workspace.script("ok.sh", "#!/bin/bash\nexit 0\n")
    rook_workspace.profile(
        {"id": "p", "hooks": {"execute": {"garbage": kind}, "open": "scripts/ok.sh"}}
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "hello"}]})
    r = rook_cli("run", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1, r.stderr
    s = r.report["scenarios"][0]
    assert s["status"] == "error", s
    # named with its plugin and distribution, as the plugin's other faults are
    assert f"transport 'garbage' (garbage (rook-garbage)) {shown}" in s["reason"], s["reason"]
    assert rook_workspace.record(r.report["run"]["id"], "s.1")["status"] == "error"


RAISING_EXECUTOR = """
    from rook_core.hookspecs import hookimpl


    async def first_then_raise(engine, scenario_runs, concurrency, options):
        await engine.run_scenario(scenario_runs[0])
        raise RuntimeError("lost the queue")


    @hookimpl
    def rook_register_executors(register):
        register("flaky", first_then_raise)
"""


def test_an_executor_that_raises_keeps_what_it_recorded_and_names_the_plugin(
    rook_distribution, rook_workspace, rook_cli
):
    """An executor plugin's bug is reported naming the executor and its plugin, the
    run exits 1 with its report written (what finished recorded, the rest pending),
    never a traceback; `rook run --run ID` finishes the rest."""
    modules = {"rook_flaky.py": RAISING_EXECUTOR}
    rook_distribution("rook-flaky", {"flaky": "rook_flaky"}, modules)
    rook_workspace.script(
        "echo.sh", '#!/bin/bash\n[ "$1" = execute ] || exit 0\necho \'{"output": "hi"}\'\n'
    )
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    for sid in ("a", "b"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--executor", "flaky", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1, r.stderr
    assert (
        "rook: error: executor 'flaky' (flaky (rook-flaky)) raised RuntimeError: lost the queue"
        in r.stderr
    )
    assert r.statuses() == {"a": "passed", "b": "pending"}
    run_id = r.report["run"]["id"]
    assert rook_workspace.record(run_id, "a.1")["status"] == "passed"
    # a run that asked for every phase is finished by --run ID alone: no --phases open,...
    said = r.stderr[r.stderr.index("resume with:") :]
    assert f"rook run --run {run_id}" in said and "--phases" not in said, r.stderr
    again = rook_cli("run", "--run", run_id, "--json")
    assert again.exit_code == 0, again.stderr
    assert again.statuses() == {"a": "passed", "b": "passed"}


PLAIN_EXECUTORS = """
    from rook_core.hookspecs import hookimpl


    def forgets_async(engine, scenario_runs, concurrency, options):
        return None  # a plain def where executor.md asks for an async def


    def hands_back_a_list(engine, scenario_runs, concurrency, options):
        return [engine.run_scenario(sr) for sr in scenario_runs]


    @hookimpl
    def rook_register_executors(register):
        register("forgets", forgets_async)
        register("hands", hands_back_a_list)
"""


@pytest.mark.parametrize("name, returned", [("forgets", "NoneType"), ("hands", "list")])
def test_an_executor_that_is_no_async_function_is_named_saying_so(
    rook_distribution, rook_workspace, rook_cli, name, returned
):
    """executor.md: an executor is an async function. A plain def was reported as
    'raised TypeError: object NoneType can't be used in 'await' expression' (it
    raised nothing), with Python's 'coroutine ... was never awaited' warnings; it is
    named saying what it returned, exit 1, the run kept for rook run --run ID."""
    modules = {"rook_plain_exec.py": PLAIN_EXECUTORS}
    rook_distribution("rook-plain-exec", {"plain_exec": "rook_plain_exec"}, modules)
    rook_workspace.script(
        "echo.sh", '#!/bin/bash\n[ "$1" = execute ] || exit 0\necho \'{"output": "hi"}\'\n'
    )
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    rook_workspace.scenario({"id": "a", "goal": "g", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--executor", name, "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 1 and r.statuses() == {"a": "pending"}, r.stderr
    assert (
        f"rook: error: executor {name!r} (plain_exec (rook-plain-exec)) returned {returned}, "
        "not an awaitable (an executor is an async function: async def "
        "executor(engine, scenario_runs, concurrency, options))" in r.stderr
    ), r.stderr
    assert "never awaited" not in r.stderr, r.stderr
    again = rook_cli("run", "--run", r.report["run"]["id"], "--json")
    assert again.statuses() == {"a": "passed"}, again.stderr


CHECK_RAISES = """
    from rook_core.hookspecs import hookimpl


    class Picky:
        def check(self, options):
            if options:  # as a criterion's check does: a message
                return "picky takes no --scheduler"
            return options["queue"]  # a KeyError: the plugin's bug

        async def __call__(self, engine, scenario_runs, concurrency, options):
            for sr in scenario_runs:
                await engine.run_scenario(sr)


    @hookimpl
    def rook_register_executors(register):
        register("picky", Picky())
"""


def test_an_executor_whose_check_raises_is_named_not_a_traceback(
    rook_distribution, rook_workspace, rook_cli
):
    """An executor's check(options) that raised anything but a ConfigError ended rook
    run with a Python traceback (exit 1); it now refuses the run naming the executor
    and its plugin, exit 2, nothing run."""
    rook_distribution("rook-picky", {"picky": "rook_picky"}, {"rook_picky.py": CHECK_RAISES})
    rook_workspace.script(
        "echo.sh", '#!/bin/bash\n[ "$1" = execute ] || exit 0\necho \'{"output": "hi"}\'\n'
    )
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    rook_workspace.scenario({"id": "a", "goal": "g", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--executor", "picky")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 2, r.stderr
    assert (
        "rook: error: --executor picky: the executor plugin picky (rook-picky) could not "
        "check its options: KeyError: 'queue'" in r.stderr
    )
    assert not any(rook_workspace.runs_dir.iterdir()), "nothing ran"
    # a check that returns a message refuses the run with it (it was ignored: the run ran)
    r = rook_cli("run", "--executor", "picky", "--scheduler", "tcp://x:1")
    assert r.exit_code == 2, r.stderr
    assert "rook: error: --executor picky: picky takes no --scheduler" in r.stderr, r.stderr
    assert not any(rook_workspace.runs_dir.iterdir()), "nothing ran"


IDLE_EXECUTOR = """
    from rook_core.hookspecs import hookimpl


    async def first_only(engine, scenario_runs, concurrency, options):
        await engine.run_scenario(scenario_runs[0])  # and forgets the others


    @hookimpl
    def rook_register_executors(register):
        register("idle", first_only)
"""


def test_an_executor_that_leaves_scenario_runs_unrun_does_not_pass(
    rook_distribution, rook_workspace, rook_cli
):
    """Every phase was asked for, yet the executor returned with scenario runs it never
    ran: that is the executor's failure (exit 1, naming it), never a green run."""
    rook_distribution("rook-idle", {"idle": "rook_idle"}, {"rook_idle.py": IDLE_EXECUTOR})
    rook_workspace.script(
        "echo.sh", '#!/bin/bash\n[ "$1" = execute ] || exit 0\necho \'{"output": "hi"}\'\n'
    )
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/echo.sh"}})
    for sid in ("a", "b", "c"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "hi"}]})
    r = rook_cli("run", "--executor", "idle", "--json")
    assert r.exception is None and "Traceback" not in r.stderr, r.stderr
    assert r.statuses() == {"a": "passed", "b": "pending", "c": "pending"}
    assert r.exit_code == 1, r.stderr
    assert (
        "rook: error: executor 'idle' (idle (rook-idle)) returned without running "
        "2 scenario runs" in r.stderr
    )
    # a run split by phases leaves runs pending on purpose: that stays exit 0
    r = rook_cli("run", "--phases", "prepare,open,execute,close", "--json")
    assert r.exit_code == 0 and set(r.statuses().values()) == {"pending"}, r.stderr


def test_rook_run_warns_once_of_a_misspelt_name_in_rook_disable_plugins(rook_workspace, rook_cli):
    """`ROOK_DISABLE_PLUGINS=reportrs rook run` disabled nothing without a word
    (only rook doctor named it): the operator believed the plugin was off. A name
    in ROOK_LOAD_PLUGINS that no plugin has is said the same way."""
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\necho \'{"output": "ok"}\'\n')
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", env={"ROOK_DISABLE_PLUGINS": "reportrs,judges"})
    assert r.exit_code == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if "ROOK_DISABLE_PLUGINS" in line]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("rook: warning: ") and "'reportrs'" in lines[0]
    named, _, installed = lines[0].partition("(plugins: ")
    installed = installed.partition("; distributions: ")[0]
    assert "judges" not in named  # installed, so disabled: nothing to warn of
    assert "reporters" in installed.split(", ")  # the installed names, to pick the right one
    r = rook_cli("run", env={"ROOK_DISABLE_PLUGINS": "judges"})
    assert r.exit_code == 0 and "ROOK_DISABLE_PLUGINS" not in r.stderr, r.stderr
    # the allow-list likewise: a name no plugin has loads nothing, and is said
    every = installed.split(", ")
    r = rook_cli("run", env={"ROOK_LOAD_PLUGINS": ",".join([*every, "reportrs"])})
    assert r.exit_code == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if "ROOK_LOAD_PLUGINS" in line]
    assert len(lines) == 1 and "'reportrs'" in lines[0] and "loads nothing" in lines[0], r.stderr
    r = rook_cli("run", env={"ROOK_LOAD_PLUGINS": ",".join(every)})
    assert r.exit_code == 0 and "ROOK_LOAD_PLUGINS" not in r.stderr, r.stderr


FROM_ROOK_2 = """
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType
from rook_core.models import PASSED, Verdict


class Fancy(CriterionType):
    name = "fancy"

    def evaluate(self, config, view):
        return Verdict(PASSED, "fancy enough")


@hookimpl
def rook_register_criteria(register):
    register(Fancy())


@hookimpl
def rook_register_widgets(register):  # a hook of the Rook it was made for
    register("w", object())
"""


@pytest.mark.parametrize(
    "requires, shown",
    [
        ("rook-harness>=99", "rook-harness>=99"),
        ("Rook_Harness (>=99.0)", "Rook_Harness (>=99.0)"),  # as older tools write it
        ("rook-harness[dask]<0.1; python_version >= '3'", "rook-harness[dask]<0.1"),
    ],
)
def test_a_plugin_made_for_another_rook_is_named_and_rook_runs_on(
    rook_distribution, rook_workspace, rook_cli, requires, shown
):
    """A plugin whose package requires another Rook (pip install --no-deps, or Rook
    downgraded under it) was loaded all the same: one implementing a hook of the
    newer Rook made every command exit 2 with 'implements rook_register_widgets, a
    hook Rook does not define (did you mean rook_register_judges?); fix the
    plugin', blaming the plugin for the version of Rook. It is not imported:
    reported as a plugin that failed to load, naming what it requires and this
    Rook's version, and the rest of Rook runs."""
    rook_distribution(
        "rook-newer",
        {"newer": "rook_newer"},
        {"rook_newer.py": FROM_ROOK_2},
        version="1.0",
        requires=["pyyaml", requires],
    )
    said = (
        f"plugin newer (rook-newer) failed to load: rook-newer 1.0 requires {shown}, and this "
        "Rook is rook-harness 0.1.0: install a Rook it supports (pip install "
        f"'{shown}') or a release of rook-newer made for rook-harness 0.1.0"
    )
    r = rook_cli("plugins", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert "fancy" not in doc["criteria"]
    assert doc["failed"] == [
        {"name": "newer", "distribution": "rook-newer", "error": said.split("failed to load: ")[1]}
    ]
    assert f"rook: warning: {said}" in r.stderr
    assert "rook_newer" not in __import__("sys").modules  # never imported
    rook_workspace.script("agent.sh", '#!/bin/sh\necho \'{"output": "fine"}\'\n')
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "fine"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"s": "passed"}
    assert f"rook: warning: {said}" in r.stderr
    rook_workspace.scenario({"id": "s", "goal": "hi", "criteria": [{"fancy": True}]})
    r = rook_cli("run")
    assert r.exit_code == 2, r.stderr
    assert "criteria.0.fancy: unknown criterion type; installed: " in r.stderr
    assert f"({said})" in r.stderr
    r = rook_cli("doctor")
    assert "PROBLEM  plugin newer: from rook-newer failed to load: rook-newer 1.0 requires" in r.stdout
    assert (
        f"fix: install a Rook it supports (pip install '{shown}') or a release of rook-newer "
        "made for rook-harness 0.1.0, or skip it with ROOK_DISABLE_PLUGINS=newer"
    ) in r.stdout


@pytest.mark.parametrize(
    "requires",
    [
        "rook-harness>=0.1",
        "rook-harness",
        "rook-harness>=99; extra == 'future'",  # only with an extra
        "rook-harness>=99; python_version < '3'",  # not on this Python
        "rook-harnessed>=99",  # another distribution
    ],
)
def test_a_plugin_whose_requirement_on_rook_holds_here_loads(
    rook_distribution, rook_cli, requires
):
    rook_distribution(
        "rook-fits",
        {"fits": "rook_fits"},
        {"rook_fits.py": FROM_ROOK_2.split("\n\n@hookimpl\ndef rook_register_widgets")[0]},
        requires=[requires],
    )
    r = rook_cli("plugins", "--json")
    assert r.exit_code == 0, r.stderr
    assert "fancy" in json.loads(r.stdout)["criteria"]
    assert "warning" not in r.stderr


def test_an_entry_point_naming_none_or_an_object_unequal_to_itself_is_named(
    rook_distribution, rook_cli
):
    """An entry point naming an attribute left None (``PLUGIN = None`` when an
    optional import failed) ended every command with a traceback from pluggy
    ('AssertionError: one of name or plugin needs to be specified'), and one naming
    an object unequal to itself (a NaN) with 'plugin is not registered'. Each is a
    plugin that failed to load, named, and the rest of Rook runs."""
    rook_distribution(
        "rook-hollow",
        {"hollow": "rook_hollow:PLUGIN", "nan": "rook_hollow:NAN"},
        {"rook_hollow.py": "PLUGIN = None\nNAN = float('nan')\n"},
    )
    r = rook_cli("plugins", "--json")
    assert r.exit_code == 0 and r.exception is None, (r.exception, r.stderr)
    failed = {f["name"]: f["error"] for f in json.loads(r.stdout)["failed"]}
    assert failed == {
        "hollow": "it implements no Rook hook: its entry point names rook_hollow:PLUGIN "
        "(NoneType), which has no function marked with @hookimpl",
        "nan": "it implements no Rook hook: its entry point names rook_hollow:NAN "
        "(float), which has no function marked with @hookimpl",
    }
    assert "rook: warning: plugin hollow (rook-hollow) failed to load: " in r.stderr
    r = rook_cli("plugins")
    assert r.exit_code == 0 and "script" in r.stdout, r.stderr


TWICE_EXECUTOR = """
import asyncio
import os

from rook_core.hookspecs import hookimpl


async def twice(engine, scenario_runs, concurrency, options):
    if os.environ.get("TWICE") == "at-once":
        await asyncio.gather(*(engine.run_scenario(sr) for sr in scenario_runs for _ in "ab"))
        return
    for sr in scenario_runs:
        first = await engine.run_scenario(sr)
        again = await engine.run_scenario(sr)
        assert again["status"] == first["status"], (first, again)


@hookimpl
def rook_register_executors(register):
    register("twice", twice)
"""


@pytest.mark.parametrize("how", ["one-after-another", "at-once"])
def test_an_executor_running_a_scenario_run_twice_runs_its_hooks_once(
    rook_distribution, rook_workspace, rook_cli, monkeypatch, how
):
    """executor.md: engine.run_scenario(sr) runs what is missing of a scenario run,
    so running a finished one again is a no-op. An executor that called it twice ran
    the agent's hooks twice in a new run; twice at once, both attempts shared the
    state directory, and the one recorded last replaced the other (an error lost
    under a pass). The second call now waits for the first and runs nothing."""
    rook_distribution("rook-twice", {"twice": "rook_twice"}, {"rook_twice.py": TWICE_EXECUTOR})
    monkeypatch.setenv("TWICE", how)
    rook_workspace.script(
        "count.sh",
        '#!/bin/bash\n[ "$1" = execute ] || exit 0\n'
        'echo x >> "$ROOK_STATE_DIR/executed"\n'
        'n=$(wc -l < "$ROOK_STATE_DIR/executed")\n'
        '[ "$n" = 1 ] || { echo "executed $n times" >&2; exit 1; }\n'
        'sleep 0.2\necho \'{"output": "once"}\'\n',
    )
    rook_workspace.profile({"id": "p", "hooks": {"execute": "scripts/count.sh"}})
    for sid in ("a", "b"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "once"}]})
    r = rook_cli("run", "--executor", "twice", "--json")
    assert r.exception is None, r.exception
    assert r.statuses() == {"a": "passed", "b": "passed"}, r.stderr
    assert r.exit_code == 0, r.stderr
    assert "executed 2 times" not in r.stderr
    run_id = r.report["run"]["id"]
    for key in ("a.1", "b.1"):
        assert len(rook_workspace.record(run_id, key)["hooks"]) == 1
