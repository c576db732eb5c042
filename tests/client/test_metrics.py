"""parse_metrics and metrics_delta on real /metrics captures (see tests/fixtures/README.md and
tests/fixtures/vllm/README.md, which list the numbers pinned here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.client.metrics import metrics_delta, parse_metrics
from sparkrig.engines.metric_map import Quantity
from sparkrig.errors import MetricsError

FIXTURES = Path(__file__).parent.parent / "fixtures"
# sparkrig's own vLLM 0.26.0 captures: one plain server idle and after a run, one ngram server
VLLM_IDLE = (FIXTURES / "vllm" / "metrics_idle.txt").read_text()
VLLM_AFTER = (FIXTURES / "vllm" / "metrics_after.txt").read_text()
VLLM_SPEC = (FIXTURES / "vllm" / "metrics_ngram_spec.txt").read_text()
# a third party's capture of a later vLLM (about 0.29) with MTP: kept because none of ours has a
# second version or a model drafter's six draft positions
VLLM_LATER = (FIXTURES / "vllm_metrics.txt").read_text()
LLAMACPP_TEXT = (FIXTURES / "llamacpp_metrics_spec.txt").read_text()
VLLM_LABELS = '{engine="0",model_name="smollm2-135m-instruct"}'
SPEC_QUANTITIES = (
    Quantity.SPEC_DRAFTS,
    Quantity.SPEC_DRAFT_TOKENS,
    Quantity.SPEC_ACCEPTED_TOKENS,
    Quantity.SPEC_ACCEPTED_PER_POSITION,
)
S = 1_000_000_000


def edited(text: str, *replacements: tuple[str, str]) -> str:
    """The text with each `old` (which must occur exactly once) replaced by `new`."""
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


# --- one snapshot -----------------------------------------------------------------------------


def test_vllm_after_a_run_reads_every_canonical_quantity_from_the_capture() -> None:
    snapshot = parse_metrics(VLLM_AFTER, taken_ns=0)

    assert snapshot.engine == "vllm"
    assert snapshot.read(Quantity.PROMPT_TOKENS) == 10_155
    assert snapshot.read(Quantity.GENERATED_TOKENS) == 8_314
    assert snapshot.read(Quantity.PREFIX_CACHE_QUERIES) == 10_155
    assert snapshot.read(Quantity.PREFIX_CACHE_HITS) == 1_024
    assert snapshot.read(Quantity.REQUESTS_RUNNING) == 0.0
    assert snapshot.read(Quantity.REQUESTS_WAITING) == 0.0  # not num_requests_waiting_by_reason
    assert snapshot.read(Quantity.KV_CACHE_USAGE) == 0.0


def test_vllm_without_speculation_has_no_spec_counters_rather_than_zero() -> None:
    for text in (VLLM_IDLE, VLLM_AFTER):
        canonical = parse_metrics(text).canonical()
        assert [canonical[quantity] for quantity in SPEC_QUANTITIES] == [None] * 4


def test_vllm_idle_capture_reads_zero_counters() -> None:
    canonical = parse_metrics(VLLM_IDLE).canonical()

    for quantity in (
        Quantity.PROMPT_TOKENS,
        Quantity.GENERATED_TOKENS,
        Quantity.PREFIX_CACHE_QUERIES,
        Quantity.PREFIX_CACHE_HITS,
        Quantity.REQUESTS_RUNNING,
        Quantity.REQUESTS_WAITING,
        Quantity.KV_CACHE_USAGE,
    ):
        assert canonical[quantity] == 0.0, quantity


def test_vllm_ngram_capture_reads_the_spec_counters_per_draft_position() -> None:
    snapshot = parse_metrics(VLLM_SPEC)

    assert snapshot.read(Quantity.PROMPT_TOKENS) == 1_616
    assert snapshot.read(Quantity.GENERATED_TOKENS) == 4_096
    assert snapshot.read(Quantity.PREFIX_CACHE_HITS) == 1_056
    assert snapshot.read(Quantity.SPEC_DRAFTS) == 856
    assert snapshot.read(Quantity.SPEC_DRAFT_TOKENS) == 3_416  # ngram drafts may be shorter than 4
    assert snapshot.read(Quantity.SPEC_ACCEPTED_TOKENS) == 504
    per_position = snapshot.read(Quantity.SPEC_ACCEPTED_PER_POSITION)
    assert per_position == {"0": 264.0, "1": 104.0, "2": 88.0, "3": 48.0}
    assert isinstance(per_position, dict)
    assert list(per_position) == ["0", "1", "2", "3"]
    assert sum(per_position.values()) == 504


def test_a_later_vllm_with_six_mtp_positions_reads_the_same_way() -> None:
    snapshot = parse_metrics(VLLM_LATER, taken_ns=0)

    assert snapshot.engine == "vllm"
    assert snapshot.read(Quantity.PROMPT_TOKENS) == 3_675_428
    assert snapshot.read(Quantity.GENERATED_TOKENS) == 44_995
    assert snapshot.read(Quantity.PREFIX_CACHE_HITS) == 3_241_216
    assert snapshot.read(Quantity.SPEC_DRAFTS) == 17_807
    assert snapshot.read(Quantity.SPEC_DRAFT_TOKENS) == 106_842
    assert snapshot.read(Quantity.SPEC_ACCEPTED_TOKENS) == 27_189
    assert snapshot.read(Quantity.SPEC_ACCEPTED_PER_POSITION) == {
        "0": 12129.0,
        "1": 7083.0,
        "2": 3978.0,
        "3": 2130.0,
        "4": 1201.0,
        "5": 668.0,
    }


def test_vllm_has_no_decode_step_counter() -> None:
    for text in (VLLM_AFTER, VLLM_SPEC, VLLM_LATER):
        assert parse_metrics(text).canonical()[Quantity.DECODE_STEPS] is None


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


def test_vllm_delta_from_idle_to_after_a_run_counts_the_run() -> None:
    delta = metrics_delta(parse_metrics(VLLM_IDLE, taken_ns=0), parse_metrics(VLLM_AFTER, 5 * S))

    assert delta.engine == "vllm"
    assert delta.elapsed_s == 5.0
    assert not delta.server_restarted
    assert delta.values[Quantity.GENERATED_TOKENS] == 8_314
    assert delta.values[Quantity.PROMPT_TOKENS] == 10_155
    assert delta.values[Quantity.PREFIX_CACHE_QUERIES] == 10_155
    assert delta.values[Quantity.PREFIX_CACHE_HITS] == 1_024
    assert delta.values[Quantity.REQUESTS_RUNNING] == 0.0
    assert [delta.values[quantity] for quantity in SPEC_QUANTITIES] == [None] * 4
    assert delta.values[Quantity.DECODE_STEPS] is None


def test_vllm_delta_keeps_the_later_gauges() -> None:
    busy = edited(
        VLLM_AFTER,
        (
            f"vllm:kv_cache_usage_perc{VLLM_LABELS} 0.0",
            f"vllm:kv_cache_usage_perc{VLLM_LABELS} 0.25",
        ),
        (
            f"vllm:num_requests_running{VLLM_LABELS} 0.0",
            f"vllm:num_requests_running{VLLM_LABELS} 2.0",
        ),
        (
            f"vllm:num_requests_waiting{VLLM_LABELS} 0.0",
            f"vllm:num_requests_waiting{VLLM_LABELS} 3.0",
        ),
    )

    delta = metrics_delta(parse_metrics(VLLM_IDLE), parse_metrics(busy))

    assert delta.values[Quantity.KV_CACHE_USAGE] == 0.25
    assert delta.values[Quantity.REQUESTS_RUNNING] == 2
    assert delta.values[Quantity.REQUESTS_WAITING] == 3


def test_vllm_scraped_from_another_server_process_reads_as_a_restart() -> None:
    """The ngram capture is a second `vllm serve` started after the plain one: its prompt and
    generation counters start again from 0, so they are lower than the plain server's."""
    delta = metrics_delta(parse_metrics(VLLM_AFTER), parse_metrics(VLLM_SPEC))

    assert delta.server_restarted
    assert "vllm:generation_tokens_total" in delta.counters_backwards
    assert "vllm:prompt_tokens_total" in delta.counters_backwards
    assert delta.values[Quantity.GENERATED_TOKENS] is None
    assert delta.values[Quantity.SPEC_DRAFTS] is None  # absent before, and not trusted anyway


def test_vllm_process_started_anew_reads_as_a_restart_though_no_counter_went_back() -> None:
    """From the idle plain server (its vLLM counters all 0) to the ngram server, a new process.
    Only the Python process counters went back, and by luck (32.09 CPU seconds after 33.33);
    with those a little higher, `process_start_time_seconds` alone says another process answers,
    so 4096 is no count of tokens between the scrapes."""
    busier_process = edited(
        VLLM_SPEC,
        ("process_cpu_seconds_total 32.09", "process_cpu_seconds_total 40.0"),
        ('{generation="0"} 14083.0', '{generation="0"} 16000.0'),
        ('{generation="2"} 432.0', '{generation="2"} 500.0'),
    )

    delta = metrics_delta(parse_metrics(VLLM_IDLE), parse_metrics(busier_process))

    assert delta.counters_backwards == []
    assert delta.server_restarted
    assert delta.values[Quantity.GENERATED_TOKENS] is None
    assert delta.values[Quantity.REQUESTS_RUNNING] == 0.0  # gauges still read


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
