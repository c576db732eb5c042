"""The smoke workload: a few real requests that show an endpoint serves and how fast.

A count-to-N prompt (easy to check by eye), a JSON prompt, and two distinct prompts at once
(continuous batching). Each result keeps its full RequestRecord.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client import ChatRequest, EndpointClient, RequestRecord
from sparkrig.client.metrics import MetricsDelta
from sparkrig.receipts import (
    KIND,
    SCHEMA_VERSION,
    ReceiptHeader,
    Upgrade,
    load_receipt_file,
    save_receipt_file,
)


class SmokeResult(BaseModel):
    name: str = Field(description="which smoke request this was")
    concurrent_with: int = Field(default=1, description="requests in flight together")
    record: RequestRecord = Field(
        description="the request's whole record: clock stamps (ns), every output event, the "
        "text, token counts, finish reason, any error (docs/metrics.md)"
    )


def smoke_schema_1(raw: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 smoke record (sparkrig before the receipt family, which wrote no `kind`) as
    schema 2: `started_at` is `created_at`; the `engine` dict's name is `engine` and its binary
    `engine_binary`; no host was recorded (None). The run's last write was its metrics delta or
    the warning that /metrics could not be read, so either marks it complete."""
    raw["kind"] = "sparkrig-smoke"
    raw["created_at"] = raw.pop("started_at")
    engine = raw.pop("engine", None) or {}
    raw["engine"] = engine.get("name") if isinstance(engine, dict) else None
    raw["engine_binary"] = engine.get("binary") if isinstance(engine, dict) else None
    raw.setdefault("host", None)
    warnings = raw.get("warnings") or []
    raw["complete"] = raw.get("metrics_delta") is not None or any(
        isinstance(w, str) and w.startswith("server metrics") for w in warnings
    )
    raw["measured"] = any(
        isinstance(r, dict)
        and isinstance(r.get("record"), dict)
        and r["record"].get("error") is None
        for r in raw.get("results") or []
    )
    raw["schema_version"] = 2
    return raw


def is_smoke_schema_1(raw: dict[str, Any]) -> bool:
    """Whether a file with no `kind` is a schema-1 smoke record (its fields say so)."""
    return raw.get("schema_version") == 1 and "started_at" in raw and "results" in raw


class SmokeReceipt(ReceiptHeader):
    """The JSON record of one smoke run, rewritten after every request so nothing is lost."""

    WRITTEN_BY: ClassVar[str] = "sparkrig demo"
    UPGRADES: ClassVar[dict[int, Upgrade]] = {1: smoke_schema_1}
    KINDLESS: ClassVar[Callable[[dict[str, Any]], bool] | None] = is_smoke_schema_1

    kind: Literal["sparkrig-smoke"] = Field(default="sparkrig-smoke", description=KIND)
    schema_version: Literal[2] = Field(default=2, description=SCHEMA_VERSION)
    base_url: str = Field(description="the base URL of the llama-server the demo started")
    model: str = Field(description="the model id that llama-server served the model under")
    engine_binary: str | None = Field(default=None, description="the engine program that served")
    results: list[SmokeResult] = Field(
        default_factory=list,
        description="one per smoke request, saved as each lands: count, json, then the "
        "concurrent ones",
    )
    metrics_delta: MetricsDelta | None = Field(
        default=None,
        description="the server's /metrics across the whole smoke: counters as differences, "
        "gauges as the later value; unset when /metrics could not be read (warnings says so)",
    )
    warnings: list[str] = Field(
        default_factory=list, description="what went wrong around the requests, in words"
    )
    check_failed: list[str] = Field(
        default_factory=list, description="guards of the demo's quick battery that failed"
    )

    def close(self) -> None:
        """The run is over: whole, and measured when any request got a reply."""
        self.complete = True
        self.measured = any(result.record.error is None for result in self.results)


def save_smoke_receipt(receipt: SmokeReceipt, path: Path) -> Path:
    return save_receipt_file(receipt, path)


def load_smoke_receipt(path: Path) -> SmokeReceipt:
    """A smoke receipt, or a smoke record written before smoke receipts named their kind."""
    return load_receipt_file(path, SmokeReceipt)


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
