"""The client against the real llama-server: timing fields, token accounting, metrics deltas."""

from __future__ import annotations

import asyncio

import pytest

from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient
from sparkrig.client.metrics import metrics_delta, scrape_metrics
from sparkrig.engines.metric_map import Quantity
from sparkrig.launch.local import LocalInstance

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]


def chat(record: LocalInstance, prompt: str, max_tokens: int = 48, **kw: object) -> ChatRequest:
    return ChatRequest(
        model=record.alias,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        **kw,  # type: ignore[arg-type]
    )


async def test_streamed_chat_has_ordered_timing_fields(llama_server: LocalInstance) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        record = await client.send(chat(llama_server, "Count from 1 to 20."))
    assert record.error is None
    assert record.response_ns is not None
    assert record.first_byte_ns is not None
    assert record.first_token_ns is not None
    assert record.first_content_ns is not None
    assert record.end_ns is not None
    assert record.send_ns < record.response_ns <= record.first_byte_ns
    assert record.first_byte_ns <= record.first_token_ns <= record.first_content_ns
    assert record.first_content_ns < record.end_ns
    assert all(a.t_ns <= b.t_ns for a, b in zip(record.events, record.events[1:], strict=False))
    assert 0 < record.ttft_s < record.e2e_s  # type: ignore[operator]


async def test_token_counts_come_from_the_server(llama_server: LocalInstance) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        record = await client.send(chat(llama_server, "Count from 1 to 30.", max_tokens=40))
    assert record.token_source == "per_event_timings"
    assert record.usage is not None
    assert record.completion_tokens == record.usage.completion_tokens
    assert record.server_timings is not None
    assert record.completion_tokens == record.server_timings["predicted_n"]
    per_event = [event.tokens for event in record.output_events]
    assert sum(t for t in per_event if t is not None) == record.completion_tokens
    assert record.decode_tps is not None
    assert record.decode_tps > 0
    latencies = record.inter_token_latencies_s()
    assert latencies is not None
    assert len(latencies) == record.completion_tokens - 1


async def test_without_per_event_counts_only_the_final_total_is_known(
    llama_server: LocalInstance,
) -> None:
    async with EndpointClient(llama_server.base_url, per_event_counts=False) as client:
        record = await client.send(chat(llama_server, "Name three colours.", max_tokens=24))
    assert record.token_source == "final_usage"
    assert all(event.tokens is None for event in record.events)
    assert record.inter_token_latencies_s() is None
    assert record.completion_tokens == record.usage.completion_tokens  # type: ignore[union-attr]


async def test_one_token_reply_refuses_a_decode_rate(llama_server: LocalInstance) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        record = await client.send(chat(llama_server, "Say yes.", max_tokens=1))
    assert record.completion_tokens == 1
    assert record.decode_tps is None


async def test_non_streaming_chat_and_completion_with_logprobs(
    llama_server: LocalInstance,
) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        whole = await client.send(chat(llama_server, "Say hello.", max_tokens=8, stream=False))
        completion = await client.send(
            CompletionRequest(model=llama_server.alias, prompt="1, 2, 3,", max_tokens=5, logprobs=2)
        )
    assert whole.error is None
    assert whole.content
    assert whole.token_source == "final_usage"
    assert whole.decode_tps is None
    assert completion.error is None
    assert completion.token_source == "per_event_timings"
    assert len(completion.logprobs) == completion.completion_tokens
    assert completion.logprobs[0].top  # top-k alternatives came back


async def test_concurrent_requests_and_metrics_delta_agree(llama_server: LocalInstance) -> None:
    prompts = [
        "Write a haiku about rain.",
        "List four prime numbers.",
        "Describe a cat in one sentence.",
        "What is the capital of France?",
    ]
    async with EndpointClient(llama_server.base_url) as client:
        before = await scrape_metrics(client)
        records = await asyncio.gather(*(client.send(chat(llama_server, p)) for p in prompts))
        after = await scrape_metrics(client)
    assert all(record.error is None for record in records)
    delta = metrics_delta(before, after)
    assert not delta.server_restarted
    generated = sum(record.completion_tokens or 0 for record in records)
    assert delta.values[Quantity.GENERATED_TOKENS] == generated
    prompt_tokens = sum(record.usage.prompt_tokens or 0 for record in records)  # type: ignore[union-attr]
    assert delta.values[Quantity.PROMPT_TOKENS] == prompt_tokens
    assert delta.values[Quantity.KV_CACHE_USAGE] is None  # llama.cpp does not expose it


async def test_live_speculative_metrics_map_to_canonical_quantities(
    spec_server: LocalInstance,
) -> None:
    async with EndpointClient(spec_server.base_url) as client:
        before = await scrape_metrics(client)
        record = await client.send(chat(spec_server, "Count from 1 to 40.", max_tokens=64))
        after = await scrape_metrics(client)
    assert record.error is None
    delta = metrics_delta(before, after)
    drafts = delta.values[Quantity.SPEC_DRAFT_TOKENS]
    accepted = delta.values[Quantity.SPEC_ACCEPTED_TOKENS]
    per_position = delta.values[Quantity.SPEC_ACCEPTED_PER_POSITION]
    assert isinstance(drafts, float)
    assert drafts > 0
    assert isinstance(per_position, dict)
    assert sum(per_position.values()) == accepted
    assert delta.values[Quantity.GENERATED_TOKENS] == record.completion_tokens
    steps = delta.values[Quantity.DECODE_STEPS]
    assert isinstance(steps, float)
    assert steps < record.completion_tokens  # type: ignore[operator]  # several tokens a step
