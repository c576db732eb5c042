"""What a guard is given: the client, the model, the settings, the baseline, a way to record."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient, RequestRecord
from sparkrig.client.reply_consistency import reply_consistency
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.settings import CheckSettings as CheckSettings  # noqa: PLC0414 - re-exported


@dataclass
class GuardContext:
    client: EndpointClient
    model: str
    settings: CheckSettings
    baseline: Baseline
    record_baseline: bool = False
    notes: list[str] = field(default_factory=list)
    openings: dict[str, Any] = field(
        default_factory=dict,
        metadata={"description": "what guards took when the battery opened, by guard name"},
    )
    server_context: int | None = field(
        default=None,
        metadata={
            "description": "the server's context per request where it says (read when the "
            "battery opens): a reply it ended by length short of max_tokens is honest"
        },
    )
    replies_judged: int = 0
    reply_problems: list[str] = field(
        default_factory=list,
        metadata={
            "description": "every reply of the battery that disagrees with itself "
            "(client/reply_consistency.py), for the consistency guard"
        },
    )

    async def send(self, request: ChatRequest | CompletionRequest) -> RequestRecord:
        """Send, and judge the reply against itself (every guard's replies pass through)."""
        record = await self.client.send(request)
        self.replies_judged += 1
        where = f"{request.api}{', streamed' if request.stream else ''}"
        self.reply_problems += [
            f"{where}: {p}" for p in reply_consistency(request, record, self.server_context)
        ]
        return record

    async def send_all(
        self, requests: Sequence[ChatRequest | CompletionRequest]
    ) -> list[RequestRecord]:
        """All at once, in one batch as far as the server allows."""
        return list(await asyncio.gather(*(self.send(r) for r in requests)))

    async def send_staggered(
        self, requests: Sequence[ChatRequest | CompletionRequest], gap_s: float
    ) -> list[RequestRecord]:
        """Each request `gap_s` after the previous one starts, all running together."""

        async def later(index: int, request: ChatRequest | CompletionRequest) -> RequestRecord:
            await asyncio.sleep(index * gap_s)
            return await self.send(request)

        return list(await asyncio.gather(*(later(i, r) for i, r in enumerate(requests))))

    def chat(self, prompt: str, **fields: Any) -> ChatRequest:
        """A temperature-0 chat request with one user message."""
        fields.setdefault("max_tokens", defaults.CHECK_REPLY_TOKENS)
        return ChatRequest(
            model=self.model,
            messages=[{"role": "user", "content": prompt}],
            temperature=0.0,
            **fields,
        )


GuardFunction = Callable[[GuardContext], Awaitable[Any]]
