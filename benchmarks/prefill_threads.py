"""How fast does the embedded llama-server prefill a long prompt with one thread and with more?

`check --full` on the embedded engine spends most of its time in prefill (the needle ladder and
KV integrity's long documents); the embedded server runs LOCAL_THREADS (all cores but one) so
that the client's timestamps never wait for a core. This starts the bundled model once per
setting and sends the same cold prompts (a fresh number in front, so no prefix is cached),
each asking for one token, and reads the server's own prefill timing (`timings.prompt_ms` over
`prompt_n`). Prints the median prefill tok/s per setting and each setting's ratio to the first,
side by side in one run.

Run: .venv/bin/python benchmarks/prefill_threads.py [--repeats 4] [--words 1400]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics

from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import require_installed
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.launch.local import (
    LocalInstance,
    embedded_server,
    plan_local,
    start_local,
    stop_local,
)
from sparkrig.launch.signals import stop_cleanly_on_sigterm

CORES = os.cpu_count() or 2
SETTINGS = {  # label: (threads, extra llama-server args)
    "1 thread": (1, []),
    f"1 thread, --threads-batch {CORES}": (1, ["--threads-batch", str(CORES)]),
    f"{CORES} threads": (CORES, []),
}


def prompt(index: int, words: int) -> str:
    body = " ".join(f"crate {i % 97} holds {i % 13} apples." for i in range(words // 5))
    return f"Ledger {index * 7919 + 11}. {body}"


async def prefill_rate(record: LocalInstance, text: str) -> tuple[int, float]:
    """(prompt tokens, prefill tok/s) by the server's own timings of one cold request."""
    request = ChatRequest(
        model=record.alias,
        messages=[{"role": "user", "content": text}],
        max_tokens=1,
        temperature=0.0,
        stream=True,
        extra={"timings_per_token": True},  # llama.cpp: its timings on the stream's chunks
    )
    async with EndpointClient(record.base_url, timeout_s=300) as client:
        reply = await client.send(request)
    if reply.error is not None:
        raise SystemExit(f"the prefill request failed: {reply.error.message}")
    timings = reply.server_timings or {}
    tokens, ms = timings.get("prompt_n"), timings.get("prompt_ms")
    if not isinstance(tokens, int) or not isinstance(ms, float | int) or ms <= 0:
        raise SystemExit(f"the server gave no prefill timing: {timings!r}")
    return tokens, tokens / (ms / 1000)


async def measure(threads: int, extra: list[str], repeats: int, words: int) -> list[float]:
    server = embedded_server(  # one slot: the whole context for the one long prompt
        require_installed(), resolve_model(None), alias="bench", threads=threads, parallel_slots=1
    )
    server = server.model_copy(update={"extra_args": extra})
    record = await start_local(plan_local(server, port_was_chosen=True), answer_one_completion)
    try:
        rates = []
        for index in range(repeats):
            tokens, rate = await prefill_rate(record, prompt(index + threads * 1000, words))
            print(f"    {tokens} tokens: {rate:.1f} tok/s", flush=True)
            rates.append(rate)
        return rates
    finally:
        await stop_local(record)


async def main(repeats: int, words: int) -> None:
    medians: dict[str, float] = {}
    for label, (threads, extra) in SETTINGS.items():
        print(f"{label}:", flush=True)
        medians[label] = statistics.median(await measure(threads, extra, repeats, words))
    first = next(iter(medians.values()))
    print(f"\n{'setting':<32} {'prefill tok/s (median)':>22} {'ratio':>7}")
    for label, median in medians.items():
        print(f"{label:<32} {median:>22.1f} {median / first:>7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4, help="cold prompts per setting, 1-50")
    parser.add_argument("--words", type=int, default=1400, help="prompt length in words, 50-20000")
    args = parser.parse_args()
    if not 1 <= args.repeats <= 50 or not 50 <= args.words <= 20_000:
        parser.error("--repeats must be 1-50 and --words 50-20000")
    stop_cleanly_on_sigterm()
    asyncio.run(main(args.repeats, args.words))
