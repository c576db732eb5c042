"""The ssh executor against real OpenSSH servers: two network namespaces, each running its own
`sshd` on a management link from this namespace, cabled to each other by the fabric planner.
`sparkrig up --apply` starts a llama.cpp RPC pair over ssh (the worker first), `logs` reads a
node's log over ssh, `down` stops both over ssh and leaves no process behind.

The keys, host keys, both configs and the logs live in the test's temporary folder; the cluster
file names its ssh_config (`ssh -F`), so the user's own ~/.ssh is never read or written.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkrig import defaults
from sparkrig.launch.state import load_state, process_start_ticks
from tests.conftest import SPARKRIG
from tests.fabric.netns_lab import PORTS, NetnsLab, netns_lab, why_netns_unavailable

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
UNAVAILABLE = why_netns_unavailable() or (
    None
    if os.path.exists(SSHD) and shutil.which("ssh-keygen")
    else "OpenSSH's sshd is not installed (Debian: openssh-server; `make test` installs it as root)"
)
pytestmark = [
    pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or ""),
    pytest.mark.engine,
]

NAMES = ["a", "b"]
WIRING = [("a", "p0", "b", "p1")]
API_PORT = 18081


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def start_sshd(lab: NetnsLab, node: str, address: str, folder: Path) -> Path:
    """sshd inside the node's namespace, listening on its management address; returns its
    pid file."""
    keygen(folder / f"host_{node}")
    pid_file = folder / f"sshd_{node}.pid"
    config = folder / f"sshd_{node}.conf"
    config.write_text(
        f"ListenAddress {address}\nPort 22\nHostKey {folder / f'host_{node}'}\n"
        f"PidFile {pid_file}\nAuthorizedKeysFile {folder / 'authorized_keys'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nLogLevel ERROR\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # its privilege-separation folder
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            lab.namespace(node),
            SSHD,
            "-f",
            str(config),
            "-E",
            str(folder / f"sshd_{node}.log"),
        ],
        check=True,
        capture_output=True,
    )
    return pid_file


def cluster_text(name: str, addresses: dict[str, str], ssh_config: Path, logs: Path) -> str:
    nodes = "".join(
        f'\n[[nodes]]\nname = "{node}"\nmanagement = "{address}/30"\n{PORTS}'
        for node, address in addresses.items()
    )
    return f"""name = "{name}"
cables = ["a.p0 <-> b.p1"]
{nodes}
[executor]
kind = "ssh"
ssh_config = "{ssh_config}"

[engine]
kind = "llamacpp"
port = {API_PORT}
threads = 1
log_dir = "{logs}"

[model]
path = "bundled"
served_name = "{defaults.BUNDLED_MODEL_ALIAS}"
"""


def sparkrig(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _alive(pid: int, ticks: int) -> bool:
    return process_start_ticks(pid) == ticks


@pytest.fixture(name="ssh_pair")
def _ssh_pair(engine: Any, tmp_path: Path) -> Iterator[tuple[Path, str, NetnsLab]]:
    pid_files: list[Path] = []
    with netns_lab(NAMES, WIRING) as lab:
        try:
            addresses = {node: lab.link_from_here(node, 252) for node in NAMES}  # ssh
            keygen(tmp_path / "id")
            (tmp_path / "authorized_keys").write_text((tmp_path / "id.pub").read_text())
            pid_files = [start_sshd(lab, n, a, tmp_path) for n, a in addresses.items()]
            ssh_config = tmp_path / "ssh_config"
            ssh_config.write_text(
                f"Host 10.252.*\n  User root\n  IdentityFile {tmp_path / 'id'}\n"
                "  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
            )
            name = f"{lab.prefix}ssh".replace("-", "")
            cluster_file = tmp_path / "cluster.toml"
            cluster_file.write_text(cluster_text(name, addresses, ssh_config, tmp_path / "logs"))
            applied = sparkrig(
                "fabric",
                "apply",
                str(cluster_file),
                "--apply",
                "--executor",
                "netns",
                "--netns-prefix",
                lab.prefix,
            )
            assert applied.returncode == 0, applied.stderr
            yield cluster_file, name, lab
        finally:
            state = load_state(f"{lab.prefix}ssh".replace("-", ""))
            if state is not None:
                sparkrig("down", str(tmp_path / "cluster.toml"), "--apply")
                for record in state.started:  # never leave an engine behind
                    if _alive(record.pid, record.pid_start_ticks):
                        os.kill(record.pid, signal.SIGKILL)
            for pid_file in pid_files:  # the sshd daemons this test started
                if pid_file.exists():
                    os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)


def test_up_logs_and_down_over_real_ssh(ssh_pair: tuple[Path, str, NetnsLab]) -> None:
    cluster_file, name, _ = ssh_pair
    up = sparkrig("up", str(cluster_file), "--apply")
    assert up.returncode == 0, up.stderr + up.stdout
    assert "ready" in up.stdout
    state = load_state(name)
    assert state is not None
    assert [(r.process.node, r.process.name) for r in state.started] == [
        ("b", "rpc"),
        ("a", "llama-server"),
    ]
    head_argv = state.started[-1].process.argv
    rpc = head_argv[head_argv.index("--rpc") + 1]
    assert rpc.startswith("10.20.0.2:")  # the worker's end of the cable, not its ssh address

    status = sparkrig("status", str(cluster_file), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["ready"] is True
    logs = sparkrig("logs", str(cluster_file), "b")
    assert logs.returncode == 0, logs.stderr
    assert "RPC server" in logs.stdout  # ggml-rpc-server's banner, read over ssh

    down = sparkrig("down", str(cluster_file), "--apply")
    assert down.returncode == 0, down.stderr
    for record in state.started:
        assert not _alive(record.pid, record.pid_start_ticks), record.process.key
    assert load_state(name) is None
