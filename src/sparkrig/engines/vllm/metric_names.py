"""vLLM's /metrics names (vllm: prefix), V1 engine.

Checked against vLLM 0.26.0: its source (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/
metrics.py) and its own /metrics, captured idle, after a run and under ngram speculation
(tests/fixtures/vllm/), and against a later build's capture (tests/fixtures/vllm_metrics.txt).
The wheels of 0.26.0, 0.29.0, 0.30.0 and 0.33.0 name no `gpu_cache_usage_perc` and no
`gpu_prefix_cache_*` in vllm/v1/metrics (the names of V0 engines, gone before those releases), so
no fallback names are kept. vLLM has no counter of decode
steps; under speculative decoding `spec_decode_num_drafts` counts verify steps that carried a
draft (an ngram drafter makes none when no n-gram matches).
"""

from sparkrig.engines.metric_map import EngineMetricMap, MetricSource, Quantity

PREFIX = "vllm:"

VLLM_METRICS: EngineMetricMap = {
    Quantity.PROMPT_TOKENS: MetricSource(kind="counter", names=("vllm:prompt_tokens_total",)),
    Quantity.GENERATED_TOKENS: MetricSource(
        kind="counter", names=("vllm:generation_tokens_total",)
    ),
    Quantity.REQUESTS_RUNNING: MetricSource(kind="gauge", names=("vllm:num_requests_running",)),
    Quantity.REQUESTS_WAITING: MetricSource(kind="gauge", names=("vllm:num_requests_waiting",)),
    # a fraction in [0, 1] despite the name
    Quantity.KV_CACHE_USAGE: MetricSource(kind="gauge", names=("vllm:kv_cache_usage_perc",)),
    Quantity.PREFIX_CACHE_QUERIES: MetricSource(
        kind="counter", names=("vllm:prefix_cache_queries_total",)
    ),
    Quantity.PREFIX_CACHE_HITS: MetricSource(
        kind="counter", names=("vllm:prefix_cache_hits_total",)
    ),
    Quantity.SPEC_DRAFTS: MetricSource(
        kind="counter", names=("vllm:spec_decode_num_drafts_total",)
    ),
    Quantity.SPEC_DRAFT_TOKENS: MetricSource(
        kind="counter", names=("vllm:spec_decode_num_draft_tokens_total",)
    ),
    Quantity.SPEC_ACCEPTED_TOKENS: MetricSource(
        kind="counter", names=("vllm:spec_decode_num_accepted_tokens_total",)
    ),
    Quantity.SPEC_ACCEPTED_PER_POSITION: MetricSource(
        kind="counter",
        names=("vllm:spec_decode_num_accepted_tokens_per_pos_total",),
        per_label="position",
    ),
}
