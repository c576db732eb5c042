"""Scrape a server's Prometheus /metrics, read canonical quantities, and diff two snapshots."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, Field

from sparkrig.client.http_failures import web_page_title
from sparkrig.engines.metric_map import EngineMetricMap, MetricSource, Quantity
from sparkrig.engines.registry import ENGINES, adapter_by_metrics_name
from sparkrig.errors import EndpointError, MetricsError, excerpt
from sparkrig.outside_numbers import OutsideNumberError, finite_float, int_or_none

QuantityValue = float | dict[str, float] | None
# prometheus_client's process collector: vLLM's API server exposes it (llama.cpp does not), and a
# new value means another process answers, even one whose counters already passed the old ones
PROCESS_START = "process_start_time_seconds"


class MetricSample(BaseModel):
    """One Prometheus sample: its labels and value."""

    labels: dict[str, str]
    value: float


class MetricsSnapshot(BaseModel):
    """Every sample of one scrape, by sample name, and the engine that produced it."""

    engine: str | None = Field(description="llama.cpp, vllm, or None when not recognised")
    taken_ns: int = Field(description="perf_counter_ns when the text was received")
    samples: dict[str, list[MetricSample]]

    def read(self, quantity: Quantity) -> QuantityValue:
        """The canonical value, or None when this engine does not expose it."""
        source = self.engine_map().get(quantity)
        return None if source is None else _read_source(self.samples, source)

    def engine_map(self) -> EngineMetricMap:
        adapter = adapter_by_metrics_name(self.engine)
        return adapter.metric_map if adapter is not None else {}

    def canonical(self) -> dict[Quantity, QuantityValue]:
        return {quantity: self.read(quantity) for quantity in Quantity}


class MetricsDelta(BaseModel):
    """Change between two snapshots: counters as differences, gauges as the later value."""

    engine: str | None = Field(
        description="the engine the later scrape came from (llama.cpp, vllm); unset when not "
        "recognised"
    )
    elapsed_s: float = Field(description="seconds between the two scrapes")
    values: dict[Quantity, QuantityValue] = Field(
        description="every canonical quantity (prompt_tokens, generated_tokens, …): a number, "
        "numbers by label, or unset where the engine does not expose it"
    )
    server_restarted: bool = Field(
        description="a counter went backwards or the process start time changed: the server "
        "restarted between the scrapes, and every counter's delta is unset"
    )
    counters_backwards: list[str] = Field(
        default_factory=list, description="the _total counters that went backwards"
    )


def parse_metrics(text: str, taken_ns: int | None = None) -> MetricsSnapshot:
    samples: dict[str, list[MetricSample]] = {}
    first = text.strip().splitlines()[0][:80] if text.strip() else "(empty)"
    if (title := web_page_title(text.encode(errors="replace"))) is not None:
        raise MetricsError(
            f"/metrics answered a web page titled {title!r}, not Prometheus text (starts "
            f"{first!r}) — check the URL is the engine's own, not a web UI or login proxy in "
            "front of it, and that metrics are enabled (llama-server needs --metrics)"
        )
    _refuse_non_ascii_values(text)
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if (value := _sample_value(sample.name, sample.value)) is not None:
                    samples.setdefault(sample.name, []).append(
                        MetricSample(labels=dict(sample.labels), value=value)
                    )
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise MetricsError(
            f"the /metrics text is not Prometheus exposition format ({excerpt(str(exc), 80)}; "
            f"starts {first!r}) "
            "— check the URL is the engine's /metrics and that metrics are enabled "
            "(llama-server needs --metrics)"
        ) from exc
    if not samples:
        raise MetricsError(
            "the /metrics text holds no samples — check the URL is the engine's /metrics and "
            "that metrics are enabled (llama-server needs --metrics)"
        )
    return MetricsSnapshot(
        engine=detect_engine(samples),
        taken_ns=taken_ns if taken_ns is not None else time.perf_counter_ns(),
        samples=samples,
    )


def _refuse_non_ascii_values(text: str) -> None:
    """prometheus_client reads a value with float(), which takes "٣" for 3: the value and
    timestamp after a sample's labels must be ASCII (label values may be any text)."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#") or line.isascii():
            continue
        after = line.rpartition("}")[2] if "}" in line else line.partition(" ")[2]
        if not after.isascii():
            raise MetricsError(
                f"the /metrics text is not Prometheus exposition format (line {number}: the "
                f"value {excerpt(after.strip(), 40)!r} is not ASCII digits) — check the URL is "
                "the engine's /metrics and that nothing in front of it rewrites the text"
            )


_COUNTS = ("_total", "_count", "_bucket")


def _sample_value(name: str, value: float) -> float | None:
    """A sample's value as prometheus_client parsed it: a counter (or histogram count) must be
    finite and not negative, else MetricsError naming it; a gauge that is NaN or infinite reads
    as absent (an engine may export NaN for a gauge with nothing measured yet)."""
    if not name.endswith(_COUNTS) and not name.endswith("_sum"):
        return value if math.isfinite(value) else None
    minimum = 0.0 if name.endswith(_COUNTS) else None
    try:
        return finite_float(value, source="/metrics", field=name, minimum=minimum)
    except OutsideNumberError as exc:
        raise MetricsError(
            f"/metrics: counter {name} is {value!r}, expected a finite number"
            + (" of 0 or more" if minimum is not None else "")
            + " — the server (or a proxy) sent a broken counter; check its version"
        ) from exc


def detect_engine(samples: dict[str, Any]) -> str | None:
    for adapter in ENGINES.entries():
        if any(name.startswith(adapter.metric_prefix) for name in samples):
            return adapter.metrics_name
    return None


def _read_source(samples: dict[str, list[MetricSample]], source: MetricSource) -> QuantityValue:
    for names in (source.names, *source.alternatives):
        present = [name for name in names if name in samples]
        if not present:
            continue
        if source.per_label is None:
            return sum(sample.value for name in present for sample in samples[name]) * source.scale
        grouped: dict[str, float] = {}
        for name in present:
            for sample in samples[name]:
                key = sample.labels.get(source.per_label, "")
                grouped[key] = grouped.get(key, 0.0) + sample.value * source.scale
        return dict(sorted(grouped.items(), key=lambda item: _label_order(item[0])))
    return None


def accepted_per_position(deltas: Iterable[MetricsDelta]) -> dict[str, float]:
    """Accepted draft tokens per draft position, summed over deltas, in position order (a
    label that is not a number goes last)."""
    merged: dict[str, float] = {}
    for delta in deltas:
        value = delta.values.get(Quantity.SPEC_ACCEPTED_PER_POSITION)
        if isinstance(value, dict):
            for position, count in value.items():
                merged[position] = merged.get(position, 0.0) + count
    return dict(sorted(merged.items(), key=lambda item: _label_order(item[0])))


def _label_order(label: str) -> tuple[int, str]:
    position = int_or_none(label, minimum=0)  # "²".isdigit() is True, int("²") raises
    return (1 << 30, label) if position is None else (position, "")


def metrics_delta(before: MetricsSnapshot, after: MetricsSnapshot) -> MetricsDelta:
    backwards = sorted(
        name
        for name, after_samples in after.samples.items()
        if name.endswith("_total") and name in before.samples
        for sample in after_samples
        if _matching_value(before.samples[name], sample.labels) > sample.value
    )
    started, started_again = _process_start(before), _process_start(after)
    restarted = bool(backwards) or (
        started is not None and started_again is not None and started != started_again
    )
    values: dict[Quantity, QuantityValue] = {}
    for quantity, source in after.engine_map().items():
        later, earlier = after.read(quantity), before.read(quantity)
        if source.kind == "gauge":
            values[quantity] = later
        elif restarted or later is None or earlier is None:
            values[quantity] = None
        else:
            values[quantity] = _subtract(later, earlier)
    for quantity in Quantity:
        values.setdefault(quantity, None)
    return MetricsDelta(
        engine=after.engine,
        elapsed_s=(after.taken_ns - before.taken_ns) / 1e9,
        values=values,
        server_restarted=restarted,
        counters_backwards=sorted(set(backwards)),
    )


def _process_start(snapshot: MetricsSnapshot) -> float | None:
    samples = snapshot.samples.get(PROCESS_START, [])
    return samples[0].value if len(samples) == 1 else None


def _matching_value(samples: list[MetricSample], labels: dict[str, str]) -> float:
    for sample in samples:
        if sample.labels == labels:
            return sample.value
    return float("-inf")  # a new label set cannot have gone backwards


def _subtract(
    later: float | dict[str, float], earlier: float | dict[str, float]
) -> float | dict[str, float]:
    if isinstance(later, dict):
        base = earlier if isinstance(earlier, dict) else {}
        return {key: value - base.get(key, 0.0) for key, value in later.items()}
    return later - (earlier if isinstance(earlier, float | int) else 0.0)


async def scrape_metrics(client: Any, path: str = "/metrics") -> MetricsSnapshot:
    """Fetch and parse `/metrics` through an EndpointClient (or anything with get_text)."""
    text = await client.get_text(path)
    return parse_metrics(text, taken_ns=time.perf_counter_ns())


async def try_scrape_metrics(client: Any) -> MetricsSnapshot | None:
    """`scrape_metrics`, or None when the server has no usable /metrics (absent, unreachable,
    not Prometheus text): callers that can work without metrics say so themselves."""
    try:
        return await scrape_metrics(client)
    except (EndpointError, aiohttp.ClientError, OSError, TimeoutError):
        return None
