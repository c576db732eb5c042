"""The token-accounting checks as pure functions: each witness fails on a lie and passes the
truth; the re-tokenized text only ever makes a note.

The live proof, the bench against the real llama-server behind a gateway that inflates its
counts, is in tests/bench/test_accounting_live.py; the real vLLM receipt that re-tokenizing
misjudged is re-judged in tests/bench/test_accounting_capture.py.
"""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.bench.accounting import (
    ReplyCount,
    count_tolerance,
    judge_counts,
    logprobs_count_finding,
    metrics_count_finding,
    text_count_note,
    withheld_entries,
)
from sparkrig.client.reply_consistency import max_tokens_finding


def test_the_tolerance_is_a_share_of_the_count_with_a_floor() -> None:
    assert count_tolerance(2) == defaults.BENCH_TOKEN_COUNT_SLACK
    assert count_tolerance(128) == 7  # ceil(0.05 × 128)
    assert count_tolerance(1000) == 50


def test_a_count_within_tolerance_of_the_text_makes_no_note() -> None:
    assert text_count_note(claimed=128, retokenized=128) is None
    assert text_count_note(claimed=128, retokenized=121) is None
    assert text_count_note(claimed=2, retokenized=0) is None


def test_a_count_the_text_does_not_re_tokenize_to_is_a_note_with_both_numbers() -> None:
    note = text_count_note(claimed=128, retokenized=119)
    assert note is not None
    assert "claimed 128" in note
    assert "re-tokenizes to 119" in note
    assert "not a count check" in note
    assert text_count_note(claimed=100, retokenized=128) is not None  # either direction


def test_nothing_to_compare_is_no_finding() -> None:
    assert text_count_note(claimed=None, retokenized=12) is None
    assert text_count_note(claimed=12, retokenized=None) is None
    assert max_tokens_finding(claimed=None, max_tokens=12, finish_reason="length") is None
    assert metrics_count_finding(claimed_total=12, generated=None) is None
    assert logprobs_count_finding(claimed=None, entries=12) is None


def test_logprobs_entries_witness_the_count_exactly() -> None:
    assert logprobs_count_finding(claimed=128, entries=128) is None
    finding = logprobs_count_finding(claimed=40, entries=32)
    assert finding is not None
    assert "claimed 40" in finding
    assert "32 logprobs entries" in finding
    # exact: one token off either way is a count that does not hold
    assert logprobs_count_finding(claimed=129, entries=128) is not None
    assert logprobs_count_finding(claimed=127, entries=128) is not None


def test_an_ascii_reply_run_to_length_withholds_no_entry() -> None:
    assert withheld_entries("Line 1, line 2, line 3", "length") == 0


def test_llama_cpp_withholds_entries_for_multi_byte_characters_and_a_chat_stop_token() -> None:
    """The pinned llama-server, streamed chat, logprobs on (the numbers of a live probe): twenty
    emoji in 32 tokens came with 10 entries; "Say hi." ended on stop at 25 tokens, 24 entries."""
    assert withheld_entries("🌟" * 10, "length") == 30  # 4 bytes each: 3 past the first
    assert withheld_entries("é", "length") == 1
    assert withheld_entries("Hello! How can I help?", "stop") == 1
    assert logprobs_count_finding(claimed=32, entries=10, withheld=30) is None
    assert logprobs_count_finding(claimed=25, entries=24, withheld=1) is None
    # the allowance is a bound, not a tolerance for anything: past it, or over-claimed entries
    finding = logprobs_count_finding(claimed=26, entries=24, withheld=1)
    assert finding is not None
    assert "up to 1 may be withheld for its text" in finding
    assert logprobs_count_finding(claimed=23, entries=24, withheld=1) is not None


def test_a_reply_without_logprobs_witnesses_nothing() -> None:
    """No entries: the server gave no logprobs; the point warns, it is not invalid."""
    assert logprobs_count_finding(claimed=128, entries=0) is None


def test_more_than_max_tokens_is_a_finding() -> None:
    finding = max_tokens_finding(claimed=160, max_tokens=128, finish_reason="length")
    assert finding is not None
    assert "160" in finding
    assert "128" in finding
    assert max_tokens_finding(claimed=128, max_tokens=128, finish_reason="length") is None


def test_running_to_length_short_of_max_tokens_is_a_finding() -> None:
    finding = max_tokens_finding(claimed=100, max_tokens=128, finish_reason="length")
    assert finding is not None
    assert "100" in finding
    assert max_tokens_finding(claimed=100, max_tokens=128, finish_reason="stop") is None


def test_claiming_more_than_metrics_counted_is_a_finding() -> None:
    finding = metrics_count_finding(claimed_total=640, generated=512)
    assert finding is not None
    assert "640" in finding
    assert "512" in finding
    assert metrics_count_finding(claimed_total=512, generated=512) is None
    # more generated than claimed is foreign traffic, which the point discards and retakes
    assert metrics_count_finding(claimed_total=512, generated=600) is None


def test_a_sample_is_judged_on_max_tokens_and_metrics_and_only_noted_on_its_text() -> None:
    replies = [
        ReplyCount(claimed=128, max_tokens=128, finish_reason="length", retokenized=128),
        ReplyCount(claimed=128, max_tokens=128, finish_reason="length", retokenized=119),
    ]
    verdict = judge_counts(replies, generated=256)
    assert verdict.findings == []
    assert verdict.notes == [
        "request 2 of 2: re-tokenized: the server claimed 128 completion tokens, its text "
        "re-tokenizes to 119 (a note, not a count check)"
    ]


def test_an_inflated_sample_breaks_max_tokens_and_metrics_whatever_its_text() -> None:
    inflated = ReplyCount(claimed=40, max_tokens=32, finish_reason="length", retokenized=40)
    verdict = judge_counts([inflated, inflated], generated=64)
    assert verdict.notes == []
    assert len(verdict.findings) == 3
    assert verdict.findings[0].startswith("request 1 of 2: token count: the server claimed 40")
    assert "for max_tokens 32" in verdict.findings[1]
    assert "claimed 80 completion tokens, the server's /metrics counted 64" in verdict.findings[2]


def test_one_reply_is_not_numbered_and_no_metrics_judges_nothing_there() -> None:
    reply = ReplyCount(claimed=30, max_tokens=32, finish_reason="length")
    verdict = judge_counts([reply], generated=None)
    assert verdict.findings == [
        "token count: the reply ran to length at 30 completion tokens, under its max_tokens 32 "
        "— a wrong count, or the context ended the reply (ask for fewer tokens or give the "
        "server more context)"
    ]


def test_a_stream_in_more_events_than_its_claimed_tokens_is_a_finding() -> None:
    short = ReplyCount(claimed=3, max_tokens=8, finish_reason="stop", events=8)
    verdict = judge_counts([short], generated=None)
    assert verdict.findings == [
        "token count: 8 content events carried 3 claimed tokens (at most 7 allowed) — every "
        "event carries at least one token, so the count is short; check the engine's usage "
        "accounting"
    ]
    # a token may come as two events (llama-server: one chunk per message diff)
    split = ReplyCount(claimed=3, max_tokens=8, finish_reason="stop", events=7)
    assert judge_counts([split], generated=None).findings == []
    long = ReplyCount(claimed=200, max_tokens=256, finish_reason="stop", events=210)
    assert judge_counts([long], generated=None).findings == []  # 5% of 200 is 10
    bunched = ReplyCount(claimed=8, max_tokens=8, finish_reason="length", events=3)  # spec decode
    assert judge_counts([bunched], generated=None).findings == []
