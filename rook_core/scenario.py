"""Scenarios (SPEC §6): load, validate, select.

Two spellings load into the same :class:`rook_core.models.Scenario`: Rook's
own (``id``, ``goal``/``turns``, ``criteria``) and the one the public Rook CLI
writes (``title``, ``class``, ``category``, ``feature_id``, ``multi_turn`` +
``setup_messages``, ``expectation``), which maps as SPEC §6 decides:

* ``title`` → name; ``multi_turn: true`` with ``setup_messages`` → turns
  (the setup messages, then the goal);
* ``expectation.acceptance_criteria[{id, statement, check: llm_judge}]`` →
  ``rubric`` criteria;
* ``expectation.forbidden[]`` → a ``rubric`` (every turn) that the answers must
  not exhibit the statement, or ``not_matches`` (every turn) for ``{pattern: ...}``;
* ``expectation.mcp[{server, tool, expect: not_called}]`` → ``not_called``;
* ``class``, ``category``, ``feature_id``, ``excluded``, ``timeout_seconds``,
  ``max_turns``, ``multi_turn`` and ``workspace`` are kept in
  ``Scenario.extra`` (selection, reports, the engine, workspace criteria).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from .errors import ScenarioError, counted, exception_text, format_validation_messages
from .models import ID_MAX, MAX_PLANNED, Criterion, Scenario, slug
from .plugins import plugin_failure
from .registry import Registry
from .schemafields import (
    Range,
    StrictBoolean,
    StrictFloat,
    StrictInteger,
    Text,
    did_you_mean,
    explain_unknown,
    non_finite,
    quoted_number,
    refuse_unknown,
    slug_id,
    yaml_typed,
)
from .yamlio import load_yaml

PUBLIC_KEYS = (
    "title",
    "class",
    "category",
    "feature_id",
    "multi_turn",
    "setup_messages",
    "expectation",
)
EXTRA_KEYS = (
    "class",
    "category",
    "feature_id",
    "excluded",
    "timeout_seconds",
    "max_turns",
    "multi_turn",
    "workspace",
)
LABEL = "id"  # an optional label on any criterion, shown in reports


class _ExpectationSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {  # marshmallow reads it from the class: its "Invalid input type."
        "type": "must be a mapping of acceptance_criteria, forbidden and mcp, each a list"
    }

    acceptance_criteria = fields.List(
        fields.Raw(),
        load_default=list,
        error_messages={
            "invalid": "must be a list of statements: "
            "[{{id: ac-1, statement: ..., check: llm_judge}}]"
        },
    )
    forbidden = fields.List(
        fields.Raw(),
        load_default=list,
        error_messages={
            "invalid": "must be a list of statements or {{pattern: ...}}: [{{pattern: x}}]"
        },
    )
    mcp = fields.List(
        fields.Raw(),
        load_default=list,
        error_messages={
            "invalid": "must be a list of tools: [{{server: ..., tool: ..., expect: not_called}}]"
        },
    )


def _some_text(value: str) -> None:
    """A goal or turn: the agent gets it on standard input, so it must say something."""
    if not value.strip():
        raise ValidationError("empty: nothing to send the agent; write the text to send")


def _selectable(flag: str) -> Any:
    """A tag, class or category: ``flag`` splits on commas and strips blanks, so a
    value that holds a comma or blanks at either end could never be selected."""

    def check(value: str) -> None:
        if not value.strip():
            raise ValidationError(f"empty: {flag} could never select it")
        if "," in value:
            raise ValidationError(
                f"{value!r} holds a comma, which {flag} takes as a separator, so it could "
                "never be selected; write it without (a-b), or as two"
            )
        if value != value.strip():
            raise ValidationError(
                f"{value!r} begins or ends with blanks, which {flag} drops, so it could "
                f"never be selected; write {value.strip()!r}"
            )

    return check


class _ScenarioSchema(Schema):
    class Meta:
        unknown = RAISE

    id = Text(
        required=True,
        validate=[
            slug_id,
            validate.Length(max=ID_MAX, error=f"at most {ID_MAX} characters"),
        ],
        error_messages={
            "required": "missing: a scenario needs an id (lower-case letters, digits, - and _), "
            "unique within the agent"
        },
    )
    name = Text()
    title = Text()
    tags = fields.List(
        Text(validate=_selectable("--tag")),
        load_default=list,
        error_messages={"invalid": "must be a list of tags: [smoke]"},
    )
    goal = Text(validate=_some_text)
    turns = fields.List(
        Text(validate=_some_text),
        validate=validate.Length(
            min=1,
            error="empty: a list of texts, one per turn, holds none (one turn alone: write goal: "
            "instead)",
        ),
        error_messages={
            "invalid": "must be a list of texts, one per turn (one turn alone: write goal: instead)"
        },
    )
    repeat = StrictInteger(
        validate=Range(
            min=1,
            max=MAX_PLANNED,
            error=f"{{input}}: must be a whole number from 1 to {MAX_PLANNED:,} (runs of this scenario; "
            f"a run plans at most {MAX_PLANNED:,})",
        ),
        load_default=1,
    )
    criteria = fields.List(
        fields.Raw(),
        load_default=list,
        error_messages={
            "invalid": "must be a list, each criterion an item of its own: [{{contains: x}}]"
        },
    )
    class_ = Text(data_key="class", validate=_selectable("--class"))
    category = Text(validate=_selectable("--category"))
    feature_id = Text()
    excluded = StrictBoolean()
    timeout_seconds = StrictFloat(validate=validate.Range(min=0, min_inclusive=False))
    max_turns = StrictInteger(validate=validate.Range(min=1))
    multi_turn = StrictBoolean()
    setup_messages = fields.List(
        Text(validate=_some_text),
        error_messages={"invalid": "must be a list of texts, sent before the goal"},
    )
    expectation = fields.Nested(_ExpectationSchema)
    workspace = Text(
        validate=validate.Length(
            min=1,
            error="must not be empty: the directory the agent works in (leave workspace out "
            "for the Rook workspace)",
        )
    )

    @validates_schema
    def _goal_or_turns(self, data: dict[str, Any], **kwargs: Any) -> None:
        if ("goal" in data) == ("turns" in data):
            raise ValidationError("give exactly one of goal or turns", "goal")
        if data.get("setup_messages"):
            if "turns" in data:
                raise ValidationError(
                    "goes with goal (the last turn), not with turns", "setup_messages"
                )
            if not data.get("multi_turn"):
                raise ValidationError("needs multi_turn: true", "setup_messages")
        # title is the public CLI's name: two that differ leave the name unsaid (a blank one is none)
        name, title = ((data.get(k) or "").strip() for k in ("name", "title"))
        if name and title and name != title:
            raise ValidationError(
                f"{data['title']!r} differs from name: {data['name']!r}; title is the public "
                "Rook CLI's name for name: keep one",
                "title",
            )


_SCENARIO_SCHEMA = _ScenarioSchema()  # schemas are reusable; building one per file is slow


def content_hash(data: Any) -> str:
    try:
        text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    except TypeError:  # keys YAML read as numbers next to text ({1: x, words: ...}): unsortable
        text = json.dumps(text_keys(data), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def text_keys(data: Any) -> Any:
    """``data`` with every mapping's keys as text, as JSON writes them."""
    if isinstance(data, dict):
        return {str(k): text_keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [text_keys(v) for v in data]
    return data


def _unknown_type(key: str, criteria: Registry) -> str:
    close = did_you_mean(key, [*criteria.names(), "turn", LABEL])
    if close in ("turn", LABEL):  # a criterion's own keys are misspelt too
        return f"unknown criterion type or key; did you mean {close}?"
    if close:
        return f"unknown criterion type; did you mean {close}?"
    return f"unknown criterion type; installed: {criteria.listing()}"


def parse_criterion(index: int, item: Any, criteria: Registry, n_turns: int) -> Criterion:
    installed = ", ".join(criteria.names())
    if not isinstance(item, dict):
        said = re.match(r"\s*([^\s:]+)(:?)(\s*)(.*)", item, re.S) if isinstance(item, str) else None
        if said and said[1] in criteria:  # a criterion written as one text: say how
            kind, colon, space, rest = said.groups()
            if colon and (space or not rest):  # `- "contains: x"`: the quotes make it text
                why = "is in quotes, so YAML reads it as text, not a mapping; drop the quotes"
            elif colon:  # `- contains:x`
                why = f"is no criterion: write {kind}: {rest} (a space after the colon)"
            elif rest:  # `- contains "x"`
                why = (
                    f"is no criterion: write {kind}: followed by its value (a colon after the type)"
                )
            else:  # `- contains`
                why = f"alone is no criterion: write {kind}: followed by its value"
            shown = item.strip() if len(item.strip()) <= 40 else item.strip()[:40] + "..."
            raise ValidationError(f"{shown!r} {why}")
        raise ValidationError(
            f"must be a mapping with one criterion type (one of: {installed}) and optional "
            "turn and id"
        )
    keys = [k for k in item if k not in ("turn", LABEL)]
    unknown = [k for k in keys if k not in criteria]
    if unknown:
        raise ValidationError({str(k): [_unknown_type(str(k), criteria)] for k in unknown})
    if len(keys) > 1:  # two criteria run together (a "-" left out): name them
        raise ValidationError(
            f"holds {len(keys)} criterion types ({', '.join(map(str, keys))}), not exactly "
            "one; give each its own item of the list"
        )
    if len(keys) != 1:
        raise ValidationError(f"needs exactly one criterion type (one of: {installed})")
    key = keys[0]
    for own, fix in (
        ("turn", "leave turn out for the last turn"),
        (LABEL, "leave id out for none"),
    ):
        if own in item and item[own] is None:  # `turn:` with nothing after it: not filled in
            raise ValidationError({own: [f"empty: nothing is written there (YAML's null); {fix}"]})
    label = item.get(LABEL)
    if label is not None and (isinstance(label, bool) or not isinstance(label, (str, int))):
        raise ValidationError({LABEL: ["must be a short text (a label shown in reports)"]})
    if isinstance(label, str) and not label.strip():  # `id: ""`: a label left unfilled
        raise ValidationError(
            {LABEL: ["must not be empty (a label shown in reports); leave id out for none"]}
        )
    if isinstance(label, int):  # `id: 5` labels it "5": reports hold a label as text
        item = {**item, LABEL: str(label)}
    turn = item.get("turn")
    if turn is not None:
        if turn == "all":
            pass
        elif isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
            problem = "must be a turn number (1, 2, ...) or 'all'"
            if turn == "last":
                problem += "; the last turn is the default: leave turn out"
            quoted = quoted_number(turn, whole=True)
            if quoted is not None:
                problem += f": {quoted}"
            raise ValidationError({"turn": [problem]})
        elif turn > n_turns:
            raise ValidationError(
                {"turn": [f"scenario has {counted(n_turns, 'turn')}, not {turn}"]}
            )
    ctype = criteria.get(key)
    if turn is not None and not getattr(ctype, "turns_apply", True):
        raise ValidationError(
            {
                "turn": [
                    f"does not apply to {key} criteria: they judge what the scenario left, not a turn"
                ]
            }
        )
    try:
        config = ctype.parse(item[key])
    except ValidationError as exc:
        messages = exc.messages
        if key in criteria.foreign:  # which installed plugin to read about
            messages = _said_by(
                messages, f" (the criterion plugin {criteria.owner(key)} refused it)"
            )
        raise ValidationError({key: messages}) from None
    except BaseException as exc:  # a plugin refusing a value its own way (even
        if not plugin_failure(exc):  # sys.exit()): still the user's value
            raise
        detail = exception_text(exc)
        raise ValidationError(
            {key: [f"the criterion plugin {criteria.owner(key)} refused it: {detail}"[:500]]}
        ) from None
    where = _non_finite(item[key])
    if where is not None:  # checked after parse: a limit says what it takes itself
        value = item[key]
        for part in where:
            value = value[part]
        what = non_finite(value, whole=True)  # .nan, .inf, a number of 5,000 digits
        why = (
            "more than Rook reads as a number"
            if str(getattr(value, "written", "")).strip().lstrip("+-").isdigit()
            else "not a JSON value (JSON has no NaN or infinity), so nothing could match it"
        )
        message: Any = [f"{what}: {why}; to compare text, quote it"]
        for part in reversed([key, *where]):
            message = {part: message}
        raise ValidationError(message)
    return Criterion(type=key, config=config, turn=turn, index=index, raw=item)


def _said_by(messages: Any, who: str) -> Any:
    """A ``ValidationError``'s ``messages`` with ``who`` after the last message of
    each field (one error path)."""
    if isinstance(messages, dict):
        return {field: _said_by(said, who) for field, said in messages.items()}
    if isinstance(messages, list) and messages:
        return [*messages[:-1], _said_by(messages[-1], who)]
    return f"{messages}{who}" if isinstance(messages, str) else messages


def _non_finite(value: Any) -> list[Any] | None:
    """The path to a YAML ``.nan`` or ``.inf`` inside ``value``, or ``None``."""
    if isinstance(value, float):
        return None if math.isfinite(value) else []
    if isinstance(value, dict):
        items: Any = value.items()
    else:
        items = enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        where = _non_finite(v)
        if where is not None:
            return [k, *where]
    return None


def _labelled(item: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    if entry.get("id") is not None:
        item[LABEL] = entry["id"]
    return item


def forbidden_rubric(statement: str) -> str:
    """The rubric a forbidden statement becomes: the output must not exhibit it."""
    return (
        f"Forbidden behaviour: {statement}\n"
        "Pass only if the agent's answers do NOT exhibit this behaviour; "
        "fail if any answer does."
    )


def _statement(value: Any, field: str | None = None) -> str:
    """A statement the judge profile is asked about: a text that says something."""
    if isinstance(value, str) and value.strip():
        return value
    message = yaml_typed(value) or "must be a statement (a text, not empty)"
    raise ValidationError({field: [message]} if field else message)


def _acceptance(i: int, entry: Any) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"rubric": _statement(entry)}
    refuse_unknown(entry, ("id", "statement", "check"))
    if not isinstance(entry, dict) or "statement" not in entry:
        raise ValidationError(
            yaml_typed(entry) or "must be a statement, or a mapping with id, statement and check"
        )
    _statement(entry["statement"], "statement")
    check = entry.get("check", "llm_judge")
    if check != "llm_judge":
        raise ValidationError(
            {
                "check": [
                    f"{check!r} is not a check Rook maps; use llm_judge "
                    "(judged by the judge profile) or write a criterion"
                ]
            }
        )
    return _labelled({"rubric": entry["statement"]}, entry)


def _forbidden(i: int, entry: Any) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"rubric": forbidden_rubric(_statement(entry)), "turn": "all"}
    refuse_unknown(entry, ("id", "statement", "pattern"))
    if not isinstance(entry, dict):  # `- no`: a statement to its writer
        raise ValidationError(
            yaml_typed(entry) or "must be a statement, or a mapping with statement or pattern"
        )
    if ("statement" in entry) == ("pattern" in entry):
        raise ValidationError("give exactly one of statement or pattern")
    if "pattern" in entry:
        return _labelled({"not_matches": entry["pattern"], "turn": "all"}, entry)
    statement = _statement(entry["statement"], "statement")
    return _labelled({"rubric": forbidden_rubric(statement), "turn": "all"}, entry)


def _mcp(i: int, entry: Any) -> dict[str, Any]:
    refuse_unknown(entry, ("id", "server", "tool", "expect"))
    if not isinstance(entry, dict) or "tool" not in entry:
        raise ValidationError("must be a mapping with server, tool and expect")
    if not isinstance(entry["tool"], str) or not entry["tool"].strip():
        typed = yaml_typed(entry["tool"])
        raise ValidationError({"tool": [typed or "must be a tool name (a text, not empty)"]})
    expect = entry.get("expect", "not_called")
    if expect not in ("not_called", "called"):
        raise ValidationError({"expect": ["must be not_called or called"]})
    server = entry.get("server")
    if server is None:
        return _labelled({expect: entry["tool"]}, entry)
    if not isinstance(server, str) or not server.strip():
        raise ValidationError({"server": [yaml_typed(server) or "must be the MCP server's name"]})
    # the call as the agent names it: the bare tool, or qualified by its server (mcp__orders__cancel)
    return _labelled({expect: {"name": entry["tool"], "server": server}}, entry)


def _as_mcp_writes(messages: dict[Any, Any]) -> dict[Any, Any]:
    """The problems of the criterion an ``expectation.mcp`` entry maps to, under
    the entry's own fields: ``tool`` for ``not_called.name``, ``server`` for
    ``not_called.server`` (as :data:`SOURCE_FIELDS` does for ``pattern``)."""
    out: dict[Any, Any] = {}
    for k, v in messages.items():
        if k in ("called", "not_called") and isinstance(v, dict):
            out.update({"tool" if field == "name" else field: said for field, said in v.items()})
        else:
            out[k] = v
    return out


MAPPERS = {"acceptance_criteria": _acceptance, "forbidden": _forbidden, "mcp": _mcp}
SOURCE_FIELDS = {"not_matches": "pattern"}
"""The public field a mapped criterion's value came from, where the mapping has one:
a problem with it is reported under the field the file holds."""


def expectation_criteria(
    expectation: Any, start: int, criteria: Registry, n_turns: int, errors: dict[str, Any]
) -> list[Criterion]:
    """Map a public-CLI ``expectation`` block onto criteria; problems go to ``errors``."""
    out: list[Criterion] = []
    if not isinstance(expectation, dict):
        return out
    for key, mapper in MAPPERS.items():
        entries = expectation.get(key)
        if not isinstance(entries, list):
            continue
        for i, entry in enumerate(entries):
            try:
                item = mapper(i, entry)
                out.append(parse_criterion(start + len(out), item, criteria, n_turns))
            except ValidationError as exc:
                messages = exc.messages
                if isinstance(messages, dict):  # as the file says it: pattern, not not_matches
                    messages = {SOURCE_FIELDS.get(str(k), k): v for k, v in messages.items()}
                    if key == "mcp":  # tool and server, not not_called.name and .server
                        messages = _as_mcp_writes(messages)
                errors.setdefault("expectation", {}).setdefault(key, {})[i] = messages
    return out


def _slug(text: str) -> str:
    """The id a file name gives (``Refund status`` → ``refund-status``, ``Café`` →
    ``cafe``, as a profile's name gives its id); empty when it holds no letter a-z
    or digit (``日本``)."""
    return slug(text)


def is_public(data: dict[str, Any]) -> bool:
    """Whether a scenario mapping is written in the public Rook CLI's format."""
    return any(k in data for k in PUBLIC_KEYS)


EMPTY_MEANS_NONE = ("tags", "criteria", "setup_messages", "expectation")
"""Keys whose empty value (YAML's null: nothing, or only comments, under the key)
means none, as in a profile; so do the lists of ``expectation``."""


def _none_left_out(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the keys of :data:`EMPTY_MEANS_NONE` (and of ``expectation``)
    that hold YAML's null: ``tags:`` above a commented-out tag declares none."""
    out = {k: v for k, v in data.items() if not (v is None and k in EMPTY_MEANS_NONE)}
    expectation = out.get("expectation")
    if isinstance(expectation, dict):
        out["expectation"] = {
            k: v for k, v in expectation.items() if not (v is None and k in MAPPERS)
        }
    return out


def scenario_from_dict(
    data: Any,
    criteria: Registry,
    source: str,
    default_id: str | None = None,
    listed_in: str | None = None,
) -> Scenario:
    """Validate one scenario mapping; every problem is reported with its field path.

    ``default_id`` (the file name) is used when a public-CLI scenario has no ``id``;
    ``listed_in`` (the file name) when the scenario is an item of a file's list,
    which never takes it: the message for a missing id says so.
    """
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario must be a mapping (id, goal, criteria, ...)")
    try:  # first: each message below, and every report, writes the scenario's text as UTF-8
        digest = content_hash(data)
    except UnicodeEncodeError:
        raise ScenarioError(_surrogate(data, source)) from None
    data = _none_left_out(data)
    if "id" not in data and default_id and is_public(data):
        if not _slug(default_id):  # made up ("scenario"), it would clash with the next such file
            raise ScenarioError(
                f"{source}: invalid scenario:\n  id: missing, and the file name "
                f"{default_id!r} gives none (an id is made of a-z, 0-9, - and _): add id:"
            )
        made = _slug(default_id)
        if len(made) > ID_MAX:  # no id: line to shorten: say where the id came from
            shown = made if len(made) <= 60 else made[:60] + "..."
            raise ScenarioError(
                f"{source}: invalid scenario:\n  id: missing, and the file name gives {shown} "
                f"({len(made)} characters; an id has at most {ID_MAX}): add id:"
            )
        data = {**data, "id": made}
    errors: dict[str, Any] = {}
    try:
        loaded = _SCENARIO_SCHEMA.load(data)
    except ValidationError as exc:
        messages = explain_unknown(exc.messages, _SCENARIO_SCHEMA)
        errors.update(messages if isinstance(messages, dict) else {"_schema": messages})
        loaded = None
        if listed_in is not None and "id" not in data and is_public(data):
            made = _slug(listed_in)
            errors["id"] = [
                "missing: a scenario in a list needs its own id (a file of one scenario "
                + (f"takes the file name's: {made})" if made else "takes the file name's)")
            ]
    parsed: list[Criterion] = []
    raw_turns = data.get("turns")
    setup = data.get("setup_messages") if data.get("multi_turn") else None
    if isinstance(raw_turns, list) and raw_turns:
        n_turns = len(raw_turns)
    else:
        n_turns = 1 + (len(setup) if isinstance(setup, list) else 0)
    raw_criteria = data.get("criteria")
    if isinstance(raw_criteria, list):
        for i, item in enumerate(raw_criteria):
            try:
                parsed.append(parse_criterion(i, item, criteria, n_turns))
            except ValidationError as exc:
                errors.setdefault("criteria", {})
                if isinstance(errors["criteria"], dict):
                    errors["criteria"][i] = exc.messages
    parsed += expectation_criteria(data.get("expectation"), len(parsed), criteria, n_turns, errors)
    if errors or loaded is None:
        lines = format_validation_messages(errors)
        sid = data.get("id") if "id" not in errors else None  # a valid id names it
        which = f" {sid}" if isinstance(sid, str) else ""
        raise ScenarioError(
            f"{source}: invalid scenario{which}:\n" + "\n".join(f"  {ln}" for ln in lines)
        )
    if "turns" in loaded:
        turns = loaded["turns"]
    else:
        turns = [*(loaded.get("setup_messages") or []), loaded["goal"]]
    if "class_" in loaded:
        loaded["class"] = loaded.pop("class_")
    extra = {k: loaded[k] for k in EXTRA_KEYS if k in loaded}
    # a blank name is none, as an empty one is: reports show the id
    named = (loaded.get(k) for k in ("name", "title"))
    return Scenario(
        id=loaded["id"],
        name=next((n for n in named if n and n.strip()), loaded["id"]),
        turns=turns,
        criteria=parsed,
        tags=loaded["tags"],
        repeat=loaded["repeat"],
        content_hash=digest,
        extra=extra,
        goal_turn=0 if "turns" in loaded else len(turns) - 1,
    )


def _surrogate(data: dict[str, Any], source: str) -> str:
    """The message for a scenario holding a lone surrogate (``"\\udc80"``: half of
    a UTF-16 pair, or a byte a file name could not decode), naming its field:
    no YAML file holds one, but a plugin or a JSON scenario source can give it,
    and no UTF-8 text (a record, a report, the terminal) can."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                at = _lone_surrogate(key)
                if at is not None:
                    said = "has a key that holds" if where else "a field name holds"
                    return _surrogate_message(data, source, where, said, key, at)
                stack.append((f"{where}.{key}" if where else str(key), item))
        elif isinstance(value, (list, tuple)):
            stack += [(f"{where}.{i}", item) for i, item in enumerate(value)]
        elif isinstance(value, str):
            at = _lone_surrogate(value)
            if at is not None:
                return _surrogate_message(data, source, where, "holds", value, at)
    return f"{source}: invalid scenario: it holds text that cannot be written as UTF-8"


def _lone_surrogate(value: Any) -> int | None:
    """Where the first lone surrogate of ``value`` is, or None (and for a non-text)."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _surrogate_message(
    data: dict[str, Any], source: str, field: str, said: str, text: str, at: int
) -> str:
    sid = data.get("id")
    which = f" {sid}" if isinstance(sid, str) and _lone_surrogate(sid) is None else ""
    where = f"{field}: " if field else ""
    return (
        f"{source}: invalid scenario{which}:\n  {where}{said} a lone surrogate "
        f"({ascii(text[at])[1:-1]}, character {at + 1}), which is not a character and no "
        "UTF-8 text can hold: give the text it stands for"
    )


MAX_SHOWN = 10
"""The invalid scenarios of one file named at once, as the files of a folder are."""


def scenarios_from_file(path: Path, criteria: Registry) -> tuple[bool, list[Scenario]]:
    """The scenarios of one file, validated: (whether the file holds a list, them).

    :func:`rook_core.definitions.load_scenarios` reads a whole directory
    through the cache of validated definitions and calls this on a miss.
    """
    file = str(path)
    data = load_yaml(path, ScenarioError)
    if data is None:
        return False, []
    listed = isinstance(data, list)
    items = data if listed else [data]
    out = []
    problems = []  # every scenario of a list at fault, as every file is (one round of fixes)
    for n, item in enumerate(items):
        source = f"{file}[{n}]" if listed else file
        try:
            scenario = scenario_from_dict(
                item, criteria, source, None if listed else path.stem, path.stem if listed else None
            )
        except ScenarioError as exc:
            problems.append(str(exc))
            continue
        scenario.path = file
        out.append(scenario)
    if problems:
        shown = problems[:MAX_SHOWN]
        if len(problems) > MAX_SHOWN:
            shown.append(f"... and {counted(len(problems) - MAX_SHOWN, 'more scenario')} of {file}")
        raise ScenarioError("\n".join(shown))
    return listed, out
