"""The receipt family: receipts written before it still load (tests/fixtures/receipts/, written
by sparkrig at c4e06ed, see its README), every kind shares the header, opens by its kind, and
has a page section and a terminal view registered under its kind."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.smoke import SmokeReceipt, load_smoke_receipt
from sparkrig.bench.soak_receipt import SoakReceipt, load_soak_receipt
from sparkrig.cli.receipt_files import load_any_receipt
from sparkrig.cli.views.receipt_view import VIEWS, receipt_view
from sparkrig.errors import UsageError
from sparkrig.fabric.collectives.results import FabricTestReceipt
from sparkrig.fabric.collectives.results import load_receipt as load_fabric_test_receipt
from sparkrig.guards.receipt import CheckReceipt, load_check_receipt
from sparkrig.receipts import ReceiptHeader, load_receipt_file, save_receipt_file
from sparkrig.report.html_report import render_report
from sparkrig.report.receipt_kinds import RECEIPT_MODELS, SECTIONS

OLD = Path(__file__).parent / "fixtures" / "receipts"
FIXTURES: dict[str, type[ReceiptHeader]] = {
    "bench-v1.json": BenchReceipt,
    "check-v1.json": CheckReceipt,
    "soak-v1.json": SoakReceipt,
    "smoke-v1.json": SmokeReceipt,
    "fabric-test-v1.json": FabricTestReceipt,
}
HEADER = set(ReceiptHeader.model_fields)


def _raw(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((OLD / name).read_text())
    return loaded


@pytest.mark.parametrize(("name", "model"), FIXTURES.items())
def test_a_receipt_written_before_the_family_opens_as_its_kind(
    name: str, model: type[ReceiptHeader]
) -> None:
    receipt = load_any_receipt(OLD / name)
    assert type(receipt) is model
    assert receipt.created_at.tzinfo is not None
    assert receipt.complete  # every fixture is of a finished run
    assert set(type(receipt).model_fields) >= HEADER


def test_the_example_soak_receipt_of_the_docs_still_opens() -> None:
    example = Path(__file__).parents[1] / "examples" / "soak-gateway-embedded" / "soak.json"
    assert _raw_file(example)["schema_version"] == 1
    receipt = load_any_receipt(example)
    assert isinstance(receipt, SoakReceipt)
    assert receipt.windows


def _raw_file(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_each_kind_has_its_own_loader_for_its_old_file() -> None:
    assert load_receipt(OLD / "bench-v1.json").points
    assert load_check_receipt(OLD / "check-v1.json").results
    assert load_soak_receipt(OLD / "soak-v1.json").windows
    assert load_smoke_receipt(OLD / "smoke-v1.json").results
    assert load_fabric_test_receipt(OLD / "fabric-test-v1.json").points


def test_a_soak_receipt_of_schema_1_keeps_its_url_and_start_and_records_nothing_it_lacked() -> None:
    raw = _raw("soak-v1.json")
    receipt = load_soak_receipt(OLD / "soak-v1.json")
    assert receipt.schema_version == 2
    assert receipt.base_url == raw["url"]
    assert receipt.created_at == datetime.fromisoformat(raw["started_at"])
    assert receipt.sparkrig_version is None  # the old file did not say; None, not today's
    assert receipt.host is None
    assert receipt.complete is (raw["status"] == "complete")
    assert receipt.measured is True
    assert receipt.requests == sum(window["requests"] for window in raw["windows"])


def test_a_smoke_record_of_schema_1_without_a_kind_is_read_as_smoke() -> None:
    raw = _raw("smoke-v1.json")
    assert "kind" not in raw  # as the old demo wrote it
    receipt = load_smoke_receipt(OLD / "smoke-v1.json")
    assert receipt.kind == "sparkrig-smoke"
    assert receipt.engine == raw["engine"]["name"] == "llama.cpp"
    assert receipt.engine_binary == raw["engine"]["binary"]
    assert receipt.created_at == datetime.fromisoformat(raw["started_at"])
    assert receipt.sparkrig_version == raw["sparkrig_version"]
    assert receipt.host is None
    assert receipt.measured is True
    assert [r.name for r in receipt.results] == ["count", "json", "concurrent1", "concurrent2"]


@pytest.mark.parametrize(("name", "model"), FIXTURES.items())
def test_an_upgraded_receipt_saves_at_todays_schema_and_loads_unchanged(
    name: str, model: type[ReceiptHeader], tmp_path: Path
) -> None:
    receipt = load_receipt_file(OLD / name, model)
    path = save_receipt_file(receipt, tmp_path / name)
    saved = json.loads(path.read_text())
    assert saved["kind"] == model.kind_name()
    assert saved["schema_version"] == model.current_schema()
    assert load_receipt_file(path, model) == receipt


def test_a_schema_this_sparkrig_does_not_read_fails_in_one_line_naming_it(
    tmp_path: Path,
) -> None:
    raw = _raw("soak-v1.json") | {"schema_version": 9}
    path = tmp_path / "soak.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(UsageError) as caught:
        load_any_receipt(path)
    message = str(caught.value)
    assert "\n" not in message
    assert "soak receipt schema 9, this sparkrig reads 1, 2" in message


def test_a_damaged_old_receipt_is_named_damaged(tmp_path: Path) -> None:
    raw = _raw("soak-v1.json")
    del raw["url"]  # the upgrade cannot find what it renames
    path = tmp_path / "soak.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(UsageError, match="damaged soak receipt"):
        load_soak_receipt(path)


def test_a_zoneless_created_at_is_damaged_for_every_kind(tmp_path: Path) -> None:
    raw = _raw("fabric-test-v1.json") | {"created_at": "2026-12-02T00:57:27"}
    path = tmp_path / "fabric-test.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(UsageError, match="damaged fabric-test receipt"):
        load_fabric_test_receipt(path)


def test_a_file_of_no_kind_that_is_no_old_smoke_record_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"schema_version": 1, "results": []}))
    with pytest.raises(UsageError, match="not a sparkrig bench receipt"):
        load_any_receipt(path)


def test_every_kind_is_one_union_member_with_a_section_and_a_view() -> None:
    assert set(RECEIPT_MODELS) == {model.kind_name() for model in FIXTURES.values()}
    assert set(SECTIONS) == set(RECEIPT_MODELS)
    assert set(VIEWS) == set(RECEIPT_MODELS)
    for kind, model in RECEIPT_MODELS.items():
        assert issubclass(model, ReceiptHeader)
        assert model(**_minimal(model)).kind == kind


def _minimal(model: type[ReceiptHeader]) -> dict[str, Any]:
    """The fields a kind requires, from its own old fixture."""
    name = next(n for n, m in FIXTURES.items() if m is model)
    loaded = load_receipt_file(OLD / name, model)
    return {
        field: getattr(loaded, field)
        for field, info in model.model_fields.items()
        if info.is_required()
    }


def test_new_receipts_of_every_kind_carry_the_whole_header(tmp_path: Path) -> None:
    for model in RECEIPT_MODELS.values():
        receipt = model(**_minimal(model))
        saved = json.loads(save_receipt_file(receipt, tmp_path / "r.json").read_text())
        assert set(saved) >= HEADER
        assert datetime.fromisoformat(saved["created_at"]).tzinfo is not None
        assert saved["sparkrig_version"]
        assert saved["host"]
        assert datetime.fromisoformat(saved["created_at"]) <= datetime.now(UTC)


def test_one_page_draws_every_kind_by_its_registered_section() -> None:
    receipts = [load_any_receipt(OLD / name) for name in FIXTURES]
    page = render_report(receipts, names=list(FIXTURES))
    assert [line for line in page.splitlines() if line.startswith("<h2>")] == [
        "<h2>bench-v1.json</h2>",
        "<h2>check-v1.json · guards</h2>",
        "<h2>soak-v1.json · soak</h2>",
        "<h2>smoke-v1.json · smoke</h2>",
        "<h2>fabric-test-v1.json · fabric test</h2>",
    ]
    assert page.count("<section>") == len(FIXTURES)
    assert "not recorded (written by an older sparkrig)" in page  # the old soak's host
    for receipt in receipts:
        assert receipt_view(receipt)


def test_report_opens_an_old_smoke_record_from_the_command_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sparkrig.cli import app

    old = tmp_path / "demo.json"
    shutil.copy(OLD / "smoke-v1.json", old)
    done = CliRunner().invoke(app, ["report", str(old), "--out", str(tmp_path / "r.html")])
    assert done.exit_code == 0, done.output
    assert "smoke ·" in done.output
    assert "· smoke</h2>" in (tmp_path / "r.html").read_text()
