"""The bench receipt: identity, settings and every raw sample, versioned and written often."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from sparkrig import __version__
from sparkrig.bench.point import BenchSettings, PointResult
from sparkrig.errors import UsageError

RECEIPT_KIND = "sparkrig-bench"
RECEIPT_SCHEMA_VERSION = 1


class BenchReceipt(BaseModel):
    kind: Literal["sparkrig-bench"] = "sparkrig-bench"
    schema_version: Literal[1] = 1
    sparkrig_version: str = __version__
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
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
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(receipt.model_dump_json(indent=2))
    scratch.replace(path)


def load_receipt(path: Path) -> BenchReceipt:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise UsageError(f"receipt {path} does not exist — check the path") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path} is not JSON — pass a receipt written by `sparkrig bench`"
        ) from exc
    if not isinstance(raw, dict) or raw.get("kind") != RECEIPT_KIND:
        raise UsageError(f"{path} is not a sparkrig bench receipt — pass one from `sparkrig bench`")
    if raw.get("schema_version") != RECEIPT_SCHEMA_VERSION:
        raise UsageError(
            f"{path} has receipt schema {raw.get('schema_version')}, this sparkrig reads "
            f"{RECEIPT_SCHEMA_VERSION} — use the sparkrig version that wrote it, or rerun the bench"
        )
    try:
        return BenchReceipt.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(
            f"{path} is a damaged receipt ({exc.error_count()} invalid fields) — rerun the bench"
        ) from exc
