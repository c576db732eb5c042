"""The collectives on real processes over Gloo: outputs equal the reference bit for bit (ragged
and empty blocks, -0.0, NaN, infinities, bfloat16 and integers), every rank gets the same
all-reduce bits run after run, and on a fabric that refuses non-neighbours the relayed
all-to-all works while a direct one (what NCCL does) fails."""

from __future__ import annotations

from typing import Any

import pytest

from sparkrig.fabric.collectives.schedule import PARTS, block_bounds, part_bounds, reduction_order
from tests.fabric.collective_ranks import run_ranks

torch = pytest.importorskip("torch")

COUNTS = [0, 1, 5, 1001]  # fewer elements than ranks, ragged, empty last blocks
DTYPES = ["float32", "bfloat16", "float64", "int32"]
BITS = {"float32": "int32", "bfloat16": "int16", "float64": "int64", "int32": "int32"}


def _data(seed: int, count: int, dtype: str) -> Any:
    generator = torch.Generator().manual_seed(seed)
    if dtype == "int32":
        return torch.randint(-1000, 1000, (count,), generator=generator, dtype=torch.int32)
    values = torch.randn(count, generator=generator, dtype=torch.float64)
    values[::5] = -0.0  # the same positions on every rank: the sum keeps its sign
    values[3::11] = float("nan")
    values[4::13] = float("inf")
    return values.to(getattr(torch, dtype))


def _bits(tensor: Any, dtype: str) -> list[int]:
    return [int(v) for v in tensor.contiguous().view(getattr(torch, BITS[dtype])).tolist()]


def _reference_sum(inputs: list[Any], order: list[int]) -> Any:
    total = inputs[order[0]].clone()
    for rank in order[1:]:
        total = total + inputs[rank]
    return total


def _reference_all_reduce(inputs: list[Any], size: int, small: bool) -> Any:
    if small:
        return _reference_sum(inputs, list(range(size)))
    count = inputs[0].numel()
    out = torch.empty_like(inputs[0])
    for block, (start, stop) in enumerate(block_bounds(count, size)):
        for part in range(PARTS):
            first, last = part_bounds(start, stop, part)
            pieces = [x[first:last] for x in inputs]
            out[first:last] = _reference_sum(pieces, reduction_order(size, block, part))
    return out


def check_exactness(rank: int, size: int) -> list[str]:
    """Every collective against its reference; returns the mismatches."""
    from sparkrig.fabric.collectives import execute

    transport = execute.TorchTransport()
    wrong = []
    for dtype in DTYPES:
        for count in COUNTS:
            inputs = [_data(1000 * r + count, count, dtype) for r in range(size)]
            mine = inputs[rank]
            start, stop = block_bounds(count, size)[rank]
            cases = {
                "all_gather": (
                    execute.all_gather(inputs[0][start:stop], count, transport),
                    inputs[0],
                ),
                "reduce_scatter": (
                    execute.reduce_scatter(mine, transport),
                    _reference_all_reduce(inputs, size, False)[start:stop],
                ),
            }
            for small in (True, False):
                limit = 1 << 40 if small else 0
                got = execute.all_reduce(mine, transport, small_bytes=limit)
                again = execute.all_reduce(mine, transport, small_bytes=limit)
                expected = _reference_all_reduce(inputs, size, small)
                cases[f"all_reduce small={small}"] = (got, expected)
                cases[f"all_reduce small={small} again"] = (again, expected)
            chunks = [_data(7 * rank + d, count, dtype) for d in range(size)]
            received = execute.all_to_all(chunks, transport)
            for origin in range(size):
                cases[f"all_to_all from {origin}"] = (
                    received[origin],
                    _data(7 * origin + rank, count, dtype),
                )
            for name, (got, expected) in cases.items():
                if got.dtype != expected.dtype or _bits(got, dtype) != _bits(expected, dtype):
                    wrong.append(f"rank {rank} {name} {dtype} x{count}")
    return wrong


def all_reduce_bits(rank: int, size: int, small_bytes: int) -> list[int]:
    from sparkrig.fabric.collectives import execute

    values = torch.randn(4099, generator=torch.Generator().manual_seed(rank)) * 1e3
    return _bits(execute.all_reduce(values, execute.TorchTransport(), small_bytes), "float32")


def neighbour_only(rank: int, size: int, direct: bool) -> str:
    from sparkrig.fabric.collectives import execute

    transport = execute.NeighbourOnlyTransport(execute.TorchTransport())
    chunks = [torch.full((10,), 100.0 * rank + d) for d in range(size)]
    run = execute.direct_all_to_all if direct else execute.all_to_all
    received = run(chunks, transport)
    return ",".join(str(int(chunk[0])) for chunk in received)


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_every_collective_is_bit_exact(size: int) -> None:
    results = run_ranks(size, check_exactness)
    assert all(status == "ok" for status, _ in results), results
    assert [value for _, value in results] == [[]] * size


def test_the_bit_comparison_tells_two_reduction_orders_apart() -> None:
    """The bit-for-bit comparison the exactness tests use is fine enough to fail on an
    all-reduce that summed in another order (it runs no collective itself)."""
    inputs = [_data(r, 1001, "float32") * 1e6 for r in range(4)]
    inputs = [torch.where(torch.isnan(x) | torch.isinf(x), 1.0, x) for x in inputs]
    one_order = _reference_sum(inputs, [0, 1, 2, 3])
    other_order = _reference_sum(inputs, [3, 2, 1, 0])
    assert _bits(one_order, "float32") != _bits(other_order, "float32")


@pytest.mark.parametrize("small_bytes", [1 << 40, 0])
def test_all_reduce_gives_every_rank_identical_bits(small_bytes: int) -> None:
    results = run_ranks(4, all_reduce_bits, small_bytes)
    values = [value for _, value in results]
    assert all(status == "ok" for status, _ in results), results
    assert all(v == values[0] for v in values)


def test_relayed_all_to_all_passes_where_only_neighbours_are_cabled() -> None:
    results = run_ranks(4, neighbour_only, False)
    assert [value for _, value in results] == [
        ",".join(str(100 * origin + rank) for origin in range(4)) for rank in range(4)
    ]


def test_direct_all_to_all_fails_where_only_neighbours_are_cabled() -> None:
    results = run_ranks(4, neighbour_only, True)
    statuses = [status for status, _ in results]
    assert statuses == ["error"] * 4, results
    assert "NotNeighbourError: rank 0 tried to send to rank 2" in results[0][1]


def test_direct_all_to_all_works_on_a_triangle_where_everyone_is_a_neighbour() -> None:
    results = run_ranks(3, neighbour_only, True)
    assert [value for _, value in results] == ["0,100,200", "1,101,201", "2,102,202"]
