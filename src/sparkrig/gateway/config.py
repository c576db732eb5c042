"""What the gateway does to the traffic it proxies: the faults and the reasoning emulation."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.errors import UsageError


class Fault(StrEnum):
    """One kind of silent serving corruption; docs/gateway.md gives each trigger and its source."""

    CROSS_TALK = "cross-talk"
    BLOCK_CORRUPTION = "block-corruption"
    STOP_IN_REASONING = "stop-in-reasoning"
    MARKUP_LEAK = "markup-leak"
    REPLACEMENT_CHAR = "replacement-char"
    LOOP = "loop"
    COUNT_GARBAGE = "count-garbage"
    HASH_BURSTS = "hash-bursts"
    SOFT_CHAT = "soft-chat"
    TOP_MISMATCH = "top-mismatch"
    SPLIT_MULTIBYTE = "split-multibyte"
    DEGRADE_AFTER = "degrade-after"
    DRIFT_AFTER = "drift-after"
    MERGED_EVENTS = "merged-events"
    STREAM_MISMATCH = "stream-mismatch"
    TRUNCATE_CONTEXT = "truncate-context"
    DROP_MIDDLE_FACT = "drop-middle-fact"
    BROKEN_TOOL_ARGS = "broken-tool-args"
    WRONG_ANSWERS = "wrong-answers"
    INFLATED_COUNTS = "inflated-counts"
    UNDERCOUNTED_STREAM = "undercounted-stream"
    BODY_UNDER_LOAD = "body-under-load"
    WRONG_UNDER_LOAD = "wrong-under-load"
    CUT_REPLIES = "cut-replies"
    SOFT_BODY_ALONE = "soft-body-alone"
    DROP_REQUESTS = "drop-requests"
    DIVERGE_WHEN_FULL = "diverge-when-full"
    STAMP_FIRST_MESSAGE = "stamp-first-message"
    REWORD = "reword"


class GatewayConfig(BaseModel):
    """Every fault is deterministic: the same traffic in the same order is altered the same way."""

    faults: list[Fault] = Field(default_factory=list, description="faults to inject")
    after_requests: int = Field(
        default=defaults.GATEWAY_DEGRADE_AFTER_REQUESTS,
        ge=0,
        description="degrade-after and drift-after: generation requests served before the fault "
        "fires",
    )
    emulate_reasoning: bool = Field(
        default=False,
        description="serve the first reasoning_chars of each chat reply as reasoning_content "
        "and apply stop strings in the gateway, to the content only",
    )
    reasoning_chars: int = Field(
        default=defaults.GATEWAY_REASONING_CHARS,
        ge=1,
        description="reasoning emulation: characters of the reply served as reasoning",
    )
    long_prompt_chars: int = Field(
        default=defaults.GATEWAY_LONG_PROMPT_CHARS,
        ge=1,
        description="a prompt this long (characters) counts as long for block-corruption, "
        "truncate-context and drop-middle-fact",
    )
    full_at_requests: int = Field(
        default=defaults.GATEWAY_FULL_AT_REQUESTS,
        ge=2,
        description="diverge-when-full: a reply changes when its request arrives with this many "
        "generation requests in flight, itself included (the server's slots)",
    )
    wrong_share: float = Field(
        default=defaults.GATEWAY_WRONG_UNDER_LOAD_SHARE,
        gt=0,
        le=1,
        description="wrong-under-load: the share of prompts whose replies are altered when "
        "their request arrived beside another, chosen by the prompt's CRC-32 so the same "
        "prompts are struck at every run (1: every one)",
    )
    seed: int = Field(
        default=0,
        description="seed for any randomness a fault draws; the faults of today draw none and "
        "choose by arrival order instead",
    )

    def has(self, fault: Fault) -> bool:
        return fault in self.faults


def parse_faults(text: str) -> list[Fault]:
    """`cross-talk,loop` -> [Fault.CROSS_TALK, Fault.LOOP]; an unknown name is a UsageError."""
    faults: list[Fault] = []
    for name in (part.strip() for part in text.split(",")):
        if not name:
            continue
        try:
            faults.append(Fault(name))
        except ValueError:
            known = ", ".join(fault.value for fault in Fault)
            raise UsageError(f"--inject {name!r} is not a fault — use one of {known}") from None
    return faults
