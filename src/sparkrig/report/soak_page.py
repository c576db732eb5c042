"""A soak receipt's own HTML page, beside it: the report page with its one soak section."""

from __future__ import annotations

from pathlib import Path

from sparkrig.bench.soak_receipt import SoakReceipt
from sparkrig.report.html_report import render_report


def write_soak_report(receipt_path: Path, receipt: SoakReceipt) -> Path:
    """The page beside the receipt, same name with .html."""
    page_path = receipt_path.with_suffix(".html")
    page_path.write_text(render_report([receipt], names=[receipt_path.name]), encoding="utf-8")
    return page_path
