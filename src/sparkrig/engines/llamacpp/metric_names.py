"""llama.cpp's /metrics names (llamacpp: prefix), read off the pinned build's live output.

tests/fixtures/llamacpp_metrics_spec.txt is a capture; tests/engines test the map against a live
server too. llama.cpp does not report KV-cache usage.
"""

from sparkrig.engines.metric_map import EngineMetricMap, MetricSource, Quantity

PREFIX = "llamacpp:"

LLAMACPP_METRICS: EngineMetricMap = {
    # prompt_tokens_total excludes tokens reused from the cache; canonical prompt tokens are all
    # prompt tokens of the requests, as vLLM counts them
    Quantity.PROMPT_TOKENS: MetricSource(
        kind="counter",
        names=("llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total"),
    ),
    Quantity.GENERATED_TOKENS: MetricSource(
        kind="counter", names=("llamacpp:tokens_predicted_total",)
    ),
    Quantity.REQUESTS_RUNNING: MetricSource(kind="gauge", names=("llamacpp:requests_processing",)),
    Quantity.REQUESTS_WAITING: MetricSource(kind="gauge", names=("llamacpp:requests_deferred",)),
    Quantity.PREFIX_CACHE_QUERIES: MetricSource(
        kind="counter",
        names=("llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total"),
    ),
    Quantity.PREFIX_CACHE_HITS: MetricSource(
        kind="counter", names=("llamacpp:prompt_tokens_cached_total",)
    ),
    Quantity.SPEC_DRAFTS: MetricSource(
        kind="counter", names=("llamacpp:spec_decode_num_drafts_total",)
    ),
    Quantity.SPEC_DRAFT_TOKENS: MetricSource(
        kind="counter", names=("llamacpp:spec_decode_num_draft_tokens_total",)
    ),
    Quantity.SPEC_ACCEPTED_TOKENS: MetricSource(
        kind="counter", names=("llamacpp:spec_decode_num_accepted_tokens_total",)
    ),
    Quantity.SPEC_ACCEPTED_PER_POSITION: MetricSource(
        kind="counter",
        names=("llamacpp:spec_decode_num_accepted_tokens_per_pos_total",),
        per_label="position",
    ),
    # llama_decode() calls of the target model, speculative verification excluded
    Quantity.DECODE_STEPS: MetricSource(kind="counter", names=("llamacpp:n_decode_total",)),
}
