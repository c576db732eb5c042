"""Compare two bench receipts point by point with a Welch interval and a verdict."""

from __future__ import annotations

from pydantic import BaseModel, Field

from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.statistics import Verdict, WelchComparison, verdict, welch_change
from sparkrig.errors import UsageError


class PointComparison(BaseModel):
    suite: str
    name: str
    metric: str
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
        row = PointComparison(
            suite=point.suite, name=point.name, metric=point.metric, change=None, verdict=None
        )
        if other is None or not point.samples or not other.samples:
            row.note = "missing in one receipt"
        elif point.invalid or other.invalid:
            row.note = "degenerate output in one run: not compared"
        else:
            row.change = welch_change(
                [sample.value for sample in point.samples],
                [sample.value for sample in other.samples],
            )
            row.verdict = verdict(row.change, tolerance_pct, higher_is_better=True)
        rows.append(row)
    return rows
