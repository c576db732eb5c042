"""Workload records from a trace file: sparkrig's own workload log (`gateway serve
--workload-log`), a Mooncake trace (wire/mooncake_trace.py) or an OpenTelemetry GenAI export
(wire/otel_trace.py). `auto` tells them apart by the first record. Every file is read through
json_files' reader (a directory, a missing file or non-UTF-8 bytes: one line), and every number
in it through outside_numbers: a bad one is refused with its line (or span) and field.

What each format carries, and what a replay loses, is in docs/gateway.md ("Trace formats").
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, cast

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.errors import UsageError, excerpt
from sparkrig.json_files import read_text_file
from sparkrig.outside_numbers import OutsideNumberError
from sparkrig.wire.mooncake_trace import mooncake_records
from sparkrig.wire.otel_trace import otel_records
from sparkrig.wire.workload_log import WorkloadRecord, workload_from_text

TraceFormat = Literal["sparkrig", "mooncake", "otel"]
FORMATS: Final[tuple[str, ...]] = ("auto", "sparkrig", "mooncake", "otel")
_FIX = (
    "give a sparkrig workload log, a Mooncake trace (JSONL) or an OTLP JSON export of GenAI "
    "spans, and name it with --format/--replay-format if it is not detected"
)


@dataclass
class ImportedTrace:
    format: TraceFormat
    detected: bool  # True: `auto` picked the format
    records: list[WorkloadRecord]
    skipped: Counter[str] = field(default_factory=Counter)


def detect_format(text: str, path: Path) -> TraceFormat:
    """The format of a trace by its first record: `resourceSpans` (OTLP), `input_length` or
    `hash_ids` (Mooncake), `request_id` and `api` (sparkrig's workload log)."""
    first = next((line for line in text.splitlines() if line.strip()), None)
    if first is None:
        raise UsageError(f"{path} holds no records (line 1: empty) — {_FIX}")
    try:
        raw = json.loads(first)
    except (ValueError, RecursionError):
        try:  # an OTLP export written as one indented document
            raw = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise UsageError(
                f"{path} is not JSON (line 1 starts {excerpt(first, 40)!r}) — {_FIX}"
            ) from exc
    if isinstance(raw, dict):
        if "resourceSpans" in raw:
            return "otel"
        if "input_length" in raw or "hash_ids" in raw:
            return "mooncake"
        if "request_id" in raw and "api" in raw:
            return "sparkrig"
        keys = ", ".join(excerpt(str(key), 30) for key in list(raw)[:6]) or "none"
        raise UsageError(
            f"{path}: cannot tell the trace format (first record's keys: {keys}) — {_FIX}"
        )
    raise UsageError(
        f"{path}: the first record is a JSON {type(raw).__name__}, not an object — {_FIX}"
    )


def import_trace(
    path: Path,
    trace_format: str = "auto",
    *,
    block_tokens: int = defaults.TRACE_MOONCAKE_BLOCK_TOKENS,
) -> ImportedTrace:
    """The records of the trace at `path`, in its own order (OTel: by start time)."""
    if trace_format not in FORMATS:
        raise UsageError(
            f"trace format {trace_format!r} is not known — use one of {', '.join(FORMATS)}"
        )
    text = read_text_file(path, what="trace", fix=_FIX)
    chosen = (
        detect_format(text, path) if trace_format == "auto" else cast(TraceFormat, trace_format)
    )
    skipped: Counter[str] = Counter()
    try:
        if chosen == "mooncake":
            records = mooncake_records(text, path, block_tokens=block_tokens)
        elif chosen == "otel":
            records, skipped = otel_records(text, path)
        else:
            records = workload_from_text(text, path)
    except OutsideNumberError as exc:
        raise UsageError(str(exc)) from exc
    if not records:
        reasons = ", ".join(f"{count} {why}" for why, count in skipped.most_common(3))
        raise UsageError(
            f"{path} holds no requests to replay ({reasons or 'line 1: empty'}) — {_FIX}"
        )
    span = max(r.time for r in records) - min(r.time for r in records)
    # a Mooncake timestamp is bounded line by line; a gateway log's times are its own clock's
    if chosen == "otel" and span > defaults.TRACE_MAX_OFFSET_S:
        raise UsageError(
            f"{path} spans {span / 86_400:.0f} days from its first request to its last — a wrong "
            f"time unit? a trace of up to {defaults.TRACE_MAX_OFFSET_S / 86_400:.0f} days replays"
        )
    return ImportedTrace(chosen, trace_format == "auto", records, skipped)


class TraceSummary(BaseModel):
    """What `workload import` (and `soak --replay`) read from a trace."""

    format: TraceFormat = Field(description="the format read")
    detected: bool = Field(description="picked by --format auto from the first record")
    records: int = Field(description="requests read")
    skipped: dict[str, int] = Field(
        default_factory=dict, description="spans or lines not replayed, by reason (OTel)"
    )
    span_s: float = Field(description="seconds from the first request's arrival to the last's")
    prompt_tokens: int | None = Field(description="Σ prompt tokens; None where no record has them")
    completion_tokens: int | None = Field(description="Σ completion tokens; None likewise")
    reused_prefix_tokens: int | None = Field(
        description="prompt tokens in leading prefix blocks an earlier record already sent: what "
        "an unbounded prefix cache could serve (Mooncake hash_ids); None without prefix blocks"
    )


def _reused_prefix_tokens(records: list[WorkloadRecord]) -> int | None:
    seen: set[int] = set()
    reused, any_blocks = 0, False
    for record in sorted(records, key=lambda r: r.time):
        blocks, size = record.prefix_blocks or [], record.prefix_block_tokens or 0
        any_blocks = any_blocks or bool(blocks)
        leading = 0
        while leading < len(blocks) and blocks[leading] in seen:
            leading += 1
        reused += min(leading * size, record.prompt_tokens or leading * size)
        seen.update(blocks)
    return reused if any_blocks else None


def trace_summary(trace: ImportedTrace) -> TraceSummary:
    records = trace.records
    prompts = [r.prompt_tokens for r in records if r.prompt_tokens is not None]
    outputs = [r.completion_tokens for r in records if r.completion_tokens is not None]
    return TraceSummary(
        format=trace.format,
        detected=trace.detected,
        records=len(records),
        skipped=dict(trace.skipped),
        span_s=round(max(r.time for r in records) - min(r.time for r in records), 3),
        prompt_tokens=sum(prompts) if prompts else None,
        completion_tokens=sum(outputs) if outputs else None,
        reused_prefix_tokens=_reused_prefix_tokens(records),
    )


def describe(summary: TraceSummary) -> str:
    how = "detected" if summary.detected else "as asked"
    skipped = sum(summary.skipped.values())
    reasons = "; ".join(f"{count} {why}" for why, count in summary.skipped.items())
    parts = [
        f"{summary.format} trace ({how}): {summary.records} requests",
        f"{skipped} skipped ({reasons})" if skipped else "0 skipped",
        f"span {summary.span_s:g} s",
        f"prompt tokens {summary.prompt_tokens if summary.prompt_tokens is not None else '—'}",
        "completion tokens "
        f"{summary.completion_tokens if summary.completion_tokens is not None else '—'}",
    ]
    if summary.reused_prefix_tokens is not None:
        parts.append(f"{summary.reused_prefix_tokens} prompt tokens in shared prefix blocks")
    return ", ".join(parts)
