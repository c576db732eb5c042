"""The `llama-server` command line for one local serving instance."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from sparkrig import defaults

# Speculative decoding modes of the pinned llama.cpp (common/speculative.cpp). The draft-* modes
# need a draft model; the n-gram modes draft from the context and need none.
SPEC_TYPES_WITH_DRAFT_MODEL = ("draft-simple",)
SPEC_TYPES_NGRAM = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
SPEC_TYPES = SPEC_TYPES_WITH_DRAFT_MODEL + SPEC_TYPES_NGRAM


class SpeculativeOptions(BaseModel):
    """Speculative decoding for llama-server; a real source for spec-decode accounting."""

    spec_type: str = Field(description=f"one of {', '.join(SPEC_TYPES)}")
    draft_model: Path | None = Field(
        default=None, description="draft GGUF for draft-* modes; the served model when omitted"
    )
    draft_max: int = Field(
        default=defaults.LOCAL_SPEC_DRAFT_MAX, ge=1, description="tokens drafted per step"
    )
    synth_rates: list[float] | None = Field(
        default=None,
        description="per-position synthetic acceptance (llama.cpp --spec-synth-rates): a known "
        "acceptance that tests use to prove the accounting",
    )


class LlamaServerSpec(BaseModel):
    """Everything that decides one llama-server's command line."""

    binary: Path
    model: Path
    alias: str = Field(description="model id the server answers with")
    host: str = defaults.LOCAL_HOST
    port: int = Field(ge=1, le=65535, description="port on 127.0.0.1")
    parallel_slots: int = Field(
        default=defaults.LOCAL_PARALLEL_SLOTS,
        ge=1,
        description="parallel slots for continuous batching",
    )
    context_tokens: int = Field(
        default=defaults.LOCAL_CONTEXT_TOKENS,
        ge=defaults.LOCAL_MIN_CONTEXT_TOKENS,
        description="context tokens shared by all slots",
    )
    threads: int = Field(
        default=defaults.LOCAL_THREADS,
        ge=1,
        description="CPU threads (default: all cores but one)",
    )
    speculative: SpeculativeOptions | None = None
    extra_args: list[str] = Field(default_factory=list, description="passed through verbatim")


def llama_server_argv(spec: LlamaServerSpec) -> list[str]:
    argv = [
        str(spec.binary),
        "--model",
        str(spec.model),
        "--alias",
        spec.alias,
        "--host",
        spec.host,
        "--port",
        str(spec.port),
        "--parallel",
        str(spec.parallel_slots),
        "--ctx-size",
        str(spec.context_tokens),
        "--threads",
        str(spec.threads),
        "--cont-batching",
        "--metrics",  # Prometheus /metrics: token counters, spec-decode counters, decode steps
        "--slots",  # /slots: per-slot state for `sparkrig status`
        "--no-webui",
    ]
    if spec.speculative is not None:
        argv += _speculative_args(spec.speculative, spec.model)
    return argv + spec.extra_args


def _speculative_args(options: SpeculativeOptions, served_model: Path) -> list[str]:
    args = ["--spec-type", options.spec_type, "--spec-draft-n-max", str(options.draft_max)]
    if options.spec_type in SPEC_TYPES_WITH_DRAFT_MODEL:
        args += ["--spec-draft-model", str(options.draft_model or served_model)]
    if options.synth_rates:
        args += ["--spec-synth-rates", ",".join(f"{rate:g}" for rate in options.synth_rates)]
    return args
