"""The goodput part of a bench receipt's page: a table of every point judged under `--slo`,
and the load curves — each SLO term's observed percentile at each load against its limit, and
goodput tok/s at each load — with the `--find-max-load` answer as their caption.

Presentation only: it reads the receipt's numbers (docs/metrics.md#goodput, #max-load).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from sparkrig.bench.goodput import PointGoodput
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.slo import SloTerm
from sparkrig.report.svg_charts import Bar, Cell, bar_chart, limit_chart

INVALID = "invalid"
_DASH = "—"
# suites whose points are one load level each, drawn as a curve over the level
CURVE_SUITES = ("max-load", "concurrency")


def goodput_section(receipt: BenchReceipt) -> str:
    """The table and curves; empty when no point was judged under an SLO."""
    judged = [point for point in receipt.points if point.goodput is not None]
    if not judged:
        return ""
    parts = ["<h3>goodput</h3>"]
    if receipt.max_load is not None:
        parts.append(f"<p><strong>{escape(receipt.max_load.describe())}</strong></p>")
    parts.append(_table(judged))
    figures = _curves(receipt)
    if figures:
        parts.append(f'<div class="charts">\n{figures}\n</div>')
    return "\n".join(parts)


def _share(goodput: PointGoodput) -> str:
    if goodput.share is None:
        return _DASH
    low_high = goodput.share_ci95
    interval = f" [{low_high[0]:.0%}–{low_high[1]:.0%}]" if low_high is not None else ""
    return f"{goodput.share:.1%}{interval}"


def _terms(goodput: PointGoodput) -> str:
    cells = []
    for term in goodput.terms:
        if term.observed_s is None:
            cells.append(f'<span class="muted">{escape(term.term)}: no figure</span>')
            continue
        mark, style = ("holds", "") if term.holds else ("fails", ' class="bad"')
        cells.append(
            f"<span{style}>{escape(term.term)}: {term.observed_s * 1000:.0f} ms {mark}</span>"
        )
    return "<br>".join(cells)


def _table(points: Sequence[PointResult]) -> str:
    head = "".join(
        f"<th>{name}</th>"
        for name in (
            "suite",
            "point",
            "requests",
            "met",
            "share meeting [95%]",
            "goodput req/s",
            "goodput tok/s",
            "terms (observed percentile)",
            "SLO",
        )
    )
    rows = []
    for point in points:
        goodput = point.goodput
        assert goodput is not None  # the caller kept judged points only
        rate = goodput.requests_per_s
        tokens = goodput.tokens_per_s
        verdict = (
            INVALID
            if point.invalid
            else {True: "holds", False: "fails", None: "not judged"}[goodput.holds]
        )
        style = ' class="bad"' if point.invalid or goodput.holds is False else ""
        if point.invalid:  # an invalid point's figures never reach the page
            rows.append(
                f"<tr><td>{escape(point.suite)}</td><td>{escape(point.name)}</td>"
                f'<td class="num">{goodput.requests}</td>'
                + f'<td class="muted">{INVALID}</td>' * 5
                + f"<td{style}>{verdict}</td></tr>"
            )
            continue
        unjudged = f" ({goodput.unjudged} unjudged)" if goodput.unjudged else ""
        rows.append(
            "<tr>"
            f"<td>{escape(point.suite)}</td><td>{escape(point.name)}</td>"
            f'<td class="num">{goodput.requests}</td>'
            f'<td class="num">{goodput.met}{unjudged}</td>'
            f'<td class="num">{_share(goodput)}</td>'
            f'<td class="num">{f"{rate.median:.2f}" if rate else _DASH}</td>'
            f'<td class="num">{f"{tokens.median:.1f}" if tokens else _DASH}</td>'
            f"<td>{_terms(goodput)}</td><td{style}>{verdict}</td>"
            "</tr>"
        )
    return f"<table>\n<tr>{head}</tr>\n" + "\n".join(rows) + "\n</table>"


def _curve_points(receipt: BenchReceipt, suite: str) -> list[PointResult]:
    """The suite's judged points with a load, one per level (the last measured), by level."""
    by_load: dict[int, PointResult] = {}
    for point in receipt.points:
        if point.suite == suite and point.goodput is not None and point.load is not None:
            by_load[point.load] = point
    return [by_load[load] for load in sorted(by_load)]


def _observed_ms(point: PointResult, term: SloTerm) -> Cell:
    if point.invalid:
        return INVALID
    assert point.goodput is not None  # _curve_points keeps judged points only
    result = next((t for t in point.goodput.terms if t.term == term.label), None)
    if result is None or result.observed_s is None:
        return "no figure"
    return result.observed_s * 1000


def _goodput_bar(point: PointResult) -> Bar:
    tokens = point.goodput.tokens_per_s if point.goodput else None
    if point.invalid or tokens is None:
        return Bar(f"c={point.load}", INVALID if point.invalid else "no window")
    half = tokens.ci95_half_width
    low, high = (tokens.mean - half, tokens.mean + half) if half is not None else (None, None)
    return Bar(f"c={point.load}", tokens.median, low, high)


def _curves(receipt: BenchReceipt) -> str:
    slo = receipt.settings.slo
    if slo is None:
        return ""
    figures = []
    for suite in CURVE_SUITES:
        points = _curve_points(receipt, suite)
        if len(points) < 2:
            continue
        loads = [f"c={point.load}" for point in points]
        for term in slo.terms:
            svg = limit_chart(
                f"{suite}: {term.metric} p{term.percentile} by load",
                "concurrent streams",
                f"{term.metric} p{term.percentile}, ms",
                loads,
                [_observed_ms(point, term) for point in points],
                limit=term.limit_s * 1000,
                limit_label=f"limit {term.label}",
            )
            figures.append(
                f"<figure>{svg}<figcaption>each level's {escape(term.metric)} "
                f"p{term.percentile} over its requests; green holds the limit, red does not"
                "</figcaption></figure>"
            )
        svg = bar_chart(
            f"{suite}: goodput tok/s by load",
            "concurrent streams",
            "tok/s of requests meeting the SLO",
            [_goodput_bar(point) for point in points],
        )
        figures.append(
            f"<figure>{svg}<figcaption>bar: median over samples of the tokens of requests "
            "meeting every term ÷ the sample's window; whisker: 95% interval of the mean"
            "</figcaption></figure>"
        )
    return "\n".join(figures)
