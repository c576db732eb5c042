"""The readiness completion against a server that wants an API key, the way vLLM started with
`--api-key` / VLLM_API_KEY behaves (vllm/entrypoints: /health answers without a key, every /v1
route answers 401 without `Authorization: Bearer KEY`). A real aiohttp server on loopback; the
replies are tests/gateway/fake_upstream.py's llama-server shapes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from sparkrig.client.first_completion import completion_probe
from sparkrig.errors import LaunchError
from tests.conftest import SPARKRIG
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


async def _ask(url: str, env: dict[str, str], *options: str) -> tuple[int, str]:
    """`sparkrig ask` as a user runs it, in its own process with only `env`'s keys set."""
    clean = {k: v for k, v in os.environ.items() if k not in {"SPARKRIG_API_KEY", "VLLM_API_KEY"}}
    process = await asyncio.create_subprocess_exec(
        SPARKRIG, "ask", url, "hi", "--max-tokens", "4", *options,
        env=clean | env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    return process.returncode or 0, err.decode()


async def test_every_client_command_finds_the_key_by_one_rule() -> None:
    """SPARKRIG_API_KEY, else VLLM_API_KEY (what vLLM reads, a cluster file's default); a named
    --api-key-env is the only variable read. The key is never printed."""
    seen: list[str | None] = []
    async with serve_app(keyed_app(seen)) as url:
        for env, options, answered in (
            ({"VLLM_API_KEY": KEY}, (), True),  # the variable the engine was started with
            ({"SPARKRIG_API_KEY": KEY, "VLLM_API_KEY": "other"}, (), True),  # sparkrig's first
            ({"RIG_KEY": KEY}, ("--api-key-env", "RIG_KEY"), True),
            ({"VLLM_API_KEY": KEY}, ("--api-key-env", "RIG_KEY"), False),  # named: only it
        ):
            code, err = await _ask(url, env, *options)
            assert (code == 0) is answered, (env, options, err)
            assert KEY not in err
