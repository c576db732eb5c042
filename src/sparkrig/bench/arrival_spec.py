"""The `--arrivals` spec, `poisson:RATE[:SEED]`, parsed strictly before any request. Light
(pydantic only) so BenchSettings can hold it; the schedule and its figures are in
bench/arrivals.py."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sparkrig.errors import UsageError
from sparkrig.outside_numbers import float_or_none, int_or_none

_EXAMPLE = "e.g. --arrivals poisson:2.5 (requests/s) or poisson:2.5:7 (seed 7)"
_MOST_PER_S = 100_000.0  # past this the client cannot keep a schedule: a typo, not a rate


class Arrivals(BaseModel):
    model_config = ConfigDict(frozen=True)

    process: Literal["poisson"] = "poisson"
    rate_per_s: float = Field(gt=0, description="offered requests per second")
    seed: int = Field(default=0, ge=0, description="with the point's name, seeds the schedule")

    @property
    def label(self) -> str:
        return f"poisson {self.rate_per_s:g}/s (seed {self.seed})"


def parse_arrivals(text: str) -> Arrivals:
    """`poisson:RATE[:SEED]`; a UsageError naming the fix otherwise."""
    parts = text.strip().split(":")
    if parts[0] != "poisson" or len(parts) not in (2, 3):
        raise UsageError(f"--arrivals {text!r} is not poisson:RATE[:SEED] — {_EXAMPLE}")
    rate = float_or_none(parts[1], minimum=0.0, maximum=_MOST_PER_S)
    if rate is None or rate == 0:
        raise UsageError(
            f"--arrivals {text!r}: RATE must be a number of requests/s above 0 and at most "
            f"{_MOST_PER_S:g} — {_EXAMPLE}"
        )
    seed = int_or_none(parts[2], minimum=0) if len(parts) == 3 else 0
    if seed is None:
        raise UsageError(f"--arrivals {text!r}: SEED must be a whole number >= 0 — {_EXAMPLE}")
    return Arrivals(rate_per_s=rate, seed=seed)
