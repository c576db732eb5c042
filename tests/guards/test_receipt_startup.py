"""A check receipt (and a bench receipt, through the same function) says how the server it
measured booted, when sparkrig started it: the real llama-server's phases read from its own log."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.guards.battery import run_battery
from sparkrig.guards.context import CheckSettings
from sparkrig.launch.local import LocalInstance
from sparkrig.launch.state import recorded_boot
from tests.conftest import ExternalServer

pytestmark = pytest.mark.engine


async def test_the_check_receipt_records_the_boot_of_a_server_sparkrig_started(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    if isinstance(llama_server, ExternalServer):
        assert recorded_boot(llama_server.base_url) is None  # started elsewhere: nothing known
        return
    receipt = await run_battery(
        llama_server.base_url,
        settings=CheckSettings(),
        guards=["structured"],
        out_path=tmp_path / "check.json",
        baseline_path=tmp_path / "baseline.json",
    )
    startup = receipt.startup
    assert startup is not None
    phases = next(iter(startup.boot_phases.values()))
    assert [phase.name for phase in phases][-1] == "API up"
    assert startup.slowest is not None
    assert recorded_boot("http://127.0.0.1:9") is None  # a server sparkrig did not start
