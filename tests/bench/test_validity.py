"""Run validity: the error-rate ceiling makes a point INVALID with its count, and every
figure says how many requests it rests on."""

from __future__ import annotations

import pytest

from sparkrig import defaults
from sparkrig.bench.point import BenchSettings, account
from sparkrig.bench.point_result import (
    INVALID_DEGENERATE,
    PointResult,
    RequestSummary,
    Sample,
    mark_invalid,
)
from sparkrig.bench.validity import INVALID_ERRORS, coverage_of, error_rate_reason


def _request(ttft_s: float | None = 0.1, decode_tps: float | None = 50.0) -> RequestSummary:
    return RequestSummary(
        prompt_sha256="0" * 16,
        completion_tokens=16,
        token_source="per_event_timings",
        ttft_s=ttft_s,
        decode_tps=decode_tps,
        e2e_s=0.5,
        finish_reason="length",
        send_ns=0,
        first_output_ns=None,
        last_output_ns=None,
    )


def _point(sent: int, failed: int, samples: int = 3) -> PointResult:
    point = PointResult(suite="concurrency", name="c=2 cold", metric="tok/s")
    point.samples = [Sample(value=100.0, requests=[_request(), _request()]) for _ in range(samples)]
    point.requests_sent = sent
    point.request_errors = {"http_status": failed} if failed else {}
    return point


def test_the_default_ceiling_is_one_in_a_hundred() -> None:
    assert BenchSettings().max_error_rate == defaults.BENCH_MAX_ERROR_RATE == 0.01


def test_a_point_above_the_ceiling_is_invalid_with_its_count() -> None:
    point = _point(sent=13, failed=1)
    account(point, BenchSettings())
    assert point.invalid
    assert point.invalid_reasons == [
        f"{INVALID_ERRORS}: 1 of 13 requests failed (7.7%, ceiling 1.0%)"
    ]


def test_a_point_within_the_ceiling_stays_valid() -> None:
    point = _point(sent=200, failed=2)  # exactly 1%
    account(point, BenchSettings())
    assert not point.invalid
    clean = _point(sent=13, failed=0)
    account(clean, BenchSettings())
    assert not clean.invalid
    lenient = _point(sent=13, failed=1)
    account(lenient, BenchSettings(max_error_rate=0.1))
    assert not lenient.invalid


def test_a_share_that_falls_back_clears_only_its_own_reason() -> None:
    point = _point(sent=13, failed=1)
    account(point, BenchSettings())
    point.requests_sent = 200  # later rounds sent more, none failed
    account(point, BenchSettings())
    assert not point.invalid
    assert point.invalid_reasons == []
    degenerate = _point(sent=13, failed=1)
    mark_invalid(degenerate, INVALID_DEGENERATE)
    account(degenerate, BenchSettings())
    degenerate.requests_sent = 200
    account(degenerate, BenchSettings())
    assert degenerate.invalid
    assert degenerate.invalid_reasons == [INVALID_DEGENERATE]


def test_coverage_counts_what_each_figure_rests_on() -> None:
    samples = [[_request(), _request(decode_tps=None)], [_request(ttft_s=None), _request()]]
    coverage = coverage_of(sent=6, failed=1, samples=samples)
    assert coverage.samples == 2
    assert coverage.value_requests == 4
    assert coverage.ttft_requests == 3
    assert coverage.decode_requests == 3
    assert coverage.error_rate == pytest.approx(1 / 6)
    assert error_rate_reason(coverage, 0.2) is None
    assert error_rate_reason(coverage, 0.1) is not None
    nothing = coverage_of(sent=0, failed=0, samples=[])
    assert nothing.error_rate is None
    assert error_rate_reason(nothing, 0.0) is None


def test_account_sets_coverage_and_goodput_together() -> None:
    from sparkrig.bench.slo import parse_slo

    point = _point(sent=7, failed=0)
    account(point, BenchSettings(slo=parse_slo("ttft_p99=1s")))
    assert point.coverage is not None
    assert point.coverage.value_requests == 6
    assert point.goodput is not None
    assert point.goodput.requests == point.coverage.value_requests
