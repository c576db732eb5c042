"""`sparkrig check` as a user runs it: bad input is one line and a non-zero exit; a FAIL exits 1
and the receipt and --json say which guard and why."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.launch.local import LocalInstance
from tests.conftest import SPARKRIG


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either a server URL or --local"),
        (("http://127.0.0.1:9", "--quick", "--full"), "--quick and --full contradict"),
        (("http://127.0.0.1:9", "--guard", "exact,nope"), "unknown guard nope — choose from"),
        (("http://127.0.0.1:9",), "127.0.0.1:9"),  # nothing listens there
        # an earlier build's receipt that cannot be compared fails before any engine starts
        (("--local", "--against", "."), "is a directory, not a file"),
        (("--local", "--against", __file__), "is not JSON"),
        (("--local", "--load-concurrency", "1"), "load-concurrency"),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(args: tuple[str, ...], message: str) -> None:
    done = run_cli("check", *args)
    assert done.returncode != 0
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2, done.stderr


@pytest.mark.engine
async def test_a_fail_exits_1_and_json_names_the_guard(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    config = GatewayConfig(faults=[Fault.STREAM_MISMATCH])
    async with running_gateway(llama_server.base_url, config) as url:
        process = await asyncio.create_subprocess_exec(
            SPARKRIG,
            "check",
            url,
            "--guard",
            "stream_parity",
            "--json",
            "--out",
            str(tmp_path / "check.json"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 1, stderr.decode()
    report = json.loads(stdout)
    assert report["results"][0]["guard"] == "stream_parity"
    assert report["results"][0]["verdict"] == "FAIL"
    assert "content" in report["results"][0]["evidence"]
    stored = json.loads((tmp_path / "check.json").read_text())
    assert stored["complete"]
    assert stored["results"] == report["results"]


@pytest.mark.engine
async def test_ctrl_c_keeps_every_finished_guard(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    out = tmp_path / "check.json"
    process = await asyncio.create_subprocess_exec(
        SPARKRIG,
        "check",
        llama_server.base_url,
        "--out",
        str(out),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        for _ in range(600):  # until the first guard is written, at most 60 s
            await asyncio.sleep(0.1)
            if out.exists() and json.loads(out.read_text())["results"]:
                break
        process.send_signal(signal.SIGINT)
        _, stderr = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 130, stderr.decode()
    assert "the receipt keeps every finished guard" in stderr.decode()
    kept = json.loads(out.read_text())
    assert not kept["complete"]
    assert kept["results"][0]["guard"] == "exact"
