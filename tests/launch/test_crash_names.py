"""A launch whose process dies by a signal says which signal, what it means and the fix —
locally and on a cluster node — never `code -4`."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparkrig.client.first_completion import answer_one_completion
from sparkrig.config import Cluster, load_cluster
from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.errors import LaunchError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch.cluster_plan import plan_launch
from sparkrig.launch.executors import LocalExecutor
from sparkrig.launch.lifecycle import _died_message
from sparkrig.launch.local import free_port, plan_local, start_local
from sparkrig.launch.node_commands import observe_script, parse_observation, parse_started
from sparkrig.launch.node_commands import start_script as node_start_script
from sparkrig.launch.state import StartedRecord, load_local_states
from tests.engines.fake_engines import write_fake

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"


async def test_a_local_engine_killed_by_sigill_is_named_with_the_fix(
    tmp_path: Path, bundled_model: Path
) -> None:
    server = LlamaServerSpec(
        binary=write_fake(tmp_path / "bin", "sigill"),
        model=bundled_model,
        alias="m",
        port=free_port("127.0.0.1"),
    )
    with pytest.raises(LaunchError) as raised:
        await start_local(plan_local(server, port_was_chosen=True), answer_one_completion)
    message = str(raised.value)
    assert message.startswith("llama-server killed by SIGILL (illegal instruction")
    assert "sparkrig engine install --portable" in message
    assert "code -4" not in message
    assert "\n" not in message
    assert not [
        s for s in load_local_states() if s.api_url.endswith(f":{server.port}")
    ]  # forgotten


def test_a_cluster_node_process_killed_by_sigill_is_named(tmp_path: Path) -> None:
    runner = LocalExecutor()
    log = str(tmp_path / "logs" / "rpc.log")
    fake = write_fake(tmp_path / "bin", "sigill")
    started = parse_started(runner.run(node_start_script([str(fake)], {"A": "1"}, log)).stdout)
    seen = None
    for _ in range(50):
        seen = parse_observation(
            runner.run(observe_script(started.pid, started.start_ticks, log, None, 3)).stdout,
            started.start_ticks,
            None,
        )
        if not seen.alive and seen.exit_status is not None:
            break
        time.sleep(0.1)
    assert seen is not None
    assert not seen.alive
    assert seen.ended is not None
    assert seen.ended.signal_name == "SIGILL"
    process = ProcessSpec(
        node="b",
        role="worker",
        name="ggml-rpc-server",
        argv=[str(fake)],
        port=50052,
        ready_when="port",
    )
    record = StartedRecord(
        process=process,
        executor=ExecutorSpec(kind="local"),
        pid=started.pid,
        pid_start_ticks=started.start_ticks,
        log_path=log,
        started_at=datetime.now(UTC),
    )
    message = _died_message(process, "exited", seen, record)
    assert message.startswith("node b: ggml-rpc-server killed by SIGILL (illegal instruction")
    assert "sparkrig engine install --portable" in message
    assert "CPU_REPACK" in message  # the log tail


def test_a_cluster_node_process_that_exits_keeps_its_status(tmp_path: Path) -> None:
    runner = LocalExecutor()
    log = str(tmp_path / "p.log")
    started = parse_started(runner.run(node_start_script(["sh", "-c", "exit 3"], {}, log)).stdout)
    time.sleep(0.5)
    seen = parse_observation(
        runner.run(observe_script(started.pid, started.start_ticks, log, None, 3)).stdout,
        started.start_ticks,
        None,
    )
    assert seen.ended is not None
    assert seen.ended.describe() == "exited with status 3"


def test_an_embedded_build_that_needs_no_repack_gets_it_on_the_cluster_head() -> None:
    """The self-test's --no-repack reaches the llama.cpp head when the cluster uses the embedded
    build, and not when the cluster file names its own binary."""
    named = load_cluster(EXAMPLES / "triangle-llamacpp.toml")  # names /opt/llama.cpp binaries
    assert named.engine is not None
    embedded = named.model_copy(
        update={"engine": named.engine.model_copy(update={"binary": None, "rpc_binary": None})}
    )

    def argvs(cluster: Cluster) -> dict[str, list[list[str]]]:
        plan = plan_launch(
            cluster,
            local_state_dir=Path("/state"),
            require_executors=False,
            default_binaries=("/b/llama-server", "/b/rpc"),
            default_server_args=("--no-repack",),
            bundled_model=Path("/m.gguf"),
        )
        found: dict[str, list[list[str]]] = {}
        for process in plan.processes:
            found.setdefault(process.role, []).append(process.argv)
        return found

    used = argvs(embedded)
    assert "--no-repack" in used["head"][0]
    assert used["head"][0][0] == "/b/llama-server"
    assert all("--no-repack" not in argv for argv in used["worker"])
    assert all("--no-repack" not in argv for argvs_ in argvs(named).values() for argv in argvs_)
