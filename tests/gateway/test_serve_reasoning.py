"""`gateway serve` in front of a real reasoning upstream (tests/gateway/conftest.py): a stop
string inside the reasoning stays dormant, a stop in the content fires exactly where the upstream
would have fired it, streamed and not; a request that is not a reasoning one keeps its stops; the
reasoning reaches the client under both keys, from reasoning_content or from <think> tags."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.launch.local import LocalInstance
from tests.gateway.replies import Reply, chat, parse_stream, send

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

PROMPT = "Write a short story about a cat who learns to fly."
BUDGET = {"max_tokens": 40, "cache_prompt": False}  # 24 reasoning tokens, then content
STREAMED = [True, False]


def words(text: str) -> list[str]:
    return [word.strip(".,'\"") for word in text.split() if len(word.strip(".,'\"")) >= 4]


async def baseline(server: LocalInstance) -> tuple[str, str, str, str]:
    """The upstream's reply with no stop: its reasoning, content, a word only the reasoning has
    and a word only the content has (chosen from the reply, so any engine build works)."""
    reply = await send(server.base_url, chat(PROMPT, stream=False, **BUDGET))
    reasoning, content = reply.reasoning, reply.content or ""
    assert reasoning.strip(), reply.raw[:400]
    assert content.strip(), reply.raw[:400]
    in_reasoning = next(w for w in words(reasoning) if w not in content)
    in_content = next(w for w in words(content) if w not in reasoning)
    return reasoning, content, in_reasoning, in_content


def both_keys(reply: Reply) -> tuple[str, str]:
    if reply.streamed:
        deltas = [c["choices"][0].get("delta") or {} for c in reply.chunks if c.get("choices")]
        return tuple(  # type: ignore[return-value]
            "".join(d.get(key) or "" for d in deltas) for key in ("reasoning_content", "reasoning")
        )
    message = reply.choice["message"]
    return message.get("reasoning_content") or "", message.get("reasoning") or ""


@pytest.mark.parametrize("stream", STREAMED)
async def test_a_stop_inside_the_reasoning_stays_dormant(
    reasoning_server: LocalInstance, stream: bool
) -> None:
    reasoning, content, stop, _ = await baseline(reasoning_server)
    body = chat(PROMPT, stream=stream, stop=[stop], **BUDGET)
    direct = await send(reasoning_server.base_url, body)
    # the upstream alone shows the fault: the reply is cut inside its reasoning, no content
    assert (direct.content or "") == ""
    assert direct.finish_reason == "stop"
    async with running_serving_gateway(reasoning_server.base_url, ServeConfig(reasoning="on")) as (
        url,
        gateway,
    ):
        through = await send(url, body)
    assert through.reasoning == reasoning
    assert through.content == content
    assert through.finish_reason == "length"
    assert gateway.metrics.stops_held._value.get() == 1


@pytest.mark.parametrize("stream", STREAMED)
async def test_a_stop_in_the_content_fires_where_the_upstream_fires_it(
    reasoning_server: LocalInstance, stream: bool
) -> None:
    reasoning, _, _, stop = await baseline(reasoning_server)
    body = chat(PROMPT, stream=stream, stop=["zzzz-never", stop], **BUDGET)
    direct = await send(reasoning_server.base_url, body)
    assert direct.finish_reason == "stop"
    async with running_serving_gateway(reasoning_server.base_url, ServeConfig(reasoning="on")) as (
        url,
        gateway,
    ):
        through = await send(url, body)
    assert through.content == direct.content
    assert stop not in (through.content or "")
    assert through.finish_reason == "stop"
    assert through.reasoning == reasoning
    assert gateway.metrics.stops_applied._value.get() == 1


async def test_a_request_that_is_not_a_reasoning_one_keeps_its_stops(
    reasoning_server: LocalInstance,
) -> None:
    _, _, stop, _ = await baseline(reasoning_server)
    body = chat(PROMPT, stream=True, stop=[stop], **BUDGET)
    direct = await send(reasoning_server.base_url, body)
    # reasoning "auto" and a request that does not ask for reasoning: stops go to the upstream
    async with running_serving_gateway(reasoning_server.base_url, ServeConfig()) as (url, _):
        through = await send(url, body)
    assert (through.content, through.reasoning) == (direct.content, direct.reasoning)
    assert through.finish_reason == direct.finish_reason == "stop"


@pytest.mark.parametrize("stream", STREAMED)
async def test_reasoning_reaches_the_client_under_both_keys_even_from_think_tags(
    reasoning_server: LocalInstance, stream: bool
) -> None:
    reasoning, content, _, _ = await baseline(reasoning_server)
    # llama.cpp's per-request reasoning_format "none" leaves <think>…</think> in the content
    tagged = chat(PROMPT, stream=stream, reasoning_format="none", **BUDGET)
    raw = await send(reasoning_server.base_url, tagged)
    assert (raw.content or "").startswith("<think>")
    async with running_serving_gateway(reasoning_server.base_url, ServeConfig()) as (url, _):
        through = await send(url, tagged)
        only_reasoning = await _send_with_header(url, tagged, "reasoning")
    as_content, as_reasoning = both_keys(through)
    assert as_content == as_reasoning
    assert as_content.strip() == reasoning.strip()
    assert through.content == content
    assert both_keys(only_reasoning) == ("", as_reasoning)


async def _send_with_header(url: str, body: dict[str, Any], key: str) -> Reply:
    headers = {"X-Reasoning-Key": key}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/chat/completions", json=body, headers=headers) as response,
    ):
        raw = await response.read()
    if body.get("stream"):
        return Reply(raw=raw, chunks=parse_stream(raw))
    return Reply(raw=raw, body=json.loads(raw))


async def test_with_the_features_off_the_reply_is_the_upstreams_and_the_empty_one_is_classified(
    reasoning_server: LocalInstance,
) -> None:
    _, _, stop, _ = await baseline(reasoning_server)
    body = chat(PROMPT, stream=False, stop=[stop], **BUDGET)
    direct = await send(reasoning_server.base_url, body)
    config = ServeConfig(reasoning="on", stops_on_content=False, normalise_reasoning=False)
    async with running_serving_gateway(reasoning_server.base_url, config) as (url, gateway):
        through = await send(url, body)
    assert through.choice["message"] == direct.choice["message"]  # one key, decapitated
    assert "reasoning" not in through.choice["message"]
    empty = gateway.metrics.empty_content.labels(cause="stop_in_reasoning")._value.get()
    assert empty == 1
