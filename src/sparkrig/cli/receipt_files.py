"""Receipt files: open one by the kind it names; write its HTML report page beside it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.soak_receipt import SoakReceipt
from sparkrig.doctor.telemetry_record import telemetry_beside
from sparkrig.json_files import read_json_file
from sparkrig.receipts import load_receipt_file
from sparkrig.report.html_report import Receipt, render_report
from sparkrig.report.receipt_kinds import RECEIPTS, model_for_kind


def load_any_receipt(path: Path) -> Receipt:
    """The receipt of whichever kind the file's `kind` names (or its fields show, for a kind
    written before it had one); anything else is read as a bench receipt, whose loader names
    what is wrong with it."""
    raw = read_json_file(
        path, what="receipt", fix="pass a receipt written by `sparkrig bench` or `sparkrig check`"
    )
    return RECEIPTS.validate_python(load_receipt_file(path, model_for_kind(raw) or BenchReceipt))


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
    page_path.write_text(page, encoding="utf-8")
    return page_path


def write_soak_report(receipt_path: Path, receipt: SoakReceipt) -> Path:
    """A soak receipt's own page beside it, same name with .html: the report page with its one
    soak section, rewritten after every window."""
    page_path = receipt_path.with_suffix(".html")
    page_path.write_text(render_report([receipt], names=[receipt_path.name]), encoding="utf-8")
    return page_path
