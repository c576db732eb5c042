"""The fabric test's work on one rank: correctness of built-in and sparkrig collectives, timings
per ladder size, and interface counters around one run of each. Runs inside the process group
the worker joined; results are plain dicts the worker prints as JSON lines."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from sparkrig import defaults
from sparkrig.fabric.collectives import execute
from sparkrig.fabric.collectives.results import COLLECTIVES, IMPLEMENTATIONS, elements_for

Collective = Callable[[torch.Tensor], torch.Tensor]


def _builtin(collective: str, size: int) -> Collective:
    def all_reduce(x: torch.Tensor) -> torch.Tensor:
        out = x.clone()
        dist.all_reduce(out)
        return out

    def all_gather(x: torch.Tensor) -> torch.Tensor:
        out = x.new_empty(x.numel() * size)
        dist.all_gather_into_tensor(out, x)
        return out

    def reduce_scatter(x: torch.Tensor) -> torch.Tensor:
        out = x.new_empty(x.numel() // size)
        dist.reduce_scatter_tensor(out, x)
        return out

    def all_to_all(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x)
        return out

    table = {
        "all_reduce": all_reduce,
        "all_gather": all_gather,
        "reduce_scatter": reduce_scatter,
        "all_to_all": all_to_all,
    }
    return table[collective]


def _sparkrig(collective: str, size: int, transport: execute.Transport) -> Collective:
    table: dict[str, Collective] = {
        "all_reduce": lambda x: execute.all_reduce(x, transport),
        "all_gather": lambda x: execute.all_gather(x, x.numel() * size, transport),
        "reduce_scatter": lambda x: execute.reduce_scatter(x, transport),
        "all_to_all": lambda x: torch.cat(
            execute.all_to_all(list(x.view(size, -1).unbind(0)), transport)
        ),
    }
    return table[collective]


def implementations(collective: str) -> dict[str, Collective]:
    size = dist.get_world_size()
    transport = execute.TorchTransport()
    return {
        "builtin": _builtin(collective, size),
        "sparkrig": _sparkrig(collective, size, transport),
    }


def _inputs(rank: int, count: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    # small integers: every sum is exact in every dtype, whatever order a backend adds in
    generator = torch.Generator().manual_seed(rank * 1_000_003 + count)
    return torch.randint(-8, 9, (count,), generator=generator).to(dtype).to(device)


def _reference(collective: str, inputs: list[torch.Tensor], rank: int) -> torch.Tensor:
    size = len(inputs)
    total = inputs[0].clone()
    for other in inputs[1:]:
        total = total + other
    if collective == "all_reduce":
        return total
    if collective == "all_gather":
        return torch.cat(inputs)
    if collective == "reduce_scatter":
        return total.view(size, -1)[rank]
    return torch.cat([x.view(size, -1)[rank] for x in inputs])


def correctness(device: str, wrong: str | None = None) -> tuple[int, list[str]]:
    """Every collective, implementation, dtype and count once; (passed, failed names).

    `wrong` names a collective whose sparkrig result this rank alters (one element off by one)
    before it is checked: a fault, so a test can show a wrong implementation is caught."""
    rank, size = dist.get_rank(), dist.get_world_size()
    passed, failed = 0, []
    for collective in COLLECTIVES:
        for name, run in implementations(collective).items():
            for dtype_name in defaults.FABRIC_TEST_CHECK_DTYPES:
                dtype = getattr(torch, dtype_name)
                for base in defaults.FABRIC_TEST_CHECK_COUNTS:
                    count = base if collective in ("all_reduce", "all_gather") else base * size
                    inputs = [_inputs(r, count, dtype, device) for r in range(size)]
                    got = run(inputs[rank])
                    if collective == wrong and name == "sparkrig":
                        got = got.clone()
                        got.view(-1)[0] += 1
                    if torch.equal(got, _reference(collective, inputs, rank)):
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
