"""`gateway serve` in front of vLLM 0.26.0's own bytes for the reports' thinking requests, spoken to
with the official `openai` client.

The upstream answers each request with the body vLLM's chat endpoint sent for it in the CPU replay
(tests/fixtures/vllm/replay/: `OpenAIServingChat` with a stand-in engine, `whole_body` or
`stream_body` by the request's `stream`). Every row of the GPU test bed's twin (`testbed`) goes
through, and the DeepSeek V4 rows where a contradictory ask meets a coherent reply, or a switch
sent as text turns thinking on against the server's default. The gateway
must relay what vLLM sent, keep the stops of every request it reads as reasoning away from the
upstream, and count a request finding exactly where the request contradicts itself, and the
switch conflict's empty content only on the whole reply that has it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from sparkrig.gateway.live_guards import (
    NONE_WITH_THINKING,
    SWITCH_CONFLICT_DETECTOR,
    TEXT_SWITCH_DETECTOR,
)
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from tests.gateway.replies import counted
from tests.http_servers import serve_app

openai = pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "tests/fixtures/vllm/replay/think-0.26.0.json").read_text())
SERVERS = RECORD["provenance"]["servers"]
ROWS = [
    row
    for row in RECORD["rows"]
    if row["server"] == "testbed"
    or (
        row["server"] == "dsv4-thinking-default"
        and row["ask"] in ("effort-none-on", "effort-high-off")
    )
    # thinking off by the server's default, and "false" as text turns it on
    or (row["server"] == "dsv4-chat-default" and row["ask"] == "thinking-false-as-text")
]
USER = [{"role": "user", "content": "What's 1 + 1?"}]
# the requests that contradict themselves, read from the requests, not from sparkrig
CONTRADICTIONS = {
    "effort-none": NONE_WITH_THINKING,  # top-level 'none', thinking on by the server's default
    "effort-none-on": NONE_WITH_THINKING,
    "effort-none-kwargs": NONE_WITH_THINKING,
    "effort-high-off": SWITCH_CONFLICT_DETECTOR,  # its own thinking false, a top-level effort
    "effort-high-off-stream": SWITCH_CONFLICT_DETECTOR,
    "thinking-false-as-text": TEXT_SWITCH_DETECTOR,  # the renderers read the text "false" as on
}
TOP_LEVEL = ("max_tokens", "temperature", "stop", "reasoning_effort")


def row_id(row: dict[str, Any]) -> str:
    return f"{row['server']}:{row['ask']}"


def vllm_upstream(row: dict[str, Any], received: list[dict[str, Any]]) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        received.append(body)
        if body.get("stream"):
            return web.Response(body=row["stream_body"].encode(), content_type="text/event-stream")
        return web.Response(body=row["whole_body"].encode(), content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


async def ask(url: str, request: dict[str, Any], stream: bool) -> tuple[str, str]:
    """(reasoning, content) as the openai client reads them through the gateway."""
    fields = {k: v for k, v in request.items() if k in TOP_LEVEL}
    extra = {k: v for k, v in request.items() if k not in (*TOP_LEVEL, "stream", "stream_options")}
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
    async with client:
        if not stream:
            reply = await client.chat.completions.create(
                model="smollm2", messages=USER, extra_body=extra, **fields
            )
            message = reply.choices[0].message
            return str((message.model_extra or {}).get("reasoning") or ""), message.content or ""
        reasoning, content = [], []
        events = await client.chat.completions.create(
            model="smollm2", messages=USER, extra_body=extra, stream=True, **fields
        )
        async for event in events:
            for choice in event.choices:
                reasoning.append(str((choice.delta.model_extra or {}).get("reasoning") or ""))
                content.append(choice.delta.content or "")
        return "".join(reasoning), "".join(content)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("row", ROWS, ids=row_id)
async def test_the_gateway_on_vllms_own_bytes(row: dict[str, Any], stream: bool) -> None:
    defaults = SERVERS[row["server"]]["defaults"]
    received: list[dict[str, Any]] = []
    serve = ServeConfig(server_chat_template_kwargs=defaults)
    async with (
        serve_app(vllm_upstream(row, received)) as upstream,
        running_serving_gateway(upstream, serve) as (url, gateway),
    ):
        reasoning, content = await ask(url, row["request"], stream)
    sent = row["stream"] if stream else row["whole"]
    assert (reasoning, content) == (sent["reasoning"] or "", sent["content"] or "")
    if "stop" in row["request"]:  # every such request here thinks (the server's default)
        assert "stop" not in received[-1]  # held: applied to the content only
    flagged = CONTRADICTIONS.get(row["ask"])
    found = {
        name: counted(gateway, "detections", "detector", name)
        for name in (NONE_WITH_THINKING, SWITCH_CONFLICT_DETECTOR, TEXT_SWITCH_DETECTOR)
    }
    assert found == {name: float(name == flagged) for name in found}
    conflict_empty = flagged == SWITCH_CONFLICT_DETECTOR and not sent["content"]
    assert counted(gateway, "empty_content", "cause", "switch_conflict") == float(conflict_empty)
