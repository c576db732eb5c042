"""Run validity: a point's error rate against the ceiling, and its coverage — how many
requests every figure it reports rests on (docs/metrics.md#run-validity). Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

INVALID_ERRORS = "error rate above the ceiling"


class TimedRequest(Protocol):
    @property
    def ttft_s(self) -> float | None: ...
    @property
    def decode_tps(self) -> float | None: ...


class Coverage(BaseModel):
    """What a point's figures rest on."""

    sent: int = Field(description="requests sent, warm-up included, the logprobs witness not")
    failed: int = Field(description="of those, requests that failed (any kind)")
    error_rate: float | None = Field(description="failed / sent; None when nothing was sent")
    samples: int = Field(description="kept samples: the point's value is their summary")
    value_requests: int = Field(description="requests of the kept samples")
    ttft_requests: int = Field(description="of those, with a TTFT (the TTFT column's basis)")
    decode_requests: int = Field(
        description="of those, with a decode rate (the per-stream figure's basis)"
    )


def coverage_of(sent: int, failed: int, samples: Sequence[Sequence[TimedRequest]]) -> Coverage:
    requests = [request for sample in samples for request in sample]
    return Coverage(
        sent=sent,
        failed=failed,
        error_rate=failed / sent if sent else None,
        samples=len(samples),
        value_requests=len(requests),
        ttft_requests=sum(request.ttft_s is not None for request in requests),
        decode_requests=sum(request.decode_tps is not None for request in requests),
    )


def error_rate_reason(coverage: Coverage, ceiling: float) -> str | None:
    """Why the point is invalid on its errors, with the count; None within the ceiling."""
    rate = coverage.error_rate
    if rate is None or rate <= ceiling:
        return None
    return (
        f"{INVALID_ERRORS}: {coverage.failed} of {coverage.sent} requests failed ({rate:.1%}, "
        f"ceiling {ceiling:.1%})"
    )
