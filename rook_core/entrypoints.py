"""Find the ``rook`` entry points, and remember them while nothing installed changes.

:func:`discover` answers what ``importlib.metadata.entry_points(group=...)``
answers, plus each entry point's distribution name and version. Asking
:mod:`importlib.metadata` is the slow part of starting Rook (importing it
pulls in the email package, and it opens every distribution on ``sys.path``),
so the answer is kept in Rook's cache (:mod:`rook_core.cachedir`) with a
snapshot of everything it was read from, and is used again only while that
snapshot still holds:

* the same interpreter (``sys.executable``, ``sys.version``) and ``sys.path``
  (the cache key);
* for every ``sys.path`` directory, the same ``*.dist-info`` / ``*.egg-info``
  names (a distribution installed, removed, upgraded or reinstalled adds,
  drops or renames one), and for each the same stat (inode, device, size,
  mtime, ctime) of its ``entry_points.txt`` (an in-place edit, or a reinstall
  that writes a new file, changes it); a zip or egg file on ``sys.path`` by
  its own stat;
* for each distribution that declares a ``rook`` entry point, the same stat
  of its ``METADATA`` (the name and version shown come from there, and the
  version of Rook it requires: see :func:`unmet_requirement`).

Checking it takes listings and stats, never a read. A directory is not even
listed when its own stat is unchanged and its ctime was already older than
:data:`SETTLED_NS` when it was snapshotted: adding, removing or renaming an
entry changes a directory's mtime and ctime, and a timestamp that old cannot
be shared by a later change (file systems stamp with a coarse clock, and
nothing can set a ctime back). Everything is snapshotted before the scan it
describes, so a change during a scan makes the next start scan again rather
than trust a stale answer. (Left open: an ``entry_points.txt`` rewritten in
place to the same size within the same clock tick as the scan that read it.)

A finder on ``sys.meta_path`` that reports distributions from elsewhere than
the ``sys.path`` folders (a zip application, an embedded interpreter) makes
the answer unknowable from the file system; then nothing is cached.
"""

from __future__ import annotations

import os
import re
import sys
import time
import zlib
from importlib import import_module
from typing import Any, NamedTuple

from . import cachedir

FORMAT = 2
"""Layout of the cached answer; part of the key, bump when it changes."""

SETTLED_NS = 2_000_000_000
"""A directory whose ctime was older than this when snapshotted is trusted
without a listing while its stat is unchanged: more than the coarsest common
timestamp granularity (FAT's 2 s)."""

_INFO_SUFFIXES = (".dist-info", ".egg-info")
_METADATA_FILES = ("METADATA", "PKG-INFO")

# importlib.metadata.EntryPoint.pattern: ``pkg.mod``, ``pkg.mod:obj.attr``, ``[extras]``
# (compiled only for a value that is not plain ``a.b:c.d``: compiling costs a start-up).
_VALUE = (
    r"(?P<module>[\w.]+)\s*"
    r"(:\s*(?P<attr>[\w.]+)\s*)?"
    r"((?P<extras>\[.*\])\s*)?$"
)

Stat = tuple[int, int, int, int, int]


OWN = "rook-harness"
"""Rook's own distribution: its built-in plugins keep their entry point names."""


class FoundEntryPoint(NamedTuple):
    """One entry point: its name, its value (``module`` or ``module:attr``), the
    name and version of the distribution that declares it, and the requirement
    on Rook that distribution declares and the installed Rook does not meet
    (``rook-harness>=2.0``; empty when it is met, or when there is none)."""

    name: str
    value: str
    distribution: str
    version: str
    unmet: str = ""

    def load(self) -> Any:
        """Import the module and resolve the attribute path, exactly as
        ``importlib.metadata.EntryPoint.load`` does; raises what the import raises."""
        module, colon, attr = self.value.partition(":")
        if not (_dotted(module) and (not colon or _dotted(attr))):
            match = re.match(_VALUE, self.value)  # spaces, extras, or malformed
            if match is None:
                raise ValueError(f"malformed entry point value {self.value!r}")
            module, attr = match.group("module"), match.group("attr") or ""
        obj: Any = import_module(module)
        for name in filter(None, attr.split(".")):
            obj = getattr(obj, name)
        return obj


def _dotted(text: str) -> bool:
    """``a.b_c``: what the pattern matches as is (the usual value, no regex needed)."""
    return text.isascii() and all(part.isidentifier() for part in text.split("."))


class Discovery:
    """What :func:`discover` found, in ``importlib.metadata`` order, and whether
    the answer came from the cache."""

    __slots__ = ("entry_points", "from_cache")

    def __init__(self, entry_points: list[FoundEntryPoint], from_cache: bool) -> None:
        self.entry_points = entry_points
        self.from_cache = from_cache


def discover(group: str) -> Discovery:
    """The entry points of ``group``: from the cache when nothing installed has
    changed since they were cached, else from :mod:`importlib.metadata` (and
    then cached)."""
    key = _key(group) if cachedir.cache_dir() is not None else None
    if key is None:
        return Discovery(_scan(group)[0], from_cache=False)
    name = cache_name()  # after _key: sys.path holds only strings
    found = _from_cache(name, key)
    if found is not None:
        return Discovery(found, from_cache=True)
    snapshot = _snapshot(key[-1])  # before the scan: a change during it is seen next time
    found, checks = _scan(group)
    if checks is not None:
        rows = [tuple(ep) for ep in found]  # plain tuples: no class to unpickle
        cachedir.save(name, key, (rows, checks, snapshot))
    return Discovery(found, from_cache=False)


def cache_name() -> str:
    """The cache entry for this interpreter and ``sys.path``."""
    text = "\0".join([sys.executable, *sys.path]).encode("utf-8", "surrogatepass")
    return f"entry-points-{zlib.crc32(text):08x}{zlib.adler32(text):08x}"


def _key(group: str) -> tuple[Any, ...] | None:
    """The cache key, or None when the file system cannot tell whether the
    answer changed (another finder reports distributions) or ``sys.path``
    holds something other than strings."""
    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is not None and not _reads_sys_path(finder):
            return None
    paths = tuple(sys.path)
    if not all(isinstance(p, str) for p in paths):
        return None
    return (FORMAT, group, sys.executable, sys.version, paths)


def _reads_sys_path(finder: object) -> bool:
    """The standard finder, or the ``importlib_metadata`` backport's (which
    packages such as dask put on ``sys.meta_path``): both find distributions in
    the ``sys.path`` folders, the same way, so the snapshot covers them."""
    from importlib.machinery import PathFinder

    if finder is PathFinder:
        return True
    cls = finder if isinstance(finder, type) else type(finder)
    return (cls.__module__, cls.__qualname__) == ("importlib_metadata", "MetadataPathFinder")


# ---------------------------------------------------------------------------
# the snapshot of sys.path, and checking it
# ---------------------------------------------------------------------------


def _stat(path: str, dir_fd: int | None = None) -> Stat | None:
    try:
        st = os.stat(path, dir_fd=dir_fd)
    except (OSError, ValueError):
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _infos(root: str) -> tuple[str, ...] | None:
    """The entries of ``root`` importlib.metadata reads distributions from
    (the same test as its ``Lookup``); None when ``root`` cannot be listed."""
    try:
        children = os.listdir(root)
    except (OSError, ValueError):
        return None
    egg = root.lower().endswith(".egg")
    return tuple(
        sorted(
            c
            for c in children
            if c.lower().endswith(_INFO_SUFFIXES) or (egg and c.lower() == "egg-info")
        )
    )


def _entry_points_stats(root: str, infos: tuple[str, ...]) -> list[Stat | None]:
    if not infos:
        return []
    if os.stat not in os.supports_dir_fd:
        return [_stat(os.path.join(root, info, "entry_points.txt")) for info in infos]
    try:  # relative to the open directory: a third less time than whole paths
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return [None] * len(infos)
    try:
        return [_stat(f"{info}/entry_points.txt", fd) for info in infos]
    finally:
        os.close(fd)


def _snapshot(paths: tuple[str, ...]) -> list[Any]:
    """For each ``sys.path`` entry: its stat, whether that stat is old enough to
    stand for a listing, its distribution entries and their entry_points.txt stats."""
    settled_before = time.time_ns() - SETTLED_NS
    snapshot: list[Any] = []
    for entry in paths:
        root = entry or "."
        st = _stat(root)
        infos = _infos(root) if st is not None else None
        if infos is None:  # missing, a zip file, or unreadable: its stat says it all
            snapshot.append((st, False, None, None))
        else:
            settled = st is not None and st[4] < settled_before  # ctime: utime cannot fake it
            snapshot.append((st, settled, infos, _entry_points_stats(root, infos)))
    return snapshot


def _unchanged(entry: str, snap: Any) -> bool:
    """Whether a ``sys.path`` entry still holds what its snapshot says."""
    stored, settled, infos, ep_stats = snap
    root = entry or "."
    st = _stat(root)
    if infos is None:
        return bool(st == stored)
    if not (settled and st == stored) and _infos(root) != infos:
        return False
    return bool(_entry_points_stats(root, infos) == ep_stats)


def _metadata_state(dist_path: str) -> list[Stat | None]:
    return [_stat(os.path.join(dist_path, f)) for f in _METADATA_FILES]


def _from_cache(name: str, key: tuple[Any, ...]) -> list[FoundEntryPoint] | None:
    stored = cachedir.load(name, key)
    if stored is None:
        return None
    try:
        rows, checks, snapshot = stored
        paths = key[-1]
        if len(snapshot) != len(paths):
            return None
        if not all(_unchanged(entry, snap) for entry, snap in zip(paths, snapshot, strict=True)):
            return None
        if any(_metadata_state(path) != state for path, state in checks):
            return None  # a distribution's METADATA changed in place
        return [FoundEntryPoint(*map(str, row)) for row in rows]
    except Exception:  # an entry in some other layout is no entry: scan again
        return None


# ---------------------------------------------------------------------------
# asking importlib.metadata
# ---------------------------------------------------------------------------


def _scan(group: str) -> tuple[list[FoundEntryPoint], list[tuple[str, Any]] | None]:
    """Ask importlib.metadata. Also returns the METADATA stats to check on a
    cache hit, or None when a distribution is not a folder that can be stat'ed
    (then the answer is not cached)."""
    from importlib import metadata

    found: list[tuple[str, str, str]] = []  # entry point name, value, distribution ident
    dists: dict[str, tuple[str, str, list[str]]] = {}  # name, version, Rook requirements
    checks: dict[str, list[Stat | None]] = {}
    cacheable = True
    for ep in metadata.entry_points(group=group):
        dist = ep.dist
        ident = ""
        if dist is not None:
            path = getattr(dist, "_path", None)  # a PathDistribution's folder
            ident = str(path) if path is not None else f"id:{id(dist)}"
            if ident not in dists:
                if path is None:
                    cacheable = False
                else:  # stat'ed before it is read: an edit in between is seen next time
                    checks[ident] = _metadata_state(ident)
                meta = dist.metadata  # parsed once: .name and .version parse it again
                dists[ident] = (_field(meta, "Name"), _field(meta, "Version"), _on_rook(meta))
        found.append((ep.name, ep.value, ident))
    # Rook's own version, from the same scan: what pip sees installed
    own = next((v for n, v, _ in dists.values() if _canonical(n) == OWN), "")
    unmet = {
        ident: unmet_requirement(requires, own) if requires and own else ""
        for ident, (_, _, requires) in dists.items()
    }
    entry_points = [
        FoundEntryPoint(name, value, *dists[ident][:2], unmet[ident])
        if ident
        else FoundEntryPoint(name, value, "", "")
        for name, value, ident in found
    ]
    return entry_points, (list(checks.items()) if cacheable else None)


def _canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): ``Rook_Harness`` is
    ``rook-harness``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _on_rook(meta: Any) -> list[str]:
    """The distribution's ``Requires-Dist`` lines that name Rook itself (a
    cheap look at each name: most plugins' lines are read no further)."""
    lines = meta.get_all("Requires-Dist") or []
    return [
        line
        for line in lines
        if _canonical(re.split(r"[^\w.-]", line.strip(), maxsplit=1)[0]) == OWN
    ]


def unmet_requirement(requires: list[str], own: str) -> str:
    """The first of ``requires`` (``Requires-Dist`` lines on Rook) that Rook's
    version ``own`` does not satisfy, as written without its marker; ``""`` when
    all are met. A line whose marker does not hold here (an extra's, another
    Python's) asks nothing; a line or a version that cannot be read is no
    verdict (pip installed it, so it holds it valid). A pre-release of Rook
    counts as its version, as ``pip check`` counts an installed one."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        version = Version(own)
    except InvalidVersion:
        return ""
    for line in requires:
        try:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
        except (InvalidRequirement, ValueError):
            continue
        if not req.specifier.contains(version, prereleases=True):
            return line.split(";", 1)[0].strip()
    return ""


def _field(meta: Any, name: str) -> str:
    # "in" first: a missing field warns on Python 3.12+ and raises on newer ones
    return str(meta[name] or "") if name in meta else ""
