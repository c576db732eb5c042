"""Run a function on N real processes joined by a Gloo process group on 127.0.0.1.

Each rank runs `function(rank, size, *args)` in its own spawned interpreter and sends back what
it returns (or the error's text); every process is gone when `run_ranks` returns.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import socket
from collections.abc import Callable
from datetime import timedelta
from typing import Any

TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rank_main(
    rank: int,
    size: int,
    port: int,
    function: Callable[..., Any],
    args: tuple[Any, ...],
    results: multiprocessing.Queue[tuple[int, str, Any]],
) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=size,
            timeout=timedelta(seconds=60),
        )
        try:
            results.put((rank, "ok", function(rank, size, *args)))
        finally:
            dist.destroy_process_group()
    except Exception as exc:  # the test reads the text
        results.put((rank, "error", f"{type(exc).__name__}: {exc}"))


def run_ranks(size: int, function: Callable[..., Any], *args: Any) -> list[tuple[str, Any]]:
    """(status, value) per rank: ("ok", returned) or ("error", "Type: message")."""
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[tuple[int, str, Any]] = context.Queue()
    port = free_port()
    processes = [
        context.Process(target=_rank_main, args=(rank, size, port, function, args, results))
        for rank in range(size)
    ]
    for process in processes:
        process.start()
    got: dict[int, tuple[str, Any]] = {}
    try:
        while len(got) < size:
            rank, status, value = results.get(timeout=TIMEOUT_S)
            got[rank] = (status, value)
    except queue.Empty:
        pass
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
    return [got.get(rank, ("error", "no result (timed out)")) for rank in range(size)]
