"""The fabric half of the journey of an owner of four nodes in a switchless ring, on the twin
(tests/twin.py): four network and mount namespaces, each its own /etc/sparkrig, reached only over
ssh, no management LAN (TCP control rides the cables, and reaches the opposite node through a
relay, as in the field reports' ring).

fabric discover -> plan -> doctor (before: each node's NCCL graph is missing, named per node) ->
fabric apply (relay routes, forwarding, and each node's own graph file) -> doctor (clean) ->
fabric test (every rank meets rank 0's store, the opposite node through the relay; bytes on every
cable direction) -> fabric apply --restore (addresses, routes, sysctls and files as before).
The engine across the ring is not started here: two cores cannot boot four vLLM ranks inside the
test budget; the pair journey runs vLLM across nodes (test_pair_journey.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.doctor.netns_ring import CABLES, NAMES, WIRING
from tests.fabric.netns_lab import PORTS
from tests.journey.journey import Journey
from tests.twin import NODE_ETC, Twin, cluster_twin, why_twin_unavailable

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
