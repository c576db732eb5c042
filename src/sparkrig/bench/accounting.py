"""Token accounting: a server's completion counts are checked, never trusted.

A server that reports more tokens than it generated inflates every tok/s figure, and the
project exists because throughput numbers lie under speculative decoding. A count is judged
only against an exact witness, each a pure function from numbers to a finding (one line, with
both numbers); any finding makes the point invalid:

- logprobs: a reply that asked for them carries one entry per generated token, several in one
  chunk under speculative decoding; llama.cpp leaves some out, `withheld_entries` bounds the
  countable ones and `uncounted_entries` says when the rest make the witness abstain; one
  witness request per point asks (bench/count_witness.py), the timed requests never do
  (logprobs change the speed measured);
- the request: no more than `max_tokens`, and exactly `max_tokens` when the reply ran to
  `length` (client/reply_consistency.py, the same rules every guard's reply meets);
- the stream: no more content events than claimed tokens, as every event carries one or more;
- `/metrics`: the sample's claimed total must not exceed what the server's counter says it
  generated (the other direction, more generated than claimed, is foreign traffic and handled
  by the point as a discarded sample).

The text re-tokenized by the server's own `/tokenize` is recorded beside the claimed count but
judges nothing: a model may emit a token sequence that is not the canonical tokenization of its
own text (vLLM 0.26.0 claimed 128 tokens, its /metrics counted 128, the text re-tokenized to
119), so a difference is a note with both numbers. The re-tokenizing runs after a sample's
requests have finished and its /metrics are read, outside the timed window.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from sparkrig import defaults
from sparkrig.client import EndpointClient, RequestRecord
from sparkrig.client.reply_consistency import events_finding, max_tokens_finding
from sparkrig.client.tokenize import server_tokenize
from sparkrig.errors import EndpointError

CountText = Callable[[str], Awaitable[int]]
"""How many tokens a text holds, by the server's own tokenizer."""


def count_tolerance(claimed: int) -> int:
    """Tokens by which a re-tokenized count, or a /metrics counter, may differ from the claimed
    count before it is worth a line (docs/metrics.md)."""
    relative = math.ceil(defaults.BENCH_TOKEN_COUNT_TOLERANCE * claimed)
    return max(defaults.BENCH_TOKEN_COUNT_SLACK, relative)


def reply_text(record: RequestRecord) -> str:
    """Everything the server generated as text: reasoning, then content."""
    return record.reasoning + record.content


def text_count_note(claimed: int | None, retokenized: int | None) -> str | None:
    """A note, never a finding, when the claimed count and the text's re-tokenized count differ
    by more than the tolerance: the model's tokens need not be its text's canonical ones."""
    if claimed is None or retokenized is None:
        return None
    if abs(claimed - retokenized) <= count_tolerance(claimed):
        return None
    return (
        f"re-tokenized: the server claimed {claimed} completion tokens, its text re-tokenizes to "
        f"{retokenized} (a note, not a count check)"
    )


def metrics_count_finding(claimed_total: int, generated: float | int | None) -> str | None:
    """A finding when the requests claim more tokens than the server's counter generated."""
    if generated is None:
        return None
    tolerance = count_tolerance(claimed_total)
    if claimed_total - generated <= tolerance:
        return None
    return (
        f"token count: the replies claimed {claimed_total} completion tokens, the server's "
        f"/metrics counted {generated:.0f} generated (tolerance {tolerance})"
    )


def withheld_entries(text: str, finish_reason: str | None) -> int:
    """Logprobs entries an honest engine may leave out of a reply of this text, all of them
    llama.cpp's (tools/server/server-context.cpp): a token whose text ends inside a UTF-8
    character is held back and has no entry (the next token's carries the whole character), at
    most one per byte of a multi-byte character past its first; on a streamed chat, the stop
    token of a reply that ended on `stop` changes no text and is sent in no chunk. 0 for an
    ASCII reply that ran to its length: there the witness is exact."""
    return len(text.encode()) - len(text) + (1 if finish_reason == "stop" else 0)


def uncounted_entries(bare_events: int, output_events: int, reasoning: bool) -> str | None:
    """Why a reply's missing logprobs entries cannot be counted, when its own shape shows the
    engine left out entries that `withheld_entries` does not bound: output events that carried
    no entry (llama.cpp gives none to the tokens its speculative decoding accepted), or
    reasoning split from the text (a chat parser that holds markup back sends no chunk for it,
    so no entry). None: every missing entry is accounted for."""
    if bare_events:
        return (
            f"{bare_events} of {output_events} output events carried no logprobs entry "
            "(llama.cpp gives none to the tokens its speculative decoding accepts)"
        )
    if reasoning:
        return (
            "the reply's reasoning was split from its text (a chat parser that holds markup "
            "back sends no chunk, so no entry, for it)"
        )
    return None


def logprobs_count_finding(claimed: int | None, entries: int, withheld: int = 0) -> str | None:
    """A finding when a reply that asked for logprobs carries another number of entries than
    the completion tokens it claims: one entry per generated token, exactly, less at most
    `withheld` (`withheld_entries`). None when there is nothing to compare (no count, or no
    logprobs came back: the point warns instead)."""
    if claimed is None or not entries or entries <= claimed <= entries + withheld:
        return None
    allowed = f"; up to {withheld} may be withheld for its text" if withheld else ""
    return (
        f"token count: the server claimed {claimed} completion tokens, its reply carried "
        f"{entries} logprobs entries (one per generated token{allowed})"
    )


@dataclass(frozen=True)
class ReplyCount:
    """The numbers of one reply that accounting reads."""

    claimed: int | None
    max_tokens: int | None
    finish_reason: str | None
    retokenized: int | None = None
    events: int | None = None  # content events of a streamed reply; None when not streamed


@dataclass
class CountVerdict:
    findings: list[str] = field(default_factory=list)  # exact witnesses broken: invalid
    notes: list[str] = field(default_factory=list)  # re-tokenized text: recorded only


def judge_counts(replies: Sequence[ReplyCount], generated: float | int | None) -> CountVerdict:
    """One sample's replies against their max_tokens and the sample's /metrics delta
    (`generated`, None without /metrics); their re-tokenized texts give notes."""
    verdict = CountVerdict()
    for index, reply in enumerate(replies):
        where = f"request {index + 1} of {len(replies)}: " if len(replies) > 1 else ""
        found = [
            max_tokens_finding(reply.claimed, reply.max_tokens, reply.finish_reason),
            events_finding(reply.claimed, reply.events),
        ]
        verdict.findings += [where + finding for finding in found if finding is not None]
        note = text_count_note(reply.claimed, reply.retokenized)
        if note is not None:
            verdict.notes.append(where + note)
    claimed_total = sum(reply.claimed or 0 for reply in replies)
    if (finding := metrics_count_finding(claimed_total, generated)) is not None:
        verdict.findings.append(finding)
    return verdict


async def retokenized_counts(
    records: Sequence[RequestRecord], count_text: CountText
) -> tuple[list[int | None], str | None]:
    """Each reply's text re-tokenized (None where it has no claimed count to set beside), and
    the first failure's message, if a text could not be counted."""
    counts: list[int | None] = []
    failure = None
    for record in records:
        count = None
        if record.completion_tokens is not None:
            try:
                count = await count_text(reply_text(record))
            except EndpointError as exc:
                failure = failure or str(exc)
        counts.append(count)
    return counts, failure


def server_text_counter(client: EndpointClient, model: str) -> CountText:
    async def count(text: str) -> int:
        return len(await server_tokenize(client, model, text)) if text else 0

    return count
