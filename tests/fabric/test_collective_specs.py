"""One spec per collective: nccl-tests' bus factors (doc/PERFORMANCE.md), the buffer a size
counts, and the implementations the fabric test runs, all read from one table."""

from __future__ import annotations

import pytest

from sparkrig.errors import UsageError
from sparkrig.fabric.collectives.results import bus_factor, elements_for
from sparkrig.fabric.collectives.specs import COLLECTIVES, SPECS, spec_of

RANKS = range(2, 9)


@pytest.mark.parametrize("ranks", RANKS)
def test_broadcast_carries_the_whole_buffer_whatever_n(ranks: int) -> None:
    # nccl-tests: broadcast's busBw equals its algBw; (n-1)/n would under-report every link
    assert bus_factor("broadcast", ranks) == 1.0
    assert bus_factor("broadcast", ranks) != (ranks - 1) / ranks


@pytest.mark.parametrize("ranks", RANKS)
def test_factors_are_nccl_tests_ones(ranks: int) -> None:
    share = (ranks - 1) / ranks
    assert bus_factor("all_reduce", ranks) == pytest.approx(2 * share)
    for name in ("all_gather", "reduce_scatter", "all_to_all"):
        assert bus_factor(name, ranks) == pytest.approx(share)


def test_the_fabric_test_runs_every_spec_with_both_implementations() -> None:
    assert COLLECTIVES == ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
    for name in COLLECTIVES:
        spec = SPECS[name]
        assert set(spec.implementations()) == {"builtin", "sparkrig"}
        assert spec.reference is not None
    # a spec without a sparkrig implementation is known but not run
    assert "broadcast" in SPECS
    assert "broadcast" not in COLLECTIVES
    assert SPECS["broadcast"].implementations() == {}


def test_sizes_count_the_buffer_nccl_tests_counts() -> None:
    assert elements_for("broadcast", 8192, 4, 4) == 2048
    assert elements_for("reduce_scatter", 8192, 4, 4) == 2048
    assert spec_of("all_gather").elements(8192, 4, 4) == 512
    # inputs cut into one block per rank stay whole multiples of the rank count
    for name in COLLECTIVES:
        if SPECS[name].input_split:
            assert elements_for(name, 8192 + 12, 4, 4) % 4 == 0


def test_an_unknown_collective_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="'gather' is not known — use one of all_reduce"):
        bus_factor("gather", 4)


def test_references_are_what_each_rank_must_hold() -> None:
    torch = pytest.importorskip("torch")
    inputs = [torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([10.0, 20.0, 30.0, 40.0])]

    def reference(name: str, rank: int) -> list[float]:
        check = SPECS[name].reference
        assert check is not None
        return [float(v) for v in check(inputs, rank).tolist()]

    assert reference("all_reduce", 1) == [11.0, 22.0, 33.0, 44.0]
    assert reference("all_gather", 0) == [1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]
    assert reference("reduce_scatter", 1) == [33.0, 44.0]
    assert reference("all_to_all", 1) == [3.0, 4.0, 30.0, 40.0]
