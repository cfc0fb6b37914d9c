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
  loaded plugins (name, distribution, version, module) and the size and
  modification time of every ``.py`` file of Rook's core and of the plugins'
  packages — so an edited plugin, a new criterion type or a removed
  transport revalidates everything.

A file that fails validation is never cached: it is validated (and its error
shown) on every command until it is fixed.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, cachedir
from .errors import ProfileError, ScenarioError

if TYPE_CHECKING:
    from .models import Profile, Scenario
    from .plugins import Registry, Rook

YAML_SUFFIXES = (".yaml", ".yml")
MAX_SOURCE_FILES = 2000  # a plugin package larger than this is not fingerprinted: no cache
# A file changed this recently may change again within the file system's
# timestamp granularity (a clock tick) without its stat changing: not cached.
RACY_NS = 50_000_000


def stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def settled(st: os.stat_result) -> bool:
    """Whether a later change to the file is sure to change its stat."""
    return max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - RACY_NS


def _py_files(root: str, out: list[tuple[str, int, int]]) -> None:
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
            out.append((entry.path, st.st_mtime_ns, st.st_size))
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
    files: list[tuple[str, int, int]] = []
    for root in _package_roots([__name__, *(i.module for i in rook.infos)]):
        if root.endswith(".py"):
            try:
                st = os.stat(root)
            except OSError:
                continue
            files.append((root, st.st_mtime_ns, st.st_size))
        else:
            _py_files(root, files)
    if len(files) > MAX_SOURCE_FILES:
        return ("uncacheable",)
    return (__version__, sys.version, plugins, failures, tuple(sorted(files)))


class DefinitionCache:
    """The cached definitions of one agent directory, for one command.

    ``get`` returns a file's validated value, from the cache when the file and
    the fingerprint are unchanged, else by calling ``build`` (which raises the
    file's validation error). ``save`` writes back what this command used.
    """

    def __init__(self, rook: Rook, anchor: Path) -> None:
        digest = hashlib.sha256(str(anchor).encode("utf-8", "surrogateescape")).hexdigest()
        self.name = f"definitions-{digest[:24]}"
        self.key = fingerprint(rook)
        enabled = self.key != ("uncacheable",)
        stored = cachedir.load(self.name, self.key) if enabled else None
        self.entries: dict[tuple[str, str], tuple[Any, Any]] = (
            stored if isinstance(stored, dict) else {}
        )
        self.enabled = enabled
        self.used: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.changed = False

    def get(self, kind: str, path: str, st: os.stat_result, build: Callable[[], Any]) -> Any:
        slot = (kind, path)
        key = stat_key(st)
        hit = self.entries.get(slot)
        if hit is not None and hit[0] == key:
            self.used[slot] = hit
            return hit[1]
        value = build()
        if settled(st):
            self.used[slot] = (key, value)
            self.changed = True
        return value

    def save(self, replace_kind: str | None = None) -> None:
        """Write the cache if anything was validated anew; entries of
        ``replace_kind`` not used by this command (deleted files) are dropped."""
        if not self.enabled:
            return
        kept = {s: v for s, v in self.entries.items() if s[0] != replace_kind}
        merged = {**kept, **self.used}
        if self.changed or merged.keys() != self.entries.keys():
            cachedir.save(self.name, self.key, merged)
            self.entries = merged
            self.changed = False


# -- scenarios ------------------------------------------------------------------


def _yaml_files(directory: Path) -> list[tuple[tuple[str, ...], str, os.stat_result]]:
    """Every ``*.yaml``/``*.yml`` file under ``directory`` (not following
    symlinked directories), with its relative parts (the sort order) and stat."""
    found: list[tuple[tuple[str, ...], str, os.stat_result]] = []

    def walk(path: str, parts: tuple[str, ...]) -> None:
        with os.scandir(path) as it:
            entries = list(it)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, (*parts, entry.name))
            elif entry.name.endswith(YAML_SUFFIXES):
                try:
                    st = entry.stat()
                except OSError as exc:
                    raise ScenarioError(f"{entry.path}: cannot read: {exc.strerror}") from None
                found.append(((*parts, entry.name), entry.path, st))

    walk(str(directory), ())
    found.sort(key=lambda f: f[0])
    return found


def load_scenarios(
    directory: Path, criteria: Registry, cache: DefinitionCache | None = None
) -> list[Scenario]:
    """Every ``*.yaml``/``*.yml`` file under ``directory``; one scenario or a list per file."""
    if not directory.is_dir():
        raise ScenarioError(f"{directory}: no scenarios directory")
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for _, file, st in _yaml_files(directory):
        build = _scenario_builder(file, criteria)
        listed, items = build() if cache is None else cache.get("scenarios", file, st, build)
        for n, scenario in enumerate(items):
            source = f"{file}[{n}]" if listed else file
            if scenario.id in seen:
                raise ScenarioError(
                    f"{source}: scenario id {scenario.id!r} is already used by {seen[scenario.id]}"
                )
            seen[scenario.id] = file
            scenarios.append(scenario)
    if cache is not None:
        cache.save(replace_kind="scenarios")
    return scenarios


def _scenario_builder(file: str, criteria: Registry) -> Callable[[], tuple[bool, list[Scenario]]]:
    def build() -> tuple[bool, list[Scenario]]:
        from .scenario import scenarios_from_file

        return scenarios_from_file(Path(file), criteria)

    return build


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
            raise ScenarioError(
                f"--only: no scenario with id {', '.join(missing)} "
                f"(scenarios: {', '.join(sorted(ids)) or 'none'})"
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
    def build() -> Profile:
        from .profile import load_profile as validate

        return validate(path, transports)

    if cache is None:
        return build()
    try:
        st = os.stat(path)
    except OSError:
        return build()  # raises the readable error
    profile: Profile = cache.get("profile", str(path), st, build)
    cache.save()
    return profile


def find_profile(
    profiles_dir: Path, name: str | None, transports: Registry, cache: DefinitionCache | None = None
) -> Profile:
    """Pick a profile by file name, id or name; default: ``profiles/active``."""
    if not profiles_dir.is_dir():
        raise ProfileError(f"{profiles_dir}: no profiles directory (create a profile first)")
    candidates = sorted(p for p in profiles_dir.glob("*.yaml"))
    if name is None:
        active = profiles_dir / "active"
        if active.is_file():
            name = active.read_text(encoding="utf-8").strip()
            if not name:
                raise ProfileError(f"{active}: empty; write the id of the active profile in it")
        elif len(candidates) == 1:
            return load_profile(candidates[0], transports, cache)
        elif not candidates:
            raise ProfileError(f"{profiles_dir}: no profiles (*.yaml)")
        else:
            stems = ", ".join(p.stem for p in candidates)
            raise ProfileError(
                f"{profiles_dir}: several profiles ({stems}) and no 'active' file; "
                "choose one with --profile NAME"
            )
    direct = profiles_dir / f"{name}.yaml"
    if direct.is_file():
        return load_profile(direct, transports, cache)
    from .yamlio import load_yaml

    for path in candidates:
        data = load_yaml(path, ProfileError)
        if isinstance(data, dict) and name in (data.get("id"), data.get("name")):
            return load_profile(path, transports, cache)
    known = ", ".join(p.stem for p in candidates) or "none"
    raise ProfileError(f"profile {name!r} not found in {profiles_dir} (profiles: {known})")


def profile_text(profile: Profile) -> str:
    """The profile as used, for the run record: its file's text (comments and
    all), else its mapping written as YAML."""
    if profile.path is not None:
        try:
            return Path(profile.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    from .yamlio import dump_yaml

    return dump_yaml(profile.raw)


# -- small YAML files (config.yaml) ------------------------------------------


def read_yaml(path: Path, build: Callable[[], Any]) -> Any:
    """``build()`` (which reads ``path``), cached while ``path`` is unchanged;
    for files whose meaning depends on nothing else (``config.yaml``)."""
    try:
        st = os.stat(path)
    except OSError:
        return build()
    digest = hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()
    name = f"yaml-{digest[:24]}"
    key = (__version__, stat_key(st))
    hit = cachedir.load(name, key)
    if hit is not None:
        return hit[0]
    value = build()
    if settled(st):
        cachedir.save(name, key, (value,))
    return value
