"""Bad input: a message naming the file, field or variable, exit 2, nothing run."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

ECHO = """
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    touch "$MARK"
    echo '{"output": "ok"}'
"""


@pytest.fixture
def ws(rook_workspace, tmp_path, monkeypatch):
    mark = tmp_path / "ran"
    monkeypatch.setenv("MARK", str(mark))
    rook_workspace.mark = mark
    rook_workspace.script("h.sh", ECHO)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    return rook_workspace


def refused(r, ws, *needles):
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert r.exception is None, r.exception
    assert "Traceback" not in r.stderr + r.stdout
    for n in needles:
        assert n in r.stderr, (n, r.stderr)
    assert not ws.mark.exists(), "a hook ran despite a configuration error"


@pytest.mark.parametrize(
    "profile, needles",
    [
        (
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "colour": "red"},
            ["p.yaml", "colour", "unknown field"],
        ),
        (
            {
                "id": "p",
                "hooks": {"execute": {"script": "scripts/h.sh", "timeout_seconds": "soon"}},
            },
            ["hooks.execute.timeout_seconds", "number"],
        ),
        (
            {"id": "p", "hooks": {"execute": {"grpc": "x:1"}}},
            ["hooks.execute.grpc", "installed transports:", "script"],
        ),
        ({"id": "p", "hooks": {"open": "scripts/h.sh"}}, ["hooks.execute", "required"]),
        (  # they said marshmallow's "Missing data for required field."
            {"hooks": {"execute": "scripts/h.sh"}},
            ["id: missing: a profile needs an id (lower-case letters, digits, - and _); "
             "runs pin it\n"],
        ),
        ({"id": "p"}, ["hooks: missing: a profile needs hooks, at least execute\n"]),
        (  # it said "hooks.teardown.key: Must be one of: ..."
            {"id": "p", "hooks": {"execute": "scripts/h.sh", "teardown": "x"}},
            ["hooks.teardown: unknown phase; the phases are prepare, open, execute, close, "
             "collect\n"],
        ),
        (
            {"id": "p", "hooks": {"exec": "scripts/h.sh"}},
            ["hooks.exec: unknown phase; did you mean execute?\n"],
        ),
        (  # it said only "the phases are ...", as if judge were a typo
            {"id": "p", "hooks": {"execute": "scripts/h.sh", "judge": "scripts/j.sh"}},
            ["hooks.judge: unknown phase; judge is Rook's own phase, which no hook runs",
             "judge_profile in config.yaml, or --judge-profile"],
        ),
        ({"id": "Not A Slug", "hooks": {"execute": "scripts/h.sh"}}, ["id", "slug"]),
        ({"id": "p", "hooks": {"execute": "scripts/h.sh"}, "concurrency": 0}, ["concurrency"]),
        (
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "capabilities": {"calls": "yes"}},
            ["capabilities.calls"],
        ),
        (
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "env": [{"variable": "TOKEN"}]},
            ["env.0.purpose"],
        ),
        (
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "env": [{"variable": "T", "purpose": "x", "value": "s3cret"}],
            },
            ["env.0.value", "unknown field"],
        ),
        (  # no environment variable can hold a NUL: refused before a hook, not by each
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "hook_env": {"REGION": "eu\0w"}},
            ["hook_env.REGION", "NUL"],
        ),
        (  # "Invalid input type." said nothing of what to write instead
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "env": ["TOKEN"]},
            ["env.0: must be a mapping: {variable: NAME, purpose: TEXT}"],
        ),
        (  # "Not a valid mapping type." / "Not a valid list." said nothing of what to write
            {"id": "p", "hooks": "scripts/h.sh", "hook_env": ["REGION"], "inherit_env": "PATH"},
            ["hooks: must be a mapping of phase to hook entry: {execute: scripts/agent.sh}\n",
             "hook_env: must be a mapping of NAME: text value, e.g. {REGION: eu-west-1}\n",
             'inherit_env: must be a list of variable names or patterns, e.g. [PATH, "AWS_*"]\n'],
        ),
        (  # "Not a valid number." did not say the unit goes: the field is in seconds
            {
                "id": "p",
                "hooks": {
                    "execute": {"script": "scripts/h.sh", "timeout_seconds": "30s"},
                    "collect": {"script": "scripts/h.sh", "delay_seconds": "2 min"},
                },
            },
            [
                "hooks.execute.timeout_seconds: not a valid number: it counts seconds; write 30",
                "hooks.collect.delay_seconds: not a valid number: it counts seconds; write 120",
            ],
        ),
        (  # "must be an environment variable name" did not say what to write instead
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "env": [
                    {"variable": "$TOKEN", "purpose": "x"},
                    {"variable": "{{env.KEY}}", "purpose": "y"},
                ],
            },
            [
                "env.0.variable: must be an environment variable name; write it as TOKEN",
                "env.1.variable: must be an environment variable name; write it as KEY",
            ],
        ),
        (  # "Not a valid list." said nothing of what a list of, nor where a value goes
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "env": {"TOKEN": "s3cret"}},
            ["env: must be a list of {variable: NAME, purpose: TEXT}", "hook_env"],
        ),
        (
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "capabilities": ["calls"]},
            ["capabilities: must be a mapping: {multi_turn: BOOL, calls: BOOL, usage: BOOL}"],
        ),
        (
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "limits": 4096},
            ["limits: must be a mapping: {stdout_bytes: BYTES, stderr_bytes: BYTES}"],
        ),
        (  # longer than one environment variable can be: every hook would fail to start
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "hook_env": {"BIG": "x" * 200_000}},
            ["hook_env.BIG", "200005 bytes", "more than one environment variable can carry"],
        ),
        (  # hook_env expands no placeholder: the hook got the text "{{env.REAL_TOKEN}}"
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "hook_env": {"API_TOKEN": "Bearer {{env.REAL_TOKEN}}"},
            },
            ["hook_env.API_TOKEN", "{{env.REAL_TOKEN}}", "expands no placeholder", "env:"],
        ),
        (  # YAML makes 8080 a number: the message says to quote it, not just "Not a valid string"
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "hook_env": {"PORT": 8080}},
            ["hook_env.PORT", "quote it", '"8080"'],
        ),
        (  # one variable, two purposes: which one is it?
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "env": [
                    {"variable": "TOKEN", "purpose": "the API token"},
                    {"variable": "TOKEN", "purpose": "the admin token"},
                ],
            },
            ["env.1.variable", "TOKEN is declared twice (also env.0)"],
        ),
        (  # a value written in the file for a secret Rook checks is set, then never used
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "env": [{"variable": "TOKEN", "purpose": "the API token"}],
                "hook_env": {"TOKEN": "literal-in-the-file"},
            },
            ["hook_env.TOKEN", "declared in env", "from the environment"],
        ),
        (  # listed with the file's other problems, never only once they are fixed
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "concurrency": 0,
                "env": [{"variable": "TOKEN", "purpose": "the API token"}],
                "hook_env": {"TOKEN": "literal-in-the-file"},
            },
            ["concurrency", "hook_env.TOKEN", "declared in env"],
        ),
        (  # YAML 1.1 reads 1e3 as text: "Not a valid integer." said nothing of why
            "id: p\nhooks: {execute: scripts/h.sh}\nconcurrency: 1e3\n",
            ["concurrency: not a valid integer: YAML reads 1e3 as text; write 1000"],
        ),
        # past the largest float: 1e400 (text to YAML) said "not a valid number", 1.0e+400
        # (YAML's infinity) "special numeric values (nan or infinity) are not permitted"
        *(
            (
                "id: p\nhooks:\n  execute:\n    script: scripts/h.sh\n"
                f"    timeout_seconds: {big}\n    delay_seconds: {big}\n"
                f"  open: {{http: {{url: 'http://127.0.0.1:9/', timeout_seconds: {big}}}}}\n"
                f"concurrency: {big}\n",
                [
                    f"{field}: too large: not a finite number (infinity, or past 1.8e+308); "
                    f"write {accepted}\n"
                    for field, accepted in [
                        ("hooks.execute.timeout_seconds", "a finite number greater than 0"),
                        ("hooks.execute.delay_seconds", "a finite number from 0 to 86,400"),
                        ("hooks.open.http.timeout_seconds", "a finite number greater than 0"),
                        ("concurrency", "a whole number at least 1"),
                    ]
                ],
            )
            for big in ("1e400", "1.0e+400", ".inf")
        ),
        (  # each fits in one variable, together they overflow a hook's environment
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "hook_env": {
                    "BIG": "y" * 125_000,
                    **{f"V{i}": "x" * 120_000 for i in range(os.sysconf("SC_ARG_MAX") // 120_000)},
                },
            },
            ["hook_env: together", "more than a hook's whole environment", "largest: BIG (125005 bytes)"],
        ),
    ],
)
def test_invalid_profile_is_refused_with_the_field_path(ws, rook_cli, profile, needles):
    ws.profile(profile)
    refused(rook_cli("run"), ws, *needles)


@pytest.mark.parametrize(
    "entry, field, expected",
    [
        (  # marshmallow's "Missing data for required field." said nothing of what goes there
            {"env": [{"purpose": "the API token"}]},
            "env.0.variable",
            "missing: the name of an environment variable (its value stays in the environment)",
        ),
        (
            {"env": [{"variable": "TOKEN"}]},
            "env.0.purpose",
            "missing: what the variable is for (shown when it is not set)",
        ),
        (  # and a second line, "must start with http:// or https://", of a URL never given
            {"hooks": {"execute": {"http": {"method": "POST"}}}},
            "hooks.execute.http.url",
            "missing: the URL to send the request to (http:// or https://)",
        ),
        (
            {"hooks": {"execute": {"ruhroh": {"max_iterations": 2}}}},
            "hooks.execute.ruhroh.command",
            "missing: the wrapper's command line (or a list of arguments)",
        ),
    ],
)
def test_a_required_field_left_out_says_what_goes_there(ws, rook_cli, entry, field, expected):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}, **entry})
    r = rook_cli("run")
    refused(r, ws, f"  {field}: {expected}\n")
    assert r.stderr.count(f"{field}:") == 1, r.stderr


def test_a_profile_key_holding_only_comments_means_none(ws, rook_cli):
    """`env:` above a commented-out entry is YAML's null: it was refused ('env: Field
    may not be null.'), though the user declared nothing, as if the key were left out."""
    (ws.agent_dir / "profiles" / "p.yaml").write_text(
        "id: p\nhooks:\n  execute: scripts/h.sh\n"
        "env:\n  # - variable: API_KEY\n  #   purpose: the agent's key\n"
        "hook_env:\n  # MODE: test\n"
        "capabilities:\nlimits:\n"
    )
    (ws.agent_dir / "profiles" / "active").write_text("p\n")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"s": "passed"}


def test_a_scenario_key_holding_only_comments_means_none(ws, rook_cli):
    """`tags:` above a commented-out tag (or an `expectation` list with nothing under
    it) was refused ('tags: Field may not be null.'), which a profile's `env:` is not."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    (ws.agent_dir / "scenarios" / "s.yaml").write_text(
        "id: s\ngoal: g\ntags:\n  # - smoke\ncriteria:\n  - contains: ok\n"
    )
    (ws.agent_dir / "scenarios" / "public.yaml").write_text(
        "title: Public\ngoal: g\nsetup_messages:\nexpectation:\n  acceptance_criteria:\n"
        "  forbidden:\n    # - 'Refuses to help'\n  mcp:\n"
    )
    (ws.agent_dir / "scenarios" / "bare.yaml").write_text(
        "id: bare\ngoal: g\ncriteria:\n  # - contains: ok\n"
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.statuses() == {"s": "passed", "public": "unverifiable", "bare": "unverifiable"}
    assert [e["tags"] for e in r.report["scenarios"]] == [[], [], []]


def test_a_key_written_with_no_value_says_so_not_field_may_not_be_null(ws, rook_cli):
    """`goal:` left unfilled said marshmallow's 'goal: Field may not be null.',
    which says nothing of what happened nor what to write."""
    ws.profile("id: p\nhooks:\n  execute: scripts/h.sh\nconcurrency:\n")
    (ws.agent_dir / "scenarios" / "s.yaml").write_text("id: s\ngoal:\nrepeat:\n")
    r = rook_cli("run")
    empty = "empty: nothing is written there (YAML's null); write a value\n"
    refused(r, ws, "  concurrency: " + empty)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    refused(rook_cli("run"), ws, "  goal: " + empty, "  repeat: " + empty)


@pytest.mark.parametrize("item", ["A=B", "TOKEN=sk-live-0123456789", "=", "HO\0ME"])
def test_an_inherit_env_item_no_variable_could_be_named_by_is_refused(ws, rook_cli, item):
    """`inherit_env: ["A=B"]` (a value meant for hook_env) was accepted and
    matched nothing: the hooks silently lost the variable meant for them."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}, "inherit_env": ["PATH", item]})
    r = rook_cli("run")
    refused(r, ws, "p.yaml", "inherit_env.1: ", "hook_env")
    assert "sk-live" not in r.stderr  # what follows '=' may be a value meant to stay off screen
    refused(rook_cli("profile", "test", "p", "--workspace", str(ws.root)), ws, "inherit_env.1: ")


def test_an_env_variable_written_with_its_value_says_where_the_value_goes(ws, rook_cli):
    """`variable: TOKEN=s3cret...` got only "must be an environment variable name";
    the value now in the file is never shown, and the message says what to write."""
    env = [{"variable": "TOKEN=sk-live-0123456789", "purpose": "the token"},
           {"variable": "my-var", "purpose": "x"}]
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}, "env": env})
    r = rook_cli("run")
    refused(r, ws, "env.0.variable: holds a value ('TOKEN=...'): env names the variable only; "
            "write variable: TOKEN, and keep its value in the environment (export TOKEN=...)",
            "env.1.variable: must be an environment variable name (letters, digits and _, "
            "not starting with a digit)")
    assert "sk-live" not in r.stderr + r.stdout


@pytest.mark.parametrize("key", ["value", "secret", "default"])
def test_an_env_item_with_a_field_for_its_value_says_where_the_value_goes(ws, rook_cli, key):
    """The reference: env's structure has no secret-value field. `value: s3cret` under
    an env item got only "unknown field; expected one of: variable, purpose", which
    did not say where the value goes; it says so now, never showing the value."""
    env = [{"variable": "TOKEN", "purpose": "the token", key: "sk-live-0123456789"}]
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}, "env": env})
    r = rook_cli("run")
    refused(r, ws, f"env.0.{key}: unknown field; expected one of: variable, purpose (a "
            "profile holds no value of a variable: keep it in the environment, export "
            "TOKEN=...)")
    assert "sk-live" not in r.stderr + r.stdout


def test_an_inherit_env_left_empty_is_refused_not_taken_as_all(ws, rook_cli):
    """`inherit_env:` with its names commented out is YAML's null, which let
    every variable of Rook's environment reach the hooks (the default), the
    opposite of an allow-list: it is no key that empty means left out."""
    ws.profile("id: p\nhooks:\n  execute: scripts/h.sh\ninherit_env:\n  # - PATH\n")
    empty = "empty: nothing is written there (YAML's null); write a value\n"
    refused(rook_cli("run"), ws, "p.yaml", "  inherit_env: " + empty)
    refused(rook_cli("profile", "test", "p", "--workspace", str(ws.root)), ws, "  inherit_env: " + empty)


def test_a_profile_renamed_on_disk_and_broken_is_named_not_said_to_be_gone(ws, rook_cli):
    """A file renamed on disk keeps its id (profiles/active holds it); when that file
    was then not valid YAML, the lookup skipped it and said the active profile is 'no
    profile here', to choose another with rook profile use: nothing named the file."""
    ws.profile("id: staging\nhooks:\n\texecute: scripts/h.sh\n", name="old-name")
    ws.profile({"id": "other", "hooks": {"execute": "scripts/h.sh"}}, name="other")
    (ws.agent_dir / "profiles" / "active").write_text("staging\n")
    said = "old-name.yaml (line 3, column 1): not valid YAML"
    refused(rook_cli("run"), ws, said)
    refused(rook_cli("profile", "show", "staging", "--workspace", str(ws.root)), ws, said)


def test_invalid_yaml_names_file_and_line(ws, rook_cli):
    ws.profile("id: p\nhooks: [unclosed\n", name="p")
    refused(rook_cli("run"), ws, "p.yaml", "line", "not valid YAML")


def test_a_tab_indenting_yaml_is_named_as_a_tab(ws, rook_cli):
    """PyYAML's "found character that cannot start any token" did not say the
    character is a tab an editor put in, nor that YAML indents with spaces."""
    ws.profile("id: p\nhooks:\n\texecute: scripts/h.sh\n", name="p")
    refused(rook_cli("run"), ws, "p.yaml", "(line 3, column 1)", "a tab: YAML indents with spaces")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario("id: s\ngoal: g\ncriteria:\n\t- contains: g\n", name="s")
    refused(rook_cli("run"), ws, "s.yaml", "(line 4, column 1)", "a tab: YAML indents with spaces")


def test_two_documents_in_one_scenario_file_are_told_to_be_a_list(ws, rook_cli):
    """PyYAML's "but found another document" alone did not say what to write."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario("id: a\ngoal: a\n---\nid: b\ngoal: b\n", name="two")
    refused(rook_cli("run"), ws, "two.yaml", "line 3", "write several scenarios as one list")


def test_missing_env_variables_are_listed_with_their_purpose(ws, rook_cli, monkeypatch):
    monkeypatch.delenv("REFUND_API_TOKEN", raising=False)
    monkeypatch.delenv("BASE_URL", raising=False)
    ws.profile(
        {
            "id": "p",
            "hooks": {"prepare": "scripts/h.sh", "execute": "scripts/h.sh"},
            "env": [
                {
                    "variable": "REFUND_API_TOKEN",
                    "purpose": "bearer token for the staging refund API",
                },
                {"variable": "BASE_URL", "purpose": "target environment base URL"},
            ],
        }
    )
    r = rook_cli("run")
    refused(
        r,
        ws,
        "REFUND_API_TOKEN: bearer token for the staging refund API",
        "BASE_URL: target environment base URL",
        "export REFUND_API_TOKEN=... BASE_URL=...",  # how to fix it
    )
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


@pytest.mark.parametrize(("args", "scenario_problem"), [
    (["--only", "z"], "--only: no scenario with id z"),
    (["--tag", "nope"], "no scenario selected in"),
    ([], "invalid scenario t:\n  goal: give exactly one of goal or turns"),
])
def test_a_missing_variable_is_told_with_the_scenario_problems_at_once(
        ws, rook_cli, monkeypatch, args, scenario_problem):
    # only the variable was reported: a user who set it then met the mistyped --only
    # (which needs no secret) on the next try
    monkeypatch.delenv("REFUND_API_TOKEN", raising=False)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"},
                "env": [{"variable": "REFUND_API_TOKEN", "purpose": "the refund API"}]})
    if not args:
        ws.scenario({"id": "t"}, name="t")
    r = rook_cli("run", *args)
    refused(r, ws, scenario_problem, "REFUND_API_TOKEN: the refund API")
    assert r.stderr.index(scenario_problem) < r.stderr.index("REFUND_API_TOKEN")
    assert r.stderr.count("rook: error: ") == 2, r.stderr
    monkeypatch.setenv("REFUND_API_TOKEN", "tok-123456")  # the other is still told
    refused(rook_cli("run", *args), ws, scenario_problem)


def test_an_empty_env_variable_is_named_as_empty_not_as_unset(ws, rook_cli, monkeypatch):
    # a CI job whose secret is missing exports the variable empty: "not set"
    # sent its author looking for an export that is there
    monkeypatch.setenv("REFUND_API_TOKEN", "")
    monkeypatch.delenv("BASE_URL", raising=False)
    ws.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/h.sh"},
            "env": [
                {"variable": "REFUND_API_TOKEN", "purpose": "the refund API token"},
                {"variable": "BASE_URL", "purpose": "target environment base URL"},
            ],
        }
    )
    refused(
        rook_cli("run"),
        ws,
        "REFUND_API_TOKEN: the refund API token (set, but empty)\n",
        "BASE_URL: target environment base URL\n",
    )


def test_an_agent_with_no_profile_says_how_to_write_one(rook_workspace, rook_cli):
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run")
    assert r.exit_code == 2 and "no profiles (*.yaml); write one with rook profile add" in r.stderr
    # the page it names: a user who installed rook-harness from PyPI has no docs/
    # folder, so it says where the page is ("(docs/profiles.md)" alone did not)
    profiles = rook_workspace.agent_dir / "profiles"
    profiles.mkdir(exist_ok=True)
    (profiles / "local.yml").write_text("id: local\nhooks: {execute: scripts/h.sh}\n")
    r = rook_cli("run")
    assert r.exit_code == 2 and (
        "local.yml is not read: a profile file ends in .yaml; rename it; write one with rook "
        "profile add (docs/profiles.md in Rook's source), or by hand as profiles/NAME.yaml"
    ) in r.stderr, r.stderr


def test_an_agent_with_no_scenario_says_how_to_write_one(ws, rook_cli):
    # "no scenario selected in DIR", with no selector given, left the user to guess
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    (ws.agent_dir / "scenarios" / "s.yaml").unlink()
    refused(
        rook_cli("run"),
        ws,
        f"no scenarios in {(ws.agent_dir / 'scenarios').resolve()}: write one there "
        "(a .yaml file with id, goal and criteria; see docs/scenarios.md in Rook's source)",
    )
    # nor the folder: "DIR: no scenarios directory", and nothing more
    (ws.agent_dir / "scenarios").rmdir()
    refused(
        rook_cli("run"),
        ws,
        f"{(ws.agent_dir / 'scenarios').resolve()}: no scenarios directory: create it and "
        "write a scenario there (a .yaml file with id, goal and criteria; see docs/scenarios.md in Rook's source)",
    )
    # a file where the folder belongs: "create it" cannot be done; it is said what is there
    (ws.agent_dir / "scenarios").write_text("id: s\n")
    r = rook_cli("run")
    refused(
        r,
        ws,
        f"{(ws.agent_dir / 'scenarios').resolve()} is a file, not the scenarios folder; move it "
        "away, then create the folder and write a scenario there",
    )
    assert "no scenarios directory: create it" not in r.stderr, r.stderr
    doctor = rook_cli("doctor", "--json")
    found = [f for f in json.loads(doctor.stdout)["findings"] if f["subject"].endswith("scenarios")]
    assert found and "is a file, not the scenarios folder" in found[0]["message"], found


@pytest.mark.parametrize(
    ("where", "folder"),
    [
        (".testmuai", ".testmuai"),
        (".testmuai/rook", "Rook"),
        (".testmuai/rook/projects", "projects"),
        (".testmuai/rook/projects/proj/agents", "agents"),
        (".testmuai/rook/projects/proj/agents/agent/profiles", "profiles"),
    ],
)
def test_a_file_where_a_workspace_folder_belongs_is_named_not_taken_for_none(
    ws, rook_cli, where, folder
):
    # "no Rook workspace here: run rook init", "no project in ...", "no profiles
    # directory (create a profile first)": advice that cannot be followed with the
    # file there (rook init itself then refuses it); say what is in the way instead
    path = ws.root / where
    shutil.rmtree(path)
    path.write_text("a file\n")
    r = rook_cli("run", "-w", str(ws.root))
    refused(r, ws, f"{path.resolve()} is a file, not the {folder} folder; move it away")
    for advice in ("rook init", "no project in", "no agent in", "create a profile first"):
        assert advice not in r.stderr, r.stderr
    doctor = rook_cli("doctor", "-w", str(ws.root), "--json")  # says the same
    said = [f["message"] for f in json.loads(doctor.stdout)["findings"] if f["status"] != "ok"]
    assert f"{path.resolve()} is a file, not the {folder} folder" in said, said
    assert not any("no agent in" in m or "no profile in" in m for m in said), said


def test_a_scenario_without_an_id_is_told_what_one_is(ws, rook_cli):
    # it said marshmallow's "id: Missing data for required field."
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    (ws.agent_dir / "scenarios" / "s.yaml").write_text("goal: hi\n")
    refused(
        rook_cli("run"),
        ws,
        "s.yaml: invalid scenario:\n  id: missing: a scenario needs an id (lower-case "
        "letters, digits, - and _), unique within the agent\n",
    )


def test_missing_script_names_both_paths_tried(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/nope.sh"}})
    r = rook_cli("run")
    refused(
        r,
        ws,
        str(ws.root.resolve() / "scripts/nope.sh"),
        str(ws.agent_dir.resolve() / "scripts/nope.sh"),
    )


def test_a_command_line_as_a_script_path_is_told_what_a_script_entry_is(ws, rook_cli):
    # "not found; tried .../bash scripts/h.sh" left the user to guess why
    ws.profile({"id": "p", "hooks": {"execute": "bash scripts/h.sh --fast"}})
    refused(
        rook_cli("run"),
        ws,
        "hook script 'bash scripts/h.sh --fast' not found",
        "it looks like a command line: a script entry names one file, which Rook runs as "
        "PATH <phase>",
    )


def test_script_path_resolves_from_the_workspace_first(ws, rook_cli, tmp_path):
    (ws.root / "scripts").mkdir()
    top = ws.root / "scripts" / "h.sh"
    top.write_text(
        '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "ok from workspace"}\'\nexit 0\n'
    )
    top.chmod(0o755)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    r = rook_cli("run", "--json")
    assert r.report["scenarios"][0]["turns"][0]["output"] == "ok from workspace"


@pytest.mark.parametrize(
    "name, body",
    [
        (
            "a.py",
            "import sys, json\nif sys.argv[1] == 'execute':\n    sys.stdin.read(); print(json.dumps({'output': 'ok py'}))\n",
        ),
        ("a.sh", '[ "$1" = execute ] && echo \'{"output": "ok sh"}\'\nexit 0\n'),
        (
            "a.mjs",
            "if (process.argv[2] === 'execute') console.log(JSON.stringify({output: 'ok mjs'}));\n",
        ),
        (
            "a.cjs",
            "if (process.argv[2] === 'execute') console.log(JSON.stringify({output: 'ok cjs'}));\n",
        ),
        (
            "a.js",
            "if (process.argv[2] === 'execute') console.log(JSON.stringify({output: 'ok js'}));\n",
        ),
    ],
)
def test_non_executable_scripts_run_by_extension(ws, rook_cli, name, body):
    ws.script(name, body, executable=False)
    ws.profile({"id": "p", "hooks": {"execute": f"scripts/{name}"}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == f"ok {name[2:]}"


def test_a_py_script_runs_with_the_running_python_not_one_on_path(ws, rook_cli, tmp_path):
    """SPEC §3: ``.py`` runs "with the running Python", not a python3 the hooks' PATH finds."""
    other = tmp_path / "bin"
    other.mkdir()
    for name in ("python3", "python"):
        (other / name).write_text("#!/bin/sh\necho '{\"output\": \"another python\"}'\n")
        (other / name).chmod(0o755)
    ws.script(
        "a.py",
        "import json, sys\nif sys.argv[1] == 'execute':\n    print(json.dumps({'output': 'ok ' + sys.executable}))\n",
        executable=False,
    )
    path = f"{other}:{os.environ['PATH']}"
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.py"}, "hook_env": {"PATH": path}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"] == f"ok {sys.executable}"


def test_an_executable_script_starts_by_its_own_line_not_its_extension(ws, rook_cli):
    """SPEC §3: an executable script is started directly (its #! line), whatever its
    extension; the extension picks an interpreter only for one that is not."""
    ws.script("a.py", """
        #!/bin/bash
        [ "$1" = execute ] && echo "{\\"output\\": \\"ok bash ${BASH_VERSINFO[0]}\\"}"
        exit 0
    """)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.py"}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["scenarios"][0]["turns"][0]["output"].startswith("ok bash ")


@pytest.mark.parametrize(
    "body, fix",
    [
        ("#!/usr/bin/env ruby\nputs 1\n", "; chmod +x it"),
        # "chmod +x it" alone led to the next refusal ("has no #! line ... such as
        # #!/bin/sh"): the fix names both steps at once
        ("puts 1\n", "; give it a #! line naming its interpreter (#!/usr/bin/env ruby) and chmod +x it"),
    ],
)
def test_unknown_extension_and_not_executable_is_a_config_error(ws, rook_cli, body, fix):
    ws.script("a.rb", body, executable=False)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.rb"}})
    refused(rook_cli("run"), ws, "a.rb", "not executable", fix)


@pytest.mark.parametrize("body, needle", [("echo '{}'\n", "has no #! line"), ("", "is empty")])
def test_an_executable_text_script_the_system_cannot_start_is_refused(ws, rook_cli, body, needle):
    """No #! line: execve refuses it (Exec format error), so Rook says so first."""
    ws.script("plain", body)  # executable, no extension
    ws.profile({"id": "p", "hooks": {"execute": "scripts/plain"}})
    refused(  # as rook doctor says it (run said #!/bin/sh, doctor #!/usr/bin/env bash)
        rook_cli("run"), ws, "scripts/plain", needle,
        "add a #! line naming its interpreter as its first line, such as #!/usr/bin/env bash",
    )


def foreign_program() -> tuple[bytes, str]:
    """The start of an ELF program for another machine than this one, and its name."""
    import platform
    import struct

    machine, name = (183, "aarch64") if platform.machine() == "x86_64" else (62, "x86_64")
    head = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) + struct.pack("<HHI", 2, machine, 1)
    return head + bytes(64 - len(head)) + b"\x90" * 200, name


@pytest.mark.parametrize("kind", ["elf", "windows", "data"])
def test_an_executable_program_the_system_cannot_start_is_refused(ws, rook_cli, kind):
    """An ELF program for another machine (or a Windows .exe, or data) marked
    executable ran on every scenario and failed each with 'could not start the hook:
    Exec format error'; like a text file without #!, it is refused before anything
    runs, saying what it is. (A binfmt_misc handler, qemu-user's say, that takes it
    lets it run: then it is not refused.) Where Rook cannot see the handlers (no
    binfmt_misc mounted, as in most containers, whose host's handlers still start
    such programs) it is not refused: the scenario that runs it fails, saying why."""
    from rook_core.execformat import cannot_start, handlers_visible

    elf, name = foreign_program()
    body, needle = {
        "elf": (elf, f"it is a program for {name}, and this machine is "),
        "windows": (b"MZ\x90\x00\x03" + bytes(58) + b"PE\0\0", "a Windows program"),
        "data": (b"\x00\x01\x02\x03" * 64, "no program this system can start"),
    }[kind]
    path = ws.script("prog", "x")
    path.write_bytes(body)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/prog"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "x"}]})
    if handlers_visible():
        if cannot_start(path, body) is None:
            pytest.skip("a binfmt_misc handler on this machine starts it")
        refused(rook_cli("run"), ws, "scripts/prog cannot start", needle)
        return
    assert cannot_start(path, body) is None  # cannot tell: the host may start it
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stderr
    (scenario,) = r.report["scenarios"]
    assert scenario["status"] == "error", scenario
    diagnosis = scenario["hooks"][0]["diagnosis"]
    assert "Exec format error" in diagnosis and needle in diagnosis, diagnosis


def test_a_hook_path_that_is_a_directory_is_named_so(ws, rook_cli):
    (ws.agent_dir / "scripts" / "tools").mkdir()
    ws.profile({"id": "p", "hooks": {"execute": "scripts/tools"}})
    refused(rook_cli("run"), ws, "'scripts/tools' is a directory")


def test_a_hook_path_that_is_a_pipe_or_a_device_is_named_so(ws, rook_cli):
    # a FIFO (or /dev/null) was "hook script ... not found; tried ...": it is there
    os.mkfifo(ws.agent_dir / "scripts" / "pipe")
    for path in ("scripts/pipe", "/dev/null"):
        ws.profile({"id": "p", "hooks": {"execute": path}})
        refused(rook_cli("run"), ws, f"hook script {path!r} is not a regular file (a pipe")


@pytest.mark.parametrize("entry", [
    {"script": "scripts/" + "h" * 5000},
    {"ruhroh": {"command": "scripts/" + "h" * 5000}},
])
def test_a_hook_path_no_system_call_can_take_is_named_with_why(ws, rook_cli, entry):
    # a name too long for the file system was "the transport plugin script (rook-harness)
    # could not check its 'script' entry: OSError: [Errno 36] File name too long: ..."
    ws.profile({"id": "p", "hooks": {"execute": entry}})
    r = rook_cli("run")
    refused(r, ws, "scripts/hhhh", "cannot be used: File name too long (")
    assert "OSError" not in r.stderr and "could not check" not in r.stderr, r.stderr
    assert len(r.stderr) < 1000, r.stderr


def test_missing_interpreter_is_named(ws, rook_cli, monkeypatch, tmp_path):
    ws.script("a.mjs", "console.log('{}')", executable=False)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.mjs"}})
    monkeypatch.setenv("PATH", str(tmp_path))  # no node on PATH
    refused(rook_cli("run"), ws, "a.mjs", "'node'", "not installed")


@pytest.mark.parametrize(
    "phases, needle",
    [
        ("prepare,execute", "hole"),
        ("open,execute", "prefix"),
        ("execute,open", "order"),
        ("prepare,teardown", "unknown phase teardown"),
        ("", "at least one phase"),  # not "every phase"
        (" , ", "at least one phase"),
        ("prepare,,open", "empty phase name"),
    ],
)
def test_phase_selection_with_a_hole_is_refused(ws, rook_cli, phases, needle):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    refused(rook_cli("run", "--phases", phases), ws, "--phases", needle)


@pytest.mark.parametrize(
    "scenario, needles",
    [
        (
            {"id": "s", "goal": "g", "criteria": [{"containz": "x"}]},
            ["criteria.0.containz", "unknown criterion type", "contains"],
        ),
        ({"id": "s", "goal": "g", "turns": ["a"]}, ["goal", "exactly one of goal or turns"]),
        ({"id": "s", "criteria": []}, ["goal"]),
        (
            {"id": "s", "goal": "g", "criteria": [{"matches": "(unclosed"}]},
            ["criteria.0.matches", "regular expression"],
        ),
        (
            {"id": "s", "goal": "g", "criteria": [{"contains": "x", "turn": 3}]},
            ["criteria.0.turn", "1 turn"],
        ),
        # a bad JMESPath path was told over three lines (the path and a caret on
        # lines of their own, breaking the list of fields); a boolean one was
        # named criteria.0.json, not its path
        (
            {"id": "s", "goal": "g", "criteria": [{"json": {"path": "a["}}]},
            ['  criteria.0.json.path: not a valid JMESPath expression: Invalid jmespath '
             'expression: Incomplete expression: "a["\n'],
        ),
        (
            {"id": "s", "goal": "g", "criteria": [{"json": {"path": True}}]},
            ["  criteria.0.json.path: must be text: YAML reads an unquoted yes"],
        ),
        (
            {"id": "s", "goal": "g", "criteria": [{"contains": "x", "equals": "y"}]},
            ["criteria.0", "exactly one"],
        ),
        (
            {"id": "s", "goal": "g", "criteria": [{"called": {"name": "x", "args": {}}}]},
            ["criteria.0.called.args"],
        ),
        ({"id": "s", "goal": "g", "repeat": 0}, ["repeat"]),
        ({"id": "s", "goal": "g", "owner": "me"}, ["owner", "unknown field"]),
        # an empty goal (`goal: "{{ q }}"` left unfilled) sent the agent nothing and ran
        ({"id": "s", "goal": ""}, ["goal: empty", "nothing to send"]),
        ({"id": "s", "goal": " \n\t"}, ["goal: empty"]),
        ({"id": "s", "turns": ["Cancel ORD-1", ""]}, ["turns.1: empty"]),
        (
            {"id": "s", "title": "t", "goal": "g", "multi_turn": True, "setup_messages": ["  "]},
            ["setup_messages.0: empty"],
        ),
        # values --tag/--class/--category split on commas and strip: never selectable
        ({"id": "s", "goal": "g", "tags": ["ok", "a,b"]}, ["tags.1: 'a,b' holds a comma", "--tag"]),
        ({"id": "s", "goal": "g", "tags": [" smoke"]}, ["tags.0: ' smoke' begins or ends"]),
        ({"id": "s", "goal": "g", "tags": [""]}, ["tags.0: empty", "--tag"]),
        ({"id": "s", "goal": "g", "class": "x,y"}, ["class: 'x,y' holds a comma", "--class"]),
        ({"id": "s", "goal": "g", "category": "  "}, ["category: empty", "--category"]),
        # more runs than one run may plan: no run could ever hold it (doctor said nothing)
        ({"id": "s", "goal": "g", "repeat": 1_000_001}, ["repeat: 1000001: must be a whole number from 1 to 1,000,000"]),
        # "Not a valid list." said nothing of what to write: one criterion, one turn or one
        # tag written as it is, without the list around it (docs followed by a new user)
        ({"id": "s", "goal": "g", "criteria": {"contains": "x"}},
         ["criteria: must be a list, each criterion an item of its own: [{contains: x}]"]),
        ({"id": "s", "turns": "Cancel ORD-1"},
         ["turns: must be a list of texts, one per turn (one turn alone: write goal: instead)"]),
        ({"id": "s", "goal": "g", "tags": "smoke"}, ["tags: must be a list of tags: [smoke]"]),
        ({"id": "s", "title": "t", "goal": "g", "multi_turn": True, "setup_messages": "hi"},
         ["setup_messages: must be a list of texts"]),
        # what a new user writes for "any of these", "the last turn", "five seconds"
        ({"id": "s", "goal": "g", "criteria": [{"contains": ["a", "b"]}]},
         ["criteria.0.contains: must be a text, not a list: write one criterion for each"]),
        ({"id": "s", "goal": "g", "criteria": [{"contains": "a", "turn": "last"}]},
         ["criteria.0.turn: must be a turn number (1, 2, ...) or 'all'; the last turn is "
          "the default: leave turn out"]),
        ({"id": "s", "goal": "g", "criteria": [{"max_seconds": "5s"}]},
         ["criteria.0.max_seconds: must be a number of seconds > 0: it counts seconds; write 5"]),
        # 1 and 0 were taken as true and false (1 == True in the set of truthy values)
        # where "yes" and "true" were refused: a flag is true or false
        ({"id": "s", "goal": "g", "excluded": 1}, ["excluded: not a valid boolean"]),
        ({"id": "s", "title": "t", "goal": "g", "multi_turn": 0, "setup_messages": ["a"]},
         ["multi_turn: not a valid boolean"]),
        # no finite number: said the same way however it was written, with what is taken
        # (marshmallow said "special numeric values (nan or infinity) are not permitted")
        ({"id": "s", "goal": "g", "timeout_seconds": float("nan")},
         ["timeout_seconds: not a number (.nan); write a finite number greater than 0\n"]),
        ({"id": "s", "goal": "g", "timeout_seconds": 10**400},
         ["timeout_seconds: too large: not a finite number (infinity, or past 1.8e+308); "
          "write a finite number greater than 0\n"]),
        # a call's name of another type was "criteria.0.called: must be a tool name or
        # {name, arguments, server}", which named neither the key nor what was wrong
        ({"id": "s", "goal": "g", "criteria": [
            {"called": {"name": ["a", "b"]}}, {"not_called": {"name": 7}},
            {"called": {"arguments": {"id": 1}}}]},
         ["criteria.0.called.name: must be a tool name (a text)\n",
          "criteria.1.not_called.name: must be text: YAML reads 7 unquoted as a number",
          "criteria.2.called.name: missing: the name of the tool (a text)\n"]),
        # a limit past the largest float said "refused it: OverflowError: int too large
        # to convert to float"
        ({"id": "s", "goal": "g", "criteria": [{"max_seconds": 10**400}]},
         ["criteria.0.max_seconds: must be a number of seconds > 0: too large: not a finite "
          "number (infinity, or past 1.8e+308)\n"]),
        # a list of nothing was told "must be a list of tool names", which it is
        ({"id": "s", "goal": "g", "criteria": [{"call_order": []}, {"call_order": "a"}]},
         ["criteria.0.call_order: empty: name the tools in the order they must be called, at "
          "least one (two for an order): [lookup_order, issue_refund]\n",
          "criteria.1.call_order: must be a list of tool names, in the order they must be "
          "called: [lookup_order, issue_refund]\n"]),
        # a path of another type was named as the criterion ("criteria.0.file: must be a
        # mapping with path and one of ..."), not as its path
        ({"id": "s", "goal": "g", "criteria": [
            {"file": {"path": ["a", "b"]}}, {"file": {"contains": "x"}}, {"file": {"path": ""}}]},
         ["criteria.0.file.path: must be one path (a text), not a list: write one criterion "
          "for each\n",
          "criteria.1.file.path: missing: the file's path inside the scenario's workspace\n",
          "criteria.2.file.path: must be a path (a text), not empty\n"]),
        # a number of 500 digits was quoted whole in the message, and .inf, 10**400 or
        # nan (text to YAML) was told "(not .nan or .inf)" or "not a valid number"
        # without what was wrong
        ({"id": "s", "goal": "g", "repeat": int("9" * 500)},
         ["repeat: too large: a whole number of 500 digits (99999999999999999999...); "
          "write a whole number from 1 to 1,000,000\n"]),
        ({"id": "s", "goal": "g", "repeat": int("9" * 40)},
         ["repeat: 99999999999999999999...: must be a whole number from 1 to 1,000,000"]),
        ({"id": "s", "goal": "g", "timeout_seconds": "nan", "max_turns": "-inf",
          "criteria": [{"max_seconds": "NaN"}, {"max_seconds": -1}]},
         ["timeout_seconds: not a number (nan); write a finite number greater than 0\n",
          "max_turns: too small: not a finite number (minus infinity, or past -1.8e+308); "
          "write a whole number at least 1\n",
          "criteria.0.max_seconds: must be a number of seconds > 0: not a number (NaN)\n",
          "criteria.1.max_seconds: must be a number of seconds > 0\n"]),
        ({"id": "s", "goal": "g", "repeat": float("-inf")},
         ["repeat: too small: not a finite number (minus infinity, or past -1.8e+308); "
          "write a whole number from 1 to 1,000,000\n"]),
    ],
)
def test_invalid_scenario_is_refused_with_the_field_path(ws, rook_cli, scenario, needles):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    path = ws.scenario(scenario)
    refused(rook_cli("run"), ws, path.name, *needles)


def test_a_number_of_more_digits_than_python_reads_is_named(ws, rook_cli):
    """A whole number of more than 4,300 digits (Python's limit for reading one) ended
    `rook run` in a ValueError traceback; it is past any float, refused as 1.0e+400
    is where a number goes, and as a number where text goes (shown shortened)."""
    many, nines = "1" * 5000, "9" * 5000
    ws.profile(
        f"id: p\nhooks:\n  execute:\n    script: scripts/h.sh\n    timeout_seconds: {nines}\n"
        f"concurrency: -{nines}\nname: {many}\n",
        name="p",
    )
    refused(
        rook_cli("run"),
        ws,
        "p.yaml",
        "hooks.execute.timeout_seconds: too large: not a finite number (infinity, or past "
        "1.8e+308); write a finite number greater than 0\n",
        "concurrency: too small: a whole number of 5,000 digits (-9999999999999999999...); "
        "write a whole number at least 1\n",
        "name: must be text: YAML reads 11111111111111111111... (5,000 characters) "
        "unquoted as a number; quote it as written\n",
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    path = ws.scenario(
        f"id: s\ngoal: g\nrepeat: {nines}\ncriteria:\n  - max_seconds: {nines}\n", name="s"
    )
    refused(
        rook_cli("run"),
        ws,
        path.name,
        "repeat: too large: a whole number of 5,000 digits (99999999999999999999...); "
        "write a whole number from 1 to 1,000,000\n",
        "criteria.0.max_seconds: must be a number of seconds > 0: too large: not a finite "
        "number (infinity, or past 1.8e+308)\n",
    )
    assert nines not in rook_cli("run").stderr  # never quoted whole
    # where text is compared, such a number was "not a JSON value (JSON has no NaN or
    # infinity)", which it is: it is past what Python reads; quoted, it is text
    path = ws.scenario(f"id: s\ngoal: g\ncriteria:\n  - equals: {nines}\n", name="s")
    r = rook_cli("run")
    refused(
        r,
        ws,
        path.name,
        "criteria.0.equals: too large: a whole number of 5,000 digits (99999999999999999999...): "
        "more than Rook reads as a number; to compare text, quote it\n",
    )
    assert nines not in r.stderr


def test_text_yaml_reads_as_a_boolean_or_number_is_told_to_be_quoted(ws, rook_cli):
    """`goal: yes`, `turns: [yes, no]`, `- contains: yes` are text to the writer, but
    YAML reads them as booleans (and 2024 as a number): "goal: Not a valid string."
    and "criteria.0.contains: must be a text" did not say why, nor what to write."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario("""
        id: s
        goal: yes
        tags: [2024]
        criteria:
          - contains: yes
          - equals: off
          - called: on
          - rubric: yes
          - rubric: {text: 2024}
          - file: {path: out.txt, contains: on}
          - call_order: [lookup, no]
          - not_called: 42
          - judge: {name: keywords, words: [refund, yes]}
    """)
    boolean = "must be text: YAML reads an unquoted {} as a boolean; quote it"
    number = "must be text: YAML reads {} unquoted as a number; quote it as written"
    refused(
        rook_cli("run"),
        ws,
        "  goal: " + boolean.format("yes, on or true") + "\n",
        "  tags.0: " + number.format(2024) + "\n",
        "  criteria.0.contains: " + boolean.format("yes, on or true") + "\n",
        "  criteria.1.equals: " + boolean.format("no, off or false") + "\n",
        "  criteria.2.called: " + boolean.format("yes, on or true") + "\n",
        # these said only "must be the rubric text ...", "must be a text", "must be a
        # list of tool names", "must be a tool name or {name, arguments}"
        "  criteria.3.rubric: " + boolean.format("yes, on or true") + "\n",
        "  criteria.4.rubric.text: " + number.format(2024) + "\n",
        "  criteria.5.file.contains: " + boolean.format("yes, on or true") + "\n",
        "  criteria.6.call_order.1: " + boolean.format("no, off or false") + "\n",
        "  criteria.7.not_called: " + number.format(42) + "\n",
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [
        {"judge": {"name": "keywords", "words": ["refund", True]}}]})
    refused(rook_cli("run"), ws, "criteria.0.judge: keywords: words.1: "
            + boolean.format("yes, on or true"))
    ws.scenario("""
        id: s
        title: Public
        goal: g
        criteria:
          - file: {path: 2024}
          - file: on
          - command: {run: yes}
        expectation:
          acceptance_criteria:
            - {id: ac-1, statement: yes, check: llm_judge}
          forbidden: [no]
          mcp:
            - {server: orders, tool: 42}
    """)
    refused(
        rook_cli("run"),
        ws,
        "  criteria.0.file.path: " + number.format(2024) + "\n",
        "  criteria.1.file: " + boolean.format("yes, on or true") + "\n",
        "  criteria.2.command.run: " + boolean.format("yes, on or true") + "\n",
        "  expectation.acceptance_criteria.0.statement: " + boolean.format("yes, on or true"),
        "  expectation.forbidden.0: " + boolean.format("no, off or false") + "\n",
        "  expectation.mcp.0.tool: " + number.format(42) + "\n",
    )
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    ws.profile("id: p\nname: 2024\nhooks: {execute: scripts/h.sh}\n")
    refused(
        rook_cli("run"),
        ws,
        "  name: must be text: YAML reads 2024 unquoted as a number; quote it as written\n",
    )


def test_every_invalid_scenario_file_is_named_at_once(ws, rook_cli):
    """Only the first bad file was named: fixing three took three runs (and three
    rook doctor rounds)."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "a", "goal": ""})
    ws.scenario({"id": "b", "gaol": "g"})
    ws.scenario({"id": "c", "goal": "g", "criteria": [{"containz": "x"}]})
    r = rook_cli("run")
    refused(r, ws, "a.yaml", "goal: empty", "b.yaml", "gaol", "c.yaml", "containz")
    assert r.stderr.count("invalid scenario") == 3, r.stderr


def test_every_invalid_scenario_of_a_list_is_named_at_once(ws, rook_cli):
    """A file holding a list named only its first invalid scenario: fixing three
    took three runs, where three files are named at once."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario("- id: A\n  goal: g\n- id: b\n  goal: ''\n- id: ok\n  goal: g\n"
                "- id: c\n  gaol: g\n", name="list")
    r = rook_cli("run")
    refused(r, ws, "list.yaml[0]: invalid scenario", "list.yaml[1]: invalid scenario b",
            "list.yaml[3]: invalid scenario c", "goal: empty", "gaol")
    assert r.stderr.count("invalid scenario") == 3, r.stderr


def test_every_duplicate_scenario_id_is_named_at_once(ws, rook_cli):
    """Only the first id used twice was named, and not beside a file that does not
    validate: each round of fixes found one more."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "s", "goal": "again"}, name="copy")
    ws.scenario("- id: t\n  goal: g\n- id: t\n  goal: h\n", name="twice")
    ws.scenario({"id": "u", "gaol": "g"})
    r = rook_cli("run")
    refused(r, ws, "scenario id 's' is already used", "scenario id 't' is already used",
            "u.yaml: invalid scenario u", "gaol")


def test_duplicate_scenario_ids_name_both_files(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "s", "goal": "again"}, name="copy")
    refused(rook_cli("run"), ws, "copy.yaml", "s.yaml", "already used")


def test_hidden_files_in_the_scenarios_folder_are_not_scenarios(ws, rook_cli):
    """An editor's lock link (Emacs writes .#s.yaml -> user@host.pid while s.yaml is
    open) stopped every run with 'cannot read'; a .git or .archive folder's copies
    clashed on ids. Scenarios are the visible *.yaml files, at any depth."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    scenarios = ws.agent_dir / "scenarios"
    (scenarios / ".#s.yaml").symlink_to("user@host.4242:1700000000")
    (scenarios / ".archive").mkdir()
    (scenarios / ".archive" / "s.yaml").write_text("id: s\ngoal: old\n")
    (scenarios / "deeper").mkdir()
    (scenarios / "deeper" / "t.yml").write_text("id: t\ngoal: g\ncriteria: [{contains: ok}]\n")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert sorted(s["id"] for s in r.report["scenarios"]) == ["s", "t"]
    assert rook_cli("doctor").exit_code == 0


def test_unknown_only_id_is_refused(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    refused(rook_cli("run", "--only", "nope"), ws, "--only", "nope")


@pytest.mark.parametrize(("args", "meant"), [
    (["--tag", "Smoke"], "--tag smoke"),
    (["--tag", "SMOKE,nightly"], "--tag smoke,nightly"),
    (["--class", "Adversarial", "--category", "refunds"], "--class adversarial --category Refunds"),
])
def test_a_selector_matching_nothing_but_in_other_case_says_what_it_meant(ws, rook_cli, args,
                                                                          meant):
    # --tag Smoke selected nothing when the tag is smoke: neither message nor docs said
    # that the names are compared case-sensitively
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "s", "goal": "g", "tags": ["smoke"], "class": "adversarial",
                 "category": "Refunds"})
    r = rook_cli("run", *args)
    refused(r, ws, f"(did you mean {meant}? tags, classes and categories are case-sensitive)")
    r = rook_cli("run", "--tag", "smok")  # no name in other case: no guess
    refused(r, ws, "by --tag smok (1 scenario there; tags: smoke)")


def test_a_selector_in_other_case_naming_excluded_scenarios_says_both(ws, rook_cli):
    # --class Adversarial, every adversarial scenario excluded: true, said 'did you mean
    # --class adversarial?', which was then refused in turn, naming them excluded only
    # then; and the note must not call scenarios that are not excluded so
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "adv", "goal": "g", "class": "adversarial", "excluded": True})
    ws.scenario({"id": "t", "goal": "g", "tags": ["smoke"]})
    refused(rook_cli("run", "--class", "Adversarial"), ws, "(did you mean --class adversarial?",
            "excluded: true, run only when --only names them: adv)")
    r = rook_cli("run", "--tag", "Smoke")
    refused(r, ws, "(did you mean --tag smoke?")
    assert "excluded" not in r.stderr, r.stderr


@pytest.mark.parametrize(("first", "then", "said"), [
    ([], [], "--run-name kept: no scenario of this run selected by --tag Smoke "),
    (["--shard", "1/2"], ["--shard", "1/2"], "--run-name kept: no scenario of this run "),
    (["--shard", "1/2"], ["--shard", "2/2"], "no scenario selected in "),  # joining the run
])
def test_a_resumed_run_or_a_shard_selecting_nothing_but_in_other_case_says_what_it_meant(
        ws, rook_cli, first, then, said):
    # a fresh run said 'did you mean --tag smoke?'; a resumed run said only 'no scenario
    # of this run selected', and a shard joining the run 'planned other scenario runs'
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    for sid in ("s", "t"):
        ws.scenario({"id": sid, "goal": "g", "tags": ["smoke"], "criteria": [{"contains": "ok"}]})
    made = rook_cli("run", "--run-name", "kept", *first)
    assert made.exit_code in (0, 1), made.stderr
    ws.mark.unlink(missing_ok=True)
    r = rook_cli("run", "--run-name", "kept", *then, "--tag", "Smoke")
    refused(r, ws, said, "by --tag Smoke (did you mean --tag smoke? tags, classes and "
                         "categories are case-sensitive)")
    refused(rook_cli("run", "--run-name", "kept", *then, "--tag", "smok"), ws)


@pytest.mark.parametrize("flag", ["--only", "--tag", "--class", "--category"])
@pytest.mark.parametrize("value", ["", " , "])
def test_a_selector_naming_nothing_is_refused_not_ignored(ws, rook_cli, flag, value):
    """`rook run --tag "$TAGS"` with TAGS empty must not run every scenario."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    refused(rook_cli("run", flag, value), ws, flag, "names nothing")


@pytest.mark.parametrize("flag", ["--only", "--tag", "--class", "--category"])
@pytest.mark.parametrize("value", ["s,", ",s", "s,,t", "s, ,t"])
def test_a_selector_with_an_empty_item_is_refused_as_phases_is(ws, rook_cli, flag, value):
    """`--only greeting,` ran greeting while `--phases prepare,` was refused:
    `--only "$A,$B"` with B unset narrows the run without a word."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "t", "goal": "g", "tags": ["s", "t"], "criteria": [{"contains": "ok"}]})
    refused(rook_cli("run", flag, value), ws, f"{flag} {value!r}: an empty item")
    # an empty value beside a named one (`--only a --only "$B"`, B empty) likewise
    refused(rook_cli("run", flag, "t", flag, value.strip(",st ")), ws, f"{flag} '': empty")


def test_resuming_with_selectors_that_match_none_of_the_run_is_refused(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "t", "tags": ["x"], "goal": "g", "repeat": 2, "criteria": [{"contains": "ok"}]})
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr
    run_id = first.report["run"]["id"]
    ws.mark.unlink()
    # a filter matching nothing of the run was a silent "no scenarios", exit 0
    r = rook_cli("run", "--run", run_id, "--phases", "collect,judge", "--tag", "nope")
    assert r.exit_code == 2 and "no scenario of this run selected" in r.stderr, r.stderr
    assert "s, t" in r.stderr
    # another number of repeats than the run planned was silently ignored
    r = rook_cli("run", "--run", run_id, "--phases", "collect,judge", "--repeat", "3")
    assert r.exit_code == 2 and "--repeat 3" in r.stderr and "keeps its plan" in r.stderr
    r = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge", "--repeat", "2",
                 "--tag", "x")
    assert r.exit_code == 0, r.stderr
    assert [(s["id"], s["status"]) for s in r.report["scenarios"]] == [
        ("s", "pending"), ("t", "passed"), ("t", "passed")]  # the run's report: s not judged yet


def test_unknown_flag_is_a_usage_error(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    refused(rook_cli("run", "--colour"), ws, "rook: error: --colour: no such option\nUsage: ")


def test_unknown_report_format(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    refused(rook_cli("run", "--report", "pdf:x.pdf"), ws, "pdf", "installed")


@pytest.mark.parametrize(("value", "said"), [
    ("jsn", "--report jsn: use FORMAT:PATH; did you mean json:PATH (e.g. json:report.json)?"),
    ("json", "--report json: use FORMAT:PATH; did you mean json:PATH (e.g. json:report.json)?"),
    ("JUnit", "--report JUnit: use FORMAT:PATH; did you mean junit:PATH (e.g. "
              "junit:report.xml)?"),
    ("out.xml", "--report out.xml: use FORMAT:PATH; did you mean junit:out.xml?"),
    ("x", "--report x: use FORMAT:PATH, e.g. json:report.json; formats: html, json, junit"),
    ("html:", "--report html:: use FORMAT:PATH, e.g. html:report.html"),
])
def test_a_report_flag_without_its_colon_says_what_it_meant(ws, rook_cli, value, said):
    # `--report tpa:x` was told the format it looks like, `--report jsn` (no colon)
    # only "use FORMAT:PATH, e.g. json:report.json"
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    refused(rook_cli("run", "--report", value), ws, said)


@pytest.mark.parametrize(("args", "said"), [
    (["-j", "9" * 5000], "-j: 99999999999999999999...: too large: a whole number of 5,000 digits"),
    (["--concurrency", "-" + "9" * 400],
     "--concurrency: -9999999999999999999...: too small: a whole number of 400 digits"),
    (["--repeat", "9" * 400], "--repeat: 99999999999999999999...: too large: a whole number of "
                              "400 digits"),
    (["--repeat", "9" * 30], "--repeat 99999999999999999999... (30 digits): plans "
                             "99999999999999999999... (30 digits) scenario runs; a run plans "
                             "at most 1,000,000"),
])
def test_a_count_flag_of_hundreds_of_digits_is_told_too_large_never_quoted_whole(
        ws, rook_cli, args, said):
    # -j of 5,000 digits was "'999... 4500 characters more' is not a valid integer" (it is
    # one); --repeat of 400 digits was quoted whole twice, 900 characters
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    r = rook_cli("run", *args)
    refused(r, ws, said)
    assert "9" * 40 not in r.stderr, r.stderr


def test_a_plan_past_the_limit_is_counted_as_the_limit_is_written(ws, rook_cli):
    # "plans 1200001 scenario runs; a run plans at most 1,000,000": the two numbers
    # side by side were written two ways (the workspace's own scenario is the 1)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": "g", "repeat": 600_000})
    refused(rook_cli("run"), ws, "plans 1,200,001 scenario runs; a run plans at most 1,000,000")


def test_profile_selection_active_and_override(ws, rook_cli):
    ws.script(
        "b.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "ok from b"}\'\nexit 0\n'
    )
    ws.profile({"id": "a", "hooks": {"execute": "scripts/h.sh"}})
    ws.profile({"id": "b", "name": "Bee", "hooks": {"execute": "scripts/b.sh"}}, active=False)
    assert rook_cli("run", "--json").report["run"]["profile"]["id"] == "a"
    r = rook_cli("run", "--json", "--profile", "Bee")
    assert r.report["run"]["profile"]["id"] == "b"
    ws.mark.unlink()
    refused(rook_cli("run", "--profile", "zzz"), ws, "zzz", "not found")


def test_an_id_held_by_two_profile_files_is_refused_whichever_is_picked(ws, rook_cli):
    # production.yaml copied from staging.yaml, its id left as it was: a run of
    # it was pinned to 'staging', and resuming it ran staging.yaml's hooks
    ws.profile({"id": "staging", "name": "Staging", "hooks": {"execute": "scripts/h.sh"}})
    ws.profile(
        {"id": "staging", "name": "Production", "hooks": {"execute": "scripts/h.sh"}},
        name="production",
        active=False,
    )
    both = "several files hold the id 'staging' (production.yaml, staging.yaml)"
    refused(rook_cli("run"), ws, both)  # the active id
    refused(rook_cli("run", "--profile", "production"), ws, both)  # a file name
    refused(rook_cli("run", "--profile", "Production"), ws, both)  # a name
    refused(rook_cli("profile", "test", "--workspace", str(ws.root)), ws, both)
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())
    # a link to the same file is the same profile, not a second one
    production = ws.agent_dir / "profiles" / "production.yaml"
    production.unlink()
    production.symlink_to("staging.yaml")
    assert rook_cli("run", "--profile", "production").exit_code == 0


def test_workspace_project_agent_selection(tmp_path, rook_cli, monkeypatch):
    from rook_core.testing import RookCli, Workspace

    root = tmp_path / "multi"
    a = Workspace(root, "proj", "one")
    Workspace(root, "proj", "two")
    a.script("h.sh", ECHO)
    a.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    a.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    monkeypatch.setenv("MARK", str(tmp_path / "mark"))
    r = rook_cli("run", "-w", str(root))
    assert r.exit_code == 2 and "several agents (one, two)" in r.stderr and "--agent" in r.stderr
    r = rook_cli("run", "-w", str(root), "--agent", "three")
    assert r.exit_code == 2 and "agent 'three' not found" in r.stderr
    # the nearest ancestor holding .testmuai/rook is the workspace
    deep = root / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    r = RookCli(None)("run", "--agent", "one", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.report["run"]["agent"] == "one"


def test_an_agent_named_without_its_project_is_found_in_the_one_project_that_has_it(
        tmp_path, rook_cli):
    """`rook run --agent b1` in a workspace of several projects, only one of which
    has an agent b1, said "several projects (p1, p2, p3); choose one with
    --project": the agent names its project. Two projects with that agent are
    named; an agent no project has says so."""
    from rook_core.testing import Workspace

    root = tmp_path / "multi"
    Workspace(root, "p1", "a1")
    b = Workspace(root, "p2", "b1")
    Workspace(root, "p3", "c1")
    b.script("h.sh", ECHO)
    b.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    b.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    r = rook_cli("run", "-w", str(root), "--agent", "b1", "--json")
    assert r.exit_code == 0, r.stderr
    assert (r.report["run"]["project"], r.report["run"]["agent"]) == ("p2", "b1")
    assert rook_cli("runs", "-w", str(root), "--agent", "b1").exit_code == 0
    r = rook_cli("run", "-w", str(root), "--agent", "zz")
    assert r.exit_code == 2, r.stderr
    assert "agent 'zz' not found in any project (projects: p1, p2, p3)" in r.stderr, r.stderr
    Workspace(root, "p3", "b1")
    r = rook_cli("run", "-w", str(root), "--agent", "b1")
    assert r.exit_code == 2, r.stderr
    assert "several projects have an agent 'b1' (p2, p3); choose one with --project" in r.stderr
    r = rook_cli("run", "-w", str(root), "--agent", "b1", "--project", "p2")
    assert r.exit_code == 0, r.stderr


def test_a_file_named_like_the_agent_in_one_of_several_projects_is_named_never_not_found(
        tmp_path, rook_cli):
    """`rook run --agent b1` in a workspace of several projects, where b1 is a
    file (or a link to nothing) in one project's agents folder and no folder
    anywhere, said "agent 'b1' not found in any project", though ls lists it
    there: as with --project, what stands there is named."""
    from rook_core.testing import Workspace

    root = tmp_path / "multi"
    a = Workspace(root, "p1", "a1")
    Workspace(root, "p2", "c1")
    (a.agent_dir.parent / "b1").write_text("not an agent\n")
    r = rook_cli("run", "-w", str(root), "--agent", "b1")
    assert r.exit_code == 2, r.stderr
    assert f"{a.agent_dir.parent / 'b1'}: a file, not a folder; an agent is a folder" in r.stderr
    (a.agent_dir.parent / "b2").symlink_to(root / "nowhere")
    r = rook_cli("run", "-w", str(root), "--agent", "b2")
    assert r.exit_code == 2, r.stderr
    assert f"{a.agent_dir.parent / 'b2'}: a symbolic link to {root / 'nowhere'}" in r.stderr


def test_a_hidden_folder_is_no_project_or_agent(ws, rook_cli):
    """A folder such as Jupyter's .ipynb_checkpoints beside the one agent (or the
    one project) made "several agents (.ipynb_checkpoints, agent)": no such name
    can be a project or an agent (rook init refuses it), and the only one is used."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    projects = ws.agent_dir.parent.parent.parent
    (projects / ".ipynb_checkpoints").mkdir()
    (ws.agent_dir.parent / ".ipynb_checkpoints").mkdir()
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr
    assert (r.report["run"]["project"], r.report["run"]["agent"]) == (ws.project, ws.agent)
    r = rook_cli("doctor")
    assert ".ipynb_checkpoints" not in r.stdout + r.stderr, r.stdout


def test_no_workspace_says_how_to_create_one(tmp_path, monkeypatch):
    from rook_core.testing import RookCli

    monkeypatch.chdir(tmp_path)
    r = RookCli(None)("run")
    assert r.exit_code == 2 and "run: rook init --project P --agent A" in r.stderr


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_no_workspace_where_one_was_given_says_to_create_it_there(tmp_path, monkeypatch, how):
    # -w DIR (or ROOK_WORKSPACE_DIR) naming a folder with no workspace said 'run: rook
    # init --project P --agent A', which makes one in the current directory instead
    # (rook init reads no variable): the command names the folder
    from rook_core.testing import RookCli

    there = tmp_path / "my agent"
    there.mkdir()
    monkeypatch.chdir(tmp_path)
    if how == "flag":
        r = RookCli(None)("run", "-w", str(there))
    else:
        monkeypatch.setenv("ROOK_WORKSPACE_DIR", str(there))
        r = RookCli(None)("run")
    assert r.exit_code == 2, r.stderr
    assert f"run: rook init -w '{there}' --project P --agent A" in r.stderr, r.stderr


@pytest.mark.parametrize("inside", ["src/pkg", ".testmuai"])
def test_a_workspace_flag_naming_a_folder_inside_a_workspace_names_the_workspace(ws, rook_cli,
                                                                               inside):
    # --workspace is the workspace itself (no search upwards): -w naming a folder
    # in one said only "no Rook workspace here ...; run: rook init ...", which
    # would make a second workspace inside the first
    (ws.root / inside).mkdir(parents=True, exist_ok=True)
    r = rook_cli("run", "-w", str(ws.root / inside))
    refused(r, ws, f"{ws.root / inside}: no Rook workspace here", f"it is inside the workspace "
            f"{ws.root.resolve()}: give -w {ws.root.resolve()}")
    assert "rook init" not in r.stderr, r.stderr


@pytest.mark.parametrize("command", [["run"], ["runs"], ["profile", "list"]])
def test_rook_workspace_dir_naming_a_folder_inside_a_workspace_names_the_variable(
        ws, monkeypatch, command):
    from rook_core.testing import RookCli

    # the user set the variable (a CI job's), never typed --workspace: the fix names
    # what they set, as every other message about the variable does
    (ws.root / "src").mkdir()
    monkeypatch.setenv("ROOK_WORKSPACE_DIR", str(ws.root / "src"))
    monkeypatch.chdir(ws.root.parent)
    r = RookCli(None)(*command)  # no --workspace of its own
    refused(r, ws, f"it is inside the workspace {ws.root.resolve()}: set ROOK_WORKSPACE_DIR "
            f"to {ws.root.resolve()}")
    assert "-w " not in r.stderr and "rook init" not in r.stderr, r.stderr


def test_init_creates_the_layout(tmp_path, rook_cli):
    r = rook_cli("init", "--project", "demo", "--agent", "order-desk", "-w", str(tmp_path))
    assert r.exit_code == 0, r.stderr
    agent = tmp_path / ".testmuai/rook/projects/demo/agents/order-desk"
    for sub in ("profiles", "scripts", "scenarios", "runs"):
        assert (agent / sub).is_dir()
    r = rook_cli("init", "--project", "bad name", "--agent", "a", "-w", str(tmp_path))
    assert r.exit_code == 2 and "--project" in r.stderr


@pytest.mark.parametrize(
    "text, needles",
    [
        ("project: [a]\n", ["project", "must be a project name (a string)"]),
        ("agent: 7\n", ["agent", "must be an agent name"]),
        ("author: 5\n", ["author", "must be a command line (a string)"]),
        ("judge_profile: {a: 1}\n", ["judge_profile", "must be a profile name"]),
        ("project: ''\n", ["project", "not empty"]),
        ("concurrency: lots\n", ["concurrency", "unknown key", "project, agent"]),
        ("bogus: 1\n", ["bogus", "unknown key"]),
        # the list of keys alone left the typo to be found: scenarios and profiles say it
        ("agnt: sample\n", ["agnt: unknown key; did you mean agent?\n"]),
        ("judge: grader\n", ["judge: unknown key; did you mean judge_profile?\n"]),
        ("- project\n", ["must be a mapping"]),
        ("project: [unclosed\n", ["line", "not valid YAML"]),
    ],
)
def test_invalid_config_yaml_is_refused_with_the_field(ws, rook_cli, text, needles):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    config = ws.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text(text)
    r = rook_cli("run")
    refused(r, ws, "config.yaml", *needles)
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


def test_valid_config_yaml_keys_are_accepted(ws, rook_cli):
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    config = ws.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text(
        f"# defaults\nproject: {ws.project}\nagent: {ws.agent}\n"
        "judge_profile: p\nauthor: claude -p\n"
    )
    r = rook_cli("run")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert ws.mark.exists()
    config.write_text("")  # an empty file is no defaults
    assert rook_cli("run").exit_code == 0


@pytest.mark.parametrize("key", ["project", "agent"])
def test_a_config_yaml_default_that_names_nothing_says_it_comes_from_config_yaml(
    ws, rook_cli, key
):
    # "agent 'sampel' not found in ..." blamed a name the user never typed
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    config = ws.root / ".testmuai" / "rook" / "config.yaml"
    config.write_text(f"{key}: nope\n")
    refused(
        rook_cli("run"),
        ws,
        f"{key} 'nope' (the {key}: of {config.resolve()}) not found in ",
        f"; correct it there, or give --{key}",
    )
    r = rook_cli("run", f"--{key}", "nope2")  # a flag's own name is told as before
    assert f"{key} 'nope2' not found in " in r.stderr and "config.yaml" not in r.stderr


BODY = '[ "$1" = execute ] && { touch "$MARK"; echo \'{"output": "ok"}\'; }\nexit 0\n'


@pytest.mark.parametrize(
    "line, needles",
    [
        ("#!/usr/bin/nonexistent-interp", ["/usr/bin/nonexistent-interp", "does not exist"]),
        ("#!/usr/bin/env nonexistent-interp-q", ["'nonexistent-interp-q'", "not on PATH"]),
        ("#! /usr/bin/env -S nonexistent-interp-q -e", ["'nonexistent-interp-q'", "env -S"]),
        ("#!/usr/bin/env -S -i A=1 -u B nonexistent-interp-q", ["'nonexistent-interp-q'"]),
        # Linux gives env all of it as one word: it started the script itself again and
        # again until the hook's timeout (the first two), or failed every call
        ("#!/usr/bin/env -u X bash", ["gives env '-u X bash' as one argument", "-S -u X bash"]),
        ("#!/usr/bin/env LC_ALL=C bash", ["'LC_ALL=C bash' as one argument", "env -S LC_ALL"]),
        ("#!/usr/bin/env bash -e", ["'bash -e' as one argument", "#!/usr/bin/env -S bash -e"]),
        ("#!/usr/bin/env", ["names no program"]),  # it would start the script forever
        ("#!/usr/bin/env ./nope/interp", ["./nope/interp", "does not exist"]),
        ("#!/etc/passwd", ["/etc/passwd", "not executable"]),
        ("#!/bin/bash\r", ["carriage return", "LF"]),
        ("\ufeff#!/bin/bash", ["byte order mark", "without a BOM"]),  # was "has no #! line"
        ("#!", ["names no interpreter"]),
    ],
)
def test_missing_shebang_interpreter_is_named_before_anything_runs(ws, rook_cli, line, needles):
    ws.script("other.sh", f"#!/bin/bash\n{BODY}")
    ws.script("a.sh", f"{line}\n{BODY}")
    ws.profile({"id": "p", "hooks": {"prepare": "scripts/other.sh", "execute": "scripts/a.sh"}})
    r = rook_cli("run")
    refused(r, ws, "a.sh", "cannot start", "#! line", *needles)
    assert not ws.runs_dir.exists() or not any(ws.runs_dir.iterdir())


@pytest.mark.parametrize(
    "line",
    [
        "#!/bin/bash",
        "#! /bin/bash -e",
        "#!/usr/bin/env bash",
        "#!/usr/bin/env -S bash -e",
        "#!/usr/bin/env -Sbash -e",
        "#!/usr/bin/env --split-string=bash -e",
    ],
)
def test_a_shebang_whose_interpreter_exists_runs(ws, rook_cli, line):
    ws.script("a.sh", f"{line}\n{BODY}")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/a.sh"}})
    r = rook_cli("run")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert ws.mark.exists()


def test_an_interpreter_gone_during_the_run_is_named_by_the_hook_failure(ws, rook_cli, tmp_path):
    interp = tmp_path / "my-bash"
    interp.symlink_to("/bin/bash")
    ws.script("gone.sh", f'#!/bin/bash\n[ "$1" = prepare ] && rm -f "{interp}"\nexit 0\n')
    ws.script("a.sh", f"#!{interp}\n{BODY}")
    ws.profile({"id": "p", "hooks": {"prepare": "scripts/gone.sh", "execute": "scripts/a.sh"}})
    r = rook_cli("run", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    [scenario] = r.report["scenarios"]
    assert scenario["status"] == "error"
    assert "could not start the hook" in scenario["reason"]
    assert f"its interpreter {interp} (from its #! line) does not exist" in scenario["reason"]


def test_config_yaml_agent_is_a_default_only_in_its_project(tmp_path, rook_cli, monkeypatch):
    """config.yaml says project p1, agent a2: --project p2 (one agent, b1) uses
    b1, not a2 (which is p1's); p1 without --agent uses a2."""
    from rook_core.testing import Workspace

    root = tmp_path / "multi"
    monkeypatch.setenv("MARK", str(tmp_path / "mark"))
    for project, agent in (("p1", "a1"), ("p1", "a2"), ("p2", "b1")):
        w = Workspace(root, project, agent)
        w.script("h.sh", ECHO)
        w.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
        w.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    (root / ".testmuai" / "rook" / "config.yaml").write_text("project: p1\nagent: a2\n")
    r = rook_cli("run", "-w", str(root), "--json")
    assert r.exit_code == 0 and r.report["run"]["agent"] == "a2", r.stderr
    r = rook_cli("run", "-w", str(root), "--project", "p2", "--json")
    assert r.exit_code == 0, r.stderr
    assert (r.report["run"]["project"], r.report["run"]["agent"]) == ("p2", "b1")


@pytest.mark.parametrize(
    "kind, data, needles",
    [
        (
            "scenario",
            {"id": "s", "gaol": "g", "critera": [], "expectation": {"forbiden": []}},
            [
                "gaol: unknown field; did you mean goal?",
                "critera: unknown field; did you mean criteria?",
                "expectation.forbiden: unknown field; did you mean forbidden?",
            ],
        ),
        (
            "scenario",
            {"id": "s", "goal": "g", "owner": "me"},
            ["owner: unknown field; expected one of: id, name, title, tags, goal, turns"],
        ),
        (
            "scenario",
            {"id": "s", "goal": "g", "criteria": [{"contain": "x"}, {"not_caled": "y"}]},
            [
                "criteria.0.contain: unknown criterion type; did you mean contains?",
                "criteria.1.not_caled: unknown criterion type; did you mean not_called?",
            ],
        ),
        (  # a misspelt turn or id was "unknown criterion type; installed: ..." (no hint)
            "scenario",
            {"id": "s", "turns": ["a", "b"],
             "criteria": [{"contains": "x", "tunr": 2}, {"contains": "y", "ids": "label"}]},
            [
                "criteria.0.tunr: unknown criterion type or key; did you mean turn?",
                "criteria.1.ids: unknown criterion type or key; did you mean id?",
            ],
        ),
        (  # a criterion's own keys, and a public entry's: were "unknown field", or not
            "scenario",  # named at all ("must be a mapping with path ...")
            {
                "id": "s",
                "goal": "g",
                "criteria": [
                    {"json": {"paht": "a", "equal": 1}},
                    {"claim": {"say": "x", "requires_call": "y"}},
                    {"file": {"path": "a", "contain": "x"}},
                    {"rubric": {"txt": "polite"}},
                    {"not_called": {"name": "a", "argument": {}}},
                ],
                "expectation": {"acceptance_criteria": [{"statment": "x"}]},
            },
            [
                "criteria.0.json.paht: unknown field; did you mean path?",
                "criteria.0.json.equal: unknown field; did you mean equals?",
                "criteria.1.claim.say: unknown field; did you mean says?",
                "criteria.2.file.contain: unknown field; did you mean contains?",
                "criteria.3.rubric.txt: unknown field; did you mean text?",
                "criteria.4.not_called.argument: unknown field; did you mean arguments?",
                "expectation.acceptance_criteria.0.statment: unknown field; did you mean statement?",
            ],
        ),
        (
            "profile",
            {"id": "p", "hook": {"execute": "scripts/h.sh"}, "capabilities": {"call": True}},
            [
                "hook: unknown field; did you mean hooks?",
                "capabilities.call: unknown field; did you mean calls?",
            ],
        ),
        (
            "profile",
            {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "colour": "red"},
            ["colour: unknown field; expected one of: name, id, hooks, env, capabilities"],
        ),
        (
            "profile",
            {"id": "p", "hooks": {"execute": {"script": "scripts/h.sh", "timeout": 5}}},
            ["hooks.execute.timeout: unknown transport key", "did you mean timeout_seconds?"],
        ),
        (  # a misspelt transport key, as a misspelt criterion type is: which one was meant
            "profile",
            {"id": "p", "hooks": {"execute": {"scirpt": "scripts/h.sh", "timeout_seconds": 5}}},
            ["hooks.execute.scirpt: unknown transport key", "did you mean script?"],
        ),
        (
            "profile",
            {
                "id": "p",
                "hooks": {"execute": "scripts/h.sh"},
                "env": [{"variable": "T", "purpose": "x", "value": "s3cret"}],
            },
            ["env.0.value: unknown field; expected one of: variable, purpose"],
        ),
        (  # inside a transport's own entry too: were a list of every key, or nothing
            "profile",
            {
                "id": "p",
                "hooks": {
                    "execute": {
                        "http": {
                            "url": "http://127.0.0.1:9/ask",
                            "header": {"X-A": "b"},
                            "extract": {"ouput": "a", "usage": {"inputs": "b"}},
                        }
                    },
                    "close": {"ruhroh": {"comand": "./w.sh", "max_iteration": 3}},
                },
            },
            [
                "hooks.execute.http.header: unknown field; did you mean headers?",
                "hooks.execute.http.extract.ouput: unknown field; did you mean output?",
                "hooks.execute.http.extract.usage.inputs: unknown field; did you mean input?",
                "hooks.close.ruhroh.comand: unknown field; did you mean command?",
                "hooks.close.ruhroh.max_iteration: unknown field; did you mean max_iterations?",
            ],
        ),
        (
            "profile",
            {"id": "p", "hooks": {"execute": {"http": {"url": "http://h/", "colour": 1}}}},
            ["hooks.execute.http.colour: unknown field; expected one of: url, method, headers"],
        ),
    ],
)
def test_a_misspelt_key_is_told_what_to_write_instead(ws, rook_cli, kind, data, needles):
    if kind == "profile":
        ws.profile(data)
    else:
        ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
        ws.scenario(data)
    refused(rook_cli("run"), ws, *needles)
