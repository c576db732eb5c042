"""What a benchmark point keeps: its samples, the requests they rest on, why a point is
invalid, and the few pure helpers every stage reads them with (the receipt, the report, compare).
Measuring a point is bench/point.py; the warnings a finished point carries, bench/point_flags.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, Field

from sparkrig.bench.arrivals import ArrivalSummary
from sparkrig.bench.client_shards import ClientLoad
from sparkrig.bench.cold_cache import ColdCache
from sparkrig.bench.count_witness import CountWitness
from sparkrig.bench.goodput import PointGoodput
from sparkrig.bench.modes import TwoSpeeds
from sparkrig.bench.multiturn_figures import MultiturnFigures
from sparkrig.bench.prefill_text import PromptText
from sparkrig.bench.speculative import SpecAccounting
from sparkrig.bench.spot_check import SpotCheck
from sparkrig.bench.statistics import PointSummary
from sparkrig.bench.validity import Coverage
from sparkrig.client import ChatRequest, CompletionRequest, RequestRecord
from sparkrig.client.metrics import MetricsDelta


class RequestSummary(BaseModel):
    """What a receipt keeps of one request (the full event list stays out of receipts)."""

    prompt_sha256: str
    prompt_tokens: int | None = Field(default=None, description="as the server counted them")
    cached_prompt_tokens: int | None = Field(
        default=None,
        description="of those, the ones the server says its prefix cache served (usage "
        "prompt_tokens_details.cached_tokens, else llama.cpp timings.cache_n); None where it "
        "says nothing",
    )
    completion_tokens: int | None
    retokenized_tokens: int | None = Field(
        default=None,
        description="the reply's text re-tokenized by the server's /tokenize, recorded beside "
        "completion_tokens and never judged (a model's tokens need not be its text's canonical "
        "tokenization); None without /tokenize",
    )
    token_source: str | None
    ttft_s: float | None
    decode_tps: float | None
    e2e_s: float | None
    finish_reason: str | None
    send_ns: int | None = Field(
        default=None,
        description="perf_counter_ns when the request was sent (receipts before goodput: None)",
    )
    first_output_ns: int | None = Field(description="perf_counter_ns of the first output event")
    last_output_ns: int | None = Field(description="perf_counter_ns of the last output event")


class Sample(BaseModel):
    value: float = Field(allow_inf_nan=False, description="a rate or a time, always finite")
    round: int = Field(default=1, description="which pass over the suites took this sample")
    requests: list[RequestSummary]
    metrics: MetricsDelta | None = None
    degenerate: list[str] = Field(default_factory=list, description="detector findings")
    accounting: list[str] = Field(
        default_factory=list,
        description="token counts that an exact witness does not hold: max_tokens or /metrics "
        "(receipts from before the notes also list re-tokenized text here)",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="claimed counts that differ from the re-tokenized text, both numbers: "
        "recorded, never a reason to be invalid",
    )
    client: ClientLoad | None = Field(
        default=None, description="the client's processes and how busy each was"
    )


class Discarded(BaseModel):
    reason: str
    at_sample: int


class PointResult(BaseModel):
    suite: str = Field(
        description="the suite that measured it: decode, concurrency, prefill, spec, "
        "multiturn or max-load"
    )
    name: str = Field(
        description="the point within its suite, e.g. count (a decode content type), c=8, "
        "c=8 cached, 2048 cold (a prefill depth); suite and name are what compare matches"
    )
    metric: str = Field(description="what each sample's value measures, with its unit")
    summary: PointSummary | None = Field(
        default=None,
        description="the kept samples of every round, summarized in metric's unit: n, mean, "
        "median, min, max, sd and the 95% interval; unset before the first kept sample",
    )
    samples: list[Sample] = Field(
        default_factory=list,
        description="every kept sample, in order: its value, its round, the requests it rests "
        "on (token counts, TTFT, decode rate, clock stamps), the server's counter deltas, and "
        "what the detectors and the token accounting found",
    )
    warmup_values: list[float] = Field(
        default_factory=list,
        description="each warm-up's value in metric's unit, in order; never part of the figure",
    )
    discarded: list[Discarded] = Field(
        default_factory=list,
        description="samples thrown away and taken again, each with why (e.g. a failed "
        "request, foreign traffic, a server restart) and the kept samples before it",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="what a reader of this figure must know, in words: imprecise, two "
        "speeds, client-limited, a cold engine, a cold prefill the server's counters do not "
        "confirm, prefix reuse missed, a run of discards",
    )
    invalid: bool = Field(default=False, description="the figure is not valid: invalid_reasons")
    invalid_reasons: list[str] = Field(
        default_factory=list,
        description="why: degenerate output, token counts that do not hold (each sample keeps "
        "its findings), failed requests above the error-rate ceiling (with the count)",
    )
    spec: SpecAccounting | None = Field(
        default=None, description="speculative-decoding accounting over this point's samples"
    )
    spot_check: SpotCheck | None = Field(
        default=None,
        description="the point's correctness spot check: questions right alone, asked again at "
        "this point's load (bench/spot_check.py); unset in receipts from before it",
    )
    witness: CountWitness | None = Field(
        default=None,
        description="the point's one request with logprobs on, after its first kept sample and "
        "outside the timed window: claimed completion tokens against logprobs entries",
    )
    cold_start: bool = Field(default=False, description="the first request ran markedly slower")
    imprecise: bool = Field(
        default=False,
        description="a round ended (at its sample cap, or on discards) with its interval wider "
        "than the precision asked for",
    )
    client_limited: bool = Field(
        default=False,
        description="a client process was runnable (on a core or queued for one) nearly all "
        "of a sample: the client, not the server, may have been the limit",
    )
    two_speeds: TwoSpeeds | None = Field(
        default=None,
        description="the samples form two groups far apart: the median is one of them, and the "
        "engine's speed depends on something the point does not set (docs/metrics.md#two-speeds)",
    )
    warmup_primes_cache: bool = Field(
        default=False, description="the warm-up fills the prefix cache on purpose: no cold flag"
    )
    expects_cold: bool = Field(
        default=False, description="the point claims cold prefill (salted prompts)"
    )
    cold_cache: ColdCache | None = Field(
        default=None,
        description="for a cold point: whether the server's cache counters confirm it missed",
    )
    prompt_text: PromptText | None = Field(
        default=None,
        description="a prefill point's prompt: the text it was cut from, its length as the "
        "server's /tokenize counts it, and how the depth was made (docs/metrics.md#prefill-text); "
        "unset for the other suites and in receipts from before it",
    )
    requests_sent: int = Field(
        default=0, description="requests sent, warm-up included, the logprobs witness not"
    )
    request_errors: dict[str, int] = Field(
        default_factory=dict, description="failed requests by kind (malformed, timeout, …)"
    )
    first_error: str | None = Field(default=None, description="the first failure's message")
    load: int | None = Field(
        default=None, description="a --find-max-load probe's concurrent streams; else unset"
    )
    arrivals: ArrivalSummary | None = Field(
        default=None, description="with --arrivals: offered against achieved rate"
    )
    coverage: Coverage | None = Field(
        default=None,
        description="how many requests each figure rests on, and the share that failed",
    )
    goodput: PointGoodput | None = Field(
        default=None, description="with --slo: the requests meeting it, over the kept samples"
    )
    multiturn: MultiturnFigures | None = Field(
        default=None,
        description="the multiturn suite: TTFT and cached share per turn, hit rate per "
        "conversation, and whether later turns reused the prompt before them",
    )

    def count_requests(self, records: Sequence[RequestRecord]) -> None:
        self.requests_sent += len(records)
        for record in records:
            if record.error is not None:
                kind = record.error.kind
                self.request_errors[kind] = self.request_errors.get(kind, 0) + 1
                self.first_error = self.first_error or record.error.message

    @property
    def every_request_failed(self) -> bool:
        return self.requests_sent > 0 and sum(self.request_errors.values()) == self.requests_sent


INVALID_DEGENERATE = "degenerate output"
INVALID_COUNTS = "token counts do not hold"
INVALID_NONSENSE = "wrong answers at this load (correctness spot check)"
INVALID_INCONSISTENT = "a reply disagrees with itself (its logprobs)"


def invalid_reasons(point: PointResult) -> list[str]:
    """Why a point is invalid; receipts from before the reasons were kept had only one."""
    if not point.invalid:
        return []
    return point.invalid_reasons or [INVALID_DEGENERATE]


def count_findings(point: PointResult) -> list[str]:
    """Every finding behind "token counts do not hold": the samples' and the witness's."""
    found = [finding for sample in point.samples for finding in sample.accounting]
    return found + (point.witness.findings if point.witness else [])


def count_notes(point: PointResult) -> int:
    return sum(len(sample.notes) for sample in point.samples)


def mark_invalid(point: PointResult, reason: str) -> None:
    point.invalid = True
    if reason not in point.invalid_reasons:
        point.invalid_reasons.append(reason)


def prompt_sha256(request: ChatRequest | CompletionRequest) -> str:
    if isinstance(request, CompletionRequest):
        text = str(request.prompt)
    else:
        text = "\n".join(str(message.get("content", "")) for message in request.messages)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def summarize_request(
    request: ChatRequest | CompletionRequest, record: RequestRecord
) -> RequestSummary:
    outputs = record.output_events
    return RequestSummary(
        prompt_sha256=prompt_sha256(request),
        prompt_tokens=record.usage.prompt_tokens if record.usage else None,
        cached_prompt_tokens=record.cached_prompt_tokens,
        completion_tokens=record.completion_tokens,
        token_source=record.token_source,
        ttft_s=record.ttft_s,
        decode_tps=record.decode_tps,
        e2e_s=record.e2e_s,
        finish_reason=record.finish_reason,
        send_ns=record.send_ns,
        first_output_ns=outputs[0].t_ns if outputs else None,
        last_output_ns=outputs[-1].t_ns if outputs else None,
    )
