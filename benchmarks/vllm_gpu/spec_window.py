"""sparkrig's speculative-decoding figures beside vLLM's own counters, over the same window.

    python3 benchmarks/vllm_gpu/spec_window.py URL MODEL OUT.json [--tokens 128]

For each decode prompt (bench/workloads.py): raw /metrics, one streamed request through
sparkrig's client, raw /metrics again. sparkrig's side is its own parser and formulas
(parse_metrics, metrics_delta, spec_accounting) on the two texts; vLLM's side is the same two
texts read by a separate regex over the `vllm:spec_decode_*` counter lines and vLLM's own
definitions (acceptance = accepted / draft tokens; mean acceptance length = 1 + accepted /
drafts, as vLLM's SpecDecodingLogging prints it; per position = accepted at i / drafts).
Both are written side by side with their differences.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

from sparkrig.bench.speculative import spec_accounting
from sparkrig.bench.workloads import DECODE_PROMPTS, chat
from sparkrig.client import EndpointClient
from sparkrig.client.metrics import metrics_delta, parse_metrics

_LINE = re.compile(r"^vllm:(spec_decode_[a-z_]+)_total\{([^}]*)\} ([0-9.eE+-]+)$", re.M)


def raw_metrics(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:  # noqa: S310
        return str(response.read().decode())


def counters(text: str) -> dict[str, float]:
    """`name` or `name[position]` -> value, summed over the other labels."""
    out: dict[str, float] = {}
    for name, labels, value in _LINE.findall(text):
        position = re.search(r'position="(\d+)"', labels)
        key = f"{name}[{position.group(1)}]" if position else name
        out[key] = out.get(key, 0.0) + float(value)
    return out


def vllm_figures(before: str, after: str) -> dict[str, Any]:
    a, b = counters(before), counters(after)
    delta = {key: b[key] - a.get(key, 0.0) for key in b}
    drafts = delta.get("spec_decode_num_drafts", 0.0)
    drafted = delta.get("spec_decode_num_draft_tokens", 0.0)
    accepted = delta.get("spec_decode_num_accepted_tokens", 0.0)
    positions = sorted((int(k.split("[")[1][:-1]), v) for k, v in delta.items() if k.endswith("]"))
    return {
        "drafts": drafts,
        "draft_tokens": drafted,
        "accepted_tokens": accepted,
        "acceptance_rate": accepted / drafted if drafted else None,
        "mean_acceptance_length": 1 + accepted / drafts if drafts else None,
        "per_position_rate": [v / drafts for _, v in positions] if drafts else [],
    }


async def one(url: str, model: str, name: str, prompt: str, tokens: int) -> dict[str, Any]:
    before = raw_metrics(url)
    async with EndpointClient(url) as client:
        record = await client.send(chat(model, prompt, tokens))
    after = raw_metrics(url)
    delta = metrics_delta(parse_metrics(before), parse_metrics(after))
    ours = spec_accounting([delta], record.decode_tps)
    theirs = vllm_figures(before, after)
    row: dict[str, Any] = {
        "prompt": name,
        "completion_tokens": record.completion_tokens,
        "sse_chunks": len(record.output_events),
        "sparkrig": ours.model_dump() if ours else None,
        "vllm": theirs,
    }
    if ours is not None:
        row["differences"] = {
            "acceptance_rate": ours.acceptance_rate - (theirs["acceptance_rate"] or 0),
            "mean_acceptance_length": 1
            + (ours.accepted_per_draft or 0)
            - (theirs["mean_acceptance_length"] or 0),
            "per_position": [
                x - y
                for x, y in zip(ours.per_position_rate, theirs["per_position_rate"], strict=False)
            ],
            "drafts": ours.drafts - theirs["drafts"],
            "accepted_tokens": ours.accepted_tokens - theirs["accepted_tokens"],
        }
        # decode steps (generated − accepted) against the stream's chunks: at c = 1 one step
        # sends one chunk, drafted or not
        row["steps"] = {"sparkrig": ours.steps, "sse_chunks": len(record.output_events)}
        row["steps_per_s"] = ours.steps_per_s
    return row


def main() -> int:
    url, model, out = sys.argv[1].rstrip("/"), sys.argv[2], Path(sys.argv[3])
    tokens = int(sys.argv[sys.argv.index("--tokens") + 1]) if "--tokens" in sys.argv else 128
    rows = []
    for name, prompt in DECODE_PROMPTS.items():
        rows.append(asyncio.run(one(url, model, name, prompt, tokens)))
        print(json.dumps(rows[-1]))
        out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
