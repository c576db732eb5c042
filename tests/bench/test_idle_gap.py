"""How long the server sat idle before a bench run, from real /metrics captures (vLLM 0.26.0
freshly booted on the H200, tests/fixtures/vllm/metrics_idle.txt; a llama-server's,
tests/fixtures/llamacpp_metrics_spec.txt) and sparkrig's own note of its last run; then the
note and the counter against the real llama-server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkrig.bench.idle_gap import activity_path, idle_gap, idle_warning, note_activity
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.run import run_bench
from sparkrig.client import EndpointClient
from sparkrig.client.metrics import parse_metrics, try_scrape_metrics
from sparkrig.launch.local import LocalInstance

FIXTURES = Path(__file__).parents[1] / "fixtures"
URL = "http://10.0.0.9:8000"
LLAMA_TEXT = (FIXTURES / "llamacpp_metrics_spec.txt").read_text()
VLLM_IDLE = (FIXTURES / "vllm" / "metrics_idle.txt").read_text()
VLLM_STARTED = 1.79615764609e09  # its process_start_time_seconds


@pytest.fixture(autouse=True)
def own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARKRIG_STATE_DIR", str(tmp_path / "state"))


def test_a_fresh_vllm_has_sat_idle_since_it_started_and_is_warned_about() -> None:
    gap = idle_gap(URL, parse_metrics(VLLM_IDLE), now=VLLM_STARTED + 2 * 3600)
    assert gap.fresh
    assert gap.idle_s == pytest.approx(2 * 3600)
    assert gap.over_decay
    warning = idle_warning(gap, warmup_steady=False)
    assert warning is not None
    assert "served nothing since it started" in warning
    assert "--warmup-steady" in warning
    assert idle_warning(gap, warmup_steady=True) is None


def test_unchanged_counters_since_the_last_run_give_the_gap_and_a_warning_past_the_decay() -> None:
    snapshot = parse_metrics(LLAMA_TEXT)
    note_activity(URL, snapshot, now=1_000.0)
    soon = idle_gap(URL, parse_metrics(LLAMA_TEXT), now=1_600.0)
    assert soon.idle_s == pytest.approx(600.0)
    assert soon.over_decay is False
    assert idle_warning(soon, warmup_steady=False) is None
    later = idle_gap(URL, parse_metrics(LLAMA_TEXT), now=1_000.0 + 45 * 60)
    assert later.over_decay
    warning = idle_warning(later, warmup_steady=False)
    assert warning is not None
    assert "idle 45 min" in warning
    assert "past the 30 min" in warning


def test_a_counter_that_moved_or_a_restart_makes_the_gap_unknown() -> None:
    note_activity(URL, parse_metrics(LLAMA_TEXT), now=1_000.0)
    moved = LLAMA_TEXT.replace(
        "llamacpp:tokens_predicted_total 48", "llamacpp:tokens_predicted_total 96"
    )
    gap = idle_gap(URL, parse_metrics(moved), now=9_000.0)
    assert gap.idle_s is None
    assert "generated tokens since" in gap.basis
    assert idle_warning(gap, warmup_steady=False) is None
    busy = VLLM_IDLE.replace(
        'model_name="smollm2-135m-instruct"} 0.0', 'model_name="smollm2-135m-instruct"} 128.0'
    )
    note_activity(URL, parse_metrics(busy), now=1_000.0)
    restarted = busy.replace(
        "process_start_time_seconds 1.79615764609e+09",
        "process_start_time_seconds 1.79615999999e+09",
    )
    assert "restarted" in idle_gap(URL, parse_metrics(restarted), now=9_000.0).basis


def test_no_metrics_or_a_damaged_note_is_not_known_and_never_fails() -> None:
    assert idle_gap(URL, None).idle_s is None
    path = activity_path(URL)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff{not json")
    gap = idle_gap(URL, parse_metrics(LLAMA_TEXT))
    assert gap.idle_s is None
    assert "no earlier sparkrig bench" in gap.basis


@pytest.mark.engine
@pytest.mark.asyncio(loop_scope="session")
async def test_a_bench_leaves_a_note_that_the_next_run_reads_back(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    settings = BenchSettings(max_samples=2, min_samples=2, decode_tokens=8, rounds=1)
    await run_bench(
        llama_server.base_url,
        suites=["decode"],
        settings=settings.model_copy(update={"precision": 0.9}),
        out_path=tmp_path / "first.json",
    )
    assert activity_path(llama_server.base_url).is_file(), os.environ["SPARKRIG_STATE_DIR"]
    async with EndpointClient(llama_server.base_url) as client:
        snapshot = await try_scrape_metrics(client)
    gap = idle_gap(llama_server.base_url, snapshot)
    assert gap.idle_s is not None, gap.basis  # no token generated since the run ended
    assert gap.idle_s < 60
    assert gap.basis == "no tokens generated since sparkrig's last bench ended"
