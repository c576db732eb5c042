"""The bench client on the bytes vLLM 0.26.0's own chat endpoint sent for the reports' thinking
requests (tests/fixtures/vllm/replay/, replayed on a CPU with a stand-in engine): every body of the
GPU test bed's twin, whole and streamed, served back byte for byte and read by EndpointClient.
The client must find the reasoning under vLLM's `reasoning` key and the answer in the content,
exactly as vLLM split them, and the token count vLLM's usage gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from sparkrig.client import ChatRequest, EndpointClient
from tests.http_servers import serve_app

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "tests/fixtures/vllm/replay/think-0.26.0.json").read_text())
ROWS = [row for row in RECORD["rows"] if row["server"] == "testbed"]


def usage_tokens(body: str) -> int:
    if not body.startswith("data: "):
        return int(json.loads(body)["usage"]["completion_tokens"])
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    return int(next(e["usage"] for e in reversed(events) if e.get("usage"))["completion_tokens"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("row", ROWS, ids=lambda row: row["ask"])
async def test_the_client_reads_vllms_reasoning_and_content(
    row: dict[str, Any], stream: bool
) -> None:
    body = row["stream_body"] if stream else row["whole_body"]
    kind = "text/event-stream" if stream else "application/json"

    async def chat(_: web.Request) -> web.Response:
        return web.Response(body=body.encode(), content_type=kind)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    request = ChatRequest(
        model="smollm2", messages=[{"role": "user", "content": "What's 1 + 1?"}], stream=stream
    )
    async with serve_app(app) as url, EndpointClient(url) as client:
        record = await client.send(request)
    split = row["stream"] if stream else row["whole"]
    assert record.ok, record.error
    assert (record.reasoning, record.content) == (split["reasoning"] or "", split["content"] or "")
    assert record.reasoning_source == ("reasoning" if split["reasoning"] else None)
    assert record.finish_reason == row["finish_reason"]
    assert record.completion_tokens == usage_tokens(body)
