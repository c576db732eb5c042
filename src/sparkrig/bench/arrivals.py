"""`--arrivals poisson:RATE[:SEED]` or `staggered:GAP_S` (bench/arrival_spec.py): the
concurrency suite as an open loop. A sample's requests are sent at the times of a Poisson
process of RATE requests/s (the first at the sample's start, then exponential gaps), drawn from
a generator seeded by SEED and the point's name, so a run is reproducible point by point; or,
staggered, one every GAP_S seconds (docs/field-notes.md#context-vs-concurrency: static C16
315.1 against staggered C16 205.0 tok/s on one server). Each point reports the offered rate
against the one achieved and how late the client sent against its schedule
(docs/metrics.md#arrivals).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, Field

from sparkrig.bench.arrival_spec import Arrivals
from sparkrig.bench.client_shards import ClientLoad, Request, SendAll
from sparkrig.bench.goodput import RequestTimes, sample_window_s
from sparkrig.bench.statistics import PointSummary, percentile, summarize
from sparkrig.client import RequestRecord


class ArrivalSchedule:
    """The send offsets of one point's samples, drawn in turn from its own seeded generator."""

    def __init__(self, arrivals: Arrivals, point_name: str) -> None:
        self.rate = arrivals.rate_per_s
        self.staggered = arrivals.process == "staggered"
        # a reproducible schedule, not a secret
        self._random = random.Random(f"{arrivals.seed}/{point_name}")  # noqa: S311

    def offsets(self, count: int) -> list[float]:
        """Seconds from the sample's start: 0, then cumulative exponential gaps (staggered:
        one gap apart, the independent starts of the field's staggered C16 run)."""
        if self.staggered:
            return [index / self.rate for index in range(count)]
        times, now = [], 0.0
        for index in range(count):
            if index:
                now += self._random.expovariate(self.rate)
            times.append(now)
        return times


class ScheduledSender:
    """A SendAll that sends each batch on the next offsets of `schedule`."""

    def __init__(self, send: SendAll, schedule: ArrivalSchedule) -> None:
        self._send, self._schedule = send, schedule

    async def __call__(
        self, requests: Sequence[Request], offsets_s: Sequence[float] | None = None
    ) -> tuple[list[RequestRecord], ClientLoad]:
        return await self._send(requests, offsets_s or self._schedule.offsets(len(requests)))


class ArrivalSummary(BaseModel):
    arrivals: str = Field(description="the process, e.g. poisson 2/s (seed 0)")
    offered_per_s: float = Field(description="the rate asked for")
    scheduled_per_s: float | None = Field(
        description="the drawn schedules' rate: gaps over their span, all samples together "
        "(a seeded draw differs from the rate by chance); None without a gap"
    )
    achieved_per_s: PointSummary | None = Field(
        description="per sample: requests ÷ the window from the first send to the last reply's "
        "end (it includes the last replies' drain, so a short sample reads below the offered "
        "rate even when the server keeps up)"
    )
    late_ms_p50: float | None = Field(description="how late the client sent, median")
    late_ms_p99: float | None = Field(description="how late the client sent, 99th percentile")
    requests: int = Field(description="requests these figures rest on")

    def describe(self) -> str:
        scheduled = "—" if self.scheduled_per_s is None else f"{self.scheduled_per_s:.2f}/s"
        achieved = "—"
        if (rate := self.achieved_per_s) is not None:
            spread = "" if rate.ci95_half_width is None else f" ±{rate.ci95_half_width:.2f}"
            achieved = f"{rate.median:.2f}/s{spread}"
        late = "—" if self.late_ms_p99 is None else f"{self.late_ms_p99:.2f} ms"
        return (
            f"{self.arrivals}: offered {self.offered_per_s:g}/s (drawn {scheduled}), achieved "
            f"{achieved}, client sent late by p99 {late} ({self.requests} requests)"
        )


def arrival_summary(
    arrivals: Arrivals, samples: Sequence[tuple[Sequence[RequestTimes], ClientLoad | None]]
) -> ArrivalSummary:
    """Offered against achieved over a point's kept samples."""
    gaps = spans = 0.0
    late: list[float] = []
    achieved: list[float] = []
    for requests, load in samples:
        if load is not None and load.scheduled_s:
            gaps += len(load.scheduled_s) - 1
            spans += max(load.scheduled_s)
            late += load.late_ms or []
        window = sample_window_s(requests)
        if window is not None:
            achieved.append(len(requests) / window)
    return ArrivalSummary(
        arrivals=arrivals.label,
        offered_per_s=arrivals.rate_per_s,
        scheduled_per_s=gaps / spans if spans > 0 else None,
        achieved_per_s=summarize(achieved) if achieved else None,
        late_ms_p50=percentile(late, 0.5) if late else None,
        late_ms_p99=percentile(late, 0.99) if late else None,
        requests=sum(len(requests) for requests, _ in samples),
    )
