"""Guard 7, stop strings in reasoning: a stop string that occurs in the chain of thought must
not end the reply before its answer. Stop strings firing inside reasoning gave null content; a
patch keeping them dormant until `</think>` took a reproducer from 43 tokens/null to 344
tokens/correct (docs/field-notes.md#stop-in-reasoning).

The stop string is drawn from the server's own reasoning for the prompt: a word that occurs in
the reasoning and nowhere in the answer, so a correct server's answer is unchanged by it.
"""

from __future__ import annotations

import re
from typing import Final

from sparkrig.detectors.empty_content import classify_empty_content
from sparkrig.guards.context import GuardContext
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped

NAME: Final = "stop_in_reasoning"
PROMPT: Final = "Think it through, then answer: which is heavier, a kilogram of iron or of wool?"
REPLY_TOKENS: Final = 96
_WORD = re.compile(r"[A-Za-z]{4,}")


def stop_word_from(reasoning: str, content: str) -> str | None:
    """A word of the reasoning that never occurs in the content."""
    for match in _WORD.finditer(reasoning):
        if match.group() not in content:
            return match.group()
    return None


async def stop_in_reasoning_guard(context: GuardContext) -> GuardResult:
    free = await context.send(context.chat(PROMPT, max_tokens=REPLY_TOKENS))
    if free.error is not None:
        return failed(NAME, f"the request failed: {free.error.message}")
    if not free.reasoning.strip():
        return skipped(
            NAME,
            "the server returned no reasoning for this prompt (no reasoning "
            "template or parser): stop strings cannot reach a chain of thought",
        )
    word = stop_word_from(free.reasoning, free.content)
    if word is None:
        return skipped(NAME, "no word of the reasoning is absent from the answer to use as a stop")
    stopped = await context.send(
        context.chat(PROMPT, max_tokens=REPLY_TOKENS, extra={"stop": [word]})
    )
    if stopped.error is not None:
        return failed(NAME, f"the request with stop {word!r} failed: {stopped.error.message}")
    details = {
        "stop": word,
        "reasoning_free": free.reasoning[:400],
        "content_free": free.content[:400],
        "content_with_stop": stopped.content[:400],
        "finish_reason": stopped.finish_reason,
    }
    if not stopped.content.strip():
        diagnosis = classify_empty_content(
            content=stopped.content,
            reasoning=stopped.reasoning,
            finish_reason=stopped.finish_reason,
            end_marker_seen=False,
            reasoning_key=None,
        )
        return failed(
            NAME,
            f"stop {word!r} (a word of the reasoning) left no answer: {diagnosis.message}",
            **details,
        )
    return passed(
        NAME,
        f"stop {word!r} occurs in the reasoning; the answer still came "
        f"({len(stopped.content)} chars)",
        **details,
    )
