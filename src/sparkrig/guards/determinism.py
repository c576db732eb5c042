"""Guard 2, determinism matrix: temperature-0 replies must not change with how they are served.

Alone and sequential, with the prompt already in the prefix cache, is the reference; the first
(cold) run, concurrent, staggered, beside a long prompt (each of these three on both reply
paths, streamed and whole), and again after the churn must give the same text. At a difference,
the logprobs tell a near-tie flip (the top two swapped where they were close: the arithmetic of
another batch shape or cache state) from a defect (the research notes on quality guards, §2;
they are not in this repository). On a GPU engine cold and cached runs differ by such flips (the
cached prompt's last tokens go through other kernels), so the reference is the cached one.
Outside --quick the same requests also run at half and all of the server's slots, and seeded
sampling alone vs full (guards/occupancy.py).

Two of the prompts go to /v1/completions as they stand (no chat template), the rest to chat, so
every scenario has both endpoints in flight together: the templates, parsers and a gateway's
rewriting differ between them, and many harnesses (and the margin probe) use completions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import Divergence, first_divergence, reference_problem
from sparkrig.guards.identity import kept
from sparkrig.guards.occupancy import occupancy_outcomes, seeded_outcomes, slot_count
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "determinism"
PROMPTS: Final = (
    "Write two sentences about a lighthouse keeper.",
    "List three uses of copper, one per line.",
    "Explain in two sentences why the sea is salty.",
    'def square(number):\n    """Return the square of a number."""\n',
    "Describe a red apple to someone who has never seen one.",
    "Four tips for a job interview:\n1.",
)
# the prompts (by index) sent to /v1/completions as they stand; one of them is in --quick
COMPLETIONS_AT: Final = frozenset({3, 5})
QUICK_PROMPTS: Final = 4
QUICK_REPLY_TOKENS: Final = 32
LONG_PROMPT_SENTENCES: Final = 40  # about 600 tokens: fits a 1,024-token slot

Request = ChatRequest | CompletionRequest
Scenario = Callable[[GuardContext, list[Request]], Awaitable[list[RequestRecord]]]


def long_neighbour(context: GuardContext) -> ChatRequest:
    text = " ".join(
        f"Entry {i}: the ferry left pier {i % 9} at {i % 12 + 1} o'clock with {i * 13 % 90} "
        "passengers."
        for i in range(LONG_PROMPT_SENTENCES)
    )
    return context.chat(text + "\n\nSummarise the ferry log in one sentence.")


def probe_request(context: GuardContext, index: int, prompt: str, tokens: int) -> Request:
    """The temperature-0 request of PROMPTS[index], on the endpoint COMPLETIONS_AT gives it."""
    if index not in COMPLETIONS_AT:
        return context.chat(prompt, max_tokens=tokens, logprobs=defaults.CHECK_TOP_LOGPROBS)
    return CompletionRequest(
        model=context.model,
        prompt=prompt,
        max_tokens=tokens,
        temperature=0.0,
        logprobs=defaults.CHECK_TOP_LOGPROBS,
    )


async def _alone(context: GuardContext, requests: list[Request]) -> list[RequestRecord]:
    return [await context.send(request) for request in requests]


async def _concurrent(context: GuardContext, requests: list[Request]) -> list[RequestRecord]:
    width = max(context.settings.concurrency, len(requests))
    batch = [requests[i % len(requests)] for i in range(width)]
    return (await context.send_all(batch))[: len(requests)]


async def _staggered(context: GuardContext, requests: list[Request]) -> list[RequestRecord]:
    return await context.send_staggered(requests, defaults.CHECK_STAGGER_S)


async def _beside_long(context: GuardContext, requests: list[Request]) -> list[RequestRecord]:
    records = await context.send_all([long_neighbour(context), *requests])
    return records[1:]


SCENARIOS: Final[dict[str, Scenario]] = {
    "concurrent": _concurrent,
    "staggered": _staggered,
    "beside a long prompt": _beside_long,
}
QUICK_SCENARIOS: Final = ("concurrent",)


def both_paths(requests: Sequence[Request]) -> list[Request]:
    """Every request streamed and again whole, interleaved: under load both reply paths run
    beside each other (many agent clients never stream; issue 12 found corruption confined to
    the non-streamed path under concurrency)."""
    return [r.model_copy(update={"stream": stream}) for r in requests for stream in (True, False)]


def path_label(index: int, api: str = "chat") -> str:
    """The label of `both_paths(requests)[index]`; a completions request says so."""
    endpoint = " (completions)" if api == "completions" else ""
    return f"prompt {index // 2 + 1}{endpoint} {'streamed' if index % 2 == 0 else 'non-streamed'}"


async def determinism_guard(context: GuardContext) -> GuardResult:
    quick = context.settings.quick
    prompts = PROMPTS[:QUICK_PROMPTS] if quick else PROMPTS
    tokens = QUICK_REPLY_TOKENS if quick else defaults.CHECK_REPLY_TOKENS
    requests = [probe_request(context, i, p, tokens) for i, p in enumerate(prompts)]
    cold = await _alone(context, requests)  # fills the prefix cache
    reference = await _alone(context, requests)
    if problem := reference_problem(cold + reference):
        return failed(NAME, problem)
    names = QUICK_SCENARIOS if quick else tuple(SCENARIOS)
    alone = [path_label(2 * i, r.api) for i, r in enumerate(requests)]
    outcomes: dict[str, list[tuple[str, Divergence]]] = {
        "cold (first run)": _compared(reference, cold, alone)
    }
    mixed = both_paths(requests)
    labels = [path_label(i, r.api) for i, r in enumerate(mixed)]
    for name in names:
        records = await SCENARIOS[name](context, mixed)
        outcomes[name] = _compared([reference[i // 2] for i in range(len(mixed))], records, labels)
    notes = []
    if not quick:  # half and all of the slots, and seeded sampling alone vs full
        slots, source = await slot_count(context)
        doubled = [reference[i // 2] for i in range(len(mixed))]
        outcomes.update(await occupancy_outcomes(context, mixed, doubled, labels, slots))
        sampled, note = await seeded_outcomes(context, prompts, slots)
        outcomes.update(sampled)
        notes = [f"{slots} slots ({source})", note]
    # alone once more, after the churn
    outcomes["again"] = _compared(reference, await _alone(context, requests), alone)
    result = _verdict(outcomes, prompts, notes)
    # the reference replies, for `check --against` with a later build
    result.details["outputs"] = [
        kept(NAME, p, q, r) for p, q, r in zip(prompts, requests, reference, strict=True)
    ]
    return result


def _compared(
    references: list[RequestRecord], records: list[RequestRecord], labels: list[str]
) -> list[tuple[str, Divergence]]:
    return [
        (label, first_divergence(reference, record))
        for label, reference, record in zip(labels, references, records, strict=True)
    ]


def _verdict(
    outcomes: dict[str, list[tuple[str, Divergence]]],
    prompts: tuple[str, ...],
    notes: list[str] | None = None,
) -> GuardResult:
    table = {
        name: [{"request": label, **d.model_dump(exclude_defaults=True)} for label, d in rows]
        for name, rows in outcomes.items()
    }
    counts = dict.fromkeys(("identical", "near_tie", "defect"), 0)
    for rows in outcomes.values():
        for _, divergence in rows:
            counts[divergence.kind] += 1
    compared = sum(len(rows) for rows in outcomes.values())
    summary = (
        f"{len(outcomes)} scenarios × {len(prompts)} prompts (chat and completions), streamed "
        f"and non-streamed under load, {compared} replies vs alone: "
        f"{counts['identical']} identical, "
        f"{counts['near_tie']} near-tie flips, {counts['defect']} defects"
    )
    if notes:
        summary += f" ({'; '.join(notes)})"
    for name, rows in outcomes.items():
        for label, divergence in rows:
            if divergence.kind == "defect":
                margin = (
                    "no logprobs"
                    if divergence.margin_nats is None
                    else f"margin {divergence.margin_nats:.2f} nats"
                )
                return failed(
                    NAME,
                    f"{summary}; first defect: {name}, {label}, char "
                    f"{divergence.char_offset} ({margin}): {divergence.reference_excerpt!r} → "
                    f"{divergence.candidate_excerpt!r}",
                    scenarios=table,
                )
    return passed(NAME, summary, scenarios=table)
