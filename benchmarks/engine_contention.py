"""What happens to llama-server's decode speed when two engines share this machine's cores?

Starts two local llama-servers with the bundled model and measures decode tok/s (from server
token counts) for each engine alone and for both decoding at once, for several thread and
polling settings. Prints medians and the ratio together/alone, side by side in one run.

ggml's threads meet at a barrier many times per token; when two engines' threads outnumber the
cores, a descheduled thread stalls every other one at the barrier.

Run: .venv/bin/python benchmarks/engine_contention.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
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

PROMPT = "Count from 1 to 60, separated by commas."
MAX_TOKENS = 128
REQUEST_TIMEOUT_S = 60.0
SETTINGS = {  # label: (threads, extra llama-server args)
    "2 threads": (2, []),
    "2 threads, --poll 0": (2, ["--poll", "0"]),
    "1 thread": (1, []),
}


async def decode_rate(record: LocalInstance) -> float:
    """Decode tok/s of one request; 0.0 when it did not finish within REQUEST_TIMEOUT_S."""
    request = ChatRequest(
        model=record.alias, messages=[{"role": "user", "content": PROMPT}], max_tokens=MAX_TOKENS
    )
    async with EndpointClient(record.base_url, timeout_s=REQUEST_TIMEOUT_S) as client:
        reply = await client.send(request)
    return reply.decode_tps or 0.0


async def start(threads: int, extra: list[str]) -> LocalInstance:
    server = embedded_server(
        require_installed(), resolve_model(None), alias="bench", threads=threads
    )
    server = server.model_copy(update={"extra_args": extra})  # the setting under test
    return await start_local(plan_local(server, port_was_chosen=True), answer_one_completion)


async def measure(label: str, threads: int, extra: list[str], repeats: int) -> tuple[float, float]:
    first, second = await start(threads, extra), await start(threads, extra)
    try:
        alone = [await decode_rate(first) for _ in range(repeats)]
        print(f"{label}: alone {[round(rate, 1) for rate in alone]}", flush=True)
        together = []
        for _ in range(repeats):
            pair = await asyncio.gather(decode_rate(first), decode_rate(second))
            together.append(statistics.mean(pair))
            print(f"{label}: both at once {[round(rate, 1) for rate in pair]}", flush=True)
    finally:
        for instance in (first, second):
            await stop_local(instance)
    return statistics.median(alone), statistics.median(together)


async def main(repeats: int) -> None:
    results = {
        label: await measure(label, threads, extra, repeats)
        for label, (threads, extra) in SETTINGS.items()
    }
    print(
        f"\ndecode tok/s per engine, median of {repeats}; 0.0 = no reply in {REQUEST_TIMEOUT_S:g}s"
    )
    print(f"{'setting':<22} {'alone':>8} {'both at once':>13} {'together/alone':>15}")
    for label, (alone, together) in results.items():
        print(f"{label:<22} {alone:>8.1f} {together:>13.1f} {together / alone:>15.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    stop_cleanly_on_sigterm()
    asyncio.run(main(parser.parse_args().repeats))
