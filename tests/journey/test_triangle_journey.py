"""The fabric half of the journey of an owner of three nodes cabled as a triangle, on the twin
(tests/twin.py): every node cabled to both others, every command reaching the nodes over ssh by
the cluster file's [executor].

fabric discover -> plan -> apply (one subnet per cable, no relay: every node is a neighbour) ->
doctor (no error) -> fabric test (three ranks, bytes on all six cable directions; the same
triangle with a management LAN is refused, gloo having no way onto its cables) -> fabric apply
--restore (addresses, routes, sysctls as before). No management LAN: TCP control rides the
cables, as in the ring's journey. The engine across the triangle is not
started here: the pair journey runs vLLM across nodes (test_pair_journey.py), and two cores
cannot boot three more ranks inside the test budget.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fabric.netns_lab import PORTS
from tests.journey.journey import Journey
from tests.twin import Twin, cluster_twin, why_twin_unavailable

UNAVAILABLE = why_twin_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")

NAMES = ["a", "b", "c"]
CABLES = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> a.p1"]
WIRING = [("a", "p0", "b", "p1"), ("b", "p0", "c", "p1"), ("c", "p0", "a", "p1")]


def _ends(cables: list[str]) -> set[frozenset[str]]:
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


def test_three_nodes_in_a_triangle_get_a_subnet_a_cable_and_give_it_back(tmp_path: Path) -> None:
    with cluster_twin(NAMES, WIRING, tmp_path, lan=False) as twin:
        name = f"{twin.lab.prefix}triangle".replace("-", "")
        cluster = tmp_path / "triangle.toml"
        cluster.write_text(cluster_text(name, twin))
        cf = str(cluster)
        journey = Journey("triangle", tmp_path)
        before = {node: twin.lab.snapshot(node) for node in NAMES}
        try:
            discover = journey.sparkrig("fabric", "discover", cf, "--json")
            assert discover.returncode == 0, discover.stderr
            assert _ends(json.loads(discover.stdout)) == _ends(CABLES)
            plan = json.loads(journey.sparkrig("fabric", "plan", cf, "--json").stdout)
            assert plan["topology"] == "triangle", plan["topology"]
            assert not [n["node"] for n in plan["nodes"] if n["forwarding"]]  # no relay
            assert not [n["node"] for n in plan["nodes"] if n.get("nccl_graph_xml")]

            applied = journey.sparkrig("fabric", "apply", cf, "--apply")
            assert applied.returncode == 0, applied.stderr
            for node in NAMES:  # one address on each cabled function, two cables a node
                shown = twin.ssh(node, "ip -j -4 address show").stdout
                cabled = {
                    link["ifname"]
                    for link in json.loads(shown)
                    if link["ifname"].startswith("p") and link.get("addr_info")
                }
                assert cabled == {"p0a", "p0b", "p1a", "p1b"}, (node, cabled)

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
            assert len(receipt["rank_order"]) == len(NAMES)
            directions = {
                (load["src"], load["dst"]) for load in receipt["cable_loads"] if load["tx_bytes"]
            }
            assert len(directions) == 2 * len(CABLES)  # every cable, both ways

            # the same triangle with a management LAN: gloo's one address a rank would reach
            # one neighbour only, so the test is refused before any worker starts
            lan_text = cluster.read_text()
            for node, address in twin.addresses.items():  # each node's ssh link stands for it
                named = f'name = "{node}"\n'
                lan_text = lan_text.replace(named, f'{named}management = "{address}/30"\n')
            lan = tmp_path / "triangle-lan.toml"
            lan.write_text(lan_text)
            refused = journey.sparkrig("fabric", "test", str(lan), "--apply")
            assert refused.returncode != 0
            said = " ".join(refused.stderr.split())
            assert "gloo cannot put this test's data on the cables of 3 nodes" in said, said
            assert "--backend nccl" in said, said
            assert "Traceback" not in refused.stderr

            restored = journey.sparkrig("fabric", "apply", cf, "--restore")
            assert restored.returncode == 0, restored.stderr
            assert {node: twin.lab.snapshot(node) for node in NAMES} == before
        finally:
            if (journey.state / "fabric" / f"{name}.json").exists():
                journey.sparkrig("fabric", "apply", cf, "--restore")
