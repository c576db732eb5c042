"""The guard battery as a terminal table: number, guard, verdict, evidence, time."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from sparkrig.guards.battery import GUARDS
from sparkrig.guards.receipt import CheckReceipt
from sparkrig.guards.verdict import GuardResult

_COLOUR = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "SKIP": "yellow"}
_NUMBER = {entry.name: entry.number for entry in GUARDS.entries()}


def result_line(result: GuardResult) -> str:
    """One progress line as a guard finishes."""
    seconds = f"{result.seconds:.1f}s" if result.seconds is not None else ""
    return (
        f"  [{_COLOUR[result.verdict]}]{result.verdict}[/] {result.guard} {seconds} — "
        f"{escape(result.evidence)}"
    )


def check_table(receipt: CheckReceipt) -> Table:
    passed = sum(r.verdict == "PASS" for r in receipt.results)
    failed = len(receipt.failed)
    skipped = sum(r.verdict == "SKIP" for r in receipt.results)
    warned = sum(r.verdict == "WARN" for r in receipt.results)
    table = Table(
        title=f"check {receipt.base_url} ({receipt.model}): {passed} pass, {failed} fail, "
        f"{skipped} skip" + (f", {warned} warn" if warned else ""),
        title_justify="left",
        caption=f"baseline: {receipt.baseline_path}"
        + (" (recorded by this run)" if receipt.recorded_baseline else ""),
        caption_justify="left",
    )
    for header in ("#", "guard", "verdict", "evidence", "s"):
        table.add_column(header, overflow="fold")
    for result in receipt.results:
        table.add_row(
            str(_NUMBER.get(result.guard, "")),
            result.guard,
            f"[{_COLOUR[result.verdict]}]{result.verdict}[/]",
            escape(result.evidence),
            f"{result.seconds:.1f}" if result.seconds is not None else "",
        )
    return table
