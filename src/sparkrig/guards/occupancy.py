"""Determinism over occupancy: the same temperature-0 prompts at half and all of the server's
slots (alone is the reference), and seeded sampling alone vs at full occupancy.

A kernel whose arithmetic depends on how many sequences share a batch changes replies only past
some batch size: CUDA graphs above 2 sequences answered every prompt with counting garbage while
2 were right (docs/field-notes.md#graphs-above-two-seqs), and a release's determinism gate holds
outputs identical across scenarios including streams joining mid-decode
(docs/field-notes.md#determinism-gate). The determinism scenarios send at most 13 requests at
once, fewer than most servers' slots, so this fills the server to the count it reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeVar

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import Divergence, first_divergence
from sparkrig.guards.server_shape import server_slots

SEEDED_PROMPTS: Final = 2  # the first prompts of the battery, sampled with a seed

Outcomes = dict[str, list[tuple[str, Divergence]]]
T = TypeVar("T")


async def slot_count(context: GuardContext) -> tuple[int, str]:
    """The slots to fill and where the number came from."""
    if context.settings.slots is not None:
        return context.settings.slots, "set by --slots"
    if (slots := await server_slots(context)) is not None:
        return slots, "the server's /props total_slots"
    fallback = defaults.CHECK_SLOTS_FALLBACK
    return fallback, f"the server does not say (vLLM keeps max_num_seqs): {fallback}, set --slots"


def occupancy_levels(slots: int) -> tuple[int, ...]:
    """Half and all of the slots, above 1 (alone is the reference) and without repeats."""
    return tuple(sorted({level for level in (slots // 2, slots) if level > 1}))


def widened(items: Sequence[T], width: int) -> list[T]:
    """`items`, repeated in order up to `width` when they are fewer."""
    return [items[i % len(items)] for i in range(max(width, len(items)))]


async def at_occupancy(
    context: GuardContext, requests: Sequence[ChatRequest | CompletionRequest], width: int
) -> list[RequestRecord]:
    """`widened(requests, width)` with `width` in flight: in waves of `width` when there are
    more requests, else all at once; every record, the repeats' too (the last to arrive is one)."""
    batch = widened(requests, width)
    records: list[RequestRecord] = []
    for start in range(0, len(batch), width):
        records += await context.send_all(batch[start : start + width])
    return records


def compared(
    references: Sequence[RequestRecord], records: Sequence[RequestRecord], labels: Sequence[str]
) -> list[tuple[str, Divergence]]:
    return [
        (label, first_divergence(reference, record))
        for label, reference, record in zip(labels, references, records, strict=True)
    ]


async def occupancy_outcomes(
    context: GuardContext,
    mixed: Sequence[ChatRequest | CompletionRequest],
    references: Sequence[RequestRecord],
    labels: Sequence[str],
    slots: int,
) -> Outcomes:
    """`mixed` (both reply paths) at each occupancy, compared with `references` (alone)."""
    return {
        f"occupancy {width} of {slots} slots": compared(
            widened(references, width),
            await at_occupancy(context, mixed, width),
            widened(labels, width),
        )
        for width in occupancy_levels(slots)
    }


def seeded(context: GuardContext, prompt: str) -> ChatRequest:
    request = context.chat(
        prompt, logprobs=defaults.CHECK_TOP_LOGPROBS, extra={"seed": defaults.CHECK_SEED}
    )
    return request.model_copy(update={"temperature": defaults.CHECK_SEEDED_TEMPERATURE})


async def seeded_outcomes(
    context: GuardContext, prompts: Sequence[str], slots: int
) -> tuple[Outcomes, str]:
    """Seeded sampling alone twice, then at full occupancy: the same text. A server whose two
    alone replies differ does not honour the seed; that part is then not judged (the note)."""
    requests = [seeded(context, prompt) for prompt in prompts[:SEEDED_PROMPTS]]
    first = [await context.send(request) for request in requests]
    second = [await context.send(request) for request in requests]
    if any(
        a.error or b.error or a.content != b.content for a, b in zip(first, second, strict=True)
    ):
        return {}, "seeded sampling not judged: two seeded replies alone differ (no seed support)"
    labels = [f"prompt {i + 1} seeded, streamed" for i in range(len(requests))]
    full = await at_occupancy(context, requests, slots)
    name = f"seeded sampling, {max(slots, len(requests))} in flight"
    return {name: compared(widened(second, slots), full, widened(labels, slots))}, (
        f"seeded sampling (seed {defaults.CHECK_SEED}, temperature "
        f"{defaults.CHECK_SEEDED_TEMPERATURE}) alone vs full"
    )
