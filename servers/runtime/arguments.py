"""The one argument check a tool call passes before its handler runs, beyond what the types say.

Pydantic accepts `"Infinity"`, `1e309` and NaN as floats, any string that matches a date regex, and
strings of any length or with lone surrogates (which SQLite cannot encode). Each of those either
corrupts the episode (a non-finite number committed, then every output that shows it breaks its own
schema) or fails deep inside the handler as a `server_error`. Here they are refused up front as
`invalid_arguments`, naming the argument. The check is driven by the tool's input JSON schema, so it
covers every generated server alike. Error messages never echo more than a short preview of a value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from typing import Any

# A number with no declared bound must still fit a sane range (SQLite integers overflow past 2**63,
# and no environment of the farm counts anything near a billion).
DEFAULT_NUMBER_BOUND = 1e9
# A string argument with no declared maxLength: far more than any name, note or search, far less than
# SQLite's LIKE pattern limit (50,000 bytes) even at four bytes per character.
DEFAULT_MAX_STRING = 10_000
# Everything a call's error message may say; values are echoed as previews of at most PREVIEW_CHARS.
MAX_MESSAGE_CHARS = 2_000
PREVIEW_CHARS = 60

DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
DATETIME_PREFIX = r"^\d{4}-\d{2}-\d{2}T"


def preview(value: Any) -> str:
    """`repr(value)`, cut to a short preview that says how much was cut."""
    text = repr(value)
    if len(text) <= PREVIEW_CHARS:
        return text
    return f"{text[:PREVIEW_CHARS]}... ({len(text)} chars)"


def bounded(message: str) -> str:
    """`message` cut to MAX_MESSAGE_CHARS, so an error never floods a model's context."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return f"{message[: MAX_MESSAGE_CHARS - 40]}... (message cut, {len(message)} chars)"


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _branches(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The non-null alternatives of a property's schema (`T | None` is an anyOf with null)."""
    options = node.get("anyOf")
    if not options:
        return [node]
    return [o for o in options if o.get("type") != "null"]


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string inside `value` (keys too), with where it sits."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(k, f"{where} (a key)")
            yield from _strings(v, f"{where}.{k}" if isinstance(k, str) and len(k) < 40 else where)
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            yield from _strings(item, f"{where}[{n}]")


def _floats(value: Any) -> Iterator[float]:
    if isinstance(value, float):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _floats(v)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _floats(item)


def _number(value: Any) -> float | None:
    """The number a lax validator would read from `value` (a JSON number or a numeric string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if not isinstance(value, int) or abs(value) < 2**1023 else math.inf
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _number_problem(name: str, value: Any, schema: Mapping[str, Any]) -> str | None:
    number = _number(value)
    if number is None:
        return None
    if not math.isfinite(number):
        return f"{name}: must be a finite number, got {preview(value)}"
    low = schema.get("minimum", schema.get("exclusiveMinimum", -DEFAULT_NUMBER_BOUND))
    high = schema.get("maximum", schema.get("exclusiveMaximum", DEFAULT_NUMBER_BOUND))
    if not low <= number <= high:
        return f"{name}: must be between {low:g} and {high:g}, got {preview(value)}"
    return None


def _string_problem(name: str, value: str, schema: Mapping[str, Any]) -> str | None:
    limit = schema.get("maxLength", DEFAULT_MAX_STRING)
    if len(value) > limit:
        return f"{name}: at most {limit} characters, got {len(value)}"
    pattern = schema.get("pattern", "")
    try:
        if pattern == DATE_PATTERN:
            date.fromisoformat(value)
        elif pattern.startswith(DATETIME_PREFIX):
            datetime.fromisoformat(value)
    except ValueError:
        return f"{name}: {preview(value)} is not a real calendar date or time"
    return None


def _problem(name: str, value: Any, branches: list[Mapping[str, Any]] | None) -> str | None:
    """What is wrong with the argument `name`'s `value` beyond its type; `branches` are the non-null
    alternatives of its declared schema (None: the tool declares no such argument)."""
    label = name if len(name) <= 40 else preview(name)
    kind = type(value)
    scalar = kind is str or kind is int or kind is float or kind is bool  # the common case: no structure to walk
    if kind is str:
        bad_text = label if _has_lone_surrogate(value) else None
    else:
        bad_text = None if scalar else next((w for w, s in _strings(value, label) if _has_lone_surrogate(s)), None)
    if bad_text is not None or _has_lone_surrogate(name):
        return f"{bad_text or label}: contains a lone surrogate (not valid Unicode text)"
    if (kind is float and not math.isfinite(value)) or (
        not scalar and any(not math.isfinite(f) for f in _floats(value))
    ):
        return f"{label}: must hold finite numbers only"
    if branches is None:
        return None
    for branch in branches:
        expected = branch.get("type")
        problem = None
        if expected in ("number", "integer"):
            problem = _number_problem(label, value, branch)
        elif expected == "string" and kind is str:
            problem = _string_problem(label, value, branch)
        if problem:
            return problem
    total = len(value) if kind is str else sum(len(s) for _, s in _strings(value, label))
    if total > DEFAULT_MAX_STRING:
        return f"{label}: holds {total} characters of text, at most {DEFAULT_MAX_STRING}"
    return None


class ArgumentCheck:
    """`argument_problems` for one tool, with its schema read once: the check runs on every call."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        properties: Mapping[str, Any] = schema.get("properties", {})
        self._branches = {name: _branches(node) for name, node in properties.items()}

    def problems(self, arguments: Mapping[str, Any]) -> list[str]:
        """What is wrong with `arguments` (already valid for their declared types) beyond their types:
        non-finite or out-of-range numbers, impossible dates, oversized strings, lone surrogates."""
        problems: list[str] = []
        for name, value in arguments.items():
            if value is not None and (problem := _problem(name, value, self._branches.get(name))):
                problems.append(problem)
        return problems


def argument_problems(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """What is wrong with `arguments` (already valid for their declared types) beyond their types:
    non-finite or out-of-range numbers, impossible dates, oversized strings, lone surrogates."""
    return ArgumentCheck(schema).problems(arguments)
