"""An agent's definitions — scenario and profile files — validated once and
kept in Rook's cache (:mod:`rook_core.cachedir`) until they change.

Validating a file means parsing its YAML and checking it with marshmallow
and the plugins' criterion and transport schemas; importing those two
libraries alone costs more than running a hundred trivial hooks. A command
whose files have not changed since they were last validated gets the
validated objects back from the cache and imports neither.

A cached definition is used only when both still hold:

* its file is the same: size, modification and change times (ns) and inode
  (a file rewritten, touched, replaced or renamed over is validated again);
* what validated it is the same: Rook's version, the Python version, the
  loaded plugins (name, distribution, version, module) and the stat (as
  above) of every ``.py`` file of Rook's core and of the plugins' packages — so an edited plugin, a new criterion type or a removed
  transport revalidates everything.

A file that fails validation is never cached: it is validated (and its error
shown) on every command until it is fixed.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import struct
import sys
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, cachedir
from .errors import (
    ProfileError,
    ProfileNotFound,
    ScenarioError,
    counted,
    did_you_mean,
    missing,
    shown,
    utf8,
)
from .lazyre import later
from .textfile import readable_text, yaml_text

if TYPE_CHECKING:
    from .models import Profile, Scenario
    from .plugins import Rook
    from .registry import Registry

YAML_SUFFIXES = (".yaml", ".yml")
MAX_SOURCE_FILES = 2000  # a plugin package larger than this is not fingerprinted: no cache
# A file changed this recently may change again within the file system's
# timestamp granularity (a clock tick) without its stat changing: not cached.
RACY_NS = 50_000_000
_STAT = struct.Struct("<qqqQ")


def stat_key(st: os.stat_result) -> bytes:
    """Size, modification and change times (ns) and inode, packed (32 bytes)."""
    return _STAT.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def settled(st: os.stat_result) -> bool:
    """Whether a later change to the file is sure to change its stat."""
    return max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - RACY_NS


def _py_files(root: str, out: list[tuple[str, bytes]]) -> None:
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if len(out) > MAX_SOURCE_FILES:
            return
        if entry.name.endswith(".py"):
            try:
                st = entry.stat()
            except OSError:
                continue
            out.append((entry.path, stat_key(st)))
        elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
            _py_files(entry.path, out)


def _package_roots(modules: Iterable[str]) -> list[str]:
    """Directories (or single files) of the top-level packages of ``modules``."""
    roots: list[str] = []
    for name in sorted({m.split(".")[0] for m in modules if m}):
        module = sys.modules.get(name)
        paths = list(getattr(module, "__path__", None) or [])
        if not paths and getattr(module, "__file__", None):
            paths = [module.__file__]  # type: ignore[union-attr]
        roots += [p for p in paths if p not in roots]
    return roots


def fingerprint(rook: Rook) -> tuple[Any, ...]:
    """What validated a definition: Rook, Python, the plugins and their code."""
    plugins = tuple(sorted((i.name, i.distribution, i.version, i.module) for i in rook.infos))
    failures = tuple(sorted(f.name for f in rook.failures))
    files: list[tuple[str, bytes]] = []
    for root in _package_roots([__name__, *(i.module for i in rook.infos)]):
        if root.endswith(".py"):
            try:
                st = os.stat(root)
            except OSError:
                continue
            files.append((root, stat_key(st)))
        else:
            _py_files(root, files)
    if len(files) > MAX_SOURCE_FILES:
        return ("uncacheable",)
    return (__version__, sys.version, plugins, failures, tuple(sorted(files)))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:24]


FileEntry = tuple[str, str, bytes, bool]
"""A definition file: its path relative to its directory, its path, its
:func:`stat_key` and whether it has :func:`settled` (a compact form: a run
lists every scenario file)."""
Built = tuple[bool, list[Any]]
"""A scenario file validated: whether it holds a list, and its scenarios."""


class DefinitionCache:
    """The cache of validated definitions, for one command (see the module).

    Scenario files are stored per directory as one entry per file, in sorted
    order, and read back one entry at a time beside the directory's listing,
    so nothing but the definitions themselves is held in memory.
    """

    def __init__(self, rook: Rook) -> None:
        self.key = fingerprint(rook)
        self.enabled = self.key != ("uncacheable",)
        # an install's own entries: Rook, Python, the plugins and where their
        # files are, not the files' stats (an edit rewrites the same entries)
        files = tuple(f for f, _ in self.key[-1]) if self.enabled else ()
        self.install = _digest(repr((*self.key[:-1], files)))[:8]

    def profile(self, path: Path, st: os.stat_result, build: Callable[[], Profile]) -> Profile:
        name, key = f"profile-{self.install}-{_digest(str(path))}", (self.key, stat_key(st))
        hit = cachedir.load(name, key) if self.enabled else None
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        profile = build()
        if self.enabled and settled(st):
            cachedir.save(name, key, profile)
        return profile

    def scenario_files(
        self, directory: Path, files: list[FileEntry], build: Callable[[str], Built]
    ) -> Iterator[tuple[str, Built]]:
        """Each file's validated scenarios, in order: from the cache where the
        file is unchanged, else ``build(path)`` (which raises its error)."""
        name = f"scenarios-{self.install}-{_digest(str(directory))}"
        cached = cachedir.load_items(name, self.key) if self.enabled else _no_items()
        kept: list[tuple[str, bytes, bool, list[Any]]] = []
        changed = False
        ahead = next(cached, None)
        try:
            for rel, path, key, steady in files:
                order = _order(rel)
                while ahead is not None and _order(ahead[0]) < order:  # a file since deleted
                    ahead, changed = next(cached, None), True
                if ahead is not None and ahead[0] == rel and ahead[1] == key:
                    listed, items = ahead[2], ahead[3]
                    ahead = next(cached, None)
                else:
                    listed, items = build(path)
                    changed = True
                    if not steady:
                        yield path, (listed, items)
                        continue
                kept.append((rel, key, listed, items))
                yield path, (listed, items)
        finally:
            cached.close()
        if self.enabled and (changed or ahead is not None):
            cachedir.save_items(name, self.key, kept)


def _no_items() -> Generator[Any, None, None]:
    yield from ()


# -- scenarios ------------------------------------------------------------------


def _order(rel: str) -> tuple[str, ...]:
    """The order of files: by path parts, as sorted ``Path`` objects compare."""
    return tuple(rel.split(os.sep))


def _yaml_files(directory: Path) -> list[FileEntry]:
    """Every ``*.yaml``/``*.yml`` file under ``directory`` (not following
    symlinked directories), in path order. Hidden files and folders (a name
    starting with ``.``: ``.git``, an editor's ``.#name.yaml`` lock link) are
    not scenarios."""
    found: list[FileEntry] = []
    top = len(str(directory)) + 1

    def walk(path: str) -> None:
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError as exc:
            raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path)
            elif entry.name.endswith(YAML_SUFFIXES):
                try:
                    st = entry.stat()
                except FileNotFoundError:
                    raise ScenarioError(f"{entry.path}: {missing(entry.path)}") from None
                except OSError as exc:
                    raise ScenarioError(f"{entry.path}: cannot read: {exc.strerror}") from None
                if not stat.S_ISREG(st.st_mode):  # reading a FIFO would wait for ever
                    raise ScenarioError(
                        f"{entry.path}: not a regular file (a FIFO, a socket or a device); "
                        "a scenario file holds YAML"
                    )
                found.append((entry.path[top:], entry.path, stat_key(st), settled(st)))

    walk(str(directory))
    found.sort(key=lambda f: _order(f[0]))
    return found


def no_profiles_folder(profiles_dir: Path) -> str:
    """Why ``profiles_dir`` holds no profile: missing, or something else in its place."""
    from .workspace import in_the_way

    said = in_the_way(profiles_dir, "profiles")
    return said or f"{profiles_dir}: no profiles directory (create a profile first)"


def load_scenarios(
    directory: Path, criteria: Registry, cache: DefinitionCache | None = None
) -> list[Scenario]:
    """Every ``*.yaml``/``*.yml`` file under ``directory`` (hidden ones aside);
    one scenario or a list per file."""
    if not directory.is_dir():
        from .workspace import in_the_way

        blocked = in_the_way(directory, "scenarios")  # a file there: "create it" could not be done
        said = (
            f"{blocked}, then create the folder and"
            if blocked
            else f"{directory}: no scenarios directory: create it and"
        )
        raise ScenarioError(
            f"{said} write a scenario there (a .yaml file with id, goal and criteria; "
            "see docs/scenarios.md in Rook's source)"
        )

    def build(file: str) -> Built:
        from .scenario import scenarios_from_file

        return scenarios_from_file(Path(file), criteria)

    files = _yaml_files(directory)
    validated = (
        ((path, build(path)) for _, path, _, _ in files)
        if cache is None
        else cache.scenario_files(directory, files, build)
    )
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    used_twice: list[str] = []  # every id used twice, not one per run
    try:
        for file, (listed, items) in validated:
            for n, scenario in enumerate(items):
                source = f"{file}[{n}]" if listed else file
                if scenario.id in seen:
                    used_twice.append(
                        f"{source}: scenario id {scenario.id!r} is already used by "
                        f"{seen[scenario.id]}"
                    )
                    continue
                seen[scenario.id] = file
                scenarios.append(scenario)
    except ScenarioError as exc:  # name every file at fault, not one per run
        raise ScenarioError(_every_problem([*used_twice, str(exc)], files, build)) from None
    if used_twice:
        raise ScenarioError(_every_problem(used_twice, [], build))
    return scenarios


MAX_SHOWN_FILES = 10


def _every_problem(first: list[str], files: list[FileEntry], build: Callable[[str], Built]) -> str:
    """``first`` (the problems found so far), then those of the other files that do
    not validate (validated again, without the cache: this is the error path)."""
    problems = first[:MAX_SHOWN_FILES]
    more = len(first) - len(problems)
    for _, path, _, _ in files:
        try:
            build(path)
        except ScenarioError as exc:
            if str(exc) in problems:
                continue
            if len(problems) < MAX_SHOWN_FILES:
                problems.append(str(exc))
            else:
                more += 1
    if more:
        problems.append(f"... and {counted(more, 'more file')} with a problem")
    return "\n".join(problems)


IDS_SHOWN = 30
"""Scenario ids a message about ``--only`` lists, the first in order."""


def select(
    scenarios: Iterable[Scenario],
    only: list[str] | None = None,
    tags: list[str] | None = None,
    classes: list[str] | None = None,
    categories: list[str] | None = None,
    include_excluded: bool = False,
) -> list[Scenario]:
    """Selectors narrow one another; an ``--only`` id that does not exist is an error.

    ``excluded: true`` scenarios are left out unless named with ``--only``
    (or ``include_excluded``, when a run that already planned them resumes).
    """
    pool = list(scenarios)
    if only:
        ids = {s.id for s in pool}
        missing = [i for i in only if i not in ids]
        if missing:
            listed = sorted(ids)  # the first ones: 300 ids are no hint

            def named(wrong: str) -> str:  # the id a typo or a capital looks like
                close = did_you_mean(wrong, listed)
                return f"{wrong} (did you mean {close}?)" if close else wrong

            shown = ", ".join(listed[:IDS_SHOWN]) or "none"
            more = f" and {len(listed) - IDS_SHOWN} more" if len(listed) > IDS_SHOWN else ""
            raise ScenarioError(
                f"--only: no scenario with id {', '.join(map(named, missing))} "
                f"(scenarios: {shown}{more})"
            )
        pool = [s for s in pool if s.id in set(only)]
    elif not include_excluded:
        pool = [s for s in pool if not s.extra.get("excluded")]
    if tags:
        wanted = set(tags)
        pool = [s for s in pool if wanted & set(s.tags)]
    if classes:
        pool = [s for s in pool if s.extra.get("class") in set(classes)]
    if categories:
        pool = [s for s in pool if s.extra.get("category") in set(categories)]
    return pool


# -- profiles -------------------------------------------------------------------


def load_profile(path: Path, transports: Registry, cache: DefinitionCache | None = None) -> Profile:
    if not utf8(str(path)):  # a run records the profile's file: JSON cannot hold it
        raise ProfileError(f"{shown(str(path))}: its name is not UTF-8 text; rename the file")

    def build() -> Profile:
        from .profile import load_profile as validate

        return validate(path, transports)

    if cache is None:
        return build()
    try:
        st = os.stat(path)
    except OSError:
        return build()  # raises the readable error
    return cache.profile(path, st, build)


ACTIVE_MAX = 4096
"""The most bytes ``profiles/active`` may hold: an id (at most 128 characters), or
a profile's file name or name, with blanks around it."""


def read_active(profiles_dir: Path) -> str | None:
    """The id ``profiles/active`` names (stripped, of a byte order mark too), or None
    without the file; a file Rook cannot read is a :class:`ProfileError` naming it."""
    active = profiles_dir / "active"
    try:
        if not active.is_file():
            if active.exists() or active.is_symlink():
                raise ProfileError(
                    f"{active}: not a file; write the id of the active profile in it"
                )
            return None
        with active.open("rb") as f:  # read no further than an id could reach
            data = f.read(ACTIVE_MAX + 1)
        if len(data) > ACTIVE_MAX:  # shown once in full, it flooded the terminal
            raise ProfileError(
                f"{active}: more than {ACTIVE_MAX:,} bytes, so no profile id; write the id "
                "of the active profile in it (rook profile use NAME)"
            )
        # a byte order mark first (PowerShell's Set-Content -Encoding utf8) is no part of the id
        return data.decode("utf-8").removeprefix("\ufeff").strip()
    except OSError as exc:
        raise ProfileError(f"{active}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ProfileError(
            f"{active}: not UTF-8 text; write the id of the active profile in it"
        ) from None


def unread_profiles(profiles_dir: Path) -> str:
    """``NAME.yml is not read: a profile file ends in .yaml`` for the files of
    ``profiles_dir`` named as YAML but not ``*.yaml`` (``local.yml``,
    ``Local.YAML``), which no command reads as a profile; else ``""``."""
    try:
        names = sorted(
            p.name
            for p in profiles_dir.iterdir()
            if p.suffix.lower() in (".yaml", ".yml") and p.suffix != ".yaml" and p.is_file()
        )
    except OSError:
        return ""
    if not names:
        return ""
    verb = "is" if len(names) == 1 else "are"
    return f"{', '.join(names)} {verb} not read: a profile file ends in .yaml"


def find_profile(
    profiles_dir: Path,
    name: str | None,
    transports: Registry,
    cache: DefinitionCache | None = None,
    *,
    choose: str = "--profile NAME",
    where: str = "",
) -> Profile:
    """Pick a profile by id, file name or name (:func:`locate_profile`); default:
    ``profiles/active``. ``choose`` is how the calling command is given a NAME,
    for the message when several profiles and no active one leave it unsaid;
    ``where`` the ``-w``/``--project``/``--agent`` flags that found the agent
    (:func:`rook_core.workspace.found_by`), so that the ``rook profile use NAME`` it
    suggests works as printed from where the command was run."""
    if name is not None and not name.strip():  # `rook profile show "$P"`, P unset
        raise ProfileError(f"NAME {name!r}: names no profile; give its id, file name or name")
    if not profiles_dir.is_dir():
        raise ProfileNotFound(no_profiles_folder(profiles_dir))
    candidates = sorted(p for p in profiles_dir.glob("*.yaml"))
    from_active = name is None
    if name is None:
        active = profiles_dir / "active"
        name = read_active(profiles_dir)
        if name is not None:
            if not name:
                raise ProfileError(f"{active}: empty; write the id of the active profile in it")
        elif len(candidates) == 1:
            return load_profile(candidates[0], transports, cache)
        elif not candidates:
            unread = unread_profiles(profiles_dir)
            raise ProfileError(
                f"{profiles_dir}: no profiles (*.yaml)"
                + (f"; {unread}; rename it" if unread else "")
                + "; write one with rook profile add (docs/profiles.md in Rook's source), or by hand as "
                "profiles/NAME.yaml"
            )
        else:
            stems = ", ".join(p.stem for p in candidates)
            raise ProfileError(
                f"{profiles_dir}: several profiles ({stems}) and no 'active' file; "
                f"choose one with {choose}, or make one active: rook profile use NAME{where}"
            )
    direct = profiles_dir / f"{name}.yaml"
    if fits(direct) and direct.is_file():  # the common case: NAME.yaml holds the id NAME
        profile = load_profile(direct, transports, cache)
        if profile.id == name:
            return _sole_holder(profile, direct, candidates)
    try:
        path = locate_profile(profiles_dir, name)
    except ProfileNotFound:
        if not from_active:
            raise
        known = known_profiles(candidates)
        unread = unread_profiles(profiles_dir)
        raise ProfileError(  # removed or renamed on disk since `rook profile use`
            f"{profiles_dir / 'active'}: names {name!r}, which is no profile here "
            f"(profiles: {known}){f'; {unread}; rename it' if unread else ''}; choose one "
            f"with rook profile use NAME{where}"
        ) from None
    return _sole_holder(load_profile(path, transports, cache), path, candidates)


def _sole_holder(profile: Profile, path: Path, candidates: list[Path]) -> Profile:
    """``profile`` (read from ``path``), unless another of the ``candidates``
    holds its id too: a run pins the id, and resuming it would load whichever
    file the id finds first, another profile's hooks. Only a file whose text
    holds the id is parsed (and only then is PyYAML imported: a run with its
    definitions cached imports none)."""
    twins = []
    for other in candidates:
        if other == path or not other.is_file():  # a FIFO would never answer a read
            continue
        try:
            if profile.id not in readable_text(other):
                continue
            if other.samefile(path):  # a link to the same file: the same hooks
                continue
            from .yamlio import load_yaml

            data = load_yaml(other, ProfileError)
        except (OSError, ProfileError):
            continue  # a broken file is no match (rook profile list flags it)
        if isinstance(data, dict) and data.get("id") == profile.id:
            twins.append(other)
    if twins:
        names = ", ".join(sorted(p.name for p in [path, *twins]))
        raise ProfileError(
            f"{path.parent}: several files hold the id {profile.id!r} ({names}); an id names "
            "one profile (runs pin it): give each file its own id"
        )
    return profile


def _holds_id(text: str, name: str) -> bool:
    """Whether YAML text Rook cannot parse seems to give the id ``name`` (``id: NAME``)."""
    return (
        re.search(rf"\bid[\"']?\s*:\s*[\"']?{re.escape(name)}[\"']?(?=[\s,}}#]|$)", text)
        is not None
    )


def _text(path: Path) -> str:
    try:
        return readable_text(path)
    except OSError:
        return ""


def fits(path: Path) -> bool:
    """Whether ``path``'s last part can be a file name (at most 255 bytes): a longer
    one (``--profile NAME`` with a profile's long name, a run reference) names no
    file, and asking the system about it raises ``File name too long``."""
    return len(os.fsencode(path.name)) <= 255


def known_profiles(candidates: list[Path]) -> str:
    """The profiles ``candidates`` hold as ``rook profile use`` takes them, for a
    message: each one's id (what ``rook profile list`` shows), its file name after
    it when that differs (``other (t.yaml)``); a file whose YAML gives no id, by its
    file name; ``none`` for no file."""
    return ", ".join(shown for _, shown in _profile_ids(candidates)) or "none"


def _profile_ids(candidates: list[Path]) -> list[tuple[str, str]]:
    """Each of ``candidates``' id (its file name's stem when its YAML gives none)
    and the form :func:`known_profiles` shows it in."""
    from .yamlio import load_yaml

    ids = []
    for path in candidates:
        try:
            data = load_yaml(path, ProfileError) if path.is_file() else None
        except ProfileError:
            data = None
        pid = data.get("id") if isinstance(data, dict) else None
        if not isinstance(pid, str) or not pid:
            ids.append((path.stem, path.stem))
        else:
            ids.append((pid, pid if pid == path.stem else f"{pid} ({path.name})"))
    return ids


def locate_profile(profiles_dir: Path, name: str) -> Path:
    """The file of the profile ``name`` picks, as ``rook run --profile NAME``,
    ``rook profile use NAME`` and ``rook runs --profile NAME`` take it: an id
    first (what ``profiles/active`` and runs hold: a file renamed on disk keeps
    its id, and another file may now have that id as its name), then a file
    name (``NAME`` or ``NAME.yaml``), then a name, which must name one profile only. Only the files' YAML
    is read (:func:`find_profile` validates the one picked). A name that picks
    no profile raises :class:`ProfileNotFound`, listing the profiles."""
    from .yamlio import load_yaml

    if not profiles_dir.is_dir():
        raise ProfileNotFound(no_profiles_folder(profiles_dir))
    candidates = sorted(p for p in profiles_dir.glob("*.yaml"))
    direct = profiles_dir / f"{name}.yaml"
    named = fits(direct) and direct.exists() and not direct.is_dir()  # a FIFO: load_yaml says
    if named:
        data = load_yaml(direct, ProfileError)
        if isinstance(data, dict) and data.get("id") == name:
            return direct
    by_id, by_name = [], []
    suspect: ProfileError | None = None  # a broken file whose text holds the name
    for path in candidates:
        try:
            data = load_yaml(path, ProfileError)
        except ProfileError as exc:
            if suspect is None and path.is_file() and _holds_id(_text(path), name):
                suspect = exc  # a file renamed on disk, then broken: named, not "gone"
            continue  # a broken file is no match (rook profile list flags it)
        if isinstance(data, dict):
            if data.get("id") == name:
                by_id.append(path)
            elif data.get("name") == name:
                by_name.append(path)
    if len(by_id) > 1:
        raise ProfileError(
            f"{profiles_dir}: several files hold the id {name!r} "
            f"({', '.join(p.name for p in by_id)}); an id names one profile: "
            "give each file its own id"
        )
    if by_id:
        return by_id[0]
    if named:
        return direct
    given = profiles_dir / name  # the file name with its .yaml, as `ls profiles` shows it
    if name.endswith(".yaml") and given in candidates and not given.is_dir():
        return given
    if len(by_name) > 1:
        ids = [f"{load_yaml(path, ProfileError).get('id')} ({path.name})" for path in by_name]
        raise ProfileError(
            f"{profiles_dir}: several profiles are named {name!r}: {', '.join(ids)}; "
            "choose one by its id"
        )
    if by_name:
        return by_name[0]
    if suspect is not None:
        raise suspect
    if fits(direct) and direct.is_dir():  # listed as a profile, NAME would be and not be there
        raise ProfileError(
            f"{direct}: a folder, not a profile file; a profile is a YAML file: move the "
            "folder away, or write the profile there as a file"
        )
    if fits(direct) and direct.is_symlink():  # to no file, or to itself: the same
        load_yaml(direct, ProfileError)  # raises what is wrong with it
    known_ids = _profile_ids(candidates)
    known = ", ".join(shown for _, shown in known_ids) or "none"
    close = did_you_mean(name, [pid for pid, _ in known_ids])  # --profile exmple: example
    unread = unread_profiles(profiles_dir)
    raise ProfileNotFound(
        f"profile {name!r} not found in {profiles_dir}"
        + (f"; did you mean {close}?" if close else "")
        + f" (profiles: {known})"
        + (f"; {unread}; rename it" if unread else "")
    )


def agent_secret_names(profiles_dir: Path) -> list[str]:
    """The ``env`` variables of every profile of an agent (``profiles/*.yaml``,
    read as YAML only; a file Rook cannot read adds none): what a command
    redacts before it has the profile it uses, as when a run or a profile is
    not found and its folder, which may hold such a value, is named. Those of
    every other agent of its workspace follow (:func:`workspace_secret_names`):
    its folders are in the workspace's, whose path may hold any of them (also
    when it has no profile yet, or none of its profiles declares ``env``)."""
    return _secret_names(_agent_and_workspace_profiles(profiles_dir))


def other_secret_names(profiles_dir: Path, own: Path | None) -> list[str]:
    """:func:`agent_secret_names` but for the profile file ``own``, each file
    scanned as text for its ``variable: NAME`` entries rather than parsed: what
    ``rook run`` adds to its redactor beside its own profile's variables (the
    workspace's path may hold any of their values), without importing YAML on a
    run that has every definition cached. A name the scan finds that is not one
    (a comment's) only redacts that variable's value too."""
    paths = _agent_and_workspace_profiles(profiles_dir)
    return list(dict.fromkeys(n for p in paths if p != own for n in _declared_in_text(p)))


def _agent_and_workspace_profiles(profiles_dir: Path) -> list[Path]:
    """The profile files (``*.yaml``) of ``profiles_dir``'s agent, sorted, then
    those of every other agent of its workspace."""
    paths = _profile_files(profiles_dir)
    agents = profiles_dir.parent.parent  # <workspace>/.testmuai/rook/projects/P/agents
    if agents.name == "agents" and agents.parent.parent.name == "projects":
        for project in _subfolders(agents.parent.parent):
            for agent in _subfolders(project / "agents"):
                if agent / "profiles" != profiles_dir:
                    paths += _profile_files(agent / "profiles")
    return paths


def _subfolders(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as it:
            return sorted(Path(e.path) for e in it if e.is_dir())
    except OSError:
        return []


def _profile_files(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as it:
            return sorted(Path(e.path) for e in it if e.name.endswith(".yaml"))
    except OSError:
        return []


def workspace_secret_names(workspace: Path) -> list[str]:
    """The ``env`` variables of every profile of every agent of ``workspace``:
    what a command redacts before it knows its agent (``rook init``, a value
    the command line parser refuses)."""
    from .workspace import ROOT

    return _secret_names(sorted((workspace / ROOT / "projects").glob("*/agents/*/profiles/*.yaml")))


def profile_secret_names(path: Path) -> list[str]:
    """The ``env`` variables the profile file ``path`` declares, also when it is
    not valid YAML (as a run's copy, ``profile.yaml``, redacted as text, may be
    left: a value that is a word of the file, ``[redacted:SEC]_seconds: 2``)."""
    return _secret_names([path]) if path.is_file() else []


def _secret_names(paths: list[Path]) -> list[str]:
    """The ``env`` variables the profile files ``paths`` declare."""
    from .yamlio import load_yaml

    names: list[str] = []
    for path in paths:
        try:
            # none read from a broken env list (its key misspelt, pasted over):
            # the file's text may still name them, as that of a file not YAML
            names += env_names(load_yaml(path, ProfileError)) or _declared_in_text(path)
        except ProfileError:  # a broken file: rook profile list and rook doctor name it
            names += _declared_in_text(path)
    return list(dict.fromkeys(names))


_VARIABLE = later(r"\bvariable[\"']?\s*:\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)")


def _declared_in_text(path: Path) -> list[str]:
    """The ``variable: NAME`` entries a profile file that is not valid YAML
    seems to declare (a brace left open elsewhere), or whose ``env`` list
    cannot be read (its key misspelt): the messages that name the file redact
    their values all the same."""
    if not path.is_file():  # a FIFO: reading it would wait for ever
        return []
    try:
        return _VARIABLE.findall(readable_text(path))
    except OSError:
        return []


def env_names(data: Any) -> list[str]:
    """The variables a profile's ``env`` list names, from its YAML as read."""
    env = data.get("env") if isinstance(data, dict) else None
    if not isinstance(env, list):  # none, or a copy edited into another shape
        return []
    return [
        e["variable"] for e in env if isinstance(e, dict) and isinstance(e.get("variable"), str)
    ]


def profile_text(profile: Profile) -> str:
    """The profile as used, for the run record: its file's text (comments and
    all), else its mapping written as YAML."""
    if profile.path is not None:
        try:
            return yaml_text(Path(profile.path))
        except (OSError, ValueError):
            pass
    from .yamlio import dump_yaml

    return dump_yaml(profile.raw)


def profile_copy(profile: Profile) -> str:
    """The profile as a run keeps it (``profile.yaml``): :func:`profile_text`,
    unless the file holds a credential written literally (what ``rook profile
    show`` hides, ``rook doctor`` names): then its mapping with those hidden as
    ``show`` hides them (:attr:`Profile.shown`), written as YAML (the file's
    comments left out, as one could hold the credential too). A run's copy is
    compared with this, never with the file itself."""
    if profile.shown is None:
        return profile_text(profile)
    from .yamlio import dump_yaml

    return f"{HIDDEN_NOTE}{dump_yaml(profile.shown)}"


HIDDEN_NOTE = (
    "# The profile as used, with the credentials written literally in its file hidden\n"
    "# ([hidden]; rook doctor names them: move them to env). Its comments are left out.\n"
)
"""The first lines of a run's ``profile.yaml`` that hides credentials."""


# -- small YAML files (config.yaml) ------------------------------------------


def read_yaml(path: Path, build: Callable[[], Any], schema: Any = None) -> Any:
    """``build()`` (which reads ``path``), cached while ``path`` is unchanged;
    for files whose meaning depends on nothing else (``config.yaml``).
    ``schema`` (any picklable value) is part of the cache key: change it when
    ``build`` starts to validate differently, so no older answer is reused."""
    try:
        st = os.stat(path)
    except OSError:
        return build()
    # named by what reads it too: another install's Rook keeps its own entry
    digest = hashlib.sha256(f"{__version__}\0{schema!r}\0{path}".encode("utf-8", "surrogateescape"))
    name = f"yaml-{digest.hexdigest()[:24]}"
    key = (__version__, schema, stat_key(st))
    hit = cachedir.load(name, key)
    if hit is not None:
        return hit[0]
    value = build()
    if settled(st):
        cachedir.save(name, key, (value,))
    return value
