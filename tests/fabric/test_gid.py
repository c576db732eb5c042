"""GID index resolution over sysfs trees: one built from a real DGX Spark `show_gids` capture,
and synthetic edge cases (no IPv4 GID, two candidates, the index moving after a reboot)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from sparkrig.fabric.gid import GidEntry, GidTable, read_gid_table, resolve_gid_index

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sysfs"
V1, V2 = "IB/RoCE v1", "RoCE v2"


def _sysfs(root: Path, device: str, rows: dict[int, tuple[str, str, str]]) -> Path:
    """A sysfs tree like the kernel's: gids/<i>, gid_attrs/types/<i>, gid_attrs/ndevs/<i>;
    unpopulated indices hold the zero GID and no type, as on real hardware."""
    port = root / "class" / "infiniband" / device / "ports" / "1"
    for folder in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / folder).mkdir(parents=True, exist_ok=True)
    for index in range(8):
        gid, kind, netdev = rows.get(index, ("0000:0000:0000:0000:0000:0000:0000:0000", "", ""))
        (port / "gids" / str(index)).write_text(gid + "\n")
        if kind:
            (port / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
            (port / "gid_attrs" / "ndevs" / str(index)).write_text(netdev + "\n")
    return root


def _rows_from_show_gids(text: str) -> dict[str, dict[int, tuple[str, str, str]]]:
    """`show_gids` columns: DEV PORT INDEX GID IPv4 VER NDEV, tab separated; an empty IPv4
    column is padded with extra tabs, so the first four and the last two are read."""
    out: dict[str, dict[int, tuple[str, str, str]]] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        device, _, index, gid = fields[:4]
        version, netdev = fields[-2:]
        kind = V2 if version == "v2" else V1
        out.setdefault(device, {})[int(index)] = (gid, kind, netdev)
    return out


def _ip(text: str) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(text)


def test_real_spark_capture_resolves_index_3(tmp_path: Path) -> None:
    rows = _rows_from_show_gids((FIXTURES / "dgx_spark_show_gids.txt").read_text())["rocep1s0f0"]
    # show_gids printed only the v2 rows; mlx5 writes each GID once per RoCE version, v1 first
    rows[0] = (rows[1][0], V1, rows[1][2])
    rows[2] = (rows[3][0], V1, rows[3][2])
    sysfs = _sysfs(tmp_path, "rocep1s0f0", rows)
    table = read_gid_table(sysfs, "rocep1s0f0")
    assert [e.index for e in table.entries] == [0, 1, 2, 3]
    assert table.unreadable == ()
    found = resolve_gid_index("rocep1s0f0", _ip("192.168.100.10"), table)
    assert found.index == 3
    assert found.problem is None


def test_before_the_address_is_assigned_there_is_no_ipv4_gid(tmp_path: Path) -> None:
    link_local = "fe80:0000:0000:0000:4ebb:47ff:fee8:9f39"
    sysfs = _sysfs(tmp_path, "rocep1s0f0", {0: (link_local, V1, "e"), 1: (link_local, V2, "e")})
    found = resolve_gid_index("rocep1s0f0", _ip("10.20.0.1"), read_gid_table(sysfs, "rocep1s0f0"))
    assert found.index is None
    assert found.problem is not None
    assert "has no GID for 10.20.0.1" in found.problem
    assert "apply the fabric" in found.problem


def test_v1_only_names_roce_v2() -> None:
    sysfs_less = GidTable(
        (GidEntry(index=2, gid=ipaddress.IPv6Address("::ffff:10.20.0.1"), kind=V1, netdev="e"),)
    )
    found = resolve_gid_index("d", _ip("10.20.0.1"), sysfs_less)
    assert found.index is None
    assert found.problem is not None
    assert "only as RoCE v1" in found.problem


def test_two_candidates_prefer_the_netdev_and_say_so(tmp_path: Path) -> None:
    gid = "0000:0000:0000:0000:0000:ffff:0a14:0001"
    sysfs = _sysfs(
        tmp_path,
        "rocep1s0f0",
        {2: (gid, V1, "enp1s0f0np0"), 3: (gid, V2, "enp1s0f0np0.10"), 5: (gid, V2, "enp1s0f0np0")},
    )
    table = read_gid_table(sysfs, "rocep1s0f0")
    found = resolve_gid_index("rocep1s0f0", _ip("10.20.0.1"), table, netdev="enp1s0f0np0")
    assert found.index == 5
    assert found.candidates == [3, 5]
    assert found.problem is not None
    assert "took 5 (on enp1s0f0np0)" in found.problem
    assert resolve_gid_index("rocep1s0f0", _ip("10.20.0.1"), table).index == 3


def test_index_moved_after_reboot_is_followed(tmp_path: Path) -> None:
    gid = "0000:0000:0000:0000:0000:ffff:0a14:0001"
    ll = "fe80:0000:0000:0000:4ebb:47ff:fee8:9f39"
    before = _sysfs(tmp_path / "boot1", "roceP2p1s0f0", {2: (gid, V1, "x"), 3: (gid, V2, "x")})
    after = _sysfs(
        tmp_path / "boot2",
        "roceP2p1s0f0",
        {0: (ll, V1, "x"), 1: (ll, V2, "x"), 4: (gid, V1, "x"), 5: (gid, V2, "x")},
    )
    address = _ip("10.20.0.1")
    assert (
        resolve_gid_index("roceP2p1s0f0", address, read_gid_table(before, "roceP2p1s0f0")).index
        == 3
    )
    assert (
        resolve_gid_index("roceP2p1s0f0", address, read_gid_table(after, "roceP2p1s0f0")).index == 5
    )


def test_unknown_device(tmp_path: Path) -> None:
    found = resolve_gid_index("nope", _ip("10.20.0.1"), read_gid_table(tmp_path, "nope"))
    assert found.problem is not None
    assert "has no GID table" in found.problem
