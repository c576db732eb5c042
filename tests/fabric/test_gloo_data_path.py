"""On a CPU cluster the fabric test's gloo data must cross the cables. The plan's
GLOO_SOCKET_IFNAME is the control interface (right for an engine's bootstrap); with a management
LAN that put every byte of the test on the LAN: the pair journey on the twin
(docs/contributing/launch-evidence.md) measured 0 bytes on its cable and passed. Now gloo's data
takes the cable facing the next rank, and a run whose cable counters stood still fails."""

from __future__ import annotations

from sparkrig.config.loading import parse_cluster
from sparkrig.fabric.collectives.fabric_test import TestSettings as Settings
from sparkrig.fabric.collectives.fabric_test import worker_argv
from sparkrig.fabric.collectives.results import CableLoad, FabricTestReceipt
from sparkrig.fabric.plan import plan_fabric
from tests.fabric.netns_lab import PORTS

PAIR_ON_A_LAN = f"""name = "pair"
cables = ["a.p0 <-> b.p1"]
[[nodes]]
name = "a"
management = "10.9.0.10/24"
management_interface = "mgmt0"
{PORTS}
[[nodes]]
name = "b"
management = "10.9.0.11/24"
management_interface = "mgmt0"
{PORTS}
"""


def _env(backend: str, node: str, loopback: bool = False) -> dict[str, str]:
    plan = plan_fabric(parse_cluster(PAIR_ON_A_LAN))
    settings = Settings(backend=backend, sizes=[8192], loopback=loopback)
    argv = worker_argv(
        plan, node, python="python3", settings=settings, backend=backend, sizes=[8192]
    )
    return dict(a.split("=", 1) for a in argv[1 : argv.index("python3")])


def test_gloo_data_takes_the_cable_not_the_management_lan() -> None:
    assert _env("gloo", "a")["GLOO_SOCKET_IFNAME"] == "p0a"
    assert _env("gloo", "b")["GLOO_SOCKET_IFNAME"] == "p1a"


def test_nccl_keeps_the_control_interface_and_a_rehearsal_loopback() -> None:
    assert _env("nccl", "a")["GLOO_SOCKET_IFNAME"] == "mgmt0"  # NCCL's data rides RDMA
    assert _env("gloo", "a", loopback=True)["GLOO_SOCKET_IFNAME"] == "lo"


def _receipt(*sent: int, backend: str = "gloo") -> FabricTestReceipt:
    loads = [
        CableLoad(
            collective="all_reduce",
            implementation="builtin",
            size_bytes=8192,
            src=src,
            dst=dst,
            tx_bytes=tx,
            rx_bytes_at_dst=tx,
        )
        for (src, dst), tx in zip((("a", "b"), ("b", "a")), sent, strict=False)
    ]
    return FabricTestReceipt(
        cluster="pair",
        topology="pair-1-cable",
        rank_order=["a", "b"],
        executor="ssh",
        backend=backend,
        iterations=3,
        cable_loads=loads,
    )


def test_a_run_whose_cables_stood_still_is_named_and_one_that_used_them_is_not() -> None:
    assert _receipt(0, 0).cables_idle is True
    assert _receipt(2_100_488, 2_100_356).cables_idle is False
    assert _receipt(0, 4_096).cables_idle is False  # one direction carried it
    assert _receipt().cables_idle is False  # counters not read (a rehearsal): nothing to judge


def test_an_nccl_run_is_not_judged_by_netdev_counters_its_rdma_bytes_never_reach() -> None:
    assert _receipt(0, 0, backend="nccl").cables_idle is False
