"""Every receipt kind, as one pydantic union discriminated on `kind`, and the page section each
kind is drawn with, registered by kind.

Adding a receipt kind is one `ReceiptHeader` subclass (see src/sparkrig/receipts.py), one member
of `Receipt` below, one `@section_for(...)` renderer, and one terminal view in
src/sparkrig/cli/views/receipt_view.py; nothing dispatches on a type by hand
(tests/test_receipt_family.py fails on a member without its section or view).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_args

from pydantic import Field, TypeAdapter

from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.smoke import SmokeReceipt
from sparkrig.bench.soak_receipt import SoakReceipt
from sparkrig.fabric.collectives.results import FabricTestReceipt
from sparkrig.guards.receipt import CheckReceipt
from sparkrig.receipts import ReceiptHeader
from sparkrig.registry import Registry

Receipt = Annotated[
    BenchReceipt | CheckReceipt | SoakReceipt | SmokeReceipt | FabricTestReceipt,
    Field(discriminator="kind"),
]
RECEIPTS: TypeAdapter[Receipt] = TypeAdapter(Receipt)
RECEIPT_MODELS: dict[str, type[ReceiptHeader]] = {
    model.kind_name(): model for model in get_args(get_args(Receipt)[0])
}

Section = Callable[[Any, str], str]
SECTIONS: Registry[Section] = Registry("receipt kind")
Kind = TypeVar("Kind", bound=ReceiptHeader)


def section_for(
    model: type[Kind],
) -> Callable[[Callable[[Kind, str], str]], Callable[[Kind, str], str]]:
    """Register a renderer as the page section of `model`'s kind: (receipt, label) -> HTML."""

    def register(render: Callable[[Kind, str], str]) -> Callable[[Kind, str], str]:
        def checked(receipt: Any, label: str) -> str:
            assert isinstance(receipt, model), f"{type(receipt).__name__} is not {model.__name__}"
            return render(receipt, label)

        SECTIONS.add(model.kind_name(), checked)
        return render

    return register


def model_for_kind(raw: Any) -> type[ReceiptHeader] | None:
    """The receipt model a parsed file names in its `kind`, or that its fields show it is when it
    was written before its kind had a name; None for anything else."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("kind")
    if isinstance(kind, str):
        return RECEIPT_MODELS.get(kind)
    if "kind" in raw:
        return None
    return next(
        (m for m in RECEIPT_MODELS.values() if m.KINDLESS is not None and m.KINDLESS(raw)), None
    )
