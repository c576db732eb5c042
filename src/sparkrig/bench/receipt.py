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
_CLOSING_WARNINGS = ("nothing was measured", "malformed replies: ")


class BenchReceipt(BaseModel):
    kind: Literal["sparkrig-bench"] = "sparkrig-bench"
    schema_version: Literal[1] = 1
    sparkrig_version: str = __version__
    created_at: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))
    host: str = Field(default_factory=socket.gethostname, description="where sparkrig ran")
    base_url: str
    model: str
    engine: str | None = Field(default=None, description="engine recognised from /metrics")
    engine_build: str | None = Field(
        default=None,
        description="the engine build that served (variant, repack on or off) when sparkrig "
        "started it; None for a server started elsewhere",
    )
    suites: list[str]
    settings: BenchSettings
    pairing: str | None = Field(
        default=None,
        description="shared by the two receipts of one `bench --paired-with` run, whose rounds "
        "alternated between the two servers; compare then judges on paired round differences",
    )
    points: list[PointResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    complete: bool = Field(default=False, description="False while running or if interrupted")
    measured: bool | None = Field(
        default=None,
        description="at least one point has a sample; False: this receipt holds no figure "
        "(None: written before sparkrig recorded it)",
    )

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

    def close(self) -> None:
        """Mark the run finished and say, in its warnings, what share of requests failed."""
        self.complete = True
        self.measured = any(point.samples for point in self.points)
        # a run continued on another engine closes again: replace, never repeat, these lines
        self.warnings = [w for w in self.warnings if not w.startswith(_CLOSING_WARNINGS)]
        sent, failed = self.requests_sent, self.requests_failed()
        malformed = self.requests_failed("malformed")
        if malformed:
            self.warnings.append(
                f"malformed replies: {malformed} of {sent} requests ({malformed / sent:.0%}) got "
                "a reply with a field of the wrong type; their samples were discarded"
            )
        if not self.measured:
            self.warnings.append(
                f"nothing was measured: {failed} of {sent} requests failed"
                + (f" (first: {self.first_error})" if self.first_error else "")
            )


def save_receipt(receipt: BenchReceipt, path: Path) -> None:
    """Atomic rewrite: an interrupted run leaves the last complete sample on disk."""
    write_atomically(receipt, path)


def load_receipt(path: Path) -> BenchReceipt:
    return read_receipt(
        path,
        BenchReceipt,
        kind=RECEIPT_KIND,
        schema_version=RECEIPT_SCHEMA_VERSION,
        written_by="sparkrig bench",
    )
