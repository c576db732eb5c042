"""sparkrig's client beside `vllm bench serve`, on the same server, the same prompts, one run.

    python3 benchmarks/vllm_peer.py URL MODEL TOKENIZER_DIR OUT_DIR [--label plain]
        [--concurrency 1,4,16,64] [--tokens 128] [--vllm vllm]

The prompts are sparkrig's decode workloads (bench/workloads.py), each with its own request
number so no two are identical; both clients send each one as a user message (vLLM's custom
dataset with --skip-chat-template: the server applies the chat template, as for sparkrig), with
ignore_eos and `--tokens` out, at each concurrency. Per level: TTFT median, TPOT median
((e2e - TTFT) / (tokens - 1), vLLM's definition), ITL median (vLLM: one gap per SSE chunk;
sparkrig: each gap shared by the tokens its chunk carried, so the two differ under speculative
decoding), and output throughput (completion tokens / wall time of the level). Written to
OUT_DIR/peer-LABEL.json after every level, with vLLM's own result files beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from sparkrig.bench.workloads import DECODE_PROMPTS, chat
from sparkrig.client import EndpointClient, RequestRecord


def prompts(count: int) -> list[str]:
    tasks = list(DECODE_PROMPTS.values())
    return [f"Request {i + 1}. {tasks[i % len(tasks)]}" for i in range(count)]


async def sparkrig_level(
    url: str, model: str, texts: list[str], concurrency: int, tokens: int
) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    async with EndpointClient(url) as client:

        async def one(text: str) -> RequestRecord:
            async with gate:
                return await client.send(chat(model, text, tokens))

        began = time.perf_counter()
        records = await asyncio.gather(*(one(text) for text in texts))
        wall = time.perf_counter() - began
    good = [r for r in records if r.ok and r.ttft_s is not None and r.e2e_s is not None]
    tpots = [
        (r.e2e_s - r.ttft_s) / (r.completion_tokens - 1)  # type: ignore[operator]
        for r in good
        if (r.completion_tokens or 0) > 1
    ]
    chunk_gaps = [
        (b.t_ns - a.t_ns) / 1e9
        for r in good
        for a, b in zip(r.output_events, r.output_events[1:], strict=False)
    ]
    per_token = [gap for r in good for gap in (r.inter_token_latencies_s() or [])]
    return {
        "completed": len(good),
        "failed": len(records) - len(good),
        "median_ttft_ms": 1000 * statistics.median(r.ttft_s for r in good),  # type: ignore[type-var]
        "median_tpot_ms": 1000 * statistics.median(tpots) if tpots else None,
        "median_itl_ms_per_chunk": 1000 * statistics.median(chunk_gaps) if chunk_gaps else None,
        "median_itl_ms_per_token": 1000 * statistics.median(per_token) if per_token else None,
        "output_throughput": sum(r.completion_tokens or 0 for r in good) / wall,
        "tokens_per_chunk": (
            sum(r.completion_tokens or 0 for r in good)
            / max(1, sum(len(r.output_events) for r in good))
        ),
    }


def vllm_level(
    args: argparse.Namespace, dataset: Path, count: int, concurrency: int, out: Path
) -> dict[str, Any]:
    name = f"vllm-{args.label}-c{concurrency}.json"
    argv = [
        *args.vllm.split(),
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--base-url",
        args.url,
        "--model",
        args.model,
        "--tokenizer",
        args.tokenizer,
        "--dataset-name",
        "custom",
        "--dataset-path",
        str(dataset),
        "--skip-chat-template",
        "--disable-shuffle",
        "--custom-output-len",
        str(args.tokens),
        "--num-prompts",
        str(count),
        "--max-concurrency",
        str(concurrency),
        "--ignore-eos",
        "--temperature",
        "0",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--save-result",
        "--result-dir",
        str(out),
        "--result-filename",
        name,
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"vllm bench serve did not run: {exc}"}
    (out / f"vllm-{args.label}-c{concurrency}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not (out / name).exists():
        return {"error": f"vllm bench serve exited {done.returncode}: {done.stderr[-300:]}"}
    result = json.loads((out / name).read_text())
    keys = ("completed", "failed", "median_ttft_ms", "median_tpot_ms", "median_itl_ms")
    return {key: result.get(key) for key in (*keys, "output_throughput")}


def reset_prefix_cache(url: str) -> str:
    """Both clients send the same prompts: whichever went second would find them cached. vLLM
    empties its prefix cache on POST /reset_prefix_cache (with VLLM_SERVER_DEV_MODE=1)."""
    request = urllib.request.Request(f"{url}/reset_prefix_cache", data=b"", method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return f"HTTP {response.status}"
    except (urllib.error.URLError, OSError) as exc:
        return f"not reset: {exc}"


def ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float | None]:
    pairs = {
        "ttft": ("median_ttft_ms", "median_ttft_ms"),
        "tpot": ("median_tpot_ms", "median_tpot_ms"),
        "itl_chunk": ("median_itl_ms_per_chunk", "median_itl_ms"),
        "throughput": ("output_throughput", "output_throughput"),
    }
    out: dict[str, float | None] = {}
    for name, (a, b) in pairs.items():
        mine, peer = ours.get(a), theirs.get(b)
        out[name] = (
            mine / peer if isinstance(mine, float) and isinstance(peer, float) and peer else None
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("url", "model", "tokenizer", "out"):
        parser.add_argument(name)
    parser.add_argument("--label", default="plain")
    parser.add_argument("--concurrency", default="1,4,16,64")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--vllm", default=shutil.which("vllm") or "vllm")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for concurrency in [int(c) for c in args.concurrency.split(",")]:
        count = max(16, 2 * concurrency)
        texts = prompts(count)
        dataset = out / f"prompts-{count}.jsonl"
        dataset.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts))
        # alternate who goes first, each on an emptied prefix cache
        resets = []
        order = ["sparkrig", "vllm"] if len(rows) % 2 == 0 else ["vllm", "sparkrig"]
        for side in order:
            resets.append(f"before {side}: {reset_prefix_cache(args.url)}")
            if side == "sparkrig":
                ours = asyncio.run(
                    sparkrig_level(args.url, args.model, texts, concurrency, args.tokens)
                )
            else:
                theirs = vllm_level(args, dataset, count, concurrency, out)
        row = {
            "order": order,
            "prefix_cache_resets": resets,
            "concurrency": concurrency,
            "prompts": count,
            "sparkrig": ours,
            "vllm": theirs,
            "ratio_sparkrig_over_vllm": ratios(ours, theirs),
        }
        rows.append(row)
        print(json.dumps(row))
        (out / f"peer-{args.label}.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
