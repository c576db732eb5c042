"""Does the prefill text change the prefill rate? The filler against the bundled corpus.

Starts the embedded llama-server (bundled SmolLM2-135M), cuts both texts at each depth exactly
as `bench --suite prefill` does (bench/depth_cut.py: through /tokenize and /detokenize, a fresh
salt per request), then sends cold prompts of the two texts by turns, the order swapped every
round, so both are measured in the same minutes on a shared machine. Each request's rate is the
suite's: prompt tokens (server count) ÷ TTFT. Prints per depth the median of each text with its
quartiles, the ratio corpus ÷ filler of the medians, and the median (quartiles) of the paired
ratios, each round's corpus rate over its filler rate sent next to it, which a drifting machine
moves less; never one absolute time.

Content changes prefill cost: a one-token filler prefilled 6,866 tok/s at 32K against 5,982 on
real source text on the field report's machines (docs/field-notes.md#prefill-filler-content).

`--sweep LOW:HIGH` measures nothing: it cuts the corpus at every depth from LOW to HIGH and prints
how many cuts were exact and how many took a salt word more or fewer (docs/metrics.md#prefill-text).

Run: .venv/bin/python benchmarks/prefill_text.py [--depths 128,256,512] [--repeats 20]
     [--url URL --model ID]   (a server started elsewhere instead of the embedded one)
     .venv/bin/python benchmarks/prefill_text.py --sweep 12:700
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections import Counter

from sparkrig import defaults
from sparkrig.bench.corpus import corpus_text
from sparkrig.bench.depth_cut import DepthPrompts, ServerTokenizer, cut_depths
from sparkrig.bench.suites import PREFILL_REPLY_TOKENS, prefill_rate
from sparkrig.bench.workloads import filler_text
from sparkrig.client import CompletionRequest, EndpointClient
from sparkrig.client.first_completion import answer_one_completion
from sparkrig.client.probe import first_model_id
from sparkrig.engines.llamacpp.build import require_installed
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.launch.local import embedded_server, plan_local, start_local, stop_local
from sparkrig.launch.signals import stop_cleanly_on_sigterm

TEXTS = ("filler", "corpus")
WARMUP_REQUESTS = 3
Rates = dict[tuple[str, int], list[float]]


async def served_model(url: str) -> str:
    async with EndpointClient(url) as client:
        return await first_model_id(client)


async def cold_rate(client: EndpointClient, model: str, cut: DepthPrompts) -> float:
    """One cold request's prefill rate; a failed request is an error, not a zero."""
    request = CompletionRequest(
        model=model, prompt=cut.cold(), max_tokens=PREFILL_REPLY_TOKENS, temperature=0.0
    )
    record = await client.send(request)
    rate = prefill_rate([record])
    if rate is None or record.usage is None:
        raise RuntimeError(f"no rate at depth {cut.depth}: {record.error or record.usage}")
    if record.usage.prompt_tokens not in (cut.depth, cut.depth + 1):  # + 1: a BOS it adds
        raise RuntimeError(f"the server counted {record.usage.prompt_tokens} of {cut.depth}")
    return rate


def quartiles(values: list[float]) -> str:
    low, _, high = statistics.quantiles(values, n=4)
    return f"{low:.0f}–{high:.0f}"


async def measure(url: str, model: str, depths: list[int], repeats: int) -> Rates:
    """Both texts cut at every depth, then `repeats` rounds of one cold request per text and
    depth, the texts' order swapped every round."""
    async with EndpointClient(url) as client:
        tokenizer = ServerTokenizer(client, model)
        cuts = {
            "filler": await cut_depths(tokenizer, filler_text(max(depths) * 2), depths),
            "corpus": await cut_depths(tokenizer, corpus_text(), depths),
        }
        for _ in range(WARMUP_REQUESTS):
            await cold_rate(client, model, cuts["corpus"][max(depths)])
        rates: Rates = {}
        for round_index in range(repeats):
            order = TEXTS if round_index % 2 == 0 else TEXTS[::-1]
            for depth in depths:
                for text in order:
                    rate = await cold_rate(client, model, cuts[text][depth])
                    rates.setdefault((text, depth), []).append(rate)
            print(f"round {round_index + 1}/{repeats} done", flush=True)
    return rates


async def sweep(url: str, model: str, depths: list[int]) -> None:
    """Cut the corpus at every depth; print how the cuts came out."""
    async with EndpointClient(url) as client:
        cuts = await cut_depths(ServerTokenizer(client, model), corpus_text(), depths)
    exact = [cut for cut in cuts.values() if set(cut.counts) == {cut.depth}]
    words = Counter(cut.salt_words for cut in cuts.values())
    print(f"{len(exact)} of {len(cuts)} depths from {depths[0]} to {depths[-1]} exact")
    print("salt words per cut: " + ", ".join(f"{n}: {words[n]}" for n in sorted(words)))


async def main(
    depths: list[int], repeats: int, url: str | None, model: str | None, swept: bool
) -> None:
    instance = None
    if url is None:
        server = embedded_server(require_installed(), resolve_model(None), alias="prefill-text")
        instance = await start_local(
            plan_local(server, port_was_chosen=True), answer_one_completion
        )
        url, model = instance.base_url, instance.alias
    try:
        model = model or await served_model(url)
        if swept:
            await sweep(url, model, depths)
            return
        rates = await measure(url, model, depths, repeats)
    finally:
        if instance is not None:
            await stop_local(instance)
    print(
        f"\ncold prefill tok/s on {model}, {repeats} requests per text "
        "and depth, by turns; median (quartiles); every prompt re-tokenized to its depth"
    )
    print(f"{'depth':>6} {'filler':>18} {'corpus':>18} {'ratio of medians':>17} {'paired':>20}")
    for depth in depths:
        filler, corpus = rates["filler", depth], rates["corpus", depth]
        ratio = statistics.median(corpus) / statistics.median(filler)
        paired = [c / f for c, f in zip(corpus, filler, strict=True)]
        low, _, high = statistics.quantiles(paired, n=4)
        print(
            f"{depth:>6} {statistics.median(filler):>7.0f} ({quartiles(filler):>9})"
            f" {statistics.median(corpus):>7.0f} ({quartiles(corpus):>9}) {ratio:>17.3f}"
            f" {statistics.median(paired):>6.3f} ({low:.3f}–{high:.3f})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--depths", default=",".join(map(str, defaults.BENCH_PREFILL_DEPTHS)), help="tokens"
    )
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--url", help="a running server (default: start the embedded one)")
    parser.add_argument("--model", help="with --url: the model id (default: the server's first)")
    parser.add_argument("--sweep", help="LOW:HIGH: only cut the corpus at every depth between")
    arguments = parser.parse_args()
    stop_cleanly_on_sigterm()
    depths = [int(depth) for depth in arguments.depths.split(",")]
    if arguments.sweep:
        low, high = (int(end) for end in arguments.sweep.split(":"))
        depths = list(range(low, high))
    swept = bool(arguments.sweep)
    asyncio.run(main(depths, arguments.repeats, arguments.url, arguments.model, swept))
