"""Goodput under an SLO, from request summaries: parsing, who meets it, rates and intervals."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sparkrig.bench.goodput import meets, point_goodput, sample_goodput, sample_window_s
from sparkrig.bench.slo import Slo, SloTerm, parse_slo
from sparkrig.bench.statistics import percentile, wilson_interval
from sparkrig.errors import UsageError

NS = 1_000_000_000


@dataclass
class Request:
    """The fields goodput reads, as a RequestSummary carries them."""

    ttft_s: float | None
    decode_tps: float | None
    e2e_s: float | None
    send_ns: int | None = 0
    completion_tokens: int | None = 10


def test_a_spec_parses_to_its_terms_in_seconds() -> None:
    slo = parse_slo("ttft_p99=2s, tpot_p50=50ms,E2E_P90=1.5s")
    assert slo.terms == [
        SloTerm(metric="ttft", percentile=99, limit_s=2.0),
        SloTerm(metric="tpot", percentile=50, limit_s=0.05),
        SloTerm(metric="e2e", percentile=90, limit_s=1.5),
    ]
    assert slo.label == "ttft_p99=2s,tpot_p50=50ms,e2e_p90=1.5s"
    assert parse_slo("itl_p95=20ms").terms[0].metric == "tpot"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("", "empty"),
        ("ttft_p99=2s,,e2e_p50=3s", "empty"),
        ("ttft<2s", "METRIC_pN=LIMIT"),
        ("ttft_p99=2", "unit"),
        ("ttft_p99=2h", "unit"),
        ("ttft_p97=2s", "p97"),
        ("goodput_p99=2s", "goodput"),
        ("ttft_p99=-2s", "above 0"),
        ("ttft_p99=0s", "above 0"),
        ("ttft_p99=1e400s", "above 0"),
        ("ttft_p99=٣s", "above 0"),
        ("ttft_p99=7200s", "3600s"),
        ("ttft_p99=2s,ttft_p50=1s", "twice"),
    ],
)
def test_a_bad_spec_is_refused_with_the_fix(spec: str, says: str) -> None:
    with pytest.raises(UsageError, match=says) as caught:
        parse_slo(spec)
    assert " — " in str(caught.value)
    assert "\n" not in str(caught.value)


SLO = Slo(
    terms=[
        SloTerm(metric="ttft", percentile=99, limit_s=1.0),
        SloTerm(metric="tpot", percentile=99, limit_s=0.05),
    ]
)


def test_a_request_meets_only_when_every_term_holds() -> None:
    assert meets(Request(ttft_s=0.5, decode_tps=40, e2e_s=1), SLO) is True  # tpot 25 ms
    assert meets(Request(ttft_s=1.5, decode_tps=40, e2e_s=2), SLO) is False
    assert meets(Request(ttft_s=0.5, decode_tps=10, e2e_s=2), SLO) is False  # tpot 100 ms
    # a figure that cannot be computed is not a pass; a failed term still fails
    assert meets(Request(ttft_s=0.5, decode_tps=None, e2e_s=1), SLO) is None
    assert meets(Request(ttft_s=3.0, decode_tps=None, e2e_s=4), SLO) is False


def test_goodput_is_requests_meeting_per_second_of_the_window() -> None:
    sample = [
        Request(ttft_s=0.5, decode_tps=40, e2e_s=2.0, send_ns=0, completion_tokens=64),
        Request(ttft_s=1.5, decode_tps=40, e2e_s=3.0, send_ns=1 * NS, completion_tokens=64),
    ]
    assert sample_window_s(sample) == pytest.approx(4.0)  # 0 s to 1 s + 3 s
    requests_per_s, tokens_per_s = sample_goodput(sample, SLO) or (0, 0)
    assert requests_per_s == pytest.approx(0.25)
    assert tokens_per_s == pytest.approx(16.0)


def test_no_send_time_no_window_no_figure() -> None:
    old = [Request(ttft_s=0.5, decode_tps=40, e2e_s=2.0, send_ns=None)]
    assert sample_goodput(old, SLO) is None
    assert point_goodput([old], SLO).requests_per_s is None


def test_a_point_has_an_interval_a_share_and_a_verdict() -> None:
    fast = Request(ttft_s=0.2, decode_tps=50, e2e_s=1.0)
    slow = Request(ttft_s=2.0, decode_tps=50, e2e_s=3.0)
    samples = [[fast, fast], [fast, slow], [fast, fast]]
    goodput = point_goodput(samples, SLO)
    assert (goodput.requests, goodput.met, goodput.unjudged) == (6, 5, 0)
    assert goodput.share == pytest.approx(5 / 6)
    assert goodput.share_ci95 is not None
    low, high = goodput.share_ci95
    assert 0 < low < 5 / 6 < high < 1
    assert goodput.requests_per_s is not None
    assert goodput.requests_per_s.samples == pytest.approx([2.0, 1 / 3, 2.0])
    assert goodput.requests_per_s.ci95_half_width is not None
    ttft, tpot = goodput.terms
    assert ttft.requests == 6
    assert ttft.holds is False  # p99 of five 0.2 s and one 2 s is above 1 s
    assert tpot.holds is True
    assert goodput.holds is False
    assert point_goodput([[fast, fast], [fast, fast]], SLO).holds is True


def test_an_impossible_slo_gives_zero_not_nothing() -> None:
    impossible = parse_slo("ttft_p50=1ms")
    goodput = point_goodput([[Request(ttft_s=0.2, decode_tps=50, e2e_s=1.0)]] * 2, impossible)
    assert goodput.met == 0
    assert goodput.requests_per_s is not None
    assert goodput.requests_per_s.median == 0
    assert goodput.share_ci95 is not None
    assert goodput.share_ci95[0] == 0
    assert goodput.share_ci95[1] > 0  # two requests do not prove it never holds
    assert goodput.holds is False


def test_unjudged_requests_are_counted_and_leave_a_term_without_figures_unjudged() -> None:
    single = Request(ttft_s=0.2, decode_tps=None, e2e_s=0.3)
    goodput = point_goodput([[single, single]], SLO)
    assert (goodput.met, goodput.unjudged) == (0, 2)
    assert goodput.terms[1].observed_s is None
    assert goodput.holds is None


def test_percentile_interpolates_between_ranks() -> None:
    values = [float(v) for v in range(1, 11)]
    assert percentile(values, 0.5) == pytest.approx(5.5)
    assert percentile(values, 0.99) == pytest.approx(9.91)
    assert percentile([3.0], 0.99) == 3.0
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def test_wilson_interval_stays_within_zero_and_one() -> None:
    assert wilson_interval(0, 0) is None
    low, high = wilson_interval(10, 10) or (0, 0)
    assert high == pytest.approx(1.0)
    assert low == pytest.approx(0.7225, abs=1e-3)  # the textbook value for 10 of 10
    low, high = wilson_interval(5, 10) or (0, 0)
    assert low == pytest.approx(0.2366, abs=1e-3)
    assert high == pytest.approx(0.7634, abs=1e-3)
