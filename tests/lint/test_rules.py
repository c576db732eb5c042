"""Each lint rule on a bad example (a catalog recipe with one value broken), and the catalog
itself passing every rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.config.cluster import Cluster
from sparkrig.engines.vllm.knowledge import knowledge_for, known_versions
from sparkrig.lint import lint_cluster, rules
from sparkrig.recipes import load_recipe, recipe_names, recipe_path

PAIR = "dsv4-flash-0731-tp2-pair"
# the bundled SmolLM2-135M's shape (9 attention heads, 3 KV heads): vLLM 0.32.0 refused TP 2
SMOLLM2_SHAPE = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "smollm2-135m"
# vLLM's own parser and sizing data: a source as good as a field report for what vLLM accepts
KNOWLEDGE = "src/sparkrig/engines/vllm/knowledge/"


def _with(recipe: str, **changes: dict[str, Any]) -> Cluster:
    """The recipe with fields of its tables replaced: _with(PAIR, profile={"block_size": 64})."""
    cluster = load_recipe(recipe)
    data = cluster.model_dump()
    for table, values in changes.items():
        if isinstance(data.get(table), dict):
            data[table] = {**data[table], **values}
        else:
            data[table] = values
    return Cluster.model_validate(data)


def _rules_hit(cluster: Cluster) -> set[str]:
    return {finding.rule for finding in lint_cluster(cluster)}


def _spec(**values: Any) -> dict[str, Any]:
    base = {
        "method": "dspark",
        "num_speculative_tokens": 5,
        "draft_sample_method": "probabilistic",
        "runtime": "dspark-legacy",
    }
    return {**base, **values}


BAD_EXAMPLES: dict[str, Cluster] = {}


def _bad(rule: str, cluster: Cluster) -> None:
    BAD_EXAMPLES[rule] = cluster


# k = 5: vLLM cuts 4 to its grid (1, 2, 4) and no multiple of 6 fits ("No valid cudagraph sizes")
_bad("capture-size-multiple", _with(PAIR, profile={"max_cudagraph_capture_size": 4}))
# 36 = 6 × (5+1), sparkrig's old derived value: vLLM cuts it to 32 and captures only up to 24
_bad("capture-size-covers-batch", _with(PAIR, profile={"max_cudagraph_capture_size": 36}))
_bad("vllm-argv-parses", _with(PAIR, profile={"extra_args": ["--enable-prefix-cacheing"]}))
_bad("reasoning-parser-set", _with(PAIR, engine={"reasoning_parser": None}))
_bad("dspark-k", _with(PAIR, profile={"speculative": _spec(num_speculative_tokens=7)}))
# CPU ngram beside the recipe's --async-scheduling: vLLM 0.26.0 exited at start (GPU test bed)
_bad(
    "async-scheduling-spec-method",
    _with(PAIR, profile={"speculative": {"method": "ngram", "num_speculative_tokens": 5}}),
)
_bad(
    "spec-repetition-penalty",
    _with(PAIR, profile={"generation_overrides": {"repetition_penalty": 1.05}}),
)
_bad(
    "reasoning-none-with-thinking",
    _with(
        PAIR,
        profile={
            "default_chat_template_kwargs": {"thinking": True},
            "default_reasoning_effort": "none",
        },
    ),
)
_bad(
    "thinking-switch-as-text",
    _with(PAIR, profile={"default_chat_template_kwargs": {"thinking": "false"}}),
)
_bad("unified-memory-utilization", _with(PAIR, profile={"gpu_memory_utilization": 0.85}))
_bad(
    "jit-cache-local",
    _with(PAIR, engine={"jit_cache_dir": "/mnt/hf/jit", "shared_filesystems": ["/mnt/hf"]}),
)
_bad("dsv4-block-size", _with(PAIR, profile={"block_size": 64}))
_bad("max-model-len-calibrated", _with(PAIR, profile={"max_model_len": 1_500_000}))
_bad("kv-pool-holds-one-request", _with(PAIR, profile={"kv_pool_tokens": 1_000_000}))
_bad("bench-no-stream-chunks", _with(PAIR, profile={"bench_streaming_chunk_counts": True}))
# the netdevs a Spark shows (ip link) in place of its cages' names
SPARK_NETDEV_CABLE = ["spark1.enp1s0f0np0 <-> spark2.enp1s0f1np1"]
_bad("cables-valid", _with(PAIR, cables=SPARK_NETDEV_CABLE))  # type: ignore[arg-type]
_bad("tp-closed-collective", _with("glm53-flash-tp4-ring", profile={"tensor_parallel_size": 3}))
_bad("workers-first", _with(PAIR, engine={"start_order": "head-first"}))
_bad("parallel-fits-model-shape", _with(PAIR, model={"path": str(SMOLLM2_SHAPE)}))
# two ranks a node on the CPU build, and the GPU share that counts host memory there
_bad(
    "vllm-cpu-layout",
    _with(
        PAIR,
        engine={"device": "cpu"},
        profile={"pipeline_parallel_size": 2, "tensor_parallel_size": 2},
    ),
)


def test_there_are_at_least_twelve_rules_and_each_has_a_bad_example() -> None:
    names = {entry.name for entry in rules()}
    assert len(names) >= 12
    assert names == set(BAD_EXAMPLES)


@pytest.mark.parametrize("rule", sorted(BAD_EXAMPLES))
def test_rule_flags_its_bad_example(rule: str) -> None:
    findings = [f for f in lint_cluster(BAD_EXAMPLES[rule]) if f.rule == rule]
    assert findings, f"{rule} did not fire"
    for finding in findings:
        assert finding.fix
        # a field report's fact, vLLM's own data, what the project's vLLM test bed measured, or
        # what vLLM's own code did when the project replayed it
        assert (
            "docs/field-notes.md#" in finding.source
            or KNOWLEDGE in finding.source
            or finding.source.startswith("benchmarks/results/vllm-h200/")
            or finding.source == "benchmarks/vllm_replay/README.md"  # vLLM's own code, on a CPU
            or finding.source == "docs/launch.md#vllms-cpu-build"  # vLLM's CPU build, run here
        )
        assert " — " in finding.line()


@pytest.mark.parametrize("name", recipe_names())
def test_catalog_recipe_passes_every_rule(name: str) -> None:
    assert lint_cluster(load_recipe(name)) == []


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_value_cites_a_field_report(name: str) -> None:
    cluster = load_recipe(name)
    assert cluster.recipe is not None
    sources = cluster.recipe.sources
    set_values = [
        f"{table}.{field}"
        for table in ("engine", "model", "profile")
        for field in getattr(cluster, table).model_fields_set
    ] + [
        f"profile.speculative.{field}"
        for field in (
            cluster.profile.speculative.model_fields_set if cluster.profile.speculative else ()
        )
    ]
    for key in set_values:
        if key in {"engine.kind", "profile.speculative", "model.served_name"}:
            continue  # the engine kind, a table, and a name chosen here
        assert key in sources, f"{name}: {key} cites no source"
        assert "docs/field-notes.md#" in sources[key] or KNOWLEDGE in sources[key], sources[key]
    if cluster.env:
        assert "env" in sources


def test_lint_command_exits_nonzero_naming_rule_fix_and_source(tmp_path: Path) -> None:
    text = (
        recipe_path(PAIR)
        .read_text()
        .replace("gpu_memory_utilization = 0.80", "gpu_memory_utilization = 0.9")
    )
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    result = CliRunner().invoke(app, ["lint", str(bad)])
    assert result.exit_code == 1
    assert "unified-memory-utilization" in result.output
    assert "docs/field-notes.md#unified-memory-080" in result.output
    good = CliRunner().invoke(app, ["lint", str(recipe_path(PAIR))])
    assert good.exit_code == 0, good.output


def test_dspark_k_refuses_a_multiple_of_five_the_report_measured_failing() -> None:
    """k = 10 failed like k = 7 on the recipe's image (field notes: dspark-k-block-5)."""
    ten = _with(PAIR, profile={"speculative": _spec(num_speculative_tokens=10)})
    [finding] = [f for f in lint_cluster(ten) if f.rule == "dspark-k"]
    assert finding.severity == "error"
    assert "k = 10 was measured failing" in finding.message
    assert "dspark-k" not in _rules_hit(_with(PAIR, profile={"speculative": _spec()}))


def test_unified_memory_at_085_warns_with_both_reports_and_errors_above() -> None:
    """0.85 crashed one deployment and ran another's validated profile (field notes:
    unified-memory-080): a warning there, an error only above it."""
    [warned] = [
        f
        for f in lint_cluster(BAD_EXAMPLES["unified-memory-utilization"])
        if f.rule == "unified-memory-utilization"
    ]
    assert warned.severity == "warning"
    assert "NV_ERR_NO_MEMORY" in warned.message
    assert "validated C12 profile ran 0.85" in warned.message
    high = _with(PAIR, profile={"gpu_memory_utilization": 0.9})
    [refused] = [f for f in lint_cluster(high) if f.rule == "unified-memory-utilization"]
    assert refused.severity == "error"
    assert "no report ran above 0.85" in refused.message


def test_reasoning_none_with_thinking_reads_the_kwargs_as_the_server_does() -> None:
    """Either family's switch, and an effort inside the kwargs (field notes:
    reasoning-families). A client's top-level 'none' beside a server-wide enable_thinking is no
    conflict: vLLM sets enable_thinking from a top-level effort unless the request's own kwargs
    name it (ChatCompletionRequest.build_chat_params, tests/fixtures/vllm/replay/)."""
    for kwargs, effort in (
        ({"thinking": True}, "none"),
        ({"enable_thinking": True, "reasoning_effort": "none"}, None),
        ({"thinking": True, "reasoning_effort": "none"}, None),
    ):
        cluster = _with(
            PAIR,
            profile={"default_chat_template_kwargs": kwargs, "default_reasoning_effort": effort},
        )
        assert "reasoning-none-with-thinking" in _rules_hit(cluster), kwargs
    off = _with(PAIR, profile={"default_reasoning_effort": "none"})  # the recipe: thinking false
    assert "reasoning-none-with-thinking" not in _rules_hit(off)
    overridden = _with(
        PAIR,
        profile={
            "default_chat_template_kwargs": {"enable_thinking": True},
            "default_reasoning_effort": "none",
        },
    )
    assert "reasoning-none-with-thinking" not in _rules_hit(overridden)


# the rules whose facts hold on one runtime only, and a phrase their findings must carry
RUNTIME_SPECIFIC = {
    "dspark-k": "dspark-legacy image (vLLM 0.21.1rc1 + B12X)",
    "spec-repetition-penalty": "dspark-legacy image (vLLM 0.21.1rc1 + B12X)",
    "dsv4-block-size": "vLLM 0.27.1 port",
    "capture-size-multiple": "V1 model runner",
    "capture-size-covers-batch": "either model runner",
}


def test_every_runtime_specific_rule_names_its_runtime_in_each_finding() -> None:
    """A rule marked with the runtime it rests on says that runtime in the message itself (the
    summary alone is not what a user reads), and the release where the data is vLLM's own."""
    marked = {entry.name: entry.runtime for entry in rules() if entry.runtime is not None}
    assert set(marked) == set(RUNTIME_SPECIFIC)
    for name, runtime in marked.items():
        assert runtime is not None
        assert RUNTIME_SPECIFIC[name] in runtime, name
        findings = [f for f in lint_cluster(BAD_EXAMPLES[name]) if f.rule == name]
        assert findings, name
        for finding in findings:
            assert runtime in finding.message, (name, finding.message)
            if KNOWLEDGE in finding.source:
                assert "vLLM 0.30.0" in finding.message, (name, finding.message)


def test_dspark_k_says_stock_vllm_takes_dspark_and_judges_the_legacy_image() -> None:
    """Every release sparkrig has data for lists dspark among its speculative methods, so the
    rule cannot say stock vLLM lacks it; the k ≤ 5 limit is the dspark-legacy image's."""
    for version in known_versions():
        spec = knowledge_for(version).flags["--spec-method"]
        assert spec.choices is not None
        assert "dspark" in spec.choices, version
    summary = next(entry.summary for entry in rules() if entry.name == "dspark-k")
    assert "no dspark method" not in summary
    assert "Stock vLLM takes method dspark too" in summary
    unset = _with(PAIR, profile={"speculative": _spec(num_speculative_tokens=7, runtime=None)})
    [finding] = [f for f in lint_cluster(unset) if f.rule == "dspark-k"]
    assert "what an unset speculative.runtime means" in finding.message


def test_a_cable_written_with_netdevs_is_a_cabling_error_that_names_the_ports() -> None:
    """Not a tensor-parallel error with a TP fix: the cable is what is wrong, and which cage
    each netdev belongs to is known."""
    findings = lint_cluster(_with(PAIR, cables=SPARK_NETDEV_CABLE))  # type: ignore[arg-type]
    assert [f.rule for f in findings] == ["cables-valid"]
    assert "enp1s0f0np0, the netdev of one function of port p0 on spark1" in findings[0].message
    assert findings[0].fix == "write 'spark1.p0 <-> spark2.p1'"
