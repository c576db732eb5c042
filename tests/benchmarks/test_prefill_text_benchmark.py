"""benchmarks/prefill_text.py at a tiny size against the session's llama-server: both texts cut
at the depth, measured by turns, and the table prints the medians and both ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sparkrig.launch.local import LocalInstance

pytestmark = pytest.mark.engine
BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "prefill_text.py"


def test_a_tiny_run_prints_both_texts_and_their_ratios(llama_server: LocalInstance) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            *("--url", llama_server.base_url, "--depths", "48", "--repeats", "2"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.strip().splitlines()[-2:]
    assert header.split()[:3] == ["depth", "filler", "corpus"]
    assert row.split()[0] == "48"
    of_medians, paired, low, high = (float(x) for x in re.findall(r"\d+\.\d{3}", row))
    assert 0.2 < of_medians < 5  # corpus ÷ filler, the same text by turns
    assert low <= paired <= high
