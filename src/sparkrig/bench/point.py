"""Measure one benchmark point honestly: warm up, wait for idle, repeat to a precision.

A sample is discarded (and retried) when a request failed or when the server generated tokens
nobody in this run asked for (foreign traffic). Degenerate output, or token counts that an
exact witness does not hold (bench/accounting.py), mark the point invalid. What a point keeps
is bench/point_result.py; the warnings it carries when its samples are in, bench/point_flags.py.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence

from sparkrig import defaults
from sparkrig.bench.accounting import (
    CountText,
    CountVerdict,
    ReplyCount,
    judge_counts,
    retokenized_counts,
)
from sparkrig.bench.arrivals import arrival_summary
from sparkrig.bench.client_shards import SendAll, send_in_process
from sparkrig.bench.count_witness import take_witness, unread_warning
from sparkrig.bench.goodput import point_goodput
from sparkrig.bench.multiturn_figures import multiturn_figures
from sparkrig.bench.point_flags import (
    confirm_cold,
    flag_client_limited,
    flag_cold_start,
    flag_imprecise,
    flag_two_speeds,
    no_idle_check_warning,
    note_prefix_reuse,
    warn_once,
)
from sparkrig.bench.point_result import (
    INVALID_COUNTS,
    INVALID_DEGENERATE,
    INVALID_INCONSISTENT,
    INVALID_NONSENSE,
    Discarded,
    PointResult,
    RequestSummary,
    Sample,
    mark_invalid,
    summarize_request,
)
from sparkrig.bench.settings import BenchSettings as BenchSettings  # noqa: PLC0414 - re-exported
from sparkrig.bench.speculative import spec_accounting
from sparkrig.bench.spot_check import spot_check, spot_check_warning
from sparkrig.bench.statistics import (
    precise_enough,
    precision_checkpoints,
    stop_on_precision,
    summarize,
)
from sparkrig.bench.thinking_budget import truncated_thinking_warning
from sparkrig.bench.validity import INVALID_ERRORS, coverage_of, error_rate_reason
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
        flag_imprecise(point, this_round, settings.precision, f"round {round_index}")
    elif round_index == settings.rounds and not _precise_over_rounds(point, settings.precision):
        values = [sample.value for sample in point.samples]
        flag_imprecise(point, values, settings.precision, f"{settings.rounds} rounds")
    flag_cold_start(point)
    flag_two_speeds(point)
    confirm_cold(point)
    note_prefix_reuse(point)
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
        warn_once(point, no_idle_check_warning(before))
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
        warn_once(point, truncated)
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
        flag_client_limited(point, load)
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
            warn_once(point, f"a count was not set beside its re-tokenized text: {failure}")
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
        warn_once(point, f"witness reply: {point.witness.inconsistent[0]}")
    if point.witness.findings:
        mark_invalid(point, INVALID_COUNTS)
    elif not point.witness.read:
        warn_once(point, unread_warning(point.witness))


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
        warn_once(point, f"spot check: {point.spot_check.wrong_under_load[0]}")
    elif (warning := spot_check_warning(point.spot_check)) is not None:
        warn_once(point, warning)


def _precise_over_rounds(point: PointResult, precision: float) -> bool:
    """With several rounds, a round's 3 or 4 samples are not meant to reach the precision on
    their own: the point is judged once, on all its samples, after its last round."""
    values = [sample.value for sample in point.samples]
    return bool(values) and precise_enough(summarize(values), precision, 2)
