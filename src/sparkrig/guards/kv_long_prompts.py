"""KV integrity's long-prompt scenario: documents sized from the server's context, not its KV
block size, 3 or more of them in flight with a short request beside them, every fact read back
in that crowd (the reply paths alternate: each crowd holds both) and compared with the same fact
read alone.

Sized from the block size alone, the documents were 3 blocks of 64 tokens on vLLM (under 1,500
characters), so a corruption that struck only prompts over ~1,500 characters while three were in
flight passed every guard (issue 27). The report's block zeroer needed 3 or more prefills at
once, whatever the block size (docs/field-notes.md#kv-zeroer-three-prefills), and its markup
leak needed three long requests plus one short one (docs/field-notes.md#markup-leaks).
"""

from __future__ import annotations

from typing import Final

from sparkrig import defaults
from sparkrig.client import RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import reference_problem
from sparkrig.guards.kv_facts import (
    NAME,
    SHARED_PREFIX,
    Cell,
    against_baseline,
    build_documents,
    fact,
    first_changed_read,
    item_code,
    question,
    result_if_reference_bad,
    streamed_together,
)
from sparkrig.guards.server_shape import context_tokens
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped

SCOPE: Final = "long_"


def long_document_tokens(
    server_context: int | None, block_tokens: int, blocks: int
) -> tuple[int | None, str]:
    """Tokens of each long document: the server's context per request less room for the
    question, template and reply, at most CHECK_KV_LONG_DOCUMENT_TOKENS; None (and why) when
    the server does not say its context, or when that leaves no more than the block scenario's
    `blocks` blocks of `block_tokens`."""
    if server_context is None:
        return None, "not run: the server does not say its context per request"
    tokens = min(
        defaults.CHECK_KV_LONG_DOCUMENT_TOKENS,
        server_context - defaults.CHECK_KV_LONG_ALLOWANCE_TOKENS,
    )
    if tokens // blocks <= block_tokens:
        return None, (
            f"not run: a context of {server_context} tokens leaves no document longer than "
            f"{blocks} blocks of {block_tokens}"
        )
    return tokens, f"sized from the server's context of {server_context} tokens"


async def long_prompt_scenario(context: GuardContext, block_tokens: int) -> GuardResult:
    """A SKIP says the scenario was not run or cannot be judged; the guard goes by its blocks."""
    server_context = await context_tokens(context)
    blocks = context.settings.kv_blocks_per_document
    tokens, sizing = long_document_tokens(server_context, block_tokens, blocks)
    if tokens is None:
        return skipped(NAME, sizing, server_context=server_context)
    count = context.settings.kv_documents
    documents, estimated = await build_documents(context, tokens // blocks, first_document=count)
    short = 2 * count  # numbered after the long ones: its fact differs from theirs
    documents[short] = f"{SHARED_PREFIX}\n{fact(short, 0)}"
    long_cells = [(d, b) for d in range(count, 2 * count) for b in range(blocks)]
    cells = [*long_cells, (short, 0)]
    reference: dict[Cell, RequestRecord] = {}
    for cell in cells:
        reference[cell] = await context.send(question(context, documents, *cell, stream=True))
    correct = sum(item_code(*cell) in reference[cell].content for cell in cells)
    details = {
        "document_tokens": tokens,
        "sizing": sizing,
        "estimated": estimated,
        "documents": count,
        "cells": len(cells),
        "reference_correct": correct,
        "prompt_chars": max(len(documents[d]) for d in range(count, 2 * count)),
    }
    if problem := reference_problem(list(reference.values()), "long-document reference read"):
        return failed(NAME, problem, **details)
    refused = result_if_reference_bad(
        context.baseline,
        correct,
        len(cells),
        details,
        record=context.record_baseline,
        scope=SCOPE,
    )
    if refused is not None:
        return refused
    reads: list[tuple[Cell, RequestRecord]] = []
    for block in range(blocks):
        row = [(d, block) for d in range(count, 2 * count)]
        requests = [
            question(context, documents, *cell, stream=streamed_together(cell)) for cell in row
        ]
        row.append((short, 0))  # last: it joins while the long ones prefill
        requests.append(question(context, documents, short, 0, stream=block % 2 == 1))
        reads += zip(row, await context.send_all(requests), strict=True)
    phases = {f"{count} long documents in flight with a short request": reads}
    if changed := first_changed_read(reference, phases, details):
        return changed
    return passed(
        NAME,
        f"{len(long_cells)} facts in {count} documents of {tokens} tokens ({sizing}, "
        f"{details['prompt_chars']} characters) and a short one: same answers alone and "
        f"{count} in flight with the short request, streamed and not ({correct} of "
        f"{len(cells)} right alone{against_baseline(context, SCOPE)})",
        **details,
    )
