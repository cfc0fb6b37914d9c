"""Reading YAML files with errors that name the file and the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

try:  # the C loader is several times faster on big scenario sets
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pyyaml built without libyaml
    _Loader = yaml.SafeLoader


def load_yaml(path: Path, error: type[ConfigError] = ConfigError) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read: {exc}") from None
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{path}{where}: not valid YAML: {problem}") from None
    except RecursionError:
        raise error(f"{path}: not valid YAML: nested too deeply") from None


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
