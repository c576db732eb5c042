"""Which local interface faces which node: found from the wires, not from labels.

Every listed interface gets a temporary IPv6 link-local address (`fe80::5352:N:I`, no duplicate
address detection, so usable at once) and is brought up; each node then sends one ICMPv6 echo
to all-nodes (ff02::1) out of every interface. Only the node at the other end of that wire
hears it, and it answers from its own link-local address on the receiving interface, which
names the node and the interface. Everything discovery added is removed again, also on failure.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from sparkrig import defaults
from sparkrig.config.cluster import Cable, Cluster, PortRef
from sparkrig.errors import FabricError
from sparkrig.fabric.runner import CommandResult, CommandRunner

TEMPORARY_PREFIX = "fe80::5352"  # "SR"


def temporary_address(node_index: int, interface_index: int) -> str:
    return f"{TEMPORARY_PREFIX}:{node_index + 1:x}:{interface_index + 1:x}"


def discover_cables(
    cluster: Cluster,
    runners: Mapping[str, CommandRunner],
    probes: Mapping[str, Sequence[str]],
    reply_wait_s: float = defaults.DISCOVER_REPLY_WAIT_S,
    carrier_wait_s: float = defaults.DISCOVER_CARRIER_WAIT_S,
) -> list[Cable]:
    """`probes`: per node, the argv prefix that runs `sparkrig.fabric.probe` there (each node's
    own python: this one on a namespace of this machine, `python3` over ssh)."""
    interfaces = {
        node.name: [f.netdev for p in node.ports for f in p.functions] for node in cluster.nodes
    }
    undo: list[tuple[str, list[str]]] = []
    try:
        for node_index, node in enumerate(cluster.nodes):
            runner = runners[node.name]
            for interface_index, netdev in enumerate(interfaces[node.name]):
                _prepare(
                    node.name,
                    runner,
                    netdev,
                    node_index=node_index,
                    interface_index=interface_index,
                    undo=undo,
                )
        _wait_for_carrier(runners, interfaces, carrier_wait_s)
        owner = _link_local_owners(runners)
        heard: dict[tuple[str, str], set[tuple[str, str]]] = {}
        # every node's probe at once: each hears the others' kernels answer, not their probes
        with ThreadPoolExecutor(max_workers=len(cluster.nodes)) as pool:
            answers = pool.map(
                lambda node: _echo(node.name, runners[node.name], probes, interfaces, reply_wait_s),
                cluster.nodes,
            )
            for node, answered in zip(cluster.nodes, answers, strict=True):
                for netdev, sources in json.loads(answered.stdout)["heard"].items():
                    peers = {owner[s] for s in sources if s in owner and owner[s][0] != node.name}
                    heard[(node.name, netdev)] = peers
    finally:
        for node_name, argv in reversed(undo):
            runners[node_name].run(argv)
    return cables_from_links(cluster, heard)


def _echo(
    node: str,
    runner: CommandRunner,
    probes: Mapping[str, Sequence[str]],
    interfaces: dict[str, list[str]],
    reply_wait_s: float,
) -> CommandResult:
    answered = runner.run(
        [*probes[node], "echo6", *interfaces[node], "--wait", str(reply_wait_s)],
        timeout=reply_wait_s + defaults.FABRIC_COMMAND_TIMEOUT_S,
    )
    if not answered.ok:
        raise FabricError(
            f"node {node}: the echo probe failed: {answered.error_line} — check "
            "that sparkrig is installed there and runs as root"
        )
    return answered


def _prepare(
    node: str,
    runner: CommandRunner,
    netdev: str,
    *,
    node_index: int,
    interface_index: int,
    undo: list[tuple[str, list[str]]],
) -> None:
    shown = runner.run(["ip", "-j", "link", "show", "dev", netdev])
    if not shown.ok:
        raise FabricError(
            f"node {node} ({runner.description}) has no interface {netdev}: "
            f"{shown.error_line} — fix that port's netdev in the cluster file"
        )
    if "UP" not in json.loads(shown.stdout)[0].get("flags", []):
        _must(node, runner, ["ip", "link", "set", "dev", netdev, "up"])
        undo.append((node, ["ip", "link", "set", "dev", netdev, "down"]))
    address = f"{temporary_address(node_index, interface_index)}/64"
    added = runner.run(["ip", "-6", "address", "add", address, "dev", netdev, "nodad"])
    if added.ok:
        undo.append((node, ["ip", "-6", "address", "del", address, "dev", netdev]))
    elif "File exists" not in added.stderr:
        raise FabricError(
            f"node {node}: cannot add a link-local address to {netdev}: {added.error_line} — "
            f"enable IPv6 on it (sysctl net.ipv6.conf.{netdev}.disable_ipv6=0)"
        )


def _must(node: str, runner: CommandRunner, argv: list[str]) -> None:
    result = runner.run(argv)
    if not result.ok:
        raise FabricError(f"node {node}: `{' '.join(argv)}` failed: {result.error_line} — fix it")


def _wait_for_carrier(
    runners: Mapping[str, CommandRunner], interfaces: dict[str, list[str]], wait_s: float
) -> None:
    """Until every listed interface has carrier, or the wait ends (an uncabled port never
    gets one, and is simply not reported)."""
    deadline = time.monotonic() + wait_s
    while True:
        waiting = False
        for node, runner in runners.items():
            links = json.loads(runner.run(["ip", "-j", "link", "show"]).stdout or "[]")
            carrier = {link["ifname"] for link in links if "LOWER_UP" in link.get("flags", [])}
            waiting = waiting or any(netdev not in carrier for netdev in interfaces[node])
        if not waiting or time.monotonic() >= deadline:
            return
        time.sleep(0.2)


def _link_local_owners(runners: Mapping[str, CommandRunner]) -> dict[str, tuple[str, str]]:
    owner: dict[str, tuple[str, str]] = {}
    for node, runner in runners.items():
        shown = runner.run(["ip", "-j", "-6", "address", "show", "scope", "link"])
        for link in json.loads(shown.stdout or "[]"):
            for address in link.get("addr_info", []):
                owner[address["local"]] = (node, link["ifname"])
    return owner


def cables_from_links(
    cluster: Cluster, heard: dict[tuple[str, str], set[tuple[str, str]]]
) -> list[Cable]:
    """Pure: (node, netdev) -> the (node, netdev) ends that answered on it, to cables between
    ports. Both functions of a port must face the same port of the same node."""
    port_of: dict[tuple[str, str], str] = {
        (node.name, function.netdev): port.name
        for node in cluster.nodes
        for port in node.ports
        for function in port.functions
    }
    facing: dict[PortRef, set[PortRef]] = {}
    for (node, netdev), peers in heard.items():
        mine = PortRef(node=node, port=port_of[(node, netdev)])
        facing.setdefault(mine, set()).update(
            PortRef(node=n, port=port_of[(n, d)]) for n, d in peers if (n, d) in port_of
        )
    order = {node.name: i for i, node in enumerate(cluster.nodes)}
    cables: list[Cable] = []
    seen: set[frozenset[str]] = set()
    for mine in sorted(facing, key=lambda ref: (order[ref.node], ref.port)):
        facing_ports = facing[mine]
        if len(facing_ports) > 1:
            listed = ", ".join(sorted(str(p) for p in facing_ports))
            raise FabricError(
                f"port {mine} faces {listed} — one port takes one cable: check that the port's "
                "functions in the cluster file belong to one cage, or that no switch is in between"
            )
        if not facing_ports:
            continue
        (theirs,) = facing_ports
        if mine not in facing.get(theirs, set()):
            raise FabricError(
                f"{mine} hears {theirs} but not the other way round — check both ends of that "
                "cable and rerun discover"
            )
        key = frozenset((str(mine), str(theirs)))
        if key not in seen:
            seen.add(key)
            cables.append(Cable(a=mine, b=theirs))
    return cables


_CABLES_LINE = re.compile(r"^cables\s*=\s*\[.*?\]\s*$\n?", re.MULTILINE | re.DOTALL)


def cables_toml(cables: list[Cable]) -> str:
    lines = "".join(f'  "{cable}",\n' for cable in cables)
    return f"cables = [\n{lines}]\n"


def with_cables(text: str, cables: list[Cable]) -> str:
    """The cluster file text with its top-level `cables = [...]` replaced (or added before the
    first table)."""
    block = cables_toml(cables)
    if _CABLES_LINE.search(text):
        return _CABLES_LINE.sub(lambda _: block, text, count=1)
    first_table = re.search(r"^\[", text, re.MULTILINE)
    at = first_table.start() if first_table else len(text)
    return text[:at] + block + "\n" + text[at:]
