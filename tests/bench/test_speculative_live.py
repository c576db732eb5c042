"""Speculative-decoding accounting is exact: a known synthetic acceptance is reported back."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.bench.point import BenchSettings
from sparkrig.bench.run import run_bench
from sparkrig.bench.speculative import spec_accounting
from sparkrig.launch.local import LocalInstance
from tests.conftest import SYNTH_RATES

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

# 4 points × 2 samples × 128 tokens pool ~350 drafts: a binomial share near 0.5 has sd ~0.027,
# so 0.1 is over 3.5 sd
RATE_TOLERANCE = 0.1


async def test_spec_suite_reports_the_synthetic_acceptance(
    spec_server: LocalInstance, tmp_path: Path
) -> None:
    settings = BenchSettings(
        max_samples=2,
        min_samples=2,
        warmup_requests=0,
        decode_tokens=128,
        precision=0.5,
        rounds=1,
    )
    receipt = await run_bench(
        spec_server.base_url, suites=["spec"], settings=settings, out_path=tmp_path / "s.json"
    )
    assert all(point.spec is not None for point in receipt.points)
    # llama.cpp gives no logprobs to the tokens its speculation accepts: the witness abstains,
    # says why, and the point stands on max_tokens and /metrics
    for spec_point in receipt.points:
        assert not spec_point.invalid, spec_point.invalid_reasons
        assert spec_point.witness is not None
        assert spec_point.witness.uncounted is not None
        assert "speculative decoding" in spec_point.witness.uncounted
        assert any(w.startswith("counts not witnessed by logprobs") for w in spec_point.warnings)
    point = receipt.points[0]
    assert point.summary is not None
    # every point runs at the same synthetic rates: pool their drafts for a tighter estimate
    pooled = spec_accounting(
        [sample.metrics for p in receipt.points for sample in p.samples], point.summary.median
    )
    spec = pooled
    assert spec is not None
    assert len(spec.per_position_rate) == len(SYNTH_RATES)
    for measured, known in zip(spec.per_position_rate, SYNTH_RATES, strict=True):
        assert abs(measured - known) < RATE_TOLERANCE, (spec.per_position_rate, SYNTH_RATES)
    assert spec.accepted_per_draft is not None
    assert abs(spec.accepted_per_draft - sum(SYNTH_RATES)) < 2 * RATE_TOLERANCE
    assert spec.mean_draft_length == pytest.approx(4, abs=0.2)
    assert spec.steps_per_s is not None
    assert spec.steps_per_s * spec.tokens_per_step == pytest.approx(point.summary.median)
    assert spec.ceiling_tps is not None
    assert spec.ceiling_tps > point.summary.median


async def test_spec_suite_is_skipped_with_a_reason_without_speculation(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    receipt = await run_bench(
        llama_server.base_url,
        suites=["spec"],
        settings=BenchSettings(max_samples=2, rounds=1),
        out_path=tmp_path / "s.json",
    )
    assert len(receipt.points) <= 1  # one point shows no drafts, then the suite stops
    assert all(point.spec is None for point in receipt.points)
    assert any("spec suite s" in warning for warning in receipt.warnings)
