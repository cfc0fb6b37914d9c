"""Built-in deterministic criteria, registered like any organisation's own.

Every run registers these, and only validating a scenario needs marshmallow
and JMESPath, so they are imported by the functions that use them.
"""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from typing import Any

from rook_core.errors import counted, listed
from rook_core.hookio import loads
from rook_core.hookspecs import hookimpl
from rook_core.judging import CriterionType, EvidenceView, same_json_value
from rook_core.models import ERROR, FAILED, PASSED, UNVERIFIABLE, Verdict
from rook_core.redact import current

from .patterns import FULLCASE, IGNORECASE, TooSlow, compile_pattern, search

NOT_OBSERVED_CALLS = (
    "the agent's evidence shows no call log (calls were not observed), so this cannot be verified"
)
NOT_OBSERVED_USAGE = "the agent's evidence has no token usage, so this cannot be verified"


MORE = "... [{n} more chars]"
"""How a text a reason quotes ends when it was cut, as a hook output's preview does."""


def _short(text: str | None, limit: int = 120) -> str:
    """``text`` quoted in a reason, redacted before it is cut (a cut inside a
    secret would leave a piece no redaction recognises), a cut ending in
    ``... [N more chars]``: the turn keeps the whole."""
    return repr(current().head(text or "", limit, MORE))


def _json_short(value: Any, limit: int = 120) -> str:
    """A JSON value shown in a reason as JSON (``null``, ``true``), redacted, then cut."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return current().head(text, limit, MORE)


def _string(value: Any, what: str = "a string") -> str:
    from marshmallow import ValidationError

    from rook_core.schemafields import yaml_typed

    if isinstance(value, bool):  # `contains: yes`: text to its writer
        raise ValidationError(yaml_typed(value) or f"must be {what}")
    if isinstance(value, list):  # `contains: [a, b]`: one text per criterion
        raise ValidationError(f"must be {what}, not a list: write one criterion for each")
    if not isinstance(value, (str, int, float)):
        raise ValidationError(f"must be {what}")
    from rook_core.yamlio import written

    return written(value)  # 19.90 as written, never 19.9


def _needle(value: Any, what: str = "a text") -> str:
    """A text to look for: never empty, which every answer contains."""
    from marshmallow import ValidationError

    text = _string(value, what)
    if not text:
        raise ValidationError(f"must be {what}, not empty (every answer contains the empty text)")
    return text


def unknown_keys(value: Any, known: tuple[str, ...]) -> None:
    """Refuse the keys of a mapping ``value`` that are not ``known``, each with
    the known key it looks like a typo of (``equal: unknown field; did you mean
    equals?``)."""
    from rook_core.schemafields import refuse_unknown

    refuse_unknown(value, known)


def _regex(value: Any, flags: int = 0) -> Any:
    from marshmallow import ValidationError

    pattern = same_form(_needle(value, "a regular expression"))  # as the answer: NFC
    try:
        return compile_pattern(pattern, flags)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


def same_form(text: str) -> str:
    """``text`` in one Unicode form (NFC): ``e`` + U+0301 and ``é`` are one text."""
    return unicodedata.normalize("NFC", text)


def folded(text: str) -> str:
    """``text`` for comparing ignoring case: canonical caseless matching (Unicode
    §3.13), recomposed so that ``cafe`` is never found inside ``café``; ``İ``
    (which folds to ``i`` and a combining dot above) is ``i``, as the regular
    expressions ignoring case take it (``İSTANBUL`` holds ``istanbul``)."""
    return same_form(unicodedata.normalize("NFD", text).casefold().replace("i\u0307", "i"))


def finite_number(value: Any) -> bool:
    """Whether ``value`` is a number YAML wrote as one and not ``.nan`` or ``.inf``
    (nor a whole number past the largest float, ``10**400`` written out, which no
    time or cost compares with): a limit of NaN is never met, and one of infinity
    checks nothing."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) <= sys.float_info.max if isinstance(value, int) else math.isfinite(value)


def _no_output(view: EvidenceView) -> Verdict | None:
    if view.output is None:
        return Verdict(UNVERIFIABLE, "no output was recorded")
    return None


class Contains(CriterionType):
    name = "contains"
    compares_record_text = True
    description = "the answer contains the text (case-insensitive)"

    def parse(self, value: Any) -> str:
        return _needle(value)

    def evaluate(self, config: str, view: EvidenceView) -> Verdict:
        if (v := _no_output(view)) is not None:
            return v
        found = folded(config) in folded(view.output or "")
        return Verdict(
            PASSED if found else FAILED,
            f"{'found' if found else 'did not find'} {config!r} in {_short(view.output)}",
        )


class NotContains(Contains):
    name = "not_contains"
    description = "the answer does not contain the text (case-insensitive)"

    def evaluate(self, config: str, view: EvidenceView) -> Verdict:
        v = super().evaluate(config, view)
        if v.status == UNVERIFIABLE:
            return v
        return Verdict(FAILED if v.status == PASSED else PASSED, v.reason)


class Matches(CriterionType):
    name = "matches"
    compares_record_text = True
    description = "the answer matches the regular expression (a search, as re.search)"

    def parse(self, value: Any) -> Any:
        return _regex(value)

    def evaluate(self, config: Any, view: EvidenceView) -> Verdict:
        if (v := _no_output(view)) is not None:
            return v
        text = same_form(view.output or "")  # in one Unicode form: e + U+0301 is é
        try:
            m = search(config, text)
        except TooSlow as exc:
            return Verdict(ERROR, str(exc))
        if m:  # a match inside a secret put back is quoted as its whole marker, no piece
            start, end = current().widened(text, m.start(), m.end())
            return Verdict(PASSED, f"/{config.pattern}/ matched {_short(text[start:end])}")
        return Verdict(FAILED, f"/{config.pattern}/ did not match {_short(view.output)}")


class NotMatches(Matches):
    name = "not_matches"
    description = "the answer does not match the regular expression"

    def evaluate(self, config: Any, view: EvidenceView) -> Verdict:
        v = super().evaluate(config, view)
        if v.status in (UNVERIFIABLE, ERROR):
            return v
        return Verdict(FAILED if v.status == PASSED else PASSED, v.reason)


class Equals(CriterionType):
    name = "equals"
    compares_record_text = True
    description = "the answer equals the text (surrounding whitespace ignored)"

    def parse(self, value: Any) -> str:
        return _string(value)

    def evaluate(self, config: str, view: EvidenceView) -> Verdict:
        if (v := _no_output(view)) is not None:
            return v
        ok = same_form((view.output or "").strip()) == same_form(config.strip())
        return Verdict(
            PASSED if ok else FAILED,
            f"output {'equals' if ok else 'is ' + _short(view.output) + ', not'} {config!r}",
        )


class NotEquals(Equals):
    name = "not_equals"
    description = "the answer is not the text (surrounding whitespace ignored)"

    def evaluate(self, config: str, view: EvidenceView) -> Verdict:
        v = super().evaluate(config, view)
        if v.status == UNVERIFIABLE:
            return v
        return Verdict(FAILED if v.status == PASSED else PASSED, v.reason)


class Json(CriterionType):
    name = "json"
    compares_record_text = True
    description = "the answer parsed as JSON; a JMESPath `path` equals / contains / exists"

    def parse(self, value: Any) -> dict[str, Any]:
        import jmespath
        from jmespath.exceptions import JMESPathError
        from marshmallow import ValidationError

        unknown_keys(value, ("path", "equals", "contains", "exists"))
        if not isinstance(value, dict) or "path" not in value:
            raise ValidationError(
                "must be a mapping with path and at most one of equals, contains, exists "
                "(with none of them, the path must exist)"
            )
        checks = [k for k in ("equals", "contains", "exists") if k in value]
        if len(checks) > 1:
            raise ValidationError("give at most one of equals, contains, exists")
        if "exists" in value and not isinstance(value["exists"], bool):
            raise ValidationError({"exists": ["must be true or false"]})
        try:
            path = _string(value["path"], "a JMESPath expression")
        except ValidationError as exc:  # named as the path's, not the criterion's
            raise ValidationError({"path": exc.messages}) from None
        try:
            compiled = jmespath.compile(path)
        except JMESPathError as exc:  # one line: jmespath puts the path and a caret below
            said = " ".join(p.strip() for p in str(exc).splitlines() if p.strip() != "^")
            raise ValidationError({"path": [f"not a valid JMESPath expression: {said}"]}) from None
        from rook_core.scenario import text_keys

        if value.get("contains") == "":  # every text holds it: a pass verifying nothing
            raise ValidationError(
                {
                    "contains": [
                        "must be a text, not empty (every text contains the empty text; for a "
                        "list holding an empty text, write path: \"contains(PATH, '')\" "
                        "with equals: true)"
                    ]
                }
            )
        for key in ("equals", "contains"):  # {200: ok}: a JSON object's keys are text
            if key in value:
                value = {**value, key: text_keys(value[key])}
        return {**value, "compiled": compiled, "check": checks[0] if checks else "exists"}

    def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        from jmespath.exceptions import JMESPathError

        if (v := _no_output(view)) is not None:
            return v
        try:
            doc = loads(view.output or "")  # only JSON: not NaN, Infinity or 1e999
        except json.JSONDecodeError:
            return Verdict(FAILED, f"output is not JSON: {_short(view.output)}")
        except ValueError as exc:  # JSON's syntax, a value no reader gets back: say which
            said = current().head(str(exc), 120, MORE)
            return Verdict(FAILED, f"output is not JSON ({said}): {_short(view.output)}")
        path, check = config["path"], config["check"]
        try:
            found = config["compiled"].search(doc)
        except JMESPathError as exc:  # a function given a value of the wrong type
            return Verdict(FAILED, f"{path}: {current().head(str(exc), 200, '...')}")
        shown = f"{path} is {_json_short(found)}"
        # a key holding null is there; a missing one is not, though JMESPath
        # gives null for both: a plain path is walked to tell them apart
        walked = _present(config["compiled"].parsed, doc) if found is None else _UNKNOWN
        missing = isinstance(walked, tuple) and not walked[0]
        if check == "exists":
            there = found is not None or (isinstance(walked, tuple) and walked[0])
            shown = shown if there else f"{path} is missing"
            ok = there == config.get("exists", True)
            return Verdict(PASSED if ok else FAILED, shown)
        if missing:  # never equal to null, nor containing anything
            shown = f"{path} is missing"
        if check == "equals":
            ok = not missing and same_json_value(found, config["equals"])
            said = f"{shown}, expected {_json_short(config['equals'])}"
            return (
                Verdict(PASSED, said)
                if ok
                else Verdict(FAILED, said + _read_as_text(found, config))
            )
        needle = config["contains"]
        ok = (
            any(same_json_value(item, needle) for item in found)
            if isinstance(found, list)
            else (isinstance(found, str) and folded(_as_text(needle)) in folded(found))
        )
        return Verdict(
            PASSED if ok else FAILED, f"{shown}; contains {_json_short(needle)}: {json.dumps(ok)}"
        )


def _read_as_text(found: Any, config: dict[str, Any]) -> str:
    """Why ``equals: 1e3`` failed against the number 1000 (YAML 1.1 reads it as
    text), or ``""``: the failure path of a ``json`` check only."""
    expected = config["equals"]
    if not isinstance(expected, str) or not isinstance(found, (int, float)):
        return ""
    from rook_core.schemafields import number_as_text

    hint = number_as_text(expected)
    if hint is None or isinstance(found, bool) or float(expected) != found:
        return ""
    return f" ({hint})"


def _as_text(value: Any) -> str:
    """A value looked for in a text: a text as it is, a number as written
    (``19.90``), anything else as JSON writes it (``null``, ``{"k": 1}``), never
    as Python does (``None``, ``{'k': 1}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        from rook_core.yamlio import written

        return written(value)
    return json.dumps(value, ensure_ascii=False)


_UNKNOWN = object()


def _present(node: dict[str, Any], doc: Any) -> tuple[bool, Any] | object:
    """Whether a plain JMESPath ``node`` (fields, indexes, ``@``, pipes of
    them) reaches a value in ``doc``, and the value: ``{"n": null}`` has ``n``,
    ``{}`` has not, though JMESPath answers null for both. ``_UNKNOWN`` for
    any other expression, whose null result stays "not there"."""
    kind, children = node["type"], node["children"]
    if kind in ("current", "identity"):
        return True, doc
    if kind == "field":
        return (
            (True, doc[node["value"]])
            if isinstance(doc, dict) and node["value"] in doc
            else (False, None)
        )
    if kind == "index":
        i = node["value"]
        return (
            (True, doc[i]) if isinstance(doc, list) and -len(doc) <= i < len(doc) else (False, None)
        )
    if kind in ("subexpression", "index_expression", "pipe"):
        left = _present(children[0], doc)
        if not isinstance(left, tuple) and kind == "pipe":  # a filter, a function ... first:
            from jmespath.visitor import TreeInterpreter  # what it gives, walked on

            value = TreeInterpreter().visit(children[0], doc)
            left = (value is not None, value)
        if not isinstance(left, tuple) or not left[0]:
            return left
        return _present(children[1], left[1])
    return _UNKNOWN


def args_match(expected: Any, actual: Any) -> bool:
    """Subset match: every expected key present with a matching value."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and args_match(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(args_match(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):  # JSON true is not 1
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if expected == actual:
        return True
    scalar = (str, int, float)
    if not (isinstance(expected, scalar) and isinstance(actual, scalar)):
        return False
    from rook_core.yamlio import written  # 007 and 19.90 as the scenario wrote them

    return str(actual) in (str(expected), written(expected))


NO_TOOL_NAME = "must be a tool name (a text, not empty)"
"""Why a call named ``""`` or ``" "`` is refused: no call is, so it verifies nothing."""


def _blank(name: str) -> bool:
    """Whether ``name`` shows nothing: empty, white space, or characters no one
    sees (a zero-width space, U+200B, pasted from a web page)."""
    return not any(c.isprintable() and not c.isspace() for c in name)


def _call_spec(value: Any) -> dict[str, Any]:
    from marshmallow import ValidationError

    from rook_core.scenario import text_keys

    if isinstance(value, str):
        if _blank(value):  # no call is named "" or " ": it would verify nothing
            raise ValidationError(NO_TOOL_NAME)
        return {"name": value, "arguments": None}
    if isinstance(value, (bool, int, float)):  # `called: on`: a tool's name to its writer
        from rook_core.schemafields import yaml_typed

        raise ValidationError(yaml_typed(value) or "must be a tool name")
    unknown_keys(value, ("name", "arguments", "server"))
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        if _blank(value["name"]):
            raise ValidationError({"name": [NO_TOOL_NAME]})
        args = value.get("arguments")
        if args is not None and not isinstance(args, dict):
            raise ValidationError({"arguments": ["must be a mapping (matched as a subset)"]})
        spec = {"name": value["name"], "arguments": text_keys(args)}  # {1: x}: keys are text
        server = value.get("server")
        if server is not None:
            if not isinstance(server, str) or not server.strip():
                raise ValidationError({"server": ["must be the MCP server's name (a text)"]})
            spec["server"] = server.strip()  # " orders ": the name
            if "__" in spec["server"] or "__" in spec["name"]:
                raise ValidationError({"server": [_split_unknown(spec["server"], spec["name"])]})
        return spec
    if isinstance(value, dict):  # said of the name, not of the whole criterion
        if value.get("name") is None:
            raise ValidationError({"name": ["missing: the name of the tool (a text)"]})
        from rook_core.schemafields import yaml_typed

        raise ValidationError(
            {"name": [yaml_typed(value["name"]) or "must be a tool name (a text)"]}
        )
    raise ValidationError("must be a tool name or {name, arguments, server}")


def _split_unknown(server: str, tool: str) -> str:
    """Why a ``server`` and tool name one of which holds ``__`` are refused: in an
    agent's log, ``mcp__SERVER__TOOL`` reads as more than one server's tool."""
    parts = f"{server}__{tool}".split("__")
    readings = [
        f"the tool {'__'.join(parts[i:])!r} of server {'__'.join(parts[:i])!r}"
        for i in range(1, len(parts))
    ]
    shown = " or ".join(readings[:3]) + (" ..." if len(readings) > 3 else "")
    return (
        f"{server!r} with the tool {tool!r}: a name holding '__' cannot be told apart in a "
        f"call log, where mcp__{server}__{tool} is {shown}; name the call as your agent's log "
        f"does, without server: mcp__{server}__{tool} (or the name it logs)"
    )


def _describe(spec: dict[str, Any]) -> str:
    server = spec.get("server")
    named = spec["name"] + (f" (MCP server {server})" if server else "")
    return named + (f" with {_as_scenario_wrote(spec['arguments'])}" if spec["arguments"] else "")


def _as_scenario_wrote(arguments: Any) -> str:
    """``arguments`` as JSON, each number as the scenario wrote it (``19.90``, ``007``:
    what it is matched as), never as Python reads it back (``19.9``, ``7``)."""
    numbers: dict[str, str] = {}

    def marked(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: marked(v) for k, v in value.items()}
        if isinstance(value, list):
            return [marked(v) for v in value]
        shown = getattr(value, "written", None)  # yamlio's WrittenInt, WrittenFloat
        if not isinstance(shown, str):
            return value
        numbers[f"\0{len(numbers)}\0"] = shown
        return f"\0{len(numbers) - 1}\0"

    text = json.dumps(marked(arguments))
    for mark, shown in numbers.items():
        text = text.replace(json.dumps(mark), shown)
    return text


MCP_NAMES = ("mcp__{server}__{tool}", "{server}__{tool}", "{server}.{tool}", "{server}/{tool}")
"""How agents name an MCP server's tool in their call logs (Claude Code and Codex
``mcp__orders__cancel``, others ``orders__cancel``, ``orders.cancel``, ``orders/cancel``):
a call spec with a ``server`` matches each, and the bare tool name."""


def _names_of(spec: dict[str, Any]) -> tuple[str, ...] | str:
    """The call names ``spec`` matches: its name, or with a ``server`` the MCP forms too."""
    server = spec.get("server")
    if server is None:
        return spec["name"]
    return (spec["name"], *(form.format(server=server, tool=spec["name"]) for form in MCP_NAMES))


def _named(names: tuple[str, ...] | str, spec: dict[str, Any], call: dict[str, Any]) -> bool:
    name = call.get("name")
    if isinstance(names, str):
        return name == names
    if name == spec["name"]:  # the bare name: unless the call names another server
        return call.get("server") in (None, spec["server"])
    return name in names


def _matching(spec: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = _names_of(spec)
    return [
        c
        for c in calls
        if _named(names, spec, c)
        and (spec["arguments"] is None or args_match(spec["arguments"], c.get("arguments")))
    ]


def _unreadable(spec: dict[str, Any], calls: list[dict[str, Any]]) -> Verdict | None:
    """Unverifiable when a call of the tool has arguments that are no object:
    text (JSON an agent cut short), a list (positional arguments) or a bare
    value have no names to match: whether they match cannot be told."""
    if spec["arguments"] is None:
        return None
    names = _names_of(spec)
    odd = [
        c.get("arguments")
        for c in calls
        if _named(names, spec, c) and not isinstance(c.get("arguments"), dict)
    ]
    if not odd:
        return None
    if odd[0] is None:  # the hook gave none (an http extract of {name: fn} only)
        return Verdict(
            UNVERIFIABLE,
            f"{spec['name']} was called, but its arguments were not observed (the call "
            "log gives none), so whether they match cannot be told",
        )
    shown = _short(odd[0]) if isinstance(odd[0], str) else _json_short(odd[0])
    return Verdict(
        UNVERIFIABLE,
        f"{spec['name']} was called with arguments that are not a JSON object "
        f"({shown}), so whether they match cannot be told",
    )


class _CallCriterion(CriterionType):
    needs = frozenset({"calls"})
    per_turn = False
    compares_record_text = True


def _seen_calls(view: EvidenceView) -> list[dict[str, Any]]:
    """The calls of the turns in view that reported theirs, when some did not
    (``view.calls`` is ``None``): a part of the call log, in order. It can
    show that a call was made, never that one was not."""
    return [c for t in view.turns for c in (t.calls or [])]


def _unobserved(view: EvidenceView) -> Verdict:
    blind = [str(t.turn) for t in view.turns if t.calls is None]
    if len(blind) < len(view.turns):
        return Verdict(
            UNVERIFIABLE,
            f"the calls of {listed('turn', blind)} were not observed, so this cannot be verified",
        )
    collected = view.record.get("collected")
    if (
        isinstance(view.scope, int)
        and isinstance(collected, dict)
        and isinstance(collected.get("calls"), list)
    ):
        return Verdict(  # collect's log is the whole scenario's: no turn's of its own
            UNVERIFIABLE,
            f"turn {view.scope}'s calls were not observed: only collect reported calls, for the "
            "whole scenario, so this cannot be verified for one turn (leave turn out to judge "
            "the calls of every turn)",
        )
    return Verdict(UNVERIFIABLE, NOT_OBSERVED_CALLS)


PARTIAL = "in the turns whose calls were observed"
CALLS_SHOWN = 20  # the calls a reason names: an agent may make thousands


def _names(calls: list[dict[str, Any]]) -> str:
    """The names of ``calls``, in order, as a reason shows them: a JSON list (as
    their arguments are shown) of the first :data:`CALLS_SHOWN`, then how many more."""
    names = [c.get("name") for c in calls]
    shown = json.dumps(names[:CALLS_SHOWN], ensure_ascii=False)
    if len(names) <= CALLS_SHOWN:
        return shown
    return f"{shown[:-1]}, ... {len(names) - CALLS_SHOWN} more]"


class Called(_CallCriterion):
    name = "called"
    description = "a tool call with this name (and arguments, as a subset) was made"

    def parse(self, value: Any) -> dict[str, Any]:
        return _call_spec(value)

    def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        if view.calls is None:
            if _matching(config, _seen_calls(view)):
                return Verdict(PASSED, f"{_describe(config)} was called ({PARTIAL})")
            return _unobserved(view)
        hits = _matching(config, view.calls)
        if hits:
            return Verdict(PASSED, f"{_describe(config)} was called ({len(hits)}x)")
        if (odd := _unreadable(config, view.calls)) is not None:
            return odd
        return Verdict(FAILED, f"{_describe(config)} was not called; calls: {_names(view.calls)}")


class NotCalled(Called):
    name = "not_called"
    description = "no tool call with this name (and arguments) was made"

    def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        if view.calls is None:
            if hits := _matching(config, _seen_calls(view)):
                return Verdict(FAILED, f"{_describe(config)} was called ({len(hits)}x {PARTIAL})")
            return _unobserved(view)
        hits = _matching(config, view.calls)
        if hits:
            return Verdict(FAILED, f"{_describe(config)} was called ({len(hits)}x)")
        if (odd := _unreadable(config, view.calls)) is not None:
            return odd
        return Verdict(
            PASSED,
            f"{_describe(config)} was not called ({counted(len(view.calls), 'call')} observed)",
        )


class CallOrder(_CallCriterion):
    name = "call_order"
    description = "these tools were called in this order (other calls may come between)"

    def parse(self, value: Any) -> list[str]:
        from marshmallow import ValidationError

        from rook_core.schemafields import yaml_typed

        if isinstance(value, list) and not value:  # a list, of nothing: no order to see
            raise ValidationError(
                "empty: name the tools in the order they must be called, at least one "
                "(two for an order): [lookup_order, issue_refund]"
            )
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            items = value if isinstance(value, list) else []
            typed = {i: [yaml_typed(v)] for i, v in enumerate(items) if yaml_typed(v)}
            raise ValidationError(
                typed
                or "must be a list of tool names, in the order they must be called: "
                "[lookup_order, issue_refund]"
            )
        blank = {i: [NO_TOOL_NAME] for i, v in enumerate(value) if _blank(v)}
        if blank:  # no call is named "": the order could never be seen
            raise ValidationError(blank)
        return value

    def evaluate(self, config: list[str], view: EvidenceView) -> Verdict:
        complete = view.calls is not None
        calls = view.calls or _seen_calls(view)
        it = iter(c.get("name") for c in calls)
        ok = all(any(n == want for n in it) for want in config)
        seen = (
            f"expected order {json.dumps(config, ensure_ascii=False)}; calls were {_names(calls)}"
        )
        if not complete:  # the calls seen in this order: so were all of them
            if ok:
                return Verdict(PASSED, f"{seen} ({PARTIAL})")
            return _unobserved(view)
        return Verdict(PASSED if ok else FAILED, seen)


class MaxCalls(_CallCriterion):
    name = "max_calls"
    description = "at most N tool calls were made"
    compares_record_text = False  # a count: no text of its own

    def parse(self, value: Any) -> int:
        from marshmallow import ValidationError

        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValidationError(with_yaml_hint("must be a whole number >= 0", value, whole=True))
        return value

    def evaluate(self, config: int, view: EvidenceView) -> Verdict:
        if view.calls is None:
            seen = len(_seen_calls(view))
            if seen > config:
                return Verdict(
                    FAILED, f"at least {counted(seen, 'call')} (max {config}; {PARTIAL})"
                )
            return _unobserved(view)
        n = len(view.calls)
        return Verdict(PASSED if n <= config else FAILED, f"{counted(n, 'call')} (max {config})")


class MaxTokens(CriterionType):
    name = "max_tokens"
    needs = frozenset({"usage"})
    per_turn = False
    description = "token usage stays within {input, output, total} (a number means total)"

    def parse(self, value: Any) -> dict[str, int]:
        from marshmallow import ValidationError

        if isinstance(value, int) and not isinstance(value, bool):
            value = {"total": value}
        if not isinstance(value, dict) or not value:
            raise ValidationError(
                with_yaml_hint(
                    "must be a number (total) or a mapping of input, output, total",
                    value,
                    whole=True,
                )
            )
        unknown_keys(value, ("input", "output", "total"))
        out = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValidationError(
                    {k: [with_yaml_hint("must be a whole number >= 0", v, whole=True)]}
                )
            out[k] = v
        return out

    def evaluate(self, config: dict[str, int], view: EvidenceView) -> Verdict:
        usage = view.usage or {}
        # a count equal to the value of an env variable, or holding it among its
        # digits, is recorded as "[redacted:NAME]" ("[redacted:PIN]00"): a count
        # that cannot be read, never one to add up
        hidden = sorted(
            {
                k
                for u in (usage, *(t.usage or {} for t in view.turns))
                for k in ("input", "output", "total")
                if isinstance(u.get(k), str)
            }
        )
        seen = {k: _count(usage.get(k)) for k in ("input", "output", "total")}
        below = ""  # a total reported below its parts: counts are never negative
        if seen["input"] is not None and seen["output"] is not None:
            parts_sum = seen["input"] + seen["output"]
            if seen["total"] is not None and seen["total"] < parts_sum:
                below = f" (the agent reported {seen['total']:g}, less than input + output)"
            if seen["total"] is None or below:
                seen["total"] = parts_sum
        # A count not observed for every turn in view: what the turns that did
        # report it add up to is a lower bound (counts are never negative).
        least = {k: sum(_at_least(t, k) for t in view.turns) for k in ("input", "output")}
        least = {k: v if seen[k] is None else seen[k] or 0 for k, v in least.items()}
        # a total some turns (or iterations) reported bounds it too
        reported = sum(
            max(_at_least(t, "total"), _at_least(t, "input") + _at_least(t, "output"))
            for t in view.turns
        )
        least["total"] = max(least["input"] + least["output"], reported)
        if view.usage is None and not any(least.values()):
            return Verdict(UNVERIFIABLE, NOT_OBSERVED_USAGE)
        parts, broken, unknown = [], False, []
        for k, limit in config.items():
            value = seen[k]
            if value is not None:
                parts.append(f"{k} {value:g}/{limit}" + (below if k == "total" else ""))
                broken = broken or value > limit
            elif least[k] > limit:
                parts.append(f"{k} at least {least[k]:g}/{limit} (in the turns that reported it)")
                broken = True
            else:
                unknown.append(k)
        if broken:
            missing = f"; usage has no {', '.join(unknown)} count" if unknown else ""
            return Verdict(FAILED, "tokens " + ", ".join(parts) + missing)
        if unknown:
            shown = f" (tokens {', '.join(parts)})" if parts else ""
            why = (
                f"; {', '.join(hidden)} redacted: it holds the value of a profile env variable"
                if hidden
                else ""
            )
            # a count some turns reported: the others are named, as max_cost names them
            blind = {k: _turns_without(view, k) for k in unknown}
            some = [k for k in unknown if 0 < len(blind[k]) < len(view.turns) and least[k]]
            full = [k for k in unknown if k not in some]
            said = [f"usage has no {', '.join(full)} count"] if full else []
            said += [
                f"{listed('turn', blind[k])} reported no {k} count (the others: {least[k]:g})"
                for k in some
            ]
            return Verdict(UNVERIFIABLE, "; ".join(said) + shown + why)
        return Verdict(PASSED, "tokens " + ", ".join(parts))


def _turns_without(view: EvidenceView, key: str) -> list[str]:
    """The turns in view whose usage has no ``key`` count (a ``total`` is there
    when the turn gave ``input`` and ``output``)."""
    out = []
    for t in view.turns:
        usage = t.usage or {}
        parts = (_count(usage.get("input")), _count(usage.get("output")))
        if _count(usage.get(key)) is None and (key != "total" or None in parts):
            out.append(str(t.turn))
    return out


def _at_least(turn: Any, key: str) -> int | float:
    """What a turn reported of a count: its usage's, else (a turn some of whose
    iterations left it out) what the others reported, else 0."""
    return (
        _count((turn.usage or {}).get(key))
        or _count((turn.evidence.get("usage_at_least") or {}).get(key))
        or 0
    )


def _count(value: Any) -> int | float | None:
    """A token count as a number, ``None`` for anything else (a redacted one)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


class MaxSeconds(CriterionType):
    name = "max_seconds"
    description = "the turn's execute took at most N seconds (default: the last turn)"

    def parse(self, value: Any) -> float:
        from marshmallow import ValidationError

        if not finite_number(value) or value <= 0:
            from rook_core.schemafields import duration_hint

            hint = duration_hint(value) if isinstance(value, str) else None  # `5s`
            if hint is not None:
                raise ValidationError(f"must be a number of seconds > 0: {hint}")
            raise ValidationError(with_yaml_hint("must be a number of seconds > 0", value))
        return float(value)

    def evaluate(self, config: float, view: EvidenceView) -> Verdict:
        ok = view.seconds <= config
        return Verdict(
            PASSED if ok else FAILED, f"{view.seconds:.3f} s (max {_as_written(config)} s)"
        )


def with_yaml_hint(message: str, value: Any, whole: bool = False) -> str:
    """``message``, with why YAML read ``value`` (``1e-7``) as text when it did, or
    what is wrong with a number no limit takes (``not a number (.nan)``, ``too
    large: ...``, see :func:`~rook_core.schemafields.non_finite`): the error path
    of a limit's parse."""
    from rook_core.schemafields import non_finite, number_as_text

    hint = number_as_text(value, whole) or non_finite(value, whole)
    return f"{message}: {hint}" if hint is not None else message


def _as_written(number: float) -> str:
    """``number`` as a limit is written, never in an exponent nor rounded as ``:g``
    shows it (``1e-06``, ``1.23457e+06``): ``0.000001``, ``1234567``, ``2.5``."""
    from decimal import Decimal

    text = format(Decimal(repr(number)), "f")
    return text[:-2] if text.endswith(".0") else text


class Claim(_CallCriterion):
    name = "claim"
    description = "when the answer says the action happened, the call log must show it"

    def parse(self, value: Any) -> dict[str, Any]:
        from marshmallow import ValidationError

        unknown_keys(value, ("says", "requires_call"))
        if not isinstance(value, dict) or "says" not in value or "requires_call" not in value:
            raise ValidationError(
                "must be a mapping with says (a regular expression) and requires_call"
            )
        try:  # ignoring case as contains does: Unicode's full folding (and NFC)
            says = _regex(value["says"], IGNORECASE | FULLCASE)
        except ValidationError as exc:
            raise ValidationError({"says": exc.messages}) from None
        try:
            call = _call_spec(value["requires_call"])
        except ValidationError as exc:
            raise ValidationError({"requires_call": exc.messages}) from None
        return {"says": says, "call": call}

    def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        # The answer is the last turn's unless turn: all or turn: N says otherwise;
        # the call may have been made in any turn in view.
        answers = view.turns[-1:] if view.scope == "last" else view.turns
        try:
            claims = [
                t for t in answers if t.output and search(config["says"], same_form(t.output))
            ]
        except TooSlow as exc:
            return Verdict(ERROR, f"says: {exc}")
        if not claims:
            return Verdict(PASSED, f"the answer makes no claim matching /{config['says'].pattern}/")
        if view.calls is None:
            if _matching(config["call"], _seen_calls(view)):
                return Verdict(
                    PASSED, f"claim backed by a call to {_describe(config['call'])} ({PARTIAL})"
                )
            blind = [str(t.turn) for t in view.turns if t.calls is None]
            where = (  # the turns that reported theirs are not the ones missing
                f"the calls of {listed('turn', blind)} were"
                if len(blind) < len(view.turns)
                else "calls were"
            )
            return Verdict(
                UNVERIFIABLE,
                f"the answer claims it (turn {claims[0].turn}) but {where} not observed",
            )
        if _matching(config["call"], view.calls):
            return Verdict(PASSED, f"claim backed by a call to {_describe(config['call'])}")
        claimed = f"turn {claims[0].turn} claims /{config['says'].pattern}/ but "
        if (odd := _unreadable(config["call"], view.calls)) is not None:
            return Verdict(UNVERIFIABLE, claimed + odd.reason)
        missing = (  # with turn: N its calls alone are in view: a later call is not
            f"was not called in turn {view.scope}"
            if isinstance(view.scope, int)
            else "was never called"
        )
        return Verdict(FAILED, f"{claimed}{_describe(config['call'])} {missing}")


BUILTINS = [
    Contains,
    NotContains,
    Matches,
    NotMatches,
    Equals,
    NotEquals,
    Json,
    Called,
    NotCalled,
    CallOrder,
    MaxCalls,
    MaxTokens,
    MaxSeconds,
    Claim,
]


@hookimpl
def rook_register_criteria(register: Any) -> None:
    for cls in BUILTINS:
        register(cls())
