"""`CheckSettings`, the battery's knobs, declared once: a field's default, bounds and
description are also `sparkrig check`'s option of the same setting (`cli/model_options.py`).
Light on purpose (pydantic and defaults only), so the CLI can bind to it at import."""

from __future__ import annotations

from pydantic import BaseModel, Field

from sparkrig import defaults


class CheckSettings(BaseModel):
    """Knobs of the battery; every default lives in sparkrig.defaults with its reason."""

    quick: bool = Field(default=False, description="reduced battery (guards 1, 2 reduced, 6, 8, 9)")
    kv_block_tokens: int | None = Field(
        default=None,
        ge=defaults.CHECK_MIN_KV_BLOCK_TOKENS,
        description="KV block size in tokens (default: from /metrics, or "
        f"{defaults.CHECK_KV_BLOCK_TOKENS_FALLBACK})",
    )
    kv_blocks_per_document: int = Field(
        default=defaults.CHECK_KV_BLOCKS_PER_DOCUMENT,
        ge=2,
        description="kv_integrity: KV blocks in each document, a fact in each block",
    )
    kv_documents: int = Field(
        default=defaults.CHECK_KV_DOCUMENTS,
        ge=3,
        description="kv_integrity: documents prefilled together (the corruption measured "
        "needed 3 or more; 2 stayed clean)",
    )
    needle_cap_tokens: int = Field(
        default=defaults.CHECK_NEEDLE_CAP_TOKENS,
        ge=defaults.CHECK_MIN_NEEDLE_CAP_TOKENS,
        description="longest needle prompt in tokens (capped by the server's context)",
    )
    concurrency: int = Field(
        default=defaults.CHECK_CONCURRENCY,
        ge=4,
        description="determinism: requests in flight together in its concurrent scenario",
    )
    load_concurrency: int | None = Field(
        default=None,
        ge=2,
        description="load_accuracy's c = N (default: the server's slots from /props, else "
        f"{defaults.CHECK_LOAD_CONCURRENCY_FALLBACK})",
    )
    slots: int | None = Field(
        default=None,
        ge=1,
        description="requests the server decodes at once, for determinism over occupancy "
        f"(default: llama.cpp's /props total_slots, else {defaults.CHECK_SLOTS_FALLBACK})",
    )
