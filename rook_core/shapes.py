"""The shapes of what Rook reads back from a run's files: report entries and scenario records.

A run's files are plain JSON a person can read, and edit: a ``report.json``
entry or a scenario record edited by hand (or damaged) with a value of another
type would make the commands that read it back fail somewhere deep inside.
They check each entry and record they read against the shape Rook writes
(:data:`ENTRY`, :data:`RECORD`) and refuse one that differs with the file,
the place and the field named.
"""

from __future__ import annotations

from typing import Any, NamedTuple

_NONE = type(None)
TEXT = (str, _NONE)
WHOLE = (int, _NONE)
NUMBER = (int, float, _NONE)


class Shape(NamedTuple):
    """A JSON object: the keys it must have, the types of its values where
    present, and its values that are objects or lists of objects."""

    needed: tuple[str, ...] = ()
    types: dict[str, tuple[type, ...]] = {}
    objects: dict[str, Shape] = {}  # a value that is an object of that shape
    lists: dict[str, Shape] = {}  # a value that is a list of objects of that shape


TURN = Shape(
    types={
        "turn": WHOLE,
        "input": TEXT,
        "output": TEXT,
        "conversation": TEXT,
        "usage": (dict, _NONE),
        "calls": (list, _NONE),
        "evidence": (dict, _NONE),
        "seconds": NUMBER,
    }
)
CRITERION = Shape(
    needed=("type", "status", "reason"),
    types={"type": (str,), "status": (str,), "reason": (str,), "id": TEXT},
)
HOOK = Shape(
    needed=("phase", "status"),
    types={
        "phase": (str,),
        "turn": WHOLE,
        "status": (str,),
        "exit_code": WHOLE,
        "seconds": NUMBER,
        "diagnosis": TEXT,
    },
)
_LISTS = {"turns": TURN, "criteria": CRITERION, "hooks": HOOK}

ENTRY = Shape(
    # the SPEC's keys, and the ones the commands reading an entry count on
    needed=(
        *("id", "repeat_index", "repeat_count", "status"),
        *("turns", "criteria", "hooks", "seconds"),
    ),
    types={
        "id": (str,),
        "name": TEXT,
        "tags": (list,),
        "repeat_index": (int,),
        "repeat_count": (int,),
        "content_hash": TEXT,
        "status": (str,),
        "reason": TEXT,
        "phases_done": (list,),
        "turns": (list,),
        "criteria": (list,),
        "hooks": (list,),
        "warnings": (list,),
        "extra": (dict,),
        "seconds": (int, float),
    },
    lists=_LISTS,
)
"""A scenario entry of a report (``report.scenario_entry`` writes it)."""

RECORD = Shape(
    needed=("scenario", "key", "phases_done", "hooks", "turns"),
    types={
        "key": (str,),
        "scenario": (dict,),
        "repeat_index": (int,),
        "repeat_count": (int,),
        "session": TEXT,
        "conversation": TEXT,
        "phases_done": (list,),
        "hooks": (list,),
        "turns": (list,),
        "criteria": (list,),
        "status": TEXT,
        "reason": TEXT,
        "observed": (dict,),
        "started": NUMBER,
        "ended": NUMBER,
        "seconds": NUMBER,
        "warnings": (list,),
        "infra_attempts": (list,),
        "interrupted_attempts": (list,),
    },
    objects={
        "scenario": Shape(
            needed=("id",),
            types={
                "id": (str,),
                "name": TEXT,
                "tags": (list,),
                "content_hash": TEXT,
                "extra": (dict,),
            },
        )
    },
    lists=_LISTS,
)
"""A scenario run's record (``scenarios/KEY.json``: ``Engine.new_record`` and the phases)."""

BY_SCENARIO = Shape(
    needed=("id", "runs", "decided", "passed", "pass_rate", "statuses"),  # rook diff's
    types={
        "id": (str,),
        "name": TEXT,
        "content_hash": TEXT,
        "content_hashes": (list,),
        "runs": (int,),
        "decided": (int,),
        "passed": (int,),
        "pass_rate": NUMBER,
        "pass_all": (bool,),
        "pass_any": (bool,),
        "wilson": (list, _NONE),
        "flaky": (bool,),
        "statuses": (list,),
    },
)
"""A scenario's statistics in a report's ``summary.by_scenario`` (``stats.by_scenario``)."""

SHARD_PART = Shape(
    types={
        "created": NUMBER,
        "phases": (list, _NONE),
        "invocations": (list, _NONE),
        "capabilities": (dict, _NONE),
        "prepare": (dict, _NONE),
        "kills": (list, _NONE),
    },
    objects={
        "capabilities": Shape(types={"observed": (dict, _NONE)}),
        "prepare": Shape(types={"status": TEXT}),
    },
    lists={"invocations": Shape(types={"started": NUMBER})},
)
"""A shard's manifest part (``run.shard-I-of-N.json``), as ``rook merge`` reads it."""

_JSON_TYPE = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    _NONE: "null",
}


def type_name(value: Any) -> str:
    """What a JSON value is, in words."""
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _wrong(value: Any, types: tuple[type, ...]) -> bool:
    return not isinstance(value, types) or (isinstance(value, bool) and bool not in types)


def problem(doc: Any, shape: Shape, where: str = "") -> str | None:
    """What is wrong with ``doc`` against ``shape``, if anything: a key it must
    have is missing, or a value is not of the type Rook writes there."""
    if not isinstance(doc, dict):
        return f"{where or 'it'} is {type_name(doc)}, not an object"
    at = f"{where}: " if where else ""
    for key in shape.needed:
        if key not in doc:
            return f"{where or 'it'} has no '{key}'"
    for key, types in shape.types.items():
        if key in doc and _wrong(doc[key], types):
            return f"{at}'{key}' is {type_name(doc[key])}"
    for key, inner in shape.objects.items():
        if isinstance(doc.get(key), dict):
            found = problem(doc[key], inner, f"{where} '{key}'".strip())
            if found:
                return found
    for key, inner in shape.lists.items():
        if isinstance(doc.get(key), list):
            for n, item in enumerate(doc[key], 1):
                found = problem(item, inner, f"{where} '{key}' item {n}".strip())
                if found:
                    return found
    return None
