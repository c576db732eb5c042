"""Two speeds in one point: samples that fall into two groups far apart.

A median and a t interval describe one speed with noise around it. When an engine runs some
samples of a point at one speed and the rest at another (on llama.cpp with `--parallel` and a
KV cache per slot, which slots a batch lands on: docs/metrics.md#two-speeds), the median lands on
one of them, the interval spans both, and neither says so. This finds such a split.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel, Field

from sparkrig import defaults

TWO_SPEEDS_PREFIX = "two speeds:"


class TwoSpeeds(BaseModel):
    """A point whose samples form two groups, the slower and the faster."""

    slow_median: float = Field(description="median of the slower group, in the point's unit")
    fast_median: float = Field(description="median of the faster group")
    slow_samples: int
    fast_samples: int

    @property
    def ratio(self) -> float:
        return self.fast_median / self.slow_median

    def describe(self, unit: str) -> str:
        suffix = f" {unit}" if unit else ""
        return (
            f"{TWO_SPEEDS_PREFIX} {self.slow_samples} samples near {self.slow_median:.1f}{suffix} "
            f"and {self.fast_samples} near {self.fast_median:.1f} ({self.ratio:.1f}×)"
        )


def two_speeds(values: Sequence[float]) -> TwoSpeeds | None:
    """Split the sorted values at their widest relative gap: two speeds when each side holds at
    least BENCH_TWO_SPEEDS_MIN_SAMPLES, no sample lies within the gap (the neighbours across it
    differ by BENCH_TWO_SPEEDS_MIN_GAP or more) and the two medians by BENCH_TWO_SPEEDS_MIN_RATIO.

    Gradual drift spreads samples evenly and leaves no empty gap; one slow outlier is one sample,
    not a group. Values that are not positive (a rate or a time always is) give None."""
    least = defaults.BENCH_TWO_SPEEDS_MIN_SAMPLES
    ordered = sorted(values)
    if len(ordered) < 2 * least or ordered[0] <= 0:
        return None
    split = max(range(least, len(ordered) - least + 1), key=lambda k: ordered[k] / ordered[k - 1])
    if ordered[split] / ordered[split - 1] < defaults.BENCH_TWO_SPEEDS_MIN_GAP:
        return None
    slow, fast = ordered[:split], ordered[split:]
    found = TwoSpeeds(
        slow_median=statistics.median(slow),
        fast_median=statistics.median(fast),
        slow_samples=len(slow),
        fast_samples=len(fast),
    )
    return found if found.ratio >= defaults.BENCH_TWO_SPEEDS_MIN_RATIO else None
