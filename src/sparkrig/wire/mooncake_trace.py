"""A Mooncake trace as workload records.

The format, as Mooncake publishes it (https://github.com/kvcache-ai/Mooncake, its
FAST25-release README and traces): one JSON object per line,
`{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}`.
`timestamp` is the arrival in milliseconds from the trace's start (several requests may share
one), `input_length` and `output_length` count tokens, and `hash_ids` are remapped hashes of the
prompt's KV blocks of 512 tokens: requests whose `hash_ids` start alike share that prompt prefix.
Dynamo's trace tools say the same (the data generator's README in
https://github.com/ai-dynamo/dynamo: "the length of the hash_ids array equals input_length //
block_size", 512 assumed). aiperf's `mooncake_trace` loader (https://github.com/ai-dynamo/aiperf,
its dataset loader and prompt generator) builds each block from its id, the last one holding
`input_length - (len(hash_ids) - 1) * block_size` tokens, and refuses a line where that is not
between 1 and the block size; so does this reader. aiperf's optional `text_input` (the prompt's
text) is kept when a line has it; its other extensions (`session_id`, `delay`, `payload`) are not
read.

Mooncake carries no text: a replay sends filler of the right size per block
(bench/soak_traffic.py), so the prefix reuse is reproduced and the content is not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from sparkrig import defaults
from sparkrig.errors import UsageError, excerpt
from sparkrig.outside_numbers import COUNT_LIMIT, checked_number
from sparkrig.wire.workload_log import WorkloadRecord

_NEEDS = "a Mooncake line holds timestamp (ms from the trace's start), input_length, output_length"


def _whole(value: object, *, source: str, field: str, minimum: int, maximum: int) -> int:
    if value is None:
        raise UsageError(f"{source}: {field} is missing — {_NEEDS}")
    checked = checked_number(
        value, source=source, field=field, minimum=minimum, maximum=maximum, whole=True
    )
    return cast(int, checked)


def _blocks(value: object, source: str) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(
            f"{source}: hash_ids is {excerpt(repr(value), 40)!r}, not a list — give the "
            "prompt's block ids as a JSON list of whole numbers"
        )
    return [
        _whole(item, source=source, field=f"hash_ids[{i}]", minimum=0, maximum=COUNT_LIMIT)
        for i, item in enumerate(value)
    ]


def mooncake_record(
    raw: dict[str, Any], number: int, path: Path, block_tokens: int
) -> WorkloadRecord:
    source = f"{path} line {number}"
    most = defaults.TRACE_MAX_TOKENS
    if raw.get("timestamp") is None:
        raise UsageError(f"{source}: timestamp is missing — {_NEEDS}")
    timestamp_ms = checked_number(
        raw["timestamp"],
        source=source,
        field="timestamp",
        minimum=0,
        maximum=defaults.TRACE_MAX_OFFSET_S * 1000,
    )
    prompt = _whole(
        raw.get("input_length"), source=source, field="input_length", minimum=1, maximum=most
    )
    output = _whole(
        raw.get("output_length"), source=source, field="output_length", minimum=1, maximum=most
    )
    blocks = _blocks(raw.get("hash_ids"), source)
    if blocks:
        last = prompt - (len(blocks) - 1) * block_tokens
        if not 0 < last <= block_tokens:
            raise UsageError(
                f"{source}: {len(blocks)} hash_ids of {block_tokens} tokens do not make "
                f"input_length {prompt} (the last block would hold {last}) — give the trace's "
                f"block size with --block-tokens (Mooncake's is "
                f"{defaults.TRACE_MOONCAKE_BLOCK_TOKENS})"
            )
    text = raw.get("text_input") if isinstance(raw.get("text_input"), str) else None
    return WorkloadRecord(
        request_id=f"mooncake-{number}",
        time=timestamp_ms / 1000,
        api="chat",
        stream=True,
        status=200,
        prompt_tokens=prompt,
        completion_tokens=output,
        prompt_chars=len(text or ""),
        message_count=1 if text is not None else 0,
        params={"max_tokens": output},
        messages=[{"role": "user", "content": text}] if text is not None else None,
        prefix_blocks=blocks or None,
        prefix_block_tokens=block_tokens if blocks else None,
        imported_from=f"mooncake line {number}",
    )


def mooncake_records(text: str, path: Path, *, block_tokens: int) -> list[WorkloadRecord]:
    """Every line of a Mooncake trace, in file order; a line that is not a JSON object, lacks a
    field, or holds a number out of range is refused with its line number and field."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise UsageError(
                f"{path} line {number} is not JSON ({excerpt(str(exc), 80)}) — a Mooncake trace "
                "holds one JSON object per line"
            ) from exc
        if not isinstance(raw, dict):
            raise UsageError(
                f"{path} line {number} is {type(raw).__name__} JSON, not an object — {_NEEDS}"
            )
        records.append(mooncake_record(raw, number, path, block_tokens))
    return records
