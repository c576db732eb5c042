"""Whether a point that claims cold prefill ran cold: the server's own prefix-cache counters over
the point's samples (vLLM's prefix_cache_hits/queries, llama.cpp's prompt_tokens_cached), not
the salting alone. A server without those counters leaves it unverified, and says so: a cold
figure that the cache served is a cached figure (issue 28; RigMark prints "cold cache
UNVERIFIED" for the same reason).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client.metrics import MetricsDelta
from sparkrig.engines.metric_map import Quantity
from sparkrig.outside_numbers import number_or_none

ColdVerdict = Literal["confirmed", "unverified", "not cold"]


class ColdCache(BaseModel):
    verdict: ColdVerdict
    cached_tokens: float | None = Field(default=None, description="prompt tokens from the cache")
    queried_tokens: float | None = Field(default=None, description="prompt tokens looked up")
    requests: int = 0
    note: str = ""


def judge_cold(deltas: Iterable[MetricsDelta | None], requests: int) -> ColdCache:
    """Sum the samples' cache counters; cold is confirmed while the cache served no more than
    BENCH_COLD_CACHE_ALLOWANCE_TOKENS per request (a BOS token, a template's shared head)."""
    cached = queried = 0.0
    for delta in deltas:
        hits = number_or_none(delta.values.get(Quantity.PREFIX_CACHE_HITS)) if delta else None
        asked = number_or_none(delta.values.get(Quantity.PREFIX_CACHE_QUERIES)) if delta else None
        if hits is None or asked is None:
            return ColdCache(
                verdict="unverified",
                requests=requests,
                note="cold cache UNVERIFIED: the server reports no prefix-cache counters in "
                "/metrics, so only the salting says these prompts missed the cache",
            )
        cached, queried = cached + max(hits, 0.0), queried + max(asked, 0.0)
    allowance = defaults.BENCH_COLD_CACHE_ALLOWANCE_TOKENS * max(requests, 1)
    if cached <= allowance:
        return ColdCache(
            verdict="confirmed",
            cached_tokens=cached,
            queried_tokens=queried,
            requests=requests,
            note=f"cold confirmed by the server: {cached:.0f} of {queried:.0f} prompt tokens "
            f"from its cache over {requests} requests",
        )
    share = cached / queried if queried else 1.0
    return ColdCache(
        verdict="not cold",
        cached_tokens=cached,
        queried_tokens=queried,
        requests=requests,
        note=f"NOT cold: the server served {cached:.0f} of {queried:.0f} prompt tokens "
        f"({share:.0%}) from its cache over {requests} requests — this is a cached-prefill "
        "figure; check that the engine honours the salt (vLLM: cache_salt) or disable its "
        "prefix cache for cold runs",
    )
