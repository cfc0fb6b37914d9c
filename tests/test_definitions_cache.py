"""The cache of validated definitions (rook_core/definitions.py): a run whose
scenario and profile files are unchanged does not validate them again, and
every change to them, to the plugins or to the cache itself is seen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rook_core.testing import Workspace

HOOK = """\
#!/bin/sh
goal=$(cat)
printf '{"output": "echo: %s"}\\n' "$goal"
"""

# Runs `rook run` in a fresh interpreter and reports whether the validating
# modules (marshmallow schemas of scenarios and profiles) had to be imported.
PROBE = """
import sys
from rook_core.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="rook")
except SystemExit as exc:
    code = exc.code
print(f"validated={'rook_core.scenario' in sys.modules},"
      f"{'rook_core.profile' in sys.modules}", file=sys.stderr)
print(f"parsed={'yaml' in sys.modules}", file=sys.stderr)  # PyYAML imported at all
sys.exit(code)
"""


def settle() -> None:
    """Files written less than a clock tick ago are (rightly) never cached."""
    time.sleep(0.06)


def setup_agent(ws: Workspace, goal: str = "aaa") -> None:
    ws.script("agent.sh", HOOK)
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}})
    ws.scenario({"id": "s1", "goal": goal, "criteria": [{"contains": goal}]}, name="s1")
    settle()


def rook(ws: Workspace, cache: Path, *args: str, env: dict[str, str] | None = None):
    full_env = {**os.environ, "ROOK_CACHE_DIR": str(cache), **(env or {})}
    argv = ["run", "--workspace", str(ws.root), "--json", *args]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=full_env
    )
    validated = next(
        (ln.split("=", 1)[1] for ln in proc.stderr.splitlines() if ln.startswith("validated=")),
        "?",
    )
    report = json.loads(proc.stdout) if proc.returncode in (0, 1) and proc.stdout else None
    return proc, validated, report


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return d


def test_second_run_uses_the_cache_and_edits_are_seen(rook_workspace, cache):
    ws = rook_workspace
    setup_agent(ws)
    proc, validated, report = rook(ws, cache)
    assert proc.returncode == 0, proc.stderr
    assert validated == "True,True"
    assert list(cache.iterdir()), "the first run writes the cache"

    proc, validated, report = rook(ws, cache)
    assert proc.returncode == 0, proc.stderr
    assert validated == "False,False", "nothing changed: nothing validated"
    assert "parsed=False" in proc.stderr, "nothing changed: PyYAML is not even imported"
    assert report["summary"]["passed"] == 1

    # Same size, new content: the scenario is validated again and its new goal runs.
    ws.scenario({"id": "s1", "goal": "bbb", "criteria": [{"contains": "bbb"}]}, name="s1")
    settle()
    proc, validated, report = rook(ws, cache)
    assert proc.returncode == 0, proc.stderr
    assert validated == "True,False"
    assert report["summary"]["passed"] == 1

    # Content changed but the old modification time put back (cp -p, some
    # checkouts): the change time still differs, so it is seen.
    path = ws.agent_dir / "scenarios" / "s1.yaml"
    st = path.stat()
    text = path.read_text()
    assert "goal: bbb" in text
    path.write_text(text.replace("goal: bbb", "goal: ccc"))  # the criterion still wants bbb
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    settle()
    proc, validated, report = rook(ws, cache)
    assert validated == "True,False"
    assert proc.returncode == 1, proc.stderr
    assert report["summary"]["failed"] == 1


def test_profile_edit_and_new_and_deleted_scenarios_are_seen(rook_workspace, cache):
    ws = rook_workspace
    setup_agent(ws)
    assert rook(ws, cache)[0].returncode == 0
    ws.scenario({"id": "s2", "goal": "two", "criteria": [{"contains": "two"}]}, name="s2")
    ws.profile({"id": "p", "hooks": {"execute": "scripts/agent.sh"}, "concurrency": 2})
    settle()
    proc, validated, report = rook(ws, cache)
    assert proc.returncode == 0, proc.stderr
    assert sorted(s["id"] for s in report["scenarios"]) == ["s1", "s2"]
    (ws.agent_dir / "scenarios" / "s2.yaml").unlink()
    proc, validated, report = rook(ws, cache)
    assert validated == "False,False"
    assert [s["id"] for s in report["scenarios"]] == ["s1"]


def test_an_invalid_file_is_reported_every_time(rook_workspace, cache):
    ws = rook_workspace
    setup_agent(ws)
    ws.scenario({"id": "bad", "goal": "x", "criteria": [{"nonsense": 1}]}, name="bad")
    settle()
    for _ in range(2):
        proc, validated, _ = rook(ws, cache)
        assert proc.returncode == 2
        assert "bad.yaml" in proc.stderr and "nonsense" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_change_in_the_plugins_revalidates(rook_workspace, cache):
    """The cached scenario uses `contains`; without the plugin that defines it the
    same unchanged file is an error, not a cached success."""
    ws = rook_workspace
    setup_agent(ws)
    assert rook(ws, cache)[0].returncode == 0
    proc, validated, _ = rook(ws, cache, env={"ROOK_DISABLE_PLUGINS": "criteria"})
    assert proc.returncode == 2, proc.stderr
    assert "unknown criterion type" in proc.stderr
    proc, validated, _ = rook(ws, cache)  # the entry made with the plugin is valid again
    assert proc.returncode == 0 and validated.startswith("False,")


EXTRA = """
from rook_core.hookspecs import hookimpl


@hookimpl
def rook_register_reporters(register):
    register("extra", lambda report, path: path.write_text("extra"))
"""


PICKY = """
import time
from marshmallow import ValidationError
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec


def load_config(value):
    if value == "loud":
        raise ValidationError("must be 'quiet'")
    return value


async def answer(call):
    now = time.time()
    return HookResult("execute", "ok", 0.0, now, now, data={"output": call.stdin})


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="picky", load_config=load_config))


@hookimpl
def rook_transport_execute(call):
    return answer(call) if call.entry.transport == "picky" else None
"""


def test_an_edit_of_a_transport_plugins_code_revalidates_its_profiles(
    rook_workspace, cache, tmp_path
):
    """transport.md: a profile validated by a transport's load_config is kept in the
    cache until the file or the plugin's code changes: an edited plugin (an editable
    install) judges the unchanged profile again."""
    from rook_core.testing import make_distribution

    ws = rook_workspace
    setup_agent(ws)
    ws.profile({"id": "p", "hooks": {"execute": {"picky": "loud"}}})
    site = make_distribution(
        tmp_path / "site", "rook-picky", {"picky": "rook_picky"}, {"rook_picky.py": PICKY}
    )
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    proc = rook(ws, cache, env=env)[0]
    assert proc.returncode == 2 and "hooks.execute.picky: must be 'quiet'" in proc.stderr
    plugin = site / "rook_picky.py"
    plugin.write_text(plugin.read_text().replace('value == "loud"', 'value == "shrill"'))
    settle()
    proc, validated, report = rook(ws, cache, env=env)
    assert proc.returncode == 0 and validated.startswith("True"), proc.stderr
    assert rook(ws, cache, env=env)[1].startswith("False")  # and cached from then on
    plugin.write_text(plugin.read_text().replace('value == "shrill"', 'value == "loud"'))
    settle()
    proc = rook(ws, cache, env=env)[0]
    assert proc.returncode == 2 and "hooks.execute.picky: must be 'quiet'" in proc.stderr


def test_two_installs_sharing_the_cache_keep_their_own_entries(rook_workspace, cache, tmp_path):
    """Two installs of Rook (two virtual environments, one with another plugin)
    sharing ~/.cache/rook: each overwrote the other's entry for the same files,
    so every run of either validated everything again."""
    from rook_core.testing import make_distribution

    ws = rook_workspace
    setup_agent(ws)
    site = make_distribution(
        tmp_path / "site", "rook-extra", {"extra": "rook_extra"}, {"rook_extra.py": EXTRA}
    )
    other = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    assert rook(ws, cache)[1] == "True,True"
    assert rook(ws, cache, env=other)[1] == "True,True"
    for _ in range(2):
        assert rook(ws, cache)[1] == "False,False"
        assert rook(ws, cache, env=other)[1] == "False,False"
    # one entry per install and file or folder, rewritten in place: the cache stays small
    names = sorted(f.name.split("-")[0] for f in cache.iterdir())
    assert names.count("profile") == 2 and names.count("scenarios") == 2, names


def test_corrupt_untrusted_or_disabled_cache_is_not_used(rook_workspace, cache):
    ws = rook_workspace
    setup_agent(ws)
    assert rook(ws, cache)[0].returncode == 0
    for f in cache.iterdir():
        f.write_bytes(b"\x80\x04not a pickle")
    proc, validated, _ = rook(ws, cache)
    assert proc.returncode == 0 and validated == "True,True"

    for mode in (0o777, 0o770):  # writable by others or the group: never loaded
        cache.chmod(mode)
        proc, validated, _ = rook(ws, cache)
        assert proc.returncode == 0 and validated == "True,True"
    cache.chmod(0o755)  # readable by others, writable only by its owner: used
    proc, validated, _ = rook(ws, cache)
    assert proc.returncode == 0 and validated == "False,False"
    cache.chmod(0o700)

    off = cache.parent / "off"
    proc, validated, _ = rook(ws, off, env={"ROOK_NO_CACHE": "1"})
    assert proc.returncode == 0 and validated == "True,True"
    assert not off.exists()


def test_unwritable_cache_dir_still_runs(rook_workspace, tmp_path):
    ws = rook_workspace
    setup_agent(ws)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    proc, validated, report = rook(ws, blocked / "cache")
    assert proc.returncode == 0, proc.stderr
    assert report["summary"]["passed"] == 1


def test_entries_not_written_for_30_days_are_pruned(rook_workspace, cache):
    ws = rook_workspace
    setup_agent(ws)
    old, recent = cache / "scenarios-gone", cache / "profile-recent"
    for f in (old, recent):
        f.write_bytes(b"x")
    long_ago = time.time() - 31 * 24 * 3600
    os.utime(old, (long_ago, long_ago))
    proc, _, _ = rook(ws, cache)  # validates, so it writes entries (and prunes)
    assert proc.returncode == 0, proc.stderr
    assert not old.exists() and recent.exists()


def test_without_a_home_the_cache_never_lands_in_the_current_directory(rook_workspace):
    """A relative XDG_CACHE_HOME (which the XDG spec says to ignore), or no home
    at all (HOME unset and a uid with no passwd entry, as in a container run as
    an arbitrary user), never puts the cache into the directory Rook runs in
    (the workspace, in CI): ``./rel/rook`` or a literal ``./~/.cache/rook``."""
    ws = rook_workspace
    setup_agent(ws)
    env = {k: v for k, v in os.environ.items() if k not in ("ROOK_CACHE_DIR", "HOME")}
    argv = [sys.executable, "-m", "rook_core", "run", "--json"]
    proc = subprocess.run(argv, cwd=ws.root, capture_output=True, text=True,
                          env={**env, "XDG_CACHE_HOME": "rel", "HOME": str(ws.root / "home")})
    assert proc.returncode == 0, proc.stderr
    assert not (ws.root / "rel").exists()
    assert (ws.root / "home" / ".cache" / "rook").is_dir()  # the home's, as without it
    # no home: run as a uid that has no passwd entry (a user namespace maps us to it)
    unshare = ["unshare", "--user", "--map-user=54321", "--map-group=54321"]
    try:
        probe = subprocess.run([*unshare, "true"], capture_output=True)
    except FileNotFoundError:
        pytest.skip("no unshare")
    if probe.returncode:
        pytest.skip("user namespaces are not available here")
    proc = subprocess.run([*unshare, *argv], cwd=ws.root, capture_output=True, text=True,
                          env={k: v for k, v in env.items() if k != "XDG_CACHE_HOME"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["passed"] == 1
    assert not (ws.root / "~").exists()
