"""The smoke workload: a few real requests that show an endpoint serves and how fast.

A count-to-N prompt (easy to check by eye), a JSON prompt, and two distinct prompts at once
(continuous batching). Each result keeps its full RequestRecord.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig import __version__, defaults
from sparkrig.client import ChatRequest, EndpointClient, RequestRecord
from sparkrig.client.metrics import MetricsDelta

SMOKE_SCHEMA_VERSION = 1


class SmokeResult(BaseModel):
    name: str = Field(description="which smoke request this was")
    concurrent_with: int = Field(default=1, description="requests in flight together")
    record: RequestRecord


class SmokeReceipt(BaseModel):
    """The JSON record of one smoke run, rewritten after every request so nothing is lost."""

    schema_version: int = SMOKE_SCHEMA_VERSION
    sparkrig_version: str = __version__
    started_at: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))
    base_url: str
    model: str
    engine: dict[str, str] = Field(default_factory=dict, description="engine identity")
    results: list[SmokeResult] = Field(default_factory=list)
    metrics_delta: MetricsDelta | None = None
    warnings: list[str] = Field(default_factory=list)
    check_failed: list[str] = Field(
        default_factory=list, description="guards of the demo's quick battery that failed"
    )


def count_request(model: str) -> ChatRequest:
    prompt = f"Count from 1 to {defaults.DEMO_COUNT_TO}, separated by commas. Output only numbers."
    return _chat(model, prompt)


def json_request(model: str) -> ChatRequest:
    prompt = (
        "Write a JSON array of 3 objects, each with keys name (a city), country and population "
        "(a number). Output only the JSON."
    )
    return _chat(model, prompt)


def concurrent_requests(model: str) -> list[ChatRequest]:
    # distinct tasks, not one prompt with a tag: identical prompts decode in lockstep and
    # flatter the numbers (field notes: identical-prompts-lockstep)
    prompts = [
        "Write a short poem about the sea.",
        "Explain in three sentences how a bicycle stays upright.",
    ]
    return [_chat(model, prompt) for prompt in prompts[: defaults.DEMO_CONCURRENT_STREAMS]]


def _chat(model: str, prompt: str) -> ChatRequest:
    return ChatRequest(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=defaults.DEMO_MAX_TOKENS,
        temperature=0.0,
    )


async def run_smoke(
    client: EndpointClient,
    receipt: SmokeReceipt,
    on_result: Callable[[SmokeResult], Awaitable[None] | None],
) -> SmokeReceipt:
    """Run the smoke requests one stage at a time, reporting each result as it lands."""

    async def record(result: SmokeResult) -> None:
        receipt.results.append(result)
        outcome = on_result(result)
        if outcome is not None:
            await outcome

    for name, request in (
        ("count", count_request(receipt.model)),
        ("json", json_request(receipt.model)),
    ):
        await record(SmokeResult(name=name, record=await client.send(request)))
    batch = concurrent_requests(receipt.model)
    records = await asyncio.gather(*(client.send(request) for request in batch))
    for index, one in enumerate(records, start=1):
        await record(SmokeResult(name=f"concurrent{index}", concurrent_with=len(batch), record=one))
    return receipt
