"""The demo's smoke table: one row per request, from server token counts."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from sparkrig.bench.smoke import SmokeReceipt
from sparkrig.client.metrics import MetricsDelta
from sparkrig.engines.metric_map import Quantity

_COUNT_SOURCE_SHORT = {
    "per_event_usage": "per-event",
    "per_event_timings": "per-event",
    "final_usage": "final only",
    "events_only": "events only!",
}


def _fmt(value: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "—" if value is None else f"{value * scale:.{digits}f}"


def smoke_table(receipt: SmokeReceipt) -> Group:
    """The table, then one line per failed request with its error."""
    table = Table(
        title=f"smoke · {receipt.model} · {receipt.base_url}",
        title_justify="left",
        caption="tok/s = decode tok/s from server token counts; n = requests in flight together",
        caption_justify="left",
    )
    table.add_column("request", no_wrap=True)
    for header in ("n", "tokens", "TTFT ms", "tok/s", "e2e s"):
        table.add_column(header, justify="right")
    table.add_column("finish")
    table.add_column("counts", no_wrap=True)
    failures: list[Text] = []
    for result in receipt.results:
        record = result.record
        if record.error is not None:
            failures.append(Text(f"{result.name}: {record.error.message}", style="red"))
        table.add_row(
            result.name,
            str(result.concurrent_with),
            "—" if record.completion_tokens is None else str(record.completion_tokens),
            _fmt(record.ttft_s, 1000),
            _fmt(record.decode_tps),
            _fmt(record.e2e_s, digits=2),
            record.finish_reason or (record.error.kind if record.error else "—"),
            _COUNT_SOURCE_SHORT.get(record.token_source or "", "—"),
        )
    return Group(table, *failures)


def metrics_line(delta: MetricsDelta | None) -> str:
    """One line of server-side counters over the smoke run, from /metrics deltas."""
    if delta is None:
        return "server metrics: not available"
    if delta.server_restarted:
        return "server metrics: a counter went backwards — the server restarted during the run"
    values = delta.values
    parts = [
        f"prompt tokens {_fmt(_scalar(values.get(Quantity.PROMPT_TOKENS)), digits=0)}",
        f"generated tokens {_fmt(_scalar(values.get(Quantity.GENERATED_TOKENS)), digits=0)}",
        f"decode steps {_fmt(_scalar(values.get(Quantity.DECODE_STEPS)), digits=0)}",
    ]
    drafts = _scalar(values.get(Quantity.SPEC_DRAFT_TOKENS))
    accepted = _scalar(values.get(Quantity.SPEC_ACCEPTED_TOKENS))
    if drafts:
        parts.append(f"draft acceptance {_fmt((accepted or 0) / drafts, 100)}%")
    return f"server metrics ({delta.engine}, over {delta.elapsed_s:.1f}s): " + ", ".join(parts)


def _scalar(value: float | dict[str, float] | None) -> float | None:
    return value if isinstance(value, float | int) or value is None else sum(value.values())
