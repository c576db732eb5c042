"""The multiturn point's figures: per turn index, TTFT with its interval, prompt and cached
tokens and the cached share; per conversation (session), its cache-hit rate over turns 2..T;
and whether the later turns reused the prompts before them (docs/metrics.md#multiturn).

Pure functions on request summaries (anything with the fields of `TurnRequest`), laid out as
the multiturn sender sends them: request k·T + n of a sample is turn n of conversation k. A
cached count the server did not give stays None and reads "unverified", never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.bench.multiturn import turn_kind
from sparkrig.bench.statistics import PointSummary, summarize

REUSE_PREFIX = "prefix reuse"
ReuseVerdict = Literal["reused", "missed", "unverified"]


class TurnRequest(Protocol):
    """What the figures read of one turn (bench/point_result.py's RequestSummary has it)."""

    @property
    def prompt_tokens(self) -> int | None: ...
    @property
    def cached_prompt_tokens(self) -> int | None: ...
    @property
    def ttft_s(self) -> float | None: ...
    @property
    def finish_reason(self) -> str | None: ...


class TurnFigures(BaseModel):
    turn: int = Field(description="turn index, 1 for the first")
    kind: str = Field(description="the turn's shape: tool_call, tool_result, code or prose")
    requests: int = Field(description="requests of this turn over the kept samples")
    ttft_s: PointSummary | None = Field(
        description="TTFT of this turn, from its send (once the turn before was answered) to "
        "its first token, over every conversation of every kept sample; None without any"
    )
    ttft_vs_turn_1: float | None = Field(
        description="median TTFT of this turn ÷ median TTFT of turn 1 (below 1: faster)"
    )
    prompt_tokens: PointSummary | None = Field(
        description="the whole prompt re-sent at this turn, as the server counted it"
    )
    cached_tokens: PointSummary | None = Field(
        description="of those, served from the prefix cache, over the requests that said"
    )
    cached_share: float | None = Field(
        description="cached ÷ prompt tokens, each summed over the requests reporting both; "
        "None: unverified (the server said nothing of its cache)"
    )
    reported: int = Field(description="requests whose reply gave a cached count")
    tool_calls: int = Field(description="replies that ended on a tool call")


class SessionFigures(BaseModel):
    sample: int = Field(description="which kept sample, 1 for the first (rounds run on)")
    conversation: int = Field(description="which conversation of the sample, 1 for the first")
    prompt_tokens: list[int | None] = Field(description="per turn, the server's prompt count")
    cached_tokens: list[int | None] = Field(description="per turn, of those from the cache")
    ttft_s: list[float | None] = Field(description="per turn, its TTFT")
    hit_rate: float | None = Field(
        description="cached ÷ prompt tokens over turns 2..T, each summed; None: unverified (a "
        "later turn's reply gave no cached count)"
    )


class MultiturnFigures(BaseModel):
    conversations: int = Field(description="conversations per sample")
    turns: int = Field(description="turns per conversation")
    per_turn: list[TurnFigures] = Field(description="one entry per turn index")
    sessions: list[SessionFigures] = Field(description="one entry per conversation measured")
    hit_rate: PointSummary | None = Field(
        description="the sessions' hit rates over turns 2..T; None when none is verified"
    )
    reused_of_previous: float | None = Field(
        description="cached tokens of turns 2..T ÷ prompt tokens of the turn before each, summed "
        "over the later turns that gave a count: about 1 when each turn found the conversation "
        "so far in the cache (above 1 when the previous reply's tokens were cached too); None: "
        "unverified"
    )
    verdict: ReuseVerdict = Field(
        description="reused: reused_of_previous at least "
        f"{defaults.BENCH_MULTITURN_MIN_REUSE:.0%}; missed: below; unverified: no later turn "
        "gave a cached count"
    )
    note: str = Field(description="the verdict in a sentence, with its numbers")


def multiturn_figures(
    samples: Sequence[Sequence[TurnRequest]], conversations: int, turns: int
) -> MultiturnFigures:
    """The figures of the kept samples, each K·T requests in the sender's order."""
    seen = [
        (index + 1, k + 1, list(requests[k * turns : (k + 1) * turns]))
        for index, requests in enumerate(samples)
        for k in range(len(requests) // turns)
    ]
    sessions = [_session(sample, k, requests) for sample, k, requests in seen]
    by_turn = [[requests[n] for _, _, requests in seen] for n in range(turns)]
    per_turn = [_turn(n + 1, requests) for n, requests in enumerate(by_turn)]
    first = per_turn[0].ttft_s.median if per_turn and per_turn[0].ttft_s else None
    for figures in per_turn:
        if first and figures.ttft_s is not None:
            figures.ttft_vs_turn_1 = figures.ttft_s.median / first
    rates = [s.hit_rate for s in sessions if s.hit_rate is not None]
    reused, verdict, note = _reuse(sessions)
    return MultiturnFigures(
        conversations=conversations,
        turns=turns,
        per_turn=per_turn,
        sessions=sessions,
        hit_rate=summarize(rates) if rates else None,
        reused_of_previous=reused,
        verdict=verdict,
        note=note,
    )


def _session(sample: int, conversation: int, requests: list[TurnRequest]) -> SessionFigures:
    later = requests[1:]
    verified = later and all(r.cached_prompt_tokens is not None and r.prompt_tokens for r in later)
    hit_rate = None
    if verified:
        cached = sum(r.cached_prompt_tokens or 0 for r in later)
        hit_rate = cached / sum(r.prompt_tokens or 0 for r in later)
    return SessionFigures(
        sample=sample,
        conversation=conversation,
        prompt_tokens=[r.prompt_tokens for r in requests],
        cached_tokens=[r.cached_prompt_tokens for r in requests],
        ttft_s=[r.ttft_s for r in requests],
        hit_rate=hit_rate,
    )


def _summary(values: Sequence[float | None]) -> PointSummary | None:
    known = [value for value in values if value is not None]
    return summarize(known) if known else None


def _turn(turn: int, requests: list[TurnRequest]) -> TurnFigures:
    both = [
        (r.cached_prompt_tokens, r.prompt_tokens)
        for r in requests
        if r.cached_prompt_tokens is not None and r.prompt_tokens
    ]
    prompt_sum = sum(prompt for _, prompt in both)
    return TurnFigures(
        turn=turn,
        kind=turn_kind(turn - 1),
        requests=len(requests),
        ttft_s=_summary([r.ttft_s for r in requests]),
        ttft_vs_turn_1=None,
        prompt_tokens=_summary([r.prompt_tokens for r in requests]),
        cached_tokens=_summary([r.cached_prompt_tokens for r in requests]),
        cached_share=sum(cached for cached, _ in both) / prompt_sum if prompt_sum else None,
        reported=sum(r.cached_prompt_tokens is not None for r in requests),
        tool_calls=sum(r.finish_reason == "tool_calls" for r in requests),
    )


def _reuse(sessions: list[SessionFigures]) -> tuple[float | None, ReuseVerdict, str]:
    """How much of the prompt before each later turn its cache served, over all sessions."""
    pairs = [
        (cached, previous)
        for session in sessions
        for previous, cached in zip(session.prompt_tokens, session.cached_tokens[1:], strict=False)
        if cached is not None and previous
    ]
    later = sum(len(session.prompt_tokens) - 1 for session in sessions)
    if not pairs:
        return (
            None,
            "unverified",
            f"{REUSE_PREFIX} UNVERIFIED: no reply of turns 2..T gave a cached prompt-token count "
            "(usage.prompt_tokens_details.cached_tokens, or llama.cpp's timings.cache_n), so "
            "only the TTFTs say whether the cache served them — on vLLM, start the server with "
            "--enable-prompt-tokens-details",
        )
    cached = sum(c for c, _ in pairs)
    previous = sum(p for _, p in pairs)
    share = cached / previous
    basis = f"{len(pairs)} later turns" + (
        f" (of {later}; the others gave no count)" if len(pairs) < later else ""
    )
    if share < defaults.BENCH_MULTITURN_MIN_REUSE:
        return (
            share,
            "missed",
            f"{REUSE_PREFIX} MISSED: turns 2..T found {cached} prompt tokens in the cache, "
            f"{share:.0%} of the {previous} the turn before each had sent, over {basis} — each "
            "turn was prefilled again from near its start: look for a prompt whose head changes "
            "between turns (a timestamp or request id in the system prompt, a reasoning_effort "
            "that changes, a template that rewrites earlier turns) or a cache that evicts "
            "between turns (docs/field-notes.md#prefix-cache-misses)",
        )
    return (
        share,
        "reused",
        f"{REUSE_PREFIX}: turns 2..T found {cached} prompt tokens in the cache, {share:.0%} of "
        f"the {previous} the turn before each had sent (a reply's own tokens can be cached too), "
        f"over {basis}",
    )
