"""OpenAI reply fields read without trusting their types.

A server (or a proxy in front of it) can send `"choices": 5`, a string where a delta belongs, a
token count as text or a logprob that is not a number. Two kinds of reader, for two jobs:

- strict (`mapping`, `items`, `text`, `count`, `number`), for the client that measures a reply:
  the value when it has the documented type (or None when it is absent or null), otherwise
  `MalformedField` naming the field's path, which the endpoint records as the request's error;
- lenient (`json_object`, `first_choice`, `text_holder`, `string`, `logprob_items`), for the
  gateway that relays a reply: None (or "") for anything not of the documented type, so an odd
  field is passed on untouched rather than refused.
"""

from __future__ import annotations

import json
import math
from typing import Any

from sparkrig.errors import excerpt
from sparkrig.outside_numbers import COUNT_LIMIT, FLOAT_LIMIT


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
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= COUNT_LIMIT:
        return value
    raise MalformedField(field, "a whole number from 0 to 2**53", value)


def number(value: Any, field: str) -> float | None:
    """A real number (a logprob may be -inf); NaN, text and booleans are not."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MalformedField(field, "a number", value)
    if isinstance(value, int) and abs(value) > FLOAT_LIMIT:  # before isnan(), which overflows
        raise MalformedField(field, "a number within ±2**1023", value)
    if math.isnan(value):
        raise MalformedField(field, "a number", value)
    return float(value)


# --- lenient readers: anything unexpected reads as absent ---------------------------------------


def json_object(raw: bytes | str) -> dict[str, Any] | None:
    """A JSON object, or None for anything else (not JSON, not UTF-8, another JSON type)."""
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def first_choice(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """The reply's first choice, when `choices` is a list that starts with an object."""
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def text_holder(choice: dict[str, Any], field: str = "delta") -> dict[str, Any]:
    """Where a choice's text sits: its `field` (a stream's `delta`, a body's `message`) when that
    is an object, else the choice itself (completions put `text` there)."""
    holder = choice.get(field)
    return holder if isinstance(holder, dict) else choice


def string(holder: dict[str, Any], key: str) -> str:
    """A text field; "" when it is absent or not a string."""
    value = holder.get(key)
    return value if isinstance(value, str) else ""


def logprob_items(choice: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Chat-style per-token logprobs of a choice (llama.cpp uses them for completions too)."""
    logprobs = choice.get("logprobs")
    found = logprobs.get("content") if isinstance(logprobs, dict) else None
    return found if isinstance(found, list) else None
