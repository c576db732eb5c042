"""A soak's per-request outcomes and per-window figures. Pure: the runner hands in what came
back; the checks on each reply are the cheap detectors plus the shape its kind promised
(JSON that parses and fits its schema, tool-call arguments that parse)."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sparkrig.bench.soak_receipt import SoakWindow
from sparkrig.bench.soak_traffic import Kind
from sparkrig.client.records import RequestRecord
from sparkrig.client.request_parts import PERSON_SCHEMA
from sparkrig.detectors.schema import schema_problems
from sparkrig.detectors.text import (
    loop_findings,
    markup_leak_findings,
    replacement_char_findings,
)


@dataclass
class Outcome:
    request_id: str
    kind: Kind
    done_s: float  # seconds from the soak's start
    sent_s: float = 0.0
    error: str | None = None
    error_kind: str | None = None
    output_tokens: int = 0
    decode_tps: float | None = None
    ttft_s: float | None = None
    late_ms: float | None = None  # paced: the send stamp against the trace offset
    findings: list[tuple[str, str]] = field(default_factory=list)  # (detector, message)


def output_findings(kind: Kind, record: RequestRecord) -> list[tuple[str, str]]:
    """What is wrong with a complete reply; empty when nothing is."""
    found = [
        (f.detector, f.message)
        for detect in (replacement_char_findings, loop_findings, markup_leak_findings)
        for f in detect(record.content)
    ]
    found += [(f.detector, f.message) for f in replacement_char_findings(record.reasoning)]
    if record.finish_reason == "length":
        return found  # a reply cut by its budget need not be whole JSON
    if kind == "json" and record.content.strip():
        try:
            value = json.loads(record.content)
        except json.JSONDecodeError as exc:
            found.append(("json_schema", f"the reply is not JSON ({exc.msg} at {exc.pos})"))
        else:
            if problems := schema_problems(value, PERSON_SCHEMA):
                found.append(("json_schema", f"the JSON fails its schema: {'; '.join(problems)}"))
    for call in record.tool_calls:
        arguments = (call.get("function") or {}).get("arguments") or "{}"
        try:
            json.loads(arguments)
        except json.JSONDecodeError as exc:
            found.append(("tool_args", f"tool-call arguments do not parse ({exc.msg})"))
    return found


def percentile(values: Sequence[float], share: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def window_figures(
    index: int,
    start_s: float,
    end_s: float,
    outcomes: Sequence[Outcome],
    *,
    restarts: int | None,
    partial: bool = False,
) -> SoakWindow:
    done = [o for o in outcomes if o.error is None]
    tokens = sum(o.output_tokens for o in done)
    rates = [o.decode_tps for o in done if o.decode_tps is not None]
    ttfts = [o.ttft_s for o in done if o.ttft_s is not None]
    span = end_s - start_s
    first = min((o for o in done if o.ttft_s is not None), key=lambda o: o.sent_s, default=None)
    findings = Counter(detector for o in done for detector, _ in o.findings)
    late = [o.late_ms for o in outcomes if o.late_ms is not None]
    return SoakWindow(
        index=index,
        start_s=round(start_s, 3),
        end_s=round(end_s, 3),
        partial=partial,
        requests=len(outcomes),
        errors=len(outcomes) - len(done),
        bad_outputs=sum(1 for o in done if o.findings),
        output_tokens=tokens,
        aggregate_tps=tokens / span if span > 0 and done else None,
        per_stream_tps_median=statistics.median(rates) if rates else None,
        ttft_p50_s=percentile(ttfts, 0.50),
        ttft_p95_s=percentile(ttfts, 0.95),
        ttft_p99_s=percentile(ttfts, 0.99),
        findings=dict(findings),
        restarts=restarts,
        kinds=dict(Counter(o.kind for o in outcomes)),
        first_ttft_s=first.ttft_s if first else None,
        late_ms_p50=percentile(late, 0.50),
        late_ms_p99=percentile(late, 0.99),
        late_ms_max=max(late, default=None),
    )
