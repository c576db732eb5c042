"""Two speeds in one point, on samples a real engine gave (tests/fixtures/README.md)."""

from __future__ import annotations

import json

import pytest

from sparkrig.bench.modes import two_speeds
from tests.conftest import FIXTURES

LADDER = json.loads((FIXTURES / "gpu_ladder_samples.json").read_text())


@pytest.mark.parametrize("point", ["c=2 cold", "c=4 cold", "c=8 cold", "c=8 cached"])
def test_slot_layout_on_a_per_slot_kv_cache_is_two_speeds(point: str) -> None:
    found = two_speeds(LADDER["per_slot_kv"][point])
    assert found is not None
    assert found.ratio > 2.5  # 3.2 vs 11.7 ms per step, give or take the prompt


def test_the_c8_split_matches_the_server_log() -> None:
    found = two_speeds(LADDER["per_slot_kv"]["c=8 cold"])
    assert found is not None
    assert (found.slow_samples, found.fast_samples) == (18, 18)  # alternating, 36 samples
    assert 600 < found.slow_median < 950 < 2100 < found.fast_median < 2800


@pytest.mark.parametrize("point", sorted(LADDER["unified_kv"]))
def test_one_unified_kv_cache_gives_one_speed(point: str) -> None:
    assert two_speeds(LADDER["unified_kv"][point]) is None


def test_a_slow_drift_is_one_speed() -> None:
    # c=16 on the per-slot cache fell from ~2,400 to ~1,600 tok/s over three rounds, sample by
    # sample: no empty gap, so no split
    assert two_speeds(LADDER["per_slot_kv"]["c=16 cold"]) is None
    assert two_speeds([100 - i for i in range(40)]) is None


def test_one_outlier_is_not_a_group() -> None:
    assert two_speeds([100.0] * 10 + [30.0]) is None
    assert two_speeds([100.0] * 10 + [30.0, 31.0]) is not None


@pytest.mark.parametrize("values", [[], [1.0], [0.0, 0.0, 5.0, 5.0], [-1.0, -1.0, 9.0, 9.0]])
def test_too_few_or_not_positive_values_give_none(values: list[float]) -> None:
    assert two_speeds(values) is None


def test_close_groups_are_one_speed() -> None:
    # a clean gap, but 1.2x apart: noise on a shared machine, not two speeds
    assert two_speeds([100.0, 101.0, 102.0, 120.0, 121.0, 122.0]) is None


def test_a_point_with_two_speeds_says_so_in_its_warnings_table_and_page() -> None:
    from sparkrig.bench.point_flags import flag_two_speeds
    from sparkrig.bench.point_result import PointResult, Sample
    from sparkrig.cli.views.bench_table import _flags as table_flags
    from sparkrig.report.html_report import _flags as page_flags

    point = PointResult(suite="concurrency", name="c=8 cold", metric="aggregate tok/s, 8 streams")
    point.samples = [Sample(value=v, requests=[]) for v in LADDER["per_slot_kv"]["c=8 cold"]]
    flag_two_speeds(point)
    flag_two_speeds(point)  # a later round looks again: still one warning
    assert point.two_speeds is not None
    warnings = [w for w in point.warnings if w.startswith("two speeds:")]
    assert len(warnings) == 1
    assert "tok/s" in warnings[0]
    assert "--kv-unified" in warnings[0]
    assert "two speeds" in table_flags(point)
    assert "two speeds" in page_flags(point)

    point.samples = [Sample(value=v, requests=[]) for v in LADDER["unified_kv"]["c=8 cold"]]
    flag_two_speeds(point)
    assert point.two_speeds is None
    assert not any(w.startswith("two speeds:") for w in point.warnings)
    assert "two speeds" not in table_flags(point) + page_flags(point)
