"""`gateway serve` in front of the real llama-server: live guards that see faults (injected by
the fault gateway between them) and never alter a reply, the workload record without any API key,
/gateway/health and /gateway/metrics, and long stop lists."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from sparkrig.client.request_parts import PERSON_FORMAT
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.gateway.serve import ServingGateway, running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.launch.local import LocalInstance
from sparkrig.wire.workload_log import read_workload
from tests.gateway.fake_upstream import FakeUpstream, serve_fake
from tests.gateway.replies import Reply, chat, parse_stream, send

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

PROMPT = "List four fruits, one per line, with their colours."
NO_CACHE = {"cache_prompt": False}
PERSON = PERSON_FORMAT


def detections(gateway: ServingGateway) -> dict[str, float]:
    counts = {}
    for metric in gateway.metrics.detections.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                counts[sample.labels["detector"]] = sample.value
    return counts


@asynccontextmanager
async def serve_behind_faults(
    upstream: str, faults: list[Fault], serve: ServeConfig
) -> AsyncIterator[tuple[str, str, ServingGateway]]:
    """(fault gateway URL, serving gateway URL in front of it, the serving gateway)."""
    async with (
        running_gateway(upstream, GatewayConfig(faults=faults)) as faulty,
        running_serving_gateway(faulty, serve) as (url, gateway),
    ):
        yield faulty, url, gateway


async def post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/chat/completions", json=body, headers=headers or {}) as response,
    ):
        raw = await response.read()
        assert response.status == 200, raw[:300]
        reply = Reply(raw=raw, chunks=parse_stream(raw)) if body.get("stream") else None
        reply = reply or Reply(raw=raw, body=json.loads(raw))
        reply.request_id = response.headers["X-Request-Id"]  # type: ignore[attr-defined]
    return reply


@pytest.mark.parametrize("stream", [True, False])
async def test_live_guards_count_faults_and_never_alter_the_reply(
    llama_server: LocalInstance, tmp_path: Path, stream: bool
) -> None:
    log = tmp_path / "guards.jsonl"
    faults = [Fault.MARKUP_LEAK, Fault.REPLACEMENT_CHAR]
    async with serve_behind_faults(llama_server.base_url, faults, ServeConfig(guard_log=log)) as (
        faulty,
        url,
        gateway,
    ):
        body = chat(PROMPT, stream=stream, max_tokens=40, **NO_CACHE)
        direct = await send(faulty, body)
        through = await post(url, body, {"X-Request-Id": "req-faulty-1"})
    assert through.content == direct.content  # the guards only watch
    assert "<|im_end|>" in (through.content or "")
    assert detections(gateway) == {"markup_leak": 1, "replacement_char": 1}
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert {line["detector"] for line in lines} == {"markup_leak", "replacement_char"}
    assert {line["request_id"] for line in lines} == {"req-faulty-1"}


async def test_clean_replies_raise_no_finding(llama_server: LocalInstance) -> None:
    async with running_serving_gateway(llama_server.base_url) as (url, gateway):
        await post(url, chat(PROMPT, stream=True, max_tokens=40))
        await post(
            url,
            chat(
                "Give a person's name and age as JSON.",
                stream=False,
                max_tokens=48,
                response_format=PERSON,
            ),
        )
    assert detections(gateway) == {}


@pytest.mark.parametrize("stream", [True, False])
async def test_json_that_fails_its_schema_is_found(
    llama_server: LocalInstance, stream: bool
) -> None:
    body = chat(
        "Give a person's name and age as JSON.",
        stream=stream,
        max_tokens=48,
        response_format=PERSON,
    )
    async with serve_behind_faults(llama_server.base_url, [Fault.MARKUP_LEAK], ServeConfig()) as (
        _,
        url,
        gateway,
    ):
        await post(url, body)
    assert detections(gateway) == {"json_schema": 1, "markup_leak": 1}


@pytest.mark.parametrize("stream", [True, False])
async def test_a_loop_is_found_through_the_proxy_and_relayed_whole(
    llama_server: LocalInstance, tmp_path: Path, stream: bool
) -> None:
    """The fault gateway's loop (16,500 characters, finish_reason length) relayed by `gateway
    serve`: streamed as 200-character events or whole, the client gets every character and the
    loop detector fires once."""
    log = tmp_path / "guards.jsonl"
    body = chat(PROMPT, stream=stream, max_tokens=40, **NO_CACHE)
    async with serve_behind_faults(
        llama_server.base_url, [Fault.LOOP], ServeConfig(guard_log=log)
    ) as (faulty, url, gateway):
        direct = await send(faulty, body)
        through = await post(url, body, {"X-Request-Id": "req-loop-1"})
    assert through.content == direct.content
    assert len(through.content or "") >= 16_500
    assert detections(gateway) == {"loop": 1}
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["detector"], line["request_id"]) for line in lines] == [("loop", "req-loop-1")]


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_arguments_that_do_not_parse_are_found(stream: bool) -> None:
    # the bundled 135M model does not call tools reliably: the llama-server-shaped fake does
    fake = FakeUpstream()
    body = chat(
        "weather?",
        stream=stream,
        tools=[
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"type": "object"}},
            }
        ],
    )
    async with serve_fake(fake) as fake_url:
        async with running_serving_gateway(fake_url) as (url, clean):
            await post(url, body)
        async with serve_behind_faults(fake_url, [Fault.BROKEN_TOOL_ARGS], ServeConfig()) as (
            _,
            url,
            broken,
        ):
            await post(url, body)
    assert detections(clean) == {}
    assert detections(broken) == {"tool_args": 1}


async def test_the_workload_record_keeps_counts_and_never_an_api_key(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    secret_header, secret_body = "sk-header-SECRET-4711", "sk-body-SECRET-0815"
    headers = {"Authorization": f"Bearer {secret_header}", "X-Request-Id": "req-w-1"}
    plain, with_prompts = tmp_path / "plain.jsonl", tmp_path / "prompts.jsonl"
    for path, keep in ((plain, False), (with_prompts, True)):
        serve = ServeConfig(workload_log=path, record_prompts=keep)
        async with running_serving_gateway(llama_server.base_url, serve) as (url, _):
            await post(url, chat(PROMPT, stream=True, max_tokens=24, api_key=secret_body), headers)
            await post(url, chat(PROMPT, stream=False, max_tokens=24), headers)
    for path in (plain, with_prompts):
        text = path.read_text()
        assert secret_header not in text
        assert secret_body not in text
    streamed, whole = read_workload(plain)
    assert streamed.request_id == "req-w-1"
    assert streamed.stream
    assert streamed.completion_tokens == 24
    assert streamed.finish_reason == "length"
    assert (streamed.prompt_tokens or 0) > 10
    assert streamed.ttft_s is not None
    assert streamed.decode_tps is not None
    assert streamed.params["max_tokens"] == 24
    assert streamed.messages is None
    assert PROMPT not in plain.read_text()
    assert whole.cached_tokens is not None  # the same prompt again: llama.cpp reuses the prefix
    assert whole.cached_share is not None
    kept = read_workload(with_prompts)
    assert kept[0].messages == [{"role": "user", "content": PROMPT}]


async def test_the_gateways_own_health_and_metrics_live_under_gateway(
    llama_server: LocalInstance,
) -> None:
    async with (
        running_serving_gateway(llama_server.base_url) as (url, _),
        aiohttp.ClientSession() as session,
    ):
        await post(url, chat(PROMPT, stream=True, max_tokens=8))
        async with session.get(url + "/gateway/health") as health:
            assert health.status == 200
            assert (await health.json())["status"] == "ok"
        async with session.get(url + "/gateway/metrics") as metrics:
            text = await metrics.text()
    names = (
        "sparkrig_gateway_requests_total",
        "sparkrig_gateway_ttft_seconds_bucket",
        "sparkrig_gateway_request_seconds_bucket",
        "process_start_time_seconds",
    )
    for name in names:
        assert name in text
    assert 'sparkrig_gateway_requests_total{api="chat",status="200"} 1.0' in text


@pytest.mark.parametrize("stream", [True, False])
async def test_a_hundred_stops_and_a_ten_kilobyte_stop(
    llama_server: LocalInstance, stream: bool
) -> None:
    base = chat(PROMPT, stream=False, max_tokens=40, **NO_CACHE)
    plain = await send(llama_server.base_url, base)
    word = next(w for w in (plain.content or "").split()[3:] if len(w) > 3)
    stops = [f"never-{n}" for n in range(98)] + ["x" * 10_000, word]
    body = chat(PROMPT, stream=stream, max_tokens=40, stop=stops, **NO_CACHE)
    direct = await send(llama_server.base_url, body)
    async with running_serving_gateway(llama_server.base_url, ServeConfig(reasoning="on")) as (
        url,
        _,
    ):
        applied_here = await send(url, body)
    assert applied_here.content == direct.content
    assert word not in (applied_here.content or "")
    assert applied_here.finish_reason == direct.finish_reason == "stop"


async def test_live_guards_switched_off_count_nothing(llama_server: LocalInstance) -> None:
    async with serve_behind_faults(
        llama_server.base_url, [Fault.MARKUP_LEAK], ServeConfig(live_guards=False)
    ) as (_, url, gateway):
        reply = await post(url, chat(PROMPT, stream=True, max_tokens=40))
    assert "<|im_end|>" in (reply.content or "")
    assert detections(gateway) == {}
