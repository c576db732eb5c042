"""t quantiles, summaries, Welch changes and verdicts against scipy-derived reference values.

Reference numbers came from scipy 1.17.1 in a scratch venv (scipy is not a dependency):
`scipy.stats.t.ppf(0.975, df)` for quantiles, `np.std(ddof=1)` and `t.interval` for summaries,
and `scipy.stats.ttest_ind(after, before, equal_var=False)` with `.df` and
`.confidence_interval(0.95)` (scaled by 100 / |before mean|) for Welch comparisons.
"""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from sparkrig.bench.statistics import (
    PointSummary,
    WelchComparison,
    paired_change,
    precise_enough,
    precision_checkpoints,
    stop_on_precision,
    summarize,
    t_quantile_975,
    verdict,
    welch_change,
)

REL = 1e-4

# df -> scipy.stats.t.ppf(0.975, df)
SCIPY_T_975 = {
    1: 12.706204736174694,
    2: 4.302652729749462,
    3: 3.1824463052837078,
    4: 2.7764451051977934,
    4.5: 2.6589123472044034,
    8.944818742325806: 2.2642862521552116,
    9: 2.262157162798205,
    29: 2.045229642132703,
    100: 1.9839715185235518,
    1000: 1.9623390808264083,
    1e5: 1.9599877075346095,
    1e6: 1.959966356814107,
}

# before, after -> Welch df, change %, 95 % interval of the change % (scipy ttest_ind)
THROUGHPUT_BEFORE = [101.2, 99.8, 100.5, 102.1, 98.9, 100.7]
THROUGHPUT_AFTER = [104.3, 105.1, 103.8, 106.0, 104.7]
THROUGHPUT_WELCH = (8.944818742325806, 4.2241379310344715, 2.9034437841839926, 5.5448320778849505)
LATENCY_BEFORE = [0.212, 0.208, 0.215, 0.210]
LATENCY_AFTER = [0.231, 0.240, 0.226, 0.236, 0.229, 0.238, 0.233]
LATENCY_WELCH = (8.904860502013348, 10.431107354184283, 7.840272782970118, 13.021941925398448)
NOISY_BEFORE = [50.0, 52.0, 48.0]
NOISY_AFTER = [51.0, 49.5, 53.0]
NOISY_WELCH = (3.9341138034304377, 2.3333333333333286, -6.255838859091323, 10.92250552575798)


def comparison(change: float, low: float | None, high: float | None) -> WelchComparison:
    return WelchComparison(
        before_mean=100.0,
        after_mean=100.0 + change,
        change_pct=change,
        ci95_low_pct=low,
        ci95_high_pct=high,
        df=10.0,
    )


# --- t quantile -------------------------------------------------------------------------------


@pytest.mark.parametrize(("df", "expected"), SCIPY_T_975.items())
def test_t_quantile_matches_scipy(df: float, expected: float) -> None:
    assert t_quantile_975(df) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize(("df", "expected"), SCIPY_T_975.items())
def test_t_quantile_is_exact_not_just_within_tolerance(df: float, expected: float) -> None:
    # measured against scipy on 3,200 df in [1, 1e9]: worst relative error 2.5e-12
    assert t_quantile_975(df) == pytest.approx(expected, rel=1e-10)


def test_t_quantile_closed_forms() -> None:
    assert t_quantile_975(1) == pytest.approx(math.tan(0.475 * math.pi), rel=1e-12)
    assert t_quantile_975(2) == pytest.approx(0.95 / math.sqrt(2 * 0.975 * 0.025), rel=1e-12)


def test_t_quantile_at_infinite_df_is_normal() -> None:
    assert t_quantile_975(math.inf) == pytest.approx(1.959963984540054, rel=1e-15)


def test_t_quantile_falls_as_df_grows_across_the_series_switch() -> None:
    dfs = [1, 1.5, 2, 5, 30, 9999.999, 10_000, 10_000.001, 1e7, math.inf]
    quantiles = [t_quantile_975(df) for df in dfs]
    assert quantiles == sorted(quantiles, reverse=True)


@pytest.mark.parametrize("df", [0.99, 0, -3, math.nan])
def test_t_quantile_rejects_df_below_one(df: float) -> None:
    with pytest.raises(ValueError, match="df >= 1"):
        t_quantile_975(df)


# --- summarize --------------------------------------------------------------------------------


def test_summarize_one_to_five() -> None:
    summary = summarize([1, 2, 3, 4, 5])

    assert summary.n == 5
    assert summary.mean == 3
    assert summary.median == 3
    assert (summary.min, summary.max) == (1, 5)
    assert summary.sd == pytest.approx(math.sqrt(2.5), rel=1e-12)
    assert summary.ci95_half_width == pytest.approx(1.9632431614775572, rel=REL)
    assert summary.ci95_low == pytest.approx(3 - 1.9632431614775572, rel=REL)
    assert summary.ci95_high == pytest.approx(3 + 1.9632431614775572, rel=REL)
    assert summary.relative_half_width == pytest.approx(1.9632431614775572 / 3, rel=REL)
    assert summary.samples == [1, 2, 3, 4, 5]


def test_summarize_matches_scipy_interval_and_keeps_order() -> None:
    samples = [12.5, 11.9, 13.1, 12.2, 12.8, 12.4, 12.0]
    summary = summarize(samples)

    assert summary.mean == pytest.approx(12.414285714285715, rel=1e-12)
    assert summary.median == 12.4
    assert summary.sd == pytest.approx(0.4298393941484479, rel=1e-12)
    assert summary.ci95_half_width == pytest.approx(0.3975351361377962, rel=REL)
    assert summary.ci95_low == pytest.approx(12.016750578147919, rel=REL)
    assert summary.ci95_high == pytest.approx(12.81182085042351, rel=REL)
    assert summary.relative_half_width == pytest.approx(0.03202239301455205, rel=REL)
    assert summary.samples == samples


def test_summarize_even_count_median_is_mean_of_middle_two() -> None:
    assert summarize([4, 1, 3, 2]).median == 2.5


def test_summarize_one_sample_has_no_spread() -> None:
    summary = summarize([7.5])

    assert (summary.n, summary.mean, summary.median, summary.min, summary.max) == (
        1,
        7.5,
        7.5,
        7.5,
        7.5,
    )
    assert summary.sd is None
    assert summary.ci95_half_width is None
    assert summary.ci95_low is None
    assert summary.ci95_high is None
    assert summary.relative_half_width is None


def test_summarize_zero_mean_has_no_relative_width() -> None:
    summary = summarize([-1, 1])

    assert summary.ci95_half_width == pytest.approx(12.706204736174694, rel=REL)
    assert summary.relative_half_width is None


def test_summarize_rejects_empty_and_non_finite() -> None:
    with pytest.raises(ValueError, match="no samples"):
        summarize([])
    with pytest.raises(ValueError, match="finite"):
        summarize([1.0, math.nan])


def test_every_model_field_is_described() -> None:
    for model in (PointSummary, WelchComparison):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"


def test_summary_is_frozen() -> None:
    summary = summarize([1, 2])
    with pytest.raises(ValidationError):
        summary.mean = 5  # type: ignore[misc]


# --- precise_enough ---------------------------------------------------------------------------


def test_precise_enough_needs_both_samples_and_precision() -> None:
    summary = summarize([12.5, 11.9, 13.1, 12.2, 12.8, 12.4, 12.0])  # relative width 0.0320

    assert precise_enough(summary, precision=0.05, min_samples=5)
    assert precise_enough(summary, precision=0.0321, min_samples=7)
    assert not precise_enough(summary, precision=0.0319, min_samples=5)
    assert not precise_enough(summary, precision=0.05, min_samples=8)


def test_precise_enough_is_false_without_an_interval() -> None:
    assert not precise_enough(summarize([3.0]), precision=1.0, min_samples=1)
    assert not precise_enough(summarize([-1, 1]), precision=100.0, min_samples=1)


def test_precision_is_looked_at_only_at_declared_counts() -> None:
    declared = (5, 8, 12, 20, 30, 50)
    assert precision_checkpoints(5, 12, declared) == [5, 8, 12]
    assert precision_checkpoints(5, 25, declared) == [5, 8, 12, 20, 25]  # the cap is a look
    assert precision_checkpoints(6, 12, declared) == [6, 8, 12]  # the minimum is the first
    assert precision_checkpoints(5, 3, declared) == [3]  # a cap under the minimum: one look
    assert precision_checkpoints(2, 2, ()) == [2]


def test_a_point_never_stops_between_its_looks() -> None:
    values = [100.0, 100.1, 100.0, 99.9, 100.0, 100.1]  # precise from n = 2 on
    looks = [4, 6]
    assert [stop_on_precision(values[:n], looks, 0.03) for n in range(2, 7)] == [
        False,
        False,
        True,
        False,
        True,
    ]
    noisy = [80.0, 120.0, 90.0, 110.0]
    assert not stop_on_precision(noisy, looks, 0.03)  # a look, but not precise


def test_no_look_at_all_is_refused() -> None:
    with pytest.raises(ValueError, match="max_samples"):
        precision_checkpoints(5, 0, (5,))


# --- welch_change -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (THROUGHPUT_BEFORE, THROUGHPUT_AFTER, THROUGHPUT_WELCH),
        (LATENCY_BEFORE, LATENCY_AFTER, LATENCY_WELCH),
        (NOISY_BEFORE, NOISY_AFTER, NOISY_WELCH),
    ],
    ids=["throughput", "latency", "noisy"],
)
def test_welch_change_matches_scipy(
    before: list[float], after: list[float], expected: tuple[float, float, float, float]
) -> None:
    df, change, low, high = expected
    result = welch_change(before, after)

    assert result.before_mean == pytest.approx(sum(before) / len(before), rel=1e-12)
    assert result.after_mean == pytest.approx(sum(after) / len(after), rel=1e-12)
    assert result.df == pytest.approx(df, rel=1e-10)
    assert result.change_pct == pytest.approx(change, rel=1e-10)
    assert result.ci95_low_pct == pytest.approx(low, rel=REL)
    assert result.ci95_high_pct == pytest.approx(high, rel=REL)


def test_welch_change_is_relative_to_before() -> None:
    result = welch_change([200, 200], [150, 150])

    assert result.change_pct == -25
    assert (result.ci95_low_pct, result.ci95_high_pct) == (-25, -25)


def test_welch_change_with_a_single_sample_side_has_no_interval() -> None:
    for before, after in (([10.0], [11.0, 12.0]), ([10.0, 11.0], [12.0])):
        result = welch_change(before, after)
        assert result.ci95_low_pct is None
        assert result.ci95_high_pct is None
        assert result.df is None
    assert welch_change([10.0], [12.0, 12.0]).change_pct == 20


def test_welch_change_zero_variance_collapses_to_the_point_without_df() -> None:
    result = welch_change([10.0, 10.0, 10.0], [11.0, 11.0])

    assert result.change_pct == pytest.approx(10.0, rel=1e-12)
    assert result.ci95_low_pct == result.ci95_high_pct == result.change_pct
    assert result.df is None


def test_welch_change_one_constant_side_has_the_other_sides_df() -> None:
    result = welch_change([10.0, 10.0, 10.0], [1.0, 2.0, 3.0, 4.0, 5.0])

    assert result.df == pytest.approx(4.0, rel=1e-12)
    # half-width of the after mean (t(4) sd / sqrt 5) over |before mean| 10, in percent
    assert result.ci95_high_pct - result.change_pct == pytest.approx(19.632431614775572, rel=REL)  # type: ignore[operator]


def test_welch_change_negative_baseline_keeps_the_sign_of_the_move() -> None:
    assert welch_change([-10.0, -10.0], [-5.0, -5.0]).change_pct == 50


def test_welch_change_rejects_zero_baseline_and_empty_sides() -> None:
    with pytest.raises(ValueError, match="nonzero before mean"):
        welch_change([-1.0, 1.0], [2.0, 3.0])
    with pytest.raises(ValueError, match="no samples"):
        welch_change([], [2.0, 3.0])


# --- verdict ----------------------------------------------------------------------------------


def test_verdict_on_scipy_cases() -> None:
    throughput = welch_change(THROUGHPUT_BEFORE, THROUGHPUT_AFTER)  # +4.2 %, CI [2.9, 5.5]
    latency = welch_change(LATENCY_BEFORE, LATENCY_AFTER)  # +10.4 %, CI [7.8, 13.0]
    noisy = welch_change(NOISY_BEFORE, NOISY_AFTER)  # +2.3 %, CI [-6.3, 10.9]

    assert verdict(throughput, tolerance_pct=2.0, higher_is_better=True) == "faster"
    assert verdict(throughput, tolerance_pct=5.0, higher_is_better=True) == "same"
    assert verdict(latency, tolerance_pct=2.0, higher_is_better=False) == "slower"
    assert verdict(noisy, tolerance_pct=0.0, higher_is_better=True) == "same"


@pytest.mark.parametrize(
    ("change", "low", "high", "higher_is_better", "expected"),
    [
        (8.0, 5.0, 11.0, True, "faster"),  # throughput up
        (8.0, 5.0, 11.0, False, "slower"),  # latency up
        (-8.0, -11.0, -5.0, True, "slower"),  # throughput down
        (-8.0, -11.0, -5.0, False, "faster"),  # latency down
        (8.0, -1.0, 17.0, True, "same"),  # interval holds 0
        (8.0, 0.0, 16.0, True, "same"),  # interval touches 0: not excluded
        (3.0, 1.0, 5.0, True, "same"),  # real but within tolerance
        (5.0, 4.0, 6.0, False, "same"),  # exactly the tolerance does not exceed it
        (8.0, None, None, True, "same"),  # one sample on a side: nothing proven
    ],
)
def test_verdict_directions(
    change: float, low: float | None, high: float | None, higher_is_better: bool, expected: str
) -> None:
    result = verdict(
        comparison(change, low, high), tolerance_pct=5.0, higher_is_better=higher_is_better
    )
    assert result == expected


def test_verdict_rejects_negative_tolerance() -> None:
    with pytest.raises(ValueError, match="tolerance_pct"):
        verdict(comparison(8.0, 5.0, 11.0), tolerance_pct=-1.0, higher_is_better=True)


def test_paired_change_is_the_t_interval_of_log_ratios_back_in_percent() -> None:
    """Hand check: ratios 0.9, 0.8, 1.0: logs of mean m, sd s; interval exp(m ± t(2) s/√3)."""
    logs = [math.log(0.9), math.log(0.8), math.log(1.0)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)
    change = paired_change([100.0, 50.0, 10.0], [90.0, 40.0, 10.0])
    assert change.change_pct == pytest.approx(math.expm1(mean) * 100)
    assert change.ci95_low_pct == pytest.approx(math.expm1(mean - half) * 100)
    assert change.ci95_high_pct == pytest.approx(math.expm1(mean + half) * 100)
    assert change.df == 2
    assert change.before_mean == pytest.approx(160 / 3)
    with pytest.raises(ValueError, match="equal lengths"):
        paired_change([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="positive"):
        paired_change([1.0, 0.0], [1.0, 1.0])
