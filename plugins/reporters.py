"""Built-in reporters for ``--report FORMAT:PATH``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rook_core.hookspecs import hookimpl
from rook_core.reportio import atomic_file, dump


def write_json(report: dict[str, Any], path: Path) -> None:
    """The JSON report, indented; written entry by entry (the same text as
    ``json.dumps(report, indent=2, ensure_ascii=False)``)."""
    with atomic_file(path) as fh:
        dump(report, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


@hookimpl
def rook_register_reporters(register: Any) -> None:
    register("json", write_json)
