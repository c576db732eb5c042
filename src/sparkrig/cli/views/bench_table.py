"""Terminal tables for bench receipts and comparisons."""

from __future__ import annotations

import statistics

from rich.table import Table

from sparkrig.bench.compare import SAMPLES_ONLY, PointComparison
from sparkrig.bench.point_result import PointResult, count_notes, invalid_reasons
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.suites import per_stream_mean


def _flags(point: PointResult) -> str:
    flags = []
    if point.invalid:
        flags.append(f"[red]INVALID: {', '.join(invalid_reasons(point))}[/]")
    if point.imprecise:
        flags.append("[yellow]imprecise[/]")
    if point.two_speeds is not None:
        flags.append(f"[yellow]two speeds {point.two_speeds.ratio:.1f}×[/]")
    if point.cold_start:
        flags.append("[yellow]cold start[/]")
    if point.client_limited:
        flags.append("[yellow]client-limited[/]")
    if point.discarded:
        flags.append(f"{len(point.discarded)} discarded")
    if notes := count_notes(point):
        flags.append(f"{notes} re-tokenized count notes")
    text = point.prompt_text  # a prefill point's text: said when not the corpus cut exactly
    if text is not None and (text.text != "corpus" or not text.exact):
        flags.append(f"{text.text} text" + ("" if text.exact else f", {text.method} depth"))
    return ", ".join(flags)


def _median_ttft_ms(point: PointResult) -> str:
    ttfts = [r.ttft_s for s in point.samples for r in s.requests if r.ttft_s is not None]
    return f"{statistics.median(ttfts) * 1000:.0f}" if ttfts else "—"


def goodput_cells(point: PointResult) -> tuple[str, str]:
    """(goodput, share met) of a point under the run's SLO: requests/s meeting it (median over
    samples, ± its 95% half-width) and the share of requests meeting it with its interval."""
    goodput = point.goodput
    if goodput is None:
        return "—", "—"
    rate = goodput.requests_per_s
    if rate is None or point.invalid:
        cell = "—"
    else:
        spread = "" if rate.ci95_half_width is None else f" ±{rate.ci95_half_width:.2f}"
        cell = f"{rate.median:.2f}{spread}"
    if goodput.share is None or goodput.share_ci95 is None:
        return cell, "—"
    low, high = goodput.share_ci95
    verdict = {True: "holds", False: "[red]fails[/]", None: "unjudged"}[goodput.holds]
    share = f"{goodput.met}/{goodput.requests} ({low:.0%}–{high:.0%}) {verdict}"
    return cell, share


def bench_table(receipt: BenchReceipt) -> Table:
    table = Table(
        title=f"bench · {receipt.model} · {receipt.base_url}"
        + (f" · {receipt.engine_build}" if receipt.engine_build else "")
        + (f" · paired run {receipt.pairing}" if receipt.pairing else ""),
        title_justify="left",
        caption="tok/s: median, from server token counts (prefill: prompt tokens ÷ TTFT; "
        "concurrency: all streams over their union window); ±: 95% Student-t half-width; "
        "n: kept samples (the requests they hold)",
        caption_justify="left",
    )
    slo = receipt.settings.slo
    headers = ["suite", "point", "n", "tok/s", "±", "TTFT ms", "per stream"]
    if slo is not None:
        headers += ["good req/s", "met SLO"]
        table.caption = (
            f"{table.caption}\ngood req/s: requests meeting {slo.label} per second of a "
            "sample's window (median ± 95% half-width); met SLO: requests meeting it, 95% "
            "Wilson interval, and whether every term's percentile holds"
        )
    for header in (*headers, "flags"):
        table.add_column(
            header, justify="left" if header in ("suite", "point", "flags", "met SLO") else "right"
        )
    for point in receipt.points:
        summary = point.summary
        extra = list(goodput_cells(point)) if slo is not None else []
        if summary is None:
            cells = ["0", "—", "—", "—", "—"]
            table.add_row(point.suite, point.name, *cells, *extra, _flags(point))
            continue
        value = "—" if point.invalid else f"{summary.median:.1f}"
        spread = (
            "—" if summary.relative_half_width is None else f"{summary.relative_half_width:.1%}"
        )
        stream = per_stream_mean(point) if point.suite in ("concurrency", "max-load") else None
        held = f" ({point.coverage.value_requests})" if point.coverage else ""
        table.add_row(
            point.suite,
            point.name,
            f"{summary.n}{held}",
            value,
            spread,
            _median_ttft_ms(point),
            "—" if stream is None else f"{stream:.1f}",
            *extra,
            _flags(point),
        )
    return table


def compare_table(rows: list[PointComparison], tolerance_pct: float) -> Table:
    paired = sorted({row.paired_rounds for row in rows if row.paired_rounds is not None})
    if paired:
        over = f"{paired[0]}" if len(paired) == 1 else f"{paired[0]}-{paired[-1]}"
        judged = (
            f"paired over {over} rounds: change of the geometric mean ratio of round means "
            "with its 95% t interval over the rounds' log ratios"
        )
    else:
        judged = "change of the mean with its Welch 95% interval over round means"
    caption = (
        f"{judged}; slower/faster only when the interval excludes 0 and the change exceeds "
        f"{tolerance_pct:g}%\nbefore, after: the mean over the rounds' means (`bench` and "
        "`report` show each point's median sample, which may differ)"
    )
    if any(row.note == SAMPLES_ONLY for row in rows):
        caption += (
            "\none round on a side: the interval covers back-to-back samples, not the drift "
            "between runs — bench both with --rounds 3 for verdicts that hold across runs"
        )
    table = Table(caption=caption, caption_justify="left")
    headers = ("suite", "point", "of", "before (mean)", "after (mean)", "change", "95% interval")
    for header in (*headers, "verdict"):
        table.add_column(header)
    colour = {"same": "green", "faster": "cyan", "slower": "red"}
    for row in rows:
        change = row.change
        if change is None:
            table.add_row(row.suite, row.name, row.quantity, "—", "—", "—", "—", row.note or "—")
            continue
        interval = (
            "—"
            if change.ci95_low_pct is None or change.ci95_high_pct is None
            else f"{change.ci95_low_pct:+.1f}% … {change.ci95_high_pct:+.1f}%"
        )
        digits = 1 if row.quantity == "tok/s" else 3
        table.add_row(
            row.suite,
            row.name,
            row.quantity,
            f"{change.before_mean:.{digits}f}",
            f"{change.after_mean:.{digits}f}",
            f"{change.change_pct:+.1f}%",
            interval,
            f"[{colour[row.verdict or 'same']}]{row.verdict}[/]",
        )
    return table


def spec_table(receipt: BenchReceipt) -> Table | None:
    """Acceptance per content type; None when no point has speculative-decoding counters."""
    points = [point for point in receipt.points if point.spec is not None]
    if not points:
        return None
    table = Table(
        title="speculative decoding (from /metrics deltas)",
        title_justify="left",
        caption="tokens/step = 1 + accepted per step; steps/s = decode tok/s ÷ tokens/step; "
        "ceiling = steps/s × (k + 1), every draft accepted",
        caption_justify="left",
    )
    for header in ("point", "accept", "per position", "k", "tok/step", "steps/s", "ceiling"):
        table.add_column(header)
    for point in points:
        spec = point.spec
        assert spec is not None
        table.add_row(
            f"{point.suite}/{point.name}",
            f"{spec.acceptance_rate:.0%}",
            " ".join(f"{rate:.2f}" for rate in spec.per_position_rate),
            f"{spec.mean_draft_length:.1f}",
            f"{spec.tokens_per_step:.2f}",
            "—" if spec.steps_per_s is None else f"{spec.steps_per_s:.1f}",
            "—" if spec.ceiling_tps is None else f"{spec.ceiling_tps:.1f}",
        )
    return table
