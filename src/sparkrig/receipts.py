"""The receipt family: the header every receipt shares, and its one save and one load.

A receipt is what a measuring command (bench, check, soak, the demo's smoke, fabric test) writes:
one JSON file, rewritten atomically as results land. Each kind is one subclass of
`ReceiptHeader` that pins `kind` and `schema_version` to literals, so the kinds form a pydantic
union discriminated on `kind` (`report/receipt_kinds.py` holds it). The header answers, for any
receipt: what wrote it and when (kind, schema version, sparkrig version, created_at with its time
zone, host), what it measured (base URL, model, engine, engine build), and whether it is whole
(complete) and holds a figure at all (measured).

An older schema still loads: a kind lists, in `UPGRADES`, each older version it reads and the
function that rewrites such a file's fields as today's (a renamed field, a field split in two).
A version it does not list fails in one line naming the version. A kind written before it
named itself says, in `KINDLESS`, how to tell such a file by its fields.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig import __version__
from sparkrig.json_files import read_receipt, write_atomically

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]
KIND = "which receipt this is; sparkrig reads the file as the kind it names"
"""The description of `kind`, where a receipt kind pins it to its literal."""
SCHEMA_VERSION = (
    "the layout of this kind the file was written in; an older one this sparkrig still reads "
    "is upgraded as the file loads"
)
"""The description of `schema_version`, where a receipt kind pins it to its literal."""
AnyReceiptModel = TypeVar("AnyReceiptModel", bound="ReceiptHeader")


class ReceiptHeader(BaseModel):
    """The fields every receipt carries; a kind narrows `kind` and `schema_version` to literals
    and may make `base_url` and `model` required."""

    WRITTEN_BY: ClassVar[str] = "sparkrig"
    UPGRADES: ClassVar[Mapping[int, Upgrade]] = {}
    KINDLESS: ClassVar[Callable[[dict[str, Any]], bool] | None] = None

    kind: str = Field(description=KIND)
    schema_version: int = Field(description=SCHEMA_VERSION)
    sparkrig_version: str | None = Field(
        default=__version__,
        description="the sparkrig version that wrote it (unset in files written before "
        "sparkrig recorded it)",
    )
    created_at: AwareDatetime = Field(
        default_factory=lambda: datetime.now(UTC),
        description="when the run started, with its time zone",
    )
    host: str | None = Field(
        default_factory=socket.gethostname,
        description="the host name of the machine sparkrig ran on (unset in files written "
        "before sparkrig recorded it)",
    )
    base_url: str | None = Field(
        default=None,
        description="the endpoint measured; unset in a receipt of no endpoint (a fabric test)",
    )
    model: str | None = Field(
        default=None,
        description="the model served at base_url; unset in a receipt of no endpoint",
    )
    engine: str | None = Field(
        default=None,
        description="the engine, as its /metrics names it (llama.cpp, vllm); unset where it "
        "was not recognised, and in the kinds that do not record it (soak, fabric test)",
    )
    engine_build: str | None = Field(
        default=None,
        description="the engine build that served (variant, repack on or off) when sparkrig "
        "started the server; unset for a server started elsewhere, and in soak and fabric test "
        "receipts",
    )
    complete: bool = Field(
        default=False,
        description="the run finished; false while it runs, and in a run interrupted or "
        "stopped early (the file keeps what it measured until then)",
    )
    measured: bool | None = Field(
        default=None,
        description="the receipt holds at least one figure; false: it holds none; unset until "
        "the run closes (in a bench, check or fabric test stopped part way) and in files "
        "written before sparkrig recorded it",
    )

    @classmethod
    def kind_name(cls) -> str:
        """The `kind` literal this class pins (its default)."""
        default = cls.model_fields["kind"].default
        assert isinstance(default, str), f"{cls.__name__} pins no kind"
        return default

    @classmethod
    def current_schema(cls) -> int:
        default = cls.model_fields["schema_version"].default
        assert isinstance(default, int), f"{cls.__name__} pins no schema version"
        return default

    @property
    def subject(self) -> str:
        """What the receipt is about, for a page title: the model, or the kind when none."""
        return self.model or self.kind.removeprefix("sparkrig-")


def save_receipt_file(receipt: ReceiptHeader, path: Path) -> Path:
    """Atomic rewrite: an interrupted run leaves the last complete result on disk."""
    return write_atomically(receipt, path)


def load_receipt_file(path: Path, model: type[AnyReceiptModel]) -> AnyReceiptModel:
    """A receipt of `model`'s kind from `path`, upgraded from an older schema it still reads;
    every other file fails in one line naming what it is and what to do."""
    return read_receipt(
        path,
        model,
        kind=model.kind_name(),
        schema_version=model.current_schema(),
        written_by=model.WRITTEN_BY,
        upgrades=model.UPGRADES,
        kindless=model.KINDLESS,
    )
