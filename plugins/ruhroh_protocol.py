"""The Ruhroh agent command protocol: what a wrapper answers, and how Rook reads it.

A wrapper ends its standard output with a final JSON line
(``{"status": "goal_satisfied"}``); the lines before it are its transcript.
It may also write ``RUHROH_RESULT_PATH`` with ``version:
ruhroh_run_agent_result_v1``; when that file is present its fields win over
the final line's. Both are normalised here into an :class:`IterationResult`.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import stat
from dataclasses import field
from pathlib import Path
from typing import Any

from rook_core import hookio
from rook_core.plain import plain
from rook_core.redact import current
from rook_core.workspace import user_path

RESULT_VERSION = "ruhroh_run_agent_result_v1"

GOAL_SATISFIED = "goal_satisfied"
CONTINUE = "continue"
CANNOT_SATISFY = "cannot_satisfy"
POLICY_BLOCKED = "policy_blocked"
RUNTIME_FAILURE = "runtime_failure"
INFRA_FAILURE = "infra_failure"
OUT_OF_SCOPE = "out_of_scope"
CANCELLED = "cancelled"

STATUSES = (
    GOAL_SATISFIED,
    CONTINUE,
    CANNOT_SATISFY,
    POLICY_BLOCKED,
    RUNTIME_FAILURE,
    INFRA_FAILURE,
    OUT_OF_SCOPE,
    CANCELLED,
)
COMPLETED = (GOAL_SATISFIED, CANNOT_SATISFY, POLICY_BLOCKED, OUT_OF_SCOPE, CANCELLED)
"""Statuses that complete a turn; the status itself is kept as evidence."""

CONTINUITY_LEVELS = ("native_session", "workspace_plus_transcript", "workspace_only")

OUTPUT_FIELDS = (
    "output",
    "agent_reply",  # the hook contract's other name for output
    "message",
    "summary",
    "result",
    "response",
    "answer",
    "text",
)
HANDLE_FIELDS = ("sessionHandle", "session_handle", "conversation")
ALIASES = (
    OUTPUT_FIELDS,
    HANDLE_FIELDS,
    ("adapterVersion", "adapter_version"),
    ("runId", "run_id"),
)
"""Fields a wrapper may give under several names: a result file that gives one
under any of its names hides the final line's, whatever name that used."""
USAGE_NAMES = {
    "input": ("inputTokens", "input_tokens", "input"),
    "output": ("outputTokens", "output_tokens", "output"),
    "total": ("totalTokens", "total_tokens", "total"),
    "cost_usd": ("costUsd", "cost_usd"),
}
RUHROH_USAGE = {
    "input": "inputTokens",
    "output": "outputTokens",
    "total": "totalTokens",
    "cost_usd": "costUsd",
}
DEFAULT_ARTIFACT_BYTES = 64 * 1024


class ProtocolError(ValueError):
    """The wrapper's answer breaks the protocol; the message is the diagnosis."""


@plain
class IterationResult:
    """One iteration's outcome (one wrapper call, or one connector ``run_turn``)."""

    status: str | None = None
    output: str | None = None
    handle: str | None = None
    usage: dict[str, float] | None = None
    usage_raw: dict[str, Any] | None = None
    model: Any = None
    adapter_version: str | None = None
    run_id: str | None = None
    artifacts: Any = None
    artifacts_base: Path | None = None
    artifacts_read: dict[str, Any] | None = None
    """The artifacts as read right after the call (a later iteration may move them)."""
    transcript: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    file_fields: frozenset[str] = frozenset()
    """The names the result file gave (its fields win over the final line's)."""
    source: str = ""
    exit_code: int | None = None
    started: float = 0.0
    ended: float = 0.0
    stdout: str = ""
    stderr: str = ""
    failure: str | None = None
    timed_out: bool = False
    stopped: bool = False
    """Timed out while the wrapper (or a process it started) was stopped (SIGSTOP)."""
    never_exited: bool = False
    """Timed out after it had reported its status: no timeout helps either."""
    notes: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return max(self.ended - self.started, 0.0)


def split_final_line(stdout: str) -> tuple[dict[str, Any] | None, str]:
    r"""Return the final JSON line (when it is an object) and the transcript before it.

    Lines end at a newline (``\n`` or ``\r\n``) only: ``str.splitlines`` would also
    end one at U+2028, U+2029 or U+0085, which JSON.stringify leaves in a string
    as they are, and at a progress bar's ``\r``. A byte order mark first (a Windows
    tool's, as a hook's stdout may start with) is no part of the JSON line."""
    stdout = stdout.removeprefix("\ufeff")
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in stdout.split("\n")]
    idx = len(lines) - 1
    while idx >= 0 and not lines[idx].strip():
        idx -= 1
    if idx < 0:
        return None, ""
    try:
        value = hookio.loads(lines[idx].removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        return None, "\n".join(lines[: idx + 1])
    if not isinstance(value, dict):
        return None, "\n".join(lines[: idx + 1])
    return value, "\n".join(lines[:idx])


def status_on_stderr(stderr: str) -> str | None:
    """What to say when the last line of ``stderr`` is the final JSON line, an
    object whose ``status`` is a string (``echo '{"status":...}' >&2``): Rook reads
    it on stdout only. ``None`` otherwise."""
    final, _ = split_final_line(stderr)
    if final is None or not isinstance(final.get("status"), str) or not final["status"]:
        return None
    return (
        "its final status line went to standard error (stderr), where Rook does not read "
        "it: print it on standard output (stdout)"
    )


def final_line_problem(stdout: str) -> str | None:
    """Why the last line of ``stdout``, meant as the final JSON line, gives no
    status: not JSON (the parser's reason), JSON but no object, or an object
    without ``status``. ``None`` when it is plain text (a transcript line)."""
    lines = [ln for ln in stdout.removeprefix("\ufeff").split("\n") if ln.strip()]
    if not lines:
        return None
    if hookio.looks_utf16(stdout) or any(hookio.looks_utf16(ln) for ln in lines[-2:]):
        return (
            "its final line is UTF-16 text, and Rook reads a wrapper's output as UTF-8; "
            "print UTF-8 (PowerShell: [Console]::OutputEncoding = [Text.Encoding]::UTF8)"
        )
    line = lines[-1].strip().lstrip("\ufeff")
    if "\r" in line:  # a progress bar's carriage return ends no line
        problem = _status_after_carriage_return(line)
        if problem:
            return problem
    if line.startswith("}"):
        return _spread_object(lines)
    if not line.startswith(("{", "[", '"')):
        return _status_line_before(lines)
    try:
        value = hookio.loads(line)
    except (ValueError, RecursionError) as exc:
        if line.startswith('"'):  # a transcript line in quotes: "Done," it said
            return _status_line_before(lines)
        return f"its final line is not valid JSON: {exc}"
    if not isinstance(value, dict):
        kind = (
            "an array"
            if isinstance(value, list)
            else "a string"
            if isinstance(value, str)
            else "not an object"
        )
        return (
            f"its final line is JSON, but {kind}: the final line is one JSON object, "
            'such as {"status":"goal_satisfied"}'
        )
    if "status" not in value:
        keys = ", ".join(sorted(map(str, value))[:20]) or "none"
        return f'its final JSON line has no "status" field (keys: {keys})'
    return None


def _status_after_carriage_return(line: str) -> str | None:
    """The problem of a last line that is a status object after a carriage return
    (``progress 50%\\r{"status": ...}``): a line ends at a newline only."""
    text = line.rsplit("\r", 1)[1].strip()
    if not text.startswith("{"):
        return None
    try:
        value = hookio.loads(text)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(value, dict) and "status" in value):
        return None
    return (
        "its final line holds a carriage return (\\r, as a progress bar prints) before its "
        "JSON object, and a line ends at a newline (\\n) only: print a newline before "
        "the final JSON line"
    )


def _status_line_before(lines: list[str]) -> str | None:
    """The problem of output whose last line is text printed after the status
    line (``echo done`` after the JSON): only the last non-empty line counts."""
    for back, earlier in enumerate(reversed(lines[-50:-1]), start=1):
        text = earlier.strip().lstrip("\ufeff")
        if not text.startswith("{"):
            continue
        try:
            value = hookio.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "status" in value:
            later = f"{back} line" + "s" * (back > 1)
            return (
                f"a JSON line with a status came {later} before the end, but only the last "
                "non-empty line is the final JSON line: print nothing after it (or print "
                "the rest to standard error)"
            )
    return None


def _spread_object(lines: list[str]) -> str | None:
    """The problem of output that ends with a JSON object printed over several
    lines (``jq``, ``json.dumps(indent=2)``): the last line alone is ``}``."""
    for start in range(len(lines) - 2, max(len(lines) - 200, -1), -1):
        if not lines[start].lstrip().startswith("{"):
            continue
        try:
            value = hookio.loads("\n".join(lines[start:]))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return (
                f"its final JSON object spans {len(lines) - start} lines (pretty-printed); "
                "the final JSON line is one line: print it compact (jq -c, "
                "JSON.stringify(x), json.dumps(x))"
            )
    return None


def _read_at_most(fh: Any, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``fh``, read in chunks: a cap is the most to read,
    never a buffer of that size made up front (``read(2**40)`` is a MemoryError)."""
    chunks: list[bytes] = []
    while limit > 0:
        chunk = fh.read(min(limit, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def _read_regular(path: Path, cap: int) -> tuple[int, bytes] | None:
    """``path``'s size and (when within ``cap``) its bytes; ``None`` when it does
    not exist. Opened without blocking and read only when it is a regular file:
    a named pipe there waits for a writer forever and a device never ends.
    Raises OSError, and :class:`ProtocolError` for a file that is no regular one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ProtocolError(
                f"the result file {path} (RUHROH_RESULT_PATH) is not a regular file "
                "(a named pipe, device, socket or directory); Rook does not read it"
            )
        return st.st_size, (_read_at_most(fh, cap + 1) if st.st_size <= cap else b"")


def read_result_file(path: Path, cap: int) -> dict[str, Any] | None:
    """The ``RUHROH_RESULT_PATH`` file as a mapping, or ``None`` when absent (or empty)."""
    try:
        found = _read_regular(path, cap)
    except OSError as exc:
        raise ProtocolError(f"cannot read the result file {path}: {exc.strerror or exc}") from None
    if found is None:
        return None
    size, raw = found
    if size > cap or len(raw) > cap:
        raise ProtocolError(
            f"the result file {path} is {size} bytes, over the {cap}-byte cap (raise "
            "limits.stdout_bytes in the profile if a result this large is expected)"
        )
    text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")  # no part of JSON
    if not text.strip():
        return None
    try:
        data = hookio.loads(text)
    except (ValueError, RecursionError) as exc:
        if hookio.looks_utf16(text):  # Windows PowerShell's Out-File and >
            raise ProtocolError(
                f"the result file {path} (RUHROH_RESULT_PATH) is UTF-16 text, and Rook "
                "reads it as UTF-8; write UTF-8 (PowerShell: Out-File -Encoding utf8, "
                "or [IO.File]::WriteAllText($env:RUHROH_RESULT_PATH, $json))"
            ) from None
        raise ProtocolError(
            f"the result file {path} (RUHROH_RESULT_PATH) is not JSON ({exc}): "
            + hookio.preview(text, 200)  # redacted before the cut and the quoting
        ) from None
    if not isinstance(data, dict):
        raise ProtocolError(f"the result file {path} must hold one JSON object")
    version = data.get("version")
    if version is not None and version != RESULT_VERSION:
        shown = hookio.preview(version if isinstance(version, str) else json.dumps(version), 100)
        raise ProtocolError(
            f"the result file {path} has version {shown}; Rook reads {RESULT_VERSION!r}"
        )
    return data


def redact_result_file(path: Path, redactor: Any, cap: int) -> str | None:
    """Rewrite the result file at ``path`` (in the run directory) with every secret
    redacted, atomically, once Rook has read it: what the record keeps is
    redacted anyway, but the file itself stays in ``state/``. A file over ``cap``
    (never read) is removed. Returns a note when the file was changed."""
    if not redactor:
        return None
    try:
        found = _read_regular(path, cap)
    except (OSError, ProtocolError):
        return None  # never read, so nothing of it reached the record
    if found is None:
        return None
    size, raw = found
    if size > cap or len(raw) > cap:
        path.unlink(missing_ok=True)
        return f"the result file ({size} bytes, over the cap) was removed: it was not redacted"
    codec = _utf16_codec(raw)  # PowerShell's: its secrets are there in UTF-16 too
    text = raw.decode(codec, errors="replace")
    clean = redactor.text(text)
    try:
        data = hookio.loads(text.removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        data = None
    if data is not None:
        redacted = redactor.data(data)
        if redacted != data or clean != text:
            clean = json.dumps(redacted, indent=2, ensure_ascii=False) + "\n"
    if clean == text:
        return None
    from rook_core.store import atomic_write

    atomic_write(path, clean, encoding=codec)
    return "secrets in the result file were redacted in place"


def _utf16_codec(raw: bytes) -> str:
    """The codec ``raw`` was written in: UTF-16 (with its byte order mark, or the
    order its NULs show) when it reads so (:func:`rook_core.hookio.looks_utf16`),
    UTF-8 otherwise."""
    if not hookio.looks_utf16(raw[:64].decode("utf-8", errors="replace")):
        return "utf-8"
    if raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    return "utf-16-le" if raw[1:2] == b"\0" else "utf-16-be"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):  # never NaN; math.isfinite(10**400) raises OverflowError
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # a connector's float("nan"): no count
    if isinstance(value, str):
        # a number written as a JSON string ("12", "0.1"): JSON's number syntax only,
        # never what float() also takes ("nan", "-inf", "1_0"), no count at all
        try:
            number = hookio.loads(value.strip())
        except (ValueError, RecursionError):
            return None
        return number if isinstance(number, (int, float)) and not isinstance(number, bool) else None
    return None


def rook_usage(raw: Any) -> dict[str, float] | None:
    """Ruhroh usage (``inputTokens`` ...) as Rook usage (``input``, ``output``,
    ``total``, ``cost_usd``); ``None`` when it holds no number."""
    if not isinstance(raw, dict):
        return None
    out: dict[str, float] = {}
    for key, names in USAGE_NAMES.items():
        for name in names:
            number = _number(raw.get(name))
            if number is not None:
                out[key] = number
                break
    return out or None


def usage_problem(raw: Any) -> str | None:
    """Why a reported ``usage`` cannot be read, as a hook's malformed usage is
    diagnosed: not an object, or a count or cost Rook reads (``inputTokens`` ...)
    that is no number (``"lots"``, ``true``). ``None`` when it can be read."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        shown = current().head(hookio.as_json(raw), 100, "...")  # redacted, then cut
        return (
            'the reported usage must be an object like {"inputTokens": 12, "outputTokens": 3}, '
            f"got {shown}"
        )
    for name in (n for names in USAGE_NAMES.values() for n in names):
        value = raw.get(name)
        number = _number(value)
        if value is not None and number is None:
            shown = current().head(hookio.as_json(value), 100, "...")
            return f"the reported usage.{name} must be a number, got {shown}"
        if number is not None and abs(number) > hookio.USAGE_MAX:  # as a hook's usage is told
            shown = current().head(hookio.as_json(value), 40, "...")
            return f"the reported usage.{name} is absurdly large ({shown}); at most 10**15"
    return None


def ruhroh_usage(usage: dict[str, float] | None, raw: Any = None) -> dict[str, Any] | None:
    """Rook usage back in Ruhroh's names, for ``ruhroh-run-manifest.json``, with the
    other fields of the usage the wrapper reported (``raw``: ``cacheReadTokens`` ...)
    as they came: the manifest copies the usage, not only what Rook judges."""
    known = {name for names in USAGE_NAMES.values() for name in names}
    extra = {k: v for k, v in raw.items() if k not in known} if isinstance(raw, dict) else {}
    counts = {RUHROH_USAGE[k]: v for k, v in (usage or {}).items() if k in RUHROH_USAGE}
    return {**counts, **extra} or None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def read_handle(value: Any, what: str = "the handle") -> str | None:
    """A reported session handle read as the hook contract reads a conversation
    (:func:`rook_core.hookio.conversation_handle`): ``true``, a blank string, ``{}``
    is none; a number or an object is its JSON text. One holding a NUL character,
    which no environment variable can carry to the next call, is a
    :class:`ProtocolError` naming ``what``."""
    try:
        return hookio.conversation_handle(value)
    except hookio.OutputError:
        raise ProtocolError(
            f"{what} holds a NUL character (\\u0000), which RUHROH_SESSION_HANDLE and "
            "ROOK_CONVERSATION (environment variables) cannot carry to the next call"
        ) from None


def non_finite(value: Any) -> str | None:
    """Where ``value`` (a connector's mapping) holds a float that is NaN or an
    infinity, with it (``scores[1]: NaN``); ``None`` when it holds none."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return f"{where}: {json.dumps(item)}"
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
    return None


def merge_fields(
    final: dict[str, Any] | None, from_file: dict[str, Any] | None
) -> tuple[dict[str, Any], frozenset[str]]:
    """The final line's fields and the result file's, the file's winning field by
    field; and the final line's names hidden by a field the file gives under
    another of its names (the file's ``summary`` wins over the line's
    ``output``, its ``session_handle`` over the line's ``sessionHandle``)."""
    fields = {**(final or {}), **(from_file or {})}
    if not (final and from_file):
        return fields, frozenset()
    hidden = {
        name
        for names in ALIASES
        if any(n in from_file for n in names)
        for name in names
        if name in final and name not in from_file
    }
    return fields, frozenset(hidden)


def normalize(
    fields: dict[str, Any],
    transcript: str,
    result: IterationResult,
    hidden: frozenset[str] = frozenset(),
) -> IterationResult:
    """Fill ``result`` from the merged fields a wrapper or connector reported;
    the names in ``hidden`` (see :func:`merge_fields`) are kept in ``fields``
    as reported but not read."""
    result.fields = fields
    if hidden:
        fields = {k: v for k, v in fields.items() if k not in hidden}
    result.transcript = transcript
    status = fields.get("status")
    result.status = status if isinstance(status, str) and status else None
    result.output = next(
        (_text(fields[k]) for k in OUTPUT_FIELDS if fields.get(k) not in (None, "")), None
    )
    if result.output is None and any(fields.get(k) == "" for k in OUTPUT_FIELDS):
        result.output = ""  # an answer given, and empty: never the transcript instead
    if result.output is None and transcript.strip():
        result.output = transcript
    result.handle = None
    for key in HANDLE_FIELDS:
        try:
            result.handle = read_handle(fields.get(key), f"the reported {key}")
        except ProtocolError as exc:  # the call fails, and the session keeps its handle
            result.failure = result.failure or str(exc)
        if result.handle is not None:
            break
    result.usage = rook_usage(fields.get("usage"))
    if result.status not in (RUNTIME_FAILURE, INFRA_FAILURE):  # no count ("n/a") is no news
        result.failure = result.failure or usage_problem(fields.get("usage"))
    result.usage_raw = ruhroh_usage(result.usage, fields.get("usage"))
    model = fields.get("model")
    result.model = {"model": model} if isinstance(model, str) else model
    for attr, names in (
        ("adapter_version", ("adapterVersion", "adapter_version")),
        ("run_id", ("runId", "run_id")),
    ):
        value = next((fields[n] for n in names if fields.get(n) not in (None, "")), None)
        setattr(result, attr, _text(value))
    result.artifacts = fields.get("artifacts")
    return result


def _read_one(value: Any, base: Path, cap: int) -> dict[str, Any]:
    if isinstance(value, dict):
        if isinstance(value.get("path"), str):
            return {**value, **_read_one(value["path"], base, cap)}
        return dict(value)
    if not isinstance(value, (str, Path)):
        return {"value": value}
    path = user_path(value)
    if not path.is_absolute():
        path = base / path
    info: dict[str, Any] = {"path": str(path)}
    if "\0" in str(path):  # no file name holds one (os.open raises ValueError)
        return {**info, "missing": True}
    try:
        if path.is_dir():
            return {**info, "kind": "directory"}
        # never blocks: opening a named pipe waits for a writer, reading a device never ends
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return {**info, "kind": "special"}  # a named pipe, socket or device: not read
            size = st.st_size
            data = _read_at_most(fh, cap)
    except OSError:
        return {**info, "missing": True}
    info["size"] = size
    if b"\0" in data:
        return {**info, "binary": True}
    # a file cut at the cap can stop inside a secret: its beginning is masked too
    info["content"] = hookio.decode(data, cap if size > cap else None)
    if size > cap:
        info["truncated"] = True
    return info


def _listed_name(value: Any, index: int) -> tuple[str, str]:
    """A listed artifact's name and, for one that shares it, its longer name: a
    path by its file name (then the path as given); an object by its ``name``,
    else its ``path`` the same way; anything else by its place in the list."""
    if isinstance(value, dict):
        if isinstance(value.get("name"), str) and value["name"]:
            return value["name"], f"{value['name']} ({index})"
        value = value.get("path")
    if isinstance(value, (str, Path)) and Path(value).name:
        return Path(value).name, str(value)
    return f"artifact {index}", f"artifact {index}"


def read_artifacts(artifacts: Any, base: Path, cap: int) -> dict[str, Any]:
    """Artifacts a result names (``{name: path}``, a list of paths or of objects
    with a ``path``, or one path) with each file's content, capped at ``cap``
    bytes (binary files: size only). Anything else is kept as it came, with a note."""
    if isinstance(artifacts, str):
        artifacts = [artifacts]  # one path
    if isinstance(artifacts, list):
        names = [_listed_name(p, i) for i, p in enumerate(artifacts, 1)]
        short = [n for n, _ in names]
        # each by its name; entries that share one by the longer name, so none is lost
        items = [
            (name if short.count(name) == 1 else longer, p)
            for (name, longer), p in zip(names, artifacts, strict=True)
        ]
    elif isinstance(artifacts, dict):
        items = list(artifacts.items())
    elif artifacts is None:
        return {}
    else:
        return {
            "artifacts": {
                "value": artifacts,
                "note": "not a {name: path} mapping, a list of paths or a path: kept as given",
            }
        }
    return {str(name): _read_one(value, base, cap) for name, value in items}


def sample_seed(scenario_id: str, repeat_index: int, run_seed: str = "") -> int:
    """A 31-bit seed, the same for a scenario and repeat in every run (and
    changed by ``RUHROH_RUN_SEED`` when that is set)."""
    digest = hashlib.sha256(f"{run_seed}\0{scenario_id}\0{repeat_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
