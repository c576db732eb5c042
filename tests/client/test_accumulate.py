"""StreamAccumulator fed chunk dicts at chosen times: token sources, rates, reasoning, tools."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest

from sparkrig.client.accumulate import StreamAccumulator
from sparkrig.client.records import RequestRecord, TokenLogprob, TopLogprob

MS = 1_000_000
SEND_NS = 1_000 * MS

Chunk = dict[str, Any]


def at(ms: float) -> int:
    """perf_counter_ns of a chunk read `ms` milliseconds after the request was sent."""
    return SEND_NS + int(ms * MS)


def replay(
    timed_chunks: list[tuple[int, Chunk]],
    *,
    stream: bool = True,
    api: Literal["chat", "completions"] = "chat",
) -> RequestRecord:
    record = RequestRecord(
        url="http://127.0.0.1:1/v1/chat/completions",
        api=api,
        stream=stream,
        model="m",
        send_ns=SEND_NS,
    )
    accumulator = StreamAccumulator(record)
    for t_ns, chunk in timed_chunks:
        accumulator.add_chunk(t_ns, chunk)
    return accumulator.finish(timed_chunks[-1][0] + MS)


def chat_chunk(delta: dict[str, Any], *, finish_reason: str | None = None) -> Chunk:
    return {
        "choices": [{"finish_reason": finish_reason, "index": 0, "delta": delta}],
        "object": "chat.completion.chunk",
    }


# --- llama.cpp: cumulative timings.predicted_n on every chunk --------------------------------
# Shapes as the pinned llama-server sends them with timings_per_token and include_usage (seen on
# a live /v1/chat/completions stream), trimmed to the fields the accumulator reads.


def llamacpp_token(content: str, predicted_n: int) -> Chunk:
    chunk = chat_chunk({"content": content})
    chunk["timings"] = {"prompt_n": 32, "predicted_n": predicted_n, "predicted_ms": 1.0}
    return chunk


def llamacpp_final(completion_tokens: int) -> Chunk:
    return {
        "choices": [],
        "object": "chat.completion.chunk",
        "usage": {
            "completion_tokens": completion_tokens,
            "prompt_tokens": 32,
            "total_tokens": 32 + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
        "timings": {"prompt_n": 32, "predicted_n": completion_tokens, "predicted_ms": 1.0},
    }


LLAMACPP_ROLE = chat_chunk({"role": "assistant", "content": None})
LLAMACPP_STOP = chat_chunk({}, finish_reason="stop")


def llamacpp_stream() -> list[tuple[int, Chunk]]:
    return [
        (at(100), LLAMACPP_ROLE),
        (at(120), llamacpp_token("Hi", 1)),
        (at(130), llamacpp_token(" there", 2)),
        (at(140), llamacpp_token(",", 3)),
        (at(150), llamacpp_token(" friend", 4)),
        (at(155), LLAMACPP_STOP),
        (at(156), llamacpp_final(4)),
    ]


def test_llamacpp_stream_counts_tokens_from_per_event_timings() -> None:
    record = replay(llamacpp_stream())

    assert record.token_source == "per_event_timings"
    assert [event.tokens for event in record.output_events] == [1, 1, 1, 1]
    assert record.usage is not None
    assert record.completion_tokens == record.usage.completion_tokens == 4
    assert record.content == "Hi there, friend"
    assert record.finish_reason == "stop"
    assert record.server_timings is not None
    assert record.server_timings["predicted_n"] == 4
    assert record.ok


def test_llamacpp_stream_times_first_token_at_first_content_chunk() -> None:
    record = replay(llamacpp_stream())

    assert record.first_token_ns == at(120)
    assert record.first_content_ns == at(120)
    assert record.ttft_s == 0.120


def test_llamacpp_stream_decode_rate_is_tokens_after_first_over_span() -> None:
    record = replay(llamacpp_stream())

    # 4 tokens less the first one, over the 30 ms from the first to the last output event
    assert record.decode_tps == 100.0
    assert record.inter_token_latencies_s() == pytest.approx([0.010, 0.010, 0.010])


# --- vLLM: cumulative usage on every chunk (continuous_usage_stats) ---------------------------
# Constructed, to set each chunk's time; framed as vLLM 0.26.0 framed a live stream with
# stream_options {"include_usage": true, "continuous_usage_stats": true}
# (tests/fixtures/vllm/live/*-chat-stream-usage.txt, read whole in test_vllm_live.py): every
# chunk carries cumulative `usage`, the first has the role and no tokens, the last content
# chunk carries `finish_reason`, and a last chunk with `choices: []` repeats the totals. One
# chunk can carry several tokens' text (under speculative decoding, and live even without it).


def vllm_chunk(
    delta: dict[str, Any], completion_tokens: int, *, finish_reason: str | None = None
) -> Chunk:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 12,
            "total_tokens": 12 + completion_tokens,
            "completion_tokens": completion_tokens,
        },
    }


def vllm_usage_only(completion_tokens: int) -> Chunk:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [],
        "usage": {
            "prompt_tokens": 12,
            "total_tokens": 12 + completion_tokens,
            "completion_tokens": completion_tokens,
        },
    }


def vllm_stream(contents_and_totals: list[tuple[int, str, int]]) -> list[tuple[int, Chunk]]:
    """(ms, text, cumulative completion tokens) per content chunk, framed as vLLM frames them."""
    *first, (last_ms, last_text, total) = contents_and_totals
    return [
        (at(50), vllm_chunk({"role": "assistant", "content": ""}, 0)),
        *[(at(ms), vllm_chunk({"content": text}, n)) for ms, text, n in first],
        (at(last_ms), vllm_chunk({"content": last_text}, total, finish_reason="stop")),
        (at(last_ms + 1), vllm_usage_only(total)),
    ]


def test_vllm_speculative_stream_rate_counts_tokens_not_events() -> None:
    # 4 events of 3 tokens each, the last 1.0 s after the first: 9 tokens after the first event
    # in 1.0 s is 9 tok/s, where counting events would say 3 per second
    record = replay(
        vllm_stream(
            [
                (100, "One two three", 3),
                (350, " four five six", 6),
                (600, " seven eight nine", 9),
                (1100, " ten eleven twelve", 12),
            ]
        )
    )

    assert record.token_source == "per_event_usage"
    assert [event.tokens for event in record.output_events] == [3, 3, 3, 3]
    assert record.completion_tokens == 12
    assert record.decode_tps == 9.0
    assert record.tokens_per_event == 3.0
    assert record.inter_token_latencies_s() == pytest.approx([0.25 / 3] * 6 + [0.5 / 3] * 3)


def test_vllm_speculative_stream_spreads_each_gap_across_its_tokens() -> None:
    record = replay(
        vllm_stream(
            [
                (100, "The", 1),
                (160, " cat sat on", 4),  # a verify step accepted 2 drafts: 3 tokens at once
                (170, " the", 5),
            ]
        )
    )

    assert record.token_source == "per_event_usage"
    assert [event.tokens for event in record.output_events] == [1, 3, 1]
    assert record.inter_token_latencies_s() == pytest.approx([0.020, 0.020, 0.020, 0.010])
    assert record.decode_tps == pytest.approx(4 / 0.070)
    assert record.tokens_per_event == pytest.approx(5 / 3)
    assert record.first_token_ns == at(100)


# --- fewer counts -----------------------------------------------------------------------------


def test_stream_with_only_final_usage_has_no_per_event_counts() -> None:
    # llama.cpp /v1/completions without timings_per_token: usage rides on the finish chunk
    def text(value: str, finish_reason: str | None = None) -> Chunk:
        return {"choices": [{"text": value, "index": 0, "finish_reason": finish_reason}]}

    last = text("", "length")
    last["usage"] = {"completion_tokens": 3, "prompt_tokens": 1, "total_tokens": 4}
    record = replay(
        [
            (at(100), text("One")),
            (at(120), text(" two")),
            (at(140), text(" three")),
            (at(141), last),
        ],
        api="completions",
    )

    assert record.token_source == "final_usage"
    assert [event.tokens for event in record.events] == [None, None, None, None]
    assert record.inter_token_latencies_s() is None
    assert record.completion_tokens == 3
    assert record.decode_tps == 50.0  # (3 - 1) tokens over 40 ms
    assert record.content == "One two three"
    assert record.finish_reason == "length"


def test_stream_without_any_counts_derives_no_rate() -> None:
    record = replay(
        [
            (at(100), chat_chunk({"content": "a"})),
            (at(110), chat_chunk({"content": "b"})),
            (at(120), chat_chunk({}, finish_reason="stop")),
        ]
    )

    assert record.token_source == "events_only"
    assert record.completion_tokens is None
    assert record.decode_tps is None
    assert record.inter_token_latencies_s() is None
    assert record.tokens_per_event is None
    assert record.ttft_s == 0.100  # timing of the first event is still known
    assert record.content == "ab"


def test_one_token_reply_has_no_decode_rate() -> None:
    record = replay(
        [
            (at(100), LLAMACPP_ROLE),
            (at(120), llamacpp_token("Yes", 1)),
            (at(125), LLAMACPP_STOP),
            (at(126), llamacpp_final(1)),
        ]
    )

    assert record.completion_tokens == 1
    assert len(record.output_events) == 1
    assert record.decode_tps is None
    assert record.inter_token_latencies_s() == []
    assert record.ttft_s == 0.120


def test_non_streaming_body_reads_message_and_final_usage() -> None:
    # the pinned llama-server's non-streaming chat reply, trimmed
    body = {
        "choices": [
            {
                "finish_reason": "length",
                "index": 0,
                "message": {"role": "assistant", "content": "I'm"},
            }
        ],
        "object": "chat.completion",
        "usage": {
            "completion_tokens": 2,
            "prompt_tokens": 32,
            "total_tokens": 34,
            "prompt_tokens_details": {"cached_tokens": 31},
        },
        "timings": {"cache_n": 31, "prompt_n": 1, "predicted_n": 2},
    }
    record = RequestRecord(url="u", api="chat", stream=False, model="m", send_ns=SEND_NS)
    accumulator = StreamAccumulator(record)
    accumulator.add_body(at(300), body)
    record = accumulator.finish(at(301))

    assert record.token_source == "final_usage"
    assert record.content == "I'm"
    assert record.completion_tokens == 2
    assert record.usage is not None
    assert record.usage.cached_prompt_tokens == 31
    assert record.events[0].tokens is None
    assert record.first_token_ns == record.first_content_ns == at(300)
    assert record.decode_tps is None
    assert record.finish_reason == "length"


# --- reasoning --------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_field_is_kept_apart_from_the_answer(key: str) -> None:
    record = replay(
        [
            (at(100), chat_chunk({"role": "assistant", "content": None})),
            (at(110), chat_chunk({key: "Two plus"})),
            (at(120), chat_chunk({key: " two."})),
            (at(130), chat_chunk({"content": "4"})),
            (at(140), chat_chunk({}, finish_reason="stop")),
        ]
    )

    assert record.reasoning_source == key
    assert record.reasoning == "Two plus two."
    assert record.content == "4"
    assert record.first_token_ns == at(110)
    assert record.first_content_ns == at(130)
    assert record.ttfot_s == 0.130


def test_reasoning_mirrored_in_both_fields_is_read_once() -> None:
    record = replay(
        [
            (at(100), chat_chunk({"reasoning": "Two plus", "reasoning_content": "Two plus"})),
            (at(110), chat_chunk({"reasoning": " two.", "reasoning_content": " two."})),
            (at(120), chat_chunk({"content": "4"}, finish_reason="stop")),
        ]
    )

    assert record.reasoning == "Two plus two."
    assert record.events[0].reasoning_chars == len("Two plus")


def content_stream(*timed_texts: tuple[int, str]) -> list[tuple[int, Chunk]]:
    return [(at(ms), chat_chunk({"content": text})) for ms, text in timed_texts]


def test_think_tags_split_across_chunks_separate_reasoning() -> None:
    record = replay(
        content_stream(
            (100, "<thi"),
            (110, "nk>The user"),
            (120, " greets.</th"),
            (130, "ink>"),
            (140, "\n\n"),  # template blank lines: not the answer yet
            (150, "Hello"),
            (160, "!"),
        )
    )

    assert record.reasoning_source == "think_tags"
    assert record.reasoning == "The user greets."
    assert record.content == "Hello!"
    assert record.first_token_ns == at(100)
    assert record.first_content_ns == at(150)


def test_answer_in_the_same_chunk_as_the_close_tag_starts_there() -> None:
    record = replay(content_stream((100, "<think>hmm"), (110, "</think>\n\nHi"), (120, " you")))

    assert record.reasoning == "hmm"
    assert record.content == "Hi you"
    assert record.first_content_ns == at(110)


def test_lone_close_tag_makes_everything_before_it_reasoning() -> None:
    # the chat template opened <think> in the prompt, so only </think> reaches the stream
    record = replay(content_stream((100, "The user said hi."), (110, "</think>"), (120, "Hello")))

    assert record.reasoning_source == "think_tags"
    assert record.reasoning == "The user said hi."
    assert record.content == "Hello"
    assert record.first_token_ns == at(100)
    assert record.first_content_ns == at(120)


def test_unclosed_think_tag_leaves_no_answer() -> None:
    chunks = content_stream((100, "<think>"), (110, "Still"), (120, " thinking"))
    chunks.append((at(130), chat_chunk({}, finish_reason="length")))
    record = replay(chunks)

    assert record.reasoning == "Still thinking"
    assert record.content == ""
    assert record.first_token_ns == at(100)
    assert record.first_content_ns is None
    assert record.ttfot_s is None


# --- tool calls and logprobs ------------------------------------------------------------------


def tool_fragment(index: int, **fields: Any) -> Chunk:
    return chat_chunk({"tool_calls": [{"index": index, **fields}]})


def test_tool_calls_are_assembled_from_streamed_fragments() -> None:
    record = replay(
        [
            (at(100), chat_chunk({"role": "assistant", "content": None})),
            (
                at(110),
                tool_fragment(
                    0, id="call_a", type="function", function={"name": "get_", "arguments": ""}
                ),
            ),
            (at(120), tool_fragment(0, function={"name": "weather", "arguments": '{"city": '})),
            (at(130), tool_fragment(0, function={"arguments": '"Paris"}'})),
            (
                at(140),
                tool_fragment(
                    1,
                    id="call_b",
                    type="function",
                    function={"name": "get_time", "arguments": "{}"},
                ),
            ),
            (at(150), chat_chunk({}, finish_reason="tool_calls")),
        ]
    )

    assert [call["id"] for call in record.tool_calls] == ["call_a", "call_b"]
    assert [call["function"]["name"] for call in record.tool_calls] == ["get_weather", "get_time"]
    assert json.loads(record.tool_calls[0]["function"]["arguments"]) == {"city": "Paris"}
    assert record.tool_calls[1]["function"]["arguments"] == "{}"
    assert record.finish_reason == "tool_calls"
    assert record.first_token_ns == at(110)
    assert record.content == ""


def test_chat_style_logprobs_keep_token_value_and_alternatives() -> None:
    # as the pinned llama-server sends them (ids and bytes are ignored)
    def with_logprobs(text: str, logprob: float, alternative: str, alt_logprob: float) -> Chunk:
        chunk = chat_chunk({"content": text})
        chunk["choices"][0]["logprobs"] = {
            "content": [
                {
                    "id": 1,
                    "token": text,
                    "bytes": list(text.encode()),
                    "logprob": logprob,
                    "top_logprobs": [
                        {"id": 1, "token": text, "logprob": logprob},
                        {"id": 2, "token": alternative, "logprob": alt_logprob},
                    ],
                }
            ]
        }
        return chunk

    record = replay(
        [
            (at(100), with_logprobs("I", -2.32, "Hello", -2.35)),
            (at(110), with_logprobs("'m", -0.17, " hope", -3.51)),
            (at(120), chat_chunk({"content": " fine"})),  # a chunk that came without logprobs
        ]
    )

    # each event keeps how many entries it carried (bench/count_witness.py reads them)
    assert [event.logprob_entries for event in record.events] == [1, 1, 0]
    assert record.logprobs == [
        TokenLogprob(
            token="I",
            logprob=-2.32,
            top=[TopLogprob(token="I", logprob=-2.32), TopLogprob(token="Hello", logprob=-2.35)],
        ),
        TokenLogprob(
            token="'m",
            logprob=-0.17,
            top=[TopLogprob(token="'m", logprob=-0.17), TopLogprob(token=" hope", logprob=-3.51)],
        ),
    ]


def test_legacy_completions_logprobs_read_parallel_lists() -> None:
    # OpenAI legacy /v1/completions style (vLLM): parallel lists, top_logprobs as dicts
    def with_logprobs(text: str, logprob: float, top: dict[str, float]) -> Chunk:
        return {
            "choices": [
                {
                    "index": 0,
                    "text": text,
                    "finish_reason": None,
                    "logprobs": {
                        "text_offset": [0],
                        "tokens": [text],
                        "token_logprobs": [logprob],
                        "top_logprobs": [top],
                    },
                }
            ]
        }

    record = replay(
        [
            (at(100), with_logprobs(" Paris", -0.1, {" Paris": -0.1, " Lyon": -2.5})),
            (at(110), with_logprobs(".", -0.4, {".": -0.4, ",": -1.2})),
        ],
        api="completions",
    )

    assert record.content == " Paris."
    assert [event.logprob_entries for event in record.events] == [1, 1]
    assert record.logprobs == [
        TokenLogprob(
            token=" Paris",
            logprob=-0.1,
            top=[TopLogprob(token=" Paris", logprob=-0.1), TopLogprob(token=" Lyon", logprob=-2.5)],
        ),
        TokenLogprob(
            token=".",
            logprob=-0.4,
            top=[TopLogprob(token=".", logprob=-0.4), TopLogprob(token=",", logprob=-1.2)],
        ),
    ]
