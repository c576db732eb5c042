"""Servers that lack parts: the bench degrades and says what is missing, or refuses in one line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web

from sparkrig.bench.point import BenchSettings
from sparkrig.bench.run import run_bench
from tests.conftest import SPARKRIG
from tests.http_servers import serve_app

pytestmark = pytest.mark.asyncio(loop_scope="session")
TOKENS = 12


def sse(chunk: dict[str, object]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def bare_chat(request: web.Request) -> web.StreamResponse:
    """OpenAI-compatible streaming chat, without /metrics or /tokenize; model `known` only."""
    body = await request.json()
    if body.get("model") != "known":
        return web.json_response({"error": {"message": "model not found"}}, status=404)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for index in range(1, TOKENS + 1):
        await asyncio.sleep(0.002)
        chunk = {"choices": [{"index": 0, "delta": {"content": f" w{index}"}}]}
        await response.write(sse({**chunk, "timings": {"predicted_n": index}}))
    await response.write(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}))
    usage = {"prompt_tokens": 5, "completion_tokens": TOKENS, "total_tokens": TOKENS + 5}
    await response.write(sse({"choices": [], "usage": usage}))
    await response.write(b"data: [DONE]\n\n")
    return response


async def models(request: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "known"}]})


async def web_page(request: web.Request) -> web.Response:
    return web.Response(text="<html><body>router login</body></html>", content_type="text/html")


@pytest_asyncio.fixture(loop_scope="session")
async def bare_server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", bare_chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/page/v1/models", web_page)
    async with serve_app(app) as url:
        yield url


async def test_without_metrics_or_tokenize_the_bench_runs_and_says_so(
    bare_server: str, tmp_path: Path
) -> None:
    settings = BenchSettings(max_samples=2, decode_tokens=TOKENS, prefill_depths=[32], rounds=1)
    receipt = await run_bench(
        bare_server, suites=["decode", "prefill"], settings=settings, out_path=tmp_path / "r.json"
    )
    text = " ".join(receipt.warnings)
    assert "no /metrics" in text
    assert "/tokenize" in text
    decode = [point for point in receipt.points if point.suite == "decode"]
    assert all(point.summary is not None for point in decode)
    point_warnings = " ".join(w for point in decode for w in point.warnings)
    assert "idle check" in point_warnings


async def test_a_model_that_404s_discards_samples_with_the_reason(
    bare_server: str, tmp_path: Path
) -> None:
    receipt = await run_bench(
        bare_server,
        suites=["decode"],
        settings=BenchSettings(max_samples=2, warmup_requests=0, rounds=1),
        out_path=tmp_path / "r.json",
        model="missing",
    )
    point = receipt.points[0]
    assert point.summary is None
    assert "HTTP 404" in point.discarded[0].reason
    assert any("discarded samples in a row" in warning for warning in point.warnings)


async def test_a_url_that_is_not_an_openai_server_is_one_line(
    bare_server: str, tmp_path: Path
) -> None:
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(tmp_path / "state")}
    process = await asyncio.create_subprocess_exec(
        SPARKRIG,
        "bench",
        f"{bare_server}/page",
        "--out",
        str(tmp_path / "r.json"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    lines = stderr.decode().strip().splitlines()
    assert process.returncode != 0
    assert len(lines) == 1, lines
    assert "/v1/models" in lines[0]
    assert " — " in lines[0]
