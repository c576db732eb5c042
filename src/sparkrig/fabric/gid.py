"""RoCE GID index per RDMA device, read from sysfs every time it is needed.

The index of the IPv4-mapped RoCE v2 GID differs per node and per device and moves after a
reboot (observed 6 vs 5, 3 vs 5; research §2-3), so it is never a constant: it is looked up in

    <sysfs>/class/infiniband/<device>/ports/<port>/gids/<i>              the GID
    <sysfs>/class/infiniband/<device>/ports/<port>/gid_attrs/types/<i>   "RoCE v2" / "IB/RoCE v1"
    <sysfs>/class/infiniband/<device>/ports/<port>/gid_attrs/ndevs/<i>   the netdev behind it

`read_gid_table` is the only function that reads files; the resolver is pure.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from sparkrig.errors import UsageError
from sparkrig.json_files import read_text_file
from sparkrig.outside_numbers import int_or_none

ROCE_V2 = "RoCE v2"


@dataclass(frozen=True)
class GidEntry:
    index: int
    gid: ipaddress.IPv6Address
    kind: str
    netdev: str | None


class GidResolution(BaseModel):
    device: str
    address: ipaddress.IPv4Address
    index: int | None
    candidates: list[int]
    problem: str | None = None
    """why `index` is None, or why it was a choice among several"""


def ipv4_mapped(address: ipaddress.IPv4Address) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(f"::ffff:{address}")


def _read(path: Path) -> str | None:
    try:
        return read_text_file(path, what="sysfs entry", fix="", encoding="ascii").strip()
    except UsageError:  # unpopulated entries answer EINVAL on a real sysfs
        return None


def read_gid_table(sysfs: Path, device: str, port: int = 1) -> list[GidEntry]:
    base = sysfs / "class" / "infiniband" / device / "ports" / str(port)
    gids = base / "gids"
    if not gids.is_dir():
        return []
    entries = []
    # entry names are sysfs text too: "²".isdigit() is True and int("²") raises
    named = ((int_or_none(path.name, minimum=0), path) for path in gids.iterdir())
    for index, path in sorted((i, p) for i, p in named if i is not None):
        if (text := _read(path)) is None:
            continue
        try:
            gid = ipaddress.IPv6Address(text)
        except ValueError:
            continue
        if gid == ipaddress.IPv6Address(0):
            continue
        kind = _read(base / "gid_attrs" / "types" / path.name) or ""
        netdev = _read(base / "gid_attrs" / "ndevs" / path.name)
        entries.append(GidEntry(index=index, gid=gid, kind=kind, netdev=netdev))
    return entries


def resolve_gid_index(
    device: str,
    address: ipaddress.IPv4Address,
    table: list[GidEntry],
    netdev: str | None = None,
) -> GidResolution:
    """The index whose GID is `address` IPv4-mapped with type RoCE v2. With several, the one
    on `netdev` if given, else the lowest, with the choice named in `problem`."""
    wanted = ipv4_mapped(address)
    candidates = [e for e in table if e.gid == wanted and e.kind == ROCE_V2]
    indices = [e.index for e in candidates]
    if not table:
        problem = f"{device} has no GID table — check the device name (`ls /sys/class/infiniband`)"
        return GidResolution(
            device=device, address=address, index=None, candidates=[], problem=problem
        )
    if not candidates:
        other = [e.index for e in table if e.gid == wanted]
        if other:
            problem = (
                f"{device} holds {address} only as RoCE v1 (index {other[0]}) — enable RoCE v2 "
                "on the device"
            )
        else:
            problem = (
                f"{device} has no GID for {address} — the address is not on its netdev or the "
                "link is down: apply the fabric, then check `ip address` and the cable"
            )
        return GidResolution(
            device=device, address=address, index=None, candidates=[], problem=problem
        )
    if len(candidates) == 1:
        return GidResolution(device=device, address=address, index=indices[0], candidates=indices)
    on_netdev = [e.index for e in candidates if netdev is not None and e.netdev == netdev]
    chosen = on_netdev[0] if len(on_netdev) == 1 else indices[0]
    problem = (
        f"{device} holds {address} as RoCE v2 at indices {', '.join(map(str, indices))}; "
        f"took {chosen}"
        + (f" (on {netdev})" if on_netdev else " (the lowest)")
        + " — remove the duplicate address (a VLAN or macvlan child repeats it)"
    )
    return GidResolution(
        device=device, address=address, index=chosen, candidates=indices, problem=problem
    )


def _unresolved(device: str, address: ipaddress.IPv4Address, problem: str) -> GidResolution:
    return GidResolution(device=device, address=address, index=None, candidates=[], problem=problem)
