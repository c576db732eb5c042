"""benchmarks/client_ceiling.py's summary and table on made-up rows: per level each client's
median over the passes, and the median and range of the sparkrig / vLLM ratio."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
client_ceiling = importlib.import_module("client_ceiling")


def side(per_cpu: float, busy: float, rate: float) -> dict[str, float]:
    return {"tokens_per_cpu_s": per_cpu, "busy": busy, "output_throughput": rate}


def test_each_level_gets_medians_and_the_ratios_range() -> None:
    rows = [
        {"concurrency": 16, "sparkrig": side(50, 0.9, 45), "vllm": side(100, 1.0, 60)},
        {"concurrency": 16, "sparkrig": side(60, 0.8, 50), "vllm": side(60, 0.9, 55)},
        {"concurrency": 16, "sparkrig": side(40, 0.7, 40), "vllm": side(80, 1.0, 50)},
        {"concurrency": 64, "sparkrig": side(70, 1.0, 70), "vllm": {"error": "exited 1"}},
    ]
    by_level = {entry["concurrency"]: entry for entry in client_ceiling.summary(rows)}
    per_cpu = by_level[16]["tokens_per_cpu_s"]
    assert (per_cpu["sparkrig"], per_cpu["vllm"]) == (50, 80)
    assert per_cpu["ratio_median"] == 0.5
    assert per_cpu["ratio_range"] == [0.5, 1.0]
    failed = by_level[64]["tokens_per_cpu_s"]  # a level vLLM's client did not finish
    assert (failed["vllm"], failed["ratio_median"], failed["ratio_range"]) == (None, None, None)
    table = client_ceiling.table([by_level[16]])
    assert "| 16 | 50 / 80 | 0.50 (0.50–1.00) | 0.80 / 1.00 | 45 / 55 |" in table
    assert "| 64 | 70 / - | - | 1.00 / - | 70 / - |" in client_ceiling.table([by_level[64]])
