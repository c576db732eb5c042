"""The bench receipt: identity, settings and every raw sample, versioned and written often."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig import __version__
from sparkrig.bench.point import BenchSettings, PointResult
from sparkrig.json_files import read_receipt, write_atomically

RECEIPT_KIND = "sparkrig-bench"
RECEIPT_SCHEMA_VERSION = 1


class BenchReceipt(BaseModel):
    kind: Literal["sparkrig-bench"] = "sparkrig-bench"
    schema_version: Literal[1] = 1
    sparkrig_version: str = __version__
    created_at: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))
    host: str = Field(default_factory=socket.gethostname, description="where sparkrig ran")
    base_url: str
    model: str
    engine: str | None = Field(default=None, description="engine recognised from /metrics")
    suites: list[str]
    settings: BenchSettings
    points: list[PointResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    complete: bool = Field(default=False, description="False while running or if interrupted")


def save_receipt(receipt: BenchReceipt, path: Path) -> None:
    """Atomic rewrite: an interrupted run leaves the last complete sample on disk."""
    write_atomically(receipt, path)


def load_receipt(path: Path) -> BenchReceipt:
    return read_receipt(
        path, BenchReceipt, kind=RECEIPT_KIND, schema_version=RECEIPT_SCHEMA_VERSION,
        written_by="sparkrig bench",
    )  # fmt: skip
