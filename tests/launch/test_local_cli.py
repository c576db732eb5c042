"""`sparkrig up --local / status / logs / down` as a user runs them, on the real llama-server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch.local import LocalInstance, is_running
from sparkrig.launch.state import LaunchState, StartedRecord
from tests.conftest import SPARKRIG

pytestmark = pytest.mark.engine


@pytest.fixture
def cli_env(tmp_path: Path, engine: EngineInstall) -> Iterator[dict[str, str]]:
    """A private state folder per test; whatever the test started is stopped afterwards."""
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(tmp_path / "state")}
    yield env
    subprocess.run([SPARKRIG, "down", "--apply", "--missing-ok"], env=env, check=False)


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error:")
    assert " — " in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    for needle in needles:
        assert needle in lines[0]


def test_up_without_apply_prints_the_plan_and_starts_nothing(cli_env: dict[str, str]) -> None:
    done = run(cli_env, "up", "--local")
    assert done.returncode == 0
    assert "llama-server" in done.stdout
    assert "--apply" in done.stdout
    status = run(cli_env, "status", "--json")
    assert json.loads(status.stdout) == []


def test_up_status_logs_down_round_trip(cli_env: dict[str, str]) -> None:
    first = run(cli_env, "up", "--local", "--apply", "--json")
    assert first.returncode == 0, first.stderr
    started = LocalInstance.model_validate(json.loads(first.stdout))
    second = run(cli_env, "up", "--local", "--apply", "--json")
    assert second.returncode == 0, second.stderr
    other = LocalInstance.model_validate(json.loads(second.stdout))
    assert other.port != started.port  # two ups do not collide
    assert is_running(started)
    assert is_running(other)

    rows = json.loads(run(cli_env, "status", "--json").stdout)
    assert {row["name"] for row in rows} == {started.name, other.name}
    row = next(row for row in rows if row["name"] == started.name)
    assert row["state"] == "running"
    assert row["slots_total"] == 4
    assert row["uptime_s"] >= 0
    # the one record format: a cluster's LaunchState, one process on the local executor
    state_file = Path(cli_env["SPARKRIG_STATE_DIR"]) / "local" / f"{started.name}.json"
    state = LaunchState.model_validate_json(state_file.read_text())
    assert [(r.executor.kind, r.pid) for r in state.started] == [("local", started.pid)]

    os.kill(other.pid, signal.SIGKILL)  # ours: started above, its start time checked
    while is_running(other):
        time.sleep(0.05)
    rows = json.loads(run(cli_env, "status", "--json").stdout)
    assert {row["name"]: row["state"] for row in rows}[other.name] == "exited"

    logs = run(cli_env, "logs", "--name", started.name, "-n", "5")
    assert logs.returncode == 0
    assert logs.stdout.strip()

    plan = run(cli_env, "down")
    assert plan.returncode == 0
    assert is_running(started)  # without --apply nothing is stopped

    stopped = run(cli_env, "down", "--apply")
    assert stopped.returncode == 0
    assert f"{other.name} pid {other.pid}: already stopped" in stopped.stdout
    assert not is_running(started)
    assert not is_running(other)
    assert_one_line_error(run(cli_env, "down", "--apply"), "nothing is running")
    assert run(cli_env, "down", "--apply", "--missing-ok").returncode == 0


def test_down_never_signals_a_process_it_did_not_start(cli_env: dict[str, str]) -> None:
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        record_dir = Path(cli_env["SPARKRIG_STATE_DIR"]) / "local"
        record_dir.mkdir(parents=True)
        # a record whose pid was reused by another process: same pid, other start time
        process = ProcessSpec(
            node="local-1", role="head", name="llama-server", argv=["x"], ready_when="health"
        )
        started = StartedRecord(
            process=process,
            executor=ExecutorSpec(kind="local"),
            pid=stranger.pid,
            pid_start_ticks=1,
            log_path=str(record_dir / "local-1.log"),
            started_at=datetime.now(UTC),
        )
        server = LlamaServerSpec(binary=Path("x"), model=Path("m"), alias="m", port=1)
        forged = LaunchState(
            cluster="local-1",
            api_url="http://127.0.0.1:1",
            model_name="m",
            stall_window_s=1,
            started=[started],
            server=server,
        ).model_dump(mode="json")
        (record_dir / "local-1.json").write_text(json.dumps(forged))
        done = run(cli_env, "down", "--apply")
        assert done.returncode == 0
        assert "already stopped" in done.stdout
        assert stranger.poll() is None  # still alive
    finally:
        stranger.kill()
        stranger.wait()


def test_port_already_in_use_is_a_one_line_error(cli_env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(cli_env, "up", "--local", "--apply", "--port", str(port))
    assert_one_line_error(done, f"port {port}", "--port")


def test_model_that_does_not_exist_or_is_not_gguf(cli_env: dict[str, str], tmp_path: Path) -> None:
    assert_one_line_error(
        run(cli_env, "up", "--local", "--model", str(tmp_path / "missing.gguf")), "does not exist"
    )
    text_file = tmp_path / "notes.gguf"
    text_file.write_text("hello, not a model")
    assert_one_line_error(run(cli_env, "up", "--local", "--model", str(text_file)), "not a GGUF")


def test_engine_binary_missing(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "SPARKRIG_LLAMA_SERVER": str(tmp_path / "no-such-llama-server")}
    assert_one_line_error(run(env, "up", "--local"), "SPARKRIG_LLAMA_SERVER")
    empty_cache = {**cli_env, "SPARKRIG_CACHE_DIR": str(tmp_path / "empty-cache")}
    assert_one_line_error(run(empty_cache, "up", "--local"), "sparkrig engine install")


def test_debug_shows_the_traceback(cli_env: dict[str, str], tmp_path: Path) -> None:
    done = run(cli_env, "--debug", "up", "--local", "--model", str(tmp_path / "missing.gguf"))
    assert done.returncode != 0
    assert "Traceback" in done.stderr
