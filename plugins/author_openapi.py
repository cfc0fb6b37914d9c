"""Built-in author: an OpenAPI 3 document (a file, or a URL serving one).

It picks the operation that takes a message (a request body with a
``message``/``prompt``/``input``/... string or a chat ``messages`` list, or a
GET with such a query parameter) and asks when several fit equally
(``--operation ID``). A path parameter such as ``/sessions/{id}/messages`` is
filled from an ``open`` hook that creates the session (the POST on the parent
path) and closed by its DELETE, when the document has them. Security schemes
become ``env`` references; the response schema gives the first guess of
where the answer is, and the probe corrects it.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urljoin, urlsplit, urlunsplit

from rook_core.errors import ConfigError
from rook_core.hookio import whole_characters

from .author_http import (
    GOAL,
    MESSAGE_KEYS,
    HttpAuthor,
    basic_header,
    move_header_secrets,
    move_value_secrets,
    split_userinfo,
)
from .author_shapes import find_answer, find_conversation, find_usage, jmes

if TYPE_CHECKING:
    from collections.abc import Callable

    from rook_core.authoring import AuthorRequest, Draft, Source

METHODS = ("post", "put", "patch", "get")
HINT = re.compile(r"(chat|message|ask|prompt|complet|query|convers|question|answer|agent)", re.I)
PARAM = re.compile(r"\{([^{}]+)\}")
# How deeply a document may nest: about where Python's recursion limit stops
# the YAML parser (and the JSON one before Python 3.13)
MAX_DEPTH = 900


OPENAPI_JSON = re.compile(r'^\s*\{\s*"(?:openapi|swagger)"\s*:|"(?:openapi|swagger)"\s*:\s*"[23]\.')
OPENAPI_YAML = re.compile(r"^(?:openapi|swagger)\s*:\s*[\"']?[23]\.", re.M)
"""The ``openapi``/``swagger`` key of a document that does not parse: its typo is named."""


def load_document(text: str, label: str = "the source") -> dict[str, Any] | None:
    """The document when ``text`` is an OpenAPI (or Swagger) document, else ``None``.

    Text nested too deeply to parse is refused (``ConfigError`` naming ``label``)."""
    import yaml

    text = text.removeprefix("\ufeff")  # a byte order mark (Windows tools write one)
    as_json = text.lstrip().startswith("{")
    try:
        doc = json.loads(text) if as_json else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        if not (OPENAPI_JSON if as_json else OPENAPI_YAML).search(text[:4096]):
            return None  # no OpenAPI document: another author's, or none
        mark = getattr(exc, "problem_mark", None)  # a typo in one: said where
        line, col = (mark.line + 1, mark.column + 1) if mark else (exc.lineno, exc.colno)  # type: ignore[union-attr]
        problem = getattr(exc, "problem", None) or getattr(exc, "msg", None) or str(exc)
        raise ConfigError(
            f"{label}: not valid {'JSON' if as_json else 'YAML'} at line {line}, column "
            f"{col}: {problem} (an OpenAPI document, by its openapi: key)"
        ) from None
    except RecursionError:
        raise _too_deep(label) from None
    if text.count("[") + text.count("{") > MAX_DEPTH and _nests_deeper(doc, MAX_DEPTH):
        raise _too_deep(label)  # Python 3.13's JSON parser reads some 10,000 levels
    if as_json and _HALF.search(text):  # "\ud83d" alone: no request or YAML file holds it
        try:
            doc = whole_characters(doc)
        except RecursionError:  # pragma: no cover - a document near MAX_DEPTH
            pass
    if isinstance(doc, dict) and ("openapi" in doc or "swagger" in doc) and "paths" in doc:
        return doc
    return None


_HALF = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of half of a UTF-16 pair (``\\ud83d``): one may be alone."""


def _too_deep(label: str) -> ConfigError:
    return ConfigError(
        f"{label}: nested too deeply to read (JSON or YAML more than about {MAX_DEPTH} "
        "levels deep; an OpenAPI document is far shallower)"
    )


def _nests_deeper(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, (dict, list)):
            inner = node.values() if isinstance(node, dict) else node
            stack.extend((v, depth + 1) for v in inner if isinstance(v, (dict, list)))
    return False


def deref(doc: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """Follow local ``$ref``s (``#/components/schemas/X``)."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 20:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ConfigError(f"OpenAPI: only local $ref are supported, not {ref!r}")
        target: Any = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise ConfigError(f"OpenAPI: $ref {ref!r} points at nothing")
            target = target[part]
        node, depth = target, depth + 1
    return node


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    names: dict[type, str] = {dict: "a mapping", list: "a list", str: "text"}
    return names.get(type(value), "a number")


class Shapes:
    """Checks the shape of every part of a document that Rook reads, before it reads
    them: a wrong one is named by its field path (``paths./ask.post.requestBody``)."""

    def __init__(self, doc: dict[str, Any], label: str) -> None:
        self.doc, self.label, self.seen = doc, label, set[str]()

    def fail(self, where: str, what: str) -> None:
        raise ConfigError(f"{self.label}: {where}: {what} (not a valid OpenAPI 3 document)")

    def mapping(self, value: Any, where: str, null: bool = True) -> dict[Any, Any]:
        if value is None and null:
            return {}
        if not isinstance(value, dict):
            self.fail(where, f"expected a mapping, not {_kind(value)}")
        return value  # type: ignore[no-any-return]

    def listing(self, value: Any, where: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(where, f"expected a list, not {_kind(value)}")
        return value  # type: ignore[no-any-return]

    def ref(self, value: Any, where: str) -> tuple[Any, str]:
        """``value`` with its ``$ref``s followed, and where it is."""
        chain: list[str] = []
        while isinstance(value, dict) and "$ref" in value:
            ref = value["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#/"):
                self.fail(f"{where}.$ref", f"only local $ref ('#/...') are read, not {ref!r}")
            if ref in chain:
                self.fail(f"{where}.$ref", "a $ref cycle: " + " -> ".join([*chain, ref]))
            chain.append(ref)
            target: Any = self.doc
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    self.fail(f"{where}.$ref", f"{ref!r} points at nothing")
                target = target[part]
            value, where = target, ref[2:].replace("/", ".")
        return value, where

    def schema(self, value: Any, where: str) -> None:
        value, where = self.ref(value, where)
        if where in self.seen:  # a schema that holds itself (a tree) is checked once
            return
        self.seen.add(where)
        node = self.mapping(value, where)
        for key, prop in self.mapping(node.get("properties"), f"{where}.properties").items():
            self.schema(prop, f"{where}.properties.{key}")
        for key in ("allOf", "anyOf", "oneOf"):
            for i, part in enumerate(self.listing(node.get(key), f"{where}.{key}")):
                self.schema(part, f"{where}.{key}[{i}]")
        if "items" in node:
            self.schema(node["items"], f"{where}.items")
        self.listing(node.get("required"), f"{where}.required")
        self.listing(node.get("enum"), f"{where}.enum")
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if not all(isinstance(k, str) for k in kinds if k is not None):
            self.fail(f"{where}.type", f"expected a type name, not {_kind(kind)}")

    def content(self, holder: Any, where: str) -> None:
        holder, where = self.ref(holder, where)
        node = self.mapping(holder, where)
        for ctype, media in self.mapping(node.get("content"), f"{where}.content").items():
            media = self.mapping(media, f"{where}.content.{ctype}")
            if "schema" in media:
                self.schema(media["schema"], f"{where}.content.{ctype}.schema")

    def parameters(self, value: Any, where: str) -> None:
        for i, p in enumerate(self.listing(value, where)):
            p, at = self.ref(p, f"{where}[{i}]")
            self.mapping(p, at, null=False)

    def security(self, value: Any, where: str, schemes: dict[str, Any]) -> None:
        for i, requirement in enumerate(self.listing(value, where)):
            for name in self.mapping(requirement, f"{where}[{i}]", null=False):
                if name not in schemes:
                    self.fail(
                        f"{where}[{i}]",
                        f"names the scheme {name!r}, which components.securitySchemes "
                        "does not define",
                    )
                s, at = self.ref(schemes[name], f"components.securitySchemes.{name}")
                s = self.mapping(s, at, null=False)
                for key in ("type", "scheme", "name", "in"):
                    if key in s and not isinstance(s[key], str):
                        self.fail(f"{at}.{key}", f"expected text, not {_kind(s[key])}")

    def check(self) -> None:
        """Every part that authoring reads (``servers`` is checked where it is read)."""
        doc = self.doc
        components = self.mapping(doc.get("components"), "components")
        schemes = self.mapping(components.get("securitySchemes"), "components.securitySchemes")
        self.security(doc.get("security"), "security", schemes)
        for path, item in self.mapping(doc.get("paths"), "paths", null=False).items():
            if str(path).startswith("x-"):  # an extension, not a path
                continue
            where = f"paths.{path}"
            item = self.mapping(item, where)
            self.parameters(item.get("parameters"), f"{where}.parameters")
            for method in (*METHODS, "delete"):
                if method not in item:
                    continue
                at = f"{where}.{method}"
                op = self.mapping(item[method], at, null=False)
                self.parameters(op.get("parameters"), f"{at}.parameters")
                if op.get("requestBody") is not None:
                    self.content(op["requestBody"], f"{at}.requestBody")
                responses = self.mapping(op.get("responses"), f"{at}.responses")
                for code in ("200", "201", 200, 201):
                    if responses.get(code) is not None:
                        self.content(responses[code], f"{at}.responses.{code}")
                self.security(op.get("security"), f"{at}.security", schemes)


def schema_of(doc: dict[str, Any], node: Any, depth: int = 0) -> dict[str, Any]:
    """``node`` as one plain schema: ``$ref`` followed, ``allOf`` merged (properties
    and ``required`` joined), an ``anyOf``/``oneOf`` with one alternative besides
    ``null`` taken as that alternative, and an OpenAPI 3.1 type list (``[string,
    "null"]``) as its one type besides ``null``."""
    schema = deref(doc, node)
    if not isinstance(schema, dict) or depth > 20:
        return {}
    schema = dict(schema)
    for part in schema.pop("allOf", None) or []:
        sub = schema_of(doc, part, depth + 1)
        schema["properties"] = {**(sub.get("properties") or {}), **(schema.get("properties") or {})}
        schema["required"] = [*(schema.get("required") or []), *(sub.get("required") or [])]
        for key, value in sub.items():
            schema.setdefault(key, value)
    for key in ("anyOf", "oneOf"):
        options = [
            o for o in (schema.get(key) or []) if schema_of(doc, o, depth + 1).get("type") != "null"
        ]
        if len(options) == 1:
            del schema[key]
            for k, v in schema_of(doc, options[0], depth + 1).items():
                schema.setdefault(k, v)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        schema["type"] = kinds[0] if len(kinds) == 1 else None
    return schema


def json_schema(doc: dict[str, Any], holder: Any) -> Any:
    """The JSON schema of a requestBody or response, or ``None``."""
    content = (deref(doc, holder) or {}).get("content") or {}
    for ctype, media in content.items():
        if "json" in ctype:
            return schema_of(doc, (media or {}).get("schema") or {})
    return None


def sample(doc: dict[str, Any], schema: Any, message: str | None, depth: int = 0) -> Any:
    """A value for ``schema``: required properties only, ``message`` set to the goal;
    ``null`` below 8 levels (a schema that requires itself has no finite value)."""
    if depth > 8:
        return None
    schema = schema_of(doc, schema)
    if "const" in schema:  # OpenAPI 3.1: the one value the field may hold
        return _as_json(schema["const"])
    for key in ("example", "default"):
        if key in schema and depth > 0:
            return _as_json(schema[key])
    if "enum" in schema and schema["enum"]:
        return _as_json(schema["enum"][0])
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        keep = [k for k in props if k in (schema.get("required") or []) or k == message]
        return {k: (GOAL if k == message else sample(doc, props[k], None, depth + 1)) for k in keep}
    if kind == "array":
        return []
    return {"integer": 0, "number": 0, "boolean": False}.get(kind or "", "")


def _as_json(value: Any) -> Any:
    """``value`` with the dates and times YAML reads from bare text (``example:
    2024-01-01``) as the text they were written as: JSON has no date."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    return value


def message_field(doc: dict[str, Any], schema: Any) -> str | None:
    props = schema_of(doc, schema).get("properties") or {}
    for name in ("messages", *MESSAGE_KEYS):
        for key, prop in props.items():
            if key.lower() == name:
                kind = schema_of(doc, prop).get("type")
                if kind == "string" or (name == "messages" and kind == "array"):
                    return key
    return None


def candidates(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Operations that take a message, best first."""
    found = []
    for path, item in (doc.get("paths") or {}).items():
        if str(path).startswith("x-"):  # an extension, not a path
            continue
        for method in METHODS:
            op = (item or {}).get(method)
            if not isinstance(op, dict):
                continue
            field, where = None, "body"
            if method == "get":  # the path's parameters apply to each of its operations
                shared = [*((item or {}).get("parameters") or []), *(op.get("parameters") or [])]
                for p in [deref(doc, p) for p in shared]:
                    if p.get("in") == "query" and str(p.get("name", "")).lower() in MESSAGE_KEYS:
                        field, where = p["name"], "query"
            else:
                field = message_field(doc, json_schema(doc, op.get("requestBody") or {}) or {})
            if field is None:
                continue
            text = f"{op.get('operationId', '')} {op.get('summary', '')} {path}"
            score = 3 + (1 if HINT.search(text) else 0) + (1 if where == "body" else 0)
            found.append(
                {
                    "id": op.get("operationId") or f"{method.upper()} {path}",
                    "path": path,
                    "method": method,
                    "op": op,
                    "field": field,
                    "where": where,
                    "score": score,
                    "what": op.get("summary") or f"{method.upper()} {path}",
                }
            )
    return sorted(found, key=lambda c: -c["score"])


def pick(found: list[dict[str, Any]], wanted: str | None) -> dict[str, Any]:
    from rook_core.authoring import CannotAuthor, NeedsChoice

    if not found:
        raise CannotAuthor("no operation of the OpenAPI document takes a message")
    if wanted:
        for c in found:
            if wanted.lower() in (c["id"].lower(), f"{c['method']} {c['path']}".lower()):
                return c
        listing = ", ".join(c["id"] for c in found)
        raise ConfigError(f"--operation {wanted}: no such operation takes a message ({listing})")
    best = [c for c in found if c["score"] == found[0]["score"]]
    if len(best) > 1:
        raise NeedsChoice(
            "several operations of the OpenAPI document take a message",
            "--operation",
            [(c["id"], f"{c['method'].upper()} {c['path']}: {c['what']}") for c in found],
        )
    return best[0]


def _at(base: str, path: str) -> str:
    """``base`` with ``path`` appended to its path: before its query (never after it);
    a fragment, which is never sent, is dropped."""
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path, fragment=""))


def base_url(doc: dict[str, Any], request: AuthorRequest) -> str:
    given = request.options.get("base_url")
    if given:
        return str(given).rstrip("/")
    shapes = Shapes(doc, request.source.label)
    servers = shapes.listing(doc.get("servers"), "servers")
    first = shapes.mapping(servers[0], "servers[0]", null=False) if servers else {}
    if first.get("url") is not None and not isinstance(first["url"], str):
        shapes.fail("servers[0].url", f"expected text, not {_kind(first['url'])}")
    if first.get("url"):
        url = str(first["url"])
        for name, var in shapes.mapping(first.get("variables"), "servers[0].variables").items():
            var = shapes.mapping(var, f"servers[0].variables.{name}")
            url = url.replace("{" + name + "}", str(var.get("default", "")))
        if url.startswith(("http://", "https://")):
            return url.rstrip("/")
        base = request.source.fetched_url or request.source.url  # after redirects
        if base:
            return urljoin(base, url).rstrip("/")
        path = "/" + url.strip("/") if url.strip("/") else ""
        raise ConfigError(  # a file: nothing to resolve it against
            f"{request.source.label}: the OpenAPI document's server URL {url!r} "
            "(servers[0].url) is relative, and a file has no "
            "address to resolve it against; give the whole server URL with --base-url URL "
            f"(such as https://HOST{path})"
        )
    base = request.source.fetched_url or request.source.url
    if base:
        return urljoin(base, "/").rstrip("/")
    raise ConfigError(
        f"{request.source.label}: the OpenAPI document names no server URL (servers); "
        "give it with --base-url URL"
    )


# http schemes that answer the server's challenge on each request: no fixed header sends
# them (digest an http entry answers with its auth.digest)
CHALLENGE = ("negotiate", "ntlm", "hoba", "mutual", "scram-sha-1", "scram-sha-256")
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an auth scheme's name (RFC 9110 token)


def _sendable(doc: dict[str, Any], schemes: dict[str, Any], requirement: Any) -> bool:
    """Whether every scheme of one security requirement can be sent as a fixed header."""
    for name in requirement or {}:
        s = deref(doc, schemes.get(name) or {})
        if s.get("type") == "http" and str(s.get("scheme", "")).lower() in CHALLENGE:
            return False
    return True


Credentials = tuple[dict[str, str], dict[str, str], dict[str, Any]]
"""An operation's credential headers, query parameters and auth (an auth.digest)."""


def _requirements(doc: dict[str, Any], op: dict[str, Any]) -> Any:
    """The operation's security requirements: its own, else the document's."""
    return op.get("security", doc.get("security")) or []


def _challenged(doc: dict[str, Any], op: dict[str, Any]) -> bool:
    """Whether the operation asks for credentials and Rook can send none of its
    alternatives (each holds a scheme such as ``ntlm`` that answers a challenge)."""
    reqs = _requirements(doc, op)
    schemes = (doc.get("components") or {}).get("securitySchemes") or {}
    return bool(reqs) and not any(_sendable(doc, schemes, r) for r in reqs)


def security_headers(
    doc: dict[str, Any],
    op: dict[str, Any],
    request: AuthorRequest,
    where: str,
    notes: list[str],
    userinfo: tuple[str, str] | None = None,
    given: dict[str, str] | None = None,
    auth: dict[str, Any] | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """Headers and query parameters carrying the operation's credentials, from env.

    Of the alternative requirements, the first that Rook can send; a scheme that
    answers a challenge (``http`` ``negotiate``, ``ntlm``...) is never sent as a
    fixed header: ``notes`` says so. An ``http`` ``digest`` scheme fills ``auth``
    (an entry's ``auth: {digest: ...}``). ``userinfo`` (a user and password in the
    URL) is the value of an ``http`` ``basic`` or ``digest`` scheme, and ``given``
    (the document URL's query) that of an ``apiKey`` in the query of the same name."""
    headers: dict[str, str] = {}
    query: dict[str, str] = {}
    reqs = _requirements(doc, op)
    schemes = (doc.get("components") or {}).get("securitySchemes") or {}
    chosen = next((r for r in reqs if _sendable(doc, schemes, r)), reqs[0] if reqs else {})
    for name in chosen or {}:
        s = deref(doc, schemes.get(name) or {})
        kind, purpose = s.get("type"), f"{name} credential for {where} (OpenAPI security scheme)"
        scheme = str(s.get("scheme", "")).strip()
        if kind == "apiKey":
            found = (given or {}).get(str(s.get("name"))) if s.get("in") == "query" else None
            var = request.secrets.add("API_KEY", purpose, found or None)
            target = query if s.get("in") == "query" else headers
            key = s.get("name", "X-API-Key") if s.get("in") != "cookie" else "Cookie"
            value = (
                f"{{{{env.{var}}}}}"
                if s.get("in") != "cookie"
                else f"{s.get('name')}={{{{env.{var}}}}}"
            )
            target[key] = value
        elif kind == "http" and scheme.lower() == "digest" and auth is not None:
            if userinfo is not None:  # the user name is no secret; the password is
                user = userinfo[0]
                word = request.secrets.add("DIGEST_PASSWORD", purpose, userinfo[1] or None)
            else:
                user = f"{{{{env.{request.secrets.add('DIGEST_USER', purpose + ': user')}}}}}"
                word = request.secrets.add("DIGEST_PASSWORD", purpose + ": password")
            auth["digest"] = {"username": user, "password": f"{{{{env.{word}}}}}"}
        elif kind == "http" and scheme.lower() in CHALLENGE:
            notes.append(
                f"security scheme {name} (http {scheme}) is not sent: {scheme} authentication "
                "answers a challenge from the server on each request, and an http hook sends "
                "fixed headers; send the credential from a script hook, or use a scheme of "
                "the API that takes a fixed header (bearer, basic, an API key)"
            )
        elif kind == "http" and scheme.lower() == "basic" and userinfo is not None:
            headers["Authorization"] = basic_header(*userinfo, request.secrets, where)
        elif kind == "http" and scheme.lower() == "basic":
            var = request.secrets.add("BASIC_AUTH", purpose + ": base64 of user:password")
            headers["Authorization"] = f"Basic {{{{env.{var}}}}}"
        elif kind == "http" and scheme.lower() not in ("", "bearer"):
            if not TOKEN.fullmatch(scheme):
                raise ConfigError(
                    f"OpenAPI: components.securitySchemes.{name}.scheme: {scheme!r} is not "
                    "the name of an HTTP authentication scheme (such as bearer, basic, token)"
                )
            var = request.secrets.add("API_TOKEN", purpose + f": sent as {scheme} TOKEN")
            headers["Authorization"] = f"{scheme} {{{{env.{var}}}}}"
        elif kind in ("http", "oauth2", "openIdConnect"):
            var = request.secrets.add("API_TOKEN", purpose)
            headers["Authorization"] = f"Bearer {{{{env.{var}}}}}"
    return headers, query


def required_parameters(
    doc: dict[str, Any],
    chosen: dict[str, Any],
    secrets: Any,
    where: str,
    notes: list[str],
    sent: set[str],
) -> tuple[dict[str, str], dict[str, str]]:
    """The operation's required header and query parameters (its path's too), each
    with its example, default, enum or const (a credential moved to env); one with
    none is named in a note. The message parameter, path parameters and those the
    security schemes send already (``sent``, lower case) aside."""
    item = (doc.get("paths") or {}).get(chosen["path"]) or {}
    shared = [*(item.get("parameters") or []), *(chosen["op"].get("parameters") or [])]
    headers: dict[str, str] = {}
    query: dict[str, str] = {}
    for param in [deref(doc, p) for p in shared]:
        name, place = str(param.get("name", "")), param.get("in")
        if not param.get("required") or place not in ("header", "query"):
            continue
        if place == "header" and name.lower() in ("accept", "content-type", "authorization"):
            continue  # OpenAPI ignores these as parameters
        if name.lower() in sent:  # a security scheme's credential is sent once
            continue
        if place == "query" and name == chosen["field"] and chosen["where"] == "query":
            continue
        if "example" in param:
            value = _as_json(param["example"])
        else:
            value = sample(doc, param.get("schema") or {}, None, 1)
        if value in ("", None) or isinstance(value, (dict, list)):
            notes.append(f"required {place} parameter {name}: no example in the document; add it")
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        (headers if place == "header" else query)[name] = text
    return (
        move_header_secrets(headers, secrets, where),
        move_value_secrets(query, secrets, where, "query parameter"),
    )


def _sent(headers: dict[str, str], query: dict[str, str]) -> set[str]:
    """The names the security schemes send already (lower case): sent once."""
    return {k.lower() for k in [*headers, *query]}


def _with_own(entry: dict[str, Any], own: tuple[dict[str, str], dict[str, str]]) -> dict:
    """``entry`` with the operation's own required header and query parameters."""
    for key, values in zip(("headers", "query"), own, strict=True):
        if values:
            entry[key] = {**values, **entry.get(key, {})}
    return entry


def _session_parameters(
    doc: dict[str, Any],
    path: str,
    op: dict[str, Any],
    url: str,
    secrets: Any,
    notes: list[str],
    sent: set[str],
    phase: str,
) -> tuple[dict[str, str], dict[str, str]]:
    """The required header and query parameters of the operation ``phase`` (open,
    close) sends, as :func:`required_parameters` gives execute's; its notes say
    ``phase``."""
    said: list[str] = []
    found = required_parameters(
        doc, {"path": path, "op": op, "field": None, "where": "body"}, secrets, url, said, sent
    )
    notes.extend(f"{phase}: {note}" for note in said)
    return found


def _with_auth(
    entry: dict[str, Any],
    headers: dict[str, str],
    query: dict[str, str],
    auth: dict[str, Any] | None = None,
) -> dict:
    if auth:  # an http digest scheme: each request answers the challenge
        entry["auth"] = auth
    if headers:
        entry["headers"] = {**headers, **entry.get("headers", {})}
    if query:
        entry["query"] = {**query, **entry.get("query", {})}
    return entry


def _response_guess(doc: dict[str, Any], op: dict[str, Any]) -> tuple[Any, Any]:
    for code in ("200", "201", 200, 201):
        resp = (op.get("responses") or {}).get(code)
        if resp is not None:
            schema = json_schema(doc, resp)
            if schema is None:
                return None, None
            return _example(doc, schema), schema
    return None, None


def _example(doc: dict[str, Any], schema: Any, depth: int = 0) -> Any:
    schema = schema_of(doc, schema)
    if depth > 6:
        return None
    if schema.get("type") == "object" or "properties" in schema:
        return {k: _example(doc, v, depth + 1) for k, v in (schema.get("properties") or {}).items()}
    if schema.get("type") == "array":
        return [_example(doc, schema.get("items") or {}, depth + 1)]
    if schema.get("type") == "string":
        return "an answer in words, as the agent would write it"
    return 0


class OpenApiAuthor(HttpAuthor):
    """OpenAPI 3 document -> ``http:`` entries (open/close too, for a session path)."""

    options = ("operation", "base_url")

    def detect(self, source: Source) -> float:
        if source.kind not in ("file", "stdin", "url"):  # a command line, notes: never one
            return 0.0
        return 1.0 if load_document(source.text, source.label) is not None else 0.0

    def suggest_name(self, source: Source) -> str | None:
        info = (load_document(source.text, source.label) or {}).get("info")
        title = str(info.get("title") or "") if isinstance(info, dict) else ""
        return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or None

    def write(self, request: AuthorRequest) -> Draft:
        try:
            return self._write(request)
        except (AttributeError, TypeError) as exc:  # a list or text where a mapping belongs
            raise ConfigError(
                f"{request.source.label}: not a valid OpenAPI 3 document (a field holds "
                f"the wrong kind of value: {exc})"
            ) from None
        except RecursionError:  # a shallow file whose $refs chain thousands of schemas
            raise ConfigError(
                f"{request.source.label}: its schemas nest too deeply to read (through "
                "nested schemas or a chain of $ref, more than about 900 levels)"
            ) from None

    def _write(self, request: AuthorRequest) -> Draft:
        from rook_core.authoring import Draft

        doc = load_document(request.source.text, request.source.label)
        assert doc is not None
        version = doc.get("openapi")
        number = isinstance(version, (int, float)) and not isinstance(version, bool)
        if not (isinstance(version, str) or number) or not str(version).startswith("3"):
            this = (
                f"Swagger {doc['swagger']}"
                if "openapi" not in doc
                else f"openapi: {json.dumps(version)}"
            )
            raise ConfigError(
                f"{request.source.label}: only OpenAPI 3 documents are supported (this one "
                f"is {this}); convert it, e.g. with swagger2openapi"
            )
        Shapes(doc, request.source.label).check()
        chosen = pick(candidates(doc), request.options.get("operation"))
        # a password in the document's URL (or its server URL) goes to env, never a file
        base, user, password = split_userinfo(base_url(doc, request))
        # the document URL's credentials, for a server on its host (never elsewhere)
        doc_url = request.source.url or ""
        here = urlsplit(base).hostname == urlsplit(doc_url).hostname
        if user is None and here:
            _, user, password = split_userinfo(doc_url)
        where = _at(base, chosen["path"])
        called = f"{chosen['method'].upper()} {chosen['path']}"  # also the id of one with none
        notes = [
            f"operation {chosen['id']}: {called}"
            if chosen["id"] != called
            else f"operation {called}"
        ]
        userinfo = (user, password or "") if user is not None else None
        given = dict(parse_qsl(urlsplit(doc_url).query)) if here else {}

        def own(op: dict[str, Any], at: str) -> Credentials:
            """The headers, query parameters and auth.digest carrying ``op``'s credentials."""
            auth: dict[str, Any] = {}  # an http digest scheme's auth.digest
            auth_h, auth_q = security_headers(doc, op, request, at, notes, userinfo, given, auth)
            if user is not None and "Authorization" not in auth_h and not auth:
                if _challenged(doc, op):  # as Basic, the password would go in clear
                    notes.append(
                        "the user and password in the URL are not sent as Basic: the API asks "
                        "for a scheme that answers a challenge, which an http hook cannot"
                    )
                else:
                    auth_h["Authorization"] = basic_header(
                        user, password or "", request.secrets, at
                    )
            return auth_h, auth_q, auth

        auth_h, auth_q, auth = execute = own(chosen["op"], where)

        def credentials(op: dict[str, Any], at: str) -> Credentials:
            """Those of a session operation: execute's when it asks for the same."""
            same = _requirements(doc, op) == _requirements(doc, chosen["op"])
            return execute if same else own(op, at)

        hooks: dict[str, Any] = {}
        url = _at(base, chosen["path"])
        params = PARAM.findall(chosen["path"])
        if params:
            url = self._session_hooks(
                doc, chosen, base, params, hooks, credentials, notes, request.secrets
            )
        entry: dict[str, Any] = {"url": url}
        if chosen["where"] == "query":
            entry.update(method="GET", query={chosen["field"]: GOAL})
        else:
            schema = json_schema(doc, chosen["op"].get("requestBody") or {})
            body = sample(doc, schema, chosen["field"])
            if chosen["field"].lower() == "messages":
                body["messages"] = [{"role": "user", "content": GOAL}]
            # an example credential (client_secret, a key-shaped value) goes to env
            entry["body"] = move_value_secrets(body, request.secrets, where, "field")
            if chosen["method"] != "post":
                entry["method"] = chosen["method"].upper()
        guess, _ = _response_guess(doc, chosen["op"])
        if isinstance(guess, dict):
            path = find_answer(guess)
            if path:
                entry["extract"] = {"output": jmes(path)}
                usage = find_usage(guess)  # the counts the schema declares, as a test finds them
                if usage:
                    entry["extract"]["usage"] = {k: jmes(p) for k, p in usage.items()}
        params_own = required_parameters(
            doc, chosen, request.secrets, where, notes, _sent(auth_h, auth_q)
        )
        hooks["execute"] = {"http": _with_auth(_with_own(entry, params_own), auth_h, auth_q, auth)}
        return Draft(
            hooks=hooks,
            notes=notes,
            turns=2 if "open" in hooks else 1,
            state={"kind": "openapi", "operation": chosen["id"]},
        )

    def _session_hooks(
        self,
        doc: dict[str, Any],
        chosen: dict[str, Any],
        base: str,
        params: list[str],
        hooks: dict[str, Any],
        credentials: Callable[[dict[str, Any], str], Credentials],
        notes: list[str],
        secrets: Any,
    ) -> str:
        from rook_core.authoring import CannotAuthor

        path = chosen["path"]
        if len(params) > 1:
            raise CannotAuthor(f"{path} needs {len(params)} path parameters; Rook fills one")
        parent = path[: path.index("{" + params[0] + "}")].rstrip("/")
        item = (doc.get("paths") or {}).get(parent) or {}
        create = item.get("post")
        if not isinstance(create, dict):
            raise CannotAuthor(
                f"{path} needs {{{params[0]}}}, and nothing in the document "
                f"creates one (no POST {parent})"
            )
        opener: dict[str, Any] = {"url": _at(base, parent)}
        body = sample(doc, json_schema(doc, create.get("requestBody") or {}) or {}, None)
        if isinstance(body, dict):
            body = move_value_secrets(body, secrets, _at(base, parent), "field")
        opener["body"] = body if body not in ("", None) else {}
        guess, _ = _response_guess(doc, create)
        handle = find_conversation(guess) if guess is not None else None
        if handle is None and isinstance(guess, dict):
            handle = (
                ("id",)
                if "id" in guess
                else next(
                    ((k, "id") for k, v in guess.items() if isinstance(v, dict) and "id" in v), None
                )
            )
        opener["extract"] = {"conversation": jmes(handle or ("id",))}
        auth_h, auth_q, auth = credentials(create, _at(base, parent))
        own = _session_parameters(
            doc, parent, create, _at(base, parent), secrets, notes, _sent(auth_h, auth_q), "open"
        )
        hooks["open"] = {"http": _with_auth(_with_own(opener, own), auth_h, auth_q, auth)}
        notes.append(
            f"open: POST {parent} creates the {params[0]} "
            f"(extract.conversation = {opener['extract']['conversation']})"
        )
        url = _at(base, path.replace("{" + params[0] + "}", "{{conversation}}"))
        closing = f"{parent}/{{{params[0]}}}"
        closer = ((doc.get("paths") or {}).get(closing) or {}).get("delete")
        if isinstance(closer, dict):
            auth_h, auth_q, auth = credentials(closer, _at(base, closing))
            sent = _sent(auth_h, auth_q)
            own = _session_parameters(
                doc, closing, closer, _at(base, closing), secrets, notes, sent, "close"
            )
            entry = {"url": _at(base, f"{parent}/{{{{conversation}}}}"), "method": "DELETE"}
            hooks["close"] = {"http": _with_auth(_with_own(entry, own), auth_h, auth_q, auth)}
            notes.append(f"close: DELETE {parent}/{{{params[0]}}}")
        return url
