"""Separate a model's reasoning from its answer when both arrive in `content`.

Servers report reasoning in `reasoning_content` (llama.cpp, older vLLM), `reasoning` (newer vLLM)
or leave `<think>…</think>` inside the content; the last case is split here.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

ReasoningKey = Literal["reasoning_content", "reasoning"]
# the keys servers put reasoning under, in the order a reader takes them
REASONING_KEYS: tuple[ReasoningKey, ...] = ("reasoning_content", "reasoning")
OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


class ThinkSplit(NamedTuple):
    reasoning: str
    content: str
    content_start: int
    """Offset in the raw text where the answer begins (0 when there is no reasoning block)."""
    found: bool


def split_think_tags(text: str) -> ThinkSplit:
    """Split raw content into reasoning and answer.

    `<think>r</think>a` gives (r, a). A lone `</think>` (the chat template opened the block in
    the prompt) makes everything before it reasoning. An unclosed `<think>` makes the rest
    reasoning: the model never answered.
    """
    open_at = text.find(OPEN_TAG)
    close_at = text.find(CLOSE_TAG)
    if open_at == -1 and close_at == -1:
        return ThinkSplit("", text, 0, False)
    if open_at != -1 and (close_at == -1 or open_at < close_at):
        before = text[:open_at]
        inner_start = open_at + len(OPEN_TAG)
        if close_at == -1:
            return ThinkSplit(text[inner_start:].strip(), before.strip(), len(text), True)
        answer_start = close_at + len(CLOSE_TAG)
        return ThinkSplit(
            text[inner_start:close_at].strip(),
            (before + text[answer_start:]).strip(),
            answer_start,
            True,
        )
    answer_start = close_at + len(CLOSE_TAG)
    return ThinkSplit(text[:close_at].strip(), text[answer_start:].strip(), answer_start, True)
