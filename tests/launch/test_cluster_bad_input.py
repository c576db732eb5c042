"""Bad input to `sparkrig up/status/down CLUSTER.toml`, each run as a user runs it (the real
CLI in a subprocess): a one-line `what — fix` error, a non-zero exit, no traceback, and nothing
left running. Nodes are this machine (local executor) unless the case is about another one."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from sparkrig.launch.state import load_state, process_start_ticks
from tests.conftest import SPARKRIG

PAIR_NODES = """cables = ["a.p0 <-> b.p1"]
[[nodes]]
name = "a"
{a_executor}
[[nodes]]
name = "b"
{b_executor}
"""


def cluster_text(
    name: str,
    engine: str = "",
    a_executor: str = 'executor = { kind = "local" }',
    b_executor: str = 'executor = { kind = "local" }',
    kind: str = "llamacpp",
) -> str:
    nodes = PAIR_NODES.format(a_executor=a_executor, b_executor=b_executor)
    return (
        f'name = "{name}"\n{nodes}\n[engine]\nkind = "{kind}"\nstall_window_s = 3\n{engine}\n'
        '[model]\npath = "bundled"\n'
    )


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr, result.stderr
    message = "error:" + result.stderr.rsplit("error:", 1)[1]  # after any progress lines
    assert " — " in message, message
    joined = " ".join(message.split())  # rich may wrap; the message itself is one line
    for needle in needles:
        assert needle in joined, (needle, joined)
    return joined


def fake_engine(tmp_path: Path, name: str, body: str) -> Path:
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


@pytest.fixture(name="cluster_file")
def _cluster_file(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    return tmp_path / f"{request.node.name.replace('_', '-')[:40]}.toml"


def test_unknown_engine_names_the_line_and_the_choices(cluster_file: Path) -> None:
    cluster_file.write_text(cluster_text("bad-engine", kind="sglang"))
    message = assert_one_line_error(run("up", str(cluster_file)), "engine.kind", "'vllm'")
    line = cluster_file.read_text().splitlines().index('kind = "sglang"') + 1
    assert f"line {line}" in message
    assert "Traceback" in run("--debug", "up", str(cluster_file)).stderr  # only with --debug


def test_node_without_executor_is_named(cluster_file: Path) -> None:
    cluster_file.write_text(cluster_text("no-executor", b_executor=""))
    assert_one_line_error(run("up", str(cluster_file)), "node b has no executor", "[executor]")


def test_ssh_unreachable_fails_fast_with_a_clear_message(cluster_file: Path) -> None:
    unreachable = (
        'executor = { kind = "ssh", target = "ssh://nobody@127.0.0.1:9", connect_timeout_s = 2 }'
    )
    cluster_file.write_text(cluster_text("no-ssh", b_executor=unreachable))
    began = time.monotonic()
    result = run("up", str(cluster_file), "--apply", timeout=60)
    assert time.monotonic() - began < 30  # bounded connect timeout: no hang
    assert_one_line_error(result, "ssh to ssh://nobody@127.0.0.1:9 failed", "check the host")
    assert load_state("no-ssh") is None


def test_engine_binary_missing_on_a_node(cluster_file: Path, engine: object) -> None:
    cluster_file.write_text(
        cluster_text("no-binary", engine='rpc_binary = "/opt/nowhere/ggml-rpc-server"')
    )
    assert_one_line_error(
        run("up", str(cluster_file), "--apply"),
        "/opt/nowhere/ggml-rpc-server is not installed on node b",
        "engine.rpc_binary",
    )


def test_port_in_use_is_named_before_anything_starts(cluster_file: Path, engine: object) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cluster_file.write_text(cluster_text("port-used", engine=f"port = {port}"))
        assert_one_line_error(
            run("up", str(cluster_file), "--apply"), f"port {port} on node a", "engine.port"
        )
    assert load_state("port-used") is None


def test_worker_that_exits_at_once_is_named_with_its_log_tail(
    cluster_file: Path, tmp_path: Path, engine: object
) -> None:
    worker = fake_engine(tmp_path, "rpc-dies", 'echo "rpc: cannot open device CUDA0"; exit 3')
    cluster_file.write_text(cluster_text("dies", engine=f'rpc_binary = "{worker}"'))
    assert_one_line_error(
        run("up", str(cluster_file), "--apply"),
        "node b: rpc exited with status 3 before the cluster was ready",
        "rpc: cannot open device CUDA0",
    )
    assert load_state("dies") is None  # nothing recorded, nothing left


def test_worker_that_stops_advancing_is_named_as_stalled(
    cluster_file: Path, tmp_path: Path, engine: object
) -> None:
    worker = fake_engine(tmp_path, "rpc-hangs", 'echo "rpc: waiting for device"; exec sleep 60')
    cluster_file.write_text(cluster_text("hangs", engine=f'rpc_binary = "{worker}"'))
    began = time.monotonic()
    message = assert_one_line_error(
        run("up", str(cluster_file), "--apply"), "node b: rpc stalled", "rpc: waiting for device"
    )
    assert "stall window 3 s" in message
    assert time.monotonic() - began < 30


def test_down_on_a_half_up_cluster_stops_what_was_recorded(
    cluster_file: Path, tmp_path: Path, engine: object
) -> None:
    """`up` killed after the worker started: the record holds one of two processes."""
    worker = fake_engine(tmp_path, "rpc-slow", 'echo "rpc: loading"; exec sleep 120')
    cluster_file.write_text(
        cluster_text("half", engine=f'rpc_binary = "{worker}"').replace(
            "stall_window_s = 3", "stall_window_s = 120"
        )
    )
    up = subprocess.Popen(
        [SPARKRIG, "up", str(cluster_file), "--apply"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = load_state("half")
            if state is not None and state.started:
                break
            time.sleep(0.2)
        else:
            pytest.fail("up never recorded the worker")
    finally:
        up.send_signal(signal.SIGKILL)
        up.wait()
    record = state.started[0]
    assert process_start_ticks(record.pid) == record.pid_start_ticks  # the worker outlived up

    status = run("status", str(cluster_file), "--json")
    assert status.returncode == 1
    report = json.loads(status.stdout)
    assert report["ready"] is False
    assert {row["phase"] for row in report["rows"]} >= {"not started"}

    down = run("down", str(cluster_file), "--apply")
    assert down.returncode == 0, down.stderr
    assert "b/rpc" in down.stdout
    assert process_start_ticks(record.pid) != record.pid_start_ticks
    assert load_state("half") is None
    assert "nothing to stop" in run("down", str(cluster_file), "--apply").stdout


def test_down_never_signals_a_pid_it_did_not_start(cluster_file: Path, tmp_path: Path) -> None:
    """A recorded pid now used by another process (another start time) is left alone."""
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        cluster_file.write_text(cluster_text("stranger"))
        state_dir = Path(os.environ["SPARKRIG_STATE_DIR"]) / "clusters"
        state_dir.mkdir(parents=True, exist_ok=True)
        (state_dir / "stranger.json").write_text(
            json.dumps(
                {
                    "cluster": "stranger",
                    "api_url": "http://127.0.0.1:1",
                    "model_name": "m",
                    "stall_window_s": 1,
                    "planned": ["b/rpc"],
                    "started": [
                        {
                            "process": {
                                "node": "b",
                                "role": "worker",
                                "name": "rpc",
                                "argv": ["sleep"],
                                "ready_when": "port",
                            },
                            "executor": {"kind": "local"},
                            "pid": stranger.pid,
                            "pid_start_ticks": 1,
                            "log_path": str(tmp_path / "x.log"),
                            "started_at": "2026-01-01T00:00:00Z",
                        }
                    ],
                }
            )
        )
        down = run("down", str(cluster_file), "--apply")
        assert down.returncode == 0
        assert "already stopped" in down.stdout
        assert stranger.poll() is None  # still running
    finally:
        stranger.kill()
        stranger.wait()
