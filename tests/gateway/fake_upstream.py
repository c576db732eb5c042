"""A small stand-in for llama-server: the same SSE shapes (role event, content events with
cumulative `timings.predicted_n` when `timings_per_token`, chat-style logprobs, a finish event, a
usage event, `[DONE]`), scripted replies and an optional delay per token, so the gateway's tests
run in milliseconds. The shapes were copied from llama-server (llama.cpp 0.3.36 sdist) replies.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.http_servers import serve_app

TOOL_ARGUMENTS = '{"city": "Paris", "unit": "celsius"}'


def last_prompt(body: dict[str, Any]) -> str:
    if "messages" in body:
        return str(body["messages"][-1]["content"])
    return str(body.get("prompt", ""))


@dataclass
class FakeUpstream:
    """Replies `reply_for(body)`, cut into `token_chars`-character tokens."""

    reply_for: Callable[[dict[str, Any]], str] = lambda body: f"Echo: {last_prompt(body)}"
    token_chars: int = 3
    token_delay_s: float = 0.0
    received: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._generate)
        app.router.add_post("/v1/completions", self._generate)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_post("/tokenize", self._tokenize)
        app.router.add_post("/completion", self._native_stream)
        return app

    async def _native_stream(self, request: web.Request) -> web.StreamResponse:
        """llama-server's native endpoint streams too, with no [DONE]."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for text in ("Hello", " world"):
            await asyncio.sleep(self.token_delay_s)
            await response.write(_event({"content": text, "stop": False}))
        await response.write(_event({"content": "", "stop": True}))
        await response.write_eof()
        return response

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            text="llamacpp:requests_processing 0\n", headers={"X-Fake": "metrics"}, status=200
        )

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"tokens": list(range(len(body["content"].split())))})

    def _tokens(self, body: dict[str, Any]) -> tuple[list[str], str]:
        text = self.reply_for(body)
        size = self.token_chars
        tokens = [text[at : at + size] for at in range(0, len(text), size)]
        limit = body.get("max_tokens")
        if isinstance(limit, int) and len(tokens) > limit:
            return tokens[:limit], "length"
        return tokens, "stop"

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.received.append(body)
        chat = request.path.endswith("/chat/completions")
        tokens, finish = self._tokens(body)
        if body.get("tools") and chat:
            return await self._tool_call(request, body)
        if body.get("stream"):
            return await self._stream(request, body, chat, tokens, finish)
        await asyncio.sleep(self.token_delay_s * len(tokens))
        text = "".join(tokens)
        choice: dict[str, Any] = {"finish_reason": finish, "index": 0}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [_logprob(i, t) for i, t in enumerate(tokens)]}
        return web.json_response(
            {
                "choices": [choice],
                "id": "fake-1",
                "model": "fake",
                "object": "chat.completion",
                "usage": _usage(len(tokens)),
                "timings": {"predicted_n": len(tokens)},
            }
        )

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        chat: bool,
        tokens: list[str],
        finish: str,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        base = {"id": "fake-1", "model": "fake", "object": "chat.completion.chunk"}
        if chat:
            delta = {"role": "assistant", "content": None}
            role = {"finish_reason": None, "index": 0, "delta": delta}
            await response.write(_event({"choices": [role], **base}))
        for index, token in enumerate(tokens):
            await asyncio.sleep(self.token_delay_s)
            choice: dict[str, Any] = {"finish_reason": None, "index": 0}
            if chat:
                choice["delta"] = {"content": token}
            else:
                choice["text"] = token
            if body.get("logprobs"):
                choice["logprobs"] = {"content": [_logprob(index, token)]}
            chunk: dict[str, Any] = {"choices": [choice], **base}
            if body.get("timings_per_token"):
                chunk["timings"] = {"predicted_n": index + 1}
            await response.write(_event(chunk))
        end: dict[str, Any] = {"finish_reason": finish, "index": 0}
        end.update({"delta": {}} if chat else {"text": ""})
        await response.write(_event({"choices": [end], **base}))
        if (body.get("stream_options") or {}).get("include_usage"):
            final = {
                "choices": [],
                **base,
                "usage": _usage(len(tokens)),
                "timings": {"predicted_n": len(tokens)},
            }
            await response.write(_event(final))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _tool_call(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        call = {
            "id": "call-1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": TOOL_ARGUMENTS},
        }
        if not body.get("stream"):
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            choice = {"finish_reason": "tool_calls", "index": 0, "message": message}
            return web.json_response({"choices": [choice], "usage": _usage(9)})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        pieces = [TOOL_ARGUMENTS[at : at + 5] for at in range(0, len(TOOL_ARGUMENTS), 5)]
        first = {
            "index": 0,
            "id": "call-1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        deltas = [first] + [{"index": 0, "function": {"arguments": p}} for p in pieces]
        for delta in deltas:
            choice = {"finish_reason": None, "index": 0, "delta": {"tool_calls": [delta]}}
            await response.write(_event({"choices": [choice]}))
        end = {"finish_reason": "tool_calls", "index": 0, "delta": {}}
        await response.write(_event({"choices": [end]}))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _logprob(index: int, token: str) -> dict[str, Any]:
    sharp = math.log(0.99) - index * 1e-6
    return {
        "id": index,
        "token": token,
        "logprob": sharp,
        "top_logprobs": [
            {"id": index, "token": token, "logprob": sharp},
            {"id": 999, "token": "~", "logprob": -8.0},
            {"id": 998, "token": "^", "logprob": -9.0},
        ],
    }


def _usage(tokens: int) -> dict[str, int]:
    return {"completion_tokens": tokens, "prompt_tokens": 7, "total_tokens": tokens + 7}


def _event(chunk: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode()


@asynccontextmanager
async def serve_fake(upstream: FakeUpstream) -> AsyncIterator[str]:
    async with serve_app(upstream.app()) as url:
        yield url
