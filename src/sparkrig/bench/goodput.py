"""Goodput under an SLO: the requests (and their tokens) that met every term, per second of
the sample's window, with an interval across samples; the share of requests that met it; and
whether the point holds the SLO (each term's percentile within its limit).

Pure functions on request summaries (anything with the fields of `RequestTimes`). A figure
that cannot be computed for a request (TPOT of a reply with one output event) leaves that
request unjudged: it is not counted as meeting, and the count says so
(docs/metrics.md#goodput).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from sparkrig.bench.slo import Slo, SloTerm
from sparkrig.bench.statistics import PointSummary, percentile, summarize, wilson_interval

NS_PER_S = 1_000_000_000


class RequestTimes(Protocol):
    """What goodput reads of one request (bench/point_result.py's RequestSummary has it)."""

    @property
    def send_ns(self) -> int | None: ...
    @property
    def ttft_s(self) -> float | None: ...
    @property
    def e2e_s(self) -> float | None: ...
    @property
    def decode_tps(self) -> float | None: ...
    @property
    def completion_tokens(self) -> int | None: ...


class TermResult(BaseModel):
    term: str = Field(description="the term as written, e.g. ttft_p99=2s")
    observed_s: float | None = Field(
        description="the term's percentile over the point's requests; None without any figure"
    )
    requests: int = Field(description="requests with this figure, the percentile's basis")
    holds: bool | None = Field(description="observed_s <= the limit; None without any figure")


class PointGoodput(BaseModel):
    slo: str = Field(description="the SLO judged, e.g. ttft_p99=2s,tpot_p99=50ms")
    requests: int = Field(description="requests of the point's kept samples, the basis")
    met: int = Field(description="requests that met every term")
    unjudged: int = Field(
        description="requests lacking a figure some term needs: counted as not meeting"
    )
    share: float | None = Field(description="met / requests; None without requests")
    share_ci95: tuple[float, float] | None = Field(
        description="Wilson 95% interval of share; None without requests"
    )
    requests_per_s: PointSummary | None = Field(
        description="per sample: requests meeting the SLO ÷ the sample's window (first send "
        "to last reply end); None when no sample has a window"
    )
    tokens_per_s: PointSummary | None = Field(
        description="per sample: completion tokens (server count) of the requests meeting "
        "the SLO ÷ the sample's window"
    )
    terms: list[TermResult]
    holds: bool | None = Field(
        description="every term's percentile within its limit; None when a term has no figure"
    )


def term_figure(request: RequestTimes, term: SloTerm) -> float | None:
    """The request's own figure for `term`, in seconds; None where it cannot be computed."""
    if term.metric == "ttft":
        return request.ttft_s
    if term.metric == "e2e":
        return request.e2e_s
    rate = request.decode_tps  # tokens after the first output event ÷ their span
    return 1 / rate if rate is not None and rate > 0 else None


def meets(request: RequestTimes, slo: Slo) -> bool | None:
    """True when every term's figure is within its limit; None when a figure is missing and no
    term already failed (a missing figure cannot be shown to meet)."""
    figures = [(term_figure(request, term), term.limit_s) for term in slo.terms]
    if any(figure is not None and figure > limit for figure, limit in figures):
        return False
    return None if any(figure is None for figure, _ in figures) else True


def sample_window_s(requests: Sequence[RequestTimes]) -> float | None:
    """First send to last reply end; None when a request lacks its send time or e2e."""
    spans: list[tuple[int, float]] = []
    for request in requests:
        if request.send_ns is None or request.e2e_s is None:
            return None
        spans.append((request.send_ns, request.e2e_s))
    if not spans:
        return None
    start = min(send for send, _ in spans)
    end = max(send + e2e * NS_PER_S for send, e2e in spans)
    return (end - start) / NS_PER_S if end > start else None


def sample_goodput(requests: Sequence[RequestTimes], slo: Slo) -> tuple[float, float] | None:
    """(requests/s, tokens/s) meeting `slo` over one sample's window; None without a window."""
    window = sample_window_s(requests)
    if window is None:
        return None
    good = [request for request in requests if meets(request, slo) is True]
    tokens = sum(request.completion_tokens or 0 for request in good)
    return len(good) / window, tokens / window


def point_goodput(samples: Sequence[Sequence[RequestTimes]], slo: Slo) -> PointGoodput:
    """Goodput of a point from its kept samples' requests."""
    requests = [request for sample in samples for request in sample]
    verdicts = [meets(request, slo) for request in requests]
    met = sum(verdict is True for verdict in verdicts)
    rates = [rate for sample in samples if (rate := sample_goodput(sample, slo)) is not None]
    terms = [_term_result(requests, term) for term in slo.terms]
    return PointGoodput(
        slo=slo.label,
        requests=len(requests),
        met=met,
        unjudged=sum(verdict is None for verdict in verdicts),
        share=met / len(requests) if requests else None,
        share_ci95=wilson_interval(met, len(requests)),
        requests_per_s=summarize([r for r, _ in rates]) if rates else None,
        tokens_per_s=summarize([t for _, t in rates]) if rates else None,
        terms=terms,
        holds=None if any(t.holds is None for t in terms) else all(t.holds for t in terms),
    )


def _term_result(requests: Sequence[RequestTimes], term: SloTerm) -> TermResult:
    figures = [f for request in requests if (f := term_figure(request, term)) is not None]
    observed = percentile(figures, term.percentile / 100) if figures else None
    return TermResult(
        term=term.label,
        observed_s=observed,
        requests=len(figures),
        holds=None if observed is None else observed <= term.limit_s,
    )
