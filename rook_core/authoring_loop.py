"""The authoring loop: write a draft, probe the real target, correct, test again.

``rook profile add`` (:func:`add_profile`) and ``rook profile fix``
(:func:`fix_profile`) drive authors (:mod:`rook_core.authoring`) and the probe
(:mod:`rook_core.profile_probe`) here; the CLI only parses flags and prints
what :class:`Events` reports. Both loops are bounded, tell the user every
change, and refuse a change that would loosen a check.
"""

from __future__ import annotations

import copy
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from . import inflate
from .authoring import (
    AuthoringError,
    AuthorRequest,
    CannotAuthor,
    Draft,
    Source,
    file_target,
    loosened,
    profile_data,
    write_files,
)
from .errors import ConfigError, PluginError, RookError, exception_text
from .models import CAPABILITIES, Profile
from .plain import plain
from .plugins import Rook, plugin_failure
from .preflight import resolve_entries
from .profile import profile_from_dict
from .profile_probe import Observation, probe
from .store import atomic_write
from .yamlio import dump_yaml

DEFAULT_ATTEMPTS = 4
NO_REPAIR = ("missing_variable", "unreachable", "infra", "tls", "rate_limited")
"""Problems no change to the profile repairs: the user's to set, start, wait for or trust
(no repair turns TLS verification off; none lifts a rate limit)."""
FETCH_TIMEOUT = 30.0
FETCH_LIMIT = 5 * 1024 * 1024


@plain
class Events:
    """Where the loop reports: ``attempt(n, draft, observation)`` after each probe,
    ``waiting(text)`` just before each probe calls the target (what it waits for,
    and how long at most), ``say(text)`` for everything else (the CLI redacts and
    prints them all)."""

    say: Callable[[str], None] = print
    attempt: Callable[[int, Draft, Observation], None] = lambda n, d, o: None
    waiting: Callable[[str], None] = lambda text: None


@plain
class Outcome:
    """How authoring or fixing ended."""

    ok: bool
    draft: Draft
    observation: Observation | None
    data: dict[str, Any]
    path: Path
    attempts: int = 0
    changes: list[str] = field(default_factory=list)
    written: bool = False


# -- sources ----------------------------------------------------------------------


def fetch(url: str) -> Source:
    """GET ``url`` (the ``--from URL`` source); a connection failure is a source with
    no status, so the authors (which probe endpoints) still see it."""
    import ssl

    import httpx

    deadline = time.monotonic() + FETCH_TIMEOUT
    body = bytearray()
    tls = httpx.create_ssl_context()  # certifi's, or SSL_CERT_FILE/_DIR
    tls.verify_flags &= ~ssl.VERIFY_X509_STRICT  # as on Python < 3.13 and in runs (docs/http.md)
    try:
        with httpx.Client(timeout=FETCH_TIMEOUT, follow_redirects=True, verify=tls) as client:
            with client.stream("GET", url, headers={"Accept": "application/json, */*"}) as reply:
                # read as it arrives: the first FETCH_LIMIT bytes are all that is looked
                # at, and a body that trickles in for ever is no answer
                for chunk in _decoded(reply):
                    body += chunk
                    if len(body) >= FETCH_LIMIT:
                        break
                    if time.monotonic() > deadline:
                        why = f"error: no complete answer within {FETCH_TIMEOUT:g} s"
                        return Source("url", "", url=url, label=url, content_type=why)
    except httpx.HTTPError as exc:
        return Source("url", "", url=url, label=url, content_type=f"error: {type(exc).__name__}")
    ctype = reply.headers.get("content-type", "").partition(";")[0].strip().lower()
    text = bytes(body[:FETCH_LIMIT]).decode("utf-8", errors="replace")
    return Source(
        "url",
        text,
        url=url,
        status=reply.status_code,
        content_type=ctype,
        label=url,
        fetched_url=str(reply.url),
    )


def _decoded(reply: Any) -> Iterator[bytes]:
    """The body of the httpx ``reply`` decoded, ``gzip`` and ``deflate`` undone a step at
    a time (:mod:`.inflate`), so a body gzipped twice stops at FETCH_LIMIT with memory
    bounded; corrupt data fails as httpx's own decoders fail."""
    import httpx

    names = inflate.layers(reply.headers.get_list("content-encoding", True))
    if names is None:
        yield from reply.iter_bytes()
        return
    inflater = inflate.Inflater(names)
    for raw in reply.iter_raw():
        try:
            yield from inflater.feed(raw)
        except zlib.error as exc:
            raise httpx.DecodingError(str(exc)) from None


def choose_author(rook: Rook, source: Source) -> tuple[str, Any] | None:
    """The author most confident it can write ``source``; a fallback author only
    when no other claims it (a score above 0), however sure the fallback is."""
    best: tuple[int, float, str, Any] | None = None
    for name, author in rook.authors.items():
        detect = getattr(author, "detect", None)
        if detect is None or not callable(getattr(author, "write", None)):
            continue
        try:
            score = float(detect(source) or 0.0)
        except ConfigError:  # the author refused the source as the user's mistake
            raise
        except BaseException as exc:  # sys.exit() too: never exit 0 unsaid
            if not plugin_failure(exc):
                raise
            raise PluginError(
                f"author {name!r} ({rook.authors.owner(name)}) failed while reading the source: "
                f"{exception_text(exc)}"
            ) from None
        rank = 0 if getattr(author, "fallback", False) else 1
        if score > 0 and (best is None or (rank, score) > best[:2]):
            best = (rank, score, name, author)
    return (best[2], best[3]) if best else None


def fallback_author(rook: Rook) -> tuple[str, Any] | None:
    for name, author in rook.authors.items():
        if getattr(author, "fallback", False):
            return name, author
    return None


def suggest_name(rook: Rook, name: str, source: Source) -> str | None:
    """The name author ``name`` gives the profile, or None; a plugin's bug (a raise,
    something other than a text or None) becomes a clear error naming it."""
    if not callable(getattr(rook.authors.get(name), "suggest_name", None)):
        return None
    suggested = _call(name, rook, "suggest_name", source)
    if suggested is None or isinstance(suggested, str):
        return suggested
    shown = repr(suggested)
    raise PluginError(
        f"author {name!r} ({rook.authors.owner(name)}) returned "
        f"{shown if len(shown) <= 200 else shown[:200] + '...'} from suggest_name, not a "
        "profile name (a text, or None)"
    )


def _call(name: str, rook: Rook, method: str, *args: Any) -> Any:
    """Call an author's method; a plugin's bug becomes a clear error, never a traceback."""
    author = rook.authors.get(name)
    func = getattr(author, method, None)
    if func is None:
        return None
    try:
        return func(*args)
    except (RookError, CannotAuthor):
        raise
    except BaseException as exc:  # sys.exit() too: never exit 0 unsaid
        if not plugin_failure(exc):
            raise
        raise PluginError(
            f"author {name!r} ({rook.authors.owner(name)}) failed in {method}: "
            f"{exception_text(exc)}"
        ) from None


# -- add -------------------------------------------------------------------------


def write_draft(rook: Rook, name: str, request: AuthorRequest, events: Events) -> Draft:
    """The first draft: the chosen author's, or the author agent's when the chosen one
    cannot write the source."""
    try:
        draft: Draft = _call(name, rook, "write", request)
    except CannotAuthor as exc:
        agent = fallback_author(rook)
        if agent is None or agent[0] == name or not request.options.get("author_command"):
            raise ConfigError(  # named by its source, as every refusal of one is
                f"{request.source.label}: {exc}; describe the target with --notes and name "
                "an author agent with --author CMD (or author: in config.yaml)"
            ) from None
        events.say(f"{name} cannot write it ({exc}); asking the author agent")
        name = agent[0]
        draft = _call(name, rook, "write", request)
    draft = _drafted(name, rook, "write", draft, optional=False)
    draft.author = draft.author or name
    return draft


def _drafted(name: str, rook: Rook, method: str, result: Any, optional: bool = True) -> Any:
    """``result`` when it is a Draft (or ``None``, when ``optional``); anything else (a
    forgotten return, a dict) is the author plugin's bug, named, never a traceback."""
    if isinstance(result, Draft) or (optional and result is None):
        return result
    shown = repr(result)
    raise PluginError(
        f"author {name!r} ({rook.authors.owner(name)}) returned "
        f"{shown if len(shown) <= 200 else shown[:200] + '...'} from {method}, not a Draft "
        f"(rook_core.authoring.Draft{', or None' if optional else ''})"
    )


def _test(
    rook: Rook, request: AuthorRequest, draft: Draft, path: Path, redactor: Any, events: Events
) -> tuple[Observation, dict[str, Any]]:
    write_files(request.agent, draft.files, request.secrets)
    data = profile_data(draft, request.profile_id, request.name, request.secrets, {})
    profile = profile_from_dict(copy.deepcopy(data), rook.transports, str(path))
    profile.path = path
    obs = probe(
        rook,
        request.agent,
        profile,
        redactor,
        request.goal,
        draft.turns,
        request.secrets.values,
        announce=events.waiting,
    )
    return obs, data


def check_draft(rook: Rook, request: AuthorRequest, draft: Draft, path: Path) -> None:
    """The first draft must be runnable as written (a wrapper or script the user named
    exists, a program is installed): otherwise a user's mistake, and nothing is kept."""
    new = [rel for rel in draft.files if not (request.agent.dir / rel).exists()]
    data = profile_data(draft, request.profile_id, request.name, request.secrets, {})
    held = request.secrets.holder(dump_yaml(data))
    fix = f"write {{{{env.{held}}}}} in its place in a URL or header, or let the program read it"
    request.secrets.refuse_known(held, str(path), f"{fix} from its environment")
    write_files(request.agent, draft.files, request.secrets)
    try:
        profile = profile_from_dict(copy.deepcopy(data), rook.transports, str(path))
        profile.path = path
        resolve_entries(rook, profile, request.agent)
    except ConfigError as exc:
        for rel in new:
            (request.agent.dir / rel).unlink(missing_ok=True)
        head, _, problems = str(exc).partition("\n")
        if head == f"{path}: invalid profile:" and _by_author_agent(rook, draft):
            raise AuthoringError(  # the author agent's failure, not the user's mistake
                f"the author agent's answer makes no valid profile (nothing written):\n{problems}"
            ) from None
        if head == f"{path}: invalid profile:":  # the draft's fault, not a file's: none is written
            raise ConfigError(
                f"{request.source.label}: Rook cannot make a valid profile of it "
                f"(nothing written):\n{problems}"
            ) from None
        if str(exc).startswith(f"{path}: "):  # a hook entry's check, such as a missing wrapper
            rest = str(exc)[len(f"{path}: ") :]
            raise ConfigError(f"{request.source.label}: {rest} (nothing written)") from None
        raise


def _by_author_agent(rook: Rook, draft: Draft) -> bool:
    return bool(draft.author) and getattr(rook.authors.get(draft.author), "fallback", False)


def _invalid(rook: Rook, data: dict[str, Any], path: Path) -> str | None:
    """Why the profile ``data`` is not valid (its problems, one a line), or ``None``."""
    try:
        profile_from_dict(copy.deepcopy(data), rook.transports, str(path))
    except ConfigError as exc:
        head, _, problems = str(exc).partition("\n")
        return problems.strip() or head
    return None


def _next_draft(
    rook: Rook, draft: Draft, obs: Observation, request: AuthorRequest, method: str, events: Events
) -> Draft | None:
    """The author's correction; when it has none for a failure, the author agent's."""
    revised: Draft | None = _drafted(
        draft.author, rook, method, _call(draft.author, rook, method, draft, obs, request)
    )
    if revised is None and not obs.ok and request.options.get("author_command"):
        agent = fallback_author(rook)
        if agent is not None and agent[0] != draft.author:
            events.say(f"{draft.author} cannot correct this; asking the author agent")
            revised = _drafted(
                agent[0], rook, method, _call(agent[0], rook, method, draft, obs, request)
            )
            if revised is not None:
                revised.author = agent[0]
    if revised is not None:
        revised.author = revised.author or draft.author
    return revised


def capabilities_of(obs: Observation | None, draft: Draft) -> dict[str, bool]:
    """What the profile claims: what the probe observed, else what the author assumed."""
    if obs is not None and obs.ok:
        return {c: bool(obs.observed.get(c)) for c in CAPABILITIES}
    return dict(draft.capabilities)


def add_profile(
    rook: Rook,
    request: AuthorRequest,
    author: str,
    redactor: Any,
    events: Events,
    path: Path,
    attempts: int = DEFAULT_ATTEMPTS,
    test: bool = True,
) -> Outcome:
    """Write, probe and correct a profile; the profile file is written at the end
    (also when the last test failed, so ``rook profile fix`` can take over)."""
    draft = write_draft(rook, author, request, events)
    check_draft(rook, request, draft, path)
    obs: Observation | None = None
    changes: list[str] = []
    n = 0
    while test and n < attempts:
        n += 1
        obs, data = _test(rook, request, draft, path, redactor, events)
        events.attempt(n, draft, obs)
        if n == attempts:
            break
        try:
            revised = _next_draft(rook, draft, obs, request, "revise", events)
        except RookError as exc:  # the tested draft stays: written below, for fix to take over
            events.say(f"no correction: {exc}")
            break
        if revised is None or (obs.ok and not revised.changes):
            break
        after = profile_data(revised, request.profile_id, request.name, request.secrets, {})
        problems = _invalid(rook, after, path)
        if problems is not None:  # the tested draft stays: written below, for fix to take over
            events.say(f"no correction: the correction makes no valid profile: {problems}")
            break
        if not _accept("correction", data, after, revised, events, changes):
            break
        draft = revised
    if not test:
        write_files(request.agent, draft.files, request.secrets)
    concluded = _call(draft.author, rook, "conclude", draft, obs, request)
    if isinstance(concluded, str):  # one note, never one per character
        concluded = [concluded]
    if concluded is not None and not (
        isinstance(concluded, (list, tuple)) and all(isinstance(n, str) for n in concluded)
    ):
        from .redact import quoted  # redacted, then cut: a secret across the cut is no piece

        raise PluginError(
            f"author {draft.author!r} ({rook.authors.owner(draft.author)}) returned "
            f"{quoted(concluded, 200)} from conclude, not notes (a list of texts, a text, or None)"
        )
    if concluded is not None:  # what the probes showed, in place of what was assumed
        draft.notes = list(concluded)
    data = profile_data(
        draft, request.profile_id, request.name, request.secrets, capabilities_of(obs, draft)
    )
    profile_from_dict(copy.deepcopy(data), rook.transports, str(path))  # valid, or ConfigError
    text = dump_yaml(data)
    held = request.secrets.holder(text)
    if held is not None:  # the variable is named, never its value
        raise AuthoringError(
            f"{path}: the value of {held} (a secret) would reach the profile; nothing written"
        )
    ok = obs.ok if obs is not None else True
    # a variable is the user's to set, an agent not running theirs to start, its
    # infrastructure failing theirs to wait for, a certificate theirs to trust: no fix helps
    if not ok and obs is not None and obs.problem not in NO_REPAIR:
        events.say(
            "the last test failed: the profile is written anyway (exit 1), "
            f"for rook profile fix {request.profile_id} to take over"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    # a profile written anew (--force replaces one) has shown only what its test did
    seen = request.agent.profiles_dir / f"{request.profile_id}.observed.json"
    seen.unlink(missing_ok=True)
    _remember(seen, obs)
    return Outcome(ok, draft, obs, data, path, n, changes, written=True)


def _remember(seen: Path, obs: Observation | None) -> None:
    """What a test observed, added to the profile's ``<id>.observed.json`` as
    ``rook profile test`` adds it (also when only close failed, as in a run)."""
    from .observed import save_observed_file

    if obs is not None and obs.evidence_complete:
        save_observed_file(seen, obs.observed)


# -- fix -------------------------------------------------------------------------


def existing_draft(profile: Profile, agent: Any) -> Draft:
    """The draft an existing profile is: its hooks and the text of its scripts."""
    data = copy.deepcopy(profile.raw)
    files: dict[str, str] = {}
    for entry in profile.hooks.values():
        argv = entry.config.get("argv") if isinstance(entry.config, dict) else None
        if entry.transport != "script" or not argv:
            continue
        script = Path(argv[-1])
        try:
            rel = str(script.relative_to(agent.dir.resolve()))
        except ValueError:
            continue  # a script outside the agent's folder is never rewritten
        files[rel] = script.read_text(encoding="utf-8", errors="replace")
    extra = {k: v for k, v in data.items() if k not in ("name", "id", "hooks", "env", "hook_env")}
    return Draft(
        hooks=data.get("hooks") or {},
        files=files,
        env=list(data.get("env") or []),
        hook_env=dict(data.get("hook_env") or {}),
        turns=2 if profile.capabilities.get("multi_turn") else 1,
        capabilities=dict(profile.capabilities),
        state={"existing": True},
        extra=extra,
    )


def _accept(
    what: str,
    before: dict[str, Any],
    after: dict[str, Any],
    draft: Draft,
    events: Events,
    changes: list[str],
) -> bool:
    """Take a correction or repair unless it loosens a check: say what it
    changes and add that to ``changes``; else say why it is refused."""
    refused = loosened(before, after)
    if refused:
        events.say(f"refused a {what} that would loosen a check: " + "; ".join(refused))
        return False
    for change in draft.changes:
        events.say(f"changed: {change}")
    changes.extend(draft.changes)
    return True


class Snapshot:
    """The files ``rook profile fix`` writes while it tries repairs, as they were
    before: written only where a repair changes them, and restored exactly
    (content, mode, times; a file a repair added is removed) when no repair is kept.
    """

    def __init__(self, agent: Any, originals: dict[str, str]) -> None:
        self.agent = agent
        self.originals = originals
        self.saved: dict[Path, tuple[bytes, os.stat_result] | None] = {}

    def changed(self, files: dict[str, str]) -> dict[str, str]:
        """The files a draft changes (the unchanged ones are never rewritten)."""
        return {rel: text for rel, text in files.items() if self.originals.get(rel) != text}

    def write(self, files: dict[str, str], secrets: Any) -> None:
        changed = self.changed(files)
        for rel in changed:
            target = file_target(self.agent, rel)
            if target not in self.saved:
                try:
                    self.saved[target] = (target.read_bytes(), target.stat())
                except FileNotFoundError:
                    self.saved[target] = None
        self.restore(keep={file_target(self.agent, rel) for rel in changed})
        write_files(self.agent, changed, secrets)

    def restore(self, keep: set[Path] | frozenset[Path] = frozenset()) -> None:
        """Put back every file written so far, except those in ``keep``."""
        for target, before in list(self.saved.items()):
            if target in keep:
                continue
            if before is None:
                target.unlink(missing_ok=True)
            else:
                data, st = before
                tmp = target.with_name(f".{target.name}.{os.getpid()}.restore")
                tmp.write_bytes(data)
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
                os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
                os.replace(tmp, target)
            del self.saved[target]

    def keep_backups(self) -> None:
        """The repair is kept: each file it replaced stays beside it as ``*.bak``,
        exactly as it was."""
        for target, before in self.saved.items():
            if before is not None:
                data, st = before
                backup = target.with_name(target.name + ".bak")
                backup.write_bytes(data)
                os.chmod(backup, stat.S_IMODE(st.st_mode))
        self.saved.clear()


def _repair(
    rook: Rook, draft: Draft, obs: Observation, request: AuthorRequest, events: Events
) -> Draft | None:
    if not obs.ok:
        for name, author in rook.authors.items():
            if getattr(author, "fallback", False) or getattr(author, "repair", None) is None:
                continue
            repaired = _drafted(
                name, rook, "repair", _call(name, rook, "repair", draft, obs, request)
            )
            if repaired is not None:
                repaired.author = name
                return repaired
        if obs.problem == "no_conversation" and draft.capabilities.get("multi_turn"):
            return _stop_claiming_multi_turn(draft)
    agent = fallback_author(rook)
    if agent is None or not request.options.get("author_command"):
        return None
    events.say("asking the author agent" + (f" ({request.what})" if request.what else ""))
    repaired = _drafted(
        agent[0], rook, "repair", _call(agent[0], rook, "repair", draft, obs, request)
    )
    if repaired is not None:
        repaired.author = agent[0]
    return repaired


def _stop_claiming_multi_turn(draft: Draft) -> Draft:
    """``draft`` claiming no ``multi_turn``, tested with one turn: its hooks return
    no conversation handle (an ``http:`` entry's own repair finds one in the
    response first), and what does not work is claimed no more."""
    new = draft.copy(turns=1)
    new.capabilities["multi_turn"] = False
    new.changes.append(
        "capabilities.multi_turn: false (the first turn returned no conversation "
        "handle; scenarios with several turns will not run)"
    )
    return new


def fix_profile(
    rook: Rook,
    request: AuthorRequest,
    profile: Profile,
    redactor: Any,
    events: Events,
    attempts: int = 3,
) -> Outcome:
    """Test the profile, repair what fails, test again; write only a repair that passes.

    A repair that would loosen a check is refused. When no repair passes, every
    file is left as it was.
    """
    assert profile.path is not None
    try:
        resolve_entries(rook, profile, request.agent)  # finds the scripts the hooks run
    except ConfigError:
        pass  # the probe reports it
    draft = existing_draft(profile, request.agent)
    original = profile_data(draft, profile.id, profile.name, request.secrets, draft.capabilities)
    originals = dict(draft.files)
    obs = probe(
        rook, request.agent, profile, redactor, request.goal, draft.turns, announce=events.waiting
    )
    events.attempt(0, draft, obs)
    changes: list[str] = []
    if obs.problem in ("config", *NO_REPAIR):  # no repair helps
        return Outcome(False, draft, obs, original, profile.path)
    snapshot = Snapshot(request.agent, originals)
    n = 0
    try:
        while n < attempts and (not obs.ok or request.what):
            n += 1
            repaired = _repair(rook, draft, obs, request, events)
            if repaired is None:
                break
            data = profile_data(
                repaired, profile.id, profile.name, request.secrets, repaired.capabilities
            )
            problems = _invalid(rook, data, profile.path)
            if problems is not None:
                events.say(f"refused a repair that makes no valid profile: {problems}")
                break
            if not _accept("repair", original, data, repaired, events, changes):
                break
            draft = repaired
            obs, _ = _test_existing(
                rook, request, draft, data, profile.path, redactor, snapshot, events
            )
            events.attempt(n, draft, obs)
            if obs.ok:
                break
    except BaseException:
        snapshot.restore()
        raise
    if obs.ok:  # what rook profile test flags: a claim the test did not observe
        draft = claim_only_observed(draft, obs, events, changes)
    seen = request.agent.profiles_dir / f"{profile.id}.observed.json"
    if not changes or not obs.ok:
        snapshot.restore()  # leave everything as it was: files, modes, no file added
        if not changes:  # the profile as it is was tested
            _remember(seen, obs)
        return Outcome(obs.ok, draft, obs, original, profile.path, n, changes)
    _remember(seen, obs)  # the repaired profile's test
    snapshot.keep_backups()  # the user's version of each file the repair changed
    draft.files = snapshot.changed(draft.files)  # what was written (unchanged files were not)
    data = profile_data(draft, profile.id, profile.name, request.secrets, draft.capabilities)
    if data != original:
        backup = profile.path.with_name(profile.path.name + ".bak")
        mode = stat.S_IMODE(profile.path.stat().st_mode)
        atomic_write(backup, profile.path.read_text(encoding="utf-8"))
        atomic_write(profile.path, dump_yaml(data))
        for written in (backup, profile.path):  # not more open than the user made it
            os.chmod(written, mode)
    return Outcome(True, draft, obs, data, profile.path, n, changes, written=True)


EVIDENCE = {
    "multi_turn": "conversation handle",
    "calls": "tool call evidence",
    "usage": "token counts",
}


def claim_only_observed(
    draft: Draft, obs: Observation, events: Events, changes: list[str]
) -> Draft:
    """``draft`` without its optimistic claims: a capability declared but not observed
    by the passing test ``obs`` (what ``rook profile test`` flags OPTIMISTIC: unsafe,
    a ``not_called`` criterion would trust call evidence that never comes) becomes
    ``false``. An observation not declared is only said: claiming it is ``rook profile
    test --update``'s (a repair never claims a capability)."""
    from .profile_probe import compare_capabilities

    rows = compare_capabilities(draft.capabilities, obs.observed)
    for row in rows:
        if row["verdict"] == "unclaimed":
            events.say(
                f"note: capabilities.{row['capability']} is observed but not declared "
                "(rook profile test --update writes it)"
            )
    optimistic = [row["capability"] for row in rows if row["verdict"] == "optimistic"]
    if not optimistic:
        return draft
    new = draft.copy()
    for cap in optimistic:
        new.capabilities[cap] = False
        new.changes.append(
            f"capabilities.{cap}: false (declared, but the test observed no "
            f"{EVIDENCE.get(cap, 'evidence of it')}; an optimistic claim is unsafe)"
        )
    for change in new.changes:
        events.say(f"changed: {change}")
    changes.extend(new.changes)
    return new


def _test_existing(
    rook: Rook,
    request: AuthorRequest,
    draft: Draft,
    data: dict[str, Any],
    path: Path,
    redactor: Any,
    snapshot: Snapshot,
    events: Events,
) -> tuple[Observation, dict[str, Any]]:
    snapshot.write(draft.files, request.secrets)
    profile = profile_from_dict(copy.deepcopy(data), rook.transports, str(path))
    profile.path = path
    obs = probe(
        rook, request.agent, profile, redactor, request.goal, draft.turns, announce=events.waiting
    )
    return obs, data


__all__ = [
    "DEFAULT_ATTEMPTS",
    "Events",
    "Outcome",
    "add_profile",
    "choose_author",
    "existing_draft",
    "fallback_author",
    "fetch",
    "fix_profile",
    "suggest_name",
    "write_draft",
]
