"""A twin of a small cluster on one machine, for the journey tests: each node is a network
namespace (cabled by veth pairs as the cluster file's cables say, two per cable, none where the
file has no cable) and a mount namespace of its own, reached only the way a real node is: over
ssh, as root with a key, by an `sshd` that runs inside both namespaces.

What a node has of its own (a file placed on one node is not seen by another):
- `/etc/sparkrig` (where `fabric apply` installs the node's files, such as the NCCL graph),
- `NODE_DISK` (its model folder, its engine logs),
each a folder of the twin bound over that path in the node's mount namespace only. The rest of
the file system (the Python that runs sparkrig, the vLLM CPU build, its compile cache) is
shared: it stands for what every real node has installed alike.

The management LAN is a bridge in this namespace with every node's `mgmt0` on it, so the nodes
reach each other and this machine reaches them (ssh, the API); a cluster without one (the ring)
gets only an ssh link per node (`lan=False`). Everything is removed when the block ends, even on
failure: sshd daemons by the pid they recorded, the namespaces (and so every veth), the bridge.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from tests.fabric.netns_lab import NetnsLab, _ip, remove_stale_namespaces, why_netns_unavailable

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
NODE_ETC = "/etc/sparkrig"
NODE_DISK = "/var/lib/sparkrig-twin"
MOUNT_POINTS = (NODE_ETC, NODE_DISK)


def why_twin_unavailable() -> str | None:
    """None when this machine can build the twin, else the reason (the tests skip with it)."""
    reason = why_netns_unavailable()
    if reason is not None:
        return reason
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
        return "OpenSSH's sshd is not installed (Debian: openssh-server; `make test` installs it)"
    if shutil.which("unshare") is None:
        return "util-linux's unshare is not installed"
    return None


@dataclass
class Twin:
    lab: NetnsLab
    folder: Path
    ssh_config: Path
    addresses: dict[str, str] = field(default_factory=dict)
    """each node's address on the management LAN (or its ssh link): ssh and the API go here"""
    pid_files: list[Path] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return self.lab.names

    def root(self, node: str) -> Path:
        """The twin's folder that is the node's own file system."""
        return self.folder / "nodes" / node

    def on_node(self, node: str, path: str) -> Path:
        """Where a path of the node's own (under /etc/sparkrig or NODE_DISK) lies from here."""
        for point in MOUNT_POINTS:
            if path == point or path.startswith(point + "/"):
                return (
                    self.root(node)
                    / point.strip("/").replace("/", "_")
                    / path[len(point) :].lstrip("/")
                )
        raise ValueError(f"{path} is shared by every node of the twin, not a node's own")

    def ssh(self, node: str, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A shell command on the node, the way sparkrig's ssh executor reaches it."""
        return subprocess.run(
            [
                "ssh",
                "-F",
                str(self.ssh_config),
                "-o",
                "BatchMode=yes",
                self.addresses[node],
                command,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def _unplugged_ports(lab: NetnsLab, wiring: list[tuple[str, str, str, str]]) -> None:
    """Every node has both cages' netdevs (p0a, p0b, p1a, p1b), as a real one does; a port the
    file cables to nothing is a veth whose other end stays down inside the node: no carrier."""
    cabled = {(node, port) for a, pa, b, pb in wiring for node, port in ((a, pa), (b, pb))}
    for node in lab.names:
        for port in ("p0", "p1"):
            if (node, port) in cabled:
                continue
            for function in ("a", "b"):
                netdev = f"{port}{function}"
                _ip(
                    "-n", lab.namespace(node), "link", "add", netdev,
                    "type", "veth", "peer", "name", f"x{netdev}",
                )  # fmt: skip


def _management_lan(lab: NetnsLab, octet: int) -> tuple[str, dict[str, str]]:
    """A bridge here with the nodes' mgmt0 on it: 10.254.OCTET.0/24, this machine .1."""
    bridge = f"srb{secrets.token_hex(3)}"
    _ip("link", "add", bridge, "type", "bridge")
    _ip("address", "add", f"10.254.{octet}.1/24", "dev", bridge)
    _ip("link", "set", bridge, "up")
    addresses = {}
    for index, node in enumerate(lab.names):
        outside = lab.veth_from_here(node, "mgmt0")
        _ip("link", "set", outside, "master", bridge)
        _ip("link", "set", outside, "up")
        address = f"10.254.{octet}.{10 + index}"
        _ip("-n", lab.namespace(node), "address", "add", f"{address}/24", "dev", "mgmt0")
        _ip("-n", lab.namespace(node), "link", "set", "mgmt0", "up")
        addresses[node] = address
    return bridge, addresses


def _start_sshd(twin: Twin, node: str) -> None:
    """sshd inside the node's network namespace and a new mount namespace of its own, where the
    node's folders are bound over /etc/sparkrig and NODE_DISK; every ssh session inherits both."""
    folder = twin.folder
    _keygen(folder / f"host_{node}")
    pid_file = folder / f"sshd_{node}.pid"
    config = folder / f"sshd_{node}.conf"
    config.write_text(
        f"ListenAddress {twin.addresses[node]}\nPort 22\nHostKey {folder / f'host_{node}'}\n"
        f"PidFile {pid_file}\nAuthorizedKeysFile {folder / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nLogLevel ERROR\n"
        "MaxStartups 64\nMaxSessions 64\n"
        # sparkrig (and torch) installed on every node: this Python's folder first on the PATH
        f"SetEnv PATH={Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin\n"
    )
    binds = []
    for point in MOUNT_POINTS:
        own = twin.on_node(node, point)
        own.mkdir(parents=True, exist_ok=True)
        binds.append(f"mount --bind {own} {point}")
    script = " && ".join([*binds, f"exec {SSHD} -f {config} -E {folder / f'sshd_{node}.log'}"])
    Path("/run/sshd").mkdir(exist_ok=True)  # its privilege-separation folder
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            twin.lab.namespace(node),
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
        ],
        check=True,
        capture_output=True,
    )
    twin.pid_files.append(pid_file)


def _stop_sshd(pid_files: list[Path]) -> None:
    for pid_file in pid_files:
        if pid_file.exists():
            with suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)


def _kill_what_is_left(lab: NetnsLab) -> None:
    """Whatever still runs in a node (an ssh session's sshd, a rank a failed test left): a
    deleted namespace lives on while a process holds it, with its veths."""
    for node in lab.names:
        listed = ["ip", "netns", "pids", lab.namespace(node)]
        pids = subprocess.run(listed, capture_output=True, text=True, check=False).stdout.split()
        for pid in pids:
            with suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


@contextmanager
def cluster_twin(
    names: list[str],
    wiring: list[tuple[str, str, str, str]],
    folder: Path,
    *,
    lan: bool = True,
) -> Iterator[Twin]:
    """The twin exists inside the block. `wiring`: (node, port, node, port) cables."""
    remove_stale_namespaces()
    made = [point for point in MOUNT_POINTS if not os.path.exists(point)]
    for point in made:  # empty mount points; the nodes' own folders are bound over them
        os.makedirs(point)
    lab = NetnsLab(names)
    bridge = None
    twin = Twin(lab=lab, folder=folder, ssh_config=folder / "ssh_config")
    try:
        lab.create(wiring)
        _unplugged_ports(lab, wiring)
        octet = 1 + secrets.randbelow(250)
        if lan:
            bridge, twin.addresses = _management_lan(lab, octet)
        else:
            twin.addresses = {node: lab.link_from_here(node, 254) for node in names}
        _keygen(folder / "id")
        (folder / "authorized_keys").write_text((folder / "id.pub").read_text())
        hosts = " ".join(twin.addresses.values())
        twin.ssh_config.write_text(
            f"Host {hosts}\n  User root\n  IdentityFile {folder / 'id'}\n"
            "  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
            "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        )
        for node in names:
            _start_sshd(twin, node)
        yield twin
    finally:
        _stop_sshd(twin.pid_files)
        _kill_what_is_left(lab)
        lab.destroy()
        if bridge is not None:
            subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)
        for point in made:
            with suppress(OSError):  # another twin still uses it
                os.rmdir(point)
