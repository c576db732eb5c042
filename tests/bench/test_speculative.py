"""spec_accounting on the counters of a real vLLM 0.26.0 ngram server (tests/fixtures/vllm/).

A fresh server's counters start at 0, so what one scrape holds is the delta since start-up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.bench.speculative import spec_accounting
from sparkrig.client.metrics import MetricsDelta, parse_metrics

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
