"""Long prompts of a known token length, built with the server's own `/tokenize`."""

from __future__ import annotations

from collections.abc import Callable

from sparkrig import defaults
from sparkrig.client import EndpointClient
from sparkrig.client.tokenize import server_tokenize
from sparkrig.errors import EndpointError


def filler_sentence(seed: int, index: int) -> str:
    """Plain sentences that never repeat and hold no codes."""
    rooms = ("hall", "kitchen", "attic", "cellar", "study", "porch", "garage", "library")
    colours = ("green", "grey", "amber", "white", "blue", "ochre", "plum", "teal")
    return (
        f"The {rooms[(seed + index) % 8]} lamp {index} of row {seed} was painted "
        f"{colours[(index * 3 + seed) % 8]} in week {(index * 7 + seed) % 52 + 1}."
    )


class TokenCounter:
    """Counts tokens with /tokenize, or estimates (and says so) when the server has none."""

    def __init__(self, client: EndpointClient, model: str) -> None:
        self.client = client
        self.model = model
        self.estimated = False

    async def count(self, text: str) -> int:
        if not self.estimated:
            try:
                return len(await server_tokenize(self.client, self.model, text))
            except EndpointError:
                self.estimated = True
        return max(1, len(text) // defaults.BENCH_CHARS_PER_TOKEN_ESTIMATE)


async def text_of_tokens(
    counter: TokenCounter, target: int, sentence: Callable[[int], str]
) -> tuple[str, int]:
    """Whole sentences `sentence(0), sentence(1), ...` up to `target` tokens (not past it), by
    bisection on the sentence count; returns the text and its token count."""
    low, high = 0, max(1, target // 8)
    while await counter.count(" ".join(sentence(i) for i in range(high))) < target:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if await counter.count(" ".join(sentence(i) for i in range(middle))) <= target:
            low = middle
        else:
            high = middle
    text = " ".join(sentence(i) for i in range(low))
    return text, await counter.count(text)
