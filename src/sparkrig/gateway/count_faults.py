"""Faults in a reply's token counts, not its text: what a server claims it generated."""

from __future__ import annotations

import math
from typing import Any

# llama.cpp's per-reply `timings`: the generated-token count and the rate derived from it
_TIMING_COUNTS = ("predicted_n",)
_TIMING_RATES = ("predicted_per_second",)


def inflate_counts(chunk: dict[str, Any], factor: float) -> bool:
    """inflated-counts (factor above 1) and undercounted-stream (below 1): every completion
    count in a reply body or stream chunk times `factor` (rounded up), in `usage` (vLLM,
    OpenAI; cumulative on every chunk with continuous usage)
    and llama.cpp's `timings`, with totals and rates kept consistent, so the lie agrees with
    itself everywhere but in the text. True when anything changed."""
    changed = False
    usage = chunk.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        claimed = math.ceil(usage["completion_tokens"] * factor)
        if isinstance(usage.get("total_tokens"), int):
            usage["total_tokens"] += claimed - usage["completion_tokens"]
        usage["completion_tokens"] = claimed
        changed = True
    timings = chunk.get("timings")
    if isinstance(timings, dict):
        for key in _TIMING_COUNTS:
            if isinstance(timings.get(key), int):
                timings[key] = math.ceil(timings[key] * factor)
                changed = True
        for key in _TIMING_RATES:
            if isinstance(timings.get(key), int | float):
                timings[key] = timings[key] * factor
                changed = True
    return changed
