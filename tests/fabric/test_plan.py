"""The planner on the examples and on every bad cabling input of issue 5."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from sparkrig.config import load_cluster, parse_cluster
from sparkrig.errors import CablingError, ConfigError
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.plan_model import FabricPlan

EXAMPLES = Path(__file__).parents[2] / "examples"


def _nodes(*names: str) -> str:
    return "".join(f'\n[[nodes]]\nname = "{name}"\n' for name in names)


def _cluster(cables: list[str], names: tuple[str, ...], fabric: str = "") -> str:
    listed = ", ".join(f'"{c}"' for c in cables)
    return f"cables = [{listed}]\n" + _nodes(*names) + (f"\n[fabric]\n{fabric}\n" if fabric else "")


RING4 = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> d.p1", "d.p0 <-> a.p1"]


def _plan(text: str, tp: int | None = None) -> FabricPlan:
    return plan_fabric(parse_cluster(text), tp)


def _error(text: str, tp: int | None = None) -> str:
    with pytest.raises(CablingError) as caught:
        _plan(text, tp)
    message = str(caught.value)
    assert "\n" not in message
    assert " — " in message
    return message


@pytest.mark.parametrize(
    ("example", "kind"),
    [
        ("pair", "pair-1-cable"),
        ("pair-2-cables", "pair-2-cables"),
        ("triangle", "triangle"),
        ("ring4", "ring-4"),
        ("line", "line-3"),
    ],
)
def test_examples_classify(example: str, kind: str) -> None:
    assert plan_fabric(load_cluster(EXAMPLES / f"{example}.toml")).topology == kind


def test_ring_order_follows_cables_not_file_order() -> None:
    # file lists a, c, b, d but the cables run a-b-c-d-a
    plan = _plan(_cluster(RING4, ("a", "c", "b", "d")))
    assert plan.rank_order == ["a", "b", "c", "d"]
    ring = plan.node("a")
    assert (ring.prev, ring.next) == ("d", "b")


def test_ring_direction_follows_the_heads_first_port() -> None:
    # a's p0 goes to d here, so the walk goes a -> d -> c -> b
    cables = ["a.p0 <-> d.p1", "d.p0 <-> c.p1", "c.p0 <-> b.p1", "b.p0 <-> a.p1"]
    assert _plan(_cluster(cables, ("a", "b", "c", "d"))).rank_order == ["a", "d", "c", "b"]


def test_head_setting_moves_rank_zero() -> None:
    plan = _plan(_cluster(RING4, ("a", "b", "c", "d"), 'head = "c"'))
    assert plan.rank_order == ["c", "d", "a", "b"]


def test_line_starts_at_an_end() -> None:
    plan = _plan(_cluster(["b.p0 <-> a.p1", "b.p1 <-> c.p0"], ("b", "a", "c")))
    assert plan.topology == "line-3"
    assert plan.rank_order in (["a", "b", "c"], ["c", "b", "a"])
    assert plan.tensor_parallel == []
    assert plan.warnings


def test_two_subnets_per_cable_one_per_root_with_host_per_end() -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "ring4.toml"))
    subnets = [rail.subnet for cable in plan.cables for rail in cable.rails]
    assert len(subnets) == 8
    assert len(set(subnets)) == 8
    pool = ipaddress.IPv4Network("10.20.0.0/16")
    assert all(s.subnet_of(pool) and s.prefixlen == 24 for s in subnets)
    first = plan.cables[0]
    assert first.label == "a.p0 <-> b.p1"
    assert [r.root for r in first.rails] == [0, 1]
    assert [(e.node, e.netdev, str(e.address)) for e in first.rails[0].ends] == [
        ("a", "enp1s0f0np0", "10.20.0.1/24"),
        ("b", "enp1s0f1np1", "10.20.0.2/24"),
    ]
    assert [e.rdma for e in first.rails[1].ends] == ["roceP2p1s0f0", "roceP2p1s0f1"]


def test_ring4_relays_opposite_ranks_through_the_next_neighbour() -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "ring4.toml"))
    relayed = {(r.node, r.target): r for r in plan.routes if r.relays}
    assert set(relayed) == {("a", "c"), ("c", "a"), ("b", "d"), ("d", "b")}
    a_to_c = relayed[("a", "c")]
    assert a_to_c.path == ["a", "b", "c"]
    assert a_to_c.destination == plan.node("c").control_address
    assert a_to_c.src == plan.node("a").control_address
    assert relayed[("c", "a")].path == ["c", "b", "a"]  # same relay both ways
    assert [n.node for n in plan.nodes if n.forwarding] == ["b", "c"]
    assert plan.control_plane == "fabric"


def test_every_node_reaches_every_control_address() -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "ring4.toml"))
    for node in plan.nodes:
        subnets = [i.address.network for i in node.interfaces]
        reached = {r.destination for r in node.routes}
        for other in plan.nodes:
            if other.node != node.node:
                direct = any(other.control_address in s for s in subnets)
                assert direct or other.control_address in reached


def test_management_lan_replaces_relays() -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "triangle.toml"))
    assert plan.control_plane == "management"
    assert plan.routes == []
    env = {e.name: e.value for e in plan.node("b").env}
    assert env["VLLM_HOST_IP"] == "192.168.1.12"
    assert env["GLOO_SOCKET_IFNAME"] == "enP7s7"
    assert env["NCCL_SOCKET_IFNAME"] == "=enP7s7"


def test_ring4_env() -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "ring4.toml"))
    env = {e.name: e.value for e in plan.node("a").env}
    assert env["NCCL_IB_HCA"] == "=rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1"
    assert env["NCCL_IB_SUBNET_AWARE_ROUTING"] == "1"
    assert env["NCCL_ALGO"] == "Ring"
    assert env["NCCL_IB_MERGE_NICS"] == "0"
    assert env["VLLM_HOST_IP"] == "10.20.0.1"
    assert env["NCCL_SOCKET_IFNAME"] == "=enp1s0f0np0"
    assert env["NCCL_GRAPH_FILE"] == "/etc/sparkrig/nccl-graph-a.xml"
    assert "NCCL_IB_GID_INDEX" not in env
    assert all(e.reason for e in plan.node("a").env)


def test_pair_env_has_no_ring_settings_and_only_its_cable_devices() -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "pair.toml"))
    env = {e.name: e.value for e in plan.node("spark2").env}
    assert env["NCCL_IB_HCA"] == "=rocep1s0f1,roceP2p1s0f1"
    assert "NCCL_ALGO" not in env
    assert "NCCL_GRAPH_FILE" not in env
    assert plan.node("spark2").nccl_graph_xml is None


def test_ring_graph_receives_on_prev_port_sends_on_next_alternating_roots() -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "ring4.toml"))
    xml = plan.node("a").nccl_graph_xml
    assert xml is not None
    # a's HCAs: 0,1 face b (p0, next); 2,3 face d (p1, prev)
    env = {e.name: e.reason for e in plan.node("a").env}
    assert "0=rocep1s0f0, 1=roceP2p1s0f0, 2=rocep1s0f1, 3=roceP2p1s0f1" in env["NCCL_GRAPH_FILE"]
    assert xml.startswith('<graphs version="1">')
    channels = [line.strip() for line in xml.splitlines() if "<channel>" in line]
    assert len(channels) == 8
    assert channels[0] == '<channel><net dev="2"/><gpu dev="0"/><net dev="0"/></channel>'
    assert channels[1] == '<channel><net dev="3"/><gpu dev="0"/><net dev="1"/></channel>'


def test_nccl_graph_can_be_turned_off() -> None:
    plan = _plan(_cluster(RING4, ("a", "b", "c", "d"), "nccl_graph = false"))
    assert all(n.nccl_graph_xml is None for n in plan.nodes)
    assert all(n.node_files == {} for n in plan.nodes)


def test_node_dir_places_the_graph_file_the_env_names() -> None:
    plan = _plan(_cluster(RING4, ("a", "b", "c", "d"), 'node_dir = "/srv/sparkrig/"'))
    env = {e.name: e.value for e in plan.node("b").env}
    assert env["NCCL_GRAPH_FILE"] == "/srv/sparkrig/nccl-graph-b.xml"
    assert plan.node("b").node_files == {
        "/srv/sparkrig/nccl-graph-b.xml": plan.node("b").nccl_graph_xml
    }


@pytest.mark.parametrize("node_dir", ["etc/sparkrig", "", "/etc/a,b"])
def test_node_dir_must_be_an_absolute_path_without_commas(node_dir: str) -> None:
    with pytest.raises(ConfigError, match="not an absolute path without commas"):
        parse_cluster(_cluster(RING4, ("a", "b", "c", "d"), f'node_dir = "{node_dir}"'))


def test_tp2_on_a_ring4_is_a_cabled_pair() -> None:
    assert _plan(_cluster(RING4, ("a", "b", "c", "d")), tp=2).tensor_parallel == ["a", "b"]


def test_switched_fabric_shares_subnets() -> None:
    text = (
        'cables = ["a.p0 <-> sw.1", "b.p0 <-> sw.2", "c.p0 <-> sw.3"]\n'
        + _nodes("a", "b", "c")
        + '\n[switch]\nname = "sw"\n'
    )
    plan = _plan(text)
    assert plan.topology == "switched"
    assert plan.routes == []
    subnets = {rail.subnet for cable in plan.cables for rail in cable.rails}
    assert len(subnets) == 2
    assert str(plan.node("c").interfaces[0].address) == "10.20.0.3/24"


# --- bad input: each names the cause and the fix ------------------------------------------------


def test_port_used_twice() -> None:
    message = _error(_cluster(["a.p0 <-> b.p1", "a.p0 <-> c.p1"], ("a", "b", "c")))
    assert "port a.p0 is in two cables, 'a.p0 <-> b.p1' and 'a.p0 <-> c.p1'" in message
    assert "a port takes one cable" in message


def test_unknown_node_in_a_cable() -> None:
    message = _error(_cluster(["a.p0 <-> zz.p1"], ("a", "b")))
    assert "names node zz, which is not in [[nodes]]" in message
    assert "use one of a, b" in message


def test_unknown_port_in_a_cable() -> None:
    message = _error(_cluster(["a.p7 <-> b.p1"], ("a", "b")))
    assert "names port p7, which node a does not have" in message
    assert "use one of p0, p1" in message


def test_self_loop() -> None:
    message = _error(_cluster(["a.p0 <-> a.p1"], ("a", "b")))
    assert "joins node a to itself" in message
    assert "connect it to another node's port" in message


def test_disconnected_nodes() -> None:
    message = _error(_cluster(["a.p0 <-> b.p1", "c.p0 <-> d.p1"], ("a", "b", "c", "d")))
    assert "nodes c, d have no cable path to a" in message
    assert "cable them to the rest or remove them" in message


def test_tp_larger_than_the_nodes() -> None:
    message = _error(_cluster(RING4, ("a", "b", "c", "d")), tp=5)
    assert "tensor_parallel_size 5 needs 5 nodes but the cluster has 4" in message
    assert "lower fabric.tensor_parallel_size to 4 or fewer" in message


def test_tp3_on_a_ring4_is_a_line() -> None:
    message = _error(_cluster(RING4, ("a", "b", "c", "d"), "tensor_parallel_size = 3"))
    assert message.startswith("nodes a,b,c form a line, not a closed collective")
    assert "use fabric.tensor_parallel_size 4 (every node) or 2" in message


def test_tp3_on_a_line() -> None:
    assert "form a line" in _error(
        _cluster(["a.p0 <-> b.p1", "b.p0 <-> c.p1"], ("a", "b", "c")), tp=3
    )


def test_subnet_pool_overlapping_the_management_lan() -> None:
    text = PAIR_WITH_LAN.replace('"10.20.0.0/16"', '"192.168.0.0/16"')
    message = _error(text)
    assert "subnet pool 192.168.0.0/16 overlaps the management network 192.168.1.0/24" in message
    assert "set fabric.subnet_pool to a range outside it" in message


def test_subnet_pool_too_small_for_the_cables() -> None:
    message = _error(_cluster(RING4, ("a", "b", "c", "d"), 'subnet_pool = "10.20.0.0/22"'))
    assert "holds 4 /24 subnets but the cables need 8" in message


def test_management_on_some_nodes_only() -> None:
    text = PAIR_WITH_LAN.replace('management = "192.168.1.12/24"\n', "")
    assert "give every node one" in _error(text)


def test_not_a_ring_line_or_mesh() -> None:
    # a star: b in the middle with three neighbours
    text = _cluster(["b.p0 <-> a.p0", "b.p1 <-> c.p0", "b.p2 <-> d.p0"], ("a", "b", "c", "d"))
    text = text.replace(
        'name = "b"\n',
        'name = "b"\n[[nodes.ports]]\nname = "p0"\nfunctions = [{netdev = "x0", rdma = "m0"}]\n'
        '[[nodes.ports]]\nname = "p1"\nfunctions = [{netdev = "x1", rdma = "m1"}]\n'
        '[[nodes.ports]]\nname = "p2"\nfunctions = [{netdev = "x2", rdma = "m2"}]\n',
    )
    assert "form no ring, line or full mesh" in _error(text)


PAIR_WITH_LAN = """
cables = ["a.p0 <-> b.p1"]
[[nodes]]
name = "a"
management = "192.168.1.11/24"
[[nodes]]
name = "b"
management = "192.168.1.12/24"
[fabric]
subnet_pool = "10.20.0.0/16"
"""


def test_single_node_has_no_fabric() -> None:
    plan = _plan('[[nodes]]\nname = "solo"\n')
    assert plan.topology == "single"
    assert plan.cables == []
    env = {e.name: e.value for e in plan.node("solo").env}
    assert "NCCL_IB_HCA" not in env
    assert env["VLLM_HOST_IP"] == "127.0.0.1"


def test_full_mesh_of_four_needs_no_relay() -> None:
    ports = "".join(
        f'[[nodes.ports]]\nname = "q{i}"\nfunctions = [{{ netdev = "e{i}", rdma = "m{i}" }}]\n'
        for i in range(3)
    )
    nodes = "".join(f'\n[[nodes]]\nname = "{n}"\n{ports}' for n in "abcd")
    cables = [
        "a.q0 <-> b.q0",
        "a.q1 <-> c.q0",
        "a.q2 <-> d.q0",
        "b.q1 <-> c.q1",
        "b.q2 <-> d.q1",
        "c.q2 <-> d.q2",
    ]
    listed = ", ".join(f'"{c}"' for c in cables)
    plan = _plan(f"cables = [{listed}]\n{nodes}", tp=3)
    assert plan.topology == "mesh-4"
    assert plan.tensor_parallel == ["a", "b", "c"]
    assert not any(r.relays for r in plan.routes)
    assert [len(c.rails) for c in plan.cables] == [1] * 6  # one function per port, one rail
