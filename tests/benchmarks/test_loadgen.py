"""benchmarks/loadgen.py end to end at a tiny size: the sharded column runs, and a rival that is
not installed is a skipped column that says why (as on a machine without guidellm or aiperf)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LOADGEN = Path(__file__).parents[2] / "benchmarks" / "loadgen.py"


def test_a_tiny_run_prints_the_sharded_column_and_names_the_skipped_ones(tmp_path: Path) -> None:
    missing = tmp_path / "not-installed"
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPARKRIG_")}
    result = subprocess.run(
        [
            sys.executable,
            str(LOADGEN),
            *("--levels", "2", "--seconds", "0.5", "--client-processes", "2"),
            *("--tokens", "16", "--paced-tokens", "4"),
            *("--guidellm", str(missing), "--aiperf", str(missing)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "guidellm column skipped: not found" in out
    assert "aiperf column skipped: not found" in out
    table = out.split("\n\n")[-1]
    rows = {tuple(line.split()[:3]): line.split() for line in table.splitlines() if line}
    for tool in ("sparkrig", "sparkrig×2"):
        for phase in ("instant", "paced"):
            row = rows[(tool, phase, "2")]
            requests, errors, tokens_per_s = int(row[3]), int(row[4]), float(row[5])
            assert requests > 0
            assert errors == 0
            assert tokens_per_s > 0
    for phase in ("poisson", "staggered", "replay"):  # every open-loop arrival mode measured
        row = rows[("sparkrig", phase, "2")]
        assert int(row[3]) > 0, row
        assert int(row[4]) == 0, row
        assert float(row[5]) > 0, row
