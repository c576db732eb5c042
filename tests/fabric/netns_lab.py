"""A cluster built from network namespaces (one per node) joined by veth pairs (two per cable,
one per PCIe function), driven through the same netns executor `fabric apply` uses.

Every namespace name starts with `srt<pid>x<random>-`, so parallel runs never collide and a
later run can remove what a killed run left behind (`remove_stale_namespaces`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sparkrig.launch.executors import NetnsExecutor

PREFIX_PATTERN = re.compile(r"^srt(\d+)x[0-9a-f]+-")
PROBE = [sys.executable, "-m", "sparkrig.fabric.probe"]

# every lab node has the same two cages, each with two functions (a = root A, b = root B)
PORTS = """
[[nodes.ports]]
name = "p0"
functions = [{ netdev = "p0a", rdma = "rp0a" }, { netdev = "p0b", rdma = "rp0b" }]
[[nodes.ports]]
name = "p1"
functions = [{ netdev = "p1a", rdma = "rp1a" }, { netdev = "p1b", rdma = "rp1b" }]
"""


def cluster_toml(name: str, names: list[str], cables: list[str], extra: str = "") -> str:
    listed = ", ".join(f'"{cable}"' for cable in cables)
    nodes = "".join(f'\n[[nodes]]\nname = "{node}"\n{PORTS}' for node in names)
    return f'name = "{name}"\ncables = [{listed}]\n{nodes}\n{extra}'


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def why_netns_unavailable() -> str | None:
    """None when this machine can create namespaces and veth pairs, else the reason."""
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    name = f"srt{os.getpid()}x{secrets.token_hex(2)}-probe"
    made = _ip("netns", "add", name, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    try:
        veth = _ip(
            "link",
            "add",
            "t0",
            "netns",
            name,
            "type",
            "veth",
            "peer",
            "name",
            "t1",
            "netns",
            name,
            check=False,
        )
        if veth.returncode != 0:
            return f"cannot create a veth pair: {veth.stderr.strip()}"
    finally:
        _ip("netns", "del", name, check=False)
    return None


def remove_stale_namespaces() -> None:
    """Namespaces of earlier runs whose process is gone."""
    listed = _ip("netns", "list", check=False).stdout.split()
    for name in listed:
        match = PREFIX_PATTERN.match(name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            _ip("netns", "del", name, check=False)


class NetnsLab:
    def __init__(self, names: list[str]) -> None:
        self.prefix = f"srt{os.getpid()}x{secrets.token_hex(3)}-"
        self.names = names
        self.runners = {name: NetnsExecutor(self.prefix + name) for name in names}

    def namespace(self, node: str) -> str:
        return self.prefix + node

    def create(self, wiring: list[tuple[str, str, str, str]]) -> None:
        """`wiring`: (node, port, node, port) cables; each becomes two veth pairs."""
        for name in self.names:
            _ip("netns", "add", self.namespace(name))
            _ip("-n", self.namespace(name), "link", "set", "lo", "up")
        for node_a, port_a, node_b, port_b in wiring:
            for function in ("a", "b"):
                _ip(
                    "link",
                    "add",
                    f"{port_a}{function}",
                    "netns",
                    self.namespace(node_a),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"{port_b}{function}",
                    "netns",
                    self.namespace(node_b),
                )

    def veth_from_here(self, node: str, inside: str) -> str:
        """A veth pair from this namespace into `node`, named `inside` there; returns the name of
        this end. Removing the node's namespace removes both ends."""
        outside = f"srm{secrets.token_hex(3)}"
        _ip(
            "link", "add", outside, "type", "veth",
            "peer", "name", inside, "netns", self.namespace(node),
        )  # fmt: skip
        return outside

    def link_from_here(self, node: str, network: int) -> str:
        """A veth from this namespace into `node` on a random /30 of 10.`network`.X.0 (a stand-in
        for a management LAN); returns the node's address on it. Removing the node's namespace
        removes both ends."""
        outside, octet = self.veth_from_here(node, "mgmt0"), 1 + secrets.randbelow(250)
        _ip("address", "add", f"10.{network}.{octet}.1/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip(
            "-n",
            self.namespace(node),
            "address",
            "add",
            f"10.{network}.{octet}.2/30",
            "dev",
            "mgmt0",
        )
        _ip("-n", self.namespace(node), "link", "set", "mgmt0", "up")
        return f"10.{network}.{octet}.2"

    def destroy(self) -> None:
        for name in self.names:
            _ip("netns", "del", self.namespace(name), check=False)

    def run(self, node: str, *argv: str) -> str:
        result = self.runners[node].run(list(argv))
        assert result.ok, f"{node}: {' '.join(argv)}: {result.stderr}"
        return result.stdout

    def probe(self, node: str, *argv: str) -> dict[str, Any]:
        return dict(json.loads(self.run(node, *PROBE, *argv)))

    def ping(self, node: str, addresses: list[str], size: int) -> list[dict[str, Any]]:
        return list(self.probe(node, "ping", *addresses, "--size", str(size))["results"])

    @contextmanager
    def listening(self, node: str, address: str, port: int) -> Iterator[None]:
        """A TCP listener inside the node while the block runs."""
        process = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.namespace(node),
                *PROBE,
                "listen",
                address,
                str(port),
                "--seconds",
                "20",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
            yield
        finally:
            process.terminate()
            process.wait(timeout=5)

    def snapshot(self, node: str) -> dict[str, Any]:
        """What `fabric apply` may change: per interface MTU, up flag and IPv4 addresses; the
        IPv4 routes; forwarding."""
        links = json.loads(self.run(node, "ip", "-j", "address", "show"))
        interfaces = {
            link["ifname"]: (
                link["mtu"],
                "UP" in link["flags"],
                sorted(
                    f"{a['local']}/{a['prefixlen']}"
                    for a in link.get("addr_info", [])
                    if a["family"] == "inet"
                ),
            )
            for link in links
        }
        routes = json.loads(self.run(node, "ip", "-j", "-4", "route", "show", "table", "all"))
        forwarding = self.run(node, "sysctl", "-n", "net.ipv4.ip_forward").strip()
        return {
            "interfaces": interfaces,
            "routes": sorted(json.dumps(r, sort_keys=True) for r in routes),
            "forwarding": forwarding,
        }


@contextmanager
def netns_lab(names: list[str], wiring: list[tuple[str, str, str, str]]) -> Iterator[NetnsLab]:
    """The namespaces exist inside the block and are removed after it, even on failure."""
    remove_stale_namespaces()
    lab = NetnsLab(names)
    try:
        lab.create(wiring)
        yield lab
    finally:
        lab.destroy()
