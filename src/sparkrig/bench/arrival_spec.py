"""The `--arrivals` spec, `poisson:RATE[:SEED]` or `staggered:GAP_S`, parsed strictly before any
request. Light (pydantic only) so BenchSettings can hold it; the schedule and its figures are in
bench/arrivals.py."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sparkrig.errors import UsageError
from sparkrig.outside_numbers import float_or_none, int_or_none

_EXAMPLE = (
    "e.g. --arrivals poisson:2.5 (requests/s), poisson:2.5:7 (seed 7) or staggered:0.4 "
    "(one request every 0.4 s)"
)
_MOST_PER_S = 100_000.0  # past this the client cannot keep a schedule: a typo, not a rate
_LONGEST_GAP_S = 3600.0  # a gap of hours between starts is a typo, not a stagger


class Arrivals(BaseModel):
    model_config = ConfigDict(frozen=True)

    process: Literal["poisson", "staggered"] = "poisson"
    rate_per_s: float = Field(
        gt=0, description="offered requests per second (staggered: 1 ÷ the gap)"
    )
    seed: int = Field(default=0, ge=0, description="with the point's name, seeds the schedule")

    @property
    def gap_s(self) -> float:
        """The staggered gap between starts (the mean gap for poisson)."""
        return 1 / self.rate_per_s

    @property
    def label(self) -> str:
        if self.process == "staggered":
            return f"staggered every {self.gap_s:g} s"
        return f"poisson {self.rate_per_s:g}/s (seed {self.seed})"

    @property
    def short(self) -> str:
        """For a point's name: `poisson 2/s`, `staggered 0.4s`."""
        if self.process == "staggered":
            return f"staggered {self.gap_s:g}s"
        return f"poisson {self.rate_per_s:g}/s"


def parse_arrivals(text: str) -> Arrivals:
    """`poisson:RATE[:SEED]` or `staggered:GAP_S`; a UsageError naming the fix otherwise."""
    parts = text.strip().split(":")
    if parts[0] == "staggered" and len(parts) == 2:
        gap = float_or_none(parts[1], minimum=0.0, maximum=_LONGEST_GAP_S)
        if gap is None or gap == 0:
            raise UsageError(
                f"--arrivals {text!r}: GAP_S must be seconds above 0 and at most "
                f"{_LONGEST_GAP_S:g} — {_EXAMPLE}"
            )
        return Arrivals(process="staggered", rate_per_s=1 / gap)
    if parts[0] != "poisson" or len(parts) not in (2, 3):
        raise UsageError(
            f"--arrivals {text!r} is not poisson:RATE[:SEED] or staggered:GAP_S — {_EXAMPLE}"
        )
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
