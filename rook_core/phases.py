"""Phase selection: a prefix or a suffix of the lifecycle, never one with a hole."""

from __future__ import annotations

from .errors import ConfigError
from .models import PHASES


def parse_phases(text: str | None) -> list[str]:
    if text is None:
        return list(PHASES)
    wanted = [p.strip() for p in text.split(",")]
    if not any(wanted):
        raise ConfigError(
            f"--phases {text!r}: name at least one phase ({','.join(PHASES)}); "
            "leave the flag out to run them all"
        )
    if "" in wanted:
        raise ConfigError(f"--phases {text}: an empty phase name (two commas, or one at an end)")
    unknown = [p for p in wanted if p not in PHASES]
    if unknown:
        raise ConfigError(
            f"--phases: unknown phase {', '.join(unknown)}; phases are {','.join(PHASES)}"
        )
    if len(set(wanted)) != len(wanted):
        raise ConfigError("--phases: a phase is named twice")
    ordered = sorted(wanted, key=PHASES.index)
    if ordered != wanted:
        raise ConfigError(f"--phases: give phases in lifecycle order ({','.join(PHASES)})")
    n = len(wanted)
    if wanted != list(PHASES[:n]) and wanted != list(PHASES[-n:]):
        raise ConfigError(
            f"--phases {text}: a selection must be a prefix (prepare,open,...) or a suffix "
            "(...,collect,judge) of the lifecycle, never one with a hole; e.g. "
            "--phases prepare,open,execute,close then --run ID --phases collect,judge"
        )
    return wanted
