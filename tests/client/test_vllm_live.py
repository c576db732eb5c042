"""The client on vLLM 0.26.0's own replies, captured live on an H200 (tests/fixtures/vllm/live/,
its README says which request made each): every reply is served back byte for byte, with its
status and content type, and read by EndpointClient, server_tokenize, model_ids and
parse_metrics as they read a live server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient, RequestRecord
from sparkrig.client.metrics import metrics_delta, parse_metrics
from sparkrig.client.probe import first_model_id, model_ids
from sparkrig.client.tokenize import server_tokenize
from sparkrig.engines.metric_map import Quantity
from tests.vllm_live import LABELS, asked, capture, replaying

SERVED = "smollm2-135m-instruct"
SPEC = (
    Quantity.SPEC_DRAFTS,
    Quantity.SPEC_DRAFT_TOKENS,
    Quantity.SPEC_ACCEPTED_TOKENS,
    Quantity.SPEC_ACCEPTED_PER_POSITION,
)


def as_asked(label: str, name: str) -> ChatRequest | CompletionRequest:
    """The captured request, as the client's own request model."""
    body = asked(label, name)["request"]
    shared: dict[str, Any] = {
        "model": body["model"],
        "max_tokens": body["max_tokens"],
        "stream": body.get("stream", False),
        "logprobs": body.get("top_logprobs", body.get("logprobs")),
    }
    if "messages" in body:
        return ChatRequest(messages=body["messages"], **shared)
    return CompletionRequest(prompt=body["prompt"], **shared)


async def sent(label: str, name: str) -> RequestRecord:
    async with replaying(label, name) as url, EndpointClient(url) as client:
        return await client.send(as_asked(label, name))


def chunks(label: str, name: str) -> list[dict[str, Any]]:
    """The stream's JSON chunks, read plainly, to set the client's reading beside."""
    lines = capture(label, name).decode().splitlines()
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    return [json.loads(text) for text in data if text != "[DONE]"]


# --- a streamed chat with include_usage and continuous_usage_stats ---------------------------

# Per output event, the tokens vLLM's cumulative usage grew by. The plain server sent the last
# two tokens ("\n", "4") in one event though it does no speculative decoding: the API server
# sends what the engine has produced since it last wrote, so an event is not a token.
STREAM_TOKENS = {
    "plain": [1] * 14 + [2],
    "after": [1] * 16,
    "ngram": [1] * 16,
    "ngram-after": [1] * 16,
}


@pytest.mark.parametrize("label", LABELS)
async def test_a_streamed_chat_accumulates_as_vllm_counted_it(label: str) -> None:
    record = await sent(label, "chat-stream-usage")
    sent_chunks = chunks(label, "chat-stream-usage")

    assert record.ok
    assert record.content == "1. 1\n2. 2\n3. 3\n4"
    assert record.content == "".join(
        choice["delta"].get("content", "") for chunk in sent_chunks for choice in chunk["choices"]
    )
    assert record.finish_reason == "length"  # max_tokens 16, as the finishing chunk says
    assert sent_chunks[-1]["choices"] == []  # the usage chunk, after the finishing one
    assert record.completion_tokens == sent_chunks[-1]["usage"]["completion_tokens"] == 16
    assert record.usage is not None
    assert record.usage.prompt_tokens == 38
    assert record.token_source == "per_event_usage"
    # the role chunk (usage 0) and the usage chunk carry no tokens; every chunk is an event
    assert len(record.events) == len(sent_chunks)
    assert [event.tokens for event in record.events] == [0, *STREAM_TOKENS[label], 0]
    assert [event.tokens for event in record.output_events] == STREAM_TOKENS[label]
    assert record.tokens_per_event == 16 / len(STREAM_TOKENS[label])


# --- logprobs: one entry per generated token --------------------------------------------------

# entries per output event of the streamed completion (max_tokens 8, logprobs 2): plain and
# ngram right after start sent " Paris" and then the other seven tokens in one event
COMPLETION_ENTRIES = {
    "plain": [1, 7],
    "after": [1, 1, 1, 1, 1, 1, 2],
    "ngram": [1, 7],
    "ngram-after": [1] * 8,
}


@pytest.mark.parametrize("label", LABELS)
async def test_a_streamed_completion_carries_one_logprobs_entry_per_token(label: str) -> None:
    record = await sent(label, "completion-stream-logprobs")

    assert record.ok
    assert record.content == " Paris.\n\nThe answer is:"
    assert record.finish_reason == "length"
    assert record.completion_tokens == 8  # from the usage-only chunk at the end
    assert record.token_source == "final_usage"  # include_usage alone: no per-event counts
    assert len(record.logprobs) == record.completion_tokens
    assert [event.logprob_entries for event in record.output_events] == COMPLETION_ENTRIES[label]
    assert [entry.token for entry in record.logprobs[:3]] == [" Paris", ".", "\n"]
    assert [alt.token for alt in record.logprobs[0].top] == [" Paris", " the"]


@pytest.mark.parametrize("label", LABELS)
async def test_a_chat_body_with_logprobs_carries_one_entry_per_token(label: str) -> None:
    record = await sent(label, "chat-logprobs")

    assert record.ok
    assert not record.stream
    assert record.content == "1. 1\n2. "
    assert record.finish_reason == "length"
    assert record.completion_tokens == 8
    assert len(record.logprobs) == record.completion_tokens
    assert [entry.token for entry in record.logprobs] == ["1", ".", " ", "1", "\n", "2", ".", " "]
    assert all(len(entry.top) == 2 for entry in record.logprobs)  # top_logprobs 2


async def test_the_json_schema_stream_with_lm_format_enforcer_is_the_schemas_json() -> None:
    """The same request on a vLLM that has lm-format-enforcer: a plain stream, read whole."""
    record = await sent("enforcer", "chat-json-schema-stream")

    assert record.error is None
    assert record.finish_reason == "stop"
    assert json.loads(record.content) == {"name": "Ava", "age": 25}
    assert len([c for c in chunks("enforcer", "chat-json-schema-stream") if c["choices"]]) >= 17


# --- errors, in a stream and as bodies ---------------------------------------------------------


async def test_the_json_schema_stream_is_an_error_event_with_no_message() -> None:
    """HTTP 200 and an event stream, whose only event is the error of an EngineGenerateError
    (the serve log: `No module named 'lmformatenforcer'`); vLLM sends no text for it."""
    event = capture("plain", "chat-json-schema-stream").decode().splitlines()[0]
    assert asked("plain", "chat-json-schema-stream")["status"] == 200

    record = await sent("plain", "chat-json-schema-stream")

    assert record.error is not None
    assert record.error.kind == "protocol"
    assert record.error.message.startswith(
        "the server sent an error event mid-stream with no message: "
        + event.removeprefix("data: ")
        + " — "
    )
    assert "server's log" in record.error.message
    assert record.error.server is not None
    assert record.error.server.message is None
    assert (record.error.server.type, record.error.server.code) == ("InternalServerError", "500")
    assert record.events == []


@pytest.mark.parametrize(
    ("name", "status", "message", "kind", "param"),
    [
        (
            "error-400-max-tokens",
            400,
            "max_tokens=10000000 cannot be greater than max_model_len=max_total_tokens=8192. "
            "Please request fewer output tokens. (parameter=max_tokens, value=10000000)",
            "BadRequestError",
            "max_tokens",
        ),
        (
            "error-404-model",
            404,
            "The model `no-such-model` does not exist.",
            "NotFoundError",
            "model",
        ),
    ],
)
async def test_an_error_body_keeps_the_servers_message_type_and_code(
    name: str, status: int, message: str, kind: str, param: str
) -> None:
    record = await sent("plain", name)

    assert record.error is not None
    assert record.error.kind == "http_status"
    assert record.error.status == status
    server = record.error.server
    assert server is not None
    assert (server.message, server.type, server.code, server.param) == (
        message,
        kind,
        str(status),
        param,
    )
    assert repr(message) in record.error.message
    assert record.error.body == capture("plain", name).decode()


async def test_an_unknown_model_404_names_the_model_not_the_url() -> None:
    """vLLM answers 404 for a model it does not serve, at the right URL: the fix is the model
    name, and sending the user to check the URL would send them the wrong way."""
    record = await sent("plain", "error-404-model")

    assert record.error is not None
    assert "check the URL" not in record.error.message
    assert record.error.message.endswith(
        "— check the model name against the server's /v1/models, or pass --model"
    )


# --- /tokenize and /v1/models ------------------------------------------------------------------


async def test_the_servers_tokenizer_reply_is_read() -> None:
    body = json.loads(capture("plain", "tokenize"))

    async with replaying("plain", "tokenize") as url, EndpointClient(url) as client:
        tokens = await server_tokenize(client, SERVED, "Hello, world!")

    assert tokens == [19556, 28, 905, 17]
    assert len(tokens) == body["count"] == 4


@pytest.mark.parametrize("label", LABELS)
async def test_the_model_list_names_the_served_model(label: str) -> None:
    async with replaying(label, "models") as url, EndpointClient(url) as client:
        assert await model_ids(client) == [SERVED]
        assert await first_model_id(client) == SERVED


# --- /metrics ----------------------------------------------------------------------------------


def scraped(label: str, taken_ns: int = 0) -> Any:
    return parse_metrics(capture(label, "metrics").decode(), taken_ns=taken_ns)


def test_the_plain_servers_delta_counts_what_ran_between_its_scrapes() -> None:
    """plain and after are one process (the same process_start_time_seconds): no restart, and
    its counters grew by the check battery, bench and peer run between them."""
    delta = metrics_delta(scraped("plain"), scraped("after", 60 * 10**9))

    assert delta.engine == "vllm"
    assert not delta.server_restarted
    assert delta.counters_backwards == []
    assert delta.values[Quantity.GENERATED_TOKENS] == 178_039 - 8
    assert delta.values[Quantity.PROMPT_TOKENS] == 379_571 - 66
    assert [delta.values[quantity] for quantity in SPEC] == [None] * 4


@pytest.mark.parametrize("label", ["plain", "after"])
def test_a_server_without_speculation_reads_the_spec_quantities_as_none(label: str) -> None:
    snapshot = scraped(label)

    assert snapshot.engine == "vllm"
    assert [snapshot.read(quantity) for quantity in SPEC] == [None] * 4


def test_the_spec_server_right_after_start_reads_zeros_not_none() -> None:
    """With --speculative-config the spec families are there from the start, at 0."""
    snapshot = scraped("ngram")

    assert [snapshot.read(quantity) for quantity in SPEC[:3]] == [0.0, 0.0, 0.0]
    assert snapshot.read(Quantity.SPEC_ACCEPTED_PER_POSITION) == {str(n): 0.0 for n in range(4)}


def test_the_spec_server_after_its_bench_reads_drafts_and_acceptance() -> None:
    delta = metrics_delta(scraped("ngram"), scraped("ngram-after", 60 * 10**9))

    assert not delta.server_restarted
    assert delta.values[Quantity.SPEC_DRAFTS] == 52_815
    # fewer than 4 per draft: a prompt lookup can find a shorter match than 4 tokens
    assert delta.values[Quantity.SPEC_DRAFT_TOKENS] == 211_093 < 4 * 52_815
    assert delta.values[Quantity.SPEC_ACCEPTED_TOKENS] == 56_225
    per_position = {"0": 21_602.0, "1": 15_040.0, "2": 12_745.0, "3": 6_838.0}
    assert delta.values[Quantity.SPEC_ACCEPTED_PER_POSITION] == per_position
    assert sum(per_position.values()) == 56_225
    assert delta.values[Quantity.GENERATED_TOKENS] == 165_668 - 4


def test_the_spec_server_is_another_process_than_the_plain_one() -> None:
    delta = metrics_delta(scraped("after"), scraped("ngram"))

    assert delta.server_restarted
    assert delta.values[Quantity.GENERATED_TOKENS] is None
