"""report/ renders receipts to HTML and does nothing else: no terminal library, no I/O stage, no
file read or write (the command that shows or saves a page does that: `cli/receipt_files.py`)."""

from __future__ import annotations

import pytest

from tests.module_imports import file_calls, forbidden, imported_modules, package_sources

NOT_IN_REPORT = (
    "rich",
    "typer",
    "aiohttp",
    "asyncio",
    "subprocess",
    "socket",
    "threading",
    "sparkrig.cli",
    "sparkrig.launch",
    "sparkrig.engines",
    "sparkrig.client",
    "sparkrig.gateway",
    "sparkrig.json_files",
    "sparkrig.paths",
    "sparkrig.doctor.telemetry",
    "sparkrig.doctor.telemetry_record",
    "sparkrig.doctor.node_telemetry",
)


def problems(source: str) -> set[str]:
    return forbidden(imported_modules(source), NOT_IN_REPORT) | file_calls(source)


@pytest.mark.parametrize("module", sorted(package_sources("report")))
def test_a_report_module_only_renders(module: str) -> None:
    assert problems(package_sources("report")[module]) == set()


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("from rich.table import Table", {"rich.table"}),
        (
            "def f():\n    from sparkrig.launch.lifecycle import bring_up",
            {"sparkrig.launch.lifecycle"},
        ),
        ("import subprocess", {"subprocess"}),
        ("from sparkrig.doctor.telemetry import Sampler", {"sparkrig.doctor.telemetry"}),
        ("def f(p):\n    p.write_text('x')", {"write_text"}),
        ("def f(p):\n    return open(p).read()", {"open"}),
    ],
)
def test_the_check_catches_a_view_an_action_or_a_file_write(source: str, caught: set[str]) -> None:
    assert problems(source) == caught


def test_the_check_lets_models_and_html_through() -> None:
    clean = (
        "from html import escape\n"
        "from sparkrig.bench.receipt import BenchReceipt\n"
        "from sparkrig.doctor.telemetry_model import TelemetryRecord\n"
    )
    assert problems(clean) == set()
