"""Faults that depend on what else is in flight, or on how many were served: cross-talk, block
corruption, degrade-after, drift-after."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from sparkrig import defaults
from sparkrig.gateway import Fault, GatewayConfig
from sparkrig.gateway.plan import prompt_in_share
from sparkrig.gateway.soft_logprobs import SOFT_RUNNER_UP, SOFT_TOP1
from tests.gateway.fake_upstream import FakeUpstream, last_prompt
from tests.gateway.replies import Reply, chat, fake_behind_gateway, send

STREAMED = [True, False]
TOKEN_DELAY_S = 0.01  # 3 characters per token: a 60-character reply takes 0.2 s
STAGGER_S = 0.05


def reply_for(body: dict[str, Any]) -> str:
    """A reply that names its prompt's first word, with a number to alter."""
    word = last_prompt(body).split()[0]
    return f"Reply for {word}: the planted code is 4096 and the rest is fine text here."


async def staggered(url: str, bodies: list[dict[str, Any]]) -> list[Reply]:
    async def one(index: int, body: dict[str, Any]) -> Reply:
        await asyncio.sleep(index * STAGGER_S)  # a fixed arrival order
        return await send(url, body)

    return list(await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies))))


@pytest.mark.parametrize("stream", STREAMED)
async def test_cross_talk_splices_a_neighbour_span(stream: bool) -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    async with fake_behind_gateway(upstream, GatewayConfig(faults=[Fault.CROSS_TALK])) as url:
        alone = await send(url, chat("alpha", stream=stream))
        pair = [chat("alpha", stream=stream), chat("bravo", stream=stream, logprobs=True)]
        first, second = await staggered(url, pair)
    clean_alpha = reply_for(chat("alpha", stream=False))
    clean_bravo = reply_for(chat("bravo", stream=False))
    assert alone.content == first.content == clean_alpha  # started alone: untouched
    assert second.content == clean_bravo[:20] + clean_alpha[:30] + clean_bravo[20:]
    assert clean_alpha[:30] in [item["token"] for item in second.logprobs]  # one spliced token


async def test_cross_talk_leaves_sequential_requests_alone() -> None:
    upstream = FakeUpstream(reply_for=reply_for)
    async with fake_behind_gateway(upstream, GatewayConfig(faults=[Fault.CROSS_TALK])) as url:
        replies = [await send(url, chat(w, stream=True)) for w in ("alpha", "bravo", "charlie")]
    assert [r.content for r in replies] == [
        reply_for(chat(w, stream=True)) for w in ("alpha", "bravo", "charlie")
    ]


def long_prompt(word: str) -> str:
    return word + " " + "The document continues with ordinary words. " * 40  # ~1800 chars


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize(
    ("prompts", "corrupted"),
    [
        (["alpha", "bravo", "charlie"], [False, False, True]),  # the third long one arrives last
        (["alpha", "bravo", "charlie", "delta"], [False, False, True, False]),  # one per crowd
        (["alpha", "bravo"], [False, False]),  # two long ones: below the threshold
        (["short1", "short2", "short3"], [False, False, False]),  # short prompts
    ],
)
async def test_block_corruption_needs_three_long_prompts_in_flight(
    stream: bool, prompts: list[str], corrupted: list[bool]
) -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    config = GatewayConfig(faults=[Fault.BLOCK_CORRUPTION])
    bodies = [
        chat(p if p.startswith("short") else long_prompt(p), stream=stream, logprobs=True)
        for p in prompts
    ]
    async with fake_behind_gateway(upstream, config) as url:
        replies = await staggered(url, bodies)
    for body, reply, altered in zip(bodies, replies, corrupted, strict=True):
        clean = reply_for(body)
        assert reply.content == (clean.replace("4096", "5107") if altered else clean)
        assert "".join(item["token"] for item in reply.logprobs) == reply.content


def soft(reply: Reply) -> bool:
    values = {item["logprob"] for item in reply.logprobs}
    if values != {SOFT_TOP1}:
        return False
    return all(item["top_logprobs"][1]["logprob"] == SOFT_RUNNER_UP for item in reply.logprobs)


def sharp(reply: Reply) -> bool:
    """Logprobs came back and none was softened (`not soft` alone also holds for no logprobs)."""
    return bool(reply.logprobs) and all(item["logprob"] != SOFT_TOP1 for item in reply.logprobs)


@pytest.mark.parametrize("stream", STREAMED)
async def test_degrade_after_softens_lone_requests_once_enough_were_served(stream: bool) -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    config = GatewayConfig(faults=[Fault.DEGRADE_AFTER], after_requests=2)
    probe = chat("alpha", stream=stream, logprobs=True, top_logprobs=3)
    async with fake_behind_gateway(upstream, config) as url:
        early = [await send(url, probe) for _ in range(2)]
        late = await send(url, probe)
        without_logprobs = await send(url, chat("alpha", stream=stream))
        neighbour, with_neighbour = await staggered(url, [chat("bravo", stream=stream), probe])
        first_of_two, _ = await staggered(url, [probe, chat("bravo", stream=stream)])
        late_again = await send(url, probe)
    assert all(sharp(reply) for reply in early)
    assert soft(late)
    assert soft(late_again)
    assert sharp(with_neighbour)
    assert soft(first_of_two)  # lone when it arrived: the neighbour came later
    assert late.content == early[0].content == without_logprobs.content == reply_for(probe)
    assert [i["token"] for i in late.logprobs] == [i["token"] for i in early[0].logprobs]
    assert neighbour.content == reply_for(chat("bravo", stream=False))


async def test_a_client_that_leaves_mid_stream_is_no_longer_in_flight() -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=0.05)
    config = GatewayConfig(faults=[Fault.DEGRADE_AFTER], after_requests=0)
    async with fake_behind_gateway(upstream, config) as url:
        async with aiohttp.ClientSession() as session:
            body = chat("alpha", stream=True)
            async with session.post(url + "/v1/chat/completions", json=body) as response:
                await response.content.readuntil(b"\n\n")  # one event, then hang up
        await asyncio.sleep(0.3)  # the gateway notices when it next writes to the client
        lone = await send(url, chat("bravo", stream=False, logprobs=True, top_logprobs=2))
    assert soft(lone)  # nothing else was in flight any more


async def test_body_under_load_alters_only_non_streamed_replies_that_overlapped_another() -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    config = GatewayConfig(faults=[Fault.BODY_UNDER_LOAD])
    async with fake_behind_gateway(upstream, config) as url:
        alone = await send(url, chat("alpha", stream=False, logprobs=True))
        mixed = await staggered(
            url,
            [
                chat("alpha", stream=False, logprobs=True),  # first: its neighbour came later
                chat("bravo", stream=True, logprobs=True),
                chat("charlie", stream=False, logprobs=True),
            ],
        )
        streamed_pair = await staggered(
            url, [chat("delta", stream=True), chat("echo", stream=True)]
        )
    assert alone.content == reply_for(chat("alpha", stream=False))
    first, streamed, last = mixed
    assert first.content == reply_for(chat("alpha", stream=False)).replace("4096", "5107")
    assert last.content == reply_for(chat("charlie", stream=False)).replace("4096", "5107")
    assert "".join(item["token"] for item in last.logprobs) == last.content  # tokens follow
    assert streamed.content == reply_for(chat("bravo", stream=True))
    for word, reply in zip(("delta", "echo"), streamed_pair, strict=True):
        assert reply.content == reply_for(chat(word, stream=True))


async def test_soft_body_alone_softens_only_lone_non_streamed_replies() -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    config = GatewayConfig(faults=[Fault.SOFT_BODY_ALONE])
    probe = {"logprobs": True, "top_logprobs": 3}
    async with fake_behind_gateway(upstream, config) as url:
        whole = await send(url, chat("alpha", stream=False, **probe))
        streamed = await send(url, chat("alpha", stream=True, **probe))
        _, beside = await staggered(
            url, [chat("bravo", stream=True), chat("alpha", stream=False, **probe)]
        )
    assert soft(whole)
    assert sharp(streamed)
    assert sharp(beside)  # a neighbour was in flight when it arrived
    assert whole.content == streamed.content == reply_for(chat("alpha", stream=False))


@pytest.mark.parametrize("stream", STREAMED)
async def test_drift_after_moves_every_logprob_once_enough_were_served(stream: bool) -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    config = GatewayConfig(faults=[Fault.DRIFT_AFTER], after_requests=2)
    probe = chat("alpha", stream=stream, logprobs=True, top_logprobs=3)
    async with fake_behind_gateway(upstream, config) as url:
        early = [await send(url, probe) for _ in range(2)]
        late = await send(url, probe)
        _, beside = await staggered(url, [chat("bravo", stream=stream), probe])
    shift = defaults.GATEWAY_DRIFT_SHIFT_NATS
    assert early[0].logprobs == early[1].logprobs  # before the threshold: untouched
    for reply in (late, beside):  # alone or with a neighbour alike
        assert reply.content == early[0].content == reply_for(probe)
        for before, after in zip(early[0].logprobs, reply.logprobs, strict=True):
            assert after["token"] == before["token"]
            assert after["logprob"] == pytest.approx(before["logprob"] + shift)
            assert [t["token"] for t in after["top_logprobs"]] == [
                t["token"] for t in before["top_logprobs"]
            ]
            assert [t["logprob"] for t in after["top_logprobs"]] == pytest.approx(
                [t["logprob"] + shift for t in before["top_logprobs"]]
            )


async def test_wrong_under_load_alters_every_reply_that_arrived_beside_another() -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    config = GatewayConfig(faults=[Fault.WRONG_UNDER_LOAD])
    async with fake_behind_gateway(upstream, config) as url:
        alone = [await send(url, chat("alpha", stream=stream)) for stream in STREAMED]
        first, *later = await staggered(
            url,
            [
                chat("alpha", stream=False),  # arrived alone: its neighbours came later
                chat("bravo", stream=True, logprobs=True),
                chat("charlie", stream=False, logprobs=True),
            ],
        )
    for reply in alone:
        assert reply.content == reply_for(chat("alpha", stream=False))
    assert first.content == reply_for(chat("alpha", stream=False))
    for word, reply in zip(("bravo", "charlie"), later, strict=True):
        assert reply.content == reply_for(chat(word, stream=False)).replace("4096", "5107")
        assert "".join(item["token"] for item in reply.logprobs) == reply.content


def test_a_share_of_prompts_is_the_same_prompts_at_every_run() -> None:
    prompts = [f"What is {n} times 3?" for n in range(1000)]
    assert all(prompt_in_share(prompt, 1.0) for prompt in prompts)
    picked = [prompt for prompt in prompts if prompt_in_share(prompt, 0.2)]
    assert 150 < len(picked) < 250
    assert picked == [prompt for prompt in prompts if prompt_in_share(prompt, 0.2)]
    assert set(picked) <= {prompt for prompt in prompts if prompt_in_share(prompt, 0.5)}


async def test_wrong_under_load_at_a_share_alters_only_the_concurrent_prompts_in_it() -> None:
    upstream = FakeUpstream(reply_for=reply_for, token_delay_s=TOKEN_DELAY_S)
    config = GatewayConfig(faults=[Fault.WRONG_UNDER_LOAD], wrong_share=0.5)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    async with fake_behind_gateway(upstream, config) as url:
        replies = await staggered(url, [chat(word, stream=False) for word in words])
    altered = [
        word
        for word, reply in zip(words, replies, strict=True)
        if reply.content != reply_for(chat(word, stream=False))
    ]
    in_share = [word for word in words[1:] if prompt_in_share(word, 0.5)]
    assert altered == in_share  # alpha arrived alone
    assert 0 < len(altered) < len(words) - 1
