"""Compare two bench receipts point by point with a Welch interval and a verdict.

Receipts of one `bench --paired-with` run (the same pairing id) are judged on paired round
differences instead: round r of each side was measured in the same minutes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from sparkrig.bench.point_result import PointResult
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.statistics import (
    ChangeVerdict,
    WelchComparison,
    paired_change,
    verdict,
    welch_change,
)
from sparkrig.errors import UsageError

Quantity = Literal["tok/s", "TTFT s"]
QUANTITIES: tuple[Quantity, ...] = ("tok/s", "TTFT s")
SAMPLES_ONLY = "1 round: samples only"


class PointComparison(BaseModel):
    suite: str
    name: str
    metric: str
    quantity: Quantity = Field(
        description="the point's value (higher is better), or the worst TTFT of each sample "
        "(lower is better: queueing shows here when throughput does not move)"
    )
    change: WelchComparison | None = Field(description="None when a side has no samples")
    verdict: ChangeVerdict | None
    note: str | None = None
    paired_rounds: int | None = Field(
        default=None,
        description="rounds judged in pairs (receipts of one --paired-with run); None: unpaired",
    )


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
    paired = before.pairing is not None and before.pairing == after.pairing
    after_points = {(point.suite, point.name): point for point in after.points}
    rows = []
    for point in before.points:
        other = after_points.get((point.suite, point.name))
        for quantity in QUANTITIES:
            rows.append(_compare_point(point, other, quantity, tolerance_pct, paired=paired))
    return rows


def _sample_values(point: PointResult, quantity: str) -> list[tuple[int, float]]:
    """(round, value) per sample: the point's value, or the sample's worst TTFT."""
    if quantity == "tok/s":
        return [(sample.round, sample.value) for sample in point.samples]
    return [
        (sample.round, max(r.ttft_s for r in sample.requests if r.ttft_s is not None))
        for sample in point.samples
        if any(request.ttft_s is not None for request in sample.requests)
    ]


def round_means(values: list[tuple[int, float]]) -> list[float]:
    """One mean per round: the unit that carries the machine's drift between passes."""
    return [mean for _, mean in sorted(_means_by_round(values).items())]


def paired_round_means(
    before: list[tuple[int, float]], after: list[tuple[int, float]]
) -> tuple[list[float], list[float]]:
    """The round means of the rounds both sides measured, in round order, as pairs."""
    by_round = [_means_by_round(before), _means_by_round(after)]
    common = sorted(set(by_round[0]) & set(by_round[1]))
    return [by_round[0][r] for r in common], [by_round[1][r] for r in common]


def _means_by_round(values: list[tuple[int, float]]) -> dict[int, float]:
    by_round: dict[int, list[float]] = {}
    for round_index, value in values:
        by_round.setdefault(round_index, []).append(value)
    return {r: sum(group) / len(group) for r, group in by_round.items()}


def comparable_values(
    before: list[tuple[int, float]], after: list[tuple[int, float]]
) -> tuple[list[float], list[float], str | None]:
    """Round means when both sides ran 2+ rounds, else the samples, with a note saying so.

    Samples taken back to back vary less than the same point measured minutes apart (the
    drift of a shared machine), so an interval over samples calls that drift a change; an
    interval over round means includes it.
    """
    means_before, means_after = round_means(before), round_means(after)
    if len(means_before) >= 2 and len(means_after) >= 2:
        return means_before, means_after, None
    return [v for _, v in before], [v for _, v in after], SAMPLES_ONLY


def _compare_point(
    point: PointResult,
    other: PointResult | None,
    quantity: Quantity,
    tolerance_pct: float,
    *,
    paired: bool = False,
) -> PointComparison:
    row = PointComparison(
        suite=point.suite,
        name=point.name,
        metric=point.metric,
        quantity=quantity,
        change=None,
        verdict=None,
    )
    before_values = _sample_values(point, quantity)
    after_values = _sample_values(other, quantity) if other is not None else []
    if not before_values or not after_values:
        row.note = "missing in one receipt"
    elif point.invalid or (other is not None and other.invalid):
        row.note = "invalid in one run: not compared"
    elif paired and _pairable(*(pairs := paired_round_means(before_values, after_values))):
        first, second = pairs
        row.change = paired_change(first, second)
        row.paired_rounds = len(first)
        row.verdict = verdict(row.change, tolerance_pct, higher_is_better=quantity == "tok/s")
    else:
        first, second, row.note = comparable_values(before_values, after_values)
        if sum(first) == 0:  # a zero reference mean has no percent change
            row.note = "zero in the reference run: no percent change"
            return row
        if paired and row.note is None:  # a one-round side keeps SAMPLES_ONLY (and its caption)
            row.note = "fewer than 2 paired rounds: judged unpaired"
        row.change = welch_change(first, second)
        row.verdict = verdict(row.change, tolerance_pct, higher_is_better=quantity == "tok/s")
    return row


def _pairable(first: list[float], second: list[float]) -> bool:
    """Two or more rounds on both sides, every mean positive (a ratio needs it)."""
    return len(first) >= 2 and min(*first, *second) > 0
