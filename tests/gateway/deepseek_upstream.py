"""A stand-in for vLLM serving DeepSeek-V4 with `--reasoning-parser deepseek_v4`, built in the
documented request and reply format of the field reports (no vLLM runs here). Each behaviour and
the report it comes from:

- the prompt ends `<｜Assistant｜><think>` with thinking on and `<｜Assistant｜></think>` with it
  off: `<think>` is in the prompt, never in the output; the model's output is reasoning, then
  `</think>`, then the answer (two-node DSpark recipe, 001_20c67b099122938a.txt, "Reasoning /
  thinking mode"; field notes: think-in-prompt);
- thinking is turned on per request by `chat_template_kwargs: {"thinking": true}` or a top-level
  `reasoning_effort` of low/medium/high/max/xhigh, or server-wide by
  `--default-chat-template-kwargs` (`default_kwargs` here), which a request's own keys override
  (001; field notes: think-in-prompt, server-sampling-defaults); the reproduction sends
  `{"chat_template_kwargs": {"thinking": true, "reasoning_effort": "low"}}`
  (002_3a6004238fc472b1.txt, "Notes that cost us time"); an agent benchmark sends
  `{"chat_template_kwargs": {"reasoning_effort": "low"}}` (004_3c0b897c1f318ae4.txt, its receipt;
  field notes: agent-benchmark-request) — the reports do not say what that shape does to the
  prompt, and this fake reads an effort inside the kwargs like the top-level one;
- `reasoning_effort` max/xhigh add 79 prompt tokens, low/medium/high none ("hi" is 5 prompt
  tokens) (001; field notes: reasoning-effort-levels);
- `reasoning_effort: "none"` with thinking on: a chat-mode prompt (the model answers at once, no
  `</think>`) while the parser stays armed, so the whole reply lands in `reasoning`, `content` is
  null, finish `stop`, with real completion tokens (001, measured 4/4; field notes:
  reasoning-none-thinking);
- the reply carries reasoning under `reasoning` (`message.reasoning`, `delta.reasoning`), never
  `reasoning_content` (001 and 002; field notes: reasoning-key); `reasoning_key` can be set to
  `reasoning_content` to play an older server;
- client stop strings are matched against the whole output, reasoning included: a stop the chain
  of thought restates (the recipe's example is `Question:`) ends the reply before `</think>`,
  content null, finish `stop` (001, Patch 5; field notes: stop-in-reasoning);
- a `max_tokens` the reasoning uses up gives finish `length` with content null (001, "Thinking
  mode needs output budget"; field notes: thinking-needs-budget);
- without the reasoning parser (`reasoning_parser=False`) `</think>` stays inside `content` (001;
  field notes: think-in-prompt).

With `runtime="vllm-0.26.0"` it plays instead what vLLM 0.26.0's own code does with a request
(replayed on a CPU: tests/fixtures/vllm/replay/, servers `dsv4-*`): a top-level
`reasoning_effort` adds `enable_thinking = effort != "none"` to the kwargs unless the request's
kwargs name it; renderer and parser alike think when `thinking or enable_thinking` and the effort
is not "none" — so "none" with thinking on is a coherent chat-mode reply in content, and
`thinking: false` beside a top-level effort thinks; an effort inside the kwargs alone turns
nothing on.

A token is one whitespace-separated word (with its leading space), and `</think>` one token.
The stream has the skeleton of vLLM 0.26.0's own chat endpoint (tests/gateway/
test_deepseek_stand_in_shape.py holds it to the replay's bytes): a role event, one event a token,
the finish reason on the last token's event, and a usage event only for `include_usage`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.http_servers import serve_app

MODEL = "deepseek-v4-flash-dspark"
THINKING_EFFORTS = ("low", "medium", "high", "max", "xhigh")
EFFORT_PREFIX_TOKENS = {"max": 79, "xhigh": 79}
# the recipe's own example: a chain of thought restating "Question:" (field notes:
# stop-in-reasoning)
REASONING = (
    "The user asks which is heavier. Question: a kilogram of iron or a kilogram of wool? "
    "Both are one kilogram, so they weigh the same."
)
ANSWER = "They weigh the same: one kilogram each."
CLOSE = "</think>"


@dataclass
class Rendered:
    prompt: str
    prompt_tokens: int
    chat_mode: bool
    parser_armed: bool


@dataclass
class DeepSeekV4Upstream:
    default_kwargs: dict[str, Any] = field(default_factory=dict)
    reasoning_parser: bool = True
    reasoning_key: str = "reasoning"
    reasoning: str = REASONING
    answer: str = ANSWER
    runtime: str = "report-001"  # or "vllm-0.26.0"
    received: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        return app

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": MODEL, "max_model_len": 1048576}]})

    def render(self, body: dict[str, Any]) -> Rendered:
        if self.runtime == "vllm-0.26.0":
            return self._render_vllm_026(body)
        request_kwargs = body.get("chat_template_kwargs") or {}
        kwargs = {**self.default_kwargs, **request_kwargs}
        effort = body.get("reasoning_effort", kwargs.get("reasoning_effort"))
        switch = request_kwargs.get("thinking")
        if switch is None and effort in THINKING_EFFORTS:
            switch = True  # a request's effort turns thinking on, whatever the server default
        if switch is None:
            switch = kwargs.get("thinking") is True
        chat_mode = effort == "none" or not switch
        user = str(body["messages"][-1]["content"])
        prompt = f"<｜User｜>{user}<｜Assistant｜>" + (CLOSE if chat_mode else "<think>")
        tokens = len(user.split()) + 4 + EFFORT_PREFIX_TOKENS.get(str(effort), 0)
        return Rendered(prompt, tokens, chat_mode, parser_armed=bool(switch))

    def _render_vllm_026(self, body: dict[str, Any]) -> Rendered:
        request_kwargs = body.get("chat_template_kwargs") or {}
        kwargs = {**self.default_kwargs, **request_kwargs}
        if isinstance(top := body.get("reasoning_effort"), str):
            kwargs["reasoning_effort"] = top
            if "enable_thinking" not in request_kwargs:
                kwargs["enable_thinking"] = top != "none"
        thinking = bool(kwargs.get("thinking") or kwargs.get("enable_thinking"))
        thinking = thinking and kwargs.get("reasoning_effort") != "none"
        user = str(body["messages"][-1]["content"])
        prompt = f"<｜User｜>{user}<｜Assistant｜>" + ("<think>" if thinking else CLOSE)
        return Rendered(prompt, len(user.split()) + 4, not thinking, parser_armed=thinking)

    def _output(self, rendered: Rendered, body: dict[str, Any]) -> tuple[list[str], str]:
        """The model's tokens after the stops and the budget, and the finish reason."""
        text = self.answer if rendered.chat_mode else f"{self.reasoning}{CLOSE}{self.answer}"
        finish = "stop"
        stops = body.get("stop") or []
        hits = [
            at
            for stop in ([stops] if isinstance(stops, str) else stops)
            if (at := text.find(stop)) != -1
        ]
        if hits:  # the whole output, reasoning included, is matched (vLLM's detokenizer)
            text = text[: min(hits)]
        tokens = re.findall(r"</think>|\s*[^\s<]+|\s*<(?!/think>)[^\s]*", text)
        limit = body.get("max_tokens")
        if isinstance(limit, int) and len(tokens) > limit:
            return tokens[:limit], "length"
        return tokens, finish

    def _split(self, rendered: Rendered, tokens: list[str]) -> tuple[list[str], list[str]]:
        """(reasoning tokens, content tokens) as the parser files them."""
        if not self.reasoning_parser or not rendered.parser_armed:
            return [], tokens
        if CLOSE not in tokens:
            return tokens, []  # no end marker: everything is reasoning
        at = tokens.index(CLOSE)
        return tokens[:at], tokens[at + 1 :]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.received.append(body)
        rendered = self.render(body)
        self.prompts.append(rendered.prompt)
        tokens, finish = self._output(rendered, body)
        reasoning, content = self._split(rendered, tokens)
        usage = {
            "prompt_tokens": rendered.prompt_tokens,
            "completion_tokens": len(tokens),
            "total_tokens": rendered.prompt_tokens + len(tokens),
        }
        if body.get("stream"):
            options = body.get("stream_options") or {}
            include_usage = bool(options.get("include_usage"))
            return await self._stream(request, reasoning, content, finish, usage, include_usage)
        message = {
            "role": "assistant",
            "content": "".join(content) if content else None,
            self.reasoning_key: "".join(reasoning) if reasoning else None,
        }
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": MODEL,
                "choices": [choice],
                "usage": usage,
            }
        )

    async def _stream(
        self,
        request: web.Request,
        reasoning: list[str],
        content: list[str],
        finish: str,
        usage: dict[str, int],
        include_usage: bool,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        def chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": reason}
            event = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": MODEL,
                "choices": [choice],
            }
            return f"data: {json.dumps(event)}\n\n".encode()

        await response.write(chunk({"role": "assistant", "content": ""}))
        deltas = [{self.reasoning_key: t} for t in reasoning] + [{"content": t} for t in content]
        for at, delta in enumerate(deltas):  # vLLM puts the finish reason on the last token's
            await response.write(chunk(delta, finish if at == len(deltas) - 1 else None))
        if not deltas:
            await response.write(chunk({}, finish))
        if include_usage:
            usage_event = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": MODEL,
                "choices": [],
                "usage": usage,
            }
            await response.write(f"data: {json.dumps(usage_event)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@asynccontextmanager
async def serve_deepseek(upstream: DeepSeekV4Upstream) -> AsyncIterator[str]:
    async with serve_app(upstream.app()) as url:
        yield url
