"""Reasoning emulation and the stop-in-reasoning fault, streamed and non-streamed alike."""

from __future__ import annotations

import pytest

from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from tests.gateway.fake_upstream import FakeUpstream, serve_fake
from tests.gateway.replies import chat, completion, fake_behind_gateway, send

# 60 characters of "reasoning" that mention the stop string, then the answer
THINKING = "Let me think. Question: what is asked? The capital. So: ok. "
ANSWER = "The answer is Paris. Question: anything else? No."
STREAMED = [True, False]


def fake() -> FakeUpstream:
    return FakeUpstream(reply_for=lambda body: THINKING + ANSWER)


def test_the_sample_reasoning_is_sixty_characters() -> None:
    assert len(THINKING) == 60


@pytest.mark.parametrize("stream", STREAMED)
async def test_reasoning_is_split_off_and_stops_apply_to_the_content_only(stream: bool) -> None:
    upstream = fake()
    config = GatewayConfig(emulate_reasoning=True)
    async with fake_behind_gateway(upstream, config) as url:
        reply = await send(url, chat("q", stream=stream, stop=["Question:"]))
        plain = await send(url, chat("q", stream=stream))
    assert "stop" not in upstream.received[0]  # the gateway applies the stops itself
    assert reply.reasoning == plain.reasoning == THINKING
    assert reply.content == "The answer is Paris. "
    assert reply.finish_reason == "stop"
    assert plain.content == ANSWER


@pytest.mark.parametrize("stream", STREAMED)
async def test_stop_in_reasoning_decapitates_the_reply(stream: bool) -> None:
    config = GatewayConfig(emulate_reasoning=True, faults=[Fault.STOP_IN_REASONING])
    async with fake_behind_gateway(fake(), config) as url:
        reply = await send(url, chat("q", stream=stream, stop="Question:"))
        no_stop = await send(url, chat("q", stream=stream))
    assert reply.reasoning == "Let me think. "
    assert reply.content == ("" if stream else None)
    assert reply.content_events == 0
    assert reply.finish_reason == "stop"
    assert (no_stop.reasoning, no_stop.content) == (THINKING, ANSWER)


async def test_streamed_and_non_streamed_agree_through_the_client() -> None:
    config = GatewayConfig(emulate_reasoning=True)
    messages = [{"role": "user", "content": "q"}]
    requests = [
        ChatRequest(model="m", messages=messages, stream=stream, extra={"stop": ["Question:"]})
        for stream in (True, False)
    ]
    async with (
        serve_fake(fake()) as fake_url,
        running_gateway(fake_url, config) as url,
        EndpointClient(url) as client,
    ):
        records = [await client.send(request) for request in requests]
    streamed, whole = records
    assert streamed.reasoning_source == whole.reasoning_source == "reasoning_content"
    assert (streamed.reasoning, streamed.content) == (whole.reasoning, whole.content)
    assert streamed.finish_reason == whole.finish_reason == "stop"


async def test_completions_are_not_emulated() -> None:
    upstream = fake()
    config = GatewayConfig(emulate_reasoning=True)
    async with fake_behind_gateway(upstream, config) as url:
        reply = await send(url, completion("q", stream=True, stop=["zzz"]), "/v1/completions")
    assert reply.content == THINKING + ANSWER
    assert upstream.received[0]["stop"] == ["zzz"]
