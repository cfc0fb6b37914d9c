import atexit
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _this_checkouts_plugins():
    """The suite tests this checkout's built-in plugins. ``plugins/`` is imported
    as ``rook_plugins`` only through the installed package's mapping, so in a
    second checkout (a git worktree) an editable install made from the first one
    would load the first one's plugins, in this process and in every ``rook``
    subprocess. When ``rook_plugins`` resolves anywhere else, a temporary
    ``rook_plugins`` link to this checkout's ``plugins/`` goes first on
    ``sys.path`` and ``PYTHONPATH`` (with the checkout itself, for ``rook_core``)."""
    spec = importlib.util.find_spec("rook_plugins")
    here = ROOT / "plugins"
    if spec is not None and spec.origin and Path(spec.origin).resolve().parent == here:
        return
    link_dir = tempfile.mkdtemp(prefix="rook-test-plugins-")
    atexit.register(shutil.rmtree, link_dir, True)
    os.symlink(here, os.path.join(link_dir, "rook_plugins"), target_is_directory=True)
    sys.modules.pop("rook_plugins", None)
    sys.path.insert(0, link_dir)
    paths = [link_dir, str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


_this_checkouts_plugins()

pytest_plugins = ["rook_core.testing"]


_SAVED: list[tuple[tempfile.TemporaryDirectory[str], dict[str, str]]] = []


def pytest_configure(config):
    """The suite runs with none of the ROOK_* variables of the shell it was
    started from (a developer's ROOK_WORKSPACE_DIR or ROOK_DISABLE_PLUGINS would
    change what every command does; click's _ROOK_COMPLETE too), and every
    command it runs (in process or as a subprocess) uses one fresh cache
    directory, never the user's ~/.cache/rook. Set before the test modules are
    collected, since some build a plugin manager when imported."""
    outside = {k: v for k, v in os.environ.items() if k.startswith(("ROOK_", "_ROOK_"))}
    for name in outside:
        del os.environ[name]
    d = tempfile.TemporaryDirectory(prefix="rook-test-cache-")
    os.chmod(d.name, 0o700)
    _SAVED.append((d, outside))
    os.environ["ROOK_CACHE_DIR"] = d.name
    # Nor with the signals its shell ignored (nohup, as Jenkins runs a step; a
    # script's `.ci/run &`): every rook it starts would keep them ignored, as Rook
    # must, and the tests that send them would wait in vain. A handler that does
    # nothing keeps the suite itself deaf to them; a child starts with the default.
    for name in ("SIGHUP", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, _ignored)


def _ignored(signum, frame):
    pass


def pytest_unconfigure(config):
    while _SAVED:
        d, outside = _SAVED.pop()
        for name in [k for k in os.environ if k.startswith(("ROOK_", "_ROOK_"))]:
            del os.environ[name]
        os.environ.update(outside)
        d.cleanup()
