"""A soak's receipt: one entry per window, each problem with its request id, and when the
upstream went away if it did. Written after every window, so a run that dies keeps what it saw."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from sparkrig.json_files import read_receipt, write_atomically

SOAK_KIND = "sparkrig-soak"
SOAK_SCHEMA_VERSION = 1
SoakStatus = Literal["running", "complete", "interrupted", "upstream_lost"]


class SoakWindow(BaseModel):
    index: int
    start_s: float = Field(description="seconds from the soak's start")
    end_s: float
    partial: bool = Field(default=False, description="cut short (end of run, or upstream gone)")
    requests: int = Field(description="requests that finished in this window")
    errors: int = Field(description="requests lost: no complete reply")
    bad_outputs: int = Field(description="complete replies a detector found broken")
    output_tokens: int
    aggregate_tps: float | None = Field(description="output tokens / window length")
    per_stream_tps_median: float | None = Field(description="median of each reply's decode rate")
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    ttft_p99_s: float | None = None
    findings: dict[str, int] = Field(default_factory=dict, description="detector -> count")
    restarts: int | None = Field(
        default=None, description="server restarts seen in /metrics; None: /metrics unreadable"
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


class SoakProblem(BaseModel):
    request_id: str
    kind: Literal["lost", "bad_output"]
    window: int
    at_s: float = Field(description="seconds from the soak's start")
    message: str


class SoakReceipt(BaseModel):
    kind: Literal["sparkrig-soak"] = "sparkrig-soak"
    schema_version: int = SOAK_SCHEMA_VERSION
    url: str
    model: str
    traffic: str = Field(description="'mixed' or 'replay FILE'")
    started_at: str = Field(description="ISO 8601, UTC")
    concurrency: int
    duration_s: float = Field(description="asked for")
    window_s: float
    seed: int = 0
    idle_gap_s: float | None = Field(
        default=None, description="seconds with no traffic between windows (warm-state decay)"
    )
    status: SoakStatus = "running"
    upstream_lost_at_s: float | None = Field(
        default=None, description="seconds from the start when the upstream stopped answering"
    )
    upstream_lost_message: str | None = None
    windows: list[SoakWindow] = Field(default_factory=list)
    problems: list[SoakProblem] = Field(default_factory=list)

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
    return write_atomically(receipt, path)


def load_soak_receipt(path: Path) -> SoakReceipt:
    return read_receipt(
        path,
        SoakReceipt,
        kind=SOAK_KIND,
        schema_version=SOAK_SCHEMA_VERSION,
        written_by="sparkrig soak",
    )
