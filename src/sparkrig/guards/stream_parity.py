"""Guard 6, stream parity: one temperature-0 request, streamed and not, must give the same
content, reasoning, tool calls, finish_reason and token count (research notes §5.4: nobody
tests it). A server that merges several tokens into one event must not change the count.

A warm-up request puts the prompt in the prefix cache first, so both compared requests take the
same cached path; a content difference that is a near-tie flip (the top two swapped where they
were close, as the determinism guard defines it) is arithmetic, not a streaming fault.

One prompt asks for Hangul: a multi-byte character cut apart at a token or event boundary comes
out as U+FFFD, on the streamed path first. Its three replies (the warm-up, streamed and whole)
must hold no U+FFFD, as the ring's Hangul corruption probe held 0 over three passes
(docs/field-notes.md#replacement-char-gate), and the streamed one must equal the whole one."""

from __future__ import annotations

from typing import Any, Final

from sparkrig import defaults
from sparkrig.client import RequestRecord
from sparkrig.detectors.text import replacement_char_findings
from sparkrig.guards.context import GuardContext
from sparkrig.guards.divergence import first_difference, first_divergence, reference_problem
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "stream_parity"
PROMPTS: Final = (
    "Write three sentences about autumn.",
    "Name five animals that live in the sea, as a numbered list.",
    MULTIBYTE_PROMPT := "Write the Korean word for hello in Hangul.",
)


def _fields(record: RequestRecord) -> dict[str, Any]:
    return {
        "content": record.content,
        "reasoning": record.reasoning,
        "tool_calls": [call.get("function", call) for call in record.tool_calls],
        "finish_reason": record.finish_reason,
        "completion_tokens": record.usage.completion_tokens if record.usage else None,
    }


async def stream_parity_guard(context: GuardContext) -> GuardResult:
    compared: list[dict[str, Any]] = []
    flips = 0
    multibyte = 0
    for prompt in PROMPTS:
        warm = await context.send(context.chat(prompt, stream=True))  # the prefix cache, for both
        streamed = await context.send(
            context.chat(prompt, stream=True, logprobs=defaults.CHECK_TOP_LOGPROBS)
        )
        whole = await context.send(
            context.chat(prompt, stream=False, logprobs=defaults.CHECK_TOP_LOGPROBS)
        )
        for mode, record in (("streamed", streamed), ("non-streamed", whole)):
            if problem := reference_problem([record], mode):
                return failed(NAME, problem)
        for mode, record in (("warm-up", warm), ("streamed", streamed), ("non-streamed", whole)):
            if found := replacement_char_findings(record.content):
                return failed(
                    NAME,
                    f"the {mode} reply to {prompt!r}: {found[0].message}",
                    evidence_text=found[0].evidence,
                    compared=compared,
                )
        if prompt == MULTIBYTE_PROMPT:
            multibyte = sum(1 for char in whole.content if not char.isascii())
        if first_divergence(streamed, whole).kind == "near_tie":
            flips += 1  # what follows a flip may differ in length and finish: not compared
            compared.append({"prompt": prompt, "differing": [], "near_tie_flip": True})
            continue
        a, b = _fields(streamed), _fields(whole)
        differing = [key for key in a if a[key] != b[key] and b[key] is not None]
        compared.append({"prompt": prompt, "differing": differing})
        if differing:
            key = differing[0]
            where = ""
            if key in ("content", "reasoning"):
                offset = first_difference(a[key], b[key]) or 0
                where = (
                    f" at char {offset}: {a[key][offset : offset + 30]!r} streamed vs "
                    f"{b[key][offset : offset + 30]!r}"
                )
            else:
                where = f": {a[key]!r} streamed vs {b[key]!r}"
            return failed(NAME, f"{', '.join(differing)} differ{where}", compared=compared)
    carried = (
        f"the Hangul prompt's replies carried {multibyte} multi-byte characters, no U+FFFD"
        if multibyte
        else "the Hangul prompt was answered without multi-byte characters: that path went untested"
    )
    return passed(
        NAME,
        f"{len(PROMPTS)} requests: content, reasoning, tool calls, finish "
        f"reason and token count identical streamed and not; {carried}",
        compared=compared,
        multibyte_chars=multibyte,
    )
