"""Send requests through a gateway and read the replies back, raw and assembled."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from sparkrig.gateway import GatewayConfig, running_gateway
from sparkrig.gateway.serve import ServingGateway
from tests.gateway.fake_upstream import FakeUpstream, serve_fake


@asynccontextmanager
async def fake_behind_gateway(
    upstream: FakeUpstream, config: GatewayConfig | None = None
) -> AsyncIterator[str]:
    async with serve_fake(upstream) as fake_url, running_gateway(fake_url, config) as url:
        yield url


@dataclass
class Reply:
    raw: bytes
    chunks: list[dict[str, Any]] = field(default_factory=list)
    body: dict[str, Any] | None = None

    @property
    def streamed(self) -> bool:
        return self.body is None

    @property
    def choice(self) -> dict[str, Any]:
        assert self.body is not None
        return dict(self.body["choices"][0])

    def _deltas(self) -> list[dict[str, Any]]:
        out = []
        for chunk in self.chunks:
            for choice in chunk.get("choices") or []:
                out.append(choice.get("delta") or choice)
        return out

    @property
    def content(self) -> str | None:
        if not self.streamed:
            message = self.choice.get("message")
            return message["content"] if message else self.choice["text"]
        parts = [d.get("content") or d.get("text") or "" for d in self._deltas()]
        return "".join(parts)

    @property
    def reasoning(self) -> str:
        if not self.streamed:
            return str((self.choice.get("message") or {}).get("reasoning_content") or "")
        return "".join(d.get("reasoning_content") or "" for d in self._deltas())

    @property
    def finish_reason(self) -> str | None:
        if not self.streamed:
            return self.choice.get("finish_reason")
        reasons = [
            choice.get("finish_reason")
            for chunk in self.chunks
            for choice in chunk.get("choices") or []
            if choice.get("finish_reason")
        ]
        assert len(reasons) <= 1, reasons
        return reasons[0] if reasons else None

    @property
    def logprobs(self) -> list[dict[str, Any]]:
        if not self.streamed:
            return list((self.choice.get("logprobs") or {}).get("content") or [])
        return [
            item
            for chunk in self.chunks
            for choice in chunk.get("choices") or []
            for item in (choice.get("logprobs") or {}).get("content") or []
        ]

    @property
    def content_events(self) -> int:
        return sum(1 for d in self._deltas() if d.get("content") or d.get("text"))

    @property
    def tool_arguments(self) -> str:
        if not self.streamed:
            return "".join(c["function"]["arguments"] for c in self.choice["message"]["tool_calls"])
        return "".join(
            call["function"].get("arguments") or ""
            for d in self._deltas()
            for call in d.get("tool_calls") or []
        )


def parse_stream(raw: bytes) -> list[dict[str, Any]]:
    events = [event for event in raw.split(b"\n\n") if event.strip()]
    assert events[-1] == b"data: [DONE]", events[-1][:200]
    return [json.loads(event.removeprefix(b"data: ")) for event in events[:-1]]


async def send(url: str, body: dict[str, Any], path: str = "/v1/chat/completions") -> Reply:
    async with aiohttp.ClientSession() as session, session.post(url + path, json=body) as response:
        raw = await response.read()
        assert response.status == 200, raw[:300]
    if body.get("stream"):
        return Reply(raw=raw, chunks=parse_stream(raw))
    return Reply(raw=raw, body=json.loads(raw))


def chat(prompt: str, *, stream: bool, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
        body["timings_per_token"] = True
    return body | extra


def completion(prompt: str, *, stream: bool, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "prompt": prompt, "temperature": 0, "stream": stream}
    return body | extra


def counted(gateway: ServingGateway, counter: str, label: str, value: str) -> float:
    """One labelled sample of a `gateway serve` counter, read from its registry."""
    metric = getattr(gateway.metrics, counter)
    return float(metric.labels(**{label: value})._value.get())
