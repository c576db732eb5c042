"""The schedules, without torch: every transfer between neighbours, every piece sent only once it
is held, every rank ending with exactly what the collective promises, and each cable direction's
load, for rings of 2 to 8 ranks."""

from __future__ import annotations

from collections import Counter

import pytest

from sparkrig.errors import CablingError
from sparkrig.fabric.collectives.schedule import (
    PARTS,
    Schedule,
    Transfer,
    all_gather_schedule,
    all_reduce_schedule,
    all_to_all_cable_elements,
    all_to_all_schedule,
    block_bounds,
    cable_elements,
    check_ring,
    reduce_scatter_schedule,
    reduction_order,
    refuse_line,
    ring_of,
)

SIZES = range(2, 9)


def _neighbours(size: int, src: int, dst: int) -> bool:
    return (dst - src) % size in {1, size - 1}


def _every_transfer_is_between_neighbours(schedule: Schedule, size: int) -> None:
    for moves in schedule:
        for move in moves:
            assert _neighbours(size, move.src, move.dst), move


def _simulate_copies(
    schedule: Schedule, held: list[set[tuple[int, int, int]]]
) -> list[set[tuple[int, int, int]]]:
    """Pieces as (origin, block, part): a sender must hold a piece at the start of the round."""
    for moves in schedule:
        start = [set(h) for h in held]
        for move in moves:
            key = (move.origin, move.block, move.part)
            assert key in start[move.src], f"{move} sends a piece rank {move.src} lacks"
            assert key not in start[move.dst], f"{move} sends a piece rank {move.dst} has"
            held[move.dst].add(key)
    return held


@pytest.mark.parametrize("size", SIZES)
def test_all_to_all_delivers_every_chunk_through_neighbours_only(size: int) -> None:
    schedule = all_to_all_schedule(size)
    _every_transfer_is_between_neighbours(schedule, size)
    assert len(schedule) == size // 2
    held = [{(r, d, p) for d in range(size) for p in range(PARTS)} for r in range(size)]
    held = _simulate_copies(schedule, held)
    for rank in range(size):
        arrived = {(o, b, p) for o, b, p in held[rank] if b == rank}
        assert arrived == {(o, rank, p) for o in range(size) for p in range(PARTS)}


@pytest.mark.parametrize("size", SIZES)
def test_all_to_all_far_chunks_take_the_shortest_way_and_halve_on_ties(size: int) -> None:
    hops: Counter[tuple[int, int, int]] = Counter()
    first_hop: dict[tuple[int, int, int], int] = {}
    for moves in all_to_all_schedule(size):
        for move in moves:
            key = (move.origin, move.block, move.part)
            hops[key] += 1
            first_hop.setdefault(key, move.dst)
    for (origin, block, part), count in hops.items():
        forward, backward = (block - origin) % size, (origin - block) % size
        assert count == min(forward, backward)
        if forward == backward:  # the tie: part 0 clockwise, part 1 counter-clockwise
            assert first_hop[origin, block, part] == (origin + (1 if part == 0 else -1)) % size


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("chunk", [6, 1024])
def test_all_to_all_loads_every_cable_direction_equally(size: int, chunk: int) -> None:
    carried = all_to_all_cable_elements(size, chunk)
    directions = {(r, (r + 1) % size) for r in range(size)} | {
        ((r + 1) % size, r) for r in range(size)
    }
    assert set(carried) == directions
    # per direction: every chunk closer than half-way rides k hops, ties ride half each way
    expected = chunk * sum(range(1, (size + 1) // 2))
    if size % 2 == 0:
        expected += chunk // 2 * size // 2
    if size == 2:  # both directions of the one neighbour are the same cable direction
        expected = chunk
    assert set(carried.values()) == {expected}, carried


def test_all_to_all_odd_chunks_differ_by_at_most_the_odd_elements() -> None:
    carried = all_to_all_cable_elements(4, 7)
    assert max(carried.values()) - min(carried.values()) <= 4


@pytest.mark.parametrize("size", SIZES)
def test_reduce_scatter_adds_every_rank_once_in_the_declared_order(size: int) -> None:
    schedule = reduce_scatter_schedule(size)
    _every_transfer_is_between_neighbours(schedule, size)
    assert len(schedule) == size - 1
    # partial[rank][(block, part)]: ranks summed so far, in order
    partial = [{(b, p): (r,) for b in range(size) for p in range(PARTS)} for r in range(size)]
    received: set[tuple[int, int, int]] = set()
    for moves in schedule:
        start = [dict(p) for p in partial]
        for move in moves:
            assert move.reduce
            key = (move.dst, move.block, move.part)
            assert key not in received, f"{move}: a rank receives each piece once"
            received.add(key)
            partial[move.dst][move.block, move.part] = start[move.src][move.block, move.part] + (
                move.dst,
            )
    for rank in range(size):
        for part in range(PARTS):
            order = partial[rank][rank, part]
            assert order == tuple(reduction_order(size, rank, part))
            assert sorted(order) == list(range(size))


@pytest.mark.parametrize("size", SIZES)
def test_all_gather_gives_every_rank_every_block_once(size: int) -> None:
    schedule = all_gather_schedule(size)
    _every_transfer_is_between_neighbours(schedule, size)
    assert len(schedule) == size // 2
    held = [{(r, r, p) for p in range(PARTS)} for r in range(size)]
    held = _simulate_copies(schedule, held)
    for rank in range(size):
        assert held[rank] == {(o, o, p) for o in range(size) for p in range(PARTS)}


@pytest.mark.parametrize("size", SIZES)
def test_all_reduce_loads_every_cable_direction_with_the_ring_optimum(size: int) -> None:
    numel = 2 * size * 96  # every block splits into equal halves
    carried = cable_elements(all_reduce_schedule(size), numel, size)
    # a ring all-reduce moves 2(N-1)/N of the tensor per rank: half of it each way
    expected = (size - 1) * numel // size
    if size == 2:
        expected *= 2
    assert set(carried.values()) == {expected}, carried
    assert len(carried) == (2 if size == 2 else 2 * size)


@pytest.mark.parametrize(
    ("numel", "blocks", "expected"),
    [
        (10, 4, [(0, 3), (3, 6), (6, 9), (9, 10)]),  # a short last block
        (5, 4, [(0, 2), (2, 4), (4, 5), (5, 5)]),  # and an empty one
        (0, 3, [(0, 0), (0, 0), (0, 0)]),
    ],
)
def test_blocks_are_ceil_sized_with_short_and_empty_last_blocks(
    numel: int, blocks: int, expected: list[tuple[int, int]]
) -> None:
    assert block_bounds(numel, blocks) == expected


def test_a_ring_needs_two_ranks() -> None:
    with pytest.raises(CablingError, match="at least 2 ranks"):
        check_ring(1)


def test_a_line_is_refused_with_the_cable_that_would_close_it() -> None:
    with pytest.raises(CablingError, match=r"a,b,c form a line.*cable c to a"):
        refuse_line(["a", "b", "c"])


def test_ring_of_a_plan_refuses_a_line_and_accepts_a_ring() -> None:
    from sparkrig.config.loading import parse_cluster
    from sparkrig.fabric.plan import plan_fabric

    def plan(cables: str) -> object:
        nodes = "".join(f'[[nodes]]\nname = "{n}"\n' for n in "abc")
        return plan_fabric(parse_cluster(f"cables = [{cables}]\n{nodes}", "x.toml"))

    line = plan('"a.p0 <-> b.p1", "b.p0 <-> c.p1"')
    with pytest.raises(CablingError, match="form a line, not a ring"):
        ring_of(line)  # type: ignore[arg-type]
    triangle = plan('"a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> a.p1"')
    assert ring_of(triangle) == ["a", "b", "c"]  # type: ignore[arg-type]


def test_transfers_are_hashable_records() -> None:
    assert Transfer(0, 1, 0, 1, 0) == Transfer(0, 1, 0, 1, 0, reduce=False)
