"""One rank of `sparkrig fabric test`, started on its node by an executor.

`python -m sparkrig.fabric.collectives.worker probe` says in one JSON line what the node has
(torch, GPUs, whether the master port is free) and imports torch only to ask. `... run` joins
the process group and prints JSON lines: heartbeats (from a thread, so a hung peer still leaves
this rank visibly alive), correctness counts, timings per size and interface byte counters.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import time
from datetime import timedelta
from typing import Any

FAULT_ENV = "SPARKRIG_FABRIC_TEST_FAULT"
"""`NODE:exit` or `NODE:hang`: that node's worker dies or stops after joining; `NODE:wrong-sums`:
its sparkrig all-reduce returns one element off by one, so the correctness checks must fail
(tests)."""
WRONG_SUMS = "wrong-sums"

_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    with _lock:
        sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
        sys.stdout.flush()


def probe(bind: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"python": sys.version.split()[0], "torch": None, "gpus": 0}
    if bind:
        host, _, port = bind.rpartition(":")
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, int(port)))
                found["port_free"] = True
            except OSError as exc:
                found["port_free"] = False
                found["port_error"] = errno.errorcode.get(exc.errno or 0, str(exc))
    if importlib.util.find_spec("torch") is None:
        return found
    import torch  # noqa: PLC0415 - only once the probe knows it is there

    found["torch"] = torch.__version__
    found["gpus"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return found


def read_counters(interfaces: list[str]) -> dict[str, tuple[int, int]]:
    """(rx_bytes, tx_bytes) per interface from /proc/net/dev, which is per network namespace."""
    counters = {}
    with open("/proc/net/dev", encoding="ascii") as table:
        for line in table.readlines()[2:]:
            name, _, numbers = line.partition(":")
            fields = numbers.split()
            if name.strip() in interfaces:
                counters[name.strip()] = (int(fields[0]), int(fields[8]))
    return counters


def _heartbeat(interval: float) -> None:
    while True:
        try:
            emit("heartbeat")
        except OSError:  # whoever reads us is gone: over ssh, killing the local client closes
            os._exit(1)  # the pipe and nothing else, and a rank blocked in a collective lives on
        time.sleep(interval)


def _fault(node: str) -> str | None:
    """Act on this node's fault now (exit, hang) or answer the one the checks carry."""
    target, _, kind = os.environ.get(FAULT_ENV, "").partition(":")
    if target != node:
        return None
    if kind == "exit":
        os._exit(3)
    if kind == "hang":
        os.kill(os.getpid(), signal.SIGSTOP)
    return kind


def run(args: argparse.Namespace) -> int:
    # alive from the first moment: importing torch on a busy node takes seconds
    threading.Thread(target=_heartbeat, args=(args.heartbeat,), daemon=True).start()
    # torch only here: the probe must run, and say so, where torch is missing
    import torch  # noqa: PLC0415
    import torch.distributed as dist  # noqa: PLC0415

    from sparkrig.fabric.collectives import measure  # noqa: PLC0415

    torch.set_num_threads(max(1, args.threads))
    device = "cpu"
    if args.backend == "nccl":
        # one worker per node: its first GPU; NCCL's point-to-point needs the device set first
        torch.cuda.set_device(0)
        device = "cuda:0"
    try:
        dist.init_process_group(
            args.backend,
            init_method=f"tcp://{args.master}:{args.port}",
            rank=args.rank,
            world_size=args.size,
            timeout=timedelta(seconds=args.liveness),
        )
    except Exception as exc:  # noqa: BLE001 - every failure to join is reported, then the rank exits
        text = str(exc)
        kind = "port_in_use" if "EADDRINUSE" in text or "already in use" in text else "join"
        emit("error", kind=kind, message=text.splitlines()[0] if text else type(exc).__name__)
        return 2
    emit("ready", torch=torch.__version__)
    wrong = "all_reduce" if _fault(args.node) == WRONG_SUMS else None
    try:
        if args.checks:
            passed, failed = measure.correctness(device, wrong=wrong)
            emit("checks", passed=passed, failed=failed)
        for size in args.sizes:
            for point in measure.ladder_step(size, args.iterations, args.warmup, device):
                emit("point", **point)
        if args.counter_bytes:
            interfaces = [item.partition("=")[0] for item in args.iface]
            for load in measure.counted(args.counter_bytes, device, interfaces, read_counters):
                emit("counters", **load)
        dist.barrier()
    except Exception as exc:  # noqa: BLE001 - reported to the orchestrator, which names the node
        emit("error", kind="collective", message=f"{type(exc).__name__}: {exc}".splitlines()[0])
        return 1
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    emit("done")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkrig.fabric.collectives.worker")
    commands = parser.add_subparsers(dest="command", required=True)
    probing = commands.add_parser("probe")
    probing.add_argument("--bind", help="HOST:PORT to try binding (the master port)")
    running = commands.add_parser("run")
    running.add_argument("--node", required=True)
    running.add_argument("--rank", type=int, required=True)
    running.add_argument("--size", type=int, required=True)
    running.add_argument("--master", required=True)
    running.add_argument("--port", type=int, required=True)
    running.add_argument("--backend", choices=("gloo", "nccl"), required=True)
    running.add_argument("--sizes", type=lambda t: [int(s) for s in t.split(",") if s], default=[])
    running.add_argument("--iterations", type=int, default=5)
    running.add_argument("--warmup", type=int, default=1)
    running.add_argument("--checks", action="store_true")
    running.add_argument("--counter-bytes", type=int, default=0)
    running.add_argument("--iface", action="append", default=[], help="NETDEV=PEER")
    running.add_argument("--liveness", type=float, default=20.0)
    running.add_argument("--heartbeat", type=float, default=1.0)
    running.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "probe":
        emit("probe", **probe(args.bind))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
