"""`plan-capacity` and `lint` with `--server`: the KV pool of this boot, asked of the server,
replaces the file's. vLLM's is its real captured /metrics (tests/fixtures/vllm/live/, served
back byte for byte); llama.cpp's is a real llama-server's /slots."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from sparkrig import defaults
from sparkrig.client.live_kv_pool import live_kv_pool
from sparkrig.launch.local import free_port
from tests.conftest import SPARKRIG
from tests.vllm_live import replaying

LIVE_POOL = 1923456  # the capture's kv_cache_size_tokens (the serve log's "GPU KV cache size")


def cluster_file(path: Path, max_model_len: int) -> Path:
    path.write_text(f"""name = "pool"
[[nodes]]
name = "gpu"
management = "127.0.0.1/8"
[executor]
kind = "local"
[engine]
kind = "vllm"
[model]
path = "/models/m"
[profile]
max_model_len = {max_model_len}
max_num_seqs = 4
""")
    return path


async def sparkrig(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        SPARKRIG, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode(), err.decode()


async def test_the_vllm_pool_comes_from_cache_config_info() -> None:
    async with replaying("plain", "metrics") as url:
        tokens, where = await live_kv_pool(url)
    assert tokens == LIVE_POOL
    assert where.endswith("/metrics vllm:cache_config_info")


async def test_plan_capacity_and_lint_use_the_live_pool(tmp_path: Path) -> None:
    too_long = cluster_file(tmp_path / "long.toml", 4_000_000)
    fits = cluster_file(tmp_path / "fits.toml", 8192)
    async with replaying("plain", "metrics") as url:
        code, out, _ = await sparkrig("plan-capacity", str(fits), "--server", url, "--json")
        assert code == 0
        plan = json.loads(out)
        assert plan["kv_pool_tokens"] == LIVE_POOL
        assert "KV pool from the server: 1,923,456 tokens" in plan["notes"][0]
        code, out, _ = await sparkrig("lint", str(too_long), "--server", url)
        assert code == 1  # one 4M-token request cannot fit the live pool
        assert "kv-pool-holds-one-request" in out
        code, out, _ = await sparkrig("lint", str(fits), "--server", url)
        assert "kv-pool-holds-one-request" not in out
    code, out, _ = await sparkrig("lint", str(too_long))  # without a server: no pool, no finding
    assert "kv-pool-holds-one-request" not in out


async def test_a_server_without_a_pool_is_a_one_line_error(tmp_path: Path) -> None:
    fits = cluster_file(tmp_path / "fits.toml", 8192)
    async with replaying("plain", "models") as url:  # answers /v1/models only
        code, _, err = await sparkrig("plan-capacity", str(fits), "--server", url)
    assert code != 0
    assert "reports no KV pool" in err


async def test_nothing_listening_is_said_so_not_a_server_without_a_pool(tmp_path: Path) -> None:
    """The way `ask` says it: a pool the server 'reports' needs a server that answers."""
    fits = cluster_file(tmp_path / "fits.toml", 8192)
    port = free_port("127.0.0.1")
    for command in ("plan-capacity", "lint"):
        code, _, err = await sparkrig(command, str(fits), "--server", f"http://127.0.0.1:{port}")
        assert code != 0
        said = " ".join(err.split())
        assert f"nothing is listening on 127.0.0.1:{port} (connection refused)" in said, said
        assert "reports no KV pool" not in said
    assert len(err.strip().splitlines()) == 1


async def test_the_llamacpp_pool_is_the_sum_of_its_slots(llama_server: Any) -> None:
    tokens, where = await live_kv_pool(llama_server.base_url)
    assert tokens == defaults.LOCAL_CONTEXT_TOKENS  # the fixture's context, split over its slots
    assert where.endswith("/slots (sum of n_ctx)")
