"""Acceptance of SPEC §3 (profiles) and §5 (capabilities are observed), in the
combinations single-feature tests leave out. Each test drives the real `rook`
command over real hook scripts; what one sentence of the contract asks is
named in the test's docstring."""

from __future__ import annotations

import json

import pytest

MARKED = """
    #!/bin/bash
    echo "$1" >> "$MARK"
    [ "$1" = execute ] || exit 0
    cat >/dev/null
    echo '{"output": "ok"}'
"""


@pytest.fixture
def ws(rook_workspace, tmp_path, monkeypatch):
    mark = tmp_path / "ran"
    monkeypatch.setenv("MARK", str(mark))
    rook_workspace.mark = mark
    rook_workspace.script("h.sh", MARKED)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    return rook_workspace


def refused(r, ws, *needles, runs=0):
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert r.exception is None, r.exception
    assert "Traceback" not in r.stderr + r.stdout
    for n in needles:
        assert n in r.stderr, (n, r.stderr)
    assert not ws.mark.exists(), "a hook ran despite a configuration error"
    assert len(list(ws.runs_dir.iterdir())) == runs, "a run directory left for a run never started"


@pytest.mark.parametrize("value", ["1", "0", "1.0"])
def test_a_capability_written_as_a_number_is_no_boolean(ws, rook_cli, value):
    """§3: capabilities (multi_turn, calls, usage) are booleans, validated with
    the file and field path. ``calls: 1`` was taken as true (Python's 1 == True),
    so a number declared a capability the profile never showed, and made a
    scenario needing it runnable; ``0`` declared it false, silently."""
    ws.profile(f"id: p\nhooks: {{execute: scripts/h.sh}}\ncapabilities: {{calls: {value}}}\n")
    ws.scenario({"id": "nc", "goal": "g", "criteria": [{"not_called": "cancel"}]})
    refused(rook_cli("run"), ws, "p.yaml", "capabilities.calls: not a valid boolean", "true or false")


def test_a_scenario_flag_written_as_a_number_is_no_boolean(ws, rook_cli):
    """The same field type in a scenario: ``excluded: 1`` excluded it."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh"}})
    ws.scenario({"id": "x", "goal": "g", "excluded": 1, "criteria": [{"contains": "ok"}]})
    refused(rook_cli("run"), ws, "x.yaml", "excluded: not a valid boolean", "true or false")


@pytest.mark.parametrize(
    "name",
    [
        "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",  # a GitHub token
        "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",  # a Stripe key
        "AKIA" + "IOSFODNN7EXAMPLE",  # an AWS access key id
    ],
)
def test_an_env_variable_named_by_a_secret_is_refused_without_showing_it(ws, rook_cli, name):
    """§3: env holds a variable and its purpose, and no field can hold a secret
    value. A key pasted as the variable's name (it is shaped like a name) was
    accepted, then printed in the list of missing variables and in the
    ``export`` line to run, on every run."""
    ws.profile(
        {
            "id": "p",
            "hooks": {"execute": "scripts/h.sh"},
            "env": [{"variable": name, "purpose": "the API token"}],
        }
    )
    for args in (["run"], ["profile", "test"], ["profile", "show", "p"]):
        r = rook_cli(*args)
        refused(r, ws, "p.yaml", "env.0.variable", "shaped like a credential")
        assert name not in r.stdout + r.stderr, args


# -- §3 scripts by extension and §5 observed capabilities, together ------------

FIVE_LANGUAGES = {
    # one hook per phase, none executable: each started by its extension
    "prepare.mjs": """
        import fs from 'fs';
        fs.appendFileSync(process.env.LOG, `mjs ${process.argv[2]}\\n`);
    """,
    "open.py": """
        import json, os, sys
        with open(os.environ["LOG"], "a") as f:
            f.write(f"py {sys.argv[1]} {sys.executable}\\n")
        print(json.dumps({"conversation": "from-open"}))
    """,
    "execute.sh": """
        echo "sh $1 $ROOK_TURN $ROOK_CONVERSATION" >> "$LOG"
        goal=$(cat)
        echo "{\\"output\\": \\"ok $goal\\", \\"conversation\\": \\"c$ROOK_TURN\\", \\"usage\\": {\\"input\\": 0, \\"output\\": 0}}"
    """,
    "close.cjs": """
        require('fs').appendFileSync(process.env.LOG, `cjs ${process.argv[2]} ${process.env.ROOK_CONVERSATION}\\n`);
    """,
    "collect.js": """
        require('fs').appendFileSync(process.env.LOG, `js ${process.argv[2]}\\n`);
        console.log(JSON.stringify({calls: []}));
    """,
}


def test_capabilities_a_profile_test_observed_make_a_run_of_five_languages_runnable(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """§3: scripts not executable start by extension (.mjs .cjs .js node, .py the
    running Python, .sh bash), in every phase. §5: a scenario needing a
    capability never declared nor observed is not_runnable before any hook runs,
    for each of the three; ``rook profile test`` observes them (a handle from
    open, zero token counts, ``calls: []`` from collect) and records them for the
    profile, so the same scenario then runs, and passes on evidence."""
    import sys

    ws = rook_workspace
    log = tmp_path / "log"
    monkeypatch.setenv("LOG", str(log))
    for name, body in FIVE_LANGUAGES.items():
        ws.script(name, body, executable=False)
    phases = ("prepare", "open", "execute", "close", "collect")
    hooks = {p: f"scripts/{n}" for p in phases for n in FIVE_LANGUAGES if n.startswith(p)}
    ws.profile({"id": "p", "hooks": hooks})
    ws.scenario(
        {
            "id": "all-three",
            "turns": ["one", "two"],
            "criteria": [{"contains": "ok two"}, {"not_called": "refund"}, {"max_tokens": 10}],
        }
    )
    r = rook_cli("run", "--json")
    assert r.statuses() == {"all-three": "not_runnable"}, r.stderr
    reason = r.report["scenarios"][0]["reason"]
    for cap in ("multi_turn", "calls", "usage"):
        assert f"needs capability '{cap}'" in reason, reason
    assert not log.exists(), "a hook ran for a scenario that was not runnable"

    t = rook_cli("profile", "test", "--json")
    assert t.exit_code == 0, (t.stdout, t.stderr)
    doc = json.loads(t.stdout)
    assert doc["test"]["observed"] == {"multi_turn": True, "usage": True, "calls": True}
    verdicts = {c["capability"]: c["verdict"] for c in doc["capabilities"]}
    assert verdicts == dict.fromkeys(("multi_turn", "calls", "usage"), "unclaimed"), verdicts
    observed = json.loads((ws.agent_dir / "profiles" / "p.observed.json").read_text())
    assert observed == {"multi_turn": True, "usage": True, "calls": True}

    log.unlink()
    r = rook_cli("run", "--json")
    assert r.statuses() == {"all-three": "passed"}, r.report["scenarios"][0]["reason"]
    assert r.report["run"]["capabilities"] == {
        "declared": {},
        "observed": {"multi_turn": True, "usage": True, "calls": True},
    }
    assert log.read_text().splitlines() == [
        "mjs prepare",
        f"py open {sys.executable}",
        "sh execute 1 from-open",
        "sh execute 2 c1",
        "cjs close c2",
        "js collect",
    ]


def test_a_profile_renamed_on_disk_keeps_its_runs_observations_and_resume(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """§3: id is a stable slug; runs pin it, so renaming never orphans history.
    The file renamed and its ``name`` edited by hand (not with ``rook profile
    rename``) between a split run's halves, with another profile active: the run
    resumes with the pinned profile, ``rook runs`` finds it by the new name and
    by the id, ``rook diff`` compares it with a later run, and what it observed
    still makes a scenario needing it runnable."""
    ws = rook_workspace
    log = tmp_path / "log"
    monkeypatch.setenv("LOG", str(log))
    ws.script(
        "agent.sh",
        """
        #!/bin/bash
        echo "$PROFILE $1" >> "$LOG"
        case "$1" in
          execute) cat >/dev/null; echo '{"output": "ok", "calls": []}' ;;
          collect) echo '{"trace": "t1"}' ;;
        esac
        exit 0
        """,
    )
    hooks = {"execute": "scripts/agent.sh", "collect": "scripts/agent.sh"}
    ws.profile({"id": "stg", "name": "Staging", "hooks": hooks, "hook_env": {"PROFILE": "stg"}},
               name="staging", active=False)
    ws.profile({"id": "other", "hooks": hooks, "hook_env": {"PROFILE": "other"}})
    ws.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "ok"}]})
    ws.scenario({"id": "nc", "goal": "g", "criteria": [{"not_called": "refund"}]})
    first = rook_cli("run", "--json", "--profile", "Staging", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr
    run_id = first.report["run"]["id"]
    assert first.statuses() == {"s": "pending", "nc": "not_runnable"}

    old = ws.agent_dir / "profiles" / "staging.yaml"
    new = ws.agent_dir / "profiles" / "production.yaml"
    new.write_text(old.read_text().replace("name: Staging", "name: Production"))
    old.unlink()

    log.unlink()
    resumed = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.statuses() == {"s": "passed", "nc": "not_runnable"}
    assert log.read_text().splitlines() == ["stg collect"]  # the pinned profile, not the active
    assert resumed.report["run"]["profile"]["id"] == "stg"

    second = rook_cli("run", "--json", "--profile", "Production")
    assert second.statuses() == {"s": "passed", "nc": "passed"}, second.stderr  # calls seen before
    second_id = second.report["run"]["id"]
    for name in ("Production", "stg", "production"):
        listed = rook_cli("runs", "--json", "--profile", name)
        assert listed.exit_code == 0, (name, listed.stderr)
        assert [x["id"] for x in json.loads(listed.stdout)["runs"]] == [second_id, run_id], name
    diff = rook_cli("diff", "--json", run_id, second_id)
    assert diff.exit_code == 0, diff.stderr
    assert "nc" in diff.stdout and "Traceback" not in diff.stderr


@pytest.mark.parametrize(
    "entry, needle",
    [
        (
            {"script": "scripts/h.sh", "http": {"url": "http://127.0.0.1:9/"}},
            "hooks.execute: needs exactly one transport key (one of: ",
        ),
        ({"timeout_seconds": 5, "delay_seconds": 1}, "found none (only timeout_seconds, delay_seconds)"),
    ],
)
def test_a_hook_entry_without_exactly_one_transport_key_names_what_it_found(
    ws, rook_cli, entry, needle
):
    """§3: a mapping entry has exactly one transport key. With two, the message
    said only "found 2", leaving the user to work out which two; it names them."""
    ws.profile({"id": "p", "hooks": {"execute": entry}})
    r = rook_cli("run")
    refused(r, ws, "p.yaml", needle)
    if len(entry) == 2 and "script" in entry:
        assert "found 2: script, http" in r.stderr, r.stderr


def test_profile_test_json_flags_an_optimistic_claim_and_an_undeclared_observation(
    rook_workspace, rook_cli
):
    """§5: ``rook profile test`` shows the extracted answer and the observed
    capabilities, and flags every declared capability not observed and every
    observed one not declared: in its --json document too, where a tool reads
    the verdicts; an optimistic claim fails the test (exit 1)."""
    ws = rook_workspace
    ws.script(
        "agent.sh",
        """
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat >/dev/null
        echo '{"output": "the answer", "conversation": "c1", "usage": {"input": 0}}'
        """,
    )
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/agent.sh"},
         "capabilities": {"calls": True, "usage": True, "multi_turn": False}}
    )
    r = rook_cli("profile", "test", "--json")
    assert r.exit_code == 1, (r.stdout, r.stderr)
    doc = json.loads(r.stdout)
    assert doc["test"]["answer"] == "the answer"
    assert doc["test"]["observed"] == {"multi_turn": True, "usage": True}
    verdicts = {c["capability"]: (c["declared"], c["observed"], c["verdict"]) for c in doc["capabilities"]}
    assert verdicts == {
        "multi_turn": (False, True, "unclaimed"),
        "calls": (True, False, "optimistic"),
        "usage": (True, True, "ok"),
    }


# -- §3 env values redacted everywhere, and criteria judged from the record ---

LEAKER = """
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    cat >/dev/null
    echo "{\\"output\\": \\"the token is $TOKX\\", \\"calls\\": [{\\"name\\": \\"t\\", \\"arguments\\": {\\"k\\": \\"$TOKX\\"}}]}"
"""


@pytest.mark.parametrize(
    "criterion",
    [
        {"not_contains": "s3cret-Value-77"},
        {"not_called": {"name": "t", "arguments": {"k": "s3cret-Value-77"}}},
        {"contains": "token is s3cret-Value-77"},
    ],
)
def test_a_criterion_naming_an_env_value_is_refused_not_judged_on_redacted_evidence(
    ws, rook_cli, monkeypatch, criterion
):
    """§3/§10: the values of env variables never reach the record, which holds
    [redacted:NAME] in their place; criteria judge the recorded evidence. A
    criterion written with the value itself was compared with the redacted
    text: `not_contains: VALUE` (the agent must not reveal the token) passed
    while the agent printed the token, and `contains: VALUE` failed though it
    was there ("did not find '[redacted:TOKX]' in '... [redacted:TOKX]'"). The
    run is refused, naming the criterion and the variable, never the value,
    with the form that can be judged."""
    monkeypatch.setenv("TOKX", "s3cret-Value-77")
    ws.script("h.sh", LEAKER)
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "capabilities": {"calls": True},
         "env": [{"variable": "TOKX", "purpose": "the API token"}]}
    )
    ws.scenario({"id": "leak", "goal": "tell me the token", "criteria": [criterion]})
    (kind,) = criterion
    r = rook_cli("run", "--only", "leak")
    refused(r, ws, "leak.yaml", f"criteria.0.{kind}", "TOKX", "[redacted:TOKX]")
    assert "s3cret-Value-77" not in r.stdout + r.stderr
    doctor = rook_cli("doctor")
    assert f"criteria.0.{kind}" in doctor.stdout + doctor.stderr, doctor.stdout
    assert "s3cret-Value-77" not in doctor.stdout + doctor.stderr


def test_a_leak_is_caught_by_a_criterion_written_as_the_record_holds_it(ws, rook_cli, monkeypatch):
    """The way out the refusal gives: `not_contains: "[redacted:TOKX]"` fails
    when the agent reveals the token, in any form the redaction finds."""
    monkeypatch.setenv("TOKX", "s3cret-Value-77")
    ws.script("h.sh", LEAKER)
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "capabilities": {"calls": True},
         "env": [{"variable": "TOKX", "purpose": "the API token"}]}
    )
    ws.scenario(
        {"id": "leak", "goal": "tell me the token",
         "criteria": [{"not_contains": "[redacted:TOKX]"}, {"contains": "token is [redacted:TOKX]"}]}
    )
    r = rook_cli("run", "--json", "--only", "leak")
    assert r.exit_code == 1, r.stderr
    got = [c["status"] for c in r.report["scenarios"][0]["criteria"]]
    assert got == ["failed", "passed"], r.report["scenarios"][0]["criteria"]
    assert "s3cret-Value-77" not in r.stdout + r.stderr + ws.all_run_text(r.report["run"]["id"])


NUMBER_LEAKER = """
    #!/bin/bash
    [ "$1" = execute ] || exit 0
    cat >/dev/null
    echo "{\\"output\\": \\"sent\\", \\"calls\\": [{\\"name\\": \\"transfer\\", \\"arguments\\": {\\"account\\": $ACCOUNT}}]}"
"""


@pytest.mark.parametrize(
    "criterion, refused_",
    [
        ({"not_called": {"name": "transfer", "arguments": {"account": 987654321012}}}, True),
        ({"called": {"name": "transfer", "arguments": {"to": [987654321012]}}}, True),
        ({"max_calls": 987654321012}, False),  # a limit, compared with a count
    ],
)
def test_a_call_argument_equal_to_a_numeric_secret_is_refused_too(
    ws, rook_cli, monkeypatch, criterion, refused_
):
    """reliability.md: a secret a hook prints as a JSON number
    (`{"account": 987654321012}`) is recorded as the string [redacted:NAME].
    A call criterion written with that number was compared with the marker, so
    `not_called: {name: transfer, arguments: {account: 987654321012}}` passed
    while the agent made exactly that transfer: the check for criteria holding
    a secret looked at texts only. A number in a call's arguments is refused as
    a text is; a number that is the criterion's whole value (max_calls) is a
    limit and runs."""
    monkeypatch.setenv("ACCOUNT", "987654321012")
    ws.script("h.sh", NUMBER_LEAKER)
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "capabilities": {"calls": True},
         "env": [{"variable": "ACCOUNT", "purpose": "the account number"}]}
    )
    ws.scenario({"id": "pay", "goal": "pay", "criteria": [criterion]})
    (kind,) = criterion
    r = rook_cli("run", "--json", "--only", "pay")
    if refused_:
        refused(r, ws, "pay.yaml", f"criteria.0.{kind}", "ACCOUNT", '"[redacted:ACCOUNT]"')
        assert "987654321012" not in r.stdout + r.stderr
    else:
        assert r.exit_code == 0, r.stderr


def test_a_regular_expression_holding_a_secret_is_told_its_escaped_form(ws, rook_cli, monkeypatch):
    """The refusal says how to write the criterion as the record holds it. For
    a regular expression (matches, not_matches, claim's says) it said
    `not_matches: "token is [redacted:TOKX]"`, where [...] is a character class:
    following it, not_matches failed on any answer holding an e or a t, leak or
    not. It gives the marker escaped, which matches the marker alone."""
    import yaml

    monkeypatch.setenv("TOKX", "s3cret-Value-77")
    ws.script("h.sh", LEAKER)
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/h.sh"}, "capabilities": {"calls": True},
         "env": [{"variable": "TOKX", "purpose": "the API token"}]}
    )
    ws.scenario({"id": "leak", "goal": "g", "criteria": [{"not_matches": "token is s3cret-Value-77"}]})
    r = rook_cli("run", "--only", "leak")
    refused(r, ws, "leak.yaml", "criteria.0.not_matches", "TOKX")
    told = yaml.safe_load(r.stderr.rsplit("not_matches: ", 1)[1].strip())
    assert told == "token is \\[redacted:TOKX\\]", told
    ws.scenario({"id": "leak", "goal": "g", "criteria": [{"not_matches": told}]})
    ws.scenario({"id": "quiet", "goal": "g", "criteria": [{"not_matches": "no \\[redacted:TOKX\\]"}]})
    leaked = rook_cli("run", "--json")
    assert leaked.statuses() == {"leak": "failed", "quiet": "passed", "s": "passed"}, leaked.stderr


def test_a_criterion_edited_to_hold_a_secret_is_refused_on_resume_too(ws, rook_cli, monkeypatch):
    """A resumed run judges the scenario files as they are now ('checked as a new
    run's are'), but the check for a criterion holding an env value ran for a new
    run only: a split run whose scenario was edited to `not_contains: VALUE`
    before its judge phase passed it, while the agent had printed the token. The
    resume is refused as the new run is, nothing judged, the records untouched."""
    monkeypatch.setenv("TOKX", "s3cret-Value-77")
    ws.script("h.sh", LEAKER)
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": "scripts/h.sh"},
         "capabilities": {"calls": True},
         "env": [{"variable": "TOKX", "purpose": "the API token"}]}
    )
    ws.scenario({"id": "leak", "goal": "g", "criteria": [{"contains": "token"}]})
    first = rook_cli("run", "--json", "--only", "leak", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr
    run_id = first.report["run"]["id"]
    before = {p: p.read_bytes() for p in ws.run_dir(run_id).rglob("*") if p.is_file()}
    ws.scenario({"id": "leak", "goal": "g", "criteria": [{"not_contains": "s3cret-Value-77"}]})
    r = rook_cli("run", "--run", run_id, "--phases", "collect,judge")
    assert r.exit_code == 2, (r.exit_code, r.stderr)
    assert "leak.yaml" in r.stderr and "criteria.0.not_contains" in r.stderr, r.stderr
    assert "s3cret-Value-77" not in r.stdout + r.stderr
    after = {p: p.read_bytes() for p in ws.run_dir(run_id).rglob("*") if p.is_file()}
    assert after == before


def test_a_run_whose_profile_id_was_edited_since_says_so(ws, rook_cli):
    """§3: runs pin the id, which is made once. With the id edited in the file
    since the run, resuming it said "--run X was made with profile 'p', not
    'p2'", where p2 is no profile the user named (the file p.yaml, found by its
    name): it names the file, the id it holds now, and what to put back."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": "scripts/h.sh"}})
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr
    path = ws.agent_dir / "profiles" / "p.yaml"
    path.write_text(path.read_text().replace("id: p\n", "id: p2\n"))
    (ws.agent_dir / "profiles" / "active").write_text("p2")
    ws.mark.unlink()
    r = rook_cli("run", "--run", first.report["run"]["id"], "--phases", "collect,judge")
    refused(r, ws, "was made with profile 'p'", f"{path} holds id 'p2' now", "id: p", runs=1)


@pytest.mark.parametrize("calls, observed, status", [("[]", True, "passed"), ("null", False, "unverifiable")])
def test_calls_empty_is_evidence_and_calls_null_is_none(rook_workspace, rook_cli, calls, observed, status):
    """§4/§5: `calls: []` means observed no calls and shows the capability;
    `calls: null`, like a missing `calls`, could not observe: no capability,
    and a declared one's `not_called` is unverifiable, never a pass."""
    ws = rook_workspace
    ws.script(
        "agent.sh",
        f"""
        #!/bin/bash
        [ "$1" = execute ] || exit 0
        cat >/dev/null
        echo '{{"output": "ok", "calls": {calls}}}'
        """,
    )
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "capabilities": {"calls": True}})
    ws.scenario({"id": "nc", "goal": "g", "criteria": [{"not_called": "refund"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"nc": status}, r.report["scenarios"][0]["reason"]
    assert r.report["run"]["capabilities"]["observed"] == ({"calls": True} if observed else {})


def test_a_split_run_resumed_without_its_env_stops_before_its_hooks(ws, rook_cli, monkeypatch):
    """§3: every env variable must be set before a run, else it stops before
    prepare listing each missing one with its purpose. A run finished in a later
    invocation (`--run ID --phases collect,judge`) is held to it too: nothing
    runs, and the run's files are left as they were, to finish once it is set."""
    ws.profile(
        {"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": "scripts/h.sh"},
         "env": [{"variable": "TOKX", "purpose": "the API token"},
                 {"variable": "BASE", "purpose": "the API's base URL"}]}
    )
    monkeypatch.setenv("TOKX", "tok-value-1")
    monkeypatch.setenv("BASE", "http://127.0.0.1:9")
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    assert first.exit_code == 0, first.stderr
    run_id = first.report["run"]["id"]
    before = {p: p.read_bytes() for p in ws.run_dir(run_id).rglob("*") if p.is_file()}
    ws.mark.unlink()
    monkeypatch.delenv("TOKX")
    monkeypatch.setenv("BASE", "")
    r = rook_cli("run", "--run", run_id, "--phases", "collect,judge")
    refused(r, ws, "TOKX: the API token\n", "BASE: the API's base URL (set, but empty)\n", runs=1)
    after = {p: p.read_bytes() for p in ws.run_dir(run_id).rglob("*") if p.is_file()}
    assert after == before
    monkeypatch.setenv("TOKX", "tok-value-1")
    monkeypatch.setenv("BASE", "http://127.0.0.1:9")
    done = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert done.statuses() == {"s": "passed"}, done.stderr


def test_hook_env_and_empty_texts_are_named_by_the_file_s_own_field_paths(ws, rook_cli):
    """§3: an invalid file is refused with the field path and what was expected.
    A hook_env entry was named by marshmallow's internals, `hook_env.PORT.value`,
    `hook_env.1X.key`, and an empty name `hook_env..key`; an empty `name`,
    `purpose` or `inherit_env` item said "Shorter than minimum length 1.", and a
    purpose of blanks, which says nothing when the variable is missing, passed."""
    ws.profile(
        'id: p\nname: ""\nhooks: {execute: scripts/h.sh}\n'
        'env: [{variable: A, purpose: ""}, {variable: B, purpose: "   "}]\n'
        'hook_env: {PORT: 8080, "1X": a, "": b, "a\\\\b": c}\ninherit_env: [""]\n'
    )
    r = rook_cli("run")
    refused(
        r, ws,
        "  name: must not be empty (leave name out to use the id)\n",
        "  env.0.purpose: must say what the variable is for (shown when it is not set)\n",
        "  env.1.purpose: must say what the variable is for (shown when it is not set)\n",
        '  hook_env.PORT: must be text, as an environment variable holds: quote it ("8080")\n',
        "  hook_env.'1X': not a variable name: letters, digits and _, not starting with a digit\n",
        "  hook_env.'': not a variable name: letters, digits and _, not starting with a digit\n",
        "  hook_env.'a\\b': not a variable name",  # as written, not as repr() escapes it
        "  inherit_env.0: must not be empty: a variable name or pattern, e.g. PATH\n",
    )
    assert ".key:" not in r.stderr and ".value:" not in r.stderr and "minimum length" not in r.stderr


def test_a_run_whose_profile_file_is_gone_says_the_run_keeps_a_copy(ws, rook_cli):
    """§3/§10: runs pin the profile's id and keep a copy of the profile used.
    With the file removed since, finishing the run said only "profile 'p' not
    found in ... (profiles: other)": it says the run keeps a copy, and how to put
    it back."""
    ws.profile({"id": "p", "hooks": {"execute": "scripts/h.sh", "collect": "scripts/h.sh"}})
    ws.profile({"id": "other", "hooks": {"execute": "scripts/h.sh"}}, active=False)
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    run_id = first.report["run"]["id"]
    (ws.agent_dir / "profiles" / "p.yaml").unlink()
    ws.mark.unlink()
    r = rook_cli("run", "--run", run_id, "--phases", "collect,judge")
    copy = ws.run_dir(run_id) / "profile.yaml"
    refused(r, ws, "profile 'p' not found", f"the run keeps the one it started with: {copy}",
            f"cp {copy} {ws.agent_dir / 'profiles' / 'p.yaml'}", runs=1)
    assert "[hidden]" not in r.stderr  # the copy holds the file as it was


def test_a_run_whose_profile_with_a_literal_credential_is_gone_says_to_put_it_back(ws, rook_cli):
    """The copy a run keeps hides a credential written in the file (hook_env's
    API_TOKEN here), so the cp that puts the file back says to restore it too."""
    hooks = {"execute": "scripts/h.sh", "collect": "scripts/h.sh"}
    ws.profile({"id": "p", "hooks": hooks, "hook_env": {"API_TOKEN": "plain-token-4411"}})
    ws.profile({"id": "other", "hooks": {"execute": "scripts/h.sh"}}, active=False)
    first = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    run_id = first.report["run"]["id"]
    copy = ws.run_dir(run_id) / "profile.yaml"
    assert "plain-token-4411" not in copy.read_text(), copy.read_text()
    (ws.agent_dir / "profiles" / "p.yaml").unlink()
    ws.mark.unlink()
    r = rook_cli("run", "--run", run_id, "--phases", "collect,judge")
    refused(r, ws, f"cp {copy} {ws.agent_dir / 'profiles' / 'p.yaml'}, then put back the "
            "credentials it shows as [hidden])", runs=1)
