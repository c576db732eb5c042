"""A recorded workload: one JSONL line per request that passed through `gateway serve`, read
back by `sparkrig soak --replay`. It holds counts and timings, the request's parameters, and the
prompt text only when recording was asked to keep it. Credentials are never written: the
gateway never reads the Authorization header into a record, and body fields that look like
credentials are dropped (`safe_params`). A public trace imported by `wire/trace_import.py`
becomes the same records (`imported_from` says from what); the fields it added are optional, so
a file written before them reads unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sparkrig import defaults
from sparkrig.errors import UsageError
from sparkrig.json_files import read_text_file
from sparkrig.outside_numbers import COUNT_LIMIT, OutsideNumberError, checked_number

WORKLOAD_SCHEMA_VERSION = 1
# body fields never copied into params: the prompt (kept apart, and only when asked) and anything
# that could carry a credential
_PROMPT_FIELDS = frozenset(("messages", "prompt"))
_CREDENTIAL_FIELDS = frozenset(
    (
        "api_key",
        "apikey",
        "api-key",
        "key",
        "authorization",
        "token",
        "access_token",
        "secret",
        "password",
        "bearer",
    )
)


class WorkloadRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    schema_version: int = WORKLOAD_SCHEMA_VERSION
    request_id: str = Field(description="X-Request-Id sent back to the client")
    time: float = Field(
        description="arrival, Unix seconds (a trace with no wall clock, like Mooncake's: seconds "
        "from its start); a paced replay sends each record at its offset from the earliest"
    )
    api: Literal["chat", "completions"]
    model: str | None = None
    stream: bool = False
    status: int = Field(
        description="HTTP status the client got (502: upstream unreachable; an imported trace "
        "with no status: 200)"
    )
    error: str | None = Field(default=None, description="what went wrong, if anything")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = Field(default=None, description="prompt tokens from the cache")
    cached_share: float | None = Field(default=None, description="cached / prompt tokens")
    prompt_chars: int = Field(
        default=0,
        description="characters of prompt text: every message's string content or text parts, or "
        "the prompt string(s); token ids count 0",
    )
    message_count: int = Field(default=0, description="chat messages in the request")
    ttft_s: float | None = Field(default=None, description="arrival to first output event")
    decode_tps: float | None = Field(default=None, description="tokens/s after the first event")
    e2e_s: float | None = None
    finish_reason: str | None = None
    params: dict[str, Any] = Field(
        default_factory=dict, description="the request's other fields (max_tokens, tools…)"
    )
    messages: list[dict[str, Any]] | None = Field(
        default=None, description="chat prompt, only with --record-prompts"
    )
    prompt: str | list[int] | None = Field(
        default=None, description="completions prompt, only with --record-prompts"
    )
    prefix_blocks: list[int] | None = Field(
        default=None,
        description="ids of the prompt's blocks of prefix_block_tokens tokens, in order (a "
        "Mooncake trace's hash_ids): a replay builds each block's filler from its id, so records "
        "sharing leading ids share that prompt prefix on the server",
    )
    prefix_block_tokens: int | None = Field(
        default=None, description="tokens per prefix block; the last block holds the rest"
    )
    imported_from: str | None = Field(
        default=None,
        description="the trace format and line this record was imported from (`mooncake line "
        "3`); None: recorded by `gateway serve`",
    )


def safe_params(body: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in body.items()
        if key not in _PROMPT_FIELDS and key.lower() not in _CREDENTIAL_FIELDS
    }


def read_workload(path: Path) -> list[WorkloadRecord]:
    """Every line of a workload file; an unreadable, empty or corrupt file is refused with the
    line that is wrong."""
    fix = "give a workload JSONL file (`sparkrig gateway serve --workload-log FILE`)"
    return workload_from_text(read_text_file(path, what="workload", fix=fix), path)


def workload_from_text(text: str, path: Path) -> list[WorkloadRecord]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = WorkloadRecord.model_validate(json.loads(line))
        except (ValueError, ValidationError, RecursionError) as exc:
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise UsageError(
                f"{path} line {number} is not a workload record ({reason[:120]}) — record one "
                "with `sparkrig gateway serve --workload-log FILE`"
            ) from exc
        check_numbers(record, f"{path} line {number}")
        records.append(record)
    if not records:
        raise UsageError(
            f"{path} holds no workload records (line 1: empty) — record traffic first with "
            "`sparkrig gateway serve --workload-log FILE`"
        )
    return records


def check_numbers(record: WorkloadRecord, source: str) -> None:
    """The numbers a replay schedules and sizes requests by, as outside numbers: a time that is
    finite and not negative, counts from 0 to TRACE_MAX_TOKENS, block ids that are counts. A bad
    one is a usage error naming `source` and the field."""
    most = defaults.TRACE_MAX_TOKENS
    counts = {
        name: getattr(record, name)
        for name in ("prompt_tokens", "completion_tokens", "cached_tokens")
    }
    try:
        checked_number(record.time, source=source, field="time", minimum=0)
        for name, value in counts.items():
            if value is not None:
                checked_number(value, source=source, field=name, minimum=0, maximum=most)
        if record.prefix_block_tokens is not None:
            checked_number(
                record.prefix_block_tokens,
                source=source,
                field="prefix_block_tokens",
                minimum=1,
                maximum=most,
            )
        for index, block in enumerate(record.prefix_blocks or []):
            checked_number(
                block,
                source=source,
                field=f"prefix_blocks[{index}]",
                minimum=0,
                maximum=COUNT_LIMIT,
            )
    except OutsideNumberError as exc:
        raise UsageError(str(exc)) from exc
