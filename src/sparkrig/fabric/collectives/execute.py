"""Run the schedules on torch tensors over point-to-point sends and receives.

Each round of a schedule becomes one batch (`torch.distributed.batch_isend_irecv`) of one
message per piece, tagged by its position among the messages between the same two ranks, so
pieces land straight where they belong without packing copies. The same code runs on Gloo (CPU)
and NCCL (GPU), and a transport that refuses non-neighbours (`NeighbourOnlyTransport`) never
sees one.

Needs the optional dependency: `pip install 'sparkrig[collectives]'`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Protocol

import torch
import torch.distributed as dist

from sparkrig import defaults
from sparkrig.errors import SparkrigError, UsageError
from sparkrig.fabric.collectives.schedule import (
    PARTS,
    Schedule,
    Transfer,
    all_gather_schedule,
    all_to_all_schedule,
    block_bounds,
    check_ring,
    part_bounds,
    piece_bounds,
    reduce_scatter_schedule,
)


class NotNeighbourError(SparkrigError):
    """A send or receive to a rank that shares no cable with this one."""


class Transport(Protocol):
    rank: int
    size: int

    def exchange(
        self, sends: Sequence[tuple[int, torch.Tensor]], recvs: Sequence[tuple[int, torch.Tensor]]
    ) -> None:
        """Send each tensor to its peer and fill each receive buffer from its peer; return when
        all are done. Several messages to one peer pair up in order: the k-th send to a peer
        fills that peer's k-th receive from this rank."""
        ...


class TorchTransport:
    """Point-to-point over the default process group (Gloo or NCCL)."""

    def __init__(self) -> None:
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()

    def exchange(
        self, sends: Sequence[tuple[int, torch.Tensor]], recvs: Sequence[tuple[int, torch.Tensor]]
    ) -> None:
        # the k-th message between two ranks carries tag k (Gloo matches by tag; NCCL by order)
        ops = [dist.P2POp(dist.isend, t, peer, tag=tag) for peer, t, tag in _tagged(sends)]
        ops += [dist.P2POp(dist.irecv, t, peer, tag=tag) for peer, t, tag in _tagged(recvs)]
        if not ops:
            return
        for request in dist.batch_isend_irecv(ops):
            request.wait()


def _tagged(
    messages: Sequence[tuple[int, torch.Tensor]],
) -> list[tuple[int, torch.Tensor, int]]:
    count: dict[int, int] = defaultdict(int)
    out = []
    for peer, tensor in messages:
        out.append((peer, tensor, count[peer]))
        count[peer] += 1
    return out


class NeighbourOnlyTransport:
    """A fabric without relays: any send or receive to a rank that is not r-1 or r+1 raises.
    What a switchless ring's RDMA data plane allows."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.rank = inner.rank
        self.size = inner.size

    def exchange(
        self, sends: Sequence[tuple[int, torch.Tensor]], recvs: Sequence[tuple[int, torch.Tensor]]
    ) -> None:
        neighbours = {(self.rank + 1) % self.size, (self.rank - 1) % self.size}
        for verb, peers in (("send to", sends), ("receive from", recvs)):
            for peer, _ in peers:
                if peer not in neighbours:
                    raise NotNeighbourError(
                        f"rank {self.rank} tried to {verb} rank {peer}, which shares no cable "
                        "with it — use the relayed sparkrig collectives on a switchless ring"
                    )
        self.inner.exchange(sends, recvs)


Source = Callable[[Transfer], torch.Tensor]
"""the tensor this rank sends for a transfer"""
Landing = Callable[[Transfer], torch.Tensor]
"""the buffer a transfer is received into: where it belongs (copies) or scratch (reductions,
relays); its size follows from the layout alone, so both ends agree"""
Landed = Callable[[Transfer, torch.Tensor], None]
"""what to do once it arrived: add own data, keep it for forwarding, or nothing"""


def run_schedule(
    transport: Transport, schedule: Schedule, pieces: tuple[Source, Landing, Landed]
) -> None:
    """Every round: one batch with a message per piece to or from this rank (empty pieces
    skipped on both ends), received straight where it lands."""
    source, landing, landed = pieces
    rank = transport.rank
    for moves in schedule:
        sends = [(move.dst, source(move)) for move in moves if move.src == rank]
        arriving = [(move, landing(move)) for move in moves if move.dst == rank]
        transport.exchange(
            [(peer, tensor) for peer, tensor in sends if tensor.numel()],
            [(move.src, buffer) for move, buffer in arriving if buffer.numel()],
        )
        for move, buffer in arriving:
            landed(move, buffer)


def _nothing(move: Transfer, buffer: torch.Tensor) -> None:
    del move, buffer


class _Pieces:
    """Source and sink for layouts of one flat tensor (reduce-scatter, all-gather)."""

    def __init__(self, numel: int, size: int) -> None:
        self.numel = numel
        self.size = size

    def bounds(self, move: Transfer) -> tuple[int, int]:
        return piece_bounds(self.numel, self.size, move.block, move.part)

    def scratch(self, like: torch.Tensor) -> Landing:
        def landing(move: Transfer) -> torch.Tensor:
            start, stop = self.bounds(move)
            return like.new_empty(stop - start)

        return landing


def _flat(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().view(-1)


def reduce_scatter(tensor: torch.Tensor, transport: Transport) -> torch.Tensor:
    """Sum over ranks of `tensor`, of which this rank returns block `rank` (ceil-sized blocks of
    the flattened tensor). Each part's sum is added in `schedule.reduction_order`."""
    check_ring(transport.size)
    own = _flat(tensor)
    layout = _Pieces(own.numel(), transport.size)
    partial: dict[tuple[int, int], torch.Tensor] = {}

    def source(move: Transfer) -> torch.Tensor:
        start, stop = layout.bounds(move)
        return partial.get((move.block, move.part), own[start:stop])

    def landed(move: Transfer, received: torch.Tensor) -> None:
        start, stop = layout.bounds(move)
        partial[move.block, move.part] = received + own[start:stop]

    pieces = (source, layout.scratch(own), landed)
    run_schedule(transport, reduce_scatter_schedule(transport.size), pieces)
    rank = transport.rank
    return torch.cat([partial[rank, part] for part in range(PARTS)])


def all_gather(block: torch.Tensor, numel: int, transport: Transport) -> torch.Tensor:
    """The flat tensor of `numel` elements whose block r (ceil-sized) rank r holds."""
    check_ring(transport.size)
    start, stop = block_bounds(numel, transport.size)[transport.rank]
    if block.numel() != stop - start:
        raise UsageError(
            f"rank {transport.rank} holds {block.numel()} elements but block {transport.rank} "
            f"of {numel} has {stop - start} — pass this rank's block of the full tensor"
        )
    out = torch.empty(numel, dtype=block.dtype, device=block.device)
    out[start:stop] = _flat(block)
    layout = _Pieces(numel, transport.size)

    def source(move: Transfer) -> torch.Tensor:
        first, last = layout.bounds(move)
        return out[first:last]

    # a piece lands where it belongs, and is forwarded from there
    run_schedule(transport, all_gather_schedule(transport.size), (source, source, _nothing))
    return out


def all_reduce(
    tensor: torch.Tensor,
    transport: Transport,
    small_bytes: int = defaults.COLLECTIVES_SMALL_ALL_REDUCE_BYTES,
) -> torch.Tensor:
    """Sum over ranks, identical bits on every rank. Small tensors: gather every rank's tensor
    by the shortest way round and add them in rank order 0..N-1 (floor(N/2) rounds). Larger:
    reduce-scatter in both ring directions, then all-gather (N-1 + floor(N/2) rounds)."""
    check_ring(transport.size)
    flat = _flat(tensor)
    if flat.numel() * flat.element_size() <= small_bytes:
        count = flat.numel()
        stacked = all_gather(flat, count * transport.size, transport).view(transport.size, count)
        total = stacked[0].clone()
        for rank in range(1, transport.size):
            total += stacked[rank]
        return total.view(tensor.shape)
    block = reduce_scatter(flat, transport)
    return all_gather(block, flat.numel(), transport).view(tensor.shape)


def all_to_all(chunks: Sequence[torch.Tensor], transport: Transport) -> list[torch.Tensor]:
    """chunks[d] goes to rank d; returns the chunk every rank sent here, by origin. Chunks have
    one shape and dtype on every rank. Far chunks are relayed by the neighbours."""
    check_ring(transport.size)
    rank, size = transport.rank, transport.size
    flats = _chunks(chunks, size)
    count = flats[0].numel()
    out = [torch.empty_like(flats[0]) for _ in range(size)]
    out[rank] = flats[rank].clone()
    relayed: dict[tuple[int, int, int], torch.Tensor] = {}

    def source(move: Transfer) -> torch.Tensor:
        if move.origin == rank:
            start, stop = part_bounds(0, count, move.part)
            return flats[move.block][start:stop]
        return relayed.pop((move.origin, move.block, move.part))

    def landing(move: Transfer) -> torch.Tensor:
        start, stop = part_bounds(0, count, move.part)
        if move.block == rank:  # straight into the output
            return out[move.origin][start:stop]
        return flats[0].new_empty(stop - start)

    def landed(move: Transfer, received: torch.Tensor) -> None:
        if move.block != rank:
            relayed[move.origin, move.block, move.part] = received

    run_schedule(transport, all_to_all_schedule(size), (source, landing, landed))
    return [chunk.view(chunks[0].shape) for chunk in out]


def direct_all_to_all(chunks: Sequence[torch.Tensor], transport: Transport) -> list[torch.Tensor]:
    """What NCCL's grouped send/recv all-to-all does: one send to every other rank at once. On
    a switchless ring of 4 or more it needs cables that do not exist."""
    rank, size = transport.rank, transport.size
    flats = _chunks(chunks, size)
    out = [torch.empty_like(flats[0]) for _ in range(size)]
    out[rank] = flats[rank].clone()
    peers = [peer for peer in range(size) if peer != rank]
    transport.exchange([(p, flats[p]) for p in peers], [(p, out[p]) for p in peers])
    return [chunk.view(chunks[0].shape) for chunk in out]


def _chunks(chunks: Sequence[torch.Tensor], size: int) -> list[torch.Tensor]:
    if len(chunks) != size:
        raise UsageError(f"all-to-all takes one chunk per rank, got {len(chunks)} for {size}")
    first = chunks[0]
    if any(c.shape != first.shape or c.dtype != first.dtype for c in chunks):
        raise UsageError("all-to-all chunks differ in shape or dtype — give every chunk one")
    return [_flat(chunk) for chunk in chunks]
