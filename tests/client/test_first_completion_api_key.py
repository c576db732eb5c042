"""The readiness completion against a server that wants an API key, the way vLLM started with
`--api-key` / VLLM_API_KEY behaves (vllm/entrypoints: /health answers without a key, every /v1
route answers 401 without `Authorization: Bearer KEY`). A real aiohttp server on loopback; the
replies are tests/gateway/fake_upstream.py's llama-server shapes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from sparkrig.client.first_completion import completion_probe
from sparkrig.errors import LaunchError
from tests.gateway.fake_upstream import FakeUpstream
from tests.http_servers import serve_app

KEY = "sk-readiness-secret-123"
MODEL = "served-model"


def keyed_app(seen: list[str | None]) -> web.Application:
    @web.middleware
    async def require_key(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        seen.append(request.headers.get("Authorization"))
        if request.path.startswith("/v1") and request.headers.get("Authorization") != (
            f"Bearer {KEY}"
        ):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    app = FakeUpstream().app()
    app.middlewares.append(require_key)

    async def health(request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    return app


async def test_readiness_without_the_key_fails_and_names_the_fix() -> None:
    async with serve_app(keyed_app([])) as url:
        with pytest.raises(LaunchError) as caught:
            await completion_probe(None)(url, MODEL)
    assert "401" in str(caught.value)
    assert "VLLM_API_KEY" in str(caught.value)


async def test_readiness_with_the_key_passes_and_never_shows_it() -> None:
    seen: list[str | None] = []
    async with serve_app(keyed_app(seen)) as url:
        probe = completion_probe(KEY)
        await probe(url, MODEL)
        # a wrong key still fails, and its message does not carry the key it was given
        with pytest.raises(LaunchError) as caught:
            await completion_probe(KEY + "-wrong")(url, MODEL)
    assert f"Bearer {KEY}" in seen
    assert KEY not in str(caught.value)
    assert KEY not in repr(probe)
