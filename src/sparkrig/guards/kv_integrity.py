"""Guard 3, KV block integrity: one planted fact per KV block, in 3+ documents that share a
prefix; every fact read back alone (the reference), with all documents in flight together,
and alone again under churn. The answers must not change. A second scenario
(guards/kv_long_prompts.py) does the same with documents sized from the server's context.

A block zeroer that overran into the next block corrupted one 256-token
block of a document only when 3 or more requests prefilled together (8 documents: 6 of 7 shared
blocks wrong; 2 documents: 0 of 2); the wrong answer was a plausible fabrication and stuck in
the prefix cache (docs/field-notes.md#kv-zeroer-three-prefills). The report names the document
and block that changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Final

import aiohttp

from sparkrig import defaults
from sparkrig.client import RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import reference_problem
from sparkrig.guards.kv_facts import (
    NAME,
    Cell,
    against_baseline,
    build_documents,
    first_changed_read,
    item_code,
    question,
    result_if_reference_bad,
    streamed_together,
)
from sparkrig.guards.kv_long_prompts import long_prompt_scenario
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped
from sparkrig.outside_numbers import int_or_none

MIN_FACT_TOKENS: Final = 64

_VLLM_BLOCK_SIZE: Final = re.compile(r'cache_config_info\{[^}]*\bblock_size="(\d+)"')


def block_size_in_metrics(text: str) -> int | None:
    """vLLM's block size from its cache_config_info metric labels."""
    match = _VLLM_BLOCK_SIZE.search(text)
    return int_or_none(match.group(1), minimum=1) if match else None


async def _block_tokens(context: GuardContext) -> tuple[int, str]:
    if context.settings.kv_block_tokens:
        return context.settings.kv_block_tokens, "set by --kv-block-tokens"
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        size = block_size_in_metrics(await context.client.get_text("/metrics"))
        if size:
            blocks = -(-MIN_FACT_TOKENS // size)  # a fact and its filler need room
            where = "" if blocks == 1 else f", a fact every {blocks} blocks"
            return size * blocks, f"the server's cache_config_info block_size {size}{where}"
    return (
        defaults.CHECK_KV_BLOCK_TOKENS_FALLBACK,
        "the server does not say; the 256 of docs/field-notes.md#kv-block-256",
    )


async def block_scenario(context: GuardContext, block_tokens: int, source: str) -> GuardResult:
    """Documents of `kv_blocks_per_document` blocks of the KV block size, a fact in each."""
    documents, estimated = await build_documents(context, block_tokens)
    blocks = context.settings.kv_blocks_per_document
    cells = [(d, b) for d in documents for b in range(blocks)]
    reference: dict[Cell, RequestRecord] = {}
    for cell in cells:
        reference[cell] = await context.send(question(context, documents, *cell, stream=True))
    if problem := reference_problem(list(reference.values()), "reference read"):
        return failed(NAME, problem)
    together: list[tuple[Cell, RequestRecord]] = []
    for block in range(blocks):
        row = [(d, block) for d in documents]
        records = await context.send_all(
            [question(context, documents, *cell, stream=streamed_together(cell)) for cell in row]
        )
        together += zip(row, records, strict=True)
    churn = context.chat("Write a long list of fruit names.", max_tokens=200, stream=False)
    churn_task = asyncio.ensure_future(context.send(churn))
    under_churn = [
        (
            cell,
            await context.send(
                question(context, documents, *cell, stream=not streamed_together(cell))
            ),
        )
        for cell in cells
    ]
    await churn_task
    correct = sum(item_code(*cell) in reference[cell].content for cell in cells)
    details = {
        "block_tokens": block_tokens,
        "block_tokens_source": source,
        "estimated": estimated,
        "documents": len(documents),
        "cells": len(cells),
        "reference_correct": correct,
        "prompt_chars": max(len(documents[d]) for d in documents),
    }
    refused = result_if_reference_bad(
        context.baseline, correct, len(cells), details, record=context.record_baseline
    )
    if refused is not None:
        return refused
    phases = {"all documents in flight": together, "under churn": under_churn}
    if changed := first_changed_read(reference, phases, details):
        return changed
    lengths = "estimated" if estimated else "from /tokenize"
    return passed(
        NAME,
        f"{len(cells)} facts in {len(documents)} documents × {blocks} blocks of "
        f"{block_tokens} tokens ({lengths}): same answers alone, together and under churn, "
        f"streamed and not ({correct} right alone{against_baseline(context)})",
        **details,
    )


async def kv_integrity_guard(context: GuardContext) -> GuardResult:
    block_tokens, source = await _block_tokens(context)
    blocks = await block_scenario(context, block_tokens, source)
    if blocks.verdict == "FAIL":
        return blocks
    long = await long_prompt_scenario(context, block_tokens)
    details = {**blocks.details, "long_documents": long.details}
    if long.verdict == "FAIL":
        return failed(NAME, f"long documents: {long.evidence}", **details)
    evidence = f"{blocks.evidence}; long documents: {long.evidence}"
    if "PASS" in (blocks.verdict, long.verdict):
        return passed(NAME, evidence, **details)
    return skipped(NAME, evidence, **details)
