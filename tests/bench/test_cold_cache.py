"""The cold-prefill judge without a server: no counters leave it unverified; hostile counter
values are not trusted (the live cases are in test_bench_live.py)."""

from sparkrig.bench.cold_cache import judge_cold
from sparkrig.client.metrics import MetricsDelta
from sparkrig.engines.metric_map import Quantity


def _delta(hits: object, queries: object) -> MetricsDelta:
    values = {Quantity.PREFIX_CACHE_HITS: hits, Quantity.PREFIX_CACHE_QUERIES: queries}
    return MetricsDelta(engine="x", elapsed_s=1.0, values=values, server_restarted=False)  # type: ignore[arg-type]


def test_a_server_without_cache_counters_leaves_cold_unverified() -> None:
    empty = MetricsDelta(engine="x", elapsed_s=1.0, values={}, server_restarted=False)
    assert judge_cold([empty], 3).verdict == "unverified"
    assert judge_cold([None], 3).verdict == "unverified"


def test_a_bos_token_per_request_is_still_cold_and_a_served_prompt_is_not() -> None:
    assert judge_cold([_delta(2, 2000)], 2).verdict == "confirmed"
    served = judge_cold([_delta(1900, 2000)], 2)
    assert served.verdict == "not cold"
    assert "95%" in served.note


def test_a_negative_counter_delta_counts_as_no_cached_tokens() -> None:
    judged = judge_cold([_delta(-500.0, 100.0)], 1)
    assert judged.verdict == "confirmed"
    assert judged.cached_tokens == 0
