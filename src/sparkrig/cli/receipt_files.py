"""Receipt files: open one by the kind it names; write its HTML report page beside it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.soak_receipt import SoakReceipt, load_soak_receipt
from sparkrig.doctor.telemetry_record import telemetry_beside
from sparkrig.fabric.collectives.results import FabricTestReceipt
from sparkrig.fabric.collectives.results import load_receipt as load_fabric_test_receipt
from sparkrig.guards.receipt import CheckReceipt, load_check_receipt
from sparkrig.json_files import read_json_file
from sparkrig.report.html_report import Receipt, render_report


def load_any_receipt(path: Path) -> BenchReceipt | CheckReceipt | FabricTestReceipt | SoakReceipt:
    """A check, fabric-test or soak receipt when the file's `kind` says so; otherwise it is read
    as a bench receipt, whose loader names what is wrong with anything else."""
    raw = read_json_file(
        path, what="receipt", fix="pass a receipt written by `sparkrig bench` or `sparkrig check`"
    )
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if kind == "sparkrig-fabric-test":
        return load_fabric_test_receipt(path)
    if kind == "sparkrig-soak":
        return load_soak_receipt(path)
    return load_check_receipt(path) if kind == "sparkrig-check" else load_receipt(path)


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
