"""`sparkrig soak` on the real llama-server: windows with figures and a receipt after each, a bad
output named by its request id, a recorded workload replayed, a broken workload file refused with
its line number, and an upstream that dies mid-run (finished windows kept, the time it went)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkrig.bench.soak import SoakRun, new_receipt
from sparkrig.bench.soak_receipt import SoakReceipt, load_soak_receipt, save_soak_receipt
from sparkrig.bench.soak_traffic import KINDS, PlannedRequest, mixed_traffic, replayed_traffic
from sparkrig.cli.receipt_files import load_any_receipt, write_soak_report
from sparkrig.client import EndpointClient
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.launch.local import LocalInstance
from sparkrig.wire.workload_log import read_workload
from tests.conftest import SPARKRIG
from tests.own_server import own_llama_server

pytestmark = [pytest.mark.engine]  # async tests run on the session loop (pyproject.toml)
MODEL = "m"


async def soak(
    url: str,
    path: Path,
    *,
    duration_s: float,
    window_s: float,
    traffic: str = "mixed",
    records_from: Path | None = None,
    concurrency: int = 2,
) -> SoakReceipt:
    receipt = new_receipt(
        url,
        MODEL,
        traffic,
        concurrency=concurrency,
        duration_s=duration_s,
        window_s=window_s,
        seed=0,
    )
    saves: list[int] = []

    def saved(current: SoakReceipt) -> None:
        save_soak_receipt(current, path)
        write_soak_report(path, current)
        saves.append(len(current.windows))

    source = (
        replayed_traffic(MODEL, read_workload(records_from))
        if records_from
        else mixed_traffic(MODEL)
    )
    async with EndpointClient(url) as client:
        run = SoakRun(
            client, receipt, source, metrics_url=f"{client.base_url}/metrics", on_window=saved
        )
        done = await run.run()
    assert saves == sorted(saves)  # the receipt was written as windows closed
    assert saves[0] >= 1
    return done


async def test_a_clean_soak_reports_every_window(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    path = tmp_path / "soak.json"
    done = await soak(llama_server.base_url, path, duration_s=8, window_s=4)
    assert done.status == "complete"
    assert len(done.windows) == 2
    assert (done.lost, done.bad_outputs) == (0, 0), done.problems
    assert sum(w.requests for w in done.windows) >= 2
    assert all(w.restarts == 0 for w in done.windows)
    assert any(w.aggregate_tps for w in done.windows)
    assert load_soak_receipt(path) == done
    assert load_any_receipt(path) == done  # `sparkrig report` opens it too
    page = path.with_suffix(".html").read_text()
    assert "tok/s per window" in page
    assert "<svg" in page


async def test_an_idle_gap_between_windows_shows_its_first_ttft(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    receipt_path = tmp_path / "soak.json"
    receipt = new_receipt(
        llama_server.base_url,
        MODEL,
        "mixed",
        concurrency=1,
        duration_s=7,
        window_s=2,
        seed=0,
        idle_gap_s=2,
    )
    async with EndpointClient(llama_server.base_url) as client:
        run = SoakRun(
            client,
            receipt,
            mixed_traffic(MODEL),
            metrics_url=None,
            on_window=lambda r: save_soak_receipt(r, receipt_path),
        )
        done = await run.run()
    first, second = done.windows[:2]
    assert first.idle_before_s is None
    assert second.idle_before_s == 2
    assert second.start_s >= first.end_s + 2
    assert second.first_ttft_s is not None
    assert all(w.restarts is None for w in done.windows)  # no /metrics asked: unknown, not 0


async def test_staggered_streams_join_one_gap_apart(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """soak --stagger: the closed loop's stream k sends its first request k gaps in."""
    receipt = new_receipt(
        llama_server.base_url,
        MODEL,
        "mixed",
        concurrency=3,
        duration_s=3,
        window_s=3,
        seed=0,
        stagger_s=1.0,
    )
    sent_at: list[float] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    def timed() -> Iterator[PlannedRequest]:
        for planned in mixed_traffic(MODEL):
            sent_at.append(loop.time() - start)  # the next request is taken as it is sent
            yield planned

    async with EndpointClient(llama_server.base_url) as client:
        run = SoakRun(
            client,
            receipt,
            timed(),
            metrics_url=None,
            on_window=lambda r: save_soak_receipt(r, tmp_path / "soak.json"),
        )
        done = await run.run()
    assert done.stagger_s == 1.0
    assert (done.lost, done.bad_outputs) == (0, 0), done.problems
    # one stream at the start (all three would send at once without the stagger), and a send
    # as each of the others joins, 1 s and 2 s in
    assert len([t for t in sent_at if t < 0.3]) == 1, sent_at
    assert min(abs(t - 1.0) for t in sent_at) < 0.3, sent_at
    assert min(abs(t - 2.0) for t in sent_at) < 0.3, sent_at


async def test_bad_outputs_are_named_by_request_id(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    async with running_gateway(
        llama_server.base_url, GatewayConfig(faults=[Fault.MARKUP_LEAK])
    ) as (faulty):
        done = await soak(faulty, tmp_path / "soak.json", duration_s=4, window_s=4)
    bad = [p for p in done.problems if p.kind == "bad_output"]
    assert bad
    assert all(p.request_id.startswith("soak-0-") for p in bad)
    assert any("markup_leak" in p.message for p in bad)
    assert done.windows[0].bad_outputs == len({p.request_id for p in bad})


async def test_requests_the_gateway_drops_are_counted_as_lost(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    """drop-requests closes every 4th connection with no reply: each is one lost request, named
    by its id, and the run still completes (the successes between drops keep the upstream up)."""
    async with running_gateway(
        llama_server.base_url, GatewayConfig(faults=[Fault.DROP_REQUESTS])
    ) as (faulty):
        done = await soak(faulty, tmp_path / "soak.json", duration_s=6, window_s=3)
    sent = sum(w.requests for w in done.windows)
    lost = [p for p in done.problems if p.kind == "lost"]
    assert done.status == "complete", done.upstream_lost_message
    assert sent >= 4
    assert done.lost == len(lost) == sum(w.errors for w in done.windows) == sent // 4
    # arrivals 3, 7, 11 ... are dropped: which request ids they were depends on the workers'
    # race, but every one is a soak request and says the connection went
    assert all(p.request_id.startswith("soak-0-") for p in lost)
    saved = json.loads((tmp_path / "soak.json").read_text())
    assert len([p for p in saved["problems"] if p["kind"] == "lost"]) == done.lost


async def test_a_recorded_workload_is_replayed(llama_server: LocalInstance, tmp_path: Path) -> None:
    log = tmp_path / "workload.jsonl"
    async with running_serving_gateway(llama_server.base_url, ServeConfig(workload_log=log)) as (
        url,
        _,
    ):
        await soak(url, tmp_path / "first.json", duration_s=3, window_s=3)
    recorded = read_workload(log)
    assert recorded
    assert {r.params.get("max_tokens") for r in recorded}
    done = await soak(
        llama_server.base_url,
        tmp_path / "replay.json",
        duration_s=3,
        window_s=3,
        traffic=f"replay {log}",
        records_from=log,
    )
    assert done.windows[0].kinds.get("replay")
    assert (done.lost, done.bad_outputs) == (0, 0), done.problems


def test_mixed_traffic_covers_every_kind() -> None:
    source = mixed_traffic(MODEL)
    kinds = {next(source).kind for _ in range(10)}
    assert kinds == set(KINDS)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "line 1: empty"),
        (
            '{"request_id": "a", "time": 1, "api": "chat", "status": 200}\n{"request_id": ',
            "line 2 is not a workload record",
        ),
        (
            '{"request_id": "a", "time": 1, "api": "chat", "status": 200}\n\n{"api": "chat"}\n',
            "line 3 is not a workload record",
        ),
    ],
)
def test_a_corrupt_or_empty_workload_is_refused_with_its_line(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "workload.jsonl"
    path.write_text(content)
    result = subprocess.run(
        [SPARKRIG, "soak", "http://127.0.0.1:9", "--replay", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


async def test_an_upstream_dying_mid_run_keeps_finished_windows_and_says_when(
    engine: EngineInstall, bundled_model: Path, tmp_path: Path
) -> None:
    path = tmp_path / "soak.json"
    async with own_llama_server(engine, bundled_model) as record:

        async def kill_later() -> float:
            await asyncio.sleep(5)
            os.kill(record.pid, signal.SIGKILL)
            return 5.0

        killer = asyncio.create_task(kill_later())
        done = await soak(record.base_url, path, duration_s=60, window_s=2)
        await killer
    assert done.status == "upstream_lost"
    assert done.upstream_lost_at_s is not None
    assert 3 < done.upstream_lost_at_s < 15
    finished = [w for w in done.windows if not w.partial]
    assert finished
    assert sum(w.requests for w in finished) >= 1
    assert done.windows[-1].partial
    saved = json.loads(path.read_text())
    assert saved["status"] == "upstream_lost"
    assert saved["upstream_lost_at_s"] == done.upstream_lost_at_s
