"""`gateway serve` is transparent: every request an engine's clients send — generation streamed
and not, prefixed and not, tokenizer endpoints, /metrics, /health, /props, /slots, models, error
paths, a 204 — answers the same through the gateway as directly, on the real llama-server and on
vLLM's CPU build (tests/gateway/transparency.py says what "the same" leaves aside)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.launch.local import LocalInstance
from tests.gateway.transparency import Ask, ask, comparable, differences
from tests.vllm_cpu import VllmCpuServer

ON_SESSION_LOOP = pytest.mark.asyncio(loop_scope="session")
USER = [{"role": "user", "content": "Name three colours of the rainbow."}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "the weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def _generation(model: str, *, prefix: str = "/v1") -> list[Ask]:
    chat = {"model": model, "messages": USER, "max_tokens": 12, "temperature": 0, "seed": 7}
    text = {"model": model, "prompt": "The colours of the rainbow are", "max_tokens": 12,
            "temperature": 0, "seed": 7}  # fmt: skip
    return [
        Ask("chat", "POST", f"{prefix}/chat/completions", chat),
        Ask(
            "chat streamed",
            "POST",
            f"{prefix}/chat/completions",
            {**chat, "stream": True},
            "stream",
        ),
        Ask(
            "chat, one token, streamed",
            "POST",
            f"{prefix}/chat/completions",
            {**chat, "max_tokens": 1, "stream": True},
            "stream",
        ),
        Ask("completions", "POST", f"{prefix}/completions", text),
        Ask(
            "completions streamed",
            "POST",
            f"{prefix}/completions",
            {**text, "stream": True},
            "stream",
        ),
        Ask("chat with tools", "POST", f"{prefix}/chat/completions", {**chat, "tools": TOOLS}),
        Ask("chat without messages", "POST", f"{prefix}/chat/completions", {"model": model}),
    ]


def llama_asks(model: str) -> list[Ask]:
    return [
        Ask("metrics", "GET", "/metrics", compare="series"),
        Ask("health", "GET", "/health"),
        Ask("models", "GET", "/v1/models"),
        Ask("props", "GET", "/props", compare="shape"),
        Ask("slots", "GET", "/slots", compare="shape"),
        Ask("tokenize", "POST", "/tokenize", {"content": "Hello world"}),
        Ask("detokenize", "POST", "/detokenize", {"tokens": [19556, 905]}),
        Ask("apply-template", "POST", "/apply-template", {"messages": USER}),
        *_generation(model),
        *_generation(model, prefix=""),
        Ask(
            "llama.cpp's own completion",
            "POST",
            "/completion",
            {"prompt": "The colours of the rainbow are", "n_predict": 8, "temperature": 0},
        ),
        Ask("embeddings, not served", "POST", "/v1/embeddings", {"input": "hello"}),
        Ask("props refuses POST", "POST", "/props", {}),
        Ask("no such path", "GET", "/no-such-path", compare="bytes"),
        Ask(
            "stop a stream that is not there (204)",
            "DELETE",
            "/v1/stream?conv_id=none",
            compare="bytes",
        ),
    ]


def vllm_asks(model: str) -> list[Ask]:
    return [
        Ask("metrics", "GET", "/metrics", compare="series"),
        Ask("health", "GET", "/health", compare="bytes"),
        Ask("models", "GET", "/v1/models"),
        Ask("version", "GET", "/version"),
        Ask("tokenize", "POST", "/tokenize", {"model": model, "prompt": "Hello world"}),
        Ask("detokenize", "POST", "/detokenize", {"model": model, "tokens": [19556, 905]}),
        *_generation(model),
        Ask("no such path", "GET", "/no-such-path"),
    ]


async def assert_transparent(base_url: str, asks: list[Ask]) -> None:
    base = base_url.rstrip("/").removesuffix("/v1")
    wrong: list[str] = []
    engine_varies: list[str] = []
    connector = aiohttp.TCPConnector(force_close=True)  # no kept-alive connection to race
    async with (
        running_serving_gateway(base) as (gateway, _),
        aiohttp.ClientSession(connector=connector) as session,
    ):
        for request in asks:
            await ask(session, base, request)  # the engine's caches as warm as they will be
            direct = comparable(await ask(session, base, request), request.compare)
            through = comparable(await ask(session, gateway, request), request.compare)
            found = differences(direct, through)
            if found:  # the same as a second direct answer, or the engine's own variation
                again = comparable(await ask(session, base, request), request.compare)
                if not differences(again, through):
                    continue
                if differences(direct, again):
                    engine_varies.append(request.name)
                    continue
                wrong += [f"{request.name} ({request.method} {request.path}): {d}" for d in found]
    assert not wrong, "\n".join(wrong)
    assert len(engine_varies) <= 2, f"the engine answered these differently twice: {engine_varies}"


@pytest.mark.engine
@ON_SESSION_LOOP
async def test_llama_server_answers_the_same_through_the_gateway(
    llama_server: LocalInstance,
) -> None:
    await assert_transparent(llama_server.base_url, llama_asks(llama_server.model))


@ON_SESSION_LOOP
async def test_vllm_answers_the_same_through_the_gateway(vllm_cpu: VllmCpuServer) -> None:
    await assert_transparent(vllm_cpu.base_url, vllm_asks(vllm_cpu.model))


def test_a_changed_field_or_event_boundary_is_a_difference() -> None:
    from tests.gateway.transparency import Answer

    def answer(body: bytes, status: int = 200) -> Any:
        return comparable(Answer(status, {"content-type": "text/event-stream"}, body), "stream")

    one = answer(b'data: {"id": "a", "choices": [{"delta": {"content": "\\n"}}]}\n\n'
                 b'data: {"id": "a", "choices": [{"delta": {"content": "#"}}]}\n\n')  # fmt: skip
    merged = answer(b'data: {"id": "b", "choices": [{"delta": {"content": "\\n#"}}]}\n\n')
    same_but_id = answer(
        b'data: {"id": "c", "choices": [{"delta": {"content": "\\n"}}]}\n\n'
        b'data: {"id": "c", "choices": [{"delta": {"content": "#"}}]}\n\n'
    )
    assert differences(one, merged)
    assert not differences(one, same_but_id)
    assert differences(one, answer(b"", status=204))
