"""The acceptance canary's allowance: the band for large or deterministic samples, the sampling
error of two small samples when that is wider (measured: one synthetic-rate server moved 43–52%
between runs of ~55 drafts), and the field faults outside both."""

from sparkrig import defaults
from sparkrig.guards.acceptance import position_fall, tolerance


def test_large_samples_are_judged_by_the_band() -> None:
    assert tolerance(0.5, 100_000, 0.5, 100_000) == defaults.CHECK_ACCEPTANCE_BAND


def test_an_unknown_sample_size_leaves_the_band() -> None:
    assert tolerance(0.5, 0, 0.5, 55) == defaults.CHECK_ACCEPTANCE_BAND


def test_small_samples_widen_the_allowance_past_a_wobble_seen_on_one_server() -> None:
    # measured on one server, 55 drafts each: position 2 read 0.658, then 0.528
    assert position_fall([0.962, 0.658], [0.849, 0.528], 55, 55) is None


def test_the_field_faults_fall_outside_even_small_samples() -> None:
    # a broken draft load: 60.2% to 25.7% (field notes: draft-loader-12-tensors)
    assert abs(0.602 - 0.257) > tolerance(0.602, 110, 0.257, 110)
    # positions 2-5 to 0.000 (field notes: hash-bursts-acceptance-collapse)
    fallen = position_fall([0.96, 0.66, 0.33], [0.96, 0.0, 0.0], 110, 110)
    assert fallen is not None
    assert fallen[0] == 1
