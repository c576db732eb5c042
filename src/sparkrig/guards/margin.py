"""Guard 4, margin probe: a prompt whose next tokens are near certain must stay sharp, alone and
with a neighbour in the batch, on both reply paths (streamed and whole) and on both endpoints
(completions and chat: agent clients use chat, where the template, the parsers and a gateway's
rewriting differ, so a softening confined to chat is out of a completions probe's view).

After 17 hours warm, the alone case gave soft, wrong logits (lp -0.74 and -1.49 on the top
two) while any neighbour made them sharp again (lp -0.000); right after a restart both were
sharp (docs/field-notes.md#c128a-alone-soft). Only a probe that runs both arms, and again
later, sees it (`sparkrig check --guard margin --repeat-every SECONDS`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, RequestRecord
from sparkrig.guards.context import GuardContext
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "margin"
SHARP_PROMPT: Final = "1, 2, 3, 4, 5, 6, 7, 8,"
PROBE_TOKENS: Final = 2
NEIGHBOUR_TOKENS: Final = 96
NEIGHBOUR_HEAD_START_S: Final = 0.3  # the neighbour is decoding when the probe arrives
# On chat the template sits between prompt and reply, so the first tokens of even a counting
# reply are not certain (embedded engine, measured: '1' at lp -1.2, then ',' -1.1); its later
# tokens are (-0.015 and -0.003 at tokens 5 and 6). The chat arms judge their sharpest token.
CHAT_PROMPT: Final = "Count from 1 to 10, separated by commas."
CHAT_PROBE_TOKENS: Final = 6


def top1_logprobs(record: RequestRecord) -> list[float]:
    return [t.logprob for t in record.logprobs if t.logprob is not None]


async def margin_guard(context: GuardContext) -> GuardResult:
    def probe(stream: bool, api: str) -> CompletionRequest | ChatRequest:
        if api == "chat":
            return context.chat(
                CHAT_PROMPT, max_tokens=CHAT_PROBE_TOKENS, logprobs=2, stream=stream
            )
        return CompletionRequest(
            model=context.model,
            prompt=SHARP_PROMPT,
            max_tokens=PROBE_TOKENS,
            temperature=0.0,
            logprobs=2,
            stream=stream,
        )

    arms: dict[str, RequestRecord] = {}
    for api in ("completions", "chat"):
        arms |= await _arms(context, api, probe)
    for arm, record in arms.items():
        if record.error is not None:
            return failed(NAME, f"the {arm} probe failed: {record.error.message}")
    lps = {arm: top1_logprobs(record) for arm, record in arms.items()}
    details = {
        "prompt": SHARP_PROMPT,
        "chat_prompt": CHAT_PROMPT,
        "sharp_min_logprob": defaults.CHECK_SHARP_LOGPROB_MIN,
        "arms": {arm: {"text": r.content, "top1_logprobs": lps[arm]} for arm, r in arms.items()},
    }
    if missing := [arm for arm, values in lps.items() if not values]:
        return failed(
            NAME,
            f"the server returned no logprobs ({missing[0]}) — the probe needs `logprobs`",
            **details,
        )
    for api in ("completions", "chat"):
        same_api = {arm: record for arm, record in arms.items() if arm.startswith(api)}
        first_arm, first = next(iter(same_api.items()))
        for arm, record in same_api.items():
            if record.content != first.content:
                return failed(
                    NAME,
                    f"the top-1 tokens changed: {first.content!r} {first_arm}, "
                    f"{record.content!r} {arm}",
                    **details,
                )
    judged = {arm: _judged(arm, values) for arm, values in lps.items()}
    for arm, value in judged.items():
        if value < defaults.CHECK_SHARP_LOGPROB_MIN:
            what = "sharpest top-1" if arm.startswith("chat") else "soft top-1"
            prompt = CHAT_PROMPT if arm.startswith("chat") else SHARP_PROMPT
            return failed(
                NAME,
                f"{what} {arm}: lp {value:.2f} < "
                f"{defaults.CHECK_SHARP_LOGPROB_MIN} on {prompt!r} (sharp is near 0)",
                **details,
            )
    worst = min(judged.values())
    return passed(
        NAME,
        f"sharp in all {len(arms)} arms (completions and chat, alone and with a neighbour, "
        f"streamed and not): top-1 lp ≥ {worst:.3f}, same tokens",
        **details,
    )


async def _arms(
    context: GuardContext,
    api: str,
    probe: Callable[[bool, str], CompletionRequest | ChatRequest],
) -> dict[str, RequestRecord]:
    """One endpoint's four arms: alone and beside a decoding neighbour, streamed and whole."""
    alone = {f"{api}, alone, {_path(s)}": await context.send(probe(s, api)) for s in (True, False)}
    neighbour = context.chat(
        "Tell a long story about a fox and a crow.", max_tokens=NEIGHBOUR_TOKENS
    )

    async def probe_later(stream: bool) -> RequestRecord:
        await asyncio.sleep(NEIGHBOUR_HEAD_START_S)
        return await context.send(probe(stream, api))

    _, *beside = await asyncio.gather(
        context.send(neighbour), probe_later(True), probe_later(False)
    )
    return {
        **alone,
        **{
            f"{api}, with a neighbour, {_path(s)}": record
            for s, record in zip((True, False), beside, strict=True)
        },
    }


def _judged(arm: str, values: list[float]) -> float:
    """Completions: every probed token must be sharp; chat: its sharpest (see CHAT_PROMPT)."""
    return max(values) if arm.startswith("chat") else min(values)


def _path(stream: bool) -> str:
    return "streamed" if stream else "non-streamed"
