"""`soak --replay FILE --paced`: an open loop that sends each record of a trace once, at its
offset from the earliest record divided by `--speed`, whatever is still in flight; the receipt
compares the offered schedule with the achieved sends, as `--arrivals` does for the bench
(bench/arrivals.py). Pure: the runner (bench/soak.py) sleeps and sends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparkrig.bench.soak_receipt import SoakPacing
from sparkrig.bench.soak_traffic import PlannedRequest, replay_request
from sparkrig.bench.soak_windows import percentile
from sparkrig.wire.workload_log import WorkloadRecord


@dataclass(frozen=True)
class PacedReplay:
    """The records by arrival (ties in file order) and each one's send offset (s)."""

    model: str
    speed: float
    records: list[WorkloadRecord]
    offsets_s: list[float]

    @property
    def span_s(self) -> float:
        return self.offsets_s[-1] if self.offsets_s else 0.0

    def planned(self, n: int) -> PlannedRequest:
        """Request n, built when it is due (a long trace's prompts are not all held at once)."""
        return replay_request(self.model, self.records[n], n)


def paced_replay(model: str, records: Sequence[WorkloadRecord], speed: float) -> PacedReplay:
    ordered = [record for _, record in sorted(enumerate(records), key=lambda p: (p[1].time, p[0]))]
    first = ordered[0].time
    return PacedReplay(model, speed, ordered, [(r.time - first) / speed for r in ordered])


def _rate(count: int, span_s: float) -> float | None:
    return (count - 1) / span_s if count > 1 and span_s > 0 else None


def pacing_summary(
    replay: PacedReplay,
    scheduled_s: Sequence[float],
    sent_s: Sequence[float],
    late_ms: Sequence[float],
) -> SoakPacing:
    """The schedule of the requests sent so far (`scheduled_s`, offsets) against when each was
    sent (`sent_s`, seconds from the same origin, by the client's send stamp) and how late each
    send was (`late_ms`, the same difference taken in nanoseconds, as the windows have it)."""
    return SoakPacing(
        speed=replay.speed,
        trace_requests=len(replay.records),
        trace_span_s=round(replay.span_s, 3),
        sent=len(sent_s),
        offered_per_s=_rate(
            len(scheduled_s), max(scheduled_s, default=0) - min(scheduled_s, default=0)
        ),
        achieved_per_s=_rate(len(sent_s), max(sent_s, default=0) - min(sent_s, default=0)),
        late_ms_p50=percentile(late_ms, 0.5),
        late_ms_p99=percentile(late_ms, 0.99),
        late_ms_max=max(late_ms, default=None),
    )
