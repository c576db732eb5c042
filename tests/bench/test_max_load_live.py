"""`sparkrig bench --find-max-load` against a real one-slot llama-server: with one slot, the
k-th of c concurrent requests waits for the k - 1 before it, so TTFT grows with the load and an
SLO of two requests' time splits levels 1..4: c=1 meets it by about two requests, c=4 fails it
by about one."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from sparkrig.bench.receipt import load_receipt
from sparkrig.bench.slo import parse_slo
from sparkrig.client import CompletionRequest, EndpointClient
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import LocalInstance
from tests.conftest import SPARKRIG
from tests.own_server import own_llama_server

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]

# long enough that a stall of a loaded 2-core machine is small against one request (at 8 tokens a
# ~75 ms request let one stall push c=1's TTFT past the limit)
TOKENS = 32
PROMPT_TOKENS = 16


@pytest_asyncio.fixture(loop_scope="session")
async def one_slot_server(
    engine: EngineInstall, bundled_model: Path
) -> AsyncIterator[LocalInstance]:
    async with own_llama_server(engine, bundled_model) as record:
        yield record


async def _one_request_s(base_url: str, alias: str) -> float:
    """Median e2e of a lone request of the bench's shape (warm)."""
    prompt = "Line 1 notes that crate 37 holds 1 apples. " * 2
    request = CompletionRequest(
        model=alias, prompt=prompt, max_tokens=TOKENS, temperature=0.0, extra={"ignore_eos": True}
    )
    async with EndpointClient(base_url) as client:
        times = [(await client.send(request)).e2e_s for _ in range(4)]
    return statistics.median(t for t in times[1:] if t is not None)


async def test_the_search_splits_one_to_four_and_saves_every_probe(
    one_slot_server: LocalInstance, tmp_path: Path
) -> None:
    lone_s = await _one_request_s(one_slot_server.base_url, one_slot_server.alias)
    limit_ms = round(2.0 * lone_s * 1000)  # c=1: ~0 wait, c=2: ~1 request, c=4: ~3 requests
    out = tmp_path / "max-load.json"
    bench = await asyncio.create_subprocess_exec(
        SPARKRIG,
        "bench",
        one_slot_server.base_url,
        "--find-max-load",
        "--slo",
        f"ttft_p99={limit_ms}ms",
        "--concurrency",
        "1,4",
        "--tokens",
        str(TOKENS),
        "--prompt-tokens",
        str(PROMPT_TOKENS),
        "--max-samples",
        "2",
        "--precision",
        "0.9",
        "--out",
        str(out),
        env={**os.environ, "COLUMNS": "250"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(bench.communicate(), timeout=180)
    assert bench.returncode == 0, stderr.decode()
    receipt = load_receipt(out)
    result = receipt.max_load
    assert result is not None, receipt.warnings
    assert result.resolved
    assert result.highest_meeting is not None
    assert result.lowest_failing == result.highest_meeting + 1
    assert 1 <= result.highest_meeting < 4, (lone_s, result)
    probed = [p.load for p in result.probes]
    assert probed[:2] == [1, 4]
    assert [point.load for point in receipt.points] == probed  # every probe saved as a point
    assert all(point.goodput is not None for point in receipt.points)
    shown = stdout.decode()
    assert f"c={result.highest_meeting} meets, c={result.lowest_failing} fails" in shown
    report = await asyncio.create_subprocess_exec(SPARKRIG, "report", str(out))
    assert await asyncio.wait_for(report.wait(), timeout=60) == 0
    page = out.with_suffix(".html").read_text()
    assert "max-load: ttft p99 by load" in page  # the search as a curve, by level
    assert f"limit {parse_slo(f'ttft_p99={limit_ms}ms').label}" in page  # 1050ms shows as 1.05s
    print(
        f"lone request {lone_s * 1000:.0f} ms, SLO {limit_ms} ms: {result.describe()}",
        file=sys.stderr,
    )
