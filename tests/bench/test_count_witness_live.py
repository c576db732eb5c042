"""The logprobs witness the bench takes, on vLLM 0.26.0's own replies captured live on an H200
(tests/fixtures/vllm/live/): take_witness sends its request to a loopback server answering with
the captured bytes, and judges what the client read, exactly as a bench point does."""

from __future__ import annotations

import pytest

from sparkrig.bench.count_witness import take_witness
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient
from tests.vllm_live import LABELS, asked, replaying


def timed_request(label: str, name: str) -> ChatRequest | CompletionRequest:
    """The captured request without logprobs: the timed request a witness is taken for."""
    body = asked(label, name)["request"]
    shared = {"model": body["model"], "max_tokens": body["max_tokens"]}
    if "messages" in body:
        return ChatRequest(messages=body["messages"], stream=body.get("stream", False), **shared)
    return CompletionRequest(prompt=body["prompt"], stream=body.get("stream", False), **shared)


@pytest.mark.parametrize("name", ["completion-stream-logprobs", "chat-logprobs"])
@pytest.mark.parametrize("label", LABELS)
async def test_vllm_replies_with_logprobs_witness_their_counts(label: str, name: str) -> None:
    """Each capture ran to max_tokens 8 (finish `length`), ASCII: one entry per token, exactly,
    and nothing withheld."""
    async with replaying(label, name) as url, EndpointClient(url) as client:
        witness = await take_witness(client, timed_request(label, name))

    assert witness.error is None
    assert (witness.claimed, witness.logprob_entries, witness.max_tokens) == (8, 8, 8)
    assert witness.finish_reason == "length"
    assert witness.withheld_allowance == 0
    assert witness.uncounted is None
    assert witness.findings == []
    assert witness.read
