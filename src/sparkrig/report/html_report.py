"""One self-contained HTML page for bench, check and fabric-test receipts: header, warnings,
every point, SVG charts; every guard's verdict; a fabric test's checks, ladder and cable loads.

Inline CSS and SVG only (no script, font or URL), so the file opens offline and travels as one
attachment. A point whose output degenerated shows the word "invalid", never its number.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from html import escape

from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import PointResult, count_findings, count_notes, invalid_reasons
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.statistics import precision_checkpoints
from sparkrig.bench.suites import per_stream_mean
from sparkrig.doctor.telemetry_model import TelemetryRecord
from sparkrig.report import fabric_test_html, smoke_html, soak_html
from sparkrig.report.check_html import CHECK_CSS
from sparkrig.report.goodput_html import goodput_section
from sparkrig.report.html_identity import identity_block
from sparkrig.report.multiturn_html import multiturn_section
from sparkrig.report.receipt_kinds import SECTIONS, Receipt, section_for
from sparkrig.report.svg_charts import (
    Bar,
    Cell,
    Series,
    bar_chart,
    grouped_bar_chart,
    position_chart,
)
from sparkrig.report.telemetry_html import telemetry_section

PAGE_TITLE = "sparkrig report"  # how `report --out` knows a page it may replace
INVALID = "invalid"
NO_DATA = "no data"
_DASH = "—"
_INTERVAL_NOTE = (
    "bar: median of the samples; whisker: 95% Student-t interval of the mean. "
    "tok/s from server token counts."
)
_POINT_COLUMNS = (
    "suite",
    "point",
    "metric",
    "n",
    "median",
    "±95%",
    "min–max",
    "TTFT ms",
    "per stream",
    "flags",
)

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 24px auto; max-width: 1100px;
       padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; border-bottom: 2px solid #4c78a8; padding-bottom: 4px; margin-top: 40px; }
h3 { font-size: 15px; margin: 24px 0 8px; }
section + section { border-top: 4px double #bbb; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.meta dt { color: #666; }
dl.meta dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.invalid td { background: #fdecee; }
.status { display: inline-block; padding: 0 8px; border-radius: 8px; font-weight: 600; }
.complete { background: #e3f4e1; color: #1d6b1d; }
.interrupted { background: #fff1d6; color: #8a5a00; }
.flag { display: inline-block; margin-right: 6px; }
.bad { color: #b00020; font-weight: 600; }
.warn { color: #8a5a00; }
.muted { color: #666; }
ul.warnings { background: #fff8e6; border-left: 4px solid #f0b429; padding: 8px 8px 8px 28px; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #666; font-size: 12px; max-width: 640px; }
"""


# each module registers its kind's section when imported (bench's is `_section` below)
_SECTION_MODULES = (fabric_test_html, smoke_html, soak_html)
__all__ = ["Receipt", "render_report"]


def render_report(
    receipts: Sequence[Receipt],
    names: Sequence[str] | None = None,
    telemetry: Sequence[TelemetryRecord | None] | None = None,
) -> str:
    """The whole page; `names` label the receipts (their file names), and `telemetry` is each
    receipt's host telemetry or None, both in the same order."""
    labels = (
        list(names) if names is not None else [f"receipt {i + 1}" for i in range(len(receipts))]
    )
    sections = [
        SECTIONS.get(receipt.kind)(receipt, label)
        for receipt, label in zip(receipts, labels, strict=True)
    ]
    for index, sampled in enumerate(telemetry or []):
        if sampled is not None:  # drawn at the end of its receipt's section
            sections[index] = sections[index].removesuffix("</section>") + (
                telemetry_section(sampled) + "\n</section>"
            )
    models = ", ".join(dict.fromkeys(receipt.subject for receipt in receipts))
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            '<head>\n<meta charset="utf-8">',
            f"<title>{PAGE_TITLE} · {escape(models)}</title>",
            f"<style>{_CSS}{CHECK_CSS}</style>\n</head>\n<body>",
            f'<h1>sparkrig report</h1>\n<p class="muted">{escape(", ".join(labels))}</p>',
            *sections,
            "</body>\n</html>\n",
        ]
    )


@section_for(BenchReceipt)
def _section(receipt: BenchReceipt, label: str) -> str:
    return "\n".join(
        [
            f"<section>\n<h2>{escape(label)}</h2>",
            _header(receipt),
            _warnings(receipt),
            "<h3>points</h3>",
            _points_table(receipt),
            _spec_table(receipt),
            goodput_section(receipt),
            multiturn_section(receipt),
            "<h3>charts</h3>",
            f'<div class="charts">\n{_charts(receipt)}\n</div>',
            "</section>",
        ]
    )


def _header(receipt: BenchReceipt) -> str:
    settings = receipt.settings
    return identity_block(
        receipt,
        extra={
            "suites": ", ".join(receipt.suites),
            "settings": (
                f"precision ±{settings.precision:.1%} · samples {settings.min_samples}–"
                f"{settings.max_samples}, looks at {_looks(settings)} · "
                f"warm-up {settings.warmup_requests} · "
                f"{settings.decode_tokens} tokens per request · concurrency "
                f"{', '.join(map(str, settings.concurrency))}"
                + (f" · {settings.rounds} rounds" if settings.rounds > 1 else "")
            ),
        },
    )


def _looks(settings: BenchSettings) -> str:
    looks = precision_checkpoints(
        settings.min_samples, settings.max_samples, settings.precision_checks
    )
    return ", ".join(map(str, looks))


def _warnings(receipt: BenchReceipt) -> str:
    lines = list(receipt.warnings)
    lines += [f"{p.suite}/{p.name}: {w}" for p in receipt.points for w in p.warnings]
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return f'<h3>warnings</h3>\n<ul class="warnings">{items}</ul>'


def _flags(point: PointResult) -> str:
    flags = []
    if point.invalid:
        degenerate = [f for sample in point.samples for f in sample.degenerate]
        findings = dict.fromkeys([*degenerate, *count_findings(point)])
        detail = f" ({'; '.join(list(findings)[:3])})" if findings else ""
        why = ", ".join(invalid_reasons(point))
        flags.append(f'<span class="flag bad">INVALID: {escape(why + detail)}</span>')
    if point.two_speeds is not None:
        flags.append(
            f'<span class="flag warn">{escape(point.two_speeds.describe(""))}: the median is one '
            "of them (see warnings)</span>"
        )
    if point.imprecise:
        flags.append(
            '<span class="flag warn">imprecise: ended without reaching the precision asked for '
            "(see warnings)</span>"
        )
    if point.cold_start:
        flags.append('<span class="flag warn">cold start</span>')
    if point.client_limited:
        flags.append(
            '<span class="flag warn">client-limited: a client process was near one full core '
            "(see warnings)</span>"
        )
    if point.discarded:
        reasons = Counter(discarded.reason for discarded in point.discarded)
        detail = "; ".join(f"{reason} ×{count}" for reason, count in reasons.items())
        flags.append(
            f'<span class="flag warn">{len(point.discarded)} discarded: {escape(detail)}</span>'
        )
    if notes := count_notes(point):
        flags.append(
            f'<span class="flag">{notes} re-tokenized count notes: the text re-tokenizes to '
            "another count than the server claimed, not a count check (see the receipt)</span>"
        )
    return "".join(flags)


def _median_cell(point: PointResult) -> Cell:
    if point.invalid:
        return INVALID
    return NO_DATA if point.summary is None else point.summary.median


def _stream_cell(point: PointResult) -> Cell:
    if point.invalid:
        return INVALID
    rate = per_stream_mean(point)
    return NO_DATA if rate is None else rate


def _median_ttft_ms(point: PointResult) -> str:
    ttfts = [r.ttft_s for s in point.samples for r in s.requests if r.ttft_s is not None]
    return f"{statistics.median(ttfts) * 1000:.0f}" if ttfts else _DASH


def _shown(cell: Cell, spec: str = ".1f") -> str:
    return cell if isinstance(cell, str) else format(cell, spec)


def _points_table(receipt: BenchReceipt) -> str:
    rows = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in _POINT_COLUMNS) + "</tr>"]
    for point in receipt.points:
        summary = point.summary
        spread = range_ = ttft = _DASH
        if summary is not None and not point.invalid:
            if summary.relative_half_width is not None:
                spread = f"±{summary.relative_half_width:.1%}"
            range_ = f"{summary.min:.1f}–{summary.max:.1f}"
            ttft = _median_ttft_ms(point)
        stream = _shown(_stream_cell(point)) if point.suite == "concurrency" else _DASH
        cells = [
            (point.suite, ""),
            (point.name, ""),
            (point.metric, "muted"),
            (str(summary.n if summary else 0), "num"),
            (_shown(_median_cell(point)), "num"),
            (spread, "num"),
            (range_, "num"),
            (ttft, "num"),
            (stream, "num"),
        ]
        row_class = ' class="invalid"' if point.invalid else ""
        tds = "".join(f'<td class="{cls}">{escape(text)}</td>' for text, cls in cells)
        rows.append(f"<tr{row_class}>{tds}<td>{_flags(point)}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _spec_table(receipt: BenchReceipt) -> str:
    points = [point for point in receipt.points if point.spec is not None]
    if not points:
        return ""
    heads = ("point", "accept", "per position", "k", "tok/step", "steps/s", "ceiling tok/s")
    rows = ["<h3>speculative decoding (from /metrics deltas)</h3>", "<table><tr>"]
    rows[-1] += "".join(f"<th>{h}</th>" for h in heads) + "</tr>"
    for point in points:
        spec = point.spec
        assert spec is not None
        cells = [f"{point.suite}/{point.name}"] + [INVALID] * (len(heads) - 1)
        if not point.invalid:
            cells[1:] = [
                f"{spec.acceptance_rate:.0%}",
                " ".join(f"{rate:.2f}" for rate in spec.per_position_rate),
                f"{spec.mean_draft_length:.1f}",
                f"{spec.tokens_per_step:.2f}",
                _DASH if spec.steps_per_s is None else f"{spec.steps_per_s:.1f}",
                _DASH if spec.ceiling_tps is None else f"{spec.ceiling_tps:.1f}",
            ]
        row_class = ' class="invalid"' if point.invalid else ""
        rows.append(f"<tr{row_class}>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    rows.append("</table>")
    rows.append(
        '<p class="muted">tokens/step = 1 + accepted per step; steps/s = decode tok/s ÷ '
        "tokens/step; ceiling = steps/s × (k + 1), every draft accepted</p>"
    )
    return "\n".join(rows)


def _bar(point: PointResult) -> Bar:
    summary = point.summary
    if point.invalid or summary is None:
        return Bar(point.name, _median_cell(point))
    return Bar(point.name, summary.median, summary.ci95_low, summary.ci95_high)


def _acceptance(point: PointResult) -> Sequence[float] | str:
    if point.invalid:
        return INVALID
    return NO_DATA if point.spec is None else point.spec.per_position_rate


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def _charts(receipt: BenchReceipt) -> str:
    by_suite: dict[str, list[PointResult]] = {}
    for point in receipt.points:
        by_suite.setdefault(point.suite, []).append(point)
    figures = []
    if decode := by_suite.get("decode"):
        svg = bar_chart(
            "decode tok/s by content type",
            "content type",
            "decode tok/s, one stream",
            [_bar(point) for point in decode],
        )
        figures.append(_figure(svg, _INTERVAL_NOTE))
    if concurrency := by_suite.get("concurrency"):
        series = [
            Series("aggregate (median)", [_median_cell(point) for point in concurrency]),
            Series("per stream (mean)", [_stream_cell(point) for point in concurrency]),
        ]
        svg = grouped_bar_chart(
            "concurrency: aggregate vs per-stream decode",
            "concurrent streams",
            "decode tok/s",
            [p.name for p in concurrency],
            series,
        )
        figures.append(
            _figure(
                svg,
                "aggregate: all streams' tokens over their union window; "
                "per stream: mean decode rate of the requests",
            )
        )
    spec = by_suite.get("spec", [])
    if any(point.spec is not None for point in spec):
        rates = {point.name: _acceptance(point) for point in spec}
        svg = position_chart("speculative acceptance per draft position", rates)
        figures.append(_figure(svg, "accepted drafts at each position ÷ drafts, per content type"))
    if prefill := by_suite.get("prefill"):
        bars = [_bar(point) for point in prefill]
        svg = bar_chart("prefill tok/s by prompt depth", "point", "prefill tok/s", bars)
        metrics = "; ".join(dict.fromkeys(point.metric for point in prefill))
        figures.append(_figure(svg, f"{metrics}. {_INTERVAL_NOTE}"))
    return "\n".join(figures) or '<p class="muted">no points to chart</p>'
