"""One workload line per request `gateway serve` answered (wire/workload_log.py has the model;
`sparkrig soak --replay` reads it back). Token counts come from the server's usage or llama.cpp's
timings; the prompt text is kept only when asked; the Authorization header is never read here."""

from __future__ import annotations

from typing import Any

from sparkrig.gateway.live_guards import completion_tokens
from sparkrig.gateway.request_faults import prompt_chars
from sparkrig.gateway.shaping import ReplyText
from sparkrig.gateway.trace import Trace
from sparkrig.wire.workload_log import WorkloadRecord, safe_params


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def prompt_counts(reply: ReplyText) -> tuple[int | None, int | None]:
    """(prompt tokens, cached prompt tokens) as the server reported them."""
    usage, timings = reply.usage or {}, reply.timings or {}
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
    prompt = _int(usage.get("prompt_tokens"))
    if timings:  # llama.cpp: prompt_n is what it evaluated, cache_n what it reused
        cache_n, prompt_n = _int(timings.get("cache_n")), _int(timings.get("prompt_n"))
        cached = cache_n if cached is None else cached
        if prompt is None and prompt_n is not None:
            prompt = prompt_n + (cache_n or 0)
    return prompt, cached


def workload_record(
    trace: Trace, reply: ReplyText, end_ns: int, record_prompts: bool
) -> WorkloadRecord:
    body = trace.body
    prompt, cached = prompt_counts(reply)
    tokens = completion_tokens(reply)
    first, last = trace.first_output_ns, trace.last_output_ns
    decode = None
    if tokens and tokens > 1 and first is not None and last is not None and last > first:
        decode = (tokens - 1) * 1e9 / (last - first)
    messages = body.get("messages") if isinstance(body.get("messages"), list) else None
    prompt_text = body.get("prompt")
    return WorkloadRecord(
        request_id=trace.request_id,
        time=trace.wall,
        api=trace.api,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        stream=bool(body.get("stream")),
        status=trace.status,
        error=trace.error,
        prompt_tokens=prompt,
        completion_tokens=tokens,
        cached_tokens=cached,
        cached_share=cached / prompt if prompt and cached is not None else None,
        # the fault gateway's count: text parts of a message and a list of prompt strings count
        prompt_chars=prompt_chars(body, trace.api),
        message_count=len(messages or []),
        ttft_s=(first - trace.start_ns) / 1e9 if first is not None else None,
        decode_tps=decode,
        e2e_s=(end_ns - trace.start_ns) / 1e9,
        finish_reason=reply.finish_reason,
        params=safe_params(body),
        messages=messages if record_prompts else None,
        prompt=prompt_text if record_prompts and isinstance(prompt_text, str | list) else None,
    )
