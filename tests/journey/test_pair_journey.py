"""The journey of an owner of two nodes on one cable, run for real on the twin (tests/twin.py):
two network and mount namespaces, each its own /etc/sparkrig and disk, reached only over ssh by
the cluster file's [executor], and vLLM's CPU build in pipeline parallel across them.

Every step is the command a user types, in order, reaching the nodes as the file says:
fabric discover -> plan -> apply -> test -> doctor -> lint -> sync -> up -> check (baseline,
then judged by it) -> bench -> soak -> gateway serve with the official `openai` client through
it -> one worker rank killed while serving, named with its log's signature and the forensics
bundle -> down (nothing left on either node) -> fabric apply --restore (every node's addresses,
routes and sysctls as before). The transcript is kept step by step (tests/journey/journey.py).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sparkrig.engines.vllm.cpu_build import whole_vllm_cpu
from sparkrig.launch.local import free_port
from sparkrig.launch.state import load_state
from sparkrig.paths import STATE_ENV, cache_dir
from tests.conftest import SPARKRIG
from tests.docs.tutorial import journey_mismatches
from tests.fabric.netns_lab import PORTS
from tests.journey.journey import Journey
from tests.twin import NODE_DISK, Twin, cluster_twin, why_twin_unavailable
from tests.vllm_cpu import SERVED_NAME, VllmCpuServer

UNAVAILABLE = why_twin_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")

NAMES = ["a", "b"]
WIRING = [("a", "p0", "b", "p1")]
CABLE = "a.p0 <-> b.p1"
MODEL_DIR = f"{NODE_DISK}/models/SmolLM2-135M-Instruct"
BOOT_LIMIT_S = 1200


def cluster_text(name: str, twin: Twin, port: int, master_port: int, jit: Path) -> str:
    """Two nodes on a management LAN (mgmt0) and one cable; vLLM's CPU build, pipeline parallel
    (tensor parallel 1: the bundled model's 30 layers in two stages, one a node)."""
    # one core a node, as each real node has its own: vLLM's CPU workers bind the first core
    # of their NUMA node by default, and the twin's two nodes share one machine's
    nodes = "".join(
        f'\n[[nodes]]\nname = "{node}"\nmanagement = "{address}/24"\n'
        f'management_interface = "mgmt0"\nenv = {{ VLLM_CPU_OMP_THREADS_BIND = "{core}" }}\n'
        f"{PORTS}"
        for core, (node, address) in enumerate(twin.addresses.items())
    )
    return f"""name = "{name}"
cables = ["{CABLE}"]
{nodes}
[executor]
kind = "ssh"
ssh_config = "{twin.ssh_config}"
python = "{sys.executable}"

[engine]
kind = "vllm"
device = "cpu"
version = "0.32"
backend = "mp"
port = {port}
master_port = {master_port}
jit_cache_dir = "{jit}"
log_dir = "{NODE_DISK}/logs"
ready_timeout_s = {BOOT_LIMIT_S}

[model]
path = "{MODEL_DIR}"
served_name = "{SERVED_NAME}"

[profile]
pipeline_parallel_size = 2
max_model_len = 4096
max_num_seqs = 8
cpu_kvcache_gib = 1
"""


def snapshot(twin: Twin) -> dict[str, object]:
    """What `fabric apply` may change on every node: interfaces, routes, forwarding."""
    return {node: twin.lab.snapshot(node) for node in twin.names}


def node_processes(twin: Twin, node: str) -> list[str]:
    """`pid name` of every process in the node's network namespace but its sshd."""
    pids = subprocess.run(
        ["ip", "netns", "pids", twin.lab.namespace(node)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    found = []
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if name != "sshd":
            found.append(f"{pid} {name}")
    return found


def wait_listening(address: str, port: int, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            probe.settimeout(0.5)
            if probe.connect_ex((address, port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on {address}:{port} after {limit_s:g} s")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Twin, Journey, Path]]:
    """The twin, its cluster file and the journey; whatever the test reached, the engine is
    stopped, the fabric restored and the twin removed."""
    record = whole_vllm_cpu()
    assert record is not None, "vLLM's CPU build is not installed — `make test` installs it"
    with cluster_twin(NAMES, WIRING, tmp_path) as twin:
        name = f"{twin.lab.prefix}pair".replace("-", "")
        cluster = tmp_path / "pair.toml"
        jit = cache_dir() / "vllm-cpu-jit"  # shared: stands for each node's own, kept warm
        port, master = free_port("127.0.0.1"), free_port("127.0.0.1")
        cluster.write_text(cluster_text(name, twin, port, master, jit))
        # the model on node a only: `sync` brings it to b
        shutil.copytree(record.model_dir, twin.on_node("a", MODEL_DIR))
        journey = Journey("pair", tmp_path)
        try:
            yield twin, journey, cluster
        finally:
            journey.sparkrig("down", str(cluster), "--apply", timeout=120)
            if (journey.state / "fabric" / f"{name}.json").exists():
                journey.sparkrig("fabric", "apply", str(cluster), "--restore", timeout=120)


def test_two_nodes_from_cables_to_a_verified_vllm_and_back(
    vllm_cpu: VllmCpuServer,
    pair: tuple[Twin, Journey, Path],
    record_property: Callable[[str, object], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Takes the session's server (asks nothing of it): the two never boot at once on 2 cores."""
    assert vllm_cpu.boot_seconds > 0
    twin, journey, cluster = pair
    cf = str(cluster)
    before = snapshot(twin)

    # cables: found from the wires, planned, applied on both nodes over ssh
    discover = journey.sparkrig("fabric", "discover", cf, "--write", "--json")
    assert discover.returncode == 0, discover.stderr
    assert json.loads(discover.stdout) == [CABLE]
    plan = journey.sparkrig("fabric", "plan", cf, "--out", str(journey.folder / "plan"))
    assert plan.returncode == 0, plan.stderr
    applied = journey.sparkrig("fabric", "apply", cf, "--apply")
    assert applied.returncode == 0, applied.stderr
    journal = json.loads(next((journey.state / "fabric").glob("*.json")).read_text())
    assert {spec["kind"] for spec in journal["executors"].values()} == {"ssh"}  # the file's
    after_apply = snapshot(twin)
    assert after_apply != before
    tested = journey.sparkrig(
        "fabric", "test", cf, "--apply", "--sizes", "8K,1M", "--iterations", "3", "--json"
    )
    assert tested.returncode == 0, tested.stdout[-2000:] + tested.stderr[-2000:]
    receipt = json.loads(tested.stdout)
    assert receipt["rehearsal"] is False
    assert receipt["executor"] == "ssh" or receipt["executor"] is None
    assert receipt["measured"] is True

    # the nodes: checked, the file linted, the model brought to b and proven
    doctor = journey.sparkrig("doctor", cf, "--json")
    found = json.loads(doctor.stdout)
    errors = [f for f in found["findings"] if f["severity"] == "error"]
    assert errors == [], errors
    lint = journey.sparkrig("lint", cf)
    assert lint.returncode == 0, lint.stdout
    assert not twin.on_node("b", MODEL_DIR).exists()
    sync = journey.sparkrig("sync", cf, "--apply")
    assert sync.returncode == 0, sync.stdout + sync.stderr
    assert "sha256 equal to a" in sync.stdout
    assert (twin.on_node("b", MODEL_DIR) / "model.safetensors").exists()

    # vLLM across the two nodes: the headless worker first, then the head
    up = journey.sparkrig("up", cf, "--apply", timeout=BOOT_LIMIT_S + 300)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    record_property("up_seconds", journey.steps[-1]["seconds"])
    status = json.loads(journey.sparkrig("status", cf, "--json").stdout)
    assert status["ready"] is True
    assert [(r["node"], r["role"]) for r in status["rows"]] == [("b", "worker"), ("a", "head")]
    monkeypatch.setenv(STATE_ENV, str(journey.state))
    state = load_state(tomllib.loads(cluster.read_text())["name"])
    assert state is not None
    worker = state.started[0].process.argv  # headless, its stage of the two, one rank a node
    assert "--headless" in worker
    assert worker[worker.index("--pipeline-parallel-size") + 1] == "2"
    assert worker[worker.index("--tensor-parallel-size") + 1] == "1"
    assert worker[worker.index("--master-addr") + 1] == twin.addresses["a"]
    url = status["api_url"] + "/v1" if not status["api_url"].endswith("/v1") else status["api_url"]
    assert twin.addresses["a"] in url  # the management LAN, which this machine reaches

    # correctness: a baseline recorded, then a check judged by it; speed; a short soak
    recorded = journey.sparkrig(
        "check", url, "--guard", "exact", "--record-baseline", "--out", "check-baseline.json"
    )
    assert recorded.returncode == 0, recorded.stdout[-3000:]
    check = journey.sparkrig("check", url, "--guard", "exact", "--out", "check.json")
    assert check.returncode == 0, check.stdout[-3000:]
    assert "baseline" in check.stdout
    bench = journey.sparkrig(
        "bench", url, "--suite", "concurrency", "--concurrency", "2", "--no-cached",
        "--tokens", "16", "--max-samples", "2", "--rounds", "1", "--out", "bench.json",
    )  # fmt: skip
    assert bench.returncode == 0, bench.stdout[-3000:] + bench.stderr[-3000:]
    soak = journey.sparkrig(
        "soak", url, "--duration", "15", "--window", "5", "--concurrency", "2",
        "--receipt", "soak.json",
    )  # fmt: skip
    assert soak.returncode == 0, soak.stdout[-3000:]

    # the gateway in front, the official OpenAI client through it
    gateway_port = free_port("127.0.0.1")
    began = time.monotonic()
    gateway = subprocess.Popen(
        [
            SPARKRIG,
            "gateway",
            "serve",
            url,
            "--port",
            str(gateway_port),
            "--workload-log",
            str(journey.folder / "workload.jsonl"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening("127.0.0.1", gateway_port, 30)
        from openai import OpenAI

        client = OpenAI(base_url=f"http://127.0.0.1:{gateway_port}/v1", api_key="unused")
        reply = client.chat.completions.create(
            model=SERVED_NAME,
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            max_tokens=12,
            temperature=0,
        )
        assert "Paris" in (reply.choices[0].message.content or "")
        streamed = "".join(
            chunk.choices[0].delta.content or ""
            for chunk in client.chat.completions.create(
                model=SERVED_NAME,
                messages=[{"role": "user", "content": "What is the capital of France?"}],
                max_tokens=12,
                temperature=0,
                stream=True,
            )
            if chunk.choices
        )
        assert streamed == reply.choices[0].message.content
    finally:
        gateway.send_signal(signal.SIGTERM)
        gateway.wait(timeout=90)
    logged = (journey.folder / "workload.jsonl").read_text().splitlines()
    assert len(logged) == 2
    journey.note("openai client through `sparkrig gateway serve`", time.monotonic() - began)

    # a worker rank dies while serving: named at once, with its log's signature and the bundle
    ranks = [p.split()[0] for p in node_processes(twin, "b") if "VLLM::Worker" in p]
    assert len(ranks) == 1, node_processes(twin, "b")
    killed_at = time.monotonic()
    assert twin.ssh("b", f"kill -9 {ranks[0]}").returncode == 0  # as its owner would
    named = None
    while time.monotonic() - killed_at < 90:
        # bounded: the head's /health still answers, a request to it hangs
        status_run = journey.sparkrig("status", cf, "--json", timeout=45)
        report = json.loads(status_run.stdout)
        blamed = {hit["where"] for hit in report["signatures"]}
        if report["ready"] is False and ("b/vllm" in report["summary"] or "b/vllm" in blamed):
            named = time.monotonic() - killed_at
            assert status_run.returncode == 1
            # the log's signature ends the wait: no completion probe left to hang
            said = report["summary"]
            assert "b/vllm logged worker-process-died" in said or "not running" in said, said
            break
        time.sleep(1)
    assert named is not None, "status did not say the pair is down within 90 s of the kill"
    journey.note("kill -9 the PP1 rank on b; status names it", named)
    record_property("dead_rank_named_after_s", round(named, 1))
    scan = journey.sparkrig("logs", cf, "--scan", "--json")
    hits = {
        (h["where"], h["signature"]) for r in json.loads(scan.stdout)["ranks"] for h in r["hits"]
    }
    assert ("b/vllm", "worker-process-died") in hits, hits
    bundle = journey.folder / "diag.tar.gz"
    diag = journey.sparkrig("diag", cf, "--out", str(bundle))
    assert diag.returncode == 0, diag.stdout + diag.stderr
    with tarfile.open(bundle) as archive:
        names = archive.getnames()
    assert any("b" in n and "vllm" in n for n in names), names

    # down: nothing of the engine left on either node; the fabric restored exactly
    down = journey.sparkrig("down", cf, "--apply", timeout=120)
    assert down.returncode == 0, down.stderr
    deadline = time.monotonic() + 30
    while (left := {n: node_processes(twin, n) for n in NAMES}) != {"a": [], "b": []}:
        assert time.monotonic() < deadline, f"still running after down: {left}"
        time.sleep(0.5)
    restored = journey.sparkrig("fabric", "apply", cf, "--restore")
    assert restored.returncode == 0, restored.stderr
    assert snapshot(twin) == before
    # every command closed the ssh connections it shared between its steps
    for address in twin.addresses.values():
        masters = ["pgrep", "-f", f"ControlPath=.*sparkrig-ssh-.* {address} "]
        assert subprocess.run(masters, check=False, capture_output=True).stdout == b"", address
    record_property("journey_seconds", round(journey.seconds(), 1))
    # the pair tutorial shows this journey's commands and output: it still says what they print
    tutorial = Path(__file__).parents[2] / "docs" / "tutorials" / "pair.md"
    assert not journey_mismatches(tutorial, "tests/journey/test_pair_journey.py", journey.steps)
