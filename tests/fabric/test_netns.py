"""The plan applied to real Linux networking: namespaces as nodes, veth pairs as cables.

For the pair, the triangle, the 4-ring and a line of three: `sparkrig fabric apply --apply`
through the netns executor, then from inside the namespaces: every rail works end to end with
DF pings that fill the MTU, opposite ranks on the ring reach each other over TCP through
exactly one relay, no node reaches a cable subnet it does not own, and `--restore` leaves every
namespace as it was. On the 4-ring each node reads its NCCL graph file after the apply, and
`--restore` puts back what was at that path.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkrig import defaults
from sparkrig.cli import app
from sparkrig.config import load_cluster
from sparkrig.fabric.apply import journal_path
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.plan_model import FabricPlan
from tests.fabric.netns_lab import NetnsLab, cluster_toml, netns_lab, why_netns_unavailable

UNAVAILABLE = why_netns_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")

MTU = defaults.FABRIC_MTU
TCP_PORT = 29501  # vLLM's usual master port; nothing else listens inside a fresh namespace

TOPOLOGIES = {
    "pair": (["a", "b"], ["a.p0 <-> b.p1"]),
    "triangle": (["a", "b", "c"], ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> a.p1"]),
    "ring4": (
        ["a", "b", "c", "d"],
        ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> d.p1", "d.p0 <-> a.p1"],
    ),
    # not required by the issue, but the one other shape with a relay: a <-> c through b
    "line": (["a", "b", "c"], ["a.p0 <-> b.p1", "b.p0 <-> c.p1"]),
}


def _wiring(cables: list[str]) -> list[tuple[str, str, str, str]]:
    out = []
    for cable in cables:
        left, right = (end.strip().split(".") for end in cable.split("<->"))
        out.append((left[0], left[1], right[0], right[1]))
    return out


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, f"{args}: {result.output} {result.exception!r}"
    return result.output


@pytest.fixture(params=list(TOPOLOGIES), name="applied")
def _applied(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[NetnsLab, FabricPlan, Path, dict[str, object]]]:
    names, cables = TOPOLOGIES[request.param]
    with netns_lab(names, _wiring(cables)) as lab:
        cluster_file = tmp_path / "cluster.toml"
        # unique per run: the journal is named after the cluster; the namespaces share this
        # machine's disk, so the graph files go to tmp_path, not /etc/sparkrig
        node_dir = f'[fabric]\nnode_dir = "{tmp_path / "node"}"\n'
        cluster_file.write_text(
            cluster_toml(f"{lab.prefix}{request.param}", names, cables, node_dir)
        )
        before = {name: lab.snapshot(name) for name in names}
        _cli(
            "fabric",
            "apply",
            str(cluster_file),
            "--apply",
            "--executor",
            "netns",
            "--netns-prefix",
            lab.prefix,
        )
        plan = plan_fabric(load_cluster(cluster_file))
        try:
            yield lab, plan, cluster_file, before
        finally:
            if journal_path(plan.cluster).exists():
                CliRunner().invoke(app, ["fabric", "apply", str(cluster_file), "--restore"])


def test_every_rail_carries_full_mtu_frames_with_df(applied: tuple) -> None:  # type: ignore[type-arg]
    lab, plan, _, _ = applied
    for node in plan.nodes:
        peers = [
            str(end.address.ip)
            for cable in plan.cables
            for rail in cable.rails
            if any(e.node == node.node for e in rail.ends)
            for end in rail.ends
            if end.node != node.node
        ]
        assert len(peers) == len(node.interfaces)
        for fits in lab.ping(node.node, peers, MTU - 28):
            assert fits["ok"], (node.node, fits)
            assert fits["reply_bytes"] == MTU
        for too_big in lab.ping(node.node, peers, MTU - 27):
            assert too_big == {**too_big, "ok": False, "error": "message too long"}


def test_no_node_reaches_a_cable_subnet_it_does_not_own(applied: tuple) -> None:  # type: ignore[type-arg]
    lab, plan, _, _ = applied
    control = {node.control_address for node in plan.nodes}
    for node in plan.nodes:
        owned = [i.address.network for i in node.interfaces]
        foreign = [
            end.address.ip
            for cable in plan.cables
            for rail in cable.rails
            if rail.subnet not in owned
            for end in rail.ends
            if end.address.ip not in control  # control addresses are routed on purpose
        ]
        foreign_subnets = [r.subnet for c in plan.cables for r in c.rails if r.subnet not in owned]
        held = lab.snapshot(node.node)["interfaces"]
        for _, _, addresses in held.values():
            for address in addresses:
                ip = ipaddress.IPv4Interface(address).ip
                assert not any(ip in subnet for subnet in foreign_subnets), (node.node, address)
        if foreign:
            results = lab.ping(node.node, [str(a) for a in foreign], 56)
            assert not any(r["ok"] for r in results), results


def test_control_addresses_reach_every_node_over_tcp(applied: tuple) -> None:  # type: ignore[type-arg]
    lab, plan, _, _ = applied
    for target in plan.nodes:
        address = str(target.control_address)
        with lab.listening(target.node, address, TCP_PORT):
            for source in plan.nodes:
                if source.node == target.node:
                    continue
                relayed = next((r for r in source.routes if r.target == target.node), None)
                hops = len(relayed.path) - 1 if relayed else 1
                reached = lab.probe(
                    source.node, "connect", address, str(TCP_PORT), "--ttl", str(hops)
                )
                assert reached["ok"], (source.node, target.node, reached)
                if relayed:  # the route's src: the peer routes its reply to that address
                    assert reached["local"] == str(source.control_address)
                else:  # a shared subnet: the kernel picks the address on it
                    assert reached["local"] in {str(i.address.ip) for i in source.interfaces}
                if hops > 1:
                    # one hop short dies at the relay: the path really has `hops` hops
                    short = lab.probe(
                        source.node,
                        "connect",
                        address,
                        str(TCP_PORT),
                        "--ttl",
                        str(hops - 1),
                        "--timeout",
                        "0.5",
                    )
                    assert not short["ok"], (source.node, target.node, short)


@pytest.mark.parametrize("applied", ["ring4"], indirect=True)
def test_ring4_opposite_ranks_are_two_hops_through_a_forwarding_relay(applied: tuple) -> None:  # type: ignore[type-arg]
    lab, plan, _, _ = applied
    assert plan.topology == "ring-4"
    relayed = [r for r in plan.routes if r.relays]
    assert {(r.node, r.target) for r in relayed} == {("a", "c"), ("c", "a"), ("b", "d"), ("d", "b")}
    assert all(len(r.path) == 3 for r in relayed)
    for relay in {r.relays[0] for r in relayed}:
        assert lab.run(relay, "sysctl", "-n", "net.ipv4.ip_forward").strip() == "1"
    a_to_c = next(r for r in plan.node("a").routes if r.target == "c")
    kernel_route = lab.run("a", "ip", "route", "get", str(a_to_c.destination))
    assert f"via {a_to_c.via} dev {a_to_c.dev} src {a_to_c.src}" in kernel_route


def test_restore_leaves_nothing_behind(applied: tuple) -> None:  # type: ignore[type-arg]
    lab, plan, cluster_file, before = applied
    assert lab.snapshot(plan.rank_order[0]) != before[plan.rank_order[0]]
    output = _cli("fabric", "apply", str(cluster_file), "--restore")
    assert "restored" in output
    for name in plan.rank_order:
        assert lab.snapshot(name) == before[name], name
    assert not journal_path(plan.cluster).exists()


def test_ring4_graph_files_are_on_every_node_and_restore_undoes_them(tmp_path: Path) -> None:
    """Through the CLI and the netns executor: a holds another graph before, b-d none; after
    --apply each node reads its own plan's XML at the path NCCL_GRAPH_FILE names, and
    --restore writes a's bytes back and removes the rest."""
    names, cables = TOPOLOGIES["ring4"]
    node_dir = tmp_path / "node"
    other = b"<graphs>another ring</graphs>\r\n\x00\xff"
    with netns_lab(names, _wiring(cables)) as lab:
        cluster_file = tmp_path / "cluster.toml"
        extra = f'[fabric]\nnode_dir = "{node_dir}"\n'
        cluster_file.write_text(cluster_toml(f"{lab.prefix}ring4", names, cables, extra))
        plan = plan_fabric(load_cluster(cluster_file))
        graphs = {node.node: next(iter(node.node_files.items())) for node in plan.nodes}
        env = {v.name: v.value for v in plan.node("a").env}
        assert graphs["a"][0] == env["NCCL_GRAPH_FILE"] == f"{node_dir}/nccl-graph-a.xml"
        node_dir.mkdir()
        Path(graphs["a"][0]).write_bytes(other)
        args = ("fabric", "apply", str(cluster_file))
        try:
            _cli(*args, "--apply", "--executor", "netns", "--netns-prefix", lab.prefix)
            for node, (path, xml) in graphs.items():
                assert lab.run(node, "cat", path) == xml, node  # read from inside the node
            restored = _cli(*args, "--restore")
        finally:
            if journal_path(plan.cluster).exists():
                CliRunner().invoke(app, [*args, "--restore"])
        said = restored.replace("\n", "")  # the terminal wraps long lines
        assert f"a: write back {graphs['a'][0]} (" in said
        assert f"b: rm -f {graphs['b'][0]}" in said
        assert "<graphs" not in said
        assert Path(graphs["a"][0]).read_bytes() == other
        for node in ("b", "c", "d"):
            assert lab.runners[node].run(["test", "-e", graphs[node][0]]).returncode == 1
        assert sorted(node_dir.iterdir()) == [Path(graphs["a"][0])]


def _fail_inside_a_lab(seen: list[str]) -> None:
    with netns_lab(["x", "y"], [("x", "p0", "y", "p1")]) as lab:
        seen.append(lab.namespace("x"))
        raise RuntimeError("boom")


def test_namespaces_are_removed_when_the_block_fails() -> None:
    seen: list[str] = []
    with pytest.raises(RuntimeError, match="boom"):
        _fail_inside_a_lab(seen)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    assert seen
    assert seen[0] not in listed.stdout
