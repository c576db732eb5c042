"""Guard 5, needle ladder: a code planted at depths 0.1/0.5/0.9 of prompts of rising length
(lengths from /tokenize), up to a cap (32K, or the server's context per request). Only the
answer counts: a code found only in the reasoning is a miss, and the report says where it was.
Scored against the baseline: a cell found there and missed now fails (research notes §3: ARLE's
needle gate judges content only; MIA's sweep plants at 0.1/0.5/0.9). At the longest length, three
different codes in one prompt, asked for together: the port's battery ended its needle ladder in
a three-needle probe (docs/field-notes.md#needle-ladder), since keeping several facts apart at
once is harder than finding one."""

from __future__ import annotations

from typing import Any, Final

from sparkrig import defaults
from sparkrig.guards.context import GuardContext
from sparkrig.guards.long_prompts import TokenCounter, filler_sentence, text_of_tokens
from sparkrig.guards.server_shape import context_tokens
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped

NAME: Final = "needle"
CODE: Final = "738291"
NEEDLE: Final = f"The secret access code is {CODE}."
ASK: Final = "What is the secret access code? Answer with the number only."
ANSWER_TOKENS: Final = 16
QUESTION_ALLOWANCE: Final = 64  # tokens for the question, the template and the reply
# three doors, each with its own code, planted at the ladder's depths in one prompt
THREE_NEEDLES: Final = (("red", "415263"), ("blue", "902718"), ("green", "337104"))
ASK_THREE: Final = (
    "What are the access codes of the red, blue and green doors? Answer with the three numbers."
)
THREE_ANSWER_TOKENS: Final = 40
# the three planted sentences (about 12 tokens each), the longer question and the longer reply,
# beyond what QUESTION_ALLOWANCE keeps for one needle: the haystack is this much shorter
THREE_EXTRA_TOKENS: Final = 96


def three_needle_prompt(sentences: list[str]) -> str:
    """The haystack with each door's code at its depth (0.1, 0.5, 0.9), in door order."""
    placed = list(sentences)
    spots = [int(depth * len(sentences)) for depth in defaults.CHECK_NEEDLE_DEPTHS]
    for (door, code), at in sorted(zip(THREE_NEEDLES, spots, strict=True), key=lambda x: -x[1]):
        placed.insert(at, f"The access code of the {door} door is {code}")
    return ". ".join(placed)


def ladder(cap: int) -> list[int]:
    lengths, length = [], defaults.CHECK_NEEDLE_FIRST_TOKENS
    while length < cap:
        lengths.append(length)
        length *= 2
    return [*lengths, cap]


def where_found(content: str, reasoning: str, code: str = CODE) -> str:
    if code in content:
        return "content"
    return "reasoning only" if code in reasoning else "nowhere"


async def needle_guard(context: GuardContext) -> GuardResult:
    server_context = await context_tokens(context)
    cap = context.settings.needle_cap_tokens
    if server_context is not None:
        cap = min(cap, server_context - QUESTION_ALLOWANCE)
    counter = TokenCounter(context.client, context.model)
    cells: dict[str, dict[str, Any]] = {}
    for length in ladder(cap):
        haystack, _ = await text_of_tokens(counter, length, lambda i: filler_sentence(7, i))
        sentences = haystack.split(". ")
        for depth in defaults.CHECK_NEEDLE_DEPTHS:
            at = int(depth * len(sentences))
            prompt = ". ".join([*sentences[:at], NEEDLE.rstrip("."), *sentences[at:]])
            record = await context.send(
                context.chat(f"{prompt}\n\n{ASK}", max_tokens=ANSWER_TOKENS)
            )
            if record.error is not None:
                return failed(NAME, f"{length} tokens, depth {depth}: {record.error.message}")
            cells[f"{length}@{depth}"] = {
                "found": where_found(record.content, record.reasoning) == "content",
                "where": where_found(record.content, record.reasoning),
                "prompt_tokens": record.usage.prompt_tokens if record.usage else None,
                "reply": record.content[:80],
            }
    three_length = cap - THREE_EXTRA_TOKENS
    if (problem := await _three_needles(context, counter, three_length, cells)) is not None:
        return failed(NAME, problem)
    found = sum(cell["found"] for cell in cells.values())
    lengths = "estimated" if counter.estimated else "from /tokenize"
    summary = f"{found}/{len(cells)} found up to {cap} tokens ({lengths})"
    if context.record_baseline:
        context.baseline.scores[NAME] = {key: cell["found"] for key, cell in cells.items()}
        return passed(NAME, f"baseline recorded: {summary}", cells=cells)
    reference = context.baseline.scores.get(NAME)
    if reference is None:
        return skipped(
            NAME,
            f"{summary}, but no baseline to judge against — record one on a "
            "known-good server with --record-baseline",
            cells=cells,
        )
    lost = [key for key, ok in reference.items() if ok and key in cells and not cells[key]["found"]]
    if lost:
        cell = cells[lost[0]]
        return failed(
            NAME,
            f"{len(lost)} cell(s) found in the baseline are missed now, first "
            f"{lost[0]} (length@depth): found {cell['where']}, reply {cell['reply']!r}",
            cells=cells,
        )
    return passed(NAME, f"{summary}; baseline {sum(reference.values())}", cells=cells)


async def _three_needles(
    context: GuardContext, counter: TokenCounter, length: int, cells: dict[str, dict[str, Any]]
) -> str | None:
    """One prompt of `length` tokens holding all three codes: a cell per code found or not."""
    haystack, _ = await text_of_tokens(counter, length, lambda i: filler_sentence(7, i))
    prompt = three_needle_prompt(haystack.split(". "))
    record = await context.send(
        context.chat(f"{prompt}\n\n{ASK_THREE}", max_tokens=THREE_ANSWER_TOKENS)
    )
    if record.error is not None:
        return f"three needles at {length} tokens: {record.error.message}"
    for (door, code), depth in zip(THREE_NEEDLES, defaults.CHECK_NEEDLE_DEPTHS, strict=True):
        where = where_found(record.content, record.reasoning, code)
        cells[f"three@{length}@{depth}"] = {
            "found": where == "content",
            "where": where,
            "door": door,
            "prompt_tokens": record.usage.prompt_tokens if record.usage else None,
            "reply": record.content[:80],
        }
    return None
