"""A reply checked against itself: facts one reply states twice must agree.

Free to check on every reply and never wrong on a healthy server (the issue that asked for it
calls it "self-consistency"): the sampled token's logprob and its own entry among the top
alternatives come from one distribution; a reply never claims more tokens than its max_tokens
allowed, never stops by length short of it, nor arrives in more content events than the tokens
it claims. A reply that breaks one was rewritten between the engine's sampler and the wire, or
its numbers were computed apart from its text.
"""

from __future__ import annotations

import math

from sparkrig import defaults
from sparkrig.client.endpoint import ChatRequest, CompletionRequest
from sparkrig.client.records import RequestRecord, TokenLogprob, carries_output


def reply_consistency(
    request: ChatRequest | CompletionRequest,
    record: RequestRecord,
    context_tokens: int | None = None,
) -> list[str]:
    """What the reply says twice and does not agree on, each as `what — what to check`.
    `context_tokens`: the server's context per request, where it says (a reply the context
    ended stops by length short of its max_tokens, honestly)."""
    if record.error is not None:
        return []
    return logprob_problems(record.logprobs) + count_problems(request, record, context_tokens)


def count_problems(
    request: ChatRequest | CompletionRequest,
    record: RequestRecord,
    context_tokens: int | None = None,
) -> list[str]:
    """The reply's usage against its request and its own stream."""
    claimed = record.completion_tokens
    found = [
        max_tokens_finding(
            claimed,
            request.max_tokens,
            record.finish_reason,
            room=context_room(context_tokens, record.usage.prompt_tokens if record.usage else None),
        ),
        events_finding(claimed, streamed_events(record)),
    ]
    return [finding for finding in found if finding is not None]


def context_room(context_tokens: int | None, prompt_tokens: int | None) -> int | None:
    """The tokens a reply had room for after its prompt in the server's context; None when
    either number is unknown."""
    if context_tokens is None or prompt_tokens is None:
        return None
    return max(context_tokens - prompt_tokens, 0)


def max_tokens_finding(
    claimed: int | None,
    max_tokens: int | None,
    finish_reason: str | None,
    room: int | None = None,
) -> str | None:
    """A finding when the claimed count breaks the request's `max_tokens`: more than asked, or
    fewer when the reply says it ran to length and the context (`room`: what it left the
    reply, where known) did not end it first."""
    if claimed is None or max_tokens is None:
        return None
    if claimed > max_tokens:
        return (
            f"token count: the server claimed {claimed} completion tokens for max_tokens "
            f"{max_tokens}"
        )
    ended_by_context = room is not None and claimed >= room - defaults.REPLY_CONTEXT_END_SLACK
    if finish_reason == "length" and claimed < max_tokens and not ended_by_context:
        return (
            f"token count: the reply ran to length at {claimed} completion tokens, under its "
            f"max_tokens {max_tokens} — a wrong count, or the context ended the reply (ask for "
            "fewer tokens or give the server more context)"
        )
    return None


def streamed_events(record: RequestRecord) -> int | None:
    """The events of a streamed reply that carried text (content, reasoning or a tool call);
    None when it was not streamed. Counted by what they carry, not by the server's per-event
    counts: a server that under-reports shows its low count on every event too (an event with
    text and a zero count), and would hide behind it."""
    if not record.stream:
        return None
    return sum(
        1
        for event in record.events
        if carries_output(None, event.content_chars, event.reasoning_chars, event.tool_call)
    )


def events_finding(claimed: int | None, events: int | None) -> str | None:
    """A finding when a streamed reply came in more text events than the tokens it claims,
    past the allowance (REPLY_EXTRA_EVENTS, REPLY_EXTRA_EVENTS_SHARE): every token is at most
    one decode step, and every step one event, but llama-server sends one chunk per message
    diff, so a token that closes the reasoning and opens the content comes as two."""
    if claimed is None or events is None:
        return None
    allowed = claimed + max(
        defaults.REPLY_EXTRA_EVENTS, math.ceil(claimed * defaults.REPLY_EXTRA_EVENTS_SHARE)
    )
    if events <= allowed:
        return None
    return (
        f"token count: {events} content events carried {claimed} claimed tokens (at most "
        f"{allowed} allowed) — every event carries at least one token, so the count is short; "
        "check the engine's usage accounting"
    )


def logprob_problems(logprobs: list[TokenLogprob]) -> list[str]:
    """The sampled token's logprob against its own top_logprobs entry (the first that differs).

    Not judged: whether the sampled token is the most likely at temperature 0. vLLM reports the
    raw distribution by default while its sampler applies the model's generation_config (a
    repetition penalty, say), so an honest greedy server may pick another token than the top."""
    tolerance = defaults.REPLY_LOGPROB_TOLERANCE_NATS
    own_entry = None
    for position, token in enumerate(logprobs):
        chosen = token.logprob
        if chosen is None or not token.top:
            continue
        same = [top.logprob for top in token.top if top.token == token.token]
        closest = min(same, key=lambda value: abs(value - chosen), default=None)
        if own_entry is None and closest is not None and abs(closest - chosen) > tolerance:
            own_entry = (
                f"token {position} ({token.token!r}) has logprob {chosen:.4f} but "
                f"{closest:.4f} in its own top_logprobs — the two come from one distribution, "
                "so one of them was rewritten after sampling; check any proxy between client "
                "and engine, then the engine's logprob path"
            )
    return [own_entry] if own_entry is not None else []
