"""Which embedded-engine build is fastest here: native vs portable, weight repacking on vs off?

The self-test may fall back to `--no-repack` or to the portable build on a machine that refuses
the native build's instructions; these figures say what that costs. Starts one llama-server per
setting with the bundled model (1 thread, as the embedded engine runs) and measures decode tok/s
from server token counts, the settings interleaved round by round so drift hits all of them
alike. Prints the median per setting and each ratio to native with repack on.

Run: .venv/bin/python benchmarks/engine_variants.py [--rounds 5]
(the portable rows need `sparkrig engine install --portable` first; they are skipped otherwise)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import EngineInstall, EngineVariant, recorded_build
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.engines.llamacpp.self_test import NO_REPACK_FLAG
from sparkrig.launch.local import (
    LocalInstance,
    embedded_server,
    plan_local,
    start_local,
    stop_local,
)

PROMPT = "Write a long story about a lighthouse keeper and the sea."
MAX_TOKENS = 128
REQUESTS_PER_ROUND = 3


async def decode_rate(record: LocalInstance) -> float:
    request = ChatRequest(
        model=record.alias,
        messages=[{"role": "user", "content": PROMPT}],
        max_tokens=MAX_TOKENS,
        temperature=0.0,
    )
    async with EndpointClient(record.base_url, timeout_s=120.0) as client:
        reply = await client.send(request)
    return reply.decode_tps or 0.0


def settings() -> dict[str, tuple[EngineInstall, list[str]]]:
    found: dict[str, tuple[EngineInstall, list[str]]] = {}
    for variant in (EngineVariant.NATIVE, EngineVariant.PORTABLE):
        record = recorded_build(variant)
        if record is None:
            print(f"{variant.value} build not installed: skipped")
            continue
        found[f"{variant.value}, repack on"] = (record, [])
        found[f"{variant.value}, repack off"] = (record, [NO_REPACK_FLAG])
    return found


async def start(engine: EngineInstall, extra: list[str]) -> LocalInstance:
    server = embedded_server(engine, resolve_model(None), alias="bench", threads=1)
    server = server.model_copy(update={"extra_args": extra})  # the setting under test
    return await start_local(plan_local(server, port_was_chosen=True), answer_one_completion)


async def main(rounds: int) -> None:
    chosen = settings()
    rates: dict[str, list[float]] = {label: [] for label in chosen}
    for round_index in range(rounds):
        for label, (engine, extra) in chosen.items():  # one engine at a time: no contention
            record = await start(engine, extra)
            try:
                await decode_rate(record)  # warm-up
                for _ in range(REQUESTS_PER_ROUND):
                    rates[label].append(await decode_rate(record))
            finally:
                await stop_local(record)
        print(f"round {round_index + 1}/{rounds} done", flush=True)
    reference = statistics.median(rates["native, repack on"])
    print(f"\n{'setting':<22} {'median tok/s':>12} {'ratio':>7}  (n per setting)")
    for label, values in rates.items():
        median = statistics.median(values)
        print(f"{label:<22} {median:>12.1f} {median / reference:>7.2f}  ({len(values)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args().rounds))
