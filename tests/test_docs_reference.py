"""The generated reference pages cannot drift: hooks from the hookspec docstrings,
the command reference from every command's real ``--help``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "scripts" / "gen_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


@pytest.mark.parametrize("page", ["hooks", "cli"])
def test_reference_page_is_up_to_date(page):
    path = {"hooks": gen.HOOKS_PAGE, "cli": gen.CLI_PAGE}[page]
    expected = gen.outputs()[path]
    assert path.is_file(), f"{path} is missing: run python scripts/gen_reference.py"
    assert path.read_text(encoding="utf-8") == expected, (
        f"{path.relative_to(ROOT)} is out of date: run python scripts/gen_reference.py"
    )


def test_the_check_mode_reports_a_stale_page(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "hooks.md"
    stale.write_text("old\n")
    monkeypatch.setattr(gen, "HOOKS_PAGE", stale)
    monkeypatch.setattr(gen, "CLI_PAGE", tmp_path / "cli.md")
    assert gen.main(["--check"]) == 1
    assert "hooks.md is out of date" in capsys.readouterr().err
    assert gen.main([]) == 0 and stale.read_text() == gen.hooks_markdown()
    assert gen.main(["--check"]) == 0


def test_the_hook_reference_has_every_hookspec_with_its_real_arguments():
    from rook_core import hookspecs

    text = gen.HOOKS_PAGE.read_text(encoding="utf-8")
    names = [
        n
        for n in dir(hookspecs)
        if n.startswith("rook_") and hasattr(getattr(hookspecs, n), "rook_spec")
    ]
    assert len(names) >= 13
    for name in names:
        import inspect

        args = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert f"### `{name}({args})`" in text


def test_a_doc_page_a_hookspec_names_is_a_link_that_works_from_the_reference():
    """rook_register_connectors said "see `docs/ruhroh.md`" in docs/reference/hooks.md:
    text, from a page that is itself in docs/ (where no docs/ folder is beside it).
    A ``docs/X.md`` a docstring names (right in Rook's source) is a relative link on
    the generated page, to a page that exists."""
    import re

    text = gen.HOOKS_PAGE.read_text(encoding="utf-8")
    assert "`docs/" not in text
    links = re.findall(r"\]\((\.\./[\w/-]+\.md)\)", text)
    assert "../ruhroh.md" in links, links
    for link in links:
        assert (gen.HOOKS_PAGE.parent / link).is_file(), link
    assert gen.rst_to_markdown("see ``docs/ruhroh.md``") == "see [ruhroh.md](../ruhroh.md)"


def test_the_command_reference_is_exactly_what_help_prints():
    """Each section equals the real program's ``--help`` in a 100-column terminal."""
    env = {**os.environ, "COLUMNS": "100"}
    for path, text in gen.commands():
        r = subprocess.run(
            [sys.executable, "-m", "rook_core", *path.split()[1:], "--help"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout == text + "\n", path
    page = gen.CLI_PAGE.read_text(encoding="utf-8")
    for path, _ in gen.commands():
        assert f"## `{path}`" in page


def test_the_command_reference_walks_every_subcommand():
    paths = [p for p, _ in gen.commands()]
    for expected in (
        "rook",
        "rook run",
        "rook init",
        "rook doctor",
        "rook completion",
        "rook plugins",
    ):
        assert expected in paths
    assert any(p.count(" ") == 2 for p in paths), "subcommands of groups are walked too"
