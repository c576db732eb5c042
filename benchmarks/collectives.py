"""sparkrig's ring collectives against torch.distributed's built-in ones: same processes, same
run, ratio per size.

Runs `sparkrig fabric test` on a ring of N local processes (Gloo over 127.0.0.1, or NCCL where
every rank has a GPU), reads its receipt and prints, per collective and size, the latency of
both and sparkrig's bus bandwidth as a ratio of the built-in one. The goal on GPUs: >= 0.9x the
built-in bus bandwidth at >= 64 MiB and <= 1.2x its latency at 8 KiB; on CPU it reports what
Gloo gives.

    .venv/bin/python benchmarks/collectives.py --ranks 4 --sizes 8K,64K,512K,4M,32M,64M
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from sparkrig.fabric.collectives.results import COLLECTIVES, FabricTestReceipt, ratio


def ring_toml(ranks: int) -> str:
    names = [f"n{i}" for i in range(ranks)]
    cables = [f'"{a}.p0 <-> {b}.p1"' for a, b in zip(names, names[1:] + names[:1], strict=True)]
    if ranks == 2:
        cables = cables[:1]
    nodes = "".join(f'[[nodes]]\nname = "{name}"\n' for name in names)
    return f'name = "bench-ring{ranks}"\ncables = [{", ".join(cables)}]\n{nodes}'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--sizes", default="8K,64K,512K,4M,32M,64M")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--out", type=Path, help="keep the receipt here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cluster = Path(scratch) / "ring.toml"
        cluster.write_text(ring_toml(args.ranks))
        out = args.out or Path(scratch) / "receipt.json"
        done = subprocess.run(
            [str(Path(sys.executable).with_name("sparkrig")), "fabric", "test", str(cluster),
             "--apply", "--no-checks", "--sizes", args.sizes, "--iterations",
             str(args.iterations), "--backend", args.backend, "--out", str(out), "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            return done.returncode
        receipt = FabricTestReceipt.model_validate(json.loads(out.read_text()))
    print(f"{receipt.backend}, {args.ranks} ranks, torch {receipt.torch_version}, "
          f"{receipt.iterations} iterations, slowest rank's mean")  # fmt: skip
    print(f"{'collective':<15}{'size':>10}{'built-in µs':>14}{'sparkrig µs':>14}"
          f"{'built-in busbw':>16}{'sparkrig busbw':>16}{'ratio':>8}")  # fmt: skip
    for collective in COLLECTIVES:
        for size in sorted({p.size_bytes for p in receipt.points}):
            found = {
                p.implementation: p
                for p in receipt.points
                if p.collective == collective and p.size_bytes == size
            }
            builtin, ours = found["builtin"], found["sparkrig"]
            share = ratio(receipt.points, collective, size)
            print(
                f"{collective:<15}{size:>10}{(builtin.seconds or 0) * 1e6:>14.1f}"
                f"{(ours.seconds or 0) * 1e6:>14.1f}{builtin.busbw_gbps or 0:>16.4f}"
                f"{ours.busbw_gbps or 0:>16.4f}{share or 0:>8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
