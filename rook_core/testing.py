"""Testing helpers for Rook and for plugin authors (an opt-in pytest plugin).

Enable with ``pytest_plugins = ["rook_core.testing"]`` in a ``conftest.py``.

Fixtures:

* ``rook_workspace`` — a :class:`Workspace` in a temporary directory with one
  project and one agent; write profiles, scripts and scenarios into it.
* ``rook_cli`` — run the ``rook`` command in process (click's ``CliRunner``)
  and get the exit code, output and the parsed ``--json`` report.
* ``rook_plugin`` — register an in-test plugin object on every plugin
  manager built during the test, and undo it afterwards.
* ``rook_distribution`` — install a distribution (a real ``*.dist-info`` with
  ``entry_points.txt`` on ``sys.path``) for one test, so a plugin loads
  through its entry point exactly as after ``pip install``; the helper
  :func:`make_distribution` writes one into any folder.

The tests run with none of the shell's ``ROOK_*`` variables and with a fresh
cache directory (``ROOK_CACHE_DIR``) for each pytest process (each
pytest-xdist worker), removed at its end.

The plugin author guide, ``docs/plugins/testing.md``, shows them in use.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .plain import plain

_SAVED: list[tuple[tempfile.TemporaryDirectory[str], dict[str, str]]] = []


def pytest_configure(config: pytest.Config) -> None:
    """The tests run with none of the ROOK_* variables of the shell they were
    started from (a developer's ROOK_DISABLE_PLUGINS or ROOK_LOAD_PLUGINS would
    change what every command does; click's _ROOK_COMPLETE too), and every
    command they run (in process or as a subprocess) uses one fresh cache
    directory, never the user's ~/.cache/rook: one for each pytest process (each
    pytest-xdist worker), removed at its end. Set before the test modules are
    collected, since one may build a plugin manager when imported."""
    outside = {k: v for k, v in os.environ.items() if k.startswith(("ROOK_", "_ROOK_"))}
    for name in outside:
        del os.environ[name]
    d = tempfile.TemporaryDirectory(prefix="rook-test-cache-")
    os.chmod(d.name, 0o700)
    _SAVED.append((d, outside))
    os.environ["ROOK_CACHE_DIR"] = d.name


def pytest_unconfigure(config: pytest.Config) -> None:
    while _SAVED:
        d, outside = _SAVED.pop()
        for name in [k for k in os.environ if k.startswith(("ROOK_", "_ROOK_"))]:
            del os.environ[name]
        os.environ.update(outside)
        d.cleanup()


class Workspace:
    """A Rook workspace on disk, for tests."""

    def __init__(self, root: Path, project: str = "proj", agent: str = "agent") -> None:
        self.root = root
        self.project = project
        self.agent = agent
        for sub in ("profiles", "scripts", "scenarios", "runs"):
            (self.agent_dir / sub).mkdir(parents=True, exist_ok=True)

    @property
    def agent_dir(self) -> Path:
        return self.root / ".testmuai" / "rook" / "projects" / self.project / "agents" / self.agent

    @property
    def runs_dir(self) -> Path:
        return self.agent_dir / "runs"

    def script(self, name: str, body: str, executable: bool = True) -> Path:
        """Write ``scripts/NAME`` (dedented) and make it executable."""
        path = self.agent_dir / "scripts" / name
        path.write_text(textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
        mode = path.stat().st_mode
        if executable:
            path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        else:
            path.chmod(mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        return path

    def profile(
        self, data: dict[str, Any] | str, name: str | None = None, active: bool = True
    ) -> Path:
        """Write a profile (a mapping, or YAML text); by default make it active."""
        if isinstance(data, str):
            text = textwrap.dedent(data).lstrip("\n")
            pid = name or (yaml.safe_load(text) or {}).get("id", "p")
        else:
            data = {"name": data.get("id", "p"), **data}
            pid = name or data.get("id", "p")
            text = yaml.safe_dump(data, sort_keys=False)
        path = self.agent_dir / "profiles" / f"{pid}.yaml"
        path.write_text(text, encoding="utf-8")
        if active:
            (self.agent_dir / "profiles" / "active").write_text(str(pid), encoding="utf-8")
        return path

    def scenario(self, data: dict[str, Any] | str, name: str | None = None) -> Path:
        """Write ``scenarios/<id>.yaml`` from a mapping or YAML text."""
        if isinstance(data, str):
            text = textwrap.dedent(data).lstrip("\n")
            sid = name or (yaml.safe_load(text) or {}).get("id", "s")
        else:
            sid = name or data["id"]
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        path = self.agent_dir / "scenarios" / f"{sid}.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def record(self, run_id: str, key: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.run_dir(run_id) / "scenarios" / f"{key}.json").read_text(encoding="utf-8")
        )
        return data

    def all_run_text(self, run_id: str) -> str:
        """Every file of a run concatenated (to search for leaked secrets)."""
        parts = []
        for p in sorted(self.run_dir(run_id).rglob("*")):
            if p.is_file() and "state" not in p.relative_to(self.run_dir(run_id)).parts[:1]:
                parts.append(p.read_text(encoding="utf-8", errors="replace"))
        return "\n".join(parts)


@plain
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    @property
    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data

    def statuses(self) -> dict[str, str]:
        return {
            (s["id"] if s["repeat_count"] == 1 else f"{s['id']}.{s['repeat_index']}"): s["status"]
            for s in self.report["scenarios"]
        }


WORKSPACE_COMMANDS = ("run", "runs", "diff", "report", "doctor", "merge")
"""Commands that get ``--workspace`` (the fixture's) unless the test passes one."""
WORKSPACE_GROUPS = ("profile",)
"""Groups whose every subcommand gets it (``profile add``, ``profile test`` ...)."""


class _StderrWritesThrough:
    """``cli`` for Click 8.1's ``CliRunner.invoke``, with the standard error it
    provides writing through (its ``main`` is all ``invoke`` calls)."""

    def __init__(self, command: Any) -> None:
        self.command = command
        self.name = command.name  # the program name in usage lines

    def main(self, *args: Any, **kwargs: Any) -> Any:
        import sys

        stderr: Any = sys.stderr  # a TextIOWrapper (typed TextIO)
        stderr.reconfigure(write_through=True)
        return self.command.main(*args, **kwargs)


class RookCli:
    def __init__(self, workspace: Workspace | None) -> None:
        self.workspace = workspace

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, input: str | None = None
    ) -> CliResult:
        from click.testing import CliRunner

        from rook_core.cli import cli

        argv = list(args)
        at = 1 if argv and argv[0] in WORKSPACE_COMMANDS else 0
        if argv[:1] and argv[0] in WORKSPACE_GROUPS and argv[1:2] and argv[1][:1] != "-":
            at = 2  # after the subcommand: the group itself takes no --workspace
        if (
            self.workspace is not None
            and at
            and "-w" not in argv
            and not any(a == "--workspace" or a.startswith("--workspace=") for a in argv)
        ):
            argv[at:at] = ["--workspace", str(self.workspace.root)]
        import inspect

        # Click 8.1 mixes standard error into the output unless told not to (its
        # result.stderr then raises); Click 8.2+ keeps them apart, with no such argument
        apart = "mix_stderr" in inspect.signature(CliRunner).parameters
        extra: dict[str, Any] = {"mix_stderr": False} if apart else {}
        runner = CliRunner(**extra)
        # Click 8.1 also reads standard error without flushing it: what was written
        # there unflushed (a warning, a plugin's print) would be lost. A real
        # process's standard error is line-buffered; this one writes through
        command: Any = _StderrWritesThrough(cli) if apart else cli
        result = runner.invoke(command, argv, env=env, input=input, catch_exceptions=True)
        exc = result.exception if not isinstance(result.exception, SystemExit) else None
        return CliResult(result.exit_code, result.stdout, result.stderr, exc)


@pytest.fixture
def rook_workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


@pytest.fixture
def rook_cli(rook_workspace: Workspace) -> RookCli:
    return RookCli(rook_workspace)


@pytest.fixture
def rook_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``rook_plugin(obj)`` registers ``obj`` on every plugin manager built in this test
    (unless an installed entry point loads it already: then it runs once, as that)."""
    from rook_core import plugins

    registered: list[object] = []
    original = plugins.build_plugin_manager

    def build(load_entry_points: bool = True) -> Any:
        rook = original(load_entry_points)
        for obj in registered:
            if rook.pm.get_name(obj) is None:  # else its installed entry point loaded it
                rook.register(obj)
        return rook

    def add(obj: object) -> object:
        registered.append(obj)
        return obj

    monkeypatch.setattr(plugins, "build_plugin_manager", build)
    try:
        yield add
    finally:
        registered.clear()


# ---------------------------------------------------------------------------
# an installed plugin, without pip: a distribution on sys.path
# ---------------------------------------------------------------------------


def make_distribution(
    root: Path,
    name: str,
    plugins: dict[str, str],
    modules: dict[str, str] | None = None,
    version: str = "0.1.0",
    requires: list[str] | None = None,
) -> Path:
    """Write an installed distribution into ``root`` and return ``root``.

    ``NAME-VERSION.dist-info/`` gets ``METADATA`` (with a ``Requires-Dist`` line
    for each of ``requires``, as pip writes a package's ``dependencies``) and an
    ``entry_points.txt`` declaring ``plugins`` (entry point name -> module) in
    the ``rook`` group; ``modules`` (relative file path -> source, dedented) are
    written beside it. With ``root`` on ``sys.path``, :mod:`importlib.metadata`
    finds the distribution exactly as it finds one pip installed, so Rook loads
    it through its entry point (or reports it, if it fails to import or
    requires another version of Rook).
    """
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    needs = "".join(f"Requires-Dist: {line}\n" for line in requires or [])
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{needs}", encoding="utf-8"
    )
    lines = ["[rook]", *(f"{ep} = {target}" for ep, target in plugins.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for rel, source in (modules or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def rook_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``rook_distribution(name, plugins, modules=None, version="0.1.0",
    requires=None)`` installs a distribution for this test only (see
    :func:`make_distribution`): it is put on ``sys.path``, and removed with its
    imported modules afterwards."""
    import sys

    made: list[str] = []

    def install(
        name: str,
        plugins: dict[str, str],
        modules: dict[str, str] | None = None,
        version: str = "0.1.0",
        requires: list[str] | None = None,
    ) -> Path:
        root = make_distribution(
            tmp_path / f"site-{len(made)}-{name}", name, plugins, modules, version, requires
        )
        made.extend(rel.split("/")[0].removesuffix(".py") for rel in (modules or {}))
        monkeypatch.syspath_prepend(str(root))
        return root

    try:
        yield install
    finally:
        for top in made:
            for mod in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
                del sys.modules[mod]


__all__ = [
    "Workspace",
    "RookCli",
    "CliResult",
    "rook_workspace",
    "rook_cli",
    "rook_plugin",
    "make_distribution",
    "rook_distribution",
]
