"""Readiness decisions as pure functions over observed phases, and the node command parsers fed
what the scripts really print (run here through the local executor)."""

from __future__ import annotations

import time
from pathlib import Path

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.launch.executors import LocalExecutor
from sparkrig.launch.node_commands import (
    ProcessObservation,
    observe_script,
    parse_observation,
    parse_started,
    start_script,
    stop_script,
)
from sparkrig.launch.readiness import (
    Phase,
    Progress,
    Sighting,
    assess_startup,
    cluster_readiness,
    phase_of,
    track_progress,
)

WORKER = ProcessSpec(node="b", role="worker", name="rpc", argv=["x"], port=1, ready_when="port")
HEAD = ProcessSpec(node="a", role="head", name="api", argv=["x"], port=2, ready_when="health")


def seen(alive: bool = True, size: int = 10, port: bool | None = False) -> Sighting:
    return Sighting(ProcessObservation(alive=alive, log_bytes=size, port_open=port, tail=["t"]))


def test_phases_follow_what_was_seen() -> None:
    assert phase_of(WORKER, seen(alive=False)) == Phase.EXITED
    assert phase_of(WORKER, seen()) == Phase.STARTING
    assert phase_of(WORKER, seen(port=True)) == Phase.LISTENING
    healthy = Sighting(seen(port=True).observation, healthy=True)
    assert phase_of(HEAD, healthy) == Phase.HEALTHY


def test_waits_while_advancing_and_fails_at_once_on_a_stall() -> None:
    first = track_progress(None, seen(size=10), Phase.STARTING, now=0.0)
    grown = track_progress(first, seen(size=20), Phase.STARTING, now=50.0)
    assert grown.since == 50.0
    same = track_progress(grown, seen(size=20), Phase.STARTING, now=90.0)
    assert same.since == 50.0
    assert (
        assess_startup([(WORKER, Phase.STARTING, same)], now=90.0, stall_window_s=60).state
        == "waiting"
    )
    stalled = assess_startup([(WORKER, Phase.STARTING, same)], now=111.0, stall_window_s=60)
    assert stalled.state == "failed"
    assert stalled.process == WORKER
    assert "stalled" in stalled.reason


def test_a_dead_process_fails_even_when_others_are_ready() -> None:
    progress = Progress(log_bytes=1, phase=Phase.LISTENING, since=0.0)
    readiness = assess_startup(
        [(WORKER, Phase.LISTENING, progress), (HEAD, Phase.EXITED, progress)], 1.0, 60
    )
    assert (readiness.state, readiness.process) == ("failed", HEAD)


def test_an_api_process_only_has_to_be_alive_until_the_end() -> None:
    old = Progress(log_bytes=1, phase=Phase.STARTING, since=0.0)
    watched = [(HEAD, Phase.STARTING, old)]
    assert assess_startup(watched, 1000.0, 60, api_later=True).state == "ready"
    assert assess_startup(watched, 1000.0, 60).state == "failed"


def test_cluster_is_ready_only_with_every_process_health_and_a_completion() -> None:
    alive = {"b/rpc": Phase.LISTENING, "a/api": Phase.HEALTHY}
    assert cluster_readiness(alive, True) == (True, "ready")
    assert not cluster_readiness(alive, None)[0]
    assert not cluster_readiness({**alive, "b/rpc": Phase.EXITED}, True)[0]
    assert "b/rpc" in cluster_readiness({**alive, "b/rpc": Phase.EXITED}, True)[1]
    assert not cluster_readiness({**alive, "a/api": Phase.LISTENING}, True)[0]


def test_start_observe_stop_a_real_process(tmp_path: Path) -> None:
    runner = LocalExecutor()
    log = str(tmp_path / "logs" / "p.log")
    result = runner.run(
        start_script(
            ["sh", "-c", 'echo "$GREETING"; exec sleep 30'], {"GREETING": "hello world"}, log
        )
    )
    started = parse_started(result.stdout)
    assert started.start_ticks > 0
    time.sleep(0.3)
    seen_now = parse_observation(
        runner.run(observe_script(started.pid, started.start_ticks, log, None, 5)).stdout,
        started.start_ticks,
        None,
    )
    assert seen_now.alive
    assert seen_now.tail == ["hello world"]
    assert seen_now.log_bytes == len("hello world\n")
    wrong = parse_observation(
        runner.run(observe_script(started.pid, 1, log, None, 5)).stdout, 1, None
    )
    assert not wrong.alive  # another start time: not the process that was recorded
    assert runner.run(stop_script(started.pid, 1, 1.0)).stdout.strip() == "already stopped"
    stopped = runner.run(stop_script(started.pid, started.start_ticks, 2.0)).stdout.strip()
    assert stopped == "stopped"
    after = parse_observation(
        runner.run(observe_script(started.pid, started.start_ticks, log, None, 5)).stdout,
        started.start_ticks,
        None,
    )
    assert not after.alive
