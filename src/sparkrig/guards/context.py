"""What a guard is given: the client, the model, the settings, the baseline, a way to record."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient, RequestRecord
from sparkrig.guards.baseline import Baseline


class CheckSettings(BaseModel):
    """Knobs of the battery; every default lives in sparkrig.defaults with its reason."""

    quick: bool = Field(default=False, description="reduced battery (guards 1, 2 reduced, 6, 8, 9)")
    kv_block_tokens: int | None = Field(
        default=None,
        ge=defaults.CHECK_MIN_KV_BLOCK_TOKENS,
        description="KV block size in tokens (None: from /metrics, else "
        f"{defaults.CHECK_KV_BLOCK_TOKENS_FALLBACK})",
    )
    kv_blocks_per_document: int = Field(default=defaults.CHECK_KV_BLOCKS_PER_DOCUMENT, ge=2)
    kv_documents: int = Field(default=defaults.CHECK_KV_DOCUMENTS, ge=3)
    needle_cap_tokens: int = Field(
        default=defaults.CHECK_NEEDLE_CAP_TOKENS, ge=defaults.CHECK_MIN_NEEDLE_CAP_TOKENS
    )
    concurrency: int = Field(default=defaults.CHECK_CONCURRENCY, ge=4)
    slots: int | None = Field(
        default=None,
        ge=1,
        description="requests the server decodes at once, for determinism over occupancy (None: "
        f"llama.cpp's /props total_slots, else {defaults.CHECK_SLOTS_FALLBACK})",
    )


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

    async def send(self, request: ChatRequest | CompletionRequest) -> RequestRecord:
        return await self.client.send(request)

    async def send_all(
        self, requests: Sequence[ChatRequest | CompletionRequest]
    ) -> list[RequestRecord]:
        """All at once, in one batch as far as the server allows."""
        return list(await asyncio.gather(*(self.client.send(r) for r in requests)))

    async def send_staggered(
        self, requests: Sequence[ChatRequest | CompletionRequest], gap_s: float
    ) -> list[RequestRecord]:
        """Each request `gap_s` after the previous one starts, all running together."""

        async def later(index: int, request: ChatRequest | CompletionRequest) -> RequestRecord:
            await asyncio.sleep(index * gap_s)
            return await self.client.send(request)

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
