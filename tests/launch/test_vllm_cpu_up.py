"""`sparkrig up/status/logs/down` with vLLM's CPU build, through the CLI as a user types it.

The session's server (tests/vllm_cpu.py) was started by `up --apply`; here `status` and `logs`
read it, and the cases that must fail do so in one line before anything is left running: the
build missing or half-made, the port taken, a tensor-parallel size the model refuses (lint finds
it before `up`, and vLLM itself refuses it: the live witness), a model folder with no config.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from sparkrig.engines.vllm.cpu_build import RECORD_NAME, find_vllm_cpu, install_dir
from sparkrig.launch.local import free_port
from sparkrig.launch.state import load_state
from sparkrig.paths import CACHE_ENV, STATE_ENV
from tests.launch.test_cluster_bad_input import assert_one_line_error
from tests.vllm_cpu import (
    NAME,
    SERVED_NAME,
    VllmCpuServer,
    cluster_text,
    pair_cluster_text,
    run_sparkrig,
)


def sparkrig(
    *args: str, state: Path, extra_env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return run_sparkrig(state, *args, timeout=timeout, extra_env=extra_env)


def test_status_and_logs_read_the_running_cpu_build(vllm_cpu: VllmCpuServer) -> None:
    status = vllm_cpu.sparkrig("status", str(vllm_cpu.cluster_file), "--json")
    # the whole log: by now the tests before this one have pushed the banner out of any tail
    logs = vllm_cpu.sparkrig("logs", str(vllm_cpu.cluster_file), "cpu", "-n", "1000000")

    assert status.returncode == 0, status.stderr
    seen = json.loads(status.stdout)
    assert seen["ready"] is True
    assert seen["summary"] == "ready"
    assert logs.returncode == 0, logs.stderr
    assert "version 0.32.0" in logs.stdout  # vLLM's banner, through the `vllm` command
    assert "CPU KV cache size" in logs.stdout


def test_a_missing_or_half_made_build_is_one_line_naming_the_install(tmp_path: Path) -> None:
    cluster = tmp_path / "cpu.toml"
    cluster.write_text(cluster_text(free_port("127.0.0.1"), name="cpu-missing"))
    cache = tmp_path / "cache"
    empty = sparkrig("up", str(cluster), state=tmp_path, extra_env={CACHE_ENV: str(cache)})

    assert_one_line_error(empty, "not installed here (or is half-made)", "engine install vllm-cpu")

    found = find_vllm_cpu()
    assert found is not None  # the session's: make a copy whose record is gone
    half = install_dir().relative_to(install_dir().parents[2])
    (cache / half).mkdir(parents=True)
    shutil.copy(found.folder / RECORD_NAME, cache / half / RECORD_NAME)  # names a gone folder
    moved = cache / half / RECORD_NAME
    moved.write_text(moved.read_text().replace(str(found.folder), str(cache / half)))
    half_made = sparkrig("up", str(cluster), state=tmp_path, extra_env={CACHE_ENV: str(cache)})

    assert_one_line_error(half_made, "half-made", "engine install vllm-cpu")
    moved.write_bytes(b"\xff\xfe not a record")
    damaged = sparkrig("up", str(cluster), state=tmp_path, extra_env={CACHE_ENV: str(cache)})

    assert_one_line_error(damaged, str(moved), "engine install vllm-cpu")
    assert load_state("cpu-missing") is None


def test_a_taken_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cluster = tmp_path / "cpu.toml"
        cluster.write_text(cluster_text(port, name="cpu-port"))
        done = sparkrig("up", str(cluster), "--apply", state=tmp_path)

    assert_one_line_error(done, f"port {port}", "already in use")
    assert not list((tmp_path / "clusters").glob("cpu-port*"))


def test_tensor_parallel_2_is_refused_by_lint_and_by_vllm_itself(tmp_path: Path) -> None:
    """Two nodes, one rank each, as a pair of Sparks would run it: the bundled model has 9
    attention heads, so lint says TP 2 cannot work before `up`; forced through anyway, vLLM
    refuses the same thing at start, and `up` names the death with that line from its log."""
    cluster = tmp_path / "tp2.toml"
    port, master = free_port("127.0.0.1"), free_port("127.0.0.1")
    cluster.write_text(
        pair_cluster_text(port, master, name="cpu-tp2", profile_extra="tensor_parallel_size = 2")
    )
    lint = sparkrig("lint", str(cluster), state=tmp_path)
    up = sparkrig("up", str(cluster), "--apply", state=tmp_path, timeout=600)

    assert lint.returncode != 0
    assert "9 attention heads" in " ".join(lint.stdout.split()), lint.stdout
    assert up.returncode != 0
    assert "Total number of attention heads (9) must be divisible by tensor parallel size (2)" in (
        " ".join((up.stdout + up.stderr).split())
    ), up.stdout + up.stderr
    assert "Traceback" not in up.stderr
    assert load_state("cpu-tp2") is None  # nothing left recorded as up


def test_a_model_folder_without_config_is_refused_before_anything_starts(tmp_path: Path) -> None:
    folder = tmp_path / "SmolLM2-gguf-only"
    folder.mkdir()
    (folder / "model.gguf").write_bytes(b"GGUF")
    cluster = tmp_path / "cpu.toml"
    text = cluster_text(free_port("127.0.0.1"), name="cpu-noconfig")
    cluster.write_text(text.replace('path = "bundled"', f'path = "{folder}"'))
    done = sparkrig("up", str(cluster), "--apply", state=tmp_path)

    assert_one_line_error(done, f"{folder} on node cpu has no config.json", "model.path")
    assert load_state("cpu-noconfig") is None


def test_the_boot_phases_and_kv_pool_come_from_vllms_own_log(
    vllm_cpu: VllmCpuServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU build says `Loading weights took` (not the GPU runner's `Model loading took`) and
    `CPU KV cache size: N tokens`: `up` read both, and the pool is vLLM's own figure (1 GiB of
    cpu_kvcache_gib)."""
    monkeypatch.setenv(STATE_ENV, str(vllm_cpu.state_dir))
    state = load_state(NAME)
    assert state is not None
    phases = state.boot_phases["cpu/vllm"]

    assert [phase.name for phase in phases] == [
        "weights loaded",
        "KV cache sized",
        "engine warmed up",
        "API up",
    ]
    assert "Loading weights took" in phases[0].line
    assert "CPU KV cache size" in phases[1].line
    assert state.kv_pool_tokens is not None
    assert f"{state.kv_pool_tokens:,}" in phases[1].line


KEY = "sk-rig-3c9e1a70-never-shown"
KEY_VAR = "RIG_ENGINE_KEY"  # sparkrig reads the variable the file names; vLLM reads VLLM_API_KEY


def test_a_keyed_vllm_401s_without_the_key_and_readiness_still_passes(
    vllm_cpu: VllmCpuServer, tmp_path: Path
) -> None:
    """vLLM 0.32 started with an API key (VLLM_API_KEY on the node): /health needs none, /v1
    answers 401 without `Authorization: Bearer KEY`; `up`'s one real completion sends the key the
    variable engine.api_key_env names, so readiness passes, and the key shows nowhere sparkrig
    prints or records. Takes the session's server so two boots never share the 2 cores."""
    assert vllm_cpu.boot_seconds > 0
    port = free_port("127.0.0.1")
    cluster = tmp_path / "keyed.toml"
    text = cluster_text(port, name="cpu-keyed")
    cluster.write_text(text.replace("[engine]\n", f'[engine]\napi_key_env = "{KEY_VAR}"\n', 1))
    keys = {"VLLM_API_KEY": KEY, KEY_VAR: KEY}
    try:
        up = sparkrig("up", str(cluster), "--apply", state=tmp_path, extra_env=keys, timeout=1500)
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        status = sparkrig("status", str(cluster), "--json", state=tmp_path, extra_env=keys)
        assert json.loads(status.stdout)["ready"] is True
        body = json.dumps({"model": SERVED_NAME, "prompt": "Hi", "max_tokens": 2}).encode()
        answers = []
        for headers in ({}, {"Authorization": f"Bearer {KEY}"}):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/completions",
                data=body,
                headers={"Content-Type": "application/json", **headers},
            )
            try:
                with urllib.request.urlopen(request, timeout=60) as reply:
                    answers.append(reply.status)
            except urllib.error.HTTPError as refused:
                answers.append(refused.code)
        assert answers == [401, 200]
        said = up.stdout + up.stderr + status.stdout + status.stderr
        records = "".join(p.read_text() for p in (tmp_path / "clusters").rglob("*.json"))
        assert KEY not in said
        assert KEY not in records
    finally:
        down = sparkrig("down", str(cluster), "--apply", state=tmp_path, extra_env=keys)
    assert down.returncode == 0, down.stderr
