"""The parts of the KV-integrity guard its scenarios share: one planted fact per block of a
document, the question that reads it back, which reply path a read takes, the comparison of the
reads with the reference, and the judgement of the reference itself."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sparkrig import defaults
from sparkrig.client import ChatRequest, RequestRecord
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import first_divergence
from sparkrig.guards.long_prompts import TokenCounter, filler_sentence, text_of_tokens
from sparkrig.guards.verdict import GuardResult, failed, skipped

NAME: Final = "kv_integrity"
SHARED_PREFIX: Final = (
    "Inventory ledger. Every item below has a six-digit code. Read the ledger, then answer the "
    "question at the end."
)
ANSWER_TOKENS: Final = 16

Cell = tuple[int, int]  # (document, block)


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


async def build_documents(
    context: GuardContext, block_tokens: int, *, first_document: int = 0
) -> tuple[dict[int, str], bool]:
    """`kv_documents` documents, numbered from `first_document`, of `kv_blocks_per_document`
    blocks, each about `block_tokens` tokens and holding its one fact at its start; True when
    lengths were estimated (no /tokenize)."""
    counter = TokenCounter(context.client, context.model)
    documents = {}
    for document in range(first_document, first_document + context.settings.kv_documents):
        blocks = [SHARED_PREFIX]
        for block in range(context.settings.kv_blocks_per_document):
            head = fact(document, block)
            budget = block_tokens - await counter.count(head)
            seed = document * 100 + block
            sentence = functools.partial(filler_sentence, seed)
            filler, _ = await text_of_tokens(counter, budget, sentence)
            blocks.append(f"{head} {filler}")
        documents[document] = "\n".join(blocks)
    return documents, counter.estimated


def question(
    context: GuardContext, documents: Mapping[int, str], document: int, block: int, *, stream: bool
) -> ChatRequest:
    ask = f"What is the code of the {item_name(document, block)}? Answer with the number only."
    return context.chat(
        f"{documents[document]}\n\n{ask}",
        max_tokens=ANSWER_TOKENS,
        logprobs=defaults.CHECK_TOP_LOGPROBS,
        stream=stream,
    )


def streamed_together(cell: Cell) -> bool:
    """Which reply path a cell's read takes with all documents in flight; under churn it takes
    the other, so every fact is read both ways under load (issue 12: corruption confined to
    the non-streamed path under concurrency went unseen while every loaded read streamed)."""
    return sum(cell) % 2 == 0


def first_changed_read(
    reference: Mapping[Cell, RequestRecord],
    phases: Mapping[str, Sequence[tuple[Cell, RequestRecord]]],
    details: dict[str, Any],
    scenario: str = "",
) -> GuardResult | None:
    """A FAIL for the first read, phase by phase, that failed or answers otherwise than the
    reference (a defect, not a near-tie flip); None when every read agrees."""
    for phase, reads in phases.items():
        for cell, record in reads:
            where = f"{scenario}document {cell[0]}, block {cell[1]}"
            if record.error is not None:
                return failed(
                    NAME, f"{phase}: the read of {where} failed: {record.error.message}", **details
                )
            if first_divergence(reference[cell], record).kind == "defect":
                path = "streamed" if record.stream else "non-streamed"
                return failed(
                    NAME,
                    f"{where} (the {item_name(*cell)}) answers differently {phase} ({path}): "
                    f"{reference[cell].content.strip()!r} alone, {record.content.strip()!r} now",
                    **details,
                )
    return None


def result_if_reference_bad(
    baseline: Baseline,
    correct: int,
    cells: int,
    details: dict[str, Any],
    *,
    record: bool,
    scope: str = "",
) -> GuardResult | None:
    """A FAIL or SKIP when the reference reads, judged by themselves, cannot be trusted: held to
    the baseline (recorded into it with `record`, under keys that start with `scope`), or (with
    no baseline) refused when they found no fact at all. A reference that lost its facts makes
    every later read agree with it (a truncated prompt is truncated alike every time), so the
    differential comparison alone would pass. None: go on and compare."""
    correct_key, cells_key = f"{scope}reference_correct", f"{scope}cells"
    what = f"the {scope.replace('_', ' ')}reference" if scope else "the reference"
    if record:
        baseline.scores.setdefault(NAME, {}).update({correct_key: correct, cells_key: cells})
        return None
    recorded = baseline.scores.get(NAME) or {}
    if recorded.get(cells_key) == cells:
        lost = recorded[correct_key] - correct
        if lost > defaults.CHECK_REFERENCE_MAX_LOST:
            return failed(
                NAME,
                f"{what} itself degraded: {correct} of {cells} facts read back "
                f"alone, {recorded[correct_key]} in the baseline — the prompts or the "
                "context are damaged before any concurrency (check truncation, the context "
                "size and the template)",
                baseline_correct=recorded[correct_key],
                **details,
            )
        return None
    if correct == 0:
        return skipped(
            NAME,
            f"{what} read back none of the {cells} facts alone, so agreeing with "
            "it proves nothing — record a baseline on a known-good server with "
            "--record-baseline, or use a model that can read the facts",
            **details,
        )
    return None


def against_baseline(context: GuardContext, scope: str = "") -> str:
    recorded = context.baseline.scores.get(NAME) or {}
    if context.record_baseline:
        return ", recorded as the baseline"
    if f"{scope}reference_correct" not in recorded:
        return ", no baseline to hold that to"
    return f", baseline {recorded[f'{scope}reference_correct']}"
