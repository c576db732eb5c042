"""Guard 1, exact: count to N and a few fixed-answer questions, scored against the baseline.

A weak model gets some of these wrong; that is recorded in the baseline, and only a probe that
was right there and is wrong now fails the guard. The count is asked twice: in chat, and as a
list to continue on /v1/completions (no template), the endpoint many harnesses use.
"""

from __future__ import annotations

import re
from typing import Final

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest
from sparkrig.guards.context import GuardContext
from sparkrig.guards.identity import kept
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped
from sparkrig.outside_numbers import int_or_none

NAME: Final = "exact"
COUNT_TO: Final = 12
COUNT_REPLY_TOKENS: Final = 128
# (question, the word the answer must contain)
FIXED_ANSWERS: Final = (
    ("What is the capital of France? Answer in one word.", "Paris"),
    ("What is 2 + 2? Answer with the number only.", "4"),
    ("What is 10 + 5? Answer with the number only.", "15"),
    ("What is the opposite of hot? Answer in one word.", "cold"),
)
# the completions count: the prompt starts the list, the reply must carry it on to COUNT_TO
COUNT_COMPLETION_PROMPT: Final = f"The whole numbers from 1 to {COUNT_TO}, in order: 1,"
COUNT_COMPLETION_START: Final = "1,"
_INTEGER = re.compile(r"\d+")


def counts_correctly(text: str, up_to: int) -> bool:
    """1..up_to appear in order among the reply's integers (a list may number its lines)."""
    wanted = 1
    for match in _INTEGER.finditer(text):
        if int_or_none(match.group()) == wanted:  # ASCII digits; 5000 of them do not raise
            wanted += 1
            if wanted > up_to:
                return True
    return False


def contains_answer(text: str, answer: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", text, re.IGNORECASE) is not None


async def exact_guard(context: GuardContext) -> GuardResult:
    top = defaults.CHECK_TOP_LOGPROBS  # for `check --against`: where a later build differs
    prompts = [f"Count from 1 to {COUNT_TO}, separated by commas.", *(q for q, _ in FIXED_ANSWERS)]
    requests: list[ChatRequest | CompletionRequest] = [
        context.chat(prompt, max_tokens=COUNT_REPLY_TOKENS if index == 0 else 24, logprobs=top)
        for index, prompt in enumerate(prompts)
    ]
    prompts.append(COUNT_COMPLETION_PROMPT)
    requests.append(
        CompletionRequest(
            model=context.model,
            prompt=COUNT_COMPLETION_PROMPT,
            max_tokens=COUNT_REPLY_TOKENS // 2,
            temperature=0.0,
            logprobs=top,
        )
    )
    records = [await context.send(request) for request in requests]
    if errors := [r.error for r in records if r.error is not None]:
        return failed(NAME, f"a probe request failed: {errors[0].message}")
    outputs = [kept(NAME, p, q, r) for p, q, r in zip(prompts, requests, records, strict=True)]
    scores = {f"count to {COUNT_TO}": counts_correctly(records[0].content, COUNT_TO)}
    for (question, answer), record in zip(FIXED_ANSWERS, records[1:-1], strict=True):
        scores[question] = contains_answer(record.content, answer)
    scores[f"count to {COUNT_TO} (completions)"] = counts_correctly(
        COUNT_COMPLETION_START + records[-1].content, COUNT_TO
    )
    replies = {name: record.content for name, record in zip(scores, records, strict=True)}
    right = sum(scores.values())
    if context.record_baseline:
        context.baseline.scores[NAME] = {"scores": scores, "replies": replies}
        return passed(
            NAME,
            f"baseline recorded: {right}/{len(scores)} right",
            scores=scores,
            outputs=outputs,
        )
    reference = context.baseline.scores.get(NAME)
    if reference is None:
        return skipped(
            NAME,
            f"{right}/{len(scores)} right, but no baseline to judge against — record one "
            "on a known-good server with --record-baseline",
            scores=scores,
            replies=replies,
            outputs=outputs,
        )
    worse = [name for name, ok in reference["scores"].items() if ok and not scores.get(name)]
    changed = [name for name in scores if reference["replies"].get(name) != replies[name]]
    details = {"scores": scores, "replies": replies, "changed_text": changed, "outputs": outputs}
    if worse:
        first = worse[0]
        return failed(
            NAME,
            f"{len(worse)} probe(s) right in the baseline are wrong now, e.g. {first!r}: "
            f"{replies[first][:60]!r}",
            **details,
        )
    base_right = sum(reference["scores"].values())
    return passed(
        NAME,
        f"{right}/{len(scores)} right (baseline {base_right}); "
        f"{len(changed)} reply text(s) differ from the baseline",
        **details,
    )
