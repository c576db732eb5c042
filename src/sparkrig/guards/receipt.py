"""The check receipt: identity, settings and every guard's verdict, versioned, written often."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from sparkrig.client.live_kv_pool import LiveKvPool
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.verdict import GuardResult
from sparkrig.launch.state import BootRecord
from sparkrig.receipts import ReceiptHeader, load_receipt_file, save_receipt_file


class CheckReceipt(ReceiptHeader):
    WRITTEN_BY: ClassVar[str] = "sparkrig check"

    kind: Literal["sparkrig-check"] = "sparkrig-check"
    schema_version: Literal[1] = 1
    base_url: str
    model: str
    settings: CheckSettings
    guards: list[str] = Field(description="the guards chosen, in run order")
    baseline_path: str
    recorded_baseline: bool = False
    against: str | None = Field(
        default=None,
        description="`check --against`: the earlier build's check receipt these replies were "
        "compared with (its verdict is the result named `against`)",
    )
    results: list[GuardResult] = Field(default_factory=list)
    startup: BootRecord | None = Field(
        default=None,
        description="how the measured server booted (phases per rank, the slowest, the KV "
        "pool), when sparkrig started it; None for a server started elsewhere",
    )
    kv_pool: LiveKvPool | None = Field(
        default=None,
        description="the KV pool the server reported when the run began (vLLM's "
        "cache_config_info, llama-server's /slots), where `startup` has none: a server started "
        "elsewhere; None where the engine reports none",
    )

    @property
    def failed(self) -> list[GuardResult]:
        return [result for result in self.results if result.verdict == "FAIL"]


def save_check_receipt(receipt: CheckReceipt, path: Path) -> None:
    save_receipt_file(receipt, path)


def load_check_receipt(path: Path) -> CheckReceipt:
    return load_receipt_file(path, CheckReceipt)
