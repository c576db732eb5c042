"""Rules judged by vLLM itself: the release the cluster file names (engine.version), read from
that release's committed parser and sizing data (`sparkrig.engines.vllm.knowledge`)."""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.config.cluster import Cluster
from sparkrig.config.serving import EngineSettings, ServingProfile
from sparkrig.engines.vllm.argv_check import describe, serve_argv_problems
from sparkrig.engines.vllm.capture_sizes import (
    captured_sizes,
    covering_capture_size,
    full_verify_batch,
)
from sparkrig.engines.vllm.knowledge import VllmKnowledge, knowledge_for, known_versions
from sparkrig.engines.vllm.launch import api_args, capture_size_for, profile_args
from sparkrig.errors import ConfigError
from sparkrig.lint.findings import LintFinding, rule
from sparkrig.wire.reasoning_families import family_of

KNOWLEDGE_SOURCE = "src/sparkrig/engines/vllm/knowledge/vllm-{}.json"
# Where the capture-size data holds (the extraction's setup, engines/vllm/capture_sizes.py):
# vLLM's "No valid cudagraph sizes" is the V1 model runner's; the largest captured decode batch
# is the same on both runners.
V1_RUNNER = "vLLM's V1 model runner (FULL decode graphs, no sequence parallelism)"
EITHER_RUNNER = "FULL decode graphs, no sequence parallelism, either model runner"


def _knowledge(cluster: Cluster) -> VllmKnowledge | None:
    """The named release's data; None for another engine, or a release without data (which
    vllm-argv-parses reports)."""
    if cluster.engine is None or cluster.engine.kind != "vllm":
        return None
    try:
        return knowledge_for(cluster.engine.target_version)
    except ConfigError:
        return None


def _source(knowledge: VllmKnowledge) -> str:
    return KNOWLEDGE_SOURCE.format(knowledge.version)


@rule(
    "vllm-argv-parses",
    "every rendered `vllm serve` flag (extra_args too) parses in the named vLLM release",
    "src/sparkrig/engines/vllm/knowledge/",
)
def vllm_argv_parses(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    if cluster.engine is None or cluster.engine.kind != "vllm":
        return []
    try:
        knowledge = knowledge_for(cluster.engine.target_version)
    except ConfigError as error:
        return [
            LintFinding(
                "vllm-argv-parses",
                "error",
                "engine.version",
                str(error).split(" — ")[0],
                "set engine.version to a release sparkrig has data for, or run "
                "scripts/vllm-knowledge for it",
                "src/sparkrig/engines/vllm/knowledge/",
            )
        ]
    argv = profile_args(profile) + api_args(cluster.engine)
    extra = {arg.split("=", 1)[0] for arg in profile.extra_args}

    def where(flag: str) -> str:
        field = flag.lstrip("-").replace("-", "_")
        if flag in extra:
            return f"{key}.extra_args"
        if field in type(profile).model_fields:
            return f"{key}.{field}"
        return f"engine.{field}" if field in EngineSettings.model_fields else key

    return [
        LintFinding(
            "vllm-argv-parses",
            "error",
            where(problem.flag),
            describe(problem, knowledge.version) + ": every node exits at start",
            f"drop or fix {problem.flag}, or set engine.version to a release that takes it",
            _source(knowledge),
        )
        for problem in serve_argv_problems(argv, knowledge)
    ]


@rule(
    "capture-size-multiple",
    f"vLLM finds a CUDA-graph size for a k+1-token verify step (the check of {V1_RUNNER}; the V2 "
    "runner starts and captures no decode graph)",
    "docs/field-notes.md#capture-size-seqs-k1",
    runtime=V1_RUNNER,
)
def capture_size_multiple(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    spec, size = profile.speculative, capture_size_for(profile)
    knowledge = _knowledge(cluster)
    if knowledge is None or spec is None or size is None:
        return []
    k = spec.num_speculative_tokens
    batched = profile.max_num_batched_tokens or defaults.VLLM_MAX_NUM_BATCHED_TOKENS
    if captured_sizes(profile.max_num_seqs or 1, k, size, batched).sizes:
        return []
    return [
        LintFinding(
            "capture-size-multiple",
            "error",
            f"{key}.max_cudagraph_capture_size",
            f"{size} holds no verify step of k+1 = {k + 1} tokens once vLLM {knowledge.version} "
            f"cuts it to its capture grid: on {V1_RUNNER} engine init fails with 'No valid "
            "cudagraph sizes' (the V2 runner starts and captures no decode graph)",
            "leave max_cudagraph_capture_size out to have it derived, or raise it to "
            f"{covering_capture_size(profile.max_num_seqs or 1, k, batched)}",
            f"docs/field-notes.md#capture-size-seqs-k1, {_source(knowledge)}",
        )
    ]


@rule(
    "capture-size-covers-batch",
    "a full verify batch, max_num_seqs × (k+1), hits a graph vLLM really captures "
    f"({EITHER_RUNNER})",
    "docs/field-notes.md#cold-concurrent-garble",
    runtime=EITHER_RUNNER,
)
def capture_size_covers_batch(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    size, seqs = capture_size_for(profile), profile.max_num_seqs
    knowledge = _knowledge(cluster)
    if knowledge is None or size is None or seqs is None:
        return []
    k = profile.speculative.num_speculative_tokens if profile.speculative else 0
    batched = profile.max_num_batched_tokens or defaults.VLLM_MAX_NUM_BATCHED_TOKENS
    full = full_verify_batch(seqs, k)
    captured = captured_sizes(seqs, k, size, batched)
    if not captured.sizes or captured.largest >= full:
        return []  # no sizes at all is capture-size-multiple's error
    return [
        LintFinding(
            "capture-size-covers-batch",
            "warning",
            f"{key}.max_cudagraph_capture_size",
            f"vLLM {knowledge.version} ({EITHER_RUNNER}) cuts {size} to its capture grid and "
            "rounds to multiples of "
            f"k+1 = {k + 1}: the largest captured batch is {captured.largest} tokens, short of "
            f"max_num_seqs × (k+1) = {full}, so a full concurrent batch runs an uncaptured graph "
            "(the cold-start garble of the report)",
            f"raise it to {covering_capture_size(seqs, k, batched)}, or leave it out",
            f"docs/field-notes.md#cold-concurrent-garble, {_source(knowledge)}",
        )
    ]


def _first_release_with_parser(name: str) -> str | None:
    return next((v for v in known_versions() if name in knowledge_for(v).reasoning_parsers), None)


@rule(
    "reasoning-parser-set",
    "a reasoning model is served with the vLLM reasoning parser its family's registry entry "
    "names (sparkrig.wire.reasoning_families), the best one the release ships",
    "docs/field-notes.md#think-in-prompt",
)
def reasoning_parser_set(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    knowledge = _knowledge(cluster)
    if knowledge is None or cluster.engine is None or cluster.model is None:
        return []
    family = family_of(cluster.model.path)
    chosen = cluster.engine.reasoning_parser
    known = knowledge.reasoning_parsers
    if chosen is not None and known and chosen not in known:
        first = _first_release_with_parser(chosen)
        return [
            LintFinding(
                "reasoning-parser-set",
                "error",
                "engine.reasoning_parser",
                f"vLLM {knowledge.version} has no reasoning parser {chosen!r}"
                + (f" (vLLM {first} has it)" if first else ""),
                f"use one of {', '.join(known)}",
                _source(knowledge),
            )
        ]
    wanted = family.vllm_reasoning_parsers
    best = next((name for name in wanted if not known or name in known), None)
    if best is None or chosen == best or (chosen is not None and chosen not in wanted):
        return []  # no parser named for the family (GLM-5.x: the reports are silent), or the
        # user's own choice outside the registry's list
    if chosen is None:
        message = (
            f"{cluster.model.path} is a reasoning model (family {family.name}) served without "
            "--reasoning-parser: the reply's `reasoning` field stays empty and the thinking "
            "lands in `content`"
        )
    else:
        message = (
            f"{cluster.model.path} (family {family.name}) runs {chosen!r} while vLLM "
            f"{knowledge.version} ships {best!r} for it: {family.vllm_parser_why}"
        )
    return [
        LintFinding(
            "reasoning-parser-set",
            "warning",
            "engine.reasoning_parser",
            message,
            f"set engine.reasoning_parser = {best!r}",
            f"src/sparkrig/wire/reasoning_families.py, {_source(knowledge)}",
        )
    ]


# Speculative methods vLLM refuses beside --async-scheduling: its VllmConfig check allows only
# "EAGLE/MTP/Draft Model/NGram GPU/DSpark"; CPU ngram was refused at start by 0.26.0 on the GPU
# test bed (benchmarks/results/vllm-h200/2026-12-05/README.md). Only methods outside that list
# are named here, so a method sparkrig does not know is never refused by this rule.
ASYNC_REFUSED_METHODS = frozenset({"ngram", "suffix", "medusa", "mlp_speculator"})


@rule(
    "async-scheduling-spec-method",
    "--async-scheduling runs only beside EAGLE, MTP, draft-model, ngram_gpu or DSpark speculation",
    "benchmarks/results/vllm-h200/2026-12-05/README.md",
)
def async_scheduling_spec_method(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    spec = profile.speculative
    if cluster.engine is None or cluster.engine.kind != "vllm" or spec is None:
        return []
    if "--async-scheduling" not in profile.extra_args or spec.method not in ASYNC_REFUSED_METHODS:
        return []
    gpu_twin = " (ngram_gpu takes the same settings)" if spec.method == "ngram" else ""
    return [
        LintFinding(
            "async-scheduling-spec-method",
            "error",
            f"{key}.speculative.method",
            f"speculative method {spec.method!r} beside --async-scheduling: vLLM refuses it at "
            'start ("async scheduling is only supported with EAGLE/MTP/Draft Model/NGram '
            'GPU/DSpark kind of speculative decoding"): every node exits',
            f"use a method on that list{gpu_twin}, or drop --async-scheduling",
            "benchmarks/results/vllm-h200/2026-12-05/README.md",
        )
    ]


CPU_SOURCE = "docs/launch.md#vllms-cpu-build"


@rule(
    "vllm-cpu-layout",
    "vLLM's CPU build: one rank a node (its workers bind a NUMA node each), and the KV cache "
    "sized in GiB, not by gpu_memory_utilization (which there counts the host's memory)",
    CPU_SOURCE,
)
def vllm_cpu_layout(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    engine = cluster.engine
    if engine is None or engine.kind != "vllm" or engine.device != "cpu":
        return []
    findings = []
    ranks = profile.tensor_parallel_for(len(cluster.nodes)) * (profile.pipeline_parallel_size or 1)
    bound = "VLLM_CPU_OMP_THREADS_BIND" in cluster.env
    if ranks > len(cluster.nodes) and not bound:
        findings.append(
            LintFinding(
                "vllm-cpu-layout",
                "error",
                f"{key}.tensor_parallel_size",
                f"{ranks} ranks on {len(cluster.nodes)} node(s): vLLM's CPU workers bind their "
                "threads to a NUMA node each and refuse more local ranks than the node has "
                '("Not enough allowed NUMA nodes to bind threads of N local CPUWorkers")',
                "run one rank a node (tensor × pipeline = nodes), or set "
                "VLLM_CPU_OMP_THREADS_BIND in [env] to the cores of each rank",
                CPU_SOURCE,
            )
        )
    if profile.gpu_memory_utilization is not None:
        findings.append(
            LintFinding(
                "vllm-cpu-layout",
                "warning",
                f"{key}.gpu_memory_utilization",
                f"{profile.gpu_memory_utilization:g} on the CPU build reserves that share of the "
                "host's whole memory, and vLLM refuses to start when less is free",
                "remove it and set cpu_kvcache_gib (VLLM_CPU_KVCACHE_SPACE) to the KV cache in GiB",
                CPU_SOURCE,
            )
        )
    return findings
