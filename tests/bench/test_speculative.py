"""spec_accounting on the counters of a real vLLM 0.26.0 ngram server (tests/fixtures/vllm/).

A fresh server's counters start at 0, so what one scrape holds is the delta since start-up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.bench.speculative import spec_accounting
from sparkrig.client.metrics import MetricsDelta, parse_metrics
from sparkrig.engines.metric_map import Quantity

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vllm"


def since_start(name: str) -> MetricsDelta:
    snapshot = parse_metrics((FIXTURES / name).read_text())
    return MetricsDelta(
        engine=snapshot.engine, elapsed_s=1.0, values=snapshot.canonical(), server_restarted=False
    )


def test_ngram_counters_give_acceptance_per_position_and_draft_length() -> None:
    accounting = spec_accounting([since_start("metrics_ngram_spec.txt")], decode_tps=None)

    assert accounting is not None
    assert accounting.drafts == 856
    assert accounting.draft_tokens == 3_416
    assert accounting.accepted_tokens == 504
    assert accounting.acceptance_rate == pytest.approx(504 / 3_416)
    assert accounting.per_position_rate == pytest.approx([264 / 856, 104 / 856, 88 / 856, 48 / 856])
    # shorter than num_speculative_tokens = 4: a prompt lookup can match fewer tokens
    assert accounting.mean_draft_length == pytest.approx(3_416 / 856)
    assert accounting.mean_draft_length < 4


def test_a_server_without_speculation_has_no_accounting() -> None:
    assert spec_accounting([since_start("metrics_after.txt")], decode_tps=100.0) is None


def test_ngram_steps_count_the_steps_that_drafted_nothing() -> None:
    """An ngram drafter with no match makes no draft: 856 drafts, but generated − accepted =
    4096 − 504 = 3592 decode steps, within 16 (the 32 requests' prefill iterations, about) of
    vLLM's own engine iteration count in the same capture (3608). Tokens per step counts every
    step: 4096 / 3592 = 1.14, not 1 + 504 / 856 = 1.59, so steps/s is not overstated."""
    text = (FIXTURES / "metrics_ngram_spec.txt").read_text()
    accounting = spec_accounting([since_start("metrics_ngram_spec.txt")], decode_tps=400.0)

    assert accounting is not None
    assert accounting.steps == 4_096 - 504
    iterations = next(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("vllm:iteration_tokens_total_count")
    )
    assert iterations == 3_608
    assert 0 <= iterations - accounting.steps <= 32
    assert accounting.tokens_per_step == pytest.approx(4_096 / 3_592)
    assert accounting.accepted_per_draft == pytest.approx(504 / 856)
    assert accounting.steps_per_s == pytest.approx(400.0 / (4_096 / 3_592))


def test_without_a_generated_count_every_draft_is_a_step() -> None:
    delta = since_start("metrics_ngram_spec.txt")
    values = {k: v for k, v in delta.values.items() if k != Quantity.GENERATED_TOKENS}
    accounting = spec_accounting([delta.model_copy(update={"values": values})], decode_tps=None)

    assert accounting is not None
    assert accounting.steps == 856
    assert accounting.tokens_per_step == pytest.approx(1 + 504 / 856)
