"""A paced replay's schedule and summary (bench/soak_pacing.py), and the prompts a replay builds
from Mooncake prefix blocks (bench/soak_traffic.py): records that share leading hash_ids get
prompts that share exactly those blocks' text, and records that do not, do not; and a client
that falls behind its schedule reads late."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from sparkrig.bench.soak import SoakRun, new_receipt
from sparkrig.bench.soak_pacing import paced_replay, pacing_summary
from sparkrig.bench.soak_receipt import save_soak_receipt
from sparkrig.bench.soak_traffic import replay_request, replayed_traffic
from sparkrig.client import EndpointClient
from sparkrig.wire.workload_log import WorkloadRecord
from tests.gateway.fake_upstream import FakeUpstream, serve_fake


def record(time: float, blocks: list[int] | None = None, tokens: int = 128) -> WorkloadRecord:
    return WorkloadRecord(
        request_id=f"r{time}",
        time=time,
        api="chat",
        stream=True,
        status=200,
        prompt_tokens=tokens,
        completion_tokens=8,
        params={"max_tokens": 8},
        prefix_blocks=blocks,
        prefix_block_tokens=64 if blocks else None,
    )


def prompt_words(rec: WorkloadRecord) -> list[str]:
    request = replay_request("m", rec, 0).request
    return request.messages[0]["content"].split()  # type: ignore[union-attr]


def test_records_sharing_leading_blocks_share_exactly_that_prompt_prefix() -> None:
    a, b, c = record(0, [1, 2]), record(1, [1, 3]), record(2, [4, 5])
    words_a, words_b, words_c = prompt_words(a), prompt_words(b), prompt_words(c)
    assert len(words_a) == len(words_b) == len(words_c) == 128
    assert words_a[:64] == words_b[:64]
    assert words_a[64:] != words_b[64:]
    assert words_a[:64] != words_c[:64]
    assert prompt_words(record(9, [1, 2])) == words_a  # the same ids, the same text, every time


def test_the_last_block_holds_the_rest_of_the_prompt() -> None:
    words = prompt_words(record(0, [7, 8, 9], tokens=150))  # 64 + 64 + 22
    assert len(words) == 150
    assert words[:64] == prompt_words(record(0, [7], tokens=64))


def test_the_schedule_is_by_arrival_from_the_earliest_and_divided_by_speed() -> None:
    records = [record(27.5), record(30.5), record(27.5), record(25.0)]
    replay = paced_replay("m", records, speed=2)
    assert replay.offsets_s == [0, 1.25, 1.25, 2.75]
    assert replay.records[1] is records[0]  # ties keep the file's order
    assert replay.span_s == 2.75
    assert replay.planned(3).request_id.startswith("replay-3-")


def test_the_summary_sets_the_offered_schedule_against_the_achieved_sends() -> None:
    replay = paced_replay("m", [record(0), record(1), record(2), record(3)], speed=1)
    summary = pacing_summary(replay, [0, 1, 2], [0.001, 1.002, 2.021], [1.0, 2.0, 21.0])
    assert (summary.sent, summary.trace_requests, summary.trace_span_s) == (3, 4, 3)
    assert summary.offered_per_s == pytest.approx(1.0)
    assert summary.achieved_per_s == pytest.approx(2 / 2.020)
    assert summary.late_ms_max == pytest.approx(21)
    assert summary.late_ms_p50 == pytest.approx(2)
    assert "3 of 4 trace requests sent, offered 1/s" in summary.describe()
    empty = pacing_summary(replay, [], [], [])
    assert (empty.sent, empty.late_ms_p99, empty.offered_per_s) == (0, None, None)
    assert "sent late by —" in empty.describe()


async def test_a_client_that_cannot_keep_the_schedule_reads_late(tmp_path: Path) -> None:
    """The fault the lateness figures exist for: the client's event loop held for 0.3 s just
    before a request is due (as a busy client would) sends it late by about that, and the
    figures say so, while the request due before the hold reads on time. Against a local
    stand-in server (tests/gateway/fake_upstream.py), as the figures are the client's own."""
    replay = paced_replay("m", [record(0), record(0.5)], speed=1)

    async def hold_the_loop() -> None:
        await asyncio.sleep(0.35)
        time.sleep(0.3)  # noqa: ASYNC251 - the fault: the loop held, nothing runs until 0.65 s

    upstream = FakeUpstream(reply_for=lambda body: "A plain reply.")
    receipt = new_receipt("", "m", "replay", concurrency=1, duration_s=10, window_s=10, seed=0)
    async with serve_fake(upstream) as url, EndpointClient(url) as client:
        run = SoakRun(
            client,
            receipt,
            replayed_traffic("m", replay.records),
            metrics_url=None,
            on_window=lambda r: save_soak_receipt(r, tmp_path / "soak.json"),
            paced=replay,
        )
        hog = asyncio.create_task(hold_the_loop())
        done = await run.run()
        await hog
    assert done.pacing is not None
    assert done.pacing.sent == 2
    assert done.pacing.late_ms_max is not None
    assert done.pacing.late_ms_max >= 100  # due at 0.5 s, the loop free at about 0.65 s
    assert done.pacing.late_ms_p50 is not None
    assert done.pacing.late_ms_p50 < 50  # the first, due at 0, on time
    assert done.pacing.achieved_per_s is not None
    assert done.pacing.offered_per_s == pytest.approx(2.0)
    assert done.pacing.achieved_per_s < 2.0
