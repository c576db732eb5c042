"""A paced replay of a Mooncake-format trace on the real llama-server, through `gateway serve`
(whose workload log is an observer outside the soak: it stamps each request's arrival and
records llama.cpp's `timings.cache_n`, the prompt tokens the server took from its cache).

Three requests at 0, 3 and 6 s of trace time, replayed at --speed 2 (0, 1.5, 3 s): the second
shares its first 64-token block with the first, the third shares nothing. The requests arrive
at their offsets within ARRIVAL_TOLERANCE_S, the soak's own send stamps are within
LATE_TOLERANCE_MS of the schedule, the run ends with the trace (not at --duration), and the
request sharing the prefix reads the shared block from the cache while the one that shares
nothing does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.bench.soak import SoakRun, new_receipt
from sparkrig.bench.soak_pacing import paced_replay
from sparkrig.bench.soak_receipt import save_soak_receipt
from sparkrig.bench.soak_traffic import replay_request, replayed_traffic
from sparkrig.client import EndpointClient
from sparkrig.gateway.serve import running_serving_gateway
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.launch.local import LocalInstance
from sparkrig.wire.trace_import import import_trace
from sparkrig.wire.workload_log import read_workload

pytestmark = [pytest.mark.engine]
MODEL = "m"
BLOCK = 16
# a request reaches the gateway within this of its offset: the client's send, one local hop and
# the gateway's own stamp, on a 2-core machine that runs other tests beside this one
ARRIVAL_TOLERANCE_S = 0.15
# the soak sends within this of the schedule (its own stamp against the offset)
LATE_TOLERANCE_MS = 100.0
TRACE = (  # Mooncake's line format (kvcache-ai/Mooncake FAST25-release), blocks of BLOCK tokens
    '{"timestamp": 0, "input_length": 32, "output_length": 8, "hash_ids": [9001, 9002]}\n'
    '{"timestamp": 3000, "input_length": 32, "output_length": 8, "hash_ids": [9001, 9003]}\n'
    '{"timestamp": 6000, "input_length": 32, "output_length": 8, "hash_ids": [9004, 9005]}\n'
)
# llama.cpp reuses a prefix only from an idle slot, so the first reply must be done before the
# second request arrives: prompts are short (on the 2-core test machine, loaded, prefill ran at
# 5 to 25 ms a token), and one request goes first, as the first prompt of a fresh server is slow
WARM_UP = '{"timestamp": 0, "input_length": 32, "output_length": 8, "hash_ids": [9100, 9101]}\n'


async def test_a_paced_mooncake_replay_sends_on_time_and_reuses_the_shared_prefix(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    trace_path = tmp_path / "trace.jsonl"
    trace_path.write_text(TRACE)
    records = import_trace(trace_path, block_tokens=BLOCK).records
    replay = paced_replay(MODEL, records, speed=2)
    (tmp_path / "warm.jsonl").write_text(WARM_UP)
    warm = import_trace(tmp_path / "warm.jsonl", block_tokens=BLOCK).records[0]
    async with EndpointClient(llama_server.base_url) as client:
        assert (await client.send(replay_request(MODEL, warm, 0).request)).error is None
    log = tmp_path / "gateway.jsonl"
    receipt = new_receipt(
        "", MODEL, "replay (mooncake, paced x2)", concurrency=1, duration_s=60, window_s=60, seed=0
    )
    async with (
        running_serving_gateway(llama_server.base_url, ServeConfig(workload_log=log)) as (url, _),
        EndpointClient(url) as client,
    ):
        run = SoakRun(
            client,
            receipt,
            replayed_traffic(MODEL, records),
            metrics_url=None,
            on_window=lambda r: save_soak_receipt(r, tmp_path / "soak.json"),
            paced=replay,
        )
        done = await run.run()

    assert done.status == "complete", done.problems
    assert (done.lost, done.bad_outputs) == (0, 0), done.problems
    assert done.windows[-1].end_s < 30  # the trace ended the run, not --duration
    pacing = done.pacing
    assert pacing is not None
    assert (pacing.sent, pacing.trace_requests, pacing.trace_span_s) == (3, 3, 3.0)
    assert pacing.offered_per_s == pytest.approx(1 / 1.5)
    assert pacing.late_ms_max is not None
    assert 0 <= pacing.late_ms_max < LATE_TOLERANCE_MS, pacing
    assert done.windows[-1].late_ms_max == pacing.late_ms_max

    seen = sorted(read_workload(log), key=lambda r: r.time)
    assert [r.request_id.split("-")[1] for r in seen] == ["0", "1", "2"]
    arrivals = [r.time - seen[0].time for r in seen]
    assert arrivals == pytest.approx([0, 1.5, 3], abs=ARRIVAL_TOLERANCE_S), arrivals
    first, shared, unrelated = seen
    assert first.e2e_s is not None
    assert first.time + first.e2e_s < shared.time, (
        f"the first reply took {first.e2e_s:.2f} s, still in flight when the second arrived: "
        "the machine is too loaded for the prefix check"
    )
    assert all(r.cached_tokens is not None for r in seen), seen  # llama.cpp reports cache_n
    assert shared.cached_tokens is not None
    assert unrelated.cached_tokens is not None
    print(  # the numbers behind the report: cached prompt tokens per request
        f"prompt/cached tokens: {[(r.prompt_tokens, r.cached_tokens) for r in seen]}; "
        f"arrivals {arrivals}; late {pacing.late_ms_p50:.1f}/{pacing.late_ms_max:.1f} ms"
    )
    # the shared block on top of what every chat prompt shares (the chat template's opening);
    # a boundary token may differ, nothing more
    assert shared.cached_tokens - unrelated.cached_tokens >= BLOCK - 2
