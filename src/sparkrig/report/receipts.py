"""Open a receipt of either kind, bench or check, by the kind it names."""

from __future__ import annotations

from pathlib import Path

from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.guards.receipt import CheckReceipt, load_check_receipt
from sparkrig.json_files import read_json_file


def load_any_receipt(path: Path) -> BenchReceipt | CheckReceipt:
    """A check receipt when the file says `"kind": "sparkrig-check"`; otherwise it is read as a
    bench receipt, whose loader names what is wrong with anything else."""
    raw = read_json_file(
        path, what="receipt", fix="pass a receipt written by `sparkrig bench` or `sparkrig check`"
    )
    kind = raw.get("kind") if isinstance(raw, dict) else None
    return load_check_receipt(path) if kind == "sparkrig-check" else load_receipt(path)
