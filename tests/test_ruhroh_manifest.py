"""ruhroh-run-manifest.json: the latest result first, then the RUHROH_* fallbacks, no secrets."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from test_ruhroh import BASH, PY, ruhroh_profile

FALLBACKS = {
    "RUHROH_RUN_AGENT_ADAPTER_VERSION": "0.0.1-env",
    "RUHROH_AGENT_PROVIDER": "env-provider",
    "RUHROH_AGENT_MODEL": "env-model",
    "RUHROH_AGENT_MODEL_VERSION": "env-version",
    "RUHROH_AGENT_PROMPT_VERSION": "env-prompt",
    "RUHROH_RUN_SEED": "42",
    "RUHROH_RETRY_POLICY": "once",
    "RUHROH_COST_USD": "9.5",
    "RUHROH_INPUT_TOKENS": "1",
    "RUHROH_OUTPUT_TOKENS": "2",
    "RUHROH_TOTAL_TOKENS": "3",
}


def manifest(r) -> dict:
    path = Path(r.report["run"]["dir"]) / "ruhroh-run-manifest.json"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def fallbacks(monkeypatch):
    for k, v in FALLBACKS.items():
        monkeypatch.setenv(k, v)


def test_result_values_take_precedence_over_env_fallbacks(
    fallbacks, rook_workspace, rook_cli, monkeypatch
):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "full"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "python"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["adapterVersion"] == "1.4.0"
    assert m["model"] == {
        "provider": "example",
        "model": "agent-model",
        "version": "2026-07-07",
        "promptVersion": "adapter-prompt-v3",
    }
    assert m["usage"] == {
        "costUsd": 0.42,
        "inputTokens": 1200,
        "outputTokens": 800,
        "totalTokens": 2000,
    }
    assert m["sources"]["adapterVersion"] == "result"
    assert m["sources"]["usage.costUsd"] == "result"
    # Fallbacks without a result value are used, and every present one is written as is.
    assert m["runSeed"] == "42" and m["retryPolicy"] == "once"
    assert m["sources"]["runSeed"] == "env:RUHROH_RUN_SEED"
    assert m["environment"] == FALLBACKS
    assert m["adapterId"] == "rr" and m["runId"] == r.report["run"]["id"]


def test_env_fallbacks_fill_what_the_result_lacks(fallbacks, rook_workspace, rook_cli):
    # The bash wrapper reports usage only: adapterVersion and model come from the environment.
    ruhroh_profile(rook_workspace, BASH)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["adapterVersion"] == "0.0.1-env"
    assert m["model"] == {
        "provider": "env-provider",
        "model": "env-model",
        "version": "env-version",
        "promptVersion": "env-prompt",
    }
    assert m["sources"]["model.model"] == "env:RUHROH_AGENT_MODEL"
    assert m["usage"] == {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "costUsd": 0.01}


def test_env_only_manifest(fallbacks, rook_workspace, rook_cli):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "transcript_answer"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "thinking"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["usage"] == {"costUsd": 9.5, "inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
    assert m["adapterVersion"] == "0.0.1-env"


def test_a_usage_fallback_that_is_no_count_is_said_and_left_out_of_usage(
    monkeypatch, rook_workspace, rook_cli
):
    # RUHROH_COST_USD=abc was written as usage.costUsd "abc" (a report summing the
    # manifests' costs breaks on it) and nothing said so
    monkeypatch.setenv("RUHROH_COST_USD", "abc")
    monkeypatch.setenv("RUHROH_INPUT_TOKENS", "-5")
    monkeypatch.setenv("RUHROH_OUTPUT_TOKENS", "7")
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "transcript_answer"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "thinking"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["usage"] == {"outputTokens": 7}
    assert m["environment"]["RUHROH_COST_USD"] == "abc"  # as it was, as every fallback
    assert "usage.costUsd" not in m["sources"] and "usage.inputTokens" not in m["sources"]
    for variable, value in (("RUHROH_COST_USD", "abc"), ("RUHROH_INPUT_TOKENS", "-5")):
        assert (
            f"rook: warning: {variable}={value!r} is no count (a number, not negative): "
            "ruhroh-run-manifest.json keeps it under environment only"
        ) in r.stderr, r.stderr
        assert r.stderr.count(f"{variable}={value!r}") == 1, r.stderr


def test_the_declared_continuity_is_recorded_when_no_scenario_ran(rook_workspace, rook_cli):
    # a workspace_only wrapper and a scenario of two turns: not runnable, no call made;
    # the manifest, begun at the start of the run, did not record the declared level
    ruhroh_profile(rook_workspace, PY, continuity="workspace_only")
    rook_workspace.scenario({"id": "s", "turns": ["a", "b"], "criteria": [{"contains": "x"}]})
    r = rook_cli("run", "--json")
    assert r.statuses() == {"s": "not_runnable"}, r.stderr + r.stdout
    assert manifest(r)["continuity"] == "workspace_only"


def test_the_latest_result_wins(rook_workspace, rook_cli):
    ruhroh_profile(
        rook_workspace,
        PY,
        hook_env={"WRAPPER_MODE": "full", "WRAPPER_VERSION_SUFFIX": "-SCENARIO"},
    )
    for sid in ("a", "b"):
        rook_workspace.scenario({"id": sid, "goal": "g", "criteria": [{"contains": "python"}]})
    r = rook_cli("run", "--json", "--concurrency", "1")
    assert r.exit_code == 0, r.stderr + r.stdout
    last = r.report["scenarios"][-1]["id"]
    assert manifest(r)["adapterVersion"] == f"1.4.0-{last}"


def test_the_usage_is_the_latest_results_whole_never_summed_nor_mixed(rook_workspace, rook_cli):
    # "Ruhroh copies ... usage from the latest command result": the manifest's usage is
    # that one result's, whole (a cost only an earlier call reported is not beside it),
    # while each turn's usage in the record is its own calls' summed
    wrapper = rook_workspace.script(
        "usage-turns.sh",
        """
        #!/bin/bash
        if [ "$RUHROH_ITERATION" = 1 ]; then
          echo '{"status": "continue", "sessionHandle": "h", "usage": {"inputTokens": 100, "costUsd": 0.5}}'
        else
          echo '{"status": "goal_satisfied", "usage": {"inputTokens": 10}}'
        fi
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario(
        {"id": "s", "turns": ["a", "b"], "criteria": [{"status": "goal_satisfied"}]}
    )
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    turns = r.report["scenarios"][0]["turns"]
    assert [t["usage"] for t in turns] == [{"input": 100, "cost_usd": 0.5}, {"input": 10}]
    m = manifest(r)
    assert m["usage"] == {"inputTokens": 10} and m["latest"]["usage"] == {"inputTokens": 10}
    assert m["sources"] == {"usage.inputTokens": "result"}


def test_the_latest_result_that_reported_them_within_a_turn(rook_workspace, rook_cli):
    # one turn, three iterations: the first two report metadata, the last reports none
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "quiet_last"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert len(r.report["scenarios"][0]["turns"][0]["evidence"]["iterations"]) == 3
    m = manifest(r)
    assert m["adapterVersion"] == "1.4.2" and m["sources"]["adapterVersion"] == "result"
    assert m["model"]["model"] == "agent-model"
    assert m["usage"]["costUsd"] == 0.42


def test_a_resumed_run_keeps_the_result_values(fallbacks, rook_workspace, rook_cli):
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "full"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "python"}]})
    r = rook_cli("run", "--json", "--phases", "prepare,open,execute,close")
    run_id = r.report["run"]["id"]
    r2 = rook_cli("run", "--json", "--run", run_id, "--phases", "collect,judge")
    assert r2.exit_code == 0, r2.stderr + r2.stdout
    m = manifest(r2)
    assert m["adapterVersion"] == "1.4.0" and m["model"]["model"] == "agent-model"


def test_a_resume_that_calls_no_wrapper_keeps_the_fallbacks_the_wrappers_saw(
    rook_workspace, rook_cli, monkeypatch
):
    # rook run --run ID with nothing left to run (or only collect and judge) wrote
    # the manifest again from its own environment: the runSeed and model version
    # every wrapper of the run had seen were dropped, and a variable set only for
    # the resume was recorded though no wrapper saw it
    ruhroh_profile(rook_workspace, BASH)
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    monkeypatch.setenv("RUHROH_RUN_SEED", "42")
    monkeypatch.setenv("RUHROH_AGENT_MODEL_VERSION", "v-run")
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    before = manifest(r)
    assert before["runSeed"] == "42" and before["model"]["version"] == "v-run"
    monkeypatch.delenv("RUHROH_RUN_SEED")
    monkeypatch.setenv("RUHROH_AGENT_MODEL_VERSION", "v-resume")
    r2 = rook_cli("run", "--json", "--run", r.report["run"]["id"])
    assert r2.exit_code == 0, r2.stderr + r2.stdout
    after = manifest(r2)
    assert after["environment"] == before["environment"] == {
        "RUHROH_RUN_SEED": "42",
        "RUHROH_AGENT_MODEL_VERSION": "v-run",
    }
    assert after["runSeed"] == "42" and after["model"]["version"] == "v-run"


def test_no_secret_value_is_copied(rook_workspace, rook_cli, monkeypatch):
    monkeypatch.setenv("AGENT_TOKEN", "tok-7f3a9c")
    monkeypatch.setenv("RUHROH_AGENT_PROVIDER", "provider-secret-81")
    monkeypatch.setenv("RUHROH_RETRY_POLICY", "twice")
    ruhroh_profile(
        rook_workspace,
        PY,
        hook_env={"WRAPPER_MODE": "secret"},
        env=[
            {"variable": "AGENT_TOKEN", "purpose": "API token"},
            {"variable": "RUHROH_AGENT_PROVIDER", "purpose": "a provider account, secret here"},
        ],
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "token"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    path = Path(r.report["run"]["dir"]) / "ruhroh-run-manifest.json"
    text = path.read_text(encoding="utf-8")
    assert "tok-7f3a9c" not in text and "provider-secret-81" not in text
    m = json.loads(text)
    assert m["model"]["model"] == "model-[redacted:AGENT_TOKEN]"
    assert m["environment"] == {"RUHROH_RETRY_POLICY": "twice"}
    assert m["model"]["provider"] == "example"  # the result's own value, not the secret fallback


def test_a_run_id_holding_a_secrets_value_is_kept_in_the_manifest(
    rook_workspace, rook_cli, monkeypatch
):
    # a secret PIN 2026 is in every run id made that year: the run record keeps the
    # id, but the manifest said "runId": "[redacted:PIN]1205-..." (and runRoot too),
    # naming no run
    monkeypatch.setenv("PIN", time.strftime("%Y", time.gmtime()))  # a run id's first word
    ruhroh_profile(rook_workspace, BASH, env=[{"variable": "PIN", "purpose": "a PIN"}])
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    run_dir = Path(r.report["run"]["dir"])
    m = manifest(r)
    assert m["runId"] == run_dir.name == r.report["run"]["id"], m
    assert m["runRoot"] == str(run_dir)


def test_merge_writes_the_manifest_from_the_shards(rook_workspace, rook_cli, tmp_path, monkeypatch):
    """`rook merge` of shards run on two machines: the merged run has the manifest,
    with the latest result's values (the shard that ran last) and the fallbacks."""
    from rook_core.testing import Workspace

    monkeypatch.setenv("RUHROH_RUN_SEED", "42")
    ws = rook_workspace
    ruhroh_profile(
        ws, PY, hook_env={"WRAPPER_MODE": "full", "WRAPPER_VERSION_SUFFIX": "-SCENARIO"}
    )
    for sid in ("a", "b", "c", "d"):
        ws.scenario({"id": sid, "goal": sid, "criteria": [{"status": "goal_satisfied"}]})
    machines = []
    for i in (1, 2):
        shutil.copytree(ws.root, tmp_path / f"m{i}")
        machines.append(Workspace(tmp_path / f"m{i}"))
    for i, m in enumerate(machines, start=1):
        r = rook_cli("run", "-w", str(m.root), "--shard", f"{i}/2", "--run-name", "rr-1", "--json")
        assert r.exit_code == 0, r.stderr
    dirs = [m.run_dir("rr-1") for m in machines]
    last = json.loads((dirs[1] / "ruhroh-run-manifest.json").read_text())
    merged = rook_cli("merge", "-w", str(ws.root), *map(str, dirs), "--json")
    assert merged.exit_code == 0, merged.stderr
    assert "RUHROH_RUN_SEED" not in merged.stderr, merged.stderr  # one seed: no word
    run_dir = ws.run_dir("rr-1")
    m = json.loads((run_dir / "ruhroh-run-manifest.json").read_text())
    assert m["adapterVersion"] == last["adapterVersion"]  # the latest result's
    assert m["adapterVersion"].startswith("1.4.0-")
    assert m["runId"] == "rr-1" and m["runRoot"] == str(run_dir) and m["adapterId"] == "rr"
    assert m["model"]["model"] == "agent-model"
    assert m["usage"] == {
        "costUsd": 0.42,
        "inputTokens": 1200,
        "outputTokens": 800,
        "totalTokens": 2000,
    }
    assert m["runSeed"] == "42" and m["sources"]["runSeed"] == "env:RUHROH_RUN_SEED"
    assert m["environment"] == {"RUHROH_RUN_SEED": "42"}
    assert m["merged"]["from"] == [str(d) for d in dirs]


def test_merge_of_shards_run_with_different_run_seeds_says_so(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    """Shards on two machines run with different RUHROH_RUN_SEEDs (a CI variable
    set per job): each shard's scenario runs were seeded from its own, and the
    merged manifest's runSeed is the last shard's alone, so the merged run could
    not be reproduced from it, without a word (a shard joining a run in one
    directory with another seed is warned of, as a resume is). rook merge says so
    now, naming each seed, and merges as before (shards of one seed merge quietly: the test above)."""
    from rook_core.testing import Workspace

    ws = rook_workspace
    ruhroh_profile(ws, PY, hook_env={"WRAPPER_MODE": "full"})
    for sid in ("a", "b", "c", "d"):
        ws.scenario({"id": sid, "goal": sid, "criteria": [{"status": "goal_satisfied"}]})
    machines = []
    for i in (1, 2):
        shutil.copytree(ws.root, tmp_path / f"m{i}")
        machines.append(Workspace(tmp_path / f"m{i}"))
    for i, m in enumerate(machines, start=1):
        monkeypatch.setenv("RUHROH_RUN_SEED", str(40 + i))
        r = rook_cli("run", "-w", str(m.root), "--shard", f"{i}/2", "--run-name", "rr-2", "--json")
        assert r.exit_code == 0, r.stderr
    dirs = [str(m.run_dir("rr-2")) for m in machines]
    merged = rook_cli("merge", "-w", str(ws.root), *dirs, "--json")
    assert merged.exit_code == 0, merged.stderr
    warning = [ln for ln in merged.stderr.splitlines() if "RUHROH_RUN_SEED" in ln]
    assert len(warning) == 1, merged.stderr
    assert warning[0].startswith("rook: warning: the shards of run rr-2 ran with different "
                                 "RUHROH_RUN_SEED values"), warning
    assert "RUHROH_RUN_SEED=41 (" in warning[0] and "RUHROH_RUN_SEED=42 (" in warning[0], warning
    m = json.loads((ws.run_dir("rr-2") / "ruhroh-run-manifest.json").read_text())
    assert m["runSeed"] == "42"  # the last shard's, as documented


def test_fallbacks_are_what_the_wrappers_saw(fallbacks, rook_workspace, rook_cli):
    # inherit_env keeps RUHROH_* from the wrappers, so their sample seeds were not
    # derived from RUHROH_RUN_SEED: the manifest still said runSeed "42" and the
    # model of Rook's environment
    rook_workspace.profile(
        {
            "id": "rr",
            "hooks": {"execute": {"ruhroh": {"command": BASH}}},
            "hook_env": {"RUHROH_AGENT_PROVIDER": "hook-provider"},
            "inherit_env": ["PATH", "HOME", "PROBE_DIR"],
        }
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "reply"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["environment"] == {"RUHROH_AGENT_PROVIDER": "hook-provider"}
    assert "runSeed" not in m and "adapterVersion" not in m
    assert m["model"] == {"provider": "hook-provider"}


def test_an_empty_model_field_is_no_value(rook_workspace, rook_cli, monkeypatch):
    # wrappers fill the result file from variables ("model": "$model"); an unset one
    # gave "model": "", which replaced RUHROH_AGENT_MODEL (an empty adapterVersion did not)
    monkeypatch.setenv("RUHROH_AGENT_MODEL", "env-model")
    monkeypatch.setenv("RUHROH_RUN_AGENT_ADAPTER_VERSION", "9.9")
    wrapper = rook_workspace.script(
        "empty-model.sh",
        """
        #!/bin/bash
        cat > "$RUHROH_RESULT_PATH" <<JSON
        {"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied", "adapterVersion": "",
         "model": {"provider": "anthropic", "model": "", "promptVersion": null}}
        JSON
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["model"] == {"provider": "anthropic", "model": "env-model"}
    assert m["sources"]["model.model"] == "env:RUHROH_AGENT_MODEL"
    assert m["adapterVersion"] == "9.9"


def test_the_usage_is_copied_with_every_field_the_wrapper_reported(
    rook_workspace, rook_cli, monkeypatch
):
    # "Ruhroh copies adapterVersion, model, and usage from the latest command result":
    # the model came whole, but of the usage only the four counts Rook judges were
    # kept, so a wrapper's cache and reasoning tokens never reached the manifest
    monkeypatch.setenv("RUHROH_TOTAL_TOKENS", "99")
    wrapper = rook_workspace.script(
        "cache-tokens.sh",
        """
        #!/bin/bash
        cat > "$RUHROH_RESULT_PATH" <<JSON
        {"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied",
         "usage": {"input_tokens": "1200", "outputTokens": 800, "cacheReadTokens": 5000,
                   "reasoningTokens": 300, "costUsd": 0.42}}
        JSON
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["usage"] == {
        "inputTokens": 1200,  # the counts in Ruhroh's names, as numbers
        "outputTokens": 800,
        "costUsd": 0.42,
        "cacheReadTokens": 5000,  # the other fields as reported
        "reasoningTokens": 300,
        "totalTokens": 99,  # none reported: the fallback fills it
    }
    assert m["sources"]["usage.cacheReadTokens"] == "result"
    assert m["sources"]["usage.totalTokens"] == "env:RUHROH_TOTAL_TOKENS"


def test_a_model_that_is_no_object_replaces_the_fallbacks_and_their_sources(
    rook_workspace, rook_cli, monkeypatch
):
    # a model reported as a number replaced the whole model section, but the sources
    # still said model.model came from RUHROH_AGENT_MODEL, a value no longer there
    monkeypatch.setenv("RUHROH_AGENT_MODEL", "env-model")
    wrapper = rook_workspace.script(
        "number-model.sh",
        """
        #!/bin/bash
        echo '{"status": "goal_satisfied", "model": 7}'
        """,
    )
    ruhroh_profile(rook_workspace, str(wrapper))
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"status": "goal_satisfied"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    m = manifest(r)
    assert m["model"] == 7 and m["sources"]["model"] == "result"
    assert not [k for k in m["sources"] if k.startswith("model.")], m["sources"]


def test_a_ruhroh_judge_profiles_manifest_holds_the_judges_latest_result(
    rook_workspace, rook_cli
):
    # a judge profile that is a Ruhroh wrapper got runs/<id>/judge/ruhroh-run-manifest.json,
    # which was begun and never updated ("latest": {}): the manifest is kept from the
    # results the engine records, and a judge's results are recorded by the judge client
    ruhroh_profile(rook_workspace, BASH)
    grader = rook_workspace.script(
        "grader.py",
        """
        #!/usr/bin/env python3
        import json, os
        with open(os.environ["RUHROH_RESULT_PATH"], "w") as fh:
            json.dump({"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied",
                       "adapterVersion": "2.0.0-judge",
                       "model": {"provider": "judgeco", "model": "judge-model"},
                       "usage": {"inputTokens": 7, "outputTokens": 3, "costUsd": 0.02},
                       "output": json.dumps({"pass": True, "reason": "polite"})}, fh)
        """,
    )
    rook_workspace.profile(
        {
            "id": "grader",
            "hooks": {"execute": {"ruhroh": str(grader)}},
            "hook_env": {"RUHROH_RUN_SEED": "7"},
        },
        active=False,
    )
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"rubric": "is polite"}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stderr + r.stdout
    run_dir = Path(r.report["run"]["dir"])
    judge = json.loads((run_dir / "judge" / "ruhroh-run-manifest.json").read_text())
    assert judge["adapterId"] == "grader" and judge["runId"] == r.report["run"]["id"]
    assert judge["adapterVersion"] == "2.0.0-judge", judge
    assert judge["model"] == {"provider": "judgeco", "model": "judge-model"}
    assert judge["usage"] == {"inputTokens": 7, "outputTokens": 3, "costUsd": 0.02}
    assert judge["latest"]["adapterVersion"] == "2.0.0-judge"
    assert judge["runSeed"] == "7"  # the judge profile's own fallbacks
    # the agent's manifest holds the agent's results alone
    agent = manifest(r)
    assert agent["adapterId"] == "rr" and "adapterVersion" not in agent, agent
    assert agent["usage"]["inputTokens"] == 10 and "runSeed" not in agent


def judged_on_two_machines(ws, rook_cli, tmp_path, monkeypatch, field):
    """The run ``rr-1`` in two copies of ``ws`` (``m1``, ``m2``), one shard each, judged
    by a Ruhroh wrapper whose result gives ``field`` (``adapterVersion`` or ``model``)
    as ``judged-first`` (shard 2, judging first) and ``judged-last`` (shard 1, later):
    the shards' run folders, shard 1's first."""
    from rook_core.testing import Workspace

    ruhroh_profile(ws, BASH)
    value = ('os.environ["JUDGE_VALUE"]' if field == "adapterVersion"
             else '{"model": os.environ["JUDGE_VALUE"]}')
    grader = ws.script(
        "grader.py",
        f"""
        #!/usr/bin/env python3
        import json, os
        with open(os.environ["RUHROH_RESULT_PATH"], "w") as fh:
            json.dump({{"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied",
                       "{field}": {value},
                       "output": json.dumps({{"pass": True, "reason": "polite"}})}}, fh)
        """,
    )
    ws.profile({"id": "grader", "hooks": {"execute": {"ruhroh": str(grader)}}}, active=False)
    for sid in ("a", "b"):
        ws.scenario({"id": sid, "goal": sid, "criteria": [{"rubric": "is polite"}]})
    machines = []
    for i in (1, 2):
        shutil.copytree(ws.root, tmp_path / f"m{i}")
        machines.append(Workspace(tmp_path / f"m{i}"))
    for i, judged in ((2, "judged-first"), (1, "judged-last")):
        monkeypatch.setenv("JUDGE_VALUE", judged)
        r = rook_cli("run", "-w", str(machines[i - 1].root), "--shard", f"{i}/2",
                     "--run-name", "rr-1", "--judge-profile", "grader", "--json")
        assert r.exit_code == 0, r.stderr
        time.sleep(0.01)
    return [m.run_dir("rr-1") for m in machines]


def test_merge_joins_the_shards_judge_manifests(rook_workspace, rook_cli, tmp_path, monkeypatch):
    # `rook merge` joined the shards' run manifests but copied their judge/ folders one
    # over another: the merged judge manifest was the last shard copied (not the one that
    # judged last), and its runRoot named that shard's folder
    ws = rook_workspace
    dirs = judged_on_two_machines(ws, rook_cli, tmp_path, monkeypatch, "adapterVersion")
    merged = rook_cli("merge", "-w", str(ws.root), *map(str, dirs), "--json")
    assert merged.exit_code == 0, merged.stderr
    assert "RUHROH_RUN_SEED" not in merged.stderr, merged.stderr  # one seed: no word
    run_dir = ws.run_dir("rr-1")
    m = json.loads((run_dir / "judge" / "ruhroh-run-manifest.json").read_text())
    assert m["adapterVersion"] == "judged-last", m
    assert m["runRoot"] == str(run_dir / "judge") and m["adapterId"] == "grader"
    assert m["merged"]["from"] == [str(d / "judge") for d in dirs]
    agent = json.loads((run_dir / "ruhroh-run-manifest.json").read_text())
    assert agent["adapterId"] == "rr" and "adapterVersion" not in agent


def test_merge_into_a_shards_own_folder_keeps_its_judge_manifest(
    rook_workspace, rook_cli, tmp_path, monkeypatch
):
    # `rook merge` into shard 1's own folder copied shard 2's judge/ over it before the
    # judge manifests were joined: shard 1's (the latest judgement) was lost, and the
    # merged judge manifest held the model shard 2 reported
    dirs = judged_on_two_machines(rook_workspace, rook_cli, tmp_path, monkeypatch, "model")
    merged = rook_cli("merge", "-w", str(tmp_path / "m1"), *map(str, dirs), "--json")
    assert merged.exit_code == 0, merged.stderr
    m = json.loads((dirs[0] / "judge" / "ruhroh-run-manifest.json").read_text())
    assert m["model"] == {"model": "judged-last"}, m
    assert m["runRoot"] == str(dirs[0] / "judge") and m["adapterId"] == "grader"
    # the other shard's judge state is still joined in
    assert sorted(p.name for p in (dirs[0] / "judge" / "state").glob("*-j1")) == [
        "a.1-j1", "b.1-j1"
    ]


def test_a_judge_manifest_that_cannot_be_written_is_a_warning_as_the_agents_is(
    rook_workspace, rook_cli
):
    # the judge's manifest could not be written (its path a folder): each judgement was
    # an error naming the file, where the agent's manifest in that case is a warning
    ruhroh_profile(rook_workspace, BASH)
    grader = rook_workspace.script(
        "grader.py",
        """
        #!/usr/bin/env python3
        import json, os, pathlib
        judge = pathlib.Path(os.environ["ROOK_STATE_DIR"]).parents[1]
        manifest = judge / "ruhroh-run-manifest.json"
        if manifest.is_file():
            manifest.unlink()
        manifest.mkdir(exist_ok=True)  # so it cannot be written
        with open(os.environ["RUHROH_RESULT_PATH"], "w") as fh:
            json.dump({"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied",
                       "model": {"model": "judge-model"},
                       "output": json.dumps({"pass": True, "reason": "polite"})}, fh)
        """,
    )
    rook_workspace.profile(
        {"id": "grader", "hooks": {"execute": {"ruhroh": str(grader)}}}, active=False
    )
    for sid in ("a", "b"):
        rook_workspace.scenario({"id": sid, "goal": sid, "criteria": [{"rubric": "is polite"}]})
    r = rook_cli("run", "--json", "--judge-profile", "grader")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert [s["status"] for s in r.report["scenarios"]] == ["passed", "passed"], r.stdout
    run_dir = Path(r.report["run"]["dir"])
    assert (run_dir / "judge" / "ruhroh-run-manifest.json").is_dir()
    warnings = [line for line in r.stderr.splitlines() if "ruhroh-run-manifest.json" in line]
    assert len(warnings) == 1, r.stderr  # once, naming the file
    assert "warning" in warnings[0] and str(run_dir / "judge") in warnings[0], warnings
    assert manifest(r)["adapterId"] == "rr"  # the agent's is written


def test_a_usage_fallback_that_is_no_count_is_quoted_in_its_warning(
    monkeypatch, rook_workspace, rook_cli
):
    # The warning wrote the variable's value as it is: a line break in it split the
    # warning in two, and an escape sequence (ESC [2J) reached the terminal, which
    # obeyed it. It is quoted now, as every value Rook shows in a message is, and cut.
    monkeypatch.setenv("RUHROH_COST_USD", "ab\ncd\x1b[2J" + "x" * 500)
    ruhroh_profile(rook_workspace, PY, hook_env={"WRAPPER_MODE": "transcript_answer"})
    rook_workspace.scenario({"id": "s", "goal": "g", "criteria": [{"contains": "thinking"}]})
    r = rook_cli("run", "--json")
    assert r.exit_code == 0, r.stderr + r.stdout
    [line] = [x for x in r.stderr.splitlines() if "RUHROH_COST_USD" in x]
    assert line.startswith("rook: warning: RUHROH_COST_USD='ab\\ncd\\x1b[2Jxxx"), line
    assert "\x1b" not in r.stderr and "x" * 200 not in line, line
    assert line.endswith("set it to a number such as 0.42 (or unset it)"), line
