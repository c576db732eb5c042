"""Guard 5, needle ladder: a code planted at depths 0.1/0.5/0.9 of prompts of rising length
(lengths from /tokenize), up to a cap (32K, or the server's context per request). Only the
answer counts: a code found only in the reasoning is a miss, and the report says where it was.
Scored against the baseline: a cell found there and missed now fails (research notes §3: ARLE's
needle gate judges content only; MIA's sweep plants at 0.1/0.5/0.9). Then three different codes in
one prompt, one door at a time: the port's battery ended its needle ladder in a three-needle probe
(docs/field-notes.md#needle-ladder), since keeping several facts apart at once is harder than
finding one. A door is found when its code, and no other door's, is in the answer. The prompt is
CHECK_THREE_NEEDLE_TOKENS long, and as long as the ladder's longest too when that is longer: asked
for all three at once at 8,032 tokens on vLLM, the bundled model found none, so the baseline held
nothing for the cells to be judged by."""

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
ASK_DOOR: Final = "What is the access code of the {door} door? Answer with the number only."
THREE_ANSWER_TOKENS: Final = 20  # "The access code of the red door is 415263" is 15
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
    """Doubling lengths from CHECK_NEEDLE_FIRST_TOKENS, then the cap; a doubling rung within
    CHECK_NEEDLE_MIN_STEP of the cap is left out (2,048 beside 2,112 tells nothing the cap does
    not, and costs three long prefills)."""
    lengths, length = [], defaults.CHECK_NEEDLE_FIRST_TOKENS
    while length < cap:
        lengths.append(length)
        length *= 2
    if lengths and cap < lengths[-1] * defaults.CHECK_NEEDLE_MIN_STEP:
        lengths.pop()
    return [*lengths, cap]


def three_needle_lengths(cap: int) -> list[int]:
    """The three-needle prompt's lengths: CHECK_THREE_NEEDLE_TOKENS, and the ladder's longest
    (less the room three needles take) when that is longer; one length when they meet."""
    longest = cap - THREE_EXTRA_TOKENS
    return sorted({min(defaults.CHECK_THREE_NEEDLE_TOKENS, longest), longest})


def where_found(content: str, reasoning: str, code: str = CODE) -> str:
    if code in content:
        return "content"
    return "reasoning only" if code in reasoning else "nowhere"


def door_found(content: str, reasoning: str, door: str) -> str:
    """Where the door's code is, or that the answer holds another door's code (a fact not kept
    apart from the others is not found)."""
    others = [code for other, code in THREE_NEEDLES if other != door]
    if any(code in content for code in others):
        return "another door's code"
    return where_found(content, reasoning, dict(THREE_NEEDLES)[door])


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
    for three_length in three_needle_lengths(cap):
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
    """One haystack of `length` tokens holding all three codes, asked for one door at a time
    (the same prompt but its last line, so the server's prefix cache serves the second and
    third): a cell per door, found or not."""
    haystack, _ = await text_of_tokens(counter, length, lambda i: filler_sentence(7, i))
    prompt = three_needle_prompt(haystack.split(". "))
    for (door, _code), depth in zip(THREE_NEEDLES, defaults.CHECK_NEEDLE_DEPTHS, strict=True):
        ask = ASK_DOOR.format(door=door)
        record = await context.send(
            context.chat(f"{prompt}\n\n{ask}", max_tokens=THREE_ANSWER_TOKENS)
        )
        if record.error is not None:
            return f"three needles at {length} tokens, {door} door: {record.error.message}"
        where = door_found(record.content, record.reasoning, door)
        cells[f"three@{length}@{depth}"] = {
            "found": where == "content",
            "where": where,
            "door": door,
            "prompt_tokens": record.usage.prompt_tokens if record.usage else None,
            "reply": record.content[:80],
        }
    return None
