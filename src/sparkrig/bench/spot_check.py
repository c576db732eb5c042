"""A correctness spot check inside each bench point: is the server still answering, at this
point's load, or measuring nonsense?

A first published 16-stream figure had been measuring "1. 2. 3. 4. …" on every prompt, a stack
whose CUDA graphs broke above two sequences while its counters looked healthy (field notes:
graphs-above-two-seqs; the report's lesson: read an output after every configuration change).
So once per point, outside the timed window, the same questions go out alone and then as many at
once as the point sends: a question with a one-word answer and a count with an exact answer. A
point whose replies are right alone and wrong at its own load measured nonsense and is invalid.
A model that gets them wrong even alone (a reasoning model whose budget the thinking spends, a
model too small) cannot be judged this way: the point says so and is not invalid.
"""

from __future__ import annotations

import asyncio
import re
from typing import Final

from pydantic import BaseModel, Field

from sparkrig.client import ChatRequest, EndpointClient, RequestRecord


class SpotQuestion(BaseModel):
    prompt: str
    answer: str = Field(description="the expected answer, as a regular expression on the reply")
    max_tokens: int


# Answered right at temperature 0 by the bundled SmolLM2-135M (measured: "The capital of France
# is Paris"; "1, 2, 3, 4, 5, 6, 7, 8, 9, 10"), so the check judges even the embedded engine.
QUESTIONS: Final = (
    SpotQuestion(
        prompt="What is the capital of France? Answer with one word.",
        answer=r"\bParis\b",
        max_tokens=16,
    ),
    SpotQuestion(
        prompt="Count from 1 to 10, separated by commas.",
        answer=r"\b1, 2, 3, 4, 5, 6, 7, 8, 9, 10\b",
        max_tokens=40,
    ),
)


class SpotCheck(BaseModel):
    """The point's spot check: which questions were right alone and at the point's load."""

    concurrency: int = Field(description="how many were sent at once: as many as the point sends")
    right_alone: list[bool] = Field(description="per question, right when sent alone")
    wrong_under_load: list[str] = Field(
        default_factory=list,
        description="replies wrong at the point's load to a question right alone, quoted",
    )
    wrong_in_every_reply: list[str] = Field(
        default_factory=list,
        description="questions right alone and wrong in every reply at the point's load",
    )
    error: str | None = Field(default=None, description="why the spot check could not run")

    @property
    def judged(self) -> bool:
        return self.error is None and any(self.right_alone)

    @property
    def nonsense(self) -> bool:
        return bool(self.wrong_in_every_reply)


def _request(model: str, question: SpotQuestion) -> ChatRequest:
    return ChatRequest(
        model=model,
        messages=[{"role": "user", "content": question.prompt}],
        max_tokens=question.max_tokens,
        temperature=0.0,
    )


def is_right(question: SpotQuestion, record: RequestRecord) -> bool:
    return record.error is None and re.search(question.answer, record.content) is not None


async def spot_check(client: EndpointClient, model: str, concurrency: int) -> SpotCheck:
    """Each question alone, then `concurrency` at once (the questions in turn)."""
    alone = [await client.send(_request(model, q)) for q in QUESTIONS]
    failed = [record.error for record in alone if record.error is not None]
    if failed:
        return SpotCheck(concurrency=concurrency, right_alone=[], error=failed[0].message)
    right = [is_right(q, record) for q, record in zip(QUESTIONS, alone, strict=True)]
    check = SpotCheck(concurrency=concurrency, right_alone=right)
    if not any(right):
        return check
    asked = [QUESTIONS[i % len(QUESTIONS)] for i in range(concurrency)]
    records = await asyncio.gather(*(client.send(_request(model, q)) for q in asked))
    wrong_by_question: dict[str, list[bool]] = {}
    for question, record in zip(asked, records, strict=True):
        if not right[QUESTIONS.index(question)]:
            continue
        wrong = not is_right(question, record)
        wrong_by_question.setdefault(question.prompt, []).append(wrong)
        if wrong:
            reply = record.error.message if record.error is not None else record.content[:80]
            check.wrong_under_load.append(f"{question.prompt!r} at c={concurrency}: {reply!r}")
    check.wrong_in_every_reply = [q for q, wrong in wrong_by_question.items() if all(wrong)]
    return check


def spot_check_warning(check: SpotCheck) -> str | None:
    """The point's warning when its spot check judged nothing, or saw a few wrong replies."""
    if check.error is not None:
        return f"correctness spot check not run: {check.error}"
    if not any(check.right_alone):
        return (
            "correctness spot check judged nothing: the model answers its questions wrong even "
            "alone (a reasoning model may spend their small budget thinking) — read a reply"
        )
    if check.wrong_under_load:
        return (
            f"correctness spot check: {len(check.wrong_under_load)} reply(ies) at this load "
            f"answered a question wrong that was right alone, first {check.wrong_under_load[0]} "
            "— read the replies at this load"
        )
    return None
