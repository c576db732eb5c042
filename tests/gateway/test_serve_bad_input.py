"""`gateway serve` when the upstream is down, refuses, dies mid-reply or sends garbage, and when
it is told to stop (SIGTERM drains: the reply in flight finishes)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import struct
import subprocess
from collections.abc import Mapping
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from sparkrig import defaults
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.gateway.proxy import running_gateway
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.launch.local import LocalInstance, free_port
from tests.conftest import SPARKRIG
from tests.gateway.replies import chat
from tests.http_servers import serve_app
from tests.own_server import own_llama_server

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

START_TIMEOUT_S = 30


async def raw_post(url: str, body: dict[str, object]) -> tuple[int, bytes, Mapping[str, str]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/chat/completions", json=body) as response,
    ):
        return response.status, await response.read(), response.headers.copy()


def events(raw: bytes) -> list[bytes]:
    return [event for event in raw.split(b"\n\n") if event.strip()]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_upstream_that_is_down_gives_a_502_naming_it(stream: bool) -> None:
    upstream = f"http://127.0.0.1:{free_port(defaults.LOCAL_HOST)}"  # nothing listens there
    async with running_serving_gateway(upstream) as (url, gateway):
        status, raw, headers = await raw_post(url, chat("q", stream=stream))
    assert status == 502
    error = json.loads(raw)["error"]
    assert upstream in error["message"]
    assert "check the server behind the gateway is running" in error["message"]
    assert headers["X-Request-Id"]
    assert gateway.metrics.upstream_errors.labels(kind="unreachable")._value.get() == 1


async def test_a_request_the_upstream_rejects_comes_back_unchanged(
    llama_server: LocalInstance,
) -> None:
    body = {"model": "m", "messages": "not a list"}
    direct = await raw_post(llama_server.base_url, body)
    async with running_serving_gateway(llama_server.base_url) as (url, _):
        through = await raw_post(url, body)
    assert direct[0] == 400
    assert through[:2] == direct[:2]


@pytest.mark.parametrize("stretch", [0.0, 0.5])
async def test_an_upstream_dying_mid_stream_ends_the_stream_with_an_error_event(
    engine: EngineInstall, bundled_model: Path, stretch: float
) -> None:
    """With --stretch the cut is read by the stretch's reader task and raised in order."""
    async with own_llama_server(engine, bundled_model) as record:
        body = chat("Tell a very long story.", stream=True, max_tokens=2000, ignore_eos=True)
        async with (
            running_serving_gateway(record.base_url, ServeConfig(stretch=stretch)) as (
                url,
                gateway,
            ),
            aiohttp.ClientSession() as session,
            session.post(url + "/v1/chat/completions", json=body) as response,
        ):
            first = await response.content.readuntil(b"\n\n")
            os.kill(record.pid, signal.SIGKILL)  # the server dies mid-reply
            rest = await asyncio.wait_for(response.content.read(), START_TIMEOUT_S)
    assert first.startswith(b"data: ")
    last = events(rest)[-1]
    assert b"[DONE]" not in rest
    error = json.loads(last.removeprefix(b"data: "))["error"]
    assert error["type"] == "upstream_cut"
    assert record.base_url in error["message"]
    assert gateway.metrics.upstream_errors.labels(kind="cut")._value.get() == 1


# the shapes of llama-server's chat chunks (llama.cpp 0.3.36 sdist), then an event cut off
# mid-JSON as a broken proxy or a crashing server would leave it
_GOOD = b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hello"}}]}\n\n'
_BROKEN = b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"cont\n\n'


async def _garbage(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for event in (_GOOD, _BROKEN, _GOOD, b"data: [DONE]\n\n"):
        await response.write(event)
    await response.write_eof()
    return response


async def test_malformed_upstream_events_give_the_client_an_error_event_and_a_log_line(
    tmp_path: Path,
) -> None:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _garbage)
    log = tmp_path / "guards.jsonl"
    async with (
        serve_app(app) as upstream,
        running_serving_gateway(upstream, ServeConfig(guard_log=log)) as (url, gateway),
    ):
        status, raw, headers = await raw_post(url, chat("q", stream=True))
    assert status == 200
    sent = events(raw)
    assert sent[0] == _GOOD.strip()
    error = json.loads(sent[-1].removeprefix(b"data: "))["error"]
    assert error["type"] == "upstream_malformed"
    assert "not JSON" in error["message"]
    line = json.loads(log.read_text().splitlines()[0])
    assert line["detector"] == "malformed_sse"
    assert line["request_id"] == headers["X-Request-Id"]
    assert gateway.metrics.upstream_errors.labels(kind="malformed")._value.get() == 1


async def test_sigterm_drains_the_reply_in_flight(llama_server: LocalInstance) -> None:
    process = await asyncio.create_subprocess_exec(
        SPARKRIG,
        "gateway",
        "serve",
        llama_server.base_url,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        first = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT_S)
        match = re.search(r"gateway serve (http://\S+) -> ", first.decode())
        assert match, first
        url = match.group(1)
        body = chat("Tell a story about a lighthouse.", stream=True, max_tokens=48, ignore_eos=True)
        async with (
            aiohttp.ClientSession() as session,
            session.post(url + "/v1/chat/completions", json=body) as response,
        ):
            await response.content.readuntil(b"\n\n")
            process.send_signal(signal.SIGTERM)
            rest = await asyncio.wait_for(response.content.read(), START_TIMEOUT_S)
        output, _ = await asyncio.wait_for(process.communicate(), START_TIMEOUT_S)
        assert events(rest)[-1] == b"data: [DONE]"
        finish = [json.loads(e.removeprefix(b"data: ")) for e in events(rest)[:-1]]
        assert any(c["choices"] and c["choices"][0]["finish_reason"] == "length" for c in finish)
        assert process.returncode == 0
        assert "draining" in output.decode()
        with pytest.raises(aiohttp.ClientConnectionError):
            await raw_post(url, chat("q", stream=False))
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _closes_the_second_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """An upstream that answers the first request on a connection with keep-alive, then closes
    the connection when the next request arrives on it, without a reply: the moment llama.cpp's
    keep-alive timeout closes an idle connection just as a request is sent on it."""
    answered = 0
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            await reader.readexactly(length)
            if answered:
                break
            body = b'{"choices":[{"index":0,"finish_reason":"stop","message":{"content":"ok"}}]}'
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            answered += 1
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def test_a_kept_alive_connection_closed_under_a_request_is_retried_once() -> None:
    server = await asyncio.start_server(_closes_the_second_request, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with running_serving_gateway(f"http://127.0.0.1:{port}") as (url, gateway):
            first = await raw_post(url, chat("q", stream=False))
            second = await raw_post(url, chat("q", stream=False))
    finally:
        server.close()
        await server.wait_closed()
    assert first[0] == second[0] == 200
    assert gateway.metrics.upstream_errors.labels(kind="unreachable")._value.get() == 0


async def test_the_fault_gateway_retries_a_kept_alive_connection_closed_under_a_request() -> None:
    """The fault gateway (check's matrix) meets the same race: a CI run's clean row once got a
    502 from it on a generation request while llama-server was fine."""
    server = await asyncio.start_server(_closes_the_second_request, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with running_gateway(f"http://127.0.0.1:{port}") as url:
            first = await raw_post(url, chat("q", stream=False))
            second = await raw_post(url, chat("q", stream=False))
    finally:
        server.close()
        await server.wait_closed()
    assert first[0] == second[0] == 200, second[1]


async def _resets_the_second_request_mid_body(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """As `_closes_the_second_request`, but the second request's connection is reset (RST)
    as soon as its head arrives, while the body is still being written: the race seen as
    "Can not write request body" (a ClientOSError), not as a disconnect."""
    answered = 0
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if answered:
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                break
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            await reader.readexactly(length)
            body = b'{"choices":[{"index":0,"finish_reason":"stop","message":{"content":"ok"}}]}'
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            answered += 1
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def test_a_connection_reset_while_the_body_is_written_is_retried_once() -> None:
    server = await asyncio.start_server(_resets_the_second_request_mid_body, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    long_body = chat("q " * 4_000_000, stream=False)  # 8 MB: far more than a socket buffer holds
    try:
        async with running_gateway(f"http://127.0.0.1:{port}") as url:
            first = await raw_post(url, chat("q", stream=False))
            second = await raw_post(url, long_body)
    finally:
        server.close()
        await server.wait_closed()
    assert first[0] == 200
    assert second[0] == 200, second[1]
