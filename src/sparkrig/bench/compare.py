"""Compare two bench receipts point by point with a Welch interval and a verdict."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from sparkrig.bench.point import PointResult
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.statistics import Verdict, WelchComparison, verdict, welch_change
from sparkrig.errors import UsageError

Quantity = Literal["tok/s", "TTFT s"]
QUANTITIES: tuple[Quantity, ...] = ("tok/s", "TTFT s")


class PointComparison(BaseModel):
    suite: str
    name: str
    metric: str
    quantity: Quantity = Field(
        description="the point's value (higher is better), or the worst TTFT of each sample "
        "(lower is better: queueing shows here when throughput does not move)"
    )
    change: WelchComparison | None = Field(description="None when a side has no samples")
    verdict: Verdict | None
    note: str | None = None


def settings_difference(before: BenchReceipt, after: BenchReceipt) -> list[str]:
    """Names of the settings that differ; receipts are only comparable when there are none."""
    differing = [
        f"settings.{key}"
        for key, value in before.settings.model_dump().items()
        if after.settings.model_dump().get(key) != value
    ]
    if before.model != after.model:
        differing.append("model")
    if before.suites != after.suites:
        differing.append("suites")
    return differing


def compare_receipts(
    before: BenchReceipt, after: BenchReceipt, tolerance_pct: float
) -> list[PointComparison]:
    differing = settings_difference(before, after)
    if differing:
        raise UsageError(
            f"the receipts were measured with different {', '.join(differing)} — compare runs "
            "of the same bench settings (rerun one with the other's settings)"
        )
    after_points = {(point.suite, point.name): point for point in after.points}
    rows = []
    for point in before.points:
        other = after_points.get((point.suite, point.name))
        for quantity in QUANTITIES:
            rows.append(_compare_point(point, other, quantity, tolerance_pct))
    return rows


def _sample_values(point: PointResult, quantity: str) -> list[float]:
    if quantity == "tok/s":
        return [sample.value for sample in point.samples]
    return [
        max(request.ttft_s for request in sample.requests if request.ttft_s is not None)
        for sample in point.samples
        if any(request.ttft_s is not None for request in sample.requests)
    ]


def _compare_point(
    point: PointResult,
    other: PointResult | None,
    quantity: Quantity,
    tolerance_pct: float,
) -> PointComparison:
    row = PointComparison(
        suite=point.suite, name=point.name, metric=point.metric, quantity=quantity,
        change=None, verdict=None,
    )  # fmt: skip
    before_values = _sample_values(point, quantity)
    after_values = _sample_values(other, quantity) if other is not None else []
    if not before_values or not after_values:
        row.note = "missing in one receipt"
    elif point.invalid or (other is not None and other.invalid):
        row.note = "degenerate output in one run: not compared"
    else:
        row.change = welch_change(before_values, after_values)
        row.verdict = verdict(row.change, tolerance_pct, higher_is_better=quantity == "tok/s")
    return row
