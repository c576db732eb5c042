"""Prompts for the decode and spec suites: one task per content type. The concurrency suite cuts
prompts of exact token lengths from a filler text instead (bench/suites.py), and the prefill
suite from the bundled corpus or that filler (bench/prefill_text.py), each stream's with its own
salt: identical prompts decode in lockstep and flatter concurrency figures (field notes:
identical-prompts-lockstep), and replayed ones time the prefix cache, not prefill."""

from __future__ import annotations

from sparkrig.client import ChatRequest

# decode suite: one prompt per content type; speculative decoding accepts more on regular text
DECODE_PROMPTS: dict[str, str] = {
    "count": "Count from 1 to 200, separated by commas.",
    "structured": (
        "Write SQL INSERT statements for a table people(id, name, city, age) with 20 rows of "
        "made-up data, one statement per line."
    ),
    "code": "Write a Python function that parses a CSV file and returns the average of a column.",
    "prose": "Write a short story about a lighthouse keeper who finds a message in a bottle.",
}


def chat(model: str, prompt: str, max_tokens: int) -> ChatRequest:
    """A temperature-0 chat request that asks for exactly `max_tokens` where the server allows
    (llama.cpp and vLLM honour ignore_eos), so every sample decodes the same length."""
    return ChatRequest(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0.0,
        extra={"ignore_eos": True},
    )


def filler_text(words: int) -> str:
    """Plain, varied prose to cut prompts from. Content does change prefill cost: a filler of one
    repeated token prefilled 6,866 tok/s at 32K against 5,982 on real source text, because the
    model's per-token table read one hot row (docs/field-notes.md#prefill-filler-content); this
    text varies its tokens, and a rate on it is still a rate on this text, not on code: the
    prefill suite cuts real text, the bundled corpus, unless `--prefill-text filler` asks for
    this one (bench/prefill_text.py)."""
    return " ".join(
        f"Line {i} notes that crate {i * 37 % 1009} holds {i % 13} apples."
        for i in range(words // 8)
    )
