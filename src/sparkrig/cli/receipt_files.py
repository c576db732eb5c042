"""Receipt files: open one by the kind it names; write its HTML report page beside it (whole, or
not at all: a soak rewrites it every window while a browser may be reading it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.soak_receipt import SoakReceipt
from sparkrig.doctor.telemetry_record import telemetry_beside
from sparkrig.errors import SparkrigError
from sparkrig.json_files import read_bytes_file, read_json_file, write_text_atomically
from sparkrig.receipts import load_receipt_file
from sparkrig.report.html_report import PAGE_TITLE, Receipt, render_report
from sparkrig.report.receipt_kinds import RECEIPTS, model_for_kind


def load_any_receipt(path: Path) -> Receipt:
    """The receipt of whichever kind the file's `kind` names (or its fields show, for a kind
    written before it had one); anything else is read as a bench receipt, whose loader names
    what is wrong with it."""
    raw = read_json_file(
        path, what="receipt", fix="pass a receipt written by `sparkrig bench` or `sparkrig check`"
    )
    return RECEIPTS.validate_python(load_receipt_file(path, model_for_kind(raw) or BenchReceipt))


def is_report_page(path: Path) -> bool:
    """Whether `path` holds a page `render_report` wrote: its title, near the top."""
    try:
        head = read_bytes_file(path, what="page", fix="", limit=4096)
    except SparkrigError:
        return False
    return f"<title>{PAGE_TITLE} ".encode() in head


def write_report(
    receipt_path: Path, receipt: Receipt, also: Sequence[tuple[Path, Receipt]] = ()
) -> Path:
    """Write the report for a receipt (and `also` these, after it) beside it, same name with
    .html; return the page's path."""
    page_path = receipt_path.with_suffix(".html")
    pairs = [(receipt_path, receipt), *also]
    page = render_report(
        [r for _, r in pairs],
        names=[path.name for path, _ in pairs],
        telemetry=[telemetry_beside(path) for path, _ in pairs],
    )
    return write_text_atomically(page, page_path)


def write_soak_report(receipt_path: Path, receipt: SoakReceipt) -> Path:
    """A soak receipt's own page beside it, same name with .html: the report page with its one
    soak section, rewritten after every window."""
    page_path = receipt_path.with_suffix(".html")
    return write_text_atomically(render_report([receipt], names=[receipt_path.name]), page_path)
