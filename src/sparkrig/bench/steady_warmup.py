"""`bench --warmup-steady`: warm the engine to its steady decode rate before the first point.

A fresh engine decoded ~30% slower (58.5 tok/s, then 83.1–83.3) until about five 500–700-token
generations, and a handful of 100-token warm-ups did not move it (docs/field-notes.md#
warmup-penalty). So: single-stream generations of `steady_warmup_tokens` until two in a row
decode within BENCH_STEADY_BAND of each other, bounded by BENCH_STEADY_MAX_REQUESTS and
BENCH_STEADY_MAX_S; every rate is recorded, and a warm-up that never steadied says so.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.bench.client_shards import send_in_process
from sparkrig.bench.settings import BenchSettings
from sparkrig.client import CompletionRequest, EndpointClient

_PROMPT = (
    "Write a long story about a lighthouse keeper and the ships she guides, chapter by chapter."
)


class SteadyWarmup(BaseModel):
    tokens: int = Field(description="tokens per warm-up generation")
    rates: list[float] = Field(default_factory=list, description="decode tok/s of each, in order")
    steady: bool = Field(description="the last two rates agreed within the band")
    band: float = Field(
        default=defaults.BENCH_STEADY_BAND,
        description="how close the last two rates had to be, as a share of the faster",
    )
    seconds: float = Field(
        default=0.0, description="seconds the warm-up took, failed generations included"
    )
    note: str = Field(
        default="",
        description="the warm-up in one line: steady after how many generations, or that it "
        "never steadied and the first points may run cold",
    )


def agreed(rates: list[float], band: float) -> bool:
    if len(rates) < 2:
        return False
    last, before = rates[-1], rates[-2]
    return abs(last - before) <= band * max(last, before)


async def steady_warmup(
    client: EndpointClient, model: str, settings: BenchSettings
) -> SteadyWarmup:
    tokens = settings.steady_warmup_tokens
    request = CompletionRequest(
        model=model, prompt=_PROMPT, max_tokens=tokens, temperature=0.0, extra={"ignore_eos": True}
    )
    rates: list[float] = []
    failures = 0
    start = time.monotonic()
    while len(rates) + failures < defaults.BENCH_STEADY_MAX_REQUESTS:
        if time.monotonic() - start > defaults.BENCH_STEADY_MAX_S:
            break
        records, _load = await send_in_process(client, [request])
        rate = records[0].decode_tps if records[0].error is None else None
        if rate is None:
            failures += 1
            continue
        rates.append(rate)
        if agreed(rates, defaults.BENCH_STEADY_BAND):
            break
    steady = agreed(rates, defaults.BENCH_STEADY_BAND)
    seconds = time.monotonic() - start
    shown = ", ".join(f"{rate:.1f}" for rate in rates) or "none"
    note = (
        f"warmed to steady state in {len(rates)} generations of {tokens} tokens ({seconds:.0f} s): "
        f"{shown} tok/s"
        if steady
        else f"warm-up did not steady within {len(rates) + failures} generations / {seconds:.0f} s "
        f"({shown} tok/s, {failures} failed): the first points may still run cold — warm the "
        "engine longer, or look at what keeps changing its speed"
    )
    return SteadyWarmup(tokens=tokens, rates=rates, steady=steady, seconds=seconds, note=note)
