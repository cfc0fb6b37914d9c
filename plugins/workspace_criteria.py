"""Workspace criteria for coding agents: what the agent left on disk.

They look at the scenario's ``workspace:`` directory (relative to the Rook
workspace, or absolute); when the scenario names none, at the agent workspace
its execute hook reported (the ``workspace`` field: a Ruhroh wrapper's
``RUHROH_WORKSPACE`` sandbox), else at the Rook workspace; after the agent has
finished (in the judge phase):

* ``file: {path, exists | contains | not_contains | matches | not_matches}``
  (no check means ``exists: true``; ``contains`` ignores case like the
  answer criteria, ``matches`` is a regular expression);
* ``command: {run, exit, timeout_seconds}`` runs ``run`` (a shell command
  line, or a list of arguments) in that directory and expects exit code
  ``exit`` (default 0) within ``timeout_seconds`` (default 60); a command
  that does not finish in time fails, and its whole process group is killed.

Every run registers these, and only validating a scenario needs marshmallow, so
its ``ValidationError`` is imported by the ``parse`` methods that raise it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rook_core.hookio import decode, tail
from rook_core.hookspecs import hookimpl
from rook_core.judging import CHECK_MARKER, CriterionType, EvidenceView
from rook_core.models import ERROR, FAILED, PASSED, Verdict
from rook_core.process import run_process
from rook_core.redact import MARK, current
from rook_core.workspace import user_path

from .criteria import finite_number, folded, same_form, unknown_keys, with_yaml_hint
from .patterns import TooSlow, compile_pattern, search

FILE_CHECKS = ("exists", "contains", "not_contains", "matches", "not_matches")
READ_LIMIT = 10 * 1024 * 1024  # of a file a file criterion reads; what lies beyond is not seen
READ_LIMIT_TEXT = "10 MiB"
OUTPUT_CAP = 1024 * 1024
DEFAULT_COMMAND_TIMEOUT = 60.0
TAIL = 1500


def workspace_dir(view: EvidenceView) -> Path:
    """The directory workspace criteria look at for this scenario: its
    ``workspace:``, else the agent workspace the last turn reporting one gave
    (:func:`reported_workspace`), else the Rook workspace."""
    base = view.judging.workspace or Path.cwd()
    named = view.scenario.extra.get("workspace") or reported_workspace(view)
    if not named:
        return Path(base)
    path = user_path(named)
    return path if path.is_absolute() else Path(base) / path


def reported_workspace(view: EvidenceView) -> str | None:
    """The agent workspace an execute hook reported in its ``workspace`` field
    (a Ruhroh wrapper works in its own sandbox, ``RUHROH_WORKSPACE``, not in
    the Rook workspace), the latest turn's; ``None`` when no turn gave one. A
    path holding a secret's value is recorded redacted: it is put back
    (:meth:`~rook_core.redact.Redactor.put_back`, in memory only) to name the
    folder the hook reported, never one called ``...[redacted:NAME]``."""
    for turn in reversed(view.turns):
        where = turn.evidence.get("workspace")
        if where is not None:
            if not isinstance(where, str) or not where.strip():
                return None
            return current().put_back(where)[0] if MARK in where else where
    return None


def _not_a_path(view: EvidenceView) -> str | None:
    """Why the latest ``workspace`` a turn reported is no directory to look in
    (``5``, ``""``), or ``None``: never quietly the Rook workspace instead."""
    for turn in reversed(view.turns):
        where = turn.evidence.get("workspace")
        if where is None:
            continue
        if isinstance(where, str) and where.strip():
            return None
        shown = current().head(json.dumps(where, ensure_ascii=False, default=str), 120, "...")
        return f"the agent workspace its execute hook reported in turn {turn.turn} ({shown}) is not a path"
    return None


def _missing_dir(where: Path, view: EvidenceView) -> Verdict | None:
    if not view.scenario.extra.get("workspace") and (bad := _not_a_path(view)):
        return Verdict(ERROR, bad)
    try:
        if where.is_dir():
            return None
        state = "is not a directory" if where.exists() else "does not exist"
    except OSError as exc:  # a name too long, a folder it may not enter: no system call takes it
        state = f"cannot be used: {exc.strerror or exc}"
    if view.scenario.extra.get("workspace"):
        whose = "the scenario's workspace directory"
    elif reported_workspace(view):
        whose = "the agent workspace its execute hook reported"
    else:
        whose = "the workspace"
    shown = current().head(str(where), 200, "...")
    return Verdict(ERROR, f"{whose} {shown} {state}")


def _tail(data: bytes) -> str:
    return tail(decode(data, OUTPUT_CAP), TAIL)


class File(CriterionType):
    name = "file"
    per_turn = False
    turns_apply = False
    description = "a file in the agent's workspace exists / contains / matches"

    def parse(self, value: Any) -> dict[str, Any]:
        from marshmallow import ValidationError

        from rook_core.schemafields import yaml_typed

        if isinstance(value, str) and value:
            value = {"path": value}
        typed = yaml_typed(value)  # `file: on`: a path to its writer
        if typed:
            raise ValidationError(typed)
        typed = yaml_typed(value.get("path")) if isinstance(value, dict) else None
        if typed:
            raise ValidationError({"path": [typed]})
        unknown_keys(value, ("path", *FILE_CHECKS))
        if not isinstance(value, dict):
            raise ValidationError(
                "must be a mapping with path and one of " + ", ".join(FILE_CHECKS)
            )
        path = value.get("path")
        if not isinstance(path, str) or not path:  # named as the path's, not the criterion's
            if "path" not in value or path is None:
                problem = "missing: the file's path inside the scenario's workspace"
            elif isinstance(path, (dict, list)):
                kind = "a mapping" if isinstance(path, dict) else "a list"
                problem = f"must be one path (a text), not {kind}: write one criterion for each"
            else:
                problem = "must be a path (a text), not empty"
            raise ValidationError({"path": [problem]})
        rel = Path(value["path"])
        if (
            rel.is_absolute()
            or value["path"].startswith("~")
            or ".." in rel.parts
            or "\0" in value["path"]  # no file name holds one
        ):
            raise ValidationError(  # a check of the agent's work, not of this machine
                {"path": ["must be a path inside the scenario's workspace (no /, ~ or ..)"]}
            )
        checks = [k for k in FILE_CHECKS if k in value]
        if len(checks) > 1:
            raise ValidationError("give at most one of " + ", ".join(FILE_CHECKS))
        check = checks[0] if checks else "exists"
        want = value.get(check, True)
        if check == "exists":
            if not isinstance(want, bool):
                raise ValidationError({"exists": ["must be true or false"]})
        elif isinstance(want, bool):  # `contains: on`: text to its writer
            raise ValidationError({check: [yaml_typed(want) or "must be a text"]})
        elif not isinstance(want, (str, int, float)):
            raise ValidationError({check: ["must be a text"]})
        elif str(want) == "":
            raise ValidationError({check: ["must be a text, not empty (every file contains it)"]})
        else:
            from rook_core.yamlio import written

            want = written(want)  # 007 as written, never 7
            if check in ("matches", "not_matches"):
                try:
                    want = compile_pattern(same_form(want))  # as the file's text: NFC
                except ValueError as exc:
                    raise ValidationError({check: [str(exc)]}) from None
        return {"path": value["path"], "check": check, "want": want}

    def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        try:
            return self._evaluate(config, view)
        except OSError as exc:  # the workspace and the path too long a name together ...
            shown = current().head(str(exc.filename or config["path"]), 200, "...")
            return Verdict(ERROR, f"{shown} cannot be checked: {exc.strerror or exc}")

    def _evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        where = workspace_dir(view)
        if (v := _missing_dir(where, view)) is not None:
            return v
        target = where / config["path"]
        check, want = config["check"], config["want"]
        try:  # a link the agent made that leads out of its workspace is not its work
            outside = not target.resolve().is_relative_to(where.resolve())
        except (OSError, RuntimeError):
            outside = True
        if outside and (target.exists() or target.is_symlink()):
            return Verdict(ERROR, f"{target} leads outside the workspace {where}: not checked")
        if check == "exists":
            found = target.exists()
            ok = found == want
            return Verdict(
                PASSED if ok else FAILED, f"{target} {'exists' if found else 'does not exist'}"
            )
        if not target.is_file():  # say which: a folder where a file was expected exists
            what = "is a directory, not a file" if target.is_dir() else "does not exist"
            if target.exists() and not target.is_dir():
                what = "is not a regular file"
            return Verdict(FAILED, f"{target} {what}")
        try:
            with open(target, "rb") as fh:
                data = fh.read(READ_LIMIT + 1)
        except OSError as exc:
            return Verdict(ERROR, f"cannot read {target}: {exc.strerror or exc}")
        cut = len(data) > READ_LIMIT  # only the first READ_LIMIT bytes are read
        text, unread = _decoded(data[:READ_LIMIT], cut)
        text = same_form(text)  # one Unicode form, as the answer criteria see text
        if check in ("contains", "not_contains"):
            hit = folded(want) in folded(text)
            what = f"{'contains' if hit else 'does not contain'} {want!r}"
        else:
            try:
                m = search(want, text)
            except TooSlow as exc:
                return Verdict(ERROR, f"{target}: {exc}")
            hit = m is not None
            what = f"does not match /{want.pattern}/"
            if m:  # a secret the match stops inside is masked whole (its share of it too)
                quoted = current().pieces([text[: m.start()], m.group(0), text[m.end() :]])[1]
                what = f"matches /{want.pattern}/ ({current().head(quoted, 80)!r})"
        if cut and not hit:  # what was not read may hold it: neither way is shown
            return Verdict(
                ERROR,
                f"{target} is larger than the {READ_LIMIT_TEXT} Rook reads of a file: "
                f"{what} in its first {READ_LIMIT_TEXT}, and the rest was not checked",
            )
        if unread and not hit and unread.startswith("not text"):  # binary: may hold it otherwise
            return Verdict(
                ERROR,
                f"{target} is {unread}: {what} read as UTF-8 text, and a binary file "
                "cannot be checked for text in any other form",
            )
        if unread and not hit:  # the bytes it could not read may hold it
            return Verdict(
                ERROR,
                f"{target} is {unread}: {what} in what could be read of it, "
                "and the rest was not checked",
            )
        ok = hit if check in ("contains", "matches") else not hit
        return Verdict(PASSED if ok else FAILED, f"{target} {what}")


def _decoded(data: bytes, cut: bool) -> tuple[str, str | None]:
    """A file's text: UTF-8, or UTF-16, UTF-32 or UTF-8 after a byte order mark
    (what PowerShell and Notepad write), or UTF-16 without one (:func:`_utf16`); and
    where it is no such text (``None`` when all of it is: ``not UTF-8 text (byte
    0xe9 at offset 3)``, ``not text (a NUL byte at offset 0 ...)``), its
    undecodable bytes then replaced. A character the read limit (``cut``) split
    at the end is left out."""
    import codecs

    encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    elif data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # before UTF-16's: FF FE
        encoding = "utf-32"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    elif b"\0" in data:  # UTF-8 text holds no NUL: UTF-16 without a mark, or no text
        text = _utf16(data, cut)
        if text is not None:
            return text, None
        at = data.index(b"\0")
        return data.decode(encoding, errors="replace"), (
            f"not text (a NUL byte at offset {at}, as in a binary file)"
        )
    try:
        return codecs.getincrementaldecoder(encoding)().decode(data, final=not cut), None
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding.startswith("utf-8") else encoding.upper()
        where = f"byte {data[exc.start]:#04x} at offset {exc.start}"
        return data.decode(encoding, errors="replace"), f"not {name} text ({where})"


_CONTROLS = "[\x00-\x08\x0e-\x1f\x7f]"
"""Characters no text file holds (a tab, a newline, a form feed it may)."""


def _utf16(data: bytes, cut: bool) -> str | None:
    """``data`` read as UTF-16 without a byte order mark, in the byte order its
    NUL bytes show (the high byte of every character below U+0100 is one: at odd
    offsets little-endian, at even ones big-endian); ``None`` when it is no such
    text (NULs on both sides, too few of them, or characters no text holds)."""
    import codecs
    import re

    even, odd = data[0::2].count(0), data[1::2].count(0)
    many, few = max(even, odd), min(even, odd)
    if many < 4 * few or many * 16 < len(data):  # under one character in 8 below U+0100
        return None
    decoder = codecs.getincrementaldecoder("utf-16-le" if odd > even else "utf-16-be")()
    try:
        text = decoder.decode(data, final=not cut)
    except UnicodeDecodeError:
        return None
    return None if re.search(_CONTROLS, text) else text


class Command(CriterionType):
    name = "command"
    per_turn = False
    turns_apply = False
    timeout_seconds = None  # its own timeout_seconds kills the command
    description = "a command run in the agent's workspace exits with the expected code"

    def parse(self, value: Any) -> dict[str, Any]:
        from marshmallow import ValidationError

        if isinstance(value, str) and value.strip():
            value = {"run": value}
        unknown_keys(value, ("run", "exit", "timeout_seconds"))
        if not isinstance(value, dict) or "run" not in value:
            raise ValidationError("must be a mapping with run, and optional exit, timeout_seconds")
        run = value["run"]
        if isinstance(run, str) and run.strip() and "\0" not in run:  # no argument holds NUL
            argv = ["/bin/sh", "-c", run]
        elif (
            isinstance(run, list)
            and run
            and all(isinstance(a, str) and "\0" not in a for a in run)
            and run[0]
        ):
            argv = list(run)
        else:
            from rook_core.schemafields import yaml_typed

            typed = yaml_typed(run)  # `run: yes`: a command line to its writer
            raise ValidationError(
                {"run": [typed or "must be a command line or a list of arguments"]}
            )
        code = value.get("exit", 0)
        if isinstance(code, bool) or not isinstance(code, int) or not -64 <= code <= 255:
            raise ValidationError(
                {
                    "exit": [
                        with_yaml_hint(
                            "must be an exit code, 0 to 255 (or -N: killed by signal N)",
                            code,
                            whole=True,
                        )
                    ]
                }
            )
        timeout = value.get("timeout_seconds", DEFAULT_COMMAND_TIMEOUT)
        if not finite_number(timeout) or timeout <= 0:
            raise ValidationError(
                {"timeout_seconds": [with_yaml_hint("must be a number of seconds > 0", timeout)]}
            )
        return {"run": run, "argv": argv, "exit": code, "timeout": float(timeout)}

    async def evaluate(self, config: dict[str, Any], view: EvidenceView) -> Verdict:
        where = workspace_dir(view)
        if (v := _missing_dir(where, view)) is not None:
            return v
        env = dict(view.judging.env)
        marker = {k: env.pop(k) for k in (CHECK_MARKER,) if k in env}
        env = (env or {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}) | marker
        proc = await run_process(
            config["argv"],
            env=env,
            stdin=None,
            timeout=config["timeout"],
            cwd=str(where),
            stdout_cap=OUTPUT_CAP,
            stderr_cap=OUTPUT_CAP,
            marker=marker,  # a daemon it started is found by it at its timeout, as a hook's
        )
        shown = config["run"] if isinstance(config["run"], str) else " ".join(config["run"])
        evidence: dict[str, dict[str, Any]] = {
            "command": {
                "run": shown,
                "cwd": str(where),
                "exit_code": proc.returncode,
                "seconds": round(proc.seconds, 3),
                "timed_out": proc.timed_out,
                "stdout": _tail(proc.stdout),
                "stderr": _tail(proc.stderr),
            }
        }
        if proc.notes:  # what was killed (a descendant outside its group), as a hook's
            evidence["command"]["process"] = list(proc.notes)
        if proc.spawn_error:
            return Verdict(ERROR, f"could not run {shown!r}: {proc.spawn_error}", evidence)
        if proc.timed_out:
            return Verdict(
                FAILED,
                f"{shown!r} did not finish within {config['timeout']:g} s; "
                "its process group was killed",
                evidence,
            )
        if proc.overflow:
            return Verdict(
                ERROR,
                f"{shown!r} wrote more than {OUTPUT_CAP} bytes on {proc.overflow}; it was stopped",
                evidence,
            )
        ok = proc.returncode == config["exit"]
        out = _tail(proc.stderr) or _tail(proc.stdout)
        reason = f"{shown!r} exited {proc.returncode} (expected {config['exit']})"
        if not ok and out:
            reason += f": {tail(out, 300)}"
        return Verdict(PASSED if ok else FAILED, reason, evidence)


@hookimpl
def rook_register_criteria(register: Any) -> None:
    register(File())
    register(Command())
