"""Run the schedules on torch tensors over point-to-point sends and receives.

Each round of a schedule becomes one batch (`torch.distributed.batch_isend_irecv`) with at most
one message to and one from each neighbour: the pieces for a peer are packed in schedule order,
which both ends know. So the same code runs on Gloo (CPU) and NCCL (GPU), and a transport that
refuses non-neighbours (`NeighbourOnlyTransport`) never sees one.

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
        all are done."""
        ...


class TorchTransport:
    """Point-to-point over the default process group (Gloo or NCCL)."""

    def __init__(self) -> None:
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()

    def exchange(
        self, sends: Sequence[tuple[int, torch.Tensor]], recvs: Sequence[tuple[int, torch.Tensor]]
    ) -> None:
        ops = [dist.P2POp(dist.isend, tensor, peer) for peer, tensor in sends]
        ops += [dist.P2POp(dist.irecv, tensor, peer) for peer, tensor in recvs]
        if not ops:
            return
        for request in dist.batch_isend_irecv(ops):
            request.wait()


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
Sink = Callable[[Transfer, torch.Tensor], None]
SizeOf = Callable[[Transfer], int]


def run_schedule(
    transport: Transport,
    schedule: Schedule,
    like: torch.Tensor,
    pieces: tuple[Source, Sink, SizeOf],
) -> None:
    """Every round: pack this rank's outgoing pieces per peer, exchange, unpack into the sink.
    `like` gives dtype and device of the receive buffers; `size_of` a piece's element count,
    which the receiver knows from the layout alone."""
    source, sink, size_of = pieces
    rank = transport.rank
    for moves in schedule:
        outgoing: dict[int, list[torch.Tensor]] = defaultdict(list)
        incoming: dict[int, list[Transfer]] = defaultdict(list)
        for move in moves:
            if move.src == rank:
                outgoing[move.dst].append(source(move))
            elif move.dst == rank:
                incoming[move.src].append(move)
        sends = [(peer, _packed(pieces)) for peer, pieces in sorted(outgoing.items())]
        sizes = {peer: [size_of(m) for m in got] for peer, got in incoming.items()}
        buffers = {
            peer: torch.empty(sum(counts), dtype=like.dtype, device=like.device)
            for peer, counts in sizes.items()
        }
        transport.exchange(
            [(peer, tensor) for peer, tensor in sends if tensor.numel()],
            [(peer, buffer) for peer, buffer in sorted(buffers.items()) if buffer.numel()],
        )
        for peer, got in incoming.items():
            for move, piece in zip(got, _split(buffers[peer], sizes[peer]), strict=True):
                sink(move, piece)


def _split(buffer: torch.Tensor, counts: list[int]) -> list[torch.Tensor]:
    pieces, start = [], 0
    for count in counts:
        pieces.append(buffer[start : start + count])
        start += count
    return pieces


def _packed(pieces: list[torch.Tensor]) -> torch.Tensor:
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces)


class _Pieces:
    """Source and sink for layouts of one flat tensor (reduce-scatter, all-gather)."""

    def __init__(self, numel: int, size: int) -> None:
        self.numel = numel
        self.size = size

    def bounds(self, move: Transfer) -> tuple[int, int]:
        return piece_bounds(self.numel, self.size, move.block, move.part)

    def size_of(self, move: Transfer) -> int:
        start, stop = self.bounds(move)
        return stop - start


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

    def sink(move: Transfer, received: torch.Tensor) -> None:
        start, stop = layout.bounds(move)
        partial[move.block, move.part] = received + own[start:stop]

    pieces = (source, sink, layout.size_of)
    run_schedule(transport, reduce_scatter_schedule(transport.size), own, pieces)
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

    def sink(move: Transfer, received: torch.Tensor) -> None:
        first, last = layout.bounds(move)
        out[first:last] = received

    pieces = (source, sink, layout.size_of)
    run_schedule(transport, all_gather_schedule(transport.size), out, pieces)
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

    def sink(move: Transfer, received: torch.Tensor) -> None:
        if move.block == rank:
            start, stop = part_bounds(0, count, move.part)
            out[move.origin][start:stop] = received
        else:
            relayed[move.origin, move.block, move.part] = received

    def size_of(move: Transfer) -> int:
        start, stop = part_bounds(0, count, move.part)
        return stop - start

    run_schedule(transport, all_to_all_schedule(size), flats[0], (source, sink, size_of))
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
