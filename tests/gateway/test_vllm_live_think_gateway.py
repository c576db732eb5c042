"""`gateway serve` in front of the bytes a live vLLM 0.26.0 sent for the think group's asks
(tests/fixtures/vllm/live/think-index.json and its files, 2026-12-05), spoken to with the
official `openai` client.

Each upstream answers one ask with its captured reply. The gateway must relay it as vLLM sent
it, flag exactly the requests that contradict themselves (as it did live, its /metrics
captured in think-gateway-gateway-metrics.txt), and name an empty reply's cause: the replies in
which SmolLM2 ended its turn at once after a `<think>` opener are `no_output` (the live gateway,
before that row existed, counted them `unknown` or as the mode mismatch)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from sparkrig.gateway.live_guards import (
    NONE_WITH_THINKING,
    SWITCH_CONFLICT_DETECTOR,
    TEXT_SWITCH_DETECTOR,
)
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from tests.gateway.replies import counted
from tests.gateway.test_vllm_replay_gateway import CONTRADICTIONS, ask
from tests.http_servers import serve_app
from tests.vllm_live import LIVE, capture, landed

INDEX = {entry["name"]: entry for entry in json.loads((LIVE / "think-index.json").read_text())}
ASKS = sorted(name for name, entry in INDEX.items() if entry["method"] == "POST")
DETECTORS = (NONE_WITH_THINKING, SWITCH_CONFLICT_DETECTOR, TEXT_SWITCH_DETECTOR)
SERVER_DEFAULTS = {"thinking": True}  # vllm-h200-think.toml's --default-chat-template-kwargs


def live_upstream(name: str) -> web.Application:
    body, entry = capture("think", name), INDEX[name]

    async def chat(_: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Type": entry["content_type"]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


@pytest.mark.parametrize("name", ASKS)
async def test_the_gateway_on_a_live_vllms_bytes(name: str) -> None:
    request: dict[str, Any] = {
        k: v for k, v in INDEX[name]["request"].items() if k not in ("model", "messages")
    }
    serve = ServeConfig(server_chat_template_kwargs=SERVER_DEFAULTS)
    async with (
        serve_app(live_upstream(name)) as upstream,
        running_serving_gateway(upstream, serve) as (url, gateway),
    ):
        reasoning, content = await ask(url, request, bool(request.get("stream")))
    assert (reasoning, content) == landed(capture("think", name))
    flagged = CONTRADICTIONS.get(name)
    found = {
        detector: counted(gateway, "detections", "detector", detector) for detector in DETECTORS
    }
    assert found == {detector: float(detector == flagged) for detector in DETECTORS}
    nothing = not (reasoning.strip() or content.strip())
    assert counted(gateway, "empty_content", "cause", "no_output") == float(nothing)
    assert counted(gateway, "empty_content", "cause", "unknown") == 0.0


def test_the_live_gateway_flagged_exactly_the_requests_that_contradict_themselves() -> None:
    """What the gateway counted live, in front of the real server, over the same asks."""
    text = (LIVE / "think-gateway-gateway-metrics.txt").read_text()
    found = {
        sample.labels["detector"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "sparkrig_gateway_detections_total"
    }
    expected = {d: float(list(CONTRADICTIONS.values()).count(d)) for d in DETECTORS}
    assert (
        {d: found[d] for d in DETECTORS}
        == expected
        == {
            NONE_WITH_THINKING: 3.0,
            SWITCH_CONFLICT_DETECTOR: 2.0,
            TEXT_SWITCH_DETECTOR: 1.0,
        }
    )
