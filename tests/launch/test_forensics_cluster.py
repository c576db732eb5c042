"""Real processes on a two-node vLLM cluster over this machine's loopback (local executors):
`vllm` is tests/launch/fake_ranks/vllm, whose lines are in vLLM's exact log format. A worker that
prints a known failure signature and dies is named by `up` with the signature's meaning and fix;
one that prints it and lives on (its log silent) is found by `logs --scan --json` and `status`,
while `up` records the head's boot phases and KV pool and prints the slowest phase."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import free_port
from sparkrig.launch.state import load_state, process_start_ticks
from tests.conftest import SPARKRIG

FAKE = Path(__file__).parent / "fake_ranks" / "vllm"


def two_rank_file(path: Path, name: str, triton: dict[str, Path] | None = None) -> None:
    """`triton`: per node, its own TRITON_CACHE_DIR (the node's env wins over the engine's)."""
    env = {n: f'env = {{ TRITON_CACHE_DIR = "{d}" }}\n' for n, d in (triton or {}).items()}
    path.write_text(f"""name = "{name}"
cables = ["a.p0 <-> b.p1"]
[[nodes]]
name = "a"
management = "127.0.0.1/8"
{env.get("a", "")}[[nodes]]
name = "b"
management = "127.0.0.2/8"
{env.get("b", "")}[executor]
kind = "local"
[engine]
kind = "vllm"
binary = "{FAKE}"
api_host = "127.0.0.1"
port = {free_port("127.0.0.1")}
jit_cache_dir = "{path.parent / "jit"}"
stall_window_s = 60
[model]
path = "{FAKE.parent}"  # the fake reads no weights; a folder every node has
served_name = "smollm2"
[profile]
tensor_parallel_size = 2
max_model_len = 4096
max_num_seqs = 8
gpu_memory_utilization = 0.3
""")


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=120, check=False, env=env
    )


@pytest.fixture(name="cluster")
def _cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    name = f"fx-{request.node.name[-20:]}".replace("_", "-")
    cluster_file = tmp_path / "ranks.toml"
    two_rank_file(cluster_file, name)
    try:
        yield cluster_file, name
    finally:
        state = load_state(name)
        if state is not None:
            down = [SPARKRIG, "down", str(cluster_file), "--apply"]
            subprocess.run(down, check=False, timeout=60, capture_output=True)
        for record in state.started if state else []:  # never leave a process behind
            if process_start_ticks(record.pid) == record.pid_start_ticks:
                os.kill(record.pid, 9)


def test_up_names_the_dead_worker_with_its_signature(cluster: tuple[Path, str]) -> None:
    cluster_file, name = cluster
    full, empty = cluster_file.parent / "triton-a", cluster_file.parent / "triton-b"
    (full / "kernels").mkdir(parents=True)
    empty.mkdir()
    for kernel in ("rope.cubin", "indexer.cubin"):
        (full / "kernels" / kernel).write_bytes(b"\0" * 64)
    two_rank_file(cluster_file, name, {"a": full, "b": empty})
    env = dict(os.environ, FAKE_RANKS_WORKER="die", FAKE_RANKS_HEAD="sleep")
    up = run("up", str(cluster_file), "--apply", env=env)
    assert up.returncode != 0
    message = " ".join(up.stderr.split())
    assert "node b: vllm exited with status 1 before the cluster was ready" in message
    assert "b/vllm: [roce-collective-peer-silent]" in message
    assert "equalise the JIT caches" in message
    assert "b/vllm: [cuda-launch-failed]" in message
    assert "a/vllm: [" not in message  # the head's clean boot lines match nothing
    # before the boot: b's kernel cache is behind a's
    assert "JIT cache of node b is behind: TRITON_CACHE_DIR 0 files against 2 on a" in message
    assert "JIT cache of node a is behind" not in message
    assert load_state(name) is None  # stopped and forgotten


@pytest.mark.engine
def test_scan_and_status_find_a_live_worker_signature_and_up_records_boot(
    cluster: tuple[Path, str], engine: EngineInstall, bundled_model: Path
) -> None:
    cluster_file, name = cluster
    env = dict(
        os.environ,
        FAKE_RANKS_WORKER="live",
        FAKE_RANKS_HEAD="serve",
        FAKE_VLLM_LLAMA_SERVER=str(engine.server_binary),
        FAKE_VLLM_GGUF=str(bundled_model),
        FAKE_VLLM_LLAMA_ARGS=" ".join(engine.server_args),
    )
    up = run("up", str(cluster_file), "--apply", env=env)
    assert up.returncode == 0, up.stderr
    assert "is behind" not in up.stderr  # one cache folder for both: in parity
    # the offsets in fake_ranks/vllm: weights +3 s, KV +5 s, graphs +9 s, API +10 s
    assert "slowest boot phase: a/vllm graphs captured took 4.0 s" in up.stderr
    assert "KV pool this boot: 1,923,456 tokens" in up.stderr
    state = load_state(name)
    assert state is not None
    assert [p.name for p in state.boot_phases["a/vllm"]] == [
        "weights loaded",
        "KV cache sized",
        "graphs captured",
        "API up",
    ]
    assert state.kv_pool_tokens == 1923456

    scan = run("logs", str(cluster_file), "--scan", "--json", env=env)
    assert scan.returncode == 1, scan.stderr  # a signature was found
    report = json.loads(scan.stdout)
    found = {(hit["where"], hit["signature"]) for hit in report["hits"]}
    assert ("b/vllm", "roce-collective-peer-silent") in found
    assert ("b/vllm", "cuda-launch-failed") in found
    assert not [w for w, _ in found if w.startswith("a/")]
    assert {k["node"] for k in report["kernels"]} == {"a", "b"}

    status = run("status", str(cluster_file), "--json", env=env)
    shown = json.loads(status.stdout)
    assert {h["signature"] for h in shown["signatures"]} >= {"roce-collective-peer-silent"}
    assert shown["kv_pool_tokens"] == 1923456
    assert "a/vllm" in shown["boot"]


def test_up_cold_empties_every_node_cache_first(cluster: tuple[Path, str]) -> None:
    cluster_file, name = cluster
    full, empty = cluster_file.parent / "triton-a", cluster_file.parent / "triton-b"
    full.mkdir()
    empty.mkdir()
    (full / "rope.cubin").write_bytes(b"\0" * 64)
    two_rank_file(cluster_file, name, {"a": full, "b": empty})
    env = dict(os.environ, FAKE_RANKS_WORKER="die", FAKE_RANKS_HEAD="sleep")
    plan = run("up", str(cluster_file), "--cold", env=env)
    assert plan.returncode == 0
    assert f"plan: cold: empty {full} on a" in " ".join(plan.stdout.split())
    assert (full / "rope.cubin").exists()  # the plan touches nothing
    up = run("up", str(cluster_file), "--apply", "--cold", env=env)
    said = " ".join(up.stderr.split())
    assert f"cold: a: emptied {full} (1 entries)" in said
    assert not (full / "rope.cubin").exists()
    assert "is behind" not in said  # emptied together: in parity
