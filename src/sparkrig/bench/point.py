"""Measure one benchmark point honestly: warm up, wait for idle, repeat to a precision.

A sample is discarded (and retried) when a request failed or when the server generated tokens
nobody in this run asked for (foreign traffic). Degenerate output, or token counts that an
exact witness does not hold (bench/accounting.py), mark the point invalid.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.bench.accounting import (
    CountText,
    CountVerdict,
    ReplyCount,
    judge_counts,
    retokenized_counts,
)
from sparkrig.bench.arrivals import ArrivalSummary, arrival_summary
from sparkrig.bench.client_shards import ClientLoad, SendAll, send_in_process
from sparkrig.bench.cold_cache import ColdCache, judge_cold
from sparkrig.bench.count_witness import CountWitness, take_witness, unread_warning
from sparkrig.bench.goodput import PointGoodput, point_goodput
from sparkrig.bench.modes import TWO_SPEEDS_PREFIX, TwoSpeeds, two_speeds
from sparkrig.bench.multiturn_figures import REUSE_PREFIX, MultiturnFigures, multiturn_figures
from sparkrig.bench.prefill_text import PromptText
from sparkrig.bench.settings import BenchSettings as BenchSettings  # noqa: PLC0414 - re-exported
from sparkrig.bench.speculative import SpecAccounting, spec_accounting
from sparkrig.bench.spot_check import SpotCheck, spot_check, spot_check_warning
from sparkrig.bench.statistics import (
    PointSummary,
    precise_enough,
    precision_checkpoints,
    stop_on_precision,
    summarize,
)
from sparkrig.bench.thinking_budget import truncated_thinking_warning
from sparkrig.bench.validity import INVALID_ERRORS, Coverage, coverage_of, error_rate_reason
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient, RequestRecord
from sparkrig.client.metrics import (
    MetricsDelta,
    MetricsSnapshot,
    metrics_delta,
    try_scrape_metrics,
)
from sparkrig.client.reply_consistency import streamed_events
from sparkrig.engines.metric_map import Quantity

_SETTLE_READS = 10
_SETTLE_PAUSE_S = 0.05

ValueOf = Callable[[list[RequestRecord]], float | None]
TextCheck = Callable[[str], list[str]]


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
    suite: str
    name: str
    metric: str = Field(description="what each sample's value measures, with its unit")
    summary: PointSummary | None = None
    samples: list[Sample] = Field(default_factory=list)
    warmup_values: list[float] = Field(default_factory=list)
    discarded: list[Discarded] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
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
        "this point's load (bench/spot_check.py); None in receipts from before it",
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
        "None for the other suites and in receipts from before it",
    )
    requests_sent: int = Field(
        default=0, description="requests sent, warm-up included, the logprobs witness not"
    )
    request_errors: dict[str, int] = Field(
        default_factory=dict, description="failed requests by kind (malformed, timeout, …)"
    )
    first_error: str | None = Field(default=None, description="the first failure's message")
    load: int | None = Field(
        default=None, description="a --find-max-load probe's concurrent streams; else None"
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


async def _settled_snapshot(client: EndpointClient) -> MetricsSnapshot | None:
    """/metrics once this sample's requests have left the server's books.

    llama.cpp counts a request's tokens only when it finishes, and a slot is released a moment
    after its last event: read again briefly until nothing runs, then report what is left.
    """
    snapshot = await try_scrape_metrics(client)
    for _ in range(_SETTLE_READS):
        running = snapshot.read(Quantity.REQUESTS_RUNNING) if snapshot else None
        if not isinstance(running, float | int) or running == 0:
            break
        await asyncio.sleep(_SETTLE_PAUSE_S)
        snapshot = await try_scrape_metrics(client)
    return snapshot


async def wait_until_idle(client: EndpointClient, timeout_s: float) -> bool | None:
    """True once /metrics shows nothing running; False on timeout; None if it cannot tell."""
    deadline = time.monotonic() + timeout_s
    while True:
        snapshot = await try_scrape_metrics(client)
        running = snapshot.read(Quantity.REQUESTS_RUNNING) if snapshot else None
        if not isinstance(running, float | int):
            return None
        if running == 0:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)


async def measure_point(
    client: EndpointClient,
    point: PointResult,
    *,
    make_requests: Callable[[], Sequence[ChatRequest | CompletionRequest]],
    value_of: ValueOf,
    settings: BenchSettings,
    check_text: TextCheck,
    on_sample: Callable[[PointResult], None],
    round_index: int = 1,
    count_text: CountText | None = None,
    send_all: SendAll | None = None,
    at_once: int | None = None,
) -> PointResult:
    """Warm up (in round 1, or every round when the warm-up primes the prefix cache), then
    sample until this round's samples are precise enough or max_samples.

    Every reply's completion count is checked against its max_tokens and the sample's
    /metrics, and once per point against a logprobs witness; with `count_text` (the server's
    /tokenize) its re-tokenized text is noted beside it. `send_all` sends a sample's requests
    (ShardedSender: from worker processes); by default, `client`. `at_once`: the most of a
    sample's requests in flight together, the load of the spot check (default: all of them)."""
    send = send_all or functools.partial(send_in_process, client)
    # later rounds follow a whole pass over a warm engine: only a warm-up that primes this
    # point's prefix cache runs again (the other points' prompts may have evicted it)
    warmups = settings.warmup_requests if round_index == 1 or point.warmup_primes_cache else 0
    for _ in range(warmups):
        records, _load = await send(make_requests())
        point.count_requests(records)
        warm_value = value_of(list(records))
        if warm_value is not None:
            point.warmup_values.append(warm_value)
    looks = precision_checkpoints(
        settings.min_samples, settings.max_samples, settings.precision_checks
    )
    retries = 0
    this_round: list[float] = []
    precise = False
    while len(this_round) < settings.max_samples and retries <= defaults.BENCH_MAX_RETRIES:
        reason = await _take_sample(
            client,
            point,
            send=send,
            make_requests=make_requests,
            value_of=value_of,
            check_text=check_text,
            count_text=count_text,
        )
        if reason is not None:
            point.discarded.append(Discarded(reason=reason, at_sample=len(point.samples)))
            retries += 1
            continue
        retries = 0
        point.samples[-1].round = round_index
        if point.witness is None:
            await _witness_counts(client, point, make_requests()[0])
        if point.spot_check is None:
            await _spot_check(client, point, make_requests(), at_once)
        this_round.append(point.samples[-1].value)
        point.summary = summarize([sample.value for sample in point.samples])
        account(point, settings)
        on_sample(point)
        precise = stop_on_precision(this_round, looks, settings.precision)
        if precise:
            break
    if retries > defaults.BENCH_MAX_RETRIES:
        point.warnings.append(
            f"stopped after {retries} discarded samples in a row: {point.discarded[-1].reason}"
        )
    if settings.rounds == 1 and not precise:
        _flag_imprecise(point, this_round, settings.precision, f"round {round_index}")
    elif round_index == settings.rounds and not _precise_over_rounds(point, settings.precision):
        values = [sample.value for sample in point.samples]
        _flag_imprecise(point, values, settings.precision, f"{settings.rounds} rounds")
    _flag_cold_start(point)
    _flag_two_speeds(point)
    _confirm_cold(point)
    _note_prefix_reuse(point)
    median = point.summary.median if point.summary else None
    point.spec = spec_accounting((sample.metrics for sample in point.samples), median)
    account(point, settings)
    on_sample(point)
    return point


def account(point: PointResult, settings: BenchSettings) -> None:
    """The point's coverage, its error rate judged against the ceiling, and its goodput."""
    requests = [sample.requests for sample in point.samples]
    point.coverage = coverage_of(point.requests_sent, sum(point.request_errors.values()), requests)
    kept = [r for r in point.invalid_reasons if not r.startswith(INVALID_ERRORS)]
    reason = error_rate_reason(point.coverage, settings.max_error_rate)
    if reason is not None:
        point.invalid_reasons = [*kept, reason]
        point.invalid = True
    elif len(kept) < len(point.invalid_reasons):  # the share fell back within the ceiling
        point.invalid_reasons = kept
        point.invalid = bool(kept)
    if settings.slo is not None and requests:
        point.goodput = point_goodput(requests, settings.slo)
    if settings.arrivals is not None and point.suite == "concurrency" and requests:
        loads = [(sample.requests, sample.client) for sample in point.samples]
        point.arrivals = arrival_summary(settings.arrivals, loads)
    if point.suite == "multiturn" and requests:
        point.multiturn = multiturn_figures(requests, settings.conversations, settings.turns)


def _counter_problem(
    delta: MetricsDelta | None, generated: float | None, records: Sequence[RequestRecord]
) -> str | None:
    """Why the server's counters over a sample rule it out: a restart (a counter went
    backwards, which would read as a negative rate), or more tokens than this sample asked."""
    if delta is not None and delta.server_restarted:
        backwards = ", ".join(delta.counters_backwards[:3]) or "process_start_time_seconds"
        return (
            f"server restarted: {backwards} went backwards or changed during this sample, so "
            "its counters give no rate"
        )
    ours = sum(record.completion_tokens or 0 for record in records)
    # every content event carries a token, so a stream's events bound what it generated from
    # below: a server that under-reports its usage is not foreign traffic (its sample is kept
    # and its counts judged), only tokens past what this sample can have made are
    delivered = sum(max(r.completion_tokens or 0, streamed_events(r) or 0) for r in records)
    if generated is not None and generated > delivered:
        return (
            f"foreign traffic: server generated {generated:.0f} tokens, this sample claimed "
            f"{ours} (or the server under-reports its counts)"
        )
    return None


async def _take_sample(
    client: EndpointClient,
    point: PointResult,
    *,
    send: SendAll,
    make_requests: Callable[[], Sequence[ChatRequest | CompletionRequest]],
    value_of: ValueOf,
    check_text: TextCheck,
    count_text: CountText | None,
) -> str | None:
    """Take one sample into `point`; return why it was discarded, or None if kept."""
    idle = await wait_until_idle(client, defaults.BENCH_IDLE_WAIT_S)
    if idle is False:
        return f"server still busy after {defaults.BENCH_IDLE_WAIT_S:g}s (foreign traffic)"
    requests = make_requests()
    before = await try_scrape_metrics(client)
    if idle is None:
        _warn_once(point, _no_idle_check(before))
    records, load = await send(requests)
    point.count_requests(records)
    after = await _settled_snapshot(client)
    # the timed window is over: nothing below changes this sample's timings
    failed = [record.error for record in records if record.error is not None]
    if failed:
        return f"request failed: {failed[0].message}"
    still_running = after.read(Quantity.REQUESTS_RUNNING) if after else None
    if isinstance(still_running, float | int) and still_running > 0:
        return f"foreign traffic: {still_running:.0f} requests still running after this sample"
    delta = metrics_delta(before, after) if before and after else None
    generated = delta.values.get(Quantity.GENERATED_TOKENS) if delta else None
    generated = generated if isinstance(generated, float | int) else None
    if (problem := _counter_problem(delta, generated, records)) is not None:
        return problem
    value = value_of(records)
    if value is None:
        return "no rate could be derived (fewer than 2 output events or no server token count)"
    summaries = [summarize_request(r, rec) for r, rec in zip(requests, records, strict=True)]
    counts = await _judge_counts(
        point, requests, records, summaries, generated=generated, count_text=count_text
    )
    findings = [finding for record in records for finding in check_text(record.content)]
    if (truncated := truncated_thinking_warning(records)) is not None:
        _warn_once(point, truncated)
    point.samples.append(
        Sample(
            value=value,
            requests=summaries,
            metrics=delta,
            degenerate=findings,
            accounting=counts.findings,
            notes=counts.notes,
            client=load,
        )
    )
    if load.saturated:
        _flag_client_limited(point, load)
    if findings:
        mark_invalid(point, INVALID_DEGENERATE)
    if counts.findings:
        mark_invalid(point, INVALID_COUNTS)
    return None


async def _judge_counts(
    point: PointResult,
    requests: Sequence[ChatRequest | CompletionRequest],
    records: list[RequestRecord],
    summaries: list[RequestSummary],
    *,
    generated: float | int | None,
    count_text: CountText | None,
) -> CountVerdict:
    """The sample's counts judged; each re-tokenized count is kept on its request's summary."""
    retokenized: list[int | None] = [None] * len(records)
    if count_text is not None:
        retokenized, failure = await retokenized_counts(records, count_text)
        if failure is not None:
            _warn_once(point, f"a count was not set beside its re-tokenized text: {failure}")
    for summary, count in zip(summaries, retokenized, strict=True):
        summary.retokenized_tokens = count
    replies = [
        ReplyCount(
            record.completion_tokens,
            request.max_tokens,
            record.finish_reason,
            count,
            events=streamed_events(record),
        )
        for request, record, count in zip(requests, records, retokenized, strict=True)
    ]
    return judge_counts(replies, generated)


async def _witness_counts(
    client: EndpointClient, point: PointResult, request: ChatRequest | CompletionRequest
) -> None:
    """The point's logprobs witness, once; a witness that cannot be read is a warning."""
    point.witness = await take_witness(client, request)
    if point.witness.inconsistent:
        mark_invalid(point, INVALID_INCONSISTENT)
        _warn_once(point, f"witness reply: {point.witness.inconsistent[0]}")
    if point.witness.findings:
        mark_invalid(point, INVALID_COUNTS)
    elif not point.witness.read:
        _warn_once(point, unread_warning(point.witness))


async def _spot_check(
    client: EndpointClient,
    point: PointResult,
    requests: Sequence[ChatRequest | CompletionRequest],
    at_once: int | None,
) -> None:
    """The point's correctness spot check, once, at its own load (bench/spot_check.py)."""
    point.spot_check = await spot_check(client, requests[0].model, at_once or len(requests))
    if point.spot_check.nonsense:
        mark_invalid(point, INVALID_NONSENSE)
        _warn_once(point, f"spot check: {point.spot_check.wrong_under_load[0]}")
    elif (warning := spot_check_warning(point.spot_check)) is not None:
        _warn_once(point, warning)


def _precise_over_rounds(point: PointResult, precision: float) -> bool:
    """With several rounds, a round's 3 or 4 samples are not meant to reach the precision on
    their own: the point is judged once, on all its samples, after its last round."""
    values = [sample.value for sample in point.samples]
    return bool(values) and precise_enough(summarize(values), precision, 2)


def _flag_imprecise(point: PointResult, values: list[float], precision: float, when: str) -> None:
    point.imprecise = True
    relative = summarize(values).relative_half_width if values else None
    spread = "no interval" if relative is None else f"±{relative:.1%}"
    point.warnings.append(
        f"imprecise: {when} ended at {len(values)} samples with {spread}, short of the "
        f"±{precision:.1%} asked for — raise --max-samples or --rounds, or read this point as "
        "rough"
    )


def _flag_two_speeds(point: PointResult) -> None:
    """Look again over every sample so far (all rounds); the warning says the latest finding."""
    point.two_speeds = two_speeds([sample.value for sample in point.samples])
    point.warnings = [w for w in point.warnings if not w.startswith(TWO_SPEEDS_PREFIX)]
    if point.two_speeds is not None:
        point.warnings.append(
            f"{point.two_speeds.describe(_unit(point.metric))} — the median is one of "
            "them and the interval spans both; the engine's speed depends on something this "
            "point does not set (on llama.cpp with --parallel: which slots a batch lands on; try "
            "--kv-unified, docs/metrics.md#two-speeds)"
        )


def _unit(metric: str) -> str:
    return "tok/s" if "tok/s" in metric else ""


def _flag_client_limited(point: PointResult, load: ClientLoad) -> None:
    """Flag the point, with a warning from its first saturated sample."""
    if point.client_limited:
        return
    point.client_limited = True
    point.warnings.append(
        f"client-limited: a client process was runnable {load.busiest:.0%} of a sample (on a "
        f"core or queued for one; limit {defaults.BENCH_CLIENT_BUSY_LIMIT:.0%}) — its timings "
        "include queueing in the client; raise --client-processes, free the client's cores, "
        "or read this point as the client's ceiling"
    )


def _no_idle_check(snapshot: MetricsSnapshot | None) -> str:
    """Why the sample could not wait for an idle server: no /metrics, or no gauge in it."""
    if snapshot is None:
        return "no /metrics: idle check and foreign-traffic check are off"
    engine = snapshot.engine or "an engine sparkrig does not recognise"
    return (
        f"/metrics answered ({engine}) but holds no running-requests gauge: idle check and "
        "foreign-traffic check are off"
    )


def _warn_once(point: PointResult, warning: str) -> None:
    if warning not in point.warnings:
        point.warnings.append(warning)


def _confirm_cold(point: PointResult) -> None:
    if not point.expects_cold or not point.samples:
        return
    requests = sum(len(sample.requests) for sample in point.samples)
    point.cold_cache = judge_cold((sample.metrics for sample in point.samples), requests)
    if point.cold_cache.verdict != "confirmed":
        _warn_once(point, point.cold_cache.note)


def _note_prefix_reuse(point: PointResult) -> None:
    """A multiturn point whose later turns missed the cache, or cannot tell, says so; the
    latest verdict over all rounds replaces the one before."""
    point.warnings = [w for w in point.warnings if not w.startswith(REUSE_PREFIX)]
    if point.multiturn is not None and point.multiturn.verdict != "reused":
        point.warnings.append(point.multiturn.note)


def _flag_cold_start(point: PointResult) -> None:
    if point.warmup_primes_cache or not point.warmup_values or point.summary is None:
        return
    if point.summary.median <= 0:
        return
    first = point.warmup_values[0]
    slower = 1 - first / point.summary.median
    # a first request inside the steady samples' own spread is noise, not a cold engine
    beyond_spread = first < point.summary.min
    if slower > defaults.BENCH_COLD_PENALTY and beyond_spread and not point.cold_start:
        point.cold_start = True
        point.warnings.append(
            f"cold engine: first request {first:.1f} vs steady median {point.summary.median:.1f} "
            f"({slower:.0%} slower); discarded as warm-up, not averaged in — a freshly started "
            "DSpark runtime needs about five 500–700-token generations to reach steady state: "
            "send those first (a `bench --suite decode --tokens 600` run, discarded) "
            "(docs/field-notes.md#warmup-penalty)"
        )
