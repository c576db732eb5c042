"""`sparkrig up CLUSTER.toml` without --apply: the plan, as text and JSON, for each engine."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sparkrig.cli import app

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
