"""The multiturn suite's conversations, and the sender that grows them turn by turn.

Agent traffic is multi-turn: every turn re-sends the whole conversation so far plus a new
message, and a server with a prefix cache should serve most of turn N's prompt from what turn
N-1 left (the field's turn 1 / turn 2 TTFT: 4.13 s / 0.80 s, docs/field-notes.md#multi-turn-ttft).
A sample is K conversations of T turns. Each opens with a system message that starts with its
own salt and holds a document, so no two conversations (nor two runs) share more than a
template's head; vLLM also gets the salt as `cache_salt`, constant within a conversation. The
turns cycle through the shapes agents send (the soak's requests, bench/soak_traffic.py): a tool
call, the tool's result, a code task, a prose task; the tool definition goes with every turn,
as agents send it (a tools block that came and went would rewrite the prompt's head).

The turns of a conversation go in order, each built when the one before has been answered: the
model's own reply (its text and tool calls) is appended before the next message, so the prompt
grows by what the server really said. Conversations run side by side, `parallel` at a time.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

from sparkrig import defaults
from sparkrig.bench.client_shards import ClientLoad, Request, queued_ns
from sparkrig.bench.settings import BenchSettings
from sparkrig.bench.soak_traffic import city, document, task_prompt
from sparkrig.client import ChatRequest, EndpointClient, RequestRecord
from sparkrig.client.request_parts import WEATHER_TOOL

TurnKind = Literal["tool_call", "tool_result", "code", "prose"]
TURN_KINDS: Final[tuple[TurnKind, ...]] = ("tool_call", "tool_result", "code", "prose")
WEATHER_TOOL_NAME: Final = "get_weather"


def turn_kind(turn: int) -> TurnKind:
    """The shape of turn `turn` (0 for the first) of every conversation."""
    return TURN_KINDS[turn % len(TURN_KINDS)]


def weather_result(conversation: int) -> str:
    """What the weather tool "returned" in a conversation: fixed, so only the model varies."""
    return json.dumps({"city": city(conversation), "temperature_c": 17, "sky": "overcast"})


def opening(conversation: int, salt: str, opening_tokens: int) -> dict[str, Any]:
    """The system message a conversation starts with: its salt first, then a document of about
    `opening_tokens` tokens the later turns may refer to."""
    sentences = max(1, opening_tokens // defaults.BENCH_MULTITURN_SENTENCE_TOKENS)
    return {
        "role": "system",
        "content": f"Session {salt}. You are a concise assistant for a harbour office. Use the "
        f"tools when asked. Reference notes:\n{document(conversation * 7, sentences)}",
    }


def turn_message(kind: TurnKind, conversation: int) -> dict[str, Any]:
    """The new message of a turn. A tool result is a `tool` message whose `tool_call_id` the
    sender fills from the reply before it (`followed`)."""
    if kind == "tool_result":
        return {"role": "tool", "content": weather_result(conversation)}
    return {"role": "user", "content": task_prompt(kind, conversation)}


def conversation_requests(model: str, settings: BenchSettings) -> Callable[[], list[ChatRequest]]:
    """A sample's requests, conversation after conversation, turn after turn: request k·T + n is
    turn n of conversation k. Each holds only its turn's new messages until the sender prepends
    the conversation so far; each sample's conversations get fresh salts."""

    def make() -> list[ChatRequest]:
        requests = []
        for conversation in range(settings.conversations):
            salt = f"{random.getrandbits(64):016x}"
            for turn in range(settings.turns):
                first = [opening(conversation, salt, settings.opening_tokens)] if turn == 0 else []
                requests.append(
                    ChatRequest(
                        model=model,
                        messages=[*first, turn_message(turn_kind(turn), conversation)],
                        tools=[WEATHER_TOOL],
                        max_tokens=settings.decode_tokens,
                        temperature=0.0,
                        extra={"cache_salt": salt},
                    )
                )
        return requests

    return make


def reply_message(record: RequestRecord) -> dict[str, Any]:
    """The assistant message that answers a turn, as the server said it: its text and its tool
    calls (reasoning is not sent back, as most agent clients do not)."""
    message: dict[str, Any] = {"role": "assistant", "content": record.content}
    if record.tool_calls:
        message["tool_calls"] = record.tool_calls
    return message


def followed(messages: list[dict[str, Any]], reply: RequestRecord | None) -> list[dict[str, Any]]:
    """A turn's new messages fitted to the reply before them: a tool result answers that reply's
    first tool call by its id; when the model made no call, the result comes as the user's text,
    the way a harness reports a tool it ran itself."""
    fitted = []
    for message in messages:
        if message.get("role") != "tool":
            fitted.append(message)
            continue
        call_id = reply.tool_calls[0].get("id") if reply and reply.tool_calls else None
        if call_id:
            fitted.append({"role": "tool", "tool_call_id": call_id, "content": message["content"]})
        else:
            text = f"The {WEATHER_TOOL_NAME} tool returned: {message['content']}. Answer from it."
            fitted.append({"role": "user", "content": text})
    return fitted


class ConversationSender:
    """A SendAll for the multiturn suite: a sample's requests as conversations of `turns`
    requests each, at most `parallel` conversations at once (None: all), every turn sent once
    the previous one's reply has been appended. Each request's `messages` are, on return, the
    whole prompt it was sent with; its record is at its index, so records follow requests."""

    def __init__(self, client: EndpointClient, *, turns: int, parallel: int | None) -> None:
        self._client = client
        self._turns = turns
        self._parallel = parallel

    async def __call__(
        self, requests: Sequence[Request], offsets_s: Sequence[float] | None = None
    ) -> tuple[list[RequestRecord], ClientLoad]:
        if offsets_s is not None:
            raise ValueError("conversations are a closed loop: their turns take no offsets")
        chats = [request for request in requests if isinstance(request, ChatRequest)]
        if len(chats) != len(requests) or len(chats) % self._turns:
            raise ValueError(f"a multiturn sample is conversations of {self._turns} chat turns")
        conversations = [chats[at : at + self._turns] for at in range(0, len(chats), self._turns)]
        gate = asyncio.Semaphore(self._parallel or len(conversations) or 1)
        start, cpu_start, queued_start = time.perf_counter(), _cpu_s(), queued_ns()
        replies = await asyncio.gather(*(self._converse(turns, gate) for turns in conversations))
        wall_s = max(time.perf_counter() - start, 1e-9)
        queued_end = queued_ns()
        queued = None
        if queued_start is not None and queued_end is not None:
            queued = [(queued_end - queued_start) / 1e9 / wall_s]
        load = ClientLoad(processes=1, busy=[(_cpu_s() - cpu_start) / wall_s], queued=queued)
        return [record for conversation in replies for record in conversation], load

    async def _converse(
        self, turns: list[ChatRequest], gate: asyncio.Semaphore
    ) -> list[RequestRecord]:
        """One conversation, turn by turn. A failed turn is answered by an empty reply and the
        conversation goes on, so every request is really sent (the sample is discarded for the
        failure anyway, and the counts stay true)."""
        records: list[RequestRecord] = []
        history: list[dict[str, Any]] = []
        async with gate:
            for request in turns:
                previous = records[-1] if records else None
                request.messages = [*history, *followed(request.messages, previous)]
                record = await self._client.send(request)
                records.append(record)
                history = [*request.messages, reply_message(record)]
        return records


def later_turns_prompt_rate(turns: int) -> Callable[[list[RequestRecord]], float | None]:
    """The multiturn point's value: prompt tokens of turns 2..T (server counts) ÷ their TTFTs,
    all of a sample's conversations summed; None when a later turn lacks either."""

    def value_of(records: list[RequestRecord]) -> float | None:
        tokens, seconds = 0, 0.0
        for index, record in enumerate(records):
            if index % turns == 0:
                continue
            prompt = record.usage.prompt_tokens if record.usage else None
            if prompt is None or record.ttft_s is None:
                return None
            tokens, seconds = tokens + prompt, seconds + record.ttft_s
        return tokens / seconds if seconds > 0 else None

    return value_of


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system
