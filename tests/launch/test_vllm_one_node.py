"""`sparkrig up` on a one-node vLLM cluster file, the local executor, `vllm` found on PATH: the
same code path as a multi-node cluster. CI has no GPU, so `vllm` here is tests/launch/fake_vllm
(a real vLLM command line, the real llama-server behind it); the real vLLM ran through the same
file on an H200 (benchmarks/vllm_gpu/, results in benchmarks/results/vllm-h200/)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import free_port
from sparkrig.launch.state import load_state, process_start_ticks
from tests.conftest import SPARKRIG
from tests.launch.test_cluster_bad_input import assert_one_line_error

FAKE_DIR = Path(__file__).parent / "fake_vllm"
NAME = "vllm-one-node"


def one_node_file(path: Path, port: int, name: str = NAME, engine_extra: str = "") -> None:
    """A one-node vLLM file whose model folder (beside it) holds the config.json `up` checks
    for; the fake serves the bundled GGUF whatever the folder holds."""
    model = path.parent / "smollm2-bf16"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}\n")
    path.write_text(f"""name = "{name}"
[[nodes]]
name = "gpu"
management = "127.0.0.1/8"
[executor]
kind = "local"
[engine]
kind = "vllm"
api_host = "127.0.0.1"
port = {port}
jit_cache_dir = "{path.parent / "jit"}"
stall_window_s = 60
{engine_extra}
[model]
path = "{model}"
served_name = "smollm2"
[profile]
max_model_len = 4096
max_num_seqs = 64
gpu_memory_utilization = 0.3
""")


def sparkrig(
    *args: str,
    engine: EngineInstall,
    bundled_model: Path,
    mode: str = "",
    path: str = "",
    extra_env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | (extra_env or {})
    env["PATH"] = path or f"{FAKE_DIR}:{env['PATH']}"
    env["FAKE_VLLM_LLAMA_SERVER"] = str(engine.server_binary)
    env["FAKE_VLLM_GGUF"] = str(bundled_model)
    env["FAKE_VLLM_LLAMA_ARGS"] = " ".join(engine.server_args)
    env["FAKE_VLLM_MODE"] = mode
    return subprocess.run(
        [SPARKRIG, *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
        cwd=cwd,
    )


def test_plan_is_one_plain_vllm_serve_without_fabric_env(tmp_path: Path) -> None:
    cluster_file = tmp_path / "one.toml"
    one_node_file(cluster_file, 8000)
    plan = subprocess.run(
        [SPARKRIG, "up", str(cluster_file)], capture_output=True, text=True, check=False
    )
    assert plan.returncode == 0, plan.stderr
    out = " ".join(plan.stdout.replace("\\\n", " ").split())  # the plan prints one option a line
    assert f"vllm serve {tmp_path / 'smollm2-bf16'} --served-model-name smollm2" in out
    assert "--gpu-memory-utilization 0.3" in out
    for absent in ("--nnodes", "--master-addr", "--headless", "NCCL_SOCKET_IFNAME", "enP7s7"):
        assert absent not in out  # one box: nothing to rendezvous with, no cable to name
    assert "VLLM_CACHE_ROOT=" in out  # the node-local JIT caches still apply
    assert "nothing started" in out


@pytest.mark.engine
def test_up_status_logs_down_with_vllm_from_path(
    tmp_path: Path, engine: EngineInstall, bundled_model: Path
) -> None:
    cluster_file = tmp_path / "one.toml"
    one_node_file(cluster_file, free_port("127.0.0.1"))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return sparkrig(*args, engine=engine, bundled_model=bundled_model)

    try:
        up = cli("up", str(cluster_file), "--apply")
        assert up.returncode == 0, up.stderr + up.stdout
        state = load_state(NAME)
        assert state is not None
        [record] = state.started
        assert record.process.argv[:2] == ["vllm", "serve"]
        status = cli("status", str(cluster_file))
        assert status.returncode == 0, status.stderr
        assert "ready" in status.stdout
        logs = cli("logs", str(cluster_file), "gpu", "-n", "200")
        assert "version 0.26.0" in logs.stdout  # the log sparkrig recorded is the engine's
    finally:
        down = cli("down", str(cluster_file), "--apply")
    assert down.returncode == 0, down.stderr
    assert load_state(NAME) is None
    assert process_start_ticks(record.pid) != record.pid_start_ticks


def failed_up(
    tmp_path: Path,
    name: str,
    engine: EngineInstall,
    bundled_model: Path,
    *,
    port: int | None = None,
    mode: str = "",
    path: str = "",
) -> subprocess.CompletedProcess[str]:
    """`up --apply` of a one-node file that must fail; nothing may stay recorded."""
    cluster_file = tmp_path / "one.toml"
    one_node_file(cluster_file, port or free_port("127.0.0.1"), name=name)
    result = sparkrig(
        "up",
        str(cluster_file),
        "--apply",
        engine=engine,
        bundled_model=bundled_model,
        mode=mode,
        path=path,
    )
    assert load_state(name) is None
    return result


def test_vllm_missing_from_path_is_named(
    tmp_path: Path, engine: EngineInstall, bundled_model: Path
) -> None:
    result = failed_up(tmp_path, "vllm-missing", engine, bundled_model, path="/usr/bin:/bin")
    assert_one_line_error(result, "vllm is not installed on node gpu", "engine.binary")


def test_port_taken_by_another_process_is_named(
    tmp_path: Path, engine: EngineInstall, bundled_model: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = failed_up(tmp_path, "vllm-port", engine, bundled_model, port=port)
    assert_one_line_error(result, f"port {port} on node gpu", "engine.port")


def test_dead_engine_core_is_named_with_vllms_own_line(
    tmp_path: Path, engine: EngineInstall, bundled_model: Path
) -> None:
    result = failed_up(tmp_path, "vllm-dead", engine, bundled_model, mode="engine-dead")
    assert_one_line_error(
        result, "node gpu: vllm exited", "Engine core initialization failed", "OutOfMemoryError"
    )
