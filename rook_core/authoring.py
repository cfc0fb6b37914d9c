"""Writing profiles for the user: the author interface and the pieces the loop uses.

An **author** turns a source (a cURL command, a command line, an OpenAPI
document, a script, a URL, plain-language notes) into a :class:`Draft`: the
profile's hooks, any hook script to write under the agent's ``scripts/``,
and the ``env`` references that replace every secret. Authors are plugins,
registered with ``rook_register_authors`` (``register(name, author)``); an
author is any object with:

``detect(source) -> float``
    How sure it is that it can write ``source`` (a :class:`Source`), from 0
    (not its kind) to 1. The most confident author writes the profile.
``write(request) -> Draft``
    The first draft, from an :class:`AuthorRequest`. Raise
    :class:`NeedsChoice` to ask the user to pick (an OpenAPI operation),
    :class:`CannotAuthor` when the source turns out not to be writable by
    it (the author agent then gets it, when one is configured), or
    :class:`rook_core.errors.ConfigError` for a user's mistake.
``revise(draft, observation, request) -> Draft | None`` (optional)
    Called after each probe of the draft against the real target, with the
    :class:`rook_core.profile_probe.Observation`. Return a corrected draft
    (with ``changes`` saying what changed and why), or ``None`` when there
    is nothing to correct.
``repair(draft, observation, request) -> Draft | None`` (optional)
    ``rook profile fix``: the draft is the existing profile (its hooks and
    the text of its scripts); return a repaired draft, or ``None`` when the
    failure is not one this author can repair. Repairs must never loosen a
    check (:func:`loosened` refuses such drafts).

An author marked ``fallback = True`` (the author agent) is never chosen by
``detect`` alone for a source another author claims; it gets plain-language
notes and whatever the deterministic authors cannot settle.

Secrets never reach a file or the terminal: an author hands every secret
value it finds to ``request.secrets.add(...)``, which returns the variable
that replaces it; the value goes to the command's redactor, and
:func:`write_files` refuses any file that would contain it.
"""

from __future__ import annotations

import copy
import os
import re
import shlex
import stat
from collections.abc import Callable
from dataclasses import field
from pathlib import Path, PurePath
from typing import Any

from .credentials import ASSIGNMENT, secret_name
from .errors import ConfigError, RookError, counted
from .plain import plain
from .redact import MARK, MIN_LENGTH, Redactor
from .store import atomic_write
from .workspace import Agent


@plain
class Source:
    """What the user gave ``rook profile add``.

    :param kind: ``file``, ``stdin``, ``url``, ``command``, ``ruhroh`` or ``notes``.
    :param text: the content: a file's or standard input's text, a fetched URL's
        body, the command line, or the notes.
    :param path: the file, for ``file``.
    :param url: the URL, for ``url``; ``status`` and ``content_type`` say what the
        fetch returned (``status`` is ``None`` when it could not connect). A URL of
        another scheme (``acme://desk``, for a plugin's author) is never fetched:
        ``text`` is empty and ``status`` ``None``.
    :param label: how to name the source in messages.
    :param fetched_url: for ``url``, where the body came from after redirects: what
        a relative reference in it (an OpenAPI document's servers) is relative to.
    """

    kind: str
    text: str = ""
    path: Path | None = None
    url: str | None = None
    status: int | None = None
    content_type: str = ""
    label: str = ""
    fetched_url: str | None = None

    def program_name(self) -> str | None:
        """For a command line: its program's name (``./bin/claude -p`` → ``claude``),
        or, when the program is an interpreter or runner, the name of what it runs
        (``env KEY=... python3 agent.py`` → ``agent``, ``python -m desk.server`` →
        ``server``, ``uv run bot.py`` → ``bot``, ``npx @acme/desk`` → ``desk``): every
        Python command would otherwise get the id ``python3``."""
        try:
            words = shlex.split(self.text)
        except ValueError:
            return None
        words = [w for w in words if not ASSIGNMENT.fullmatch(w) and PurePath(w).name != "env"]
        while words and words[0].startswith("-"):
            words = words[1:]
        return _run_name(words)


INTERPRETER = re.compile(
    r"(python[0-9.]*|py|pypy[0-9.]*|node(js)?|deno|bun|tsx|ts-node|bash|sh|zsh|dash|ruby|perl|php)"
    r"(\.exe)?",
    re.I,
)
"""Programs whose first word that is no option is the script they run."""
PACKAGE_RUNNERS = re.compile(r"(npx|bunx|uvx|pipx)(\.exe)?|pnpm dlx|pipx run|uv tool run", re.I)
"""Programs whose first word that is no option is the package they run."""
WRAPPERS = re.compile(r"(uv|poetry|pipenv|pdm|hatch|deno|bun|npm exec|yarn) run|npm exec", re.I)
"""Programs that run the command after them (``uv run python bot.py``)."""
VALUE_OPTIONS = {
    "-W",
    "-X",
    "-r",
    "--require",
    "--import",
    "--loader",
    "--env-file",
    "--with",
    "--python",
    "-p",
    "--project",
    "--directory",
    "--package",
    "--from",
}
"""Options of those programs that take the next word as their value."""


def _run_name(words: list[str]) -> str | None:
    """The name of what ``words`` (a command line, from its program) runs."""
    if not words:
        return None
    program = PurePath(words[0]).name
    two = f"{program} {words[1]}" if len(words) > 1 else program
    if PACKAGE_RUNNERS.fullmatch(" ".join([program, *words[1:3]])):  # uv tool run NAME
        rest, runner = words[3:], True
    elif WRAPPERS.fullmatch(two) or PACKAGE_RUNNERS.fullmatch(two):
        rest, runner = words[2:], PACKAGE_RUNNERS.fullmatch(two) is not None
    elif INTERPRETER.fullmatch(program) or PACKAGE_RUNNERS.fullmatch(program):
        rest, runner = words[1:], PACKAGE_RUNNERS.fullmatch(program) is not None
    else:
        return PurePath(words[0]).stem or None
    i = 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] != "-":
        option = rest[i].split("=")[0]
        if option in ("-m", "--module") and i + 1 < len(rest):  # python -m desk.server
            return rest[i + 1].rsplit(".", 1)[-1] or None
        if (
            option in ("-c", "-e", "-p", "--eval", "--print")
            and not runner
            and not (WRAPPERS.fullmatch(two) and option == "-p")
        ):
            return PurePath(words[0]).stem or None  # code given inline: no script to name
        i += 2 if option in VALUE_OPTIONS and "=" not in rest[i] else 1
    rest = rest[i:]
    if not rest or rest[0] == "-":
        return PurePath(words[0]).stem or None
    if WRAPPERS.fullmatch(two) and not runner:
        return _run_name(rest)  # uv run python bot.py: what python runs
    if runner:  # a package: @scope/name@1.2 -> name
        package = re.sub(r"(?<=.)@[^/]*$", "", rest[0]).rsplit("/", 1)[-1]
        return _run_name(rest) if INTERPRETER.fullmatch(package) else package or None
    return PurePath(rest[0]).stem or None


class NeedsChoice(ConfigError):
    """The source offers several candidates; the user picks one with ``option``."""

    def __init__(self, message: str, option: str, candidates: list[tuple[str, str]]) -> None:
        lines = "\n".join(f"  {cid}  {what}" for cid, what in candidates)
        super().__init__(f"{message}; choose one with {option} ID:\n{lines}")
        self.option = option
        self.candidates = candidates
        self.question = message


class CannotAuthor(RookError):
    """This author cannot write the source after all; the message says why."""


class AuthoringError(RookError):
    """Authoring stopped (e.g. a secret would have reached a file)."""


def too_short(purpose: str, value: str) -> str:
    """Why a secret of fewer than :data:`~rook_core.secret_forms.MIN_LENGTH` characters is
    refused: the redactor leaves so short a value alone (it would mangle every word
    holding it), so it would show on the screen and be found in the profile's own
    words (``ask`` in ``/ask``). The value itself is not named."""
    return (
        f"{purpose}: its value is {counted(len(value), 'character')}, too short to be redacted "
        f"safely (a secret needs at least {MIN_LENGTH}); nothing written. Give the real "
        "credential, or pass it through an environment variable: write {{env.NAME}} in "
        "its place and set NAME"
    )


def env_prefix(agent_name: str) -> str:
    """``order-desk`` -> ``ORDER_DESK``: the prefix of the variables Rook names."""
    prefix = re.sub(r"[^A-Z0-9]+", "_", agent_name.upper()).strip("_")
    return prefix if prefix and not prefix[0].isdigit() else f"AGENT_{prefix}".rstrip("_")


_ORIGIN = re.compile(r"https?://[^/\s)?#]+", re.IGNORECASE)


def origin(purpose: str) -> str | None:
    """The service a secret's ``purpose`` names (``Bearer credential for
    https://api.acme.example/v1/chat ...`` -> ``https://api.acme.example``), or None."""
    found = _ORIGIN.search(purpose or "")
    return found.group().lower() if found else None


class Secrets:
    """The secret values found in a source, each replaced by an ``env`` variable.

    Values live in memory only: they are added to the command's redactor (so
    no message shows them), used for the probe when the variable is not set,
    and checked against every file before it is written.
    """

    def __init__(self, prefix: str, redactor: Redactor) -> None:
        self.prefix = prefix
        self.redactor = redactor
        self._refs: dict[str, str] = {}  # variable -> purpose
        self._values: dict[str, str] = {}  # variable -> value (when the source held one)
        self._hidden: dict[str, str] = {}  # every secret string (also parts) -> variable
        self._forms: Redactor | None = None  # of _hidden's values alone (:meth:`holder`)
        self.known: set[str] = set()  # variables of the agent's profiles (:meth:`hide_known`)
        # variable -> [(another profile of the agent declaring it, that entry's purpose)]
        self.taken: dict[str, list[tuple[str, str]]] = {}
        self.profile = ""  # the new profile's id: names a secret whose variable is taken
        self.renamed: dict[str, str] = {}  # variable -> the taken one it was named instead of

    def _elsewhere(self, name: str, purpose: str, value: str | None) -> bool:
        """Whether ``name`` is another service's: other profiles of the agent declare
        it (:attr:`taken`), each for another origin than ``purpose``'s, and it is
        not set to ``value`` now."""
        if name not in self.taken:
            return False
        others = [origin(p) for _, p in self.taken[name]]
        same = bool(value) and os.environ.get(name) == value
        return all(others) and origin(purpose) not in others and not same

    def add(
        self, what: str, purpose: str, value: str | None = None, variable: str | None = None
    ) -> str:
        """Name the variable for a secret (``<AGENT>_<WHAT>``) and remember its value.

        A name other profiles of the agent declare (:attr:`taken`) for other
        services only (each purpose names another origin than ``purpose``) is
        theirs: the secret is named after this profile instead
        (``<AGENT>_<PROFILE>_<WHAT>``, in :attr:`renamed`), unless the source
        holds the very value the variable is set to now.

        The same value always gets the same variable; ``value`` is ``None`` when
        the source only says a secret is needed (an OpenAPI security scheme).
        ``variable`` keeps the name the source gave it (``OPENAI_API_KEY=...`` in
        a command line), when no other secret has it. A variable the source only
        refers to (no ``value``) is secret too when it is set: its value, read
        from the environment, is hidden like one the source held (no file, no
        message may hold it).
        """
        if value:
            for var, known in self._values.items():
                if known == value:
                    return var
            if len(value.strip()) < MIN_LENGTH:
                raise ConfigError(too_short(purpose, value.strip()))
        kind = re.sub(r"[^A-Z0-9]+", "_", what.upper()).strip("_")
        base = variable or f"{self.prefix}_{kind}"
        if not variable and base in self.taken and self.profile:
            # another profile's variable, for another service (its purpose names another
            # origin): reused only for the very value it is set to, else named after this
            # profile; for the same service it is the same secret
            if self._elsewhere(base, purpose, value):
                own = re.sub(r"[^A-Z0-9]+", "_", self.profile.upper()).strip("_")
                taken, base, n = base, f"{self.prefix}_{own}_{kind}", 2
                while self._elsewhere(base, purpose, value):  # eu-1's, where this is eu_1
                    base, n = f"{self.prefix}_{own}_{kind}_{n}", n + 1
                self.renamed.setdefault(base, taken)
        if value is None and base in self._refs and base not in self._values:
            return base  # the same secret named twice, with no value: one variable
        var, n = base, 2
        while var in self._refs:
            var, n = f"{base}_{n}", n + 1
        self._refs[var] = purpose
        if value:
            self._values[var] = value
            self.hide(value, var)
            self.hide(value.strip(), var)  # read from a file: shown without its newline too
        elif len(os.environ.get(var, "")) >= MIN_LENGTH:  # shorter: the redactor cannot
            self.hide(os.environ[var], var)
        return var

    def hide(self, value: str, name: str) -> None:
        """Treat ``value`` as secret too (a part of one: the password inside user:password)."""
        if value and value not in self._hidden:
            self._hidden[value] = name
            self.redactor.add(name, value)
            if self._forms is not None:
                self._forms.add(name, value)

    def hide_known(self, names: list[str], in_source: bool = True) -> None:
        """Treat the values of ``names`` (the ``env`` variables of the agent's
        profiles, as set now) as secret too: a source that holds one written
        out must not put it into a new file, nor may an author agent that read
        it from its environment (``in_source=False``: ``rook profile fix`` has
        no source but the profile, so a file holding one is the author's doing)."""
        for name in names:
            value = os.environ.get(name, "")
            if len(value) >= MIN_LENGTH:  # shorter: the redactor cannot either
                if in_source:
                    self.known.add(name)
                self.hide(value, name)

    def refuse_known(self, held: str | None, where: str, fix: str) -> None:
        """Refuse (exit 2) a file ``where`` that would hold the value of ``held``,
        when it is one of :attr:`known`: the source held it written out."""
        if held in self.known:
            raise ConfigError(
                f"{where}: it would hold the value of {held} (an env variable of the agent's "
                f"profiles), written out in the source; nothing written. Instead, {fix}"
            )

    @property
    def refs(self) -> list[dict[str, str]]:
        return [{"variable": v, "purpose": p} for v, p in self._refs.items()]

    @property
    def values(self) -> dict[str, str]:
        return dict(self._values)

    def found_in(self, text: str) -> bool:
        return self.holder(text) is not None

    def holder(self, text: str) -> str | None:
        """The variable whose value (or a part of it) ``text`` holds, if any: as
        it is, or in any form the redactor finds it in (a script's string literal
        escapes its quotes and backslashes, ``'it\\'s'``; a ``Basic`` header is
        its base64), as an author agent that read it from its environment writes it.
        The redactor of those values alone is made once, on the first call that
        needs it, and grows with :meth:`hide` (it was made again on each call:
        a cURL command's every field, every file written)."""
        held = next((var for v, var in self._hidden.items() if v in text), None)
        if held is not None or not self._hidden:
            return held
        if self._forms is None:
            self._forms = Redactor()
            for value, var in self._hidden.items():
                self._forms.add(var, value)
        said = self._forms.text(text)
        return next(
            (
                v
                for v in self._hidden.values()
                if said.count(f"{MARK}{v}]") > text.count(f"{MARK}{v}]")
            ),
            None,
        )

    def move_from_text(self, text: str, where: str) -> str:
        """``text`` (plain-language notes) with every secret in it replaced by
        ``$NAME`` of the variable it now is; the author agent reads the notes
        and must never see, nor copy into a script, the value."""
        from .credentials import secret_kind, text_secrets

        found = text_secrets(text)
        names = [  # named in the order they are found, replaced from the end
            self.add(
                secret_kind(f.name),
                f"the {'password in a URL' if f.purpose == 'password' else f.name} in {where}",
                f.value,
            )
            for f in found
        ]
        for f, var in reversed(list(zip(found, names, strict=True))):
            text = text[: f.start] + f"${var}" + text[f.end :]
        for var, value in self._values.items():  # the same value mentioned again
            text = text.replace(value, f"${var}")
        return text


@plain
class AuthorRequest:
    """Everything an author gets. ``options`` holds the command's flags
    (``operation``, ``base_url``, ``author_command``, ``max_iterations`` ...)."""

    source: Source
    agent: Agent
    profile_id: str
    name: str
    secrets: Secrets
    notes: str = ""
    what: str = ""
    goal: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    fetch: Callable[[str], Source] | None = None
    say: Callable[[str], None] = print

    def script_path(self, suffix: str = ".py", stem: str | None = None) -> str:
        """Where this profile's hook script goes, as the hook entry writes it:
        ``scripts/<id>-hook.py``. The hyphen keeps the name from ever shadowing a
        module the script imports (a script named ``json.py`` would)."""
        return f"scripts/{stem or self.profile_id + '-hook'}{suffix}"


@plain
class Draft:
    """A profile being written: its hooks, files, env references and what changed.

    :param hooks: the profile's ``hooks`` mapping, as it will be written.
    :param files: path relative to the agent's folder (``scripts/x.py``) -> text.
    :param env: ``env`` references beyond the secrets named through ``request.secrets``.
    :param hook_env: the profile's ``hook_env`` (values that are not secret).
    :param turns: turns the probe sends (2 checks that a conversation continues).
    :param capabilities: what the author assumes, written when no probe confirmed more.
    :param name: a suggested profile name (when the user gave none).
    :param changes: what this draft changed from the previous one, and why.
    :param notes: things the user should know (shown once, at the end).
    :param state: the author's own memory between ``write`` and ``revise``.
    """

    hooks: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    env: list[dict[str, str]] = field(default_factory=list)
    hook_env: dict[str, str] = field(default_factory=dict)
    turns: int = 1
    capabilities: dict[str, bool] = field(default_factory=dict)
    name: str | None = None
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    author: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """Other profile keys kept as they are (``concurrency``, ``limits`` ...), for fix."""

    def file_for(self, path: str, agent: Agent) -> str | None:
        """The key of :attr:`files` holding the script a hook entry names as ``path``
        however it is spelt (``./scripts/x.py``, its absolute path): the paths are
        compared where they lead, as a run finds the script; ``None`` when none does."""
        if path in self.files:
            return path
        real = next((c.resolve() for c in agent.candidates(path) if c.is_file()), None)
        return next((k for k in self.files if (agent.dir / k).resolve() == real), None)

    def copy(self, **changes: Any) -> Draft:
        """A deep copy with no ``changes`` yet (pass new values as keywords)."""
        new = copy.deepcopy(self)
        new.changes = []
        for key, value in changes.items():
            setattr(new, key, value)
        return new


def profile_data(
    draft: Draft, profile_id: str, name: str, secrets: Secrets, capabilities: dict[str, bool]
) -> dict[str, Any]:
    """The profile mapping a draft becomes (the reference's file format)."""
    env: list[dict[str, str]] = []
    for ref in [*secrets.refs, *draft.env]:
        if ref["variable"] not in {e["variable"] for e in env}:
            env.append(dict(ref))
    order = ("prepare", "open", "execute", "close", "collect")
    hooks = {p: draft.hooks[p] for p in order if p in draft.hooks}
    hooks.update({p: v for p, v in draft.hooks.items() if p not in order})  # refused later
    data: dict[str, Any] = {"name": name, "id": profile_id, "hooks": hooks}
    if env:
        data["env"] = env
    if capabilities:  # a repaired profile that claimed none is not given an empty mapping
        data["capabilities"] = dict(capabilities)
    if draft.hook_env:
        data["hook_env"] = dict(draft.hook_env)
    data.update({k: v for k, v in draft.extra.items() if k not in data})
    return data


def write_files(agent: Agent, files: dict[str, str], secrets: Secrets) -> list[Path]:
    """Write a draft's files under the agent's folder; refuse a path outside it and
    any text holding a secret value. A file that already holds the text is left
    alone; one that is replaced keeps its mode (an executable script stays one)."""
    for rel, text in files.items():
        file_target(agent, rel)
        held = secrets.holder(text)
        secrets.refuse_known(held, rel, "let the program read it from its environment")
        if held is not None:
            raise AuthoringError(
                f"{rel}: the author put the value of {held} (a secret) in the file; refused "
                "(nothing written): the script must read it from its environment"
            )
    written = []
    for rel, text in files.items():
        target = file_target(agent, rel)
        try:
            before = target.stat()
        except OSError:
            before = None
        if before is not None and same_text(target, text):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text)
        if before is not None:
            os.chmod(target, stat.S_IMODE(before.st_mode))
        written.append(target)
    return written


def file_target(agent: Agent, rel: str) -> Path:
    """Where a draft's file ``rel`` goes; a path outside the agent's folder is refused."""
    target = (agent.dir / rel).resolve()
    if agent.dir.resolve() not in target.parents:
        raise AuthoringError(f"an author wanted to write {rel}, outside {agent.dir}; refused")
    return target


def same_text(path: Path, text: str) -> bool:
    """Whether ``path`` already holds ``text`` (as :func:`atomic_write` would write it)."""
    try:
        return path.read_bytes() == text.encode("utf-8", errors="backslashreplace")
    except OSError:
        return False


# -- never loosen a check ---------------------------------------------------------


def _entry(value: Any) -> tuple[str, Any]:
    if isinstance(value, dict):
        keys = [k for k in value if k not in ("timeout_seconds", "delay_seconds")]
        if len(keys) == 1:
            return keys[0], value[keys[0]]
    return "script", value


def loosened(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What a changed profile would check less than the original (``fix`` and the
    self-correcting loop refuse such changes): TLS verification turned off, an
    ``env`` variable dropped, a credential header or parameter dropped, a hook
    dropped, a declared capability claimed without being observed."""
    found = []
    env_before = {e.get("variable") for e in before.get("env") or []}
    env_after = {e.get("variable") for e in after.get("env") or []}
    for var in sorted(env_before - env_after):
        found.append(f"env: {var} would no longer be required")
    hooks_before, hooks_after = before.get("hooks") or {}, after.get("hooks") or {}
    for phase in hooks_before:
        if phase not in hooks_after:
            found.append(f"hooks.{phase} would be removed")
            continue
        kb, vb = _entry(hooks_before[phase])
        ka, va = _entry(hooks_after[phase])
        if kb != "http" or not isinstance(vb, dict):
            continue
        if ka != "http" or not isinstance(va, dict):
            va = {}  # no longer an http: entry (a script instead): its credentials go with it
        if vb.get("verify_tls", True) is not False and va.get("verify_tls", True) is False:
            found.append(f"hooks.{phase}.http.verify_tls would be turned off")
        for part in ("headers", "query", "form"):
            old, new = vb.get(part) or {}, va.get(part) or {}
            for key, value in old.items():
                credential = secret_name(str(key)) or "{{env." in str(value)
                if credential and key not in new:
                    found.append(f"hooks.{phase}.http.{part}.{key} (a credential) would be dropped")
        if vb.get("auth") and not va.get("auth"):  # auth.digest: a user and password
            found.append(f"hooks.{phase}.http.auth (a credential) would be dropped")
    caps_before = before.get("capabilities") or {}
    caps_after = after.get("capabilities") or {}
    for cap, value in caps_after.items():
        if value and not caps_before.get(cap):
            found.append(f"capabilities.{cap} would be claimed without being observed")
    return found


__all__ = [
    "AuthorRequest",
    "AuthoringError",
    "CannotAuthor",
    "Draft",
    "NeedsChoice",
    "Secrets",
    "Source",
    "env_prefix",
    "loosened",
    "profile_data",
    "write_files",
]
