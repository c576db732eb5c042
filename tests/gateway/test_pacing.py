"""`gateway serve --stretch`: replies delivered exactly that share slower, and nothing else.

The upstream is the llama-server-shaped fake with a fixed delay per token, so the only timing
that can change between the two gateways is the stretch."""

from __future__ import annotations

import json
import subprocess
import time

import aiohttp
import pytest

from sparkrig.gateway.pacing import stretched_ns
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from tests.conftest import SPARKRIG
from tests.gateway.fake_upstream import FakeUpstream, serve_fake
from tests.gateway.replies import chat

TOKEN_DELAY_S = 0.02


def test_a_stretch_scales_the_delay_since_the_request_not_the_clock() -> None:
    assert stretched_ns(1_000, 1_000, 0.1) == 1_000
    assert stretched_ns(1_000, 2_000, 0.1) == 2_100
    assert stretched_ns(5_000, 25_000, 0.5) == 35_000
    assert stretched_ns(1_000, 2_000, 0.0) == 2_000


def test_a_negative_stretch_is_refused() -> None:
    with pytest.raises(ValueError, match="stretch"):
        stretched_ns(0, 10, -0.1)


async def _content_times(url: str, body: dict[str, object]) -> tuple[float, float, str]:
    """(seconds to the first content event, first to last content event, the text)."""
    times: list[float] = []
    text = ""
    async with aiohttp.ClientSession() as session:
        start = time.perf_counter()
        async with session.post(f"{url}/v1/chat/completions", json=body) as response:
            async for line in response.content:
                data = line.strip().removeprefix(b"data: ")
                if not data or data == b"[DONE]":
                    continue
                delta = (json.loads(data).get("choices") or [{}])[0].get("delta") or {}
                if delta.get("content"):
                    times.append(time.perf_counter() - start)
                    text += delta["content"]
    return times[0], times[-1] - times[0], text


async def test_stretch_slows_the_first_token_and_every_gap_by_its_share() -> None:
    fake = FakeUpstream(token_delay_s=TOKEN_DELAY_S, token_chars=2)
    body = chat("count the apples in the crate, slowly", stream=True)
    async with serve_fake(fake) as fake_url:
        async with running_serving_gateway(fake_url) as (url, _):
            plain_first, plain_span, plain_text = await _content_times(url, body)
        async with running_serving_gateway(fake_url, ServeConfig(stretch=1.0)) as (url, _):
            slow_first, slow_span, slow_text = await _content_times(url, body)
    assert slow_text == plain_text  # the reply itself is untouched
    assert plain_span > 10 * TOKEN_DELAY_S  # enough gaps to time
    # twice as long, not once (stretch off) or compounding (each wait delaying the next stamp)
    assert 1.7 < slow_span / plain_span < 2.3
    # the time before the gateway (connection, request parsing) is not stretched: a looser floor
    assert 1.35 < slow_first / plain_first < 2.6


async def test_a_stretched_whole_reply_arrives_later_and_unchanged() -> None:
    fake = FakeUpstream(token_delay_s=TOKEN_DELAY_S, token_chars=2)
    body = chat("count the apples in the crate, slowly", stream=False)
    elapsed = []
    replies = []
    async with serve_fake(fake) as fake_url:
        for stretch in (0.0, 1.0):
            async with (
                running_serving_gateway(fake_url, ServeConfig(stretch=stretch)) as (url, _),
                aiohttp.ClientSession() as session,
            ):
                start = time.perf_counter()
                async with session.post(f"{url}/v1/chat/completions", json=body) as response:
                    replies.append((await response.json())["choices"][0]["message"]["content"])
                elapsed.append(time.perf_counter() - start)
    assert replies[0] == replies[1]
    assert 1.35 < elapsed[1] / elapsed[0] < 2.5  # unstretched: about 1


@pytest.mark.parametrize("stretch", ["-0.1", "10"])
def test_a_stretch_out_of_range_is_refused_in_one_line(stretch: str) -> None:
    result = subprocess.run(
        [SPARKRIG, "gateway", "serve", "http://127.0.0.1:9", "--stretch", stretch],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode != 0
    assert "--stretch" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
