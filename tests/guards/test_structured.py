"""The structured guard against a real local server that answers the JSON-schema request the way
vLLM 0.26.0 does when it cannot (tests/wire/error_shapes.py), and every other request with a
plain reply: its verdict carries the server's own text, or says the server gave none."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from aiohttp import web

from sparkrig.client.endpoint import EndpointClient
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.context import CheckSettings, GuardContext
from sparkrig.guards.structured import structured_guard
from sparkrig.guards.verdict import GuardResult
from tests.http_servers import serve_app
from tests.vllm_live import capture
from tests.wire.error_shapes import VLLM_BAD_SCHEMA_BODY, VLLM_ENGINE_GENERATE_ERROR_EVENT

SchemaAnswer = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def stream(request: web.Request, *events: str) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for event in (*events, "[DONE]"):
        await response.write(f"data: {event}\n\n".encode())
    return response


async def plain_reply(request: web.Request) -> web.StreamResponse:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Paris"}, "finish_reason": "stop"}]}
    return await stream(request, json.dumps(chunk))


async def engine_error_event(request: web.Request) -> web.StreamResponse:
    return await stream(request, VLLM_ENGINE_GENERATE_ERROR_EVENT)


async def bad_schema_400(request: web.Request) -> web.StreamResponse:
    return web.Response(status=400, text=VLLM_BAD_SCHEMA_BODY, content_type="application/json")


async def run_guard(schema_answer: SchemaAnswer) -> GuardResult:
    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        return await (schema_answer if "response_format" in body else plain_reply)(request)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    async with serve_app(app) as url, EndpointClient(url) as client:
        context = GuardContext(client, "m", CheckSettings(), Baseline(model="m"))
        return await structured_guard(context)


async def test_an_error_event_with_no_message_fails_showing_the_event_and_the_likely_cause() -> (
    None
):
    result = await run_guard(engine_error_event)

    assert result.verdict == "FAIL"
    assert result.evidence.startswith(
        "the JSON-schema request failed: the server sent an error event mid-stream with no "
        f"message: {VLLM_ENGINE_GENERATE_ERROR_EVENT} — "
    )
    assert "neither xgrammar nor llguidance imports" in result.evidence
    assert "mid-stream:  —" not in result.evidence  # the empty cause of the live run


async def test_a_refused_schema_is_skipped_with_the_servers_reason() -> None:
    result = await run_guard(bad_schema_400)

    refused = (
        'skipped: the server refused response_format (HTTP 400: "Failed to transform json '
        "schema into a grammar: No module named 'xgrammar'\" (BadRequestError, code 400))"
    )
    assert result.verdict == "SKIP"  # no tool call either: the plain reply calls no tool
    assert result.details["parts"]["json_schema"] == refused
    assert result.evidence.endswith(f"json_schema: {refused}")


async def live_empty_reply(request: web.Request) -> web.StreamResponse:
    """What vLLM 0.26.0 streamed when SmolLM2, after a `<think>` it was never trained on, ended its
    turn at once (tests/fixtures/vllm/live/think-inherit-stream.txt, 2026-12-05)."""
    return web.Response(
        body=capture("think", "inherit-stream"), headers={"Content-Type": "text/event-stream"}
    )


async def test_an_empty_reply_fails_saying_it_is_empty_and_what_it_held() -> None:
    """Live, the guard said "not JSON (Expecting value at char 0): ''" of this reply."""
    result = await run_guard(live_empty_reply)

    assert result.verdict == "FAIL"
    assert result.evidence.startswith(
        "the JSON-schema reply is empty (finish stop, 1 token, no reasoning): no JSON was written"
    )
    assert "Expecting value" not in result.evidence
