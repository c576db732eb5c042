"""parse_metrics and metrics_delta on real /metrics captures (see tests/fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.client.metrics import metrics_delta, parse_metrics
from sparkrig.engines.metric_map import Quantity
from sparkrig.errors import MetricsError

FIXTURES = Path(__file__).parent.parent / "fixtures"
VLLM_TEXT = (FIXTURES / "vllm_metrics.txt").read_text()
LLAMACPP_TEXT = (FIXTURES / "llamacpp_metrics_spec.txt").read_text()
VLLM_LABELS = '{engine="0",model_name="deepseek-v4-flash-vision-exp-ablit-dual"}'
S = 1_000_000_000


def edited(text: str, *replacements: tuple[str, str]) -> str:
    """The text with each `old` (which must occur exactly once) replaced by `new`."""
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


# --- one snapshot -----------------------------------------------------------------------------


def test_vllm_capture_reads_canonical_quantities() -> None:
    snapshot = parse_metrics(VLLM_TEXT, taken_ns=0)

    assert snapshot.engine == "vllm"
    assert snapshot.read(Quantity.PROMPT_TOKENS) == 3_675_428
    assert snapshot.read(Quantity.GENERATED_TOKENS) == 44_995
    assert snapshot.read(Quantity.PREFIX_CACHE_HITS) == 3_241_216
    assert snapshot.read(Quantity.SPEC_DRAFTS) == 17_807
    assert snapshot.read(Quantity.SPEC_DRAFT_TOKENS) == 106_842
    assert snapshot.read(Quantity.SPEC_ACCEPTED_TOKENS) == 27_189
    assert snapshot.read(Quantity.KV_CACHE_USAGE) == 0.0
    assert snapshot.read(Quantity.REQUESTS_RUNNING) == 0.0


def test_vllm_accepted_tokens_are_kept_per_draft_position() -> None:
    per_position = parse_metrics(VLLM_TEXT).read(Quantity.SPEC_ACCEPTED_PER_POSITION)

    assert per_position == {
        "0": 12129.0,
        "1": 7083.0,
        "2": 3978.0,
        "3": 2130.0,
        "4": 1201.0,
        "5": 668.0,
    }
    assert isinstance(per_position, dict)
    assert sum(per_position.values()) == 27_189


def test_vllm_has_no_decode_step_counter() -> None:
    assert parse_metrics(VLLM_TEXT).canonical()[Quantity.DECODE_STEPS] is None


def test_llamacpp_capture_reads_canonical_quantities() -> None:
    snapshot = parse_metrics(LLAMACPP_TEXT, taken_ns=0)

    assert snapshot.engine == "llama.cpp"
    assert snapshot.read(Quantity.PROMPT_TOKENS) == 48 + 38  # computed + reused from cache
    assert snapshot.read(Quantity.PREFIX_CACHE_HITS) == 38
    assert snapshot.read(Quantity.GENERATED_TOKENS) == 48
    assert snapshot.read(Quantity.DECODE_STEPS) == 24
    assert snapshot.read(Quantity.SPEC_DRAFTS) == 21
    assert snapshot.read(Quantity.SPEC_DRAFT_TOKENS) == 80
    assert snapshot.read(Quantity.SPEC_ACCEPTED_TOKENS) == 24
    assert snapshot.read(Quantity.SPEC_ACCEPTED_PER_POSITION) == {
        "0": 11.0,
        "1": 6.0,
        "2": 5.0,
        "3": 2.0,
    }


def test_llamacpp_kv_cache_usage_is_not_exposed_rather_than_zero() -> None:
    canonical = parse_metrics(LLAMACPP_TEXT).canonical()

    assert canonical[Quantity.KV_CACHE_USAGE] is None
    assert set(canonical) == set(Quantity)


def test_prometheus_text_of_another_program_names_no_engine() -> None:
    snapshot = parse_metrics("# TYPE up gauge\nup 1\n")

    assert snapshot.engine is None
    assert set(snapshot.canonical().values()) == {None}


@pytest.mark.parametrize(
    "text",
    [
        "this is { not metrics",
        "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body>log in</body></html>\n",
    ],
    ids=["garbage", "html-page"],
)
def test_text_that_is_not_prometheus_raises_an_error_that_says_how_to_fix_it(text: str) -> None:
    with pytest.raises(MetricsError, match=" — ") as caught:
        parse_metrics(text)

    assert "--metrics" in str(caught.value)
    assert repr(text.splitlines()[0][:80]) in str(caught.value)


# --- two snapshots ----------------------------------------------------------------------------


def test_llamacpp_delta_subtracts_counters_and_keeps_later_gauges() -> None:
    later_text = edited(
        LLAMACPP_TEXT,
        ("llamacpp:prompt_tokens_total 48", "llamacpp:prompt_tokens_total 60"),
        ("llamacpp:prompt_tokens_cached_total 38", "llamacpp:prompt_tokens_cached_total 58"),
        ("llamacpp:tokens_predicted_total 48", "llamacpp:tokens_predicted_total 148"),
        ("llamacpp:n_decode_total 24", "llamacpp:n_decode_total 74"),
        ("llamacpp:requests_processing 0", "llamacpp:requests_processing 3"),
        ('{position="0"} 11', '{position="0"} 41'),
        ('{position="1"} 6', '{position="1"} 16'),
    )
    before = parse_metrics(LLAMACPP_TEXT, taken_ns=10 * S)
    after = parse_metrics(later_text, taken_ns=12 * S)

    delta = metrics_delta(before, after)

    assert delta.engine == "llama.cpp"
    assert delta.elapsed_s == 2.0
    assert not delta.server_restarted
    assert delta.values[Quantity.PROMPT_TOKENS] == (60 + 58) - (48 + 38)
    assert delta.values[Quantity.PREFIX_CACHE_HITS] == 20
    assert delta.values[Quantity.GENERATED_TOKENS] == 100
    assert delta.values[Quantity.DECODE_STEPS] == 50
    assert delta.values[Quantity.SPEC_DRAFTS] == 0
    assert delta.values[Quantity.REQUESTS_RUNNING] == 3
    assert delta.values[Quantity.SPEC_ACCEPTED_PER_POSITION] == {
        "0": 30.0,
        "1": 10.0,
        "2": 0.0,
        "3": 0.0,
    }
    assert delta.values[Quantity.KV_CACHE_USAGE] is None


def test_vllm_delta_subtracts_counters_and_keeps_later_gauges() -> None:
    later_text = edited(
        VLLM_TEXT,
        (
            f"vllm:generation_tokens_total{VLLM_LABELS} 44995.0",
            f"vllm:generation_tokens_total{VLLM_LABELS} 45095.0",
        ),
        (
            f"vllm:spec_decode_num_drafts_total{VLLM_LABELS} 17807.0",
            f"vllm:spec_decode_num_drafts_total{VLLM_LABELS} 17847.0",
        ),
        (
            f"vllm:kv_cache_usage_perc{VLLM_LABELS} 0.0",
            f"vllm:kv_cache_usage_perc{VLLM_LABELS} 0.25",
        ),
        (
            f"vllm:num_requests_running{VLLM_LABELS} 0.0",
            f"vllm:num_requests_running{VLLM_LABELS} 2.0",
        ),
    )

    delta = metrics_delta(parse_metrics(VLLM_TEXT, taken_ns=0), parse_metrics(later_text, 5 * S))

    assert delta.engine == "vllm"
    assert delta.elapsed_s == 5.0
    assert not delta.server_restarted
    assert delta.values[Quantity.GENERATED_TOKENS] == 100
    assert delta.values[Quantity.SPEC_DRAFTS] == 40
    assert delta.values[Quantity.PROMPT_TOKENS] == 0
    assert delta.values[Quantity.KV_CACHE_USAGE] == 0.25
    assert delta.values[Quantity.REQUESTS_RUNNING] == 2
    assert delta.values[Quantity.DECODE_STEPS] is None


def test_a_new_draft_position_is_not_a_counter_going_backwards() -> None:
    later_text = LLAMACPP_TEXT + (
        'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="4"} 1\n'
    )

    delta = metrics_delta(parse_metrics(LLAMACPP_TEXT), parse_metrics(later_text))

    assert not delta.server_restarted
    assert delta.values[Quantity.SPEC_ACCEPTED_PER_POSITION] == {
        "0": 0.0,
        "1": 0.0,
        "2": 0.0,
        "3": 0.0,
        "4": 1.0,
    }


def test_counter_going_backwards_marks_a_restart_and_drops_counter_deltas() -> None:
    restarted_text = edited(
        LLAMACPP_TEXT,
        ("llamacpp:tokens_predicted_total 48", "llamacpp:tokens_predicted_total 5"),
        ("llamacpp:requests_processing 0", "llamacpp:requests_processing 1"),
    )

    delta = metrics_delta(parse_metrics(LLAMACPP_TEXT), parse_metrics(restarted_text))

    assert delta.server_restarted
    assert delta.counters_backwards == ["llamacpp:tokens_predicted_total"]
    assert delta.values[Quantity.GENERATED_TOKENS] is None
    assert delta.values[Quantity.PROMPT_TOKENS] is None  # unchanged, but not trusted either
    assert delta.values[Quantity.SPEC_ACCEPTED_PER_POSITION] is None
    assert delta.values[Quantity.REQUESTS_RUNNING] == 1  # gauges still read
