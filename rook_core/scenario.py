"""Scenarios (SPEC §6): load, validate, select."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from .errors import ScenarioError, format_validation_messages
from .models import Criterion, Scenario
from .plugins import Registry
from .profile import SLUG
from .yamlio import load_yaml


class _ScenarioSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(
        required=True,
        validate=validate.Regexp(SLUG, error="must be a slug: lower-case letters, digits, - and _"),
    )
    name = fields.String()
    tags = fields.List(fields.String(), load_default=list)
    goal = fields.String()
    turns = fields.List(fields.String(), validate=validate.Length(min=1))
    repeat = fields.Integer(strict=True, validate=validate.Range(min=1), load_default=1)
    criteria = fields.List(fields.Raw(), load_default=list)

    @validates_schema
    def _goal_or_turns(self, data: dict[str, Any], **kwargs: Any) -> None:
        if ("goal" in data) == ("turns" in data):
            raise ValidationError("give exactly one of goal or turns", "goal")


def content_hash(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def parse_criterion(index: int, item: Any, criteria: Registry, n_turns: int) -> Criterion:
    installed = ", ".join(criteria.names())
    if not isinstance(item, dict):
        raise ValidationError(
            f"must be a mapping with one criterion type (one of: {installed}) and optional turn"
        )
    keys = [k for k in item if k != "turn"]
    unknown = [k for k in keys if k not in criteria]
    if unknown:
        raise ValidationError(
            {str(k): [f"unknown criterion type; installed: {installed}"] for k in unknown}
        )
    if len(keys) != 1:
        raise ValidationError(f"needs exactly one criterion type (one of: {installed})")
    key = keys[0]
    turn = item.get("turn")
    if turn is not None:
        if turn == "all":
            pass
        elif isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
            raise ValidationError({"turn": ["must be a turn number (1, 2, ...) or 'all'"]})
        elif turn > n_turns:
            raise ValidationError({"turn": [f"scenario has {n_turns} turn(s), not {turn}"]})
    ctype = criteria.get(key)
    try:
        config = ctype.parse(item[key])
    except ValidationError as exc:
        raise ValidationError({key: exc.messages}) from None
    return Criterion(type=key, config=config, turn=turn, index=index, raw=item)


def scenario_from_dict(data: Any, criteria: Registry, source: str) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario must be a mapping (id, goal, criteria, ...)")
    errors: dict[str, Any] = {}
    try:
        loaded = _ScenarioSchema().load(data)
    except ValidationError as exc:
        errors.update(exc.messages if isinstance(exc.messages, dict) else {"_schema": exc.messages})
        loaded = None
    parsed: list[Criterion] = []
    raw_criteria = data.get("criteria")
    if isinstance(raw_criteria, list):
        raw_turns = data.get("turns")
        n_turns = len(raw_turns) if isinstance(raw_turns, list) and raw_turns else 1
        for i, item in enumerate(raw_criteria):
            try:
                parsed.append(parse_criterion(i, item, criteria, n_turns))
            except ValidationError as exc:
                errors.setdefault("criteria", {})
                if isinstance(errors["criteria"], dict):
                    errors["criteria"][i] = exc.messages
    if errors or loaded is None:
        lines = format_validation_messages(errors)
        raise ScenarioError(f"{source}: invalid scenario:\n" + "\n".join(f"  {ln}" for ln in lines))
    turns = loaded["turns"] if "turns" in loaded else [loaded["goal"]]
    return Scenario(
        id=loaded["id"],
        name=loaded.get("name") or loaded["id"],
        turns=turns,
        criteria=parsed,
        tags=loaded["tags"],
        repeat=loaded["repeat"],
        content_hash=content_hash(data),
    )


def load_scenarios(directory: Path, criteria: Registry) -> list[Scenario]:
    """Every ``*.yaml``/``*.yml`` file under ``directory``; one scenario or a list per file."""
    if not directory.is_dir():
        raise ScenarioError(f"{directory}: no scenarios directory")
    files = sorted([*directory.rglob("*.yaml"), *directory.rglob("*.yml")])
    scenarios: list[Scenario] = []
    seen: dict[str, Path] = {}
    for path in files:
        data = load_yaml(path, ScenarioError)
        if data is None:
            continue
        items = data if isinstance(data, list) else [data]
        for n, item in enumerate(items):
            source = f"{path}[{n}]" if isinstance(data, list) else str(path)
            scenario = scenario_from_dict(item, criteria, source)
            scenario.path = path
            if scenario.id in seen:
                raise ScenarioError(
                    f"{source}: scenario id {scenario.id!r} is already used by {seen[scenario.id]}"
                )
            seen[scenario.id] = path
            scenarios.append(scenario)
    return scenarios


def select(
    scenarios: Iterable[Scenario], only: list[str] | None = None, tags: list[str] | None = None
) -> list[Scenario]:
    """Selectors narrow one another; an ``--only`` id that does not exist is an error."""
    pool = list(scenarios)
    if only:
        ids = {s.id for s in pool}
        missing = [i for i in only if i not in ids]
        if missing:
            raise ScenarioError(
                f"--only: no scenario with id {', '.join(missing)} "
                f"(scenarios: {', '.join(sorted(ids)) or 'none'})"
            )
        pool = [s for s in pool if s.id in set(only)]
    if tags:
        wanted = set(tags)
        pool = [s for s in pool if wanted & set(s.tags)]
    return pool
