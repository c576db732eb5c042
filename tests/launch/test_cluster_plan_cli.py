"""`sparkrig up CLUSTER.toml` without --apply: the plan, as text and JSON, for each engine, and
its warning when the API lands on a cable this machine has no route to."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkrig.cli import app
from tests.conftest import SPARKRIG

EXAMPLES = Path(__file__).parents[2] / "examples"


def _up(*args: str) -> str:
    result = CliRunner().invoke(app, ["up", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_plan_lists_workers_first_and_starts_nothing() -> None:
    text = _up(str(EXAMPLES / "pair-vllm.toml"))
    assert text.index("1. spark2 (worker") < text.index("2. spark1 (head")
    assert "--headless" in text
    assert "nothing started — add --apply" in text


def test_profile_option_picks_a_named_profile() -> None:
    plan = json.loads(_up(str(EXAMPLES / "pair-vllm.toml"), "--profile", "concurrency", "--json"))
    assert plan["applied"] is False
    head = plan["processes"][-1]["argv"]
    assert head[head.index("--max-model-len") + 1] == "200000"
    assert head[head.index("--max-cudagraph-capture-size") + 1] == str(16 * 6)


def test_llamacpp_plan_points_the_head_at_every_worker() -> None:
    plan = json.loads(_up(str(EXAMPLES / "triangle-llamacpp.toml"), "--json"))
    names = [(p["node"], p["name"]) for p in plan["processes"]]
    assert names == [("b", "rpc"), ("c", "rpc"), ("a", "llama-server")]
    head = plan["processes"][-1]["argv"]
    # the tensors take the cables to the head (a-b: 10.20.0.0/24, c-a: 10.20.4.0/24), not the
    # management LAN the API and the control traffic use
    assert head[head.index("--rpc") + 1] == "10.20.0.2:50052,10.20.4.2:50052"
    worker_b = plan["processes"][0]["argv"]
    assert worker_b[worker_b.index("--host") + 1] == "10.20.0.2"
    assert plan["api_url"] == "http://192.168.1.11:8080"


def test_rpc_network_control_puts_workers_on_their_control_addresses(tmp_path: Path) -> None:
    text = (EXAMPLES / "triangle-llamacpp.toml").read_text()
    cluster = tmp_path / "c.toml"
    cluster.write_text(text.replace("port = 8080\n", 'port = 8080\nrpc_network = "control"\n'))
    head = json.loads(_up(str(cluster), "--json"))["processes"][-1]["argv"]
    assert head[head.index("--rpc") + 1] == "192.168.1.12:50052,192.168.1.13:50052"


def test_ring_plan_carries_the_ring_env_and_a_node_override() -> None:
    plan = json.loads(_up(str(EXAMPLES / "ring4-vllm.toml"), "--json"))
    env = {v["name"]: v["value"] for v in plan["processes"][-1]["env"]}
    assert env["NCCL_ALGO"] == "Ring"
    assert plan["processes"][2]["env"][-1] == {
        "name": "NCCL_DEBUG",
        "value": "INFO",
        "reason": "env of node d",
    }


def test_settings_the_engine_has_no_flag_for_are_warned_about(tmp_path: Path) -> None:
    text = (EXAMPLES / "triangle-llamacpp.toml").read_text()
    cluster = tmp_path / "c.toml"
    cluster.write_text(text.replace("[profile]\n", "[profile]\nmax_num_seqs = 8\n"))
    plan = json.loads(_up(str(cluster), "--json"))
    assert plan["warnings"] == [
        "profile.max_num_seqs does not apply to llamacpp and is ignored — remove it"
    ]


RING4_VLLM = EXAMPLES / "ring4-vllm.toml"
REACH_FIX = (
    "set engine.api_address to an address this machine reaches, or give every node a "
    "management address (the API then takes head a's)"
)


def _up_in_a_namespace(setup: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`up` run in a network namespace of its own, whose routes `setup` makes: the answer of
    `ip route get` is then this test's, not the host's."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("a network namespace of its own needs util-linux's unshare and root")
    command = f"{setup} exec {shlex.join([SPARKRIG, 'up', *args])}"
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", command],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "1000"},
    )
    if done.returncode != 0 and "unshare:" in done.stderr:
        pytest.skip(f"cannot make a network namespace here: {done.stderr.strip()}")
    return done


def test_an_api_on_a_cable_this_machine_has_no_route_to_is_warned_about() -> None:
    """ring4-vllm: no management LAN, so the API lands on a's cable address 10.20.0.1; a machine
    with no route there is told so in the plan, its JSON and the text, with the fix."""
    warning = (
        "the API is planned at 10.20.0.1, a cable address only the cluster's nodes reach, and "
        "this machine has no route to it (RTNETLINK answers: Network is unreachable) — " + REACH_FIX
    )
    plan = _up_in_a_namespace("ip link set lo up;", str(RING4_VLLM), "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["warnings"][-1] == warning
    text = _up_in_a_namespace("ip link set lo up;", str(RING4_VLLM))
    assert text.returncode == 0, text.stderr
    assert f"warning: {warning}" in text.stdout


def test_an_api_on_a_cable_this_machine_routes_to_is_not_warned_about() -> None:
    """The same plan where this machine holds an address on that cable's subnet."""
    setup = "ip link set lo up && ip address add 10.20.0.2/24 dev lo &&"
    plan = _up_in_a_namespace(setup, str(RING4_VLLM), "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["api_on_cables"] is True
    assert not any("API is planned" in w for w in json.loads(plan.stdout)["warnings"])


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # sparkrig runs on the head: its own cable address is reached, nothing is asked
        ('ssh = "admin@spark-a"', 'ssh = "admin@spark-a"\nexecutor = { kind = "local" }'),
        # the API is where the user said
        ("[engine]\n", '[engine]\napi_address = "192.168.1.50"\n'),
    ],
    ids=["head-is-here", "api-address"],
)
def test_an_api_this_machine_reaches_by_the_file_is_not_warned_about(
    tmp_path: Path, old: str, new: str
) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(RING4_VLLM.read_text().replace(old, new, 1))
    plan = json.loads(_up(str(cluster), "--json"))
    assert not any("API is planned" in w for w in plan["warnings"])
