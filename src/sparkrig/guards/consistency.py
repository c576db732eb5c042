"""Guard 13, reply consistency: every reply of the battery agrees with itself.

A reply states some facts twice: the sampled token's logprob and its entry among its own top
alternatives; its claimed tokens against its max_tokens and its content events
(client/reply_consistency.py). A healthy server never breaks one, so every reply any guard sent
is judged, and this guard adds probes with logprobs on both endpoints and both reply paths so
there is always something to judge.
"""

from __future__ import annotations

from typing import Final

from sparkrig.client import ChatRequest, CompletionRequest
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import reference_problem
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "consistency"
PROBE_TOKENS: Final = 16
PROBE_TOP_LOGPROBS: Final = 3
SHOWN: Final = 3


async def consistency_guard(context: GuardContext) -> GuardResult:
    probes: list[ChatRequest | CompletionRequest] = []
    for stream in (True, False):
        probes.append(
            CompletionRequest(
                model=context.model,
                prompt="The days of the week are Monday, Tuesday,",
                max_tokens=PROBE_TOKENS,
                temperature=0.0,
                logprobs=PROBE_TOP_LOGPROBS,
                stream=stream,
            )
        )
        probes.append(
            context.chat(
                "Name the days of the week.",
                max_tokens=PROBE_TOKENS,
                logprobs=PROBE_TOP_LOGPROBS,
                stream=stream,
            )
        )
    with_logprobs = 0
    for request in probes:
        record = await context.send(request)
        where = f"{request.api}{', streamed' if request.stream else ''} probe"
        if problem := reference_problem([record], where):
            return failed(NAME, problem)  # an empty reply states nothing to agree with
        with_logprobs += bool(record.logprobs)
    problems = context.reply_problems
    details = {
        "replies_judged": context.replies_judged,
        "probes_with_logprobs": with_logprobs,
        "problems": problems[:50],
    }
    if problems:
        shown = "; ".join(problems[:SHOWN])
        return failed(
            NAME,
            f"{len(problems)} disagreement(s) within replies of this battery "
            f"({context.replies_judged} judged): {shown}",
            **details,
        )
    logprobs_note = (
        f"{with_logprobs} of {len(probes)} probes carried logprobs"
        if with_logprobs
        else "the server returned no logprobs, so only counts were judged"
    )
    return passed(
        NAME,
        f"{context.replies_judged} replies of this battery agree with themselves ({logprobs_note})",
        **details,
    )
