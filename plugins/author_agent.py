"""Built-in author: the **author agent**, for plain-language notes and for whatever
the deterministic authors cannot settle.

The author agent is any command (``--author CMD`` or ``author:`` in
config.yaml), such as a coding agent's CLI (``claude -p``). Rook writes the
request on its standard input: the notes, the hook contract, the source,
the current script and the observed failure (never a secret value: only the
names of the variables that hold them). It answers on standard output with
the script, either as text holding a fenced code block (the first one is
taken) or as a hook-contract JSON object whose ``output`` holds it; that JSON
object may also list ``env`` (``[{variable, purpose}]``) and ``phases``.
The script is then tested like any other.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
from typing import TYPE_CHECKING, Any

from rook_core import procscan
from rook_core.errors import ConfigError, RookError
from rook_core.process import run_process
from rook_core.redact import current

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Source
    from rook_core.profile_probe import Observation

TIMEOUT = 900.0
FENCE = re.compile(r"^```[ \t]*([\w+.-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
SUFFIX = {
    "python": ".py",
    "py": ".py",
    "python3": ".py",
    "bash": ".sh",
    "sh": ".sh",
    "shell": ".sh",
    "javascript": ".mjs",
    "js": ".mjs",
    "node": ".mjs",
    "mjs": ".mjs",
    "cjs": ".cjs",
}
ES_MODULE = re.compile(r"^[ \t]*(import\b[^(]|export\b)", re.MULTILINE)
COMMON_JS = re.compile(r"\brequire\s*\(|\bmodule\.exports\b|^[ \t]*exports\.", re.MULTILINE)
SHEBANG_PROGRAM = re.compile(r"\b(python[\d.]*|node|bash|sh)\b")
PLAIN_TEXT = ("", "text", "txt", "plaintext", "code")  # a fence naming no language
PHASES = ("prepare", "open", "close", "collect")
CASE_LABEL = re.compile(r"""^[ \t]*\(?([\w|"' \t]+?)[ \t]*\)""", re.MULTILINE)
PHASE_WORD = re.compile(r"""["'](prepare|open|close|collect)["']""")
ENV_READ = re.compile(
    r"""os\.environ\[["']([A-Z][A-Z0-9_]*)["']\]|process\.env\.([A-Z][A-Z0-9_]*)"""
)

HOOK_CONTRACT = """\
Rook runs the hook script as `<script> <phase>`: the phase name is the only argument,
one of prepare (once per run: sign in, mint a token), open (before each scenario:
create a session; may print {"conversation": "<handle>"}), execute (once per turn:
required), close (after each scenario), collect (after close: traces, usage, calls).
Implement the phases you need and exit 0 for the rest.

In execute only, the turn's text (the goal) arrives on standard input, byte for byte:
never put it on a command line. Other phases get no standard input.

Environment: ROOK_HOOK (phase), ROOK_WORKSPACE, ROOK_PROJECT, ROOK_AGENT,
ROOK_STATE_DIR (per-scenario directory that survives its phases: keep state there),
ROOK_RUN_ID, ROOK_SCENARIO_ID and ROOK_SESSION (from open), ROOK_TURN (execute,
one-based), ROOK_CONVERSATION (execute, close, collect: the handle from open or the
previous turn).

execute (and collect) print ONE JSON object on standard output, diagnostics on
standard error:
  {"output": "the agent's answer",            required from execute
   "conversation": "thread_abc123",           a handle to continue the conversation
   "usage": {"input": 1200, "output": 340},   token counts, when the agent reports them
   "calls": [{"name": "tool", "arguments": {}}]}  the agent's tool calls, when observable
Leave out usage and calls when they cannot be observed (never invent them). Any other
field is kept as evidence. A non-zero exit is a failed hook; standard error says why.
Secrets come from environment variables; never write a secret value into the script.
"""


def _said(value: Any, limit: int = 100) -> str:
    """A value the author agent answered, quoted in a message: redacted, then cut
    (a cut first would leave a piece of a secret the redactor no longer finds)."""
    return current().head(repr(value), limit, "...")


def _phases(value: Any) -> list[str]:
    """The ``phases`` of a JSON answer: a list of phase names, or one name alone
    (``"open"``: a one-item list); anything else is the author agent's error."""
    every = ("prepare", "open", "execute", "close", "collect")
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list):
        raise RookError(
            f"the author agent answered phases: {_said(value)} is not a phase "
            f"name nor a list of them ({', '.join(every)})"
        )
    for name in names:
        if name not in every:
            raise RookError(
                f"the author agent answered phases: {_said(name)} is not a phase "
                f"({', '.join(every)})"
            )
    return names


def _env(value: Any) -> list[dict[str, Any]]:
    """The ``env`` of a JSON answer: ``{variable, purpose}`` objects, a variable's name
    alone standing for one (so it is declared: checked before a run and redacted);
    anything else is the author agent's error."""
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, str) and not (isinstance(item, dict) and "variable" in item):
            raise RookError(
                f"the author agent answered env: {_said(item)} is not a variable "
                "({variable: NAME, purpose: ...}, or a NAME alone)"
            )
    return [
        {"variable": item, "purpose": "read by the hook script"} if isinstance(item, str) else item
        for item in (value if isinstance(value, list) else [value])
    ]


def parse_answer(stdout: str) -> tuple[str, str, dict[str, Any]]:
    """The script, its language and any extra JSON fields (``env``, ``phases``)."""
    text = stdout.lstrip().removeprefix("\ufeff").strip()  # a BOM first: .NET, PowerShell
    extra: dict[str, Any] = {}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        script = value.get("output", value.get("agent_reply"))
        if not isinstance(script, str) or not script.strip():
            raise RookError(
                "the author agent answered a JSON object without the script in its output field"
            )
        extra = {k: v for k, v in value.items() if k in ("env", "phases", "language")}
        if extra.get("phases") is not None:
            extra["phases"] = _phases(extra["phases"])
        if extra.get("env") is not None:
            extra["env"] = _env(extra["env"])
        text = script.strip()
    block = FENCE.search(text)
    lang = ""
    if block:
        lang, text = block.group(1).lower(), block.group(2)
    elif not text.startswith("#!") and not isinstance(value, dict):  # [1, 2] holds none
        raise RookError(
            "the author agent answered no script (no fenced code block, no "
            f"JSON object with output); it said: {_said(text, 300)}"
        )
    lang = str(extra.get("language") or lang).lower()
    if lang not in SUFFIX and text.startswith("#!"):  # the #! line names what runs it
        first = text.splitlines()[0]
        found = SHEBANG_PROGRAM.search(first)
        words = first[2:].split() or ["?"]
        program = words[0].split("/")[-1]
        if program == "env":  # #!/usr/bin/env [-S] perl
            program = next((w for w in words[1:] if not w.startswith("-")), program)
        lang = found.group(1) if found else program
        lang = "python" if lang.startswith("python") else lang
    if lang not in SUFFIX and lang not in PLAIN_TEXT:
        raise RookError(
            f"the author agent answered a script Rook cannot run ({lang}): Rook runs the "
            "hook scripts it writes in Python, bash or Node"
        )
    return text.rstrip() + "\n", lang if lang in SUFFIX else "python", extra


def run_author(command: str, text: str, request: AuthorRequest) -> str:
    """Run the author agent with ``text`` on its standard input; its standard output."""
    given = request.options.get("author_from") or "--author"  # or config.yaml's author:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"{given}: cannot split the command line: {exc}") from None
    if not argv:
        raise ConfigError(f"{given}: empty command")
    if "/" not in argv[0] and shutil.which(argv[0]) is None:
        raise ConfigError(f"{given}: {argv[0]!r} is not installed (not on PATH)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    env["ROOK_AUTHOR_REQUEST"] = "1"
    timeout = float(request.options.get("author_timeout") or TIMEOUT)
    request.say(f"asking the author agent ({argv[0]}, up to {timeout:g} s)...")
    # before any probe takes SIGCHLD back (become_subreaper): its exit status is Rook's
    procscan.own_exit_statuses()
    proc = asyncio.run(
        run_process(
            argv,
            env=env,
            stdin=text.encode("utf-8"),
            timeout=timeout,
            cwd=str(request.agent.workspace),
        )
    )
    out = proc.stdout.decode("utf-8", errors="replace")
    err = proc.stderr.decode("utf-8", errors="replace").strip()
    if proc.spawn_error:
        raise ConfigError(f"{given} {command}: could not start it: {proc.spawn_error}")
    if proc.timed_out:
        raise RookError(f"the author agent timed out after {timeout:g} s")
    if proc.overflow:  # stopped at the cap (a signal, and nothing said about why)
        raise RookError(
            f"the author agent wrote more than 10 MiB on its standard "
            f"{'output' if proc.overflow == 'stdout' else 'error'} "
            "and was stopped: no hook script is that long"
        )
    if proc.returncode != 0:
        rc = proc.returncode
        how = f"was killed by signal {-rc}" if rc and rc < 0 else f"exited with code {rc}"
        said = f": {current().tail(err, 500)}" if err else " (it wrote nothing on standard error)"
        raise RookError(f"the author agent {how}{said}")
    return out


def build_request(
    request: AuthorRequest, task: str, draft: Draft | None = None, obs: Observation | None = None
) -> str:
    """The request the author agent reads (markdown, then the same as JSON)."""
    from rook_core.profile_probe import phase_line
    from rook_core.yamlio import dump_yaml

    parts = [
        "# Write a Rook hook script",
        "",
        f"Rook (a tool that tests AI agents) needs a hook script for the agent "
        f"{request.agent.name!r}. {task}",
        "",
    ]
    notes = "\n\n".join(
        x for x in (request.notes, request.what and f"Known problem: {request.what}") if x
    )
    if notes:
        parts += ["## What the user says", "", notes, ""]
    src = request.source
    if src.kind not in ("notes", "profile") and src.text:
        parts += [
            f"## The source ({src.label})",
            "",
            "```",
            request.secrets.redactor.head(src.text, 8000),  # redacted, then cut
            "```",
            "",
        ]
    if draft is not None:
        parts += ["## The profile now", "", "```yaml", dump_yaml({"hooks": draft.hooks}), "```"]
        for rel, text in draft.files.items():
            parts += [f"Script {rel}:", "```", text, "```", ""]
    if obs is not None:
        parts += [
            "## What Rook observed when it ran the profile",
            "",
            "ok" if obs.ok else f"{obs.problem}: {obs.diagnosis}",
            "",
        ]
        parts += [json.dumps([phase_line(h) for h in obs.hooks], ensure_ascii=False), ""]
        if obs.response is not None:
            parts += [
                "Response:",
                "```",
                request.secrets.redactor.head(json.dumps(obs.response, ensure_ascii=False), 4000),
                "```",
                "",
            ]
    env = [*request.secrets.refs, *(draft.env if draft else [])]
    if env:
        parts += ["## Environment variables the script may read (values are secret)", ""]
        parts += [f"- {e['variable']}: {e['purpose']}" for e in env] + [""]
    parts += [
        "## The hook contract",
        "",
        HOOK_CONTRACT,
        "## Answer",
        "",
        "Answer with the complete script in one fenced code block (```python, ```bash "
        'or ```javascript), or with one JSON object {"output": "<the script>", '
        '"env": [{"variable": ..., "purpose": ...}], "phases": ["execute"]}.',
        "",
    ]
    machine = {
        "task": task,
        "agent": request.agent.name,
        "notes": request.notes,
        "what": request.what,
        "problem": obs.problem if obs else None,
        "diagnosis": obs.diagnosis if obs else None,
        "script": next(iter(draft.files), None) if draft else None,
    }
    parts += ["```json", json.dumps(machine, ensure_ascii=False), "```", ""]
    return request.secrets.redactor.text("\n".join(parts))


def draft_from(answer: str, request: AuthorRequest, base: Draft | None, why: str) -> Draft:
    from rook_core.authoring import Draft

    script, lang, extra = parse_answer(answer)
    suffix = SUFFIX.get(lang, ".py")
    if suffix == ".mjs" and COMMON_JS.search(script) and not ES_MODULE.search(script):
        suffix = ".cjs"  # require() is not defined in an ES module (.mjs)
    rel = request.script_path(suffix)
    current = base.hooks.get("execute") if base is not None else None
    if isinstance(current, dict):
        current = current.get("script")
    key = base.file_for(current, request.agent) if base and isinstance(current, str) else None
    if base is not None and key is not None and key.endswith(suffix):
        rel = key  # repair the script in place (./scripts/x.py is scripts/x.py)
        first = base.files[key].split("\n", 1)[0]
        if first.startswith("#!") and not script.startswith("#!"):
            # the file keeps its mode: an executable script needs its #! line to start
            script = f"{first}\n{script}"
    phases = extra.get("phases")
    if not isinstance(phases, list):
        found = set(PHASE_WORD.findall(script))
        if suffix == ".sh":  # a shell names them as case labels, unquoted: open) ... ;;
            for label in CASE_LABEL.findall(script):
                found |= {w.strip("\"' ") for w in label.split("|")} & set(PHASES)
        phases = ["execute", *sorted(found)]
    hooks = {
        p: rel
        for p in ("prepare", "open", "execute", "close", "collect")
        if p in phases or p == "execute"
    }
    env: list[dict[str, Any]] = []
    for e in extra.get("env") or []:
        if (
            isinstance(e, dict)
            and e.get("variable")
            and all(x["variable"] != e["variable"] for x in env)
        ):
            env.append(e)  # each variable once: a profile declaring one twice is refused
    known = {e["variable"] for e in env} | {r["variable"] for r in request.secrets.refs}
    for m in ENV_READ.finditer(script):
        var = m.group(1) or m.group(2)
        if var and var not in known and not var.startswith(("ROOK_", "RUHROH_")):
            env.append({"variable": var, "purpose": "read by the hook script"})
            known.add(var)
    draft = base.copy() if base is not None else Draft(hooks={})
    draft.hooks = {**draft.hooks, **hooks}  # phases the script does not take keep their hook
    draft.files = {rel: script}
    have = {e["variable"] for e in draft.env}
    draft.env += [
        {
            "variable": str(e["variable"]),
            "purpose": str(e.get("purpose") or "read by the hook script"),
        }
        for e in env
        if e["variable"] not in have
    ]
    draft.turns = 2 if "open" in hooks else 1
    draft.state = {**draft.state, "agent_script": rel}
    draft.changes.append(why + f": {rel}")
    return draft


class AgentAuthor:
    """Plain-language notes, and the cases no deterministic author settles."""

    fallback = True
    options: tuple[str, ...] = ()

    def detect(self, source: Source) -> float:
        return 1.0 if source.kind == "notes" else 0.0

    def _command(self, request: AuthorRequest) -> str:
        command = request.options.get("author_command")
        if not command:
            raise ConfigError(
                "plain-language notes need an author agent: --author CMD "
                "(any command that reads the request on stdin and answers with "
                "the script), or author: CMD in config.yaml"
            )
        return str(command)

    def write(self, request: AuthorRequest) -> Draft:
        command = self._command(request)
        text = build_request(request, "Write it from the notes below.")
        draft = draft_from(
            run_author(command, text, request),
            request,
            None,
            "the author agent wrote the hook script",
        )
        draft.changes.clear()
        draft.notes.append(
            f"hook script written by the author agent: {draft.state['agent_script']}"
        )
        return draft

    def revise(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        if observation.ok:
            return None
        command = self._command(request)
        text = build_request(
            request,
            "The current profile failed when Rook ran it; write a script that works.",
            draft,
            observation,
        )
        return draft_from(
            run_author(command, text, request),
            request,
            draft,
            f"the author agent rewrote the script after: {observation.problem}",
        )

    def repair(self, draft: Draft, observation: Observation, request: AuthorRequest) -> Any:
        command = self._command(request)
        task = (
            "Repair the profile's script"
            + (f" ({request.what})" if request.what else "")
            + "; keep every credential check and every evidence field it returns."
        )
        text = build_request(request, task, draft, observation)
        return draft_from(
            run_author(command, text, request),
            request,
            draft,
            "the author agent repaired the script",
        )
