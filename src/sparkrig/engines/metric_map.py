"""Canonical serving quantities, and how each engine names them in its Prometheus /metrics.

A quantity an engine does not expose maps to nothing and reads as None, never 0.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


class Quantity(StrEnum):
    PROMPT_TOKENS = "prompt_tokens"
    GENERATED_TOKENS = "generated_tokens"
    REQUESTS_RUNNING = "requests_running"
    REQUESTS_WAITING = "requests_waiting"
    KV_CACHE_USAGE = "kv_cache_usage"
    PREFIX_CACHE_QUERIES = "prefix_cache_queries"
    PREFIX_CACHE_HITS = "prefix_cache_hits"
    SPEC_DRAFTS = "spec_drafts"
    SPEC_DRAFT_TOKENS = "spec_draft_tokens"
    SPEC_ACCEPTED_TOKENS = "spec_accepted_tokens"
    SPEC_ACCEPTED_PER_POSITION = "spec_accepted_per_position"
    DECODE_STEPS = "decode_steps"


class MetricSource(BaseModel):
    """Where one quantity is read from. Several `names` are summed (llama.cpp splits prompt
    tokens into computed and cached); `alternatives` are tried in order when an engine renamed
    a metric between versions."""

    kind: Literal["counter", "gauge"]
    names: tuple[str, ...]
    alternatives: tuple[tuple[str, ...], ...] = ()
    per_label: str | None = Field(
        default=None, description="keep values apart by this label (e.g. draft position)"
    )
    scale: float = Field(default=1.0, description="multiply to reach the canonical unit")


EngineMetricMap = dict[Quantity, MetricSource]
