"""A point's flags and warnings from its numbers alone. The cold-start flag fires on a first
request markedly slower than the steady median and outside the steady samples' spread, and stays
quiet on a first request that noise alone explains (docs/metrics.md); a /metrics page without
the running-requests gauge is said to be that, not missing."""

from __future__ import annotations

from sparkrig.bench.point_flags import flag_cold_start, no_idle_check_warning
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.statistics import summarize
from sparkrig.client.metrics import parse_metrics


def _point(first: float, samples: list[float]) -> PointResult:
    point = PointResult(suite="decode", name="c1", metric="tok/s")
    point.warmup_values = [first]
    point.summary = summarize(samples)
    flag_cold_start(point)
    return point


def test_a_first_request_far_below_every_steady_sample_is_a_cold_start() -> None:
    point = _point(58.5, [83.1, 83.2, 83.3])  # docs/field-notes.md#warmup-penalty
    assert point.cold_start
    warning = next(w for w in point.warnings if w.startswith("cold engine: first request 58.5"))
    # said to every engine's user: the DSpark runtime is one example, not the subject
    assert "a freshly started engine reaches its steady speed" in warning
    assert "freshly started DSpark runtime" not in warning


def test_a_slow_first_request_inside_the_samples_spread_is_noise() -> None:
    point = _point(94.8, [91.6, 132.6, 140.9])  # a warm engine on a loaded 2-core CI machine
    assert not point.cold_start
    assert not point.warnings


def test_a_first_request_just_below_the_slowest_but_near_the_median_is_not_flagged() -> None:
    point = _point(99.0, [100.0, 104.0, 108.0])
    assert not point.cold_start


def test_the_flag_is_raised_once_across_rounds() -> None:
    point = _point(50.0, [100.0, 101.0, 102.0])
    flag_cold_start(point)
    assert point.cold_start
    assert sum(w.startswith("cold engine") for w in point.warnings) == 1


def test_a_metrics_page_without_the_running_gauge_is_not_called_missing() -> None:
    assert no_idle_check_warning(None).startswith("no /metrics:")
    page = parse_metrics(
        "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 5\n"
    )
    said = no_idle_check_warning(page)
    assert said.startswith("/metrics answered (")
    assert "no running-requests gauge" in said
