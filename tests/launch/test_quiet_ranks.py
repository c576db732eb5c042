"""A live rank's quiet log, judged by its node's GPU: the reading of nvidia-smi's query (pure, on
lines in the format of its capture on the H200 host), the verdict (pure), the script run for
real on this machine (which has no nvidia-smi, or the stand-in of tests/launch/fake_gpu on PATH),
and the log's quiet seconds read by the real observe script from a file's mtime."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sparkrig.fabric.runner import CommandResult, ExecutorSpec
from sparkrig.launch.executors import LocalExecutor
from sparkrig.launch.node_commands import observe_script, parse_observation
from sparkrig.launch.quiet_ranks import (
    GPU_SCRIPT,
    GpuReading,
    gpu_reading,
    quiet_verdict,
    read_gpus,
)

FAKE_GPU = Path(__file__).parent / "fake_gpu"


def result(stdout: str, returncode: int = 0, stderr: str = "") -> CommandResult:
    return CommandResult(argv=GPU_SCRIPT, returncode=returncode, stdout=stdout, stderr=stderr)


def test_gpu_reading_takes_the_busiest_gpu_of_the_query() -> None:
    # the first and sixth columns of the H200 capture's line (0, 345, 3201, 99.13, 38, 0, 0x..1)
    assert gpu_reading("b", result("0, 0\n")).busy_percent == 0
    two = gpu_reading("b", result("0, 12\n1, 96\n"))
    assert (two.busy_percent, two.note) == (96, "GPU 96% busy on node b")


@pytest.mark.parametrize(
    ("reading", "note"),
    [
        (result("no nvidia-smi\n"), "GPU not read: no nvidia-smi on node b"),
        (
            result("NVIDIA-SMI has failed because it couldn't communicate with the driver\n", 9),
            "GPU not read: nvidia-smi on b: NVIDIA-SMI has failed",
        ),
        (result("0, [N/A]\n"), "GPU not read: nvidia-smi on b: 0, [N/A]"),
    ],
)
def test_gpu_not_read_is_said_never_taken_for_idle(reading: CommandResult, note: str) -> None:
    gpu = gpu_reading("b", reading)
    assert gpu.busy_percent is None
    assert gpu.note.startswith(note)


def test_verdict_suspect_only_over_a_busy_gpu() -> None:
    busy = GpuReading(busy_percent=96, note="GPU 96% busy on node b")
    suspect = quiet_verdict("b/vllm", "b", 41, 600, busy)
    assert suspect.verdict == "suspect"
    assert "b/vllm: log quiet for 600 s while its process lives" in suspect.message
    assert "`py-spy dump --pid 41` on node b" in suspect.message
    idle = quiet_verdict("b/vllm", "b", 41, 600, GpuReading(busy_percent=3, note="GPU 3%"))
    assert idle.verdict == "idle"
    unread = GpuReading(busy_percent=None, note="GPU not read: no nvidia-smi on node b")
    unknown = quiet_verdict("b/vllm", "b", 41, 600, unread)
    assert unknown.verdict == "unknown"
    assert "GPU not read" in unknown.message
    assert "cannot be told apart" in unknown.message


async def test_gpu_script_runs_for_real_with_and_without_nvidia_smi(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    local = {"here": ExecutorSpec(kind="local")}
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # this machine: no nvidia-smi
    assert (await read_gpus(local))["here"].note == "GPU not read: no nvidia-smi on node here"
    monkeypatch.setenv("PATH", f"{FAKE_GPU}:/usr/bin:/bin")
    assert (await read_gpus(local))["here"].busy_percent == 0  # not in a namespace: idle


def test_observe_reads_how_long_the_log_has_been_quiet(tmp_path: Path) -> None:
    log = tmp_path / "rank.log"
    log.write_text("(Worker pid=1) INFO 12-01 20:42:04 [model_runner.py:284] Loading model\n")
    os.utime(log, (time.time() - 90, time.time() - 90))
    pid = os.getpid()
    seen = parse_observation(
        LocalExecutor().run(observe_script(pid, 0, str(log), None, 3)).stdout, 0, None
    )
    assert seen.log_quiet_s is not None
    assert 89 <= seen.log_quiet_s <= 92
    missing = LocalExecutor().run(observe_script(pid, 0, str(tmp_path / "none"), None, 3))
    assert parse_observation(missing.stdout, 0, None).log_quiet_s is None
