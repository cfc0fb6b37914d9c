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


def pytest_configure(config):
    """The suite runs without the signals its shell ignored (nohup, as Jenkins
    runs a step; a script's `.ci/run &`): every rook it starts would keep them
    ignored, as Rook must, and the tests that send them would wait in vain. A
    handler that does nothing keeps the suite itself deaf to them; a child
    starts with the default. (The shell's ROOK_* variables and the cache:
    rook_core.testing's own pytest_configure, a fresh cache for each worker.)"""
    # a CI's FORCE_COLOR (set for pytest's own colours) would colour rook doctor's
    # marks in every output a test reads: the tests that want it set it
    os.environ.pop("FORCE_COLOR", None)
    for name in ("SIGHUP", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, _ignored)
    if not hasattr(config, "workerinput"):  # once, in the process that starts the workers
        _compiled()


def _compiled():
    """Rook's modules compiled once for the whole suite where Python is told not to
    cache them (``PYTHONDONTWRITEBYTECODE``, which some CI images and sandboxes set):
    an editable install is this checkout's source, and every ``rook`` a test starts
    would compile its ~130 modules again (0.2-0.5 s a start on 2 cores; the suite
    starts thousands). Where Python writes its cache itself, nothing to do."""
    if not sys.dont_write_bytecode:
        return
    import compileall

    for folder in ("rook_core", "plugins"):
        compileall.compile_dir(ROOT / folder, quiet=2)


def _ignored(signum, frame):
    pass


def pytest_make_parametrize_id(config, val, argname):
    """A signal parameter's id is its name (``[SIGINT]``) on every Python: pytest
    would take str(), ``2`` since 3.11 but ``Signals.SIGINT`` on 3.10, so the same
    test had another id there (``pytest 'test_x[2]'`` found nothing)."""
    if isinstance(val, signal.Signals):
        return val.name
    return None

