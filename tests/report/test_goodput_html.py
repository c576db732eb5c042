"""The goodput table and the load curves of a `bench --slo` / `--find-max-load` receipt, built
from constructed points judged by the real goodput code."""

from __future__ import annotations

import re

from sparkrig.bench.goodput import point_goodput
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import PointResult, RequestSummary, Sample
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.slo import parse_slo
from sparkrig.bench.statistics import summarize
from sparkrig.report.html_report import render_report
from sparkrig.report.svg_charts import limit_chart

SLO = parse_slo("ttft_p99=200ms")
INVALID_TTFT_S = 0.4321  # an invalid point's figure: it must never reach the page


def _probe(load: int, ttft_s: float, *, invalid: bool = False) -> PointResult:
    requests = [
        RequestSummary(
            prompt_sha256="0" * 16,
            completion_tokens=16,
            token_source="usage",
            ttft_s=ttft_s,
            decode_tps=100.0,
            e2e_s=ttft_s + 0.15,
            finish_reason="length",
            send_ns=index * 1_000_000,
            first_output_ns=0,
            last_output_ns=1,
        )
        for index in range(load * 2)
    ]
    point = PointResult(
        suite="max-load",
        name=f"c={load}",
        metric="aggregate tok/s",
        summary=summarize([100.0 * load]),
        samples=[Sample(value=100.0 * load, requests=requests)],
        load=load,
        invalid=invalid,
    )
    point.goodput = point_goodput([requests], SLO)
    return point


def _receipt(points: list[PointResult]) -> BenchReceipt:
    receipt = BenchReceipt(
        base_url="http://127.0.0.1:8080",
        model="smollm2",
        engine="llama.cpp",
        suites=["max-load"],
        settings=BenchSettings(slo=SLO, concurrency=[1, 8]),
        points=points,
    )
    receipt.judge_max_load()
    return receipt


def test_the_page_shows_the_search_answer_every_probe_and_the_curve_by_load() -> None:
    # probed in the search's order: both ends, then the bisection
    receipt = _receipt([_probe(1, 0.05), _probe(8, 0.9), _probe(4, 0.15), _probe(6, 0.3)])
    page = render_report([receipt], ["max-load.json"])
    assert "max load under ttft_p99=200ms: c=4 meets, c=6 fails" in page
    assert "max-load: ttft p99 by load" in page
    assert "limit ttft_p99=200ms" in page
    assert "max-load: goodput tok/s by load" in page
    curve = page[page.index("max-load: ttft p99 by load") :]
    # the curve runs by level, not by the order probed
    assert curve.index("c=4: 150") < curve.index("c=6: 300") < curve.index("c=8: 900")
    assert page.count("ttft_p99=200ms: 900 ms fails") == 1
    assert page.count(">fails</td>") == 2  # c=6 and c=8 in the table


def test_an_invalid_probe_reads_invalid_and_never_shows_its_figure() -> None:
    receipt = _receipt([_probe(1, 0.05), _probe(8, INVALID_TTFT_S, invalid=True)])
    page = render_report([receipt], ["max-load.json"])
    curve = page[page.index("max-load: ttft p99 by load") :]
    assert "c=8: invalid" in curve
    assert f"{INVALID_TTFT_S * 1000:.0f}" not in page


def test_a_receipt_without_an_slo_has_no_goodput_section() -> None:
    receipt = _receipt([])
    receipt.settings = BenchSettings()
    assert "<h3>goodput</h3>" not in render_report([receipt], ["plain.json"])


def test_the_limit_stays_on_the_axis_when_every_value_is_far_below_it() -> None:
    svg = limit_chart("t", "x", "y", ["a", "b"], [1.0, 2.0], limit=500.0, limit_label="limit")
    assert 'stroke-dasharray="6 4"' in svg
    ticks = [float(t) for t in re.findall(r'text-anchor="end" fill="#333">([0-9.]+)<', svg)]
    assert max(ticks) >= 500  # the axis reaches the limit
