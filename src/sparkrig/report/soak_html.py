"""A soak receipt as an HTML section (per-window table and charts, every problem with its request
id) and as a page of its own. Presentation only: it reads a receipt and writes nothing."""

from __future__ import annotations

from html import escape

from sparkrig.bench.soak_receipt import SoakReceipt, SoakWindow
from sparkrig.report.receipt_kinds import section_for
from sparkrig.report.svg_charts import Cell, Series, grouped_bar_chart

_NO_DATA = "no data"
_COLUMNS = (
    "window",
    "minutes",
    "requests",
    "lost",
    "bad",
    "tokens",
    "aggregate tok/s",
    "per-stream tok/s (median)",
    "TTFT p50 ms",
    "p95 ms",
    "p99 ms",
    "first TTFT ms",
    "restarts",
    "findings",
)


def _label(window: SoakWindow) -> str:
    idle = f" after {window.idle_before_s:g} s idle" if window.idle_before_s else ""
    return f"{window.start_s / 60:.1f}–{window.end_s / 60:.1f} min{idle}" + (
        " (partial)" if window.partial else ""
    )


def _num(value: float | None, spec: str = ".1f", scale: float = 1.0) -> str:
    return "—" if value is None else format(value * scale, spec)


def _cell(value: float | None, scale: float = 1.0) -> Cell:
    return _NO_DATA if value is None else value * scale


def _row(window: SoakWindow) -> str:
    findings = ", ".join(f"{name} {count}" for name, count in sorted(window.findings.items()))
    cells = [
        str(window.index),
        _label(window),
        str(window.requests),
        str(window.errors),
        str(window.bad_outputs),
        str(window.output_tokens),
        _num(window.aggregate_tps),
        _num(window.per_stream_tps_median),
        _num(window.ttft_p50_s, ".0f", 1000),
        _num(window.ttft_p95_s, ".0f", 1000),
        _num(window.ttft_p99_s, ".0f", 1000),
        _num(window.first_ttft_s, ".0f", 1000),
        "—" if window.restarts is None else str(window.restarts),
        findings or "none",
    ]
    bad = ' class="invalid"' if window.errors or window.bad_outputs else ""
    return f"<tr{bad}>" + "".join(f'<td class="num">{escape(c)}</td>' for c in cells) + "</tr>"


def _charts(receipt: SoakReceipt) -> str:
    if not receipt.windows:
        return '<p class="muted">no window finished</p>'
    labels = [_label(window) for window in receipt.windows]
    speed = grouped_bar_chart(
        "tok/s per window",
        "window",
        "tok/s",
        labels,
        [
            Series("aggregate", [_cell(w.aggregate_tps) for w in receipt.windows]),
            Series(
                "per stream (median)", [_cell(w.per_stream_tps_median) for w in receipt.windows]
            ),
        ],
    )
    ttft = grouped_bar_chart(
        "TTFT per window",
        "window",
        "ms",
        labels,
        [
            Series("p50", [_cell(w.ttft_p50_s, 1000) for w in receipt.windows]),
            Series("p95", [_cell(w.ttft_p95_s, 1000) for w in receipt.windows]),
        ],
        label_format=".0f",
    )
    caption = (
        "aggregate: output tokens the server counted ÷ window length; per stream: median of "
        "each reply's decode rate. TTFT from send to the first token of any kind."
    )
    return (
        f'<div class="charts"><figure>{speed}<figcaption>{escape(caption)}</figcaption></figure>'
        f"<figure>{ttft}</figure></div>"
    )


@section_for(SoakReceipt)
def soak_section(receipt: SoakReceipt, label: str) -> str:
    lost_note = ""
    if receipt.upstream_lost_at_s is not None:
        lost_note = (
            f'<p class="bad">the upstream went away {receipt.upstream_lost_at_s:.0f} s into the '
            f"soak: {escape(receipt.upstream_lost_message or '')}</p>"
        )
    problems = "".join(
        f"<li><code>{escape(p.request_id)}</code> ({p.kind}, window {p.window}, "
        f"{p.at_s:.0f} s): {escape(p.message)}</li>"
        for p in receipt.problems
    )
    meta = {
        "url": receipt.base_url,
        "model": receipt.model,
        "traffic": receipt.traffic,
        "started": receipt.created_at.isoformat(timespec="seconds"),
        "status": receipt.status,
        "concurrency": _streams(receipt),
        "duration": f"{receipt.duration_s:g} s asked, windows of {receipt.window_s:g} s",
        "requests": f"{receipt.requests}: {receipt.lost} lost, {receipt.bad_outputs} bad outputs",
    }
    if receipt.pacing is not None:
        meta["pacing"] = receipt.pacing.describe()
    if receipt.kinds is not None:
        meta["kinds sent"] = ", ".join(receipt.kinds)
    if receipt.left_out:
        meta["left out"] = "; ".join(left.describe() for left in receipt.left_out)
    rows = "".join(_row(window) for window in receipt.windows)
    return "\n".join(
        [
            f"<section>\n<h2>{escape(label)} · soak</h2>",
            '<dl class="meta">'
            + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in meta.items())
            + "</dl>",
            lost_note,
            "<h3>per window</h3>",
            "<table><tr>"
            + "".join(f"<th>{escape(c)}</th>" for c in _COLUMNS)
            + f"</tr>{rows}</table>",
            _charts(receipt),
            "<h3>problems</h3>",
            f"<ul>{problems}</ul>"
            if problems
            else '<p class="muted">none: no request lost, no bad output</p>',
            "</section>",
        ]
    )


def _streams(receipt: SoakReceipt) -> str:
    if receipt.pacing is not None:
        return "open loop (paced: each request at its trace offset)"
    if receipt.stagger_s:
        return f"{receipt.concurrency}, staggered: stream k joined k × {receipt.stagger_s:g} s in"
    return str(receipt.concurrency)
