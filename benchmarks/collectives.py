"""sparkrig's ring collectives against torch.distributed's built-in ones: same processes, same
run, ratio per size.

Runs `sparkrig fabric test` on a ring of N local processes (Gloo over 127.0.0.1, or NCCL where
every rank has a GPU) --repeat times, and prints per collective and size the median over runs
of both latencies and of sparkrig's bus bandwidth as a ratio of the built-in one. The goal on
GPUs: >= 0.9x the built-in bus bandwidth at >= 64 MiB and <= 1.2x its latency at 8 KiB; on CPU
it reports what Gloo gives.

    .venv/bin/python benchmarks/collectives.py --ranks 4 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from sparkrig.fabric.collectives.results import FabricTestReceipt, bus_factor
from sparkrig.fabric.collectives.specs import COLLECTIVES


def ring_toml(ranks: int) -> str:
    names = [f"n{i}" for i in range(ranks)]
    cables = [f'"{a}.p0 <-> {b}.p1"' for a, b in zip(names, names[1:] + names[:1], strict=True)]
    if ranks == 2:
        cables = cables[:1]
    nodes = "".join(f'[[nodes]]\nname = "{name}"\n' for name in names)
    return f'name = "bench-ring{ranks}"\ncables = [{", ".join(cables)}]\n{nodes}'


def one_run(args: argparse.Namespace, scratch: Path, index: int) -> FabricTestReceipt:
    cluster = scratch / "ring.toml"
    cluster.write_text(ring_toml(args.ranks))
    out = scratch / f"receipt-{index}.json"
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("sparkrig")),
            "fabric",
            "test",
            str(cluster),
            "--apply",
            "--no-checks",
            "--sizes",
            args.sizes,
            "--iterations",
            str(args.iterations),
            "--backend",
            args.backend,
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(done.stderr)
    return FabricTestReceipt.model_validate(json.loads(out.read_text()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--sizes", default="8K,64K,512K,4M,32M,64M")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="runs; medians are printed")
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()
    seconds: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    ratios: dict[tuple[str, int], list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(args.repeat):
            receipt = one_run(args, Path(scratch), index)
            for p in receipt.points:
                seconds[p.collective, p.size_bytes, p.implementation].append(p.seconds or 0)
            for collective, size, _ in list(seconds):
                times = {
                    p.implementation: p.seconds or 0
                    for p in receipt.points
                    if p.collective == collective and p.size_bytes == size
                }
                if index == len(ratios.get((collective, size), [])):
                    ratios[collective, size].append(times["builtin"] / times["sparkrig"])
    print(
        f"{receipt.backend}, {args.ranks} ranks, torch {receipt.torch_version}, "
        f"{args.iterations} iterations per run, slowest rank's mean; medians of "
        f"{args.repeat} runs"
    )
    print(
        f"{'collective':<15}{'size':>10}{'built-in µs':>13}{'sparkrig µs':>13}"
        f"{'built-in busbw':>16}{'sparkrig busbw':>16}{'ratio':>7}{'range':>12}"
    )
    for collective in COLLECTIVES:
        for size in sorted({s for c, s, _ in seconds if c == collective}):
            theirs = statistics.median(seconds[collective, size, "builtin"])
            ours = statistics.median(seconds[collective, size, "sparkrig"])
            factor = bus_factor(collective, args.ranks) * size / 1e9
            spread = ratios[collective, size]
            print(
                f"{collective:<15}{size:>10}{theirs * 1e6:>13.0f}{ours * 1e6:>13.0f}"
                f"{factor / theirs:>16.4f}{factor / ours:>16.4f}"
                f"{statistics.median(spread):>7.2f}{min(spread):>6.2f}-{max(spread):.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
