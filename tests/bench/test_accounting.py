"""The token-accounting checks as pure functions: each one fails on a lie and passes the truth.

The live proof, the bench against the real llama-server behind a gateway that inflates its
counts, is in tests/bench/test_accounting_live.py.
"""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.bench.accounting import (
    count_tolerance,
    max_tokens_finding,
    metrics_count_finding,
    text_count_finding,
)


def test_the_tolerance_is_a_share_of_the_count_with_a_floor() -> None:
    assert count_tolerance(2) == defaults.BENCH_TOKEN_COUNT_SLACK
    assert count_tolerance(128) == 7  # ceil(0.05 × 128)
    assert count_tolerance(1000) == 50


def test_a_count_within_tolerance_of_the_text_passes() -> None:
    assert text_count_finding(claimed=128, retokenized=128) is None
    assert text_count_finding(claimed=128, retokenized=121) is None
    assert text_count_finding(claimed=2, retokenized=0) is None


def test_a_count_the_text_does_not_hold_is_a_finding_with_both_numbers() -> None:
    finding = text_count_finding(claimed=160, retokenized=128)
    assert finding is not None
    assert "160" in finding
    assert "128" in finding
    assert "±8" in finding
    # fewer claimed than the text holds is just as wrong
    assert text_count_finding(claimed=100, retokenized=128) is not None


def test_nothing_to_compare_is_no_finding() -> None:
    assert text_count_finding(claimed=None, retokenized=12) is None
    assert text_count_finding(claimed=12, retokenized=None) is None
    assert max_tokens_finding(claimed=None, max_tokens=12, finish_reason="length") is None
    assert metrics_count_finding(claimed_total=12, generated=None) is None


def test_more_than_max_tokens_is_a_finding() -> None:
    finding = max_tokens_finding(claimed=160, max_tokens=128, finish_reason="length")
    assert finding is not None
    assert "160" in finding
    assert "128" in finding
    assert max_tokens_finding(claimed=128, max_tokens=128, finish_reason="length") is None


def test_running_to_length_short_of_max_tokens_is_a_finding() -> None:
    finding = max_tokens_finding(claimed=100, max_tokens=128, finish_reason="length")
    assert finding is not None
    assert "100" in finding
    assert max_tokens_finding(claimed=100, max_tokens=128, finish_reason="stop") is None


def test_claiming_more_than_metrics_counted_is_a_finding() -> None:
    finding = metrics_count_finding(claimed_total=640, generated=512)
    assert finding is not None
    assert "640" in finding
    assert "512" in finding
    assert metrics_count_finding(claimed_total=512, generated=512) is None
    # more generated than claimed is foreign traffic, which the point discards and retakes
    assert metrics_count_finding(claimed_total=512, generated=600) is None
