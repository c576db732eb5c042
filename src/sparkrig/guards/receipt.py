"""The check receipt: identity, settings and every guard's verdict, versioned, written often."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from sparkrig.client.live_kv_pool import LiveKvPool
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.verdict import GuardResult
from sparkrig.launch.state import BootRecord
from sparkrig.receipts import (
    KIND,
    SCHEMA_VERSION,
    ReceiptHeader,
    load_receipt_file,
    save_receipt_file,
)


class CheckReceipt(ReceiptHeader):
    WRITTEN_BY: ClassVar[str] = "sparkrig check"

    kind: Literal["sparkrig-check"] = Field(default="sparkrig-check", description=KIND)
    schema_version: Literal[1] = Field(default=1, description=SCHEMA_VERSION)
    base_url: str = Field(description="the server's base URL the guards sent to (no /v1)")
    model: str = Field(
        description="the model id every request named: --model, else the first the server "
        "lists at /v1/models"
    )
    settings: CheckSettings = Field(
        description="the battery's settings, some of them `sparkrig check`'s options"
    )
    guards: list[str] = Field(description="the guards chosen, in run order")
    baseline_path: str = Field(
        description="the baseline file of this server and model (--baseline, else one per "
        "server and model under sparkrig's state folder) that the capability guards judge by"
    )
    recorded_baseline: bool = Field(
        default=False,
        description="--record-baseline: this run saved its capability scores (exact, needle, "
        "acceptance) to baseline_path, for later runs to be judged against",
    )
    against: str | None = Field(
        default=None,
        description="`check --against`: the earlier build's check receipt these replies were "
        "compared with (its verdict is the result named `against`)",
    )
    results: list[GuardResult] = Field(
        default_factory=list,
        description="one per guard, in run order, each saved as it lands; then, with "
        "--against, the comparison with that receipt; with --repeat-every, the margin and "
        "drift probes again, until Ctrl-C",
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

    @property
    def failed(self) -> list[GuardResult]:
        return [result for result in self.results if result.verdict == "FAIL"]


def save_check_receipt(receipt: CheckReceipt, path: Path) -> None:
    save_receipt_file(receipt, path)


def load_check_receipt(path: Path) -> CheckReceipt:
    return load_receipt_file(path, CheckReceipt)
