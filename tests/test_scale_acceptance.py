"""Acceptance checks of SPEC §1 and §11 that single-feature tests miss: combinations.

* shards under a selection (``--only`` with ``--tag``, ``--repeat``), planned on
  machines whose scenario files were written in another order and that run in
  another locale, merged from copied folders: the union is the selection, with no
  overlap, and the merged run reads as the unsharded one in ``rook runs``,
  ``runs show``, ``report`` and ``diff``;
* the profile's secrets never reach a shard's or a merged run's files, nor what
  ``rook merge`` says of a missing shard or a partial merge;
* a third-party transport pip-installed from a wheel works in a profile by its key
  with no other step, ``rook plugins`` lists it with its distribution, and once
  uninstalled a profile using its key is an exit-2 error naming the installed
  transports.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from rook_core.testing import Workspace

SECRET = "tok-acceptance-5f1e9a"

AGENT = r"""
#!/bin/bash
case "$1" in
  prepare) echo "prepare $API_TOKEN" >&2; exit 0 ;;
  execute) goal=$(cat)
           echo "execute with $API_TOKEN" >&2
           printf '{"output": "answer to %s, key %s"}\n' "$goal" "$API_TOKEN" ;;
esac
exit 0
"""

# scenario id -> (file name, tags, repeat, criterion); the file names sort in
# another order than the ids, some are not ASCII, and upper case sorts first
SCENARIOS: dict[str, tuple[str, list[str], int, str]] = {
    "zeta": ("Zeta", ["smoke"], 2, "answer"),
    "alpha": ("alpha", ["slow"], 1, "answer"),
    "olcu": ("ölçü", ["smoke"], 1, "answer"),
    "eclair": ("Éclair", ["slow"], 1, "answer"),
    "b-2": ("b-2", ["smoke"], 1, "nope"),  # fails on purpose
    "b-10": ("B-10", ["smoke", "slow"], 3, "answer"),
    "n1": ("日本", ["smoke"], 1, "answer"),
}


def make_workspace(root: Path, reverse: bool = False) -> Workspace:
    ws = Workspace(root)
    ws.script("agent.sh", AGENT)
    ws.profile(
        {
            "id": "p",
            "hooks": {"prepare": "scripts/agent.sh", "execute": "scripts/agent.sh"},
            "env": [{"variable": "API_TOKEN", "purpose": "the agent's token"}],
        }
    )
    items = list(SCENARIOS.items())
    for sid, (name, tags, repeat, word) in reversed(items) if reverse else items:
        ws.scenario(
            {"id": sid, "goal": f"q {sid}", "tags": tags, "repeat": repeat,
             "criteria": [{"contains": word}]},
            name=name,
        )
    return ws


def rook(ws: Workspace, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``rook`` command, in a subprocess (its own locale and hash seed)."""
    return subprocess.run(
        [sys.executable, "-m", "rook_core", *args, "-w", str(ws.root)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "API_TOKEN": SECRET, **env},
    )


def keys(report: dict[str, Any]) -> list[str]:
    return [f"{s['id']}.{s['repeat_index']}" for s in report["scenarios"]]


def without_ids_and_times(text: str, *run_ids: str) -> str:
    for run_id in run_ids:
        text = text.replace(run_id, "RUN")
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "TIME", text)
    return re.sub(r"\b\d+\.\d\d( s)?\b", "SECONDS", text)


def all_text(root: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace")
        for p in sorted(root.rglob("*"))
        if p.is_file() and "scripts" not in p.parts
    )


SELECTION = ["--only", "zeta,alpha,b-2,b-10,eclair", "--tag", "smoke"]


def test_shards_of_a_selection_join_one_run_with_the_flags_that_made_it(tmp_path):
    """``--only A,B --tag T`` where ``--tag`` leaves some of ``--only`` out: the
    first shard planned the run, and every later shard, given the very same
    flags, was refused (``--only: no scenario with id ...``, exit 2), checked
    against the run's plan instead of the workspace; so was a CI retry
    (``--run-name`` again) resuming the run."""
    ws = make_workspace(tmp_path / "ws")
    for i in (1, 2, 3):
        r = rook(ws, "run", *SELECTION, "--shard", f"{i}/3", "--run-name", "ci-9", "-q")
        assert r.returncode in (0, 1), (i, r.stderr)
    merged = rook(ws, "merge", "--run", "ci-9", "--json")
    assert merged.returncode == 1, merged.stderr  # b-2 fails on purpose
    assert sorted(keys(json.loads(merged.stdout))) == [
        "b-10.1", "b-10.2", "b-10.3", "b-2.1", "zeta.1", "zeta.2"
    ]
    # a retry of an unsharded run by its name, with the flags that made it
    first = rook(ws, "run", *SELECTION, "--run-name", "retry-1", "--phases",
                 "prepare,open,execute,close")
    assert first.returncode == 0, first.stderr
    again = rook(ws, "run", *SELECTION, "--run-name", "retry-1", "--phases", "collect,judge")
    assert again.returncode == 1, again.stderr
    # an --only id that exists nowhere is still refused, naming it
    bad = rook(ws, "run", "--only", "zeta,nosuch", "--tag", "smoke", "--run-name", "ci-9",
               "--shard", "1/3")
    assert bad.returncode == 2 and "no scenario with id nosuch" in bad.stderr, bad.stderr


def test_shards_planned_anywhere_merge_into_the_unsharded_run(tmp_path):
    """Shards on three machines (files written in another order, another locale
    and hash seed), under ``--only``/``--tag`` and ``--repeat``, joined from copied
    folders: one run that ``rook runs``, ``runs show``, ``report`` and ``diff``
    show as the unsharded run; no secret in any file or message; a missing shard
    refused, then merged with ``--partial``."""
    main = make_workspace(tmp_path / "main")
    selection = ["--tag", "smoke", "--only", "zeta,b-2,b-10,n1,alpha", "--repeat", "2"]
    whole_run = rook(main, "run", *selection, "--json")
    assert whole_run.returncode == 1, whole_run.stderr
    whole = json.loads(whole_run.stdout)
    assert sorted(keys(whole)) == sorted(
        f"{s}.{k}" for s in ("zeta", "b-2", "b-10", "n1") for k in (1, 2)
    )
    machines = [make_workspace(tmp_path / f"m{i}", reverse=i % 2 == 1) for i in (1, 2, 3)]
    settings = [{"LC_ALL": "C"}, {"LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "3"}, {"LANG": "tr_TR"}]
    said = whole_run.stderr
    shards = []
    for i, (ws, env) in enumerate(zip(machines, settings, strict=True), start=1):
        r = rook(ws, "run", *selection, "--shard", f"{i}/3", "--run-name", "night", "--json", **env)
        assert r.returncode in (0, 1), r.stderr
        shards.append(keys(json.loads(r.stdout)))
        said += r.stdout + r.stderr
    got = [k for part in shards for k in part]
    assert sorted(got) == sorted(keys(whole)) and len(got) == len(set(got))
    from rook_core.sharding import partition

    assert [sorted(p) for p in partition(keys(whole), 3)] == [sorted(p) for p in shards]

    dirs = [str(ws.run_dir("night")) for ws in machines]
    missing = rook(main, "merge", *dirs[:2])
    assert missing.returncode == 2 and "shard 3/3" in missing.stderr, missing.stderr
    partial = rook(main, "merge", *dirs[:2], "--partial", "--into", str(tmp_path / "part"))
    assert partial.returncode == 1 and "pending" in partial.stderr, partial.stderr
    said += missing.stderr + partial.stdout + partial.stderr

    merged = rook(main, "merge", *dirs, "--json")
    assert merged.returncode == whole_run.returncode, merged.stderr
    said += merged.stdout + merged.stderr
    assert keys(json.loads(merged.stdout)) == keys(whole)
    run_ids = (whole["run"]["id"], "night")
    listed = rook(main, "runs")
    rows = {ln.split()[0]: ln.split(None, 1)[1] for ln in listed.stdout.splitlines()[2:] if ln}
    assert without_ids_and_times(rows["night"], *run_ids) == without_ids_and_times(
        rows[whole["run"]["id"]], *run_ids
    )
    for command in (["runs", "show"], ["report"]):
        a, b = (rook(main, *command, run_id) for run_id in run_ids)
        assert a.returncode == b.returncode == 0, a.stderr + b.stderr
        assert without_ids_and_times(a.stdout, *run_ids) == without_ids_and_times(
            b.stdout, *run_ids
        )
        said += a.stdout + a.stderr + b.stdout + b.stderr
    out = tmp_path / "reports"
    for run_id in run_ids:
        r = rook(main, "report", run_id, "--report", f"markdown:{out}/{run_id}.md")
        assert r.returncode == 0, r.stderr
    assert without_ids_and_times((out / "night.md").read_text(), *run_ids) == (
        without_ids_and_times((out / f"{whole['run']['id']}.md").read_text(), *run_ids)
    )
    d = rook(main, "diff", *run_ids, "--json")
    assert d.returncode == 0, d.stderr
    diff = json.loads(d.stdout)
    assert diff["regressed"] == [] and diff.get("improved", []) == []

    assert SECRET not in said
    assert "[redacted:API_TOKEN]" in merged.stdout
    for root in (tmp_path / "main", tmp_path / "part", *(ws.root for ws in machines), out):
        assert SECRET not in all_text(root), root


# -- a transport installed for real, then uninstalled ---------------------------------

ECHO = '''
from rook_core.hookspecs import hookimpl
from rook_core.models import HookResult
from rook_core.transports import TransportSpec


@hookimpl
def rook_register_transports(register):
    register(TransportSpec(key="echo", load_config=lambda v: {"prefix": str(v)},
                           description="says the goal back"))


@hookimpl
def rook_transport_execute(call):
    if call.entry.transport != "echo":
        return None

    async def run():
        return HookResult("execute", "ok", data={"output": call.entry.config["prefix"] + call.stdin})

    return run()
'''


def echo_wheel(folder: Path) -> Path:
    """A real wheel of ``rook-echo`` 0.3 (entry point ``echo`` in group ``rook``),
    built by hand: no build backend or index needed."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rook_echo-0.3-py3-none-any.whl"
    info = "rook_echo-0.3.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("rook_echo/__init__.py", ECHO)
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: rook-echo\nVersion: 0.3\n")
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/entry_points.txt", "[rook]\necho = rook_echo\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


def test_a_transport_pip_installed_works_by_its_key_and_uninstalled_is_named(tmp_path):
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                          capture_output=True, text=True, timeout=120)
    if made.returncode != 0:
        pytest.skip(f"cannot make a virtual environment here: {made.stderr.strip()[-300:]}")
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (Path(purelib) / "_rook_under_test.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in ours), encoding="utf-8"
    )

    def pip(*args: str) -> None:
        r = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), *args],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"},
        )
        if r.returncode != 0 and "no such option: --python" in r.stderr:
            pytest.skip("this pip cannot install into another environment (--python)")
        assert r.returncode == 0, r.stderr

    ws = Workspace(tmp_path / "ws")
    ws.profile({"id": "p", "hooks": {"execute": {"echo": "said: "}}})
    ws.scenario({"id": "s", "goal": "hello", "criteria": [{"contains": "said: hello"}]})

    def rook_in_venv(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
        env["ROOK_CACHE_DIR"] = str(tmp_path / "cache")  # pip's changes are seen through it
        return subprocess.run([str(python), "-m", "rook_core", *args], cwd=ws.root,
                              capture_output=True, text=True, timeout=120, env=env)

    pip("install", "--no-deps", "--no-index", str(echo_wheel(tmp_path / "wheels")))
    r = rook_in_venv("run", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["scenarios"][0]["turns"][0]["output"] == "said: hello"
    listed = json.loads(rook_in_venv("plugins", "--json").stdout)
    echo = next(p for p in listed["plugins"] if p["name"] == "echo")
    assert (echo["distribution"], echo["version"]) == ("rook-echo", "0.3")
    assert "echo" in listed["transports"]

    pip("uninstall", "-y", "rook-echo")
    before = sorted(ws.runs_dir.iterdir())
    r = rook_in_venv("run")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "hooks.execute.echo: unknown transport key; installed transports: " in r.stderr
    installed = r.stderr.split("installed transports: ")[1].split("\n")[0]
    assert "script" in installed and "http" in installed and "echo" not in installed
    assert sorted(ws.runs_dir.iterdir()) == before  # nothing ran
