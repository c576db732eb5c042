"""The fabric test's work on one rank: correctness of built-in and sparkrig collectives, timings
per ladder size, and interface counters around one run of each. Runs inside the process group
the worker joined; results are plain dicts the worker prints as JSON lines."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from sparkrig import defaults
from sparkrig.fabric.collectives import execute
from sparkrig.fabric.collectives.results import IMPLEMENTATIONS, elements_for
from sparkrig.fabric.collectives.specs import COLLECTIVES, Implementation, spec_of

Collective = Callable[[torch.Tensor], torch.Tensor]


def implementations(collective: str) -> dict[str, Collective]:
    """The collective's implementations (from its spec), bound to this process group."""
    size = dist.get_world_size()
    transport = execute.TorchTransport()
    return {
        name: functools.partial(_bound, run, size, transport)
        for name, run in spec_of(collective).implementations().items()
    }


def _bound(
    run: Implementation, size: int, transport: execute.Transport, x: torch.Tensor
) -> torch.Tensor:
    return run(x, size, transport)


def _inputs(rank: int, count: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    # small integers: every sum is exact in every dtype, whatever order a backend adds in
    generator = torch.Generator().manual_seed(rank * 1_000_003 + count)
    return torch.randint(-8, 9, (count,), generator=generator).to(dtype).to(device)


def correctness(device: str, wrong: str | None = None) -> tuple[int, list[str]]:
    """Every collective, implementation, dtype and count once; (passed, failed names).

    `wrong` names a collective whose sparkrig result this rank alters (one element off by one)
    before it is checked: a fault, so a test can show a wrong implementation is caught."""
    rank, size = dist.get_rank(), dist.get_world_size()
    passed, failed = 0, []
    for collective in COLLECTIVES:
        spec = spec_of(collective)
        for name, run in implementations(collective).items():
            for dtype_name in defaults.FABRIC_TEST_CHECK_DTYPES:
                dtype = getattr(torch, dtype_name)
                for base in defaults.FABRIC_TEST_CHECK_COUNTS:
                    count = base * size if spec.input_split else base
                    inputs = [_inputs(r, count, dtype, device) for r in range(size)]
                    got = run(inputs[rank])
                    if collective == wrong and name == "sparkrig":
                        got = got.clone()
                        got.view(-1)[0] += 1
                    if spec.reference is not None and torch.equal(
                        got, spec.reference(inputs, rank)
                    ):
                        passed += 1
                    else:
                        failed.append(f"{collective}/{name}/{dtype_name}/{count}")
    return passed, failed


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def ladder_step(size_bytes: int, iterations: int, warmup: int, device: str) -> list[dict[str, Any]]:
    """Mean seconds per iteration of each collective and implementation at one size."""
    ranks = dist.get_world_size()
    points = []
    for collective in COLLECTIVES:
        count = elements_for(collective, size_bytes, ranks, 4)
        x = torch.ones(count, dtype=torch.float32, device=device)
        for name, run in implementations(collective).items():
            for _ in range(warmup):
                run(x)
            _synchronize(device)
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iterations):
                run(x)
            _synchronize(device)
            seconds = (time.perf_counter() - start) / iterations
            points.append(
                {
                    "collective": collective,
                    "implementation": name,
                    "size_bytes": size_bytes,
                    "seconds": seconds,
                }
            )
    return points


def counted(
    size_bytes: int,
    device: str,
    interfaces: list[str],
    read: Callable[[list[str]], dict[str, tuple[int, int]]],
) -> list[dict[str, Any]]:
    """Interface (rx, tx) byte deltas around a run of each collective and implementation, with
    barriers before and after so only that run's traffic (and the barriers') is counted; the
    least of `FABRIC_TEST_COUNTER_RUNS` runs per interface, so a TCP retransmit on a busy host
    does not count as load."""
    ranks = dist.get_world_size()
    loads = []
    for collective in COLLECTIVES:
        count = elements_for(collective, size_bytes, ranks, 4)
        x = torch.ones(count, dtype=torch.float32, device=device)
        for name in IMPLEMENTATIONS:
            run = implementations(collective)[name]
            least: dict[str, list[int]] = {}
            for _ in range(defaults.FABRIC_TEST_COUNTER_RUNS):
                dist.barrier()
                before = read(interfaces)
                run(x)
                _synchronize(device)
                dist.barrier()
                after = read(interfaces)
                for netdev in before:
                    delta = [after[netdev][i] - before[netdev][i] for i in (0, 1)]
                    kept = least.get(netdev, delta)
                    least[netdev] = [min(a, b) for a, b in zip(kept, delta, strict=True)]
            loads.append(
                {
                    "collective": collective,
                    "implementation": name,
                    "size_bytes": size_bytes,
                    "interfaces": least,
                }
            )
    return loads
