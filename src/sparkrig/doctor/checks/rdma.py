"""RDMA devices from sysfs and ibv_devinfo: port state, RoCE GID index, MTU, error counters,
and the NCCL environment against what the node really has."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from sparkrig import defaults
from sparkrig.doctor.checks.network import interface_address
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import Unreadable, ibv_ports, sysfs_values
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.errors import excerpt
from sparkrig.fabric.gid import GidEntry, GidTable, entry_name, resolve_gid_index
from sparkrig.outside_numbers import int_or_none, parse_int

NOTES = "docs/field-notes.md"
_PATH = re.compile(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/(.+)$")


@dataclass
class RdmaPort:
    device: str
    port: int
    state: str = ""
    gids: dict[int, str] = field(default_factory=dict)
    types: dict[int, str] = field(default_factory=dict)
    ndevs: dict[int, str] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    """GID entries whose name is not an index, named for the gid-index check"""

    def gid_table(self) -> GidTable:
        table, unreadable = [], list(self.unreadable)
        for index, text in sorted(self.gids.items()):
            try:
                gid = ipaddress.IPv6Address(text)
            except ValueError:
                unreadable.append(f"gids/{index} (holds {excerpt(text, 40)!r}, not a GID)")
                continue
            if gid != ipaddress.IPv6Address(0):
                table.append(GidEntry(index, gid, self.types.get(index, ""), self.ndevs.get(index)))
        return GidTable(tuple(table), tuple(unreadable))


def rdma_ports(text: str) -> dict[tuple[str, int], RdmaPort]:
    ports: dict[tuple[str, int], RdmaPort] = {}
    for path, value in sysfs_values(text).items():
        match = _PATH.match(path)
        if not match:
            raise Unreadable(f"{path} is not under /sys/class/infiniband/*/ports/*")
        port = parse_int(match.group(2), source=path, field="port", minimum=0)
        device, rest = match.group(1), match.group(3)
        entry = ports.setdefault((device, port), RdmaPort(device, port))
        kind, _, name = rest.rpartition("/")
        tables = {
            "gids": entry.gids,
            "gid_attrs/types": entry.types,
            "gid_attrs/ndevs": entry.ndevs,
        }
        if rest == "state":
            entry.state = value
        elif kind in tables and (index := int_or_none(name, minimum=0)) is not None:
            tables[kind][index] = value
        elif kind in tables:  # "²".isdigit() is True and int("²") raises: named, not dropped
            folder = kind.removeprefix("gid_attrs/")
            entry.unreadable.append(f"{entry_name(folder, name)} (its name is not a GID index)")
        elif (
            kind in ("counters", "hw_counters")
            and (count := int_or_none(value, minimum=0)) is not None
        ):
            entry.counters[name] = count
    return ports


def _devices(capture: NodeCapture) -> set[str]:
    return {device for device, _ in rdma_ports(capture.text("ib_sysfs") or "")}


@node_check(
    "rdma-devices",
    summary="every planned RDMA device exists",
    why="NCCL_IB_HCA names these devices; a missing one means NCCL falls back to TCP sockets or "
    "fails to start",
    source=f"{NOTES} (subnet per cable)",
    needs=("ib_sysfs",),
    needs_plan=True,
)
def rdma_devices(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    assert context.node_plan is not None
    wanted = sorted({i.rdma for i in context.node_plan.interfaces})
    have = _devices(capture)
    if not wanted:
        return []
    if not have:
        return [
            Hit(
                "warning",
                f"no RDMA device at all (/sys/class/infiniband is empty); the plan names "
                f"{', '.join(wanted)}",
                "`modprobe mlx5_ib` and `apt install rdma-core`; a node without RDMA carries NCCL "
                "over TCP only",
            )
        ]
    return [
        Hit(
            "error",
            f"RDMA device {device} is not on the node; it has {', '.join(sorted(have))}",
            "correct the node's [[nodes.ports]] rdma names (`sparkrig fabric gids` lists them)",
        )
        for device in wanted
        if device not in have
    ]


@node_check(
    "rdma-port-state",
    summary="every RDMA port is ACTIVE",
    why="an RDMA port that is not ACTIVE carries no RoCE traffic; NCCL times out in ibv_modify_qp",
    source=f"{NOTES} (RoCE GID index)",
    needs=("ib_sysfs",),
)
def rdma_port_state(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    planned = {i.rdma for i in context.node_plan.interfaces} if context.node_plan else None
    return [
        Hit(
            "error",
            f"{p.device} port {p.port} state {p.state!r}",
            f"check the cable and `ip link show` of the netdev behind {p.device}; "
            "`rdma link show` must say state ACTIVE",
        )
        for p in rdma_ports(capture.text("ib_sysfs") or "").values()
        if p.state and "ACTIVE" not in p.state and (planned is None or p.device in planned)
    ]


@node_check(
    "gid-index",
    summary="a RoCE v2 GID exists for each planned address; NCCL_IB_GID_INDEX, if "
    "pinned, points at it",
    why="the IPv4 RoCE v2 GID's index differs per node and device and moves after a reboot; a "
    "pinned NCCL_IB_GID_INDEX that is wrong sends RoCE on the link-local GID",
    source=f"{NOTES} (RoCE GID index)",
    needs=("ib_sysfs", "ip_addr"),
    needs_plan=True,
)
def gid_index(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    assert context.node_plan is not None
    ports = rdma_ports(capture.text("ib_sysfs") or "")
    pinned = context.env.get("NCCL_IB_GID_INDEX")
    hits = []
    for interface in context.node_plan.interfaces:
        port = ports.get((interface.rdma, 1))
        if port is None or interface_address(capture, interface.netdev) is None:
            continue  # rdma-devices / address-missing say so
        resolution = resolve_gid_index(
            interface.rdma, interface.address.ip, port.gid_table(), interface.netdev
        )
        if resolution.index is None:
            hits.append(
                Hit(
                    "error",
                    resolution.problem or "",
                    "`sparkrig fabric gids CLUSTER.toml`"
                    " shows each device's table; apply the fabric first",
                )
            )
        elif pinned is not None and pinned != str(resolution.index):
            hits.append(
                Hit(
                    "error",
                    f"NCCL_IB_GID_INDEX={pinned} but {interface.rdma} holds "
                    f"{interface.address.ip} as RoCE v2 at index {resolution.index}",
                    "remove NCCL_IB_GID_INDEX from [env] and keep NCCL_IB_ADDR_FAMILY=AF_INET "
                    "(the plan's env), so NCCL finds the index itself",
                )
            )
    return hits


def _counter_hits(capture: NodeCapture, names: tuple[str, ...], fix: str) -> list[Hit]:
    hits = []
    for p in rdma_ports(capture.text("ib_sysfs") or "").values():
        nonzero = {n: p.counters[n] for n in names if p.counters.get(n, 0) > 0}
        if nonzero:
            listed = ", ".join(f"{n} {v}" for n, v in nonzero.items())
            hits.append(
                Hit(
                    "warning",
                    f"{p.device} port {p.port}: {listed} since the counters were last reset",
                    fix,
                )
            )
    return hits


@node_check(
    "roce-retransmits",
    summary="RoCE retransmit and sequence-error counters are zero",
    why="rising roce_adp_retrans, packet_seq_err or out_of_sequence mean lost RoCE packets; "
    "every lost packet stalls a collective and every decode step behind it",
    source=f"{NOTES} (RoCE retransmits)",
    needs=("ib_sysfs",),
)
def roce_retransmits(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    return _counter_hits(
        capture,
        defaults.DOCTOR_ROCE_ERROR_COUNTERS,
        "read the counters again after a few minutes of decode "
        "(`grep . /sys/class/infiniband/*/ports/1/hw_counters/{roce_adp_retrans,packet_seq_err,"
        "out_of_sequence}`); if they rise, reseat or replace the cable and check MTU on both ends",
    )


@node_check(
    "rdma-link-errors",
    summary="link-level error counters are zero",
    why="link_downed, symbol_error and port_rcv_errors only rise on a bad cable or a port that "
    "flaps",
    source=f"{NOTES} (RoCE retransmits)",
    needs=("ib_sysfs",),
)
def rdma_link_errors(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    return _counter_hits(
        capture,
        defaults.DOCTOR_LINK_ERROR_COUNTERS,
        "reseat or replace the cable; the counters reset only on a driver reload or reboot",
    )


@node_check(
    "roce-mtu",
    summary="active RoCE MTU is 4096 on Ethernet RDMA ports",
    why="RoCE's path MTU follows the netdev MTU; 1024 means the netdev was left at 1500 and "
    "every RDMA message is cut into four times as many packets",
    source=f"{NOTES} (jumbo MTU)",
    needs=("ibv_devinfo",),
)
def roce_mtu(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    hits = []
    for port in ibv_ports(capture.text("ibv_devinfo") or ""):
        mtu = re.match(r"([0-9]+)", port.get("active_mtu", ""))
        active = "PORT_ACTIVE" in port.get("state", "")
        size = parse_int(mtu.group(1), source="ibv_devinfo", field="active_mtu") if mtu else None
        if active and size is not None and size < defaults.DOCTOR_ROCE_MIN_ACTIVE_MTU:
            hits.append(
                Hit(
                    "warning",
                    f"{port['hca_id']} port {port['port']} active_mtu {port['active_mtu']}",
                    "`ip link set dev NETDEV mtu 9000` on both ends of the cable (the netdev "
                    "behind "
                    f"{port['hca_id']}: `rdma link show`)",
                )
            )
    return hits


_PLAN_ENV_CHECKED = (
    "NCCL_IB_HCA",
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "NCCL_IB_SUBNET_AWARE_ROUTING",
    "NCCL_IB_MERGE_NICS",
    "NCCL_ALGO",
)


@node_check(
    "nccl-env",
    summary="the cluster file's [env] does not contradict the plan's NCCL settings, "
    "and NCCL_IB_HCA names devices the node has",
    why="stock NCCL picked the wrong port per direction until subnet-aware routing was on; an "
    "override that names other devices or interfaces undoes the plan",
    source=f"{NOTES} (subnet per cable)",
    needs=("ib_sysfs",),
    needs_plan=True,
)
def nccl_env(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    assert context.node_plan is not None
    planned = {e.name: e.value for e in context.node_plan.env}
    hits = []
    for name in _PLAN_ENV_CHECKED:
        if name in context.env and name in planned and context.env[name] != planned[name]:
            hits.append(
                Hit(
                    "error",
                    f"{name}={context.env[name]} in the cluster file; the plan says "
                    f"{planned[name]}",
                    f"remove {name} from [env] (the plan sets {name}={planned[name]})",
                )
            )
    have = _devices(capture)
    hca = context.env.get("NCCL_IB_HCA", planned.get("NCCL_IB_HCA", ""))
    missing = [d for d in hca.lstrip("=^").split(",") if d and have and d.split(":")[0] not in have]
    if missing:
        hits.append(
            Hit(
                "error",
                f"NCCL_IB_HCA={hca} names {', '.join(missing)}, not on the node (it has "
                f"{', '.join(sorted(have))})",
                "correct the rdma names in [[nodes.ports]]",
            )
        )
    return hits
