"""A bench receipt says how the server it measured booted, when sparkrig started it: the real
llama-server's boot phases and KV pool, read from its own log into the launch state, land in the
receipt written to disk (tests/guards/test_receipt_startup.py proves the same for check). For a
server started elsewhere the receipt holds the KV pool the engine itself reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.receipt import load_receipt
from sparkrig.bench.run import open_side
from sparkrig.client import EndpointClient
from sparkrig.launch.local import LocalInstance
from sparkrig.launch.state import recorded_boot
from tests.conftest import ExternalServer
from tests.vllm_live import replaying


@pytest.mark.engine
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
    assert load_receipt(out).kv_pool is None  # the boot's own pool is in startup


@pytest.mark.engine
@pytest.mark.asyncio(loop_scope="session")
async def test_a_server_started_elsewhere_gives_the_receipt_its_live_kv_pool(
    llama_server: LocalInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no launch state naming it (a state folder of its own), the same real llama-server
    is one sparkrig did not start: no startup, and the pool is read from its /slots."""
    if isinstance(llama_server, ExternalServer):
        return  # its engine and pool are the external server's own
    monkeypatch.setenv("SPARKRIG_STATE_DIR", str(tmp_path / "state"))
    out = tmp_path / "bench.json"
    async with EndpointClient(llama_server.base_url) as client:
        await open_side(
            client, suites=["decode"], settings=BenchSettings(), out_path=out, model=None
        )
    receipt = load_receipt(out)
    assert receipt.startup is None
    assert receipt.kv_pool is not None
    assert receipt.kv_pool.tokens == defaults.LOCAL_CONTEXT_TOKENS  # the sum of its slots
    assert receipt.kv_pool.source == f"{llama_server.base_url}/slots (sum of n_ctx)"


@pytest.mark.asyncio(loop_scope="session")
async def test_a_vllm_started_elsewhere_gives_the_pool_of_its_cache_config_info(
    tmp_path: Path,
) -> None:
    """vLLM 0.26.0's real /v1/models, /metrics and /tokenize replies (tests/fixtures/vllm/live/),
    served back byte for byte: the pool is its kv_cache_size_tokens."""
    out = tmp_path / "bench.json"
    async with (
        replaying("plain", "models", "metrics", "tokenize") as url,
        EndpointClient(url) as client,
    ):
        await open_side(
            client, suites=["decode"], settings=BenchSettings(), out_path=out, model=None
        )
    pool = load_receipt(out).kv_pool
    assert pool is not None
    assert (pool.tokens, pool.source) == (1923456, f"{url}/metrics vllm:cache_config_info")
