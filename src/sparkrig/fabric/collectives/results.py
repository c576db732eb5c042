"""What `sparkrig fabric test` measures and keeps: the size ladder, nccl-tests' bandwidth
definitions, per cable direction bytes, and the receipt. Pure; no torch."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Literal, NamedTuple

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.errors import UsageError
from sparkrig.fabric.collectives.specs import COLLECTIVES, spec_of
from sparkrig.outside_numbers import int_or_none
from sparkrig.receipts import (
    KIND,
    SCHEMA_VERSION,
    ReceiptHeader,
    load_receipt_file,
    save_receipt_file,
)

IMPLEMENTATIONS = ("builtin", "sparkrig")
REHEARSAL_NOTE = "rehearsal on this machine's loopback: no cable was tested"
"""What a receipt with `rehearsal` says wherever it is shown (terminal table, HTML report)."""
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE = re.compile(r"^\s*(-?\d+)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_sizes(text: str) -> list[int]:
    """`8K,64K,1M` (KiB, MiB, GiB; plain numbers are bytes) to bytes; each must be > 0."""
    sizes = []
    for item in text.split(","):
        match = _SIZE.match(item)
        if match is None:
            raise UsageError(f"--sizes {text!r}: {item!r} is not a size — write e.g. 8K,64K,1M")
        number = int_or_none(match.group(1))
        value = -1 if number is None else number * _UNITS[match.group(2).upper()]
        if value <= 0:
            raise UsageError(
                f"--sizes {text!r}: {item.strip()} is not a positive size — every size must "
                "be at least 1 byte, e.g. 8K,64K,1M"
            )
        sizes.append(value)
    return sizes


def default_ladder(gpu: bool) -> list[int]:
    top = (
        defaults.FABRIC_TEST_LADDER_MAX_GPU_BYTES
        if gpu
        else defaults.FABRIC_TEST_LADDER_MAX_CPU_BYTES
    )
    sizes, size = [], defaults.FABRIC_TEST_LADDER_MIN_BYTES
    while size < top:
        sizes.append(size)
        size *= defaults.FABRIC_TEST_LADDER_FACTOR
    return [*sizes, top]


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' busBw / algBw, from the collective's spec."""
    return spec_of(collective).bus_factor(ranks)


def elements_for(collective: str, size_bytes: int, ranks: int, itemsize: int) -> int:
    """Per-rank input elements for a ladder size, as nccl-tests counts size (the spec says
    which buffer)."""
    return spec_of(collective).elements(size_bytes, ranks, itemsize)


class Point(BaseModel):
    """One collective at one size by one implementation, over every rank."""

    collective: str = Field(description=f"one of {', '.join(COLLECTIVES)}")
    implementation: str = Field(description="builtin (torch.distributed's own) or sparkrig")
    size_bytes: int = Field(description="nccl-tests' size: the buffer the bandwidth counts")
    seconds: float | None = Field(
        description="seconds per iteration, the mean over `iterations`, on the slowest rank"
    )
    algbw_gbps: float | None = Field(
        description="size / time, GB/s (1e9 bytes); unset when no time was measured"
    )
    busbw_gbps: float | None = Field(description="algbw x bus factor (nccl-tests), GB/s")


def make_point(
    collective: str, implementation: str, size_bytes: int, ranks: int, seconds: float | None
) -> Point:
    if seconds is None or seconds <= 0:
        return Point(
            collective=collective,
            implementation=implementation,
            size_bytes=size_bytes,
            seconds=seconds,
            algbw_gbps=None,
            busbw_gbps=None,
        )
    algbw = size_bytes / seconds / 1e9
    return Point(
        collective=collective,
        implementation=implementation,
        size_bytes=size_bytes,
        seconds=seconds,
        algbw_gbps=algbw,
        busbw_gbps=algbw * bus_factor(collective, ranks),
    )


class CheckCount(BaseModel):
    node: str = Field(description="the node the rank ran on")
    rank: int = Field(description="its place in rank_order, from 0")
    passed: int = Field(description="checks whose result equalled the exact answer")
    failed: list[str] = Field(
        default_factory=list,
        description="the checks that did not, each as collective/implementation/dtype/count",
    )


class CableLoad(BaseModel):
    """Bytes one node sent towards one neighbour (both rails of the cable) during one
    collective, from the interfaces' own counters."""

    collective: str = Field(description="the collective run while the counters were read")
    implementation: str = Field(description="builtin (torch.distributed's own) or sparkrig")
    size_bytes: int = Field(description="nccl-tests' size of the run counted")
    src: str = Field(description="the node that sent")
    dst: str = Field(description="the neighbour it sent towards")
    tx_bytes: int = Field(
        description="bytes src's interfaces facing dst sent during one run (the least of "
        f"{defaults.FABRIC_TEST_COUNTER_RUNS} runs)"
    )
    rx_bytes_at_dst: int | None = Field(
        description="what the neighbour's counters received from src over the same run; unset "
        "where it reported none"
    )


class FabricTestReceipt(ReceiptHeader):
    """A fabric test measures the cables, not an endpoint: base URL and model stay None."""

    WRITTEN_BY: ClassVar[str] = "sparkrig fabric test"

    kind: Literal["sparkrig-fabric-test"] = Field(default="sparkrig-fabric-test", description=KIND)
    schema_version: Literal[1] = Field(default=1, description=SCHEMA_VERSION)
    cluster: str = Field(description="the cluster's name (its file's `name`, else the file stem)")
    topology: str = Field(
        description="the shape its cables form: pair-1-cable, pair-2-cables, triangle, ring-N, "
        "mesh-N or switched"
    )
    rank_order: list[str] = Field(
        description="the nodes by rank, from rank 0: the ring the collectives run around"
    )
    executor: str = Field(description="how the nodes were reached: ssh, netns, local (or a mix)")
    rehearsal: bool = Field(
        default=False,
        description="every rank a local process on this machine's loopback (the local executor "
        "for every node): the collectives ran, but no cable was tested",
    )
    backend: str = Field(
        description="the torch.distributed backend the collectives ran on: nccl (GPU) or gloo "
        "(CPU, over TCP)"
    )
    torch_version: str | None = Field(
        default=None, description="torch's version on the rank 0 node, as its probe reported it"
    )
    iterations: int = Field(
        description="timed iterations per collective, implementation and size (--iterations), "
        f"after {defaults.FABRIC_TEST_WARMUP} untimed"
    )
    checks: list[CheckCount] = Field(
        default_factory=list,
        description="per rank, the correctness checks: every collective, implementation, dtype "
        "and element count once, compared with the exact answer",
    )
    points: list[Point] = Field(
        default_factory=list,
        description="the size ladder: one per collective, implementation and size every rank "
        "finished, with nccl-tests' algbw and busbw",
    )
    cable_loads: list[CableLoad] = Field(
        default_factory=list,
        description="bytes each node sent towards each cabled neighbour during one run of each "
        "collective and implementation at one size, from the cable interfaces' own counters; "
        "empty in a rehearsal, and near "
        "zero under nccl, whose RDMA traffic bypasses them",
    )
    problems: list[str] = Field(
        default_factory=list,
        description="what stopped the run, in words (a rank that failed or hung, named); empty "
        "when it ran through",
    )

    @property
    def subject(self) -> str:
        return self.cluster

    @property
    def cables_idle(self) -> bool:
        """A gloo run whose cable interfaces' counters were read and none sent a byte: the
        collectives ran over another network (a management LAN), so the run says nothing about
        the cables. Only gloo's bytes pass the kernel's netdev counters; NCCL's RDMA traffic
        bypasses them, so an honest NCCL run reads near zero there and is not judged by them."""
        return (
            self.backend == "gloo"
            and bool(self.cable_loads)
            and not any(load.tx_bytes for load in self.cable_loads)
        )


def save_receipt(receipt: FabricTestReceipt, path: Path) -> None:
    save_receipt_file(receipt, path)


def load_receipt(path: Path) -> FabricTestReceipt:
    return load_receipt_file(path, FabricTestReceipt)


def ratio(points: list[Point], collective: str, size_bytes: int) -> float | None:
    """sparkrig busbw / built-in busbw at one size; None when either is missing."""
    by_impl = {
        p.implementation: p.busbw_gbps
        for p in points
        if p.collective == collective and p.size_bytes == size_bytes
    }
    ours, theirs = by_impl.get("sparkrig"), by_impl.get("builtin")
    if not ours or not theirs:
        return None
    return ours / theirs


class LadderRow(NamedTuple):
    """One collective at one size, built-in and sparkrig side by side (either may be missing)."""

    collective: str
    size_bytes: int
    builtin: Point | None
    ours: Point | None
    ratio: float | None


def ladder_rows(receipt: FabricTestReceipt) -> list[LadderRow]:
    """The ladder as the terminal table and the HTML report both show it: by collective, then
    size; a size no implementation measured for that collective is left out."""
    rows = []
    for collective in COLLECTIVES:
        for size in sorted({p.size_bytes for p in receipt.points}):
            found = {
                p.implementation: p
                for p in receipt.points
                if p.collective == collective and p.size_bytes == size
            }
            if found:
                builtin, ours = found.get("builtin"), found.get("sparkrig")
                rows.append(
                    LadderRow(
                        collective, size, builtin, ours, ratio(receipt.points, collective, size)
                    )
                )
    return rows


def size_label(value: int) -> str:
    """8192 -> '8 KiB', 268435456 -> '256 MiB'; other values in bytes."""
    for unit, scale in (("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return f"{value} B"
