"""`BenchSettings`, every knob of a bench run, declared once: each field's default, bounds and
description are also `sparkrig bench`'s option of the same setting (`cli/model_options.py`).
Light on purpose (pydantic and defaults only), so the CLI can bind to it at import."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.bench.arrival_spec import Arrivals
from sparkrig.bench.slo import Slo

PrefillTextKind = Literal["corpus", "filler"]


class BenchSettings(BaseModel):
    precision: float = Field(
        default=defaults.BENCH_PRECISION,
        gt=0,
        lt=1,
        description="stop a point when the 95% half-width is within this share of the mean",
    )
    min_samples: int = Field(
        default=defaults.BENCH_MIN_SAMPLES,
        ge=2,
        description="samples a point takes before it looks at its interval at all",
    )
    max_samples: int = Field(
        default=defaults.BENCH_MAX_SAMPLES,
        ge=defaults.BENCH_MIN_SAMPLES_CAP,
        description="samples per point in each round at most",
    )
    precision_checks: list[int] = Field(
        default_factory=lambda: list(defaults.BENCH_PRECISION_CHECKS),
        description="the only sample counts (past min_samples) at which a point may stop on "
        "precision, declared in advance; the cap is the last look",
    )
    warmup_requests: int = Field(
        default=defaults.BENCH_WARMUP_REQUESTS,
        ge=0,
        description="warm-ups before a point's samples, each one sample's requests, in the "
        "first round (every round where the warm-up fills the prefix cache on purpose); their "
        "values are kept apart, never part of the figure",
    )
    warmup_steady: bool = Field(
        default=False,
        description="before the first point, warm the engine with "
        f"{defaults.BENCH_STEADY_WARMUP_TOKENS}-token generations until two in a row decode "
        f"within {defaults.BENCH_STEADY_BAND:.0%} of each other (a fresh engine ran ~30% slower "
        "until 500–700-token generations: docs/field-notes.md#warmup-penalty); recorded",
    )
    steady_warmup_tokens: int = Field(
        default=defaults.BENCH_STEADY_WARMUP_TOKENS,
        ge=defaults.BENCH_MIN_DECODE_TOKENS,
        le=defaults.BENCH_MAX_DECODE_TOKENS,
        description="tokens per --warmup-steady generation",
    )
    decode_tokens: int = Field(
        default=defaults.BENCH_DECODE_TOKENS,
        ge=defaults.BENCH_MIN_DECODE_TOKENS,
        le=defaults.BENCH_MAX_DECODE_TOKENS,
        description="tokens generated per request",
    )
    concurrency: list[int] = Field(
        default_factory=lambda: list(defaults.BENCH_CONCURRENCY_LADDER),
        description="concurrency ladder",
    )
    prefill_depths: list[int] = Field(
        default_factory=lambda: list(defaults.BENCH_PREFILL_DEPTHS),
        description="prompt lengths in tokens for the prefill suite",
    )
    prefill_text: PrefillTextKind = Field(
        default="corpus",
        description="prefill suite: the text its prompts are cut from, at exact depths through "
        "the server's /tokenize: corpus (sparkrig's own code and docs, bundled) or filler (a "
        "generated template line); a server without /tokenize gets the filler at estimated "
        "lengths, and the receipt says so (docs/metrics.md#prefill-text)",
    )
    prompt_tokens: int = Field(
        default=defaults.BENCH_CONCURRENCY_PROMPT_TOKENS,
        ge=defaults.BENCH_SALT_TOKENS + 1,
        description="concurrency suite: prompt length in tokens, a fresh salt per stream and "
        "sample included",
    )
    cached_replays: bool = Field(
        default=True,
        description="concurrency suite: also replay the same prompts (prefix cache), as "
        "separate points named 'cached'",
    )
    rounds: int = Field(
        default=defaults.BENCH_ROUNDS,
        ge=1,
        description="passes over every point, each taking min_samples to max_samples samples; "
        "compare judges by the spread between rounds, which carries the drift of a shared "
        "machine (1: samples only, docs/metrics.md)",
    )
    client_processes: int | None = Field(
        default=None,
        ge=1,
        description="processes that send a sample's streams (default: one per "
        f"{defaults.BENCH_CLIENT_STREAMS_PER_PROCESS} streams, at most one per core); 1 sends "
        "all from this process, N always splits over N",
    )
    max_error_rate: float = Field(
        default=defaults.BENCH_MAX_ERROR_RATE,
        ge=0,
        le=1,
        description="a point whose failed requests exceed this share of those sent is INVALID, "
        "and bench fails when no valid point remains (0.01: one in a hundred)",
    )
    slo: Slo | None = Field(
        default=None,
        description="a latency objective, every term to hold, e.g. ttft_p99=2s,tpot_p99=50ms "
        "(metrics ttft, tpot or itl, e2e; percentiles p50, p90, p95, p99; limits in s or ms): "
        "each point then reports its goodput, the requests meeting it per second "
        "(docs/metrics.md#goodput)",
    )
    find_max_load: bool = Field(
        default=False,
        description="instead of the suites, search the concurrency between the lowest and the "
        "highest --concurrency level for the highest that meets --slo: closed loop, cold "
        "prompts, bisection, each probe one point of repeated samples, stopping at adjacent "
        "levels (docs/metrics.md#max-load)",
    )
    arrivals: Arrivals | None = Field(
        default=None,
        description="concurrency suite as an open loop: poisson:RATE[:SEED] sends each "
        "sample's requests (as many as the ladder level) at Poisson times of RATE requests/s, "
        "seeded, so reproducible; staggered:GAP_S sends them one every GAP_S seconds "
        "(docs/metrics.md#arrivals); default: all at once",
    )
    conversations: int = Field(
        default=defaults.BENCH_MULTITURN_CONVERSATIONS,
        ge=1,
        le=defaults.BENCH_MAX_CONCURRENCY,
        description="multiturn suite: conversations per sample, each salted at its start",
    )
    turns: int = Field(
        default=defaults.BENCH_MULTITURN_TURNS,
        ge=2,
        le=defaults.BENCH_MULTITURN_MAX_TURNS,
        description="multiturn suite: turns per conversation (tool call, tool result, code, "
        "prose, again); each re-sends the conversation so far with the model's replies",
    )
    parallel_conversations: int | None = Field(
        default=None,
        ge=1,
        description="multiturn suite: conversations in flight at once (default: all of them); "
        "the turns of one always go in order",
    )
    opening_tokens: int = Field(
        default=defaults.BENCH_MULTITURN_OPENING_TOKENS,
        ge=defaults.BENCH_MULTITURN_SENTENCE_TOKENS,
        le=defaults.BENCH_MULTITURN_MAX_OPENING_TOKENS,
        description="multiturn suite: about how many tokens of document each conversation "
        "opens with, in its system message after the salt",
    )
