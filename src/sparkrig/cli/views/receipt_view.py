"""What `sparkrig report` prints in the terminal for each receipt, registered by kind (the page
sections are registered the same way in src/sparkrig/report/receipt_kinds.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rich.console import RenderableType

from sparkrig.bench.receipt import BenchReceipt
from sparkrig.bench.smoke import SmokeReceipt
from sparkrig.bench.soak_receipt import SoakReceipt
from sparkrig.cli.views.bench_table import bench_table, spec_table
from sparkrig.cli.views.check_table import check_table
from sparkrig.cli.views.fabric_test_table import fabric_test_view
from sparkrig.cli.views.multiturn_table import multiturn_tables
from sparkrig.cli.views.smoke_table import metrics_line, smoke_table
from sparkrig.fabric.collectives.results import FabricTestReceipt
from sparkrig.guards.receipt import CheckReceipt
from sparkrig.receipts import ReceiptHeader
from sparkrig.registry import Registry

View = Callable[[Any], list[RenderableType]]
VIEWS: Registry[View] = Registry("receipt kind")
Kind = TypeVar("Kind", bound=ReceiptHeader)


def _view_of(
    model: type[Kind],
) -> Callable[[Callable[[Kind], list[RenderableType]]], Callable[[Kind], list[RenderableType]]]:
    def register(
        show: Callable[[Kind], list[RenderableType]],
    ) -> Callable[[Kind], list[RenderableType]]:
        def checked(receipt: Any) -> list[RenderableType]:
            assert isinstance(receipt, model), f"{type(receipt).__name__} is not {model.__name__}"
            return show(receipt)

        VIEWS.add(model.kind_name(), checked)
        return show

    return register


def receipt_view(receipt: ReceiptHeader) -> list[RenderableType]:
    """The terminal tables (or line) of one receipt of any kind."""
    return VIEWS.get(receipt.kind)(receipt)


@_view_of(BenchReceipt)
def _bench(receipt: BenchReceipt) -> list[RenderableType]:
    acceptance = spec_table(receipt)
    return [
        bench_table(receipt),
        *([acceptance] if acceptance is not None else []),
        *multiturn_tables(receipt),
    ]


@_view_of(CheckReceipt)
def _check(receipt: CheckReceipt) -> list[RenderableType]:
    return [check_table(receipt)]


@_view_of(FabricTestReceipt)
def _fabric_test(receipt: FabricTestReceipt) -> list[RenderableType]:
    return [fabric_test_view(receipt)]


@_view_of(SoakReceipt)
def _soak(receipt: SoakReceipt) -> list[RenderableType]:
    return [
        f"soak {receipt.status}: {len(receipt.windows)} windows, {receipt.requests} requests, "
        f"{receipt.lost} lost, {receipt.bad_outputs} bad outputs",
        *(left.describe() for left in receipt.left_out),
    ]


@_view_of(SmokeReceipt)
def _smoke(receipt: SmokeReceipt) -> list[RenderableType]:
    return [smoke_table(receipt), metrics_line(receipt.metrics_delta)]
