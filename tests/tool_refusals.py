"""The stand-in llama-server of tests/gateway/fake_upstream.py with a say over tool-call requests:
each chat request carrying `tools` is answered by `answer(n)` (n counts them from 0, so 0 is a
soak's probe), or served as usual when it returns None. The refusals are the engines' own bodies:
vLLM 0.32.0's ErrorResponse for a server without a tool parser (its
vllm/renderers/online_renderer.py and entrypoints/serve/exception_handling/error_response.py),
and llama-server's answer when started with --no-jinja, captured from the embedded build
(llama.cpp 0.3.36): `{"error":{"code":500,"message":"tools param requires --jinja
flag","type":"server_error"}}`, HTTP 500."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.gateway.fake_upstream import FakeUpstream
from tests.http_servers import serve_app

VLLM_WORDS = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)
LLAMA_WORDS = "tools param requires --jinja flag"

ToolAnswer = Callable[[int, web.Request], web.StreamResponse | None]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def vllm_without_tool_parser(n: int, request: web.Request) -> web.StreamResponse:
    body = {"error": {"message": VLLM_WORDS, "type": "BadRequestError", "param": None, "code": 400}}
    return web.json_response(body, status=400)


def llama_without_jinja(n: int, request: web.Request) -> web.StreamResponse:
    body = {"error": {"code": 500, "message": LLAMA_WORDS, "type": "server_error"}}
    return web.json_response(body, status=500)


def agent_reply(body: dict[str, Any]) -> str:
    """What the stand-in says: a person as JSON where a schema is asked, plain words otherwise,
    so a soak of it finds no bad output."""
    if body.get("response_format"):
        return '{"name": "Ada", "age": 36}'
    return "A plain reply of a few words."


@dataclass
class ToolServer:
    answer: ToolAnswer
    upstream: FakeUpstream = field(default_factory=lambda: FakeUpstream(reply_for=agent_reply))
    tool_requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = self.upstream.app()

        @web.middleware
        async def tools(request: web.Request, handler: Handler) -> web.StreamResponse:
            if request.method == "POST" and request.path == "/v1/chat/completions":
                body = await request.json()  # aiohttp keeps the body for the handler
                if body.get("tools"):
                    self.tool_requests.append(body)
                    answer = self.answer(len(self.tool_requests) - 1, request)
                    if answer is not None:
                        return answer
            return await handler(request)

        app.middlewares.append(tools)
        return app


def close_the_connection(request: web.Request) -> web.StreamResponse:
    """No reply: the connection closes, as when a worker dies (the response is never written)."""
    if request.transport is not None:
        request.transport.close()
    return web.Response(status=503)


@asynccontextmanager
async def serve_tools(server: ToolServer) -> AsyncIterator[str]:
    async with serve_app(server.app()) as url:
        yield url
