"""OpenTelemetry GenAI inference spans, exported as OTLP JSON, as workload records.

The file is one OTLP/JSON `TracesData` object (`{"resourceSpans": [{"scopeSpans": [{"spans":
[...]}]}]}`), or one such object per line as the OpenTelemetry Collector's file exporter writes
it. In OTLP/JSON a 64-bit integer (`startTimeUnixNano`, an `intValue`) is a decimal string,
and a number is accepted too
(https://github.com/open-telemetry/opentelemetry-specification/pull/1637); attributes are
`{"key": ..., "value": {"stringValue" | "intValue" | "doubleValue" | "arrayValue": ...}}`.

What a span means follows the GenAI semantic conventions for inference spans
(https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/, "Inference"; status
Development): `gen_ai.operation.name` is `chat`, `generate_content` or `text_completion`;
`gen_ai.request.model`, `gen_ai.request.max_tokens`, `gen_ai.request.temperature`,
`gen_ai.request.top_p`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` and
`gen_ai.response.finish_reasons` carry the request and its counts. The names those two counts
had before (`gen_ai.usage.prompt_tokens`, `gen_ai.usage.completion_tokens`, deprecated: "Replaced
by gen_ai.usage.input_tokens") are read where the new ones are absent.

A span that is not an inference span (no operation name, `embeddings`, `execute_tool`,
`invoke_agent` …) or that ended in an error is skipped and counted by reason. The prompt text is
not read (`gen_ai.input.messages` is opt-in and rarely exported), so a replay sends filler of the
recorded input size.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from sparkrig import defaults
from sparkrig.errors import UsageError, excerpt
from sparkrig.outside_numbers import checked_number, finite_float, parse_float, parse_int
from sparkrig.wire.workload_log import WorkloadRecord

INFERENCE_OPERATIONS = frozenset(("chat", "generate_content", "text_completion"))
_INT64_MAX = 2**63 - 1
_STATUS_ERROR = (2, "STATUS_CODE_ERROR")
_FIX = "give an OTLP JSON export of GenAI spans (resourceSpans → scopeSpans → spans)"

Span = tuple[str, dict[str, Any]]  # (where in the file, the span)


def _documents(text: str, path: Path) -> list[tuple[str, Any]]:
    """(label, parsed object): the whole file, or each line of a JSON-lines export."""
    try:
        return [("", json.loads(text))]
    except json.JSONDecodeError as whole:
        if whole.msg != "Extra data":
            raise UsageError(
                f"{path} is not JSON ({whole.msg} at line {whole.lineno}) — {_FIX}"
            ) from whole
    except RecursionError as exc:
        raise UsageError(f"{path} is JSON nested too deeply to read — {_FIX}") from exc
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                documents.append((f"line {number} ", json.loads(line)))
            except (ValueError, RecursionError) as exc:
                raise UsageError(
                    f"{path} line {number} is not JSON ({excerpt(str(exc), 80)}) — {_FIX}"
                ) from exc
    return documents


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def spans(text: str, path: Path) -> Iterator[Span]:
    for label, document in _documents(text, path):
        if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
            raise UsageError(f"{path} {label or ''}holds no resourceSpans list — {_FIX}")
        for i, entry in enumerate(document["resourceSpans"]):
            resource = entry if isinstance(entry, dict) else {}
            # instrumentationLibrarySpans: the name before OTLP 0.15
            scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")
            for j, scope in enumerate(_list(scopes)):
                for k, span in enumerate(
                    _list(scope.get("spans") if isinstance(scope, dict) else None)
                ):
                    if isinstance(span, dict):
                        yield f"{label}resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", span


def _attributes(span: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        entry["key"]: entry["value"]
        for entry in _list(span.get("attributes"))
        if isinstance(entry, dict)
        and isinstance(entry.get("key"), str)
        and isinstance(entry.get("value"), dict)
    }


def _int64(value: object, *, where: str, field: str, minimum: int, maximum: int) -> int:
    """An OTLP int64: its decimal string, or a JSON number."""
    if isinstance(value, str):
        return parse_int(value, source=where, field=field, minimum=minimum, maximum=maximum)
    checked = checked_number(
        value, source=where, field=field, minimum=minimum, maximum=maximum, whole=True
    )
    return cast(int, checked)


def _count(attrs: dict[str, dict[str, Any]], where: str, *names: str) -> int | None:
    for name in names:
        if (value := attrs.get(name)) is not None:
            raw = value.get("intValue", value.get("doubleValue", value.get("stringValue")))
            return _int64(
                raw, where=where, field=name, minimum=0, maximum=defaults.TRACE_MAX_TOKENS
            )
    return None


def _number(attrs: dict[str, dict[str, Any]], where: str, name: str) -> float | None:
    value = attrs.get(name)
    if value is None:
        return None
    raw: Any = value.get("doubleValue", value.get("intValue"))
    if isinstance(raw, str):  # OTLP/JSON writes an int64, and NaN or Infinity, as text
        return parse_float(raw, source=where, field=name, minimum=0)
    return finite_float(raw, source=where, field=name, minimum=0)


def _string(attrs: dict[str, dict[str, Any]], name: str) -> str | None:
    value = (attrs.get(name) or {}).get("stringValue")
    return value if isinstance(value, str) else None


def _first_string(attrs: dict[str, dict[str, Any]], name: str) -> str | None:
    values = _list(((attrs.get(name) or {}).get("arrayValue") or {}).get("values"))
    first = values[0].get("stringValue") if values and isinstance(values[0], dict) else None
    return first if isinstance(first, str) else None


def skip_reason(span: dict[str, Any], attrs: dict[str, dict[str, Any]]) -> str | None:
    """Why a span is not replayed, or None for a GenAI inference span that ended well."""
    operation = _string(attrs, "gen_ai.operation.name")
    if operation is None:
        return "no gen_ai.operation.name"
    if operation not in INFERENCE_OPERATIONS:
        return f"gen_ai.operation.name {excerpt(operation, 40)}"
    status = span.get("status")
    if isinstance(status, dict) and status.get("code") in _STATUS_ERROR:
        return "ended in an error"
    return None


def otel_record(
    path: Path, location: str, span: dict[str, Any], attrs: dict[str, dict[str, Any]], n: int
) -> WorkloadRecord:
    where = f"{path} {location}"
    start = span.get("startTimeUnixNano")
    if start is None:
        raise UsageError(f"{where}: startTimeUnixNano is missing — a span needs its start time")
    start_ns = _int64(start, where=where, field="startTimeUnixNano", minimum=0, maximum=_INT64_MAX)
    e2e_s = None
    if (end := span.get("endTimeUnixNano")) not in (None, 0, "0"):  # 0: the span never ended
        end_ns = _int64(
            end, where=where, field="endTimeUnixNano", minimum=start_ns, maximum=_INT64_MAX
        )
        e2e_s = (end_ns - start_ns) / 1e9
    params: dict[str, Any] = {}
    max_tokens = _count(attrs, where, "gen_ai.request.max_tokens")
    if max_tokens:
        params["max_tokens"] = max_tokens
    for name in ("temperature", "top_p"):
        if (value := _number(attrs, where, f"gen_ai.request.{name}")) is not None:
            params[name] = value
    span_id = span.get("spanId")
    label = span_id if isinstance(span_id, str) and span_id.isalnum() and len(span_id) <= 32 else n
    api = "completions" if _string(attrs, "gen_ai.operation.name") == "text_completion" else "chat"
    return WorkloadRecord(
        request_id=f"otel-{label}",
        time=start_ns / 1e9,
        api=api,
        model=_string(attrs, "gen_ai.request.model") or _string(attrs, "gen_ai.response.model"),
        stream=True,
        status=200,
        prompt_tokens=_count(
            attrs, where, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"
        ),
        completion_tokens=_count(
            attrs, where, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"
        ),
        e2e_s=e2e_s,
        finish_reason=_first_string(attrs, "gen_ai.response.finish_reasons"),
        params=params,
        imported_from=f"otel {location}",
    )


def otel_records(text: str, path: Path) -> tuple[list[WorkloadRecord], Counter[str]]:
    """The GenAI inference spans of an OTLP JSON export, by start time, and the spans skipped
    (by reason)."""
    records: list[WorkloadRecord] = []
    skipped: Counter[str] = Counter()
    for location, span in spans(text, path):
        attrs = _attributes(span)
        if (reason := skip_reason(span, attrs)) is not None:
            skipped[reason] += 1
            continue
        records.append(otel_record(path, location, span, attrs, len(records)))
    records.sort(key=lambda record: record.time)
    return records, skipped
