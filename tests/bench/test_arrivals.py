"""--arrivals poisson:RATE and staggered:GAP_S: the spec, the seeded schedule, a sender that
keeps it, and offered against achieved rate in a receipt from the real llama-server."""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path

import pytest

from sparkrig.bench.arrival_spec import Arrivals, parse_arrivals
from sparkrig.bench.arrivals import ArrivalSchedule, arrival_summary
from sparkrig.bench.client_shards import ClientLoad
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.run import run_bench
from sparkrig.errors import UsageError
from sparkrig.launch.local import LocalInstance


def test_a_spec_parses_with_its_seed() -> None:
    assert parse_arrivals("poisson:2.5") == Arrivals(rate_per_s=2.5, seed=0)
    assert parse_arrivals("poisson:0.7:42") == Arrivals(rate_per_s=0.7, seed=42)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("poisson", "poisson:RATE"),
        ("gamma:2", "poisson:RATE"),
        ("poisson:2:3:4", "poisson:RATE"),
        ("poisson:0", "above 0"),
        ("poisson:-1", "above 0"),
        ("poisson:inf", "above 0"),
        ("poisson:1e9", "at most"),
        ("poisson:2:x", "SEED"),
        ("staggered", "staggered:GAP_S"),
        ("staggered:0", "above 0"),
        ("staggered:-0.4", "above 0"),
        ("staggered:nan", "above 0"),
        ("staggered:1e5", "at most"),
        ("staggered:0.4:2", "staggered:GAP_S"),
    ],
)
def test_a_bad_spec_is_refused_with_the_fix(spec: str, says: str) -> None:
    with pytest.raises(UsageError, match=says) as caught:
        parse_arrivals(spec)
    assert " — " in str(caught.value)


def test_a_staggered_spec_sends_one_request_every_gap() -> None:
    arrivals = parse_arrivals("staggered:0.4")
    assert arrivals.process == "staggered"
    assert arrivals.rate_per_s == pytest.approx(2.5)
    assert arrivals.label == "staggered every 0.4 s"
    schedule = ArrivalSchedule(arrivals, "16 req staggered 0.4s cold")
    assert schedule.offsets(4) == pytest.approx([0, 0.4, 0.8, 1.2])
    assert schedule.offsets(4) == schedule.offsets(4)  # every sample alike: no draw


def test_the_schedule_is_seeded_per_point_and_poisson() -> None:
    arrivals = Arrivals(rate_per_s=4.0, seed=7)
    first = ArrivalSchedule(arrivals, "4 req poisson 4/s cold")
    again = ArrivalSchedule(arrivals, "4 req poisson 4/s cold")
    other = ArrivalSchedule(arrivals, "4 req poisson 4/s cached")
    drawn = [first.offsets(4) for _ in range(3)]
    assert drawn == [again.offsets(4) for _ in range(3)]  # reproducible, sample by sample
    assert drawn[0] != other.offsets(4)
    assert all(sample[0] == 0 and sample == sorted(sample) for sample in drawn)
    many = ArrivalSchedule(arrivals, "long").offsets(20_001)
    mean_gap = many[-1] / 20_000
    assert mean_gap == pytest.approx(0.25, rel=0.03)
    spacings = [b - a for a, b in itertools.pairwise(many)]  # exponential: sd about the mean
    assert statistics.stdev(spacings) == pytest.approx(mean_gap, rel=0.05)


class Times:
    def __init__(self, send_s: float, e2e_s: float) -> None:
        self.send_ns, self.e2e_s = round(send_s * 1e9), e2e_s
        self.ttft_s, self.decode_tps, self.completion_tokens = 0.1, 50.0, 8


def test_offered_against_achieved_from_samples() -> None:
    load = ClientLoad(processes=1, busy=[0.1], scheduled_s=[0, 0.5, 1.0], late_ms=[0.1, 0.2, 3])
    requests = [Times(0, 0.5), Times(0.5, 0.5), Times(1.0, 1.0)]  # window 0 .. 2 s
    summary = arrival_summary(Arrivals(rate_per_s=2.0), [(requests, load), (requests, load)])
    assert summary.offered_per_s == 2.0
    assert summary.scheduled_per_s == pytest.approx(2.0)
    assert summary.achieved_per_s is not None
    assert summary.achieved_per_s.median == pytest.approx(1.5)
    assert summary.late_ms_p99 == pytest.approx(3, rel=0.05)
    assert summary.requests == 6
    assert "offered 2/s" in summary.describe()
    closed = arrival_summary(Arrivals(rate_per_s=2.0), [(requests, None)])
    assert closed.scheduled_per_s is None
    assert closed.late_ms_p99 is None


@pytest.mark.engine
@pytest.mark.asyncio(loop_scope="session")
async def test_an_open_loop_point_keeps_its_schedule(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    arrivals = Arrivals(rate_per_s=8.0, seed=3)
    settings = BenchSettings(
        max_samples=2,
        min_samples=2,
        decode_tokens=8,
        prompt_tokens=16,
        concurrency=[3],
        precision=0.9,
        rounds=1,
        cached_replays=False,
        arrivals=arrivals,
    )
    receipt = await run_bench(
        llama_server.base_url,
        suites=["concurrency"],
        settings=settings,
        out_path=tmp_path / "a.json",
    )
    (point,) = receipt.points
    assert point.name == "3 req poisson 8/s cold"
    summary = point.arrivals
    assert summary is not None
    assert summary.offered_per_s == 8.0
    assert summary.requests == 3 * len(point.samples)
    assert summary.achieved_per_s is not None
    assert summary.late_ms_p99 is not None
    # the client kept its schedule to well within the mean gap (125 ms), on a shared machine
    assert 0 <= summary.late_ms_p99 < 100, summary
    schedule = ArrivalSchedule(arrivals, point.name)
    expected = [schedule.offsets(3) for _ in range(1 + len(point.discarded) + len(point.samples))]
    kept = [sample.client.scheduled_s for sample in point.samples if sample.client]
    draws = expected[1:]  # after the warm-up's draw; a discarded sample took one too
    at = [draws.index(schedule) for schedule in kept if schedule in draws]
    assert len(at) == len(kept)
    assert at == sorted(at)
    for sample in point.samples:
        sends = sorted(request.send_ns or 0 for request in sample.requests)
        assert sends[-1] - sends[0] >= 0.9 * max(sample.client.scheduled_s or [0]) * 1e9  # type: ignore[union-attr]


@pytest.mark.engine
@pytest.mark.asyncio(loop_scope="session")
async def test_a_staggered_point_starts_its_streams_one_gap_apart(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    settings = BenchSettings(
        max_samples=2,
        min_samples=2,
        decode_tokens=8,
        prompt_tokens=16,
        concurrency=[3],
        precision=0.9,
        rounds=1,
        cached_replays=False,
        arrivals=parse_arrivals("staggered:0.2"),
    )
    receipt = await run_bench(
        llama_server.base_url,
        suites=["concurrency"],
        settings=settings,
        out_path=tmp_path / "s.json",
    )
    (point,) = receipt.points
    assert point.name == "3 req staggered 0.2s cold"
    assert point.arrivals is not None
    assert point.arrivals.offered_per_s == pytest.approx(5.0)
    assert point.arrivals.scheduled_per_s == pytest.approx(5.0)
    for sample in point.samples:
        sends = sorted(request.send_ns or 0 for request in sample.requests)
        gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(sends)]
        assert all(0.19 <= gap < 0.3 for gap in gaps), gaps
