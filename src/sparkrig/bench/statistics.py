"""Statistics for honest serving benchmarks: t intervals, precision stops, Welch comparisons.

Pure functions on plain floats, no scipy: the Student t quantile is solved from the regularized
incomplete beta function (continued fraction, after Numerical Recipes §6.4), so it holds for the
non-integer degrees of freedom that Welch–Satterthwaite produces.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

_NORMAL_Z_975: Final = 1.959963984540054  # the 0.975 quantile of N(0, 1)
_T_975_AT_DF_1: Final = 12.706204736174705  # tan(0.475 π): the widest t quantile, df = 1
# From this df on, the Cornish–Fisher series in 1/df matches scipy to ~1e-15, while the beta
# route needs O(sqrt(df)) terms and loses digits to lgamma cancellation (~1e-11 at df 1e5).
_SERIES_MIN_DF: Final = 1e4
_CONTINUED_FRACTION_EPS: Final = 1e-15
_CONTINUED_FRACTION_MAX_TERMS: Final = 10_000
_TINY: Final = 1e-300  # keeps Lentz's method away from division by zero

ChangeVerdict = Literal["same", "faster", "slower"]


def t_quantile_975(df: float) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (two-sided 95 %).

    Any real df >= 1; `math.inf` gives the normal quantile.
    """
    if not df >= 1:  # also rejects NaN
        raise ValueError(f"t quantile needs df >= 1, got {df}")
    if math.isinf(df):
        return _NORMAL_Z_975
    if df >= _SERIES_MIN_DF:
        return _cornish_fisher_t_975(df)
    # The two-sided tail I_x(df/2, 1/2) falls as t grows; bisect it down to 0.05 between the
    # quantile's bounds for df in [1, inf).
    low, high = _NORMAL_Z_975, _T_975_AT_DF_1 + 1e-9
    while high - low > 4 * math.ulp(high):
        middle = (low + high) / 2
        if _two_sided_tail(middle, df) > 0.05:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _two_sided_tail(t: float, df: float) -> float:
    """P(|T| > t) for T ~ t(df), t > 0: the regularized incomplete beta I_x(df/2, 1/2)."""
    a, b = df / 2, 0.5
    x = df / (df + t * t)
    one_minus_x = t * t / (df + t * t)  # computed directly: 1 - x loses digits when x ~ 1
    log_front = (
        math.lgamma(a + b)
        - math.lgamma(a)
        - math.lgamma(b)
        + a * math.log(x)
        + b * math.log(one_minus_x)
    )
    # The continued fraction converges fast only below this point; above it use the symmetry
    # I_x(a, b) = 1 - I_(1-x)(b, a).
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_continued_fraction(b, a, one_minus_x) / b


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated by the modified Lentz method."""
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _CONTINUED_FRACTION_MAX_TERMS + 1):
        even_term = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd_term = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for term in (even_term, odd_term):
            d = 1 + term * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + term / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= d * c
        if abs(d * c - 1) < _CONTINUED_FRACTION_EPS:
            return fraction
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def _cornish_fisher_t_975(df: float) -> float:
    """The t quantile as the normal quantile plus its expansion in 1/df (A&S 26.7.5)."""
    z = _NORMAL_Z_975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


class PointSummary(BaseModel):
    """One measured quantity over repeated runs, with its 95 % confidence interval."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(description="number of samples")
    mean: float = Field(description="arithmetic mean of the samples")
    median: float = Field(description="middle sample (mean of the two middle ones when n is even)")
    min: float = Field(description="smallest sample")
    max: float = Field(description="largest sample")
    sd: float | None = Field(description="sample standard deviation (n - 1); None when n < 2")
    ci95_half_width: float | None = Field(
        description="half-width of the t-based 95 % interval of the mean; None when n < 2"
    )
    ci95_low: float | None = Field(description="mean - ci95_half_width; None when n < 2")
    ci95_high: float | None = Field(description="mean + ci95_half_width; None when n < 2")
    relative_half_width: float | None = Field(
        description="ci95_half_width / |mean|; None when n < 2 or the mean is 0"
    )
    samples: list[float] = Field(description="the raw samples, in the order they were taken")


def summarize(samples: Sequence[float]) -> PointSummary:
    """Mean, spread and t-based 95 % interval of `samples` (finite numbers, at least one)."""
    values = [float(value) for value in samples]
    if not values:
        raise ValueError("cannot summarize no samples — take at least one measurement")
    if not all(math.isfinite(value) for value in values):
        raise ValueError(f"samples must be finite numbers, got {values}")
    n = len(values)
    mean = math.fsum(values) / n
    ordered = sorted(values)
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    sd = half_width = low = high = relative = None
    if n >= 2:
        sd = _sample_sd(values, mean)
        half_width = t_quantile_975(n - 1) * sd / math.sqrt(n)
        low, high = mean - half_width, mean + half_width
        relative = half_width / abs(mean) if mean != 0 else None
    return PointSummary(
        n=n,
        mean=mean,
        median=median,
        min=ordered[0],
        max=ordered[-1],
        sd=sd,
        ci95_half_width=half_width,
        ci95_low=low,
        ci95_high=high,
        relative_half_width=relative,
        samples=values,
    )


def _sample_sd(values: Sequence[float], mean: float) -> float:
    return math.sqrt(math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1))


def precise_enough(summary: PointSummary, precision: float, min_samples: int) -> bool:
    """True once there are `min_samples` and the interval is within `precision` of the mean.

    `precision` is relative: 0.02 stops when the 95 % half-width is at most 2 % of |mean|.
    """
    relative = summary.relative_half_width
    return summary.n >= min_samples and relative is not None and relative <= precision


def precision_checkpoints(min_samples: int, max_samples: int, declared: Sequence[int]) -> list[int]:
    """The sample counts at which a point may look at its interval, declared before it starts.

    The first is the fixed minimum, then every declared count above it, then the cap. Looking
    after every sample and stopping the first time the interval is narrow favours moments when
    the spread happens to be low (optional stopping, docs/metrics.md); a few looks fixed in
    advance bound that bias. A cap below the minimum is the only look.
    """
    if max_samples < 1:
        raise ValueError(f"max_samples must be >= 1, got {max_samples}")
    first = min(min_samples, max_samples)
    later = [n for n in sorted(set(declared)) if first < n < max_samples]
    return sorted({first, *later, max_samples})


def stop_on_precision(values: Sequence[float], looks: Sequence[int], precision: float) -> bool:
    """True when this many samples is one of the declared `looks` and their interval is within
    `precision` of the mean; between looks a point never stops, however narrow it looks."""
    return len(values) in looks and precise_enough(summarize(values), precision, looks[0])


class WelchComparison(BaseModel):
    """How a quantity's mean moved from `before` to `after`, with a Welch 95 % interval."""

    model_config = ConfigDict(frozen=True)

    before_mean: float = Field(description="mean of the before samples")
    after_mean: float = Field(description="mean of the after samples")
    change_pct: float = Field(description="(after_mean - before_mean) / |before_mean| × 100")
    ci95_low_pct: float | None = Field(
        description="low end of the Welch 95 % interval of change_pct; None when a side has n < 2"
    )
    ci95_high_pct: float | None = Field(
        description="high end of the Welch 95 % interval of change_pct; None when a side has n < 2"
    )
    df: float | None = Field(
        description=(
            "Welch–Satterthwaite degrees of freedom; None when a side has n < 2, or when both "
            "sides have zero variance (df is 0/0 there, and the interval is the point itself)"
        )
    )


def welch_change(before: Sequence[float], after: Sequence[float]) -> WelchComparison:
    """The percent change of the mean from `before` to `after`, with its Welch 95 % interval.

    The interval is the Welch interval of (after_mean - before_mean) scaled by 100 / |before_mean|;
    it treats before_mean as exact in the denominator, which is fair once both runs are precise.
    Dividing by |before_mean| keeps the sign of the change the sign of the move.
    """
    before_summary, after_summary = summarize(before), summarize(after)
    before_mean, after_mean = before_summary.mean, after_summary.mean
    if before_mean == 0:
        raise ValueError("percent change needs a nonzero before mean — compare absolute values")
    scale = 100 / abs(before_mean)
    change_pct = (after_mean - before_mean) * scale
    low = high = df = None
    if before_summary.sd is not None and after_summary.sd is not None:
        before_var = before_summary.sd**2 / before_summary.n
        after_var = after_summary.sd**2 / after_summary.n
        standard_error_sq = before_var + after_var
        if standard_error_sq == 0:
            low = high = change_pct
        else:
            df = standard_error_sq**2 / (
                before_var**2 / (before_summary.n - 1) + after_var**2 / (after_summary.n - 1)
            )
            half_width_pct = t_quantile_975(df) * math.sqrt(standard_error_sq) * scale
            low, high = change_pct - half_width_pct, change_pct + half_width_pct
    return WelchComparison(
        before_mean=before_mean,
        after_mean=after_mean,
        change_pct=change_pct,
        ci95_low_pct=low,
        ci95_high_pct=high,
        df=df,
    )


def paired_change(before: Sequence[float], after: Sequence[float]) -> WelchComparison:
    """The change from `before` to `after` judged on pairs taken in the same minutes.

    Pair i is (before[i], after[i]), e.g. the round means of two servers measured in
    alternating rounds. The drift of a shared machine moves both members of a pair alike, so it
    cancels in their ratio: the interval is the t interval over the pairs of log(after/before),
    with n - 1 degrees of freedom, taken back to percent (exp - 1). change_pct is the geometric
    mean ratio as percent; before_mean and after_mean are the plain means of each side.
    Values must be positive (rates and times are)."""
    if len(before) != len(after):
        raise ValueError(f"pairs need equal lengths, got {len(before)} and {len(after)}")
    if not before or min(*before, *after) <= 0:
        raise ValueError("paired change needs positive values on both sides, at least one pair")
    logs = [math.log(b / a) for a, b in zip(before, after, strict=True)]
    summary = summarize(logs)
    low = high = df = None
    if summary.ci95_low is not None and summary.ci95_high is not None:
        low = math.expm1(summary.ci95_low) * 100
        high = math.expm1(summary.ci95_high) * 100
        df = float(summary.n - 1)
    return WelchComparison(
        before_mean=math.fsum(before) / len(before),
        after_mean=math.fsum(after) / len(after),
        change_pct=math.expm1(summary.mean) * 100,
        ci95_low_pct=low,
        ci95_high_pct=high,
        df=df,
    )


def verdict(
    comparison: WelchComparison, tolerance_pct: float, higher_is_better: bool
) -> ChangeVerdict:
    """ "faster" or "slower" only when the interval excludes 0 and |change| exceeds the tolerance.

    Set `higher_is_better` for throughputs; leave it False for latencies, where a rise is slower.
    Without an interval (a side with one sample) nothing is proven, so the verdict is "same".
    """
    if tolerance_pct < 0:
        raise ValueError(f"tolerance_pct must be >= 0, got {tolerance_pct}")
    low, high = comparison.ci95_low_pct, comparison.ci95_high_pct
    if low is None or high is None or low <= 0 <= high:
        return "same"
    if abs(comparison.change_pct) <= tolerance_pct:
        return "same"
    went_up = comparison.change_pct > 0
    return "faster" if went_up == higher_is_better else "slower"


def percentile(values: Sequence[float], share: float) -> float:
    """The `share` (0..1) quantile of `values` by linear interpolation between the closest
    ranks (numpy's default): p99 of 10 values lies between the 9th and the 10th largest."""
    if not values:
        raise ValueError("a percentile of no values — take at least one measurement")
    if not 0 <= share <= 1:
        raise ValueError(f"share must be within 0..1, got {share}")
    ordered = sorted(values)
    rank = share * (len(ordered) - 1)
    below = math.floor(rank)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)


def wilson_interval(successes: int, trials: int) -> tuple[float, float] | None:
    """The Wilson score 95 % interval of a share `successes / trials`; None without trials.
    Unlike the normal interval it stays within 0..1 and is not empty at 0 or at all."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be within 0..{trials}, got {successes}")
    z = _NORMAL_Z_975
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))) / (
        1 + z * z / trials
    )
    return max(0.0, centre - half), min(1.0, centre + half)
