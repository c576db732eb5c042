"""`sparkrig bench --slo` against the real llama-server: a generous SLO gives goodput above 0,
an impossible one gives 0 and still exits 0, because it measured something."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sparkrig.bench.receipt import load_receipt
from sparkrig.launch.local import LocalInstance
from tests.conftest import SPARKRIG

pytestmark = pytest.mark.engine


def _bench_with(slo: str, server: LocalInstance, out: Path) -> subprocess.CompletedProcess[str]:
    quick = ["--suite", "concurrency", "--concurrency", "2", "--no-cached", "--rounds", "1"]
    quick += ["--max-samples", "2", "--tokens", "16", "--precision", "0.9"]
    return subprocess.run(
        [SPARKRIG, "bench", server.base_url, *quick, "--slo", slo, "--out", str(out)],
        env={**os.environ, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("slo", "meets"), [("ttft_p99=60s,tpot_p99=5s,e2e_p50=120s", True), ("ttft_p50=1ms", False)]
)
def test_goodput_under_a_generous_and_an_impossible_slo(
    llama_server: LocalInstance, tmp_path: Path, slo: str, meets: bool
) -> None:
    out = tmp_path / "bench.json"
    done = _bench_with(slo, llama_server, out)
    assert done.returncode == 0, done.stderr
    point = load_receipt(out).points[0]
    goodput = point.goodput
    assert goodput is not None
    assert goodput.requests == 2 * len(point.samples) >= 4
    assert goodput.requests_per_s is not None
    assert goodput.requests_per_s.n == len(point.samples)
    assert goodput.holds is meets
    if meets:
        assert goodput.met == goodput.requests
        assert goodput.requests_per_s.median > 0
        assert goodput.tokens_per_s is not None
        assert goodput.tokens_per_s.median == pytest.approx(16 * goodput.requests_per_s.median)
    else:
        assert goodput.met == 0
        assert goodput.requests_per_s.median == 0
        assert "fails" in done.stdout
    assert "good req/s" in done.stdout
