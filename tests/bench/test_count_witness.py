"""The logprobs witness judged from streams as the engines send them, read by the client's own
accumulator: one entry per token, several tokens in one chunk under speculative decoding.

The chunk shapes follow the engines' OpenAI-compatible replies, trimmed to the fields read:
llama.cpp sends one chunk per token with chat-style `logprobs.content` on chat and completions
alike (tools/server/server-task.cpp of the pinned build); vLLM sends chat-style entries on chat
and parallel `tokens` / `token_logprobs` lists on completions, as many per chunk as the chunk
carries tokens. The live witness against the real llama-server is in test_accounting_live.py.
"""

from __future__ import annotations

from typing import Any, Literal

from sparkrig import defaults
from sparkrig.bench.count_witness import (
    judge_witness,
    unread_warning,
    witness_request,
)
from sparkrig.client import ChatRequest, CompletionRequest, RequestRecord
from sparkrig.client.accumulate import StreamAccumulator
from sparkrig.client.endpoint import request_body
from sparkrig.client.records import RequestError

Chunk = dict[str, Any]


def _entry(token: str) -> dict[str, Any]:
    return {"token": token, "logprob": -0.1, "top_logprobs": [{"token": token, "logprob": -0.1}]}


def _chat_chunk(tokens: list[str], usage: int | None = None, finish: str | None = None) -> Chunk:
    chunk: Chunk = {
        "choices": [
            {
                "index": 0,
                "delta": {"content": "".join(tokens)},
                "logprobs": {"content": [_entry(token) for token in tokens]},
                "finish_reason": finish,
            }
        ]
    }
    if usage is not None:
        chunk["usage"] = {"prompt_tokens": 9, "completion_tokens": usage}
    return chunk


def _legacy_chunk(tokens: list[str], usage: int, finish: str | None = None) -> Chunk:
    """vLLM /v1/completions with continuous usage: parallel lists, top_logprobs as dicts."""
    return {
        "choices": [
            {
                "index": 0,
                "text": "".join(tokens),
                "logprobs": {
                    "tokens": tokens,
                    "token_logprobs": [-0.1] * len(tokens),
                    "top_logprobs": [{token: -0.1} for token in tokens],
                    "text_offset": list(range(len(tokens))),
                },
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": usage},
    }


def _replay(chunks: list[Chunk], api: Literal["chat", "completions"] = "chat") -> RequestRecord:
    record = RequestRecord(url="u", api=api, stream=True, model="m", send_ns=0)
    accumulator = StreamAccumulator(record)
    for index, chunk in enumerate(chunks):
        accumulator.add_chunk(1_000 * (index + 1), chunk)
    return accumulator.finish(1_000 * (len(chunks) + 1))


def _chat(max_tokens: int) -> ChatRequest:
    return ChatRequest(
        model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=max_tokens
    )


def test_the_witness_asks_the_same_request_with_logprobs_on() -> None:
    timed = CompletionRequest(model="m", prompt=[1, 2, 3], max_tokens=8, extra={"ignore_eos": True})
    asked = witness_request(timed)
    assert timed.logprobs is None  # the timed request is left as it was
    assert asked.logprobs == defaults.BENCH_WITNESS_TOP_LOGPROBS
    body = request_body(asked, per_event_counts=True)
    assert body["logprobs"] == defaults.BENCH_WITNESS_TOP_LOGPROBS
    assert body["ignore_eos"] is True
    assert asked.model_copy(update={"logprobs": None}) == timed
    chat = request_body(witness_request(_chat(8)), per_event_counts=True)
    assert chat["logprobs"] is True
    assert chat["top_logprobs"] == defaults.BENCH_WITNESS_TOP_LOGPROBS
    # llama.cpp refuses logprobs with tools on a stream: the multiturn suite's witness drops them
    tooled = _chat(8).model_copy(update={"tools": [{"type": "function", "function": {}}]})
    assert "tools" not in request_body(witness_request(tooled), per_event_counts=True)
    assert tooled.tools  # the timed request keeps them


def test_one_token_per_chunk_and_an_honest_count_witness_nothing_wrong() -> None:
    """llama.cpp's shape: a chunk per token, the count in the last chunk's usage."""
    chunks = [_chat_chunk([f" w{n}"]) for n in range(7)]
    chunks.append(_chat_chunk([" w7"], usage=8, finish="length"))
    witness = judge_witness(_chat(8), _replay(chunks))
    assert (witness.claimed, witness.logprob_entries) == (8, 8)
    assert witness.findings == []
    assert witness.read


def test_several_tokens_in_one_chunk_are_several_entries() -> None:
    """vLLM under speculative decoding: a chunk carries every token a step accepted."""
    chunks = [
        _chat_chunk([" a", " b", " c"], usage=3),
        _chat_chunk([" d"], usage=4),
        _chat_chunk([" e", " f", " g", " h"], usage=8, finish="length"),
    ]
    witness = judge_witness(_chat(8), _replay(chunks))
    assert (witness.claimed, witness.logprob_entries, witness.findings) == (8, 8, [])


def test_legacy_completions_entries_are_counted_alike() -> None:
    chunks = [_legacy_chunk([" a", " b"], 2), _legacy_chunk([" c", " d"], 4, finish="length")]
    request = CompletionRequest(model="m", prompt="x", max_tokens=4)
    witness = judge_witness(request, _replay(chunks, api="completions"))
    assert (witness.claimed, witness.logprob_entries, witness.findings) == (4, 4, [])


def test_an_inflated_count_is_caught_by_its_entries_and_its_max_tokens() -> None:
    """The gateway's inflated-counts: usage × 1.25, text and logprobs untouched."""
    chunks = [_chat_chunk([f" w{n}"]) for n in range(31)]
    chunks.append(_chat_chunk([" w31"], usage=40, finish="length"))
    witness = judge_witness(_chat(32), _replay(chunks))
    assert (witness.claimed, witness.logprob_entries) == (40, 32)
    assert witness.findings == [
        "logprobs witness: token count: the server claimed 40 completion tokens, its reply "
        "carried 32 logprobs entries (one per generated token)",
        "logprobs witness: token count: the server claimed 40 completion tokens for max_tokens 32",
    ]


def test_a_reply_without_logprobs_is_unread_and_says_so() -> None:
    chunk = _chat_chunk([" a", " b"], usage=2, finish="length")
    chunk["choices"][0]["logprobs"] = None
    witness = judge_witness(_chat(2), _replay([chunk]))
    assert witness.findings == []
    assert not witness.read
    assert "the server returned no logprobs" in unread_warning(witness)


def test_a_failed_witness_request_is_unread_with_its_error() -> None:
    record = RequestRecord(url="u", api="chat", stream=True, model="m", send_ns=0)
    record.error = RequestError(kind="http_status", message="HTTP 400 — logprobs not allowed")
    witness = judge_witness(_chat(8), record)
    assert witness.findings == []
    assert not witness.read
    assert "its request failed: HTTP 400 — logprobs not allowed" in unread_warning(witness)


def test_entries_llama_cpp_withholds_are_allowed_and_recorded() -> None:
    """A token ending inside "🌟" has no entry (the next one's carries the whole character);
    the stop token of a streamed chat comes in no chunk."""
    chunks = [_chat_chunk([" a"]), _chat_chunk(["🌟"]), _chat_chunk([" b"])]
    chunks.append(_chat_chunk([], usage=5, finish="stop"))
    witness = judge_witness(_chat(8), _replay(chunks))
    assert (witness.claimed, witness.logprob_entries, witness.withheld_allowance) == (5, 3, 4)
    assert witness.findings == []
    assert witness.read


def test_output_events_without_entries_leave_a_short_count_unjudged() -> None:
    """llama.cpp under speculative decoding: only the first token, sampled outside the draft
    path, has an entry (a live probe: 64 claimed, 1 entry, 64 events)."""
    chunks = [_chat_chunk([" 1"])]
    for n in range(2, 9):
        chunk = _chat_chunk([f" {n}"])
        chunk["choices"][0]["logprobs"] = None
        chunks.append(chunk)
    chunks[-1]["usage"] = {"completion_tokens": 8}
    chunks[-1]["choices"][0]["finish_reason"] = "length"
    witness = judge_witness(_chat(8), _replay(chunks))
    assert (witness.claimed, witness.logprob_entries) == (8, 1)
    assert witness.findings == []
    assert witness.uncounted is not None
    assert "7 of 8 output events carried no logprobs entry" in witness.uncounted
    assert not witness.read
    warning = unread_warning(witness)
    assert warning.startswith("counts not witnessed by logprobs: 8 claimed, 1 entries, and 7 of 8")
    # max_tokens still judges the witness reply
    chunks[-1]["usage"] = {"completion_tokens": 10}
    assert judge_witness(_chat(8), _replay(chunks)).findings == [
        "logprobs witness: token count: the server claimed 10 completion tokens for max_tokens 8"
    ]


def test_reasoning_split_from_the_text_leaves_a_short_count_unjudged() -> None:
    chunks = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"reasoning_content": " think"},
                    "logprobs": {"content": [_entry(" think")]},
                }
            ]
        },
        _chat_chunk([" answer"], usage=4, finish="length"),
    ]
    witness = judge_witness(_chat(4), _replay(chunks))
    assert (witness.claimed, witness.logprob_entries, witness.findings) == (4, 2, [])
    assert witness.uncounted is not None
    assert "reasoning" in witness.uncounted


def test_more_entries_than_claimed_is_a_finding_whatever_the_shape() -> None:
    """Withholding only ever lowers the entries: a server that claims fewer tokens than it sent
    entries under-counts, and nothing excuses it."""
    chunks = [_chat_chunk([" a", " b", " c"]), _chat_chunk([" d"], usage=3, finish="stop")]
    witness = judge_witness(_chat(8), _replay(chunks))
    assert witness.logprob_entries == 4
    assert witness.uncounted is None
    assert witness.findings == [
        "logprobs witness: token count: the server claimed 3 completion tokens, its reply "
        "carried 4 logprobs entries (one per generated token; up to 1 may be withheld for its "
        "text)"
    ]
