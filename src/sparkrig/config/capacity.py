"""KV pool arithmetic of a serving profile (docs/field-notes.md#kv-pool-shared): the pool is
shared and allocated on demand, so the constraint is sum(live tokens) ≤ pool — not
max_num_seqs × max_model_len. Pure; `sparkrig plan-capacity` prints it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from sparkrig.config.serving import ServingProfile


class CapacityPlan(BaseModel):
    kv_pool_tokens: int | None
    max_model_len: int | None
    max_num_seqs: int | None
    full_length_requests: float | None = Field(
        description="pool / max_model_len: full-length requests that fit at once (vLLM's boot "
        "log 'Maximum concurrency for N tokens per request')"
    )
    tokens_per_sequence_at_max_seqs: int | None = Field(
        description="pool / max_num_seqs: the average a sequence may hold when all are live"
    )
    tokens_per_step: int | None = Field(description="k+1 with speculative decoding, else 1")
    decode_ceiling_tok_s: float | None = Field(
        description="steps/s × (k+1): the single-stream ceiling at 100% acceptance"
    )
    notes: list[str] = Field(default_factory=list)


def plan_capacity(profile: ServingProfile, steps_per_second: float | None = None) -> CapacityPlan:
    pool, length, seqs = profile.kv_pool_tokens, profile.max_model_len, profile.max_num_seqs
    per_step = profile.speculative.num_speculative_tokens + 1 if profile.speculative else 1
    notes = []
    if pool is None:
        notes.append(
            "no kv_pool_tokens: read the pool from the engine's boot log and set "
            "profile.kv_pool_tokens (it varies per boot on unified memory, 11% in one report: "
            "docs/field-notes.md#kv-pool-per-boot)"
        )
    elif length is not None and pool < length:
        notes.append(
            f"the pool cannot hold one {length}-token request — lint rule kv-pool-holds-one-request"
        )
    return CapacityPlan(
        kv_pool_tokens=pool,
        max_model_len=length,
        max_num_seqs=seqs,
        full_length_requests=round(pool / length, 2) if pool and length else None,
        tokens_per_sequence_at_max_seqs=pool // seqs if pool and seqs else None,
        tokens_per_step=per_step,
        decode_ceiling_tok_s=round(steps_per_second * per_step, 2) if steps_per_second else None,
        notes=notes,
    )
