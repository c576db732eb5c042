"""Guard 11, load_accuracy: the same items with exact answers, scored alone and at c = N on the
same server; FAIL when the load costs accuracy beyond an exact paired interval.

Elsewhere an instruction-following score fell from 74.7 sequential to 63.6 at concurrency 16 on
one server (batched prefill corrupting rows, issue 27); no benchmark tool scores the same items
alone and under load on one server. The guard compares the server with itself, so a weak model
passes as long as load does not make it worse. Each item takes the same reply path both times
(alternating streamed and whole over the items), so a path difference is not read as load.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

import aiohttp

from sparkrig import defaults
from sparkrig.client import ChatRequest, RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.identity import kept
from sparkrig.guards.load_items import LOAD_ITEMS, LoadItem
from sparkrig.guards.paired_accuracy import PairedAccuracy, load_costs_accuracy, paired_accuracy
from sparkrig.guards.verdict import GuardResult, failed, passed
from sparkrig.outside_numbers import count_or_none

NAME: Final = "load_accuracy"


async def server_slots(context: GuardContext) -> int | None:
    """How many requests the server decodes at once: llama.cpp's /props total_slots."""
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError, AttributeError):
        props = await context.client.get_json("/props")
        return count_or_none(props.get("total_slots"))
    return None


async def load_concurrency(context: GuardContext) -> tuple[int, str]:
    """c = N and where it came from: the setting, the server's slots, or the fallback."""
    if context.settings.load_concurrency is not None:
        return context.settings.load_concurrency, "set"
    slots = await server_slots(context)
    if slots is not None and slots >= 2:  # one slot cannot be loaded
        return slots, "the server's slots"
    return defaults.CHECK_LOAD_CONCURRENCY_FALLBACK, "fallback"


def item_requests(
    context: GuardContext, items: tuple[LoadItem, ...], logprobs: bool
) -> list[ChatRequest]:
    """One request per item. `logprobs` for the replies kept for `check --against` (alone):
    they tell a near-tie from a change there, and do not change a temperature-0 reply; under
    load they only cost time (on the embedded engine the loaded pass took half as long
    without them)."""
    return [
        context.chat(
            item.prompt,
            max_tokens=defaults.CHECK_LOAD_REPLY_TOKENS,
            stream=index % 2 == 0,
            logprobs=defaults.CHECK_TOP_LOGPROBS if logprobs else None,
        )
        for index, item in enumerate(items)
    ]


async def send_at(
    context: GuardContext, requests: list[ChatRequest], concurrency: int
) -> list[RequestRecord]:
    """Every request, at most `concurrency` in flight at any moment, in order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(request: ChatRequest) -> RequestRecord:
        async with gate:
            return await context.send(request)

    return list(await asyncio.gather(*(one(request) for request in requests)))


def scored(items: tuple[LoadItem, ...], records: list[RequestRecord]) -> list[bool]:
    return [
        record.error is None and item.is_right(record.content)
        for item, record in zip(items, records, strict=True)
    ]


def load_accuracy_verdict(
    items: tuple[LoadItem, ...],
    alone: list[RequestRecord],
    loaded: list[RequestRecord],
    concurrency: int,
    min_drop: float = defaults.CHECK_LOAD_ACCURACY_MIN_DROP,
) -> GuardResult:
    """Pure: FAIL when accuracy under load is below accuracy alone beyond the paired interval
    and by at least `min_drop`; the evidence names the first item lost."""
    errors = [r.error for r in alone + loaded if r.error is not None]
    if errors:
        return failed(NAME, f"an item's request failed: {errors[0].message}")
    right_alone, right_loaded = scored(items, alone), scored(items, loaded)
    result: PairedAccuracy = paired_accuracy(right_alone, right_loaded)
    changed = [
        {"item": index + 1, "alone": a.content, "loaded": b.content, "right_alone": ra}
        for index, (a, b, ra, rb) in enumerate(
            zip(alone, loaded, right_alone, right_loaded, strict=True)
        )
        if ra != rb
    ]
    details = {"concurrency": concurrency, "min_drop": min_drop, **result.model_dump()}
    details["changed"] = changed
    summary = (
        f"{result.right_alone}/{result.items} right alone, {result.right_loaded}/{result.items} "
        f"at c={concurrency} ({result.lost} lost, {result.gained} gained): drop "
        f"{result.drop:+.1%}, 95% paired interval [{result.drop_low:+.1%}, "
        f"{result.drop_high:+.1%}] (fails at a drop of {min_drop:.0%} or more whose interval "
        "excludes 0)"
    )
    if result.right_alone == 0:
        return failed(
            NAME,
            f"{summary}; no item is right alone, so load has nothing to cost — check the server "
            "answers at all (its chat template, max_tokens)",
            **details,
        )
    if load_costs_accuracy(result, min_drop):
        lost = zip(right_alone, right_loaded, strict=True)
        first = next(i for i, (a, b) in enumerate(lost) if a and not b)
        return failed(
            NAME,
            f"{summary}; e.g. item {first + 1} {items[first].prompt[:50]!r}: alone "
            f"{alone[first].content[:40]!r}, loaded {loaded[first].content[:40]!r}",
            **details,
        )
    return passed(NAME, summary, **details)


async def load_accuracy_guard(context: GuardContext) -> GuardResult:
    concurrency, source = await load_concurrency(context)
    requests = item_requests(context, LOAD_ITEMS, logprobs=True)
    alone = [await context.send(request) for request in requests]
    loaded = await send_at(context, item_requests(context, LOAD_ITEMS, False), concurrency)
    result = load_accuracy_verdict(LOAD_ITEMS, alone, loaded, concurrency)
    result.details["concurrency_from"] = source
    result.details["outputs"] = [  # the replies alone, for `check --against`
        kept(NAME, item.prompt, request, record)
        for item, request, record in zip(LOAD_ITEMS, requests, alone, strict=True)
    ]
    return result
