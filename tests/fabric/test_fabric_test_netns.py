"""`sparkrig fabric test` on real Linux networking: namespaces as nodes, two veth pairs per cable,
the plan applied with `fabric apply` (addresses, relay routes, forwarding), workers started with
the netns executor on Gloo. Every check passes, and the interfaces' own counters show the
sparkrig all-to-all loading every cable direction equally with only its own bytes (nothing
relayed by the kernel), while the built-in one leans on the relay routes of the 4-ring."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.fabric.collectives.results import elements_for
from sparkrig.fabric.collectives.schedule import all_to_all_cable_elements
from tests.fabric.netns_lab import cluster_toml, netns_lab, why_netns_unavailable
from tests.fabric.test_fabric_test_cli import _workers_running
from tests.fabric.test_netns import TOPOLOGIES, _wiring

pytest.importorskip("torch")
UNAVAILABLE = why_netns_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")

SPARKRIG = str(Path(sys.executable).with_name("sparkrig"))
COUNTED_BYTES = 4 * 1024 * 1024  # the fabric test's default counted size
# TCP/IP headers at MTU 9000, the receiver's ACKs and the barriers around the counted run
OVERHEAD = 0.05


def _sparkrig(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=500, cwd=cwd, check=False
    )


@pytest.fixture(params=["pair", "triangle", "ring4"], name="tested")
def _tested(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict]]:  # type: ignore[type-arg]
    names, cables = TOPOLOGIES[request.param]
    with netns_lab(names, _wiring(cables)) as lab:
        cluster = tmp_path / "cluster.toml"
        # the namespaces share this machine's disk: the ring's graph files go to tmp_path
        node_dir = f'[fabric]\nnode_dir = "{tmp_path / "node"}"\n'
        cluster.write_text(cluster_toml(f"{lab.prefix}{request.param}", names, cables, node_dir))
        applied = _sparkrig(
            "fabric",
            "apply",
            str(cluster),
            "--apply",
            "--executor",
            "netns",
            "--netns-prefix",
            lab.prefix,
            cwd=tmp_path,
        )
        assert applied.returncode == 0, applied.stderr
        try:
            result = _sparkrig(
                "fabric",
                "test",
                str(cluster),
                "--apply",
                "--executor",
                "netns",
                "--netns-prefix",
                lab.prefix,
                "--sizes",
                "8K,1M",
                "--iterations",
                "2",
                "--json",
                cwd=tmp_path,
            )
            assert result.returncode == 0, result.stderr
            assert not _workers_running(defaults.FABRIC_TEST_PORT)
            yield request.param, json.loads(result.stdout)
        finally:
            _sparkrig("fabric", "apply", str(cluster), "--restore", cwd=tmp_path)


def test_a_fabric_not_applied_is_named_before_anything_starts(tmp_path: Path) -> None:
    names, cables = TOPOLOGIES["pair"]
    with netns_lab(names, _wiring(cables)) as lab:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(cluster_toml(f"{lab.prefix}pair", names, cables))
        result = _sparkrig(
            "fabric",
            "test",
            str(cluster),
            "--apply",
            "--executor",
            "netns",
            "--netns-prefix",
            lab.prefix,
            cwd=tmp_path,
        )
    assert result.returncode != 0
    message = " ".join(result.stderr.split())
    assert "a p0a (cable to b): down" in message  # each interface the plan needs, named
    assert "run `sparkrig fabric apply CLUSTER --apply`" in message
    assert "no worker was started" in message
    assert "Traceback" not in result.stderr
    assert not _workers_running(defaults.FABRIC_TEST_PORT)


def _loads(receipt: dict, collective: str, implementation: str) -> dict[tuple[str, str], tuple]:  # type: ignore[type-arg]
    return {
        (load["src"], load["dst"]): (load["tx_bytes"], load["rx_bytes_at_dst"])
        for load in receipt["cable_loads"]
        if load["collective"] == collective and load["implementation"] == implementation
    }


def test_every_check_passes_on_every_node(tested: tuple[str, dict]) -> None:  # type: ignore[type-arg]
    name, receipt = tested
    ranks = len(TOPOLOGIES[name][0])
    assert receipt["complete"]
    assert receipt["backend"] == "gloo"
    assert len(receipt["checks"]) == ranks
    assert all(check["passed"] == 96 and not check["failed"] for check in receipt["checks"])
    assert len(receipt["points"]) == 4 * 2 * 2


def test_relayed_all_to_all_loads_every_cable_direction_equally_with_its_own_bytes(
    tested: tuple[str, dict],  # type: ignore[type-arg]
) -> None:
    name, receipt = tested
    ranks = len(TOPOLOGIES[name][0])
    loads = _loads(receipt, "all_to_all", "sparkrig")
    chunk = elements_for("all_to_all", COUNTED_BYTES, ranks, 4) // ranks
    planned = {
        (receipt["rank_order"][src], receipt["rank_order"][dst]): 4 * elements
        for (src, dst), elements in all_to_all_cable_elements(ranks, chunk).items()
    }
    assert set(loads) == set(planned)
    for direction, (sent, received) in loads.items():
        # what the schedule puts on this cable direction, and nothing forwarded for others
        assert planned[direction] <= sent <= planned[direction] * (1 + OVERHEAD), direction
        assert abs(received - sent) <= planned[direction] * OVERHEAD, direction


def test_built_in_all_to_all_on_the_ring_crosses_the_relays(tested: tuple[str, dict]) -> None:  # type: ignore[type-arg]
    name, receipt = tested
    if name != "ring4":
        pytest.skip("only the 4-ring has ranks without a shared cable")
    ours = _loads(receipt, "all_to_all", "sparkrig")
    builtin = _loads(receipt, "all_to_all", "builtin")
    # Gloo sends opposite ranks' blocks straight to them; the kernel relays them on the planned
    # routes (a<->c through b, b<->d through c), so b->c carries three blocks and d->a one
    heaviest = max(sent for sent, _ in builtin.values())
    lightest = min(sent for sent, _ in builtin.values())
    assert heaviest > 2 * lightest, builtin
    assert max(s for s, _ in ours.values()) < 1.1 * min(s for s, _ in ours.values())
