"""Every module of rook_core and rook_plugins imports on its own, warnings as errors.

A module reached only through another (the ``rook profile`` sub-commands
through :mod:`rook_core.cli.profile`) can still be imported first: by a plugin
author, a docs build, a test. A cycle that works in one order only, or an
import that warns on a newer Python (a deprecation that later becomes an
error), shows here. Runs in one fresh interpreter with ``-W error``, forgetting
every Rook module before importing the next, so each starts from nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import importlib, json, pkgutil, sys

names = []
for package in ("rook_core", "rook_plugins"):
    names.append(package)
    path = importlib.import_module(package).__path__
    names += [m.name for m in pkgutil.walk_packages(path, package + ".")]
failed = {}
for name in names:
    if name.endswith(".__main__"):  # runs the command line when imported
        continue
    for loaded in [k for k in sys.modules if k.split(".")[0] in ("rook_core", "rook_plugins")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"count": len(names), "failed": failed}))
"""


def test_every_module_imports_first_and_alone_without_warnings():
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["count"] > 100  # the walk found the packages
    assert result["failed"] == {}
