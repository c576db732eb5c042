"""Which piece of which block goes from which rank to which neighbour in which round.

Pure functions, no torch: a schedule is a list of rounds, each a list of `Transfer`s between
ring neighbours only (rank r's neighbours are r-1 and r+1 mod N). The executor
(`sparkrig.fabric.collectives.execute`) runs a round as one batch of sends and receives.

Layout: a flat tensor of `numel` elements is cut into N blocks of ceil(numel / N) elements (the
last ones short or empty), and every block into two parts (ceil half, floor half), so the two
ring directions can each carry one part. All-to-all blocks are the N equal chunks of a rank's
input; its pieces are named by origin rank, destination block and part.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

from sparkrig.errors import CablingError
from sparkrig.fabric.plan_model import FabricPlan

PARTS = 2  # one part per ring direction


@dataclass(frozen=True)
class Transfer:
    """One piece moving one hop, from `src` to its neighbour `dst`."""

    src: int
    dst: int
    origin: int
    """rank whose data this is (all-to-all, all-gather); the block's owner for reduce-scatter"""
    block: int
    """block index: the destination rank for all-to-all, the owner for gather / scatter"""
    part: int
    """0 travels clockwise (r -> r+1), 1 counter-clockwise, except on untied shortest paths"""
    reduce: bool = False
    """the receiver adds its own contribution before passing it on"""


Schedule = list[list[Transfer]]


def check_ring(size: int) -> None:
    if size < 2:
        raise CablingError(
            f"a ring collective needs at least 2 ranks, got {size} — run it on a pair or larger"
        )


def refuse_line(names: list[str]) -> None:
    """A line has no cable from its last node to its first: the ring cannot close."""
    raise CablingError(
        f"nodes {','.join(names)} form a line, not a ring: {names[-1]} has no cable to "
        f"{names[0]} — cable {names[-1]} to {names[0]}, or run on 2 neighbouring nodes"
    )


def ring_of(plan: FabricPlan) -> list[str]:
    """The plan's nodes in ring order (rank r's neighbours are r-1 and r+1); a line or a single
    node is refused."""
    if plan.topology.startswith("line-"):
        refuse_line(plan.rank_order)
    check_ring(len(plan.rank_order))
    return list(plan.rank_order)


def block_bounds(numel: int, blocks: int) -> list[tuple[int, int]]:
    """[start, stop) of each block: ceil-sized blocks, the last ones short or empty."""
    width = -(-numel // blocks) if numel else 0
    return [(min(i * width, numel), min((i + 1) * width, numel)) for i in range(blocks)]


def part_bounds(start: int, stop: int, part: int) -> tuple[int, int]:
    middle = start + (stop - start + 1) // 2
    return (start, middle) if part == 0 else (middle, stop)


def piece_bounds(numel: int, size: int, block: int, part: int) -> tuple[int, int]:
    start, stop = block_bounds(numel, size)[block]
    return part_bounds(start, stop, part)


def _step(part: int) -> int:
    return 1 if part == 0 else -1


def reduce_scatter_schedule(size: int) -> Schedule:
    """Ring reduce-scatter in both directions at once: part 0 of every block is reduced going
    clockwise, part 1 counter-clockwise; rank r ends with block r reduced. N-1 rounds."""
    check_ring(size)
    rounds: Schedule = []
    for step in range(size - 1):
        moves = []
        for rank in range(size):
            for part in range(PARTS):
                direction = _step(part)
                block = (rank - direction * (step + 1)) % size
                dst = (rank + direction) % size
                moves.append(Transfer(rank, dst, block, block, part, reduce=True))
        rounds.append(moves)
    return rounds


def reduction_order(size: int, block: int, part: int) -> list[int]:
    """Ranks in the order reduce-scatter adds them for (block, part): the partial starts at the
    rank after the owner in the part's direction and ends with the owner's own data."""
    direction = _step(part)
    return [(block + direction * k) % size for k in range(1, size + 1)]


def _ways(size: int, src: int, dst: int) -> list[tuple[int, list[int]]]:
    """(part, path) for the shortest way round from src to dst; both parts when two ways tie.
    For a whole block on one way both parts take it."""
    forward = (dst - src) % size
    backward = (src - dst) % size
    clockwise = [(src + k) % size for k in range(forward + 1)]
    counter = [(src - k) % size for k in range(backward + 1)]
    if forward < backward:
        return [(0, clockwise), (1, clockwise)]
    if backward < forward:
        return [(0, counter), (1, counter)]
    return [(0, clockwise), (1, counter)]


def all_to_all_schedule(size: int) -> Schedule:
    """Rank s's block d reaches d by the shortest way round, forwarded hop by hop; a block whose
    two ways tie (d opposite s on an even ring) sends one half each way. floor(N/2) rounds."""
    check_ring(size)
    rounds: Schedule = [[] for _ in range(size // 2)]
    for src in range(size):
        for dst in range(size):
            if src == dst:
                continue
            for part, path in _ways(size, src, dst):
                for hop, (here, there) in enumerate(itertools.pairwise(path)):
                    rounds[hop].append(Transfer(here, there, src, dst, part))
    return rounds


def all_gather_schedule(size: int) -> Schedule:
    """Every rank's block reaches every other rank by the shortest way round, each intermediate
    rank keeping a copy as it forwards; ties (the opposite rank) get one half from each side.
    floor(N/2) rounds."""
    check_ring(size)
    rounds: Schedule = [[] for _ in range(size // 2)]
    for origin in range(size):
        for part in range(PARTS):
            for direction in (1, -1):
                # untied ranks get both parts from each side; the opposite rank of an even ring
                # gets part 0 clockwise and part 1 counter-clockwise
                hops = (size - 1) // 2
                if size % 2 == 0 and (part == 0) == (direction == 1):
                    hops = size // 2
                for hop in range(hops):
                    here = (origin + direction * hop) % size
                    there = (origin + direction * (hop + 1)) % size
                    rounds[hop].append(Transfer(here, there, origin, origin, part))
    return rounds


def all_reduce_schedule(size: int) -> Schedule:
    """Reduce-scatter in both directions, then the all-gather of each rank's reduced block."""
    return reduce_scatter_schedule(size) + all_gather_schedule(size)


def cable_elements(schedule: Schedule, numel: int, size: int) -> dict[tuple[int, int], int]:
    """Elements carried per cable direction (src, dst) for a tensor of `numel` elements cut in
    N blocks (for all-to-all: per block of the chunk, `numel` being one chunk)."""
    carried: dict[tuple[int, int], int] = defaultdict(int)
    for moves in schedule:
        for move in moves:
            carried[move.src, move.dst] += _piece_elements(move, numel, size)
    return dict(carried)


def _piece_elements(move: Transfer, numel: int, size: int) -> int:
    start, stop = piece_bounds(numel, size, move.block, move.part)
    return stop - start


def chunk_piece_elements(chunk: int, part: int) -> int:
    start, stop = part_bounds(0, chunk, part)
    return stop - start


def all_to_all_cable_elements(size: int, chunk: int) -> dict[tuple[int, int], int]:
    """Elements per cable direction when every chunk has `chunk` elements."""
    carried: dict[tuple[int, int], int] = defaultdict(int)
    for moves in all_to_all_schedule(size):
        for move in moves:
            carried[move.src, move.dst] += chunk_piece_elements(chunk, move.part)
    return dict(carried)
