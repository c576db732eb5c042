"""Is sparkrig's client the bottleneck? Streamed tokens/s and client-added latency at rising
concurrency, against a loopback SSE server in its own process.

The server (127.0.0.1 only, benchmarks/loadgen_server.py) answers with a llama.cpp-shaped
stream whose stamped chunks carry the server's CLOCK_MONOTONIC reading (ns, 20 digits) taken
just before the write that sends them. Client-added latency is the client's time minus that
stamp: the record's first_byte_ns (first byte) or each content event's t_ns (per token).
Records are stamped with perf_counter_ns, the same system-wide clock on Linux (checked at
start).

Two phases per level, each a closed loop of `streams` requests bounded by --seconds and
--max-requests:
- instant: the whole reply in one write. The client is saturated by design, so tokens/s is the
  client's ceiling and first-byte latency is mostly queueing behind the other streams.
- paced (path prefix /paced): a token for every open stream every --pace-ms, all streams in
  step as a batched engine emits them; streams start spread over one reply. Latency here is
  what the client adds to its timings.
- poisson (paced replies, the bench's `--arrivals` path): an open loop, the phase's requests
  sent by the bench's ShardedSender (in this process, and as sparkrig×N over the bench's
  worker processes) at Poisson times (seeded) of the rate that keeps `streams` replies open on
  average (rate = streams ÷ a paced reply's duration), one batch as a bench sample sends it,
  its records kept as a bench keeps them. Besides the added latency it prints how late the
  client sent against the schedule.
- staggered (the bench's `--arrivals staggered:GAP_S`): the poisson phase's path and rate, one
  request every 1/rate s instead of Poisson gaps, one process.
- replay (`soak --replay --paced`): the same requests as a trace, sent by the soak's own open
  loop at their offsets; the soak keeps no records, so it reports how late each send was
  against its offset and tokens/s (its per-token path is the closed loop's client).
Tokens/s counts the server's token counts in complete replies over the phase's wall time; CPU%
is this process only (the server has its own). Replies are reduced to numbers as they end;
--keep-records keeps them all, as a bench run does, to show what their garbage collection
costs. If guidellm or aiperf is installed in its own venv (--guidellm, $SPARKRIG_GUIDELLM or
/tmp/guidellm-venv; --aiperf, $SPARKRIG_AIPERF or /tmp/aiperf-venv), it runs the instant
phase at each level against the same server, and the ratios are printed; a tool not found is
a skipped column, said at the start and the end. aiperf gets a word-level tokenizer written
into the run's temporary folder, so nothing is downloaded.

sparkrig×N is the bench's sharded client (sparkrig.bench.client_shards): the level's streams
split over N worker processes, N by the bench's own rule (one per 24 streams, at most one per
core) or --client-processes. CPU% sums the client's processes; "runnable" is the busiest one's
share of the phase on a core or queued for one (its loop thread's schedstat), and "srv%" is the
loopback server's CPU% (from /proc). The limit column says "client" when a client process was
runnable >= 90% of the phase (the bench's client-limited threshold), "server" when the server
was at >= 90% of a core.

Run: .venv/bin/python benchmarks/loadgen.py [--levels 1,16,64,256] [--seconds 10]
On a machine with aiohttp but without pydantic, carry its wheels (pip download --only-binary
:all: --python-version 3.12 --platform manylinux2014_x86_64 -d dist/device-wheels pydantic
prometheus_client platformdirs) and run:
  python3 -m pip install -q --no-index --find-links dist/device-wheels --target /tmp/lgdeps
  pydantic prometheus_client platformdirs && PYTHONPATH=src:/tmp/lgdeps python3
  benchmarks/loadgen.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from loadgen_server import (
    MODEL,
    PACED_PREFIX,
    SERVER_START_TIMEOUT_S,
    STAMP_DIGITS,
    ServerSettings,
    start_server,
    stop_server,
)

from sparkrig import defaults
from sparkrig.bench.arrival_spec import Arrivals
from sparkrig.bench.arrivals import ArrivalSchedule
from sparkrig.bench.client_shards import ShardedSender, processes_for, queued_ns, usable_cores
from sparkrig.bench.soak import SoakRun, new_receipt
from sparkrig.bench.soak_pacing import paced_replay
from sparkrig.bench.soak_traffic import replayed_traffic
from sparkrig.client import ChatRequest, EndpointClient, RequestRecord
from sparkrig.wire.workload_log import WorkloadRecord

LEVELS = (1, 16, 64, 256)
LEVEL_SECONDS = 10.0
MAX_REQUESTS_PER_LEVEL = 20_000
TOKENS_PER_REPLY = 256
PACED_TOKENS_PER_REPLY = 64  # 64 x 20 ms: several replies per stream in a 10 s level
PACE_MS = 20.0  # 50 tokens/s per stream
TARGET_RATIO = 2.0  # sustained tokens/s over guidellm's, same server, same cores
TARGET_RATIO_AIPERF = 1.5  # the same over aiperf's
TARGET_P99_MS = 1.0  # client-added latency at TARGET_STREAMS
TARGET_STREAMS = 256
REQUEST_TIMEOUT_S = 60.0
GUIDELLM_ENV = "SPARKRIG_GUIDELLM"
GUIDELLM_DEFAULT = Path(tempfile.gettempdir()) / "guidellm-venv" / "bin" / "guidellm"
GUIDELLM_SLACK_S = 120.0  # its start-up, data loading and report, on top of --seconds
AIPERF_ENV = "SPARKRIG_AIPERF"
AIPERF_DEFAULT = Path(tempfile.gettempdir()) / "aiperf-venv" / "bin" / "aiperf"
SHARD_START_LEAD_S = 0.5  # every worker process is up and waiting before the phase starts
_NS_PER_MS = 1_000_000


# --- sparkrig's client ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    levels: list[int]
    seconds: float
    max_requests: int
    tokens: int
    paced_tokens: int
    pace_ms: float
    keep_records: bool
    client_processes: int | None = None


@dataclass
class Level:
    tool: str
    phase: str
    streams: int
    requests: int
    errors: int
    tokens_per_s: float
    first_byte_ms: tuple[float, float] | None  # added latency p50, p99
    per_token_ms: tuple[float, float] | None
    cpu_percent: float | None
    busiest: float | None = None  # the busiest client process's runnable share of the phase
    server_cpu_percent: float | None = None
    late_ms: tuple[float, float] | None = None  # poisson: sends late against schedule p50, p99

    @property
    def limit(self) -> str:
        if self.busiest is not None and self.busiest >= defaults.BENCH_CLIENT_BUSY_LIMIT:
            return "client"
        if self.server_cpu_percent is not None and self.server_cpu_percent >= 100 * (
            defaults.BENCH_CLIENT_BUSY_LIMIT
        ):
            return "server"
        return "-"


def require_shared_clock() -> None:
    """The server stamps time.monotonic_ns(); records hold perf_counter_ns: same clock?"""
    perf = time.get_clock_info("perf_counter").implementation
    mono = time.get_clock_info("monotonic").implementation
    gap_ns = abs(time.perf_counter_ns() - time.monotonic_ns())
    if perf != mono or gap_ns > _NS_PER_MS:
        raise SystemExit(
            f"perf_counter ({perf}) and monotonic ({mono}) differ by {gap_ns} ns here — "
            "client-added latency needs one system-wide clock; run on Linux"
        )


def p50_p99(values: list[float]) -> tuple[float, float] | None:
    """Nearest-rank percentiles; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = [min(len(ordered), max(1, -(-len(ordered) * q // 100))) for q in (50, 99)]
    return ordered[rank[0] - 1], ordered[rank[1] - 1]


def first_byte_ms(record: RequestRecord) -> float | None:
    stamp = record.content[:STAMP_DIGITS]
    if record.first_byte_ns is None or not stamp.isdigit():
        return None
    return (record.first_byte_ns - int(stamp)) / _NS_PER_MS


def per_token_ms(record: RequestRecord) -> list[float]:
    """Each stamped content event's added latency (paced replies: every token is a stamp)."""
    events = [event for event in record.events if event.content_chars]
    content = record.content
    stamps = [content[i : i + STAMP_DIGITS] for i in range(0, len(content), STAMP_DIGITS)]
    return [
        (event.t_ns - int(stamp)) / _NS_PER_MS
        for event, stamp in zip(events, stamps, strict=False)
        if len(stamp) == STAMP_DIGITS and stamp.isdigit()
    ]


@dataclass
class Tally:
    """One client process's closed loop over its streams, reduced to numbers."""

    issued: int
    tokens: int
    complete: int
    first_byte: list[float]
    per_token: list[float]
    start_ns: int
    end_ns: int
    cpu_s: float
    queued_s: float = 0.0  # the loop thread's wait for a core (0 where schedstat is missing)


async def closed_loop(
    url: str,
    settings: Settings,
    *,
    paced: bool,
    streams: range,
    total_streams: int,
    max_requests: int,
    start_at_ns: int | None = None,
) -> Tally:
    """Each reply is checked and reduced to numbers as it completes; records are kept only with
    --keep-records, as a caller that keeps them all (and pays for their garbage collection)."""
    expected = settings.paced_tokens if paced else settings.tokens
    request = ChatRequest(
        model=MODEL, messages=[{"role": "user", "content": "Say tok."}], max_tokens=expected
    )
    kept: list[RequestRecord] = []
    tally = Tally(0, 0, 0, [], [], 0, 0, 0.0)
    async with EndpointClient(
        url + (PACED_PREFIX if paced else ""), timeout_s=REQUEST_TIMEOUT_S
    ) as client:
        if start_at_ns is not None:
            await asyncio.sleep(max(0, start_at_ns - time.perf_counter_ns()) / 1e9)
        tally.start_ns, cpu_start = time.perf_counter_ns(), time.process_time()
        queued_start = queued_ns()
        deadline = tally.start_ns / 1e9 + settings.seconds

        def count(record: RequestRecord) -> None:  # no stream holds a record while it waits
            if settings.keep_records:
                kept.append(record)
            if record.ok and record.completion_tokens == expected:
                tally.tokens += expected
                tally.complete += 1
                if (first := first_byte_ms(record)) is not None:
                    tally.first_byte.append(first)
                if paced:  # the first token came with the head: it is the first byte's
                    tally.per_token.extend(per_token_ms(record)[1:])

        async def stream_until_deadline(start_after_s: float) -> None:
            await asyncio.sleep(start_after_s)
            while tally.issued < max_requests and time.perf_counter() < deadline:
                tally.issued += 1
                count(await client.send(request))

        # paced streams start spread over one reply, or every reply would end in the same step
        # and the next ones start together: a burst no engine with mixed lengths makes
        spread_s = settings.paced_tokens * settings.pace_ms / 1000 / total_streams if paced else 0
        await asyncio.gather(*(stream_until_deadline(i * spread_s) for i in streams))
        tally.end_ns = time.perf_counter_ns()
        tally.cpu_s = time.process_time() - cpu_start
        queued_end = queued_ns()
        if queued_start is not None and queued_end is not None:
            tally.queued_s = (queued_end - queued_start) / 1e9
    return tally


def server_cpu_s(pid: int | None) -> float | None:
    """The loopback server's CPU seconds so far, from /proc (Linux); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def level_of(
    tool: str,
    streams: int,
    tallies: list[Tally],
    *,
    paced: bool,
    server_s: float | None,
) -> Level:
    wall_s = (max(t.end_ns for t in tallies) - min(t.start_ns for t in tallies)) / 1e9
    issued = sum(t.issued for t in tallies)
    return Level(
        tool=tool,
        phase="paced" if paced else "instant",
        streams=streams,
        requests=issued,
        errors=issued - sum(t.complete for t in tallies),
        tokens_per_s=sum(t.tokens for t in tallies) / wall_s,
        first_byte_ms=p50_p99([v for t in tallies for v in t.first_byte]),
        per_token_ms=p50_p99([v for t in tallies for v in t.per_token]),
        cpu_percent=100 * sum(t.cpu_s for t in tallies) / wall_s,
        busiest=max((t.cpu_s + t.queued_s) / ((t.end_ns - t.start_ns) / 1e9) for t in tallies),
        server_cpu_percent=None if server_s is None else 100 * server_s / wall_s,
    )


def run_sparkrig(
    url: str, streams: int, settings: Settings, *, paced: bool, server_pid: int | None
) -> Level:
    before = server_cpu_s(server_pid)
    tally = asyncio.run(
        closed_loop(
            url,
            settings,
            paced=paced,
            streams=range(streams),
            total_streams=streams,
            max_requests=settings.max_requests,
        )
    )
    after = server_cpu_s(server_pid)
    server_s = after - before if after is not None and before is not None else None
    return level_of("sparkrig", streams, [tally], paced=paced, server_s=server_s)


def poisson_rate(streams: int, settings: Settings) -> float:
    """The arrival rate that keeps `streams` paced replies open on average (Little's law:
    open = rate x a paced reply's duration)."""
    return streams / (settings.paced_tokens * settings.pace_ms / 1000)


async def _poisson_phase(
    url: str,
    streams: int,
    settings: Settings,
    processes: int,
    process: Literal["poisson", "staggered"] = "poisson",
) -> tuple[Level, float]:
    """The bench's own open-loop path (--arrivals offsets through send_in_process, or through
    the ShardedSender's worker processes) against the paced server: one batch of the phase's
    requests at Poisson times (or one every 1/rate s, staggered), as a bench sample sends it."""
    rate = poisson_rate(streams, settings)
    count = max(1, min(settings.max_requests, round(rate * settings.seconds)))
    arrivals = Arrivals(process=process, rate_per_s=rate, seed=0)
    offsets = ArrivalSchedule(arrivals, f"loadgen {streams}").offsets(count)
    request = ChatRequest(
        model=MODEL,
        messages=[{"role": "user", "content": "Say tok."}],
        max_tokens=settings.paced_tokens,
    )
    options = {"timeout_s": REQUEST_TIMEOUT_S}
    async with (
        EndpointClient(url + PACED_PREFIX, timeout_s=REQUEST_TIMEOUT_S) as client,
        ShardedSender(client, client_options=options, forced=processes) as sharded,
    ):
        if processes > 1:  # workers up before the phase, as a bench run's are after its first
            await sharded([request] * processes)
        start_ns = time.perf_counter_ns()
        records, load = await sharded([request] * count, offsets)
        wall_s = (time.perf_counter_ns() - start_ns) / 1e9
    complete = [r for r in records if r.ok and r.completion_tokens == settings.paced_tokens]
    level = Level(
        tool="sparkrig" if processes == 1 else f"sparkrig×{processes}",
        phase=process,
        streams=streams,
        requests=count,
        errors=count - len(complete),
        tokens_per_s=len(complete) * settings.paced_tokens / wall_s,
        first_byte_ms=p50_p99([v for r in complete if (v := first_byte_ms(r)) is not None]),
        per_token_ms=p50_p99([v for r in complete for v in per_token_ms(r)[1:]]),
        cpu_percent=100 * sum(load.busy),
        busiest=load.busiest,
        late_ms=p50_p99(load.late_ms or []),
    )
    return level, wall_s


def run_poisson(
    url: str,
    streams: int,
    settings: Settings,
    *,
    processes: int,
    server_pid: int | None,
    process: Literal["poisson", "staggered"] = "poisson",
) -> Level:
    before = server_cpu_s(server_pid)
    level, wall_s = asyncio.run(_poisson_phase(url, streams, settings, processes, process))
    after = server_cpu_s(server_pid)
    if after is not None and before is not None:
        level.server_cpu_percent = 100 * (after - before) / wall_s
    return level


async def _replay_phase(url: str, streams: int, settings: Settings) -> tuple[Level, float]:
    """`soak --replay --paced`: a trace of the phase's requests at the poisson phase's times,
    sent by the soak's own open loop (bench/soak.py) against the paced server. The soak keeps
    no records, so this phase reports how late each send was against its trace offset (the
    open loop's own error) and tokens/s; per-token latency is the closed loop's client path."""
    rate = poisson_rate(streams, settings)
    count = max(1, min(settings.max_requests, round(rate * settings.seconds)))
    offsets = ArrivalSchedule(Arrivals(rate_per_s=rate, seed=0), f"loadgen {streams}").offsets(
        count
    )
    records = [
        WorkloadRecord(
            request_id=f"r{n}",
            time=offset,
            api="chat",
            stream=True,
            status=200,
            prompt_tokens=3,
            completion_tokens=settings.paced_tokens,
            params={"max_tokens": settings.paced_tokens},
        )
        for n, offset in enumerate(offsets)
    ]
    receipt = new_receipt(
        url + PACED_PREFIX,
        MODEL,
        "loadgen replay",
        concurrency=streams,
        duration_s=offsets[-1] + REQUEST_TIMEOUT_S,
        window_s=offsets[-1] + REQUEST_TIMEOUT_S,
        seed=0,
    )
    start_ns = time.perf_counter_ns()
    async with EndpointClient(url + PACED_PREFIX, timeout_s=REQUEST_TIMEOUT_S) as client:
        run = SoakRun(
            client,
            receipt,
            replayed_traffic(MODEL, records),
            metrics_url=None,
            on_window=lambda _: None,
            paced=paced_replay(MODEL, records, 1.0),
        )
        done = await run.run()
    wall_s = (time.perf_counter_ns() - start_ns) / 1e9
    pacing = done.pacing
    late = None
    if pacing is not None and pacing.late_ms_p50 is not None and pacing.late_ms_p99 is not None:
        late = (pacing.late_ms_p50, pacing.late_ms_p99)
    level = Level(
        tool="sparkrig",
        phase="replay",
        streams=streams,
        requests=count,
        errors=done.lost,
        tokens_per_s=sum(w.output_tokens for w in done.windows) / wall_s,
        first_byte_ms=None,
        per_token_ms=None,
        cpu_percent=None,
        late_ms=late,
    )
    return level, wall_s


def run_replay(url: str, streams: int, settings: Settings, *, server_pid: int | None) -> Level:
    before = server_cpu_s(server_pid)
    level, wall_s = asyncio.run(_replay_phase(url, streams, settings))
    after = server_cpu_s(server_pid)
    if after is not None and before is not None:
        level.server_cpu_percent = 100 * (after - before) / wall_s
    return level


def _shard(job: tuple[str, Settings, bool, range, int, int, int]) -> Tally:
    """Worker-process entry: one shard's closed loop, started at the shared moment."""
    url, settings, paced, streams, total, max_requests, start_at_ns = job
    return asyncio.run(
        closed_loop(
            url,
            settings,
            paced=paced,
            streams=streams,
            total_streams=total,
            max_requests=max_requests,
            start_at_ns=start_at_ns,
        )
    )


def shard_count(streams: int, settings: Settings) -> int:
    """The bench's rule (sparkrig.bench.client_shards.processes_for), or --client-processes."""
    return processes_for(streams, cores=usable_cores(), forced=settings.client_processes)


def run_sharded(
    pool: ProcessPoolExecutor,
    processes: int,
    url: str,
    streams: int,
    settings: Settings,
    *,
    paced: bool,
    server_pid: int | None,
) -> Level:
    """The level's streams split over `processes` worker processes, all starting at one moment
    of the shared clock; their tallies merge into one level."""
    start_at_ns = time.perf_counter_ns() + int(SHARD_START_LEAD_S * 1e9)
    jobs = [
        (
            url,
            settings,
            paced,
            range(streams * i // processes, streams * (i + 1) // processes),
            streams,
            settings.max_requests // processes,
            start_at_ns,
        )
        for i in range(processes)
    ]
    before = server_cpu_s(server_pid)
    tallies = list(pool.map(_shard, jobs))
    after = server_cpu_s(server_pid)
    server_s = after - before if after is not None and before is not None else None
    if server_s is not None:  # the lead before the start is idle time for the server
        server_s = max(0.0, server_s)
    return level_of(f"sparkrig×{processes}", streams, tallies, paced=paced, server_s=server_s)


# --- guidellm and aiperf, side by side (optional) ---------------------------------------------


def find_tool(given: str | None, env: str, default: Path, name: str) -> Path | None:
    if given:
        return Path(given) if Path(given).is_file() else None
    for candidate in (os.environ.get(env), str(default), shutil.which(name)):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def run_tool(
    argv: list[str], workdir: Path, timeout_s: float, *, hub_offline: bool = True
) -> tuple[int | None, str]:
    """Run a rival in its own session, so one that hangs is ended with every worker process it
    started; nothing it does may leave 127.0.0.1. aiperf 0.13 fails to load a tokenizer from a
    local folder with HF_HUB_OFFLINE set (it asks the hub to validate the path as a repo id):
    it runs with `hub_offline` off, and its tokenizer and prompts are local files."""
    offline = {"DO_NOT_TRACK": "1"}
    if hub_offline:
        offline |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    with subprocess.Popen(
        argv,
        cwd=workdir,
        env={**os.environ, **offline},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as tool:
        try:
            output, _ = tool.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            output = f"no report within {timeout_s:g}s (ended it)"
        finally:
            with contextlib.suppress(ProcessLookupError):  # workers it left behind
                os.killpg(tool.pid, signal.SIGKILL)
            tool.communicate()
    return tool.returncode, output


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def run_guidellm(
    exe: Path,
    url: str,
    streams: int,
    settings: Settings,
    *,
    workdir: Path,
    server_pid: int | None,
) -> Level | str:
    """guidellm's concurrent profile at `streams`, instant replies; its report gives the counts.
    Prompts come from a text file, so it needs no tokenizer and nothing leaves 127.0.0.1."""
    prompts = workdir / "prompts.txt"
    prompts.write_text("Say tok.\n" * settings.max_requests)
    report = workdir / f"guidellm-{streams}.json"
    argv = [
        str(exe),
        "run",
        "--backend",
        f"kind=openai_http,target={url},model={MODEL},max_tokens={settings.tokens}",
        "--profile",
        f"kind=concurrent,streams={streams}",
        "--constraint",
        f"kind=max_duration,seconds={settings.seconds:g}",
        "--constraint",
        f"kind=max_requests,count={settings.max_requests}",
        "--data",
        f"kind=text_file,path={prompts}",
        "--output",
        f"kind=json,path={report}",
        "--disable-console",
    ]
    before = server_cpu_s(server_pid)
    code, output = run_tool(argv, workdir, settings.seconds + GUIDELLM_SLACK_S)
    after = server_cpu_s(server_pid)
    if code != 0 or not report.is_file():
        return f"exited {code}: {_last_line(output)}"
    benchmark = json.loads(report.read_text())["benchmarks"][0]
    totals = benchmark["metrics"]["request_totals"]
    output_tokens = benchmark["metrics"]["output_token_count"]["successful"]["total_sum"]
    duration = benchmark["duration"]
    return Level(
        tool="guidellm",
        phase="instant",
        streams=streams,
        requests=totals["total"],
        errors=totals["errored"],  # its "incomplete" are the replies cut at the deadline
        tokens_per_s=output_tokens / duration,
        first_byte_ms=None,  # guidellm does not see the server's stamps
        per_token_ms=None,
        cpu_percent=None,  # its own processes (one per worker) are not this one
        server_cpu_percent=_server_percent(before, after, duration),
    )


def _server_percent(before: float | None, after: float | None, duration_s: float) -> float | None:
    """The server's CPU% over a rival's measured duration (it idles while the rival starts)."""
    if before is None or after is None or duration_s <= 0:
        return None
    return 100 * (after - before) / duration_s


_AIPERF_TOKENIZER = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
vocab = {"[UNK]": 0, "Say": 1, "tok": 2, ".": 3}
tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]").save_pretrained(sys.argv[1])
"""


def aiperf_tokenizer(exe: Path, workdir: Path) -> Path | str:
    """A word-level tokenizer written with aiperf's own Python: its 'builtin' one downloads
    tiktoken's vocabulary, and this run leaves 127.0.0.1 for nothing."""
    folder = workdir / "aiperf-tokenizer"
    if (folder / "tokenizer.json").is_file():
        return folder
    python = exe.parent / "python"
    code, output = run_tool([str(python), "-c", _AIPERF_TOKENIZER, str(folder)], workdir, 120)
    return folder if code == 0 else f"no tokenizer (exited {code}): {_last_line(output)}"


def run_aiperf(
    exe: Path,
    url: str,
    streams: int,
    settings: Settings,
    *,
    workdir: Path,
    server_pid: int | None,
) -> Level | str:
    """aiperf's closed loop at `streams` (`--concurrency`), instant replies, counts from the
    server's usage; its JSON export gives the tokens/s."""
    tokenizer = aiperf_tokenizer(exe, workdir)
    if isinstance(tokenizer, str):
        return tokenizer
    prompts = workdir / "aiperf-prompts.jsonl"
    prompts.write_text(json.dumps({"text": "Say tok."}) + "\n")
    artifacts = workdir / f"aiperf-{streams}"
    argv = [
        str(exe),
        "profile",
        *("--model", MODEL, "--url", url, "--endpoint-type", "chat", "--streaming"),
        *("--concurrency", str(streams), "--benchmark-duration", f"{settings.seconds:g}"),
        *("--benchmark-grace-period", f"{REQUEST_TIMEOUT_S:g}"),
        *("--request-count", str(settings.max_requests), "--osl", str(settings.tokens)),
        *("--tokenizer", str(tokenizer), "--use-server-token-count"),
        *("--input-file", str(prompts), "--custom-dataset-type", "single_turn"),
        *("--artifact-dir", str(artifacts), "--ui", "none"),
        *("--no-server-metrics", "--no-gpu-telemetry"),
    ]
    before = server_cpu_s(server_pid)
    code, output = run_tool(argv, workdir, settings.seconds + GUIDELLM_SLACK_S, hub_offline=False)
    after = server_cpu_s(server_pid)
    report = artifacts / "profile_export_aiperf.json"
    if code != 0 or not report.is_file():
        return f"exited {code}: {_last_line(output)}"
    export = json.loads(report.read_text())
    duration = export["benchmark_duration"]["avg"]
    requests = int(export["request_count"]["avg"])
    errors = int((export.get("error_request_count") or {}).get("avg", 0))
    return Level(
        tool="aiperf",
        phase="instant",
        streams=streams,
        requests=requests + errors,
        errors=errors,
        tokens_per_s=export["output_token_throughput"]["avg"],
        first_byte_ms=None,  # aiperf does not see the server's stamps
        per_token_ms=None,
        cpu_percent=None,  # its own processes are not this one
        server_cpu_percent=_server_percent(before, after, duration),
    )


# --- the run -----------------------------------------------------------------------------------


def _pair(values: tuple[float, float] | None) -> str:
    return "-" if values is None else f"{values[0]:.3f} / {values[1]:.3f}"


def print_rows(levels: list[Level], *, header: bool = True) -> None:
    if header:
        print(
            f"{'tool':<11} {'phase':<8} {'streams':>7} {'requests':>8} {'errors':>6} "
            f"{'tokens/s':>9} {'first byte p50/p99 ms':>22} {'per token p50/p99 ms':>22} "
            f"{'CPU%':>5} {'runnable':>8} {'srv%':>5} {'limit':>6}"
        )
    for level in levels:
        cpu = "-" if level.cpu_percent is None else f"{level.cpu_percent:.0f}"
        busiest = "-" if level.busiest is None else f"{level.busiest:.2f}"
        server = "-" if level.server_cpu_percent is None else f"{level.server_cpu_percent:.0f}"
        print(
            f"{level.tool:<11} {level.phase:<8} {level.streams:>7} {level.requests:>8} "
            f"{level.errors:>6} {level.tokens_per_s:>9.0f} {_pair(level.first_byte_ms):>22} "
            f"{_pair(level.per_token_ms):>22} {cpu:>5} {busiest:>8} {server:>5} {level.limit:>6}",
            flush=True,
        )


def print_verdicts(levels: list[Level]) -> None:
    """Every sparkrig column against every rival at the same level, then the latency goal."""
    ours = [lv for lv in levels if lv.tool.startswith("sparkrig")]
    targets = {"guidellm": TARGET_RATIO, "aiperf": TARGET_RATIO_AIPERF}
    for theirs in (lv for lv in levels if lv.tool in targets and lv.tokens_per_s > 0):
        for mine in ours:
            if (mine.phase, mine.streams) != ("instant", theirs.streams):
                continue
            ratio = mine.tokens_per_s / theirs.tokens_per_s
            target = targets[theirs.tool]
            print(
                f"{theirs.streams:>4} streams: {mine.tool}/{theirs.tool} tokens/s = {ratio:.2f}x "
                f"(target {target:g}x: {'met' if ratio >= target else 'NOT met'})"
            )
    for mine in ours:
        if (mine.phase, mine.streams) != ("poisson", TARGET_STREAMS):
            continue
        pair = mine.per_token_ms
        verdict = "met" if pair is not None and pair[1] <= TARGET_P99_MS else "NOT met"
        print(
            f"poisson, {TARGET_STREAMS} streams open on average "
            f"({mine.requests} requests at Poisson times): per token added p50/p99 "
            f"{_pair(pair)} ms (target <= {TARGET_P99_MS:g} ms: {verdict}); first byte "
            f"{_pair(mine.first_byte_ms)} ms; sent late against the schedule "
            f"{_pair(mine.late_ms)} ms (limit: {mine.limit})"
        )
    for mine in ours:
        if mine.phase not in ("staggered", "replay") or mine.streams != TARGET_STREAMS:
            continue
        pair = mine.per_token_ms
        added = "" if pair is None else f"per token added {_pair(pair)} ms; "
        print(
            f"{mine.phase}, {TARGET_STREAMS} streams open on average ({mine.requests} requests, "
            f"{mine.tool}): {added}sent late against the schedule {_pair(mine.late_ms)} ms"
        )
    for mine in ours:
        if (mine.phase, mine.streams) != ("paced", TARGET_STREAMS):
            continue
        for name, pair in (("first byte", mine.first_byte_ms), ("per token", mine.per_token_ms)):
            verdict = "met" if pair is not None and pair[1] <= TARGET_P99_MS else "NOT met"
            print(
                f"paced, {TARGET_STREAMS} streams, {mine.tool}: {name} added p50/p99 "
                f"{_pair(pair)} ms (target <= {TARGET_P99_MS:g} ms: {verdict}; limit: "
                f"{mine.limit})"
            )


@dataclass(frozen=True)
class Rival:
    name: str
    exe: Path | None
    where: str

    def skipped(self) -> str | None:
        if self.exe is not None:
            return None
        return f"{self.name} column skipped: not found ({self.where}) — install it in its own venv"


def find_rivals(guidellm: str | None, aiperf: str | None) -> list[Rival]:
    return [
        Rival(
            "guidellm",
            find_tool(guidellm, GUIDELLM_ENV, GUIDELLM_DEFAULT, "guidellm"),
            f"--guidellm, ${GUIDELLM_ENV}, {GUIDELLM_DEFAULT} or PATH",
        ),
        Rival(
            "aiperf",
            find_tool(aiperf, AIPERF_ENV, AIPERF_DEFAULT, "aiperf"),
            f"--aiperf, ${AIPERF_ENV}, {AIPERF_DEFAULT} or PATH",
        ),
    ]


def run_level(
    pool: ProcessPoolExecutor | None,
    url: str,
    streams: int,
    settings: Settings,
    *,
    rivals: list[Rival],
    workdir: Path,
    server_pid: int | None,
    notes: list[str],
) -> list[Level]:
    levels: list[Level] = []
    processes = shard_count(streams, settings)
    for paced in (False, True):
        levels.append(run_sparkrig(url, streams, settings, paced=paced, server_pid=server_pid))
        print_rows(levels[-1:], header=False)
        if pool is not None and processes > 1:
            sharded = run_sharded(
                pool, processes, url, streams, settings, paced=paced, server_pid=server_pid
            )
            levels.append(sharded)
            print_rows(levels[-1:], header=False)
    for shards in sorted({1, processes}):
        poisson = run_poisson(url, streams, settings, processes=shards, server_pid=server_pid)
        levels.append(poisson)
        print_rows(levels[-1:], header=False)
    staggered = run_poisson(
        url, streams, settings, processes=1, server_pid=server_pid, process="staggered"
    )
    levels.append(staggered)
    print_rows(levels[-1:], header=False)
    levels.append(run_replay(url, streams, settings, server_pid=server_pid))
    print_rows(levels[-1:], header=False)
    for rival in rivals:
        if rival.exe is None:
            continue
        runner = run_guidellm if rival.name == "guidellm" else run_aiperf
        result = runner(rival.exe, url, streams, settings, workdir=workdir, server_pid=server_pid)
        if isinstance(result, str):
            notes.append(f"{rival.name} at {streams} streams: {result}")
            print(notes[-1], flush=True)
        else:
            levels.append(result)
            print_rows(levels[-1:], header=False)
    return levels


def main(settings: Settings, guidellm_path: str | None, aiperf_path: str | None) -> None:
    require_shared_clock()
    rivals = find_rivals(guidellm_path, aiperf_path)
    notes = [skip for rival in rivals if (skip := rival.skipped()) is not None]
    most = max(shard_count(streams, settings) for streams in settings.levels)
    if most == 1:
        notes.append(
            "sparkrig×N column skipped: no level needs more than one client process here "
            f"({usable_cores()} cores, {defaults.BENCH_CLIENT_STREAMS_PER_PROCESS} streams a "
            "process) — raise --levels or force --client-processes"
        )
    levels: list[Level] = []
    phase_s = settings.seconds + REQUEST_TIMEOUT_S
    per_level_s = 8 * phase_s + 2 * GUIDELLM_SLACK_S  # every column, both rivals
    lifetime_s = len(settings.levels) * per_level_s + SERVER_START_TIMEOUT_S
    process, url = start_server(
        ServerSettings(settings.tokens, settings.paced_tokens, settings.pace_ms, lifetime_s)
    )
    context = multiprocessing.get_context("spawn")
    try:
        print(
            f"loopback server {url} (pid {process.pid}), {usable_cores()} cores; instant: "
            f"{settings.tokens} tokens a reply; paced: {settings.paced_tokens} tokens, one per "
            f"{settings.pace_ms:g} ms; each phase {settings.seconds:g}s or "
            f"{settings.max_requests} requests",
            flush=True,
        )
        for note in notes:
            print(note, flush=True)
        print_rows([])
        with (
            tempfile.TemporaryDirectory(prefix="loadgen-") as workdir,
            ProcessPoolExecutor(most, mp_context=context)
            if most > 1
            else contextlib.nullcontext() as pool,
        ):
            for streams in settings.levels:
                levels += run_level(
                    pool,
                    url,
                    streams,
                    settings,
                    rivals=rivals,
                    workdir=Path(workdir),
                    server_pid=process.pid,
                    notes=notes,
                )
    finally:
        stop_server(process)
    print()
    print_rows(levels)
    print_verdicts(levels)
    for note in notes:
        print(note)


def _levels(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=_levels, default=list(LEVELS), help="e.g. 1,16,64,256")
    parser.add_argument("--seconds", type=float, default=LEVEL_SECONDS, help="per phase")
    parser.add_argument("--max-requests", type=int, default=MAX_REQUESTS_PER_LEVEL)
    parser.add_argument("--tokens", type=int, default=TOKENS_PER_REPLY, help="instant reply")
    parser.add_argument("--paced-tokens", type=int, default=PACED_TOKENS_PER_REPLY)
    parser.add_argument("--pace-ms", type=float, default=PACE_MS, help="paced: ms per token")
    parser.add_argument("--guidellm", help="guidellm executable, in its own venv")
    parser.add_argument("--aiperf", help="aiperf executable, in its own venv")
    parser.add_argument(
        "--client-processes",
        type=int,
        help="sparkrig×N: this many processes at every level (default: the bench's rule)",
    )
    parser.add_argument(
        "--keep-records", action="store_true", help="keep every RequestRecord, as a bench run does"
    )
    args = parser.parse_args()
    settings = Settings(
        args.levels,
        args.seconds,
        args.max_requests,
        args.tokens,
        args.paced_tokens,
        args.pace_ms,
        args.keep_records,
        args.client_processes,
    )
    main(settings, args.guidellm, args.aiperf)
