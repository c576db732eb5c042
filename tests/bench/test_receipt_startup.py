"""A bench receipt says how the server it measured booted, when sparkrig started it: the real
llama-server's boot phases and KV pool, read from its own log into the launch state, land in the
receipt written to disk (tests/guards/test_receipt_startup.py proves the same for check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.bench.point import BenchSettings
from sparkrig.bench.receipt import load_receipt
from sparkrig.bench.run import open_side
from sparkrig.client import EndpointClient
from sparkrig.launch.local import LocalInstance
from sparkrig.launch.state import recorded_boot
from tests.conftest import ExternalServer

pytestmark = pytest.mark.engine


@pytest.mark.asyncio(loop_scope="session")
async def test_the_bench_receipt_records_the_boot_of_a_server_sparkrig_started(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    if isinstance(llama_server, ExternalServer):
        assert recorded_boot(llama_server.base_url) is None  # started elsewhere: nothing known
        return
    booted = recorded_boot(llama_server.base_url)
    assert booted is not None
    out = tmp_path / "bench.json"
    async with EndpointClient(llama_server.base_url) as client:
        # what run_bench opens before its first point: the receipt is on disk from here on
        await open_side(
            client, suites=["decode"], settings=BenchSettings(), out_path=out, model=None
        )
    startup = load_receipt(out).startup
    assert startup == booted
    phases = next(iter(startup.boot_phases.values()))
    assert [phase.name for phase in phases][-1] == "API up"
    assert startup.slowest is not None
    assert startup.kv_pool_tokens is not None
    assert startup.kv_pool_tokens > 0
