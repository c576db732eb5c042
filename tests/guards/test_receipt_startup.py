"""A check receipt (and a bench receipt, through the same function) says how the server it
measured booted, when sparkrig started it: the real llama-server's phases read from its own log.
A server started elsewhere gives the receipt the KV pool its engine reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.guards.battery import run_battery
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.receipt import load_check_receipt
from sparkrig.launch.local import LocalInstance
from sparkrig.launch.state import recorded_boot
from tests.conftest import ExternalServer
from tests.vllm_live import replaying


@pytest.mark.engine
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
    assert startup.kv_pool_tokens is not None
    assert receipt.kv_pool is None  # the boot's own pool is in startup
    assert recorded_boot("http://127.0.0.1:9") is None  # a server sparkrig did not start


async def test_the_check_receipt_of_a_vllm_started_elsewhere_has_its_live_kv_pool(
    tmp_path: Path,
) -> None:
    """vLLM 0.26.0's real /v1/models and /metrics (tests/fixtures/vllm/live/), served back byte
    for byte; the acceptance guard reads /metrics only (and skips: no speculation there)."""
    async with replaying("plain", "models", "metrics") as url:
        receipt = await run_battery(
            url,
            settings=CheckSettings(),
            guards=["acceptance"],
            out_path=tmp_path / "check.json",
            baseline_path=tmp_path / "baseline.json",
        )
    assert receipt.startup is None
    assert [result.verdict for result in receipt.results] == ["SKIP"]
    saved = load_check_receipt(tmp_path / "check.json").kv_pool
    assert saved is not None
    assert (saved.tokens, saved.source) == (1923456, f"{url}/metrics vllm:cache_config_info")
