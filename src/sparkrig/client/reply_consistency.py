"""A reply checked against itself: facts one reply states twice must agree.

Free to check on every reply and never wrong on a healthy server (the issue that asked for it
calls it "self-consistency"): the sampled token's logprob and its own entry among the top
alternatives come from one distribution; a reply never claims more tokens than its max_tokens
allowed, nor arrives in more content events than the tokens it claims. A reply that breaks one
was rewritten between the engine's sampler and the wire, or its numbers were computed apart from
its text.
"""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.client.endpoint import ChatRequest, CompletionRequest
from sparkrig.client.records import RequestRecord, TokenLogprob


def reply_consistency(request: ChatRequest | CompletionRequest, record: RequestRecord) -> list[str]:
    """What the reply says twice and does not agree on, each as `what — what to check`."""
    if record.error is not None:
        return []
    problems = logprob_problems(record.logprobs)
    claimed = record.completion_tokens
    if claimed is not None and request.max_tokens is not None and claimed > request.max_tokens:
        problems.append(
            f"the reply claims {claimed} completion tokens with max_tokens {request.max_tokens} "
            "— the server's usage counts more than it was allowed to generate; check the "
            "engine's usage accounting (or a proxy that rewrites it)"
        )
    events = len(record.output_events)
    if record.stream and claimed is not None and events > claimed:
        problems.append(
            f"{events} content events carried {claimed} claimed tokens — every event carries at "
            "least one token, so the count is short; check the engine's usage accounting"
        )
    return problems


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
