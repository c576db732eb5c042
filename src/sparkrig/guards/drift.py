"""Guard 12, drift over uptime: the same greedy probes late must answer as they did early.

A fixed set of temperature-0 probes, on both endpoints (two chat prompts and one completions
prompt, as agent clients use the first and the margin probe the second) and both reply paths,
with logprobs, is taken when the battery opens (before any other guard's load) and again when
it closes; under `check --repeat-every` every repeat is compared with that first set. Text is
compared as determinism compares it (a near-tie flip is reported, a defect fails). Where the
text agrees, the chosen tokens' logprobs must agree too: a server whose numbers move with uptime
while its text stays right (field notes: c128a-alone-soft, soft only after hours warm) shows
here first.

Each set is sent twice and the second send is the one compared, so both sets take the prefix
cache's path: on a GPU engine a cold and a cached prefill differ by near-tie flips (determinism).
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.determinism import both_paths, path_label
from sparkrig.guards.divergence import Divergence, first_divergence, reference_problem, token_at
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "drift"
PROMPTS: Final = (
    "Describe a quiet harbour town at dawn in two sentences.",
    "Name three metals and one use of each.",
)
COMPLETION_PROMPT: Final = "A short guide to baking bread at home. Step 1:"
QUICK_REPLY_TOKENS: Final = 32


class ProbeSet(BaseModel):
    """One taking of the probes: each prompt streamed and whole, in `both_paths` order."""

    records: list[RequestRecord]
    labels: list[str] = Field(
        default_factory=list, description="each record's endpoint, prompt and reply path"
    )
    problem: str | None = Field(
        default=None, description="why this set cannot serve as a reference, if it cannot"
    )


class DriftComparison(BaseModel):
    request: str = Field(description="prompt number and reply path")
    text: Divergence = Field(description="the text compared as determinism compares it")
    logprob_shift_nats: float | None = Field(
        default=None,
        description="the largest change of a chosen token's logprob over the tokens both "
        "replies share (up to a near-tie flip); None without logprobs on both sides",
    )
    shift_token: str | None = Field(default=None, description="the token where it was largest")


def probe_requests(
    context: GuardContext, tokens: int
) -> list[tuple[str, ChatRequest | CompletionRequest]]:
    """The probes with their labels: each chat prompt streamed and whole, then the completions
    prompt streamed and whole."""
    chat = both_paths(
        [
            context.chat(prompt, max_tokens=tokens, logprobs=defaults.CHECK_TOP_LOGPROBS)
            for prompt in PROMPTS
        ]
    )
    completion = CompletionRequest(
        model=context.model,
        prompt=COMPLETION_PROMPT,
        max_tokens=tokens,
        temperature=0.0,
        logprobs=defaults.CHECK_TOP_LOGPROBS,
    )
    probes: list[tuple[str, ChatRequest | CompletionRequest]] = [
        (f"chat {path_label(index)}", request) for index, request in enumerate(chat)
    ]
    for stream in (True, False):
        label = f"completions {'streamed' if stream else 'non-streamed'}"
        probes.append((label, completion.model_copy(update={"stream": stream})))
    return probes


async def take_probes(context: GuardContext) -> ProbeSet:
    """The probes, sent alone and in order: once to warm the cache, once to keep."""
    tokens = QUICK_REPLY_TOKENS if context.settings.quick else defaults.CHECK_REPLY_TOKENS
    probes = probe_requests(context, tokens)
    for _, request in probes:
        await context.send(request)
    records = [await context.send(request) for _, request in probes]
    return ProbeSet(
        records=records,
        labels=[label for label, _ in probes],
        problem=reference_problem(records, "drift probe"),
    )


async def drift_opening(context: GuardContext) -> None:
    """The first set, kept in the context for the guard (and the soak) to compare with."""
    context.openings[NAME] = await take_probes(context)


def logprob_shift(
    reference: RequestRecord, candidate: RequestRecord, up_to_token: int | None = None
) -> tuple[float, str] | None:
    """The largest |change| of a chosen token's logprob, over the tokens both replies share in
    the same place (the first `up_to_token` when the texts part there); None when no token has
    a logprob on both sides."""
    pairs = list(zip(reference.logprobs, candidate.logprobs, strict=False))[:up_to_token]
    shifts = [
        (abs(b.logprob - a.logprob), a.token)
        for a, b in pairs
        if a.token == b.token and a.logprob is not None and b.logprob is not None
    ]
    return max(shifts, key=lambda shift: shift[0]) if shifts else None


def compare_sets(first: ProbeSet, late: ProbeSet) -> list[DriftComparison]:
    """Each late reply against the same prompt on the same path in the first set."""
    comparisons = []
    for index, (a, b) in enumerate(zip(first.records, late.records, strict=True)):
        text = first_divergence(a, b)
        up_to = None if text.char_offset is None else token_at(a, text.char_offset)
        shift = logprob_shift(a, b, up_to)
        label = first.labels[index] if index < len(first.labels) else path_label(index)
        comparisons.append(
            DriftComparison(
                request=label,
                text=text,
                logprob_shift_nats=None if shift is None else round(shift[0], 4),
                shift_token=None if shift is None else shift[1],
            )
        )
    return comparisons


def drift_verdict(
    first: ProbeSet,
    late: ProbeSet,
    tolerance_nats: float = defaults.CHECK_DRIFT_LOGPROB_NATS,
) -> GuardResult:
    """FAIL on a text defect, or a shared token whose logprob moved more than the tolerance."""
    for name, probes in (("first", first), ("late", late)):
        if probes.problem:
            return failed(NAME, f"the {name} probe set is unusable: {probes.problem}")
    comparisons = compare_sets(first, late)
    details = {
        "tolerance_nats": tolerance_nats,
        "comparisons": [c.model_dump(exclude_defaults=True) for c in comparisons],
    }
    shifts = [c.logprob_shift_nats for c in comparisons if c.logprob_shift_nats is not None]
    if not shifts:
        return failed(
            NAME,
            "the server returned no logprobs on the drift probes — the guard needs `logprobs`",
            **details,
        )
    near_ties = sum(c.text.kind == "near_tie" for c in comparisons)
    summary = (
        f"{len(comparisons)} late replies vs the first (chat and completions, each prompt "
        f"streamed and non-streamed): {near_ties} near-tie flips, largest logprob change "
        f"{max(shifts):.4f} nats (tolerance {tolerance_nats})"
    )
    for c in comparisons:
        if c.text.kind == "defect":
            return failed(
                NAME,
                f"{summary}; {c.request} changed at char {c.text.char_offset}: "
                f"{c.text.reference_excerpt!r} → {c.text.candidate_excerpt!r}",
                **details,
            )
    for c in comparisons:
        if c.logprob_shift_nats is not None and c.logprob_shift_nats > tolerance_nats:
            return failed(
                NAME,
                f"{summary}; {c.request}: same text, but the logprob of {c.shift_token!r} "
                f"moved {c.logprob_shift_nats:.4f} nats",
                **details,
            )
    return passed(NAME, summary, **details)


async def drift_guard(context: GuardContext) -> GuardResult:
    first = context.openings.get(NAME)
    if isinstance(first, str):  # the opening raised
        return failed(NAME, first)
    if first is None:  # run without the battery's opening: the first set is taken now
        first = await take_probes(context)
        context.openings[NAME] = first
    return drift_verdict(first, await take_probes(context))
