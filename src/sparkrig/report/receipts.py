"""Open a receipt of either kind, bench or check, by the kind it names."""

from __future__ import annotations

import json
from pathlib import Path

from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.soak_receipt import SoakReceipt, load_soak_receipt
from sparkrig.guards.receipt import CheckReceipt, load_check_receipt


def load_any_receipt(path: Path) -> BenchReceipt | CheckReceipt | SoakReceipt:
    """A check or soak receipt when the file names that kind; otherwise it is read as a bench
    receipt, whose loader names what is wrong with anything else."""
    try:
        kind = json.loads(path.read_text()).get("kind")
    except (OSError, ValueError, AttributeError):
        kind = None
    if kind == "sparkrig-soak":
        return load_soak_receipt(path)
    return load_check_receipt(path) if kind == "sparkrig-check" else load_receipt(path)
