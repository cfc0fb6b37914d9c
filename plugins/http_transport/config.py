"""The ``http:`` hook entry: its schema (the normal form it validates into,
:class:`HttpConfig`, lives in :mod:`.entry`).

Validated with marshmallow; unknown keys are refused and every error names
the field (``hooks.execute.http.extract.output: not a valid JMESPath ...``).
Extraction paths are JMESPath expressions (https://jmespath.org), compiled
here so a typo is found before anything runs.
"""

from __future__ import annotations

import json
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from marshmallow import (
    RAISE,
    Schema,
    ValidationError,
    fields,
    pre_load,
    validate,
    validates_schema,
)

from rook_core.schemafields import StrictFloat, StrictInteger, explain_unknown
from rook_core.urlcheck import shown, url_problem

from .entry import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    HttpConfig,
    Path,
    header_problem,
)
from .template import BUILTINS, PLACEHOLDER, SAVED_NAME, check_name, placeholders

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
CONTRACT_FIELDS = ("output", "agent_reply", "conversation", "usage", "calls")


def _compile(text: str) -> Path:
    try:
        return Path(text, jmespath.compile(text))
    except JMESPathError as exc:
        why = getattr(exc, "message", None) or getattr(exc, "msg", None) or type(exc).__name__
        if type(exc).__name__ == "IncompleteExpressionError":
            why = "the expression ends too early"
        where = getattr(exc, "lex_position", None)
        at = f" at character {where + 1}" if isinstance(where, int) else ""
        raise ValidationError(f"not a valid JMESPath expression ({why}{at}): {text!r}") from None


class JMESPathField(fields.Field):
    """A string holding a JMESPath expression; deserialises to :class:`Path`."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Path:
        text = value if isinstance(value, str) else ""
        if not text.strip():
            raise ValidationError("must be a JMESPath expression, e.g. choices[0].message.content")
        return _compile(text)


class VerifyField(fields.Field):
    """``verify_tls``: true, false, or the path of a CA bundle file."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in BOOLEAN_WORDS:
            raise ValidationError(  # text in quotes: it would be looked for as a file
                f"must be true or false unquoted (YAML reads {value!r} in quotes as text), "
                "or the path of a CA bundle (PEM) file"
            )
        if isinstance(value, bool) or (isinstance(value, str) and value.strip()):
            return value
        raise ValidationError("must be true, false or the path of a CA bundle (PEM) file")


BOOLEAN_WORDS = ("true", "false", "yes", "no", "on", "off")


def _name_key(error: str) -> Any:
    return fields.String(validate=validate.Regexp(SAVED_NAME, error=error))


class UsageSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {"type": "must be a mapping: {input: PATH, output: PATH}"}

    input = JMESPathField()
    output = JMESPathField()


class ExtractSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {  # marshmallow reads it from the class: its "Invalid input type."
        "type": "must be a mapping of JMESPath expressions: {output: PATH, conversation: "
        "PATH, usage: {input: PATH, output: PATH}, calls: PATH, evidence: {NAME: PATH}}"
    }

    output = JMESPathField()
    conversation = JMESPathField()
    usage = fields.Nested(UsageSchema)
    calls = JMESPathField()
    evidence = fields.Dict(
        keys=_name_key("must be a field name (letters, digits, _)"), values=JMESPathField()
    )

    @pre_load
    def _dotted(self, data: Any, **kwargs: Any) -> Any:
        """``usage.input: PATH`` (as prose writes it) is ``usage: {input: PATH}``."""
        if isinstance(data, dict):
            dotted = {
                str(k): str(k).split(".", 1)
                for k in data
                if isinstance(k, str) and "." in k and k.split(".", 1)[0] in self.fields
            }
            if dotted:
                raise ValidationError(
                    {
                        k: [f"write it nested: {head}: {{{tail}: ...}}"]
                        for k, (head, tail) in dotted.items()
                    }
                )
        return data

    @validates_schema
    def _evidence_names(self, data: dict[str, Any], **kwargs: Any) -> None:
        clash = [n for n in data.get("evidence", {}) if n in CONTRACT_FIELDS]
        if clash:
            raise ValidationError(
                {
                    "evidence": [
                        f"{', '.join(clash)}: already a hook-contract field; extract it "
                        "under its own key instead"
                    ]
                }
            )


class DigestSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {"type": "must be a mapping: {username: ..., password: ...}"}

    username = fields.String(required=True)
    password = fields.String(required=True)


class AuthSchema(Schema):
    class Meta:
        unknown = RAISE

    error_messages = {"type": "must be a mapping: {digest: {username: ..., password: ...}}"}

    digest = fields.Nested(
        DigestSchema,
        required=True,
        error_messages={
            "required": "missing: the Digest credentials, {{username: ..., password: ...}}"
        },
    )


class HttpSchema(Schema):
    class Meta:
        unknown = RAISE

    url = fields.String(
        required=True,
        validate=validate.Length(
            min=1, error="empty: give the URL to send the request to (http:// or https://)"
        ),
        error_messages={
            "required": "missing: the URL to send the request to (http:// or https://)",
            "invalid": "must be a URL, as text (http:// or https://)",
        },
    )
    method = fields.String()
    headers = fields.Dict(keys=fields.String(validate=validate.Length(min=1)), values=fields.Raw())
    query = fields.Dict(keys=fields.String(validate=validate.Length(min=1)), values=fields.Raw())
    body = fields.Raw(allow_none=True)
    form = fields.Dict(keys=fields.String(), values=fields.Raw())
    auth = fields.Nested(AuthSchema)
    timeout_seconds = StrictFloat(validate=validate.Range(min=0, min_inclusive=False))
    verify_tls = VerifyField()
    retries = StrictInteger(validate=validate.Range(min=0, max=20))
    backoff_seconds = StrictFloat(validate=validate.Range(min=0, max=300))
    stream = fields.String(
        allow_none=True,
        validate=validate.OneOf(["sse", "none"]),
        error_messages={"invalid": "must be sse (or none), as text"},
    )
    extract = fields.Nested(ExtractSchema)
    save = fields.Dict(
        keys=_name_key("must be a name made of letters, digits and _"), values=JMESPathField()
    )

    @validates_schema(skip_on_field_errors=False)
    def _whole(self, data: dict[str, Any], **kwargs: Any) -> None:
        errors: dict[str, list[str]] = {}
        method = str(data.get("method", "POST")).upper()
        if method not in METHODS:
            errors["method"] = [f"must be one of {', '.join(METHODS)}"]
        if "body" in data and "form" in data:
            errors["form"] = ["give body (JSON) or form (form-encoded), not both"]
        url = data.get("url", "")
        if "url" not in data:  # missing, empty or no text: its own message says so
            pass
        elif not url.startswith(("http://", "https://", "{{")):
            errors["url"] = [
                "must start with http:// or https:// (or a placeholder such as {{env.BASE_URL}})"
            ]
        elif isinstance(url, str) and not any(placeholders(url)):
            problem = url_problem(url)
            if problem:
                errors["url"] = [f"{problem}: {shown(url)!r}"]
        for name in data.get("save", {}):
            if name in BUILTINS or name == "env":
                errors.setdefault("save", []).append(
                    f"{name}: a name Rook fills in itself; choose another name"
                )
        for key in ("url", "headers", "query", "body", "form", "auth"):
            if key not in data:
                continue
            for where, name in placeholders(data[key], key):
                problem = check_name(name)
                if problem:
                    errors.setdefault(where, []).append(problem)
        for key in ("query", "body", "form"):
            for where in _placeholder_keys(data.get(key), key):
                errors.setdefault(where, []).append(
                    "a placeholder in a key would be sent as written: Rook fills "
                    "placeholders in values only; put it in a value"
                )
        if _json_text(data.get("body")):
            errors.setdefault("body", []).append(
                "JSON written as a string, holding placeholders: a value with a quote, a "
                "backslash or a line break (a goal, say) would break it. Write the body as "
                "YAML: remove the quotes around it (JSON is YAML), and Rook fills the "
                "placeholders inside the structure"
            )
        for k, v in (data.get("headers") or {}).items():
            if isinstance(v, (dict, list)):
                errors.setdefault(f"headers.{k}", []).append("must be a string")
                continue
            literal = v if isinstance(v, str) and not any(placeholders(v)) else None
            problem = header_problem(k, literal)
            if problem:
                errors.setdefault(f"headers.{k}", []).append(problem)
        for key in ("headers", "query", "body", "form"):
            try:
                json.dumps(data.get(key), allow_nan=False)
            except (TypeError, ValueError) as exc:
                errors.setdefault(key, []).append(
                    f"holds a value that is not JSON ({exc}); quote dates and times in YAML"
                )
        if errors:
            raise ValidationError(errors)


def _placeholder_keys(value: Any, path: str) -> list[str]:
    """The field path of every mapping key inside ``value`` that holds a placeholder."""
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{path}.{k}"
            if PLACEHOLDER.search(str(k)):
                found.append(where)
            found.extend(_placeholder_keys(v, where))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(_placeholder_keys(v, f"{path}.{i}"))
    return found


def _json_text(body: Any) -> bool:
    """Whether ``body`` is a JSON object or list written as one string, with
    placeholders (``'{"q": "{{goal}}"}'``): filled as text, a value could break it."""
    if not isinstance(body, str) or not any(placeholders(body)):
        return False
    try:  # each placeholder as a number: it may stand inside quotes or for a value
        parsed = json.loads(PLACEHOLDER.sub("0", body))
    except ValueError:
        return False
    return isinstance(parsed, (dict, list))


def _by_name(messages: Any) -> Any:
    """``messages`` with a mapping's entry named as the file names it (``headers.X-Trace``),
    not by marshmallow's ``.value`` (or ``.key``) inside it: no field of an entry is
    called so."""
    if not isinstance(messages, dict):
        return messages
    if messages and set(messages) <= {"key", "value"}:
        if all(isinstance(m, list) for m in messages.values()):
            return [m for part in ("key", "value") for m in messages.get(part, [])]
    return {k: _by_name(v) for k, v in messages.items()}


def load_config(value: Any) -> HttpConfig:
    """Validate an ``http:`` entry and return its :class:`HttpConfig`.

    Raises ``marshmallow.ValidationError`` keyed by the field at fault.
    """
    if not isinstance(value, dict):
        raise ValidationError("must be a mapping with url, method, headers, body, extract ...")
    schema = HttpSchema()
    try:
        data = schema.load(value)
    except ValidationError as exc:  # a misspelt key: the one it looks like, else every one
        raise ValidationError(_by_name(explain_unknown(exc.messages, schema))) from None
    method = str(data.get("method") or ("POST" if "body" in data or "form" in data else "GET"))
    names: list[str] = []
    for key in ("url", "headers", "query", "body", "form", "auth"):
        for _, name in placeholders(data.get(key), key):
            if name not in BUILTINS and not name.startswith("env.") and name not in names:
                names.append(name)
    stream = data.get("stream")
    return HttpConfig(
        url=data["url"],
        method=method.upper(),
        headers=dict(data.get("headers") or {}),
        query=dict(data.get("query") or {}),
        body=data.get("body"),
        has_body="body" in data,
        form=data.get("form"),
        auth=data.get("auth"),
        timeout_seconds=data.get("timeout_seconds"),
        verify_tls=data.get("verify_tls", True),
        retries=data.get("retries", DEFAULT_RETRIES),
        backoff_seconds=data.get("backoff_seconds", DEFAULT_BACKOFF),
        stream=None if stream in (None, "none") else stream,
        extract=data.get("extract"),
        save=dict(data.get("save") or {}),
        names=names,
    )
