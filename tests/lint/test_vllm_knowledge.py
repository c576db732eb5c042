"""Lint judged by vLLM's own parser and CUDA-graph sizing code, from the committed data of each
release (src/sparkrig/engines/vllm/knowledge/, written by scripts/vllm-knowledge from the PyPI
wheels): no network and no vLLM install here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkrig.config.cluster import Cluster
from sparkrig.config.loading import load_cluster
from sparkrig.engines.vllm.argv_check import first_accepting, serve_argv_problems
from sparkrig.engines.vllm.capture_sizes import captured_sizes, covering_capture_size
from sparkrig.engines.vllm.knowledge import knowledge_for, known_versions, version_key
from sparkrig.engines.vllm.launch import capture_size_for, profile_args
from sparkrig.launch.cluster_plan import plan_launch
from sparkrig.lint import lint_cluster
from sparkrig.recipes import load_recipe, recipe_names
from sparkrig.wire.reasoning_families import FAMILIES

PAIR = "dsv4-flash-0731-tp2-pair"
TRIANGLE_V41 = "dsv41-flash-1017-tp3-triangle"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VLLM_EXAMPLES = sorted(p for p in EXAMPLES.glob("*.toml") if 'kind = "vllm"' in p.read_text())


def _with(recipe: str, **changes: dict[str, Any]) -> Cluster:
    data = load_recipe(recipe).model_dump()
    for table, values in changes.items():
        data[table] = {**data[table], **values}
    return Cluster.model_validate(data)


def _rules(cluster: Cluster) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in lint_cluster(cluster):
        found.setdefault(finding.rule, []).append(finding.message)
    return found


def test_data_exists_for_the_four_releases_read() -> None:
    assert {"0.26.0", "0.29.0", "0.30.0", "0.32.0", "0.33.0"} <= set(known_versions())
    for version in known_versions():
        data = knowledge_for(version)
        assert data.provenance["wheel"].startswith(f"vllm-{version}-")
        assert len(data.provenance["sha256"]) == 64
        assert data.provenance["commit"]  # the git commit the wheel's build stamped
        assert data.default("gpu_memory_utilization") == 0.92


def test_nvfp4_ds_mla_is_refused_by_026_and_029_and_accepted_from_030() -> None:
    argv = ["--kv-cache-dtype", "nvfp4_ds_mla"]
    for version in ("0.26.0", "0.29.0"):
        (problem,) = serve_argv_problems(argv, knowledge_for(version))
        assert (problem.kind, problem.value) == ("invalid-choice", "nvfp4_ds_mla")
        assert first_accepting(problem) == "0.30.0"
    assert serve_argv_problems(argv, knowledge_for("0.30")) == []


def test_the_pair_recipe_on_029_is_an_error_naming_the_choice_and_030() -> None:
    found = _rules(_with(PAIR, engine={"version": "0.29"}))
    (message,) = found["vllm-argv-parses"]
    assert "nvfp4_ds_mla" in message
    assert "0.30.0" in message
    assert "vllm-argv-parses" not in _rules(load_recipe(PAIR))


def test_a_misspelt_extra_args_flag_is_an_error() -> None:
    cluster = _with(PAIR, profile={"extra_args": ["--enable-prefix-cacheing"]})
    (message,) = _rules(cluster)["vllm-argv-parses"]
    assert "--enable-prefix-cacheing" in message


def test_flag_spellings_vllm_accepts_are_accepted() -> None:
    data = knowledge_for("0.30")
    argv = ["--max_num_seqs", "4", "--max-model-len=4096", "--compilation-config.mode", "3"]
    assert serve_argv_problems(argv, data) == []
    assert serve_argv_problems(["--max-num-seqs"], data)[0].kind == "missing-value"


@pytest.mark.parametrize("version", ["0.26.0", "0.29.0", "0.30.0", "0.32.0", "0.33.0"])
def test_capture_sizes_match_vllms_own_answers_on_every_grid_point(version: str) -> None:
    data = knowledge_for(version)
    appends, plain = version_key(version) >= (0, 29), version_key(version) >= (0, 32)
    for row in data.capture_rows:
        ours = captured_sizes(
            row.max_num_seqs,
            row.k,
            row.explicit,
            data.capture_batched_tokens,
            appends_decode_sizes=appends,
            appends_plain_decode_size=plain,
        )
        assert (not ours.sizes) == (row.error is not None), row
        if row.error is None:
            assert ours.sizes == row.sizes, row


def test_36_for_6_seqs_k5_captures_only_24_and_the_derived_size_is_now_40() -> None:
    for version in known_versions():
        row = knowledge_for(version).capture_row(6, 5, 36)
        assert row is not None
        assert max(row.sizes) == 24
        row = knowledge_for(version).capture_row(6, 5, 40)
        assert row is not None
        assert max(row.sizes) == 36
    assert covering_capture_size(6, 5, 8192) == 40
    profile = load_recipe(PAIR).profile
    assert capture_size_for(profile) == 40
    assert "--max-cudagraph-capture-size" in profile_args(profile)
    found = _rules(_with(PAIR, profile={"max_cudagraph_capture_size": 36}))
    assert any("24" in m for m in found["capture-size-covers-batch"])
    forty = _rules(_with(PAIR, profile={"max_cudagraph_capture_size": 40}))
    assert "capture-size-covers-batch" not in forty
    assert "capture-size-multiple" not in forty


def test_an_unset_utilisation_is_judged_at_vllms_092() -> None:
    found = _rules(_with(PAIR, profile={"gpu_memory_utilization": None}))
    (message,) = found["unified-memory-utilization"]
    assert "0.92" in message
    assert "unset" in message


def test_a_reasoning_model_without_a_parser_is_warned_and_the_parser_is_rendered() -> None:
    assert "reasoning-parser-set" in _rules(_with(PAIR, engine={"reasoning_parser": None}))
    bogus = _rules(_with(PAIR, engine={"reasoning_parser": "deepseek_v9"}))
    assert "reasoning-parser-set" in bogus
    plan = plan_launch(load_recipe(PAIR), local_state_dir=Path("/state"), require_executors=False)
    head = next(p for p in plan.processes if p.role == "head")
    assert head.argv[head.argv.index("--reasoning-parser") + 1] == "deepseek_v4"


def _parser_findings(cluster: Cluster) -> list[tuple[str, str, str]]:
    return [
        (f.severity, f.message, f.fix)
        for f in lint_cluster(cluster)
        if f.rule == "reasoning-parser-set"
    ]


def test_lint_asks_for_the_parser_the_family_registry_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One table: a family that exists only in sparkrig.wire.reasoning_families is linted, and
    the parser asked for is the one its entry names (olmo3: in every release read)."""
    model = {"path": "/models/Zeta-Reasoner-7B", "served_name": "zeta"}
    cluster = _with(PAIR, engine={"reasoning_parser": None}, model=model)
    assert _parser_findings(cluster) == []
    zeta = FAMILIES.get("qwen3").model_copy(
        update={
            "name": "zeta",
            "models": ("*zeta-reasoner*",),
            "vllm_reasoning_parsers": ("olmo3",),
        }
    )
    monkeypatch.setitem(FAMILIES._entries, "zeta", zeta)
    [(severity, message, fix)] = _parser_findings(cluster)
    assert severity == "warning"
    assert "family zeta" in message
    assert fix == "set engine.reasoning_parser = 'olmo3'"


def test_deepseek_v41_takes_deepseek_v41_where_the_release_ships_it() -> None:
    """vLLM ships deepseek_v41 from 0.30.0 (not in 0.26.0 or 0.29.0): the V4.1 recipes, which
    declare 0.30, render it; deepseek_v4 on 0.30 is warned with the tool-call marker it misses;
    on 0.29 deepseek_v41 is an error naming 0.30.0, and deepseek_v4 is the one asked for."""
    assert [
        v for v in known_versions() if "deepseek_v41" in knowledge_for(v).reasoning_parsers
    ] == [
        "0.30.0",
        "0.32.0",
        "0.33.0",
    ]
    cluster = load_recipe(TRIANGLE_V41)
    assert cluster.engine is not None
    assert cluster.engine.reasoning_parser == "deepseek_v41"
    assert _parser_findings(cluster) == []
    head = next(
        p
        for p in plan_launch(
            cluster, local_state_dir=Path("/state"), require_executors=False
        ).processes
        if p.role == "head"
    )
    assert head.argv[head.argv.index("--reasoning-parser") + 1] == "deepseek_v41"

    [(severity, message, fix)] = _parser_findings(
        _with(TRIANGLE_V41, engine={"reasoning_parser": "deepseek_v4"})
    )
    assert severity == "warning"
    assert "vLLM 0.30.0 ships 'deepseek_v41'" in message
    assert "<｜DSML｜ calls>" in message
    assert fix == "set engine.reasoning_parser = 'deepseek_v41'"

    on_029 = _with(TRIANGLE_V41, engine={"version": "0.29"})
    [(severity, message, _)] = _parser_findings(on_029)
    assert severity == "error"
    assert "vLLM 0.29.0 has no reasoning parser 'deepseek_v41' (vLLM 0.30.0 has it)" in message
    unset_029 = _with(TRIANGLE_V41, engine={"version": "0.29", "reasoning_parser": None})
    [(_, _, fix)] = _parser_findings(unset_029)
    assert fix == "set engine.reasoning_parser = 'deepseek_v4'"
    assert (
        _parser_findings(
            _with(TRIANGLE_V41, engine={"version": "0.29", "reasoning_parser": "deepseek_v4"})
        )
        == []
    )


def test_every_parser_the_registry_names_is_one_vllm_ships() -> None:
    shipped = {name for v in known_versions() for name in knowledge_for(v).reasoning_parsers}
    for family in FAMILIES.entries():
        assert set(family.vllm_reasoning_parsers) <= shipped, family.name


def _rendered_serve_options(cluster: Cluster) -> list[list[str]]:
    plan = plan_launch(cluster, local_state_dir=Path("/state"), require_executors=False)
    return [p.argv[3:] for p in plan.processes if p.argv[1:2] == ["serve"]]


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_renders_argv_its_declared_release_parses(name: str) -> None:
    cluster = load_recipe(name)
    assert cluster.engine is not None
    assert cluster.engine.version is not None
    data = knowledge_for(cluster.engine.target_version)
    for options in _rendered_serve_options(cluster):
        assert serve_argv_problems(options, data) == [], name
    assert [f for f in lint_cluster(cluster) if f.severity == "error"] == []


@pytest.mark.parametrize("path", VLLM_EXAMPLES, ids=lambda p: p.name)
def test_every_vllm_example_lints_clean_against_its_declared_release(path: Path) -> None:
    cluster = load_cluster(path)
    assert cluster.engine is not None
    assert cluster.engine.version is not None
    assert [f.line() for f in lint_cluster(cluster) if f.severity == "error"] == []


def test_cpu_ngram_beside_async_scheduling_is_refused_as_vllm_refused_it() -> None:
    """vLLM 0.26.0 on the GPU test bed exited at start on vllm-h200-pair.toml with CPU ngram and
    --async-scheduling, and started with ngram_gpu (benchmarks/results/vllm-h200/2026-12-05)."""
    path = Path(__file__).parents[2] / "benchmarks" / "vllm_gpu" / "vllm-h200-pair.toml"
    started = load_cluster(path)
    assert "async-scheduling-spec-method" not in _rules(started)
    data = started.model_dump()
    data["profile"]["speculative"]["method"] = "ngram"
    (message,) = _rules(Cluster.model_validate(data))["async-scheduling-spec-method"]
    assert "'ngram' beside --async-scheduling" in message
    data["profile"]["extra_args"] = [a for a in data["profile"]["extra_args"] if "async" not in a]
    assert "async-scheduling-spec-method" not in _rules(Cluster.model_validate(data))
    assert "async-scheduling-spec-method" not in _rules(load_recipe(PAIR))  # DSpark: allowed
