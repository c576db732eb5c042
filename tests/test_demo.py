"""`sparkrig demo`, the README's main job, end to end on the real engine."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.bench.receipt import load_receipt
from sparkrig.bench.smoke import SmokeReceipt
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import LocalInstance, is_running
from sparkrig.launch.state import LaunchState
from tests.conftest import SPARKRIG
from tests.own_server import stop_recorded_engines

pytestmark = pytest.mark.engine


def test_demo_prints_the_table_writes_the_record_and_stops(
    tmp_path: Path, engine: EngineInstall
) -> None:
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "120"}
    out = tmp_path / "demo.json"
    done = subprocess.run(
        [SPARKRIG, "demo", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "decode tok/s" in done.stdout
    assert "server metrics (llama.cpp" in done.stdout
    assert "bench · " in done.stdout
    assert out.with_name("demo.bench.html").is_file()
    assert "check http://127.0.0.1" in done.stdout  # the quick battery's table
    check = json.loads(out.with_name("demo.check.json").read_text())
    assert check["complete"]
    assert [r["guard"] for r in check["results"]] == [
        "exact",
        "determinism",
        "stream_parity",
        "structured",
        "garble",
        "drift",
        "consistency",
    ]
    assert all(r["verdict"] == "PASS" for r in check["results"]), check["results"]
    assert "report: file://" in done.stdout
    bench = load_receipt(out.with_name("demo.bench.json"))
    assert bench.complete
    assert {point.suite for point in bench.points} == {"decode", "concurrency"}
    receipt = SmokeReceipt.model_validate(json.loads(out.read_text()))
    assert [r.name for r in receipt.results] == ["count", "json", "concurrent1", "concurrent2"]
    for result in receipt.results:
        assert result.record.error is None
        assert result.record.token_source == "per_event_timings"
        assert result.record.decode_tps is not None
    # The count request: the prompt asks for numbers only, counted up from 1; SmolLM2-135M
    # counts "123456789…" without the commas at temperature 0. The reply must be that (digits,
    # in order from 1), and the server's count must be the whole reply: the full budget when it
    # ran out, fewer tokens when it stopped.
    count = receipt.results[0].record
    digits = "".join(ch for ch in count.content if ch.isdigit())
    assert re.fullmatch(r"[\d,\s]+", count.content), count.content
    assert digits.startswith("123456789"), count.content
    if count.finish_reason == "length":
        assert count.completion_tokens == defaults.DEMO_MAX_TOKENS
    else:
        assert count.finish_reason == "stop"
        assert 0 < (count.completion_tokens or 0) < defaults.DEMO_MAX_TOKENS
    assert re.search(r"llama\.cpp \w+ build, repack (on|off)", done.stdout)  # what served
    assert bench.engine_build is not None
    assert bench.engine_build.startswith("llama.cpp ")
    assert check["engine_build"] == bench.engine_build
    page = out.with_name("demo.bench.html").read_text()
    assert f"<dt>engine build</dt><dd>{bench.engine_build}</dd>" in page
    assert receipt.metrics_delta is not None
    assert not list((tmp_path / "state" / "local").glob("*.json"))  # engine stopped, forgotten


def test_demo_stopped_by_sigterm_stops_its_engine(tmp_path: Path, engine: EngineInstall) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(state)}
    demo = subprocess.Popen(
        [SPARKRIG, "demo", "--out", str(tmp_path / "demo.json")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        started = None  # the state is saved before the engine starts, then with its pid
        while started is None and time.monotonic() < deadline:
            for path in (state / "local").glob("*.json"):
                launch = LaunchState.model_validate_json(path.read_text())
                started = LocalInstance.of(launch) if launch.started else None
            time.sleep(0.05)
        assert started is not None, "the demo never recorded its engine"
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=60)
    finally:
        demo.kill()
        demo.wait()
        running_after = started is not None and is_running(started)
        stop_recorded_engines(state)  # what a demo killed here left running
    assert demo.returncode != 0
    assert not running_after
    assert not list((state / "local").glob("*.json"))
