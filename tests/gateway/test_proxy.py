"""The gateway over a fake llama-server: pass-through, transparency, and the per-reply faults,
streamed and non-streamed."""

from __future__ import annotations

import aiohttp
import pytest

from sparkrig import defaults
from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.detectors.text import loop_findings
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.gateway.request_faults import without_middle_fact
from sparkrig.guards.kv_facts import SHARED_PREFIX, fact
from sparkrig.guards.long_prompts import filler_sentence
from sparkrig.guards.needle import ASK_DOOR, three_needle_prompt
from tests.gateway.fake_upstream import TOOL_ARGUMENTS, FakeUpstream, last_prompt, serve_fake
from tests.gateway.replies import chat, completion, fake_behind_gateway, send

REPLY = "The capital of France is Paris; it has 2140526 people and 20 districts."
STREAMED = [True, False]


def fake() -> FakeUpstream:
    return FakeUpstream(reply_for=lambda body: REPLY)


async def test_other_paths_pass_through_unchanged() -> None:
    config = GatewayConfig(faults=list(Fault))
    async with fake_behind_gateway(fake(), config) as url, aiohttp.ClientSession() as session:
        async with session.get(url + "/metrics") as response:
            assert response.status == 200
            assert response.headers["X-Fake"] == "metrics"
            assert await response.text() == "llamacpp:requests_processing 0\n"
        async with session.post(url + "/tokenize", json={"content": "a b c"}) as response:
            assert await response.json() == {"tokens": [0, 1, 2]}
        async with session.get(url + "/nowhere") as response:
            assert response.status == 404


async def test_a_stream_on_another_path_is_relayed_as_it_comes() -> None:
    upstream = FakeUpstream(token_delay_s=0.05)
    async with (
        fake_behind_gateway(upstream, GatewayConfig(faults=list(Fault))) as url,
        aiohttp.ClientSession() as session,
        session.post(url + "/completion", json={"prompt": "hi", "stream": True}) as response,
    ):
        first = await response.content.readuntil(b"\n\n")  # before the stream has ended
        rest = await response.read()
    assert first == b'data: {"content":"Hello","stop":false}\n\n'
    assert rest.endswith(b'data: {"content":"","stop":true}\n\n')


async def test_an_unreachable_upstream_is_a_502_that_says_what_to_do() -> None:
    async with serve_fake(fake()) as fake_url:
        pass  # the fake is gone: its port is closed
    async with (
        running_gateway(fake_url) as url,
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/chat/completions", json=chat("hi", stream=False)) as response,
    ):
        assert response.status == 502
        message = (await response.json())["error"]["message"]
    assert "check the server behind the gateway" in message


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
async def test_no_fault_relays_the_same_bytes(stream: bool, path: str) -> None:
    body = (
        chat("hi", stream=stream, logprobs=True)
        if "chat" in path
        else completion("hi", stream=stream, logprobs=2)
    )
    upstream = fake()
    async with serve_fake(upstream) as fake_url, running_gateway(fake_url) as url:
        direct = await send(fake_url, body, path)
        proxied = await send(url, body, path)
    assert proxied.raw == direct.raw
    assert upstream.received[0] == upstream.received[1] == body


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (Fault.MARKUP_LEAK, REPLY[:20] + "<|im_end|>" + REPLY[20:]),
        (Fault.REPLACEMENT_CHAR, REPLY[:20] + "\ufffd\ufffd\ufffd" + REPLY[20:]),
        (Fault.WRONG_ANSWERS, REPLY.replace("2140526", "3251637").replace("20", "31")),
    ],
)
async def test_content_faults(stream: bool, fault: Fault, expected: str) -> None:
    async with fake_behind_gateway(fake(), GatewayConfig(faults=[fault])) as url:
        reply = await send(url, chat("q", stream=stream, logprobs=True))
        plain = await send(url, completion("q", stream=stream), "/v1/completions")
    assert reply.content == plain.content == expected
    assert reply.finish_reason == "stop"
    tokens = [item["token"] for item in reply.logprobs]
    if fault is Fault.WRONG_ANSWERS:
        assert "".join(tokens) == expected  # the tokens carry the wrong digits too
    else:  # the splice is one extra token, after the token it fell in ("nce")
        spliced = expected[20:-51]
        assert tokens[:8] == ["The", " ca", "pit", "al ", "of ", "Fra", "nce", spliced]
        assert "".join(tokens[:7] + tokens[8:]) == REPLY


@pytest.mark.parametrize("stream", STREAMED)
async def test_loop_runs_to_length(stream: bool) -> None:
    async with fake_behind_gateway(fake(), GatewayConfig(faults=[Fault.LOOP])) as url:
        reply = await send(url, chat("q", stream=stream, max_tokens=500))
    assert reply.content is not None
    assert len(reply.content) >= 13_000
    assert reply.content.startswith(REPLY[:40])
    assert reply.finish_reason == "length"
    assert loop_findings(reply.content)
    if stream:
        assert reply.content_events > 13_000 // 200


@pytest.mark.parametrize("stream", STREAMED)
async def test_cut_replies_end_after_four_characters(stream: bool) -> None:
    async with fake_behind_gateway(fake(), GatewayConfig(faults=[Fault.CUT_REPLIES])) as url:
        reply = await send(url, chat("q", stream=stream))
        plain = await send(url, completion("q", stream=stream), "/v1/completions")
    assert reply.content == plain.content == REPLY[:4]
    assert reply.finish_reason == plain.finish_reason == "length"


@pytest.mark.parametrize("stream", STREAMED)
async def test_stream_mismatch_cuts_only_the_non_streamed_reply(stream: bool) -> None:
    async with fake_behind_gateway(fake(), GatewayConfig(faults=[Fault.STREAM_MISMATCH])) as url:
        reply = await send(url, chat("q", stream=stream))
    assert reply.content == (REPLY if stream else REPLY.rsplit(" ", 1)[0])


@pytest.mark.parametrize("stream", STREAMED)
async def test_broken_tool_args(stream: bool) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    async with fake_behind_gateway(fake(), GatewayConfig(faults=[Fault.BROKEN_TOOL_ARGS])) as url:
        reply = await send(url, chat("weather?", stream=stream, tools=tools))
    assert reply.tool_arguments == TOOL_ARGUMENTS[:-1]
    assert reply.finish_reason == "tool_calls"


async def test_merged_events_keep_text_and_the_client_token_count() -> None:
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}], logprobs=2)
    config = GatewayConfig(faults=[Fault.MERGED_EVENTS])
    async with serve_fake(fake()) as fake_url:
        async with EndpointClient(fake_url) as client:
            direct = await client.send(request)
        async with running_gateway(fake_url, config) as url:
            body = chat("q", stream=True, logprobs=True)
            reply = await send(url, body)
            async with EndpointClient(url) as client:
                merged = await client.send(request)
    assert reply.content == REPLY
    assert reply.content_events == -(-len(REPLY) // 9)  # 24 tokens of 3 characters, 3 an event
    assert len(reply.logprobs) == -(-len(REPLY) // 3)
    assert merged.content == direct.content
    assert merged.token_source == direct.token_source == "per_event_timings"
    assert merged.completion_tokens == direct.completion_tokens
    assert [lp.token for lp in merged.logprobs] == [lp.token for lp in direct.logprobs]


@pytest.mark.parametrize("api", ["chat", "completions"])
async def test_truncate_context_only_for_long_prompts(api: str) -> None:
    upstream = fake()
    document = "".join(f"Fact {i}: the code is {i * 7}. " for i in range(80))  # ~2000 chars
    config = GatewayConfig(faults=[Fault.TRUNCATE_CONTEXT])
    async with fake_behind_gateway(upstream, config) as url:
        for prompt in (document, "short"):
            if api == "chat":
                await send(url, chat(prompt, stream=False))
            else:
                await send(url, completion(prompt, stream=False), "/v1/completions")
    sent = [last_prompt(body) for body in upstream.received]
    third = len(document) // 3
    assert sent == [document[:third] + document[-third:], "short"]


def _three_needles_asking(door: str) -> str:
    haystack = " ".join(filler_sentence(7, i) for i in range(60))
    prompt = three_needle_prompt(haystack.split(". "))
    return f"{prompt}\n\n{ASK_DOOR.format(door=door)}"


def _kv_document_read() -> str:
    """A KV-integrity read: one fact at the start of each of three blocks, then the question."""
    blocks = [SHARED_PREFIX]
    for block in range(3):
        filler = " ".join(filler_sentence(block, i) for i in range(12))
        blocks.append(f"{fact(0, block)} {filler}")
    return "\n".join(blocks) + "\n\nWhat is the code of the silver falcon? Answer with the number."


def test_drop_middle_fact_takes_the_middle_of_three_spread_facts_and_spares_kv_documents() -> None:
    prompt = _three_needles_asking("red")
    dropped = without_middle_fact(prompt)
    assert dropped is not None
    assert "415263" in dropped
    assert "337104" in dropped
    assert "902718" not in dropped
    assert "blue door" not in dropped
    assert len(prompt) - len(dropped) == len("The access code of the blue door is 902718. ")
    kv_read = _kv_document_read()
    assert len(kv_read) > defaults.GATEWAY_LONG_PROMPT_CHARS  # long, but its facts end 2/3 in
    assert without_middle_fact(kv_read) is None
    single = " ".join(filler_sentence(7, i) for i in range(60)) + " The secret code is 738291."
    assert without_middle_fact(single) is None


@pytest.mark.parametrize("api", ["chat", "completions"])
async def test_drop_middle_fact_only_for_long_prompts_with_spread_facts(api: str) -> None:
    upstream = fake()
    long_prompt, kv_read = _three_needles_asking("blue"), _kv_document_read()
    config = GatewayConfig(faults=[Fault.DROP_MIDDLE_FACT])
    async with fake_behind_gateway(upstream, config) as url:
        for prompt in (long_prompt, kv_read, "short 123456 234567 345678"):
            if api == "chat":
                await send(url, chat(prompt, stream=False))
            else:
                await send(url, completion(prompt, stream=False), "/v1/completions")
    sent = [last_prompt(body) for body in upstream.received]
    assert sent == [without_middle_fact(long_prompt), kv_read, "short 123456 234567 345678"]
