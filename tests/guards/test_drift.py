"""The drift guard's pure verdict: late probes against the first set, text then logprobs.

The live proof (FAIL on drift-after, PASS on the clean engine) is in test_fault_matrix.py."""

from __future__ import annotations

from sparkrig.guards.drift import ProbeSet, drift_verdict, logprob_shift
from sparkrig.guards.verdict import GuardResult
from tests.guards.test_guard_parts import _reply, record

Triples = list[tuple[str, float, float]]
FIRST: Triples = [("The", -0.01, -6.0), (" cat", -0.7, -0.9), (" sat", -0.05, -4.0)]


def probes(*replies: Triples, runner_up: str = "~") -> ProbeSet:
    return ProbeSet(records=[record(reply, runner_up) for reply in replies])


def shifted(reply: Triples, nats: float) -> Triples:
    return [(token, lp + nats, runner + nats) for token, lp, runner in reply]


def verdict(first: ProbeSet, late: ProbeSet) -> GuardResult:
    return drift_verdict(first, late, tolerance_nats=0.1)


def test_the_same_replies_late_pass() -> None:
    result = verdict(probes(FIRST, FIRST), probes(FIRST, FIRST))
    assert result.verdict == "PASS", result.evidence
    assert "largest logprob change 0.0000" in result.evidence


def test_logprobs_that_moved_with_the_text_unchanged_fail() -> None:
    """drift-after's shape: every logprob 0.3 nats lower, tokens and margins the same."""
    result = verdict(probes(FIRST, FIRST), probes(FIRST, shifted(FIRST, -0.3)))
    assert result.verdict == "FAIL"
    assert "prompt 1 non-streamed: same text" in result.evidence
    assert "moved 0.3000 nats" in result.evidence


def test_a_change_inside_the_tolerance_passes() -> None:
    result = verdict(probes(FIRST), probes(shifted(FIRST, -0.05)))
    assert result.verdict == "PASS", result.evidence


def test_a_confident_token_replaced_late_fails_as_a_defect() -> None:
    late: Triples = [("The", -0.01, -6.0), (" cat", -0.7, -0.9), (" ran", -0.05, -4.0)]
    result = verdict(probes(FIRST), probes(late))
    assert result.verdict == "FAIL"
    assert "changed at char 8" in result.evidence


def test_a_near_tie_flip_is_reported_and_only_what_came_before_is_compared() -> None:
    """The flip at " cat"/" cap" is arithmetic; the tokens after it are another reply's and
    their logprobs are not compared (here they differ by 3 nats)."""
    first: Triples = [("The", -0.01, -6.0), (" cat", -0.7, -0.9), (" sat", -0.05, -4.0)]
    late: Triples = [("The", -0.01, -6.0), (" cap", -0.7, -0.9), (" sat", -3.05, -4.0)]
    result = drift_verdict(
        probes(first, runner_up=" cap"), probes(late, runner_up=" cat"), tolerance_nats=0.1
    )
    assert result.verdict == "PASS", result.evidence
    assert "1 near-tie flips" in result.evidence
    shift = logprob_shift(record(first), record(late), up_to_token=1)
    assert shift == (0.0, "The")


def test_probes_without_logprobs_or_with_a_failed_first_set_fail() -> None:
    bare = ProbeSet(records=[_reply("The cat sat")])
    assert verdict(bare, bare).verdict == "FAIL"
    assert "no logprobs" in verdict(bare, bare).evidence
    broken = ProbeSet(records=[_reply(error="upstream 500")], problem="drift probe request 1")
    result = verdict(broken, probes(FIRST))
    assert result.verdict == "FAIL"
    assert "first probe set is unusable" in result.evidence
