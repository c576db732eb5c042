"""A latency service-level objective (`--slo ttft_p99=2s,tpot_p99=50ms`): its terms, parsed
strictly before any request is sent, and the per-request figure each term judges.

A term is `METRIC_pPERCENTILE=LIMIT`: METRIC one of ttft, tpot (itl is the same figure: the
mean inter-token latency of one request), e2e; PERCENTILE one of 50, 90, 95, 99; LIMIT a
positive number with its unit, s or ms. Definitions in docs/metrics.md#goodput.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sparkrig.errors import UsageError
from sparkrig.outside_numbers import float_or_none

SloMetric = Literal["ttft", "tpot", "e2e"]
SLO_PERCENTILES = (50, 90, 95, 99)
_METRICS: dict[str, SloMetric] = {"ttft": "ttft", "tpot": "tpot", "itl": "tpot", "e2e": "e2e"}
_UNITS = {"s": 1.0, "ms": 1e-3}
_TERM = re.compile(r"(?P<metric>[a-z0-9]+)_p(?P<percentile>[0-9]+)=(?P<limit>.+)")
_EXAMPLE = "e.g. --slo ttft_p99=2s,tpot_p99=50ms"
# a limit past an hour is a typo, not an objective (a bench request is capped well below it)
_MOST_S = 3600.0


class SloTerm(BaseModel):
    """One term: the `percentile`-th percentile of `metric` over a point's requests is at most
    `limit_s`; a request meets the term when its own figure is at most `limit_s`."""

    model_config = ConfigDict(frozen=True)

    metric: SloMetric
    percentile: int = Field(description="one of 50, 90, 95, 99")
    limit_s: float = Field(gt=0, description="seconds")

    @property
    def label(self) -> str:
        limit = f"{self.limit_s:g}s" if self.limit_s >= 1 else f"{self.limit_s * 1000:g}ms"
        return f"{self.metric}_p{self.percentile}={limit}"


class Slo(BaseModel):
    """Every term must hold: a request meets the SLO when it meets every term."""

    model_config = ConfigDict(frozen=True)

    terms: list[SloTerm] = Field(min_length=1)

    @property
    def label(self) -> str:
        return ",".join(term.label for term in self.terms)


def parse_slo(text: str) -> Slo:
    """The SLO of `--slo TEXT`; a UsageError naming the bad term and the fix otherwise."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise UsageError(f"--slo {text!r} has an empty term — {_EXAMPLE}")
    terms = [_parse_term(part) for part in parts]
    metrics = [term.metric for term in terms]
    if len(set(metrics)) != len(metrics):
        repeated = next(metric for metric in metrics if metrics.count(metric) > 1)
        raise UsageError(
            f"--slo {text!r} states {repeated} twice (itl and tpot are one figure) — keep one "
            f"term per metric, {_EXAMPLE}"
        )
    return Slo(terms=terms)


def _parse_term(part: str) -> SloTerm:
    match = _TERM.fullmatch(part.lower())
    if match is None:
        raise UsageError(f"--slo term {part!r} is not METRIC_pN=LIMIT — {_EXAMPLE}")
    metric = _METRICS.get(match["metric"])
    if metric is None:
        raise UsageError(
            f"--slo term {part!r}: unknown metric {match['metric']!r} — use one of "
            f"{', '.join(_METRICS)}"
        )
    percentile = next((p for p in SLO_PERCENTILES if str(p) == match["percentile"]), None)
    if percentile is None:
        raise UsageError(
            f"--slo term {part!r}: percentile p{match['percentile']} is not offered — use one of "
            f"{', '.join(f'p{p}' for p in SLO_PERCENTILES)}"
        )
    limit = match["limit"].strip()
    unit = next(
        (unit for unit in sorted(_UNITS, key=len, reverse=True) if limit.endswith(unit)), None
    )
    if unit is None:
        raise UsageError(
            f"--slo term {part!r}: the limit needs a unit, s or ms — e.g. {metric}_p{percentile}=2s"
        )
    scale = _UNITS[unit]
    number = float_or_none(limit.removesuffix(unit), minimum=0.0)
    if number is None or number == 0 or number * scale > _MOST_S:
        raise UsageError(
            f"--slo term {part!r}: the limit must be a number above 0 and at most "
            f"{_MOST_S:g}s — e.g. {metric}_p{percentile}=2s"
        )
    return SloTerm(metric=metric, percentile=percentile, limit_s=number * scale)
