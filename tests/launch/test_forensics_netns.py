"""The forensics proof on a network-namespace cluster: three namespaces cabled as a triangle by
`fabric apply`, each node reached through the netns executor, `vllm` on every node the stand-in
tests/launch/fake_ranks/vllm (vLLM's exact log format), its ranks meeting over the fabric at the
head's --master-addr before the head's API comes up, as vLLM's do.

- a worker that prints a known signature and dies: `up --apply` fails naming the node and the
  signature, and forgets the cluster;
- a worker whose log stops while its process lives (it printed a collective failure) and a worker
  slow to load: `up` comes up on the head's real llama-server, prints the slow rank's phase as
  the slowest, and `logs --scan --json` and `status --json` name the silent worker by its
  signature.

Namespaces and processes are removed even when a test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.state import load_state, process_start_ticks
from tests.conftest import SPARKRIG
from tests.fabric.netns_lab import PORTS, NetnsLab, netns_lab, why_netns_unavailable

UNAVAILABLE = why_netns_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")

FAKE = Path(__file__).parent / "fake_ranks" / "vllm"
NAMES = ["a", "b", "c"]
CABLES = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> a.p1"]
WIRING = [("a", "p0", "b", "p1"), ("b", "p0", "c", "p1"), ("c", "p0", "a", "p1")]
API_PORT = 18080
SLOW_LOAD_S = 5  # longer than any phase of the head's boot (its longest: 4 s)
# the silent test's stall window: past the head's quiet wait for the slow rank, and the quiet
# time after which `status` names a live rank's log
QUIET_WINDOW_S = 8
FAKE_GPU = Path(__file__).parent / "fake_gpu"


def toml_env(env: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }"


def cluster_text(
    lab: NetnsLab, name: str, api_address: str, env: dict[str, dict[str, str]], window_s: float
) -> str:
    """`env`: per node, the fake's mode (the node's env reaches its process)."""
    nodes = "".join(
        f'\n[[nodes]]\nname = "{node}"\n'
        f'executor = {{ kind = "netns", target = "{lab.namespace(node)}" }}\n'
        f"env = {toml_env(env.get(node, {}))}\n{PORTS}"
        for node in NAMES
    )
    cables = ", ".join(f'"{cable}"' for cable in CABLES)
    return f"""name = "{name}"
cables = [{cables}]
{nodes}
[env]
FAKE_RANKS_RENDEZVOUS = "1"

[engine]
kind = "vllm"
binary = "{FAKE}"
port = {API_PORT}
api_address = "{api_address}"
stall_window_s = {window_s:g}

[model]
path = "{FAKE.parent}"  # the fake reads no weights; a folder every node has
served_name = "smollm2"

[profile]
tensor_parallel_size = 3
max_model_len = 4096
max_num_seqs = 8
gpu_memory_utilization = 0.3
"""


def sparkrig(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def quiet_ranks(path: Path, env: dict[str, str], wanted: str) -> dict[str, dict[str, object]]:
    """`status --json`'s quiet ranks, asked until `wanted` is among them (or 20 s passed)."""
    deadline = time.monotonic() + 20
    while True:
        shown = json.loads(sparkrig("status", str(path), "--json", env=env).stdout)
        quiet = {q["key"]: q for q in shown["quiet"]}
        if wanted in quiet or time.monotonic() > deadline:
            return quiet
        time.sleep(1)


class NetnsCluster:
    """One lab for the module; each test writes its own cluster file (its own name and modes)."""

    def __init__(self, lab: NetnsLab, api_address: str, folder: Path) -> None:
        self.lab, self.api_address, self.folder = lab, api_address, folder
        self.written: list[tuple[Path, str]] = []

    def file(self, name: str, env: dict[str, dict[str, str]], window_s: float = 60) -> Path:
        name = f"{self.lab.prefix}{name}".replace("-", "")
        path = self.folder / f"{name}.toml"
        path.write_text(cluster_text(self.lab, name, self.api_address, env, window_s))
        self.written.append((path, name))
        return path

    def clean_up(self) -> None:
        for path, name in self.written:
            state = load_state(name)
            if state is None:
                continue
            sparkrig("down", str(path), "--apply", timeout=60)
            for record in state.started:  # never leave a process behind
                if process_start_ticks(record.pid) == record.pid_start_ticks:
                    os.kill(record.pid, 9)


@pytest.fixture(name="netns_cluster", scope="module")
def _netns_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsCluster]:
    folder = tmp_path_factory.mktemp("forensics-netns")
    with netns_lab(NAMES, WIRING) as lab:
        cluster = NetnsCluster(lab, lab.link_from_here("a", 252), folder)
        fabric = cluster.file("fabric", {})
        applied = sparkrig(
            "fabric", "apply", str(fabric), "--apply", "--executor", "netns",
            "--netns-prefix", lab.prefix,
        )  # fmt: skip
        assert applied.returncode == 0, applied.stderr
        try:
            yield cluster
        finally:
            cluster.clean_up()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    assert lab.prefix not in listed.stdout  # no namespace (and so no veth) left behind


def test_up_names_the_dead_worker_and_its_signature_across_namespaces(
    netns_cluster: NetnsCluster,
) -> None:
    path = netns_cluster.file(
        "dead",
        {
            "a": {"FAKE_RANKS_HEAD": "sleep"},
            "b": {"FAKE_RANKS_WORKER": "die"},
            "c": {"FAKE_RANKS_WORKER": "clean"},
        },
    )
    up = sparkrig("up", str(path), "--apply")
    assert up.returncode != 0
    message = " ".join(up.stderr.split())
    assert "node b: vllm exited with status 1 before the cluster was ready" in message
    assert "b/vllm: [roce-collective-peer-silent]" in message
    assert "b/vllm: [cuda-launch-failed]" in message
    assert "c/vllm: [" not in message  # the clean ranks match nothing
    assert "a/vllm: [" not in message
    assert load_state(netns_cluster.written[-1][1]) is None  # stopped and forgotten


@pytest.mark.engine
def test_silent_worker_named_and_slow_rank_is_the_slowest_phase(
    netns_cluster: NetnsCluster, engine: EngineInstall, bundled_model: Path
) -> None:
    head = {
        "FAKE_RANKS_HEAD": "serve",
        "FAKE_VLLM_LLAMA_SERVER": str(engine.server_binary),
        "FAKE_VLLM_GGUF": str(bundled_model),
        "FAKE_VLLM_LLAMA_ARGS": " ".join(engine.server_args),
    }
    path = netns_cluster.file(
        "silent",
        {
            "a": head,
            "b": {"FAKE_RANKS_WORKER": "live"},
            "c": {"FAKE_RANKS_WORKER": "clean", "FAKE_RANKS_LOAD_S": str(SLOW_LOAD_S)},
        },
        window_s=QUIET_WINDOW_S,
    )
    name = netns_cluster.written[-1][1]
    up = sparkrig("up", str(path), "--apply")
    assert up.returncode == 0, up.stderr + up.stdout
    said = " ".join(up.stderr.split())
    assert f"slowest boot phase: c/vllm weights loaded took {SLOW_LOAD_S:.1f} s" in said
    state = load_state(name)
    assert state is not None
    assert [p.name for p in state.boot_phases["c/vllm"]] == ["weights loaded"]
    assert len(state.boot_phases["a/vllm"]) == 4  # the head's four, unmoved by the wait
    assert {r.executor.kind for r in state.started} == {"netns"}
    head_argv = state.started[-1].process.argv
    master = head_argv[head_argv.index("--master-addr") + 1]
    assert not master.startswith("127."), master  # the ranks met over the fabric

    scan = sparkrig("logs", str(path), "--scan", "--json")
    assert scan.returncode == 1, scan.stderr  # a signature was found
    report = json.loads(scan.stdout)
    found = {(hit["where"], hit["signature"]) for hit in report["hits"]}
    assert ("b/vllm", "roce-collective-peer-silent") in found
    assert ("b/vllm", "cuda-launch-failed") in found
    assert not [w for w, _ in found if not w.startswith("b/")]  # a and c: clean
    assert {k["node"] for k in report["kernels"]} == set(NAMES)

    status = sparkrig("status", str(path), "--json")
    shown = json.loads(status.stdout)
    assert shown["ready"] is True, shown["summary"]
    rows = {(row["node"], row["phase"]) for row in shown["rows"]}
    assert ("b", "running") in rows  # its process lives, its log has stopped
    assert {(h["where"], h["signature"]) for h in shown["signatures"]} >= {
        ("b/vllm", "roce-collective-peer-silent")
    }
    assert "c/vllm" in shown["boot"]

    # its log quiet past the window while it lives: named, the GPU said unread (no nvidia-smi)
    no_gpu = dict(os.environ, PATH="/usr/sbin:/usr/bin:/sbin:/bin")
    quiet = quiet_ranks(path, no_gpu, "b/vllm")
    assert quiet["b/vllm"]["verdict"] == "unknown", quiet
    assert "GPU not read: no nvidia-smi on node b" in str(quiet["b/vllm"]["message"])
    # with a GPU reading (the stand-in nvidia-smi, 96% busy in b's namespace only): b is the
    # suspect, with the stack-sampling step; any other quiet rank is idle
    busy = dict(no_gpu, PATH=f"{FAKE_GPU}:{no_gpu['PATH']}", FAKE_GPU_BUSY_NODE="b")
    quiet = quiet_ranks(path, busy, "b/vllm")
    assert quiet["b/vllm"]["verdict"] == "suspect", quiet
    assert "GPU 96% busy on node b" in str(quiet["b/vllm"]["message"])
    worker = next(r for r in state.started if r.process.node == "b")
    assert f"py-spy dump --pid {worker.pid}`" in str(quiet["b/vllm"]["message"])
    assert {q["verdict"] for k, q in quiet.items() if k != "b/vllm"} <= {"idle"}
