"""OpenAI reply fields read without trusting their types.

A server (or a proxy in front of it) can send `"choices": 5`, a string where a delta belongs, a
token count as text or a logprob that is not a number. Each accessor returns the value when it has
the documented type (or None when it is absent or null) and raises `MalformedField`, naming the
field's path, otherwise; the endpoint turns that into a recorded error on the one request.
"""

from __future__ import annotations

import math
from typing import Any

from sparkrig.errors import excerpt


class MalformedField(ValueError):
    """A reply field of the wrong type: `field` is its path, e.g. `choices[0].delta.content`."""

    def __init__(self, field: str, expected: str, got: Any) -> None:
        self.field = field
        self.expected = expected
        self.got = got
        super().__init__(self.describe())

    def describe(self) -> str:
        return f"field {self.field} is {shown(self.got)}, expected {self.expected}"


def shown(value: Any) -> str:
    """A value in a message: its JSON type and the start of it."""
    names = {
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "an object",
    }
    return f"{names.get(type(value), type(value).__name__)} {excerpt(repr(value), 40)}"


def mapping(value: Any, field: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise MalformedField(field, "an object", value)


def items(value: Any, field: str) -> list[Any]:
    """A list; absent or null reads as empty."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise MalformedField(field, "a list", value)


def text(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise MalformedField(field, "a string", value)


def count(value: Any, field: str) -> int | None:
    """A whole number of 0 or more (a token count, an index); `True` and `"12"` are not."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise MalformedField(field, "a whole number of 0 or more", value)


def number(value: Any, field: str) -> float | None:
    """A real number (a logprob may be -inf); NaN, text and booleans are not."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    raise MalformedField(field, "a number", value)
