"""Speculative-decoding accounting from /metrics deltas.

Counting SSE events under speculative decoding measures steps/s, not tokens/s (field notes:
stream-chunks-not-tokens). Tokens per step times steps/s is the decode rate; steps/s stays near
constant whatever the content (field notes: steps-times-accepted),
so acceptance is what moves speed, and steps/s × (k + 1) is the ceiling at full acceptance.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from sparkrig.client.metrics import MetricsDelta, accepted_per_position
from sparkrig.engines.metric_map import Quantity


class SpecAccounting(BaseModel):
    drafts: float = Field(description="verification steps that carried a draft")
    steps: float = Field(
        default=0.0,
        description="decode steps: generated − accepted tokens (each step emits one token of "
        "its own plus the draft tokens it accepted); the drafts where generated is unknown",
    )
    draft_tokens: float
    accepted_tokens: float
    acceptance_rate: float = Field(description="accepted ÷ drafted tokens")
    per_position_rate: list[float] = Field(
        description="accepted at draft position i ÷ drafts, i = 0, 1, …"
    )
    mean_draft_length: float = Field(description="k: drafted tokens per draft")
    accepted_per_draft: float | None = Field(
        default=None,
        description="accepted ÷ drafts (vLLM's mean acceptance length is 1 + this); equal to "
        "accepted_per_step only where every step drafts",
    )
    accepted_per_step: float = Field(description="accepted draft tokens per decode step")
    tokens_per_step: float = Field(description="1 + accepted_per_step: tokens each step emits")
    steps_per_s: float | None = Field(description="decode tok/s ÷ tokens per step")
    ceiling_tps: float | None = Field(description="steps/s × (k + 1): every draft accepted")


def _total(deltas: list[MetricsDelta], quantity: Quantity) -> float | None:
    values = [delta.values.get(quantity) for delta in deltas]
    if not values or any(not isinstance(value, float | int) for value in values):
        return None
    return float(sum(value for value in values if isinstance(value, float | int)))


def spec_accounting(
    deltas: Iterable[MetricsDelta | None], decode_tps: float | None
) -> SpecAccounting | None:
    """Sum the counters over samples; None when the server reports no speculative decoding."""
    usable = [delta for delta in deltas if delta is not None and not delta.server_restarted]
    drafts = _total(usable, Quantity.SPEC_DRAFTS)
    draft_tokens = _total(usable, Quantity.SPEC_DRAFT_TOKENS)
    accepted = _total(usable, Quantity.SPEC_ACCEPTED_TOKENS)
    if not drafts or not draft_tokens or accepted is None:
        return None
    per_position = accepted_per_position(usable)
    # a drafter with nothing to offer (ngram without a match) makes no draft: such steps are
    # in no spec counter, so steps come from the tokens (measured: generated − accepted was 115,
    # 107 and 119 steps where the stream had 115, 107 and 119 chunks; docs/metrics.md)
    generated = _total(usable, Quantity.GENERATED_TOKENS)
    steps = generated - accepted if generated is not None and generated > accepted else drafts
    accepted_per_step = accepted / steps
    tokens_per_step = 1 + accepted_per_step
    mean_draft_length = draft_tokens / drafts
    steps_per_s = decode_tps / tokens_per_step if decode_tps else None
    return SpecAccounting(
        drafts=drafts,
        steps=steps,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        acceptance_rate=accepted / draft_tokens,
        per_position_rate=[count / drafts for count in per_position.values()],
        mean_draft_length=mean_draft_length,
        accepted_per_draft=accepted / drafts,
        accepted_per_step=accepted_per_step,
        tokens_per_step=tokens_per_step,
        steps_per_s=steps_per_s,
        ceiling_tps=steps_per_s * (mean_draft_length + 1) if steps_per_s else None,
    )
