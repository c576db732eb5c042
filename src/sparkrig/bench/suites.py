"""The bench suites as registered point builders.

decode: one stream per content type. concurrency: at each ladder step, a prompt of exact length
with a fresh salt for every stream and sample (cold), and the same prompts replayed (cached);
aggregate over the union window. spec: decode again, read for acceptance. prefill: exact prompt
depths cut from the bundled corpus or the filler (bench/prefill_text.py), cold (salted) and
replayed (prefix cache). max-load: cold concurrency probes, each level chosen by the
--find-max-load search from the probe measured before it. multiturn: conversations that grow
turn by turn (bench/multiturn.py), each sample a fresh set of them.
"""

from __future__ import annotations

import functools
import random
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sparkrig import defaults
from sparkrig.bench.arrivals import ArrivalSchedule
from sparkrig.bench.client_shards import SendAll
from sparkrig.bench.max_load import LoadSearch, level_meets, worst_case_probes
from sparkrig.bench.multiturn import (
    ConversationSender,
    conversation_requests,
    later_turns_prompt_rate,
)
from sparkrig.bench.point import BenchSettings, ValueOf
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.prefill_text import PrefillPrompts
from sparkrig.bench.workloads import DECODE_PROMPTS, chat
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient, RequestRecord
from sparkrig.registry import Registry

NS_PER_S = 1_000_000_000
PREFILL_REPLY_TOKENS = 2  # enough to see the first token; prefill is what is timed

Requests = Sequence[ChatRequest | CompletionRequest]


@dataclass(frozen=True)
class PointPlan:
    point: PointResult
    make_requests: Callable[[], Requests]
    value_of: ValueOf
    schedule: ArrivalSchedule | None = None  # --arrivals: when each request is sent
    # a point that sends its own way (multiturn: conversations, turn after turn), given the client
    sender: Callable[[EndpointClient], SendAll] | None = None
    at_once: int | None = None  # the most requests in flight together; None: all of a sample's


@dataclass
class SuiteContext:
    model: str
    settings: BenchSettings
    # server token ids of a long text; None when the server has no /tokenize
    filler_tokens: list[int] | None = None
    filler_text: str = ""
    # the prefill suite's prompts, cut from the text --prefill-text names; None: not cut
    prefill: PrefillPrompts | None = None


SuiteBuilder = Callable[[SuiteContext], Iterator[PointPlan]]
SUITES: Registry[SuiteBuilder] = Registry("suite")
register = SUITES.register  # `@register("decode")`; suites run in the order they register


def _chats(model: str, prompts: list[str], max_tokens: int) -> Callable[[], Requests]:
    return lambda: [chat(model, prompt, max_tokens) for prompt in prompts]


def single_decode_rate(records: list[RequestRecord]) -> float | None:
    return records[0].decode_tps


def aggregate_decode_rate(records: list[RequestRecord]) -> float | None:
    """Tokens decoded by all streams after their first output event, over the union window
    from the earliest first output event to the latest last one."""
    firsts, lasts, tokens = [], [], 0
    for record in records:
        outputs = record.output_events
        total = record.completion_tokens
        if len(outputs) < 2 or total is None:
            return None
        firsts.append(outputs[0].t_ns)
        lasts.append(outputs[-1].t_ns)
        tokens += total - (outputs[0].tokens if outputs[0].tokens is not None else 1)
    window_ns = max(lasts) - min(firsts)
    return tokens * NS_PER_S / window_ns if window_ns > 0 else None


def prefill_rate(records: list[RequestRecord]) -> float | None:
    """Prompt tokens (server count) ÷ TTFT."""
    record = records[0]
    prompt = record.usage.prompt_tokens if record.usage else None
    return prompt / record.ttft_s if prompt and record.ttft_s else None


def per_stream_mean(point: PointResult) -> float | None:
    rates = [
        request.decode_tps
        for sample in point.samples
        for request in sample.requests
        if request.decode_tps is not None
    ]
    return statistics.fmean(rates) if rates else None


def _one_stream_per_content_type(context: SuiteContext, suite: str) -> Iterator[PointPlan]:
    for content, prompt in DECODE_PROMPTS.items():
        yield PointPlan(
            point=PointResult(suite=suite, name=content, metric="decode tok/s, one stream"),
            make_requests=_chats(context.model, [prompt], context.settings.decode_tokens),
            value_of=single_decode_rate,
        )


@register("decode")
def decode_suite(context: SuiteContext) -> Iterator[PointPlan]:
    return _one_stream_per_content_type(context, "decode")


@register("concurrency")
def concurrency_suite(context: SuiteContext) -> Iterator[PointPlan]:
    """Per ladder step: every stream's prompt salted afresh for every sample, so each TTFT is
    a real prefill; then, when asked, the same distinct prompts replayed, the prefix-cache path
    (issue 12: replayed 37-token prompts gave a TTFT of 32 / 93 ms at c = 1 / 4 where distinct
    prompts of that length took 147 / 565 ms in another tool)."""
    settings = context.settings
    length = settings.prompt_tokens
    for streams in settings.concurrency:
        metric = _concurrency_metric(streams)
        level = _level_name(settings, streams)
        yield cold_concurrency_plan(context, streams, "concurrency", f"{level} cold")
        if settings.cached_replays:
            replay = [_prompt_of_depth(context, length, salted=True) for _ in range(streams)]
            yield PointPlan(
                point=PointResult(
                    suite="concurrency",
                    name=f"{level} cached",
                    metric=f"{metric}; {streams} distinct {length}-token prompts replayed: "
                    "the prefix-cache path",
                    warmup_primes_cache=True,
                ),
                make_requests=_concurrent_requests(context, streams, replay=replay),
                value_of=aggregate_decode_rate,
                schedule=_schedule(settings, f"{level} cached"),
            )


def _level_name(settings: BenchSettings, streams: int) -> str:
    """c=N for a closed loop; N requests at Poisson or staggered times for an open one."""
    if settings.arrivals is None:
        return f"c={streams}"
    return f"{streams} req {settings.arrivals.short}"


def _schedule(settings: BenchSettings, name: str) -> ArrivalSchedule | None:
    return None if settings.arrivals is None else ArrivalSchedule(settings.arrivals, name)


def _concurrency_metric(streams: int) -> str:
    return f"aggregate decode tok/s over the union window of {streams} streams"


def cold_concurrency_plan(
    context: SuiteContext, streams: int, suite: str, name: str, load: int | None = None
) -> PointPlan:
    """`streams` concurrent requests, each prompt salted afresh for every sample (cold)."""
    length = context.settings.prompt_tokens
    return PointPlan(
        point=PointResult(
            suite=suite,
            name=name,
            metric=f"{_concurrency_metric(streams)}; a fresh {length}-token prompt per stream "
            "and sample",
            load=load,
            expects_cold=True,
        ),
        make_requests=_concurrent_requests(context, streams, replay=None),
        value_of=aggregate_decode_rate,
        schedule=_schedule(context.settings, name) if suite == "concurrency" else None,
    )


def _concurrent_requests(
    context: SuiteContext, streams: int, replay: list[str | list[int]] | None
) -> Callable[[], Requests]:
    """`streams` decode requests of exactly `prompt_tokens` prompt tokens (server count, when
    the server has /tokenize): freshly salted each call, or the `replay` prompts every call."""

    def make() -> Requests:
        length = context.settings.prompt_tokens
        prompts = replay or [_prompt_of_depth(context, length, salted=True) for _ in range(streams)]
        return [
            CompletionRequest(
                model=context.model,
                prompt=prompt,
                max_tokens=context.settings.decode_tokens,
                temperature=0.0,
                extra=_decode_extra(salted=replay is None),
            )
            for prompt in prompts
        ]

    return make


def _decode_extra(*, salted: bool) -> dict[str, Any]:
    """Exactly max_tokens (llama.cpp and vLLM honour ignore_eos); vLLM's cache_salt keeps a
    salted prompt out of its prefix cache even where the salt tokens would not."""
    extra: dict[str, Any] = {"ignore_eos": True}
    if salted:
        extra["cache_salt"] = f"{random.getrandbits(64):016x}"
    return extra


@register("spec")
def spec_suite(context: SuiteContext) -> Iterator[PointPlan]:
    """Decode by content type again, read for acceptance: each sample keeps its metrics delta."""
    return _one_stream_per_content_type(context, "spec")


def _prompt_of_depth(context: SuiteContext, depth: int, salted: bool) -> str | list[int]:
    """Exactly `depth` server tokens (a salt of unique leading tokens when cold), or text of
    about that length when the server has no /tokenize."""
    if context.filler_tokens is None:
        chars = depth * defaults.BENCH_CHARS_PER_TOKEN_ESTIMATE
        nonce = f"[{random.getrandbits(64):016x}] " if salted else ""
        return nonce + context.filler_text[: chars - len(nonce)]
    body = context.filler_tokens[: depth - defaults.BENCH_SALT_TOKENS]
    if not salted:
        return context.filler_tokens[:depth]
    vocabulary = sorted(set(context.filler_tokens))
    salt = random.sample(vocabulary, min(defaults.BENCH_SALT_TOKENS, len(vocabulary)))
    return salt + body


def _prefill_requests(
    prompt: Callable[[], str | list[int]], model: str, salted: bool
) -> Callable[[], Requests]:
    def make() -> Requests:
        extra = {"cache_salt": f"{random.getrandbits(64):016x}"} if salted else {}
        return [
            CompletionRequest(
                model=model,
                prompt=prompt(),
                max_tokens=PREFILL_REPLY_TOKENS,
                temperature=0.0,
                extra=extra,
            )
        ]

    return make


def _prefill_prompt(
    context: SuiteContext, depth: int, salted: bool
) -> Callable[[], str | list[int]]:
    """A depth's prompt for each request: the cut text (a fresh salt in front when cold), or,
    where the text could not be cut, the filler as before (token ids, or an estimate)."""
    cut = context.prefill.cuts.get(depth) if context.prefill else None
    if cut is None:
        return lambda: _prompt_of_depth(context, depth, salted)
    if salted:
        return cut.cold
    return lambda: cut.cached


@register("prefill")
def prefill_suite(context: SuiteContext) -> Iterator[PointPlan]:
    """Each depth cold (a fresh salt every request) and cached (the same prompt again), the
    prompts cut from the text --prefill-text names; each point records its prompt's text."""
    prompts, ids = context.prefill, context.filler_tokens is not None
    for depth in context.settings.prefill_depths:
        yield PointPlan(
            point=PointResult(
                suite="prefill",
                name=f"{depth} cold",
                metric="prefill tok/s = prompt tokens ÷ TTFT, unique prefix every request",
                expects_cold=True,
                prompt_text=prompts.record(depth, cold=True, token_ids=ids) if prompts else None,
            ),
            make_requests=_prefill_requests(
                _prefill_prompt(context, depth, salted=True), context.model, salted=True
            ),
            value_of=prefill_rate,
        )
        yield PointPlan(
            point=PointResult(
                suite="prefill",
                name=f"{depth} cached",
                metric="prompt tokens ÷ TTFT on the same prompt again: the prefix-cache path",
                warmup_primes_cache=True,
                prompt_text=prompts.record(depth, cold=False, token_ids=ids) if prompts else None,
            ),
            make_requests=_prefill_requests(
                _prefill_prompt(context, depth, salted=False), context.model, salted=False
            ),
            value_of=prefill_rate,
        )


@register("max-load")
def max_load_suite(context: SuiteContext) -> Iterator[PointPlan]:
    """--find-max-load: cold concurrency points chosen by the search, each probe decided by the
    point measured before it (the run measures a plan before it asks for the next)."""
    settings = context.settings
    if settings.slo is None:
        return
    search = LoadSearch(min(settings.concurrency), max(settings.concurrency))
    while (level := search.next_level()) is not None:
        plan = cold_concurrency_plan(context, level, "max-load", f"c={level}", load=level)
        yield plan
        search.record(level, level_meets(plan.point))


@register("multiturn")
def multiturn_suite(context: SuiteContext) -> Iterator[PointPlan]:
    """One point: each sample K fresh conversations of T turns, every turn re-sending the
    conversation so far; its value is the later turns' prompt tokens ÷ their TTFT, and its
    `multiturn` figures give TTFT and cached share turn by turn (docs/metrics.md#multiturn)."""
    settings = context.settings
    turns, parallel = settings.turns, settings.parallel_conversations
    yield PointPlan(
        point=PointResult(
            suite="multiturn",
            name=f"{settings.conversations} conversations × {turns} turns",
            metric=f"prompt tok/s of turns 2..{turns}: their prompt tokens ÷ their TTFTs, each "
            "turn re-sending the conversation so far (the prefix-cache path when it works)",
        ),
        make_requests=conversation_requests(context.model, settings),
        value_of=later_turns_prompt_rate(turns),
        sender=functools.partial(ConversationSender, turns=turns, parallel=parallel),
        at_once=min(settings.conversations, parallel or settings.conversations),
    )


def planned_points(suite: str, context: SuiteContext) -> int:
    """Points a suite will measure, for progress: an adaptive suite states its most."""
    estimate = PLANNED.get(suite)
    return estimate(context) if estimate else len(list(SUITES.get(suite)(context)))


PLANNED: dict[str, Callable[[SuiteContext], int]] = {
    "max-load": lambda context: worst_case_probes(
        min(context.settings.concurrency), max(context.settings.concurrency)
    )
}
