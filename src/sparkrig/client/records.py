"""What one request to an endpoint produced, and the timings derived from it.

All clocks are `time.perf_counter_ns()` of this process. Definitions live in docs/metrics.md.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from sparkrig.outside_numbers import count_or_none
from sparkrig.wire.server_error import ServerError

RECORD_SCHEMA_VERSION = 1
NS_PER_S = 1_000_000_000

TokenSource = Literal["per_event_usage", "per_event_timings", "final_usage", "events_only"]
"""Where token counts came from.

- per_event_usage: the server sent cumulative `usage` on every chunk (vLLM continuous_usage_stats)
- per_event_timings: the server sent cumulative `timings.predicted_n` on every chunk (llama.cpp)
- final_usage: only the total in the last chunk; per-event counts are unknown
- events_only: no token counts at all; events are NOT tokens and no rate is derived
"""

ErrorKind = Literal[
    "connect", "timeout", "http_status", "non_json", "stream_cut", "protocol", "malformed"
]
"""`malformed`: a reply field of the wrong type (`wire.openai.MalformedField`)."""
ReasoningSource = Literal["reasoning_content", "reasoning", "think_tags"]


class RequestError(BaseModel):
    kind: ErrorKind
    message: str = Field(description="what happened — how to fix it")
    status: int | None = Field(default=None, description="HTTP status, when one came back")
    body: str | None = Field(default=None, description="start of the response body")
    server: ServerError | None = Field(
        default=None,
        description="the server's own error (its text, type and code) when an error body or "
        "event came back",
    )


class SseEvent(BaseModel):
    """One server-sent event that carried a choice delta or usage."""

    t_ns: int = Field(description="perf_counter_ns when the block completing the event arrived")
    tokens: int | None = Field(
        default=None, description="tokens this event carried, from server counts; None if unknown"
    )
    content_chars: int = 0
    reasoning_chars: int = 0
    logprob_entries: int = Field(
        default=0, description="per-token logprobs the event carried (when the request asked)"
    )
    tool_call: bool = False
    finish_reason: str | None = None

    @property
    def carries_output(self) -> bool:
        return carries_output(self.tokens, self.content_chars, self.reasoning_chars, self.tool_call)


def carries_output(
    tokens: int | None, content_chars: int, reasoning_chars: int, tool_call: bool
) -> bool:
    """Whether an event carried output: by the server's count when there is one."""
    if tokens is not None:
        return tokens > 0
    return bool(content_chars or reasoning_chars or tool_call)


class TopLogprob(BaseModel):
    token: str
    logprob: float


class TokenLogprob(BaseModel):
    token: str
    logprob: float | None = Field(description="None where the server gave none (echoed prompt)")
    top: list[TopLogprob] = Field(default_factory=list)


class Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    reasoning_tokens: int | None = None


class RequestRecord(BaseModel):
    """The full account of one request: timing, output, token counts and any error."""

    schema_version: int = RECORD_SCHEMA_VERSION
    url: str
    api: Literal["chat", "completions"]
    stream: bool
    model: str
    send_ns: int
    response_ns: int | None = Field(default=None, description="response headers received")
    first_byte_ns: int | None = Field(default=None, description="first body bytes received")
    first_token_ns: int | None = Field(default=None, description="first token of any kind")
    first_content_ns: int | None = Field(default=None, description="first answer (content) token")
    end_ns: int | None = None
    events: list[SseEvent] = Field(default_factory=list)
    token_source: TokenSource | None = None
    content: str = ""
    reasoning: str = ""
    reasoning_source: ReasoningSource | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    logprobs: list[TokenLogprob] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    server_timings: dict[str, Any] | None = Field(
        default=None, description="llama.cpp's own `timings` object from the last chunk"
    )
    error: RequestError | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def output_events(self) -> list[SseEvent]:
        return [event for event in self.events if event.carries_output]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def completion_tokens(self) -> int | None:
        """Generated tokens as the server counted them; None when it gave no count."""
        if self.usage is not None and self.usage.completion_tokens is not None:
            return self.usage.completion_tokens
        counted = [event.tokens for event in self.events if event.tokens is not None]
        if self.token_source in ("per_event_usage", "per_event_timings") and counted:
            return sum(counted)
        return None

    @property
    def cached_prompt_tokens(self) -> int | None:
        """Prompt tokens the server served from its prefix cache: `usage.prompt_tokens_details.
        cached_tokens` (llama.cpp; vLLM with --enable-prompt-tokens-details), else llama.cpp's
        `timings.cache_n`; None when the reply carries neither, never 0 for unknown."""
        if self.usage is not None and self.usage.cached_prompt_tokens is not None:
            return self.usage.cached_prompt_tokens
        return count_or_none((self.server_timings or {}).get("cache_n"))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ttft_s(self) -> float | None:
        """Time to first token of any kind, reasoning included."""
        return _seconds(self.send_ns, self.first_token_ns)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ttfot_s(self) -> float | None:
        """Time to first output (answer) token, after any reasoning."""
        return _seconds(self.send_ns, self.first_content_ns)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def e2e_s(self) -> float | None:
        return _seconds(self.send_ns, self.end_ns)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def decode_tps(self) -> float | None:
        """Decode rate from server token counts: tokens after the first output event, divided by
        the time from the first to the last output event. None when it cannot be honest: fewer
        than 2 output events, or no server token count."""
        events = self.output_events
        total = self.completion_tokens
        if len(events) < 2 or total is None:
            return None
        first_tokens = events[0].tokens if events[0].tokens is not None else 1
        span_ns = events[-1].t_ns - events[0].t_ns
        if span_ns <= 0:
            return None
        return (total - first_tokens) * NS_PER_S / span_ns

    def inter_token_latencies_s(self) -> list[float] | None:
        """ITL per token: each gap between output events shared by the tokens the later event
        carried. None when per-event token counts are unknown (events are not tokens)."""
        events = self.output_events
        if any(event.tokens is None for event in events):
            return None
        latencies: list[float] = []
        for before, after in itertools.pairwise(events):
            count = after.tokens or 0
            gap_s = (after.t_ns - before.t_ns) / NS_PER_S
            latencies.extend([gap_s / count] * count)
        return latencies

    @property
    def tokens_per_event(self) -> float | None:
        """Mean tokens per output event; above 1 under speculative decoding on vLLM."""
        events = self.output_events
        total = self.completion_tokens
        return total / len(events) if events and total is not None else None


def _seconds(start_ns: int, end_ns: int | None) -> float | None:
    return None if end_ns is None else (end_ns - start_ns) / NS_PER_S
