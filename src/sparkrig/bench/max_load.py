"""`bench --find-max-load`: the highest concurrency (closed loop) whose point holds the SLO.

Pure: `LoadSearch` says which level to probe next, given what the probes so far showed, and
`max_load_result` reads the answer off the probed points. The search probes the range's lowest
level, then its highest, then bisects between the highest level that met and the lowest that
failed until they are adjacent (or an end of the range decides it). It assumes that a level
above one that fails also fails; each probe is one point measured like any other (its samples
repeated to the precision asked), and a level meets when that point is valid and every SLO
term's percentile over its requests holds (docs/metrics.md#max-load).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from sparkrig.bench.goodput import PointGoodput

PRECISION = "adjacent levels"


class ProbedPoint(Protocol):
    """What the result reads of a probe point (bench/point_result.py's PointResult has it)."""

    @property
    def load(self) -> int | None: ...
    @property
    def invalid(self) -> bool: ...
    @property
    def goodput(self) -> PointGoodput | None: ...


def level_meets(point: ProbedPoint) -> bool:
    """Valid, and every term held; a level whose SLO cannot be judged is not shown to meet."""
    return not point.invalid and point.goodput is not None and point.goodput.holds is True


class LoadSearch:
    """Bisection over whole levels `low..high` for the highest level that meets."""

    def __init__(self, low: int, high: int) -> None:
        if not 1 <= low <= high:
            raise ValueError(f"a load search needs 1 <= low <= high, got {low}..{high}")
        self.low, self.high = low, high
        self.meeting: int | None = None  # highest level that met
        self.failing: int | None = None  # lowest level that failed
        self.probed: list[int] = []

    def next_level(self) -> int | None:
        """The level to probe next; None once the answer is known to the stated precision."""
        if not self.probed:
            return self.low
        if self.meeting is None:
            return None  # the lowest level already fails
        if self.failing is None:
            return None if self.high in self.probed else self.high
        if self.failing - self.meeting <= 1:
            return None
        return (self.meeting + self.failing) // 2

    def record(self, level: int, meets: bool) -> None:
        self.probed.append(level)
        if meets:
            self.meeting = level if self.meeting is None else max(self.meeting, level)
        else:
            self.failing = level if self.failing is None else min(self.failing, level)


def worst_case_probes(low: int, high: int) -> int:
    """Probes a search of `low..high` takes at most: both ends, then the bisection."""
    if high == low:
        return 1
    return 2 + math.ceil(math.log2(high - low))


class MaxLoadProbe(BaseModel):
    load: int = Field(description="concurrent streams")
    meets: bool
    share: float | None = Field(description="share of the level's requests meeting the SLO")
    requests: int = Field(description="requests the verdict rests on")


class MaxLoadResult(BaseModel):
    slo: str = Field(description="the objective searched for (--slo), e.g. ttft_p99=2s")
    low: int = Field(description="lowest level of the search range")
    high: int = Field(description="highest level of the search range")
    precision: str = Field(default=PRECISION, description="when the search stops")
    highest_meeting: int | None = Field(
        description="highest probed level that met the SLO; unset when even `low` failed"
    )
    lowest_failing: int | None = Field(
        description="lowest probed level that failed; unset when `high` met (the range's top "
        "is a floor of the answer, not the answer)"
    )
    resolved: bool = Field(
        description="the answer holds to the precision: adjacent levels, or decided at an end"
    )
    probes: list[MaxLoadProbe] = Field(description="in the order probed")

    def describe(self) -> str:
        order = ", ".join(f"c={p.load} {'meets' if p.meets else 'fails'}" for p in self.probes)
        if self.highest_meeting is None:
            head = f"no level meets {self.slo}: c={self.low}, the lowest asked, already fails"
        elif self.lowest_failing is None:
            head = (
                f"c={self.highest_meeting} meets {self.slo}, the highest level asked — raise the "
                "top of --concurrency to search further"
            )
        else:
            head = (
                f"max load under {self.slo}: c={self.highest_meeting} meets, "
                f"c={self.lowest_failing} fails"
            )
        unresolved = "" if self.resolved else "; unresolved (the search stopped early)"
        return f"{head} (probed {order}; precision: {self.precision}{unresolved})"


def max_load_result(
    points: Sequence[ProbedPoint], slo: str, low: int, high: int
) -> MaxLoadResult | None:
    """The answer read off the probe points, in the order probed; None before any probe."""
    probes = [
        MaxLoadProbe(
            load=point.load,
            meets=level_meets(point),
            share=point.goodput.share if point.goodput else None,
            requests=point.goodput.requests if point.goodput else 0,
        )
        for point in points
        if point.load is not None
    ]
    if not probes:
        return None
    meeting = max((p.load for p in probes if p.meets), default=None)
    failing = min((p.load for p in probes if not p.meets), default=None)
    resolved = (
        (meeting is None and failing == low)
        or (failing is None and meeting == high)
        or (meeting is not None and failing is not None and failing - meeting == 1)
    )
    return MaxLoadResult(
        slo=slo,
        low=low,
        high=high,
        highest_meeting=meeting,
        lowest_failing=failing,
        resolved=resolved,
        probes=probes,
    )
