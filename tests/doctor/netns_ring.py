"""A 4-ring of network namespaces with the fabric plan applied, for doctor's tests and for
recording its fixtures (`python -m tests.doctor.netns_ring DIR [CASE ...]` saves the clean ring
and each fault, or only the cases named, one folder per case)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.config import load_cluster
from sparkrig.fabric.apply import journal_path
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.plan_model import FabricPlan
from tests.fabric.netns_lab import NetnsLab, _ip, cluster_toml, netns_lab

NAMES = ["a", "b", "c", "d"]
CABLES = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> d.p1", "d.p0 <-> a.p1"]
WIRING = [
    ("a", "p0", "b", "p1"),
    ("b", "p0", "c", "p1"),
    ("c", "p0", "d", "p1"),
    ("d", "p0", "a", "p1"),
]


# The recorded cases' `fabric.node_dir`: the namespaces share this machine's disk, so the ring's
# graph files go here rather than to /etc/sparkrig (tests use a folder of their tmp_path).
FIXTURE_NODE_DIR = "/tmp/sparkrig-ring4-fixture"


def ring_toml(name: str = "ring4", node_dir: str = FIXTURE_NODE_DIR) -> str:
    return cluster_toml(name, NAMES, CABLES, f'[fabric]\nnode_dir = "{node_dir}"\n')


def _apply(cluster_file: Path, prefix: str) -> None:
    result = CliRunner().invoke(
        app,
        [
            "fabric",
            "apply",
            str(cluster_file),
            "--apply",
            "--executor",
            "netns",
            "--netns-prefix",
            prefix,
        ],
    )
    assert result.exit_code == 0, result.output


@contextmanager
def applied_ring(
    tmp: Path, node_dir: str | None = None
) -> Iterator[tuple[NetnsLab, FabricPlan, Path]]:
    """The ring with `fabric apply` done (its graph files in `node_dir`, default a folder of
    `tmp`); restored and removed afterwards, even on failure."""
    with netns_lab(NAMES, WIRING) as lab:
        cluster_file = tmp / "cluster.toml"
        cluster_file.write_text(ring_toml(f"{lab.prefix}ring4", node_dir or str(tmp / "node")))
        _apply(cluster_file, lab.prefix)
        plan = plan_fabric(load_cluster(cluster_file))
        try:
            yield lab, plan, cluster_file
        finally:
            if journal_path(plan.cluster).exists():
                CliRunner().invoke(app, ["fabric", "apply", str(cluster_file), "--restore"])


def _relay_route(plan: FabricPlan) -> tuple[str, str]:
    """The first route that crosses a relay: (node it is on, destination)."""
    route = next(r for r in plan.routes if r.relays)
    return route.node, f"{route.destination}/32"


def break_graph_files(lab: NetnsLab, plan: FabricPlan) -> None:
    """c's graph file holding a's graph (a numbers its net devices the other way round: b, c
    and d hold the same XML), then a's removed."""
    ((path, own),) = plan.node("c").node_files.items()
    other = plan.node("a").nccl_graph_xml or ""
    assert other != own
    lab.run("c", "sh", "-c", 'printf %s "$1" > "$2"', "sh", other, path)
    lab.run("a", "rm", next(iter(plan.node("a").node_files)))


# Each fault: (name, what it breaks). The doctor tests assert which check names it.
FAULTS: dict[str, Callable[[NetnsLab, FabricPlan], object]] = {
    # b's cable to c at the kernel's default MTU
    "mtu": lambda lab, plan: lab.run("b", "ip", "link", "set", "dev", "p0a", "mtu", "1500"),
    "route": lambda lab, plan: lab.run(
        _relay_route(plan)[0], "ip", "route", "del", _relay_route(plan)[1]
    ),
    "forwarding": lambda lab, plan: lab.run(
        next(n.node for n in plan.nodes if n.forwarding), "sysctl", "-w", "net.ipv4.ip_forward=0"
    ),
    "address": lambda lab, plan: lab.run(
        "c",
        "ip",
        "address",
        "del",
        str(plan.node("c").interfaces[0].address),
        "dev",
        plan.node("c").interfaces[0].netdev,
    ),
    "link-down": lambda lab, plan: lab.run("d", "ip", "link", "set", "dev", "p1b", "down"),
    "graph-file": break_graph_files,
}


KEPT = (
    "ip_addr",
    "ip_route",
    "ip_link",
    "net_sysfs",
    "ib_sysfs",
    "clock",
    "uname",
    "pagesize",
    "node_files",
)


def save_case(lab: NetnsLab, cluster_file: Path, out: Path, toml: str | None = None) -> None:
    subprocess.run(
        [
            str(Path(sys.executable).parent / "sparkrig"),
            "doctor",
            str(cluster_file),
            "--executor",
            "netns",
            "--netns-prefix",
            lab.prefix,
            "--save",
            str(out),
            "--json",
        ],
        check=False,
        capture_output=True,
    )
    for node in out.iterdir():
        for path in node.glob("*.out"):
            if path.name.removesuffix(".out") not in KEPT:
                path.unlink()
        meta = json.loads((node / "meta.json").read_text())
        meta["probes"] = {k: v for k, v in meta["probes"].items() if k in KEPT}
        (node / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    (out / "cluster.toml").write_text(toml or ring_toml())


def main(destination: Path, cases: list[str] | None = None) -> None:
    """Every case, or only the named ones (`clean`, a fault's name, `pair`)."""
    for fault in [None, *FAULTS]:
        if cases and (fault or "clean") not in cases:
            continue
        with (
            tempfile.TemporaryDirectory() as tmp,
            applied_ring(Path(tmp), FIXTURE_NODE_DIR) as ring,
        ):
            lab, plan, cluster_file = ring
            if fault is not None:
                FAULTS[fault](lab, plan)
            save_case(lab, cluster_file, destination / f"ring4-{fault or 'clean'}")
    if cases and "pair" not in cases:
        return
    with tempfile.TemporaryDirectory() as tmp, spark_pair(Path(tmp)) as (lab, cluster_file):
        save_case(lab, cluster_file, destination / "pair-captured", PAIR_TOML)


PAIR_TOML = """name = "pair"
cables = ["spark1.p0 <-> spark2.p0"]

[[nodes]]
name = "spark1"

[[nodes]]
name = "spark2"
"""


@contextmanager
def spark_pair(tmp: Path) -> Iterator[tuple[NetnsLab, Path]]:
    """Two namespaces joined by veths with a DGX Spark's interface names (the default ports),
    the plan applied."""
    with netns_lab(["spark1", "spark2"], []) as lab:
        for netdev in ("enp1s0f0np0", "enP2p1s0f0np0"):
            _ip(
                "link",
                "add",
                netdev,
                "netns",
                lab.namespace("spark1"),
                "type",
                "veth",
                "peer",
                "name",
                netdev,
                "netns",
                lab.namespace("spark2"),
            )
        cluster_file = tmp / "cluster.toml"
        cluster_file.write_text(PAIR_TOML.replace('"pair"', f'"{lab.prefix}pair"'))
        _apply(cluster_file, lab.prefix)
        try:
            yield lab, cluster_file
        finally:
            CliRunner().invoke(app, ["fabric", "apply", str(cluster_file), "--restore"])


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
