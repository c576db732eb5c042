"""The one registry style: order kept, unknown names rejected in one line, duplicates refused."""

from __future__ import annotations

import pytest

import sparkrig.doctor.checks  # noqa: F401 - registers the doctor checks
from sparkrig.bench.run import check_suites
from sparkrig.bench.suites import SUITES
from sparkrig.doctor.registry import CHECKS
from sparkrig.engines.registry import ENGINES
from sparkrig.errors import UsageError
from sparkrig.guards.battery import GUARDS, choose_guards
from sparkrig.lint.findings import RULES
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
    assert "zeta" in table
    assert "beta" not in table
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


def test_every_extension_point_uses_it_and_keeps_its_order() -> None:
    assert isinstance(ENGINES, Registry)
    assert isinstance(RULES, Registry)
    assert isinstance(CHECKS, Registry)
    assert SUITES.names() == ["decode", "concurrency", "spec", "prefill", "max-load", "multiturn"]
    assert [entry.number for entry in GUARDS.entries()] == list(range(1, len(GUARDS.entries()) + 1))
    assert [entry.name for entry in choose_guards(["garble", "exact"], quick=False)] == [
        "exact",
        "garble",
    ]
    with pytest.raises(UsageError, match="unknown guard nope — choose from exact, determinism"):
        choose_guards(["nope"], quick=False)
    with pytest.raises(UsageError, match="unknown suite nope — choose from decode, concurrency"):
        check_suites(["decode", "nope"])
