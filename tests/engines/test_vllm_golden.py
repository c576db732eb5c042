"""Golden renders: the exact commands and environment `sparkrig up` runs on every node, for
each recipe of the catalog (vLLM mp) and the pair on Ray. Regenerate after a deliberate change
with `SPARKRIG_UPDATE_GOLDEN=1 pytest tests/engines/test_vllm_golden.py` and read the diff."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from sparkrig.config.cluster import Cluster
from sparkrig.engines.vllm.launch import JIT_CACHES
from sparkrig.launch.cluster_plan import LaunchPlan, plan_launch
from sparkrig.recipes import load_recipe, recipe_names

GOLDEN = Path(__file__).parent.parent / "fixtures" / "golden"


def render_text(plan: LaunchPlan) -> str:
    lines = [f"# {plan.cluster}: {plan.engine} ({plan.backend}), API {plan.api_url}", ""]
    for step, process in enumerate(plan.processes, 1):
        lines.append(f"## {step}. {process.node} ({process.role}) {process.name}")
        lines += [f"{var.name}={shlex.quote(var.value)}" for var in process.env]
        lines.append(" \\\n  ".join(shlex.quote(arg) for arg in process.argv))
        lines.append("")
    return "\n".join(lines)


def _plan(cluster: Cluster) -> LaunchPlan:
    return plan_launch(cluster, local_state_dir=Path("/state"), require_executors=False)


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("SPARKRIG_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path} — run with SPARKRIG_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("name", recipe_names())
def test_recipe_renders_match_golden(name: str) -> None:
    _check(name, render_text(_plan(load_recipe(name))))


def test_pair_on_ray_matches_golden() -> None:
    cluster = load_recipe("dsv4-flash-0731-tp2-pair")
    assert cluster.engine is not None
    ray = cluster.model_copy(
        update={"engine": cluster.engine.model_copy(update={"backend": "ray"})}
    )
    _check("dsv4-flash-0731-tp2-pair-ray", render_text(_plan(ray)))


def test_workers_start_first_and_only_workers_are_headless() -> None:
    plan = _plan(load_recipe("dsv41-flash-1017-tp4-ring"))
    assert [p.role for p in plan.processes] == ["worker", "worker", "worker", "head"]
    for process in plan.processes:
        assert ("--headless" in process.argv) == (process.role == "worker")
        rank = process.argv[process.argv.index("--node-rank") + 1]
        assert process.argv[process.argv.index("--nnodes") + 1] == "4"
        assert (rank == "0") == (process.role == "head")


def test_every_node_gets_its_own_host_ip_and_all_seven_jit_caches() -> None:
    plan = _plan(load_recipe("dsv4-flash-0731-tp2-pair"))
    host_ips = set()
    for process in plan.processes:
        env = {var.name: var.value for var in process.env}
        host_ips.add(env["VLLM_HOST_IP"])
        assert {name for name, _ in JIT_CACHES} <= env.keys()
        assert env["TRITON_CACHE_DIR"].startswith(env["VLLM_CACHE_ROOT"])
    assert len(host_ips) == 2


def test_capture_size_is_derived_so_a_full_verify_batch_is_captured() -> None:
    """6 sequences × (k+1 = 6) = 36 tokens: vLLM would cut 36 to 32 and capture up to 24, so
    the derived size is 40, the next on its grid, which captures 36
    (engines/vllm/capture_sizes.py)."""
    plan = _plan(load_recipe("dsv4-flash-0731-tp2-pair"))
    argv = plan.processes[-1].argv
    assert argv[argv.index("--max-cudagraph-capture-size") + 1] == "40"


def test_node_env_wins_over_cluster_env_and_fabric_env() -> None:
    cluster = load_recipe("dsv4-flash-0731-tp2-pair")
    node = cluster.nodes[1].model_copy(update={"env": {"NCCL_IB_DISABLE": "1", "X": "node"}})
    cluster = cluster.model_copy(
        update={"nodes": [cluster.nodes[0], node], "env": {**cluster.env, "X": "cluster"}}
    )
    plan = _plan(cluster)
    worker = {var.name: var.value for var in plan.processes[0].env}
    head = {var.name: var.value for var in plan.processes[1].env}
    assert worker["NCCL_IB_DISABLE"] == "1"
    assert worker["X"] == "node"
    assert head["X"] == "cluster"
