"""RoCE GID index per RDMA device, read from sysfs every time it is needed.

The index of the IPv4-mapped RoCE v2 GID differs per node and per device and moves after a
reboot (observed 6 vs 5, 3 vs 5; research §2-3), so it is never a constant: it is looked up in

    <sysfs>/class/infiniband/<device>/ports/<port>/gids/<i>              the GID
    <sysfs>/class/infiniband/<device>/ports/<port>/gid_attrs/types/<i>   "RoCE v2" / "IB/RoCE v1"
    <sysfs>/class/infiniband/<device>/ports/<port>/gid_attrs/ndevs/<i>   the netdev behind it

`read_gid_table` is the only function that reads files; the resolver is pure.
"""

from __future__ import annotations

import errno
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from sparkrig.errors import UsageError, excerpt
from sparkrig.json_files import read_bytes_file
from sparkrig.outside_numbers import int_or_none

ROCE_V2 = "RoCE v2"
ROCE_V1 = "IB/RoCE v1"
_UNPOPULATED = {errno.EINVAL, errno.ENODATA}  # what a real sysfs answers for an unused index


@dataclass(frozen=True)
class GidEntry:
    index: int
    gid: ipaddress.IPv6Address
    kind: str
    netdev: str | None


@dataclass(frozen=True)
class GidTable:
    """A port's readable GIDs, and each entry that could not be read, named with why: a
    kernel's tree has none, a copied or damaged one may, and "no GID" alone would hide it."""

    entries: tuple[GidEntry, ...] = ()
    unreadable: tuple[str, ...] = ()


class GidResolution(BaseModel):
    device: str
    address: ipaddress.IPv4Address
    index: int | None
    candidates: list[int]
    problem: str | None = None
    """why `index` is None, or why it was a choice among several"""


def ipv4_mapped(address: ipaddress.IPv4Address) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(f"::ffff:{address}")


def entry_name(folder: str, name: str) -> str:
    """An entry as a message names it, cut when long (a name of 200 digits)."""
    return f"{folder}/{excerpt(name, 16)}"


def _read(path: Path, name: str, unreadable: list[str]) -> str | None:
    """The entry's text; None for an absent or unpopulated one, and for one that cannot be
    read, which `unreadable` gets with why."""
    try:
        raw = read_bytes_file(path, what="sysfs entry", fix="")
    except UsageError as exc:
        cause = exc.__cause__
        if isinstance(cause, FileNotFoundError) or (
            isinstance(cause, OSError) and cause.errno in _UNPOPULATED
        ):
            return None
        why = "a directory" if isinstance(cause, IsADirectoryError) else "cannot be read"
        unreadable.append(f"{name} ({why})")
        return None
    try:
        return raw.decode("ascii").strip()
    except UnicodeDecodeError:
        unreadable.append(f"{name} (not ASCII text)")
        return None


def read_gid_table(sysfs: Path, device: str, port: int = 1) -> GidTable:
    base = sysfs / "class" / "infiniband" / device / "ports" / str(port)
    gids = base / "gids"
    if not gids.is_dir():
        return GidTable()
    entries, unreadable = [], []
    named = []
    for path in gids.iterdir():
        # entry names are sysfs text too: "²".isdigit() is True and int("²") raises
        if (index := int_or_none(path.name, minimum=0)) is None:
            unreadable.append(f"{entry_name('gids', path.name)} (its name is not a GID index)")
        else:
            named.append((index, path))
    for index, path in sorted(named):
        if (text := _read(path, f"gids/{index}", unreadable)) is None:
            continue
        try:
            gid = ipaddress.IPv6Address(text)
        except ValueError:
            unreadable.append(f"gids/{index} (holds {excerpt(text, 40)!r}, not a GID)")
            continue
        if gid == ipaddress.IPv6Address(0):
            continue
        kind = _read(base / "gid_attrs" / "types" / path.name, f"types/{index}", unreadable)
        netdev = _read(base / "gid_attrs" / "ndevs" / path.name, f"ndevs/{index}", unreadable)
        entries.append(GidEntry(index=index, gid=gid, kind=kind or "", netdev=netdev))
    return GidTable(tuple(entries), tuple(unreadable))


def resolve_gid_index(
    device: str,
    address: ipaddress.IPv4Address,
    table: GidTable,
    netdev: str | None = None,
) -> GidResolution:
    """The index whose GID is `address` IPv4-mapped with type RoCE v2. With several, the one
    on `netdev` if given, else the lowest, with the choice named in `problem`; entries the
    table could not read are named in `problem` whatever the answer."""
    found = _resolved(device, address, list(table.entries), netdev)
    if not table.unreadable:
        return found
    more = f" and {len(table.unreadable) - 3} more" if len(table.unreadable) > 3 else ""
    listed = ", ".join(table.unreadable[:3]) + more
    tree = f"/sys/class/infiniband/{device}/ports/1"
    if not table.entries:
        problem = (
            f"{device} has no readable GID entry: it cannot read {listed} — the tree is not as "
            f"the kernel writes it: check `ls {tree}/gids` (or --sysfs's copy of it)"
        )
    elif found.problem is None:
        problem = (
            f"{device}: took index {found.index}, but cannot read {listed} — check {tree} (or "
            "--sysfs's copy of it)"
        )
    else:
        what, _, fix = found.problem.partition(" — ")
        problem = f"{what}; it cannot read {listed} — {fix}"
    return found.model_copy(update={"problem": problem})


def _resolved(
    device: str,
    address: ipaddress.IPv4Address,
    table: list[GidEntry],
    netdev: str | None,
) -> GidResolution:
    wanted = ipv4_mapped(address)
    candidates = [e for e in table if e.gid == wanted and e.kind == ROCE_V2]
    indices = [e.index for e in candidates]
    if not table:
        problem = f"{device} has no GID table — check the device name (`ls /sys/class/infiniband`)"
        return _unresolved(device, address, problem)
    if not candidates:
        other = [e for e in table if e.gid == wanted]
        if other and other[0].kind == ROCE_V1:
            problem = (
                f"{device} holds {address} only as RoCE v1 (index {other[0].index}) — enable "
                "RoCE v2 on the device"
            )
        elif other:
            kind = f"GID type {excerpt(other[0].kind, 40)!r}" if other[0].kind else "no GID type"
            problem = (
                f"{device} holds {address} at index {other[0].index} with {kind}, neither RoCE "
                f"v2 nor v1 — check gid_attrs/types/{other[0].index} of the device; enable RoCE "
                "v2 on it"
            )
        else:
            problem = (
                f"{device} has no GID for {address} — the address is not on its netdev or the "
                "link is down: apply the fabric, then check `ip address` and the cable"
            )
        return _unresolved(device, address, problem)
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
