"""`sparkrig doctor` through the netns executor on a real 4-ring of network namespaces with the
fabric plan applied: quiet (no error) on the applied ring, graph files included; then one fault
at a time, each named with its node and its fix, and repaired before the next; then a node whose
namespace is gone is one line while the other nodes are still checked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sparkrig.cli import app
from tests.doctor.netns_ring import applied_ring
from tests.fabric.netns_lab import why_netns_unavailable

UNAVAILABLE = why_netns_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")


def _doctor(cluster_file: Path, prefix: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        app,
        ["doctor", str(cluster_file), "--executor", "netns", "--netns-prefix", prefix, "--json"],
    )
    return result.exit_code, json.loads(result.stdout)


def _errors(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (f["check"], f["node"], f["fix"]) for f in report["findings"] if f["severity"] == "error"
    ]


def test_doctor_names_each_fault_on_the_ring_and_its_fix(tmp_path: Path) -> None:
    with applied_ring(tmp_path) as (lab, plan, cluster_file):
        code, report = _doctor(cluster_file, lab.prefix)
        assert (code, _errors(report)) == (0, [])
        assert report["nodes"] == ["a", "b", "c", "d"]
        # the lab's veths are 10 Gb/s and no node has an RDMA device: reported, not errors
        warned = {(f["check"], f["node"]) for f in report["findings"]}
        assert ("link-speed", "a") in warned
        assert ("rdma-devices", "a") in warned

        relay = next(n.node for n in plan.nodes if n.forwarding)
        route = next(r for r in plan.routes if r.relays)
        route_fix = f"ip route replace {route.destination}/32 via {route.via}"
        ((graph, xml),) = plan.node("a").node_files.items()
        write = ("sh", "-c", 'printf %s "$1" > "$2"', "sh")
        faults = [
            (
                ("b", "ip", "link", "set", "dev", "p0a", "mtu", "1500"),
                ("mtu-mismatch", "b", "ip link set dev p0a mtu 9000"),
                ("b", "ip", "link", "set", "dev", "p0a", "mtu", "9000"),
            ),
            (
                (route.node, "ip", "route", "del", f"{route.destination}/32"),
                ("route-missing", route.node, route_fix),
                (
                    route.node,
                    "ip",
                    "route",
                    "add",
                    f"{route.destination}/32",
                    "via",
                    str(route.via),
                    "dev",
                    route.dev,
                    "src",
                    str(route.src),
                ),
            ),
            (
                (relay, "sysctl", "-w", "net.ipv4.ip_forward=0"),
                ("forwarding-off", relay, "sysctl -w net.ipv4.ip_forward=1"),
                (relay, "sysctl", "-w", "net.ipv4.ip_forward=1"),
            ),
            (
                ("a", *write, xml.replace("<graphs", "<!-- edited --><graphs"), graph),
                ("nccl-graph-file", "a", "run `sparkrig fabric apply CLUSTER --apply`"),
                ("a", *write, xml, graph),
            ),
            (
                ("a", "rm", graph),
                ("nccl-graph-file", "a", "run `sparkrig fabric apply CLUSTER --apply`"),
                ("a", *write, xml, graph),
            ),
        ]
        for breaking, (check, node, fix), repair in faults:
            lab.run(*breaking)
            code, report = _doctor(cluster_file, lab.prefix)
            errors = _errors(report)
            assert code == 1
            assert [(c, n) for c, n, _ in errors] == [(check, node)], errors
            assert fix in errors[0][2]
            lab.run(*repair)
        assert _doctor(cluster_file, lab.prefix)[0] == 0

        # a node that cannot be reached: one line; the other three are still checked
        subprocess.run(["ip", "netns", "del", lab.namespace("d")], check=True)
        lab.run("b", "ip", "link", "set", "dev", "p0a", "mtu", "1500")
        code, report = _doctor(cluster_file, lab.prefix)
        errors = _errors(report)
        assert code == 1
        named = [(c, n) for c, n, _ in errors]
        assert named[0] == ("node-reachable", "d")
        assert ("mtu-mismatch", "b") in named
        # d's veths died with its namespace: its neighbours a and c lost those interfaces
        assert {n for c, n in named[1:] if c != "mtu-mismatch"} == {"a", "c"}
        assert ("interface-missing", "a") in named
        unreachable = next(f for f in report["findings"] if f["check"] == "node-reachable")
        assert "does not exist" in unreachable["seen"]
