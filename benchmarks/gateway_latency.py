"""What does `gateway serve` add per streamed event, and how many events/s does it carry, vs a
direct connection to the same upstream?

A synthetic upstream (this file run with --upstream, in its own process) streams llama-server-
shaped chat chunks, each stamped with time.monotonic_ns() when written (CLOCK_MONOTONIC, shared
by the processes of one machine). The client reads each event and records receive − stamp.
Every setting runs direct and through the gateway (`sparkrig gateway serve`, its own process,
all features on), one after the other, with 1 to 64 concurrent streams:
- paced: events every PACE_MS; the delivery latency per event, median and p99, and the
  difference gateway − direct;
- flood: events as fast as the upstream writes them; events/s summed over streams, and the
  ratio gateway / direct.
The client's own reading costs the same in both, but at many streams it is part of what is
measured. This machine is shared with other work: read ratios and medians, not absolutes.

Run: .venv/bin/python benchmarks/gateway_latency.py [--streams 1,4,16,64] [--events 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
from aiohttp import web

PACE_MS = 10.0
SPARKRIG = str(Path(sys.executable).parent / "sparkrig")
START_TIMEOUT_S = 30.0


# --- the synthetic upstream (its own process) ---------------------------------------------------


async def _stream(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    events = int(body.get("max_tokens", 100))
    pace_s = float(body.get("pace_ms", 0.0)) / 1000
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    base = {"id": "bench", "model": "bench", "object": "chat.completion.chunk"}
    for index in range(events):
        choice = {"finish_reason": None, "index": 0, "delta": {"content": f" w{index}"}}
        chunk = {"choices": [choice], **base, "t": time.monotonic_ns()}
        await response.write(f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode())
        if pace_s:
            await asyncio.sleep(pace_s)
        elif index % 16 == 0:
            await asyncio.sleep(0)  # let other streams write too
    end = {
        "choices": [{"finish_reason": "length", "index": 0, "delta": {}}],
        **base,
        "t": time.monotonic_ns(),
    }
    await response.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
    await response.write_eof()
    return response


def serve_upstream(port: int) -> None:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _stream)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# --- the client -----------------------------------------------------------------------------


async def one_stream(
    session: aiohttp.ClientSession, url: str, events: int, pace_ms: float
) -> list[int]:
    """Delivery latency (ns) of each content event of one reply."""
    body = {
        "model": "bench",
        "stream": True,
        "max_tokens": events,
        "pace_ms": pace_ms,
        "messages": [{"role": "user", "content": "go"}],
    }
    latencies = []
    async with session.post(url + "/v1/chat/completions", json=body) as response:
        async for line in response.content:
            if not line.startswith(b"data: {"):
                continue
            received = time.monotonic_ns()
            chunk = json.loads(line[6:])
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                latencies.append(received - chunk["t"])
    return latencies


async def run(url: str, streams: int, events: int, pace_ms: float) -> tuple[list[int], float]:
    """(every event's latency, events/s over all streams)."""
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.monotonic()
        results = await asyncio.gather(
            *(one_stream(session, url, events, pace_ms) for _ in range(streams))
        )
        elapsed = time.monotonic() - started
    flat = [latency for result in results for latency in result]
    assert len(flat) == streams * events, (len(flat), streams * events)
    return flat, len(flat) / elapsed


def p99(values: list[int]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.99) - 1)]


# --- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def wait_listening(port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


async def measure(urls: dict[str, str], streams_list: list[int], events: int) -> None:
    print(
        f"{events} events per stream; paced every {PACE_MS:g} ms, then a flood; "
        f"machine: {os.cpu_count()} cores, shared"
    )
    header = (
        "streams",
        "direct p50 ms",
        "gateway p50 ms",
        "added p50 ms",
        "direct p99 ms",
        "gateway p99 ms",
        "added p99 ms",
        "flood direct ev/s",
        "flood gateway ev/s",
        "ratio",
    )
    print(" | ".join(header))
    for streams in streams_list:
        paced = {k: (await run(u, streams, events, PACE_MS))[0] for k, u in urls.items()}
        flood = {k: (await run(u, streams, events, 0.0))[1] for k, u in urls.items()}
        med = {k: statistics.median(v) / 1e6 for k, v in paced.items()}
        tail = {k: p99(v) / 1e6 for k, v in paced.items()}
        row = (
            streams,
            med["direct"],
            med["gateway"],
            med["gateway"] - med["direct"],
            tail["direct"],
            tail["gateway"],
            tail["gateway"] - tail["direct"],
            flood["direct"],
            flood["gateway"],
            flood["gateway"] / flood["direct"],
        )
        print(" | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))


def main(streams_list: list[int], events: int) -> None:
    upstream_port = free_port()
    upstream = subprocess.Popen([sys.executable, __file__, "--upstream", str(upstream_port)])
    gateway = subprocess.Popen(
        [SPARKRIG, "gateway", "serve", f"http://127.0.0.1:{upstream_port}", "--reasoning", "on"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        asyncio.run(wait_listening(upstream_port))
        assert gateway.stdout is not None
        line = gateway.stdout.readline()
        match = re.search(r"(http://\S+) -> ", line)
        assert match, line
        urls = {"direct": f"http://127.0.0.1:{upstream_port}", "gateway": match.group(1)}
        asyncio.run(measure(urls, streams_list, events))
    finally:
        for process in (gateway, upstream):
            process.send_signal(signal.SIGTERM)
        for process in (gateway, upstream):
            process.wait(timeout=START_TIMEOUT_S)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--streams", default="1,4,16,64")
    parser.add_argument("--events", type=int, default=200)
    args = parser.parse_args()
    if args.upstream:
        serve_upstream(args.upstream)
    else:
        main([int(s) for s in args.streams.split(",")], args.events)
