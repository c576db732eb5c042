"""The bench receipt: identity, settings and every raw sample, versioned and written often."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from sparkrig.bench.idle_gap import IdleGap
from sparkrig.bench.max_load import MaxLoadResult, max_load_result
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.steady_warmup import SteadyWarmup
from sparkrig.bench.validity import INVALID_ERRORS
from sparkrig.client.live_kv_pool import LiveKvPool
from sparkrig.launch.state import BootRecord
from sparkrig.receipts import (
    KIND,
    SCHEMA_VERSION,
    ReceiptHeader,
    load_receipt_file,
    save_receipt_file,
)

_CLOSING_WARNINGS = ("nothing was measured", "malformed replies: ", "error rate: ")


class BenchReceipt(ReceiptHeader):
    WRITTEN_BY: ClassVar[str] = "sparkrig bench"

    kind: Literal["sparkrig-bench"] = Field(default="sparkrig-bench", description=KIND)
    schema_version: Literal[1] = Field(default=1, description=SCHEMA_VERSION)
    base_url: str = Field(description="the server's base URL the requests went to (no /v1)")
    model: str = Field(
        description="the model id every request named: --model, else the first the server "
        "lists at /v1/models"
    )
    suites: list[str] = Field(
        description="the suites run, in order (decode, concurrency, prefill, spec, multiturn; "
        "max-load for --find-max-load); a suite skipped or stopped says why in `warnings`"
    )
    settings: BenchSettings = Field(
        description="every setting of the run, most of them `sparkrig bench`'s options; "
        "compare refuses two receipts whose settings, model or suites differ"
    )
    steady_warmup: SteadyWarmup | None = Field(
        default=None, description="with --warmup-steady: each warm-up generation's decode rate"
    )
    idle_before: IdleGap | None = Field(
        default=None,
        description="how long the server sat idle before the run, where its counters and "
        "sparkrig's last run against it tell (bench/idle_gap.py)",
    )
    startup: BootRecord | None = Field(
        default=None,
        description="how the measured server booted (phases per rank, the slowest, the KV "
        "pool), when sparkrig started it; unset for a server started elsewhere",
    )
    kv_pool: LiveKvPool | None = Field(
        default=None,
        description="the KV pool the server reported when the run began (vLLM's "
        "cache_config_info, llama-server's /slots), where `startup` has none: a server started "
        "elsewhere; unset where the engine reports none",
    )
    pairing: str | None = Field(
        default=None,
        description="shared by the two receipts of one `bench --paired-with` run, whose rounds "
        "alternated between the two servers; compare then judges on paired round differences",
    )
    points: list[PointResult] = Field(
        default_factory=list,
        description="one per point (a suite at one setting), in the order first measured; each "
        "later round adds its samples to the same point",
    )
    max_load: MaxLoadResult | None = Field(
        default=None,
        description="--find-max-load: the highest level meeting the SLO, the lowest failing, "
        "and every probe in order; set when the run closes",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="what a reader of the whole run must know, in words: a suite skipped or "
        "stopped, no /metrics, a warm-up that never steadied, the share of failed requests, "
        "nothing measured",
    )

    @model_validator(mode="before")
    @classmethod
    def _prefill_text_before_the_corpus(cls, data: Any) -> Any:
        """A receipt written before `--prefill-text` cut its prefill prompts from the filler:
        read so, compare refuses to set it beside a corpus run (the setting's default)."""
        settings = data.get("settings") if isinstance(data, dict) else None
        if isinstance(settings, dict) and "prefill_text" not in settings:
            return {**data, "settings": {**settings, "prefill_text": "filler"}}
        return data

    @property
    def requests_sent(self) -> int:
        return sum(point.requests_sent for point in self.points)

    def requests_failed(self, kind: str | None = None) -> int:
        return sum(
            count
            for point in self.points
            for error_kind, count in point.request_errors.items()
            if kind is None or error_kind == kind
        )

    @property
    def first_error(self) -> str | None:
        return next((p.first_error for p in self.points if p.first_error is not None), None)

    def judge_max_load(self) -> None:
        """The --find-max-load answer from the probes so far (after each, and at the close)."""
        slo, ladder = self.settings.slo, self.settings.concurrency
        if "max-load" in self.suites and slo is not None:
            probes = [point for point in self.points if point.suite == "max-load"]
            self.max_load = max_load_result(probes, slo.label, min(ladder), max(ladder))

    def close(self) -> None:
        """Mark the run finished and say, in its warnings, what share of requests failed."""
        self.complete = True
        self.measured = any(point.samples for point in self.points)
        self.judge_max_load()
        # a run continued on another engine closes again: replace, never repeat, these lines
        self.warnings = [w for w in self.warnings if not w.startswith(_CLOSING_WARNINGS)]
        sent, failed = self.requests_sent, self.requests_failed()
        malformed = self.requests_failed("malformed")
        if malformed:
            self.warnings.append(
                f"malformed replies: {malformed} of {sent} requests ({malformed / sent:.0%}) got "
                "a reply with a field of the wrong type; their samples were discarded"
            )
        failing = [
            f"{point.suite}/{point.name}"
            for point in self.points
            if any(reason.startswith(INVALID_ERRORS) for reason in point.invalid_reasons)
        ]
        if failing:
            self.warnings.append(
                f"error rate: {len(failing)} points INVALID, their failed requests above the "
                f"{self.settings.max_error_rate:.1%} ceiling: {', '.join(failing[:5])}"
                + (" …" if len(failing) > 5 else "")
            )
        if not self.measured:
            self.warnings.append(
                f"nothing was measured: {failed} of {sent} requests failed"
                + (f" (first: {self.first_error})" if self.first_error else "")
            )


def save_receipt(receipt: BenchReceipt, path: Path) -> None:
    """Atomic rewrite: an interrupted run leaves the last complete sample on disk."""
    save_receipt_file(receipt, path)


def load_receipt(path: Path) -> BenchReceipt:
    return load_receipt_file(path, BenchReceipt)
