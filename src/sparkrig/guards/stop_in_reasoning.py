"""Guard 7, stop strings in reasoning: a stop string that occurs in the chain of thought must
not end the reply before its answer. Stop strings firing inside reasoning gave null content; a
patch keeping them dormant until `</think>` took a reproducer from 43 tokens/null to 344
tokens/correct (docs/field-notes.md#stop-in-reasoning).

The stop string is drawn from the server's own reasoning for the prompt: a word that occurs in
the reasoning and nowhere in the answer, so a correct server's answer is unchanged by it.

Thinking is asked for the model family's way (sparkrig.wire.reasoning_families: DeepSeek's
`chat_template_kwargs.thinking`, Qwen3's `enable_thinking`, gpt-oss's `reasoning_effort`), so a
server whose default is thinking off is still tested; the budget is
defaults.CHECK_THINKING_REPLY_TOKENS, or less when the server's context per request is smaller.
The guard SKIPs when, asked that way, the server gives no reasoning (the model cannot think), and
when the reply without a stop string has no answer either (seen live: SmolLM2 given a `<think>`
it was never trained on wrote `<|im_start|>` and ended), since a stop cannot take away an answer
that never comes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from sparkrig import defaults
from sparkrig.client.records import RequestRecord
from sparkrig.detectors.empty_content import classify_empty_content
from sparkrig.guards.context import GuardContext
from sparkrig.guards.reply_shape import answerless_shape
from sparkrig.guards.server_shape import context_tokens
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped
from sparkrig.wire.reasoning_families import ReasoningFamily, family_of

NAME: Final = "stop_in_reasoning"
PROMPT: Final = "Think it through, then answer: which is heavier, a kilogram of iron or of wool?"
PROMPT_ALLOWANCE: Final = 64  # tokens for the prompt and the template within a small context
_WORD = re.compile(r"[A-Za-z]{4,}")
# a special token or tag written out as text (`<|im_start|>`, `<｜User｜>`, `</think>`): its
# name is no word of the reasoning (seen live: "start" drawn from `<|im_start|>`)
_MARKUP = re.compile(r"<\|[^<>|]*\|>|<｜[^<>｜]*｜>|</?[A-Za-z_][^<>\s]*>")


def stop_word_from(reasoning: str, content: str) -> str | None:
    """A word of the reasoning, outside special-token markup, that never occurs in the content."""
    for match in _WORD.finditer(_MARKUP.sub(" ", reasoning)):
        if match.group() not in content:
            return match.group()
    return None


def no_answer_reason(free: RequestRecord) -> str:
    """Why the guard cannot judge a model whose reply without any stop string has no answer."""
    return (
        f"without a stop string the reply has no answer either ({answerless_shape(free)}),"
        " so a stop string cannot be shown to take it away — check that the model answers a "
        "thinking prompt at all (its chat template's think opener, the reasoning parser)"
    )


def reply_budget(server_context: int | None) -> int:
    """The thinking budget, within the server's context per request when that is known."""
    budget = defaults.CHECK_THINKING_REPLY_TOKENS
    if server_context is None:
        return budget
    return max(1, min(budget, server_context - PROMPT_ALLOWANCE))


def no_reasoning_reason(family: ReasoningFamily, asked: dict[str, Any]) -> str:
    how = "asked with no switch (none is known for it)"
    if asked:
        how = f"asked with {json.dumps(asked)}"
    return (
        f"the model cannot think here: {how} (family {family.name}), the server returned no "
        "reasoning (no reasoning template or parser), so stop strings cannot reach a chain of "
        "thought"
    )


async def stop_in_reasoning_guard(context: GuardContext) -> GuardResult:
    family = family_of(context.model)
    asked = family.thinking_on_fields()
    budget = reply_budget(await context_tokens(context))
    free = await context.send(context.chat(PROMPT, max_tokens=budget, extra=asked))
    if free.error is not None:
        return failed(NAME, f"the request failed: {free.error.message}")
    if not free.reasoning.strip():
        return skipped(NAME, no_reasoning_reason(family, asked))
    if not free.content.strip():
        return skipped(NAME, no_answer_reason(free))
    word = stop_word_from(free.reasoning, free.content)
    if word is None:
        return skipped(NAME, "no word of the reasoning is absent from the answer to use as a stop")
    stopped = await context.send(
        context.chat(PROMPT, max_tokens=budget, extra={**asked, "stop": [word]})
    )
    if stopped.error is not None:
        return failed(NAME, f"the request with stop {word!r} failed: {stopped.error.message}")
    details = {
        "family": family.name,
        "asked": asked,
        "max_tokens": budget,
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
            request_had_stops=True,
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
