"""Marshmallow fields the definition schemas share (profiles, scenarios, plugins'
entries). Imported only where a definition is validated, never by a run whose
definitions come from Rook's cache."""

from __future__ import annotations

from typing import Any

from marshmallow import fields


class StrictFloat(fields.Float):
    """A number, as YAML writes one: a string (``"30"``) is refused, as
    ``fields.Integer(strict=True)`` refuses it, and so is a boolean."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.make_error("invalid", input=value)
        return super()._deserialize(value, attr, data, **kwargs)
