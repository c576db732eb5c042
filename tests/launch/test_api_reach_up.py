"""A start that fails because this machine cannot connect to an API on a cable names the fix.

A real head process on this machine (local executor) listens on its port, as a node's `ss`
sees it; the plan's API URL points where no connection gets through (a closed port here, the
stand-in for a cable address this machine has no route to). Only a plan whose API is on a cable,
and only a failed connection, gets the fix; a stall or a timeout for any other reason keeps its
own message."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.errors import LaunchError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch.cluster_plan import LaunchPlan, NodeAccess
from sparkrig.launch.lifecycle import bring_up, runners_for
from sparkrig.launch.state import load_state
from sparkrig.local_process import free_port

FIX = (
    "set engine.api_address to an address this machine reaches, or give every node a "
    "management address (the API then takes head a's)"
)
LISTEN = (
    "import socket, sys, time\n"
    "s = socket.socket()\n"
    "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
    "s.listen()\n"
    "while True:\n"
    "    if sys.argv[2] == 'ticking':\n"
    "        print('loading', flush=True)\n"
    "    time.sleep(0.2)\n"
)


def _plan(
    tmp_path: Path, *, on_cables: bool, log: str, connect_to_head: bool = False
) -> LaunchPlan:
    port = free_port("127.0.0.1")
    api_port = port if connect_to_head else free_port("127.0.0.1")  # nothing listens there
    head = ProcessSpec(
        node="a",
        role="head",
        name="api",
        argv=[sys.executable, "-c", LISTEN, str(port), log],
        port=port,
        ready_when="health",
    )
    return LaunchPlan(
        cluster=f"reach-{tmp_path.name}",
        engine="vllm",
        backend="mp",
        head="a",
        api_url=f"http://127.0.0.1:{api_port}",
        api_on_cables=on_cables,
        model_name="m",
        processes=[head],
        access=[NodeAccess(node="a", executor=ExecutorSpec(kind="local"), log_dir=str(tmp_path))],
        stall_window_s=1.0,
        ready_timeout_s=2.5,
    )


async def _never(url: str, model: str) -> None:
    raise AssertionError("no completion is asked of a head that never became healthy")


async def _failure(plan: LaunchPlan) -> str:
    with pytest.raises(LaunchError) as failed:
        await bring_up(plan, runners_for(plan), _never, lambda line: None)
    assert load_state(plan.cluster) is None  # stopped and forgotten
    return str(failed.value)


@pytest.mark.parametrize("log", ["silent", "ticking"], ids=["stalled", "timed-out"])
async def test_a_head_on_a_cable_this_machine_cannot_connect_to_names_the_fix(
    tmp_path: Path, log: str
) -> None:
    """Silent: the stall window ends the wait; ticking (its log advances): the outer bound."""
    plan = _plan(tmp_path, on_cables=True, log=log)
    message = await _failure(plan)
    assert message == (
        f"node a: api listens on port {plan.processes[0].port}, but this machine cannot connect "
        f"to {plan.api_url} (Connection refused), a cable address only the cluster's nodes "
        f"reach — {FIX}"
    )


@pytest.mark.parametrize("log", ["silent", "ticking"], ids=["stalled", "timed-out"])
async def test_an_api_off_the_cables_keeps_the_readiness_message(tmp_path: Path, log: str) -> None:
    message = await _failure(_plan(tmp_path, on_cables=False, log=log))
    assert "stalled" in message or "not ready after" in message
    assert "engine.api_address" not in message


async def test_a_head_this_machine_connects_to_keeps_the_readiness_message(tmp_path: Path) -> None:
    """The connection gets through (the listener never answers HTTP): not a reach problem."""
    plan = _plan(tmp_path, on_cables=True, log="silent", connect_to_head=True)
    message = await _failure(plan)
    assert "stalled" in message or "not ready after" in message  # each /health read times out
    assert "engine.api_address" not in message
