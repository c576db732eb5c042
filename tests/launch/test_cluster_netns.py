"""A real multi-node llama.cpp RPC cluster: three network namespaces cabled as a triangle by the
fabric planner, `ggml-rpc-server` on the two workers, `llama-server --rpc` on the head with the
bundled model split across them, all started by `sparkrig up --apply` as a user runs it.

Then: `sparkrig check --quick` against the head (reached from this namespace over a veth
"management" link), one worker killed and named by `status` within 30 s with the cluster not
ready, and `down` leaving no process and (after the lab) no namespace behind. Namespaces and
processes are removed even when the test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkrig import defaults
from sparkrig.launch.state import load_state, process_start_ticks
from tests.conftest import SPARKRIG
from tests.fabric.netns_lab import PORTS, NetnsLab, netns_lab, why_netns_unavailable

UNAVAILABLE = why_netns_unavailable()
pytestmark = [
    pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or ""),
    pytest.mark.engine,
]

NAMES = ["a", "b", "c"]
CABLES = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> a.p1"]
WIRING = [("a", "p0", "b", "p1"), ("b", "p0", "c", "p1"), ("c", "p0", "a", "p1")]
API_PORT = 18080
STALL_WINDOW_S = 60


def cluster_file_text(lab: NetnsLab, name: str, api_address: str) -> str:
    nodes = "".join(
        f'\n[[nodes]]\nname = "{node}"\n'
        f'executor = {{ kind = "netns", target = "{lab.namespace(node)}" }}\n{PORTS}'
        for node in NAMES
    )
    cables = ", ".join(f'"{cable}"' for cable in CABLES)
    return f"""name = "{name}"
cables = [{cables}]
{nodes}
[engine]
kind = "llamacpp"
port = {API_PORT}
api_address = "{api_address}"
threads = 1
stall_window_s = {STALL_WINDOW_S}

[model]
path = "bundled"
served_name = "{defaults.BUNDLED_MODEL_ALIAS}"

[profile]
context_tokens = {defaults.CHECK_LOCAL_CONTEXT_TOKENS}
"""


def sparkrig(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _alive(pid: int, ticks: int) -> bool:
    return process_start_ticks(pid) == ticks


@pytest.fixture(name="rpc_cluster")
def _rpc_cluster(engine: Any, tmp_path: Path) -> Iterator[tuple[Path, str, NetnsLab]]:
    with netns_lab(NAMES, WIRING) as lab:
        name = f"{lab.prefix}rpc".replace("-", "")
        api_address = lab.link_from_here("a", 251)  # the head's API, from here
        cluster_file = tmp_path / "cluster.toml"
        cluster_file.write_text(cluster_file_text(lab, name, api_address))
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
        try:
            yield cluster_file, name, lab
        finally:
            state = load_state(name)
            sparkrig("down", str(cluster_file), "--apply")
            for record in state.started if state else []:  # never leave a process behind
                if _alive(record.pid, record.pid_start_ticks):
                    os.kill(record.pid, 9)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    assert lab.prefix not in listed.stdout  # no namespace (and so no veth) left behind


def test_rpc_cluster_up_check_kill_a_worker_down(
    rpc_cluster: tuple[Path, str, NetnsLab], record_property: Any
) -> None:
    cluster_file, name, _ = rpc_cluster
    began = time.monotonic()
    up = sparkrig("up", str(cluster_file), "--apply")
    up_s = time.monotonic() - began
    record_property("up_seconds", round(up_s, 1))
    assert up.returncode == 0, up.stderr + up.stdout
    assert "ready" in up.stdout
    state = load_state(name)
    assert state is not None
    assert [(r.process.node, r.process.name) for r in state.started] == [
        ("b", "rpc"),
        ("c", "rpc"),
        ("a", "llama-server"),
    ]  # workers first, then the head
    head_argv = state.started[-1].process.argv
    assert head_argv[head_argv.index("--rpc") + 1].count(",") == 1  # both workers

    status = sparkrig("status", str(cluster_file), "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    assert json.loads(status.stdout)["ready"] is True

    began = time.monotonic()
    check = sparkrig(
        "check",
        state.api_url,
        "--quick",
        "--out",
        str(cluster_file.parent / "check.json"),
        timeout=900,
    )
    record_property("check_seconds", round(time.monotonic() - began, 1))
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]

    worker = next(r for r in state.started if r.process.node == "b")
    os.kill(worker.pid, 9)
    killed_at = time.monotonic()
    named = None
    while time.monotonic() - killed_at < 30:
        status = sparkrig("status", str(cluster_file), "--json", timeout=30)
        report = json.loads(status.stdout)
        phases = {row["node"]: row["phase"] for row in report["rows"] if row["name"] == "rpc"}
        if phases.get("b") == "exited":
            named = time.monotonic() - killed_at
            assert status.returncode == 1
            assert report["ready"] is False
            assert "b/rpc" in report["summary"]
            break
        time.sleep(0.5)
    assert named is not None, "status did not name the killed worker within 30 s"
    record_property("worker_named_after_seconds", round(named, 1))

    down = sparkrig("down", str(cluster_file), "--apply")
    assert down.returncode == 0, down.stderr
    assert load_state(name) is None
    for record in state.started:
        assert not _alive(record.pid, record.pid_start_ticks), record.process.key
    again = sparkrig("down", str(cluster_file), "--apply")  # idempotent
    assert again.returncode == 0
    assert "nothing to stop" in again.stdout
