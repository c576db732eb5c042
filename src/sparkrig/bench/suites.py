"""The bench suites as registered point builders: decode by content type, concurrency ladder."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sparkrig.bench.point import PointResult, ValueOf
from sparkrig.bench.workloads import DECODE_PROMPTS, chat, concurrent_prompts
from sparkrig.client import ChatRequest, RequestRecord

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class PointPlan:
    point: PointResult
    make_requests: Callable[[], list[ChatRequest]]
    value_of: ValueOf


SuiteBuilder = Callable[[str, int, list[int]], Iterator[PointPlan]]
SUITES: dict[str, SuiteBuilder] = {}


def register(name: str) -> Callable[[SuiteBuilder], SuiteBuilder]:
    def add(builder: SuiteBuilder) -> SuiteBuilder:
        SUITES[name] = builder
        return builder

    return add


def _requests_for(
    model: str, prompts: list[str], max_tokens: int
) -> Callable[[], list[ChatRequest]]:
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


def per_stream_mean(point: PointResult) -> float | None:
    rates = [
        request.decode_tps
        for sample in point.samples
        for request in sample.requests
        if request.decode_tps is not None
    ]
    return statistics.fmean(rates) if rates else None


@register("decode")
def decode_suite(model: str, max_tokens: int, ladder: list[int]) -> Iterator[PointPlan]:
    for content, prompt in DECODE_PROMPTS.items():
        yield PointPlan(
            point=PointResult(suite="decode", name=content, metric="decode tok/s, one stream"),
            make_requests=_requests_for(model, [prompt], max_tokens),
            value_of=single_decode_rate,
        )


@register("concurrency")
def concurrency_suite(model: str, max_tokens: int, ladder: list[int]) -> Iterator[PointPlan]:
    for streams in ladder:
        prompts = concurrent_prompts(streams)
        yield PointPlan(
            point=PointResult(
                suite="concurrency",
                name=f"c={streams}",
                metric=f"aggregate decode tok/s over the union window of {streams} streams",
            ),
            make_requests=_requests_for(model, prompts, max_tokens),
            value_of=aggregate_decode_rate,
        )


@register("spec")
def spec_suite(model: str, max_tokens: int, ladder: list[int]) -> Iterator[PointPlan]:
    """Decode by content type again, read for acceptance: each sample keeps its metrics delta."""
    for content, prompt in DECODE_PROMPTS.items():
        yield PointPlan(
            point=PointResult(suite="spec", name=content, metric="decode tok/s, one stream"),
            make_requests=_requests_for(model, [prompt], max_tokens),
            value_of=single_decode_rate,
        )
