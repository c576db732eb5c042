"""The stop-in-reasoning guard against the DeepSeek-V4 stand-in (tests/gateway/deepseek_upstream.py
names the report of each behaviour): on a server whose default is thinking off (the recipe's
`{"thinking": false}`) it asks for thinking the family's way, with the 512-token budget; it FAILS
on a server that matches stops against the reasoning, PASSES through `gateway serve`, and SKIPs,
saying why, only when the model gives no reasoning when asked."""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.client.endpoint import EndpointClient
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.context import CheckSettings, GuardContext
from sparkrig.guards.stop_in_reasoning import (
    reply_budget,
    stop_in_reasoning_guard,
    stop_word_from,
)
from sparkrig.guards.verdict import GuardResult
from tests.gateway.deepseek_upstream import MODEL, DeepSeekV4Upstream, serve_deepseek
from tests.gateway.fake_upstream import FakeUpstream, serve_fake

THINKING_OFF = {"thinking": False}  # the recipe's server default (field notes: think-in-prompt)


async def guard_at(url: str, model: str = MODEL) -> GuardResult:
    async with EndpointClient(url) as client:
        return await stop_in_reasoning_guard(
            GuardContext(client, model, CheckSettings(), Baseline(model=model))
        )


async def test_it_asks_for_thinking_and_fails_where_a_stop_fires_inside_the_reasoning() -> None:
    upstream = DeepSeekV4Upstream(default_kwargs=THINKING_OFF)
    async with serve_deepseek(upstream) as url:
        result = await guard_at(url)
    assert result.verdict == "FAIL", result.evidence
    assert "a client stop string fired inside the reasoning" in result.evidence
    first = upstream.received[0]
    assert first["chat_template_kwargs"] == {"thinking": True}
    assert first["max_tokens"] == defaults.CHECK_THINKING_REPLY_TOKENS
    assert upstream.prompts[0].endswith("<think>")  # thinking on despite the server's default


async def test_it_passes_through_the_gateway_that_keeps_stops_dormant() -> None:
    upstream = DeepSeekV4Upstream(default_kwargs=THINKING_OFF)
    async with (
        serve_deepseek(upstream) as upstream_url,
        running_serving_gateway(upstream_url, ServeConfig()) as (url, _gateway),
    ):
        result = await guard_at(url)
    assert result.verdict == "PASS", result.evidence
    assert "stop" not in upstream.received[-1]


async def test_it_skips_with_the_reason_only_when_the_model_cannot_think() -> None:
    plain = FakeUpstream(reply_for=lambda body: "A kilogram of each weighs the same.")
    async with serve_fake(plain) as url:
        result = await guard_at(url, model="llama-3")
    assert result.verdict == "SKIP"
    assert "the model cannot think here" in result.evidence
    assert "family think-tags" in result.evidence
    assert plain.received[0]["chat_template_kwargs"] == {"thinking": True, "enable_thinking": True}


def test_the_budget_is_512_or_what_the_servers_context_leaves() -> None:
    assert reply_budget(None) == reply_budget(1048576) == 512
    assert reply_budget(320) == 256


async def test_it_skips_where_the_reply_without_a_stop_has_no_answer_either() -> None:
    """Seen on vLLM 0.26.0 (benchmarks/results/vllm-h200/2026-12-05-h100/think): SmolLM2 given a
    `<think>` it was never trained on wrote `<|im_start|>` as its reasoning and ended with no
    answer; the guard drew "start" from it as a stop word and blamed the stop string."""
    upstream = DeepSeekV4Upstream(default_kwargs=THINKING_OFF, reasoning="<|im_start|>", answer="")
    async with serve_deepseek(upstream) as url:
        result = await guard_at(url)
    assert result.verdict == "SKIP", result.evidence
    assert "without a stop string the reply has no answer either" in result.evidence
    assert "(finish stop, 1 token, reasoning '<|im_start|>" in result.evidence
    assert len(upstream.received) == 1  # no request with a stop string was sent


def test_a_stop_word_is_never_a_special_tokens_name() -> None:
    assert stop_word_from("<|im_start|>", "") is None
    assert stop_word_from("<|im_start|><｜User｜></think> weigh it", "") == "weigh"
    assert stop_word_from("Question: which weighs more?", "Question") == "which"
