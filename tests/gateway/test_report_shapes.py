"""The field reports' own request shapes through `gateway serve`, against a DeepSeek-V4 stand-in
(tests/gateway/deepseek_upstream.py says which report each behaviour comes from), spoken to with
the official `openai` client: the thinking switch in `chat_template_kwargs`, thinking inherited
from the server's default chat-template kwargs, an effort inside the kwargs, `reasoning_effort`
"none" with thinking on, a budget the reasoning uses up, and a server without the parser."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from sparkrig.gateway.serve import ServingGateway, running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from tests.conftest import SPARKRIG
from tests.gateway.deepseek_upstream import (
    ANSWER,
    MODEL,
    REASONING,
    DeepSeekV4Upstream,
    serve_deepseek,
)
from tests.gateway.replies import counted, send

try:
    import openai
except ImportError:  # the dev extra brings it; without it the same requests go through aiohttp
    openai = None

STOP = "Question:"  # restated by the chain of thought (field notes: stop-in-reasoning)
ASK = [{"role": "user", "content": "Which is heavier, a kilogram of iron or of wool?"}]
BUDGET = 200
KEYS = ("reasoning", "reasoning_content")


@asynccontextmanager
async def through_gateway(
    upstream: DeepSeekV4Upstream, serve: ServeConfig | None = None
) -> AsyncIterator[tuple[str, str, ServingGateway]]:
    """(upstream URL, gateway URL, gateway)."""
    async with (
        serve_deepseek(upstream) as upstream_url,
        running_serving_gateway(upstream_url, serve or ServeConfig()) as (url, gateway),
    ):
        yield upstream_url, url, gateway


async def ask(url: str, *, stream: bool, **fields: Any) -> tuple[str | None, str, str | None]:
    """(content, reasoning, finish_reason) read with the openai client, streamed or not (with
    aiohttp when the client is not installed)."""
    if openai is None:
        return await ask_without_openai(url, stream=stream, **fields)
    extra_body = {k: fields.pop(k) for k in ("chat_template_kwargs",) if k in fields}
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
    async with client:
        if not stream:
            reply = await client.chat.completions.create(
                model=MODEL,
                messages=ASK,
                max_tokens=fields.pop("max_tokens", BUDGET),
                extra_body=extra_body,
                **fields,
            )
            message = reply.choices[0].message
            extra = message.model_extra or {}
            return (
                message.content,
                str(extra.get("reasoning") or ""),
                reply.choices[0].finish_reason,
            )
        content, reasoning, finish = [], [], None
        chunks = await client.chat.completions.create(
            model=MODEL,
            messages=ASK,
            max_tokens=fields.pop("max_tokens", BUDGET),
            stream=True,
            extra_body=extra_body,
            **fields,
        )
        async for chunk in chunks:
            for choice in chunk.choices:
                delta_extra = choice.delta.model_extra or {}
                content.append(choice.delta.content or "")
                reasoning.append(str(delta_extra.get("reasoning") or ""))
                finish = choice.finish_reason or finish
        return "".join(content) or None, "".join(reasoning), finish


async def ask_without_openai(
    url: str, *, stream: bool, **fields: Any
) -> tuple[str | None, str, str | None]:
    body = {"model": MODEL, "messages": ASK, "max_tokens": BUDGET, "stream": stream, **fields}
    reply = await send(url, body)
    if not stream:
        message = reply.choice["message"]
        return message["content"], str(message.get("reasoning") or ""), reply.finish_reason
    deltas = [c["choices"][0].get("delta") or {} for c in reply.chunks if c.get("choices")]
    content = "".join(d.get("content") or "" for d in deltas)
    reasoning = "".join(d.get("reasoning") or "" for d in deltas)
    return content or None, reasoning, reply.finish_reason


def test_the_official_openai_client_is_the_one_used() -> None:
    """The tests above speak through the openai package when the dev extra is installed."""
    if openai is None:
        pytest.skip("the openai package is not installed: pip install -e '.[dev]'")
    assert openai.AsyncOpenAI


async def test_the_stand_in_reproduces_the_reports_prompts_and_replies() -> None:
    """Direct to the stand-in, no gateway: the facts the gateway is tested against."""
    upstream = DeepSeekV4Upstream()
    async with serve_deepseek(upstream) as url:
        base = {"model": MODEL, "messages": ASK, "max_tokens": BUDGET, "stream": False}
        on = await send(url, base | {"chat_template_kwargs": {"thinking": True}})
        off = await send(url, base)
        decapitated = await send(
            url, base | {"chat_template_kwargs": {"thinking": True}, "stop": [STOP]}
        )
        hi = [
            (
                await send(
                    url,
                    {
                        "model": MODEL,
                        "max_tokens": 1,
                        "reasoning_effort": effort,
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                )
            ).body
            for effort in ("low", "high", "max")
        ]
    assert upstream.prompts[0].endswith("<｜Assistant｜><think>")
    assert upstream.prompts[1].endswith("<｜Assistant｜></think>")
    message = on.choice["message"]
    assert "reasoning_content" not in message
    assert message["reasoning"] == REASONING
    assert message["content"] == ANSWER
    assert off.choice["message"]["reasoning"] is None
    assert off.choice["message"]["content"] == ANSWER
    assert decapitated.choice["message"]["content"] is None
    assert decapitated.choice["finish_reason"] == "stop"
    assert [body["usage"]["prompt_tokens"] for body in hi if body] == [5, 5, 84]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("shape", "server_default"),
    [
        ({"chat_template_kwargs": {"thinking": True}}, {}),
        ({"chat_template_kwargs": {"thinking": True, "reasoning_effort": "low"}}, {}),
        ({"chat_template_kwargs": {"reasoning_effort": "low"}}, {}),
        ({"reasoning_effort": "high"}, {"thinking": False}),
        ({}, {"thinking": True}),
    ],
    ids=[
        "thinking-switch",
        "switch-and-effort",
        "effort-in-kwargs",
        "top-level-effort",
        "server-default",
    ],
)
async def test_a_reasoning_request_of_the_reports_keeps_its_stops_away_from_the_upstream(
    shape: dict[str, Any], server_default: dict[str, Any], stream: bool
) -> None:
    upstream = DeepSeekV4Upstream(default_kwargs=server_default)
    serve = ServeConfig(server_chat_template_kwargs=server_default)
    async with through_gateway(upstream, serve) as (_, url, gateway):
        content, reasoning, finish = await ask(url, stream=stream, stop=[STOP], **shape)
    assert upstream.prompts[-1].endswith("<think>")
    assert "stop" not in upstream.received[-1]
    assert (content, reasoning, finish) == (ANSWER, REASONING, "stop")
    assert gateway.metrics.stops_held._value.get() == 1


async def test_thinking_inherited_from_the_server_is_missed_when_the_gateway_is_not_told() -> None:
    """The fault the cluster file's defaults prevent: the same request, the gateway not told that
    the server thinks by default, forwards the stop and the reply is decapitated."""
    upstream = DeepSeekV4Upstream(default_kwargs={"thinking": True})
    async with through_gateway(upstream) as (_, url, gateway):
        content, reasoning, finish = await ask(url, stream=False, stop=[STOP])
    assert upstream.received[-1]["stop"] == [STOP]
    assert content is None
    assert finish == "stop"
    assert reasoning == REASONING[: REASONING.index(STOP)].rstrip()
    assert counted(gateway, "empty_content", "cause", "stop_in_reasoning") == 1


async def test_a_thinking_off_request_keeps_its_stops() -> None:
    upstream = DeepSeekV4Upstream(default_kwargs={"thinking": False})
    serve = ServeConfig(server_chat_template_kwargs={"thinking": False})
    async with through_gateway(upstream, serve) as (_, url, _gateway):
        content, reasoning, finish = await ask(url, stream=True, stop=["kilogram each"])
    assert upstream.received[-1]["stop"] == ["kilogram each"]
    assert (content, reasoning, finish) == ("They weigh the same: one", "", "stop")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("shape", "server_default", "whence"),
    [
        ({"reasoning_effort": "none", "chat_template_kwargs": {"thinking": True}}, {}, "request"),
        ({"reasoning_effort": "none"}, {"thinking": True}, "server's default"),
    ],
    ids=["in-the-request", "inherited"],
)
async def test_reasoning_effort_none_with_thinking_on_is_flagged_on_that_request(
    shape: dict[str, Any], server_default: dict[str, Any], whence: str, stream: bool, tmp_path: Path
) -> None:
    upstream = DeepSeekV4Upstream(default_kwargs=server_default)
    log_path = tmp_path / "guards.jsonl"
    serve = ServeConfig(server_chat_template_kwargs=server_default, guard_log=log_path)
    async with through_gateway(upstream, serve) as (_, url, gateway):
        content, reasoning, finish = await ask(url, stream=stream, **shape)
        clean = await ask(url, stream=stream, reasoning_effort="low")
        page = (await send_metrics(url)).decode()
    # the report's shape: a chat-mode prompt, the whole answer filed as reasoning, content null
    assert upstream.prompts[0].endswith("</think>")
    assert (content, reasoning, finish) == (None, ANSWER, "stop")
    assert clean[0] == ANSWER
    assert counted(gateway, "detections", "detector", "reasoning_none_with_thinking") == 1
    assert counted(gateway, "empty_content", "cause", "reasoning_off_mismatch") == 1
    assert counted(gateway, "empty_content", "cause", "stop_in_reasoning") == 0
    assert 'sparkrig_gateway_detections_total{detector="reasoning_none_with_thinking"} 1.0' in page
    log = [json.loads(line) for line in log_path.read_text().splitlines()]
    flagged = [entry for entry in log if entry["detector"] == "reasoning_none_with_thinking"]
    assert len(flagged) == 1
    assert whence in flagged[0]["evidence"]
    assert "do not send reasoning_effort 'none' together with thinking on" in flagged[0]["message"]


@pytest.mark.parametrize("stream", [False, True])
async def test_on_vllm_0_26_none_with_thinking_answers_in_content_and_the_finding_says_so(
    stream: bool, tmp_path: Path
) -> None:
    """vLLM 0.26.0 reads 'none' as thinking off in renderer and parser (replayed): the reply is
    the answer, in content; the request is still flagged, and its message says where this
    reply landed instead of the report's whole-reply-in-reasoning."""
    upstream = DeepSeekV4Upstream(default_kwargs={"thinking": True}, runtime="vllm-0.26.0")
    log_path = tmp_path / "guards.jsonl"
    serve = ServeConfig(server_chat_template_kwargs={"thinking": True}, guard_log=log_path)
    async with through_gateway(upstream, serve) as (_, url, gateway):
        content, reasoning, finish = await ask(url, stream=stream, reasoning_effort="none")
    assert upstream.prompts[0].endswith("</think>")
    assert (content, reasoning, finish) == (ANSWER, "", "stop")
    assert counted(gateway, "detections", "detector", "reasoning_none_with_thinking") == 1
    assert counted(gateway, "empty_content", "cause", "reasoning_off_mismatch") == 0
    [flagged] = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert "this reply came without reasoning" in flagged["message"]


@pytest.mark.parametrize("stream", [False, True])
async def test_thinking_false_beside_a_top_level_effort_thinks_on_vllm_0_26_and_keeps_its_stops(
    stream: bool,
) -> None:
    """vLLM adds enable_thinking true beside the request's thinking false, and DeepSeek V4
    thinks (replayed). The gateway reads it as reasoning, holds the stop the chain of thought
    restates, and flags the contradictory ask: before, it read thinking off, sent the stop
    upstream, and the reply came back cut inside the reasoning, content null."""
    upstream = DeepSeekV4Upstream(runtime="vllm-0.26.0")
    shape = {"chat_template_kwargs": {"thinking": False}, "reasoning_effort": "high"}
    async with through_gateway(upstream) as (_, url, gateway):
        content, reasoning, finish = await ask(url, stream=stream, stop=[STOP], **shape)
    assert upstream.prompts[-1].endswith("<think>")
    assert "stop" not in upstream.received[-1]
    assert (content, reasoning, finish) == (ANSWER, REASONING, "stop")
    assert counted(gateway, "detections", "detector", "thinking_switch_conflict") == 1
    assert counted(gateway, "empty_content", "cause", "stop_in_reasoning") == 0


async def send_metrics(url: str) -> bytes:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/gateway/metrics") as response,
    ):
        return await response.read()


async def test_a_budget_the_reasoning_uses_up_is_classified_as_the_budget() -> None:
    upstream = DeepSeekV4Upstream()
    async with through_gateway(upstream) as (_, url, gateway):
        content, reasoning, finish = await ask(
            url, stream=True, max_tokens=8, chat_template_kwargs={"thinking": True}
        )
    assert (content, finish) == (None, "length")
    assert reasoning
    assert REASONING.startswith(reasoning)
    assert counted(gateway, "empty_content", "cause", "reasoning_budget") == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_server_without_the_parser_leaves_the_end_tag_in_content_and_the_gateway_splits(
    stream: bool,
) -> None:
    upstream = DeepSeekV4Upstream(reasoning_parser=False)
    async with serve_deepseek(upstream) as upstream_url:
        direct = await send(
            upstream_url,
            {
                "model": MODEL,
                "messages": ASK,
                "stream": False,
                "chat_template_kwargs": {"thinking": True},
            },
        )
        assert direct.choice["message"]["content"] == f"{REASONING}</think>{ANSWER}"
        serve = ServeConfig(template_opens_think=True)
        async with running_serving_gateway(upstream_url, serve) as (url, _gateway):
            content, reasoning, finish = await ask(
                url, stream=stream, chat_template_kwargs={"thinking": True}
            )
    assert (content, reasoning.strip(), finish) == (ANSWER, REASONING, "stop")


async def test_gateway_serve_reads_the_cluster_files_server_defaults(tmp_path: Path) -> None:
    """`sparkrig gateway serve --cluster FILE`: the profile's default_chat_template_kwargs (the
    recipe's server-wide `{"thinking": true}`) reach the gateway, and a request with no switch of
    its own keeps its stop away from the upstream."""
    cluster = tmp_path / "pair.toml"
    cluster.write_text(
        'nodes = [{ name = "a" }]\n[profile]\ndefault_chat_template_kwargs = { thinking = true }\n'
    )
    upstream = DeepSeekV4Upstream(default_kwargs={"thinking": True})
    async with serve_deepseek(upstream) as upstream_url:
        process = await asyncio.create_subprocess_exec(
            SPARKRIG,
            "gateway",
            "serve",
            upstream_url,
            "--cluster",
            str(cluster),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            assert process.stdout is not None
            lines = [await asyncio.wait_for(process.stdout.readline(), 30) for _ in range(3)]
            match = re.search(r"gateway serve (http://\S+) -> ", lines[0].decode())
            assert match, lines
            assert 'server default chat_template_kwargs: {"thinking": true}' in lines[2].decode()
            content, reasoning, finish = await ask(match.group(1), stream=True, stop=[STOP])
            assert "stop" not in upstream.received[-1]
            assert (content, reasoning, finish) == (ANSWER, REASONING, "stop")
        finally:
            process.send_signal(signal.SIGINT)
            await asyncio.wait_for(process.communicate(), 30)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("upstream_key", ["reasoning", "reasoning_content"])
async def test_the_client_finds_the_reasoning_under_either_key_whichever_the_server_used(
    upstream_key: str, stream: bool
) -> None:
    """The DSpark runtime sends `reasoning` only; a client reading `reasoning_content` sees
    nothing there (field notes: reasoning-key). Through the gateway both keys carry it."""
    upstream = DeepSeekV4Upstream(reasoning_key=upstream_key)
    body = {
        "model": MODEL,
        "messages": ASK,
        "max_tokens": BUDGET,
        "stream": stream,
        "chat_template_kwargs": {"thinking": True},
    }
    async with through_gateway(upstream) as (upstream_url, url, _gateway):
        direct = await send(upstream_url, body)
        through = await send(url, body)
    for reply, keys in ((direct, {upstream_key}), (through, {"reasoning", "reasoning_content"})):
        if stream:
            deltas = [c["choices"][0].get("delta") or {} for c in reply.chunks if c.get("choices")]
            found = {k: "".join(d.get(k) or "" for d in deltas) for k in KEYS}
        else:
            found = {k: reply.choice["message"].get(k) or "" for k in KEYS}
        assert {k for k, text in found.items() if text} == keys
        assert all(found[k] == REASONING for k in keys)
