"""Guard 4, margin probe: a prompt whose next tokens are near certain must stay sharp, alone and
with a neighbour in the batch, on both reply paths (streamed and whole).

After 17 hours warm, the alone case gave soft, wrong logits (lp -0.74 and -1.49 on the top
two) while any neighbour made them sharp again (lp -0.000); right after a restart both were
sharp (docs/field-notes.md#c128a-alone-soft). Only a probe that runs both arms, and again
later, sees it (`sparkrig check --guard margin --repeat-every SECONDS`).
"""

from __future__ import annotations

import asyncio
from typing import Final

from sparkrig import defaults
from sparkrig.client import CompletionRequest, RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "margin"
SHARP_PROMPT: Final = "1, 2, 3, 4, 5, 6, 7, 8,"
PROBE_TOKENS: Final = 2
NEIGHBOUR_TOKENS: Final = 96
NEIGHBOUR_HEAD_START_S: Final = 0.3  # the neighbour is decoding when the probe arrives


def top1_logprobs(record: RequestRecord) -> list[float]:
    return [t.logprob for t in record.logprobs if t.logprob is not None]


async def margin_guard(context: GuardContext) -> GuardResult:
    def probe(stream: bool) -> CompletionRequest:
        return CompletionRequest(
            model=context.model,
            prompt=SHARP_PROMPT,
            max_tokens=PROBE_TOKENS,
            temperature=0.0,
            logprobs=2,
            stream=stream,
        )

    alone = {f"alone, {_path(s)}": await context.send(probe(s)) for s in (True, False)}
    neighbour = context.chat(
        "Tell a long story about a fox and a crow.", max_tokens=NEIGHBOUR_TOKENS
    )

    async def probe_later(stream: bool) -> RequestRecord:
        await asyncio.sleep(NEIGHBOUR_HEAD_START_S)
        return await context.send(probe(stream))

    _, *beside = await asyncio.gather(
        context.send(neighbour), probe_later(True), probe_later(False)
    )
    arms = {
        **alone,
        **{f"with a neighbour, {_path(s)}": r for s, r in zip((True, False), beside, strict=True)},
    }
    for arm, record in arms.items():
        if record.error is not None:
            return failed(NAME, f"the {arm} probe failed: {record.error.message}")
    lps = {arm: top1_logprobs(record) for arm, record in arms.items()}
    details = {
        "prompt": SHARP_PROMPT,
        "sharp_min_logprob": defaults.CHECK_SHARP_LOGPROB_MIN,
        "arms": {arm: {"text": r.content, "top1_logprobs": lps[arm]} for arm, r in arms.items()},
    }
    if missing := [arm for arm, values in lps.items() if not values]:
        return failed(
            NAME,
            f"the server returned no logprobs ({missing[0]}) — the probe needs `logprobs`",
            **details,
        )
    first_arm, first = next(iter(arms.items()))
    for arm, record in arms.items():
        if record.content != first.content:
            return failed(
                NAME,
                f"the top-1 tokens changed: {first.content!r} {first_arm}, "
                f"{record.content!r} {arm}",
                **details,
            )
    for arm, values in lps.items():
        if min(values) < defaults.CHECK_SHARP_LOGPROB_MIN:
            return failed(
                NAME,
                f"soft top-1 {arm}: lp {min(values):.2f} < "
                f"{defaults.CHECK_SHARP_LOGPROB_MIN} on {SHARP_PROMPT!r} (sharp is near 0)",
                **details,
            )
    worst = min(min(values) for values in lps.values())
    return passed(
        NAME,
        f"sharp in all {len(arms)} arms (alone and with a neighbour, streamed and not): "
        f"top-1 lp ≥ {worst:.3f}, same tokens",
        **details,
    )


def _path(stream: bool) -> str:
    return "streamed" if stream else "non-streamed"
