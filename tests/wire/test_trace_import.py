"""Public traces as workload records (wire/trace_import.py), on lines in the exact public formats.

Mooncake: the two samples of kvcache-ai/Mooncake's FAST25-release/README.md (they share 12
leading hash_ids) and the first lines of its FAST25-release/traces/conversation_trace.jsonl.
OpenTelemetry: an OTLP/JSON export (`resourceSpans` → `scopeSpans` → `spans`, 64-bit integers as
decimal strings) of spans named and attributed as the GenAI semantic conventions' inference
spans (opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/), beside a tool span and a
plain HTTP span that are not inference. Hostile lines are refused with their line and field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkrig.errors import UsageError
from sparkrig.wire.trace_import import describe, detect_format, import_trace, trace_summary
from sparkrig.wire.workload_log import read_workload

MOONCAKE_README = (
    '{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": '
    "[46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354]}\n"
    '{"timestamp": 30535, "input_length": 6472, "output_length": 26, "hash_ids": '
    "[46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2366]}\n"
)
MOONCAKE_CONVERSATION = (
    '{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": '
    "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}\n"
    '{"timestamp": 0, "input_length": 2290, "output_length": 316, "hash_ids": '
    "[0, 42, 43, 44, 45]}\n"
    '{"timestamp": 3000, "input_length": 915, "output_length": 355, "hash_ids": [0, 462]}\n'
)


def _attr(key: str, kind: str, value: object) -> dict[str, object]:
    return {"key": key, "value": {kind: value}}


def otel_span(span_id: str, start_ns: int, attributes: list[dict[str, object]], **more: object):
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "name": "span",
        "kind": 3,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + 1_250_000_000),
        "attributes": attributes,
        **more,
    }


T0 = 1_735_689_600_000_000_000
CHAT = otel_span(
    "eee19b7ec3c1b174",
    T0 + 2_000_000_000,  # written after the completion span, started before it: sorted by time
    [
        _attr("gen_ai.operation.name", "stringValue", "chat"),
        _attr("gen_ai.provider.name", "stringValue", "openai"),
        _attr("gen_ai.request.model", "stringValue", "gpt-4o-mini"),
        _attr("gen_ai.request.max_tokens", "intValue", "100"),
        _attr("gen_ai.request.temperature", "doubleValue", 0.7),
        _attr("gen_ai.usage.input_tokens", "intValue", "12"),
        _attr("gen_ai.usage.output_tokens", "intValue", "34"),
        _attr(
            "gen_ai.response.finish_reasons", "arrayValue", {"values": [{"stringValue": "stop"}]}
        ),
    ],
)
COMPLETION = otel_span(
    "ccc19b7ec3c1b177",
    T0,
    [  # the names before input/output_tokens, and a count as a JSON number
        _attr("gen_ai.operation.name", "stringValue", "text_completion"),
        _attr("gen_ai.usage.prompt_tokens", "intValue", 40),
        _attr("gen_ai.usage.completion_tokens", "intValue", "8"),
    ],
)
TOOL = otel_span(
    "aaa19b7ec3c1b175", T0, [_attr("gen_ai.operation.name", "stringValue", "execute_tool")]
)
HTTP = otel_span("bbb19b7ec3c1b176", T0, [_attr("http.request.method", "stringValue", "POST")])
FAILED = otel_span(
    "ddd19b7ec3c1b178",
    T0,
    [_attr("gen_ai.operation.name", "stringValue", "chat")],
    status={"code": 2, "message": "rate limited"},
)


def otlp(*spans: dict[str, object]) -> dict[str, object]:
    return {
        "resourceSpans": [{"scopeSpans": [{"scope": {"name": "openai"}, "spans": list(spans)}]}]
    }


def write(tmp_path: Path, text: str, name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_mooncake_lines_keep_their_time_counts_and_shared_prefix(tmp_path: Path) -> None:
    trace = import_trace(write(tmp_path, MOONCAKE_README))
    assert (trace.format, trace.detected) == ("mooncake", True)
    first, second = trace.records
    assert (first.time, second.time) == (27.482, 30.535)
    assert (first.prompt_tokens, first.completion_tokens) == (6955, 52)
    assert first.params == {"max_tokens": 52}
    assert first.prefix_blocks is not None
    assert second.prefix_blocks is not None
    assert first.prefix_blocks[:12] == second.prefix_blocks[:12]
    assert first.prefix_block_tokens == 512
    assert first.imported_from == "mooncake line 1"
    summary = trace_summary(trace)
    assert summary.span_s == 3.053
    assert (summary.prompt_tokens, summary.completion_tokens) == (6955 + 6472, 52 + 26)
    assert summary.reused_prefix_tokens == 12 * 512  # the second request's 12 shared blocks
    assert "mooncake trace (detected): 2 requests" in describe(summary)


def test_the_conversation_trace_shares_its_first_block_across_requests(tmp_path: Path) -> None:
    trace = import_trace(write(tmp_path, MOONCAKE_CONVERSATION), "mooncake")
    assert [r.time for r in trace.records] == [0, 0, 3]
    assert not trace.detected
    assert trace_summary(trace).reused_prefix_tokens == 2 * 512  # block 0, twice


def test_imported_records_are_a_workload_file_old_readers_read(tmp_path: Path) -> None:
    """The new fields are optional: a record written before them reads, and an imported one is a
    WorkloadRecord whose dump reads back the same."""
    old = '{"request_id": "a", "time": 1700000000.5, "api": "chat", "status": 200}\n'
    assert read_workload(write(tmp_path, old, "old.jsonl"))[0].prefix_blocks is None
    records = import_trace(write(tmp_path, MOONCAKE_README)).records
    dumped = "".join(r.model_dump_json(exclude_none=True) + "\n" for r in records)
    assert read_workload(write(tmp_path, dumped, "new.jsonl")) == records
    assert import_trace(write(tmp_path, dumped, "new.jsonl")).format == "sparkrig"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"timestamp": 1, "input_length": -5, "output_length": 3}', "input_length is '-5'"),
        (
            '{"timestamp": 1, "input_length": 5.5, "output_length": 3}',
            "input_length is '5.5' (not whole)",
        ),
        (
            '{"timestamp": 1, "input_length": "55", "output_length": 3}',
            "input_length is '55' (a str)",
        ),
        (
            '{"timestamp": 1, "input_length": true, "output_length": 3}',
            "input_length is 'True' (a bool)",
        ),
        ('{"timestamp": 1, "input_length": 99999999999, "output_length": 3}', "(out of range)"),
        (
            '{"timestamp": NaN, "input_length": 5, "output_length": 3}',
            "timestamp is 'nan' (not finite",
        ),
        ('{"timestamp": 1e400, "input_length": 5, "output_length": 3}', "timestamp is 'inf'"),
        ('{"timestamp": -3, "input_length": 5, "output_length": 3}', "timestamp is '-3'"),
        (
            '{"timestamp": 1e12, "input_length": 5, "output_length": 3}',
            "timestamp is '1000000000000.0'",
        ),
        ('{"timestamp": 1, "input_length": 5}', "output_length is missing"),
        ('{"input_length": 5, "output_length": 3}', "timestamp is missing"),
        (
            '{"timestamp": 1, "input_length": 5, "output_length": 3, "hash_ids": 7}',
            "hash_ids is '7', not a list",
        ),
        (
            '{"timestamp": 1, "input_length": 5, "output_length": 3, "hash_ids": [1, -2]}',
            "hash_ids[1] is '-2'",
        ),
        (
            '{"timestamp": 1, "input_length": 5000, "output_length": 3, "hash_ids": [1, 2]}',
            "--block-tokens",
        ),
        ("[1, 2, 3]", "line 2 is list JSON, not an object"),
        ('{"timestamp": 1, "input_length": ', "line 2 is not JSON"),
    ],
)
def test_a_hostile_mooncake_line_is_refused_with_its_line_and_field(
    tmp_path: Path, line: str, expected: str
) -> None:
    good = '{"timestamp": 0, "input_length": 5, "output_length": 3}'
    path = write(tmp_path, f"{good}\n{line}\n")
    with pytest.raises(UsageError) as refused:
        import_trace(path, "mooncake")
    message = str(refused.value)
    assert expected in message
    assert "line 2" in message
    assert "\n" not in message


def test_otel_inference_spans_become_records_by_start_time_and_the_rest_are_counted(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path, json.dumps(otlp(CHAT, TOOL, HTTP, FAILED, COMPLETION), indent=2), "t.json"
    )
    trace = import_trace(path)
    assert trace.format == "otel"
    completion, chat = trace.records
    assert (completion.api, completion.prompt_tokens, completion.completion_tokens) == (
        "completions",
        40,
        8,
    )
    assert chat.api == "chat"
    assert chat.time - completion.time == pytest.approx(2.0)
    assert chat.model == "gpt-4o-mini"
    assert chat.params == {"max_tokens": 100, "temperature": 0.7}
    assert (chat.prompt_tokens, chat.completion_tokens) == (12, 34)
    assert chat.finish_reason == "stop"
    assert chat.e2e_s == pytest.approx(1.25)
    assert chat.request_id == "otel-eee19b7ec3c1b174"
    assert dict(trace.skipped) == {
        "gen_ai.operation.name execute_tool": 1,
        "no gen_ai.operation.name": 1,
        "ended in an error": 1,
    }
    summary = trace_summary(trace)
    assert (summary.records, summary.span_s, summary.reused_prefix_tokens) == (2, 2.0, None)
    assert "3 skipped" in describe(summary)


def test_an_otel_export_of_one_document_per_line_is_read_line_by_line(tmp_path: Path) -> None:
    path = write(tmp_path, f"{json.dumps(otlp(CHAT))}\n{json.dumps(otlp(COMPLETION, TOOL))}\n")
    trace = import_trace(path)
    assert [r.imported_from for r in trace.records] == [
        "otel line 2 resourceSpans[0].scopeSpans[0].spans[0]",
        "otel line 1 resourceSpans[0].scopeSpans[0].spans[0]",
    ]


def _with(span: dict[str, object], key: str, value: dict[str, object]) -> dict[str, object]:
    attributes = [a for a in span["attributes"] if a["key"] != key]  # type: ignore[index, union-attr]
    return {**span, "attributes": [*attributes, {"key": key, "value": value}]}


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        (
            _with(CHAT, "gen_ai.usage.output_tokens", {"intValue": "3.5"}),
            "gen_ai.usage.output_tokens is '3.5'",
        ),
        (
            _with(CHAT, "gen_ai.usage.input_tokens", {"intValue": "-1"}),
            "gen_ai.usage.input_tokens is '-1'",
        ),
        (_with(CHAT, "gen_ai.usage.input_tokens", {"doubleValue": 12.5}), "(not whole)"),
        (_with(CHAT, "gen_ai.usage.input_tokens", {"intValue": "9" * 30}), "(out of range)"),
        (_with(CHAT, "gen_ai.request.temperature", {"doubleValue": "NaN"}), "temperature is 'NaN'"),
        ({**CHAT, "startTimeUnixNano": None}, "startTimeUnixNano is missing"),
        ({**CHAT, "startTimeUnixNano": "17e8"}, "startTimeUnixNano is '17e8' (not ASCII digits)"),
        ({**CHAT, "endTimeUnixNano": str(T0)}, "endTimeUnixNano is"),
    ],
)
def test_a_hostile_otel_span_is_refused_with_its_place_and_attribute(
    tmp_path: Path, span: dict[str, object], expected: str
) -> None:
    path = write(tmp_path, json.dumps(otlp(COMPLETION, span)), "t.json")
    with pytest.raises(UsageError) as refused:
        import_trace(path, "otel")
    assert expected in str(refused.value)
    assert "resourceSpans[0].scopeSpans[0].spans[1]" in str(refused.value)


def test_spans_further_apart_than_a_trace_spans_are_refused(tmp_path: Path) -> None:
    late = {**CHAT, "startTimeUnixNano": str(T0 + 40 * 86_400 * 10**9), "endTimeUnixNano": "0"}
    path = write(tmp_path, json.dumps(otlp(COMPLETION, late)), "t.json")
    with pytest.raises(UsageError, match="spans 40 days from its first request to its last"):
        import_trace(path)


def test_an_export_with_no_inference_span_says_what_it_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(otlp(TOOL, HTTP)), "t.json")
    with pytest.raises(
        UsageError, match=r"no requests to replay .*1 gen_ai.operation.name execute_tool"
    ):
        import_trace(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "holds no records (line 1: empty)"),
        ("\n\n", "holds no records (line 1: empty)"),
        ("hello\n", "is not JSON (line 1 starts 'hello')"),
        (
            '{"name": "x", "kind": 1}\n',
            "cannot tell the trace format (first record's keys: name, kind)",
        ),
        ("[1]\n", "the first record is a JSON list"),
    ],
)
def test_a_file_of_no_known_format_is_refused_in_one_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    with pytest.raises(UsageError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        detect_format(text, tmp_path / "t.jsonl")


def test_an_unknown_format_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="trace format 'weka' is not known"):
        import_trace(write(tmp_path, MOONCAKE_README), "weka")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"request_id": "a", "time": NaN, "api": "chat", "status": 200}', "time is 'nan'"),
        ('{"request_id": "a", "time": -1, "api": "chat", "status": 200}', "time is '-1.0'"),
        (
            '{"request_id": "a", "time": 1, "api": "chat", "status": 200, "prompt_tokens": -4}',
            "prompt_tokens is '-4'",
        ),
    ],
)
def test_a_workload_log_with_a_bad_number_is_refused_with_its_line(
    tmp_path: Path, line: str, expected: str
) -> None:
    with pytest.raises(UsageError, match=f"line 1: {expected}"):
        read_workload(write(tmp_path, line + "\n"))
