"""The API key reaches the server as a bearer token and nowhere else: not in records or reprs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web

from sparkrig.client import ChatRequest, EndpointClient
from sparkrig.client.endpoint import api_key_from_env
from tests.http_servers import serve_app

SECRET = "sk-test-not-for-logs-9f3a"


async def chat_reply(request: web.Request) -> web.Response:
    if request.headers.get("Authorization") != f"Bearer {SECRET}":
        return web.json_response({"error": "bad key"}, status=401)
    return web.json_response(
        {
            "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
    )


@pytest_asyncio.fixture(loop_scope="session")
async def keyed_server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat_reply)
    async with serve_app(app) as url:
        yield url


def hello() -> ChatRequest:
    return ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], stream=False)


@pytest.mark.asyncio(loop_scope="session")
async def test_key_is_sent_and_never_recorded(keyed_server: str) -> None:
    async with EndpointClient(keyed_server, api_key=SECRET) as client:
        record = await client.send(hello())
        assert SECRET not in repr(client)
    assert record.error is None
    assert record.content == "ok"
    assert SECRET not in record.model_dump_json()


@pytest.mark.asyncio(loop_scope="session")
async def test_missing_key_is_a_401_with_a_hint(keyed_server: str) -> None:
    async with EndpointClient(keyed_server) as client:
        record = await client.send(hello())
    assert record.error is not None
    assert record.error.status == 401
    assert "API key" in record.error.message


def test_key_comes_from_the_named_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVING_KEY", SECRET)
    assert api_key_from_env("MY_SERVING_KEY") == SECRET
    monkeypatch.delenv("MY_SERVING_KEY")
    assert api_key_from_env("MY_SERVING_KEY") is None
