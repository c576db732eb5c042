"""The TOML number check holds each number to its own field's declared range, found through
nested models, lists, dicts, unions, `Annotated` items and aliases, and shows the value as the
file writes it."""

from __future__ import annotations

import tomllib
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from sparkrig.config.toml_numbers import check_toml_numbers
from sparkrig.errors import ConfigError


class Inner(BaseModel):
    share: float | None = Field(default=None, gt=0, lt=1)


class Outer(BaseModel):
    count: int = Field(default=1, ge=1, le=10)
    ladder: list[Annotated[int, Field(ge=2)]] = Field(default_factory=list)
    pair: tuple[int, Annotated[float, Field(le=5)]] | None = None
    inner: Inner = Field(default_factory=Inner)
    named: dict[str, Inner] = Field(default_factory=dict)
    free: dict[str, float | int | str] = Field(default_factory=dict)
    aliased: int = Field(default=0, ge=0, alias="aliased-key")


def refused(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        check_toml_numbers(tomllib.loads(text), Outer, text=text, source="f.toml")
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "count = 11",
            "f.toml line 1: count is '11' (out of range), expected a whole number from 1 to 10",
        ),
        ("count = 1e400", "count is '1e400' (not finite"),
        (
            "ladder = [2, 1]",
            "ladder[1] is '1' (out of range), expected a whole number of 2 or more",
        ),
        ("pair = [1, 6.5]", "pair[1] is '6.5' (out of range), expected a number of 5 or less"),
        (
            "[inner]\nshare = 1",
            "f.toml line 2: inner.share is '1' (out of range), expected a number above 0 and "
            "below 1",
        ),
        ("[named.a]\nshare = -0.0", "named.a.share is '-0.0'"),
        ("free = { x = nan }", "free.x is 'nan' (not finite"),
        (
            "aliased-key = -1",
            "aliased-key is '-1' (out of range), expected a whole number of 0 or more",
        ),
        ("unknown = inf", "unknown is 'inf' (not finite"),
    ],
)
def test_a_number_is_held_to_its_own_fields_range(text: str, says: str) -> None:
    assert says in refused(text)


def test_numbers_in_range_pass_and_the_model_decides_the_rest() -> None:
    text = (
        "count = 10\nladder = [2, 3]\npair = [1, 5]\nfree = { x = 1e300 }\n[inner]\nshare = 0.5\n"
    )
    check_toml_numbers(tomllib.loads(text), Outer, text=text, source="f.toml")
    check_toml_numbers({"count": 3.0}, Outer, text="count = 3.0", source="f.toml")  # lax int
