"""The same items scored twice on one server, alone and under load: how much accuracy the load
cost, with an exact paired interval on the difference.

Only the items that changed carry information about the difference (McNemar): `lost` were right
alone and wrong under load, `gained` the reverse. Given d = lost + gained, lost is binomial
(d, p) and the drop in accuracy is d / n × (2p − 1). The interval is Clopper–Pearson's exact
interval for p, mapped through that line: exact and conditional on d (it does not widen for the
chance that a different number of items would have changed). Pure, no scipy: the binomial
tails are sums of a few dozen terms, and the bound is found by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Final

from pydantic import BaseModel, Field

_TAIL: Final = 0.025  # each side of a two-sided 95 % interval
_BISECTION_STEPS: Final = 60  # 2**-60 of [0, 1]: far below any difference worth reporting


class PairedAccuracy(BaseModel):
    items: int
    right_alone: int
    right_loaded: int
    lost: int = Field(description="items right alone and wrong under load")
    gained: int = Field(description="items wrong alone and right under load")
    drop: float = Field(description="accuracy alone minus under load, as a share of the items")
    drop_low: float = Field(description="lower end of the exact 95% paired interval on the drop")
    drop_high: float = Field(description="upper end of that interval")


def _at_least(k: int, d: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(d, p)."""
    return sum(math.comb(d, i) * p**i * (1 - p) ** (d - i) for i in range(k, d + 1))


def _bisect_rising(tail: float, function_of_p: Callable[[float], float]) -> float:
    """The p in [0, 1] where the rising `function_of_p` crosses `tail`."""
    low, high = 0.0, 1.0
    for _ in range(_BISECTION_STEPS):
        middle = (low + high) / 2
        if function_of_p(middle) < tail:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def clopper_pearson(k: int, d: int) -> tuple[float, float]:
    """Exact two-sided 95% interval for a binomial share, k successes of d trials (d >= 1)."""
    low = 0.0 if k == 0 else _bisect_rising(_TAIL, lambda p: _at_least(k, d, p))
    # P(X <= k) falls as p rises; its complement P(X >= k + 1) rises to 1 - tail
    high = 1.0 if k == d else _bisect_rising(1 - _TAIL, lambda p: _at_least(k + 1, d, p))
    return low, high


def paired_accuracy(alone: Sequence[bool], loaded: Sequence[bool]) -> PairedAccuracy:
    """Per-item correctness alone and under load (the same items, in the same order)."""
    if len(alone) != len(loaded) or not alone:
        raise ValueError("paired accuracy needs the same non-empty list of items scored twice")
    n = len(alone)
    lost = sum(a and not b for a, b in zip(alone, loaded, strict=True))
    gained = sum(b and not a for a, b in zip(alone, loaded, strict=True))
    changed = lost + gained
    low, high = (0.0, 0.0)
    if changed:
        p_low, p_high = clopper_pearson(lost, changed)
        low, high = changed / n * (2 * p_low - 1), changed / n * (2 * p_high - 1)
    return PairedAccuracy(
        items=n,
        right_alone=sum(alone),
        right_loaded=sum(loaded),
        lost=lost,
        gained=gained,
        drop=(lost - gained) / n,
        drop_low=low,
        drop_high=high,
    )


def load_costs_accuracy(result: PairedAccuracy, min_drop: float) -> bool:
    """The drop is beyond chance (its interval excludes no change) and at least `min_drop`."""
    return result.drop_low > 0 and result.drop >= min_drop


def fewest_losses_that_fail(items: int, gained: int, min_drop: float) -> int | None:
    """The power of the gate: the fewest items lost (with `gained` items gained) among `items`
    that make `load_costs_accuracy` true; None when even losing every other item would not."""
    for lost in range(1, items - gained + 1):
        alone = [True] * lost + [False] * gained + [True] * (items - lost - gained)
        loaded = [False] * lost + [True] * gained + [True] * (items - lost - gained)
        if load_costs_accuracy(paired_accuracy(alone, loaded), min_drop):
            return lost
    return None
