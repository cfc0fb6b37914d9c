"""Read what the probe agents (tests/agents/probe.*) recorded."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

AGENTS = Path(__file__).parent / "agents"
PROBES = {"bash": "probe.sh", "python": "probe.py", "node": "probe.mjs"}


@dataclass
class Call:
    stamp: int
    phase: str
    env: dict[str, str]
    stdin: bytes
    argc: int
    blocked: bool
    cwd: str


def install(ws, lang: str) -> str:
    """Copy the probe for ``lang`` into the workspace's scripts; return its hook path."""
    name = PROBES[lang]
    target = ws.agent_dir / "scripts" / name
    shutil.copy2(AGENTS / name, target)
    return f"scripts/{name}"


def read(probe_dir: Path) -> list[Call]:
    calls = []
    for env_file in probe_dir.glob("*.env"):
        stem = env_file.name[: -len(".env")]
        stamp, _pid, phase = stem.split("-", 2)
        raw = env_file.read_bytes()
        env = {}
        for item in raw.split(b"\0"):
            if b"=" in item:
                k, v = item.split(b"=", 1)
                env[k.decode()] = v.decode(errors="replace")
        stdin_file = probe_dir / f"{stem}.stdin"
        calls.append(
            Call(
                stamp=int(stamp),
                phase=phase,
                env=env,
                stdin=stdin_file.read_bytes() if stdin_file.exists() else b"",
                argc=int((probe_dir / f"{stem}.argc").read_text().strip() or 0),
                blocked=(probe_dir / f"{stem}.blocked").exists(),
                cwd=(probe_dir / f"{stem}.cwd").read_text().strip(),
            )
        )
    return sorted(calls, key=lambda c: c.stamp)
