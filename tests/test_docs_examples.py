"""Every example in the docs is executed, so none can rot.

A fenced block is tested when an HTML comment right before it says how:

    <!-- test: file PATH [mode=755] -->   write the block to PATH (in the page's sandbox),
                                          with that mode (octal) when given
    <!-- test: plugin NAME MODULE -->     install the block as module MODULE, entry point
                                          NAME in the `rook` group (a real dist-info)
    <!-- test: sh [exit=N] [expect=T] --> run it with bash -e; exit N (default 0), and T
                                          in its output
    <!-- test: python [expect=T] -->      run it with the Python running the tests
    <!-- test: profile -->                validate it as a profile (installed transports)
    <!-- test: scenario -->               validate it as a scenario (installed criteria)
    <!-- test: yaml|json|toml -->         parse it
    <!-- test: skip reason="..." -->      not run, on purpose (say why)

Options for a few of them:

    sh|python env="NAME=VALUE ..."        variables set for this block only (what a reader
                                          has exported, such as a profile's `env`); quote a
                                          value with spaces: env="A='x y' B=z"
    profile|scenario at=KEY.KEY           a fragment: the block is the value at that path
    profile|scenario with="{YAML}"        a fragment: the block is merged (deep) onto this
                                          mapping, which supplies what it leaves out
    json like=FILE [at=KEY.KEY]           every key the block shows (nested; a list item
                                          like one of the real items) is in the JSON
                                          document FILE (in the sandbox), at that path (a
                                          number picks a list item): a shape that cannot drift

A marker whose comment does not close on its own line carries a hidden block:
the lines up to the closing ``-->`` are the block (any kind above), run in
order with the others but invisible to a reader. Use it for set-up and checks
a page does not show, such as starting a test server or making a run that a
later visible command names:

    <!-- test: sh
    rook init --project demo --agent sample --example
    -->

The blocks of one page run in order in one fresh sandbox directory (also the
working directory and ``HOME``), with ``rook`` and ``python3`` on ``PATH``
that run the Rook and the Python under test, and ``DOCS_CHECKOUT`` naming this
checkout (to copy ``examples/`` or ``tests/agents/`` from), so a page can build
a workspace step by step and then run it. Any page under ``docs/`` (and the
README) with markers is covered; on the pages in ``FULLY_TESTED`` every
yaml/python/sh/toml/json block must be marked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rook_core.testing import make_distribution

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: toml blocks are only checked on 3.11+
    tomllib = None

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FULLY_TESTED = [
    "docs/*.md",
    "docs/plugins/*.md",
    "README.md",
]
CHECKED_LANGUAGES = {
    "sh",
    "bash",
    "shell",
    "console",
    "yaml",
    "yml",
    "python",
    "py",
    "toml",
    "json",
}
MARKER = re.compile(r"<!--\s*test:\s*(?P<spec>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
HIDDEN = re.compile(r"^\s*<!--\s*test:\s*(?P<spec>(?:(?!-->).)*?)\s*$")  # not closed here


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    text: str
    spec: str | None  # the marker, or None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Fenced blocks, each with the test marker just before it (if any)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        hidden = HIDDEN.match(lines[i])
        if hidden:
            j = i + 1
            while j < len(lines) and lines[j].strip() != "-->":
                j += 1
            text = textwrap.dedent("\n".join(lines[i + 1 : j]) + "\n")
            found.append(Block(page, i + 1, "hidden", text, hidden.group("spec")))
            i = j + 1
            continue
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group("indent"), m.group("fence"), m.group("lang").lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(
                lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip()
            )
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = MARKER.search(lines[k]) if k >= 0 else None
        found.append(
            Block(
                page, i + 1, lang, "\n".join(body) + "\n", marker.group("spec") if marker else None
            )
        )
        i = j + 1
    return found


def pages_with_markers() -> list[Path]:
    pages = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
    return [p for p in pages if p.is_file() and any(b.spec for b in blocks(p))]


def parse_spec(spec: str) -> tuple[str, list[str], dict[str, str]]:
    words = shlex.split(spec)
    kind, args, opts = words[0], [], {}
    for w in words[1:]:
        if "=" in w:
            k, _, v = w.partition("=")
            opts[k] = v
        else:
            args.append(w)
    return kind, args, opts


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.site = root / ".site"
        self.bin = root / ".bin"
        for d in (self.site, self.bin, root / "home", root / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        wrappers = {"rook": "-m rook_core ", "python3": "", "python": ""}
        for name, args in wrappers.items():  # the Rook and the Python under test
            path = self.bin / name
            path.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args}"$@"\n')
            path.chmod(0o755)

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ROOK_", "XDG_")) and k not in ("PYTHONPATH", "COLUMNS")
        }
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = str(self.site)
        env["HOME"] = str(self.root / "home")
        # a temporary folder of its own: a pytest session (docs/plugins/testing.md runs one)
        # deletes, as it ends, the oldest unlocked folders in the shared /tmp/pytest-of-USER,
        # a whole earlier run of this suite among them: minutes, inside this test's 120 s
        env["TMPDIR"] = str(self.root / "tmp")
        env["DOCS_CHECKOUT"] = str(ROOT)
        return env

    def run(
        self, argv: list[str], text: str | None = None, extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        # In a session of its own, so that a command that hangs can be shown with
        # everything it started (pytest-timeout's own limit would end the test
        # first, with no word of what the command was doing)
        proc = subprocess.Popen(
            argv,
            cwd=self.root,
            env={**self.env(), **(extra or {}), "PYTHONFAULTHANDLER": "1"},
            stdin=subprocess.PIPE if text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(text, timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            tree, pids = hung_tree(proc.pid)
            os.killpg(proc.pid, signal.SIGABRT)  # Python's faulthandler shows every thread
            try:
                out, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            for pid in pids:  # hooks it left, in sessions of their own
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            pytest.fail(
                f"{argv} still ran after {COMMAND_TIMEOUT} s; its processes then:\n{tree}\n"
                f"--- stdout ---\n{out[-6000:]}\n--- stderr ---\n{err[-12000:]}"
            )
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


COMMAND_TIMEOUT = 90  # under pytest-timeout's 120 s for the whole test


def hung_tree(top: int) -> tuple[str, set[int]]:
    """``top`` and its descendants (hooks lead sessions of their own) with their
    state, where in the kernel each waits and what its descriptors are."""
    parent = {}
    for name in filter(str.isdecimal, os.listdir("/proc")):
        try:
            parent[int(name)] = int(
                Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[1]
            )
        except OSError:
            continue
    tree = {top}
    while grown := {pid for pid, ppid in parent.items() if ppid in tree} - tree:
        tree |= grown
    lines = []
    for pid in sorted(tree):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            wchan = Path(f"/proc/{pid}/wchan").read_text()
            fds = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            continue
        lines.append(f"{pid} ppid={parent.get(pid)} state={state} wchan={wchan} fds={fds} {cmd}")
    return "\n".join(lines), tree - {top}


def check_block(block: Block, box: Sandbox) -> None:
    from rook_core import plugins
    from rook_core.profile import profile_from_dict
    from rook_core.scenario import scenario_from_dict

    kind, args, opts = parse_spec(block.spec or "")
    where = block.where
    if kind == "skip":
        assert opts.get("reason"), f"{where}: say why it is skipped (reason=...)"
    elif kind == "file":
        path = box.root / args[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text, encoding="utf-8")
        if opts.get("mode"):
            path.chmod(int(opts["mode"], 8))
    elif kind == "plugin":
        name, module = args
        dist = opts.get("dist", f"rook-docs-{name}")
        make_distribution(box.site, dist, {name: module}, {f"{module}.py": block.text})
    elif kind in ("sh", "python"):
        argv = (
            ["bash", "-e", "-c", block.text] if kind == "sh" else [sys.executable, "-c", block.text]
        )
        extra = dict(item.partition("=")[::2] for item in shlex.split(opts.get("env", "")))
        r = box.run(argv, extra=extra)
        output = r.stdout + r.stderr
        want = int(opts.get("exit", "0"))
        assert r.returncode == want, (
            f"{where}: exit {r.returncode}, expected {want}\n--- output ---\n{output[-4000:]}"
        )
        if "expect" in opts:
            assert opts["expect"] in output, (
                f"{where}: {opts['expect']!r} not in:\n{output[-4000:]}"
            )
    elif kind in ("profile", "scenario"):
        data = yaml.safe_load(block.text)
        for key in reversed(opts["at"].split(".") if "at" in opts else []):
            data = {key: data}
        if "with" in opts:
            data = merged(yaml.safe_load(opts["with"]), data)
        rook = plugins.build_plugin_manager()
        if kind == "profile":
            profile_from_dict(data, rook.transports, where)
        else:
            scenario_from_dict(data, rook.criteria, where, None)
    elif kind in ("yaml", "yml"):
        yaml.safe_load(block.text)
    elif kind == "json":
        data = json.loads(block.text)
        if "like" in opts:
            real = json.loads((box.root / opts["like"]).read_text(encoding="utf-8"))
            for key in opts["at"].split(".") if "at" in opts else []:
                real = real[int(key)] if isinstance(real, list) else real[key]
            missing = keys_missing(data, real, opts.get("at", "") or "(top)")
            assert missing == [], f"{where}: not in the real {opts['like']}: {missing}"
    elif kind == "toml":
        if tomllib is not None:
            tomllib.loads(block.text)
    else:
        raise AssertionError(f"{where}: unknown test marker {block.spec!r}")


def merged(base: object, over: object) -> object:
    """``over`` merged onto ``base``: mappings key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: merged(base.get(k), v) for k, v in over.items()}}
    return over


def keys_missing(doc: object, real: object, path: str) -> list[str]:
    """The paths of keys ``doc`` shows that ``real`` does not have.

    In a list, each item ``doc`` shows must be like one of the real items (the
    one that misses least is reported); an empty real list cannot be checked.
    """
    if isinstance(doc, dict):
        if not isinstance(real, dict):
            return [] if real is None else [f"{path}: not an object"]
        found: list[str] = []
        for key, value in doc.items():
            if key not in real:
                found.append(f"{path}.{key}")
            else:
                found += keys_missing(value, real[key], f"{path}.{key}")
        return found
    if isinstance(doc, list) and isinstance(real, list) and real:
        found = []
        for i, item in enumerate(doc):
            found += min((keys_missing(item, r, f"{path}[{i}]") for r in real), key=len)
        return found
    return []


@pytest.mark.parametrize("page", pages_with_markers(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_examples_run(page, tmp_path):
    box = Sandbox(tmp_path / "sandbox")
    for block in blocks(page):
        if block.spec is not None:
            check_block(block, box)


def test_every_example_on_the_fully_tested_pages_is_marked():
    unmarked = []
    for pattern in FULLY_TESTED:
        pages = sorted(ROOT.glob(pattern))
        assert pages, f"{pattern}: no such page"
        for page in pages:
            unmarked += [
                b.where for b in blocks(page) if b.lang in CHECKED_LANGUAGES and b.spec is None
            ]
    assert unmarked == [], "add a <!-- test: ... --> marker before: " + ", ".join(unmarked)


def test_the_runner_finds_markers_and_fails_a_broken_example(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- test: sh exit=3 -->\n\n```sh\nexit 3\n```\n\n"
        "```sh\nnot tested\n```\n"
        "<!-- test: sh -->\n```sh\nrook --version\nfalse\n```\n"
    )
    found = blocks(page)
    assert [b.spec for b in found] == ["sh exit=3", None, "sh"]
    box = Sandbox(tmp_path / "box")
    found[0].page = found[2].page = ROOT / "page.md"  # for `where`
    check_block(found[0], box)
    with pytest.raises(AssertionError, match="exit 1, expected 0"):
        check_block(found[2], box)


def test_hidden_blocks_options_and_shapes(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- test: sh expect=hidden\necho hidden > seen.txt; cat seen.txt\n-->\n\n"
        '<!-- test: sh env="GREETING=\'hi there\' OTHER=x" expect="hi there x" -->\n'
        '```sh\necho "$GREETING $OTHER"; test -f seen.txt\n```\n'
        '<!-- test: profile at=hooks.execute with="{id: docs}" -->\n'
        "```yaml\nscript: scripts/agent.sh\ntimeout_seconds: 5\n```\n"
        "<!-- test: file real.json\n"
        '{"a": {"b": 1}, "items": [{"x": 1}, {"x": 2, "y": 3}]}\n-->\n'
        '<!-- test: json like=real.json -->\n```json\n{"items": [{"x": 0, "y": 0}]}\n```\n'
        '<!-- test: json like=real.json at=a -->\n```json\n{"c": 1}\n```\n'
    )
    found = blocks(page)
    assert [(b.lang, b.spec.split()[0]) for b in found] == [
        ("hidden", "sh"),
        ("sh", "sh"),
        ("yaml", "profile"),
        ("hidden", "file"),
        ("json", "json"),
        ("json", "json"),
    ]
    box = Sandbox(tmp_path / "box")
    for block in found:
        block.page = ROOT / "page.md"  # for `where`
    for block in found[:5]:
        check_block(block, box)
    with pytest.raises(AssertionError, match=r"not in the real real.json: \['a.c'\]"):
        check_block(found[5], box)


def rook_run_output(text: str) -> list[str]:
    """What a sample of `rook run`'s output shows, its times, its run's id and
    folder and the width of its columns aside."""
    text = re.sub(r"\b\d+\.\d\d\b", "S", text)
    text = re.sub(r"^run \S+: \S+$", "run ID: DIR", text, flags=re.MULTILINE)
    return [" ".join(line.split()) for line in text.strip().splitlines()]


def test_the_getting_started_samples_show_what_rook_run_prints(tmp_path):
    # its samples of `rook run` left out the lines Rook prints after the table (the
    # summary of a failed run, and `run <id>: <path>`, which names where the run is)
    page = DOCS / "getting-started.md"
    box = Sandbox(tmp_path / "sandbox")
    found = blocks(page)
    compared = 0
    for block, after in zip(found, [*found[1:], None], strict=True):
        if block.spec is None:
            continue
        last = block.text.strip().splitlines()[-1]
        if after is None or after.lang != "text" or not last.startswith("rook run"):
            check_block(block, box)
            continue
        printed = box.run(["bash", "-e", "-c", block.text]).stdout
        assert rook_run_output(after.text) == rook_run_output(printed), (
            f"{after.where}: the sample is not what `{last}` prints:\n{printed}"
        )
        compared += 1
    assert compared == 2


def test_every_page_links_only_to_files_that_exist():
    broken = []
    for page in [*DOCS.rglob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]:
        if "examples" in page.relative_to(ROOT).parts[1:2]:
            continue
        text = without_code(page)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():  # on every page (it held only a few of them before)
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


FENCED = re.compile(r"^[ \t]*(?P<f>`{3,}|~{3,})[^\n]*\n.*?^[ \t]*(?P=f)[ \t]*$", re.M | re.S)
"""A fenced block, closed by a fence of its own length (a ```` block may hold ``` lines)."""


def without_code(page: Path) -> str:
    """The page's text without its fenced blocks, whose lines are neither headings nor links."""
    return FENCED.sub("", page.read_text(encoding="utf-8"))


def heading_anchors(page: Path) -> set[str]:
    """The #fragments a page has: its headings as GitHub slugs them (lower case, punctuation
    but ``-`` dropped, spaces as ``-``, a repeated one numbered) and its ``<a id="...">``."""
    text = without_code(page)
    found: set[str] = set(re.findall(r'<a id="([^"]+)"', text))
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def links_to_missing_headings(pages: list[Path]) -> list[str]:
    broken = []
    for page in pages:
        text = without_code(page)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path, _, fragment = target.partition("#")
            if not fragment or re.match(r"^[a-z]+:", target):
                continue
            dest = (page.parent / path).resolve() if path else page
            if dest.suffix == ".md" and dest.is_file() and fragment not in heading_anchors(dest):
                broken.append(
                    f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name} -> {target}"
                )
    return broken


def test_every_link_to_a_heading_finds_it(tmp_path):
    # a link such as running.md#the-run-record keeps working only while the heading it
    # names does: the check above looks at the file alone
    pages = [*DOCS.rglob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    assert links_to_missing_headings([p for p in pages if "examples" not in p.parts]) == []
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## A `--flag`: and more\n\n[ok](#a---flag-and-more) [no](#a-flag)\n")
    assert links_to_missing_headings([page]) == ["page.md -> #a-flag"]
    # a fence quoted in a line of prose (```` ```perl ````) opens no block: the heading after
    # it is found, and so is one after a ```` block holding ``` lines
    page.write_text(
        "# Top\n\nwrite it as ```` ```perl ```` or not\n\n## After it\n\n[ok](#after-it)\n\n"
        "````markdown\n```python\nx = 1\n```\n````\n\n## Then\n\n[ok](#then)\n\n```sh\nls\n```\n"
    )
    assert links_to_missing_headings([page]) == []
