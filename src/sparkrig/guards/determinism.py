"""Guard 2, determinism matrix: temperature-0 replies must not change with how they are served.

Alone and sequential, with the prompt already in the prefix cache, is the reference; the first
(cold) run, concurrent, staggered, beside a long prompt, and again after the churn must give the
same text. At a difference, the logprobs tell a near-tie flip (the top two swapped where they
were close: the arithmetic of another batch shape or cache state) from a defect (research notes,
quality-guards.md §2). On a GPU engine cold and cached runs differ by such flips (the cached
prompt's last tokens go through other kernels), so the reference is the cached one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from sparkrig import defaults
from sparkrig.client import ChatRequest, RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import Divergence, first_divergence, reference_problem
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "determinism"
PROMPTS: Final = (
    "Write two sentences about a lighthouse keeper.",
    "List three uses of copper, one per line.",
    "Explain in two sentences why the sea is salty.",
    "Write a Python function that returns the square of a number.",
    "Describe a red apple to someone who has never seen one.",
    "Give four tips for a job interview.",
)
QUICK_PROMPTS: Final = 4
QUICK_REPLY_TOKENS: Final = 32
LONG_PROMPT_SENTENCES: Final = 40  # about 600 tokens: fits a 1,024-token slot

Scenario = Callable[[GuardContext, list[ChatRequest]], Awaitable[list[RequestRecord]]]


def long_neighbour(context: GuardContext) -> ChatRequest:
    text = " ".join(
        f"Entry {i}: the ferry left pier {i % 9} at {i % 12 + 1} o'clock with {i * 13 % 90} "
        "passengers."
        for i in range(LONG_PROMPT_SENTENCES)
    )
    return context.chat(text + "\n\nSummarise the ferry log in one sentence.")


async def _alone(context: GuardContext, requests: list[ChatRequest]) -> list[RequestRecord]:
    return [await context.send(request) for request in requests]


async def _concurrent(context: GuardContext, requests: list[ChatRequest]) -> list[RequestRecord]:
    width = max(context.settings.concurrency, len(requests))
    batch = [requests[i % len(requests)] for i in range(width)]
    return (await context.send_all(batch))[: len(requests)]


async def _staggered(context: GuardContext, requests: list[ChatRequest]) -> list[RequestRecord]:
    return await context.send_staggered(requests, defaults.CHECK_STAGGER_S)


async def _beside_long(context: GuardContext, requests: list[ChatRequest]) -> list[RequestRecord]:
    records = await context.send_all([long_neighbour(context), *requests])
    return records[1:]


SCENARIOS: Final[dict[str, Scenario]] = {
    "concurrent": _concurrent,
    "staggered": _staggered,
    "beside a long prompt": _beside_long,
}
QUICK_SCENARIOS: Final = ("concurrent",)


async def determinism_guard(context: GuardContext) -> GuardResult:
    quick = context.settings.quick
    prompts = PROMPTS[:QUICK_PROMPTS] if quick else PROMPTS
    tokens = QUICK_REPLY_TOKENS if quick else defaults.CHECK_REPLY_TOKENS
    requests = [
        context.chat(p, max_tokens=tokens, logprobs=defaults.CHECK_TOP_LOGPROBS) for p in prompts
    ]
    cold = await _alone(context, requests)  # fills the prefix cache
    reference = await _alone(context, requests)
    if problem := reference_problem(cold + reference):
        return failed(NAME, problem)
    names = QUICK_SCENARIOS if quick else tuple(SCENARIOS)
    outcomes: dict[str, list[Divergence]] = {
        "cold (first run)": [first_divergence(r, c) for r, c in zip(reference, cold, strict=True)]
    }
    for name in names:
        records = await SCENARIOS[name](context, requests)
        outcomes[name] = [first_divergence(r, c) for r, c in zip(reference, records, strict=True)]
    outcomes["again"] = [  # alone once more, after the churn
        first_divergence(r, c)
        for r, c in zip(reference, await _alone(context, requests), strict=True)
    ]
    return _verdict(outcomes, prompts)


def _verdict(outcomes: dict[str, list[Divergence]], prompts: tuple[str, ...]) -> GuardResult:
    table = {
        name: [d.model_dump(exclude_defaults=True) for d in divergences]
        for name, divergences in outcomes.items()
    }
    counts = dict.fromkeys(("identical", "near_tie", "defect"), 0)
    for divergences in outcomes.values():
        for divergence in divergences:
            counts[divergence.kind] += 1
    summary = (
        f"{len(outcomes)} scenarios × {len(prompts)} prompts vs alone: {counts['identical']} "
        f"identical, {counts['near_tie']} near-tie flips, {counts['defect']} defects"
    )
    for name, divergences in outcomes.items():
        for index, divergence in enumerate(divergences):
            if divergence.kind == "defect":
                margin = (
                    "no logprobs" if divergence.margin_nats is None
                    else f"margin {divergence.margin_nats:.2f} nats"
                )  # fmt: skip
                return failed(
                    NAME, f"{summary}; first defect: {name}, prompt {index + 1}, char "
                    f"{divergence.char_offset} ({margin}): {divergence.reference_excerpt!r} → "
                    f"{divergence.candidate_excerpt!r}", scenarios=table,
                )  # fmt: skip
    return passed(NAME, summary, scenarios=table)
