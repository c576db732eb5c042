"""A fabric-test receipt as a section of the HTML report: identity, checks per rank, the ladder
with built-in and sparkrig side by side, bytes per cable direction."""

from __future__ import annotations

from html import escape

from sparkrig.fabric.collectives.results import (
    REHEARSAL_NOTE,
    FabricTestReceipt,
    ladder_rows,
    size_label,
)
from sparkrig.report.receipt_kinds import section_for

_DASH = "—"


def _num(value: float | None, spec: str) -> str:
    return _DASH if value is None else format(value, spec)


def _table(columns: list[str], rows: list[list[str]], numeric_from: int) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{escape(cell)}</td>'
            if i >= numeric_from
            else f"<td>{escape(cell)}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _identity(receipt: FabricTestReceipt) -> str:
    status = (
        '<span class="status complete">complete</span>'
        if receipt.complete
        else '<span class="status interrupted">interrupted or failed: incomplete</span>'
    )
    rows = {
        "cluster": f"{receipt.cluster} ({receipt.topology})",
        "ranks": " → ".join(receipt.rank_order),
        "executor": f"{receipt.executor} ({REHEARSAL_NOTE})"
        if receipt.rehearsal
        else receipt.executor,
        "backend": f"{receipt.backend}, torch {receipt.torch_version or _DASH}",
        "iterations": str(receipt.iterations),
        "host": receipt.host or "not recorded",
        "sparkrig": receipt.sparkrig_version or "not recorded",
        "created": receipt.created_at.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows.items())
    return f'<dl class="meta">{items}<dt>status</dt><dd>{status}</dd></dl>'


@section_for(FabricTestReceipt)
def fabric_test_section(receipt: FabricTestReceipt, label: str) -> str:
    problems = "".join(f"<li>{escape(p)}</li>" for p in receipt.problems)
    checks = [
        [str(c.rank), c.node, str(c.passed), str(len(c.failed)), ", ".join(c.failed[:5])]
        for c in receipt.checks
    ]
    ladder = [
        [
            row.collective,
            size_label(row.size_bytes),
            _num(row.builtin.seconds * 1e6 if row.builtin and row.builtin.seconds else None, ".1f"),
            _num(row.ours.seconds * 1e6 if row.ours and row.ours.seconds else None, ".1f"),
            _num(row.builtin.busbw_gbps if row.builtin else None, ".4f"),
            _num(row.ours.busbw_gbps if row.ours else None, ".4f"),
            _num(row.ratio, ".2f"),
        ]
        for row in ladder_rows(receipt)
    ]
    cables = [
        [
            load.collective,
            load.implementation,
            f"{load.src} → {load.dst}",
            str(load.tx_bytes),
            _DASH if load.rx_bytes_at_dst is None else str(load.rx_bytes_at_dst),
        ]
        for load in receipt.cable_loads
    ]
    parts = [
        f"<section>\n<h2>{escape(label)} · fabric test</h2>",
        _identity(receipt),
        f'<ul class="warnings">{problems}</ul>' if problems else "",
        "<h3>correctness per rank</h3>",
        _table(["rank", "node", "passed", "failed", "first failures"], checks, 2),
        "<h3>latency and bandwidth (nccl-tests' algbw / busbw, GB/s)</h3>",
        _table(
            [
                "collective",
                "size",
                "built-in µs",
                "sparkrig µs",
                "built-in busbw",
                "sparkrig busbw",
                "sparkrig / built-in",
            ],
            ladder,
            2,
        ),
    ]
    if cables:
        parts += [
            "<h3>bytes per cable direction (interface counters)</h3>",
            _table(["collective", "impl", "direction", "sent", "received"], cables, 3),
        ]
    parts.append("</section>")
    return "\n".join(part for part in parts if part)
