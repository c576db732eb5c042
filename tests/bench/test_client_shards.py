"""Streams sent from worker processes: same records as one process, one clock, no workers left.

The server is a real aiohttp server on 127.0.0.1 in this test process; the workers are real
spawned processes with their own event loops and EndpointClients.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web

from sparkrig import defaults
from sparkrig.bench import client_shards
from sparkrig.bench.client_shards import (
    ClientLoad,
    ShardedSender,
    processes_for,
    send_in_process,
    split,
)
from sparkrig.bench.point import BenchSettings, measure_point
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.run import run_bench
from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.errors import EndpointError, UsageError
from tests.http_servers import serve_app

TOKENS = 8
PROCESS_GONE_S = 10.0
BURN_CPU_S = 0.5
START_SPREAD_NS = 100_000_000  # a spawned process takes a second or more to be ready here


def sse(chunk: dict[str, object]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def echo_chat(request: web.Request) -> web.StreamResponse:
    """Streams TOKENS tokens; each chat token's text is the prompt, so a record names its request.
    A prompt that starts with 'burn' spends CPU in this process first ('burn 1.5': that many
    seconds), 'sleep' waits."""
    body = await request.json()
    chat = "messages" in body
    prompt = body["messages"][-1]["content"] if chat else "completion"
    if prompt.startswith("burn"):
        burn_s = float(prompt.split()[1]) if " " in prompt else BURN_CPU_S
        start = time.process_time()
        while time.process_time() - start < burn_s:  # the point is to hold the CPU
            pass
    if prompt.startswith("sleep"):
        await asyncio.sleep(float(prompt.split()[1]))
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for index in range(1, TOKENS + 1):
        text = f"[{prompt}]"
        choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
        chunk = {"choices": [choice]}
        await response.write(sse({**chunk, "timings": {"predicted_n": index}}))
        await asyncio.sleep(0.001)
    await response.write(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}))
    usage = {"prompt_tokens": 5, "completion_tokens": TOKENS, "total_tokens": TOKENS + 5}
    await response.write(sse({"choices": [], "usage": usage}))
    await response.write(b"data: [DONE]\n\n")
    return response


async def models(request: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "echo"}]})


@pytest_asyncio.fixture(loop_scope="session")
async def echo_server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", echo_chat)
    app.router.add_post("/v1/completions", echo_chat)
    app.router.add_get("/v1/models", models)
    async with serve_app(app) as url:
        yield url


def ask(text: str) -> ChatRequest:
    return ChatRequest(model="echo", messages=[{"role": "user", "content": text}], max_tokens=64)


def alive(pid: int) -> bool:
    """A pid that still runs (a zombie has ended: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_process_count_follows_streams_cores_and_the_forced_setting() -> None:
    per = defaults.BENCH_CLIENT_STREAMS_PER_PROCESS
    assert processes_for(per, cores=16, forced=None) == 1
    assert processes_for(per + 1, cores=16, forced=None) == 2
    assert processes_for(256, cores=16, forced=None) == -(-256 // per)
    assert processes_for(256, cores=2, forced=None) == 2
    assert processes_for(8, cores=16, forced=4) == 4
    assert processes_for(3, cores=16, forced=4) == 3
    assert processes_for(256, cores=16, forced=1) == 1
    assert processes_for(1, cores=16, forced=4) == 1


def test_split_keeps_order_and_every_request() -> None:
    requests = [ask(str(i)) for i in range(10)]
    parts = split(requests, 3)
    assert [len(part) for part in parts] == [3, 3, 4]
    assert [r for part in parts for r in part] == requests


def test_runnable_at_the_limit_is_saturated_and_below_it_is_not() -> None:
    limit = defaults.BENCH_CLIENT_BUSY_LIMIT
    assert ClientLoad(processes=2, busy=[0.2, limit]).saturated
    assert not ClientLoad(processes=2, busy=[0.2, limit - 0.01]).saturated
    # starved by other work: little CPU, much waiting for a core
    assert ClientLoad(processes=2, busy=[0.2, 0.4], queued=[0.0, limit - 0.4]).saturated
    assert not ClientLoad(processes=2, busy=[0.2, 0.4], queued=[0.0, 0.1]).saturated


async def test_without_a_shared_clock_the_batch_stays_in_this_process_and_says_so(
    echo_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose perf_counter is not CLOCK_MONOTONIC (macOS, some VMs' Python builds) cannot
    merge worker stamps: the sender falls back to one process and warns once."""
    monkeypatch.setattr(client_shards, "shared_clock", lambda: False)
    async with EndpointClient(echo_server) as client, ShardedSender(client, forced=3) as send_all:
        records, load = await send_all([ask(f"stream {i}") for i in range(6)])
        records_again, _ = await send_all([ask("again"), ask("and again")])
        assert send_all.workers == []
    assert load.processes == 1
    assert all(record.ok for record in [*records, *records_again])
    assert len(send_all.warnings) == 1
    assert "not CLOCK_MONOTONIC" in send_all.warnings[0]


async def test_without_schedstat_the_load_is_cpu_alone(
    echo_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel or sandbox without /proc/thread-self/schedstat (gVisor, non-Linux): the queued
    share is unknown, not zero-by-accident, and runnable falls back to the CPU share."""
    monkeypatch.setattr(client_shards, "queued_ns", lambda: None)
    async with EndpointClient(echo_server) as client:
        _, load = await send_in_process(client, [ask("one")])
    assert load.queued is None
    assert load.runnable == load.busy


async def test_sharded_records_match_one_process_in_order_and_clock(echo_server: str) -> None:
    requests = [ask(f"stream {i}") for i in range(6)]
    async with EndpointClient(echo_server) as client:
        alone, alone_load = await send_in_process(client, requests)
        async with ShardedSender(client, forced=3) as send_all:
            before_ns = time.perf_counter_ns()
            sharded, load = await send_all(requests)
            after_ns = time.perf_counter_ns()
            pids = {process.pid for process, _ in send_all.workers}
    assert alone_load.processes == 1
    assert load.processes == 3
    # fresh workers: the batch waited until all three were up, then all started at one moment
    sends = [record.send_ns for record in sharded]
    assert max(sends) - min(sends) < START_SPREAD_NS
    assert len(load.busy) == 3
    assert len(pids) == 3
    assert os.getpid() not in pids
    assert len(sharded) == len(alone) == len(requests)
    for index, (one, many) in enumerate(zip(alone, sharded, strict=True)):
        assert many.ok, many.error
        assert many.content == one.content == f"[stream {index}]" * TOKENS
        assert many.completion_tokens == one.completion_tokens == TOKENS
        assert len(many.output_events) == len(one.output_events) == TOKENS
        stamps = [many.send_ns, many.first_byte_ns, *(e.t_ns for e in many.events), many.end_ns]
        assert all(isinstance(stamp, int) for stamp in stamps)
        assert stamps == sorted(stamps)  # type: ignore[type-var]
        # taken by another process, on the clock this one reads
        assert before_ns < many.send_ns
        assert many.end_ns is not None
        assert many.end_ns < after_ns


async def test_a_batch_waits_for_a_worker_added_late_and_all_start_together(
    echo_server: str,
) -> None:
    """Two warm workers and one spawned for this batch: without the wait for it, the warm
    two would start a second or more before it."""
    async with EndpointClient(echo_server) as client, ShardedSender(client, forced=2) as sender:
        await sender([ask("a"), ask("b")])
        sender.forced = 3
        records, load = await sender([ask(str(i)) for i in range(6)])
    assert load.processes == 3
    sends = [record.send_ns for record in records]
    assert max(sends) - min(sends) < START_SPREAD_NS


async def test_workers_are_ended_when_the_block_ends_or_fails(echo_server: str) -> None:
    async with EndpointClient(echo_server) as client:
        sender = ShardedSender(client, forced=2)
        pids: list[int | None] = []

        async def fail_inside() -> None:
            async with sender as send_all:
                await send_all([ask("a"), ask("b")])
                pids.extend(process.pid for process, _ in sender.workers)
                assert all(pid is not None and alive(pid) for pid in pids)
                raise RuntimeError("stop here")

        with pytest.raises(RuntimeError, match="stop here"):
            await fail_inside()
    assert len(pids) == 2
    assert sender.workers == []
    assert not any(pid is not None and alive(pid) for pid in pids)


async def test_a_cancelled_batch_ends_its_workers(echo_server: str) -> None:
    async with EndpointClient(echo_server) as client, ShardedSender(client, forced=2) as sender:
        batch = asyncio.create_task(sender([ask("sleep 30"), ask("sleep 30")]))
        await asyncio.sleep(3)  # spawned, started, waiting on the server
        pids = [process.pid for process, _ in sender.workers]
        assert len(pids) == 2
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        assert sender.workers == []
    assert not any(pid is not None and alive(pid) for pid in pids)


async def test_a_worker_that_died_between_batches_is_one_line_and_the_rest_end(
    echo_server: str,
) -> None:
    async with EndpointClient(echo_server) as client, ShardedSender(client, forced=2) as sender:
        await sender([ask("a"), ask("b")])
        (first, _), (second, _) = sender.workers
        assert first.pid is not None
        os.kill(first.pid, signal.SIGKILL)
        first.join(PROCESS_GONE_S)
        with pytest.raises(EndpointError, match=r"is gone|exited") as failure:
            await sender([ask("c"), ask("d")])
        assert " — " in str(failure.value)
        assert sender.workers == []
        assert second.pid is not None
        assert not alive(second.pid)


def test_forced_processes_below_one_is_refused() -> None:
    with pytest.raises(UsageError, match="1 or more"):
        ShardedSender(EndpointClient("http://127.0.0.1:9"), forced=0)


async def test_runnable_reads_the_client_process_cpu_and_queueing(echo_server: str) -> None:
    """The server runs in this process and thread: burning its CPU keeps the client's loop
    runnable (on a core, or queued for one while other work holds the cores); waiting on it
    does not."""
    async with EndpointClient(echo_server) as client:
        _, waiting = await send_in_process(client, [ask("sleep 0.3")])
        # 1.5 s of burning: a batch's fixed cost (connect, the stream's sleeps, a page fault on
        # a loaded box) stays under a tenth of its wall; with 0.5 s, CI once read 0.79 runnable
        _, burning = await send_in_process(client, [ask("burn 1.5")])
    assert waiting.queued is not None
    assert burning.queued is not None
    assert waiting.busiest < 0.2
    assert not waiting.saturated
    assert burning.busy[0] > max(0.1, 4 * waiting.busy[0])
    assert burning.saturated, burning


async def test_bench_shards_on_request_and_not_below_the_threshold(
    echo_server: str, tmp_path: Path
) -> None:
    common = {"max_samples": 2, "decode_tokens": TOKENS, "cached_replays": False}
    sharded = await run_bench(
        echo_server,
        suites=["concurrency"],
        settings=BenchSettings(concurrency=[4], client_processes=2, **common),
        out_path=tmp_path / "sharded.json",
    )
    alone = await run_bench(
        echo_server,
        suites=["concurrency"],
        settings=BenchSettings(concurrency=[4], **common),
        out_path=tmp_path / "alone.json",
    )
    for receipt, processes in ((sharded, 2), (alone, 1)):
        point = receipt.points[0]
        assert point.summary is not None, point.discarded
        assert point.samples
        for sample in point.samples:
            assert sample.client is not None
            assert sample.client.processes == processes
            assert len(sample.requests) == 4
            assert all(r.completion_tokens == TOKENS for r in sample.requests)
        assert point.client_limited == any(s.client.saturated for s in point.samples if s.client)


async def _point_asking(prompt: str, client: EndpointClient) -> PointResult:
    point = PointResult(suite="concurrency", name="c=2", metric="requests")
    return await measure_point(
        client,
        point,
        make_requests=lambda: [ask(prompt), ask(prompt)],
        value_of=lambda records: float(len(records)),
        settings=BenchSettings(min_samples=2, max_samples=2, warmup_requests=0),
        check_text=lambda _: [],
        on_sample=lambda _: None,
    )


async def test_a_point_says_client_limited_only_when_a_client_process_was_saturated(
    echo_server: str,
) -> None:
    """The server shares the client's process and thread: a server that burns CPU saturates
    the client's loop for real; one that waits leaves it idle."""
    async with EndpointClient(echo_server) as client:
        calm = await _point_asking("sleep 0.2", client)
        limited = await _point_asking("burn", client)
    assert len(calm.samples) == len(limited.samples) == 2
    assert not calm.client_limited
    assert not any("client-limited" in warning for warning in calm.warnings)
    assert limited.client_limited
    assert sum("client-limited: a client process was runnable" in w for w in limited.warnings) == 1
    assert all(sample.client is not None for sample in limited.samples)


# --- Ctrl-C and a killed parent: a real process tree ------------------------------------------

_HOLDER = """
import asyncio, sys
from sparkrig.bench.client_shards import ShardedSender
from sparkrig.client import ChatRequest, EndpointClient, RequestRecord

async def main():
    async with EndpointClient(sys.argv[1]) as client, ShardedSender(client, forced=2) as sender:
        ask = ChatRequest(model="m", messages=[{"role": "user", "content": "x"}])
        batch = asyncio.create_task(sender([ask, ask]))
        await asyncio.sleep(0.5)
        print(" ".join(str(p.pid) for p, _ in sender.workers), flush=True)
        await batch

asyncio.run(main())
"""


def _holder_and_workers(url: str) -> tuple[subprocess.Popen[str], list[int]]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    line = holder.stdout.readline()
    pids = [int(pid) for pid in line.split()]
    assert len(pids) == 2, holder.stderr.read() if holder.stderr else line
    time.sleep(1.0)  # the workers are waiting on the silent server
    assert all(alive(pid) for pid in pids)
    return holder, pids


def _gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + PROCESS_GONE_S
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("ending", [signal.SIGINT, signal.SIGKILL])
def test_ctrl_c_or_a_killed_parent_leaves_no_worker(ending: signal.Signals) -> None:
    """The server outlives the parent (it is this test's socket, which accepts and never
    answers), so a worker would wait on it for minutes unless something ends it."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    holder, pids = _holder_and_workers(f"http://127.0.0.1:{silent.getsockname()[1]}")
    try:
        holder.send_signal(ending)
        holder.wait(timeout=PROCESS_GONE_S)
        assert _gone(pids), [pid for pid in pids if alive(pid)]
    finally:
        holder.kill()
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        holder.communicate()
        silent.close()


async def test_sharded_offsets_keep_one_schedule_across_workers(echo_server: str) -> None:
    requests = [ask(f"stream {i}") for i in range(4)]
    offsets = [0.0, 0.05, 0.1, 0.3]
    async with EndpointClient(echo_server) as client, ShardedSender(client, forced=2) as send_all:
        records, load = await send_all(requests, offsets)
    assert load.processes == 2
    assert load.scheduled_s == offsets
    assert load.late_ms is not None
    assert len(load.late_ms) == 4
    assert all(0 <= late < 50 for late in load.late_ms), load.late_ms
    sends = [record.send_ns for record in records]
    # both workers count from one start: the gaps between sends are the schedule's
    gaps_s = [(send - sends[0]) / 1e9 for send in sends]
    assert gaps_s == pytest.approx(offsets, abs=0.04)
