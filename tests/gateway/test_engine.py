"""The gateway in front of the real llama-server: transparent with no fault, and merged events
that a correct client still counts right."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.launch.local import LocalInstance
from tests.gateway.replies import Reply, chat, completion, send

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

PROMPT = "List four fruits, one per line, with their colours."
# llama-server reuses a cached prefix, which changes usage.prompt_tokens_details; every request
# here prefills in full, so the direct and the proxied request do the same work
NO_CACHE = {"cache_prompt": False}


def _essentials(reply: Reply) -> dict[str, Any]:
    if reply.streamed:
        usage = next(chunk["usage"] for chunk in reply.chunks if chunk.get("usage"))
    else:
        assert reply.body is not None
        usage = reply.body["usage"]
    return {
        "content": reply.content,
        "finish_reason": reply.finish_reason,
        "logprobs": reply.logprobs,
        "usage": usage,
    }


async def test_no_fault_is_transparent(llama_server: LocalInstance) -> None:
    bodies = [
        (
            "/v1/chat/completions",
            chat(PROMPT, stream=True, max_tokens=40, logprobs=True, top_logprobs=2, **NO_CACHE),
        ),
        (
            "/v1/chat/completions",
            chat(PROMPT, stream=False, max_tokens=40, logprobs=True, top_logprobs=2, **NO_CACHE),
        ),
        (
            "/v1/completions",
            completion(
                "1, 2, 3,",
                stream=True,
                max_tokens=12,
                logprobs=2,
                stream_options={"include_usage": True},
                **NO_CACHE,
            ),
        ),
        ("/v1/completions", completion("1, 2, 3,", stream=False, max_tokens=12, **NO_CACHE)),
    ]
    async with running_gateway(llama_server.base_url) as url:
        for path, body in bodies:
            direct = await send(llama_server.base_url, body, path)
            proxied = await send(url, body, path)
            assert _essentials(proxied) == _essentials(direct), (path, body["stream"])
            assert direct.content
        models_direct = await send_get(llama_server.base_url, "/v1/models")
        models_proxied = await send_get(url, "/v1/models")
    assert models_proxied == models_direct


async def send_get(url: str, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url + path) as response:
        return response.status, await response.text()


async def test_merged_events_keep_the_client_token_count(llama_server: LocalInstance) -> None:
    request = ChatRequest(
        model=llama_server.alias,
        messages=[{"role": "user", "content": "Count from 1 to 30."}],
        max_tokens=60,
        extra=NO_CACHE,
    )
    async with EndpointClient(llama_server.base_url) as client:
        direct = await client.send(request)
    config = GatewayConfig(faults=[Fault.MERGED_EVENTS])
    async with running_gateway(llama_server.base_url, config) as url, EndpointClient(url) as client:
        merged = await client.send(request)
    assert merged.error is None
    assert merged.content == direct.content
    assert merged.token_source == direct.token_source == "per_event_timings"
    assert merged.completion_tokens == direct.completion_tokens
    assert len(merged.output_events) < len(direct.output_events)


async def test_reasoning_emulation_splits_streamed_and_whole_replies_alike(
    llama_server: LocalInstance,
) -> None:
    config = GatewayConfig(emulate_reasoning=True, reasoning_chars=30)
    requests = [
        ChatRequest(
            model=llama_server.alias,
            messages=[{"role": "user", "content": "Count from 1 to 30."}],
            max_tokens=80,
            stream=stream,
            extra={"stop": ["12"], **NO_CACHE},
        )
        for stream in (True, False)
    ]
    async with running_gateway(llama_server.base_url, config) as url, EndpointClient(url) as client:
        streamed, whole = [await client.send(request) for request in requests]
    assert streamed.error is None
    assert whole.error is None
    assert streamed.reasoning_source == whole.reasoning_source == "reasoning_content"
    assert len(streamed.reasoning) == 30
    assert (streamed.reasoning, streamed.content) == (whole.reasoning, whole.content)
    assert streamed.finish_reason == whole.finish_reason == "stop"
    assert "12" not in streamed.content
    assert streamed.content.rstrip().endswith("11. 11")  # the model writes "n. n" lines
