"""The model's tokenizer holds the tokens its vLLM reasoning parser looks up.

lint cannot see a tokenizer; the parser reads token ids from the model's own vocabulary when
vLLM builds it (src/sparkrig/engines/vllm/think_tokens.py). On the bundled model vLLM 0.26.0
stopped at start with `--reasoning-parser deepseek_r1`: its vocabulary has no `<think>`.
"""

from __future__ import annotations

from sparkrig.doctor.model import NodeCapture, Severity
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.engines.vllm.think_tokens import PARSER_TOKENS

SOURCE = "src/sparkrig/engines/vllm/think_tokens.py (vLLM 0.26.0's reasoning parsers)"
WHAT_HAPPENS: dict[str, tuple[Severity, str]] = {
    "refuses-start": (
        "error",
        'vllm serve stops at start ("could not locate think start/end tokens in the tokenizer")',
    ),
    "fails-thinking-requests": (
        "error",
        "the server starts, and every request that turns thinking on fails",
    ),
    "text-only": (
        "warning",
        "the server starts but finds the tags only as text: the end of "
        "reasoning is not seen by token id (structured output after thinking, "
        "thinking_token_budget)",
    ),
}


def _judged(context: NodeContext) -> bool:
    return context.reasoning_parser is not None


def _unknown_parser(context: NodeContext) -> str | None:
    if context.reasoning_parser in PARSER_TOKENS:
        return None
    return (
        f"sparkrig does not know which tokens --reasoning-parser {context.reasoning_parser} "
        "looks up"
    )


def vocabulary(text: str) -> tuple[set[str], str | None]:
    """The tokens the probe's `has` lines name, and the path it named when there was no
    tokenizer.json."""
    has, missing = set(), None
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "has":
            has.add(rest)
        elif word == "no-tokenizer-json":
            missing = rest
    return has, missing


@node_check(
    "reasoning-parser-tokens",
    summary="the model's tokenizer holds the tokens its --reasoning-parser looks up",
    why="vLLM's reasoning parsers find <think> and </think> (or their family's tags) by token id "
    "in the model's own vocabulary; a template that writes them as text is not enough",
    source=SOURCE,
    needs=("model_vocab",),
    applies=_judged,
    skip_when=_unknown_parser,
)
def reasoning_parser_tokens(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    parser = str(context.reasoning_parser)
    wanted = PARSER_TOKENS[parser]
    has, missing = vocabulary(capture.text("model_vocab") or "")
    if missing is not None:
        return []  # a model id or a tokenizer of another format: nothing here to judge
    absent = [token for token in wanted.tokens if token not in has]
    if not absent:
        return []
    severity, happens = WHAT_HAPPENS[wanted.without]
    return [
        Hit(
            severity,
            f"--reasoning-parser {parser} looks up {' and '.join(wanted.tokens)} in the model's "
            f"vocabulary, and {context.model_dir or 'the model'}/tokenizer.json has no "
            f"{' or '.join(absent)}: {happens}",
            "serve a model whose tokenizer has them (the family this parser is for), or drop "
            "reasoning_parser from [engine]",
        )
    ]
