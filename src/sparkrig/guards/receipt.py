"""The check receipt: identity, settings and every guard's verdict, versioned, written often."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig import __version__
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.verdict import GuardResult
from sparkrig.json_files import read_receipt, write_atomically


class CheckReceipt(BaseModel):
    kind: Literal["sparkrig-check"] = "sparkrig-check"
    schema_version: Literal[1] = 1
    sparkrig_version: str = __version__
    created_at: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))
    host: str = Field(default_factory=socket.gethostname)
    base_url: str
    model: str
    engine: str | None = None
    engine_build: str | None = Field(
        default=None,
        description="the engine build that served (variant, repack on or off) when sparkrig "
        "started it; None for a server started elsewhere",
    )
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
    complete: bool = False

    @property
    def failed(self) -> list[GuardResult]:
        return [result for result in self.results if result.verdict == "FAIL"]


def save_check_receipt(receipt: CheckReceipt, path: Path) -> None:
    write_atomically(receipt, path)


def load_check_receipt(path: Path) -> CheckReceipt:
    return read_receipt(
        path, CheckReceipt, kind="sparkrig-check", schema_version=1, written_by="sparkrig check"
    )
