"""A recorded workload: one JSONL line per request that passed through `gateway serve`, read
back by `sparkrig soak --replay`. It holds counts and timings, the request's parameters, and the
prompt text only when recording was asked to keep it. Credentials are never written: the
gateway never reads the Authorization header into a record, and body fields that look like
credentials are dropped (`safe_params`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sparkrig.errors import UsageError

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
    time: float = Field(description="arrival, Unix seconds")
    api: Literal["chat", "completions"]
    model: str | None = None
    stream: bool = False
    status: int = Field(description="HTTP status the client got (502: upstream unreachable)")
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


def safe_params(body: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in body.items()
        if key not in _PROMPT_FIELDS and key.lower() not in _CREDENTIAL_FIELDS
    }


def read_workload(path: Path) -> list[WorkloadRecord]:
    """Every line of a workload file; an unreadable, empty or corrupt file is refused with the
    line that is wrong."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror}) — check the path") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text — give a workload JSONL file") from exc
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(WorkloadRecord.model_validate(json.loads(line)))
        except (ValueError, ValidationError) as exc:
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise UsageError(
                f"{path} line {number} is not a workload record ({reason[:120]}) — record one "
                "with `sparkrig gateway serve --workload-log FILE`"
            ) from exc
    if not records:
        raise UsageError(
            f"{path} holds no workload records (line 1: empty) — record traffic first with "
            "`sparkrig gateway serve --workload-log FILE`"
        )
    return records
