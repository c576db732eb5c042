"""Is sparkrig's client the bottleneck? Streamed tokens/s and client-added latency at rising
concurrency, against a loopback SSE server in its own process.

The server (127.0.0.1 only) answers /v1/chat/completions and /v1/completions with a
llama.cpp-shaped stream: a role chunk, content chunks each with cumulative
`timings.predicted_n`, a finish chunk, a usage chunk and `data: [DONE]`. A stamped chunk's text
is the server's CLOCK_MONOTONIC reading (ns, 20 digits) taken just before the write that sends
it. Client-added latency is the client's time minus that stamp: the record's first_byte_ns
(first byte) or each content event's t_ns (per token). Records are stamped with perf_counter_ns,
the same system-wide clock on Linux (checked at start).

Two phases per level, each a closed loop of `streams` requests bounded by --seconds and
--max-requests:
- instant: the whole reply in one write. The client is saturated by design, so tokens/s is the
  client's ceiling and first-byte latency is mostly queueing behind the other streams.
- paced (path prefix /paced): a token for every open stream every --pace-ms, all streams in
  step as a batched engine emits them; streams start spread over one reply. Latency here is
  what the client adds to its timings.
Tokens/s counts the server's token counts in complete replies over the phase's wall time; CPU%
is this process only (the server has its own). Replies are reduced to numbers as they end;
--keep-records keeps them all, as a bench run does, to show what their garbage collection
costs. If guidellm is installed in its own venv (--guidellm, $SPARKRIG_GUIDELLM, or
/tmp/guidellm-venv), it runs the instant phase at each level against the same server, and the
ratio is printed.

Run: .venv/bin/python benchmarks/loadgen.py [--levels 1,16,64,256] [--seconds 10]
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
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from sparkrig.client import ChatRequest, EndpointClient, RequestRecord

HOST = "127.0.0.1"
MODEL = "loadgen"
PACED_PREFIX = "/paced"
LEVELS = (1, 16, 64, 256)
LEVEL_SECONDS = 10.0
MAX_REQUESTS_PER_LEVEL = 20_000
TOKENS_PER_REPLY = 256
PACED_TOKENS_PER_REPLY = 64  # 64 x 20 ms: several replies per stream in a 10 s level
PACE_MS = 20.0  # 50 tokens/s per stream
TARGET_RATIO = 2.0  # sustained tokens/s over guidellm's, same server, same cores
TARGET_P99_MS = 1.0  # client-added latency at TARGET_STREAMS
TARGET_STREAMS = 256
REQUEST_TIMEOUT_S = 60.0
SERVER_START_TIMEOUT_S = 30.0
SERVER_STOP_TIMEOUT_S = 5.0
GUIDELLM_ENV = "SPARKRIG_GUIDELLM"
GUIDELLM_DEFAULT = Path(tempfile.gettempdir()) / "guidellm-venv" / "bin" / "guidellm"
GUIDELLM_SLACK_S = 120.0  # its start-up, data loading and report, on top of --seconds
STAMP_DIGITS = 20
_STAMP_MARK = "#" * STAMP_DIGITS
_HEADER_LIMIT = 64 * 1024
_NS_PER_MS = 1_000_000


# --- the loopback server (runs in a child process) ---------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One HTTP reply rendered once: head (status, headers, role chunk), the stamped token
    events split around their stamp, and the rest (unstamped tokens, finish, usage, [DONE])."""

    head: bytes
    stamped: list[tuple[bytes, bytes]]
    rest: bytes


def _event(api: str, choices: list[dict[str, Any]], **extra: Any) -> str:
    """One SSE event as one HTTP chunk, in the shape and field order the bundled llama-server
    sends (captured from it with timings_per_token and include_usage)."""
    chat = api == "chat"
    chunk = {
        "choices": choices,
        "created": 1_764_000_000,
        "id": ("chatcmpl-" if chat else "cmpl-") + "pJeYQ5PjXe0lXawA4BpZ3Od8gofAfdEw",
        "model": MODEL,
        "system_fingerprint": "b1-0c1e570",
        "object": "chat.completion.chunk" if chat else "text_completion",
        **extra,
    }
    return _http_chunk("data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n")


def _http_chunk(text: str) -> str:
    return f"{len(text.encode()):x}\r\n{text}\r\n"


def _choice(api: str, text: str | None, finish: str | None = None) -> dict[str, Any]:
    if api == "chat":
        delta = {"role": "assistant", "content": None} if text is None else {"content": text}
        return {"finish_reason": finish, "index": 0, "delta": {} if finish else delta}
    return {"text": text or "", "index": 0, "logprobs": None, "finish_reason": finish}


def _timings(predicted_n: int) -> dict[str, Any]:
    return {
        "cache_n": 0,
        "prompt_n": 32,
        "prompt_ms": 139.692,
        "prompt_per_token_ms": 4.365375,
        "prompt_per_second": 229.07539443919478,
        "predicted_n": predicted_n,
        "predicted_ms": predicted_n * 7.406,
        "predicted_per_token_ms": 7.406,
        "predicted_per_second": 135.02565487442615,
    }


def render_reply(api: str, tokens: int, *, paced: bool) -> Reply:
    """Instant: only the first token is a stamp (the others say " tok"); paced: every one is."""
    role = [_event(api, [_choice(api, None)])] if api == "chat" else []
    token_events = [
        _event(api, [_choice(api, _STAMP_MARK if paced or n == 1 else " tok")], timings=_timings(n))
        for n in range(1, tokens + 1)
    ]
    usage = {
        "completion_tokens": tokens,
        "prompt_tokens": 32,
        "total_tokens": 32 + tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    tail = (
        _event(api, [_choice(api, None, "stop")])
        + _event(api, [], usage=usage, timings=_timings(tokens))
        + _http_chunk("data: [DONE]\n\n")
        + "0\r\n\r\n"  # the last HTTP chunk
    )
    head = (
        b"HTTP/1.1 200 OK\r\nServer: loadgen\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n"
    ) + "".join(role).encode()
    mark = _STAMP_MARK.encode()
    stamped = [event.encode().partition(mark) for event in token_events if _STAMP_MARK in event]
    unstamped = "".join(event for event in token_events if _STAMP_MARK not in event)
    return Reply(
        head, [(before, after) for before, _, after in stamped], (unstamped + tail).encode()
    )


def _stamp() -> bytes:
    return b"%020d" % time.monotonic_ns()


def _json_reply(status: str, payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    return head.encode() + b"\r\n\r\n" + body


class Pacer:
    """Every `interval_s`, one token event to every open paced stream, each stamped as written."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.streams: dict[asyncio.Transport, tuple[Reply, int, bool]] = {}

    def add(self, transport: asyncio.Transport, reply: Reply, close: bool) -> None:
        self.streams[transport] = (reply, 1, close)

    async def run(self, lifetime_s: float, parent_pid: int) -> None:
        """Until `lifetime_s` is up or the benchmark that started this server has gone."""
        loop = asyncio.get_running_loop()
        next_step, stop_at = loop.time(), loop.time() + lifetime_s
        while next_step < stop_at and os.getppid() == parent_pid:
            next_step += self.interval_s
            await asyncio.sleep(max(0.0, next_step - loop.time()))
            for transport, (reply, index, close) in list(self.streams.items()):
                if transport.is_closing():
                    del self.streams[transport]
                    continue
                before, after = reply.stamped[index]
                last = index + 1 == len(reply.stamped)
                transport.write(before + _stamp() + after + (reply.rest if last else b""))
                if not last:
                    self.streams[transport] = (reply, index + 1, close)
                    continue
                del self.streams[transport]
                if close:
                    transport.close()


class LoopbackSse(asyncio.Protocol):
    """HTTP/1.1 keep-alive, requests with Content-Length bodies: enough for aiohttp and httpx."""

    def __init__(self, routes: dict[str, Reply], pacer: Pacer) -> None:
        self.routes = routes
        self.pacer = pacer
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip().lower()
            size = end + 4 + int(headers.get("content-length", "0"))
            if len(self.buffer) < size:
                return
            del self.buffer[:size]
            method, _, target = lines[0].partition(" ")
            path = target.partition(" ")[0].partition("?")[0]
            self._answer(method, path, close="close" in headers.get("connection", ""))
        if len(self.buffer) > _HEADER_LIMIT:
            self.transport.close()

    def _answer(self, method: str, path: str, close: bool) -> None:
        assert self.transport is not None
        reply = self.routes.get(path) if method == "POST" else None
        if reply is not None:
            before, after = reply.stamped[0]
            if path.startswith(PACED_PREFIX) and len(reply.stamped) > 1:
                self.transport.write(reply.head + before + _stamp() + after)
                self.pacer.add(self.transport, reply, close)
                return
            self.transport.write(reply.head + before + _stamp() + after + reply.rest)
        elif method == "GET" and path in ("/v1/models", f"{PACED_PREFIX}/v1/models"):
            models = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
            self.transport.write(_json_reply("200 OK", models))
        elif method == "GET" and path == "/health":
            self.transport.write(_json_reply("200 OK", {"status": "ok"}))
        else:
            self.transport.write(_json_reply("404 Not Found", {"error": f"no {method} {path}"}))
        if close:
            self.transport.close()


def serve(port_out: Connection, settings: Settings, parent_pid: int) -> None:
    """Child-process entry: bind 127.0.0.1 on a free port, report it, answer until ended."""
    routes = {}
    for api, path in (("chat", "/v1/chat/completions"), ("completions", "/v1/completions")):
        routes[path] = render_reply(api, settings.tokens, paced=False)
        routes[PACED_PREFIX + path] = render_reply(api, settings.paced_tokens, paced=True)
    phase_s = settings.seconds + REQUEST_TIMEOUT_S
    lifetime_s = len(settings.levels) * (3 * phase_s + GUIDELLM_SLACK_S) + SERVER_START_TIMEOUT_S

    async def run() -> None:
        pacer = Pacer(settings.pace_ms / 1000)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((HOST, 0))
        server = await asyncio.get_running_loop().create_server(
            lambda: LoopbackSse(routes, pacer), sock=sock, backlog=4096
        )
        port_out.send(sock.getsockname()[1])
        async with server:
            await pacer.run(lifetime_s, parent_pid)

    asyncio.run(run())


def start_server(settings: Settings) -> tuple[BaseProcess, str]:
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=serve, args=(send, settings, os.getpid()), daemon=True)
    process.start()
    if not receive.poll(SERVER_START_TIMEOUT_S):
        stop_server(process)
        raise SystemExit(f"the loopback server did not start in {SERVER_START_TIMEOUT_S:g}s")
    return process, f"http://{HOST}:{receive.recv()}"


def stop_server(process: BaseProcess) -> None:
    process.terminate()
    process.join(SERVER_STOP_TIMEOUT_S)
    if process.is_alive():
        process.kill()
        process.join(SERVER_STOP_TIMEOUT_S)


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


async def run_sparkrig(url: str, streams: int, settings: Settings, *, paced: bool) -> Level:
    """Each reply is checked and reduced to numbers as it completes; records are kept only with
    --keep-records, as a caller that keeps them all (and pays for their garbage collection)."""
    expected = settings.paced_tokens if paced else settings.tokens
    request = ChatRequest(
        model=MODEL, messages=[{"role": "user", "content": "Say tok."}], max_tokens=expected
    )
    kept: list[RequestRecord] = []
    tokens: list[int] = []
    first_byte: list[float] = []
    per_token: list[float] = []
    issued = 0
    async with EndpointClient(
        url + (PACED_PREFIX if paced else ""), timeout_s=REQUEST_TIMEOUT_S
    ) as client:
        start, cpu_start = time.perf_counter(), time.process_time()
        deadline = start + settings.seconds

        def tally(record: RequestRecord) -> None:  # no stream holds a record while it waits
            if settings.keep_records:
                kept.append(record)
            if record.ok and record.completion_tokens == expected:
                tokens.append(expected)
                if (first := first_byte_ms(record)) is not None:
                    first_byte.append(first)
                if paced:  # the first token came with the head: it is the first byte's
                    per_token.extend(per_token_ms(record)[1:])

        async def stream_until_deadline(start_after_s: float) -> None:
            nonlocal issued
            await asyncio.sleep(start_after_s)
            while issued < settings.max_requests and time.perf_counter() < deadline:
                issued += 1
                tally(await client.send(request))

        # paced streams start spread over one reply, or every reply would end in the same step
        # and the next ones start together: a burst no engine with mixed lengths makes
        spread_s = settings.paced_tokens * settings.pace_ms / 1000 / streams if paced else 0.0
        await asyncio.gather(*(stream_until_deadline(i * spread_s) for i in range(streams)))
        wall_s = time.perf_counter() - start
        cpu_s = time.process_time() - cpu_start
    return Level(
        tool="sparkrig",
        phase="paced" if paced else "instant",
        streams=streams,
        requests=issued,
        errors=issued - len(tokens),
        tokens_per_s=sum(tokens) / wall_s,
        first_byte_ms=p50_p99(first_byte),
        per_token_ms=p50_p99(per_token),
        cpu_percent=100 * cpu_s / wall_s,
    )


# --- guidellm, side by side (optional) ---------------------------------------------------------


def find_guidellm(given: str | None) -> Path | None:
    if given:
        return Path(given) if Path(given).is_file() else None
    for candidate in (
        os.environ.get(GUIDELLM_ENV),
        str(GUIDELLM_DEFAULT),
        shutil.which("guidellm"),
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def run_guidellm(
    exe: Path, url: str, streams: int, settings: Settings, workdir: Path
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
    offline = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "DO_NOT_TRACK": "1"}
    # its own session, so a guidellm that hangs is ended with every worker process it started
    with subprocess.Popen(
        argv,
        cwd=workdir,
        env={**os.environ, **offline},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as guidellm:
        try:
            output, _ = guidellm.communicate(timeout=settings.seconds + GUIDELLM_SLACK_S)
        except subprocess.TimeoutExpired:
            output = f"no report within {settings.seconds + GUIDELLM_SLACK_S:g}s (ended it)"
        finally:
            with contextlib.suppress(ProcessLookupError):  # workers it left behind
                os.killpg(guidellm.pid, signal.SIGKILL)
            guidellm.communicate()
    if guidellm.returncode != 0 or not report.is_file():
        last = output.strip().splitlines()[-1:] or ["no output"]
        return f"exited {guidellm.returncode}: {last[0]}"
    benchmark = json.loads(report.read_text())["benchmarks"][0]
    totals = benchmark["metrics"]["request_totals"]
    output_tokens = benchmark["metrics"]["output_token_count"]["successful"]["total_sum"]
    return Level(
        tool="guidellm",
        phase="instant",
        streams=streams,
        requests=totals["total"],
        errors=totals["errored"],  # its "incomplete" are the replies cut at the deadline
        tokens_per_s=output_tokens / benchmark["duration"],
        first_byte_ms=None,  # guidellm does not see the server's stamps
        per_token_ms=None,
        cpu_percent=None,  # its own processes (one per worker) are not this one
    )


# --- the run -----------------------------------------------------------------------------------


def _pair(values: tuple[float, float] | None) -> str:
    return "-" if values is None else f"{values[0]:.3f} / {values[1]:.3f}"


def print_rows(levels: list[Level], *, header: bool = True) -> None:
    if header:
        print(
            f"{'tool':<9} {'phase':<8} {'streams':>7} {'requests':>8} {'errors':>6} "
            f"{'tokens/s':>9} {'first byte p50/p99 ms':>22} {'per token p50/p99 ms':>22} "
            f"{'CPU%':>5}"
        )
    for level in levels:
        cpu = "-" if level.cpu_percent is None else f"{level.cpu_percent:.0f}"
        print(
            f"{level.tool:<9} {level.phase:<8} {level.streams:>7} {level.requests:>8} "
            f"{level.errors:>6} {level.tokens_per_s:>9.0f} {_pair(level.first_byte_ms):>22} "
            f"{_pair(level.per_token_ms):>22} {cpu:>5}",
            flush=True,
        )


def print_verdicts(levels: list[Level]) -> None:
    mine = {(lv.phase, lv.streams): lv for lv in levels if lv.tool == "sparkrig"}
    for theirs in (lv for lv in levels if lv.tool == "guidellm" and lv.tokens_per_s > 0):
        ours = mine.get(("instant", theirs.streams))
        if ours is not None:
            ratio = ours.tokens_per_s / theirs.tokens_per_s
            verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
            print(
                f"{theirs.streams:>4} streams: sparkrig/guidellm tokens/s = {ratio:.2f}x "
                f"(target {TARGET_RATIO:g}x: {verdict})"
            )
    paced = mine.get(("paced", TARGET_STREAMS))
    if paced is not None:
        for name, pair in (("first byte", paced.first_byte_ms), ("per token", paced.per_token_ms)):
            verdict = "met" if pair is not None and pair[1] <= TARGET_P99_MS else "NOT met"
            print(
                f"paced, {TARGET_STREAMS} streams: {name} added p50/p99 {_pair(pair)} ms "
                f"(target <= {TARGET_P99_MS:g} ms: {verdict})"
            )


def main(settings: Settings, guidellm_path: str | None) -> None:
    require_shared_clock()
    guidellm = find_guidellm(guidellm_path)
    levels: list[Level] = []
    process, url = start_server(settings)
    try:
        print(
            f"loopback server {url} (pid {process.pid}), {os.cpu_count()} cores; instant: "
            f"{settings.tokens} tokens a reply; paced: {settings.paced_tokens} tokens, one per "
            f"{settings.pace_ms:g} ms; each phase {settings.seconds:g}s or "
            f"{settings.max_requests} requests",
            flush=True,
        )
        if guidellm is None:
            print(
                f"guidellm not found (--guidellm, ${GUIDELLM_ENV}, {GUIDELLM_DEFAULT} or PATH): "
                "no side-by-side ratio — install it in its own venv to compare"
            )
        print_rows([])
        with tempfile.TemporaryDirectory(prefix="loadgen-") as workdir:
            for streams in settings.levels:
                for paced in (False, True):
                    level = asyncio.run(run_sparkrig(url, streams, settings, paced=paced))
                    print_rows([level], header=False)
                    levels.append(level)
                if guidellm is not None:
                    result = run_guidellm(guidellm, url, streams, settings, Path(workdir))
                    if isinstance(result, str):
                        print(f"guidellm at {streams} streams: {result}", flush=True)
                    else:
                        print_rows([result], header=False)
                        levels.append(result)
    finally:
        stop_server(process)
    print()
    print_rows(levels)
    print_verdicts(levels)


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
    )
    main(settings, args.guidellm)
