"""Guard 3, KV block integrity: one planted fact per KV block, in 3+ long documents that share
a prefix; every fact read back alone (the reference), with all documents in flight together,
and alone again under churn. The answers must not change.

A block zeroer that overran into the next block corrupted one 256-token
block of a document only when 3 or more requests prefilled together (8 documents: 6 of 7 shared
blocks wrong; 2 documents: 0 of 2); the wrong answer was a plausible fabrication and stuck in
the prefix cache (docs/field-notes.md#kv-zeroer-three-prefills). The report names the document
and block that changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import re
from typing import Any, Final

import aiohttp

from sparkrig import defaults
from sparkrig.client import ChatRequest, RequestRecord
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import first_divergence, reference_problem
from sparkrig.guards.long_prompts import TokenCounter, filler_sentence, text_of_tokens
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped
from sparkrig.outside_numbers import int_or_none

NAME: Final = "kv_integrity"
SHARED_PREFIX: Final = (
    "Inventory ledger. Every item below has a six-digit code. Read the ledger, then answer the "
    "question at the end."
)
ANSWER_TOKENS: Final = 16
MIN_FACT_TOKENS: Final = 64


def item_code(document: int, block: int) -> str:
    digest = hashlib.sha256(f"kv-{document}-{block}".encode()).hexdigest()
    return str(100_000 + int(digest[:8], 16) % 900_000)


_ADJECTIVES: Final = (
    "silver",
    "green",
    "copper",
    "amber",
    "velvet",
    "stone",
    "paper",
    "iron",
    "glass",
    "woollen",
    "golden",
    "cedar",
)
_NOUNS: Final = (
    "falcon",
    "lantern",
    "kettle",
    "fox",
    "drum",
    "bridge",
    "moon",
    "gate",
    "harp",
    "anchor",
    "compass",
    "violin",
    "tower",
)


def item_name(document: int, block: int) -> str:
    """A distinct two-word name per fact: the bundled 135M model reads back 7 of 9 facts named
    this way and 0 of 9 named "Item D0-B1" (same documents, measured side by side)."""
    index = document * len(_NOUNS) + block  # distinct for 12 documents of up to 13 blocks
    noun = (index // len(_ADJECTIVES) + index % len(_ADJECTIVES)) % len(_NOUNS)
    return f"{_ADJECTIVES[index % len(_ADJECTIVES)]} {_NOUNS[noun]}"


def fact(document: int, block: int) -> str:
    return f"The code of the {item_name(document, block)} is {item_code(document, block)}."


async def build_documents(context: GuardContext, block_tokens: int) -> tuple[list[str], bool]:
    """Documents of `kv_blocks_per_document` blocks, each about `block_tokens` tokens and
    holding its one fact; True when lengths were estimated (no /tokenize)."""
    counter = TokenCounter(context.client, context.model)
    documents = []
    for document in range(context.settings.kv_documents):
        blocks = [SHARED_PREFIX]
        for block in range(context.settings.kv_blocks_per_document):
            head = fact(document, block)
            budget = block_tokens - await counter.count(head)
            seed = document * 100 + block
            sentence = functools.partial(filler_sentence, seed)
            filler, _ = await text_of_tokens(counter, budget, sentence)
            blocks.append(f"{head} {filler}")
        documents.append("\n".join(blocks))
    return documents, counter.estimated


def question(
    context: GuardContext, documents: list[str], document: int, block: int, *, stream: bool = True
) -> ChatRequest:
    ask = f"What is the code of the {item_name(document, block)}? Answer with the number only."
    return context.chat(
        f"{documents[document]}\n\n{ask}",
        max_tokens=ANSWER_TOKENS,
        logprobs=defaults.CHECK_TOP_LOGPROBS,
        stream=stream,
    )


def streamed_together(cell: tuple[int, int]) -> bool:
    """Which reply path a cell's read takes with all documents in flight; under churn it takes
    the other, so every fact is read both ways under load (issue 12: corruption confined to
    the non-streamed path under concurrency went unseen while every loaded read streamed)."""
    return sum(cell) % 2 == 0


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


async def kv_integrity_guard(context: GuardContext) -> GuardResult:
    block_tokens, source = await _block_tokens(context)
    documents, estimated = await build_documents(context, block_tokens)
    cells = [
        (d, b)
        for d in range(len(documents))
        for b in range(context.settings.kv_blocks_per_document)
    ]
    reference: dict[tuple[int, int], RequestRecord] = {}
    for cell in cells:
        reference[cell] = await context.send(question(context, documents, *cell))
    if problem := reference_problem(list(reference.values()), "reference read"):
        return failed(NAME, problem)
    together: dict[tuple[int, int], RequestRecord] = {}
    for block in range(context.settings.kv_blocks_per_document):
        row = [(d, block) for d in range(len(documents))]
        records = await context.send_all(
            [question(context, documents, *cell, stream=streamed_together(cell)) for cell in row]
        )
        together.update(zip(row, records, strict=True))
    churn = context.chat("Write a long list of fruit names.", max_tokens=200, stream=False)
    churn_task = asyncio.ensure_future(context.send(churn))
    under_churn = {
        cell: await context.send(
            question(context, documents, *cell, stream=not streamed_together(cell))
        )
        for cell in cells
    }
    await churn_task
    correct = sum(item_code(*cell) in reference[cell].content for cell in cells)
    details = {
        "block_tokens": block_tokens,
        "block_tokens_source": source,
        "estimated": estimated,
        "documents": len(documents),
        "cells": len(cells),
        "reference_correct": correct,
    }
    refused = result_if_reference_bad(
        context.baseline, correct, len(cells), details, record=context.record_baseline
    )
    if refused is not None:
        return refused
    phases = {"all documents in flight": together, "under churn": under_churn}
    for phase, reads in phases.items():
        for cell, record in reads.items():
            if record.error is not None:
                return failed(
                    NAME,
                    f"{phase}: the read of document {cell[0]}, block {cell[1]} "
                    f"failed: {record.error.message}",
                    **details,
                )
            divergence = first_divergence(reference[cell], record)
            if divergence.kind == "defect":
                path = "streamed" if record.stream else "non-streamed"
                return failed(
                    NAME,
                    f"document {cell[0]}, block {cell[1]} (the {item_name(*cell)}) answers "
                    f"differently {phase} ({path}): "
                    f"{reference[cell].content.strip()!r} alone, {record.content.strip()!r} now",
                    **details,
                )
    lengths = "estimated" if estimated else "from /tokenize"
    return passed(
        NAME,
        f"{len(cells)} facts in {len(documents)} documents × "
        f"{context.settings.kv_blocks_per_document} blocks of {block_tokens} tokens ({lengths}): "
        f"same answers alone, together and under churn, streamed and not ({correct} right "
        f"alone{_against_baseline(context)})",
        **details,
    )


def result_if_reference_bad(
    baseline: Baseline, correct: int, cells: int, details: dict[str, Any], *, record: bool
) -> GuardResult | None:
    """A FAIL or SKIP when the reference reads, judged by themselves, cannot be trusted: held to
    the baseline (recorded into it with `record`), or (with no baseline) refused when they
    found no fact at all. A reference that lost its facts makes every later read agree with it
    (a truncated prompt is truncated alike every time), so the differential comparison alone
    would pass. None: go on and compare."""
    if record:
        baseline.scores[NAME] = {"reference_correct": correct, "cells": cells}
        return None
    recorded = baseline.scores.get(NAME)
    if recorded is not None and recorded.get("cells") == cells:
        lost = recorded["reference_correct"] - correct
        if lost > defaults.CHECK_REFERENCE_MAX_LOST:
            return failed(
                NAME,
                f"the reference itself degraded: {correct} of {cells} facts read back "
                f"alone, {recorded['reference_correct']} in the baseline — the prompts or the "
                "context are damaged before any concurrency (check truncation, the context "
                "size and the template)",
                baseline_correct=recorded["reference_correct"],
                **details,
            )
        return None
    if correct == 0:
        return skipped(
            NAME,
            f"the reference read back none of the {cells} facts alone, so agreeing with "
            "it proves nothing — record a baseline on a known-good server with "
            "--record-baseline, or use a model that can read the facts",
            **details,
        )
    return None


def _against_baseline(context: GuardContext) -> str:
    recorded = context.baseline.scores.get(NAME)
    if context.record_baseline:
        return ", recorded as the baseline"
    if recorded is None:
        return ", no baseline to hold that to"
    return f", baseline {recorded['reference_correct']}"
