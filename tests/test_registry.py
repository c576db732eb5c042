"""The one registry style: order kept, unknown names rejected in one line, duplicates refused."""

from __future__ import annotations

import pytest

from sparkrig.errors import UsageError
from sparkrig.registry import Registry


def test_entries_keep_registration_order_by_decorator_and_by_call() -> None:
    table: Registry[object] = Registry("widget")

    @table.register("zeta")
    def zeta() -> None: ...

    table.add("alpha", "a")
    assert table.names() == ["zeta", "alpha"]
    assert list(table) == ["zeta", "alpha"]
    assert table.entries() == [zeta, "a"]
    assert table.get("alpha") == "a"
    assert "zeta" in table and "beta" not in table
    assert len(table) == 2


def test_an_unknown_name_is_one_line_naming_every_known_one() -> None:
    table: Registry[int] = Registry("suite")
    table.add("decode", 1)
    table.add("prefill", 2)
    with pytest.raises(UsageError) as raised:
        table.get("decod")
    assert str(raised.value) == "unknown suite decod — choose from decode, prefill"
    with pytest.raises(UsageError) as many:
        table.check(["decode", "x", "y"])
    assert str(many.value) == "unknown suite x, y — choose from decode, prefill"
    assert table.check(["prefill", "decode"]) == ["prefill", "decode"]


def test_a_name_registered_twice_is_refused() -> None:
    table: Registry[int] = Registry("guard")
    table.add("exact", 1)
    with pytest.raises(ValueError, match="registered twice"):
        table.add("exact", 2)
    assert table.get("exact") == 1
