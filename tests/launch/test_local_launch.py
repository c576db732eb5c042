"""A local server goes the cluster's way: one-node plan, the one readiness rule (alive, /health,
one real completion), the one state record, forgotten and stopped when it never gets ready.

The engines here are the fakes of tests/engines/fake_engines.py, real executables that behave
like an engine stuck at start or one whose completions are empty."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.errors import LaunchError
from sparkrig.launch.local import free_port, plan_local, start_local
from sparkrig.launch.state import load_local_states, process_start_ticks
from tests.engines.fake_engines import write_fake


def fake_server(tmp_path: Path, kind: str, model: Path) -> LlamaServerSpec:
    return LlamaServerSpec(
        binary=write_fake(tmp_path / "bin", kind),
        model=model,
        alias="m",
        port=free_port("127.0.0.1"),
    )


def test_a_local_plan_is_one_node_on_the_local_executor(
    tmp_path: Path, bundled_model: Path
) -> None:
    server = fake_server(tmp_path, "hangs", bundled_model)
    plan = plan_local(server, port_was_chosen=True, engine_build="b")
    assert [p.key for p in plan.processes] == [f"local-{server.port}/llama-server"]
    assert plan.processes[0].ready_when == "health"
    assert [a.executor.kind for a in plan.access] == ["local"]
    assert plan.api_url == f"http://127.0.0.1:{server.port}"


async def test_an_engine_stuck_at_start_times_out_is_stopped_and_forgotten(
    tmp_path: Path, bundled_model: Path
) -> None:
    server = fake_server(tmp_path, "hangs", bundled_model)
    plan = plan_local(server, port_was_chosen=True, ready_timeout_s=1.0)
    with pytest.raises(LaunchError) as raised:
        await start_local(plan, answer_one_completion)
    assert "--ready-timeout" in str(raised.value)  # the local fix, not the cluster file's key
    pid = int((tmp_path / "bin" / "llama-server.pid").read_text())
    for _ in range(50):  # the stop is synchronous; the kernel may take a moment to reap
        if process_start_ticks(pid) is None:
            break
        await asyncio.sleep(0.1)
    assert process_start_ticks(pid) is None
    assert plan.cluster not in {state.cluster for state in load_local_states()}


async def test_healthy_without_a_completion_is_not_ready(
    tmp_path: Path, bundled_model: Path
) -> None:
    server = fake_server(tmp_path, "mute", bundled_model)
    plan = plan_local(server, port_was_chosen=True, ready_timeout_s=60.0)
    with pytest.raises(LaunchError):
        await start_local(plan, answer_one_completion)
    assert plan.cluster not in {state.cluster for state in load_local_states()}
