"""The terminal table of a multiturn point: one row per turn, then the conversations' hit rates
and the reuse verdict (the cells are the HTML report's, report/multiturn_html.py)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from sparkrig.bench.point_result import PointResult
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.report.multiturn_html import CAPTION, TURN_COLUMNS, sessions_line, turn_cells


def multiturn_table(point: PointResult) -> Table | None:
    """The point's turns; None for a point of another suite."""
    figures = point.multiturn
    if figures is None:
        return None
    colour = {"reused": "green", "missed": "red", "unverified": "yellow"}[figures.verdict]
    table = Table(
        title=f"multiturn · {point.name}",
        title_justify="left",
        caption=f"{CAPTION}\n{sessions_line(figures)}\n[{colour}]{escape(figures.note)}[/]",
        caption_justify="left",
    )
    for index, column in enumerate(TURN_COLUMNS):
        table.add_column(column, justify="left" if index < 2 else "right")
    for turn in figures.per_turn:
        table.add_row(*(escape(cell) for cell in turn_cells(turn)))
    return table


def multiturn_tables(receipt: BenchReceipt) -> list[Table]:
    return [table for point in receipt.points if (table := multiturn_table(point)) is not None]
