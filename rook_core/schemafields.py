"""Marshmallow fields the definition schemas share (profiles, scenarios, plugins'
entries). Imported only where a definition is validated, never by a run whose
definitions come from Rook's cache."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from .errors import did_you_mean as did_you_mean  # one rule for every name
from .lazyre import later

_EXPONENT = later(r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eE])([-+]?)([0-9]+)")


def _exponent_hint(value: str) -> str | None:
    """How to write ``1e3`` so that YAML reads a number: YAML 1.1 (PyYAML) takes
    an exponent as a number only after a dot and with a sign (``1.0e+3``)."""
    found = _EXPONENT.fullmatch(value)
    if found is None:
        return None
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    mantissa, e, sign, exponent = found.groups()
    if "." in mantissa and sign:  # YAML's own float: it was quoted, as "30" is
        return None
    mantissa += "" if "." in mantissa else ".0"
    written = f"{mantissa}{e}{sign or '+'}{exponent}"
    plain = format(Decimal(value), "f")  # 0.00001, never 1e-05: YAML reads that as text too
    advice = f"{plain} or {written}" if len(plain) <= 20 else written
    return f"Not a valid number: YAML reads {value} as text; write {advice}"


_PLAIN_NUMBER = later(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def quoted_number(value: Any, whole: bool = False) -> str | None:
    """Why ``value`` is no number when it is a number written in quotes (``"30"``):
    ``"30" is quoted, so YAML reads it as text; write 30 without the quotes``
    (``whole``: only for a whole number); ``None`` for anything else."""
    if not isinstance(value, str) or _PLAIN_NUMBER.fullmatch(value) is None:
        return None
    if whole and not float(value).is_integer():
        return None
    return (
        f"{json.dumps(value)} is quoted, so YAML reads it as text; write {value} without the quotes"
    )


def number_as_text(value: Any, whole: bool = False) -> str | None:
    """Why ``value`` is no number when YAML read it as text: a number written with
    an exponent (``1e-7``: ``YAML reads 1e-7 as text; write 0.0000001 or 1.0e-7``;
    ``whole``: for a whole number, ``write 1000``) or in quotes (``"30"``, see
    :func:`quoted_number`); ``None`` for anything else. For the limits a
    criterion type parses itself, on their error path."""
    quoted = quoted_number(value, whole)
    if quoted is not None:
        return quoted
    hint = _exponent_hint(value) if isinstance(value, str) else None
    if hint is None:
        return None
    if whole:
        number = float(value)
        return f"YAML reads {value} as text; write {int(number)}" if number.is_integer() else None
    return hint.removeprefix("Not a valid number: ")


_DURATION = later(
    r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\s*", re.I
)
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def duration_hint(value: str) -> str | None:
    """How to write ``30s`` or ``2 min`` in a field that counts seconds:
    ``it counts seconds; write 30``, or ``None`` for another text."""
    found = _DURATION.fullmatch(value)
    if found is None:
        return None
    unit = found.group(2).lower()
    seconds = float(found.group(1)) * _UNIT["ms" if unit == "ms" else unit[0]]
    return f"it counts seconds; write {seconds:g}"


def _duration_hint(value: str) -> str | None:
    hint = duration_hint(value)
    return None if hint is None else f"Not a valid number: {hint}"


MAX_FLOAT = 1.7976931348623157e308


def _accepted(field: fields.Field, whole: bool) -> str:
    """What ``field`` takes, from its range: ``a finite number greater than 0``."""
    parts: list[str] = []
    for v in field.validators:
        if isinstance(v, validate.Range):
            if None not in (v.min, v.max) and v.min_inclusive and v.max_inclusive:
                parts.append(f"from {v.min:,} to {v.max:,}")
                continue
            if v.min is not None:
                parts.append(f"{'at least' if v.min_inclusive else 'greater than'} {v.min:,}")
            if v.max is not None:
                parts.append(f"{'at most' if v.max_inclusive else 'less than'} {v.max:,}")
    noun = "a whole number" if whole else "a finite number"
    return " ".join([noun, " and ".join(parts)]).strip()


_SPECIAL = later(r"[-+]?\.?(?:nan|inf|infinity)", re.I)

MAX_WHOLE = int(MAX_FLOAT)
"""The largest whole number a field that counts takes, the largest float's (309
digits, as a number field takes): a larger one (a key held down) is refused as
too large by its count of digits, never quoted whole."""


def _leading(text: str) -> str:
    """``text`` shown in a message: itself when short, else its first 20 characters."""
    return text if len(text) <= 24 else f"{text[:20]}..."


class Range(validate.Range):
    """``validate.Range`` whose message quotes at most the first digits of the
    number it refuses (``{input}``): a number of 300 digits is never shown whole."""

    def _format_error(self, value: Any, message: str) -> str:
        return super()._format_error(_leading(str(value)), message)  # type: ignore[arg-type]


def non_finite(value: Any, whole: bool = False) -> str | None:
    """What is wrong with ``value`` where a number goes, when it is no number a
    field could take: ``not a number (.nan)``, YAML's ``.nan`` or ``nan`` (which YAML
    reads as text); ``too large: ...``, ``.inf``, ``inf``, ``1.0e+400``, ``1e400``
    (text to YAML), a number past the largest float, and (``whole``) a whole number
    past :data:`MAX_WHOLE`, told by its count of digits and its first ones; the
    same, ``too small``, below zero. ``None`` for anything else."""
    shown = ".nan"
    if isinstance(value, str):
        text = value.strip()
        if _SPECIAL.fullmatch(text) is not None:
            shown = text
            value = float(text.replace(".", ""))
        elif _EXPONENT.fullmatch(text) is not None:
            value = float(text)
        else:
            return None
    digits: str | None = None
    if isinstance(value, float) and not math.isfinite(value):
        written = getattr(value, "written", None) or shown  # .NaN as written
        if whole and written.strip().lstrip("+-").isdigit():  # more than Python reads
            digits = written
        shown = written
    elif isinstance(value, int) and not isinstance(value, bool):
        if whole and abs(value) > MAX_WHOLE:
            digits = str(value)
        elif abs(value) > MAX_FLOAT:  # 10**400 written whole: no float holds it
            value = math.inf if value > 0 else -math.inf
    if digits:
        count = sum(c.isdigit() for c in digits)
        size = "too small" if digits.lstrip().startswith("-") else "too large"
        return f"{size}: a whole number of {count:,} digits ({_leading(digits.strip())})"
    if not isinstance(value, float) or math.isfinite(value):
        return None
    if value != value:
        return f"not a number ({shown})"
    if value > 0:
        return "too large: not a finite number (infinity, or past 1.8e+308)"
    return "too small: not a finite number (minus infinity, or past -1.8e+308)"


def _not_finite(value: Any, field: fields.Field, whole: bool = False) -> str | None:
    """Why ``value`` is no number ``field`` takes when it is infinite, not a number
    or too large (:func:`non_finite`); said the same way whichever was written,
    with what the field takes. ``None`` for anything else."""
    what = non_finite(value, whole)
    return None if what is None else f"{what}; write {_accepted(field, whole)}"


class StrictInteger(fields.Integer):
    """A whole number (``fields.Integer(strict=True)``); the message for ``1e3``,
    which YAML reads as text, says how to write it, as :class:`StrictFloat`'s does."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(strict=True, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        not_finite = _not_finite(value, self, whole=True)
        if not_finite is not None:
            raise ValidationError(not_finite)
        if isinstance(value, str) and _exponent_hint(value) is not None:
            number = float(value)
            if number.is_integer():
                raise ValidationError(
                    f"Not a valid integer: YAML reads {value} as text; write {int(number)}"
                )
        quoted = quoted_number(value, whole=True)
        if quoted is not None:
            raise ValidationError(f"Not a valid integer: {quoted}")
        if isinstance(value, bool):  # `repeat: yes`
            written = "yes, on or true" if value else "no, off or false"
            raise ValidationError(
                f"Not a valid integer: YAML reads an unquoted {written} as a boolean; "
                "write a whole number"
            )
        if isinstance(value, float):  # `repeat: 2.0`, `repeat: 2.5`
            shown = getattr(value, "written", None) or repr(value)
            raise ValidationError(
                f"Not a valid integer: {shown} is written with a decimal point; write {int(value)}"
                if value.is_integer()
                else f"Not a valid integer: {shown} is no whole number"
            )
        return super()._deserialize(value, attr, data, **kwargs)


class StrictFloat(fields.Float):
    """A number, as YAML writes one: a string (``"30"``) is refused, as
    ``fields.Integer(strict=True)`` refuses it, and so is a boolean. The
    message for ``1e3``, which YAML reads as text, says how to write it."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        not_finite = _not_finite(value, self)
        if not_finite is not None:
            raise ValidationError(not_finite)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            quoted = quoted_number(value)
            hint = (
                (
                    _exponent_hint(value)
                    or (quoted and f"Not a valid number: {quoted}")
                    or _duration_hint(value)
                )
                if isinstance(value, str)
                else None
            )
            if hint is not None:
                raise ValidationError(hint)
            raise self.make_error("invalid", input=value)
        return super()._deserialize(value, attr, data, **kwargs)


class StrictBoolean(fields.Boolean):
    """``true`` or ``false``, as YAML writes one: a number (``1``, ``0``) is
    refused, where ``fields.Boolean(truthy={True})`` took ``1`` as true
    (``1 == True`` in Python), and so is text (``"yes"``)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, bool):
            if isinstance(value, (int, float)):
                raise ValidationError(
                    f"Not a valid boolean: YAML reads {value} as a number; write true or false"
                )
            if isinstance(value, str):  # `excluded: "yes"`: the quotes make it text
                shown = json.dumps(value) if len(value) <= 20 else "a text"
                raise ValidationError(f"Not a valid boolean: {shown} is text; write true or false")
            raise self.make_error("invalid", input=value)
        return value


def yaml_typed(value: Any) -> str | None:
    """Why ``value`` is no text when YAML typed what was written as text: an
    unquoted ``yes`` is a boolean, ``2024`` a number. ``None`` for anything else."""
    if isinstance(value, bool):
        written = "yes, on or true" if value else "no, off or false"
        return f"must be text: YAML reads an unquoted {written} as a boolean; quote it"
    if isinstance(value, (int, float)):
        shown = getattr(value, "written", None) or str(value)  # 007 as written, not 7
        if len(shown) > 40:  # a number of 5,000 digits, once
            shown = f"{shown[:20]}... ({len(shown):,} characters)"
        return f"must be text: YAML reads {shown} unquoted as a number; quote it as written"
    return None


class Text(fields.String):
    """A string; a boolean or a number YAML made of what was written as text
    (``goal: yes``) is refused saying so, not as "Not a valid string."."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        hint = yaml_typed(value)
        if hint is not None:
            raise ValidationError(hint)
        if isinstance(value, (dict, list)):  # `goal: {text: ...}`: say what it got
            raise ValidationError(
                f"must be text, not a {'mapping' if isinstance(value, dict) else 'list'}"
            )
        return super()._deserialize(value, attr, data, **kwargs)


def unknown_field(key: str, known: Iterable[str]) -> str:
    """The message for a key a mapping does not take: the known one it looks
    like a typo of, else every known one."""
    names = list(known)
    close = did_you_mean(key, names)
    return f"Unknown field; {f'did you mean {close}?' if close else 'expected one of: ' + ', '.join(names)}"


def refuse_unknown(value: Any, known: Iterable[str]) -> None:
    """Refuse (a ``ValidationError`` naming each) the keys of the mapping
    ``value`` that are not ``known``; anything but a mapping is left to the caller."""
    if not isinstance(value, dict):
        return
    names = list(known)
    unknown = [k for k in value if k not in names]
    if unknown:
        raise ValidationError({str(k): [unknown_field(str(k), names)] for k in unknown})


def explain_unknown(messages: Any, schema: Schema) -> Any:
    """``messages`` of ``schema.load`` with marshmallow's bare "Unknown field."
    told what to write instead: the field the key looks like a typo of, else
    the fields the schema takes (nested schemas included)."""
    if not isinstance(messages, dict):
        return messages
    by_key = {f.data_key or name: f for name, f in schema.fields.items()}
    out: dict[Any, Any] = {}
    for key, value in messages.items():
        field = by_key.get(key)
        if field is None and value == ["Unknown field."]:
            out[key] = [unknown_field(str(key), by_key)]
        elif isinstance(field, fields.Nested) and isinstance(field.schema, Schema):
            out[key] = explain_unknown(value, field.schema)
        elif isinstance(field, fields.List) and isinstance(field.inner, fields.Nested):
            inner = field.inner.schema
            out[key] = (
                {i: explain_unknown(v, inner) for i, v in value.items()}
                if isinstance(value, dict)
                else value
            )
        else:
            out[key] = value
    return out


def slug_id(value: str) -> None:
    """An id must be a slug (:data:`~rook_core.models.SLUG`); one that is not is
    told the rule and, where the id can be made one, the slug it would be
    (``Staging`` -> ``'staging'``)."""
    from .models import SLUG, SLUG_RULE, slug

    if re.match(SLUG, value) is None:
        made = slug(value)
        raise ValidationError(SLUG_RULE + (f", e.g. {made!r}" if made else ""))
