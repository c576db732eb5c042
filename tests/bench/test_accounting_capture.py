"""The real vLLM receipt that re-tokenizing misjudged, re-judged under today's rules.

tests/fixtures/vllm/bench-c1-64.json (vLLM 0.26.0, one H200, SmolLM2-135M bf16): under the old
rules 6 of its 12 points read INVALID "token counts do not hold" because replies vLLM counted
as 128 tokens re-tokenized to 119-124, while /metrics counted every token (8,192 = 64 × 128).
Its samples' own numbers, judged again: no finding, and every such reply kept as a note.
"""

from __future__ import annotations

from pathlib import Path

from sparkrig.bench.accounting import CountVerdict, ReplyCount, judge_counts
from sparkrig.bench.point_result import INVALID_COUNTS, Sample
from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.engines.metric_map import Quantity

CAPTURE = Path(__file__).parents[1] / "fixtures" / "vllm" / "bench-c1-64.json"


def _receipt() -> BenchReceipt:
    return load_receipt(CAPTURE)


def _rejudged(sample: Sample, max_tokens: int) -> CountVerdict:
    replies = [
        ReplyCount(r.completion_tokens, max_tokens, r.finish_reason, r.retokenized_tokens)
        for r in sample.requests
    ]
    generated = sample.metrics.values.get(Quantity.GENERATED_TOKENS) if sample.metrics else None
    assert isinstance(generated, float)  # not vacuous: /metrics judged every sample
    return judge_counts(replies, generated)


def test_the_capture_is_what_the_old_rules_misjudged() -> None:
    receipt = _receipt()
    assert receipt.engine == "vllm"
    assert len(receipt.points) == 12
    invalid = [p for p in receipt.points if p.invalid]
    assert len(invalid) == 6  # the note beside the capture says 7; the receipt holds 6
    assert all(p.invalid_reasons == [INVALID_COUNTS] for p in invalid)
    # a receipt from before the witness and the notes loads with their defaults
    assert all(p.witness is None for p in receipt.points)
    assert all(s.notes == [] for p in receipt.points for s in p.samples)
    # every old finding was the text, none max_tokens or /metrics
    old = [f for p in receipt.points for s in p.samples for f in s.accounting]
    assert old
    assert all("its text re-tokenizes to" in finding for finding in old)


def test_re_judged_no_point_is_invalid_and_the_text_counts_are_notes() -> None:
    receipt = _receipt()
    max_tokens = receipt.settings.decode_tokens
    verdicts = [
        (point, _rejudged(sample, max_tokens))
        for point in receipt.points
        for sample in point.samples
    ]
    assert [verdict.findings for _, verdict in verdicts if verdict.findings] == []
    noted = {f"{point.suite}/{point.name}" for point, verdict in verdicts if verdict.notes}
    assert noted == {f"{p.suite}/{p.name}" for p in receipt.points if p.invalid}
    notes = [note for _, verdict in verdicts for note in verdict.notes]
    assert len(notes) == sum(len(s.accounting) for p in receipt.points for s in p.samples)
    assert (
        "request 2 of 4: re-tokenized: the server claimed 128 completion tokens, its text "
        "re-tokenizes to 119 (a note, not a count check)"
    ) in notes
    for note in notes:
        assert "claimed 128 completion tokens" in note
        assert "re-tokenizes to 1" in note  # both numbers, the text's 119-124


def test_every_reply_ran_to_max_tokens_and_metrics_counted_them_all() -> None:
    """The witnesses the new rules rely on hold exactly in the capture."""
    receipt = _receipt()
    for point in receipt.points:
        for sample in point.samples:
            claimed = [r.completion_tokens for r in sample.requests]
            assert claimed == [receipt.settings.decode_tokens] * len(claimed)
            assert {r.finish_reason for r in sample.requests} == {"length"}
            assert sample.metrics is not None
            assert sample.metrics.values[Quantity.GENERATED_TOKENS] == sum(claimed)  # type: ignore[operator]
