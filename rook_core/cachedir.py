"""Rook's own cache: small files that spare a command work it did before.

Nothing in it is needed: a missing, unreadable, corrupt or stale entry is
ignored and rebuilt, and every entry carries the key it was built from, so a
change to what it was built from is never served from the cache. It holds no
``env`` value (definitions hold ``env`` references, never their values), but
it does hold the scenario and profile files' text as written, and the
workspace's path: a value typed into a goal is copied here as it is.

Where it lives, first that applies:

* ``ROOK_NO_CACHE=1`` (``true``, ``yes``, ``on``): no cache at all (read or
  written); ``0`` (``false``, ``no``, ``off``, empty) changes nothing; any other
  value is a warning naming the variable, and no cache, as ``1``
  (:func:`rook_core.errors.switch_on`, as every on/off variable of Rook's);
* ``ROOK_CACHE_DIR``: that directory (one naming a file: a warning, and no cache);
* ``$XDG_CACHE_HOME/rook`` (an absolute path), else ``~/.cache/rook``;
  with no home directory (``HOME`` unset, a user with no passwd entry), none.

It is kept outside the workspace on purpose: entries are loaded with
:mod:`pickle`, so only a directory the user owns and no one else can write to
is trusted (Rook creates it with mode 0700); one that the group or others can
write, or that another user owns, is not used, and nor is such an entry file.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

from .errors import switch_on, warn_variable

# Bump when the layout of any cached entry changes.
FORMAT = 1
_END = "end-of-items"  # the last pickle of a file written by save_items
KEEP_SECONDS = 30 * 24 * 3600  # entries not rewritten for this long are removed


def cache_dir() -> Path | None:
    """The cache directory (not created), or None when caching is off."""
    if switch_on("ROOK_NO_CACHE", "Rook runs without its cache"):
        return None
    given = os.environ.get("ROOK_CACHE_DIR")
    if given:
        if os.path.exists(given) and not os.path.isdir(given):
            warn_variable(
                "ROOK_CACHE_DIR",
                f"ROOK_CACHE_DIR={given!r} is a file, not a directory: Rook runs without "
                "its cache (name a directory, which Rook creates if missing, or unset it)",
            )
            return None
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative: which the XDG spec says to ignore
        home = os.path.expanduser("~")
        if not os.path.isabs(home):  # no HOME and no passwd entry: "~" itself, never ./~
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "rook"


def _trusted(directory: Path) -> bool:
    try:
        st = os.stat(directory)
    except OSError:
        return False
    if _own(st):
        return True
    if os.environ.get("ROOK_CACHE_DIR"):  # the user's own choice, passed over: say so
        _say_untrusted(directory, st)
    return False


def _say_untrusted(directory: Path, st: os.stat_result) -> None:
    """Warn, once, that the ``ROOK_CACHE_DIR`` a user chose is not used, and why."""
    import shlex

    given = str(directory)
    if st.st_uid != os.getuid():
        why = "belongs to another user: Rook reads its cache (pickles) only from a folder you own"
        fix = "name a folder of your own"
    else:
        who = "others" if st.st_mode & 0o002 else "its group"
        why = (
            f"can be written by {who}: Rook reads its cache (pickles) only from a folder no "
            "one else can write to"
        )
        fix = f"chmod go-w {shlex.quote(given)}, or name another folder"
    warn_variable(
        "ROOK_CACHE_DIR",
        f"ROOK_CACHE_DIR={given!r} {why}, so it runs without its cache ({fix})",
    )


def _own(st: os.stat_result) -> bool:
    """Owned by the user, and neither the group nor others may write it."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def load(name: str, key: Any) -> Any:
    """The value stored under ``name`` if it was stored with an equal ``key``; else None."""
    directory = cache_dir()
    if directory is None or not _trusted(directory):
        return None
    try:
        with open(directory / name, "rb") as fh:
            if not _own(os.fstat(fh.fileno())):  # others could have written it: unpickle never
                return None
            stored = pickle.load(fh)
    except Exception:  # missing, truncated, written by another version: rebuild
        return None
    if not isinstance(stored, tuple) or len(stored) != 3 or stored[0] != FORMAT:
        return None
    return stored[2] if stored[1] == key else None


def load_items(name: str, key: Any) -> Generator[Any, None, None]:
    """The items stored with :func:`save_items` under ``name`` and an equal ``key``,
    read one at a time; nothing when there are none. A damaged file ends the
    items early (the caller rebuilds what is missing)."""
    directory = cache_dir()
    if directory is None or not _trusted(directory):
        return
    try:
        fh = open(directory / name, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return
    with fh:
        try:
            if not _own(os.fstat(fh.fileno())):  # others could have written it
                return
            if pickle.load(fh) != (FORMAT, key):
                return
            while True:
                item = pickle.load(fh)
                if item == _END:
                    return
                yield item
        except Exception:  # truncated or damaged: what was read stays valid
            return


def save_items(name: str, key: Any, items: Iterable[Any]) -> None:
    """Store ``items`` under ``name`` with ``key``, pickled one at a time (no
    copy of the whole in memory); skipped silently as :func:`save` is."""

    def write(fh: Any) -> None:
        dump = pickle.Pickler(fh, protocol=pickle.HIGHEST_PROTOCOL)
        dump.dump((FORMAT, key))
        for item in items:
            dump.clear_memo()
            dump.dump(item)
        dump.dump(_END)

    _write(name, write)


def save(name: str, key: Any, value: Any) -> None:
    """Store ``value`` under ``name`` with ``key``; silently skipped when the
    cache cannot be written (read-only home, full disk, unpicklable value)."""
    _write(name, lambda fh: pickle.dump((FORMAT, key, value), fh, pickle.HIGHEST_PROTOCOL))


def _write(name: str, write: Callable[[Any], Any]) -> None:
    directory = cache_dir()
    if directory is None:
        return
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted(directory):
            return
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, directory / name)
        _prune(directory)
    except Exception:  # a cache that cannot be written is no cache, never an error
        try:
            tmp.unlink()
        except OSError:
            pass


def _prune(directory: Path) -> None:
    """Remove entries not written for :data:`KEEP_SECONDS` (of workspaces long
    gone, say); one still in use is simply built again."""
    cutoff = time.time() - KEEP_SECONDS
    with os.scandir(directory) as entries:
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
            except OSError:
                pass
