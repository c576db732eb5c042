"""The node against its fabric plan: interfaces, MTU, addresses, routes, forwarding, the NCCL
graph file, link speed. Fixes are the plan's own `ip` / `sysctl` steps, so what doctor prints is
what `fabric apply` would run."""

from __future__ import annotations

import hashlib
import ipaddress
import re
import shlex
from typing import Any

from sparkrig import defaults
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import file_digests, ip_json, sysfs_values
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.fabric.plan_model import InterfacePlan, NodePlan
from sparkrig.outside_numbers import int_or_none, parse_int

NOTES = "docs/field-notes.md"
APPLY = "or `sparkrig fabric apply CLUSTER.toml --apply` for the whole plan"


def _links(capture: NodeCapture) -> dict[str, dict[str, Any]]:
    return {str(link.get("ifname")): link for link in ip_json(capture.text("ip_link") or "")}


def _planned(context: NodeContext) -> tuple[NodePlan, list[InterfacePlan]]:
    plan = context.node_plan
    assert plan is not None  # needs_plan
    return plan, plan.interfaces


@node_check(
    "interface-missing",
    summary="every interface the cluster file names exists on the node",
    why="the plan addresses and routes through it; NCCL_IB_HCA and NCCL_SOCKET_IFNAME name it",
    source="docs/fabric.md (Cluster file)",
    needs=("ip_link",),
    needs_plan=True,
)
def interface_missing(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    links = _links(capture)
    _, interfaces = _planned(context)
    present = ", ".join(sorted(n for n in links if n != "lo")) or "none"
    return [
        Hit(
            "error",
            f"{i.netdev} (port {i.port}, to {i.peer}) is not on the node; it has {present}",
            f"correct the node's [[nodes.ports]] functions in the cluster file, or run "
            f"`sparkrig fabric discover` to see which netdev faces {i.peer}",
        )
        for i in interfaces
        if i.netdev not in links
    ]


@node_check(
    "link-down",
    summary="every planned fabric interface is up with carrier",
    why="a cable that is out, or a port never set up, drops the ranks behind it",
    source=f"{NOTES} (hot-cabled links)",
    needs=("ip_link",),
    needs_plan=True,
)
def link_down(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    links = _links(capture)
    hits = []
    for interface in _planned(context)[1]:
        link = links.get(interface.netdev)
        if link is None:
            continue
        flags = link.get("flags", [])
        if "UP" not in flags or "LOWER_UP" not in flags:
            hits.append(
                Hit(
                    "error",
                    f"{interface.netdev} is {link.get('operstate', '?')} "
                    f"(flags {','.join(flags)}), cable to {interface.peer}",
                    f"`ip link set dev {interface.netdev} up`, then check the cable to "
                    f"{interface.peer}; {APPLY}",
                )
            )
    return hits


@node_check(
    "mtu-mismatch",
    summary="every fabric interface has the plan's MTU",
    why="a smaller MTU on one end drops full-size frames and caps RoCE's path MTU; the "
    "plan runs jumbo frames (9000) end to end, as the one report that states an MTU did",
    source=f"{NOTES} (jumbo MTU)",
    needs=("ip_link",),
    needs_plan=True,
)
def mtu_mismatch(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    links = _links(capture)
    hits = []
    for interface in _planned(context)[1]:
        link = links.get(interface.netdev)
        if link is not None and link.get("mtu") != interface.mtu:
            hits.append(
                Hit(
                    "error",
                    f"{interface.netdev} mtu {link.get('mtu')}, plan {interface.mtu}",
                    f"`ip link set dev {interface.netdev} mtu {interface.mtu}` on this node and "
                    f"its peer {interface.peer}; {APPLY}",
                )
            )
    return hits


@node_check(
    "address-missing",
    summary="every planned address is on its interface",
    why="NCCL picks the device that shares the peer's cable subnet; without the address the "
    "RoCE v2 GID for it does not exist either",
    source=f"{NOTES} (subnet per cable)",
    needs=("ip_addr",),
    needs_plan=True,
)
def address_missing(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    held: dict[str, set[str]] = {}
    for link in ip_json(capture.text("ip_addr") or ""):
        held[str(link.get("ifname"))] = {
            f"{a.get('local')}/{a.get('prefixlen')}"
            for a in link.get("addr_info", [])
            if a.get("family") == "inet"
        }
    hits = []
    for interface in _planned(context)[1]:
        if interface.netdev in held and str(interface.address) not in held[interface.netdev]:
            now = ", ".join(sorted(held[interface.netdev])) or "no IPv4 address"
            hits.append(
                Hit(
                    "error",
                    f"{interface.netdev} holds {now}, plan {interface.address}",
                    f"`ip address add {interface.address} dev {interface.netdev}`; {APPLY}",
                )
            )
    return hits


@node_check(
    "route-missing",
    summary="every relay route of the plan is installed as planned",
    why="TCP control (NCCL bootstrap, Gloo, vLLM) to a node with no shared cable goes through "
    "a relay; without the route the opposite rank is unreachable and startup hangs",
    source=f"{NOTES} (relayed TCP control)",
    needs=("ip_route",),
    needs_plan=True,
)
def route_missing(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    routes = ip_json(capture.text("ip_route") or "")
    by_destination = {str(r.get("dst")).removesuffix("/32"): r for r in routes}
    hits = []
    for route in _planned(context)[0].routes:
        wanted = [
            "ip",
            "route",
            "replace",
            f"{route.destination}/32",
            "via",
            str(route.via),
            "dev",
            route.dev,
            "src",
            str(route.src),
        ]
        found = by_destination.get(str(route.destination))
        if found is None:
            seen = (
                f"no route to {route.target} ({route.destination}); "
                f"plan: via {route.via} dev {route.dev}"
            )
        elif found.get("gateway") != str(route.via) or found.get("dev") != route.dev:
            seen = (
                f"route to {route.target} ({route.destination}) goes via "
                f"{found.get('gateway', 'direct')} dev {found.get('dev')}; plan: via "
                f"{route.via} dev {route.dev}"
            )
        else:
            continue
        hits.append(Hit("error", seen, f"`{shlex.join(wanted)}`; {APPLY}"))
    return hits


@node_check(
    "forwarding-off",
    summary="relay nodes forward IPv4",
    why="the relay passes TCP control between the ranks on either side; with ip_forward 0 it "
    "drops it and the opposite ranks never meet",
    source=f"{NOTES} (relayed TCP control)",
    needs=("net_sysfs",),
    needs_plan=True,
)
def forwarding_off(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    plan, _ = _planned(context)
    if not plan.forwarding:
        return []
    value = sysfs_values(capture.text("net_sysfs") or "").get("/proc/sys/net/ipv4/ip_forward")
    if value == "1":
        return []
    relayed = sorted(
        {
            r.target
            for n in (context.plan.nodes if context.plan else [])
            for r in n.routes
            if context.node in r.relays
        }
    )
    return [
        Hit(
            "error",
            f"net.ipv4.ip_forward = {value}; this node relays for {', '.join(relayed)}",
            f"`sysctl -w net.ipv4.ip_forward=1`; {APPLY}",
        )
    ]


def _has_node_files(context: NodeContext) -> bool:
    return context.node_plan is not None and bool(context.node_plan.node_files)


_FILE_FIX = (
    "run `sparkrig fabric apply CLUSTER --apply` (`--restore` first when an earlier apply is "
    "journaled); it writes the plan's file there"
)


@node_check(
    "nccl-graph-file",
    summary="the NCCL graph XML that NCCL_GRAPH_FILE names is on the node with the plan's content",
    why="every rank opens it when NCCL starts: missing, NCCL's init fails (`Could not open XML "
    "graph file`, a system error in NCCL's src/graph/xml.cc); another plan's graph sends "
    "channels out of ports that do not face the neighbour",
    source=f"{NOTES} (nccl-ring-graph)",
    needs=("node_files",),
    needs_plan=True,
    applies=_has_node_files,
)
def nccl_graph_file(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    found = file_digests(capture.text("node_files") or "")
    hits = []
    for path, text in _planned(context)[0].node_files.items():
        wanted = hashlib.sha256(text.encode()).hexdigest()
        held = found.get(path, "missing")
        if held == wanted:
            continue
        fix = _FILE_FIX
        if held == "missing":
            seen = f"{path} is missing"
        elif held == "folder":
            seen = f"{path} is a folder (docker makes one for a missing `-v` source)"
            fix = f"remove it (`rmdir {path}`), then {_FILE_FIX}"
        elif held == "unreadable":
            seen = f"{path} cannot be read"
            fix = f"`chmod a+r {path}`, or {_FILE_FIX}"
        else:
            seen = f"{path} differs from the plan's (sha256 {held[:12]}…, plan {wanted[:12]}…)"
        hits.append(Hit("error", f"{seen}; NCCL_GRAPH_FILE names it", fix))
    return hits


def _fabric_netdevs(context: NodeContext) -> list[str]:
    if context.node_plan is not None:
        return [i.netdev for i in context.node_plan.interfaces]
    return [netdev for functions in defaults.DGX_SPARK_PORTS.values() for netdev, _ in functions]


def _ethtool_speed(text: str | None) -> int | None:
    """`Speed: 100000Mb/s` from `ethtool NETDEV`; None for `Unknown!` or no output."""
    match = re.search(r"^\s*Speed:\s*([0-9]+)Mb/s", text or "", flags=re.MULTILINE)
    return parse_int(match.group(1), source="ethtool", field="Speed") if match else None


@node_check(
    "link-speed",
    summary="fabric links run at ConnectX-7 speed",
    why="a QSFP cable seated while the node was booted left the link at about 13 Gb/s, whatever "
    "the message size, until a reboot with the cable in",
    source=f"{NOTES} (hot-cabled links)",
    needs=(),
)
def link_speed(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    """ethtool's speed where it ran, else the same kernel value from sysfs."""
    values = sysfs_values(capture.text("net_sysfs") or "")
    slow = []
    for netdev in _fabric_netdevs(context):
        speed = _ethtool_speed(capture.text(f"ethtool:{netdev}"))
        if speed is None:
            text = values.get(f"/sys/class/net/{netdev}/speed", "")
            speed = int_or_none(text, minimum=0)  # down links: EINVAL or -1
        if speed is not None and 0 < speed < defaults.DOCTOR_FABRIC_MIN_SPEED_MBPS:
            slow.append(f"{netdev} {speed / 1000:g} Gb/s")
    if not slow:
        return []
    return [
        Hit(
            "warning",
            f"{', '.join(slow)} (below {defaults.DOCTOR_FABRIC_MIN_SPEED_MBPS // 1000} Gb/s)",
            "shut the node down, seat the QSFP cables, boot with them in (`systemctl poweroff`); "
            "then measure the link again (`ib_write_bw` of perftest between the two ends)",
        )
    ]


_SLOT_POWER = (
    "insufficient power on the PCIe slot",
    "PCIe slot power capability was not advertised",
)


@node_check(
    "pcie-slot-power",
    summary="the NIC's PCIe slot power message, noted beside the link speed",
    why="the ConnectX-7 throttled its link to about 13 Gb/s when it misread slot power after "
    "hot cabling; on a Spark the same line also appears on every boot at full speed, so it is "
    "a note and link-speed judges",
    source=f"{NOTES} (hot-cabled links)",
    needs=("dmesg",),
)
def pcie_slot_power(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    lines = [
        line.strip()
        for line in (capture.text("dmesg") or "").splitlines()
        if any(marker in line for marker in _SLOT_POWER)
    ]
    if not lines:
        return []
    more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
    return [
        Hit(
            "info",
            f"kernel log: {lines[-1]!r}{more}",
            "if the link measures about 13 Gb/s (`ib_write_bw`): shut the node down, seat the QSFP "
            "cables, boot with them in (`systemctl poweroff`)",
        )
    ]


def interface_address(capture: NodeCapture, netdev: str) -> ipaddress.IPv4Interface | None:
    """The first IPv4 address on `netdev` (for the GID check)."""
    for link in ip_json(capture.text("ip_addr") or ""):
        if link.get("ifname") == netdev:
            for a in link.get("addr_info", []):
                if a.get("family") == "inet":
                    return ipaddress.IPv4Interface(f"{a['local']}/{a['prefixlen']}")
    return None
