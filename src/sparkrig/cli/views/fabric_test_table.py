"""Terminal tables of a fabric test: correctness per rank, the ladder with built-in and
sparkrig side by side, and bytes per cable direction; a rehearsal on loopback says so last."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparkrig.fabric.collectives.results import (
    REHEARSAL_NOTE,
    FabricTestReceipt,
    ladder_rows,
    size_label,
)


def _number(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def checks_table(receipt: FabricTestReceipt) -> Table:
    table = Table(title="correctness (built-in and sparkrig, every collective, dtype and size)")
    for column in ("rank", "node", "passed", "failed"):
        table.add_column(column)
    for check in receipt.checks:
        table.add_row(
            str(check.rank),
            check.node,
            str(check.passed),
            f"{len(check.failed)} {', '.join(check.failed[:3])}".strip(),
        )
    return table


def ladder_table(receipt: FabricTestReceipt) -> Table:
    table = Table(title=f"{receipt.backend}: latency and bandwidth (nccl-tests' algbw / busbw)")
    for column in (
        "collective",
        "size",
        "built-in µs",
        "sparkrig µs",
        "built-in busbw GB/s",
        "sparkrig busbw GB/s",
        "ratio",
    ):
        table.add_column(column, justify="right" if column != "collective" else "left")
    for row in ladder_rows(receipt):
        builtin, ours = row.builtin, row.ours
        table.add_row(
            row.collective,
            size_label(row.size_bytes),
            _number(builtin.seconds * 1e6 if builtin and builtin.seconds else None, 1),
            _number(ours.seconds * 1e6 if ours and ours.seconds else None, 1),
            _number(builtin.busbw_gbps if builtin else None),
            _number(ours.busbw_gbps if ours else None),
            _number(row.ratio, 2),
        )
    return table


def cables_table(receipt: FabricTestReceipt) -> Table | None:
    if not receipt.cable_loads:
        return None
    table = Table(title="bytes per cable direction, from the interfaces' counters")
    for column in ("collective", "impl", "from", "to", "sent", "received"):
        table.add_column(column)
    for load in receipt.cable_loads:
        table.add_row(
            load.collective,
            load.implementation,
            load.src,
            load.dst,
            str(load.tx_bytes),
            "—" if load.rx_bytes_at_dst is None else str(load.rx_bytes_at_dst),
        )
    return table


def fabric_test_view(receipt: FabricTestReceipt) -> Group:
    parts: list[RenderableType] = [checks_table(receipt), ladder_table(receipt)]
    cables = cables_table(receipt)
    if cables is not None:
        parts.append(cables)
    if receipt.rehearsal:  # last, where a verdict is read
        parts.append(Text(REHEARSAL_NOTE, style="bold yellow"))
    return Group(*parts)
