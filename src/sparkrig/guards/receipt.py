"""The check receipt: identity, settings and every guard's verdict, versioned, written often."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from sparkrig import __version__
from sparkrig.errors import UsageError
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.verdict import GuardResult


class CheckReceipt(BaseModel):
    kind: Literal["sparkrig-check"] = "sparkrig-check"
    schema_version: Literal[1] = 1
    sparkrig_version: str = __version__
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    host: str = Field(default_factory=socket.gethostname)
    base_url: str
    model: str
    engine: str | None = None
    settings: CheckSettings
    guards: list[str] = Field(description="the guards chosen, in run order")
    baseline_path: str
    recorded_baseline: bool = False
    results: list[GuardResult] = Field(default_factory=list)
    complete: bool = False

    @property
    def failed(self) -> list[GuardResult]:
        return [result for result in self.results if result.verdict == "FAIL"]


def save_check_receipt(receipt: CheckReceipt, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(receipt.model_dump_json(indent=2))
    scratch.replace(path)


def load_check_receipt(path: Path) -> CheckReceipt:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise UsageError(f"receipt {path} does not exist — check the path") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path} is not JSON — pass a receipt written by `sparkrig check`"
        ) from exc
    if not isinstance(raw, dict) or raw.get("kind") != "sparkrig-check":
        raise UsageError(f"{path} is not a sparkrig check receipt — pass one from `sparkrig check`")
    if raw.get("schema_version") != 1:
        raise UsageError(
            f"{path} has check receipt schema {raw.get('schema_version')}, this sparkrig reads 1 "
            "— use the sparkrig version that wrote it, or rerun the check"
        )
    try:
        return CheckReceipt.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(
            f"{path} is a damaged check receipt ({exc.error_count()} invalid fields) — rerun the "
            "check"
        ) from exc
