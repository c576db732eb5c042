"""Each client's ceiling, side by side: sparkrig's bench client and `vllm bench serve` against a
server that is never the bottleneck, on the same prompts, in one run.

    python3 benchmarks/client_ceiling.py TOKENIZER_DIR OUT_DIR --vllm PATH/TO/vllm
        [--concurrency 1,16,64] [--requests 512] [--tokens 128] [--passes 3]

The server is benchmarks/loadgen_server.py in a child process: every chat request gets its
`--tokens` content events at once, pre-rendered, so a level's pace is the client's. Each level
runs both clients (vllm_peer.py's `sparkrig_level` and `vllm_level`, the order alternating from
one level and pass to the next) on `--requests` numbered prompts, and records for each the output
tokens per CPU second of the client's own process (`tokens_per_cpu_s`: what one busy core of
that client takes in), how busy it was (CPU over wall) and its output throughput. The summary
gives, per level, each client's median over the passes and the median and range of the ratio.
Written to OUT_DIR/ceiling.json after every level.

What it does not say: how either client fares against a real engine (vllm_peer.py on the GPU
machine reads the same two numbers there), or on another CPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import loadgen_server
import vllm_peer

CLIENTS = ("sparkrig", "vllm")


def level(
    args: argparse.Namespace, concurrency: int, order: list[str], out: Path
) -> dict[str, Any]:
    texts = vllm_peer.prompts(args.requests)
    dataset = out / f"prompts-{args.requests}.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": text}) + "\n" for text in texts))
    row: dict[str, Any] = {"concurrency": concurrency, "order": order}
    for side in order:
        if side == "sparkrig":
            row[side] = vllm_peer.asyncio.run(
                vllm_peer.sparkrig_level(args.url, args.model, texts, concurrency, args.tokens)
            )
        else:
            row[side] = vllm_peer.vllm_level(args, dataset, args.requests, concurrency, out)
    return row


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    entries = []
    for concurrency in dict.fromkeys(row["concurrency"] for row in rows):
        at = [row for row in rows if row["concurrency"] == concurrency]
        entry: dict[str, Any] = {"concurrency": concurrency, "passes": len(at)}
        for metric in ("tokens_per_cpu_s", "busy", "output_throughput"):
            per_client = {
                side: [r[side][metric] for r in at if r[side].get(metric)] for side in CLIENTS
            }
            ratios = [
                r["sparkrig"][metric] / r["vllm"][metric]
                for r in at
                if r["sparkrig"].get(metric) and r["vllm"].get(metric)
            ]
            entry[metric] = {
                **{side: _median(values) for side, values in per_client.items()},
                "ratio_median": _median(ratios),
                "ratio_range": [min(ratios), max(ratios)] if ratios else None,
            }
        entries.append(entry)
    return entries


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def table(entries: list[dict[str, Any]]) -> str:
    lines = [
        "| c | tokens per CPU-s sparkrig / vLLM | ratio (range) | busy sparkrig / vLLM | "
        "output tok/s sparkrig / vLLM |",
        "|---|---|---|---|---|",
    ]
    for entry in entries:
        per_cpu, busy, rate = (entry[m] for m in ("tokens_per_cpu_s", "busy", "output_throughput"))
        ratio = "-"
        if per_cpu["ratio_median"] is not None:
            low, high = per_cpu["ratio_range"]
            ratio = f"{per_cpu['ratio_median']:.2f} ({low:.2f}–{high:.2f})"
        lines.append(
            f"| {entry['concurrency']} | {_pair(per_cpu, '.0f')} | {ratio} | "
            f"{_pair(busy, '.2f')} | {_pair(rate, '.0f')} |"
        )
    return "\n".join(lines)


def _pair(values: dict[str, Any], spec: str) -> str:
    return " / ".join("-" if values[s] is None else format(values[s], spec) for s in CLIENTS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokenizer", help="a tokenizer folder `vllm bench serve` can load")
    parser.add_argument("out")
    parser.add_argument("--vllm", required=True, help="the vllm command (its bench extra in)")
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--requests", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    try:
        levels = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency {args.concurrency!r}: give whole numbers, e.g. 1,16,64")
    if shutil.which(args.vllm.split()[0]) is None:
        parser.error(f"--vllm {args.vllm}: not found (BENCH=1 benchmarks/vllm_replay/setup.sh)")
    if not Path(args.tokenizer).is_dir():
        parser.error(f"{args.tokenizer}: no such tokenizer folder")
    if args.passes < 1 or args.requests < 1 or args.tokens < 2 or min(levels) < 1:
        parser.error("--passes, --requests and each concurrency must be at least 1, --tokens 2")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = loadgen_server.ServerSettings(
        tokens=args.tokens, paced_tokens=args.tokens, pace_ms=10.0, lifetime_s=3600.0
    )
    process, args.url = loadgen_server.start_server(settings)
    args.model, args.label = loadgen_server.MODEL, "ceiling"
    rows: list[dict[str, Any]] = []
    try:
        for number in range(1, args.passes + 1):
            for concurrency in levels:
                order = list(CLIENTS) if len(rows) % 2 == 0 else list(reversed(CLIENTS))
                row = {"pass": number, **level(args, concurrency, order, out)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                written = {"settings": vars(args), "rows": rows, "summary": summary(rows)}
                (out / "ceiling.json").write_text(json.dumps(written, indent=1))
    finally:
        loadgen_server.stop_server(process)
    print(table(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
