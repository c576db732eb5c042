"""Parsers for the raw tool outputs: text in, plain data out. Each raises `Unreadable` on text
the tool would never print (truncated JSON, an HTML error page), so the check that needed it is
reported as skipped with the reason, and every other check still runs."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from sparkrig.doctor.container_info import EXIT_MARK
from sparkrig.outside_numbers import parse_int


class Unreadable(ValueError):
    """The tool's output is not in the tool's format."""


def sysfs_values(text: str) -> dict[str, str]:
    """`grep -s -H . FILES` lines, `path:value`, into {path: value}. sysfs paths hold no `:`,
    values may (GIDs)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        path, colon, value = line.partition(":")
        if not line.strip():
            continue
        if not colon or not path.startswith("/"):
            raise Unreadable(f"line {line[:60]!r} is not `path:value`")
        values[path] = value.strip()
    return values


def json_document(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise Unreadable(f"{what} is not JSON ({exc})") from exc


def ip_json(text: str) -> list[dict[str, Any]]:
    data = json_document(text, "`ip -j` output")
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise Unreadable("`ip -j` output is not a list of objects")
    return data


def meminfo_kib(text: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = re.match(r"^(\w[\w()]*):\s+(\S+?)(?: kB)?$", line.strip())
        if match:
            values[match.group(1)] = parse_int(
                match.group(2), source="/proc/meminfo", field=match.group(1), minimum=0
            )
    if "MemTotal" not in values:
        raise Unreadable("no MemTotal line: not /proc/meminfo")
    return values


def vmstat_rows(text: str) -> list[dict[str, int]]:
    """Every row of `vmstat 1 N` by column name; the first row averages since boot."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    header = next((i for i, words in enumerate(lines) if "si" in words and "so" in words), None)
    if header is None:
        raise Unreadable("no header with si/so columns: not vmstat output")
    names = lines[header]
    rows = []
    for words in lines[header + 1 :]:
        if len(words) != len(names):
            raise Unreadable(f"vmstat row {' '.join(words)[:60]!r} does not match its header")
        values = [
            parse_int(w, source="vmstat", field=n, minimum=0)
            for n, w in zip(names, words, strict=True)
        ]
        rows.append(dict(zip(names, values, strict=True)))
    return rows


def xml_root(text: str, what: str) -> ET.Element:
    try:
        return ET.fromstring(text)  # noqa: S314 - text from the operator's own hosts
    except ET.ParseError as exc:
        raise Unreadable(f"{what} is not XML ({exc})") from exc


def mhz(text: str | None) -> int | None:
    match = re.match(r"^\s*([0-9]+)\s*MHz", text or "")
    return (
        parse_int(match.group(1), source="nvidia-smi", field="clock", minimum=0) if match else None
    )


def first_filesystem(text: str) -> dict[str, Any]:
    data = json_document(text, "`findmnt -J` output")
    systems = data.get("filesystems") if isinstance(data, dict) else None
    if not systems or not isinstance(systems[0], dict):
        raise Unreadable("`findmnt -J` output has no filesystems")
    return dict(systems[0])


def lsblk_devices(text: str) -> list[dict[str, Any]]:
    data = json_document(text, "`lsblk -J` output")
    devices = data.get("blockdevices") if isinstance(data, dict) else None
    if not isinstance(devices, list):
        raise Unreadable("`lsblk -J` output has no blockdevices")
    flat: list[dict[str, Any]] = []

    def walk(items: list[dict[str, Any]]) -> None:
        for item in items:
            flat.append(item)
            walk(item.get("children") or [])

    walk(devices)
    return flat


def colon_fields(text: str, what: str) -> dict[str, str]:
    """`Key   : value` lines (chronyc tracking)."""
    fields = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    if not fields:
        raise Unreadable(f"no `key : value` lines: not {what}")
    return fields


def systemd_show(text: str) -> list[dict[str, str]]:
    """`systemctl show -p … UNIT…`: one block of `Key=value` lines per unit."""
    units: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if current:
                units.append(current)
            current = {}
            continue
        key, equals, value = line.partition("=")
        if not equals:
            raise Unreadable(f"line {line[:60]!r} is not Key=value")
        current[key] = value
    return units


def dpkg_installed(text: str) -> dict[str, str]:
    """`dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`: installed ones."""
    packages = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            raise Unreadable(f"line {line[:60]!r} is not package, version, status")
        if parts[2][1:2] == "i":  # second letter: installed (ii, hi = held)
            packages[parts[0]] = parts[1]
    return packages


def ibv_ports(text: str) -> list[dict[str, str]]:
    """`ibv_devinfo`: per port, hca_id, port, state, active_mtu, link_layer."""
    ports: list[dict[str, str]] = []
    hca = ""
    current: dict[str, str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("hca_id:"):
            hca = stripped.split(":", 1)[1].strip()
        elif stripped.startswith("port:"):
            current = {"hca_id": hca, "port": stripped.split(":", 1)[1].strip()}
            ports.append(current)
        elif current is not None and ":" in stripped:
            key, _, value = stripped.partition(":")
            current[key.strip()] = value.strip()
    if not hca:
        raise Unreadable("no hca_id line: not ibv_devinfo output")
    return ports


def route_source(text: str) -> str | None:
    """The `route_get` probe (`ip -j -4 route get ADDR` with its errors, then `sparkrig-exit
    N`): the source address the kernel picks for that route (`prefsrc`), or None when the node
    has no IPv4 route there (ip's `Network is unreachable`, a non-zero exit)."""
    body, _, last = text.rstrip("\n").rpartition("\n")
    if not last.startswith(EXIT_MARK):
        raise Unreadable("no `sparkrig-exit N` line: the route probe was cut short")
    if last.removeprefix(EXIT_MARK).strip() != "0":
        return None
    routes = ip_json(body)
    source = routes[0].get("prefsrc") if routes else None
    if not isinstance(source, str) or not source:
        raise Unreadable("`ip -j route get` names no prefsrc")
    return source


_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
FILE_STATES = ("missing", "folder", "unreadable")


def file_digests(text: str) -> dict[str, str]:
    """The `node_files` probe: path -> its sha256 (hex), or `missing`, `folder`, `unreadable`."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        state, _, rest = line.partition(" ")
        if state in FILE_STATES and rest:
            found[rest] = state
            continue
        digest, _, path = rest.partition(" ")
        if state != "sha256" or not _SHA256_HEX.match(digest) or not path:
            raise Unreadable(f"line {line[:60]!r} is not `sha256 HEX PATH` or `missing PATH`")
        found[path] = digest
    return found
