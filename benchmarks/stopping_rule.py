"""Does the bench's stopping rule bias its intervals? A simulation, no server, no timing.

A point repeats samples until its 95% Student-t interval is within --precision of the mean. When
it looks after every sample and stops the first time the interval is narrow enough, it stops
preferentially at a moment when the sample spread happens to be low: the reported interval is
too narrow and covers the true mean less often than 95% (optional stopping). This script draws
points from a known distribution, runs each stopping rule on the same draws, and prints for
each rule: how often the final 95% interval holds the true mean (coverage), how often the point
stopped before its cap, and the mean sample count.

Rules compared:
- every sample: look after every sample from n = 3, cap 10 (the bench before this rule);
- declared looks: look only at the pre-declared counts of sparkrig.defaults
  (BENCH_MIN_SAMPLES, BENCH_PRECISION_CHECKS, BENCH_MAX_SAMPLES): the bench now.

Samples are normal, or Student-t with 3 degrees of freedom (heavy tails, like a rate with the
odd slow sample), with a relative spread (--cv) near the precision, where stopping decisions
are close calls and the bias shows.

Run: .venv/bin/python benchmarks/stopping_rule.py [--points 20000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable, Sequence

from sparkrig import defaults
from sparkrig.bench.statistics import precision_checkpoints, stop_on_precision, summarize

TRUE_MEAN = 100.0
OLD_MIN, OLD_MAX = 3, 10

Draw = Callable[[random.Random], float]


def normal(cv: float) -> Draw:
    return lambda rng: rng.gauss(TRUE_MEAN, cv * TRUE_MEAN)


def heavy_tailed(cv: float) -> Draw:
    """Student-t with 3 df, scaled so its standard deviation is cv × mean."""
    scale = cv * TRUE_MEAN / math.sqrt(3)  # var of t(3) is 3

    def draw(rng: random.Random) -> float:
        chi2 = sum(rng.gauss(0, 1) ** 2 for _ in range(3))
        return TRUE_MEAN + scale * rng.gauss(0, 1) / math.sqrt(chi2 / 3)

    return draw


def run_point(values: Sequence[float], looks: Sequence[int], precision: float) -> list[float]:
    """The samples a point keeps: it stops at the first look where it is precise enough."""
    for n in looks:
        if stop_on_precision(values[:n], looks, precision):
            return list(values[:n])
    return list(values[: looks[-1]])


def trial(
    draw: Draw, rules: dict[str, list[int]], precision: float, points: int, seed: int
) -> None:
    rng = random.Random(seed)  # noqa: S311 - a simulation, not a secret
    longest = max(looks[-1] for looks in rules.values())
    tallies = {name: [0, 0, 0] for name in rules}  # covered, stopped early, samples
    for _ in range(points):
        values = [draw(rng) for _ in range(longest)]  # every rule sees the same draws
        for name, looks in rules.items():
            kept = run_point(values, looks, precision)
            summary = summarize(kept)
            assert summary.ci95_low is not None
            assert summary.ci95_high is not None
            tally = tallies[name]
            tally[0] += summary.ci95_low <= TRUE_MEAN <= summary.ci95_high
            tally[1] += len(kept) < looks[-1]
            tally[2] += len(kept)
    for name, (covered, early, samples) in tallies.items():
        print(
            f"  {name:<16} coverage {covered / points:6.1%}   stopped before cap "
            f"{early / points:6.1%}   mean n {samples / points:5.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--precision", type=float, default=defaults.BENCH_PRECISION)
    args = parser.parse_args()
    rules = {
        "every sample": list(range(OLD_MIN, OLD_MAX + 1)),
        "declared looks": precision_checkpoints(
            defaults.BENCH_MIN_SAMPLES, defaults.BENCH_MAX_SAMPLES, defaults.BENCH_PRECISION_CHECKS
        ),
    }
    print(f"precision {args.precision:.0%}, {args.points} points per row, seed {args.seed}")
    for name, looks in rules.items():
        print(f"  {name}: looks at n = {', '.join(map(str, looks))}")
    for cv in (0.02, 0.03, 0.05):
        for label, make in (("normal", normal), ("t(3)", heavy_tailed)):
            print(f"{label}, cv {cv:.0%}:")
            trial(make(cv), rules, args.precision, args.points, args.seed)


if __name__ == "__main__":
    main()
