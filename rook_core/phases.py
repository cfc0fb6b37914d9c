"""Phase selection: a prefix or a suffix of the lifecycle, never one with a hole, nor
a piece from its middle (a run splits in two at most)."""

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
    first, last = PHASES.index(wanted[0]), PHASES.index(wanted[-1])
    span = list(PHASES[first : last + 1])
    if span != wanted:  # a phase between two it names left out: it would never run
        missing = [p for p in span if p not in wanted]
        raise ConfigError(
            f"--phases {text}: leaves out {','.join(missing)}, between {wanted[0]} and "
            f"{wanted[-1]}: a selection never has a hole (a phase it skips would never run "
            f"for its scenarios); {_instead(first, last)}"
        )
    if first != 0 and last != len(PHASES) - 1:
        raise ConfigError(
            f"--phases {text}: neither starts a run (a prefix, from prepare) nor finishes "
            "one (a suffix, to judge): a run splits in two at most, the phases up to one "
            f"then the rest; {_instead(first, last)}"
        )
    return wanted


def _instead(first: int, last: int) -> str:
    """What to write for a selection from ``PHASES[first]`` to ``PHASES[last]``: the
    selection with its hole filled, or the prefix ending at its last phase and the
    suffix starting at its first."""
    prefix, suffix = ",".join(PHASES[: last + 1]), ",".join(PHASES[first:])
    if first == 0:
        return f"write --phases {prefix}"
    if last == len(PHASES) - 1:
        return f"write --run ID --phases {suffix} (to finish the run ID)"
    return (
        f"write --phases {prefix} (then --run ID --phases {','.join(PHASES[last + 1 :])}), "
        f"or --run ID --phases {suffix} to finish the run ID"
    )
