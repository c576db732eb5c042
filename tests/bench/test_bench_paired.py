"""`sparkrig bench URL --paired-with URL_B`: rounds alternate between two servers, both receipts
share a pairing id, and compare judges them on paired rounds. Against the real llama-server."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import aiohttp
import pytest

from sparkrig import defaults
from sparkrig.bench.compare import compare_receipts
from sparkrig.bench.paired import run_paired_bench
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.workloads import DECODE_PROMPTS
from sparkrig.client import EndpointClient
from sparkrig.launch.local import LocalInstance, free_port
from tests.conftest import SPARKRIG

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def sparkrig(*args: str, state: Path) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        SPARKRIG,
        *args,
        env={**os.environ, "SPARKRIG_STATE_DIR": str(state)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), 300)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def round_spans(receipt: BenchReceipt) -> dict[int, tuple[int, int]]:
    """Per round: the first and last output time (perf_counter_ns, one process) of its samples."""
    spans: dict[int, list[int]] = {}
    for point in receipt.points:
        for sample in point.samples:
            for request in sample.requests:
                for ns in (request.first_output_ns, request.last_output_ns):
                    if ns is not None:
                        spans.setdefault(sample.round, []).append(ns)
    return {r: (min(times), max(times)) for r, times in spans.items()}


@pytest.mark.engine
async def test_paired_rounds_alternate_and_compare_judges_them_paired(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """The same server twice: two receipts, one pairing id, rounds A1 < B1 < A2 < B2 in time,
    and compare says 'paired over 2 rounds' and, at a tolerance above the noise, no change."""
    out = tmp_path / "a.json"
    url = llama_server.base_url
    code, stdout, stderr = await sparkrig(
        "bench", url, "--paired-with", url, "--suite", "decode", "--rounds", "2",
        "--tokens", "32", "--out", str(out), "--no-telemetry", state=tmp_path / "state",
    )  # fmt: skip
    assert code == 0, stderr
    a, b = load_receipt(out), load_receipt(tmp_path / "a-paired.json")
    assert a.pairing is not None
    assert a.pairing == b.pairing
    assert a.complete
    assert b.complete
    assert a.settings.max_samples == defaults.BENCH_PAIRED_MAX_SAMPLES
    assert " ".join(stdout.split()).count(f"paired run {a.pairing}") == 3  # 2 tables, 1 hint
    spans_a, spans_b = round_spans(a), round_spans(b)
    assert sorted(spans_a) == sorted(spans_b) == [1, 2]
    assert spans_a[1][1] < spans_b[1][0]
    assert spans_b[1][1] < spans_a[2][0]
    assert spans_a[2][1] < spans_b[2][0]
    # 2 pairs of a 14 ms TTFT: a 95% interval calls about 1 row in 20 of a true null, and these
    # rows move by 20% from request to request, so only a tolerance far above that is stable
    code, stdout, stderr = await sparkrig(
        "compare", str(out), str(tmp_path / "a-paired.json"), "--json", "--tolerance", "50",
        state=tmp_path / "state",
    )  # fmt: skip
    assert code == 0, stdout + stderr
    rows = json.loads(stdout)
    assert {row["paired_rounds"] for row in rows} == {2}
    assert {row["verdict"] for row in rows} == {"same"}
    code, stdout, _ = await sparkrig(
        "compare", str(out), str(tmp_path / "a-paired.json"), state=tmp_path / "state"
    )
    assert "paired over 2 rounds" in " ".join(stdout.split())


@pytest.mark.engine
async def test_an_unreachable_paired_server_fails_in_one_line_before_anything_is_written(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    out = tmp_path / "a.json"
    dead = f"http://{defaults.LOCAL_HOST}:{free_port(defaults.LOCAL_HOST)}"
    code, stdout, stderr = await sparkrig(
        "bench", llama_server.base_url, "--paired-with", dead, "--suite", "decode",
        "--out", str(out), "--no-telemetry", state=tmp_path / "state",
    )  # fmt: skip
    assert code != 0
    lines = [line for line in (stdout + stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "--paired-with" in lines[0]
    assert dead in lines[0]
    assert "Traceback" not in stderr
    assert not out.exists()
    assert not (tmp_path / "a-paired.json").exists()


async def test_paired_receipt_paths_that_would_clash_are_refused(tmp_path: Path) -> None:
    """No server is needed: these are refused before any request."""
    out, state = tmp_path / "a.json", tmp_path / "state"
    url = "http://127.0.0.1:9"
    same = ("bench", url, "--paired-with", url, "--out", str(out), "--paired-out", str(out))
    code, _, stderr = await sparkrig(*same, state=state)
    assert code == 2
    assert "--paired-out" in stderr
    assert "is the --out receipt" in stderr
    (tmp_path / "a-paired.json").write_text("{}")
    code, _, stderr = await sparkrig(
        "bench", url, "--paired-with", url, "--out", str(out), state=state
    )
    assert code == 2
    assert "--paired-out" in stderr
    assert "already exists" in stderr
    assert (tmp_path / "a-paired.json").read_text() == "{}"
    code, _, stderr = await sparkrig("bench", "--local", "--paired-with", url, state=state)
    assert code == 2
    assert "not --local" in stderr
    code, _, stderr = await sparkrig("bench", url, "--paired-out", str(out), state=state)
    assert code == 2
    assert "add --paired-with" in stderr


async def wait_for_health(url: str, process: asyncio.subprocess.Process) -> None:
    async with EndpointClient(url) as client:
        for _ in range(300):  # at most 30 s
            assert process.returncode is None, "gateway serve exited"
            try:
                async with client.session.get(f"{url}/health") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"gateway serve at {url} never answered /health")


@pytest.mark.engine
async def test_a_paired_server_lost_mid_run_keeps_every_finished_round(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """B (a gateway in front of the engine) is killed after round 2: both receipts keep what
    they measured, A goes on, and compare pairs the two rounds both sides have."""
    port = free_port(defaults.LOCAL_HOST)
    gateway = await asyncio.create_subprocess_exec(
        SPARKRIG, "gateway", "serve", llama_server.base_url, "--port", str(port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    url_b = f"http://{defaults.LOCAL_HOST}:{port}"
    done: list[str] = []
    points_a_round = len(DECODE_PROMPTS)

    def point_done(point: PointResult) -> None:
        done.append(point.name)
        if len(done) == 4 * points_a_round and gateway.returncode is None:
            gateway.kill()  # A1 B1 A2 B2 finished

    try:
        await wait_for_health(url_b, gateway)
        a, b = await run_paired_bench(
            llama_server.base_url,
            url_b,
            suites=["decode"],
            # the server lost in round 3 fails its requests: the error-rate ceiling would mark
            # B's points invalid; this test is about the rounds that finished before the loss
            settings=BenchSettings(rounds=3, max_samples=2, decode_tokens=32, max_error_rate=1.0),
            out_path=tmp_path / "a.json",
            paired_out_path=tmp_path / "b.json",
            on_point_done=point_done,
        )
    finally:
        if gateway.returncode is None:
            gateway.kill()
        await gateway.wait()
    assert {s.round for p in a.points for s in p.samples} == {1, 2, 3}
    assert {s.round for p in b.points for s in p.samples} == {1, 2}
    assert b.requests_failed() > 0
    assert load_receipt(tmp_path / "b.json").points == b.points
    assert load_receipt(tmp_path / "a.json").complete
    rows = compare_receipts(a, b, 50)
    assert {row.paired_rounds for row in rows} == {2}
