"""A soak's receipt: one entry per window, each problem with its request id, and when the
upstream went away if it did. Written after every window, so a run that dies keeps what it saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from sparkrig.receipts import (
    KIND,
    SCHEMA_VERSION,
    ReceiptHeader,
    Upgrade,
    load_receipt_file,
    save_receipt_file,
)

SoakStatus = Literal["running", "complete", "interrupted", "upstream_lost"]


class SoakWindow(BaseModel):
    index: int = Field(description="the window's number, from 0")
    start_s: float = Field(description="seconds from the soak's start")
    end_s: float = Field(description="seconds from the soak's start")
    partial: bool = Field(default=False, description="cut short (end of run, or upstream gone)")
    requests: int = Field(description="requests that finished in this window")
    errors: int = Field(description="requests lost: no complete reply")
    bad_outputs: int = Field(description="complete replies a detector found broken")
    output_tokens: int = Field(
        description="tokens of the window's complete replies, as the server counted them (a "
        "reply it gave no count for adds none)"
    )
    aggregate_tps: float | None = Field(description="output tokens / window length")
    per_stream_tps_median: float | None = Field(description="median of each reply's decode rate")
    ttft_p50_s: float | None = Field(
        default=None,
        description="seconds to the first token of the window's complete replies, median "
        "(nearest rank); unset when none had one",
    )
    ttft_p95_s: float | None = Field(default=None, description="the same, 95th percentile")
    ttft_p99_s: float | None = Field(default=None, description="the same, 99th percentile")
    findings: dict[str, int] = Field(default_factory=dict, description="detector -> count")
    restarts: int | None = Field(
        default=None,
        description="1 when /metrics showed the server restarted during the window (its "
        "process start time changed, or a counter went backwards), else 0; unset where "
        "/metrics could not be read",
    )
    kinds: dict[str, int] = Field(default_factory=dict, description="traffic kind -> requests")
    first_ttft_s: float | None = Field(
        default=None,
        description="TTFT of the window's first request sent (after an idle gap: "
        "what the gap cost)",
    )
    idle_before_s: float | None = Field(
        default=None, description="seconds with no traffic just before this window"
    )
    late_ms_p50: float | None = Field(
        default=None,
        description="--paced: how late the client sent this window's requests against their "
        "trace offsets, median (ms); unset in the closed loop",
    )
    late_ms_p99: float | None = Field(default=None, description="--paced: 99th percentile")
    late_ms_max: float | None = Field(default=None, description="--paced: the latest send")


class SoakPacing(BaseModel):
    """A paced replay's schedule against what the client did (docs/gateway.md, "Paced
    replay"): the trace's offered rate and start offsets against the achieved ones."""

    speed: float = Field(description="--speed: the trace's gaps are divided by it")
    trace_requests: int = Field(description="requests in the trace, each sent once")
    trace_span_s: float = Field(
        description="seconds from the trace's first request to its last, after --speed"
    )
    sent: int = Field(description="requests sent (fewer when --duration ends the run first)")
    offered_per_s: float | None = Field(
        description="the schedule's rate over the requests sent: (sent - 1) ÷ the last one's "
        "offset; unset for one request or a zero span"
    )
    achieved_per_s: float | None = Field(
        description="(sent - 1) ÷ (last send - first send), by the client's send stamps"
    )
    late_ms_p50: float | None = Field(description="send stamp - scheduled offset, median (ms)")
    late_ms_p99: float | None = Field(description="the same, 99th percentile (ms)")
    late_ms_max: float | None = Field(description="the same, the largest (ms)")

    def describe(self) -> str:
        def rate(value: float | None) -> str:
            return "—" if value is None else f"{value:.3g}/s"

        late = "—"
        if None not in (self.late_ms_p50, self.late_ms_p99, self.late_ms_max):
            late = (
                f"p50 {self.late_ms_p50:.1f} ms, p99 {self.late_ms_p99:.1f} ms, max "
                f"{self.late_ms_max:.1f} ms"
            )
        return (
            f"paced x{self.speed:g}: {self.sent} of {self.trace_requests} trace requests sent, "
            f"offered {rate(self.offered_per_s)}, achieved {rate(self.achieved_per_s)}, sent "
            f"late by {late}"
        )


class LeftOutKind(BaseModel):
    """A kind of the mixed traffic a run did not send, and why: the server refused it before
    the first window (bench/soak_tool_probe.py), or the user left it out (--no-tools)."""

    kind: str = Field(description="the traffic kind left out (bench/soak_traffic.py KINDS)")
    by: Literal["server", "flag"] = Field(
        description="server: the server refused the one probe request of this kind, in words "
        "that say it does not serve it; flag: left out on purpose (--no-tools)"
    )
    server_said: str | None = Field(
        default=None,
        description="the server's own refusal (HTTP status and message); unset when left out "
        "by flag",
    )
    fix: str | None = Field(default=None, description="how to serve the kind, so a soak sends it")

    def describe(self) -> str:
        if self.by == "flag":
            return f"{self.kind} left out on purpose (--no-tools)"
        return f"{self.kind} left out: the server refused it with {self.server_said} — {self.fix}"


class SoakProblem(BaseModel):
    request_id: str = Field(
        description="the X-Request-Id sparkrig sent with the request, to find it in the "
        "server's log"
    )
    kind: Literal["lost", "bad_output"] = Field(
        description="lost: no complete reply; bad_output: a detector found the reply broken"
    )
    window: int = Field(description="the index of the window the request finished in")
    at_s: float = Field(description="seconds from the soak's start")
    message: str = Field(description="the request's error, or the detector and what it found")


def soak_schema_1(raw: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 soak receipt (sparkrig before the receipt family) as schema 2: `url` is
    `base_url`, the `started_at` text is `created_at`; it recorded neither the sparkrig version
    nor the host (None), and `complete` and `measured` follow from its status and windows."""
    raw["base_url"] = raw.pop("url")
    raw["created_at"] = raw.pop("started_at")
    raw.setdefault("sparkrig_version", None)
    raw.setdefault("host", None)
    raw["complete"] = raw.get("status") == "complete"
    windows = raw.get("windows") or []
    raw["measured"] = any(isinstance(w, dict) and w.get("requests") for w in windows)
    raw["schema_version"] = 2
    return raw


class SoakReceipt(ReceiptHeader):
    WRITTEN_BY: ClassVar[str] = "sparkrig soak"
    UPGRADES: ClassVar[dict[int, Upgrade]] = {1: soak_schema_1}

    kind: Literal["sparkrig-soak"] = Field(default="sparkrig-soak", description=KIND)
    schema_version: Literal[2] = Field(default=2, description=SCHEMA_VERSION)
    base_url: str = Field(description="the server's URL the soak sent to, as given")
    model: str = Field(
        description="the model id every request named: --model, else the first the server "
        "lists at /v1/models"
    )
    traffic: str = Field(description="'mixed', or 'replay FILE (format[, paced xSPEED])'")
    concurrency: int = Field(
        description="closed-loop streams (--concurrency), each sending its next request when "
        "its last one finished"
    )
    duration_s: float = Field(
        description="seconds asked for (--duration); the windows say how long it ran"
    )
    window_s: float = Field(description="seconds per window (--window)")
    seed: int = Field(default=0, description="--seed: varies the mixed traffic")
    idle_gap_s: float | None = Field(
        default=None, description="seconds with no traffic between windows (warm-state decay)"
    )
    stagger_s: float | None = Field(
        default=None,
        description="--stagger: stream k of the closed loop joined k × this many seconds in "
        "(staggered independent arrivals); unset: all at once",
    )
    kinds: list[str] | None = Field(
        default=None,
        description="the mixed traffic's kinds, in the order it cycles over them; unset for a "
        "replay, and in receipts written before soak recorded them (it sent every kind)",
    )
    left_out: list[LeftOutKind] = Field(
        default_factory=list,
        description="kinds of the mix this run did not send, each with why (empty in receipts "
        "written before soak could leave one out)",
    )
    pacing: SoakPacing | None = Field(
        default=None,
        description="--paced: an open loop sending each trace request at its offset; unset "
        "in the closed loop of `concurrency` workers",
    )
    status: SoakStatus = Field(
        default="running",
        description="running while it runs; then complete, interrupted (Ctrl-C, a signal, an "
        "error), or upstream_lost (the server stopped answering)",
    )
    upstream_lost_at_s: float | None = Field(
        default=None, description="seconds from the start when the upstream stopped answering"
    )
    upstream_lost_message: str | None = Field(
        default=None,
        description="the error of the last of the failed requests in a row (connection, stream "
        "cut, timeout, 502) that ended the run",
    )
    windows: list[SoakWindow] = Field(
        default_factory=list,
        description="one per window, in order, each added (and the file saved) as it closes; "
        "a request counts in the window it finished in",
    )
    problems: list[SoakProblem] = Field(
        default_factory=list,
        description="every lost request, and every detector finding on a complete reply (a "
        "reply may have several), each with its request id",
    )

    def finish(self, status: SoakStatus) -> None:
        """The run ended with `status`; the header says whether it is whole and measured."""
        self.status = status
        self.complete = status == "complete"
        self.measured = self.requests > 0

    @property
    def requests(self) -> int:
        return sum(window.requests for window in self.windows)

    @property
    def lost(self) -> int:
        return sum(1 for problem in self.problems if problem.kind == "lost")

    @property
    def bad_outputs(self) -> int:
        return sum(1 for problem in self.problems if problem.kind == "bad_output")


def save_soak_receipt(receipt: SoakReceipt, path: Path) -> Path:
    return save_receipt_file(receipt, path)


def load_soak_receipt(path: Path) -> SoakReceipt:
    return load_receipt_file(path, SoakReceipt)
