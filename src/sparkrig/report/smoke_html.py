"""A smoke receipt (the demo's first requests) as a section of the HTML report: identity, then
one row per request with its tokens, TTFT, decode rate and how it finished."""

from __future__ import annotations

from html import escape

from sparkrig.bench.smoke import SmokeReceipt
from sparkrig.report.html_identity import identity_block
from sparkrig.report.receipt_kinds import section_for

_DASH = "—"


def _num(value: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return _DASH if value is None else f"{value * scale:.{digits}f}"


@section_for(SmokeReceipt)
def smoke_section(receipt: SmokeReceipt, label: str) -> str:
    identity = identity_block(
        receipt,
        extra={"engine binary": receipt.engine_binary or _DASH},
    )
    head = "".join(
        f"<th>{name}</th>"
        for name in ("request", "n", "tokens", "TTFT ms", "tok/s", "e2e s", "finish")
    )
    rows = []
    for result in receipt.results:
        record = result.record
        finish = record.finish_reason or (record.error.kind if record.error else _DASH)
        tokens = _DASH if record.completion_tokens is None else str(record.completion_tokens)
        cells = [
            str(result.concurrent_with),
            tokens,
            _num(record.ttft_s, 1000),
            _num(record.decode_tps),
            _num(record.e2e_s, digits=2),
        ]
        rows.append(
            f"<tr><td>{escape(result.name)}</td>"
            + "".join(f'<td class="num">{cell}</td>' for cell in cells)
            + f"<td>{escape(finish)}</td></tr>"
        )
    warnings = "".join(f"<li>{escape(w)}</li>" for w in receipt.warnings)
    return "\n".join(
        [
            f"<section>\n<h2>{escape(label)} · smoke</h2>",
            identity,
            f'<ul class="warnings">{warnings}</ul>' if warnings else "",
            f"<table><tr>{head}</tr>{''.join(rows)}</table>",
            "</section>",
        ]
    )
