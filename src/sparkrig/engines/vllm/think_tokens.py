"""The vocabulary tokens each vLLM `--reasoning-parser` looks up in the model's tokenizer, and
what vLLM does when they are not there.

Read from vLLM 0.26.0's own source (its `vllm.reasoning` and `vllm.parser` packages); a
parser not named here is not judged. Seen live: on the bundled model, whose vocabulary has
neither `<think>` nor `</think>`, `--reasoning-parser deepseek_r1` stopped vLLM 0.26.0 at start
with "could not locate think start/end tokens in the tokenizer"
(benchmarks/results/vllm-h200/2026-12-05/think). A chat template that writes the tags as text
does not help: the parsers look up token ids.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Without = Literal["refuses-start", "fails-thinking-requests", "text-only"]

THINK = ("<think>", "</think>")


class ParserTokens(NamedTuple):
    tokens: tuple[str, ...]
    without: Without
    """refuses-start: the parser raises when the engine builds it (vllm serve exits);
    fails-thinking-requests: the server starts (its parser picks a sub-parser per request) and
    every request that turns thinking on fails; text-only: the server starts and finds the tags
    only as text, so nothing that reads token ids (the end of reasoning for structured output,
    thinking_token_budget) sees them"""


PARSER_TOKENS: dict[str, ParserTokens] = {
    # BaseThinkingReasoningParser: vocab.get(start), vocab.get(end), RuntimeError if either is None
    "deepseek_r1": ParserTokens(THINK, "refuses-start"),
    "ernie45": ParserTokens(THINK, "refuses-start"),
    "step3p5": ParserTokens(THINK, "refuses-start"),
    "minimax_m3": ParserTokens(("<mm:think>", "</mm:think>"), "refuses-start"),
    "mistral": ParserTokens(("[THINK]", "[/THINK]"), "refuses-start"),
    # Step3ReasoningParser: the end token only, RuntimeError if it is missing
    "step3": ParserTokens(("</think>",), "refuses-start"),
    # DeepSeekV3ReasoningParser (and the two built on it): deepseek_r1's parser per request with
    # thinking on, the identity parser otherwise
    "deepseek_v3": ParserTokens(THINK, "fails-thinking-requests"),
    "holo2": ParserTokens(THINK, "fails-thinking-requests"),
    "poolside_v1": ParserTokens(THINK, "fails-thinking-requests"),
    # the parser engine: token_id_terminals looked up with vocab.get, None when missing
    "deepseek_v4": ParserTokens(THINK, "text-only"),
    "qwen3": ParserTokens(THINK, "text-only"),
    "glm45": ParserTokens(THINK, "text-only"),
    "glm47": ParserTokens(THINK, "text-only"),
    "minimax_m2": ParserTokens(THINK, "text-only"),
}

ALL_TOKENS: tuple[str, ...] = tuple(sorted({t for p in PARSER_TOKENS.values() for t in p.tokens}))
