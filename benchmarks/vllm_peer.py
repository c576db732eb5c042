"""sparkrig's client beside `vllm bench serve`, on the same server, the same prompts, one run.

    python3 benchmarks/vllm_peer.py URL MODEL TOKENIZER_DIR OUT_DIR [--label plain]
        [--concurrency 1,4,16,64] [--tokens 128] [--passes 1] [--vllm vllm]

The prompts are sparkrig's decode workloads (bench/workloads.py), each with its own request
number so no two are identical; both clients send each one as a user message (vLLM's custom
dataset with --skip-chat-template: the server applies the chat template, as for sparkrig), with
ignore_eos and `--tokens` out, at each concurrency. Per level: TTFT median, TPOT median
((e2e - TTFT) / (tokens - 1), vLLM's definition), ITL median (vLLM: one gap per SSE chunk;
sparkrig: each gap shared by the tokens its chunk carried, so the two differ under speculative
decoding), and output throughput (completion tokens / wall time of the level). Written to
OUT_DIR/peer-LABEL.json after every level, with vLLM's own result files beside it.

With `--passes N` every level runs N times, the pass loop outside the level loop, and who goes
first alternates from one level and pass to the next; `summary` gives, per level and metric, each
pass's sparkrig / vLLM ratio, their median and range, and each client's own spread across passes
(its largest value over its smallest): a difference smaller than that spread is noise.

Each client's ceiling against this server: the CPU seconds the client itself spent on the level
(sparkrig: this process's; vLLM: its bench process's, read from /proc between its "Starting main
benchmark run" and its result table, so its start-up and warm-up are out and its metric pass is
in), as `busy` (CPU seconds over wall seconds: near 1 the one-threaded client, not the server, set
the pace) and `tokens_per_cpu_s` (output tokens per CPU second: what one busy core of that client
can take in, the ceiling it would reach against an infinitely fast server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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

        began, cpu_began = time.perf_counter(), time.process_time()
        records = await asyncio.gather(*(one(text) for text in texts))
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
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
    tokens = sum(r.completion_tokens or 0 for r in good)
    return {
        "completed": len(good),
        "failed": len(records) - len(good),
        "median_ttft_ms": 1000 * statistics.median(r.ttft_s for r in good),  # type: ignore[type-var]
        "median_tpot_ms": 1000 * statistics.median(tpots) if tpots else None,
        "median_itl_ms_per_chunk": 1000 * statistics.median(chunk_gaps) if chunk_gaps else None,
        "median_itl_ms_per_token": 1000 * statistics.median(per_token) if per_token else None,
        "output_throughput": tokens / wall,
        "tokens_per_chunk": tokens / max(1, sum(len(r.output_events) for r in good)),
        **ceiling(tokens, cpu, wall),
    }


def ceiling(tokens: int, cpu_s: float | None, wall_s: float | None) -> dict[str, float | None]:
    """How busy the client was, and the output tokens one busy core of it takes in per second."""
    if not cpu_s or not wall_s:
        return {"client_cpu_s": cpu_s, "busy": None, "tokens_per_cpu_s": None}
    return {"client_cpu_s": cpu_s, "busy": cpu_s / wall_s, "tokens_per_cpu_s": tokens / cpu_s}


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process (all its threads), from /proc/PID/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


MAIN_RUN_STARTS = "Starting main benchmark run"  # vllm/benchmarks/serve.py, 0.26.0
RESULT_TABLE = "Serving Benchmark Result"


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
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # its lines as they happen: they bracket its CPU
    lines: list[str] = []
    marks: dict[str, tuple[float, float | None]] = {}
    try:
        with subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        ) as child:
            assert child.stdout is not None
            deadline = time.monotonic() + 600
            for line in child.stdout:
                lines.append(line)
                for mark in (MAIN_RUN_STARTS, RESULT_TABLE):
                    if mark in line and mark not in marks:
                        marks[mark] = (time.perf_counter(), cpu_seconds(child.pid))
                if time.monotonic() > deadline:
                    child.kill()
            code = child.wait()
    except OSError as exc:
        return {"error": f"vllm bench serve did not run: {exc}"}
    (out / f"vllm-{args.label}-c{concurrency}.log").write_text("".join(lines))
    if code != 0 or not (out / name).exists():
        return {"error": f"vllm bench serve exited {code}: {''.join(lines)[-300:]}"}
    result = json.loads((out / name).read_text())
    keys = ("completed", "failed", "median_ttft_ms", "median_tpot_ms", "median_itl_ms")
    row = {key: result.get(key) for key in (*keys, "output_throughput")}
    (t0, c0), (t1, c1) = marks.get(MAIN_RUN_STARTS, (0, None)), marks.get(RESULT_TABLE, (0, None))
    cpu = c1 - c0 if c0 is not None and c1 is not None else None
    return row | ceiling(int(result.get("total_output_tokens") or 0), cpu, t1 - t0)


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
        "tokens_per_cpu_s": ("tokens_per_cpu_s", "tokens_per_cpu_s"),
    }
    out: dict[str, float | None] = {}
    for name, (a, b) in pairs.items():
        mine, peer = ours.get(a), theirs.get(b)
        out[name] = (
            mine / peer if isinstance(mine, float) and isinstance(peer, float) and peer else None
        )
    return out


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per level and metric: each pass's ratio, their median and range, and each client's own
    largest-over-smallest value across the passes."""
    metrics = {
        "ttft": "median_ttft_ms",
        "tpot": "median_tpot_ms",
        "throughput": "output_throughput",
        "tokens_per_cpu_s": "tokens_per_cpu_s",
    }
    levels = sorted({row["concurrency"] for row in rows})
    out = []
    for level in levels:
        at = [row for row in rows if row["concurrency"] == level]
        entry: dict[str, Any] = {"concurrency": level, "passes": len(at)}
        for name, key in metrics.items():
            found = [r["ratio_sparkrig_over_vllm"].get(name) for r in at]
            each = [x for x in found if isinstance(x, float)]
            spread = {}
            for side in ("sparkrig", "vllm"):
                values = [r[side].get(key) for r in at]
                good = [v for v in values if isinstance(v, float) and v > 0]
                spread[side] = max(good) / min(good) if len(good) > 1 else None
            entry[name] = {
                "ratios": each,
                "median": statistics.median(each) if each else None,
                "range": [min(each), max(each)] if each else None,
                "own_spread": spread,
            }
        out.append(entry)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("url", "model", "tokenizer", "out"):
        parser.add_argument(name)
    parser.add_argument("--label", default="plain")
    parser.add_argument("--concurrency", default="1,4,16,64")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--vllm", default=shutil.which("vllm") or "vllm")
    args = parser.parse_args()
    if args.passes < 1:
        parser.error("--passes must be at least 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    levels = [int(c) for c in args.concurrency.split(",")]
    for number in range(1, args.passes + 1):
        for concurrency in levels:
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
                "pass": number,
                "order": order,
                "prefix_cache_resets": resets,
                "concurrency": concurrency,
                "prompts": count,
                "sparkrig": ours,
                "vllm": theirs,
                "ratio_sparkrig_over_vllm": ratios(ours, theirs),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
            written = {"rows": rows, "summary": summary(rows)}
            (out / f"peer-{args.label}.json").write_text(json.dumps(written, indent=1))
    print(table(summary(rows)))
    return 0


def table(entries: list[dict[str, Any]]) -> str:
    """The summary as a text table: per level, each metric's median ratio, its range over the
    passes, and the larger of the two clients' own spreads."""

    def cell(entry: dict[str, Any]) -> str:
        if entry["median"] is None:
            return "-"
        low, high = entry["range"]
        spreads = [x for x in entry["own_spread"].values() if x is not None]
        noise = f", own ±{100 * (max(spreads) - 1):.0f}%" if spreads else ""
        return f"{entry['median']:.3f} [{low:.3f}-{high:.3f}{noise}]"

    names = ("ttft", "tpot", "throughput", "tokens_per_cpu_s")
    lines = ["c\tpasses\t" + "\t".join(f"{n} sparkrig/vLLM" for n in names)]
    for entry in entries:
        cells = "\t".join(cell(entry[n]) for n in names)
        lines.append(f"{entry['concurrency']}\t{entry['passes']}\t{cells}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
