"""`gateway serve`'s own Prometheus metrics, on its /metrics. One registry per gateway, so two
gateways in one process (tests) never share counts. docs/gateway.md lists the names."""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

from sparkrig import defaults

PREFIX = "sparkrig_gateway"
# the _created series only add noise to every scrape
disable_created_metrics()  # type: ignore[no-untyped-call]
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ServeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # process_start_time_seconds: restarts show
        buckets = defaults.GATEWAY_LATENCY_BUCKETS_S
        self.requests = Counter(
            f"{PREFIX}_requests",
            "generation requests answered, by api and HTTP status",
            ["api", "status"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            f"{PREFIX}_in_flight", "generation requests in flight", registry=self.registry
        )
        self.request_seconds = Histogram(
            f"{PREFIX}_request_seconds",
            "request arrival to the reply's end",
            ["api"],
            buckets=buckets,
            registry=self.registry,
        )
        self.ttft_seconds = Histogram(
            f"{PREFIX}_ttft_seconds",
            "request arrival to the first output event sent",
            ["api"],
            buckets=buckets,
            registry=self.registry,
        )
        self.detections = Counter(
            f"{PREFIX}_detections",
            "live-guard findings, by detector",
            ["detector"],
            registry=self.registry,
        )
        self.empty_content = Counter(
            f"{PREFIX}_empty_content",
            "replies with empty content and real completion tokens, by classified cause",
            ["cause"],
            registry=self.registry,
        )
        self.stops_applied = Counter(
            f"{PREFIX}_stops_applied",
            "replies a stop string ended here, in the content",
            registry=self.registry,
        )
        self.stops_held = Counter(
            f"{PREFIX}_stops_held",
            "reasoning requests whose stop strings were held back from the upstream",
            registry=self.registry,
        )
        self.upstream_errors = Counter(
            f"{PREFIX}_upstream_errors",
            "upstream unreachable, cut mid-stream or malformed",
            ["kind"],
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
