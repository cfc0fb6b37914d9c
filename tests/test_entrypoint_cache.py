"""The cache of discovered ``rook`` entry points (``rook_core/entrypoints.py``).

Every test runs the real ``rook plugins`` in a subprocess with its own
``ROOK_CACHE_DIR``, and installs plugins for real: a folder on ``PYTHONPATH``
holding a module and a ``NAME-VERSION.dist-info`` (``METADATA`` and
``entry_points.txt``), which is an installed distribution as far as
:mod:`importlib.metadata` is concerned, or (one test) wheels installed,
upgraded, reinstalled and uninstalled by pip. ``ROOK_TRACE_PLUGINS`` says
where the entry points came from: ``found N entry points from the cache``
or ``... by scanning distributions``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from rook_core import entrypoints
from rook_core.testing import make_distribution

REPORTER = """
from rook_core.hookspecs import hookimpl


@hookimpl
def rook_register_reporters(register):
    register("{name}", lambda *args, **kwargs: None)
"""


# kept after the test's sites, so the Rook under test is the one these tests import
PYTHONPATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def reporter_module(name: str) -> str:
    return REPORTER.format(name=name)


class Rook:
    """``rook plugins --json`` in a subprocess, with one cache directory and site folders."""

    def __init__(self, tmp_path: Path, *sites: Path) -> None:
        self.cache = tmp_path / "cache"
        self.cwd = tmp_path / "cwd"
        self.cwd.mkdir(exist_ok=True)
        self.sites = list(sites)
        self.env: dict[str, str] = {}

    def environ(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("ROOK_NO_CACHE", "ROOK_LOAD_PLUGINS", "ROOK_DISABLE_PLUGINS", "PYTHONPATH")
        }
        env.update(
            PYTHONPATH=os.pathsep.join([*map(str, self.sites), *PYTHONPATH]),
            **{"ROOK_CACHE_DIR": str(self.cache), "ROOK_TRACE_PLUGINS": "1", **self.env},
            **extra,
        )
        return env

    def plugins(self, python: str = sys.executable, **extra: str) -> tuple[dict, str]:
        """The JSON document and where the entry points came from ("cache"/"scan")."""
        r = self._run([python, "-m", "rook_core", "plugins", "--json"], extra)
        return json.loads(r.stdout), source_of(r.stderr)

    def python(self, code: str, **extra: str) -> str:
        return self._run([sys.executable, "-c", textwrap.dedent(code)], extra).stdout.strip()

    def _run(self, argv: list[str], extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(
            argv, cwd=self.cwd, env=self.environ(**extra), capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 0, r.stderr
        return r

    def entries(self) -> list[Path]:
        return sorted(self.cache.glob("entry-points-*")) if self.cache.exists() else []


def source_of(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("[rook-trace] found ")]
    assert len(lines) == 1, stderr
    if lines[0].endswith("from the cache"):
        return "cache"
    assert lines[0].endswith("by scanning distributions"), lines[0]
    return "scan"


def plugin(doc: dict, name: str) -> dict | None:
    return next((p for p in doc["plugins"] if p["name"] == name), None)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder on PYTHONPATH with one installed distribution: rook-tiny 1.0,
    entry point ``tiny`` (a reporter named ``tiny``)."""
    return make_distribution(
        tmp_path / "site",
        "rook-tiny",
        {"tiny": "rook_tiny_mod"},
        {"rook_tiny_mod.py": reporter_module("tiny")},
        version="1.0",
    )


def test_first_run_scans_and_writes_the_cache_the_second_uses_it(tmp_path, site):
    rook = Rook(tmp_path, site)
    first, source = rook.plugins()
    assert source == "scan"
    assert plugin(first, "tiny") == {
        "name": "tiny",
        "distribution": "rook-tiny",
        "version": "1.0",
        "module": "rook_tiny_mod",
        "hooks": ["rook_register_reporters"],
    }
    assert plugin(first, "script")["distribution"] == "rook-harness", "built-ins load alike"
    assert "tiny" in first["reporters"] and first["failed"] == []
    [entry] = rook.entries()
    written = entry.stat()

    second, source = rook.plugins()
    assert source == "cache"
    assert second == first
    again = entry.stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns), (
        "a hit does not rewrite the cache"
    )


def test_a_warm_cache_does_not_import_importlib_metadata(tmp_path, site):
    rook = Rook(tmp_path, site)
    code = """
        import sys
        from rook_core.plugins import build_plugin_manager
        rook = build_plugin_manager()
        info = rook.infos[0]
        print(info.name, info.distribution, info.version, "importlib.metadata" in sys.modules)
    """
    # only the test's plugin loads, so nothing but discovery could import it
    assert rook.python(code, ROOK_LOAD_PLUGINS="tiny") == "tiny rook-tiny 1.0 True"
    assert rook.python(code, ROOK_LOAD_PLUGINS="tiny") == "tiny rook-tiny 1.0 False"


def test_a_second_distribution_installed_is_seen(tmp_path, site):
    rook = Rook(tmp_path, site)
    rook.plugins()
    assert rook.plugins()[1] == "cache"
    make_distribution(
        site, "rook-more", {"more": "rook_more_mod"}, {"rook_more_mod.py": reporter_module("more")}
    )
    doc, source = rook.plugins()
    assert source == "scan"
    assert plugin(doc, "more")["distribution"] == "rook-more"
    assert plugin(doc, "tiny") is not None
    assert rook.plugins() == (doc, "cache")


def test_a_distribution_removed_is_seen(tmp_path, site):
    rook = Rook(tmp_path, site)
    assert plugin(rook.plugins()[0], "tiny") is not None
    rook.plugins()
    shutil.rmtree(site / "rook_tiny-1.0.dist-info")  # its module stays: not installed any more
    doc, source = rook.plugins()
    assert source == "scan"
    assert plugin(doc, "tiny") is None and "tiny" not in doc["reporters"]


def test_a_version_bump_is_seen(tmp_path, site):
    rook = Rook(tmp_path, site)
    rook.plugins()
    assert plugin(rook.plugins()[0], "tiny")["version"] == "1.0"
    info = site / "rook_tiny-1.0.dist-info"
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rook-tiny\nVersion: 2.0\n", encoding="utf-8"
    )
    info.rename(site / "rook_tiny-2.0.dist-info")
    doc, source = rook.plugins()
    assert (source, plugin(doc, "tiny")["version"]) == ("scan", "2.0")


def test_metadata_edited_in_place_is_seen(tmp_path, site):
    """Not what pip does (it renames the dist-info), but the version shown must
    never be stale."""
    rook = Rook(tmp_path, site)
    rook.plugins()
    rook.plugins()
    (site / "rook_tiny-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rook-tiny\nVersion: 1.1\n", encoding="utf-8"
    )
    doc, source = rook.plugins()
    assert (source, plugin(doc, "tiny")["version"]) == ("scan", "1.1")


def test_entry_points_txt_edited_in_place_is_seen(tmp_path, site):
    rook = Rook(tmp_path, site)
    (site / "rook_extra_mod.py").write_text(reporter_module("extra"), encoding="utf-8")
    (site / "rook_exta2_mod.py").write_text(reporter_module("exta2"), encoding="utf-8")
    rook.plugins()
    assert rook.plugins()[1] == "cache"
    eps = site / "rook_tiny-1.0.dist-info" / "entry_points.txt"
    inode = eps.stat().st_ino
    with open(eps, "a", encoding="utf-8") as fh:  # the same file, a new entry
        fh.write("extra = rook_extra_mod\n")
    assert eps.stat().st_ino == inode
    doc, source = rook.plugins()
    assert source == "scan"
    assert plugin(doc, "extra")["distribution"] == "rook-tiny"
    assert rook.plugins()[1] == "cache"

    # the same size, the same file: only the timestamps tell
    text = eps.read_text(encoding="utf-8")
    with open(eps, "r+", encoding="utf-8") as fh:
        fh.write(text.replace("extra = rook_extra_mod", "exta2 = rook_exta2_mod"))
    assert eps.stat().st_size == len(text) and eps.stat().st_ino == inode
    doc, source = rook.plugins()
    assert source == "scan"
    assert plugin(doc, "extra") is None and plugin(doc, "exta2") is not None
    assert rook.plugins()[1] == "cache"

    # and with the old mtime put back (cp -p, tar, rsync -t do): the ctime tells
    before = eps.stat()
    with open(eps, "r+", encoding="utf-8") as fh:
        fh.write(text)
    os.utime(eps, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = eps.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    doc, source = rook.plugins()
    assert source == "scan"
    assert plugin(doc, "extra") is not None and plugin(doc, "exta2") is None


def test_entry_points_txt_created_in_a_distribution_without_one_is_seen(tmp_path, site):
    rook = Rook(tmp_path, site)
    bare = site / "rook_bare-1.0.dist-info"
    bare.mkdir()
    (bare / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rook-bare\nVersion: 1.0\n", encoding="utf-8"
    )
    (site / "rook_bare_mod.py").write_text(reporter_module("bare"), encoding="utf-8")
    rook.plugins()
    assert plugin(rook.plugins()[0], "bare") is None
    (bare / "entry_points.txt").write_text("[rook]\nbare = rook_bare_mod\n", encoding="utf-8")
    doc, source = rook.plugins()
    assert (source, plugin(doc, "bare")["distribution"]) == ("scan", "rook-bare")


def test_a_change_in_a_folder_trusted_by_its_timestamps_is_seen(tmp_path, site):
    """A folder whose ctime is old enough is not listed again while its stat is
    unchanged; installing into it changes the stat, so it is listed again."""
    settled = site.stat().st_ctime_ns + entrypoints.SETTLED_NS + 200_000_000
    time.sleep(max(0.0, (settled - time.time_ns()) / 1e9))
    rook = Rook(tmp_path, site)
    assert rook.plugins()[1] == "scan"
    assert rook.plugins()[1] == "cache"
    make_distribution(
        site, "rook-late", {"late": "rook_late_mod"}, {"rook_late_mod.py": reporter_module("late")}
    )
    doc, source = rook.plugins()
    assert (source, plugin(doc, "late")["distribution"]) == ("scan", "rook-late")
    shutil.rmtree(site / "rook_late-0.1.0.dist-info")
    doc, source = rook.plugins()
    assert (source, plugin(doc, "late")) == ("scan", None)


def test_a_corrupt_cache_is_ignored_and_rewritten(tmp_path, site):
    rook = Rook(tmp_path, site)
    good, _ = rook.plugins()
    [entry] = rook.entries()
    entry.write_bytes(b"\x80\x05 not a pickle at all")
    doc, source = rook.plugins()
    assert (doc, source) == (good, "scan")
    assert rook.plugins() == (good, "cache"), "rewritten by the scan"
    entry.write_bytes(entry.read_bytes()[:40])  # truncated
    assert rook.plugins() == (good, "scan")


def test_a_cache_others_can_write_is_not_used(tmp_path, site):
    """plugins.md: the cache is used only when no one else can write to it. It is
    unpickled, so an entry file the group or others can write (in a folder they can
    enter) is as untrusted as such a folder."""
    rook = Rook(tmp_path, site)
    good, _ = rook.plugins()
    [entry] = rook.entries()
    for mode in (0o777, 0o770):
        rook.cache.chmod(mode)
        assert rook.plugins() == (good, "scan"), oct(mode)
    rook.cache.chmod(0o755)
    assert rook.plugins() == (good, "cache")
    for mode in (0o666, 0o620):
        entry.chmod(mode)
        assert rook.plugins() == (good, "scan"), oct(mode)
    entry.chmod(0o600)
    assert rook.plugins() == (good, "cache")


def test_a_cached_answer_in_another_layout_is_ignored(tmp_path, site):
    """A readable entry under the right key whose value is not this layout
    (say, written by another Rook version) is scanned again, never trusted."""
    rook = Rook(tmp_path, site)
    rook.cache.mkdir(mode=0o700)
    code = """
        from rook_core import cachedir, entrypoints
        key = entrypoints._key("rook")
        for value in ("nonsense", (["x"], [], []), ([("a", "b")], [], [None] * 99)):
            cachedir.save(entrypoints.cache_name(), key, value)
            found = entrypoints.discover("rook")
            assert not found.from_cache, value
            assert ("tiny", "rook_tiny_mod") in {(e.name, e.value) for e in found.entry_points}
        print(entrypoints.discover("rook").from_cache)
    """
    assert rook.python(code) == "True"


def test_nothing_is_cached_when_another_finder_reports_distributions(tmp_path, site):
    """A finder that reports distributions from somewhere other than the
    sys.path folders (a zip app, an embedded interpreter) cannot be checked
    by stats: every start scans, and nothing is written."""
    rook = Rook(tmp_path, site)
    code = """
        import sys
        from rook_core import entrypoints

        class Elsewhere:
            def find_spec(self, *args, **kwargs):
                return None

            def find_distributions(self, context=None):
                return iter(())

        sys.meta_path.append(Elsewhere())
        print([entrypoints.discover("rook").from_cache for _ in range(2)])
    """
    assert rook.python(code) == "[False, False]"
    assert rook.entries() == []


def test_the_importlib_metadata_backport_finder_keeps_the_cache(tmp_path, site):
    """Packages such as dask import the importlib_metadata backport, which puts
    its own sys.path finder on sys.meta_path: the cache stays in use."""
    pytest.importorskip("importlib_metadata")
    rook = Rook(tmp_path, site)
    code = """
        import sys
        import importlib_metadata
        from rook_core import entrypoints
        print([entrypoints.discover("rook").from_cache for _ in range(2)])
    """
    assert rook.python(code) == "[False, True]"


def test_rook_no_cache_neither_reads_nor_writes(tmp_path, site):
    rook = Rook(tmp_path, site)
    doc, source = rook.plugins(ROOK_NO_CACHE="1")
    assert source == "scan" and plugin(doc, "tiny") is not None
    assert rook.entries() == []
    rook.plugins()
    assert rook.plugins()[1] == "cache"
    assert rook.plugins(ROOK_NO_CACHE="1")[1] == "scan"


def _plugins_said(rook: Rook, **extra: str) -> tuple[str, str]:
    """Where ``rook plugins`` found the entry points, and what it said on standard error."""
    r = rook._run([sys.executable, "-m", "rook_core", "plugins", "--json"], extra)
    json.loads(r.stdout)  # the one document, warning or not
    return source_of(r.stderr), r.stderr


def test_rook_no_cache_takes_true_and_false_words_and_names_any_other_value(tmp_path, site):
    """running.md: ROOK_NO_CACHE=1 (true, yes, on) turns the cache off, 0 (false, no, off,
    empty) leaves it on. Any value but "" and "0" turned it off without a word, so
    ROOK_NO_CACHE=false turned it off, and ROOK_NO_CACHE=maybe said nothing."""
    rook = Rook(tmp_path, site)
    rook.plugins()  # the cache written
    for word in ("0", "false", "No", "OFF", ""):
        source, said = _plugins_said(rook, ROOK_NO_CACHE=word)
        assert (source, "warning" in said) == ("cache", False), (word, said)
    for word in ("1", "true", "YES", "on"):
        source, said = _plugins_said(rook, ROOK_NO_CACHE=word)
        assert (source, "warning" in said) == ("scan", False), (word, said)
    source, said = _plugins_said(rook, ROOK_NO_CACHE="maybe")
    assert source == "scan", said  # off, as any value not false turned it off before
    assert said.count("rook: warning: ROOK_NO_CACHE='maybe' is neither") == 1, said
    assert "runs without its cache" in said, said


def test_rook_trace_plugins_takes_the_same_true_and_false_words(tmp_path, site):
    """running.md: ROOK_TRACE_PLUGINS reads its value as ROOK_NO_CACHE does (one
    helper, errors.switch_on). Any value but "" and "0" turned tracing on without a
    word, so ROOK_TRACE_PLUGINS=false traced, and ROOK_TRACE_PLUGINS=maybe said nothing."""
    rook = Rook(tmp_path, site)

    def said(word: str) -> str:
        rook.env = {"ROOK_TRACE_PLUGINS": word}
        return rook._run([sys.executable, "-m", "rook_core", "plugins", "--json"], {}).stderr

    for word in ("0", "false", "No", " OFF ", ""):
        assert said(word) == "", word
    for word in ("1", "true", "YES", "on"):
        text = said(word)
        assert "[rook-trace] found " in text and "warning" not in text, (word, text)
    text = said("maybe")
    assert "[rook-trace] found " in text, text  # on, as any value not false was before
    assert text.count("rook: warning: ROOK_TRACE_PLUGINS='maybe' is neither true") == 1, text
    assert "Rook traces every hook call, as for 1" in text, text


def test_a_cache_dir_that_is_a_file_is_named_and_the_cache_is_off(tmp_path, site):
    """running.md: a ROOK_CACHE_DIR naming a file (not a directory) was ignored without
    a word: nothing cached, every command scanning. It is a warning naming the
    variable, once, and the command runs without the cache; the file is left alone."""
    rook = Rook(tmp_path, site)
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for _ in range(2):
        rook.env = {"ROOK_CACHE_DIR": str(afile)}
        source, said = _plugins_said(rook)
        assert source == "scan", said
        assert said.count(f"rook: warning: ROOK_CACHE_DIR={str(afile)!r} is a file") == 1, said
        assert "runs without its cache" in said, said
    assert afile.read_text() == "mine\n"
    assert not list(tmp_path.glob(".entry-points*")), "nothing written beside it"


def test_a_cache_dir_others_can_write_is_named_and_the_cache_is_off(tmp_path, site):
    """A ROOK_CACHE_DIR the group or others can write was passed over without a word
    (its entries are pickles), as one naming a file was: every command scanned, and the
    user who chose it never knew. It is a warning naming the variable, once, saying
    why and what to do; mode 0755 is fine, and the default folder is never named."""
    rook = Rook(tmp_path, site)
    rook.plugins()  # the cache written
    for mode in (0o777, 0o770):
        rook.cache.chmod(mode)
        source, said = _plugins_said(rook)
        assert source == "scan", said
        assert said.count("rook: warning: ROOK_CACHE_DIR=") == 1, said
        assert (
            f"rook: warning: ROOK_CACHE_DIR={str(rook.cache)!r} can be written by "
            f"{'others' if mode & 0o002 else 'its group'}: Rook reads its cache (pickles) only "
            "from a folder no one else can write to, so it runs without its cache "
            f"(chmod go-w {shlex.quote(str(rook.cache))}, or name another folder)"
        ) in said, said
    rook.cache.chmod(0o755)
    source, said = _plugins_said(rook)
    assert (source, "warning" in said) == ("cache", False), said


def test_a_broken_plugin_from_the_cache_is_a_failure_with_its_distribution(tmp_path):
    site = make_distribution(
        tmp_path / "site",
        "rook-mixed",
        {
            "good": "rook_mixed_good",
            "broken": "rook_mixed_broken",
            "byattr": "rook_mixed_good:holder.plugin",
            "noattr": "rook_mixed_good:holder.missing",
            "missing": "rook_mixed_nowhere",
        },
        {
            "rook_mixed_good.py": reporter_module("good")
            + textwrap.dedent(
                """

                class _Plugin:
                    @hookimpl
                    def rook_register_reporters(self, register):
                        register("byattr", lambda *args, **kwargs: None)


                class holder:
                    plugin = _Plugin()
                """
            ),
            "rook_mixed_broken.py": "raise RuntimeError('this plugin is broken')\n",
        },
        version="3.1",
    )
    rook = Rook(tmp_path, site)
    first, source = rook.plugins()
    second, again = rook.plugins()
    assert (source, again) == ("scan", "cache")
    assert second == first
    failed = {f["name"]: f for f in second["failed"]}
    assert failed["broken"] == {
        "name": "broken",
        "distribution": "rook-mixed",
        "error": "RuntimeError: this plugin is broken",
    }
    assert failed["noattr"]["distribution"] == "rook-mixed"
    assert failed["noattr"]["error"].startswith("AttributeError:")
    assert failed["missing"]["error"].startswith("ModuleNotFoundError:")
    assert plugin(second, "good")["version"] == "3.1"
    assert plugin(second, "byattr")["module"] == "rook_mixed_good:holder.plugin"
    assert {"good", "byattr"} <= set(second["reporters"])
    assert plugin(second, "script") is not None, "the rest still loads"


def test_order_duplicates_and_switches_are_kept_with_the_cache(tmp_path):
    """The first distribution on sys.path wins a duplicated entry point name,
    from the cache as from a scan; the switches apply to cached entry points."""
    first = make_distribution(
        tmp_path / "first",
        "rook-first",
        {"dup": "rook_dup_first"},
        {"rook_dup_first.py": reporter_module("from-first")},
    )
    second = make_distribution(
        tmp_path / "second",
        "rook-second",
        {"dup": "rook_dup_second", "other": "rook_other_mod"},
        {
            "rook_dup_second.py": reporter_module("from-second"),
            "rook_other_mod.py": reporter_module("other"),
        },
    )
    rook = Rook(tmp_path, first, second)
    for expected in ("scan", "cache"):
        doc, source = rook.plugins()
        assert source == expected
        assert plugin(doc, "dup")["distribution"] == "rook-first"
        assert "from-first" in doc["reporters"] and "from-second" not in doc["reporters"]
        names = [p["name"] for p in doc["plugins"]]
        assert names == sorted(names)
    doc, source = rook.plugins(ROOK_DISABLE_PLUGINS="dup")
    assert source == "cache" and plugin(doc, "dup") is None and plugin(doc, "other")
    doc, source = rook.plugins(ROOK_LOAD_PLUGINS="other,script")
    assert source == "cache"
    assert [p["name"] for p in doc["plugins"]] == ["other", "script"]


@pytest.mark.parametrize(
    "value",
    ["json", "json:dumps", "os:path.join", "os.path : join", "json:dumps [extra]", "json [x]"],
)
def test_loading_resolves_like_importlib_metadata(value):
    ep = metadata.EntryPoint(name="x", value=value, group="rook")
    assert entrypoints.FoundEntryPoint("x", value, "", "").load() is ep.load()


def test_a_malformed_value_fails_to_load():
    with pytest.raises(ValueError, match="malformed entry point value"):
        entrypoints.FoundEntryPoint("x", "not a value!", "", "").load()


# ---------------------------------------------------------------------------
# pip itself: install, upgrade, reinstall, uninstall
# ---------------------------------------------------------------------------


def wheel(folder: Path, version: str, eps: dict[str, str]) -> Path:
    """A real wheel of ``rook-wheeled`` (built by hand: no build backend needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rook_wheeled-{version}-py3-none-any.whl"
    info = f"rook_wheeled-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("rook_wheeled/__init__.py", reporter_module("wheeled"))
        zf.writestr("rook_wheeled/other.py", reporter_module("wheeled-other"))
        zf.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: rook-wheeled\nVersion: {version}\n"
        )
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(
            f"{info}/entry_points.txt",
            "[rook]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()),
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A virtual environment into which pip installs, that sees this Rook and its
    dependencies (the site folders of the environment running the tests, added
    by a ``.pth`` file so their own ``.pth`` files, an editable install's, work:
    a venv's "system site packages" are the base interpreter's, which need not
    have Rook); its python."""
    where = tmp_path / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot make a virtual environment here: {made.stderr.strip()[-300:]}")
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    lines = [f"import site; site.addsitedir({d!r})" for d in ours]
    (Path(purelib) / "_rook_under_test.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python


OFFLINE = ("--no-deps", "--no-index")


def pip(python: Path, *args: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"},
    )
    if r.returncode != 0 and "no such option: --python" in r.stderr:
        pytest.skip("this pip cannot install into another environment (--python)")
    assert r.returncode == 0, r.stderr


def test_pip_install_upgrade_reinstall_and_uninstall_are_seen(tmp_path, venv):
    rook = Rook(tmp_path)
    python = str(venv)
    wheels = tmp_path / "wheels"
    assert plugin(rook.plugins(python)[0], "wheeled") is None
    assert rook.plugins(python)[1] == "cache"

    pip(venv, "install", *OFFLINE, str(wheel(wheels / "a", "1.0", {"wheeled": "rook_wheeled"})))
    doc, source = rook.plugins(python)
    assert (source, plugin(doc, "wheeled")["version"]) == ("scan", "1.0")
    assert rook.plugins(python)[1] == "cache"

    pip(venv, "install", *OFFLINE, str(wheel(wheels / "b", "2.0", {"wheeled": "rook_wheeled"})))
    doc, source = rook.plugins(python)
    assert (source, plugin(doc, "wheeled")["version"]) == ("scan", "2.0")
    assert rook.plugins(python)[1] == "cache"

    # the same version again, now with a second entry point
    eps = {"wheeled": "rook_wheeled", "wheeled2": "rook_wheeled.other"}
    pip(venv, "install", *OFFLINE, "--force-reinstall", str(wheel(wheels / "c", "2.0", eps)))
    doc, source = rook.plugins(python)
    assert source == "scan"
    assert plugin(doc, "wheeled2")["distribution"] == "rook-wheeled"
    assert rook.plugins(python)[1] == "cache"

    pip(venv, "uninstall", "-y", "rook-wheeled")
    doc, source = rook.plugins(python)
    assert source == "scan"
    assert plugin(doc, "wheeled") is None and plugin(doc, "wheeled2") is None
