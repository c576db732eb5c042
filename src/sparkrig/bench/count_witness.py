"""The logprobs witness: one reply per point that asked for logprobs, its entries counted.

A reply that asks for logprobs carries one entry per generated token (several in one chunk
under speculative decoding), so its entries are an exact count to set beside the completion
tokens it claims. Asking changes the speed (the server computes and sends a distribution per
token), so the timed requests never ask: after a point's first kept sample, outside the timed
window, one request of the same shape as the point's goes out with logprobs on.

Exact for the replies the bench asks for (ASCII text run to `max_tokens`); llama.cpp leaves out
the entries of tokens that end inside a multi-byte character and, on a streamed chat, of the
stop token, and those few are allowed (`accounting.withheld_entries`), no more. Where the reply
shows that entries were left out uncountably (`accounting.uncounted_entries`: llama.cpp's
speculative decoding, a chat parser's reasoning split), a short count of entries judges
nothing and the point says so.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.bench.accounting import (
    logprobs_count_finding,
    reply_text,
    uncounted_entries,
    withheld_entries,
)
from sparkrig.client import ChatRequest, CompletionRequest, EndpointClient, RequestRecord
from sparkrig.client.reply_consistency import logprob_problems, max_tokens_finding

Request = ChatRequest | CompletionRequest


class CountWitness(BaseModel):
    """One witness reply's numbers and what they found."""

    claimed: int | None = Field(
        default=None, description="completion tokens the server claimed for the witness reply"
    )
    logprob_entries: int = Field(
        default=0,
        description="logprobs entries the reply carried, one per generated token; 0: the "
        "server returned no logprobs and nothing was witnessed",
    )
    withheld_allowance: int = Field(
        default=0,
        description="entries an honest engine may leave out of this reply (llama.cpp: a token "
        "ending inside a multi-byte character, a chat reply's stop token); 0: exact",
    )
    max_tokens: int | None = Field(default=None, description="the witness request's max_tokens")
    finish_reason: str | None = None
    findings: list[str] = Field(
        default_factory=list,
        description="counts the witness does not hold: its logprobs entries or its max_tokens",
    )
    uncounted: str | None = Field(
        default=None,
        description="why the reply's entries fell short of its claim by a number no allowance "
        "counts (the engine left entries out): the entries judged nothing",
    )
    error: str | None = Field(default=None, description="why the witness request failed")
    inconsistent: list[str] = Field(
        default_factory=list,
        description="what the witness reply says twice and does not agree on: its sampled "
        "logprob against its own top entry (client/reply_consistency.py)",
    )

    @property
    def read(self) -> bool:
        """Whether the witness could be read: a reply, with logprobs that can be counted."""
        return self.error is None and self.logprob_entries > 0 and self.uncounted is None


def witness_request(request: Request) -> Request:
    """The same request with logprobs on (the fewest alternatives every engine returns), and
    without its tools: the pinned llama.cpp refuses logprobs on a streamed chat with tools (HTTP
    400 "logprobs is not supported with tools + stream"), and the count a witness checks is the
    server's count of a reply, which the tools do not change (the multiturn suite sends them)."""
    update: dict[str, object] = {"logprobs": defaults.BENCH_WITNESS_TOP_LOGPROBS}
    if isinstance(request, ChatRequest) and request.tools:
        update["tools"] = None
    return request.model_copy(update=update)


def judge_witness(request: Request, record: RequestRecord) -> CountWitness:
    """A witness reply's claimed count against its logprobs entries and its max_tokens."""
    witness = CountWitness(
        claimed=record.completion_tokens,
        logprob_entries=len(record.logprobs),
        withheld_allowance=withheld_entries(reply_text(record), record.finish_reason),
        max_tokens=request.max_tokens,
        finish_reason=record.finish_reason,
        error=record.error.message if record.error is not None else None,
    )
    if witness.error is not None:
        return witness
    witness.inconsistent = logprob_problems(record.logprobs)
    checks = [max_tokens_finding(witness.claimed, witness.max_tokens, witness.finish_reason)]
    short = witness.claimed is not None and witness.logprob_entries < witness.claimed
    if short and witness.logprob_entries:
        events = record.output_events
        bare = sum(1 for event in events if not event.logprob_entries)
        witness.uncounted = uncounted_entries(bare, len(events), bool(record.reasoning))
    if witness.uncounted is None:
        checks.insert(
            0,
            logprobs_count_finding(
                witness.claimed, witness.logprob_entries, witness.withheld_allowance
            ),
        )
    witness.findings = [f"logprobs witness: {finding}" for finding in checks if finding]
    return witness


def unread_warning(witness: CountWitness) -> str:
    """The point's warning when its witness could not be read (never a reason to be invalid)."""
    if witness.uncounted is not None:
        return (
            f"counts not witnessed by logprobs: {witness.claimed} claimed, "
            f"{witness.logprob_entries} entries, and {witness.uncounted} — max_tokens and "
            "/metrics still check them"
        )
    why = (
        f"its request failed: {witness.error}"
        if witness.error is not None
        else "the server returned no logprobs"
    )
    return (
        f"counts not witnessed by logprobs: {why} — max_tokens and /metrics still check them; "
        "serve with logprobs allowed (vLLM: --max-logprobs 1 or more)"
    )


async def take_witness(client: EndpointClient, request: Request) -> CountWitness:
    """Send `request` again with logprobs on and judge its reply."""
    asked = witness_request(request)
    return judge_witness(asked, await client.send(asked))
