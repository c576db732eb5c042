"""The fabric test's pure parts: the size ladder, nccl-tests' bandwidth definitions, the receipt
round trip, and a rehearsal on loopback named as one."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from sparkrig.cli.views.fabric_test_table import fabric_test_view
from sparkrig.errors import UsageError
from sparkrig.fabric.collectives.results import (
    REHEARSAL_NOTE,
    FabricTestReceipt,
    bus_factor,
    default_ladder,
    elements_for,
    load_receipt,
    make_point,
    parse_sizes,
    save_receipt,
)


def test_sizes_read_binary_units() -> None:
    assert parse_sizes("8K,64KiB,1M,3") == [8192, 65536, 1 << 20, 3]


@pytest.mark.parametrize("text", ["0", "8K,-1K", "eight", "8K,,"])
def test_sizes_that_are_not_positive_are_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--sizes"):
        parse_sizes(text)


def test_the_default_ladder_runs_8k_by_8_to_64m_on_cpu_and_256m_on_gpu() -> None:
    assert default_ladder(gpu=False) == [8 << 10, 64 << 10, 512 << 10, 4 << 20, 32 << 20, 64 << 20]
    assert default_ladder(gpu=True)[-2:] == [32 << 20, 256 << 20]


def test_bus_bandwidth_follows_nccl_tests() -> None:
    assert bus_factor("all_reduce", 4) == 1.5
    assert bus_factor("all_gather", 4) == 0.75
    assert bus_factor("all_to_all", 2) == 0.5
    point = make_point("all_reduce", "sparkrig", 1_000_000_000, 4, 2.0)
    assert point.algbw_gbps == 0.5
    assert point.busbw_gbps == 0.75
    assert make_point("all_reduce", "builtin", 8, 4, None).busbw_gbps is None


def test_elements_count_the_buffer_nccl_tests_counts() -> None:
    assert elements_for("all_reduce", 8192, 4, 4) == 2048
    assert elements_for("all_gather", 8192, 4, 4) == 512  # per rank: the output is 8 KiB
    assert elements_for("all_to_all", 4, 4, 4) == 4  # at least one element per rank


def test_the_receipt_reads_back_and_refuses_another_kind(tmp_path: Path) -> None:
    receipt = FabricTestReceipt(
        cluster="c",
        topology="ring-4",
        rank_order=["a"],
        executor="local",
        backend="gloo",
        iterations=1,
    )
    path = tmp_path / "r.json"
    save_receipt(receipt, path)
    assert load_receipt(path) == receipt
    path.write_text(path.read_text().replace("sparkrig-fabric-test", "sparkrig-bench"))
    with pytest.raises(UsageError, match="not a sparkrig fabric-test receipt"):
        load_receipt(path)


FIXTURES = Path(__file__).parents[1] / "fixtures" / "receipts"


def _shown(receipt: FabricTestReceipt) -> str:
    console = Console(record=True, width=200)
    console.print(fabric_test_view(receipt))
    return console.export_text()


def test_a_rehearsal_says_that_no_cable_was_tested() -> None:
    rehearsal = FabricTestReceipt(
        cluster="c",
        topology="ring-4",
        rank_order=["a", "b"],
        executor="local",
        rehearsal=True,
        backend="gloo",
        iterations=1,
    )
    assert REHEARSAL_NOTE == "rehearsal on this machine's loopback: no cable was tested"
    assert _shown(rehearsal).rstrip().endswith(REHEARSAL_NOTE)
    over_cables = rehearsal.model_copy(update={"executor": "ssh", "rehearsal": False})
    assert "rehearsal" not in _shown(over_cables)


def test_a_receipt_written_before_rehearsals_were_named_reads_as_none() -> None:
    old = load_receipt(FIXTURES / "fabric-test-v1.json")
    assert "rehearsal" not in (FIXTURES / "fabric-test-v1.json").read_text()
    assert old.rehearsal is False


def test_the_html_report_names_a_rehearsal_beside_its_executor() -> None:
    from sparkrig.report.fabric_test_html import fabric_test_section

    old = load_receipt(FIXTURES / "fabric-test-v1.json")
    assert "rehearsal" not in fabric_test_section(old, "old")
    page = fabric_test_section(old.model_copy(update={"rehearsal": True}), "new")
    assert f"<dd>local ({REHEARSAL_NOTE})</dd>".replace("'", "&#x27;") in page
