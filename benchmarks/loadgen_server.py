"""The loopback SSE server of benchmarks/loadgen.py, run in a child process of its own.

It answers /v1/chat/completions and /v1/completions with a llama.cpp-shaped stream: a role
chunk, content chunks each with cumulative `timings.predicted_n`, a finish chunk, a usage chunk
and `data: [DONE]`. A stamped chunk's text is the server's CLOCK_MONOTONIC reading (ns, 20
digits) taken just before the write that sends it. Under the path prefix /paced, every open
stream gets a token every `pace_ms`, all in step, as a batched engine emits them.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import socket
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

HOST = "127.0.0.1"
MODEL = "loadgen"
PACED_PREFIX = "/paced"
SERVER_START_TIMEOUT_S = 30.0
SERVER_STOP_TIMEOUT_S = 5.0
STAMP_DIGITS = 20
_STAMP_MARK = "#" * STAMP_DIGITS
_HEADER_LIMIT = 64 * 1024


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


@dataclass(frozen=True)
class ServerSettings:
    tokens: int  # an instant reply's tokens
    paced_tokens: int  # a paced reply's tokens
    pace_ms: float  # paced: one token every this many ms
    lifetime_s: float  # the server ends itself after this, whatever happens to its parent


def serve(port_out: Connection, settings: ServerSettings, parent_pid: int) -> None:
    """Child-process entry: bind 127.0.0.1 on a free port, report it, answer until ended."""
    routes = {}
    for api, path in (("chat", "/v1/chat/completions"), ("completions", "/v1/completions")):
        routes[path] = render_reply(api, settings.tokens, paced=False)
        routes[PACED_PREFIX + path] = render_reply(api, settings.paced_tokens, paced=True)

    async def run() -> None:
        pacer = Pacer(settings.pace_ms / 1000)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((HOST, 0))
        server = await asyncio.get_running_loop().create_server(
            lambda: LoopbackSse(routes, pacer), sock=sock, backlog=4096
        )
        port_out.send(sock.getsockname()[1])
        async with server:
            await pacer.run(settings.lifetime_s, parent_pid)

    asyncio.run(run())


def start_server(settings: ServerSettings) -> tuple[BaseProcess, str]:
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
