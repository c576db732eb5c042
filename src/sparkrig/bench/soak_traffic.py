"""What a soak sends: agent-like mixed traffic (tool calls, structured JSON, code, long-context
summaries, prose; mixed temperatures and token budgets), or a recorded workload replayed in
order. Pure and deterministic: request n of a seed is always the same request, and a record
with prefix blocks (a Mooncake trace's hash_ids) always gets the same filler per block id."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Literal

from sparkrig import defaults
from sparkrig.client.endpoint import ChatRequest, CompletionRequest
from sparkrig.client.request_parts import PERSON_FORMAT, WEATHER_TOOL
from sparkrig.outside_numbers import count_or_none, number_or_none
from sparkrig.wire.workload_log import WorkloadRecord

Kind = Literal["tool_call", "json", "code", "summary", "prose", "replay"]
KINDS: Final[tuple[Kind, ...]] = ("tool_call", "json", "code", "summary", "prose")

_CITIES = ("Paris", "Lagos", "Osaka", "Lima", "Oslo", "Perth", "Quito")
_CODE_TASKS = (
    "reverses a linked list",
    "parses an ISO date",
    "merges two sorted lists",
    "counts words in a file",
    "checks if a string is a palindrome",
)
_TOPICS = ("lighthouses", "bread making", "tides", "old maps", "bees", "glaciers", "trains")
_FACTS = (
    "The committee met on {n} occasions to review the harbour budget.",
    "Shipments of grain rose by {n} percent after the new pier opened.",
    "A survey of {n} residents found most wanted longer ferry hours.",
    "The storm in week {n} closed the eastern breakwater for repairs.",
    "Engineers proposed {n} changes to the dredging schedule.",
)


@dataclass(frozen=True)
class PlannedRequest:
    request_id: str
    kind: Kind
    request: ChatRequest | CompletionRequest


def document(n: int, sentences: int = 40) -> str:
    """Plain report prose of `sentences` sentences (about 12 tokens each), the n-th document."""
    return " ".join(_FACTS[(n + i) % len(_FACTS)].format(n=n + i) for i in range(sentences))


def city(pick: int) -> str:
    """The city the pick-th weather question asks about (a tool call's argument)."""
    return _CITIES[pick % len(_CITIES)]


def task_prompt(kind: Kind, pick: int) -> str:
    """The user's text of one request of `kind`, the pick-th of its kind (the multi-turn bench
    suite asks the same questions turn by turn)."""
    if kind == "tool_call":
        return f"What is the weather in {city(pick)}? Use the tool."
    if kind == "json":
        return "Give a person's name and age as JSON."
    if kind == "code":
        return f"Write a Python function that {_CODE_TASKS[pick % len(_CODE_TASKS)]}."
    if kind == "summary":
        return f"{document(pick)}\n\nSummarise the document above in three sentences."
    return f"Write a short paragraph about {_TOPICS[pick % len(_TOPICS)]}."


def mixed_request(
    model: str, n: int, seed: int = 0, kinds: Sequence[Kind] = KINDS
) -> PlannedRequest:
    """Request n of the mixed traffic, cycling over `kinds` (all of KINDS unless a kind the
    server does not serve is left out)."""
    kind = kinds[(n + seed) % len(kinds)]
    budget = defaults.SOAK_MAX_TOKENS[(n // len(kinds) + seed) % len(defaults.SOAK_MAX_TOKENS)]
    temperature = defaults.SOAK_TEMPERATURES[(n + seed) % len(defaults.SOAK_TEMPERATURES)]
    pick = n // len(kinds)
    extra: dict[str, Any] = {}
    tools = None
    prompt = task_prompt(kind, pick)
    if kind == "tool_call":
        tools, budget = [WEATHER_TOOL], 64
    elif kind == "json":
        extra["response_format"], budget = PERSON_FORMAT, 64
    request = ChatRequest(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        tools=tools,
        max_tokens=budget,
        temperature=temperature,
        extra=extra,
    )
    return PlannedRequest(f"soak-{seed}-{n}", kind, request)


def mixed_traffic(
    model: str, seed: int = 0, kinds: Sequence[Kind] = KINDS
) -> Iterator[PlannedRequest]:
    n = 0
    while True:
        yield mixed_request(model, n, seed, kinds)
        n += 1


def tool_call_probe(model: str) -> PlannedRequest:
    """The mix's first tool-call request on a short budget: sent once before a mixed soak, to
    learn whether the server serves tool calls at all (bench/soak_tool_probe.py)."""
    request = ChatRequest(
        model=model,
        messages=[{"role": "user", "content": task_prompt("tool_call", 0)}],
        tools=[WEATHER_TOOL],
        max_tokens=defaults.SOAK_TOOL_PROBE_MAX_TOKENS,
        temperature=0.0,
    )
    return PlannedRequest("soak-tool-probe", "tool_call", request)


# common words of one token each in the usual tokenizers, so filler of n words is ~n tokens
_FILLER = (
    "time",
    "people",
    "year",
    "way",
    "day",
    "thing",
    "man",
    "world",
    "life",
    "hand",
    "part",
    "child",
    "eye",
    "woman",
    "place",
    "work",
    "week",
    "case",
    "point",
    "number",
    "group",
)
# params a replay sets itself, or that only made sense for the recorded connection
_REPLAY_OWN = frozenset(
    (
        "model",
        "stream",
        "max_tokens",
        "temperature",
        "tools",
        "stream_options",
        "messages",
        "prompt",
        "timings_per_token",
    )
)


@lru_cache(maxsize=4096)
def block_filler(block_id: int, words: int) -> str:
    """`words` filler words for prefix block `block_id`: drawn from a generator seeded by the id
    alone, so every record naming the block sends the same text, and two blocks part at once."""
    draw = random.Random(f"block/{block_id}")  # noqa: S311 - reproducible filler, not a secret
    return " ".join(draw.choice(_FILLER) for _ in range(words))


def prefix_filler(blocks: list[int], block_words: int, total_words: int) -> str:
    """A prompt of `total_words` built block by block: each block `block_words` words of its own
    filler, the last block the rest (as aiperf builds a Mooncake prompt from its hash_ids)."""
    last = max(total_words - (len(blocks) - 1) * block_words, 1)
    parts = [block_filler(block, block_words) for block in blocks[:-1]]
    return " ".join([*parts, block_filler(blocks[-1], min(last, block_words))])


def replay_request(model: str, record: WorkloadRecord, n: int) -> PlannedRequest:
    """A recorded request again: its prompt when it was recorded, otherwise filler text of
    about its size (the prompt's length and the budget are what load the server); a record with
    prefix blocks gets filler built block by block, so shared blocks are a shared prefix."""
    params = record.params
    # a workload log is a file from outside: its numbers are checked, an odd one reads as absent
    max_tokens = count_or_none(params.get("max_tokens")) or record.completion_tokens or 128
    extra = {k: v for k, v in params.items() if k not in _REPLAY_OWN}
    words = record.prompt_tokens or max(record.prompt_chars // 4, 8)
    if record.prefix_blocks and record.prefix_block_tokens:
        filler = prefix_filler(record.prefix_blocks, record.prefix_block_tokens, words)
    else:
        filler = " ".join(_FILLER[i % len(_FILLER)] for i in range(words))
    common: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": record.stream,
        "temperature": number_or_none(params.get("temperature")),
        "extra": extra,
    }
    request: ChatRequest | CompletionRequest
    if record.api == "completions":
        prompt = record.prompt if record.prompt is not None else filler
        request = CompletionRequest(prompt=prompt, **common)
    else:
        messages = record.messages or [{"role": "user", "content": filler}]
        tools = params.get("tools") if isinstance(params.get("tools"), list) else None
        request = ChatRequest(messages=messages, tools=tools, **common)
    return PlannedRequest(f"replay-{n}-{record.request_id}"[:120], "replay", request)


def replayed_traffic(model: str, records: list[WorkloadRecord]) -> Iterator[PlannedRequest]:
    """The records in order, from the start again when they run out."""
    n = 0
    while True:
        yield replay_request(model, records[n % len(records)], n)
        n += 1
