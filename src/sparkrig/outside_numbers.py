"""The one parser for numbers that come from outside: sysfs and /proc files, command output,
server replies and /metrics, and values a TOML or JSON file holds (docs/errors.md, class 9).

Python's own `int()` and `float()` trust too much for that: `int("٣")` is 3, `"²".isdigit()` is
True while `int("²")` raises, `float("1e400")` is infinity and `10**400 / 3` overflows. Every
function here accepts only finite values in the range the caller states, ASCII digits only where
the source is a kernel file or a command's output, and raises `OutsideNumberError` — naming the
source, the field, the value seen (excerpted) and the range expected — for anything else. The
`*_or_none` forms are for parsers that already read an unreadable value as absent.
"""

from __future__ import annotations

import math
import re

from sparkrig.errors import SparkrigError, excerpt

MAX_DIGITS = 100
"""Longer number text is refused before conversion (int() itself stops near 4300 digits)."""

FLOAT_LIMIT = 2.0**1023
"""A whole number past this cannot become a float, so no division by it may be trusted."""

COUNT_LIMIT = 2**53
"""A count (tokens, bytes, events) past this is not a count any server sends: above it an int no
longer survives becoming a float exactly, and rates made from it are wrong."""

_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_ASCII_HEX = re.compile(r"[+-]?(0[xX])?[0-9a-fA-F]+")
_ASCII_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

Number = int | float


class OutsideNumberError(SparkrigError, ValueError):
    """A number read from a file, a kernel file, a command or a server is not a number in the
    range expected. A ValueError too, so parsers that read a bad value as absent still do."""


def _bound(value: Number) -> str:
    """A range's end as a person writes it: 3600, not 3600.0."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _range(
    minimum: Number | None,
    maximum: Number | None,
    above: Number | None = None,
    below: Number | None = None,
) -> str:
    low, high = (None if b is None else _bound(b) for b in (minimum, maximum))
    over, under = (None if b is None else _bound(b) for b in (above, below))
    if over is None and under is None:
        if low is not None and high is not None:
            return f"from {low} to {high}"
        if low is not None:
            return f"of {low} or more"
        if high is not None:
            return f"of {high} or less"
        return "that is finite and within ±2**1023"
    start = f"above {over}" if over is not None else (f"of {low} or more" if low else None)
    end = f"below {under}" if under is not None else (f"at most {high}" if high else None)
    return " and ".join(part for part in (start, end) if part)


def _fail(
    source: str, field: str, seen: object, expected: str, why: str = ""
) -> OutsideNumberError:
    shown = excerpt(seen if isinstance(seen, str) else repr(seen), 60)
    reason = f" ({why})" if why else ""
    return OutsideNumberError(
        f"{source}: {field} is {shown!r}{reason}, expected {expected} — correct that value, or "
        "check what wrote it (the file, the command or the server)"
    )


def _bounded(
    value: Number,
    *,
    source: str,
    field: str,
    minimum: Number | None,
    maximum: Number | None,
    kind: str,
    above: Number | None = None,
    below: Number | None = None,
    shown: str | None = None,
    whole: bool = False,
) -> Number:
    expected = f"{kind} {_range(minimum, maximum, above, below)}"
    seen = value if shown is None else shown
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(
            source,
            field,
            seen,
            expected,
            "not finite: NaN, infinity, or past a float's range like 1e400",
        )
    if isinstance(value, int) and abs(value) > FLOAT_LIMIT:
        raise _fail(source, field, seen, expected, "too large to compute with")
    if whole and not isinstance(value, int):
        raise _fail(source, field, seen, expected, "not whole")
    if (
        (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
        or (above is not None and value <= above)
        or (below is not None and value >= below)
    ):
        raise _fail(source, field, seen, expected, "out of range")
    return value


def parse_int(
    text: str,
    *,
    source: str,
    field: str,
    minimum: int | None = None,
    maximum: int | None = None,
    ascii_digits: bool = True,
    base: int = 10,
) -> int:
    """`text` (surrounding space stripped) as a whole number in [minimum, maximum]. With
    `ascii_digits` (the default: kernel files, command output) only 0-9 (and a-f in base 16)."""
    stripped = text.strip()
    expected = f"a whole number {_range(minimum, maximum)}"
    if len(stripped) > MAX_DIGITS:
        raise _fail(source, field, text, expected, f"more than {MAX_DIGITS} characters")
    pattern = _ASCII_HEX if base == 16 else _ASCII_INT
    if ascii_digits and not pattern.fullmatch(stripped):
        raise _fail(source, field, text, expected, "not ASCII digits")
    try:
        value = int(stripped, base)
    except ValueError:
        raise _fail(source, field, text, expected) from None
    return int(
        _bounded(
            value,
            source=source,
            field=field,
            minimum=minimum,
            maximum=maximum,
            kind="a whole number",
            shown=stripped,
        )
    )


def parse_float(
    text: str,
    *,
    source: str,
    field: str,
    minimum: float | None = None,
    maximum: float | None = None,
    ascii_digits: bool = True,
) -> float:
    """`text` as a finite number in [minimum, maximum]; NaN, infinity and overflow refused."""
    stripped = text.strip()
    expected = f"a number {_range(minimum, maximum)}"
    if len(stripped) > MAX_DIGITS:
        raise _fail(source, field, text, expected, f"more than {MAX_DIGITS} characters")
    if ascii_digits and not _ASCII_FLOAT.fullmatch(stripped):
        raise _fail(source, field, text, expected, "not an ASCII decimal number")
    try:
        value = float(stripped)
    except ValueError:
        raise _fail(source, field, text, expected) from None
    return float(
        _bounded(
            value,
            source=source,
            field=field,
            minimum=minimum,
            maximum=maximum,
            kind="a number",
            shown=stripped,  # the text seen: "1e400", not the inf it became
        )
    )


def int_or_none(
    text: str, *, minimum: int | None = None, maximum: int | None = None, base: int = 10
) -> int | None:
    """`parse_int` with ASCII digits, or None where it would refuse the text."""
    try:
        return parse_int(text, source="", field="", minimum=minimum, maximum=maximum, base=base)
    except OutsideNumberError:
        return None


def float_or_none(
    text: str, *, minimum: float | None = None, maximum: float | None = None
) -> float | None:
    """`parse_float` with ASCII digits, or None where it would refuse the text."""
    try:
        return parse_float(text, source="", field="", minimum=minimum, maximum=maximum)
    except OutsideNumberError:
        return None


def checked_number(
    value: object,
    *,
    source: str,
    field: str,
    minimum: Number | None = None,
    maximum: Number | None = None,
    whole: bool = False,
    above: Number | None = None,
    below: Number | None = None,
    written: str | None = None,
) -> Number:
    """A number tomllib or json already parsed: not a bool, finite, small enough to become a
    float (so dividing by it cannot overflow), within [minimum, maximum] and, where given,
    above `above` and below `below`; `whole`: an int. `written` is the value as its file writes
    it (`1e400`, which tomllib read as inf), shown in the message instead of the parsed value."""
    kind = "a whole number" if whole else "a number"
    expected = f"{kind} {_range(minimum, maximum, above, below)}"
    shown = value if written is None else written
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(source, field, shown, expected, f"a {type(value).__name__}")
    return _bounded(
        value,
        source=source,
        field=field,
        minimum=minimum,
        maximum=maximum,
        kind=kind,
        above=above,
        below=below,
        shown=written,
        whole=whole,
    )


def check_every_number(value: object, *, source: str) -> None:
    """Every number inside `value` (what json parsed: dicts and lists), through
    `checked_number`: the first NaN, infinity or integer past ±2**1023 raises, named by its
    path (`points[0].samples[1].value`). json reads `1e400` as inf and `NaN` as nan, and
    pydantic's float takes both; no record sparkrig writes holds either."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:  # a loop, not recursion: json may nest as deep as Python's own limit
        path, item = stack.pop()
        if isinstance(item, dict):
            stack += [(f"{path}.{key}" if path else str(key), v) for key, v in item.items()]
        elif isinstance(item, list):
            stack += [(f"{path}[{index}]", v) for index, v in enumerate(item)]
        elif isinstance(item, int | float) and not isinstance(item, bool):
            checked_number(item, source=source, field=path or "the value")


def finite_float(value: float, *, source: str, field: str, minimum: float | None = None) -> float:
    """A float another parser produced (prometheus_client, json), refused when NaN, infinite
    or below `minimum`."""
    return float(checked_number(value, source=source, field=field, minimum=minimum))


def count_or_none(value: object, *, maximum: int = COUNT_LIMIT) -> int | None:
    """A count json already parsed (a token count, an index): an int from 0 to `maximum`, not a
    bool; None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= maximum:
        return value
    return None


def number_or_none(value: object) -> float | None:
    """A number json already parsed, as a float: finite, not a bool, small enough to become a
    float (json reads 10**400 as an int that float() cannot take); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) <= FLOAT_LIMIT else None
    return value if math.isfinite(value) else None
