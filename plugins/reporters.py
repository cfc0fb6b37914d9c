"""Built-in reporters for ``--report FORMAT:PATH``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rook_core.hookspecs import hookimpl
from rook_core.store import atomic_write


def write_json(report: dict[str, Any], path: Path) -> None:
    atomic_write(path, json.dumps(report, indent=2, ensure_ascii=False) + "\n")


@hookimpl
def rook_register_reporters(register: Any) -> None:
    register("json", write_json)
