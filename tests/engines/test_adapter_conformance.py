"""Every registered engine adapter holds to the `EngineAdapter` contract. A new engine passes
these by adding its package, its registry line and a captured /metrics text (CAPTURES).

`conformance_problems` is shown to fail on a faulty adapter, so a pass means something.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import get_args

import pytest

from sparkrig.client.metrics import parse_metrics
from sparkrig.config.cluster import Cluster
from sparkrig.config.serving import (
    ENGINE_KINDS,
    EngineKind,
    EngineSettings,
    ModelSettings,
    ServingProfile,
)
from sparkrig.engines.adapter import EngineAdapter, LocalEngine
from sparkrig.engines.launch_spec import LaunchContext, LaunchNode, ProcessSpec
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.engines.registry import ENGINES, adapter_by_metrics_name, adapter_for
from sparkrig.engines.vllm.adapter import VllmAdapter
from sparkrig.engines.vllm.metric_names import VLLM_METRICS
from sparkrig.errors import UsageError

EXAMPLES = Path(__file__).parents[2] / "examples"
FIXTURES = Path(__file__).parents[1] / "fixtures"
# a real /metrics text of each engine, with speculative decoding on so that every quantity has a
# value (tests/fixtures/README.md says where each came from): vLLM 0.26.0 with ngram drafts
CAPTURES = {"vllm": "vllm/metrics_ngram_spec.txt", "llamacpp": "llamacpp_metrics_spec.txt"}
# the same contract on a later vLLM (about 0.29, MTP): the map must read both versions
LATER_VLLM_CAPTURE = "vllm_metrics.txt"
SERVER = "/opt/engine/bin/server"


def _three_node_context(adapter: EngineAdapter, engine: EngineSettings) -> LaunchContext:
    """A head and two workers, as the planner hands them to an adapter."""
    nodes = [
        LaunchNode(
            name=name,
            rank=rank,
            control_address=f"10.0.0.{rank + 1}",
            head_facing_address=f"10.1.{rank}.2" if rank else None,
            fabric_env=[],
            user_env=[],
        )
        for rank, name in enumerate(("a", "b", "c"))
    ]
    binary, rpc_binary = adapter.binaries(engine, LocalEngine())
    return LaunchContext(
        cluster="conformance",
        engine=engine,
        model=ModelSettings(path="/models/any", served_name="any"),
        profile=ServingProfile(),
        nodes=nodes,
        engine_binary=binary,
        rpc_binary=rpc_binary,
        model_path="/models/any",
    )


def conformance_problems(adapter: EngineAdapter, capture: str) -> list[str]:
    problems = []
    if adapter.kind not in ENGINE_KINDS:
        problems.append(f"kind {adapter.kind} is not an engine.kind the config accepts")
    names = [
        name
        for source in adapter.metric_map.values()
        for group in (source.names, *source.alternatives)
        for name in group
    ]
    if not adapter.metric_prefix or any(not n.startswith(adapter.metric_prefix) for n in names):
        problems.append(f"a metric name lacks the prefix {adapter.metric_prefix!r}")
    snapshot = parse_metrics(capture)
    if snapshot.engine != adapter.metrics_name:
        problems.append(f"its capture reads as {snapshot.engine}, not {adapter.metrics_name}")
    unread = [
        quantity.value
        for quantity, source in adapter.metric_map.items()
        if not any(
            name in snapshot.samples
            for group in (source.names, *source.alternatives)
            for name in group
        )
    ]
    if unread:
        problems.append(f"its capture has no value for {', '.join(unread)}")
    unknown = adapter.unsupported_settings - set(ServingProfile.model_fields)
    if unknown:
        problems.append(f"unsupported settings that are no profile key: {sorted(unknown)}")
    engine = EngineSettings(kind=adapter.kind, binary=SERVER, port=8123)
    processes = adapter.render(_three_node_context(adapter, engine))
    problems += _process_problems(processes, "a", {"a", "b", "c"})
    if not adapter.backend(engine):
        problems.append("no backend name for the launch plan")
    chosen = adapter.binaries(EngineSettings(kind=engine.kind), LocalEngine())[0]
    if not chosen:
        problems.append("no default binary")
    built = LocalEngine(binaries=("/built/server", "/built/rpc"))
    named = adapter.binaries(engine, built)[0]
    if named != SERVER:
        problems.append(f"engine.binary {SERVER} lost to {named}")
    return problems


def _process_problems(processes: list[ProcessSpec], head: str, nodes: set[str]) -> list[str]:
    problems = []
    serving = [p for p in processes if p.ready_when == "health"]
    if len(serving) != 1 or serving[0].node != head or serving[0].port != 8123:
        problems.append("not exactly one process answering /health on the head's API port")
    elif serving[0].argv[0] != SERVER:
        problems.append(f"the serving process runs {serving[0].argv[0]}, not engine.binary")
    if any(p.role == "head" and p.node != head for p in processes):
        problems.append("a head process on a worker node")
    if {p.node for p in processes} != nodes:
        problems.append("a node of the group runs nothing")
    roles = [p.role for p in processes]
    if "head" in roles and "worker" in roles[roles.index("head") :]:
        problems.append("a worker starts after the head (default order is workers first)")
    return problems


@pytest.mark.parametrize("kind", ENGINES.names())
def test_every_registered_adapter_conforms(kind: str) -> None:
    adapter = adapter_for(kind)
    assert kind in CAPTURES, f"add a captured /metrics text of {kind} to CAPTURES"
    assert conformance_problems(adapter, (FIXTURES / CAPTURES[kind]).read_text()) == []


class _Faulty(VllmAdapter):
    """vLLM with each part of the contract broken once."""

    metric_prefix = "sglang:"
    unsupported_settings = frozenset({"no_such_key"})

    def render(self, context: LaunchContext) -> list[ProcessSpec]:
        processes = super().render(context)
        return [p for p in processes if p.role == "head"] + processes[1:2]

    def binaries(self, engine: EngineSettings, local: LocalEngine) -> tuple[str, str | None]:
        return "/built/server", None


def test_conformance_fails_on_a_faulty_adapter() -> None:
    vllm_capture = (FIXTURES / CAPTURES["vllm"]).read_text()
    llamacpp_capture = (FIXTURES / CAPTURES["llamacpp"]).read_text()
    problems = conformance_problems(_Faulty(), llamacpp_capture)
    assert problems == [
        "a metric name lacks the prefix 'sglang:'",
        "its capture reads as llama.cpp, not vllm",
        "its capture has no value for " + ", ".join(q.value for q in VLLM_METRICS),
        "unsupported settings that are no profile key: ['no_such_key']",
        "the serving process runs /built/server, not engine.binary",
        "a node of the group runs nothing",
        "a worker starts after the head (default order is workers first)",
        "engine.binary /opt/engine/bin/server lost to /built/server",
    ]
    assert conformance_problems(adapter_for("vllm"), vllm_capture) == []
    later = (FIXTURES / LATER_VLLM_CAPTURE).read_text()
    assert conformance_problems(adapter_for("vllm"), later) == []


def test_the_registry_holds_every_engine_kind_the_config_accepts() -> None:
    assert set(ENGINES.names()) == set(get_args(EngineKind)) == set(ENGINE_KINDS)
    with pytest.raises(UsageError, match="unknown engine sglang — choose from llamacpp, vllm"):
        adapter_for("sglang")
    assert adapter_by_metrics_name("llama.cpp") is adapter_for("llamacpp")
    assert adapter_by_metrics_name(None) is None


@pytest.mark.parametrize("kind", ENGINES.names())
def test_config_refuses_speculative_exactly_where_the_adapter_cannot_honour_it(kind: str) -> None:
    data = tomllib.loads((EXAMPLES / "pair-vllm.toml").read_text())
    data["engine"] = {"kind": kind}
    data.pop("profiles", None)
    refuses = "speculative" in adapter_for(kind).unsupported_settings
    if refuses:
        with pytest.raises(ValueError, match=r"profile\.speculative is a vLLM setting"):
            Cluster.model_validate(data)
    else:
        assert Cluster.model_validate(data).profile.speculative is not None


def test_vllm_has_no_self_test(tmp_path: Path) -> None:
    assert adapter_for("vllm").self_test(Path("/opt/vllm/bin/vllm"), tmp_path / "x") is None


def test_llamacpp_self_test_proves_the_built_binary(engine: EngineInstall, tmp_path: Path) -> None:
    outcome = adapter_for("llamacpp").self_test(engine.server_binary, tmp_path / "proof")
    assert outcome is not None
    assert outcome.passed, outcome
    missing = adapter_for("llamacpp").self_test(tmp_path / "no-such-server", tmp_path / "gone")
    assert missing is not None
    assert not missing.passed
