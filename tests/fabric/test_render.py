"""Rendered files of the 4-ring example: the exact text of the parts that matter."""

from __future__ import annotations

import shlex
from pathlib import Path

from sparkrig.config import load_cluster
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.plan_model import FabricPlan
from sparkrig.fabric.render import env_file, ip_script, netplan_yaml, plan_files, write_plan_files
from sparkrig.fabric.steps import write_file_argv

EXAMPLES = Path(__file__).parents[2] / "examples"


def _ring4() -> FabricPlan:
    return plan_fabric(load_cluster(EXAMPLES / "ring4.toml"))


def test_ip_script_of_a_relay() -> None:
    plan = _ring4()
    script = ip_script(plan, "c")
    body = [line for line in script.splitlines() if not line.startswith("#")]
    assert body[:16] == [
        "set -eu",
        "ip link set dev enp1s0f1np1 mtu 9000",
        "ip link set dev enp1s0f1np1 up",
        "ip address add 10.20.2.2/24 dev enp1s0f1np1",
        "ip link set dev enP2p1s0f1np1 mtu 9000",
        "ip link set dev enP2p1s0f1np1 up",
        "ip address add 10.20.3.2/24 dev enP2p1s0f1np1",
        "ip link set dev enp1s0f0np0 mtu 9000",
        "ip link set dev enp1s0f0np0 up",
        "ip address add 10.20.4.1/24 dev enp1s0f0np0",
        "ip link set dev enP2p1s0f0np0 mtu 9000",
        "ip link set dev enP2p1s0f0np0 up",
        "ip address add 10.20.5.1/24 dev enP2p1s0f0np0",
        "ip route add 10.20.0.1/32 via 10.20.2.1 dev enp1s0f1np1 src 10.20.4.1",
        "ip route add 10.20.6.2/32 via 10.20.4.2 dev enp1s0f0np0 src 10.20.4.1",
        "sysctl -w net.ipv4.ip_forward=1",
    ]
    # last, the graph file its ranks read, written whole at the path NCCL_GRAPH_FILE names
    ((path, xml),) = plan.node("c").node_files.items()
    assert "\n".join(body[16:]) == shlex.join(write_file_argv(path, xml))


def test_undo_script_reverses_the_apply_script() -> None:
    plan = _ring4()
    undo = [
        line
        for line in ip_script(plan, "c", undo=True).splitlines()
        if line.startswith(("ip", "sysctl"))
    ]
    assert undo[0] == "sysctl -w net.ipv4.ip_forward=0"
    assert undo[1] == "ip route del 10.20.6.2/32 via 10.20.4.2 dev enp1s0f0np0"
    assert undo[-1] == "ip link set dev enp1s0f1np1 mtu 1500"
    assert len(undo) == 15
    assert ip_script(plan, "c", undo=True).splitlines()[4] == "rm -f /etc/sparkrig/nccl-graph-c.xml"


def test_netplan_has_each_rail_with_mtu_address_and_relay_route() -> None:
    text = netplan_yaml(_ring4(), "a")
    assert "link-local: []" in text
    assert text.count("mtu: 9000") == 4
    assert (
        "    enp1s0f0np0:\n"
        "      # p0 root A, cable to b\n"
        "      dhcp4: false\n"
        "      dhcp6: false\n"
        "      link-local: []\n"
        "      mtu: 9000\n"
        "      addresses:\n"
        "        - 10.20.0.1/24\n"
        "      routes:\n"
        "        - to: 10.20.2.1/32\n"
        "          via: 10.20.0.2\n"
        "          from: 10.20.0.1\n"
        "        - to: 10.20.4.1/32\n"
        "          via: 10.20.0.2\n"
        "          from: 10.20.0.1\n"
    ) in text
    assert "sysctl" not in text  # a is no relay


def test_env_file_lines_each_after_their_reason() -> None:
    lines = env_file(_ring4(), "b").splitlines()
    assert "NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1,rocep1s0f0,roceP2p1s0f0" in lines
    assert "VLLM_HOST_IP=10.20.2.1" in lines
    index = lines.index("NCCL_IB_SUBNET_AWARE_ROUTING=1")
    assert "docs/field-notes.md#nccl-subnet-aware-routing" in lines[index - 1]


def test_plan_files_per_node(tmp_path: Path) -> None:
    plan = _ring4()
    names = set(plan_files(plan))
    assert {"b/sysctl-b.conf", "b/nccl-graph-b.xml", "a/fabric-apply.sh", "plan.json"} <= names
    assert "a/sysctl-a.conf" not in names
    written = write_plan_files(plan, tmp_path)
    assert len(written) == len(names)
    assert (tmp_path / "a" / "fabric-apply.sh").stat().st_mode & 0o111
    assert FabricPlan.model_validate_json((tmp_path / "plan.json").read_text()) == plan
