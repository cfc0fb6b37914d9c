"""Bad input, fuzzed: every input yields a valid object or a clean, located error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rook_core.errors import ProfileError, ScenarioError
from rook_core.hookio import OutputError, collected_evidence, decode, parse_object, turn_evidence
from rook_core.models import Profile, Scenario
from rook_core.plugins import build_plugin_manager
from rook_core.profile import profile_from_dict
from rook_core.scenario import scenario_from_dict

ROOK = build_plugin_manager()
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10**12), st.floats(allow_nan=True), st.text(max_size=30)
)
PROFILE_KEYS = ["name", "id", "hooks", "env", "capabilities", "hook_env", "concurrency", "limits",
                "execute", "script", "timeout_seconds", "delay_seconds", "variable", "purpose",
                "multi_turn", "calls", "usage", "prepare", "open", "close", "collect", "http", "ruhroh"]
SCENARIO_KEYS = ["id", "name", "tags", "goal", "turns", "repeat", "criteria", "contains", "matches",
                 "equals", "json", "path", "called", "not_called", "arguments", "call_order",
                 "max_calls", "max_tokens", "max_seconds", "claim", "says", "requires_call", "turn"]


def trees(keys):
    key = st.one_of(st.sampled_from(keys), st.text(max_size=8))
    return st.recursive(
        scalars,
        lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(key, children, max_size=6)),
        max_leaves=25,
    )


def plausible_profile():
    return st.fixed_dictionaries(
        {"id": st.sampled_from(["p", "Bad Id", "ok-1"]), "hooks": trees(PROFILE_KEYS)},
        optional={k: trees(PROFILE_KEYS) for k in ("env", "capabilities", "hook_env", "concurrency", "limits", "name")},
    )


@FAST
@given(st.one_of(trees(PROFILE_KEYS), plausible_profile()))
def test_profile_loader_never_crashes(data):
    try:
        assert isinstance(profile_from_dict(data, ROOK.transports, "p.yaml"), Profile)
    except ProfileError as exc:
        assert str(exc).startswith("p.yaml")


def plausible_scenario():
    return st.fixed_dictionaries(
        {"id": st.sampled_from(["s", "Bad Id"]), "goal": st.one_of(st.text(max_size=20), scalars)},
        optional={"criteria": st.lists(trees(SCENARIO_KEYS), max_size=4),
                  "turns": trees(SCENARIO_KEYS), "repeat": scalars, "tags": trees(SCENARIO_KEYS)},
    )


@FAST
@given(st.one_of(trees(SCENARIO_KEYS), plausible_scenario()))
def test_scenario_loader_never_crashes(data):
    try:
        assert isinstance(scenario_from_dict(data, ROOK.criteria, "s.yaml"), Scenario)
    except ScenarioError as exc:
        assert str(exc).startswith("s.yaml")


@FAST
@given(st.text(max_size=300))
def test_yaml_text_never_crashes(tmp_path_factory, text):
    from rook_core.errors import ConfigError
    from rook_core.yamlio import load_yaml

    path = tmp_path_factory.mktemp("y") / "f.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        data = load_yaml(path)
    except ConfigError as exc:
        assert str(exc).startswith(str(path))
        return
    for fn, err in ((lambda d: profile_from_dict(d, ROOK.transports, "f"), ProfileError),
                    (lambda d: scenario_from_dict(d, ROOK.criteria, "f"), ScenarioError)):
        try:
            fn(data)
        except err:
            pass


json_values = st.recursive(
    scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=8), c, max_size=5)),
    max_leaves=20,
)


@FAST
@given(st.binary(max_size=2000))
def test_hook_output_bytes_never_crash(raw):
    text = decode(raw)
    for required in (True, False):
        try:
            data = parse_object(text, required)
        except OutputError:
            continue
        if data is not None:
            for fn in (lambda d: turn_evidence(1, "g", d, 0.1), collected_evidence):
                try:
                    fn(data)
                except OutputError:
                    pass


@FAST
@given(st.dictionaries(st.sampled_from(["output", "agent_reply", "conversation", "usage", "calls", "x"]),
                       json_values, max_size=5))
def test_hook_output_objects_never_crash(data):
    try:
        ev = turn_evidence(1, "g", data, 0.1)
        assert isinstance(ev.output, str)
    except OutputError as exc:
        assert str(exc)


def test_deeply_nested_json_is_a_clean_failure():
    with pytest.raises(OutputError):
        parse_object("[" * 100000 + "]" * 100000, True)
