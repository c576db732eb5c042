"""Token accounting: a server's completion counts are checked, never trusted.

A server that reports more tokens than its text holds inflates every tok/s figure, and the
project exists because throughput numbers lie under speculative decoding. Three cross-checks,
each a pure function from numbers to findings (one line each, with both numbers):

- the text: the reply re-tokenized by the server's own `/tokenize` must hold about as many
  tokens as the server claimed (within `count_tolerance`);
- the request: no more than `max_tokens`, and exactly `max_tokens` when the reply ran to
  `length`;
- `/metrics`: the sample's claimed total must not exceed what the server's counter says it
  generated (the other direction, more generated than claimed, is foreign traffic and handled
  by the point as a discarded sample).

The re-tokenization runs after a sample's requests have finished and its /metrics are read, so
its cost is outside the timed window.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

from sparkrig import defaults
from sparkrig.client import EndpointClient, RequestRecord
from sparkrig.client.tokenize import server_tokenize

CountText = Callable[[str], Awaitable[int]]
"""How many tokens a text holds, by the server's own tokenizer."""


def count_tolerance(claimed: int) -> int:
    """Tokens by which a re-tokenized count may differ from the claimed one (docs/metrics.md)."""
    relative = math.ceil(defaults.BENCH_TOKEN_COUNT_TOLERANCE * claimed)
    return max(defaults.BENCH_TOKEN_COUNT_SLACK, relative)


def reply_text(record: RequestRecord) -> str:
    """Everything the server generated as text: reasoning, then content."""
    return record.reasoning + record.content


def text_count_finding(claimed: int | None, retokenized: int | None) -> str | None:
    """A finding when the claimed completion count and the text's own count disagree."""
    if claimed is None or retokenized is None:
        return None
    tolerance = count_tolerance(claimed)
    if abs(claimed - retokenized) <= tolerance:
        return None
    return (
        f"token count: the server claimed {claimed} completion tokens, its text re-tokenizes to "
        f"{retokenized} (tolerance ±{tolerance})"
    )


def max_tokens_finding(
    claimed: int | None, max_tokens: int | None, finish_reason: str | None
) -> str | None:
    """A finding when the claimed count breaks the request's `max_tokens`: more than asked, or
    fewer when the reply says it ran to length."""
    if claimed is None or max_tokens is None:
        return None
    if claimed > max_tokens:
        return (
            f"token count: the server claimed {claimed} completion tokens for max_tokens "
            f"{max_tokens}"
        )
    if finish_reason == "length" and claimed < max_tokens:
        return (
            f"token count: the reply ran to length at {claimed} completion tokens, under its "
            f"max_tokens {max_tokens} — a wrong count, or the context ended the reply (lower "
            "--tokens or give the server more context)"
        )
    return None


def metrics_count_finding(claimed_total: int, generated: float | int | None) -> str | None:
    """A finding when the requests claim more tokens than the server's counter generated."""
    if generated is None:
        return None
    tolerance = count_tolerance(claimed_total)
    if claimed_total - generated <= tolerance:
        return None
    return (
        f"token count: the replies claimed {claimed_total} completion tokens, the server's "
        f"/metrics counted {generated:.0f} generated (tolerance {tolerance})"
    )


def server_text_counter(client: EndpointClient, model: str) -> CountText:
    async def count(text: str) -> int:
        return len(await server_tokenize(client, model, text)) if text else 0

    return count
