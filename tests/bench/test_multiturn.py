"""The multiturn suite's pure parts: the conversations it builds, how a turn follows the reply
before it, the sender's order over a fake llama-server that answers every tool-bearing chat
with a tool call, and the figures (an unreported cached count stays unverified, never 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkrig.bench.multiturn import (
    TURN_KINDS,
    ConversationSender,
    conversation_requests,
    followed,
    later_turns_prompt_rate,
    reply_message,
    turn_kind,
)
from sparkrig.bench.multiturn_figures import multiturn_figures
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import RequestSummary
from sparkrig.client import EndpointClient, RequestRecord
from sparkrig.client.accumulate import StreamAccumulator
from sparkrig.client.records import Usage
from sparkrig.wire.sse import SseReader
from tests.gateway.fake_upstream import TOOL_ARGUMENTS, FakeUpstream, serve_fake

SETTINGS = BenchSettings(conversations=2, turns=4, decode_tokens=16, opening_tokens=48)
CAPTURE = Path(__file__).parents[1] / "fixtures" / "llamacpp"


def test_a_real_second_turn_reads_its_cached_tokens_from_llama_cpp() -> None:
    """The embedded llama-server's own turn-2 reply (tests/fixtures/llamacpp/README.md), read by
    the client's reader: the cached count is the server's, and the prompt count is the whole."""
    raw = (CAPTURE / "multiturn-turn2-stream.txt").read_bytes()
    record = RequestRecord(url="u", api="chat", stream=True, model="m", send_ns=0)
    accumulator = StreamAccumulator(record)
    for n, event in enumerate(SseReader().feed(raw, 0)):
        if not event.is_done and event.data is not None:
            accumulator.add_chunk(n, json.loads(event.data))
    record = accumulator.finish(99)
    assert record.cached_prompt_tokens == 95  # usage.prompt_tokens_details.cached_tokens
    assert record.server_timings is not None
    assert record.server_timings["cache_n"] == 95  # the same figure, llama.cpp's own way
    assert record.usage is not None
    assert record.usage.prompt_tokens == 141 == 95 + record.server_timings["prompt_n"]
    record.usage = Usage(prompt_tokens=141)  # a reply without the OpenAI field
    assert record.cached_prompt_tokens == 95  # timings.cache_n answers
    record.server_timings = None
    assert record.cached_prompt_tokens is None  # nothing said: unknown, not 0
    sent = json.loads((CAPTURE / "multiturn-turn2-request.json").read_text())
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert sent["messages"][0]["content"].startswith(f"Session {sent['cache_salt']}.")


def test_each_conversation_opens_with_its_own_salt_and_keeps_it() -> None:
    make = conversation_requests("m", SETTINGS)
    first, again = make(), make()
    assert len(first) == 8
    salts = [request.extra["cache_salt"] for request in first]
    assert salts[:4] == [salts[0]] * 4  # one conversation, one salt (vLLM: its cache shared)
    assert salts[4:] == [salts[4]] * 4
    assert salts[0] != salts[4]
    assert again[0].extra["cache_salt"] not in salts  # a new sample, new conversations
    opening = first[0].messages[0]
    assert opening["role"] == "system"
    assert opening["content"].startswith(f"Session {salts[0]}.")  # the salt comes first
    assert [len(request.messages) for request in first[:4]] == [2, 1, 1, 1]  # the rest: sender
    assert all(request.tools for request in first)  # every turn carries the tool definition
    assert [turn_kind(n) for n in range(5)] == [*TURN_KINDS, "tool_call"]
    assert first[1].messages[0]["role"] == "tool"
    assert "Write a Python function" in first[2].messages[0]["content"]


def test_a_tool_result_answers_the_call_or_comes_as_the_users_text() -> None:
    result = [{"role": "tool", "content": '{"sky": "overcast"}'}]
    called = RequestRecord(url="u", api="chat", stream=True, model="m", send_ns=0)
    called.tool_calls = [{"id": "call-7", "type": "function", "function": {"name": "get_weather"}}]
    assert followed(result, called) == [
        {"role": "tool", "tool_call_id": "call-7", "content": '{"sky": "overcast"}'}
    ]
    silent = RequestRecord(url="u", api="chat", stream=True, model="m", send_ns=0, content="Hi")
    [message] = followed(result, silent)
    assert message["role"] == "user"
    assert message["content"].startswith('The get_weather tool returned: {"sky": "overcast"}')
    assert reply_message(silent) == {"role": "assistant", "content": "Hi"}
    assert reply_message(called)["tool_calls"] == called.tool_calls
    user = [{"role": "user", "content": "next"}]
    assert followed(user, None) == user


async def test_the_sender_grows_each_conversation_by_the_replies_it_got() -> None:
    upstream = FakeUpstream()
    async with serve_fake(upstream) as url, EndpointClient(url) as client:
        requests = conversation_requests("m", SETTINGS)()
        records, load = await ConversationSender(client, turns=4, parallel=1)(requests)
    assert len(records) == 8
    assert [record.error for record in records] == [None] * 8
    assert load.processes == 1
    # parallel=1: the first conversation's four turns, then the second's
    salts = [body["cache_salt"] for body in upstream.received]
    assert salts == [requests[0].extra["cache_salt"]] * 4 + [requests[4].extra["cache_salt"]] * 4
    turn_2 = upstream.received[1]["messages"]
    assert [m["role"] for m in turn_2] == ["system", "user", "assistant", "tool"]
    assert turn_2[2]["tool_calls"][0]["function"]["arguments"] == TOOL_ARGUMENTS
    assert turn_2[3]["tool_call_id"] == "call-1"  # the id the fake's call carried
    lengths = [len(body["messages"]) for body in upstream.received[:4]]
    assert lengths == [2, 4, 6, 8]  # each turn: the reply before it and its own message
    assert requests[3].messages == upstream.received[3]["messages"]  # as it was sent


async def test_the_sender_refuses_a_sample_that_is_not_whole_conversations() -> None:
    async with EndpointClient("http://127.0.0.1:9") as client:
        sender = ConversationSender(client, turns=4, parallel=None)
        with pytest.raises(ValueError, match="conversations of 4 chat turns"):
            await sender(conversation_requests("m", SETTINGS)()[:3])


def _record(prompt: int | None, ttft_ns: int) -> RequestRecord:
    record = RequestRecord(url="u", api="chat", stream=True, model="m", send_ns=0)
    record.first_token_ns = ttft_ns
    record.usage = Usage(prompt_tokens=prompt)
    return record


def test_the_point_value_is_the_later_turns_prompt_tokens_over_their_ttft() -> None:
    value_of = later_turns_prompt_rate(2)
    second = 1_000_000_000
    records = [
        _record(100, 9 * second),
        _record(300, second),
        _record(50, second),
        _record(90, second),
    ]
    assert value_of(records) == pytest.approx((300 + 90) / 2)  # turn 1s left out
    assert value_of([_record(100, second), _record(None, second)]) is None


def _turn(prompt: int, cached: int | None, ttft_s: float) -> RequestSummary:
    return RequestSummary(
        prompt_sha256="x",
        prompt_tokens=prompt,
        cached_prompt_tokens=cached,
        completion_tokens=8,
        token_source="final_usage",
        ttft_s=ttft_s,
        decode_tps=None,
        e2e_s=None,
        finish_reason="length",
        first_output_ns=None,
        last_output_ns=None,
    )


def test_figures_per_turn_and_per_conversation_when_the_cache_served_the_turns() -> None:
    # two samples of one conversation of three turns: llama.cpp's counts (measured shapes)
    samples = [
        [_turn(90, 3, 2.0), _turn(143, 97, 0.8), _turn(173, 150, 0.5)],
        [_turn(91, 5, 1.2), _turn(144, 98, 0.6), _turn(174, 151, 0.3)],
    ]
    figures = multiturn_figures(samples, conversations=1, turns=3)
    assert figures.verdict == "reused", figures.note
    one, two, three = figures.per_turn
    assert (one.kind, two.kind, three.kind) == ("tool_call", "tool_result", "code")
    assert one.ttft_s is not None
    assert one.ttft_s.median == pytest.approx(1.6)
    assert two.ttft_vs_turn_1 == pytest.approx(0.7 / 1.6)
    assert two.cached_share == pytest.approx((97 + 98) / (143 + 144))
    assert two.reported == two.requests == 2
    assert [session.hit_rate for session in figures.sessions] == [
        pytest.approx((97 + 150) / (143 + 173)),
        pytest.approx((98 + 151) / (144 + 174)),
    ]
    assert figures.reused_of_previous == pytest.approx(
        (97 + 150 + 98 + 151) / (90 + 143 + 91 + 144)
    )
    assert figures.note.startswith("prefix reuse: turns 2..T found 496 prompt tokens")


def test_a_cache_that_served_only_the_template_head_reads_missed() -> None:
    samples = [[_turn(90, 0, 2.0), _turn(143, 3, 2.9), _turn(173, 3, 3.4)]]
    figures = multiturn_figures(samples, conversations=1, turns=3)
    assert figures.verdict == "missed"
    assert figures.note.startswith("prefix reuse MISSED: turns 2..T found 6 prompt tokens")
    assert figures.per_turn[2].cached_share == pytest.approx(3 / 173)


def test_a_server_that_says_nothing_of_its_cache_is_unverified_never_zero() -> None:
    samples = [
        [_turn(90, None, 2.0), _turn(143, None, 0.8)],
        [_turn(90, None, 2.0), _turn(143, 80, 0.8)],
    ]
    silent = multiturn_figures(samples[:1], conversations=1, turns=2)
    assert silent.verdict == "unverified"
    assert silent.reused_of_previous is None
    assert silent.hit_rate is None
    assert [turn.cached_share for turn in silent.per_turn] == [None, None]
    assert [turn.cached_tokens for turn in silent.per_turn] == [None, None]
    assert "UNVERIFIED" in silent.note
    partly = multiturn_figures(samples, conversations=1, turns=2)
    assert partly.per_turn[1].reported == 1
    assert partly.per_turn[1].cached_share == pytest.approx(80 / 143)  # only what was said
    assert [session.hit_rate for session in partly.sessions] == [None, pytest.approx(80 / 143)]
    assert "(of 2; the others gave no count)" in partly.note
