"""Decide, when a generation request arrives, what the gateway will do to it and its reply."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from sparkrig import defaults
from sparkrig.gateway.config import Fault, GatewayConfig
from sparkrig.gateway.ledger import ServingLedger, TrackedRequest, cross_talk_span
from sparkrig.gateway.logprob_tokens import retext_tokens, spliced_token
from sparkrig.gateway.reasoning import ReasoningEmulation, Split
from sparkrig.gateway.request_faults import (
    Api,
    asks_logprobs,
    drop_middle_fact,
    prompt_text,
    stamped_first_message,
    truncate_context,
    without_stop,
)
from sparkrig.gateway.stops import stop_strings
from sparkrig.gateway.text_faults import (
    CountInstead,
    CutAfter,
    InsertAfter,
    LoopAfter,
    ShiftAllDigits,
    ShiftFirstDigitRun,
    SplitMultibyte,
    StrayHashes,
    SwapWords,
    SwapWordTokens,
    TextChain,
    TextTransform,
)

MARKUP = "<|im_end|>"
REPLACEMENT_CHARS = "\ufffd" * 3


class ContentPipeline:
    """One reply's text: the reasoning split (when emulated), then the content faults."""

    def __init__(
        self,
        reasoning: ReasoningEmulation | None,
        chain: TextChain,
        token_chain: TextChain | None = None,
    ) -> None:
        self.reasoning = reasoning
        self._chain = chain
        self._token_chain = token_chain

    def follow_in_tokens(self, items: list[dict[str, Any]], splice_at: int | None = None) -> None:
        """Make the logprob tokens carry what the text faults did: digit faults in the tokens,
        each splice as one extra token at `splice_at` (None: after the event's tokens)."""
        if self._token_chain is not None:
            retext_tokens(items, self._token_chain)
        at = len(items) if splice_at is None else splice_at
        items[at:at] = [spliced_token(text) for text in self._chain.take_spliced()]

    @property
    def ended(self) -> str | None:
        return (self.reasoning.ended if self.reasoning else None) or self._chain.ended

    @property
    def decapitated(self) -> bool:
        """The reply ended inside its reasoning: it has no content at all."""
        return self.reasoning is not None and self.reasoning.stopped_in_reasoning

    def feed(self, text: str) -> Split:
        if self.ended:
            return Split("", "")
        if self.reasoning is None:
            return Split("", self._chain.feed(text))
        reasoning, content = self.reasoning.feed(text)
        content = self._chain.feed(content) if content else ""
        if self.reasoning.ended and self.reasoning.in_content:
            content += self._chain.finish()  # a stop in the content ends the content here
        return Split(reasoning, content)

    def finish(self) -> Split:
        if self.ended:
            return Split("", "")
        reasoning, content = self.reasoning.finish() if self.reasoning else ("", "")
        content = self._chain.feed(content) if content else ""
        return Split(reasoning, content + self._chain.finish())


@dataclass
class ReplyPlan:
    """What happens to one reply, decided when its request arrived."""

    api: Api
    pipeline: ContentPipeline | None = None
    soften_logprobs: bool = False
    shift_logprobs: float = 0.0
    mismatch_top: bool = False
    break_tool_args: bool = False
    drop_last_word: bool = False
    merge_events: int = 0
    emulated_reasoning: bool = False
    inflate_counts: float = 0.0
    corrupt_body_under_load: bool = False
    drop: bool = False  # drop-requests: the connection is closed, nothing goes upstream

    @property
    def is_identity(self) -> bool:
        return not (
            self.pipeline
            or self.soften_logprobs
            or self.shift_logprobs
            or self.mismatch_top
            or self.break_tool_args
            or self.drop_last_word
            or self.merge_events
            or self.inflate_counts
            or self.corrupt_body_under_load
            or self.drop
        )


class Arrival(NamedTuple):
    upstream_body: dict[str, Any]
    changed: bool
    plan: ReplyPlan


def _count_factor(config: GatewayConfig, *, streamed: bool) -> float:
    """What the reply's completion counts are multiplied by (0: left alone): inflated-counts on
    every reply, undercounted-stream on streamed ones."""
    factor = 1.0
    if config.has(Fault.INFLATED_COUNTS):
        factor *= defaults.GATEWAY_INFLATE_COUNTS_FACTOR
    if streamed and config.has(Fault.UNDERCOUNTED_STREAM):
        factor *= defaults.GATEWAY_UNDERCOUNT_STREAM_FACTOR
    return 0.0 if factor == 1.0 else factor


def _content_faults(config: GatewayConfig, request: TrackedRequest) -> list[TextTransform]:
    splice_at = defaults.GATEWAY_SPLICE_AFTER_CHARS
    transforms: list[TextTransform] = []
    if config.has(Fault.CROSS_TALK) and not request.started_alone:
        source = partial(cross_talk_span, request, defaults.GATEWAY_CROSS_TALK_CHARS)
        transforms.append(InsertAfter(splice_at, source))
    transforms += _digit_faults(config, request)
    if config.has(Fault.MARKUP_LEAK):
        transforms.append(InsertAfter.fixed(splice_at, MARKUP))
    if config.has(Fault.REPLACEMENT_CHAR):
        transforms.append(InsertAfter.fixed(splice_at, REPLACEMENT_CHARS))
    if config.has(Fault.HASH_BURSTS):
        transforms.append(StrayHashes(splice_at, defaults.GATEWAY_STRAY_HASH_EVERY_WORDS))
    if config.has(Fault.COUNT_GARBAGE):
        transforms.append(CountInstead())
    if (
        config.has(Fault.DIVERGE_WHEN_FULL)
        and in_flight_at_arrival(request) >= config.full_at_requests
    ):
        transforms.append(InsertAfter.fixed(splice_at, defaults.GATEWAY_FULL_BATCH_WORD))
    if config.has(Fault.REWORD):
        transforms.append(SwapWords(defaults.GATEWAY_REWORD_WORDS))
    if config.has(Fault.CUT_REPLIES):
        transforms.append(CutAfter(defaults.GATEWAY_CUT_REPLY_CHARS))
    if config.has(Fault.LOOP):
        transforms.append(
            LoopAfter(
                defaults.GATEWAY_LOOP_KEEP_CHARS,
                defaults.GATEWAY_LOOP_SPAN_CHARS,
                defaults.GATEWAY_LOOP_MIN_CHARS,
            )
        )
    return transforms


def in_flight_at_arrival(request: TrackedRequest) -> int:
    """Generation requests in flight when `request` arrived, itself included (its neighbours
    that arrived earlier were all in flight then)."""
    return 1 + sum(n.seq < request.seq for n in request.neighbours)


def _digit_faults(config: GatewayConfig, request: TrackedRequest) -> list[TextTransform]:
    transforms: list[TextTransform] = []
    if request.block_corrupted:
        transforms.append(ShiftFirstDigitRun())
    if config.has(Fault.WRONG_ANSWERS) or request.wrong_under_load:
        transforms.append(ShiftAllDigits())
    return transforms


def _token_faults(config: GatewayConfig, request: TrackedRequest) -> list[TextTransform]:
    """The content faults the logprob tokens follow: the digit faults, and reword."""
    reword = [SwapWordTokens(defaults.GATEWAY_REWORD_WORDS)] if config.has(Fault.REWORD) else []
    return [*_digit_faults(config, request), *reword]


def prompt_in_share(prompt: str, share: float) -> bool:
    """Whether a prompt is among `share` of all prompts: its CRC-32 falls in the lowest `share`
    of the range. The same prompt is picked at every run, whatever order the traffic arrives
    in, so a fault at a share strikes the same items every time (share 1: every prompt)."""
    return zlib.crc32(prompt.encode()) < share * 2**32


def _mark_wrong_under_load(
    config: GatewayConfig, request: TrackedRequest, body: dict[str, Any], api: Api
) -> None:
    """wrong-under-load: a request that arrived beside another, when its prompt is in the
    fault's share."""
    if config.has(Fault.WRONG_UNDER_LOAD) and not request.started_alone:
        request.wrong_under_load = prompt_in_share(prompt_text(body, api), config.wrong_share)


def _mark_block_corruption(
    config: GatewayConfig, ledger: ServingLedger, req: TrackedRequest
) -> None:
    """One request per crowd of >=3 concurrent long prompts: the one that made it a crowd."""
    if not (config.has(Fault.BLOCK_CORRUPTION) and req.is_long):
        return
    crowd = ledger.long_in_flight()
    if len(crowd) >= defaults.GATEWAY_BLOCK_CORRUPTION_MIN_LONG and not any(
        other.block_corrupted for other in crowd
    ):
        req.block_corrupted = True


def _goes_soft(
    config: GatewayConfig, request: TrackedRequest, body: dict[str, Any], api: Api
) -> bool:
    """degrade-after: a lone request once enough were served; soft-body-alone: a lone
    non-streamed request, from the start; soft-chat: every chat request, alone or not. Only
    requests that asked for logprobs."""
    if config.has(Fault.SOFT_CHAT) and api == "chat" and asks_logprobs(body):
        return True
    if not (request.started_alone and asks_logprobs(body)):
        return False
    if config.has(Fault.DEGRADE_AFTER) and request.served_before >= config.after_requests:
        return True
    return config.has(Fault.SOFT_BODY_ALONE) and body.get("stream") is not True


def _drift(config: GatewayConfig, request: TrackedRequest) -> float:
    """drift-after: every reply once enough were served, alone or not, streamed or not."""
    if config.has(Fault.DRIFT_AFTER) and request.served_before >= config.after_requests:
        return defaults.GATEWAY_DRIFT_SHIFT_NATS
    return 0.0


def _context_faults(
    config: GatewayConfig, request: TrackedRequest, body: dict[str, Any], api: Api
) -> tuple[dict[str, Any], bool]:
    """The body with what truncate-context and drop-middle-fact take out of a long prompt, and
    whether anything was."""
    if not request.is_long:
        return body, False
    upstream_body, changed = body, False
    if config.has(Fault.TRUNCATE_CONTEXT):
        upstream_body, changed = truncate_context(body, api), True
    if (
        config.has(Fault.DROP_MIDDLE_FACT)
        and (dropped := drop_middle_fact(upstream_body, api)) is not None
    ):
        upstream_body, changed = dropped, True
    return upstream_body, changed


def plan_arrival(
    config: GatewayConfig,
    ledger: ServingLedger,
    request: TrackedRequest,
    body: dict[str, Any],
    api: Api,
) -> Arrival:
    """The body to send upstream and the plan for the reply. `request` has just arrived."""
    upstream_body, changed = _context_faults(config, request, body, api)
    if config.has(Fault.STAMP_FIRST_MESSAGE):
        stamp = f"[request {request.seq}] "
        upstream_body, changed = stamped_first_message(upstream_body, api, stamp), True
    reasoning = None
    if config.emulate_reasoning and api == "chat":
        stops = stop_strings(body)
        reasoning = ReasoningEmulation(
            config.reasoning_chars, stops, stop_in_reasoning=config.has(Fault.STOP_IN_REASONING)
        )
        if "stop" in upstream_body:
            upstream_body, changed = without_stop(upstream_body), True
    _mark_block_corruption(config, ledger, request)
    _mark_wrong_under_load(config, request, body, api)
    transforms = _content_faults(config, request)
    if config.has(Fault.SPLIT_MULTIBYTE) and body.get("stream") is True:
        transforms.append(SplitMultibyte())  # the streamed path: pieces decoded one by one
    pipeline = None
    if reasoning or transforms:
        # the tokens follow the digit faults and reword only when they are all content (no
        # reasoning split)
        following = _token_faults(config, request) if reasoning is None else []
        token_chain = TextChain(following) if following else None
        pipeline = ContentPipeline(reasoning, TextChain(transforms), token_chain)
    plan = ReplyPlan(
        api=api,
        pipeline=pipeline,
        soften_logprobs=_goes_soft(config, request, body, api),
        shift_logprobs=_drift(config, request),
        mismatch_top=config.has(Fault.TOP_MISMATCH),
        break_tool_args=config.has(Fault.BROKEN_TOOL_ARGS),
        drop_last_word=config.has(Fault.STREAM_MISMATCH),
        merge_events=defaults.GATEWAY_MERGE_EVENTS if config.has(Fault.MERGED_EVENTS) else 0,
        emulated_reasoning=reasoning is not None,
        inflate_counts=_count_factor(config, streamed=body.get("stream") is True),
        corrupt_body_under_load=config.has(Fault.BODY_UNDER_LOAD),
        drop=config.has(Fault.DROP_REQUESTS)
        and request.seq % defaults.GATEWAY_DROP_EVERY == defaults.GATEWAY_DROP_EVERY - 1,
    )
    return Arrival(upstream_body, changed, plan)
