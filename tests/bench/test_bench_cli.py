"""`sparkrig bench` as a user runs it: Ctrl-C keeps what was measured and stops the engine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sparkrig.bench.receipt import load_receipt
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import LocalInstance, is_running
from sparkrig.launch.state import LaunchState
from tests.conftest import SPARKRIG
from tests.own_server import stop_recorded_engines

pytestmark = pytest.mark.engine


def test_ctrl_c_keeps_the_finished_samples_and_stops_the_engine(
    tmp_path: Path, engine: EngineInstall
) -> None:
    state, out = tmp_path / "state", tmp_path / "bench.json"
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(state)}
    bench = subprocess.Popen(
        [SPARKRIG, "bench", "--local", "--out", str(out), "--tokens", "32"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if out.exists() and any(p["samples"] for p in json.loads(out.read_text())["points"]):
                break
            time.sleep(0.1)
        records = list((state / "local").glob("*.json"))
        started = LocalInstance.of(LaunchState.model_validate_json(records[0].read_text()))
        bench.send_signal(signal.SIGINT)
        _, stderr = bench.communicate(timeout=60)
    finally:
        bench.kill()
        bench.wait()
        stop_recorded_engines(state)  # what a bench killed here left running
    assert bench.returncode != 0
    assert b"receipt keeps every finished sample" in stderr
    receipt = load_receipt(out)
    assert not receipt.complete
    assert receipt.points[0].samples
    assert not is_running(started)


def test_local_bench_gives_the_spec_suite_its_own_engine(
    tmp_path: Path, engine: EngineInstall
) -> None:
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(tmp_path / "state")}
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [
            SPARKRIG,
            "bench",
            "--local",
            "--suite",
            "decode,spec",
            "--max-samples",
            "2",
            "--rounds",
            "1",
            "--tokens",
            "32",
            "--precision",
            "0.5",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    receipt = load_receipt(out)
    assert receipt.complete
    assert receipt.suites == ["decode", "spec"]
    decode = [point for point in receipt.points if point.suite == "decode"]
    spec = [point for point in receipt.points if point.suite == "spec"]
    assert decode
    assert all(point.spec is None for point in decode)  # no speculation in the decode figures
    assert spec
    assert all(point.spec is not None for point in spec)
    assert any("second embedded engine" in warning for warning in receipt.warnings)
    assert not list((tmp_path / "state" / "local").glob("*.json"))  # both engines stopped
