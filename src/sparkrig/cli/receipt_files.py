"""Open a receipt of either kind, bench or check, by the kind it names."""

from __future__ import annotations

from pathlib import Path

from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.soak_receipt import SoakReceipt, load_soak_receipt
from sparkrig.fabric.collectives.results import FabricTestReceipt
from sparkrig.fabric.collectives.results import load_receipt as load_fabric_test_receipt
from sparkrig.guards.receipt import CheckReceipt, load_check_receipt
from sparkrig.json_files import read_json_file


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
