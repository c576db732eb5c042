"""The outside-number parser: finite, in range, ASCII digits where a kernel or command wrote
them, and one OutsideNumberError naming the source, the field, the value and the range."""

from __future__ import annotations

import math

import pytest

from sparkrig.errors import SparkrigError
from sparkrig.outside_numbers import (
    COUNT_LIMIT,
    OutsideNumberError,
    checked_number,
    count_or_none,
    float_or_none,
    int_or_none,
    number_or_none,
    parse_float,
    parse_int,
)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("²", "not ASCII digits"),  # "²".isdigit() is True, int("²") raises
        ("٣", "not ASCII digits"),  # int("٣") is 3
        ("１２", "not ASCII digits"),  # fullwidth: int() takes it
        ("", "not ASCII digits"),
        ("12 kB", "not ASCII digits"),
        ("9" * 5000, "more than 100 characters"),  # int() itself stops at 4300 digits
        ("-1", "out of range"),
    ],
)
def test_parse_int_refuses_what_int_would_trust(text: str, why: str) -> None:
    with pytest.raises(OutsideNumberError, match=why) as caught:
        parse_int(text, source="/sys/x", field="speed", minimum=0)
    message = str(caught.value)
    assert message.startswith("/sys/x: speed is ")
    assert " — " in message
    assert len(message) < 300
    assert isinstance(caught.value, SparkrigError)
    assert isinstance(caught.value, ValueError)  # parsers that read bad text as absent still do


def test_parse_int_reads_ascii_digits_and_hex() -> None:
    assert parse_int(" 42\n", source="s", field="f", minimum=0, maximum=100) == 42
    assert parse_int("0x1f", source="s", field="f", base=16) == 31
    assert parse_int("٣", source="s", field="f", ascii_digits=False) == 3


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400", "1e99999", "٣.5", "0x10"])
def test_parse_float_refuses_non_finite_and_non_ascii(text: str) -> None:
    with pytest.raises(OutsideNumberError):
        parse_float(text, source="chronyc", field="offset")
    assert float_or_none(text) is None


def test_parse_float_names_the_range() -> None:
    assert parse_float("1.5e2", source="s", field="f", minimum=0) == 150.0
    with pytest.raises(OutsideNumberError, match="expected a number from 0 to 1"):
        parse_float("2", source="s", field="f", minimum=0, maximum=1)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (True, "a bool"),
        (math.nan, "not finite"),
        (math.inf, "not finite"),
        (10**400, "too large"),
        ("12", "a str"),
        (-3, "out of range"),
    ],
)
def test_checked_number_refuses_what_toml_or_json_parsed(value: object, why: str) -> None:
    with pytest.raises(OutsideNumberError, match=why):
        checked_number(value, source="c.toml line 3", field="profile.kv_pool_tokens", minimum=0)


def test_the_lenient_readers_read_odd_values_as_absent() -> None:
    assert int_or_none("²") is None
    assert int_or_none("7", minimum=0) == 7
    assert count_or_none(True) is None
    assert count_or_none(COUNT_LIMIT + 1) is None
    assert count_or_none(3) == 3
    assert number_or_none(10**400) is None
    assert number_or_none(math.nan) is None
    assert number_or_none(2) == 2.0
