"""`rook profile add --from` an OpenAPI document written the ways real ones are:
OpenAPI 3.1 type lists, ``anyOf``/``allOf`` schemas, parameters shared by a path,
relative server URLs; each one is tested against a real server."""

from __future__ import annotations

import json

import pytest
import yaml
from authoring import add, profile

pytest_plugins = ["servers.fixtures"]


def ask_document(url, schema):
    """``POST /ask`` of the authoring server (``prompt`` in the body, the key in the query)."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Desk", "version": "1"},
        "servers": [{"url": url}],
        "components": {
            "securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "key"}},
            "schemas": {
                "Base": {
                    "type": "object",
                    "required": ["prompt"],
                    "properties": {"prompt": {"type": "string"}},
                }
            },
        },
        "security": [{"key": []}],
        "paths": {
            "/ask": {
                "post": {
                    "operationId": "ask",
                    "requestBody": {"content": {"application/json": {"schema": schema}}},
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"answer": {"type": ["string", "null"]}},
                                    }
                                }
                            },
                        }
                    },
                }
            }
        },
    }


SCHEMAS = {
    "3.1 type list": {
        "type": "object",
        "required": ["prompt", "temperature"],
        "properties": {
            "prompt": {"type": ["string", "null"]},
            "temperature": {"type": ["number", "null"]},
        },
    },
    "anyOf with null": {
        "type": "object",
        "required": ["prompt"],
        "properties": {"prompt": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    },
    "allOf": {
        "allOf": [
            {"$ref": "#/components/schemas/Base"},
            {"type": "object", "properties": {"temperature": {"type": "number"}}},
        ]
    },
}


@pytest.mark.parametrize("kind", list(SCHEMAS))
def test_openapi_31_and_composed_schemas(rook_workspace, rook_cli, authoring_server, tmp_path, kind):
    """A message field typed ``[string, "null"]`` (OpenAPI 3.1), ``anyOf`` a string or
    null, or a body schema made with ``allOf`` is a message field like ``type:
    string``: the operation was not found (exit 2), and a required ``[number,
    "null"]`` field ended in 'not a valid OpenAPI 3 document'."""
    ws = rook_workspace
    doc = tmp_path / "api.yaml"
    doc.write_text(yaml.safe_dump(ask_document(authoring_server.url, SCHEMAS[kind])))
    r = add(
        rook_cli, ws, "desk", "--from", str(doc), env={"AGENT_API_KEY": authoring_server.api_key}
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "desk")["hooks"]["execute"]["http"]
    assert http["body"]["prompt"] == "{{goal}}"
    assert http["extract"]["output"] == "answer"
    assert "answer: answer 1: Say hello" in r.stdout
    assert authoring_server.api_key not in r.stdout + r.stderr
    if kind == "3.1 type list":
        assert http["body"]["temperature"] == 0


def test_the_note_names_an_operation_without_an_operation_id_once(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """An operation with no operationId is named by its method and path: the note
    said it twice (`note: operation POST /ask: POST /ask`)."""
    ws = rook_workspace
    doc = ask_document(authoring_server.url, SCHEMAS["allOf"])
    del doc["paths"]["/ask"]["post"]["operationId"]
    (tmp_path / "api.json").write_text(json.dumps(doc))
    env = {"AGENT_API_KEY": authoring_server.api_key}
    r = add(rook_cli, ws, "desk", "--from", str(tmp_path / "api.json"), env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "note: operation POST /ask\n" in r.stdout, r.stdout
    doc["paths"]["/ask"]["post"]["operationId"] = "ask"
    (tmp_path / "api.json").write_text(json.dumps(doc))
    r = add(rook_cli, ws, "desk", "--from", str(tmp_path / "api.json"), "--force", env=env)
    assert "note: operation ask: POST /ask\n" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "name, text, where",
    [
        ("api.yaml", 'openapi: 3.0.0\ninfo: {title: X, version: "1"\npaths: {}\n', "line 3, column"),
        ("api.json", '{"openapi": "3.1.0", "paths": {"/a": {"post": }}}', "line 1, column 47"),
        ("api.yaml", "info:\n  title: X\nopenapi: 3.1.0\npaths:\n  /a: [\n", "line 6, column 1"),
    ],
)
def test_an_openapi_document_that_does_not_parse_names_the_line(
    rook_workspace, rook_cli, tmp_path, name, text, where
):
    """A document with a typo (a brace left open) was 'Rook cannot tell what this is
    (not a cURL command, an OpenAPI 3 document, ...)'; it names the file and the line
    and column of the problem, as a profile file that is not valid YAML does."""
    ws = rook_workspace
    (tmp_path / name).write_text(text)
    r = add(rook_cli, ws, "desk", "--from", str(tmp_path / name))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "cannot tell what this is" not in r.stderr
    assert f"{name}: not valid {'JSON' if name.endswith('json') else 'YAML'} at {where}" in r.stderr, r.stderr
    assert not (ws.agent_dir / "profiles" / "desk.yaml").exists()


def test_a_document_with_no_operation_taking_a_message_is_named(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """'no operation of the OpenAPI document takes a message' named no file."""
    ws = rook_workspace
    doc = ask_document(authoring_server.url, {"type": "object", "properties": {"n": {"type": "integer"}}})
    (tmp_path / "api.json").write_text(json.dumps(doc))
    r = add(rook_cli, ws, "desk", "--from", str(tmp_path / "api.json"))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "api.json: no operation of the OpenAPI document takes a message" in r.stderr, r.stderr


def test_a_date_written_bare_in_a_yaml_document_is_sent_as_text(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """``example: 2024-01-01`` (a date, as YAML reads it bare; common in real
    documents) on a required field made the profile "hold a value that is not
    JSON; quote dates and times in YAML": exit 2, nothing written, for a document
    the user did not write. Such a value is the text it was written as."""
    ws = rook_workspace
    schema = {
        "type": "object",
        "required": ["prompt", "since", "window"],
        "properties": {
            "prompt": {"type": "string"},
            "since": {"type": "string", "format": "date", "example": "DATE"},
            "window": {"type": "object", "example": {"from": "DATE"}},
        },
    }
    doc = tmp_path / "api.yaml"
    text = yaml.safe_dump(ask_document(authoring_server.url, schema))
    doc.write_text(text.replace("'DATE'", "2024-01-01").replace("DATE", "2024-01-01"))
    assert "since:\n" in text and "2024-01-01" in doc.read_text()
    r = add(rook_cli, ws, "desk", "--from", str(doc), env={"AGENT_API_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    body = profile(ws, "desk")["hooks"]["execute"]["http"]["body"]
    assert body["since"] == "2024-01-01" and body["window"] == {"from": "2024-01-01"}, body
    assert "answer: answer 1: Say hello" in r.stdout


def test_a_json_document_with_a_byte_order_mark_and_tabs_is_read(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A JSON document saved with a UTF-8 byte order mark and indented with tabs (as
    some Windows tools write it) was "Rook cannot tell what this is": the mark hid
    the opening brace, so it was read as YAML, where a tab cannot indent."""
    ws = rook_workspace
    doc = tmp_path / "api.json"
    text = json.dumps(ask_document(authoring_server.url, SCHEMAS["allOf"]), indent="\t")
    doc.write_text(text, encoding="utf-8-sig")
    r = add(rook_cli, ws, "desk", "--from", str(doc), env={"AGENT_API_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "author: openapi" in r.stdout and "answer: answer 1: Say hello" in r.stdout, r.stdout


def test_a_required_field_with_a_const_is_sent_with_that_value(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """OpenAPI 3.1's ``const`` (``kind: {const: chat}``) on a required field was sent
    as ``""``, a value the schema forbids; it is the value the schema fixes."""
    ws = rook_workspace
    schema = {
        "type": "object",
        "required": ["prompt", "kind", "version"],
        "properties": {
            "prompt": {"type": "string"},
            "kind": {"const": "chat"},
            "version": {"type": "integer", "const": 2},
        },
    }
    doc = tmp_path / "api.json"
    doc.write_text(json.dumps(ask_document(authoring_server.url, schema)))
    r = add(rook_cli, ws, "desk", "--from", str(doc), env={"AGENT_API_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    body = profile(ws, "desk")["hooks"]["execute"]["http"]["body"]
    assert body["kind"] == "chat" and body["version"] == 2, body


def test_a_credential_among_the_body_examples_moves_to_env(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A required body field named like a credential, or whose example is shaped like a
    key (also nested), was written into the profile as the document's example and shown
    in the test's output: it becomes an env reference, as in a cURL command's body."""
    ws = rook_workspace
    schema = {
        "type": "object",
        "required": ["prompt", "client_secret", "auth"],
        "properties": {
            "prompt": {"type": "string"},
            "client_secret": {"type": "string", "example": "cs-example-4242"},
            "auth": {"type": "object", "example": {"from": "sk-live-example0123456789"}},
        },
    }
    doc = tmp_path / "api.json"
    doc.write_text(json.dumps(ask_document(authoring_server.url, schema)))
    r = add(rook_cli, ws, "desk", "--from", str(doc), env={"AGENT_API_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    written = (ws.agent_dir / "profiles" / "desk.yaml").read_text()
    for value in ("cs-example-4242", "sk-live-example0123456789"):
        assert value not in written + r.stdout + r.stderr, (value, written, r.stdout)
    data = profile(ws, "desk")
    body = data["hooks"]["execute"]["http"]["body"]
    assert body["client_secret"].startswith("{{env.") and body["auth"]["from"].startswith("{{env.")
    declared = {e["variable"] for e in data["env"]}
    assert {body["client_secret"][6:-2], body["auth"]["from"][6:-2]} <= declared, data["env"]
    assert "answer: answer 1: Say hello" in r.stdout


def test_required_query_and_header_parameters_are_sent(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A required query or header parameter the operation declares (Azure OpenAI's
    api-version) was left out of the profile in silence, so the real API refused every
    request. Each is sent with its example (or default, enum, const), a credential
    among them moved to env; an optional one is not sent."""
    ws = rook_workspace
    document = ask_document(authoring_server.url, SCHEMAS["allOf"])
    document["paths"]["/ask"]["post"]["parameters"] = [
        {"name": "api-version", "in": "query", "required": True,
         "schema": {"type": "string"}, "example": "2024-02-01"},
        {"name": "X-Tenant", "in": "header", "required": True,
         "schema": {"type": "string", "enum": ["acme", "other"]}},
        {"name": "X-Client-Token", "in": "header", "required": True,
         "schema": {"type": "string", "example": "ghp_exampleexampleexample0123"}},
        {"name": "X-Trace", "in": "header", "schema": {"type": "string", "example": "t-1"}},
        # the security scheme's key, declared as a parameter too: sent once, from env
        {"name": "key", "in": "query", "required": True, "example": "example-key-0000"},
    ]
    doc = tmp_path / "api.json"
    doc.write_text(json.dumps(document))
    r = add(rook_cli, ws, "desk", "--from", str(doc), env={"AGENT_API_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "desk")["hooks"]["execute"]["http"]
    assert http["query"]["api-version"] == "2024-02-01", http
    assert http["headers"]["X-Tenant"] == "acme" and "X-Trace" not in http["headers"], http
    assert http["headers"]["X-Client-Token"].startswith("{{env."), http
    assert "ghp_exampleexampleexample0123" not in r.stdout + r.stderr
    assert http["query"]["key"] == "{{env.AGENT_API_KEY}}", http
    sent = authoring_server.seen("POST", "/ask")[-1]
    assert sent["query"]["api-version"] == "2024-02-01" and sent["headers"]["X-Tenant"] == "acme"


def test_required_parameters_of_the_session_operations_are_sent_on_open_and_close(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """The session API's POST that creates the session (open) and its DELETE (close)
    were sent without their own required header and query parameters, while the
    message operation (execute) got its own: a real API refused the open, and so
    every scenario. Each is now sent as execute's are, a credential among them moved
    to env; one the document gives no value for is named in a note."""
    from servers.authoring_server import SESSION_API

    ws = rook_workspace
    document = json.loads(json.dumps(SESSION_API))
    document["servers"] = [{"url": authoring_server.url}]
    paths = document["paths"]
    paths["/api/sessions"]["post"]["parameters"] = [
        {"name": "X-Tenant", "in": "header", "required": True,
         "schema": {"type": "string", "enum": ["acme", "other"]}},
        {"name": "api-version", "in": "query", "required": True, "example": "2024-02-01"},
        {"name": "X-Client-Token", "in": "header", "required": True,
         "schema": {"type": "string", "example": "ghp_exampleexampleexample0123"}},
        {"name": "X-Region", "in": "header", "required": True, "schema": {"type": "string"}},
        {"name": "X-Trace", "in": "header", "schema": {"type": "string", "example": "t-1"}},
    ]
    paths["/api/sessions/{id}"]["parameters"] = [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "api-version", "in": "query", "required": True, "example": "2024-03-01"},
    ]
    api = tmp_path / "api.json"
    api.write_text(json.dumps(document))
    r = add(rook_cli, ws, "desk", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    hooks = profile(ws, "desk")["hooks"]
    opener = hooks["open"]["http"]
    assert opener["query"] == {"api-version": "2024-02-01"}, opener
    assert opener["headers"]["X-Tenant"] == "acme" and "X-Trace" not in opener["headers"]
    assert opener["headers"]["X-Client-Token"].startswith("{{env."), opener
    assert "ghp_exampleexampleexample0123" not in r.stdout + r.stderr
    assert "required header parameter X-Region: no example" in r.stdout + r.stderr
    assert hooks["close"]["http"]["query"] == {"api-version": "2024-03-01"}, hooks["close"]
    assert "query" not in hooks["execute"]["http"], hooks["execute"]
    opened = [q for q in authoring_server.seen("POST") if q["path"] == "/api/sessions"][-1]
    assert opened["query"] == {"api-version": "2024-02-01"}
    assert opened["headers"]["X-Tenant"] == "acme"
    assert opened["headers"]["X-Client-Token"] == "ghp_exampleexampleexample0123"
    closed = authoring_server.seen("DELETE", "/api/sessions/")[-1]
    assert closed["query"] == {"api-version": "2024-03-01"}


def test_the_session_operations_send_their_own_security(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """The open entry (the POST creating the session) and the close entry (its
    DELETE) were sent the message operation's credential, not the scheme their
    own operation's ``security`` names: a real API refused the open. Each entry
    carries its own operation's security, the document's where it names none."""
    from servers.authoring_server import SESSION_API

    ws = rook_workspace
    document = json.loads(json.dumps(SESSION_API))
    document["servers"] = [{"url": authoring_server.url}]
    document.setdefault("components", {})["securitySchemes"] = {
        "key": {"type": "apiKey", "in": "header", "name": "X-Desk-Key"},
        "tok": {"type": "http", "scheme": "bearer"},
    }
    document["security"] = [{"key": []}]  # the close operation names none: this one
    paths = document["paths"]
    paths["/api/sessions"]["post"]["security"] = [{"key": []}]
    paths["/api/sessions/{id}/messages"]["post"]["security"] = [{"tok": []}]
    api = tmp_path / "api.json"
    api.write_text(json.dumps(document))
    env = {"AGENT_API_KEY": "key-" + "5be1d07a", "AGENT_API_TOKEN": "tok-" + "c3a9e410"}
    r = add(rook_cli, ws, "desk", "--from", str(api), env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    hooks = profile(ws, "desk")["hooks"]
    assert hooks["open"]["http"]["headers"] == {"X-Desk-Key": "{{env.AGENT_API_KEY}}"}, hooks
    assert hooks["execute"]["http"]["headers"] == {
        "Authorization": "Bearer {{env.AGENT_API_TOKEN}}"
    }, hooks
    assert hooks["close"]["http"]["headers"] == {"X-Desk-Key": "{{env.AGENT_API_KEY}}"}, hooks
    opened = [q for q in authoring_server.seen("POST") if q["path"] == "/api/sessions"][-1]
    assert opened["headers"]["X-Desk-Key"] == env["AGENT_API_KEY"]
    assert "Authorization" not in opened["headers"], opened


def test_a_query_parameter_the_path_declares_for_its_operations(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """OpenAPI lets a path item declare parameters shared by all its operations; a
    GET whose ``q`` parameter is declared there takes a message too (it was 'no
    operation of the OpenAPI document takes a message', exit 2)."""
    ws = rook_workspace
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Echo", "version": "1"},
        "servers": [{"url": authoring_server.url}],
        "paths": {
            "/echo": {
                "parameters": [
                    {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}}
                ],
                "get": {
                    "operationId": "echo",
                    "responses": {
                        "200": {
                            "description": "the query it got",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "query": {
                                                "type": "object",
                                                "properties": {"q": {"type": "string"}},
                                            }
                                        },
                                    }
                                }
                            },
                        }
                    },
                },
            }
        },
    }
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, ws, "echo", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "echo")["hooks"]["execute"]["http"]
    assert http["method"] == "GET" and http["query"] == {"q": "{{goal}}"}
    assert "answer: Say hello in one short sentence." in r.stdout


def test_a_relative_server_url_in_a_file_asks_for_the_whole_url(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A file's ``servers: [{url: /api}]`` has nothing to be resolved against: the
    message said the document 'names no server URL', and a --base-url of the host
    alone then lost the /api. It says the URL is relative and asks for all of it."""
    ws = rook_workspace
    doc = ask_document("/api", SCHEMAS["allOf"])
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, ws, "desk", "--from", str(api))
    assert r.exit_code == 2, r.stdout + r.stderr
    # naming the file, as every refusal of a source does
    assert "api.json: the OpenAPI document's server URL '/api' (servers[0].url) is relative" in r.stderr
    assert "--base-url URL (such as https://HOST/api)" in r.stderr
    assert not (ws.agent_dir / "profiles" / "desk.yaml").exists()
    r = add(rook_cli, ws, "desk", "--from", str(api), "--base-url", authoring_server.url)
    assert r.exit_code == 2 and "AGENT_API_KEY" in r.stdout  # written, the key not set
    assert profile(ws, "desk")["hooks"]["execute"]["http"]["url"] == f"{authoring_server.url}/ask"


def test_a_guess_that_extracts_the_goal_sent_back_is_corrected(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """The response schema's first guess (``messages[0].content`` of a history list)
    held the goal Rook sent: the test passed with the goal as the agent's answer and
    the profile was written so. The answer is found where it is."""
    ws = rook_workspace
    message = {
        "type": "object",
        "properties": {"role": {"type": "string"}, "content": {"type": "string"}},
    }
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "History", "version": "1"},
        "servers": [{"url": authoring_server.url}],
        "paths": {
            "/history": {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"message": {"type": "string"}},
                                }
                            }
                        }
                    },
                    "responses": {
                        "200": {
                            "description": "the conversation so far",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "messages": {"type": "array", "items": message}
                                        },
                                    }
                                }
                            },
                        }
                    },
                }
            }
        },
    }
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, ws, "history", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "messages[0].content holds the goal Rook sent, not an answer" in r.stdout
    extract = profile(ws, "history")["hooks"]["execute"]["http"]["extract"]
    assert extract == {"output": "messages[1].content"}
    assert r.stdout.rstrip().count("answer: noted: Say hello in one short sentence.") == 1


def history_document(url, schemes, security, path="/history"):
    """``POST /history`` of the authoring server (no credential checked), secured so
    (``path="/digest"``: the endpoint that checks HTTP Digest credentials)."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "History", "version": "1"},
        "servers": [{"url": url}],
        "components": {"securitySchemes": schemes},
        "security": security,
        "paths": {
            path: {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"message": {"type": "string"}},
                                }
                            }
                        }
                    }
                }
            }
        },
    }


def test_an_http_scheme_other_than_bearer_or_basic_is_sent_as_itself(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """``type: http, scheme: token`` was written as ``Authorization: Bearer ...``:
    the server got a scheme it does not take. It is sent as ``token VALUE``."""
    ws = rook_workspace
    doc = history_document(
        authoring_server.url, {"tok": {"type": "http", "scheme": "token"}}, [{"tok": []}]
    )
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    secret = "tok-" + "9f3a7c21e8"
    r = add(rook_cli, ws, "hist", "--from", str(api), env={"AGENT_API_TOKEN": secret})
    assert r.exit_code == 0, r.stdout + r.stderr
    headers = profile(ws, "hist")["hooks"]["execute"]["http"]["headers"]
    assert headers == {"Authorization": "token {{env.AGENT_API_TOKEN}}"}
    assert authoring_server.requests[-1]["headers"]["Authorization"] == f"token {secret}"
    assert secret not in r.stdout + r.stderr


def test_a_digest_scheme_is_answered_with_credentials_from_env(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """``scheme: digest`` was not sent ("security scheme dig (http digest) is not
    sent"), and the profile could not reach an API that takes Digest only. It is
    written as the entry's auth.digest, its user and password env references,
    and tested against the real server's challenge."""
    ws = rook_workspace
    schemes = {"dig": {"type": "http", "scheme": "digest"}}
    doc = history_document(authoring_server.url, schemes, [{"dig": []}], path="/digest")
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    env = {
        "AGENT_DIGEST_USER": authoring_server.digest_user,
        "AGENT_DIGEST_PASSWORD": authoring_server.digest_password,
    }
    r = add(rook_cli, ws, "dig", "--from", str(api), env=env)
    assert r.exit_code == 0, r.stdout + r.stderr
    http = profile(ws, "dig")["hooks"]["execute"]["http"]
    assert http["auth"] == {
        "digest": {
            "username": "{{env.AGENT_DIGEST_USER}}",
            "password": "{{env.AGENT_DIGEST_PASSWORD}}",
        }
    }
    assert "answer: digest answer to: Say hello" in r.stdout
    assert "is not sent" not in r.stdout
    assert authoring_server.digest_password not in r.stdout + r.stderr

    # a password in the server URL is the digest password, moved to env
    password = authoring_server.digest_password
    url = authoring_server.url.replace("http://", f"http://desk-operator:{password}@")
    api.write_text(json.dumps(history_document(url, schemes, [{"dig": []}], path="/digest")))
    r = add(rook_cli, ws, "dig2", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    digest = profile(ws, "dig2")["hooks"]["execute"]["http"]["auth"]["digest"]
    assert digest["username"] == "desk-operator" and digest["password"].startswith("{{env."), digest
    assert "answer: digest answer to: Say hello" in r.stdout
    assert "Authorization" not in profile(ws, "dig2")["hooks"]["execute"]["http"].get("headers", {})
    assert password not in r.stdout + r.stderr
    assert password not in (ws.agent_dir / "profiles" / "dig2.yaml").read_text()


def test_a_challenge_scheme_is_said_to_be_unsendable_and_an_alternative_is_used(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """``scheme: ntlm`` (like negotiate) answers the server's challenge in a way an
    http entry cannot: the note says it is not sent; when the document offers
    another requirement, that one is used."""
    ws = rook_workspace
    schemes = {
        "dig": {"type": "http", "scheme": "ntlm"},
        "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
    }
    api = tmp_path / "api.json"
    api.write_text(json.dumps(history_document(authoring_server.url, schemes, [{"dig": []}])))
    r = add(rook_cli, ws, "dig", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "security scheme dig (http ntlm) is not sent" in r.stdout
    assert "headers" not in profile(ws, "dig")["hooks"]["execute"]["http"]
    assert "Authorization" not in authoring_server.requests[-1]["headers"]
    alternatives = [{"dig": []}, {"key": []}]
    api.write_text(json.dumps(history_document(authoring_server.url, schemes, alternatives)))
    r = add(rook_cli, ws, "keyed", "--from", str(api), env={"AGENT_API_KEY": "k-2d8e61f0aa"})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "is not sent" not in r.stdout
    headers = profile(ws, "keyed")["hooks"]["execute"]["http"]["headers"]
    assert headers == {"X-Key": "{{env.AGENT_API_KEY}}"}


def test_a_user_and_password_in_the_url_are_not_sent_as_basic_to_an_ntlm_api(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A document declaring only a challenge scheme (ntlm), with ``bob:PW@`` in its
    server URL, sent the password as Basic (in clear, to an API that asked for
    another scheme). Rook cannot answer an NTLM challenge from an http hook: it sends
    nothing and says so."""
    ws = rook_workspace
    password = "pw-" + "71c3e9a0d4"
    url = authoring_server.url.replace("http://", f"http://bob:{password}@")
    doc = history_document(url, {"dig": {"type": "http", "scheme": "ntlm"}}, [{"dig": []}])
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, ws, "dig", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "Authorization" not in authoring_server.requests[-1]["headers"]
    assert "headers" not in profile(ws, "dig")["hooks"]["execute"]["http"]
    assert "env" not in profile(ws, "dig")
    assert "the user and password in the URL are not sent as Basic" in r.stdout
    assert password not in r.stdout + r.stderr
    assert password not in (ws.agent_dir / "profiles" / "dig.yaml").read_text()


def test_a_user_and_password_in_the_url_fill_a_basic_scheme_the_document_declares(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A document declaring http basic, with ``user:PW@`` in its server URL, wrote
    ``Basic {{env.AGENT_BASIC_AUTH}}`` with no value for it: the URL's credentials
    were ignored and the test did not run ("not set: AGENT_BASIC_AUTH")."""
    ws = rook_workspace
    password = authoring_server.basic_password
    url = authoring_server.url.replace("http://", f"http://user:{password}@")
    doc = history_document(url, {"b": {"type": "http", "scheme": "basic"}}, [{"b": []}])
    doc["paths"]["/basic"] = doc["paths"].pop("/history")
    props = doc["paths"]["/basic"]["post"]["requestBody"]["content"]["application/json"]
    props["schema"]["properties"] = {"q": {"type": "string"}}
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, ws, "bas", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "answer: basic answer to: Say hello" in r.stdout, r.stdout
    headers = profile(ws, "bas")["hooks"]["execute"]["http"]["headers"]
    assert headers == {"Authorization": "Basic {{env.AGENT_BASIC_AUTH}}"}
    assert [e["variable"] for e in profile(ws, "bas")["env"]] == ["AGENT_BASIC_AUTH"]
    assert password not in r.stdout + r.stderr
    assert password not in (ws.agent_dir / "profiles" / "bas.yaml").read_text()


def test_a_user_and_password_in_the_document_url_reach_its_absolute_server_on_that_host(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """``--from http://user:PW@HOST/api.json`` whose ``servers`` names the API by its
    whole URL dropped the user and password (the Basic scheme got no value, "not
    set: AGENT_BASIC_AUTH"), though the docs say they become the Basic credential.
    They now do when the server is on the document's host, and never go elsewhere."""
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    ws = rook_workspace
    password = authoring_server.basic_password
    doc = history_document(
        authoring_server.url, {"b": {"type": "http", "scheme": "basic"}}, [{"b": []}]
    )
    doc["paths"]["/basic"] = doc["paths"].pop("/history")
    media = doc["paths"]["/basic"]["post"]["requestBody"]["content"]["application/json"]
    media["schema"]["properties"] = {"q": {"type": "string"}}
    (tmp_path / "api.json").write_text(json.dumps(doc))
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    docs = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=docs.serve_forever, daemon=True).start()
    try:
        port = docs.server_address[1]
        url = f"http://user:{password}@127.0.0.1:{port}/api.json"
        r = add(rook_cli, ws, "bas", "--from", url)
        assert r.exit_code == 0, r.stdout + r.stderr
        assert "answer: basic answer to: Say hello" in r.stdout, r.stdout
        headers = profile(ws, "bas")["hooks"]["execute"]["http"]["headers"]
        assert headers == {"Authorization": "Basic {{env.AGENT_BASIC_AUTH}}"}
        assert password not in r.stdout + r.stderr
        # the document on another host (localhost, not 127.0.0.1): not sent there
        url = f"http://user:{password}@localhost:{port}/api.json"
        r = add(rook_cli, ws, "away", "--from", url)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert "not set: AGENT_BASIC_AUTH" in r.stdout, r.stdout
    finally:
        docs.shutdown()
        docs.server_close()


def _set(doc, path, value):
    *parents, last = path
    for key in parents:
        doc = doc[key]
    doc[last] = value


BODY = ("paths", "/ask", "post", "requestBody")
SCHEMA = (*BODY, "content", "application/json", "schema")
WRONG_SHAPES = [
    (("paths",), [1, 2], "paths: expected a mapping, not a list"),
    (("paths", "/ask"), "text", "paths./ask: expected a mapping, not text"),
    (("paths", "/ask", "post"), 5, "paths./ask.post: expected a mapping, not a number"),
    (BODY, [1], "paths./ask.post.requestBody: expected a mapping, not a list"),
    ((*BODY, "content"), "json", "paths./ask.post.requestBody.content: expected a mapping, not text"),
    (SCHEMA, [1], "requestBody.content.application/json.schema: expected a mapping, not a list"),
    (SCHEMA, {"$ref": "#/components/schemas/Nope"}, "schema.$ref: '#/components/schemas/Nope' points at nothing"),
    (("components", "schemas", "Base", "properties"), [1], "components.schemas.Base.properties: expected a mapping"),
    (("components", "schemas", "Base", "required"), 5, "components.schemas.Base.required: expected a list, not a number"),
    (("components", "schemas", "Base", "type"), True, "components.schemas.Base.type: expected a type name, not true"),
    (("components", "schemas", "Base"), {"$ref": "#/components/schemas/Loop"}, "a $ref cycle: #/components/schemas/Base -> #/components/schemas/Loop -> #/components/schemas/Base"),
    (("paths", "/ask", "parameters"), "q", "paths./ask.parameters: expected a list, not text"),
    (("paths", "/ask", "post", "responses", "200"), [1], "paths./ask.post.responses.200: expected a mapping, not a list"),
    (("servers",), {"url": "x"}, "servers: expected a list, not a mapping"),
    (("servers", 0, "url"), 5, "servers[0].url: expected text, not a number"),
    (("components", "securitySchemes"), [1], "components.securitySchemes: expected a mapping, not a list"),
    (("components", "securitySchemes", "key", "name"), [1], "components.securitySchemes.key.name: expected text, not a list"),
    (("security",), [{"nokey": []}], "security[0]: names the scheme 'nokey', which components.securitySchemes does not define"),
    (("openapi",), [3], "only OpenAPI 3 documents are supported (this one is openapi: [3])"),
]


@pytest.mark.parametrize("path,value,message", WRONG_SHAPES, ids=[m for _, _, m in WRONG_SHAPES])
def test_a_wrong_shape_is_named_by_its_field_path(rook_workspace, rook_cli, tmp_path, path, value, message):
    """A list where a mapping belongs said "'list' object has no attribute 'items'",
    naming no field, and a $ref cycle or a requirement naming no scheme was passed
    over in silence. Each wrong shape is named by its field path: exit 2, no profile."""
    ws = rook_workspace
    doc = ask_document("http://127.0.0.1:9", SCHEMAS["allOf"])
    doc["components"]["schemas"]["Loop"] = {"$ref": "#/components/schemas/Base"}
    _set(doc, path, value)
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, ws, "desk", "--from", str(api))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{api}: " in r.stderr and message in r.stderr, r.stderr
    assert "object" not in r.stderr and "attribute" not in r.stderr
    assert not (ws.agent_dir / "profiles" / "desk.yaml").exists()


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_a_document_nested_too_deeply_is_refused_by_name(rook_workspace, rook_cli, tmp_path, suffix):
    """A document nested ~3000 levels deep was refused as "author 'openapi' ...
    failed while reading the source: RecursionError: maximum recursion depth
    exceeded": the file named, the problem said plainly, exit 2, no profile."""
    ws = rook_workspace
    deep = "[" * 3000 + "]" * 3000
    api = tmp_path / f"api.{suffix}"
    if suffix == "json":
        api.write_text('{"openapi": "3.0.3", "paths": {}, "x-deep": ' + deep + "}")
    else:
        api.write_text("openapi: 3.0.3\npaths: {}\nx-deep: " + deep + "\n")
    r = add(rook_cli, ws, "deep", "--from", str(api))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{api}: nested too deeply" in r.stderr, r.stderr
    assert "RecursionError" not in r.stderr and "recursion" not in r.stderr
    assert not (ws.agent_dir / "profiles" / "deep.yaml").exists()


def test_a_chain_of_refs_too_long_to_follow_is_refused_by_name(rook_workspace, rook_cli, tmp_path):
    """A shallow document whose schemas nest through 3000 ``$ref``s (S0's items are
    S1, whose items are S2 ...) failed as "author 'openapi' ... failed in write:
    RecursionError": the file named, the problem said plainly, exit 2, no profile."""
    ws = rook_workspace
    n = 3000
    ref = "#/components/schemas/S{}"
    schemas = {f"S{i}": {"type": "array", "items": {"$ref": ref.format(i + 1)}} for i in range(n)}
    schemas[f"S{n}"] = {"type": "string"}
    doc = ask_document("http://127.0.0.1:9", SCHEMAS["allOf"])
    doc["components"]["schemas"].update(schemas)
    doc["components"]["schemas"]["Base"]["properties"]["deep"] = {"$ref": ref.format(0)}
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, ws, "deep", "--from", str(api))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert f"{api}: its schemas nest too deeply to read" in r.stderr, r.stderr
    assert "RecursionError" not in r.stderr and "recursion" not in r.stderr
    assert not (ws.agent_dir / "profiles" / "deep.yaml").exists()


def test_an_extension_among_the_paths_is_no_path(rook_workspace, rook_cli, authoring_server, tmp_path):
    """OpenAPI lets ``paths`` hold ``x-`` extensions of any shape: they are not paths,
    so not refused as one."""
    doc = history_document(authoring_server.url, {}, [])
    doc["paths"]["x-owner"] = "team desk"
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, rook_workspace, "hist", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr


def test_a_body_schema_that_requires_itself_is_sampled_to_a_depth(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A required property whose schema requires itself (a linked list) made the
    author fail with 'RecursionError'; the sample body stops at a depth, with null."""
    doc = history_document(authoring_server.url, {}, [])
    doc["components"]["schemas"] = {
        "Node": {
            "type": "object",
            "required": ["next"],
            "properties": {"next": {"$ref": "#/components/schemas/Node"}},
        }
    }
    schema = doc["paths"]["/history"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    schema["required"] = ["message", "chain"]
    schema["properties"]["chain"] = {"$ref": "#/components/schemas/Node"}
    api = tmp_path / "api.json"
    api.write_text(json.dumps(doc))
    r = add(rook_cli, rook_workspace, "hist", "--from", str(api))
    assert r.exit_code == 0, r.stdout + r.stderr
    body = profile(rook_workspace, "hist")["hooks"]["execute"]["http"]["body"]
    assert body["message"] == "{{goal}}" and body["chain"]["next"]["next"]["next"] is not None
    assert "answer: noted: Say hello in one short sentence." in r.stdout


def test_a_document_served_over_https_by_a_private_ca_is_read_on_every_python(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """``--from https://...`` whose server's certificate a private CA signed (trusted
    through SSL_CERT_FILE; basicConstraints not marked critical, as curl and Python
    3.10-3.12 accept) could not be read on Python 3.13 only, whose default TLS
    context is strict: the same document is read on every Python."""
    import shutil
    import ssl
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from test_http_resilience import _private_ca

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    ca, cert, key = _private_ca(tmp_path, openssl)
    site = tmp_path / "site"
    site.mkdir()
    (site / "api.json").write_text(json.dumps(history_document(authoring_server.url, {}, [])))
    docs = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(site)))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    docs.socket = context.wrap_socket(docs.socket, server_side=True)
    threading.Thread(target=docs.serve_forever, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{docs.server_address[1]}/api.json"
        r = add(rook_cli, rook_workspace, "desk", "--from", url, env={"SSL_CERT_FILE": str(ca)})
        said = r.stdout + r.stderr
        assert "ConnectError" not in said, said
        assert profile(rook_workspace, "desk")["hooks"]["execute"]["http"]["url"] == f"{authoring_server.url}/history"
    finally:
        docs.shutdown()
        docs.server_close()


def test_the_usage_a_response_schema_declares_is_extracted_untested(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """The answer's path came from the response schema, its token counts did not:
    written with --no-test (or when the test failed) an OpenAPI profile had no
    extract.usage, though the schema declares usage.prompt_tokens and completion_tokens."""
    doc = ask_document(authoring_server.url, SCHEMAS["allOf"])
    response = doc["paths"]["/ask"]["post"]["responses"]["200"]["content"]["application/json"]
    counts = {"prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}}
    response["schema"]["properties"]["usage"] = {"type": "object", "properties": counts}
    path = tmp_path / "api.json"
    path.write_text(json.dumps(doc))
    r = add(rook_cli, rook_workspace, "desk", "--no-test", "--from", str(path))
    assert r.exit_code == 0, r.stdout + r.stderr
    extract = profile(rook_workspace, "desk")["hooks"]["execute"]["http"]["extract"]
    assert extract == {
        "output": "answer",
        "usage": {"input": "usage.prompt_tokens", "output": "usage.completion_tokens"},
    }
    # tested, against a server whose counts are elsewhere (usage.input_tokens): the
    # schema's paths found nothing, and are replaced by those the response shows
    r = add(
        rook_cli, rook_workspace, "desk", "--force", "--from", str(path),
        env={"AGENT_API_KEY": authoring_server.api_key},
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "extract.usage removed" in r.stdout, r.stdout
    extract = profile(rook_workspace, "desk")["hooks"]["execute"]["http"]["extract"]
    assert extract["usage"] == {"input": "usage.input_tokens", "output": "usage.output_tokens"}


def test_half_a_character_in_a_json_documents_example_is_the_replacement_character(
    rook_workspace, rook_cli, authoring_server, tmp_path
):
    """A JSON document whose example holds "\\ud83d" alone (a lone surrogate, which no
    UTF-8 text holds) failed the test with "raised UnicodeEncodeError ... surrogates
    not allowed", and wrote a profile YAML could not read back; as from a cURL command,
    the lone half is U+FFFD."""
    schema = {
        "type": "object",
        "required": ["prompt", "tag"],
        "properties": {"prompt": {"type": "string"}, "tag": {"type": "string", "example": "a \ud83d b"}},
    }
    path = tmp_path / "api.json"
    path.write_text(json.dumps(ask_document(authoring_server.url, schema)))
    assert "\\ud83d" in path.read_text()
    r = add(rook_cli, rook_workspace, "desk", "--from", str(path), env={"AGENT_API_KEY": authoring_server.api_key})
    assert r.exit_code == 0, r.stdout + r.stderr
    assert profile(rook_workspace, "desk")["hooks"]["execute"]["http"]["body"]["tag"] == "a \ufffd b"
